/*
 * vsearch.c
 *		Equality search on a non-key field (seed 000, Algorithms 1-3).
 *
 * A search runs in two phases.  The filter phase, which reads no data,
 * picks the candidate tables: level 0's tables probe their own value
 * filters; the tables of deeper levels are found by the strategy (the
 * Bloofi tree descends only into matching nodes, the flat layout ANDs k
 * words per 64 leaves, "leaves" probes every leaf, "scan" takes every
 * table); tables without a value filter are always candidates.  Each
 * candidate's block locator then names the data blocks that may hold the
 * value.  The iterator phase first returns the memtable's rows (if its own
 * value filter lets it): those its value index lists under the value's
 * hash, newest versions only, sorted by key, so that they cost what the
 * matches cost (a memtable without an index, or a SCAN, walks every row).
 * Then it reads the candidate blocks, skipping any block whose raw bytes
 * do not contain the value, and validates every table row against the
 * newest version of its key in the same snapshot (Algorithm 3): a row
 * survives only if no newer version exists, so overwritten, moved and
 * deleted rows never appear and no key appears twice.
 *
 * The iterator phase is cut into units: unit 0 is the memtable's rows, and
 * each further unit up to 64 candidate blocks of one candidate (the blocks
 * of one word of its mask; a word with no candidate block is no unit).  A
 * search reads the units in order, or, given a claim callback, the units
 * the callback hands it: several searches of the same version, field,
 * value and strategy, in one process or in several, compute the same
 * candidates in the same order (sorted by file number) and so the same
 * units, and together return every row once when each unit is claimed by
 * one of them (a parallel query's participants: lsm_value_search_view).
 * Validation reads the whole snapshot, so a unit's rows do not depend on
 * who reads the others.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "vsearch.h"

typedef struct cand
{
	lsm_file   *file;
	uint64_t   *mask;			/* candidate blocks; NULL: every block */
	bool		filtered;		/* found through a value filter */
} cand;

typedef struct row_ref
{
	size_t		koff;
	size_t		klen;
	const uint8_t *row;
	size_t		rowlen;
	uint64_t	seq;
} row_ref;

/* A memtable row found through the value index (memtable memory). */
typedef struct mem_ref
{
	const uint8_t *key;
	size_t		klen;
	const uint8_t *row;
	size_t		rowlen;
	uint64_t	seq;
} mem_ref;

typedef struct vsearch
{
	lsm_iiter	base;
	lsm_vsearch_env env;		/* what the handle lends (vsearch.h) */
	lsm_version *v;
	lsm_memtable *mem;
	uint64_t	snap;
	int			field;
	uint8_t    *val;
	size_t		vlen;
	uint64_t	h;
	lsm_search_stats st;

	lsm_claim_fn claim;			/* hands out units; NULL: all, in order */
	void	   *claim_arg;
	uint32_t	next_unit;		/* without claim: the next unit to read */
	bool		exhausted;		/* no unit is left */

	bool		scan_mem;
	lsm_iiter  *mit;			/* memtable phase; NULL once done */
	bool		mem_returned;	/* mit is on the row last returned */
	mem_ref    *mrows;			/* memtable rows from its value index */
	int			nmrows,
				capmrows,
				mri;
	cand	   *cands;
	int			ncands,
				cap;
	/* the unit being read: unit number unit, candidate ci, mask word w */
	uint32_t	unit;
	int			ci;
	int64_t		w;				/* -1: before ci's first word */
	uint32_t	bi;				/* next block of the unit */
	uint32_t	bend;			/* its end; bi == bend: the unit is read */
	bool		cand_read;		/* a block of it was read */
	bool		cand_hit;		/* it held a row with the value */
	lsm_buf		keys;			/* rows of the current block */
	row_ref    *rows;
	int			nrows,
				caprows,
				ri;
} vsearch;

/* Does field s->field of row equal the searched value? */
static bool
row_matches(const vsearch *s, const uint8_t *row, size_t rowlen)
{
	lsm_field	f;

	return lsm_row_field(row, rowlen, s->field, &f) == LSM_OK && !f.is_null &&
		f.len == s->vlen && (f.len == 0 || memcmp(f.data, s->val, f.len) == 0);
}

static int
add_cand(vsearch *s, lsm_file *f, bool filtered)
{
	cand	   *c;

	if (s->ncands == s->cap)
	{
		int			cap = s->cap * 2 + 8;
		cand	   *g = realloc(s->cands, sizeof(cand) * cap);

		if (g == NULL)
			return LSM_NOMEM;
		s->cands = g;
		s->cap = cap;
	}
	c = &s->cands[s->ncands++];
	c->file = f;
	c->mask = NULL;
	c->filtered = filtered;
	return LSM_OK;
}

/*
 * Probes table f's value filter (unless the caller already knows it
 * matches) and adds it as a candidate if it may hold the value.
 */
static int
probe_table(vsearch *s, lsm_file *f, bool known_positive)
{
	lsm_bloom	vf;
	int			rc;

	rc = lsm_file_value_filter(s->v, f, s->field, &vf, s->base.err);
	if (rc == LSM_NOTFOUND)
	{
		s->st.sstables_unfiltered++;
		return add_cand(s, f, false);
	}
	if (rc != LSM_OK || vf.num_lines == 0)
		return rc;				/* an error, or a table with no values */
	if (!known_positive)
	{
		s->st.leaves_probed++;
		if (!lsm_bloom_may_match(&vf, s->h))
			return LSM_OK;
	}
	s->st.leaves_positive++;
	return add_cand(s, f, true);
}

static int
flat_leaf(void *arg, lsm_file *leaf)
{
	((vsearch *) arg)->st.leaves_probed++;
	return probe_table((vsearch *) arg, leaf, true);
}

/* Algorithm 1: descends into the nodes whose filters match. */
static int
tree_search(vsearch *s, const lsm_hnode *n)
{
	int			i,
				rc;

	if (n->nchild == 0)
		return probe_table(s, n->file, false);
	if (n->filter.num_lines > 0)
	{
		s->st.nodes_visited++;
		if (!lsm_bloom_may_match(&n->filter, s->h))
			return LSM_OK;
	}

	/*
	 * Every child is probed at the same line (one m for the whole store):
	 * fetch those lines first, so that the children's cache misses overlap
	 * instead of following one another.
	 */
	for (i = 0; i < n->nchild; i++)
	{
		const lsm_hnode *c = n->child[i];
		lsm_bloom	vf;

		if (c->nchild > 0)
			vf = c->filter;
		else if (lsm_file_value_filter(s->v, c->file, s->field, &vf,
									   s->base.err) != LSM_OK)
			continue;			/* reported by the probe below */
		if (vf.num_lines > 0)
			__builtin_prefetch(lsm_bloom_line(&vf, s->h));
	}
	for (i = 0; i < n->nchild; i++)
	{
		rc = tree_search(s, n->child[i]);
		if (rc != LSM_OK)
			return rc;
	}
	return LSM_OK;
}

/*
 * Chooses the strategy for AUTO: the handle's option if set, else the flat
 * layout if this handle already holds one, else the tree.  Measured
 * (docs/value-search.md): the flat filter phase is 2-5x faster than the
 * tree's, but its first search transposes every leaf filter (233 ms for
 * the 131 leaves of 2 Mbit of 10M rows) and it takes as
 * much of the handle's memory as the leaves' filters, while the tree costs
 * no per-handle memory and shares its node files through the page cache.
 * At about a microsecond saved per search, building the layout pays only
 * for a handle that runs tens of thousands of searches, which is the
 * caller's call (value_search = FLAT, or one explicit FLAT search).
 */
static int
auto_strategy(const vsearch *s)
{
	return *s->env.flat != NULL ? LSM_SEARCH_FLAT : LSM_SEARCH_TREE;
}

/* qsort comparator of candidates by file number */
static int
cmp_cand(const void *a, const void *b)
{
	uint64_t	x = ((const cand *) a)->file->meta.number;
	uint64_t	y = ((const cand *) b)->file->meta.number;

	return x < y ? -1 : x > y;
}

/*
 * The filter phase: fills s->cands and each candidate's block mask (in
 * file number order when the units are claimed).
 */
static int
collect(vsearch *s, int strategy)
{
	lsm_version *v = s->v;
	int			l,
				i,
				nlevels,
				rc = LSM_OK;

	if (strategy == LSM_SEARCH_AUTO)
		strategy = auto_strategy(s);
	/* the same tables, without a layout to build in each participant */
	if (strategy == LSM_SEARCH_FLAT && s->claim != NULL)
		strategy = LSM_SEARCH_TREE;
	if (v->value_filter_bits == 0 ||
		(s->field < 64 && (v->value_unindexed >> s->field) & 1))
		strategy = LSM_SEARCH_SCAN;
	s->st.strategy = strategy;
	s->scan_mem = s->mem != NULL &&
		(strategy == LSM_SEARCH_SCAN ? lsm_memtable_entries(s->mem) > 0 :
		 lsm_memtable_may_hold_value(s->mem, s->h));
	s->st.memtable_scanned = s->scan_mem ? 1 : 0;

	if (strategy == LSM_SEARCH_SCAN)
	{
		for (l = 0; l < LSM_MAX_LEVELS && rc == LSM_OK; l++)
			for (i = 0; i < v->nfiles[l] && rc == LSM_OK; i++)
				rc = add_cand(s, v->files[l][i], false);
		if (rc == LSM_OK && s->claim != NULL && s->ncands > 1)
			qsort(s->cands, (size_t) s->ncands, sizeof(cand), cmp_cand);
		return rc == LSM_NOMEM ? LSM_NOMEM_ERR(s->base.err) : rc;
	}
	/*
	 * Level 0, and tables outside the leaves, one by one.  The leaves are
	 * exactly the deeper tables that have a value filter, so when the tree
	 * has as many leaves as there are deeper tables, level 0 is all there
	 * is (this spares the tree and flat searches a pass over every file).
	 */
	nlevels = LSM_MAX_LEVELS;
	if (strategy != LSM_SEARCH_LEAVES)
	{
		uint64_t	deeper = 0;

		for (l = 1; l < LSM_MAX_LEVELS; l++)
			deeper += (uint64_t) v->nfiles[l];
		if (deeper == (v->hroot ? v->hroot->nleaves : 0))
			nlevels = 1;
	}
	for (l = 0; l < nlevels && rc == LSM_OK; l++)
		for (i = 0; i < v->nfiles[l] && rc == LSM_OK; i++)
			if (strategy == LSM_SEARCH_LEAVES ||
				!lsm_hier_is_leaf(v->files[l][i], l))
				rc = probe_table(s, v->files[l][i], false);
	if (rc == LSM_OK && strategy == LSM_SEARCH_TREE && v->hroot)
		rc = tree_search(s, v->hroot);
	if (rc == LSM_OK && strategy == LSM_SEARCH_FLAT)
	{
		rc = lsm_flat_sync(s->env.flat, v, s->base.err);
		if (rc == LSM_OK)
			rc = lsm_flat_search(*s->env.flat, s->h, flat_leaf, s,
								 &s->st.flat_words);
	}
	if (rc == LSM_NOMEM)
		rc = LSM_NOMEM_ERR(s->base.err);
	if (rc != LSM_OK)
		return rc;
	if (s->claim != NULL && s->ncands > 1)
		qsort(s->cands, (size_t) s->ncands, sizeof(cand), cmp_cand);

	/* block locators narrow the filtered candidates to blocks */
	for (i = 0; i < s->ncands; i++)
	{
		cand	   *c = &s->cands[i];
		lsm_locator loc;
		uint32_t	w;

		if (!c->filtered)
			continue;
		rc = lsm_table_locator(c->file->table, &loc, s->base.err);
		if (rc == LSM_NOTFOUND)
			continue;
		if (rc != LSM_OK)
			return rc;
		c->mask = malloc(sizeof(uint64_t) * loc.words);
		if (c->mask == NULL)
			return LSM_NOMEM_ERR(s->base.err);
		for (w = 0; w < loc.words; w++)
			c->mask[w] = ~UINT64_C(0);
		lsm_locator_probe(&loc, s->h, c->mask);
	}
	return LSM_OK;
}

/*
 * Algorithm 3 for one table row: true if it is the newest version of its
 * key in the snapshot.
 */
static int
validate(vsearch *s, const uint8_t *key, size_t klen, uint64_t seq,
		 bool *valid)
{
	lsm_table_hit hit;
	const uint8_t *mv;
	size_t		mvlen;
	uint64_t	mseq;
	int			kind,
				rc;

	uint64_t	h = lsm_key_hash(key, klen);

	s->st.rows_validated++;
	*valid = false;
	/* one hash for the memtable's key filter and the tables' */
	if (s->mem != NULL && lsm_memtable_may_hold_key(s->mem, h) &&
		lsm_memtable_get(s->mem, key, klen, s->snap, &kind, &mv, &mvlen, &mseq))
		return LSM_OK;			/* a newer version is in the memtable */
	rc = lsm_version_get(s->v, key, klen, h, &hit, s->env.ctr, s->base.err);
	if (rc == LSM_NOTFOUND)
		return LSM_OK;
	if (rc != LSM_OK)
		return rc;
	*valid = hit.seq == seq && !hit.del;
	return LSM_OK;
}

/* Block scan callback: keeps the valid rows holding the value. */
static int
take_row(void *arg, const uint8_t *key, size_t klen, uint64_t seq, int del,
		 const uint8_t *row, size_t rowlen)
{
	vsearch    *s = arg;
	row_ref    *r;
	bool		valid;
	int			rc;

	if (del || !row_matches(s, row, rowlen))
		return LSM_OK;
	s->cand_hit = true;
	rc = validate(s, key, klen, seq, &valid);
	if (rc != LSM_OK)
		return rc;
	if (!valid)
	{
		s->st.rows_rejected++;
		return LSM_OK;
	}
	if (s->nrows == s->caprows)
	{
		int			cap = s->caprows * 2 + 8;
		row_ref    *g = realloc(s->rows, sizeof(row_ref) * cap);

		if (g == NULL)
			return LSM_NOMEM;
		s->rows = g;
		s->caprows = cap;
	}
	r = &s->rows[s->nrows++];
	r->koff = s->keys.len;
	r->klen = klen;
	r->row = row;
	r->rowlen = rowlen;
	r->seq = seq;
	return lsm_buf_append(&s->keys, key, klen) == LSM_OK ? LSM_OK : LSM_NOMEM;
}

/* Value index callback: keeps the memtable rows whose field matches. */
static int
take_mem_row(void *arg, const uint8_t *key, size_t klen, const uint8_t *row,
			 size_t rowlen, uint64_t seq)
{
	vsearch    *s = arg;
	mem_ref    *r;

	if (!row_matches(s, row, rowlen))
		return LSM_OK;
	if (s->nmrows == s->capmrows)
	{
		int			cap = s->capmrows * 2 + 8;
		mem_ref    *g = realloc(s->mrows, sizeof(mem_ref) * cap);

		if (g == NULL)
			return LSM_NOMEM;
		s->mrows = g;
		s->capmrows = cap;
	}
	r = &s->mrows[s->nmrows++];
	r->key = key;
	r->klen = klen;
	r->row = row;
	r->rowlen = rowlen;
	r->seq = seq;
	return LSM_OK;
}

static int
cmp_mem_ref(const void *a, const void *b)
{
	const mem_ref *x = a,
			   *y = b;

	return lsm_key_cmp(x->key, x->klen, y->key, y->klen);
}

/*
 * The memtable's rows holding the value, from its value index, in key
 * order (the order a scan of the memtable returns them in).  LSM_NOTFOUND
 * if the memtable has no index.
 */
static int
mem_index_rows(vsearch *s)
{
	int			rc;

	s->nmrows = s->mri = 0;
	rc = lsm_memtable_value_rows(s->mem, s->h, s->snap, take_mem_row, s);
	if (rc == LSM_OK && s->nmrows > 1)
		qsort(s->mrows, (size_t) s->nmrows, sizeof(mem_ref), cmp_mem_ref);
	return rc;
}

static void
vs_fail(vsearch *s, int rc)
{
	if (rc == LSM_NOMEM)
		rc = LSM_NOMEM_ERR(s->base.err);
	s->base.valid = false;
	s->base.rc = rc;
}

/*
 * Unit 0, the memtable phase: its rows holding the value from its value
 * index, or else an iterator over all of it (checked row by row).
 */
static int
start_mem(vsearch *s)
{
	if (!s->scan_mem)
		return LSM_OK;
	if (s->st.strategy != LSM_SEARCH_SCAN)
	{
		int			rc = mem_index_rows(s);

		if (rc != LSM_NOTFOUND)
			return rc;
		/* no value index: scan the memtable */
	}
	s->mit = lsm_memtable_iter(s->mem, s->snap, s->base.err);
	if (s->mit == NULL)
		return LSM_NOMEM;
	lsm_iiter_seek(s->mit, NULL, 0);
	return LSM_OK;
}

/* Candidate blocks of c in mask word w (bit i: block w * 64 + i). */
static uint64_t
word_blocks(const cand *c, uint32_t w)
{
	uint32_t	n = lsm_table_nblocks(c->file->table);
	uint64_t	bits = c->mask != NULL ? c->mask[w] : ~UINT64_C(0);

	if (n - w * 64 < 64)
		bits &= (UINT64_C(1) << (n - w * 64)) - 1;
	return bits;
}

/*
 * Moves the unit cursor to the next unit of the candidates (the next mask
 * word with a candidate block); false past the last.
 */
static bool
next_cand_unit(vsearch *s)
{
	while (s->ci < s->ncands)
	{
		const cand *c = &s->cands[s->ci];
		uint32_t	words = (lsm_table_nblocks(c->file->table) + 63) / 64;

		if (++s->w < (int64_t) words)
		{
			if (word_blocks(c, (uint32_t) s->w) != 0)
			{
				s->unit++;
				return true;
			}
			continue;
		}
		/* a table read for nothing: its filter's false positive */
		if (s->cand_read && !s->cand_hit)
			s->st.sstables_false++;
		s->ci++;
		s->w = -1;
		s->cand_read = s->cand_hit = false;
	}
	return false;
}

/*
 * Takes the next unit (from the claim callback, or the one after the last)
 * and makes it the current one: the memtable phase for unit 0, else its
 * blocks.  False when none is left.
 */
static bool
take_unit(vsearch *s, int *rc)
{
	uint32_t	u;

	*rc = LSM_OK;
	if (s->exhausted)
		return false;
	u = s->claim != NULL ? s->claim(s->claim_arg) : s->next_unit++;
	if (u == 0)
	{
		*rc = start_mem(s);
		return *rc == LSM_OK;
	}
	if (u <= s->unit)
	{
		*rc = lsm_err_set(s->base.err, LSM_INVALID,
						  "value search unit %u claimed after unit %u",
						  u, s->unit);
		return false;
	}
	while (s->unit < u)
		if (!next_cand_unit(s))
		{
			s->exhausted = true;
			return false;
		}
	s->bi = (uint32_t) s->w * 64;
	s->bend = s->bi + 64;
	return true;
}

/* The next block of the current unit to read; false if none is left. */
static bool
unit_block(vsearch *s, uint32_t *b)
{
	uint64_t	bits;

	if (s->bi >= s->bend)
		return false;
	bits = word_blocks(&s->cands[s->ci], (uint32_t) s->w) >> (s->bi % 64);
	if (bits == 0)
	{
		s->bi = s->bend;
		return false;
	}
	*b = s->bi + (uint32_t) __builtin_ctzll(bits);
	s->bi = *b + 1;
	return true;
}

/* Moves to the next result (or the end). */
static void
vs_advance(vsearch *s)
{
	int			rc;

	for (;;)
	{
		cand	   *c;
		uint32_t	b;
		bool		skipped;

		if (s->ri < s->nrows)
		{
			row_ref    *r = &s->rows[s->ri++];

			lsm_iiter_stand(&s->base, s->keys.data + r->koff, r->klen, r->row,
							r->rowlen, r->seq, 0);
			s->st.rows_returned++;
			return;
		}
		if (s->mri < s->nmrows)
		{
			mem_ref    *r = &s->mrows[s->mri++];

			lsm_iiter_stand(&s->base, r->key, r->klen, r->row, r->rowlen,
							r->seq, 0);
			s->st.rows_returned++;
			return;
		}
		if (s->mit)
		{
			lsm_iiter  *m = s->mit;

			if (s->mem_returned)
			{
				lsm_iiter_next(m);
				s->mem_returned = false;
			}
			while (m->valid && (m->del || !row_matches(s, m->val, m->vlen)))
				lsm_iiter_next(m);
			if (m->valid)
			{
				lsm_iiter_stand_on(&s->base, m);
				s->st.rows_returned++;
				s->mem_returned = true;
				return;
			}
			if (m->rc != LSM_OK)
				return vs_fail(s, m->rc);
			lsm_iiter_destroy(m);
			s->mit = NULL;
			continue;
		}
		if (!unit_block(s, &b))
		{
			if (take_unit(s, &rc))
				continue;
			if (rc != LSM_OK)
				return vs_fail(s, rc);
			s->base.valid = false;
			return;
		}
		c = &s->cands[s->ci];
		if (!s->cand_read)
		{
			s->cand_read = true;
			s->st.sstables_scanned++;
		}
		if (s->env.interrupt && s->env.interrupt(s->env.interrupt_arg))
			return vs_fail(s, lsm_err_set(s->base.err, LSM_INTERRUPTED,
										  "value search interrupted"));
		s->nrows = s->ri = 0;
		s->keys.len = 0;
		rc = lsm_table_block_scan(c->file->table, b,
								  s->st.strategy == LSM_SEARCH_SCAN ? NULL : s->val,
								  s->vlen, take_row, s, &skipped, s->base.err);
		if (rc != LSM_OK)
			return vs_fail(s, rc);
		s->st.blocks_scanned++;
		if (skipped)
			s->st.blocks_skipped++;
	}
}

static void
vs_seek(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	vsearch    *s = (vsearch *) base;

	(void) key;
	(void) klen;
	/* (re)start: the units from the first (or the claims go on) */
	lsm_iiter_destroy(s->mit);
	s->mit = NULL;
	s->mem_returned = false;
	s->next_unit = 0;
	s->exhausted = false;
	s->unit = 0;
	s->ci = 0;
	s->w = -1;
	s->bi = s->bend = 0;
	s->nrows = s->ri = 0;
	s->nmrows = s->mri = 0;
	s->cand_read = s->cand_hit = false;
	s->base.rc = LSM_OK;
	vs_advance(s);
}

static void
vs_next(lsm_iiter *base)
{
	vs_advance((vsearch *) base);
}

static void
vs_destroy(lsm_iiter *base)
{
	vsearch    *s = (vsearch *) base;
	int			i;

	lsm_iiter_destroy(s->mit);
	for (i = 0; i < s->ncands; i++)
		free(s->cands[i].mask);
	free(s->cands);
	free(s->rows);
	free(s->mrows);
	lsm_buf_free(&s->keys);
	free(s->val);
	free(s);
}

/* forwards only: lsm_iter_reverse refuses value searches */
static const lsm_iiter_ops vsearch_ops = {vs_seek, vs_next, NULL, NULL,
	vs_destroy, NULL};

int
lsm_vsearch_new(const lsm_vsearch_env *env, lsm_version *v,
				lsm_memtable *mem, uint64_t snap,
				int field, const void *val, size_t vlen, int strategy,
				lsm_claim_fn claim, void *claim_arg, lsm_err *err,
				lsm_iiter **out)
{
	vsearch    *s = calloc(1, sizeof(*s));
	int			rc;

	*out = NULL;
	if (s == NULL || (s->val = lsm_memdup(val, vlen)) == NULL)
	{
		free(s);
		return LSM_NOMEM_ERR(err);
	}
	s->base.ops = &vsearch_ops;
	s->base.err = err;
	s->env = *env;
	s->v = v;
	s->mem = mem;
	s->snap = snap;
	s->field = field;
	s->vlen = vlen;
	s->h = lsm_value_hash(field, val, vlen);
	s->claim = claim;
	s->claim_arg = claim_arg;
	rc = collect(s, strategy);
	if (rc != LSM_OK)
	{
		vs_destroy(&s->base);
		return rc;
	}
	*out = &s->base;
	return LSM_OK;
}

void
lsm_vsearch_stats(const lsm_iiter *it, lsm_search_stats *st)
{
	const vsearch *s = (const vsearch *) it;

	*st = s->st;
}

void
lsm_vsearch_estimate(const lsm_iiter *it, lsm_search_stats *st)
{
	const vsearch *s = (const vsearch *) it;
	int			i;

	*st = s->st;
	st->sstables_scanned = 0;
	st->blocks_scanned = 0;
	for (i = 0; i < s->ncands; i++)
	{
		const cand *c = &s->cands[i];
		uint32_t	n = lsm_table_nblocks(c->file->table),
					b;
		uint64_t	blocks = 0;

		if (c->mask == NULL)
			blocks = n;
		else
			for (b = 0; b < (n + 63) / 64; b++)
				blocks += (uint64_t) __builtin_popcountll(c->mask[b]);
		if (blocks > 0)
			st->sstables_scanned++;
		st->blocks_scanned += blocks;
	}
}

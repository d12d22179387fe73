/*
 * iter.c
 *		The merging iterator, the level iterator and the public lsm_iter
 *		(including value search by scan).
 *
 * The merging iterator keeps every child positioned and yields the smallest
 * key (the largest, after seek_back); when several children hold that key,
 * the version with the highest sequence wins and all of them move past it.
 * Children are usually few (the memtable, the level-0 files, one iterator
 * per deeper level), and then a linear scan for the minimum beats a heap; an
 * ingest can leave hundreds of level-0 files (one per run of a large stage),
 * and with more than MERGE_HEAP_MIN children the minimum comes from a binary
 * heap.
 *
 * Runs (lsm_iter_batch): going forwards, the merge hands the winning child
 * the least key another child stands on, and the child takes its entries
 * up to there in one call (a table: block after block, in one loop), so an
 * entry costs a decode and a copy of its key rather than a move through
 * every layer.  A key several children hold is one ordinary move.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "db.h"
#include "vsearch.h"

/* ---------- merging iterator ---------- */

#define MERGE_HEAP_MIN 8

typedef struct merge_iter
{
	lsm_iiter	base;
	int			n;
	int			cur;			/* child holding the current entry, or -1 */
	lsm_iiter **children;
	int		   *heap;			/* valid children, (key, -seq) order; NULL
								 * for the linear scan */
	int			nheap;
	bool		back;			/* last seek was seek_back: keys descend */
} merge_iter;

/*
 * Does child a come before child b: smaller key (larger going back), or the
 * same key and newer?
 */
static inline bool
merge_before(const merge_iter *m, const lsm_iiter *a, const lsm_iiter *b)
{
	int			cmp = lsm_key_cmp(a->key, a->klen, b->key, b->klen);

	if (m->back)
		cmp = -cmp;
	return cmp < 0 || (cmp == 0 && a->seq > b->seq);
}

/* Moves child c one key on, in the merge's direction. */
static inline void
merge_step(const merge_iter *m, lsm_iiter *c)
{
	if (m->back)
		lsm_iiter_prev(c);
	else
		lsm_iiter_next(c);
}

static void
heap_down(merge_iter *m, int i)
{
	int		   *h = m->heap;

	for (;;)
	{
		int			l = 2 * i + 1,
					best = i,
					t;

		if (l < m->nheap &&
			merge_before(m, m->children[h[l]], m->children[h[best]]))
			best = l;
		if (l + 1 < m->nheap &&
			merge_before(m, m->children[h[l + 1]], m->children[h[best]]))
			best = l + 1;
		if (best == i)
			return;
		t = h[i];
		h[i] = h[best];
		h[best] = t;
		i = best;
	}
}

static void
heap_up(merge_iter *m, int i)
{
	int		   *h = m->heap;

	while (i > 0)
	{
		int			p = (i - 1) / 2,
					t;

		if (!merge_before(m, m->children[h[i]], m->children[h[p]]))
			return;
		t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

/* Stops the merge if child c failed; true if it did. */
static bool
merge_child_failed(merge_iter *m, const lsm_iiter *c)
{
	if (c->valid || c->rc == LSM_OK)
		return false;
	m->base.valid = false;
	m->base.rc = c->rc;
	m->cur = -1;
	return true;
}

/* Publishes the heap's top (or the end). */
static void
heap_publish(merge_iter *m)
{
	lsm_iiter  *b;

	m->cur = m->nheap > 0 ? m->heap[0] : -1;
	m->base.valid = m->cur >= 0;
	if (m->cur < 0)
		return;
	b = m->children[m->cur];
	m->base.key = b->key;
	m->base.klen = b->klen;
	m->base.val = b->val;
	m->base.vlen = b->vlen;
	m->base.seq = b->seq;
	m->base.del = b->del;
}

/* Rebuilds the heap from every valid child (after a seek). */
static void
heap_build(merge_iter *m)
{
	int			i;

	m->nheap = 0;
	for (i = 0; i < m->n; i++)
	{
		if (merge_child_failed(m, m->children[i]))
			return;
		if (m->children[i]->valid)
			m->heap[m->nheap++] = i;
	}
	for (i = m->nheap / 2 - 1; i >= 0; i--)
		heap_down(m, i);
	heap_publish(m);
}

/*
 * Moves past the current key with the heap: every other child on it
 * advances (sources hold a key once, so they land past it), then the
 * winner, whose key the comparisons needed until then.
 */
static void
heap_next(merge_iter *m)
{
	int			top = m->heap[0];
	lsm_iiter  *cur = m->children[top];

	/* take the winner out; advance the others holding its key */
	m->heap[0] = m->heap[--m->nheap];
	heap_down(m, 0);
	while (m->nheap > 0)
	{
		int			i = m->heap[0];
		lsm_iiter  *c = m->children[i];

		if (lsm_key_cmp(c->key, c->klen, cur->key, cur->klen) != 0)
			break;
		merge_step(m, c);
		if (merge_child_failed(m, c))
			return;
		if (c->valid)
			heap_down(m, 0);
		else
		{
			m->heap[0] = m->heap[--m->nheap];
			heap_down(m, 0);
		}
	}
	merge_step(m, cur);
	if (merge_child_failed(m, cur))
		return;
	if (cur->valid)
	{
		m->heap[m->nheap++] = top;
		heap_up(m, m->nheap - 1);
	}
	heap_publish(m);
}

static void
merge_settle(merge_iter *m)
{
	int			i,
				best = -1;

	for (i = 0; i < m->n; i++)
	{
		lsm_iiter  *c = m->children[i];

		if (!c->valid)
		{
			if (c->rc != LSM_OK)
			{
				m->base.valid = false;
				m->base.rc = c->rc;
				m->cur = -1;
				return;
			}
			continue;
		}
		if (best < 0 || merge_before(m, c, m->children[best]))
			best = i;
	}
	m->cur = best;
	m->base.valid = best >= 0;
	if (best >= 0)
	{
		lsm_iiter  *b = m->children[best];

		m->base.key = b->key;
		m->base.klen = b->klen;
		m->base.val = b->val;
		m->base.vlen = b->vlen;
		m->base.seq = b->seq;
		m->base.del = b->del;
	}
}

/* Positions every child (forwards or back) and picks the first. */
static void
merge_position(merge_iter *m, const uint8_t *key, size_t klen, bool back)
{
	int			i;

	m->base.rc = LSM_OK;
	m->back = back;
	for (i = 0; i < m->n; i++)
	{
		if (back)
			lsm_iiter_seek_back(m->children[i], key, klen);
		else
			lsm_iiter_seek(m->children[i], key, klen);
	}
	if (m->heap)
		heap_build(m);
	else
		merge_settle(m);
}

static void
merge_seek(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	merge_position((merge_iter *) base, key, klen, false);
}

static void
merge_seek_back(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	merge_position((merge_iter *) base, key, klen, true);
}

/* next and prev: one key on in the direction of the last seek */
static void
merge_next(lsm_iiter *base)
{
	merge_iter *m = (merge_iter *) base;
	lsm_iiter  *cur;
	int			i;

	if (m->heap)
		return heap_next(m);
	cur = m->children[m->cur];
	/* advance the others holding the same key, then the winner */
	for (i = 0; i < m->n; i++)
	{
		lsm_iiter  *c = m->children[i];

		if (i != m->cur && c->valid &&
			lsm_key_cmp(c->key, c->klen, cur->key, cur->klen) == 0)
			merge_step(m, c);
	}
	merge_step(m, cur);
	merge_settle(m);
}

/* Lowers *lim to the least key a child other than the winner stands on. */
static void
others_least(const merge_iter *m, const uint8_t **lim, size_t *limlen)
{
	/* with a heap, the least of the others is one of the top's two children */
	int			first = m->heap ? 1 : 0,
				end = m->heap ? (m->nheap < 3 ? m->nheap : 3) : m->n,
				i;

	for (i = first; i < end; i++)
	{
		int			j = m->heap ? m->heap[i] : i;
		const lsm_iiter *c = m->children[j];

		if (j != m->cur && c->valid &&
			(*lim == NULL || lsm_key_cmp(c->key, c->klen, *lim, *limlen) < 0))
		{
			*lim = c->key;
			*limlen = c->klen;
		}
	}
}

/*
 * The run of a merge: the winner runs up to the least key another child
 * stands on (then none of them holds its keys, and its tombstones hide
 * nothing); a key several children hold is one move of the merge.
 */
static void
merge_run(lsm_iiter *base, lsm_run *r, const uint8_t *limit, size_t limitlen)
{
	merge_iter *m = (merge_iter *) base;

	while (m->base.valid && !r->full && r->budget > 0)
	{
		lsm_iiter  *cur = m->children[m->cur];
		const uint8_t *lim = limit;
		size_t		limlen = limitlen;

		others_least(m, &lim, &limlen);
		if (lim != NULL && lsm_key_cmp(cur->key, cur->klen, lim, limlen) >= 0)
		{
			if (limit != NULL &&
				lsm_key_cmp(cur->key, cur->klen, limit, limitlen) >= 0)
				return;
			if (!lsm_run_add(r, m->base.key, m->base.klen, m->base.klen,
							 m->base.val, m->base.vlen, m->base.del))
				return;
			merge_next(base);
			continue;
		}
		lsm_iiter_run(cur, r, lim, limlen);
		if (!m->heap)
		{
			merge_settle(m);
			continue;
		}
		if (merge_child_failed(m, cur))
			return;
		if (!cur->valid)
			m->heap[0] = m->heap[--m->nheap];
		heap_down(m, 0);
		heap_publish(m);
	}
}

static void
merge_destroy(lsm_iiter *base)
{
	merge_iter *m = (merge_iter *) base;
	int			i;

	for (i = 0; i < m->n; i++)
		lsm_iiter_destroy(m->children[i]);
	free(m->children);
	free(m->heap);
	free(m);
}

static const lsm_iiter_ops merge_ops = {merge_seek, merge_next, merge_seek_back,
	merge_next, merge_destroy, merge_run};

lsm_iiter *
lsm_merge_iter_new(lsm_iiter **children, int n, lsm_err *err)
{
	merge_iter *m = calloc(1, sizeof(*m));
	int			i;

	if (m == NULL || (m->children = malloc(sizeof(lsm_iiter *) * (n ? n : 1))) == NULL)
	{
		free(m);
		for (i = 0; i < n; i++)
			lsm_iiter_destroy(children[i]);
		return NULL;
	}
	memcpy(m->children, children, sizeof(lsm_iiter *) * n);
	if (n > MERGE_HEAP_MIN && (m->heap = malloc(sizeof(int) * n)) == NULL)
	{
		free(m->children);
		free(m);
		for (i = 0; i < n; i++)
			lsm_iiter_destroy(children[i]);
		return NULL;
	}
	m->n = n;
	m->cur = -1;
	m->base.ops = &merge_ops;
	m->base.err = err;
	return &m->base;
}

/* ---------- runs ---------- */

void
lsm_iiter_run(lsm_iiter *it, lsm_run *r, const uint8_t *limit, size_t limitlen)
{
	if (it->ops->run != NULL)
		return it->ops->run(it, r, limit, limitlen);
	while (it->valid && r->budget > 0 &&
		   (limit == NULL || lsm_key_cmp(it->key, it->klen, limit, limitlen) < 0) &&
		   lsm_run_add(r, it->key, it->klen, it->klen, it->val, it->vlen,
					   it->del))
		lsm_iiter_next(it);
}

/* ---------- level iterator (sorted, disjoint files) ---------- */

typedef struct level_iter
{
	lsm_iiter	base;
	lsm_version *v;				/* pins the files */
	lsm_file  **files;
	int			nfiles;
	int			idx;			/* current file */
	lsm_iiter  *file;
} level_iter;

static void
level_publish(level_iter *it)
{
	lsm_iiter  *f = it->file;

	it->base.valid = f->valid;
	it->base.key = f->key;
	it->base.klen = f->klen;
	it->base.val = f->val;
	it->base.vlen = f->vlen;
	it->base.seq = f->seq;
	it->base.del = f->del;
}

/*
 * Opens file idx positioned at key (NULL = its first; when back, the last
 * key <= key, NULL = its last), going on to the files after it (before it)
 * while they hold nothing from there.
 */
static void
level_open_from(level_iter *it, int idx, const uint8_t *key, size_t klen,
				bool back)
{
	for (;;)
	{
		lsm_iiter_destroy(it->file);
		it->file = NULL;
		it->idx = idx;
		if (idx < 0 || idx >= it->nfiles)
		{
			it->base.valid = false;
			return;
		}
		it->file = lsm_table_iter(it->files[idx]->table, it->base.err);
		if (it->file == NULL)
		{
			it->base.valid = false;
			it->base.rc = LSM_NOMEM_ERR(it->base.err);
			return;
		}
		if (back)
			lsm_iiter_seek_back(it->file, key, klen);
		else
			lsm_iiter_seek(it->file, key, klen);
		if (it->file->valid || it->file->rc != LSM_OK)
		{
			it->base.rc = it->file->rc;
			level_publish(it);
			return;
		}
		idx += back ? -1 : 1;
		key = NULL;
	}
}

static void
level_seek(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	level_iter *it = (level_iter *) base;

	it->base.rc = LSM_OK;
	level_open_from(it, key ? lsm_files_find(it->files, it->nfiles, key, klen) : 0,
					key, klen, false);
}

static void
level_next(lsm_iiter *base)
{
	level_iter *it = (level_iter *) base;

	lsm_iiter_next(it->file);
	if (it->file->valid || it->file->rc != LSM_OK)
	{
		it->base.rc = it->file->rc;
		level_publish(it);
		return;
	}
	level_open_from(it, it->idx + 1, NULL, 0, false);
}

static void
level_seek_back(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	level_iter *it = (level_iter *) base;
	int			idx = it->nfiles - 1;

	/* the first file whose last key is >= key, or the last file */
	it->base.rc = LSM_OK;
	if (key != NULL && (idx = lsm_files_find(it->files, it->nfiles, key, klen)) == it->nfiles)
	{
		idx = it->nfiles - 1;
		key = NULL;
	}
	level_open_from(it, idx, key, klen, true);
}

static void
level_prev(lsm_iiter *base)
{
	level_iter *it = (level_iter *) base;

	lsm_iiter_prev(it->file);
	if (it->file->valid || it->file->rc != LSM_OK)
	{
		it->base.rc = it->file->rc;
		level_publish(it);
		return;
	}
	level_open_from(it, it->idx - 1, NULL, 0, true);
}

/* The run of a level: each file's run, file after file. */
static void
level_run(lsm_iiter *base, lsm_run *r, const uint8_t *limit, size_t limitlen)
{
	level_iter *it = (level_iter *) base;

	while (it->base.valid && !r->full && r->budget > 0)
	{
		lsm_iiter_run(it->file, r, limit, limitlen);
		if (it->file->valid || it->file->rc != LSM_OK)
		{
			it->base.rc = it->file->rc;
			level_publish(it);
			return;
		}
		level_open_from(it, it->idx + 1, NULL, 0, false);
	}
}

static void
level_destroy(lsm_iiter *base)
{
	level_iter *it = (level_iter *) base;

	lsm_iiter_destroy(it->file);
	lsm_version_unref(it->v);
	free(it);
}

static const lsm_iiter_ops level_ops = {level_seek, level_next, level_seek_back,
	level_prev, level_destroy, level_run};

lsm_iiter *
lsm_level_iter_new(lsm_version *v, lsm_file **files, int n, lsm_err *err)
{
	level_iter *it = calloc(1, sizeof(*it));

	if (it == NULL)
		return NULL;
	it->base.ops = &level_ops;
	it->base.err = err;
	it->v = v;
	it->files = files;
	it->nfiles = n;
	lsm_version_ref(v);
	return &it->base;
}

lsm_iiter *
lsm_db_merge_iter(lsm_version *v, lsm_memtable *mem, uint64_t snap,
				  lsm_err *err)
{
	lsm_iiter  *children[LSM_MAX_LEVELS + 1 + 64];
	lsm_iiter **kids = children;
	int			n = 0,
				cap = v->nfiles[0] + LSM_MAX_LEVELS + 1,
				i;
	lsm_iiter  *m;

	if (cap > (int) (sizeof(children) / sizeof(children[0])))
	{
		kids = malloc(sizeof(lsm_iiter *) * cap);
		if (kids == NULL)
			return NULL;
	}
	/*
	 * An empty memtable holds nothing the snapshot sees (later entries come
	 * after it): no child for it.
	 */
	if (mem && lsm_memtable_entries(mem) > 0)
	{
		if ((kids[n] = lsm_memtable_iter(mem, snap, err)) == NULL)
			goto fail;
		n++;
	}
	for (i = 0; i < v->nfiles[0]; i++)
		if ((kids[n++] = lsm_table_iter(v->files[0][i]->table, err)) == NULL)
		{
			n--;
			goto fail;
		}
	for (i = 1; i < LSM_MAX_LEVELS; i++)
		if (v->nfiles[i] > 0)
		{
			if ((kids[n++] = lsm_level_iter_new(v, v->files[i], v->nfiles[i],
												err)) == NULL)
			{
				n--;
				goto fail;
			}
		}
	/* one source (a compacted store): no merge to pay for at every entry */
	m = n == 1 ? kids[0] : lsm_merge_iter_new(kids, n, err);
	if (kids != children)
		free(kids);
	return m;

fail:
	for (i = 0; i < n; i++)
		lsm_iiter_destroy(kids[i]);
	if (kids != children)
		free(kids);
	return NULL;
}

/* ---------- public iterator ---------- */

struct lsm_iter
{
	lsm_db	   *db;
	lsm_version *v;
	lsm_memtable *mem;
	lsm_iiter  *m;
	lsm_err		err;
	bool		positioned;
	int			rc;
	bool		search;			/* m is a value search (vsearch.c) */
	bool		deletes;		/* show tombstones (a stage's iterator) */
	bool		reverse;		/* runs backwards (lsm_iter_reverse) */
	uint8_t    *limit;			/* lsm_iter_set_limit's, or NULL */
	size_t		limitlen;
	lsm_entry  *batch;			/* lsm_iter_batch's entries, ITER_BATCH */
	uint8_t    *bkeys;			/* and their keys, bkcap bytes */
	size_t		bkcap;
};

/* entries in a batch, and the bytes for their keys (more for a long key) */
#define ITER_BATCH 256
#define ITER_BATCH_KEYS 8192

/* Moves the merge one key on, in the iterator's direction. */
static inline void
iter_step(lsm_iter *it)
{
	if (it->reverse)
		lsm_iiter_prev(it->m);
	else
		lsm_iiter_next(it->m);
}

/* Skips tombstones (unless the iterator shows them). */
static void
iter_skip(lsm_iter *it)
{
	long		steps = 0;

	while (it->m->valid)
	{
		if (!it->m->del || it->deletes)
			return;
		if ((++steps & 4095) == 0 && lsm_db_interrupted(it->db))
		{
			it->rc = lsm_err_set(&it->err, LSM_INTERRUPTED,
								 "iteration interrupted");
			return;
		}
		iter_step(it);
	}
}

int
lsm_iter_open_version(lsm_db *db, lsm_version *v, lsm_memtable *mem,
					  uint64_t snap, lsm_iter **out)
{
	lsm_iter   *it;

	*out = NULL;
	it = calloc(1, sizeof(*it));
	if (it == NULL)
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	it->db = db;
	it->v = v;
	it->mem = mem;
	lsm_version_ref(it->v);
	if (it->mem)
		lsm_memtable_ref(it->mem);
	it->m = lsm_db_merge_iter(it->v, it->mem, snap, &it->err);
	if (it->m == NULL)
	{
		lsm_iter_close(it);
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	}
	db->open_iters++;
	*out = it;
	return LSM_OK;
}

int
lsm_iter_build(lsm_db *db, bool deletes, lsm_iiter *(*build) (void *arg,
															   lsm_err *err),
			   void *arg, lsm_iter **out)
{
	lsm_iter   *it = calloc(1, sizeof(*it));

	*out = NULL;
	if (it == NULL)
		return LSM_NOMEM;
	it->db = db;
	it->deletes = deletes;
	it->m = build(arg, &it->err);
	if (it->m == NULL)
	{
		free(it);
		return LSM_NOMEM;
	}
	db->open_iters++;
	*out = it;
	return LSM_OK;
}

int
lsm_iter_open(lsm_db *db, lsm_iter **out)
{
	if (db == NULL || out == NULL)
		return LSM_INVALID;
	return lsm_iter_open_version(db, db->current, db->mem, db->read_seq, out);
}

void
lsm_iter_seek(lsm_iter *it, const void *key, size_t klen)
{
	if (it == NULL || it->rc != LSM_OK)
		return;
	it->positioned = true;
	if (key != NULL && klen > LSM_MAX_KEY_LEN)
	{
		it->rc = lsm_err_set(&it->err, LSM_INVALID,
							 "seek key of %zu bytes is longer than %d", klen,
							 LSM_MAX_KEY_LEN);
		return;
	}
	if (it->reverse)
		lsm_iiter_seek_back(it->m, key, key ? klen : 0);
	else
		lsm_iiter_seek(it->m, key, key ? klen : 0);
	iter_skip(it);
}

int
lsm_iter_reverse(lsm_iter *it)
{
	if (it == NULL || it->positioned || it->search)
		return LSM_INVALID;
	it->reverse = true;
	return LSM_OK;
}

int
lsm_iter_set_limit(lsm_iter *it, const void *limit, size_t limitlen)
{
	uint8_t    *copy = NULL;

	if (it == NULL || it->reverse || it->search ||
		(limit == NULL && limitlen > 0))
		return LSM_INVALID;
	if (limit != NULL && (copy = lsm_memdup(limit, limitlen)) == NULL)
		return LSM_NOMEM;
	free(it->limit);
	it->limit = copy;
	it->limitlen = limitlen;
	return LSM_OK;
}

int
lsm_iter_is_delete(const lsm_iter *it)
{
	return lsm_iter_valid(it) && it->m->del;
}

int
lsm_iter_valid(const lsm_iter *it)
{
	return it != NULL && it->positioned && it->rc == LSM_OK && it->m->valid;
}

void
lsm_iter_next(lsm_iter *it)
{
	if (!lsm_iter_valid(it))
		return;
	iter_step(it);
	iter_skip(it);
}

const void *
lsm_iter_key(const lsm_iter *it, size_t *klen)
{
	if (!lsm_iter_valid(it))
	{
		if (klen)
			*klen = 0;
		return NULL;
	}
	if (klen)
		*klen = it->m->klen;
	return it->m->key;
}

const void *
lsm_iter_value(const lsm_iter *it, size_t *vlen)
{
	if (!lsm_iter_valid(it))
	{
		if (vlen)
			*vlen = 0;
		return NULL;
	}
	if (vlen)
		*vlen = it->m->vlen;
	return it->m->val;
}

int
lsm_iter_entry(const lsm_iter *it, const void **key, size_t *klen,
			   const void **val, size_t *vlen)
{
	if (!lsm_iter_valid(it))
		return 0;
	*key = it->m->key;
	*klen = it->m->klen;
	*val = it->m->val;
	*vlen = it->m->vlen;
	return 1;
}

/* Makes room for n bytes of keys, when none are held.  False if out of memory. */
static bool
batch_reserve(lsm_iter *it, size_t n)
{
	uint8_t    *p;

	if (it->batch == NULL &&
		(it->batch = malloc(sizeof(lsm_entry) * ITER_BATCH)) == NULL)
		return false;
	if (n <= it->bkcap)
		return true;
	if (n < ITER_BATCH_KEYS)
		n = ITER_BATCH_KEYS;
	if ((p = realloc(it->bkeys, n)) == NULL)
		return false;
	it->bkeys = p;
	it->bkcap = n;
	return true;
}

int
lsm_iter_batch(lsm_iter *it, const lsm_entry **entries)
{
	lsm_run		r;

	if (!lsm_iter_valid(it))
		return 0;
	if (it->reverse || it->search)
	{
		lsm_entry  *e;

		/* one entry, copied: the move may release what it points into */
		if (!batch_reserve(it, it->m->klen + it->m->vlen))
			goto nomem;
		e = &it->batch[0];
		memcpy(it->bkeys, it->m->key, it->m->klen);
		memcpy(it->bkeys + it->m->klen, it->m->val, it->m->vlen);
		e->key = it->bkeys;
		e->klen = it->m->klen;
		e->val = it->bkeys + it->m->klen;
		e->vlen = it->m->vlen;
		e->del = it->m->del;
		*entries = e;
		lsm_iter_next(it);
		return 1;
	}
	if (!batch_reserve(it, ITER_BATCH_KEYS))
		goto nomem;
	memset(&r, 0, sizeof(r));
	r.out = it->batch;
	r.max = ITER_BATCH;
	r.keys = it->bkeys;
	r.kcap = it->bkcap;
	r.deletes = it->deletes;
	r.budget = ITER_BATCH * 16;
	for (;;)
	{
		lsm_iiter_run(it->m, &r, it->limit, it->limitlen);
		if (r.n > 0 || !it->m->valid)
			break;
		/* at the limit: the end, as far as batches go */
		if (it->limit != NULL && !r.full &&
			lsm_key_cmp(it->m->key, it->m->klen, it->limit, it->limitlen) >= 0)
			return 0;
		if (r.full)
		{
			/* a key longer than the buffer: a larger one for it */
			if (!batch_reserve(it, it->m->klen))
				goto nomem;
			r.keys = it->bkeys;
			r.kcap = it->bkcap;
			r.full = false;
			continue;
		}
		/* the budget went on tombstones */
		if (lsm_db_interrupted(it->db))
		{
			it->rc = lsm_err_set(&it->err, LSM_INTERRUPTED,
								 "iteration interrupted");
			return 0;
		}
		r.budget = ITER_BATCH * 16;
	}
	iter_skip(it);				/* a budget spent on tombstones stops on one */
	*entries = r.out;
	return r.n;

nomem:
	it->rc = lsm_err_set(&it->err, LSM_NOMEM, "out of memory");
	return 0;
}

int
lsm_iter_status(const lsm_iter *it)
{
	int			rc;

	if (it == NULL)
		return LSM_INVALID;
	rc = (it->rc != LSM_OK || it->m == NULL) ? it->rc : it->m->rc;
	/* the detail (file, offset, errno) goes to the handle's lsm_errmsg */
	if (rc != LSM_OK && it->db != NULL)
		lsm_db_fail(it->db, rc, &it->err);
	return rc;
}

/* Adds a finished search's counters to the handle's totals. */
static void
add_search_stats(lsm_stats *ctr, const lsm_search_stats *st)
{
	lsm_search_stats *t = &ctr->search;

	t->nodes_visited += st->nodes_visited;
	t->leaves_probed += st->leaves_probed;
	t->leaves_positive += st->leaves_positive;
	t->flat_words += st->flat_words;
	t->sstables_unfiltered += st->sstables_unfiltered;
	t->sstables_scanned += st->sstables_scanned;
	t->sstables_false += st->sstables_false;
	t->blocks_scanned += st->blocks_scanned;
	t->blocks_skipped += st->blocks_skipped;
	t->memtable_scanned += st->memtable_scanned;
	t->rows_validated += st->rows_validated;
	t->rows_rejected += st->rows_rejected;
	t->rows_returned += st->rows_returned;
}

/* The error detail of an iterator, for the handle's lsm_errmsg. */
void
lsm_iter_close(lsm_iter *it)
{
	if (it == NULL)
		return;
	if (lsm_iter_status(it) != LSM_OK && it->db)
		lsm_db_fail(it->db, lsm_iter_status(it), &it->err);
	if (it->search && it->m && it->db)
	{
		lsm_search_stats st;

		lsm_vsearch_stats(it->m, &st);
		add_search_stats(&it->db->ctr, &st);
	}
	lsm_iiter_destroy(it->m);
	free(it->limit);
	free(it->batch);
	free(it->bkeys);
	lsm_version_unref(it->v);
	lsm_memtable_unref(it->mem);
	if (it->m && it->db)
		it->db->open_iters--;
	free(it);
}

int
lsm_iter_search_version(lsm_db *db, lsm_version *v, lsm_memtable *mem,
						uint64_t snap, int field, const void *val,
						size_t vlen, int strategy, lsm_claim_fn claim,
						void *arg, lsm_iter **out)
{
	lsm_iter   *it;
	int			rc;

	*out = NULL;
	it = calloc(1, sizeof(*it));
	if (it == NULL)
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	it->db = db;
	it->v = v;
	it->mem = mem;
	it->search = true;
	lsm_version_ref(it->v);
	if (it->mem)
		lsm_memtable_ref(it->mem);
	rc = lsm_vsearch_new(db, it->v, it->mem, snap, field, val ? val : "",
						 vlen, strategy, claim, arg, &it->err, &it->m);
	if (rc != LSM_OK)
	{
		lsm_db_fail(db, rc, &it->err);
		lsm_iter_close(it);
		return rc;
	}
	db->open_iters++;
	db->ctr.value_searches++;
	lsm_iter_seek(it, NULL, 0);
	*out = it;
	return LSM_OK;
}

int
lsm_value_search_with(lsm_db *db, int field, const void *val, size_t vlen,
					  int strategy, lsm_iter **out)
{
	if (out)
		*out = NULL;
	if (db == NULL || out == NULL || field < 0 || (val == NULL && vlen > 0) ||
		strategy < LSM_SEARCH_AUTO || strategy > LSM_SEARCH_SCAN)
		return LSM_INVALID;
	return lsm_iter_search_version(db, db->current, db->mem, db->read_seq,
								   field, val, vlen, strategy, NULL, NULL,
								   out);
}

int
lsm_value_search(lsm_db *db, int field, const void *val, size_t vlen,
				 lsm_iter **out)
{
	return lsm_value_search_with(db, field, val, vlen, LSM_SEARCH_AUTO, out);
}

int
lsm_iter_search_stats(const lsm_iter *it, lsm_search_stats *st)
{
	if (it == NULL || st == NULL)
		return LSM_INVALID;
	if (!it->search)
		memset(st, 0, sizeof(*st));
	else
		lsm_vsearch_stats(it->m, st);
	return LSM_OK;
}

int
lsm_value_search_estimate(lsm_db *db, int field, const void *val, size_t vlen,
						  int strategy, lsm_search_stats *st)
{
	lsm_iiter  *m;
	lsm_err		e;
	int			rc;

	if (db == NULL || st == NULL || field < 0 || (val == NULL && vlen > 0) ||
		strategy < LSM_SEARCH_AUTO || strategy > LSM_SEARCH_SCAN)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = lsm_vsearch_new(db, db->current, db->mem, db->read_seq, field,
						 val ? val : "", vlen, strategy, NULL, NULL, &e, &m);
	if (rc != LSM_OK)
		return lsm_db_fail(db, rc, &e);
	lsm_vsearch_estimate(m, st);
	lsm_iiter_destroy(m);
	return LSM_OK;
}

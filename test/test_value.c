/*
 * test_value.c
 *		Value search: the SSTables' value filters, the Bloom filter hierarchy
 *		over them (its tree and its flat layout), the memtable's value
 *		filter, the search strategies, their counters and estimates.
 *
 * value_model_* drive small stores (16 KiB memtables, 8 KiB files, 512-byte
 * blocks, value filters of a few thousand bits, hierarchy order 2 or 3, so
 * that a run spans many SSTables over several levels under a tree of
 * height two or more) through random puts, overwrites that change the
 * row, deletes, batches, flushes, compactions and reopens, against a
 * reference model.  Every few hundred operations they search random fields
 * for values that are present, absent and empty with every strategy (and
 * with plain lsm_value_search) and compare the rows with brute force over
 * the model: the same keys, each once, with their newest rows; none
 * missing (no false negatives) and none extra.  Each search's counters are
 * checked for the relations that must hold, the estimate for the same
 * search must agree with what the search did, lsm_verify must pass and
 * the hierarchy's shape must be that of a tree of order d.  A value search
 * is sometimes held open across later operations and checked against the
 * model of the moment it was opened.
 *
 * The filter-based strategies must moreover agree with each other: TREE,
 * FLAT and LEAVES all end up reading exactly the tables whose own filter
 * matches (a node is the OR of its children; a flat column holds its
 * leaf's bits), so their positive leaves, tables and blocks are equal.
 *
 * The other tests pin down one situation each: rows in the memtable only,
 * overwritten or deleted in a newer table, moving A -> B -> A; the
 * snapshot of a search iterator; fields left out of the value filters;
 * stores without value filters (and with k = 0); a second process writing
 * while this one refreshes, one compacting while this one writes, and a
 * table moved down while another handle flushes; estimates; the
 * hierarchy's shape and its node files, and damaged node files.
 *
 * The random tests derive their seeds from harness_seed(), which is
 * printed; LSM_TEST_SEED=<n> repeats a run.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "harness.h"

#include "forge.h"

/* ---------------------------------------------------------------------- */
/* Keys, rows and the reference model. */

#define KEY_LEN 9
#define NSTRAT 6

/* Writes key i ("key000123") into buf (16 bytes); returns its length. */
static size_t
key_of(int i, char *buf)
{
	snprintf(buf, 16, "key%06d", i);
	return KEY_LEN;
}

/* The index of a key written by key_of, or -1 (also if >= nkeys). */
static int
key_index(const void *key, size_t klen, int nkeys)
{
	const char *k = key;
	int			i = 0;
	size_t		j;

	if (klen != KEY_LEN || memcmp(k, "key", 3) != 0)
		return -1;
	for (j = 3; j < KEY_LEN; j++)
	{
		if (k[j] < '0' || k[j] > '9')
			return -1;
		i = i * 10 + (k[j] - '0');
	}
	return i < nkeys ? i : -1;
}

/* Encodes nf fields into a malloc'ed row of *len bytes. */
static uint8_t *
make_row(const lsm_field *f, int nf, size_t *len)
{
	void	   *row;
	size_t		rowlen;
	uint8_t    *out;

	CHECK_OK(lsm_row_encode(f, nf, &row, &rowlen));
	out = harness_dup_bytes(row, rowlen);
	lsm_free(row);
	*len = rowlen;
	return out;
}

/*
 * A row of up to three text fields (nf of them); a NULL string is a null
 * field.
 */
static uint8_t *
text_row(size_t *len, int nf, const char *a, const char *b, const char *c)
{
	const char *s[3] = {a, b, c};
	lsm_field	f[3];
	int			i;

	memset(f, 0, sizeof(f));
	for (i = 0; i < nf; i++)
	{
		f[i].is_null = s[i] == NULL;
		f[i].data = s[i];
		f[i].len = s[i] ? strlen(s[i]) : 0;
	}
	return make_row(f, nf, len);
}

/* The reference model: key i -> row, or absent. */
typedef struct model
{
	int			nkeys;
	uint8_t   **val;			/* NULL: absent */
	size_t	   *vlen;
} model;

/* An empty model of nkeys keys. */
static void
model_init(model *m, int nkeys)
{
	m->nkeys = nkeys;
	m->val = calloc(nkeys, sizeof(uint8_t *));
	m->vlen = calloc(nkeys, sizeof(size_t));
	if (m->val == NULL || m->vlen == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
}

/* Sets key i to a copy of v. */
static void
model_set(model *m, int i, const void *v, size_t vlen)
{
	free(m->val[i]);
	m->val[i] = harness_dup_bytes(v, vlen);
	m->vlen[i] = vlen;
}

/* Makes key i absent. */
static void
model_del(model *m, int i)
{
	free(m->val[i]);
	m->val[i] = NULL;
	m->vlen[i] = 0;
}

/* Makes dst (uninitialised) a deep copy of src. */
static void
model_copy(model *dst, const model *src)
{
	int			i;

	model_init(dst, src->nkeys);
	for (i = 0; i < src->nkeys; i++)
		if (src->val[i])
			model_set(dst, i, src->val[i], src->vlen[i]);
}

/* Releases everything the model holds. */
static void
model_free(model *m)
{
	int			i;

	for (i = 0; i < m->nkeys; i++)
		free(m->val[i]);
	free(m->val);
	free(m->vlen);
	memset(m, 0, sizeof(*m));
}

/*
 * Puts key i = row through db (unless NULL) and into the model; takes
 * ownership of row.
 */
static void
put_row(lsm_db *db, model *m, int i, uint8_t *row, size_t len)
{
	char		key[16];

	if (db)
		CHECK_DB_OK(db, lsm_put(db, key, key_of(i, key), row, len));
	model_set(m, i, row, len);
	free(row);
}

/* put_row of a text_row (see there). */
static void
put_text(lsm_db *db, model *m, int i, int nf, const char *a, const char *b,
		 const char *c)
{
	size_t		len;
	uint8_t    *row = text_row(&len, nf, a, b, c);

	put_row(db, m, i, row, len);
}

/* Deletes key i through db (unless NULL) and from the model. */
static void
del_row(lsm_db *db, model *m, int i)
{
	char		key[16];

	if (db)
		CHECK_DB_OK(db, lsm_delete(db, key, key_of(i, key)));
	model_del(m, i);
}

/* Number of the model's rows matching. */
static size_t
model_count(const model *m, int field, const void *val, size_t vlen)
{
	size_t		n = 0;
	int			i;

	for (i = 0; i < m->nkeys; i++)
		n += harness_row_matches(m->val[i], m->vlen[i], field, val, vlen);
	return n;
}

/* ---------------------------------------------------------------------- */
/* Checking one search. */

static const int all_strategies[NSTRAT] = {LSM_SEARCH_TREE, LSM_SEARCH_FLAT,
	LSM_SEARCH_LEAVES, LSM_SEARCH_SCAN, LSM_SEARCH_AUTO, -1
};

/* A strategy's name; -1 stands for plain lsm_value_search. */
static const char *
strategy_name(int s)
{
	switch (s)
	{
		case LSM_SEARCH_AUTO:
			return "AUTO";
		case LSM_SEARCH_TREE:
			return "TREE";
		case LSM_SEARCH_FLAT:
			return "FLAT";
		case LSM_SEARCH_LEAVES:
			return "LEAVES";
		case LSM_SEARCH_SCAN:
			return "SCAN";
		case -1:
			return "lsm_value_search";
	}
	return "?";
}

/* What a search is checked against. */
typedef struct sctx
{
	lsm_db	   *db;
	const model *m;
	const char *where;			/* context for messages */
	int			dflt;			/* the handle's lsm_options.value_search */
	uint64_t	unindexed;		/* the store's value_unindexed */
	int			estimate;		/* compare with lsm_value_search_estimate */
	int			damaged;		/* a node file may be damaged */
} sctx;

/* The rows of one search seen so far. */
typedef struct drain
{
	char	   *seen;			/* per key */
	size_t		count;
} drain;

/* Starts collecting the rows of a search over keys of m. */
static void
drain_init(drain *d, const model *m)
{
	d->seen = calloc(m->nkeys + 1, 1);
	d->count = 0;
	if (d->seen == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
}

/*
 * Checks the row the valid iterator is on (a live key of m, not seen
 * before, with m's row, which matches) and moves on.
 */
static void
take_row(lsm_iter *it, const model *m, int field, const void *val,
		 size_t vlen, drain *d, const char *what)
{
	const void *k,
			   *v;
	size_t		kn,
				vn;
	int			i;
	char		hk[100],
				hv[100];

	k = lsm_iter_key(it, &kn);
	v = lsm_iter_value(it, &vn);
	i = key_index(k, kn, m->nkeys);
	if (i < 0)
		harness_fail(__FILE__, __LINE__, "%s: returned unknown key %s", what,
					 harness_hex(k, kn, hk));
	if (d->seen[i])
		harness_fail(__FILE__, __LINE__, "%s: returned key %s twice", what,
					 harness_hex(k, kn, hk));
	d->seen[i] = 1;
	if (m->val[i] == NULL)
		harness_fail(__FILE__, __LINE__, "%s: returned key %s, which is deleted "
					 "or was never written (value %s)", what,
					 harness_hex(k, kn, hk), harness_hex(v, vn, hv));
	if (vn != m->vlen[i] || (vn > 0 && memcmp(v, m->val[i], vn) != 0))
		harness_fail(__FILE__, __LINE__, "%s: returned key %s with an old row "
					 "%s (%zu bytes, newest is %zu bytes)", what,
					 harness_hex(k, kn, hk), harness_hex(v, vn, hv), vn,
					 m->vlen[i]);
	if (!harness_row_matches(v, vn, field, val, vlen))
		harness_fail(__FILE__, __LINE__, "%s: returned key %s whose row %s does "
					 "not match", what, harness_hex(k, kn, hk),
					 harness_hex(v, vn, hv));
	d->count++;
	lsm_iter_next(it);
}

/*
 * Reads the iterator to its end and checks that every matching row of m
 * was returned.  Frees d's memory; returns the number of rows.
 */
static size_t
drain_finish(lsm_iter *it, const model *m, int field, const void *val,
			 size_t vlen, drain *d, const char *what)
{
	size_t		n;
	int			i;
	char		hk[100];

	while (lsm_iter_valid(it))
		take_row(it, m, field, val, vlen, d, what);
	if (lsm_iter_status(it) != LSM_OK)
		harness_fail(__FILE__, __LINE__, "%s: iterator status %d (%s)", what,
					 lsm_iter_status(it), lsm_strerror(lsm_iter_status(it)));
	for (i = 0; i < m->nkeys; i++)
		if (!d->seen[i] &&
			harness_row_matches(m->val[i], m->vlen[i], field, val, vlen))
		{
			char		key[16];

			key_of(i, key);
			harness_fail(__FILE__, __LINE__, "%s: missed key %s (a false "
						 "negative; %zu rows returned, %zu expected)", what,
						 harness_hex(key, KEY_LEN, hk), d->count,
						 model_count(m, field, val, vlen));
		}
	n = d->count;
	free(d->seen);
	d->seen = NULL;
	return n;
}

#define CHECK_CTR(cond) \
	do { \
		if (!(cond)) \
			harness_fail(__FILE__, __LINE__, "%s: counters: CHECK(%s) failed " \
						 "(%s)", what, #cond, stats_str(st)); \
	} while (0)

/* The counters in one line (a static buffer). */
static const char *
stats_str(const lsm_search_stats *st)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "strategy %d nodes %" PRIu64 " leaves %" PRIu64
			 "/%" PRIu64 " flat_words %" PRIu64 " unfiltered %" PRIu64
			 " scanned %" PRIu64 " false %" PRIu64 " blocks %" PRIu64
			 " skipped %" PRIu64 " memtable %" PRIu64 " validated %" PRIu64
			 " rejected %" PRIu64 " returned %" PRIu64,
			 st->strategy, st->nodes_visited, st->leaves_positive,
			 st->leaves_probed, st->flat_words, st->sstables_unfiltered,
			 st->sstables_scanned, st->sstables_false, st->blocks_scanned,
			 st->blocks_skipped, st->memtable_scanned, st->rows_validated,
			 st->rows_rejected, st->rows_returned);
	return buf;
}

/*
 * The relations between the counters of a search that returned n rows
 * with strategy `strategy` (-1: plain lsm_value_search) on a store whose
 * figures were dst just before.
 */
static void
check_counters(const sctx *c, const lsm_search_stats *st, int strategy,
			   int field, size_t n, const lsm_stats *dst, const char *what)
{
	const lsm_hierarchy_stats *h = &dst->hierarchy;
	uint64_t	nfiles = harness_files_from(dst, 0);
	int			used = strategy;
	bool		unfiltered_field = h->value_filter_bits == 0 ||
		h->value_filter_hashes == 0 ||
		(field < 64 && ((c->unindexed >> field) & 1));

	if (strategy <= 0)
	{
		/* AUTO: the handle's default, or a concrete choice of the engine */
		if (c->dflt != LSM_SEARCH_AUTO)
			CHECK_CTR(st->strategy == c->dflt ||
					  (unfiltered_field && st->strategy == LSM_SEARCH_SCAN));
		else if (unfiltered_field)
			CHECK_CTR(st->strategy == LSM_SEARCH_SCAN);
		else if (h->flat_bytes > 0)	/* the handle holds a flat layout */
			CHECK_CTR(st->strategy == LSM_SEARCH_FLAT);
		else
			CHECK_CTR(st->strategy == LSM_SEARCH_TREE ||
					  st->strategy == LSM_SEARCH_FLAT);
		used = st->strategy;
	}
	else
	{
		/* a field no filter covers may be reported as scanned */
		CHECK_CTR(st->strategy == strategy ||
				  (unfiltered_field && st->strategy == LSM_SEARCH_SCAN));
		used = st->strategy;
	}
	CHECK_CTR(st->rows_returned == n);
	CHECK_CTR(st->sstables_false <= st->sstables_scanned);
	CHECK_CTR(st->leaves_positive <= st->leaves_probed);
	CHECK_CTR(st->rows_rejected <= st->rows_validated);
	/* every table row that matches is validated: returned or rejected */
	CHECK_CTR(st->rows_validated - st->rows_rejected <= n);
	if (dst->memtable_entries == 0)
		CHECK_CTR(st->rows_validated - st->rows_rejected == n);
	CHECK_CTR(st->memtable_scanned <= 1);
	CHECK_CTR(st->sstables_scanned <= nfiles);
	CHECK_CTR(st->leaves_probed <= nfiles);
	CHECK_CTR(st->sstables_unfiltered <= nfiles);
	CHECK_CTR(st->sstables_unfiltered <= st->sstables_scanned ||
			  used == LSM_SEARCH_SCAN);
	if (n > 0)
		CHECK_CTR(st->sstables_scanned > 0 || st->memtable_scanned > 0);
	if (h->value_filter_bits == 0)
		CHECK_CTR(st->leaves_probed == 0 && st->nodes_visited == 0 &&
				  st->flat_words == 0);
	switch (used)
	{
		case LSM_SEARCH_SCAN:
			CHECK_CTR(st->leaves_probed == 0);
			CHECK_CTR(st->nodes_visited == 0);
			CHECK_CTR(st->flat_words == 0);
			CHECK_CTR(st->sstables_scanned == nfiles);
			break;
		case LSM_SEARCH_LEAVES:
			CHECK_CTR(st->nodes_visited == 0);
			CHECK_CTR(st->flat_words == 0);
			if (!unfiltered_field)
			{
				CHECK_CTR(st->leaves_probed >= h->leaves);
				CHECK_CTR(st->sstables_scanned <=
						  st->leaves_positive + st->sstables_unfiltered);
			}
			break;
		case LSM_SEARCH_TREE:
			CHECK_CTR(st->flat_words == 0);
			CHECK_CTR(st->nodes_visited <= h->internal - h->saturated);
			if (!unfiltered_field)
			{
				/* the topmost stored nodes are always probed */
				if (h->internal > h->saturated && !c->damaged)
					CHECK_CTR(st->nodes_visited > 0);
				CHECK_CTR(st->sstables_scanned <=
						  st->leaves_positive + st->sstables_unfiltered);
			}
			break;
		case LSM_SEARCH_FLAT:
			CHECK_CTR(st->nodes_visited == 0);
			if (!unfiltered_field && h->leaves > 0 &&
				h->value_filter_hashes > 0)
			{
				/* 1 to k words of each group of 64 leaves that has one */
				CHECK_CTR(st->flat_words >= (h->leaves + 63) / 64);
				CHECK_CTR(st->flat_words <=
						  (uint64_t) h->value_filter_hashes * h->leaves);
			}
			break;
		default:
			CHECK_CTR(!"unknown strategy");
	}
	if (unfiltered_field && nfiles > 0 && used != LSM_SEARCH_SCAN)
		CHECK_CTR(st->sstables_unfiltered > 0);
}

/* The estimate must foresee what the search did. */
static void
check_estimate(const lsm_search_stats *est, const lsm_search_stats *st,
			   const char *what)
{
	char		es[512];

	snprintf(es, sizeof(es), "%s", stats_str(est));
	if (est->strategy != st->strategy ||
		est->nodes_visited != st->nodes_visited ||
		est->leaves_probed != st->leaves_probed ||
		est->leaves_positive != st->leaves_positive ||
		est->flat_words != st->flat_words ||
		est->sstables_unfiltered != st->sstables_unfiltered ||
		est->sstables_scanned != st->sstables_scanned ||
		est->blocks_scanned != st->blocks_scanned)
		harness_fail(__FILE__, __LINE__, "%s: the estimate (%s) disagrees with "
					 "the search (%s)", what, es, stats_str(st));
}

/*
 * One search with strategy (-1: lsm_value_search): rows checked against
 * c->m, counters against the store, the estimate against the counters.
 * Returns the number of rows; *out (if not NULL) gets the counters.
 */
static size_t
search_one(const sctx *c, int field, const void *val, size_t vlen,
		   int strategy, lsm_search_stats *out)
{
	lsm_stats	dst;
	lsm_search_stats st,
				est;
	lsm_iter   *it;
	drain		d;
	char		what[400],
				hv[100];
	size_t		n;
	int			rc;

	snprintf(what, sizeof(what), "%s: %s field %d = %s (%zu bytes)",
			 c->where, strategy_name(strategy), field,
			 harness_hex(val, vlen, hv), vlen);
	CHECK_DB_OK(c->db, lsm_get_stats(c->db, &dst));
	memset(&est, 0, sizeof(est));
	if (c->estimate)
	{
		rc = lsm_value_search_estimate(c->db, field, val, vlen,
									   strategy < 0 ? LSM_SEARCH_AUTO : strategy,
									   &est);
		if (rc != LSM_OK)
			harness_fail(__FILE__, __LINE__, "%s: estimate returned %d (%s): %s",
						 what, rc, lsm_strerror(rc), lsm_errmsg(c->db));
	}
	if (strategy < 0)
		rc = lsm_value_search(c->db, field, val, vlen, &it);
	else
		rc = lsm_value_search_with(c->db, field, val, vlen, strategy, &it);
	if (rc != LSM_OK)
		harness_fail(__FILE__, __LINE__, "%s: returned %d (%s): %s", what, rc,
					 lsm_strerror(rc), lsm_errmsg(c->db));
	drain_init(&d, c->m);
	n = drain_finish(it, c->m, field, val, vlen, &d, what);
	memset(&st, 0, sizeof(st));
	CHECK_DB_OK(c->db, lsm_iter_search_stats(it, &st));
	lsm_iter_close(it);
	check_counters(c, &st, strategy, field, n, &dst, what);
	if (c->estimate)
		check_estimate(&est, &st, what);
	if (out)
		*out = st;
	return n;
}

/*
 * The same search with every strategy and plain lsm_value_search; all must
 * return the model's rows.  Returns the number of rows.
 */
static size_t
search_all(const sctx *c, int field, const void *val, size_t vlen)
{
	lsm_search_stats st[NSTRAT];
	size_t		n = 0;
	int			s;

	for (s = 0; s < NSTRAT; s++)
		n = search_one(c, field, val, vlen, all_strategies[s], &st[s]);

	/*
	 * TREE, FLAT and LEAVES (entries 0..2) all end up reading exactly the
	 * tables whose own value filter matches, and the same blocks of them.
	 */
	if (st[0].strategy == LSM_SEARCH_TREE && st[1].strategy == LSM_SEARCH_FLAT &&
		st[2].strategy == LSM_SEARCH_LEAVES)
		for (s = 0; s < 2; s++)
			if (st[s].leaves_positive != st[2].leaves_positive ||
				st[s].sstables_scanned != st[2].sstables_scanned ||
				st[s].sstables_false != st[2].sstables_false ||
				st[s].blocks_scanned != st[2].blocks_scanned)
			{
				char		hv[100],
							other[512];

				snprintf(other, sizeof(other), "%s", stats_str(&st[s]));
				harness_fail(__FILE__, __LINE__, "%s: field %d = %s: %s read other "
							 "tables than LEAVES (%s vs %s)", c->where, field,
							 harness_hex(val, vlen, hv),
							 strategy_name(all_strategies[s]), other,
							 stats_str(&st[2]));
			}
	return n;
}

/* lsm_claim_fn of participants in one process: a shared counter. */
static uint32_t
claim_next(void *arg)
{
	return (*(uint32_t *) arg)++;
}

/*
 * The search for field = val over view (the handle's snapshot, shared),
 * split among nparts participants that take turns (a few rows each, in
 * an order seed picks) and claim units from one counter: together they
 * must return the model's rows, each once, and read the blocks a serial
 * search of the same strategy reads.  Returns the number of rows.
 */
static size_t
search_split(const sctx *c, const void *view, size_t len, int field,
			 const void *val, size_t vlen, int strategy, int nparts,
			 uint64_t seed)
{
	lsm_iter   *it[4];
	lsm_search_stats st,
				sum,
				serial;
	uint32_t	next = 0;
	drain		d;
	char		what[400],
				hv[100];
	size_t		n;
	int			live = nparts,
				i;

	CHECK(nparts >= 1 && nparts <= 4);
	snprintf(what, sizeof(what), "%s: %s split %d ways, field %d = %s",
			 c->where, strategy_name(strategy), nparts, field,
			 harness_hex(val, vlen, hv));
	drain_init(&d, c->m);
	for (i = 0; i < nparts; i++)
		if (lsm_value_search_view(c->db, view, len, field, val, vlen, strategy,
								  claim_next, &next, &it[i]) != LSM_OK)
			harness_fail(__FILE__, __LINE__, "%s: %s", what, lsm_errmsg(c->db));
	while (live > 0)
	{
		int			k = (int) (harness_rand64(&seed) % (uint64_t) nparts),
					rows = 1 + (int) (harness_rand64(&seed) % 5);

		while (rows-- > 0 && lsm_iter_valid(it[k]))
			take_row(it[k], c->m, field, val, vlen, &d, what);
		live = 0;
		for (i = 0; i < nparts; i++)
			live += lsm_iter_valid(it[i]);
	}
	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < nparts; i++)
	{
		if (lsm_iter_status(it[i]) != LSM_OK)
			harness_fail(__FILE__, __LINE__, "%s: participant %d: %s", what, i,
						 lsm_errmsg(c->db));
		CHECK_DB_OK(c->db, lsm_iter_search_stats(it[i], &st));
		sum.blocks_scanned += st.blocks_scanned;
		sum.rows_returned += st.rows_returned;
		sum.memtable_scanned += st.memtable_scanned;
		lsm_iter_close(it[i]);
	}
	/* drain_finish checks that no matching row was missed */
	CHECK_DB_OK(c->db, lsm_value_search_view(c->db, view, len, field, val,
											 vlen, strategy, claim_next,
											 &next, &it[0]));
	CHECK(!lsm_iter_valid(it[0]));	/* every unit is taken */
	n = drain_finish(it[0], c->m, field, val, vlen, &d, what);
	lsm_iter_close(it[0]);

	/* the serial search of the same snapshot reads the same blocks */
	CHECK_DB_OK(c->db, lsm_value_search_with(c->db, field, val, vlen,
											 strategy == LSM_SEARCH_FLAT ?
											 LSM_SEARCH_TREE : strategy, &it[0]));
	while (lsm_iter_valid(it[0]))
		lsm_iter_next(it[0]);
	CHECK_DB_OK(c->db, lsm_iter_search_stats(it[0], &serial));
	lsm_iter_close(it[0]);
	if (sum.blocks_scanned != serial.blocks_scanned ||
		sum.rows_returned != n || serial.rows_returned != n)
		harness_fail(__FILE__, __LINE__, "%s: blocks %" PRIu64 " rows %" PRIu64
					 " (%zu); serial blocks %" PRIu64 " rows %" PRIu64, what,
					 sum.blocks_scanned, sum.rows_returned, n,
					 serial.blocks_scanned, serial.rows_returned);
	return n;
}

/* search_all for a NUL-terminated value; checks the expected row count. */
static void
search_str(const sctx *c, int field, const char *val, size_t want)
{
	size_t		n = search_all(c, field, val, strlen(val));

	if (n != want)
		harness_fail(__FILE__, __LINE__, "%s: field %d = \"%s\": %zu rows, "
					 "expected %zu", c->where, field, val, n, want);
}

/* ---------------------------------------------------------------------- */
/* The hierarchy's shape. */

/* m as the store rounds it. */
static uint64_t
rounded_m(uint32_t m)
{
	return ((uint64_t) m + 511) / 512 * 512;
}

/*
 * The shape lsm_get_stats reports must be that of a tree of order d over
 * the leaf tables; node_bytes is checked unless a node file is damaged.
 */
static void
check_shape(const lsm_stats *st, const lsm_options *o, bool damaged,
			const char *where)
{
	const lsm_hierarchy_stats *h = &st->hierarchy;
	uint64_t	m = rounded_m(o->value_filter_bits);
	uint64_t	d = o->hierarchy_order < 2 ? 2 : (uint64_t) o->hierarchy_order;
	uint64_t	lo = 2,
				hi = 2 * d;
	int			i;

	if (h->value_filter_bits != m ||
		(m > 0 && h->value_filter_hashes != o->value_filter_hashes) ||
		(o->hierarchy_order >= 2 && h->hierarchy_order != o->hierarchy_order))
		harness_fail(__FILE__, __LINE__, "%s: hierarchy m %" PRIu64 " k %d d %d, "
					 "expected m %" PRIu64 " k %d d %d", where,
					 h->value_filter_bits, h->value_filter_hashes,
					 h->hierarchy_order, m, o->value_filter_hashes,
					 o->hierarchy_order);
	if (h->leaves > harness_files_from(st, 1))
		harness_fail(__FILE__, __LINE__, "%s: %" PRIu64 " leaves but %" PRIu64
					 " tables in levels >= 1", where, h->leaves,
					 harness_files_from(st, 1));
	if (m == 0 && (h->leaves || h->internal || h->height || h->node_bytes))
		harness_fail(__FILE__, __LINE__, "%s: a hierarchy without value filters",
					 where);
	if (h->leaves <= 1)
	{
		if (h->internal != 0 || h->height != 0)
			harness_fail(__FILE__, __LINE__, "%s: %" PRIu64 " leaves, %" PRIu64
						 " internal nodes, height %d", where, h->leaves,
						 h->internal, h->height);
	}
	else
	{
		if (h->height < 1 || h->internal < 1 || h->internal > h->leaves - 1)
			harness_fail(__FILE__, __LINE__, "%s: %" PRIu64 " leaves, %" PRIu64
						 " internal nodes, height %d", where, h->leaves,
						 h->internal, h->height);
		/* root 2..2d children, other internal nodes d..2d */
		for (i = 1; i < h->height && hi < UINT64_C(1) << 40; i++)
		{
			lo *= d;
			hi *= 2 * d;
		}
		if (h->leaves < lo || h->leaves > hi)
			harness_fail(__FILE__, __LINE__, "%s: %" PRIu64 " leaves under a tree "
						 "of height %d and order %" PRIu64 " (possible: %" PRIu64
						 "..%" PRIu64 ")", where, h->leaves, h->height, d, lo, hi);
	}
	if (h->saturated > h->internal)
		harness_fail(__FILE__, __LINE__, "%s: %" PRIu64 " saturated of %" PRIu64
					 " internal nodes", where, h->saturated, h->internal);
	if (!damaged && h->node_bytes != (h->internal - h->saturated) * (m / 8 + 12))
		harness_fail(__FILE__, __LINE__, "%s: node_bytes %" PRIu64 " for %" PRIu64
					 " stored nodes of %" PRIu64 " bytes", where, h->node_bytes,
					 h->internal - h->saturated, m / 8 + 12);
}

/* ---------------------------------------------------------------------- */
/* Options and files. */

/* Small stores: many tables over several levels. */
static lsm_options
small_options(uint32_t m, int k, int d, int l0)
{
	lsm_options o;

	lsm_options_init(&o);
	o.memtable_bytes = 16 << 10;
	o.file_bytes = 8 << 10;
	o.block_bytes = 512;
	o.level_ratio = 2;
	o.key_bits_per_key = 10;
	o.value_filter_bits = m;
	o.value_filter_hashes = k;
	o.hierarchy_order = d;
	o.l0_compaction_trigger = l0;
	o.lock_timeout_ms = 30000;
	return o;
}

/* lsm_get_stats, which must succeed. */
static void
get_stats(lsm_db *db, lsm_stats *st)
{
	CHECK_DB_OK(db, lsm_get_stats(db, st));
}

/* Numbers of the dir's files with extension ext, ascending (caller frees). */
static uint64_t *
list_files(const char *dir, const char *ext, int *n)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	uint64_t   *a = NULL;
	int			cap = 0,
				i,
				j;

	*n = 0;
	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
	{
		unsigned long long num;
		char		e[8];
		char		tail;

		if (sscanf(de->d_name, "%llu.%7[a-z]%c", &num, e, &tail) != 2 ||
			strcmp(e, ext) != 0)
			continue;
		if (*n == cap)
		{
			cap = cap * 2 + 16;
			a = realloc(a, sizeof(uint64_t) * cap);
			CHECK(a != NULL);
		}
		a[(*n)++] = num;
	}
	closedir(d);
	for (i = 1; i < *n; i++)
		for (j = i; j > 0 && a[j - 1] > a[j]; j--)
		{
			uint64_t	t = a[j];

			a[j] = a[j - 1];
			a[j - 1] = t;
		}
	return a;
}

/* Flips every bit of the byte in the middle of file dir/NNNNNN.ext. */
static void
flip_middle(const char *dir, uint64_t number, const char *ext)
{
	char		name[64];
	char	   *path;
	struct stat sb;
	uint8_t		byte;
	int			fd;

	snprintf(name, sizeof(name), "%06llu.%s", (unsigned long long) number, ext);
	path = harness_path(dir, name);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK(fstat(fd, &sb) == 0);
	CHECK(sb.st_size > 2);
	CHECK(pread(fd, &byte, 1, sb.st_size / 2) == 1);
	byte ^= 0xff;
	CHECK(pwrite(fd, &byte, 1, sb.st_size / 2) == 1);
	CHECK(close(fd) == 0);
	free(path);
}

/* ---------------------------------------------------------------------- */
/* The randomized model test. */

/* Field 0's domain (an empty value and near-duplicates included). */
static const char *const d0[] = {"red", "green", "blue", "", "\xff\x00", "cyan",
"red\0"};
static const size_t d0_len[] = {3, 5, 4, 0, 2, 4, 4};

#define ND0 ((int) (sizeof(d0_len) / sizeof(d0_len[0])))
#define ND1 22					/* "0".."19", "", "\0" */
#define ND2 40					/* "p00-padding...".."p39-padding..." */
#define MAX_VAL 64

/* One case's parameters. */
typedef struct vcase
{
	const char *name;
	uint64_t	seed_mix;		/* xored into harness_seed() */
	int			ops;
	int			nkeys;
	int			check_every;	/* operations between checkpoints */
	int			queries;		/* per checkpoint */
	int			filler_pct;		/* rows whose field 2 is random bytes */
	int			want_height;	/* the tree must have reached this height */
	int			want_saturated; /* ... and this many saturated nodes */
	lsm_options opt;
} vcase;

/* A running case. */
typedef struct vstate
{
	const vcase *c;
	uint64_t	rng;
	uint64_t	seed;
	char	   *dir;
	lsm_options opt;
	lsm_db	   *db;
	model		m;
	int			op;
	char		where[200];

	/* a value search held open across operations */
	lsm_iter   *held;
	model		held_m;
	drain		held_d;
	int			held_field;
	uint8_t		held_val[MAX_VAL];
	size_t		held_vlen;

	/* what the run covered */
	long		n_put,
				n_del,
				n_batch,
				n_flush,
				n_compact,
				n_reopen,
				n_search,
				n_hits,
				n_held,
				n_split;
	uint64_t	max_files,
				max_leaves,
				max_saturated;
	int			max_levels,
				max_height;
} vstate;

/* Uniform in [0, n). */
static uint64_t
rnd(vstate *s, uint64_t n)
{
	return harness_rand64(&s->rng) % n;
}

/* Describes the running operation for messages. */
static void
set_where(vstate *s)
{
	snprintf(s->where, sizeof(s->where), "case %s seed %" PRIu64 " op %d",
			 s->c->name, s->seed, s->op);
}

/*
 * A value of field f from its domain into buf (MAX_VAL bytes); returns its
 * length.  Field 2 is sometimes random bytes; fields >= 3 are "x".
 */
static size_t
domain_value(vstate *s, int f, uint8_t *buf, bool filler)
{
	int			k;

	switch (f)
	{
		case 0:
			k = (int) rnd(s, ND0);
			memcpy(buf, d0[k], d0_len[k]);
			return d0_len[k];
		case 1:
			k = (int) rnd(s, ND1);
			if (k == 20)
				return 0;
			if (k == 21)
			{
				buf[0] = 0;
				return 1;
			}
			return (size_t) snprintf((char *) buf, MAX_VAL, "%d", k);
		case 2:
			if (filler)
			{
				size_t		n = 1 + rnd(s, 60),
							j;

				for (j = 0; j < n; j++)
					buf[j] = (uint8_t) rnd(s, 256);
				return n;
			}
			/* long, so that a store spans many tables */
			return (size_t) snprintf((char *) buf, MAX_VAL,
									 "p%02d-padding-padding-padding-padding",
									 (int) rnd(s, ND2));
		default:
			buf[0] = 'x';
			return 1;
	}
}

/*
 * A random value: usually a row of 3 or 2 fields (sometimes 1) from small
 * domains, fields sometimes null; rarely an empty value or a few random
 * bytes (no valid row, or a row by accident).  Returns a malloc'ed buffer.
 */
static uint8_t *
random_value(vstate *s, size_t *len)
{
	uint8_t		buf[3][MAX_VAL];
	lsm_field	f[3];
	int			r = (int) rnd(s, 100),
				nf,
				i;

	if (r == 0)
	{
		*len = 0;
		return harness_dup_bytes("", 0);
	}
	if (r == 1)
	{
		size_t		n = 1 + rnd(s, 6),
					j;

		for (j = 0; j < n; j++)
			buf[0][j] = (uint8_t) rnd(s, 256);
		*len = n;
		return harness_dup_bytes(buf[0], n);
	}
	r = (int) rnd(s, 20);
	nf = r == 0 ? 1 : r < 6 ? 2 : 3;
	memset(f, 0, sizeof(f));
	for (i = 0; i < nf; i++)
	{
		if (rnd(s, 10) == 0)
		{
			f[i].is_null = 1;
			continue;
		}
		f[i].data = buf[i];
		f[i].len = domain_value(s, i, buf[i],
								(int) rnd(s, 100) < s->c->filler_pct);
	}
	return make_row(f, nf, len);
}

/* A random value for key i that differs from its current one. */
static uint8_t *
new_value(vstate *s, int i, size_t *len)
{
	for (;;)
	{
		uint8_t    *v = random_value(s, len);

		if (s->m.val[i] == NULL || *len != s->m.vlen[i] ||
			(*len > 0 && memcmp(v, s->m.val[i], *len) != 0))
			return v;
		free(v);
	}
}

/* A key index: mostly one that is live (when there are some). */
static int
pick_key(vstate *s, bool live)
{
	int			i = (int) rnd(s, s->m.nkeys),
				tries;

	for (tries = 0; live && tries < 20 && s->m.val[i] == NULL; tries++)
		i = (int) rnd(s, s->m.nkeys);
	return i;
}

/* A random query: field and value (present, from the domain, empty, absent). */
static void
pick_query(vstate *s, int *field, uint8_t *buf, size_t *len)
{
	int			r = (int) rnd(s, 10),
				tries;

	*field = rnd(s, 10) == 0 ? 3 + (int) rnd(s, 2) : (int) rnd(s, 3);
	if (r < 5)
	{
		/* the field of a live row */
		for (tries = 0; tries < 30; tries++)
		{
			int			i = pick_key(s, true);
			lsm_field	f;

			if (s->m.val[i] &&
				lsm_row_field(s->m.val[i], s->m.vlen[i], *field, &f) == LSM_OK &&
				!f.is_null && f.len <= MAX_VAL)
			{
				if (f.len > 0)
					memcpy(buf, f.data, f.len);
				*len = f.len;
				return;
			}
		}
	}
	if (r < 8)
		*len = domain_value(s, *field, buf, false);
	else if (r == 8)
		*len = 0;
	else
	{
		static const char *const absent[] = {"absent", "re", "red\0x", "p99",
		"20"};
		int			k = (int) rnd(s, 5);
		size_t		n = k == 2 ? 5 : strlen(absent[k]);

		memcpy(buf, absent[k], n);
		*len = n;
	}
}

/* Checks and closes the held search against the model of its opening. */
static void
finish_held(vstate *s)
{
	char		what[300];
	lsm_search_stats st;
	size_t		n;

	if (s->held == NULL)
		return;
	snprintf(what, sizeof(what), "%s: held search on field %d (opened earlier)",
			 s->where, s->held_field);
	n = drain_finish(s->held, &s->held_m, s->held_field, s->held_val,
					 s->held_vlen, &s->held_d, what);
	CHECK_DB_OK(s->db, lsm_iter_search_stats(s->held, &st));
	if (st.rows_returned != n)
		harness_fail(__FILE__, __LINE__, "%s: rows_returned %" PRIu64 ", %zu rows",
					 what, st.rows_returned, n);
	lsm_iter_close(s->held);
	s->held = NULL;
	model_free(&s->held_m);
	s->n_held++;
}

/* Opens a value search to be read later, checked against today's model. */
static void
open_held(vstate *s)
{
	char		what[300];
	int			strategy = all_strategies[rnd(s, NSTRAT - 1)];
	int			i,
				k;

	pick_query(s, &s->held_field, s->held_val, &s->held_vlen);
	CHECK_DB_OK(s->db, lsm_value_search_with(s->db, s->held_field, s->held_val,
											 s->held_vlen, strategy, &s->held));
	model_copy(&s->held_m, &s->m);
	drain_init(&s->held_d, &s->held_m);
	/* read a row or two now, the rest later */
	snprintf(what, sizeof(what), "%s: held %s search on field %d (first rows)",
			 s->where, strategy_name(strategy), s->held_field);
	k = (int) rnd(s, 3);
	for (i = 0; i < k && lsm_iter_valid(s->held); i++)
		take_row(s->held, &s->held_m, s->held_field, s->held_val,
				 s->held_vlen, &s->held_d, what);
}

/* Closes and reopens the store (with another default strategy). */
static void
reopen(vstate *s)
{
	finish_held(s);
	CHECK_DB_OK(s->db, lsm_close(s->db));
	s->db = NULL;
	/* the default strategy belongs to the handle, not the store */
	s->opt.value_search = (int) rnd(s, 5);
	CHECK_OK(lsm_open(s->dir, &s->opt, &s->db));
	s->n_reopen++;
}

/* Searches, verification and the shape of the hierarchy. */
static void
checkpoint(vstate *s)
{
	lsm_stats	st;
	sctx		c;
	void	   *view;
	size_t		vlen_view;
	int			q,
				l;

	set_where(s);
	finish_held(s);
	CHECK_DB_OK(s->db, lsm_verify(s->db));
	get_stats(s->db, &st);
	check_shape(&st, &s->opt, false, s->where);
	if (harness_files_from(&st, 0) > s->max_files)
		s->max_files = harness_files_from(&st, 0);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		if (st.level[l].files > 0 && l + 1 > s->max_levels)
			s->max_levels = l + 1;
	if (st.hierarchy.height > s->max_height)
		s->max_height = st.hierarchy.height;
	if (st.hierarchy.leaves > s->max_leaves)
		s->max_leaves = st.hierarchy.leaves;
	if (st.hierarchy.saturated > s->max_saturated)
		s->max_saturated = st.hierarchy.saturated;

	memset(&c, 0, sizeof(c));
	c.db = s->db;
	c.m = &s->m;
	c.where = s->where;
	c.dflt = s->opt.value_search;
	c.unindexed = s->c->opt.value_unindexed;
	c.estimate = 1;
	/* the snapshot the searches read, shared: searches split among readers */
	if (lsm_share(s->db, 4, &view, &vlen_view) != LSM_OK)
		harness_fail(__FILE__, __LINE__, "%s: lsm_share: %s", s->where,
					 lsm_errmsg(s->db));
	for (q = 0; q < s->c->queries; q++)
	{
		uint8_t		val[MAX_VAL];
		size_t		vlen;
		int			field;

		pick_query(s, &field, val, &vlen);
		s->n_hits += (long) search_all(&c, field, val, vlen);
		s->n_search += NSTRAT;
		search_split(&c, view, vlen_view, field, val, vlen,
					 all_strategies[rnd(s, NSTRAT - 1)], 1 + (int) rnd(s, 4),
					 s->rng);
		s->n_split++;
	}
	lsm_unshare(s->db);
	lsm_free(view);

	/* the flat layout, once built, holds every leaf */
	search_one(&c, 0, "red", 3, LSM_SEARCH_FLAT, NULL);
	get_stats(s->db, &st);
	if (st.hierarchy.leaves > 0 &&
		st.hierarchy.flat_bytes < (st.hierarchy.leaves + 63) / 64 *
		st.hierarchy.value_filter_bits * 8)
		harness_fail(__FILE__, __LINE__, "%s: flat_bytes %" PRIu64 " for %" PRIu64
					 " leaves of %" PRIu64 " bits", s->where,
					 st.hierarchy.flat_bytes, st.hierarchy.leaves,
					 st.hierarchy.value_filter_bits);
	if (rnd(s, 3) == 0)
		open_held(s);
}

/* Applies a batch of 2..10 random puts and deletes (keys may repeat). */
static void
random_batch(vstate *s)
{
	lsm_batch  *b = lsm_batch_new();
	int			n = 2 + (int) rnd(s, 9),
				j;

	CHECK(b != NULL);
	for (j = 0; j < n; j++)
	{
		int			i = pick_key(s, rnd(s, 2) == 0);
		char		key[16];

		key_of(i, key);
		if (rnd(s, 4) == 0)
		{
			CHECK_OK(lsm_batch_delete(b, key, KEY_LEN));
			model_del(&s->m, i);
		}
		else
		{
			size_t		len;
			uint8_t    *v = new_value(s, i, &len);

			CHECK_OK(lsm_batch_put(b, key, KEY_LEN, v, len));
			model_set(&s->m, i, v, len);
			free(v);
		}
	}
	CHECK_DB_OK(s->db, lsm_write(s->db, b));
	lsm_batch_free(b);
	s->n_batch++;
}

/*
 * Runs one randomized case: operations with checkpoints, then the final
 * state as is, compacted and reopened; checks that the case reached the
 * shape it is meant to exercise.
 */
static void
run_case(const vcase *c)
{
	vstate		s;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.seed = harness_seed() ^ c->seed_mix;
	s.rng = s.seed;
	s.dir = harness_tmpdir("value");
	s.opt = c->opt;
	model_init(&s.m, c->nkeys);
	CHECK_OK(lsm_open(s.dir, &s.opt, &s.db));

	for (s.op = 0; s.op < c->ops; s.op++)
	{
		int			r = (int) rnd(&s, 1000);

		set_where(&s);
		if (r < 550)
		{
			/* a put: a fresh key or an overwrite with another row */
			int			k = pick_key(&s, rnd(&s, 4) == 0);
			size_t		len;
			uint8_t    *v = new_value(&s, k, &len);

			put_row(s.db, &s.m, k, v, len);
			s.n_put++;
		}
		else if (r < 750)
		{
			/* a live row changes its field 0 or 1: the value moves */
			int			k = pick_key(&s, true);
			uint8_t		buf[3][MAX_VAL];
			lsm_field	f[3];
			int			nf = 0,
						j;
			uint8_t    *v;
			size_t		len;

			if (s.m.val[k] != NULL)
				nf = lsm_row_nfields(s.m.val[k], s.m.vlen[k]);
			if (nf < 2 || nf > 3)
			{
				v = new_value(&s, k, &len);
				put_row(s.db, &s.m, k, v, len);
				s.n_put++;
				continue;
			}
			for (j = 0; j < nf; j++)
			{
				CHECK_OK(lsm_row_field(s.m.val[k], s.m.vlen[k], j, &f[j]));
				if (!f[j].is_null && f[j].len > 0)
				{
					memcpy(buf[j], f[j].data, f[j].len);
					f[j].data = buf[j];
				}
			}
			j = (int) rnd(&s, 2);
			f[j].is_null = 0;
			f[j].data = buf[j];
			f[j].len = domain_value(&s, j, buf[j], false);
			v = make_row(f, nf, &len);
			put_row(s.db, &s.m, k, v, len);
			s.n_put++;
		}
		else if (r < 810)
		{
			/* a live key, sometimes one that may be absent */
			del_row(s.db, &s.m, pick_key(&s, rnd(&s, 4) != 0));
			s.n_del++;
		}
		else if (r < 930)
			random_batch(&s);
		else if (r < 942)
		{
			CHECK_DB_OK(s.db, lsm_flush(s.db));
			s.n_flush++;
		}
		else if (r < 950)
		{
			CHECK_DB_OK(s.db, lsm_compact(s.db));
			s.n_compact++;
		}
		else if (r < 953)
		{
			CHECK_DB_OK(s.db, lsm_compact_all(s.db));
			s.n_compact++;
		}
		else if (r < 956)
			reopen(&s);
		else
		{
			/* a put of a fresh-looking row to a random key */
			int			k = pick_key(&s, false);
			size_t		len;
			uint8_t    *v = new_value(&s, k, &len);

			put_row(s.db, &s.m, k, v, len);
			s.n_put++;
		}
		if ((s.op + 1) % c->check_every == 0)
			checkpoint(&s);
	}
	/* the final state: as is, compacted, reopened */
	checkpoint(&s);
	CHECK_DB_OK(s.db, lsm_compact_all(s.db));
	checkpoint(&s);
	reopen(&s);
	checkpoint(&s);
	finish_held(&s);

	printf("# case %s: puts %ld, deletes %ld, batches %ld, flushes %ld, "
		   "compactions %ld, reopens %ld, searches %ld (%ld rows), split %ld, "
		   "held %ld; "
		   "up to %" PRIu64 " files in %d levels, %" PRIu64 " leaves, height %d, "
		   "%" PRIu64 " saturated\n",
		   c->name, s.n_put, s.n_del, s.n_batch, s.n_flush, s.n_compact,
		   s.n_reopen, s.n_search, s.n_hits, s.n_split, s.n_held, s.max_files,
		   s.max_levels, s.max_leaves, s.max_height, s.max_saturated);
	/* the case must have covered what it is for */
	CHECK_GE(s.max_files, 8);
	CHECK_GE(s.max_levels, 3);
	CHECK_GE(s.max_height, c->want_height);
	CHECK_GE(s.max_saturated, c->want_saturated);
	CHECK_DB_OK(s.db, lsm_close(s.db));
	model_free(&s.m);
}

/* Two lsm_stats describe value filter hierarchies of the same shape. */
#define CHECK_SAME_SHAPE(a, b) \
	do { \
		CHECK_EQ((a).hierarchy.height, (b).hierarchy.height); \
		CHECK_EQ_U((a).hierarchy.leaves, (b).hierarchy.leaves); \
		CHECK_EQ_U((a).hierarchy.internal, (b).hierarchy.internal); \
		CHECK_EQ_U((a).hierarchy.node_bytes, (b).hierarchy.node_bytes); \
	} while (0)

/*
 * Order 2, 4096-bit filters, a few rows with random bytes in field 2, an
 * L0 trigger of 2.
 */
TEST(value_model_order2)
{
	vcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "order2";
	c.seed_mix = 0x11;
	c.ops = 12000;
	c.nkeys = 6000;
	c.check_every = 600;
	c.queries = 5;
	c.filler_pct = 10;
	c.want_height = 2;
	c.opt = small_options(4096, 3, 2, 2);
	run_case(&c);
}

/* Order 3, 8192-bit filters, L0 trigger 4, TREE as the handle's default. */
TEST(value_model_order3)
{
	vcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "order3";
	c.seed_mix = 0x22;
	c.ops = 12000;
	c.nkeys = 7000;
	c.check_every = 600;
	c.queries = 5;
	c.filler_pct = 0;
	c.want_height = 2;
	c.opt = small_options(8192, 3, 3, 4);
	c.opt.value_search = LSM_SEARCH_TREE;
	run_case(&c);
}

/*
 * 512-bit filters (one line) full of random field-2 values: internal nodes
 * saturate (and are not stored).
 */
TEST(value_model_saturated)
{
	vcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "saturated";
	c.seed_mix = 0x33;
	c.ops = 9000;
	c.nkeys = 5000;
	c.check_every = 600;
	c.queries = 5;
	c.filler_pct = 90;
	c.want_height = 2;
	c.want_saturated = 1;
	c.opt = small_options(512, 3, 2, 3);
	run_case(&c);
}

/*
 * One hash, order 0 (taken as 2), fields 1 and 2 not indexed, FLAT as the
 * handle's default.
 */
TEST(value_model_unindexed_k1)
{
	vcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "unindexed_k1";
	c.seed_mix = 0x44;
	c.ops = 9000;
	c.nkeys = 5000;
	c.check_every = 600;
	c.queries = 5;
	c.filler_pct = 20;
	c.want_height = 2;
	c.opt = small_options(2048, 1, 0, 2);
	c.opt.value_unindexed = (1 << 1) | (1 << 2);
	c.opt.value_search = LSM_SEARCH_FLAT;
	run_case(&c);
}

/* No value filters at all. */
TEST(value_model_no_filters)
{
	vcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "no_filters";
	c.seed_mix = 0x55;
	c.ops = 6000;
	c.nkeys = 4000;
	c.check_every = 600;
	c.queries = 4;
	c.filler_pct = 10;
	c.want_height = 0;
	c.opt = small_options(0, 3, 2, 2);
	run_case(&c);
}

/* ---------------------------------------------------------------------- */
/* Deterministic situations. */

/* A search context over db and m with estimates checked. */
static sctx
ctx_of(lsm_db *db, const model *m, const lsm_options *o, const char *where)
{
	sctx		c;

	memset(&c, 0, sizeof(c));
	c.db = db;
	c.m = m;
	c.where = where;
	c.dflt = o->value_search;
	c.unindexed = o->value_unindexed;
	c.estimate = 1;
	return c;
}

/*
 * Newest versions only: rows in the memtable only; a row overwritten in a
 * newer table (or in the memtable) with another value is found by the new
 * value only; a deleted row (tombstone in a newer level or the memtable)
 * is not found; a value that goes A -> B -> A across flushes finds its key
 * once; null fields, missing fields and values that are not rows never
 * match; the cumulative counters of lsm_get_stats add up.
 */
TEST(newest_version_only)
{
	char	   *dir = harness_tmpdir("vnew");
	lsm_options o = small_options(1 << 14, 3, 2, 4);
	lsm_db	   *db;
	lsm_stats	st;
	lsm_search_stats ss;
	model		m;
	sctx		c;
	uint64_t	rows = 0,
				scanned = 0;
	int			i,
				s,
				searches = 0;

	o.auto_compact = 0;
	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 400);
	c = ctx_of(db, &m, &o, "newest_version_only");

	/* only in the memtable */
	put_text(db, &m, 0, 2, "red", "a", NULL);
	put_text(db, &m, 1, 2, "green", "a", NULL);
	put_text(db, &m, 2, 2, "red", "b", NULL);
	c.where = "memtable only";
	search_str(&c, 0, "red", 2);
	search_str(&c, 1, "a", 2);
	search_str(&c, 0, "blue", 0);
	search_one(&c, 0, "red", 3, LSM_SEARCH_TREE, &ss);
	CHECK_EQ_U(ss.memtable_scanned, 1);
	CHECK_EQ_U(ss.sstables_scanned, 0);

	/* overwritten in a newer table with another value */
	put_text(db, &m, 3, 2, "blue", "x", NULL);
	for (i = 100; i < 300; i++)
		put_text(db, &m, i, 3, "filler", "f", "padding padding");
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	CHECK_EQ(st.level[0].files, 0);
	CHECK_GT(harness_files_from(&st, 1), 0);
	put_text(db, &m, 3, 2, "cyan", "x", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	get_stats(db, &st);
	CHECK_EQ(st.level[0].files, 1);
	c.where = "overwritten in a newer table";
	search_str(&c, 0, "blue", 0);
	search_str(&c, 0, "cyan", 1);
	search_str(&c, 1, "x", 1);
	search_str(&c, 0, "red", 2);
	/* the old row was read and rejected */
	search_one(&c, 0, "blue", 4, LSM_SEARCH_TREE, &ss);
	CHECK_GE(ss.sstables_scanned, 1);
	CHECK_GE(ss.rows_rejected, 1);

	/* overwritten again in the memtable */
	put_text(db, &m, 3, 2, "magenta", "x", NULL);
	c.where = "overwritten in the memtable";
	search_str(&c, 0, "cyan", 0);
	search_str(&c, 0, "blue", 0);
	search_str(&c, 0, "magenta", 1);
	search_str(&c, 1, "x", 1);

	/* deleted: a tombstone in a newer level, then in the memtable */
	put_text(db, &m, 4, 2, "olive", "y", NULL);
	put_text(db, &m, 5, 2, "olive", "y", NULL);
	CHECK_DB_OK(db, lsm_compact_all(db));
	del_row(db, &m, 4);
	CHECK_DB_OK(db, lsm_flush(db));
	del_row(db, &m, 5);
	put_text(db, &m, 15, 2, "red", "y", NULL);
	del_row(db, &m, 15);		/* a memtable row, deleted in the memtable */
	del_row(db, &m, 0);			/* a table row, deleted in the memtable */
	c.where = "deleted";
	search_str(&c, 0, "olive", 0);
	search_str(&c, 1, "y", 0);
	search_str(&c, 0, "red", 1);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	search_str(&c, 0, "olive", 0);
	search_str(&c, 0, "red", 1);
	CHECK_DB_OK(db, lsm_compact_all(db));
	search_str(&c, 0, "olive", 0);

	/* A -> B -> A across flushes, then across levels */
	put_text(db, &m, 6, 2, "teal", "z", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	put_text(db, &m, 6, 2, "plum", "z", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	put_text(db, &m, 6, 2, "teal", "z", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	c.where = "A -> B -> A in level 0";
	search_str(&c, 0, "teal", 1);
	search_str(&c, 0, "plum", 0);
	search_str(&c, 1, "z", 1);
	put_text(db, &m, 7, 2, "teal", "w", NULL);
	CHECK_DB_OK(db, lsm_compact_all(db));
	put_text(db, &m, 7, 2, "plum", "w", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	put_text(db, &m, 7, 2, "teal", "w", NULL);
	c.where = "A -> B -> A across levels and the memtable";
	search_str(&c, 0, "teal", 2);
	search_str(&c, 0, "plum", 0);
	CHECK_DB_OK(db, lsm_flush(db));
	search_str(&c, 0, "teal", 2);
	CHECK_DB_OK(db, lsm_compact_all(db));
	search_str(&c, 0, "teal", 2);
	search_str(&c, 1, "w", 1);

	/* fields that become null or missing; values that are not rows */
	put_text(db, &m, 8, 3, "red", "q", "r");
	CHECK_DB_OK(db, lsm_flush(db));
	put_text(db, &m, 8, 1, "red", NULL, NULL);
	put_text(db, &m, 9, 2, NULL, "q", NULL);
	put_text(db, &m, 10, 2, "", "q", NULL);
	put_row(db, &m, 11, harness_dup_bytes("", 0), 0);
	put_row(db, &m, 12, harness_dup_bytes("\x05\x01", 2), 2);
	put_text(db, &m, 13, 0, NULL, NULL, NULL);
	c.where = "null, missing and malformed fields";
	search_str(&c, 1, "q", 2);
	search_str(&c, 2, "r", 0);
	search_str(&c, 0, "", 1);
	search_str(&c, 0, "red", 2);
	CHECK_DB_OK(db, lsm_flush(db));
	search_str(&c, 1, "q", 2);
	search_str(&c, 2, "r", 0);
	search_str(&c, 0, "", 1);
	CHECK_DB_OK(db, lsm_compact_all(db));
	search_str(&c, 1, "q", 2);
	search_str(&c, 0, "", 1);
	search_str(&c, 5, "", 0);
	CHECK_DB_OK(db, lsm_verify(db));

	/* the cumulative counters add up (estimates aside) */
	put_text(db, &m, 14, 2, "red", "q", NULL);
	c.estimate = 0;
	lsm_reset_counters(db);
	for (s = 0; s < NSTRAT; s++)
		for (i = 0; i < 3; i++)
		{
			static const char *const v[] = {"red", "q", "nothing"};

			search_one(&c, i < 2 ? i : 0, v[i], strlen(v[i]),
					   all_strategies[s], &ss);
			rows += ss.rows_returned;
			scanned += ss.sstables_scanned;
			searches++;
		}
	get_stats(db, &st);
	CHECK_EQ_U(st.value_searches, searches);
	CHECK_EQ_U(st.search.rows_returned, rows);
	CHECK_EQ_U(st.search.sstables_scanned, scanned);
	CHECK_EQ(st.search.strategy, 0);
	lsm_reset_counters(db);
	get_stats(db, &st);
	CHECK_EQ_U(st.value_searches, 0);
	CHECK_EQ_U(st.search.rows_returned, 0);

	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * A value search iterator shows the store as it was when it was opened:
 * later overwrites, deletes, inserts, flushes and compactions don't show,
 * whether it was partly read before them or not at all.
 */
TEST(search_snapshot)
{
	char	   *dir = harness_tmpdir("vsnap");
	lsm_options o = small_options(4096, 3, 2, 2);
	static const char *const colour[] = {"red", "green", "blue", "grey"};
	lsm_db	   *db;
	lsm_iter   *its[NSTRAT + 1];
	drain		ds[NSTRAT + 1];
	int			fields[NSTRAT + 1];
	const char *vals[NSTRAT + 1];
	model		m,
				snap;
	sctx		c;
	lsm_stats	st;
	int			i,
				s;

	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 1200);
	for (i = 0; i < 700; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "g%d", i % 10);
		put_text(db, &m, i, 3, colour[i % 4], g, "some bytes to fill the blocks");
		if (i % 150 == 149)
		{
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_compact(db));
		}
	}
	get_stats(db, &st);
	CHECK_GT(harness_files_from(&st, 1), 1);
	CHECK_GT(st.memtable_entries, 0);
	model_copy(&snap, &m);

	/* one search per strategy on field 0, one on field 1 */
	for (s = 0; s <= NSTRAT; s++)
	{
		int			strategy = s < NSTRAT ? all_strategies[s] : LSM_SEARCH_TREE;

		fields[s] = s < NSTRAT ? 0 : 1;
		vals[s] = s < NSTRAT ? "red" : "g3";
		if (strategy < 0)
			CHECK_DB_OK(db, lsm_value_search(db, fields[s], vals[s],
											 strlen(vals[s]), &its[s]));
		else
			CHECK_DB_OK(db, lsm_value_search_with(db, fields[s], vals[s],
												  strlen(vals[s]), strategy,
												  &its[s]));
		drain_init(&ds[s], &snap);
		/* half of them read their first row before the changes */
		if (s % 2 == 0)
		{
			CHECK(lsm_iter_valid(its[s]));
			take_row(its[s], &snap, fields[s], vals[s], strlen(vals[s]), &ds[s],
					 "snapshot (before the changes)");
		}
	}

	/* the changes: recolour, delete, insert, flush, compact */
	for (i = 0; i < 700; i += 2)
		put_text(db, &m, i, 2, colour[(i + 1) % 4], "moved", NULL);
	for (i = 1; i < 700; i += 5)
		del_row(db, &m, i);
	for (i = 700; i < 1100; i++)
		put_text(db, &m, i, 2, "red", "g3", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 3; i < 700; i += 7)
		put_text(db, &m, i, 2, "red", "g3", NULL);

	for (s = 0; s <= NSTRAT; s++)
	{
		char		what[100];
		lsm_search_stats ss;
		size_t		n;

		snprintf(what, sizeof(what), "snapshot: %s field %d = %s",
				 s < NSTRAT ? strategy_name(all_strategies[s]) : "TREE",
				 fields[s], vals[s]);
		n = drain_finish(its[s], &snap, fields[s], vals[s], strlen(vals[s]),
						 &ds[s], what);
		CHECK_EQ(n, model_count(&snap, fields[s], vals[s], strlen(vals[s])));
		CHECK_DB_OK(db, lsm_iter_search_stats(its[s], &ss));
		CHECK_EQ_U(ss.rows_returned, n);
		lsm_iter_close(its[s]);
	}

	/* new searches see the new state */
	c = ctx_of(db, &m, &o, "after the changes");
	search_all(&c, 0, "red", 3);
	search_all(&c, 1, "g3", 2);
	search_all(&c, 1, "moved", 5);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
	model_free(&snap);
}

/*
 * lsm_get_stats keeps the shape of the value filter hierarchy from one call
 * to the next while the tree is the same: as the store grows, compaction
 * by compaction, the handle that wrote, whose shape was kept, must report
 * what a handle opened afresh walks, and the shape must have changed.
 */
TEST(hierarchy_stats_follow_tree)
{
	char	   *dir = harness_tmpdir("vshape");
	lsm_options o = small_options(1 << 14, 3, 2, 2);
	lsm_options ro;
	lsm_db	   *db,
			   *fresh;
	lsm_stats	st,
				fst;
	model		m;
	uint64_t	first_leaves = 0;
	int			i,
				f;

	ro = o;
	ro.read_only = 1;
	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 2000);
	for (f = 0; f < 6; f++)
	{
		for (i = 0; i < 300; i++)
		{
			char		v[16];

			snprintf(v, sizeof(v), "v%d", (f * 300 + i) % 97);
			put_text(db, &m, f * 300 + i, 2, "a", v, NULL);
		}
		CHECK_DB_OK(db, lsm_compact_all(db));
		get_stats(db, &st);
		get_stats(db, &st);		/* the kept shape */
		CHECK_OK(lsm_open(dir, &ro, &fresh));
		get_stats(fresh, &fst);
		CHECK_SAME_SHAPE(st, fst);
		CHECK_OK(lsm_close(fresh));
		if (f == 0)
			first_leaves = st.hierarchy.leaves;
	}
	CHECK_GE(first_leaves, 1);
	CHECK_GT(st.hierarchy.leaves, first_leaves);
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * Fields left out of the value filters (value_unindexed) are still found,
 * by scanning every table, including tables that hold no indexed value at
 * all (and so are not leaves of the hierarchy); indexed fields, below 64 and
 * above, use the filters.  The setting belongs to the store: a later open
 * with other options keeps it, for new tables too.
 */
TEST(unindexed_fields)
{
	char	   *dir = harness_tmpdir("vunidx");
	lsm_options o = small_options(1 << 14, 3, 2, 2);
	lsm_db	   *db;
	lsm_stats	st;
	lsm_search_stats ss;
	model		m;
	sctx		c;
	uint8_t    *row;
	size_t		len;
	int			i,
				s;

	o.value_unindexed = UINT64_C(1) << 1;
	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 3000);

	/* rows with 67 fields: 0 indexed, 1 not, 66 indexed (>= 64) */
	for (i = 0; i < 1200; i++)
	{
		lsm_field	f[67];
		char		u[16],
					far[16];

		memset(f, 0, sizeof(f));
		for (s = 0; s < 67; s++)
			f[s].is_null = 1;
		snprintf(u, sizeof(u), "u%d", i % 37);
		snprintf(far, sizeof(far), "far%d", i % 11);
		f[0].is_null = 0;
		f[0].data = d0[i % 3];
		f[0].len = d0_len[i % 3];
		f[1].is_null = 0;
		f[1].data = u;
		f[1].len = strlen(u);
		f[66].is_null = 0;
		f[66].data = far;
		f[66].len = strlen(far);
		row = make_row(f, 67, &len);
		put_row(db, &m, i, row, len);
	}
	/* a key range whose rows hold only the unindexed field */
	for (i = 2000; i < 2600; i++)
	{
		char		u[16];

		snprintf(u, sizeof(u), "u%d", i % 37);
		put_text(db, &m, i, 2, NULL, u, NULL);
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	CHECK_GT(harness_files_from(&st, 1), 4);
	/* the tables of the second range are no leaves */
	CHECK_LT(st.hierarchy.leaves, harness_files_from(&st, 1));
	CHECK_GE(st.hierarchy.leaves, 2);

	c = ctx_of(db, &m, &o, "unindexed field 1");
	search_str(&c, 1, "u5", model_count(&m, 1, "u5", 2));
	CHECK_GT(model_count(&m, 1, "u5", 2), 20);
	for (s = 0; s < NSTRAT; s++)
	{
		search_one(&c, 1, "u7", 2, all_strategies[s], &ss);
		CHECK_EQ_U(ss.sstables_scanned, harness_files_from(&st, 0));
		if (ss.strategy != LSM_SEARCH_SCAN)
			CHECK_GT(ss.sstables_unfiltered, 0);
	}
	c.where = "indexed fields 0 and 66";
	search_str(&c, 0, "red", 400);
	search_str(&c, 66, "far3", model_count(&m, 66, "far3", 4));
	search_str(&c, 66, "far99", 0);
	search_str(&c, 0, "nope", 0);
	search_one(&c, 0, "nope", 4, LSM_SEARCH_TREE, &ss);
	CHECK_EQ_U(ss.sstables_scanned, 0);
	search_one(&c, 66, "far99", 5, LSM_SEARCH_LEAVES, &ss);
	CHECK_EQ_U(ss.sstables_scanned, 0);
	search_one(&c, 0, "red", 3, LSM_SEARCH_TREE, &ss);
	CHECK_LT(ss.sstables_scanned, harness_files_from(&st, 0));
	CHECK_DB_OK(db, lsm_verify(db));

	/* another open asking for every field: the store keeps its setting */
	CHECK_DB_OK(db, lsm_close(db));
	o.value_unindexed = 0;
	CHECK_OK(lsm_open(dir, &o, &db));
	o.value_unindexed = UINT64_C(1) << 1;
	c = ctx_of(db, &m, &o, "unindexed field 1 after reopen");
	for (i = 2600; i < 2700; i++)
		put_text(db, &m, i, 2, NULL, "u5", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	get_stats(db, &st);
	CHECK_EQ(st.memtable_entries, 0);
	search_str(&c, 1, "u5", model_count(&m, 1, "u5", 2));
	for (s = 0; s < NSTRAT; s++)
	{
		search_one(&c, 1, "u5", 2, all_strategies[s], &ss);
		CHECK_EQ_U(ss.sstables_scanned, harness_files_from(&st, 0));
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	search_str(&c, 1, "u5", model_count(&m, 1, "u5", 2));
	search_one(&c, 1, "u5", 2, LSM_SEARCH_TREE, &ss);
	CHECK_EQ_U(ss.sstables_scanned, harness_files_from(&st, 0));
	search_str(&c, 0, "green", 400);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * A store created without value filters (m = 0) scans every table for every
 * search, with every strategy, and stays without them when later opened
 * with m > 0.
 */
TEST(no_value_filters)
{
	char	   *dir = harness_tmpdir("vnof");
	lsm_options o = small_options(0, 3, 2, 2);
	lsm_db	   *db;
	lsm_stats	st;
	lsm_search_stats ss;
	model		m;
	sctx		c;
	int			i,
				s,
				round;

	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 2000);
	for (round = 0; round < 2; round++)
	{
		for (i = 0; i < 1500; i++)
		{
			char		g[16];

			if (round == 1 && i % 3 != 0)
				continue;
			snprintf(g, sizeof(g), "g%d", (i + round) % 13);
			put_text(db, &m, i, 3, d0[(i + round) % 5], g, "filler filler");
		}
		CHECK_DB_OK(db, lsm_flush(db));
		if (round == 1)
		{
			/* a later open asks for filters: the store has none */
			CHECK_DB_OK(db, lsm_close(db));
			o.value_filter_bits = 4096;
			CHECK_OK(lsm_open(dir, &o, &db));
			o.value_filter_bits = 0;
			for (i = 0; i < 1500; i += 7)
				put_text(db, &m, i, 2, "blue", "g99", NULL);
			CHECK_DB_OK(db, lsm_flush(db));
		}
		get_stats(db, &st);
		CHECK_GT(harness_files_from(&st, 0), 4);
		CHECK_EQ_U(st.hierarchy.value_filter_bits, 0);
		CHECK_EQ_U(st.hierarchy.leaves, 0);
		CHECK_EQ_U(st.hierarchy.internal, 0);
		for (i = 0; i < LSM_MAX_LEVELS; i++)
			CHECK_EQ_U(st.level[i].value_filter_bytes, 0);
		c = ctx_of(db, &m, &o, round ? "no value filters, reopened" :
				   "no value filters");
		search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
		search_str(&c, 1, "g99", model_count(&m, 1, "g99", 3));
		search_str(&c, 1, "g5", model_count(&m, 1, "g5", 2));
		search_str(&c, 0, "", model_count(&m, 0, "", 0));
		search_str(&c, 2, "nothing", 0);
		for (s = 0; s < NSTRAT; s++)
		{
			search_one(&c, 0, "blue", 4, all_strategies[s], &ss);
			CHECK_EQ_U(ss.sstables_scanned, harness_files_from(&st, 0));
			CHECK_EQ_U(ss.leaves_probed, 0);
			if (ss.strategy != LSM_SEARCH_SCAN)
				CHECK_EQ_U(ss.sstables_unfiltered, harness_files_from(&st, 0));
		}
		CHECK_DB_OK(db, lsm_verify(db));
	}
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * k = 0 is an accepted value of value_filter_hashes: either lsm_open
 * refuses it (LSM_INVALID) or the store works, searches included.
 */
TEST(zero_hashes)
{
	char	   *dir = harness_tmpdir("vk0");
	lsm_options o = small_options(4096, 0, 2, 2);
	lsm_db	   *db;
	model		m;
	sctx		c;
	int			i,
				rc;

	rc = lsm_open(dir, &o, &db);
	if (rc == LSM_INVALID)
	{
		printf("# value_filter_hashes = 0 refused by lsm_open: %s\n",
			   lsm_errmsg(NULL));
		return;
	}
	CHECK_OK(rc);
	model_init(&m, 1500);
	for (i = 0; i < 1500; i++)
		put_text(db, &m, i, 2, d0[i % 3], "k0", NULL);
	CHECK_DB_OK(db, lsm_compact_all(db));
	put_text(db, &m, 3, 2, "blue", "k0", NULL);
	c = ctx_of(db, &m, &o, "k = 0");
	search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	search_str(&c, 0, "blue", model_count(&m, 0, "blue", 4));
	search_str(&c, 1, "nothing", 0);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * The changes the child of value_search_other_process makes in round r,
 * through db, or (db NULL) to the model only.
 */
static void
child_round(lsm_db *db, model *m, int r)
{
	int			i;

	switch (r)
	{
		case 0:
			/* new rows, flushed into level 0 and compacted down */
			for (i = 500; i < 1500; i++)
			{
				char		g[16];

				snprintf(g, sizeof(g), "c%d", i % 17);
				put_text(db, m, i, 3, "child", g, "child rows fill blocks");
			}
			if (db)
			{
				CHECK_DB_OK(db, lsm_flush(db));
				CHECK_DB_OK(db, lsm_compact(db));
			}
			break;
		case 1:
			/* overwrites of the parent's and its own rows, deletes */
			for (i = 0; i < 1500; i += 3)
				put_text(db, m, i, 2, "recoloured", "c3", NULL);
			for (i = 1; i < 1500; i += 10)
				del_row(db, m, i);
			if (db)
				CHECK_DB_OK(db, lsm_flush(db));
			break;
		case 2:
			/* everything compacted; a few rows left in the log */
			if (db)
				CHECK_DB_OK(db, lsm_compact_all(db));
			for (i = 1500; i < 1520; i++)
				put_text(db, m, i, 2, "child", "log", NULL);
			break;
	}
}

/*
 * Another process writes, flushes and compacts; this process's handle,
 * after lsm_refresh, finds the rows by value with every strategy (its flat
 * layout and tree follow the new versions), while a search opened before
 * keeps its snapshot.
 */
TEST(value_search_other_process)
{
	char	   *dir = harness_tmpdir("vproc");
	lsm_options o = small_options(4096, 3, 2, 2);
	lsm_db	   *db;
	model		m,
				snap;
	sctx		c;
	int			i,
				r;

	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 2000);
	for (i = 0; i < 800; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "c%d", i % 17);
		put_text(db, &m, i, 3, "parent", g, "parent rows fill blocks");
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 800; i < 850; i++)
		put_text(db, &m, i, 2, "parent", "unflushed", NULL);
	c = ctx_of(db, &m, &o, "before the child");
	search_str(&c, 0, "parent", 850);	/* builds the flat layout */
	search_str(&c, 1, "c3", model_count(&m, 1, "c3", 2));

	for (r = 0; r < 3; r++)
	{
		lsm_iter   *held;
		drain		d;
		pid_t		pid;
		int			status;
		char		where[64];

		model_copy(&snap, &m);
		CHECK_DB_OK(db, lsm_value_search_with(db, 1, "c3", 2, LSM_SEARCH_FLAT,
											  &held));
		drain_init(&d, &snap);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
		{
			lsm_db	   *cdb;

			CHECK_OK(lsm_open(dir, &o, &cdb));
			child_round(cdb, &m, r);
			CHECK_DB_OK(cdb, lsm_close(cdb));
			_exit(0);
		}
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				  "child of round %d ended with status %d", r, status);
		/* the same changes, in this process's model only */
		child_round(NULL, &m, r);
		CHECK_DB_OK(db, lsm_refresh(db));
		snprintf(where, sizeof(where), "after child round %d", r);
		c = ctx_of(db, &m, &o, where);
		search_str(&c, 0, "child", model_count(&m, 0, "child", 5));
		search_str(&c, 0, "parent", model_count(&m, 0, "parent", 6));
		search_str(&c, 0, "recoloured", model_count(&m, 0, "recoloured", 10));
		search_str(&c, 1, "c3", model_count(&m, 1, "c3", 2));
		search_str(&c, 1, "log", model_count(&m, 1, "log", 3));
		search_str(&c, 1, "unflushed", model_count(&m, 1, "unflushed", 9));
		CHECK_DB_OK(db, lsm_verify(db));
		/* the search opened before the child ran */
		CHECK_EQ(drain_finish(held, &snap, 1, "c3", 2, &d, "held across the child"),
				 model_count(&snap, 1, "c3", 2));
		lsm_iter_close(held);
		model_free(&snap);
	}
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/* What the participants of split searches share (an anonymous mapping). */
typedef struct split_shm
{
	uint32_t	next;			/* the next unit to claim */
	uint32_t	seen[3000];		/* times each key was returned */
} split_shm;

static uint32_t
claim_shared(void *arg)
{
	return __atomic_fetch_add(&((split_shm *) arg)->next, 1, __ATOMIC_SEQ_CST);
}

/* One participant: its handle's search over view, keys counted in sh. */
static void
split_participant(lsm_db *db, const void *view, size_t len, int field,
				  const char *val, int strategy, split_shm *sh)
{
	lsm_iter   *it;

	CHECK_DB_OK(db, lsm_value_search_view(db, view, len, field, val,
										  strlen(val), strategy, claim_shared,
										  sh, &it));
	for (; lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		kn;
		const void *k = lsm_iter_key(it, &kn);
		int			i = key_index(k, kn, 3000);

		CHECK_GE(i, 0);
		__atomic_fetch_add(&sh->seen[i], 1, __ATOMIC_SEQ_CST);
	}
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);
}

/*
 * A value search over a shared view, split among three processes that
 * claim its units from one counter in shared memory, while the store moves
 * on: together they return the rows of the view's snapshot (overwritten
 * rows by their newest value, rows in the memtable, not the rows written
 * after the share), each once, with every strategy; tables of many blocks
 * are split into several units.
 */
TEST(value_search_split_processes)
{
	char	   *dir = harness_tmpdir("vsplit");
	lsm_options o = small_options(1 << 14, 3, 4, 4);
	split_shm  *sh;
	lsm_db	   *db;
	model		m,
				snap;
	void	   *view;
	size_t		len;
	uint32_t	units_even = 0;
	int			i,
				s;
	static const char *const vals[] = {"even", "c3", "moved", "fresh"};

	o.file_bytes = 1 << 20;		/* tables of a few hundred blocks */
	o.block_bytes = 256;
	o.memtable_bytes = 1 << 20;
	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 3000);
	for (i = 0; i < 3000; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "c%d", i % 17);
		put_text(db, &m, i, 3, i % 2 ? "odd" : "even", g,
				 "a row long enough to fill blocks quickly");
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 0; i < 3000; i += 7)
		put_text(db, &m, i, 2, "moved", "c3", NULL);
	CHECK_DB_OK(db, lsm_flush(db));	/* a level-0 table over them */
	for (i = 0; i < 3000; i += 11)
		put_text(db, &m, i, 2, "fresh", "c3", NULL);	/* in the memtable */
	for (i = 5; i < 3000; i += 13)
		del_row(db, &m, i);
	CHECK_DB_OK(db, lsm_share(db, 4, &view, &len));
	model_copy(&snap, &m);
	/* after the share: not in the view */
	for (i = 1; i < 3000; i += 5)
		put_text(db, &m, i, 2, "later", "c3", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact_all(db));

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	for (s = 0; s < NSTRAT - 1; s++)
	{
		int			v;

		for (v = 0; v < 4; v++)
		{
			int			field = v == 0 || v == 2 || v == 3 ? 0 : 1;
			pid_t		pid[2];
			int			p,
						status;

			memset(sh, 0, sizeof(*sh));
			for (p = 0; p < 2; p++)
			{
				pid[p] = fork();
				CHECK(pid[p] >= 0);
				if (pid[p] == 0)
				{
					lsm_db	   *cdb;

					CHECK_OK(lsm_open(dir, &o, &cdb));
					split_participant(cdb, view, len, field, vals[v],
									  all_strategies[s], sh);
					CHECK_OK(lsm_close(cdb));
					_exit(0);
				}
			}
			split_participant(db, view, len, field, vals[v],
							  all_strategies[s], sh);
			for (p = 0; p < 2; p++)
			{
				CHECK_EQ(waitpid(pid[p], &status, 0), pid[p]);
				CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
						  "participant %d of %s = %s: status %d", p,
						  strategy_name(all_strategies[s]), vals[v], status);
			}
			for (i = 0; i < 3000; i++)
				CHECK_MSG(sh->seen[i] ==
						  (uint32_t) harness_row_matches(snap.val[i],
														 snap.vlen[i], field,
														 vals[v],
														 strlen(vals[v])),
						  "%s = %s: key %d returned %u times",
						  strategy_name(all_strategies[s]), vals[v], i,
						  sh->seen[i]);
			if (v == 0 && all_strategies[s] == LSM_SEARCH_TREE)
				units_even = sh->next - 3;	/* each claimed one past the end */
		}
	}
	/* "even" is in nearly every block of the big tables: several units each */
	CHECK_GT(units_even, harness_tables(db, NULL) + 2);
	munmap(sh, sizeof(*sh));
	lsm_unshare(db);
	lsm_free(view);
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&snap);
	model_free(&m);
}

/*
 * A second process compacts in a loop (rebuilding the hierarchy under this
 * process's feet, often moving tables down whole, since half the keys are
 * written in ascending order) while this one writes, flushes and, after
 * lsm_refresh, searches by value with every strategy and verifies the
 * store; the compacting handle verifies its own view too.
 */
TEST(value_search_concurrent_compactor)
{
	char	   *dir = harness_tmpdir("vconc");
	lsm_options o = small_options(4096, 3, 2, 2);
	uint64_t	rng = harness_seed() ^ 0x77;
	lsm_db	   *db;
	model		m;
	sctx		c;
	int			stop[2];
	pid_t		pid;
	int			status,
				round,
				i;

	o.auto_compact = 0;
	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 4000 + 30 * 150);
	CHECK(pipe(stop) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		lsm_db	   *cdb;
		char		b;
		long		loops;

		close(stop[1]);
		CHECK(fcntl(stop[0], F_SETFL, O_NONBLOCK) == 0);
		CHECK_OK(lsm_open(dir, &o, &cdb));
		for (loops = 0; read(stop[0], &b, 1) < 0 && errno == EAGAIN; loops++)
		{
			int			rc = lsm_compact(cdb);

			/* the parent failed and removed the store: just go */
			if (rc != LSM_OK && access(dir, F_OK) != 0)
				_exit(0);
			CHECK_DB_OK(cdb, rc);
			/* the compacting handle's own view must be sound too */
			if (loops % 8 == 0 && (rc = lsm_verify(cdb)) != LSM_OK &&
				access(dir, F_OK) != 0)
				_exit(0);
			CHECK_DB_OK(cdb, rc);
			usleep(500);
		}
		CHECK_DB_OK(cdb, lsm_verify(cdb));
		CHECK_DB_OK(cdb, lsm_close(cdb));
		_exit(0);
	}
	close(stop[0]);
	for (round = 0; round < 30; round++)
	{
		char		where[64];

		for (i = 0; i < 300; i++)
		{
			/* random keys, and fresh keys past all others (moved down) */
			int			k = i % 2 ? (int) (harness_rand64(&rng) % 4000) :
				4000 + round * 150 + i / 2;
			char		g[16];

			if (i % 2 && harness_rand64(&rng) % 10 == 0)
			{
				del_row(db, &m, k);
				continue;
			}
			snprintf(g, sizeof(g), "g%d", (int) (harness_rand64(&rng) % 30));
			put_text(db, &m, k, 3, d0[harness_rand64(&rng) % 3], g,
					 "padding-padding-padding-padding-padding");
		}
		CHECK_DB_OK(db, lsm_flush(db));
		CHECK_DB_OK(db, lsm_refresh(db));
		snprintf(where, sizeof(where), "concurrent round %d", round);
		c = ctx_of(db, &m, &o, where);
		c.estimate = 0;			/* the store may change in between */
		CHECK_DB_OK(db, lsm_verify(db));
		search_all(&c, 0, "blue", 4);
		search_all(&c, 1, "g7", 2);
		search_all(&c, 1, "g77", 3);
	}
	CHECK(write(stop[1], "s", 1) == 1);
	close(stop[1]);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "compacting child ended with status %d", status);
	CHECK_DB_OK(db, lsm_refresh(db));
	c = ctx_of(db, &m, &o, "after the compactor");
	search_all(&c, 0, "red", 3);
	search_all(&c, 1, "g3", 2);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/* State of move_during_flush's interrupt callback. */
static struct
{
	lsm_db	   *w;				/* holds LOCK until the first call */
	model	   *m;
	int			calls;
}			mdf;

/*
 * The compacting handle's interrupt callback: the first time (it waits for
 * LOCK at install) the other handle commits a flush and lets LOCK go.
 */
static int
mdf_interrupt(void *arg)
{
	(void) arg;
	if (mdf.w != NULL)
	{
		put_text(mdf.w, mdf.m, 3999, 2, "red", "late", NULL);
		CHECK_DB_OK(mdf.w, lsm_flush(mdf.w));
		CHECK_DB_OK(mdf.w, lsm_close(mdf.w));
		mdf.w = NULL;
	}
	mdf.calls++;
	return 0;
}

/*
 * A compaction that moves a table down whole, while another handle
 * commits a flush between the compaction's choice and its install (so the
 * install works from a reloaded version): afterwards the compacting
 * handle's tree must still be sound (every leaf the version's table) and
 * its searches right.  Deterministic: the other handle holds LOCK
 * (exclusive) until the compacting handle waits for it.
 */
TEST(move_during_flush)
{
	char	   *dir = harness_tmpdir("vmove");
	lsm_options o = small_options(4096, 3, 2, 4);
	lsm_options wo;
	lsm_db	   *db;
	lsm_stats	st;
	model		m;
	sctx		c;
	int			i;

	/* level 1 far over its target, level 2 empty: the next step moves */
	o.auto_compact = 0;
	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 4000);
	for (i = 0; i < 3000; i++)
		put_text(db, &m, i, 2, d0[i % 3], "padding-padding-padding-padding-"
				 "padding-padding-padding", NULL);
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	CHECK_EQ(st.level[0].files, 0);
	CHECK_GT(st.level[1].files, 8);
	CHECK_EQ(harness_files_from(&st, 2), 0);
	CHECK_DB_OK(db, lsm_close(db));

	memset(&mdf, 0, sizeof(mdf));
	mdf.m = &m;
	o.interrupt = mdf_interrupt;
	CHECK_OK(lsm_open(dir, &o, &db));
	wo = o;
	wo.interrupt = NULL;
	wo.exclusive = 1;
	CHECK_OK(lsm_open(dir, &wo, &mdf.w));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_GT(mdf.calls, 0);
	CHECK(mdf.w == NULL);
	get_stats(db, &st);
	CHECK_GT(harness_files_from(&st, 2), 0);
	CHECK_EQ_U(st.hierarchy.leaves, harness_files_from(&st, 1));
	CHECK_DB_OK(db, lsm_verify(db));
	c = ctx_of(db, &m, &o, "after a move during a flush");
	search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	search_str(&c, 1, "late", 1);
	CHECK_DB_OK(db, lsm_close(db));

	/* and as another handle sees it */
	o.interrupt = NULL;
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_verify(db));
	c = ctx_of(db, &m, &o, "after a move during a flush, reopened");
	search_str(&c, 0, "green", model_count(&m, 0, "green", 5));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * lsm_value_search_estimate runs the filter probes of a search and no
 * more: for a value held by exactly one table of a compacted store (large
 * filters, so no false positive is likely) it names at least that table,
 * exactly the tables the search then reads, and the search finds the row
 * in one of them.
 */
TEST(estimate_matches_search)
{
	char	   *dir = harness_tmpdir("vest");
	lsm_options o = small_options(1 << 16, 3, 2, 2);
	static const char *const probes[] = {"u00007", "u01234", "u02999",
	"u01500", "u99999", "u0123", ""};
	lsm_db	   *db;
	lsm_stats	st;
	lsm_search_stats est,
				ss;
	model		m;
	sctx		c;
	int			i,
				p,
				s;

	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 3000);
	for (i = 0; i < 3000; i++)
	{
		char		common[16],
					u[16];

		snprintf(common, sizeof(common), "common%d", i % 8);
		snprintf(u, sizeof(u), "u%05d", i);
		put_text(db, &m, i, 2, common, u, NULL);
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	CHECK_EQ(st.level[0].files, 0);
	CHECK_EQ(st.memtable_entries, 0);
	CHECK_GE(st.hierarchy.leaves, 4);
	CHECK_EQ_U(st.hierarchy.leaves, harness_files_from(&st, 1));
	check_shape(&st, &o, false, "estimate store");

	c = ctx_of(db, &m, &o, "estimate");
	for (p = 0; p < (int) (sizeof(probes) / sizeof(probes[0])); p++)
	{
		size_t		want = model_count(&m, 1, probes[p], strlen(probes[p]));

		/* every strategy, each compared with its estimate */
		search_str(&c, 1, probes[p], want);
		for (s = 0; s < NSTRAT - 1; s++)
		{
			int			strategy = all_strategies[s];

			CHECK_DB_OK(db, lsm_value_search_estimate(db, 1, probes[p],
													  strlen(probes[p]),
													  strategy, &est));
			search_one(&c, 1, probes[p], strlen(probes[p]), strategy, &ss);
			CHECK_EQ_U(est.sstables_scanned, ss.sstables_scanned);
			CHECK_EQ_U(est.blocks_scanned, ss.blocks_scanned);
			if (want == 1)
			{
				/* the one table that holds it, plus false positives */
				CHECK_GE(est.sstables_scanned, 1);
				CHECK_EQ_U(ss.sstables_false, ss.sstables_scanned - 1);
				CHECK_GE(ss.blocks_scanned, 1);
			}
			else
				CHECK_EQ_U(ss.sstables_false, ss.sstables_scanned);
			if (strategy == LSM_SEARCH_TREE || strategy == LSM_SEARCH_LEAVES)
				CHECK_LE(ss.sstables_scanned, ss.leaves_positive);
			if (strategy == LSM_SEARCH_TREE && want == 1)
				CHECK_LE(ss.sstables_scanned, 2);	/* m is large */
		}
	}
	/* a value every table holds */
	search_str(&c, 0, "common3", 375);
	CHECK_DB_OK(db, lsm_value_search_estimate(db, 0, "common3", 7,
											  LSM_SEARCH_TREE, &est));
	CHECK_EQ_U(est.sstables_scanned, harness_files_from(&st, 1));
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * After lsm_compact_all over many tables: every table of levels >= 1 is a
 * leaf, the tree has the shape of a tree of order d, m is rounded up to a
 * multiple of 512, and the directory holds exactly the stored nodes' files.
 * Then node files are damaged one at a time: a damaged node matches
 * everything, so searches still find every row, and lsm_verify reports
 * LSM_CORRUPTION; once the tables under it are all rewritten the damage is
 * gone.
 */
TEST(hierarchy_shape_and_damage)
{
	char	   *dir = harness_tmpdir("vshape");
	lsm_options o = small_options(8000, 3, 2, 2);
	lsm_db	   *db;
	lsm_stats	st,
				st2;
	model		m;
	sctx		c;
	uint64_t   *nodes;
	uint64_t	stored;
	int			nnodes,
				i,
				t,
				tried;

	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 9000);
	for (i = 0; i < 9000; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "g%d", i % 90);
		put_text(db, &m, i, 3, d0[i % 3], g, "padding that makes the tables many");
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	printf("# %" PRIu64 " leaves, %" PRIu64 " internal (%" PRIu64
		   " saturated), height %d\n", st.hierarchy.leaves,
		   st.hierarchy.internal, st.hierarchy.saturated, st.hierarchy.height);
	CHECK_EQ(st.level[0].files, 0);
	CHECK_EQ_U(st.hierarchy.leaves, harness_files_from(&st, 1));
	CHECK_GT(st.hierarchy.leaves, 64);	/* two groups of the flat layout */
	CHECK_GT(st.hierarchy.internal, 0);
	CHECK_GE(st.hierarchy.height, 2);
	CHECK_EQ_U(st.hierarchy.value_filter_bits, 8192);
	CHECK_EQ(st.hierarchy.value_filter_hashes, 3);
	CHECK_EQ(st.hierarchy.hierarchy_order, 2);
	check_shape(&st, &o, false, "compacted");
	CHECK_DB_OK(db, lsm_verify(db));
	stored = st.hierarchy.internal - st.hierarchy.saturated;
	CHECK_GT(stored, 0);

	/* the directory holds the stored nodes, no more */
	nodes = list_files(dir, "vfn", &nnodes);
	CHECK_EQ_U(nnodes, stored);
	free(nodes);

	c = ctx_of(db, &m, &o, "compacted");
	search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	search_str(&c, 1, "g7", model_count(&m, 1, "g7", 2));
	search_str(&c, 1, "g99", 0);

	CHECK_DB_OK(db, lsm_close(db));

	/* the same after a reopen */
	CHECK_OK(lsm_open(dir, &o, &db));
	get_stats(db, &st2);
	CHECK_SAME_SHAPE(st2, st);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));

	/* damage the newest node files (the root first), one at a time */
	nodes = list_files(dir, "vfn", &nnodes);
	CHECK_GT(nnodes, 0);
	tried = 0;
	for (t = nnodes - 1; t >= 0 && tried < 3; t--, tried++)
	{
		char		where[64];

		snprintf(where, sizeof(where), "node file %06llu damaged",
				 (unsigned long long) nodes[t]);
		flip_middle(dir, nodes[t], "vfn");
		CHECK_OK(lsm_open(dir, &o, &db));
		CHECK_RC(LSM_CORRUPTION, lsm_verify(db));
		get_stats(db, &st2);
		CHECK_EQ_U(st2.hierarchy.leaves, st.hierarchy.leaves);
		CHECK_EQ_U(st2.hierarchy.internal, st.hierarchy.internal);
		check_shape(&st2, &o, true, where);
		c = ctx_of(db, &m, &o, where);
		c.damaged = 1;
		search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
		search_str(&c, 0, "green", model_count(&m, 0, "green", 5));
		search_str(&c, 1, "g7", model_count(&m, 1, "g7", 2));
		search_str(&c, 1, "g89", model_count(&m, 1, "g89", 3));
		search_str(&c, 1, "g99", 0);
		search_str(&c, 2, "padding", 0);
		CHECK_DB_OK(db, lsm_close(db));
		flip_middle(dir, nodes[t], "vfn");	/* undone */
		CHECK_OK(lsm_open(dir, &o, &db));
		CHECK_DB_OK(db, lsm_verify(db));
		CHECK_DB_OK(db, lsm_close(db));
	}

	/* damaged, then a few rows change: searches stay right */
	flip_middle(dir, nodes[nnodes > 1 ? nnodes - 2 : 0], "vfn");
	CHECK_OK(lsm_open(dir, &o, &db));
	for (i = 1000; i < 1100; i++)
		put_text(db, &m, i, 2, "amber", "g7", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	c = ctx_of(db, &m, &o, "damaged, then partly rewritten");
	c.damaged = 1;
	search_str(&c, 0, "amber", 100);
	search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	search_str(&c, 1, "g7", model_count(&m, 1, "g7", 2));
	search_str(&c, 1, "g8", model_count(&m, 1, "g8", 2));

	/* every row rewritten: no table under the damaged node is left */
	for (i = 0; i < 9000; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "h%d", i % 40);
		put_text(db, &m, i, 3, d0[(i + 1) % 3], g, "new padding that makes many tables");
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	c = ctx_of(db, &m, &o, "after the damage was rewritten");
	search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	search_str(&c, 1, "h7", 225);
	search_str(&c, 1, "g7", 0);
	CHECK_DB_OK(db, lsm_verify(db));
	get_stats(db, &st);
	check_shape(&st, &o, false, "after the damage was rewritten");
	free(nodes);
	nodes = list_files(dir, "vfn", &nnodes);
	CHECK_EQ_U(nnodes, st.hierarchy.internal - st.hierarchy.saturated);
	free(nodes);
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * Churn under one handle: overwritten and new rows replace leaves, so the
 * handle's flat layout frees columns, reuses them and widens its rows (more
 * groups) while keeping the columns of the leaves that stayed; every
 * strategy still finds exactly the model's rows.
 */
TEST(flat_layout_churn)
{
	char	   *dir = harness_tmpdir("vchurn");
	lsm_options o = small_options(8000, 3, 3, 2);
	lsm_db	   *db;
	lsm_stats	st,
				st2;
	model		m;
	sctx		c;
	int			i,
				r;

	CHECK_OK(lsm_open(dir, &o, &db));
	model_init(&m, 16000);
	for (i = 0; i < 6000; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "g%d", i % 90);
		put_text(db, &m, i, 3, d0[i % 3], g, "padding that makes the tables many");
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	get_stats(db, &st);
	c = ctx_of(db, &m, &o, "first generation");
	search_str(&c, 1, "g7", model_count(&m, 1, "g7", 2));
	for (r = 0; r < 3; r++)
	{
		char		where[64];

		for (i = r * 1000; i < 6000 + (r + 1) * 3000; i += (i < 6000 ? 4 : 1))
		{
			char		g[16];

			snprintf(g, sizeof(g), "g%d", (i + r) % 97);
			put_text(db, &m, i, 3, d0[(i + r) % 3], g, "a later generation");
		}
		CHECK_DB_OK(db, r == 2 ? lsm_compact_all(db) : lsm_compact(db));
		snprintf(where, sizeof(where), "churn round %d", r);
		c = ctx_of(db, &m, &o, where);
		search_str(&c, 1, "g7", model_count(&m, 1, "g7", 2));
		search_str(&c, 1, "g96", model_count(&m, 1, "g96", 3));
		search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	}
	get_stats(db, &st2);
	printf("# %" PRIu64 " leaves, then %" PRIu64 "; flat %" PRIu64 " bytes\n",
		   st.hierarchy.leaves, st2.hierarchy.leaves, st2.hierarchy.flat_bytes);
	CHECK_LE(st.hierarchy.leaves, 64);	/* one group of 64 columns ... */
	CHECK_GT(st2.hierarchy.leaves, 64);	/* ... then more */
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/*
 * Arguments: bad strategies, fields, values and out-parameters are
 * LSM_INVALID; an ordinary iterator has zero search counters; a value
 * search iterator counts as an open iterator for lsm_close; a bad default
 * strategy in the options is refused.
 */
TEST(search_arguments)
{
	char	   *dir = harness_tmpdir("vargs");
	lsm_options o = small_options(4096, 3, 2, 2);
	lsm_search_stats st,
				zero;
	lsm_iter   *it;
	lsm_db	   *db;

	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_put(db, "k", 1, "\x01\x04red", 5));
	CHECK_RC(LSM_INVALID, lsm_value_search_with(db, 0, "x", 1, 99, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search_with(db, 0, "x", 1, -1, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search_with(db, -1, "x", 1,
												LSM_SEARCH_TREE, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search_with(db, 0, NULL, 1,
												LSM_SEARCH_TREE, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search_with(db, 0, "x", 1,
												LSM_SEARCH_TREE, NULL));
	CHECK_RC(LSM_INVALID, lsm_value_search_with(NULL, 0, "x", 1,
												LSM_SEARCH_TREE, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search_estimate(db, 0, "x", 1,
													LSM_SEARCH_TREE, NULL));
	CHECK_RC(LSM_INVALID, lsm_value_search_estimate(db, 0, "x", 1, 99, &st));
	CHECK_RC(LSM_INVALID, lsm_value_search_estimate(db, -1, "x", 1,
													LSM_SEARCH_TREE, &st));
	CHECK_RC(LSM_INVALID, lsm_value_search_estimate(NULL, 0, "x", 1,
													LSM_SEARCH_TREE, &st));

	/* an ordinary iterator: zero counters */
	memset(&zero, 0, sizeof(zero));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	memset(&st, 0xa5, sizeof(st));
	CHECK_OK(lsm_iter_search_stats(it, &st));
	CHECK(memcmp(&st, &zero, sizeof(st)) == 0);
	lsm_iter_close(it);

	/* a search iterator is an open iterator */
	CHECK_DB_OK(db, lsm_value_search(db, 0, "red", 3, &it));
	CHECK(lsm_iter_valid(it));
	CHECK_RC(LSM_INVALID, lsm_close(db));
	lsm_iter_next(it);
	CHECK(!lsm_iter_valid(it));
	CHECK_OK(lsm_iter_status(it));
	CHECK_OK(lsm_iter_search_stats(it, &st));
	CHECK_EQ_U(st.rows_returned, 1);
	lsm_iter_close(it);
	CHECK_DB_OK(db, lsm_close(db));

	/* a default strategy out of range */
	o.value_search = LSM_SEARCH_SCAN + 1;
	CHECK_RC(LSM_INVALID, lsm_open(dir, &o, &db));
	o.value_search = -1;
	CHECK_RC(LSM_INVALID, lsm_open(dir, &o, &db));
}

/* ---------------------------------------------------------------------- */
/* Damage that passes the checksums (issue 11). */

/*
 * Builds the store of the damage tests in dir (options o) and fills *m:
 * 3000 rows compacted into levels >= 1 (leaves under a tree with stored
 * nodes), 200 of them overwritten in a level-0 table and 20 more in the
 * WAL only.
 */
static void
build_damage_store(const char *dir, const lsm_options *o, model *m)
{
	lsm_stats	st;
	lsm_db	   *db;
	int			i;

	model_init(m, 3000);
	CHECK_OK(lsm_open(dir, o, &db));
	for (i = 0; i < 3000; i++)
	{
		char		g[16];

		snprintf(g, sizeof(g), "g%d", i % 90);
		put_text(db, m, i, 3, d0[i % 3], g, "padding that makes the tables many");
	}
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 0; i < 200; i++)
		put_text(db, m, i * 7, 2, "amber", "g7", NULL);
	CHECK_DB_OK(db, lsm_flush(db));
	for (i = 0; i < 20; i++)
		put_text(db, m, i * 11 + 1, 2, "teal", "g8", NULL);
	get_stats(db, &st);
	CHECK_GE(st.level[0].files, 1);
	CHECK_GT(st.hierarchy.leaves, 4);
	CHECK_GT(st.hierarchy.internal, st.hierarchy.saturated);
	CHECK_GT(st.memtable_entries, 0);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
}

/* Every key of m read back through db, as the model has it. */
static void
check_gets(lsm_db *db, const model *m)
{
	int			i;

	for (i = 0; i < m->nkeys; i++)
	{
		char		key[16];
		void	   *v;
		size_t		vlen;
		int			rc = lsm_get(db, key, key_of(i, key), &v, &vlen);

		if (m->val[i] == NULL)
		{
			CHECK_RC(LSM_NOTFOUND, rc);
			continue;
		}
		CHECK_DB_OK(db, rc);
		CHECK_MEMEQ(v, vlen, m->val[i], m->vlen[i]);
		lsm_free(v);
	}
}

/*
 * A value search with strategy s that must fail with LSM_CORRUPTION, when
 * it is opened or while it runs.
 */
static void
check_search_fails(lsm_db *db, int s, int field, const char *val)
{
	lsm_search_stats st;
	lsm_iter   *it;
	int			rc;

	CHECK_RC(LSM_CORRUPTION,
			 lsm_value_search_estimate(db, field, val, strlen(val), s, &st));
	rc = lsm_value_search_with(db, field, val, strlen(val), s, &it);
	if (rc == LSM_OK)
	{
		while (lsm_iter_valid(it))
			lsm_iter_next(it);
		rc = lsm_iter_status(it);
		lsm_iter_close(it);
	}
	CHECK_MSG(rc == LSM_CORRUPTION, "strategy %d: %s", s, lsm_strerror(rc));
}

/*
 * Value filter parameters no lsm_open could have chosen, forged into the
 * manifest of a store with leaves, node files and rows in its WAL: m not a
 * multiple of 64 (the flat layout's columns overran), below 512 or not a
 * multiple of 512 (WAL replay overran the memtable's filter), near 2^32
 * (tens of GB allocated), k above 32 (the flat search's row[32] overran)
 * or 10^9 (the open hung), d near 2^31 (2 * d overflowed in lsm_verify),
 * and the pairs that do not go together.  Each makes lsm_open fail with
 * LSM_CORRUPTION naming the parameter, and touches nothing: with the
 * manifest restored the store is whole.  An m inside the bounds that is
 * not the one of the tables' filters opens (lookups and scans need no
 * filter) but makes every value search through filters fail with
 * LSM_CORRUPTION (before, they read past the filters), and lsm_verify.
 */
TEST(damaged_value_params)
{
	static const struct
	{
		forge_value_params p;
		const char *what;
	}			bad[] = {
		{{2048 + 32, 3, 2}, "value_filter_bits 2080 "},
		{{256, 3, 2}, "value_filter_bits 256 "},
		{{2048 + 64, 3, 2}, "value_filter_bits 2112 "},
		{{UINT32_C(0xfffffe00), 3, 2}, "value_filter_bits 4294966784 "},
		{{2048, 40, 2}, "value_filter_hashes 40 "},
		{{2048, 1000000000, 2}, "value_filter_hashes 1000000000 "},
		{{2048, 0, 2}, "value_filter_hashes 0 "},
		{{0, 3, 2}, "value_filter_hashes 3 "},
		{{2048, 3, 1}, "hierarchy_order 1 "},
		{{2048, 3, 0x7fffffff}, "hierarchy_order 2147483647 "},
	};
	static const int filtered[] = {LSM_SEARCH_AUTO, LSM_SEARCH_TREE,
	LSM_SEARCH_FLAT, LSM_SEARCH_LEAVES};
	char	   *dir = harness_tmpdir("vparams");
	char	   *path = harness_path(dir, "MANIFEST");
	lsm_options o = small_options(2048, 3, 2, 4);
	forge_value_params wrong_m = {4096, 3, 2};
	lsm_db	   *db;
	model		m;
	sctx		c;
	uint8_t    *good;
	size_t		len;
	int			i;

	build_damage_store(dir, &o, &m);
	good = forge_read(path, &len);
	CHECK(good != NULL);
	for (i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		CHECK_EQ(forge_manifest(dir, forge_params, (void *) &bad[i].p), 0);
		CHECK_RC(LSM_CORRUPTION, lsm_open(dir, &o, &db));
		CHECK_MSG(strstr(lsm_errmsg(NULL), bad[i].what) != NULL &&
				  strstr(lsm_errmsg(NULL), "\"MANIFEST\" at offset") != NULL,
				  "%s: %s", bad[i].what, lsm_errmsg(NULL));
		CHECK_EQ(forge_write(path, good, len), 0);
	}

	CHECK_EQ(forge_manifest(dir, forge_params, &wrong_m), 0);
	CHECK_OK(lsm_open(dir, &o, &db));
	check_gets(db, &m);
	for (i = 0; i < (int) (sizeof(filtered) / sizeof(filtered[0])); i++)
	{
		check_search_fails(db, filtered[i], 0, "red");
		check_search_fails(db, filtered[i], 1, "g7");
	}
	c = ctx_of(db, &m, &o, "m not the tables'");
	CHECK_EQ_U(search_one(&c, 0, "red", 3, LSM_SEARCH_SCAN, NULL),
			   model_count(&m, 0, "red", 3));
	CHECK_RC(LSM_CORRUPTION, lsm_verify(db));
	CHECK(strstr(lsm_errmsg(db), "value filter of ") != NULL);
	CHECK_DB_OK(db, lsm_close(db));

	CHECK_EQ(forge_write(path, good, len), 0);
	CHECK_OK(lsm_open(dir, &o, &db));
	check_gets(db, &m);
	c = ctx_of(db, &m, &o, "restored");
	search_str(&c, 0, "red", model_count(&m, 0, "red", 3));
	search_str(&c, 1, "g7", model_count(&m, 1, "g7", 2));
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	free(good);
	free(path);
	model_free(&m);
}

/*
 * A leaf of the hierarchy whose table holds no value filter (the table
 * rewritten without one, the manifest unchanged): lsm_verify reports it
 * (it copied the missing filter's bits from NULL), value searches that
 * need its filter fail with LSM_CORRUPTION (they took it for a table
 * without values and missed its rows), and lookups still work.
 */
TEST(leaf_without_value_filter)
{
	char	   *dir = harness_tmpdir("vleaf");
	lsm_options o = small_options(2048, 3, 2, 4);
	lsm_db	   *db;
	model		m;
	uint64_t	leaf;

	build_damage_store(dir, &o, &m);
	leaf = forge_first_leaf(dir);
	CHECK_NE(leaf, 0);
	CHECK_EQ(forge_table_without_values(dir, leaf), 0);
	CHECK_OK(lsm_open(dir, &o, &db));
	check_gets(db, &m);
	CHECK_RC(LSM_CORRUPTION, lsm_verify(db));
	CHECK_MSG(strstr(lsm_errmsg(db), "bytes of value filter and block locator, the manifest says") != NULL,
			  "%s", lsm_errmsg(db));
	check_search_fails(db, LSM_SEARCH_FLAT, 0, "red");
	check_search_fails(db, LSM_SEARCH_TREE, 0, "red");
	check_search_fails(db, LSM_SEARCH_LEAVES, 0, "red");
	CHECK_DB_OK(db, lsm_close(db));
	model_free(&m);
}

/* Runs every test (or those named on the command line). */
int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(search_arguments);
	RUN(newest_version_only);
	RUN(search_snapshot);
	RUN(hierarchy_stats_follow_tree);
	RUN(unindexed_fields);
	RUN(no_value_filters);
	RUN(zero_hashes);
	RUN(estimate_matches_search);
	RUN(hierarchy_shape_and_damage);
	RUN(flat_layout_churn);
	RUN(damaged_value_params);
	RUN(leaf_without_value_filter);
	RUN(value_search_other_process);
	RUN(value_search_split_processes);
	RUN(value_search_concurrent_compactor);
	RUN(move_during_flush);
	RUN(value_model_order2);
	RUN(value_model_order3);
	RUN(value_model_saturated);
	RUN(value_model_unindexed_k1);
	RUN(value_model_no_filters);
	return harness_done();
}

/*
 * iter.c
 *		The public iterator, lsm_iter: over the store's version and memtable
 *		at a snapshot (a key range, either way, in batches), over a value
 *		search (vsearch.c), over a stage (stage.c) or a shared view.  The
 *		iterators it reads from are merge.c's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "cursor.h"
#include "db.h"
#include "merge.h"
#include "vsearch.h"

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
	it->m = lsm_merge_version(it->v, it->mem, snap, &it->err);
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

/*
 * What a value search of db needs of it (lsm_vsearch_env); returns the
 * strategy, with LSM_SEARCH_AUTO replaced by the handle's value_search
 * option.
 */
static int
search_env(lsm_db *db, int strategy, lsm_vsearch_env *env)
{
	env->flat = &db->flat;
	env->ctr = &db->ctr;
	env->interrupt = db->opt.interrupt;
	env->interrupt_arg = db->opt.interrupt_arg;
	return strategy == LSM_SEARCH_AUTO ? db->opt.value_search : strategy;
}

int
lsm_iter_search_version(lsm_db *db, lsm_version *v, lsm_memtable *mem,
						uint64_t snap, int field, const void *val,
						size_t vlen, int strategy, lsm_claim_fn claim,
						void *arg, lsm_iter **out)
{
	lsm_iter   *it;
	lsm_vsearch_env env;
	int			rc;

	*out = NULL;
	strategy = search_env(db, strategy, &env);
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
	rc = lsm_vsearch_new(&env, it->v, it->mem, snap, field, val ? val : "",
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
	lsm_vsearch_env env;
	lsm_err		e;
	int			rc;

	if (db == NULL || st == NULL || field < 0 || (val == NULL && vlen > 0) ||
		strategy < LSM_SEARCH_AUTO || strategy > LSM_SEARCH_SCAN)
		return LSM_INVALID;
	lsm_err_clear(&e);
	strategy = search_env(db, strategy, &env);
	rc = lsm_vsearch_new(&env, db->current, db->mem, db->read_seq, field,
						 val ? val : "", vlen, strategy, NULL, NULL, &e, &m);
	if (rc != LSM_OK)
		return lsm_db_fail(db, rc, &e);
	lsm_vsearch_estimate(m, st);
	lsm_iiter_destroy(m);
	return LSM_OK;
}

/* ---------- shared views (lsm_share) ---------- */

int
lsm_iter_open_view(lsm_db *db, const void *view, size_t len, lsm_iter **out)
{
	lsm_version *v;
	lsm_memtable *mt;
	lsm_err		e;
	uint64_t	snap;
	int			rc;

	if (db == NULL || out == NULL)
		return LSM_INVALID;
	*out = NULL;
	lsm_err_clear(&e);
	rc = lsm_db_open_view(db, view, len, &v, &mt, &snap, &e);
	if (rc == LSM_OK)
		rc = lsm_iter_open_version(db, v, mt, snap, out);
	lsm_version_unref(v);
	lsm_memtable_unref(mt);
	return lsm_db_fail(db, rc, &e);
}

int
lsm_value_search_view(lsm_db *db, const void *view, size_t len, int field,
					  const void *val, size_t vlen, int strategy,
					  lsm_claim_fn claim, void *arg, lsm_iter **out)
{
	lsm_version *v;
	lsm_memtable *mt;
	lsm_err		e;
	uint64_t	snap;
	int			rc;

	if (out)
		*out = NULL;
	if (db == NULL || out == NULL || field < 0 || (val == NULL && vlen > 0) ||
		strategy < LSM_SEARCH_AUTO || strategy > LSM_SEARCH_SCAN ||
		claim == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = lsm_db_open_view(db, view, len, &v, &mt, &snap, &e);
	if (rc != LSM_OK)
		return lsm_db_fail(db, rc, &e);
	/* a failure of the search describes itself in the handle's error */
	rc = lsm_iter_search_version(db, v, mt, snap, field, val, vlen,
								 strategy, claim, arg, out);
	lsm_version_unref(v);
	lsm_memtable_unref(mt);
	return rc;
}

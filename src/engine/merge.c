/*
 * merge.c
 *		The merging iterator, the level iterator, and the merge of a version
 *		and a memtable at a snapshot that every read of the store goes
 *		through (lsm_merge_version).  The public iterator is iter.c's.
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
#include <stdlib.h>

#include "merge.h"

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
	lsm_iiter_stand_on(&m->base, b);
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
		lsm_iiter_stand_on(&m->base, m->children[best]);
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
	lsm_iiter_stand_on(&it->base, it->file);
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
lsm_merge_version(lsm_version *v, lsm_memtable *mem, uint64_t snap,
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

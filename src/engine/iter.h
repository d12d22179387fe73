/*
 * iter.h
 *		The internal iterator interface shared by the memtable, SSTables,
 *		levels and the merging iterator.
 *
 * Every internal iterator yields each user key at most once, in key order,
 * with the sequence number and kind of that version: sources never hold two
 * versions of a key for one snapshot (the memtable iterator picks the newest
 * version visible to its snapshot; an SSTable holds one version per key).
 * Tombstones are yielded (del = 1); the public iterator skips them.
 *
 * Protocol:  seek (key, or NULL for the first) ; { next }  while valid,
 * or backwards:  seek_back (the last key <= key, or NULL for the last) ;
 * { prev }  while valid.  A seek of either kind may follow any move; next
 * only follows seek or next, prev only seek_back or prev.  Value search
 * iterators (vsearch.c) only go forwards: their seek_back and prev are NULL.
 * An error makes the iterator invalid with rc set and the message in *err.
 */
#ifndef LSM_ITER_H
#define LSM_ITER_H

#include "util.h"

typedef struct lsm_iiter lsm_iiter;
typedef struct lsm_run lsm_run;

typedef struct lsm_iiter_ops
{
	void		(*seek) (lsm_iiter *it, const uint8_t *key, size_t klen);
	void		(*next) (lsm_iiter *it);
	void		(*seek_back) (lsm_iiter *it, const uint8_t *key, size_t klen);
	void		(*prev) (lsm_iiter *it);
	void		(*destroy) (lsm_iiter *it);
	/* optional, forwards only: see lsm_iiter_run */
	void		(*run) (lsm_iiter *it, lsm_run *r, const uint8_t *limit,
						size_t limitlen);
} lsm_iiter_ops;

struct lsm_iiter
{
	const lsm_iiter_ops *ops;
	bool		valid;
	const uint8_t *key;
	size_t		klen;
	const uint8_t *val;
	size_t		vlen;
	uint64_t	seq;
	int			del;
	int			rc;				/* LSM_OK or the error that stopped it */
	lsm_err    *err;			/* where errors are described */
};

/*
 * Puts it on an entry (for the implementations): the key, value, sequence
 * and kind are the entry's, and it is valid.
 */
static inline void
lsm_iiter_stand(lsm_iiter *it, const uint8_t *key, size_t klen,
				const uint8_t *val, size_t vlen, uint64_t seq, int del)
{
	it->valid = true;
	it->key = key;
	it->klen = klen;
	it->val = val;
	it->vlen = vlen;
	it->seq = seq;
	it->del = del;
}

/* Puts it where src stands, valid or not (iterators over others). */
static inline void
lsm_iiter_stand_on(lsm_iiter *it, const lsm_iiter *src)
{
	lsm_iiter_stand(it, src->key, src->klen, src->val, src->vlen, src->seq,
					src->del);
	it->valid = src->valid;
}

static inline void
lsm_iiter_seek(lsm_iiter *it, const uint8_t *key, size_t klen)
{
	it->ops->seek(it, key, klen);
}

static inline void
lsm_iiter_next(lsm_iiter *it)
{
	it->ops->next(it);
}

static inline void
lsm_iiter_seek_back(lsm_iiter *it, const uint8_t *key, size_t klen)
{
	it->ops->seek_back(it, key, klen);
}

static inline void
lsm_iiter_prev(lsm_iiter *it)
{
	it->ops->prev(it);
}

static inline void
lsm_iiter_destroy(lsm_iiter *it)
{
	if (it)
		it->ops->destroy(it);
}

/*
 * A run: the entries an iterator yields from where it stands, taken in one
 * call (lsm_iiter_run) instead of one move per entry through every layer
 * of a merge.  Keys are copied into keys (a block rebuilds each key in
 * place from the one before); values point into their source, a mapped
 * table or the memtable, which keeps them while the iterator lives.
 */
struct lsm_run
{
	lsm_entry  *out;			/* max entries */
	int			n;
	int			max;
	uint8_t    *keys;			/* kcap bytes, kused of them taken */
	size_t		kused;
	size_t		kcap;
	long		budget;			/* entries left to pass, tombstones included */
	bool		deletes;		/* take tombstones too */
	bool		full;			/* an entry found no room */
};

/*
 * Adds an entry to r (a tombstone only if r takes them): false, with
 * nothing added, if r is full.  Counts the entry in r's budget.  kcap is
 * how many bytes may be read from key (klen or more): a short key is copied
 * as 16 bytes when both sides have them, a copy the compiler inlines.
 */
static inline bool
lsm_run_add(lsm_run *r, const uint8_t *key, size_t klen, size_t kcap,
			const uint8_t *val, size_t vlen, int del)
{
	lsm_entry  *e;

	if (del && !r->deletes)
	{
		r->budget--;
		return true;
	}
	if (r->n == r->max || r->kcap - r->kused < klen)
	{
		r->full = true;
		return false;
	}
	e = &r->out[r->n++];
	if (klen <= 16 && kcap >= 16 && r->kcap - r->kused >= 16)
		memcpy(r->keys + r->kused, key, 16);
	else
		memcpy(r->keys + r->kused, key, klen);
	e->key = r->keys + r->kused;
	e->klen = klen;
	e->val = val;
	e->vlen = vlen;
	e->del = del;
	r->kused += klen;
	r->budget--;
	return true;
}

/*
 * Takes into r, forwards from where it stands (after seek or next), the
 * entries with keys below limit (every key when limit is NULL) while r has
 * room and budget (r->full and r->budget say which stopped it), and leaves the iterator on the first entry not taken
 * (or not valid: at the end, or failed with rc set).  An iterator without
 * a run of its own takes its entries one move at a time.
 */
void		lsm_iiter_run(lsm_iiter *it, lsm_run *r, const uint8_t *limit,
						  size_t limitlen);

/*
 * Merging iterator over n children (ownership passes to it).  For a key
 * present in several children the version with the highest sequence number
 * wins; the others are skipped.  It goes in the direction of its last seek.  Returns NULL when out of memory (children
 * are destroyed then).
 */
lsm_iiter  *lsm_merge_iter_new(lsm_iiter **children, int n, lsm_err *err);

#endif							/* LSM_ITER_H */

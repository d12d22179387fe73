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

typedef struct lsm_iiter_ops
{
	void		(*seek) (lsm_iiter *it, const uint8_t *key, size_t klen);
	void		(*next) (lsm_iiter *it);
	void		(*seek_back) (lsm_iiter *it, const uint8_t *key, size_t klen);
	void		(*prev) (lsm_iiter *it);
	void		(*destroy) (lsm_iiter *it);
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
 * Merging iterator over n children (ownership passes to it).  For a key
 * present in several children the version with the highest sequence number
 * wins; the others are skipped.  It goes in the direction of its last seek.  Returns NULL when out of memory (children
 * are destroyed then).
 */
lsm_iiter  *lsm_merge_iter_new(lsm_iiter **children, int n, lsm_err *err);

#endif							/* LSM_ITER_H */

/*
 * memtable.h
 *		The in-memory write buffer: a skip list in an arena.
 *
 * Entries are (key, sequence, kind, value), ordered by key ascending and
 * sequence descending, so the newest version of a key comes first.  A
 * memtable is reference counted: iterators keep the one they started on
 * alive across flushes.  Single-threaded (one handle, one thread).
 *
 * A memtable can also keep a key filter (lsm_memtable_filter_keys) and a
 * value filter with a value index (lsm_memtable_index_values), so that an
 * absent key and a value search cost about what they cost in an SSTable.
 */
#ifndef LSM_MEMTABLE_H
#define LSM_MEMTABLE_H

#include "iter.h"

#define LSM_KIND_DEL 0
#define LSM_KIND_PUT 1

/* Sequence numbers share a 64-bit tag with the kind: 56 bits. */
#define LSM_MAX_SEQUENCE ((UINT64_C(1) << 56) - 1)

typedef struct lsm_memtable lsm_memtable;

/* A new empty memtable with one reference; NULL when out of memory. */
lsm_memtable *lsm_memtable_new(void);
void		lsm_memtable_ref(lsm_memtable *mt);
void		lsm_memtable_unref(lsm_memtable *mt);

/*
 * Makes the memtable keep a value filter (vfilter.h) of m bits and k probes
 * over the indexed fields of the rows added to it, so that a value search
 * can skip it (m = 0 or k = 0: none).  LSM_INVALID if m or k is outside the
 * bounds of vfilter.h, LSM_NOMEM.  REQUIRES: empty.
 */
int			lsm_memtable_index_values(lsm_memtable *mt, uint32_t m, int k,
									  uint64_t unindexed);

/* May the memtable hold a row with a field of value hash h? */
bool		lsm_memtable_may_hold_value(const lsm_memtable *mt, uint64_t h);

/*
 * Calls fn for every row the memtable's value index lists under value hash
 * h (the hash of vfilter.h) that is the newest version of its key visible
 * at snap and not a tombstone: each key at most once, in no particular
 * order, a superset of the rows with a field of hash h (the caller compares
 * the field).  The pointers stay valid while the memtable lives.  Returns
 * LSM_NOTFOUND, calling nothing, if the memtable has no value index (the
 * caller scans it instead); else LSM_OK or the first other code fn returns.
 */
typedef int (*lsm_memtable_row_fn) (void *arg, const uint8_t *key,
									size_t klen, const uint8_t *row,
									size_t rowlen, uint64_t seq);
int			lsm_memtable_value_rows(const lsm_memtable *mt, uint64_t h,
									uint64_t snap, lsm_memtable_row_fn fn,
									void *arg);

/*
 * Makes the memtable keep a key filter over the XXH3-64 hashes of its keys
 * (lsm_key_hash), sized for budget bytes of entries (the flush threshold)
 * and grown as needed.  LSM_NOMEM.  REQUIRES: empty, no key filter yet.
 */
int			lsm_memtable_filter_keys(lsm_memtable *mt, size_t budget);

/*
 * May the memtable hold a version of the key of hash h = lsm_key_hash(key)?
 * False means it holds none (no false negatives); without a key filter,
 * true unless the memtable is empty.
 */
bool		lsm_memtable_may_hold_key(const lsm_memtable *mt, uint64_t h);

/* Prefetches the key filter's line for hash h (for multi-gets). */
void		lsm_memtable_prefetch_key(const lsm_memtable *mt, uint64_t h);

/* Adds one version.  LSM_NOMEM leaves the memtable unchanged. */
int			lsm_memtable_add(lsm_memtable *mt, uint64_t seq, int kind,
							 const void *key, size_t klen,
							 const void *val, size_t vlen);

/*
 * Finds the newest version of key with sequence <= snap.  Returns true and
 * fills kind, value and seq if there is one.
 */
bool		lsm_memtable_get(const lsm_memtable *mt, const void *key,
							 size_t klen, uint64_t snap, int *kind,
							 const uint8_t **val, size_t *vlen, uint64_t *seq);

/* Bytes of entries (the flush criterion) and bytes the arena allocated. */
size_t		lsm_memtable_bytes(const lsm_memtable *mt);
size_t		lsm_memtable_arena_bytes(const lsm_memtable *mt);
size_t		lsm_memtable_entries(const lsm_memtable *mt);

/*
 * Bytes of the key filter, the value filter and the value index (outside
 * the arena and the flush criterion).
 */
size_t		lsm_memtable_index_bytes(const lsm_memtable *mt);

/*
 * Checks the skip list's structure (for tests): every level in (key, seq)
 * order, and its remembered last node the real one.
 */
bool		lsm_memtable_check(const lsm_memtable *mt);

/*
 * An internal iterator over the versions visible at snap (the newest one per
 * key, tombstones included).  Holds a reference on mt.  NULL when out of
 * memory.
 */
lsm_iiter  *lsm_memtable_iter(lsm_memtable *mt, uint64_t snap, lsm_err *err);

#endif							/* LSM_MEMTABLE_H */

/*
 * memtable.h
 *		The in-memory write buffer: a skip list in an arena.
 *
 * Entries are (key, sequence, kind, value), ordered by key ascending and
 * sequence descending, so the newest version of a key comes first.  A
 * memtable is reference counted: iterators keep the one they started on
 * alive across flushes.  Single-threaded (one handle, one thread).
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

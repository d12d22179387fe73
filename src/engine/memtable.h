/*
 * memtable.h
 *		The in-memory write buffer: a skip list in an arena.
 *
 * Entries are (key, sequence, kind, value), ordered by key ascending and
 * sequence descending, so the newest version of a key comes first.  A
 * memtable is reference counted: iterators keep the one they started on
 * alive across flushes.  One writer at a time; readers, in this or other
 * processes, need no lock (memtable.c has the rules).
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

/*
 * A new empty memtable of the caller's own, with one reference: a private
 * region (memtable.c) that takes memory as it fills.  NULL when out of
 * memory.
 */
lsm_memtable *lsm_memtable_new(void);

/*
 * An external region's owner: release(arg) when the last reference goes
 * (unmap it); reserve(arg, upto, e), if not NULL, makes the first upto
 * bytes of the region safe to write (a file's blocks allocated, so that a
 * full disk fails here rather than as SIGBUS on a mapped page).
 */
typedef struct lsm_memtable_backing
{
	void		(*release) (void *arg);
	int			(*reserve) (void *arg, size_t upto, lsm_err *e);
	void	   *arg;
} lsm_memtable_backing;

/*
 * Formats a new empty memtable in the zeroed, writable memory [base, base +
 * size) (64-byte aligned, size < 32 GiB), for other processes to attach
 * to; NULL if size is too small or out of memory.  The region is fully
 * self-describing: nothing of it refers to base.
 */
lsm_memtable *lsm_memtable_format(void *base, size_t size,
								  const lsm_memtable_backing *b);

/*
 * Attaches to the memtable another handle formatted in [base, base + size),
 * mapped writable or not (a handle attached read-only must not add).
 * LSM_CORRUPTION in e and NULL if the region is not one of this layout.
 * The caller still owns the mapping if this fails.
 */
lsm_memtable *lsm_memtable_attach(void *base, size_t size, bool writable,
								  const lsm_memtable_backing *b, lsm_err *e);

/* The region size to give a store whose flush threshold is memtable_bytes. */
size_t		lsm_memtable_region_bytes_for(size_t memtable_bytes);

/*
 * Makes sure that a batch of entries with bytes of keys and values in all
 * can be added without running out of region: LSM_NOMEM (no room: flush
 * first) or the backing's error, adding nothing; else LSM_OK.  The
 * entries' blocks are allocated now; the filters and the value index get
 * theirs as they grow, and stop growing (lookups and value searches then
 * ask the skip list) rather than take what the entries were promised.
 */
int			lsm_memtable_reserve(lsm_memtable *mt, size_t entries,
								 size_t bytes, lsm_err *e);

/*
 * Maps into this process, writable, the pages of a shared region that its
 * backing has blocks for and this process has not prefaulted yet, with one
 * madvise(MADV_POPULATE_WRITE): a writer calls it before it takes the
 * write lock, so that its inserts under the lock take no page faults.  A
 * hint: it changes no byte, and does nothing for a private region, a
 * read-only mapping, or on a kernel without MADV_POPULATE_WRITE.
 */
void		lsm_memtable_prefault(lsm_memtable *mt);
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

/*
 * Is every key mt holds (of the entries published before the call) before
 * key?  True for an empty memtable.  One comparison with the last node: an
 * ascending load's lookups of new keys, cheaper than the key filter.
 */
bool		lsm_memtable_past_last(const lsm_memtable *mt, const void *key,
								   size_t klen);

/* Prefetches the key filter's line for hash h (for multi-gets). */
void		lsm_memtable_prefetch_key(const lsm_memtable *mt, uint64_t h);

/*
 * Adds one version.  LSM_NOMEM (region full) leaves the memtable unchanged
 * and readable.
 */
int			lsm_memtable_add(lsm_memtable *mt, uint64_t seq, int kind,
							 const void *key, size_t klen,
							 const void *val, size_t vlen);

/*
 * Where a key goes in one memtable, found without the write lock by
 * lsm_memtable_locate, so that lsm_memtable_add_at, under it, only steps
 * past the entries linked since instead of descending the skip list (whose
 * cache misses are most of an insert's time) while other writers wait.
 * The hint names its memtable by lsm_memtable object, not by region: it
 * counts for the handle that located it and no other.
 */
#define LSM_MEMTABLE_LEVELS 12

typedef struct lsm_memtable_hint
{
	uint64_t	mt_id;			/* the memtable object it is for; 0: none */
	uint32_t	height;			/* levels in prev */
	uint32_t	prev[LSM_MEMTABLE_LEVELS];	/* on each level, an entry
											 * before the key */
} lsm_memtable_hint;

/* Locates key in mt, reading it without a lock as readers do. */
void		lsm_memtable_locate(const lsm_memtable *mt, const void *key,
								size_t klen, lsm_memtable_hint *hint);

/*
 * lsm_memtable_add, starting from hint where it was located in mt (a hint
 * for another memtable, or NULL, is ignored; one that cannot be right is
 * too: the result never depends on it).
 */
int			lsm_memtable_add_at(lsm_memtable *mt, uint64_t seq, int kind,
								const void *key, size_t klen,
								const void *val, size_t vlen,
								const lsm_memtable_hint *hint);

/*
 * Finds the newest version of key with sequence <= snap.  Returns true and
 * fills kind, value and seq if there is one.
 */
bool		lsm_memtable_get(const lsm_memtable *mt, const void *key,
							 size_t klen, uint64_t snap, int *kind,
							 const uint8_t **val, size_t *vlen, uint64_t *seq);

/*
 * The prepared writes of the memtable's log (prepared.c), each the payload
 * of a log record of type (a batch, LSM_WAL_PREPARE, or a list of tables,
 * LSM_WAL_PREPARE_TABLES) of an owner, kept in the region so that every
 * process sees them.  lsm_memtable_add_prepared adds one (LSM_NOMEM: no
 * room; the caller reserved it; a second one of owner adds nothing);
 * lsm_memtable_decide_prepared marks owner's decided and drops it from the
 * list (false if it has no undecided one).  lsm_memtable_prepared finds
 * owner's undecided one: LSM_OK with its type and payload, or LSM_NOTFOUND.
 * lsm_memtable_undecided calls fn (if not NULL) for each undecided one and
 * returns how many there are (one load when there are none);
 * lsm_memtable_prepared_changes moves at every prepare and decision.  Read
 * without locks, as the entries are.
 */
typedef void (*lsm_memtable_prepared_fn) (void *arg, uint64_t owner, int type,
										  const uint8_t *batch, size_t len);
int			lsm_memtable_add_prepared(lsm_memtable *mt, uint64_t owner,
									  int type, const uint8_t *batch,
									  size_t len);
bool		lsm_memtable_decide_prepared(lsm_memtable *mt, uint64_t owner);
int			lsm_memtable_prepared(const lsm_memtable *mt, uint64_t owner,
								  int *type, const uint8_t **batch,
								  size_t *len);
size_t		lsm_memtable_undecided(const lsm_memtable *mt,
								   lsm_memtable_prepared_fn fn, void *arg);
uint64_t	lsm_memtable_prepared_changes(const lsm_memtable *mt);

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

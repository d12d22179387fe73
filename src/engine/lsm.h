/*
 * lsm.h
 *		Public interface of the LSM-tree storage engine.
 *
 * The engine stores arbitrary byte keys (ordered by memcmp, shorter first on
 * a tie) and values in one directory.  Writes go to a write-ahead log and an
 * in-memory skip list; full memtables are flushed to immutable SSTables that
 * leveled compaction merges downwards.  Point lookups are gated by
 * cache-line-blocked Bloom filters; the key is hashed once per lookup and the
 * hash is reused for every SSTable (hash sharing).
 *
 * Many processes may open the same directory.  Writers serialise through an
 * exclusive flock on the store's LOCK file; readers take no lock and pick up
 * other processes' commits with lsm_refresh().  See docs/architecture.md for
 * the protocol and docs/format.md for the byte layouts.
 *
 * Conventions (LMDB style): every fallible function returns an int, LSM_OK
 * (0) on success or one of the negative LSM_* codes below, which live in a
 * reserved range and never collide with (positive or negated) errno values.
 * Results come back through out-parameters.  Memory handed to the caller is
 * released with lsm_free() unless a function says otherwise.  The engine
 * never aborts, exits, prints, or longjmps.
 *
 * A handle (lsm_db) and everything opened from it belong to one thread at a
 * time; the engine starts no threads.
 */
#ifndef LSM_H
#define LSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef struct lsm_db lsm_db;		/* an open store (one directory) */
typedef struct lsm_batch lsm_batch; /* an atomic group of puts and deletes */
typedef struct lsm_iter lsm_iter;	/* an ordered cursor over a snapshot */
typedef struct lsm_stage lsm_stage; /* a private set of pending writes */

/* Return codes.  0 is success; errors are negative, in a reserved range. */
#define LSM_OK			0
#define LSM_NOTFOUND	(-30801)	/* key absent (not an error for callers) */
#define LSM_CORRUPTION	(-30802)	/* checksum or structural check failed */
#define LSM_IOERR		(-30803)	/* a system call failed; errno saved */
#define LSM_NOSPACE		(-30804)	/* ENOSPC or EDQUOT */
#define LSM_INVALID		(-30805)	/* bad argument or option */
#define LSM_BUSY		(-30806)	/* lock not obtained within the timeout */
#define LSM_NOMEM		(-30807)	/* allocation failed */
#define LSM_INTERRUPTED (-30808)	/* the interrupt callback asked to stop */
#define LSM_EXISTS		(-30809)	/* lsm_open with error_if_exists */
#define LSM_DELETED		(-30810)	/* lsm_stage_get: the stage deletes the
									 * key (not an error for callers) */
#define LSM_CONFLICT	(-30811)	/* a condition of a write or of lsm_check
									 * does not hold */

/* Longest key: every function that takes a key refuses longer ones. */
#define LSM_MAX_KEY_LEN 65535

/*
 * Returns a static, human-readable name for a return code.
 */
const char *lsm_strerror(int rc);

/*
 * Returns the detail of the last error on this handle ("checksum mismatch in
 * block at offset 12288 of 000042.sst"), or "" if none.  The string belongs
 * to the handle and is valid until the next call on it.  db may be NULL, in
 * which case the detail of the last failed lsm_open in this thread of
 * control is returned.
 */
const char *lsm_errmsg(const lsm_db *db);

/*
 * Returns the errno saved with the last LSM_IOERR/LSM_NOSPACE on this handle,
 * or 0.
 */
int			lsm_errno(const lsm_db *db);

/*
 * Interrupt callback: called while waiting for a lock and periodically during
 * long operations.  Return nonzero to abandon the operation, which then fails
 * with LSM_INTERRUPTED.  It must not longjmp.
 */
typedef int (*lsm_interrupt_fn) (void *arg);

/*
 * Log callback: told, with a complete sentence, of events that a store's
 * administrator should hear of although no call fails.  It must not
 * longjmp; it may be called with the store's write lock held.
 *	LSM_LOG_WARNING		recovery discarded data: an invalid tail of a
 *						write-ahead log (lsm_stats.wal_tails counts them);
 *						lsm_verify also repeats the store's record of them
 *	LSM_LOG_NOTICE		lsm_verify found something that is not damage (a
 *						file the manifest does not name, left by an
 *						interrupted flush or compaction)
 *	LSM_LOG_BACKGROUND	an automatic flush or compaction, run by a call
 *						that succeeded (a write, lsm_unlock, a stage's
 *						commit), failed; it is tried again by a later one
 *						(lsm_stats.background_errors counts them and keeps
 *						the last message)
 */
#define LSM_LOG_NOTICE	1
#define LSM_LOG_WARNING 2
#define LSM_LOG_BACKGROUND 3
typedef void (*lsm_log_fn) (void *arg, int level, const char *msg);

typedef struct lsm_options
{
	size_t		memtable_bytes; /* flush threshold */
	size_t		file_bytes;		/* target SSTable size */
	int			level_ratio;	/* size ratio between levels */
	int			key_bits_per_key;	/* key Bloom filter budget; 0 = none */
	uint32_t	value_filter_bits;	/* m: bits of every value Bloom filter */
	int			value_filter_hashes;	/* k for value filters */
	int			hierarchy_order;	/* d: internal nodes have d..2d children */
	int			sync;			/* fsync the WAL at every write */

	/* extensions */
	int			l0_compaction_trigger;	/* L0 file count that starts compaction */
	int			auto_compact;	/* after a write that flushed, compact in
								 * the caller's thread once the commit is
								 * done and the write lock released; 0
								 * leaves it to lsm_compact (for example
								 * from a background process) */
	int			block_bytes;	/* target data block size */
	int			lock_timeout_ms;	/* bound on waits for the write lock */
	int			create_if_missing;	/* default 1 */
	int			error_if_exists;	/* default 0 */
	int			read_only;		/* never take the write lock; no writes */
	int			exclusive;		/* hold the write lock from open to close,
								 * as LevelDB and RocksDB do: writes skip
								 * two flock calls; other writers wait */
	lsm_interrupt_fn interrupt; /* optional; see above */
	void	   *interrupt_arg;
	uint64_t	value_unindexed;	/* bit f set: field f (< 64) is left out
									 * of value filters (searching it scans) */
	int			value_search;	/* strategy of lsm_value_search: one of
								 * LSM_SEARCH_* (AUTO by default) */
	lsm_log_fn	log;			/* optional; see above */
	void	   *log_arg;
} lsm_options;

/*
 * Fills *o with the defaults: 4 MiB memtable, 2 MiB files, level ratio 10,
 * 10 bits per key, value filters of 2^21 bits with 3 hashes, hierarchy order
 * 3, no sync, L0 trigger 4, auto compaction on, 4 KiB blocks, 10 s lock
 * timeout, create if missing, every field indexed, automatic search
 * strategy.
 *
 * value_filter_bits (rounded up to a multiple of 512; 0 disables value
 * filters), value_filter_hashes, hierarchy_order and value_unindexed are
 * properties of the store: fixed when it is created, later opens use the
 * stored ones.
 */
void		lsm_options_init(lsm_options *o);

/*
 * Opens (creating if missing and allowed) the store in directory dir.  On
 * success *out is a new handle; on failure *out is NULL and lsm_errmsg(NULL)
 * describes why.  Recovery replays the write-ahead log up to its last
 * complete, valid record; an invalid tail after it (a write cut short by a
 * crash, or a damaged last record) is cut off by this open if the handle
 * may write and the write lock is free, else by the next writer, and the
 * cut is reported (the log callback, lsm_stats.wal_tails).  A directory
 * that holds tables or logs but no MANIFEST, a missing log, or a log with
 * records newer than the MANIFEST is LSM_CORRUPTION in every mode, and
 * nothing is written.
 */
int			lsm_open(const char *dir, const lsm_options *o, lsm_db **out);

/*
 * Closes the handle.  Open iterators must be closed first.  Unflushed writes
 * stay in the log and are replayed by the next open.
 */
int			lsm_close(lsm_db *db);

/*
 * Picks up writes, flushes and compactions committed by other processes (or
 * other handles) since this handle last looked.  Takes no lock, except that
 * a handle that may write and finds an invalid tail after the last record
 * of the log takes the write lock if it is free, to cut it (see lsm_open).
 */
int			lsm_refresh(lsm_db *db);

/*
 * A commit that asked for a sync (LSM_WRITE_SYNC) is visible to other
 * handles only once it is durable, so lsm_refresh leaves out the records
 * that wait for their sync (and what follows them in the log); the holder
 * of lsm_lock sees them.
 */

/*
 * Holds the write lock across calls, until lsm_unlock, as a commit lock:
 * catches up (reads then see every record, those waiting for their sync
 * included), and lets the holder check and write with no commit of another
 * handle in between.  Waits as lsm_write does (bounded, interruptible:
 * LSM_BUSY, LSM_INTERRUPTED).  With LSM_LOCK_COMPACTION it first takes the
 * compaction lock too (the order compaction uses), which a stage commit
 * that truncates needs.  While it is held, writes of this handle leave
 * the compactions they call for to lsm_unlock.  Closing the handle
 * releases it.
 */
#define LSM_LOCK_COMPACTION	1
int			lsm_lock(lsm_db *db, int flags);
void		lsm_unlock(lsm_db *db);

/*
 * lsm_lock for a holder that is about to write b: if another handle holds
 * the lock, finds where b's first entries go in the shared memtable while
 * it waits (lsm_batch_locate), so that the write holds the lock for less
 * time.  lsm_write does the same by itself.
 */
int			lsm_lock_batch(lsm_db *db, int flags, lsm_batch *b);

/* Batches.  lsm_batch_new returns NULL only when out of memory. */
lsm_batch  *lsm_batch_new(void);
int			lsm_batch_put(lsm_batch *b, const void *key, size_t klen,
						  const void *val, size_t vlen);
int			lsm_batch_delete(lsm_batch *b, const void *key, size_t klen);
void		lsm_batch_clear(lsm_batch *b);
size_t		lsm_batch_count(const lsm_batch *b);
size_t		lsm_batch_bytes(const lsm_batch *b);
void		lsm_batch_free(lsm_batch *b);

/*
 * Conditions: what a write requires of the store, checked under the write
 * lock after the catch-up, so that they hold when the write is appended
 * whoever committed in between (a transaction's commit checks, moved to
 * the one place that sees the store as it is).  Of a key:
 *	LSM_IF_ABSENT		the key holds no value
 *	LSM_IF_ABSENT_SKIP	(batches only) the same, else the entry is left
 *						out of the write instead of failing it
 *	LSM_IF_VALUE		the key holds a value whose lsm_hash is hash
 * seq is the sequence at which the caller saw the key so (0 if it did
 * not): a key that no write after seq wrote passes without its value being
 * read, which costs the memtable's key filter while no flush came since.
 *
 * lsm_batch_require sets cond on the entry last added to b (LSM_INVALID
 * if none, or for an unknown cond).  lsm_batch_require_all sets what the
 * whole batch requires: flags LSM_IF_NOT_PREPARED (no prepared write
 * holds a key of b: lsm_prepared_holds), and since, a sequence at which
 * the caller knows every condition of b held (0: none), so that a store
 * with no commit after it checks no key.  lsm_batch_clear drops both.
 *
 * lsm_write and lsm_write_opt check them first: LSM_CONFLICT, with nothing
 * written, if one fails, and lsm_batch_conflict then says which; entries
 * whose LSM_IF_ABSENT_SKIP failed are removed from b, and a batch left
 * empty writes nothing.  lsm_prepare refuses a batch with conditions.
 */
#define LSM_IF_ABSENT		1
#define LSM_IF_ABSENT_SKIP	2
#define LSM_IF_VALUE		3
#define LSM_IF_NOT_PREPARED 1

int			lsm_batch_require(lsm_batch *b, int cond, uint64_t seq,
							  uint64_t hash);
void		lsm_batch_require_all(lsm_batch *b, int flags, uint64_t since);

typedef struct lsm_conflict
{
	size_t		entry;			/* its position in the batch, from 0 */
	const void *key;			/* into the batch: valid while it is */
	size_t		klen;
	int			cond;			/* LSM_IF_*, or 0: a prepared write holds
								 * the key */
	int			present;		/* the key holds a value */
	uint64_t	owner;			/* cond 0: the prepared write's owner */
} lsm_conflict;

/* After LSM_CONFLICT from a write of b: the condition that failed. */
int			lsm_batch_conflict(const lsm_batch *b, lsm_conflict *c);

/* The hash LSM_IF_VALUE compares (64-bit XXH3 of the bytes). */
uint64_t	lsm_hash(const void *p, size_t n);

/*
 * Whether cond (LSM_IF_ABSENT or LSM_IF_VALUE, with seq and hash as
 * above) holds for key, as the handle sees the store (under lsm_lock: as
 * it is): LSM_OK, or LSM_CONFLICT with *present (if not NULL) saying
 * whether the key holds a value.
 */
int			lsm_check(lsm_db *db, const void *key, size_t klen, int cond,
					  uint64_t seq, uint64_t hash, int *present);

/*
 * Finds, without the write lock, where the first entries of b go in db's
 * shared memtable, so that the write that follows holds the lock for less
 * time (other writers wait for it).  lsm_write and lsm_lock_batch do this
 * when the lock is busy.  It never changes what the write does: a memtable
 * that changed meanwhile (a flush) only makes the hints useless.
 */
void		lsm_batch_locate(lsm_db *db, lsm_batch *b);

/*
 * Applies the batch atomically: after a crash it is either wholly present or
 * wholly absent.  With o->sync it is durable on return.  Takes the write lock
 * (bounded wait, LSM_BUSY on timeout), catches up with other writers, appends
 * one WAL record, flushes the memtable if it is over its threshold, and
 * releases the lock; then, with o->sync, waits until a fdatasync covers the
 * record (group commit: one fdatasync, by whichever committer gets there
 * first, covers every record appended before it).  The
 * batch is not consumed.  Keys must be non-empty and at most
 * LSM_MAX_KEY_LEN bytes (lsm_batch_put and lsm_batch_delete refuse others
 * with LSM_INVALID).
 */
int			lsm_write(lsm_db *db, lsm_batch *b);

/* Flags of lsm_write_opt and lsm_stage_commit. */
#define LSM_WRITE_DEFAULT	0	/* as the handle's sync option says */
#define LSM_WRITE_SYNC		1	/* fdatasync the WAL before returning */
#define LSM_WRITE_NOSYNC	2	/* leave the WAL record in the page cache:
								 * survives a crash of the process, not of
								 * the machine */
#define LSM_WRITE_DEFER		4	/* or'ed with one of the above, for
								 * lsm_write_opt: return once the record is
								 * appended and the write lock released;
								 * lsm_write_wait then waits for its
								 * durability */

/*
 * lsm_write with the durability of this one write chosen by flags (one of
 * LSM_WRITE_*), overriding the handle's sync option.  LSM_INVALID for
 * unknown flags.  (The PostgreSQL glue maps synchronous_commit = off to
 * LSM_WRITE_NOSYNC.)
 */
int			lsm_write_opt(lsm_db *db, lsm_batch *b, int flags);

/*
 * Completes the last write of this handle made with LSM_WRITE_DEFER: waits
 * until it is durable (with LSM_WRITE_SYNC) or, without, until the records
 * before it that wait for their sync are (a log is read in order, so no
 * handle sees it before them).  Only then do this handle's reads see it.
 * LSM_OK at once if there is nothing to wait for.  An error (the
 * fdatasync failed) leaves the record in the log, where later commits may
 * follow it: the commit's outcome is unknown.  The caller may release its
 * own locks before waiting, so that the next commit appends while this one
 * syncs.
 */
int			lsm_write_wait(lsm_db *db);

/*
 * Prepared writes: two-phase commit (docs/architecture.md, "Prepared
 * batches").  An owner is a nonzero id the caller chooses, unique among the
 * store's prepared writes, and not reused while a resolve of it may run.
 *
 * lsm_prepare writes batch b to the log as a prepared batch, durable as
 * flags say (with LSM_WRITE_DEFER, at lsm_write_wait), without making it
 * visible: no read sees it until it is committed.  Under lsm_lock, or
 * taking the write lock for the call.  LSM_EXISTS if owner has a prepared
 * write already.  lsm_stage_prepare prepares a stage's writes the same
 * way (as its tables when they outgrew a batch).
 *
 * lsm_resolve applies owner's prepared write atomically, newer than
 * everything the store holds, as one commit with the durability flags say
 * (a stage's tables: as lsm_stage_commit would, always durable), or
 * discards it (commit zero).  LSM_NOTFOUND if the store has no undecided
 * write of owner (never prepared, or decided already, by any process,
 * before or after a crash): the caller's decision must be the same every
 * time, and a resolve whose record a crash lost is simply made again.  Not
 * under lsm_lock (LSM_INVALID).
 *
 * lsm_prepared lists up to max owners of undecided writes in owners and
 * sets *n to how many there are, as of the handle's last catch-up (a
 * refresh, or lsm_lock).  lsm_prepared_holds tells whether an undecided
 * write writes key, a delete included (LSM_OK, its owner in *owner if not
 * NULL; a stage that truncated the store writes every key) or not
 * (LSM_NOTFOUND): under lsm_lock the answer holds until lsm_unlock, so a
 * committer that checks its keys cannot overlap a prepared write.  Both
 * cost one load while nothing is undecided; a prepared stage's tables cost
 * a key filter probe each.
 */
int			lsm_prepare(lsm_db *db, lsm_batch *b, uint64_t owner, int flags);
int			lsm_resolve(lsm_db *db, uint64_t owner, int commit, int flags);
int			lsm_prepared(lsm_db *db, uint64_t *owners, size_t max, size_t *n);
int			lsm_prepared_holds(lsm_db *db, const void *key, size_t klen,
							   uint64_t *owner);

/* Convenience wrappers around a one-entry batch. */
int			lsm_put(lsm_db *db, const void *key, size_t klen,
					const void *val, size_t vlen);
int			lsm_delete(lsm_db *db, const void *key, size_t klen);

/*
 * Looks key up.  On LSM_OK *val is a new allocation of *vlen bytes (release
 * with lsm_free; it is NUL-terminated for convenience); LSM_NOTFOUND if the
 * key is absent or deleted; LSM_INVALID if klen > LSM_MAX_KEY_LEN.  The key
 * is hashed exactly once.
 */
int			lsm_get(lsm_db *db, const void *key, size_t klen,
					void **val, size_t *vlen);
void		lsm_free(void *p);

/*
 * Whether a commit after sequence seq wrote key (a put or a delete), as
 * the handle sees the store (under lsm_lock: as it is): LSM_NOTFOUND if
 * none did, so that what a read at seq found still holds; LSM_OK if one
 * did, or if that cannot be told (the key is absent from a store flushed
 * since seq: a delete's tombstone may have gone with the flush).  A
 * committer checks its keys this way before it reads them again: while no
 * flush came after seq, it costs the memtable's key filter, and a descent
 * of its skip list when the key is there.
 */
int			lsm_written_since(lsm_db *db, const void *key, size_t klen,
							  uint64_t seq);

/*
 * Batched point lookup of n keys.  Each key is hashed once and every filter
 * line it needs is prefetched before probing.  For each i, rcs[i] is LSM_OK
 * (vals[i]/vlens[i] set, release vals[i] with lsm_free) or LSM_NOTFOUND, or
 * an error code (LSM_INVALID for a key longer than LSM_MAX_KEY_LEN).
 * Returns LSM_OK unless an error stopped the whole call.
 */
int			lsm_multi_get(lsm_db *db, size_t n, const void *const *keys,
						  const size_t *klens, void **vals, size_t *vlens,
						  int *rcs);

/*
 * Iterators.  The snapshot is taken at lsm_iter_open: later writes, flushes
 * and compactions (in any process) don't show.  The iterator is unpositioned
 * until the first seek.  Key and value pointers are valid until the next
 * move or close.  A seek to a key longer than LSM_MAX_KEY_LEN stops the
 * iterator with status LSM_INVALID.
 */
int			lsm_iter_open(lsm_db *db, lsm_iter **out);
void		lsm_iter_seek(lsm_iter *it, const void *key, size_t klen);
int			lsm_iter_valid(const lsm_iter *it);
void		lsm_iter_next(lsm_iter *it);
const void *lsm_iter_key(const lsm_iter *it, size_t *klen);
const void *lsm_iter_value(const lsm_iter *it, size_t *vlen);

/*
 * The entry the iterator is on, in one call: 1 with *key, *klen, *val and
 * *vlen as lsm_iter_key and lsm_iter_value give them, or 0 if it is not
 * valid.
 */
int			lsm_iter_entry(const lsm_iter *it, const void **key, size_t *klen,
						   const void **val, size_t *vlen);

/*
 * Batches: the entries from the one the iterator is on, read in one call.
 * lsm_iter_batch sets *entries to an array of the entries from the current
 * one on (up to a few hundred; at least one while the iterator is valid),
 * returns their number, and leaves the iterator on the entry after the last
 * of them: lsm_iter_valid says whether more follow.  0 at the end or on an
 * error (lsm_iter_status).  The array and its keys are valid until the next
 * move or close.  Reading forwards, it takes the entries of each table
 * block in one loop (where no other source holds keys in between), about
 * half the cost per entry of lsm_iter_next; backwards or over a value
 * search it returns one entry at a time, copied.  del is set only for the tombstones of an
 * iterator that shows them (a stage's).
 */
typedef struct lsm_entry
{
	const void *key;
	size_t		klen;
	const void *val;
	size_t		vlen;
	int			del;
} lsm_entry;

int			lsm_iter_batch(lsm_iter *it, const lsm_entry **entries);

/*
 * LSM_OK, or the error that stopped the iterator (it is then not valid);
 * lsm_errmsg and lsm_errno of the iterator's store then describe it (the
 * file and offset of a checksum failure, the saved errno of an I/O error).
 */
int			lsm_iter_status(const lsm_iter *it);
void		lsm_iter_close(lsm_iter *it);

/*
 * Shared views: one snapshot read by several processes, as a parallel
 * query's leader and workers do (docs/architecture.md, "Shared views").
 *
 * lsm_share encodes what lsm_iter_open would read now (the handle's
 * tables, its shared memtable and its read sequence) into *view (*len
 * bytes, malloc'd, release with lsm_free), with at most max_parts key
 * ranges that split the store, and pins it: no file it names is removed
 * until the matching lsm_unshare, lsm_close, or the end of the process.
 * LSM_BUSY if the view cannot be shared (a file of it is gone already, the
 * handle's memtable is its own, the handle is read-only, or the store's
 * pin slots are all taken): read it in this process instead.
 *
 * lsm_iter_open_view opens, in any process and on any handle of the same
 * store, an iterator that reads exactly what the view holds.  A view not
 * made by lsm_share is LSM_INVALID; a file of it missing (the view was
 * unshared) is LSM_CORRUPTION.
 *
 * lsm_view_parts gives the number of ranges (or LSM_INVALID), and
 * lsm_view_part range part: keys >= *lo (NULL: from the first) and < *hi
 * (NULL: to the last), pointers into view.  Together they cover every key
 * once.
 */
int			lsm_share(lsm_db *db, int max_parts, void **view, size_t *len);
void		lsm_unshare(lsm_db *db);
int			lsm_iter_open_view(lsm_db *db, const void *view, size_t len,
							   lsm_iter **out);
int			lsm_view_parts(const void *view, size_t len);
int			lsm_view_part(const void *view, size_t len, int part,
						  const void **lo, size_t *lolen,
						  const void **hi, size_t *hilen);

/*
 * A value search (lsm_value_search_with) over what a shared view holds,
 * split among the processes that read the view, as a parallel query's
 * participants split it: each opens its own search with the same field,
 * value and strategy, and claim(arg) hands out the search's units of work
 * (its memtable's rows, then runs of up to 64 candidate blocks of one
 * table): it returns the number of the next unit no participant has taken
 * yet, counting from 0, as a counter the participants share does.  Every
 * participant computes the same units from the view, so together they
 * return each row of the search once; one that gets a number past the
 * last unit ends.  The iterator comes back positioned, as
 * lsm_value_search's does.  LSM_SEARCH_FLAT searches as LSM_SEARCH_TREE
 * does (the same tables; no per-handle layout to build).  The counters
 * (lsm_iter_search_stats) are this participant's: the filter phase and
 * the blocks it read (a table read in parts by several counts in each).
 */
typedef uint32_t (*lsm_claim_fn) (void *arg);

int			lsm_value_search_view(lsm_db *db, const void *view, size_t len,
								  int field, const void *val, size_t vlen,
								  int strategy, lsm_claim_fn claim,
								  void *arg, lsm_iter **out);

/*
 * Makes an unpositioned iterator (of a store or a stage) run backwards:
 * lsm_iter_seek then positions on the last key <= key (the last key when
 * key is NULL), and lsm_iter_next moves to the previous key.  The snapshot,
 * what is shown and the rest of the protocol are unchanged.  LSM_INVALID
 * for an iterator already positioned and for a value search.
 */
int			lsm_iter_reverse(lsm_iter *it);

/*
 * Bounds what lsm_iter_batch takes of a forward iterator: no entry at or
 * after limit (limitlen bytes, copied; NULL: no bound).  A batch then
 * returns 0 when the iterator stands at or past limit, as at the end,
 * though lsm_iter_valid stays true and lsm_iter_next goes on: a short
 * range reads its few entries instead of a batch of hundreds (RocksDB's
 * iterate_upper_bound).  LSM_INVALID for a backward iterator or a value
 * search; LSM_NOMEM.
 */
int			lsm_iter_set_limit(lsm_iter *it, const void *limit,
							   size_t limitlen);

/*
 * 1 if the iterator is on a delete: only iterators of a stage
 * (lsm_stage_iter_open) show deletes, with an empty value; store
 * iterators skip them and always give 0.
 */
int			lsm_iter_is_delete(const lsm_iter *it);

/*
 * Stages: a transaction's pending writes in bounded memory, applied to the
 * store atomically at commit (like RocksDB's IngestExternalFile).
 *
 * Protocol:  lsm_stage_open { put | delete | get | iter_open }
 *			  ( lsm_stage_commit | lsm_stage_abort )
 *
 * A stage is private to its caller: nothing staged is visible to the store's
 * readers, this handle's included, until the commit.  Its writes go to a
 * sorted in-memory buffer (a skip list, like the memtable); when the buffer
 * is full it is written out as a sorted run, an SSTable with the store's key
 * and value filters, in a private staging directory inside the store
 * directory (stage.<pid>.<n>/), and runs are merged in tiers as they pile
 * up.  A small stage (it never spilled, and holds at most a quarter of
 * memtable_bytes) commits as one ordinary batch.  A larger one commits by
 * writing its buffer as a last run and installing the tables of every run
 * in the store, newer than everything the store held, each as deep as it
 * fits (the deepest level from which up no table overlaps it; level 0
 * without the compaction lock), with one manifest switch: after a crash the
 * stage is either wholly present or wholly absent.  Staging directories
 * left by dead processes are removed by the next writer's lsm_open or
 * lsm_compact; a live stage's directory is never removed by another process
 * (it holds an flock on the directory's LOCK file).
 *
 * A stage belongs to its handle (same thread) and must be committed or
 * aborted before lsm_close; failures describe themselves through
 * lsm_errmsg(db).  REQUIRES: a handle that is not read-only.
 */

/*
 * Opens an empty stage.  buffer_bytes bounds the buffer (0: the handle's
 * memtable_bytes; at least 4 KiB).  Creates no file until the first spill.
 * LSM_INVALID on a read-only handle.
 */
int			lsm_stage_open(lsm_db *db, size_t buffer_bytes, lsm_stage **out);

/*
 * Stages a put or a delete.  A later write of a key replaces an earlier one
 * of the same stage.  Keys must be non-empty and at most LSM_MAX_KEY_LEN
 * bytes.  A write that finds the buffer full spills it first; if the spill
 * fails (LSM_NOSPACE, LSM_IOERR, ...) the write is not staged and the stage
 * is as it was: the caller may retry, commit what is staged, or abort.
 */
int			lsm_stage_put(lsm_stage *st, const void *key, size_t klen,
						  const void *val, size_t vlen);
int			lsm_stage_delete(lsm_stage *st, const void *key, size_t klen);

/*
 * Looks key up in the stage only: the buffer, then the runs newest first
 * (in each, the one table whose key range may hold the key, gated by its
 * key filter; the key is hashed once).
 * LSM_OK with *val (a new allocation of *vlen bytes, release with lsm_free)
 * if the stage puts the key; LSM_DELETED if the stage deletes it;
 * LSM_NOTFOUND if the stage does not write it (look in the store).
 */
int			lsm_stage_get(lsm_stage *st, const void *key, size_t klen,
						  void **val, size_t *vlen);

/*
 * Makes the stage replace the store's contents (SQL's TRUNCATE): drops
 * everything staged so far, and the commit then leaves the store holding
 * exactly what is staged after this call, in one manifest switch (the
 * store's tables, memtable and WAL are dropped, their files removed).
 * Meanwhile lsm_stage_get answers LSM_DELETED for every key the stage does
 * not put, so that the caller reads nothing of the store, and stage
 * iterators show only the staged writes.  The commit of a truncating stage
 * waits for LOCK.compact, so that no compaction reinstalls what it read
 * from the dropped tables.
 */
int			lsm_stage_truncate(lsm_stage *st);

/* 1 if lsm_stage_truncate was called on the stage, else 0. */
int			lsm_stage_truncated(const lsm_stage *st);

/*
 * An iterator over the staged writes, newest per key, in key order,
 * deletes included (lsm_iter_is_delete), so the caller can merge them over
 * a store iterator.  Its snapshot is taken now: later writes to the stage do
 * not show.  It stays valid after the stage is committed or aborted, and
 * is closed with lsm_iter_close (before lsm_close).
 */
int			lsm_stage_iter_open(lsm_stage *st, lsm_iter **out);

/* Memory the stage holds: its buffer's arena and its runs' bookkeeping. */
size_t		lsm_stage_bytes(const lsm_stage *st);

/* Puts and deletes staged so far (a key written twice counts twice). */
uint64_t	lsm_stage_count(const lsm_stage *st);

/*
 * Sorted runs the stage holds in its staging directory: one per spill,
 * until 8 runs of a tier are merged into one of the next (so that lookups
 * probe O(log n) runs for n spills).
 */
int			lsm_stage_runs(const lsm_stage *st);

/*
 * Applies everything staged to the store atomically, then frees the stage
 * (whatever the outcome: on failure the staged writes are discarded, as by
 * lsm_stage_abort).  flags: one of LSM_WRITE_*.
 *
 * A stage that never spilled (and holds at most a quarter of the store's
 * memtable_bytes, nor a truncation) becomes one lsm_write_opt batch with
 * these flags.
 * Otherwise, under the write lock: catch up, flush the memtable, give the
 * tables of run i (oldest first) sequence last + 1 + i, rename them into
 * the store directory with new file numbers, and switch in one manifest
 * naming them (each as deep as it fits, as above), so every staged write is
 * newer than everything the store held.  The tables the commit names are
 * fsynced before the switch (spills only start their write-back) and the
 * manifest switch is always made durable, so such a commit is durable on
 * return whatever the
 * flags (LSM_WRITE_NOSYNC cannot skip those fsyncs without risking a
 * manifest that names missing data after a power failure).  Afterwards
 * compaction proceeds as after a flush (auto_compact).
 *
 * On failure the store is unchanged, with the one exception lsm_write and
 * flushes share: if the new manifest was renamed into place but fsyncing
 * the directory failed, the writes are visible and the error is returned
 * (their durability is unknown).
 */
int			lsm_stage_commit(lsm_stage *st, int flags);

/*
 * Prepares everything staged for owner, to be decided by lsm_resolve, then
 * frees the stage (whatever the outcome).  flags: as lsm_prepare's.  A
 * stage lsm_stage_commit would write as one batch is prepared as one
 * (lsm_prepare).  Otherwise its tables (its buffer written as a last run)
 * move into the store directory under fresh numbers, and a log record
 * naming them is the prepared write: the store keeps them, invisible,
 * across flushes, compactions and crashes, and lsm_resolve installs them
 * as lsm_stage_commit would, or removes them.  An empty stage that does not
 * truncate cannot be prepared (LSM_INVALID).
 */
int			lsm_stage_prepare(lsm_stage *st, uint64_t owner, int flags);

/* Discards everything staged, removes the staging directory, frees st. */
void		lsm_stage_abort(lsm_stage *st);

/* Rows: a value is a row of fields; every field is value-indexed. */
typedef struct lsm_field
{
	const void *data;
	size_t		len;
	int			is_null;
} lsm_field;

/* Encodes nfields fields into a new allocation *row (release: lsm_free). */
int			lsm_row_encode(const lsm_field *fields, int nfields,
						   void **row, size_t *rowlen);

/*
 * The same into the caller's buf of cap bytes: sets *rowlen, and writes
 * the row only if it fits (cap >= *rowlen; else LSM_OK with nothing
 * written, and the caller calls again with room for *rowlen bytes).
 */
int			lsm_row_encode_to(const lsm_field *fields, int nfields,
							  void *buf, size_t cap, size_t *rowlen);

/*
 * Decodes field i of a row; out->data points into row.  A field past the end
 * is null.  LSM_CORRUPTION if the row is malformed.
 */
int			lsm_row_field(const void *row, size_t rowlen, int i, lsm_field *out);

/*
 * Decodes fields 0..n-1 of a row into out[0..n) in one pass (fields past
 * the end are null), as lsm_row_field would one by one: whoever needs many
 * fields of a row calls this once, in time linear in the row's fields,
 * instead of lsm_row_field for each (quadratic).  LSM_CORRUPTION if the row
 * is malformed, LSM_INVALID for bad arguments.
 */
int			lsm_row_fields(const void *row, size_t rowlen, lsm_field *out,
						   int n);

/* Number of fields in a row (0 for a malformed row). */
int			lsm_row_nfields(const void *row, size_t rowlen);

/*
 * Every live row whose field `field` equals val byte for byte, newest
 * versions only, each once.  The iterator comes back positioned on its first
 * row (no seek is needed or allowed); order is unspecified.
 */
int			lsm_value_search(lsm_db *db, int field, const void *val,
							 size_t vlen, lsm_iter **out);

/*
 * How a value search finds the SSTables to read.  Every strategy returns
 * the same rows; they differ in what they probe.
 */
#define LSM_SEARCH_AUTO		0	/* lsm_options.value_search if set, else
									 * FLAT once the handle has built its flat
									 * layout, else TREE */
#define LSM_SEARCH_TREE		1	/* the Bloom filter hierarchy (Bloofi tree) */
#define LSM_SEARCH_FLAT		2	/* bit-sliced leaf filters, 64 per group */
#define LSM_SEARCH_LEAVES	3	/* every SSTable's value filter in turn */
#define LSM_SEARCH_SCAN		4	/* no filter: every row of every table */

/* What one value search did (or, for an estimate, would do). */
typedef struct lsm_search_stats
{
	int			strategy;		/* the LSM_SEARCH_* used (never AUTO) */
	uint64_t	nodes_visited;	/* internal hierarchy nodes probed */
	uint64_t	leaves_probed;	/* SSTable value filters probed */
	uint64_t	leaves_positive;	/* ... that said "maybe" */
	uint64_t	flat_words;		/* words ANDed by the flat layout */
	uint64_t	sstables_unfiltered;	/* tables without a value filter */
	uint64_t	sstables_scanned;	/* tables whose blocks were read */
	uint64_t	sstables_false; /* ... that held no row with the value */
	uint64_t	blocks_scanned; /* data blocks searched */
	uint64_t	blocks_skipped; /* ... rejected without decoding rows */
	uint64_t	memtable_scanned;	/* 1 if the memtable was scanned */
	uint64_t	rows_validated; /* table rows checked against newer versions */
	uint64_t	rows_rejected;	/* ... dropped as overwritten or deleted */
	uint64_t	rows_returned;
} lsm_search_stats;

/*
 * lsm_value_search with an explicit strategy.  Results are identical for
 * every strategy.
 */
int			lsm_value_search_with(lsm_db *db, int field, const void *val,
								  size_t vlen, int strategy, lsm_iter **out);

/*
 * The counters of the value search that opened it (zero for other
 * iterators); complete once the iterator is exhausted.
 */
int			lsm_iter_search_stats(const lsm_iter *it, lsm_search_stats *st);

/*
 * A cheap estimate for a planner: runs only the filter probes of a search
 * (no data is read) and fills *st; st->sstables_scanned is the number of
 * tables the search would read, st->blocks_scanned the number of blocks.
 */
int			lsm_value_search_estimate(lsm_db *db, int field, const void *val,
									  size_t vlen, int strategy,
									  lsm_search_stats *st);

/* The shape of the value filter hierarchy (lsm_get_stats). */
typedef struct lsm_hierarchy_stats
{
	int			height;			/* levels of internal nodes (0: none) */
	uint64_t	leaves;			/* SSTables under the tree (levels >= 1) */
	uint64_t	internal;		/* internal nodes */
	uint64_t	saturated;		/* ... too full to be worth storing */
	uint64_t	node_bytes;		/* bytes of the stored internal nodes */
	uint64_t	flat_bytes;		/* memory of this handle's flat layout */
	uint64_t	value_filter_bits;	/* m */
	int			value_filter_hashes;	/* k */
	int			hierarchy_order;	/* d */
} lsm_hierarchy_stats;

/*
 * Writes what the memtable holds to a level-0 SSTable now: every write
 * committed before the call.  The table is built outside the write lock,
 * from a snapshot of the shared memtable, while other handles keep writing
 * (docs/architecture.md, "flushes outside the write lock"); it waits
 * (bounded) for a flush under way in another process first.
 */
int			lsm_flush(lsm_db *db);

/*
 * A write that leaves the memtable at memtable_bytes or more makes a flush
 * due: lsm_write flushes once it has released the lock, but a write made
 * under lsm_lock or with LSM_WRITE_DEFER leaves it to the caller, which
 * asks lsm_flush_needed (nonzero: the store's shared memtable is at its
 * threshold as the handle sees it; no I/O, no locks) and calls
 * lsm_flush_try once its locks are released.  lsm_flush_try returns LSM_OK
 * at once if another process is flushing (it covers this one) or the
 * memtable was flushed meanwhile.  A flush left undone is made under the
 * write lock by the write that finds the memtable at twice memtable_bytes.
 */
int			lsm_flush_needed(lsm_db *db);
int			lsm_flush_try(lsm_db *db);

/*
 * For a caller about to start another process that will flush (the
 * PostgreSQL glue's background worker), as lsm_compaction_claim is for a
 * compaction: nonzero if a flush is needed, no handle is flushing and no
 * claim made in the last ttl_ms stands; it then records a claim, which the
 * next flush outside the write lock that begins ends.
 */
int			lsm_flush_claim(lsm_db *db, int ttl_ms);

int			lsm_compact(lsm_db *db);	/* compact until no level is over
										 * target */

/*
 * Like lsm_compact, but when another handle (in any process) holds the
 * store's compaction lock (LOCK.compact) it returns LSM_BUSY at once,
 * having done nothing, instead of waiting: what a background compactor
 * calls, so that a second one started meanwhile leaves at once.  Polls the
 * interrupt callback while it merges (LSM_INTERRUPTED: the step under way
 * is abandoned, its output files removed, the store as the previous step
 * left it).
 */
int			lsm_compact_try(lsm_db *db);

/*
 * Nonzero if a compaction is due in the state the handle last caught up with
 * (by a write, lsm_refresh or lsm_lock): level 0 holds
 * l0_compaction_trigger files or more, or a deeper level is over its target
 * bytes; the criterion lsm_compact works to.  No I/O, no locks.  With
 * auto_compact = 0 nothing else starts a compaction: this tells a caller
 * when to.
 */
int			lsm_compaction_needed(lsm_db *db);

/*
 * The number of SSTables in level (0 .. LSM_MAX_LEVELS - 1; else 0) in the
 * state the handle last caught up with.  No I/O, no locks: cheap enough for
 * every commit, unlike lsm_get_stats.
 */
int			lsm_level_files(lsm_db *db, int level);

/*
 * The newest sequence number this handle's reads see (lsm_stats'
 * last_sequence), as of its last catch-up; 0 for NULL.  No I/O, no locks.
 */
uint64_t	lsm_last_sequence(lsm_db *db);

/*
 * 1 if the handle's reads see no entry at all: no table in its view and
 * an empty memtable.  Then every lsm_get finds nothing until the handle
 * catches up (a write, lsm_refresh, lsm_lock): what other handles write
 * meanwhile is newer than its view.  0 if not, for NULL, and when unsure
 * (the shared memtable holds entries, seen or not).  No I/O, no locks.
 */
int			lsm_view_is_empty(lsm_db *db);

/*
 * Nonzero if another handle (in any process) is compacting the store right
 * now, i.e. holds LOCK.compact (probed with a non-blocking flock, released
 * at once).  Zero on a read-only handle, and between lsm_lock and
 * lsm_unlock (the handle may hold the lock itself).  A hint only: the
 * compaction may end, or another begin, as soon as it returns.
 */
int			lsm_compaction_running(lsm_db *db);

/*
 * For a caller about to start another process that will compact the store
 * (the PostgreSQL glue's background worker): nonzero if it should, i.e. no
 * handle is compacting (lsm_compaction_running) and no claim made in the
 * last ttl_ms stands.  A nonzero return records a claim in LOCK's shared
 * page, which a compaction that begins (lsm_compact, lsm_compact_try, a
 * commit's own) ends: so of many processes that see a compaction due in
 * the moment before the started process takes LOCK.compact, one starts
 * it.  Zero on a read-only handle and between lsm_lock and lsm_unlock.  A
 * hint only: a claim whose process never compacts stops others for
 * ttl_ms.
 */
int			lsm_compaction_claim(lsm_db *db, int ttl_ms);

/*
 * Checks every checksum and invariant: LSM_OK or LSM_CORRUPTION (with the
 * damage in lsm_errmsg).  What is not damage goes to the log callback: an
 * invalid tail still in the log, the store's record of tails cut
 * (LSM_LOG_WARNING), files the manifest does not name (LSM_LOG_NOTICE).
 */
int			lsm_verify(lsm_db *db);

/*
 * Flushes the memtable and compacts the whole store into its deepest
 * non-empty level (like LevelDB's CompactRange over all keys): afterwards a
 * lookup consults one table at most.
 */
int			lsm_compact_all(lsm_db *db);

/* Statistics. */
#define LSM_MAX_LEVELS 7

typedef struct lsm_level_stats
{
	int			files;
	uint64_t	entries;
	uint64_t	bytes;			/* file bytes */
	uint64_t	filter_bytes;	/* key filter bytes */
	uint64_t	value_filter_bytes;
} lsm_level_stats;

/*
 * Invalid write-ahead log tails (lsm_get_stats): bytes after the last
 * complete, valid record of a log, left by a write that a crash cut short
 * or damaged.  Recovery replays the records before them and discards them:
 * the first writer to find them cuts them off before it appends.
 */
typedef struct lsm_wal_tail_stats
{
	uint64_t	count;			/* tails discarded */
	uint64_t	log_number;		/* the last one: its log file (NNNNNN.log), */
	uint64_t	offset;			/* the offset of its first byte */
	uint64_t	bytes;			/* and its length */
} lsm_wal_tail_stats;

typedef struct lsm_stats
{
	int			levels;			/* LSM_MAX_LEVELS */
	lsm_level_stats level[LSM_MAX_LEVELS];
	uint64_t	memtable_bytes; /* arena bytes of the active memtable */
	uint64_t	memtable_entries;
	uint64_t	memtable_shared;	/* 1: the active memtable is the store's
									 * shared one (docs/architecture.md);
									 * 0: this handle's own */
	uint64_t	last_sequence;	/* newest sequence this handle's reads see */

	/* counters since open, for this handle */
	uint64_t	gets;			/* lsm_get calls and multi-get keys */
	uint64_t	key_hashes;		/* key hashes computed */
	uint64_t	filter_probes;	/* key filters consulted */
	uint64_t	filter_negatives;	/* ... that said "absent" */
	uint64_t	sstable_reads;	/* SSTables searched past the filter */
	uint64_t	false_positives;	/* ... that did not hold the key */
	uint64_t	memtable_negatives; /* gets the memtable's key filter
									 * answered without a search */
	uint64_t	flushes;
	uint64_t	flush_copied;	/* log records written while a flush of
								 * ours built its table outside the write
								 * lock, copied into the next log */
	uint64_t	compactions;
	uint64_t	ingests;		/* stages committed as level-0 tables */
	uint64_t	user_bytes_written; /* key + value bytes given to lsm_write */
	uint64_t	wal_bytes_written;
	uint64_t	sst_bytes_written;	/* by flushes and compactions */
	uint64_t	refreshes;		/* manifest reloads */
	uint64_t	retries;		/* reads retried after racing a compaction */
	uint64_t	wal_syncs;		/* fdatasyncs of the log for commits */
	uint64_t	wal_syncs_shared;	/* commits another's fdatasync covered
									 * while they waited for it */
	uint64_t	wal_records_replayed;	/* log records this handle applied
										 * to a memtable written by another */
	uint64_t	memtable_rebuilds;	/* shared memtables this handle built
									 * from a log (none, or a writer died
									 * applying) */
	uint64_t	background_errors;	/* automatic flushes and compactions
									 * that failed (LSM_LOG_BACKGROUND) */
	char		last_background_error[512]; /* the last one's message, or
											 * "" */

	lsm_hierarchy_stats hierarchy;
	uint64_t	value_searches; /* value searches opened */
	lsm_search_stats search;	/* their counters, summed (strategy 0) */

	/*
	 * Not a counter of this handle: the tails that writers in any process
	 * cut from the store's logs since its LOCK file was created (kept in
	 * that file); on a handle that cannot map it, those this handle cut or,
	 * read-only, left out.
	 */
	lsm_wal_tail_stats wal_tails;
} lsm_stats;

/* Fills *st.  Level figures are those of the handle's current version. */
int			lsm_get_stats(lsm_db *db, lsm_stats *st);

/* Resets the counters of lsm_stats to zero. */
void		lsm_reset_counters(lsm_db *db);

#ifdef __cplusplus
}
#endif

#endif							/* LSM_H */

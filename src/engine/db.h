/*
 * db.h
 *		The store core (db.c): the open handle's state, and the services the
 *		layers above it use (locks, catch-up, install, the write path, ingest,
 *		background failures).  docs/architecture.md, "Layers", has the stack;
 *		the files of a store directory are named in storedir.h and described
 *		byte by byte in docs/format.md.
 */
#ifndef LSM_DB_H
#define LSM_DB_H

#include <sys/types.h>

#include "hierarchy.h"
#include "memfile.h"
#include "memtable.h"
#include "merge.h"
#include "storedir.h"
#include "version.h"
#include "wal.h"

/* Entries of a batch that lsm_batch_locate locates: a commit's few rows. */
#define LSM_BATCH_HINTS 8

/* A condition of a batch entry (lsm_batch_require). */
typedef struct lsm_batch_cond
{
	uint32_t	entry;			/* its index */
	size_t		off;			/* its offset in rep */
	int			cond;			/* LSM_IF_* */
	bool		drop;			/* LSM_IF_ABSENT_SKIP failed */
	uint64_t	seq;
	uint64_t	hash;
} lsm_batch_cond;

struct lsm_batch
{
	lsm_buf		rep;			/* WAL record form; see batch.c */
	uint32_t	count;
	size_t		user_bytes;
	size_t		last_off;		/* offset of the last entry in rep */
	lsm_batch_cond *conds;		/* in entry order */
	uint32_t	nconds;
	uint32_t	conds_cap;
	int			require;		/* LSM_IF_NOT_PREPARED */
	uint64_t	since;			/* lsm_batch_require_all */
	lsm_conflict conflict;		/* the last LSM_CONFLICT */
	int			rtype;			/* the log record it is (LSM_WAL_*): a
								 * batch, or one of a prepared batch (rep
								 * then holds that record: prepared.c),
								 * whose count is the sequences it takes */
	uint32_t	located;		/* its first entries with a hint */
	lsm_memtable_hint hints[LSM_BATCH_HINTS];
};

/*
 * The key and value length of the entry at offset off of b's record (an
 * offset the batch recorded, so well formed), and the offset of the next
 * entry.
 */
void		lsm_batch_entry(const lsm_batch *b, size_t off,
							const uint8_t **key, size_t *klen, size_t *vlen,
							size_t *next);

/*
 * Removes the entries whose condition has drop set from b (their
 * conditions with them).
 */
void		lsm_batch_drop(lsm_batch *b);

typedef int (*lsm_batch_fn) (void *arg, uint64_t seq, int kind,
							 const uint8_t *key, size_t klen,
							 const uint8_t *val, size_t vlen);

/*
 * Calls fn for every entry of a batch payload (after the WAL header), in
 * order; LSM_CORRUPTION at the first malformed entry (fn has then seen the
 * ones before it), or fn's error.
 */
int			lsm_batch_iterate(const uint8_t *payload, size_t n, lsm_batch_fn fn,
							  void *arg, lsm_err *e);

/*
 * Checks a whole batch payload without applying it: its header (at least
 * one entry, sequences within 1 .. LSM_MAX_SEQUENCE) and every entry, as
 * lsm_batch_iterate would decode them.  LSM_OK or LSM_CORRUPTION.
 */
int			lsm_batch_check(const uint8_t *payload, size_t n, lsm_err *e);

/*
 * The first page of LOCK, mapped shared by every handle (read-only handles
 * map it read-only); a new LOCK is extended to a page of zeros.  Written
 * only by the holder of the write lock.
 */
#define LSM_SHARE_SLOTS 16

typedef struct lsm_lock_page
{
	uint64_t	gen;			/* change generation (db.c) */
	lsm_wal_tail_stats tails;	/* invalid WAL tails writers have cut */

	/*
	 * Group commit ("group commit and visibility" in db.c).  Sequences,
	 * only ever raised while holding the lock named, except that the
	 * first holder of the write lock after a power loss lowers them to
	 * what the store holds.
	 */
	uint64_t	written_seq;	/* last appended (write lock) */
	uint64_t	want_seq;		/* last whose commit asked for a sync (write
								 * lock) */
	uint64_t	synced_seq;		/* everything up to it is durable
								 * (LOCK.sync, or the write lock by a log
								 * switch) */
	uint64_t	visible_seq;	/* everything up to it may be read (as
								 * synced_seq, or the write lock) */
	uint64_t	group_magic;	/* LSM_GROUP_MAGIC once a holder of the
								 * write lock has set the four above */
	uint64_t	group_boot;		/* ... on this boot of the machine */
	uint64_t	group_log_dev;	/* ... for this file as the log */
	uint64_t	group_log_ino;

	/*
	 * The inode of MANIFEST, kept by the holders of the write lock (set
	 * after every switch, and by a holder that loaded it): while the
	 * generation is even it is the current MANIFEST's, or 0 (db.c
	 * load_manifest).
	 */
	uint64_t	manifest_ino;

	/*
	 * Bumped by each release of LOCK.sync, which then wakes every handle
	 * sleeping on it (db.c wait_durable): a wake-up hint only.
	 */
	uint32_t	sync_wake;

	/*
	 * Bumped by the holder of the write lock before each truncation of a
	 * log, so that writers that map the log map it again (db.c
	 * reserve_log).
	 */
	uint64_t	log_cuts;

	/*
	 * CLOCK_MONOTONIC nanoseconds of the last lsm_compaction_claim that
	 * succeeded, 0 once a compaction has begun since (compaction.c).
	 */
	uint64_t	compact_claim;

	/*
	 * Waiters for the write lock sleep on lock_wake, counted in
	 * lock_sleepers; a release that sees sleepers bumps it and wakes one
	 * (db.c lsm_db_lock).  Hints only: the flock decides.
	 */
	uint32_t	lock_wake;
	uint32_t	lock_sleepers;
	uint32_t	lock_woken;		/* 1 from a wake until a sleeper returns */
	uint32_t	lock_futile;	/* log2 of releases per wake (db.c) */

	/*
	 * The number of the table a flush outside the write lock is writing,
	 * stored before the file is created, while holding LOCK.flush: the
	 * orphan sweep keeps it (lsm_db_remove_obsolete).
	 */
	uint64_t	flush_number;

	/*
	 * CLOCK_MONOTONIC nanoseconds of the last lsm_flush_claim that
	 * succeeded, 0 once a flush outside the write lock has begun since.
	 */
	uint64_t	flush_claim;

	/*
	 * Processes that shared a view of the store with others (lsm_share):
	 * while a slot names a live process of this boot, nothing that a view
	 * may name is removed (db.c "shared views").  Taken and cleared with
	 * atomic operations, without the write lock.
	 */
	uint64_t	shares[LSM_SHARE_SLOTS];	/* boot << 32 | pid; 0: free */

	/*
	 * CLOCK_MONOTONIC nanoseconds of the last poll of a process waiting for
	 * LOCK.compact (lsm_compact, lsm_lock with LSM_LOCK_COMPACTION).  An
	 * flock has no queue: automatic compactions, which only try the lock,
	 * took it again in every gap of a waiter's polls and starved it.  While
	 * this is younger than LSM_COMPACT_WANTED_MS they neither start nor
	 * take another step (lsm_db_compact_wanted); a waiter that died or got
	 * the lock ages out by itself.
	 */
	uint64_t	compact_wanted;
} lsm_lock_page;

#define LSM_COMPACT_WANTED_MS 50

#define LSM_GROUP_MAGIC UINT64_C(0x4c534d47524f5550)

struct lsm_db
{
	char	   *dir;
	lsm_options opt;
	lsm_err		err;

	int			lock_fd;		/* LOCK */
	int			compact_fd;		/* LOCK.compact, opened on first use */
	int			sync_fd;		/* LOCK.sync, opened on first use */
	int			flush_fd;		/* LOCK.flush, opened on first use */
	bool		write_locked;
	uint32_t	lock_releases;	/* of LOCK, that saw sleepers (release_lock) */
	bool		user_locked;	/* lsm_lock: held until lsm_unlock */
	bool		user_compact_locked;	/* ... with LOCK.compact too */
	bool		compact_due;	/* a flush or ingest made a compaction
								 * due: lsm_db_compact_if_due */
	bool		lock_held;		/* the flock itself (exclusive: always) */
	lsm_lock_page *page;		/* LOCK's first page, or NULL */
	uint64_t	seen_gen;		/* generation of our last full catch-up,
								 * if it left the log whole; else 1 */

	int			manifest_fd;	/* pins the inode of the loaded manifest */
	ino_t		manifest_ino;
	lsm_version *current;

	lsm_memtable *mem;			/* writes after current->last_seq */
	lsm_memfile_header *mhdr;	/* mem is the store's shared memtable of
								 * log_number, in the file of this header;
								 * NULL: mem is this handle's own */
	uint64_t	mem_failed;		/* log whose shared memtable this handle
								 * could not set up (not tried again), or,
								 * exclusive, did not (flush_install) */
	uint64_t	log_checked;	/* log this handle has read back whole
								 * (check_log) */
	size_t		mem_need;		/* a flush gives the next shared memtable
								 * room for this many bytes of batch */
	uint64_t	log_number;		/* the WAL mem was replayed from */
	int			log_fd;
	uint64_t	log_dev;		/* log_fd's file, as fstat says */
	uint64_t	log_ino;
	uint64_t	log_off;		/* replayed up to here */
	uint64_t	log_size;		/* where the log's contents end (records,
								 * then a tail if any), as last seen */
	uint64_t	log_alloc;		/* the log file is at least this long
								 * (preallocated zeros); 0: unknown */
	uint8_t    *log_map;		/* writable mapping of [0, log_map_len) of
								 * log_fd, appends go through; or NULL */
	size_t		log_map_len;	/* <= log_alloc */
	uint64_t	log_cuts;		/* the page's log_cuts it was mapped under */
	size_t		log_prefaulted; /* prefault() got this far in log_map */

	/* lsm_get_stats' walk of the value filter hierarchy, kept per tree */
	const void *shape_root;		/* the hroot it is of ... */
	uint64_t	shape_seq;		/* ... in the version of this manifest_seq */
	lsm_hier_shape shape;
	bool		log_whole;		/* the log ends at log_off: the last replay
								 * found nothing after it (or cut it), and
								 * we appended only whole records since */
	uint64_t	last_seq;		/* newest sequence this handle has seen */
	uint64_t	read_seq;		/* newest its reads see (<= last_seq) */
	uint64_t	acked_seq;		/* newest of its own commits made durable */
	uint64_t	wait_seq;		/* a deferred commit waits for this one to
								 * be durable (lsm_write_wait); 0: none */
	uint64_t	wait_last;		/* ... and is then acknowledged up to here */
	uint64_t	wait_log;		/* ... and appended to this log */
	lsm_wal_tail_stats tails;	/* the tails this handle cut or left out */

	lsm_batch  *one;			/* reused by lsm_put and lsm_delete */
	int			open_iters;
	int			open_stages;
	lsm_buf		compact_ptr[LSM_MAX_LEVELS];	/* round-robin per level */
	lsm_stats	ctr;			/* counters part of lsm_stats */
	lsm_flat   *flat;			/* flat value filter layout, built on demand */

	int			share_slot;		/* LOCK page slot of our shared views */
	int			shares;			/* ... and how many hold it (lsm_share) */

	struct lsm_prepared_keys *prepared;	/* keys of the undecided prepared
										 * batches (prepared.c), or NULL */
};

/* Copies an internal error into the handle; returns its code. */
int			lsm_db_fail(lsm_db *db, int rc, const lsm_err *e);

/*
 * Brings the handle up to date with the store: reloads the manifest if it
 * changed and replays new WAL records.  With the write lock held, also cuts
 * a torn WAL tail.
 */
int			lsm_db_catch_up(lsm_db *db, lsm_err *e);

/* Takes / releases a flock with a bounded, interruptible wait. */
int			lsm_db_lock(lsm_db *db, int fd, const char *name, lsm_err *e);

/* The write lock, with catch-up on acquisition. */
int			lsm_db_write_lock(lsm_db *db, lsm_err *e);
void		lsm_db_write_unlock(lsm_db *db);

/*
 * Whether a process other than a dead one has a shared view of the store
 * pinned (lsm_share): then no file is removed.  Clears the slots of dead
 * processes.  REQUIRES: the write lock (its flock).
 */
bool		lsm_db_views_pinned(lsm_db *db);

/*
 * Installs a new version under the write lock: opens its new tables, writes
 * the manifest and swaps it in.  v's manifest_seq is set here.  If the
 * manifest was renamed into place but a later step failed, v is still
 * installed (db->current == v) and the error returned.
 */
int			lsm_db_install(lsm_db *db, lsm_version *v, lsm_err *e);

/* Gives a new table the store's value filter parameters. */
int			lsm_db_value_params(lsm_db *db, lsm_table_builder *b, lsm_err *e);

/*
 * A builder of a new table of the store, with its options and value filter
 * parameters, under the first free number from *number on (which gets
 * it); with publish, each number is stored in LOCK's page before its file
 * is created (a flush outside the write lock, whose table the orphan sweep
 * must keep).  *b is NULL on failure.
 */
int			lsm_db_new_table(lsm_db *db, uint64_t *number, bool publish,
							 lsm_table_builder **b, lsm_err *e);

/*
 * Installs the sorted runs of a stage (stage.c), newer than everything in
 * the store: takes the write lock, catches up, renames table i (file
 * stage_dir/<tables[i].number>.sst, fsynced), which belongs to run
 * run_of[i] (0 .. nruns - 1, oldest first; the tables of one run are
 * disjoint), into the store under a new number with global sequence
 * last + 1 + run_of[i], flushes the memtable and switches in one manifest
 * naming all of them.  Each table goes to the deepest level whose tables,
 * and those of every level above, are disjoint from it (an ascending load
 * lands where compaction would have put it, without a rewrite), or to
 * level 0 when another process is compacting.  With replace (a truncating
 * stage; n may be 0) the same switch drops every table of the store and
 * its memtable instead of flushing it, after waiting for LOCK.compact, and
 * the dropped files are removed.  tables[] is not changed.  On failure nothing is
 * installed (the tables moved into the store are moved back to stage_dir,
 * or removed if that fails) unless *installed says the manifest was
 * switched in before a later step failed.  Compacts afterwards as a flush
 * would.
 *
 * With owner (nonzero), the tables are owner's prepared tables (prepared.c),
 * in the store directory under their numbers already (stage_dir is NULL):
 * LSM_NOTFOUND if owner has no undecided prepared tables once the lock is
 * held, and the switch that installs them drops them from the prepared
 * writes (it is their commit).
 */
int			lsm_db_ingest(lsm_db *db, const char *stage_dir,
						  const lsm_table_meta *tables, const int *run_of,
						  int n, int nruns, bool replace, uint64_t owner,
						  bool *installed, lsm_err *e);

/*
 * The moves of lsm_db_ingest, for prepared.c: lsm_db_move_in makes files[i]
 * (a new file with tables[i]'s meta) for each table and moves it from
 * stage_dir (NULL: it is in the store) into the store under a number nobody
 * uses, its files[i]->meta.number; *moved counts the moves (files[] holds
 * what it made, even on failure: the caller unrefs them).
 * lsm_db_move_back moves the first moved back.  REQUIRES: the write lock.
 */
int			lsm_db_move_in(lsm_db *db, const char *stage_dir,
						   const lsm_table_meta *tables, int n,
						   lsm_file **files, int *moved, lsm_err *e);
void		lsm_db_move_back(lsm_db *db, const char *stage_dir,
							 const lsm_table_meta *tables, lsm_file **files,
							 int moved);

/* Removes table file number of the store (gone already is fine). */
void		lsm_db_remove_table(lsm_db *db, uint64_t number);

/*
 * Records a claim in *slot, a word of LOCK's page holding the
 * CLOCK_MONOTONIC nanoseconds of the last one, unless one younger than
 * ttl_ms stands (lsm_compaction_claim, lsm_flush_claim).
 */
bool		lsm_db_claim(uint64_t *slot, int ttl_ms);

/*
 * Takes the store's lock file name (LOCK.compact, LOCK.flush), waiting
 * (bounded, as lsm_db_lock) or not (LSM_BUSY if another process holds it),
 * opening it into *fd on first use; lsm_env_unlock(*fd) releases it.
 */
int			lsm_db_side_lock(lsm_db *db, int *fd, const char *name, bool wait,
							 lsm_err *e);

/*
 * Whether another handle holds the side lock *fd (name): LSM_BUSY if so,
 * LSM_OK if it is free (a try that succeeded is undone), or the error of
 * opening it.
 */
int			lsm_db_side_lock_probe(lsm_db *db, int *fd, const char *name);

/*
 * Takes LOCK.compact (lsm_db_side_lock): levels >= 1 change only under
 * it.
 */
int			lsm_db_compact_lock(lsm_db *db, bool wait, lsm_err *e);

/*
 * Removes the table, log, node and shared memtable files of the store
 * directory that neither v nor an undecided prepared write names, except
 * the table of a flush under way (LOCK.flush held by another handle), and
 * not while a shared view is pinned; returns how many it found.  With
 * dry_run it only counts them, and removes the staging directories of dead
 * processes.  REQUIRES for removal: the write lock and LOCK.compact.
 */
int			lsm_db_remove_obsolete(lsm_db *db, const lsm_version *v,
								   bool dry_run);

/*
 * Computes the value filter hierarchy of v (levels final) from base's
 * tree, opening the tables it needs.  Writes node files numbered from
 * *next_file up, which is advanced past them.  REQUIRES: LOCK.compact.
 */
int			lsm_db_update_tree(lsm_db *db, lsm_version *v,
							   const lsm_hnode *base, uint64_t *next_file,
							   lsm_err *e);

/*
 * Waits until every record the handle has seen is durable (another
 * process's too, left unsynced by a writer that died), which makes them
 * visible.  Not under the write lock.
 */
int			lsm_db_sync_seen(lsm_db *db, lsm_err *e);

/* The write path of lsm_write_opt with sync resolved (true: fdatasync). */
int			lsm_db_write(lsm_db *db, lsm_batch *b, bool sync, bool defer,
						 lsm_err *e);

/*
 * The version (its tables open), the memtable (NULL: none) and the read
 * sequence of a shared view (lsm_share), each with a reference for the
 * caller.
 */
int			lsm_db_open_view(lsm_db *db, const void *view, size_t len,
							 lsm_version **v, lsm_memtable **mt,
							 uint64_t *snap, lsm_err *e);

/* Tells the log callback (if any) of an event; see lsm_log_fn. */
void		lsm_db_log(lsm_db *db, int level, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Is the interrupt callback asking to stop? */
bool		lsm_db_interrupted(lsm_db *db);

/*
 * An automatic flush or compaction that failed although the call that ran
 * it succeeds: counted with its message in lsm_stats and told to the log
 * callback (LSM_LOG_BACKGROUND), as LevelDB keeps bg_error_ (a cancel is
 * not counted).  It is tried again by a later write.
 */
void		lsm_db_background_failed(lsm_db *db, const char *what,
									 const lsm_err *e);

/*
 * Is a process waiting for LOCK.compact (lsm_lock_page.compact_wanted)?
 * Automatic compactions then leave the lock to it.
 */
bool		lsm_db_compact_wanted(lsm_db *db);

/* Whether write flags (LSM_WRITE_*) ask for a sync; -1: unknown flags. */
int			lsm_db_sync_of(const lsm_db *db, int flags);

/*
 * The user lock of lsm_lock_batch and lsm_unlock (write.c), without the
 * compaction lsm_unlock runs afterwards.
 */
int			lsm_db_user_lock(lsm_db *db, int flags, lsm_batch *b);
void		lsm_db_user_unlock(lsm_db *db);


#endif							/* LSM_DB_H */

/*
 * db.c
 *		The lsm_* API: open and recovery, the multi-process protocol, writes,
 *		flushes, point lookups, verification and statistics.
 *
 * Multi-process protocol (docs/architecture.md has the long form):
 *	- A writer takes an exclusive flock on LOCK, catches up (reloads the
 *	  manifest if it changed, maps the log's shared memtable, cuts a torn
 *	  tail), appends its batch as one WAL record, applies it to the shared
 *	  memtable and publishes how far of the log it holds, flushes if the
 *	  memtable is full, and unlocks.
 *	- A reader takes no lock.  lsm_refresh notices a new manifest by the
 *	  inode of MANIFEST, maps the new log's shared memtable and reads it up
 *	  to the published position.  A handle without a valid shared memtable
 *	  replays complete WAL records past the offset it has seen into one of
 *	  its own, and a writer then builds the shared one.  A reader that finds
 *	  a file gone (a flush or compaction removed it) reloads the manifest
 *	  and retries.
 *	- Compaction (compaction.c) holds LOCK.compact while it merges, and LOCK
 *	  only while it installs its result.
 *
 * Change generation: the first 8 bytes of LOCK, mapped shared by every
 * handle, count write-lock tenures: a holder makes the count odd when it
 * takes the lock and even when it releases it.  A handle that last caught up
 * at an even generation that is still current knows that nobody has held
 * the write lock since, so the manifest and the WAL are as it left them and
 * it skips the stat() calls of a catch-up (lsm_refresh then makes no system
 * call at all).  A holder that died leaves the count odd, which forces the
 * full check on everyone until the next holder evens it.  The count is only
 * ever a hint that something may have changed, never a substitute for
 * reading the manifest and the WAL.  The rest of LOCK's page records the
 * invalid WAL tails writers have cut (lsm_stats.wal_tails).
 *
 * Group commit and visibility: a commit appends its record under the write
 * lock and syncs after releasing it; one fdatasync, by whichever waiter
 * takes LOCK.sync first (the leader), covers every record appended before
 * it.  LOCK's page holds written_seq, want_seq (the last record whose
 * commit asked for a sync), synced_seq and visible_seq: up to where every
 * record is durable, or was committed without sync with no record before
 * it waiting for a sync.  A handle's reads see the memtable only up to its
 * read_seq (visible_seq, or more for its own commits), so no other handle
 * sees a synced commit before it is durable.  The holder of
 * the write lock (lsm_lock, for a commit's checks) sees everything.  docs/architecture.md ("Group commit and visibility") has the
 * argument and the crash cases.
 *
 * Invalid WAL tails: a crash in the middle of an append (or damage to the
 * last record) leaves bytes after the last complete, valid record.  Every
 * handle replays up to them and ignores them; the first handle that finds
 * them while holding the write lock cuts them off, and reports the cut,
 * before anything is appended (invariants 7 and 10).  A handle that may
 * write and finds them outside the lock takes the lock at once if it is
 * free, so a store is repaired by the open that finds it damaged.
 *
 * Crash-safety invariants (numbered as in docs/architecture.md):
 *	(1) An SSTable is fsynced before any manifest names it; its directory
 *		entry is fsynced with the manifest switch that adds it.
 *	(2) A manifest is fsynced under a temporary name before it is renamed
 *		to MANIFEST.
 *	(3) The directory is fsynced after the rename, before anything relies
 *		on the new manifest (deleting the old WAL or compaction inputs).
 *	(4) A new WAL file exists and its directory entry is durable before a
 *		manifest names it.
 *	(5) A WAL is deleted only after a durable manifest has moved past it,
 *		and compaction inputs only after a durable manifest dropped them.
 *	(6) A batch is one WAL record with a checksum; recovery applies whole
 *		records only, in sequence order, and stops at the first bad one.
 *	(7) A record is appended only right after the last complete, valid
 *		record of the log.  A failed append is cut off before the lock is
 *		released; an invalid tail (a torn or damaged last record and what
 *		follows it) is cut, and the cut fsynced, by the first handle that
 *		finds it while holding the write lock, before it appends.
 *	(8) An ingest's tables are fsynced in their staging directory, renamed
 *		into the store directory (never over an existing name) only under
 *		the write lock, and that directory is fsynced before the one
 *		manifest switch, or the one prepared record (type 5), that names
 *		them all; a table moved in but never named is moved back, or swept
 *		as an orphan after a crash.  The sweep keeps the tables that an
 *		undecided prepared record names.
 *	(9) A staging directory is removed by another process only when that
 *		process can take the flock of its LOCK file (which its owner took
 *		before the file got its name and holds until commit or abort), or,
 *		if it has no LOCK yet, when the process named in it is dead.
 *	(10) A handle skips a catch-up (change generation) only if its last full
 *		catch-up left nothing after its position in the log, and it has
 *		appended only whole records since (log_whole): a handle that has
 *		seen bytes after its position, or whose failed append could not be
 *		cut off, never records the generation as seen.  So whoever holds
 *		the write lock next does the full catch-up, which finds the tail
 *		and cuts it (7).
 *	(11) A shared memtable file is read only if it was built on this boot
 *		for this very log file and not replaced (memfile_valid); its writer
 *		publishes a batch's sequence, then its end offset, only after the
 *		whole batch is in (publish_memfile), and a file whose writer died
 *		applying (apply_to != applied_off) is rebuilt from the log, never
 *		repaired in place (rebuild_memfile).
 *	(12) A flush writes the undecided prepared batches of its memtable
 *		into the new log, and syncs it, before the manifest switch that
 *		drops the old log (prepared.c): the current log always holds every
 *		undecided batch, and a decided one is never decided again.
 *	(13) A flush outside the write lock (flush_outside) syncs the current
 *		log, then copies its records after the table's last sequence into
 *		the new log and syncs that, all under the write lock, before the
 *		manifest switch: the table and the new log hold every record of the
 *		old once, and a copy left by a crash begins at or below the old
 *		log's last sequence (check_directory).  Its table's number is in
 *		LOCK's page before the file exists, and the sweep keeps that table
 *		while LOCK.flush is held (lsm_db_remove_obsolete).
 *	(14) While a pin slot of LOCK's page names a live process of this boot,
 *		no table, log or shared memtable is removed (lsm_db_views_pinned,
 *		asked under the flock of LOCK by every removal); lsm_share takes its
 *		slot, then the flock, then checks its view's files: so they stay
 *		until lsm_unshare (architecture.md, "Shared views").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "env.h"
#include "memfile.h"
#include "prepared.h"

#define MAX_OPEN_RETRIES 100

static __thread lsm_err open_err;

static int	catch_up_full(lsm_db *db, bool trust_page, lsm_err *e);
static uint64_t page_load(const uint64_t *p);
static int	catch_up_memtable(lsm_db *db, lsm_err *e);
static int	write_lock(lsm_db *db, bool wait, lsm_batch *b, lsm_err *e);
static void settle_tail(lsm_db *db, uint64_t g);
static int	verify_log(lsm_db *db, lsm_err *e);
static int	check_directory(lsm_db *db, bool report, lsm_err *e);
static void release_lock(lsm_db *db);
static void lock_wake_outcome(lsm_lock_page *pg, bool taken);
static uint32_t lock_wake_mask(lsm_lock_page *pg);
static void set_read_seq(lsm_db *db);
static void settle_page(lsm_db *db);
static void note_log_file(lsm_db *db);
static int	write_wait(lsm_db *db, lsm_err *e);

/* ---------- options, errors ---------- */

void
lsm_options_init(lsm_options *o)
{
	memset(o, 0, sizeof(*o));
	o->memtable_bytes = 16 << 20;
	o->file_bytes = 2 << 20;
	o->level_ratio = 10;
	o->key_bits_per_key = 10;
	o->value_filter_bits = 1 << 21;
	o->value_filter_hashes = 3;
	o->hierarchy_order = 3;
	o->sync = 0;
	o->l0_compaction_trigger = 4;
	o->auto_compact = 1;
	o->block_bytes = 4096;
	o->lock_timeout_ms = 10000;
	o->create_if_missing = 1;
}

const char *
lsm_errmsg(const lsm_db *db)
{
	return db ? db->err.msg : open_err.msg;
}

int
lsm_errno(const lsm_db *db)
{
	return db ? db->err.saved_errno : open_err.saved_errno;
}

int
lsm_db_fail(lsm_db *db, int rc, const lsm_err *e)
{
	if (rc == LSM_OK || rc == LSM_NOTFOUND)
		return rc;
	if (e != &db->err)
	{
		if (e && e->rc == rc)
			db->err = *e;
		else
			lsm_err_set(&db->err, rc, "%s", lsm_strerror(rc));
	}
	return rc;
}

void
lsm_db_log(lsm_db *db, int level, const char *fmt,...)
{
	char		msg[LSM_ERRMSG_SIZE + 4096];
	va_list		ap;

	if (db->opt.log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	db->opt.log(db->opt.log_arg, level, msg);
}

void
lsm_db_background_failed(lsm_db *db, const char *what, const lsm_err *e)
{
	/* a cancel is the caller's to report, and nothing went wrong */
	if (e->rc == LSM_INTERRUPTED || e->rc == LSM_OK)
		return;
	db->ctr.background_errors++;
	snprintf(db->ctr.last_background_error,
			 sizeof(db->ctr.last_background_error), "automatic %s: %.480s", what,
			 e->msg);
	lsm_db_log(db, LSM_LOG_BACKGROUND,
			   "automatic %s of store \"%s\" failed (it is tried again later): %s",
			   what, db->dir, e->msg);
}

int
lsm_db_sync_of(const lsm_db *db, int flags)
{
	int			how = flags & ~LSM_WRITE_DEFER;

	if (how == LSM_WRITE_DEFAULT)
		return db->opt.sync != 0;
	if (how == LSM_WRITE_SYNC || how == LSM_WRITE_NOSYNC)
		return how == LSM_WRITE_SYNC;
	return -1;
}

bool
lsm_db_interrupted(lsm_db *db)
{
	return db->opt.interrupt != NULL && db->opt.interrupt(db->opt.interrupt_arg);
}

static int
check_options(const lsm_options *o, lsm_err *e)
{
	if (o->memtable_bytes < 4096 || o->memtable_bytes > ((size_t) 1 << 34))
		return lsm_err_set(e, LSM_INVALID, "memtable_bytes must be between 4 KiB and 16 GiB");
	if (o->file_bytes < 4096 || o->file_bytes > ((size_t) 1 << 34))
		return lsm_err_set(e, LSM_INVALID, "file_bytes must be between 4 KiB and 16 GiB");
	if (o->level_ratio < 2 || o->level_ratio > 1000)
		return lsm_err_set(e, LSM_INVALID, "level_ratio must be between 2 and 1000");
	if (o->key_bits_per_key < 0 || o->key_bits_per_key > 64)
		return lsm_err_set(e, LSM_INVALID, "key_bits_per_key must be between 0 and 64");
	/* the bounds the manifest reader holds stored parameters to (vfilter.h) */
	if (o->value_filter_hashes < 0 ||
		o->value_filter_hashes > LSM_VFILTER_MAX_HASHES)
		return lsm_err_set(e, LSM_INVALID, "value_filter_hashes must be between 0 and %d",
						   LSM_VFILTER_MAX_HASHES);
	if (o->value_filter_bits > LSM_VFILTER_MAX_BITS)
		return lsm_err_set(e, LSM_INVALID, "value_filter_bits must be at most 2^30");
	if (o->value_search < LSM_SEARCH_AUTO || o->value_search > LSM_SEARCH_SCAN)
		return lsm_err_set(e, LSM_INVALID, "value_search must be one of the LSM_SEARCH_* strategies");
	if (o->hierarchy_order < 0 || o->hierarchy_order > LSM_HIER_MAX_ORDER)
		return lsm_err_set(e, LSM_INVALID, "hierarchy_order must be between 0 and %d",
						   LSM_HIER_MAX_ORDER);
	if (o->l0_compaction_trigger < 1 || o->l0_compaction_trigger > 1000)
		return lsm_err_set(e, LSM_INVALID, "l0_compaction_trigger must be between 1 and 1000");
	if (o->block_bytes < 256 || o->block_bytes > (1 << 24))
		return lsm_err_set(e, LSM_INVALID, "block_bytes must be between 256 and 16 MiB");
	if (o->lock_timeout_ms < 0)
		return lsm_err_set(e, LSM_INVALID, "lock_timeout_ms must not be negative");
	return LSM_OK;
}

/* db->dir/name into buf (LSM_PATH_MAX bytes): it fits (LSM_DIR_MAX). */
static void
path_of(const lsm_db *db, const char *name, char *buf, size_t n)
{
	(void) lsm_dir_path(buf, n, db->dir, name, NULL);
}

/* ---------- locking ---------- */

int
lsm_db_side_lock(lsm_db *db, int *fd, const char *name, bool wait,
				 lsm_err *e)
{
	char		path[4096];
	int			rc;

	if (db->opt.read_only)
		return lsm_err_set(e, LSM_INVALID, "store was opened read-only");
	if (*fd < 0)
	{
		path_of(db, name, path, sizeof(path));
		rc = lsm_env_open(path, O_RDWR | O_CREAT, 0644, fd, e);
		if (rc != LSM_OK)
			return rc;
	}
	return wait ? lsm_db_lock(db, *fd, name, e) :
		lsm_env_trylock(*fd, name, e);
}

int
lsm_db_side_lock_probe(lsm_db *db, int *fd, const char *name)
{
	lsm_err		e;
	int			rc;

	lsm_err_clear(&e);
	rc = lsm_db_side_lock(db, fd, name, false, &e);
	if (rc == LSM_OK)
		lsm_env_unlock(*fd);
	return rc;
}

/* CLOCK_MONOTONIC, in nanoseconds. */
static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
}

bool
lsm_db_compact_wanted(lsm_db *db)
{
	uint64_t	stamp,
				now;

	if (db->page == NULL)
		return false;
	stamp = __atomic_load_n(&db->page->compact_wanted, __ATOMIC_SEQ_CST);
	now = now_ns();
	/* one from a clock that ran ahead of ours (another boot) is stale */
	return stamp != 0 && stamp <= now &&
		now - stamp < (uint64_t) LSM_COMPACT_WANTED_MS * 1000000;
}

int
lsm_db_lock(lsm_db *db, int fd, const char *name, lsm_err *e)
{
	struct timespec start,
				now;
	long		sleep_us = 50;
	lsm_lock_page *pg = fd == db->lock_fd ? db->page : NULL;
	bool		woken = false;
	int			rc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	rc = lsm_env_trylock(fd, name, e);
	for (;;)
	{
		long		waited_ms;

		if (rc != LSM_BUSY)
			return rc;
		if (lsm_db_interrupted(db))
			return lsm_err_set(e, LSM_INTERRUPTED, "wait for lock \"%s\" interrupted", name);
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited_ms = (now.tv_sec - start.tv_sec) * 1000 +
			(now.tv_nsec - start.tv_nsec) / 1000000;
		if (waited_ms >= db->opt.lock_timeout_ms)
			return lsm_err_set(e, LSM_BUSY, "could not lock \"%s\" within %d ms",
							   name, db->opt.lock_timeout_ms);
		/* automatic compactions leave LOCK.compact to a waiter */
		if (fd == db->compact_fd && db->page)
			__atomic_store_n(&db->page->compact_wanted, now_ns(),
							 __ATOMIC_SEQ_CST);
		if (pg)
		{
			/*
			 * Counted before the try, so that a release after it wakes us
			 * ("lock waits" in docs/architecture.md).
			 */
			uint32_t	wake;

			__atomic_add_fetch(&pg->lock_sleepers, 1, __ATOMIC_SEQ_CST);
			wake = __atomic_load_n(&pg->lock_wake, __ATOMIC_SEQ_CST);
			rc = lsm_env_trylock(fd, name, e);
			if (woken)
				lock_wake_outcome(pg, rc != LSM_BUSY);
			woken = false;
			if (rc == LSM_BUSY)
			{
				lsm_env_wait(&pg->lock_wake, wake, sleep_us);
				woken = __atomic_load_n(&pg->lock_wake, __ATOMIC_SEQ_CST) != wake;
				__atomic_store_n(&pg->lock_woken, 0, __ATOMIC_SEQ_CST);
			}
			__atomic_sub_fetch(&pg->lock_sleepers, 1, __ATOMIC_SEQ_CST);
		}
		else
		{
			usleep(sleep_us);
			rc = lsm_env_trylock(fd, name, e);
		}
		/*
		 * Polling at most every 6.4 ms: shorter sleeps wake the waiters
		 * more often, which with 8 writers on 2 cores took CPU from the
		 * holder (writers_bench, 8 processes without sync: 60k commits/s
		 * with 1 ms against 80k).
		 */
		if (sleep_us < 5000)
			sleep_us *= 2;
	}
}

/* lock_futile's bound: at least one wake-up per 1024 releases */
#define LOCK_FUTILE_MAX 10

/*
 * A waiter woken at a release of LOCK got the lock (taken) or found it
 * taken again.  Each wake-up that came too late doubles how many releases
 * pass between wake-ups (up to 1024), and one in time restores a wake-up at
 * every release: a releaser that takes the lock again at once (a loop of
 * commits) then pays for few futile wake-ups, while waiters that find the
 * lock free keep being woken.
 */
static void
lock_wake_outcome(lsm_lock_page *pg, bool taken)
{
	uint32_t	futile = __atomic_load_n(&pg->lock_futile, __ATOMIC_RELAXED);

	if (taken && futile != 0)
		__atomic_store_n(&pg->lock_futile, 0, __ATOMIC_RELAXED);
	else if (!taken && futile < LOCK_FUTILE_MAX)
		__atomic_store_n(&pg->lock_futile, futile + 1, __ATOMIC_RELAXED);
}

/* Releases (that saw sleepers) between wake-ups, minus one: 2^futile - 1. */
static uint32_t
lock_wake_mask(lsm_lock_page *pg)
{
	uint32_t	futile = __atomic_load_n(&pg->lock_futile, __ATOMIC_RELAXED);

	/* the page is shared memory: never shift by what it says unchecked */
	return (UINT32_C(1) << (futile < LOCK_FUTILE_MAX ? futile : LOCK_FUTILE_MAX)) - 1;
}

/*
 * The page faults of a commit's writes, taken before the write lock rather
 * than under it, where every other writer waits for them ("page faults
 * before the lock" in docs/architecture.md): the shared memtable's pages
 * its backing has blocks for, and the log's pages from the one our
 * position is in to LOG_PREFAULT past it, if we append through a mapping.
 * A memtable or log a flush has replaced since is prefaulted in vain, once.
 */
#define LOG_PREFAULT (32 << 10)

static void
prefault(lsm_db *db)
{
	size_t		from,
				to;

	if (db->mhdr)
		lsm_memtable_prefault(db->mem);
	if (db->log_map == NULL || db->page == NULL ||
		db->log_off + 4096 <= db->log_prefaulted ||
		page_load(&db->page->log_cuts) != db->log_cuts)
		return;
	from = (size_t) db->log_off & ~(size_t) 4095;
	if (from < db->log_prefaulted)
		from = db->log_prefaulted;
	to = ((size_t) db->log_off & ~(size_t) 4095) + LOG_PREFAULT;
	if (to > db->log_map_len)
		to = db->log_map_len & ~(size_t) 4095;
	if (to <= from)
		return;
	lsm_env_prefault(db->log_map + from, to - from);
	db->log_prefaulted = to;
}

int
lsm_db_write_lock(lsm_db *db, lsm_err *e)
{
	return write_lock(db, true, NULL, e);
}

/*
 * lsm_db_write_lock, waiting for the lock (bounded) or, without wait,
 * LSM_BUSY at once if another handle holds it.  If b is given and another
 * handle holds the lock, b's entries are placed in the memtable
 * (lsm_batch_locate) before the wait; a free lock is taken at once, since
 * no one waits for a holder then.
 */
static int
write_lock(lsm_db *db, bool wait, lsm_batch *b, lsm_err *e)
{
	int			rc;

	if (db->opt.read_only)
		return lsm_err_set(e, LSM_INVALID, "store was opened read-only");

	/*
	 * Under lsm_lock the handle caught up when it took the lock and no one
	 * else changed the store since; only a failed append or apply of ours
	 * (log_whole false) leaves something for a catch-up to repair.
	 */
	if (db->write_locked && db->log_whole && db->mhdr)
		return LSM_OK;
	if (!db->lock_held)
	{
		prefault(db);
		rc = lsm_env_trylock(db->lock_fd, "LOCK", e);
		if (rc == LSM_BUSY && wait)
		{
			if (b != NULL)
				lsm_batch_locate(db, b);
			rc = lsm_db_lock(db, db->lock_fd, "LOCK", e);
		}
		if (rc != LSM_OK)
			return rc;
		db->lock_held = true;
	}
	db->write_locked = true;
	rc = lsm_db_catch_up(db, e);
	/*
	 * A handle without the shared memtable (after a reboot, or one that
	 * replayed what a dead writer left): the full catch-up under the lock
	 * maps the file, or builds it.
	 */
	if (rc == LSM_OK && db->mhdr == NULL && db->mem_failed != db->log_number)
	{
		db->seen_gen = 1;
		rc = lsm_db_catch_up(db, e);
	}
	if (rc != LSM_OK)
	{
		lsm_db_write_unlock(db);
		return rc;
	}
	if (db->page)
	{
		/* odd while we hold the lock (a dead holder may have left it odd) */
		uint64_t	g = __atomic_load_n(&db->page->gen, __ATOMIC_SEQ_CST);

		__atomic_store_n(&db->page->gen, (g | 1) + 2, __ATOMIC_SEQ_CST);
		settle_page(db);
	}
	return LSM_OK;
}

int
lsm_db_user_lock(lsm_db *db, int flags, lsm_batch *b)
{
	lsm_err		e;
	int			rc = LSM_OK;

	if (db == NULL || (flags & ~LSM_LOCK_COMPACTION) != 0)
		return LSM_INVALID;
	if (db->user_locked)
		return LSM_OK;
	lsm_err_clear(&e);
	/* the order compaction uses: LOCK.compact, then LOCK */
	if (flags & LSM_LOCK_COMPACTION)
		rc = lsm_db_compact_lock(db, true, &e);
	if (rc == LSM_OK)
	{
		rc = write_lock(db, true, b, &e);
		if (rc == LSM_OK)
		{
			db->user_locked = true;
			db->user_compact_locked = (flags & LSM_LOCK_COMPACTION) != 0;
		}
		else if (flags & LSM_LOCK_COMPACTION)
			lsm_env_unlock(db->compact_fd);
	}
	return lsm_db_fail(db, rc, &e);
}

void
lsm_db_user_unlock(lsm_db *db)
{
	if (db == NULL || !db->user_locked)
		return;
	db->user_locked = false;
	lsm_db_write_unlock(db);
	if (db->user_compact_locked)
		lsm_env_unlock(db->compact_fd);
	db->user_compact_locked = false;
}

void
lsm_db_write_unlock(lsm_db *db)
{
	if (!db->write_locked || db->user_locked)
		return;
	if (db->page)
	{
		uint64_t	g = __atomic_load_n(&db->page->gen, __ATOMIC_SEQ_CST);

		if (g & 1)
		{
			/*
			 * Everything we changed is in the files we caught up with; if a
			 * failed append left bytes after our position, the next
			 * catch-up must not skip them (invariant 10).
			 */
			__atomic_store_n(&db->page->gen, g + 1, __ATOMIC_SEQ_CST);
			db->seen_gen = db->log_whole ? g + 1 : 1;
		}
	}
	db->write_locked = false;
	if (!db->opt.exclusive)
		release_lock(db);
	set_read_seq(db);
}

/* Drops the flock on LOCK if we hold it. */
static void
release_lock(lsm_db *db)
{
	if (!db->lock_held)
		return;
	lsm_env_unlock(db->lock_fd);
	db->lock_held = false;
	if (db->page &&
		__atomic_load_n(&db->page->lock_sleepers, __ATOMIC_SEQ_CST) > 0 &&
		(++db->lock_releases & lock_wake_mask(db->page)) == 0 &&
		__atomic_exchange_n(&db->page->lock_woken, 1, __ATOMIC_SEQ_CST) == 0)
	{
		__atomic_add_fetch(&db->page->lock_wake, 1, __ATOMIC_SEQ_CST);
		lsm_env_wake(&db->page->lock_wake, 1);
	}
}

/* docs/format.md gives the page's layout; older versions read it too */
_Static_assert(offsetof(lsm_lock_page, flush_number) == 152 &&
			   offsetof(lsm_lock_page, flush_claim) == 160 &&
			   offsetof(lsm_lock_page, shares) == 168 &&
			   offsetof(lsm_lock_page, compact_wanted) == 296 &&
			   sizeof(lsm_lock_page) <= 4096,
			   "LOCK's page layout changed");

/*
 * Maps the first page of LOCK (growing the file to one page if needed).
 * Without it (a read-only handle on a store never written by this version)
 * every catch-up does the full check.
 */
static void
map_lock_page(lsm_db *db)
{
	struct stat st;
	void	   *p;

	if (fstat(db->lock_fd, &st) != 0)
		return;
	if (st.st_size < 4096)
	{
		if (db->opt.read_only || ftruncate(db->lock_fd, 4096) != 0)
			return;
	}
	p = mmap(NULL, 4096, db->opt.read_only ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_SHARED, db->lock_fd, 0);
	if (p != MAP_FAILED)
		db->page = p;
}

/* ---------- group commit ---------- */

static uint64_t
page_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static void
page_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* Raises *p to v unless it is there already (the leaders of syncs race). */
static void
page_raise(uint64_t *p, uint64_t v)
{
	uint64_t	cur = page_load(p);

	while (cur < v &&
		   !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST,
										__ATOMIC_SEQ_CST))
		;
}

/* Notes which file the handle's log_fd is (after it changed). */
static void
note_log_file(lsm_db *db)
{
	struct stat st;

	db->log_dev = db->log_ino = 0;
	if (db->log_fd >= 0 && fstat(db->log_fd, &st) == 0)
	{
		db->log_dev = (uint64_t) st.st_dev;
		db->log_ino = (uint64_t) st.st_ino;
	}
}

/*
 * Whether the group commit fields of LOCK's page describe the log this
 * handle reads: set up by a writer of this version, on this boot, for this
 * very file.  A page left by an older version, a crash of the machine (the
 * page was never synced) or a store whose files were copied or restored
 * says nothing about the log, and then nothing is capped: whatever the log
 * holds is what survived, and no live writer waits for its sync (a writer
 * sets the page up, under the write lock, before it appends).  A handle
 * that still reads a log that a flush has replaced finds another file in
 * the page, and every record of its log is in a table now.
 */
static bool
page_describes_log(const lsm_db *db)
{
	lsm_lock_page *pg = db->page;

	return pg && page_load(&pg->group_magic) == LSM_GROUP_MAGIC &&
		page_load(&pg->group_boot) == lsm_boot_id() &&
		page_load(&pg->group_log_dev) == db->log_dev &&
		page_load(&pg->group_log_ino) == db->log_ino && db->log_ino != 0;
}

/*
 * Whether the log holds records that the page does not count, while no
 * writer is at work: the log was restored or modified behind the store's
 * back (in place: the same file), and the page says nothing about it.  A
 * writer counts its record (written_seq) before it releases the write lock
 * and the generation becomes even; one that died leaves it odd.
 */
static bool
page_behind_log(const lsm_db *db)
{
	lsm_lock_page *pg = db->page;
	uint64_t	g = page_load(&pg->gen);
	uint64_t	written = page_load(&pg->written_seq);

	return !(g & 1) && page_load(&pg->gen) == g && db->last_seq > written;
}

/*
 * Sets what the handle's reads see of its memtable: everything replayed
 * when it holds the write lock (lsm_lock); else up to visible_seq, but never less than its own durable commits or
 * what its version's tables hold (a flush made them durable); nothing
 * capped if the page does not describe the log (page_describes_log,
 * page_behind_log).
 */
static void
set_read_seq(lsm_db *db)
{
	lsm_lock_page *pg = db->page;
	uint64_t	r = db->last_seq;

	if (!db->write_locked && page_describes_log(db) &&
		!page_behind_log(db))
	{
		uint64_t	v = page_load(&pg->visible_seq);

		if (db->current && v < db->current->last_seq)
			v = db->current->last_seq;
		if (v < db->acked_seq)
			v = db->acked_seq;
		if (v < r)
			r = v;
	}
	db->read_seq = r;
}

/*
 * The write lock was taken and the handle caught up, so last_seq is the
 * last record of the store: written_seq becomes it (it may have been left
 * behind by a writer that died after its append), and if no record waits
 * for a sync, so does visible_seq.  Values beyond it come from records
 * that no longer exist: a writer that died between publishing want_seq and
 * appending, or a power loss that took records the page (written back
 * before the loss) still counts; what the log holds now is on disk, so
 * synced_seq may say so.  REQUIRES: the write lock.
 */
static void
settle_page(lsm_db *db)
{
	lsm_lock_page *pg = db->page;
	uint64_t	last = db->last_seq;

	if (!page_describes_log(db))
	{
		/* what the log holds was visible: it is all there is */
		page_store(&pg->group_magic, 0);
		page_store(&pg->synced_seq, last);
		page_store(&pg->want_seq, last);
		page_store(&pg->visible_seq, last);
		page_store(&pg->group_boot, lsm_boot_id());
		page_store(&pg->group_log_dev, db->log_dev);
		page_store(&pg->group_log_ino, db->log_ino);
		page_store(&pg->group_magic, LSM_GROUP_MAGIC);
	}
	if (page_load(&pg->synced_seq) > last)
		page_store(&pg->synced_seq, last);
	if (page_load(&pg->want_seq) > last)
		page_store(&pg->want_seq, last);
	if (page_load(&pg->visible_seq) > last)
		page_store(&pg->visible_seq, last);
	page_store(&pg->written_seq, last);
	if (page_load(&pg->want_seq) <= page_load(&pg->synced_seq))
		page_raise(&pg->visible_seq, last);
}

/*
 * Raises synced_seq after a log switch whose manifest is durable: every
 * record of the old log is in a table now.  REQUIRES: the write lock.
 */
static void
note_switch_durable(lsm_db *db)
{
	lsm_lock_page *pg = db->page;

	if (pg)
	{
		page_raise(&pg->visible_seq, db->last_seq);
		page_raise(&pg->synced_seq, db->last_seq);
		page_store(&pg->written_seq, db->last_seq);
		page_store(&pg->group_log_dev, db->log_dev);
		page_store(&pg->group_log_ino, db->log_ino);
	}
}

/*
 * Waits until every record up to target is durable, a record this handle
 * appended to log log_number after target: returns at once if a sync
 * already covers it; else takes LOCK.sync (whose holder is in the middle
 * of one fdatasync; waiting for it on LOCK's sync_wake) and, if no sync
 * has covered target meanwhile, syncs the log and raises synced_seq to the
 * last record appended before the sync.  Why that is right: every record
 * up to written_seq (read first) is in our log unless a log switch came
 * after our append, and a switch raises synced_seq past the whole old log
 * before any record goes to the new one; so if synced_seq, read after
 * written_seq, still does not cover target, no switch happened and one
 * fdatasync of our log covers them all.
 */
static int
wait_durable(lsm_db *db, uint64_t target, uint64_t log_number, lsm_err *e)
{
	lsm_lock_page *pg = db->page;
	char		name[32],
				path[4096];
	uint64_t	written;
	int			rc;

	if (target == 0 || page_load(&pg->synced_seq) >= target)
		return LSM_OK;

	/*
	 * While another handle holds LOCK.sync (it is syncing), sleep until its
	 * release wakes us (or 5 ms pass: it may have died, and the kernel
	 * dropped its flock without waking anyone), then look again: most
	 * waiters find that sync covered them and return at once, together,
	 * instead of passing a blocking flock from one to the next.  The wake
	 * word is read before synced_seq and the try: a release after the try
	 * bumps it past wake, and the wait returns.
	 */
	for (;;)
	{
		uint32_t	wake = __atomic_load_n(&pg->sync_wake, __ATOMIC_SEQ_CST);

		if (page_load(&pg->synced_seq) >= target)
		{
			db->ctr.wal_syncs_shared++; /* a sync we waited for covered us */
			return LSM_OK;
		}
		rc = lsm_db_side_lock(db, &db->sync_fd, "LOCK.sync", false, e);
		if (rc == LSM_OK)
			break;
		if (rc != LSM_BUSY)
			return rc;
		lsm_env_wait(&pg->sync_wake, wake, 5000);
	}
	written = page_load(&pg->written_seq);
	if (page_load(&pg->synced_seq) >= target)
	{
		/* covered between our look and our lock */
		db->ctr.wal_syncs_shared++;
	}
	else if (db->log_number != log_number || db->log_fd < 0)
	{
		/*
		 * A switch whose manifest could not be synced (it raises synced_seq
		 * only once it is durable): sync our old log by name.  It is
		 * removed only after a durable manifest moved past it.
		 */
		int			fd;

		lsm_dir_name(LSM_F_LOG, log_number, name, sizeof(name));
		path_of(db, name, path, sizeof(path));
		rc = lsm_env_open(path, O_RDONLY, 0, &fd, e);
		if (rc == LSM_OK)
		{
			rc = lsm_env_fsync(fd, name, e);
			lsm_env_close(fd);
		}
		else if (rc == LSM_NOTFOUND)
			rc = LSM_OK;
		if (rc == LSM_OK)
			db->ctr.wal_syncs++;
	}
	else
	{
		lsm_dir_name(LSM_F_LOG, log_number, name, sizeof(name));
		rc = lsm_env_fsync(db->log_fd, name, e);
		if (rc == LSM_OK)
		{
			page_raise(&pg->visible_seq, written);
			page_raise(&pg->synced_seq, written);
			db->ctr.wal_syncs++;
		}
	}
	lsm_env_unlock(db->sync_fd);
	/* after the release, so that the one not covered can take it */
	__atomic_add_fetch(&pg->sync_wake, 1, __ATOMIC_SEQ_CST);
	lsm_env_wake(&pg->sync_wake, INT_MAX);
	return rc;
}

/*
 * A commit of records up to last is acknowledged: this handle's reads see
 * it (and, since its sync covered them, everything before it).
 */
static void
acknowledge(lsm_db *db, uint64_t last)
{
	if (db->acked_seq < last)
		db->acked_seq = last;
	set_read_seq(db);
}

/* ---------- file numbers ---------- */

/* Creates the next free WAL file (O_EXCL); returns its number and fd. */
static int
create_log(lsm_db *db, uint64_t start, uint64_t *number, int *fd, lsm_err *e)
{
	char		name[LSM_FNAME_MAX],
				path[4096];
	uint64_t	n = start;
	int			rc;

	rc = lsm_dir_create_excl(db->dir, LSM_F_LOG, &n, O_RDWR, fd, e);
	if (rc != LSM_OK)
		return rc;
	lsm_dir_name(LSM_F_LOG, n, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	/* invariant (4), with the directory fsync the caller makes */
	rc = lsm_env_fsync(*fd, name, e);
	if (rc != LSM_OK)
	{
		lsm_env_close(*fd);
		*fd = -1;
		(void) lsm_env_unlink(path, NULL);
		return rc;
	}
	*number = n;
	return LSM_OK;
}

/* ---------- memtable replay ---------- */

static int
apply_entry(void *arg, uint64_t seq, int kind, const uint8_t *key, size_t klen,
			const uint8_t *val, size_t vlen)
{
	return lsm_memtable_add((lsm_memtable *) arg, seq, kind, key, klen, val, vlen);
}

/* A commit's batch going into a memtable: its hints are by entry. */
typedef struct batch_apply
{
	lsm_memtable *mem;
	const lsm_batch *b;
	uint64_t	first;			/* the sequence of its first entry */
} batch_apply;

/*
 * apply_entry for a commit: from its hint (lsm_batch_locate), with a crash
 * point after each entry (tests).
 */
static int
apply_entry_cp(void *arg, uint64_t seq, int kind, const uint8_t *key,
			   size_t klen, const uint8_t *val, size_t vlen)
{
	batch_apply *ba = arg;
	uint64_t	i = seq - ba->first;
	int			rc;

	rc = lsm_memtable_add_at(ba->mem, seq, kind, key, klen, val, vlen,
							 i < ba->b->located ? &ba->b->hints[i] : NULL);
	lsm_env_crash_point();
	return rc;
}

/* lsm_batch_iterate's fn for lsm_batch_locate: entry seq - 1 */
static int
locate_entry(void *arg, uint64_t seq, int kind, const uint8_t *key,
			 size_t klen, const uint8_t *val, size_t vlen)
{
	batch_apply *ba = arg;
	lsm_batch  *b = (lsm_batch *) ba->b;

	(void) kind;
	(void) val;
	(void) vlen;
	if (seq > LSM_BATCH_HINTS)
		return LSM_NOTFOUND;	/* enough: stop */
	lsm_memtable_locate(ba->mem, key, klen, &b->hints[seq - 1]);
	b->located = (uint32_t) seq;
	return LSM_OK;
}

void
lsm_batch_locate(lsm_db *db, lsm_batch *b)
{
	batch_apply ba;
	lsm_err		e;

	/* a private memtable has no other writer to make wait */
	if (db == NULL || b == NULL || db->mhdr == NULL || db->mem == NULL ||
		b->count == 0 || b->rtype != LSM_WAL_BATCH || db->opt.read_only)
		return;
	ba.mem = db->mem;
	ba.b = b;
	ba.first = 1;
	b->located = 0;
	/* the header as lsm_db_write will set it, but for the sequences */
	lsm_put_u64(b->rep.data + LSM_WAL_HEADER, 1);
	lsm_put_u32(b->rep.data + LSM_WAL_HEADER + 8, b->count);
	lsm_err_clear(&e);
	(void) lsm_batch_iterate(b->rep.data + LSM_WAL_HEADER,
							 b->rep.len - LSM_WAL_HEADER, locate_entry, &ba, &e);
}

/*
 * The parts of a log record of type (wal.h): its batch payload, or list of
 * tables (type 5), or NULL (a rollback), and the owner of the prepared
 * write it is about (0 for a plain batch).  LSM_CORRUPTION if it is framed
 * wrong for its type; the batch or list itself is not checked.
 */
static int
record_parts(int type, const uint8_t *p, size_t n, const uint8_t **batch,
			 size_t *blen, uint64_t *owner, lsm_err *e)
{
	const size_t head = LSM_BATCH_HEADER + LSM_WAL_OWNER;

	*batch = p;
	*blen = n;
	*owner = 0;
	switch (type)
	{
		case LSM_WAL_BATCH:
			return LSM_OK;
		case LSM_WAL_BATCH_OF:
			*blen = n - LSM_WAL_OWNER;
			*owner = lsm_get_u64(p + *blen);
			break;
		case LSM_WAL_PREPARE:
		case LSM_WAL_PREPARE_TABLES:
		case LSM_WAL_ROLLBACK:
			*owner = lsm_get_u64(p + LSM_BATCH_HEADER);
			*batch = type == LSM_WAL_ROLLBACK ? NULL : p + head;
			*blen = n - head;
			/* a prepared batch is written at sequence 1 (lsm_prepare) */
			if (lsm_get_u32(p + 8) != 1 || (type == LSM_WAL_ROLLBACK && n != head) ||
				(type == LSM_WAL_PREPARE && lsm_get_u64(p + head) != 1))
				return LSM_CORRUPT(e, "malformed record of prepared write %llx",
								   (unsigned long long) *owner);
			break;
		default:
			return LSM_CORRUPT(e, "log record of unknown type %d", type);
	}
	/* owner 0 is no owner: lsm_resolve could never decide it */
	if (*owner == 0)
		return LSM_CORRUPT(e, "log record of type %d of a prepared write without an owner",
						   type);
	return LSM_OK;
}

/* Checks what record_parts found in a record of type: its batch or tables. */
static int
check_parts(int type, const uint8_t *batch, size_t blen, lsm_err *e)
{
	if (type == LSM_WAL_PREPARE_TABLES)
		return lsm_prepared_tables_check(batch, blen, e);
	return batch ? lsm_batch_check(batch, blen, e) : LSM_OK;
}

/*
 * Applies a log record of type to memtable mt: a batch's entries (with fn,
 * one entry at a time), and what a record of a prepared batch says (the
 * batch kept aside, committed, or rolled back: prepared.c).  With check,
 * the whole record is checked first, so that a malformed one adds nothing.
 */
static int
apply_record(lsm_memtable *mt, int type, const uint8_t *payload, size_t n,
			 lsm_batch_fn fn, void *fn_arg, bool check, lsm_err *e)
{
	const uint8_t *batch;
	size_t		blen;
	uint64_t	owner;
	int			rc;

	rc = record_parts(type, payload, n, &batch, &blen, &owner, e);
	if (rc == LSM_OK && check)
		rc = check_parts(type, batch, blen, e);
	if (rc != LSM_OK)
		return rc;
	if (type == LSM_WAL_PREPARE || type == LSM_WAL_PREPARE_TABLES)
		return lsm_memtable_add_prepared(mt, owner, type, batch, blen) == LSM_OK ? LSM_OK
			: lsm_err_set(e, LSM_NOMEM, "the memtable has no room");
	if (batch && (rc = lsm_batch_iterate(batch, blen, fn, fn_arg, e)) != LSM_OK)
		return rc;
	if (owner)
		(void) lsm_memtable_decide_prepared(mt, owner);
	return LSM_OK;
}

/* lsm_wal_apply_fn: a replayed record into the memtable arg, checked. */
static int
apply_payload(void *arg, int type, const uint8_t *payload, size_t n,
			  lsm_err *e)
{
	return apply_record(arg, type, payload, n, apply_entry, arg, true, e);
}

/*
 * Forgets how long the log is known to be and unmaps it (reserve_log maps
 * it again): the handle switches logs, or a truncation may have made the
 * file shorter than the mapping.
 */
static void
forget_log_alloc(lsm_db *db)
{
	lsm_env_munmap(db->log_map, db->log_map_len);
	db->log_map = NULL;
	db->log_map_len = 0;
	db->log_prefaulted = 0;
	db->log_alloc = 0;
}

/*
 * Cuts the log at off, under the write lock.  log_cuts tells every writer
 * that maps it to map it again before it next writes through the mapping:
 * a copy past the file's end would fault, or be lost within its last page.
 */
static int
truncate_log(lsm_db *db, uint64_t off, const char *name, lsm_err *e)
{
	LSM_ASSERT(db->write_locked);
	if (db->page)
		page_store(&db->page->log_cuts, page_load(&db->page->log_cuts) + 1);
	forget_log_alloc(db);
	return lsm_env_ftruncate(db->log_fd, (off_t) off, name, e);
}

/* Opens the WAL named by the current version for this handle. */
static int
open_log(lsm_db *db, lsm_err *e)
{
	char		name[32],
				path[4096];
	int			rc;

	lsm_env_close(db->log_fd);
	db->log_fd = -1;
	lsm_dir_name(LSM_F_LOG, db->current->log_number, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	/* missing: raced with a flush (the caller retries), or lost (damage) */
	forget_log_alloc(db);
	rc = lsm_env_open(path, db->opt.read_only ? O_RDONLY : O_RDWR,
					  0, &db->log_fd, e);
	note_log_file(db);
	return rc;
}

/*
 * Gives a new, empty memtable a key filter sized for the flush threshold
 * and a value filter and index with the store's parameters (once they are
 * known).  LSM_NOMEM.
 */
static int
configure_memtable(lsm_db *db, const lsm_version *v, lsm_memtable *mt)
{
	if (lsm_memtable_filter_keys(mt, db->opt.memtable_bytes) != LSM_OK ||
		(v && lsm_memtable_index_values(mt, v->value_filter_bits,
										v->value_filter_hashes,
										v->value_unindexed) != LSM_OK))
		return LSM_NOMEM;
	return LSM_OK;
}

/* A new empty memtable of this handle's own; NULL when out of memory. */
static lsm_memtable *
new_memtable(lsm_db *db)
{
	lsm_memtable *mt = lsm_memtable_new();

	if (mt && configure_memtable(db, db->current, mt) != LSM_OK)
	{
		lsm_memtable_unref(mt);
		mt = NULL;
	}
	return mt;
}

/* ---------- the shared memtable (memfile.h) ---------- */

/* Makes mt (in the file of hdr, or the handle's own: NULL) the memtable. */
static void
set_memtable(lsm_db *db, lsm_memtable *mt, lsm_memfile_header *hdr)
{
	lsm_memtable_unref(db->mem);
	db->mem = mt;
	db->mhdr = hdr;
}

/*
 * Creates the shared memtable file of log lognum (file descriptor logfd)
 * of a store whose value filter parameters v holds, empty, for the
 * sequences after base, with room for the flush threshold
 * and a batch of need bytes; under NNNNNN.mem.tmp with tmp (a rebuild
 * renames it into place once it is full), else under its name (a new log,
 * which no manifest names yet).  REQUIRES: the write lock.
 */
static int
create_memfile(lsm_db *db, const lsm_version *v, uint64_t lognum, int logfd,
			   uint64_t base, bool tmp, size_t need, lsm_memtable **mt,
			   lsm_memfile_header **hdr, lsm_err *e)
{
	char		name[40],
				path[4096];
	size_t		bytes = db->opt.memtable_bytes > need ? db->opt.memtable_bytes : need;
	struct stat st;
	int			rc;

	*mt = NULL;
	if (lsm_boot_id() == 0)
		return lsm_err_set(e, LSM_INVALID, "no boot id: memtables are not shared");
	if (fstat(logfd, &st) != 0)
		return lsm_err_sys(e, errno, "could not stat a write-ahead log");
	lsm_dir_name(tmp ? LSM_F_MEM_TMP : LSM_F_MEM, lognum, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	/* a leftover: a rebuild that died, or a flush that failed */
	(void) lsm_env_unlink(path, NULL);
	rc = lsm_memfile_create(path, LSM_MEMFILE_HEADER +
							lsm_memtable_region_bytes_for(bytes), mt, hdr, e);
	if (rc == LSM_OK && configure_memtable(db, v, *mt) != LSM_OK)
	{
		lsm_memtable_unref(*mt);
		*mt = NULL;
		(void) lsm_env_unlink(path, NULL);
		rc = LSM_NOMEM_ERR(e);
	}
	if (rc == LSM_OK)
	{
		(*hdr)->log_number = lognum;
		(*hdr)->log_dev = (uint64_t) st.st_dev;
		(*hdr)->log_ino = (uint64_t) st.st_ino;
		lsm_memfile_store(&(*hdr)->applied_seq, base);
	}
	return rc;
}

/*
 * Publishes that the memtable holds the log up to the handle's position:
 * applied_seq first, so that a reader that loads it (and then applied_off)
 * never takes a sequence of a batch not wholly applied, and applied_off
 * last, so that a writer that dies between the two leaves apply_to apart
 * from it (a rebuild) rather than a position ahead of its sequence.
 */
static void
publish_memfile(lsm_db *db)
{
	lsm_memfile_header *h = db->mhdr;

	lsm_memfile_store(&h->applied_seq, db->last_seq);
	lsm_env_crash_point();
	lsm_memfile_store(&h->applied_off, db->log_off);
	lsm_env_crash_point();
	lsm_memfile_store(&h->apply_to, db->log_off);
}

/*
 * Does hdr describe a memtable of the handle's log, built on this boot,
 * and not replaced?
 */
static bool
memfile_valid(const lsm_db *db, lsm_memfile_header *h)
{
	return h->boot == lsm_boot_id() && h->boot != 0 &&
		h->log_number == db->log_number && h->log_dev == db->log_dev &&
		h->log_ino == db->log_ino && db->log_ino != 0 &&
		!lsm_memfile_load(&h->stale);
}

/*
 * What the handle's log holds at off (lsm_wal_probe): the end of the
 * records, more bytes (a writer's record, or a tail), or nothing at all
 * (LSM_WAL_SHORT: truncated or restored behind the store's back, so a
 * shared memtable published past it is not of this log's contents and a
 * replay must read it).  A log changed in place is not noticed here (the
 * file keeps serving the records as they were written; lsm_verify reads
 * the log); comparing its modification time recorded at every commit made
 * readers replay and writers rebuild on mismatches that no damage
 * explained (issue 12 notes).
 */
static int
log_probe(lsm_db *db, uint64_t off, lsm_wal_probe_result *at, lsm_err *e)
{
	char		name[32];

	/*
	 * Through the handle's mapping of the log, which its appends use, when
	 * it has one and no cut came since it was mapped (no system call: a
	 * catch-up probes at every commit and statement of a busy store).  A
	 * cut that comes meanwhile (truncate_log, under the write lock) keeps
	 * every byte up to the end of the complete records, which off does
	 * not pass, so the page that holds off - 1 stays in the file: the
	 * probe reads within that page only (4096 bytes or a multiple of it),
	 * and with pread when the header it looks at crosses into the next.
	 */
	if (db->log_map != NULL && db->page != NULL && off > 0 &&
		off + LSM_WAL_HEADER <= db->log_map_len &&
		(off - 1) / 4096 == (off + LSM_WAL_HEADER - 1) / 4096 &&
		page_load(&db->page->log_cuts) == db->log_cuts)
	{
		const volatile uint8_t *p = db->log_map + off;
		int			i;

		*at = LSM_WAL_END;
		for (i = 0; i < LSM_WAL_HEADER; i++)
			if (p[i] != 0)
				*at = LSM_WAL_MORE;
		return LSM_OK;
	}
	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	return lsm_wal_probe(db->log_fd, name, off, at, e);
}

/* lsm_wal_apply_fn of check_log: checks a record's batch, applies nothing. */
static int
check_payload(void *arg, int type, const uint8_t *payload, size_t n,
			  lsm_err *e)
{
	const uint8_t *batch;
	size_t		blen;
	uint64_t	owner;
	int			rc = record_parts(type, payload, n, &batch, &blen, &owner, e);

	(void) arg;
	return rc == LSM_OK ? check_parts(type, batch, blen, e) : rc;
}

/*
 * Does the handle's log read back, record by record, up to off at least?
 * A handle checks this once per log before it trusts a shared memtable it
 * did not build: the file survives a restart of every process, and a log
 * damaged meanwhile (a byte changed, not its length) must be replayed, so
 * that the damage is reported and an invalid tail cut as before.  One
 * sequential read of the log, no inserts; a new log is checked when it is
 * still nearly empty.
 */
static bool
check_log(lsm_db *db, uint64_t off)
{
	lsm_wal_replay_result res;
	lsm_err		e;
	char		name[32];

	if (db->log_checked == db->log_number)
		return true;
	lsm_err_clear(&e);
	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	if (lsm_wal_replay(db->log_fd, name, 0, db->current->last_seq + 1,
					   check_payload, NULL, &res, &e) != LSM_OK ||
		res.end_off < off)
		return false;
	db->log_checked = db->log_number;
	return true;
}

/*
 * Maps the shared memtable of the handle's log, if there is a valid one
 * that is not behind the handle's own memtable (unless the handle holds
 * the write lock, whose catch-up applies what it lacks), and takes it with
 * its position.  False: none; the handle keeps its own.
 */
static bool
adopt_memfile(lsm_db *db)
{
	lsm_memtable *mt;
	lsm_memfile_header *h;
	lsm_err		e;
	char		name[40],
				path[4096];
	lsm_wal_probe_result at;
	uint64_t	seq,
				off;

	if (lsm_boot_id() == 0)
		return false;
	lsm_dir_name(LSM_F_MEM, db->log_number, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	lsm_err_clear(&e);
	if (lsm_memfile_open(path, !db->opt.read_only, &mt, &h, &e) != LSM_OK)
		return false;
	seq = lsm_memfile_load(&h->applied_seq);
	off = lsm_memfile_load(&h->applied_off);
	if (!memfile_valid(db, h) || (off < db->log_off && !db->write_locked) ||
		log_probe(db, off, &at, &e) != LSM_OK || at == LSM_WAL_SHORT ||
		!check_log(db, off))
	{
		lsm_memtable_unref(mt);
		return false;
	}
	set_memtable(db, mt, h);
	db->last_seq = seq;
	db->log_off = off;
	return true;
}

/*
 * Marks the shared memtable file of the handle's log replaced, both the
 * one it maps (if any) and the one under the file's name (which may be
 * another, if this handle could not map it): every handle that reads one
 * of them maps the file again at its next catch-up.  REQUIRES: the write
 * lock.
 */
static void
stale_memfile(lsm_db *db)
{
	static const uint64_t one = 1;
	char		name[40],
				path[4096];
	int			fd;

	if (db->mhdr)
		lsm_memfile_store(&db->mhdr->stale, 1);
	lsm_dir_name(LSM_F_MEM, db->log_number, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
	{
		if (pwrite(fd, &one, sizeof(one),
				   offsetof(lsm_memfile_header, stale)) != sizeof(one))
		{
			/* a file too short to be one: nobody maps it */
		}
		close(fd);
	}
}

/*
 * The log holds bytes after the shared memtable's position *off, read at
 * change generation g: are they left by a writer that died (between its
 * append and its apply, or in its append), or damage, rather than the
 * record of a writer at work?  A writer holds the lock, and keeps the
 * generation odd, from before its append until after it published; so if
 * the generation was even and has not moved, no writer was at work.  An
 * odd one is a writer at work or a dead one: a handle that may write has
 * settle_tail take the lock, whose catch-up applies or cuts what a dead
 * one left; a read-only handle asks the lock itself (a shared flock, held
 * for a moment) and reads the position and probes the log again under it
 * (*seq, *off and *at get them).
 */
static bool
dead_writer_left(lsm_db *db, lsm_memfile_header *h, uint64_t g,
				 uint64_t *seq, uint64_t *off, lsm_wal_probe_result *at)
{
	lsm_err		e;
	bool		left;

	if (db->lock_held)
		return false;			/* ours (exclusive mode): nothing left */
	if (db->page && !(g & 1))
		return page_load(&db->page->gen) == g;
	if (!db->opt.read_only)
		return false;
	if (flock(db->lock_fd, LOCK_SH | LOCK_NB) != 0)
		return false;			/* a writer at work */
	*seq = lsm_memfile_load(&h->applied_seq);
	*off = lsm_memfile_load(&h->applied_off);
	lsm_err_clear(&e);
	left = log_probe(db, *off, at, &e) == LSM_OK && *at == LSM_WAL_MORE;
	(void) flock(db->lock_fd, LOCK_UN);
	return left;
}

/*
 * Stops using the shared memtable and starts a memtable of its own, empty,
 * to be replayed from the log.  A writer that will append without the
 * shared memtable (drop) marks the file replaced, so that no handle keeps
 * reading a memtable that misses its records, and does not look for one
 * again for this log.
 */
static int
leave_memfile(lsm_db *db, bool drop, lsm_err *e)
{
	lsm_memtable *fresh = new_memtable(db);

	if (fresh == NULL)
		return LSM_NOMEM_ERR(e);
	if (drop)
	{
		stale_memfile(db);
		db->mem_failed = db->log_number;
	}
	set_memtable(db, fresh, NULL);
	db->log_off = 0;
	db->last_seq = db->current->last_seq;
	return LSM_OK;
}

static int	replay_log(lsm_db *db, lsm_err *e);

/*
 * Builds the shared memtable of the handle's log anew from the whole log
 * (there was none, or it cannot be trusted: a writer died applying a
 * record), renames it into place and marks the file it replaces.  If that
 * fails, the handle goes on with a memtable of its own (leave_memfile)
 * replayed from the log, and the replay's result is returned.  REQUIRES:
 * the write lock.
 */
static int
rebuild_memfile(lsm_db *db, lsm_err *e)
{
	lsm_memtable *prev = db->mem;
	lsm_memfile_header *old = db->mhdr,
			   *h;
	lsm_memtable *mt;
	char		tmp[40],
				name[40],
				from[4096],
				to[4096];
	struct stat st;
	lsm_err		why;
	int			rc;

	lsm_dir_name(LSM_F_MEM_TMP, db->log_number, tmp, sizeof(tmp));
	lsm_dir_name(LSM_F_MEM, db->log_number, name, sizeof(name));
	path_of(db, tmp, from, sizeof(from));
	path_of(db, name, to, sizeof(to));
	lsm_err_clear(&why);
	rc = fstat(db->log_fd, &st) == 0 ? LSM_OK :
		lsm_err_sys(&why, errno, "could not stat a write-ahead log");
	if (rc == LSM_OK)
		rc = create_memfile(db, db->current, db->log_number, db->log_fd,
							db->current->last_seq, true, (size_t) st.st_size,
							&mt, &h, &why);
	if (rc != LSM_OK)
		goto own;
	lsm_memtable_ref(prev);		/* old's header lives in its mapping */
	set_memtable(db, mt, h);
	db->log_off = 0;
	db->last_seq = db->current->last_seq;
	rc = replay_log(db, e);
	if (rc == LSM_OK)
	{
		publish_memfile(db);
		lsm_env_crash_point();
		db->mhdr = old;
		stale_memfile(db);		/* the file it replaces */
		db->mhdr = h;
		rc = lsm_env_rename(from, to, &why);
	}
	else if (old)
		lsm_memfile_store(&old->stale, 1);
	lsm_memtable_unref(prev);
	if (rc == LSM_OK)
	{
		db->ctr.memtable_rebuilds++;
		return LSM_OK;
	}
	(void) lsm_env_unlink(from, NULL);
own:
	if (why.rc != LSM_OK)
		lsm_db_log(db, LSM_LOG_NOTICE,
				   "store \"%s\" keeps a memtable per process for write-ahead log %llu: %s",
				   db->dir, (unsigned long long) db->log_number, why.msg);
	rc = leave_memfile(db, true, e);
	return rc == LSM_OK ? replay_log(db, e) : rc;
}

/*
 * Records an invalid tail of bytes bytes at offset off of the handle's log,
 * which this handle has just cut (invariant 7) or, read-only, leaves out,
 * and tells the log callback: once per tail and handle.  A cut also goes
 * into the store's record in LOCK, which every handle shows (lsm_stats).
 * REQUIRES for a cut: the write lock.
 */
static void
note_tail(lsm_db *db, uint64_t off, uint64_t bytes, bool cut)
{
	lsm_wal_tail_stats *own = &db->tails;
	char		name[32];

	if (own->count > 0 && own->log_number == db->log_number &&
		own->offset == off)
		return;
	own->count++;
	own->log_number = db->log_number;
	own->offset = off;
	own->bytes = bytes;
	if (cut && db->page)
	{
		lsm_lock_page *pg = db->page;
		uint64_t	g = __atomic_load_n(&pg->gen, __ATOMIC_SEQ_CST);

		/* odd while the record changes, so readers can tell (read_tails) */
		if (!(g & 1))
			__atomic_store_n(&pg->gen, g + 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&pg->tails.log_number, db->log_number, __ATOMIC_SEQ_CST);
		__atomic_store_n(&pg->tails.offset, off, __ATOMIC_SEQ_CST);
		__atomic_store_n(&pg->tails.bytes, bytes, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&pg->tails.count, 1, __ATOMIC_SEQ_CST);
	}
	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	lsm_db_log(db, LSM_LOG_WARNING,
			   "%s %llu bytes at offset %llu of write-ahead log %s of store \"%s\": they are not a complete, valid record (a write cut short by a crash, or damaged)%s",
			   cut ? "discarded" : "ignoring", (unsigned long long) bytes,
			   (unsigned long long) off, name, db->dir,
			   cut ? "" : "; the next writer discards them");
}

/*
 * The store's record of the tails writers have cut, read from LOCK between
 * two even, equal generations (a holder changes it while the generation is
 * odd; after a few tries, a dead holder's odd one is ignored), or this
 * handle's own when LOCK is not mapped.
 */
static void
read_tails(const lsm_db *db, lsm_wal_tail_stats *out)
{
	lsm_lock_page *pg = db->page;
	int			i;

	if (pg == NULL)
	{
		*out = db->tails;
		return;
	}
	for (i = 0; i < 100; i++)
	{
		uint64_t	g = __atomic_load_n(&pg->gen, __ATOMIC_SEQ_CST);

		out->count = __atomic_load_n(&pg->tails.count, __ATOMIC_SEQ_CST);
		out->log_number = __atomic_load_n(&pg->tails.log_number, __ATOMIC_SEQ_CST);
		out->offset = __atomic_load_n(&pg->tails.offset, __ATOMIC_SEQ_CST);
		out->bytes = __atomic_load_n(&pg->tails.bytes, __ATOMIC_SEQ_CST);
		if (!(g & 1) && g == __atomic_load_n(&pg->gen, __ATOMIC_SEQ_CST))
			break;
	}
}

/*
 * Replays new WAL records into the memtable.  Under the write lock, cuts
 * the log's invalid tail if it has one (invariant 7) and reports it.
 * Sets log_whole: whether nothing follows the records replayed.
 */
static int
replay_log(lsm_db *db, lsm_err *e)
{
	lsm_wal_replay_result res;
	char		name[32];
	int			rc;

	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	db->log_whole = false;
	rc = lsm_wal_replay(db->log_fd, name, db->log_off, db->last_seq + 1,
						apply_payload, db->mem, &res, e);
	if (rc == LSM_NOMEM && db->mhdr)
	{
		/* left applying (apply_to): the next catch-up rebuilds it */
		return rc;
	}
	if (rc == LSM_NOMEM)
	{
		/* memtable may hold part of a batch: rebuild it from the log later */
		lsm_memtable *fresh = new_memtable(db);

		if (fresh)
		{
			lsm_memtable_unref(db->mem);
			db->mem = fresh;
			db->log_off = 0;
			db->last_seq = db->current->last_seq;
		}
		return rc;
	}
	db->log_off = res.end_off;
	db->log_size = res.content_end;
	db->last_seq = res.last_seq;
	db->ctr.wal_records_replayed += (uint64_t) res.records;
	if (rc != LSM_OK)
		return rc;
	if (res.end_off < res.content_end && db->write_locked)
	{
		/* the preallocated zeros go with it: the next append writes more */
		rc = truncate_log(db, res.end_off, name, e);
		if (rc == LSM_OK)
			rc = lsm_env_fsync(db->log_fd, name, e);
		if (rc != LSM_OK)
			return rc;
		note_tail(db, res.end_off, res.content_end - res.end_off, true);
		db->log_size = res.end_off;
	}
	db->log_whole = db->log_off == db->log_size;
	return LSM_OK;
}

/* ---------- versions ---------- */

/*
 * A file the manifest names is gone for good (not a race with a compaction,
 * which a retry resolves): the store is damaged.  e holds the open error.
 */
static int
missing_file(lsm_err *e, const char *what)
{
	char		detail[LSM_ERRMSG_SIZE];

	memcpy(detail, e->msg, sizeof(detail));
	return LSM_CORRUPT(e, "%s named by the manifest is missing: %s", what,
					   detail);
}

static int
cmp_file_number(const void *a, const void *b)
{
	uint64_t	x = (*(lsm_file *const *) a)->meta.number;
	uint64_t	y = (*(lsm_file *const *) b)->meta.number;

	return (x > y) - (x < y);
}

/*
 * Opens the tables of v, reusing those of the current version.  LSM_NOTFOUND
 * if a file is missing (the caller retries with a fresh manifest).
 */
static int
open_tables(lsm_db *db, lsm_version *v, lsm_err *e)
{
	lsm_file  **old = NULL;
	int			nold = 0,
				l,
				i,
				rc = LSM_OK;
	lsm_version *cur = db->current;

	if (cur)
	{
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			nold += cur->nfiles[l];
		old = malloc(sizeof(lsm_file *) * (nold ? nold : 1));
		if (old == NULL)
			return LSM_NOMEM_ERR(e);
		nold = 0;
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			for (i = 0; i < cur->nfiles[l]; i++)
				old[nold++] = cur->files[l][i];
		qsort(old, nold, sizeof(lsm_file *), cmp_file_number);
	}
	for (l = 0; l < LSM_MAX_LEVELS && rc == LSM_OK; l++)
		for (i = 0; i < v->nfiles[l] && rc == LSM_OK; i++)
		{
			lsm_file   *f = v->files[l][i];
			lsm_file  **hit;
			lsm_file	key;
			lsm_file   *kp = &key;

			if (f->table)
				continue;
			key.meta.number = f->meta.number;
			hit = nold ? bsearch(&kp, old, nold, sizeof(lsm_file *), cmp_file_number) : NULL;
			if (hit && (*hit)->table)
			{
				f->table = (*hit)->table;
				lsm_table_ref(f->table);
				continue;
			}
			rc = lsm_table_open(db->dir, f->meta.number, f->meta.global_seq,
										&f->table, e);
		}
	free(old);
	if (rc == LSM_OK && lsm_version_bind_filters(v) != LSM_OK)
		rc = LSM_NOMEM_ERR(e);
	if (rc == LSM_OK)
		rc = lsm_hier_open(v, cur, db->dir, e);
	return rc;
}

/* Makes v (with tables open) the handle's current version. */
static void
set_current(lsm_db *db, lsm_version *v)
{
	lsm_version_unref(db->current);
	db->current = v;
}

/*
 * Loads MANIFEST if its inode differs from the one we hold.  With
 * trust_page, LOCK's page naming the inode we hold saves the stat: the
 * manifest is switched only under the write lock, whose holder names no
 * inode in the page from before its rename until it names the new one
 * (lsm_db_install), and the inode we hold open cannot be reused by another
 * file.  So if the page names ours, no switch had begun when we read it;
 * one begun since is read by the next catch-up, the generation having
 * moved.
 */
static int
load_manifest(lsm_db *db, bool trust_page, lsm_err *e)
{
	char		path[4096];
	struct stat st;
	int			attempt;

	if (trust_page && db->page && db->manifest_fd >= 0 &&
		page_load(&db->page->manifest_ino) == (uint64_t) db->manifest_ino)
		return LSM_OK;
	path_of(db, "MANIFEST", path, sizeof(path));
	for (attempt = 0;; attempt++)
	{
		lsm_version *v;
		int			fd;
		int			rc;

		if (stat(path, &st) != 0)
		{
			if (errno == ENOENT)
				return lsm_err_set(e, LSM_CORRUPTION,
								   "store \"%s\" has no MANIFEST", db->dir);
			return lsm_err_sys(e, errno, "could not stat \"%s\"", path);
		}
		if (db->manifest_fd >= 0 && st.st_ino == db->manifest_ino)
		{
			/* the write lock's holder knows it is current: say so */
			if (db->write_locked && db->page)
				page_store(&db->page->manifest_ino, (uint64_t) st.st_ino);
			return LSM_OK;
		}
		rc = lsm_env_open(path, O_RDONLY, 0, &fd, e);
		if (rc == LSM_NOTFOUND)
			continue;
		if (rc != LSM_OK)
			return rc;
		rc = lsm_manifest_read(fd, "MANIFEST", &v, e);
		if (rc == LSM_OK)
		{
			rc = open_tables(db, v, e);
			if (rc != LSM_OK)
				lsm_version_unref(v);
		}
		if (rc == LSM_NOTFOUND && attempt < MAX_OPEN_RETRIES)
		{
			/* a compaction removed a file after we read the manifest */
			lsm_env_close(fd);
			db->ctr.retries++;
			continue;
		}
		if (rc != LSM_OK)
		{
			lsm_env_close(fd);
			if (rc == LSM_NOTFOUND)
				rc = missing_file(e, "a table");
			return rc;
		}
		if (fstat(fd, &st) == 0)
			db->manifest_ino = st.st_ino;
		lsm_env_close(db->manifest_fd);
		db->manifest_fd = fd;
		if (db->write_locked && db->page)
			page_store(&db->page->manifest_ino, (uint64_t) db->manifest_ino);
		set_current(db, v);
		db->ctr.refreshes++;
		return LSM_OK;
	}
}

int
lsm_db_catch_up(lsm_db *db, lsm_err *e)
{
	uint64_t	g = 1;
	int			rc;

	if (db->page)
	{
		g = __atomic_load_n(&db->page->gen, __ATOMIC_SEQ_CST);
		if (g == db->seen_gen && !(g & 1) && db->log_fd >= 0 && db->log_whole)
		{
			/* nothing appended, but a sync may have made more visible */
			set_read_seq(db);
			return LSM_OK;
		}
	}
	rc = catch_up_full(db, true, e);

	/*
	 * An odd generation means a holder is (or died) mid-change: look again.
	 * So does a log with bytes after our position (see settle_tail), unless
	 * the generation moved since we read it: then they belong to a holder
	 * that came since and repairs whatever a dead one left before it
	 * appends, and taking the lock once it is free would only move the
	 * generation under every other handle again.
	 */
	db->seen_gen = (rc == LSM_OK && !(g & 1) && db->log_whole) ? g : 1;
	if (rc == LSM_OK && !db->log_whole &&
		(db->page == NULL || page_load(&db->page->gen) == g))
		settle_tail(db, g);
	set_read_seq(db);
	return rc;
}

/*
 * The full catch-up outside the write lock found bytes after the last
 * complete record of the log, at a generation g read before it.  A writer
 * may be appending them right now; otherwise they are an invalid tail,
 * which must be cut before anything is appended after it (invariant 7).
 * A handle that may write takes the write lock if it is free, which
 * catches up again and cuts the tail; if another handle holds the lock,
 * that one cuts it, since no handle takes the fast path of a catch-up
 * while a tail may follow its position (log_whole).  A read-only handle
 * leaves the tail, and reports it if no writer can be at work (g was even
 * and has not moved).  Never fails: the handle's view is complete either
 * way, and a failed cut is retried by the next catch-up.
 */
static void
settle_tail(lsm_db *db, uint64_t g)
{
	lsm_err		e;

	if (db->write_locked)
		return;
	if (db->opt.read_only)
	{
		if (db->page && !(g & 1) &&
			__atomic_load_n(&db->page->gen, __ATOMIC_SEQ_CST) == g)
			note_tail(db, db->log_off, db->log_size - db->log_off, false);
		return;
	}
	lsm_err_clear(&e);
	if (write_lock(db, false, NULL, &e) == LSM_OK)
		lsm_db_write_unlock(db);
}

/* The full catch-up: manifest by inode, then the WAL past our offset. */
static int
catch_up_full(lsm_db *db, bool trust_page, lsm_err *e)
{
	int			attempt;

	for (attempt = 0;; attempt++)
	{
		int			rc = load_manifest(db, trust_page && attempt == 0, e);


		if (rc != LSM_OK)
			return rc;
		/* log_number 0 (no log yet, or a failed switch) forces a switch */
		if (db->current->log_number != db->log_number)
		{
			lsm_memtable *fresh = new_memtable(db);

			if (fresh == NULL)
				return LSM_NOMEM_ERR(e);
			set_memtable(db, fresh, NULL);
			db->log_number = db->current->log_number;
			db->log_off = 0;
			db->last_seq = db->current->last_seq;
			rc = open_log(db, e);
			if (rc == LSM_NOTFOUND && attempt < MAX_OPEN_RETRIES)
			{
				/* flushed and removed since we read the manifest */
				db->ctr.retries++;
				db->log_number = 0;
				continue;
			}
			if (rc != LSM_OK)
			{
				db->log_number = 0; /* retry the whole switch next time */
				if (rc == LSM_NOTFOUND)
					rc = missing_file(e, "the write-ahead log");
				return rc;
			}
		}
		return catch_up_memtable(db, e);
	}
}

/*
 * The memtable part of a full catch-up.  A handle on the shared memtable
 * takes its published position (no replay); under the write lock it first
 * applies what a writer that died after its append left unapplied, or
 * rebuilds the file if one died applying.  A handle with a memtable of its
 * own looks for a valid shared one, and replays the log if there is none;
 * under the write lock, it builds one (after a reboot, on a store written
 * before memtables were shared, after a failed creation).
 */
static int
catch_up_memtable(lsm_db *db, lsm_err *e)
{
	lsm_memfile_header *h = db->mhdr;
	lsm_wal_probe_result at;
	int			rc;

	if (h && !memfile_valid(db, h))
	{
		/* replaced: look for the new one, else replay */
		if ((rc = leave_memfile(db, false, e)) != LSM_OK)
			return rc;
		h = NULL;
	}
	if (h == NULL && db->mem_failed != db->log_number && adopt_memfile(db))
		h = db->mhdr;
	if (h == NULL)
	{
		if (db->write_locked && !db->opt.read_only &&
			db->mem_failed != db->log_number)
			return rebuild_memfile(db, e);
		return replay_log(db, e);
	}
	if (!db->write_locked)
	{
		uint64_t	g = db->page ? page_load(&db->page->gen) : 1,
					seq = lsm_memfile_load(&h->applied_seq),
					off = lsm_memfile_load(&h->applied_off);

		if ((rc = log_probe(db, off, &at, e)) != LSM_OK)
			return rc;

		/*
		 * Replay the log ourselves if it ends before the file's position
		 * (the next writer rebuilds the file), or if we find bytes after
		 * what it holds while no writer is at work: a writer died between
		 * its append and its apply (a complete record, which only a writer
		 * may apply to the file: settle_tail has one do it), or in its
		 * append (a tail), or the log is damaged, which a replay reports
		 * as before.
		 */
		if (at == LSM_WAL_SHORT ||
			(at == LSM_WAL_MORE &&
			 dead_writer_left(db, h, g, &seq, &off, &at)))
		{
			if ((rc = leave_memfile(db, false, e)) != LSM_OK)
				return rc;
			return replay_log(db, e);
		}
		db->last_seq = seq;
		db->log_off = off;
		/* how much more there is, a replay finds out */
		db->log_size = at == LSM_WAL_MORE ? off + 1 : off;
		db->log_whole = at == LSM_WAL_END;
		return LSM_OK;
	}
	if ((rc = log_probe(db, h->applied_off, &at, e)) != LSM_OK)
		return rc;
	if (h->apply_to != h->applied_off || at == LSM_WAL_SHORT)
		return rebuild_memfile(db, e);
	db->last_seq = h->applied_seq;
	db->log_off = db->log_size = h->applied_off;
	db->log_whole = at == LSM_WAL_END;
	if (db->log_whole)
		return LSM_OK;
	/* records a writer appended but did not apply, or a tail to cut */
	lsm_memfile_store(&h->apply_to, UINT64_MAX);
	rc = replay_log(db, e);
	if (rc == LSM_OK)
		publish_memfile(db);
	return rc;
}

int
lsm_db_install(lsm_db *db, lsm_version *v, lsm_err *e)
{
	char		path[4096];
	struct stat st;
	bool		switched = false;
	int			fd,
				rc;

	LSM_ASSERT(db->write_locked);
	v->manifest_seq = db->current->manifest_seq + 1;
	rc = open_tables(db, v, e);
	/*
	 * LOCK's page names no manifest from before the switch until the new
	 * one is named (load_manifest): whoever finds the page naming the
	 * inode it holds knows no switch had begun.
	 */
	if (rc == LSM_OK && db->page)
		page_store(&db->page->manifest_ino, 0);
	lsm_env_crash_point();		/* the page names none; not switched */
	if (rc == LSM_OK)
		rc = lsm_manifest_write(db->dir, v, &switched, e);
	if (!switched)
	{
		if (db->page)
			page_store(&db->page->manifest_ino, (uint64_t) db->manifest_ino);
		return rc;
	}
	/* once renamed, MANIFEST names v: never act as if it did not */
	path_of(db, "MANIFEST", path, sizeof(path));
	lsm_version_ref(v);
	set_current(db, v);
	lsm_env_crash_point();		/* switched; the page names none */
	/*
	 * Pin the new inode and name it in the page; on failure the page names
	 * none and the next catch-ups stat MANIFEST.
	 */
	if (lsm_env_open(path, O_RDONLY, 0, &fd, NULL) == LSM_OK)
	{
		lsm_env_close(db->manifest_fd);
		db->manifest_fd = fd;
		if (fstat(fd, &st) == 0)
		{
			db->manifest_ino = st.st_ino;
			if (db->page)
				page_store(&db->page->manifest_ino, (uint64_t) st.st_ino);
		}
	}
	return rc;
}

/* ---------- open / close ---------- */

/* Creates an empty store: first WAL and manifest.  Under the write lock. */
static int
create_store(lsm_db *db, lsm_err *e)
{
	lsm_version *v = lsm_version_new();
	uint64_t	lognum;
	int			fd,
				rc;

	if (v == NULL)
		return LSM_NOMEM_ERR(e);
	rc = create_log(db, 1, &lognum, &fd, e);
	if (rc == LSM_OK)
	{
		v->log_number = lognum;
		v->next_file = lognum + 1;
		/* whole 512-bit lines; no hashes means no filters */
		v->value_filter_bits = db->opt.value_filter_hashes == 0 ? 0 :
			(db->opt.value_filter_bits + 511) / 512 * 512;
		v->value_filter_hashes = v->value_filter_bits ? db->opt.value_filter_hashes : 0;
		v->hierarchy_order = db->opt.hierarchy_order < 2 ? 2 : db->opt.hierarchy_order;
		v->value_unindexed = db->opt.value_unindexed;
		/* invariant (4) */
		rc = lsm_env_fsync_dir(db->dir, e);
		if (rc == LSM_OK)
		{
			lsm_memtable *mt;
			lsm_memfile_header *h;
			lsm_err		why;

			/* its shared memtable, so that no first writer builds one */
			lsm_err_clear(&why);
			if (create_memfile(db, v, lognum, fd, 0, false, 0, &mt, &h,
							   &why) == LSM_OK)
				lsm_memtable_unref(mt);
		}
		lsm_env_close(fd);
	}
	if (rc == LSM_OK)
		rc = lsm_manifest_write(db->dir, v, NULL, e);
	lsm_version_unref(v);
	return rc;
}

/*
 * Size of the file name in the store directory, or 0 if it is gone.
 */
static uint64_t
file_size_of(const lsm_db *db, const char *name)
{
	char		path[4096];
	struct stat st;

	path_of(db, name, path, sizeof(path));
	return stat(path, &st) == 0 ? (uint64_t) st.st_size : 0;
}

/*
 * Called when the store directory had no MANIFEST.  It is a new store (or
 * one whose creation died before its first manifest) only if it holds no
 * data: no table, no node file, no log with a byte in it.  Anything else is
 * a store that lost its manifest: LSM_CORRUPTION.  Writing a new manifest
 * there would make every file an orphan, which the next compaction removes.
 * Unless the MANIFEST exists by the time the data is seen: then another
 * process created the store meanwhile (and may have written to its log),
 * and LSM_OK lets the caller open it as it is.
 */
static int
check_no_data(lsm_db *db, lsm_err *e)
{
	DIR		   *d = opendir(db->dir);
	struct dirent *de;
	int			rc = LSM_OK;
	char		manifest[4096];
	struct stat st;

	if (d == NULL)
		return lsm_err_sys(e, errno, "could not open directory \"%s\"",
						   db->dir);
	while (rc == LSM_OK && (de = readdir(d)) != NULL)
	{
		uint64_t	number;
		lsm_fkind	kind = lsm_dir_kind(de->d_name, &number);

		if (kind == LSM_F_TABLE || kind == LSM_F_NODE ||
			(kind == LSM_F_LOG && file_size_of(db, de->d_name) > 0))
			rc = LSM_CORRUPT(e, "store \"%s\" has no MANIFEST but holds %s: the manifest was lost",
							 db->dir, de->d_name);
	}
	closedir(d);
	path_of(db, "MANIFEST", manifest, sizeof(manifest));
	if (rc == LSM_CORRUPTION && stat(manifest, &st) == 0)
	{
		lsm_err_clear(e);
		rc = LSM_OK;
	}
	return rc;
}

/*
 * lsm_wal_apply_fn of first_commit: stops at a record that commits, with
 * its first sequence (every record begins with it).
 */
static int
stop_at_commit(void *arg, int type, const uint8_t *payload, size_t n,
			   lsm_err *e)
{
	(void) e;
	if (type == LSM_WAL_PREPARE || type == LSM_WAL_PREPARE_TABLES)
		return LSM_OK;
	*(uint64_t *) arg = n >= 8 ? lsm_get_u64(payload) : 1;
	return LSM_BUSY;			/* enough */
}

/*
 * The first sequence of the first record of log name other than a prepared
 * batch, or 0 if it holds none: a flush writes the undecided ones into its
 * new log before a manifest names it (invariant 12), so a log left by a
 * flush that died holds those alone, or (a flush outside the write lock)
 * copies of the last records of the log the manifest names.  A log that
 * cannot be read counts as one whose records begin at 1.
 */
static uint64_t
first_commit(lsm_db *db, const char *name)
{
	lsm_wal_replay_result res;
	lsm_err		e;
	char		path[4096];
	uint64_t	first = 0;
	int			fd;

	lsm_err_clear(&e);
	path_of(db, name, path, sizeof(path));
	if (lsm_env_open(path, O_RDONLY | O_CLOEXEC, 0, &fd, &e) != LSM_OK)
		return 1;
	if (lsm_wal_replay(fd, name, 0, 0, stop_at_commit, &first, &res, &e) != LSM_OK &&
		first == 0)
		first = 1;
	lsm_env_close(fd);
	return first;
}

/*
 * Checks that no log in the store directory holds records and is newer
 * than the one the manifest names, and with report, tells the log callback
 * of every table, log and node file that the manifest does not name (the
 * leftovers of an interrupted flush, compaction or ingest, which the next
 * compaction removes, or the files of one under way in another process).
 * A log receives new records only once a manifest names it, and each new
 * log is numbered after the last, so a newer log with records means that
 * the MANIFEST is older than the store's files (a copy put back):
 * LSM_CORRUPTION, before a compaction removes what it does not name.  A
 * log seen with records may have been named by a manifest switched in
 * since the handle last caught up: it catches up before judging.  A flush
 * outside the write lock copies the last records of the current log into
 * the next before the manifest names it, after syncing the current one: a
 * newer log whose records begin at or below the current log's last
 * sequence is such a copy, left by a flush that died.
 */
static int
check_directory(lsm_db *db, bool report, lsm_err *e)
{
	DIR		   *d = opendir(db->dir);
	struct dirent *de;
	uint64_t	newest = 0,
				newest_first = 0,
				first;
	char		newest_name[256] = "";
	const lsm_version *v = db->current;
	int			rc;

	if (d == NULL)
		return lsm_err_sys(e, errno, "could not open directory \"%s\"",
						   db->dir);
	while ((de = readdir(d)) != NULL)
	{
		uint64_t	number;
		lsm_fkind	kind = lsm_dir_kind(de->d_name, &number);
		bool		named;

		if (kind == LSM_F_LOG && number > v->log_number && number > newest &&
			file_size_of(db, de->d_name) > 0 &&
			(first = first_commit(db, de->d_name)) != 0)
		{
			newest = number;
			newest_first = first;
			snprintf(newest_name, sizeof(newest_name), "%s", de->d_name);
		}
		if (!report || (kind != LSM_F_TABLE && kind != LSM_F_LOG &&
						kind != LSM_F_NODE))
			continue;
		named = lsm_version_names(v, kind, number);
		if (!named && kind == LSM_F_TABLE && db->mem)
			named = lsm_prepared_names(db, number);
		if (!named)
			lsm_db_log(db, LSM_LOG_NOTICE,
					   "%s in store \"%s\" is not named by its MANIFEST: left by a flush, compaction or ingest that was interrupted (or is under way); the next compaction removes it",
					   de->d_name, db->dir);
	}
	closedir(d);
	if (newest == 0)
		return LSM_OK;
	if ((rc = lsm_db_catch_up(db, e)) != LSM_OK)
		return rc;
	if (newest <= db->current->log_number || newest_first <= db->last_seq)
		return LSM_OK;
	return LSM_CORRUPT(e, "write-ahead log %s of store \"%s\" holds records but is newer than the log its MANIFEST names: the MANIFEST is older than the store's files",
					   newest_name, db->dir);
}

/*
 * Removes table, log and shared memtable files of dir that neither v nor a
 * prepared write names (compaction inputs, and leftovers of a flush,
 * compaction or ingest that died, or of a rolled back prepare), or
 * with dry_run only counts them (and removes the staging directories of
 * dead processes, which needs no lock: stage.c).  REQUIRES for removal:
 * both locks held, so no compaction is writing a file the manifest does
 * not name yet, and no ingest is moving one in (a flush outside the write
 * lock may be: see below), and not LOCK.flush.
 */
int
lsm_db_remove_obsolete(lsm_db *db, const lsm_version *v, bool dry_run)
{
	DIR		   *d;
	struct dirent *de;
	lsm_err		le;
	bool		flushing = false;
	int			pinned = -1;	/* lsm_db_views_pinned, asked once */
	int			n = 0;

	/*
	 * A flush outside the write lock writes a table that no manifest names
	 * yet: while another handle holds LOCK.flush, keep the one it names in
	 * LOCK's page (stored before the file was created, so a file seen here
	 * has its number there), or every unnamed table without the page.
	 */
	if (!dry_run)
	{
		lsm_err_clear(&le);
		flushing = lsm_db_side_lock(db, &db->flush_fd, "LOCK.flush", false,
									&le) != LSM_OK;
	}
	if ((d = opendir(db->dir)) == NULL)
	{
		if (!dry_run && !flushing)
			lsm_env_unlock(db->flush_fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
	{
		uint64_t	num;
		lsm_fkind	kind;
		char		path[4096];
		bool		live;

		/* the final sweep also clears stages of dead processes */
		if (dry_run && lsm_dir_sweep_stage(db->dir, de->d_name))
			continue;
		if ((kind = lsm_dir_kind(de->d_name, &num)) == LSM_F_OTHER)
			continue;
		live = lsm_version_names(v, kind, num);
		/* prepared tables wait for their decision (prepared.c) */
		if (!live && kind == LSM_F_TABLE)
			live = lsm_prepared_names(db, num);
		if (!live && kind == LSM_F_TABLE && flushing)
			live = db->page == NULL ||
				__atomic_load_n(&db->page->flush_number,
								__ATOMIC_SEQ_CST) == num;
		if (live)
			continue;
		n++;
		if (dry_run)
			continue;
		if (pinned < 0)
			pinned = lsm_db_views_pinned(db);
		if (pinned)
			continue;			/* a shared view may name it */
		if (lsm_dir_path(path, sizeof(path), db->dir, de->d_name, NULL) == LSM_OK)
			(void) lsm_env_unlink(path, NULL);
	}
	closedir(d);
	if (!dry_run && !flushing)
		lsm_env_unlock(db->flush_fd);
	return n;
}

int
lsm_db_compact_lock(lsm_db *db, bool wait, lsm_err *e)
{
	return lsm_db_side_lock(db, &db->compact_fd, "LOCK.compact", wait, e);
}

int
lsm_db_update_tree(lsm_db *db, lsm_version *v, const lsm_hnode *base,
			uint64_t *next_file, lsm_err *e)
{
	int			l,
				i,
				rc;

	for (l = 1; l < LSM_MAX_LEVELS; l++)
		for (i = 0; i < v->nfiles[l]; i++)
		{
			lsm_file   *f = v->files[l][i];

			if (f->table == NULL && lsm_hier_is_leaf(f, l))
			{
				rc = lsm_table_open(db->dir, f->meta.number, f->meta.global_seq,
											&f->table, e);
				if (rc != LSM_OK)
					return rc;
			}
		}
	if (*next_file < v->next_file)
		*next_file = v->next_file;
	return lsm_hier_update(v, base, db->dir, next_file, e);
}

static int
open_store(lsm_db *db, lsm_err *e)
{
	char		path[4096],
				manifest[4096];
	struct stat st;
	bool		exists;
	int			rc;

	if (mkdir(db->dir, 0755) != 0 && errno != EEXIST)
		return lsm_err_sys(e, errno, "could not create directory \"%s\"", db->dir);
	if (stat(db->dir, &st) != 0)
		return lsm_err_sys(e, errno, "could not stat \"%s\"", db->dir);
	if (!S_ISDIR(st.st_mode))
		return lsm_err_set(e, LSM_INVALID, "\"%s\" is not a directory", db->dir);
	path_of(db, "MANIFEST", manifest, sizeof(manifest));
	exists = stat(manifest, &st) == 0;
	if (!exists && errno != ENOENT)
		return lsm_err_sys(e, errno, "could not stat \"%s\"", manifest);
	if (exists && db->opt.error_if_exists)
		return lsm_err_set(e, LSM_EXISTS, "store \"%s\" already exists", db->dir);
	/* a store that lost its manifest is never taken for a new one */
	if (!exists && (rc = check_no_data(db, e)) != LSM_OK)
		return rc;
	path_of(db, "LOCK", path, sizeof(path));
	rc = lsm_env_open(path, db->opt.read_only ? O_RDONLY : O_RDWR | O_CREAT,
					  0644, &db->lock_fd, e);
	if (rc == LSM_NOTFOUND)
		return lsm_err_set(e, LSM_NOTFOUND, "store \"%s\" does not exist", db->dir);
	if (rc != LSM_OK)
		return rc;
	map_lock_page(db);
	if (!exists)
	{
		if (!db->opt.create_if_missing || db->opt.read_only)
			return lsm_err_set(e, LSM_NOTFOUND, "store \"%s\" does not exist", db->dir);
		rc = lsm_db_lock(db, db->lock_fd, "LOCK", e);
		if (rc != LSM_OK)
			return rc;
		db->lock_held = true;
		/* someone else may have created it, or begun to use it */
		if (stat(manifest, &st) != 0 && (rc = check_no_data(db, e)) == LSM_OK)
			rc = create_store(db, e);
		release_lock(db);
		if (rc != LSM_OK)
			return rc;
	}
	if (db->opt.exclusive && !db->opt.read_only)
	{
		rc = lsm_db_lock(db, db->lock_fd, "LOCK", e);
		if (rc != LSM_OK)
			return rc;
		db->lock_held = true;
	}
	rc = lsm_db_catch_up(db, e);
	if (rc == LSM_OK)
		rc = check_directory(db, false, e);
	/* staging directories of processes that died (invariant 9) */
	if (rc == LSM_OK && !db->opt.read_only)
		lsm_dir_sweep_stages(db->dir);
	return rc;
}

int
lsm_open(const char *dir, const lsm_options *o, lsm_db **out)
{
	lsm_options defaults;
	lsm_db	   *db;
	int			rc;

	lsm_err_clear(&open_err);
	if (out != NULL)
		*out = NULL;
	if (out == NULL || dir == NULL || dir[0] == '\0')
		return lsm_err_set(&open_err, LSM_INVALID, "no directory given");
	if (strlen(dir) > LSM_DIR_MAX)
		return lsm_err_set(&open_err, LSM_INVALID,
						   "store directory path too long: %zu bytes, at most %d",
						   strlen(dir), LSM_DIR_MAX);
	if (o == NULL)
	{
		lsm_options_init(&defaults);
		o = &defaults;
	}
	rc = check_options(o, &open_err);
	if (rc != LSM_OK)
		return rc;
	db = calloc(1, sizeof(*db));
	if (db == NULL || (db->dir = strdup(dir)) == NULL)
	{
		free(db);
		return lsm_err_set(&open_err, LSM_NOMEM, "out of memory");
	}
	db->opt = *o;
	db->lock_fd = db->compact_fd = db->sync_fd = db->flush_fd =
		db->manifest_fd = db->log_fd = -1;
	db->mem = new_memtable(db);
	if (db->mem == NULL)
		rc = lsm_err_set(&open_err, LSM_NOMEM, "out of memory");
	else
		rc = open_store(db, &open_err);
	if (rc != LSM_OK)
	{
		db->open_iters = 0;
		lsm_close(db);
		return rc;
	}
	*out = db;
	return LSM_OK;
}

int
lsm_close(lsm_db *db)
{
	int			l;

	if (db == NULL)
		return LSM_OK;
	if (db->open_iters > 0)
		return lsm_err_set(&db->err, LSM_INVALID,
						   "%d iterators still open", db->open_iters);
	if (db->open_stages > 0)
		return lsm_err_set(&db->err, LSM_INVALID,
						   "%d stages still open", db->open_stages);
	db->user_locked = false;
	lsm_db_write_unlock(db);
	release_lock(db);
	if (db->shares > 0)
	{
		db->shares = 1;
		lsm_unshare(db);
	}
	if (db->page)
		munmap(db->page, 4096);
	lsm_env_close(db->lock_fd);
	lsm_env_close(db->compact_fd);
	lsm_env_close(db->sync_fd);
	lsm_env_close(db->flush_fd);
	lsm_env_close(db->manifest_fd);
	forget_log_alloc(db);
	lsm_env_close(db->log_fd);
	lsm_version_unref(db->current);
	lsm_memtable_unref(db->mem);
	lsm_flat_free(db->flat);
	lsm_prepared_close(db);
	lsm_batch_free(db->one);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		lsm_buf_free(&db->compact_ptr[l]);
	free(db->dir);
	free(db);
	return LSM_OK;
}

int
lsm_refresh(lsm_db *db)
{
	lsm_err		e;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = lsm_db_catch_up(db, &e);
	return lsm_db_fail(db, rc, &e);
}

/* ---------- shared views (docs/architecture.md "Shared views") ---------- */

#define VIEW_MAGIC	0x5657534cU	/* "LSWV" */
#define VIEW_HEADER 48			/* magic, format, seq, log, dev, ino, mem */

/* What LOCK's page holds for this process in a pin slot. */
static uint64_t
share_word(void)
{
	return (uint64_t) (uint32_t) lsm_boot_id() << 32 | (uint32_t) getpid();
}

/* Is the pin slot word w of a process that has died, or of another boot? */
static bool
share_dead(uint64_t w)
{
	pid_t		pid = (pid_t) (uint32_t) w;

	return (uint32_t) (w >> 32) != (uint32_t) lsm_boot_id() ||
		(kill(pid, 0) != 0 && errno == ESRCH);
}

bool
lsm_db_views_pinned(lsm_db *db)
{
	int			i;

	if (db->page == NULL)
		return false;
	for (i = 0; i < LSM_SHARE_SLOTS; i++)
	{
		uint64_t	w = __atomic_load_n(&db->page->shares[i], __ATOMIC_SEQ_CST);

		if (w == 0)
			continue;
		if (!share_dead(w))
			return true;
		if (!db->opt.read_only)
			(void) __atomic_compare_exchange_n(&db->page->shares[i], &w, 0,
											   false, __ATOMIC_SEQ_CST,
											   __ATOMIC_SEQ_CST);
	}
	return false;
}

/* Takes a pin slot for this process (or counts one more on ours). */
static bool
take_share_slot(lsm_db *db)
{
	uint64_t	mine = share_word();
	int			i;

	if (db->shares > 0)
	{
		db->shares++;
		return true;
	}
	for (i = 0; i < LSM_SHARE_SLOTS; i++)
	{
		uint64_t	w = __atomic_load_n(&db->page->shares[i], __ATOMIC_SEQ_CST);

		if ((w == 0 || share_dead(w)) &&
			__atomic_compare_exchange_n(&db->page->shares[i], &w, mine, false,
										__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		{
			db->share_slot = i;
			db->shares = 1;
			return true;
		}
	}
	return false;
}

void
lsm_unshare(lsm_db *db)
{
	if (db == NULL || db->shares == 0 || --db->shares > 0)
		return;
	__atomic_store_n(&db->page->shares[db->share_slot], 0, __ATOMIC_SEQ_CST);
}

/* Does every file of view v (and the shared memtable, with mem) exist? */
static bool
view_files_exist(lsm_db *db, const lsm_version *v, bool mem)
{
	char		name[40],
				path[4096];
	int			l,
				i;

	for (l = 0; l < LSM_MAX_LEVELS; l++)
		for (i = 0; i < v->nfiles[l]; i++)
		{
			lsm_dir_name(LSM_F_TABLE, v->files[l][i]->meta.number, name, sizeof(name));
			path_of(db, name, path, sizeof(path));
			if (access(path, F_OK) != 0)
				return false;
		}
	if (!mem)
		return true;
	lsm_dir_name(LSM_F_MEM, db->log_number, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* lsm_table_block_scan's callback: copies the first key, and stops. */
static int
first_key(void *arg, const uint8_t *key, size_t klen, uint64_t seq, int del,
		  const uint8_t *row, size_t rowlen)
{
	lsm_buf    *k = arg;

	(void) seq;
	(void) del;
	(void) row;
	(void) rowlen;
	k->len = 0;
	return lsm_buf_append(k, key, klen) == LSM_OK ? 1 : LSM_NOMEM;
}

/*
 * Appends to b the keys that split v into at most max_parts ranges (a
 * count, then each key with its length): the first keys of evenly spaced
 * data blocks of its largest level below 0, whose tables are disjoint and
 * hold most of the store.  A store with nothing below level 0 is one range.
 */
static int
put_splits(const lsm_version *v, int max_parts, lsm_buf *b)
{
	lsm_buf		keys = {0};
	lsm_buf		k = {0};
	uint8_t		n4[4];
	uint64_t	blocks = 0,
				seen = 0;
	uint32_t	parts = 1;
	size_t		last = 0;
	int			best = 0,
				l,
				i,
				j = 1,
				rc = LSM_OK;

	for (l = 1; l < LSM_MAX_LEVELS; l++)
		if (v->nfiles[l] > 0 &&
			(best == 0 || v->level_bytes[l] > v->level_bytes[best]))
			best = l;
	for (i = 0; best > 0 && i < v->nfiles[best]; i++)
		blocks += lsm_table_nblocks(v->files[best][i]->table);
	if (blocks < (uint64_t) max_parts)
		max_parts = (int) blocks;

	/* block j * blocks / max_parts begins range j */
	for (i = 0; best > 0 && i < v->nfiles[best] && rc == LSM_OK; i++)
	{
		lsm_table  *t = v->files[best][i]->table;
		uint64_t	n = lsm_table_nblocks(t);

		for (; j < max_parts && rc == LSM_OK; j++)
		{
			uint64_t	at = (uint64_t) j * blocks / max_parts;
			lsm_err		e;
			bool		skipped;

			if (at >= seen + n)
				break;
			lsm_err_clear(&e);
			if (lsm_table_block_scan(t, (uint32_t) (at - seen), NULL, 0,
									 first_key, &k, &skipped, &e) != 1)
				continue;		/* an unreadable block: no split there */
			/* versions of one key may span blocks: keys strictly rise */
			if (keys.len > 0 &&
				lsm_key_cmp(k.data, k.len, keys.data + last + 4,
							keys.len - last - 4) <= 0)
				continue;
			last = keys.len;
			lsm_put_u32(n4, (uint32_t) k.len);
			if (lsm_buf_append(&keys, n4, 4) != LSM_OK ||
				lsm_buf_append(&keys, k.data, k.len) != LSM_OK)
				rc = LSM_NOMEM;
			parts++;
		}
		seen += n;
	}
	lsm_put_u32(n4, parts);
	if (rc == LSM_OK && (lsm_buf_append(b, n4, 4) != LSM_OK ||
						 (keys.len > 0 &&
						  lsm_buf_append(b, keys.data, keys.len) != LSM_OK)))
		rc = LSM_NOMEM;
	lsm_buf_free(&keys);
	lsm_buf_free(&k);
	return rc;
}

int
lsm_share(lsm_db *db, int max_parts, void **view, size_t *len)
{
	lsm_version *v;
	lsm_buf		b = {0};
	uint8_t		hdr[VIEW_HEADER];
	uint8_t		n4[4] = {0};
	lsm_err		e;
	bool		mem;
	int			rc;

	if (db == NULL || view == NULL || len == NULL || max_parts < 1)
		return LSM_INVALID;
	*view = NULL;
	*len = 0;
	lsm_err_clear(&e);
	v = db->current;
	mem = lsm_memtable_entries(db->mem) > 0;
	if (db->page == NULL || db->opt.read_only)
		return lsm_err_set(&db->err, LSM_BUSY,
						   "a read-only handle cannot share its view");
	if (mem && db->mhdr == NULL)
		return lsm_err_set(&db->err, LSM_BUSY,
						   "the handle's memtable is its own, not the shared one");
	if (!take_share_slot(db))
		return lsm_err_set(&db->err, LSM_BUSY,
						   "all %d pin slots of the store are taken",
						   LSM_SHARE_SLOTS);

	/*
	 * Removals run under the flock of LOCK: once we have held it, a sweep
	 * that began before our pin has ended, and later ones see the pin.
	 */
	if (!db->lock_held)
	{
		rc = lsm_env_trylock(db->lock_fd, "LOCK", &e);
		if (rc == LSM_BUSY)
			rc = lsm_db_lock(db, db->lock_fd, "LOCK", &e);
		if (rc != LSM_OK)
		{
			lsm_unshare(db);
			return lsm_db_fail(db, rc, &e);
		}
		db->lock_held = true;
		release_lock(db);
	}
	if (!view_files_exist(db, v, mem) ||
		!lsm_hier_files_exist(v->hroot, db->dir))
	{
		lsm_unshare(db);
		return lsm_err_set(&db->err, LSM_BUSY,
						   "a file of the handle's view was removed");
	}

	lsm_put_u32(hdr, VIEW_MAGIC);
	lsm_put_u32(hdr + 4, 1);
	lsm_put_u64(hdr + 8, db->read_seq);
	lsm_put_u64(hdr + 16, db->log_number);
	lsm_put_u64(hdr + 24, mem ? db->mhdr->log_dev : 0);
	lsm_put_u64(hdr + 32, mem ? db->mhdr->log_ino : 0);
	lsm_put_u64(hdr + 40, mem ? 1 : 0);
	rc = lsm_buf_append(&b, hdr, sizeof(hdr));
	if (rc == LSM_OK)
		rc = put_splits(v, max_parts, &b);
	if (rc == LSM_OK)
		rc = lsm_buf_append(&b, n4, 4); /* the manifest's length, below */
	if (rc == LSM_OK)
	{
		size_t		at = b.len;

		rc = lsm_manifest_encode(v, &b);
		if (rc == LSM_OK)
			lsm_put_u32(b.data + at - 4, (uint32_t) (b.len - at));
	}
	if (rc != LSM_OK)
	{
		lsm_buf_free(&b);
		lsm_unshare(db);
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	}
	*view = b.data;
	*len = b.len;
	return LSM_OK;
}

/* A view being parsed: where its split keys and its manifest are. */
typedef struct view_parts
{
	uint32_t	nparts;
	const uint8_t *splits;		/* nparts - 1 keys, each length-prefixed */
	const uint8_t *manifest;
	uint32_t	manifest_len;
} view_parts;

/* Checks the framing of a view; false if it is malformed. */
static bool
parse_view(const uint8_t *p, size_t len, view_parts *vp)
{
	const uint8_t *end = p + len;
	const uint8_t *q;
	uint32_t	i;

	if (p == NULL || len < VIEW_HEADER + 8 || lsm_get_u32(p) != VIEW_MAGIC ||
		lsm_get_u32(p + 4) != 1)
		return false;
	q = p + VIEW_HEADER;
	vp->nparts = lsm_get_u32(q);
	q += 4;
	if (vp->nparts < 1 || vp->nparts > (uint32_t) (end - q))
		return false;
	vp->splits = q;
	for (i = 1; i < vp->nparts; i++)
	{
		uint32_t	klen;

		if (end - q < 4)
			return false;
		klen = lsm_get_u32(q);
		if (klen > LSM_MAX_KEY_LEN || klen > (size_t) (end - q - 4))
			return false;
		q += 4 + klen;
	}
	if (end - q < 4)
		return false;
	vp->manifest_len = lsm_get_u32(q);
	vp->manifest = q + 4;
	return vp->manifest_len == (size_t) (end - q - 4);
}

int
lsm_view_parts(const void *view, size_t len)
{
	view_parts	vp;

	return parse_view(view, len, &vp) ? (int) vp.nparts : LSM_INVALID;
}

int
lsm_view_part(const void *view, size_t len, int part, const void **lo,
			  size_t *lolen, const void **hi, size_t *hilen)
{
	view_parts	vp;
	const uint8_t *q;
	int			i;

	if (!parse_view(view, len, &vp) || part < 0 || part >= (int) vp.nparts)
		return LSM_INVALID;
	*lo = *hi = NULL;
	*lolen = *hilen = 0;
	q = vp.splits;
	for (i = 1; i < (int) vp.nparts && i <= part + 1; i++)
	{
		uint32_t	klen = lsm_get_u32(q);

		if (i == part)
		{
			*lo = q + 4;
			*lolen = klen;
		}
		else if (i == part + 1)
		{
			*hi = q + 4;
			*hilen = klen;
		}
		q += 4 + klen;
	}
	return LSM_OK;
}

/*
 * The shared memtable of a view: the handle's own mapping if it is the
 * same file, else the file of the log by name, which must be of this boot,
 * of that very log, and hold every sequence up to snap.
 */
static int
view_memtable(lsm_db *db, uint64_t lognum, uint64_t dev, uint64_t ino,
			  uint64_t snap, lsm_memtable **out, lsm_err *e)
{
	lsm_memfile_header *h;
	lsm_memtable *mt;
	char		name[40],
				path[4096];
	int			rc;

	*out = NULL;
	if (db->mhdr && db->log_number == lognum && db->mhdr->log_dev == dev &&
		db->mhdr->log_ino == ino &&
		lsm_memfile_load(&db->mhdr->applied_seq) >= snap)
	{
		lsm_memtable_ref(db->mem);
		*out = db->mem;
		return LSM_OK;
	}
	lsm_dir_name(LSM_F_MEM, lognum, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	rc = lsm_memfile_open(path, false, &mt, &h, e);
	if (rc == LSM_NOTFOUND)
		return lsm_err_set(e, LSM_CORRUPTION,
						   "the shared memtable \"%s\" of a shared view is missing",
						   name);
	if (rc != LSM_OK)
		return rc;
	if (h->boot != lsm_boot_id() || h->log_number != lognum ||
		h->log_dev != dev || h->log_ino != ino ||
		lsm_memfile_load(&h->applied_seq) < snap)
	{
		lsm_memtable_unref(mt);
		return lsm_err_set(e, LSM_CORRUPTION,
						   "the shared memtable \"%s\" is not the one of the shared view",
						   name);
	}
	*out = mt;
	return LSM_OK;
}

int
lsm_db_open_view(lsm_db *db, const void *view, size_t len, lsm_version **v,
		  lsm_memtable **mt, uint64_t *snap, lsm_err *e)
{
	const uint8_t *p = view;
	view_parts	vp;
	int			rc;

	*v = NULL;
	*mt = NULL;
	if (!parse_view(view, len, &vp))
		return lsm_err_set(e, LSM_INVALID, "not a shared view");
	*snap = lsm_get_u64(p + 8);
	rc = lsm_manifest_decode(vp.manifest, vp.manifest_len, "shared view", v, e);
	if (rc == LSM_OK)
	{
		rc = open_tables(db, *v, e);
		if (rc == LSM_NOTFOUND)
			rc = missing_file(e, "a table of a shared view");
	}
	if (rc == LSM_OK && lsm_get_u64(p + 40) != 0)
		rc = view_memtable(db, lsm_get_u64(p + 16), lsm_get_u64(p + 24),
						   lsm_get_u64(p + 32), *snap, mt, e);
	if (rc != LSM_OK)
	{
		lsm_version_unref(*v);
		*v = NULL;
	}
	return rc;
}

/* ---------- flush ---------- */

/*
 * The deepest level that can take ingested table f in v: newer data of a
 * key must sit above its older data, and the tables of a level >= 1 are
 * disjoint, so every level from 0 down to the chosen one must hold no
 * table overlapping f.  0 if level 0 does.
 */
static int
ingest_level(const lsm_version *v, const lsm_file *f)
{
	const lsm_table_meta *m = &f->meta;
	int			l,
				i;

	for (i = 0; i < v->nfiles[0]; i++)
		if (lsm_file_overlaps(v->files[0][i], m->smallest, m->smallest_len,
							  m->largest, m->largest_len))
			return 0;
	for (l = 1; l < LSM_MAX_LEVELS; l++)
	{
		i = lsm_version_find_file(v, l, m->smallest, m->smallest_len);
		if (i < v->nfiles[l] &&
			lsm_key_cmp(v->files[l][i]->meta.smallest,
						v->files[l][i]->meta.smallest_len,
						m->largest, m->largest_len) <= 0)
			break;
	}
	return l - 1;
}

/*
 * The version flush_install switches in with deep placement: the memtable's
 * table mem (or NULL) in level 0, then the ingested tables, oldest run
 * first, each at its ingest_level in the version that holds the tables
 * placed before it (so a newer run lands above an older one it overlaps),
 * and the hierarchy updated for the tables placed in levels >= 1; node
 * files are numbered past lognum.  With replace, every table of the
 * current version is dropped first.
 * REQUIRES: the write lock and LOCK.compact.
 */
static int
place_ingest(lsm_db *db, lsm_file *mem, lsm_file **ingest, int ningest,
			 bool replace, uint64_t lognum, lsm_version **out, lsm_err *e)
{
	const lsm_version *cur = db->current;
	uint64_t   *drop = NULL;
	uint64_t	next_file = lognum + 1;
	lsm_version *v;
	bool		deeper = replace;
	int			ndrop = 0,
				l,
				i,
				rc;

	*out = NULL;
	if (replace)
	{
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			ndrop += cur->nfiles[l];
		if ((drop = malloc(sizeof(uint64_t) * (size_t) (ndrop + 1))) == NULL)
			return LSM_NOMEM_ERR(e);
		ndrop = 0;
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			for (i = 0; i < cur->nfiles[l]; i++)
				drop[ndrop++] = cur->files[l][i]->meta.number;
	}
	v = lsm_version_edit(cur, drop, ndrop, &mem, mem ? 1 : 0, 0);
	free(drop);
	for (i = 0; i < ningest && v != NULL; i++)
	{
		int			level = ingest_level(v, ingest[i]);
		lsm_version *n = lsm_version_edit(v, NULL, 0, &ingest[i], 1, level);

		deeper |= level > 0;
		lsm_version_unref(v);
		v = n;
	}
	if (v == NULL)
		return LSM_NOMEM_ERR(e);
	if (deeper &&
		(rc = lsm_db_update_tree(db, v, db->current->hroot, &next_file,
								 e)) != LSM_OK)
	{
		lsm_version_unref(v);
		return rc;
	}
	v->next_file = next_file;
	*out = v;
	return LSM_OK;
}

/* Whether version v holds no table: a flush's tombstones shadow nothing. */
static bool
no_tables(const lsm_version *v)
{
	int			l;

	for (l = 0; l < LSM_MAX_LEVELS; l++)
		if (v->nfiles[l] > 0)
			return false;
	return true;
}

/*
 * Writes the newest entry up to snap of each key of memtable mt to a new
 * table (numbered from the handle's version's next_file on; without
 * tombstones if bottom), fsynced: *out, or NULL if nothing was left to
 * write.  With publish, each number is stored in LOCK's page before its
 * file is created (a flush outside the write lock, which the orphan sweep
 * must not take for a leftover).
 */
static int
write_level0(lsm_db *db, lsm_memtable *mt, uint64_t snap, bool bottom,
			 bool publish, lsm_file **out, lsm_err *e)
{
	lsm_table_builder *b = NULL;
	lsm_table_meta meta;
	lsm_iiter  *it;
	uint64_t	number = db->current->next_file;
	int			rc;

	*out = NULL;
	if ((it = lsm_memtable_iter(mt, snap, e)) == NULL)
		return LSM_NOMEM_ERR(e);
	rc = lsm_db_new_table(db, &number, publish, &b, e);
	for (lsm_iiter_seek(it, NULL, 0); rc == LSM_OK && it->valid; lsm_iiter_next(it))
		if (!(it->del && bottom))
			rc = lsm_table_builder_add(b, it->key, it->klen, it->seq, it->del,
									   it->val, it->vlen, e);
	lsm_iiter_destroy(it);
	if (b == NULL)
		return rc;
	if (rc != LSM_OK || lsm_table_builder_entries(b) == 0)
	{
		lsm_table_builder_abandon(b);
		return rc;
	}
	memset(&meta, 0, sizeof(meta));
	if ((rc = lsm_table_builder_finish(b, &meta, e)) != LSM_OK)
		return rc;
	db->ctr.sst_bytes_written += meta.size;
	if ((*out = lsm_file_new()) == NULL)
	{
		lsm_db_remove_table(db, meta.number);
		lsm_table_meta_free(&meta);
		return LSM_NOMEM_ERR(e);
	}
	(*out)->meta = meta;
	return LSM_OK;
}

void
lsm_db_remove_table(lsm_db *db, uint64_t number)
{
	char		name[32],
				path[4096];

	lsm_dir_name(LSM_F_TABLE, number, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	(void) lsm_env_unlink(path, NULL);
}

/*
 * Creates log number lognum or the next free one (*lognum, *logfd), and,
 * unless this handle keeps its memtables (exclusive) or cannot share them,
 * its shared memtable file for the sequences after base (*shared, *shdr;
 * else both NULL).
 */
static int
create_next_log(lsm_db *db, uint64_t *lognum, int *logfd, uint64_t base,
				lsm_memtable **shared, lsm_memfile_header **shdr, lsm_err *e)
{
	lsm_err		why;
	int			rc;

	*shared = NULL;
	*shdr = NULL;
	if ((rc = create_log(db, *lognum, lognum, logfd, e)) != LSM_OK)
		return rc;

	/*
	 * An exclusive handle is the only writer until it closes: its memtable
	 * stays its own, as LevelDB's does (a shared one costs a file to
	 * allocate, fault in page by page, write back and delete per flush:
	 * 5% of fillrandom); read-only handles replay the log.
	 */
	if (db->opt.exclusive)
		db->mem_failed = *lognum;
	if (db->mem_failed == *lognum)
		return LSM_OK;
	/* its shared memtable; without one, every handle replays the log */
	lsm_err_clear(&why);
	if (create_memfile(db, db->current, *lognum, *logfd, base, false,
					   db->mem_need, shared, shdr, &why) != LSM_OK)
	{
		db->mem_failed = *lognum;
		lsm_db_log(db, LSM_LOG_NOTICE,
				   "store \"%s\" keeps a memtable per process for write-ahead log %llu: %s",
				   db->dir, (unsigned long long) *lognum, why.msg);
	}
	return LSM_OK;
}

/* Removes what create_next_log made, when no manifest names it. */
static void
discard_next_log(lsm_db *db, uint64_t lognum, int logfd, lsm_memtable *shared)
{
	char		name[32],
				path[4096];

	if (logfd < 0)
		return;
	lsm_env_close(logfd);
	lsm_dir_name(LSM_F_LOG, lognum, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	(void) lsm_env_unlink(path, NULL);
	if (shared)
	{
		lsm_memtable_unref(shared);
		lsm_dir_name(LSM_F_MEM, lognum, name, sizeof(name));
		path_of(db, name, path, sizeof(path));
		(void) lsm_env_unlink(path, NULL);
	}
}

/*
 * After a manifest switched in log lognum (logfd), holding off bytes of
 * records: makes it and its memtable (shared, or the handle's own fresh)
 * this handle's, and removes the old log and its memtable file if the
 * manifest is durable (durable: invariant 5).  REQUIRES: the write lock.
 */
static void
take_next_log(lsm_db *db, uint64_t lognum, int logfd, uint64_t off,
			  lsm_memtable *shared, lsm_memfile_header *shdr,
			  lsm_memtable *fresh, bool durable)
{
	uint64_t	old_log = db->log_number;
	char		name[32],
				path[4096];

	if (shared)
	{
		lsm_memtable_unref(fresh);
		set_memtable(db, shared, shdr);
	}
	else
	{
		if (fresh == NULL)
			fresh = new_memtable(db);
		/* without one, keep the old: its entries are also in the table */
		if (fresh)
			set_memtable(db, fresh, NULL);
		else if (db->mhdr)
			lsm_memfile_store(&db->mhdr->stale, 1);
		db->mhdr = NULL;
	}
	forget_log_alloc(db);
	lsm_env_close(db->log_fd);
	db->log_fd = logfd;
	note_log_file(db);
	db->log_number = lognum;
	db->log_off = off;
	db->log_size = off;
	db->log_whole = true;
	if (!durable)
		return;
	note_switch_durable(db);
	/* a shared view may read the old memtable: the sweep removes both */
	if (lsm_db_views_pinned(db))
		return;
	lsm_dir_name(LSM_F_LOG, old_log, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	(void) lsm_env_unlink(path, NULL);
	lsm_dir_name(LSM_F_MEM, old_log, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	(void) lsm_env_unlink(path, NULL);
}

/*
 * Writes the memtable to a new level-0 table, starts a new WAL and installs
 * both in one manifest, together with the ningest tables of an ingest
 * (already in the store directory, numbered, with global sequences among
 * db->last_seq + 1 ..  db->last_seq + nseq): the manifest's last_seq then
 * covers them, and the new WAL starts after them.  With deep (LOCK.compact
 * held), each ingested table goes to the deepest level it can
 * (ingest_level), else to level 0.  With replace (and deep) the memtable is
 * dropped instead of flushed, and so is every table.  decided: the owner
 * whose prepared tables these are (or 0), not carried to the new log: the
 * switch commits them.  *installed tells whether the manifest was switched
 * in, even if a later step failed.
 * REQUIRES: the write lock, caught up.
 */
static int
flush_install(lsm_db *db, lsm_file **ingest, int ningest, uint64_t nseq,
			  bool deep, bool replace, uint64_t decided, bool *installed,
			  lsm_err *e)
{
	lsm_file   *f = NULL;
	lsm_file  **add = NULL;
	lsm_memtable *fresh = NULL,
			   *shared = NULL;
	lsm_memfile_header *shdr = NULL;
	lsm_version *v;
	uint64_t	lognum,
				carried_off = 0,
				carried = 0;
	char		name[32];
	int			logfd = -1,
				nadd = 0,
				i,
				rc = LSM_OK;

	*installed = false;
	if (lsm_memtable_entries(db->mem) == 0 && ningest == 0 && !replace)
		return LSM_OK;

	/*
	 * After an ingest the old memtable must go: its entries are older than
	 * the ingested tables, and reads look in the memtable first.
	 */
	if ((ningest > 0 || replace) && (fresh = new_memtable(db)) == NULL)
		return LSM_NOMEM_ERR(e);
	if (lsm_memtable_entries(db->mem) > 0 && !replace)
		rc = write_level0(db, db->mem, UINT64_MAX, no_tables(db->current),
						  false, &f, e);
	/* the new WAL is numbered past every table of this switch */
	lognum = f ? f->meta.number : db->current->next_file;
	for (i = 0; i < ningest; i++)
		if (ingest[i]->meta.number > lognum)
			lognum = ingest[i]->meta.number;
	lognum++;
	if (rc == LSM_OK)
		rc = create_next_log(db, &lognum, &logfd, db->last_seq + nseq,
							 &shared, &shdr, e);

	/*
	 * Invariant (12): the undecided prepared batches move to the new log
	 * and memtable before the switch drops the old ones.
	 */
	if (rc == LSM_OK && !shared && fresh == NULL &&
		lsm_memtable_undecided(db->mem, NULL, NULL) > 0 &&
		(fresh = new_memtable(db)) == NULL)
		rc = LSM_NOMEM_ERR(e);
	if (rc == LSM_OK)
	{
		lsm_dir_name(LSM_F_LOG, lognum, name, sizeof(name));
		rc = lsm_prepared_carry(db->mem, shared ? shared : fresh, logfd,
								name, db->last_seq + nseq, decided,
								&carried_off, &carried, e);
	}
	/* the new shared memtable holds them: no one may apply them again */
	if (rc == LSM_OK && shdr && carried > 0)
	{
		lsm_memfile_store(&shdr->applied_seq, db->last_seq + nseq + carried);
		lsm_memfile_store(&shdr->applied_off, carried_off);
		lsm_memfile_store(&shdr->apply_to, carried_off);
	}
	/* invariants (1), (4) and (8): the new files' names are durable */
	if (rc == LSM_OK)
		rc = lsm_env_fsync_dir(db->dir, e);
	if (rc == LSM_OK)
	{
		add = malloc(sizeof(lsm_file *) * (ningest + 1));
		if (add == NULL)
			rc = LSM_NOMEM_ERR(e);
	}
	if (rc == LSM_OK)
	{
		if (f)
			add[nadd++] = f;
		for (i = 0; i < ningest; i++)
			add[nadd++] = ingest[i];
		if (deep)
			rc = place_ingest(db, f, ingest, ningest, replace, lognum, &v, e);
		else if ((v = lsm_version_edit(db->current, NULL, 0, add, nadd,
									   0)) == NULL)
			rc = LSM_NOMEM_ERR(e);
		if (rc == LSM_OK)
		{
			v->log_number = lognum;
			v->last_seq = db->last_seq + nseq;
			if (v->next_file < lognum + 1)
				v->next_file = lognum + 1;
			rc = lsm_db_install(db, v, e);
			*installed = db->current == v;
			lsm_version_unref(v);
		}
	}
	free(add);
	if (rc != LSM_OK && !*installed)
	{
		/* nothing references the new files: remove them */
		if (f)
			lsm_db_remove_table(db, f->meta.number);
		discard_next_log(db, lognum, logfd, shared);
		lsm_file_unref(f);
		lsm_memtable_unref(fresh);
		return rc;
	}
	lsm_file_unref(f);
	db->last_seq += nseq + carried;
	/* invariant (5): the old log goes once the manifest past it is durable */
	take_next_log(db, lognum, logfd, carried_off, shared, shdr, fresh,
				  rc == LSM_OK);
	if (carried > 0 && db->mhdr)
		publish_memfile(db);
	if (f != NULL || (ningest == 0 && !replace))
		db->ctr.flushes++;
	if (ningest > 0 || replace)
		db->ctr.ingests++;
	return rc;
}

/* flush_install without an ingest.  REQUIRES: the write lock, caught up. */
static int
flush_locked(lsm_db *db, lsm_err *e)
{
	bool		installed;

	return flush_install(db, NULL, 0, 0, false, false, 0, &installed, e);
}

/*
 * The switch of a flush outside the write lock ("flushes outside the write
 * lock" in docs/architecture.md): table f (or NULL: nothing to write) holds
 * the memtable of log lognum up to sequence snap, which the log's records
 * end at offset off.  Copies the log's records after off into a new log and
 * its memtable, and switches in a manifest that adds f to level 0 with the
 * new log and last_seq snap.  *installed tells whether it did; not if
 * another switch came first (*superseded: f is stale) or a prepared batch
 * is undecided (the caller flushes under the lock).
 * REQUIRES: the write lock, caught up.
 */
static int
switch_after_build(lsm_db *db, lsm_file *f, uint64_t lognum, uint64_t off,
				   uint64_t snap, bool *installed, bool *superseded,
				   lsm_err *e)
{
	lsm_memtable *shared = NULL,
			   *fresh = NULL;
	lsm_memfile_header *shdr = NULL;
	lsm_wal_replay_result res;
	lsm_version *v;
	uint64_t	len = db->log_off - off,
				newlog;
	uint8_t    *copy = NULL;
	char		name[32],
				oldname[32];
	int			logfd = -1,
				rc;

	*installed = false;
	*superseded = db->log_number != lognum || db->current->last_seq >= snap;
	if (*superseded || lsm_memtable_undecided(db->mem, NULL, NULL) > 0)
		return LSM_OK;
	LSM_ASSERT(db->log_whole && db->log_off >= off);

	/*
	 * The old log durable first: after any crash it holds every record
	 * the copy holds, so the copy never looks like a log newer than the
	 * manifest's (check_directory).
	 */
	lsm_dir_name(LSM_F_LOG, lognum, oldname, sizeof(oldname));
	if (len > 0 && (rc = lsm_env_fsync(db->log_fd, oldname, e)) != LSM_OK)
		return rc;
	newlog = (f ? f->meta.number : db->current->next_file) + 1;
	db->mem_need = (size_t) len;
	rc = create_next_log(db, &newlog, &logfd, snap, &shared, &shdr, e);
	db->mem_need = 0;
	if (rc != LSM_OK)
		return rc;
	lsm_dir_name(LSM_F_LOG, newlog, name, sizeof(name));
	if (!shared && (fresh = new_memtable(db)) == NULL)
		rc = LSM_NOMEM_ERR(e);

	/*
	 * The records appended since the snapshot, copied (a record holds no
	 * offset) and replayed into the new memtable; then durable, with the
	 * new files' names (invariants 4 and 8).
	 */
	if (rc == LSM_OK && len > 0)
	{
		if (len > SIZE_MAX || (copy = malloc((size_t) len)) == NULL)
			rc = LSM_NOMEM_ERR(e);
		if (rc == LSM_OK)
			rc = lsm_env_pread(db->log_fd, copy, (size_t) len, (off_t) off,
							   oldname, e);
		if (rc == LSM_OK)
			rc = lsm_env_pwrite(logfd, copy, (size_t) len, 0, name, e);
		free(copy);
		if (rc == LSM_OK)
			rc = lsm_wal_replay(logfd, name, 0, snap + 1, apply_payload,
								shared ? shared : fresh, &res, e);
		db->ctr.flush_copied += (uint64_t) res.records;
		if (rc == LSM_OK &&
			(res.end_off != len || res.last_seq != db->last_seq))
			rc = LSM_CORRUPT(e, "the copy of write-ahead log %s's last records in %s ends at %llu, sequence %llu, not %llu, %llu",
							 oldname, name,
							 (unsigned long long) res.end_off,
							 (unsigned long long) res.last_seq,
							 (unsigned long long) len,
							 (unsigned long long) db->last_seq);
		if (rc == LSM_OK)
			rc = lsm_env_fsync(logfd, name, e);
		/* the new shared memtable holds them: no one may apply them again */
		if (rc == LSM_OK && shdr)
		{
			lsm_memfile_store(&shdr->applied_seq, db->last_seq);
			lsm_memfile_store(&shdr->applied_off, len);
			lsm_memfile_store(&shdr->apply_to, len);
		}
	}
	lsm_env_crash_point();
	if (rc == LSM_OK)
		rc = lsm_env_fsync_dir(db->dir, e);
	if (rc == LSM_OK)
	{
		if ((v = lsm_version_edit(db->current, NULL, 0, &f, f ? 1 : 0,
								  0)) == NULL)
			rc = LSM_NOMEM_ERR(e);
		else
		{
			v->log_number = newlog;
			v->last_seq = snap;
			if (v->next_file < newlog + 1)
				v->next_file = newlog + 1;
			rc = lsm_db_install(db, v, e);
			*installed = db->current == v;
			lsm_version_unref(v);
		}
	}
	if (!*installed)
	{
		discard_next_log(db, newlog, logfd, shared);
		lsm_memtable_unref(fresh);
		return rc;
	}
	/* invariant (5): the old log goes once the manifest past it is durable */
	take_next_log(db, newlog, logfd, len, shared, shdr, fresh, rc == LSM_OK);
	db->ctr.flushes++;
	return rc;
}

/*
 * Flushes the memtable outside the write lock (docs/architecture.md): under
 * LOCK.flush (waiting for it with wait, else LSM_OK at once if another
 * process holds it: that one flushes), builds the table from a snapshot of
 * the shared memtable while other writers go on, then switches logs under
 * the write lock (switch_after_build).  With force, whatever the memtable
 * holds; else only if it is still at its flush threshold.  Flushes under
 * the lock instead where that cannot work: an exclusive handle, a memtable
 * of the handle's own, an undecided prepared batch, lsm_lock held.
 */
static int
flush_outside(lsm_db *db, bool wait, bool force, lsm_err *e)
{
	lsm_memtable *mt;
	lsm_file   *f = NULL;
	uint64_t	lognum,
				off,
				snap;
	bool		bottom,
				installed = false,
				superseded = false;
	int			rc;

	if (db->user_locked || db->opt.exclusive)
	{
		if ((rc = lsm_db_write_lock(db, e)) == LSM_OK)
		{
			rc = flush_locked(db, e);
			lsm_db_write_unlock(db);
		}
		return rc;
	}
	rc = lsm_db_side_lock(db, &db->flush_fd, "LOCK.flush", wait, e);
	if (rc == LSM_BUSY && !wait)
	{
		lsm_err_clear(e);
		return LSM_OK;
	}
	if (rc != LSM_OK)
		return rc;
	/* the process a claim was for, if it is us, has begun */
	if (db->page)
		__atomic_store_n(&db->page->flush_claim, 0, __ATOMIC_SEQ_CST);
	rc = lsm_db_write_lock(db, e);
	if (rc != LSM_OK)
		goto out;
	/* flushed meanwhile, by another process or under the lock */
	if (lsm_memtable_entries(db->mem) == 0 ||
		(!force && lsm_memtable_bytes(db->mem) < db->opt.memtable_bytes))
	{
		lsm_db_write_unlock(db);
		goto out;
	}
	if (db->mhdr == NULL || lsm_memtable_undecided(db->mem, NULL, NULL) > 0)
	{
		rc = flush_locked(db, e);
		lsm_db_write_unlock(db);
		goto out;
	}
	mt = db->mem;
	lsm_memtable_ref(mt);
	lognum = db->log_number;
	off = db->log_off;
	snap = db->last_seq;
	bottom = no_tables(db->current);
	lsm_db_write_unlock(db);

	rc = write_level0(db, mt, snap, bottom, true, &f, e);
	lsm_memtable_unref(mt);
	lsm_env_crash_point();
	if (rc == LSM_OK && (rc = lsm_db_write_lock(db, e)) == LSM_OK)
	{
		rc = switch_after_build(db, f, lognum, off, snap, &installed,
								&superseded, e);
		/* a prepared batch came meanwhile: its carry needs the old way */
		if (rc == LSM_OK && !installed && !superseded)
			rc = flush_locked(db, e);
		lsm_db_write_unlock(db);
	}
	if (f && !installed)
		lsm_db_remove_table(db, f->meta.number);
	lsm_file_unref(f);
out:
	lsm_env_unlock(db->flush_fd);
	return rc;
}

/* lsm_flush (waiting, forced) and lsm_flush_try (neither) */
static int
flush_api(lsm_db *db, bool wait)
{
	lsm_err		e;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	return lsm_db_fail(db, flush_outside(db, wait, wait, &e), &e);
}

int
lsm_flush(lsm_db *db)
{
	return flush_api(db, true);
}

int
lsm_flush_needed(lsm_db *db)
{
	return db != NULL && db->mhdr != NULL && !db->opt.exclusive &&
		lsm_memtable_bytes(db->mem) >= db->opt.memtable_bytes;
}

int
lsm_flush_claim(lsm_db *db, int ttl_ms)
{
	if (!lsm_flush_needed(db) || db->opt.read_only || db->user_locked)
		return false;
	/* not while a flush is under way (nor if the lock cannot be had) */
	if (lsm_db_side_lock_probe(db, &db->flush_fd, "LOCK.flush") != LSM_OK)
		return false;
	return db->page == NULL || lsm_db_claim(&db->page->flush_claim, ttl_ms);
}

bool
lsm_db_claim(uint64_t *slot, int ttl_ms)
{
	uint64_t	now = now_ns(),
				old;

	old = __atomic_load_n(slot, __ATOMIC_SEQ_CST);
	for (;;)
	{
		/* one from a clock that ran ahead of ours (another boot) is stale */
		if (old != 0 && old <= now &&
			now - old < (uint64_t) (ttl_ms > 0 ? ttl_ms : 0) * 1000000)
			return false;
		if (__atomic_compare_exchange_n(slot, &old, now, false,
										__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return true;
	}
}

int
lsm_flush_try(lsm_db *db)
{
	return flush_api(db, false);
}

/* ---------- writes ---------- */

int
lsm_write_wait(lsm_db *db)
{
	lsm_err		e;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = write_wait(db, &e);
	return lsm_db_fail(db, rc, &e);
}

/* lsm_write_wait. */
static int
write_wait(lsm_db *db, lsm_err *e)
{
	int			rc = LSM_OK;

	if (db->wait_last == 0)
		return LSM_OK;
	if (db->page)
	{
		rc = wait_durable(db, db->wait_seq, db->wait_log, e);

		/*
		 * Everything up to our record is durable now or was committed
		 * without sync behind what we waited for: anyone may read it.  The
		 * leader of the sync raised visible_seq too, but perhaps not yet.
		 */
		if (rc == LSM_OK)
			page_raise(&db->page->visible_seq, db->wait_last);
	}
	if (rc == LSM_OK)
		acknowledge(db, db->wait_last);
	db->wait_seq = db->wait_last = db->wait_log = 0;
	return rc;
}

int
lsm_db_sync_seen(lsm_db *db, lsm_err *e)
{
	if (db->page == NULL)
		return db->log_fd >= 0 ? lsm_env_fsync(db->log_fd, "write-ahead log", e)
			: LSM_OK;
	db->wait_seq = db->wait_last = db->last_seq;
	db->wait_log = db->log_number;
	return write_wait(db, e);
}

/*
 * Preallocation of the log (wal.h): before an append of len bytes at
 * log_off, makes sure zeros follow the records that far, writing zeros up
 * to the next multiple of LOG_PREALLOC when they do not (the next fdatasync
 * carries the file's new size once, not at every commit), and, with map,
 * that the handle's mapping of the log covers them (an append without sync
 * copies into it: "Log appends without a system call" in
 * docs/architecture.md).  Only the writer under the write lock extends, at
 * the file's end, so no record is overwritten; only the writer under the
 * write lock truncates, and tells the others (truncate_log).  A failure
 * fails the commit before its append (zeros written in part are zeros
 * still).
 */
#define LOG_PREALLOC (1 << 20)

static int
reserve_log(lsm_db *db, size_t len, bool map, lsm_err *e)
{
	uint64_t	need = db->log_off + len,
				to;
	struct stat st;
	char		name[32];
	int			rc;

	if (db->page == NULL)
	{
		/* truncations by others go unseen: map afresh for every copy */
		if (map)
			forget_log_alloc(db);
	}
	else if (page_load(&db->page->log_cuts) != db->log_cuts)
	{
		forget_log_alloc(db);
		db->log_cuts = page_load(&db->page->log_cuts);
	}
	if (need <= db->log_map_len || (!map && need <= db->log_alloc))
		return LSM_OK;
	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	if (need > db->log_alloc)
	{
		if (fstat(db->log_fd, &st) != 0)
			return lsm_err_sys(e, errno, "could not stat \"%s\"", name);
		db->log_alloc = (uint64_t) st.st_size;
	}
	if (need > db->log_alloc)
	{
		to = (need + LOG_PREALLOC) / LOG_PREALLOC * LOG_PREALLOC;	/* past need */
		rc = lsm_wal_prealloc(db->log_fd, name, db->log_alloc, to, e);
		if (rc != LSM_OK)
		{
			forget_log_alloc(db);
			return rc;
		}
		db->log_alloc = to;
	}
	if (!map)
		return LSM_OK;
	if (db->log_alloc > SIZE_MAX)
		return lsm_err_set(e, LSM_NOMEM, "%s is too large to map", name);
	lsm_env_munmap(db->log_map, db->log_map_len);
	db->log_map_len = 0;
	db->log_prefaulted = 0;
	rc = lsm_env_mmap_rw(db->log_fd, (size_t) db->log_alloc, name,
						 &db->log_map, e);
	if (rc == LSM_OK)
		db->log_map_len = (size_t) db->log_alloc;
	return rc;
}

static int	check_key(lsm_db *db, const void *key, size_t klen, int cond,
					  uint64_t seq, uint64_t hash, bool *present, lsm_err *e);

/* Records in b that its entry at offset off failed condition cond. */
static int
conflict(lsm_batch *b, size_t off, uint32_t entry, int cond, bool present,
		 uint64_t owner, lsm_err *e)
{
	const uint8_t *key;
	size_t		klen,
				vlen,
				next;

	lsm_batch_entry(b, off, &key, &klen, &vlen, &next);
	b->conflict.entry = entry;
	b->conflict.key = key;
	b->conflict.klen = klen;
	b->conflict.cond = cond;
	b->conflict.present = present;
	b->conflict.owner = owner;
	if (cond == 0)
		return lsm_err_set(e, LSM_CONFLICT,
						   "entry %u of the batch writes a key that a prepared write of owner %llx holds",
						   entry, (unsigned long long) owner);
	return lsm_err_set(e, LSM_CONFLICT,
					   "the condition of entry %u of the batch does not hold: the key %s",
					   entry, present ? "holds a value" : "holds no value");
}

/*
 * Checks the conditions of b (lsm_batch_require) against the store, under
 * the write lock after the catch-up: LSM_CONFLICT at the first that fails
 * (b->conflict says which), else LSM_OK, the entries whose
 * LSM_IF_ABSENT_SKIP failed removed from b.
 */
static int
check_conditions(lsm_db *db, lsm_batch *b, lsm_err *e)
{
	const uint8_t *key;
	size_t		klen,
				vlen,
				off,
				next;
	uint64_t	owner;
	uint32_t	i,
				ndrop = 0;
	bool		present;
	int			rc;

	memset(&b->conflict, 0, sizeof(b->conflict));
	if ((b->require & LSM_IF_NOT_PREPARED) &&
		lsm_memtable_undecided(db->mem, NULL, NULL) > 0)
	{
		off = LSM_WAL_HEADER + LSM_BATCH_HEADER;
		for (i = 0; i < b->count; i++, off = next)
		{
			lsm_batch_entry(b, off, &key, &klen, &vlen, &next);
			rc = lsm_prepared_holds(db, key, klen, &owner);
			if (rc == LSM_OK)
				return conflict(b, off, i, 0, false, owner, e);
			if (rc != LSM_NOTFOUND)
			{
				*e = db->err;
				return rc;
			}
		}
	}
	/* nothing committed since every condition held */
	if (b->since != 0 && db->read_seq == b->since)
		return LSM_OK;
	for (i = 0; i < b->nconds; i++)
	{
		lsm_batch_cond *c = &b->conds[i];

		lsm_batch_entry(b, c->off, &key, &klen, &vlen, &next);
		rc = check_key(db, key, klen, c->cond, c->seq, c->hash, &present, e);
		if (rc == LSM_CONFLICT && c->cond == LSM_IF_ABSENT_SKIP)
		{
			c->drop = true;
			ndrop++;
		}
		else if (rc == LSM_CONFLICT)
			return conflict(b, c->off, c->entry, c->cond, present, 0, e);
		else if (rc != LSM_OK)
			return rc;
	}
	if (ndrop > 0)
		lsm_batch_drop(b);
	return LSM_OK;
}

int
lsm_db_write(lsm_db *db, lsm_batch *b, bool sync, bool defer, lsm_err *e)
{
	lsm_lock_page *pg = db->page;
	batch_apply ba;
	char		name[32];
	uint64_t	first,
				last,
				want = 0,
				target = 0,
				log_number;
	bool		flushed = false,
				flush_due = false;
	int			rc;

	db->wait_seq = db->wait_last = db->wait_log = 0;
	if (b->count == 0)
		return LSM_OK;
	rc = write_lock(db, true, b->located == 0 ? b : NULL, e);
	if (rc != LSM_OK)
		return rc;
	if ((b->nconds > 0 || b->require != 0) &&
		((rc = check_conditions(db, b, e)) != LSM_OK || b->count == 0))
	{
		lsm_db_write_unlock(db);
		return rc;
	}

	/*
	 * Room for the batch in the shared memtable, before it is in the log:
	 * else flush first, and with the memtable of a fresh log still too
	 * small (or its blocks not to be had), go on with one of our own.
	 */
	if (db->mhdr &&
		lsm_memtable_reserve(db->mem, b->count, b->rep.len, NULL) != LSM_OK)
	{
		db->mem_need = b->rep.len;
		if (lsm_memtable_entries(db->mem) > 0)
			rc = flush_locked(db, e);
		db->mem_need = 0;
		if (rc == LSM_OK && db->mhdr &&
			lsm_memtable_reserve(db->mem, b->count, b->rep.len, NULL) != LSM_OK)
			rc = leave_memfile(db, true, e);	/* the log is empty */
		if (rc != LSM_OK)
		{
			lsm_db_write_unlock(db);
			return rc;
		}
	}

	/* invariant (7): the catch-up under the lock left no tail to append to */
	LSM_ASSERT(db->log_whole);
	first = db->last_seq + 1;
	last = first + b->count - 1;
	lsm_put_u64(b->rep.data + LSM_WAL_HEADER, first);
	lsm_put_u32(b->rep.data + LSM_WAL_HEADER + 8, b->count);
	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	log_number = db->log_number;

	/*
	 * Group commit: a sync waits until after the lock is released, and
	 * want_seq says so before the record exists, so that no reader that
	 * replays it takes it for visible.  A commit without sync behind one
	 * that waits for its sync waits for that one (a log is read in order).
	 * Without LOCK's page there is no group: sync here.
	 */
	if (pg)
	{
		want = page_load(&pg->want_seq);
		if (sync)
		{
			page_store(&pg->want_seq, last);
			target = last;
		}
		else if (want > page_load(&pg->synced_seq))
			target = want;
	}
	rc = reserve_log(db, b->rep.len, !sync, e);
	if (rc == LSM_OK)
		rc = lsm_wal_append(db->log_fd, sync ? NULL : db->log_map, name,
							db->log_off, b->rtype, b->rep.data, b->rep.len, e);
	if (rc == LSM_OK && sync && pg == NULL)
		rc = lsm_env_fsync(db->log_fd, name, e);
	if (rc != LSM_OK)
	{
		/*
		 * Invariant (7): no partial or unacknowledged record stays behind.
		 * If it cannot be cut now, our position is not the end of the log:
		 * the next catch-up (ours or another handle's) finds it and cuts it.
		 */
		if (pg && sync)
			page_store(&pg->want_seq, want);
		if (truncate_log(db, db->log_off, name, NULL) != LSM_OK)
			db->log_whole = false;
		lsm_db_write_unlock(db);
		return rc;
	}
	if (pg)
	{
		page_store(&pg->written_seq, last);
		/* no record before it waits for a sync: readers may see it */
		if (!sync && target == 0)
			page_raise(&pg->visible_seq, last);
	}
	db->ctr.wal_bytes_written += b->rep.len;
	db->ctr.user_bytes_written += b->user_bytes;
	lsm_env_crash_point();
	if (db->mhdr)
		lsm_memfile_store(&db->mhdr->apply_to, db->log_off + b->rep.len);
	lsm_env_crash_point();
	ba.mem = db->mem;
	ba.b = b;
	ba.first = first;
	rc = apply_record(db->mem, b->rtype, b->rep.data + LSM_WAL_HEADER,
					  b->rep.len - LSM_WAL_HEADER, apply_entry_cp, &ba, false,
					  e);
	b->located = 0;
	if (rc != LSM_OK && db->mhdr)
	{
		/* committed, but left applying: the next catch-up rebuilds it */
		db->log_whole = false;
		lsm_db_write_unlock(db);
		return rc;
	}
	if (rc != LSM_OK)
	{
		/* committed, but our memtable is incomplete: rebuild it from the log */
		lsm_memtable *fresh = new_memtable(db);

		if (fresh)
		{
			lsm_memtable_unref(db->mem);
			db->mem = fresh;
			db->log_off = 0;
			db->last_seq = db->current->last_seq;
		}
		db->log_whole = false;	/* no fast path past what we have not read */
		lsm_db_write_unlock(db);
		return rc;
	}
	db->log_off += b->rep.len;
	db->log_size = db->log_off;
	db->last_seq = last;
	if (db->mhdr)
		publish_memfile(db);

	/*
	 * A full memtable is flushed outside the lock, once this write is done
	 * (or by the caller that defers: lsm_flush_needed), while the others
	 * write on; at twice the threshold (a flusher that stalls or died) and
	 * where it cannot be shared, under the lock, as a write stall.
	 */
	if (lsm_memtable_bytes(db->mem) >= db->opt.memtable_bytes)
	{
		if (db->mhdr && !db->opt.exclusive &&
			lsm_memtable_bytes(db->mem) / 2 < db->opt.memtable_bytes)
			flush_due = true;
		else
		{
			/* the batch is committed; a failed flush is retried later */
			flushed = flush_locked(db, e) == LSM_OK;
			if (!flushed)
				lsm_db_background_failed(db, "flush", e);
			lsm_err_clear(e);
		}
	}
	lsm_db_write_unlock(db);
	db->wait_seq = target;
	db->wait_last = last;
	db->wait_log = log_number;
	if (!defer)
		rc = write_wait(db, e);
	if (!defer && !db->user_locked && flush_due && rc == LSM_OK)
	{
		lsm_err		fe;
		uint64_t	before = db->ctr.flushes;

		/* the write is committed: a failed flush is retried later */
		lsm_err_clear(&fe);
		if (flush_outside(db, false, false, &fe) != LSM_OK)
			lsm_db_background_failed(db, "flush", &fe);
		flushed = db->ctr.flushes != before;
	}
	/* the caller compacts: lsm_db_compact_if_due */
	if (flushed && db->opt.auto_compact)
		db->compact_due = true;
	return rc;
}

/* lsm_dir_create_fn of lsm_db_move_in: moves file arg to path. */
static int
move_to(const char *path, uint64_t number, void *arg, lsm_err *e)
{
	(void) number;
	return lsm_env_rename_noreplace(arg, path, e);
}

int
lsm_db_move_in(lsm_db *db, const char *stage_dir, const lsm_table_meta *tables,
			   int n, lsm_file **files, int *moved, lsm_err *e)
{
	char		name[LSM_FNAME_MAX],
				from[4096];
	uint64_t	number = db->current->next_file;
	int			i,
				rc = LSM_OK;

	/*
	 * Invariant (8): each run moves into the store under a number nobody
	 * uses (a compaction in another process may be creating files past
	 * next_file right now, and prepared tables wait there: a name that
	 * exists is skipped, never replaced), and only under the write lock, so
	 * the orphan sweep, which holds it too, never sees a moved run before
	 * the manifest or prepared write that names it.
	 */
	*moved = 0;
	for (i = 0; i < n; i++)
	{
		lsm_file   *f = lsm_file_new();

		if (f == NULL)
			return LSM_NOMEM_ERR(e);
		files[i] = f;
		f->meta = tables[i];
		f->meta.smallest = lsm_memdup(tables[i].smallest, tables[i].smallest_len);
		f->meta.largest = lsm_memdup(tables[i].largest, tables[i].largest_len);
		if (f->meta.smallest == NULL || f->meta.largest == NULL)
			return LSM_NOMEM_ERR(e);
		if (stage_dir == NULL)
			continue;			/* in the store already */
		lsm_dir_name(LSM_F_TABLE, tables[i].number, name, sizeof(name));
		if ((rc = lsm_dir_path(from, sizeof(from), stage_dir, name, e)) != LSM_OK ||
			(rc = lsm_dir_create(db->dir, LSM_F_TABLE, &number, move_to,
								 from, e)) != LSM_OK)
			return rc;
		(*moved)++;
		f->meta.number = number++;
	}
	return LSM_OK;
}

void
lsm_db_move_back(lsm_db *db, const char *stage_dir,
				 const lsm_table_meta *tables, lsm_file **files, int moved)
{
	char		name[32],
				from[4096],
				to[4096];
	int			i;

	for (i = 0; i < moved; i++)
	{
		lsm_dir_name(LSM_F_TABLE, files[i]->meta.number, name, sizeof(name));
		path_of(db, name, from, sizeof(from));
		lsm_dir_name(LSM_F_TABLE, tables[i].number, name, sizeof(name));
		(void) lsm_dir_path(to, sizeof(to), stage_dir, name, NULL);
		if (lsm_env_rename(from, to, NULL) != LSM_OK)
			(void) lsm_env_unlink(from, NULL);
	}
}

/* LSM_OK if table file number of the store exists, else an error. */
static int
table_exists(lsm_db *db, uint64_t number, lsm_err *e)
{
	char		name[32],
				path[4096];
	struct stat st;

	lsm_dir_name(LSM_F_TABLE, number, name, sizeof(name));
	path_of(db, name, path, sizeof(path));
	if (stat(path, &st) == 0)
		return LSM_OK;
	if (errno == ENOENT)
		return LSM_CORRUPT(e, "table %s of a prepared write to store \"%s\" is missing",
						   name, db->dir);
	return lsm_err_sys(e, errno, "could not stat \"%s\"", path);
}

int
lsm_db_ingest(lsm_db *db, const char *stage_dir, const lsm_table_meta *tables,
			  const int *run_of, int n, int nruns, bool replace,
			  uint64_t owner, bool *installed, lsm_err *e)
{
	lsm_file  **files;
	const uint8_t *list;
	size_t		len;
	uint64_t	nseq;
	lsm_err		le;
	bool		deep;
	int			moved = 0,
				type,
				i,
				rc;

	*installed = false;
	if (n <= 0 && !replace)
		return LSM_OK;
	/* a replace moves the sequence on even with nothing to install */
	nseq = (uint64_t) (nruns > 0 ? nruns : 1);
	files = calloc((size_t) n + 1, sizeof(lsm_file *));
	if (files == NULL)
		return LSM_NOMEM_ERR(e);

	/*
	 * Levels >= 1 change only under LOCK.compact; without it, level 0.  A
	 * replace waits for it: a compaction running meanwhile would install
	 * outputs made of the tables the replace drops.
	 */
	if (db->user_compact_locked)
		deep = true;			/* lsm_lock took it; lsm_unlock releases it */
	else if (replace)
	{
		if ((rc = lsm_db_compact_lock(db, true, e)) != LSM_OK)
		{
			free(files);
			return rc;
		}
		deep = true;
	}
	else
	{
		lsm_err_clear(&le);
		deep = lsm_db_compact_lock(db, false, &le) == LSM_OK;
	}
	rc = lsm_db_write_lock(db, e);
	if (rc != LSM_OK)
	{
		if (deep && !db->user_compact_locked)
			lsm_env_unlock(db->compact_fd);
		free(files);
		return rc;
	}
	if (db->last_seq + nseq > LSM_MAX_SEQUENCE)
		rc = lsm_err_set(e, LSM_INVALID, "sequence numbers exhausted");
	/* prepared tables: still undecided, now that the lock is held */
	if (rc == LSM_OK && owner != 0 &&
		(lsm_memtable_prepared(db->mem, owner, &type, &list, &len) != LSM_OK ||
		 type != LSM_WAL_PREPARE_TABLES))
		rc = LSM_NOTFOUND;
	for (i = 0; i < n && rc == LSM_OK && owner != 0; i++)
		rc = table_exists(db, tables[i].number, e);
	if (rc == LSM_OK)
		rc = lsm_db_move_in(db, stage_dir, tables, n, files, &moved, e);
	for (i = 0; i < n && rc == LSM_OK; i++)
	{
		/* run r is newer than run r - 1 and than all the store holds */
		files[i]->meta.global_seq = db->last_seq + 1 + (uint64_t) run_of[i];
		files[i]->meta.min_seq = files[i]->meta.max_seq = files[i]->meta.global_seq;
	}
	if (rc == LSM_OK)
		rc = flush_install(db, files, n, nseq, deep, replace, owner, installed,
						   e);
	/*
	 * Invariant (5): only once the manifest without them is durable.  A
	 * replace drops every table; an ingest into levels >= 1 replaces the
	 * value filter hierarchy's nodes on the paths to its tables.  Both hold
	 * both locks, so no flush, compaction or ingest is writing a file that
	 * no manifest names yet.
	 */
	if (deep && rc == LSM_OK)
		(void) lsm_db_remove_obsolete(db, db->current, false);
	/* no manifest names them: put the moved runs back where they were */
	if (rc != LSM_OK && !*installed)
		lsm_db_move_back(db, stage_dir, tables, files, moved);
	for (i = 0; i < n; i++)
		lsm_file_unref(files[i]);
	free(files);
	lsm_db_write_unlock(db);
	if (deep && !db->user_compact_locked)
		lsm_env_unlock(db->compact_fd);
	/* the caller compacts: lsm_db_compact_if_due */
	if (*installed && db->opt.auto_compact)
		db->compact_due = true;
	return rc;
}

/* ---------- reads ---------- */

/*
 * Does the memtable need a search for the key of hash h?  Its key filter
 * answers most absent keys with one cache line (counted) instead of a skip
 * list descent.
 */
static inline bool
mem_may_hold(lsm_db *db, uint64_t h)
{
	if (lsm_memtable_entries(db->mem) == 0)
		return false;
	if (lsm_memtable_may_hold_key(db->mem, h))
		return true;
	db->ctr.memtable_negatives++;
	return false;
}

/* Returns a copy of a found value to the caller. */
static int
found(lsm_db *db, int del, const uint8_t *v, size_t n, void **val, size_t *vlen)
{
	if (del)
		return LSM_NOTFOUND;
	*val = lsm_memdup(v, n);
	if (*val == NULL)
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	*vlen = n;
	return LSM_OK;
}



int
lsm_get(lsm_db *db, const void *key, size_t klen, void **val, size_t *vlen)
{
	lsm_table_hit hit;
	const uint8_t *mv;
	size_t		mvlen;
	uint64_t	seq,
				h;
	int			kind,
				rc;

	if (db == NULL || val == NULL || vlen == NULL || (key == NULL && klen > 0))
		return LSM_INVALID;
	*val = NULL;
	*vlen = 0;
	if (klen > LSM_MAX_KEY_LEN)
		return lsm_err_set(&db->err, LSM_INVALID,
						   "key of %zu bytes is longer than %d", klen,
						   LSM_MAX_KEY_LEN);
	db->ctr.gets++;
	/* hash sharing: one hash for the memtable and every table of every level */
	h = lsm_key_hash(key, klen);
	db->ctr.key_hashes++;
	if (mem_may_hold(db, h) &&
		lsm_memtable_get(db->mem, key, klen, db->read_seq, &kind, &mv, &mvlen,
						 &seq))
		return found(db, kind == LSM_KIND_DEL, mv, mvlen, val, vlen);
	rc = lsm_version_get(db->current, key, klen, h, &hit, &db->ctr, &db->err);
	if (rc != LSM_OK)
		return rc;
	return found(db, hit.del, hit.val, hit.vlen, val, vlen);
}

/*
 * What the handle (under the write lock: the store) holds for key that is
 * newer than seq: *written false if no write after seq wrote it; else
 * *present, with the value in *v (into the memtable or a table's mapping,
 * valid until the handle moves on).  Absent from the tables of a store
 * flushed since seq counts as written: a delete's tombstone may have gone
 * with the flush.
 */
static int
newest_since(lsm_db *db, const void *key, size_t klen, uint64_t seq,
			 bool *written, bool *present, const uint8_t **v, size_t *vlen,
			 lsm_err *e)
{
	lsm_table_hit hit;
	uint64_t	s,
				h = lsm_key_hash(key, klen);
	int			kind,
				rc;

	*written = true;
	*present = false;
	/* the memtable's newest entry of key is the store's */
	if (mem_may_hold(db, h) &&
		lsm_memtable_get(db->mem, key, klen, db->read_seq, &kind, v, vlen, &s))
	{
		*written = s > seq;
		*present = kind != LSM_KIND_DEL;
		return LSM_OK;
	}
	/* no SSTable entry is newer than the version's last_seq */
	if (db->current->last_seq <= seq)
	{
		*written = false;
		return LSM_OK;
	}
	rc = lsm_version_get(db->current, key, klen, h, &hit, &db->ctr, e);
	if (rc == LSM_NOTFOUND)
		return LSM_OK;
	if (rc != LSM_OK)
		return rc;
	*written = hit.seq > seq;
	*present = !hit.del;
	*v = hit.val;
	*vlen = hit.vlen;
	return LSM_OK;
}

/* Whether condition cond (LSM_IF_*) of key holds: LSM_OK or LSM_CONFLICT. */
static int
check_key(lsm_db *db, const void *key, size_t klen, int cond, uint64_t seq,
		  uint64_t hash, bool *present, lsm_err *e)
{
	const uint8_t *v = NULL;
	size_t		vlen = 0;
	bool		written;
	int			rc;

	/* seq 0 claims nothing: every key written was written after it */
	rc = newest_since(db, key, klen, seq, &written, present, &v, &vlen, e);
	if (rc != LSM_OK || (!written && seq != 0))
		return rc;
	if (cond == LSM_IF_VALUE
		? *present && lsm_hash(v, vlen) == hash : !*present)
		return LSM_OK;
	return LSM_CONFLICT;
}

int
lsm_written_since(lsm_db *db, const void *key, size_t klen, uint64_t seq)
{
	const uint8_t *v;
	size_t		vlen;
	bool		written,
				present;
	int			rc;

	if (db == NULL || (key == NULL && klen > 0))
		return LSM_INVALID;
	if (klen > LSM_MAX_KEY_LEN)
		return lsm_err_set(&db->err, LSM_INVALID,
						   "key of %zu bytes is longer than %d", klen,
						   LSM_MAX_KEY_LEN);
	rc = newest_since(db, key, klen, seq, &written, &present, &v, &vlen,
					  &db->err);
	if (rc != LSM_OK)
		return rc;
	return written ? LSM_OK : LSM_NOTFOUND;
}

int
lsm_check(lsm_db *db, const void *key, size_t klen, int cond, uint64_t seq,
		  uint64_t hash, int *present)
{
	bool		p = false;
	int			rc;

	if (db == NULL || key == NULL || klen == 0 ||
		(cond != LSM_IF_ABSENT && cond != LSM_IF_VALUE))
		return LSM_INVALID;
	if (klen > LSM_MAX_KEY_LEN)
		return lsm_err_set(&db->err, LSM_INVALID,
						   "key of %zu bytes is longer than %d", klen,
						   LSM_MAX_KEY_LEN);
	rc = check_key(db, key, klen, cond, seq, hash, &p, &db->err);
	if (present)
		*present = p;
	if (rc == LSM_CONFLICT)
		return lsm_err_set(&db->err, rc, "the key %s",
						   p ? "holds a value" : "holds no value");
	return rc;
}

/* Per-key state of a multi-get. */
typedef struct mget_key
{
	uint64_t	h;
	int			file;			/* candidate file in the level being probed */
	bool		done;
} mget_key;

int
lsm_multi_get(lsm_db *db, size_t n, const void *const *keys,
			  const size_t *klens, void **vals, size_t *vlens, int *rcs)
{
	lsm_version *v;
	mget_key   *st;
	size_t		i,
				left = n;
	int			l,
				j;

	if (db == NULL || (n > 0 && (keys == NULL || klens == NULL ||
								 vals == NULL || vlens == NULL || rcs == NULL)))
		return LSM_INVALID;
	st = malloc(sizeof(mget_key) * (n ? n : 1));
	if (st == NULL)
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	v = db->current;

	/*
	 * Hash every key once, fetching its memtable filter line meanwhile, then
	 * look in the memtable for those its filter does not rule out.
	 */
	for (i = 0; i < n; i++)
	{
		vals[i] = NULL;
		vlens[i] = 0;
		rcs[i] = LSM_NOTFOUND;
		st[i].done = false;
		if (klens[i] > LSM_MAX_KEY_LEN || (keys[i] == NULL && klens[i] > 0))
		{
			rcs[i] = LSM_INVALID;
			st[i].done = true;
			left--;
			continue;
		}
		db->ctr.gets++;
		st[i].h = lsm_key_hash(keys[i], klens[i]);
		db->ctr.key_hashes++;
		lsm_memtable_prefetch_key(db->mem, st[i].h);
	}
	for (i = 0; i < n; i++)
	{
		const uint8_t *mv;
		size_t		mvlen;
		uint64_t	seq;
		int			kind;

		if (st[i].done || !mem_may_hold(db, st[i].h))
			continue;
		if (lsm_memtable_get(db->mem, keys[i], klens[i], db->read_seq, &kind,
							 &mv, &mvlen, &seq))
		{
			rcs[i] = found(db, kind == LSM_KIND_DEL, mv, mvlen, &vals[i], &vlens[i]);
			st[i].done = true;
			left--;
		}
	}

	/*
	 * Level by level (level 0 file by file): first find each pending key's
	 * candidate table and prefetch its filter line, then probe them all.
	 */
	for (l = 0; l < LSM_MAX_LEVELS && left > 0; l++)
	{
		int			nf = l == 0 ? v->nfiles[0] : (v->nfiles[l] ? 1 : 0);

		for (j = 0; j < nf && left > 0; j++)
		{
			for (i = 0; i < n; i++)
			{
				const lsm_bloom *f;

				if (st[i].done)
					continue;
				if (l == 0)
					st[i].file = lsm_file_overlaps(v->files[0][j], keys[i], klens[i],
												   keys[i], klens[i]) ? j : -1;
				else
					st[i].file = lsm_version_locate(v, l, keys[i], klens[i]);
				if (st[i].file < 0)
					continue;
				f = &v->filters[l][st[i].file];
				if (f->num_lines > 0)
					lsm_bloom_prefetch(f, st[i].h);
			}
			for (i = 0; i < n; i++)
			{
				lsm_table_hit hit;
				int			rc;

				if (st[i].done || st[i].file < 0)
					continue;
				rc = lsm_version_probe(v, l, st[i].file, keys[i], klens[i],
									   st[i].h, &hit, &db->ctr, &db->err);
				if (rc == LSM_NOTFOUND)
					continue;
				st[i].done = true;
				left--;
				rcs[i] = rc == LSM_OK ?
					found(db, hit.del, hit.val, hit.vlen, &vals[i], &vlens[i]) : rc;
			}
		}
	}
	free(st);
	return LSM_OK;
}

/* ---------- verification ---------- */

int
lsm_verify(lsm_db *db)
{
	lsm_err		e;
	lsm_version *v;
	int			l,
				i,
				rc = LSM_OK;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	v = db->current;
	for (l = 0; l < LSM_MAX_LEVELS && rc == LSM_OK; l++)
		for (i = 0; i < v->nfiles[l] && rc == LSM_OK; i++)
		{
			lsm_file   *f = v->files[l][i];
			uint64_t	n;

			rc = lsm_table_verify(f->table, f->meta.smallest, f->meta.smallest_len,
								  f->meta.largest, f->meta.largest_len, &n, &e);
			if (rc == LSM_OK && n != f->meta.entries)
				rc = LSM_CORRUPT(&e, "table %llu holds %llu entries, the manifest says %llu",
								 (unsigned long long) f->meta.number,
								 (unsigned long long) n,
								 (unsigned long long) f->meta.entries);
			if (rc == LSM_OK && l > 0 && i > 0)
			{
				lsm_file   *p = v->files[l][i - 1];

				if (lsm_key_cmp(p->meta.largest, p->meta.largest_len,
								f->meta.smallest, f->meta.smallest_len) >= 0)
					rc = LSM_CORRUPT(&e, "tables %llu and %llu overlap in level %d",
									 (unsigned long long) p->meta.number,
									 (unsigned long long) f->meta.number, l);
			}
		}
	if (rc == LSM_OK)
		rc = lsm_hier_verify(v, &e);
	if (rc == LSM_OK)
		rc = verify_log(db, &e);
	if (rc == LSM_OK)
		rc = check_directory(db, true, &e);
	return lsm_db_fail(db, rc, &e);
}

/*
 * lsm_verify's checks of the write-ahead log: the whole log must read back
 * (a bad record before good ones fails), an invalid tail is reported (the
 * next writer discards it), and so is the store's record of the tails
 * writers have discarded.
 */
static int
verify_log(lsm_db *db, lsm_err *e)
{
	lsm_memtable *scratch = lsm_memtable_new();
	lsm_wal_replay_result res;
	lsm_wal_tail_stats tails;
	char		name[32];
	int			rc;

	if (scratch == NULL)
		return LSM_NOMEM_ERR(e);
	lsm_dir_name(LSM_F_LOG, db->log_number, name, sizeof(name));
	rc = lsm_wal_replay(db->log_fd, name, 0, db->current->last_seq + 1,
						apply_payload, scratch, &res, e);
	lsm_memtable_unref(scratch);
	if (rc != LSM_OK)
		return rc;
	if (res.end_off < res.content_end)
		lsm_db_log(db, LSM_LOG_WARNING,
				   "write-ahead log %s of store \"%s\" ends with %llu bytes at offset %llu that are not a complete, valid record: the next writer discards them",
				   name, db->dir,
				   (unsigned long long) (res.content_end - res.end_off),
				   (unsigned long long) res.end_off);
	read_tails(db, &tails);
	if (tails.count > 0)
	{
		lsm_dir_name(LSM_F_LOG, tails.log_number, name, sizeof(name));
		lsm_db_log(db, LSM_LOG_WARNING,
				   "recovery has discarded %llu invalid write-ahead log tail%s from store \"%s\", the last %llu bytes at offset %llu of %s",
				   (unsigned long long) tails.count,
				   tails.count == 1 ? "" : "s", db->dir,
				   (unsigned long long) tails.bytes,
				   (unsigned long long) tails.offset, name);
	}
	return LSM_OK;
}

/* ---------- statistics ---------- */

int
lsm_get_stats(lsm_db *db, lsm_stats *st)
{
	lsm_version *v;
	int			l,
				i;

	if (db == NULL || st == NULL)
		return LSM_INVALID;
	*st = db->ctr;
	v = db->current;
	st->levels = LSM_MAX_LEVELS;
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		lsm_level_stats *ls = &st->level[l];

		memset(ls, 0, sizeof(*ls));
		ls->files = v->nfiles[l];
		for (i = 0; i < v->nfiles[l]; i++)
		{
			const lsm_table_meta *m = &v->files[l][i]->meta;

			ls->entries += m->entries;
			ls->bytes += m->size;
			ls->filter_bytes += m->filter_bytes;
			ls->value_filter_bytes += m->value_filter_bytes;
		}
	}
	st->memtable_bytes = lsm_memtable_bytes(db->mem);
	st->memtable_entries = lsm_memtable_entries(db->mem);
	st->memtable_shared = db->mhdr != NULL;
	read_tails(db, &st->wal_tails);
	/* what reads see: a check against "nothing committed since" needs it */
	st->last_sequence = db->read_seq;
	{
		const lsm_hier_shape *hs = &db->shape;

		/*
		 * The walk of the whole tree is the dear part of the statistics
		 * (planning reads them for every statement): once per tree.  A
		 * manifest switch bumps manifest_seq, so a root freed and another
		 * allocated at its address is a new key.  (A new handle's zeroed
		 * cache is the shape of no tree, which it is.)
		 */
		if (db->shape_root != v->hroot || db->shape_seq != v->manifest_seq)
		{
			lsm_hier_shape_of(v->hroot, &db->shape);
			db->shape_root = v->hroot;
			db->shape_seq = v->manifest_seq;
		}
		st->hierarchy.height = hs->height;
		st->hierarchy.leaves = hs->leaves;
		st->hierarchy.internal = hs->internal;
		st->hierarchy.saturated = hs->saturated;
		st->hierarchy.node_bytes = hs->node_bytes;
		st->hierarchy.flat_bytes = lsm_flat_bytes(db->flat);
		st->hierarchy.value_filter_bits = v->value_filter_bits;
		st->hierarchy.value_filter_hashes = v->value_filter_hashes;
		st->hierarchy.hierarchy_order = v->hierarchy_order;
	}
	return LSM_OK;
}

uint64_t
lsm_last_sequence(lsm_db *db)
{
	return db != NULL ? db->read_seq : 0;
}

int
lsm_view_is_empty(lsm_db *db)
{
	int			l;

	if (db == NULL || lsm_memtable_entries(db->mem) > 0)
		return 0;
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		if (db->current->nfiles[l] > 0)
			return 0;
	return 1;
}

/* lsm_dir_create_fn of lsm_db_new_table */
typedef struct new_table
{
	lsm_db	   *db;
	bool		publish;
	lsm_table_builder **b;
} new_table;

static int
open_builder(const char *path, uint64_t number, void *arg, lsm_err *e)
{
	new_table  *t = arg;

	if (t->publish && t->db->page)
		__atomic_store_n(&t->db->page->flush_number, number, __ATOMIC_SEQ_CST);
	return lsm_table_builder_open(path, number, t->db->opt.block_bytes,
								  t->db->opt.key_bits_per_key, t->b, e);
}

int
lsm_db_new_table(lsm_db *db, uint64_t *number, bool publish,
				 lsm_table_builder **b, lsm_err *e)
{
	new_table	t = {db, publish, b};
	int			rc;

	*b = NULL;
	rc = lsm_dir_create(db->dir, LSM_F_TABLE, number, open_builder, &t, e);
	if (rc == LSM_OK && (rc = lsm_db_value_params(db, *b, e)) != LSM_OK)
	{
		lsm_table_builder_abandon(*b);
		*b = NULL;
	}
	return rc;
}

int
lsm_db_value_params(lsm_db *db, lsm_table_builder *b, lsm_err *e)
{
	lsm_value_params vp;

	vp.bits = db->current->value_filter_bits;
	vp.hashes = db->current->value_filter_hashes;
	vp.unindexed = db->current->value_unindexed;
	return lsm_table_builder_set_values(b, &vp, e);
}

void
lsm_reset_counters(lsm_db *db)
{
	if (db)
		memset(&db->ctr, 0, sizeof(db->ctr));
}

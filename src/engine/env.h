/*
 * env.h
 *		The file I/O shim.  Every write, fsync, rename, unlink and truncate the
 *		engine makes goes through here, so tests can inject faults at any step.
 *
 * Fault injection (tests only; the hooks cost one branch when unused):
 *	- fail the Nth write or the Nth fsync from now, with an errno (EIO,
 *	  ENOSPC), optionally after writing part of the buffer (a short write);
 *	- fail every open of the files whose names end in a given suffix, with
 *	  an errno (EACCES: a file the server cannot read);
 *	- track which bytes of each file were fsynced and, on request, drop the
 *	  unsynced ones (files truncated to their synced length, bytes written
 *	  in place since the last fsync zeroed, files never fsynced removed),
 *	  simulating a power failure.
 * The state is per process.
 */
#ifndef LSM_ENV_H
#define LSM_ENV_H

#include <sys/types.h>

#include "util.h"

/* Opens path; LSM_NOTFOUND if it does not exist (and O_CREAT not given). */
int			lsm_env_open(const char *path, int flags, int mode, int *fd,
						 lsm_err *e);

/* Writes all n bytes at the current position (looping over short writes). */
int			lsm_env_write(int fd, const void *buf, size_t n, const char *name,
						  lsm_err *e);

/*
 * Writes all n bytes at off (looping over short writes).  Fault tracking
 * takes bytes it writes below the synced length as zeros overwritten in
 * place: a simulated power loss zeros them again (the engine overwrites
 * only a log's preallocated zeros).
 */
int			lsm_env_pwrite(int fd, const void *buf, size_t n, off_t off,
						   const char *name, lsm_err *e);

/*
 * Writes n zero bytes at off, a page per call: the page cache keeps what
 * one write fills in a folio as large as the write (Linux 6.x), and ext4
 * walks every block of a folio at each later write into it, so zeros
 * written a MiB at a time made every small write into them walk 256
 * blocks.  One fault injection point, as one lsm_env_pwrite.
 */
int			lsm_env_pwrite_zeros(int fd, size_t n, off_t off, const char *name,
								 lsm_err *e);

/* Reads exactly n bytes at off; LSM_CORRUPTION if the file is shorter. */
int			lsm_env_pread(int fd, void *buf, size_t n, off_t off,
						  const char *name, lsm_err *e);

int			lsm_env_fsync(int fd, const char *name, lsm_err *e);
int			lsm_env_fsync_dir(const char *dir, lsm_err *e);

/* Opens the existing file path, fsyncs and closes it. */
int			lsm_env_fsync_path(const char *path, lsm_err *e);

/*
 * Starts writing fd's dirty pages back without waiting (Linux
 * sync_file_range; elsewhere nothing).  A hint: a later lsm_env_fsync then
 * finds little left to wait for, and the page cache never holds much
 * dirty data.  Durability still needs the fsync.
 */
void		lsm_env_start_writeback(int fd);
int			lsm_env_ftruncate(int fd, off_t len, const char *name, lsm_err *e);
int			lsm_env_rename(const char *from, const char *to, lsm_err *e);

/*
 * Renames from to to unless to exists: LSM_EXISTS then, and nothing
 * changes (renameat2 RENAME_NOREPLACE; link + unlink where the file system
 * lacks it).  Used to move ingested tables into a store directory where
 * another process may be creating files of the same numbers.
 */
int			lsm_env_rename_noreplace(const char *from, const char *to,
									 lsm_err *e);

/* Creates directory path (mode 0755); LSM_EXISTS if it is there. */
int			lsm_env_mkdir(const char *path, lsm_err *e);

/* Removes path; a missing file is not an error. */
int			lsm_env_unlink(const char *path, lsm_err *e);
void		lsm_env_close(int fd);

/*
 * Maps [0, size) of the file for reading and writing, shared: the file must
 * be at least size bytes long for as long as the mapping is written to.
 */
int			lsm_env_mmap_rw(int fd, size_t size, const char *name,
							uint8_t **map, lsm_err *e);

/*
 * Copies n bytes into map (a lsm_env_mmap_rw mapping of fd) at off: the
 * counterpart of lsm_env_pwrite for a file written through a mapping, with
 * the same fault injection point (a failing write may first copy half) and
 * the same tracking of bytes overwritten in place.
 */
int			lsm_env_map_write(int fd, uint8_t *map, const void *buf, size_t n,
							  off_t off, const char *name, lsm_err *e);

/*
 * Maps the whole file read-only.  *map is NULL for an empty file.  The
 * descriptor may be closed afterwards.
 */
int			lsm_env_mmap(int fd, const char *name, const void **map,
						 size_t *size, lsm_err *e);
void		lsm_env_munmap(const void *map, size_t size);

/*
 * Maps [p, p + n) of a shared file mapping (page aligned) into the process,
 * writable, as writes to each page would (madvise MADV_POPULATE_WRITE):
 * their page faults taken now, in one call.  A hint: it changes no byte,
 * ignores errors, and does nothing on a kernel without it (before Linux
 * 5.14: EINVAL, after which the process stops asking).
 */
void		lsm_env_prefault(void *p, size_t n);

/*
 * Takes an flock, waiting for it as long as it takes (for locks held only
 * for a bounded time, such as one fdatasync).
 */
int			lsm_env_lock(int fd, const char *name, lsm_err *e);

/* Takes an flock; nonblocking.  LSM_BUSY if someone else holds it. */
int			lsm_env_trylock(int fd, const char *name, lsm_err *e);
void		lsm_env_unlock(int fd);

/*
 * A wake-up hint between processes on a 32-bit word in memory they share
 * (a MAP_SHARED file mapping): lsm_env_wait sleeps while *word == val, at
 * most timeout_us, or until lsm_env_wake wakes it (it may also return
 * early for no reason); lsm_env_wake wakes up to n sleepers.  Linux
 * futexes; elsewhere the wait is a plain sleep and the wake does nothing.
 */
void		lsm_env_wait(uint32_t *word, uint32_t val, long timeout_us);
void		lsm_env_wake(uint32_t *word, int n);

/* ---------- fault injection (tests) ---------- */

typedef struct lsm_fault
{
	long		fail_write_at;	/* fail the Nth write from now; 0 = never */
	long		fail_sync_at;	/* fail the Nth fsync from now; 0 = never */
	int			fail_errno;		/* errno for injected failures (EIO default) */
	int			short_write;	/* the failing write first writes half */
	int			sticky;			/* keep failing every later write/sync */
	int			track_sync;		/* record synced lengths for drop_unsynced */
	const char *fail_open_suffix;	/* fail opens of paths ending in it */
	long		kill_at;		/* SIGKILL this process at the Nth crash
								 * point from now; 0 = never */
	void		(*at_crash_point) (void *arg);	/* called at each crash
												 * point first, if set */
	void	   *at_crash_point_arg;

	/* counters, maintained whenever hooks are installed */
	long		writes;
	long		syncs;
	long		injected;		/* failures injected so far */
	long		crash_points;	/* lsm_env_crash_point calls */
} lsm_fault;

/*
 * A step of the write path where a test may kill the process (kill_at):
 * the steps of applying a batch to the shared memtable and of publishing
 * it.  One branch when no fault configuration is installed.
 */
void		lsm_env_crash_point(void);

/*
 * Installs (f non-NULL) or removes (NULL) the fault configuration.  f must
 * stay valid while installed.  Counters in f are updated in place.
 */
void		lsm_fault_install(lsm_fault *f);

/*
 * Simulates a power failure: every file written through the shim since
 * tracking began is truncated to its last fsynced length; files never
 * fsynced are removed.  Forgets the tracked state.
 */
void		lsm_fault_drop_unsynced(void);

#endif							/* LSM_ENV_H */

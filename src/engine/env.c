/*
 * env.c
 *		POSIX file I/O with fault-injection hooks.  See env.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "env.h"

static lsm_fault *fault;

/*
 * Sync tracking: for every descriptor written while track_sync is on, the
 * path, the length written and the length known durable.
 */
typedef struct tracked
{
	int			fd;				/* -1 once closed */
	char	   *path;
	off_t		synced_len;
	off_t		dirty_from;		/* first byte overwritten in place since the
								 * last fsync, below synced_len; -1 if none */
	int			ever_synced;
} tracked;

static tracked *trk;
static int	ntrk;
static int	trk_cap;

static tracked *
track_find_fd(int fd)
{
	int			i;

	for (i = ntrk - 1; i >= 0; i--)
		if (trk[i].fd == fd)
			return &trk[i];
	return NULL;
}

static void
track_fd(int fd, const char *path)
{
	tracked    *t;
	int			i;

	if (fault == NULL || !fault->track_sync)
		return;
	/* a re-opened file keeps its durable state */
	for (i = 0; i < ntrk; i++)
		if (trk[i].fd == -1 && strcmp(trk[i].path, path) == 0)
		{
			trk[i].fd = fd;
			return;
		}
	if (ntrk == trk_cap)
	{
		int			cap = trk_cap ? trk_cap * 2 : 64;
		tracked    *n = realloc(trk, sizeof(tracked) * cap);

		if (n == NULL)
			return;
		trk = n;
		trk_cap = cap;
	}
	t = &trk[ntrk++];
	t->fd = fd;
	t->path = strdup(path);
	t->synced_len = 0;
	t->dirty_from = -1;
	t->ever_synced = 0;
	{
		struct stat st;

		/* an existing file's current contents are taken as durable */
		if (fstat(fd, &st) == 0 && st.st_size > 0)
		{
			t->synced_len = st.st_size;
			t->ever_synced = 1;
		}
	}
}

void
lsm_fault_install(lsm_fault *f)
{
	fault = f;
}

void
lsm_env_crash_point(void)
{
	if (fault == NULL)
		return;
	if (fault->at_crash_point)
		fault->at_crash_point(fault->at_crash_point_arg);
	if (++fault->crash_points == fault->kill_at)
		raise(SIGKILL);
}

/*
 * Writes zeros over [from, to) of path: what a power loss leaves of bytes
 * written in place since the last fsync, the engine overwriting only
 * zeros in place (a log's preallocated space).
 */
static void
zero_range(const char *path, off_t from, off_t to)
{
	static const char zeros[4096];
	int			fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (from < to)
	{
		size_t		n = (size_t) (to - from) < sizeof(zeros) ?
			(size_t) (to - from) : sizeof(zeros);
		ssize_t		w = pwrite(fd, zeros, n, from);

		if (w <= 0)
			break;
		from += w;
	}
	close(fd);
}

void
lsm_fault_drop_unsynced(void)
{
	int			i;

	for (i = 0; i < ntrk; i++)
	{
		if (trk[i].ever_synced)
		{
			if (truncate(trk[i].path, trk[i].synced_len) != 0)
			{
				/* the file may have been removed: nothing to drop */
			}
			if (trk[i].dirty_from >= 0)
				zero_range(trk[i].path, trk[i].dirty_from, trk[i].synced_len);
		}
		else
			(void) unlink(trk[i].path);
		free(trk[i].path);
	}
	free(trk);
	trk = NULL;
	ntrk = trk_cap = 0;
}

/* Returns the errno to inject for this operation, or 0. */
static int
inject(long *counter, long at)
{
	if (fault == NULL)
		return 0;
	(*counter)++;
	if (at > 0 && (*counter == at || (fault->sticky && *counter > at)))
	{
		fault->injected++;
		return fault->fail_errno ? fault->fail_errno : EIO;
	}
	return 0;
}

int
lsm_env_open(const char *path, int flags, int mode, int *fd, lsm_err *e)
{
	int			f;

	if (fault && fault->fail_open_suffix)
	{
		size_t		n = strlen(path),
					k = strlen(fault->fail_open_suffix);

		if (n >= k && strcmp(path + n - k, fault->fail_open_suffix) == 0)
		{
			fault->injected++;
			return lsm_err_sys(e, fault->fail_errno ? fault->fail_errno : EIO,
							   "could not open \"%s\"", path);
		}
	}
	do
		f = open(path, flags | O_CLOEXEC, mode);
	while (f < 0 && errno == EINTR);
	if (f < 0)
	{
		if (errno == ENOENT && !(flags & O_CREAT))
			return lsm_err_set(e, LSM_NOTFOUND, "file \"%s\" does not exist",
							   path);
		return lsm_err_sys(e, errno, "could not open \"%s\"", path);
	}
	*fd = f;
	if ((flags & (O_WRONLY | O_RDWR)) != 0)
		track_fd(f, path);
	return LSM_OK;
}

/*
 * One write or pwrite (off < 0: at the file position) of up to n bytes of
 * buf, or of zeros if buf is NULL (at most a page of them).
 */
static ssize_t
write_once(int fd, const void *buf, size_t n, off_t off)
{
	static const char zero_page[4096];

	if (buf == NULL)
	{
		buf = zero_page;
		if (n > sizeof(zero_page))
			n = sizeof(zero_page);
	}
	return off < 0 ? write(fd, buf, n) : pwrite(fd, buf, n, off);
}

/*
 * The fault shim's injection point of a write of n bytes: 0, or the errno
 * it fails with, having first written *part of them (short_write: half).
 */
static int
write_fault(size_t n, size_t *part)
{
	int			err = fault ? inject(&fault->writes, fault->fail_write_at) : 0;

	*part = err && fault->short_write && n > 1 ? n / 2 : 0;
	return err;
}

/*
 * lsm_env_write (off < 0), lsm_env_pwrite and lsm_env_pwrite_zeros (buf
 * NULL): one fault injection point however many calls the bytes take.
 */
static int
write_all(int fd, const void *buf, size_t n, off_t off, const char *name,
		  lsm_err *e)
{
	const char *p = buf;
	size_t		part;
	int			err;

	if ((err = write_fault(n, &part)) != 0)
	{
		if (part > 0 && write_once(fd, p, part, off) < 0)
		{
			/* the injected failure is reported either way */
		}
		return lsm_err_sys(e, err, "could not write to \"%s\"", name);
	}
	while (n > 0)
	{
		ssize_t		w = write_once(fd, p, n, off);

		if (w < 0)
		{
			if (errno == EINTR)
				continue;
			return lsm_err_sys(e, errno, "could not write to \"%s\"", name);
		}
		if (p != NULL)
			p += w;
		n -= (size_t) w;
		if (off >= 0)
			off += w;
	}
	return LSM_OK;
}

int
lsm_env_write(int fd, const void *buf, size_t n, const char *name, lsm_err *e)
{
	return write_all(fd, buf, n, -1, name, e);
}

/* Fault tracking: bytes at off are about to be overwritten in place. */
static void
track_in_place(int fd, off_t off)
{
	tracked    *t;

	if (fault && fault->track_sync && (t = track_find_fd(fd)) != NULL &&
		off < t->synced_len && (t->dirty_from < 0 || off < t->dirty_from))
		t->dirty_from = off;
}

int
lsm_env_pwrite(int fd, const void *buf, size_t n, off_t off, const char *name,
			   lsm_err *e)
{
	track_in_place(fd, off);
	return write_all(fd, buf, n, off, name, e);
}

int
lsm_env_map_write(int fd, uint8_t *map, const void *buf, size_t n, off_t off,
				  const char *name, lsm_err *e)
{
	size_t		part;
	int			err;

	track_in_place(fd, off);
	if ((err = write_fault(n, &part)) != 0)
	{
		memcpy(map + off, buf, part);
		return lsm_err_sys(e, err, "could not write to \"%s\"", name);
	}
	memcpy(map + off, buf, n);
	return LSM_OK;
}

int
lsm_env_pwrite_zeros(int fd, size_t n, off_t off, const char *name,
					 lsm_err *e)
{
	return write_all(fd, NULL, n, off, name, e);
}

int
lsm_env_pread(int fd, void *buf, size_t n, off_t off, const char *name,
			  lsm_err *e)
{
	char	   *p = buf;

	while (n > 0)
	{
		ssize_t		r = pread(fd, p, n, off);

		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			return lsm_err_sys(e, errno, "could not read \"%s\"", name);
		}
		if (r == 0)
			return LSM_CORRUPT(e, "unexpected end of file \"%s\" at offset %lld",
							   name, (long long) off);
		p += r;
		n -= (size_t) r;
		off += r;
	}
	return LSM_OK;
}

int
lsm_env_fsync(int fd, const char *name, lsm_err *e)
{
	int			err;
	tracked    *t;

	err = fault ? inject(&fault->syncs, fault->fail_sync_at) : 0;
	if (err)
		return lsm_err_sys(e, err, "could not fsync \"%s\"", name);
	if (fdatasync(fd) != 0)
		return lsm_err_sys(e, errno, "could not fsync \"%s\"", name);
	if (fault && fault->track_sync && (t = track_find_fd(fd)) != NULL)
	{
		struct stat st;

		if (fstat(fd, &st) == 0)
			t->synced_len = st.st_size;
		t->dirty_from = -1;
		t->ever_synced = 1;
	}
	return LSM_OK;
}

int
lsm_env_fsync_path(const char *path, lsm_err *e)
{
	int			fd,
				rc;

	/* opened for writing, as some systems refuse to fsync a read-only fd */
	if ((rc = lsm_env_open(path, O_RDWR, 0, &fd, e)) != LSM_OK)
		return rc;
	rc = lsm_env_fsync(fd, path, e);
	lsm_env_close(fd);
	return rc;
}

void
lsm_env_start_writeback(int fd)
{
#ifdef __linux__
	(void) sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
	(void) fd;
#endif
}

int
lsm_env_fsync_dir(const char *dir, lsm_err *e)
{
	int			fd;
	int			err;

	err = fault ? inject(&fault->syncs, fault->fail_sync_at) : 0;
	if (err)
		return lsm_err_sys(e, err, "could not fsync directory \"%s\"", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return lsm_err_sys(e, errno, "could not open directory \"%s\"", dir);
	if (fsync(fd) != 0 && errno != EINVAL)
	{
		int			save = errno;

		close(fd);
		return lsm_err_sys(e, save, "could not fsync directory \"%s\"", dir);
	}
	close(fd);
	return LSM_OK;
}

int
lsm_env_ftruncate(int fd, off_t len, const char *name, lsm_err *e)
{
	int			err;

	err = fault ? inject(&fault->writes, fault->fail_write_at) : 0;
	if (err)
		return lsm_err_sys(e, err, "could not truncate \"%s\"", name);
	if (ftruncate(fd, len) != 0)
		return lsm_err_sys(e, errno, "could not truncate \"%s\"", name);
	if (fault && fault->track_sync)
	{
		tracked    *t = track_find_fd(fd);

		if (t && t->synced_len > len)
			t->synced_len = len;
	}
	return LSM_OK;
}

int
lsm_env_rename(const char *from, const char *to, lsm_err *e)
{
	int			err;

	err = fault ? inject(&fault->writes, fault->fail_write_at) : 0;
	if (err)
		return lsm_err_sys(e, err, "could not rename \"%s\" to \"%s\"", from, to);
	if (rename(from, to) != 0)
		return lsm_err_sys(e, errno, "could not rename \"%s\" to \"%s\"", from, to);
	if (fault && fault->track_sync)
	{
		int			i;

		/* the tracked record follows the file to its new name */
		for (i = 0; i < ntrk; i++)
			if (strcmp(trk[i].path, to) == 0)
				trk[i].path[0] = '\0';
		for (i = 0; i < ntrk; i++)
			if (strcmp(trk[i].path, from) == 0)
			{
				free(trk[i].path);
				trk[i].path = strdup(to);
			}
	}
	return LSM_OK;
}

/* Points the sync tracking record of from at its new name to. */
static void
track_rename(const char *from, const char *to)
{
	int			i;

	if (fault == NULL || !fault->track_sync)
		return;
	for (i = 0; i < ntrk; i++)
		if (strcmp(trk[i].path, to) == 0)
			trk[i].path[0] = '\0';
	for (i = 0; i < ntrk; i++)
		if (strcmp(trk[i].path, from) == 0)
		{
			free(trk[i].path);
			trk[i].path = strdup(to);
		}
}

int
lsm_env_rename_noreplace(const char *from, const char *to, lsm_err *e)
{
	int			err;

	err = fault ? inject(&fault->writes, fault->fail_write_at) : 0;
	if (err)
		return lsm_err_sys(e, err, "could not rename \"%s\" to \"%s\"", from, to);
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) != 0)
	{
		if (errno == EEXIST)
			return lsm_err_set(e, LSM_EXISTS, "\"%s\" already exists", to);
		if (errno != EINVAL && errno != ENOSYS)
			return lsm_err_sys(e, errno, "could not rename \"%s\" to \"%s\"",
							   from, to);
		/* no RENAME_NOREPLACE here: a hard link fails on an existing name */
		if (link(from, to) != 0)
		{
			if (errno == EEXIST)
				return lsm_err_set(e, LSM_EXISTS, "\"%s\" already exists", to);
			return lsm_err_sys(e, errno, "could not link \"%s\" to \"%s\"",
							   from, to);
		}
		if (unlink(from) != 0)
		{
			int			save = errno;

			(void) unlink(to);
			return lsm_err_sys(e, save, "could not remove \"%s\"", from);
		}
	}
	track_rename(from, to);
	return LSM_OK;
}

int
lsm_env_mkdir(const char *path, lsm_err *e)
{
	int			err;

	err = fault ? inject(&fault->writes, fault->fail_write_at) : 0;
	if (err)
		return lsm_err_sys(e, err, "could not create directory \"%s\"", path);
	if (mkdir(path, 0755) != 0)
	{
		if (errno == EEXIST)
			return lsm_err_set(e, LSM_EXISTS, "\"%s\" already exists", path);
		return lsm_err_sys(e, errno, "could not create directory \"%s\"", path);
	}
	return LSM_OK;
}

int
lsm_env_unlink(const char *path, lsm_err *e)
{
	if (unlink(path) != 0 && errno != ENOENT)
		return lsm_err_sys(e, errno, "could not remove \"%s\"", path);
	return LSM_OK;
}

void
lsm_env_close(int fd)
{
	if (fd < 0)
		return;
	if (fault && fault->track_sync)
	{
		tracked    *t = track_find_fd(fd);

		if (t)
			t->fd = -1;
	}
	close(fd);
}

int
lsm_env_mmap(int fd, const char *name, const void **map, size_t *size,
			 lsm_err *e)
{
	struct stat st;
	void	   *p;

	if (fstat(fd, &st) != 0)
		return lsm_err_sys(e, errno, "could not stat \"%s\"", name);
	*size = (size_t) st.st_size;
	*map = NULL;
	if (st.st_size == 0)
		return LSM_OK;
	p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return lsm_err_sys(e, errno, "could not map \"%s\"", name);
	*map = p;
	return LSM_OK;
}

int
lsm_env_mmap_rw(int fd, size_t size, const char *name, uint8_t **map,
				lsm_err *e)
{
	void	   *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
	{
		*map = NULL;
		return lsm_err_sys(e, errno, "could not map \"%s\"", name);
	}
	*map = p;
	return LSM_OK;
}

void
lsm_env_munmap(const void *map, size_t size)
{
	if (map)
		munmap((void *) map, size);
}

int
lsm_env_lock(int fd, const char *name, lsm_err *e)
{
	while (flock(fd, LOCK_EX) != 0)
	{
		if (errno != EINTR)
			return lsm_err_sys(e, errno, "could not lock \"%s\"", name);
	}
	return LSM_OK;
}

int
lsm_env_trylock(int fd, const char *name, lsm_err *e)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return LSM_OK;
	if (errno == EWOULDBLOCK || errno == EINTR)
		return LSM_BUSY;
	return lsm_err_sys(e, errno, "could not lock \"%s\"", name);
}

void
lsm_env_unlock(int fd)
{
	(void) flock(fd, LOCK_UN);
}

void
lsm_env_wait(uint32_t *word, uint32_t val, long timeout_us)
{
#ifdef __linux__
	struct timespec ts;

	ts.tv_sec = timeout_us / 1000000;
	ts.tv_nsec = (timeout_us % 1000000) * 1000;
	/* not FUTEX_PRIVATE_FLAG: the word is shared between processes */
	(void) syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
#else
	(void) word;
	(void) val;
	usleep((useconds_t) timeout_us);
#endif
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void
lsm_env_prefault(void *p, size_t n)
{
	static bool unsupported;

	if (n == 0 || __atomic_load_n(&unsupported, __ATOMIC_RELAXED))
		return;
	if (madvise(p, n, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
		__atomic_store_n(&unsupported, true, __ATOMIC_RELAXED);
}

void
lsm_env_wake(uint32_t *word, int n)
{
#ifdef __linux__
	(void) syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
#else
	(void) word;
	(void) n;
#endif
}

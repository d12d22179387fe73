/*
 * storedir.c
 *		The store directory's names, paths, numbered files and stage
 *		sweeping.  See storedir.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "storedir.h"

static const struct
{
	lsm_fkind	kind;
	const char *ext;
}			extensions[] =
{
	{LSM_F_TABLE, ".sst"},
	{LSM_F_LOG, ".log"},
	{LSM_F_NODE, ".vfn"},
	{LSM_F_MEM, ".mem"},
	{LSM_F_MEM_TMP, ".mem.tmp"},
};

#define NEXTENSIONS (sizeof(extensions) / sizeof(extensions[0]))

/*
 * "%06llu" and the extension, without snprintf: the write path names its
 * log in every write's error context, and snprintf cost ~1,000
 * instructions a write there.
 */
void
lsm_dir_name(lsm_fkind kind, uint64_t number, char *buf, size_t n)
{
	char		digits[20];
	const char *ext = "";
	size_t		nd = 0,
				len,
				i;

	for (i = 0; i < NEXTENSIONS; i++)
		if (extensions[i].kind == kind)
			ext = extensions[i].ext;
	do
	{
		digits[nd++] = (char) ('0' + number % 10);
		number /= 10;
	} while (number > 0);
	while (nd < 6)
		digits[nd++] = '0';
	len = nd + strlen(ext);
	if (n == 0)
		return;
	if (len >= n)
		len = n - 1;			/* LSM_FNAME_MAX bytes always do */
	for (i = 0; i < len; i++)
		buf[i] = i < nd ? digits[nd - 1 - i] : ext[i - nd];
	buf[len] = '\0';
}

lsm_fkind
lsm_dir_kind(const char *name, uint64_t *number)
{
	const char *p = name;
	uint64_t	n = 0;
	size_t		i;

	for (; *p >= '0' && *p <= '9'; p++)
	{
		if (n > (UINT64_MAX - 9) / 10)
			return LSM_F_OTHER;
		n = n * 10 + (uint64_t) (*p - '0');
	}
	if (p == name)
		return LSM_F_OTHER;
	for (i = 0; i < NEXTENSIONS; i++)
		if (strcmp(p, extensions[i].ext) == 0)
		{
			*number = n;
			return extensions[i].kind;
		}
	return LSM_F_OTHER;
}

int
lsm_dir_path(char *buf, size_t n, const char *dir, const char *name,
			 lsm_err *e)
{
	int			len = snprintf(buf, n, "%s/%s", dir, name);

	if (len < 0 || (size_t) len >= n)
	{
		if (n > 0)
			buf[0] = '\0';
		return lsm_err_set(e, LSM_INVALID,
						   "path too long: \"%s/%s\" has more than %zu bytes",
						   dir, name, n - 1);
	}
	return LSM_OK;
}

int
lsm_dir_create(const char *dir, lsm_fkind kind, uint64_t *number,
			   lsm_dir_create_fn create, void *arg, lsm_err *e)
{
	char		name[LSM_FNAME_MAX],
				path[4096];
	int			rc;

	for (;; (*number)++)
	{
		lsm_dir_name(kind, *number, name, sizeof(name));
		if ((rc = lsm_dir_path(path, sizeof(path), dir, name, e)) != LSM_OK)
			return rc;
		rc = create(path, *number, arg, e);
		if (rc != LSM_EXISTS)
			return rc;
	}
}

/* lsm_dir_create_fn of lsm_dir_create_excl */
typedef struct excl
{
	int			flags;
	int		   *fd;
} excl;

static int
open_excl(const char *path, uint64_t number, void *arg, lsm_err *e)
{
	excl	   *x = arg;
	int			rc;

	(void) number;
	rc = lsm_env_open(path, x->flags | O_CREAT | O_EXCL, 0644, x->fd, e);
	return rc != LSM_OK && e->saved_errno == EEXIST ? LSM_EXISTS : rc;
}

int
lsm_dir_create_excl(const char *dir, lsm_fkind kind, uint64_t *number,
					int flags, int *fd, lsm_err *e)
{
	excl		x = {flags, fd};

	return lsm_dir_create(dir, kind, number, open_excl, &x, e);
}

/* ---------- stage directories ---------- */

void
lsm_dir_remove(const char *path)
{
	DIR		   *d = opendir(path);
	struct dirent *de;
	char		p[4096 + 256 + 2];

	if (d != NULL)
	{
		while ((de = readdir(d)) != NULL)
		{
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
				strcmp(de->d_name, "LOCK") == 0)
				continue;
			if (lsm_dir_path(p, sizeof(p), path, de->d_name, NULL) == LSM_OK)
				(void) lsm_env_unlink(p, NULL);
		}
		closedir(d);
	}
	if (lsm_dir_path(p, sizeof(p), path, "LOCK", NULL) == LSM_OK)
		(void) lsm_env_unlink(p, NULL);
	(void) rmdir(path);
}

/* Is process pid (possibly) alive? */
static bool
pid_alive(long pid)
{
	if (pid <= 0)
		return false;
	return kill((pid_t) pid, 0) == 0 || errno == EPERM;
}

bool
lsm_dir_sweep_stage(const char *dir, const char *name)
{
	char		path[4096],
				lock[4096 + 16],
				tail;
	long		pid;
	unsigned	n;
	int			fd,
				rc;

	if (strncmp(name, LSM_STAGE_PREFIX, strlen(LSM_STAGE_PREFIX)) != 0)
		return false;
	if (sscanf(name, LSM_STAGE_PREFIX "%ld.%u%c", &pid, &n, &tail) != 2 ||
		lsm_dir_path(path, sizeof(path), dir, name, NULL) != LSM_OK ||
		lsm_dir_path(lock, sizeof(lock), path, "LOCK", NULL) != LSM_OK)
		return true;			/* not ours to judge: leave it */
	rc = lsm_env_open(lock, O_RDONLY, 0, &fd, NULL);
	if (rc == LSM_OK)
	{
		/* held: its owner lives (or a sweeper is at it); free: it died */
		if (lsm_env_trylock(fd, "LOCK", NULL) == LSM_OK)
			lsm_dir_remove(path);
		lsm_env_close(fd);
	}
	else if (rc == LSM_NOTFOUND && !pid_alive(pid))
		lsm_dir_remove(path);	/* died before it had a LOCK */
	return true;
}

void
lsm_dir_sweep_stages(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		(void) lsm_dir_sweep_stage(dir, de->d_name);
	closedir(d);
}

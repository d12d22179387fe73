/*
 * memfile.c
 *		Creating and mapping a log's shared memtable file (memfile.h).
 *
 * The file is created at its final size, sparse; the memtable asks for
 * blocks (reserve_blocks) before it writes into them, so that a full disk
 * fails a reservation, before anything is appended to the log, rather than
 * a store into a mapped page (SIGBUS).  It is mapped whole; the mapping
 * lives as long as the memtable in it (iterators keep it alive after the
 * file is replaced or removed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env.h"
#include "memfile.h"

typedef struct mapping
{
	void	   *base;
	size_t		size;
	int			fd;				/* kept for reserve; -1 read-only */
} mapping;

static void
release_mapping(void *arg)
{
	mapping    *m = arg;

	munmap(m->base, m->size);
	lsm_env_close(m->fd);
	free(m);
}

/* Allocates the file's blocks under the first upto bytes of the region. */
static int
reserve_blocks(void *arg, size_t upto, lsm_err *e)
{
	mapping    *m = arg;
	int			err;

	if (m->fd < 0)
		return lsm_err_set(e, LSM_INVALID, "memtable file mapped read-only");
	err = posix_fallocate(m->fd, 0, (off_t) (LSM_MEMFILE_HEADER + upto));
	if (err != 0)
		return lsm_err_sys(e, err, "could not allocate space for a memtable file");
	return LSM_OK;
}

uint64_t
lsm_boot_id(void)
{
	static uint64_t id;
	static bool known;

	if (!known)
	{
		char		buf[64];
		int			fd = open("/proc/sys/kernel/random/boot_id",
							  O_RDONLY | O_CLOEXEC);
		ssize_t		n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

		if (fd >= 0)
			close(fd);
		id = n > 0 ? lsm_key_hash(buf, (size_t) n) : 0;
		known = true;
	}
	return id;
}

/* Maps fd's size bytes shared; the caller owns the result's mapping. */
static int
map_file(int fd, size_t size, bool writable, const char *path, mapping **out,
		 lsm_err *e)
{
	mapping    *m = malloc(sizeof(mapping));
	void	   *p;

	if (m == NULL)
		return LSM_NOMEM_ERR(e);
	p = mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED,
			 fd, 0);
	if (p == MAP_FAILED)
	{
		int			err = errno;

		free(m);
		return lsm_err_sys(e, err, "could not map \"%s\"", path);
	}
	m->base = p;
	m->size = size;
	m->fd = -1;
	*out = m;
	return LSM_OK;
}

int
lsm_memfile_create(const char *path, size_t size, lsm_memtable **mt,
				   lsm_memfile_header **hdr, lsm_err *e)
{
	mapping    *m = NULL;
	int			fd,
				err,
				rc;

	*mt = NULL;
	*hdr = NULL;
	size = (size + 4095) & ~(size_t) 4095;
	rc = lsm_env_open(path, O_RDWR | O_CREAT | O_EXCL, 0644, &fd, e);
	if (rc != LSM_OK)
		return rc;
	/* sparse: reserve_blocks allocates blocks as the memtable fills */
	if (ftruncate(fd, (off_t) size) != 0)
		rc = lsm_err_sys(e, errno, "could not size \"%s\"", path);
	else if ((err = posix_fallocate(fd, 0, LSM_MEMFILE_HEADER)) != 0)
		rc = lsm_err_sys(e, err, "could not allocate space for \"%s\"", path);
	else
		rc = map_file(fd, size, true, path, &m, e);
	if (rc != LSM_OK)
		lsm_env_close(fd);
	if (rc == LSM_OK)
	{
		lsm_memfile_header *h = m->base;
		lsm_memtable_backing b = {release_mapping, reserve_blocks, m};

		m->fd = fd;
		*mt = lsm_memtable_format((uint8_t *) m->base + LSM_MEMFILE_HEADER,
								  size - LSM_MEMFILE_HEADER, &b);
		if (*mt == NULL)
		{
			release_mapping(m);
			rc = lsm_err_set(e, LSM_NOMEM,
							 "could not set up a memtable in \"%s\"", path);
		}
		else
		{
			h->size = size;
			h->boot = lsm_boot_id();
			lsm_memfile_store(&h->magic, LSM_MEMFILE_MAGIC);
			*hdr = h;
		}
	}
	if (rc != LSM_OK)
		(void) lsm_env_unlink(path, NULL);
	return rc;
}

int
lsm_memfile_open(const char *path, bool writable, lsm_memtable **mt,
				 lsm_memfile_header **hdr, lsm_err *e)
{
	struct stat st;
	mapping    *m = NULL;
	lsm_memfile_header *h;
	lsm_memtable_backing b;
	int			fd,
				rc;

	*mt = NULL;
	*hdr = NULL;
	rc = lsm_env_open(path, writable ? O_RDWR : O_RDONLY, 0, &fd, e);
	if (rc != LSM_OK)
		return rc;
	if (fstat(fd, &st) != 0)
		rc = lsm_err_sys(e, errno, "could not stat \"%s\"", path);
	else if (st.st_size <= LSM_MEMFILE_HEADER || st.st_size % 4096 != 0)
		rc = lsm_err_set(e, LSM_NOTFOUND, "\"%s\" is not a memtable file",
						 path);
	else
		rc = map_file(fd, (size_t) st.st_size, writable, path, &m, e);
	if (rc != LSM_OK || !writable)
		lsm_env_close(fd);
	if (rc != LSM_OK)
		return rc;
	if (writable)
		m->fd = fd;
	h = m->base;
	if (lsm_memfile_load(&h->magic) != LSM_MEMFILE_MAGIC ||
		h->size != (uint64_t) st.st_size)
	{
		release_mapping(m);
		return lsm_err_set(e, LSM_NOTFOUND, "\"%s\" is not a memtable file",
						   path);
	}
	b.release = release_mapping;
	b.reserve = reserve_blocks;
	b.arg = m;
	*mt = lsm_memtable_attach((uint8_t *) m->base + LSM_MEMFILE_HEADER,
							  (size_t) st.st_size - LSM_MEMFILE_HEADER,
							  writable, &b, e);
	if (*mt == NULL)
	{
		release_mapping(m);
		return LSM_NOTFOUND;	/* not one of this layout */
	}
	*hdr = h;
	return LSM_OK;
}

/*
 * wal.c
 *		Write-ahead log records.  See wal.h for the format.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "env.h"
#include "wal.h"

void
lsm_wal_filename(uint64_t number, char *buf, size_t n)
{
	snprintf(buf, n, "%06llu.log", (unsigned long long) number);
}

int
lsm_wal_append(int fd, const char *name, uint8_t *rec, size_t len, lsm_err *e)
{
	size_t		plen = len - LSM_WAL_HEADER;

	lsm_put_u32(rec + 4, (uint32_t) plen);
	rec[8] = LSM_WAL_BATCH;
	lsm_put_u32(rec, lsm_checksum(rec + 4, plen + 5));
	return lsm_env_write(fd, rec, len, name, e);
}

/*
 * Is there a complete record at p (of at most avail bytes) that starts a
 * batch with sequence >= min_seq?
 */
static bool
good_record_at(const uint8_t *p, size_t avail, uint64_t min_seq, size_t *len)
{
	uint32_t	plen;

	if (avail < LSM_WAL_HEADER + LSM_BATCH_HEADER)
		return false;
	plen = lsm_get_u32(p + 4);
	if (p[8] != LSM_WAL_BATCH || plen < LSM_BATCH_HEADER ||
		plen > avail - LSM_WAL_HEADER)
		return false;
	if (lsm_get_u64(p + LSM_WAL_HEADER) < min_seq)
		return false;
	if (lsm_checksum(p + 4, plen + 5) != lsm_get_u32(p))
		return false;
	*len = LSM_WAL_HEADER + plen;
	return true;
}

int
lsm_wal_replay(int fd, const char *name, uint64_t off, uint64_t expect_seq,
			   lsm_wal_apply_fn apply, void *arg, lsm_wal_replay_result *res,
			   lsm_err *e)
{
	struct stat st;
	uint8_t    *buf = NULL;
	size_t		n,
				pos = 0;
	int			rc = LSM_OK;

	res->end_off = off;
	res->last_seq = expect_seq ? expect_seq - 1 : 0;
	res->records = 0;
	if (fstat(fd, &st) != 0)
		return lsm_err_sys(e, errno, "could not stat \"%s\"", name);
	res->file_size = (uint64_t) st.st_size;
	if ((uint64_t) st.st_size <= off)
		return LSM_OK;
	n = (size_t) ((uint64_t) st.st_size - off);
	buf = malloc(n);
	if (buf == NULL)
		return LSM_NOMEM_ERR(e);
	rc = lsm_env_pread(fd, buf, n, (off_t) off, name, e);
	if (rc == LSM_CORRUPTION)
	{
		/* the file shrank under us (a writer truncated a torn tail) */
		free(buf);
		return LSM_OK;
	}
	while (rc == LSM_OK && pos < n)
	{
		size_t		len;
		uint64_t	first;
		uint32_t	count;

		if (!good_record_at(buf + pos, n - pos, 0, &len))
			break;
		first = lsm_get_u64(buf + pos + LSM_WAL_HEADER);
		count = lsm_get_u32(buf + pos + LSM_WAL_HEADER + 8);
		if (expect_seq != 0 && first != expect_seq)
			break;
		rc = apply(arg, buf + pos + LSM_WAL_HEADER, len - LSM_WAL_HEADER, e);
		if (rc != LSM_OK)
			break;
		pos += len;
		res->end_off = off + pos;
		res->last_seq = first + count - 1;
		expect_seq = first + count;
		res->records++;
	}
	if (rc == LSM_OK && pos < n)
	{
		size_t		p,
					len;

		/*
		 * A torn append leaves only garbage behind it.  A good record with a
		 * later sequence after the bad spot means the damage is in the middle.
		 */
		for (p = pos + 1; p + LSM_WAL_HEADER + LSM_BATCH_HEADER <= n; p++)
			if (good_record_at(buf + p, n - p, expect_seq ? expect_seq : 1, &len))
			{
				rc = LSM_CORRUPT(e, "corrupt record at offset %llu of %s is followed by valid records",
								 (unsigned long long) (off + pos), name);
				break;
			}
	}
	free(buf);
	return rc;
}

/*
 * wal.c
 *		Write-ahead log records.  See wal.h for the format.
 *
 * Replay reads the log past an offset into one buffer and walks it record
 * by record: each must be framed (type, a length that fits), checksummed
 * and continue the sequence.  At the first that is not, it decides between
 * a torn tail (only garbage follows: not an error, the caller cuts it) and
 * damage in the middle (a good record continuing the log follows:
 * LSM_CORRUPTION).  That search behind the bad spot tests every position
 * in constant time and checksums only those whose header is plausible,
 * within a budget proportional to the bytes searched, so any content of
 * the file is scanned in linear time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "env.h"
#include "memtable.h"
#include "wal.h"

int
lsm_wal_append(int fd, uint8_t *map, const char *name, uint64_t off,
			   int type, uint8_t *rec, size_t len, lsm_err *e)
{
	size_t		plen = len - LSM_WAL_HEADER;

	/* the length field is 32 bits: a larger batch cannot be one record */
	if (plen > UINT32_MAX)
		return lsm_err_set(e, LSM_INVALID,
						   "batch of %zu bytes is larger than a log record can hold",
						   plen);
	lsm_put_u32(rec + 4, (uint32_t) plen);
	rec[8] = (uint8_t) type;
	lsm_put_u32(rec, lsm_checksum(rec + 4, plen + 5));
	if (map)
		return lsm_env_map_write(fd, map, rec, len, (off_t) off, name, e);
	return lsm_env_pwrite(fd, rec, len, (off_t) off, name, e);
}

int
lsm_wal_prealloc(int fd, const char *name, uint64_t from, uint64_t to,
				 lsm_err *e)
{
	if (from >= to)
		return LSM_OK;
	return lsm_env_pwrite_zeros(fd, (size_t) (to - from), (off_t) from, name, e);
}

int
lsm_wal_probe(int fd, const char *name, uint64_t off,
			  lsm_wal_probe_result *out, lsm_err *e)
{
	uint8_t		buf[1 + LSM_WAL_HEADER];
	uint64_t	from = off > 0 ? off - 1 : 0;	/* a byte before: is off in
												 * the file? */
	ssize_t		got;
	ssize_t		i;

	do
		got = pread(fd, buf, sizeof(buf), (off_t) from);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return lsm_err_sys(e, errno, "could not read \"%s\"", name);
	if (off > 0 && got == 0)
	{
		*out = LSM_WAL_SHORT;
		return LSM_OK;
	}
	*out = LSM_WAL_END;
	for (i = off > 0 ? 1 : 0; i < got; i++)
		if (buf[i] != 0)
			*out = LSM_WAL_MORE;
	return LSM_OK;
}

/* The least payload a record of type t holds; 0 for an unknown type. */
static uint32_t
least_payload(uint8_t t)
{
	if (t == LSM_WAL_BATCH)
		return LSM_BATCH_HEADER;
	if (t == LSM_WAL_BATCH_OF || t == LSM_WAL_ROLLBACK)
		return LSM_BATCH_HEADER + LSM_WAL_OWNER;
	if (t == LSM_WAL_PREPARE)
		return 2 * LSM_BATCH_HEADER + LSM_WAL_OWNER;
	if (t == LSM_WAL_PREPARE_TABLES)
		return LSM_BATCH_HEADER + LSM_WAL_OWNER + LSM_WAL_TABLES_HEAD;
	return 0;
}

/*
 * The length (header included) of the record at p, of at most avail bytes,
 * if its header frames one that fits and its checksum is good; else 0.
 */
static size_t
record_len_at(const uint8_t *p, size_t avail)
{
	uint32_t	plen;

	if (avail < LSM_WAL_HEADER + LSM_BATCH_HEADER)
		return 0;
	plen = lsm_get_u32(p + 4);
	if (least_payload(p[8]) == 0 || plen < least_payload(p[8]) ||
		plen > avail - LSM_WAL_HEADER)
		return 0;
	if (lsm_checksum(p + 4, (size_t) plen + 5) != lsm_get_u32(p))
		return 0;
	return LSM_WAL_HEADER + (size_t) plen;
}

/*
 * Could a record written after the bad one at bad_off start at offset off?
 * Checks in constant time what its header must hold: the batch type, a
 * length that fits in the avail bytes left, at least one entry and no more
 * than the length can hold (three bytes each), and a first sequence at or
 * after expect_seq (0: unknown) but no further past it than the entries the
 * bytes from bad_off to off could have held.  Only such positions are worth
 * a checksum.
 */
static bool
plausible_at(const uint8_t *p, size_t avail, uint64_t expect_seq,
			 uint64_t bad_off, uint64_t off)
{
	uint32_t	plen;
	uint32_t	count;
	uint64_t	first;

	if (avail < LSM_WAL_HEADER + LSM_BATCH_HEADER || least_payload(p[8]) == 0)
		return false;
	plen = lsm_get_u32(p + 4);
	if (plen < least_payload(p[8]) || plen > avail - LSM_WAL_HEADER)
		return false;
	first = lsm_get_u64(p + LSM_WAL_HEADER);
	count = lsm_get_u32(p + LSM_WAL_HEADER + 8);
	if (count == 0 || count > (plen - LSM_BATCH_HEADER) / 3 ||
		first == 0 || first > LSM_MAX_SEQUENCE ||
		count - 1 > LSM_MAX_SEQUENCE - first)
		return false;
	if (expect_seq != 0 &&
		(first < expect_seq || first - expect_seq > (off - bad_off) / 3))
		return false;
	return true;
}

/*
 * Looks behind the bad record at buf[pos] (of n bytes, file offset base)
 * for a good record that continues the log: a torn append leaves only
 * garbage behind it, so one means the damage is in the middle.  Every
 * position is tested in constant time (plausible_at) and only plausible
 * ones are checksummed, with a budget of bytes checksummed proportional to
 * what follows the bad record, so that no content makes the scan slower
 * than linear.  LSM_OK if nothing continues the log; LSM_CORRUPTION if a
 * good record does, or if the budget runs out (only crafted bytes can do
 * that: refusing the log then loses nothing).
 */
static int
scan_after_bad(const uint8_t *buf, size_t n, size_t pos, uint64_t base,
			   uint64_t expect_seq, const char *name, lsm_err *e)
{
	uint64_t	budget = 8 * (uint64_t) (n - pos) + (UINT64_C(1) << 20);
	size_t		p;

	for (p = pos + 1; p + LSM_WAL_HEADER + LSM_BATCH_HEADER <= n; p++)
	{
		size_t		len;

		if (!plausible_at(buf + p, n - p, expect_seq, pos, p))
			continue;
		len = LSM_WAL_HEADER + (size_t) lsm_get_u32(buf + p + 4);
		if (len > budget)
			return LSM_CORRUPT(e, "bad record at offset %llu of %s: too many record-like bytes follow it to tell whether it is a torn tail",
							   (unsigned long long) (base + pos), name);
		budget -= len;
		if (record_len_at(buf + p, n - p) != 0)
			return LSM_CORRUPT(e, "corrupt record at offset %llu of %s is followed by a valid record at offset %llu",
							   (unsigned long long) (base + pos), name,
							   (unsigned long long) (base + p));
	}
	return LSM_OK;
}

int
lsm_wal_replay(int fd, const char *name, uint64_t off, uint64_t expect_seq,
			   lsm_wal_apply_fn apply, void *arg, lsm_wal_replay_result *res,
			   lsm_err *e)
{
	struct stat st;
	uint8_t    *buf = NULL;
	size_t		n,
				nz,
				pos = 0;
	int			rc = LSM_OK;

	res->end_off = res->content_end = off;
	res->last_seq = expect_seq ? expect_seq - 1 : 0;
	res->records = 0;
	if (fstat(fd, &st) != 0)
		return lsm_err_sys(e, errno, "could not stat \"%s\"", name);
	if ((uint64_t) st.st_size <= off)
		return LSM_OK;
	if ((uint64_t) st.st_size - off > SIZE_MAX)
		return lsm_err_set(e, LSM_NOMEM, "%s is too large to read", name);
	n = (size_t) ((uint64_t) st.st_size - off);
	buf = malloc(n);
	if (buf == NULL)
		return lsm_err_set(e, LSM_NOMEM,
						   "out of memory reading %zu bytes of %s", n, name);
	rc = lsm_env_pread(fd, buf, n, (off_t) off, name, e);
	if (rc == LSM_CORRUPTION)
	{
		/* the file shrank under us (a writer truncated a torn tail) */
		free(buf);
		return LSM_OK;
	}
	/* the preallocated zeros at the end hold nothing */
	nz = 0;
	if (rc == LSM_OK)
		for (nz = n; nz > 0 && buf[nz - 1] == 0; nz--)
			;
	while (rc == LSM_OK && pos < n)
	{
		size_t		len = record_len_at(buf + pos, n - pos);
		uint64_t	first;
		uint32_t	count;

		if (len == 0)
			break;
		first = lsm_get_u64(buf + pos + LSM_WAL_HEADER);
		count = lsm_get_u32(buf + pos + LSM_WAL_HEADER + 8);
		/* a stale record, past a truncation that did not reach the disk */
		if (expect_seq != 0 && first != expect_seq)
			break;
		rc = apply(arg, buf[pos + 8], buf + pos + LSM_WAL_HEADER,
				   len - LSM_WAL_HEADER, e);
		if (rc != LSM_OK)
			break;
		pos += len;
		res->end_off = off + pos;
		res->last_seq = first + count - 1;
		expect_seq = first + count;
		res->records++;
	}
	res->content_end = nz > pos ? off + nz : res->end_off;
	if (rc == LSM_OK && pos < nz)
		rc = scan_after_bad(buf, nz, pos, off, expect_seq, name, e);
	free(buf);
	return rc;
}

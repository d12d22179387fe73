/*
 * bloom.c
 *		Building and parsing cache-line-blocked key filters.  See bloom.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include "bloom.h"

/*
 * k by millibits per key for 512-bit blocks (the optimum is about bits/2
 * rather than 0.69 * bits, because keys cluster in lines).
 */
int
lsm_bloom_choose_k(int bits_per_key)
{
	static const int limits[] = {2080, 3580, 5100, 6640, 8300, 10070,
	11720, 14001, 16050, 18300, 22001, 25501};
	int			millibits = bits_per_key * 1000;
	int			i;

	for (i = 0; i < (int) (sizeof(limits) / sizeof(limits[0])); i++)
		if (millibits <= limits[i])
			return i + 1;
	return bits_per_key / 2 > LSM_BLOOM_MAX_K ? LSM_BLOOM_MAX_K :
		bits_per_key / 2;
}

static uint32_t
num_lines_for(size_t nkeys, int bits_per_key)
{
	uint64_t	bits = (uint64_t) nkeys * (uint64_t) bits_per_key;
	uint64_t	lines = (bits + 511) / 512;

	if (lines == 0)
		lines = 1;
	if (lines > UINT32_MAX)
		lines = UINT32_MAX;
	return (uint32_t) lines;
}

size_t
lsm_bloom_size(size_t nkeys, int bits_per_key)
{
	if (bits_per_key <= 0 || nkeys == 0)
		return 0;
	return (size_t) num_lines_for(nkeys, bits_per_key) * LSM_BLOOM_LINE +
		LSM_BLOOM_TRAILER;
}

void
lsm_bloom_build(uint8_t *dst, size_t dst_size, int bits_per_key,
				const uint64_t *hashes, size_t n)
{
	uint32_t	num_lines = (uint32_t) ((dst_size - LSM_BLOOM_TRAILER) /
										LSM_BLOOM_LINE);
	int			k = lsm_bloom_choose_k(bits_per_key);
	uint8_t    *t = dst + (size_t) num_lines * LSM_BLOOM_LINE;
	size_t		i;

	LSM_ASSERT(dst_size == lsm_bloom_size(n, bits_per_key));
	memset(dst, 0, dst_size);
	for (i = 0; i < n; i++)
		lsm_bloom_set(dst, num_lines, k, hashes[i]);
	lsm_bloom_trailer(t, 'K', k, num_lines);
}

void
lsm_bloom_trailer(uint8_t *t, uint8_t magic, int k, uint32_t num_lines)
{
	t[0] = magic;
	t[1] = 1;
	t[2] = (uint8_t) k;
	t[3] = 0;
	lsm_put_u32(t + 4, num_lines);
}

int
lsm_bloom_parse(const uint8_t *p, size_t n, lsm_bloom *f, const char *name,
				lsm_err *e)
{
	return lsm_bloom_parse_as(p, n, 'K', "key filter", f, name, e);
}

int
lsm_bloom_parse_as(const uint8_t *p, size_t n, uint8_t magic, const char *what,
				   lsm_bloom *f, const char *name, lsm_err *e)
{
	const uint8_t *t;
	uint32_t	num_lines;

	if (n < LSM_BLOOM_TRAILER)
		return LSM_CORRUPT(e, "%s of %zu bytes in \"%s\" is too short",
						   what, n, name);
	t = p + n - LSM_BLOOM_TRAILER;
	num_lines = lsm_get_u32(t + 4);
	if (t[0] != magic || t[1] != 1 || t[2] < 1 || t[2] > LSM_BLOOM_MAX_K ||
		t[3] != 0 || num_lines == 0 ||
		(uint64_t) num_lines * LSM_BLOOM_LINE != n - LSM_BLOOM_TRAILER)
		return LSM_CORRUPT(e, "malformed %s trailer in \"%s\"", what, name);
	f->lines = p;
	f->num_lines = num_lines;
	f->k = t[2];
	return LSM_OK;
}

/*
 * vfilter.c
 *		Building and parsing block locators.  See vfilter.h.
 *
 * The locator's per-block filters get about LSM_LOCATOR_BITS_PER_VALUE bits
 * for each value of the average block (at least one 512-bit line), so a
 * table with many blocks costs about that many bits per value in all,
 * whatever the block count; rows are stored as whole 64-bit words so that a
 * probe is k runs of W aligned loads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include "vfilter.h"

/*
 * Lines of the locator of nvalues values in nblocks blocks: at most 2^20,
 * and few enough that the locator's size fits the u32 of its handle.
 */
static uint32_t
locator_lines(uint64_t nvalues, uint32_t nblocks)
{
	uint64_t	per_block = (nvalues + nblocks - 1) / nblocks;
	uint64_t	lines = (per_block * LSM_LOCATOR_BITS_PER_VALUE + 511) / 512;
	uint64_t	line_bytes = (uint64_t) 512 * ((nblocks + 63) / 64) * 8;
	uint64_t	max_lines = (UINT32_MAX - LSM_LOCATOR_TRAILER) / line_bytes;

	if (max_lines > (1u << 20))
		max_lines = 1u << 20;
	if (lines > max_lines)
		lines = max_lines;
	return lines == 0 ? 1 : (uint32_t) lines;
}

size_t
lsm_locator_size(uint64_t nvalues, uint32_t nblocks)
{
	size_t		words = (nblocks + 63) / 64;

	if (nblocks == 0)
		return 0;
	return (size_t) locator_lines(nvalues, nblocks) * 512 * words * 8 +
		LSM_LOCATOR_TRAILER;
}

void
lsm_locator_build(uint8_t *dst, size_t dst_size, uint32_t nblocks,
				  const uint64_t *hashes, const uint32_t *blocks, size_t n)
{
	uint32_t	num_lines = locator_lines(n, nblocks);
	uint32_t	words = (nblocks + 63) / 64;
	uint8_t    *t = dst + dst_size - LSM_LOCATOR_TRAILER;
	size_t		i;

	LSM_ASSERT(dst_size == lsm_locator_size(n, nblocks));
	memset(dst, 0, dst_size);
	for (i = 0; i < n; i++)
	{
		uint64_t	h = hashes[i];
		uint64_t	line = ((uint64_t) (uint32_t) h * num_lines) >> 32;
		uint32_t	h2 = (uint32_t) (h >> 32);
		uint64_t	bit = (uint64_t) 1 << (blocks[i] & 63);
		int			j;

		for (j = 0; j < LSM_LOCATOR_K; j++)
		{
			uint8_t    *w = dst + ((line * 512 + (h2 >> 23)) * words +
								   blocks[i] / 64) * 8;
			uint64_t	x;

			/* dst need not be 8-byte aligned in memory (it is in the file) */
			memcpy(&x, w, 8);
			x |= bit;
			memcpy(w, &x, 8);
			h2 *= 0x9e3779b9u;
		}
	}
	t[0] = 'L';
	t[1] = 1;
	t[2] = LSM_LOCATOR_K;
	t[3] = 0;
	lsm_put_u32(t + 4, num_lines);
	lsm_put_u32(t + 8, nblocks);
	lsm_put_u32(t + 12, 0);
}

int
lsm_locator_parse(const uint8_t *p, size_t n, lsm_locator *l,
				  const char *name, lsm_err *e)
{
	const uint8_t *t;
	uint32_t	num_lines,
				nblocks;
	uint64_t	words;

	if (n < LSM_LOCATOR_TRAILER || ((uintptr_t) p & 7) != 0)
		return LSM_CORRUPT(e, "malformed block locator in \"%s\"", name);
	t = p + n - LSM_LOCATOR_TRAILER;
	num_lines = lsm_get_u32(t + 4);
	nblocks = lsm_get_u32(t + 8);
	words = (nblocks + UINT64_C(63)) / 64;
	if (t[0] != 'L' || t[1] != 1 || t[2] < 1 || t[2] > LSM_BLOOM_MAX_K ||
		t[3] != 0 || num_lines == 0 || nblocks == 0 ||
		lsm_get_u32(t + 12) != 0 ||
		(uint64_t) num_lines * 512 * words * 8 != n - LSM_LOCATOR_TRAILER)
		return LSM_CORRUPT(e, "malformed block locator trailer in \"%s\"", name);
	l->rows = (const uint64_t *) p;
	l->num_lines = num_lines;
	l->nblocks = nblocks;
	l->words = (uint32_t) words;
	l->k = t[2];
	return LSM_OK;
}

int
lsm_value_hashes(const uint8_t *row, size_t rowlen, uint64_t unindexed,
				 lsm_buf *out)
{
	lsm_row_cursor c;
	lsm_field	fv;
	uint64_t	nf,
				f;

	/* one pass over the fields (a malformed row has none) */
	if (lsm_row_cursor_init(&c, row, rowlen, &nf) != LSM_OK || nf > INT32_MAX)
		return LSM_OK;
	/* room for every field's hash (init checked a tag byte per field) */
	if (lsm_buf_reserve(out, nf * sizeof(uint64_t)) != LSM_OK)
		return LSM_NOMEM;
	for (f = 0; lsm_row_cursor_next(&c, &fv); f++)
	{
		uint64_t	h;

		if ((f < 64 && (unindexed >> f) & 1) || fv.is_null)
			continue;
		h = lsm_value_hash((int) f, fv.data, fv.len);
		memcpy(out->data + out->len, &h, sizeof(h));
		out->len += sizeof(h);
	}
	return LSM_OK;
}

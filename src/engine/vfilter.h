/*
 * vfilter.h
 *		Value filters: what an SSTable records about its rows' field values so
 *		that an equality search on a non-key field can skip the table, and
 *		inside a table every data block, that cannot hold the value.
 *
 * Every live (non-tombstone) entry's indexed, non-null fields are hashed:
 * h = XXH3-64(field bytes, seed = field number).  Each hash goes into two
 * structures of the table (docs/format.md has the byte layouts):
 *
 * - The value filter, the leaf of the hierarchy: a cache-line-blocked Bloom
 *   filter (bloom.h layout, trailer magic 'V') of exactly m bits and k
 *   probes, identical for every table of the store, so that filters can be
 *   OR-ed into the hierarchy's internal nodes and transposed into the flat
 *   layout.
 *
 * - The block locator: one small blocked Bloom filter per data block, stored
 *   bit-sliced.  For line l and bit j the locator holds a bitmap over the
 *   table's data blocks (W = ceil(nblocks / 64) words); a probe ANDs k such
 *   bitmaps and gets the blocks that may hold the value, so a table that
 *   passed its value filter is searched by reading a block or two, not by
 *   decoding every row.
 *
 *		locator: [num_lines * 512 * W words, u64 little-endian]
 *				 [trailer: 'L' (1)][version 1 (1)][k (1)][0 (1)]
 *				 [num_lines u32][nblocks u32][0 u32]
 */
#ifndef LSM_VFILTER_H
#define LSM_VFILTER_H

#include "bloom.h"

/*
 * The store's value filter parameters (lsm_options; fixed when the store is
 * created and kept in its manifest): m is 0 (no value filters) or a
 * multiple of 512 up to LSM_VFILTER_MAX_BITS (a 128 MiB filter per table),
 * k is 1..LSM_VFILTER_MAX_HASHES when m is not 0 and 0 when it is.
 * lsm_open refuses options outside these bounds and the manifest reader
 * refuses a manifest outside them, so that nothing sized by m or looping
 * over k ever trusts a value it has not checked.
 */
#define LSM_VFILTER_MAX_BITS (UINT32_C(1) << 30)
#define LSM_VFILTER_MAX_HASHES LSM_BLOOM_MAX_K

#define LSM_LOCATOR_TRAILER 16
#define LSM_LOCATOR_BITS_PER_VALUE 16	/* per data block filter */
#define LSM_LOCATOR_K 6

/* The hash of one field value: the same for filters, locator and search. */
static inline uint64_t
lsm_value_hash(int field, const void *data, size_t len)
{
	return XXH3_64bits_withSeed(data, len, (uint64_t) field);
}

/*
 * Appends to out (as uint64) the hash of every indexed, non-null field of a
 * row (none for a malformed row); fields f < 64 with bit f of unindexed set
 * are left out.  LSM_NOMEM on failure.
 */
int			lsm_value_hashes(const uint8_t *row, size_t rowlen,
							 uint64_t unindexed, lsm_buf *out);

/* Lines of a value filter of m bits (m is a multiple of 512). */
static inline uint32_t
lsm_vfilter_lines(uint32_t m)
{
	return m / 512;
}

typedef struct lsm_locator
{
	const uint64_t *rows;		/* num_lines * 512 rows of W words */
	uint32_t	num_lines;
	uint32_t	nblocks;
	uint32_t	words;			/* W */
	int			k;
} lsm_locator;

/*
 * Bytes of the locator of nvalues hashes over nblocks blocks (trailer
 * included).
 */
size_t		lsm_locator_size(uint64_t nvalues, uint32_t nblocks);

/*
 * Builds into dst (lsm_locator_size bytes, any alignment) the locator of
 * the hashes hashes[i], value i living in data block blocks[i].
 */
void		lsm_locator_build(uint8_t *dst, size_t dst_size, uint32_t nblocks,
							  const uint64_t *hashes, const uint32_t *blocks,
							  size_t n);

/* Parses a locator block; LSM_CORRUPTION if malformed. */
int			lsm_locator_parse(const uint8_t *p, size_t n, lsm_locator *l,
							  const char *name, lsm_err *e);

/*
 * ANDs the k bitmaps of hash h into mask (l->words words, which the caller
 * fills with ones first): afterwards bit b of mask is set only if block b
 * may hold the value.
 */
static inline void
lsm_locator_probe(const lsm_locator *l, uint64_t h, uint64_t *mask)
{
	uint64_t	line = ((uint64_t) (uint32_t) h * l->num_lines) >> 32;
	uint32_t	h2 = (uint32_t) (h >> 32);
	uint32_t	w;
	int			i;

	for (i = 0; i < l->k; i++)
	{
		const uint64_t *row = l->rows + (line * 512 + (h2 >> 23)) * l->words;

		for (w = 0; w < l->words; w++)
			mask[w] &= row[w];
		h2 *= 0x9e3779b9u;
	}
}

#endif							/* LSM_VFILTER_H */

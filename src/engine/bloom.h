/*
 * bloom.h
 *		Cache-line-blocked Bloom filter for keys (RocksDB FastLocalBloom style).
 *
 * A filter is an array of 64-byte lines followed by an 8-byte trailer:
 *
 *		lines:   num_lines * 64 bytes
 *		trailer: [magic 'K' (1)][version 1 (1)][k (1)][reserved 0 (1)]
 *				 [num_lines (4, little-endian)]
 *
 * One key sets k bits, all inside one line: the line is chosen from the low
 * 32 bits of the key's XXH3-64 hash by fastrange (h1 * num_lines >> 32), and
 * probe i uses the top 9 bits of h2 * 0x9e3779b9^i, h2 being the high 32
 * bits.  Every filter of the store uses the same hash, so one lookup hashes
 * its key once and probes any number of filters with it (hash sharing); the
 * filters may differ in size.  k is chosen for the blocked layout from the
 * bits-per-key budget (about bits/2, RocksDB's table).  The SSTable writer
 * places the lines at a 64-byte aligned file offset, so with the file mapped
 * each probe touches exactly one cache line.
 */
#ifndef LSM_BLOOM_H
#define LSM_BLOOM_H

#include "util.h"

#define LSM_BLOOM_LINE 64
#define LSM_BLOOM_TRAILER 8
#define LSM_BLOOM_MAX_K 30		/* probes a trailer may ask for */

typedef struct lsm_bloom
{
	const uint8_t *lines;		/* num_lines * 64 bytes */
	uint32_t	num_lines;
	int			k;
} lsm_bloom;

/* k for the blocked layout at this many bits per key (1..30 bits). */
int			lsm_bloom_choose_k(int bits_per_key);

/* Bytes of a filter for nkeys keys (lines plus trailer); 0 if none. */
size_t		lsm_bloom_size(size_t nkeys, int bits_per_key);

/*
 * Builds into dst (lsm_bloom_size bytes, any alignment) the filter of the
 * given key hashes.
 */
void		lsm_bloom_build(uint8_t *dst, size_t dst_size, int bits_per_key,
							const uint64_t *hashes, size_t n);

/*
 * Parses a key filter block.  Returns LSM_CORRUPTION (message in e, name used
 * for context) if the trailer is malformed.
 */
int			lsm_bloom_parse(const uint8_t *p, size_t n, lsm_bloom *f,
							const char *name, lsm_err *e);

/*
 * The same for any filter in this layout whose trailer starts with magic
 * ('K' key filters, 'V' value filters); what names it in messages.
 */
int			lsm_bloom_parse_as(const uint8_t *p, size_t n, uint8_t magic,
							   const char *what, lsm_bloom *f,
							   const char *name, lsm_err *e);

/* Writes the 8-byte trailer of a filter of num_lines lines at t. */
void		lsm_bloom_trailer(uint8_t *t, uint8_t magic, int k,
							  uint32_t num_lines);

static inline const uint8_t *
lsm_bloom_line(const lsm_bloom *f, uint64_t h)
{
	uint32_t	h1 = (uint32_t) h;

	return f->lines + (((uint64_t) h1 * f->num_lines) >> 32) * LSM_BLOOM_LINE;
}

/* Sets the k bits of hash h in lines (num_lines lines). */
static inline void
lsm_bloom_set(uint8_t *lines, uint32_t num_lines, int k, uint64_t h)
{
	uint8_t    *line = lines + (((uint64_t) (uint32_t) h * num_lines) >> 32) *
		LSM_BLOOM_LINE;
	uint32_t	h2 = (uint32_t) (h >> 32);
	int			i;

	for (i = 0; i < k; i++)
	{
		uint32_t	bit = h2 >> 23;

		line[bit >> 3] |= (uint8_t) (1u << (bit & 7));
		h2 *= 0x9e3779b9u;
	}
}

/*
 * lsm_bloom_set and lsm_bloom_may_match for a filter that readers probe
 * while its one writer sets bits (the memtable's, read by other processes
 * without a lock): each byte is loaded and stored as a relaxed atomic,
 * which costs what plain moves cost and is no data race.
 */
static inline void
lsm_bloom_set_shared(uint8_t *lines, uint32_t num_lines, int k, uint64_t h)
{
	uint8_t    *line = lines + (((uint64_t) (uint32_t) h * num_lines) >> 32) *
		LSM_BLOOM_LINE;
	uint32_t	h2 = (uint32_t) (h >> 32);
	int			i;

	for (i = 0; i < k; i++)
	{
		uint32_t	bit = h2 >> 23;
		uint8_t    *b = &line[bit >> 3];

		__atomic_store_n(b, (uint8_t) (__atomic_load_n(b, __ATOMIC_RELAXED) |
									   (1u << (bit & 7))), __ATOMIC_RELAXED);
		h2 *= 0x9e3779b9u;
	}
}

static inline bool
lsm_bloom_may_match_shared(const lsm_bloom *f, uint64_t h)
{
	const uint8_t *line = lsm_bloom_line(f, h);
	uint32_t	h2 = (uint32_t) (h >> 32);
	uint32_t	ok = 1;
	int			i;

	for (i = 0; i < f->k; i++)
	{
		uint32_t	bit = h2 >> 23;

		ok &= (uint32_t) (__atomic_load_n(&line[bit >> 3], __ATOMIC_RELAXED) >>
						  (bit & 7));
		h2 *= 0x9e3779b9u;
	}
	return (ok & 1) != 0;
}

static inline void
lsm_bloom_prefetch(const lsm_bloom *f, uint64_t h)
{
	__builtin_prefetch(lsm_bloom_line(f, h));
}

/*
 * Does the filter possibly hold the key with hash h?  Branch-free over the
 * k probes.
 */
static inline bool
lsm_bloom_may_match(const lsm_bloom *f, uint64_t h)
{
	const uint8_t *line = lsm_bloom_line(f, h);
	uint32_t	h2 = (uint32_t) (h >> 32);
	uint32_t	ok = 1;
	int			i;

	for (i = 0; i < f->k; i++)
	{
		uint32_t	bit = h2 >> 23;

		ok &= (uint32_t) (line[bit >> 3] >> (bit & 7));
		h2 *= 0x9e3779b9u;
	}
	return (ok & 1) != 0;
}

#endif							/* LSM_BLOOM_H */

/*
 * util.h
 *		Engine-internal utilities: error records, integer coding, hashing,
 *		checksums and debug assertions.
 *
 * Every fallible internal function takes an lsm_err * and returns an LSM_*
 * code; the error record carries the code, a message with context ("checksum
 * mismatch in block at offset 12288 of 000042.sst") and the saved errno.  The
 * public API copies it into the handle so lsm_errmsg() can show it.
 *
 * Fixed-width integers are stored little-endian.  Varints are LEB128 (7 bits
 * per byte, low group first), as in LevelDB.  Checksums are the low 32 bits
 * of XXH3-64; key hashes are the full XXH3-64 of the key with seed 0, one
 * hash shared by every filter of the store.
 */
#ifndef LSM_UTIL_H
#define LSM_UTIL_H

/*
 * The integer coding below copies host integers into files: on a
 * big-endian host every file would be written in the wrong byte order, so
 * the engine refuses to build there rather than write them.
 */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the LSM engine's file formats need a little-endian host"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "lsm.h"

/* ---------- assertions ---------- */

#ifdef LSM_DEBUG
#include <stdio.h>
#include <stdlib.h>
#define LSM_ASSERT(c) \
	do { \
		if (!(c)) \
		{ \
			fprintf(stderr, "%s:%d: LSM_ASSERT(%s) failed\n", \
					__FILE__, __LINE__, #c); \
			abort(); \
		} \
	} while (0)
#else
#define LSM_ASSERT(c) ((void) 0)
#endif

#define LSM_LIKELY(x) __builtin_expect(!!(x), 1)
#define LSM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---------- error records ---------- */

#define LSM_ERRMSG_SIZE 512

typedef struct lsm_err
{
	int			rc;
	int			saved_errno;
	char		msg[LSM_ERRMSG_SIZE];
} lsm_err;

/* Clears e. */
void		lsm_err_clear(lsm_err *e);

/* Records rc with a printf-style message in e (if e is not NULL); returns rc. */
int			lsm_err_set(lsm_err *e, int rc, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/*
 * Records a failed system call: errnum ENOSPC/EDQUOT becomes LSM_NOSPACE,
 * ENOMEM LSM_NOMEM, anything else LSM_IOERR; strerror is appended to the
 * message.  Returns the code.
 */
int			lsm_err_sys(lsm_err *e, int errnum, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/*
 * Copies the error record src (code, message and saved errno) into e (if e
 * is not NULL); returns its code.
 */
int			lsm_err_copy(lsm_err *e, const lsm_err *src);

/* Corruption, recording where in the engine it was detected. */
int			lsm_err_corrupt_at(lsm_err *e, const char *file, int line,
							   const char *fmt,...)
			__attribute__((format(printf, 4, 5)));
#define LSM_CORRUPT(e, ...) lsm_err_corrupt_at((e), __FILE__, __LINE__, __VA_ARGS__)

#define LSM_NOMEM_ERR(e) lsm_err_set((e), LSM_NOMEM, "out of memory")

/* ---------- integer coding ---------- */

static inline void
lsm_put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);			/* little-endian hosts only: see below */
}

static inline void
lsm_put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint32_t
lsm_get_u32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t
lsm_get_u64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, 8);
	return v;
}

/* Writes v as a varint at p; returns the number of bytes (at most 10). */
static inline int
lsm_put_varint(uint8_t *p, uint64_t v)
{
	int			n = 0;

	while (v >= 0x80)
	{
		p[n++] = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t) v;
	return n;
}

static inline int
lsm_varint_len(uint64_t v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/*
 * Reads a varint from [p, end); returns the position after it, or NULL if it
 * is truncated or longer than 10 bytes.
 */
static inline const uint8_t *
lsm_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t	r = 0;
	int			shift;

	/* most varints (lengths, a row's tags) are one byte */
	if (p < end && *p < 0x80)
	{
		*v = *p;
		return p + 1;
	}

	for (shift = 0; shift <= 63 && p < end; shift += 7)
	{
		uint64_t	b = *p++;

		/* the tenth byte holds bit 63 alone: more is not a uint64 */
		if (shift == 63 && b > 1)
			return NULL;
		r |= (b & 0x7f) << shift;
		if (b < 0x80)
		{
			*v = r;
			return p;
		}
	}
	return NULL;
}

/* qsort comparator of uint64_t values, ascending. */
int			lsm_cmp_u64(const void *a, const void *b);

/* ---------- keys ---------- */

/*
 * The 8 bytes of key after its first skip bytes as a big-endian integer,
 * zero-padded: keys that share those skip bytes compare like their fences
 * whenever the fences differ, so most range checks of a lookup cost one
 * integer comparison (versions' level fences, stage runs).
 */
static inline uint64_t
lsm_key_fence(const uint8_t *key, size_t klen, size_t skip)
{
	uint64_t	f = 0;
	size_t		i;

	for (i = 0; i < 8; i++)
		f = f << 8 | (skip + i < klen ? key[skip + i] : 0);
	return f;
}

int			lsm_key_cmp_long(const void *a, size_t alen, const void *b,
							 size_t blen);

/*
 * memcmp order, the shorter first on a tie; the sign is what counts.  Keys
 * are short as a rule (a PostgreSQL key column, db_bench's 16 bytes), and
 * for them eight bytes at a time, compared as big-endian words, beat a call
 * to memcmp: the skip list's and the merges' comparisons were a tenth of
 * fillrandom.  Longer keys go to memcmp.
 */
static inline int
lsm_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	size_t		n = alen < blen ? alen : blen;
	const uint8_t *p = a,
			   *q = b;

	if (n <= 64)
	{
		for (; n >= 8; n -= 8, p += 8, q += 8)
		{
			uint64_t	x,
						y;

			memcpy(&x, p, 8);
			memcpy(&y, q, 8);
			if (x != y)
				return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
		}
		for (; n > 0; n--, p++, q++)
			if (*p != *q)
				return *p < *q ? -1 : 1;
		return (alen > blen) - (alen < blen);
	}
#endif
	return lsm_key_cmp_long(a, alen, b, blen);
}

/* LSM_MAX_KEY_LEN is public (lsm.h) */
#define LSM_MAX_VALUE_LEN ((size_t) 1 << 30)

/* ---------- hashing and checksums ---------- */

/* The key hash, computed once per lookup and shared by every filter. */
static inline uint64_t
lsm_key_hash(const void *key, size_t klen)
{
	return XXH3_64bits(key, klen);
}

static inline uint32_t
lsm_checksum(const void *p, size_t n)
{
	return (uint32_t) XXH3_64bits(p, n);
}

/* ---------- growable byte buffer ---------- */

typedef struct lsm_buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
} lsm_buf;

/* Grows b to hold need bytes (util.c); LSM_NOMEM on failure. */
int			lsm_buf_grow(lsm_buf *b, size_t need);

/*
 * Ensures room for extra more bytes; LSM_NOMEM on failure.  Inline, as is
 * lsm_buf_append: the builders append a few bytes per entry (a hash, a
 * block number), and a copy of a constant size then compiles to a store.
 */
static inline int
lsm_buf_reserve(lsm_buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return LSM_OK;
	return lsm_buf_grow(b, b->len + extra);
}

static inline int
lsm_buf_append(lsm_buf *b, const void *p, size_t n)
{
	if (lsm_buf_reserve(b, n) != LSM_OK)
		return LSM_NOMEM;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return LSM_OK;
}

int			lsm_buf_append_varint(lsm_buf *b, uint64_t v);
void		lsm_buf_free(lsm_buf *b);

/* Allocates a copy of n bytes with a trailing NUL; NULL on failure. */
void	   *lsm_memdup(const void *p, size_t n);

/*
 * Bits set in the bytes bytes (a multiple of 8) of a, or of a XOR b if b is
 * not NULL: the fill of a filter, the distance of two.  With the CPU's
 * popcnt instruction where it has one (the default build targets CPUs
 * without it, and calls a library routine per word).
 */
uint64_t	lsm_popcount(const uint8_t *a, const uint8_t *b, size_t bytes);

/* ---------- rows (row.c) ---------- */

/*
 * A cursor over the fields of a row, in order, for whoever visits many of
 * them: a row's tags are varints, so field i is found only by reading the
 * i tags before it, and n calls of lsm_row_field cost O(n^2) where a
 * cursor costs O(n).
 */
typedef struct lsm_row_cursor
{
	const uint8_t *tag;			/* the next field's tag */
	const uint8_t *data;		/* the next field's bytes */
	uint64_t	left;			/* fields not visited yet */
} lsm_row_cursor;

/*
 * Checks the framing of the whole row (its tags add up to exactly the bytes
 * after them) and puts the cursor before field 0; *nfields gets the field
 * count.  LSM_CORRUPTION if the row is malformed.
 */
int			lsm_row_cursor_init(lsm_row_cursor *c, const void *row,
								size_t rowlen, uint64_t *nfields);

/* The next field (false after the last). */
bool		lsm_row_cursor_next(lsm_row_cursor *c, lsm_field *f);

#endif							/* LSM_UTIL_H */

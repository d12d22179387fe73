/*
 * test_row.c
 *		Unit tests of the row codec (lsm_row_encode, lsm_row_field,
 *		lsm_row_fields, lsm_row_nfields in lsm.h) and of a row's value
 *		hashes (lsm_value_hashes, vfilter.h).
 *
 * A row is [nfields varint] [tag varint]* [field bytes]*, tag 0 for null and
 * length + 1 otherwise.  The tests round-trip rows of nulls, empty strings,
 * binary bytes and many fields (tags of one, two and three bytes), check
 * that a field past the end reads as null, that invalid arguments give
 * LSM_INVALID, and that malformed rows (every truncation of valid
 * encodings, forged headers and tags, random bytes) give LSM_CORRUPTION and
 * never read outside the row: each row under test is copied into an
 * allocation of exactly its length, so ASan reports any overrun.  A row of
 * 100,000 fields decodes, hashes and goes through a store in time linear
 * in its fields (wide_row; it took 30 s when every field was decoded from
 * the first tag on).
 */
#include <limits.h>
#include <stdbool.h>

#include "harness.h"

#include "vfilter.h"

/* ---------------------------------------------------------------------- */
/* Helpers. */

/* Bytes of v as a LEB128 varint. */
static int
varint_len(uint64_t v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

/* Returns a malloc'd copy of n bytes of p (at least one byte allocated). */
static uint8_t *
exact_copy(const void *p, size_t n)
{
	uint8_t    *q = malloc(n ? n : 1);

	CHECK(q != NULL);
	if (n)
		memcpy(q, p, n);
	return q;
}

/* Checks that field i of row decodes to f (null or bytes). */
static void
check_field(const void *row, size_t rowlen, int i, const lsm_field *f)
{
	lsm_field	out;

	memset(&out, 0x5a, sizeof(out));
	CHECK_OK(lsm_row_field(row, rowlen, i, &out));
	if (f == NULL || f->is_null)
	{
		CHECK_MSG(out.is_null, "field %d should be null", i);
		CHECK_EQ_U(out.len, 0);
		CHECK(out.data == NULL);
		return;
	}
	CHECK_MSG(!out.is_null, "field %d should not be null", i);
	CHECK_MEMEQ(out.data, out.len, f->data, f->len);
	/* the field points into the row */
	CHECK((const uint8_t *) out.data >= (const uint8_t *) row);
	CHECK((const uint8_t *) out.data + out.len <= (const uint8_t *) row + rowlen);
}

/*
 * Checks that lsm_row_fields decodes the row into fields[0..n) in one call,
 * with fields past the end null, and that any prefix of the fields decodes
 * the same.
 */
static void
check_fields(const void *row, size_t rowlen, const lsm_field *fields, int n)
{
	lsm_field  *out = malloc(sizeof(lsm_field) * (n + 3));
	int			i;

	CHECK(out != NULL);
	memset(out, 0x5a, sizeof(lsm_field) * (n + 3));
	CHECK_OK(lsm_row_fields(row, rowlen, out, n + 3));
	for (i = 0; i < n + 3; i++)
	{
		if (i >= n || fields[i].is_null)
		{
			CHECK_MSG(out[i].is_null && out[i].data == NULL && out[i].len == 0,
					  "field %d of %d should be null", i, n);
			continue;
		}
		CHECK_MSG(!out[i].is_null, "field %d of %d should not be null", i, n);
		CHECK_MEMEQ(out[i].data, out[i].len, fields[i].data, fields[i].len);
		CHECK((const uint8_t *) out[i].data >= (const uint8_t *) row &&
			  (const uint8_t *) out[i].data + out[i].len <=
			  (const uint8_t *) row + rowlen);
	}
	if (n > 1)
	{
		memset(out, 0x5a, sizeof(lsm_field) * (n + 3));
		CHECK_OK(lsm_row_fields(row, rowlen, out, n / 2));
		for (i = 0; i < n / 2; i++)
			CHECK(out[i].is_null == fields[i].is_null &&
				  out[i].len == (fields[i].is_null ? 0 : fields[i].len));
	}
	CHECK_OK(lsm_row_fields(row, rowlen, NULL, 0));
	free(out);
}

/*
 * Encodes fields[0..n), checks the length against the format, decodes every
 * field and a few past the end from an exact-size copy, and returns the
 * copy (caller frees) with its length.
 */
static uint8_t *
roundtrip(const lsm_field *fields, int n, size_t *lenp)
{
	void	   *row;
	size_t		rowlen;
	size_t		want;
	uint8_t    *copy;
	int			i;

	CHECK_OK(lsm_row_encode(fields, n, &row, &rowlen));
	/* length: nfields varint, one tag per field, the field bytes */
	want = (size_t) varint_len((uint64_t) n);
	for (i = 0; i < n; i++)
		want += fields[i].is_null ? 1 :
			(size_t) varint_len(fields[i].len + 1) + fields[i].len;
	CHECK_EQ_U(rowlen, want);
	copy = exact_copy(row, rowlen);
	lsm_free(row);

	CHECK_EQ(lsm_row_nfields(copy, rowlen), n);
	for (i = 0; i < n; i++)
		check_field(copy, rowlen, i, &fields[i]);
	check_fields(copy, rowlen, fields, n);
	/* past the end: null */
	check_field(copy, rowlen, n, NULL);
	check_field(copy, rowlen, n + 1, NULL);
	check_field(copy, rowlen, n + 1000, NULL);
	check_field(copy, rowlen, INT_MAX, NULL);
	*lenp = rowlen;
	return copy;
}

/* A non-null field of n bytes at p. */
static lsm_field
bytes_field(const void *p, size_t n)
{
	lsm_field	f;

	f.data = p;
	f.len = n;
	f.is_null = 0;
	return f;
}

/* A null field. */
static lsm_field
null_field(void)
{
	lsm_field	f;

	f.data = NULL;
	f.len = 0;
	f.is_null = 1;
	return f;
}

/* ---------------------------------------------------------------------- */
/* Tests. */

/* Nulls, empty strings, and the difference between them. */
TEST(nulls_and_empty)
{
	lsm_field	f[6];
	uint8_t    *row;
	size_t		len;
	lsm_field	out;

	/* no fields at all: one byte, every field null */
	row = roundtrip(NULL, 0, &len);
	CHECK_EQ_U(len, 1);
	CHECK_EQ(row[0], 0);
	free(row);

	f[0] = null_field();
	f[1] = bytes_field("", 0);
	f[2] = bytes_field(NULL, 0);	/* no bytes: NULL data is fine */
	f[3] = null_field();
	f[4] = bytes_field("x", 1);
	f[5] = null_field();
	f[5].data = "ignored";		/* a null field's data is ignored */
	f[5].len = 7;
	row = roundtrip(f, 6, &len);
	CHECK_EQ_U(len, 1 + 6 + 1);
	CHECK_OK(lsm_row_field(row, len, 1, &out));
	CHECK_EQ(out.is_null, 0);
	CHECK_EQ_U(out.len, 0);
	CHECK_OK(lsm_row_field(row, len, 0, &out));
	CHECK_EQ(out.is_null, 1);
	free(row);

	/* all nulls */
	{
		lsm_field	n[40];
		int			i;

		for (i = 0; i < 40; i++)
			n[i] = null_field();
		row = roundtrip(n, 40, &len);
		CHECK_EQ_U(len, 41);
		free(row);
	}
}

/* Binary bytes (NUL, 0xFF, all 256 values) come back exactly. */
TEST(binary_fields)
{
	uint8_t		all[256];
	lsm_field	f[5];
	uint8_t    *row;
	size_t		len;
	int			i;

	for (i = 0; i < 256; i++)
		all[i] = (uint8_t) i;
	f[0] = bytes_field("\0", 1);
	f[1] = bytes_field(all, 256);
	f[2] = bytes_field("\xff\xff\0\xff", 4);
	f[3] = bytes_field("\0\0\0", 3);
	f[4] = bytes_field(all + 128, 1);
	row = roundtrip(f, 5, &len);
	free(row);
}

/*
 * Many fields of lengths that need one-, two- and three-byte tags, in
 * random order with nulls mixed in; and a row of one large field.
 */
TEST(many_fields)
{
	uint64_t	rnd = harness_seed();
	const int	n = 5000;
	lsm_field  *f = calloc(n, sizeof(lsm_field));
	uint8_t    *pool = malloc(70000);
	uint8_t    *row;
	size_t		len;
	int			i;

	CHECK(f != NULL && pool != NULL);
	for (i = 0; i < 70000; i++)
		pool[i] = (uint8_t) harness_rand64(&rnd);
	for (i = 0; i < n; i++)
	{
		uint64_t	r = harness_rand64(&rnd);
		size_t		flen;

		switch (r % 6)
		{
			case 0:
				f[i] = null_field();
				continue;
			case 1:
				flen = 0;
				break;
			case 2:
				flen = 1 + r % 126;		/* tag of one byte */
				break;
			case 3:
				flen = 126 + r % 3;		/* tags 127, 128, 129: the edge */
				break;
			case 4:
				flen = 200 + r % 2000;	/* two bytes */
				break;
			default:
				flen = i % 50 == 0 ? 16383 + r % 40 : 5;	/* three bytes */
				break;
		}
		f[i] = bytes_field(pool + r % (70000 - flen), flen);
	}
	row = roundtrip(f, n, &len);
	free(row);

	/* one field of 1 MiB */
	{
		uint8_t    *big = malloc(1 << 20);
		lsm_field	g[3];

		CHECK(big != NULL);
		memset(big, 0xab, 1 << 20);
		g[0] = bytes_field("a", 1);
		g[1] = bytes_field(big, 1 << 20);
		g[2] = bytes_field("z", 1);
		row = roundtrip(g, 3, &len);
		free(row);
		free(big);
	}
	free(f);
	free(pool);
}

/* Invalid arguments: LSM_INVALID, and nothing allocated. */
TEST(invalid_args)
{
	lsm_field	f[2];
	lsm_field	out;
	void	   *row = NULL;
	size_t		len = 0;
	uint8_t		good[4] = {1, 2, 'a', 0};

	f[0] = bytes_field("a", 1);
	f[1] = bytes_field(NULL, 3);	/* bytes claimed, none given */
	CHECK_RC(LSM_INVALID, lsm_row_encode(f, 2, &row, &len));
	CHECK(row == NULL);
	CHECK_RC(LSM_INVALID, lsm_row_encode(f, -1, &row, &len));
	CHECK_RC(LSM_INVALID, lsm_row_encode(NULL, 1, &row, &len));
	CHECK_RC(LSM_INVALID, lsm_row_encode(f, 1, NULL, &len));
	CHECK_RC(LSM_INVALID, lsm_row_encode(f, 1, &row, NULL));
	CHECK(row == NULL);

	CHECK_OK(lsm_row_field(good, 3, 0, &out));
	CHECK_MEMEQ(out.data, out.len, "a", 1);
	CHECK_RC(LSM_INVALID, lsm_row_field(good, 3, -1, &out));
	CHECK_RC(LSM_INVALID, lsm_row_field(good, 3, INT_MIN, &out));
	CHECK_RC(LSM_INVALID, lsm_row_field(good, 3, 0, NULL));
	CHECK_RC(LSM_INVALID, lsm_row_field(NULL, 3, 0, &out));
	CHECK_EQ(lsm_row_nfields(NULL, 3), 0);
	CHECK_EQ(lsm_row_nfields(NULL, 0), 0);
}

/*
 * lsm_row_encode_to: the size asked with no room, nothing written into a
 * buffer one byte short, and the bytes lsm_row_encode makes into one that
 * fits; bad arguments refused.
 */
TEST(encode_into_buffer)
{
	uint8_t		big[300];
	uint8_t		buf[400];
	lsm_field	f[4];
	void	   *row;
	size_t		len,
				need;

	memset(big, 'x', sizeof(big));
	f[0] = bytes_field("key", 3);
	f[1].data = NULL;
	f[1].len = 0;
	f[1].is_null = 1;
	f[2] = bytes_field(big, sizeof(big));	/* a two-byte tag */
	f[3] = bytes_field("", 0);
	CHECK_OK(lsm_row_encode(f, 4, &row, &len));
	CHECK_OK(lsm_row_encode_to(f, 4, NULL, 0, &need));
	CHECK_EQ(need, len);
	memset(buf, 0xAB, sizeof(buf));
	CHECK_OK(lsm_row_encode_to(f, 4, buf, need - 1, &need));
	CHECK_EQ(need, len);
	CHECK_EQ(buf[0], 0xAB);		/* nothing written */
	CHECK_OK(lsm_row_encode_to(f, 4, buf, need, &need));
	CHECK_MEMEQ(buf, need, row, len);
	CHECK_EQ(buf[need], 0xAB);	/* nothing past the row */
	free(row);
	CHECK_RC(LSM_INVALID, lsm_row_encode_to(f, 4, NULL, 10, &need));
	CHECK_RC(LSM_INVALID, lsm_row_encode_to(f, 4, buf, sizeof(buf), NULL));
	CHECK_RC(LSM_INVALID, lsm_row_encode_to(NULL, 1, buf, sizeof(buf), &need));
}

/* Encodes a row with a mix of fields for the malformed-row tests. */
static void *
sample_row(int which, size_t *len)
{
	static const char long_field[300] = "long";
	lsm_field	f[6];
	void	   *row;
	int			n;

	switch (which)
	{
		case 0:
			f[0] = bytes_field("abc", 3);
			f[1] = null_field();
			f[2] = bytes_field("", 0);
			f[3] = bytes_field("\0\xff", 2);
			n = 4;
			break;
		case 1:
			f[0] = bytes_field(long_field, sizeof(long_field));
			f[1] = bytes_field("x", 1);
			n = 2;
			break;
		case 2:
			f[0] = null_field();
			f[1] = null_field();
			f[2] = bytes_field("only", 4);
			n = 3;
			break;
		default:
			f[0] = bytes_field("", 0);
			f[1] = bytes_field("", 0);
			n = 2;
			break;
	}
	CHECK_OK(lsm_row_encode(f, n, &row, len));
	return row;
}

/*
 * Every strict prefix of a valid encoding is malformed (a row's length is
 * fixed by its header and tags).  Checks each prefix of each sample row:
 * with fields set, every field lookup must give LSM_CORRUPTION; otherwise
 * lsm_row_nfields must give 0.  Counts the violations and fails once with
 * the first of them, so the report shows how widespread a defect is.
 */
static void
check_truncations(bool fields)
{
	int			which;
	int			bad = 0;
	int			cases = 0;
	char		first[200] = "";

	for (which = 0; which < 4; which++)
	{
		size_t		len;
		void	   *row = sample_row(which, &len);
		int			nf = lsm_row_nfields(row, len);
		size_t		cut;

		CHECK_GT(nf, 0);
		for (cut = 0; cut < len; cut++)
		{
			uint8_t    *p = exact_copy(row, cut);
			int			i;

			if (!fields)
			{
				int			got = lsm_row_nfields(p, cut);

				cases++;
				if (got != 0 && bad++ == 0)
					snprintf(first, sizeof(first),
							 "row %d cut to %zu of %zu bytes: lsm_row_nfields = %d",
							 which, cut, len, got);
			}
			for (i = 0; fields && i <= nf + 1; i++)
			{
				lsm_field	out;
				int			rc = lsm_row_field(p, cut, i, &out);

				cases++;
				if (rc != LSM_CORRUPTION && bad++ == 0)
					snprintf(first, sizeof(first),
							 "row %d cut to %zu of %zu bytes: field %d gives "
							 "%d (%s)", which, cut, len, i, rc,
							 lsm_strerror(rc));
			}
			if (fields)
			{
				lsm_field	all[16];
				int			rc = lsm_row_fields(p, cut, all, 16);

				cases++;
				if ((rc != LSM_CORRUPTION || !all[0].is_null) && bad++ == 0)
					snprintf(first, sizeof(first),
							 "row %d cut to %zu of %zu bytes: lsm_row_fields "
							 "gives %d (%s)", which, cut, len, rc,
							 lsm_strerror(rc));
			}
			free(p);
		}
		lsm_free(row);
	}
	CHECK_MSG(bad == 0, "%d of %d truncated-row cases not reported as "
			  "malformed; first: %s", bad, cases, first);
}

/* Field lookups in a truncated row: LSM_CORRUPTION. */
TEST(truncated_row_fields_corrupt)
{
	check_truncations(true);
}

/* lsm_row_nfields of a truncated row: 0 ("0 for a malformed row"). */
TEST(truncated_row_nfields_zero)
{
	check_truncations(false);
}

/*
 * Malformed rows never crash or overrun: every truncation, every byte
 * scribbled, and random byte strings, each probed for every field.  Where a
 * field does decode, it lies inside the row.
 */
TEST(malformed_never_crash)
{
	uint64_t	rnd = harness_seed() ^ 0xabcdef;
	int			which;
	int			round;

	for (which = 0; which < 4; which++)
	{
		size_t		len;
		uint8_t    *row = sample_row(which, &len);
		size_t		cut;
		size_t		pos;

		for (cut = 0; cut <= len; cut++)
		{
			uint8_t    *p = exact_copy(row, cut);
			int			i;

			(void) lsm_row_nfields(p, cut);
			for (i = 0; i < 8; i++)
			{
				lsm_field	out;

				if (lsm_row_field(p, cut, i, &out) == LSM_OK && !out.is_null)
					CHECK((const uint8_t *) out.data + out.len <= p + cut);
			}
			free(p);
		}
		for (pos = 0; pos < len; pos++)
		{
			int			bit;

			for (bit = 0; bit < 8; bit++)
			{
				uint8_t    *p = exact_copy(row, len);
				int			i;

				p[pos] ^= (uint8_t) (1 << bit);
				for (i = 0; i < 8; i++)
				{
					lsm_field	out;

					if (lsm_row_field(p, len, i, &out) == LSM_OK && !out.is_null)
						CHECK((const uint8_t *) out.data >= p &&
							  (const uint8_t *) out.data + out.len <= p + len);
				}
				(void) lsm_row_nfields(p, len);
				free(p);
			}
		}
		lsm_free(row);
	}
	for (round = 0; round < 20000; round++)
	{
		size_t		len = harness_rand64(&rnd) % 24;
		uint8_t    *p = malloc(len ? len : 1);
		size_t		j;
		int			i;

		CHECK(p != NULL);
		for (j = 0; j < len; j++)
		{
			uint64_t	r = harness_rand64(&rnd);

			/* small numbers and continuation bytes are the interesting ones */
			if (r % 3 == 0)
				p[j] = (uint8_t) (r % 8);
			else if (r % 3 == 1)
				p[j] = (uint8_t) (0x80 | (r >> 8));
			else
				p[j] = (uint8_t) (r >> 16);
		}
		for (i = 0; i < 6; i++)
		{
			lsm_field	out;

			if (lsm_row_field(p, len, i, &out) == LSM_OK && !out.is_null)
				CHECK((const uint8_t *) out.data >= p &&
					  (const uint8_t *) out.data + out.len <= p + len);
		}
		(void) lsm_row_nfields(p, len);
		free(p);
	}
}

/* Forged headers and tags: LSM_CORRUPTION. */
TEST(forged_rows)
{
	/* nfields larger than the bytes that follow */
	static const uint8_t many[] = {0x7f, 0, 0};
	/* a tag whose length runs past the end */
	static const uint8_t longtag[] = {1, 10, 'a', 'b'};
	/* an unterminated varint as nfields, and as a tag */
	static const uint8_t badvar[] = {0x80, 0x80, 0x80};
	static const uint8_t badtag[] = {2, 1, 0x80};
	/* an 11-byte varint */
	static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0x01};
	/* a tag of 2^64 - 1 (length 2^64 - 2) */
	static const uint8_t maxtag[] = {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0x01, 'x'};
	/* field 1's offset (sum of earlier lengths) past the end */
	static const uint8_t offpast[] = {2, 5, 2, 'a', 'b'};
	lsm_field	out;
	uint8_t    *p;

#define FORGED(arr, field) \
	do { \
		p = exact_copy(arr, sizeof(arr)); \
		CHECK_MSG(lsm_row_field(p, sizeof(arr), (field), &out) == LSM_CORRUPTION, \
				  "%s field %d accepted", #arr, (field)); \
		free(p); \
	} while (0)

	FORGED(many, 0);
	FORGED(many, 5);
	FORGED(longtag, 0);
	FORGED(badvar, 0);
	FORGED(badtag, 0);
	FORGED(badtag, 1);
	FORGED(huge, 0);
	FORGED(maxtag, 0);
	FORGED(offpast, 1);
#undef FORGED
	p = exact_copy(many, sizeof(many));
	CHECK_EQ(lsm_row_nfields(p, sizeof(many)), 0);
	free(p);
	p = exact_copy(badvar, sizeof(badvar));
	CHECK_EQ(lsm_row_nfields(p, sizeof(badvar)), 0);
	free(p);
	p = exact_copy(huge, sizeof(huge));
	CHECK_EQ(lsm_row_nfields(p, sizeof(huge)), 0);
	free(p);
	/* the empty byte string is not a row */
	CHECK_RC(LSM_CORRUPTION, lsm_row_field("", 0, 0, &out));
	CHECK_EQ(lsm_row_nfields("", 0), 0);
}

/*
 * A row of 100,000 fields (issue 11: a put of one took 30 s, every field's
 * decoding starting over from the first tag): lsm_row_fields decodes it in
 * one pass, its value hashes are those of its indexed non-null fields, and
 * a store takes it (memtable and table value filters) and finds it by the
 * value of its last field, before and after a flush.
 */
/*
 * Varints (util.h), which rows, manifests and properties are made of: every
 * width round-trips, UINT64_MAX takes ten bytes, and a tenth byte with more
 * than bit 63, an eleventh byte or a cut varint is refused.
 */
TEST(varint_bounds)
{
	static const uint64_t values[] = {0, 1, 127, 128, 16383, 16384,
		UINT64_C(1) << 35, UINT64_C(1) << 56, (UINT64_C(1) << 63) - 1,
	UINT64_C(1) << 63, UINT64_MAX};
	uint8_t		buf[16];
	uint64_t	v;
	size_t		i,
				n;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++)
	{
		n = (size_t) lsm_put_varint(buf, values[i]);
		CHECK_EQ(n, lsm_varint_len(values[i]));
		CHECK(lsm_get_varint(buf, buf + n, &v) == buf + n);
		CHECK_EQ(v, values[i]);
		CHECK(lsm_get_varint(buf, buf + n - 1, &v) == NULL);
	}
	CHECK_EQ(lsm_put_varint(buf, UINT64_MAX), 10);
	CHECK_EQ(buf[9], 1);
	buf[9] = 2;					/* bit 64 */
	CHECK(lsm_get_varint(buf, buf + 10, &v) == NULL);
	buf[9] = 0x81;				/* an eleventh byte follows */
	buf[10] = 0;
	CHECK(lsm_get_varint(buf, buf + 11, &v) == NULL);
}

TEST(wide_row)
{
	const int	n = 100000;
	char	   *dir = harness_tmpdir("wide");
	lsm_field  *f = calloc(n, sizeof(lsm_field));
	char	   *text = malloc((size_t) n * 8);
	lsm_buf		hashes = {0};
	lsm_db	   *db;
	void	   *row;
	size_t		rowlen,
				nh = 0;
	uint64_t	unindexed = 0x5;	/* fields 0 and 2 */
	int			i,
				pass;

	CHECK(f != NULL && text != NULL);
	for (i = 0; i < n; i++)
	{
		int			len = snprintf(text + (size_t) i * 8, 8, "%d", i);

		if (i % 7 == 3)
			f[i] = null_field();
		else
			f[i] = bytes_field(text + (size_t) i * 8,
							   i % 11 == 0 ? 0 : (size_t) len);
	}
	CHECK_OK(lsm_row_encode(f, n, &row, &rowlen));
	CHECK_EQ(lsm_row_nfields(row, rowlen), n);
	check_fields(row, rowlen, f, n);

	CHECK_OK(lsm_value_hashes(row, rowlen, unindexed, &hashes));
	for (i = 0; i < n; i++)
	{
		uint64_t	h;

		if (f[i].is_null || (i < 64 && (unindexed >> i) & 1))
			continue;
		CHECK(nh < hashes.len / sizeof(uint64_t));
		memcpy(&h, hashes.data + nh * sizeof(uint64_t), sizeof(h));
		CHECK_EQ_U(h, lsm_value_hash(i, f[i].data, f[i].len));
		nh++;
	}
	CHECK_EQ_U(nh, hashes.len / sizeof(uint64_t));
	lsm_buf_free(&hashes);

	CHECK_OK(lsm_open(dir, NULL, &db));
	CHECK_DB_OK(db, lsm_put(db, "wide", 4, row, rowlen));
	CHECK_DB_OK(db, lsm_put(db, "narrow", 6, "\x01\x02x", 3));
	for (pass = 0; pass < 2; pass++)
	{
		lsm_iter   *it;
		size_t		klen;
		const void *k;

		CHECK_DB_OK(db, lsm_value_search(db, n - 1, f[n - 1].data, f[n - 1].len,
										 &it));
		CHECK(lsm_iter_valid(it));
		k = lsm_iter_key(it, &klen);
		CHECK_MEMEQ(k, klen, "wide", 4);
		lsm_iter_next(it);
		CHECK(!lsm_iter_valid(it));
		CHECK_OK(lsm_iter_status(it));
		lsm_iter_close(it);
		CHECK_DB_OK(db, lsm_flush(db));
	}
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	lsm_free(row);
	free(text);
	free(f);
}

/* Runs the tests named on the command line, or all of them. */
int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(nulls_and_empty);
	RUN(binary_fields);
	RUN(many_fields);
	RUN(invalid_args);
	RUN(encode_into_buffer);
	RUN(truncated_row_fields_corrupt);
	RUN(truncated_row_nfields_zero);
	RUN(malformed_never_crash);
	RUN(forged_rows);
	RUN(wide_row);
	RUN(varint_bounds);
	return harness_done();
}

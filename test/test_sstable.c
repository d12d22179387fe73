/*
 * test_sstable.c
 *		Unit tests of blocks (block.h) and SSTables (sstable.h).
 *
 * Blocks: the builder's prefix compression and restart points, the cursor's
 * first/next/seek/seek_restart over keys that share prefixes, are prefixes
 * of one another, hold NUL and 0xFF bytes or outgrow the cursor's inline key
 * buffer, and empty values; malformed blocks are refused or flagged, never
 * read out of bounds (ASan watches).
 *
 * Tables: a table written by the builder reads back exactly through the
 * reader: every key found with its sequence, tombstone flag and value;
 * absent keys before, between and after the present ones not found; a full
 * scan and a seek to every key and between keys, forwards and backwards;
 * values larger than a block; one-key tables; with a key filter (which
 * holds every key and rejects most absent ones) and without (bits_per_key
 * = 0); lsm_table_verify; the builder's O_EXCL create and abandon.
 * Damage that passes the checksums (forge.h: block handles that wrap or
 * point past the file) ends in LSM_CORRUPTION, never a wild read.
 *
 * Backwards: a block's last/prev with and without the cache of decoded
 * entries (block_reverse); a table's seek_back/prev over keys with long
 * shared prefixes, so that steps back cross restart points and blocks
 * (table_reverse); the level iterator over several tables (level_reverse).
 * Each is checked against the sorted entries: a whole backward scan, a
 * seek back to every key, just after and just before it, before the first
 * and after the last, and a random walk changing direction at every seek.
 */
#include <fcntl.h>

#include "harness.h"

#include "block.h"
#include "db.h"
#include "env.h"
#include "forge.h"
#include "sstable.h"

/* ---------------------------------------------------------------------- */
/* Entries: sorted, distinct keys with values, sequences and kinds. */

typedef struct entry
{
	uint8_t    *key;
	size_t		klen;
	uint8_t    *val;
	size_t		vlen;
	uint64_t	seq;
	int			del;
} entry;

typedef struct entries
{
	entry	   *e;
	size_t		n;
} entries;

/* qsort comparator: entries by key. */
static int
entry_cmp(const void *a, const void *b)
{
	const entry *x = a;
	const entry *y = b;

	return lsm_key_cmp(x->key, x->klen, y->key, y->klen);
}

/* Fills p[0..n) with bytes derived from seed. */
static void
fill_bytes(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t	s = seed;
	size_t		i;

	for (i = 0; i < n; i += 8)
	{
		uint64_t	r = harness_rand64(&s);

		memcpy(p + i, &r, n - i < 8 ? n - i : 8);
	}
}

/*
 * Sorts the n keys of es->e, drops duplicates (es->n is then the number
 * left) and gives the entries values, sequences and kinds: values empty for
 * every seventh, large (1..3 blocks of block_bytes) for every 97th if big
 * is set, otherwise short; every fifth entry is a tombstone with an empty
 * value.  Sequences are distinct and some exceed 2^32.
 */
static void
sort_and_fill(entries *es, size_t n, bool big, size_t block_bytes)
{
	size_t		i,
				w;

	qsort(es->e, n, sizeof(entry), entry_cmp);
	/* drop duplicates */
	for (i = 0, w = 0; i < n; i++)
	{
		if (w > 0 && entry_cmp(&es->e[w - 1], &es->e[i]) == 0)
		{
			free(es->e[i].key);
			continue;
		}
		es->e[w++] = es->e[i];
	}
	es->n = w;
	for (i = 0; i < es->n; i++)
	{
		entry	   *e = &es->e[i];

		e->seq = i % 3 == 0 ? ((uint64_t) 1 << 33) + i * 13 : i * 7 + 1;
		e->del = i % 5 == 3;
		if (e->del || i % 7 == 0)
			e->vlen = 0;
		else if (big && i % 97 == 5)
			e->vlen = block_bytes * (1 + i % 3) + 17;
		else
			e->vlen = 1 + i % 40;
		e->val = malloc(e->vlen + 1);
		CHECK(e->val != NULL);
		fill_bytes(e->val, e->vlen, i * 31 + 7);
	}
}

/*
 * Makes about n sorted distinct keys: half structured ("user/000123/name",
 * long shared prefixes), half random binary over a byte set rich in 0x00
 * and 0xFF, some of them prefixes of others, a few longer than 128 bytes.
 * Values, sequences and kinds as sort_and_fill gives them.
 */
static void
make_entries(entries *es, size_t n, bool big, size_t block_bytes,
			 uint64_t *rnd)
{
	static const uint8_t bytes[] = {0x00, 0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff,
	0xff, 'a', 'b'};
	size_t		i;

	es->e = calloc(n + 2, sizeof(entry));
	CHECK(es->e != NULL);
	for (i = 0; i < n; i++)
	{
		entry	   *e = &es->e[i];

		e->key = malloc(400);
		CHECK(e->key != NULL);
		if (i % 2 == 0)
			e->klen = (size_t) snprintf((char *) e->key, 400,
										"user/%06zu/%s", i / 2,
										i % 4 ? "name" : "email");
		else if (i % 101 == 1)
		{
			e->klen = 129 + harness_rand64(rnd) % 250;
			fill_bytes(e->key, e->klen, i);
		}
		else
		{
			size_t		j;

			e->klen = 1 + harness_rand64(rnd) % 6;
			for (j = 0; j < e->klen; j++)
				e->key[j] = bytes[harness_rand64(rnd) % sizeof(bytes)];
		}
	}
	sort_and_fill(es, n, big, block_bytes);
}

/*
 * Makes about n sorted distinct keys for the backward tests, most of them
 * sharing long prefixes, so that a data block holds many entries and a
 * step back has restart points to go through: two fifths
 * "tenant/0003/orders/2026-11-22T10:00:00/line/004711"; a fifth made from
 * an earlier key with one byte (0x00, 0x01 or 0xFF) added or its end cut
 * off, so that chains of keys are prefixes of one another; a fifth of 1..6
 * bytes rich in 0x00 and 0xFF; a fifth of 152..250 bytes behind a common
 * 151-byte prefix (longer than the cursor's inline key buffer).  Values,
 * sequences and kinds as sort_and_fill gives them (big values too).
 */
static void
make_prefix_entries(entries *es, size_t n, size_t block_bytes, uint64_t *rnd)
{
	static const uint8_t bytes[] = {0x00, 0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff,
	0xff, 'a', 'b'};
	static const uint8_t grow[] = {0x00, 0x00, 0x01, 0xff};
	size_t		i;

	es->e = calloc(n + 2, sizeof(entry));
	CHECK(es->e != NULL);
	for (i = 0; i < n; i++)
	{
		entry	   *e = &es->e[i];
		size_t		j;

		e->key = malloc(400);
		CHECK(e->key != NULL);
		switch (i % 5)
		{
			case 0:
			case 1:
				e->klen = (size_t) snprintf((char *) e->key, 400,
											"tenant/%04d/orders/"
											"2026-11-22T10:00:00/line/%06d",
											(int) (harness_rand64(rnd) % 4),
											(int) (harness_rand64(rnd) %
												   1000000));
				break;
			case 2:
				{
					const entry *from = &es->e[harness_rand64(rnd) % i];

					memcpy(e->key, from->key, from->klen);
					e->klen = from->klen;
					if (e->klen > 1 && harness_rand64(rnd) % 3 == 0)
						e->klen = 1 + harness_rand64(rnd) % (e->klen - 1);
					else if (e->klen < 399)
						e->key[e->klen++] =
							grow[harness_rand64(rnd) % sizeof(grow)];
					break;
				}
			case 3:
				e->klen = 1 + harness_rand64(rnd) % 6;
				for (j = 0; j < e->klen; j++)
					e->key[j] = bytes[harness_rand64(rnd) % sizeof(bytes)];
				break;
			default:
				memset(e->key, 'p', 150);
				e->key[150] = '/';
				e->klen = 152 + harness_rand64(rnd) % 99;
				for (j = 151; j < e->klen; j++)
					e->key[j] = bytes[harness_rand64(rnd) % sizeof(bytes)];
				break;
		}
	}
	sort_and_fill(es, n, true, block_bytes);
}

/* Releases the entries and their keys and values. */
static void
entries_free(entries *es)
{
	size_t		i;

	for (i = 0; i < es->n; i++)
	{
		free(es->e[i].key);
		free(es->e[i].val);
	}
	free(es->e);
	es->e = NULL;
	es->n = 0;
}

/* ---------------------------------------------------------------------- */
/* Blocks. */

/* Builds a block of es at restart interval into b (finished). */
static void
build_block(lsm_block_builder *b, const entries *es, int interval)
{
	size_t		i;

	lsm_block_builder_init(b, interval);
	for (i = 0; i < es->n; i++)
		CHECK_OK(lsm_block_add(b, es->e[i].key, es->e[i].klen, es->e[i].val,
							   es->e[i].vlen));
	CHECK_EQ_U(b->entries, es->n);
	{
		size_t		est = lsm_block_estimate(b);

		CHECK_OK(lsm_block_finish(b));
		CHECK_EQ_U(b->buf.len, est);
	}
}

/* Checks the cursor is on entry i of es (or invalid if i == es->n). */
static void
check_cursor(const lsm_block_iter *it, const entries *es, size_t i)
{
	CHECK(!it->corrupt);
	if (i >= es->n)
	{
		CHECK(!it->valid);
		return;
	}
	CHECK_MSG(it->valid, "cursor invalid, expected entry %zu of %zu", i, es->n);
	CHECK_MEMEQ(it->key.data, it->key.len, es->e[i].key, es->e[i].klen);
	CHECK_MEMEQ(it->val, it->vlen, es->e[i].val, es->e[i].vlen);
}

/*
 * Every entry through first/next, every key and the gaps between keys
 * through seek, every restart through seek_restart, at several restart
 * intervals.
 */
TEST(block_roundtrip)
{
	static const int intervals[] = {1, 2, 3, 16, 1000};
	uint64_t	rnd = harness_seed();
	entries		es;
	size_t		iv;

	make_entries(&es, 3000, false, 0, &rnd);
	for (iv = 0; iv < sizeof(intervals) / sizeof(intervals[0]); iv++)
	{
		int			interval = intervals[iv];
		lsm_block_builder b;
		lsm_block_iter it;
		size_t		i;
		uint32_t	r;
		uint32_t	nr;

		build_block(&b, &es, interval);
		CHECK(lsm_block_iter_init(&it, b.buf.data, b.buf.len));
		nr = (uint32_t) ((es.n + interval - 1) / interval);
		CHECK_EQ(it.num_restarts, nr);
		CHECK(!it.valid);

		/* scan */
		lsm_block_iter_first(&it);
		for (i = 0; i < es.n; i++)
		{
			check_cursor(&it, &es, i);
			CHECK_EQ(it.restart_idx, i / interval);
			lsm_block_iter_next(&it);
		}
		check_cursor(&it, &es, es.n);

		/* seek to every key, and just past it (key + NUL) */
		for (i = 0; i < es.n; i++)
		{
			uint8_t		probe[401];
			size_t		plen = es.e[i].klen;

			lsm_block_iter_seek(&it, es.e[i].key, es.e[i].klen);
			check_cursor(&it, &es, i);
			memcpy(probe, es.e[i].key, plen);
			probe[plen++] = 0;
			/* key + NUL is the least key above key: the next entry or it */
			lsm_block_iter_seek(&it, probe, plen);
			check_cursor(&it, &es, i + 1);
			/* and just before it: the key less its last byte, if shorter */
			if (es.e[i].klen > 1)
			{
				size_t		j = i;

				plen = es.e[i].klen - 1;
				while (j > 0 && lsm_key_cmp(es.e[j - 1].key, es.e[j - 1].klen,
											es.e[i].key, plen) >= 0)
					j--;
				lsm_block_iter_seek(&it, es.e[i].key, plen);
				check_cursor(&it, &es, j);
			}
		}
		/* before everything, after everything */
		lsm_block_iter_seek(&it, (const uint8_t *) "", 0);
		check_cursor(&it, &es, 0);
		{
			uint8_t		hi[420];

			memset(hi, 0xff, sizeof(hi));
			lsm_block_iter_seek(&it, hi, sizeof(hi));
			check_cursor(&it, &es, es.n);
		}

		/*
		 * seek_offset: every byte of entry i names entry i, whether the
		 * cursor starts unpositioned, on an earlier entry or past it
		 */
		{
			size_t	   *off = malloc(sizeof(size_t) * (es.n + 1));

			CHECK(off != NULL);
			lsm_block_iter_first(&it);
			for (i = 0; i < es.n; i++)
			{
				off[i] = it.off;
				lsm_block_iter_next(&it);
			}
			off[es.n] = it.data_len;
			for (i = 0; i < es.n; i++)
			{
				size_t		at[3] = {off[i], (off[i] + off[i + 1]) / 2,
				off[i + 1] - 1};
				int			a;

				for (a = 0; a < 3; a++)
				{
					lsm_block_iter_free(&it);
					CHECK(lsm_block_iter_init(&it, b.buf.data, b.buf.len));
					lsm_block_iter_seek_offset(&it, at[a]);
					check_cursor(&it, &es, i);
					lsm_block_iter_seek_restart(&it, 0);	/* earlier */
					lsm_block_iter_seek_offset(&it, at[a]);
					check_cursor(&it, &es, i);
					lsm_block_iter_seek_offset(&it, at[a]);	/* in place */
					check_cursor(&it, &es, i);
				}
				if (i > 0)		/* back from entry i to entry i - 1 */
				{
					lsm_block_iter_seek_offset(&it, off[i - 1]);
					check_cursor(&it, &es, i - 1);
				}
			}
			free(off);
		}

		/* every restart holds a whole key: entry r * interval */
		for (r = 0; r < nr; r++)
		{
			const uint8_t *p = b.buf.data + lsm_get_u32(it.restarts + 4 * r);

			CHECK_EQ(p[0], 0);	/* shared = 0 */
			lsm_block_iter_seek_restart(&it, r);
			check_cursor(&it, &es, (size_t) r * interval);
			CHECK_EQ(it.restart_idx, r);
		}
		lsm_block_iter_free(&it);
		lsm_block_builder_free(&b);
	}
	entries_free(&es);
}

/* Prefix compression: keys with long shared prefixes take little room. */
TEST(block_prefix_compression)
{
	lsm_block_builder b;
	lsm_block_iter it;
	char		key[128];
	size_t		raw = 0;
	int			i;

	lsm_block_builder_init(&b, 16);
	for (i = 0; i < 1000; i++)
	{
		int			klen = snprintf(key, sizeof(key),
									"a-rather-long-common-prefix/%06d", i);

		raw += (size_t) klen;
		CHECK_OK(lsm_block_add(&b, key, (size_t) klen, "", 0));
	}
	CHECK_OK(lsm_block_finish(&b));
	/* about 4 bytes of suffix + 3 of lengths per entry, whole keys at restarts */
	CHECK_LT(b.buf.len, raw / 3);
	CHECK(lsm_block_iter_init(&it, b.buf.data, b.buf.len));
	CHECK_EQ(it.num_restarts, (1000 + 15) / 16);
	for (i = 0, lsm_block_iter_first(&it); i < 1000; i++, lsm_block_iter_next(&it))
	{
		int			klen = snprintf(key, sizeof(key),
									"a-rather-long-common-prefix/%06d", i);

		CHECK(it.valid);
		CHECK_MEMEQ(it.key.data, it.key.len, key, (size_t) klen);
		CHECK_EQ_U(it.vlen, 0);
	}
	CHECK(!it.valid);
	CHECK(!it.corrupt);
	lsm_block_iter_free(&it);

	/* reset and reuse: the new block starts afresh */
	lsm_block_builder_reset(&b);
	CHECK_OK(lsm_block_add(&b, "\xff\xff", 2, "v", 1));
	CHECK_OK(lsm_block_add(&b, "\xff\xff\x00", 3, "", 0));
	CHECK_OK(lsm_block_add(&b, "\xff\xff\xff", 3, "w", 1));
	CHECK_OK(lsm_block_finish(&b));
	CHECK(lsm_block_iter_init(&it, b.buf.data, b.buf.len));
	lsm_block_iter_first(&it);
	CHECK_MEMEQ(it.key.data, it.key.len, "\xff\xff", 2);
	CHECK_MEMEQ(it.val, it.vlen, "v", 1);
	lsm_block_iter_next(&it);
	CHECK_MEMEQ(it.key.data, it.key.len, "\xff\xff\x00", 3);
	CHECK_EQ_U(it.vlen, 0);
	lsm_block_iter_next(&it);
	CHECK_MEMEQ(it.key.data, it.key.len, "\xff\xff\xff", 3);
	lsm_block_iter_next(&it);
	CHECK(!it.valid);
	lsm_block_iter_seek(&it, (const uint8_t *) "\xff\xff\x00\x00", 4);
	CHECK(it.valid);
	CHECK_MEMEQ(it.key.data, it.key.len, "\xff\xff\xff", 3);
	lsm_block_iter_free(&it);
	lsm_block_builder_free(&b);
}

/*
 * Malformed blocks: init refuses bad restart arrays; truncated or
 * scribbled entries make the cursor invalid (often flagged corrupt), never
 * read outside the block.  The block is copied into an exact-size
 * allocation so ASan sees any overrun.
 */
TEST(block_malformed)
{
	uint64_t	rnd = harness_seed() ^ 0x5a5a;
	lsm_block_builder b;
	lsm_block_iter it;
	entries		es;
	uint8_t		tiny[12];
	size_t		cut;
	int			round;

	/* restart arrays */
	CHECK(!lsm_block_iter_init(&it, tiny, 0));
	CHECK(!lsm_block_iter_init(&it, tiny, 3));
	lsm_put_u32(tiny, 0);
	CHECK(!lsm_block_iter_init(&it, tiny, 4));	/* no restarts */
	lsm_put_u32(tiny + 4, 2);
	CHECK(!lsm_block_iter_init(&it, tiny, 8));	/* 2 restarts in 8 bytes */
	lsm_put_u32(tiny + 8, UINT32_MAX);
	CHECK(!lsm_block_iter_init(&it, tiny, 12));

	make_entries(&es, 200, false, 0, &rnd);
	build_block(&b, &es, 4);

	/* every truncation of the entries area, restart array kept intact */
	for (cut = 0; cut < b.buf.len; cut += 1 + cut / 64)
	{
		size_t		nr = lsm_get_u32(b.buf.data + b.buf.len - 4);
		size_t		rlen = nr * 4 + 4;
		size_t		dlen = b.buf.len - rlen;
		size_t		keep = cut < dlen ? cut : dlen;
		uint8_t    *p = malloc(keep + rlen);
		size_t		i;

		CHECK(p != NULL);
		memcpy(p, b.buf.data, keep);
		memcpy(p + keep, b.buf.data + dlen, rlen);
		if (lsm_block_iter_init(&it, p, keep + rlen))
		{
			for (lsm_block_iter_first(&it), i = 0; it.valid && i < es.n + 1;
				 lsm_block_iter_next(&it))
				i++;
			CHECK_LE(i, es.n);
			for (i = 0; i < es.n; i += 7)
				lsm_block_iter_seek(&it, es.e[i].key, es.e[i].klen);
			lsm_block_iter_free(&it);
		}
		free(p);
	}

	/* random byte scribbles */
	for (round = 0; round < 2000; round++)
	{
		uint8_t    *p = malloc(b.buf.len);
		size_t		i;
		int			flips = 1 + (int) (harness_rand64(&rnd) % 4);

		CHECK(p != NULL);
		memcpy(p, b.buf.data, b.buf.len);
		while (flips-- > 0)
		{
			size_t		at = harness_rand64(&rnd) % b.buf.len;

			p[at] ^= (uint8_t) (1 + harness_rand64(&rnd) % 255);
		}
		if (lsm_block_iter_init(&it, p, b.buf.len))
		{
			for (lsm_block_iter_first(&it), i = 0; it.valid && i < 10 * es.n;
				 lsm_block_iter_next(&it))
				i++;
			for (i = 0; i < es.n; i += 13)
				lsm_block_iter_seek(&it, es.e[i].key, es.e[i].klen);
			if (it.num_restarts > 0 && it.num_restarts < 1000)
				lsm_block_iter_seek_restart(&it, it.num_restarts - 1);
			lsm_block_iter_free(&it);
		}
		free(p);
	}
	lsm_block_builder_free(&b);
	entries_free(&es);
}

/* ---------------------------------------------------------------------- */
/* Tables. */

/* Returns the path of table number in dir (caller frees). */
static char *
table_path(const char *dir, uint64_t number)
{
	char		name[32];

	lsm_dir_name(LSM_F_TABLE, number, name, sizeof(name));
	return harness_path(dir, name);
}

/*
 * Writes the entries es[0..n) as table number in dir; fills *meta and
 * checks it against the entries.
 */
static void
write_table(const char *dir, uint64_t number, const entry *es, size_t n,
			int block_bytes, int bits_per_key, lsm_table_meta *meta)
{
	char	   *path = table_path(dir, number);
	lsm_table_builder *b;
	lsm_err		e;
	size_t		i;
	uint64_t	dels = 0,
				minseq = UINT64_MAX,
				maxseq = 0;
	uint64_t	prev_size = 0;

	lsm_err_clear(&e);
	CHECK_OK(lsm_table_builder_open(path, number, block_bytes, bits_per_key,
									&b, &e));
	for (i = 0; i < n; i++)
	{
		CHECK_OK(lsm_table_builder_add(b, es[i].key, es[i].klen, es[i].seq,
									   es[i].del, es[i].val, es[i].vlen, &e));
		CHECK_EQ_U(lsm_table_builder_entries(b), i + 1);
		CHECK_GE(lsm_table_builder_size(b), prev_size);
		prev_size = lsm_table_builder_size(b);
		dels += es[i].del ? 1 : 0;
		if (es[i].seq < minseq)
			minseq = es[i].seq;
		if (es[i].seq > maxseq)
			maxseq = es[i].seq;
	}
	CHECK_OK(lsm_table_builder_finish(b, meta, &e));
	CHECK_EQ_U(meta->number, number);
	CHECK_EQ_U(meta->entries, n);
	CHECK_EQ_U(meta->deletions, dels);
	CHECK_EQ_U(meta->min_seq, n ? minseq : 0);
	CHECK_EQ_U(meta->max_seq, maxseq);
	CHECK_EQ_U(meta->size, (uint64_t) harness_file_size(path));
	CHECK_EQ_U(meta->filter_bytes, lsm_bloom_size(n, bits_per_key));
	if (n > 0)
	{
		CHECK_MEMEQ(meta->smallest, meta->smallest_len, es[0].key, es[0].klen);
		CHECK_MEMEQ(meta->largest, meta->largest_len, es[n - 1].key,
					es[n - 1].klen);
	}
	free(path);
}

/* Checks a table hit against an entry. */
static void
check_hit(const lsm_table_hit *hit, const entry *e)
{
	CHECK_EQ_U(hit->seq, e->seq);
	CHECK_EQ(hit->del, e->del);
	CHECK_MEMEQ(hit->val, hit->vlen, e->val, e->vlen);
}

/* Checks the internal iterator is on es[i] (or done when i == n). */
static void
check_iter(const lsm_iiter *it, const entry *es, size_t n, size_t i)
{
	CHECK_EQ(it->rc, LSM_OK);
	if (i >= n)
	{
		CHECK(!it->valid);
		return;
	}
	CHECK_MSG(it->valid, "iterator invalid, expected entry %zu of %zu", i, n);
	CHECK_MEMEQ(it->key, it->klen, es[i].key, es[i].klen);
	CHECK_EQ_U(it->seq, es[i].seq);
	CHECK_EQ(it->del, es[i].del);
	CHECK_MEMEQ(it->val, it->vlen, es[i].val, es[i].vlen);
}

static void check_backwards(lsm_iiter *it, const entry *es, size_t n,
							uint64_t *rnd);

/*
 * Reads table number of dir back and checks everything against es[0..n):
 * gets, absent keys, a full scan, seeks, backwards (check_backwards), the
 * filter, verify.
 */
static void
check_table(const char *dir, uint64_t number, const entry *es, size_t n,
			int bits_per_key, const lsm_table_meta *meta)
{
	lsm_table  *t;
	lsm_iiter  *it;
	lsm_table_hit hit;
	lsm_err		e;
	uint64_t	counted,
				walk;
	size_t		i;
	size_t		absent = 0,
				rejected = 0;

	lsm_err_clear(&e);
	CHECK_OK(lsm_table_open(dir, number, 0, &t, &e));
	CHECK_OK(lsm_table_status(t, &e));
	CHECK_EQ_U(lsm_table_number(t), number);
	CHECK_EQ_U(lsm_table_size(t), meta->size);
	CHECK_EQ(lsm_table_has_filter(t), bits_per_key > 0);
	CHECK_EQ_U(lsm_table_filter_bytes(t), meta->filter_bytes);

	/* every key, through the filter and the index */
	for (i = 0; i < n; i++)
	{
		uint64_t	h = lsm_key_hash(es[i].key, es[i].klen);

		CHECK_MSG(lsm_table_may_contain(t, h), "filter misses key %zu", i);
		CHECK_OK(lsm_table_get(t, es[i].key, es[i].klen, &hit, &e));
		check_hit(&hit, &es[i]);
	}

	/* absent keys: before the first, between neighbours, after the last */
	for (i = 0; i <= n; i++)
	{
		uint8_t		probe[512];
		size_t		plen;

		if (i == 0)
			plen = 0;			/* the empty key sorts before every key */
		else
		{
			plen = es[i - 1].klen;
			memcpy(probe, es[i - 1].key, plen);
			probe[plen++] = 0;	/* just after es[i - 1] */
			if (i < n && lsm_key_cmp(probe, plen, es[i].key, es[i].klen) == 0)
				continue;		/* nothing lies in between */
		}
		CHECK_RC(LSM_NOTFOUND, lsm_table_get(t, probe, plen, &hit, &e));
		absent++;
		if (!lsm_table_may_contain(t, lsm_key_hash(probe, plen)))
			rejected++;
	}
	{
		uint8_t		hi[600];

		memset(hi, 0xff, sizeof(hi));
		CHECK_RC(LSM_NOTFOUND, lsm_table_get(t, hi, sizeof(hi), &hit, &e));
	}
	if (bits_per_key == 0)
		CHECK_EQ(rejected, 0);
	else if (bits_per_key >= 10 && absent >= 1000)
		CHECK_MSG(rejected * 100 >= absent * 90,
				  "filter rejected only %zu of %zu absent keys", rejected,
				  absent);

	/* full scan */
	lsm_err_clear(&e);
	it = lsm_table_iter(t, &e);
	CHECK(it != NULL);
	lsm_iiter_seek(it, NULL, 0);
	for (i = 0; i < n; i++)
	{
		check_iter(it, es, n, i);
		lsm_iiter_next(it);
	}
	check_iter(it, es, n, n);

	/* seek to every key, just after it, and just before it */
	for (i = 0; i < n; i++)
	{
		uint8_t		probe[512];
		size_t		plen = es[i].klen;

		lsm_iiter_seek(it, es[i].key, es[i].klen);
		check_iter(it, es, n, i);
		memcpy(probe, es[i].key, plen);
		probe[plen++] = 0;
		lsm_iiter_seek(it, probe, plen);
		check_iter(it, es, n, i + 1);
		if (i + 1 < n)
		{
			lsm_iiter_next(it);
			check_iter(it, es, n, i + 2);
		}
		if (es[i].klen > 1)
		{
			size_t		j = i;

			plen = es[i].klen - 1;
			while (j > 0 && lsm_key_cmp(es[j - 1].key, es[j - 1].klen,
										es[i].key, plen) >= 0)
				j--;
			lsm_iiter_seek(it, es[i].key, plen);
			check_iter(it, es, n, j);
		}
	}
	lsm_iiter_seek(it, (const uint8_t *) "", 0);
	check_iter(it, es, n, 0);
	{
		uint8_t		hi[600];

		memset(hi, 0xff, sizeof(hi));
		lsm_iiter_seek(it, hi, sizeof(hi));
		check_iter(it, es, n, n);
	}

	/* backwards, and both ways in turn */
	walk = harness_seed() ^ number;
	check_backwards(it, es, n, &walk);
	lsm_iiter_destroy(it);

	/* verify: passes with the true bounds, fails with wrong ones */
	lsm_err_clear(&e);
	CHECK_OK(lsm_table_verify(t, meta->smallest, meta->smallest_len,
							  meta->largest, meta->largest_len, &counted, &e));
	CHECK_EQ_U(counted, n);
	if (n > 0)
	{
		CHECK_RC(LSM_CORRUPTION,
				 lsm_table_verify(t, (const uint8_t *) "", 0, meta->largest,
								  meta->largest_len, &counted, &e));
		CHECK_RC(LSM_CORRUPTION,
				 lsm_table_verify(t, meta->smallest, meta->smallest_len,
								  (const uint8_t *) "\xff\xff\xff", 3,
								  &counted, &e));
		/* verify did not disturb reads */
		CHECK_OK(lsm_table_get(t, es[0].key, es[0].klen, &hit, &e));
		check_hit(&hit, &es[0]);
	}
	lsm_table_unref(t);
}

/*
 * Tables of a few thousand entries, small and default-sized blocks, with
 * and without a key filter, large values spanning several blocks.
 */
TEST(table_roundtrip)
{
	static const int block_sizes[] = {256, 1024, 4096};
	static const int bits[] = {10, 0, 3};
	uint64_t	rnd = harness_seed() ^ 0x1234;
	char	   *dir = harness_tmpdir("sst");
	uint64_t	number = 1;
	size_t		bi;
	size_t		fi;

	for (bi = 0; bi < sizeof(block_sizes) / sizeof(block_sizes[0]); bi++)
		for (fi = 0; fi < sizeof(bits) / sizeof(bits[0]); fi++)
		{
			entries		es;
			lsm_table_meta meta;

			make_entries(&es, 10000, true, (size_t) block_sizes[bi], &rnd);
			write_table(dir, number, es.e, es.n, block_sizes[bi], bits[fi],
						&meta);
			check_table(dir, number, es.e, es.n, bits[fi], &meta);
			lsm_table_meta_free(&meta);
			entries_free(&es);
			number++;
		}
}

/* Tables of one key: a put, a tombstone, an empty value, a huge value. */
TEST(table_one_key)
{
	char	   *dir = harness_tmpdir("sst1");
	uint8_t    *huge = malloc(300000);
	entry		one[4];
	int			i;

	CHECK(huge != NULL);
	fill_bytes(huge, 300000, 42);
	memset(one, 0, sizeof(one));
	one[0].key = (uint8_t *) "k";
	one[0].klen = 1;
	one[0].val = (uint8_t *) "value";
	one[0].vlen = 5;
	one[0].seq = 1;
	one[1].key = (uint8_t *) "\0";
	one[1].klen = 1;
	one[1].val = (uint8_t *) "";
	one[1].seq = UINT64_C(0x3fffffffffffffff);
	one[1].del = 1;
	one[2].key = (uint8_t *) "\xff\x00\xff";
	one[2].klen = 3;
	one[2].val = (uint8_t *) "";
	one[2].seq = 77;
	one[3].key = (uint8_t *) "huge";
	one[3].klen = 4;
	one[3].val = huge;
	one[3].vlen = 300000;
	one[3].seq = 5;
	for (i = 0; i < 4; i++)
	{
		lsm_table_meta meta;
		int			bits = i % 2 ? 0 : 10;

		write_table(dir, (uint64_t) i + 10, &one[i], 1, 4096, bits, &meta);
		if (bits)
			CHECK_EQ_U(meta.filter_bytes, LSM_BLOOM_LINE + LSM_BLOOM_TRAILER);
		check_table(dir, (uint64_t) i + 10, &one[i], 1, bits, &meta);
		lsm_table_meta_free(&meta);
	}
	free(huge);
}

/*
 * The filter's lines start on a 64-byte boundary of the file (so a probe
 * touches one cache line of the mapping), and the file ends in the footer
 * magic.
 */
TEST(table_layout)
{
	uint64_t	rnd = harness_seed() ^ 0x77;
	char	   *dir = harness_tmpdir("sstl");
	char	   *path;
	entries		es;
	lsm_table_meta meta;
	uint8_t		footer[LSM_SST_FOOTER];
	int			fd;
	uint64_t	foff;
	uint32_t	fsize;
	lsm_err		e;

	make_entries(&es, 1000, false, 0, &rnd);
	write_table(dir, 3, es.e, es.n, 333, 10, &meta);
	path = table_path(dir, 3);
	lsm_err_clear(&e);
	CHECK_OK(lsm_env_open(path, O_RDONLY, 0, &fd, &e));
	CHECK_OK(lsm_env_pread(fd, footer, sizeof(footer),
						   (off_t) meta.size - LSM_SST_FOOTER, "footer", &e));
	lsm_env_close(fd);
	CHECK_EQ_U(lsm_get_u64(footer + 56), LSM_SST_MAGIC);
	CHECK_EQ_U(lsm_get_u32(footer + 48), LSM_SST_FORMAT);
	foff = lsm_get_u64(footer + 12);
	fsize = lsm_get_u32(footer + 20);
	CHECK_EQ_U(fsize, meta.filter_bytes);
	CHECK_EQ_U(foff % 64, 0);
	CHECK_GT(foff, 0);
	/* no value filter in format 1 */
	CHECK_EQ_U(lsm_get_u64(footer + 24), 0);
	CHECK_EQ_U(lsm_get_u32(footer + 32), 0);
	lsm_table_meta_free(&meta);
	entries_free(&es);
	free(path);
}

/*
 * Reads every way a table whose damage passed the checksums: lsm_table_open
 * succeeds (a damaged table never stops a store from opening), and every
 * read that needs the damaged part ends in LSM_CORRUPTION (never a crash
 * or a wild read: ASan watches).
 */
static void
check_damaged_table(const char *dir, uint64_t number, const entry *es,
					size_t n, const lsm_table_meta *meta)
{
	lsm_table  *t;
	lsm_iiter  *it;
	lsm_table_hit hit;
	lsm_err		e;
	uint64_t	got;
	size_t		i;
	int			rc,
				bad = 0;

	lsm_err_clear(&e);
	CHECK_OK(lsm_table_open(dir, number, 0, &t, &e));
	for (i = 0; i < n; i++)
	{
		rc = lsm_table_get(t, es[i].key, es[i].klen, &hit, &e);
		CHECK_MSG(rc == LSM_OK || rc == LSM_CORRUPTION,
				  "get of entry %zu returned %s", i, lsm_strerror(rc));
		bad += rc == LSM_CORRUPTION;
	}
	CHECK_GT(bad, 0);
	it = lsm_table_iter(t, &e);
	CHECK(it != NULL);
	for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
		;
	CHECK_RC(LSM_CORRUPTION, it->rc);
	for (lsm_iiter_seek_back(it, NULL, 0); it->valid; lsm_iiter_prev(it))
		;
	lsm_iiter_destroy(it);
	CHECK_RC(LSM_CORRUPTION,
			 lsm_table_verify(t, meta->smallest, meta->smallest_len,
							  meta->largest, meta->largest_len, &got, &e));
	CHECK_MSG(strstr(e.msg, "out of range") != NULL, "%s", e.msg);
	lsm_table_unref(t);
}

/*
 * Damage that passes every checksum (issue 11): a data block handle whose
 * size is near 2^64 (size + 4 wrapped, and the block was read from
 * wherever that led), and a footer whose key filter offset, with no key
 * filter, became the end of the data blocks unchecked (so a data block
 * handle far past the file was followed).
 */
TEST(table_damaged_handles)
{
	uint64_t	rnd = harness_seed() ^ 0x4242;
	char	   *dir = harness_tmpdir("sstd");
	char	   *path;
	entries		es;
	lsm_table_meta meta;

	make_entries(&es, 2000, false, 0, &rnd);

	write_table(dir, 1, es.e, es.n, 512, 10, &meta);
	path = table_path(dir, 1);
	CHECK_EQ(forge_table_handle(path, 1, 0, UINT64_MAX - 3), 0);
	check_damaged_table(dir, 1, es.e, es.n, &meta);
	lsm_table_meta_free(&meta);
	free(path);

	write_table(dir, 2, es.e, es.n, 512, 10, &meta);
	path = table_path(dir, 2);
	CHECK_EQ(forge_table_handle(path, 1, UINT64_C(1) << 32, 64), 0);
	CHECK_EQ(forge_table_footer(path, 20, 0, false), 0);
	CHECK_EQ(forge_table_footer(path, 12, UINT64_C(1) << 40, true), 0);
	check_damaged_table(dir, 2, es.e, es.n, &meta);
	lsm_table_meta_free(&meta);
	free(path);

	entries_free(&es);
}

/*
 * Keys out of order (what a compaction reads from a damaged table) are
 * refused with LSM_CORRUPTION, adding nothing: it was an assertion, which
 * aborted a debug build and let a production build write an unsorted
 * table.
 */
TEST(builder_refuses_unsorted_keys)
{
	char	   *dir = harness_tmpdir("ssto");
	char	   *path = table_path(dir, 9);
	lsm_table_builder *b;
	lsm_table_meta meta;
	lsm_table  *t;
	lsm_table_hit hit;
	lsm_err		e;
	uint64_t	n;

	lsm_err_clear(&e);
	CHECK_OK(lsm_table_builder_open(path, 9, 4096, 10, &b, &e));
	CHECK_OK(lsm_table_builder_add(b, "b", 1, 1, 0, "1", 1, &e));
	CHECK_RC(LSM_CORRUPTION, lsm_table_builder_add(b, "a", 1, 2, 0, "2", 1, &e));
	CHECK(strstr(e.msg, "out of order") != NULL);
	CHECK_RC(LSM_CORRUPTION, lsm_table_builder_add(b, "b", 1, 3, 0, "3", 1, &e));
	CHECK_EQ_U(lsm_table_builder_entries(b), 1);
	CHECK_OK(lsm_table_builder_add(b, "c", 1, 4, 0, "4", 1, &e));
	CHECK_OK(lsm_table_builder_finish(b, &meta, &e));
	CHECK_OK(lsm_table_open(dir, 9, 0, &t, &e));
	CHECK_OK(lsm_table_verify(t, (const uint8_t *) "b", 1,
							  (const uint8_t *) "c", 1, &n, &e));
	CHECK_EQ_U(n, 2);
	CHECK_OK(lsm_table_get(t, "b", 1, &hit, &e));
	CHECK_MEMEQ(hit.val, hit.vlen, "1", 1);
	CHECK_RC(LSM_NOTFOUND, lsm_table_get(t, "a", 1, &hit, &e));
	lsm_table_unref(t);
	lsm_table_meta_free(&meta);
	free(path);
}

/* The builder creates its file with O_EXCL, and abandon removes it. */
TEST(builder_exclusive_and_abandon)
{
	char	   *dir = harness_tmpdir("sstx");
	char	   *path = table_path(dir, 7);
	lsm_table_builder *b;
	lsm_table_builder *b2;
	lsm_table_meta meta;
	lsm_table  *t;
	lsm_table_hit hit;
	lsm_err		e;
	int			i;

	lsm_err_clear(&e);
	CHECK_OK(lsm_table_builder_open(path, 7, 4096, 10, &b, &e));
	CHECK_EQ(harness_file_size(path), 0);

	/* a second builder on the same path: LSM_EXISTS, first file intact */
	b2 = (lsm_table_builder *) 1;
	CHECK_RC(LSM_EXISTS, lsm_table_builder_open(path, 7, 4096, 10, &b2, &e));
	CHECK(b2 == NULL);
	CHECK_EQ(e.rc, LSM_EXISTS);

	for (i = 0; i < 5000; i++)
	{
		char		key[16];
		int			klen = snprintf(key, sizeof(key), "k%06d", i);

		CHECK_OK(lsm_table_builder_add(b, key, (size_t) klen, (uint64_t) i + 1,
									   0, key, (size_t) klen, &e));
	}
	/* abandoned mid-way (some of it already written): the file is gone */
	lsm_table_builder_abandon(b);
	CHECK_EQ(harness_file_size(path), -1);
	lsm_table_builder_abandon(NULL);

	/* the number is free again; a finished table is not overwritten */
	CHECK_OK(lsm_table_builder_open(path, 7, 4096, 10, &b, &e));
	CHECK_OK(lsm_table_builder_add(b, "a", 1, 1, 0, "1", 1, &e));
	CHECK_OK(lsm_table_builder_finish(b, &meta, &e));
	CHECK_RC(LSM_EXISTS, lsm_table_builder_open(path, 7, 4096, 10, &b2, &e));
	CHECK_EQ(harness_file_size(path), (long long) meta.size);
	CHECK_OK(lsm_table_open(dir, 7, 0, &t, &e));
	CHECK_OK(lsm_table_get(t, "a", 1, &hit, &e));
	CHECK_MEMEQ(hit.val, hit.vlen, "1", 1);
	lsm_table_unref(t);
	lsm_table_meta_free(&meta);

	/* a missing table is LSM_NOTFOUND (a reader racing a compaction) */
	t = (lsm_table *) 1;
	CHECK_RC(LSM_NOTFOUND, lsm_table_open(dir, 8, 0, &t, &e));
	CHECK(t == NULL);
	free(path);
}

/*
 * A builder finished with no entries refuses to write a table (flush and
 * compaction never produce one): LSM_INVALID, and no file is left behind.
 */
TEST(table_empty)
{
	char	   *dir = harness_tmpdir("sst0");
	char	   *path = table_path(dir, 9);
	lsm_table_builder *b;
	lsm_table_meta meta;
	lsm_table  *t;
	lsm_err		e;

	lsm_err_clear(&e);
	CHECK_OK(lsm_table_builder_open(path, 9, 4096, 10, &b, &e));
	CHECK_RC(LSM_INVALID, lsm_table_builder_finish(b, &meta, &e));
	CHECK(e.msg[0] != '\0');
	CHECK(access(path, F_OK) != 0);
	CHECK_RC(LSM_NOTFOUND, lsm_table_open(dir, 9, 0, &t, &e));
	free(path);
}

/*
 * Table references: an iterator keeps the table (and its mapping) alive
 * after the opener lets go.
 */
TEST(table_refcount)
{
	uint64_t	rnd = harness_seed() ^ 0x99;
	char	   *dir = harness_tmpdir("sstr");
	entries		es;
	lsm_table_meta meta;
	lsm_table  *t;
	lsm_iiter  *it;
	lsm_err		e;
	size_t		i;

	make_entries(&es, 2000, false, 0, &rnd);
	write_table(dir, 4, es.e, es.n, 512, 10, &meta);
	lsm_err_clear(&e);
	CHECK_OK(lsm_table_open(dir, 4, 0, &t, &e));
	it = lsm_table_iter(t, &e);
	CHECK(it != NULL);
	lsm_table_unref(t);
	/* the file may go too: the mapping keeps it readable */
	{
		char	   *path = table_path(dir, 4);

		CHECK_EQ(unlink(path), 0);
		free(path);
	}
	lsm_iiter_seek(it, NULL, 0);
	for (i = 0; i < es.n; i++)
	{
		check_iter(it, es.e, es.n, i);
		lsm_iiter_next(it);
	}
	check_iter(it, es.e, es.n, es.n);
	lsm_iiter_destroy(it);
	lsm_table_meta_free(&meta);
	entries_free(&es);
}

/* Counts block-scan entries and checks their sequence is *(uint64_t *) arg. */
static int
check_scan_seq(void *arg, const uint8_t *key, size_t klen, uint64_t seq,
			   int del, const uint8_t *row, size_t rowlen)
{
	uint64_t   *want = arg;

	(void) key;
	(void) klen;
	(void) del;
	(void) row;
	(void) rowlen;
	CHECK_EQ_U(seq, want[0]);
	want[1]++;
	return LSM_OK;
}

/*
 * A table opened with a global sequence (an ingested table) reads every
 * entry with that sequence: gets, iterators (both ways) and block scans;
 * everything else is as stored, and the same file opened without one
 * reads the stored sequences.
 */
TEST(table_global_seq)
{
	uint64_t	rnd = harness_seed() ^ 0x6e9;
	char	   *dir = harness_tmpdir("sstg");
	entries		es;
	lsm_table_meta meta;
	lsm_table  *t,
			   *plain;
	lsm_table_hit hit;
	lsm_iiter  *it;
	lsm_err		e;
	uint64_t	want[2];
	uint32_t	b;
	size_t		i;
	bool		skipped;

	make_entries(&es, 1500, false, 0, &rnd);
	write_table(dir, 6, es.e, es.n, 512, 10, &meta);
	lsm_err_clear(&e);
	CHECK_OK(lsm_table_open(dir, 6, 777, &t, &e));
	CHECK_OK(lsm_table_open(dir, 6, 0, &plain, &e));
	for (i = 0; i < es.n; i++)
	{
		CHECK_OK(lsm_table_get(t, es.e[i].key, es.e[i].klen, &hit, &e));
		CHECK_EQ_U(hit.seq, 777);
		CHECK_EQ(hit.del, es.e[i].del);
		CHECK_MEMEQ(hit.val, hit.vlen, es.e[i].val, es.e[i].vlen);
		CHECK_OK(lsm_table_get(plain, es.e[i].key, es.e[i].klen, &hit, &e));
		check_hit(&hit, &es.e[i]);
	}
	it = lsm_table_iter(t, &e);
	CHECK(it != NULL);
	for (lsm_iiter_seek(it, NULL, 0), i = 0; it->valid; lsm_iiter_next(it), i++)
	{
		CHECK_MEMEQ(it->key, it->klen, es.e[i].key, es.e[i].klen);
		CHECK_EQ_U(it->seq, 777);
	}
	CHECK_EQ_U(i, es.n);
	for (lsm_iiter_seek_back(it, NULL, 0), i = es.n; it->valid;
		 lsm_iiter_prev(it), i--)
	{
		CHECK(i > 0);
		CHECK_MEMEQ(it->key, it->klen, es.e[i - 1].key, es.e[i - 1].klen);
		CHECK_EQ_U(it->seq, 777);
	}
	CHECK_EQ_U(i, 0);
	lsm_iiter_destroy(it);
	want[0] = 777;
	want[1] = 0;
	for (b = 0; b < lsm_table_nblocks(t); b++)
		CHECK_OK(lsm_table_block_scan(t, b, NULL, 0, check_scan_seq, want,
									  &skipped, &e));
	CHECK_EQ_U(want[1], es.n);
	lsm_table_unref(t);
	lsm_table_unref(plain);
	lsm_table_meta_free(&meta);
	entries_free(&es);
}

/* What one block scan passed to its callback. */
typedef struct scan_seen
{
	size_t		n;
	char		keys[512][16];
	int			has_needle[512];	/* in the key or the value */
	int			val_has_needle[512];
} scan_seen;

static int
collect_entry(void *arg, const uint8_t *key, size_t klen, uint64_t seq,
			  int del, const uint8_t *row, size_t rowlen)
{
	scan_seen  *s = arg;

	(void) seq;
	(void) del;
	CHECK(s->n < 512 && klen < 16);
	memcpy(s->keys[s->n], key, klen);
	s->keys[s->n][klen] = '\0';
	s->val_has_needle[s->n] = rowlen > 0 &&
		memmem(row, rowlen, "NEEDLE", 6) != NULL;
	s->has_needle[s->n] = s->val_has_needle[s->n] ||
		memmem(key, klen, "NEEDLE", 6) != NULL;
	s->n++;
	return LSM_OK;
}

/*
 * lsm_table_block_scan with a needle passes, in order, only entries whose
 * key or value holds it, and every entry whose value holds it: in several
 * restart blocks of a block, twice in one value, in a key, almost (a
 * prefix of it) and not at all (the block is skipped).
 */
TEST(table_block_scan_needle)
{
	char	   *dir = harness_tmpdir("sstn");
	entry	   *es = calloc(2000, sizeof(entry));
	char		val[64];
	lsm_table_meta meta;
	lsm_table  *t;
	lsm_err		e;
	uint32_t	b,
				nblocks;
	size_t		i,
				total = 0,
				with_value = 0,
				skipped_blocks = 0;

	CHECK(es != NULL);
	for (i = 0; i < 2000; i++)
	{
		char		key[16];

		/* needle in some keys: k0110NEEDLE sorts among the others */
		snprintf(key, sizeof(key),
				 i % 53 == 0 && (i < 1000 || i >= 1300) ? "k%04zuNEEDLE" :
				 "k%04zu", i);
		if (i >= 1000 && i < 1300)
			snprintf(val, sizeof(val), "plain value %zu", i);	/* no needle */
		else if (i % 7 == 0)
			snprintf(val, sizeof(val), "v%zu NEEDLE and NEEDLE", i);
		else if (i % 5 == 0)
			snprintf(val, sizeof(val), "NEEDLE%zu", i);
		else
			snprintf(val, sizeof(val), "value %zu NEEDL", i);	/* almost */
		es[i].key = (uint8_t *) strdup(key);
		es[i].klen = strlen(key);
		es[i].val = (uint8_t *) strdup(val);
		es[i].vlen = strlen(val);
		es[i].seq = i + 1;
	}
	write_table(dir, 5, es, 2000, 1024, 10, &meta);
	lsm_err_clear(&e);
	CHECK_OK(lsm_table_open(dir, 5, 0, &t, &e));
	nblocks = lsm_table_nblocks(t);
	CHECK_GT(nblocks, 10);
	for (b = 0; b < nblocks; b++)
	{
		scan_seen  *all = calloc(1, sizeof(scan_seen)),
				   *hit = calloc(1, sizeof(scan_seen));
		bool		skipped;
		size_t		j,
					k = 0;

		CHECK(all != NULL && hit != NULL);
		CHECK_OK(lsm_table_block_scan(t, b, NULL, 0, collect_entry, all,
									  &skipped, &e));
		CHECK(!skipped);
		CHECK_OK(lsm_table_block_scan(t, b, "NEEDLE", 6, collect_entry, hit,
									  &skipped, &e));
		/*
		 * hit: in order, entries of the block whose key or value holds the
		 * needle, among them every entry whose value holds it
		 */
		for (j = 0; j < all->n; j++)
		{
			bool		passed = k < hit->n &&
				strcmp(hit->keys[k], all->keys[j]) == 0;

			CHECK_MSG(passed || !all->val_has_needle[j],
					  "block %u: the value of %s holds the needle but it was "
					  "not passed", b, all->keys[j]);
			if (!passed)
				continue;
			CHECK_MSG(all->has_needle[j], "block %u: %s passed without the "
					  "needle", b, all->keys[j]);
			k++;
			with_value += all->val_has_needle[j];
		}
		CHECK_EQ_U(k, hit->n);
		CHECK_EQ(skipped, hit->n == 0);
		skipped_blocks += skipped;
		total += all->n;
		free(all);
		free(hit);
	}
	CHECK_EQ_U(total, 2000);
	CHECK_GT(skipped_blocks, 0);	/* rows 1000..1299 have no needle */
	CHECK_GT(with_value, 500);
	lsm_table_unref(t);
	lsm_table_meta_free(&meta);
	for (i = 0; i < 2000; i++)
	{
		free(es[i].key);
		free(es[i].val);
	}
	free(es);
}

/* ---------------------------------------------------------------------- */
/* Backwards. */

/*
 * Number of entries of es[0..n) whose key is <= (key, klen), or all of
 * them if key is NULL: a seek back to key lands on entry count - 1, on
 * nothing if the count is 0.  A binary search of the sorted entries.
 */
static size_t
count_le(const entry *es, size_t n, const uint8_t *key, size_t klen)
{
	size_t		lo = 0,
				hi = n;

	if (key == NULL)
		return n;
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (lsm_key_cmp(es[mid].key, es[mid].klen, key, klen) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Number of entries of es[0..n) whose key is < (key, klen), 0 if key is
 * NULL: where a forward seek to key lands (nothing if the count is n).
 */
static size_t
count_lt(const entry *es, size_t n, const uint8_t *key, size_t klen)
{
	size_t		lo = 0,
				hi = n;

	if (key == NULL)
		return 0;
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (lsm_key_cmp(es[mid].key, es[mid].klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A seek target near a random entry of es[0..n), into buf (600 bytes):
 * the entry's key, the key and a NUL (the least key above it), the key
 * less its last byte, the key with its last byte one less or one more, the
 * empty key (before every key), 600 bytes of 0xFF (after every key), or a
 * few random bytes.  Returns its length.
 */
static size_t
probe_near(const entry *es, size_t n, uint64_t *rnd, uint8_t *buf)
{
	const entry *e = &es[harness_rand64(rnd) % n];
	size_t		len = e->klen,
				j;

	memcpy(buf, e->key, len);
	switch (harness_rand64(rnd) % 9)
	{
		case 0:
		case 1:
			break;
		case 2:
			buf[len++] = 0;
			break;
		case 3:
			if (len > 1)
				len--;
			break;
		case 4:
			if (buf[len - 1] > 0)
				buf[len - 1]--;
			break;
		case 5:
			if (buf[len - 1] < 0xff)
				buf[len - 1]++;
			break;
		case 6:
			len = 0;
			break;
		case 7:
			memset(buf, 0xff, 600);
			len = 600;
			break;
		default:
			len = 1 + harness_rand64(rnd) % 8;
			for (j = 0; j < len; j++)
				buf[j] = (uint8_t) harness_rand64(rnd);
			break;
	}
	return len;
}

/* The cursor is on entry pos of es, or invalid (not corrupt) outside es. */
static void
check_cursor_at(const lsm_block_iter *it, const entries *es, long pos)
{
	if (pos < 0 || (size_t) pos >= es->n)
	{
		CHECK(!it->corrupt);
		CHECK_MSG(!it->valid, "cursor valid, expected it past the %s",
				  pos < 0 ? "first entry" : "last entry");
		return;
	}
	check_cursor(it, es, (size_t) pos);
}

/*
 * Blocks backwards (lsm_block_iter_last and _prev): the whole block from
 * its last entry down to nothing, with the right restart_idx at every
 * entry; two steps back from every key; and random walks of seeks, first,
 * last, restarts and steps either way.  Each with and without the cache of
 * decoded entries (lsm_block_back), at restart intervals from 1 to past
 * the cache's capacity, so that a step back decodes from a restart point,
 * takes the cache's entry, or finds the cache full.  The keys hold NUL
 * and 0xFF bytes, are prefixes of one another and some outgrow the
 * cursor's inline key buffer.
 */
TEST(block_reverse)
{
	static const int intervals[] = {1, 2, 3, 16, LSM_BLOCK_BACK_MAX - 1,
	LSM_BLOCK_BACK_MAX, LSM_BLOCK_BACK_MAX + 1, 1000};
	uint64_t	rnd = harness_seed() ^ 0xb1ac;
	entries		es;
	size_t		iv;

	make_entries(&es, 3000, false, 0, &rnd);
	for (iv = 0; iv < sizeof(intervals) / sizeof(intervals[0]); iv++)
	{
		int			interval = intervals[iv];
		lsm_block_builder b;
		int			cached;

		build_block(&b, &es, interval);
		for (cached = 0; cached < 2; cached++)
		{
			lsm_block_iter it;
			lsm_block_back back;
			lsm_block_back *bp = cached ? &back : NULL;
			uint8_t		probe[600];
			size_t		plen,
						i;
			long		pos;
			int			step;

			memset(&back, 0, sizeof(back));
			CHECK(lsm_block_iter_init(&it, b.buf.data, b.buf.len));

			/* the whole block backwards */
			lsm_block_iter_last(&it);
			for (pos = (long) es.n - 1; pos >= 0; pos--)
			{
				check_cursor_at(&it, &es, pos);
				CHECK_EQ(it.restart_idx, pos / interval);
				lsm_block_iter_prev(&it, bp);
			}
			check_cursor_at(&it, &es, -1);

			/* two steps back from every key */
			for (i = 0; i < es.n; i++)
			{
				lsm_block_iter_seek(&it, es.e[i].key, es.e[i].klen);
				check_cursor_at(&it, &es, (long) i);
				for (step = 1; step <= 2 && it.valid; step++)
				{
					lsm_block_iter_prev(&it, bp);
					check_cursor_at(&it, &es, (long) i - step);
					if (it.valid)
						CHECK_EQ(it.restart_idx, ((long) i - step) / interval);
				}
			}

			/* a random walk: seeks, ends, restarts, steps either way */
			pos = -1;
			for (step = 0; step < 3000; step++)
			{
				bool		valid = pos >= 0 && (size_t) pos < es.n;
				uint64_t	r = harness_rand64(&rnd) % 10;

				if (r == 0 || (!valid && r >= 4))
				{
					plen = probe_near(es.e, es.n, &rnd, probe);
					lsm_block_iter_seek(&it, probe, plen);
					pos = (long) count_lt(es.e, es.n, probe, plen);
				}
				else if (r == 1)
				{
					lsm_block_iter_first(&it);
					pos = 0;
				}
				else if (r == 2)
				{
					lsm_block_iter_last(&it);
					pos = (long) es.n - 1;
				}
				else if (r == 3)
				{
					uint32_t	rs = (uint32_t) (harness_rand64(&rnd) %
												 it.num_restarts);

					lsm_block_iter_seek_restart(&it, rs);
					pos = (long) rs * interval;
				}
				else if (r <= 5)
				{
					lsm_block_iter_next(&it);
					pos++;
				}
				else
				{
					lsm_block_iter_prev(&it, bp);
					pos--;
				}
				check_cursor_at(&it, &es, pos);
				if (it.valid)
					CHECK_EQ(it.restart_idx, pos / interval);
			}
			lsm_block_iter_free(&it);
			lsm_block_back_free(&back);
		}
		lsm_block_builder_free(&b);
	}
	entries_free(&es);
}

/* The iterator is on es[pos], or invalid without an error outside es. */
static void
check_iter_at(const lsm_iiter *it, const entry *es, size_t n, long pos)
{
	bool		inside = pos >= 0 && (size_t) pos < n;

	if (it->valid != inside ||
		(inside && lsm_key_cmp(it->key, it->klen, es[pos].key,
							   es[pos].klen) != 0))
		harness_note(__FILE__, __LINE__, "expected %s%ld of %zu entries",
					 inside ? "entry " : "nothing: position ", pos, n);
	check_iter(it, es, n, inside ? (size_t) pos : n);
}

/*
 * Drives an internal iterator over the entries es[0..n) (a table's or a
 * level's) backwards and checks every position against the entries: a
 * whole backward scan; a seek back to every key, to just after it (key +
 * NUL), to just before it (its last byte cut off, or lowered), each
 * followed by a step back; before the first key (the empty key) and after
 * the last; then a random walk of seeks either way, NULL among the
 * targets, each followed by steps in its direction (iter.h's protocol).
 */
static void
check_backwards(lsm_iiter *it, const entry *es, size_t n, uint64_t *rnd)
{
	uint8_t		probe[600];
	size_t		plen,
				i;
	long		pos;
	int			step,
				v;
	bool		back = false;

	/* the whole of it */
	lsm_iiter_seek_back(it, NULL, 0);
	for (pos = (long) n - 1; pos >= 0; pos--)
	{
		check_iter_at(it, es, n, pos);
		lsm_iiter_prev(it);
	}
	check_iter_at(it, es, n, -1);

	/* at, just after and just before every key, and a step back */
	for (i = 0; i < n; i++)
		for (v = 0; v < 4; v++)
		{
			memcpy(probe, es[i].key, es[i].klen);
			plen = es[i].klen;
			if (v == 1)
				probe[plen++] = 0;
			else if (v == 2 && plen > 1)
				plen--;
			else if (v == 3 && probe[plen - 1] > 0)
				probe[plen - 1]--;
			else if (v != 0)
				continue;
			pos = (long) count_le(es, n, probe, plen) - 1;
			lsm_iiter_seek_back(it, probe, plen);
			check_iter_at(it, es, n, pos);
			if (pos >= 0)
			{
				lsm_iiter_prev(it);
				check_iter_at(it, es, n, pos - 1);
			}
		}

	/* before the first key, after the last */
	lsm_iiter_seek_back(it, (const uint8_t *) "", 0);
	check_iter_at(it, es, n, -1);
	memset(probe, 0xff, sizeof(probe));
	lsm_iiter_seek_back(it, probe, sizeof(probe));
	check_iter_at(it, es, n, (long) n - 1);

	/* a random walk, changing direction at every seek */
	pos = -1;
	for (step = 0; step < 20000; step++)
	{
		bool		valid = pos >= 0 && (size_t) pos < n;
		uint64_t	r = harness_rand64(rnd) % 16;

		if (r < 2 || !valid)
		{
			const uint8_t *key = NULL;

			plen = 0;
			if (harness_rand64(rnd) % 10 != 0)
			{
				plen = probe_near(es, n, rnd, probe);
				key = probe;
			}
			back = r % 2 == 0;
			if (back)
			{
				lsm_iiter_seek_back(it, key, plen);
				pos = (long) count_le(es, n, key, plen) - 1;
			}
			else
			{
				lsm_iiter_seek(it, key, plen);
				pos = (long) count_lt(es, n, key, plen);
			}
		}
		else if (back)
		{
			lsm_iiter_prev(it);
			pos--;
		}
		else
		{
			lsm_iiter_next(it);
			pos++;
		}
		check_iter_at(it, es, n, pos);
	}
}

/*
 * Tables backwards (the table iterator's seek_back and prev): keys with
 * long shared prefixes in data blocks of 256 bytes to 4 KiB (restart
 * points every 16 entries), values larger than a block among them,
 * tombstones, through check_backwards.  A step back crosses restart points
 * inside a block and block boundaries, and takes entries from the
 * iterator's cache of the restart block it decoded last.
 */
TEST(table_reverse)
{
	static const int block_sizes[] = {256, 1024, 4096};
	uint64_t	rnd = harness_seed() ^ 0x7ab1e;
	char	   *dir = harness_tmpdir("sstb");
	size_t		bi;

	for (bi = 0; bi < sizeof(block_sizes) / sizeof(block_sizes[0]); bi++)
	{
		entries		es;
		lsm_table_meta meta;
		lsm_table  *t;
		lsm_iiter  *it;
		lsm_err		e;

		make_prefix_entries(&es, 6000, (size_t) block_sizes[bi], &rnd);
		write_table(dir, bi + 1, es.e, es.n, block_sizes[bi], 10, &meta);
		lsm_err_clear(&e);
		CHECK_OK(lsm_table_open(dir, bi + 1, 0, &t, &e));
		CHECK_GT(lsm_table_nblocks(t), 20);
		it = lsm_table_iter(t, &e);
		CHECK(it != NULL);
		check_backwards(it, es.e, es.n, &rnd);
		lsm_iiter_destroy(it);
		lsm_table_unref(t);
		lsm_table_meta_free(&meta);
		entries_free(&es);
	}
}

/*
 * A level backwards (the level iterator over sorted, disjoint tables): the
 * entries cut into tables of 1 to 900 entries, one-entry tables among
 * them, through check_backwards; a seek back to a key between two tables
 * (the last key of one and a NUL) goes on to the table before.
 */
TEST(level_reverse)
{
	uint64_t	rnd = harness_seed() ^ 0x1e7e1;
	char	   *dir = harness_tmpdir("sstv");
	entries		es;
	lsm_version *v = lsm_version_new();
	lsm_iiter  *it;
	lsm_err		e;
	size_t		lo = 0;
	int			nt = 0;

	CHECK(v != NULL);
	make_prefix_entries(&es, 5000, 512, &rnd);
	v->files[1] = calloc(es.n, sizeof(lsm_file *));
	CHECK(v->files[1] != NULL);
	lsm_err_clear(&e);
	while (lo < es.n)
	{
		size_t		cnt = nt % 4 == 1 ? 1 : 1 + harness_rand64(&rnd) % 900;
		lsm_file   *f = lsm_file_new();

		CHECK(f != NULL);
		if (cnt > es.n - lo)
			cnt = es.n - lo;
		v->files[1][v->nfiles[1]++] = f;
		write_table(dir, (uint64_t) nt + 1, es.e + lo, cnt, 512, 10, &f->meta);
		CHECK_OK(lsm_table_open(dir, (uint64_t) nt + 1, 0, &f->table, &e));
		lo += cnt;
		nt++;
	}
	CHECK_GT(nt, 6);
	it = lsm_level_iter_new(v, v->files[1], v->nfiles[1], &e);
	CHECK(it != NULL);
	check_backwards(it, es.e, es.n, &rnd);
	lsm_iiter_destroy(it);
	lsm_version_unref(v);
	entries_free(&es);
}

/* Runs the tests named on the command line, or all of them. */
int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(block_roundtrip);
	RUN(block_prefix_compression);
	RUN(block_malformed);
	RUN(table_roundtrip);
	RUN(table_one_key);
	RUN(table_layout);
	RUN(table_damaged_handles);
	RUN(builder_refuses_unsorted_keys);
	RUN(builder_exclusive_and_abandon);
	RUN(table_empty);
	RUN(table_refcount);
	RUN(table_global_seq);
	RUN(table_block_scan_needle);
	RUN(block_reverse);
	RUN(table_reverse);
	RUN(level_reverse);
	return harness_done();
}

/*
 * test_memtable.c
 *		Unit tests of the memtable (memtable.h): the skip list of versions.
 *
 * A memtable holds (key, sequence, kind, value) entries; lookups and
 * iterators see, per key, the newest version with sequence <= their
 * snapshot, tombstones included.  The tests check that against a reference
 * list of versions built next to the memtable (random keys over a small
 * alphabet with NUL and 0xFF bytes, so that keys share prefixes and some are
 * prefixes of others), inserted in random sequence order.  They also cover
 * entries larger than an arena chunk (64 KiB), many entries, and reference
 * counting: an iterator keeps its memtable alive after the owner lets go.
 *
 * merge_many_children checks the merging iterator (iter.h) over memtables
 * as its children, from 1 to 200 of them: with few children it scans for
 * the minimum, with many it keeps a heap; both must give the newest
 * version of every key once, in order, after any seek.
 *
 * Backwards (seek_back and prev): reverse_against_model at snapshots that
 * hide the newest versions of many keys, against the model and against
 * the forward scan reversed; reverse_hidden_versions by hand; and
 * merge_reverse_many_children, the merging iterator backwards over 1 to
 * 200 memtables read at a snapshot.
 *
 * The memtable's key filter (key_filter_no_false_negatives): random keys
 * into memtables of many budgets, from far below what they hold (the
 * filter grows, several times) to far above, and no key added is ever
 * ruled out; absent keys mostly are.  Its value index
 * (value_index_against_scan): random rows with overwrites, deletes and
 * out-of-order sequences; for random field values and snapshots, the rows
 * the index gives (newest versions, not deleted, field equal) are exactly
 * those a full scan of the memtable at that snapshot finds, each key once.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "harness.h"

#include "memtable.h"
#include "vfilter.h"

/* ---------------------------------------------------------------------- */
/* A reference model: every version added, in no particular order. */

typedef struct version
{
	uint8_t		key[8];
	size_t		klen;
	uint64_t	seq;
	int			kind;
	char		val[24];
	size_t		vlen;
} version;

typedef struct model
{
	version    *v;
	size_t		n;
} model;

/* Orders versions by key, then sequence descending (the memtable's order). */
static int
version_cmp(const void *a, const void *b)
{
	const version *x = a;
	const version *y = b;
	int			c = lsm_key_cmp(x->key, x->klen, y->key, y->klen);

	if (c != 0)
		return c;
	return (x->seq < y->seq) - (x->seq > y->seq);
}

/*
 * Builds a model of n versions with sequences 1..n over random keys of 1..4
 * bytes from {0x00, 0x01, 'a', 0xff}, adds them to mt in a random order, and
 * leaves m->v sorted like the memtable.  Every third version is a tombstone.
 */
static void
model_fill(model *m, lsm_memtable *mt, size_t n, uint64_t *rnd)
{
	static const uint8_t alphabet[] = {0x00, 0x01, 'a', 0xff};
	size_t		i;

	m->v = calloc(n, sizeof(version));
	m->n = n;
	CHECK(m->v != NULL);
	for (i = 0; i < n; i++)
	{
		version    *v = &m->v[i];
		size_t		j;

		v->klen = 1 + harness_rand64(rnd) % 4;
		for (j = 0; j < v->klen; j++)
			v->key[j] = alphabet[harness_rand64(rnd) % 4];
		v->seq = i + 1;
		v->kind = harness_rand64(rnd) % 3 == 0 ? LSM_KIND_DEL : LSM_KIND_PUT;
		if (v->kind == LSM_KIND_PUT)
			v->vlen = (size_t) snprintf(v->val, sizeof(v->val), "v%" PRIu64,
										v->seq);
		if (v->kind == LSM_KIND_PUT && v->seq % 7 == 0)
			v->vlen = 0;		/* empty values are values */
	}
	/* insert in a random order: the skip list must sort by (key, seq) */
	for (i = n; i > 1; i--)
	{
		size_t		j = harness_rand64(rnd) % i;
		version		t = m->v[i - 1];

		m->v[i - 1] = m->v[j];
		m->v[j] = t;
	}
	for (i = 0; i < n; i++)
		CHECK_OK(lsm_memtable_add(mt, m->v[i].seq, m->v[i].kind, m->v[i].key,
								  m->v[i].klen, m->v[i].val, m->v[i].vlen));
	qsort(m->v, n, sizeof(version), version_cmp);
}

/*
 * The newest version of key with seq <= snap in the model, or NULL.
 */
static const version *
model_get(const model *m, const uint8_t *key, size_t klen, uint64_t snap)
{
	size_t		i;

	for (i = 0; i < m->n; i++)
		if (lsm_key_cmp(m->v[i].key, m->v[i].klen, key, klen) == 0 &&
			m->v[i].seq <= snap)
			return &m->v[i];	/* sorted by seq descending within a key */
	return NULL;
}

/*
 * Index in the model of the first visible version (at snap) of the first key
 * >= key (key NULL: the first key), or m->n.  Starting from index i, next
 * returns the first visible version of the following key.
 */
static size_t
model_settle(const model *m, size_t i, uint64_t snap)
{
	while (i < m->n && m->v[i].seq > snap)
		i++;
	return i;
}

/* Model index of the first visible entry at or after key (NULL: first). */
static size_t
model_seek(const model *m, const uint8_t *key, size_t klen, uint64_t snap)
{
	size_t		i = 0;

	if (key != NULL)
		while (i < m->n && lsm_key_cmp(m->v[i].key, m->v[i].klen, key, klen) < 0)
			i++;
	return model_settle(m, i, snap);
}

/* Model index of the first visible entry of the key after entry i. */
static size_t
model_next(const model *m, size_t i, uint64_t snap)
{
	size_t		j = i + 1;

	while (j < m->n && lsm_key_cmp(m->v[j].key, m->v[j].klen,
								   m->v[i].key, m->v[i].klen) == 0)
		j++;
	return model_settle(m, j, snap);
}

/* Checks that the iterator's entry is model version i (or both are done). */
static void
check_at(const lsm_iiter *it, const model *m, size_t i)
{
	if (i >= m->n)
	{
		CHECK(!it->valid);
		CHECK_EQ(it->rc, LSM_OK);
		return;
	}
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, m->v[i].key, m->v[i].klen);
	CHECK_EQ_U(it->seq, m->v[i].seq);
	CHECK_EQ(it->del, m->v[i].kind == LSM_KIND_DEL);
	if (m->v[i].kind == LSM_KIND_PUT)
		CHECK_MEMEQ(it->val, it->vlen, m->v[i].val, m->v[i].vlen);
}

/* ---------------------------------------------------------------------- */
/* Tests. */

/* An empty memtable holds nothing and its iterator is empty. */
/* memcmp order, shorter first on a tie: the reference for lsm_key_cmp. */
static int
sign_of_reference(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int			c = harness_key_cmp(a, alen, b, blen);

	return (c > 0) - (c < 0);
}

/*
 * lsm_key_cmp compares short keys eight bytes at a time: its sign agrees
 * with memcmp order for keys of every length up to past its 64-byte
 * limit, sharing prefixes of every length, with bytes above 0x7f.
 */
TEST(key_order)
{
	uint64_t	rng = harness_seed() ^ 0x6b6579;
	uint8_t		a[80],
				b[80];
	int			i;

	for (i = 0; i < 200000; i++)
	{
		size_t		alen = (size_t) (harness_rand64(&rng) % 81),
					blen = (size_t) (harness_rand64(&rng) % 81),
					common = (size_t) (harness_rand64(&rng) % 81),
					j;
		int			c;

		for (j = 0; j < sizeof(a); j++)
		{
			a[j] = (uint8_t) (harness_rand64(&rng) % 4 == 0 ? 0xff : harness_rand64(&rng));
			b[j] = j < common ? a[j] : (uint8_t) harness_rand64(&rng);
		}
		c = lsm_key_cmp(a, alen, b, blen);
		CHECK_MSG(((c > 0) - (c < 0)) == sign_of_reference(a, alen, b, blen),
				  "lengths %zu and %zu, common prefix %zu", alen, blen, common);
		CHECK_EQ(lsm_key_cmp(a, alen, a, alen), 0);
	}
}

TEST(empty)
{
	lsm_memtable *mt = lsm_memtable_new();
	lsm_iiter  *it;
	lsm_err		e;
	int			kind;
	const uint8_t *val;
	size_t		vlen;
	uint64_t	seq;

	CHECK(mt != NULL);
	CHECK_EQ_U(lsm_memtable_entries(mt), 0);
	CHECK(!lsm_memtable_get(mt, "a", 1, UINT64_MAX, &kind, &val, &vlen, &seq));
	lsm_err_clear(&e);
	it = lsm_memtable_iter(mt, UINT64_MAX, &e);
	CHECK(it != NULL);
	lsm_iiter_seek(it, NULL, 0);
	CHECK(!it->valid);
	lsm_iiter_seek(it, (const uint8_t *) "a", 1);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);
	lsm_memtable_unref(mt);
}

/* Versions of one key: each snapshot sees the newest one at or below it. */
TEST(versions_and_snapshots)
{
	lsm_memtable *mt = lsm_memtable_new();
	int			kind;
	const uint8_t *val;
	size_t		vlen;
	uint64_t	seq,
				snap;

	CHECK(mt != NULL);
	/* out of sequence order on purpose */
	CHECK_OK(lsm_memtable_add(mt, 5, LSM_KIND_DEL, "k", 1, NULL, 0));
	CHECK_OK(lsm_memtable_add(mt, 3, LSM_KIND_PUT, "k", 1, "v3", 2));
	CHECK_OK(lsm_memtable_add(mt, 7, LSM_KIND_PUT, "k", 1, "v7", 2));
	CHECK_OK(lsm_memtable_add(mt, 1, LSM_KIND_PUT, "k", 1, "v1", 2));
	/* neighbours that must not be confused with "k" */
	CHECK_OK(lsm_memtable_add(mt, 2, LSM_KIND_PUT, "k\0", 2, "nul", 3));
	CHECK_OK(lsm_memtable_add(mt, 4, LSM_KIND_PUT, "j\xff", 2, "jff", 3));
	CHECK_OK(lsm_memtable_add(mt, 6, LSM_KIND_PUT, "kk", 2, "kk", 2));
	CHECK_EQ_U(lsm_memtable_entries(mt), 7);

	CHECK(!lsm_memtable_get(mt, "k", 1, 0, &kind, &val, &vlen, &seq));
	for (snap = 1; snap <= 10; snap++)
	{
		CHECK(lsm_memtable_get(mt, "k", 1, snap, &kind, &val, &vlen, &seq));
		if (snap < 3)
		{
			CHECK_EQ_U(seq, 1);
			CHECK_EQ(kind, LSM_KIND_PUT);
			CHECK_MEMEQ(val, vlen, "v1", 2);
		}
		else if (snap < 5)
		{
			CHECK_EQ_U(seq, 3);
			CHECK_MEMEQ(val, vlen, "v3", 2);
		}
		else if (snap < 7)
		{
			CHECK_EQ_U(seq, 5);
			CHECK_EQ(kind, LSM_KIND_DEL);
		}
		else
		{
			CHECK_EQ_U(seq, 7);
			CHECK_EQ(kind, LSM_KIND_PUT);
			CHECK_MEMEQ(val, vlen, "v7", 2);
		}
	}
	CHECK(lsm_memtable_get(mt, "k", 1, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK_EQ_U(seq, 7);

	/* the neighbours, and absent keys before, between and after */
	CHECK(lsm_memtable_get(mt, "k\0", 2, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK_MEMEQ(val, vlen, "nul", 3);
	CHECK(!lsm_memtable_get(mt, "k\0", 2, 1, &kind, &val, &vlen, &seq));
	CHECK(lsm_memtable_get(mt, "j\xff", 2, 4, &kind, &val, &vlen, &seq));
	CHECK_MEMEQ(val, vlen, "jff", 3);
	CHECK(!lsm_memtable_get(mt, "j", 1, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK(!lsm_memtable_get(mt, "a", 1, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK(!lsm_memtable_get(mt, "k\x01", 2, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK(!lsm_memtable_get(mt, "k\0\0", 3, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK(!lsm_memtable_get(mt, "z", 1, UINT64_MAX, &kind, &val, &vlen, &seq));
	CHECK(!lsm_memtable_get(mt, "\xff\xff", 2, UINT64_MAX, &kind, &val, &vlen,
							&seq));
	lsm_memtable_unref(mt);
}

/*
 * Random versions against the model: get at many snapshots, then full scans
 * and seeks at several snapshots, one newest-visible version per key in key
 * order, tombstones included.
 */
TEST(random_against_model)
{
	uint64_t	rnd = harness_seed();
	lsm_memtable *mt = lsm_memtable_new();
	model		m;
	lsm_err		e;
	uint64_t	snaps[] = {0, 1, 2, 17, 100, 333, 999, 1000, 1500, UINT64_MAX};
	size_t		s;
	size_t		i;

	CHECK(mt != NULL);
	model_fill(&m, mt, 1500, &rnd);
	CHECK_EQ_U(lsm_memtable_entries(mt), 1500);
	CHECK(lsm_memtable_check(mt));

	/* point lookups of every key present and of random absent ones */
	for (s = 0; s < sizeof(snaps) / sizeof(snaps[0]); s++)
		for (i = 0; i < m.n + 200; i++)
		{
			uint8_t		key[8];
			size_t		klen;
			const version *want;
			int			kind;
			const uint8_t *val;
			size_t		vlen;
			uint64_t	seq;
			bool		got;

			if (i < m.n)
			{
				klen = m.v[i].klen;
				memcpy(key, m.v[i].key, klen);
			}
			else
			{
				size_t		j;

				klen = 1 + harness_rand64(&rnd) % 6;
				for (j = 0; j < klen; j++)
					key[j] = (uint8_t) harness_rand64(&rnd);
			}
			want = model_get(&m, key, klen, snaps[s]);
			got = lsm_memtable_get(mt, key, klen, snaps[s], &kind, &val,
								   &vlen, &seq);
			CHECK_EQ(got, want != NULL);
			if (!got)
				continue;
			CHECK_EQ_U(seq, want->seq);
			CHECK_EQ(kind, want->kind);
			if (kind == LSM_KIND_PUT)
				CHECK_MEMEQ(val, vlen, want->val, want->vlen);
		}

	/* full scans */
	lsm_err_clear(&e);
	for (s = 0; s < sizeof(snaps) / sizeof(snaps[0]); s++)
	{
		lsm_iiter  *it = lsm_memtable_iter(mt, snaps[s], &e);
		size_t		mi;
		size_t		count = 0;
		uint8_t		prev[8];
		size_t		prevlen = 0;

		CHECK(it != NULL);
		lsm_iiter_seek(it, NULL, 0);
		for (mi = model_seek(&m, NULL, 0, snaps[s]); mi < m.n;
			 mi = model_next(&m, mi, snaps[s]))
		{
			check_at(it, &m, mi);
			/* strictly increasing keys: one version per key */
			if (count > 0)
				CHECK_LT(lsm_key_cmp(prev, prevlen, it->key, it->klen), 0);
			memcpy(prev, it->key, it->klen);
			prevlen = it->klen;
			count++;
			lsm_iiter_next(it);
		}
		check_at(it, &m, m.n);
		if (snaps[s] == 0)
			CHECK_EQ(count, 0);

		/* seek to every version's key, and to random keys */
		for (i = 0; i < m.n + 300; i++)
		{
			uint8_t		key[8];
			size_t		klen;
			size_t		j;

			if (i < m.n)
			{
				klen = m.v[i].klen;
				memcpy(key, m.v[i].key, klen);
			}
			else
			{
				klen = harness_rand64(&rnd) % 6;
				for (j = 0; j < klen; j++)
					key[j] = (uint8_t) harness_rand64(&rnd);
			}
			lsm_iiter_seek(it, key, klen);
			mi = model_seek(&m, key, klen, snaps[s]);
			check_at(it, &m, mi);
			/* and a few steps on from there */
			for (j = 0; j < 3 && mi < m.n; j++)
			{
				lsm_iiter_next(it);
				mi = model_next(&m, mi, snaps[s]);
				check_at(it, &m, mi);
			}
		}
		lsm_iiter_destroy(it);
	}
	free(m.v);
	lsm_memtable_unref(mt);
}

/* Iteration yields tombstones, with their sequence, and skips older puts. */
TEST(iter_tombstones)
{
	lsm_memtable *mt = lsm_memtable_new();
	lsm_iiter  *it;
	lsm_err		e;

	CHECK(mt != NULL);
	CHECK_OK(lsm_memtable_add(mt, 1, LSM_KIND_PUT, "a", 1, "1", 1));
	CHECK_OK(lsm_memtable_add(mt, 2, LSM_KIND_DEL, "a", 1, NULL, 0));
	CHECK_OK(lsm_memtable_add(mt, 3, LSM_KIND_PUT, "b", 1, "3", 1));
	CHECK_OK(lsm_memtable_add(mt, 4, LSM_KIND_PUT, "c", 1, "", 0));
	CHECK_OK(lsm_memtable_add(mt, 5, LSM_KIND_DEL, "d", 1, NULL, 0));
	lsm_err_clear(&e);
	it = lsm_memtable_iter(mt, UINT64_MAX, &e);
	CHECK(it != NULL);
	lsm_iiter_seek(it, NULL, 0);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, "a", 1);
	CHECK_EQ(it->del, 1);
	CHECK_EQ_U(it->seq, 2);
	lsm_iiter_next(it);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, "b", 1);
	CHECK_EQ(it->del, 0);
	CHECK_MEMEQ(it->val, it->vlen, "3", 1);
	lsm_iiter_next(it);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, "c", 1);
	CHECK_EQ(it->del, 0);
	CHECK_EQ_U(it->vlen, 0);
	lsm_iiter_next(it);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, "d", 1);
	CHECK_EQ(it->del, 1);
	lsm_iiter_next(it);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);

	/* at snapshot 1 "a" is live and "d" does not exist yet */
	it = lsm_memtable_iter(mt, 1, &e);
	CHECK(it != NULL);
	lsm_iiter_seek(it, NULL, 0);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, "a", 1);
	CHECK_EQ(it->del, 0);
	CHECK_MEMEQ(it->val, it->vlen, "1", 1);
	lsm_iiter_next(it);
	CHECK(!it->valid);
	/* seeking to a key whose only versions are too new moves past it */
	lsm_iiter_seek(it, (const uint8_t *) "b", 1);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);

	it = lsm_memtable_iter(mt, 3, &e);
	CHECK(it != NULL);
	lsm_iiter_seek(it, (const uint8_t *) "a\x01", 2);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, "b", 1);
	lsm_iiter_seek(it, (const uint8_t *) "c", 1);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);
	lsm_memtable_unref(mt);
}

/* Fills buf with a pattern that depends on seed. */
static void
fill_pattern(uint8_t *buf, size_t n, uint64_t seed)
{
	size_t		i;
	uint64_t	s = seed;

	for (i = 0; i < n; i += 8)
	{
		uint64_t	r = harness_rand64(&s);
		size_t		c = n - i < 8 ? n - i : 8;

		memcpy(buf + i, &r, c);
	}
}

/*
 * Entries larger than an arena chunk (64 KiB) get a chunk of their own; the
 * small entries around them keep filling the current chunk.  Every value
 * reads back intact, and so does a key of the maximum length.
 */
TEST(big_entries)
{
	static const size_t sizes[] = {70000, 16 * 1024 + 1, 65536, 1 << 20, 5,
	200000, 0, 64 * 1024 - 100, 3 << 20};
	enum
	{
		NSIZES = sizeof(sizes) / sizeof(sizes[0])
	};
	lsm_memtable *mt = lsm_memtable_new();
	uint8_t    *buf = malloc(3 << 20);
	uint8_t    *bigkey = malloc(LSM_MAX_KEY_LEN);
	size_t		total = 0;
	size_t		i;
	lsm_iiter  *it;
	lsm_err		e;

	CHECK(mt != NULL && buf != NULL && bigkey != NULL);
	for (i = 0; i < NSIZES; i++)
	{
		char		key[16];
		char		small[16];
		int			klen = snprintf(key, sizeof(key), "big%02zu", i);
		int			slen = snprintf(small, sizeof(small), "small%02zu", i);
		size_t		before = lsm_memtable_bytes(mt);

		fill_pattern(buf, sizes[i], i);
		CHECK_OK(lsm_memtable_add(mt, 2 * i + 1, LSM_KIND_PUT, key, klen, buf,
								  sizes[i]));
		CHECK_GE(lsm_memtable_bytes(mt), before + sizes[i] + klen);
		CHECK_OK(lsm_memtable_add(mt, 2 * i + 2, LSM_KIND_PUT, small, slen,
								  small, slen));
		total += sizes[i];
	}
	fill_pattern(bigkey, LSM_MAX_KEY_LEN, 99);
	CHECK_OK(lsm_memtable_add(mt, 1000, LSM_KIND_PUT, bigkey, LSM_MAX_KEY_LEN,
							  "bigkey", 6));
	CHECK_GE(lsm_memtable_bytes(mt), total + LSM_MAX_KEY_LEN);
	CHECK_GE(lsm_memtable_arena_bytes(mt), lsm_memtable_bytes(mt));

	for (i = 0; i < NSIZES; i++)
	{
		char		key[16];
		char		small[16];
		int			klen = snprintf(key, sizeof(key), "big%02zu", i);
		int			slen = snprintf(small, sizeof(small), "small%02zu", i);
		int			kind;
		const uint8_t *val;
		size_t		vlen;
		uint64_t	seq;

		fill_pattern(buf, sizes[i], i);
		CHECK(lsm_memtable_get(mt, key, klen, UINT64_MAX, &kind, &val, &vlen, &seq));
		CHECK_EQ_U(vlen, sizes[i]);
		CHECK(sizes[i] == 0 || memcmp(val, buf, sizes[i]) == 0);
		CHECK(lsm_memtable_get(mt, small, slen, UINT64_MAX, &kind, &val, &vlen,
							   &seq));
		CHECK_MEMEQ(val, vlen, small, (size_t) slen);
	}

	/* the iterator finds the long key and scans the big values in order */
	lsm_err_clear(&e);
	it = lsm_memtable_iter(mt, UINT64_MAX, &e);
	CHECK(it != NULL);
	lsm_iiter_seek(it, bigkey, LSM_MAX_KEY_LEN);
	CHECK(it->valid);
	CHECK_MEMEQ(it->key, it->klen, bigkey, LSM_MAX_KEY_LEN);
	CHECK_MEMEQ(it->val, it->vlen, "bigkey", 6);
	i = 0;
	for (lsm_iiter_seek(it, (const uint8_t *) "big", 3); it->valid &&
		 it->klen == 5 && memcmp(it->key, "big", 3) == 0; lsm_iiter_next(it))
	{
		CHECK_EQ_U(it->vlen, sizes[i]);
		fill_pattern(buf, sizes[i], i);
		CHECK(sizes[i] == 0 || memcmp(it->val, buf, sizes[i]) == 0);
		i++;
	}
	CHECK_EQ(i, NSIZES);
	lsm_iiter_destroy(it);
	free(buf);
	free(bigkey);
	lsm_memtable_unref(mt);
}

/* Many entries: counts, byte accounting, every one found, scan in order. */
TEST(many_entries)
{
	const uint32_t n = 200000;
	lsm_memtable *mt = lsm_memtable_new();
	lsm_iiter  *it;
	lsm_err		e;
	uint32_t	i;
	size_t		prev_bytes;

	CHECK(mt != NULL);
	prev_bytes = lsm_memtable_bytes(mt);
	/* keys inserted in a scrambled order: i * odd constant mod 2^32 */
	for (i = 0; i < n; i++)
	{
		uint32_t	x = i * 2654435761u;
		uint8_t		key[4];
		char		val[16];
		int			vlen;

		key[0] = (uint8_t) (x >> 24);
		key[1] = (uint8_t) (x >> 16);
		key[2] = (uint8_t) (x >> 8);
		key[3] = (uint8_t) x;
		vlen = snprintf(val, sizeof(val), "%u", x);
		CHECK_OK(lsm_memtable_add(mt, (uint64_t) i + 1, LSM_KIND_PUT, key, 4,
								  val, (size_t) vlen));
		CHECK_GT(lsm_memtable_bytes(mt), prev_bytes);
		prev_bytes = lsm_memtable_bytes(mt);
	}
	CHECK_EQ_U(lsm_memtable_entries(mt), n);
	CHECK_GE(lsm_memtable_arena_bytes(mt), lsm_memtable_bytes(mt));
	for (i = 0; i < n; i++)
	{
		uint32_t	x = i * 2654435761u;
		uint8_t		key[4] = {(uint8_t) (x >> 24), (uint8_t) (x >> 16),
		(uint8_t) (x >> 8), (uint8_t) x};
		char		want[16];
		int			wlen = snprintf(want, sizeof(want), "%u", x);
		int			kind;
		const uint8_t *val;
		size_t		vlen;
		uint64_t	seq;

		CHECK(lsm_memtable_get(mt, key, 4, UINT64_MAX, &kind, &val, &vlen, &seq));
		CHECK_EQ_U(seq, (uint64_t) i + 1);
		CHECK_MEMEQ(val, vlen, want, (size_t) wlen);
	}
	lsm_err_clear(&e);
	it = lsm_memtable_iter(mt, UINT64_MAX, &e);
	CHECK(it != NULL);
	i = 0;
	{
		uint8_t		prev[4];

		for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
		{
			CHECK_EQ_U(it->klen, 4);
			if (i > 0)
				CHECK_LT(memcmp(prev, it->key, 4), 0);
			memcpy(prev, it->key, 4);
			i++;
		}
	}
	CHECK_EQ(i, n);
	lsm_iiter_destroy(it);
	lsm_memtable_unref(mt);
}

/*
 * Ascending runs (which take the path past the last node) mixed with keys
 * inside the range, newer versions of earlier keys and a seek past the
 * end: the iterator returns every key once, in order, and it and every
 * lookup the key's newest version.
 */
TEST(ascending_runs)
{
	enum
	{
		N = 6000
	};
	static uint32_t keys[N];
	static uint64_t seqs[N],
				newest[1000 + N];
	uint64_t	rnd = harness_seed() ^ 0xa5c;
	lsm_memtable *mt = lsm_memtable_new();
	lsm_iiter  *it;
	lsm_err		e;
	uint32_t	next = 1000;
	int			n = 0,
				distinct,
				i,
				j;

	CHECK(mt != NULL);
	while (n < N)
	{
		uint64_t	r = harness_rand64(&rnd);
		uint32_t	k;
		uint8_t		kb[4];

		if (r % 4 == 0 && n > 0)
			k = keys[harness_rand64(&rnd) % (uint64_t) n];	/* a newer version */
		else if (r % 4 == 1)
			k = (uint32_t) (harness_rand64(&rnd) % next);	/* inside the range */
		else
			k = next++;			/* past the last key */
		kb[0] = (uint8_t) (k >> 24);
		kb[1] = (uint8_t) (k >> 16);
		kb[2] = (uint8_t) (k >> 8);
		kb[3] = (uint8_t) k;
		keys[n] = k;
		seqs[n] = (uint64_t) n + 1;
		CHECK_OK(lsm_memtable_add(mt, seqs[n], LSM_KIND_PUT, kb, 4, kb, 4));
		n++;
		if (n % 500 == 0)
			CHECK(lsm_memtable_check(mt));
	}
	/* newest version of each key (keys < 1000 + N) */
	for (i = 0; i < N; i++)
		if (seqs[i] > newest[keys[i]])
			newest[keys[i]] = seqs[i];
	for (i = 0, distinct = 0; i < 1000 + N; i++)
		distinct += newest[i] > 0;
	/* every key once, ascending, with its newest version */
	lsm_err_clear(&e);
	it = lsm_memtable_iter(mt, UINT64_MAX, &e);
	CHECK(it != NULL);
	j = 0;
	{
		uint32_t	pk = 0;

		for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
		{
			uint32_t	k = (uint32_t) it->key[0] << 24 |
				(uint32_t) it->key[1] << 16 | (uint32_t) it->key[2] << 8 |
				it->key[3];

			CHECK(j == 0 || k > pk);
			CHECK(k < 1000 + N);
			CHECK_EQ_U(it->seq, newest[k]);
			pk = k;
			j++;
		}
	}
	CHECK_EQ(j, distinct);
	/* a seek past the last key finds nothing */
	{
		uint8_t		past[4] = {0xff, 0xff, 0xff, 0xff};

		lsm_iiter_seek(it, past, 4);
		CHECK(!it->valid);
	}
	lsm_iiter_destroy(it);
	/* lookups: the newest version of every key */
	for (i = 0; i < N; i++)
	{
		uint8_t		kb[4] = {(uint8_t) (keys[i] >> 24), (uint8_t) (keys[i] >> 16),
		(uint8_t) (keys[i] >> 8), (uint8_t) keys[i]};
		uint64_t	seq;
		int			kind;
		const uint8_t *val;
		size_t		vlen;

		CHECK(lsm_memtable_get(mt, kb, 4, UINT64_MAX, &kind, &val, &vlen, &seq));
		CHECK_EQ_U(seq, newest[keys[i]]);
	}
	lsm_memtable_unref(mt);
}

/*
 * Two writers of one shared region, taking turns as the holders of a
 * store's write lock do, each with a finger (the position of its own last
 * insert) that the other's inserts make stale: loads in ascending runs with
 * jumps back and forth, keys between the fingers and newer versions.  The
 * list stays ordered on every level and holds what a private memtable
 * given the same inserts holds, version for version.
 */
TEST(stale_fingers)
{
	enum
	{
		N = 8000
	};
	size_t		size = (size_t) 8 << 20;
	int			fd = memfd_create("fingers", 0);
	uint8_t    *w1,
			   *w2;
	lsm_memtable *mt[2],
			   *plain = lsm_memtable_new();
	lsm_iiter  *a,
			   *b;
	lsm_err		e;
	uint64_t	rng = harness_seed() ^ 0xf1e;
	uint32_t	pos[2] = {0, 50000};	/* each writer's ascending run */
	int			i,
				n = 0;

	lsm_err_clear(&e);
	CHECK(fd >= 0 && plain != NULL);
	CHECK(ftruncate(fd, (off_t) size) == 0);
	w1 = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	w2 = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(w1 != MAP_FAILED && w2 != MAP_FAILED);
	mt[0] = lsm_memtable_format(w1, size, NULL);
	CHECK(mt[0] != NULL);
	mt[1] = lsm_memtable_attach(w2, size, true, NULL, &e);
	CHECK_MSG(mt[1] != NULL, "attach: %s", e.msg);
	for (i = 0; i < N; i++)
	{
		uint64_t	r = harness_rand64(&rng);
		int			who = (int) (r >> 8 & 1);	/* takes the lock */
		uint32_t	k;
		uint8_t		kb[4];

		if (r % 16 == 0)
			pos[who] = (uint32_t) (harness_rand64(&rng) % 100000);	/* a jump */
		if (r % 16 == 1)
			k = (uint32_t) (harness_rand64(&rng) % 100000);	/* anywhere */
		else
			k = pos[who]++;		/* the run: often a key already there */
		kb[0] = (uint8_t) (k >> 24);
		kb[1] = (uint8_t) (k >> 16);
		kb[2] = (uint8_t) (k >> 8);
		kb[3] = (uint8_t) k;
		CHECK_OK(lsm_memtable_add(mt[who], (uint64_t) i + 1,
								  r % 5 == 0 ? LSM_KIND_DEL : LSM_KIND_PUT,
								  kb, 4, kb, 4));
		CHECK_OK(lsm_memtable_add(plain, (uint64_t) i + 1,
								  r % 5 == 0 ? LSM_KIND_DEL : LSM_KIND_PUT,
								  kb, 4, kb, 4));
		if (i % 1000 == 999)
		{
			CHECK(lsm_memtable_check(mt[0]));
			CHECK(lsm_memtable_check(mt[1]));
		}
	}
	/* every version, in the same order, from both writers' handles */
	for (i = 0; i < 2; i++)
	{
		a = lsm_memtable_iter(mt[i], UINT64_MAX, &e);
		b = lsm_memtable_iter(plain, UINT64_MAX, &e);
		CHECK(a != NULL && b != NULL);
		lsm_iiter_seek(a, NULL, 0);
		lsm_iiter_seek(b, NULL, 0);
		for (n = 0; a->valid && b->valid; n++)
		{
			CHECK_MEMEQ(a->key, a->klen, b->key, b->klen);
			CHECK_EQ_U(a->seq, b->seq);
			CHECK_EQ(a->del, b->del);
			lsm_iiter_next(a);
			lsm_iiter_next(b);
		}
		CHECK(!a->valid && !b->valid);
		lsm_iiter_destroy(a);
		lsm_iiter_destroy(b);
	}
	CHECK_GT(n, N / 2);
	lsm_memtable_unref(mt[0]);
	lsm_memtable_unref(mt[1]);
	lsm_memtable_unref(plain);
	munmap(w1, size);
	munmap(w2, size);
	close(fd);
}

/*
 * Reference counting: an iterator holds a reference, so the memtable (and
 * its arena, which the iterator's key and value pointers point into) lives
 * until the last of the owner and the iterators lets go.  ASan reports any
 * use after free.
 */
TEST(refcount_lifetime)
{
	lsm_memtable *mt = lsm_memtable_new();
	lsm_iiter  *it1;
	lsm_iiter  *it2;
	lsm_err		e;
	int			i;
	int			count;

	CHECK(mt != NULL);
	for (i = 0; i < 5000; i++)
	{
		char		key[16];
		int			klen = snprintf(key, sizeof(key), "key%05d", i);

		CHECK_OK(lsm_memtable_add(mt, (uint64_t) i + 1, LSM_KIND_PUT, key, klen,
								  key, klen));
	}
	lsm_err_clear(&e);
	it1 = lsm_memtable_iter(mt, UINT64_MAX, &e);
	it2 = lsm_memtable_iter(mt, 2500, &e);
	CHECK(it1 != NULL && it2 != NULL);
	lsm_iiter_seek(it1, NULL, 0);
	CHECK(it1->valid);

	/* the owner lets go (as a flush does): the iterators keep it alive */
	lsm_memtable_unref(mt);
	mt = NULL;
	count = 0;
	for (; it1->valid; lsm_iiter_next(it1))
	{
		char		key[16];
		int			klen = snprintf(key, sizeof(key), "key%05d", count);

		CHECK_MEMEQ(it1->key, it1->klen, key, (size_t) klen);
		CHECK_MEMEQ(it1->val, it1->vlen, key, (size_t) klen);
		count++;
	}
	CHECK_EQ(count, 5000);
	lsm_iiter_destroy(it1);

	/* the second one still works after the first is gone */
	count = 0;
	for (lsm_iiter_seek(it2, NULL, 0); it2->valid; lsm_iiter_next(it2))
		count++;
	CHECK_EQ(count, 2500);
	lsm_iiter_seek(it2, (const uint8_t *) "key02499", 8);
	CHECK(it2->valid);
	CHECK_MEMEQ(it2->key, it2->klen, "key02499", 8);
	lsm_iiter_destroy(it2);		/* frees the memtable */

	/* explicit ref/unref pairs */
	mt = lsm_memtable_new();
	CHECK(mt != NULL);
	lsm_memtable_ref(mt);
	lsm_memtable_ref(mt);
	CHECK_OK(lsm_memtable_add(mt, 1, LSM_KIND_PUT, "x", 1, "y", 1));
	lsm_memtable_unref(mt);
	lsm_memtable_unref(mt);
	{
		int			kind;
		const uint8_t *val;
		size_t		vlen;
		uint64_t	seq;

		CHECK(lsm_memtable_get(mt, "x", 1, UINT64_MAX, &kind, &val, &vlen, &seq));
	}
	lsm_memtable_unref(mt);
	lsm_memtable_unref(NULL);	/* a no-op */
}

/* Runs the tests named on the command line, or all of them. */
/*
 * The merging iterator over n memtables holding random versions of 300
 * keys (each key at most once per memtable, random distinct sequences, so
 * the newest version may be in any child): per key the version with the
 * highest sequence, tombstones included, in key order, from the start and
 * after seeks.
 */
TEST(merge_many_children)
{
	static const int counts[] = {1, 2, 8, 9, 17, 64, 200};
	uint64_t	rng = harness_seed() ^ 0x3e79e;
	int			c;

	for (c = 0; c < (int) (sizeof(counts) / sizeof(counts[0])); c++)
	{
		enum
		{
			NKEY = 300
		};
		int			n = counts[c],
					i,
					k;
		uint64_t	best_seq[NKEY];
		int			best_kind[NKEY];
		lsm_memtable **mts = calloc((size_t) n, sizeof(lsm_memtable *));
		lsm_iiter **kids = calloc((size_t) n, sizeof(lsm_iiter *));
		lsm_iiter  *m;
		lsm_err		e;

		CHECK(mts != NULL && kids != NULL);
		lsm_err_clear(&e);
		memset(best_seq, 0, sizeof(best_seq));
		memset(best_kind, 0, sizeof(best_kind));
		for (i = 0; i < n; i++)
		{
			mts[i] = lsm_memtable_new();
			CHECK(mts[i] != NULL);
			for (k = 0; k < NKEY; k++)
			{
				char		key[16],
							val[32];
				uint64_t	seq;
				int			kind;

				if (harness_rand64(&rng) % 4 != 0)
					continue;
				seq = 1 + (harness_rand64(&rng) >> 12);
				kind = harness_rand64(&rng) % 5 == 0 ? LSM_KIND_DEL : LSM_KIND_PUT;
				sprintf(key, "k%04d", k);
				sprintf(val, "%d:%" PRIu64, k, seq);
				CHECK_OK(lsm_memtable_add(mts[i], seq, kind, key, 5, val,
										  kind == LSM_KIND_PUT ? strlen(val) : 0));
				CHECK(seq != best_seq[k]);
				if (seq > best_seq[k])
				{
					best_seq[k] = seq;
					best_kind[k] = kind;
				}
			}
			kids[i] = lsm_memtable_iter(mts[i], UINT64_MAX, &e);
			CHECK(kids[i] != NULL);
		}
		m = lsm_merge_iter_new(kids, n, &e);
		CHECK(m != NULL);
		for (i = 0; i < 20; i++)
		{
			int			from = i == 0 ? 0 : (int) (harness_rand64(&rng) % (NKEY + 5));
			char		key[16];

			sprintf(key, "k%04d", from);
			lsm_iiter_seek(m, i == 0 ? NULL : (const uint8_t *) key, 5);
			for (k = from; k < NKEY; k++)
			{
				char		want[32];

				if (best_seq[k] == 0)
					continue;
				CHECK_MSG(m->valid, "%d children: merge ended before k%04d", n, k);
				CHECK_EQ(m->klen, 5);
				CHECK_EQ((m->key[1] - '0') * 1000 + (m->key[2] - '0') * 100 +
						 (m->key[3] - '0') * 10 + (m->key[4] - '0'), k);
				CHECK_EQ_U(m->seq, best_seq[k]);
				CHECK_EQ(m->del, best_kind[k] == LSM_KIND_DEL);
				if (!m->del)
				{
					sprintf(want, "%d:%" PRIu64, k, best_seq[k]);
					CHECK_MEMEQ(m->val, m->vlen, want, strlen(want));
				}
				lsm_iiter_next(m);
			}
			CHECK_MSG(!m->valid, "%d children: merge returned an extra key", n);
			CHECK_EQ(m->rc, LSM_OK);
		}
		lsm_iiter_destroy(m);
		for (i = 0; i < n; i++)
			lsm_memtable_unref(mts[i]);
		free(mts);
		free(kids);
	}
}

/* ---------------------------------------------------------------------- */
/* Backwards. */

/*
 * Model index of the newest version visible at snap of the last key that
 * has one among the versions m->v[0..end), where end is the first version
 * of a key or m->n; m->n if no key there has a visible version.  (Versions
 * of a key are contiguous, newest first.)
 */
static size_t
model_back_from(const model *m, size_t end, uint64_t snap)
{
	while (end > 0)
	{
		size_t		start = end - 1,
					i;

		while (start > 0 &&
			   lsm_key_cmp(m->v[start - 1].key, m->v[start - 1].klen,
						   m->v[end - 1].key, m->v[end - 1].klen) == 0)
			start--;
		for (i = start; i < end; i++)
			if (m->v[i].seq <= snap)
				return i;
		end = start;			/* every version of that key is too new */
	}
	return m->n;
}

/*
 * Model index of the entry a seek back to key lands on at snap (the last
 * key <= key with a visible version; key NULL: the last such key), or m->n.
 */
static size_t
model_seek_back(const model *m, const uint8_t *key, size_t klen,
				uint64_t snap)
{
	size_t		lo = 0,
				hi = m->n;

	if (key == NULL)
		return model_back_from(m, m->n, snap);
	/* the first version of a key > key */
	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (lsm_key_cmp(m->v[mid].key, m->v[mid].klen, key, klen) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return model_back_from(m, lo, snap);
}

/* Model index of the entry a step back from entry i lands on, or m->n. */
static size_t
model_prev(const model *m, size_t i, uint64_t snap)
{
	size_t		start = i;

	while (start > 0 &&
		   lsm_key_cmp(m->v[start - 1].key, m->v[start - 1].klen,
					   m->v[i].key, m->v[i].klen) == 0)
		start--;
	return model_back_from(m, start, snap);
}

/* check_at, first saying which step of which snapshot went wrong. */
static void
check_at_step(const lsm_iiter *it, const model *m, size_t i, uint64_t snap,
			  const char *what)
{
	bool		want = i < m->n;

	if (it->valid != want ||
		(want && (lsm_key_cmp(it->key, it->klen, m->v[i].key,
							  m->v[i].klen) != 0 || it->seq != m->v[i].seq)))
		harness_note(__FILE__, __LINE__, "%s at snapshot %" PRIu64
					 ": expected %s", what, snap,
					 want ? "another version" : "the end");
	check_at(it, m, i);
}

/* A random key of 0..5 bytes, most of them from the model's alphabet. */
static size_t
random_probe(uint64_t *rnd, uint8_t *key)
{
	static const uint8_t alphabet[] = {0x00, 0x01, 'a', 0xff, 0x02, 'b'};
	size_t		klen = harness_rand64(rnd) % 6,
				j;

	for (j = 0; j < klen; j++)
		key[j] = alphabet[harness_rand64(rnd) % sizeof(alphabet)];
	return klen;
}

/*
 * Backwards against the model, at snapshots that hide the newest versions
 * of many keys (and every version of some): a whole backward scan gives,
 * from the last key, the newest visible version of every key with one,
 * tombstones included, and is exactly the forward scan reversed; a seek
 * back to every version's key and to random keys, and a few steps back
 * from there, land where the model says; and a random walk switches
 * between seek, next, seek_back and prev as iter.h's protocol allows.
 */
TEST(reverse_against_model)
{
	uint64_t	rnd = harness_seed() ^ 0x5eb4c;
	lsm_memtable *mt = lsm_memtable_new();
	model		m;
	lsm_err		e;
	uint64_t	snaps[] = {0, 1, 2, 17, 100, 333, 999, 1000, 1500, UINT64_MAX};
	size_t		s;

	CHECK(mt != NULL);
	model_fill(&m, mt, 1500, &rnd);
	lsm_err_clear(&e);
	for (s = 0; s < sizeof(snaps) / sizeof(snaps[0]); s++)
	{
		uint64_t	snap = snaps[s];
		lsm_iiter  *it = lsm_memtable_iter(mt, snap, &e);
		version    *fwd = calloc(m.n, sizeof(version));
		size_t		nf = 0,
					nb = 0,
					mi,
					i;
		int			step;
		bool		back = false;

		CHECK(it != NULL && fwd != NULL);

		/* forwards, recorded */
		for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
		{
			version    *v = &fwd[nf++];

			CHECK(nf <= m.n && it->klen <= sizeof(v->key) &&
				  it->vlen <= sizeof(v->val));
			memcpy(v->key, it->key, it->klen);
			v->klen = it->klen;
			v->seq = it->seq;
			v->kind = it->del ? LSM_KIND_DEL : LSM_KIND_PUT;
			memcpy(v->val, it->val, it->vlen);
			v->vlen = it->vlen;
		}
		CHECK_EQ(it->rc, LSM_OK);

		/* backwards: the model from its end, the forward scan reversed */
		lsm_iiter_seek_back(it, NULL, 0);
		for (mi = model_seek_back(&m, NULL, 0, snap); mi < m.n;
			 mi = model_prev(&m, mi, snap))
		{
			const version *f;

			check_at_step(it, &m, mi, snap, "backward scan");
			CHECK_MSG(nb < nf, "snapshot %" PRIu64 ": backward scan longer "
					  "than the forward one (%zu)", snap, nf);
			f = &fwd[nf - 1 - nb];
			CHECK_MEMEQ(it->key, it->klen, f->key, f->klen);
			CHECK_EQ_U(it->seq, f->seq);
			CHECK_EQ(it->del, f->kind == LSM_KIND_DEL);
			CHECK_MEMEQ(it->val, it->vlen, f->val, f->vlen);
			nb++;
			lsm_iiter_prev(it);
		}
		check_at_step(it, &m, m.n, snap, "backward scan");
		CHECK_EQ_U(nb, nf);
		if (snap == 0)
			CHECK_EQ_U(nb, 0);

		/* seek back to every version's key and to random keys, step back */
		for (i = 0; i < m.n + 300; i++)
		{
			uint8_t		key[8];
			size_t		klen,
						j;

			if (i < m.n)
			{
				klen = m.v[i].klen;
				memcpy(key, m.v[i].key, klen);
			}
			else
				klen = random_probe(&rnd, key);
			lsm_iiter_seek_back(it, key, klen);
			mi = model_seek_back(&m, key, klen, snap);
			check_at_step(it, &m, mi, snap, "seek back");
			for (j = 0; j < 3 && mi < m.n; j++)
			{
				lsm_iiter_prev(it);
				mi = model_prev(&m, mi, snap);
				check_at_step(it, &m, mi, snap, "step back after a seek back");
			}
		}

		/* a random walk, changing direction at every seek */
		mi = m.n;
		for (step = 0; step < 3000; step++)
		{
			uint64_t	r = harness_rand64(&rnd) % 8;

			if (r < 2 || mi >= m.n)
			{
				uint8_t		key[8];
				size_t		klen = random_probe(&rnd, key);
				const uint8_t *kp = harness_rand64(&rnd) % 8 == 0 ? NULL : key;

				back = r % 2 == 1;
				if (back)
				{
					lsm_iiter_seek_back(it, kp, klen);
					mi = model_seek_back(&m, kp, klen, snap);
				}
				else
				{
					lsm_iiter_seek(it, kp, klen);
					mi = model_seek(&m, kp, klen, snap);
				}
			}
			else if (back)
			{
				lsm_iiter_prev(it);
				mi = model_prev(&m, mi, snap);
			}
			else
			{
				lsm_iiter_next(it);
				mi = model_next(&m, mi, snap);
			}
			check_at_step(it, &m, mi, snap, back ? "walk back" : "walk on");
		}
		free(fwd);
		lsm_iiter_destroy(it);
	}
	free(m.v);
	lsm_memtable_unref(mt);
}

/* The iterator is on key with seq, a tombstone or val. */
static void
check_entry(const lsm_iiter *it, const char *key, size_t klen, uint64_t seq,
			const char *val)
{
	CHECK_MSG(it->valid, "iterator ended, expected %s@%" PRIu64, key, seq);
	CHECK_MEMEQ(it->key, it->klen, key, klen);
	CHECK_EQ_U(it->seq, seq);
	CHECK_EQ(it->del, val == NULL);
	if (val != NULL)
		CHECK_MEMEQ(it->val, it->vlen, val, strlen(val));
}

/*
 * Backwards past versions the snapshot does not see: keys whose only
 * versions are too new at the end, at the start and between visible ones,
 * and keys whose newest version is too new (an older one shows instead),
 * a tombstone and a prefix key among them.
 */
TEST(reverse_hidden_versions)
{
	lsm_memtable *mt = lsm_memtable_new();
	lsm_iiter  *it;
	lsm_err		e;

	CHECK(mt != NULL);
	CHECK_OK(lsm_memtable_add(mt, 9, LSM_KIND_PUT, "0", 1, "09", 2));
	CHECK_OK(lsm_memtable_add(mt, 1, LSM_KIND_PUT, "a", 1, "a1", 2));
	CHECK_OK(lsm_memtable_add(mt, 5, LSM_KIND_PUT, "b", 1, "b5", 2));
	CHECK_OK(lsm_memtable_add(mt, 2, LSM_KIND_PUT, "c", 1, "c2", 2));
	CHECK_OK(lsm_memtable_add(mt, 6, LSM_KIND_DEL, "c", 1, NULL, 0));
	CHECK_OK(lsm_memtable_add(mt, 3, LSM_KIND_DEL, "c\0", 2, NULL, 0));
	CHECK_OK(lsm_memtable_add(mt, 8, LSM_KIND_PUT, "c\0", 2, "c8", 2));
	CHECK_OK(lsm_memtable_add(mt, 7, LSM_KIND_PUT, "d", 1, "d7", 2));
	lsm_err_clear(&e);

	/* at 4: 0, b and d are too new; c shows its put, c\0 its tombstone */
	it = lsm_memtable_iter(mt, 4, &e);
	CHECK(it != NULL);
	lsm_iiter_seek_back(it, NULL, 0);
	check_entry(it, "c\0", 2, 3, NULL);
	lsm_iiter_prev(it);
	check_entry(it, "c", 1, 2, "c2");
	lsm_iiter_prev(it);
	check_entry(it, "a", 1, 1, "a1");
	lsm_iiter_prev(it);
	CHECK(!it->valid);
	CHECK_EQ(it->rc, LSM_OK);
	lsm_iiter_seek_back(it, (const uint8_t *) "d", 1);
	check_entry(it, "c\0", 2, 3, NULL);
	lsm_iiter_seek_back(it, (const uint8_t *) "c\0", 2);
	check_entry(it, "c\0", 2, 3, NULL);
	lsm_iiter_seek_back(it, (const uint8_t *) "c", 1);
	check_entry(it, "c", 1, 2, "c2");
	lsm_iiter_seek_back(it, (const uint8_t *) "b\xff", 2);
	check_entry(it, "a", 1, 1, "a1");
	lsm_iiter_seek_back(it, (const uint8_t *) "b", 1);
	check_entry(it, "a", 1, 1, "a1");
	lsm_iiter_seek_back(it, (const uint8_t *) "a", 1);
	check_entry(it, "a", 1, 1, "a1");
	lsm_iiter_seek_back(it, (const uint8_t *) "0", 1);
	CHECK(!it->valid);
	lsm_iiter_seek_back(it, (const uint8_t *) "", 0);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);

	/* at 6: b shows, c is a tombstone */
	it = lsm_memtable_iter(mt, 6, &e);
	CHECK(it != NULL);
	lsm_iiter_seek_back(it, (const uint8_t *) "z", 1);
	check_entry(it, "c\0", 2, 3, NULL);
	lsm_iiter_prev(it);
	check_entry(it, "c", 1, 6, NULL);
	lsm_iiter_prev(it);
	check_entry(it, "b", 1, 5, "b5");
	lsm_iiter_prev(it);
	check_entry(it, "a", 1, 1, "a1");
	lsm_iiter_prev(it);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);

	/* at 0 nothing, at 9 everything */
	it = lsm_memtable_iter(mt, 0, &e);
	CHECK(it != NULL);
	lsm_iiter_seek_back(it, NULL, 0);
	CHECK(!it->valid);
	lsm_iiter_seek_back(it, (const uint8_t *) "c", 1);
	CHECK(!it->valid);
	lsm_iiter_destroy(it);
	it = lsm_memtable_iter(mt, 9, &e);
	CHECK(it != NULL);
	lsm_iiter_seek_back(it, NULL, 0);
	check_entry(it, "d", 1, 7, "d7");
	lsm_iiter_prev(it);
	check_entry(it, "c\0", 2, 8, "c8");
	lsm_iiter_prev(it);
	check_entry(it, "c", 1, 6, NULL);
	lsm_iiter_prev(it);
	check_entry(it, "b", 1, 5, "b5");
	lsm_iiter_prev(it);
	check_entry(it, "a", 1, 1, "a1");
	lsm_iiter_prev(it);
	check_entry(it, "0", 1, 9, "09");
	lsm_iiter_prev(it);
	CHECK(!it->valid);
	CHECK_EQ(it->rc, LSM_OK);
	lsm_iiter_destroy(it);
	lsm_memtable_unref(mt);
}

/*
 * The merging iterator backwards over n memtables (1 to 200: a linear
 * scan for the largest key, or a heap) holding one or two versions of
 * random keys each, read at a snapshot that hides about half the versions:
 * per key the visible version with the highest sequence, tombstones
 * included, from the last key <= the target down to the first, after seeks
 * back to keys, between keys, before the first, after the last and NULL;
 * and forwards again after each backward pass.
 */
TEST(merge_reverse_many_children)
{
	static const int counts[] = {1, 2, 8, 9, 17, 64, 200};
	uint64_t	rng = harness_seed() ^ 0x7e7e4;
	uint64_t	snap = UINT64_C(1) << 51;
	int			c;

	for (c = 0; c < (int) (sizeof(counts) / sizeof(counts[0])); c++)
	{
		enum
		{
			NKEY = 300
		};
		int			n = counts[c],
					i,
					k,
					round;
		uint64_t	best_seq[NKEY];
		int			best_kind[NKEY];
		lsm_memtable **mts = calloc((size_t) n, sizeof(lsm_memtable *));
		lsm_iiter **kids = calloc((size_t) n, sizeof(lsm_iiter *));
		lsm_iiter  *m;
		lsm_err		e;

		CHECK(mts != NULL && kids != NULL);
		lsm_err_clear(&e);
		memset(best_seq, 0, sizeof(best_seq));
		memset(best_kind, 0, sizeof(best_kind));
		for (i = 0; i < n; i++)
		{
			mts[i] = lsm_memtable_new();
			CHECK(mts[i] != NULL);
			for (k = 0; k < NKEY; k++)
			{
				int			nv,
							v;

				if (harness_rand64(&rng) % 4 != 0)
					continue;
				nv = 1 + (int) (harness_rand64(&rng) % 2);
				for (v = 0; v < nv; v++)
				{
					char		key[16],
								val[32];
					uint64_t	seq = 1 + (harness_rand64(&rng) >> 12);
					int			kind = harness_rand64(&rng) % 5 == 0 ?
						LSM_KIND_DEL : LSM_KIND_PUT;

					sprintf(key, "k%04d", k);
					sprintf(val, "%d:%" PRIu64, k, seq);
					CHECK_OK(lsm_memtable_add(mts[i], seq, kind, key, 5, val,
											  kind == LSM_KIND_PUT ?
											  strlen(val) : 0));
					CHECK(seq != best_seq[k]);
					if (seq <= snap && seq > best_seq[k])
					{
						best_seq[k] = seq;
						best_kind[k] = kind;
					}
				}
			}
			kids[i] = lsm_memtable_iter(mts[i], snap, &e);
			CHECK(kids[i] != NULL);
		}
		m = lsm_merge_iter_new(kids, n, &e);
		CHECK(m != NULL);
		for (round = 0; round < 24; round++)
		{
			char		target[16];
			size_t		tlen = 0;
			int			from,
						fwd;

			/* the target: NULL, before, after, at or between keys */
			switch (round < 4 ? round : 4 + (int) (harness_rand64(&rng) % 3))
			{
				case 0:
					from = NKEY - 1;
					break;
				case 1:
					from = -1;
					tlen = 0;	/* the empty key */
					break;
				case 2:
					from = NKEY - 1;
					tlen = (size_t) sprintf(target, "l");
					break;
				case 3:
					from = -1;
					tlen = (size_t) sprintf(target, "k");
					break;
				case 4:
					from = (int) (harness_rand64(&rng) % NKEY);
					tlen = (size_t) sprintf(target, "k%04d", from);
					break;
				default:
					/* k0042 and a byte: after k0042, before k0043 */
					from = (int) (harness_rand64(&rng) % NKEY);
					tlen = (size_t) sprintf(target, "k%04d", from);
					target[tlen++] = harness_rand64(&rng) % 2 ? '\0' : '\xff';
					break;
			}
			lsm_iiter_seek_back(m, round == 0 ? NULL : (const uint8_t *) target,
								tlen);
			for (k = from; k >= 0; k--)
			{
				char		want[32];

				if (best_seq[k] == 0)
					continue;
				CHECK_MSG(m->valid, "%d children, round %d: merge ended "
						  "before k%04d", n, round, k);
				CHECK_EQ(m->klen, 5);
				CHECK_EQ((m->key[1] - '0') * 1000 + (m->key[2] - '0') * 100 +
						 (m->key[3] - '0') * 10 + (m->key[4] - '0'), k);
				CHECK_EQ_U(m->seq, best_seq[k]);
				CHECK_EQ(m->del, best_kind[k] == LSM_KIND_DEL);
				if (!m->del)
				{
					sprintf(want, "%d:%" PRIu64, k, best_seq[k]);
					CHECK_MEMEQ(m->val, m->vlen, want, strlen(want));
				}
				lsm_iiter_prev(m);
			}
			CHECK_MSG(!m->valid, "%d children, round %d: merge returned an "
					  "extra key", n, round);
			CHECK_EQ(m->rc, LSM_OK);

			/* and forwards again, for a few keys */
			fwd = (int) (harness_rand64(&rng) % NKEY);
			sprintf(target, "k%04d", fwd);
			lsm_iiter_seek(m, (const uint8_t *) target, 5);
			for (k = fwd, i = 0; k < NKEY && i < 20; k++)
			{
				if (best_seq[k] == 0)
					continue;
				CHECK(m->valid);
				CHECK_EQ((m->key[1] - '0') * 1000 + (m->key[2] - '0') * 100 +
						 (m->key[3] - '0') * 10 + (m->key[4] - '0'), k);
				CHECK_EQ_U(m->seq, best_seq[k]);
				lsm_iiter_next(m);
				i++;
			}
		}
		lsm_iiter_destroy(m);
		for (i = 0; i < n; i++)
			lsm_memtable_unref(mts[i]);
		free(mts);
		free(kids);
	}
}

/* ---------------------------------------------------------------------- */
/* The key filter and the value index. */

/*
 * No false negatives, whatever the memtable's size against its budget:
 * every key added (puts and tombstones, several versions of some) passes
 * lsm_memtable_may_hold_key, at every step of growth; and the filter rules
 * out most absent keys.
 */
TEST(key_filter_no_false_negatives)
{
	static const size_t budgets[] = {4096, 16384, 1 << 20, 64 << 20};
	static const int counts[] = {1, 10, 100, 1000, 5000, 40000};
	uint64_t	rng = harness_seed() ^ 0x6b657966;
	int			b,
				c;

	for (b = 0; b < (int) (sizeof(budgets) / sizeof(budgets[0])); b++)
		for (c = 0; c < (int) (sizeof(counts) / sizeof(counts[0])); c++)
		{
			lsm_memtable *mt = lsm_memtable_new();
			int			n = counts[c],
						i,
						fp = 0;
			uint8_t    (*keys)[12] = malloc((size_t) n * 12);
			size_t	   *klens = malloc(sizeof(size_t) * (size_t) n);

			CHECK(mt != NULL && keys != NULL && klens != NULL);
			CHECK(!lsm_memtable_may_hold_key(mt, 42));
			CHECK_OK(lsm_memtable_filter_keys(mt, budgets[b]));
			CHECK(!lsm_memtable_may_hold_key(mt, 42));
			for (i = 0; i < n; i++)
			{
				uint64_t	r = harness_rand64(&rng);
				int			j;

				/* 4..12 random bytes; every 7th key again (a newer version) */
				if (i % 7 == 6)
				{
					int			o = (int) (r % (uint64_t) i);

					memcpy(keys[i], keys[o], klens[o]);
					klens[i] = klens[o];
				}
				else
				{
					klens[i] = 4 + (size_t) (r % 9);
					for (j = 0; j < (int) klens[i]; j++)
						keys[i][j] = (uint8_t) harness_rand64(&rng);
				}
				CHECK_OK(lsm_memtable_add(mt, (uint64_t) i + 1,
										  i % 5 == 4 ? LSM_KIND_DEL : LSM_KIND_PUT,
										  keys[i], klens[i], "v", 1));
				/* now and then, every key so far */
				if ((i & (i + 1)) == 0 || i == n - 1)
				{
					int			k;

					for (k = 0; k <= i; k++)
						CHECK_MSG(lsm_memtable_may_hold_key(mt, lsm_key_hash(keys[k], klens[k])),
								  "budget %zu: key %d of %d ruled out", budgets[b], k, i + 1);
				}
			}
			/* absent keys: 13 bytes, longer than any added */
			for (i = 0; i < 10000; i++)
			{
				uint8_t		k[13];
				int			j;

				for (j = 0; j < 13; j++)
					k[j] = (uint8_t) harness_rand64(&rng);
				fp += lsm_memtable_may_hold_key(mt, lsm_key_hash(k, 13));
			}
			/* 5+ bits per key, grown or not: at most a few percent */
			CHECK_MSG(fp < 1000, "budget %zu, %d keys: %d of 10000 absent keys pass",
					  budgets[b], n, fp);
			if (n == 40000)
				printf("# budget %zu, %d keys: filter %zu bytes, %d of 10000 absent keys pass\n",
					   budgets[b], n, lsm_memtable_index_bytes(mt), fp);
			lsm_memtable_unref(mt);
			free(keys);
			free(klens);
		}
}

#define VI_KEYS 300
#define VI_FIELDS 4

/* Does field f of row equal (data, len)? */
static bool
vi_field_eq(const uint8_t *row, size_t rowlen, int f, const void *data,
			size_t len)
{
	lsm_field	fv;

	return lsm_row_field(row, rowlen, f, &fv) == LSM_OK && !fv.is_null &&
		fv.len == len && (len == 0 || memcmp(fv.data, data, len) == 0);
}

typedef struct vi_search
{
	int			field;
	const uint8_t *val;
	size_t		vlen;
	int			nfound;
	bool		seen[VI_KEYS];
	uint64_t	seq[VI_KEYS];
} vi_search;

static int
vi_key_number(const uint8_t *key, size_t klen)
{
	int			k = 0;
	size_t		i;

	for (i = 1; i < klen; i++)
		k = k * 10 + (key[i] - '0');
	return k;
}

/* lsm_memtable_value_rows callback: records the matching rows. */
static int
vi_take(void *arg, const uint8_t *key, size_t klen, const uint8_t *row,
		size_t rowlen, uint64_t seq)
{
	vi_search  *s = arg;
	int			k = vi_key_number(key, klen);

	if (!vi_field_eq(row, rowlen, s->field, s->val, s->vlen))
		return LSM_OK;
	CHECK_MSG(!s->seen[k], "key %d twice", k);
	s->seen[k] = true;
	s->seq[k] = seq;
	s->nfound++;
	return LSM_OK;
}

/*
 * The value index against a full scan: random rows of VI_FIELDS fields
 * over small domains (so values repeat across rows and fields), some
 * fields null, field 3 left out of the index; overwrites, deletes, and
 * sequences out of order (as when a batch and a replay interleave).
 */
TEST(value_index_against_scan)
{
	uint64_t	rng = harness_seed() ^ 0x76696478;
	int			round;

	for (round = 0; round < 6; round++)
	{
		lsm_memtable *mt = lsm_memtable_new();
		int			ops = 200 << round,
					op,
					q;
		uint64_t	seq = 10;
		uint64_t	unindexed = UINT64_C(1) << 3;
		lsm_err		e;

		lsm_err_clear(&e);
		CHECK(mt != NULL);
		/* m = 512 bits, k = 2: a small value filter, often "maybe" */
		CHECK_OK(lsm_memtable_index_values(mt, 512 * (uint32_t) (1 + round % 3), 2,
										   unindexed));
		if (round % 2)
			CHECK_OK(lsm_memtable_filter_keys(mt, 4096));
		for (op = 0; op < ops; op++)
		{
			char		key[8];
			int			k = (int) (harness_rand64(&rng) % VI_KEYS);
			int			klen = snprintf(key, sizeof(key), "k%d", k);
			uint64_t	s = seq + (harness_rand64(&rng) % 4 == 0 ?
								   0 : harness_rand64(&rng) % 3);

			seq = s + 3;
			if (harness_rand64(&rng) % 8 == 0)
				CHECK_OK(lsm_memtable_add(mt, s, LSM_KIND_DEL, key,
										  (size_t) klen, NULL, 0));
			else
			{
				lsm_field	f[VI_FIELDS];
				char		buf[VI_FIELDS][8];
				void	   *row;
				size_t		rowlen;
				int			j;

				for (j = 0; j < VI_FIELDS; j++)
				{
					uint64_t	r = harness_rand64(&rng) % 9;

					f[j].is_null = r == 8;
					f[j].len = (size_t) snprintf(buf[j], sizeof(buf[j]), "%c%d",
												 'a' + (int) (r % 3), (int) (r % 4));
					if (r == 7)
						f[j].len = 0;	/* empty, not null */
					f[j].data = buf[j];
				}
				CHECK_OK(lsm_row_encode(f, VI_FIELDS, &row, &rowlen));
				CHECK_OK(lsm_memtable_add(mt, s, LSM_KIND_PUT, key,
										  (size_t) klen, row, rowlen));
				free(row);
			}
		}

		/* every field value at several snapshots */
		for (q = 0; q < 60; q++)
		{
			static const char *const vals[] = {"a0", "b1", "c2", "a3", "b0",
			"c1", "a2", "b3", "", "zz"};
			vi_search	vs;
			uint64_t	snap = q % 4 == 0 ? UINT64_MAX :
				harness_rand64(&rng) % (seq + 1);
			lsm_iiter  *it;
			int			nscan = 0,
						rc;

			memset(&vs, 0, sizeof(vs));
			vs.field = q % VI_FIELDS;
			vs.val = (const uint8_t *) vals[q % 10];
			vs.vlen = strlen(vals[q % 10]);
			rc = lsm_memtable_value_rows(mt,
										 lsm_value_hash(vs.field, vs.val, vs.vlen),
										 snap, vi_take, &vs);
			if (vs.field == 3)
			{
				/* not indexed: its values are in no chain */
				CHECK_OK(rc);
				CHECK_EQ(vs.nfound, 0);
				continue;
			}
			CHECK_OK(rc);
			it = lsm_memtable_iter(mt, snap, &e);
			CHECK(it != NULL);
			for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
			{
				int			k = vi_key_number(it->key, it->klen);

				if (it->del || !vi_field_eq(it->val, it->vlen, vs.field,
											vs.val, vs.vlen))
					continue;
				CHECK_MSG(vs.seen[k], "round %d, field %d = \"%s\" at %llu: key %d found by the scan only",
						  round, vs.field, vals[q % 10],
						  (unsigned long long) snap, k);
				CHECK_EQ_U(vs.seq[k], it->seq);
				nscan++;
			}
			lsm_iiter_destroy(it);
			CHECK_EQ(vs.nfound, nscan);
		}
		CHECK(lsm_memtable_check(mt));
		lsm_memtable_unref(mt);
	}
}

/*
 * An external region, as db.c keeps it in a shared file: a memtable
 * formatted in one mapping of a file and attached in a second, read-only
 * mapping at another address answers the same; a region that fills up
 * refuses entries with LSM_NOMEM and stays readable.
 *
 * rg_row: a row of a repeated value ("u0".."u49") and "x", or with own >=
 * 0 a value of its own ("w<own>").
 */
static void
rg_row(uint64_t *rng, int own, void **row, size_t *rowlen)
{
	lsm_field	f[2];
	char		b0[8],
				b1[16];

	f[0].is_null = f[1].is_null = false;
	f[0].len = (size_t) snprintf(b0, sizeof(b0), "u%d", (int) (harness_rand64(rng) % 50));
	f[1].len = own < 0 ? (size_t) snprintf(b1, sizeof(b1), "x") :
		(size_t) snprintf(b1, sizeof(b1), "w%d", own);
	f[0].data = b0;
	f[1].data = b1;
	CHECK_OK(lsm_row_encode(f, 2, row, rowlen));
}

static int
rg_count(void *arg, const uint8_t *key, size_t klen, const uint8_t *row,
		 size_t rowlen, uint64_t seq)
{
	(void) key;
	(void) klen;
	(void) row;
	(void) rowlen;
	(void) seq;
	(*(int *) arg)++;
	return LSM_OK;
}

TEST(region_attach)
{
	size_t		size = (size_t) 4 << 20;
	int			fd = memfd_create("memtable", 0);
	uint8_t    *w,
			   *ro;
	lsm_memtable *mt,
			   *other;
	lsm_iiter  *a,
			   *b;
	lsm_err		e;
	uint64_t	rng = harness_seed();
	int			i,
				n = 0,
				na = 0,
				nb = 0;

	lsm_err_clear(&e);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t) size) == 0);
	w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ro = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(w != MAP_FAILED && ro != MAP_FAILED && w != ro);
	mt = lsm_memtable_format(w, size, NULL);
	CHECK(mt != NULL);
	CHECK_OK(lsm_memtable_filter_keys(mt, 64 << 10));
	CHECK_OK(lsm_memtable_index_values(mt, 1024, 2, 0));
	for (i = 0; i < 3000; i++)
	{
		char		k[16];
		int			kl = sprintf(k, "k%05d", (int) (harness_rand64(&rng) % 2000));
		void	   *row;
		size_t		rowlen;

		rg_row(&rng, -1, &row, &rowlen);
		CHECK_OK(lsm_memtable_add(mt, (uint64_t) i + 1, i % 7 ? LSM_KIND_PUT :
								  LSM_KIND_DEL, k, (size_t) kl, row, rowlen));
		free(row);
	}
	other = lsm_memtable_attach(ro, size, false, NULL, &e);
	CHECK_MSG(other != NULL, "attach: %s", e.msg);
	CHECK(lsm_memtable_check(other));
	CHECK_EQ_U(lsm_memtable_entries(other), 3000);
	CHECK_EQ_U(lsm_memtable_bytes(other), lsm_memtable_bytes(mt));
	/* the same versions, in the same order, at a snapshot */
	a = lsm_memtable_iter(mt, 2500, &e);
	b = lsm_memtable_iter(other, 2500, &e);
	CHECK(a != NULL && b != NULL);
	lsm_iiter_seek(a, NULL, 0);
	lsm_iiter_seek(b, NULL, 0);
	for (; a->valid; lsm_iiter_next(a), lsm_iiter_next(b))
	{
		CHECK(b->valid);
		CHECK_MEMEQ(a->key, a->klen, b->key, b->klen);
		CHECK_MEMEQ(a->val, a->vlen, b->val, b->vlen);
		CHECK_EQ_U(a->seq, b->seq);
		CHECK(lsm_memtable_may_hold_key(other, lsm_key_hash(b->key, b->klen)));
		n++;
	}
	CHECK(!b->valid);
	CHECK_GT(n, 1000);
	lsm_iiter_destroy(a);
	lsm_iiter_destroy(b);
	CHECK_OK(lsm_memtable_value_rows(mt, lsm_value_hash(0, "u7", 2), 2900,
									 rg_count, &na));
	CHECK_OK(lsm_memtable_value_rows(other, lsm_value_hash(0, "u7", 2), 2900,
									 rg_count, &nb));
	CHECK_EQ(na, nb);
	CHECK_GT(na, 0);
	lsm_memtable_unref(other);

	/* a small region fills up: LSM_NOMEM, and it still reads */
	{
		size_t		small = 64 << 10;
		uint8_t    *p = mmap(NULL, small, PROT_READ | PROT_WRITE,
							 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		lsm_memtable *sm;
		int			added = 0,
					rc = LSM_OK;

		CHECK(p != MAP_FAILED);
		sm = lsm_memtable_format(p, small, NULL);
		CHECK(sm != NULL);
		CHECK_OK(lsm_memtable_filter_keys(sm, 8 << 10));
		while (rc == LSM_OK)
		{
			char		k[16];
			int			kl = sprintf(k, "s%06d", added);

			rc = lsm_memtable_add(sm, (uint64_t) added + 1, LSM_KIND_PUT, k,
								  (size_t) kl, "value-value-value", 17);
			if (rc == LSM_OK)
				added++;
		}
		CHECK_RC(LSM_NOMEM, rc);
		CHECK_RC(LSM_NOMEM, lsm_memtable_reserve(sm, 1, 100, &e));
		CHECK(lsm_memtable_check(sm));
		CHECK_EQ_U(lsm_memtable_entries(sm), (size_t) added);
		CHECK_GT(added, 100);
		for (i = 0; i < added; i++)
		{
			char		k[16];
			int			kl = sprintf(k, "s%06d", i),
						kind;
			const uint8_t *v;
			size_t		vl;
			uint64_t	sq;

			CHECK(lsm_memtable_get(sm, k, (size_t) kl, UINT64_MAX, &kind, &v,
								   &vl, &sq));
		}
		lsm_memtable_unref(sm);
		munmap(p, small);
	}
	lsm_memtable_unref(mt);
	munmap(w, size);
	munmap(ro, size);
	close(fd);
}

/*
 * The blocks an external region asks its backing for: a reserved batch
 * gets blocks for its entries, not for the worst case of its value index
 * (several times the entries); and on a "disk" with no blocks left past
 * the entries', every entry still goes in, the index stops (value
 * searches scan) and nothing else breaks.
 */
typedef struct rb_disk
{
	size_t		asked;			/* the furthest reserve call */
	size_t		limit;			/* blocks to be had */
	int			calls;
} rb_disk;

static int
rb_reserve(void *arg, size_t upto, lsm_err *e)
{
	rb_disk    *d = arg;

	d->calls++;
	if (upto > d->limit)
		return lsm_err_set(e, LSM_NOSPACE, "no space left on device");
	if (upto > d->asked)
		d->asked = upto;
	return LSM_OK;
}

static void
rb_batch(lsm_memtable *mt, int entries, uint64_t *rng, size_t *bytes)
{
	int			i;

	for (i = 0, *bytes = 0; i < entries; i++)
	{
		char		k[16];
		int			kl = sprintf(k, "k%07d", i);
		void	   *row;
		size_t		rowlen;

		rg_row(rng, i, &row, &rowlen);
		if (mt != NULL)
			CHECK_OK(lsm_memtable_add(mt, (uint64_t) i + 1, LSM_KIND_PUT, k,
									  (size_t) kl, row, rowlen));
		*bytes += (size_t) kl + rowlen;
		free(row);
	}
}

TEST(region_blocks)
{
	size_t		size = (size_t) 256 << 20,
				bytes,
				before,
				must;
	int			entries = 100000,
				round;

	for (round = 0; round < 2; round++)
	{
		int			fd = memfd_create("memtable", 0);
		uint8_t    *w;
		rb_disk		d = {0, SIZE_MAX, 0};
		lsm_memtable_backing b = {NULL, rb_reserve, &d};
		lsm_memtable *mt;
		uint64_t	rng = harness_seed(),
					rng0 = rng;
		lsm_err		e;
		int			n = 0,
					rc;

		lsm_err_clear(&e);
		CHECK(fd >= 0 && ftruncate(fd, (off_t) size) == 0);
		w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		CHECK(w != MAP_FAILED);
		mt = lsm_memtable_format(w, size, &b);
		CHECK(mt != NULL);
		CHECK_OK(lsm_memtable_filter_keys(mt, 1 << 20));
		CHECK_OK(lsm_memtable_index_values(mt, 8192, 2, 0));
		rb_batch(NULL, entries, &rng, &bytes);	/* its size, first */
		rng = rng0;
		before = lsm_memtable_arena_bytes(mt);
		must = (size_t) entries * (8 * sizeof(uint64_t) + 12 * 4) + bytes;
		if (round == 1)
			d.limit = before + must + (64 << 10);	/* the entries', no more */
		CHECK_OK(lsm_memtable_reserve(mt, (size_t) entries, bytes, &e));
		CHECK_LE(d.asked, before + must + (before + must) / 8 + (2 << 20));
		rb_batch(mt, entries, &rng, &bytes);
		CHECK(lsm_memtable_check(mt));
		CHECK_EQ_U(lsm_memtable_entries(mt), (size_t) entries);
		rc = lsm_memtable_value_rows(mt, lsm_value_hash(0, "u7", 2), UINT64_MAX,
									 rg_count, &n);
		if (round == 0)
		{
			/*
			 * Blocks near what the memtable uses: past it, only the
			 * promise of the tallest node (and alignment) to every entry,
			 * and the blocks kept ahead (an eighth, or a step or two).
			 */
			CHECK_OK(rc);
			CHECK_GT(n, entries / 100);
			CHECK_LE(d.asked, lsm_memtable_arena_bytes(mt) * 9 / 8 +
					 (size_t) entries * (12 * 4 + 8) + (2 << 20));
		}
		else
		{
			/*
			 * The index stopped: searches scan this memtable.  Refused
			 * blocks ahead are not asked for again at every entry.
			 */
			CHECK_RC(LSM_NOTFOUND, rc);
			CHECK_LE(d.asked, d.limit);
			CHECK_LT(d.calls, 100);
		}
		lsm_memtable_unref(mt);
		munmap(w, size);
		close(fd);
	}
}

/*
 * One writer thread adds entries and publishes their sequence after each
 * (as db.c publishes applied_seq); reader threads, without locks, load the
 * published sequence and must find every entry up to it, by get, in
 * order by an iterator, and through the value index.
 */
#define CR_ENTRIES 20000
#define CR_READERS 2

typedef struct cr_state
{
	lsm_memtable *mt;
	uint64_t	published;
	int			done;
	uint64_t	checks[CR_READERS];
} cr_state;

static void *
cr_writer(void *arg)
{
	cr_state   *st = arg;
	uint64_t	i;

	for (i = 1; i <= CR_ENTRIES; i++)
	{
		char		k[16],
					v[16];
		int			kl = sprintf(k, "c%08" PRIu64, (i * 7919) % CR_ENTRIES),
					vl = sprintf(v, "v%" PRIu64, i);

		CHECK_OK(lsm_memtable_add(st->mt, i, LSM_KIND_PUT, k, (size_t) kl, v,
								  (size_t) vl));
		__atomic_store_n(&st->published, i, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

typedef struct cr_arg
{
	cr_state   *st;
	int			me;
} cr_arg;

static void *
cr_reader(void *arg)
{
	cr_state   *st = ((cr_arg *) arg)->st;
	int			me = ((cr_arg *) arg)->me;
	uint64_t	rng = 12345 + (uint64_t) me;

	while (!__atomic_load_n(&st->done, __ATOMIC_ACQUIRE))
	{
		uint64_t	snap = __atomic_load_n(&st->published, __ATOMIC_ACQUIRE);
		uint64_t	i;
		lsm_err		e;
		lsm_iiter  *it;
		size_t		seen = 0;
		const uint8_t *prev = NULL;
		size_t		prevlen = 0;

		if (snap == 0)
			continue;
		for (i = 0; i < 20; i++)
		{
			uint64_t	j = 1 + harness_rand64(&rng) % snap;
			char		k[16];
			int			kl = sprintf(k, "c%08" PRIu64, (j * 7919) % CR_ENTRIES),
						kind;
			const uint8_t *v;
			size_t		vl;
			uint64_t	sq;

			CHECK(lsm_memtable_may_hold_key(st->mt, lsm_key_hash(k, (size_t) kl)));
			CHECK_MSG(lsm_memtable_get(st->mt, k, (size_t) kl, snap, &kind, &v,
									   &vl, &sq), "entry %" PRIu64 " of %" PRIu64 " missing", j, snap);
		}
		lsm_err_clear(&e);
		it = lsm_memtable_iter(st->mt, snap, &e);
		CHECK(it != NULL);
		for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
		{
			if (prev)
				CHECK(lsm_key_cmp(prev, prevlen, it->key, it->klen) < 0);
			prev = it->key;
			prevlen = it->klen;
			seen++;
		}
		lsm_iiter_destroy(it);
		CHECK_EQ_U(seen, snap);
		st->checks[me]++;
	}
	return NULL;
}

TEST(concurrent_readers)
{
	cr_state	st;
	cr_arg		args[CR_READERS];
	pthread_t	w,
				r[CR_READERS];
	int			i;

	memset(&st, 0, sizeof(st));
	st.mt = lsm_memtable_new();
	CHECK(st.mt != NULL);
	CHECK_OK(lsm_memtable_filter_keys(st.mt, 64 << 10));
	for (i = 0; i < CR_READERS; i++)
	{
		args[i].st = &st;
		args[i].me = i;
		CHECK(pthread_create(&r[i], NULL, cr_reader, &args[i]) == 0);
	}
	CHECK(pthread_create(&w, NULL, cr_writer, &st) == 0);
	CHECK(pthread_join(w, NULL) == 0);
	for (i = 0; i < CR_READERS; i++)
		CHECK(pthread_join(r[i], NULL) == 0);
	CHECK(lsm_memtable_check(st.mt));
	printf("# reader rounds: %" PRIu64 ", %" PRIu64 "\n", st.checks[0],
		   st.checks[1]);
	lsm_memtable_unref(st.mt);
}

/*
 * Inserts from hints (lsm_memtable_locate, lsm_memtable_add_at) build the
 * same memtable as plain inserts, whatever the hints: located up to 40
 * inserts earlier (other writers' entries, other versions of the key, a
 * taller list since), located for a greater key (nodes at or after the
 * key: refused), or located in another memtable (ignored).
 */
#define LOCATED_N 6000
#define LOCATED_LAG 40

TEST(located_inserts)
{
	uint64_t	rnd = harness_seed();
	lsm_memtable *hinted = lsm_memtable_new();
	lsm_memtable *plain = lsm_memtable_new();
	lsm_memtable_hint *hints = calloc(LOCATED_N, sizeof(lsm_memtable_hint));
	uint8_t		(*keys)[4] = calloc(LOCATED_N, 4);
	size_t	   *klens = calloc(LOCATED_N, sizeof(size_t));
	static const uint8_t alphabet[] = {0x00, 0x01, 'a', 'b', 'c', 0xff};
	int			i,
				refused = 0,
				foreign = 0;

	CHECK(hinted != NULL && plain != NULL && hints && keys && klens);
	CHECK_OK(lsm_memtable_filter_keys(hinted, 64 << 10));
	CHECK_OK(lsm_memtable_filter_keys(plain, 64 << 10));
	for (i = 0; i < LOCATED_N; i++)
	{
		size_t		j;

		klens[i] = 1 + harness_rand64(&rnd) % 4;
		for (j = 0; j < klens[i]; j++)
			keys[i][j] = alphabet[harness_rand64(&rnd) % sizeof(alphabet)];
	}
	for (i = 0; i < LOCATED_N + LOCATED_LAG; i++)
	{
		int			k = i - LOCATED_LAG;	/* inserted now */
		int			l = i - (int) (harness_rand64(&rnd) % LOCATED_LAG);

		/* locate entry l (some time before it is inserted) */
		if (l >= 0 && l < LOCATED_N && hints[l].mt_id == 0)
		{
			int			how = (int) (harness_rand64(&rnd) % 10);
			int			g;

			if (how == 0)
			{
				/* in the other memtable: ignored */
				lsm_memtable_locate(plain, keys[l], klens[l], &hints[l]);
				foreign++;
			}
			else if (how == 1 && (g = l + 1) < LOCATED_N &&
					 lsm_key_cmp(keys[g], klens[g], keys[l], klens[l]) > 0)
			{
				/* for a greater key: some levels are past the key */
				lsm_memtable_locate(hinted, keys[g], klens[g], &hints[l]);
				refused++;
			}
			else
				lsm_memtable_locate(hinted, keys[l], klens[l], &hints[l]);
		}
		if (k < 0)
			continue;
		if (hints[k].mt_id == 0)
			lsm_memtable_locate(hinted, keys[k], klens[k], &hints[k]);
		{
			uint64_t	seq = (uint64_t) k + 1;
			int			kind = k % 5 == 4 ? LSM_KIND_DEL : LSM_KIND_PUT;
			char		val[16];
			size_t		vlen = kind == LSM_KIND_PUT ?
				(size_t) snprintf(val, sizeof(val), "v%d", k) : 0;

			CHECK_OK(lsm_memtable_add_at(hinted, seq, kind, keys[k], klens[k],
										 val, vlen, &hints[k]));
			CHECK_OK(lsm_memtable_add(plain, seq, kind, keys[k], klens[k],
									  val, vlen));
		}
	}
	CHECK(lsm_memtable_check(hinted));
	CHECK_EQ_U(lsm_memtable_entries(hinted), LOCATED_N);
	/* every key at a range of snapshots: the same version in both */
	for (i = 0; i < LOCATED_N; i += 7)
	{
		uint64_t	snap;

		for (snap = 0; snap <= LOCATED_N; snap += LOCATED_N / 8)
		{
			int			ka,
						kb;
			const uint8_t *va,
					   *vb;
			size_t		la,
						lb;
			uint64_t	sa,
						sb;
			bool		ga = lsm_memtable_get(hinted, keys[i], klens[i], snap,
											  &ka, &va, &la, &sa),
						gb = lsm_memtable_get(plain, keys[i], klens[i], snap,
											  &kb, &vb, &lb, &sb);

			CHECK_EQ(ga, gb);
			if (ga && gb)
			{
				CHECK_EQ_U(sa, sb);
				CHECK_EQ(ka, kb);
				CHECK_MEMEQ(va, la, vb, lb);
			}
		}
	}
	CHECK(foreign > 0 && refused > 0);
	free(hints);
	free(keys);
	free(klens);
	lsm_memtable_unref(hinted);
	lsm_memtable_unref(plain);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(key_order);
	RUN(empty);
	RUN(versions_and_snapshots);
	RUN(random_against_model);
	RUN(iter_tombstones);
	RUN(big_entries);
	RUN(many_entries);
	RUN(ascending_runs);
	RUN(stale_fingers);
	RUN(refcount_lifetime);
	RUN(merge_many_children);
	RUN(reverse_against_model);
	RUN(reverse_hidden_versions);
	RUN(merge_reverse_many_children);
	RUN(key_filter_no_false_negatives);
	RUN(value_index_against_scan);
	RUN(region_attach);
	RUN(region_blocks);
	RUN(concurrent_readers);
	RUN(located_inserts);
	return harness_done();
}

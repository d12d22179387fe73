/*
 * test_random.c
 *		Randomized test of the whole engine against an in-memory reference
 *		model.
 *
 * Each case drives one store through a few thousand random operations --
 * puts, deletes, mixed batches (with repeated keys), overwrites with new
 * rows, point gets of present and absent keys, multi-gets, seeks followed by
 * a few nexts, full scans, backward seeks (lsm_iter_reverse: to present
 * and absent keys, just before and after present ones, before the first,
 * after the last, NULL) followed by a few steps back, full backward scans,
 * value searches on fields 0 and 1, flushes, compactions (lsm_compact and
 * lsm_compact_all) and close + reopen -- and checks every answer against a
 * sorted array of key -> value that is updated alongside.  Answers must be
 * exact: the same keys in the same order (descending backwards) with the
 * same values, and for value search the same set of keys, each once, with
 * its newest value.
 *
 * The stores are configured small (8-32 KiB memtables, 4-16 KiB files,
 * level ratio 2-3) so a run spans many SSTables over several levels.  Keys
 * are 1..40 bytes from an alphabet heavy in 0x00 and 0xFF, including keys
 * that are prefixes of other keys.  Values are rows (lsm_row_encode) whose
 * fields 0 and 1 come from small domains, so many rows share a field value
 * and a value moves between SSTables as its rows are rewritten.
 *
 * While the operations run, an iterator (every third one a backward
 * one) is sometimes held open across later writes, flushes and compactions
 * and then compared with a copy of the model taken when it was opened (the
 * snapshot guarantee of lsm_iter_open); iterator_snapshot tests the same
 * thing deliberately, both ways.
 *
 * Every case derives its own seed from harness_seed(), which is printed;
 * LSM_TEST_SEED=<n> repeats a run (the case name on the command line runs
 * that case alone); LSM_TEST_TRACE=1 prints the number and kind of every
 * operation, to see where a failing run went wrong.
 */
#include "harness.h"

/* ---------------------------------------------------------------------- */
/* The reference model: a sorted array of key -> value. */

typedef struct ment
{
	uint8_t    *key;
	size_t		klen;
	uint8_t    *val;
	size_t		vlen;
} ment;

typedef struct model
{
	ment	   *e;
	size_t		n;
	size_t		cap;
} model;

/* Index of the first entry >= key; *found says whether it equals key. */
static size_t
model_lower_bound(const model *m, const void *key, size_t klen, int *found)
{
	size_t		lo = 0,
				hi = m->n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (harness_key_cmp(m->e[mid].key, m->e[mid].klen, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (found)
		*found = lo < m->n &&
			harness_key_cmp(m->e[lo].key, m->e[lo].klen, key, klen) == 0;
	return lo;
}

/* Sets key to a copy of val. */
static void
model_put(model *m, const void *key, size_t klen, const void *val, size_t vlen)
{
	int			found;
	size_t		i = model_lower_bound(m, key, klen, &found);

	if (found)
	{
		free(m->e[i].val);
		m->e[i].val = harness_dup_bytes(val, vlen);
		m->e[i].vlen = vlen;
		return;
	}
	if (m->n == m->cap)
	{
		m->cap = m->cap ? m->cap * 2 : 256;
		m->e = realloc(m->e, m->cap * sizeof(ment));
		if (m->e == NULL)
			harness_fail(__FILE__, __LINE__, "out of memory");
	}
	memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof(ment));
	m->e[i].key = harness_dup_bytes(key, klen);
	m->e[i].klen = klen;
	m->e[i].val = harness_dup_bytes(val, vlen);
	m->e[i].vlen = vlen;
	m->n++;
}

/* Removes key if present. */
static void
model_del(model *m, const void *key, size_t klen)
{
	int			found;
	size_t		i = model_lower_bound(m, key, klen, &found);

	if (!found)
		return;
	free(m->e[i].key);
	free(m->e[i].val);
	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(ment));
	m->n--;
}

/* The entry for key, or NULL. */
static const ment *
model_get(const model *m, const void *key, size_t klen)
{
	int			found;
	size_t		i = model_lower_bound(m, key, klen, &found);

	return found ? &m->e[i] : NULL;
}

/* Makes dst a deep copy of src (dst must be empty). */
static void
model_copy(model *dst, const model *src)
{
	size_t		i;

	dst->n = src->n;
	dst->cap = src->n ? src->n : 1;
	dst->e = malloc(dst->cap * sizeof(ment));
	if (dst->e == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	for (i = 0; i < src->n; i++)
	{
		dst->e[i].key = harness_dup_bytes(src->e[i].key, src->e[i].klen);
		dst->e[i].klen = src->e[i].klen;
		dst->e[i].val = harness_dup_bytes(src->e[i].val, src->e[i].vlen);
		dst->e[i].vlen = src->e[i].vlen;
	}
}

/* Releases everything the model holds and empties it. */
static void
model_free(model *m)
{
	size_t		i;

	for (i = 0; i < m->n; i++)
	{
		free(m->e[i].key);
		free(m->e[i].val);
	}
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------------- */
/* Random keys and rows. */

/* Key bytes: the edges of the byte range are overrepresented on purpose. */
static const uint8_t key_alphabet[] = {0x00, 0x00, 0x01, 'a', 'b', 'k', 'z',
0x7f, 0x80, 0xfe, 0xff, 0xff};

/* Field 0 and field 1 domains (binary and empty values included). */
static const char *const f0_domain[] = {"red", "green", "blue", "", "\xff\x00"};
static const size_t f0_lens[] = {3, 5, 4, 0, 2};
static const char *const f1_domain[] = {"1", "2", "3", "4", "5", "66", "\x00"};
static const size_t f1_lens[] = {1, 1, 1, 1, 1, 2, 1};

#define NF0 ((int) (sizeof(f0_lens) / sizeof(f0_lens[0])))
#define NF1 ((int) (sizeof(f1_lens) / sizeof(f1_lens[0])))
#define MAX_KEY 40

/* One test case's parameters. */
typedef struct rcase
{
	const char *name;
	uint64_t	seed_mix;		/* xored into harness_seed() */
	int			ops;
	int			npool;			/* distinct keys written */
	int			max_payload;	/* bytes of filler per row */
	int			reopen_toggle_bits; /* alternate key_bits_per_key 0/10 */
	lsm_options opt;
} rcase;

/* State of a running case. */
typedef struct rstate
{
	const rcase *c;
	uint64_t	rng;
	uint64_t	seed;
	char	   *dir;
	lsm_options opt;
	lsm_db	   *db;
	model		m;
	uint8_t   **pool;
	size_t	   *pool_len;
	int			npool;
	int			op;				/* index of the running operation */
	int			trace;

	/* an iterator held open across later operations */
	lsm_iter   *snap_it;
	model		snap;
	int			snap_due;		/* op at which it is checked */
	size_t		snap_pos;		/* index in snap it is positioned at;
								 * backwards, the number of entries at and
								 * before it */
	int			snap_positioned;
	int			snap_reverse;	/* it runs backwards */

	/* what the run covered */
	long		n_put,
				n_del,
				n_batch,
				n_get,
				n_mget,
				n_seek,
				n_scan,
				n_seek_back,
				n_scan_back,
				n_vsearch,
				n_vhits,
				n_flush,
				n_compact,
				n_reopen,
				n_snap,
				n_snap_back;
	int			max_files;
	int			max_levels;
} rstate;

/* Uniform in [0, n). */
static uint64_t
rnd(rstate *s, uint64_t n)
{
	return harness_rand64(&s->rng) % n;
}

/* Fills buf with a random key; returns its length (1..MAX_KEY). */
static size_t
random_key(rstate *s, uint8_t *buf)
{
	size_t		len,
				i;

	switch (rnd(s, 4))
	{
		case 0:
			len = 1 + rnd(s, 3);
			break;
		case 1:
			len = 1 + rnd(s, 8);
			break;
		default:
			len = 1 + rnd(s, MAX_KEY);
			break;
	}
	for (i = 0; i < len; i++)
		buf[i] = rnd(s, 4) == 0 ? (uint8_t) rnd(s, 256) :
			key_alphabet[rnd(s, sizeof(key_alphabet))];
	return len;
}

/* qsort comparator for pool entries (indexes into a parallel array). */
static const rstate *sort_state;

/* Orders pool indexes by their keys (qsort; sort_state names the pool). */
static int
pool_cmp(const void *a, const void *b)
{
	int			i = *(const int *) a;
	int			j = *(const int *) b;

	return harness_key_cmp(sort_state->pool[i], sort_state->pool_len[i],
						   sort_state->pool[j], sort_state->pool_len[j]);
}

/*
 * Builds the pool of keys the case writes: random keys, plus prefixes and
 * extensions of earlier ones (so prefix ordering is exercised), without
 * duplicates.
 */
static void
make_pool(rstate *s, int n)
{
	uint8_t   **keys = malloc(sizeof(uint8_t *) * n);
	size_t	   *lens = malloc(sizeof(size_t) * n);
	int		   *idx = malloc(sizeof(int) * n);
	int			i,
				out;

	if (keys == NULL || lens == NULL || idx == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	for (i = 0; i < n; i++)
	{
		uint8_t		buf[MAX_KEY + 8];
		size_t		len;

		if (i > 0 && rnd(s, 5) == 0)
		{
			int			j = (int) rnd(s, i);

			len = lens[j];
			memcpy(buf, keys[j], len);
			if (len > 1 && rnd(s, 2) == 0)
				len = 1 + rnd(s, len - 1);	/* a proper prefix */
			else if (len < MAX_KEY)
				buf[len++] = key_alphabet[rnd(s, sizeof(key_alphabet))];
		}
		else
			len = random_key(s, buf);
		keys[i] = harness_dup_bytes(buf, len);
		lens[i] = len;
		idx[i] = i;
	}
	s->pool = keys;
	s->pool_len = lens;
	sort_state = s;
	qsort(idx, n, sizeof(int), pool_cmp);
	/* keep one of each distinct key, in random order of generation */
	s->pool = malloc(sizeof(uint8_t *) * n);
	s->pool_len = malloc(sizeof(size_t) * n);
	if (s->pool == NULL || s->pool_len == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	out = 0;
	for (i = 0; i < n; i++)
	{
		int			k = idx[i];

		if (out > 0 && harness_key_cmp(s->pool[out - 1], s->pool_len[out - 1],
									   keys[k], lens[k]) == 0)
		{
			free(keys[k]);
			continue;
		}
		s->pool[out] = keys[k];
		s->pool_len[out] = lens[k];
		out++;
	}
	s->npool = out;
	free(keys);
	free(lens);
	free(idx);
}

/*
 * A random value: usually a row of 1..4 fields whose fields 0 and 1 come
 * from small domains (sometimes null), then filler; rarely an empty value,
 * which is no row at all.  Returns a malloc'ed buffer.
 */
static uint8_t *
random_value(rstate *s, size_t *vlen)
{
	lsm_field	f[4];
	uint8_t		fill[2][512];
	void	   *row;
	size_t		rowlen;
	uint8_t    *out;
	int			nf,
				i;

	if (rnd(s, 50) == 0)
	{
		*vlen = 0;
		return harness_dup_bytes("", 0);
	}
	nf = 1 + (int) rnd(s, 4);
	memset(f, 0, sizeof(f));
	for (i = 0; i < nf; i++)
	{
		if (rnd(s, 10) == 0)
		{
			f[i].is_null = 1;
			continue;
		}
		if (i == 0)
		{
			int			k = (int) rnd(s, NF0);

			f[i].data = f0_domain[k];
			f[i].len = f0_lens[k];
		}
		else if (i == 1)
		{
			int			k = (int) rnd(s, NF1);

			f[i].data = f1_domain[k];
			f[i].len = f1_lens[k];
		}
		else
		{
			size_t		n = rnd(s, (uint64_t) s->c->max_payload + 1),
						j;

			for (j = 0; j < n; j++)
				fill[i - 2][j] = (uint8_t) rnd(s, 256);
			f[i].data = fill[i - 2];
			f[i].len = n;
		}
	}
	CHECK_OK(lsm_row_encode(f, nf, &row, &rowlen));
	out = harness_dup_bytes(row, rowlen);
	lsm_free(row);
	*vlen = rowlen;
	return out;
}

/* A key for reading: mostly from the pool, sometimes fresh (likely absent). */
static size_t
pick_key(rstate *s, uint8_t *buf)
{
	if (rnd(s, 4) == 0)
		return random_key(s, buf);
	else
	{
		int			i = (int) rnd(s, s->npool);

		memcpy(buf, s->pool[i], s->pool_len[i]);
		return s->pool_len[i];
	}
}

/* ---------------------------------------------------------------------- */
/* Checks against the model. */

/* Formats a key in hex for diagnostics. */
static const char *
hexkey(const void *k, size_t n, char *buf)
{
	return harness_hex(k, n, buf);
}

#define FAILOP(s, ...) \
	do { \
		harness_note(__FILE__, __LINE__, "case %s seed %" PRIu64 " op %d", \
					 (s)->c->name, (s)->seed, (s)->op); \
		harness_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* The engine's answer for key must be the model's. */
static void
check_get(rstate *s, const uint8_t *key, size_t klen)
{
	const ment *e = model_get(&s->m, key, klen);
	void	   *val = NULL;
	size_t		vlen = 0;
	int			rc = lsm_get(s->db, key, klen, &val, &vlen);
	char		hb[100];

	s->n_get++;
	if (e == NULL)
	{
		if (rc != LSM_NOTFOUND)
			FAILOP(s, "get %s: expected NOTFOUND, got %d (%s) %s",
				   hexkey(key, klen, hb), rc, lsm_strerror(rc),
				   lsm_errmsg(s->db));
		return;
	}
	if (rc != LSM_OK)
		FAILOP(s, "get %s: expected a value, got %d (%s) %s",
			   hexkey(key, klen, hb), rc, lsm_strerror(rc), lsm_errmsg(s->db));
	if (vlen != e->vlen || (vlen > 0 && memcmp(val, e->val, vlen) != 0))
		FAILOP(s, "get %s: wrong value (%zu bytes, expected %zu)",
			   hexkey(key, klen, hb), vlen, e->vlen);
	CHECK(((const uint8_t *) val)[vlen] == '\0');
	lsm_free(val);
}

/* lsm_multi_get of n random keys (duplicates allowed). */
static void
check_multi_get(rstate *s)
{
	enum
	{
		MAXN = 40
	};
	uint8_t		keys[MAXN][MAX_KEY + 8];
	const void *kp[MAXN];
	size_t		klens[MAXN],
				vlens[MAXN];
	void	   *vals[MAXN];
	int			rcs[MAXN];
	int			n = 1 + (int) rnd(s, MAXN),
				i;
	char		hb[100];

	for (i = 0; i < n; i++)
	{
		if (i > 0 && rnd(s, 8) == 0)
		{
			int			j = (int) rnd(s, i);

			memcpy(keys[i], keys[j], klens[j]);
			klens[i] = klens[j];
		}
		else
			klens[i] = pick_key(s, keys[i]);
		kp[i] = keys[i];
	}
	CHECK_DB_OK(s->db, lsm_multi_get(s->db, n, kp, klens, vals, vlens, rcs));
	s->n_mget++;
	for (i = 0; i < n; i++)
	{
		const ment *e = model_get(&s->m, keys[i], klens[i]);

		if (e == NULL)
		{
			if (rcs[i] != LSM_NOTFOUND)
				FAILOP(s, "multi_get[%d] %s: expected NOTFOUND, got %d (%s)",
					   i, hexkey(keys[i], klens[i], hb), rcs[i],
					   lsm_strerror(rcs[i]));
			continue;
		}
		if (rcs[i] != LSM_OK)
			FAILOP(s, "multi_get[%d] %s: expected a value, got %d (%s)",
				   i, hexkey(keys[i], klens[i], hb), rcs[i],
				   lsm_strerror(rcs[i]));
		if (vlens[i] != e->vlen ||
			(e->vlen > 0 && memcmp(vals[i], e->val, e->vlen) != 0))
			FAILOP(s, "multi_get[%d] %s: wrong value",
				   i, hexkey(keys[i], klens[i], hb));
		lsm_free(vals[i]);
	}
}

/*
 * The iterator, positioned, must yield m's entries from index pos on: at
 * most `steps` of them (all if steps < 0), then (if it reached the end of
 * m) be invalid.
 */
static void
check_iter_from(rstate *s, lsm_iter *it, const model *m, size_t pos,
				long steps, const char *what)
{
	long		k;
	char		ha[100],
				hb[100];

	for (k = 0; steps < 0 || k < steps; k++, pos++)
	{
		const void *key,
				   *val;
		size_t		klen,
					vlen;

		if (pos >= m->n)
		{
			if (lsm_iter_valid(it))
			{
				key = lsm_iter_key(it, &klen);
				FAILOP(s, "%s: iterator has %s past the model's end (%zu entries)",
					   what, hexkey(key, klen, ha), m->n);
			}
			if (lsm_iter_status(it) != LSM_OK)
				FAILOP(s, "%s: iterator status %d (%s)", what,
					   lsm_iter_status(it), lsm_strerror(lsm_iter_status(it)));
			return;
		}
		if (!lsm_iter_valid(it))
			FAILOP(s, "%s: iterator ended (status %d %s) at index %zu of %zu, "
				   "expected %s", what, lsm_iter_status(it),
				   lsm_strerror(lsm_iter_status(it)), pos, m->n,
				   hexkey(m->e[pos].key, m->e[pos].klen, hb));
		key = lsm_iter_key(it, &klen);
		val = lsm_iter_value(it, &vlen);
		if (harness_key_cmp(key, klen, m->e[pos].key, m->e[pos].klen) != 0)
			FAILOP(s, "%s: index %zu: iterator key %s, expected %s", what, pos,
				   hexkey(key, klen, ha),
				   hexkey(m->e[pos].key, m->e[pos].klen, hb));
		if (vlen != m->e[pos].vlen ||
			(vlen > 0 && memcmp(val, m->e[pos].val, vlen) != 0))
			FAILOP(s, "%s: index %zu key %s: wrong value (%zu bytes, expected %zu)",
				   what, pos, hexkey(key, klen, ha), vlen, m->e[pos].vlen);
		lsm_iter_next(it);
	}
}

/*
 * The iterator, positioned, must yield m's entries from index pos on through
 * lsm_iter_batch, each batch's entries intact until the next batch: every
 * entry (or, with a limit, at least limit of them), and then, having
 * reached the end of m, be invalid.
 */
static void
check_batches_from(rstate *s, lsm_iter *it, const model *m, size_t pos,
				   long limit, const char *what)
{
	const lsm_entry *e;
	int			n,
				j;
	char		ha[100],
				hb[100];

	while ((limit < 0 || (long) pos < limit) && (n = lsm_iter_batch(it, &e)) > 0)
		for (j = 0; j < n; j++, pos++)
		{
			if (pos >= m->n)
				FAILOP(s, "%s: batch has %s past the model's end (%zu entries)",
					   what, hexkey(e[j].key, e[j].klen, ha), m->n);
			if (harness_key_cmp(e[j].key, e[j].klen,
								m->e[pos].key, m->e[pos].klen) != 0)
				FAILOP(s, "%s: index %zu: batch key %s, expected %s", what, pos,
					   hexkey(e[j].key, e[j].klen, ha),
					   hexkey(m->e[pos].key, m->e[pos].klen, hb));
			if (e[j].vlen != m->e[pos].vlen ||
				(e[j].vlen > 0 && memcmp(e[j].val, m->e[pos].val, e[j].vlen) != 0))
				FAILOP(s, "%s: index %zu key %s: wrong value in batch", what, pos,
					   hexkey(e[j].key, e[j].klen, ha));
		}
	if (lsm_iter_status(it) != LSM_OK)
		FAILOP(s, "%s: iterator status %d (%s)", what, lsm_iter_status(it),
			   lsm_strerror(lsm_iter_status(it)));
	if (limit < 0 && pos != m->n)
		FAILOP(s, "%s: batches ended at index %zu of %zu", what, pos, m->n);
	/* the iterator stands on the entry after the last batch */
	check_iter_from(s, it, m, pos, 1, what);
}

/* A full scan must equal the model exactly, entry by entry and in batches. */
static void
check_scan(rstate *s)
{
	lsm_iter   *it;

	CHECK_DB_OK(s->db, lsm_iter_open(s->db, &it));
	CHECK(!lsm_iter_valid(it)); /* unpositioned until the first seek */
	lsm_iter_seek(it, NULL, 0);
	check_iter_from(s, it, &s->m, 0, -1, "full scan");
	lsm_iter_seek(it, NULL, 0);
	check_batches_from(s, it, &s->m, 0, -1, "full scan in batches");
	lsm_iter_close(it);
	s->n_scan++;
}

/* Seek to a random key (present or absent), then a few nexts. */
static void
check_seek(rstate *s)
{
	uint8_t		key[MAX_KEY + 8];
	size_t		klen = pick_key(s, key);
	lsm_iter   *it;
	int			reps = 1 + (int) rnd(s, 3),
				r;

	if (rnd(s, 3) == 0 && klen > 1)
	{
		/* just before or after a stored key */
		if (rnd(s, 2) == 0)
			klen--;
		else
			key[klen - 1] ^= 0x01;
	}
	else if (rnd(s, 10) == 0)
		klen = 0;				/* the empty key: before every key */
	CHECK_DB_OK(s->db, lsm_iter_open(s->db, &it));
	for (r = 0; r < reps; r++)
	{
		size_t		pos = model_lower_bound(&s->m, key, klen, NULL);

		lsm_iter_seek(it, key, klen);
		if (rnd(s, 4) == 0)
			check_batches_from(s, it, &s->m, pos, (long) (pos + rnd(s, 600)),
							   "seek, then batches");
		else
			check_iter_from(s, it, &s->m, pos, (long) rnd(s, 20), "seek");
		/* the same iterator may seek again, backwards too */
		klen = pick_key(s, key);
	}
	lsm_iter_close(it);
	s->n_seek++;
}

/*
 * The backward iterator, positioned, must yield m's entries from index
 * pos - 1 down (pos counts the entries at and before its position: 0 is
 * before the first): at most `steps` of them (all if steps < 0), then (if
 * it went past the first) be invalid.
 */
static void
check_iter_back_from(rstate *s, lsm_iter *it, const model *m, size_t pos,
					 long steps, const char *what)
{
	long		k;
	char		ha[100],
				hb[100];

	for (k = 0; steps < 0 || k < steps; k++, pos--)
	{
		const ment *e;
		const void *key,
				   *val;
		size_t		klen,
					vlen;

		if (pos == 0)
		{
			if (lsm_iter_valid(it))
			{
				key = lsm_iter_key(it, &klen);
				FAILOP(s, "%s: iterator has %s before the model's first key "
					   "(%zu entries)", what, hexkey(key, klen, ha), m->n);
			}
			if (lsm_iter_status(it) != LSM_OK)
				FAILOP(s, "%s: iterator status %d (%s)", what,
					   lsm_iter_status(it), lsm_strerror(lsm_iter_status(it)));
			return;
		}
		e = &m->e[pos - 1];
		if (!lsm_iter_valid(it))
			FAILOP(s, "%s: iterator ended (status %d %s) at index %zu of %zu "
				   "(going back), expected %s", what, lsm_iter_status(it),
				   lsm_strerror(lsm_iter_status(it)), pos - 1, m->n,
				   hexkey(e->key, e->klen, hb));
		key = lsm_iter_key(it, &klen);
		val = lsm_iter_value(it, &vlen);
		if (harness_key_cmp(key, klen, e->key, e->klen) != 0)
			FAILOP(s, "%s: index %zu (going back): iterator key %s, "
				   "expected %s", what, pos - 1, hexkey(key, klen, ha),
				   hexkey(e->key, e->klen, hb));
		if (vlen != e->vlen || (vlen > 0 && memcmp(val, e->val, vlen) != 0))
			FAILOP(s, "%s: index %zu key %s (going back): wrong value (%zu "
				   "bytes, expected %zu)", what, pos - 1,
				   hexkey(key, klen, ha), vlen, e->vlen);
		lsm_iter_next(it);
	}
}

/* Number of m's entries <= key (all if key is NULL). */
static size_t
model_count_le(const model *m, const void *key, size_t klen)
{
	int			found;
	size_t		i;

	if (key == NULL)
		return m->n;
	i = model_lower_bound(m, key, klen, &found);
	return found ? i + 1 : i;
}

/*
 * A target for a backward seek, into key (MAX_KEY + 8 bytes): a present
 * key, a pool key (present or absent) or a fresh one, a present key with a
 * NUL added (just after it), its last byte changed or its end cut off
 * (between keys), the empty key or the first key cut short (before every
 * key), the last key with a byte added or 0xFF bytes longer than any key
 * (after every key), or NULL.  Returns NULL or key, and the length in
 * *klen.
 */
static const uint8_t *
pick_back_target(rstate *s, uint8_t *key, size_t *klen)
{
	const model *m = &s->m;
	const ment *e = m->n > 0 ? &m->e[rnd(s, m->n)] : NULL;
	int			r = (int) rnd(s, 14);

	if (e == NULL && r >= 3)
		r = 13;
	switch (r)
	{
		case 0:
			*klen = 0;
			return NULL;
		case 1:
			*klen = 0;			/* the empty key */
			return key;
		case 2:
			*klen = MAX_KEY + 4;
			memset(key, 0xff, *klen);
			return key;
		case 3:
			e = &m->e[0];		/* a prefix of the first key sorts first */
			*klen = e->klen > 1 ? 1 + rnd(s, e->klen - 1) : 0;
			memcpy(key, e->key, *klen);
			return key;
		case 4:
			e = &m->e[m->n - 1];
			memcpy(key, e->key, e->klen);
			key[e->klen] = rnd(s, 2) ? 0x00 : 0xff;
			*klen = e->klen + 1;
			return key;
		case 5:
			memcpy(key, e->key, e->klen);
			key[e->klen] = 0x00;
			*klen = e->klen + 1;
			return key;
		case 6:
			memcpy(key, e->key, e->klen);
			key[e->klen - 1] ^= (uint8_t) (1 + rnd(s, 255));
			*klen = e->klen;
			return key;
		case 7:
			memcpy(key, e->key, e->klen);
			*klen = e->klen > 1 ? e->klen - 1 : e->klen;
			return key;
		case 8:
		case 9:
		case 10:
			memcpy(key, e->key, e->klen);
			*klen = e->klen;
			return key;
		default:
			*klen = pick_key(s, key);
			return key;
	}
}

/*
 * A backward iterator: seek back to a random target, then a few steps
 * back; the same iterator may seek again.
 */
static void
check_seek_back(rstate *s)
{
	uint8_t		key[MAX_KEY + 8];
	size_t		klen;
	const uint8_t *target;
	lsm_iter   *it;
	int			reps = 1 + (int) rnd(s, 3),
				r;

	CHECK_DB_OK(s->db, lsm_iter_open(s->db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	CHECK(!lsm_iter_valid(it));
	for (r = 0; r < reps; r++)
	{
		target = pick_back_target(s, key, &klen);
		lsm_iter_seek(it, target, klen);
		check_iter_back_from(s, it, &s->m, model_count_le(&s->m, target, klen),
							 1 + (long) rnd(s, 20), "seek back");
	}
	lsm_iter_close(it);
	s->n_seek_back++;
}

/* A full backward scan must equal the model exactly, last key first. */
static void
check_scan_back(rstate *s)
{
	lsm_iter   *it;

	CHECK_DB_OK(s->db, lsm_iter_open(s->db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	check_iter_back_from(s, it, &s->m, s->m.n, -1, "full backward scan");
	lsm_iter_close(it);
	s->n_scan_back++;
}

/* Collected value-search hit. */
typedef struct hit
{
	uint8_t    *key;
	size_t		klen;
	uint8_t    *val;
	size_t		vlen;
} hit;

/* Orders value-search hits by key (qsort). */
static int
hit_cmp(const void *a, const void *b)
{
	const hit  *x = a;
	const hit  *y = b;

	return harness_key_cmp(x->key, x->klen, y->key, y->klen);
}

/*
 * lsm_value_search must return exactly the model's rows whose field equals
 * val: each once, with its newest value.
 */
static void
check_value_search_one(rstate *s, lsm_db *db, const model *m, int field,
					   const void *val, size_t vlen)
{
	lsm_iter   *it;
	hit		   *hits = NULL;
	size_t		nhits = 0,
				cap = 0,
				i,
				j;
	char		ha[100],
				hb[100];

	CHECK_DB_OK(db, lsm_value_search(db, field, val, vlen, &it));
	while (lsm_iter_valid(it))
	{
		const void *k,
				   *v;
		size_t		kn,
					vn;

		k = lsm_iter_key(it, &kn);
		v = lsm_iter_value(it, &vn);
		if (nhits == cap)
		{
			cap = cap ? cap * 2 : 64;
			hits = realloc(hits, cap * sizeof(hit));
			if (hits == NULL)
				harness_fail(__FILE__, __LINE__, "out of memory");
		}
		hits[nhits].key = harness_dup_bytes(k, kn);
		hits[nhits].klen = kn;
		hits[nhits].val = harness_dup_bytes(v, vn);
		hits[nhits].vlen = vn;
		nhits++;
		lsm_iter_next(it);
	}
	if (lsm_iter_status(it) != LSM_OK)
		FAILOP(s, "value search field %d: status %d (%s)", field,
			   lsm_iter_status(it), lsm_strerror(lsm_iter_status(it)));
	lsm_iter_close(it);
	if (nhits > 1)
		qsort(hits, nhits, sizeof(hit), hit_cmp);

	/* walk the model's matches and the sorted hits together */
	j = 0;
	for (i = 0; i < m->n; i++)
	{
		const ment *e = &m->e[i];

		if (!harness_row_matches(e->val, e->vlen, field, val, vlen))
			continue;
		if (j >= nhits)
			FAILOP(s, "value search field %d = %s: missing key %s "
				   "(%zu hits)", field, hexkey(val, vlen, hb),
				   hexkey(e->key, e->klen, ha), nhits);
		if (harness_key_cmp(hits[j].key, hits[j].klen, e->key, e->klen) != 0)
		{
			if (j > 0 && harness_key_cmp(hits[j].key, hits[j].klen,
										 hits[j - 1].key, hits[j - 1].klen) == 0)
				FAILOP(s, "value search field %d = %s: key %s returned twice",
					   field, hexkey(val, vlen, hb),
					   hexkey(hits[j].key, hits[j].klen, ha));
			if (harness_key_cmp(hits[j].key, hits[j].klen, e->key, e->klen) < 0)
				FAILOP(s, "value search field %d = %s: extra key %s "
					   "(value %s)", field, hexkey(val, vlen, hb),
					   hexkey(hits[j].key, hits[j].klen, ha),
					   model_get(m, hits[j].key, hits[j].klen) ?
					   "stale or not matching" : "deleted or never written");
			FAILOP(s, "value search field %d = %s: missing key %s",
				   field, hexkey(val, vlen, hb), hexkey(e->key, e->klen, ha));
		}
		if (hits[j].vlen != e->vlen ||
			(e->vlen > 0 && memcmp(hits[j].val, e->val, e->vlen) != 0))
			FAILOP(s, "value search field %d = %s: key %s has a stale value",
				   field, hexkey(val, vlen, hb), hexkey(e->key, e->klen, ha));
		j++;
	}
	if (j < nhits)
		FAILOP(s, "value search field %d = %s: extra key %s (%s)",
			   field, hexkey(val, vlen, hb),
			   hexkey(hits[j].key, hits[j].klen, ha),
			   j > 0 && harness_key_cmp(hits[j].key, hits[j].klen,
										hits[j - 1].key,
										hits[j - 1].klen) == 0 ? "returned twice" :
			   model_get(m, hits[j].key, hits[j].klen) ?
			   "stale or not matching" : "deleted or never written");
	s->n_vsearch++;
	s->n_vhits += (long) nhits;
	for (i = 0; i < nhits; i++)
	{
		free(hits[i].key);
		free(hits[i].val);
	}
	free(hits);
}

/* A value search on field 0 or 1 for a domain value (or one outside it). */
static void
check_value_search(rstate *s)
{
	int			field = (int) rnd(s, 2);
	int			r = (int) rnd(s, 12);

	if (r == 0)
		check_value_search_one(s, s->db, &s->m, field, "absent", 6);
	else if (r == 1)
		check_value_search_one(s, s->db, &s->m, 2 + (int) rnd(s, 3), "", 0);
	else if (field == 0)
	{
		int			k = (int) rnd(s, NF0);

		check_value_search_one(s, s->db, &s->m, 0, f0_domain[k], f0_lens[k]);
	}
	else
	{
		int			k = (int) rnd(s, NF1);

		check_value_search_one(s, s->db, &s->m, 1, f1_domain[k], f1_lens[k]);
	}
}

/* ---------------------------------------------------------------------- */
/* The held-open iterator. */

/*
 * Opens an iterator (every third one a backward one) to be checked some
 * operations later.
 */
static void
snap_open(rstate *s)
{
	CHECK_DB_OK(s->db, lsm_iter_open(s->db, &s->snap_it));
	model_copy(&s->snap, &s->m);
	s->snap_due = s->op + 1 + (int) rnd(s, 300);
	s->snap_positioned = 0;
	s->snap_reverse = s->n_snap % 3 == 1;
	if (s->snap_reverse)
	{
		CHECK_OK(lsm_iter_reverse(s->snap_it));
		if (rnd(s, 2) == 0)
		{
			uint8_t		key[MAX_KEY + 8];
			size_t		klen;
			const uint8_t *target = pick_back_target(s, key, &klen);

			/* position it now; the rest is read after the writes */
			s->snap_pos = model_count_le(&s->snap, target, klen);
			lsm_iter_seek(s->snap_it, target, klen);
			check_iter_back_from(s, s->snap_it, &s->snap, s->snap_pos, 1,
								 "held backward iterator, before writes");
			if (s->snap_pos > 0)
				s->snap_pos--;
			s->snap_positioned = 1;
		}
	}
	else if (rnd(s, 2) == 0)
	{
		uint8_t		key[MAX_KEY + 8];
		size_t		klen = pick_key(s, key);

		/* position it now; the rest is read after the writes */
		s->snap_pos = model_lower_bound(&s->snap, key, klen, NULL);
		lsm_iter_seek(s->snap_it, key, klen);
		check_iter_from(s, s->snap_it, &s->snap, s->snap_pos, 1,
						"held iterator, before writes");
		if (s->snap_pos < s->snap.n)
			s->snap_pos++;
		s->snap_positioned = 1;
	}
}

/* Checks the held iterator against the model as of its opening; closes it. */
static void
snap_check(rstate *s)
{
	if (s->snap_it == NULL)
		return;
	if (s->snap_reverse)
	{
		if (s->snap_positioned)
			check_iter_back_from(s, s->snap_it, &s->snap, s->snap_pos, -1,
								 "held backward iterator, continued after "
								 "writes");
		lsm_iter_seek(s->snap_it, NULL, 0);
		check_iter_back_from(s, s->snap_it, &s->snap, s->snap.n, -1,
							 "held backward iterator, rescanned after writes");
		s->n_snap_back++;
	}
	else
	{
		if (s->snap_positioned)
			check_iter_from(s, s->snap_it, &s->snap, s->snap_pos, -1,
							"held iterator, continued after writes");
		lsm_iter_seek(s->snap_it, NULL, 0);
		check_iter_from(s, s->snap_it, &s->snap, 0, -1,
						"held iterator, rescanned after writes");
	}
	lsm_iter_close(s->snap_it);
	s->snap_it = NULL;
	model_free(&s->snap);
	s->n_snap++;
}

/* ---------------------------------------------------------------------- */
/* Operations. */

/* Records the store's shape (files per level) for the coverage summary. */
static void
note_shape(rstate *s)
{
	lsm_stats	st;
	int			l,
				files = 0,
				levels = 0;

	CHECK_DB_OK(s->db, lsm_get_stats(s->db, &st));
	for (l = 0; l < st.levels && l < LSM_MAX_LEVELS; l++)
	{
		files += st.level[l].files;
		if (st.level[l].files > 0)
			levels++;
	}
	if (files > s->max_files)
		s->max_files = files;
	if (levels > s->max_levels)
		s->max_levels = levels;
}

/* Opens the store with the case's options (and the current bits/key). */
static void
do_open(rstate *s)
{
	int			rc = lsm_open(s->dir, &s->opt, &s->db);

	if (rc != LSM_OK)
		FAILOP(s, "lsm_open: %d (%s) %s", rc, lsm_strerror(rc),
			   lsm_errmsg(NULL));
}

/* Close and reopen, verifying the store and the whole content. */
static void
do_reopen(rstate *s)
{
	snap_check(s);
	CHECK_DB_OK(s->db, lsm_close(s->db));
	s->db = NULL;
	if (s->c->reopen_toggle_bits)
		s->opt.key_bits_per_key = s->opt.key_bits_per_key ? 0 : 10;
	do_open(s);
	CHECK_DB_OK(s->db, lsm_verify(s->db));
	check_scan(s);
	s->n_reopen++;
}

/*
 * lsm_compact_all: afterwards every table is in one level (not level 0),
 * the memtable is empty, and a lookup consults one table at most.
 */
static void
do_compact_all(rstate *s)
{
	lsm_stats	st;
	int			l,
				levels = 0;

	CHECK_DB_OK(s->db, lsm_compact_all(s->db));
	CHECK_DB_OK(s->db, lsm_get_stats(s->db, &st));
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		levels += st.level[l].files > 0;
	if (levels > 1 || st.level[0].files > 0 || st.memtable_entries > 0)
		FAILOP(s, "after lsm_compact_all: %d levels with tables, %d in level 0, "
			   "%" PRIu64 " memtable entries", levels, st.level[0].files,
			   st.memtable_entries);
	if (s->m.n > 0)
	{
		const ment *e = &s->m.e[rnd(s, s->m.n)];

		lsm_reset_counters(s->db);
		check_get(s, e->key, e->klen);
		CHECK_DB_OK(s->db, lsm_get_stats(s->db, &st));
		if (st.sstable_reads > 1 || st.filter_probes > 1)
			FAILOP(s, "after lsm_compact_all a get searched %" PRIu64
				   " tables and probed %" PRIu64 " filters", st.sstable_reads,
				   st.filter_probes);
	}
	s->n_compact++;
}

/* Writes key = a new value, in the store and the model. */
static void
do_put(rstate *s)
{
	int			i = (int) rnd(s, s->npool);
	size_t		vlen;
	uint8_t    *val = random_value(s, &vlen);
	int			rc;

	rc = lsm_put(s->db, s->pool[i], s->pool_len[i], val, vlen);
	if (rc != LSM_OK)
		FAILOP(s, "put: %d (%s) %s", rc, lsm_strerror(rc), lsm_errmsg(s->db));
	model_put(&s->m, s->pool[i], s->pool_len[i], val, vlen);
	free(val);
	s->n_put++;
	if (rnd(s, 4) == 0)
		check_get(s, s->pool[i], s->pool_len[i]);
}

/* Deletes a key: usually one that is present, else any pool key. */
static void
do_delete(rstate *s)
{
	uint8_t		key[MAX_KEY + 8];
	size_t		klen;
	int			rc;

	if (s->m.n > 0 && rnd(s, 3) != 0)
	{
		const ment *e = &s->m.e[rnd(s, s->m.n)];

		memcpy(key, e->key, e->klen);
		klen = e->klen;
	}
	else
	{
		int			i = (int) rnd(s, s->npool);

		memcpy(key, s->pool[i], s->pool_len[i]);
		klen = s->pool_len[i];
	}
	rc = lsm_delete(s->db, key, klen);
	if (rc != LSM_OK)
		FAILOP(s, "delete: %d (%s) %s", rc, lsm_strerror(rc),
			   lsm_errmsg(s->db));
	model_del(&s->m, key, klen);
	s->n_del++;
	if (rnd(s, 4) == 0)
		check_get(s, key, klen);
}

/* One entry of a batch, kept to apply to the model after the write. */
typedef struct bop
{
	int			key;			/* pool index */
	int			del;
	uint8_t    *val;
	size_t		vlen;
} bop;

/*
 * A batch of 1..24 mixed puts and deletes (keys may repeat inside it: the
 * later entry wins); sometimes written twice, or cleared and refilled.
 */
static void
do_batch(rstate *s)
{
	enum
	{
		MAXOPS = 24
	};
	lsm_batch  *b = lsm_batch_new();
	bop			ops[MAXOPS];
	int			rounds = rnd(s, 8) == 0 ? 2 : 1,
				r;

	CHECK(b != NULL);
	for (r = 0; r < rounds; r++)
	{
		int			n = 1 + (int) rnd(s, MAXOPS),
					k,
					rc;

		lsm_batch_clear(b);
		CHECK_EQ_U(lsm_batch_count(b), 0);
		for (k = 0; k < n; k++)
		{
			bop		   *o = &ops[k];

			o->key = k > 0 && rnd(s, 5) == 0 ? ops[k - 1].key :
				(int) rnd(s, s->npool);
			o->del = rnd(s, 4) == 0;
			o->val = NULL;
			o->vlen = 0;
			if (o->del)
				CHECK_OK(lsm_batch_delete(b, s->pool[o->key],
										  s->pool_len[o->key]));
			else
			{
				o->val = random_value(s, &o->vlen);
				CHECK_OK(lsm_batch_put(b, s->pool[o->key], s->pool_len[o->key],
									   o->val, o->vlen));
			}
		}
		CHECK_EQ_U(lsm_batch_count(b), (size_t) n);
		rc = lsm_write(s->db, b);
		if (rc != LSM_OK)
			FAILOP(s, "batch write: %d (%s) %s", rc, lsm_strerror(rc),
				   lsm_errmsg(s->db));
		if (rnd(s, 10) == 0)
		{
			/* the batch is not consumed: writing it again changes nothing */
			rc = lsm_write(s->db, b);
			if (rc != LSM_OK)
				FAILOP(s, "batch rewrite: %d (%s) %s", rc, lsm_strerror(rc),
					   lsm_errmsg(s->db));
		}
		for (k = 0; k < n; k++)
		{
			bop		   *o = &ops[k];

			if (o->del)
				model_del(&s->m, s->pool[o->key], s->pool_len[o->key]);
			else
				model_put(&s->m, s->pool[o->key], s->pool_len[o->key],
						  o->val, o->vlen);
			free(o->val);
		}
		for (k = 0; k < n; k++)
			if (rnd(s, 8) == 0)
				check_get(s, s->pool[ops[k].key], s->pool_len[ops[k].key]);
	}
	/* an empty batch is a no-op */
	lsm_batch_clear(b);
	CHECK_OK(lsm_write(s->db, b));
	lsm_batch_free(b);
	s->n_batch++;
}

/* The kind of operation run_case picks for a draw r in [0, 1000). */
static const char *
op_name(int r)
{
	static const struct
	{
		int			below;
		const char *name;
	}			kinds[] = {
		{300, "put"}, {400, "delete"}, {500, "batch"}, {650, "get"},
		{690, "multi-get"}, {750, "seek"}, {800, "seek back"}, {812, "scan"},
		{820, "backward scan"}, {885, "value search"}, {905, "flush"},
		{913, "compact"}, {915, "compact all"}, {923, "reopen"},
		{935, "hold an iterator"}, {940, "refresh"}, {1000, "put"}
	};
	size_t		i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (r < kinds[i].below)
			return kinds[i].name;
	return "?";
}

/* Runs one case to the end. */
static void
run_case(const rcase *c)
{
	rstate		s;
	uint8_t		key[MAX_KEY + 8];
	size_t		klen;
	int			i;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.seed = harness_seed() ^ c->seed_mix;
	s.rng = s.seed;
	s.opt = c->opt;
	s.trace = getenv("LSM_TEST_TRACE") != NULL;
	printf("# case %s: seed %" PRIu64 ", %d ops, memtable %zu, file %zu, "
		   "bits/key %d, sync %d\n", c->name, s.seed, c->ops,
		   c->opt.memtable_bytes, c->opt.file_bytes, c->opt.key_bits_per_key,
		   c->opt.sync);
	s.dir = harness_tmpdir("random");
	make_pool(&s, c->npool);
	do_open(&s);

	for (s.op = 0; s.op < c->ops; s.op++)
	{
		int			r = (int) rnd(&s, 1000);

		if (s.snap_it != NULL && s.op >= s.snap_due)
			snap_check(&s);
		if (s.trace)
			printf("# op %d: %s\n", s.op, op_name(r));
		if (r < 300)
			do_put(&s);
		else if (r < 400)
			do_delete(&s);
		else if (r < 500)
			do_batch(&s);
		else if (r < 650)
		{
			klen = pick_key(&s, key);
			check_get(&s, key, klen);
		}
		else if (r < 690)
			check_multi_get(&s);
		else if (r < 750)
			check_seek(&s);
		else if (r < 800)
			check_seek_back(&s);
		else if (r < 812)
			check_scan(&s);
		else if (r < 820)
			check_scan_back(&s);
		else if (r < 885)
			check_value_search(&s);
		else if (r < 905)
		{
			CHECK_DB_OK(s.db, lsm_flush(s.db));
			s.n_flush++;
		}
		else if (r < 913)
		{
			CHECK_DB_OK(s.db, lsm_compact(s.db));
			s.n_compact++;
		}
		else if (r < 915)
			do_compact_all(&s);
		else if (r < 923)
			do_reopen(&s);
		else if (r < 935)
		{
			if (s.snap_it == NULL)
				snap_open(&s);
		}
		else if (r < 940)
			CHECK_DB_OK(s.db, lsm_refresh(s.db));
		else
			do_put(&s);			/* overwrites dominate the tail */
		if ((s.op & 63) == 0)
			note_shape(&s);
	}
	snap_check(&s);
	note_shape(&s);

	/* the end state, every way it can be read */
	check_scan(&s);
	check_scan_back(&s);
	for (i = 0; i < s.npool; i++)
		check_get(&s, s.pool[i], s.pool_len[i]);
	for (i = 0; i < NF0; i++)
		check_value_search_one(&s, s.db, &s.m, 0, f0_domain[i], f0_lens[i]);
	for (i = 0; i < NF1; i++)
		check_value_search_one(&s, s.db, &s.m, 1, f1_domain[i], f1_lens[i]);
	CHECK_DB_OK(s.db, lsm_verify(s.db));
	CHECK_DB_OK(s.db, lsm_compact(s.db));
	note_shape(&s);
	check_scan(&s);
	check_scan_back(&s);
	do_reopen(&s);
	for (i = 0; i < s.npool; i++)
		check_get(&s, s.pool[i], s.pool_len[i]);
	CHECK_DB_OK(s.db, lsm_close(s.db));

	printf("# case %s: %zu live keys of %d; puts %ld, deletes %ld, batches %ld, "
		   "gets %ld, multi-gets %ld, seeks %ld, scans %ld, seeks back %ld, "
		   "backward scans %ld, value searches %ld (%ld hits), flushes %ld, "
		   "compactions %ld, reopens %ld, held iterators %ld (%ld backward); "
		   "up to %d files in %d levels\n",
		   c->name, s.m.n, s.npool, s.n_put, s.n_del, s.n_batch, s.n_get,
		   s.n_mget, s.n_seek, s.n_scan, s.n_seek_back, s.n_scan_back,
		   s.n_vsearch, s.n_vhits, s.n_flush, s.n_compact, s.n_reopen,
		   s.n_snap, s.n_snap_back, s.max_files, s.max_levels);
	/* the case must have exercised what it is for */
	CHECK_GE(s.max_files, 4);
	if (c->ops >= 2000)
	{
		CHECK_GE(s.max_levels, 2);
		CHECK_GT(s.n_seek_back, 0);
		CHECK_GT(s.n_snap_back, 0);
	}

	model_free(&s.m);
	for (i = 0; i < s.npool; i++)
		free(s.pool[i]);
	free(s.pool);
	free(s.pool_len);
}

/* The small-store options every case starts from. */
static lsm_options
small_options(size_t memtable, size_t file, int bits)
{
	lsm_options o;

	lsm_options_init(&o);
	o.memtable_bytes = memtable;
	o.file_bytes = file;
	o.key_bits_per_key = bits;
	o.level_ratio = 2;
	o.l0_compaction_trigger = 2;
	o.block_bytes = 1024;
	o.value_filter_bits = 1 << 14;
	o.value_filter_hashes = 3;
	o.hierarchy_order = 2;
	o.lock_timeout_ms = 10000;
	return o;
}

/* ---------------------------------------------------------------------- */
/* Cases. */

/* Tiny memtable and files, Bloom filters on: many files, deep levels. */
TEST(random_small_bloom)
{
	rcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "small_bloom";
	c.seed_mix = 0x1;
	c.ops = 8000;
	c.npool = 3000;
	c.max_payload = 120;
	c.opt = small_options(8 << 10, 4 << 10, 10);
	run_case(&c);
}

/* Larger memtable and files, no key filters, level ratio 3, 4 KiB blocks. */
TEST(random_no_bloom)
{
	rcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "no_bloom";
	c.seed_mix = 0x2;
	c.ops = 8000;
	c.npool = 2000;
	c.max_payload = 200;
	c.opt = small_options(32 << 10, 16 << 10, 0);
	c.opt.level_ratio = 3;
	c.opt.l0_compaction_trigger = 3;
	c.opt.block_bytes = 4096;
	c.opt.value_filter_bits = 1 << 16;
	c.opt.value_filter_hashes = 2;
	c.opt.hierarchy_order = 3;
	run_case(&c);
}

/*
 * Reopens alternate between 0 and 10 bits per key, so the store mixes
 * tables with and without key filters; 256-byte blocks.
 */
TEST(random_mixed_filters)
{
	rcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "mixed_filters";
	c.seed_mix = 0x3;
	c.ops = 6000;
	c.npool = 800;
	c.max_payload = 60;
	c.reopen_toggle_bits = 1;
	c.opt = small_options(16 << 10, 8 << 10, 10);
	c.opt.block_bytes = 256;
	c.opt.value_filter_bits = 4096;
	c.opt.value_filter_hashes = 1;
	run_case(&c);
}

/* No automatic compaction: level 0 piles up until lsm_compact runs. */
TEST(random_manual_compaction)
{
	rcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "manual_compaction";
	c.seed_mix = 0x4;
	c.ops = 6000;
	c.npool = 1000;
	c.max_payload = 100;
	c.opt = small_options(8 << 10, 8 << 10, 10);
	c.opt.auto_compact = 0;
	c.opt.l0_compaction_trigger = 4;
	run_case(&c);
}

/*
 * The smallest sizes allowed: 4 KiB memtable and files, 256-byte blocks,
 * compaction at every level-0 file, 1 bit per key (mostly false positives).
 */
TEST(random_extremes)
{
	rcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "extremes";
	c.seed_mix = 0x7;
	c.ops = 4000;
	c.npool = 1500;
	c.max_payload = 300;
	c.opt = small_options(4 << 10, 4 << 10, 1);
	c.opt.block_bytes = 256;
	c.opt.l0_compaction_trigger = 1;
	c.opt.value_filter_bits = 4096;
	c.opt.value_filter_hashes = 1;
	run_case(&c);
}

/* With sync on (an fsync per write), briefly. */
TEST(random_sync)
{
	rcase		c;

	memset(&c, 0, sizeof(c));
	c.name = "sync";
	c.seed_mix = 0x5;
	c.ops = 600;
	c.npool = 300;
	c.max_payload = 150;
	c.opt = small_options(8 << 10, 4 << 10, 10);
	c.opt.sync = 1;
	run_case(&c);
}

/*
 * An iterator shows the store as of lsm_iter_open: later overwrites,
 * deletes, inserts, flushes and compactions (including ones that remove
 * every file it reads) do not show, whether it was positioned before them
 * or not, and whether it runs forwards or backwards.  A value-search
 * iterator is a snapshot too.  Iterators opened afterwards see the new
 * state.
 */
TEST(iterator_snapshot)
{
	rstate		s;
	rcase		c;
	lsm_iter   *fresh,
			   *mid,
			   *back,
			   *vs;
	model		before;
	model		mid_snap;
	size_t		mid_pos,
				back_pos;
	int			i,
				round;
	char		k[32];

	memset(&c, 0, sizeof(c));
	c.name = "iterator_snapshot";
	c.seed_mix = 0x6;
	c.max_payload = 100;
	memset(&s, 0, sizeof(s));
	s.c = &c;
	s.seed = harness_seed() ^ c.seed_mix;
	s.rng = s.seed;
	s.opt = small_options(8 << 10, 4 << 10, 10);
	s.dir = harness_tmpdir("snapshot");
	do_open(&s);

	for (round = 0; round < 4; round++)
	{
		/* some content: part flushed and compacted, part in the memtable */
		for (i = 0; i < 400; i++)
		{
			size_t		vlen;
			uint8_t    *val = random_value(&s, &vlen);

			snprintf(k, sizeof(k), "key%05d", (int) rnd(&s, 600));
			CHECK_DB_OK(s.db, lsm_put(s.db, k, strlen(k), val, vlen));
			model_put(&s.m, k, strlen(k), val, vlen);
			free(val);
			if (i == 250)
				CHECK_DB_OK(s.db, lsm_compact(s.db));
		}

		memset(&before, 0, sizeof(before));
		memset(&mid_snap, 0, sizeof(mid_snap));
		model_copy(&before, &s.m);
		model_copy(&mid_snap, &s.m);
		CHECK_DB_OK(s.db, lsm_iter_open(s.db, &fresh));
		CHECK_DB_OK(s.db, lsm_iter_open(s.db, &mid));
		mid_pos = s.m.n / 3;
		lsm_iter_seek(mid, s.m.e[mid_pos].key, s.m.e[mid_pos].klen);
		check_iter_from(&s, mid, &mid_snap, mid_pos, 5, "positioned, before");
		mid_pos += 5;
		CHECK_DB_OK(s.db, lsm_iter_open(s.db, &back));
		CHECK_OK(lsm_iter_reverse(back));
		back_pos = 2 * s.m.n / 3;	/* entries at and before its position */
		lsm_iter_seek(back, s.m.e[back_pos - 1].key, s.m.e[back_pos - 1].klen);
		check_iter_back_from(&s, back, &mid_snap, back_pos, 5,
							 "backwards, positioned, before");
		back_pos -= 5;
		CHECK_DB_OK(s.db, lsm_value_search(s.db, 0, "red", 3, &vs));

		/* rewrite everything: overwrite, delete, insert, then move it all */
		for (i = 0; i < 600; i++)
		{
			snprintf(k, sizeof(k), "key%05d", i);
			if (i % 3 == 0)
			{
				CHECK_DB_OK(s.db, lsm_delete(s.db, k, strlen(k)));
				model_del(&s.m, k, strlen(k));
			}
			else
			{
				size_t		vlen;
				uint8_t    *val = random_value(&s, &vlen);

				CHECK_DB_OK(s.db, lsm_put(s.db, k, strlen(k), val, vlen));
				model_put(&s.m, k, strlen(k), val, vlen);
				free(val);
			}
		}
		for (i = 0; i < 50; i++)
		{
			snprintf(k, sizeof(k), "new%d-%04d", round, i);
			CHECK_DB_OK(s.db, lsm_put(s.db, k, strlen(k), "x", 1));
			model_put(&s.m, k, strlen(k), "x", 1);
		}
		CHECK_DB_OK(s.db, lsm_flush(s.db));
		CHECK_DB_OK(s.db, lsm_compact(s.db));
		CHECK_DB_OK(s.db, lsm_flush(s.db));

		/* the old iterators still see the old state */
		check_iter_from(&s, mid, &mid_snap, mid_pos, -1, "positioned, after");
		lsm_iter_seek(fresh, NULL, 0);
		check_iter_from(&s, fresh, &before, 0, -1, "unpositioned, after");
		lsm_iter_seek(mid, NULL, 0);
		check_iter_from(&s, mid, &mid_snap, 0, -1, "positioned, rescanned");
		check_iter_back_from(&s, back, &mid_snap, back_pos, -1,
							 "backwards, positioned, after");
		lsm_iter_seek(back, NULL, 0);
		check_iter_back_from(&s, back, &mid_snap, mid_snap.n, -1,
							 "backwards, rescanned");
		{
			/* the value search continues over its snapshot */
			size_t		n = 0,
						want = 0;

			for (i = 0; i < (int) before.n; i++)
				want += harness_row_matches(before.e[i].val, before.e[i].vlen,
											0, "red", 3);
			while (lsm_iter_valid(vs))
			{
				size_t		kn,
							vn;
				const void *kk = lsm_iter_key(vs, &kn);
				const void *vv = lsm_iter_value(vs, &vn);
				const ment *e = model_get(&before, kk, kn);

				CHECK(e != NULL);
				CHECK_MEMEQ(vv, vn, e->val, e->vlen);
				n++;
				lsm_iter_next(vs);
			}
			CHECK_OK(lsm_iter_status(vs));
			CHECK_EQ_U(n, want);
		}
		lsm_iter_close(vs);
		lsm_iter_close(fresh);
		lsm_iter_close(mid);
		lsm_iter_close(back);
		model_free(&before);
		model_free(&mid_snap);

		/* a new iterator sees the new state */
		check_scan(&s);
		check_scan_back(&s);
		check_value_search_one(&s, s.db, &s.m, 0, "red", 3);
		if (round == 2)
			do_reopen(&s);
	}
	CHECK_DB_OK(s.db, lsm_verify(s.db));
	CHECK_DB_OK(s.db, lsm_close(s.db));
	model_free(&s.m);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(random_small_bloom);
	RUN(random_no_bloom);
	RUN(random_mixed_filters);
	RUN(random_manual_compaction);
	RUN(random_extremes);
	RUN(random_sync);
	RUN(iterator_snapshot);
	return harness_done();
}

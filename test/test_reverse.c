/*
 * test_reverse.c
 *		Iterators running backwards (lsm_iter_reverse), against a model.
 *
 * reverse_random drives a store through random puts, deletes, flushes and
 * compactions, and checks backward seeks (to present keys, deleted keys,
 * keys between keys, before the first, after the last and NULL) followed by
 * a few steps back, and whole backward scans, against a model: an array of
 * candidate keys in engine order, each present with a value or absent.  An
 * iterator is sometimes held open across later writes, flushes and
 * compactions and then checked against the model as it was when opened.
 * The keys share long prefixes and the data blocks hold many entries, so
 * that steps back cross restart points, blocks, tables and levels.  It runs
 * in two shapes: compacting as usual, and with compaction off, where level
 * 0 piles up tables and the merging iterator switches to its heap.
 *
 * stage_reverse checks a stage's iterator (buffer and spilled runs, deletes
 * shown) backwards against the same iterator forwards; reverse_refused the
 * calls lsm_iter_reverse must refuse.
 *
 * LSM_TEST_SEED=<n> repeats a run.
 */
#include "harness.h"

#define NKEYS 1500

/* The candidate keys, sorted in engine order, and their model state. */
typedef struct rmodel
{
	uint8_t		key[NKEYS][40];
	size_t		klen[NKEYS];
	int			version[NKEYS]; /* value version; 0 = absent */
} rmodel;

/* A random key: one of three long prefixes, then 0..6 bytes heavy in 0x00/0xff. */
static size_t
random_key(uint64_t *rng, uint8_t *k)
{
	static const uint8_t alphabet[] = {0x00, 0x01, 'a', 'b', 0xfe, 0xff};
	static const char *const prefixes[] = {
		"tweets/2026/11/22/", "tweets/2026/11/", "u"
	};
	const char *p = prefixes[harness_rand64(rng) % 3];
	size_t		n = strlen(p);
	size_t		extra = harness_rand64(rng) % 7;
	size_t		i;

	memcpy(k, p, n);
	for (i = 0; i < extra; i++)
		k[n + i] = alphabet[harness_rand64(rng) % sizeof(alphabet)];
	return n + extra;
}

static rmodel *model_sort_tmp;

static int
cmp_index(const void *a, const void *b)
{
	int			i = *(const int *) a,
				j = *(const int *) b;

	return harness_key_cmp(model_sort_tmp->key[i], model_sort_tmp->klen[i],
						   model_sort_tmp->key[j], model_sort_tmp->klen[j]);
}

/* Fills m with NKEYS distinct random keys in engine order, all absent. */
static void
model_init(rmodel *m, uint64_t *rng)
{
	rmodel	   *tmp = calloc(1, sizeof(rmodel));
	int			order[NKEYS];
	int			n = 0,
				i;

	CHECK(tmp != NULL);
	while (n < NKEYS)
	{
		uint8_t		k[40];
		size_t		kl = random_key(rng, k);

		for (i = 0; i < n; i++)
			if (harness_key_cmp(tmp->key[i], tmp->klen[i], k, kl) == 0)
				break;
		if (i < n)
			continue;
		memcpy(tmp->key[n], k, kl);
		tmp->klen[n] = kl;
		order[n] = n;
		n++;
	}
	model_sort_tmp = tmp;
	qsort(order, NKEYS, sizeof(int), cmp_index);
	for (i = 0; i < NKEYS; i++)
	{
		memcpy(m->key[i], tmp->key[order[i]], tmp->klen[order[i]]);
		m->klen[i] = tmp->klen[order[i]];
		m->version[i] = 0;
	}
	free(tmp);
}

/* The value of key i at version v: long enough to fill blocks. */
static size_t
value_of(int i, int v, char *buf)
{
	return (size_t) snprintf(buf, 64, "value-%d-%d-%0*d", i, v, 8 + i % 13, v);
}

/* The last present key <= target (target NULL: the last present), or -1. */
static int
model_last_le(const rmodel *m, const uint8_t *t, size_t tlen)
{
	int			i;

	for (i = NKEYS - 1; i >= 0; i--)
		if (m->version[i] != 0 &&
			(t == NULL ||
			 harness_key_cmp(m->key[i], m->klen[i], t, tlen) <= 0))
			return i;
	return -1;
}

/*
 * Checks a reverse iterator, just seeked to target, for up to steps keys
 * (all if steps < 0) against m.
 */
static void
check_backwards(lsm_iter *it, const rmodel *m, const uint8_t *t, size_t tlen,
				int steps, const char *what)
{
	int			i = model_last_le(m, t, tlen);
	int			n = 0;

	for (; steps < 0 || n < steps; n++)
	{
		char		want[64];
		size_t		wlen;
		const void *k;
		const void *v;
		size_t		kl,
					vl;

		while (i >= 0 && m->version[i] == 0)
			i--;
		if (i < 0)
		{
			CHECK_MSG(!lsm_iter_valid(it), "%s: step %d: iterator valid past the first key", what, n);
			CHECK_OK(lsm_iter_status(it));
			return;
		}
		CHECK_MSG(lsm_iter_valid(it), "%s: step %d: iterator ended, model has key #%d (status %d)",
				  what, n, i, lsm_iter_status(it));
		k = lsm_iter_key(it, &kl);
		v = lsm_iter_value(it, &vl);
		wlen = value_of(i, m->version[i], want);
		CHECK_MSG(harness_key_cmp(k, kl, m->key[i], m->klen[i]) == 0,
				  "%s: step %d: wrong key (model key #%d)", what, n, i);
		CHECK_MEMEQ(v, vl, want, wlen);
		lsm_iter_next(it);
		i--;
	}
}

/* Checks a whole backward scan of db against m. */
static void
check_full_backward(lsm_db *db, const rmodel *m, const char *what)
{
	lsm_iter   *it;

	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	check_backwards(it, m, NULL, 0, -1, what);
	lsm_iter_close(it);
}

/* A seek target: a candidate key, or one between candidates, or NULL. */
static const uint8_t *
random_target(uint64_t *rng, const rmodel *m, uint8_t *buf, size_t *len)
{
	switch (harness_rand64(rng) % 4)
	{
		case 0:
			*len = 0;
			return NULL;
		case 1:
			*len = random_key(rng, buf);	/* mostly between candidates */
			return buf;
		default:
			{
				int			i = (int) (harness_rand64(rng) % NKEYS);

				*len = m->klen[i];
				memcpy(buf, m->key[i], *len);
				return buf;
			}
	}
}

static void
reverse_random_run(int compact)
{
	char	   *dir = harness_tmpdir("reverse");
	uint64_t	rng = harness_seed() ^ (uint64_t) compact * 7919;
	rmodel	   *m = calloc(1, sizeof(rmodel));
	rmodel	   *held_model = calloc(1, sizeof(rmodel));
	lsm_iter   *held = NULL;
	lsm_options o;
	lsm_db	   *db;
	int			op;
	int			versions = 0;

	CHECK(m != NULL && held_model != NULL);
	model_init(m, &rng);
	lsm_options_init(&o);
	o.memtable_bytes = 16 * 1024;
	o.file_bytes = 8 * 1024;
	o.block_bytes = 2048;		/* dozens of entries: several restarts */
	o.level_ratio = 2;
	if (!compact)
	{
		o.auto_compact = 0;
		o.l0_compaction_trigger = 1000;
	}
	CHECK_OK(lsm_open(dir, &o, &db));

	for (op = 0; op < 6000; op++)
	{
		uint64_t	r = harness_rand64(&rng) % 1000;
		int			i = (int) (harness_rand64(&rng) % NKEYS);

		if (r < 550)
		{
			char		v[64];
			size_t		vl;

			m->version[i] = ++versions;
			vl = value_of(i, versions, v);
			CHECK_DB_OK(db, lsm_put(db, m->key[i], m->klen[i], v, vl));
		}
		else if (r < 750)
		{
			m->version[i] = 0;
			CHECK_DB_OK(db, lsm_delete(db, m->key[i], m->klen[i]));
		}
		else if (r < 760)
			CHECK_DB_OK(db, lsm_flush(db));
		else if (r < 765 && compact)
			CHECK_DB_OK(db, lsm_compact(db));
		else if (r < 767 && compact)
			CHECK_DB_OK(db, lsm_compact_all(db));
		else if (r < 960)
		{
			lsm_iter   *it;
			uint8_t		t[40];
			size_t		tlen;
			const uint8_t *target = random_target(&rng, m, t, &tlen);

			CHECK_DB_OK(db, lsm_iter_open(db, &it));
			CHECK_OK(lsm_iter_reverse(it));
			lsm_iter_seek(it, target, tlen);
			check_backwards(it, m, target, tlen, 1 + (int) (harness_rand64(&rng) % 40),
							"seek back");
			lsm_iter_close(it);
		}
		else if (r < 975)
			check_full_backward(db, m, "full backward scan");
		else if (held == NULL)
		{
			/* an iterator whose snapshot must outlive later changes */
			CHECK_DB_OK(db, lsm_iter_open(db, &held));
			CHECK_OK(lsm_iter_reverse(held));
			memcpy(held_model, m, sizeof(rmodel));
		}
		else
		{
			lsm_iter_seek(held, NULL, 0);
			check_backwards(held, held_model, NULL, 0, -1, "held iterator");
			lsm_iter_close(held);
			held = NULL;
		}
	}
	if (held != NULL)
		lsm_iter_close(held);
	check_full_backward(db, m, "final backward scan");
	CHECK_OK(lsm_close(db));
	free(m);
	free(held_model);
}

TEST(reverse_random)
{
	reverse_random_run(1);
}

TEST(reverse_random_level0_heap)
{
	reverse_random_run(0);
}

/* One entry of a stage iterator. */
typedef struct sentry
{
	uint8_t		key[40];
	size_t		klen;
	char		val[64];
	size_t		vlen;
	int			del;
} sentry;

/* Reads the iterator's current entry into e. */
static void
read_entry(lsm_iter *it, sentry *e)
{
	const void *k = lsm_iter_key(it, &e->klen);
	const void *v = lsm_iter_value(it, &e->vlen);

	CHECK(e->klen <= sizeof(e->key) && e->vlen <= sizeof(e->val));
	memcpy(e->key, k, e->klen);
	memcpy(e->val, v, e->vlen);
	e->del = lsm_iter_is_delete(it);
}

static void
check_entry(lsm_iter *it, const sentry *want, const char *what, int n)
{
	sentry		got;

	CHECK_MSG(lsm_iter_valid(it), "%s: step %d: ended early", what, n);
	read_entry(it, &got);
	CHECK_MSG(harness_key_cmp(got.key, got.klen, want->key, want->klen) == 0,
			  "%s: step %d: wrong key", what, n);
	CHECK_MEMEQ(got.val, got.vlen, want->val, want->vlen);
	CHECK_EQ(got.del, want->del);
}

TEST(stage_reverse)
{
	char	   *dir = harness_tmpdir("stage_reverse");
	uint64_t	rng = harness_seed() ^ 0x5157;
	rmodel	   *m = calloc(1, sizeof(rmodel));
	sentry	   *fwd = calloc(NKEYS, sizeof(sentry));
	lsm_options o;
	lsm_db	   *db;
	lsm_stage  *st;
	lsm_iter   *it;
	int			n = 0,
				i,
				q;

	CHECK(m != NULL && fwd != NULL);
	model_init(m, &rng);
	lsm_options_init(&o);
	o.memtable_bytes = 16 * 1024;
	o.file_bytes = 8 * 1024;
	o.block_bytes = 2048;
	CHECK_OK(lsm_open(dir, &o, &db));
	/* the store under the stage: tables on several levels and a memtable */
	for (i = 0; i < NKEYS; i += 2)
		CHECK_DB_OK(db, lsm_put(db, m->key[i], m->klen[i], "store", 5));

	/* puts and deletes, spilled to runs by a 4 kB buffer, some rewritten */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (q = 0; q < 3000; q++)
	{
		char		v[64];

		i = (int) (harness_rand64(&rng) % NKEYS);
		if (harness_rand64(&rng) % 3 == 0)
			CHECK_DB_OK(db, lsm_stage_delete(st, m->key[i], m->klen[i]));
		else
			CHECK_DB_OK(db, lsm_stage_put(st, m->key[i], m->klen[i], v,
										  value_of(i, q + 1, v)));
	}

	/* forwards, recorded */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
	{
		CHECK(n < NKEYS);
		read_entry(it, &fwd[n++]);
	}
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);
	CHECK_GT(n, NKEYS / 2);

	/* backwards: the same entries in the opposite order */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	for (i = n - 1; i >= 0; i--)
	{
		check_entry(it, &fwd[i], "stage backward scan", n - 1 - i);
		lsm_iter_next(it);
	}
	CHECK(!lsm_iter_valid(it));
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);

	/* backward seeks: the last entry <= target, then a few more */
	for (q = 0; q < 300; q++)
	{
		uint8_t		t[40];
		size_t		tlen;
		const uint8_t *target = random_target(&rng, m, t, &tlen);
		int			j = n - 1,
					s;

		while (target != NULL && j >= 0 &&
			   harness_key_cmp(fwd[j].key, fwd[j].klen, target, tlen) > 0)
			j--;
		CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
		CHECK_OK(lsm_iter_reverse(it));
		lsm_iter_seek(it, target, tlen);
		for (s = 0; s < 5 && j >= 0; s++, j--)
		{
			check_entry(it, &fwd[j], "stage seek back", s);
			lsm_iter_next(it);
		}
		if (j < 0)
			CHECK(!lsm_iter_valid(it));
		lsm_iter_close(it);
	}

	lsm_stage_abort(st);
	CHECK_OK(lsm_close(db));
	free(m);
	free(fwd);
}

TEST(reverse_refused)
{
	char	   *dir = harness_tmpdir("reverse_refused");
	lsm_db	   *db;
	lsm_iter   *it;

	CHECK_OK(lsm_open(dir, NULL, &db));
	CHECK_DB_OK(db, lsm_put(db, "a", 1, "x", 1));
	CHECK_DB_OK(db, lsm_put(db, "b", 1, "y", 1));
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(NULL));

	/* once positioned, the direction is fixed */
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	CHECK_MEMEQ(lsm_iter_key(it, NULL), 1, "a", 1);
	lsm_iter_close(it);

	/* value searches only go forwards */
	CHECK_DB_OK(db, lsm_value_search(db, 0, "x", 1, &it));
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	lsm_iter_close(it);

	/* an empty store: nothing either way */
	CHECK_DB_OK(db, lsm_delete(db, "a", 1));
	CHECK_DB_OK(db, lsm_delete(db, "b", 1));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, "z", 1);
	CHECK(!lsm_iter_valid(it));
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);
	CHECK_OK(lsm_close(db));
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(reverse_random);
	RUN(reverse_random_level0_heap);
	RUN(stage_reverse);
	RUN(reverse_refused);
	return harness_done();
}

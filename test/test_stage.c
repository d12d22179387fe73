/*
 * test_stage.c
 *		Tests of stages (lsm_stage_*): pending writes in bounded memory,
 *		spilled to sorted runs and ingested atomically at commit; and of
 *		lsm_write_opt's per-write sync.
 *
 * Keys are "k<i>" for i < NK; values are rows of three fields, field 0 a
 * category "c<j>" (j < NCAT) that value searches look for.  A reference
 * model holds the store's contents (an array indexed by key number), a
 * second one the stage's writes (put, delete or nothing per key).  Stores
 * have 16 KiB memtables and 8 KiB files and stages 4 KiB buffers, so a few
 * thousand staged writes make dozens of runs, hence dozens of level-0
 * tables after a commit.
 *
 * stage_model (the randomized model test): rounds of random staged puts
 * and deletes (of keys in the store, of keys staged before, of new keys),
 * with lsm_stage_get and the stage iterator checked against the model
 * along the way, store writes through the same and through a second
 * handle in between, and the staged keys checked invisible to both
 * handles; then a commit (any flag) or an abort; then the store checked
 * against the model with lsm_get, a full scan, lsm_multi_get, a value
 * search with every strategy and lsm_verify, from both handles (the second
 * after lsm_refresh), before and after compaction and reopening.  Stage
 * iterators opened before the commit keep their snapshot.  No staging
 * directory may remain.
 *
 * Other cases: the basic contract (codes, LSM_DELETED, key limits, counts,
 * small stages as one batch, lsm_close with a stage open); deletes staged
 * over tables deep in the store surviving compaction; a stage's iterator
 * backwards (stage_reverse_iter: the forward one reversed, seeks back,
 * snapshots, what lsm_iter_reverse refuses); a writer process
 * committing between lsm_stage_open and lsm_stage_commit (the ingest is
 * still newer) and a reader process picking the ingest up with
 * lsm_refresh; fault sweeps over the commit, of an ordinary and of a
 * truncating stage (every write and every fsync fails in turn, EIO and
 * ENOSPC: the store is unchanged or, past the manifest switch, complete) and ENOSPC while spilling (the stage stays
 * usable); simulated power failures after a commit; committing processes
 * killed with SIGKILL at random moments (all or nothing, lsm_verify); and
 * the removal of staging directories left by dead processes, never of a
 * live one's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "env.h"

#define NK			1500		/* key space */
#define NCAT		5			/* categories of field 0 */
#define ST_NONE		0
#define ST_PUT		1
#define ST_DEL		2

/* ---------------------------------------------------------------------- */
/* Keys, values, models. */

/* Key i: "k00042". */
static size_t
key_of(int i, char *buf)
{
	return (size_t) sprintf(buf, "k%05d", i);
}

/* Category of the value of key i at version ver. */
static int
cat_of(int i, uint64_t ver)
{
	return (int) (harness_mix(ver * 7919 + (uint64_t) i) % NCAT);
}

/*
 * The value of key i at version ver (any number naming the write): a row
 * ("c<cat>", "<i>/<ver>", filler of 0..119 bytes).  *len gets its length;
 * release with lsm_free.
 */
static void *
row_of(int i, uint64_t ver, size_t *len)
{
	char		f0[8],
				f1[48];
	uint8_t		fill[128];
	lsm_field	f[3];
	uint64_t	h = harness_mix(ver ^ ((uint64_t) i << 40));
	size_t		flen = (size_t) (h % 120),
				j;
	void	   *row;

	for (j = 0; j < flen; j++)
		fill[j] = (uint8_t) ('a' + (h >> (j % 50)) % 26);
	memset(f, 0, sizeof(f));
	f[0].data = f0;
	f[0].len = (size_t) sprintf(f0, "c%d", cat_of(i, ver));
	f[1].data = f1;
	f[1].len = (size_t) sprintf(f1, "%d/%" PRIu64, i, ver);
	f[2].data = fill;
	f[2].len = flen;
	CHECK_OK(lsm_row_encode(f, 3, &row, len));
	return row;
}

/* The store's contents: the value of every key, or NULL. */
typedef struct model
{
	void	   *val[NK];
	size_t		len[NK];
} model;

/* Writes the stage makes: per key nothing, a put (with its value) or a delete. */
typedef struct smodel
{
	int			state[NK];
	void	   *val[NK];
	size_t		len[NK];
} smodel;

static model *
model_new(void)
{
	model	   *m = calloc(1, sizeof(model));

	CHECK(m != NULL);
	return m;
}

static void
model_free(model *m)
{
	int			i;

	if (m == NULL)
		return;
	for (i = 0; i < NK; i++)
		lsm_free(m->val[i]);
	free(m);
}

/* Sets key i to a copy of v (NULL: absent). */
static void
model_set(model *m, int i, const void *v, size_t len)
{
	lsm_free(m->val[i]);
	m->val[i] = NULL;
	m->len[i] = 0;
	if (v == NULL)
		return;
	m->val[i] = malloc(len ? len : 1);
	CHECK(m->val[i] != NULL);
	memcpy(m->val[i], v, len);
	m->len[i] = len;
}

static model *
model_dup(const model *src)
{
	model	   *m = model_new();
	int			i;

	for (i = 0; i < NK; i++)
		model_set(m, i, src->val[i], src->len[i]);
	return m;
}

static smodel *
smodel_new(void)
{
	smodel	   *s = calloc(1, sizeof(smodel));

	CHECK(s != NULL);
	return s;
}

static void
smodel_free(smodel *s)
{
	int			i;

	if (s == NULL)
		return;
	for (i = 0; i < NK; i++)
		lsm_free(s->val[i]);
	free(s);
}

static smodel *
smodel_dup(const smodel *src)
{
	smodel	   *s = smodel_new();
	int			i;

	for (i = 0; i < NK; i++)
	{
		s->state[i] = src->state[i];
		if (src->val[i])
		{
			s->val[i] = malloc(src->len[i] ? src->len[i] : 1);
			CHECK(s->val[i] != NULL);
			memcpy(s->val[i], src->val[i], src->len[i]);
			s->len[i] = src->len[i];
		}
	}
	return s;
}

/* Applies the stage's writes to the store model. */
static void
model_apply(model *m, const smodel *s)
{
	int			i;

	for (i = 0; i < NK; i++)
		if (s->state[i] == ST_PUT)
			model_set(m, i, s->val[i], s->len[i]);
		else if (s->state[i] == ST_DEL)
			model_set(m, i, NULL, 0);
}

/* Puts key i at version ver through the stage (if any) and into s. */
static void
stage_put(lsm_db *db, lsm_stage *st, smodel *s, int i, uint64_t ver)
{
	char		k[16];
	size_t		klen = key_of(i, k),
				vlen;
	void	   *v = row_of(i, ver, &vlen);

	if (st)
		CHECK_DB_OK(db, lsm_stage_put(st, k, klen, v, vlen));
	lsm_free(s->val[i]);
	s->val[i] = v;
	s->len[i] = vlen;
	s->state[i] = ST_PUT;
}

/* Deletes key i through the stage (if any) and in s. */
static void
stage_del(lsm_db *db, lsm_stage *st, smodel *s, int i)
{
	char		k[16];
	size_t		klen = key_of(i, k);

	if (st)
		CHECK_DB_OK(db, lsm_stage_delete(st, k, klen));
	lsm_free(s->val[i]);
	s->val[i] = NULL;
	s->len[i] = 0;
	s->state[i] = ST_DEL;
}

/* Puts key i at version ver in the store (one batch) and in m. */
static void
store_put(lsm_db *db, model *m, int i, uint64_t ver)
{
	char		k[16];
	size_t		klen = key_of(i, k),
				vlen;
	void	   *v = row_of(i, ver, &vlen);

	CHECK_DB_OK(db, lsm_put(db, k, klen, v, vlen));
	if (m)
		model_set(m, i, v, vlen);
	lsm_free(v);
}

static void
store_del(lsm_db *db, model *m, int i)
{
	char		k[16];
	size_t		klen = key_of(i, k);

	CHECK_DB_OK(db, lsm_delete(db, k, klen));
	if (m)
		model_set(m, i, NULL, 0);
}

/* ---------------------------------------------------------------------- */
/* Options, directories. */

static void
store_options(lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = 16 * 1024;
	o->file_bytes = 8 * 1024;
	o->block_bytes = 1024;
	o->level_ratio = 2;
	o->l0_compaction_trigger = 3;
	o->value_filter_bits = 1 << 14;
	o->hierarchy_order = 2;
	o->lock_timeout_ms = 20000;
}

static lsm_db *
open_store(const char *dir, int auto_compact)
{
	lsm_options o;
	lsm_db	   *db = NULL;

	store_options(&o);
	o.auto_compact = auto_compact;
	CHECK_OK(lsm_open(dir, &o, &db));
	return db;
}

/* Number of entries of dir whose names start with prefix. */
static int
count_prefix(const char *dir, const char *prefix)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	int			n = 0;

	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/*
 * Tables in the staging directory of dir (there must be at most one); with
 * max_number, also the highest table number there, which is the number of
 * tables the stage has written (spills and merge outputs).  0 if there is
 * no staging directory.
 */
static int
stage_tables(const char *dir, int *max_number)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	char	   *sdir = NULL;
	int			n = 0;

	CHECK(d != NULL);
	if (max_number)
		*max_number = 0;
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "stage.", 6) == 0)
		{
			CHECK(sdir == NULL);
			sdir = harness_path(dir, de->d_name);
		}
	closedir(d);
	if (sdir == NULL)
		return 0;
	d = opendir(sdir);
	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
	{
		size_t		l = strlen(de->d_name);

		if (l > 4 && strcmp(de->d_name + l - 4, ".sst") == 0)
		{
			n++;
			if (max_number && atoi(de->d_name) > *max_number)
				*max_number = atoi(de->d_name);
		}
	}
	closedir(d);
	free(sdir);
	return n;
}

/* ---------------------------------------------------------------------- */
/* Checks. */

/*
 * Checks lsm_get of every key, a full scan forwards and backwards and
 * multi-gets against m.
 */
static void
check_reads(lsm_db *db, const model *m, const char *ctx)
{
	lsm_iter   *it;
	char		k[16];
	int			i,
				rc;

	for (i = 0; i < NK; i++)
	{
		size_t		klen = key_of(i, k),
					vlen;
		void	   *v;

		rc = lsm_get(db, k, klen, &v, &vlen);
		if (m->val[i] == NULL)
		{
			CHECK_MSG(rc == LSM_NOTFOUND, "%s: get %s returned %s (%s), "
					  "expected not found", ctx, k, lsm_strerror(rc),
					  lsm_errmsg(db));
			continue;
		}
		CHECK_MSG(rc == LSM_OK, "%s: get %s returned %s (%s)", ctx, k,
				  lsm_strerror(rc), lsm_errmsg(db));
		CHECK_MSG(vlen == m->len[i] && memcmp(v, m->val[i], vlen) == 0,
				  "%s: get %s returned a wrong value", ctx, k);
		lsm_free(v);
	}

	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	for (i = 0; i < NK; i++)
	{
		const void *ik,
				   *iv;
		size_t		iklen,
					ivlen,
					klen;

		if (m->val[i] == NULL)
			continue;
		klen = key_of(i, k);
		CHECK_MSG(lsm_iter_valid(it), "%s: scan ended (%s) before %s", ctx,
				  lsm_strerror(lsm_iter_status(it)), k);
		ik = lsm_iter_key(it, &iklen);
		iv = lsm_iter_value(it, &ivlen);
		CHECK_MSG(iklen == klen && memcmp(ik, k, klen) == 0,
				  "%s: scan returned %.*s, expected %s", ctx, (int) iklen,
				  (const char *) ik, k);
		CHECK_MSG(ivlen == m->len[i] && memcmp(iv, m->val[i], ivlen) == 0,
				  "%s: scan returned a wrong value for %s", ctx, k);
		CHECK(!lsm_iter_is_delete(it));
		lsm_iter_next(it);
	}
	CHECK_MSG(!lsm_iter_valid(it), "%s: scan returned an extra key", ctx);
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);

	/* the same scan backwards (lsm_iter_reverse) */
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	for (i = NK - 1; i >= 0; i--)
	{
		const void *ik,
				   *iv;
		size_t		iklen,
					ivlen,
					klen;

		if (m->val[i] == NULL)
			continue;
		klen = key_of(i, k);
		CHECK_MSG(lsm_iter_valid(it), "%s: backward scan ended (%s) before %s",
				  ctx, lsm_strerror(lsm_iter_status(it)), k);
		ik = lsm_iter_key(it, &iklen);
		iv = lsm_iter_value(it, &ivlen);
		CHECK_MSG(iklen == klen && memcmp(ik, k, klen) == 0,
				  "%s: backward scan returned %.*s, expected %s", ctx,
				  (int) iklen, (const char *) ik, k);
		CHECK_MSG(ivlen == m->len[i] && memcmp(iv, m->val[i], ivlen) == 0,
				  "%s: backward scan returned a wrong value for %s", ctx, k);
		lsm_iter_next(it);
	}
	CHECK_MSG(!lsm_iter_valid(it), "%s: backward scan returned an extra key",
			  ctx);
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);

	/* multi-get in groups of 64 keys */
	for (i = 0; i < NK; i += 64)
	{
		char		kb[64][16];
		const void *keys[64];
		size_t		klens[64],
					vlens[64];
		void	   *vals[64];
		int			rcs[64],
					n = NK - i < 64 ? NK - i : 64,
					j;

		for (j = 0; j < n; j++)
		{
			klens[j] = key_of(i + j, kb[j]);
			keys[j] = kb[j];
		}
		CHECK_DB_OK(db, lsm_multi_get(db, (size_t) n, keys, klens, vals,
									  vlens, rcs));
		for (j = 0; j < n; j++)
		{
			const model *mm = m;

			if (mm->val[i + j] == NULL)
				CHECK_MSG(rcs[j] == LSM_NOTFOUND, "%s: multi-get %s: %s",
						  ctx, kb[j], lsm_strerror(rcs[j]));
			else
			{
				CHECK_MSG(rcs[j] == LSM_OK, "%s: multi-get %s: %s", ctx,
						  kb[j], lsm_strerror(rcs[j]));
				CHECK_MEMEQ(vals[j], vlens[j], mm->val[i + j], mm->len[i + j]);
				lsm_free(vals[j]);
			}
		}
	}
}

/* Field 0 of the model's value of key i, as a category (-1: absent). */
static int
model_cat(const model *m, int i)
{
	lsm_field	f;
	int			c;

	if (m->val[i] == NULL)
		return -1;
	CHECK_OK(lsm_row_field(m->val[i], m->len[i], 0, &f));
	CHECK(f.len == 2 && ((const char *) f.data)[0] == 'c');
	c = ((const char *) f.data)[1] - '0';
	return c;
}

/* Every value search strategy finds exactly the model's rows of each category. */
static void
check_value_search(lsm_db *db, const model *m, const char *ctx)
{
	static const int strategies[] = {LSM_SEARCH_AUTO, LSM_SEARCH_TREE,
	LSM_SEARCH_FLAT, LSM_SEARCH_LEAVES, LSM_SEARCH_SCAN};
	static char seen[NK];
	int			s,
				c,
				i;

	for (s = 0; s < 5; s++)
		for (c = 0; c < NCAT; c++)
		{
			char		cv[16];
			size_t		cl = (size_t) sprintf(cv, "c%d", c);
			lsm_iter   *it;

			memset(seen, 0, sizeof(seen));
			CHECK_DB_OK(db, lsm_value_search_with(db, 0, cv, cl, strategies[s],
												  &it));
			for (; lsm_iter_valid(it); lsm_iter_next(it))
			{
				size_t		klen,
							vlen;
				const char *k = lsm_iter_key(it, &klen);
				const void *v = lsm_iter_value(it, &vlen);
				int			ki;

				CHECK(klen == 6 && k[0] == 'k');
				ki = harness_key_num(k, klen, 1);
				CHECK(ki >= 0 && ki < NK);
				CHECK_MSG(!seen[ki], "%s: strategy %d, c%d: %.6s twice", ctx,
						  strategies[s], c, k);
				seen[ki] = 1;
				CHECK_MSG(model_cat(m, ki) == c, "%s: strategy %d, c%d: "
						  "returned %.6s (model category %d)", ctx,
						  strategies[s], c, k, model_cat(m, ki));
				CHECK_MEMEQ(v, vlen, m->val[ki], m->len[ki]);
			}
			CHECK_DB_OK(db, lsm_iter_status(it));
			lsm_iter_close(it);
			for (i = 0; i < NK; i++)
				if (model_cat(m, i) == c)
					CHECK_MSG(seen[i], "%s: strategy %d, c%d: k%05d missing",
							  ctx, strategies[s], c, i);
		}
}

/* Everything: reads, value searches, lsm_verify. */
static void
check_store(lsm_db *db, const model *m, const char *ctx)
{
	check_reads(db, m, ctx);
	check_value_search(db, m, ctx);
	CHECK_DB_OK(db, lsm_verify(db));
}

/* Checks after lsm_compact_all and reopened; closes db. */
static void
check_compacted_reopened(const char *dir, lsm_db *db, const model *m)
{
	CHECK_DB_OK(db, lsm_compact_all(db));
	check_store(db, m, "after lsm_compact_all");
	CHECK_DB_OK(db, lsm_close(db));
	db = open_store(dir, 1);
	check_store(db, m, "reopened");
	CHECK_DB_OK(db, lsm_close(db));
}

/* lsm_stage_get of key i against s. */
static void
check_stage_get(lsm_db *db, lsm_stage *st, const smodel *s, int i,
				const char *ctx)
{
	char		k[16];
	size_t		klen = key_of(i, k),
				vlen = 7;
	void	   *v = (void *) 1;
	int			rc = lsm_stage_get(st, k, klen, &v, &vlen);

	switch (s->state[i])
	{
		case ST_NONE:
			CHECK_MSG(rc == LSM_NOTFOUND, "%s: stage get %s returned %s (%s)",
					  ctx, k, lsm_strerror(rc), lsm_errmsg(db));
			CHECK(v == NULL && vlen == 0);
			break;
		case ST_DEL:
			CHECK_MSG(rc == LSM_DELETED, "%s: stage get %s returned %s (%s), "
					  "expected deleted", ctx, k, lsm_strerror(rc),
					  lsm_errmsg(db));
			CHECK(v == NULL && vlen == 0);
			break;
		default:
			CHECK_MSG(rc == LSM_OK, "%s: stage get %s returned %s (%s)", ctx,
					  k, lsm_strerror(rc), lsm_errmsg(db));
			CHECK_MEMEQ(v, vlen, s->val[i], s->len[i]);
			lsm_free(v);
	}
}

/* A stage iterator (open) against s: every staged key once, in order. */
static void
check_stage_iter(lsm_iter *it, const smodel *s, const char *ctx)
{
	int			i;

	lsm_iter_seek(it, NULL, 0);
	for (i = 0; i < NK; i++)
	{
		char		k[16];
		size_t		klen,
					iklen,
					ivlen;
		const void *ik,
				   *iv;

		if (s->state[i] == ST_NONE)
			continue;
		klen = key_of(i, k);
		CHECK_MSG(lsm_iter_valid(it), "%s: stage scan ended (%s) before %s",
				  ctx, lsm_strerror(lsm_iter_status(it)), k);
		ik = lsm_iter_key(it, &iklen);
		iv = lsm_iter_value(it, &ivlen);
		CHECK_MSG(iklen == klen && memcmp(ik, k, klen) == 0,
				  "%s: stage scan returned %.*s, expected %s", ctx,
				  (int) iklen, (const char *) ik, k);
		if (s->state[i] == ST_DEL)
		{
			CHECK_MSG(lsm_iter_is_delete(it), "%s: %s should be a delete", ctx, k);
			CHECK_EQ_U(ivlen, 0);
		}
		else
		{
			CHECK_MSG(!lsm_iter_is_delete(it), "%s: %s is not a delete", ctx, k);
			CHECK_MEMEQ(iv, ivlen, s->val[i], s->len[i]);
		}
		lsm_iter_next(it);
	}
	CHECK_MSG(!lsm_iter_valid(it), "%s: stage scan returned an extra key", ctx);
	CHECK_OK(lsm_iter_status(it));

	/* a seek lands on the first staged key at or after the target */
	for (i = 0; i < NK; i += 97)
	{
		char		k[16];
		size_t		klen = key_of(i, k),
					iklen;
		int			j = i;

		while (j < NK && s->state[j] == ST_NONE)
			j++;
		lsm_iter_seek(it, k, klen);
		if (j == NK)
			CHECK(!lsm_iter_valid(it));
		else
		{
			const char *ik = lsm_iter_key(it, &iklen);

			CHECK(lsm_iter_valid(it));
			CHECK_EQ(harness_key_num(ik, iklen, 1), j);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Basics. */

TEST(stage_basic)
{
	char	   *dir = harness_tmpdir("stage-basic");
	lsm_db	   *db = open_store(dir, 1);
	lsm_stage  *st;
	lsm_iter   *it;
	uint8_t    *big = calloc(1, LSM_MAX_KEY_LEN + 1);
	const void *p;
	void	   *v;
	size_t		vlen;
	lsm_options ro;
	lsm_db	   *rdb;

	CHECK(big != NULL);
	memset(big, 'z', LSM_MAX_KEY_LEN + 1);	/* after every other key */
	CHECK_DB_OK(db, lsm_put(db, "a", 1, "store-a", 7));
	CHECK_DB_OK(db, lsm_put(db, "b", 1, "store-b", 7));

	CHECK_RC(LSM_INVALID, lsm_stage_open(NULL, 0, &st));
	CHECK_RC(LSM_INVALID, lsm_stage_open(db, 100, &st));
	CHECK(st == NULL);
	CHECK_DB_OK(db, lsm_stage_open(db, 0, &st));
	CHECK_EQ_U(lsm_stage_count(st), 0);
	CHECK_EQ(lsm_stage_runs(st), 0);
	CHECK(lsm_stage_bytes(st) > 0);

	/* nothing staged: everything not found */
	CHECK_RC(LSM_NOTFOUND, lsm_stage_get(st, "a", 1, &v, &vlen));
	CHECK_DB_OK(db, lsm_stage_put(st, "a", 1, "v1", 2));
	CHECK_DB_OK(db, lsm_stage_put(st, "a", 1, "v2", 2));
	CHECK_DB_OK(db, lsm_stage_delete(st, "b", 1));
	CHECK_DB_OK(db, lsm_stage_put(st, "c", 1, "", 0));
	CHECK_DB_OK(db, lsm_stage_delete(st, "d", 1));
	CHECK_DB_OK(db, lsm_stage_put(st, "d", 1, "back", 4));
	CHECK_EQ_U(lsm_stage_count(st), 6);
	CHECK_DB_OK(db, lsm_stage_get(st, "a", 1, &v, &vlen));
	CHECK_MEMEQ(v, vlen, "v2", 2);
	lsm_free(v);
	CHECK_RC(LSM_DELETED, lsm_stage_get(st, "b", 1, &v, &vlen));
	CHECK_STREQ(lsm_strerror(LSM_DELETED), "deleted");
	CHECK_DB_OK(db, lsm_stage_get(st, "c", 1, &v, &vlen));
	CHECK_EQ_U(vlen, 0);
	lsm_free(v);
	CHECK_DB_OK(db, lsm_stage_get(st, "d", 1, &v, &vlen));
	CHECK_MEMEQ(v, vlen, "back", 4);
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_stage_get(st, "e", 1, &v, &vlen));

	/* key limits */
	CHECK_RC(LSM_INVALID, lsm_stage_put(st, "", 0, "x", 1));
	CHECK_RC(LSM_INVALID, lsm_stage_delete(st, "", 0));
	CHECK_RC(LSM_INVALID, lsm_stage_put(st, big, LSM_MAX_KEY_LEN + 1, "x", 1));
	CHECK_RC(LSM_INVALID, lsm_stage_delete(st, big, LSM_MAX_KEY_LEN + 1));
	CHECK_RC(LSM_INVALID, lsm_stage_get(st, big, LSM_MAX_KEY_LEN + 1, &v, &vlen));
	CHECK_EQ_U(lsm_stage_count(st), 6);
	{
		/* the longest key, which fills a buffer of its own: a spill */
		lsm_stage  *st2;

		CHECK_DB_OK(db, lsm_stage_open(db, 0, &st2));
		CHECK_DB_OK(db, lsm_stage_put(st2, "a", 1, "x", 1));
		CHECK_DB_OK(db, lsm_stage_put(st2, big, LSM_MAX_KEY_LEN, "max", 3));
		CHECK_EQ(lsm_stage_runs(st2), 1);
		CHECK_EQ(count_prefix(dir, "stage."), 1);
		CHECK_DB_OK(db, lsm_stage_get(st2, big, LSM_MAX_KEY_LEN, &v, &vlen));
		CHECK_MEMEQ(v, vlen, "max", 3);
		lsm_free(v);
		CHECK_DB_OK(db, lsm_stage_iter_open(st2, &it));
		lsm_iter_seek(it, NULL, 0);
		CHECK(lsm_iter_valid(it));
		p = lsm_iter_key(it, &vlen);
		CHECK_MEMEQ(p, vlen, "a", 1);
		lsm_iter_next(it);
		p = lsm_iter_key(it, &vlen);
		CHECK_MEMEQ(p, vlen, big, LSM_MAX_KEY_LEN);
		lsm_iter_next(it);
		CHECK(!lsm_iter_valid(it));
		lsm_iter_close(it);
		lsm_stage_abort(st2);
		CHECK_EQ(count_prefix(dir, "stage."), 0);
	}

	/* the iterator shows deletes */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	lsm_iter_seek(it, NULL, 0);
	CHECK(lsm_iter_valid(it) && !lsm_iter_is_delete(it));
	p = lsm_iter_value(it, &vlen);
	CHECK_MEMEQ(p, vlen, "v2", 2);
	lsm_iter_next(it);
	CHECK(lsm_iter_valid(it) && lsm_iter_is_delete(it));
	p = lsm_iter_key(it, &vlen);
	CHECK_MEMEQ(p, vlen, "b", 1);
	lsm_iter_next(it);
	CHECK(lsm_iter_valid(it) && !lsm_iter_is_delete(it));
	lsm_iter_next(it);
	CHECK(lsm_iter_valid(it) && !lsm_iter_is_delete(it));
	p = lsm_iter_value(it, &vlen);
	CHECK_MEMEQ(p, vlen, "back", 4);
	lsm_iter_next(it);
	CHECK(!lsm_iter_valid(it));
	CHECK(!lsm_iter_is_delete(it));
	lsm_iter_seek(it, big, LSM_MAX_KEY_LEN + 1);
	CHECK_RC(LSM_INVALID, lsm_iter_status(it));
	lsm_iter_close(it);

	/* invisible to the store until the commit; lsm_close refuses */
	CHECK_DB_OK(db, lsm_get(db, "b", 1, &v, &vlen));
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "c", 1, &v, &vlen));
	CHECK_RC(LSM_INVALID, lsm_close(db));
	CHECK_RC(LSM_INVALID, lsm_stage_commit(NULL, 0));

	/* a small stage: one batch, no staging directory ever */
	CHECK_EQ(count_prefix(dir, "stage."), 0);
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_get(db, "a", 1, &v, &vlen));
	CHECK_MEMEQ(v, vlen, "v2", 2);
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "b", 1, &v, &vlen));
	CHECK_DB_OK(db, lsm_get(db, "c", 1, &v, &vlen));
	CHECK_EQ_U(vlen, 0);
	lsm_free(v);
	CHECK_DB_OK(db, lsm_get(db, "d", 1, &v, &vlen));
	CHECK_MEMEQ(v, vlen, "back", 4);
	lsm_free(v);

	/* an empty stage commits to nothing; a bad flag frees the stage too */
	CHECK_DB_OK(db, lsm_stage_open(db, 0, &st));
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	CHECK_DB_OK(db, lsm_stage_open(db, 0, &st));
	CHECK_DB_OK(db, lsm_stage_put(st, "z", 1, "z", 1));
	CHECK_RC(LSM_INVALID, lsm_stage_commit(st, 99));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "z", 1, &v, &vlen));
	lsm_stage_abort(NULL);
	CHECK_DB_OK(db, lsm_close(db));

	/* a read-only handle cannot stage */
	lsm_options_init(&ro);
	ro.read_only = 1;
	CHECK_OK(lsm_open(dir, &ro, &rdb));
	CHECK_RC(LSM_INVALID, lsm_stage_open(rdb, 0, &st));
	CHECK_DB_OK(rdb, lsm_close(rdb));
	free(big);
}

/*
 * Lookups in the runs compare keys by their first 8 bytes first: keys that
 * share them (long common prefixes), keys with zero bytes where the fence
 * pads with zeros, keys that are prefixes of others, spread over many
 * runs; every staged key is found with its newest write, every key around
 * them is not, before and after the commit.
 */
TEST(stage_key_shapes)
{
	static const char *const prefixes[] = {"", "a", "ab", "ab\0", "ab\0\0\0\0\0\0",
		"prefix__", "prefix__x", "prefix_", "\xff\xff\xff\xff\xff\xff\xff\xff",
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff"};
	static const size_t plen[] = {0, 1, 2, 3, 8, 8, 9, 7, 8, 9};
	char	   *dir = harness_tmpdir("stage-keys");
	lsm_db	   *db = open_store(dir, 1);
	lsm_stage  *st;
	uint64_t	rng = harness_seed() ^ 0x4e75;
	enum
	{
		NP = 10,
		NS = 300
	};
	static int	state[NP][NS];	/* 0 absent, 1 put (version), 2 deleted */
	static int	ver[NP][NS];
	int			p,
				n,
				round;

	memset(state, 0, sizeof(state));
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (round = 0; round < 4000; round++)
	{
		char		k[32],
					v[32];
		size_t		klen;

		p = (int) (harness_rand64(&rng) % NP);
		n = (int) (harness_rand64(&rng) % NS);
		memcpy(k, prefixes[p], plen[p]);
		k[plen[p]] = (char) (n >> 8);	/* zero bytes in most keys */
		k[plen[p] + 1] = (char) (n & 0xff);
		klen = plen[p] + 2;
		if (harness_rand64(&rng) % 4 == 0)
		{
			CHECK_DB_OK(db, lsm_stage_delete(st, k, klen));
			state[p][n] = 2;
		}
		else
		{
			ver[p][n] = round;
			CHECK_DB_OK(db, lsm_stage_put(st, k, klen, v,
										  (size_t) sprintf(v, "%d", round)));
			state[p][n] = 1;
		}
	}
	CHECK_GT(stage_tables(dir, NULL), 10);
	for (round = 0; round < 2; round++)
	{
		for (p = 0; p < NP; p++)
			for (n = 0; n < NS; n++)
			{
				char		k[32],
							w[32];
				size_t		klen,
							vlen;
				void	   *v;
				int			rc,
							t;

				memcpy(k, prefixes[p], plen[p]);
				k[plen[p]] = (char) (n >> 8);
				k[plen[p] + 1] = (char) (n & 0xff);
				klen = plen[p] + 2;
				for (t = 0; t < 3; t++)
				{
					/* the key, a longer one with a zero byte, a shorter one */
					size_t		l = t == 0 ? klen : t == 1 ? klen + 1 : klen - 1;

					k[klen] = '\0';
					if (t > 0 && (l == klen || l == 0))
						continue;
					rc = round == 0 ? lsm_stage_get(st, k, l, &v, &vlen) :
						lsm_get(db, k, l, &v, &vlen);
					if (t > 0 || state[p][n] == 0)
					{
						/* never written by this test, unless it is another key's */
						if (rc == LSM_OK)
							lsm_free(v);
						continue;
					}
					if (state[p][n] == 2)
						CHECK_RC(round == 0 ? LSM_DELETED : LSM_NOTFOUND, rc);
					else
					{
						CHECK_MSG(rc == LSM_OK, "prefix %d key %d: %s", p, n,
								  lsm_strerror(rc));
						CHECK_MEMEQ(v, vlen, w, (size_t) sprintf(w, "%d", ver[p][n]));
						lsm_free(v);
					}
				}
			}
		if (round == 0)
			CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	}
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
}

/*
 * Tiers: a random load keeps a handful of runs however many buffers it
 * spills, by merging 8 runs of a tier into one of the next; an ascending
 * load gets there without writing anything again (its runs line up), and
 * its lookups of new keys touch no run at all.  Both read back right,
 * before and after the commit.
 */
TEST(stage_tiers)
{
	int			order;

	for (order = 0; order < 2; order++)
	{
		char	   *dir = harness_tmpdir(order ? "stage-tier-r" : "stage-tier-a");
		lsm_db	   *db = open_store(dir, 1);
		model	   *m = model_new();
		smodel	   *s = smodel_new();
		lsm_stage  *st;
		lsm_stats	stats;
		int			i,
					pass,
					spills,
					tables;

		CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
		/* three passes over the keys: 90 and more buffers */
		for (pass = 0; pass < 3; pass++)
			for (i = 0; i < NK; i++)
			{
				int			k = order ? (int) (harness_mix((uint64_t) (pass * NK + i)) % NK) :
					i;
				char		kb[16];
				size_t		klen = key_of(k, kb),
							vlen;
				void	   *v;

				if (order == 0 && pass > 0)
					break;		/* ascending: once */
				/* a new key is looked up first, as INSERT does */
				if (order == 0)
					CHECK_RC(LSM_NOTFOUND, lsm_stage_get(st, kb, klen, &v, &vlen));
				if (order && k % 7 == 0)
					stage_del(db, st, s, k);
				else
					stage_put(db, st, s, k, (uint64_t) (pass * NK + i) + 1);
			}
		tables = stage_tables(dir, &spills);
		printf("# stage_tiers (%s): %d runs, %d tables, %d written\n",
			   order ? "random" : "ascending", lsm_stage_runs(st), tables, spills);
		CHECK_GE(spills, order ? 64 : 30);
		CHECK_LE(lsm_stage_runs(st), 7 * 2 + 1);
		if (order == 0)
		{
			/* lined up: every table written once, all of them still there */
			CHECK_EQ(tables, spills);
		}
		else
			CHECK_LT(tables, spills);	/* merged for real */
		for (i = 0; i < NK; i++)
			check_stage_get(db, st, s, i, "tiers");
		{
			lsm_iter   *it;

			CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
			check_stage_iter(it, s, "tiers");
			lsm_iter_close(it);
		}
		CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
		model_apply(m, s);
		CHECK_DB_OK(db, lsm_get_stats(db, &stats));
		CHECK_EQ_U(stats.ingests, 1);
		check_store(db, m, "tiers, committed");
		CHECK_DB_OK(db, lsm_close(db));
		model_free(m);
		smodel_free(s);
	}
}

/*
 * Every step-th key of stage_nearly_ascending's n holds its value, in
 * stage st or, with st NULL, in the store.
 */
static void
check_near_values(lsm_db *db, lsm_stage *st, int n, int step)
{
	int			i;

	for (i = 0; i < n; i += step)
	{
		char		k[16],
					v[24];
		void	   *got;
		size_t		glen;

		sprintf(k, "n%08d", i);
		CHECK_DB_OK(db, st ? lsm_stage_get(st, k, 9, &got, &glen) :
					lsm_get(db, k, 9, &got, &glen));
		CHECK_MEMEQ(got, glen, v, (size_t) sprintf(v, "value %d", i));
		lsm_free(got);
	}
}

/*
 * A nearly ascending load (keys shuffled within windows of 64, as rows
 * arrive from two interleaved ascending streams or heap pages filled out
 * of order) into a stage whose spills are cut into several tables: the
 * merges of its tiers rewrite only the tables that overlap, around the
 * edges of the runs, so it writes far fewer tables than a load that merges
 * everything (the random order of stage_tiers writes about three times as
 * many as it keeps), and reads back exactly, through lookups, the
 * iterator and, once committed, the store.
 */
TEST(stage_nearly_ascending)
{
	enum
	{
		N = 40000,
		W = 64
	};
	int			order;
	int			written[2];
	int		   *keys = malloc(sizeof(int) * N);
	uint64_t	rng = harness_seed() ^ 0x5a17;

	CHECK(keys != NULL);
	for (order = 0; order < 2; order++)
	{
		char	   *dir = harness_tmpdir(order ? "stage-near" : "stage-asc");
		lsm_db	   *db = open_store(dir, 1);
		lsm_stage  *st;
		lsm_iter   *it;
		int			i,
					n;

		for (i = 0; i < N; i++)
			keys[i] = i;
		/* order 1: each window of W keys in a random order */
		for (i = 0; order == 1 && i < N; i++)
		{
			int			lo = i - i % W,
						j = lo + (int) (harness_rand64(&rng) % (uint64_t) (i - lo + 1)),
						t = keys[i];

			keys[i] = keys[j];
			keys[j] = t;
		}
		CHECK_DB_OK(db, lsm_stage_open(db, 64 * 1024, &st));
		for (i = 0; i < N; i++)
		{
			char		k[16],
						v[24];
			void	   *got;
			size_t		glen;

			sprintf(k, "n%08d", keys[i]);
			CHECK_RC(LSM_NOTFOUND, lsm_stage_get(st, k, 9, &got, &glen));
			CHECK_DB_OK(db, lsm_stage_put(st, k, 9, v,
										  (size_t) sprintf(v, "value %d", keys[i])));
		}
		n = stage_tables(dir, &written[order]);
		printf("# stage_nearly_ascending (%s): %d runs, %d tables kept, %d written\n",
			   order ? "windows of 64" : "ascending", lsm_stage_runs(st), n,
			   written[order]);
		CHECK_LE(lsm_stage_runs(st), 7 * 2 + 1);
		check_near_values(db, st, N, 7);
		CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
		for (lsm_iter_seek(it, NULL, 0), n = 0; lsm_iter_valid(it);
			 lsm_iter_next(it), n++)
		{
			size_t		klen;
			const void *k = lsm_iter_key(it, &klen);
			char		want[16];

			CHECK_MEMEQ(k, klen, want, (size_t) sprintf(want, "n%08d", n));
		}
		CHECK_DB_OK(db, lsm_iter_status(it));
		lsm_iter_close(it);
		CHECK_EQ(n, N);
		CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
		check_near_values(db, NULL, N, 5);
		CHECK_DB_OK(db, lsm_verify(db));
		CHECK_DB_OK(db, lsm_close(db));
	}
	/* merging every table of the tiers would write about 2.5 times as many */
	CHECK_LT(written[1], written[0] * 3 / 2);
	free(keys);
}

/* lsm_write_opt: the flag, not the handle's option, decides the fsync. */
TEST(write_opt_sync)
{
	char	   *dir = harness_tmpdir("write-opt");
	lsm_fault	f;
	lsm_batch  *b = lsm_batch_new();
	lsm_options o;
	lsm_db	   *db;
	int			sync;

	CHECK(b != NULL);
	CHECK_OK(lsm_batch_put(b, "k", 1, "v", 1));
	for (sync = 0; sync <= 1; sync++)
	{
		store_options(&o);
		o.memtable_bytes = 1 << 20;
		o.sync = sync;
		CHECK_OK(lsm_open(dir, &o, &db));
		/* the first write preallocates the log: one write more */
		CHECK_DB_OK(db, lsm_write_opt(db, b, LSM_WRITE_NOSYNC));
		memset(&f, 0, sizeof(f));
		lsm_fault_install(&f);
		CHECK_DB_OK(db, lsm_write_opt(db, b, LSM_WRITE_SYNC));
		CHECK_EQ(f.syncs, 1);
		CHECK_DB_OK(db, lsm_write_opt(db, b, LSM_WRITE_NOSYNC));
		CHECK_EQ(f.syncs, 1);
		CHECK_DB_OK(db, lsm_write_opt(db, b, LSM_WRITE_DEFAULT));
		CHECK_EQ(f.syncs, 1 + sync);
		CHECK_DB_OK(db, lsm_write(db, b));
		CHECK_EQ(f.syncs, 1 + 2 * sync);
		CHECK_RC(LSM_INVALID, lsm_write_opt(db, b, 3));
		CHECK_RC(LSM_INVALID, lsm_write_opt(db, b, -1));
		CHECK_EQ(f.writes, 4);
		lsm_fault_install(NULL);
		CHECK_DB_OK(db, lsm_close(db));
	}
	lsm_batch_free(b);
}

/* ---------------------------------------------------------------------- */
/* The randomized model test. */

/* Checks a sample of staged keys is invisible through db (as in m). */
static void
check_invisible(lsm_db *db, const model *m, const smodel *s, uint64_t *rng,
				const char *ctx)
{
	int			n;

	for (n = 0; n < 100; n++)
	{
		int			i = (int) (harness_rand64(rng) % NK);
		char		k[16];
		size_t		klen = key_of(i, k),
					vlen;
		void	   *v;
		int			rc;

		if (s->state[i] == ST_NONE)
			continue;
		rc = lsm_get(db, k, klen, &v, &vlen);
		if (m->val[i] == NULL)
			CHECK_MSG(rc == LSM_NOTFOUND, "%s: staged %s visible before the "
					  "commit (%s)", ctx, k, lsm_strerror(rc));
		else
		{
			CHECK_MSG(rc == LSM_OK, "%s: get %s: %s", ctx, k, lsm_strerror(rc));
			CHECK_MSG(vlen == m->len[i] && memcmp(v, m->val[i], vlen) == 0,
					  "%s: staged value of %s visible before the commit",
					  ctx, k);
			lsm_free(v);
		}
	}
}

TEST(stage_model)
{
	char	   *dir = harness_tmpdir("stage-model");
	uint64_t	rng = harness_seed() ^ 0x57a9e;
	model	   *m = model_new();
	lsm_db	   *db = open_store(dir, 1),
			   *db2 = open_store(dir, 1);
	uint64_t	ver = 1;
	int			round,
				i,
				commits = 0,
				aborts = 0,
				ingests = 0,
				max_runs = 0,
				max_spills = 0,
				max_l0 = 0;

	/* a store with tables on several levels */
	for (i = 0; i < NK; i++)
		if (harness_rand64(&rng) % 3 != 0)
			store_put(db, m, i, ver++);
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 0; i < 300; i++)
		store_put(db, m, (int) (harness_rand64(&rng) % NK), ver++);

	for (round = 0; round < 24; round++)
	{
		smodel	   *s = smodel_new(),
				   *snap = NULL;
		lsm_stage  *st;
		lsm_iter   *early = NULL;
		char		ctx[96];
		int			nops = 200 + (int) (harness_rand64(&rng) % 2500),
					mode = (int) (harness_rand64(&rng) % 8),
					flags = (int) (harness_rand64(&rng) % 3),
					auto_compact = (int) (harness_rand64(&rng) % 2),
					op;
		size_t		buf = round % 6 == 5 ? 0 : 4096;
		bool		abort_it = mode == 0;

		snprintf(ctx, sizeof(ctx), "round %d (%d ops, buffer %zu, %s)", round,
				 nops, buf, abort_it ? "abort" : "commit");
		/* the committing handle compacts after a commit, or leaves it */
		CHECK_DB_OK(db, lsm_close(db));
		db = open_store(dir, auto_compact);
		if (buf == 0)
			nops = 20 + nops / 40;	/* stays in the buffer: one batch */

		CHECK_DB_OK(db, lsm_stage_open(db, buf, &st));
		for (op = 0; op < nops; op++)
		{
			uint64_t	r = harness_rand64(&rng);
			int			k;

			if (r % 10 < 4)
			{
				/* a key the store holds, if we find one */
				k = (int) ((r >> 8) % NK);
				while (m->val[k] == NULL && k < NK - 1)
					k++;
			}
			else if (r % 10 < 7)
			{
				/* a key staged before (or any) */
				k = (int) ((r >> 8) % NK);
				while (s->state[k] == ST_NONE && k < NK - 1)
					k++;
			}
			else
				k = (int) ((r >> 8) % NK);
			if ((r >> 40) % 10 < 7)
				stage_put(db, st, s, k, ver++);
			else
				stage_del(db, st, s, k);

			if (op % 250 == 249)
			{
				int			n;

				for (n = 0; n < 60; n++)
					check_stage_get(db, st, s,
									(int) (harness_rand64(&rng) % NK), ctx);
				check_stage_get(db, st, s, k, ctx);
			}
			if (op == nops / 2)
			{
				lsm_iter   *it;

				/* a full check of the stage, and writes to the store */
				for (i = 0; i < NK; i++)
					check_stage_get(db, st, s, i, ctx);
				CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
				check_stage_iter(it, s, ctx);
				lsm_iter_close(it);
				for (i = 0; i < 40; i++)
				{
					int			j = (int) (harness_rand64(&rng) % NK);

					if (i % 5 == 4)
						store_del(i % 2 ? db : db2, m, j);
					else
						store_put(i % 2 ? db : db2, m, j, ver++);
				}
				/* an iterator whose snapshot outlives the commit */
				CHECK_DB_OK(db, lsm_stage_iter_open(st, &early));
				snap = smodel_dup(s);
			}
		}
		for (i = 0; i < NK; i++)
			check_stage_get(db, st, s, i, ctx);
		if (lsm_stage_runs(st) > max_runs)
			max_runs = lsm_stage_runs(st);
		if (buf == 0)
			CHECK_EQ(lsm_stage_runs(st), 0);
		else if (nops > 600)
			CHECK_GT(lsm_stage_runs(st), 0);
		/* the buffer's bound, its arena's 64 KiB chunks, a little per table */
		CHECK(lsm_stage_bytes(st) < 16 * 1024 + 2 * 64 * 1024 +
			  1024 * (size_t) (stage_tables(dir, NULL) + 1));
		if (lsm_stage_runs(st) > 0)
		{
			int			spills;
			int			tables = stage_tables(dir, &spills);

			if (spills > max_spills)
				max_spills = spills;
			/* tiers of 8: runs stay logarithmic in the spills */
			CHECK_LE(lsm_stage_runs(st), 7 * 3 + 1);
			CHECK_LE(lsm_stage_runs(st), tables);
		}
		CHECK_EQ(count_prefix(dir, "stage."), lsm_stage_runs(st) > 0 ? 1 : 0);

		/* nothing is visible before the commit, to this handle or another */
		check_invisible(db, m, s, &rng, ctx);
		CHECK_DB_OK(db2, lsm_refresh(db2));
		check_invisible(db2, m, s, &rng, ctx);

		if (abort_it)
		{
			lsm_stage_abort(st);
			aborts++;
		}
		else
		{
			int			runs = lsm_stage_runs(st),
						l0;

			CHECK_DB_OK(db, lsm_stage_commit(st, flags));
			model_apply(m, s);
			commits++;
			if (runs > 0)
			{
				ingests++;
				harness_tables(db, &l0);
				if (!auto_compact)
					CHECK_GE(l0, runs);
				if (l0 > max_l0)
					max_l0 = l0;
			}
		}
		CHECK_EQ(count_prefix(dir, "stage."), 0);
		if (early)
		{
			/* the stage is gone; its iterator still has its snapshot */
			check_stage_iter(early, snap, ctx);
			lsm_iter_close(early);
			smodel_free(snap);
		}
		check_store(db, m, ctx);
		CHECK_DB_OK(db2, lsm_refresh(db2));
		check_reads(db2, m, ctx);

		if (round % 4 == 3)
		{
			/* compaction merges the ingested tables; tombstones hold */
			CHECK_DB_OK(db, round % 8 == 7 ? lsm_compact_all(db) : lsm_compact(db));
			check_store(db, m, ctx);
			CHECK_DB_OK(db2, lsm_close(db2));
			db2 = open_store(dir, 1);
			check_reads(db2, m, ctx);
			CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(db, NULL));
		}
		smodel_free(s);
	}
	CHECK_DB_OK(db, lsm_close(db));
	CHECK_DB_OK(db2, lsm_close(db2));
	db = open_store(dir, 1);
	check_store(db, m, "reopened");
	CHECK_DB_OK(db, lsm_compact_all(db));
	check_store(db, m, "compacted");
	CHECK_DB_OK(db, lsm_close(db));
	printf("# stage_model: %d commits (%d ingests, up to %d runs of up to %d "
		   "tables written, %d level-0 tables), %d aborts\n", commits, ingests,
		   max_runs, max_spills, max_l0, aborts);
	CHECK_GT(ingests, 0);
	model_free(m);
}

/*
 * Deletes staged over keys in the deepest level: after the ingest they hide
 * them, and compaction keeps them hidden (the tombstones survive level 0
 * until no deeper level holds the key).
 */
/* Files per level of the handle's version. */
static void
level_files(lsm_db *db, int *files)
{
	lsm_stats	st;
	int			l;

	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		files[l] = st.level[l].files;
}

/* Stages puts of keys lo .. hi - 1 at version ver, ascending. */
static void
stage_put_range(lsm_db *db, lsm_stage *st, smodel *s, int lo, int hi,
				uint64_t ver)
{
	int			i;

	for (i = lo; i < hi; i++)
		stage_put(db, st, s, i, ver);
}

/* Commits st and applies s to m (s is emptied). */
static void
commit_into(lsm_db *db, lsm_stage *st, smodel *s, model *m)
{
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	model_apply(m, s);
	memset(s->state, 0, sizeof(s->state));
}

/* lsm_log_fn of no_orphans: counts the files lsm_verify reports unnamed */
static void
count_orphan(void *arg, int level, const char *msg)
{
	(void) level;
	if (strstr(msg, "not named by its MANIFEST") != NULL)
		(*(int *) arg)++;
}

/*
 * Checks that the store in dir holds no file its manifest does not name:
 * an ingest that changed the levels >= 1 removed what it replaced (the
 * value filter hierarchy's old nodes).
 */
static void
no_orphans(const char *dir, const char *what)
{
	lsm_options o;
	lsm_db	   *db = NULL;
	int			orphans = 0;

	store_options(&o);
	o.log = count_orphan;
	o.log_arg = &orphans;
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_MSG(orphans == 0, "%s: %d files the manifest does not name", what,
			  orphans);
	CHECK_OK(lsm_close(db));
}

/*
 * Where an ingest puts its tables: the deepest level free of overlap at and
 * above it.  An ascending load into an empty store lands in the last level
 * without a compaction; a disjoint one next to it too; a stage that writes
 * the same keys twice (two overlapping runs) puts the newer run above the
 * older; deletes of deep keys land above them; a memtable holding keys of
 * the range keeps the ingest in level 0; and so does another process
 * compacting (LOCK.compact held).  The store matches the model throughout,
 * after compaction and reopened.
 */
TEST(stage_ingest_levels)
{
	char	   *dir = harness_tmpdir("stage-levels");
	char	   *lock = harness_path(dir, "LOCK.compact");
	model	   *m = model_new();
	smodel	   *s = smodel_new();
	lsm_db	   *db = open_store(dir, 1);
	lsm_stage  *st;
	lsm_stats	stats;
	int			f[LSM_MAX_LEVELS],
				g[LSM_MAX_LEVELS],
				fd,
				l,
				i;

	/* an ascending load into an empty store: the last level, no rewrite */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 0, 400, 1);
	CHECK_GT(stage_tables(dir, NULL), 3);
	commit_into(db, st, s, m);
	CHECK_DB_OK(db, lsm_get_stats(db, &stats));
	level_files(db, f);
	for (l = 0; l < LSM_MAX_LEVELS - 1; l++)
		CHECK_EQ(f[l], 0);
	CHECK_GT(f[LSM_MAX_LEVELS - 1], 3);
	CHECK_EQ_U(stats.compactions, 0);
	check_store(db, m, "ascending load");

	/* a level-0 table beside the range, then a load past both */
	for (i = 400; i < 450; i++)
		store_put(db, m, i, 2);
	CHECK_DB_OK(db, lsm_flush(db));
	level_files(db, f);
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 500, 900, 3);
	commit_into(db, st, s, m);
	level_files(db, g);
	CHECK_EQ(g[0], f[0]);
	CHECK_GT(g[LSM_MAX_LEVELS - 1], f[LSM_MAX_LEVELS - 1]);
	check_store(db, m, "disjoint load");
	no_orphans(dir, "disjoint load");

	/* the same keys twice in one stage: two runs, the newer above */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 1000, 1200, 4);
	stage_put_range(db, st, s, 1000, 1200, 5);
	commit_into(db, st, s, m);
	level_files(db, f);
	CHECK_GT(f[LSM_MAX_LEVELS - 2], 0);
	check_store(db, m, "two runs of the same keys");
	no_orphans(dir, "two runs of the same keys");

	/* deletes and puts over deep keys: above them */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (i = 0; i < 900; i += 3)
		stage_del(db, st, s, i);
	for (i = 1; i < 900; i += 7)
		stage_put(db, st, s, i, 6);
	commit_into(db, st, s, m);
	check_store(db, m, "deletes over deep keys");
	no_orphans(dir, "deletes over deep keys");

	/* keys of the range in the memtable: the ingest stays in level 0 */
	store_put(db, m, 1300, 7);
	level_files(db, f);
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 1250, 1350, 8);
	commit_into(db, st, s, m);
	level_files(db, g);
	CHECK_GT(g[0], f[0] + 1);
	check_store(db, m, "memtable overlapping");

	/* another process compacting: level 0 */
	CHECK_DB_OK(db, lsm_compact_all(db));
	level_files(db, f);
	CHECK_EQ(f[0], 0);
	fd = open(lock, O_RDWR);
	CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 1400, 1500, 9);
	commit_into(db, st, s, m);
	level_files(db, g);
	CHECK_GT(g[0], 0);
	for (l = 1; l < LSM_MAX_LEVELS; l++)
		CHECK_EQ(g[l], f[l]);
	close(fd);
	check_store(db, m, "LOCK.compact held");

	check_compacted_reopened(dir, db, m);
	free(lock);
	smodel_free(s);
	model_free(m);
}

/*
 * lsm_stage_truncate: a stage that replaces the store.  The store holds
 * rows in its levels and its memtable, the stage spilled writes before the
 * truncate; after it, puts and deletes of some keys.  Lookups answer
 * "deleted" for every key the stage does not write; an abort changes
 * nothing; the commit leaves exactly the staged puts, seen by a second
 * handle after lsm_refresh (its memtable dropped), after compaction and
 * reopened, with the dropped tables' files gone and one log.  A truncate
 * with nothing staged after it empties the store.
 */
TEST(stage_truncate)
{
	char	   *dir = harness_tmpdir("stage-trunc");
	model	   *m = model_new(),
			   *after = model_new();
	smodel	   *s = smodel_new();
	lsm_db	   *db = open_store(dir, 1),
			   *db2 = open_store(dir, 1);
	lsm_stage  *st;
	lsm_stats	stats;
	char		k[16];
	void	   *v;
	size_t		vlen;
	int			l,
				i;

	for (i = 0; i < NK; i++)
		store_put(db, m, i, 1);
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 0; i < 100; i++)
		store_put(db, m, i, 2);
	CHECK_DB_OK(db2, lsm_refresh(db2));
	check_store(db2, m, "second handle before");

	/* truncated, then aborted: nothing changes */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 200, 400, 3);
	CHECK_GT(stage_tables(dir, NULL), 1);
	CHECK_DB_OK(db, lsm_stage_truncate(st));
	CHECK_EQ(lsm_stage_truncated(st), 1);
	CHECK_EQ(stage_tables(dir, NULL), 0);
	lsm_stage_abort(st);
	check_store(db, m, "truncated stage aborted");

	/* truncated, then written, then committed */
	memset(s->state, 0, sizeof(s->state));
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	stage_put_range(db, st, s, 200, 400, 3);
	CHECK_DB_OK(db, lsm_stage_truncate(st));
	CHECK_EQ_U(lsm_stage_count(st), 0);
	memset(s->state, 0, sizeof(s->state));
	stage_put_range(db, st, s, 10, 300, 4);
	for (i = 20; i < 30; i++)
		stage_del(db, st, s, i);
	stage_put(db, st, s, 1400, 4);
	CHECK_GT(stage_tables(dir, NULL), 1);
	for (i = 0; i < NK; i++)
	{
		size_t		klen = key_of(i, k);
		int			rc = lsm_stage_get(st, k, klen, &v, &vlen);

		if (s->state[i] == ST_PUT)
		{
			CHECK_MSG(rc == LSM_OK, "get %s: %s", k, lsm_strerror(rc));
			lsm_free(v);
		}
		else
			CHECK_MSG(rc == LSM_DELETED, "get %s: %s", k, lsm_strerror(rc));
	}
	/*
	 * committed as the PostgreSQL glue commits a TRUNCATE: under lsm_lock
	 * with LOCK.compact, which the commit must not release before
	 * lsm_unlock does
	 */
	CHECK_DB_OK(db, lsm_lock(db, LSM_LOCK_COMPACTION));
	CHECK(lsm_compaction_running(db2));
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	CHECK(lsm_compaction_running(db2));
	lsm_unlock(db);
	CHECK(!lsm_compaction_running(db2));
	model_apply(after, s);
	check_store(db, after, "truncated and committed");
	CHECK_DB_OK(db, lsm_get_stats(db, &stats));
	CHECK_EQ_U(stats.memtable_entries, 0);
	CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(db, NULL));
	CHECK_EQ(harness_count_files(dir, ".log"), 1);
	CHECK_DB_OK(db2, lsm_refresh(db2));
	check_store(db2, after, "second handle after");
	CHECK_DB_OK(db2, lsm_close(db2));
	check_compacted_reopened(dir, db, after);

	/* nothing staged after the truncate: an empty store */
	db = open_store(dir, 1);
	model_free(after);
	after = model_new();
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	CHECK_DB_OK(db, lsm_stage_truncate(st));
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	check_store(db, after, "empty");
	CHECK_DB_OK(db, lsm_get_stats(db, &stats));
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		CHECK_EQ(stats.level[l].files, 0);
	check_compacted_reopened(dir, db, after);
	smodel_free(s);
	model_free(m);
	model_free(after);
}

TEST(stage_deletes_deep_keys)
{
	char	   *dir = harness_tmpdir("stage-del");
	model	   *m = model_new();
	lsm_db	   *db = open_store(dir, 0);
	lsm_stage  *st;
	smodel	   *s = smodel_new();
	lsm_stats	stats;
	int			i;

	for (i = 0; i < NK; i++)
		store_put(db, m, i, 1);
	CHECK_DB_OK(db, lsm_compact_all(db));
	CHECK_DB_OK(db, lsm_get_stats(db, &stats));
	CHECK_EQ(stats.level[0].files, 0);
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (i = 0; i < NK; i += 2)
		stage_del(db, st, s, i);
	for (i = 1; i < NK; i += 6)
		stage_put(db, st, s, i, 2);
	CHECK_GT(stage_tables(dir, NULL), 3);
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	model_apply(m, s);
	CHECK_DB_OK(db, lsm_get_stats(db, &stats));
	CHECK_EQ_U(stats.ingests, 1);
	CHECK_GT(stats.level[0].files, 3);
	CHECK_EQ_U(stats.level[0].entries, (uint64_t) (NK / 2 + NK / 6));
	check_store(db, m, "after the ingest");
	CHECK_DB_OK(db, lsm_compact(db));
	check_store(db, m, "after lsm_compact");
	check_compacted_reopened(dir, db, m);
	smodel_free(s);
	model_free(m);
}

/* ---------------------------------------------------------------------- */
/* Backwards. */

/*
 * The last key the stage model s writes that is <= target (target NULL:
 * the last it writes), counting down from key below (exclusive); -1 if
 * none.
 */
static int
staged_le(const smodel *s, const char *target, size_t tlen, int below)
{
	int			i;

	for (i = below - 1; i >= 0; i--)
	{
		char		k[16];
		size_t		klen = key_of(i, k);

		if (s->state[i] != ST_NONE &&
			(target == NULL || harness_key_cmp(k, klen, target, tlen) <= 0))
			return i;
	}
	return -1;
}

/* The iterator is on the stage model's entry for key i (i < 0: the end). */
static void
check_staged(lsm_iter *it, const smodel *s, int i, const char *ctx, int step)
{
	char		k[16];
	size_t		klen,
				iklen,
				ivlen;
	const void *ik,
			   *iv;

	if (i < 0)
	{
		ik = lsm_iter_key(it, &iklen);
		CHECK_MSG(!lsm_iter_valid(it), "%s, step %d: %.*s after the first "
				  "staged key", ctx, step, (int) iklen, (const char *) ik);
		CHECK_OK(lsm_iter_status(it));
		return;
	}
	klen = key_of(i, k);
	CHECK_MSG(lsm_iter_valid(it), "%s, step %d: ended (%s), expected %s", ctx,
			  step, lsm_strerror(lsm_iter_status(it)), k);
	ik = lsm_iter_key(it, &iklen);
	iv = lsm_iter_value(it, &ivlen);
	CHECK_MSG(harness_key_cmp(ik, iklen, k, klen) == 0, "%s, step %d: %.*s, "
			  "expected %s", ctx, step, (int) iklen, (const char *) ik, k);
	if (s->state[i] == ST_DEL)
	{
		CHECK_MSG(lsm_iter_is_delete(it), "%s: %s should be a delete", ctx, k);
		CHECK_EQ_U(ivlen, 0);
	}
	else
	{
		CHECK_MSG(!lsm_iter_is_delete(it), "%s: %s is not a delete", ctx, k);
		CHECK_MEMEQ(iv, ivlen, s->val[i], s->len[i]);
	}
}

/*
 * A reverse iterator just seeked to target (NULL: the last key) against
 * the stage model: up to steps entries (all if steps < 0) from the last
 * staged key <= target down, then the end if it got there.  Returns the
 * key index it stopped at (the next one expected), -1 past the first.
 */
static int
check_staged_back(lsm_iter *it, const smodel *s, const char *target,
				  size_t tlen, int steps, const char *ctx)
{
	int			i = staged_le(s, target, tlen, NK),
				n;

	for (n = 0; steps < 0 || n < steps; n++)
	{
		check_staged(it, s, i, ctx, n);
		if (i < 0)
			break;
		lsm_iter_next(it);
		i = staged_le(s, NULL, 0, i);
	}
	return i;
}

/*
 * A target for a seek back, into buf: a key (staged or not), just after
 * one (a NUL or a '5' added: before the next key), a key cut short (before
 * the ten keys it starts), the empty key, "a" or "k" (before every key),
 * "l", "k99999" or 0xFF 0xFF (after every key), or NULL (*tlen 0).
 */
static const char *
back_target(uint64_t *rng, char *buf, size_t *tlen)
{
	int			i = (int) (harness_rand64(rng) % NK);
	size_t		n = key_of(i, buf);

	switch (harness_rand64(rng) % 12)
	{
		case 0:
			*tlen = 0;
			return NULL;
		case 1:
		case 2:
		case 3:
			break;
		case 4:
			buf[n++] = '\0';
			break;
		case 5:
			buf[n++] = '5';
			break;
		case 6:
			n--;
			break;
		case 7:
			n = 0;
			break;
		case 8:
			n = (size_t) sprintf(buf, harness_rand64(rng) % 2 ? "a" : "k");
			break;
		case 9:
			n = (size_t) sprintf(buf, harness_rand64(rng) % 2 ? "l" : "k99999");
			break;
		case 10:
			n = (size_t) sprintf(buf, "\xff\xff");
			break;
		default:
			n = key_of(NK - 1, buf);
			break;
	}
	*tlen = n;
	return buf;
}

/* One entry read from a stage iterator. */
typedef struct sentry
{
	char		key[16];
	size_t		klen;
	char		val[256];
	size_t		vlen;
	int			del;
} sentry;

/*
 * Stages one more write (a delete if del) of a random key in state want
 * (any if ST_NONE), never the first or the last key; returns its index.
 */
static int
stage_one(lsm_db *db, lsm_stage *st, smodel *s, int want, bool del,
		  uint64_t *rng, uint64_t *ver)
{
	int			i = 1 + (int) (harness_rand64(rng) % (NK - 2)),
				n;

	for (n = 0; want != ST_NONE && s->state[i] != want && n < NK; n++)
		i = i == NK - 2 ? 1 : i + 1;
	if (del)
		stage_del(db, st, s, i);
	else
		stage_put(db, st, s, i, (*ver)++);
	return i;
}

/* Highest table number the stage has written (spills and merges). */
static int
stage_written(const char *dir)
{
	int			n;

	stage_tables(dir, &n);
	return n;
}

/*
 * A stage's iterator backwards (lsm_iter_reverse).  The stage holds puts
 * and deletes spilled to runs of tables and, in its buffer, a last few
 * that overwrite keys the runs hold (deletes of keys they put, puts of
 * keys they delete, a key written twice), over a store with rows on
 * several levels and in its memtable, which the stage iterator must not
 * show.  Backwards is exactly forwards reversed, deletes included with the
 * same lsm_iter_is_delete, and both are the model of the stage; seeks back
 * to staged keys, unstaged ones, between keys, before the first, after the
 * last and NULL land on the model's entry and step back along it, through
 * one iterator seeking again and again and through fresh ones.  Iterators
 * opened before later writes to the stage (newer versions in the same
 * buffer, keys before and after all others, then spills and merges of
 * runs) keep their snapshot backwards, one of them positioned before the
 * writes.
 * lsm_iter_reverse refuses a positioned iterator (forwards or backwards,
 * valid or not, of a stage or of the store) and a value search (of any
 * strategy), which go on as before; a seek back to a key over the limit
 * stops the iterator with LSM_INVALID; and an iterator opened before the
 * stage is aborted can still be made reverse and read afterwards.
 */
TEST(stage_reverse_iter)
{
	char	   *dir = harness_tmpdir("stage-reverse");
	uint64_t	rng = harness_seed() ^ 0x5eb5e;
	model	   *m = model_new();
	smodel	   *s = smodel_new(),
			   *snap;
	lsm_db	   *db = open_store(dir, 1);
	sentry	   *fwd = calloc(NK, sizeof(sentry));
	lsm_stage  *st;
	lsm_iter   *it,
			   *early,
			   *early_mid;
	lsm_stats	stats;
	uint64_t	ver = 1;
	char		t[16];
	const char *target;
	size_t		tlen;
	int			levels = 0,
				written,
				n = 0,
				mid,
				i,
				q;

	CHECK(fwd != NULL);

	/* the store: tables on several levels and rows in its memtable */
	for (q = 0; q < 4000; q++)
	{
		i = (int) (harness_rand64(&rng) % NK);
		if (harness_rand64(&rng) % 6 == 0)
			store_del(db, m, i);
		else
			store_put(db, m, i, ver++);
	}
	CHECK_DB_OK(db, lsm_get_stats(db, &stats));
	for (i = 0; i < LSM_MAX_LEVELS; i++)
		levels += stats.level[i].files > 0;
	CHECK_GE(levels, 2);
	CHECK_GT(stats.memtable_entries, 0);

	/* the stage: puts and deletes spilled to runs by a 4 KiB buffer */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (q = 0; q < 2500; q++)
		stage_one(db, st, s, ST_NONE, harness_rand64(&rng) % 3 == 0, &rng,
				  &ver);
	CHECK_GT(lsm_stage_runs(st), 1);
	/* write until a spill starts a fresh buffer, then ten that stay there */
	written = stage_written(dir);
	for (q = 0; stage_written(dir) == written; q++)
	{
		CHECK(q < 1000);
		stage_one(db, st, s, ST_NONE, false, &rng, &ver);
	}
	written = stage_written(dir);
	for (q = 0; q < 10; q++)
	{
		if (q % 3 == 0)
			stage_one(db, st, s, ST_PUT, true, &rng, &ver);
		else if (q % 3 == 1)
			stage_one(db, st, s, ST_DEL, false, &rng, &ver);
		else
		{
			/* written twice in the buffer: put then delete, or the reverse */
			i = stage_one(db, st, s, ST_NONE, q % 2 == 0, &rng, &ver);
			if (q % 2 == 0)
				stage_put(db, st, s, i, ver++);
			else
				stage_del(db, st, s, i);
		}
	}
	CHECK_EQ(stage_written(dir), written);

	/* forwards: the model, recorded */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	check_stage_iter(it, s, "stage forwards");
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
	{
		sentry	   *e = &fwd[n++];
		const void *k = lsm_iter_key(it, &e->klen);
		const void *v = lsm_iter_value(it, &e->vlen);

		CHECK(n <= NK && e->klen <= sizeof(e->key) &&
			  e->vlen <= sizeof(e->val));
		memcpy(e->key, k, e->klen);
		memcpy(e->val, v, e->vlen);
		e->del = lsm_iter_is_delete(it);
	}
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);
	CHECK_GT(n, NK / 2);

	/* backwards: the forward scan reversed, and the model */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	CHECK_OK(lsm_iter_reverse(it));
	CHECK(!lsm_iter_valid(it));
	lsm_iter_seek(it, NULL, 0);
	for (q = n - 1; q >= 0; q--)
	{
		const sentry *e = &fwd[q];
		size_t		klen,
					vlen;
		const void *k = lsm_iter_key(it, &klen);
		const void *v = lsm_iter_value(it, &vlen);

		CHECK_MSG(lsm_iter_valid(it), "backward scan ended (%s) at %d of %d",
				  lsm_strerror(lsm_iter_status(it)), n - 1 - q, n);
		CHECK_MEMEQ(k, klen, e->key, e->klen);
		CHECK_MEMEQ(v, vlen, e->val, e->vlen);
		CHECK_EQ(lsm_iter_is_delete(it), e->del);
		lsm_iter_next(it);
	}
	CHECK_MSG(!lsm_iter_valid(it), "backward scan longer than forwards (%d)",
			  n);
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_seek(it, NULL, 0);
	check_staged_back(it, s, NULL, 0, -1, "backward scan");
	lsm_iter_close(it);

	/* seeks back: one iterator seeking again and again, and fresh ones */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	CHECK_OK(lsm_iter_reverse(it));
	for (q = 0; q < 400; q++)
	{
		lsm_iter   *one = it;

		target = back_target(&rng, t, &tlen);
		if (q % 10 == 9)
		{
			CHECK_DB_OK(db, lsm_stage_iter_open(st, &one));
			CHECK_OK(lsm_iter_reverse(one));
		}
		lsm_iter_seek(one, target, tlen);
		check_staged_back(one, s, target, tlen,
						  1 + (int) (harness_rand64(&rng) % 8), "seek back");
		if (one != it)
			lsm_iter_close(one);
	}
	lsm_iter_close(it);

	/* iterators opened now keep this snapshot through later writes */
	snap = smodel_dup(s);
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &early));
	CHECK_OK(lsm_iter_reverse(early));
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &early_mid));
	CHECK_OK(lsm_iter_reverse(early_mid));
	tlen = key_of(NK / 2, t);
	lsm_iter_seek(early_mid, t, tlen);
	mid = check_staged_back(early_mid, snap, t, tlen, 3,
							"held iterator, before the writes");
	/*
	 * In the same buffer: newer versions of staged keys, and keys before
	 * and after all the others (stage_one never writes them).
	 */
	written = stage_written(dir);
	for (q = 0; q < 6; q++)
		stage_one(db, st, s, q % 2 ? ST_PUT : ST_DEL, q % 2, &rng, &ver);
	CHECK(snap->state[0] == ST_NONE && snap->state[NK - 1] == ST_NONE);
	stage_put(db, st, s, 0, ver++);
	stage_del(db, st, s, NK - 1);
	CHECK_EQ(stage_written(dir), written);
	lsm_iter_seek(early, NULL, 0);
	check_staged_back(early, snap, NULL, 0, -1,
					  "held iterator, after writes to its buffer");
	/* then spills (and merges of runs) */
	for (q = 0; q < 800; q++)
		stage_one(db, st, s, ST_NONE, harness_rand64(&rng) % 3 == 0, &rng,
				  &ver);
	CHECK_GT(stage_written(dir), written);
	lsm_iter_seek(early, NULL, 0);
	check_staged_back(early, snap, NULL, 0, -1,
					  "held iterator, after spills");
	for (q = 0; mid >= 0; q++)
	{
		check_staged(early_mid, snap, mid, "held positioned iterator", q);
		lsm_iter_next(early_mid);
		mid = staged_le(snap, NULL, 0, mid);
	}
	check_staged(early_mid, snap, -1, "held positioned iterator", q);
	lsm_iter_close(early);
	lsm_iter_close(early_mid);
	smodel_free(snap);
	/* and a new one sees the new state */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	check_staged_back(it, s, NULL, 0, -1, "backward scan after the writes");
	lsm_iter_close(it);

	/* refused once positioned (forwards): it goes on forwards */
	i = staged_le(s, NULL, 0, NK);
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	lsm_iter_seek(it, NULL, 0);
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	for (q = 0; q < NK && s->state[q] == ST_NONE; q++)
		;
	check_staged(it, s, q, "forwards after a refused reverse", 0);
	lsm_iter_next(it);
	for (q++; q < NK && s->state[q] == ST_NONE; q++)
		;
	check_staged(it, s, q, "forwards after a refused reverse", 1);
	lsm_iter_close(it);
	/* positioned on nothing, past the last key: refused as well */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	lsm_iter_seek(it, "l", 1);
	CHECK(!lsm_iter_valid(it));
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	lsm_iter_close(it);
	/* made reverse twice before the seek: fine; after it: refused */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	CHECK_OK(lsm_iter_reverse(it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	check_staged_back(it, s, NULL, 0, 5, "backwards after a refused reverse");
	lsm_iter_close(it);
	/* a reverse iterator seeked before the first key: refused */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, "a", 1);
	CHECK(!lsm_iter_valid(it));
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	lsm_iter_close(it);

	/* a store iterator, positioned: refused */
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	CHECK(lsm_iter_valid(it));
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	lsm_iter_close(it);

	/* a seek back to a key longer than the limit stops it, as forwards */
	{
		char	   *big = malloc(LSM_MAX_KEY_LEN + 1);

		CHECK(big != NULL);
		memset(big, 'k', LSM_MAX_KEY_LEN + 1);
		CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
		CHECK_OK(lsm_iter_reverse(it));
		lsm_iter_seek(it, big, LSM_MAX_KEY_LEN + 1);
		CHECK(!lsm_iter_valid(it));
		CHECK_RC(LSM_INVALID, lsm_iter_status(it));
		lsm_iter_close(it);
		free(big);
	}

	/* value searches, of every strategy: refused */
	for (q = LSM_SEARCH_AUTO; q <= LSM_SEARCH_SCAN; q++)
	{
		CHECK_DB_OK(db, lsm_value_search_with(db, 0, "c2", 2, q, &it));
		CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
		lsm_iter_close(it);
	}
	/* and one refused still finds its rows */
	CHECK_DB_OK(db, lsm_value_search(db, 0, "c1", 2, &it));
	CHECK_RC(LSM_INVALID, lsm_iter_reverse(it));
	{
		static char seen[NK];
		int			found = 0,
					want = 0;

		memset(seen, 0, sizeof(seen));
		for (; lsm_iter_valid(it); lsm_iter_next(it))
		{
			size_t		klen;
			const char *k = lsm_iter_key(it, &klen);
			int			ki;

			CHECK(klen == 6 && k[0] == 'k');
			ki = harness_key_num(k, klen, 1);
			CHECK(ki >= 0 && ki < NK && !seen[ki]);
			CHECK_MSG(model_cat(m, ki) == 1, "value search c1 found %.6s", k);
			seen[ki] = 1;
			found++;
		}
		CHECK_OK(lsm_iter_status(it));
		for (i = 0; i < NK; i++)
			want += model_cat(m, i) == 1;
		CHECK_EQ(found, want);
		CHECK_GT(found, 0);
	}
	lsm_iter_close(it);

	/* an iterator outlives its stage: made reverse after the abort */
	CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
	lsm_stage_abort(st);
	CHECK_EQ(count_prefix(dir, "stage."), 0);
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	check_staged_back(it, s, NULL, 0, -1, "backwards after the abort");
	target = back_target(&rng, t, &tlen);
	lsm_iter_seek(it, target, tlen);
	check_staged_back(it, s, target, tlen, 10,
					  "seek back after the abort");
	lsm_iter_close(it);
	CHECK_DB_OK(db, lsm_close(db));
	free(fwd);
	smodel_free(s);
	model_free(m);
}

/* ---------------------------------------------------------------------- */
/* Other processes. */

/*
 * A writer process commits overwrites of the staged keys (and flushes)
 * between lsm_stage_open and lsm_stage_commit: the ingest must still win.
 * A reader process that opened the store before the commit sees the
 * ingest after lsm_refresh, and the other process's writes after it win
 * again.
 */
TEST(stage_concurrent_writer)
{
	char	   *dir = harness_tmpdir("stage-conc");
	model	   *m = model_new();
	smodel	   *s = smodel_new();
	lsm_db	   *db = open_store(dir, 1);
	lsm_stage  *st;
	int			go[2],
				done[2];
	pid_t		reader,
				writer;
	int			status,
				i;
	char		c;

	for (i = 0; i < NK; i++)
		store_put(db, m, i, 1);
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (i = 0; i < NK; i += 3)
		stage_put(db, st, s, i, 2);
	for (i = 1; i < NK; i += 3)
		stage_del(db, st, s, i);
	CHECK_GT(stage_tables(dir, NULL), 2);

	/* the writer: overwrites every key, with a flush on the way */
	writer = fork();
	CHECK(writer >= 0);
	if (writer == 0)
	{
		lsm_db	   *w = open_store(dir, 1);

		for (i = 0; i < NK; i++)
		{
			store_put(w, NULL, i, 3);
			if (i == NK / 2)
				CHECK_DB_OK(w, lsm_flush(w));
		}
		CHECK_DB_OK(w, lsm_close(w));
		_exit(0);
	}
	CHECK_EQ(waitpid(writer, &status, 0), writer);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < NK; i++)
	{
		size_t		len;
		void	   *v = row_of(i, 3, &len);

		model_set(m, i, v, len);
		lsm_free(v);
	}

	/* the reader: opens now, checks after the commit */
	CHECK(pipe(go) == 0 && pipe(done) == 0);
	reader = fork();
	CHECK(reader >= 0);
	if (reader == 0)
	{
		lsm_options o;
		lsm_db	   *r;

		close(done[0]);
		close(go[1]);
		store_options(&o);
		o.read_only = 1;
		CHECK_OK(lsm_open(dir, &o, &r));
		check_reads(r, m, "reader before the commit");
		CHECK(write(done[1], "r", 1) == 1);
		CHECK(read(go[0], &c, 1) == 1);
		model_apply(m, s);
		CHECK_DB_OK(r, lsm_refresh(r));
		check_store(r, m, "reader after lsm_refresh");
		CHECK_DB_OK(r, lsm_close(r));
		_exit(0);
	}
	/* our copies of the child's ends: its death then ends our reads */
	close(done[1]);
	close(go[0]);
	CHECK_MSG(read(done[0], &c, 1) == 1, "the reader died before the commit");
	CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	model_apply(m, s);
	check_store(db, m, "after the commit");
	CHECK(write(go[1], "g", 1) == 1);
	CHECK_EQ(waitpid(reader, &status, 0), reader);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "the reader failed (status %d)", status);

	/* later writes of the other process win over the ingest */
	writer = fork();
	CHECK(writer >= 0);
	if (writer == 0)
	{
		lsm_db	   *w = open_store(dir, 1);

		for (i = 0; i < NK; i += 5)
			store_put(w, NULL, i, 4);
		CHECK_DB_OK(w, lsm_close(w));
		_exit(0);
	}
	CHECK_EQ(waitpid(writer, &status, 0), writer);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < NK; i += 5)
	{
		size_t		len;
		void	   *v = row_of(i, 4, &len);

		model_set(m, i, v, len);
		lsm_free(v);
	}
	CHECK_DB_OK(db, lsm_refresh(db));
	check_store(db, m, "after later writes");
	CHECK_DB_OK(db, lsm_compact_all(db));
	check_store(db, m, "compacted");
	CHECK_DB_OK(db, lsm_close(db));
	close(go[1]);
	close(done[0]);
	smodel_free(s);
	model_free(m);
}

/* ---------------------------------------------------------------------- */
/* Faults. */

/* The template store of the fault tests, and its contents. */
static void
build_template(const char *dir, model *m)
{
	lsm_db	   *db = open_store(dir, 1);
	int			i;

	for (i = 0; i < NK; i += 2)
		store_put(db, m, i, 1);
	CHECK_DB_OK(db, lsm_compact_all(db));
	for (i = 1; i < NK; i += 4)
		store_put(db, m, i, 2);
	CHECK_DB_OK(db, lsm_close(db));
}

/*
 * The stage of the fault tests: deletes and overwrites of stored keys, new
 * keys, and a marker "k<NK-1>" put last (at version ver), which tells
 * whether the stage is in a store.  st NULL: only the model.
 */
static void
fill_stage(lsm_db *db, lsm_stage *st, smodel *s, uint64_t ver, int nops)
{
	int			i;

	for (i = 0; i < nops; i++)
	{
		int			k = (int) (harness_mix(ver * 1000 + (uint64_t) i) %
							   (NK - 1));

		if (i % 4 == 3)
			stage_del(db, st, s, k);
		else
			stage_put(db, st, s, k, ver * 100000 + (uint64_t) i);
	}
	stage_put(db, st, s, NK - 1, ver);
}

/* Is the marker of the stage at version ver in db?  (no other value) */
static bool
has_marker(lsm_db *db, uint64_t ver)
{
	char		k[16];
	size_t		klen = key_of(NK - 1, k),
				vlen,
				elen;
	void	   *v,
			   *e;
	int			rc = lsm_get(db, k, klen, &v, &vlen);
	bool		hit;

	if (rc == LSM_NOTFOUND)
		return false;
	CHECK_DB_OK(db, rc);
	e = row_of(NK - 1, ver, &elen);
	hit = vlen == elen && memcmp(v, e, elen) == 0;
	lsm_free(v);
	lsm_free(e);
	return hit;
}

/*
 * After a faulty commit: the store is as before or, only if the commit
 * passed its manifest switch, as after; it verifies, keeps working and
 * leaves no staging directory or orphan table once compacted.
 */
static void
check_after_fault(const char *dir, lsm_db **dbp, const model *before,
				  const model *after, bool must_have, const char *ctx)
{
	lsm_db	   *db = *dbp;
	bool		applied = has_marker(db, 7);

	CHECK_MSG(!must_have || applied, "%s: a committed stage is missing", ctx);
	check_store(db, applied ? after : before, ctx);
	CHECK_EQ(count_prefix(dir, "stage."), 0);
	CHECK_DB_OK(db, lsm_close(db));
	db = open_store(dir, 1);
	check_reads(db, applied ? after : before, ctx);
	CHECK_DB_OK(db, lsm_verify(db));
	store_put(db, NULL, 0, 99);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(db, NULL));
	CHECK_EQ(harness_count_files(dir, ".log"), 1);
	*dbp = db;
}

/*
 * Fails the Nth write (rename, manifest, table) or the Nth fsync of a
 * commit, for N = 1, 2, ... until the commit no longer reaches N, with EIO
 * and ENOSPC: the commit fails with the matching code and the store is
 * unchanged, or complete if the manifest was switched in.
 */
TEST(stage_commit_faults)
{
	char	   *tmpl = harness_tmpdir("stage-tmpl"),
			   *dir = harness_tmpdir("stage-fault");
	model	   *before = model_new(),
			   *after;
	smodel	   *s = smodel_new();
	int			kind,
				trunc,
				cases = 0,
				failed_after_switch = 0;

	build_template(tmpl, before);
	fill_stage(NULL, NULL, s, 7, 400);
	/* an ordinary stage, then a truncating one (the store replaced) */
	for (trunc = 0; trunc < 2; trunc++)
	{
		after = trunc ? model_new() : model_dup(before);
		model_apply(after, s);
		for (kind = 0; kind < 4; kind++)
		{
			int			err = kind % 2 ? ENOSPC : EIO;
			long		n;

			for (n = 1;; n++)
			{
				lsm_fault	f;
				lsm_db	   *db;
				lsm_stage  *st;
				smodel	   *s2 = smodel_new();
				char		ctx[96];
				int			rc;

				snprintf(ctx, sizeof(ctx), "%s%s %ld failing with %s",
						 trunc ? "truncating, " : "",
						 kind < 2 ? "write" : "fsync", n, strerror(err));
				harness_clear_dir(dir);
				harness_copy_dir(tmpl, dir);
				db = open_store(dir, n % 2);
				CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
				if (trunc)
					CHECK_DB_OK(db, lsm_stage_truncate(st));
				fill_stage(db, st, s2, 7, 400);
				memset(&f, 0, sizeof(f));
				f.fail_errno = err;
				if (kind < 2)
					f.fail_write_at = n;
				else
					f.fail_sync_at = n;
				lsm_fault_install(&f);
				rc = lsm_stage_commit(st, LSM_WRITE_DEFAULT);
				lsm_fault_install(NULL);
				smodel_free(s2);
				if (f.injected == 0)
				{
					CHECK_DB_OK(db, rc);
					check_after_fault(dir, &db, before, after, true, ctx);
					CHECK_DB_OK(db, lsm_close(db));
					break;
				}
				cases++;
				if (rc == LSM_OK)
				{
					/* the failure hit the compaction after the commit */
					check_after_fault(dir, &db, before, after, true, ctx);
				}
				else
				{
					CHECK_MSG(rc == (err == ENOSPC ? LSM_NOSPACE : LSM_IOERR),
							  "%s: commit returned %s (%s)", ctx,
							  lsm_strerror(rc), lsm_errmsg(db));
					CHECK_EQ(lsm_errno(db), err);
					if (has_marker(db, 7))
						failed_after_switch++;
					check_after_fault(dir, &db, before, after, false, ctx);
				}
				CHECK_DB_OK(db, lsm_close(db));
				CHECK(n < 1000);
			}
		}
		model_free(after);
	}
	printf("# stage_commit_faults: %d failing commits, %d of them after the "
		   "manifest switch\n", cases, failed_after_switch);
	CHECK_GT(cases, 8);
	model_free(before);
	smodel_free(s);
}

/*
 * ENOSPC while a put spills the buffer: the put fails, the stage is as it
 * was (gets and iterator agree with the model), and it can then go on and
 * commit, or be aborted leaving nothing behind.
 */
TEST(stage_spill_enospc)
{
	char	   *dir = harness_tmpdir("stage-nospc");
	model	   *m = model_new();
	int			variant;

	{
		lsm_db	   *db = open_store(dir, 1);
		int			i;

		for (i = 0; i < NK; i += 3)
			store_put(db, m, i, 1);
		CHECK_DB_OK(db, lsm_close(db));
	}
	for (variant = 0; variant < 6; variant++)
	{
		lsm_db	   *db = open_store(dir, 1);
		smodel	   *s = smodel_new();
		lsm_stage  *st;
		lsm_iter   *it;
		lsm_fault	f;
		uint64_t	ver = 1000 + (uint64_t) variant * 10000;
		int			i,
					rc = LSM_OK,
					fails = 0,
					runs;

		CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
		for (i = 0; i < 150; i++)
			stage_put(db, st, s, i, ver + (uint64_t) i);
		runs = lsm_stage_runs(st);
		/* every write fails from the (variant+1)th on: the spills fail */
		memset(&f, 0, sizeof(f));
		f.fail_errno = ENOSPC;
		f.fail_write_at = variant + 1;
		f.sticky = 1;
		lsm_fault_install(&f);
		for (i = 150; i < 400; i++)
		{
			char		k[16];
			size_t		klen = key_of(i, k),
						vlen;
			void	   *v = row_of(i, ver + (uint64_t) i, &vlen);

			rc = lsm_stage_put(st, k, klen, v, vlen);
			if (rc == LSM_OK)
			{
				lsm_free(s->val[i]);
				s->val[i] = v;
				s->len[i] = vlen;
				s->state[i] = ST_PUT;
				continue;
			}
			lsm_free(v);
			CHECK_MSG(rc == LSM_NOSPACE, "put %d returned %s (%s)", i,
					  lsm_strerror(rc), lsm_errmsg(db));
			CHECK_EQ(lsm_errno(db), ENOSPC);
			if (++fails == 3)
				break;
		}
		lsm_fault_install(NULL);
		CHECK_EQ(fails, 3);
		CHECK_GT(runs, 0);
		for (i = 0; i < NK; i++)
			check_stage_get(db, st, s, i, "after ENOSPC");
		CHECK_DB_OK(db, lsm_stage_iter_open(st, &it));
		check_stage_iter(it, s, "after ENOSPC");
		lsm_iter_close(it);
		check_reads(db, m, "store after ENOSPC");
		if (variant % 2 == 0)
		{
			lsm_stage_abort(st);
			check_store(db, m, "after abort");
		}
		else
		{
			/* space is back: go on, spill again, commit */
			for (i = 400; i < 700; i++)
				stage_put(db, st, s, i, ver + (uint64_t) i);
			CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_SYNC));
			model_apply(m, s);
			check_store(db, m, "after commit");
		}
		CHECK_EQ(count_prefix(dir, "stage."), 0);
		CHECK_DB_OK(db, lsm_close(db));
		smodel_free(s);
	}
	model_free(m);
}

/*
 * Power failures: a child commits a stage with sync tracking on (from a
 * random write or fsync on, everything fails in half of the runs), then
 * drops every byte it did not fsync and exits.  A commit that returned
 * LSM_OK survives whatever the flags; any other leaves all or nothing.
 */
TEST(stage_power_failure)
{
	char	   *tmpl = harness_tmpdir("stage-ptmpl"),
			   *dir = harness_tmpdir("stage-power");
	model	   *before = model_new(),
			   *after;
	smodel	   *s = smodel_new();
	uint64_t	rng = harness_seed() ^ 0x90e7;
	int			run,
				survived = 0,
				lost = 0;

	build_template(tmpl, before);
	fill_stage(NULL, NULL, s, 7, 400);
	after = model_dup(before);
	model_apply(after, s);
	for (run = 0; run < 40; run++)
	{
		uint64_t	r = harness_rand64(&rng);
		pid_t		pid;
		int			status;
		lsm_db	   *db;
		char		ctx[64];

		snprintf(ctx, sizeof(ctx), "power failure run %d", run);
		harness_clear_dir(dir);
		harness_copy_dir(tmpl, dir);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
		{
			lsm_fault	f;
			lsm_stage  *st;
			smodel	   *s2 = smodel_new();
			int			rc;

			memset(&f, 0, sizeof(f));
			f.track_sync = 1;
			lsm_fault_install(&f);
			db = open_store(dir, (int) (r % 2));
			CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
			fill_stage(db, st, s2, 7, 400);
			if ((r >> 8) % 2)
			{
				/* from a random write or fsync of the commit on, all fail */
				f.sticky = 1;
				f.fail_errno = EIO;
				if ((r >> 9) % 2)
					f.fail_write_at = f.writes + 1 + (long) ((r >> 16) % 12);
				else
					f.fail_sync_at = f.syncs + 1 + (long) ((r >> 16) % 8);
			}
			rc = lsm_stage_commit(st, (r >> 24) % 2 ? LSM_WRITE_NOSYNC :
								  LSM_WRITE_DEFAULT);
			lsm_fault_drop_unsynced();
			_exit(rc == LSM_OK ? 0 : 1);
		}
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
		db = open_store(dir, 1);
		if (has_marker(db, 7))
			survived++;
		else
			lost++;
		check_after_fault(dir, &db, before, after, WEXITSTATUS(status) == 0,
						  ctx);
		CHECK_DB_OK(db, lsm_close(db));
	}
	printf("# stage_power_failure: %d runs kept the stage, %d lost it\n",
		   survived, lost);
	CHECK_GT(survived, 0);
	model_free(before);
	model_free(after);
	smodel_free(s);
}

/* ---------------------------------------------------------------------- */
/* Killed committers. */

typedef struct kill_shared
{
	int			phase;			/* 1 once the child starts its commit */
	int			committed;		/* 1 once lsm_stage_commit returned OK */
} kill_shared;

/* The stage of crash round r: its writes (and marker k<NK-1> = r). */
static void
crash_stage(lsm_db *db, lsm_stage *st, smodel *s, int r)
{
	fill_stage(db, st, s, (uint64_t) r + 100, 300 + (r * 37) % 500);
}

/*
 * Rounds on one store: a child opens it (sweeping the staging directories
 * of the children killed before), stages, commits, and is killed with
 * SIGKILL at a random moment -- mostly in or just after the commit, where
 * the files move and the manifest switches, sometimes while staging.  The
 * store must then hold round r's stage wholly or not at all (wholly if the
 * child saw the commit succeed), verify, and after a writer's open and a
 * compaction have no staging directory and no orphan table.
 */
TEST(stage_crash)
{
	char	   *dir = harness_tmpdir("stage-crash");
	uint64_t	rng = harness_seed() ^ 0xc7a5;
	kill_shared *sh;
	model	   *m = model_new();
	lsm_db	   *db;
	int			round,
				applied = 0,
				during_commit = 0,
				i;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	db = open_store(dir, 1);
	for (i = 0; i < NK; i += 2)
		store_put(db, m, i, 1);
	CHECK_DB_OK(db, lsm_close(db));

	for (round = 0; round < 40; round++)
	{
		uint64_t	r = harness_rand64(&rng);
		smodel	   *s = smodel_new();
		model	   *next;
		pid_t		pid;
		int			status;
		long		waited = 0;
		char		ctx[64];
		bool		have;

		snprintf(ctx, sizeof(ctx), "crash round %d", round);
		sh->phase = sh->committed = 0;
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
		{
			lsm_db	   *w = open_store(dir, (int) (r % 2));
			lsm_stage  *st;

			CHECK_DB_OK(w, lsm_stage_open(w, 4096, &st));
			crash_stage(w, st, s, round);
			__atomic_store_n(&sh->phase, 1, __ATOMIC_SEQ_CST);
			CHECK_DB_OK(w, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
			__atomic_store_n(&sh->committed, 1, __ATOMIC_SEQ_CST);
			for (;;)
				pause();
		}
		if ((r >> 8) % 5 == 0)
			usleep((useconds_t) ((r >> 16) % 30000));	/* while staging */
		else
		{
			while (!__atomic_load_n(&sh->phase, __ATOMIC_SEQ_CST) &&
				   waited < 20000000)
			{
				usleep(100);
				waited += 100;
			}
			usleep((useconds_t) ((r >> 16) % 12000));
		}
		CHECK(kill(pid, SIGKILL) == 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

		/* the expected contents if the stage made it */
		crash_stage(NULL, NULL, s, round);
		next = model_dup(m);
		model_apply(next, s);
		if (sh->phase && !sh->committed)
			during_commit++;

		/* a read-only look first (no recovery by a writer), then a writer's */
		{
			lsm_options ro;
			lsm_db	   *r2;

			store_options(&ro);
			ro.read_only = 1;
			CHECK_OK(lsm_open(dir, &ro, &r2));
			have = has_marker(r2, (uint64_t) round + 100);
			CHECK_MSG(!sh->committed || have, "%s: committed stage missing",
					  ctx);
			check_store(r2, have ? next : m, ctx);
			CHECK_DB_OK(r2, lsm_close(r2));
		}
		db = open_store(dir, 1);
		CHECK_EQ(count_prefix(dir, "stage."), 0);
		check_reads(db, have ? next : m, ctx);
		CHECK_DB_OK(db, lsm_compact(db));
		CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(db, NULL));
		CHECK_DB_OK(db, lsm_close(db));
		if (have)
		{
			applied++;
			model_free(m);
			m = next;
		}
		else
			model_free(next);
		smodel_free(s);
	}
	printf("# stage_crash: 40 rounds, %d stages made it, %d kills during a "
		   "commit\n", applied, during_commit);
	munmap(sh, sizeof(*sh));
	model_free(m);
}

/* ---------------------------------------------------------------------- */
/* Staging directories of dead and live processes. */

/* A pid that is not running (a reaped child's). */
static pid_t
dead_pid(void)
{
	pid_t		pid = fork();
	int			status;

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return pid;
}

TEST(stage_gc)
{
	char	   *dir = harness_tmpdir("stage-gc");
	lsm_db	   *db = open_store(dir, 1),
			   *db2;
	lsm_stage  *mine;
	smodel	   *s = smodel_new();
	char		name[64],
			   *p,
			   *q;
	int			tochild[2],
				fromchild[2],
				status,
				fd;
	pid_t		live,
				killed;
	char		c;

	/* 1: a live process's stage */
	CHECK(pipe(tochild) == 0 && pipe(fromchild) == 0);
	live = fork();
	CHECK(live >= 0);
	if (live == 0)
	{
		lsm_db	   *w;
		lsm_stage  *ws;
		smodel	   *ss = smodel_new();

		close(fromchild[0]);
		close(tochild[1]);
		w = open_store(dir, 1);
		CHECK_DB_OK(w, lsm_stage_open(w, 4096, &ws));
		fill_stage(w, ws, ss, 5, 300);
		CHECK(lsm_stage_runs(ws) > 0);
		CHECK(write(fromchild[1], "s", 1) == 1);
		CHECK(read(tochild[0], &c, 1) == 1);
		/* still intact: commit it */
		CHECK_DB_OK(w, lsm_stage_commit(ws, LSM_WRITE_DEFAULT));
		CHECK_DB_OK(w, lsm_close(w));
		_exit(0);
	}
	close(fromchild[1]);
	close(tochild[0]);
	CHECK_MSG(read(fromchild[0], &c, 1) == 1, "the live child died");

	/* 2: a killed process's directory with its LOCK (no longer held) */
	killed = fork();
	CHECK(killed >= 0);
	if (killed == 0)
	{
		lsm_db	   *w = open_store(dir, 1);
		lsm_stage  *ws;
		smodel	   *ss = smodel_new();

		CHECK_DB_OK(w, lsm_stage_open(w, 4096, &ws));
		fill_stage(w, ws, ss, 3, 300);
		CHECK(lsm_stage_runs(ws) > 0);
		raise(SIGKILL);
	}
	CHECK_EQ(waitpid(killed, &status, 0), killed);
	CHECK(WIFSIGNALED(status));

	/* 3: a dead process's directory without LOCK (died setting up) */
	snprintf(name, sizeof(name), "stage.%ld.0", (long) dead_pid());
	p = harness_path(dir, name);
	CHECK(mkdir(p, 0755) == 0);
	q = harness_path(p, "000001.sst");
	fd = open(q, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && write(fd, "junk", 4) == 4);
	close(fd);
	free(q);
	free(p);

	/* 4: a live stage of this process, on another handle */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &mine));
	fill_stage(db, mine, s, 6, 300);
	CHECK(lsm_stage_runs(mine) > 0);
	CHECK_EQ(count_prefix(dir, "stage."), 4);

	/* a writer's open sweeps the dead ones only */
	db2 = open_store(dir, 1);
	CHECK_EQ(count_prefix(dir, "stage."), 2);
	CHECK_DB_OK(db2, lsm_close(db2));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_EQ(count_prefix(dir, "stage."), 2);
	{
		/* a read-only open sweeps nothing */
		lsm_options ro;

		snprintf(name, sizeof(name), "stage.%ld.7", (long) dead_pid());
		p = harness_path(dir, name);
		CHECK(mkdir(p, 0755) == 0);
		store_options(&ro);
		ro.read_only = 1;
		CHECK_OK(lsm_open(dir, &ro, &db2));
		CHECK_DB_OK(db2, lsm_close(db2));
		CHECK_EQ(count_prefix(dir, "stage."), 3);
		CHECK_DB_OK(db, lsm_compact(db));	/* lsm_compact's sweep does */
		CHECK_EQ(count_prefix(dir, "stage."), 2);
		free(p);
	}

	/* both live stages still commit */
	CHECK(write(tochild[1], "g", 1) == 1);
	CHECK_EQ(waitpid(live, &status, 0), live);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "the live child failed (status %d)", status);
	CHECK_DB_OK(db, lsm_stage_commit(mine, LSM_WRITE_DEFAULT));
	CHECK_EQ(count_prefix(dir, "stage."), 0);
	CHECK(has_marker(db, 6));
	{
		/* the child's stage (marker 5) committed first, ours over it */
		char		k[16];
		size_t		klen,
					vlen;
		void	   *v;
		int			i,
					ours = 0;

		for (i = 0; i < NK - 1; i++)
		{
			if (s->state[i] == ST_NONE)
				continue;
			klen = key_of(i, k);
			if (s->state[i] == ST_DEL)
				CHECK_RC(LSM_NOTFOUND, lsm_get(db, k, klen, &v, &vlen));
			else
			{
				CHECK_DB_OK(db, lsm_get(db, k, klen, &v, &vlen));
				CHECK_MEMEQ(v, vlen, s->val[i], s->len[i]);
				lsm_free(v);
			}
			ours++;
		}
		CHECK_GT(ours, 100);
	}
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	close(tochild[1]);
	close(fromchild[0]);
	smodel_free(s);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	signal(SIGPIPE, SIG_IGN);	/* a dead child fails a check, not us */
	RUN(stage_basic);
	RUN(stage_key_shapes);
	RUN(stage_tiers);
	RUN(stage_nearly_ascending);
	RUN(write_opt_sync);
	RUN(stage_model);
	RUN(stage_deletes_deep_keys);
	RUN(stage_reverse_iter);
	RUN(stage_ingest_levels);
	RUN(stage_truncate);
	RUN(stage_concurrent_writer);
	RUN(stage_commit_faults);
	RUN(stage_spill_enospc);
	RUN(stage_power_failure);
	RUN(stage_crash);
	RUN(stage_gc);
	return harness_done();
}

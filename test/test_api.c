/*
 * test_api.c
 *		Tests of the engine's public interface (lsm.h).
 *
 * Stores are opened with small options (16-64 KiB memtables, 8-32 KiB
 * files, 1 KiB blocks, a low level ratio) so that a few thousand writes
 * make many SSTables on several levels.  Most tests keep a reference model
 * of what the store must hold (an array indexed by key number) and compare
 * lsm_get, iterators and lsm_multi_get against it across flushes,
 * compactions and reopenings.  Covered: option validation, opening and
 * creating stores, key limits, binary keys and their order, overwrites and
 * deletes, atomic batches, WAL replay on reopen, iterator snapshots and seek
 * semantics, multi-get, value search over rows, statistics and counters
 * (hash sharing: one key hash per lookup that misses the memtable, however
 * many SSTables are probed), lsm_close with an open iterator, lsm_strerror,
 * and two handles on one store.
 *
 * The statistics test also opens the store's tables through sstable.h, to
 * check the per-level figures against the files themselves.
 */
#include <dirent.h>

#include "harness.h"

#include "sstable.h"

/* ---------------------------------------------------------------------- */
/* Options and small helpers. */

/* Small options: many tables and levels from little data. */
static void
small_options(lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = 32 * 1024;
	o->file_bytes = 16 * 1024;
	o->block_bytes = 1024;
	o->level_ratio = 2;
	o->l0_compaction_trigger = 3;
	o->lock_timeout_ms = 5000;
}

/* Opens dir with o (NULL: small options); fails the test on error. */
static lsm_db *
open_db(const char *dir, const lsm_options *o)
{
	lsm_options def;
	lsm_db	   *db = NULL;

	if (o == NULL)
	{
		small_options(&def);
		o = &def;
	}
	CHECK_OK(lsm_open(dir, o, &db));
	CHECK(db != NULL);
	return db;
}

/* Key number i: "key000123". */
static size_t
key_of(int i, char *buf)
{
	return (size_t) sprintf(buf, "key%06d", i);
}

/*
 * Value of key i at version ver: a header and a filler whose length
 * varies with both (0..~300 bytes; every 50th value is several KiB).
 */
static size_t
val_of(int i, int ver, char *buf, size_t cap)
{
	size_t		n = (size_t) snprintf(buf, cap, "v%d.%d:", i, ver);
	size_t		fill = (size_t) (i * 31 + ver * 17) % 300;

	if ((i + ver) % 50 == 0)
		fill = 3000 + (size_t) i % 2000;
	if ((i + ver) % 23 == 0)
		return 0;				/* an empty value */
	if (n + fill >= cap)
		fill = cap - n - 1;
	memset(buf + n, 'a' + (i + ver) % 26, fill);
	return n + fill;
}

/* ---------------------------------------------------------------------- */
/* A reference model: key number -> value or absent. */

#define MAXVAL 8192
#define LSM_MAX_LEN_TEST_BUF 65536

typedef struct model
{
	int			n;
	char	  **val;			/* NULL: absent */
	size_t	   *len;
} model;

/* An empty model of n keys (all absent). */
static void
model_init(model *m, int n)
{
	m->n = n;
	m->val = calloc(n, sizeof(char *));
	m->len = calloc(n, sizeof(size_t));
	CHECK(m->val != NULL && m->len != NULL);
}

/* Releases the model's values and arrays. */
static void
model_free(model *m)
{
	int			i;

	for (i = 0; i < m->n; i++)
		free(m->val[i]);
	free(m->val);
	free(m->len);
}

/* Sets key i of the model to a copy of v[0..len). */
static void
model_put(model *m, int i, const char *v, size_t len)
{
	free(m->val[i]);
	m->val[i] = malloc(len + 1);
	CHECK(m->val[i] != NULL);
	memcpy(m->val[i], v, len);
	m->len[i] = len;
}

/* Makes key i of the model absent. */
static void
model_del(model *m, int i)
{
	free(m->val[i]);
	m->val[i] = NULL;
	m->len[i] = 0;
}

/* Copies src into dst (a fresh model). */
static void
model_copy(model *dst, const model *src)
{
	int			i;

	model_init(dst, src->n);
	for (i = 0; i < src->n; i++)
		if (src->val[i])
			model_put(dst, i, src->val[i], src->len[i]);
}

/* Puts key i at version ver in db and in m. */
static void
do_put(lsm_db *db, model *m, int i, int ver)
{
	char		key[16];
	char		val[MAXVAL];
	size_t		klen = key_of(i, key);
	size_t		vlen = val_of(i, ver, val, sizeof(val));

	CHECK_DB_OK(db, lsm_put(db, key, klen, val, vlen));
	if (m)
		model_put(m, i, val, vlen);
}

/* Deletes key i in db and in m. */
static void
do_del(lsm_db *db, model *m, int i)
{
	char		key[16];
	size_t		klen = key_of(i, key);

	CHECK_DB_OK(db, lsm_delete(db, key, klen));
	if (m)
		model_del(m, i);
}

/* Checks lsm_get of key i against m. */
static void
check_get(lsm_db *db, const model *m, int i)
{
	char		key[16];
	size_t		klen = key_of(i, key);
	void	   *val = (void *) 1;
	size_t		vlen = 99;
	int			rc = lsm_get(db, key, klen, &val, &vlen);

	if (m->val[i] == NULL)
	{
		CHECK_MSG(rc == LSM_NOTFOUND, "key %d: lsm_get returned %d (%s), "
				  "expected not found; %s", i, rc, lsm_strerror(rc),
				  lsm_errmsg(db));
		CHECK(val == NULL);
		CHECK_EQ_U(vlen, 0);
		return;
	}
	CHECK_MSG(rc == LSM_OK, "key %d: lsm_get returned %d (%s); %s", i, rc,
			  lsm_strerror(rc), lsm_errmsg(db));
	CHECK_MEMEQ(val, vlen, m->val[i], m->len[i]);
	CHECK_EQ(((char *) val)[vlen], '\0');
	lsm_free(val);
}

/* Checks that it, from its position, yields exactly the keys of m. */
static void
check_iter_rest(lsm_iter *it, const model *m, int from)
{
	int			i;

	for (i = from; i < m->n; i++)
	{
		char		key[16];
		size_t		klen;
		const void *k;
		const void *v;
		size_t		kl,
					vl;

		if (m->val[i] == NULL)
			continue;
		klen = key_of(i, key);
		CHECK_MSG(lsm_iter_valid(it), "iterator ended before key %d (status %d)",
				  i, lsm_iter_status(it));
		k = lsm_iter_key(it, &kl);
		v = lsm_iter_value(it, &vl);
		CHECK_MEMEQ(k, kl, key, klen);
		CHECK_MEMEQ(v, vl, m->val[i], m->len[i]);
		lsm_iter_next(it);
	}
	CHECK_MSG(!lsm_iter_valid(it), "iterator yields a key past the model");
	CHECK_OK(lsm_iter_status(it));
}

/*
 * Checks that it, from its position, yields exactly the keys of m through
 * lsm_iter_batch, and that every batch's entries stay put until the next.
 */
static void
check_batch_rest(lsm_iter *it, const model *m, int from)
{
	const lsm_entry *e;
	int			i = from,
				n,
				j;

	while ((n = lsm_iter_batch(it, &e)) > 0)
	{
		for (j = 0; j < n; j++, i++)
		{
			char		key[16];

			while (i < m->n && m->val[i] == NULL)
				i++;
			CHECK_MSG(i < m->n, "batch yields a key past the model");
			CHECK_MEMEQ(e[j].key, e[j].klen, key, key_of(i, key));
			CHECK_MEMEQ(e[j].val, e[j].vlen, m->val[i], m->len[i]);
			CHECK_EQ(e[j].del, 0);
		}
		if (lsm_iter_valid(it))
		{
			/* the iterator stands on the entry after the batch */
			char		key[16];
			int			k = i;
			size_t		kl;
			const void *kp = lsm_iter_key(it, &kl);

			while (k < m->n && m->val[k] == NULL)
				k++;
			CHECK_MSG(k < m->n, "iterator past the model after a batch");
			CHECK_MEMEQ(kp, kl, key, key_of(k, key));
		}
	}
	while (i < m->n && m->val[i] == NULL)
		i++;
	CHECK_MSG(i == m->n, "batches ended before key %d (status %d)", i,
			  lsm_iter_status(it));
	CHECK(!lsm_iter_valid(it));
	CHECK_OK(lsm_iter_status(it));
}

/* Checks every key of m through lsm_get and full scans, entry and batch. */
static void
check_model(lsm_db *db, const model *m)
{
	lsm_iter   *it;
	int			i;

	for (i = 0; i < m->n; i++)
		check_get(db, m, i);
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	check_iter_rest(it, m, 0);
	lsm_iter_close(it);
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	check_batch_rest(it, m, 0);
	lsm_iter_close(it);
}

/* Checks that it is positioned on key (klen bytes), or invalid if NULL. */
static void
check_pos(lsm_iter *it, const char *key, size_t klen)
{
	size_t		kl = 99;
	const void *k = lsm_iter_key(it, &kl);

	if (key == NULL)
	{
		CHECK(!lsm_iter_valid(it));
		CHECK(k == NULL);
		CHECK_EQ_U(kl, 0);
		CHECK_OK(lsm_iter_status(it));
		return;
	}
	CHECK_MSG(lsm_iter_valid(it), "iterator invalid, expected \"%s\"", key);
	CHECK_MEMEQ(k, kl, key, klen);
}

/* Checks that it is valid with value val (vlen bytes). */
static void
check_value(lsm_iter *it, const char *val, size_t vlen)
{
	size_t		vl = 99;
	const void *v = lsm_iter_value(it, &vl);

	CHECK(lsm_iter_valid(it));
	CHECK_MEMEQ(v, vl, val, vlen);
}

/* Fills *st; fails the test on error. */
static void
get_stats(lsm_db *db, lsm_stats *st)
{
	memset(st, 0xee, sizeof(*st));
	CHECK_DB_OK(db, lsm_get_stats(db, st));
	CHECK_EQ(st->levels, LSM_MAX_LEVELS);
}

/* The deepest level holding a file, or -1. */
static int
deepest_level(const lsm_stats *st)
{
	int			l;

	for (l = LSM_MAX_LEVELS - 1; l >= 0; l--)
		if (st->level[l].files > 0)
			return l;
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Tests: error codes, options, opening. */

/* Every code has its own static, non-empty name; unknown codes too. */
TEST(strerror_all_codes)
{
	static const int codes[] = {LSM_OK, LSM_NOTFOUND, LSM_CORRUPTION,
		LSM_IOERR, LSM_NOSPACE, LSM_INVALID, LSM_BUSY, LSM_NOMEM,
	LSM_INTERRUPTED, LSM_EXISTS, LSM_DELETED, LSM_CONFLICT};
	enum
	{
		NCODES = sizeof(codes) / sizeof(codes[0])
	};
	size_t		i,
				j;

	for (i = 0; i < NCODES; i++)
	{
		const char *s = lsm_strerror(codes[i]);

		CHECK(s != NULL && s[0] != '\0');
		CHECK(strcmp(s, "unknown error") != 0);
		/* codes are negative and out of errno's range */
		if (codes[i] != LSM_OK)
			CHECK_LT(codes[i], -30000);
		for (j = 0; j < i; j++)
			CHECK_MSG(strcmp(s, lsm_strerror(codes[j])) != 0,
					  "codes %d and %d share the name \"%s\"", codes[i],
					  codes[j], s);
	}
	CHECK_STREQ(lsm_strerror(LSM_OK), "success");
	CHECK(lsm_strerror(1) != NULL);
	CHECK(lsm_strerror(-1) != NULL);
	CHECK(lsm_strerror(-30800) != NULL);
	CHECK(lsm_strerror(-30810) != NULL);
	CHECK_STREQ(lsm_strerror(12345), "unknown error");
}

/* The documented defaults. */
TEST(options_defaults)
{
	lsm_options o;

	memset(&o, 0x55, sizeof(o));
	lsm_options_init(&o);
	CHECK_EQ_U(o.memtable_bytes, 16 << 20);
	CHECK_EQ_U(o.file_bytes, 2 << 20);
	CHECK_EQ(o.level_ratio, 10);
	CHECK_EQ(o.key_bits_per_key, 10);
	CHECK_EQ_U(o.value_filter_bits, 1 << 21);
	CHECK_EQ(o.value_filter_hashes, 3);
	CHECK_EQ(o.hierarchy_order, 3);
	CHECK_EQ(o.sync, 0);
	CHECK_EQ(o.l0_compaction_trigger, 4);
	CHECK_EQ(o.auto_compact, 1);
	CHECK_EQ(o.block_bytes, 4096);
	CHECK_EQ(o.lock_timeout_ms, 10000);
	CHECK_EQ(o.create_if_missing, 1);
	CHECK_EQ(o.error_if_exists, 0);
	CHECK_EQ(o.read_only, 0);
	CHECK(o.interrupt == NULL);
	CHECK(o.interrupt_arg == NULL);
}

/* Expects lsm_open with o to fail with LSM_INVALID naming `name`. */
static void
expect_bad_option(const char *dir, const lsm_options *o, const char *name)
{
	lsm_db	   *db = (lsm_db *) 1;
	int			rc = lsm_open(dir, o, &db);
	struct stat st;

	CHECK_MSG(rc == LSM_INVALID, "bad %s: lsm_open returned %d (%s)", name,
			  rc, lsm_strerror(rc));
	CHECK(db == NULL);
	CHECK_MSG(strstr(lsm_errmsg(NULL), name) != NULL,
			  "bad %s: message \"%s\" does not name it", name, lsm_errmsg(NULL));
	/* nothing was created */
	CHECK_NE(stat(dir, &st), 0);
}

/* Out-of-range options: LSM_INVALID with a message naming the option. */
TEST(options_validation)
{
	char	   *base = harness_tmpdir("opt");
	char	   *dir = harness_path(base, "store");
	lsm_options o;
	lsm_db	   *db;

#define BAD(field, value) \
	do { \
		small_options(&o); \
		o.field = (value); \
		expect_bad_option(dir, &o, #field); \
	} while (0)

	BAD(memtable_bytes, 4095);
	BAD(memtable_bytes, 0);
	BAD(memtable_bytes, ((size_t) 1 << 34) + 1);
	BAD(file_bytes, 100);
	BAD(file_bytes, ((size_t) 1 << 34) + 1);
	BAD(level_ratio, 1);
	BAD(level_ratio, 1001);
	BAD(key_bits_per_key, -1);
	BAD(key_bits_per_key, 65);
	BAD(value_filter_hashes, -1);
	BAD(value_filter_hashes, 31);
	BAD(hierarchy_order, -1);
	BAD(hierarchy_order, 1025);
	BAD(l0_compaction_trigger, 0);
	BAD(l0_compaction_trigger, 1001);
	BAD(block_bytes, 255);
	BAD(block_bytes, (1 << 24) + 1);
	BAD(lock_timeout_ms, -1);
#undef BAD

	/* the limits themselves are fine */
	small_options(&o);
	o.memtable_bytes = 4096;
	o.file_bytes = 4096;
	o.level_ratio = 1000;
	o.key_bits_per_key = 64;
	o.block_bytes = 256;
	o.l0_compaction_trigger = 1;
	o.lock_timeout_ms = 0;
	db = open_db(dir, &o);
	CHECK_DB_OK(db, lsm_put(db, "k", 1, "v", 1));
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_OK(lsm_close(db));

	/* no directory, no out pointer (*out: see open_null_dir_clears_out) */
	CHECK_RC(LSM_INVALID, lsm_open("", NULL, &db));
	CHECK(lsm_errmsg(NULL)[0] != '\0');
	CHECK_RC(LSM_INVALID, lsm_open(dir, NULL, NULL));
	free(dir);
}

/*
 * lsm_open with no directory (NULL or "") fails with LSM_INVALID and, as
 * documented ("on failure *out is NULL"), clears *out.
 */
TEST(open_null_dir_clears_out)
{
	lsm_db	   *db = (lsm_db *) 1;

	CHECK_RC(LSM_INVALID, lsm_open(NULL, NULL, &db));
	CHECK_MSG(db == NULL, "lsm_open(NULL, NULL, &db) left db = %p", (void *) db);
	db = (lsm_db *) 1;
	CHECK_RC(LSM_INVALID, lsm_open("", NULL, &db));
	CHECK_MSG(db == NULL, "lsm_open(\"\", NULL, &db) left db = %p", (void *) db);
}

/* Opening creates the directory and the store's files. */
TEST(open_creates_directory)
{
	char	   *base = harness_tmpdir("open");
	char	   *dir = harness_path(base, "new-store");
	char	   *manifest = harness_path(dir, "MANIFEST");
	char	   *nested = harness_path(base, "missing/parent/store");
	char	   *file = harness_path(base, "plain-file");
	lsm_db	   *db;
	struct stat st;
	FILE	   *fp;
	int			rc;

	CHECK_NE(stat(dir, &st), 0);
	db = open_db(dir, NULL);
	CHECK_EQ(stat(dir, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_EQ(stat(manifest, &st), 0);
	CHECK_STREQ(lsm_errmsg(db), "");
	CHECK_EQ(lsm_errno(db), 0);
	CHECK_OK(lsm_close(db));
	CHECK_OK(lsm_close(NULL));

	/* a missing parent: an error, not a crash */
	db = (lsm_db *) 1;
	rc = lsm_open(nested, NULL, &db);
	CHECK_NE(rc, LSM_OK);
	CHECK(db == NULL);
	CHECK(lsm_errmsg(NULL)[0] != '\0');

	/* a path that is a file */
	fp = fopen(file, "w");
	CHECK(fp != NULL);
	fclose(fp);
	db = (lsm_db *) 1;
	CHECK_RC(LSM_INVALID, lsm_open(file, NULL, &db));
	CHECK(db == NULL);
	CHECK(strstr(lsm_errmsg(NULL), "directory") != NULL);
	free(dir);
	free(manifest);
	free(nested);
	free(file);
}

/* error_if_exists, create_if_missing = 0, read_only. */
TEST(open_flags)
{
	char	   *base = harness_tmpdir("flags");
	char	   *dir = harness_path(base, "store");
	char	   *missing = harness_path(base, "missing");
	lsm_options o;
	lsm_db	   *db;
	void	   *val;
	size_t		vlen;

	/* error_if_exists on a new store: fine */
	small_options(&o);
	o.error_if_exists = 1;
	db = open_db(dir, &o);
	CHECK_DB_OK(db, lsm_put(db, "k", 1, "v", 1));
	CHECK_OK(lsm_close(db));
	/* ... and on an existing one: LSM_EXISTS */
	db = (lsm_db *) 1;
	CHECK_RC(LSM_EXISTS, lsm_open(dir, &o, &db));
	CHECK(db == NULL);
	CHECK(strstr(lsm_errmsg(NULL), "exists") != NULL);

	/* create_if_missing = 0 on a missing store: LSM_NOTFOUND */
	small_options(&o);
	o.create_if_missing = 0;
	db = (lsm_db *) 1;
	CHECK_RC(LSM_NOTFOUND, lsm_open(missing, &o, &db));
	CHECK(db == NULL);
	CHECK(lsm_errmsg(NULL)[0] != '\0');
	/* ... and on an existing one: opens it */
	db = open_db(dir, &o);
	CHECK_DB_OK(db, lsm_get(db, "k", 1, &val, &vlen));
	CHECK_MEMEQ(val, vlen, "v", 1);
	lsm_free(val);
	CHECK_OK(lsm_close(db));

	/* read_only: reads work, writes and maintenance are refused */
	small_options(&o);
	o.read_only = 1;
	db = (lsm_db *) 1;
	CHECK_RC(LSM_NOTFOUND, lsm_open(missing, &o, &db));
	CHECK(db == NULL);
	db = open_db(dir, &o);
	CHECK_DB_OK(db, lsm_get(db, "k", 1, &val, &vlen));
	CHECK_MEMEQ(val, vlen, "v", 1);
	lsm_free(val);
	CHECK_RC(LSM_INVALID, lsm_put(db, "k", 1, "w", 1));
	CHECK(lsm_errmsg(db)[0] != '\0');
	CHECK_RC(LSM_INVALID, lsm_delete(db, "k", 1));
	CHECK_RC(LSM_INVALID, lsm_flush(db));
	CHECK_RC(LSM_INVALID, lsm_compact(db));
	CHECK_DB_OK(db, lsm_refresh(db));
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
	free(dir);
	free(missing);
}

/* ---------------------------------------------------------------------- */
/* Tests: reads and writes. */

/* put/get/delete, overwrite, empty values, in memory and on disk. */
TEST(put_get_delete)
{
	char	   *dir = harness_tmpdir("pgd");
	lsm_db	   *db = open_db(dir, NULL);
	void	   *val;
	size_t		vlen;
	int			round;

	for (round = 0; round < 3; round++)
	{
		/* round 0: memtable; 1: after a flush; 2: after a reopen */
		if (round == 0)
		{
			CHECK_DB_OK(db, lsm_put(db, "alpha", 5, "one", 3));
			CHECK_DB_OK(db, lsm_put(db, "beta", 4, "two", 3));
			CHECK_DB_OK(db, lsm_put(db, "beta", 4, "TWO", 3));	/* overwrite */
			CHECK_DB_OK(db, lsm_put(db, "gamma", 5, "three", 5));
			CHECK_DB_OK(db, lsm_delete(db, "gamma", 5));
			CHECK_DB_OK(db, lsm_put(db, "empty", 5, "", 0));
			CHECK_DB_OK(db, lsm_put(db, "nullval", 7, NULL, 0));
			CHECK_DB_OK(db, lsm_delete(db, "never-written", 13));
		}
		else if (round == 1)
			CHECK_DB_OK(db, lsm_flush(db));
		else
		{
			CHECK_OK(lsm_close(db));
			db = open_db(dir, NULL);
		}
		val = (void *) 1;
		CHECK_DB_OK(db, lsm_get(db, "alpha", 5, &val, &vlen));
		CHECK_MEMEQ(val, vlen, "one", 3);
		CHECK_EQ(((char *) val)[vlen], '\0');	/* NUL-terminated */
		lsm_free(val);
		CHECK_DB_OK(db, lsm_get(db, "beta", 4, &val, &vlen));
		CHECK_MEMEQ(val, vlen, "TWO", 3);
		lsm_free(val);
		val = (void *) 1;
		vlen = 7;
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, "gamma", 5, &val, &vlen));
		CHECK(val == NULL);
		CHECK_EQ_U(vlen, 0);
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, "never-written", 13, &val, &vlen));
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, "alph", 4, &val, &vlen));
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, "alphaa", 6, &val, &vlen));
		CHECK_DB_OK(db, lsm_get(db, "empty", 5, &val, &vlen));
		CHECK(val != NULL);
		CHECK_EQ_U(vlen, 0);
		lsm_free(val);
		CHECK_DB_OK(db, lsm_get(db, "nullval", 7, &val, &vlen));
		CHECK_EQ_U(vlen, 0);
		lsm_free(val);
	}

	/* overwrite and delete a flushed key from the memtable, then flush */
	CHECK_DB_OK(db, lsm_put(db, "alpha", 5, "uno", 3));
	CHECK_DB_OK(db, lsm_delete(db, "beta", 4));
	CHECK_DB_OK(db, lsm_get(db, "alpha", 5, &val, &vlen));
	CHECK_MEMEQ(val, vlen, "uno", 3);
	lsm_free(val);
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "beta", 4, &val, &vlen));
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "beta", 4, &val, &vlen));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "beta", 4, &val, &vlen));
	CHECK_DB_OK(db, lsm_get(db, "alpha", 5, &val, &vlen));
	CHECK_MEMEQ(val, vlen, "uno", 3);
	lsm_free(val);

	/* bad arguments */
	CHECK_RC(LSM_INVALID, lsm_get(db, "a", 1, NULL, &vlen));
	CHECK_RC(LSM_INVALID, lsm_get(db, "a", 1, &val, NULL));
	CHECK_RC(LSM_INVALID, lsm_get(db, NULL, 1, &val, &vlen));
	CHECK_RC(LSM_INVALID, lsm_get(NULL, "a", 1, &val, &vlen));
	CHECK_RC(LSM_INVALID, lsm_put(NULL, "a", 1, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_delete(NULL, "a", 1));
	CHECK_RC(LSM_INVALID, lsm_put(db, "a", 1, NULL, 1));
	CHECK_RC(LSM_INVALID, lsm_write(db, NULL));
	CHECK_RC(LSM_INVALID, lsm_write(NULL, NULL));
	CHECK_RC(LSM_INVALID, lsm_flush(NULL));
	CHECK_RC(LSM_INVALID, lsm_compact(NULL));
	CHECK_RC(LSM_INVALID, lsm_verify(NULL));
	CHECK_RC(LSM_INVALID, lsm_refresh(NULL));
	CHECK_RC(LSM_INVALID, lsm_get_stats(NULL, NULL));
	CHECK_RC(LSM_INVALID, lsm_iter_open(db, NULL));
	lsm_reset_counters(NULL);
	lsm_free(NULL);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
}

/* Keys: non-empty, at most 65535 bytes; the longest works everywhere. */
TEST(key_limits)
{
	char	   *dir = harness_tmpdir("keys");
	lsm_db	   *db = open_db(dir, NULL);
	uint8_t    *big = malloc(LSM_MAX_LEN_TEST_BUF);
	void	   *val;
	size_t		vlen;
	lsm_batch  *b = lsm_batch_new();
	lsm_iter   *it;
	const void *k;
	size_t		klen;
	int			i;

	CHECK(big != NULL && b != NULL);
	for (i = 0; i < LSM_MAX_LEN_TEST_BUF; i++)
		big[i] = (uint8_t) (i * 7 + 3);

	/* empty keys */
	CHECK_RC(LSM_INVALID, lsm_put(db, "", 0, "v", 1));
	CHECK(lsm_errmsg(db)[0] != '\0');
	CHECK_RC(LSM_INVALID, lsm_delete(db, "", 0));
	CHECK_RC(LSM_INVALID, lsm_batch_put(b, "", 0, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_batch_delete(b, "", 0));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "", 0, &val, &vlen));

	/* 65536 bytes: refused */
	CHECK_RC(LSM_INVALID, lsm_put(db, big, 65536, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_delete(db, big, 65536));
	CHECK_RC(LSM_INVALID, lsm_batch_put(b, big, 65536, "v", 1));
	CHECK_EQ_U(lsm_batch_count(b), 0);
	CHECK_EQ(LSM_MAX_KEY_LEN, 65535);
	/* every function that takes a key checks it (lsm.h) */
	CHECK_RC(LSM_INVALID, lsm_get(db, big, 65536, &val, &vlen));
	CHECK(lsm_errmsg(db)[0] != '\0');
	{
		const void *keys[2] = {"a", big};
		size_t		klens[2] = {1, 65536};
		void	   *vals[2];
		size_t		vlens[2];
		int			rcs[2];

		CHECK_DB_OK(db, lsm_multi_get(db, 2, keys, klens, vals, vlens, rcs));
		CHECK_RC(LSM_NOTFOUND, rcs[0]);
		CHECK_RC(LSM_INVALID, rcs[1]);
	}
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, big, 65536);
	CHECK(!lsm_iter_valid(it));
	CHECK_RC(LSM_INVALID, lsm_iter_status(it));
	lsm_iter_close(it);

	/* 65535 bytes: fine in the memtable, an SSTable, after compaction */
	CHECK_DB_OK(db, lsm_put(db, big, 65535, "max", 3));
	CHECK_DB_OK(db, lsm_put(db, big, 65534, "max-1", 5));
	CHECK_DB_OK(db, lsm_put(db, big, 1, "one", 3));
	for (i = 0; i < 3; i++)
	{
		CHECK_DB_OK(db, lsm_get(db, big, 65535, &val, &vlen));
		CHECK_MEMEQ(val, vlen, "max", 3);
		lsm_free(val);
		CHECK_DB_OK(db, lsm_get(db, big, 65534, &val, &vlen));
		CHECK_MEMEQ(val, vlen, "max-1", 5);
		lsm_free(val);
		CHECK_DB_OK(db, lsm_iter_open(db, &it));
		lsm_iter_seek(it, big, 2);
		CHECK(lsm_iter_valid(it));
		k = lsm_iter_key(it, &klen);
		CHECK_EQ_U(klen, 65534);	/* the shorter of two sharing a prefix */
		CHECK(memcmp(k, big, klen) == 0);
		lsm_iter_next(it);
		k = lsm_iter_key(it, &klen);
		CHECK_EQ_U(klen, 65535);
		lsm_iter_close(it);
		if (i == 0)
			CHECK_DB_OK(db, lsm_flush(db));
		else if (i == 1)
		{
			CHECK_DB_OK(db, lsm_put(db, "z", 1, "z", 1));
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_put(db, "y", 1, "y", 1));
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_put(db, "x", 1, "x", 1));
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_compact(db));
			CHECK_OK(lsm_close(db));
			db = open_db(dir, NULL);
		}
	}
	CHECK_DB_OK(db, lsm_verify(db));
	lsm_batch_free(b);
	free(big);
	CHECK_OK(lsm_close(db));
}

/*
 * Binary keys (NUL and 0xFF bytes) and keys sharing prefixes: all distinct,
 * ordered by memcmp with the shorter first, in the memtable, on disk, and
 * split between the two.
 */
TEST(binary_keys_order)
{
	static const struct
	{
		const char *k;
		size_t		len;
	}			keys[] = {
		/* in the expected order */
		{"\0", 1}, {"\0\0", 2}, {"\0\x01", 2}, {"a", 1}, {"a\0", 2},
		{"a\0\0", 3}, {"a\0b", 3}, {"a\0c", 3}, {"a\x01", 2}, {"ab", 2},
		{"ab\0", 3}, {"abc", 3}, {"abc\xff", 4}, {"b", 1}, {"\x7f", 1},
		{"\x80", 1}, {"\xff", 1}, {"\xff\0", 2}, {"\xff\xff", 2},
		{"\xff\xff\xff", 3},
	};
	enum
	{
		NKEYS = sizeof(keys) / sizeof(keys[0])
	};
	char	   *dir = harness_tmpdir("bin");
	lsm_db	   *db = open_db(dir, NULL);
	int			order[NKEYS];
	int			stage;
	int			i;

	/* insert in a scrambled order, half before a flush */
	for (i = 0; i < NKEYS; i++)
		order[i] = (i * 7) % NKEYS;
	for (stage = 0; stage < 4; stage++)
	{
		lsm_iter   *it;

		if (stage == 0)
			for (i = 0; i < NKEYS; i++)
			{
				char		val[32];
				int			vlen = snprintf(val, sizeof(val), "value-%d", order[i]);

				CHECK_DB_OK(db, lsm_put(db, keys[order[i]].k, keys[order[i]].len,
										val, (size_t) vlen));
				if (i == NKEYS / 2)
					CHECK_DB_OK(db, lsm_flush(db));
			}
		else if (stage == 1)
			CHECK_DB_OK(db, lsm_flush(db));
		else if (stage == 2)
			CHECK_DB_OK(db, lsm_compact(db));
		else
		{
			CHECK_OK(lsm_close(db));
			db = open_db(dir, NULL);
		}
		for (i = 0; i < NKEYS; i++)
		{
			char		want[32];
			int			wlen = snprintf(want, sizeof(want), "value-%d", i);
			void	   *val;
			size_t		vlen;

			CHECK_DB_OK(db, lsm_get(db, keys[i].k, keys[i].len, &val, &vlen));
			CHECK_MEMEQ(val, vlen, want, (size_t) wlen);
			lsm_free(val);
		}
		CHECK_DB_OK(db, lsm_iter_open(db, &it));
		lsm_iter_seek(it, NULL, 0);
		for (i = 0; i < NKEYS; i++)
		{
			size_t		klen;
			const void *k;

			CHECK_MSG(lsm_iter_valid(it), "stage %d: iterator ended at %d",
					  stage, i);
			k = lsm_iter_key(it, &klen);
			CHECK_MEMEQ(k, klen, keys[i].k, keys[i].len);
			lsm_iter_next(it);
		}
		CHECK(!lsm_iter_valid(it));
		lsm_iter_close(it);
	}
	CHECK_OK(lsm_close(db));
}

/*
 * Batches apply atomically; within one, the last operation on a key wins
 * (puts and deletes mixed), in memory, after a flush and after a reopen.
 * A batch is not consumed by lsm_write; an empty one is a no-op.
 */
TEST(batch_atomic_last_wins)
{
	char	   *dir = harness_tmpdir("batch");
	lsm_db	   *db = open_db(dir, NULL);
	lsm_batch  *b = lsm_batch_new();
	lsm_iter   *before;
	lsm_iter   *after;
	lsm_stats	st;
	uint64_t	seq0;
	void	   *val;
	size_t		vlen;
	int			stage;
	int			n;

	CHECK(b != NULL);
	CHECK_DB_OK(db, lsm_put(db, "d", 1, "old-d", 5));
	CHECK_DB_OK(db, lsm_put(db, "e", 1, "old-e", 5));
	get_stats(db, &st);
	seq0 = st.last_sequence;

	CHECK_OK(lsm_batch_put(b, "a", 1, "a1", 2));
	CHECK_OK(lsm_batch_delete(b, "a", 1));
	CHECK_OK(lsm_batch_put(b, "a", 1, "a3", 2));	/* a = a3 */
	CHECK_OK(lsm_batch_put(b, "b", 1, "b1", 2));
	CHECK_OK(lsm_batch_delete(b, "b", 1));	/* b absent */
	CHECK_OK(lsm_batch_delete(b, "c", 1));
	CHECK_OK(lsm_batch_put(b, "c", 1, "", 0));	/* c = "" */
	CHECK_OK(lsm_batch_delete(b, "d", 1));	/* d absent */
	CHECK_OK(lsm_batch_put(b, "e", 1, "e1", 2));
	CHECK_OK(lsm_batch_put(b, "e", 1, "e2", 2));	/* e = e2 */
	CHECK_EQ_U(lsm_batch_count(b), 10);

	CHECK_DB_OK(db, lsm_iter_open(db, &before));
	CHECK_DB_OK(db, lsm_write(db, b));
	CHECK_DB_OK(db, lsm_iter_open(db, &after));
	get_stats(db, &st);
	CHECK_EQ_U(st.last_sequence, seq0 + 10);	/* one sequence per entry */
	CHECK_EQ_U(lsm_batch_count(b), 10);	/* not consumed */

	/* all or nothing: the iterator from before sees none of it */
	n = 0;
	for (lsm_iter_seek(before, NULL, 0); lsm_iter_valid(before);
		 lsm_iter_next(before))
	{
		size_t		klen;
		const char *k = lsm_iter_key(before, &klen);

		CHECK(klen == 1 && (k[0] == 'd' || k[0] == 'e'));
		lsm_iter_value(before, &vlen);
		CHECK_EQ_U(vlen, 5);
		n++;
	}
	CHECK_EQ(n, 2);
	lsm_iter_close(before);
	/* ... and the one from after all of it: a, c, e */
	lsm_iter_seek(after, NULL, 0);
	check_pos(after, "a", 1);
	lsm_iter_next(after);
	check_pos(after, "c", 1);
	lsm_iter_next(after);
	check_pos(after, "e", 1);
	lsm_iter_next(after);
	CHECK(!lsm_iter_valid(after));
	lsm_iter_close(after);

	for (stage = 0; stage < 3; stage++)
	{
		if (stage == 1)
			CHECK_DB_OK(db, lsm_flush(db));
		else if (stage == 2)
		{
			CHECK_OK(lsm_close(db));
			db = open_db(dir, NULL);
		}
		CHECK_DB_OK(db, lsm_get(db, "a", 1, &val, &vlen));
		CHECK_MEMEQ(val, vlen, "a3", 2);
		lsm_free(val);
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, "b", 1, &val, &vlen));
		CHECK_DB_OK(db, lsm_get(db, "c", 1, &val, &vlen));
		CHECK_EQ_U(vlen, 0);
		lsm_free(val);
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, "d", 1, &val, &vlen));
		CHECK_DB_OK(db, lsm_get(db, "e", 1, &val, &vlen));
		CHECK_MEMEQ(val, vlen, "e2", 2);
		lsm_free(val);
	}

	/* the same batch again, unflushed, survives a reopen through the WAL */
	CHECK_DB_OK(db, lsm_put(db, "a", 1, "changed", 7));
	CHECK_DB_OK(db, lsm_write(db, b));
	CHECK_OK(lsm_close(db));
	db = open_db(dir, NULL);
	CHECK_DB_OK(db, lsm_get(db, "a", 1, &val, &vlen));
	CHECK_MEMEQ(val, vlen, "a3", 2);
	lsm_free(val);
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "d", 1, &val, &vlen));

	/* an empty batch: nothing happens */
	get_stats(db, &st);
	seq0 = st.last_sequence;
	lsm_batch_clear(b);
	CHECK_DB_OK(db, lsm_write(db, b));
	get_stats(db, &st);
	CHECK_EQ_U(st.last_sequence, seq0);
	lsm_batch_free(b);
	CHECK_OK(lsm_close(db));
}

/*
 * A random workload against the model, across flushes, compactions,
 * verification and reopenings; the last reopen replays unflushed writes
 * from the WAL.
 */
TEST(model_flush_compact_reopen)
{
	uint64_t	rnd = harness_seed();
	char	   *dir = harness_tmpdir("model");
	lsm_db	   *db = open_db(dir, NULL);
	model		m;
	lsm_stats	st;
	int			op;
	int			ver = 0;

	model_init(&m, 1500);
	for (op = 1; op <= 12000; op++)
	{
		int			i = (int) (harness_rand64(&rnd) % (uint64_t) m.n);
		uint64_t	r = harness_rand64(&rnd) % 100;

		if (r < 75)
			do_put(db, &m, i, ++ver);
		else
			do_del(db, &m, i);
		if (op % 3000 == 0)
		{
			check_model(db, &m);
			switch (op / 3000)
			{
				case 1:
					CHECK_DB_OK(db, lsm_flush(db));
					break;
				case 2:
					CHECK_DB_OK(db, lsm_compact(db));
					break;
				case 3:
					CHECK_OK(lsm_close(db));
					db = open_db(dir, NULL);
					break;
				default:
					break;
			}
			CHECK_DB_OK(db, lsm_verify(db));
			check_model(db, &m);
		}
	}
	get_stats(db, &st);
	CHECK_GE(deepest_level(&st), 2);
	CHECK_GT(st.flushes, 0);

	/* unflushed writes survive a reopen: the WAL is replayed */
	do_put(db, &m, 7, ++ver);
	do_del(db, &m, 8);
	do_put(db, &m, 9, ++ver);
	get_stats(db, &st);
	CHECK_GT(st.memtable_entries, 0);
	CHECK_OK(lsm_close(db));
	db = open_db(dir, NULL);
	get_stats(db, &st);
	CHECK_GT(st.memtable_entries, 0);
	check_model(db, &m);
	CHECK_DB_OK(db, lsm_verify(db));

	/* and after a flush and a full compaction too */
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	check_model(db, &m);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
	model_free(&m);
}

/*
 * Values far larger than the memtable, blocks and files (up to 4 MiB), and
 * one batch far larger than the memtable: written, flushed, compacted and
 * reopened intact.
 */
TEST(big_values_and_batches)
{
	static const size_t sizes[] = {40000, 100000, 1 << 20, 4 << 20, 0, 70000};
	enum
	{
		NSIZES = sizeof(sizes) / sizeof(sizes[0])
	};
	char	   *dir = harness_tmpdir("big");
	lsm_db	   *db = open_db(dir, NULL);
	uint8_t    *buf = malloc(4 << 20);
	lsm_batch  *b = lsm_batch_new();
	model		m;
	int			stage;
	size_t		i;
	int			k;

	CHECK(buf != NULL && b != NULL);
	for (i = 0; i < NSIZES; i++)
	{
		char		key[16];
		size_t		klen = (size_t) sprintf(key, "big%zu", i);
		size_t		j;

		for (j = 0; j < sizes[i]; j++)
			buf[j] = (uint8_t) (j * (i + 3) + j / 4099);
		CHECK_DB_OK(db, lsm_put(db, key, klen, buf, sizes[i]));
	}
	/* one batch of 5000 entries (~1 MiB), well over the memtable size */
	model_init(&m, 5000);
	for (k = 0; k < 5000; k++)
	{
		char		key[16];
		char		val[MAXVAL];
		size_t		klen = key_of(k, key);
		size_t		vlen = val_of(k, 1, val, 400);

		CHECK_OK(lsm_batch_put(b, key, klen, val, vlen));
		model_put(&m, k, val, vlen);
	}
	CHECK_DB_OK(db, lsm_write(db, b));
	lsm_batch_free(b);

	for (stage = 0; stage < 4; stage++)
	{
		if (stage == 1)
			CHECK_DB_OK(db, lsm_flush(db));
		else if (stage == 2)
			CHECK_DB_OK(db, lsm_compact(db));
		else if (stage == 3)
		{
			CHECK_OK(lsm_close(db));
			db = open_db(dir, NULL);
		}
		for (i = 0; i < NSIZES; i++)
		{
			char		key[16];
			size_t		klen = (size_t) sprintf(key, "big%zu", i);
			size_t		j;
			void	   *val;
			size_t		vlen;

			for (j = 0; j < sizes[i]; j++)
				buf[j] = (uint8_t) (j * (i + 3) + j / 4099);
			CHECK_DB_OK(db, lsm_get(db, key, klen, &val, &vlen));
			CHECK_EQ_U(vlen, sizes[i]);
			CHECK(vlen == 0 || memcmp(val, buf, vlen) == 0);
			lsm_free(val);
		}
		for (k = 0; k < 5000; k += 7)
			check_get(db, &m, k);
	}
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
	model_free(&m);
	free(buf);
}

/*
 * Many level-0 files (auto compaction off): more than the merging
 * iterator's and the compaction's fixed child arrays hold.  Reads, scans
 * and multi-gets see the newest version across all of them; a compaction
 * of all of them at once keeps everything.
 */
TEST(many_level0_files)
{
	char	   *dir = harness_tmpdir("l0");
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st;
	model		m;
	int			f;
	int			i;

	small_options(&o);
	o.auto_compact = 0;
	o.l0_compaction_trigger = 1000;
	db = open_db(dir, &o);
	model_init(&m, 400);
	/* 140 flushes, each over the whole key range */
	for (f = 0; f < 140; f++)
	{
		for (i = f % 7; i < m.n; i += 7 + f % 5)
			do_put(db, &m, i, f);
		if (f % 3 == 0)
			do_del(db, &m, (f * 37) % m.n);
		CHECK_DB_OK(db, lsm_flush(db));
	}
	get_stats(db, &st);
	CHECK_EQ(st.level[0].files, 140);
	check_model(db, &m);
	{
		const void *keys[400];
		size_t		klens[400];
		void	   *vals[400];
		size_t		vlens[400];
		int			rcs[400];
		char		kbuf[400][16];

		for (i = 0; i < m.n; i++)
		{
			klens[i] = key_of(i, kbuf[i]);
			keys[i] = kbuf[i];
		}
		CHECK_DB_OK(db, lsm_multi_get(db, (size_t) m.n, keys, klens, vals,
									  vlens, rcs));
		for (i = 0; i < m.n; i++)
		{
			if (m.val[i] == NULL)
			{
				CHECK_EQ(rcs[i], LSM_NOTFOUND);
				continue;
			}
			CHECK_EQ(rcs[i], LSM_OK);
			CHECK_MEMEQ(vals[i], vlens[i], m.val[i], m.len[i]);
			lsm_free(vals[i]);
		}
	}
	CHECK_OK(lsm_close(db));

	/* reopen with a low trigger: one compaction takes all 140 files */
	o.l0_compaction_trigger = 4;
	db = open_db(dir, &o);
	CHECK_DB_OK(db, lsm_compact(db));
	get_stats(db, &st);
	CHECK_LT(st.level[0].files, 4);
	CHECK_GE(st.compactions, 1);
	check_model(db, &m);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
	model_free(&m);
}

/* ---------------------------------------------------------------------- */
/* Tests: iterators. */

/*
 * Builds a store with keys on several levels, on level 0 and in the
 * memtable: the first n keys written, then overwrites and deletes in later
 * phases.  With trigger 4 and explicit flushes, level 0 keeps two files.
 */
static lsm_db *
layered_store(const char *dir, model *m, int n, int bits_per_key)
{
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st;
	int			i;

	small_options(&o);
	o.l0_compaction_trigger = 4;
	o.key_bits_per_key = bits_per_key;
	db = open_db(dir, &o);
	model_init(m, n + 200);
	for (i = 0; i < n; i++)
		do_put(db, m, i, 1);
	CHECK_DB_OK(db, lsm_compact(db));
	for (i = 0; i < n; i += 5)
		do_put(db, m, i, 2);
	for (i = 0; i < n; i += 7)
		do_del(db, m, i);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	/* two level-0 files over the whole key range */
	for (i = 3; i < n; i += 40)
		do_put(db, m, i, 3);
	for (i = 11; i < n; i += 60)
		do_del(db, m, i);
	CHECK_DB_OK(db, lsm_flush(db));
	for (i = 1; i < n; i += 45)
		do_put(db, m, i, 4);
	CHECK_DB_OK(db, lsm_flush(db));
	/* the memtable */
	for (i = 2; i < n; i += 50)
		do_put(db, m, i, 5);
	for (i = 13; i < n; i += 70)
		do_del(db, m, i);
	do_put(db, m, n + 10, 5);	/* a key only in the memtable */
	get_stats(db, &st);
	CHECK_GE(st.level[0].files, 2);
	CHECK_GE(deepest_level(&st), 2);
	CHECK_GT(st.memtable_entries, 0);
	return db;
}

/*
 * An iterator's snapshot is fixed at lsm_iter_open: writes, deletes,
 * flushes and compactions after it (even before its first seek) don't show,
 * also for an iterator already half-way through.
 */
TEST(iter_snapshot_isolation)
{
	char	   *dir = harness_tmpdir("snap");
	model		m;
	model		m0;
	lsm_db	   *db = layered_store(dir, &m, 3000, 10);
	lsm_iter   *fresh;
	lsm_iter   *half;
	lsm_stats	st0,
				st1;
	int			i;
	int			mid = -1;

	model_copy(&m0, &m);
	CHECK_DB_OK(db, lsm_iter_open(db, &fresh));
	CHECK_DB_OK(db, lsm_iter_open(db, &half));
	/* move half-way: onto the first live key from 1400 on */
	lsm_iter_seek(half, NULL, 0);
	for (i = 0; i < m0.n && mid < 0; i++)
		if (m0.val[i])
		{
			if (i >= 1400)
				mid = i;
			else
				lsm_iter_next(half);
		}
	CHECK(mid >= 0);

	get_stats(db, &st0);
	for (i = 0; i < 3000; i += 3)
		do_put(db, &m, i, 9);
	for (i = 1; i < 3000; i += 4)
		do_del(db, &m, i);
	for (i = 3000; i < 3100; i++)
		do_put(db, &m, i, 9);
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	get_stats(db, &st1);
	CHECK_GT(st1.flushes, st0.flushes);
	CHECK_GT(st1.compactions, st0.compactions);

	lsm_iter_seek(fresh, NULL, 0);
	check_iter_rest(fresh, &m0, 0);
	check_iter_rest(half, &m0, mid);
	/* a re-seek of the old iterator is still in the old snapshot */
	lsm_iter_seek(half, "key001000", 9);
	check_iter_rest(half, &m0, 1000);
	lsm_iter_close(fresh);
	lsm_iter_close(half);
	/* a new iterator sees the new state */
	check_model(db, &m);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
	model_free(&m);
	model_free(&m0);
}

/*
 * Seek: the first live key >= the target; NULL seeks to the first key; an
 * iterator is unpositioned until its first seek; deleted keys are skipped;
 * a seek after the end works again.  In the memtable, on disk, and with
 * tombstones in the memtable over keys on disk.
 */
TEST(iter_seek_semantics)
{
	char	   *dir = harness_tmpdir("seek");
	lsm_db	   *db = open_db(dir, NULL);
	int			stage;

	/* an empty store: every seek ends at once */
	{
		lsm_iter   *it;

		CHECK_DB_OK(db, lsm_iter_open(db, &it));
		lsm_iter_seek(it, NULL, 0);
		check_pos(it, NULL, 0);
		lsm_iter_seek(it, "a", 1);
		check_pos(it, NULL, 0);
		lsm_iter_close(it);
	}
	CHECK_DB_OK(db, lsm_put(db, "b", 1, "B", 1));
	CHECK_DB_OK(db, lsm_put(db, "d", 1, "D", 1));
	CHECK_DB_OK(db, lsm_put(db, "d\0", 2, "D0", 2));
	CHECK_DB_OK(db, lsm_put(db, "e", 1, "E", 1));
	CHECK_DB_OK(db, lsm_put(db, "f", 1, "F", 1));
	CHECK_DB_OK(db, lsm_delete(db, "e", 1));
	for (stage = 0; stage < 4; stage++)
	{
		lsm_iter   *it;
		size_t		vlen = 99;

		if (stage == 1)
			CHECK_DB_OK(db, lsm_flush(db));
		else if (stage == 2)
		{
			/* "c" deleted in the memtable; "a" is new there */
			CHECK_DB_OK(db, lsm_put(db, "c", 1, "C", 1));
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_delete(db, "c", 1));
			CHECK_DB_OK(db, lsm_put(db, "a", 1, "A", 1));
			CHECK_DB_OK(db, lsm_delete(db, "a", 1));
		}
		else if (stage == 3)
		{
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_compact(db));
		}
		CHECK_DB_OK(db, lsm_iter_open(db, &it));
		/* unpositioned */
		CHECK(!lsm_iter_valid(it));
		CHECK(lsm_iter_key(it, NULL) == NULL);
		CHECK(lsm_iter_value(it, &vlen) == NULL);
		CHECK_EQ_U(vlen, 0);
		CHECK_OK(lsm_iter_status(it));
		lsm_iter_next(it);		/* a no-op */
		CHECK(!lsm_iter_valid(it));

		lsm_iter_seek(it, NULL, 0);
		check_pos(it, "b", 1);
		check_value(it, "B", 1);
		lsm_iter_seek(it, "a", 1);
		check_pos(it, "b", 1);
		lsm_iter_seek(it, "", 0);
		check_pos(it, "b", 1);
		lsm_iter_seek(it, "b", 1);
		check_pos(it, "b", 1);
		lsm_iter_seek(it, "b\0", 2);
		check_pos(it, "d", 1);
		lsm_iter_seek(it, "c", 1);
		check_pos(it, "d", 1);
		lsm_iter_seek(it, "d", 1);
		check_pos(it, "d", 1);
		lsm_iter_next(it);
		check_pos(it, "d\0", 2);
		check_value(it, "D0", 2);
		lsm_iter_next(it);
		check_pos(it, "f", 1);	/* "e" is deleted */
		lsm_iter_next(it);
		check_pos(it, NULL, 0);
		lsm_iter_next(it);		/* past the end: stays there */
		check_pos(it, NULL, 0);
		lsm_iter_seek(it, "d\0", 2);
		check_pos(it, "d\0", 2);
		lsm_iter_seek(it, "d\0\0", 3);
		check_pos(it, "f", 1);
		lsm_iter_seek(it, "e", 1);
		check_pos(it, "f", 1);
		lsm_iter_seek(it, "f", 1);
		check_pos(it, "f", 1);
		lsm_iter_seek(it, "f\0", 2);
		check_pos(it, NULL, 0);
		lsm_iter_seek(it, "\xff\xff", 2);
		check_pos(it, NULL, 0);
		/* seeking again after the end */
		lsm_iter_seek(it, "c", 1);
		check_pos(it, "d", 1);
		lsm_iter_close(it);
	}
	lsm_iter_close(NULL);
	CHECK_OK(lsm_close(db));
}

/*
 * lsm_iter_batch where a run stops for something other than the end: keys
 * longer than its key buffer, thousands of tombstones in a row, a key held
 * by several sources, a backward iterator, a seek between batches.
 */
TEST(iter_batches)
{
	char	   *dir = harness_tmpdir("batch");
	lsm_db	   *db = open_db(dir, NULL);
	lsm_iter   *it;
	const lsm_entry *e;
	char	   *big = malloc(LSM_MAX_KEY_LEN);
	char		key[16];
	int			n,
				i,
				total;

	/* keys of 20000 and LSM_MAX_KEY_LEN bytes among short ones */
	memset(big, 'm', LSM_MAX_KEY_LEN);
	CHECK_DB_OK(db, lsm_put(db, "a", 1, "A", 1));
	CHECK_DB_OK(db, lsm_put(db, big, 20000, "M1", 2));
	CHECK_DB_OK(db, lsm_put(db, big, LSM_MAX_KEY_LEN, "M2", 2));
	CHECK_DB_OK(db, lsm_put(db, "z", 1, "Z", 1));
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	total = 0;
	while ((n = lsm_iter_batch(it, &e)) > 0)
		for (i = 0; i < n; i++, total++)
		{
			static const size_t klens[] = {1, 20000, LSM_MAX_KEY_LEN, 1};
			static const char *const vals[] = {"A", "M1", "M2", "Z"};

			CHECK_LT(total, 4);
			CHECK_EQ_U(e[i].klen, klens[total]);
			CHECK(memcmp(e[i].key, total == 0 ? "a" : total == 3 ? "z" : big,
						 e[i].klen) == 0);
			CHECK_MEMEQ(e[i].val, e[i].vlen, vals[total], strlen(vals[total]));
		}
	CHECK_EQ(total, 4);
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);
	CHECK_DB_OK(db, lsm_delete(db, big, 20000));
	CHECK_DB_OK(db, lsm_delete(db, big, LSM_MAX_KEY_LEN));
	CHECK_DB_OK(db, lsm_delete(db, "a", 1));
	CHECK_DB_OK(db, lsm_delete(db, "z", 1));

	/* 10000 keys, then all but the last deleted: one batch of one entry */
	for (i = 0; i < 10000; i++)
		CHECK_DB_OK(db, lsm_put(db, key, key_of(i, key), "v", 1));
	CHECK_DB_OK(db, lsm_flush(db));
	for (i = 0; i < 9999; i++)
		CHECK_DB_OK(db, lsm_delete(db, key, key_of(i, key)));
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	CHECK_EQ(lsm_iter_batch(it, &e), 1);
	CHECK_MEMEQ(e[0].key, e[0].klen, key, key_of(9999, key));
	CHECK(!lsm_iter_valid(it));
	CHECK_EQ(lsm_iter_batch(it, &e), 0);
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);

	/* every key again, every third one also in the memtable */
	for (i = 0; i < 10000; i++)
		CHECK_DB_OK(db, lsm_put(db, key, key_of(i, key), "w", 1));
	CHECK_DB_OK(db, lsm_flush(db));
	for (i = 0; i < 10000; i += 3)
		CHECK_DB_OK(db, lsm_put(db, key, key_of(i, key), "x", 1));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	/* from a seek to key 5000, then a seek back to key 10 between batches */
	lsm_iter_seek(it, key, key_of(5000, key));
	CHECK_GT(n = lsm_iter_batch(it, &e), 0);
	CHECK_MEMEQ(e[0].key, e[0].klen, key, key_of(5000, key));
	lsm_iter_seek(it, key, key_of(10, key));
	for (total = 10; (n = lsm_iter_batch(it, &e)) > 0;)
		for (i = 0; i < n; i++, total++)
		{
			CHECK_MEMEQ(e[i].key, e[i].klen, key, key_of(total, key));
			CHECK_MEMEQ(e[i].val, e[i].vlen, total % 3 == 0 ? "x" : "w", 1);
		}
	CHECK_EQ(total, 10000);
	lsm_iter_close(it);

	/*
	 * a limit: batches stop before it (memtable and tables merged), and
	 * lsm_iter_next goes on past it; refused backwards
	 */
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	{
		char		limit[16];
		size_t		limitlen = key_of(5003, limit);

		CHECK_OK(lsm_iter_set_limit(it, limit, limitlen));
		lsm_iter_seek(it, key, key_of(4990, key));
		for (total = 4990; (n = lsm_iter_batch(it, &e)) > 0;)
			for (i = 0; i < n; i++, total++)
				CHECK_MEMEQ(e[i].key, e[i].klen, key, key_of(total, key));
		CHECK_EQ(total, 5003);
		CHECK(lsm_iter_valid(it));
		CHECK_OK(lsm_iter_status(it));
		lsm_iter_next(it);
		CHECK_MEMEQ(lsm_iter_key(it, &limitlen), limitlen, key,
					key_of(5004, key));
		/* no limit again: batches to the end */
		CHECK_OK(lsm_iter_set_limit(it, NULL, 0));
		for (total = 5004; (n = lsm_iter_batch(it, &e)) > 0;)
			total += n;
		CHECK_EQ(total, 10000);
	}
	lsm_iter_close(it);
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	CHECK_EQ(lsm_iter_set_limit(it, "k", 1), LSM_INVALID);
	lsm_iter_close(it);

	/* backwards: one entry a batch */
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	CHECK_OK(lsm_iter_reverse(it));
	lsm_iter_seek(it, NULL, 0);
	for (total = 9999; (n = lsm_iter_batch(it, &e)) > 0; total--)
	{
		CHECK_EQ(n, 1);
		CHECK_MEMEQ(e[0].key, e[0].klen, key, key_of(total, key));
		CHECK_MEMEQ(e[0].val, e[0].vlen, total % 3 == 0 ? "x" : "w", 1);
	}
	CHECK_EQ(total, -1);
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);
	free(big);
	CHECK_OK(lsm_close(db));
}

/* lsm_close refuses while iterators are open; the handle stays usable. */
TEST(close_with_open_iterator)
{
	char	   *dir = harness_tmpdir("close");
	lsm_db	   *db = open_db(dir, NULL);
	lsm_iter   *it;
	lsm_iter   *vs;
	void	   *row;
	size_t		rowlen;
	lsm_field	f = {"x", 1, 0};
	void	   *val;
	size_t		vlen;

	CHECK_OK(lsm_row_encode(&f, 1, &row, &rowlen));
	CHECK_DB_OK(db, lsm_put(db, "k", 1, row, rowlen));
	lsm_free(row);
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	CHECK_RC(LSM_INVALID, lsm_close(db));
	CHECK(strstr(lsm_errmsg(db), "iterator") != NULL);
	/* still usable */
	CHECK_DB_OK(db, lsm_get(db, "k", 1, &val, &vlen));
	lsm_free(val);
	lsm_iter_seek(it, NULL, 0);
	CHECK(lsm_iter_valid(it));
	lsm_iter_close(it);
	/* a value-search iterator counts too */
	CHECK_DB_OK(db, lsm_value_search(db, 0, "x", 1, &vs));
	CHECK(lsm_iter_valid(vs));
	CHECK_RC(LSM_INVALID, lsm_close(db));
	lsm_iter_close(vs);
	CHECK_OK(lsm_close(db));
}

/* ---------------------------------------------------------------------- */
/* Tests: multi-get and value search. */

/*
 * lsm_multi_get gives, key by key, exactly what lsm_get gives: present,
 * absent and deleted keys spread over the memtable, level 0 and deeper
 * levels, in batches of several sizes, with duplicates.
 */
TEST(multi_get_matches_get)
{
	char	   *dir = harness_tmpdir("mget");
	model		m;
	lsm_db	   *db = layered_store(dir, &m, 3000, 10);
	const int	n = m.n;
	char	  **keys = calloc(n * 2, sizeof(char *));
	size_t	   *klens = calloc(n * 2, sizeof(size_t));
	void	  **vals = calloc(n * 2, sizeof(void *));
	size_t	   *vlens = calloc(n * 2, sizeof(size_t));
	int		   *rcs = calloc(n * 2, sizeof(int));
	static const int sizes[] = {1, 2, 7, 64, 1000};
	size_t		s;
	int			i;
	int			total;

	CHECK(keys && klens && vals && vlens && rcs);
	/* keys 0..n-1, then each again (duplicates), in a scrambled order */
	for (i = 0; i < 2 * n; i++)
	{
		int			k = (int) (((uint64_t) i * 7919) % (uint64_t) n);

		keys[i] = malloc(16);
		CHECK(keys[i] != NULL);
		klens[i] = key_of(k, keys[i]);
	}
	total = 2 * n;
	for (s = 0; s <= sizeof(sizes) / sizeof(sizes[0]); s++)
	{
		int			chunk = s < sizeof(sizes) / sizeof(sizes[0]) ? sizes[s] : total;
		int			off;

		for (off = 0; off < total; off += chunk)
		{
			int			cnt = off + chunk <= total ? chunk : total - off;

			CHECK_DB_OK(db, lsm_multi_get(db, (size_t) cnt,
										  (const void *const *) (keys + off),
										  klens + off, vals + off, vlens + off,
										  rcs + off));
			for (i = off; i < off + cnt; i++)
			{
				void	   *val;
				size_t		vlen;
				int			rc = lsm_get(db, keys[i], klens[i], &val, &vlen);

				CHECK_MSG(rcs[i] == rc, "%.*s: multi_get %d, get %d",
						  (int) klens[i], keys[i], rcs[i], rc);
				if (rc == LSM_OK)
				{
					CHECK_MEMEQ(vals[i], vlens[i], val, vlen);
					CHECK_EQ(((char *) vals[i])[vlens[i]], '\0');
					lsm_free(val);
					lsm_free(vals[i]);
				}
				else
				{
					CHECK(vals[i] == NULL);
					CHECK_EQ_U(vlens[i], 0);
				}
			}
		}
	}
	/* and the model agrees with both */
	for (i = 0; i < n; i++)
		check_get(db, &m, i);
	/* n = 0 is fine */
	CHECK_DB_OK(db, lsm_multi_get(db, 0, NULL, NULL, NULL, NULL, NULL));
	CHECK_RC(LSM_INVALID, lsm_multi_get(db, 1, NULL, klens, vals, vlens, rcs));
	CHECK_RC(LSM_INVALID, lsm_multi_get(NULL, 0, NULL, NULL, NULL, NULL, NULL));
	for (i = 0; i < 2 * n; i++)
		free(keys[i]);
	free(keys);
	free(klens);
	free(vals);
	free(vlens);
	free(rcs);
	CHECK_OK(lsm_close(db));
	model_free(&m);
}

/* Colours; NULL for a null field. */
static const struct
{
	const char *s;
	size_t		len;
}			colours[] = {
	{"red", 3}, {"green", 5}, {"blue", 4}, {"", 0}, {NULL, 0},
	{"red\0x", 5}, {"re", 2},
};

#define NCOLOURS ((int) (sizeof(colours) / sizeof(colours[0])))

/*
 * Puts row i at version ver: [id, colour, note]; records the colour index
 * in have[i] and the row as alive.
 */
static void
put_row(lsm_db *db, int i, int ver, int *have, int *alive)
{
	char		key[16];
	size_t		klen = key_of(i, key);
	char		id[16];
	char		note[64];
	int			c = (i * 3 + ver * 5) % NCOLOURS;
	lsm_field	f[3];
	void	   *row;
	size_t		rowlen;

	snprintf(id, sizeof(id), "%d", i);
	snprintf(note, sizeof(note), "note %d %d", i, ver);
	f[0].data = id;
	f[0].len = strlen(id);
	f[0].is_null = 0;
	f[1].data = colours[c].s;
	f[1].len = colours[c].len;
	f[1].is_null = colours[c].s == NULL;
	f[2].data = note;
	f[2].len = strlen(note);
	f[2].is_null = 0;
	CHECK_OK(lsm_row_encode(f, 3, &row, &rowlen));
	CHECK_DB_OK(db, lsm_put(db, key, klen, row, rowlen));
	lsm_free(row);
	have[i] = c;
	alive[i] = 1;
}

/*
 * Runs a value search for colour (field 1) == (val, vlen) and checks it
 * returns each live row whose newest version matches exactly once, and
 * nothing else.
 */
static void
check_search(lsm_db *db, int n, const char *val, size_t vlen,
			 const int *have, const int *alive)
{
	lsm_iter   *it;
	char	   *seen = calloc(n, 1);
	int			found = 0;
	int			want = 0;
	int			i;

	CHECK(seen != NULL);
	CHECK_DB_OK(db, lsm_value_search(db, 1, val, vlen, &it));
	/* positioned already: no seek */
	for (; lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen;
		const char *k = lsm_iter_key(it, &klen);
		size_t		rlen;
		const void *row = lsm_iter_value(it, &rlen);
		lsm_field	f;
		int			idx;

		CHECK(klen == 9 && memcmp(k, "key", 3) == 0);
		idx = harness_key_num(k, klen, 3);
		CHECK(idx >= 0 && idx < n);
		CHECK_MSG(!seen[idx], "row %d returned twice", idx);
		seen[idx] = 1;
		CHECK_OK(lsm_row_field(row, rlen, 1, &f));
		CHECK(!f.is_null);
		CHECK_MEMEQ(f.data, f.len, val, vlen);
		found++;
	}
	CHECK_OK(lsm_iter_status(it));
	lsm_iter_close(it);
	for (i = 0; i < n; i++)
	{
		const char *c = colours[have[i]].s;
		bool		match = alive[i] && c != NULL &&
			colours[have[i]].len == vlen && memcmp(c, val, vlen) == 0;

		CHECK_MSG(match == (seen[i] != 0),
				  "row %d: %s by the search for \"%.*s\"", i,
				  match ? "missed" : "wrongly returned", (int) vlen, val);
		want += match;
	}
	CHECK_EQ(found, want);
	free(seen);
}

/*
 * lsm_value_search: exactly the live rows whose field equals the value,
 * newest versions only (a row whose colour changed is found by the new
 * colour only), deleted rows absent, each row once; null never matches,
 * the empty string matches only empty fields, bytes compare exactly.
 */
TEST(value_search)
{
	char	   *dir = harness_tmpdir("vs");
	lsm_db	   *db = open_db(dir, NULL);
	const int	n = 2500;
	int		   *have = calloc(n, sizeof(int));
	int		   *alive = calloc(n, sizeof(int));
	lsm_iter   *it;
	lsm_stats	st;
	int			i;
	int			stage;

	CHECK(have && alive);
	for (i = 0; i < n; i++)
		put_row(db, i, 0, have, alive);
	for (i = 0; i < n; i += 3)
		put_row(db, i, 1, have, alive);	/* new colour */
	CHECK_DB_OK(db, lsm_flush(db));
	for (i = 0; i < n; i += 11)
	{
		char		key[16];

		CHECK_DB_OK(db, lsm_delete(db, key, key_of(i, key)));
		alive[i] = 0;
	}
	for (i = 1; i < n; i += 13)
		put_row(db, i, 2, have, alive);	/* in the memtable */
	get_stats(db, &st);
	CHECK_GT(harness_files_from(&st, 0), 1);
	CHECK_GT(st.memtable_entries, 0);

	for (stage = 0; stage < 2; stage++)
	{
		if (stage == 1)
		{
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_compact(db));
		}
		check_search(db, n, "red", 3, have, alive);
		check_search(db, n, "red\0x", 5, have, alive);
		check_search(db, n, "re", 2, have, alive);
		check_search(db, n, "green", 5, have, alive);
		check_search(db, n, "", 0, have, alive);
		check_search(db, n, "purple", 6, have, alive);
		/* a field past the end of every row is null: never matches */
		CHECK_DB_OK(db, lsm_value_search(db, 7, "", 0, &it));
		CHECK(!lsm_iter_valid(it));
		CHECK_OK(lsm_iter_status(it));
		lsm_iter_close(it);
		/* field 0 (the id) is unique */
		CHECK_DB_OK(db, lsm_value_search(db, 0, "1", 1, &it));
		CHECK(lsm_iter_valid(it));
		check_pos(it, "key000001", 9);
		lsm_iter_next(it);
		CHECK(!lsm_iter_valid(it));
		lsm_iter_close(it);
	}
	CHECK_RC(LSM_INVALID, lsm_value_search(db, -1, "x", 1, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search(db, 0, NULL, 1, &it));
	CHECK_RC(LSM_INVALID, lsm_value_search(db, 0, "x", 1, NULL));
	CHECK_RC(LSM_INVALID, lsm_value_search(NULL, 0, "x", 1, &it));
	free(have);
	free(alive);
	CHECK_OK(lsm_close(db));
}

/* ---------------------------------------------------------------------- */
/* Tests: statistics and counters. */

/* Sum of the figures of the .sst files in dir, read through sstable.h. */
typedef struct dir_tables
{
	int			files;
	uint64_t	bytes;
	uint64_t	entries;
	uint64_t	filter_bytes;
	bool		filter_sizes_ok;
} dir_tables;

/*
 * Opens every .sst file of dir through sstable.h and sums its figures into
 * *out; filter_sizes_ok says whether each filter has the size
 * lsm_bloom_size gives for its entries at bits_per_key.
 */
static void
scan_tables(const char *dir, int bits_per_key, dir_tables *out)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	memset(out, 0, sizeof(*out));
	out->filter_sizes_ok = true;
	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
	{
		unsigned long long num;
		char		ext[8];
		lsm_table  *t;
		lsm_iiter  *it;
		lsm_err		e;
		uint64_t	n = 0;

		if (sscanf(de->d_name, "%llu.%3s", &num, ext) != 2 ||
			strcmp(ext, "sst") != 0)
			continue;
		lsm_err_clear(&e);
		CHECK_OK(lsm_table_open(dir, num, 0, &t, &e));
		CHECK_OK(lsm_table_status(t, &e));
		it = lsm_table_iter(t, &e);
		CHECK(it != NULL);
		for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
			n++;
		CHECK_EQ(it->rc, LSM_OK);
		lsm_iiter_destroy(it);
		out->files++;
		out->bytes += lsm_table_size(t);
		out->entries += n;
		out->filter_bytes += lsm_table_filter_bytes(t);
		if (lsm_table_filter_bytes(t) != lsm_bloom_size(n, bits_per_key))
			out->filter_sizes_ok = false;
		lsm_table_unref(t);
	}
	closedir(d);
}

/*
 * Statistics: the per-level files, entries, bytes and filter bytes agree
 * with the table files in the directory; sequence, memtable and byte
 * counters agree with what was written; reopening keeps the level figures
 * and starts the counters afresh.
 */
TEST(stats_consistent)
{
	char	   *dir = harness_tmpdir("stats");
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st,
				st2;
	dir_tables	dt;
	uint64_t	user = 0;
	uint64_t	files = 0,
				entries = 0,
				bytes = 0,
				fbytes = 0;
	const int	n = 4000;
	int			l;
	int			i;

	small_options(&o);
	db = open_db(dir, &o);
	get_stats(db, &st);
	CHECK_EQ_U(st.last_sequence, 0);
	CHECK_EQ_U(st.memtable_entries, 0);
	CHECK_EQ(harness_files_from(&st, 0), 0);
	for (i = 0; i < n; i++)
	{
		char		key[16];
		char		val[MAXVAL];
		size_t		klen = key_of(i, key);
		size_t		vlen = val_of(i, 0, val, sizeof(val));

		CHECK_DB_OK(db, lsm_put(db, key, klen, val, vlen));
		user += klen + vlen;
	}
	get_stats(db, &st);
	CHECK_EQ_U(st.last_sequence, n);
	CHECK_EQ_U(st.user_bytes_written, user);
	CHECK_GT(st.wal_bytes_written, user);
	CHECK_GT(st.flushes, 0);
	CHECK_GT(st.memtable_entries, 0);
	CHECK_GT(st.memtable_bytes, 0);
	CHECK_EQ_U(st.gets, 0);

	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	get_stats(db, &st);
	CHECK_EQ_U(st.memtable_entries, 0);
	CHECK_GT(st.compactions, 0);
	CHECK_GE(deepest_level(&st), 2);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		files += (uint64_t) st.level[l].files;
		entries += st.level[l].entries;
		bytes += st.level[l].bytes;
		fbytes += st.level[l].filter_bytes;
		CHECK_EQ_U(st.level[l].value_filter_bytes, 0);
		if (st.level[l].files == 0)
		{
			CHECK_EQ_U(st.level[l].entries, 0);
			CHECK_EQ_U(st.level[l].bytes, 0);
			CHECK_EQ_U(st.level[l].filter_bytes, 0);
		}
		else
		{
			/* a filter of about 10 bits per entry, whole lines per file */
			CHECK_GE(st.level[l].filter_bytes, st.level[l].entries * 10 / 8);
			CHECK_LE(st.level[l].filter_bytes, st.level[l].entries * 10 / 8 +
					 (uint64_t) st.level[l].files * (64 + 8));
			CHECK_GT(st.level[l].bytes, st.level[l].filter_bytes);
		}
	}
	/* every key written once: one entry per key over all levels */
	CHECK_EQ_U(entries, n);
	/* compacted until no level is over its target */
	CHECK_LT(st.level[0].files, o.l0_compaction_trigger);
	{
		uint64_t	target = (uint64_t) o.memtable_bytes * o.l0_compaction_trigger;

		for (l = 1; l < LSM_MAX_LEVELS - 1; l++)
		{
			CHECK_MSG(st.level[l].bytes <= target,
					  "level %d holds %llu bytes after lsm_compact, target %llu",
					  l, (unsigned long long) st.level[l].bytes,
					  (unsigned long long) target);
			target *= (uint64_t) o.level_ratio;
		}
	}
	CHECK_GE(st.sst_bytes_written, bytes);
	scan_tables(dir, o.key_bits_per_key, &dt);
	CHECK_EQ_U(dt.files, files);
	CHECK_EQ_U(dt.bytes, bytes);
	CHECK_EQ_U(dt.entries, entries);
	CHECK_EQ_U(dt.filter_bytes, fbytes);
	CHECK(dt.filter_sizes_ok);

	/* reopen: same levels, counters from zero */
	CHECK_OK(lsm_close(db));
	db = open_db(dir, &o);
	get_stats(db, &st2);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		CHECK_EQ(st2.level[l].files, st.level[l].files);
		CHECK_EQ_U(st2.level[l].entries, st.level[l].entries);
		CHECK_EQ_U(st2.level[l].bytes, st.level[l].bytes);
		CHECK_EQ_U(st2.level[l].filter_bytes, st.level[l].filter_bytes);
	}
	CHECK_EQ_U(st2.last_sequence, n);
	CHECK_EQ_U(st2.flushes, 0);
	CHECK_EQ_U(st2.compactions, 0);
	CHECK_EQ_U(st2.user_bytes_written, 0);
	CHECK_EQ_U(st2.gets, 0);

	/* counters reset; level figures stay */
	CHECK_DB_OK(db, lsm_put(db, "x", 1, "y", 1));
	lsm_reset_counters(db);
	get_stats(db, &st2);
	CHECK_EQ_U(st2.user_bytes_written, 0);
	CHECK_EQ_U(st2.wal_bytes_written, 0);
	CHECK_EQ(st2.level[deepest_level(&st)].files,
			 st.level[deepest_level(&st)].files);
	CHECK_EQ_U(st2.memtable_entries, 1);
	CHECK_EQ_U(st2.last_sequence, n + 1);
	CHECK_OK(lsm_close(db));

	/* no key filter: no filter bytes */
	{
		char	   *dir2 = harness_tmpdir("stats0");

		small_options(&o);
		o.key_bits_per_key = 0;
		db = open_db(dir2, &o);
		for (i = 0; i < 1000; i++)
			do_put(db, NULL, i, 0);
		CHECK_DB_OK(db, lsm_flush(db));
		get_stats(db, &st);
		CHECK_GT(harness_files_from(&st, 0), 0);
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			CHECK_EQ_U(st.level[l].filter_bytes, 0);
		scan_tables(dir2, 0, &dt);
		CHECK_EQ_U(dt.filter_bytes, 0);
		CHECK(dt.filter_sizes_ok);
		CHECK_OK(lsm_close(db));
	}
}

/* Explicit flushes and compactions count; an empty flush does not. */
TEST(flush_compaction_counters)
{
	char	   *dir = harness_tmpdir("ctr");
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st;
	int			i;

	small_options(&o);
	o.auto_compact = 0;
	o.memtable_bytes = 64 * 1024;
	db = open_db(dir, &o);
	CHECK_DB_OK(db, lsm_flush(db));	/* nothing to flush */
	get_stats(db, &st);
	CHECK_EQ_U(st.flushes, 0);
	CHECK_EQ(st.level[0].files, 0);
	for (i = 0; i < 5; i++)
	{
		do_put(db, NULL, i, 0);
		CHECK_DB_OK(db, lsm_flush(db));
		get_stats(db, &st);
		CHECK_EQ_U(st.flushes, (uint64_t) i + 1);
		CHECK_EQ(st.level[0].files, i + 1);	/* auto_compact off */
		CHECK_EQ_U(st.memtable_entries, 0);
	}
	CHECK_EQ_U(st.compactions, 0);
	CHECK_DB_OK(db, lsm_compact(db));
	get_stats(db, &st);
	CHECK_GE(st.compactions, 1);
	CHECK_LT(st.level[0].files, o.l0_compaction_trigger);
	CHECK_GT(harness_files_from(&st, 1), 0);
	CHECK_GT(st.sst_bytes_written, 0);
	/* nothing over target: another compaction does nothing */
	{
		uint64_t	c = st.compactions;

		CHECK_DB_OK(db, lsm_compact(db));
		get_stats(db, &st);
		CHECK_EQ_U(st.compactions, c);
	}
	CHECK_OK(lsm_close(db));
}

/*
 * Compaction left to the caller (auto_compact = 0), as a background
 * compactor does it: lsm_compaction_needed says when, lsm_compaction_running
 * sees another handle's LOCK.compact, and lsm_compact_try leaves at once
 * (LSM_BUSY) while another handle holds it, then compacts until nothing is
 * due.
 */
TEST(compaction_left_to_caller)
{
	char	   *dir = harness_tmpdir("cmpcall");
	lsm_options o;
	lsm_db	   *db,
			   *other;
	lsm_stats	st;
	model		m;
	int			i;

	small_options(&o);
	o.auto_compact = 0;
	db = open_db(dir, &o);
	other = open_db(dir, &o);
	model_init(&m, 1000);
	CHECK(!lsm_compaction_needed(db));
	CHECK(!lsm_compaction_running(db));
	for (i = 0; i < o.l0_compaction_trigger; i++)
	{
		CHECK(!lsm_compaction_needed(db));
		do_put(db, &m, i, 0);
		CHECK_DB_OK(db, lsm_flush(db));
	}
	get_stats(db, &st);
	CHECK_EQ(st.level[0].files, o.l0_compaction_trigger);
	CHECK_EQ(lsm_level_files(db, 0), o.l0_compaction_trigger);
	CHECK_EQ(lsm_level_files(db, 1), 0);
	CHECK_EQ(lsm_level_files(db, -1), 0);
	CHECK_EQ(lsm_level_files(db, LSM_MAX_LEVELS), 0);
	CHECK_EQ_U(lsm_last_sequence(db), st.last_sequence);
	CHECK_GT(lsm_last_sequence(db), 0);
	CHECK_EQ_U(lsm_last_sequence(NULL), 0);
	CHECK_EQ_U(st.compactions, 0);
	CHECK(lsm_compaction_needed(db));

	/* another handle holds LOCK.compact: busy, nothing done */
	CHECK_DB_OK(other, lsm_lock(other, LSM_LOCK_COMPACTION));
	CHECK(lsm_compaction_running(db));
	CHECK(!lsm_compaction_running(other));	/* its own lock: not "another" */
	CHECK_EQ(lsm_compact_try(db), LSM_BUSY);
	get_stats(db, &st);
	CHECK_EQ_U(st.compactions, 0);
	lsm_unlock(other);
	CHECK(!lsm_compaction_running(db));

	CHECK_DB_OK(db, lsm_compact_try(db));
	get_stats(db, &st);
	CHECK_GE(st.compactions, 1);
	CHECK(!lsm_compaction_needed(db));
	CHECK_LT(st.level[0].files, o.l0_compaction_trigger);
	CHECK_EQ(lsm_level_files(db, 0), st.level[0].files);
	CHECK_EQ(lsm_level_files(db, 1), st.level[1].files);
	check_model(db, &m);
	/* the other handle catches up and sees nothing due either */
	CHECK_DB_OK(other, lsm_refresh(other));
	CHECK_EQ_U(lsm_last_sequence(other), lsm_last_sequence(db));
	CHECK(!lsm_compaction_needed(other));
	check_model(other, &m);
	model_free(&m);
	CHECK_OK(lsm_close(other));
	CHECK_OK(lsm_close(db));
}

/*
 * lsm_compaction_claim, as backends that each see a compaction due use it
 * before launching a compactor: of two handles asking one after the other,
 * the first claims and the second not, until a compaction begins or the
 * claim is older than the ttl; none while another handle compacts, nor on
 * a read-only handle or under lsm_lock.
 */
TEST(compaction_claim_once)
{
	char	   *dir = harness_tmpdir("claim");
	lsm_options o,
				ro;
	lsm_db	   *db,
			   *other,
			   *reader;
	model		m;
	int			i;

	small_options(&o);
	o.auto_compact = 0;
	db = open_db(dir, &o);
	other = open_db(dir, &o);
	ro = o;
	ro.read_only = 1;
	reader = open_db(dir, &ro);
	model_init(&m, 1000);

	CHECK(lsm_compaction_claim(db, 60000));
	CHECK(!lsm_compaction_claim(other, 60000));
	CHECK(!lsm_compaction_claim(db, 60000));
	CHECK(!lsm_compaction_claim(reader, 60000));
	CHECK(!lsm_compaction_claim(NULL, 60000));
	/* an old claim (ttl 0: any claim is) no longer stands */
	CHECK(lsm_compaction_claim(other, 0));
	CHECK(!lsm_compaction_claim(db, 60000));

	/* a compaction that begins ends the claim, whoever made it */
	for (i = 0; i < o.l0_compaction_trigger; i++)
	{
		do_put(db, &m, i, 0);
		CHECK_DB_OK(db, lsm_flush(db));
	}
	CHECK(lsm_compaction_needed(db));
	CHECK_DB_OK(db, lsm_compact_try(db));
	CHECK(!lsm_compaction_needed(db));
	CHECK(lsm_compaction_claim(other, 60000));

	/* none while another handle compacts, nor under lsm_lock */
	CHECK_DB_OK(db, lsm_compact_try(db));
	CHECK_DB_OK(other, lsm_lock(other, LSM_LOCK_COMPACTION));
	CHECK(!lsm_compaction_claim(db, 0));
	CHECK(!lsm_compaction_claim(other, 0));
	lsm_unlock(other);
	CHECK(lsm_compaction_claim(db, 0));
	check_model(db, &m);
	model_free(&m);
	CHECK_OK(lsm_close(reader));
	CHECK_OK(lsm_close(other));
	CHECK_OK(lsm_close(db));
}

/*
 * Hash sharing: every lsm_get hashes its key exactly once, for the
 * memtable's key filter and however many SSTables it probes (here three
 * level-0 files over the whole key range plus deeper levels); a memtable
 * hit probes no SSTable.  filter_probes = filter_negatives + sstable_reads,
 * and false_positives <= sstable_reads.  The same for lsm_multi_get.
 */
TEST(counters_hash_sharing)
{
	char	   *dir = harness_tmpdir("hash");
	model		m;
	lsm_db	   *db = layered_store(dir, &m, 2000, 10);
	lsm_stats	a,
				b;
	uint64_t	absent_probes = 0;
	int			nabsent = 0;
	int			i;

	CHECK_DB_OK(db, lsm_flush(db));	/* a third level-0 file; memtable empty */
	get_stats(db, &a);
	CHECK_GE(a.level[0].files, 3);
	CHECK_EQ_U(a.memtable_entries, 0);
	lsm_reset_counters(db);

	for (i = 0; i < 2000; i++)
	{
		char		key[16];
		size_t		klen = key_of(i, key);
		char		absent[32];
		int			alen = snprintf(absent, sizeof(absent), "key%06d~", i);
		void	   *val;
		size_t		vlen;
		int			rc;

		get_stats(db, &a);
		rc = lsm_get(db, key, klen, &val, &vlen);
		CHECK(rc == LSM_OK || rc == LSM_NOTFOUND);
		if (rc == LSM_OK)
			lsm_free(val);
		get_stats(db, &b);
		CHECK_EQ_U(b.gets - a.gets, 1);
		CHECK_EQ_U(b.key_hashes - a.key_hashes, 1);
		CHECK_GE(b.filter_probes - a.filter_probes, 1);

		/*
		 * absent keys: every overlapping file is probed (inside the range
		 * of the three newest level-0 files, at least those)
		 */
		a = b;
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, absent, (size_t) alen, &val, &vlen));
		get_stats(db, &b);
		CHECK_EQ_U(b.key_hashes - a.key_hashes, 1);
		if (i >= 100 && i < 1900)
			CHECK_GE(b.filter_probes - a.filter_probes, 3);
		absent_probes += b.filter_probes - a.filter_probes;
		nabsent++;
	}
	get_stats(db, &b);
	CHECK_EQ_U(b.gets, 4000);
	CHECK_EQ_U(b.key_hashes, 4000);
	CHECK_GE(b.filter_probes, b.filter_negatives);
	CHECK_EQ_U(b.filter_probes, b.filter_negatives + b.sstable_reads);
	CHECK_LE(b.false_positives, b.sstable_reads);
	/* most absent-key probes are stopped by the filters */
	CHECK_GT(b.filter_negatives, absent_probes * 9 / 10);
	printf("# %d absent keys: %.2f filter probes each, one hash each\n",
		   nabsent, (double) absent_probes / nabsent);

	/* memtable hits hash once and probe no table */
	do_put(db, &m, 5, 77);
	get_stats(db, &a);
	check_get(db, &m, 5);
	get_stats(db, &b);
	CHECK_EQ_U(b.gets - a.gets, 1);
	CHECK_EQ_U(b.key_hashes - a.key_hashes, 1);
	CHECK_EQ_U(b.filter_probes - a.filter_probes, 0);

	/* multi_get: one hash per key */
	{
		const void *keys[3];
		size_t		klens[3];
		void	   *vals[3];
		size_t		vlens[3];
		int			rcs[3];
		char		k0[16],
					k1[16],
					k2[16];

		klens[0] = key_of(5, k0);	/* memtable */
		klens[1] = key_of(6, k1);
		klens[2] = key_of(1999, k2);
		keys[0] = k0;
		keys[1] = k1;
		keys[2] = k2;
		get_stats(db, &a);
		CHECK_DB_OK(db, lsm_multi_get(db, 3, keys, klens, vals, vlens, rcs));
		get_stats(db, &b);
		CHECK_EQ_U(b.gets - a.gets, 3);
		CHECK_EQ_U(b.key_hashes - a.key_hashes, 3);
		for (i = 0; i < 3; i++)
			if (rcs[i] == LSM_OK)
				lsm_free(vals[i]);
	}
	CHECK_OK(lsm_close(db));
	model_free(&m);

	/* without filters: no negatives, every probe reads the table */
	{
		char	   *dir2 = harness_tmpdir("hash0");
		model		m2;

		db = layered_store(dir2, &m2, 1000, 0);
		lsm_reset_counters(db);
		for (i = 0; i < 1000; i++)
			check_get(db, &m2, i);
		get_stats(db, &b);
		CHECK_EQ_U(b.filter_negatives, 0);
		CHECK_EQ_U(b.sstable_reads, b.filter_probes);
		CHECK_LE(b.key_hashes, b.gets);
		CHECK_OK(lsm_close(db));
		model_free(&m2);
	}
}

/*
 * The memtable's key filter: with every key in the memtable (no SSTable),
 * absent keys are answered by the filter (memtable_negatives) nearly
 * always, present keys never are (no false negatives, through lsm_get and
 * lsm_multi_get, including keys whose newest version is a tombstone), and
 * a memtable carried far past its flush threshold by one big batch (its
 * filter grown) still finds every key.
 */
TEST(memtable_key_filter)
{
	char	   *dir = harness_tmpdir("memfilter");
	lsm_options o;
	lsm_db	   *db;
	lsm_batch  *b;
	lsm_stats	a,
				z;
	model		m;
	int			n = 20000,
				i;

	small_options(&o);
	o.memtable_bytes = 16 << 20;
	db = open_db(dir, &o);
	model_init(&m, 2 * n);
	for (i = 0; i < n; i++)
		do_put(db, &m, 2 * i, 1);
	for (i = 0; i < n; i += 10)
		do_del(db, &m, 2 * i);
	get_stats(db, &a);
	CHECK_EQ_U(a.level[0].files, 0);
	CHECK_EQ_U(a.memtable_entries, (uint64_t) n + n / 10);
	lsm_reset_counters(db);

	/* present and deleted keys: always searched */
	for (i = 0; i < n; i++)
		check_get(db, &m, 2 * i);
	get_stats(db, &a);
	CHECK_EQ_U(a.memtable_negatives, 0);
	CHECK_EQ_U(a.key_hashes, (uint64_t) n);
	CHECK_EQ_U(a.filter_probes, 0);

	/* absent keys: nearly all answered by the filter */
	for (i = 0; i < n; i++)
		check_get(db, &m, 2 * i + 1);
	get_stats(db, &z);
	CHECK_EQ_U(z.key_hashes - a.key_hashes, (uint64_t) n);
	CHECK_GE(z.memtable_negatives, (uint64_t) n * 97 / 100);
	printf("# %d absent keys in a memtable of %d: %" PRIu64 " answered by its key filter\n",
		   n, n, z.memtable_negatives);

	/* lsm_multi_get: present, deleted and absent keys in one batch */
	{
		const void *keys[64];
		size_t		klens[64];
		void	   *vals[64];
		size_t		vlens[64];
		int			rcs[64];
		char		kb[64][16];
		int			j;

		for (i = 0; i < 2 * n; i += 64)
		{
			int			cnt = 2 * n - i < 64 ? 2 * n - i : 64;

			for (j = 0; j < cnt; j++)
			{
				klens[j] = key_of(i + j, kb[j]);
				keys[j] = kb[j];
			}
			CHECK_DB_OK(db, lsm_multi_get(db, (size_t) cnt, keys, klens,
										  vals, vlens, rcs));
			for (j = 0; j < cnt; j++)
			{
				if (m.val[i + j] == NULL)
				{
					CHECK_RC(LSM_NOTFOUND, rcs[j]);
					continue;
				}
				CHECK_RC(LSM_OK, rcs[j]);
				CHECK_EQ_U(vlens[j], m.len[i + j]);
				CHECK(memcmp(vals[j], m.val[i + j], vlens[j]) == 0);
				lsm_free(vals[j]);
			}
		}
	}
	CHECK_OK(lsm_close(db));

	/*
	 * One batch of 40000 keys into a 64 KiB memtable: its key filter,
	 * sized for about a thousand keys, grows while the batch is applied;
	 * then the write flushes it.  (test_memtable checks the grown filter.)
	 */
	small_options(&o);
	o.memtable_bytes = 64 * 1024;
	db = open_db(dir, &o);
	b = lsm_batch_new();
	CHECK(b != NULL);
	for (i = 0; i < 2 * n; i++)
	{
		char		key[16];
		char		val[MAXVAL];
		size_t		klen = key_of(i, key);
		size_t		vlen = val_of(i, 3, val, sizeof(val));

		if (i % 3 == 0)
		{
			CHECK_OK(lsm_batch_delete(b, key, klen));
			model_del(&m, i);
		}
		else
		{
			CHECK_OK(lsm_batch_put(b, key, klen, val, vlen));
			model_put(&m, i, val, vlen);
		}
	}
	CHECK_DB_OK(db, lsm_write(db, b));
	lsm_batch_free(b);
	for (i = 0; i < 2 * n; i++)
		check_get(db, &m, i);
	CHECK_OK(lsm_close(db));
	model_free(&m);
}

/* ---------------------------------------------------------------------- */
/* Tests: two handles. */

/*
 * Two handles on one store in one process: each sees the other's writes,
 * flushes and compactions after lsm_refresh (a writer also catches up when
 * it takes the lock).
 */
TEST(two_handles_refresh)
{
	char	   *dir = harness_tmpdir("two");
	lsm_db	   *a = open_db(dir, NULL);
	lsm_db	   *b = open_db(dir, NULL);
	model		m;
	lsm_stats	st;
	void	   *val;
	size_t		vlen;
	int			i;

	model_init(&m, 3000);
	/* a writes; b refreshes and reads */
	for (i = 0; i < 100; i++)
		do_put(a, &m, i, 1);
	CHECK_DB_OK(b, lsm_refresh(b));
	check_model(b, &m);

	/* b writes (catching up with a on the way); a refreshes */
	for (i = 100; i < 200; i++)
		do_put(b, &m, i, 1);
	do_del(b, &m, 50);
	CHECK_DB_OK(b, lsm_get(b, "key000099", 9, &val, &vlen));
	lsm_free(val);
	CHECK_DB_OK(a, lsm_refresh(a));
	check_model(a, &m);

	/* interleaved writes without refreshes in between */
	for (i = 200; i < 400; i++)
		do_put(i % 2 ? a : b, &m, i, 2);
	CHECK_DB_OK(a, lsm_refresh(a));
	CHECK_DB_OK(b, lsm_refresh(b));
	check_model(a, &m);
	check_model(b, &m);

	/* a flushes and compacts; b picks up the new manifest and WAL */
	CHECK_DB_OK(a, lsm_flush(a));
	for (i = 400; i < 3000; i++)
		do_put(a, &m, i, 3);
	for (i = 0; i < 3000; i += 9)
		do_del(a, &m, i);
	CHECK_DB_OK(a, lsm_compact(a));
	get_stats(a, &st);
	CHECK_GT(harness_files_from(&st, 1), 0);
	CHECK_DB_OK(b, lsm_refresh(b));
	check_model(b, &m);
	get_stats(b, &st);
	CHECK_GT(st.refreshes, 0);

	/* b overwrites keys a flushed; a sees them */
	for (i = 0; i < 3000; i += 5)
		do_put(b, &m, i, 4);
	CHECK_DB_OK(b, lsm_flush(b));
	do_put(b, &m, 1, 5);		/* unflushed, in b's WAL */
	CHECK_DB_OK(a, lsm_refresh(a));
	check_model(a, &m);
	CHECK_DB_OK(a, lsm_verify(a));
	CHECK_DB_OK(b, lsm_verify(b));

	/* a refresh with nothing new changes nothing */
	CHECK_DB_OK(a, lsm_refresh(a));
	check_model(a, &m);

	CHECK_OK(lsm_close(a));
	CHECK_DB_OK(b, lsm_refresh(b));
	check_model(b, &m);
	CHECK_OK(lsm_close(b));
	/* and a third handle, after both closed, sees it all */
	a = open_db(dir, NULL);
	check_model(a, &m);
	CHECK_OK(lsm_close(a));
	model_free(&m);
}

/*
 * lsm_view_is_empty: 1 for a new store; 0 once the handle's view holds an
 * entry, in the memtable or in a table.  A handle whose view was empty
 * finds nothing, whatever another handle writes or flushes, until it
 * catches up (what the extension relies on to skip lookups while loading
 * an empty table).
 */
TEST(view_is_empty)
{
	char	   *dir = harness_tmpdir("empty");
	lsm_db	   *a = open_db(dir, NULL);
	lsm_db	   *b = open_db(dir, NULL);
	void	   *val;
	size_t		vlen;

	CHECK_EQ(lsm_view_is_empty(NULL), 0);
	CHECK_EQ(lsm_view_is_empty(a), 1);
	CHECK_EQ(lsm_view_is_empty(b), 1);
	CHECK_DB_OK(b, lsm_put(b, "k1", 2, "v", 1));
	CHECK_EQ(lsm_view_is_empty(b), 0);
	CHECK_EQ(lsm_get(a, "k1", 2, &val, &vlen), LSM_NOTFOUND);
	CHECK_DB_OK(b, lsm_flush(b));
	CHECK_EQ(lsm_view_is_empty(b), 0);	/* a table, no memtable entry */
	CHECK_EQ(lsm_get(a, "k1", 2, &val, &vlen), LSM_NOTFOUND);
	CHECK_DB_OK(a, lsm_refresh(a));
	CHECK_EQ(lsm_view_is_empty(a), 0);
	CHECK_DB_OK(a, lsm_get(a, "k1", 2, &val, &vlen));
	lsm_free(val);
	CHECK_OK(lsm_close(a));
	CHECK_OK(lsm_close(b));
	a = open_db(dir, NULL);
	CHECK_EQ(lsm_view_is_empty(a), 0);
	CHECK_OK(lsm_close(a));
}

/*
 * lsm_written_since: a write after the sequence, from the memtable, from
 * a flushed table, from an ingested stage and from another handle; none
 * for keys untouched since, or absent.
 */
TEST(written_since)
{
	char	   *dir = harness_tmpdir("since");
	lsm_db	   *db = open_db(dir, NULL),
			   *other = open_db(dir, NULL);
	lsm_stage  *st;
	uint64_t	s0,
				s1,
				s2;

	CHECK_DB_OK(db, lsm_put(db, "a", 1, "1", 1));
	s0 = lsm_last_sequence(db);
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "a", 1, s0));
	CHECK_DB_OK(db, lsm_written_since(db, "a", 1, s0 - 1));
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "z", 1, 0));
	CHECK_DB_OK(db, lsm_put(db, "b", 1, "2", 1));
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "a", 1, s0));
	CHECK_DB_OK(db, lsm_written_since(db, "b", 1, s0));
	CHECK_DB_OK(db, lsm_delete(db, "a", 1));
	CHECK_DB_OK(db, lsm_written_since(db, "a", 1, s0));

	/*
	 * In a table now: the flush came after s0.  Its delete of a is gone
	 * with the flush (no table below): absent keys cannot be told apart.
	 */
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_written_since(db, "b", 1, s0));
	CHECK_DB_OK(db, lsm_written_since(db, "a", 1, s0));
	CHECK_DB_OK(db, lsm_written_since(db, "z", 1, s0));
	s1 = lsm_last_sequence(db);
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "b", 1, s1));
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "z", 1, s1));
	CHECK_DB_OK(db, lsm_compact_all(db));
	CHECK_DB_OK(db, lsm_written_since(db, "b", 1, s0));
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "b", 1, s1));

	/* an ingested stage, written by another handle */
	CHECK_DB_OK(other, lsm_stage_open(other, 4096, &st));
	CHECK_DB_OK(other, lsm_stage_truncate(st));
	CHECK_DB_OK(other, lsm_stage_put(st, "c", 1, "3", 1));
	CHECK_DB_OK(other, lsm_stage_commit(st, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_lock(db, 0));
	CHECK_DB_OK(db, lsm_written_since(db, "c", 1, s1));
	s2 = lsm_last_sequence(db);
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "c", 1, s2));
	lsm_unlock(db);
	CHECK_DB_OK(other, lsm_put(other, "b", 1, "4", 1));
	CHECK_DB_OK(db, lsm_lock(db, 0));
	CHECK_DB_OK(db, lsm_written_since(db, "b", 1, s2));
	CHECK_RC(LSM_NOTFOUND, lsm_written_since(db, "c", 1, s2));
	lsm_unlock(db);
	CHECK_DB_OK(other, lsm_close(other));
	CHECK_DB_OK(db, lsm_close(db));
}

/* A one-entry batch: a put (val not NULL) or delete of key, with cond. */
static lsm_batch *
cond_batch(const char *key, const char *val, int cond, uint64_t seq,
		   uint64_t hash)
{
	lsm_batch  *b = lsm_batch_new();

	CHECK(b != NULL);
	CHECK_OK(val ? lsm_batch_put(b, key, strlen(key), val, strlen(val))
			 : lsm_batch_delete(b, key, strlen(key)));
	if (cond != 0)
		CHECK_OK(lsm_batch_require(b, cond, seq, hash));
	return b;
}

/* The value of key in db is want (NULL: absent). */
static void
expect_value(lsm_db *db, const char *key, const char *want)
{
	void	   *v;
	size_t		n;

	if (want == NULL)
	{
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, key, strlen(key), &v, &n));
		return;
	}
	CHECK_DB_OK(db, lsm_get(db, key, strlen(key), &v, &n));
	CHECK(n == strlen(want) && memcmp(v, want, n) == 0);
	lsm_free(v);
}

/*
 * Conditions of a write (lsm_batch_require, lsm_check): checked against
 * the store as the write finds it (another handle's commits included),
 * from the memtable and from tables; a failed one writes nothing and is
 * named; a failed LSM_IF_ABSENT_SKIP only drops its entry; a sequence with
 * nothing written since passes without a read; prepared writes hold keys.
 */
TEST(write_conditions)
{
	char	   *dir = harness_tmpdir("conds");
	lsm_db	   *db = open_db(dir, NULL),
			   *other = open_db(dir, NULL);
	lsm_batch  *b;
	lsm_conflict c;
	uint64_t	s0,
				h1 = lsm_hash("1", 1);
	int			present;

	CHECK(h1 != lsm_hash("2", 1));
	CHECK_DB_OK(db, lsm_put(db, "a", 1, "1", 1));
	s0 = lsm_last_sequence(db);

	/* absent: holds for a new key, fails for a, and writes nothing */
	b = cond_batch("b", "2", LSM_IF_ABSENT, 0, 0);
	CHECK_RC(LSM_NOTFOUND, lsm_batch_conflict(b, &c));
	CHECK_DB_OK(db, lsm_write(db, b));
	lsm_batch_free(b);
	b = cond_batch("x", "9", 0, 0, 0);
	CHECK_OK(lsm_batch_put(b, "a", 1, "3", 1));
	CHECK_OK(lsm_batch_require(b, LSM_IF_ABSENT, 0, 0));
	CHECK_RC(LSM_CONFLICT, lsm_write(db, b));
	CHECK_OK(lsm_batch_conflict(b, &c));
	CHECK(c.entry == 1 && c.klen == 1 && memcmp(c.key, "a", 1) == 0);
	CHECK(c.cond == LSM_IF_ABSENT && c.present);
	CHECK(strstr(lsm_errmsg(db), "entry 1") != NULL);
	lsm_batch_free(b);
	expect_value(db, "a", "1");
	expect_value(db, "x", NULL);

	/* absent, else skip: the other entries are written */
	b = cond_batch("c", "4", 0, 0, 0);
	CHECK_OK(lsm_batch_put(b, "a", 1, "5", 1));
	CHECK_OK(lsm_batch_require(b, LSM_IF_ABSENT_SKIP, 0, 0));
	CHECK_OK(lsm_batch_put(b, "d", 1, "6", 1));
	CHECK_OK(lsm_batch_require(b, LSM_IF_ABSENT_SKIP, 0, 0));
	CHECK_DB_OK(db, lsm_write(db, b));
	CHECK(lsm_batch_count(b) == 2);
	lsm_batch_free(b);
	expect_value(db, "a", "1");
	expect_value(db, "c", "4");
	expect_value(db, "d", "6");
	/* a batch whose every entry is skipped writes nothing */
	s0 = lsm_last_sequence(db);
	b = cond_batch("c", "7", LSM_IF_ABSENT_SKIP, 0, 0);
	CHECK_DB_OK(db, lsm_write(db, b));
	CHECK(lsm_batch_count(b) == 0 && lsm_last_sequence(db) == s0);
	lsm_batch_free(b);

	/* value: the hash of what the key holds, or a key unchanged since */
	b = cond_batch("a", "8", LSM_IF_VALUE, 0, lsm_hash("2", 1));
	CHECK_RC(LSM_CONFLICT, lsm_write(db, b));
	CHECK_OK(lsm_batch_conflict(b, &c));
	CHECK(c.cond == LSM_IF_VALUE && c.present && c.entry == 0);
	lsm_batch_free(b);
	b = cond_batch("a", "8", LSM_IF_VALUE, s0, lsm_hash("2", 1));
	CHECK_DB_OK(db, lsm_write(db, b));	/* a was not written after s0 */
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_check(db, "a", 1, LSM_IF_VALUE, 0, lsm_hash("8", 1),
							  &present));
	CHECK_RC(LSM_CONFLICT, lsm_check(db, "a", 1, LSM_IF_VALUE, 0, h1,
									 &present));
	CHECK(present);
	CHECK_RC(LSM_CONFLICT, lsm_check(db, "zz", 2, LSM_IF_VALUE, 0, h1,
									 &present));
	CHECK(!present);
	CHECK_RC(LSM_INVALID, lsm_check(db, "a", 1, LSM_IF_ABSENT_SKIP, 0, 0,
									NULL));

	/* another handle's commit, seen by the write's catch-up */
	s0 = lsm_last_sequence(db);
	CHECK_DB_OK(other, lsm_delete(other, "a", 1));
	b = cond_batch("a", "9", LSM_IF_VALUE, s0, lsm_hash("8", 1));
	CHECK_RC(LSM_CONFLICT, lsm_write(db, b));
	CHECK_OK(lsm_batch_conflict(b, &c));
	CHECK(c.cond == LSM_IF_VALUE && !c.present);
	lsm_batch_free(b);
	CHECK_DB_OK(other, lsm_put(other, "e", 1, "1", 1));
	b = cond_batch("e", "2", LSM_IF_ABSENT, s0, 0);
	CHECK_RC(LSM_CONFLICT, lsm_write(db, b));
	lsm_batch_free(b);

	/* from tables: the same answers after a flush */
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_check(db, "e", 1, LSM_IF_VALUE, 0, h1, NULL));
	CHECK_DB_OK(db, lsm_check(db, "a", 1, LSM_IF_ABSENT, 0, 0, NULL));
	CHECK_RC(LSM_CONFLICT, lsm_check(db, "c", 1, LSM_IF_ABSENT, 0, 0,
									 &present));
	CHECK(present);

	/* since: a store unchanged since then checks nothing */
	s0 = lsm_last_sequence(db);
	b = cond_batch("c", "5", LSM_IF_ABSENT, 0, 0);
	lsm_batch_require_all(b, 0, s0);
	CHECK_DB_OK(db, lsm_write(db, b));
	lsm_batch_free(b);
	b = cond_batch("c", "6", LSM_IF_ABSENT, 0, 0);
	lsm_batch_require_all(b, 0, s0);
	CHECK_RC(LSM_CONFLICT, lsm_write(db, b));
	lsm_batch_free(b);

	/* a prepared write holds its keys, whatever the sequences say */
	b = cond_batch("p", "1", 0, 0, 0);
	CHECK_DB_OK(other, lsm_prepare(other, b, 7, LSM_WRITE_NOSYNC));
	lsm_batch_free(b);
	b = cond_batch("q", "1", 0, 0, 0);
	CHECK_OK(lsm_batch_put(b, "p", 1, "2", 1));
	lsm_batch_require_all(b, LSM_IF_NOT_PREPARED, lsm_last_sequence(db));
	CHECK_RC(LSM_CONFLICT, lsm_write(db, b));
	CHECK_OK(lsm_batch_conflict(b, &c));
	CHECK(c.cond == 0 && c.owner == 7 && c.entry == 1);
	/* and a batch with conditions is not prepared */
	CHECK_RC(LSM_INVALID, lsm_prepare(db, b, 8, LSM_WRITE_NOSYNC));
	CHECK_DB_OK(other, lsm_resolve(other, 7, 0, LSM_WRITE_NOSYNC));
	CHECK_DB_OK(db, lsm_write(db, b));
	lsm_batch_free(b);
	expect_value(db, "p", "2");
	b = lsm_batch_new();
	CHECK_RC(LSM_INVALID, lsm_batch_require(b, LSM_IF_ABSENT, 0, 0));
	lsm_batch_free(b);

	CHECK_DB_OK(other, lsm_close(other));
	CHECK_DB_OK(db, lsm_close(db));
}

/* Runs the tests named on the command line, or all of them. */
int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(strerror_all_codes);
	RUN(options_defaults);
	RUN(options_validation);
	RUN(open_null_dir_clears_out);
	RUN(open_creates_directory);
	RUN(open_flags);
	RUN(put_get_delete);
	RUN(key_limits);
	RUN(binary_keys_order);
	RUN(batch_atomic_last_wins);
	RUN(model_flush_compact_reopen);
	RUN(big_values_and_batches);
	RUN(many_level0_files);
	RUN(iter_snapshot_isolation);
	RUN(iter_seek_semantics);
	RUN(iter_batches);
	RUN(close_with_open_iterator);
	RUN(multi_get_matches_get);
	RUN(value_search);
	RUN(stats_consistent);
	RUN(flush_compaction_counters);
	RUN(compaction_left_to_caller);
	RUN(compaction_claim_once);
	RUN(counters_hash_sharing);
	RUN(memtable_key_filter);
	RUN(two_handles_refresh);
	RUN(view_is_empty);
	RUN(written_since);
	RUN(write_conditions);
	return harness_done();
}

/*
 * test_version.c
 *		Unit tests of versions and the manifest (version.h).
 *
 * Versions: the sort order of levels (level 0 newest first by max_seq,
 * deeper levels by smallest key), lsm_version_edit (drop and add, the input
 * version untouched, files shared by reference), lsm_version_find_file,
 * lsm_file_overlaps and level byte totals.  The manifest: a round trip of
 * a version with files on several levels and every header field, the
 * rename protocol (no MANIFEST.tmp left, a new inode per write, an old
 * descriptor still reading the old version), and rejection of damaged
 * manifests: every byte flipped, every truncation, trailing bytes, and
 * forged payloads with a valid checksum that break the structure.
 */
#include <fcntl.h>

#include "harness.h"

#include "env.h"
#include "version.h"

/* ---------------------------------------------------------------------- */
/* Helpers. */

/*
 * A new file (one reference) with the given metadata; the other fields are
 * derived from the number.
 */
static lsm_file *
make_file(uint64_t number, uint64_t max_seq, const void *smallest,
		  size_t slen, const void *largest, size_t llen)
{
	lsm_file   *f = lsm_file_new();

	CHECK(f != NULL);
	CHECK_EQ(f->refs, 1);
	CHECK(f->table == NULL);
	f->meta.number = number;
	f->meta.size = 1000 + number * 37;
	f->meta.entries = number * 11 + 1;
	f->meta.deletions = number % 3;
	f->meta.min_seq = max_seq > 5 ? max_seq - 5 : 0;
	f->meta.max_seq = max_seq;
	f->meta.filter_bytes = number % 2 ? 72 + number : 0;
	f->meta.smallest = lsm_memdup(smallest, slen);
	f->meta.smallest_len = slen;
	f->meta.largest = lsm_memdup(largest, llen);
	f->meta.largest_len = llen;
	CHECK(f->meta.smallest != NULL && f->meta.largest != NULL);
	return f;
}

/* Appends f (taking over its reference) to level l of v. */
static void
put_file(lsm_version *v, int l, lsm_file *f)
{
	lsm_file  **p = realloc(v->files[l], sizeof(lsm_file *) * (v->nfiles[l] + 1));

	CHECK(p != NULL);
	v->files[l] = p;
	v->files[l][v->nfiles[l]++] = f;
}

/* Checks that two files' metadata are equal. */
static void
check_meta(const lsm_table_meta *a, const lsm_table_meta *b)
{
	CHECK_EQ_U(a->number, b->number);
	CHECK_EQ_U(a->size, b->size);
	CHECK_EQ_U(a->entries, b->entries);
	CHECK_EQ_U(a->deletions, b->deletions);
	CHECK_EQ_U(a->min_seq, b->min_seq);
	CHECK_EQ_U(a->max_seq, b->max_seq);
	CHECK_EQ_U(a->filter_bytes, b->filter_bytes);
	CHECK_EQ_U(a->global_seq, b->global_seq);
	CHECK_MEMEQ(a->smallest, a->smallest_len, b->smallest, b->smallest_len);
	CHECK_MEMEQ(a->largest, a->largest_len, b->largest, b->largest_len);
}

/* Checks that two versions hold the same header fields and files, in order. */
static void
check_same_version(const lsm_version *a, const lsm_version *b)
{
	int			l,
				i;

	CHECK_EQ_U(a->manifest_seq, b->manifest_seq);
	CHECK_EQ_U(a->next_file, b->next_file);
	CHECK_EQ_U(a->log_number, b->log_number);
	CHECK_EQ_U(a->last_seq, b->last_seq);
	CHECK_EQ_U(a->value_filter_bits, b->value_filter_bits);
	CHECK_EQ(a->value_filter_hashes, b->value_filter_hashes);
	CHECK_EQ(a->hierarchy_order, b->hierarchy_order);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		CHECK_EQ(a->nfiles[l], b->nfiles[l]);
		for (i = 0; i < a->nfiles[l]; i++)
			check_meta(&a->files[l][i]->meta, &b->files[l][i]->meta);
	}
}

/* Checks the sort invariants of every level of v. */
static void
check_sorted(const lsm_version *v)
{
	int			l,
				i;

	for (i = 1; i < v->nfiles[0]; i++)
	{
		const lsm_table_meta *p = &v->files[0][i - 1]->meta;
		const lsm_table_meta *q = &v->files[0][i]->meta;

		CHECK_MSG(p->max_seq > q->max_seq ||
				  (p->max_seq == q->max_seq && p->number > q->number),
				  "level 0 out of order at %d", i);
	}
	for (l = 1; l < LSM_MAX_LEVELS; l++)
		for (i = 1; i < v->nfiles[l]; i++)
		{
			const lsm_table_meta *p = &v->files[l][i - 1]->meta;
			const lsm_table_meta *q = &v->files[l][i]->meta;

			CHECK_MSG(lsm_key_cmp(p->smallest, p->smallest_len, q->smallest,
								  q->smallest_len) < 0,
					  "level %d out of order at %d", l, i);
		}
}

/*
 * A version with files on levels 0, 1, 3 and 6, deliberately out of
 * order: level 0 by max_seq 5, 9, 7, 9 (numbers 1..4); level 1 by smallest
 * key, including binary keys and a key that is a prefix of another (the
 * files of a level >= 1 are disjoint, as the manifest reader requires).
 */
static lsm_version *
sample_version(void)
{
	lsm_version *v = lsm_version_new();

	CHECK(v != NULL);
	CHECK_EQ(v->refs, 1);
	CHECK_EQ_U(v->next_file, 1);
	v->manifest_seq = 42;
	v->next_file = 100;
	v->log_number = 77;
	v->last_seq = UINT64_C(0x123456789abc);
	v->value_filter_bits = 1 << 21;
	v->value_filter_hashes = 3;
	v->hierarchy_order = 4;
	put_file(v, 0, make_file(1, 5, "a", 1, "z", 1));
	put_file(v, 0, make_file(2, 9, "b", 1, "c", 1));
	put_file(v, 0, make_file(3, 7, "\0", 1, "\xff", 1));
	put_file(v, 0, make_file(4, 9, "m", 1, "n", 1));
	put_file(v, 1, make_file(10, 20, "k", 1, "k\x01", 2));
	put_file(v, 1, make_file(11, 21, "\0\0", 2, "\0\xff", 2));
	put_file(v, 1, make_file(12, 22, "ka", 2, "kb", 2));
	put_file(v, 1, make_file(13, 23, "\xff\xff", 2, "\xff\xff\xff", 3));
	put_file(v, 1, make_file(14, 24, "d", 1, "f", 1));
	put_file(v, 3, make_file(30, 30, "q", 1, "r", 1));
	put_file(v, 3, make_file(31, 31, "e", 1, "p", 1));
	put_file(v, 6, make_file(99, 1, "", 0, "\xff\xff\xff\xff", 4));
	return v;
}

/* Opens dir/MANIFEST read-only. */
static int
open_manifest(const char *dir)
{
	char	   *path = harness_path(dir, "MANIFEST");
	lsm_err		e;
	int			fd;

	lsm_err_clear(&e);
	CHECK_OK(lsm_env_open(path, O_RDONLY, 0, &fd, &e));
	free(path);
	return fd;
}

/* Reads the whole of dir/name into a new allocation. */
static uint8_t *
slurp(const char *dir, const char *name, size_t *len)
{
	char	   *path = harness_path(dir, name);
	uint8_t    *buf = harness_read_file(path, len);

	free(path);
	return buf;
}

/* Writes buf as dir/name, replacing it. */
static void
spew(const char *dir, const char *name, const void *buf, size_t len)
{
	char	   *path = harness_path(dir, name);

	harness_write_file(path, buf, len);
	free(path);
}

/* Reads dir/name as a manifest; returns the code (version released). */
static int
read_named(const char *dir, const char *name, lsm_err *e)
{
	char	   *path = harness_path(dir, name);
	lsm_version *v = (lsm_version *) 1;
	int			fd;
	int			rc;

	lsm_err_clear(e);
	CHECK_OK(lsm_env_open(path, O_RDONLY, 0, &fd, e));
	rc = lsm_manifest_read(fd, name, &v, e);
	lsm_env_close(fd);
	if (rc == LSM_OK)
	{
		CHECK(v != NULL);
		lsm_version_unref(v);
	}
	else
		CHECK(v == NULL);
	free(path);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Tests. */

/* Sorting: level 0 newest first (ties by number), deeper levels by key. */
TEST(sort_levels)
{
	lsm_version *v = sample_version();

	lsm_version_sort(v);
	check_sorted(v);
	CHECK_EQ_U(v->files[0][0]->meta.number, 4);	/* max_seq 9, higher number */
	CHECK_EQ_U(v->files[0][1]->meta.number, 2);
	CHECK_EQ_U(v->files[0][2]->meta.number, 3);
	CHECK_EQ_U(v->files[0][3]->meta.number, 1);
	CHECK_EQ_U(v->files[1][0]->meta.number, 11);	/* "\0\0" */
	CHECK_EQ_U(v->files[1][1]->meta.number, 14);	/* "d" */
	CHECK_EQ_U(v->files[1][2]->meta.number, 10);	/* "k" before "ka" */
	CHECK_EQ_U(v->files[1][3]->meta.number, 12);
	CHECK_EQ_U(v->files[1][4]->meta.number, 13);	/* "\xff\xff" */
	CHECK_EQ_U(v->files[3][0]->meta.number, 31);
	CHECK_EQ_U(v->files[3][1]->meta.number, 30);
	CHECK_EQ_U(lsm_version_level_bytes(v, 3), (1000 + 30 * 37) + (1000 + 31 * 37));
	CHECK_EQ_U(lsm_version_level_bytes(v, 2), 0);
	lsm_version_unref(v);
}

/* Manifest round trip: every field, every file, sorted on the way in. */
TEST(manifest_roundtrip)
{
	char	   *dir = harness_tmpdir("man");
	char	   *tmp = harness_path(dir, "MANIFEST.tmp");
	lsm_version *v = sample_version();
	lsm_version *r;
	lsm_err		e;
	bool		switched = false;
	int			fd;
	int			l,
				i;
	struct stat st;

	lsm_err_clear(&e);
	CHECK_OK(lsm_manifest_write(dir, v, &switched, &e));
	CHECK(switched);
	CHECK_NE(stat(tmp, &st), 0);	/* renamed away */
	fd = open_manifest(dir);
	CHECK_OK(lsm_manifest_read(fd, "MANIFEST", &r, &e));
	lsm_env_close(fd);
	check_sorted(r);
	lsm_version_sort(v);
	check_same_version(v, r);
	CHECK_EQ(r->refs, 1);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		for (i = 0; i < r->nfiles[l]; i++)
		{
			CHECK(r->files[l][i]->table == NULL);
			CHECK_EQ(r->files[l][i]->refs, 1);
		}
	lsm_version_unref(r);

	/* an empty version (as a new store has), with NULL for switched */
	{
		lsm_version *empty = lsm_version_new();

		CHECK(empty != NULL);
		empty->log_number = 1;
		empty->next_file = 2;
		empty->hierarchy_order = 2;
		CHECK_OK(lsm_manifest_write(dir, empty, NULL, &e));
		fd = open_manifest(dir);
		CHECK_OK(lsm_manifest_read(fd, "MANIFEST", &r, &e));
		lsm_env_close(fd);
		check_same_version(empty, r);
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			CHECK_EQ(r->nfiles[l], 0);
		lsm_version_unref(r);
		lsm_version_unref(empty);
	}
	lsm_version_unref(v);
	free(tmp);
}

/*
 * Global sequences of ingested tables: a manifest holding one is format 3
 * and carries it per file; without any it stays format 2 (readable by
 * earlier readers).  A global sequence past last_seq is malformed.
 */
TEST(manifest_global_seq)
{
	char	   *dir = harness_tmpdir("mang");
	lsm_version *v = sample_version();
	lsm_version *r;
	uint8_t    *buf;
	size_t		len;
	lsm_err		e;
	int			fd;

	lsm_err_clear(&e);
	v->last_seq = 500;
	CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
	buf = slurp(dir, "MANIFEST", &len);
	CHECK_EQ(lsm_get_u32(buf + 8), LSM_MANIFEST_FORMAT);
	free(buf);

	/* level-0 tables as an ingest leaves them */
	v->files[0][0]->meta.global_seq = 400;
	v->files[0][0]->meta.min_seq = v->files[0][0]->meta.max_seq = 400;
	v->files[0][1]->meta.global_seq = 401;
	v->files[0][1]->meta.min_seq = v->files[0][1]->meta.max_seq = 401;
	lsm_version_sort(v);
	CHECK_EQ_U(v->files[0][0]->meta.global_seq, 401);	/* newest first */
	CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
	buf = slurp(dir, "MANIFEST", &len);
	CHECK_EQ(lsm_get_u32(buf + 8), LSM_MANIFEST_FORMAT_GSEQ);
	free(buf);
	fd = open_manifest(dir);
	CHECK_OK(lsm_manifest_read(fd, "MANIFEST", &r, &e));
	lsm_env_close(fd);
	check_same_version(v, r);
	CHECK_EQ_U(r->files[0][0]->meta.global_seq, 401);
	CHECK_EQ_U(r->files[0][1]->meta.global_seq, 400);
	CHECK_EQ_U(r->files[1][0]->meta.global_seq, 0);
	lsm_version_unref(r);

	/* a global sequence the store never handed out */
	v->last_seq = 400;
	CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
	CHECK_RC(LSM_CORRUPTION, read_named(dir, "MANIFEST", &e));
	lsm_version_unref(v);
}

/*
 * Each write renames a new file over MANIFEST: a new inode, and a
 * descriptor opened before still reads the old version.
 */
TEST(manifest_replace)
{
	char	   *dir = harness_tmpdir("manr");
	char	   *path = harness_path(dir, "MANIFEST");
	lsm_version *v = sample_version();
	lsm_version *r;
	lsm_err		e;
	struct stat st1,
				st2;
	int			oldfd,
				newfd;

	lsm_err_clear(&e);
	CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
	CHECK_EQ(stat(path, &st1), 0);
	oldfd = open_manifest(dir);
	v->manifest_seq = 43;
	v->last_seq++;
	CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
	CHECK_EQ(stat(path, &st2), 0);
	CHECK_NE(st1.st_ino, st2.st_ino);

	CHECK_OK(lsm_manifest_read(oldfd, "MANIFEST", &r, &e));
	CHECK_EQ_U(r->manifest_seq, 42);
	lsm_version_unref(r);
	newfd = open_manifest(dir);
	CHECK_OK(lsm_manifest_read(newfd, "MANIFEST", &r, &e));
	CHECK_EQ_U(r->manifest_seq, 43);
	CHECK_EQ_U(r->last_seq, v->last_seq);
	lsm_version_unref(r);
	lsm_env_close(oldfd);
	lsm_env_close(newfd);
	lsm_version_unref(v);
	free(path);
}

/*
 * Edits: a new version minus the dropped files plus the added ones, sorted;
 * the input version is unchanged and files are shared by reference.
 */
TEST(version_edit)
{
	lsm_version *v = sample_version();
	lsm_version *n;
	lsm_version *n2;
	lsm_file   *add[3];
	uint64_t	drop[] = {2, 12, 30, 555};
	lsm_file   *f11;
	int			i;

	lsm_version_sort(v);
	f11 = v->files[1][0];
	CHECK_EQ_U(f11->meta.number, 11);
	CHECK_EQ(f11->refs, 1);

	add[0] = make_file(40, 100, "g", 1, "h", 1);
	add[1] = make_file(41, 101, "\x01", 1, "\x02", 1);
	add[2] = make_file(42, 102, "x", 1, "y", 1);
	n = lsm_version_edit(v, drop, 4, add, 3, 1);
	CHECK(n != NULL);
	CHECK_EQ(n->refs, 1);
	check_sorted(n);
	/* header copied */
	CHECK_EQ_U(n->manifest_seq, v->manifest_seq);
	CHECK_EQ_U(n->next_file, v->next_file);
	CHECK_EQ_U(n->log_number, v->log_number);
	CHECK_EQ_U(n->last_seq, v->last_seq);
	CHECK_EQ_U(n->value_filter_bits, v->value_filter_bits);
	CHECK_EQ(n->value_filter_hashes, v->value_filter_hashes);
	CHECK_EQ(n->hierarchy_order, v->hierarchy_order);
	/* level 0 lost file 2, level 1 lost 12 and gained 40..42, level 3 lost 30 */
	CHECK_EQ(n->nfiles[0], 3);
	for (i = 0; i < n->nfiles[0]; i++)
		CHECK_NE(n->files[0][i]->meta.number, 2);
	CHECK_EQ(n->nfiles[1], 5 - 1 + 3);
	CHECK_EQ_U(n->files[1][0]->meta.number, 11);
	CHECK_EQ_U(n->files[1][1]->meta.number, 41);
	CHECK_EQ_U(n->files[1][2]->meta.number, 14);
	CHECK_EQ_U(n->files[1][3]->meta.number, 40);
	CHECK_EQ_U(n->files[1][4]->meta.number, 10);
	CHECK_EQ_U(n->files[1][5]->meta.number, 42);
	CHECK_EQ_U(n->files[1][6]->meta.number, 13);
	CHECK_EQ(n->nfiles[3], 1);
	CHECK_EQ_U(n->files[3][0]->meta.number, 31);
	CHECK_EQ(n->nfiles[6], 1);
	/* the input is untouched */
	CHECK_EQ(v->nfiles[0], 4);
	CHECK_EQ(v->nfiles[1], 5);
	CHECK_EQ(v->nfiles[3], 2);
	check_sorted(v);
	/* shared files: the same objects, one more reference */
	CHECK(n->files[1][0] == f11);
	CHECK_EQ(f11->refs, 2);
	CHECK_EQ(add[0]->refs, 2);

	/* adding to level 0 sorts by max_seq: the new files come first */
	n2 = lsm_version_edit(n, NULL, 0, add, 2, 0);
	CHECK(n2 != NULL);
	CHECK_EQ(n2->nfiles[0], 5);
	CHECK_EQ_U(n2->files[0][0]->meta.number, 41);
	CHECK_EQ_U(n2->files[0][1]->meta.number, 40);
	check_sorted(n2);
	/* ours, n's, and n2's two (level 1 copied from n, level 0 added) */
	CHECK_EQ(add[0]->refs, 4);
	CHECK_EQ(f11->refs, 3);

	/* releasing in any order keeps the others intact (ASan checks) */
	lsm_version_unref(v);
	CHECK_EQ(f11->refs, 2);
	lsm_version_unref(n);
	CHECK_EQ(f11->refs, 1);
	CHECK_MEMEQ(n2->files[1][0]->meta.smallest, n2->files[1][0]->meta.smallest_len,
				"\0\0", 2);
	for (i = 0; i < 3; i++)
		lsm_file_unref(add[i]);
	CHECK_EQ(add[0]->refs, 2);	/* n2 still holds 40, twice */
	lsm_version_unref(n2);

	/* version references */
	v = lsm_version_new();
	CHECK(v != NULL);
	lsm_version_ref(v);
	CHECK_EQ(v->refs, 2);
	lsm_version_unref(v);
	lsm_version_unref(v);
	lsm_version_unref(NULL);
	lsm_file_unref(NULL);
}

/*
 * find_file: the first file of a level whose largest key >= key; and
 * overlaps: inclusive ranges, NULL bounds unbounded.
 */
TEST(find_file_and_overlaps)
{
	lsm_version *v = lsm_version_new();
	lsm_file   *f;
	static const struct
	{
		const char *key;
		size_t		len;
		int			want;
	}			cases[] = {
		{"", 0, 0},
		{"\0", 1, 0},
		{"a", 1, 0},
		{"b", 1, 0},
		{"c", 1, 0},
		{"c\0", 2, 1},
		{"d", 1, 1},
		{"e", 1, 1},
		{"g", 1, 1},
		{"g\0", 2, 2},
		{"h", 1, 2},
		{"k", 1, 2},
		{"m", 1, 2},
		{"m\0", 2, 3},
		{"mm", 2, 3},
		{"\xff", 1, 3},
	};
	size_t		i;

	CHECK(v != NULL);
	put_file(v, 1, make_file(3, 1, "k", 1, "m", 1));
	put_file(v, 1, make_file(1, 1, "a", 1, "c", 1));
	put_file(v, 1, make_file(2, 1, "e", 1, "g", 1));
	lsm_version_sort(v);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_MSG(lsm_version_find_file(v, 1, cases[i].key, cases[i].len) ==
				  cases[i].want, "find_file(\"%s\") = %d, expected %d",
				  cases[i].key,
				  lsm_version_find_file(v, 1, cases[i].key, cases[i].len),
				  cases[i].want);
	/* an empty level */
	CHECK_EQ(lsm_version_find_file(v, 2, "a", 1), 0);

	f = v->files[1][1];			/* [e, g] */
	CHECK(lsm_file_overlaps(f, NULL, 0, NULL, 0));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "e", 1, (const uint8_t *) "e", 1));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "g", 1, (const uint8_t *) "g", 1));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "a", 1, (const uint8_t *) "e", 1));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "g", 1, (const uint8_t *) "z", 1));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "f", 1, (const uint8_t *) "f", 1));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "a", 1, (const uint8_t *) "z", 1));
	CHECK(lsm_file_overlaps(f, NULL, 0, (const uint8_t *) "e", 1));
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "g", 1, NULL, 0));
	CHECK(!lsm_file_overlaps(f, (const uint8_t *) "a", 1, (const uint8_t *) "d", 1));
	CHECK(!lsm_file_overlaps(f, (const uint8_t *) "a", 1,
							 (const uint8_t *) "d\xff", 2));
	CHECK(!lsm_file_overlaps(f, (const uint8_t *) "g\0", 2,
							 (const uint8_t *) "z", 1));
	CHECK(!lsm_file_overlaps(f, NULL, 0, (const uint8_t *) "d", 1));
	CHECK(!lsm_file_overlaps(f, (const uint8_t *) "h", 1, NULL, 0));
	/* the prefix rule: "e" < "e\0" and "g" < "g\0" */
	CHECK(lsm_file_overlaps(f, (const uint8_t *) "", 0, (const uint8_t *) "e", 1));
	CHECK(!lsm_file_overlaps(f, (const uint8_t *) "", 0, (const uint8_t *) "", 0));
	lsm_version_unref(v);
}

/* Every single flipped bit and every truncation is LSM_CORRUPTION. */
/*
 * The fenced search of lsm_version_find_file equals a plain binary search
 * over the files' largest keys, for levels whose keys share long prefixes,
 * are short, are prefixes of each other or tie in the 8 fenced bytes.
 */
TEST(find_file_fences)
{
	static const char alphabet[] = {'\0', 'a', 'b', '\xff'};
	uint64_t	rng = harness_seed();
	int			round;

	for (round = 0; round < 200; round++)
	{
		lsm_version *v = lsm_version_new();
		char		prefix[24];
		size_t		plen = (size_t) (harness_rand64(&rng) % 20);
		char		keys[64][40];
		size_t		lens[64];
		int			n = 1 + (int) (harness_rand64(&rng) % 40),
					i,
					j;

		CHECK(v != NULL);
		for (i = 0; i < (int) plen; i++)
			prefix[i] = alphabet[harness_rand64(&rng) % 4];
		/* distinct random keys sharing the prefix, sorted into files */
		for (i = 0; i < n; i++)
		{
			memcpy(keys[i], prefix, plen);
			lens[i] = plen + (size_t) (harness_rand64(&rng) % 12);
			for (j = (int) plen; j < (int) lens[i]; j++)
				keys[i][j] = alphabet[harness_rand64(&rng) % 4];
		}
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++)
				if (lsm_key_cmp(keys[j], lens[j], keys[i], lens[i]) < 0)
				{
					char		t[40];
					size_t		tl = lens[i];

					memcpy(t, keys[i], sizeof(t));
					memcpy(keys[i], keys[j], sizeof(t));
					memcpy(keys[j], t, sizeof(t));
					lens[i] = lens[j];
					lens[j] = tl;
				}
		for (i = 0; i < n; i++)
			if (i == 0 || lsm_key_cmp(keys[i], lens[i], keys[i - 1], lens[i - 1]) > 0)
				put_file(v, 1, make_file((uint64_t) i + 1, 1, keys[i], lens[i],
										 keys[i], lens[i]));
		v->next_file = 100;
		lsm_version_sort(v);
		CHECK(v->fence[1] != NULL);
		for (i = 0; i < 300; i++)
		{
			char		k[40];
			size_t		klen = (size_t) (harness_rand64(&rng) % (plen + 12));

			for (j = 0; j < (int) klen; j++)
				k[j] = j < (int) plen && harness_rand64(&rng) % 8 ? prefix[j] :
					alphabet[harness_rand64(&rng) % 4];
			CHECK_EQ(lsm_version_find_file(v, 1, k, klen),
					 lsm_files_find(v->files[1], v->nfiles[1], k, klen));
			{
				int			want = lsm_files_find(v->files[1], v->nfiles[1], k, klen);

				if (want < v->nfiles[1] &&
					lsm_key_cmp(v->files[1][want]->meta.smallest,
								v->files[1][want]->meta.smallest_len, k, klen) > 0)
					want = -1;
				if (want == v->nfiles[1])
					want = -1;
				CHECK_EQ(lsm_version_locate(v, 1, k, klen), want);
			}
		}
		for (i = 0; i < v->nfiles[1]; i++)
			CHECK_EQ(lsm_version_find_file(v, 1, v->files[1][i]->meta.largest,
										   v->files[1][i]->meta.largest_len), i);
		lsm_version_unref(v);
	}
}

TEST(manifest_damage)
{
	char	   *dir = harness_tmpdir("mand");
	lsm_version *v = sample_version();
	lsm_err		e;
	uint8_t    *good;
	size_t		len;
	size_t		pos;
	int			bad = 0;

	lsm_err_clear(&e);
	CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
	lsm_version_unref(v);
	good = slurp(dir, "MANIFEST", &len);
	CHECK_GT(len, 100);

	for (pos = 0; pos < len; pos++)
	{
		int			bit;

		for (bit = 0; bit < 8; bit += 3)
		{
			int			rc;

			good[pos] ^= (uint8_t) (1 << bit);
			spew(dir, "BAD", good, len);
			good[pos] ^= (uint8_t) (1 << bit);
			rc = read_named(dir, "BAD", &e);
			if (rc != LSM_CORRUPTION)
			{
				if (bad++ < 5)
					printf("# byte %zu bit %d: read returned %d (%s)\n", pos,
						   bit, rc, lsm_strerror(rc));
			}
			else
				CHECK(strstr(e.msg, "BAD") != NULL);
		}
	}
	CHECK_MSG(bad == 0, "%d flipped bits not detected", bad);

	for (pos = 0; pos < len; pos++)
	{
		spew(dir, "BAD", good, pos);
		CHECK_MSG(read_named(dir, "BAD", &e) == LSM_CORRUPTION,
				  "manifest cut to %zu of %zu bytes accepted", pos, len);
	}
	/* a trailing byte */
	{
		uint8_t    *longer = malloc(len + 1);

		CHECK(longer != NULL);
		memcpy(longer, good, len);
		longer[len] = 0;
		spew(dir, "BAD", longer, len + 1);
		CHECK_RC(LSM_CORRUPTION, read_named(dir, "BAD", &e));
		free(longer);
	}
	spew(dir, "GOOD", good, len);
	CHECK_OK(read_named(dir, "GOOD", &e));
	free(good);
}

/*
 * Writes a manifest of the given format with a valid header and checksum
 * around the payload p[0..n) as dir/name.
 */
static void
write_forged_format(const char *dir, const char *name, uint32_t format,
					const uint8_t *p, size_t n)
{
	uint8_t    *buf = malloc(n + 20);

	CHECK(buf != NULL);
	lsm_put_u64(buf, LSM_MANIFEST_MAGIC);
	lsm_put_u32(buf + 8, format);
	lsm_put_u32(buf + 12, (uint32_t) n);
	memcpy(buf + 16, p, n);
	lsm_put_u32(buf + 16 + n, lsm_checksum(p, n));
	spew(dir, name, buf, n + 20);
	free(buf);
}

/* write_forged_format of format 1 (no value filter fields, no hierarchy). */
static void
write_forged(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	write_forged_format(dir, name, 1, p, n);
}

/* Appends varints to b. */
static void
put_varints(lsm_buf *b, const uint64_t *v, int n)
{
	int			i;

	for (i = 0; i < n; i++)
		CHECK_OK(lsm_buf_append_varint(b, v[i]));
}

/*
 * Forged payloads that pass the checksum but break the structure: wrong
 * level count, truncated file entries, keys past the end, a file number
 * not below next_file, trailing bytes.  And the forging itself, checked
 * with a well-formed payload.
 */
TEST(manifest_forged)
{
	char	   *dir = harness_tmpdir("manf");
	lsm_err		e;
	lsm_buf		b = {0};
	/* manifest_seq, next_file, log, last_seq, vf bits, vf hashes, order */
	uint64_t	hdr[7] = {1, 10, 2, 50, 1024, 3, 3};
	uint64_t	levels = LSM_MAX_LEVELS;
	uint64_t	file[7] = {5, 4096, 10, 0, 1, 50, 72};
	uint64_t	zero = 0;
	uint64_t	one = 1;
	int			l;

	/* well-formed: one file on level 2 */
	put_varints(&b, hdr, 7);
	put_varints(&b, &levels, 1);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		if (l != 2)
		{
			put_varints(&b, &zero, 1);
			continue;
		}
		put_varints(&b, &one, 1);
		put_varints(&b, file, 7);
		put_varints(&b, &one, 1);
		CHECK_OK(lsm_buf_append(&b, "a", 1));
		put_varints(&b, &one, 1);
		CHECK_OK(lsm_buf_append(&b, "b", 1));
	}
	write_forged(dir, "M", b.data, b.len);
	lsm_err_clear(&e);
	CHECK_OK(read_named(dir, "M", &e));

	/* trailing byte inside the payload */
	CHECK_OK(lsm_buf_append(&b, "", 1));
	write_forged(dir, "M", b.data, b.len);
	CHECK_RC(LSM_CORRUPTION, read_named(dir, "M", &e));
	b.len--;

	/* every truncation of the payload (checksum recomputed) */
	{
		size_t		full = b.len;
		size_t		cut;

		for (cut = 0; cut < full; cut++)
		{
			write_forged(dir, "M", b.data, cut);
			CHECK_MSG(read_named(dir, "M", &e) == LSM_CORRUPTION,
					  "payload cut to %zu of %zu accepted", cut, full);
		}
	}

	/* a level count other than LSM_MAX_LEVELS */
	b.len = 0;
	put_varints(&b, hdr, 7);
	levels = LSM_MAX_LEVELS - 1;
	put_varints(&b, &levels, 1);
	for (l = 0; l < LSM_MAX_LEVELS - 1; l++)
		put_varints(&b, &zero, 1);
	write_forged(dir, "M", b.data, b.len);
	CHECK_RC(LSM_CORRUPTION, read_named(dir, "M", &e));
	levels = LSM_MAX_LEVELS;

	/* a file count far beyond the payload */
	b.len = 0;
	put_varints(&b, hdr, 7);
	put_varints(&b, &levels, 1);
	{
		uint64_t	huge = UINT64_C(1) << 40;

		put_varints(&b, &huge, 1);
	}
	write_forged(dir, "M", b.data, b.len);
	CHECK_RC(LSM_CORRUPTION, read_named(dir, "M", &e));

	/* a key length past the end */
	b.len = 0;
	put_varints(&b, hdr, 7);
	put_varints(&b, &levels, 1);
	put_varints(&b, &one, 1);
	put_varints(&b, file, 7);
	{
		uint64_t	klen = 1000;

		put_varints(&b, &klen, 1);
	}
	CHECK_OK(lsm_buf_append(&b, "abc", 3));
	for (l = 1; l < LSM_MAX_LEVELS; l++)
		put_varints(&b, &zero, 1);
	write_forged(dir, "M", b.data, b.len);
	CHECK_RC(LSM_CORRUPTION, read_named(dir, "M", &e));
	lsm_buf_free(&b);

	/* a file number not below next_file (written by the real writer) */
	{
		lsm_version *v = sample_version();

		v->next_file = 99;		/* file 99 is on level 6 */
		CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
		CHECK_RC(LSM_CORRUPTION, read_named(dir, "MANIFEST", &e));
		v->next_file = 100;
		CHECK_OK(lsm_manifest_write(dir, v, NULL, &e));
		CHECK_OK(read_named(dir, "MANIFEST", &e));
		lsm_version_unref(v);
	}
}

/* A file of a forged format 2 payload: its number, level and key range. */
typedef struct ffile
{
	uint64_t	number;
	int			level;
	const char *lo;
	const char *hi;
	uint64_t	vbytes;			/* value_filter_bytes */
} ffile;

/*
 * A format 2 payload: header hdr[0..7), the files, value_unindexed 0 and
 * the hierarchy given as varints tree[0..ntree) (the presence flag first).
 */
static void
forge_payload(lsm_buf *b, const uint64_t *hdr, const ffile *files, int nfiles,
			  const uint64_t *tree, int ntree)
{
	uint64_t	levels = LSM_MAX_LEVELS;
	uint64_t	zero = 0;
	int			l,
				i;

	b->len = 0;
	put_varints(b, hdr, 7);
	put_varints(b, &levels, 1);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		uint64_t	n = 0;

		for (i = 0; i < nfiles; i++)
			n += files[i].level == l;
		put_varints(b, &n, 1);
		for (i = 0; i < nfiles; i++)
		{
			const ffile *f = &files[i];
			uint64_t	fl[8] = {f->number, 4096, 10, 0, 1, 40, 72, f->vbytes};
			uint64_t	lo = strlen(f->lo),
						hi = strlen(f->hi);

			if (f->level != l)
				continue;
			put_varints(b, fl, 8);
			put_varints(b, &lo, 1);
			CHECK_OK(lsm_buf_append(b, f->lo, lo));
			put_varints(b, &hi, 1);
			CHECK_OK(lsm_buf_append(b, f->hi, hi));
		}
	}
	put_varints(b, &zero, 1);
	put_varints(b, tree, ntree);
}

/*
 * Reads dir/M, forged as format `format` from b, and checks the outcome:
 * LSM_OK if what is NULL, else LSM_CORRUPTION with what in the message.
 */
static void
check_forged(const char *dir, uint32_t format, const lsm_buf *b,
			 const char *what)
{
	lsm_err		e;
	int			rc;

	write_forged_format(dir, "M", format, b->data, b->len);
	rc = read_named(dir, "M", &e);
	if (what == NULL)
	{
		CHECK_MSG(rc == LSM_OK, "%s", e.msg);
		return;
	}
	CHECK_MSG(rc == LSM_CORRUPTION && strstr(e.msg, what) != NULL,
			  "expected corruption \"%s\", got %s: %s", what,
			  lsm_strerror(rc), e.msg);
	CHECK(strstr(e.msg, "at offset") != NULL);
}

/* Reads dir/name as a manifest into *v, which must succeed. */
static void
read_ok(const char *dir, const char *name, lsm_version **v)
{
	char	   *path = harness_path(dir, name);
	lsm_err		e;
	int			fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	lsm_err_clear(&e);
	CHECK_OK(lsm_manifest_read(fd, name, v, &e));
	close(fd);
	free(path);
}

/*
 * Values that pass the checksum but that no writer writes, each refused
 * with LSM_CORRUPTION naming it (issue 11: they were used unchecked): value
 * filter parameters outside lsm_open's bounds (m not a multiple of 512 or
 * above 2^30, k above 30 or not going with m, d outside 2 .. 1024), and
 * the structure: log_number, file numbers 0 or named twice, a key range
 * upside down, overlapping files in a level >= 1, and hierarchies that name
 * a leaf twice, leave an eligible table out, name a table that is no leaf
 * or a node file not below next_file.  Format 1 manifests stored the
 * options as given: their m, k and d are normalised as a new store's are.
 */
TEST(manifest_forged_values)
{
	char	   *dir = harness_tmpdir("manv");
	lsm_buf		b = {0};
	/* manifest_seq, next_file, log, last_seq, m, k, d */
	uint64_t	hdr[7] = {1, 10, 2, 50, 4096, 3, 3};
	ffile		files[3] = {{5, 0, "a", "z", 0}, {6, 1, "a", "f", 600},
	{7, 1, "g", "k", 600}};
	/* a root of two leaves, node file 8 */
	uint64_t	tree[] = {1, 2, 8, 0, 6, 0, 7};
	lsm_version *v;

	forge_payload(&b, hdr, files, 3, tree, 7);
	check_forged(dir, 2, &b, NULL);

	/* m, k and d */
	{
		static const struct
		{
			uint64_t	m,
						k,
						d;
			const char *what;
		}			bad[] = {
			{1000, 3, 3, "value_filter_bits 1000 "},
			{4096 + 64, 3, 3, "value_filter_bits 4160 "},
			{256, 3, 3, "value_filter_bits 256 "},
			{(UINT64_C(1) << 30) + 512, 3, 3, "value_filter_bits 1073742336 "},
			{UINT64_C(1) << 32, 3, 3, "value_filter_bits 4294967296 "},
			{4096, 31, 3, "value_filter_hashes 31 "},
			{4096, 1000000000, 3, "value_filter_hashes 1000000000 "},
			{4096, 0, 3, "value_filter_hashes 0 "},
			{0, 3, 3, "value_filter_hashes 3 "},
			{4096, 3, 1, "hierarchy_order 1 "},
			{4096, 3, 1025, "hierarchy_order 1025 "},
			{4096, 3, UINT64_C(1) << 31, "hierarchy_order 2147483648 "},
		};
		int			i;

		for (i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
		{
			uint64_t	h[7] = {1, 10, 2, 50, bad[i].m, bad[i].k, bad[i].d};

			forge_payload(&b, h, files, 3, tree, 7);
			check_forged(dir, 2, &b, bad[i].what);
		}
	}

	/* format 1: normalised (m rounded up, no hashes no filter, d >= 2) */
	{
		uint64_t	h[7] = {1, 10, 2, 50, 1000, 3, 0};
		uint64_t	levels = LSM_MAX_LEVELS;
		uint64_t	zero = 0;
		int			l;

		b.len = 0;
		put_varints(&b, h, 7);
		put_varints(&b, &levels, 1);
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			put_varints(&b, &zero, 1);
		write_forged(dir, "M", b.data, b.len);
		read_ok(dir, "M", &v);
		CHECK_EQ_U(v->value_filter_bits, 1024);
		CHECK_EQ(v->value_filter_hashes, 3);
		CHECK_EQ(v->hierarchy_order, 2);
		lsm_version_unref(v);
		h[5] = 0;
		b.len = 0;
		put_varints(&b, h, 7);
		put_varints(&b, &levels, 1);
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			put_varints(&b, &zero, 1);
		write_forged(dir, "M", b.data, b.len);
		read_ok(dir, "M", &v);
		CHECK_EQ_U(v->value_filter_bits, 0);
		CHECK_EQ(v->value_filter_hashes, 0);
		lsm_version_unref(v);
		h[4] = UINT64_C(1) << 31;
		h[5] = 3;
		b.len = 0;
		put_varints(&b, h, 7);
		put_varints(&b, &levels, 1);
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			put_varints(&b, &zero, 1);
		check_forged(dir, 1, &b, "value_filter_bits 2147483648 ");
	}

	/* the log and the files */
	{
		uint64_t	h[7] = {1, 10, 0, 50, 4096, 3, 3};

		forge_payload(&b, h, files, 3, tree, 7);
		check_forged(dir, 2, &b, "log_number 0 ");
		h[2] = 10;
		forge_payload(&b, h, files, 3, tree, 7);
		check_forged(dir, 2, &b, "log_number 10 ");
	}
	{
		ffile		dup[3] = {{6, 0, "a", "z", 0}, {6, 1, "a", "f", 600},
		{7, 1, "g", "k", 600}};
		ffile		zero[3] = {{0, 0, "a", "z", 0}, {6, 1, "a", "f", 600},
		{7, 1, "g", "k", 600}};
		ffile		upside[3] = {{5, 0, "z", "a", 0}, {6, 1, "a", "f", 600},
		{7, 1, "g", "k", 600}};
		ffile		overlap[3] = {{5, 0, "a", "z", 0}, {6, 1, "a", "g", 600},
		{7, 1, "g", "k", 600}};

		forge_payload(&b, hdr, dup, 3, tree, 7);
		check_forged(dir, 2, &b, "file 6 is named twice");
		forge_payload(&b, hdr, zero, 3, tree, 7);
		check_forged(dir, 2, &b, "file number 0 ");
		forge_payload(&b, hdr, upside, 3, tree, 7);
		check_forged(dir, 2, &b, "smallest key above its largest");
		forge_payload(&b, hdr, overlap, 3, tree, 7);
		check_forged(dir, 2, &b, "files 6 and 7 overlap in level 1");
	}

	/* the hierarchy */
	{
		uint64_t	twice[] = {1, 2, 8, 0, 6, 0, 6};
		uint64_t	missing[] = {1, 0, 6};
		uint64_t	none[] = {0};
		uint64_t	level0[] = {1, 3, 8, 0, 5, 0, 6, 0, 7};
		uint64_t	far[] = {1, 2, 10, 0, 6, 0, 7};

		forge_payload(&b, hdr, files, 3, twice, 7);
		check_forged(dir, 2, &b, "table 6 is a leaf twice");
		forge_payload(&b, hdr, files, 3, missing, 3);
		check_forged(dir, 2, &b, "1 of the 2 tables with value filters");
		forge_payload(&b, hdr, files, 3, none, 1);
		check_forged(dir, 2, &b, "0 of the 2 tables with value filters");
		forge_payload(&b, hdr, files, 3, level0, 9);
		check_forged(dir, 2, &b, "leaf 5 is not a table of level 1");
		forge_payload(&b, hdr, files, 3, far, 7);
		check_forged(dir, 2, &b, "node file 10 is not below next_file 10");
	}
	lsm_buf_free(&b);
}

/*
 * Counts and node references that no writer writes (issue 16): a file
 * count that fits the payload at a byte per file but not at the bytes a
 * file takes (the reader allocated for it first), a node with more
 * children than bytes left, and two internal nodes naming one node file
 * (the root's, or a sibling's): each node is one file, the OR of its own
 * children.  Refused with LSM_CORRUPTION naming them; the same tree with
 * distinct node files is read.
 */
TEST(manifest_forged_counts_and_nodes)
{
	char	   *dir = harness_tmpdir("manc");
	lsm_buf		b = {0};
	uint64_t	hdr[7] = {1, 12, 2, 50, 4096, 3, 3};
	ffile		files[4] = {{3, 1, "a", "b", 600}, {4, 1, "c", "d", 600},
	{5, 1, "e", "f", 600}, {6, 1, "g", "h", 600}};
	/* root 10 over nodes 9 and 11, two leaves each */
	uint64_t	tree[] = {1, 2, 10, 2, 9, 0, 3, 0, 4, 2, 11, 0, 5, 0, 6};
	uint64_t	sibling[] = {1, 2, 10, 2, 9, 0, 3, 0, 4, 2, 9, 0, 5, 0, 6};
	uint64_t	root[] = {1, 2, 10, 2, 10, 0, 3, 0, 4, 2, 11, 0, 5, 0, 6};
	uint64_t	wide[] = {1, 4096, 10, 0, 3, 0, 4, 0, 5, 0, 6};
	int			ntree = (int) (sizeof(tree) / sizeof(tree[0]));

	forge_payload(&b, hdr, files, 4, tree, ntree);
	check_forged(dir, 2, &b, NULL);
	forge_payload(&b, hdr, files, 4, sibling, ntree);
	check_forged(dir, 2, &b, "node file 9 is named twice");
	forge_payload(&b, hdr, files, 4, root, ntree);
	check_forged(dir, 2, &b, "node file 10 is named twice");
	forge_payload(&b, hdr, files, 4, wide, 11);
	check_forged(dir, 2, &b, "a node with 4096 children in 8 bytes");

	/* 100 files on level 0 in 200 bytes: not 10 bytes a file */
	{
		uint64_t	levels = LSM_MAX_LEVELS;
		uint64_t	n = 100;
		uint8_t		junk[200];

		memset(junk, 1, sizeof(junk));
		b.len = 0;
		put_varints(&b, hdr, 7);
		put_varints(&b, &levels, 1);
		put_varints(&b, &n, 1);
		CHECK_OK(lsm_buf_append(&b, junk, sizeof(junk)));
		check_forged(dir, 2, &b, "100 files in level 0 do not fit");
	}
	lsm_buf_free(&b);
}

/* Runs the tests named on the command line, or all of them. */
int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(sort_levels);
	RUN(manifest_roundtrip);
	RUN(manifest_global_seq);
	RUN(manifest_replace);
	RUN(version_edit);
	RUN(find_file_and_overlaps);
	RUN(find_file_fences);
	RUN(manifest_damage);
	RUN(manifest_forged);
	RUN(manifest_forged_values);
	RUN(manifest_forged_counts_and_nodes);
	return harness_done();
}

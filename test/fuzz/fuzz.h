/*
 * fuzz.h
 *		What the libFuzzer targets test/fuzz/fuzz_<kind>.c share: a template
 *		store, a scratch copy of it per input, and the workload every input
 *		goes through.
 *
 * A target takes its input as one file of a store (its MANIFEST, one of its
 * SSTables, one of its hierarchy node files), puts it into a fresh copy of
 * a small valid store built once per process (the template), and runs the
 * engine over it: open, point lookups (lsm_get, lsm_multi_get), scans both
 * ways, value searches with every strategy and their estimates, lsm_verify,
 * then writes, a flush and a compaction (which rewrite the manifest and
 * the hierarchy from what was read), another round of searches and
 * lsm_verify, and a read-only reopen.  Whatever the input, nothing may
 * crash, hang, leak or allocate without bound; any error is fine.
 *
 * The template (FUZZ_TEMPLATE_* below) holds about 1000 rows of 3 fields in
 * tables of 4 KiB of 256-byte blocks: several level-1 tables (hierarchy
 * leaves) under a tree of order 2 with stored internal nodes, level-0
 * tables that overwrite and delete some of the keys, and a WAL with a few
 * batches.  Value filters are small (2048 bits, 3 hashes), so node files
 * are 268 bytes and a fuzzer can reach every byte of them.
 *
 * Each input gets its own directory under the process's root
 * ($TMPDIR/lsm-fuzz.XXXXXX): the template's immutable files (.sst, .vfn)
 * are hard-linked into it, the others copied, and it is removed afterwards.
 * TMPDIR on a tmpfs (/dev/shm) keeps the fsyncs of flushes and compactions
 * cheap.
 *
 * With LSM_FUZZ_SEEDS=<dir> in the environment, a target first writes its
 * seed corpus into <dir>: the template's own files of its kind and the
 * damaged variants the target knows (regression inputs of issue 11); this
 * is how test/fuzz/corpus/<kind>/ was made (README.md, Contributing).
 *
 * Engine-internal headers are fine here: the targets are tests of the
 * engine, linked against it like test/test_*.c.
 */
#ifndef LSM_FUZZ_H
#define LSM_FUZZ_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hierarchy.h"
#include "sstable.h"
#include "version.h"

#define FUZZ_UNUSED __attribute__((unused))

#define FUZZ_NKEYS 1000
#define FUZZ_VALUE_BITS 2048
#define FUZZ_VALUE_HASHES 3

static char fuzz_root[4096];	/* this process's directory */
static char fuzz_template[4096];	/* the template store */
static int	fuzz_runs;			/* inputs run so far (scratch names) */

/* Fails the harness itself (not the engine): a bug in the target. */
static void __attribute__((noreturn, format(printf, 1, 2)))
fuzz_die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "fuzz harness: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* The options of the template store and of every open of a copy. */
static void
fuzz_options(lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = 4096;
	o->file_bytes = 4096;
	o->block_bytes = 256;
	o->value_filter_bits = FUZZ_VALUE_BITS;
	o->value_filter_hashes = FUZZ_VALUE_HASHES;
	o->hierarchy_order = 2;
	o->l0_compaction_trigger = 4;
	o->auto_compact = 0;
	o->lock_timeout_ms = 1000;
}

/* The name of key i (buf of 16 bytes); returns its length. */
static size_t
fuzz_key(int i, char *buf)
{
	return (size_t) snprintf(buf, 16, "k%05d", i);
}

/*
 * The row of version ver of key i: field 0 one of 97 values (ten rows or
 * so share each), field 1 the key, field 2 null for every third key.
 */
static void
fuzz_row(int i, int ver, void **row, size_t *rowlen)
{
	char		f0[16],
				f1[16],
				f2[16];
	lsm_field	fields[3];

	memset(fields, 0, sizeof(fields));
	fields[0].data = f0;
	fields[0].len = (size_t) snprintf(f0, sizeof(f0), "c%d", i % 97);
	fields[1].data = f1;
	fields[1].len = fuzz_key(i, f1);
	fields[2].data = f2;
	fields[2].len = (size_t) snprintf(f2, sizeof(f2), "v%d", ver);
	fields[2].is_null = i % 3 == 0;
	if (lsm_row_encode(fields, 3, row, rowlen) != LSM_OK)
		fuzz_die("lsm_row_encode failed");
}

static void
fuzz_check(lsm_db *db, int rc, const char *what)
{
	if (rc != LSM_OK)
		fuzz_die("building the template: %s: %s (%s)", what,
				 lsm_strerror(rc), lsm_errmsg(db));
}

/* Puts version ver of key i. */
static void
fuzz_put(lsm_db *db, int i, int ver)
{
	char		key[16];
	size_t		klen = fuzz_key(i, key);
	void	   *row;
	size_t		rowlen;

	fuzz_row(i, ver, &row, &rowlen);
	fuzz_check(db, lsm_put(db, key, klen, row, rowlen), "lsm_put");
	lsm_free(row);
}

/* Builds the template store in fuzz_template (see the header comment). */
static void
fuzz_build_template(void)
{
	lsm_options o;
	lsm_stats	st;
	lsm_db	   *db;
	char		key[16];
	int			i,
				l,
				deeper = 0;

	fuzz_options(&o);
	fuzz_check(NULL, lsm_open(fuzz_template, &o, &db), "lsm_open");
	for (i = 0; i < FUZZ_NKEYS; i++)
		fuzz_put(db, i, 1);
	fuzz_check(db, lsm_flush(db), "lsm_flush");
	fuzz_check(db, lsm_compact_all(db), "lsm_compact_all");
	/* level-0 tables of overwrites and deletes */
	for (i = 0; i < FUZZ_NKEYS; i += 7)
		fuzz_put(db, i, 2);
	fuzz_check(db, lsm_flush(db), "lsm_flush");
	for (i = 3; i < FUZZ_NKEYS; i += 11)
		fuzz_check(db, lsm_delete(db, key, fuzz_key(i, key)), "lsm_delete");
	fuzz_check(db, lsm_flush(db), "lsm_flush");
	/* the WAL: a few batches */
	for (i = 1; i < FUZZ_NKEYS; i += 50)
		fuzz_put(db, i, 3);
	fuzz_check(db, lsm_verify(db), "lsm_verify");
	fuzz_check(db, lsm_get_stats(db, &st), "lsm_get_stats");
	for (l = 1; l < LSM_MAX_LEVELS; l++)
		deeper += st.level[l].files;
	if (st.level[0].files < 2 || deeper < 5 || st.hierarchy.internal < 2 ||
		st.hierarchy.saturated == st.hierarchy.internal)
		fuzz_die("the template store has the wrong shape (%d level-0 tables, %d deeper, %llu internal nodes)",
				 st.level[0].files, deeper,
				 (unsigned long long) st.hierarchy.internal);
	fuzz_check(db, lsm_close(db), "lsm_close");
}

static int
fuzz_rm_one(const char *path, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	return remove(path);
}

/* Removes directory path and everything in it. */
static void
fuzz_rmtree(const char *path)
{
	nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
fuzz_cleanup(void)
{
	if (fuzz_root[0] != '\0')
		fuzz_rmtree(fuzz_root);
}

/*
 * Makes the process's root directory and builds the template in it, once.
 * Then, with LSM_FUZZ_SEEDS set, calls write_seeds(<dir>) (may be NULL).
 */
static void
fuzz_init(void (*write_seeds) (const char *dir))
{
	const char *tmp = getenv("TMPDIR");
	const char *seeds = getenv("LSM_FUZZ_SEEDS");

	if (fuzz_root[0] != '\0')
		return;
	snprintf(fuzz_root, sizeof(fuzz_root), "%s/lsm-fuzz.XXXXXX",
			 tmp && tmp[0] ? tmp : "/tmp");
	if (mkdtemp(fuzz_root) == NULL)
		fuzz_die("mkdtemp %s: %s", fuzz_root, strerror(errno));
	atexit(fuzz_cleanup);
	snprintf(fuzz_template, sizeof(fuzz_template), "%s/template", fuzz_root);
	fuzz_build_template();
	if (seeds && seeds[0] && write_seeds)
	{
		mkdir(seeds, 0755);
		write_seeds(seeds);
	}
}

/* Reads the whole file path into a new allocation; NULL if unreadable. */
static uint8_t *
fuzz_slurp(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf = NULL;
	long		n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
		fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(n ? n : 1)) != NULL &&
		fread(buf, 1, n, f) != (size_t) n)
	{
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = buf ? (size_t) n : 0;
	return buf;
}

/* Writes data as path, replacing it. */
static void
fuzz_spew(const char *path, const uint8_t *data, size_t len)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || (len > 0 && write(fd, data, len) != (ssize_t) len))
		fuzz_die("writing %s: %s", path, strerror(errno));
	close(fd);
}

/* Reads template file name (NULL if there is none). */
static uint8_t *
fuzz_template_file(const char *name, size_t *len)
{
	char		path[4096];

	snprintf(path, sizeof(path), "%s/%s", fuzz_template, name);
	return fuzz_slurp(path, len);
}

/* Writes a seed of the corpus: dir/name. */
static void
fuzz_seed(const char *dir, const char *name, const uint8_t *data, size_t len)
{
	char		path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fuzz_spew(path, data, len);
}

/*
 * Makes a fresh copy of the template for one input (hard links for the
 * immutable tables and node files); returns its path (static buffer).
 */
static const char *
fuzz_scratch(void)
{
	static char dir[4096];
	DIR		   *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s/run%d", fuzz_root, fuzz_runs++);
	if (mkdir(dir, 0755) != 0)
		fuzz_die("mkdir %s: %s", dir, strerror(errno));
	d = opendir(fuzz_template);
	if (d == NULL)
		fuzz_die("opendir %s: %s", fuzz_template, strerror(errno));
	while ((de = readdir(d)) != NULL)
	{
		char		from[4096],
					to[4096];
		size_t		n = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		snprintf(from, sizeof(from), "%s/%s", fuzz_template, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", dir, de->d_name);
		if (n > 4 && (strcmp(de->d_name + n - 4, ".sst") == 0 ||
					  strcmp(de->d_name + n - 4, ".vfn") == 0))
		{
			if (link(from, to) != 0)
				fuzz_die("link %s: %s", to, strerror(errno));
		}
		else
		{
			size_t		len;
			uint8_t    *buf = fuzz_slurp(from, &len);

			if (buf == NULL)
				fuzz_die("reading %s", from);
			fuzz_spew(to, buf, len);
			free(buf);
		}
	}
	closedir(d);
	return dir;
}

/*
 * Puts the right checksum after the block at [off, off + size) of buf (len
 * bytes), if the block and its checksum lie inside it.  The targets fix
 * the checksums of every block their input names before writing it, so
 * that mutations reach the code behind the checksums (a mutation of a
 * checksummed block would otherwise only ever test the checksum).
 */
static FUZZ_UNUSED void
fuzz_fix_block(uint8_t *buf, size_t len, uint64_t off, uint64_t size)
{
	if (off <= len && size <= len - off && len - off - size >= 4)
		lsm_put_u32(buf + off + size, lsm_checksum(buf + off, size));
}

/* Writes an input as file name of the scratch store dir (replacing it). */
static void
fuzz_put_file(const char *dir, const char *name, const uint8_t *data,
			  size_t len)
{
	char		path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);				/* a hard link: never write through it */
	fuzz_spew(path, data, len);
}

/* The template's version (its manifest decoded; tables not opened). */
static FUZZ_UNUSED lsm_version *
fuzz_template_version(void)
{
	char		path[4096];
	lsm_version *v;
	lsm_err		e;
	int			fd;

	snprintf(path, sizeof(path), "%s/MANIFEST", fuzz_template);
	fd = open(path, O_RDONLY);
	if (fd < 0 || lsm_manifest_read(fd, "MANIFEST", &v, &e) != LSM_OK)
		fuzz_die("reading the template's manifest");
	close(fd);
	return v;
}

/* ---------- the workload ---------- */

/*
 * With LSM_FUZZ_VERBOSE set, prints what the engine answered to a step of
 * the workload (to see what an input does: fuzz_<kind> file...).
 */
static void
fuzz_note(lsm_db *db, const char *what, int rc)
{
	static int	verbose = -1;

	if (verbose < 0)
		verbose = getenv("LSM_FUZZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "%s: %s%s%s\n", what, lsm_strerror(rc),
				rc == LSM_OK ? "" : ": ", rc == LSM_OK ? "" : lsm_errmsg(db));
}

/* Reads an iterator to its end (or error); forwards or backwards. */
static void
fuzz_drain(lsm_iter *it, const void *from, size_t fromlen)
{
	size_t		klen,
				vlen;

	lsm_iter_seek(it, from, fromlen);
	while (lsm_iter_valid(it))
	{
		(void) lsm_iter_key(it, &klen);
		(void) lsm_iter_value(it, &vlen);
		lsm_iter_next(it);
	}
	(void) lsm_iter_status(it);
}

/* Scans the store forwards and backwards, whole and from a middle key. */
static void
fuzz_scans(lsm_db *db)
{
	char		mid[16];
	size_t		midlen = fuzz_key(FUZZ_NKEYS / 2, mid);
	lsm_iter   *it;
	int			pass;

	for (pass = 0; pass < 4; pass++)
	{
		if (lsm_iter_open(db, &it) != LSM_OK)
			return;
		if (pass >= 2 && lsm_iter_reverse(it) != LSM_OK)
		{
			lsm_iter_close(it);
			continue;
		}
		fuzz_drain(it, pass % 2 ? mid : NULL, pass % 2 ? midlen : 0);
		lsm_iter_close(it);
	}
}

/* Point lookups, one by one and batched. */
static void
fuzz_gets(lsm_db *db)
{
	char		keys[16][16];
	const void *kp[16];
	size_t		klens[16];
	void	   *vals[16];
	size_t		vlens[16];
	int			rcs[16];
	int			i;

	for (i = 0; i < FUZZ_NKEYS + 5; i += 13)
	{
		char		key[16];
		size_t		klen = fuzz_key(i, key);
		void	   *val;
		size_t		vlen;

		if (lsm_get(db, key, klen, &val, &vlen) == LSM_OK)
			lsm_free(val);
	}
	for (i = 0; i < 16; i++)
	{
		klens[i] = fuzz_key(i * 19, keys[i]);
		kp[i] = keys[i];
	}
	if (lsm_multi_get(db, 16, kp, klens, vals, vlens, rcs) == LSM_OK)
		for (i = 0; i < 16; i++)
			if (rcs[i] == LSM_OK)
				lsm_free(vals[i]);
}

/* Value searches of a few values with every strategy, and estimates. */
static void
fuzz_searches(lsm_db *db)
{
	static const struct
	{
		int			field;
		const char *val;
	}			probes[] = {{0, "c1"}, {1, "k00042"}, {2, "v2"}};
	int			p,
				s;

	/*
	 * AUTO is TREE on a handle without a flat layout; SCAN reads every
	 * block, whatever the value, so once is enough.
	 */
	for (p = 0; p < (int) (sizeof(probes) / sizeof(probes[0])); p++)
		for (s = LSM_SEARCH_TREE; s <= (p == 0 ? LSM_SEARCH_SCAN :
										LSM_SEARCH_LEAVES); s++)
		{
			lsm_search_stats st;
			lsm_iter   *it;
			size_t		n = strlen(probes[p].val);

			(void) lsm_value_search_estimate(db, probes[p].field,
											 probes[p].val, n, s, &st);
			if (lsm_value_search_with(db, probes[p].field, probes[p].val, n,
									  s, &it) != LSM_OK)
				continue;
			while (lsm_iter_valid(it))
				lsm_iter_next(it);
			(void) lsm_iter_search_stats(it, &st);
			lsm_iter_close(it);
		}
}

/* Everything a reader does. */
static void
fuzz_reads(lsm_db *db)
{
	lsm_stats	st;

	fuzz_gets(db);
	fuzz_scans(db);
	fuzz_searches(db);
	(void) lsm_get_stats(db, &st);
	fuzz_note(db, "lsm_verify", lsm_verify(db));
}

/*
 * The workload of one input, on the store in dir: reads, writes that flush
 * and compact (the manifest and the hierarchy are rewritten from what was
 * read), reads again, and a read-only reopen.
 */
static void
fuzz_exercise(const char *dir)
{
	lsm_options o;
	lsm_db	   *db;
	char		key[16];
	int			i,
				rc;

	fuzz_options(&o);
	o.create_if_missing = 0;
	rc = lsm_open(dir, &o, &db);
	fuzz_note(NULL, "lsm_open", rc);
	if (rc != LSM_OK)
		return;
	fuzz_reads(db);
	for (i = 0; i < 40; i++)
	{
		void	   *row;
		size_t		rowlen;
		size_t		klen = fuzz_key(FUZZ_NKEYS + i * 3 - 60, key);

		fuzz_row(i, 4, &row, &rowlen);
		(void) lsm_put(db, key, klen, row, rowlen);
		lsm_free(row);
	}
	(void) lsm_delete(db, key, fuzz_key(5, key));
	fuzz_note(db, "lsm_flush", lsm_flush(db));
	fuzz_note(db, "lsm_compact", lsm_compact(db));
	fuzz_reads(db);
	(void) lsm_close(db);

	o.read_only = 1;
	if (lsm_open(dir, &o, &db) != LSM_OK)
		return;
	fuzz_gets(db);
	(void) lsm_verify(db);
	(void) lsm_close(db);
}

/* Runs the workload on a scratch copy with file name replaced by data. */
static FUZZ_UNUSED void
fuzz_run_with_file(const char *name, const uint8_t *data, size_t len)
{
	const char *dir = fuzz_scratch();

	fuzz_put_file(dir, name, data, len);
	fuzz_exercise(dir);
	fuzz_rmtree(dir);
}

#endif							/* LSM_FUZZ_H */

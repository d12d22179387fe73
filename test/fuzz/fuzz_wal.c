/*
 * fuzz_wal.c
 *		libFuzzer target: the input is a store's write-ahead log
 *		(NNNNNN.log).
 *
 * The input becomes the log named by the manifest of a copy of a small
 * store (the template, built once per process: a few keys in a table and
 * last_seq past them), and the store goes through every open mode:
 *
 *	1. read-only: open, scan, lsm_verify, close;
 *	2. shared: open, scan, commit a batch, close;
 *	3. exclusive: reopen, scan, lsm_verify, lsm_stats, close;
 *	4. a stage that spills (its commit is an ingest), then a read-only
 *	   reopen.
 *
 * Whatever the input, nothing may crash, hang, leak or allocate without
 * bound, and recovery must keep its promises (docs/architecture.md,
 * "Invalid WAL tails"); a broken promise aborts, which libFuzzer reports:
 *	- an open fails only with LSM_CORRUPTION (or LSM_NOMEM), the same in
 *	  every mode, and then changes nothing in the log;
 *	- every mode reads the same entries, a commit after them survives a
 *	  reopen next to them, lsm_verify passes once a writer has opened the
 *	  store, and the store's record shows one discarded tail if the log had
 *	  one (none otherwise).
 * Each input runs twice: as it is, and with the checksum of every record
 * its length fields frame recomputed, so that mutations also reach the
 * batch decoder behind the checksums.
 *
 * Each run gets a fresh copy of the template in this process's directory
 * ($TMPDIR/lsm-fuzz-wal.XXXXXX, removed at exit); TMPDIR on a tmpfs
 * (/dev/shm) keeps the fsyncs cheap.  With LSM_FUZZ_SEEDS=<dir> in the
 * environment, the target first writes its seed corpus into <dir>: logs of
 * the template store and the regression inputs of issue 11 (regress-*);
 * that is how test/fuzz/corpus/wal/ was made.
 *
 * Build it with clang's libFuzzer, ASan and UBSan against the engine
 * sources (README.md, Contributing), then fuzz, for example:
 *	TMPDIR=/dev/shm fuzz_wal -max_total_time=600 test/fuzz/corpus/wal
 */
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

#include "util.h"
#include "wal.h"

#define NKEYS 12				/* keys of the template's table */
#define NBATCHES 5				/* batches of the template's log */

static char root[4096];			/* this process's directory */
static char template_dir[4096];	/* the template store */
static char scratch[4096];		/* the store of the current run */
static char log_name[32];		/* the log the template's manifest names */
static uint64_t first_seq;		/* the sequence its first record must have */

/* A bug in the target or a broken promise of the engine: abort. */
static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "fuzz_wal: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---------- files ---------- */

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	remove(path);
	return 0;
}

/* Removes path and everything under it. */
static void
rmtree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
cleanup(void)
{
	if (root[0])
		rmtree(root);
}

/* Reads the file at path into a new allocation (*len bytes). */
static uint8_t *
slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t    *buf;
	int			fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
		die("reading %s: %s", path, strerror(errno));
	buf = malloc(st.st_size ? (size_t) st.st_size : 1);
	if (buf == NULL ||
		pread(fd, buf, (size_t) st.st_size, 0) != (ssize_t) st.st_size)
		die("reading %s", path);
	close(fd);
	*len = (size_t) st.st_size;
	return buf;
}

/* Writes data[0 .. len) as the whole file dir/name. */
static void
spew(const char *dir, const char *name, const uint8_t *data, size_t len)
{
	char		path[8192];
	int			fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (len > 0 && write(fd, data, len) != (ssize_t) len))
		die("writing %s: %s", path, strerror(errno));
	close(fd);
}

/* Makes the scratch store a copy of the template with log as its log. */
static void
fresh_copy(const uint8_t *log, size_t len)
{
	DIR		   *d;
	struct dirent *de;

	rmtree(scratch);
	if (mkdir(scratch, 0755) != 0)
		die("mkdir %s: %s", scratch, strerror(errno));
	if ((d = opendir(template_dir)) == NULL)
		die("opendir %s", template_dir);
	while ((de = readdir(d)) != NULL)
	{
		char		path[8192];
		uint8_t    *buf;
		size_t		n;

		if (de->d_name[0] == '.' || strcmp(de->d_name, log_name) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", template_dir, de->d_name);
		buf = slurp(path, &n);
		spew(scratch, de->d_name, buf, n);
		free(buf);
	}
	closedir(d);
	spew(scratch, log_name, log, len);
}

/* ---------- the template ---------- */

/* The options of the template and of every open. */
static void
options(lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = 1 << 20;
	o->file_bytes = 4096;
	o->block_bytes = 256;
	o->auto_compact = 0;
	o->lock_timeout_ms = 1000;
}

static void
must(lsm_db *db, int rc, const char *what)
{
	if (rc != LSM_OK)
		die("%s: %s (%s)", what, lsm_strerror(rc), lsm_errmsg(db));
}

/*
 * Builds the template: NKEYS keys flushed to a table, then NBATCHES
 * batches in the new log, whose bytes become the first seed.
 */
static void
build_template(void)
{
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st;
	DIR		   *d;
	struct dirent *de;
	int			i;

	options(&o);
	must(NULL, lsm_open(template_dir, &o, &db), "lsm_open");
	for (i = 0; i < NKEYS; i++)
	{
		char		key[16];

		snprintf(key, sizeof(key), "t%03d", i);
		must(db, lsm_put(db, key, 4, "table value", 11), "lsm_put");
	}
	must(db, lsm_flush(db), "lsm_flush");
	must(db, lsm_get_stats(db, &st), "lsm_get_stats");
	first_seq = st.last_sequence + 1;
	for (i = 0; i < NBATCHES; i++)
	{
		lsm_batch  *b = lsm_batch_new();
		int			j;

		for (j = 0; j <= i; j++)
		{
			char		key[16];

			snprintf(key, sizeof(key), "w%d/%d", i, j);
			if (j == 2)
				must(db, lsm_batch_delete(b, "t003", 4), "delete");
			else
				must(db, lsm_batch_put(b, key, strlen(key), "log value", 9),
					 "put");
		}
		must(db, lsm_write(db, b), "lsm_write");
		lsm_batch_free(b);
	}
	must(db, lsm_close(db), "lsm_close");

	/* the one log left is the one the manifest names */
	if ((d = opendir(template_dir)) == NULL)
		die("opendir %s", template_dir);
	while ((de = readdir(d)) != NULL)
	{
		size_t		n = strlen(de->d_name);

		if (n > 4 && strcmp(de->d_name + n - 4, ".log") == 0)
			snprintf(log_name, sizeof(log_name), "%s", de->d_name);
	}
	closedir(d);
	if (log_name[0] == '\0')
		die("the template has no log");
}

/* ---------- reading and checking ---------- */

/* What a scan read: every entry, in order. */
typedef struct contents
{
	lsm_buf		bytes;			/* (klen u32, key, vlen u32, value)* */
	size_t		n;
} contents;

/* Scans db whole into c (which the caller frees); aborts on an error. */
static void
scan(lsm_db *db, contents *c, const char *what)
{
	lsm_iter   *it;
	int			rc;

	memset(c, 0, sizeof(*c));
	must(db, lsm_iter_open(db, &it), what);
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen,
					vlen;
		const void *k = lsm_iter_key(it, &klen),
				   *v = lsm_iter_value(it, &vlen);
		uint8_t		len[4];

		lsm_put_u32(len, (uint32_t) klen);
		if (lsm_buf_append(&c->bytes, len, 4) != LSM_OK ||
			lsm_buf_append(&c->bytes, k, klen) != LSM_OK)
			die("out of memory");
		lsm_put_u32(len, (uint32_t) vlen);
		if (lsm_buf_append(&c->bytes, len, 4) != LSM_OK ||
			lsm_buf_append(&c->bytes, v, vlen) != LSM_OK)
			die("out of memory");
		c->n++;
	}
	/* the log only feeds the memtable: a scan of it cannot fail */
	rc = lsm_iter_status(it);
	if (rc != LSM_OK)
		die("%s: the scan failed: %s (%s)", what, lsm_strerror(rc),
			lsm_errmsg(db));
	lsm_iter_close(it);
}

/* The committed batch: two keys no log of the corpus holds. */
static const char *const new_keys[2] = {"\xff\xfe" "fuzz-new-a", "\xff\xfe" "fuzz-new-b"};

/* Is the entry (k, klen) one of new_keys? */
static bool
is_new_key(const void *k, size_t klen)
{
	int			i;

	for (i = 0; i < 2; i++)
		if (klen == strlen(new_keys[i]) && memcmp(k, new_keys[i], klen) == 0)
			return true;
	return false;
}

/*
 * Aborts unless after, less the new keys, equals before (also less them),
 * and, with with_new, db holds the new keys with their values.
 */
static void
same_contents(lsm_db *db, const contents *before, const contents *after,
			  bool with_new, const char *what)
{
	const uint8_t *p = before->bytes.data,
			   *pe = p + before->bytes.len,
			   *q = after->bytes.data,
			   *qe = q + after->bytes.len;
	int			i;

	for (;;)
	{
		uint32_t	pk = 0,
					qk = 0;

		while (p < pe && is_new_key(p + 4, lsm_get_u32(p)))
			p += 8 + lsm_get_u32(p) + lsm_get_u32(p + 4 + lsm_get_u32(p));
		while (q < qe && is_new_key(q + 4, lsm_get_u32(q)))
			q += 8 + lsm_get_u32(q) + lsm_get_u32(q + 4 + lsm_get_u32(q));
		if (p >= pe || q >= qe)
			break;
		pk = 8 + lsm_get_u32(p) + lsm_get_u32(p + 4 + lsm_get_u32(p));
		qk = 8 + lsm_get_u32(q) + lsm_get_u32(q + 4 + lsm_get_u32(q));
		if (pk != qk || memcmp(p, q, pk) != 0)
			die("%s: an entry read before differs", what);
		p += pk;
		q += qk;
	}
	if (p < pe || q < qe)
		die("%s: %s entries than before", what, p < pe ? "fewer" : "more");
	for (i = 0; with_new && i < 2; i++)
	{
		void	   *v = NULL;
		size_t		vlen;
		int			rc = lsm_get(db, new_keys[i], strlen(new_keys[i]), &v,
								 &vlen);

		if (rc != LSM_OK || vlen != 3 || memcmp(v, "new", 3) != 0)
			die("%s: the commit after recovery is lost (%s)", what,
				lsm_strerror(rc));
		lsm_free(v);
	}
}

/* An open may fail only as damage, or for want of memory. */
static void
expected_failure(int rc, const char *what)
{
	if (rc != LSM_CORRUPTION && rc != LSM_NOMEM)
		die("%s: lsm_open returned %s: %s", what, lsm_strerror(rc),
			lsm_errmsg(NULL));
}

/* The least payload of a record of type t (wal.h); 0 for an unknown type. */
static uint32_t
least_payload(uint8_t t)
{
	switch (t)
	{
		case LSM_WAL_BATCH:
			return LSM_BATCH_HEADER;
		case LSM_WAL_BATCH_OF:
		case LSM_WAL_ROLLBACK:
			return LSM_BATCH_HEADER + LSM_WAL_OWNER;
		case LSM_WAL_PREPARE:
			return 2 * LSM_BATCH_HEADER + LSM_WAL_OWNER;
		case LSM_WAL_PREPARE_TABLES:
			return LSM_BATCH_HEADER + LSM_WAL_OWNER + LSM_WAL_TABLES_HEAD;
	}
	return 0;
}

/*
 * The log's valid prefix, as the engine's replay sees it: whether bytes
 * that are not zero follow it (a tail that the first writer must cut and
 * report; zeros after the records are the log's preallocated room).
 */
static bool
has_tail(const uint8_t *log, size_t len)
{
	size_t		pos = 0,
				nz = len;
	uint64_t	expect = first_seq;

	while (nz > 0 && log[nz - 1] == 0)
		nz--;
	while (len - pos >= LSM_WAL_HEADER + LSM_BATCH_HEADER)
	{
		uint32_t	plen = lsm_get_u32(log + pos + 4);
		uint32_t	least = least_payload(log[pos + 8]);

		if (least == 0 || plen < least ||
			plen > len - pos - LSM_WAL_HEADER ||
			lsm_checksum(log + pos + 4, (size_t) plen + 5) !=
			lsm_get_u32(log + pos) ||
			lsm_get_u64(log + pos + LSM_WAL_HEADER) != expect)
			break;
		expect += lsm_get_u32(log + pos + LSM_WAL_HEADER + 8);
		pos += LSM_WAL_HEADER + plen;
	}
	return pos < nz;
}

/* Runs the whole workload (see the file header) on one log. */
static void
run(const uint8_t *log, size_t len)
{
	lsm_options o;
	lsm_db	   *db;
	lsm_batch  *b;
	lsm_stats	st;
	lsm_stage  *stage;
	contents	before,
				after;
	uint8_t    *now;
	size_t		nowlen;
	char		path[8192];
	int			rc,
				rc_ro,
				i;

	fresh_copy(log, len);
	snprintf(path, sizeof(path), "%s/%s", scratch, log_name);

	/* 1. read-only */
	options(&o);
	o.read_only = 1;
	rc_ro = lsm_open(scratch, &o, &db);
	if (rc_ro == LSM_OK)
	{
		scan(db, &before, "read-only");
		(void) lsm_verify(db);
		must(db, lsm_close(db), "lsm_close");
	}
	else
		expected_failure(rc_ro, "read-only");

	/* 2. shared: a failed open writes nothing */
	options(&o);
	rc = lsm_open(scratch, &o, &db);
	if (rc != LSM_OK)
	{
		expected_failure(rc, "shared");
		if (rc_ro == LSM_OK && rc != LSM_NOMEM)
			die("the read-only open succeeded, the shared one failed: %s",
				lsm_errmsg(NULL));
		now = slurp(path, &nowlen);
		if (nowlen != len || memcmp(now, log, len) != 0)
			die("a failed open changed the log");
		free(now);
		return;
	}
	if (rc_ro != LSM_OK)
		die("the read-only open failed (%s), the shared one succeeded",
			lsm_strerror(rc_ro));
	scan(db, &after, "shared");
	same_contents(db, &before, &after, false, "shared open");
	lsm_buf_free(&after.bytes);
	b = lsm_batch_new();
	if (b == NULL)
		die("out of memory");
	for (i = 0; i < 2; i++)
		must(db, lsm_batch_put(b, new_keys[i], strlen(new_keys[i]), "new", 3),
			 "lsm_batch_put");
	must(db, lsm_write(db, b), "commit after recovery");
	lsm_batch_free(b);
	must(db, lsm_close(db), "lsm_close");

	/* 3. exclusive: everything is there, once, and the store is sound */
	options(&o);
	o.exclusive = 1;
	if ((rc = lsm_open(scratch, &o, &db)) != LSM_OK)
		die("reopen after a commit: %s: %s", lsm_strerror(rc),
			lsm_errmsg(NULL));
	scan(db, &after, "exclusive");
	same_contents(db, &before, &after, true, "reopened");
	lsm_buf_free(&after.bytes);
	must(db, lsm_verify(db), "lsm_verify after a writer");
	must(db, lsm_get_stats(db, &st), "lsm_get_stats");
	if (st.wal_tails.count != (has_tail(log, len) ? 1 : 0))
		die("%llu discarded tails recorded, the log %s one",
			(unsigned long long) st.wal_tails.count,
			has_tail(log, len) ? "had" : "had no");
	must(db, lsm_close(db), "lsm_close");

	/* 4. a stage that spills: its commit is an ingest */
	options(&o);
	must(NULL, lsm_open(scratch, &o, &db), "lsm_open for a stage");
	must(db, lsm_stage_open(db, 4096, &stage), "lsm_stage_open");
	for (i = 0; i < 60; i++)
	{
		char		key[16],
					val[100];

		memset(val, 's', sizeof(val));
		snprintf(key, sizeof(key), "\xff\xfds%03d", i);
		must(db, lsm_stage_put(stage, key, strlen(key), val, sizeof(val)),
			 "lsm_stage_put");
	}
	must(db, lsm_stage_commit(stage, LSM_WRITE_DEFAULT), "lsm_stage_commit");
	must(db, lsm_close(db), "lsm_close");
	options(&o);
	o.read_only = 1;
	must(NULL, lsm_open(scratch, &o, &db), "read-only reopen after the ingest");
	for (i = 0; i < 60; i += 7)
	{
		char		key[16];
		void	   *v = NULL;
		size_t		vlen;

		snprintf(key, sizeof(key), "\xff\xfds%03d", i);
		must(db, lsm_get(db, key, strlen(key), &v, &vlen), "staged key");
		lsm_free(v);
	}
	must(db, lsm_verify(db), "lsm_verify after the ingest");
	must(db, lsm_close(db), "lsm_close");
	lsm_buf_free(&before.bytes);
}

/*
 * Recomputes the checksum of every record that the length fields of buf
 * frame from its start, so that a mutation behind a checksum is tested.
 */
static void
fix_checksums(uint8_t *buf, size_t len)
{
	size_t		pos = 0;

	while (len - pos >= LSM_WAL_HEADER)
	{
		uint32_t	plen = lsm_get_u32(buf + pos + 4);

		if (plen > len - pos - LSM_WAL_HEADER)
			break;
		lsm_put_u32(buf + pos, lsm_checksum(buf + pos + 4, (size_t) plen + 5));
		pos += LSM_WAL_HEADER + plen;
	}
}

/* ---------- seeds ---------- */

/* Appends one record of a batch payload (first, count, entries) to buf. */
static void
add_record(lsm_buf *buf, uint64_t first, uint32_t count, const void *entries,
		   size_t elen, bool good_checksum)
{
	uint8_t		hdr[LSM_WAL_HEADER + LSM_BATCH_HEADER];
	size_t		start = buf->len;

	lsm_put_u32(hdr + 4, (uint32_t) (LSM_BATCH_HEADER + elen));
	hdr[8] = LSM_WAL_BATCH;
	lsm_put_u64(hdr + LSM_WAL_HEADER, first);
	lsm_put_u32(hdr + LSM_WAL_HEADER + 8, count);
	if (lsm_buf_append(buf, hdr, sizeof(hdr)) != LSM_OK ||
		lsm_buf_append(buf, entries, elen) != LSM_OK)
		die("out of memory");
	lsm_put_u32(buf->data + start,
				lsm_checksum(buf->data + start + 4, LSM_BATCH_HEADER + elen + 5) ^
				(good_checksum ? 0 : 1));
}

/* Appends one record of type with payload p (n bytes) to buf. */
static void
add_typed(lsm_buf *buf, int type, const uint8_t *p, size_t n)
{
	uint8_t		hdr[LSM_WAL_HEADER];
	size_t		start = buf->len;

	lsm_put_u32(hdr + 4, (uint32_t) n);
	hdr[8] = (uint8_t) type;
	if (lsm_buf_append(buf, hdr, sizeof(hdr)) != LSM_OK ||
		lsm_buf_append(buf, p, n) != LSM_OK)
		die("out of memory");
	lsm_put_u32(buf->data + start, lsm_checksum(buf->data + start + 4, n + 5));
}

/*
 * Appends the records of prepared writes (wal.h) from sequence seq on:
 * owner 7 prepared and committed, 8 prepared and rolled back, 9 prepared
 * and left undecided; owner 10's tables (one, number 900, which does not
 * exist) prepared and left undecided.
 */
static void
add_prepared_records(lsm_buf *buf, uint64_t seq)
{
	static const uint8_t entries[] = "\x01\x02p7\x01v";	/* put p7 = v */
	uint8_t		p[128];
	uint64_t	owner;

	/* type 5: one sequence, the owner, one table of run 0 of 1, [a, z] */
	memset(p, 0, sizeof(p));
	lsm_put_u64(p, seq++);
	lsm_put_u32(p + 8, 1);
	lsm_put_u64(p + 12, 10);
	lsm_put_u32(p + 20, 0);
	lsm_put_u32(p + 24, 1);
	lsm_put_u32(p + 28, 1);
	lsm_put_u64(p + 32, 900);
	lsm_put_u32(p + 32 + 52, 1);
	p[32 + 56] = 'a';
	lsm_put_u32(p + 32 + 57, 1);
	p[32 + 61] = 'z';
	add_typed(buf, LSM_WAL_PREPARE_TABLES, p, 32 + 62);

	for (owner = 7; owner <= 9; owner++)
	{
		/* type 3: one sequence, the owner, the batch (sequence 1) */
		lsm_put_u64(p, seq++);
		lsm_put_u32(p + 8, 1);
		lsm_put_u64(p + 12, owner);
		lsm_put_u64(p + 20, 1);
		lsm_put_u32(p + 28, 1);
		memcpy(p + 32, entries, sizeof(entries) - 1);
		add_typed(buf, LSM_WAL_PREPARE, p, 32 + sizeof(entries) - 1);
		if (owner == 7)
		{
			/* type 2: the batch at the next sequence, then the owner */
			lsm_put_u64(p, seq++);
			lsm_put_u32(p + 8, 1);
			memcpy(p + 12, entries, sizeof(entries) - 1);
			lsm_put_u64(p + 12 + sizeof(entries) - 1, owner);
			add_typed(buf, LSM_WAL_BATCH_OF, p, 20 + sizeof(entries) - 1);
		}
		else if (owner == 8)
		{
			/* type 4: one sequence, the owner */
			lsm_put_u64(p, seq++);
			lsm_put_u32(p + 8, 1);
			lsm_put_u64(p + 12, owner);
			add_typed(buf, LSM_WAL_ROLLBACK, p, 20);
		}
	}
}

/* Writes a seed: name in dir. */
static void
seed(const char *dir, const char *name, const uint8_t *data, size_t len)
{
	spew(dir, name, data, len);
}

/*
 * The seed corpus: the template's log, torn and damaged copies of it, one
 * with records of prepared batches, and the regression inputs of issue 11.
 */
static void
write_seeds(const char *dir)
{
	char		path[8192];
	uint8_t    *log;
	size_t		len,
				last,
				pos;
	uint64_t	next_seq;
	lsm_buf		b;
	size_t		i;

	snprintf(path, sizeof(path), "%s/%s", template_dir, log_name);
	log = slurp(path, &len);
	seed(dir, "template", log, len);

	/* where the last record starts, and the sequence after the log */
	next_seq = first_seq;
	for (pos = last = 0; len - pos >= LSM_WAL_HEADER + LSM_BATCH_HEADER;)
	{
		last = pos;
		next_seq += lsm_get_u32(log + pos + LSM_WAL_HEADER + 8);
		pos += LSM_WAL_HEADER + lsm_get_u32(log + pos + 4);
	}
	seed(dir, "torn-in-header", log, last + 5);
	seed(dir, "torn-in-payload", log, last + (len - last) / 2);
	log[last + (len - last) / 2] ^= 0x10;
	seed(dir, "last-record-flipped", log, len);
	log[last + (len - last) / 2] ^= 0x10;
	log[last - 3] ^= 0x10;
	seed(dir, "middle-record-flipped", log, len);
	log[last - 3] ^= 0x10;

	/*
	 * regress-ones: 96 KiB of 01 00 bytes after a damaged last record.
	 * Every other position reads as a batch record of 65537 bytes, which
	 * fits for the first 16,000 or so; the search behind the bad record
	 * checksummed each (17 MB of 0x01 bytes took hours).  Now each is
	 * refused in constant time.
	 */
	memset(&b, 0, sizeof(b));
	if (lsm_buf_append(&b, log, len) != LSM_OK)
		die("out of memory");
	b.data[last + 20] ^= 0x10;
	for (i = 0; i < 96 * 1024 / 4; i++)
		if (lsm_buf_append(&b, "\x01\x00\x01\x00", 4) != LSM_OK)
			die("out of memory");
	seed(dir, "regress-ones-after-bad-record", b.data, b.len);
	lsm_buf_free(&b);

	/* good checksums around payloads out of bounds */
	{
		static const struct
		{
			const char *name;
			int			first;	/* relative to first_seq */
			uint32_t	count;
			const char *entries;
			size_t		elen;
		}			bad[] = {
			{"regress-batch-kind-7", 0, 2, "\x01\x01k\x01v\x07\x01j", 8},
			{"regress-batch-empty-key", 0, 1, "\x01\x00\x01v", 4},
			{"regress-batch-no-entry", 0, 0, "", 0},
			{"regress-batch-key-65536", 0, 1, "\x00\x80\x80\x04k", 5},
			{"regress-batch-count-past-bytes", 0, 1000, "\x00\x01k", 3},
			{"regress-batch-stale-sequence", -1, 1, "\x00\x01k", 3},
		};

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		{
			memset(&b, 0, sizeof(b));
			if (lsm_buf_append(&b, log, len) != LSM_OK)
				die("out of memory");
			add_record(&b, next_seq + bad[i].first,
					   bad[i].count, bad[i].entries, bad[i].elen, true);
			seed(dir, bad[i].name, b.data, b.len);
			lsm_buf_free(&b);
		}
	}

	/* records of prepared batches after the template's */
	memset(&b, 0, sizeof(b));
	if (lsm_buf_append(&b, log, len) != LSM_OK)
		die("out of memory");
	add_prepared_records(&b, next_seq);
	seed(dir, "prepared-batches", b.data, b.len);
	lsm_buf_free(&b);

	/* a sequence past LSM_MAX_SEQUENCE, as the first record */
	memset(&b, 0, sizeof(b));
	add_record(&b, UINT64_C(1) << 56, 1, "\x00\x01k", 3, true);
	seed(dir, "regress-sequence-past-max", b.data, b.len);
	lsm_buf_free(&b);

	/* a bad record followed by a good one that continues: corruption */
	memset(&b, 0, sizeof(b));
	add_record(&b, first_seq, 1, "\x00\x01k", 3, false);
	add_record(&b, first_seq + 1, 1, "\x00\x01j", 3, true);
	seed(dir, "regress-bad-then-good", b.data, b.len);
	lsm_buf_free(&b);
	free(log);
}

/* ---------- libFuzzer ---------- */

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	const char *seeds = getenv("LSM_FUZZ_SEEDS");

	(void) argc;
	(void) argv;
	snprintf(root, sizeof(root), "%s/lsm-fuzz-wal.XXXXXX",
			 tmp && tmp[0] ? tmp : "/tmp");
	if (mkdtemp(root) == NULL)
		die("mkdtemp %s: %s", root, strerror(errno));
	atexit(cleanup);
	snprintf(template_dir, sizeof(template_dir), "%s/template", root);
	snprintf(scratch, sizeof(scratch), "%s/run", root);
	build_template();
	if (seeds != NULL)
	{
		(void) mkdir(seeds, 0755);
		write_seeds(seeds);
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *buf = malloc(size ? size : 1);

	if (buf == NULL)
		die("out of memory");
	run(data, size);
	memcpy(buf, data, size);
	fix_checksums(buf, size);
	if (size > 0 && memcmp(buf, data, size) != 0)
		run(buf, size);
	free(buf);
	return 0;
}

/*
 * test_wal.c
 *		Unit tests of the write-ahead log (wal.h) and of the batch codec it
 *		carries (lsm_batch_*, lsm_batch_iterate in db.h).
 *
 * Batches are built with the public lsm_batch_* calls and appended the way
 * lsm_write appends them: first sequence and count filled in after the
 * 9-byte record header, then lsm_wal_append.  Replay decodes every payload
 * with lsm_batch_iterate into a list that is compared with what was
 * written.  Covered: the round trip (puts, deletes, empty values, binary and
 * maximum-length keys, large values), replay from a record boundary, a torn
 * tail cut at every byte of the last record (no error, end_off at the last
 * good boundary), zeroed preallocated tails, a damaged middle record
 * followed by good ones (LSM_CORRUPTION), sequence discontinuities, and
 * malformed batch payloads.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"

#include "db.h"
#include "env.h"

/* ---------------------------------------------------------------------- */
/* Decoded entries. */

typedef struct op
{
	uint64_t	seq;
	int			kind;
	uint8_t    *key;
	size_t		klen;
	uint8_t    *val;
	size_t		vlen;
} op;

typedef struct oplist
{
	op		   *ops;
	size_t		n;
	size_t		cap;
	int			payloads;		/* apply calls */
	int			fail_at;		/* apply returns LSM_IOERR on this call (1-based) */
} oplist;

/* Appends one entry (copied) to l. */
static int
oplist_add(oplist *l, uint64_t seq, int kind, const uint8_t *key, size_t klen,
		   const uint8_t *val, size_t vlen)
{
	op		   *o;

	if (l->n == l->cap)
	{
		size_t		cap = l->cap ? l->cap * 2 : 64;
		op		   *p = realloc(l->ops, cap * sizeof(op));

		if (p == NULL)
			return LSM_NOMEM;
		l->ops = p;
		l->cap = cap;
	}
	o = &l->ops[l->n++];
	o->seq = seq;
	o->kind = kind;
	o->key = lsm_memdup(key, klen);
	o->klen = klen;
	o->val = lsm_memdup(val, vlen);
	o->vlen = vlen;
	return o->key && o->val ? LSM_OK : LSM_NOMEM;
}

/* Releases the list and the entries it copied. */
static void
oplist_free(oplist *l)
{
	size_t		i;

	for (i = 0; i < l->n; i++)
	{
		free(l->ops[i].key);
		free(l->ops[i].val);
	}
	free(l->ops);
	memset(l, 0, sizeof(*l));
}

/* lsm_batch_fn: records an entry. */
static int
record_entry(void *arg, uint64_t seq, int kind, const uint8_t *key,
			 size_t klen, const uint8_t *val, size_t vlen)
{
	return oplist_add((oplist *) arg, seq, kind, key, klen, val, vlen);
}

/* lsm_wal_apply_fn: decodes a batch payload into the list. */
static int
apply_payload(void *arg, int type, const uint8_t *payload, size_t n,
			  lsm_err *e)
{
	oplist	   *l = arg;

	CHECK(type == LSM_WAL_BATCH);
	l->payloads++;
	if (l->fail_at == l->payloads)
		return lsm_err_set(e, LSM_IOERR, "apply failed on purpose");
	return lsm_batch_iterate(payload, n, record_entry, arg, e);
}

/* Checks that got[0..n) equals want[0..n). */
static void
check_ops(const oplist *got, const oplist *want, size_t n)
{
	size_t		i;

	CHECK_EQ_U(got->n, n);
	for (i = 0; i < n; i++)
	{
		const op   *g = &got->ops[i];
		const op   *w = &want->ops[i];

		CHECK_EQ_U(g->seq, w->seq);
		CHECK_EQ(g->kind, w->kind);
		CHECK_MEMEQ(g->key, g->klen, w->key, w->klen);
		if (w->kind == LSM_KIND_PUT)
			CHECK_MEMEQ(g->val, g->vlen, w->val, w->vlen);
		else
			CHECK_EQ_U(g->vlen, 0);
	}
}

/* ---------------------------------------------------------------------- */
/* A log under construction. */

typedef struct wlog
{
	char	   *path;
	int			fd;				/* O_APPEND, as the engine's */
	int			rwfd;			/* for pwrite (O_APPEND would append) */
	uint64_t	next_seq;		/* first sequence of the next record */
	oplist		want;			/* every entry appended, in order */
	uint64_t	bounds[64];		/* bounds[i]: offset where record i starts */
	uint64_t	first[64];		/* first sequence of record i */
	size_t		opsbefore[64];	/* entries before record i */
	int			nrec;
} wlog;

/* Creates an empty log file in dir. */
static void
wlog_open(wlog *w, const char *dir)
{
	char		name[32];
	lsm_err		e;

	memset(w, 0, sizeof(*w));
	lsm_dir_name(LSM_F_LOG, 1, name, sizeof(name));
	CHECK_STREQ(name, "000001.log");
	w->path = harness_path(dir, name);
	lsm_err_clear(&e);
	CHECK_OK(lsm_env_open(w->path, O_RDWR | O_CREAT | O_EXCL | O_APPEND, 0644,
						  &w->fd, &e));
	CHECK_OK(lsm_env_open(w->path, O_RDWR, 0, &w->rwfd, &e));
	w->next_seq = 1;
}

/* Closes the log's descriptors and forgets its expectations. */
static void
wlog_close(wlog *w)
{
	lsm_env_close(w->fd);
	lsm_env_close(w->rwfd);
	free(w->path);
	oplist_free(&w->want);
}

/*
 * Appends batch b as one record with first sequence seq (as lsm_write does)
 * and remembers its entries as expected.
 */
static void
wlog_append_at(wlog *w, lsm_batch *b, uint64_t seq)
{
	lsm_err		e;
	struct stat st;

	CHECK(w->nrec < 64);
	CHECK_EQ(fstat(w->fd, &st), 0);
	w->bounds[w->nrec] = (uint64_t) st.st_size;
	w->first[w->nrec] = seq;
	w->opsbefore[w->nrec] = w->want.n;
	lsm_put_u64(b->rep.data + LSM_WAL_HEADER, seq);
	lsm_put_u32(b->rep.data + LSM_WAL_HEADER + 8, b->count);
	CHECK_OK(lsm_batch_iterate(b->rep.data + LSM_WAL_HEADER,
							   b->rep.len - LSM_WAL_HEADER, record_entry,
							   &w->want, NULL));
	lsm_err_clear(&e);
	CHECK_OK(lsm_wal_append(w->fd, NULL, "000001.log", (uint64_t) st.st_size,
							LSM_WAL_BATCH, b->rep.data, b->rep.len, &e));
	w->nrec++;
	w->bounds[w->nrec] = (uint64_t) st.st_size + b->rep.len;
	w->opsbefore[w->nrec] = w->want.n;
	w->next_seq = seq + b->count;
}

/* Appends batch b as the next record (consecutive sequences). */
static void
wlog_append(wlog *w, lsm_batch *b)
{
	wlog_append_at(w, b, w->next_seq);
}

/* Cuts the log back to its first nrec records (file and expectations). */
static void
wlog_truncate(wlog *w, int nrec)
{
	size_t		i;

	CHECK(nrec <= w->nrec);
	CHECK_EQ(ftruncate(w->fd, (off_t) w->bounds[nrec]), 0);
	for (i = w->opsbefore[nrec]; i < w->want.n; i++)
	{
		free(w->want.ops[i].key);
		free(w->want.ops[i].val);
	}
	w->want.n = w->opsbefore[nrec];
	w->next_seq = nrec < w->nrec ? w->first[nrec] : w->next_seq;
	w->nrec = nrec;
}

/*
 * Appends a batch of nops entries derived from tag: puts with keys
 * "k<tag>/<i>", every third a delete, every fifth an empty value.
 */
static void
wlog_append_simple(wlog *w, int tag, int nops, size_t vbytes)
{
	lsm_batch  *b = lsm_batch_new();
	char	   *val = malloc(vbytes + 1);
	int			i;

	CHECK(b != NULL && val != NULL);
	memset(val, 'a' + tag % 26, vbytes);
	for (i = 0; i < nops; i++)
	{
		char		key[32];
		int			klen = snprintf(key, sizeof(key), "k%d/%d", tag, i);

		if (i % 3 == 2)
			CHECK_OK(lsm_batch_delete(b, key, (size_t) klen));
		else
			CHECK_OK(lsm_batch_put(b, key, (size_t) klen, val,
								   i % 5 == 4 ? 0 : vbytes));
	}
	wlog_append(w, b);
	lsm_batch_free(b);
	free(val);
}

/* Replays w's file from off expecting seq; results in *res, entries in *got. */
static int
replay(const wlog *w, uint64_t off, uint64_t expect, oplist *got,
	   lsm_wal_replay_result *res, lsm_err *e)
{
	lsm_err_clear(e);
	memset(got, 0, sizeof(*got));
	return lsm_wal_replay(w->fd, "000001.log", off, expect, apply_payload, got,
						  res, e);
}

/* ---------------------------------------------------------------------- */
/* Tests. */

/* Batch bookkeeping and argument checks. */
TEST(batch_api)
{
	lsm_batch  *b = lsm_batch_new();
	size_t		empty_bytes;
	uint8_t    *big = calloc(1, LSM_MAX_KEY_LEN + 1);

	CHECK(b != NULL && big != NULL);
	CHECK_EQ_U(lsm_batch_count(b), 0);
	empty_bytes = lsm_batch_bytes(b);
	CHECK_EQ_U(empty_bytes, LSM_WAL_HEADER + LSM_BATCH_HEADER);
	CHECK_OK(lsm_batch_put(b, "a", 1, "1", 1));
	CHECK_OK(lsm_batch_delete(b, "b", 1));
	CHECK_OK(lsm_batch_put(b, "c", 1, NULL, 0));
	CHECK_EQ_U(lsm_batch_count(b), 3);
	CHECK_GT(lsm_batch_bytes(b), empty_bytes);

	/* invalid: empty key, key too long, NULL with a length */
	CHECK_RC(LSM_INVALID, lsm_batch_put(b, "", 0, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_batch_delete(b, "", 0));
	CHECK_RC(LSM_INVALID, lsm_batch_put(b, big, LSM_MAX_KEY_LEN + 1, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_batch_delete(b, big, LSM_MAX_KEY_LEN + 1));
	CHECK_RC(LSM_INVALID, lsm_batch_put(b, NULL, 3, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_batch_put(b, "k", 1, NULL, 3));
	/* failed adds change nothing */
	CHECK_EQ_U(lsm_batch_count(b), 3);
	CHECK_OK(lsm_batch_put(b, big, LSM_MAX_KEY_LEN, "v", 1));
	CHECK_EQ_U(lsm_batch_count(b), 4);

	lsm_batch_clear(b);
	CHECK_EQ_U(lsm_batch_count(b), 0);
	CHECK_EQ_U(lsm_batch_bytes(b), empty_bytes);
	lsm_batch_free(b);
	lsm_batch_free(NULL);
	free(big);
}

/* Child body for batch_null: a NULL batch must give LSM_INVALID. */
static void
batch_null_child(void)
{
	CHECK_RC(LSM_INVALID, lsm_batch_put(NULL, "k", 1, "v", 1));
	CHECK_RC(LSM_INVALID, lsm_batch_delete(NULL, "k", 1));
}

/*
 * A NULL batch is refused with LSM_INVALID (batch_add tests for it).  Run in
 * a child process, so a crash fails this test only.
 */
TEST(batch_null)
{
	pid_t		pid;
	int			status;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		batch_null_child();
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "lsm_batch_put(NULL, ...) crashed the child (status 0x%x)",
			  status);
}

/*
 * Round trip: records of every shape replay to exactly what was written,
 * with consecutive sequences, end_off at the end and last_seq the last one.
 */
TEST(roundtrip)
{
	char	   *dir = harness_tmpdir("wal");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	lsm_batch  *b;
	uint8_t    *bigkey = malloc(LSM_MAX_KEY_LEN);
	uint8_t    *bigval = malloc(300000);
	int			i;

	CHECK(bigkey != NULL && bigval != NULL);
	for (i = 0; i < LSM_MAX_KEY_LEN; i++)
		bigkey[i] = (uint8_t) (i * 7);
	for (i = 0; i < 300000; i++)
		bigval[i] = (uint8_t) (i * 13 + 1);
	wlog_open(&w, dir);

	/* one put */
	b = lsm_batch_new();
	CHECK(b != NULL);
	CHECK_OK(lsm_batch_put(b, "hello", 5, "world", 5));
	wlog_append(&w, b);
	/* binary keys with NUL and 0xFF bytes, empty value, deletes of the same */
	lsm_batch_clear(b);
	CHECK_OK(lsm_batch_put(b, "\0\xff\0", 3, "", 0));
	CHECK_OK(lsm_batch_delete(b, "\0\xff\0", 3));
	CHECK_OK(lsm_batch_put(b, "\0\xff\0", 3, "again", 5));
	CHECK_OK(lsm_batch_put(b, "\xff", 1, "\0\0\0", 3));
	wlog_append(&w, b);
	/* maximum key, large value */
	lsm_batch_clear(b);
	CHECK_OK(lsm_batch_put(b, bigkey, LSM_MAX_KEY_LEN, bigval, 300000));
	CHECK_OK(lsm_batch_delete(b, bigkey, LSM_MAX_KEY_LEN));
	wlog_append(&w, b);
	lsm_batch_free(b);
	/* many small batches and a few large ones */
	for (i = 0; i < 20; i++)
		wlog_append_simple(&w, i, 1 + i * 7 % 50, (size_t) (i % 4) * 100);

	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, w.nrec);
	CHECK_EQ(got.payloads, w.nrec);
	CHECK_EQ_U(res.end_off, w.bounds[w.nrec]);
	CHECK_EQ_U(res.content_end, w.bounds[w.nrec]);
	CHECK_EQ_U(res.last_seq, w.next_seq - 1);
	check_ops(&got, &w.want, w.want.n);
	/* sequences are consecutive from 1 */
	for (i = 0; i < (int) got.n; i++)
		CHECK_EQ_U(got.ops[i].seq, (uint64_t) i + 1);
	oplist_free(&got);

	/* expect_seq 0 accepts any first sequence */
	CHECK_OK(replay(&w, 0, 0, &got, &res, &e));
	CHECK_EQ(res.records, w.nrec);
	CHECK_EQ_U(res.last_seq, w.next_seq - 1);
	oplist_free(&got);

	/* an empty log, and an offset at the end: nothing, no error */
	CHECK_OK(replay(&w, w.bounds[w.nrec], w.next_seq, &got, &res, &e));
	CHECK_EQ(res.records, 0);
	CHECK_EQ_U(res.end_off, w.bounds[w.nrec]);
	CHECK_EQ_U(res.last_seq, w.next_seq - 1);
	oplist_free(&got);
	CHECK_EQ(ftruncate(w.fd, 0), 0);
	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 0);
	CHECK_EQ_U(res.end_off, 0);
	CHECK_EQ_U(res.content_end, 0);
	CHECK_EQ_U(res.last_seq, 0);
	oplist_free(&got);
	wlog_close(&w);
	free(bigkey);
	free(bigval);
}

/* Replay from every record boundary yields exactly the records after it. */
TEST(replay_from_offset)
{
	char	   *dir = harness_tmpdir("walo");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	int			i;

	wlog_open(&w, dir);
	for (i = 0; i < 30; i++)
		wlog_append_simple(&w, i, 1 + i % 9, 10 + (size_t) i);
	for (i = 0; i <= w.nrec; i++)
	{
		oplist		tail;
		size_t		k;

		CHECK_OK(replay(&w, w.bounds[i], i < w.nrec ? w.first[i] : w.next_seq,
						&got, &res, &e));
		CHECK_EQ(res.records, w.nrec - i);
		CHECK_EQ_U(res.end_off, w.bounds[w.nrec]);
		CHECK_EQ_U(res.last_seq, w.next_seq - 1);
		/* compare with the expected suffix */
		tail.ops = w.want.ops + w.opsbefore[i];
		tail.n = w.want.n - w.opsbefore[i];
		check_ops(&got, &tail, tail.n);
		for (k = 0; k < got.n; k++)
			CHECK_EQ_U(got.ops[k].seq, w.want.ops[w.opsbefore[i] + k].seq);
		oplist_free(&got);

		/* the same with expect_seq 0 */
		CHECK_OK(replay(&w, w.bounds[i], 0, &got, &res, &e));
		CHECK_EQ(res.records, w.nrec - i);
		oplist_free(&got);
	}
	wlog_close(&w);
}

/*
 * A torn append: the file cut at every byte inside the last record replays
 * the earlier records, ends at the last good boundary, and is no error.
 */
/*
 * Where the contents of the log in w, cut to len bytes, end: after its last
 * byte that is not zero, but not before floor.
 */
static uint64_t
content_end(wlog *w, uint64_t len, uint64_t floor)
{
	uint8_t		byte;

	for (; len > floor; len--)
	{
		CHECK_EQ(pread(w->fd, &byte, 1, (off_t) len - 1), 1);
		if (byte != 0)
			break;
	}
	return len;
}

TEST(torn_tail)
{
	char	   *dir = harness_tmpdir("walt");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	uint64_t	len;
	uint64_t	start;
	uint64_t	last_seq_before;
	int			i;

	wlog_open(&w, dir);
	for (i = 0; i < 5; i++)
		wlog_append_simple(&w, i, 4, 50);
	/* the last record: a few KiB, so every cut is a distinct case */
	wlog_append_simple(&w, 99, 40, 100);
	start = w.bounds[w.nrec - 1];
	last_seq_before = w.first[w.nrec - 1] - 1;
	CHECK_GT(w.bounds[w.nrec] - start, 2000);

	/* shrink the file one byte at a time down into the previous record */
	for (len = w.bounds[w.nrec] - 1; len >= start; len--)
	{
		CHECK_EQ(ftruncate(w.fd, (off_t) len), 0);
		CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
		CHECK_EQ(res.records, w.nrec - 1);
		CHECK_EQ_U(res.end_off, start);
		CHECK_EQ_U(res.content_end, content_end(&w, len, start));
		CHECK_EQ_U(res.last_seq, last_seq_before);
		check_ops(&got, &w.want, w.opsbefore[w.nrec - 1]);
		oplist_free(&got);
		/* replay from the last good boundary: nothing, no error */
		CHECK_OK(replay(&w, start, last_seq_before + 1, &got, &res, &e));
		CHECK_EQ(res.records, 0);
		CHECK_EQ_U(res.end_off, start);
		oplist_free(&got);
	}
	wlog_close(&w);
}

/*
 * Zeros after the records are room for more (preallocated), garbage is a
 * torn tail; neither is damage.
 */
TEST(garbage_tail)
{
	char	   *dir = harness_tmpdir("walg");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	uint8_t		junk[4096];
	int			i;

	wlog_open(&w, dir);
	for (i = 0; i < 4; i++)
		wlog_append_simple(&w, i, 3, 20);
	memset(junk, 0, sizeof(junk));
	CHECK_EQ(write(w.fd, junk, sizeof(junk)), (ssize_t) sizeof(junk));
	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 4);
	CHECK_EQ_U(res.end_off, w.bounds[4]);
	CHECK_EQ_U(res.content_end, w.bounds[4]);
	oplist_free(&got);

	CHECK_EQ(ftruncate(w.fd, (off_t) w.bounds[4]), 0);
	for (i = 0; i < (int) sizeof(junk); i++)
		junk[i] = (uint8_t) (i * 151 + 7);
	CHECK_EQ(write(w.fd, junk, sizeof(junk)), (ssize_t) sizeof(junk));
	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 4);
	CHECK_EQ_U(res.end_off, w.bounds[4]);
	oplist_free(&got);
	wlog_close(&w);
}

/*
 * A damaged byte anywhere in a middle record, with good records after it,
 * is corruption: replay applies the records before it and fails.
 */
TEST(corrupt_middle_record)
{
	char	   *dir = harness_tmpdir("walc");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	uint64_t	off;
	int			i;

	wlog_open(&w, dir);
	for (i = 0; i < 5; i++)
		wlog_append_simple(&w, i, 5, 30);
	/* record 2 is the victim; records 3 and 4 follow it */
	for (off = w.bounds[2]; off < w.bounds[3]; off++)
	{
		static const uint8_t flips[] = {0x01, 0x80, 0xff};
		int			f;

		for (f = 0; f < 3; f++)
		{
			uint8_t		byte;
			uint8_t		bad;
			int			rc;

			CHECK_EQ(pread(w.fd, &byte, 1, (off_t) off), 1);
			bad = byte ^ flips[f];
			CHECK_EQ(pwrite(w.rwfd, &bad, 1, (off_t) off), 1);
			rc = replay(&w, 0, 1, &got, &res, &e);
			CHECK_MSG(rc == LSM_CORRUPTION,
					  "byte %llu of record 2 ^ 0x%02x: replay returned %d (%s)",
					  (unsigned long long) (off - w.bounds[2]), flips[f], rc,
					  lsm_strerror(rc));
			CHECK_EQ(e.rc, LSM_CORRUPTION);
			CHECK(strstr(e.msg, "000001.log") != NULL);
			/* the good records before it were applied, nothing after */
			CHECK_EQ(res.records, 2);
			CHECK_EQ_U(res.end_off, w.bounds[2]);
			CHECK_EQ_U(res.last_seq, w.first[2] - 1);
			check_ops(&got, &w.want, w.opsbefore[2]);
			oplist_free(&got);
			CHECK_EQ(pwrite(w.rwfd, &byte, 1, (off_t) off), 1);
		}
	}
	/* repaired: everything replays */
	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 5);
	oplist_free(&got);

	/* a damaged first record followed by good ones is corruption too */
	{
		uint8_t		byte;
		uint8_t		bad;

		CHECK_EQ(pread(w.fd, &byte, 1, 20), 1);
		bad = byte ^ 0x10;
		CHECK_EQ(pwrite(w.rwfd, &bad, 1, 20), 1);
		CHECK_RC(LSM_CORRUPTION, replay(&w, 0, 1, &got, &res, &e));
		CHECK_EQ(res.records, 0);
		CHECK_EQ_U(res.end_off, 0);
		oplist_free(&got);
		/* but damage in the last record alone is a torn tail */
		CHECK_EQ(pwrite(w.rwfd, &byte, 1, 20), 1);
		CHECK_EQ(pread(w.fd, &byte, 1, (off_t) w.bounds[4] + 15), 1);
		bad = byte ^ 0x10;
		CHECK_EQ(pwrite(w.rwfd, &bad, 1, (off_t) w.bounds[4] + 15), 1);
		CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
		CHECK_EQ(res.records, 4);
		CHECK_EQ_U(res.end_off, w.bounds[4]);
		oplist_free(&got);
	}
	wlog_close(&w);
}

/*
 * Sequence discontinuities stop replay at the first record that does not
 * continue the previous one (or the expected sequence): a stale record
 * (going backwards) or a last record after a gap is a clean end; a gap with
 * good, later records behind it is corruption (records were lost in the
 * middle).
 */
TEST(sequence_discontinuity)
{
	char	   *dir = harness_tmpdir("wals");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	lsm_batch  *b = lsm_batch_new();

	CHECK(b != NULL);
	wlog_open(&w, dir);
	wlog_append_simple(&w, 0, 3, 10);	/* 1..3 */
	wlog_append_simple(&w, 1, 2, 10);	/* 4..5 */
	/* a stale record: sequence 2 again, and another after it */
	CHECK_OK(lsm_batch_put(b, "stale", 5, "x", 1));
	wlog_append_at(&w, b, 2);
	wlog_append_at(&w, b, 3);

	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 2);
	CHECK_EQ_U(res.end_off, w.bounds[2]);
	CHECK_EQ_U(res.last_seq, 5);
	check_ops(&got, &w.want, w.opsbefore[2]);
	oplist_free(&got);

	/* the expected sequence is checked on the first record too */
	CHECK_OK(replay(&w, 0, 7, &got, &res, &e));
	CHECK_EQ(res.records, 0);
	CHECK_EQ_U(res.end_off, 0);
	CHECK_EQ_U(res.last_seq, 6);
	oplist_free(&got);
	CHECK_OK(replay(&w, w.bounds[1], 4, &got, &res, &e));
	CHECK_EQ(res.records, 1);
	CHECK_EQ_U(res.end_off, w.bounds[2]);
	oplist_free(&got);

	/* a forward gap in the last record: a clean stop before it */
	wlog_truncate(&w, 2);
	wlog_append_at(&w, b, 10);
	CHECK_OK(replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 2);
	CHECK_EQ_U(res.end_off, w.bounds[2]);
	CHECK_EQ_U(res.last_seq, 5);
	oplist_free(&got);

	/* a forward gap with continuing records after it: corruption */
	wlog_append_at(&w, b, 11);
	CHECK_RC(LSM_CORRUPTION, replay(&w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 2);
	CHECK_EQ_U(res.end_off, w.bounds[2]);
	oplist_free(&got);
	lsm_batch_free(b);
	wlog_close(&w);
}

/* An error from the apply callback stops replay and is returned as is. */
TEST(apply_error)
{
	char	   *dir = harness_tmpdir("wala");
	wlog		w;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;
	int			i;

	wlog_open(&w, dir);
	for (i = 0; i < 6; i++)
		wlog_append_simple(&w, i, 2, 5);
	lsm_err_clear(&e);
	memset(&got, 0, sizeof(got));
	got.fail_at = 4;
	CHECK_RC(LSM_IOERR, lsm_wal_replay(w.fd, "000001.log", 0, 1, apply_payload,
									   &got, &res, &e));
	CHECK_EQ(res.records, 3);
	CHECK_EQ_U(res.end_off, w.bounds[3]);
	CHECK_STREQ(e.msg, "apply failed on purpose");
	oplist_free(&got);
	wlog_close(&w);
}

/* lsm_batch_fn that counts entries. */
static int
count_entry(void *arg, uint64_t seq, int kind, const uint8_t *key,
			size_t klen, const uint8_t *val, size_t vlen)
{
	(void) seq;
	(void) kind;
	(void) key;
	(void) klen;
	(void) val;
	(void) vlen;
	(*(int *) arg)++;
	return LSM_OK;
}

/*
 * Malformed payloads: every truncation, a bad kind, a count larger or
 * smaller than the entries, trailing bytes: LSM_CORRUPTION, never a read
 * past the payload (each is copied to an exact-size allocation for ASan).
 */
TEST(batch_malformed)
{
	lsm_batch  *b = lsm_batch_new();
	char		val[200];
	const uint8_t *payload;
	size_t		n;
	size_t		cut;
	uint8_t    *p;
	int			count;
	lsm_err		e;
	int			i;

	CHECK(b != NULL);
	memset(val, 'v', sizeof(val));
	for (i = 0; i < 20; i++)
	{
		char		key[16];
		int			klen = snprintf(key, sizeof(key), "key%d", i);

		if (i % 4 == 3)
			CHECK_OK(lsm_batch_delete(b, key, (size_t) klen));
		else
			CHECK_OK(lsm_batch_put(b, key, (size_t) klen, val, (size_t) (i * 10)));
	}
	lsm_put_u64(b->rep.data + LSM_WAL_HEADER, 100);
	lsm_put_u32(b->rep.data + LSM_WAL_HEADER + 8, b->count);
	payload = b->rep.data + LSM_WAL_HEADER;
	n = b->rep.len - LSM_WAL_HEADER;

	count = 0;
	lsm_err_clear(&e);
	CHECK_OK(lsm_batch_iterate(payload, n, count_entry, &count, &e));
	CHECK_EQ(count, 20);

	for (cut = 0; cut < n; cut++)
	{
		p = malloc(cut ? cut : 1);
		CHECK(p != NULL);
		memcpy(p, payload, cut);
		count = 0;
		lsm_err_clear(&e);
		CHECK_MSG(lsm_batch_iterate(p, cut, count_entry, &count, &e) ==
				  LSM_CORRUPTION, "payload cut at %zu of %zu accepted", cut, n);
		CHECK_EQ(e.rc, LSM_CORRUPTION);
		CHECK_LT(count, 20);
		free(p);
	}

	p = malloc(n + 1);
	CHECK(p != NULL);
	/* a trailing byte */
	memcpy(p, payload, n);
	p[n] = 0;
	CHECK_RC(LSM_CORRUPTION, lsm_batch_iterate(p, n + 1, count_entry, &count, NULL));
	/* count one too many, one too few */
	lsm_put_u32(p + 8, 21);
	CHECK_RC(LSM_CORRUPTION, lsm_batch_iterate(p, n, count_entry, &count, NULL));
	lsm_put_u32(p + 8, 19);
	CHECK_RC(LSM_CORRUPTION, lsm_batch_iterate(p, n, count_entry, &count, NULL));
	lsm_put_u32(p + 8, UINT32_MAX);
	CHECK_RC(LSM_CORRUPTION, lsm_batch_iterate(p, n, count_entry, &count, NULL));
	lsm_put_u32(p + 8, 20);
	/* a kind that is neither put nor delete */
	p[LSM_BATCH_HEADER] = 7;
	CHECK_RC(LSM_CORRUPTION, lsm_batch_iterate(p, n, count_entry, &count, NULL));
	p[LSM_BATCH_HEADER] = LSM_KIND_PUT;
	/* a key length running past the end */
	p[LSM_BATCH_HEADER + 1] = 0x7f;
	CHECK_RC(LSM_CORRUPTION, lsm_batch_iterate(p, n, count_entry, &count, NULL));
	CHECK_RC(LSM_CORRUPTION, lsm_batch_check(p, n, NULL));
	free(p);

	/*
	 * Well framed but out of bounds: sequences 0 or past LSM_MAX_SEQUENCE,
	 * no entry, an empty key, a key longer than LSM_MAX_KEY_LEN, a value
	 * longer than LSM_MAX_VALUE_LEN (lengths checked before any byte is).
	 */
	{
		static const struct
		{
			uint64_t	seq;
			uint32_t	count;
			uint8_t		entry[16];
			size_t		elen;
		}			bad[] = {
			{0, 1, {1, 1, 'k', 1, 'v'}, 5},
			{LSM_MAX_SEQUENCE + 1, 1, {1, 1, 'k', 1, 'v'}, 5},
			{LSM_MAX_SEQUENCE, 2, {0, 1, 'k', 0, 1, 'j'}, 6},
			{5, 0, {0}, 0},
			{5, 1, {0, 0}, 2},
			{5, 1, {1, 0x80, 0x80, 0x04, 'k'}, 5},	/* key of 65536 */
			{5, 1, {1, 1, 'k', 0x81, 0x80, 0x80, 0x80, 0x04, 'v'}, 9},	/* 2^30 + 1 */
		};
		uint8_t		buf[64];
		size_t		k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		{
			size_t		len = LSM_BATCH_HEADER + bad[k].elen;

			lsm_put_u64(buf, bad[k].seq);
			lsm_put_u32(buf + 8, bad[k].count);
			memcpy(buf + LSM_BATCH_HEADER, bad[k].entry, bad[k].elen);
			count = 0;
			CHECK_MSG(lsm_batch_check(buf, len, NULL) == LSM_CORRUPTION,
					  "bad batch %zu accepted by lsm_batch_check", k);
			CHECK_MSG(lsm_batch_iterate(buf, len, count_entry, &count, NULL) ==
					  LSM_CORRUPTION, "bad batch %zu accepted", k);
		}
		/* the same shapes in bounds are accepted */
		lsm_put_u64(buf, LSM_MAX_SEQUENCE - 1);
		lsm_put_u32(buf + 8, 2);
		memcpy(buf + LSM_BATCH_HEADER, "\x00\x01k\x01\x01j\x00", 7);
		CHECK_OK(lsm_batch_check(buf, LSM_BATCH_HEADER + 7, NULL));
	}

	/* random scribbles: any result, but no crash and no overrun */
	{
		uint64_t	rnd = harness_seed();
		int			round;

		for (round = 0; round < 3000; round++)
		{
			size_t		at = harness_rand64(&rnd) % n;

			p = malloc(n);
			CHECK(p != NULL);
			memcpy(p, payload, n);
			p[at] ^= (uint8_t) (1 + harness_rand64(&rnd) % 255);
			(void) lsm_batch_iterate(p, n, count_entry, &count, NULL);
			free(p);
		}
	}
	lsm_batch_free(b);
}

/*
 * Runs body(arg) in a child process with an alarm far above the time it
 * needs, so that a hang fails the test (the child dies of SIGALRM) instead
 * of stopping the suite.  The child's CHECKs fail the test as usual.
 */
static void
in_child_with_alarm(void (*body) (void *arg), void *arg, unsigned seconds,
					const char *what)
{
	pid_t		pid;
	int			status;

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		alarm(seconds);
		body(arg);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK_MSG(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM,
			  "%s: still running after %u s", what, seconds);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "%s: the child failed (status 0x%x)", what, status);
}

/* Appends n copies of the unit bytes to the log's file. */
static void
append_pattern(wlog *w, const uint8_t *unit, size_t ulen, size_t n)
{
	size_t		chunk = 1 << 16;
	uint8_t    *buf = malloc(chunk * ulen);
	size_t		i;

	CHECK(buf != NULL);
	for (i = 0; i < chunk; i++)
		memcpy(buf + i * ulen, unit, ulen);
	while (n > 0)
	{
		size_t		k = n < chunk ? n : chunk;

		CHECK_EQ(write(w->fd, buf, k * ulen), (ssize_t) (k * ulen));
		n -= k;
	}
	free(buf);
}

/* Body of scan_is_linear: replays the log of wlog arg expecting a tail. */
static void
replay_ones(void *arg)
{
	wlog	   *w = arg;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;

	CHECK_OK(replay(w, 0, 1, &got, &res, &e));
	CHECK_EQ(res.records, 3);
	CHECK_EQ_U(res.end_off, w->bounds[3]);
	check_ops(&got, &w->want, w->opsbefore[3]);
	oplist_free(&got);
}

/* Body of scan_is_linear: the crafted log must be refused, quickly. */
static void
replay_crafted(void *arg)
{
	wlog	   *w = arg;
	oplist		got;
	lsm_wal_replay_result res;
	lsm_err		e;

	CHECK_RC(LSM_CORRUPTION, replay(w, 0, 1, &got, &res, &e));
	CHECK_MSG(strstr(e.msg, "too many record-like bytes") != NULL, "%s",
			  e.msg);
	CHECK_EQ(res.records, 3);
	oplist_free(&got);
}

/*
 * Whatever follows a bad record, the search behind it for a good one is
 * linear.  17 MB of 0x01 bytes after a damaged record (every position
 * reads as a batch record whose length fits) used to cost a checksum of
 * 16 MB per position: hours.  Now they are a torn tail at once.  Bytes
 * crafted so that every 24th position is a plausible header (type, length,
 * count, the expected sequence) exhaust the checksum budget: the log is
 * refused rather than searched in quadratic time.
 */
TEST(scan_is_linear)
{
	char	   *dir = harness_tmpdir("wallin");
	wlog		w;
	uint8_t		unit[24];
	uint8_t		byte;
	int			i;

	wlog_open(&w, dir);
	for (i = 0; i < 4; i++)
		wlog_append_simple(&w, i, 3, 20);
	/* damage the last record, then 17 MB of 0x01 */
	CHECK_EQ(pread(w.fd, &byte, 1, (off_t) w.bounds[3] + 30), 1);
	byte ^= 0x20;
	CHECK_EQ(pwrite(w.rwfd, &byte, 1, (off_t) w.bounds[3] + 30), 1);
	byte = 0x01;
	append_pattern(&w, &byte, 1, 17 << 20);
	in_child_with_alarm(replay_ones, &w, 300, "17 MB of 0x01 after a bad record");

	/* plausible headers every 24 bytes, 4 MB of them */
	CHECK_EQ(ftruncate(w.fd, (off_t) w.bounds[4]), 0);
	memset(unit, 0, sizeof(unit));
	lsm_put_u32(unit + 4, 65536);	/* length */
	unit[8] = LSM_WAL_BATCH;
	lsm_put_u64(unit + 9, w.next_seq);	/* the sequence expected next */
	lsm_put_u32(unit + 17, 1);	/* count */
	append_pattern(&w, unit, sizeof(unit), (4 << 20) / sizeof(unit));
	in_child_with_alarm(replay_crafted, &w, 300, "plausible headers");
	wlog_close(&w);
}

/* ---------------------------------------------------------------------- */
/* Recovery of a store whose log ends in a torn or damaged record (db.c). */

#define TAIL_RECORDS 6			/* good records before the last one */

/* Open modes of the recovery tests. */
typedef enum tail_mode
{
	MODE_SHARED,				/* open, commit through the same handle */
	MODE_EXCLUSIVE,				/* the same with exclusive = 1 */
	MODE_READER_FIRST,			/* a read-only handle opens first, then a
								 * writer commits; the reader refreshes */
	MODE_STAGE,					/* the commit is a stage's ingest */
	NMODES
} tail_mode;

static const char *const mode_names[NMODES] = {
	"shared", "exclusive", "read-only, then a writer", "stage ingest"
};

/* What the log callback has been told. */
static struct
{
	int			warnings;
	int			notices;
	char		last[1024];
}			logged;

/* lsm_log_fn: counts the messages and keeps the last. */
static void
log_message(void *arg, int level, const char *msg)
{
	(void) arg;
	if (level == LSM_LOG_WARNING)
		logged.warnings++;
	else
		logged.notices++;
	snprintf(logged.last, sizeof(logged.last), "%s", msg);
}

/* Options of the recovery tests: nothing leaves the log by itself. */
static void
tail_options(lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = 1 << 20;
	o->auto_compact = 0;
	o->lock_timeout_ms = 2000;
	o->log = log_message;
}

/* Puts key k<tag>/<j> for j < n, values of vbytes bytes, in one batch. */
static void
put_batch(lsm_db *db, const char *tag, int n, size_t vbytes)
{
	lsm_batch  *b = lsm_batch_new();
	char		val[256];
	int			j;

	CHECK(b != NULL && vbytes <= sizeof(val));
	memset(val, tag[0], sizeof(val));
	for (j = 0; j < n; j++)
	{
		char		key[32];
		int			klen = snprintf(key, sizeof(key), "%s/%d", tag, j);

		CHECK_OK(lsm_batch_put(b, key, (size_t) klen, val, vbytes));
	}
	CHECK_DB_OK(db, lsm_write(db, b));
	lsm_batch_free(b);
}

/* Whether key <tag>/<j> for j < n is in db: all (1), none (0), or CHECKs. */
static int
batch_present(lsm_db *db, const char *tag, int n)
{
	int			found = 0,
				j;

	for (j = 0; j < n; j++)
	{
		char		key[32];
		int			klen = snprintf(key, sizeof(key), "%s/%d", tag, j);
		void	   *v = NULL;
		size_t		vlen;
		int			rc = lsm_get(db, key, (size_t) klen, &v, &vlen);

		CHECK_MSG(rc == LSM_OK || rc == LSM_NOTFOUND, "get %s: %s: %s", key,
				  lsm_strerror(rc), lsm_errmsg(db));
		found += rc == LSM_OK;
		lsm_free(v);
	}
	CHECK_MSG(found == 0 || found == n, "%d of the %d keys of batch %s",
			  found, n, tag);
	return found == n;
}

/*
 * Checks what db holds: every earlier batch, the torn one absent (unless
 * the log was cut exactly after it), the new commit as new_present says.
 */
static void
check_tail_contents(lsm_db *db, bool torn_present, bool new_present,
					const char *what)
{
	int			k;

	for (k = 0; k < TAIL_RECORDS; k++)
	{
		char		tag[16];

		snprintf(tag, sizeof(tag), "r%d", k);
		CHECK_MSG(batch_present(db, tag, 3), "%s: batch %s lost", what, tag);
	}
	CHECK_MSG(batch_present(db, "torn", 5) == torn_present,
			  "%s: the last batch is %s", what,
			  torn_present ? "missing" : "present");
	CHECK_MSG(batch_present(db, "new", 2) == new_present,
			  "%s: the new commit is %s", what,
			  new_present ? "missing" : "present");
}

/*
 * Builds the template store in dir: TAIL_RECORDS small batches, then the
 * last one (about 170 bytes) in the log, nothing flushed.  *start and *end
 * are the offsets of the last record in the log, *log its path.
 */
static void
build_tail_store(const char *dir, uint64_t *start, uint64_t *end, char **log)
{
	lsm_options o;
	lsm_db	   *db;
	int			k;

	tail_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	for (k = 0; k < TAIL_RECORDS; k++)
	{
		char		tag[16];

		snprintf(tag, sizeof(tag), "r%d", k);
		put_batch(db, tag, 3, 10);
	}
	*log = harness_path(dir, "000001.log");
	*start = db->log_off;
	put_batch(db, "torn", 5, 20);
	*end = db->log_off;
	CHECK_OK(lsm_close(db));
	CHECK_GT(*end - *start, 150);
}

/* Copies the regular files of directory from into directory to (made). */
static void
copy_store(const char *from, const char *to)
{
	CHECK_EQ(mkdir(to, 0755), 0);
	harness_copy_dir(from, to);
}

/*
 * Commits the batch "new" to the store in dir, opened in mode m, checking
 * on the way what the handles read (what: the damage, for messages).
 */
static void
commit_in_mode(const char *dir, tail_mode m, bool torn_present,
			   const char *what)
{
	lsm_options o;
	lsm_db	   *db,
			   *ro = NULL;

	tail_options(&o);
	if (m == MODE_EXCLUSIVE)
		o.exclusive = 1;
	if (m == MODE_READER_FIRST)
	{
		lsm_options ro_opt = o;

		ro_opt.read_only = 1;
		CHECK_OK(lsm_open(dir, &ro_opt, &ro));
		check_tail_contents(ro, torn_present, false, what);
	}
	CHECK_OK(lsm_open(dir, &o, &db));
	check_tail_contents(db, torn_present, false, what);
	if (m == MODE_STAGE)
	{
		lsm_stage  *st;
		char		val[64];
		int			i;

		/* enough to spill, so that the commit is an ingest */
		memset(val, 's', sizeof(val));
		CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
		for (i = 0; i < 200; i++)
		{
			char		key[32];
			int			klen = snprintf(key, sizeof(key), "stage/%03d", i);

			CHECK_DB_OK(db, lsm_stage_put(st, key, (size_t) klen, val,
										  sizeof(val)));
		}
		CHECK_DB_OK(db, lsm_stage_put(st, "new/0", 5, "n", 1));
		CHECK_DB_OK(db, lsm_stage_put(st, "new/1", 5, "n", 1));
		CHECK_GT(lsm_stage_runs(st), 0);
		CHECK_DB_OK(db, lsm_stage_commit(st, LSM_WRITE_DEFAULT));
	}
	else
		put_batch(db, "new", 2, 1);
	check_tail_contents(db, torn_present, true, what);
	if (ro != NULL)
	{
		CHECK_DB_OK(ro, lsm_refresh(ro));
		check_tail_contents(ro, torn_present, true, what);
		CHECK_OK(lsm_close(ro));
	}
	CHECK_OK(lsm_close(db));
}

/* After the last byte of bytes[floor .. len) that is not zero, or floor. */
static uint64_t
nonzero_end(const uint8_t *bytes, uint64_t len, uint64_t floor)
{
	while (len > floor && bytes[len - 1] == 0)
		len--;
	return len;
}

/*
 * Runs one damaged log through every open mode: copies the template,
 * replaces its log with bytes[0 .. len), commits in the mode, reopens and
 * checks every earlier batch, the last one (present only if intact), the
 * new commit, lsm_verify, and the store's record of the tail that was cut
 * (tail_bytes after offset start; none if 0).
 */
static void
recover_every_mode(const char *template, const char *work, const uint8_t *bytes,
				   size_t len, uint64_t start, uint64_t tail_bytes,
				   bool torn_present, const char *what)
{
	int			m;

	for (m = 0; m < NMODES; m++)
	{
		char		msg[256];
		char	   *log = harness_path(work, "000001.log");
		lsm_options o;
		lsm_db	   *db;
		lsm_stats	st;

		snprintf(msg, sizeof(msg), "%s, %s", what, mode_names[m]);
		CHECK_EQ(harness_rmtree(work), 0);
		copy_store(template, work);
		harness_write_file(log, bytes, len);
		memset(&logged, 0, sizeof(logged));
		commit_in_mode(work, (tail_mode) m, torn_present, msg);

		tail_options(&o);
		o.log = NULL;
		CHECK_MSG(lsm_open(work, &o, &db) == LSM_OK, "%s: reopen: %s", msg,
				  lsm_errmsg(NULL));
		check_tail_contents(db, torn_present, true, msg);
		CHECK_MSG((logged.warnings > 0) == (tail_bytes > 0),
				  "%s: %d warnings logged", msg, logged.warnings);
		if (tail_bytes > 0)
			CHECK_MSG(strstr(logged.last, "discarded") != NULL &&
					  strstr(logged.last, "000001.log") != NULL,
					  "%s: logged \"%s\"", msg, logged.last);
		CHECK_DB_OK(db, lsm_verify(db));
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		CHECK_EQ_U(st.wal_tails.count, tail_bytes > 0 ? 1 : 0);
		if (tail_bytes > 0)
		{
			CHECK_EQ_U(st.wal_tails.log_number, 1);
			CHECK_EQ_U(st.wal_tails.offset, start);
			CHECK_EQ_U(st.wal_tails.bytes, tail_bytes);
		}
		CHECK_OK(lsm_close(db));
		free(log);
	}
}

/*
 * The log cut at every byte inside its last record, and then every byte
 * of that record flipped: in every open mode, the store opens, the
 * earlier batches are there and the damaged one is not, a commit lands
 * and survives a reopen (a writer must cut the bad tail before it
 * appends: before, a handle that had caught up outside the write lock
 * appended after it, and every later open failed with "corrupt record
 * ... followed by valid records"), and the cut is reported once, through
 * the log callback and in lsm_stats.
 */
TEST(torn_tail_every_mode)
{
	char	   *dir = harness_tmpdir("waltail");
	char	   *template = harness_path(dir, "template");
	char	   *work = harness_path(dir, "work");
	char	   *log;
	uint64_t	start,
				end,
				len;
	uint8_t    *orig;
	size_t		size;

	CHECK_EQ(mkdir(template, 0755), 0);
	build_tail_store(template, &start, &end, &log);
	orig = harness_read_file(log, &size);
	CHECK(size >= end);			/* zeros follow the records (wal.h) */
	for (len = start; len <= end; len++)
	{
		char		what[128];

		snprintf(what, sizeof(what), "log cut to %llu (record at %llu..%llu)",
				 (unsigned long long) len, (unsigned long long) start,
				 (unsigned long long) end);
		recover_every_mode(template, work, orig, (size_t) len, start,
						   len < end ? nonzero_end(orig, len, start) - start : 0,
						   len == end, what);
	}
	for (len = start; len < end; len++)
	{
		char		what[128];

		snprintf(what, sizeof(what), "byte %llu of the last record flipped",
				 (unsigned long long) (len - start));
		orig[len] ^= 0x5a;
		recover_every_mode(template, work, orig, size, start,
						   nonzero_end(orig, size, start) - start, false, what);
		orig[len] ^= 0x5a;
	}
	free(orig);
	free(log);
	free(template);
	free(work);
}

/*
 * A writer and a read-only reader on a store of dir holding batch "r0";
 * *st: the writer's statistics (its last sequence).
 */
static void
open_writer_reader(const char *dir, lsm_db **db, lsm_db **ro, lsm_stats *st)
{
	lsm_options o;

	tail_options(&o);
	CHECK_OK(lsm_open(dir, &o, db));
	put_batch(*db, "r0", 3, 10);
	o.read_only = 1;
	CHECK_OK(lsm_open(dir, &o, ro));
	CHECK_DB_OK(*db, lsm_get_stats(*db, st));
}

/*
 * Appends record rec (len bytes, LSM_WAL_HEADER of them reserved at its
 * start) of type to the log of db's store, as a writer would: under the
 * write lock, with a good checksum.  The reader ro must then meet it as
 * corruption whose message holds msg, read nothing of it (absent, if not
 * NULL, is one of its keys) and still read "r0"; the store must no longer
 * open.  Closes db and ro.
 */
static void
check_malformed_record(const char *dir, lsm_db *db, lsm_db *ro, int type,
					   uint8_t *rec, size_t len, const char *msg,
					   const char *absent)
{
	char	   *log = harness_path(dir, "000001.log");
	lsm_options o;
	lsm_err		e;
	void	   *v = NULL;
	size_t		vlen;
	int			fd;

	lsm_err_clear(&e);
	CHECK_OK(lsm_db_write_lock(db, &e));
	fd = open(log, O_WRONLY);
	CHECK(fd >= 0);
	CHECK_OK(lsm_wal_append(fd, NULL, "000001.log", db->log_off, type, rec,
							len, &e));
	close(fd);
	lsm_db_write_unlock(db);

	CHECK_RC(LSM_CORRUPTION, lsm_refresh(ro));
	CHECK_MSG(strstr(lsm_errmsg(ro), msg) != NULL, "%s", lsm_errmsg(ro));
	if (absent)
		CHECK_RC(LSM_NOTFOUND, lsm_get(ro, absent, strlen(absent), &v, &vlen));
	CHECK(batch_present(ro, "r0", 3));
	CHECK_OK(lsm_close(ro));
	CHECK_OK(lsm_close(db));
	tail_options(&o);
	CHECK_RC(LSM_CORRUPTION, lsm_open(dir, &o, &db));
	free(log);
}

/*
 * A record with a good checksum whose batch is malformed is corruption,
 * and none of its entries reach the memtable: a refreshing reader that
 * meets one fails and still reads nothing of it (before, the entries
 * before the malformed one were applied and readable).
 */
TEST(malformed_batch_applies_nothing)
{
	char	   *dir = harness_tmpdir("walmal");
	lsm_db	   *db,
			   *ro;
	lsm_stats	st;
	uint8_t		rec[64];
	size_t		len = LSM_WAL_HEADER;

	open_writer_reader(dir, &db, &ro, &st);
	/* two good entries, then a third of kind 7 */
	memset(rec, 0, sizeof(rec));
	lsm_put_u64(rec + len, st.last_sequence + 1);
	lsm_put_u32(rec + len + 8, 3);
	len += LSM_BATCH_HEADER;
	memcpy(rec + len, "\x01\x02m1\x01x\x01\x02m2\x01y\x07\x02m3", 16);
	len += 16;
	check_malformed_record(dir, db, ro, LSM_WAL_BATCH, rec, len,
						   "malformed batch", "m1");
}

/*
 * Records of prepared writes that lsm_prepare and lsm_resolve never write
 * are corruption, like a malformed batch: owner 0 (which nothing could
 * decide) on a commit (type 2) or a prepared batch (type 3), and a prepared
 * batch whose own batch does not begin at sequence 1.
 */
TEST(prepared_records_checked)
{
	static const struct
	{
		int			type;
		uint64_t	owner;
		uint64_t	first;		/* the inner batch's first sequence */
		const char *msg;
	}			cases[] = {
		{LSM_WAL_BATCH_OF, 0, 0, "without an owner"},
		{LSM_WAL_PREPARE, 0, 1, "without an owner"},
		{LSM_WAL_PREPARE, 7, 2, "malformed record of prepared write 7"},
	};
	size_t		c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		char	   *dir = harness_tmpdir("walprep");
		lsm_db	   *db,
				   *ro;
		lsm_stats	st;
		uint8_t		rec[96];
		size_t		len = LSM_WAL_HEADER;

		open_writer_reader(dir, &db, &ro, &st);
		memset(rec, 0, sizeof(rec));
		lsm_put_u64(rec + len, st.last_sequence + 1);
		lsm_put_u32(rec + len + 8, 1);
		len += LSM_BATCH_HEADER;
		if (cases[c].type == LSM_WAL_PREPARE)
		{
			/* [owner][the batch: first sequence, count, one put] */
			lsm_put_u64(rec + len, cases[c].owner);
			len += LSM_WAL_OWNER;
			lsm_put_u64(rec + len, cases[c].first);
			lsm_put_u32(rec + len + 8, 1);
			len += LSM_BATCH_HEADER;
			memcpy(rec + len, "\x01\x02p1\x01x", 6);
			len += 6;
		}
		else
		{
			/* [one put][owner] */
			memcpy(rec + len, "\x01\x02p1\x01x", 6);
			len += 6;
			lsm_put_u64(rec + len, cases[c].owner);
			len += LSM_WAL_OWNER;
		}
		check_malformed_record(dir, db, ro, cases[c].type, rec, len,
							   cases[c].msg, "p1");
	}
}

/*
 * A failed append whose cut fails too leaves a partial record behind the
 * handle's position: its next commit must cut it first, not append after
 * it (the handle must not take the fast path of its next catch-up).
 */
TEST(failed_append_and_cut)
{
	char	   *dir = harness_tmpdir("walfail");
	lsm_options o;
	lsm_db	   *db;
	lsm_fault	f;
	lsm_stats	st;
	int			k;

	tail_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	for (k = 0; k < TAIL_RECORDS; k++)
	{
		char		tag[16];

		snprintf(tag, sizeof(tag), "r%d", k);
		put_batch(db, tag, 3, 10);
	}
	/* the append writes half its record and fails; so does the cut */
	memset(&f, 0, sizeof(f));
	f.fail_write_at = 1;
	f.short_write = 1;
	f.sticky = 1;
	lsm_fault_install(&f);
	{
		lsm_batch  *b = lsm_batch_new();
		int			j;

		CHECK(b != NULL);
		for (j = 0; j < 5; j++)
		{
			char		key[32];
			int			klen = snprintf(key, sizeof(key), "torn/%d", j);

			CHECK_OK(lsm_batch_put(b, key, (size_t) klen, "vvvvvvvvvvvvvvvvvvvv", 20));
		}
		CHECK_RC(LSM_IOERR, lsm_write(db, b));
		lsm_batch_free(b);
	}
	lsm_fault_install(NULL);
	CHECK_GE(f.injected, 2);
	memset(&logged, 0, sizeof(logged));
	put_batch(db, "new", 2, 1);
	check_tail_contents(db, false, true, "after the failed append");
	CHECK_OK(lsm_close(db));

	o.log = NULL;
	CHECK_MSG(lsm_open(dir, &o, &db) == LSM_OK, "reopen: %s",
			  lsm_errmsg(NULL));
	check_tail_contents(db, false, true, "reopened");
	CHECK_EQ(logged.warnings, 1);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	CHECK_EQ_U(st.wal_tails.count, 1);
	CHECK_OK(lsm_close(db));
}

/*
 * A writer killed in the middle of its append (here: a child that takes
 * the write lock, writes half a record and exits holding it) leaves the
 * generation odd and a torn tail: a handle opened before, a read-only one
 * and a new one all read the earlier batches, and the first commit cuts
 * the tail before appending.
 */
TEST(killed_append)
{
	char	   *dir = harness_tmpdir("walkill");
	lsm_options o,
				ro_opt;
	lsm_db	   *db,
			   *ro;
	pid_t		pid;
	int			status,
				k;

	tail_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	for (k = 0; k < TAIL_RECORDS; k++)
	{
		char		tag[16];

		snprintf(tag, sizeof(tag), "r%d", k);
		put_batch(db, tag, 3, 10);
	}
	ro_opt = o;
	ro_opt.read_only = 1;
	CHECK_OK(lsm_open(dir, &ro_opt, &ro));
	check_tail_contents(ro, false, false, "before the kill");

	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		lsm_db	   *child;
		lsm_err		e;
		uint8_t		half[40];

		memset(half, 0x01, sizeof(half));
		lsm_err_clear(&e);
		CHECK_OK(lsm_open(dir, &o, &child));
		CHECK_OK(lsm_db_write_lock(child, &e));
		lsm_put_u32(half + 4, 500);
		CHECK(pwrite(child->log_fd, half, sizeof(half),
					 (off_t) child->log_off) == (ssize_t) sizeof(half));
		_exit(0);				/* dies holding the lock, mid-append */
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	CHECK_DB_OK(ro, lsm_refresh(ro));
	check_tail_contents(ro, false, false, "read-only after the kill");
	memset(&logged, 0, sizeof(logged));
	put_batch(db, "new", 2, 1);
	CHECK_EQ(logged.warnings, 1);
	CHECK(strstr(logged.last, "discarded 40 bytes") != NULL);
	CHECK_DB_OK(ro, lsm_refresh(ro));
	check_tail_contents(ro, false, true, "read-only after the commit");
	CHECK_OK(lsm_close(ro));
	CHECK_OK(lsm_close(db));
	CHECK_OK(lsm_open(dir, &o, &db));
	check_tail_contents(db, false, true, "reopened");
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
}

/*
 * Appends copy into a mapping of the log, which must not outlive a
 * truncation by another handle: handle a maps the log with its commit,
 * handle b's append fails and b cuts the log back to its records (the
 * file now ends in the middle of a's mapping), then a commits again.  Its
 * record must reach the file: a copy through the old mapping would fault
 * past the file's end, or be dropped within its last page.
 */
TEST(cut_under_mapping)
{
	char	   *dir = harness_tmpdir("walcutmap");
	char	   *log = harness_path(dir, "000001.log");
	lsm_options o;
	lsm_db	   *a,
			   *b;
	lsm_fault	f;

	tail_options(&o);
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_OK(lsm_open(dir, &o, &b));
	put_batch(a, "first", 3, 10);
	CHECK_EQ_U(harness_file_size(log) % (1 << 20), 0);

	memset(&f, 0, sizeof(f));
	f.fail_write_at = 1;
	f.short_write = 1;
	lsm_fault_install(&f);
	{
		lsm_batch  *bt = lsm_batch_new();

		CHECK(bt != NULL);
		CHECK_OK(lsm_batch_put(bt, "torn", 4, "vvvvvvvvvvvvvvvvvvvv", 20));
		CHECK_RC(LSM_IOERR, lsm_write(b, bt));
		lsm_batch_free(bt);
	}
	lsm_fault_install(NULL);
	CHECK_EQ(f.injected, 1);
	CHECK_EQ_U(harness_file_size(log), b->log_off);

	put_batch(a, "second", 3, 10);
	CHECK_GT(harness_file_size(log), b->log_off);
	CHECK_OK(lsm_close(b));
	CHECK_OK(lsm_close(a));

	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_EQ(batch_present(a, "first", 3), 1);
	CHECK_EQ(batch_present(a, "second", 3), 1);
	CHECK_DB_OK(a, lsm_verify(a));
	CHECK_OK(lsm_close(a));
	free(log);
}

/* Runs the tests named on the command line, or all of them. */
/*
 * The log is preallocated: after a commit, zeros follow its record up to a
 * whole MiB, a reopen reads every batch and no tail, and a simulated power
 * loss takes back a record written in place without a sync (the fault
 * layer zeroes it: the zeros it overwrote) while keeping the synced one.
 */
TEST(preallocated_log)
{
	char	   *dir = harness_tmpdir("walprealloc");
	char	   *log = harness_path(dir, "000001.log");
	lsm_options o;
	lsm_db	   *db;
	lsm_fault	f;
	lsm_stats	st;
	uint64_t	end;

	tail_options(&o);
	o.sync = 1;
	memset(&f, 0, sizeof(f));
	f.track_sync = 1;
	lsm_fault_install(&f);
	CHECK_OK(lsm_open(dir, &o, &db));
	put_batch(db, "synced", 3, 10);
	end = db->log_off;
	CHECK_GT(end, 0);
	CHECK_EQ_U(harness_file_size(log) % (1 << 20), 0);
	CHECK_GT(harness_file_size(log), end);
	CHECK_OK(lsm_close(db));

	o.sync = 0;
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_EQ_U(db->log_off, end);
	CHECK_EQ(batch_present(db, "synced", 3), 1);
	put_batch(db, "unsynced", 3, 10);
	CHECK_GT(db->log_off, end);
	CHECK_OK(lsm_close(db));
	lsm_fault_drop_unsynced();
	lsm_fault_install(NULL);

	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_EQ(batch_present(db, "synced", 3), 1);
	CHECK_EQ(batch_present(db, "unsynced", 3), 0);
	CHECK_EQ_U(db->log_off, end);
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	CHECK_EQ_U(st.wal_tails.count, 0);
	CHECK_OK(lsm_close(db));
	free(log);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(batch_api);
	RUN(batch_null);
	RUN(roundtrip);
	RUN(replay_from_offset);
	RUN(torn_tail);
	RUN(garbage_tail);
	RUN(corrupt_middle_record);
	RUN(sequence_discontinuity);
	RUN(apply_error);
	RUN(batch_malformed);
	RUN(scan_is_linear);
	RUN(torn_tail_every_mode);
	RUN(malformed_batch_applies_nothing);
	RUN(failed_append_and_cut);
	RUN(killed_append);
	RUN(preallocated_log);
	RUN(cut_under_mapping);
	RUN(prepared_records_checked);
	return harness_done();
}

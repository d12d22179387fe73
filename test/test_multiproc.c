/*
 * test_multiproc.c
 *		Many processes on one store: writers, readers and a compactor running
 *		at once, and the bounded, interruptible waits for the store's locks.
 *
 * writers_readers_compactor forks writer processes, reader processes (one
 * of them read-only) and a process that calls lsm_compact in a loop, each
 * with its own handle, on a store with an 8 KiB memtable, so flushes and
 * compactions happen all the time.  Writer w commits batches n = 1, 2, ...
 * that each put "w<w>-<n>" (a row whose field 0 is "w<w>"), set
 * "latest-<w>" to n, put "t<w>-<n>" and delete "t<w>-<n-1>"; after
 * lsm_write returns it publishes n in shared memory (writer 0 spends some
 * stretches in exclusive mode, holding the lock from open to close).  Every
 * third batch asks for a sync (group commit: the others then wait for the
 * sync of a record before theirs, and readers see no synced batch before
 * its sync, hence none after it either, until then).
 * Readers loop on lsm_refresh and check, for every writer, that
 *	- they see at least every batch published before the refresh, and a
 *	  writer's latest counter never goes backwards;
 *	- a batch is all or nothing: with latest = L, "w-L" and "t-L" exist while
 *	  "w-(L+1)" and "t-(L-1)" do not;
 *	- every key up to L is there with its value (gets, multi-gets);
 *	- an iterator, and a value search on field 0, show exactly w-1..w-M, one
 *	  t key (t-M) and latest = M for some M >= L;
 *	- "shared", a key all writers overwrite (in an order fixed by a lock
 *	  outside the engine), holds the newest of the visible writes to it:
 *	  sequence numbers order commits across processes.
 * At the end the parent reopens the store, checks every committed key and
 * runs lsm_verify.
 *
 * concurrent_create has several processes create one missing store at
 * once; iterator_across_refresh checks that a reading handle's iterators
 * keep their snapshot across lsm_refresh.
 *
 * The lock tests hold LOCK (or LOCK.compact) while a handle wants it: a
 * raw flock from a child process or from this process, a handle opened
 * with `exclusive`, or a real handle compacting in this process.  The
 * waiting call must return LSM_BUSY after about lock_timeout_ms,
 * LSM_INTERRUPTED as soon as the interrupt callback says so, and succeed
 * once the holder lets go.  Commits must not wait for a compaction.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "compaction.h"
#include "db.h"
#include "env.h"
#include "memfile.h"
#include "harness.h"

#define MAX_WRITERS 8
#define MAX_PROCS 16
#define MAX_BATCHES 4000

/* State shared by the parent and its children (an anonymous shared map). */
typedef struct shared
{
	uint64_t	committed[MAX_WRITERS]; /* last batch whose lsm_write returned */
	int			writers_done;	/* set by the parent when writers ended */
	uint64_t	reader_loops[MAX_PROCS];
	uint64_t	reader_refreshes[MAX_PROCS];
	uint64_t	compactions;
	uint64_t	busy_retries;

	/*
	 * The key "shared" is written by every writer: in every fourth batch,
	 * under an external lock (order_path), with the next value of
	 * order_count.  smax[w][n] is the largest such value in batches 1..n of
	 * writer w, recorded before batch n is written; so with batches 1..L[w]
	 * visible, "shared" must be max over w of smax[w][L[w]].
	 */
	uint64_t	order_count;
	uint64_t	smax[MAX_WRITERS][MAX_BATCHES + 1];
} shared;

/* The external lock file that orders writes of "shared" (not in the store). */
static char *order_path;

/* An anonymous shared mapping of a zeroed struct shared. */
static shared *
shared_new(void)
{
	void	   *p = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE,
						 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	memset(p, 0, sizeof(shared));
	return p;
}

/* The options every process of the concurrent test uses. */
static lsm_options
busy_options(void)
{
	lsm_options o;

	lsm_options_init(&o);
	o.memtable_bytes = 8 << 10;
	o.file_bytes = 4 << 10;
	o.level_ratio = 2;
	o.l0_compaction_trigger = 2;
	o.block_bytes = 1024;
	o.value_filter_bits = 1 << 14;
	o.hierarchy_order = 2;
	o.auto_compact = 1;
	o.lock_timeout_ms = 30000;
	return o;
}

/* Every third batch of a writer is synced, the others not. */
static int
write_flags(uint64_t n)
{
	return n % 3 == 0 ? LSM_WRITE_SYNC : LSM_WRITE_NOSYNC;
}

/* ---------------------------------------------------------------------- */
/* Keys and values of the concurrent test. */

/* Key names: "w<w>-<n>", "t<w>-<n>", "latest-<w>"; each returns the length. */
static size_t
wkey(char *buf, int w, uint64_t n)
{
	return (size_t) sprintf(buf, "w%d-%06" PRIu64, w, n);
}

static size_t
tkey(char *buf, int w, uint64_t n)
{
	return (size_t) sprintf(buf, "t%d-%06" PRIu64, w, n);
}

static size_t
latest_key(char *buf, int w)
{
	return (size_t) sprintf(buf, "latest-%d", w);
}

/*
 * The value of "w<w>-<n>": the row ("w<w>", n mod 7, filler of a length and
 * content that depend on w and n).  Returns an lsm_malloc'ed row.
 */
static void *
wvalue(int w, uint64_t n, size_t *len)
{
	char		f0[16],
				f1[16];
	uint8_t		fill[200];
	lsm_field	f[3];
	void	   *row;
	size_t		flen = (size_t) ((n * 37 + (uint64_t) w * 11) % 180),
				i;

	for (i = 0; i < flen; i++)
		fill[i] = (uint8_t) (n * 131 + i * 7 + (uint64_t) w);
	memset(f, 0, sizeof(f));
	f[0].data = f0;
	f[0].len = (size_t) sprintf(f0, "w%d", w);
	f[1].data = f1;
	f[1].len = (size_t) sprintf(f1, "%d", (int) (n % 7));
	f[2].data = fill;
	f[2].len = flen;
	CHECK_OK(lsm_row_encode(f, 3, &row, len));
	return row;
}

/* Checks that v is the value of "w<w>-<n>". */
static void
check_wvalue(int w, uint64_t n, const void *v, size_t vlen)
{
	size_t		elen;
	void	   *e = wvalue(w, n, &elen);

	if (vlen != elen || memcmp(v, e, elen) != 0)
		harness_fail(__FILE__, __LINE__, "w%d-%06" PRIu64 ": wrong value "
					 "(%zu bytes, expected %zu)", w, n, vlen, elen);
	lsm_free(e);
}

/* Reads "latest-<w>" through db: 0 if absent. */
static uint64_t
get_latest(lsm_db *db, int w)
{
	char		k[32];
	size_t		klen = latest_key(k, w);

	return harness_get_count(db, k, klen);
}

/* What "shared" must hold when writer w's batches 1..L[w] are visible. */
static uint64_t
expected_shared(shared *sh, int nw, const uint64_t *L)
{
	uint64_t	max = 0;
	int			w;

	for (w = 0; w < nw; w++)
	{
		uint64_t	c = __atomic_load_n(&sh->smax[w][L[w]], __ATOMIC_SEQ_CST);

		if (c > max)
			max = c;
	}
	return max;
}

/* key must be present with the value of w-n (expect = 1) or absent (0). */
static void
check_key(lsm_db *db, const char *k, size_t klen, int expect, int w,
		  uint64_t n)
{
	void	   *v;
	size_t		vlen;
	int			rc = lsm_get(db, k, klen, &v, &vlen);

	if (expect)
	{
		if (rc != LSM_OK)
			harness_fail(__FILE__, __LINE__, "%.*s: expected present, got %d (%s) %s",
						 (int) klen, k, rc, lsm_strerror(rc), lsm_errmsg(db));
		if (k[0] == 'w')
			check_wvalue(w, n, v, vlen);
		lsm_free(v);
	}
	else if (rc != LSM_NOTFOUND)
	{
		if (rc == LSM_OK)
			lsm_free(v);
		harness_fail(__FILE__, __LINE__, "%.*s: expected absent, got %d (%s) %s",
					 (int) klen, k, rc, lsm_strerror(rc), lsm_errmsg(db));
	}
}

/*
 * Checks the batch invariants of writer w at latest = L through point reads
 * of one snapshot (no refresh in between).
 */
static void
check_batches(lsm_db *db, int w, uint64_t L, uint64_t *rng, int sample)
{
	char		k[32];
	size_t		klen;
	int			i;

	klen = wkey(k, w, L + 1);
	check_key(db, k, klen, 0, w, L + 1);
	if (L == 0)
		return;
	klen = wkey(k, w, L);
	check_key(db, k, klen, 1, w, L);
	klen = tkey(k, w, L);
	check_key(db, k, klen, 1, w, L);
	if (L > 1)
	{
		klen = tkey(k, w, L - 1);
		check_key(db, k, klen, 0, w, L - 1);
	}
	for (i = 0; i < sample; i++)
	{
		uint64_t	n = 1 + harness_rand64(rng) % L;

		klen = wkey(k, w, n);
		check_key(db, k, klen, 1, w, n);
	}
}

/* A multi-get of up to 16 keys of writer w at or below L, plus one above. */
static void
check_multi(lsm_db *db, int w, uint64_t L, uint64_t *rng)
{
	char		keys[17][32];
	const void *kp[17];
	size_t		kl[17],
				vl[17];
	void	   *vals[17];
	int			rcs[17];
	uint64_t	ns[17];
	int			n = 0,
				i;

	for (i = 0; i < 16 && L > 0; i++, n++)
	{
		ns[n] = 1 + harness_rand64(rng) % L;
		kl[n] = wkey(keys[n], w, ns[n]);
		kp[n] = keys[n];
	}
	ns[n] = L + 1;
	kl[n] = wkey(keys[n], w, L + 1);
	kp[n] = keys[n];
	n++;
	CHECK_DB_OK(db, lsm_multi_get(db, n, kp, kl, vals, vl, rcs));
	for (i = 0; i < n; i++)
	{
		if (ns[i] <= L)
		{
			if (rcs[i] != LSM_OK)
				harness_fail(__FILE__, __LINE__, "multi-get %s: %d (%s)",
							 keys[i], rcs[i], lsm_strerror(rcs[i]));
			check_wvalue(w, ns[i], vals[i], vl[i]);
			lsm_free(vals[i]);
		}
		else if (rcs[i] != LSM_NOTFOUND)
			harness_fail(__FILE__, __LINE__, "multi-get %s: expected absent, "
						 "got %d (%s)", keys[i], rcs[i], lsm_strerror(rcs[i]));
	}
}

/*
 * Full scan of one snapshot: for each writer the w keys are exactly
 * 1..M[w], there is one t key, t-M[w], and latest = M[w]; "shared" holds
 * the newest of the writes to it in those batches.  Returns M in m.
 * Values of w keys are checked.
 */
static void
check_scan_consistent(lsm_db *db, shared *sh, int nw, uint64_t *m)
{
	lsm_iter   *it;
	uint64_t	latest[MAX_WRITERS],
				tcount[MAX_WRITERS],
				tlast[MAX_WRITERS],
				shared_val = 0;
	int			w;

	memset(latest, 0, sizeof(latest));
	memset(tcount, 0, sizeof(tcount));
	memset(tlast, 0, sizeof(tlast));
	for (w = 0; w < nw; w++)
		m[w] = 0;
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen,
					vlen;
		const char *k = lsm_iter_key(it, &klen);
		const char *v = lsm_iter_value(it, &vlen);
		char		buf[64];
		int			id;
		unsigned long long n;

		CHECK(klen < sizeof(buf));
		memcpy(buf, k, klen);
		buf[klen] = '\0';
		if (sscanf(buf, "latest-%d", &id) == 1)
		{
			CHECK(id >= 0 && id < nw);
			latest[id] = harness_parse_count(v, vlen);
		}
		else if (strcmp(buf, "shared") == 0)
			shared_val = harness_parse_count(v, vlen);
		else if (sscanf(buf, "t%d-%llu", &id, &n) == 2)
		{
			CHECK(id >= 0 && id < nw);
			tcount[id]++;
			tlast[id] = n;
		}
		else if (sscanf(buf, "w%d-%llu", &id, &n) == 2)
		{
			CHECK(id >= 0 && id < nw);
			if (n != m[id] + 1)
				harness_fail(__FILE__, __LINE__, "scan: %s follows w%d-%06" PRIu64
							 " (a batch missing or out of order)", buf, id, m[id]);
			m[id] = n;
			check_wvalue(id, n, v, vlen);
		}
		else
			harness_fail(__FILE__, __LINE__, "scan: unexpected key %s", buf);
	}
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);
	for (w = 0; w < nw; w++)
	{
		if (latest[w] != m[w])
			harness_fail(__FILE__, __LINE__, "scan: writer %d: latest %" PRIu64
						 " but w keys up to %" PRIu64, w, latest[w], m[w]);
		if (m[w] > 0 && (tcount[w] != 1 || tlast[w] != m[w]))
			harness_fail(__FILE__, __LINE__, "scan: writer %d at %" PRIu64
						 ": %" PRIu64 " t keys, last t-%" PRIu64,
						 w, m[w], tcount[w], tlast[w]);
	}
	if (shared_val != expected_shared(sh, nw, m))
		harness_fail(__FILE__, __LINE__, "scan: shared = %" PRIu64 ", expected "
					 "%" PRIu64 " (an older write shadows a newer one?)",
					 shared_val, expected_shared(sh, nw, m));
}

/*
 * Value search on field 0 = "w<w>": exactly the keys w-1..w-M for some
 * M >= at_least, each once, with their values.
 */
static void
check_value_search(lsm_db *db, int w, uint64_t at_least)
{
	lsm_iter   *it;
	char		f0[16];
	uint8_t    *seen;
	uint64_t	cap = 1 << 16,
				max = 0,
				count = 0,
				i;

	seen = calloc(cap, 1);
	CHECK(seen != NULL);
	sprintf(f0, "w%d", w);
	CHECK_DB_OK(db, lsm_value_search(db, 0, f0, strlen(f0), &it));
	for (; lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen,
					vlen;
		const char *k = lsm_iter_key(it, &klen);
		const void *v = lsm_iter_value(it, &vlen);
		char		buf[64];
		int			id;
		unsigned long long n;

		CHECK(klen < sizeof(buf));
		memcpy(buf, k, klen);
		buf[klen] = '\0';
		if (sscanf(buf, "w%d-%llu", &id, &n) != 2 || id != w || n == 0 ||
			n >= cap)
			harness_fail(__FILE__, __LINE__, "value search w%d: unexpected key %s",
						 w, buf);
		if (seen[n])
			harness_fail(__FILE__, __LINE__, "value search w%d: %s twice", w, buf);
		seen[n] = 1;
		check_wvalue(w, n, v, vlen);
		count++;
		if (n > max)
			max = n;
	}
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);
	if (count != max || max < at_least)
	{
		for (i = 1; i <= max && seen[i]; i++)
			;
		harness_fail(__FILE__, __LINE__, "value search w%d: %" PRIu64
					 " hits, up to %" PRIu64 " (at least %" PRIu64
					 " expected), first missing %" PRIu64,
					 w, count, max, at_least, i);
	}
	free(seen);
}

/* ---------------------------------------------------------------------- */
/* The processes of the concurrent test. */

/* Writer w: batches 1..nbatches; ends the process. */
static void
writer_main(const char *dir, shared *sh, int w, int nw, uint64_t nbatches)
{
	lsm_options o = busy_options();
	lsm_db	   *db;
	lsm_batch  *b;
	uint64_t	n,
				seen[MAX_WRITERS];
	int			rc,
				order_fd;

	memset(seen, 0, sizeof(seen));
	/* opened here: each process needs its own open file description */
	order_fd = open(order_path, O_RDWR | O_CREAT, 0644);
	CHECK(order_fd >= 0);
	CHECK(nbatches <= MAX_BATCHES);
	CHECK_OK(lsm_open(dir, &o, &db));
	b = lsm_batch_new();
	CHECK(b != NULL);
	for (n = 1; n <= nbatches; n++)
	{
		char		k[32],
					num[32];
		size_t		klen,
					vlen;
		void	   *v = wvalue(w, n, &vlen);
		int			x;

		if (w == 0 && n % 600 == 300)
		{
			/* for a while, writer 0 holds the lock from open to close */
			CHECK_DB_OK(db, lsm_close(db));
			o.exclusive = 1;
			CHECK_OK(lsm_open(dir, &o, &db));
		}
		else if (w == 0 && n % 600 == 400)
		{
			CHECK_DB_OK(db, lsm_close(db));
			o.exclusive = 0;
			CHECK_OK(lsm_open(dir, &o, &db));
		}
		lsm_batch_clear(b);
		klen = wkey(k, w, n);
		CHECK_OK(lsm_batch_put(b, k, klen, v, vlen));
		lsm_free(v);
		klen = latest_key(k, w);
		CHECK_OK(lsm_batch_put(b, k, klen, num,
							   (size_t) sprintf(num, "%" PRIu64, n)));
		klen = tkey(k, w, n);
		CHECK_OK(lsm_batch_put(b, k, klen, "t", 1));
		if (n > 1)
		{
			klen = tkey(k, w, n - 1);
			CHECK_OK(lsm_batch_delete(b, k, klen));
		}
		if (n % 4 == (uint64_t) w % 4 && !o.exclusive)
		{
			/*
			 * A write of "shared", in an order fixed outside the engine.  Not
			 * while holding LOCK exclusively: others wait for LOCK holding
			 * the order lock.
			 */
			uint64_t	c;

			CHECK(flock(order_fd, LOCK_EX) == 0);
			c = __atomic_add_fetch(&sh->order_count, 1, __ATOMIC_SEQ_CST);
			__atomic_store_n(&sh->smax[w][n], c, __ATOMIC_SEQ_CST);
			CHECK_OK(lsm_batch_put(b, "shared", 6, num,
								   (size_t) sprintf(num, "%" PRIu64, c)));
			while ((rc = lsm_write_opt(db, b, write_flags(n))) == LSM_BUSY)
				__atomic_add_fetch(&sh->busy_retries, 1, __ATOMIC_SEQ_CST);
			CHECK(flock(order_fd, LOCK_UN) == 0);
		}
		else
		{
			__atomic_store_n(&sh->smax[w][n], sh->smax[w][n - 1],
							 __ATOMIC_SEQ_CST);
			while ((rc = lsm_write_opt(db, b, write_flags(n))) == LSM_BUSY)
				__atomic_add_fetch(&sh->busy_retries, 1, __ATOMIC_SEQ_CST);
		}
		CHECK_DB_OK(db, rc);
		__atomic_store_n(&sh->committed[w], n, __ATOMIC_SEQ_CST);

		/* read your own writes; others' counters only grow */
		if (n % 16 == 0)
		{
			CHECK_EQ_U(get_latest(db, w), n);
			for (x = 0; x < nw; x++)
			{
				uint64_t	l = get_latest(db, x);

				CHECK_GE(l, seen[x]);
				seen[x] = l;
			}
		}
	}
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_close(db));
	close(order_fd);
	_exit(0);
}

/* Reader r: checks until the writers are done; ends the process. */
static void
reader_main(const char *dir, shared *sh, int r, int nw, int read_only,
			uint64_t nbatches, uint64_t seed)
{
	lsm_options o = busy_options();
	lsm_db	   *db;
	uint64_t	prev[MAX_WRITERS],
				rng = seed;
	int			last_round = 0;

	memset(prev, 0, sizeof(prev));
	o.read_only = read_only;
	CHECK_OK(lsm_open(dir, &o, &db));
	for (;;)
	{
		uint64_t	before[MAX_WRITERS],
					L[MAX_WRITERS],
					M[MAX_WRITERS];
		int			w,
					done = __atomic_load_n(&sh->writers_done, __ATOMIC_SEQ_CST);

		for (w = 0; w < nw; w++)
			before[w] = __atomic_load_n(&sh->committed[w], __ATOMIC_SEQ_CST);
		CHECK_DB_OK(db, lsm_refresh(db));
		sh->reader_refreshes[r]++;
		for (w = 0; w < nw; w++)
		{
			uint64_t	after;

			L[w] = get_latest(db, w);
			after = __atomic_load_n(&sh->committed[w], __ATOMIC_SEQ_CST);
			if (L[w] < before[w])
				harness_fail(__FILE__, __LINE__, "reader %d: writer %d published "
							 "%" PRIu64 " before the refresh, reader sees %" PRIu64,
							 r, w, before[w], L[w]);
			if (L[w] < prev[w])
				harness_fail(__FILE__, __LINE__, "reader %d: writer %d's counter "
							 "went back from %" PRIu64 " to %" PRIu64,
							 r, w, prev[w], L[w]);
			/* at most one batch past the published count (in flight) */
			if (L[w] > after + 1)
				harness_fail(__FILE__, __LINE__, "reader %d: writer %d at %" PRIu64
							 " but published only %" PRIu64, r, w, L[w], after);
			prev[w] = L[w];
			check_batches(db, w, L[w], &rng, 4);
			if (sh->reader_loops[r] % 4 == 0)
				check_multi(db, w, L[w], &rng);
		}
		{
			uint64_t	got = harness_get_count(db, "shared", 6),
						want = expected_shared(sh, nw, L);

			if (got != want)
				harness_fail(__FILE__, __LINE__, "reader %d: shared = %" PRIu64
							 ", expected %" PRIu64 " (an older write shadows "
							 "a newer one?)", r, got, want);
		}
		if (sh->reader_loops[r] % 10 == 0 || last_round)
		{
			check_scan_consistent(db, sh, nw, M);
			for (w = 0; w < nw; w++)
				if (M[w] < L[w])
					harness_fail(__FILE__, __LINE__, "reader %d: scan shows writer "
								 "%d at %" PRIu64 ", gets at %" PRIu64,
								 r, w, M[w], L[w]);
		}
		if (sh->reader_loops[r] % 25 == 0 || last_round)
			for (w = 0; w < nw; w++)
				check_value_search(db, w, L[w]);
		if (sh->reader_loops[r] % 50 == 0)
			CHECK_DB_OK(db, lsm_verify(db));
		sh->reader_loops[r]++;
		if (last_round)
		{
			for (w = 0; w < nw; w++)
				CHECK_EQ_U(L[w], nbatches);
			break;
		}
		if (done)
			last_round = 1;		/* one more pass over the final state */
	}
	CHECK_DB_OK(db, lsm_close(db));
	_exit(0);
}

/* Compactor: lsm_compact in a loop until the writers are done. */
static void
compactor_main(const char *dir, shared *sh)
{
	lsm_options o = busy_options();
	lsm_db	   *db;
	long		loops = 0;

	CHECK_OK(lsm_open(dir, &o, &db));
	while (!__atomic_load_n(&sh->writers_done, __ATOMIC_SEQ_CST))
	{
		lsm_stats	st;

		CHECK_DB_OK(db, lsm_compact(db));
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		sh->compactions = st.compactions;
		if (++loops % 20 == 0)
			CHECK_DB_OK(db, lsm_verify(db));
		usleep(2000);
	}
	CHECK_DB_OK(db, lsm_close(db));
	_exit(0);
}

/*
 * Forks a child that runs the statements given (then exits 0) and appends
 * its pid to pids[np++].
 */
#define SPAWN(pids, np, ...) \
	do { \
		pid_t		pid_ = fork(); \
		\
		CHECK(pid_ >= 0); \
		if (pid_ == 0) \
		{ \
			__VA_ARGS__; \
			_exit(0); \
		} \
		(pids)[(np)++] = pid_; \
	} while (0)

/*
 * Waits for the processes pids[0..n) to end, at most until deadline (ms on
 * the monotonic clock); then kills what is left.  Returns the number of
 * processes that did not exit with status 0, printing each.
 */
static int
wait_all(pid_t *pids, int n, long deadline)
{
	int			left = n,
				bad = 0,
				i;

	while (left > 0)
	{
		for (i = 0; i < n; i++)
		{
			int			status;

			if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			{
				printf("# process %d (#%d) ended with %s %d\n", (int) pids[i], i,
					   WIFEXITED(status) ? "status" : "signal",
					   WIFEXITED(status) ? WEXITSTATUS(status) :
					   WTERMSIG(status));
				bad++;
			}
			pids[i] = 0;
			left--;
		}
		if (left > 0 && harness_now_ms() > deadline)
		{
			for (i = 0; i < n; i++)
				if (pids[i] > 0)
				{
					printf("# process %d (#%d) still running at the deadline: "
						   "killed\n", (int) pids[i], i);
					kill(pids[i], SIGKILL);
					waitpid(pids[i], NULL, 0);
					pids[i] = 0;
					bad++;
					left--;
				}
		}
		if (left > 0)
			usleep(5000);
	}
	return bad;
}

/* ---------------------------------------------------------------------- */
/* Tests. */

/*
 * Writers, readers (one read-only) and a compactor on one store, then a
 * reopen that finds every committed batch.
 */
TEST(writers_readers_compactor)
{
	enum
	{
		NW = 4,
		NR = 3
	};
	const uint64_t nbatches = 3000;
	char	   *dir = harness_tmpdir("multiproc");
	shared	   *sh = shared_new();
	lsm_options o = busy_options();
	lsm_db	   *db;
	pid_t		writers[NW],
				others[NR + 1];
	int			nwriters = 0,
				nothers = 0,
				bad,
				w,
				r;
	uint64_t	seed = harness_seed(),
				M[MAX_WRITERS];
	long		start = harness_now_ms();
	lsm_stats	st;

	order_path = harness_path(harness_tmpdir("order"), "order.lock");
	CHECK(nbatches <= MAX_BATCHES);

	/* the store exists before anyone forks */
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_close(db));

	for (r = 0; r < NR; r++)
		SPAWN(others, nothers,
			  reader_main(dir, sh, r, NW, r == 1, nbatches, seed + (uint64_t) r));
	SPAWN(others, nothers, compactor_main(dir, sh));
	for (w = 0; w < NW; w++)
		SPAWN(writers, nwriters, writer_main(dir, sh, w, NW, nbatches));

	bad = wait_all(writers, nwriters, start + 120000);
	__atomic_store_n(&sh->writers_done, 1, __ATOMIC_SEQ_CST);
	bad += wait_all(others, nothers, harness_now_ms() + 60000);
	printf("# %d writers x %" PRIu64 " batches in %ld ms; reader loops %" PRIu64
		   ", %" PRIu64 ", %" PRIu64 " (read-only); compactions by the "
		   "compactor %" PRIu64 "; busy retries %" PRIu64 "\n",
		   NW, nbatches, harness_now_ms() - start, sh->reader_loops[0],
		   sh->reader_loops[1], sh->reader_loops[2], sh->compactions,
		   sh->busy_retries);
	CHECK_EQ(bad, 0);
	for (w = 0; w < NW; w++)
		CHECK_EQ_U(sh->committed[w], nbatches);
	for (r = 0; r < NR; r++)
		CHECK_GT(sh->reader_loops[r], 1);

	/* every committed batch, after a reopen */
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_GT(sh->order_count, 0);
	CHECK_EQ_U(harness_get_count(db, "shared", 6), sh->order_count);
	for (w = 0; w < NW; w++)
	{
		uint64_t	n;

		CHECK_EQ_U(get_latest(db, w), nbatches);
		for (n = 1; n <= nbatches; n++)
		{
			char		k[32];
			size_t		klen = wkey(k, w, n);

			check_key(db, k, klen, 1, w, n);
			klen = tkey(k, w, n);
			check_key(db, k, klen, n == nbatches, w, n);
		}
		check_value_search(db, w, nbatches);
	}
	check_scan_consistent(db, sh, NW, M);
	for (w = 0; w < NW; w++)
		CHECK_EQ_U(M[w], nbatches);
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	printf("# final shape: L0 %d, L1 %d, L2 %d, L3 %d files\n",
		   st.level[0].files, st.level[1].files, st.level[2].files,
		   st.level[3].files);
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_DB_OK(db, lsm_verify(db));
	check_scan_consistent(db, sh, NW, M);
	CHECK_DB_OK(db, lsm_close(db));
	munmap(sh, sizeof(*sh));
	free(order_path);
	order_path = NULL;
}

/* Several processes open (and so create) a missing store at once. */
TEST(concurrent_create)
{
	enum
	{
		NP = 5
	};
	char	   *base = harness_tmpdir("create");
	char	   *dir = harness_path(base, "store");
	int			go[2];
	pid_t		pids[NP];
	int			np = 0,
				i;
	lsm_db	   *db;

	CHECK(pipe(go) == 0);
	for (i = 0; i < NP; i++)
		SPAWN(pids, np,
		  {
			  lsm_options o = busy_options();
			  char		c,
						  k[16];
			  lsm_db	 *cdb;

			  close(go[1]);
			  /* all start when the parent closes the pipe */
			  CHECK(read(go[0], &c, 1) == 0);
			  CHECK_OK(lsm_open(dir, &o, &cdb));
			  sprintf(k, "c%d", i);
			  CHECK_DB_OK(cdb, lsm_put(cdb, k, strlen(k), k, strlen(k)));
			  CHECK_DB_OK(cdb, lsm_close(cdb));
		  });
	close(go[0]);
	close(go[1]);
	CHECK_EQ(wait_all(pids, np, harness_now_ms() + 60000), 0);
	CHECK_OK(lsm_open(dir, NULL, &db));
	for (i = 0; i < NP; i++)
	{
		char		k[16];
		void	   *v;
		size_t		vlen;

		sprintf(k, "c%d", i);
		CHECK_DB_OK(db, lsm_get(db, k, strlen(k), &v, &vlen));
		CHECK_MEMEQ(v, vlen, k, strlen(k));
		lsm_free(v);
	}
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	free(dir);
}

/* State of a counting interrupt callback. */
typedef struct intr
{
	int			calls;
	int			stop_at;		/* return nonzero from this call on (0: never) */
	int			release_at;		/* on this call, write to release_fd */
	int			release_fd;
} intr;

/*
 * Interrupt callback: counts its calls, writes to release_fd on call
 * release_at, and asks to stop from call stop_at on.
 */
static int
count_interrupt(void *arg)
{
	intr	   *s = arg;

	s->calls++;
	if (s->release_at > 0 && s->calls == s->release_at)
	{
		char		c = 'r';

		if (write(s->release_fd, &c, 1) != 1)
			return 1;
	}
	return s->stop_at > 0 && s->calls >= s->stop_at;
}

/*
 * Forks a process that takes flock(LOCK_EX) on dir/name, reports on *ready,
 * and holds it until a byte arrives on (or EOF of) the release pipe.
 */
static pid_t
spawn_holder(const char *dir, const char *name, int *release_w)
{
	int			ready[2],
				release[2];
	pid_t		pid;
	char		c;

	CHECK(pipe(ready) == 0);
	CHECK(pipe(release) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		char	   *path = harness_path(dir, name);
		int			fd = open(path, O_RDWR | O_CREAT, 0644);

		close(ready[0]);
		close(release[1]);
		if (fd < 0 || flock(fd, LOCK_EX) != 0)
			_exit(2);
		if (write(ready[1], "l", 1) != 1)
			_exit(3);
		if (read(release[0], &c, 1) < 0)
			_exit(4);
		flock(fd, LOCK_UN);
		close(fd);
		free(path);
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	CHECK_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*release_w = release[1];
	return pid;
}

/*
 * With LOCK held by another process: writes and flushes fail with
 * LSM_BUSY after about lock_timeout_ms, or LSM_INTERRUPTED as soon as the
 * interrupt callback asks; reads go on; nothing is half-written; and a
 * waiting write gets the lock once the holder lets go.
 */
TEST(write_lock_busy_and_interrupted)
{
	char	   *dir = harness_tmpdir("lock");
	lsm_options o;
	lsm_db	   *db,
			   *idb;
	lsm_batch  *b;
	lsm_iter   *it;
	intr		is;
	pid_t		holder;
	int			release,
				status,
				rc;
	long		t0,
				dt;
	void	   *v;
	size_t		vlen;

	lsm_options_init(&o);
	o.lock_timeout_ms = 300;
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_put(db, "before", 6, "1", 1));

	holder = spawn_holder(dir, "LOCK", &release);

	/* bounded wait */
	t0 = harness_now_ms();
	rc = lsm_put(db, "k1", 2, "v", 1);
	dt = harness_now_ms() - t0;
	CHECK_RC(LSM_BUSY, rc);
	CHECK_GE(dt, 250);
	CHECK_LT(dt, 5000);
	CHECK(lsm_errmsg(db)[0] != '\0');
	printf("# put with the lock held elsewhere: %s after %ld ms (%s)\n",
		   lsm_strerror(rc), dt, lsm_errmsg(db));
	CHECK_RC(LSM_BUSY, lsm_delete(db, "before", 6));
	CHECK_RC(LSM_BUSY, lsm_flush(db));
	b = lsm_batch_new();
	CHECK(b != NULL);
	CHECK_OK(lsm_batch_put(b, "k2", 2, "v", 1));
	CHECK_OK(lsm_batch_put(b, "k3", 2, "v", 1));
	CHECK_RC(LSM_BUSY, lsm_write(db, b));

	/* readers take no lock */
	CHECK_DB_OK(db, lsm_refresh(db));
	CHECK_DB_OK(db, lsm_get(db, "before", 6, &v, &vlen));
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "k1", 2, &v, &vlen));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "k2", 2, &v, &vlen));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	CHECK(lsm_iter_valid(it));
	lsm_iter_next(it);
	CHECK(!lsm_iter_valid(it));
	lsm_iter_close(it);

	/* an interrupt ends the wait at once, whatever the timeout */
	memset(&is, 0, sizeof(is));
	is.stop_at = 1;
	o.lock_timeout_ms = 60000;
	o.interrupt = count_interrupt;
	o.interrupt_arg = &is;
	CHECK_OK(lsm_open(dir, &o, &idb));
	t0 = harness_now_ms();
	rc = lsm_put(idb, "k4", 2, "v", 1);
	dt = harness_now_ms() - t0;
	CHECK_RC(LSM_INTERRUPTED, rc);
	CHECK_GE(is.calls, 1);
	CHECK_LT(dt, 2000);
	printf("# put with an interrupt: %s after %ld ms, %d callback calls\n",
		   lsm_strerror(rc), dt, is.calls);

	/* ... or after some waiting */
	is.calls = 0;
	is.stop_at = 6;
	rc = lsm_write(idb, b);
	CHECK_RC(LSM_INTERRUPTED, rc);
	CHECK_EQ(is.calls, 6);
	CHECK_RC(LSM_INTERRUPTED, lsm_flush(idb));

	/* a waiting writer gets the lock when the holder releases it */
	is.calls = 0;
	is.stop_at = 0;
	is.release_at = 3;
	is.release_fd = release;
	t0 = harness_now_ms();
	CHECK_DB_OK(idb, lsm_put(idb, "k5", 2, "after", 5));
	printf("# put that waited for the holder: ok after %ld ms, %d callback calls\n",
		   harness_now_ms() - t0, is.calls);
	CHECK_GE(is.calls, 3);
	CHECK_EQ(waitpid(holder, &status, 0), holder);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(release);

	/* nothing of the failed writes, and the store works again */
	CHECK_DB_OK(db, lsm_refresh(db));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "k1", 2, &v, &vlen));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "k2", 2, &v, &vlen));
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "k4", 2, &v, &vlen));
	CHECK_DB_OK(db, lsm_get(db, "k5", 2, &v, &vlen));
	CHECK_MEMEQ(v, vlen, "after", 5);
	lsm_free(v);
	CHECK_DB_OK(db, lsm_write(db, b));
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(idb, lsm_refresh(idb));
	CHECK_DB_OK(idb, lsm_get(idb, "k3", 2, &v, &vlen));
	lsm_free(v);
	CHECK_DB_OK(db, lsm_verify(db));
	lsm_batch_free(b);
	CHECK_DB_OK(idb, lsm_close(idb));
	CHECK_DB_OK(db, lsm_close(db));
}

/*
 * The same with the holder in this process: a flock on LOCK through
 * another open file description conflicts with the handle's own.
 */
TEST(write_lock_held_in_process)
{
	char	   *dir = harness_tmpdir("lockself");
	char	   *path;
	lsm_options o;
	lsm_db	   *db;
	int			fd;
	long		t0,
				dt;
	void	   *v;
	size_t		vlen;

	lsm_options_init(&o);
	o.lock_timeout_ms = 200;
	CHECK_OK(lsm_open(dir, &o, &db));
	path = harness_path(dir, "LOCK");
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK(flock(fd, LOCK_EX) == 0);
	t0 = harness_now_ms();
	CHECK_RC(LSM_BUSY, lsm_put(db, "k", 1, "v", 1));
	dt = harness_now_ms() - t0;
	CHECK_GE(dt, 150);
	CHECK_LT(dt, 5000);
	CHECK(flock(fd, LOCK_UN) == 0);
	CHECK_DB_OK(db, lsm_put(db, "k", 1, "v", 1));
	CHECK_DB_OK(db, lsm_get(db, "k", 1, &v, &vlen));
	lsm_free(v);
	/* a holder that stays: the handle keeps failing, then works again */
	CHECK(flock(fd, LOCK_EX) == 0);
	CHECK_RC(LSM_BUSY, lsm_flush(db));
	close(fd);					/* closing the last descriptor unlocks */
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_close(db));
	free(path);
}

/*
 * Child of lock_waiter_killed: one put with a long lock timeout; exits 0
 * if it committed.
 */
static void
waiting_put(const char *dir, const char *key)
{
	lsm_options o;
	lsm_db	   *db;
	int			rc;

	lsm_options_init(&o);
	o.lock_timeout_ms = 60000;
	if (lsm_open(dir, &o, &db) != LSM_OK)
		_exit(2);
	rc = lsm_put(db, key, strlen(key), "v", 1);
	_exit(rc == LSM_OK && lsm_close(db) == LSM_OK ? 0 : 1);
}

/* Polls until LOCK's page counts at least n sleeping waiters (10 s at most). */
static bool
await_sleepers(lsm_lock_page *pg, uint32_t n)
{
	int			i;

	for (i = 0; i < 10000; i++)
	{
		if (__atomic_load_n(&pg->lock_sleepers, __ATOMIC_SEQ_CST) >= n)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * The wake-up words in LOCK's page are hints: a waiter SIGKILLed while it
 * sleeps leaves the count of sleepers high, and one killed after it was
 * woken leaves lock_woken set, which stops wake-ups; neither keeps another
 * waiter from getting the lock once it is free (its backoff bounds its
 * sleep), nor a writer from committing after it.
 */
TEST(lock_waiter_killed)
{
	char	   *dir = harness_tmpdir("lockwake");
	char	   *path;
	lsm_options o;
	lsm_db	   *db;
	lsm_lock_page *pg;
	pid_t		a,
				b;
	int			fd,
				status;
	void	   *v;
	size_t		vlen;

	lsm_options_init(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_put(db, "before", 6, "1", 1));
	path = harness_path(dir, "LOCK");
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(pg != MAP_FAILED);
	close(fd);

	CHECK_DB_OK(db, lsm_lock(db, 0));
	a = fork();
	CHECK(a >= 0);
	if (a == 0)
		waiting_put(dir, "a");
	CHECK(await_sleepers(pg, 1));
	CHECK(kill(a, SIGKILL) == 0);
	CHECK_EQ(waitpid(a, &status, 0), a);
	CHECK(WIFSIGNALED(status));
	CHECK_GE(__atomic_load_n(&pg->lock_sleepers, __ATOMIC_SEQ_CST), 1);
	/* as if it had been woken and died before it ran */
	__atomic_store_n(&pg->lock_woken, 1, __ATOMIC_SEQ_CST);

	b = fork();
	CHECK(b >= 0);
	if (b == 0)
		waiting_put(dir, "b");
	CHECK(await_sleepers(pg, 2));
	lsm_unlock(db);
	CHECK_EQ(waitpid(b, &status, 0), b);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	CHECK_DB_OK(db, lsm_refresh(db));
	CHECK_DB_OK(db, lsm_get(db, "b", 1, &v, &vlen));
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_get(db, "a", 1, &v, &vlen));
	/* and the handle still writes, with the stale count */
	CHECK_DB_OK(db, lsm_put(db, "after", 5, "1", 1));
	CHECK_DB_OK(db, lsm_verify(db));
	munmap(pg, 4096);
	free(path);
	CHECK_DB_OK(db, lsm_close(db));
}

/*
 * An exclusive handle keeps the memtable of the logs it creates to itself
 * (no shared memtable file once it has flushed): a read-only handle
 * replays those logs and still sees every commit, across flushes; a
 * writer that opens after it has closed sets up a shared memtable again.
 */
TEST(exclusive_memtable_private)
{
	char	   *dir = harness_tmpdir("exclprivate");
	lsm_options xo,
				ro,
				o;
	lsm_db	   *x,
			   *r,
			   *w;
	lsm_stats	st;
	void	   *v;
	size_t		vlen;
	int			i,
				j;

	lsm_options_init(&xo);
	xo.exclusive = 1;
	xo.memtable_bytes = 8 << 10;
	CHECK_OK(lsm_open(dir, &xo, &x));
	lsm_options_init(&ro);
	ro.read_only = 1;
	CHECK_OK(lsm_open(dir, &ro, &r));
	for (i = 0; i < 600; i++)
	{
		char		k[16];

		sprintf(k, "k%04d", i);
		CHECK_DB_OK(x, lsm_put(x, k, strlen(k), k, strlen(k)));
		if (i % 37 != 0)
			continue;
		CHECK_DB_OK(r, lsm_refresh(r));
		for (j = 0; j <= i; j += 7)
		{
			sprintf(k, "k%04d", j);
			CHECK_MSG(lsm_get(r, k, strlen(k), &v, &vlen) == LSM_OK,
					  "%s after %d puts: %s", k, i + 1, lsm_errmsg(r));
			lsm_free(v);
		}
	}
	CHECK_DB_OK(x, lsm_get_stats(x, &st));
	CHECK_GT(st.level[0].files + st.level[1].files, 0);
	CHECK_GT(st.memtable_entries, 0);
	CHECK_EQ_U(st.memtable_shared, 0);
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK_DB_OK(r, lsm_get_stats(r, &st));
	CHECK_EQ_U(st.memtable_shared, 0);
	CHECK_DB_OK(r, lsm_get(r, "k0599", 5, &v, &vlen));
	lsm_free(v);
	CHECK_OK(lsm_close(x));

	/* a shared writer after it: the log's memtable is shared again */
	lsm_options_init(&o);
	CHECK_OK(lsm_open(dir, &o, &w));
	CHECK_DB_OK(w, lsm_put(w, "after", 5, "1", 1));
	CHECK_DB_OK(w, lsm_get_stats(w, &st));
	CHECK_EQ_U(st.memtable_shared, 1);
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK_DB_OK(r, lsm_get(r, "after", 5, &v, &vlen));
	lsm_free(v);
	CHECK_DB_OK(r, lsm_get(r, "k0599", 5, &v, &vlen));
	lsm_free(v);
	CHECK_DB_OK(r, lsm_get_stats(r, &st));
	CHECK_EQ_U(st.memtable_shared, 1);
	CHECK_DB_OK(w, lsm_verify(w));
	CHECK_OK(lsm_close(w));
	CHECK_OK(lsm_close(r));
}

/*
 * A handle opened with `exclusive` holds LOCK from open to close: another
 * handle of this process cannot write (LSM_BUSY after its timeout,
 * LSM_INTERRUPTED when its callback asks) nor open exclusively, but reads
 * and sees the holder's commits; after the holder closes, it writes.
 */
TEST(exclusive_handle_holds_lock)
{
	char	   *dir = harness_tmpdir("exclusive");
	lsm_options xo,
				o;
	lsm_db	   *x,
			   *b,
			   *c;
	intr		is;
	long		t0,
				dt;
	void	   *v;
	size_t		vlen;
	int			i,
				rc;

	lsm_options_init(&xo);
	xo.exclusive = 1;
	xo.memtable_bytes = 8 << 10;
	CHECK_OK(lsm_open(dir, &xo, &x));
	for (i = 0; i < 300; i++)
	{
		char		k[16];

		sprintf(k, "x%04d", i);
		CHECK_DB_OK(x, lsm_put(x, k, strlen(k), k, strlen(k)));
	}

	lsm_options_init(&o);
	o.lock_timeout_ms = 250;
	memset(&is, 0, sizeof(is));
	o.interrupt = count_interrupt;
	o.interrupt_arg = &is;
	CHECK_OK(lsm_open(dir, &o, &b));
	CHECK_DB_OK(b, lsm_get(b, "x0299", 5, &v, &vlen));
	lsm_free(v);
	t0 = harness_now_ms();
	rc = lsm_put(b, "b", 1, "1", 1);
	dt = harness_now_ms() - t0;
	CHECK_RC(LSM_BUSY, rc);
	CHECK_GE(dt, 200);
	CHECK_LT(dt, 5000);
	is.calls = 0;
	is.stop_at = 2;
	CHECK_RC(LSM_INTERRUPTED, lsm_delete(b, "x0001", 5));
	CHECK_EQ(is.calls, 2);
	is.stop_at = 0;
	CHECK_RC(LSM_BUSY, lsm_flush(b));

	/* a second exclusive open waits for the lock as well */
	xo.lock_timeout_ms = 100;
	rc = lsm_open(dir, &xo, &c);
	CHECK_RC(LSM_BUSY, rc);
	CHECK(c == NULL);

	/* the holder goes on writing; the other handle sees it */
	CHECK_DB_OK(x, lsm_put(x, "x-more", 6, "m", 1));
	CHECK_DB_OK(x, lsm_flush(x));
	CHECK_DB_OK(x, lsm_compact(x));
	CHECK_DB_OK(b, lsm_refresh(b));
	CHECK_DB_OK(b, lsm_get(b, "x-more", 6, &v, &vlen));
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_get(b, "b", 1, &v, &vlen));
	CHECK_DB_OK(b, lsm_get(b, "x0001", 5, &v, &vlen));
	lsm_free(v);

	/* closing the holder frees the lock */
	CHECK_DB_OK(x, lsm_close(x));
	CHECK_DB_OK(b, lsm_put(b, "b", 1, "1", 1));
	CHECK_DB_OK(b, lsm_delete(b, "x0001", 5));
	CHECK_OK(lsm_open(dir, &xo, &c));
	CHECK_DB_OK(c, lsm_get(c, "b", 1, &v, &vlen));
	lsm_free(v);
	CHECK_RC(LSM_NOTFOUND, lsm_get(c, "x0001", 5, &v, &vlen));
	CHECK_RC(LSM_BUSY, lsm_put(b, "b2", 2, "2", 1));
	CHECK_DB_OK(c, lsm_verify(c));
	CHECK_DB_OK(c, lsm_close(c));
	CHECK_DB_OK(b, lsm_close(b));
}

/* What the compacting handle's callback saw of the other handle. */
typedef struct compact_probe
{
	lsm_db	   *other;			/* the second handle */
	intr	   *other_intr;		/* its interrupt state */
	int			calls;
	int			compact_busy_rc;	/* other's lsm_compact, timing out */
	long		compact_busy_ms;
	int			compact_intr_rc;	/* other's lsm_compact, interrupted */
	int			put_rc;			/* other's lsm_put during the compaction */
	long		put_ms;
} compact_probe;

/*
 * Interrupt callback of the compacting handle: on its first call (inside
 * the merge, LOCK.compact held) it exercises the other handle.
 */
static int
probe_interrupt(void *arg)
{
	compact_probe *p = arg;
	long		t0;

	if (p->calls++ > 0)
		return 0;
	t0 = harness_now_ms();
	p->compact_busy_rc = lsm_compact(p->other);
	p->compact_busy_ms = harness_now_ms() - t0;
	p->other_intr->stop_at = 1;
	p->compact_intr_rc = lsm_compact(p->other);
	p->other_intr->stop_at = 0;
	t0 = harness_now_ms();
	p->put_rc = lsm_put(p->other, "during", 6, "compaction", 10);
	p->put_ms = harness_now_ms() - t0;
	return 0;
}

/*
 * Two handles in one process: while one compacts (holding LOCK.compact),
 * the other's lsm_compact waits for it -- LSM_BUSY after its timeout,
 * LSM_INTERRUPTED when its callback asks -- but its commits go through.
 */
TEST(compaction_lock_between_handles)
{
	char	   *dir = harness_tmpdir("compactlock");
	lsm_options o;
	lsm_db	   *a,
			   *b;
	compact_probe probe;
	intr		bint;
	int			i;
	char		k[32];
	void	   *v;
	size_t		vlen;
	lsm_stats	st;

	lsm_options_init(&o);
	o.memtable_bytes = 16 << 10;
	o.file_bytes = 64 << 10;
	o.auto_compact = 0;
	o.l0_compaction_trigger = 2;
	CHECK_OK(lsm_open(dir, &o, &a));
	for (i = 0; i < 6000; i++)
	{
		sprintf(k, "key%06d", (i * 7919) % 6000);
		CHECK_DB_OK(a, lsm_put(a, k, strlen(k), k, strlen(k)));
	}
	CHECK_DB_OK(a, lsm_get_stats(a, &st));
	CHECK_GE(st.level[0].files, 4);

	memset(&bint, 0, sizeof(bint));
	o.lock_timeout_ms = 200;
	o.interrupt = count_interrupt;
	o.interrupt_arg = &bint;
	CHECK_OK(lsm_open(dir, &o, &b));

	memset(&probe, 0, sizeof(probe));
	probe.other = b;
	probe.other_intr = &bint;
	probe.compact_busy_rc = probe.compact_intr_rc = probe.put_rc = 1;
	/* a's interrupt callback is the probe (a handle's options are fixed) */
	CHECK_DB_OK(a, lsm_close(a));
	o.lock_timeout_ms = 10000;
	o.interrupt = probe_interrupt;
	o.interrupt_arg = &probe;
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_DB_OK(a, lsm_compact(a));
	printf("# during a's compaction: b's compact %s after %ld ms, then %s; "
		   "b's put %s in %ld ms\n", lsm_strerror(probe.compact_busy_rc),
		   probe.compact_busy_ms, lsm_strerror(probe.compact_intr_rc),
		   lsm_strerror(probe.put_rc), probe.put_ms);
	CHECK_GE(probe.calls, 1);
	CHECK_RC(LSM_BUSY, probe.compact_busy_rc);
	CHECK_GE(probe.compact_busy_ms, 150);
	CHECK_RC(LSM_INTERRUPTED, probe.compact_intr_rc);
	CHECK_RC(LSM_OK, probe.put_rc);

	/* a installed its compaction after b's commit: both are there */
	CHECK_DB_OK(a, lsm_get(a, "during", 6, &v, &vlen));
	CHECK_MEMEQ(v, vlen, "compaction", 10);
	lsm_free(v);
	CHECK_DB_OK(b, lsm_refresh(b));
	for (i = 0; i < 6000; i += 97)
	{
		sprintf(k, "key%06d", i);
		CHECK_DB_OK(b, lsm_get(b, k, strlen(k), &v, &vlen));
		CHECK_MEMEQ(v, vlen, k, strlen(k));
		lsm_free(v);
	}
	CHECK_DB_OK(b, lsm_get(b, "during", 6, &v, &vlen));
	lsm_free(v);
	CHECK_DB_OK(b, lsm_compact(b));
	CHECK_DB_OK(b, lsm_verify(b));
	CHECK_DB_OK(b, lsm_close(b));
	CHECK_DB_OK(a, lsm_close(a));
}

/*
 * A process waiting for LOCK.compact goes first: an flock has no queue, so
 * automatic compactions (which only try the lock) used to take it in every
 * gap of the waiter's polls and could starve it past its timeout.  While
 * b waits it stamps LOCK's page; an automatic compaction that starts
 * within LSM_COMPACT_WANTED_MS of its last poll leaves the work (level 0
 * unchanged); once the stamp is old, it compacts.
 */
TEST(compaction_waiter_first)
{
	char	   *dir = harness_tmpdir("compactwait");
	lsm_options o;
	lsm_db	   *a,
			   *b;
	lsm_stats	st;
	lsm_err		e;
	char		k[32];
	long		t0;
	int			i,
				l0;

	lsm_options_init(&o);
	o.memtable_bytes = 16 << 10;
	o.auto_compact = 0;
	o.l0_compaction_trigger = 2;
	CHECK_OK(lsm_open(dir, &o, &a));
	for (i = 0; i < 4000; i++)
	{
		sprintf(k, "key%06d", (i * 7919) % 4000);
		CHECK_DB_OK(a, lsm_put(a, k, strlen(k), k, strlen(k)));
	}
	CHECK_DB_OK(a, lsm_get_stats(a, &st));
	l0 = st.level[0].files;
	CHECK_GE(l0, 2);
	o.lock_timeout_ms = 100;
	CHECK_OK(lsm_open(dir, &o, &b));

	/* a holds LOCK.compact; b waits for it, in vain, polling */
	CHECK_DB_OK(a, lsm_lock(a, LSM_LOCK_COMPACTION));
	CHECK_RC(LSM_BUSY, lsm_compact(b));
	t0 = harness_now_ms();
	lsm_unlock(a);
	CHECK(lsm_db_compact_wanted(a));
	lsm_err_clear(&e);
	CHECK_OK(lsm_db_compact(a, false, &e));
	if (harness_now_ms() - t0 < LSM_COMPACT_WANTED_MS)
	{
		CHECK_DB_OK(a, lsm_get_stats(a, &st));
		CHECK_EQ(st.level[0].files, l0);
		CHECK_EQ(st.compactions, 0);
	}
	else
		printf("# the machine stalled %ld ms: the deferral was not checked\n",
			   harness_now_ms() - t0);

	/* the stamp ages out: an automatic compaction compacts again */
	usleep((LSM_COMPACT_WANTED_MS + 20) * 1000);
	CHECK(!lsm_db_compact_wanted(a));
	CHECK_OK(lsm_db_compact(a, false, &e));
	CHECK_DB_OK(a, lsm_get_stats(a, &st));
	CHECK_LT(st.level[0].files, l0);
	CHECK_GE(st.compactions, 1);
	CHECK_DB_OK(b, lsm_close(b));
	CHECK_DB_OK(a, lsm_verify(a));
	CHECK_DB_OK(a, lsm_close(a));
}

/* Expected state of iterator_across_refresh: generation of key i, or -1. */
#define REFRESH_KEYS 2000

/* An iterator over r must show exactly the keys i with gen[i] >= 0. */
static void
check_gen_iter(lsm_iter *it, const int *gen, const char *what)
{
	int			i;

	lsm_iter_seek(it, NULL, 0);
	for (i = 0; i < REFRESH_KEYS; i++)
	{
		char		k[16],
					v[32];
		const void *ik,
				   *iv;
		size_t		ikl,
					ivl;

		if (gen[i] < 0)
			continue;
		sprintf(k, "k%04d", i);
		sprintf(v, "v%d-%d", gen[i], i);
		if (!lsm_iter_valid(it))
			harness_fail(__FILE__, __LINE__, "%s: iterator ended before %s", what, k);
		ik = lsm_iter_key(it, &ikl);
		iv = lsm_iter_value(it, &ivl);
		{
			const void *ek,
					   *ev;
			size_t		ekl,
						evl;

			CHECK_EQ(lsm_iter_entry(it, &ek, &ekl, &ev, &evl), 1);
			CHECK(ek == ik && ekl == ikl && ev == iv && evl == ivl);
		}
		if (ikl != strlen(k) || memcmp(ik, k, ikl) != 0)
			harness_fail(__FILE__, __LINE__, "%s: iterator at %.*s, expected %s",
						 what, (int) ikl, (const char *) ik, k);
		if (ivl != strlen(v) || memcmp(iv, v, ivl) != 0)
			harness_fail(__FILE__, __LINE__, "%s: %s = %.*s, expected %s",
						 what, k, (int) ivl, (const char *) iv, v);
		lsm_iter_next(it);
	}
	CHECK(!lsm_iter_valid(it));
	{
		const void *ek,
				   *ev;
		size_t		ekl,
					evl;

		CHECK_EQ(lsm_iter_entry(it, &ek, &ekl, &ev, &evl), 0);
	}
	CHECK_OK(lsm_iter_status(it));
}

/* Writes generation g of every key i with i % step == phase (or deletes). */
static void
write_gen(lsm_db *db, int *gen, int g, int step, int phase, int del)
{
	int			i;

	for (i = phase; i < REFRESH_KEYS; i += step)
	{
		char		k[16],
					v[32];

		sprintf(k, "k%04d", i);
		if (del)
		{
			CHECK_DB_OK(db, lsm_delete(db, k, strlen(k)));
			gen[i] = -1;
		}
		else
		{
			sprintf(v, "v%d-%d", g, i);
			CHECK_DB_OK(db, lsm_put(db, k, strlen(k), v, strlen(v)));
			gen[i] = g;
		}
	}
}

/*
 * Iterators of a reading handle keep their snapshot across lsm_refresh,
 * whether the refresh loads a new manifest (another handle flushed and
 * compacted) or only replays new log records into the memtable the
 * iterator reads; an iterator opened after the refresh sees the new state.
 */
TEST(iterator_across_refresh)
{
	char	   *dir = harness_tmpdir("refresh");
	lsm_options o = busy_options();
	lsm_options ro = busy_options();
	lsm_db	   *w,
			   *r;
	lsm_iter   *it1,
			   *it2,
			   *it3;
	int			g1[REFRESH_KEYS],
				g2[REFRESH_KEYS],
				g3[REFRESH_KEYS],
				cur[REFRESH_KEYS],
				i;
	lsm_stats	st;
	uint64_t	refreshes;

	for (i = 0; i < REFRESH_KEYS; i++)
		cur[i] = -1;
	o.auto_compact = 0;
	o.memtable_bytes = 256 << 10;	/* flushes only when told to */
	CHECK_OK(lsm_open(dir, &o, &w));
	ro.read_only = 1;
	CHECK_OK(lsm_open(dir, &ro, &r));

	write_gen(w, cur, 1, 1, 0, 0);
	CHECK_DB_OK(w, lsm_flush(w));
	write_gen(w, cur, 2, 3, 1, 0);	/* partly in the memtable */
	CHECK_DB_OK(r, lsm_refresh(r));
	memcpy(g1, cur, sizeof(cur));
	CHECK_DB_OK(r, lsm_iter_open(r, &it1));
	check_gen_iter(it1, g1, "it1 at once");

	/* new manifest: overwrite, delete, flush, compact, then some more */
	write_gen(w, cur, 3, 2, 0, 0);
	write_gen(w, cur, 0, 5, 2, 1);
	CHECK_DB_OK(w, lsm_flush(w));
	CHECK_DB_OK(w, lsm_compact(w));
	write_gen(w, cur, 4, 7, 3, 0);
	CHECK_DB_OK(r, lsm_refresh(r));
	check_gen_iter(it1, g1, "it1 after a refresh that loaded a new manifest");
	memcpy(g2, cur, sizeof(cur));
	CHECK_DB_OK(r, lsm_iter_open(r, &it2));
	check_gen_iter(it2, g2, "it2 at once");

	/* the same log: the refresh replays into the memtable it2 reads */
	write_gen(w, cur, 5, 4, 1, 0);
	write_gen(w, cur, 0, 9, 4, 1);
	CHECK_DB_OK(r, lsm_get_stats(r, &st));
	refreshes = st.refreshes;
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK_DB_OK(r, lsm_get_stats(r, &st));
	CHECK_EQ_U(st.refreshes, refreshes);	/* no new manifest */
	check_gen_iter(it1, g1, "it1 after a replaying refresh");
	check_gen_iter(it2, g2, "it2 after a replaying refresh");
	memcpy(g3, cur, sizeof(cur));
	CHECK_DB_OK(r, lsm_iter_open(r, &it3));
	check_gen_iter(it3, g3, "it3 at once");

	/* and everything moved once more */
	CHECK_DB_OK(w, lsm_flush(w));
	CHECK_DB_OK(w, lsm_compact(w));
	CHECK_DB_OK(r, lsm_refresh(r));
	check_gen_iter(it1, g1, "it1 at the end");
	check_gen_iter(it2, g2, "it2 at the end");
	check_gen_iter(it3, g3, "it3 at the end");
	lsm_iter_close(it1);
	lsm_iter_close(it2);
	lsm_iter_close(it3);
	CHECK_DB_OK(r, lsm_iter_open(r, &it1));
	check_gen_iter(it1, cur, "a new iterator at the end");
	lsm_iter_close(it1);
	CHECK_DB_OK(r, lsm_verify(r));
	CHECK_DB_OK(r, lsm_close(r));
	CHECK_DB_OK(w, lsm_close(w));
}

/* Reads view's parts one by one into an iterator over db, checked as one. */
static void
check_view_parts(lsm_db *db, const void *view, size_t len, const int *gen)
{
	int			nparts = lsm_view_parts(view, len),
				seen = 0,
				p,
				i;

	CHECK_GT(nparts, 0);
	for (p = 0; p < nparts; p++)
	{
		const void *lo,
				   *hi;
		size_t		lolen,
					hilen;
		lsm_iter   *it;

		CHECK_OK(lsm_view_part(view, len, p, &lo, &lolen, &hi, &hilen));
		CHECK((lo == NULL) == (p == 0));
		CHECK((hi == NULL) == (p == nparts - 1));
		CHECK_DB_OK(db, lsm_iter_open_view(db, view, len, &it));
		for (lsm_iter_seek(it, lo, lolen); lsm_iter_valid(it); lsm_iter_next(it))
		{
			size_t		kl;
			const char *k = lsm_iter_key(it, &kl);

			/* keys order as bytes, then by length */
			if (hi != NULL &&
				(memcmp(k, hi, kl < hilen ? kl : hilen) > 0 ||
				 (memcmp(k, hi, kl < hilen ? kl : hilen) == 0 && kl >= hilen)))
				break;
			i = harness_key_num(k, kl, 1);
			while (seen < REFRESH_KEYS && gen[seen] < 0)
				seen++;
			CHECK_EQ(i, seen);	/* every key once, in order */
			seen++;
		}
		CHECK_OK(lsm_iter_status(it));
		lsm_iter_close(it);
	}
	while (seen < REFRESH_KEYS && gen[seen] < 0)
		seen++;
	CHECK_EQ(seen, REFRESH_KEYS);
}

/*
 * Shared views: a handle shares its snapshot; after the store moved on
 * (overwrites, deletes, flushes, a compaction that removed the view's
 * tables from the manifest), another handle in this process and one in
 * another process read exactly the snapshot, whole and range by range.
 * Nothing the view names is removed while it is pinned; after lsm_unshare,
 * or when the sharing process dies, the next compaction's sweep removes
 * it, and the view can no longer be opened.  A view whose tables are
 * already gone cannot be shared.
 */
TEST(shared_view)
{
	char	   *dir = harness_tmpdir("view");
	lsm_options o = busy_options();
	lsm_db	   *w,
			   *a,
			   *c;
	lsm_iter   *it;
	int			g1[REFRESH_KEYS],
				cur[REFRESH_KEYS],
				i;
	void	   *view;
	size_t		len;
	pid_t		pid;
	int			status;

	for (i = 0; i < REFRESH_KEYS; i++)
		cur[i] = -1;
	o.auto_compact = 0;
	o.memtable_bytes = 256 << 10;	/* flushes only when told to */
	o.file_bytes = 4096;		/* many tables, so many ranges */
	CHECK_OK(lsm_open(dir, &o, &w));
	CHECK_OK(lsm_open(dir, &o, &a));

	write_gen(w, cur, 1, 1, 0, 0);
	CHECK_DB_OK(w, lsm_flush(w));
	write_gen(w, cur, 1, 2, 1, 0);
	CHECK_DB_OK(w, lsm_flush(w));
	CHECK_DB_OK(w, lsm_compact(w));	/* level 1 of many tables */
	write_gen(w, cur, 2, 3, 1, 0);	/* partly in the memtable */
	write_gen(w, cur, 0, 7, 2, 1);
	CHECK_DB_OK(a, lsm_refresh(a));
	memcpy(g1, cur, sizeof(cur));
	CHECK_DB_OK(a, lsm_share(a, 8, &view, &len));
	CHECK_GT(lsm_view_parts(view, len), 2);
	CHECK_EQ(lsm_view_parts(view, 3), LSM_INVALID);

	/* the store moves on: every table and the log of the view replaced */
	write_gen(w, cur, 3, 2, 0, 0);
	write_gen(w, cur, 0, 5, 3, 1);
	CHECK_DB_OK(w, lsm_flush(w));
	CHECK_DB_OK(w, lsm_compact(w));
	write_gen(w, cur, 4, 1, 0, 0);
	CHECK_DB_OK(w, lsm_flush(w));
	CHECK_DB_OK(w, lsm_compact(w));
	write_gen(w, cur, 5, 4, 1, 0);

	/* another handle of this process */
	CHECK_OK(lsm_open(dir, &o, &c));
	CHECK_DB_OK(c, lsm_iter_open_view(c, view, len, &it));
	check_gen_iter(it, g1, "a view in another handle");
	lsm_iter_close(it);
	check_view_parts(c, view, len, g1);
	CHECK_DB_OK(c, lsm_iter_open(c, &it));
	check_gen_iter(it, cur, "the store itself");
	lsm_iter_close(it);

	/* another process */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		lsm_db	   *d;

		CHECK_OK(lsm_open(dir, &o, &d));
		CHECK_DB_OK(d, lsm_iter_open_view(d, view, len, &it));
		check_gen_iter(it, g1, "a view in another process");
		lsm_iter_close(it);
		check_view_parts(d, view, len, g1);
		CHECK_OK(lsm_close(d));
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* unpinned, the next sweep removes the view's files */
	CHECK(harness_count_files(dir, ".sst") > harness_tables(w, NULL));
	lsm_unshare(a);
	CHECK_DB_OK(w, lsm_compact(w));
	CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(w, NULL));
	CHECK_EQ(harness_count_files(dir, ".log"), 1);
	CHECK_EQ(harness_count_files(dir, ".mem"), 1);
	CHECK_EQ(lsm_iter_open_view(c, view, len, &it), LSM_CORRUPTION);
	lsm_free(view);

	/* a's snapshot is older than the store's files: it cannot be shared */
	CHECK_EQ(lsm_share(a, 8, &view, &len), LSM_BUSY);
	CHECK_DB_OK(a, lsm_refresh(a));
	CHECK_DB_OK(a, lsm_share(a, 8, &view, &len));
	lsm_unshare(a);
	lsm_free(view);

	/* a process that dies with a view pinned pins nothing */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		lsm_db	   *d;

		CHECK_OK(lsm_open(dir, &o, &d));
		CHECK_DB_OK(d, lsm_share(d, 8, &view, &len));
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	write_gen(w, cur, 6, 1, 0, 0);
	CHECK_DB_OK(w, lsm_flush(w));
	CHECK_DB_OK(w, lsm_compact(w));
	CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(w, NULL));
	CHECK_EQ(harness_count_files(dir, ".log"), 1);
	CHECK_EQ(harness_count_files(dir, ".mem"), 1);

	CHECK_DB_OK(w, lsm_verify(w));
	CHECK_OK(lsm_close(c));
	CHECK_OK(lsm_close(a));
	CHECK_OK(lsm_close(w));
}

/* ---------------------------------------------------------------------- */
/* Group commit: what each handle sees while a commit waits for its sync. */

/* Whether db's reads see key (as of its last refresh). */
static bool
sees(lsm_db *db, const char *key)
{
	void	   *v;
	size_t		n;
	int			rc = lsm_get(db, key, strlen(key), &v, &n);

	CHECK_MSG(rc == LSM_OK || rc == LSM_NOTFOUND, "lsm_get(%s): %s (%s)", key,
			  lsm_strerror(rc), lsm_errmsg(db));
	if (rc == LSM_OK)
		lsm_free(v);
	return rc == LSM_OK;
}

/* Commits a put of key with lsm_write_opt flags; returns its result. */
static int
put_with(lsm_db *db, const char *key, int flags)
{
	lsm_batch  *b = lsm_batch_new();
	int			rc;

	CHECK(b != NULL);
	CHECK_OK(lsm_batch_put(b, key, strlen(key), "v", 1));
	rc = lsm_write_opt(db, b, flags);
	lsm_batch_free(b);
	return rc;
}

static uint64_t
wal_syncs(lsm_db *db)
{
	lsm_stats	st;

	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	return st.wal_syncs;
}

/*
 * Handles a and b write, r reads (read-only).  A commit that asks for a
 * sync is seen by nobody (its own handle included) until a sync covers
 * it, except under lsm_lock; a commit without sync behind it
 * waits for that sync (and makes it, if nobody else does); a writer that
 * dies after its append leaves its record to the next sync; a failed
 * append leaves nothing waiting; a flush makes what waits durable.
 */
TEST(group_commit_visibility)
{
	char	   *dir = harness_tmpdir("group");
	lsm_options o = busy_options();
	lsm_options ro = busy_options();
	lsm_fault	f;
	lsm_db	   *a,
			   *b,
			   *r;

	o.auto_compact = 0;
	o.memtable_bytes = 1 << 20;
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_OK(lsm_open(dir, &o, &b));
	ro.read_only = 1;
	CHECK_OK(lsm_open(dir, &ro, &r));

	/* no sync asked for, none waited for: visible at once */
	CHECK_DB_OK(a, put_with(a, "k1", LSM_WRITE_NOSYNC));
	CHECK_DB_OK(b, lsm_refresh(b));
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(sees(b, "k1") && sees(r, "k1"));
	CHECK_EQ_U(wal_syncs(a), 0);

	/* appended, its sync not yet waited for */
	CHECK_DB_OK(a, put_with(a, "k2", LSM_WRITE_SYNC | LSM_WRITE_DEFER));
	CHECK(sees(a, "k1") && !sees(a, "k2"));
	CHECK_DB_OK(b, lsm_refresh(b));
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(!sees(b, "k2") && !sees(r, "k2"));
	CHECK_DB_OK(b, lsm_lock(b, 0));	/* a commit's checks see it */
	CHECK(sees(b, "k2"));
	lsm_unlock(b);
	CHECK(!sees(b, "k2"));

	/* a commit without sync behind it syncs it, and both become visible */
	CHECK_DB_OK(b, put_with(b, "k3", LSM_WRITE_NOSYNC));
	CHECK_EQ_U(wal_syncs(b), 1);
	CHECK(sees(b, "k2") && sees(b, "k3"));
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(sees(r, "k2") && sees(r, "k3"));
	CHECK(!sees(a, "k2"));
	CHECK_DB_OK(a, lsm_write_wait(a));
	CHECK_EQ_U(wal_syncs(a), 0);	/* b's sync covered it */
	CHECK(sees(a, "k2"));
	CHECK_DB_OK(a, lsm_refresh(a));
	CHECK(sees(a, "k3"));

	/* a writer that goes away after its append: the next sync covers it */
	CHECK_DB_OK(a, put_with(a, "k4", LSM_WRITE_SYNC | LSM_WRITE_DEFER));
	CHECK_DB_OK(a, lsm_close(a));
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(!sees(r, "k4"));
	CHECK_DB_OK(b, put_with(b, "k5", LSM_WRITE_SYNC));
	CHECK_EQ_U(wal_syncs(b), 2);
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(sees(r, "k4") && sees(r, "k5"));

	/* a failed append leaves nothing to wait for */
	memset(&f, 0, sizeof(f));
	f.fail_write_at = 1;
	lsm_fault_install(&f);
	CHECK_RC(LSM_IOERR, put_with(b, "k6", LSM_WRITE_SYNC));
	lsm_fault_install(NULL);
	CHECK_DB_OK(b, put_with(b, "k7", LSM_WRITE_NOSYNC));
	CHECK_EQ_U(wal_syncs(b), 2);
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(!sees(r, "k6") && sees(r, "k7"));

	/* a flush makes what waits durable: no sync left to do */
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_DB_OK(a, put_with(a, "k8", LSM_WRITE_SYNC | LSM_WRITE_DEFER));
	CHECK_DB_OK(b, lsm_flush(b));
	CHECK_DB_OK(r, lsm_refresh(r));
	CHECK(sees(r, "k8"));
	CHECK_DB_OK(a, lsm_write_wait(a));
	CHECK_EQ_U(wal_syncs(a), 0);
	CHECK(sees(a, "k8"));

	CHECK_DB_OK(r, lsm_verify(r));
	CHECK_DB_OK(r, lsm_close(r));
	CHECK_DB_OK(b, lsm_close(b));
	CHECK_DB_OK(a, lsm_close(a));
}

/*
 * Group commit under SIGKILL: GK_WRITERS processes commit batches (two of
 * three synced) while the parent kills one of them at random moments and
 * starts it again; a reader checks all along that every acknowledged
 * batch is visible after a refresh, and that a batch is all or nothing.
 * Kills land anywhere: before, during or after an append, while waiting
 * for LOCK.sync, in the middle of a sync as leader.  At the end every
 * acknowledged batch is in the store.
 */
#define GK_WRITERS 4
#define GK_KEYS 3

typedef struct gk_shared
{
	uint64_t	acked[GK_WRITERS];	/* last batch whose commit returned */
	int			stop;
	uint64_t	reader_loops;
} gk_shared;

static size_t
gk_key(char *buf, int w, uint64_t n, int i)
{
	return (size_t) sprintf(buf, "g%d-%08" PRIu64 "-%d", w, n, i);
}

static void
gk_writer(const char *dir, gk_shared *sh, int w)
{
	lsm_options o = busy_options();
	lsm_db	   *db;
	lsm_batch  *b = lsm_batch_new();
	uint64_t	n;
	char		k[48];
	int			i;

	o.memtable_bytes = 64 << 10;
	CHECK_OK(lsm_open(dir, &o, &db));
	for (n = sh->acked[w] + 1; !sh->stop; n++)
	{
		lsm_batch_clear(b);
		for (i = 0; i < GK_KEYS; i++)
		{
			size_t		kl = gk_key(k, w, n, i);

			CHECK_OK(lsm_batch_put(b, k, kl, k, kl));	/* value = key */
		}
		CHECK_DB_OK(db, lsm_write_opt(db, b, n % 3 == 0 ? LSM_WRITE_NOSYNC :
									  LSM_WRITE_SYNC));
		__atomic_store_n(&sh->acked[w], n, __ATOMIC_SEQ_CST);
	}
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_close(db));
}

/* Checks that batch n of writer w is wholly there (or, if !must, absent). */
static bool
gk_check_batch(lsm_db *db, int w, uint64_t n, bool must)
{
	char		k[48];
	int			i,
				found = 0;

	for (i = 0; i < GK_KEYS; i++)
	{
		void	   *v;
		size_t		vl,
					kl = gk_key(k, w, n, i);
		int			rc = lsm_get(db, k, kl, &v, &vl);

		CHECK_MSG(rc == LSM_OK || rc == LSM_NOTFOUND, "get %s: %s (%s)", k,
				  lsm_strerror(rc), lsm_errmsg(db));
		if (rc == LSM_OK)
		{
			CHECK_MEMEQ(v, vl, k, kl);
			lsm_free(v);
			found++;
		}
	}
	CHECK_MSG(found == 0 || found == GK_KEYS,
			  "batch %" PRIu64 " of writer %d is partly visible (%d of %d)",
			  n, w, found, GK_KEYS);
	CHECK_MSG(!must || found == GK_KEYS,
			  "acknowledged batch %" PRIu64 " of writer %d is not visible",
			  n, w);
	return found == GK_KEYS;
}

static void
gk_reader(const char *dir, gk_shared *sh, uint64_t seed)
{
	lsm_options o = busy_options();
	lsm_db	   *db;
	uint64_t	rng = seed;

	o.memtable_bytes = 64 << 10;
	CHECK_OK(lsm_open(dir, &o, &db));
	while (!sh->stop)
	{
		uint64_t	acked[GK_WRITERS];
		int			w;

		for (w = 0; w < GK_WRITERS; w++)
			acked[w] = __atomic_load_n(&sh->acked[w], __ATOMIC_SEQ_CST);
		CHECK_DB_OK(db, lsm_refresh(db));
		for (w = 0; w < GK_WRITERS; w++)
		{
			if (acked[w] == 0)
				continue;
			(void) gk_check_batch(db, w, acked[w], true);
			(void) gk_check_batch(db, w, 1 + harness_rand64(&rng) % acked[w],
								  true);
			(void) gk_check_batch(db, w, acked[w] + 1, false);
		}
		sh->reader_loops++;
	}
	CHECK_DB_OK(db, lsm_close(db));
}

TEST(group_commit_kills)
{
	char	   *dir = harness_tmpdir("gkill");
	gk_shared  *sh = mmap(NULL, sizeof(gk_shared), PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t		writers[GK_WRITERS],
				reader[1];
	uint64_t	rng = harness_seed();
	int			nreader = 0,
				kills = 0,
				w,
				bad;
	long		end = harness_now_ms() + 6000;
	lsm_options o = busy_options();
	lsm_db	   *db;
	lsm_stats	st;
	uint64_t	n,
				total = 0;

	CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	o.memtable_bytes = 64 << 10;
	CHECK_OK(lsm_open(dir, &o, &db));	/* create it before the others */
	CHECK_DB_OK(db, lsm_close(db));
	for (w = 0; w < GK_WRITERS; w++)
	{
		int			np = w;

		SPAWN(writers, np, gk_writer(dir, sh, w));
	}
	SPAWN(reader, nreader, gk_reader(dir, sh, rng));
	while (harness_now_ms() < end)
	{
		usleep(20000 + harness_rand64(&rng) % 80000);
		w = (int) (harness_rand64(&rng) % GK_WRITERS);
		kill(writers[w], SIGKILL);
		(void) harness_wait_killed_or_ok(writers[w]);
		kills++;
		{
			int			np = w;

			SPAWN(writers, np, gk_writer(dir, sh, w));
		}
	}
	sh->stop = 1;
	bad = wait_all(writers, GK_WRITERS, harness_now_ms() + 60000);
	bad += wait_all(reader, 1, harness_now_ms() + 60000);
	CHECK_EQ(bad, 0);

	CHECK_OK(lsm_open(dir, &o, &db));
	for (w = 0; w < GK_WRITERS; w++)
	{
		for (n = 1; n <= sh->acked[w]; n++)
			(void) gk_check_batch(db, w, n, true);
		total += sh->acked[w];
	}
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	printf("# %d writers, %" PRIu64 " batches acknowledged, %d kills, "
		   "reader loops %" PRIu64 "\n", GK_WRITERS, total, kills,
		   sh->reader_loops);
	CHECK_DB_OK(db, lsm_close(db));
	munmap(sh, sizeof(*sh));
}

/*
 * The shared memtable (docs/architecture.md): handles of one store read the
 * memtable a writer applied instead of replaying the log, and a handle
 * that finds no valid file (removed, from another boot, replaced, a log
 * changed behind the store's back) replays the log and a writer rebuilds
 * the file.
 */
static void
sm_put_range(lsm_db *db, int from, int to)
{
	char		k[32];
	int			i;

	for (i = from; i < to; i++)
	{
		int			kl = sprintf(k, "sm-%06d", i);

		CHECK_DB_OK(db, lsm_put(db, k, (size_t) kl, k, (size_t) kl));
	}
}

static void
sm_check_range(lsm_db *db, int from, int to)
{
	char		k[32];
	int			i;

	for (i = from; i < to; i++)
	{
		int			kl = sprintf(k, "sm-%06d", i);
		void	   *v;
		size_t		vl;
		int			rc = lsm_get(db, k, (size_t) kl, &v, &vl);

		CHECK_MSG(rc == LSM_OK, "get %s: %s", k, lsm_strerror(rc));
		if (rc == LSM_OK)
		{
			CHECK_MEMEQ(v, vl, k, (size_t) kl);
			lsm_free(v);
		}
	}
}

/* The path of the shared memtable file of the store's current log. */
static void
sm_memfile_path(const char *dir, char *buf, size_t n)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	CHECK(d != NULL);
	buf[0] = '\0';
	while ((de = readdir(d)) != NULL)
	{
		size_t		l = strlen(de->d_name);

		if (l > 4 && strcmp(de->d_name + l - 4, ".mem") == 0)
			snprintf(buf, n, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	CHECK_MSG(buf[0] != '\0', "no shared memtable file in %s", dir);
}

TEST(shared_memtable)
{
	char	   *dir = harness_tmpdir("shmem");
	lsm_options o = busy_options();
	lsm_db	   *a,
			   *b,
			   *c;
	lsm_stats	st;
	char		path[4096];
	uint64_t	zero = 0;
	int			fd;

	o.memtable_bytes = 1 << 20;
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_OK(lsm_open(dir, &o, &b));
	sm_put_range(a, 0, 200);
	CHECK_DB_OK(b, lsm_refresh(b));
	sm_check_range(b, 0, 200);
	CHECK_DB_OK(b, lsm_get_stats(b, &st));
	CHECK_EQ_U(st.memtable_shared, 1);
	CHECK_EQ_U(st.wal_records_replayed, 0);
	CHECK_EQ_U(st.memtable_entries, 200);

	/* a file from another boot: replayed by readers, rebuilt by a writer */
	sm_memfile_path(dir, path, sizeof(path));
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, &zero, 8, offsetof(lsm_memfile_header, boot)) == 8);
	close(fd);
	CHECK_OK(lsm_open(dir, &o, &c));
	sm_check_range(c, 0, 200);
	CHECK_DB_OK(c, lsm_get_stats(c, &st));
	CHECK_EQ_U(st.memtable_shared, 0);
	CHECK_EQ_U(st.wal_records_replayed, 200);
	sm_put_range(c, 200, 300);	/* its catch-up rebuilds the file */
	CHECK_DB_OK(c, lsm_get_stats(c, &st));
	CHECK_EQ_U(st.memtable_shared, 1);
	CHECK_EQ_U(st.memtable_rebuilds, 1);
	CHECK_DB_OK(b, lsm_refresh(b));
	sm_check_range(b, 0, 300);
	CHECK_DB_OK(b, lsm_get_stats(b, &st));
	CHECK_EQ_U(st.memtable_shared, 1);	/* mapped the new one */
	CHECK_EQ_U(st.wal_records_replayed, 0);
	sm_put_range(a, 300, 400);
	CHECK_DB_OK(c, lsm_refresh(c));
	sm_check_range(c, 0, 400);

	/* removed: the next writer builds it again */
	sm_memfile_path(dir, path, sizeof(path));
	CHECK(unlink(path) == 0);
	CHECK_DB_OK(c, lsm_close(c));
	CHECK_DB_OK(b, lsm_close(b));
	CHECK_DB_OK(a, lsm_close(a));
	CHECK_OK(lsm_open(dir, &o, &a));
	sm_check_range(a, 0, 400);
	sm_put_range(a, 400, 401);
	CHECK_DB_OK(a, lsm_get_stats(a, &st));
	CHECK_EQ_U(st.memtable_shared, 1);
	CHECK_EQ_U(st.memtable_entries, 401);

	/* the log changed in place behind the store's back: not trusted */
	CHECK_DB_OK(a, lsm_close(a));
	{
		char		logp[4096];
		size_t		l;

		snprintf(logp, sizeof(logp), "%s", path);
		l = strlen(logp);
		memcpy(logp + l - 4, ".log", 4);
		CHECK(truncate(logp, 0) == 0);
	}
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_DB_OK(a, lsm_get_stats(a, &st));
	CHECK_EQ_U(st.memtable_entries, 0);
	CHECK_DB_OK(a, lsm_close(a));

	/* a batch larger than the file has room for */
	o.memtable_bytes = 16 << 10;
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_OK(lsm_open(dir, &o, &b));
	{
		lsm_batch  *big = lsm_batch_new();
		char		k[32];
		static char val[4096];
		int			i;

		memset(val, 'v', sizeof(val));
		for (i = 0; i < 600; i++)
		{
			int			kl = sprintf(k, "big-%06d", i);

			CHECK_OK(lsm_batch_put(big, k, (size_t) kl, val, sizeof(val)));
		}
		CHECK_DB_OK(a, lsm_write(a, big));
		lsm_batch_free(big);
	}
	CHECK_DB_OK(b, lsm_refresh(b));
	{
		void	   *v;
		size_t		vl;

		CHECK_DB_OK(b, lsm_get(b, "big-000599", 10, &v, &vl));
		CHECK_EQ_U(vl, 4096);
		lsm_free(v);
	}
	sm_put_range(b, 0, 10);
	CHECK_DB_OK(a, lsm_refresh(a));
	sm_check_range(a, 0, 10);
	CHECK_DB_OK(a, lsm_verify(a));
	CHECK_DB_OK(b, lsm_close(b));
	CHECK_DB_OK(a, lsm_close(a));
}

/*
 * A writer killed at every step of applying a batch to the shared
 * memtable and of publishing it (crash points of env.h): a reader that
 * stays open never sees part of a batch and sees every acknowledged one;
 * the next writer applies or rebuilds, and nothing acknowledged is lost.
 */
#define KP_BATCHES 3
#define KP_KEYS 4

typedef struct kp_shared
{
	uint64_t	acked;			/* last batch whose commit returned */
} kp_shared;

static void
kp_writer(const char *dir, kp_shared *sh, long kill_at)
{
	lsm_options o = busy_options();
	lsm_fault	f;
	lsm_db	   *db;
	lsm_batch  *b = lsm_batch_new();
	uint64_t	n,
				first = sh->acked + 1;
	char		k[48];
	int			i;

	o.memtable_bytes = 64 << 10;
	CHECK_OK(lsm_open(dir, &o, &db));
	memset(&f, 0, sizeof(f));
	f.kill_at = kill_at;
	lsm_fault_install(&f);
	for (n = first; n < first + KP_BATCHES; n++)
	{
		lsm_batch_clear(b);
		for (i = 0; i < KP_KEYS; i++)
		{
			size_t		kl = gk_key(k, 0, n, i);

			CHECK_OK(lsm_batch_put(b, k, kl, k, kl));
		}
		CHECK_DB_OK(db, lsm_write_opt(db, b, n % 2 ? LSM_WRITE_SYNC :
									  LSM_WRITE_NOSYNC));
		__atomic_store_n(&sh->acked, n, __ATOMIC_SEQ_CST);
	}
	lsm_fault_install(NULL);
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_close(db));
}

/* Batch n (of writer 0, KP_KEYS keys): all there (or, if !must, none). */
static bool
kp_check(lsm_db *db, uint64_t n, bool must)
{
	char		k[48];
	int			i,
				found = 0;

	for (i = 0; i < KP_KEYS; i++)
	{
		void	   *v;
		size_t		vl,
					kl = gk_key(k, 0, n, i);
		int			rc = lsm_get(db, k, kl, &v, &vl);

		CHECK(rc == LSM_OK || rc == LSM_NOTFOUND);
		if (rc == LSM_OK)
		{
			lsm_free(v);
			found++;
		}
	}
	CHECK_MSG(found == 0 || found == KP_KEYS,
			  "batch %" PRIu64 " partly visible (%d of %d)", n, found, KP_KEYS);
	CHECK_MSG(!must || found == KP_KEYS,
			  "acknowledged batch %" PRIu64 " not visible", n);
	return found == KP_KEYS;
}

TEST(shared_memtable_kill_points)
{
	char	   *dir = harness_tmpdir("shkill");
	kp_shared  *sh = mmap(NULL, sizeof(kp_shared), PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lsm_options o = busy_options();
	lsm_db	   *reader,
			   *db;
	lsm_stats	st;
	uint64_t	n,
				rebuilds = 0;
	long		at;
	int			kills = 0;

	CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	o.memtable_bytes = 64 << 10;
	CHECK_OK(lsm_open(dir, &o, &reader));
	for (at = 1;; at++)
	{
		pid_t		pids[1];
		int			np = 0,
					status;
		uint64_t	before = sh->acked;

		SPAWN(pids, np, kp_writer(dir, sh, at));
		status = harness_wait_killed_or_ok(pids[0]);
		/* the open reader: whole batches, every acknowledged one */
		CHECK_DB_OK(reader, lsm_refresh(reader));
		for (n = 1; n <= sh->acked; n++)
			(void) kp_check(reader, n, true);
		(void) kp_check(reader, sh->acked + 1, false);
		if (!WIFSIGNALED(status))
			break;
		kills++;
		CHECK_LE(sh->acked, before + KP_BATCHES);
		/* the next writer repairs; the reader then sees everything */
		CHECK_OK(lsm_open(dir, &o, &db));
		{
			char		k[48];
			size_t		kl = (size_t) sprintf(k, "after-%ld", at);

			CHECK_DB_OK(db, lsm_put(db, k, kl, k, kl));
		}
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		CHECK_EQ_U(st.memtable_shared, 1);
		rebuilds += st.memtable_rebuilds;
		CHECK_DB_OK(db, lsm_close(db));
		CHECK_DB_OK(reader, lsm_refresh(reader));
		for (n = 1; n <= sh->acked; n++)
			(void) kp_check(reader, n, true);
		CHECK(at < 1000);
	}
	CHECK_DB_OK(reader, lsm_get_stats(reader, &st));
	rebuilds += st.memtable_rebuilds;	/* a reader repairs when it can */
	CHECK_GT(kills, 0);
	CHECK_GT(rebuilds, 0);
	printf("# %d kill points, %" PRIu64 " batches acknowledged, %" PRIu64
		   " rebuilds; the reader replayed %" PRIu64 " records\n",
		   kills, sh->acked, rebuilds, st.wal_records_replayed);
	CHECK_DB_OK(reader, lsm_verify(reader));
	CHECK_DB_OK(reader, lsm_close(reader));
	munmap(sh, sizeof(*sh));
}

/*
 * A flush outside the write lock ("flushes outside the write lock" in
 * docs/architecture.md) while another handle writes: handle a fills the
 * memtable and flushes; at every crash point during the flush, handle b
 * tries to commit batches (with no wait for the write lock, so it commits
 * only while a builds its table, outside the lock).  The process is
 * killed at every crash point in turn, those of b's commits included.
 * Every acknowledged batch stays, none is partly visible, the store opens
 * (a copy of the log's last records that a kill left behind is not taken
 * for a log newer than the manifest), and once a compaction has swept,
 * one log is left.
 */
typedef struct fo_shared
{
	uint64_t	acked;			/* last batch whose commit returned */
	uint64_t	copied;			/* flush_copied of the run not killed */
} fo_shared;

typedef struct fo_writer
{
	lsm_db	   *b;
	fo_shared  *sh;
	bool		busy;
} fo_writer;

/* Commits batch sh->acked + 1 through db; whether it did. */
static bool
fo_commit(lsm_db *db, fo_shared *sh)
{
	lsm_batch  *b = lsm_batch_new();
	uint64_t	n = sh->acked + 1;
	char		k[48];
	int			i,
				rc;

	CHECK(b != NULL);
	for (i = 0; i < KP_KEYS; i++)
	{
		size_t		kl = gk_key(k, 0, n, i);

		CHECK_OK(lsm_batch_put(b, k, kl, k, kl));
	}
	rc = lsm_write_opt(db, b, n % 2 ? LSM_WRITE_SYNC : LSM_WRITE_NOSYNC);
	lsm_batch_free(b);
	CHECK_MSG(rc == LSM_OK || rc == LSM_BUSY, "commit: %s", lsm_errmsg(db));
	if (rc == LSM_OK)
		__atomic_store_n(&sh->acked, n, __ATOMIC_SEQ_CST);
	return rc == LSM_OK;
}

/* lsm_fault's at_crash_point: b commits up to three batches */
static void
fo_hook(void *arg)
{
	fo_writer  *w = arg;
	int			i;

	if (w->busy)
		return;					/* the crash points of b's own commits */
	w->busy = true;
	for (i = 0; i < 3 && fo_commit(w->b, w->sh); i++)
		;
	w->busy = false;
}

static void
fo_child(const char *dir, fo_shared *sh, long kill_at)
{
	lsm_options o = busy_options();
	fo_writer	w;
	lsm_fault	f;
	lsm_stats	st;
	lsm_db	   *a;
	int			i;

	o.memtable_bytes = 1 << 20;	/* flushed by lsm_flush only */
	CHECK_OK(lsm_open(dir, &o, &a));
	o.lock_timeout_ms = 0;
	CHECK_OK(lsm_open(dir, &o, &w.b));
	w.sh = sh;
	w.busy = false;
	for (i = 0; i < 8; i++)
		CHECK(fo_commit(a, sh));
	memset(&f, 0, sizeof(f));
	f.kill_at = kill_at;
	f.at_crash_point = fo_hook;
	f.at_crash_point_arg = &w;
	lsm_fault_install(&f);
	CHECK_DB_OK(a, lsm_flush(a));
	lsm_fault_install(NULL);
	CHECK_DB_OK(a, lsm_get_stats(a, &st));
	sh->copied = st.flush_copied;
	CHECK_DB_OK(w.b, lsm_close(w.b));
	CHECK_DB_OK(a, lsm_close(a));
}

TEST(flush_outside_kill_points)
{
	char	   *dir = harness_tmpdir("fokill");
	fo_shared  *sh = mmap(NULL, sizeof(fo_shared), PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lsm_options o = busy_options();
	lsm_db	   *db;
	uint64_t	n;
	long		at;
	int			kills = 0;

	CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	o.memtable_bytes = 1 << 20;
	for (at = 1;; at++)
	{
		pid_t		pids[1];
		int			np = 0,
					status;

		SPAWN(pids, np, fo_child(dir, sh, at));
		status = harness_wait_killed_or_ok(pids[0]);
		CHECK_OK(lsm_open(dir, &o, &db));
		for (n = 1; n <= sh->acked; n++)
			(void) kp_check(db, n, true);
		/* a batch whose commit was killed: whole or not at all */
		if (kp_check(db, sh->acked + 1, false))
			sh->acked++;
		CHECK_DB_OK(db, lsm_verify(db));
		CHECK_DB_OK(db, lsm_close(db));
		if (!WIFSIGNALED(status))
			break;
		kills++;
		CHECK(at < 1000);
	}
	CHECK_GT(kills, 3);
	CHECK_GT(sh->copied, 0);
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_EQ(harness_count_files(dir, ".log"), 1);
	CHECK_EQ(harness_count_files(dir, ".mem"), 1);
	printf("# %d kill points, %" PRIu64 " batches acknowledged, %" PRIu64
		   " records copied by the last flush\n", kills, sh->acked,
		   sh->copied);
	CHECK_DB_OK(db, lsm_close(db));
	munmap(sh, sizeof(*sh));
}

/*
 * A flush killed at every crash point, among them the one between the
 * MANIFEST switch and LOCK's page naming the new inode (which lets
 * catch-ups skip the stat of MANIFEST): a reader that stays open sees, after
 * a refresh, the same tables and rows as a handle opened afterwards.
 */
static void
ms_flusher(const char *dir, long at)
{
	lsm_options o = busy_options();
	lsm_fault	f;
	lsm_db	   *db;
	char		k[32];
	size_t		kl = (size_t) sprintf(k, "m-%06ld", at);

	CHECK_OK(lsm_open(dir, &o, &db));
	memset(&f, 0, sizeof(f));
	f.kill_at = at;
	lsm_fault_install(&f);
	CHECK_DB_OK(db, lsm_put(db, k, kl, k, kl));
	CHECK_DB_OK(db, lsm_flush(db));
	lsm_fault_install(NULL);
	CHECK_DB_OK(db, lsm_close(db));
}

/* Same number of SSTables, and key m-<at> in both or in neither. */
static void
ms_same_view(lsm_db *a, lsm_db *b, long at)
{
	lsm_stats	sa,
				sb;
	char		k[32];
	size_t		kl = (size_t) sprintf(k, "m-%06ld", at);
	void	   *v;
	size_t		vl;
	int			ra,
				rb,
				l,
				fa = 0,
				fb = 0;

	CHECK_DB_OK(a, lsm_get_stats(a, &sa));
	CHECK_DB_OK(b, lsm_get_stats(b, &sb));
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		fa += sa.level[l].files;
		fb += sb.level[l].files;
	}
	CHECK_MSG(fa == fb, "kill point %ld: the open reader has %d tables, a new handle %d",
			  at, fa, fb);
	ra = lsm_get(a, k, kl, &v, &vl);
	if (ra == LSM_OK)
		lsm_free(v);
	rb = lsm_get(b, k, kl, &v, &vl);
	if (rb == LSM_OK)
		lsm_free(v);
	CHECK_MSG(ra == rb, "kill point %ld: the open reader %s the key, a new handle %s",
			  at, lsm_strerror(ra), lsm_strerror(rb));
}

TEST(manifest_switch_kill_points)
{
	char	   *dir = harness_tmpdir("mskill");
	lsm_options o = busy_options();
	lsm_db	   *reader,
			   *db;
	long		at;
	int			kills = 0;

	CHECK_OK(lsm_open(dir, &o, &reader));
	for (at = 1;; at++)
	{
		pid_t		pids[1];
		int			np = 0,
					status;

		SPAWN(pids, np, ms_flusher(dir, at));
		status = harness_wait_killed_or_ok(pids[0]);
		CHECK_DB_OK(reader, lsm_refresh(reader));
		CHECK_OK(lsm_open(dir, &o, &db));
		ms_same_view(reader, db, at);
		/* and once a writer has been through (it evens the generation) */
		{
			char		k[32];
			size_t		kl = (size_t) sprintf(k, "w-%06ld", at);

			CHECK_DB_OK(db, lsm_put(db, k, kl, k, kl));
		}
		CHECK_DB_OK(reader, lsm_refresh(reader));
		ms_same_view(reader, db, at);
		CHECK_DB_OK(db, lsm_close(db));
		if (!WIFSIGNALED(status))
			break;
		kills++;
		CHECK(at < 1000);
	}
	CHECK_GT(kills, 3);
	printf("# %d kill points\n", kills);
	CHECK_DB_OK(reader, lsm_verify(reader));
	CHECK_DB_OK(reader, lsm_close(reader));
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(writers_readers_compactor);
	RUN(shared_memtable);
	RUN(shared_memtable_kill_points);
	RUN(flush_outside_kill_points);
	RUN(manifest_switch_kill_points);
	RUN(concurrent_create);
	RUN(iterator_across_refresh);
	RUN(write_lock_busy_and_interrupted);
	RUN(write_lock_held_in_process);
	RUN(lock_waiter_killed);
	RUN(exclusive_handle_holds_lock);
	RUN(exclusive_memtable_private);
	RUN(compaction_lock_between_handles);
	RUN(compaction_waiter_first);
	RUN(shared_view);
	RUN(group_commit_visibility);
	RUN(group_commit_kills);
	return harness_done();
}

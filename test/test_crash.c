/*
 * test_crash.c
 *		Crash tests: a writer process is killed with SIGKILL at a random
 *		moment, many times over, and every acknowledged batch must survive
 *		while no batch is ever partly visible.
 *
 * In each round a child opens the store (recovering from the previous
 * kill) and commits batches n = last + 1, last + 2, ... in a loop.  Batch n
 *	- puts k(n) keys "b<n>-<j>" (1 <= k(n) <= 6), each a row ("k<j>", n,
 *	  filler),
 *	- sets "last" to n and "hot<n mod 7>" to n,
 *	- deletes every key of batch n - KEEP,
 * and after lsm_write returns, the child publishes n in shared memory (its
 * acknowledgement).  The memtable is 4-16 KiB, so the child flushes every
 * few dozen batches and compacts after most flushes (it also calls
 * lsm_flush and lsm_compact itself now and then): the kill lands in WAL
 * appends, flushes, manifest switches and compactions alike.
 *
 * After each kill the parent opens the store (read-only first, then as a
 * writer) and checks, with L = "last" and A = the last acknowledgement:
 *	- A <= L <= A + 1 (acknowledged batches survive; at most the one batch
 *	  in flight at the kill is there besides);
 *	- a full scan holds exactly the keys of batches L - KEEP + 1 .. L, each
 *	  complete and with its value, "last" and the right "hot" keys: no
 *	  batch is partly visible, no deleted batch comes back, nothing past L;
 *	- point gets and a value search agree;
 *	- lsm_verify passes.
 * The next round continues on the same store.
 *
 * Variants: sync = 1; sync = 0 (SIGKILL leaves the page cache intact, so
 * acknowledged batches must survive without fsync too); and sync = 0 with a
 * compactor process killed as well (before or after the writer) and a
 * reader process that checks the same invariants after every lsm_refresh
 * while the others run and die.  The seed (harness_seed) decides the kill
 * delays and option choices; the kill moments themselves depend on timing,
 * so a failing run is not exactly repeatable.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

#define KEEP 300				/* batches kept live; older ones deleted */
#define MAX_KEYS 6
#define HOT 7

/* Shared between the parent and the writer child. */
typedef struct shared
{
	uint64_t	acked;			/* last batch whose lsm_write returned */
	uint64_t	flushes;		/* the child's explicit flushes ... */
	uint64_t	compactions;	/* ... and compactions */
	int			stop_reader;	/* set by the parent to end the reader */
	uint64_t	reader_loops;
	uint64_t	compactor_loops;
} shared;

/* Number of keys of batch n. */
static int
batch_keys(uint64_t n)
{
	uint64_t	h = n * UINT64_C(0x9e3779b97f4a7c15);

	return 1 + (int) ((h >> 33) % MAX_KEYS);
}

/* Key j of batch n, "b<n>-<j>"; returns its length. */
static size_t
bkey(char *buf, uint64_t n, int j)
{
	return (size_t) sprintf(buf, "b%08" PRIu64 "-%d", n, j);
}

/* The value of key j of batch n, as an lsm_malloc'ed row. */
static void *
bvalue(uint64_t n, int j, size_t *len)
{
	char		f0[8],
				f1[24];
	uint8_t		fill[128];
	lsm_field	f[3];
	void	   *row;
	size_t		flen = (size_t) ((n * 13 + (uint64_t) j * 29) % 120),
				i;

	for (i = 0; i < flen; i++)
		fill[i] = (uint8_t) (n + i * 3 + (uint64_t) j);
	memset(f, 0, sizeof(f));
	f[0].data = f0;
	f[0].len = (size_t) sprintf(f0, "k%d", j);
	f[1].data = f1;
	f[1].len = (size_t) sprintf(f1, "%" PRIu64, n);
	f[2].data = fill;
	f[2].len = flen;
	CHECK_OK(lsm_row_encode(f, 3, &row, len));
	return row;
}

/* Fills b with batch n. */
static void
make_batch(lsm_batch *b, uint64_t n)
{
	char		k[48],
				num[24];
	size_t		klen,
				vlen;
	int			j;

	lsm_batch_clear(b);
	for (j = 0; j < batch_keys(n); j++)
	{
		void	   *v = bvalue(n, j, &vlen);

		klen = bkey(k, n, j);
		CHECK_OK(lsm_batch_put(b, k, klen, v, vlen));
		lsm_free(v);
	}
	sprintf(num, "%" PRIu64, n);
	CHECK_OK(lsm_batch_put(b, "last", 4, num, strlen(num)));
	sprintf(k, "hot%d", (int) (n % HOT));
	CHECK_OK(lsm_batch_put(b, k, strlen(k), num, strlen(num)));
	if (n > KEEP)
		for (j = 0; j < batch_keys(n - KEEP); j++)
		{
			klen = bkey(k, n - KEEP, j);
			CHECK_OK(lsm_batch_delete(b, k, klen));
		}
}

/* Options of one round: sync as asked, a small random memtable. */
static lsm_options
round_options(int sync, uint64_t *rng)
{
	lsm_options o;

	lsm_options_init(&o);
	o.sync = sync;
	o.memtable_bytes = (size_t) (4 + harness_rand64(rng) % 13) << 10;
	o.file_bytes = 4 << 10;
	o.level_ratio = 2;
	o.l0_compaction_trigger = 2 + (int) (harness_rand64(rng) % 3);
	o.block_bytes = 1024;
	o.value_filter_bits = 1 << 14;
	o.hierarchy_order = 2;
	o.lock_timeout_ms = 10000;
	return o;
}

/* The writer child: batches from n on, forever (until killed). */
static void
writer_main(const char *dir, const lsm_options *o, shared *sh, uint64_t n,
			uint64_t seed)
{
	lsm_db	   *db;
	lsm_batch  *b = lsm_batch_new();
	uint64_t	rng = seed;

	CHECK(b != NULL);
	CHECK_OK(lsm_open(dir, o, &db));
	for (;; n++)
	{
		make_batch(b, n);
		CHECK_DB_OK(db, lsm_write(db, b));
		__atomic_store_n(&sh->acked, n, __ATOMIC_SEQ_CST);
		switch (harness_rand64(&rng) % 64)
		{
			case 0:
				CHECK_DB_OK(db, lsm_flush(db));
				__atomic_add_fetch(&sh->flushes, 1, __ATOMIC_SEQ_CST);
				break;
			case 1:
				CHECK_DB_OK(db, lsm_compact(db));
				__atomic_add_fetch(&sh->compactions, 1, __ATOMIC_SEQ_CST);
				break;
			default:
				break;
		}
	}
}

/* The expected value of hot<i> at last = L: 0 if none. */
static uint64_t
hot_expected(uint64_t L, int i)
{
	uint64_t	m;

	if (L == 0)
		return 0;
	m = L - (L % HOT + HOT - (uint64_t) i) % HOT;
	return m >= 1 && m <= L ? m : 0;
}

/*
 * Checks the whole store at last = L: a full scan, point gets, a value
 * search and lsm_verify.  round says where we are, for the messages.
 */
static void
check_store(lsm_db *db, uint64_t L, int round)
{
	uint64_t	lo = L > KEEP ? L - KEEP + 1 : 1;
	uint64_t	nlive = L >= lo ? L - lo + 1 : 0;
	int		   *count = calloc(nlive + 1, sizeof(int));
	int			hot_seen[HOT];
	lsm_iter   *it;
	uint64_t	n;
	int			i,
				j;

	CHECK(count != NULL);
	memset(hot_seen, 0, sizeof(hot_seen));

	/* scan: exactly the live batches, each complete */
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen,
					vlen;
		const char *k = lsm_iter_key(it, &klen);
		const char *v = lsm_iter_value(it, &vlen);
		char		buf[64];
		unsigned long long bn;
		int			bj;

		CHECK(klen < sizeof(buf));
		memcpy(buf, k, klen);
		buf[klen] = '\0';
		if (strcmp(buf, "last") == 0)
			CHECK_EQ_U(harness_parse_count(v, vlen), L);
		else if (sscanf(buf, "hot%d", &i) == 1 && i >= 0 && i < HOT)
		{
			if (harness_parse_count(v, vlen) != hot_expected(L, i))
				harness_fail(__FILE__, __LINE__, "round %d: %s = %.*s, expected "
							 "%" PRIu64 " (last %" PRIu64 ")", round, buf,
							 (int) vlen, v, hot_expected(L, i), L);
			hot_seen[i] = 1;
		}
		else if (sscanf(buf, "b%llu-%d", &bn, &bj) == 2)
		{
			size_t		elen;
			void	   *e;

			if (bn > L)
				harness_fail(__FILE__, __LINE__, "round %d: %s present but last "
							 "is %" PRIu64 " (part of a batch past the last)",
							 round, buf, L);
			if (bn < lo)
				harness_fail(__FILE__, __LINE__, "round %d: %s present but its "
							 "batch was deleted by batch %llu <= last %" PRIu64,
							 round, buf, bn + KEEP, L);
			CHECK(bj >= 0 && bj < batch_keys(bn));
			e = bvalue(bn, bj, &elen);
			CHECK_MEMEQ(v, vlen, e, elen);
			lsm_free(e);
			count[bn - lo]++;
		}
		else
			harness_fail(__FILE__, __LINE__, "round %d: unexpected key %s",
						 round, buf);
	}
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);
	for (n = lo; n <= L; n++)
		if (count[n - lo] != batch_keys(n))
			harness_fail(__FILE__, __LINE__, "round %d: batch %" PRIu64 " has %d "
						 "of its %d keys (last %" PRIu64 ")", round, n,
						 count[n - lo], batch_keys(n), L);
	for (i = 0; i < HOT; i++)
		if (hot_seen[i] != (hot_expected(L, i) != 0))
			harness_fail(__FILE__, __LINE__, "round %d: hot%d %s", round, i,
						 hot_seen[i] ? "present but never written" : "missing");

	/* point reads: the newest batches, the next one, an old one */
	for (n = L >= 20 ? L - 19 : 1; n <= L + 1; n++)
		for (j = 0; j < batch_keys(n); j++)
		{
			char		k[48];
			size_t		klen = bkey(k, n, j),
						vlen;
			void	   *v;
			int			rc = lsm_get(db, k, klen, &v, &vlen);

			if (n <= L)
			{
				if (rc != LSM_OK)
					harness_fail(__FILE__, __LINE__, "round %d: get %s: %d (%s)",
								 round, k, rc, lsm_strerror(rc));
				lsm_free(v);
			}
			else
				CHECK_RC(LSM_NOTFOUND, rc);
		}
	if (lo > 1)
	{
		char		k[48];
		size_t		klen = bkey(k, lo - 1, 0),
					vlen;
		void	   *v;

		CHECK_RC(LSM_NOTFOUND, lsm_get(db, k, klen, &v, &vlen));
	}

	/* value search: field 0 = "k0" is key 0 of every live batch */
	memset(count, 0, (nlive + 1) * sizeof(int));
	CHECK_DB_OK(db, lsm_value_search(db, 0, "k0", 2, &it));
	for (; lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen;
		const char *k = lsm_iter_key(it, &klen);
		char		buf[64];
		unsigned long long bn;
		int			bj;

		CHECK(klen < sizeof(buf));
		memcpy(buf, k, klen);
		buf[klen] = '\0';
		if (sscanf(buf, "b%llu-%d", &bn, &bj) != 2 || bj != 0 || bn < lo ||
			bn > L)
			harness_fail(__FILE__, __LINE__, "round %d: value search k0 "
						 "returned %s (live batches %" PRIu64 "..%" PRIu64 ")",
						 round, buf, lo, L);
		count[bn - lo]++;
	}
	CHECK_DB_OK(db, lsm_iter_status(it));
	lsm_iter_close(it);
	for (n = lo; n <= L; n++)
		if (count[n - lo] != 1)
			harness_fail(__FILE__, __LINE__, "round %d: value search k0 found "
						 "b%08" PRIu64 "-0 %d times", round, n, count[n - lo]);
	free(count);

	CHECK_DB_OK(db, lsm_verify(db));
}

/* The compactor child: lsm_compact in a loop, forever (until killed). */
static void
compactor_main(const char *dir, const lsm_options *o, shared *sh,
			   uint64_t seed)
{
	lsm_db	   *db;
	uint64_t	rng = seed;

	CHECK_OK(lsm_open(dir, o, &db));
	for (;;)
	{
		CHECK_DB_OK(db, lsm_compact(db));
		__atomic_add_fetch(&sh->compactor_loops, 1, __ATOMIC_SEQ_CST);
		usleep((useconds_t) (harness_rand64(&rng) % 3000));
	}
}

/*
 * The reader child: until told to stop, refreshes and checks what the
 * writer has committed so far -- never less than acknowledged before the
 * refresh, never going back, the newest batch complete and nothing past
 * it; now and then the whole store.  Exits 0 if all went well.
 */
static void
reader_main(const char *dir, shared *sh, int round, int read_only)
{
	lsm_options o;
	lsm_db	   *db;
	uint64_t	prev = 0;
	long		loops = 0;

	lsm_options_init(&o);
	o.read_only = read_only;
	o.memtable_bytes = 16 << 10;
	CHECK_OK(lsm_open(dir, &o, &db));
	while (!__atomic_load_n(&sh->stop_reader, __ATOMIC_SEQ_CST))
	{
		uint64_t	before = __atomic_load_n(&sh->acked, __ATOMIC_SEQ_CST),
					L,
					after;
		char		k[48],
					hk[16];
		size_t		klen,
					vlen;
		void	   *v;
		int			j;

		CHECK_DB_OK(db, lsm_refresh(db));
		L = harness_get_count(db, "last", 4);
		after = __atomic_load_n(&sh->acked, __ATOMIC_SEQ_CST);
		if (L < before || L < prev || L > after + 1)
			harness_fail(__FILE__, __LINE__, "round %d reader: last %" PRIu64
						 " (before: acknowledged %" PRIu64 ", seen %" PRIu64
						 "; after: acknowledged %" PRIu64 ")",
						 round, L, before, prev, after);
		prev = L;
		for (j = 0; L > 0 && j < batch_keys(L); j++)
		{
			klen = bkey(k, L, j);
			CHECK_DB_OK(db, lsm_get(db, k, klen, &v, &vlen));
			lsm_free(v);
		}
		klen = bkey(k, L + 1, 0);
		CHECK_RC(LSM_NOTFOUND, lsm_get(db, k, klen, &v, &vlen));
		if (L > 0)
		{
			sprintf(hk, "hot%d", (int) (L % HOT));
			CHECK_DB_OK(db, lsm_get(db, hk, strlen(hk), &v, &vlen));
			CHECK_EQ_U(harness_parse_count(v, vlen), L);
			lsm_free(v);
		}
		if (++loops % 8 == 0)
			check_store(db, L, round);
		__atomic_add_fetch(&sh->reader_loops, 1, __ATOMIC_SEQ_CST);
	}
	CHECK_DB_OK(db, lsm_close(db));
	_exit(0);
}

/* Kills pid with SIGKILL and reaps it; fails unless the kill ended it. */
static void
kill_child(pid_t pid, const char *who, int round)
{
	int			status;

	CHECK(kill(pid, SIGKILL) == 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		harness_fail(__FILE__, __LINE__, "round %d: the %s ended by itself "
					 "(%s %d) before the kill", round, who,
					 WIFEXITED(status) ? "status" : "signal",
					 WIFEXITED(status) ? WEXITSTATUS(status) :
					 WTERMSIG(status));
}

/*
 * Runs `rounds` rounds of write-and-kill with the given sync setting on one
 * store, checking it after every kill.  With helpers, each round also runs
 * a compactor process (killed too, before or after the writer) and a
 * reader process that checks the store while all this goes on.
 */
static void
crash_rounds(const char *tag, int sync, int helpers, int rounds, uint64_t seed)
{
	char	   *dir = harness_tmpdir(tag);
	shared	   *sh;
	uint64_t	rng = seed,
				L = 0;
	lsm_db	   *db;
	lsm_stats	st;
	long		start = harness_now_ms();
	int			round,
				l,
				rc,
				early_kills = 0,
				torn_rounds = 0,
				files = 0;

	printf("# %s: seed %" PRIu64 ", %d rounds, sync %d%s\n", tag, seed, rounds,
		   sync, helpers ? ", with a compactor and a reader" : "");
	sh = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	if (helpers)
	{
		/* a read-only reader cannot create the store */
		CHECK_OK(lsm_open(dir, NULL, &db));
		CHECK_DB_OK(db, lsm_close(db));
	}

	for (round = 0; round < rounds; round++)
	{
		lsm_options o = round_options(sync, &rng);
		lsm_options ro;
		uint64_t	A,
					r = harness_rand64(&rng) % 16,
					delay_us;
		pid_t		pid,
					cpid = 0,
					rpid = 0;
		int			compactor_first = (int) (harness_rand64(&rng) % 2);

		/* mostly mid-run kills; some right after start (during recovery) */
		if (r == 0)
			delay_us = harness_rand64(&rng) % 5000;
		else if (r < 4)
			delay_us = 5000 + harness_rand64(&rng) % 45000;
		else
			delay_us = 50000 + harness_rand64(&rng) % 250000;

		__atomic_store_n(&sh->acked, L, __ATOMIC_SEQ_CST);
		__atomic_store_n(&sh->stop_reader, 0, __ATOMIC_SEQ_CST);
		if (helpers)
		{
			lsm_options co = round_options(sync, &rng);
			uint64_t	cseed = harness_rand64(&rng);
			int			read_only = (int) (harness_rand64(&rng) % 2);

			/* the writer leaves compaction to the compactor, mostly */
			o.auto_compact = harness_rand64(&rng) % 4 == 0;
			cpid = fork();
			CHECK(cpid >= 0);
			if (cpid == 0)
				compactor_main(dir, &co, sh, cseed);
			rpid = fork();
			CHECK(rpid >= 0);
			if (rpid == 0)
				reader_main(dir, sh, round, read_only);
		}
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			writer_main(dir, &o, sh, L + 1, harness_rand64(&rng));
		usleep((useconds_t) delay_us);
		if (cpid > 0 && compactor_first)
			kill_child(cpid, "compactor", round);
		kill_child(pid, "writer", round);
		if (cpid > 0 && !compactor_first)
		{
			/* the compactor may go on a little after the writer died */
			usleep((useconds_t) (harness_rand64(&rng) % 20000));
			kill_child(cpid, "compactor", round);
		}
		A = __atomic_load_n(&sh->acked, __ATOMIC_SEQ_CST);
		if (rpid > 0)
		{
			int			status;
			long		deadline = harness_now_ms() + 60000;
			pid_t		p;

			__atomic_store_n(&sh->stop_reader, 1, __ATOMIC_SEQ_CST);
			while ((p = waitpid(rpid, &status, WNOHANG)) == 0 &&
				   harness_now_ms() < deadline)
				usleep(2000);
			if (p == 0)
			{
				kill(rpid, SIGKILL);
				waitpid(rpid, &status, 0);
				harness_fail(__FILE__, __LINE__, "round %d: the reader did not "
							 "stop within 60 s", round);
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				harness_fail(__FILE__, __LINE__, "round %d: the reader failed "
							 "(%s %d)", round,
							 WIFEXITED(status) ? "status" : "signal",
							 WIFEXITED(status) ? WEXITSTATUS(status) :
							 WTERMSIG(status));
		}

		/*
		 * A read-only open recovers without the lock.  Only a writer killed
		 * before it ever committed may have left no store behind (a read-only
		 * open does not create one).
		 */
		lsm_options_init(&ro);
		ro.read_only = 1;
		rc = lsm_open(dir, &ro, &db);
		if (rc == LSM_NOTFOUND && L == 0 && A == 0)
			early_kills++;
		else
		{
			CHECK_OK(rc);
			L = harness_get_count(db, "last", 4);
			if (L < A || L > A + 1)
				harness_fail(__FILE__, __LINE__, "round %d (killed after %" PRIu64
							 " us): last is %" PRIu64 ", acknowledged %" PRIu64,
							 round, delay_us, L, A);
			check_store(db, L, round);
			CHECK_DB_OK(db, lsm_close(db));
		}

		/* a writer's open (which cuts any torn log tail) sees the same */
		CHECK_OK(lsm_open(dir, &o, &db));
		if (harness_get_count(db, "last", 4) != L)
			harness_fail(__FILE__, __LINE__, "round %d: last is %" PRIu64
						 " read-only, %" PRIu64 " read-write", round, L,
						 harness_get_count(db, "last", 4));
		if (L == A + 1)
			torn_rounds++;
		check_store(db, L, round);
		CHECK_DB_OK(db, lsm_close(db));
	}

	/* a last compaction and check */
	{
		lsm_options o = round_options(sync, &rng);

		CHECK_OK(lsm_open(dir, &o, &db));
		CHECK_DB_OK(db, lsm_compact(db));
		check_store(db, L, rounds);
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		files = 0;
		for (l = 0; l < LSM_MAX_LEVELS; l++)
			files += st.level[l].files;
		CHECK_DB_OK(db, lsm_close(db));
	}
	printf("# %s: %" PRIu64 " batches in %d rounds, %ld ms; %d kills between "
		   "commit and acknowledgement, %d before the store existed; "
		   "explicit flushes %" PRIu64 ", compactions %" PRIu64
		   "; compactor loops %" PRIu64 ", reader loops %" PRIu64
		   "; at the end %d tables in the version, %d .sst and %d .log "
		   "files in the directory\n", tag, L, rounds,
		   harness_now_ms() - start,
		   torn_rounds, early_kills, sh->flushes, sh->compactions,
		   sh->compactor_loops, sh->reader_loops, files,
		   harness_count_files(dir, ".sst"), harness_count_files(dir, ".log"));
	CHECK_GT(L, (uint64_t) rounds);
	/* lsm_compact sweeps what killed flushes and compactions left behind */
	CHECK_EQ(harness_count_files(dir, ".sst"), files);
	CHECK_EQ(harness_count_files(dir, ".log"), 1);
	munmap(sh, sizeof(*sh));
}

/* Killed writers with an fsync per commit. */
TEST(crash_sync)
{
	crash_rounds("crash-sync", 1, 0, 50, harness_seed() ^ 0x51);
}

/* Killed writers without fsync: the page cache keeps what was written. */
TEST(crash_nosync)
{
	crash_rounds("crash-nosync", 0, 0, 50, harness_seed() ^ 0x50);
}

/*
 * A compactor process is killed too, at a different moment, while a reader
 * process checks the store throughout (and must cope with whatever the
 * dead processes left: torn log tails, unfinished tables).
 */
TEST(crash_with_compactor_and_reader)
{
	crash_rounds("crash-helpers", 0, 1, 40, harness_seed() ^ 0x52);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(crash_sync);
	RUN(crash_nosync);
	RUN(crash_with_compactor_and_reader);
	return harness_done();
}

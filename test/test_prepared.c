/*
 * test_prepared.c
 *		Prepared batches (lsm_prepare, lsm_resolve): invisible until resolved,
 *		visible to every handle at once after a commit, gone after a
 *		rollback, kept across reopening, replays of the log and flushes
 *		(which carry them into the next log), conflicts reported under the
 *		lock, and decided exactly once whatever step a process is killed
 *		at (the crash points of the write path and of a flush); processes
 *		preparing and deciding while others write and flush, and a reader
 *		that never sees part of a batch.
 */
#include <dirent.h>
#include <inttypes.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "harness.h"

#include "env.h"

/* Small memtables, so that a few hundred writes flush. */
static lsm_options
small_options(void)
{
	lsm_options o;

	lsm_options_init(&o);
	o.memtable_bytes = 16 * 1024;
	o.file_bytes = 16 * 1024;
	o.block_bytes = 1024;
	o.lock_timeout_ms = 10000;
	return o;
}

static lsm_db *
open_db(const char *dir)
{
	lsm_options o = small_options();
	lsm_db	   *db = NULL;

	CHECK_OK(lsm_open(dir, &o, &db));
	return db;
}

/* The value of key as a string ("" when absent), in buf. */
static const char *
value_of(lsm_db *db, const char *key, char *buf, size_t cap)
{
	void	   *v;
	size_t		vl;
	int			rc = lsm_get(db, key, strlen(key), &v, &vl);

	buf[0] = '\0';
	if (rc == LSM_NOTFOUND)
		return buf;
	CHECK_DB_OK(db, rc);
	CHECK(vl < cap);
	memcpy(buf, v, vl);
	buf[vl] = '\0';
	lsm_free(v);
	return buf;
}

#define CHECK_VALUE(db, key, want) \
	do { \
		char		buf_[256]; \
		\
		CHECK_STREQ(value_of((db), (key), buf_, sizeof(buf_)), (want)); \
	} while (0)

static void
put(lsm_db *db, const char *k, const char *v)
{
	CHECK_DB_OK(db, lsm_put(db, k, strlen(k), v, strlen(v)));
}

/* A batch: put a=<tag>, put b=<tag>, delete c. */
static lsm_batch *
batch_of(const char *tag)
{
	lsm_batch  *b = lsm_batch_new();

	CHECK(b != NULL);
	CHECK_OK(lsm_batch_put(b, "a", 1, tag, strlen(tag)));
	CHECK_OK(lsm_batch_put(b, "b", 1, tag, strlen(tag)));
	CHECK_OK(lsm_batch_delete(b, "c", 1));
	return b;
}

/*
 * A stage that spilled into several runs: puts s<i> = <tag> for i < n,
 * and deletes "c".  (A 4 KiB buffer: a run per ~60 keys.)
 */
static lsm_stage *
big_stage(lsm_db *db, const char *tag, int n)
{
	lsm_stage  *st;
	char		k[32];
	int			i;

	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	for (i = 0; i < n; i++)
	{
		snprintf(k, sizeof(k), "s%05d", i);
		CHECK_DB_OK(db, lsm_stage_put(st, k, strlen(k), tag, strlen(tag)));
	}
	CHECK_DB_OK(db, lsm_stage_delete(st, "c", 1));
	CHECK_GT(lsm_stage_runs(st), 1);
	return st;
}

static size_t
prepared_count(lsm_db *db)
{
	uint64_t	owners[8];
	size_t		n;

	CHECK_DB_OK(db, lsm_prepared(db, owners, 8, &n));
	return n;
}

TEST(prepare_commit_rollback)
{
	char	   *dir = harness_tmpdir("prep");
	lsm_db	   *db = open_db(dir),
			   *other = open_db(dir);
	lsm_batch  *b = batch_of("new");
	uint64_t	owners[4],
				who = 0;
	size_t		n;

	put(db, "a", "old");
	put(db, "c", "old");
	CHECK_DB_OK(db, lsm_prepare(db, b, 7, LSM_WRITE_SYNC));

	/* invisible, to both handles, but listed and conflicting */
	CHECK_VALUE(db, "a", "old");
	CHECK_VALUE(db, "b", "");
	CHECK_VALUE(db, "c", "old");
	CHECK_DB_OK(other, lsm_refresh(other));
	CHECK_VALUE(other, "a", "old");
	CHECK_DB_OK(other, lsm_prepared(other, owners, 4, &n));
	CHECK_EQ(n, 1);
	CHECK_EQ(owners[0], 7);
	CHECK_DB_OK(other, lsm_lock(other, 0));
	CHECK_DB_OK(other, lsm_prepared_holds(other, "c", 1, &who));
	CHECK_EQ(who, 7);
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(other, "z", 1, NULL));
	lsm_unlock(other);
	CHECK_RC(LSM_EXISTS, lsm_prepare(db, b, 7, LSM_WRITE_SYNC));
	CHECK_RC(LSM_INVALID, lsm_prepare(db, b, 0, LSM_WRITE_SYNC));

	/* committed by the other handle: visible everywhere, exactly once */
	CHECK_DB_OK(other, lsm_resolve(other, 7, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(other, "b", "new");
	CHECK_DB_OK(db, lsm_refresh(db));
	CHECK_VALUE(db, "a", "new");
	CHECK_VALUE(db, "b", "new");
	CHECK_VALUE(db, "c", "");
	CHECK_EQ(prepared_count(db), 0);
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, 7, 1, LSM_WRITE_SYNC));
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(db, "a", 1, NULL));

	/* committed without sync: decided all the same */
	lsm_batch_free(b);
	b = batch_of("lazy");
	CHECK_DB_OK(db, lsm_prepare(db, b, 10, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_resolve(db, 10, 1, LSM_WRITE_NOSYNC));
	CHECK_DB_OK(other, lsm_refresh(other));
	CHECK_EQ(prepared_count(other), 0);
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(other, "a", 1, NULL));
	CHECK_VALUE(other, "a", "lazy");
	put(db, "a", "new");

	/* rolled back: nothing of it, ever */
	lsm_batch_free(b);
	b = batch_of("gone");
	CHECK_DB_OK(db, lsm_prepare(db, b, 8, LSM_WRITE_NOSYNC));
	CHECK_DB_OK(db, lsm_resolve(db, 8, 0, LSM_WRITE_SYNC));
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, 8, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "a", "new");
	CHECK_EQ(prepared_count(other), 0);

	/* not under lsm_lock */
	CHECK_DB_OK(db, lsm_prepare(db, b, 9, LSM_WRITE_DEFAULT));
	CHECK_DB_OK(db, lsm_lock(db, 0));
	CHECK_RC(LSM_INVALID, lsm_resolve(db, 9, 1, LSM_WRITE_SYNC));
	lsm_unlock(db);
	CHECK_DB_OK(db, lsm_resolve(db, 9, 1, LSM_WRITE_DEFAULT));
	CHECK_VALUE(db, "a", "gone");
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(other, lsm_close(other));
	CHECK_DB_OK(db, lsm_close(db));
}

/* Prepared under lsm_lock with LSM_WRITE_DEFER: durable at lsm_write_wait. */
TEST(prepare_deferred_under_lock)
{
	char	   *dir = harness_tmpdir("prepdefer");
	lsm_db	   *db = open_db(dir);
	lsm_batch  *b = batch_of("x");

	CHECK_DB_OK(db, lsm_lock(db, 0));
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(db, "a", 1, NULL));
	CHECK_DB_OK(db, lsm_prepare(db, b, 0x1234abcdULL, LSM_WRITE_SYNC | LSM_WRITE_DEFER));
	CHECK_DB_OK(db, lsm_prepared_holds(db, "b", 1, NULL));
	lsm_unlock(db);
	CHECK_DB_OK(db, lsm_write_wait(db));
	CHECK_EQ(prepared_count(db), 1);
	CHECK_DB_OK(db, lsm_resolve(db, 0x1234abcdULL, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "b", "x");
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_close(db));
}

/* Undecided batches outlive flushes, compactions and reopening. */
TEST(prepared_across_flushes_and_reopen)
{
	char	   *dir = harness_tmpdir("prepflush");
	lsm_db	   *db = open_db(dir);
	lsm_batch  *b = batch_of("kept");
	char		k[32];
	int			i;

	CHECK_DB_OK(db, lsm_prepare(db, b, 42, LSM_WRITE_SYNC));
	for (i = 0; i < 3000; i++)
	{
		snprintf(k, sizeof(k), "k%05d", i);
		put(db, k, "filler value of some length to fill memtables");
	}
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact_all(db));
	CHECK_VALUE(db, "a", "");
	CHECK_DB_OK(db, lsm_close(db));
	db = open_db(dir);
	CHECK_EQ(prepared_count(db), 1);
	CHECK_DB_OK(db, lsm_resolve(db, 42, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "a", "kept");
	/* the record that resolved it is flushed: the file is long gone */
	for (i = 0; i < 3000; i++)
	{
		snprintf(k, sizeof(k), "j%05d", i);
		put(db, k, "filler value of some length to fill memtables");
	}
	put(db, "a", "later");
	CHECK_DB_OK(db, lsm_close(db));
	db = open_db(dir);
	CHECK_EQ(prepared_count(db), 0);
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, 42, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "a", "later");
	CHECK_VALUE(db, "b", "kept");
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
}

/* Removes the shared memtable files of dir: the next open replays the log. */
static void
drop_memfiles(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, ".mem") != NULL)
		{
			char		p[4096];

			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			CHECK_EQ(unlink(p), 0);
		}
	closedir(d);
}

/*
 * The list of prepared batches is rebuilt from the log by a replay (no
 * shared memtable, as after a reboot), including the ones a flush carried
 * into a newer log, and the decided ones stay decided.
 */
TEST(prepared_replayed)
{
	char	   *dir = harness_tmpdir("prepreplay");
	lsm_db	   *db = open_db(dir);
	lsm_batch  *b5 = batch_of("five"),
			   *b6 = batch_of("six");
	uint64_t	owners[4];
	size_t		n;
	int			i;

	CHECK_DB_OK(db, lsm_prepare(db, b5, 5, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_prepare(db, b6, 6, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_resolve(db, 5, 1, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_close(db));
	drop_memfiles(dir);
	db = open_db(dir);
	CHECK_DB_OK(db, lsm_prepared(db, owners, 4, &n));
	CHECK_EQ(n, 1);
	CHECK_EQ(owners[0], 6);
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, 5, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "a", "five");

	/* flushes carry 6 from log to log */
	for (i = 0; i < 2000; i++)
	{
		char		k[32];

		snprintf(k, sizeof(k), "k%05d", i);
		put(db, k, "filler value of some length to fill memtables");
	}
	CHECK_DB_OK(db, lsm_close(db));
	drop_memfiles(dir);
	db = open_db(dir);
	CHECK_DB_OK(db, lsm_prepared(db, owners, 4, &n));
	CHECK_EQ(n, 1);
	CHECK_EQ(owners[0], 6);
	CHECK_DB_OK(db, lsm_prepared_holds(db, "b", 1, NULL));
	CHECK_DB_OK(db, lsm_resolve(db, 6, 0, LSM_WRITE_SYNC));
	CHECK_DB_OK(db, lsm_close(db));
	drop_memfiles(dir);
	db = open_db(dir);
	CHECK_EQ(prepared_count(db), 0);
	CHECK_VALUE(db, "a", "five");
	CHECK_DB_OK(db, lsm_verify(db));
	lsm_batch_free(b5);
	lsm_batch_free(b6);
	CHECK_DB_OK(db, lsm_close(db));
}

/*
 * Runs child(dir, at, fd) in a process of its own, to be killed at its
 * at-th crash point; returns whether it was (else it ran to the end), and
 * in *said (if not NULL) whether it wrote a byte to fd before.
 */
static bool
killed_at(void (*child) (const char *, long, int), const char *dir, long at,
		  bool *said)
{
	int			p[2],
				status;
	char		c;
	pid_t		pid;

	CHECK_EQ(pipe(p), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
	{
		close(p[0]);
		child(dir, at, p[1]);
		_exit(0);
	}
	close(p[1]);
	if (said)
		*said = read(p[0], &c, 1) == 1;
	close(p[0]);
	status = harness_wait_killed_or_ok(pid);
	return WIFSIGNALED(status);
}

/*
 * A flush killed at each of its crash points while a batch is prepared:
 * afterwards the batch is listed exactly once, by a new handle and by the
 * one that stayed open, and commits exactly once.
 */
static void
flush_child(const char *dir, long at, int out)
{
	lsm_options o = small_options();
	lsm_fault	f;
	lsm_db	   *db;
	char		k[32];

	snprintf(k, sizeof(k), "f%06ld", at);
	(void) out;
	CHECK_OK(lsm_open(dir, &o, &db));
	memset(&f, 0, sizeof(f));
	f.kill_at = at;
	lsm_fault_install(&f);
	put(db, k, "flushed");
	CHECK_DB_OK(db, lsm_flush(db));
	lsm_fault_install(NULL);
	CHECK_DB_OK(db, lsm_close(db));
}

TEST(flush_kill_points)
{
	char	   *dir = harness_tmpdir("prepflushkill");
	lsm_db	   *open_one = open_db(dir),
			   *db;
	lsm_batch  *b = batch_of("carried");
	uint64_t	owners[4];
	size_t		n;
	long		at;
	int			kills = 0;

	CHECK_DB_OK(open_one, lsm_prepare(open_one, b, 77, LSM_WRITE_SYNC));
	for (at = 1;; at++)
	{
		bool		killed = killed_at(flush_child, dir, at, NULL);

		db = open_db(dir);
		CHECK_DB_OK(db, lsm_prepared(db, owners, 4, &n));
		CHECK_MSG(n == 1 && owners[0] == 77, "kill point %ld: %zu batches listed", at, n);
		CHECK_DB_OK(open_one, lsm_refresh(open_one));
		CHECK_DB_OK(open_one, lsm_prepared(open_one, owners, 4, &n));
		CHECK_MSG(n == 1 && owners[0] == 77, "kill point %ld: the open handle lists %zu", at, n);
		CHECK_VALUE(db, "a", "");
		CHECK_DB_OK(db, lsm_close(db));
		if (!killed)
			break;
		kills++;
		CHECK(at < 500);
	}
	CHECK_GT(kills, 3);
	printf("# %d kill points\n", kills);
	CHECK_DB_OK(open_one, lsm_resolve(open_one, 77, 1, LSM_WRITE_SYNC));
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(open_one, 77, 1, LSM_WRITE_SYNC));
	put(open_one, "a", "after");
	CHECK_DB_OK(open_one, lsm_flush(open_one));
	CHECK_DB_OK(open_one, lsm_close(open_one));
	drop_memfiles(dir);
	db = open_db(dir);
	CHECK_EQ(prepared_count(db), 0);
	CHECK_VALUE(db, "a", "after");
	CHECK_VALUE(db, "b", "carried");
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(db, lsm_close(db));
	lsm_batch_free(b);
}

/*
 * A child prepares owner `at` and commits it, killed at its at-th crash
 * point (in the prepare, the append and apply of the resolving record,
 * before the file's removal).  The parent then decides as a transaction
 * manager would: commit if the prepare returned (the child says so in a
 * pipe), else rollback; then writes a over, and checks that nothing of the
 * batch shows up again, through a fresh handle, a flush and a reopen.
 */
static void
prepare_then_commit(const char *dir, long at, int out, bool staged)
{
	lsm_options o = small_options();
	lsm_fault	f;
	lsm_batch  *b = NULL;
	lsm_stage  *st = NULL;
	lsm_db	   *db;
	char		tag[32];

	snprintf(tag, sizeof(tag), "t%ld", at);
	CHECK_OK(lsm_open(dir, &o, &db));
	if (staged)
		st = big_stage(db, tag, 600);
	else
		b = batch_of(tag);
	memset(&f, 0, sizeof(f));
	f.kill_at = at;
	lsm_fault_install(&f);
	if (staged)
		CHECK_DB_OK(db, lsm_stage_prepare(st, (uint64_t) at, LSM_WRITE_SYNC));
	else
		CHECK_DB_OK(db, lsm_prepare(db, b, (uint64_t) at, LSM_WRITE_SYNC));
	CHECK_EQ(write(out, "p", 1), 1);
	CHECK_DB_OK(db, lsm_resolve(db, (uint64_t) at, 1, LSM_WRITE_SYNC));
	lsm_fault_install(NULL);
	lsm_batch_free(b);
	CHECK_DB_OK(db, lsm_close(db));
}

static void
kill_child(const char *dir, long at, int out)
{
	prepare_then_commit(dir, at, out, false);
}

TEST(resolve_kill_points)
{
	char	   *dir = harness_tmpdir("prepkill");
	long		at;
	int			kills = 0,
				commits = 0;

	for (at = 1;; at++)
	{
		bool		prepared,
					killed = killed_at(kill_child, dir, at, &prepared);
		char		tag[32];
		lsm_db	   *db;
		int			rc;

		snprintf(tag, sizeof(tag), "t%ld", at);

		db = open_db(dir);
		rc = lsm_resolve(db, (uint64_t) at, prepared, LSM_WRITE_SYNC);
		CHECK_MSG(rc == LSM_OK || rc == LSM_NOTFOUND,
				  "kill point %ld: resolve: %s", at, lsm_errmsg(db));
		if (prepared)
		{
			CHECK_VALUE(db, "b", tag);
			commits++;
		}
		else
		{
			char		buf[64];

			CHECK_MSG(strcmp(value_of(db, "b", buf, sizeof(buf)), tag) != 0,
					  "kill point %ld: a batch never prepared is visible", at);
		}
		CHECK_EQ(prepared_count(db), 0);
		put(db, "a", "over");
		put(db, "b", "over");
		CHECK_DB_OK(db, lsm_close(db));

		/* nothing comes back: not to a new handle, nor after a flush */
		db = open_db(dir);
		CHECK_EQ(prepared_count(db), 0);
		CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, (uint64_t) at, 1, LSM_WRITE_SYNC));
		CHECK_DB_OK(db, lsm_flush(db));
		CHECK_VALUE(db, "a", "over");
		CHECK_VALUE(db, "b", "over");
		CHECK_DB_OK(db, lsm_close(db));
		if (!killed)
			break;
		kills++;
		CHECK(at < 200);
	}
	CHECK_GT(kills, 3);
	CHECK_GT(commits, 1);
	printf("# %d kill points, %d of them after the prepare returned\n",
		   kills, commits);
}

/*
 * Processes that prepare and decide at the same time as others write
 * (small memtables: flushes carry undecided batches all the time), and a
 * reader that checks, while they run, that no key of a batch is seen
 * before its commit.  Process p prepares owners p * 1000 + i, each putting
 * "o<owner>/<j>" for j < 3, and commits the even ones and rolls back the
 * odd ones, every second one through another handle; a plain writer puts
 * filler.  At the end: the committed batches whole, the rolled-back ones
 * absent, nothing undecided, after a reopen too.
 */
#define CONC_PROCS 3
#define CONC_OWNERS 200

static void
conc_preparer(const char *dir, int p)
{
	lsm_db	   *db = open_db(dir),
			   *other = open_db(dir);
	int			i,
				j;

	for (i = 0; i < CONC_OWNERS; i++)
	{
		uint64_t	owner = (uint64_t) p * 1000 + (uint64_t) i + 1;
		lsm_batch  *b = lsm_batch_new();
		lsm_db	   *decider = (i % 4 < 2) ? db : other;

		CHECK(b != NULL);
		for (j = 0; j < 3; j++)
		{
			char		k[32];

			snprintf(k, sizeof(k), "o%" PRIu64 "/%d", owner, j);
			CHECK_OK(lsm_batch_put(b, k, strlen(k), k, strlen(k)));
		}
		CHECK_DB_OK(db, lsm_prepare(db, b, owner, i % 3 ? LSM_WRITE_NOSYNC : LSM_WRITE_SYNC));
		lsm_batch_free(b);
		CHECK_DB_OK(decider, lsm_refresh(decider));
		CHECK_DB_OK(decider, lsm_resolve(decider, owner, owner % 2 == 0, LSM_WRITE_NOSYNC));
	}
	CHECK_DB_OK(other, lsm_close(other));
	CHECK_DB_OK(db, lsm_close(db));
}

static void
conc_filler(const char *dir)
{
	lsm_db	   *db = open_db(dir);
	int			i;

	for (i = 0; i < 10000; i++)
	{
		char		k[32];

		snprintf(k, sizeof(k), "z%05d", i);
		put(db, k, "filler value of some length to fill memtables");
	}
	CHECK_DB_OK(db, lsm_close(db));
}

/* Reads every batch's first and last key: both or neither, as committed. */
static void
conc_reader(const char *dir, volatile int *stop)
{
	lsm_db	   *db = open_db(dir);

	while (!*stop)
	{
		int			p,
					i;

		CHECK_DB_OK(db, lsm_refresh(db));
		for (p = 0; p < CONC_PROCS; p++)
			for (i = 0; i < CONC_OWNERS; i++)
			{
				uint64_t	owner = (uint64_t) p * 1000 + (uint64_t) i + 1;
				char		k0[32],
							k2[32],
							v0[64],
							v2[64];

				snprintf(k0, sizeof(k0), "o%" PRIu64 "/0", owner);
				snprintf(k2, sizeof(k2), "o%" PRIu64 "/2", owner);
				value_of(db, k0, v0, sizeof(v0));
				value_of(db, k2, v2, sizeof(v2));
				CHECK_MSG((v0[0] != 0) == (v2[0] != 0),
						  "owner %" PRIu64 ": one key seen without the other", owner);
				CHECK_MSG(v0[0] == 0 || owner % 2 == 0,
						  "owner %" PRIu64 ": a rolled-back batch is visible", owner);
			}
	}
	CHECK_DB_OK(db, lsm_close(db));
}

TEST(concurrent_prepares_and_flushes)
{
	char	   *dir = harness_tmpdir("prepconc");
	volatile int *stop = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
							  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t		pids[CONC_PROCS + 2];
	lsm_db	   *db = open_db(dir);
	int			p,
				i,
				j,
				status;

	CHECK(stop != MAP_FAILED);
	*stop = 0;
	CHECK_DB_OK(db, lsm_close(db));
	for (p = 0; p < CONC_PROCS + 2; p++)
	{
		pids[p] = fork();
		CHECK(pids[p] >= 0);
		if (pids[p] == 0)
		{
			if (p < CONC_PROCS)
				conc_preparer(dir, p);
			else if (p == CONC_PROCS)
				conc_filler(dir);
			else
				conc_reader(dir, stop);
			_exit(0);
		}
	}
	for (p = 0; p < CONC_PROCS + 1; p++)
	{
		CHECK_EQ(waitpid(pids[p], &status, 0), pids[p]);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				  "process %d failed", p);
	}
	*stop = 1;
	CHECK_EQ(waitpid(pids[CONC_PROCS + 1], &status, 0), pids[CONC_PROCS + 1]);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader failed");

	for (int round = 0; round < 2; round++)
	{
		db = open_db(dir);
		CHECK_EQ(prepared_count(db), 0);
		for (p = 0; p < CONC_PROCS; p++)
			for (i = 0; i < CONC_OWNERS; i++)
			{
				uint64_t	owner = (uint64_t) p * 1000 + (uint64_t) i + 1;

				for (j = 0; j < 3; j++)
				{
					char		k[32],
								v[64];

					snprintf(k, sizeof(k), "o%" PRIu64 "/%d", owner, j);
					CHECK_STREQ(value_of(db, k, v, sizeof(v)), owner % 2 == 0 ? k : "");
				}
			}
		if (round == 0)
		{
			int			tables = harness_tables(db, NULL);

			CHECK_GT(tables, 3);
			printf("# %d tables flushed while %d processes prepared %d batches each\n",
				   tables, CONC_PROCS, CONC_OWNERS);
		}
		CHECK_DB_OK(db, lsm_verify(db));
		CHECK_DB_OK(db, lsm_close(db));
		drop_memfiles(dir);
	}
	munmap((void *) stop, sizeof(int));
}

/* ---------- prepared stages: tables ---------- */

/*
 * Removes one table file of dir that is not in the names[n] listed before
 * (a table that a prepare moved in); returns whether it found one.
 */
static bool
remove_new_table(const char *dir, char (*names)[64], int n)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	bool		done = false;
	int			i;

	CHECK(d != NULL);
	while (!done && (de = readdir(d)) != NULL)
	{
		char		p[4096];

		if (strstr(de->d_name, ".sst") == NULL)
			continue;
		for (i = 0; i < n && strcmp(names[i], de->d_name) != 0; i++)
			;
		if (i < n)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		CHECK_EQ(unlink(p), 0);
		done = true;
	}
	closedir(d);
	return done;
}

/* Lists the table files of dir into names (at most max); returns how many. */
static int
list_tables(const char *dir, char (*names)[64], int max)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	int			n = 0;

	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, ".sst") != NULL && n < max)
			snprintf(names[n++], 64, "%.63s", de->d_name);
	closedir(d);
	return n;
}

/* Keys s<i> for i < n that hold want (absent: ""). */
static int
count_staged(lsm_db *db, int n, const char *want)
{
	char		k[32],
				v[64];
	int			i,
				hits = 0;

	for (i = 0; i < n; i++)
	{
		snprintf(k, sizeof(k), "s%05d", i);
		if (strcmp(value_of(db, k, v, sizeof(v)), want) == 0)
			hits++;
	}
	return hits;
}

/*
 * A stage too large for a batch is prepared as tables: invisible, listed,
 * holding its keys (deletes too) for committers of any handle, kept by
 * flushes, compactions (their sweep of unnamed files) and reopening, and
 * installed whole by a commit from another handle, or removed by a
 * rollback.  A truncating stage holds every key and replaces the store.
 */
TEST(prepared_stage_tables)
{
	char	   *dir = harness_tmpdir("prepstage");
	lsm_db	   *db = open_db(dir),
			   *other = open_db(dir);
	lsm_stage  *st;
	lsm_batch  *b;
	uint64_t	who = 0;
	int			before,
				i;

	put(db, "c", "old");
	put(db, "s00005", "old");
	st = big_stage(db, "staged", 2000);
	CHECK_DB_OK(db, lsm_stage_prepare(st, 21, LSM_WRITE_SYNC));
	CHECK_EQ(count_staged(db, 2000, "staged"), 0);
	CHECK_VALUE(db, "s00005", "old");
	CHECK_DB_OK(other, lsm_refresh(other));
	CHECK_EQ(prepared_count(other), 1);
	CHECK_DB_OK(other, lsm_lock(other, 0));
	CHECK_DB_OK(other, lsm_prepared_holds(other, "s01999", 6, &who));
	CHECK_EQ(who, 21);
	CHECK_DB_OK(other, lsm_prepared_holds(other, "c", 1, NULL));
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(other, "s02000", 6, NULL));
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(other, "a", 1, NULL));
	lsm_unlock(other);
	b = batch_of("x");
	CHECK_RC(LSM_EXISTS, lsm_prepare(db, b, 21, LSM_WRITE_SYNC));
	/* another prepared write: the index is rebuilt, the tables kept open */
	CHECK_DB_OK(db, lsm_prepare(db, b, 30, LSM_WRITE_SYNC));
	CHECK_DB_OK(other, lsm_refresh(other));
	CHECK_DB_OK(other, lsm_prepared_holds(other, "s00100", 6, &who));
	CHECK_EQ(who, 21);
	CHECK_DB_OK(other, lsm_prepared_holds(other, "a", 1, &who));
	CHECK_EQ(who, 30);
	CHECK_DB_OK(other, lsm_resolve(other, 30, 0, LSM_WRITE_SYNC));
	CHECK_DB_OK(other, lsm_prepared_holds(other, "s00100", 6, &who));
	CHECK_EQ(who, 21);
	CHECK_RC(LSM_NOTFOUND, lsm_prepared_holds(other, "a", 1, NULL));
	lsm_batch_free(b);

	/* flushes, compactions (and their sweep), a replay of the log */
	for (i = 0; i < 3000; i++)
	{
		char		k[32];

		snprintf(k, sizeof(k), "k%05d", i);
		put(db, k, "filler value of some length to fill memtables");
	}
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact_all(db));
	CHECK_DB_OK(db, lsm_close(db));
	CHECK_DB_OK(other, lsm_close(other));
	drop_memfiles(dir);
	db = open_db(dir);
	other = open_db(dir);
	CHECK_EQ(prepared_count(db), 1);
	CHECK_GT(harness_count_files(dir, ".sst"), harness_tables(db, NULL));
	CHECK_EQ(count_staged(db, 2000, ""), 1999);

	/* committed by the other handle */
	CHECK_DB_OK(other, lsm_resolve(other, 21, 1, LSM_WRITE_NOSYNC));
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, 21, 1, LSM_WRITE_SYNC));
	CHECK_EQ(prepared_count(db), 0);
	CHECK_EQ(count_staged(db, 2000, "staged"), 2000);
	CHECK_VALUE(db, "c", "");
	CHECK_VALUE(db, "k00001", "filler value of some length to fill memtables");
	CHECK_EQ(harness_count_files(dir, ".sst"), harness_tables(db, NULL));

	/* rolled back: its tables go */
	before = harness_count_files(dir, ".sst");
	st = big_stage(db, "gone", 500);
	CHECK_DB_OK(db, lsm_stage_prepare(st, 22, LSM_WRITE_NOSYNC));
	CHECK_GT(harness_count_files(dir, ".sst"), before);
	CHECK_DB_OK(other, lsm_resolve(other, 22, 0, LSM_WRITE_NOSYNC));
	CHECK_EQ(harness_count_files(dir, ".sst"), before);
	CHECK_EQ(count_staged(db, 500, "staged"), 500);
	CHECK_RC(LSM_NOTFOUND, lsm_resolve(db, 22, 1, LSM_WRITE_SYNC));

	/*
	 * A table of a prepared stage removed behind the store's back: its
	 * commit fails as damage and changes nothing; a rollback still works.
	 */
	{
		static char names[256][64];
		int			n = list_tables(dir, names, 256);

		st = big_stage(db, "lost", 500);
		CHECK_DB_OK(db, lsm_stage_prepare(st, 26, LSM_WRITE_SYNC));
		CHECK(remove_new_table(dir, names, n));
		CHECK_RC(LSM_CORRUPTION, lsm_resolve(db, 26, 1, LSM_WRITE_SYNC));
		CHECK(strstr(lsm_errmsg(db), "missing") != NULL);
		CHECK_EQ(prepared_count(db), 1);
		CHECK_EQ(count_staged(db, 500, "staged"), 500);
		CHECK_DB_OK(db, lsm_resolve(db, 26, 0, LSM_WRITE_SYNC));
		CHECK_EQ(prepared_count(db), 0);
		CHECK_EQ(harness_count_files(dir, ".sst"), n);
	}

	/* a small stage is prepared as a batch; an empty one is refused */
	CHECK_DB_OK(db, lsm_stage_open(db, 0, &st));
	CHECK_DB_OK(db, lsm_stage_put(st, "small", 5, "yes", 3));
	CHECK_DB_OK(db, lsm_stage_prepare(st, 23, LSM_WRITE_SYNC | LSM_WRITE_DEFER));
	CHECK_DB_OK(db, lsm_write_wait(db));
	CHECK_DB_OK(db, lsm_prepared_holds(db, "small", 5, NULL));
	CHECK_DB_OK(db, lsm_resolve(db, 23, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "small", "yes");
	CHECK_DB_OK(db, lsm_stage_open(db, 0, &st));
	CHECK_RC(LSM_INVALID, lsm_stage_prepare(st, 24, LSM_WRITE_SYNC));

	/* a truncating stage: every key held, the store replaced at commit */
	CHECK_DB_OK(db, lsm_stage_open(db, 4096, &st));
	CHECK_DB_OK(db, lsm_stage_truncate(st));
	CHECK_DB_OK(db, lsm_stage_put(st, "only", 4, "one", 3));
	CHECK_DB_OK(db, lsm_stage_prepare(st, 25, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "small", "yes");
	CHECK_DB_OK(db, lsm_prepared_holds(db, "anything", 8, &who));
	CHECK_EQ(who, 25);
	CHECK_DB_OK(db, lsm_resolve(db, 25, 1, LSM_WRITE_SYNC));
	CHECK_VALUE(db, "small", "");
	CHECK_VALUE(db, "only", "one");
	CHECK_EQ(count_staged(db, 2000, ""), 2000);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_DB_OK(other, lsm_close(other));
	CHECK_DB_OK(db, lsm_close(db));
}

/*
 * A child prepares a stage of 600 keys as owner `at` and commits it,
 * killed at its at-th crash point (the spill, the moves, the record, the
 * ingest's flush and manifest switch).  The parent decides as a
 * transaction manager would (commit if the prepare returned, else
 * rollback), and checks: all or nothing, nothing undecided, no table left
 * that nothing names once a compaction swept, and the same after a replay.
 */
static void
stage_kill_child(const char *dir, long at, int out)
{
	prepare_then_commit(dir, at, out, true);
}

TEST(prepared_stage_kill_points)
{
	char	   *dir = harness_tmpdir("prepstagekill");
	long		at;
	int			kills = 0,
				commits = 0;

	for (at = 1;; at++)
	{
		bool		prepared,
					killed = killed_at(stage_kill_child, dir, at, &prepared);
		char		tag[32];
		lsm_db	   *db;
		int			rc,
					round;

		snprintf(tag, sizeof(tag), "t%ld", at);
		db = open_db(dir);
		rc = lsm_resolve(db, (uint64_t) at, prepared, LSM_WRITE_SYNC);
		CHECK_MSG(rc == LSM_OK || rc == LSM_NOTFOUND,
				  "kill point %ld: resolve: %s", at, lsm_errmsg(db));
		for (round = 0; round < 2; round++)
		{
			int			hits = count_staged(db, 600, tag);

			CHECK_MSG(hits == (prepared ? 600 : 0),
					  "kill point %ld: %d of 600 keys after %s", at, hits,
					  prepared ? "a commit" : "a rollback");
			CHECK_EQ(prepared_count(db), 0);
			CHECK_DB_OK(db, lsm_compact_all(db));
			CHECK_MSG(harness_count_files(dir, ".sst") == harness_tables(db, NULL),
					  "kill point %ld: %d table files, %d named", at,
					  harness_count_files(dir, ".sst"), harness_tables(db, NULL));
			CHECK_DB_OK(db, lsm_close(db));
			drop_memfiles(dir);
			db = open_db(dir);
		}
		commits += prepared;
		CHECK_DB_OK(db, lsm_verify(db));
		CHECK_DB_OK(db, lsm_close(db));
		if (!killed)
			break;
		kills++;
		CHECK(at < 2000);
	}
	CHECK_GT(kills, 3);
	CHECK_GT(commits, 1);
	printf("# %d kill points, %d of them after the prepare returned\n",
		   kills, commits);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(prepare_commit_rollback);
	RUN(prepare_deferred_under_lock);
	RUN(prepared_across_flushes_and_reopen);
	RUN(prepared_replayed);
	RUN(resolve_kill_points);
	RUN(flush_kill_points);
	RUN(concurrent_prepares_and_flushes);
	RUN(prepared_stage_tables);
	RUN(prepared_stage_kill_points);
	return harness_done();
}

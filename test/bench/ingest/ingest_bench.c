/*
 * ingest_bench.c
 *		Loading many rows through a stage (lsm_stage_*) against lsm_write
 *		batches: time and memory.
 *
 * Each workload loads --num rows (8-byte big-endian keys, rows of about
 * --value_size bytes: a 16-byte text field and a filler field) into a fresh
 * store with default options (4 MiB memtable, 2 MiB files; shared lock mode
 * and the value filters, as the PostgreSQL extension uses them), in a child
 * process of its own, so that its peak memory is its own:
 *
 *	batch		lsm_write of batches of --batch rows (auto_compact on), then
 *				lsm_compact until nothing is over target
 *	stage		lsm_stage_put of every row into one stage (buffer --buffer,
 *				0: memtable_bytes), lsm_stage_commit (auto_compact off, so the
 *				commit is timed alone), then lsm_compact
 *	stagecheck	as stage, but each row is first looked up with lsm_stage_get
 *				and lsm_get (absent), as the extension's INSERT does to detect
 *				duplicate keys
 *	onebatch	every row in one lsm_batch and one lsm_write: what the
 *				extension did before stages (memory!)
 *
 * in key order (--order=seq, like a COPY of ascending ids), in a random
 * order (--order=random), or both.  Printed per workload: one line per
 * phase, "name : X micros/op", then the total, the peak resident set
 * (VmHWM: it includes table pages mapped while compacting, which are page
 * cache, not the process's own memory), the peak anonymous resident memory
 * (RssAnon, sampled every 5 ms by a thread of the bench), the bytes written
 * (WAL and tables) and the level shape at the end.  A workload fails (exit
 * status 1) if the engine returns an error or 10000 random rows do not read
 * back.
 *
 * Build (engine only, optimised like db_bench):
 *
 *	gcc -std=gnu11 -O2 -DNDEBUG -g -Wall -Wextra -Isrc/engine -Itest/bench \
 *		-o test/bench/ingest/ingest_bench test/bench/ingest/ingest_bench.c \
 *		src/engine/[a-z]*.c -lxxhash -lpthread
 *
 * Run:  test/bench/ingest/ingest_bench --num=10000000 --db=/tmp/ingest
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "lsm.h"

static uint64_t num = 1000000;
static size_t value_size = 100;
static size_t batch_rows = 1000;
static size_t buffer_bytes = 0;
static const char *db_root = "/tmp/ingest_bench";
static int keep = 0;

/* ---------- helpers ---------- */

static double
now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
fail(lsm_db *db, int rc, const char *what)
{
	fprintf(stderr, "ingest_bench: %s: %s (%s)\n", what, lsm_strerror(rc),
			db ? lsm_errmsg(db) : lsm_errmsg(NULL));
	exit(1);
}

/* The i-th key of the load: i itself, or a bijection of it (random order). */
static uint64_t
key_number(uint64_t i, int random_order)
{
	/* an odd multiplier modulo a power of two is a bijection */
	uint64_t	mask = 1,
				x;

	if (!random_order)
		return i;
	while (mask < num)
		mask <<= 1;
	mask--;
	/* cycle-walk: stay inside [0, num) */
	x = i;
	do
		x = ((x * UINT64_C(0x9e3779b97f4a7c15)) + UINT64_C(0x632be59bd9b4e019)) & mask;
	while (x >= num);
	return x;
}

static void
encode_key(uint64_t k, uint8_t *buf)
{
	int			i;

	for (i = 7; i >= 0; i--)
	{
		buf[i] = (uint8_t) k;
		k >>= 8;
	}
}

/* The row of key k (release with lsm_free). */
static void *
make_row(uint64_t k, size_t *len)
{
	char		name[32];
	uint8_t		fill[4096];
	lsm_field	f[2];
	size_t		flen = value_size > 24 ? value_size - 24 : 1,
				i;
	uint64_t	h = k * UINT64_C(0x9e3779b97f4a7c15);
	void	   *row;
	int			rc;

	if (flen > sizeof(fill))
		flen = sizeof(fill);
	for (i = 0; i < flen; i++)
	{
		h ^= h >> 29;
		h *= UINT64_C(0xbf58476d1ce4e5b9);
		fill[i] = (uint8_t) ('a' + (h >> 40) % 26);
	}
	memset(f, 0, sizeof(f));
	f[0].data = name;
	f[0].len = (size_t) snprintf(name, sizeof(name), "user%012" PRIu64, k);
	f[1].data = fill;
	f[1].len = flen;
	rc = lsm_row_encode(f, 2, &row, len);
	if (rc != LSM_OK)
		fail(NULL, rc, "lsm_row_encode");
	return row;
}

/* ---------- memory sampling ---------- */

static volatile int sampler_stop;
static long peak_anon_kb;

/* RssAnon of this process, in KiB (0 if unknown). */
static long
rss_anon_kb(void)
{
	char		line[256];
	long		kb = 0;
	FILE	   *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "RssAnon:", 8) == 0)
		{
			kb = strtol(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

static void *
sampler(void *arg)
{
	(void) arg;
	while (!sampler_stop)
	{
		long		kb = rss_anon_kb();

		if (kb > peak_anon_kb)
			peak_anon_kb = kb;
		usleep(5000);
	}
	return NULL;
}

/* ---------- workloads ---------- */

static void
phase(const char *workload, const char *name, double secs, uint64_t ops)
{
	printf("%-22s : %-10s %9.3f micros/op %10.0f ops/s %8.1f s\n", workload,
		   name, secs * 1e6 / (double) (ops ? ops : 1),
		   (double) ops / (secs > 0 ? secs : 1e-9), secs);
	fflush(stdout);
}

/* Reads 10000 random rows back; exits if one is wrong. */
static void
verify(lsm_db *db)
{
	uint64_t	s = 12345;
	int			i;

	for (i = 0; i < 10000; i++)
	{
		uint8_t		key[8];
		uint64_t	k;
		size_t		vlen,
					elen;
		void	   *v,
				   *e;
		int			rc;

		s = s * UINT64_C(6364136223846793005) + 1442695040888963407ULL;
		k = (s >> 11) % num;
		encode_key(k, key);
		rc = lsm_get(db, key, 8, &v, &vlen);
		if (rc != LSM_OK)
			fail(db, rc, "verify: lsm_get");
		e = make_row(k, &elen);
		if (vlen != elen || memcmp(v, e, elen) != 0)
		{
			fprintf(stderr, "ingest_bench: verify: wrong row for key %" PRIu64 "\n", k);
			exit(1);
		}
		lsm_free(v);
		lsm_free(e);
	}
}

static void
run(const char *mode, int random_order)
{
	char		dir[4096],
				wl[64];
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st;
	double		t0,
				t1,
				total = 0;
	uint64_t	i;
	int			rc,
				l;

	snprintf(wl, sizeof(wl), "%s/%s", mode, random_order ? "random" : "seq");
	snprintf(dir, sizeof(dir), "%s/%s-%s", db_root, mode,
			 random_order ? "random" : "seq");
	lsm_options_init(&o);
	o.error_if_exists = 1;
	if ((rc = lsm_open(dir, &o, &db)) != LSM_OK)
		fail(NULL, rc, "lsm_open (is the store left from an earlier run?)");

	if (strcmp(mode, "batch") == 0 || strcmp(mode, "onebatch") == 0)
	{
		lsm_batch  *b = lsm_batch_new();
		size_t		per = strcmp(mode, "onebatch") == 0 ? (size_t) num : batch_rows;

		t0 = now_sec();
		for (i = 0; i < num; i++)
		{
			uint8_t		key[8];
			size_t		vlen;
			void	   *v = make_row(key_number(i, random_order), &vlen);

			encode_key(key_number(i, random_order), key);
			if ((rc = lsm_batch_put(b, key, 8, v, vlen)) != LSM_OK)
				fail(db, rc, "lsm_batch_put");
			lsm_free(v);
			if (lsm_batch_count(b) == per || i + 1 == num)
			{
				if ((rc = lsm_write(db, b)) != LSM_OK)
					fail(db, rc, "lsm_write");
				lsm_batch_clear(b);
			}
		}
		lsm_batch_free(b);
		t1 = now_sec();
		phase(wl, "write", t1 - t0, num);
		total += t1 - t0;
	}
	else
	{
		lsm_stage  *s;
		int			check = strcmp(mode, "stagecheck") == 0;

		/* the commit alone; the compaction it would start is timed next */
		lsm_close(db);
		o.error_if_exists = 0;
		o.auto_compact = 0;
		if ((rc = lsm_open(dir, &o, &db)) != LSM_OK)
			fail(NULL, rc, "lsm_open");
		if ((rc = lsm_stage_open(db, buffer_bytes, &s)) != LSM_OK)
			fail(db, rc, "lsm_stage_open");
		t0 = now_sec();
		for (i = 0; i < num; i++)
		{
			uint8_t		key[8];
			size_t		vlen;
			uint64_t	k = key_number(i, random_order);
			void	   *v = make_row(k, &vlen);

			encode_key(k, key);
			if (check)
			{
				void	   *g;
				size_t		glen;

				rc = lsm_stage_get(s, key, 8, &g, &glen);
				if (rc != LSM_NOTFOUND)
					fail(db, rc, "lsm_stage_get (expected not found)");
				rc = lsm_get(db, key, 8, &g, &glen);
				if (rc != LSM_NOTFOUND)
					fail(db, rc, "lsm_get (expected not found)");
			}
			if ((rc = lsm_stage_put(s, key, 8, v, vlen)) != LSM_OK)
				fail(db, rc, "lsm_stage_put");
			lsm_free(v);
		}
		t1 = now_sec();
		printf("%-22s : %d runs, stage memory %.1f MiB\n", wl,
			   lsm_stage_runs(s), (double) lsm_stage_bytes(s) / 1048576.0);
		phase(wl, check ? "check+put" : "put", t1 - t0, num);
		total += t1 - t0;
		t0 = now_sec();
		if ((rc = lsm_stage_commit(s, LSM_WRITE_DEFAULT)) != LSM_OK)
			fail(db, rc, "lsm_stage_commit");
		t1 = now_sec();
		phase(wl, "commit", t1 - t0, num);
		total += t1 - t0;
	}
	t0 = now_sec();
	if ((rc = lsm_compact(db)) != LSM_OK)
		fail(db, rc, "lsm_compact");
	t1 = now_sec();
	phase(wl, "compact", t1 - t0, num);
	total += t1 - t0;
	phase(wl, "total", total, num);
	verify(db);
	if ((rc = lsm_get_stats(db, &st)) != LSM_OK)
		fail(db, rc, "lsm_get_stats");
	printf("%-22s : written: wal %.2f GB, tables %.2f GB (this handle); levels",
		   wl, (double) st.wal_bytes_written / 1e9,
		   (double) st.sst_bytes_written / 1e9);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		printf(" %d", st.level[l].files);
	printf("\n");
	lsm_close(db);
}

/* Runs one workload in a child; prints its peak memory. */
static int
run_child(const char *mode, int random_order)
{
	struct rusage ru;
	int			status;
	pid_t		pid;
	char		cmd[4200];

	fflush(stdout);
	pid = fork();
	if (pid < 0)
	{
		perror("fork");
		exit(1);
	}
	if (pid == 0)
	{
		pthread_t	th;

		pthread_create(&th, NULL, sampler, NULL);
		run(mode, random_order);
		sampler_stop = 1;
		pthread_join(th, NULL);
		printf("%-22s : peak RssAnon %.1f MiB\n", mode, peak_anon_kb / 1024.0);
		fflush(stdout);
		_exit(0);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
	{
		perror("wait4");
		exit(1);
	}
	printf("%-22s : peak VmHWM %.1f MiB (includes mapped table pages)\n",
		   mode, ru.ru_maxrss / 1024.0);
	if (!keep)
	{
		snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s-%s'", db_root, mode,
				 random_order ? "random" : "seq");
		if (system(cmd) != 0)
			fprintf(stderr, "ingest_bench: could not remove the store\n");
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	const char *modes = "batch,stage,stagecheck";
	const char *order = "both";
	char		cpu[256],
				list[256],
			   *m,
			   *save;
	int			i,
				failed = 0;

	for (i = 1; i < argc; i++)
	{
		const char *a = argv[i];

		if (strncmp(a, "--num=", 6) == 0)
			num = bench_parse_number(argv[0], "num", a + 6);
		else if (strncmp(a, "--value_size=", 13) == 0)
			value_size = (size_t) bench_parse_number(argv[0], "value_size", a + 13);
		else if (strncmp(a, "--batch=", 8) == 0)
			batch_rows = (size_t) bench_parse_number(argv[0], "batch", a + 8);
		else if (strncmp(a, "--buffer=", 9) == 0)
			buffer_bytes = (size_t) bench_parse_number(argv[0], "buffer", a + 9);
		else if (strncmp(a, "--db=", 5) == 0)
			db_root = a + 5;
		else if (strncmp(a, "--modes=", 8) == 0)
			modes = a + 8;
		else if (strncmp(a, "--order=", 8) == 0)
			order = a + 8;
		else if (strcmp(a, "--keep") == 0)
			keep = 1;
		else
		{
			fprintf(stderr, "usage: %s [--num=N] [--value_size=B] [--batch=N] "
					"[--buffer=BYTES] [--db=DIR] [--modes=batch,stage,stagecheck,"
					"onebatch] [--order=seq|random|both] [--keep]\n", argv[0]);
			return 2;
		}
	}
	if (num == 0 || batch_rows == 0)
	{
		fprintf(stderr, "%s: --num and --batch must be positive\n", argv[0]);
		return 2;
	}
	if (mkdir(db_root, 0755) != 0 && errno != EEXIST)
	{
		perror(db_root);
		return 1;
	}
	bench_cpu_model(cpu, sizeof(cpu));
	printf("ingest_bench: %" PRIu64 " rows, 8-byte keys, %zu-byte values, "
		   "batches of %zu, stage buffer %s%zu; CPU %s; %ld cores\n", num,
		   value_size, batch_rows, buffer_bytes ? "" : "memtable_bytes = ",
		   buffer_bytes ? buffer_bytes : (size_t) 4 << 20, cpu,
		   sysconf(_SC_NPROCESSORS_ONLN));
	for (i = 0; i < 2; i++)
	{
		if ((i == 0 && strcmp(order, "random") == 0) ||
			(i == 1 && strcmp(order, "seq") == 0))
			continue;
		snprintf(list, sizeof(list), "%s", modes);
		for (m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save))
			failed |= run_child(m, i);
	}
	return failed;
}

/*
 * writers_bench.c
 *		N writer processes on one store (N = 1, 2, 4, 8), each committing
 *		single-put batches (16-byte random keys, 100-byte values), with and
 *		without a sync per commit: the total commit rate and its ratio to
 *		N = 1.  Group commit makes one fdatasync cover the commits of every
 *		process that appended before it, so with sync the rate should grow
 *		with N; without sync, the writers share one write lock and one
 *		memtable (the store's shared memtable: no process replays the
 *		others' records).
 *
 * usage: writers_bench [seconds per run, default 5]
 * Each run uses a fresh mktemp -d directory under $TMPDIR (or /tmp), removed
 * after it.  Run it on the file system whose fdatasync you want measured.
 *
 * A measuring tool, not a test: it fails only when a commit fails.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lsm.h"

#define MAX_N 8

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t
next_rand(uint64_t *s)
{
	uint64_t	z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void
fail(const char *what, lsm_db *db, int rc)
{
	fprintf(stderr, "writers_bench: %s: %s (%s)\n", what, lsm_strerror(rc),
			lsm_errmsg(db));
	exit(1);
}

/* One writer: commits until the deadline; returns the count in *done. */
static void
writer(const char *dir, int w, bool sync, double deadline, uint64_t *done)
{
	lsm_options o;
	lsm_db	   *db;
	lsm_batch  *b = lsm_batch_new();
	uint64_t	rng = (uint64_t) w * 7919 + 1,
				n = 0;
	char		key[16],
				val[100];
	int			rc;

	lsm_options_init(&o);
	o.lock_timeout_ms = 60000;
	if ((rc = lsm_open(dir, &o, &db)) != LSM_OK)
		fail("lsm_open", NULL, rc);
	memset(val, 'v', sizeof(val));
	while (now() < deadline)
	{
		uint64_t	r = next_rand(&rng);

		memcpy(key, &r, 8);
		memcpy(key + 8, &w, sizeof(int));
		memset(key + 8 + sizeof(int), 'k', 8 - sizeof(int));
		lsm_batch_clear(b);
		lsm_batch_put(b, key, sizeof(key), val, sizeof(val));
		rc = lsm_write_opt(db, b, sync ? LSM_WRITE_SYNC : LSM_WRITE_NOSYNC);
		if (rc != LSM_OK)
			fail("lsm_write_opt", db, rc);
		n++;
	}
	*done = n;
	lsm_batch_free(b);
	lsm_close(db);
}

int
main(int argc, char **argv)
{
	double		seconds = argc > 1 ? atof(argv[1]) : 5;
	char		tmpl[4096];
	const char *base;
	uint64_t   *counts = mmap(NULL, sizeof(uint64_t) * MAX_N,
							  PROT_READ | PROT_WRITE,
							  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int			sync,
				n;

	if (counts == MAP_FAILED)
		return 1;
	base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	for (sync = 1; sync >= 0; sync--)
	{
		double		rate1 = 0;

		for (n = 1; n <= MAX_N; n *= 2)
		{
			char	   *dir;
			double		start,
						elapsed;
			uint64_t	total = 0;
			int			i;
			char		cmd[4200];

			snprintf(tmpl, sizeof(tmpl), "%s/writers_bench.XXXXXX", base);
			if (mkdtemp(tmpl) == NULL)
			{
				perror("mkdtemp");
				return 1;
			}
			dir = tmpl;
			start = now();
			for (i = 0; i < n; i++)
			{
				pid_t		pid = fork();

				if (pid < 0)
				{
					perror("fork");
					return 1;
				}
				if (pid == 0)
				{
					writer(dir, i, sync, start + seconds, &counts[i]);
					_exit(0);
				}
			}
			for (i = 0; i < n; i++)
			{
				int			status;

				if (wait(&status) < 0 || !WIFEXITED(status) ||
					WEXITSTATUS(status) != 0)
				{
					fprintf(stderr, "writers_bench: a writer failed\n");
					return 1;
				}
			}
			elapsed = now() - start;
			for (i = 0; i < n; i++)
				total += counts[i];
			if (n == 1)
				rate1 = total / elapsed;
			printf("writers %d %-6s: %10.0f commits/s  %8.1f us/commit  %5.2fx of 1 writer\n",
				   n, sync ? "sync" : "nosync", total / elapsed,
				   elapsed * 1e6 / (double) total * n,
				   rate1 > 0 ? total / elapsed / rate1 : 1.0);
			fflush(stdout);
			snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
			if (system(cmd) != 0)
				return 1;
		}
	}
	return 0;
}

/*
 * db_bench.c
 *		Runs LevelDB-style db_bench workloads against our LSM engine, RocksDB
 *		and LevelDB in one process and prints them side by side.
 *
 * Every engine gets the same keys, values and operation sequences: keys are
 * 16 bytes, the "%016llu" decimal of a key number, so byte order is numeric
 * order; stores hold the odd numbers 1, 3, ..., 2*num-1, and the even numbers
 * are the absent keys of readmissing, interleaved with the present ones (a
 * Bloom filter has to answer them; no key-range check can).  Values are 100
 * bytes: the key, then 84 bytes of a pool in which every 100-byte stretch is
 * 50 random printable bytes written twice (about 50% compressible, like
 * db_bench's); compression is off in RocksDB and LevelDB because our engine
 * does not compress.  Every read checks the value it gets back.
 *
 * Random orders are fixed-seed: fills use a bijective permutation of
 * 0..num-1 (bench_permute), reads draw key numbers from splitmix64 seeded by
 * the workload name and run number, so every engine sees exactly the same
 * sequence.  Each fill starts from an empty store and is followed by a
 * compaction to steady state (timed and reported separately; it also keeps
 * one engine's background compaction from running during the next engine's
 * turn).  Read workloads run on the store of the last fill, --repeat times,
 * and report the median.
 *
 * Output: "name : engine  X micros/op  Y ops/s" per workload and engine, a
 * ratio line per workload (first engine's ops/s over each other's), memory
 * per open store, and a summary table.  Benchmarks are never timed
 * assertions; the only failures are wrong results and engine errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <ftw.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_common.h"

#define MAX_ENGINES		4
#define MAX_BENCHMARKS	32
#define MAX_NOTES		16
#define MAX_REPEAT		64
#define MULTIGET_BATCH	64
#define WARM_READS		100000
#define VALUE_POOL_SIZE (1 << 20)
#define DEFAULT_DB_DIR	"/tmp/lsm_db_bench"
#define DEFAULT_BENCHMARKS \
	"fillseq,fillrandom,readrandom,readmissing,readseq,readreverse,seekrandom,multiget"

/* What a workload does to the store, and so what it needs first. */
typedef enum workload_kind
{
	WL_FILL,					/* empties the store and loads num keys */
	WL_READ,					/* needs a loaded, compacted store */
	WL_LSM_STATS,				/* ours only, on the loaded store */
	WL_LSM_OWN_STORES,			/* ours only, builds its own stores */
	WL_MEMTABLE					/* builds its own stores, all in memtables */
} workload_kind;

/* The outcome of one run of a workload on one engine. */
typedef struct run_result
{
	double		micros;			/* elapsed */
	uint64_t	ops;
	uint64_t	found;			/* keys found (or entries/seeks verified) */
	uint64_t	expected;		/* what found must be */
} run_result;

/* One engine in this run: its driver, open store and state. */
typedef struct engine_state
{
	const bench_driver *drv;
	void	   *db;				/* NULL while closed */
	char		dir[4096 + 32];
	int			loaded;			/* holds the num keys of a fill */
	int			fills_only;		/* a variant: skips all but the fills */
} engine_state;

typedef void (*workload_fn) (engine_state *e, uint64_t seed, run_result *rr);

typedef struct workload
{
	const char *name;
	workload_kind kind;
	workload_fn run;
	const char *help;
} workload;

/* A summary table row: micros/op per engine, < 0 if not run. */
typedef struct summary_row
{
	char		name[32];
	double		micros[MAX_ENGINES];
} summary_row;

static bench_config config;
static engine_state engines[MAX_ENGINES];
static int	nengines;
static char db_dir[4096] = DEFAULT_DB_DIR;
static summary_row summary[2 * MAX_BENCHMARKS];
static int	nsummary;
static char *notes[MAX_NOTES];
static int	nnotes;
static char value_pool[VALUE_POOL_SIZE];

static void wl_fillseq(engine_state *e, uint64_t seed, run_result *rr);
static void wl_fillrandom(engine_state *e, uint64_t seed, run_result *rr);
static void wl_readrandom(engine_state *e, uint64_t seed, run_result *rr);
static void wl_readmissing(engine_state *e, uint64_t seed, run_result *rr);
static void wl_readseq(engine_state *e, uint64_t seed, run_result *rr);
static void wl_readreverse(engine_state *e, uint64_t seed, run_result *rr);
static void wl_seekrandom(engine_state *e, uint64_t seed, run_result *rr);
static void wl_multiget(engine_state *e, uint64_t seed, run_result *rr);

static const workload workloads[] = {
	{"fillseq", WL_FILL, wl_fillseq, "load num keys in key order"},
	{"fillrandom", WL_FILL, wl_fillrandom, "load num keys in random order"},
	{"readrandom", WL_READ, wl_readrandom, "get existing keys, random order"},
	{"readmissing", WL_READ, wl_readmissing, "get absent keys, random order"},
	{"readseq", WL_READ, wl_readseq, "iterate over the whole store"},
	{"readreverse", WL_READ, wl_readreverse, "iterate backwards over the whole store"},
	{"seekrandom", WL_READ, wl_seekrandom, "seek to a random key, read one"},
	{"multiget", WL_READ, wl_multiget, "batches of 64 existing keys"},
	{"filterfpr", WL_LSM_STATS, NULL, "ours: key filter FPR (--filter_fpr)"},
	{"absent_vs_sstables", WL_LSM_OWN_STORES, NULL,
	"ours: absent gets, 1 vs 100+ SSTables (--many_sstables)"},
	{"memtable_reads", WL_MEMTABLE, NULL,
	"absent and present gets, num keys in the memtable, then compacted"},
};

#define NWORKLOADS ((int) (sizeof(workloads) / sizeof(workloads[0])))

/*
 * The engines compiled in, in their default order.
 */
static const bench_driver *const all_drivers[] = {
#ifndef BENCH_NO_LSM
	&bench_lsm_driver,
	&bench_lsm_shared_driver,
#endif
#ifndef BENCH_NO_ROCKSDB
	&bench_rocksdb_driver,
#endif
#ifndef BENCH_NO_LEVELDB
	&bench_leveldb_driver,
#endif
	NULL
};

/*
 * Prints "engine: op: message" to stderr and exits with status 1.  The store
 * directories are left in place for inspection.
 */
void
bench_fatal(const char *engine, const char *op, const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	fprintf(stderr, "db_bench: FAILED: %s: %s: ", engine, op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(stores left in %s)\n", db_dir);
	exit(1);
}

/*
 * Returns CLOCK_MONOTONIC in microseconds.
 */
double
bench_now_micros(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * Compares two doubles for qsort.
 */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * Returns the median of v[0..n-1] (sorting v in place).  REQUIRES: n > 0.
 */
double
bench_median(double *v, int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	if (n % 2 == 1)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * splitmix64: advances *state and returns the next pseudo-random number.
 */
uint64_t
bench_splitmix64(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/*
 * Returns a pseudo-random number in [0, n) (multiply-shift, no modulo).
 */
uint64_t
bench_uniform(uint64_t *state, uint64_t n)
{
	return (uint64_t) (((unsigned __int128) bench_splitmix64(state) * n) >> 64);
}

/*
 * One round of a bijection on the integers below 2^bits: add a constant,
 * then xorshift-multiply mixing; each step is invertible modulo 2^bits.
 */
static uint64_t
permute_round(uint64_t x, int bits, uint64_t mask)
{
	x = (x + UINT64_C(0x9e3779b97f4a7c15)) & mask;
	x ^= x >> (bits / 2 + 1);
	x = (x * UINT64_C(0xbf58476d1ce4e5b9)) & mask;
	x ^= x >> (bits / 3 + 1);
	x = (x * UINT64_C(0x94d049bb133111eb)) & mask;
	x ^= x >> (bits / 2 + 1);
	return x;
}

/*
 * Returns the i-th element of a fixed pseudo-random permutation of [0, n):
 * a bijection on the next power of two, restricted to [0, n) by cycle
 * walking (apply it again while the result is >= n), so no table is needed.
 * REQUIRES: i < n.
 */
uint64_t
bench_permute(uint64_t i, uint64_t n)
{
	int			bits;
	uint64_t	mask;
	uint64_t	x = i;

	if (n <= 1)
		return 0;
	bits = 64 - __builtin_clzll(n - 1);
	mask = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
	do
		x = permute_round(x, bits, mask);
	while (x >= n);
	return x;
}

/*
 * Writes the 16-byte key of key number n: "%016llu", without a NUL.
 */
void
bench_format_key(char *buf, uint64_t n)
{
	int			i;

	for (i = BENCH_KEY_SIZE - 1; i >= 0; i--)
	{
		buf[i] = (char) ('0' + n % 10);
		n /= 10;
	}
}

/*
 * Fills the value pool: every 100-byte stretch is 50 random printable
 * characters written twice, so values compress to about half.
 */
static void
value_pool_init(void)
{
	uint64_t	rng = 301;
	size_t		off;
	int			i;

	for (off = 0; off + 100 <= VALUE_POOL_SIZE; off += 100)
	{
		for (i = 0; i < 50; i++)
			value_pool[off + i] = (char) (' ' + bench_uniform(&rng, 95));
		memcpy(value_pool + off + 50, value_pool + off, 50);
	}
}

/*
 * Writes the 100-byte value of key number n: the key, then 84 bytes of the
 * pool at an offset derived from n.
 */
void
bench_make_value(char *buf, uint64_t n)
{
	uint64_t	h = n;
	size_t		off;

	off = (size_t) bench_uniform(&h, VALUE_POOL_SIZE -
								 (BENCH_VALUE_SIZE - BENCH_KEY_SIZE));
	bench_format_key(buf, n);
	memcpy(buf + BENCH_KEY_SIZE, value_pool + off,
		   BENCH_VALUE_SIZE - BENCH_KEY_SIZE);
}

/*
 * Returns 1 if val is exactly the value of key number n.
 */
int
bench_check_value(uint64_t n, const char *val, size_t val_len)
{
	char		expect[BENCH_VALUE_SIZE];

	if (val_len != BENCH_VALUE_SIZE)
		return 0;
	bench_make_value(expect, n);
	return memcmp(val, expect, BENCH_VALUE_SIZE) == 0;
}

/*
 * nftw callback for bench_remove_tree: removes one file or directory.
 */
static int
remove_entry(const char *path, const struct stat *sb, int flag,
			 struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	if (remove(path) != 0 && errno != ENOENT)
		fprintf(stderr, "db_bench: could not remove \"%s\": %s\n", path,
				strerror(errno));
	return 0;
}

/*
 * Removes path and everything under it, if it exists.
 */
void
bench_remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return;
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Prints one result line: "name : engine  X micros/op  Y ops/s  note".
 */
void
bench_print_result(const char *name, const char *engine,
				   double micros_per_op, const char *note)
{
	printf("%-12s : %-11s %9.3f micros/op %10.0f ops/s%s%s\n",
		   name, engine, micros_per_op,
		   micros_per_op > 0 ? 1e6 / micros_per_op : 0.0,
		   note != NULL && note[0] != '\0' ? "  " : "",
		   note != NULL ? note : "");
}

/*
 * Saves a line for the end of the report (printed under the summary).
 */
void
bench_add_note(const char *fmt,...)
{
	va_list		ap;
	char		buf[512];

	if (nnotes >= MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	notes[nnotes] = strdup(buf);
	if (notes[nnotes] != NULL)
		nnotes++;
}

/*
 * Loads keys 2*perm(i)+1 (or 2*i+1 in key order) for i < num.  The driver's
 * fill_begin and fill_end hooks (lsm-shared's compactor process) are inside
 * the timed region.
 */
static void
fill(engine_state *e, int random_order, run_result *rr)
{
	char		key[BENCH_KEY_SIZE];
	char		val[BENCH_VALUE_SIZE];
	uint64_t	i;
	double		start = bench_now_micros();

	if (e->drv->fill_begin != NULL)
		e->drv->fill_begin(e->db, e->dir, &config);
	for (i = 0; i < config.num; i++)
	{
		uint64_t	k = 2 * (random_order ? bench_permute(i, config.num) : i) + 1;

		bench_format_key(key, k);
		bench_make_value(val, k);
		e->drv->put(e->db, key, sizeof(key), val, sizeof(val));
	}
	if (e->drv->fill_end != NULL)
		e->drv->fill_end(e->db);
	rr->micros = bench_now_micros() - start;
	rr->ops = rr->found = rr->expected = config.num;
}

/*
 * fillseq: num keys in ascending order into an empty store.
 */
static void
wl_fillseq(engine_state *e, uint64_t seed, run_result *rr)
{
	(void) seed;
	fill(e, 0, rr);
}

/*
 * fillrandom: num distinct keys in a fixed random order into an empty
 * store (a permutation, unlike LevelDB's db_bench, so that every key is
 * present afterwards and reads can demand it).
 */
static void
wl_fillrandom(engine_state *e, uint64_t seed, run_result *rr)
{
	(void) seed;
	fill(e, 1, rr);
}

/*
 * Gets random key numbers 2*u+odd (u uniform below num) and verifies the
 * values of the keys found.
 */
static void
read_keys(engine_state *e, uint64_t seed, int odd, run_result *rr)
{
	char		key[BENCH_KEY_SIZE];
	uint64_t	rng = seed;
	uint64_t	found = 0;
	uint64_t	i;
	double		start = bench_now_micros();

	for (i = 0; i < config.reads; i++)
	{
		uint64_t	k = 2 * bench_uniform(&rng, config.num) + odd;
		char	   *v;
		size_t		vlen;

		bench_format_key(key, k);
		if (e->drv->get(e->db, key, sizeof(key), &v, &vlen))
		{
			if (!bench_check_value(k, v, vlen))
				bench_fatal(e->drv->name, "get",
							"wrong value for key %.16s (%zu bytes)", key, vlen);
			found++;
			e->drv->free_value(v);
		}
	}
	rr->micros = bench_now_micros() - start;
	rr->ops = config.reads;
	rr->found = found;
}

/*
 * readrandom: random existing keys; every one must be found.
 */
static void
wl_readrandom(engine_state *e, uint64_t seed, run_result *rr)
{
	read_keys(e, seed, 1, rr);
	rr->expected = config.reads;
}

/*
 * readmissing: random absent keys (even numbers, between present ones);
 * none may be found.
 */
static void
wl_readmissing(engine_state *e, uint64_t seed, run_result *rr)
{
	read_keys(e, seed, 0, rr);
	rr->expected = 0;
}

/*
 * Adds 2 to a 16-digit decimal key in place.
 */
static void
key_add_two(char *key)
{
	int			i = BENCH_KEY_SIZE - 1;
	int			carry = 2;

	while (carry && i >= 0)
	{
		int			d = key[i] - '0' + carry;

		key[i] = (char) ('0' + d % 10);
		carry = d / 10;
		i--;
	}
}

/* Subtracts 2 from a 16-digit decimal key (at least 2) in place. */
static void
key_sub_two(char *key)
{
	int			i = BENCH_KEY_SIZE - 1;
	int			borrow = 2;

	while (borrow && i >= 0)
	{
		int			d = key[i] - '0' - borrow;

		borrow = d < 0;
		key[i] = (char) ('0' + (d < 0 ? d + 10 : d));
		i--;
	}
}

/* Fails unless the iterator's entry is key expect with its 100-byte value. */
static void
check_entry(engine_state *e, void *it, const char *what, uint64_t count,
			const char *expect)
{
	size_t		klen;
	size_t		vlen;
	const char *k = e->drv->iter_key(it, &klen);
	const char *v = e->drv->iter_value(it, &vlen);

	if (klen != BENCH_KEY_SIZE || memcmp(k, expect, BENCH_KEY_SIZE) != 0 ||
		vlen != BENCH_VALUE_SIZE || memcmp(v, k, BENCH_KEY_SIZE) != 0)
		bench_fatal(e->drv->name, what,
					"entry %llu is \"%.*s\" (%zu-byte value), expected "
					"\"%.16s\"", (unsigned long long) count,
					(int) (klen < 64 ? klen : 64), k, vlen, expect);
}

/*
 * readseq: iterates over the whole store; entry i must be key 2*i+1 with a
 * 100-byte value that starts with its key.
 */
static void
wl_readseq(engine_state *e, uint64_t seed, run_result *rr)
{
	char		expect[BENCH_KEY_SIZE];
	uint64_t	count = 0;
	void	   *it;
	double		start = bench_now_micros();

	(void) seed;
	bench_format_key(expect, 1);
	it = e->drv->iter_open(e->db);
	for (e->drv->iter_seek(it, NULL, 0); e->drv->iter_valid(it);
		 e->drv->iter_next(it))
	{
		check_entry(e, it, "readseq", count, expect);
		count++;
		key_add_two(expect);
	}
	e->drv->iter_close(it);
	rr->micros = bench_now_micros() - start;
	rr->ops = count;
	rr->found = count;
	rr->expected = config.num;
}

/*
 * readreverse: iterates backwards over the whole store; entry i must be key
 * 2*(num-1-i)+1.
 */
static void
wl_readreverse(engine_state *e, uint64_t seed, run_result *rr)
{
	char		expect[BENCH_KEY_SIZE];
	uint64_t	count = 0;
	void	   *it;
	double		start = bench_now_micros();

	(void) seed;
	bench_format_key(expect, 2 * config.num - 1);
	it = e->drv->iter_open(e->db);
	for (e->drv->iter_seek_last(it); e->drv->iter_valid(it);
		 e->drv->iter_prev(it))
	{
		check_entry(e, it, "readreverse", count, expect);
		if (++count < config.num)
			key_sub_two(expect);
	}
	e->drv->iter_close(it);
	rr->micros = bench_now_micros() - start;
	rr->ops = count;
	rr->found = count;
	rr->expected = config.num;
}

/*
 * seekrandom: seeks to a random key number below 2*num (present or absent)
 * and reads one entry, which must be the smallest present key >= it.  One
 * iterator for the whole run unless --seek_iter_per_op (LevelDB's db_bench
 * opens one per seek).
 */
static void
wl_seekrandom(engine_state *e, uint64_t seed, run_result *rr)
{
	char		key[BENCH_KEY_SIZE];
	char		expect[BENCH_KEY_SIZE];
	uint64_t	rng = seed;
	uint64_t	found = 0;
	uint64_t	i;
	void	   *it = NULL;
	double		start = bench_now_micros();

	if (!config.seek_iter_per_op)
		it = e->drv->iter_open(e->db);
	for (i = 0; i < config.reads; i++)
	{
		uint64_t	t = bench_uniform(&rng, 2 * config.num);
		size_t		klen;
		size_t		vlen;
		const char *k;
		const char *v;

		if (config.seek_iter_per_op)
			it = e->drv->iter_open(e->db);
		bench_format_key(key, t);
		bench_format_key(expect, t | 1);
		e->drv->iter_seek(it, key, sizeof(key));
		if (!e->drv->iter_valid(it))
			bench_fatal(e->drv->name, "seekrandom",
						"seek to %.16s found no entry", key);
		k = e->drv->iter_key(it, &klen);
		v = e->drv->iter_value(it, &vlen);
		if (klen != BENCH_KEY_SIZE || memcmp(k, expect, BENCH_KEY_SIZE) != 0)
			bench_fatal(e->drv->name, "seekrandom",
						"seek to %.16s found \"%.*s\", expected %.16s", key,
						(int) (klen < 64 ? klen : 64), k, expect);
		if (!bench_check_value(t | 1, v, vlen))
			bench_fatal(e->drv->name, "seekrandom",
						"wrong value for key %.16s", expect);
		found++;
		if (config.seek_iter_per_op)
			e->drv->iter_close(it);
	}
	if (!config.seek_iter_per_op)
		e->drv->iter_close(it);
	rr->micros = bench_now_micros() - start;
	rr->ops = config.reads;
	rr->found = found;
	rr->expected = config.reads;
}

/*
 * multiget: reads/64 batches of 64 random existing keys (unsorted); every
 * key must be found with its value.
 */
static void
wl_multiget(engine_state *e, uint64_t seed, run_result *rr)
{
	char		keybuf[MULTIGET_BATCH][BENCH_KEY_SIZE];
	const char *keys[MULTIGET_BATCH];
	size_t		klens[MULTIGET_BATCH];
	uint64_t	nums[MULTIGET_BATCH];
	char	   *vals[MULTIGET_BATCH];
	size_t		vlens[MULTIGET_BATCH];
	uint64_t	nbatches = config.reads / MULTIGET_BATCH;
	uint64_t	rng = seed;
	uint64_t	found = 0;
	uint64_t	b;
	int			i;
	double		start;

	if (nbatches == 0)
		nbatches = 1;
	for (i = 0; i < MULTIGET_BATCH; i++)
	{
		keys[i] = keybuf[i];
		klens[i] = BENCH_KEY_SIZE;
	}
	start = bench_now_micros();
	for (b = 0; b < nbatches; b++)
	{
		for (i = 0; i < MULTIGET_BATCH; i++)
		{
			nums[i] = 2 * bench_uniform(&rng, config.num) + 1;
			bench_format_key(keybuf[i], nums[i]);
		}
		e->drv->multi_get(e->db, MULTIGET_BATCH, keys, klens, vals, vlens);
		for (i = 0; i < MULTIGET_BATCH; i++)
		{
			if (vals[i] == NULL)
				continue;
			if (!bench_check_value(nums[i], vals[i], vlens[i]))
				bench_fatal(e->drv->name, "multiget",
							"wrong value for key %.16s (%zu bytes)",
							keybuf[i], vlens[i]);
			found++;
			e->drv->free_value(vals[i]);
		}
	}
	rr->micros = bench_now_micros() - start;
	rr->ops = nbatches * MULTIGET_BATCH;
	rr->found = found;
	rr->expected = rr->ops;
}

/*
 * Returns the workload named name, or NULL.
 */
static const workload *
find_workload(const char *name)
{
	int			i;

	for (i = 0; i < NWORKLOADS; i++)
		if (strcmp(workloads[i].name, name) == 0)
			return &workloads[i];
	return NULL;
}

/*
 * Returns the engine named name among those in this run, or NULL.
 */
static engine_state *
find_engine(const char *name)
{
	int			i;

	for (i = 0; i < nengines; i++)
		if (strcmp(engines[i].drv->name, name) == 0)
			return &engines[i];
	return NULL;
}

/*
 * Returns a row of the summary table for name, creating it.
 */
static summary_row *
summary_get(const char *name)
{
	summary_row *row;
	int			i;

	for (i = 0; i < nsummary; i++)
		if (strcmp(summary[i].name, name) == 0)
			return &summary[i];
	row = &summary[nsummary++];
	snprintf(row->name, sizeof(row->name), "%s", name);
	for (i = 0; i < MAX_ENGINES; i++)
		row->micros[i] = -1;
	return row;
}

/*
 * Prints the ratio line of a summary row: the first engine's ops/s over
 * each other engine's.
 */
static void
print_ratios(const summary_row *row)
{
	int			i;
	int			printed = 0;

	if (nengines < 2 || row->micros[0] <= 0)
		return;
	printf("%-12s :", row->name);
	for (i = 1; i < nengines; i++)
		if (row->micros[i] > 0)
			printf("%s%s/%s %.2fx ops/s", printed++ ? "  " : " ",
				   engines[0].drv->name, engines[i].drv->name,
				   row->micros[i] / row->micros[0]);
	printf("\n");
}

/*
 * Formats the per-level SSTable counts of an engine ("57 [0 5 52 0 0 0 0]").
 */
static void
format_sstables(engine_state *e, char *buf, size_t buf_size)
{
	int			per_level[BENCH_MAX_LEVELS];
	int			total = e->drv->sstables(e->db, per_level);
	int			used;
	int			level;

	if (total < 0)
	{
		snprintf(buf, buf_size, "unknown");
		return;
	}
	used = snprintf(buf, buf_size, "%d [", total);
	for (level = 0; level < BENCH_MAX_LEVELS && used < (int) buf_size; level++)
		used += snprintf(buf + used, buf_size - used, "%s%d",
						 level ? " " : "", per_level[level]);
	if (used < (int) buf_size)
		snprintf(buf + used, buf_size - used, "]");
}

/*
 * Compacts the engine's store to steady state and prints the time taken and
 * the SSTables per level.  Returns the elapsed microseconds.
 */
static double
compact_and_report(engine_state *e)
{
	char		sst[128];
	double		start = bench_now_micros();
	double		micros;

	e->drv->compact(e->db);
	micros = bench_now_micros() - start;
	format_sstables(e, sst, sizeof(sst));
	printf("%-12s : %-11s %9.3f s to steady state, SSTables %s by level\n",
		   "  compact", e->drv->name, micros / 1e6, sst);
	return micros;
}

/*
 * Empties the engine's store directory and opens a fresh store.
 */
static void
reset_store(engine_state *e)
{
	if (e->db != NULL)
		e->drv->close(e->db);
	e->db = NULL;
	e->loaded = 0;
	bench_remove_tree(e->dir);
	e->db = e->drv->open(e->dir, &config);
}

/*
 * Runs a fill workload on every engine: fresh store, timed fill, then a
 * compaction to steady state (reported separately and as fill+compact).
 */
static void
run_fill(const workload *w)
{
	summary_row *row = summary_get(w->name);
	summary_row *both;
	char		both_name[48];
	int			i;

	snprintf(both_name, sizeof(both_name), "%s+compact", w->name);
	both = summary_get(both_name);
	for (i = 0; i < nengines; i++)
	{
		engine_state *e = &engines[i];
		run_result	rr;
		double		compact;
		char		note[64];

		reset_store(e);
		w->run(e, 0, &rr);
		row->micros[i] = rr.micros / rr.ops;
		snprintf(note, sizeof(note), "%7.1f MB/s",
				 rr.ops * (double) (BENCH_KEY_SIZE + BENCH_VALUE_SIZE) /
				 rr.micros);
		bench_print_result(w->name, e->drv->name, row->micros[i], note);
		compact = compact_and_report(e);
		both->micros[i] = (rr.micros + compact) / rr.ops;
		e->loaded = 1;
	}
	print_ratios(row);
	print_ratios(both);
}

/*
 * Makes sure the engine's store holds the num keys (an untimed fillrandom
 * if no fill ran yet).
 */
static void
ensure_loaded(engine_state *e)
{
	run_result	rr;

	if (e->loaded)
		return;
	printf("%-12s : %-11s loading %llu keys in random order (untimed)\n",
		   "  load", e->drv->name, (unsigned long long) config.num);
	reset_store(e);
	wl_fillrandom(e, 0, &rr);
	compact_and_report(e);
	e->loaded = 1;
}

/*
 * Returns a seed for run rep of the workload named name: the same for every
 * engine, different for every run.
 */
static uint64_t
workload_seed(const char *name, int rep)
{
	uint64_t	h = UINT64_C(1469598103934665603);

	for (; *name; name++)
		h = (h ^ (unsigned char) *name) * UINT64_C(1099511628211);
	return h + (uint64_t) rep;
}

/*
 * Runs a read workload config.repeat times on every engine (but the
 * fill-only variants) and prints the median.  A wrong found count is fatal,
 * after the line is printed.
 */
static void
run_read(const workload *w)
{
	summary_row *row = summary_get(w->name);
	int			i;

	for (i = 0; i < nengines; i++)
		if (!engines[i].fills_only)
			ensure_loaded(&engines[i]);
	for (i = 0; i < nengines; i++)
	{
		engine_state *e = &engines[i];
		double		runs[MAX_REPEAT];
		run_result	rr = {0};
		char		note[160];
		int			r;

		if (e->fills_only)
			continue;
		for (r = 0; r < config.repeat; r++)
		{
			w->run(e, workload_seed(w->name, r), &rr);
			runs[r] = rr.micros / (rr.ops ? rr.ops : 1);
			if (rr.found != rr.expected)
				break;
		}
		row->micros[i] = bench_median(runs, r < config.repeat ? r + 1 :
									  config.repeat);
		snprintf(note, sizeof(note), "(found %llu of %llu)%s%s",
				 (unsigned long long) rr.found,
				 (unsigned long long) rr.ops,
				 strcmp(w->name, "multiget") == 0 &&
				 e->drv->multi_get_note != NULL ? "  " : "",
				 strcmp(w->name, "multiget") == 0 &&
				 e->drv->multi_get_note != NULL ? e->drv->multi_get_note : "");
		bench_print_result(w->name, e->drv->name, row->micros[i], note);
		if (rr.found != rr.expected)
			bench_fatal(e->drv->name, w->name,
						"found %llu of %llu keys, expected %llu",
						(unsigned long long) rr.found,
						(unsigned long long) rr.ops,
						(unsigned long long) rr.expected);
	}
	print_ratios(row);
}

/*
 * memtable_reads: gets with every key in the memtable.  Each engine gets a
 * fresh store with a write buffer large enough (320 bytes per key, at least
 * --write_buffer_size) that the untimed random fill never flushes (this is
 * checked); then
 * readmissing and readrandom run on it (readmissing_mem, readrandom_mem),
 * --repeat times each; then the store is compacted (the memtable flushed)
 * and readmissing runs again on the same data with an empty memtable
 * (readmissing_cmp).  The note of readmissing_mem gives the engine's
 * memtable/compacted cost ratio.  Afterwards the store is emptied and the
 * other workloads see the usual write buffer (and load their own store).
 */
static void
run_memtable_reads(void)
{
	static const char *const names[] = {"readmissing_mem", "readrandom_mem",
	"readmissing_cmp"};
	summary_row *rows[3];
	size_t		saved = config.memtable_bytes;
	int			i,
				j;

	for (j = 0; j < 3; j++)
		rows[j] = summary_get(names[j]);
	for (i = 0; i < nengines; i++)
	{
		engine_state *e = &engines[i];
		run_result	rr;
		int			per_level[BENCH_MAX_LEVELS];
		int			nsst;

		if (e->fills_only)
			continue;
		if (config.num * 320 > config.memtable_bytes)
			config.memtable_bytes = (size_t) config.num * 320;
		reset_store(e);
		wl_fillrandom(e, 0, &rr);
		nsst = e->drv->sstables(e->db, per_level);
		printf("%-12s : %-11s loaded %llu keys in %.3f s (untimed), write "
			   "buffer %zu bytes, %d SSTables\n", "  load", e->drv->name,
			   (unsigned long long) config.num, rr.micros / 1e6,
			   config.memtable_bytes, nsst);
		if (nsst > 0)
			bench_fatal(e->drv->name, "memtable_reads",
						"the fill flushed: %d SSTables", nsst);
		for (j = 0; j < 3; j++)
		{
			double		runs[MAX_REPEAT];
			char		note[96];
			int			r;

			if (j == 2)
				compact_and_report(e);
			for (r = 0; r < config.repeat; r++)
			{
				read_keys(e, workload_seed(names[j], r), j == 1, &rr);
				rr.expected = j == 1 ? config.reads : 0;
				runs[r] = rr.micros / rr.ops;
				if (rr.found != rr.expected)
					bench_fatal(e->drv->name, names[j],
								"found %llu of %llu keys, expected %llu",
								(unsigned long long) rr.found,
								(unsigned long long) rr.ops,
								(unsigned long long) rr.expected);
			}
			rows[j]->micros[i] = bench_median(runs, config.repeat);
			snprintf(note, sizeof(note), "(found %llu of %llu)",
					 (unsigned long long) rr.found,
					 (unsigned long long) rr.ops);
			if (j == 2)
				snprintf(note + strlen(note), sizeof(note) - strlen(note),
						 "  memtable/compacted %.2fx cost",
						 rows[0]->micros[i] / rows[2]->micros[i]);
			bench_print_result(names[j], e->drv->name, rows[j]->micros[i],
							   note);
		}
		config.memtable_bytes = saved;
		reset_store(e);
	}
	for (j = 0; j < 3; j++)
		print_ratios(rows[j]);
}

/*
 * Runs one workload of the --benchmarks list.
 */
static void
run_workload(const workload *w)
{
	engine_state *lsm = find_engine("lsm");

	switch (w->kind)
	{
		case WL_FILL:
			run_fill(w);
			break;
		case WL_READ:
			run_read(w);
			break;
		case WL_MEMTABLE:
			run_memtable_reads();
			break;
		case WL_LSM_STATS:
#ifndef BENCH_NO_LSM
			if (lsm != NULL)
			{
				ensure_loaded(lsm);
				bench_lsm_filterfpr(lsm->db, &config);
				break;
			}
#endif
			printf("%-12s : skipped (needs engine lsm)\n", w->name);
			break;
		case WL_LSM_OWN_STORES:
#ifndef BENCH_NO_LSM
			if (lsm != NULL)
			{
				bench_lsm_absent_vs_sstables(db_dir, &config);
				break;
			}
#endif
			printf("%-12s : skipped (needs engine lsm)\n", w->name);
			break;
	}
	(void) lsm;
}

/*
 * Reads the resident set size and its file-backed part (bytes) from
 * /proc/self/statm.
 */
static void
read_rss(double *resident, double *file_backed)
{
	FILE	   *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0;
	unsigned long res = 0;
	unsigned long shared = 0;
	long		page = sysconf(_SC_PAGESIZE);

	if (f != NULL)
	{
		if (fscanf(f, "%lu %lu %lu", &size, &res, &shared) != 3)
			res = shared = 0;
		fclose(f);
	}
	*resident = (double) res * page;
	*file_backed = (double) shared * page;
}

/*
 * Memory per open store: for each engine in turn (all others closed), the
 * RSS growth of opening it and of WARM_READS random gets after that, and
 * the engine's own account.  Ours reads through mmap, so its file-backed
 * RSS is touched SSTable pages (shared page cache, reclaimable); the others
 * read into a heap block cache (anonymous RSS).
 */
static void
report_memory(void)
{
	uint64_t	warm = config.reads < WARM_READS ? config.reads : WARM_READS;
	int			i;

	for (i = 0; i < nengines; i++)
		if (engines[i].db != NULL)
		{
			engines[i].drv->close(engines[i].db);
			engines[i].db = NULL;
		}
	for (i = 0; i < nengines; i++)
		if (engines[i].loaded && !engines[i].fills_only)
			break;
	if (i == nengines)
		return;
	printf("\nmemory per open store (RSS from /proc/self/statm; other "
		   "stores closed; %llu warm-up gets)\n", (unsigned long long) warm);
	for (i = 0; i < nengines; i++)
	{
		engine_state *e = &engines[i];
		double		r0, f0, r1, f1, r2, f2;
		char		account[256];
		char		key[BENCH_KEY_SIZE];
		uint64_t	rng = 4242;
		uint64_t	n;

		if (!e->loaded || e->fills_only)
			continue;
		malloc_trim(0);
		read_rss(&r0, &f0);
		e->db = e->drv->open(e->dir, &config);
		read_rss(&r1, &f1);
		for (n = 0; n < warm; n++)
		{
			uint64_t	k = 2 * bench_uniform(&rng, config.num) + 1;
			char	   *v;
			size_t		vlen;

			bench_format_key(key, k);
			if (!e->drv->get(e->db, key, sizeof(key), &v, &vlen) ||
				!bench_check_value(k, v, vlen))
				bench_fatal(e->drv->name, "memory", "key %.16s lost after "
							"reopen", key);
			e->drv->free_value(v);
		}
		read_rss(&r2, &f2);
		e->drv->memory(e->db, account, sizeof(account));
		printf("%-12s : %-11s open %+7.1f MiB RSS (anon %+.1f); after gets "
			   "%+7.1f MiB RSS (anon %+.1f, file-backed %+.1f)\n",
			   "memory", e->drv->name, (r1 - r0) / 1048576.0,
			   ((r1 - f1) - (r0 - f0)) / 1048576.0, (r2 - r0) / 1048576.0,
			   ((r2 - f2) - (r0 - f0)) / 1048576.0, (f2 - f0) / 1048576.0);
		printf("%-12s   %-11s %s\n", "", "", account);
		e->drv->close(e->db);
		e->db = NULL;
	}
}

/*
 * Prints the summary table: micros/op per engine, then the first engine's
 * ops/s over each other engine's.
 */
static void
print_summary(void)
{
	int			i;
	int			j;

	if (nsummary == 0)
	{
		for (i = 0; i < nnotes; i++)
			printf("%s\n", notes[i]);
		return;
	}
	printf("\nsummary: micros/op (read workloads: median of %d runs); "
		   "ratio = %s ops/s / other ops/s (> 1: %s faster)\n",
		   config.repeat, engines[0].drv->name, engines[0].drv->name);
	printf("%-20s", "workload");
	for (j = 0; j < nengines; j++)
		printf(" %11s", engines[j].drv->name);
	for (j = 1; j < nengines; j++)
	{
		char		label[32];

		snprintf(label, sizeof(label), "%s/%s", engines[0].drv->name,
				 engines[j].drv->name);
		printf(" %15s", label);
	}
	printf("\n");
	for (i = 0; i < nsummary; i++)
	{
		printf("%-20s", summary[i].name);
		for (j = 0; j < nengines; j++)
			if (summary[i].micros[j] > 0)
				printf(" %11.3f", summary[i].micros[j]);
			else
				printf(" %11s", "-");
		for (j = 1; j < nengines; j++)
			if (summary[i].micros[0] > 0 && summary[i].micros[j] > 0)
				printf(" %14.2fx", summary[i].micros[j] / summary[i].micros[0]);
			else
				printf(" %15s", "-");
		printf("\n");
	}
	for (i = 0; i < nengines; i++)
		if (engines[i].fills_only)
			printf("%s: a variant, fill workloads only (--variants=all "
				   "runs it on every workload)\n", engines[i].drv->name);
	for (i = 0; i < nengines; i++)
		if (engines[i].drv->multi_get_note != NULL)
			printf("multiget on %s: %s\n", engines[i].drv->name,
				   engines[i].drv->multi_get_note);
	for (i = 0; i < nnotes; i++)
		printf("%s\n", notes[i]);
}

/*
 * Prints the machine, the command line and the settings.
 */
static void
print_header(int argc, char **argv)
{
	char		model[256];
	struct utsname un;
	time_t		now = time(NULL);
	int			i;

	bench_cpu_model(model, sizeof(model));
	printf("db_bench: our LSM engine vs RocksDB vs LevelDB, one process\n");
	printf("command:  ");
	for (i = 0; i < argc; i++)
		printf("%s%s", i ? " " : "", argv[i]);
	printf("\n");
	if (uname(&un) == 0)
		printf("machine:  %ld CPUs (nproc), %s; %s %s %s\n",
			   sysconf(_SC_NPROCESSORS_ONLN), model, un.sysname, un.release,
			   un.machine);
	printf("date:     %s", ctime(&now));
	printf("keys:     %d bytes (\"%%016llu\" of the key number; odd numbers "
		   "stored, even numbers absent)\n", BENCH_KEY_SIZE);
	printf("values:   %d bytes, about 50%% compressible; compression "
		   "disabled in RocksDB and LevelDB (our engine does not compress)\n",
		   BENCH_VALUE_SIZE);
	printf("entries:  %llu, reads per read workload: %llu, read workloads "
		   "repeated %d times (median)\n",
		   (unsigned long long) config.num, (unsigned long long) config.reads,
		   config.repeat);
	printf("store:    %s (removed at start and end); all reads hit the OS "
		   "page cache after the fill\n", db_dir);
	printf("settings: equal memtable %zu, target file %zu, block %zu, "
		   "%d bits/key Bloom filters, WAL on, no sync\n",
		   config.memtable_bytes, config.file_bytes, config.block_bytes,
		   config.bits_per_key);
	for (i = 0; i < nengines; i++)
		engines[i].drv->describe(&config, stdout);
	printf("notes:    RocksDB and LevelDB get a %zu MiB block cache so that "
		   "they are not handicapped against\n"
		   "          our mmap reads; every fill is followed by a full "
		   "compaction to steady state:\n"
		   "          rocksdb_compact_range / leveldb_compact_range over all "
		   "keys, lsm_compact_all for ours\n"
		   "          (everything merged into the deepest non-empty "
		   "level)\n",
		   config.cache_bytes >> 20);
	printf("------------------------------------------------\n");
}

/*
 * Prints the usage message.
 */
static void
usage(FILE *out)
{
	int			i;

	fprintf(out,
			"usage: db_bench [--option=value ...]\n"
			"  --num=N                entries per fill (default 1000000)\n"
			"  --reads=N              operations per read workload "
			"(default min(num, 1000000))\n"
			"  --engines=LIST         comma list of engines (default: all "
			"compiled in:");
	for (i = 0; all_drivers[i] != NULL; i++)
		fprintf(out, " %s", all_drivers[i]->name);
	fprintf(out, ")\n"
			"  --benchmarks=LIST      comma list of workloads (default "
			DEFAULT_BENCHMARKS ")\n"
			"  --db=DIR               store directory (default "
			DEFAULT_DB_DIR ")\n"
			"  --repeat=R             runs per read workload, median "
			"reported (default 1)\n"
			"  --filter_fpr           add workload filterfpr\n"
			"  --many_sstables        add workload absent_vs_sstables\n"
			"  --write_buffer_size=B  memtable bytes (default 4194304)\n"
			"  --target_file_size=B   SSTable bytes (default 2097152)\n"
			"  --bloom_bits=N         Bloom filter bits per key (default 10)\n"
			"  --cache_size=B         RocksDB/LevelDB block cache bytes "
			"(default 67108864)\n"
			"  --lsm_value_filter_bits=N  our value filter size (default: "
			"engine default)\n"
			"  --seek_iter_per_op=0|1 seekrandom opens an iterator per seek "
			"(default 0)\n"
			"  --lsm_compactor=inline|process  lsm-shared compacts in the "
			"writing thread\n"
			"                         (default) or in a forked compactor "
			"process\n"
			"  --variants=fill|all    variant engines (lsm-shared) run the "
			"fill workloads only\n"
			"                         (default) or every workload\n"
			"workloads:\n");
	for (i = 0; i < NWORKLOADS; i++)
		fprintf(out, "  %-20s %s\n", workloads[i].name, workloads[i].help);
}

/*
 * Appends name to a comma list if it is not there yet.
 */
static void
list_add(char *list, size_t list_size, const char *name)
{
	char		copy[1024];
	char	   *tok;
	char	   *save = NULL;

	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
		 tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, name) == 0)
			return;
	if (list[0] != '\0')
		strncat(list, ",", list_size - strlen(list) - 1);
	strncat(list, name, list_size - strlen(list) - 1);
}

/*
 * Sets up the engine table from a comma list of engine names.
 */
static void
setup_engines(const char *list)
{
	char		copy[256];
	char	   *tok;
	char	   *save = NULL;
	int			i;

	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
		 tok = strtok_r(NULL, ",", &save))
	{
		const bench_driver *drv = NULL;

		for (i = 0; all_drivers[i] != NULL; i++)
			if (strcmp(all_drivers[i]->name, tok) == 0)
				drv = all_drivers[i];
		if (drv == NULL)
		{
			fprintf(stderr, "db_bench: engine \"%s\" is not compiled in\n"
					"HINT: valid engines:", tok);
			for (i = 0; all_drivers[i] != NULL; i++)
				fprintf(stderr, " %s", all_drivers[i]->name);
			fprintf(stderr, " (lsm, lsm-shared, rocksdb, leveldb unless "
					"built with -DBENCH_NO_<ENGINE>)\n");
			exit(2);
		}
		if (find_engine(tok) != NULL)
			continue;
		if (nengines == MAX_ENGINES)
		{
			fprintf(stderr, "db_bench: too many engines\n");
			exit(2);
		}
		engines[nengines].drv = drv;
		engines[nengines].fills_only = drv->variant && !config.variants_all;
		snprintf(engines[nengines].dir, sizeof(engines[nengines].dir),
				 "%s/%s", db_dir, drv->name);
		nengines++;
	}
	if (nengines == 0)
	{
		fprintf(stderr, "db_bench: no engine selected\n");
		exit(2);
	}
}

/*
 * Removes the directories this program creates under db_dir.
 */
static void
remove_stores(void)
{
	static const char *const subdirs[] = {
		"lsm", "lsm-shared", "rocksdb", "leveldb", "lsm_one", "lsm_many",
		"lsm_leveled"
	};
	char		path[4096 + 32];
	size_t		i;

	for (i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++)
	{
		snprintf(path, sizeof(path), "%s/%s", db_dir, subdirs[i]);
		bench_remove_tree(path);
	}
}

int
main(int argc, char **argv)
{
	char		engine_list[256] = "";
	char		bench_list[1024] = DEFAULT_BENCHMARKS;
	char		copy[1024];
	const workload *todo[MAX_BENCHMARKS];
	int			ntodo = 0;
	int			reads_set = 0;
	int			i;
	char	   *tok;
	char	   *save = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	config.num = 1000000;
	config.repeat = 1;
	config.memtable_bytes = 4 << 20;
	config.file_bytes = 2 << 20;
	config.block_bytes = 4096;
	config.l1_bytes = 10 << 20;
	config.level_ratio = 10;
	config.bits_per_key = 10;
	config.cache_bytes = 64 << 20;
	config.lsm_value_filter_bits = -1;
	for (i = 0; all_drivers[i] != NULL; i++)
		list_add(engine_list, sizeof(engine_list), all_drivers[i]->name);

	for (i = 1; i < argc; i++)
	{
		char		arg[256];
		char	   *eq;
		const char *val;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
		{
			usage(stdout);
			return 0;
		}
		if (strncmp(argv[i], "--", 2) != 0)
		{
			fprintf(stderr, "db_bench: unexpected argument \"%s\"\n",
					argv[i]);
			usage(stderr);
			return 2;
		}
		/* split a copy at '=': argv is printed verbatim in the header */
		eq = strchr(argv[i] + 2, '=');
		snprintf(arg, sizeof(arg), "%.*s",
				 (int) (eq != NULL ? eq - (argv[i] + 2) : 255), argv[i] + 2);
		val = eq != NULL ? eq + 1 : "1";
		if (strcmp(arg, "num") == 0)
			config.num = bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "reads") == 0)
		{
			config.reads = bench_parse_number("db_bench", arg, val);
			reads_set = 1;
		}
		else if (strcmp(arg, "engines") == 0)
			snprintf(engine_list, sizeof(engine_list), "%s", val);
		else if (strcmp(arg, "benchmarks") == 0)
			snprintf(bench_list, sizeof(bench_list), "%s", val);
		else if (strcmp(arg, "db") == 0)
			snprintf(db_dir, sizeof(db_dir), "%s", val);
		else if (strcmp(arg, "repeat") == 0)
			config.repeat = (int) bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "filter_fpr") == 0)
		{
			if (bench_parse_number("db_bench", arg, val))
				list_add(bench_list, sizeof(bench_list), "filterfpr");
		}
		else if (strcmp(arg, "many_sstables") == 0)
		{
			if (bench_parse_number("db_bench", arg, val))
				list_add(bench_list, sizeof(bench_list), "absent_vs_sstables");
		}
		else if (strcmp(arg, "write_buffer_size") == 0)
			config.memtable_bytes = bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "target_file_size") == 0)
			config.file_bytes = bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "bloom_bits") == 0)
			config.bits_per_key = (int) bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "cache_size") == 0)
			config.cache_bytes = bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "lsm_value_filter_bits") == 0)
			config.lsm_value_filter_bits = (long) bench_parse_number("db_bench", arg, val);
		else if (strcmp(arg, "seek_iter_per_op") == 0)
			config.seek_iter_per_op = bench_parse_number("db_bench", arg, val) != 0;
		else if (strcmp(arg, "lsm_compactor") == 0)
		{
			if (strcmp(val, "inline") == 0)
				config.lsm_compactor_process = 0;
			else if (strcmp(val, "process") == 0)
				config.lsm_compactor_process = 1;
			else
			{
				fprintf(stderr, "db_bench: invalid value \"%s\" for "
						"--lsm_compactor\nHINT: valid values: inline, "
						"process\n", val);
				return 2;
			}
		}
		else if (strcmp(arg, "variants") == 0)
		{
			if (strcmp(val, "fill") == 0)
				config.variants_all = 0;
			else if (strcmp(val, "all") == 0)
				config.variants_all = 1;
			else
			{
				fprintf(stderr, "db_bench: invalid value \"%s\" for "
						"--variants\nHINT: valid values: fill, all\n", val);
				return 2;
			}
		}
		else
		{
			fprintf(stderr, "db_bench: unknown option \"--%s\"\n"
					"HINT: valid options: --num --reads --engines "
					"--benchmarks --db --repeat --filter_fpr --many_sstables "
					"--write_buffer_size --target_file_size --bloom_bits "
					"--cache_size --lsm_value_filter_bits --seek_iter_per_op "
					"--lsm_compactor --variants (see --help)\n", arg);
			return 2;
		}
	}
	if (config.num == 0 || config.num > UINT64_C(1000000000000000))
	{
		fprintf(stderr, "db_bench: --num must be between 1 and 10^15\n");
		return 2;
	}
	if (!reads_set)
		config.reads = config.num < 1000000 ? config.num : 1000000;
	if (config.reads == 0)
		config.reads = 1;
	if (config.repeat < 1 || config.repeat > MAX_REPEAT)
	{
		fprintf(stderr, "db_bench: --repeat must be between 1 and %d\n",
				MAX_REPEAT);
		return 2;
	}

	setup_engines(engine_list);
	snprintf(copy, sizeof(copy), "%s", bench_list);
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
		 tok = strtok_r(NULL, ",", &save))
	{
		const workload *w = find_workload(tok);

		if (w == NULL)
		{
			fprintf(stderr, "db_bench: unknown benchmark \"%s\"\n"
					"HINT: valid benchmarks:", tok);
			for (i = 0; i < NWORKLOADS; i++)
				fprintf(stderr, " %s", workloads[i].name);
			fprintf(stderr, "\n");
			return 2;
		}
		if (ntodo < MAX_BENCHMARKS)
			todo[ntodo++] = w;
	}

	value_pool_init();
	if (mkdir(db_dir, 0755) != 0 && errno != EEXIST)
	{
		fprintf(stderr, "db_bench: could not create \"%s\": %s\n", db_dir,
				strerror(errno));
		return 1;
	}
	remove_stores();
	print_header(argc, argv);

	for (i = 0; i < ntodo; i++)
		run_workload(todo[i]);
	report_memory();
	print_summary();

	for (i = 0; i < nengines; i++)
		if (engines[i].db != NULL)
			engines[i].drv->close(engines[i].db);
	remove_stores();
	rmdir(db_dir);				/* only if empty: never remove a user's files */
	return 0;
}

/*
 * value_bench.c
 *		Value (non-key) search benchmark: reproduces the experiments of
 *		section IV of Macyna & Ordonez, "A Bloom Filter Hierarchy for Non-key
 *		Search in Key-Value Stores" (seed 000), with the engine's four search
 *		strategies side by side.
 *
 * The paper compares three ways of finding the rows whose value equals v:
 * the "SSTable scan" (read every table: LSM_SEARCH_SCAN), the "classical
 * Bloom scan" (probe every table's value filter, read the tables that say
 * maybe: LSM_SEARCH_LEAVES) and the "Bloom hierarchy scan" (descend the tree
 * of OR-ed filters: LSM_SEARCH_TREE).  We add LSM_SEARCH_FLAT, the same
 * leaves transposed into 64-leaf bit slices.  Experiments:
 *
 *	fig8	time to find one value against the number of rows (unique values;
 *			present and absent values), with the paper's Table II settings
 *			(m = 2,000,000 bits, d = 5) and the engine's 2 MiB files
 *	table2	bytes of data, leaf filters and internal nodes of the fig8 stores
 *	fig10	(and figs. 7, 11, 12) one store per m x d, sized to the paper's
 *			119 files: share of leaf filters and number of internal nodes a
 *			tree search probes, time per search of every strategy, bytes of
 *			the internal nodes
 *	table3	(and fig. 13) value domain of 1% .. 100% of the rows, the paper's
 *			599 files: leaves positive, tables with matches, leaves probed,
 *			time per search
 *	flat8k	a store of about 8192 leaves (tiny files): flat against tree
 *	memtable	rows that are all in the memtable (--mem_rows rows, unique
 *			values and 100 rows per value) against the same rows after
 *			lsm_compact_all: the memtable's value index against the
 *			SSTables' filters
 *
 * Data.  Row n (0 <= n < rows) has the 16-byte key "%016llu" of n and a
 * one-field row (lsm_row_encode) whose field is the 16-byte "%016llu" of
 * vn(n) mod D, where vn is a fixed pseudo-random permutation of [0, rows)
 * and D the value domain (D = rows: every value unique).  Value x < D is
 * thus held by exactly rows / D rows (one more if x < rows mod D), spread
 * at random over the key space and so over the tables.  Rows are loaded in
 * another fixed pseudo-random order, in batches, with exclusive = 1, then
 * lsm_compact_all brings the store to a steady state (everything in its
 * deepest level, every table a leaf of the hierarchy).  Absent values are
 * numbers >= D, which no row holds.
 *
 * Measurement.  Every search opens lsm_value_search_with, reads every row,
 * checks it (the field equals the value, the key is one of the rows that
 * hold it, no key twice, exactly the expected number of rows; a wrong result
 * exits with status 1) and closes the iterator; CLOCK_MONOTONIC around the
 * whole.  Each strategy runs the same sequence of values, after one untimed
 * warm-up search (reported as first_us: for flat it builds the handle's
 * flat layout); SCAN runs fewer searches (the first ones of the sequence).
 * Before them, the whole sequence is searched once, untimed, every leaf
 * probed: the first touch of a mapped page costs a minor fault (about a
 * microsecond), which would otherwise fall on whichever strategy runs
 * first.
 * The report gives the median, mean and 90th percentile, and the mean of
 * each counter of lsm_iter_search_stats; est_us is the median time of
 * lsm_value_search_estimate on the same values (the filter phase alone:
 * no data read, no rows checked).  All reads hit the OS page cache:
 * the stores were just written.
 *
 * Stores live under DIR/value_bench.<pid> (DIR = /tmp unless --db) and are
 * removed one by one once measured, and the directory at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "lsm.h"

#define KEY_SIZE		16
#define VALUE_SIZE		16
#define MAX_LIST		16
#define BATCH_ROWS		1000
#define CALIB_ROWS		200000
#define CALIB_FILE_BYTES (64 << 10)
#define MIN_FILE_BYTES	4096
#define NSTRATEGIES		4
#define SEED_ORDER		UINT64_C(0x6a09e667f3bcc908)
#define SEED_VALUE		UINT64_C(0xbb67ae8584caa73b)
#define PAPER_T3_ROWS	50000000.0	/* Table III: 50M rows ... */
#define PAPER_T3_FILES	599.0		/* ... in 599 SSTables ... */
#define PAPER_T3_M		2000000.0	/* ... with (we assume) m = 2M */

/* Experiments, as bits of config.experiments. */
#define EXP_FIG8		0x01
#define EXP_TABLE2		0x02
#define EXP_FIG10		0x04
#define EXP_TABLE3		0x08
#define EXP_FLAT8K		0x10
#define EXP_MEMTABLE	0x20

/* Strategies in the order they run (scan last: it evicts the CPU caches). */
static const int strategies[NSTRATEGIES] = {
	LSM_SEARCH_TREE, LSM_SEARCH_FLAT, LSM_SEARCH_LEAVES, LSM_SEARCH_SCAN
};

/* The command-line settings. */
typedef struct bench_config
{
	uint64_t	num;			/* rows of fig10, table3 (and fig8 default) */
	int			quick;
	int			experiments;	/* EXP_* bits */
	uint64_t	fig8_nums[MAX_LIST];
	int			nfig8;
	int			searches;		/* timed searches per strategy and query */
	int			scan_searches;	/* ... for LSM_SEARCH_SCAN */
	uint32_t	m;				/* fig8 / table2 filter bits */
	int			d;				/* fig8 / table2 order */
	int			k;				/* hashes of every store; 0: engine's */
	size_t		fig8_file_bytes;	/* 0: the engine's default */
	uint64_t	fig10_ms[MAX_LIST];
	int			nfig10_m;
	uint64_t	fig10_ds[MAX_LIST];
	int			nfig10_d;
	int			fig10_files;
	uint64_t	t3_domains[MAX_LIST];	/* percent of the rows */
	int			nt3;
	int			t3_files;
	uint32_t	t3_m;			/* 0: the paper's bits per row */
	int			t3_d;
	uint64_t	flat_rows;
	int			flat_leaves;
	uint32_t	flat_m;
	int			flat_d;
	size_t		memtable_bytes; /* of the stores loaded with compaction */
	uint64_t	mem_rows[MAX_LIST]; /* rows of the memtable experiment */
	int			nmem_rows;
	char		parent[3072];	/* where the store directory goes */
} bench_config;

/* How to build one store. */
typedef struct load_spec
{
	const char *name;			/* subdirectory */
	uint64_t	rows;
	uint64_t	domain;			/* distinct values (rows: unique) */
	uint32_t	m;				/* value_filter_bits */
	int			k;				/* value_filter_hashes; 0: default */
	int			d;				/* hierarchy_order */
	size_t		file_bytes;		/* 0: default */
	int			bulk;			/* one big memtable, one compaction */
	int			in_memtable;	/* one big memtable, no compaction */
} load_spec;

/* A loaded store. */
typedef struct store
{
	load_spec	spec;
	lsm_db	   *db;
	char		dir[4096 + 64];
	double		load_s;
	double		compact_s;
	lsm_stats	st;				/* right after lsm_compact_all */
	uint64_t	files;			/* in all levels */
} store;

/* One value to search for, with what the search must return. */
typedef struct query
{
	char		val[VALUE_SIZE];
	uint64_t	vnum;			/* the value's number */
	uint64_t	expect;			/* rows that hold it */
} query;

/* The outcome of one strategy over a sequence of searches. */
typedef struct measure
{
	int			strategy;
	int			searches;
	double		median_us;
	double		mean_us;
	double		p90_us;
	double		first_us;		/* the untimed warm-up search */
	double		est_us;			/* median lsm_value_search_estimate */
	/* means of the search counters */
	double		nodes;
	double		leaves;
	double		positive;
	double		words;
	double		sstables;
	double		sfalse;
	double		blocks;
	double		found;
	uint64_t	stat_mismatches;	/* rows_returned != rows read */
} measure;

static bench_config config;
static char root_dir[4096];
static uint64_t *found_keys;	/* scratch for the duplicate check */
static size_t found_cap;
static double bytes_per_row;	/* calibrated: data bytes per row */
static uint64_t total_mismatches;

/*
 * Prints a failure to stderr and exits with status 1.  The store directory
 * is left in place for inspection.
 */
static void
fatal(const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	fprintf(stderr, "value_bench: FAILED: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(stores left in %s)\n", root_dir);
	exit(1);
}

/*
 * Exits through fatal() if rc is an error, naming the call and the
 * handle's error detail.
 */
static void
check_rc(int rc, lsm_db *db, const char *what)
{
	if (rc != LSM_OK)
		fatal("%s: %s (%s)", what, lsm_strerror(rc), lsm_errmsg(db));
}

/*
 * Returns CLOCK_MONOTONIC in microseconds.
 */
static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * splitmix64: advances *state and returns the next pseudo-random number.
 */
static uint64_t
splitmix64(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/*
 * Returns a pseudo-random number in [0, n) (multiply-shift, no modulo).
 */
static uint64_t
uniform(uint64_t *state, uint64_t n)
{
	return (uint64_t) (((unsigned __int128) splitmix64(state) * n) >> 64);
}

/*
 * One round of a seeded bijection on the integers below 2^bits: add the
 * seed, then xorshift-multiply mixing; each step is invertible modulo
 * 2^bits.
 */
static uint64_t
permute_round(uint64_t x, int bits, uint64_t mask, uint64_t seed)
{
	x = (x + seed) & mask;
	x ^= x >> (bits / 2 + 1);
	x = (x * UINT64_C(0xbf58476d1ce4e5b9)) & mask;
	x ^= x >> (bits / 3 + 1);
	x = (x * UINT64_C(0x94d049bb133111eb)) & mask;
	x ^= x >> (bits / 2 + 1);
	return x;
}

/*
 * Returns element i of a fixed pseudo-random permutation of [0, n) chosen
 * by seed: two rounds of a bijection on the next power of two, restricted
 * to [0, n) by cycle walking.  REQUIRES: i < n.
 */
static uint64_t
permute(uint64_t i, uint64_t n, uint64_t seed)
{
	int			bits;
	uint64_t	mask;
	uint64_t	x = i;

	if (n <= 1)
		return 0;
	bits = 64 - __builtin_clzll(n - 1);
	mask = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
	do
	{
		x = permute_round(x, bits, mask, seed);
		x = permute_round(x, bits, mask, seed ^ UINT64_C(0x3c6ef372fe94f82b));
	} while (x >= n);
	return x;
}

/*
 * Writes the 16 decimal digits of n (n < 10^16), without a NUL.
 */
static void
format16(char *buf, uint64_t n)
{
	int			i;

	for (i = 15; i >= 0; i--)
	{
		buf[i] = (char) ('0' + n % 10);
		n /= 10;
	}
}

/*
 * Parses 16 decimal digits; returns UINT64_MAX if p is not such a string.
 */
static uint64_t
parse16(const char *p, size_t len)
{
	uint64_t	n = 0;
	size_t		i;

	if (len != 16)
		return UINT64_MAX;
	for (i = 0; i < 16; i++)
	{
		if (p[i] < '0' || p[i] > '9')
			return UINT64_MAX;
		n = n * 10 + (uint64_t) (p[i] - '0');
	}
	return n;
}

/*
 * The value number of row n of a store of rows rows and domain distinct
 * values.
 */
static uint64_t
value_of(uint64_t n, uint64_t rows, uint64_t domain)
{
	return permute(n, rows, SEED_VALUE) % domain;
}

/*
 * The number of rows of a store of rows rows and domain values that hold
 * value number x (x < domain).
 */
static uint64_t
rows_holding(uint64_t x, uint64_t rows, uint64_t domain)
{
	return rows / domain + (x < rows % domain ? 1 : 0);
}

/*
 * nftw callback for remove_tree: removes one file or directory.
 */
static int
remove_entry(const char *path, const struct stat *sb, int flag,
			 struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	if (remove(path) != 0 && errno != ENOENT)
		fprintf(stderr, "value_bench: could not remove \"%s\": %s\n", path,
				strerror(errno));
	return 0;
}

/*
 * Removes path and everything under it, if it exists.
 */
static void
remove_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return;
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Returns the name of an LSM_SEARCH_* strategy.
 */
static const char *
strategy_name(int s)
{
	switch (s)
	{
		case LSM_SEARCH_TREE:
			return "tree";
		case LSM_SEARCH_FLAT:
			return "flat";
		case LSM_SEARCH_LEAVES:
			return "leaves";
		case LSM_SEARCH_SCAN:
			return "scan";
	}
	return "?";
}

/*
 * Returns the file bytes that cut rows rows into about files tables, from
 * the calibrated bytes per row (a table is cut once it reaches file_bytes,
 * so the last one is on average half full).
 */
static size_t
file_bytes_for(uint64_t rows, int files)
{
	double		fb;

	if (files <= 1)
		return (size_t) 1 << 34;
	fb = (double) rows * bytes_per_row / (files - 0.5);
	if (fb < MIN_FILE_BYTES)
		fb = MIN_FILE_BYTES;
	return (size_t) fb;
}

/*
 * Creates the store of sp under the root directory and loads it: rows in
 * the fixed random order, BATCH_ROWS per lsm_write, exclusive mode, then
 * lsm_compact_all.  A bulk store gets a memtable that holds every row and
 * no automatic compaction, so that it is written once, by the final
 * compaction (for stores of thousands of tiny tables); the others get
 * config.memtable_bytes and automatic compaction, as an application would.
 */
static void
store_load(store *s, const load_spec *sp)
{
	lsm_options o;
	lsm_batch  *b;
	char		key[KEY_SIZE];
	char		val[VALUE_SIZE];
	uint64_t	i;
	double		t0;
	int			rc;
	int			l;

	memset(s, 0, sizeof(*s));
	s->spec = *sp;
	snprintf(s->dir, sizeof(s->dir), "%s/%s", root_dir, sp->name);
	remove_tree(s->dir);

	lsm_options_init(&o);
	o.exclusive = 1;
	o.error_if_exists = 1;
	o.value_filter_bits = sp->m;
	if (sp->k > 0)
		o.value_filter_hashes = sp->k;
	if (sp->d > 0)
		o.hierarchy_order = sp->d;
	if (sp->file_bytes > 0)
		o.file_bytes = sp->file_bytes;
	s->spec.file_bytes = o.file_bytes;
	if (sp->bulk || sp->in_memtable)
	{
		uint64_t	mb = sp->rows * 256 + (64 << 20);

		o.memtable_bytes = mb > ((uint64_t) 1 << 34) ? (size_t) 1 << 34 :
			(size_t) mb;
		o.auto_compact = 0;
	}
	else if (config.memtable_bytes > 0)
		o.memtable_bytes = config.memtable_bytes;
	rc = lsm_open(s->dir, &o, &s->db);
	if (rc != LSM_OK)
		fatal("lsm_open %s: %s (%s)", s->dir, lsm_strerror(rc),
			  lsm_errmsg(NULL));

	b = lsm_batch_new();
	if (b == NULL)
		fatal("out of memory");
	t0 = now_us();
	for (i = 0; i < sp->rows; i++)
	{
		uint64_t	n = permute(i, sp->rows, SEED_ORDER);
		lsm_field	f;
		void	   *row;
		size_t		rowlen;

		format16(key, n);
		format16(val, value_of(n, sp->rows, sp->domain));
		f.data = val;
		f.len = VALUE_SIZE;
		f.is_null = 0;
		check_rc(lsm_row_encode(&f, 1, &row, &rowlen), s->db,
				 "lsm_row_encode");
		rc = lsm_batch_put(b, key, KEY_SIZE, row, rowlen);
		lsm_free(row);
		check_rc(rc, s->db, "lsm_batch_put");
		if (lsm_batch_count(b) >= BATCH_ROWS || i + 1 == sp->rows)
		{
			check_rc(lsm_write(s->db, b), s->db, "lsm_write");
			lsm_batch_clear(b);
		}
	}
	lsm_batch_free(b);
	s->load_s = (now_us() - t0) / 1e6;

	t0 = now_us();
	if (!sp->in_memtable)
		check_rc(lsm_compact_all(s->db), s->db, "lsm_compact_all");
	s->compact_s = (now_us() - t0) / 1e6;
	check_rc(lsm_get_stats(s->db, &s->st), s->db, "lsm_get_stats");
	for (l = 0; l < s->st.levels && l < LSM_MAX_LEVELS; l++)
		s->files += (uint64_t) s->st.level[l].files;
}

/*
 * Closes the store and removes its directory.
 */
static void
store_drop(store *s)
{
	if (s->db != NULL)
		check_rc(lsm_close(s->db), s->db, "lsm_close");
	s->db = NULL;
	remove_tree(s->dir);
}

/*
 * Prints the line that describes a loaded store: settings, load and
 * compaction time, tables per level, rows and filter bits per leaf, shape
 * and bytes of the hierarchy.
 */
static void
print_store(const char *tag, const store *s)
{
	const lsm_hierarchy_stats *h = &s->st.hierarchy;
	double		rows_per_file = s->files ? (double) s->spec.rows / s->files : 0;
	int			l;

	printf("%s store rows=%llu domain=%llu m=%llu k=%d d=%d file_bytes=%zu "
		   "load_s=%.1f compact_s=%.1f files=%llu levels=",
		   tag, (unsigned long long) s->spec.rows,
		   (unsigned long long) s->spec.domain,
		   (unsigned long long) h->value_filter_bits,
		   h->value_filter_hashes, h->hierarchy_order,
		   s->spec.file_bytes, s->load_s, s->compact_s,
		   (unsigned long long) s->files);
	for (l = 0; l < s->st.levels && l < LSM_MAX_LEVELS; l++)
		printf("%s%d", l ? "/" : "", s->st.level[l].files);
	printf(" rows/file=%.0f bits/row=%.1f height=%d leaves=%llu "
		   "internal=%llu saturated=%llu node_kb=%.0f\n",
		   rows_per_file,
		   rows_per_file > 0 ? h->value_filter_bits / rows_per_file : 0.0,
		   h->height, (unsigned long long) h->leaves,
		   (unsigned long long) h->internal,
		   (unsigned long long) h->saturated, h->node_bytes / 1024.0);
	fflush(stdout);
}

/*
 * Fills q with search number i of a sequence: a present value (the value
 * of a random row) or an absent one (a number >= the domain).
 */
static void
make_query(const store *s, int present, uint64_t *rng, query *q)
{
	if (present)
	{
		uint64_t	n = uniform(rng, s->spec.rows);

		q->vnum = value_of(n, s->spec.rows, s->spec.domain);
		q->expect = rows_holding(q->vnum, s->spec.rows, s->spec.domain);
	}
	else
	{
		q->vnum = s->spec.domain + uniform(rng, UINT64_C(1000000000000000));
		q->expect = 0;
	}
	format16(q->val, q->vnum);
}

/*
 * Compares two uint64_t for qsort.
 */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
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
 * Runs one search for q with strategy and checks its result: every row's
 * field 0 is the value, every key is a row that holds the value, no key
 * comes twice, and exactly q->expect rows come back.  Fills *st with the
 * search's counters.  Exits through fatal() on a wrong result.
 */
static void
run_search(const store *s, int strategy, const query *q,
		   lsm_search_stats *st)
{
	lsm_iter   *it;
	uint64_t	count = 0;
	uint64_t	i;
	int			rc;

	rc = lsm_value_search_with(s->db, 0, q->val, VALUE_SIZE, strategy, &it);
	if (rc != LSM_OK)
		fatal("%s: lsm_value_search_with(%s, %.16s): %s (%s)", s->spec.name,
			  strategy_name(strategy), q->val, lsm_strerror(rc),
			  lsm_errmsg(s->db));
	for (; lsm_iter_valid(it); lsm_iter_next(it))
	{
		size_t		klen,
					vlen;
		const void *k = lsm_iter_key(it, &klen);
		const void *v = lsm_iter_value(it, &vlen);
		lsm_field	f;
		uint64_t	n = parse16(k, klen);

		if (lsm_row_field(v, vlen, 0, &f) != LSM_OK || f.is_null ||
			f.len != VALUE_SIZE || memcmp(f.data, q->val, VALUE_SIZE) != 0)
			fatal("%s: %s search for %.16s returned key %.*s whose field 0 "
				  "is not the value", s->spec.name, strategy_name(strategy),
				  q->val, (int) klen, (const char *) k);
		if (n >= s->spec.rows ||
			value_of(n, s->spec.rows, s->spec.domain) != q->vnum)
			fatal("%s: %s search for %.16s returned key %.*s, which does "
				  "not hold that value", s->spec.name,
				  strategy_name(strategy), q->val, (int) klen,
				  (const char *) k);
		if (count >= found_cap)
		{
			size_t		cap = found_cap ? found_cap * 2 : 1024;
			uint64_t   *grown = realloc(found_keys, cap * sizeof(uint64_t));

			if (grown == NULL)
				fatal("out of memory");
			found_keys = grown;
			found_cap = cap;
		}
		found_keys[count++] = n;
	}
	rc = lsm_iter_status(it);
	if (rc != LSM_OK)
		fatal("%s: %s search for %.16s: iterator: %s (%s)", s->spec.name,
			  strategy_name(strategy), q->val, lsm_strerror(rc),
			  lsm_errmsg(s->db));
	rc = lsm_iter_search_stats(it, st);
	lsm_iter_close(it);
	if (rc != LSM_OK)
		fatal("%s: lsm_iter_search_stats: %s", s->spec.name,
			  lsm_strerror(rc));
	if (count != q->expect)
		fatal("%s: %s search for %.16s found %llu rows, expected %llu",
			  s->spec.name, strategy_name(strategy), q->val,
			  (unsigned long long) count, (unsigned long long) q->expect);
	if (count > 1)
	{
		qsort(found_keys, count, sizeof(uint64_t), cmp_u64);
		for (i = 1; i < count; i++)
			if (found_keys[i] == found_keys[i - 1])
				fatal("%s: %s search for %.16s returned key %016llu twice",
					  s->spec.name, strategy_name(strategy), q->val,
					  (unsigned long long) found_keys[i]);
	}
	if (st->rows_returned != count)
		total_mismatches++;
}

/*
 * Runs strategy over nsearch values of the sequence seeded by seed (present
 * or absent values), after one untimed warm-up search on another value, and
 * fills *m with the median, mean and 90th percentile time and the mean
 * counters.
 */
static void
measure_strategy(const store *s, int strategy, int present, int nsearch,
				 uint64_t seed, measure *m)
{
	lsm_search_stats st;
	query		q;
	double	   *t;
	double		sum = 0;
	double		t0;
	uint64_t	rng = seed ^ UINT64_C(0x510e527fade682d1);
	uint64_t	before = total_mismatches;
	int			i;

	memset(m, 0, sizeof(*m));
	m->strategy = strategy;
	m->searches = nsearch;
	t = malloc(sizeof(double) * (nsearch > 0 ? nsearch : 1));
	if (t == NULL)
		fatal("out of memory");

	/* warm-up: another value, not timed with the others */
	make_query(s, present, &rng, &q);
	t0 = now_us();
	run_search(s, strategy, &q, &st);
	m->first_us = now_us() - t0;

	rng = seed;
	for (i = 0; i < nsearch; i++)
	{
		make_query(s, present, &rng, &q);
		t0 = now_us();
		run_search(s, strategy, &q, &st);
		t[i] = now_us() - t0;
		sum += t[i];
		m->nodes += st.nodes_visited;
		m->leaves += st.leaves_probed;
		m->positive += st.leaves_positive;
		m->words += st.flat_words;
		m->sstables += st.sstables_scanned;
		m->sfalse += st.sstables_false;
		m->blocks += st.blocks_scanned;
		m->found += st.rows_returned;
	}
	if (nsearch > 0)
	{
		qsort(t, nsearch, sizeof(double), cmp_double);
		m->median_us = nsearch % 2 ? t[nsearch / 2] :
			(t[nsearch / 2 - 1] + t[nsearch / 2]) / 2;
		m->p90_us = t[(nsearch * 9 + 9) / 10 - 1];
		m->mean_us = sum / nsearch;
		m->nodes /= nsearch;
		m->leaves /= nsearch;
		m->positive /= nsearch;
		m->words /= nsearch;
		m->sstables /= nsearch;
		m->sfalse /= nsearch;
		m->blocks /= nsearch;
		m->found /= nsearch;
	}
	m->stat_mismatches = total_mismatches - before;

	/* the filter phase alone, on the same values */
	rng = seed;
	for (i = 0; i < nsearch; i++)
	{
		int			rc;

		make_query(s, present, &rng, &q);
		t0 = now_us();
		rc = lsm_value_search_estimate(s->db, 0, q.val, VALUE_SIZE, strategy,
									   &st);
		t[i] = now_us() - t0;
		if (rc != LSM_OK)
			fatal("%s: lsm_value_search_estimate(%s): %s (%s)", s->spec.name,
				  strategy_name(strategy), lsm_strerror(rc),
				  lsm_errmsg(s->db));
	}
	if (nsearch > 0)
	{
		qsort(t, nsearch, sizeof(double), cmp_double);
		m->est_us = nsearch % 2 ? t[nsearch / 2] :
			(t[nsearch / 2 - 1] + t[nsearch / 2]) / 2;
	}
	free(t);
}

/*
 * Prints one result line: the experiment tag, the configuration (cfg), the
 * strategy, the times and the mean counters; pct_leaves is the share of
 * the hierarchy's leaves whose filter was probed.
 */
static void
print_measure(const char *tag, const char *cfg, const store *s,
			  const measure *m)
{
	uint64_t	leaves = s->st.hierarchy.leaves;

	printf("%s %s strategy=%s us/search=%.2f mean_us=%.2f p90_us=%.2f "
		   "first_us=%.1f est_us=%.2f searches=%d nodes=%.2f leaves=%.2f "
		   "pct_leaves=%.2f "
		   "positive=%.2f sstables=%.2f false=%.2f found_sst=%.2f "
		   "blocks=%.2f words=%.0f found=%.2f",
		   tag, cfg, strategy_name(m->strategy), m->median_us, m->mean_us,
		   m->p90_us, m->first_us, m->est_us, m->searches, m->nodes,
		   m->leaves,
		   leaves ? 100.0 * m->leaves / leaves : 0.0, m->positive,
		   m->sstables, m->sfalse, m->sstables - m->sfalse, m->blocks,
		   m->words, m->found);
	if (m->stat_mismatches)
		printf(" WARNING=rows_returned_mismatch:%llu",
			   (unsigned long long) m->stat_mismatches);
	printf("\n");
	fflush(stdout);
}

/*
 * Returns the index in ms[] of strategy s, or -1.
 */
static int
find_measure(const measure *ms, int n, int s)
{
	int			i;

	for (i = 0; i < n; i++)
		if (ms[i].strategy == s)
			return i;
	return -1;
}

/*
 * Prints the ratio line of a set of measures: each strategy's median time
 * over the tree's (scan/tree, leaves/tree, flat/tree).
 */
static void
print_ratios(const char *tag, const char *cfg, const measure *ms, int n)
{
	int			t = find_measure(ms, n, LSM_SEARCH_TREE);
	int			i;

	if (t < 0 || ms[t].median_us <= 0)
		return;
	printf("%s %s ratio", tag, cfg);
	for (i = 0; i < n; i++)
		if (ms[i].strategy != LSM_SEARCH_TREE)
			printf(" %s/tree=%.2fx", strategy_name(ms[i].strategy),
				   ms[i].median_us / ms[t].median_us);
	printf("\n");
	fflush(stdout);
}

/*
 * Measures the given strategies (mask of 1 << LSM_SEARCH_*) on present or
 * absent values, prints a line for each and the ratio line; the measures
 * go to ms (NSTRATEGIES entries), their number is returned.
 */
#define ALL_STRATEGIES ((1 << LSM_SEARCH_TREE) | (1 << LSM_SEARCH_FLAT) | \
						(1 << LSM_SEARCH_LEAVES) | (1 << LSM_SEARCH_SCAN))
#define FILTER_STRATEGIES ((1 << LSM_SEARCH_TREE) | (1 << LSM_SEARCH_FLAT) | \
						   (1 << LSM_SEARCH_LEAVES))

static int
measure_all(const char *tag, const char *cfg_in, const store *s, int present,
			int mask, uint64_t seed, measure *ms)
{
	char		cfg[512];
	int			n = 0;
	int			i;

	snprintf(cfg, sizeof(cfg), "%s query=%s", cfg_in,
			 present ? "present" : "absent");
	/* untimed: maps the pages every strategy will read (see the header) */
	if (mask & FILTER_STRATEGIES)
		measure_strategy(s, LSM_SEARCH_LEAVES, present, config.searches, seed,
						 &ms[0]);
	for (i = 0; i < NSTRATEGIES; i++)
	{
		int			strat = strategies[i];

		if (!(mask & (1 << strat)))
			continue;
		measure_strategy(s, strat, present,
						 strat == LSM_SEARCH_SCAN ? config.scan_searches :
						 config.searches, seed, &ms[n]);
		print_measure(tag, cfg, s, &ms[n]);
		n++;
	}
	print_ratios(tag, cfg, ms, n);
	return n;
}


/*
 * Prints the Table II line of a store: bytes of data, of the leaf value
 * filters and of the stored internal nodes (and of the key filters and the
 * block locators), in MB, and as percentages of the data.  The engine
 * counts a table's block locator in its value_filter_bytes: the leaf
 * filters are taken as m / 8 bytes per leaf and the rest of
 * value_filter_bytes is reported as locator_mb.
 */
static void
print_table2(const store *s)
{
	uint64_t	bytes = 0,
				kf = 0,
				vf = 0;
	double		data,
				leaf,
				node;
	int			l;

	for (l = 0; l < s->st.levels && l < LSM_MAX_LEVELS; l++)
	{
		bytes += s->st.level[l].bytes;
		kf += s->st.level[l].filter_bytes;
		vf += s->st.level[l].value_filter_bytes;
	}
	data = (double) (bytes - kf - vf);
	leaf = (double) s->st.hierarchy.leaves *
		(double) (s->st.hierarchy.value_filter_bits / 8);
	if (leaf > (double) vf)
		leaf = (double) vf;
	node = (double) s->st.hierarchy.node_bytes;
	printf("table2 rows=%llu files=%llu m=%llu d=%d data_mb=%.1f "
		   "leaf_mb=%.1f nonleaf_mb=%.1f locator_mb=%.1f keyfilter_mb=%.1f "
		   "leaf/data=%.1f%% nonleaf/data=%.1f%% nonleaf/leaf=%.1f%%\n",
		   (unsigned long long) s->spec.rows, (unsigned long long) s->files,
		   (unsigned long long) s->st.hierarchy.value_filter_bits,
		   s->st.hierarchy.hierarchy_order, data / 1e6, leaf / 1e6,
		   node / 1e6, (vf - leaf) / 1e6, kf / 1e6,
		   data > 0 ? 100 * leaf / data : 0,
		   data > 0 ? 100 * node / data : 0, leaf > 0 ? 100 * node / leaf : 0);
	fflush(stdout);
}

/*
 * Fig. 8 (and Table II): for each N of --fig8_nums, a store of N unique
 * values with the paper's Table II filters; every strategy on present and
 * absent values.  With only table2 selected, the stores are loaded for
 * their sizes and nothing is searched.
 */
static void
exp_fig8(void)
{
	int			i;

	printf("paper: fig8 at 10M..500M rows: SSTable scan ~ classical Bloom "
		   "scan >> hierarchy; table2 (m=2M, d=5) 10M rows: "
		   "data 293 MB, leaf 29 MB, non-leaf 7 MB\n");
	for (i = 0; i < config.nfig8; i++)
	{
		load_spec	sp = {0};
		store		s;
		measure		ms[NSTRATEGIES];
		char		cfg[256];

		sp.name = "fig8";
		sp.rows = config.fig8_nums[i];
		sp.domain = sp.rows;
		sp.m = config.m;
		sp.k = config.k;
		sp.d = config.d;
		sp.file_bytes = config.fig8_file_bytes;
		store_load(&s, &sp);
		print_store("fig8", &s);
		if (config.experiments & EXP_TABLE2)
			print_table2(&s);
		if (config.experiments & EXP_FIG8)
		{
			snprintf(cfg, sizeof(cfg), "rows=%llu files=%llu",
					 (unsigned long long) sp.rows,
					 (unsigned long long) s.files);
			measure_all("fig8", cfg, &s, 1, ALL_STRATEGIES, 8001 + i, ms);
			measure_all("fig8", cfg, &s, 0, ALL_STRATEGIES, 8101 + i, ms);
		}
		store_drop(&s);
	}
}

/*
 * Figs. 10, 11, 12 (and 7): one store of config.num unique values per
 * m x d, cut into about --fig10_files tables; every strategy on present
 * values, the filter strategies on absent ones.
 */
static void
exp_fig10(void)
{
	size_t		fb = file_bytes_for(config.num, config.fig10_files);
	int			i,
				j;

	printf("paper: fig10 10M rows, 119 files: m=2M d=3 probes 6%% of the "
		   "leaf filters (best); m=2M: ~2 leaves and a few internal nodes "
		   "probed; m=20k: nearly all leaves\n");
	for (i = 0; i < config.nfig10_m; i++)
		for (j = 0; j < config.nfig10_d; j++)
		{
			load_spec	sp = {0};
			store		s;
			measure		ms[NSTRATEGIES];
			char		cfg[256];

			sp.name = "fig10";
			sp.rows = config.num;
			sp.domain = sp.rows;
			sp.m = (uint32_t) config.fig10_ms[i];
			sp.k = config.k;
			sp.d = (int) config.fig10_ds[j];
			sp.file_bytes = fb;
			store_load(&s, &sp);
			print_store("fig10", &s);
			snprintf(cfg, sizeof(cfg),
					 "rows=%llu files=%llu m=%llu d=%d height=%d "
					 "internal=%llu saturated=%llu node_kb=%.0f",
					 (unsigned long long) sp.rows,
					 (unsigned long long) s.files,
					 (unsigned long long) s.st.hierarchy.value_filter_bits,
					 s.st.hierarchy.hierarchy_order, s.st.hierarchy.height,
					 (unsigned long long) s.st.hierarchy.internal,
					 (unsigned long long) s.st.hierarchy.saturated,
					 s.st.hierarchy.node_bytes / 1024.0);
			measure_all("fig10", cfg, &s, 1, ALL_STRATEGIES, 10001, ms);
			measure_all("fig10", cfg, &s, 0, FILTER_STRATEGIES, 10101, ms);
			store_drop(&s);
		}
}

/*
 * Table III and fig. 13: a store of config.num rows per value domain (in
 * percent of the rows), cut into about --t3_files tables, with m chosen to
 * give the paper's bits per row (50M rows in 599 files, m = 2M) unless
 * --t3_m; every strategy on present values, and a Table III line from the
 * tree search's counters.
 */
static void
exp_table3(void)
{
	size_t		fb = file_bytes_for(config.num, config.t3_files);
	uint32_t	m = config.t3_m;
	int			i;

	if (m == 0)
	{
		double		rows_per_file = (double) config.num / config.t3_files;

		m = (uint32_t) (PAPER_T3_M * rows_per_file /
						(PAPER_T3_ROWS / PAPER_T3_FILES));
		if (m < 512)
			m = 512;
	}
	printf("paper: table3 50M rows, 599 files: domain%% leaves_found "
		   "sstables_found leaves_scanned = 1:56/55/250 5:28/26/190 "
		   "10:13/11/105 40:5/5/125 70:2/1/70 100:0/0/65\n");
	for (i = 0; i < config.nt3; i++)
	{
		load_spec	sp = {0};
		store		s;
		measure		ms[NSTRATEGIES];
		char		cfg[256];
		int			n,
					t;
		uint64_t	pct = config.t3_domains[i];

		sp.name = "table3";
		sp.rows = config.num;
		sp.domain = sp.rows * pct / 100;
		if (sp.domain < 1)
			sp.domain = 1;
		sp.m = m;
		sp.k = config.k;
		sp.d = config.t3_d;
		sp.file_bytes = fb;
		store_load(&s, &sp);
		print_store("table3", &s);
		snprintf(cfg, sizeof(cfg), "rows=%llu files=%llu domain_pct=%llu "
				 "values=%llu rows/value=%.1f",
				 (unsigned long long) sp.rows, (unsigned long long) s.files,
				 (unsigned long long) pct, (unsigned long long) sp.domain,
				 (double) sp.rows / sp.domain);
		n = measure_all("fig13", cfg, &s, 1, ALL_STRATEGIES, 13001, ms);
		t = find_measure(ms, n, LSM_SEARCH_TREE);
		if (t >= 0)
			printf("table3 %s leaves_found=%.1f sstables_found=%.1f "
				   "leaves_scanned=%.1f leaves_total=%llu nodes=%.1f "
				   "rows_found=%.1f\n",
				   cfg, ms[t].positive, ms[t].sstables - ms[t].sfalse,
				   ms[t].leaves,
				   (unsigned long long) s.st.hierarchy.leaves, ms[t].nodes,
				   ms[t].found);
		store_drop(&s);
	}
}

/*
 * A store of about --flat_leaves leaves (tiny tables, bulk loaded): flat
 * against tree and leaves on present and absent values, and the check of
 * the target flat <= 5 us per search.
 */
static void
exp_flat8k(void)
{
	load_spec	sp = {0};
	store		s;
	measure		ms[NSTRATEGIES];
	char		cfg[256];
	double		worst = 0;
	double		worst_est = 0;
	int			present;
	int			f;
	int			n;
	lsm_stats	st;

	sp.name = "flat8k";
	sp.rows = config.flat_rows;
	sp.domain = sp.rows;
	sp.m = config.flat_m;
	sp.k = config.k;
	sp.d = config.flat_d;
	sp.file_bytes = file_bytes_for(sp.rows, config.flat_leaves);
	sp.bulk = 1;
	store_load(&s, &sp);
	print_store("flat8k", &s);
	snprintf(cfg, sizeof(cfg),
			 "rows=%llu files=%llu hier_leaves=%llu m=%llu d=%d",
			 (unsigned long long) sp.rows, (unsigned long long) s.files,
			 (unsigned long long) s.st.hierarchy.leaves,
			 (unsigned long long) s.st.hierarchy.value_filter_bits,
			 s.st.hierarchy.hierarchy_order);
	for (present = 1; present >= 0; present--)
	{
		n = measure_all("flat8k", cfg, &s, present, ALL_STRATEGIES,
						8192 + present, ms);
		f = find_measure(ms, n, LSM_SEARCH_FLAT);
		if (f >= 0 && ms[f].median_us > worst)
			worst = ms[f].median_us;
		if (f >= 0 && ms[f].est_us > worst_est)
			worst_est = ms[f].est_us;
	}
	check_rc(lsm_get_stats(s.db, &st), s.db, "lsm_get_stats");
	printf("flat8k %s flat_mb=%.1f target flat<=5us/search: %s "
		   "(worst median %.2f us; filter phase alone %.2f us: %s)\n", cfg,
		   st.hierarchy.flat_bytes / 1e6, worst <= 5.0 ? "met" : "MISSED",
		   worst, worst_est, worst_est <= 5.0 ? "met" : "MISSED");
	store_drop(&s);
}

/*
 * The memtable: for each --mem_rows R, a store whose R rows are all in its
 * memtable (one big memtable, no flush), unique values and then 100 rows
 * per value; the default strategy (the memtable's value index; TREE for
 * the tables, of which there are none) on present and absent values; then
 * the same store after lsm_compact_all (every row in SSTables), and the
 * ratio of the two.  Target of issue 12: memtable at most 2x the SSTables.
 */
static void
exp_memtable(void)
{
	int			i,
				dom;

	for (i = 0; i < config.nmem_rows; i++)
		for (dom = 0; dom < 2; dom++)
		{
			load_spec	sp = {0};
			store		s;
			char		cfg[256];
			int			present;
			measure		mem[2],
						sst[2];

			sp.name = "memtable";
			sp.rows = config.mem_rows[i];
			sp.domain = dom == 0 ? sp.rows :
				(sp.rows / 100 > 0 ? sp.rows / 100 : 1);
			sp.m = config.m;
			sp.k = config.k;
			sp.d = config.d;
			sp.in_memtable = 1;
			store_load(&s, &sp);
			print_store("memtable", &s);
			if (s.files != 0 || s.st.memtable_entries != sp.rows)
				fatal("memtable: %llu rows loaded into %llu tables and a "
					  "memtable of %llu",
					  (unsigned long long) sp.rows,
					  (unsigned long long) s.files,
					  (unsigned long long) s.st.memtable_entries);
			for (present = 1; present >= 0; present--)
			{
				snprintf(cfg, sizeof(cfg), "rows=%llu domain=%llu where=memtable query=%s",
						 (unsigned long long) sp.rows,
						 (unsigned long long) sp.domain,
						 present ? "present" : "absent");
				/*
				 * untimed first, as the tables get below: the same values'
				 * filter lines are then in the CPU caches in both cases
				 */
				measure_strategy(&s, LSM_SEARCH_TREE, present,
								 config.searches, 12001 + present, &mem[present]);
				measure_strategy(&s, LSM_SEARCH_TREE, present,
								 config.searches, 12001 + present, &mem[present]);
				print_measure("memtable", cfg, &s, &mem[present]);
			}
			check_rc(lsm_compact_all(s.db), s.db, "lsm_compact_all");
			check_rc(lsm_get_stats(s.db, &s.st), s.db, "lsm_get_stats");
			s.files = 0;
			for (present = 0; present < s.st.levels && present < LSM_MAX_LEVELS; present++)
				s.files += (uint64_t) s.st.level[present].files;
			for (present = 1; present >= 0; present--)
			{
				snprintf(cfg, sizeof(cfg), "rows=%llu domain=%llu where=sstables files=%llu query=%s",
						 (unsigned long long) sp.rows,
						 (unsigned long long) sp.domain,
						 (unsigned long long) s.files,
						 present ? "present" : "absent");
				/* untimed: maps the pages the search will read */
				measure_strategy(&s, LSM_SEARCH_LEAVES, present,
								 config.searches, 12001 + present, &sst[present]);
				measure_strategy(&s, LSM_SEARCH_TREE, present,
								 config.searches, 12001 + present, &sst[present]);
				print_measure("memtable", cfg, &s, &sst[present]);
			}
			printf("memtable rows=%llu domain=%llu ratio memtable/sstables "
				   "present=%.2fx absent=%.2fx (target <= 2x)\n",
				   (unsigned long long) sp.rows,
				   (unsigned long long) sp.domain,
				   mem[1].median_us / sst[1].median_us,
				   mem[0].median_us / sst[0].median_us);
			fflush(stdout);
			store_drop(&s);
		}
}

/*
 * Measures the data bytes per row: loads min(num, CALIB_ROWS) rows in
 * tables of CALIB_FILE_BYTES and counts the tables.  Keys are dense in
 * every store, so the figure holds for any number of rows.
 */
static void
calibrate(void)
{
	load_spec	sp = {0};
	store		s;
	uint64_t	rows = config.num < CALIB_ROWS ? config.num : CALIB_ROWS;

	sp.name = "calib";
	sp.rows = rows;
	sp.domain = rows;
	sp.m = 512;
	sp.k = config.k;
	sp.d = 3;
	sp.file_bytes = CALIB_FILE_BYTES;
	sp.bulk = 1;
	store_load(&s, &sp);
	bytes_per_row = (double) CALIB_FILE_BYTES * (s.files - 0.5) / rows;
	printf("calib rows=%llu file_bytes=%d files=%llu bytes/row=%.1f\n",
		   (unsigned long long) rows, CALIB_FILE_BYTES,
		   (unsigned long long) s.files, bytes_per_row);
	fflush(stdout);
	store_drop(&s);
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
	lsm_options o;
	int			i;

	bench_cpu_model(model, sizeof(model));
	lsm_options_init(&o);
	printf("value_bench: value (non-key) search, Macyna & Ordonez sec. IV "
		   "reproduced; strategies tree (Bloom hierarchy scan), flat, "
		   "leaves (classical Bloom scan), scan (SSTable scan)\n");
	printf("command:  ");
	for (i = 0; i < argc; i++)
		printf("%s%s", i ? " " : "", argv[i]);
	printf("\n");
	if (uname(&un) == 0)
		printf("machine:  %ld CPUs (nproc), %s; %s %s %s\n",
			   sysconf(_SC_NPROCESSORS_ONLN), model, un.sysname, un.release,
			   un.machine);
	printf("date:     %s", ctime(&now));
	printf("data:     key %d bytes (\"%%016llu\" of the row number), value a "
		   "1-field row of %d bytes (\"%%016llu\" of a permutation of the "
		   "row number mod the domain); loaded in random order, "
		   "%d rows per batch, exclusive=1, then lsm_compact_all\n",
		   KEY_SIZE, VALUE_SIZE, BATCH_ROWS);
	printf("settings: rows %llu, searches %d per strategy (scan %d), "
		   "median reported; k %d (%s); memtable %zu for compacted loads; "
		   "engine defaults: m %u, k %d, d %d, file %zu, memtable %zu\n",
		   (unsigned long long) config.num, config.searches,
		   config.scan_searches,
		   config.k > 0 ? config.k : o.value_filter_hashes,
		   config.k > 0 ? "--k" : "engine default",
		   config.memtable_bytes > 0 ? config.memtable_bytes :
		   o.memtable_bytes, o.value_filter_bits, o.value_filter_hashes,
		   o.hierarchy_order, o.file_bytes, o.memtable_bytes);
	printf("notes:    time = open search + read and check every row + "
		   "close; all reads hit the OS page cache; counters are means per "
		   "search; pct_leaves = leaves probed / leaves of the hierarchy; "
		   "found_sst = sstables - false; est_us = median "
		   "lsm_value_search_estimate (filter phase only)\n");
	printf("store:    %s (removed at the end)\n", root_dir);
	printf("------------------------------------------------\n");
	fflush(stdout);
}

/*
 * Prints the usage message.
 */
static void
usage(FILE *out)
{
	fprintf(out,
			"usage: value_bench [options]\n"
			"  --num=N             rows of fig10, table3 and (default) fig8 "
			"[1000000; --quick 100000]\n"
			"  --quick             small validation pass (100k rows, 20 "
			"searches, 512 flat leaves)\n"
			"  --experiments=LIST  fig8,table2,fig10,table3,flat8k,memtable "
			"[all]\n"
			"  --fig8_nums=LIST    rows of the fig8/table2 stores [--num]\n"
			"  --searches=N        timed searches per strategy [200]\n"
			"  --scan_searches=N   ... for scan [5]\n"
			"  --m=BITS --d=D      fig8/table2 filters [2000000, 5: the "
			"paper's Table II]\n"
			"  --k=K               hashes of every store [engine default]\n"
			"  --fig8_file_bytes=B fig8 table size [engine default]\n"
			"  --fig10_ms=LIST     [20000,200000,2000000]\n"
			"  --fig10_ds=LIST     [2,3,5,10]\n"
			"  --fig10_files=F     tables of the fig10 stores [119]\n"
			"  --t3_domains=LIST   value domains in %% of the rows "
			"[1,5,10,40,70,100]\n"
			"  --t3_files=F        tables of the table3 stores [599]\n"
			"  --t3_m=BITS         [0: the paper's bits per row]\n"
			"  --t3_d=D            [3]\n"
			"  --flat_rows=N       rows of the flat8k store [2000000]\n"
			"  --flat_leaves=N     its tables [8192]\n"
			"  --flat_m=BITS       its filters [65536]\n"
			"  --flat_d=D          [3]\n"
			"  --mem_rows=LIST     rows of the memtable stores [25000,250000]\n"
			"  --memtable_bytes=B  memtable of the compacted loads "
			"[engine default]\n"
			"  --db=DIR            parent of value_bench.<pid> [/tmp]\n");
}

/*
 * Parses a comma-separated list of numbers into a[] (at most MAX_LIST);
 * returns how many.
 */
static int
parse_list(const char *opt, const char *s, uint64_t *a)
{
	char		buf[1024];
	char	   *tok;
	char	   *save = NULL;
	int			n = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
		 tok = strtok_r(NULL, ",", &save))
	{
		if (n >= MAX_LIST)
		{
			fprintf(stderr, "value_bench: too many values for %s\n", opt);
			exit(2);
		}
		a[n++] = bench_parse_number("value_bench", opt, tok);
	}
	if (n == 0)
	{
		fprintf(stderr, "value_bench: empty list for %s\n", opt);
		exit(2);
	}
	return n;
}

/*
 * Parses the experiment list into EXP_* bits.
 */
static int
parse_experiments(const char *s)
{
	char		buf[256];
	char	   *tok;
	char	   *save = NULL;
	int			bits = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
		 tok = strtok_r(NULL, ",", &save))
	{
		if (strcmp(tok, "fig8") == 0)
			bits |= EXP_FIG8;
		else if (strcmp(tok, "table2") == 0)
			bits |= EXP_TABLE2;
		else if (strcmp(tok, "fig10") == 0)
			bits |= EXP_FIG10;
		else if (strcmp(tok, "table3") == 0)
			bits |= EXP_TABLE3;
		else if (strcmp(tok, "flat8k") == 0)
			bits |= EXP_FLAT8K;
		else if (strcmp(tok, "memtable") == 0)
			bits |= EXP_MEMTABLE;
		else if (strcmp(tok, "all") == 0)
			bits |= EXP_FIG8 | EXP_TABLE2 | EXP_FIG10 | EXP_TABLE3 |
				EXP_FLAT8K | EXP_MEMTABLE;
		else
		{
			fprintf(stderr, "value_bench: unknown experiment \"%s\"\n", tok);
			exit(2);
		}
	}
	return bits;
}

/*
 * Sets the defaults, then applies the options (--quick first, so that
 * explicit options override it).
 */
static void
parse_options(int argc, char **argv)
{
	int			i;
	int			have_num = 0,
				have_flat_rows = 0;

	memset(&config, 0, sizeof(config));
	config.num = 1000000;
	config.experiments = EXP_FIG8 | EXP_TABLE2 | EXP_FIG10 | EXP_TABLE3 |
		EXP_FLAT8K | EXP_MEMTABLE;
	config.mem_rows[0] = 25000;
	config.mem_rows[1] = 250000;
	config.nmem_rows = 2;
	config.searches = 200;
	config.scan_searches = 5;
	config.m = 2000000;
	config.d = 5;
	config.fig10_ms[0] = 20000;
	config.fig10_ms[1] = 200000;
	config.fig10_ms[2] = 2000000;
	config.nfig10_m = 3;
	config.fig10_ds[0] = 2;
	config.fig10_ds[1] = 3;
	config.fig10_ds[2] = 5;
	config.fig10_ds[3] = 10;
	config.nfig10_d = 4;
	config.fig10_files = 119;
	config.t3_domains[0] = 1;
	config.t3_domains[1] = 5;
	config.t3_domains[2] = 10;
	config.t3_domains[3] = 40;
	config.t3_domains[4] = 70;
	config.t3_domains[5] = 100;
	config.nt3 = 6;
	config.t3_files = 599;
	config.t3_d = 3;
	config.flat_rows = 2000000;
	config.flat_leaves = 8192;
	config.flat_m = 65536;
	config.flat_d = 3;
	snprintf(config.parent, sizeof(config.parent), "/tmp");

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--quick") == 0)
			config.quick = 1;
	if (config.quick)
	{
		config.num = 100000;
		config.searches = 20;
		config.scan_searches = 2;
		config.flat_rows = 100000;
		config.flat_leaves = 512;
	}

	for (i = 1; i < argc; i++)
	{
		char	   *a = argv[i];
		char	   *eq = strchr(a, '=');
		char		name[64];
		const char *v;

		if (strcmp(a, "--quick") == 0)
			continue;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
		{
			usage(stdout);
			exit(0);
		}
		if (strncmp(a, "--", 2) != 0 || eq == NULL ||
			(size_t) (eq - a) >= sizeof(name))
		{
			fprintf(stderr, "value_bench: bad argument \"%s\"\n", a);
			usage(stderr);
			exit(2);
		}
		memcpy(name, a, eq - a);
		name[eq - a] = '\0';
		v = eq + 1;
		if (strcmp(name, "--num") == 0)
		{
			config.num = bench_parse_number("value_bench", name, v);
			have_num = 1;
		}
		else if (strcmp(name, "--experiments") == 0)
			config.experiments = parse_experiments(v);
		else if (strcmp(name, "--fig8_nums") == 0)
			config.nfig8 = parse_list(name, v, config.fig8_nums);
		else if (strcmp(name, "--searches") == 0)
			config.searches = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--scan_searches") == 0)
			config.scan_searches = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--m") == 0)
			config.m = (uint32_t) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--d") == 0)
			config.d = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--k") == 0)
			config.k = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--fig8_file_bytes") == 0)
			config.fig8_file_bytes = (size_t) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--fig10_ms") == 0)
			config.nfig10_m = parse_list(name, v, config.fig10_ms);
		else if (strcmp(name, "--fig10_ds") == 0)
			config.nfig10_d = parse_list(name, v, config.fig10_ds);
		else if (strcmp(name, "--fig10_files") == 0)
			config.fig10_files = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--t3_domains") == 0)
			config.nt3 = parse_list(name, v, config.t3_domains);
		else if (strcmp(name, "--t3_files") == 0)
			config.t3_files = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--t3_m") == 0)
			config.t3_m = (uint32_t) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--t3_d") == 0)
			config.t3_d = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--flat_rows") == 0)
		{
			config.flat_rows = bench_parse_number("value_bench", name, v);
			have_flat_rows = 1;
		}
		else if (strcmp(name, "--flat_leaves") == 0)
			config.flat_leaves = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--flat_m") == 0)
			config.flat_m = (uint32_t) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--flat_d") == 0)
			config.flat_d = (int) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--mem_rows") == 0)
			config.nmem_rows = parse_list(name, v, config.mem_rows);
		else if (strcmp(name, "--memtable_bytes") == 0)
			config.memtable_bytes = (size_t) bench_parse_number("value_bench", name, v);
		else if (strcmp(name, "--db") == 0)
			snprintf(config.parent, sizeof(config.parent), "%s", v);
		else
		{
			fprintf(stderr, "value_bench: unknown option \"%s\"\n", name);
			usage(stderr);
			exit(2);
		}
	}
	if (config.nfig8 == 0)
	{
		config.fig8_nums[0] = config.num;
		config.nfig8 = 1;
	}
	if (config.quick && have_num && !have_flat_rows)
		config.flat_rows = config.num;
	if (config.num < 1 || config.num >= UINT64_C(1000000000000000) ||
		config.flat_rows < 1 || config.searches < 1 ||
		config.fig10_files < 1 || config.t3_files < 1 ||
		config.flat_leaves < 1)
	{
		fprintf(stderr, "value_bench: a count is out of range\n");
		exit(2);
	}
}

/*
 * Parses the options, prints the header and runs the chosen experiments
 * in the order of the paper.
 */
int
main(int argc, char **argv)
{
	double		t0 = now_us();

	parse_options(argc, argv);
	snprintf(root_dir, sizeof(root_dir), "%s/value_bench.%ld", config.parent,
			 (long) getpid());
	remove_tree(root_dir);
	if (mkdir(root_dir, 0755) != 0)
	{
		fprintf(stderr, "value_bench: cannot create %s: %s\n", root_dir,
				strerror(errno));
		return 1;
	}
	print_header(argc, argv);

	if (config.experiments & (EXP_FIG10 | EXP_TABLE3 | EXP_FLAT8K))
		calibrate();
	if (config.experiments & (EXP_FIG8 | EXP_TABLE2))
		exp_fig8();
	if (config.experiments & EXP_FIG10)
		exp_fig10();
	if (config.experiments & EXP_TABLE3)
		exp_table3();
	if (config.experiments & EXP_FLAT8K)
		exp_flat8k();
	if (config.experiments & EXP_MEMTABLE)
		exp_memtable();

	remove_tree(root_dir);
	free(found_keys);
	printf("done in %.1f s; rows_returned mismatches: %llu\n",
		   (now_us() - t0) / 1e6, (unsigned long long) total_mismatches);
	return 0;
}

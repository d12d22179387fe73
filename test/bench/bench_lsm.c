/*
 * bench_lsm.c
 *		db_bench driver for our engine (src/engine/lsm.h), and the workloads
 *		that only our engine can run because they read lsm_get_stats.
 *
 * Settings: lsm_options_init defaults with memtable, file and block sizes
 * and the key filter budget taken from bench_config, so that they equal the
 * RocksDB and LevelDB settings.  The WAL is always on; sync is off.  Our
 * engine does not compress, has no block cache (SSTables are read through
 * mmap, so the OS page cache plays that part) and compacts in the writing
 * thread (auto_compact) instead of a background thread.  It also builds a
 * value Bloom filter per SSTable, which the other engines do not.
 *
 * filterfpr measures the key filters' false-positive rate over absent keys:
 * every SSTable read on behalf of an absent key finds nothing, so
 * FPR = sstable_reads / filter_probes.  The engine's own false_positives
 * counter must agree, and key_hashes must equal gets (hash sharing: one hash
 * per lookup); a disagreement is printed as a warning.
 *
 * absent_vs_sstables builds the same keys into one SSTable and into 100+
 * SSTables and compares the cost of absent-key gets; the target is that 128
 * overlapping SSTables cost at most twice one SSTable.
 */
#ifndef BENCH_NO_LSM

#include <stdlib.h>
#include <string.h>

#include "lsm.h"
#include "bench.h"

#define MANY_SSTABLES	128		/* L0 files of the "many" store */
#define ABSENT_MAX_KEYS 1000000 /* keys in each absent_vs_sstables store */

typedef struct lsm_bench_iter
{
	lsm_iter   *it;
} lsm_bench_iter;

/*
 * Exits through bench_fatal if rc is an error, with the handle's detail.
 */
static void
lsmb_check(lsm_db *db, int rc, const char *op)
{
	if (rc != LSM_OK)
		bench_fatal("lsm", op, "%s: %s", lsm_strerror(rc), lsm_errmsg(db));
}

/*
 * Fills *o with the engine defaults overridden by the benchmark settings.
 */
static void
lsmb_options(const bench_config *cfg, lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = cfg->memtable_bytes;
	o->file_bytes = cfg->file_bytes;
	o->block_bytes = (int) cfg->block_bytes;
	o->level_ratio = cfg->level_ratio;
	o->key_bits_per_key = cfg->bits_per_key;
	o->sync = 0;
	if (cfg->lsm_value_filter_bits >= 0)
		o->value_filter_bits = (uint32_t) cfg->lsm_value_filter_bits;
}

/*
 * Opens our engine's store in dir with options o.
 */
static lsm_db *
lsmb_open_with(const char *dir, const lsm_options *o)
{
	lsm_db	   *db = NULL;
	int			rc;

	rc = lsm_open(dir, o, &db);
	if (rc != LSM_OK)
		bench_fatal("lsm", "open", "%s: %s", lsm_strerror(rc),
					lsm_errmsg(NULL));
	return db;
}

/*
 * Prints the settings this driver uses.
 */
static void
lsmb_describe(const bench_config *cfg, FILE *out)
{
	lsm_options o;

	lsmb_options(cfg, &o);
	fprintf(out, "  lsm:     memtable_bytes %zu, file_bytes %zu, "
			"level_ratio %d, L0 trigger %d, block_bytes %d, no compression "
			"(not implemented)\n",
			o.memtable_bytes, o.file_bytes, o.level_ratio,
			o.l0_compaction_trigger, o.block_bytes);
	fprintf(out, "           key filter %d bits/key (cache-line-blocked, "
			"hash shared across SSTables), value filters %u bits k=%d, "
			"WAL on, no sync\n",
			o.key_bits_per_key, (unsigned) o.value_filter_bits,
			o.value_filter_hashes);
	fprintf(out, "           no block cache: SSTables read through mmap "
			"(OS page cache); compaction in the writing thread "
			"(auto_compact %d)\n", o.auto_compact);
}

/*
 * Opens (creating) a store in dir with the benchmark settings.
 */
static void *
lsmb_open(const char *dir, const bench_config *cfg)
{
	lsm_options o;

	lsmb_options(cfg, &o);
	return lsmb_open_with(dir, &o);
}

/*
 * Closes the store.
 */
static void
lsmb_close(void *db)
{
	lsmb_check(db, lsm_close(db), "close");
}

/*
 * Writes one entry (lsm_put: a one-entry batch).
 */
static void
lsmb_put(void *db, const char *key, size_t key_len, const char *val,
		 size_t val_len)
{
	lsmb_check(db, lsm_put(db, key, key_len, val, val_len), "put");
}

/*
 * Looks a key up; the value is a new allocation (lsmb_free_value).
 */
static int
lsmb_get(void *db, const char *key, size_t key_len, char **val,
		 size_t *val_len)
{
	void	   *v = NULL;
	int			rc;

	rc = lsm_get(db, key, key_len, &v, val_len);
	if (rc == LSM_NOTFOUND)
	{
		*val = NULL;
		return 0;
	}
	lsmb_check(db, rc, "get");
	*val = v;
	return 1;
}

/*
 * Releases a value returned by lsmb_get or lsmb_multi_get.
 */
static void
lsmb_free_value(char *val)
{
	lsm_free(val);
}

/*
 * Batched lookup through lsm_multi_get.  At most 256 keys per call.
 */
static void
lsmb_multi_get(void *db, size_t n, const char *const *keys,
			   const size_t *key_lens, char **vals, size_t *val_lens)
{
	void	   *v[256];
	int			rcs[256];
	size_t		i;

	if (n > 256)
		bench_fatal("lsm", "multi_get", "batch of %zu keys is too large", n);
	lsmb_check(db, lsm_multi_get(db, n, (const void *const *) keys, key_lens,
								 v, val_lens, rcs), "multi_get");
	for (i = 0; i < n; i++)
	{
		if (rcs[i] == LSM_NOTFOUND)
			vals[i] = NULL;
		else
		{
			lsmb_check(db, rcs[i], "multi_get (one key)");
			vals[i] = v[i];
		}
	}
}

/*
 * Opens an iterator (a snapshot of the store).
 */
static void *
lsmb_iter_open(void *db)
{
	lsm_bench_iter *bi = malloc(sizeof(lsm_bench_iter));

	if (bi == NULL)
		bench_fatal("lsm", "iter_open", "out of memory");
	lsmb_check(db, lsm_iter_open(db, &bi->it), "iter_open");
	return bi;
}

/*
 * Positions on the first key >= key, or on the first key if key is NULL.
 */
static void
lsmb_iter_seek(void *it, const char *key, size_t key_len)
{
	lsm_iter_seek(((lsm_bench_iter *) it)->it, key, key_len);
}

/*
 * Iterator accessors: thin wrappers around lsm_iter_*.
 */
static int
lsmb_iter_valid(void *it)
{
	return lsm_iter_valid(((lsm_bench_iter *) it)->it);
}

static void
lsmb_iter_next(void *it)
{
	lsm_iter_next(((lsm_bench_iter *) it)->it);
}

static const char *
lsmb_iter_key(void *it, size_t *key_len)
{
	return lsm_iter_key(((lsm_bench_iter *) it)->it, key_len);
}

static const char *
lsmb_iter_value(void *it, size_t *val_len)
{
	return lsm_iter_value(((lsm_bench_iter *) it)->it, val_len);
}

/*
 * Checks the iterator's status (an error ends the benchmark) and closes it.
 */
static void
lsmb_iter_close(void *it)
{
	lsm_bench_iter *bi = it;
	int			rc = lsm_iter_status(bi->it);

	if (rc != LSM_OK)
		bench_fatal("lsm", "iterate", "%s", lsm_strerror(rc));
	lsm_iter_close(bi->it);
	free(bi);
}

/*
 * Brings the store to steady state: flushes the memtable, then compacts
 * until no level is over its target (lsm_compact).
 */
static void
lsmb_compact(void *db)
{
	lsmb_check(db, lsm_flush(db), "flush");
	lsmb_check(db, lsm_compact(db), "compact");
}

/*
 * SSTable counts per level from lsm_get_stats.
 */
static int
lsmb_sstables(void *db, int *per_level)
{
	lsm_stats	st;
	int			total = 0;
	int			level;

	lsmb_check(db, lsm_get_stats(db, &st), "get_stats");
	for (level = 0; level < BENCH_MAX_LEVELS; level++)
	{
		per_level[level] = level < st.levels && level < LSM_MAX_LEVELS ?
			st.level[level].files : 0;
		total += per_level[level];
	}
	return total;
}

/*
 * Our engine's account: memtable arena bytes, and the SSTable and filter
 * bytes that are mapped (resident only as far as they are touched).
 */
static void
lsmb_memory(void *db, char *buf, size_t buf_size)
{
	lsm_stats	st;
	uint64_t	file_bytes = 0;
	uint64_t	filter_bytes = 0;
	uint64_t	value_filter_bytes = 0;
	int			level;

	lsmb_check(db, lsm_get_stats(db, &st), "get_stats");
	for (level = 0; level < st.levels && level < LSM_MAX_LEVELS; level++)
	{
		file_bytes += st.level[level].bytes;
		filter_bytes += st.level[level].filter_bytes;
		value_filter_bytes += st.level[level].value_filter_bytes;
	}
	snprintf(buf, buf_size,
			 "lsm: memtable %.1f MiB (%llu entries); mapped SSTables "
			 "%.1f MiB, of which key filters %.1f MiB, value filters %.1f MiB",
			 st.memtable_bytes / 1048576.0,
			 (unsigned long long) st.memtable_entries,
			 file_bytes / 1048576.0, filter_bytes / 1048576.0,
			 value_filter_bytes / 1048576.0);
}

const bench_driver bench_lsm_driver = {
	.name = "lsm",
	.multi_get_note = NULL,
	.describe = lsmb_describe,
	.open = lsmb_open,
	.close = lsmb_close,
	.put = lsmb_put,
	.get = lsmb_get,
	.free_value = lsmb_free_value,
	.multi_get = lsmb_multi_get,
	.iter_open = lsmb_iter_open,
	.iter_seek = lsmb_iter_seek,
	.iter_valid = lsmb_iter_valid,
	.iter_next = lsmb_iter_next,
	.iter_key = lsmb_iter_key,
	.iter_value = lsmb_iter_value,
	.iter_close = lsmb_iter_close,
	.compact = lsmb_compact,
	.sstables = lsmb_sstables,
	.memory = lsmb_memory,
};

/*
 * Looks up n distinct absent keys (even key numbers, in permuted order) and
 * returns the elapsed microseconds.  Every key must be reported absent.
 */
static double
lsmb_absent_gets(lsm_db *db, uint64_t n, uint64_t num, const char *what)
{
	char		key[BENCH_KEY_SIZE];
	double		start;
	uint64_t	i;

	start = bench_now_micros();
	for (i = 0; i < n; i++)
	{
		void	   *v = NULL;
		size_t		vlen;
		int			rc;

		bench_format_key(key, 2 * bench_permute(i % num, num));
		rc = lsm_get(db, key, sizeof(key), &v, &vlen);
		if (rc == LSM_OK)
			bench_fatal("lsm", what, "absent key %.16s was found", key);
		if (rc != LSM_NOTFOUND)
			lsmb_check(db, rc, what);
	}
	return bench_now_micros() - start;
}

/*
 * filterfpr: the key filters' false-positive rate over absent keys, from the
 * engine's counters.  REQUIRES: db holds cfg->num keys and is compacted.
 */
void
bench_lsm_filterfpr(void *db, const bench_config *cfg)
{
	uint64_t	n = cfg->reads < cfg->num ? cfg->reads : cfg->num;
	lsm_stats	st;
	double		micros;
	double		fpr;
	double		fpr_counter;
	char		note[256];

	lsm_reset_counters(db);
	micros = lsmb_absent_gets(db, n, cfg->num, "filterfpr");
	lsmb_check(db, lsm_get_stats(db, &st), "get_stats");

	fpr = st.filter_probes ? (double) st.sstable_reads / st.filter_probes : 0;
	fpr_counter = st.filter_probes ?
		(double) st.false_positives / st.filter_probes : 0;
	snprintf(note, sizeof(note),
			 "FPR %.3f%% = %llu SSTable reads / %llu filter probes "
			 "(%.2f probes/get)",
			 100.0 * fpr, (unsigned long long) st.sstable_reads,
			 (unsigned long long) st.filter_probes,
			 (double) st.filter_probes / n);
	bench_print_result("filterfpr", "lsm", micros / n, note);
	printf("  filterfpr  : %llu absent keys: gets %llu, key hashes %llu, "
		   "filter negatives %llu, false_positives counter %llu (%.3f%%)\n",
		   (unsigned long long) n, (unsigned long long) st.gets,
		   (unsigned long long) st.key_hashes,
		   (unsigned long long) st.filter_negatives,
		   (unsigned long long) st.false_positives, 100.0 * fpr_counter);
	if (cfg->bits_per_key == 10)
		printf("  filterfpr  : reference at 10 bits/key: blocked (512-bit "
			   "lines) 0.95%%, RocksDB FastLocalBloom 0.96%%, standard "
			   "Bloom 0.82%%\n");
	if (st.false_positives != st.sstable_reads)
		printf("  filterfpr  : WARNING: false_positives (%llu) != "
			   "sstable_reads (%llu) on absent keys\n",
			   (unsigned long long) st.false_positives,
			   (unsigned long long) st.sstable_reads);
	if (st.filter_negatives + st.sstable_reads != st.filter_probes)
		printf("  filterfpr  : WARNING: filter_negatives + sstable_reads "
			   "(%llu) != filter_probes (%llu)\n",
			   (unsigned long long) (st.filter_negatives + st.sstable_reads),
			   (unsigned long long) st.filter_probes);
	if (st.gets != n || st.key_hashes != n)
		printf("  filterfpr  : WARNING: expected %llu gets and %llu key "
			   "hashes (one per lookup), counted %llu and %llu\n",
			   (unsigned long long) n, (unsigned long long) n,
			   (unsigned long long) st.gets,
			   (unsigned long long) st.key_hashes);
	bench_add_note("filterfpr: lsm key filter FPR %.3f%% over %llu absent "
				   "keys (%.2f filter probes per get)",
				   100.0 * fpr, (unsigned long long) n,
				   (double) st.filter_probes / n);
}

/*
 * Loads the first nkeys keys of the permuted key order into a new store in
 * dir with options o, calling lsm_flush every flush_every keys (0: only at
 * the end), then lsm_compact if compact is set.  Returns the open store.
 */
static lsm_db *
lsmb_build(const char *dir, const lsm_options *o, uint64_t nkeys,
		   uint64_t flush_every, int compact)
{
	lsm_db	   *db;
	char		key[BENCH_KEY_SIZE];
	char		val[BENCH_VALUE_SIZE];
	uint64_t	i;

	bench_remove_tree(dir);
	db = lsmb_open_with(dir, o);
	for (i = 0; i < nkeys; i++)
	{
		uint64_t	k = 2 * bench_permute(i, nkeys) + 1;

		bench_format_key(key, k);
		bench_make_value(val, k);
		lsmb_check(db, lsm_put(db, key, sizeof(key), val, sizeof(val)), "put");
		if (flush_every != 0 && (i + 1) % flush_every == 0)
			lsmb_check(db, lsm_flush(db), "flush");
	}
	lsmb_check(db, lsm_flush(db), "flush");
	if (compact)
		lsmb_check(db, lsm_compact(db), "compact");
	return db;
}

/*
 * Times cfg->repeat runs of absent-key gets on db, prints the median and
 * returns it in micros/op.
 */
static double
lsmb_absent_run(lsm_db *db, const bench_config *cfg, uint64_t nkeys,
				const char *label)
{
	uint64_t	n = cfg->reads;
	double		runs[64];
	int			nruns = cfg->repeat < 64 ? cfg->repeat : 64;
	int			sst[BENCH_MAX_LEVELS];
	int			total;
	int			r;
	double		median;
	lsm_stats	st;
	char		note[256];
	char		levels[128];
	int			used = 0;
	int			level;

	total = lsmb_sstables(db, sst);
	levels[0] = '\0';
	for (level = 0; level < BENCH_MAX_LEVELS; level++)
		used += snprintf(levels + used, sizeof(levels) - used, "%s%d",
						 level ? " " : "", sst[level]);
	for (r = 0; r < nruns; r++)
	{
		lsm_reset_counters(db);
		runs[r] = lsmb_absent_gets(db, n, nkeys, "absent_vs_sstables") / n;
	}
	lsmb_check(db, lsm_get_stats(db, &st), "get_stats");
	median = bench_median(runs, nruns);
	snprintf(note, sizeof(note),
			 "%d SSTables [%s], %.2f filter probes/get, "
			 "%.4f SSTable reads/get",
			 total, levels, (double) st.filter_probes / n,
			 (double) st.sstable_reads / n);
	bench_print_result("absent_vs_sstables", label, median, note);
	return median;
}

/*
 * absent_vs_sstables: the same keys (min(num, 1M)) in three stores, (1) one
 * SSTable, (2) 128 overlapping L0 SSTables (auto compaction off: every
 * absent get probes every filter), (3) 100+ leveled, non-overlapping
 * SSTables (small files, compacted); reports absent-get micros/op of each
 * and the ratios to (1).  The stores live under dir and are removed.
 */
void
bench_lsm_absent_vs_sstables(const char *dir, const bench_config *cfg)
{
	uint64_t	nkeys = cfg->num < ABSENT_MAX_KEYS ? cfg->num : ABSENT_MAX_KEYS;
	size_t		data_bytes = nkeys * (BENCH_KEY_SIZE + BENCH_VALUE_SIZE);
	char		path[4096];
	lsm_options o;
	lsm_db	   *db;
	double		one;
	double		many;
	double		leveled;

	/* (1) one SSTable: memtable and file larger than the data */
	snprintf(path, sizeof(path), "%s/lsm_one", dir);
	lsmb_options(cfg, &o);
	o.memtable_bytes = 2 * data_bytes + (64 << 20);
	o.file_bytes = 2 * data_bytes + (64 << 20);
	o.auto_compact = 0;
	db = lsmb_build(path, &o, nkeys, 0, 0);
	one = lsmb_absent_run(db, cfg, nkeys, "lsm 1 sst");
	lsmb_close(db);
	bench_remove_tree(path);

	/* (2) 128 overlapping L0 SSTables, never compacted */
	snprintf(path, sizeof(path), "%s/lsm_many", dir);
	o.l0_compaction_trigger = 1000;	/* the engine's maximum */
	db = lsmb_build(path, &o, nkeys,
					(nkeys + MANY_SSTABLES - 1) / MANY_SSTABLES, 0);
	many = lsmb_absent_run(db, cfg, nkeys, "lsm L0 x128");
	lsmb_close(db);
	bench_remove_tree(path);

	/* (3) leveled, files of 1/200 of the data so that L1+ has 100+ files */
	snprintf(path, sizeof(path), "%s/lsm_leveled", dir);
	lsmb_options(cfg, &o);
	o.file_bytes = data_bytes / 200 > 16384 ? data_bytes / 200 : 16384;
	o.memtable_bytes = 4 * o.file_bytes;
	db = lsmb_build(path, &o, nkeys, 0, 1);
	leveled = lsmb_absent_run(db, cfg, nkeys, "lsm leveled");
	lsmb_close(db);
	bench_remove_tree(path);

	printf("absent_vs_sstables : ratio to 1 SSTable: 128 L0 SSTables %.2fx "
		   "(target <= 2x: %s), leveled 100+ SSTables %.2fx (target <= 2x: "
		   "%s)\n",
		   many / one, many / one <= 2.0 ? "met" : "NOT MET",
		   leveled / one, leveled / one <= 2.0 ? "met" : "NOT MET");
	bench_add_note("absent_vs_sstables: absent get, %llu keys: 1 SSTable "
				   "%.3f us; 128 L0 SSTables %.3f us (%.2fx, target <= 2x "
				   "%s); leveled 100+ SSTables %.3f us (%.2fx, %s)",
				   (unsigned long long) nkeys, one, many, many / one,
				   many / one <= 2.0 ? "met" : "NOT MET", leveled,
				   leveled / one, leveled / one <= 2.0 ? "met" : "NOT MET");
}

#endif							/* BENCH_NO_LSM */

/*
 * bench_lsm.c
 *		db_bench drivers for our engine (src/engine/lsm.h), and the workloads
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
 * Two drivers, two lock modes:
 *	- "lsm" opens with exclusive = 1: the handle holds the store's write lock
 *	  from open to close, as LevelDB and RocksDB hold their LOCK file, so a
 *	  commit makes no flock calls.  This is the engine compared with the
 *	  peers.
 *	- "lsm-shared" opens with exclusive = 0, the mode the PostgreSQL
 *	  extension uses: every lsm_write takes and releases an flock on LOCK
 *	  (two system calls) so that other processes can write between commits.
 *	  It is a variant (fill workloads only unless --variants=all), there to
 *	  show what multi-process safety costs.
 * With --lsm_compactor=process, lsm-shared's writer sets auto_compact = 0
 * and every fill forks a compactor process that opens the same store
 * (exclusive = 0) and loops lsm_compact + usleep(1000) until the fill ends:
 * our architecture's counterpart of LevelDB's background compaction thread,
 * using the second core.  "lsm" always compacts inline: an exclusive writer
 * holds the write lock that a compactor process needs to install its
 * result, so the compactor could never finish a compaction.
 *
 * Steady state after a fill is lsm_compact_all: flush, then merge the whole
 * store into its deepest non-empty level, like rocksdb_compact_range and
 * leveldb_compact_range over all keys.
 *
 * filterfpr measures the key filters' false-positive rate over absent keys:
 * every SSTable read on behalf of an absent key finds nothing, so
 * FPR = sstable_reads / filter_probes.  The engine's own false_positives
 * counter must agree, and key_hashes must equal gets (hash sharing: one hash
 * per lookup); a disagreement is printed as a warning.
 *
 * absent_vs_sstables builds the same keys into one SSTable, into 100+
 * SSTables in one level (lsm_compact_all with small files: an absent get
 * binary-searches the file ranges and probes one filter) and into 128
 * overlapping L0 SSTables (the worst case: every filter is probed), and
 * compares the cost of absent-key gets against the single SSTable.  The
 * target, at most twice the single SSTable's cost, applies to the leveled
 * store; the L0 line shows how the cost grows when nothing is compacted.
 */
#ifndef BENCH_NO_LSM

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lsm.h"
#include "bench.h"

#define MANY_SSTABLES	128		/* L0 files of the "many" store */
#define ABSENT_MAX_KEYS 1000000 /* keys in each absent_vs_sstables store */
#define COMPACTOR_SLEEP_US 1000 /* compactor pause between lsm_compact calls */

/* The compactor process of the running fill (lsm-shared, process mode). */
static pid_t compactor_pid = -1;

/* Set by SIGTERM in the compactor process; read by its interrupt callback. */
static volatile sig_atomic_t compactor_stop;

/*
 * An iterator read as the wrapper's scans read one: the entry a seek lands
 * on from the iterator itself (a seek that reads one entry reads no more),
 * the entries after it in batches (lsm_iter_batch) going forwards.
 */
typedef struct lsm_bench_iter
{
	lsm_iter   *it;
	const lsm_entry *batch;		/* entries pos..n-1 are the next ones */
	int			n;
	int			pos;
	bool		reverse;		/* backwards: lsm_iter_next */
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
 * Fills *o with the engine defaults overridden by the benchmark settings,
 * in the exclusive (1) or shared (0) lock mode.
 */
static void
lsmb_options(const bench_config *cfg, int exclusive, lsm_options *o)
{
	lsm_options_init(o);
	o->exclusive = exclusive;
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
 * Prints the settings of the "lsm" driver (exclusive lock mode).
 */
static void
lsmb_describe(const bench_config *cfg, FILE *out)
{
	lsm_options o;

	lsmb_options(cfg, 1, &o);
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
	fprintf(out, "           exclusive %d: write lock held from open to "
			"close, like LevelDB and RocksDB\n", o.exclusive);
	fprintf(out, "           no block cache: SSTables read through mmap "
			"(OS page cache); compaction in the writing thread "
			"(auto_compact %d)%s\n", o.auto_compact,
			cfg->lsm_compactor_process ?
			" (--lsm_compactor=process applies to lsm-shared only)" : "");
}

/*
 * Prints the settings of the "lsm-shared" driver: those of "lsm" but for
 * the lock mode and, with --lsm_compactor=process, the compactor.
 */
static void
lsmb_shared_describe(const bench_config *cfg, FILE *out)
{
	lsm_options o;

	lsmb_options(cfg, 0, &o);
	fprintf(out, "  lsm-shared: as lsm but exclusive %d (the PostgreSQL "
			"extension's mode): every commit takes and\n"
			"           releases an flock on LOCK; compaction %s\n",
			o.exclusive,
			cfg->lsm_compactor_process ?
			"in a forked compactor process (writer auto_compact 0;\n"
			"           compactor: lsm_compact + usleep(1000) in a loop, "
			"stopped at the end of each fill)" :
			"in the writing thread (auto_compact 1)");
}

/*
 * Opens (creating) a store in dir with the benchmark settings, exclusive.
 */
static void *
lsmb_open(const char *dir, const bench_config *cfg)
{
	lsm_options o;

	lsmb_options(cfg, 1, &o);
	return lsmb_open_with(dir, &o);
}

/*
 * Opens (creating) a store in dir with the benchmark settings, shared; with
 * a compactor process the writer does not compact.
 */
static void *
lsmb_shared_open(const char *dir, const bench_config *cfg)
{
	lsm_options o;

	lsmb_options(cfg, 0, &o);
	if (cfg->lsm_compactor_process)
		o.auto_compact = 0;
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
	lsm_bench_iter *bi = calloc(1, sizeof(lsm_bench_iter));

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
	lsm_bench_iter *bi = it;

	bi->n = bi->pos = 0;
	lsm_iter_seek(bi->it, key, key_len);
}

/*
 * Iterator accessors: the batch's entry, or the iterator's own (after a
 * seek, or once a batch is used up: the iterator then stands on the entry
 * after it).
 */
static int
lsmb_iter_valid(void *it)
{
	lsm_bench_iter *bi = it;

	return bi->pos < bi->n || lsm_iter_valid(bi->it);
}

static void
lsmb_iter_next(void *it)
{
	lsm_bench_iter *bi = it;

	if (bi->reverse)
		lsm_iter_next(bi->it);
	else if (bi->pos < bi->n)
		bi->pos++;
	else
	{
		/* the entry stood on and a batch after it; step past the first */
		bi->n = lsm_iter_batch(bi->it, &bi->batch);
		bi->pos = 1;
	}
	if (bi->pos >= bi->n)
		bi->n = bi->pos = 0;
}

/* Turns the fresh iterator backwards and positions it on the last key. */
static void
lsmb_iter_seek_last(void *it)
{
	lsm_iter   *li = ((lsm_bench_iter *) it)->it;

	if (lsm_iter_reverse(li) != LSM_OK)
		bench_fatal("lsm", "iter_seek_last", "iterator already positioned");
	((lsm_bench_iter *) it)->reverse = true;
	lsm_iter_seek(li, NULL, 0);
}

static const char *
lsmb_iter_key(void *it, size_t *key_len)
{
	lsm_bench_iter *bi = it;

	if (bi->pos < bi->n)
	{
		*key_len = bi->batch[bi->pos].klen;
		return bi->batch[bi->pos].key;
	}
	return lsm_iter_key(bi->it, key_len);
}

static const char *
lsmb_iter_value(void *it, size_t *val_len)
{
	lsm_bench_iter *bi = it;

	if (bi->pos < bi->n)
	{
		*val_len = bi->batch[bi->pos].vlen;
		return bi->batch[bi->pos].val;
	}
	return lsm_iter_value(bi->it, val_len);
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
 * Brings the store to steady state: lsm_compact_all flushes the memtable and
 * merges everything into the deepest non-empty level.
 */
static void
lsmb_compact(void *db)
{
	lsmb_check(db, lsm_compact_all(db), "compact_all");
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

/*
 * Interrupt callback of the compactor process: nonzero once SIGTERM came,
 * so that a compaction in progress stops at its next check.
 */
static int
lsmb_compactor_interrupted(void *arg)
{
	(void) arg;
	return compactor_stop;
}

/*
 * SIGTERM handler of the compactor process.
 */
static void
lsmb_compactor_on_term(int sig)
{
	(void) sig;
	compactor_stop = 1;
}

/*
 * Body of the compactor process: opens the store in dir in shared mode and
 * runs lsm_compact every COMPACTOR_SLEEP_US until SIGTERM (which interrupts
 * a compaction in progress: LSM_INTERRUPTED is the normal way out), then
 * prints a "compactor" line (compactions, bytes written, time spent in
 * lsm_compact).  Exits with status 0, or 1 after printing an engine error.
 * Never returns.
 * REQUIRES: SIGTERM blocked on entry (it is unblocked once handled).
 */
static void
lsmb_compactor_main(const char *dir, const bench_config *cfg)
{
	struct sigaction sa;
	sigset_t	term;
	lsm_options o;
	lsm_db	   *db = NULL;
	lsm_stats	st;
	double		busy = 0;
	int			rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lsmb_compactor_on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &term, NULL);

	lsmb_options(cfg, 0, &o);
	o.auto_compact = 0;
	o.interrupt = lsmb_compactor_interrupted;
	rc = lsm_open(dir, &o, &db);
	if (rc != LSM_OK)
	{
		fprintf(stderr, "db_bench: FAILED: lsm-shared: compactor open: "
				"%s: %s\n", lsm_strerror(rc), lsm_errmsg(NULL));
		_exit(1);
	}
	while (!compactor_stop)
	{
		double		start = bench_now_micros();

		rc = lsm_compact(db);
		busy += bench_now_micros() - start;
		if (rc == LSM_INTERRUPTED)
			break;
		if (rc != LSM_OK)
		{
			fprintf(stderr, "db_bench: FAILED: lsm-shared: compactor: "
					"%s: %s\n", lsm_strerror(rc), lsm_errmsg(db));
			_exit(1);
		}
		usleep(COMPACTOR_SLEEP_US);
	}
	if (lsm_get_stats(db, &st) == LSM_OK)
		printf("%-12s : %-11s process %d: %llu compactions, %.1f MB "
			   "written, %.3f s in lsm_compact\n", "  compactor",
			   "lsm-shared", (int) getpid(),
			   (unsigned long long) st.compactions,
			   st.sst_bytes_written / 1e6, busy / 1e6);
	fflush(stdout);
	lsm_close(db);
	_exit(0);
}

/*
 * Start of a fill on lsm-shared: with --lsm_compactor=process, forks the
 * compactor process on the store in dir.
 */
static void
lsmb_shared_fill_begin(void *db, const char *dir, const bench_config *cfg)
{
	sigset_t	term;
	sigset_t	old;
	pid_t		pid;

	(void) db;
	if (!cfg->lsm_compactor_process)
		return;
	/* the child must not die of a SIGTERM that beats its handler */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		lsmb_compactor_main(dir, cfg);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		bench_fatal("lsm-shared", "fork compactor", "%s", strerror(errno));
	compactor_pid = pid;
}

/*
 * End of a fill on lsm-shared: stops the compactor process (SIGTERM, which
 * interrupts its compaction in progress) and waits for it.  A compactor
 * that failed ends the benchmark.
 */
static void
lsmb_shared_fill_end(void *db)
{
	int			status;

	(void) db;
	if (compactor_pid < 0)
		return;
	kill(compactor_pid, SIGTERM);
	while (waitpid(compactor_pid, &status, 0) < 0)
		if (errno != EINTR)
			bench_fatal("lsm-shared", "wait for compactor", "%s",
						strerror(errno));
	compactor_pid = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bench_fatal("lsm-shared", "compactor",
					"compactor process ended with status %d%s", status,
					WIFSIGNALED(status) ? " (killed by a signal)" : "");
}

const bench_driver bench_lsm_driver = {
	.name = "lsm",
	.multi_get_note = NULL,
	.variant = 0,
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
	.iter_seek_last = lsmb_iter_seek_last,
	.iter_prev = lsmb_iter_next,	/* a reverse iterator's next */
	.iter_key = lsmb_iter_key,
	.iter_value = lsmb_iter_value,
	.iter_close = lsmb_iter_close,
	.compact = lsmb_compact,
	.sstables = lsmb_sstables,
	.memory = lsmb_memory,
	.fill_begin = NULL,
	.fill_end = NULL,
};

const bench_driver bench_lsm_shared_driver = {
	.name = "lsm-shared",
	.multi_get_note = NULL,
	.variant = 1,
	.describe = lsmb_shared_describe,
	.open = lsmb_shared_open,
	.close = lsmb_close,
	.put = lsmb_put,
	.get = lsmb_get,
	.free_value = lsmb_free_value,
	.multi_get = lsmb_multi_get,
	.iter_open = lsmb_iter_open,
	.iter_seek = lsmb_iter_seek,
	.iter_valid = lsmb_iter_valid,
	.iter_next = lsmb_iter_next,
	.iter_seek_last = lsmb_iter_seek_last,
	.iter_prev = lsmb_iter_next,	/* a reverse iterator's next */
	.iter_key = lsmb_iter_key,
	.iter_value = lsmb_iter_value,
	.iter_close = lsmb_iter_close,
	.compact = lsmb_compact,
	.sstables = lsmb_sstables,
	.memory = lsmb_memory,
	.fill_begin = lsmb_shared_fill_begin,
	.fill_end = lsmb_shared_fill_end,
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
 * the end), then lsm_compact_all if compact is set.  Returns the open store.
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
		lsmb_check(db, lsm_compact_all(db), "compact_all");
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
 * SSTable, (2) 100+ SSTables in one level (small files, lsm_compact_all:
 * an absent get binary-searches the file ranges and probes one filter),
 * (3) the worst case, 128 overlapping L0 SSTables (auto compaction off:
 * every absent get probes every filter); reports absent-get micros/op of
 * each and the ratios to (1).  The target (at most 2x) is for (2).  The
 * stores live under dir and are removed.
 */
void
bench_lsm_absent_vs_sstables(const char *dir, const bench_config *cfg)
{
	uint64_t	nkeys = cfg->num < ABSENT_MAX_KEYS ? cfg->num : ABSENT_MAX_KEYS;
	size_t		data_bytes = nkeys * (BENCH_KEY_SIZE + BENCH_VALUE_SIZE);
	char		path[4096];
	lsm_options o;
	lsm_db	   *db;
	int			sst[BENCH_MAX_LEVELS];
	int			leveled_files;
	double		one;
	double		many;
	double		leveled;

	/* (1) one SSTable: memtable and file larger than the data */
	snprintf(path, sizeof(path), "%s/lsm_one", dir);
	lsmb_options(cfg, 1, &o);
	o.memtable_bytes = 2 * data_bytes + (64 << 20);
	o.file_bytes = 2 * data_bytes + (64 << 20);
	o.auto_compact = 0;
	db = lsmb_build(path, &o, nkeys, 0, 0);
	one = lsmb_absent_run(db, cfg, nkeys, "lsm 1 sst");
	lsmb_close(db);
	bench_remove_tree(path);

	/* (2) files of 1/200 of the data, all compacted into one level */
	snprintf(path, sizeof(path), "%s/lsm_leveled", dir);
	lsmb_options(cfg, 1, &o);
	o.file_bytes = data_bytes / 200 > 16384 ? data_bytes / 200 : 16384;
	o.memtable_bytes = 4 * o.file_bytes;
	db = lsmb_build(path, &o, nkeys, 0, 1);
	leveled_files = lsmb_sstables(db, sst);
	leveled = lsmb_absent_run(db, cfg, nkeys, "lsm 1 level");
	lsmb_close(db);
	bench_remove_tree(path);

	/* (3) worst case: 128 overlapping L0 SSTables, never compacted */
	snprintf(path, sizeof(path), "%s/lsm_many", dir);
	lsmb_options(cfg, 1, &o);
	o.memtable_bytes = 2 * data_bytes + (64 << 20);
	o.file_bytes = 2 * data_bytes + (64 << 20);
	o.auto_compact = 0;
	o.l0_compaction_trigger = 1000; /* the engine's maximum */
	db = lsmb_build(path, &o, nkeys,
					(nkeys + MANY_SSTABLES - 1) / MANY_SSTABLES, 0);
	many = lsmb_absent_run(db, cfg, nkeys, "lsm L0 x128");
	lsmb_close(db);
	bench_remove_tree(path);

	printf("absent_vs_sstables : ratio to 1 SSTable: %d SSTables in one "
		   "level %.2fx (target <= 2x: %s); worst case, %d overlapping L0 "
		   "SSTables (every filter probed, no target) %.2fx\n",
		   leveled_files, leveled / one,
		   leveled / one <= 2.0 ? "met" : "NOT MET", MANY_SSTABLES,
		   many / one);
	bench_add_note("absent_vs_sstables: absent get, %llu keys: 1 SSTable "
				   "%.3f us; %d SSTables in one level %.3f us (%.2fx, "
				   "target <= 2x %s); worst case %d overlapping L0 "
				   "SSTables %.3f us (%.2fx)",
				   (unsigned long long) nkeys, one, leveled_files, leveled,
				   leveled / one, leveled / one <= 2.0 ? "met" : "NOT MET",
				   MANY_SSTABLES, many, many / one);
}

#endif							/* BENCH_NO_LSM */

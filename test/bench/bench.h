/*
 * bench.h
 *		Private interface of db_bench: the engine driver table and the
 *		helpers that the drivers share with the harness.
 *
 * db_bench runs the same workloads against several key-value engines in one
 * process.  Each engine is reached through a bench_driver, a table of
 * function pointers filled in by one file per engine (bench_lsm.c,
 * bench_rocksdb.c, bench_leveldb.c); db_bench.c owns option parsing, key and
 * value generation, timing and reporting, and never names an engine API.
 *
 * Drivers do not return error codes: a failing engine call is a failed
 * benchmark, so a driver reports it through bench_fatal(), which prints the
 * engine, the operation and the engine's message and exits with status 1.
 *
 * A driver may be compiled out with -DBENCH_NO_LSM, -DBENCH_NO_ROCKSDB or
 * -DBENCH_NO_LEVELDB (for instance while the engine does not link yet).
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_KEY_SIZE		16	/* "%016llu" of the key number */
#define BENCH_VALUE_SIZE	100
#define BENCH_MAX_LEVELS	7	/* levels reported in SSTable counts */

/*
 * Settings shared by every engine.  The drivers translate them into their
 * engine's options so that all engines run with the same memtable, file,
 * block and filter sizes.
 */
typedef struct bench_config
{
	uint64_t	num;			/* entries loaded by a fill */
	uint64_t	reads;			/* operations of a read workload */
	int			repeat;			/* runs of each read workload (median) */
	size_t		memtable_bytes; /* memtable / write buffer size */
	size_t		file_bytes;		/* target SSTable size */
	size_t		block_bytes;	/* data block size */
	size_t		l1_bytes;		/* target size of level 1 */
	int			level_ratio;	/* size ratio between levels */
	int			bits_per_key;	/* key Bloom filter budget */
	size_t		cache_bytes;	/* block cache of RocksDB and LevelDB */
	long		lsm_value_filter_bits;	/* -1: engine default */
	int			seek_iter_per_op;	/* seekrandom: new iterator per seek */
	int			lsm_compactor_process;	/* lsm-shared: compact in a forked
										 * process instead of inline */
	int			variants_all;	/* variant drivers run every workload */
} bench_config;

/*
 * One engine.  "db" and "it" are the driver's own handles.  Every function
 * either succeeds or calls bench_fatal().
 *
 * get returns 1 and a value (released with free_value) if the key is found,
 * 0 if it is absent.  multi_get sets vals[i] to a value (free_value) or to
 * NULL for an absent key.  iter_seek with key NULL positions on the first
 * entry; iter_seek_last positions a fresh iterator on the last entry, and
 * iter_prev then moves back.  sstables fills per_level[0..BENCH_MAX_LEVELS-1] and returns the
 * total, or -1 if the engine does not say.  memory writes the engine's own
 * account of its memory use into buf.
 *
 * fill_begin and fill_end (optional, NULL if unused) bracket every fill,
 * inside its timed region: lsm-shared starts and stops its compactor
 * process there.  A variant driver (variant = 1: another mode of an engine
 * already in the table) runs only the fill workloads unless
 * --variants=all.
 */
typedef struct bench_driver
{
	const char *name;
	const char *multi_get_note; /* NULL if the engine has a native multi-get */
	int			variant;		/* fills only unless --variants=all */
	void		(*describe) (const bench_config *cfg, FILE *out);
	void	   *(*open) (const char *dir, const bench_config *cfg);
	void		(*close) (void *db);
	void		(*put) (void *db, const char *key, size_t key_len,
						const char *val, size_t val_len);
	int			(*get) (void *db, const char *key, size_t key_len,
						char **val, size_t *val_len);
	void		(*free_value) (char *val);
	void		(*multi_get) (void *db, size_t n, const char *const *keys,
							  const size_t *key_lens, char **vals,
							  size_t *val_lens);
	void	   *(*iter_open) (void *db);
	void		(*iter_seek) (void *it, const char *key, size_t key_len);
	int			(*iter_valid) (void *it);
	void		(*iter_next) (void *it);
	void		(*iter_seek_last) (void *it);
	void		(*iter_prev) (void *it);
	const char *(*iter_key) (void *it, size_t *key_len);
	const char *(*iter_value) (void *it, size_t *val_len);
	void		(*iter_close) (void *it);
	void		(*compact) (void *db);
	int			(*sstables) (void *db, int *per_level);
	void		(*memory) (void *db, char *buf, size_t buf_size);
	void		(*fill_begin) (void *db, const char *dir,
							   const bench_config *cfg);
	void		(*fill_end) (void *db);
} bench_driver;

#ifndef BENCH_NO_LSM
extern const bench_driver bench_lsm_driver;		/* exclusive = 1 */
extern const bench_driver bench_lsm_shared_driver;	/* exclusive = 0 */

/* Workloads that only our engine can run (they read lsm_get_stats). */
void		bench_lsm_filterfpr(void *db, const bench_config *cfg);
void		bench_lsm_absent_vs_sstables(const char *dir,
										 const bench_config *cfg);
#endif
#ifndef BENCH_NO_ROCKSDB
extern const bench_driver bench_rocksdb_driver;
#endif
#ifndef BENCH_NO_LEVELDB
extern const bench_driver bench_leveldb_driver;
#endif

/* Helpers provided by db_bench.c. */
void		bench_fatal(const char *engine, const char *op, const char *fmt,...)
			__attribute__((format(printf, 3, 4), noreturn));
double		bench_now_micros(void);
double		bench_median(double *v, int n);
uint64_t	bench_splitmix64(uint64_t *state);
uint64_t	bench_uniform(uint64_t *state, uint64_t n);
uint64_t	bench_permute(uint64_t i, uint64_t n);
void		bench_format_key(char *buf, uint64_t n);
void		bench_make_value(char *buf, uint64_t n);
int			bench_check_value(uint64_t n, const char *val, size_t val_len);
void		bench_remove_tree(const char *path);
void		bench_print_result(const char *name, const char *engine,
							   double micros_per_op, const char *note);
void		bench_add_note(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));

#endif							/* BENCH_H */

/*
 * bench_rocksdb.c
 *		db_bench driver for RocksDB through its C API (<rocksdb/c.h>).
 *
 * Settings, chosen to match our engine's defaults: write buffer and target
 * file size from bench_config (4 MiB and 2 MiB), level 1 of l1_bytes (10 MiB,
 * LevelDB's fixed figure, instead of RocksDB's 256 MiB default), level ratio
 * 10, L0 trigger 4, 4 KiB blocks, no compression (our engine does not
 * compress), a full-key Bloom filter of bits_per_key bits per key in table
 * format_version 5 (the cache-line-blocked FastLocalBloom that our key
 * filters copy), an LRU block cache of cache_bytes, the WAL on and no sync.
 * Flushes and compactions run in RocksDB's own background threads (its
 * default of 2 background jobs); our engine compacts in the writing thread.
 *
 * Gets use rocksdb_get, which returns a malloc'ed copy of the value, as
 * lsm_get and leveldb_get do; reads verify checksums (RocksDB's default).
 */
#ifndef BENCH_NO_ROCKSDB

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "bench.h"

typedef struct rocks_db
{
	rocksdb_t  *db;
	rocksdb_options_t *options;
	rocksdb_block_based_table_options_t *table_options;
	rocksdb_cache_t *cache;
	rocksdb_readoptions_t *read_options;
	rocksdb_writeoptions_t *write_options;
	char		version[32];
} rocks_db;

typedef struct rocks_iter
{
	rocksdb_iterator_t *it;
} rocks_iter;

/*
 * Exits through bench_fatal if a RocksDB call set *err.
 */
static void
rocks_check(char *err, const char *op)
{
	if (err != NULL)
		bench_fatal("rocksdb", op, "%s", err);
}

/*
 * Reads the RocksDB version that wrote dir's OPTIONS file (the C API has no
 * version function) into buf; leaves "7.8?" if it cannot be found.
 */
static void
rocks_version(const char *dir, char *buf, size_t buf_size)
{
	DIR		   *d;
	struct dirent *de;

	snprintf(buf, buf_size, "7.8?");
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
	{
		char		path[4096];
		char		line[256];
		FILE	   *f;

		if (strncmp(de->d_name, "OPTIONS-", 8) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
		{
			char	   *p = strstr(line, "rocksdb_version=");

			if (p != NULL)
			{
				p += strlen("rocksdb_version=");
				p[strcspn(p, "\r\n")] = '\0';
				snprintf(buf, buf_size, "%s", p);
				break;
			}
		}
		fclose(f);
		break;
	}
	closedir(d);
}

/*
 * Prints the settings this driver uses.
 */
static void
rocks_describe(const bench_config *cfg, FILE *out)
{
	fprintf(out, "  rocksdb: write_buffer_size %zu, max_write_buffer_number 2, "
			"target_file_size_base %zu, max_bytes_for_level_base %zu, "
			"level multiplier %d, L0 trigger 4\n",
			cfg->memtable_bytes, cfg->file_bytes, cfg->l1_bytes,
			cfg->level_ratio);
	fprintf(out, "           block_size %zu, no compression, "
			"rocksdb_filterpolicy_create_bloom(%d) with format_version 5 "
			"(FastLocalBloom), LRU block cache %zu MiB\n",
			cfg->block_bytes, cfg->bits_per_key, cfg->cache_bytes >> 20);
	fprintf(out, "           WAL on, no sync, verify_checksums on, "
			"max_open_files -1, background jobs 2 (default): "
			"flush and compaction in background threads\n");
}

/*
 * Opens (creating) a RocksDB store in dir with the settings above.
 */
static void *
rocks_open(const char *dir, const bench_config *cfg)
{
	rocks_db   *r = calloc(1, sizeof(rocks_db));
	char	   *err = NULL;

	if (r == NULL)
		bench_fatal("rocksdb", "open", "out of memory");
	r->options = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(r->options, 1);
	rocksdb_options_set_write_buffer_size(r->options, cfg->memtable_bytes);
	rocksdb_options_set_target_file_size_base(r->options, cfg->file_bytes);
	rocksdb_options_set_max_bytes_for_level_base(r->options, cfg->l1_bytes);
	rocksdb_options_set_max_bytes_for_level_multiplier(r->options,
													   cfg->level_ratio);
	rocksdb_options_set_level0_file_num_compaction_trigger(r->options, 4);
	rocksdb_options_set_compression(r->options, rocksdb_no_compression);
	rocksdb_options_set_max_open_files(r->options, -1);

	r->table_options = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_size(r->table_options,
											   cfg->block_bytes);
	rocksdb_block_based_options_set_format_version(r->table_options, 5);
	/* the table options take ownership of the filter policy */
	rocksdb_block_based_options_set_filter_policy(r->table_options,
												  rocksdb_filterpolicy_create_bloom(cfg->bits_per_key));
	r->cache = rocksdb_cache_create_lru(cfg->cache_bytes);
	rocksdb_block_based_options_set_block_cache(r->table_options, r->cache);
	rocksdb_options_set_block_based_table_factory(r->options,
												  r->table_options);

	r->db = rocksdb_open(r->options, dir, &err);
	rocks_check(err, "open");
	r->read_options = rocksdb_readoptions_create();
	r->write_options = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(r->write_options, 0);
	rocks_version(dir, r->version, sizeof(r->version));
	return r;
}

/*
 * Closes the store and releases every option object.
 */
static void
rocks_close(void *db)
{
	rocks_db   *r = db;

	rocksdb_close(r->db);
	rocksdb_readoptions_destroy(r->read_options);
	rocksdb_writeoptions_destroy(r->write_options);
	rocksdb_options_destroy(r->options);
	rocksdb_block_based_options_destroy(r->table_options);
	rocksdb_cache_destroy(r->cache);
	free(r);
}

/*
 * Writes one entry (rocksdb_put: a one-entry batch).
 */
static void
rocks_put(void *db, const char *key, size_t key_len, const char *val,
		  size_t val_len)
{
	rocks_db   *r = db;
	char	   *err = NULL;

	rocksdb_put(r->db, r->write_options, key, key_len, val, val_len, &err);
	rocks_check(err, "put");
}

/*
 * Looks a key up; the value is a malloc'ed copy (rocks_free_value).
 */
static int
rocks_get(void *db, const char *key, size_t key_len, char **val,
		  size_t *val_len)
{
	rocks_db   *r = db;
	char	   *err = NULL;

	*val = rocksdb_get(r->db, r->read_options, key, key_len, val_len, &err);
	rocks_check(err, "get");
	return *val != NULL;
}

/*
 * Releases a value returned by rocks_get or rocks_multi_get.
 */
static void
rocks_free_value(char *val)
{
	rocksdb_free(val);
}

/*
 * Batched lookup through rocksdb_multi_get (a NULL value with a NULL error
 * means "not found").  At most 256 keys per call.
 */
static void
rocks_multi_get(void *db, size_t n, const char *const *keys,
				const size_t *key_lens, char **vals, size_t *val_lens)
{
	rocks_db   *r = db;
	char	   *errs[256];
	size_t		i;

	if (n > 256)
		bench_fatal("rocksdb", "multi_get", "batch of %zu keys is too large",
					n);
	rocksdb_multi_get(r->db, r->read_options, n, keys, key_lens, vals,
					  val_lens, errs);
	for (i = 0; i < n; i++)
		rocks_check(errs[i], "multi_get");
}

/*
 * Opens an iterator over the current state of the store.
 */
static void *
rocks_iter_open(void *db)
{
	rocks_db   *r = db;
	rocks_iter *ri = malloc(sizeof(rocks_iter));

	if (ri == NULL)
		bench_fatal("rocksdb", "iter_open", "out of memory");
	ri->it = rocksdb_create_iterator(r->db, r->read_options);
	return ri;
}

/*
 * Positions on the first key >= key, or on the first key if key is NULL.
 */
static void
rocks_iter_seek(void *it, const char *key, size_t key_len)
{
	rocks_iter *ri = it;

	if (key == NULL)
		rocksdb_iter_seek_to_first(ri->it);
	else
		rocksdb_iter_seek(ri->it, key, key_len);
}

/*
 * Iterator accessors: thin wrappers around rocksdb_iter_*.
 */
static int
rocks_iter_valid(void *it)
{
	return rocksdb_iter_valid(((rocks_iter *) it)->it);
}

static void
rocks_iter_next(void *it)
{
	rocksdb_iter_next(((rocks_iter *) it)->it);
}

static void
rocks_iter_seek_last(void *it)
{
	rocksdb_iter_seek_to_last(((rocks_iter *) it)->it);
}

static void
rocks_iter_prev(void *it)
{
	rocksdb_iter_prev(((rocks_iter *) it)->it);
}

static const char *
rocks_iter_key(void *it, size_t *key_len)
{
	return rocksdb_iter_key(((rocks_iter *) it)->it, key_len);
}

static const char *
rocks_iter_value(void *it, size_t *val_len)
{
	return rocksdb_iter_value(((rocks_iter *) it)->it, val_len);
}

/*
 * Checks the iterator's status (an error ends the benchmark) and closes it.
 */
static void
rocks_iter_close(void *it)
{
	rocks_iter *ri = it;
	char	   *err = NULL;

	rocksdb_iter_get_error(ri->it, &err);
	rocks_check(err, "iterate");
	rocksdb_iter_destroy(ri->it);
	free(ri);
}

/*
 * Full manual compaction of the whole key range; it flushes the memtable
 * first and returns when the compaction is done.
 */
static void
rocks_compact(void *db)
{
	rocks_db   *r = db;

	rocksdb_compact_range(r->db, NULL, 0, NULL, 0);
}

/*
 * SSTable counts from the "rocksdb.num-files-at-level<N>" properties.
 */
static int
rocks_sstables(void *db, int *per_level)
{
	rocks_db   *r = db;
	int			total = 0;
	int			level;

	for (level = 0; level < BENCH_MAX_LEVELS; level++)
	{
		char		prop[64];
		char	   *v;

		snprintf(prop, sizeof(prop), "rocksdb.num-files-at-level%d", level);
		v = rocksdb_property_value(r->db, prop);
		per_level[level] = v != NULL ? atoi(v) : 0;
		total += per_level[level];
		rocksdb_free(v);
	}
	return total;
}

/*
 * Returns the value of an integer property, or 0 if RocksDB does not know it.
 */
static unsigned long long
rocks_int_property(rocks_db *r, const char *name)
{
	char	   *v = rocksdb_property_value(r->db, name);
	unsigned long long n = v != NULL ? strtoull(v, NULL, 10) : 0;

	rocksdb_free(v);
	return n;
}

/*
 * RocksDB's own memory account: table readers (index and filter blocks held
 * outside the cache, since max_open_files is -1), memtables, block cache.
 */
static void
rocks_memory(void *db, char *buf, size_t buf_size)
{
	rocks_db   *r = db;

	snprintf(buf, buf_size,
			 "rocksdb %s: table readers %.1f MiB, memtables %.1f MiB, "
			 "block cache %.1f MiB",
			 r->version,
			 rocks_int_property(r, "rocksdb.estimate-table-readers-mem") /
			 1048576.0,
			 rocks_int_property(r, "rocksdb.cur-size-all-mem-tables") /
			 1048576.0,
			 rocksdb_cache_get_usage(r->cache) / 1048576.0);
}

const bench_driver bench_rocksdb_driver = {
	.name = "rocksdb",
	.multi_get_note = NULL,
	.describe = rocks_describe,
	.open = rocks_open,
	.close = rocks_close,
	.put = rocks_put,
	.get = rocks_get,
	.free_value = rocks_free_value,
	.multi_get = rocks_multi_get,
	.iter_open = rocks_iter_open,
	.iter_seek = rocks_iter_seek,
	.iter_valid = rocks_iter_valid,
	.iter_next = rocks_iter_next,
	.iter_seek_last = rocks_iter_seek_last,
	.iter_prev = rocks_iter_prev,
	.iter_key = rocks_iter_key,
	.iter_value = rocks_iter_value,
	.iter_close = rocks_iter_close,
	.compact = rocks_compact,
	.sstables = rocks_sstables,
	.memory = rocks_memory,
};

#endif							/* BENCH_NO_ROCKSDB */

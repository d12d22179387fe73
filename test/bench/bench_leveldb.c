/*
 * bench_leveldb.c
 *		db_bench driver for LevelDB through its C API (<leveldb/c.h>).
 *
 * Settings, chosen to match our engine's defaults: write buffer and maximum
 * file size from bench_config (4 MiB and 2 MiB), 4 KiB blocks, no compression
 * (our engine does not compress), the LevelDB Bloom filter of bits_per_key
 * bits per key (a standard, not cache-line-blocked, filter), an LRU block
 * cache of cache_bytes, the WAL on and no sync.  Reads verify checksums,
 * which LevelDB does not do by default, because RocksDB and our engine do.
 * LevelDB fixes the rest: level 1 of 10 MiB, level ratio 10, L0 trigger 4,
 * one background thread for flushes and compactions.
 *
 * LevelDB has no multi-get; the multiget workload runs a loop of
 * leveldb_get and says so in its output.
 *
 * On 64-bit POSIX systems LevelDB 1.23 reads up to 1000 SSTables through
 * mmap, like our engine, and does not put blocks read from a mapped file in
 * its block cache: its memory report then shows file-backed RSS and an
 * almost empty cache.
 */
#ifndef BENCH_NO_LEVELDB

#include <stdlib.h>

#include <leveldb/c.h>

#include "bench.h"

typedef struct ldb_db
{
	leveldb_t  *db;
	leveldb_options_t *options;
	leveldb_filterpolicy_t *filter;
	leveldb_cache_t *cache;
	leveldb_readoptions_t *read_options;
	leveldb_writeoptions_t *write_options;
} ldb_db;

typedef struct ldb_iter
{
	leveldb_iterator_t *it;
} ldb_iter;

/*
 * Exits through bench_fatal if a LevelDB call set *err.
 */
static void
ldb_check(char *err, const char *op)
{
	if (err != NULL)
		bench_fatal("leveldb", op, "%s", err);
}

/*
 * Prints the settings this driver uses.
 */
static void
ldb_describe(const bench_config *cfg, FILE *out)
{
	fprintf(out, "  leveldb: LevelDB %d.%d, write_buffer_size %zu, "
			"max_file_size %zu, block_size %zu, no compression\n",
			leveldb_major_version(), leveldb_minor_version(),
			cfg->memtable_bytes, cfg->file_bytes, cfg->block_bytes);
	fprintf(out, "           leveldb_filterpolicy_create_bloom(%d) "
			"(standard Bloom), LRU block cache %zu MiB, "
			"WAL on, no sync, verify_checksums on\n",
			cfg->bits_per_key, cfg->cache_bytes >> 20);
	fprintf(out, "           fixed by LevelDB: L1 10 MiB, ratio 10, "
			"L0 trigger 4, one background compaction thread; "
			"no multi-get API;\n"
			"           SSTables read through mmap (up to 1000 files), "
			"blocks from mapped files bypass the block cache\n");
}

/*
 * Opens (creating) a LevelDB store in dir with the settings above.
 */
static void *
ldb_open(const char *dir, const bench_config *cfg)
{
	ldb_db	   *l = calloc(1, sizeof(ldb_db));
	char	   *err = NULL;

	if (l == NULL)
		bench_fatal("leveldb", "open", "out of memory");
	l->options = leveldb_options_create();
	leveldb_options_set_create_if_missing(l->options, 1);
	leveldb_options_set_write_buffer_size(l->options, cfg->memtable_bytes);
	leveldb_options_set_max_file_size(l->options, cfg->file_bytes);
	leveldb_options_set_block_size(l->options, cfg->block_bytes);
	leveldb_options_set_compression(l->options, leveldb_no_compression);
	l->filter = leveldb_filterpolicy_create_bloom(cfg->bits_per_key);
	leveldb_options_set_filter_policy(l->options, l->filter);
	l->cache = leveldb_cache_create_lru(cfg->cache_bytes);
	leveldb_options_set_cache(l->options, l->cache);

	l->db = leveldb_open(l->options, dir, &err);
	ldb_check(err, "open");
	l->read_options = leveldb_readoptions_create();
	leveldb_readoptions_set_verify_checksums(l->read_options, 1);
	l->write_options = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(l->write_options, 0);
	return l;
}

/*
 * Closes the store and releases the options, filter policy and cache.
 */
static void
ldb_close(void *db)
{
	ldb_db	   *l = db;

	leveldb_close(l->db);
	leveldb_readoptions_destroy(l->read_options);
	leveldb_writeoptions_destroy(l->write_options);
	leveldb_options_destroy(l->options);
	leveldb_filterpolicy_destroy(l->filter);
	leveldb_cache_destroy(l->cache);
	free(l);
}

/*
 * Writes one entry (leveldb_put: a one-entry batch).
 */
static void
ldb_put(void *db, const char *key, size_t key_len, const char *val,
		size_t val_len)
{
	ldb_db	   *l = db;
	char	   *err = NULL;

	leveldb_put(l->db, l->write_options, key, key_len, val, val_len, &err);
	ldb_check(err, "put");
}

/*
 * Looks a key up; the value is a malloc'ed copy (ldb_free_value).
 */
static int
ldb_get(void *db, const char *key, size_t key_len, char **val,
		size_t *val_len)
{
	ldb_db	   *l = db;
	char	   *err = NULL;

	*val = leveldb_get(l->db, l->read_options, key, key_len, val_len, &err);
	ldb_check(err, "get");
	return *val != NULL;
}

/*
 * Releases a value returned by ldb_get.
 */
static void
ldb_free_value(char *val)
{
	leveldb_free(val);
}

/*
 * LevelDB has no multi-get: one leveldb_get per key.
 */
static void
ldb_multi_get(void *db, size_t n, const char *const *keys,
			  const size_t *key_lens, char **vals, size_t *val_lens)
{
	size_t		i;

	for (i = 0; i < n; i++)
		ldb_get(db, keys[i], key_lens[i], &vals[i], &val_lens[i]);
}

/*
 * Opens an iterator over the current state of the store.
 */
static void *
ldb_iter_open(void *db)
{
	ldb_db	   *l = db;
	ldb_iter   *li = malloc(sizeof(ldb_iter));

	if (li == NULL)
		bench_fatal("leveldb", "iter_open", "out of memory");
	li->it = leveldb_create_iterator(l->db, l->read_options);
	return li;
}

/*
 * Positions on the first key >= key, or on the first key if key is NULL.
 */
static void
ldb_iter_seek(void *it, const char *key, size_t key_len)
{
	ldb_iter   *li = it;

	if (key == NULL)
		leveldb_iter_seek_to_first(li->it);
	else
		leveldb_iter_seek(li->it, key, key_len);
}

/*
 * Iterator accessors: thin wrappers around leveldb_iter_*.
 */
static int
ldb_iter_valid(void *it)
{
	return leveldb_iter_valid(((ldb_iter *) it)->it);
}

static void
ldb_iter_next(void *it)
{
	leveldb_iter_next(((ldb_iter *) it)->it);
}

static void
ldb_iter_seek_last(void *it)
{
	leveldb_iter_seek_to_last(((ldb_iter *) it)->it);
}

static void
ldb_iter_prev(void *it)
{
	leveldb_iter_prev(((ldb_iter *) it)->it);
}

static const char *
ldb_iter_key(void *it, size_t *key_len)
{
	return leveldb_iter_key(((ldb_iter *) it)->it, key_len);
}

static const char *
ldb_iter_value(void *it, size_t *val_len)
{
	return leveldb_iter_value(((ldb_iter *) it)->it, val_len);
}

/*
 * Checks the iterator's status (an error ends the benchmark) and closes it.
 */
static void
ldb_iter_close(void *it)
{
	ldb_iter   *li = it;
	char	   *err = NULL;

	leveldb_iter_get_error(li->it, &err);
	ldb_check(err, "iterate");
	leveldb_iter_destroy(li->it);
	free(li);
}

/*
 * Manual compaction of the whole key range (the memtable first); returns
 * when it is done.
 */
static void
ldb_compact(void *db)
{
	ldb_db	   *l = db;

	leveldb_compact_range(l->db, NULL, 0, NULL, 0);
}

/*
 * SSTable counts from the "leveldb.num-files-at-level<N>" properties.
 */
static int
ldb_sstables(void *db, int *per_level)
{
	ldb_db	   *l = db;
	int			total = 0;
	int			level;

	for (level = 0; level < BENCH_MAX_LEVELS; level++)
	{
		char		prop[64];
		char	   *v;

		snprintf(prop, sizeof(prop), "leveldb.num-files-at-level%d", level);
		v = leveldb_property_value(l->db, prop);
		per_level[level] = v != NULL ? atoi(v) : 0;
		total += per_level[level];
		leveldb_free(v);
	}
	return total;
}

/*
 * LevelDB's own memory account ("leveldb.approximate-memory-usage":
 * memtables and block cache; open table files are not counted).
 */
static void
ldb_memory(void *db, char *buf, size_t buf_size)
{
	ldb_db	   *l = db;
	char	   *v = leveldb_property_value(l->db,
										   "leveldb.approximate-memory-usage");

	snprintf(buf, buf_size, "leveldb %d.%d: approximate-memory-usage %.1f MiB",
			 leveldb_major_version(), leveldb_minor_version(),
			 v != NULL ? strtoull(v, NULL, 10) / 1048576.0 : 0.0);
	leveldb_free(v);
}

const bench_driver bench_leveldb_driver = {
	.name = "leveldb",
	.multi_get_note = "loop of leveldb_get: LevelDB has no multi-get",
	.describe = ldb_describe,
	.open = ldb_open,
	.close = ldb_close,
	.put = ldb_put,
	.get = ldb_get,
	.free_value = ldb_free_value,
	.multi_get = ldb_multi_get,
	.iter_open = ldb_iter_open,
	.iter_seek = ldb_iter_seek,
	.iter_valid = ldb_iter_valid,
	.iter_next = ldb_iter_next,
	.iter_seek_last = ldb_iter_seek_last,
	.iter_prev = ldb_iter_prev,
	.iter_key = ldb_iter_key,
	.iter_value = ldb_iter_value,
	.iter_close = ldb_iter_close,
	.compact = ldb_compact,
	.sstables = ldb_sstables,
	.memory = ldb_memory,
};

#endif							/* BENCH_NO_LEVELDB */

/*
 * sstable.h
 *		Immutable sorted tables: the builder (flush and compaction output) and
 *		the reader (mmap, checksummed blocks, key filter gate).
 *
 * File layout (docs/format.md has the byte-level details):
 *
 *		[data block][checksum u32] ...
 *		[zero padding to a 64-byte boundary]
 *		[key filter][checksum u32]				(absent if bits_per_key = 0)
 *		[zero padding to a 64-byte boundary]
 *		[value filter][checksum u32]			(absent in format 1, and if no
 *		[zero padding to a 64-byte boundary]	 row had an indexed value)
 *		[block locator][checksum u32]			(vfilter.h; with the value filter)
 *		[index block][checksum u32]
 *		[properties][checksum u32]
 *		[footer: 64 bytes]
 *
 *		footer: [index off u64, size u32][key filter off u64, size u32]
 *				[value filter off u64, size u32][properties off u64, size u32]
 *				[format version u32][checksum of the preceding 52 bytes u32]
 *				[magic u64]
 *
 * A data block entry maps a user key to [tag varint][value bytes], tag =
 * sequence << 1 | is_tombstone.  A table holds at most one version of a key.
 * The index block (restart interval 1) maps the last key of every data block
 * to [offset varint][size varint].  Checksums are the low 32 bits of XXH3-64
 * of the block contents.
 */
#ifndef LSM_SSTABLE_H
#define LSM_SSTABLE_H

#include "bloom.h"
#include "storedir.h"
#include "iter.h"
#include "vfilter.h"

#define LSM_SST_MAGIC UINT64_C(0x4c534d5353544231)	/* "LSMSSTB1" */
#define LSM_SST_FORMAT 2		/* written; 1 (no value filter) is read */
#define LSM_SST_FOOTER 64

/* What a finished table is, for the manifest. */
typedef struct lsm_table_meta
{
	uint64_t	number;
	uint64_t	size;			/* file bytes */
	uint64_t	entries;
	uint64_t	deletions;
	uint64_t	min_seq;
	uint64_t	max_seq;
	uint64_t	filter_bytes;
	uint64_t	value_filter_bytes;
	uint64_t	global_seq;		/* 0, or the sequence every entry has (an
								 * ingested table: the manifest's, not the
								 * file's; see lsm_table_open) */
	uint8_t    *smallest;		/* malloc'd */
	size_t		smallest_len;
	uint8_t    *largest;		/* malloc'd */
	size_t		largest_len;
} lsm_table_meta;

void		lsm_table_meta_free(lsm_table_meta *m);

/* ---------- builder ---------- */

typedef struct lsm_table_builder lsm_table_builder;

/*
 * Creates file path (O_EXCL: LSM_EXISTS if it is there) and prepares to
 * write table number `number`.
 */
int			lsm_table_builder_open(const char *path, uint64_t number,
								   int block_bytes, int bits_per_key,
								   lsm_table_builder **out, lsm_err *e);

/*
 * Adds an entry.  Keys must come in increasing order: a key not greater
 * than the one before (the input of a compaction read from a damaged
 * table) is refused with LSM_CORRUPTION, and nothing is added.
 */
int			lsm_table_builder_add(lsm_table_builder *b, const void *key,
								  size_t klen, uint64_t seq, int del,
								  const void *val, size_t vlen, lsm_err *e);

/* Store-wide parameters of value filters (vfilter.h). */
typedef struct lsm_value_params
{
	uint32_t	bits;			/* m, a multiple of 512; 0 = no value filters */
	int			hashes;			/* k */
	uint64_t	unindexed;		/* bit f set: field f is not indexed */
} lsm_value_params;

/*
 * Makes the table carry a value filter and block locator over its rows'
 * indexed fields.  REQUIRES: no entry added yet.
 */
int			lsm_table_builder_set_values(lsm_table_builder *b,
										 const lsm_value_params *vp,
										 lsm_err *e);

/*
 * Makes lsm_table_builder_finish start the file's write-back instead of
 * waiting for it: the caller fsyncs the file (lsm_env_fsync_path) before
 * anything durable names it.  For tables that may be deleted unread by
 * others (a stage's), which then never wait on the disk.
 */
void		lsm_table_builder_defer_sync(lsm_table_builder *b);

/* File bytes written or buffered so far. */
uint64_t	lsm_table_builder_size(const lsm_table_builder *b);
uint64_t	lsm_table_builder_entries(const lsm_table_builder *b);

/*
 * Writes the filter, index, properties and footer, fsyncs (unless
 * deferred) and closes the file, fills *meta (caller frees with lsm_table_meta_free) and frees b.  On
 * failure the file is removed and b freed.  A table without entries is
 * refused (LSM_INVALID).
 */
int			lsm_table_builder_finish(lsm_table_builder *b, lsm_table_meta *meta,
									 lsm_err *e);

/* Closes and removes the partial file, frees b. */
void		lsm_table_builder_abandon(lsm_table_builder *b);

/* ---------- reader ---------- */

typedef struct lsm_table lsm_table;

/*
 * Opens table `number` in dir.  LSM_NOTFOUND if the file does not exist (a
 * reader racing a compaction retries).  Other failures (corruption, I/O)
 * still return LSM_OK with a table marked broken: every read of it then
 * fails with the saved error, so a damaged file never stops the store from
 * opening and never turns into a silent "not found".
 *
 * global_seq 0 reads every entry with the sequence stored in it.  Otherwise
 * every entry read through the table (gets, iterators, block scans) has
 * sequence global_seq instead: an ingested table (stage.c) was written
 * before its sequence was known, and the manifest gives it one.
 */
int			lsm_table_open(const char *dir, uint64_t number,
						   uint64_t global_seq, lsm_table **out, lsm_err *e);
void		lsm_table_ref(lsm_table *t);
void		lsm_table_unref(lsm_table *t);

/* LSM_OK, or the error that broke the table (message in e). */
int			lsm_table_status(const lsm_table *t, lsm_err *e);

/* Does the key filter possibly hold a key with hash h?  True if none. */
bool		lsm_table_may_contain(const lsm_table *t, uint64_t h);
bool		lsm_table_has_filter(const lsm_table *t);

/* Copies the key filter out (num_lines = 0 if none, or the table is broken). */
void		lsm_table_filter(const lsm_table *t, lsm_bloom *f);
size_t		lsm_table_filter_bytes(const lsm_table *t);

/*
 * The table's value filter.  LSM_OK with *f, whose num_lines is 0 if the
 * table holds no indexed value (nothing can match: skip it); LSM_NOTFOUND if
 * the table has no value filter for field (format 1, or a field left out):
 * it must be scanned (field < 0: for no field in particular).  The filter
 * is checksummed on first use.  Every value filter of a store has its m
 * bits and k hashes (vfilter.h): a filter of another shape is corruption
 * (LSM_CORRUPTION), so that whoever ORs or transposes filters of m bits
 * never reads past one.
 */
int			lsm_table_value_filter(lsm_table *t, int field, uint32_t m,
								   int k, lsm_bloom *f, lsm_err *e);

/*
 * Bytes of the value filter and the block locator as the table's footer and
 * properties give them (0 for none): what the manifest records for it as
 * value_filter_bytes.
 */
uint64_t	lsm_table_value_filter_bytes(const lsm_table *t);

/* The block locator; LSM_NOTFOUND if none.  Checksummed on first use. */
int			lsm_table_locator(lsm_table *t, lsm_locator *l, lsm_err *e);

/* Number of data blocks. */
uint32_t	lsm_table_nblocks(const lsm_table *t);

/*
 * Calls fn for every entry of data block i, in key order, with the entry's
 * key (valid during the call), sequence, kind and row (pointing into the
 * mapping).  If needle is not NULL, only the entries whose raw bytes hold
 * its nlen bytes are decoded and passed to fn, and if there is none the
 * block is skipped (*skipped = true): field bytes are stored whole, so no
 * other entry can have a field with that value.  A nonzero return from fn
 * stops the scan and is returned.
 */
typedef int (*lsm_entry_fn) (void *arg, const uint8_t *key, size_t klen,
							 uint64_t seq, int del, const uint8_t *row,
							 size_t rowlen);
int			lsm_table_block_scan(lsm_table *t, uint32_t i, const void *needle,
								 size_t nlen, lsm_entry_fn fn, void *arg,
								 bool *skipped, lsm_err *e);

typedef struct lsm_table_hit
{
	uint64_t	seq;
	int			del;
	const uint8_t *val;			/* points into the mapping */
	size_t		vlen;
} lsm_table_hit;

/*
 * Looks key up in the table (the filter is the caller's business).
 * LSM_OK with *hit, LSM_NOTFOUND, or an error (corruption).
 */
int			lsm_table_get(lsm_table *t, const void *key, size_t klen,
						  lsm_table_hit *hit, lsm_err *e);

/* An iterator over the table, holding a reference; NULL when out of memory. */
lsm_iiter  *lsm_table_iter(lsm_table *t, lsm_err *err);

/*
 * Checks every block checksum, the order of keys, the key range and that
 * the filter holds every key.  Fills entries counted.
 */
int			lsm_table_verify(lsm_table *t, const uint8_t *smallest,
							 size_t smallest_len, const uint8_t *largest,
							 size_t largest_len, uint64_t *entries, lsm_err *e);

uint64_t	lsm_table_number(const lsm_table *t);
size_t		lsm_table_size(const lsm_table *t);


#endif							/* LSM_SSTABLE_H */

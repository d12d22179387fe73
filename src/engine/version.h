/*
 * version.h
 *		Versions (the set of SSTables per level) and the manifest that makes
 *		one durable.
 *
 * A version is immutable once installed and reference counted: iterators
 * pin the version they started on, so the tables it names stay mapped even
 * after compaction removes their files.  Level 0 holds files that may
 * overlap, newest first (by max sequence); levels 1.. hold non-overlapping
 * files sorted by smallest key.
 *
 * The manifest is one file, MANIFEST, rewritten whole for every change:
 *
 *		[magic "LSMMANIF" u64][format u32][payload length u32][payload]
 *		[checksum of payload u32]
 *		payload: [manifest_seq][next_file][log_number][last_seq]
 *				 [value_filter_bits][value_filter_hashes][hierarchy_order]
 *				 [levels] { [nfiles] { [number][size][entries][deletions]
 *				 [min_seq][max_seq][filter_bytes][value_filter_bytes]
 *				 [smallest len, bytes][largest len, bytes] } }
 *				 [value_unindexed][hierarchy (hierarchy.h)] (all varints)
 *		format 1 had no value_filter_bytes, value_unindexed or hierarchy.
 *		format 3 adds [global_seq] after [value_filter_bytes] of every file
 *		(0: none; else the sequence of every entry of an ingested table).
 *		It is written only while some file has a global sequence, so a
 *		store that never ingested stays readable by format-2 readers.
 *
 * It is written to MANIFEST.tmp, fsynced, renamed over MANIFEST, and the
 * directory fsynced.  Readers open MANIFEST and keep the descriptor: a
 * later rename gives MANIFEST a new inode, which is how lsm_refresh notices
 * a change with one stat() call.
 */
#ifndef LSM_VERSION_H
#define LSM_VERSION_H

#include "file.h"
#include "lsm.h"

#define LSM_MANIFEST_MAGIC UINT64_C(0x46494e414d4d534c)	/* "LSMMANIF" */
#define LSM_MANIFEST_FORMAT 2		/* written; 1 (no hierarchy) is read */
#define LSM_MANIFEST_FORMAT_GSEQ 3	/* written when a file has a global
									 * sequence (ingested tables) */

struct lsm_hnode;

typedef struct lsm_version
{
	int			refs;
	uint64_t	manifest_seq;	/* bumped by every manifest write */
	uint64_t	next_file;		/* lowest unused file number */
	uint64_t	log_number;		/* the WAL that holds writes after last_seq */
	uint64_t	last_seq;		/* every write <= last_seq is in an SSTable */
	uint32_t	value_filter_bits;
	int			value_filter_hashes;
	int			hierarchy_order;
	uint64_t	value_unindexed;	/* bit f: field f not in value filters */
	struct lsm_hnode *hroot;	/* the value filter hierarchy, or NULL */
	int			nfiles[LSM_MAX_LEVELS];
	lsm_file  **files[LSM_MAX_LEVELS];
	uint64_t	level_bytes[LSM_MAX_LEVELS];	/* by lsm_version_sort */

	/*
	 * Search aids for levels >= 1, derived by lsm_version_sort: the length
	 * of the prefix common to all the level's largest keys, and for each
	 * file the 8 bytes of its largest key after that prefix as a big-endian
	 * integer (zero-padded), so a lookup binary-searches one small array of
	 * integers instead of chasing every file's key.  NULL if there was no
	 * memory (the search then compares keys).
	 */
	size_t		fence_skip[LSM_MAX_LEVELS];
	uint64_t   *fence[LSM_MAX_LEVELS];
	uint64_t   *sfence[LSM_MAX_LEVELS];	/* the same of smallest keys (0 if
										 * outside the common prefix) */

	/*
	 * Each file's key filter, copied out of its table by
	 * lsm_version_bind_filters once the tables are open, so that an absent
	 * key touches these arrays and one filter line, nothing else.
	 * num_lines = 0: no filter (or a broken table): read the table.
	 */
	lsm_bloom  *filters[LSM_MAX_LEVELS];
} lsm_version;

/* A new empty version with one reference (NULL when out of memory). */
lsm_version *lsm_version_new(void);
void		lsm_version_ref(lsm_version *v);
void		lsm_version_unref(lsm_version *v);

/*
 * A copy of v (sharing its files and hierarchy) with one reference, minus
 * the files whose
 * numbers are in drop[0..ndrop), plus add[0..nadd) at level add_level.
 * Levels are kept sorted.  NULL when out of memory.
 */
lsm_version *lsm_version_edit(const lsm_version *v, const uint64_t *drop,
							  int ndrop, lsm_file **add, int nadd,
							  int add_level);

/*
 * Sorts level 0 newest first and the other levels by smallest key, and
 * rebuilds the fences and the byte totals of the levels.
 */
void		lsm_version_sort(lsm_version *v);

/* Total file bytes of a level (as of the last lsm_version_sort). */
uint64_t	lsm_version_level_bytes(const lsm_version *v, int level);

/*
 * Index of the first file in level (>= 1) whose largest key >= key, or
 * nfiles if none.
 */
int			lsm_version_find_file(const lsm_version *v, int level,
								  const void *key, size_t klen);

/*
 * The file of level (>= 1) whose range holds key, or -1: the fenced search,
 * then the smallest-key check.
 */
int			lsm_version_locate(const lsm_version *v, int level, const void *key,
							   size_t klen);

/*
 * Copies every file's key filter into v->filters (after its tables were
 * opened).  LSM_NOMEM leaves v without them (lookups then ask the tables).
 */
int			lsm_version_bind_filters(lsm_version *v);

/*
 * Probes file i of level l of v for key with hash h: its filter (from the
 * version's compact array), then the table, counting both in *ctr.
 * LSM_OK with *hit, LSM_NOTFOUND, or an error.
 */
static inline int
lsm_version_probe(const lsm_version *v, int l, int i, const void *key,
				  size_t klen, uint64_t h, lsm_table_hit *hit, lsm_stats *ctr,
				  lsm_err *e)
{
	const lsm_bloom *f = &v->filters[l][i];
	int			rc;

	ctr->filter_probes++;
	if (f->num_lines > 0 && !lsm_bloom_may_match(f, h))
	{
		ctr->filter_negatives++;
		return LSM_NOTFOUND;
	}
	ctr->sstable_reads++;
	rc = lsm_table_get(v->files[l][i]->table, key, klen, hit, e);
	if (rc == LSM_NOTFOUND)
		ctr->false_positives++;
	return rc;
}

/*
 * Looks key (hash h, computed once by the caller) up in the tables of v,
 * counting in *ctr: LSM_OK with *hit (the newest version there),
 * LSM_NOTFOUND, or an error.
 */
int			lsm_version_get(const lsm_version *v, const void *key, size_t klen,
							uint64_t h, lsm_table_hit *hit, lsm_stats *ctr,
							lsm_err *e);

/*
 * Does v name file number of kind (a table of a level, its log or that
 * log's shared memtable, a node of its hierarchy)?
 */
bool		lsm_version_names(const lsm_version *v, lsm_fkind kind,
							  uint64_t number);

/*
 * Writes v as the new MANIFEST of dir (tmp file, fsync, rename, dir fsync).
 * *switched (if not NULL) tells whether the rename happened, even when a
 * later step failed.
 */
int			lsm_manifest_write(const char *dir, const lsm_version *v,
							   bool *switched, lsm_err *e);

/*
 * Reads a manifest from fd (name for messages) into a new version whose
 * files have no tables opened yet.
 */
int			lsm_manifest_read(int fd, const char *name, lsm_version **out,
							  lsm_err *e);

/* Appends v, as a manifest file holds it, to b.  LSM_NOMEM or LSM_OK. */
int			lsm_manifest_encode(const lsm_version *v, lsm_buf *b);

/* lsm_manifest_read of the size bytes at buf. */
int			lsm_manifest_decode(const uint8_t *buf, size_t size,
								const char *name, lsm_version **out,
								lsm_err *e);

#endif							/* LSM_VERSION_H */

/*
 * wal.h
 *		The write-ahead log: one checksummed record per committed batch.
 *
 *		record:  [checksum u32][length u32][type u8][payload: length bytes]
 *		checksum: low 32 bits of XXH3-64 over length, type and payload
 *		type 1 (batch) payload: [first sequence u64][count u32]
 *				 { [kind u8][key len varint][key] ([value len varint][value])
 *				 if kind is put } * count
 *		type 2 (a prepared batch committed): a type 1 payload, then
 *				 [owner u64] (prepared.c)
 *		type 3 (a batch prepared): [first sequence u64][1 u32][owner u64]
 *				 [a type 1 payload whose first sequence is 1]: one sequence
 *		type 4 (a prepared write rolled back): [first sequence u64][1 u32]
 *				 [owner u64]: one sequence
 *		type 5 (tables prepared): [first sequence u64][1 u32][owner u64]
 *				 [flags u32: 1 = replace the store][runs u32][tables u32]
 *				 { [number u64][run u32][size u64][entries u64]
 *				 [deletions u64][filter bytes u64][value filter bytes u64]
 *				 [smallest len u32][smallest][largest len u32][largest] }
 *				 * tables: one sequence (prepared.c)
 *
 * The file is preallocated: a writer appends at the end of the records,
 * into zeros written ahead of it (lsm_wal_prealloc), so that the fdatasync
 * of a commit does not also write the file's new size.  So the records end
 * where the zeros begin, not at the file's end; a zero header ends them.
 *
 * Recovery replays complete records and stops at the first torn or corrupt
 * one, or at one whose first sequence does not continue the previous record
 * (stale bytes past a truncation that did not reach the disk).  Everything
 * from there on is the log's invalid tail: a writer cuts it before it
 * appends (db.c, invariant 7) and reports what it cut.  A bad record
 * followed by a good one that continues the log cannot come from a torn
 * append and is reported as corruption instead of being silently dropped.
 * The search for such a record is linear in the bytes after the bad one,
 * whatever they hold (wal.c).
 */
#ifndef LSM_WAL_H
#define LSM_WAL_H

#include "storedir.h"
#include "util.h"

#define LSM_WAL_HEADER 9
#define LSM_WAL_BATCH 1
#define LSM_WAL_BATCH_OF 2		/* a batch, then the owner it commits */
#define LSM_WAL_PREPARE 3		/* a batch prepared by an owner */
#define LSM_WAL_ROLLBACK 4		/* an owner's prepared write discarded */
#define LSM_WAL_PREPARE_TABLES 5	/* tables prepared by an owner */
#define LSM_WAL_OWNER 8			/* bytes of an owner */
#define LSM_BATCH_HEADER 12		/* first sequence u64, count u32 */
#define LSM_WAL_TABLES_HEAD 12	/* flags, runs and tables of a type 5 */

/*
 * Fills in the record header of rec (LSM_WAL_HEADER bytes reserved at its
 * start, followed by the payload), of type (LSM_WAL_*), and writes it at off, the end of the
 * records: copied into map, a writable mapping of the log that covers it
 * (lsm_env_map_write), or with one pwrite if map is NULL.  LSM_INVALID if
 * the payload is too large for the 32-bit length (nothing is written);
 * else the write's result (part of the record may then be in the file:
 * the caller cuts it off).
 */
int			lsm_wal_append(int fd, uint8_t *map, const char *name,
						   uint64_t off, int type, uint8_t *rec, size_t len,
						   lsm_err *e);

/* Writes zeros over [from, to) of the log: room for records to come. */
int			lsm_wal_prealloc(int fd, const char *name, uint64_t from,
							 uint64_t to, lsm_err *e);

/* What lsm_wal_probe finds at an offset. */
typedef enum lsm_wal_probe_result
{
	LSM_WAL_END,				/* zeros, or the end of the file */
	LSM_WAL_MORE,				/* bytes that are not zero: a record, or a
								 * tail */
	LSM_WAL_SHORT				/* the file ends before the offset */
} lsm_wal_probe_result;

/*
 * Looks at the record header's worth of bytes at off (one pread): do
 * records end there?  A torn append leaves a prefix of its record, whose
 * header is not zero (its length and type are not).  LSM_OK or the read's
 * error.
 */
int			lsm_wal_probe(int fd, const char *name, uint64_t off,
						  lsm_wal_probe_result *out, lsm_err *e);

/*
 * Called for each complete record with its type and payload; a nonzero
 * return stops replay.
 */
typedef int (*lsm_wal_apply_fn) (void *arg, int type, const uint8_t *payload,
								 size_t n, lsm_err *e);

typedef struct lsm_wal_replay_result
{
	uint64_t	end_off;		/* offset after the last good record */
	uint64_t	content_end;	/* offset after the last byte that is not
								 * zero (or end_off): bytes between are a
								 * tail */
	uint64_t	last_seq;		/* last sequence applied (or the input) */
	int			records;
} lsm_wal_replay_result;

/*
 * Replays records from off onwards; expect_seq is the sequence the next
 * record must start with (0 = accept any).  A torn tail leaves end_off <
 * content_end and is not an error.  LSM_CORRUPTION if a bad record is followed
 * by a good one that continues the log; errors from apply are returned as
 * they are (apply sees only whole, checksummed records, but must check
 * their payload).  The file is read into one allocation of its size past
 * off.
 */
int			lsm_wal_replay(int fd, const char *name, uint64_t off,
						   uint64_t expect_seq, lsm_wal_apply_fn apply,
						   void *arg, lsm_wal_replay_result *res, lsm_err *e);

#endif							/* LSM_WAL_H */

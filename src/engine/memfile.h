/*
 * memfile.h
 *		The shared memtable of a log: NNNNNN.mem beside NNNNNN.log, mapped
 *		MAP_SHARED by every handle of the store.
 *
 * The file is a cache of the log (docs/architecture.md, "The shared
 * memtable"): a header page, then a memtable region (memtable.h) that holds
 * the log's records from its start up to applied_off.  It is never synced
 * and never needed for recovery; db.c rebuilds it from the log whenever it
 * cannot be trusted.  Only the holder of the store's write lock writes it;
 * other handles read it without locks.
 */
#ifndef LSM_MEMFILE_H
#define LSM_MEMFILE_H

#include "memtable.h"

#define LSM_MEMFILE_MAGIC UINT64_C(0x4c534d4d454d5431)	/* "LSMMEMT1" */
#define LSM_MEMFILE_HEADER 4096

typedef struct lsm_memfile_header
{
	uint64_t	magic;			/* LSM_MEMFILE_MAGIC once formatted */
	uint64_t	size;			/* of the file */
	uint64_t	boot;			/* boot of the machine it was built on */
	uint64_t	log_number;		/* the log it caches ... */
	uint64_t	log_dev;		/* ... as this very file */
	uint64_t	log_ino;

	/*
	 * Published by the writer with release stores: the log's records up to
	 * applied_off (sequences up to applied_seq) are in the memtable.
	 * apply_to is the end of the record being applied, equal to
	 * applied_off when no apply is under way: a writer that died applying
	 * leaves them apart, and the file is then rebuilt.
	 */
	uint64_t	applied_seq;
	uint64_t	applied_off;
	uint64_t	apply_to;

	uint64_t	reserved;		/* 0 */
	uint64_t	stale;			/* replaced: map the store's file again */
} lsm_memfile_header;

/*
 * Creates the file path (O_EXCL) of size bytes, blocks allocated, maps it
 * and formats an empty memtable in it; *hdr gets the header, with magic,
 * size and boot set and everything else zero, for the caller to fill in.
 * The memtable owns the mapping: its last unref unmaps it.
 */
int			lsm_memfile_create(const char *path, size_t size,
							   lsm_memtable **mt, lsm_memfile_header **hdr,
							   lsm_err *e);

/*
 * Maps the existing file path (read-write, or read-only) and attaches to
 * its memtable.  LSM_NOTFOUND if there is no such file or it is not a
 * formatted memtable file of this layout (a creation that died, a file
 * from another version): the caller treats both as missing.
 */
int			lsm_memfile_open(const char *path, bool writable,
							 lsm_memtable **mt, lsm_memfile_header **hdr,
							 lsm_err *e);

/* The boot id of the machine (Linux's boot_id, hashed); 0 if unknown. */
uint64_t	lsm_boot_id(void);

static inline uint64_t
lsm_memfile_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
lsm_memfile_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#endif							/* LSM_MEMFILE_H */

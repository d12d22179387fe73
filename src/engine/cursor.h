/*
 * cursor.h
 *		The public iterator (iter.c), above the store core: how the layers
 *		above it (stages) and its own shared-view readers make one.
 */
#ifndef LSM_CURSOR_H
#define LSM_CURSOR_H

#include "db.h"

/*
 * A public iterator over the internal iterator build(arg, err) returns
 * (NULL: out of memory), which reports its errors in err, the iterator's
 * own record; for stages, which set deletes to show tombstones rather than
 * skip them.  LSM_NOMEM or LSM_OK with *out.
 */
int			lsm_iter_build(lsm_db *db, bool deletes,
						   lsm_iiter *(*build) (void *arg, lsm_err *err),
						   void *arg, lsm_iter **out);

/*
 * A public iterator of db over version v and memtable mem (NULL: none) at
 * snapshot snap, holding a reference on each (lsm_iter_open: the handle's
 * current ones).  LSM_NOMEM or LSM_OK with *out.
 */
int			lsm_iter_open_version(lsm_db *db, lsm_version *v,
								  lsm_memtable *mem, uint64_t snap,
								  lsm_iter **out);

/*
 * A value search of db over v and mem at snap, as lsm_iter_open_version's
 * iterator (lsm_value_search_with: the handle's current ones), reading
 * the units claim hands it (NULL: all).  Positioned on its first row.
 */
int			lsm_iter_search_version(lsm_db *db, lsm_version *v,
									lsm_memtable *mem, uint64_t snap,
									int field, const void *val, size_t vlen,
									int strategy, lsm_claim_fn claim,
									void *arg, lsm_iter **out);

#endif							/* LSM_CURSOR_H */

/*
 * compaction.h
 *		Leveled compaction (compaction.c), above the store core: what the
 *		layers above it call.
 */
#ifndef LSM_COMPACTION_H
#define LSM_COMPACTION_H

#include "db.h"

/* Compaction (compaction.c): pick and run until nothing is over target. */
int			lsm_db_compact(lsm_db *db, bool wait, lsm_err *e);

/*
 * The automatic compaction a flush or an ingest made due (compaction.c):
 * the store core's writes only note it (compact_due), and every caller of
 * lsm_db_write or lsm_db_ingest above compaction calls this once the call
 * returned; nothing under lsm_lock (lsm_unlock calls it then).  A failure
 * is recorded (lsm_db_background_failed), never returned: the write
 * succeeded.
 */
void		lsm_db_compact_if_due(lsm_db *db);

#endif							/* LSM_COMPACTION_H */

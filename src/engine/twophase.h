/*
 * twophase.h
 *		Two-phase commit (twophase.c): what stages (stage.c) call.
 */
#ifndef LSM_TWOPHASE_H
#define LSM_TWOPHASE_H

#include "db.h"

/*
 * Prepares the tables of a stage (stage.c) for owner (twophase.c): under the write lock
 * (taken unless lsm_lock holds it), moves table i (stage_dir/<number>.sst,
 * of run run_of[i] of nruns) into the store under a fresh number, makes the
 * names durable and appends a record of type 5 listing them, with replace
 * (a truncating stage; n may be 0), durable as flags say (LSM_WRITE_*,
 * LSM_WRITE_DEFER included).  lsm_resolve decides them.  LSM_EXISTS if
 * owner has an undecided prepared write already.  On a failure before the
 * record is written the tables are moved back.
 */
int			lsm_db_prepare_tables(lsm_db *db, const char *stage_dir,
								  const lsm_table_meta *tables,
								  const int *run_of, int n, int nruns,
								  bool replace, uint64_t owner, int flags,
								  lsm_err *e);

#endif							/* LSM_TWOPHASE_H */

/*
 * prepared.h
 *		What undecided prepared writes mean to the store core (prepared.c);
 *		the operations that prepare and decide are in twophase.c.
 */
#ifndef LSM_PREPARED_H
#define LSM_PREPARED_H

#include "db.h"

/*
 * Prepared writes (prepared.c): lsm_prepared_close frees the handle's key
 * cache; lsm_prepared_carry writes the undecided prepared writes of
 * memtable from, but owner skip's, into the log logfd (named name) from
 * offset 0, as records at the sequences after seq, and into memtable to,
 * and syncs the log; *off and *used get the bytes and sequences it took.
 * REQUIRES: the write lock (a flush, before the switch that drops from's
 * log).  lsm_prepared_tables_check checks the list of tables of a type 5
 * record (LSM_CORRUPTION if it is malformed).  lsm_prepared_names tells
 * whether an undecided prepared write of the handle's memtable names table
 * number: a file that no manifest names but that stays.
 */
int			lsm_prepared_tables_check(const uint8_t *list, size_t len,
									  lsm_err *e);

bool		lsm_prepared_names(lsm_db *db, uint64_t number);
void		lsm_prepared_close(lsm_db *db);
int			lsm_prepared_carry(lsm_memtable *from, lsm_memtable *to, int logfd,
							   const char *name, uint64_t seq, uint64_t skip,
							   uint64_t *off, uint64_t *used, lsm_err *e);

/*
 * The list of tables of a type 5 record: lsm_prepared_tables_encode
 * appends the list of files[0..n) (of runs run_of[], nruns, replace) to b
 * (LSM_NOMEM or LSM_OK); lsm_prepared_tables_decode makes a copy of list,
 * decoded: *metas (keys pointing into *copy) and *run_of, which the caller
 * frees, the three.
 */
int			lsm_prepared_tables_encode(lsm_buf *b, lsm_file *const *files,
									   const int *run_of, int n, int nruns,
									   bool replace);
int			lsm_prepared_tables_decode(const uint8_t *list, size_t len,
									   uint8_t **copy, lsm_table_meta **metas,
									   int **run_of, bool *replace,
									   int *nruns, int *n, lsm_err *e);

#endif							/* LSM_PREPARED_H */

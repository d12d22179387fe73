/*-------------------------------------------------------------------------
 *
 * fdw.c
 *		  Entry points of lsm_fdw: module magic, _PG_init and the handler.
 *
 * The handler returns the FdwRoutine of the wrapper, whose callbacks live
 * in scan.c (planning, scans, EXPLAIN) and modify.c (INSERT, UPDATE,
 * DELETE, COPY FROM, TRUNCATE).  What DDL does to the tables' stores is in
 * ddl.c.
 *
 * src/fdw/fdw.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "fmgr.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "utils/lsyscache.h"

#include "lsm_fdw.h"

PG_MODULE_MAGIC;

/* PostgreSQL 15's fmgr.h does not declare it */
PGDLLEXPORT void _PG_init(void);

PG_FUNCTION_INFO_V1(lsm_fdw_handler);

/*
 * Module load: the per-module initialisations (store cache, transaction
 * callbacks, settings, DDL hooks).  It runs in compaction workers too
 * (compactor.c), which the postmaster starts by loading this library.  LsmFdwInitDdl comes after
 * LsmFdwInitXact: transaction callbacks run newest first, and a store's
 * metadata must be written before its rows at pre-commit (ddl.c).
 */
void
_PG_init(void)
{
	LsmFdwInitTables();
	LsmFdwInitStores();
	LsmFdwInitXact();
	LsmFdwInitModify();
	LsmFdwDefinePlannerGUCs();
	LsmFdwInitCompaction();
	LsmFdwInitDdl();
}

/*
 * Foreign-data wrapper handler: returns the FdwRoutine of lsm_fdw, a new
 * node in the current memory context.
 */
Datum
lsm_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	LsmFdwSetScanRoutines(routine);
	LsmFdwSetModifyRoutines(routine);
	LsmFdwSetAnalyzeRoutines(routine);
	PG_RETURN_POINTER(routine);
}

/*
 * Returns whether server serverid belongs to a wrapper whose handler is
 * lsm_fdw's (whatever the wrapper is called).
 */
bool
LsmFdwIsOurServer(Oid serverid)
{
	ForeignServer *server = GetForeignServerExtended(serverid,
													 FSV_MISSING_OK);
	ForeignDataWrapper *fdw;
	FdwRoutine *routine;
	FdwRoutine	ours;

	if (server == NULL)
		return false;
	fdw = GetForeignDataWrapper(server->fdwid);
	if (!OidIsValid(fdw->fdwhandler))
		return false;
	routine = GetFdwRoutine(fdw->fdwhandler);
	memset(&ours, 0, sizeof(ours));
	LsmFdwSetScanRoutines(&ours);
	return routine->GetForeignRelSize == ours.GetForeignRelSize;
}

/*
 * Returns whether relid is a foreign table of a wrapper whose handler is
 * lsm_fdw's (whatever the wrapper is called).
 */
bool
LsmFdwIsOurTable(Oid relid)
{
	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	return LsmFdwIsOurServer(GetForeignTable(relid)->serverid);
}

/*-------------------------------------------------------------------------
 *
 * fdw.c
 *		  Entry points of lsm_fdw: module magic, _PG_init and the handler.
 *
 * The handler returns the FdwRoutine of the wrapper.  This version is a
 * stand-in: foreign tables can be created (their options are validated by
 * option.c) but not read or written.  The scan callbacks raise
 * FEATURE_NOT_SUPPORTED, GetForeignRelSize first, so a query on an lsm_fdw
 * table fails while it is planned; the modification callbacks are absent, so
 * PostgreSQL itself refuses INSERT, UPDATE and DELETE.
 *
 * src/fdw/fdw.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "foreign/fdwapi.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "lsm_fdw.h"

PG_MODULE_MAGIC;

/* PostgreSQL 15's fmgr.h does not declare it */
PGDLLEXPORT void _PG_init(void);

PG_FUNCTION_INFO_V1(lsm_fdw_handler);

static void lsmfdwGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
									Oid foreigntableid);
static void lsmfdwGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
								  Oid foreigntableid);
static ForeignScan *lsmfdwGetForeignPlan(PlannerInfo *root,
										 RelOptInfo *baserel,
										 Oid foreigntableid,
										 ForeignPath *best_path,
										 List *tlist,
										 List *scan_clauses,
										 Plan *outer_plan);
static void lsmfdwBeginForeignScan(ForeignScanState *node, int eflags);
static TupleTableSlot *lsmfdwIterateForeignScan(ForeignScanState *node);
static void lsmfdwReScanForeignScan(ForeignScanState *node);
static void lsmfdwEndForeignScan(ForeignScanState *node);
static void report_scan_not_supported(void) pg_attribute_noreturn();

/*
 * Module load.  Only calls the per-module init functions (GUCs, callbacks),
 * of which there are none yet.
 */
void
_PG_init(void)
{
}

/*
 * Foreign-data wrapper handler: returns the FdwRoutine of lsm_fdw, a new
 * node in the current memory context.
 */
Datum
lsm_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = lsmfdwGetForeignRelSize;
	routine->GetForeignPaths = lsmfdwGetForeignPaths;
	routine->GetForeignPlan = lsmfdwGetForeignPlan;
	routine->BeginForeignScan = lsmfdwBeginForeignScan;
	routine->IterateForeignScan = lsmfdwIterateForeignScan;
	routine->ReScanForeignScan = lsmfdwReScanForeignScan;
	routine->EndForeignScan = lsmfdwEndForeignScan;

	PG_RETURN_POINTER(routine);
}

/*
 * Raises the error of every scan entry point: scans are not implemented in
 * this version.  Does not return.
 */
static void
report_scan_not_supported(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("lsm_fdw cannot scan foreign tables yet"),
			 errhint("This version of lsm_fdw validates server, table and column options but does not read or write stores.")));
}

/*
 * The first callback the planner calls for an lsm_fdw table: fails, so no
 * plan is made.
 */
static void
lsmfdwGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
						Oid foreigntableid)
{
	report_scan_not_supported();
}

/* Not reached (GetForeignRelSize fails); fails likewise. */
static void
lsmfdwGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
					  Oid foreigntableid)
{
	report_scan_not_supported();
}

/* Not reached (GetForeignRelSize fails); fails likewise. */
static ForeignScan *
lsmfdwGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
					 Oid foreigntableid, ForeignPath *best_path,
					 List *tlist, List *scan_clauses, Plan *outer_plan)
{
	report_scan_not_supported();
}

/* Not reached (no plan is ever made); fails likewise. */
static void
lsmfdwBeginForeignScan(ForeignScanState *node, int eflags)
{
	report_scan_not_supported();
}

/* Not reached (no plan is ever made); fails likewise. */
static TupleTableSlot *
lsmfdwIterateForeignScan(ForeignScanState *node)
{
	report_scan_not_supported();
}

/* Not reached (no plan is ever made); fails likewise. */
static void
lsmfdwReScanForeignScan(ForeignScanState *node)
{
	report_scan_not_supported();
}

/* Nothing to release: no scan ever began. */
static void
lsmfdwEndForeignScan(ForeignScanState *node)
{
}

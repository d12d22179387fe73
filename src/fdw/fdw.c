/*-------------------------------------------------------------------------
 *
 * fdw.c
 *		  Entry points of lsm_fdw: module magic, _PG_init, the handler, and
 *		  the removal of a dropped table's store.
 *
 * The handler returns the FdwRoutine of the wrapper, whose callbacks live
 * in scan.c (planning, scans, EXPLAIN) and modify.c (INSERT, UPDATE,
 * DELETE, COPY FROM, TRUNCATE).
 *
 * A table's store at the default location ($PGDATA/lsm_fdw/...) belongs to
 * the table: DROP FOREIGN TABLE (and any DROP that cascades to it) removes
 * it when the dropping transaction commits, never on rollback.  The drop is
 * seen by an object access hook (OAT_DROP comes while the catalogs still
 * describe the table, so its server and options can be read) which
 * schedules the removal in xact.c.  The hook exists only in backends that
 * have loaded this library, and a new session can drop a table without
 * loading it; so the extension also owns an event trigger on
 * ddl_command_start whose function, lsm_fdw_ddl_command_start, does nothing
 * but make sure the library (and with it the hook) is loaded before any DDL
 * runs.  Stores under a server's explicit directory are never removed.
 *
 * src/fdw/fdw.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "commands/event_trigger.h"
#include "fmgr.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "utils/lsyscache.h"

#include "lsm_fdw.h"

PG_MODULE_MAGIC;

/* PostgreSQL 15's fmgr.h does not declare it */
PGDLLEXPORT void _PG_init(void);

PG_FUNCTION_INFO_V1(lsm_fdw_handler);
PG_FUNCTION_INFO_V1(lsm_fdw_ddl_command_start);

static object_access_hook_type prev_object_access_hook = NULL;

static void object_access(ObjectAccessType access, Oid classId,
						  Oid objectId, int subId, void *arg);

/*
 * Module load: the per-module initialisations (store cache, transaction
 * callbacks) and the object access hook.
 */
void
_PG_init(void)
{
	LsmFdwInitStores();
	LsmFdwInitXact();
	LsmFdwDefinePlannerGUCs();
	prev_object_access_hook = object_access_hook;
	object_access_hook = object_access;
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
 * Event trigger function on ddl_command_start: does nothing; calling it
 * loads the library, which installs the object access hook before the DDL
 * command drops anything (see the file header).
 */
Datum
lsm_fdw_ddl_command_start(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"lsm_fdw_ddl_command_start\" must be called as an event trigger")));
	PG_RETURN_VOID();
}

/*
 * Returns whether relid is a foreign table of a wrapper whose handler is
 * lsm_fdw's (whatever the wrapper is called).
 */
bool
LsmFdwIsOurTable(Oid relid)
{
	ForeignTable *table;
	ForeignServer *server;
	ForeignDataWrapper *fdw;
	FdwRoutine *routine;
	FdwRoutine	ours;

	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	table = GetForeignTable(relid);
	server = GetForeignServer(table->serverid);
	fdw = GetForeignDataWrapper(server->fdwid);
	if (!OidIsValid(fdw->fdwhandler))
		return false;
	routine = GetFdwRoutine(fdw->fdwhandler);
	memset(&ours, 0, sizeof(ours));
	LsmFdwSetScanRoutines(&ours);
	return routine->GetForeignRelSize == ours.GetForeignRelSize;
}

/*
 * Object access hook: when one of our foreign tables with a store at the
 * default location is dropped, schedules the store's removal for when the
 * current subtransaction (and so the transaction) commits.
 */
static void
object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
			  void *arg)
{
	if (prev_object_access_hook != NULL)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		LsmFdwIsOurTable(objectId))
	{
		bool		is_default;
		char	   *path = LsmFdwStorePath(objectId, &is_default);

		if (is_default)
			LsmFdwXactRemoveDirLater(objectId, path,
									 GetCurrentSubTransactionId(), true);
	}
}

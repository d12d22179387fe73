/*-------------------------------------------------------------------------
 *
 * modify.c
 *		  INSERT, UPDATE, DELETE, COPY FROM and TRUNCATE on lsm_fdw tables.
 *
 * The key column is the row identity: AddForeignUpdateTargets asks the scan
 * under an UPDATE or DELETE for it as a junk column, from which
 * ExecForeignUpdate and ExecForeignDelete know the row to replace.  (For
 * UPDATE the planner also fetches the whole row, so the slot we are given
 * holds every column of the new row.)  The first change of a row records
 * the version of the row the statement read, which the commit checks
 * (xact.c); while an UPDATE or DELETE runs, its store's handle is not
 * refreshed, so that this version is the one its scan saw.
 *
 * A row's ctid is its key where the key can be one (codec.c): RETURNING
 * ctid shows it, and fails for a row that has none.
 *
 * Writes go to the transaction's pending writes (xact.c), tagged with the
 * command id of the statement, and reach the store at commit.  Past its
 * first lsm_fdw.bulk_insert_rows rows, an INSERT loads as COPY FROM does:
 * the store's stage is opened, and the rows that can go to it at once (see
 * LsmFdwPendingWrite) do.  The key is
 * unique: an INSERT fails with unique_violation if the key exists, in the
 * newest pending version or, if the transaction has not written it, in the
 * store; INSERT ... ON CONFLICT DO NOTHING skips the row instead, and ON
 * CONFLICT (key) DO UPDATE updates the existing row (upsert; the planner
 * is told that the key is the arbiter by accept_key_arbiters).  An
 * UPDATE that moves a row to a key another row still holds is checked at
 * the end of the statement, as the SQL standard has it: the row waits
 * until the statement moves or deletes the other row, so that "SET key =
 * key + 1" works whatever order the rows come in, and the statement fails
 * only if the key is still taken when it ends (a heap table's unique index
 * checks each row at once).  An UPDATE or DELETE of a row that the
 * same command already updated or deleted (a join producing it twice) does
 * nothing, as for a heap table.
 *
 * A foreign table that is a partition keeps to its bounds, which PostgreSQL
 * does not check for foreign tables: a row inserted into it directly must
 * lie within them, as for a heap partition, and an UPDATE that would move
 * a row out of it fails (PostgreSQL moves rows between partitions only
 * out of tables it checks itself); otherwise the row would sit in the wrong
 * partition, where pruning and ordered appends do not look for it.
 *
 * TRUNCATE deletes every key the transaction sees, as pending deletes, so
 * it is transactional and can be rolled back like the other writes.
 *
 * src/fdw/modify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/optimizer.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "lsm_fdw.h"

/* Executor state of a modification: ResultRelInfo.ri_FdwState */
typedef struct LsmFdwModifyState
{
	LsmFdwTable *table;
	LsmFdwStore *store;			/* pinned until released */
	bool		do_nothing;		/* ON CONFLICT DO NOTHING */
	bool		do_update;		/* ON CONFLICT DO UPDATE (upsert) */
	ModifyTableState *mtstate;	/* the node (NULL for COPY FROM): its
								 * instrumentation counts conflicts, its
								 * expression context evaluates DO UPDATE */
	uint64		inserted;		/* rows this statement inserted */
	bool		returns_ctid;	/* RETURNING reads ctid */
	bool		store_empty;	/* the store held no row when the
								 * statement began (see begin_modify) */
	bool		changes_rows;	/* UPDATE or DELETE: counted in
								 * store->modifying */
	AttrNumber	key_junk[LSMFDW_MAX_KEYS];	/* the old key's columns in the
											 * plan's output, in key order */
	HTAB	   *waiting;		/* rows an UPDATE moved to keys other rows
								 * still held (WaitingRow), or NULL */
	MemoryContext cxt;			/* the statement's (es_query_cxt) */
	MemoryContext row_cxt;		/* reset for every row */
	TupleTableSlot **inserted_slots;	/* a batch's inserted rows (cxt) */
	int			inserted_cap;
	MemoryContextCallback cleanup;	/* unpins the store on error */
	bool		released;
} LsmFdwModifyState;

/* A row waiting for its new key (LsmFdwModifyState.waiting) */
typedef struct WaitingRow
{
	LsmFdwKeyRef key;			/* hash key (must be first) */
	char	   *row;			/* the encoded row */
	size_t		rowlen;
	CommandId	cid;
} WaitingRow;

/*
 * lsm_fdw.bulk_insert_rows: the rows of one INSERT statement after which
 * the rest are loaded as COPY FROM loads (0: never).
 */
static int	bulk_insert_rows = 1000;

/*
 * lsm_fdw.insert_batch_size: rows the executor gathers per batch insert.
 * One by one by default: to gather a batch the executor copies each row
 * (and pins its source buffer), which costs more than the batch saves a
 * wrapper that writes in-process (docs/benchmarks-sql.md, session 22).
 */
static int	insert_batch_size = 1;

/* Items of the fdw_private list made by PlanForeignModify */
enum LsmFdwModifyPrivate
{
	LSMFDW_MODIFY_DO_NOTHING,	/* Integer: ON CONFLICT DO NOTHING */
	LSMFDW_MODIFY_RETURNS_CTID	/* Integer: RETURNING reads ctid */
};

static void lsmfdwAddForeignUpdateTargets(PlannerInfo *root,
										  Index rtindex,
										  RangeTblEntry *target_rte,
										  Relation target_relation);
static List *lsmfdwPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
									 Index resultRelation,
									 int subplan_index);
static void lsmfdwBeginForeignModify(ModifyTableState *mtstate,
									 ResultRelInfo *rinfo,
									 List *fdw_private,
									 int subplan_index,
									 int eflags);
static TupleTableSlot *lsmfdwExecForeignInsert(EState *estate,
											   ResultRelInfo *rinfo,
											   TupleTableSlot *slot,
											   TupleTableSlot *planSlot);
static TupleTableSlot *lsmfdwExecForeignUpdate(EState *estate,
											   ResultRelInfo *rinfo,
											   TupleTableSlot *slot,
											   TupleTableSlot *planSlot);
static TupleTableSlot *lsmfdwExecForeignDelete(EState *estate,
											   ResultRelInfo *rinfo,
											   TupleTableSlot *slot,
											   TupleTableSlot *planSlot);
static int	lsmfdwGetForeignModifyBatchSize(ResultRelInfo *rinfo);
static TupleTableSlot **lsmfdwExecForeignBatchInsert(EState *estate,
													 ResultRelInfo *rinfo,
													 TupleTableSlot **slots,
													 TupleTableSlot **planSlots,
													 int *numSlots);
static void lsmfdwEndForeignModify(EState *estate, ResultRelInfo *rinfo);
static void lsmfdwBeginForeignInsert(ModifyTableState *mtstate,
									 ResultRelInfo *rinfo);
static void lsmfdwEndForeignInsert(EState *estate, ResultRelInfo *rinfo);
static void lsmfdwExecForeignTruncate(List *rels, DropBehavior behavior,
									  bool restart_seqs);

static char *row_identity_name(Relation rel, AttrNumber attnum);
static LsmFdwModifyState *begin_modify(EState *estate, Relation rel,
									   bool do_nothing, bool refresh);
static void release_modify(void *arg);
static void wait_for_key(LsmFdwModifyState *st, StringInfo key,
						 StringInfo row, CommandId cid);
static void key_freed(LsmFdwModifyState *st, StringInfo key);
static void place_waiting_rows(LsmFdwModifyState *st);
static void old_key(LsmFdwModifyState *st, TupleTableSlot *planSlot,
					StringInfo buf);
static void set_ctid(LsmFdwModifyState *st, TupleTableSlot *slot,
					 StringInfo key);
static void check_partition(ResultRelInfo *rinfo, TupleTableSlot *slot,
							EState *estate, bool update);
static bool modified_by_command(LsmFdwModifyState *st, StringInfo key,
								CommandId cid);
static void write_update(LsmFdwModifyState *st, StringInfo oldkey,
						 StringInfo key, StringInfo row, CommandId cid);
static TupleTableSlot *upsert(LsmFdwModifyState *st, EState *estate,
							  ResultRelInfo *rinfo, TupleTableSlot *proposed,
							  StringInfo key, StringInfo row);
static void accept_key_arbiters(Query *q);
static void upper_paths_hook(PlannerInfo *root, UpperRelationKind stage,
							 RelOptInfo *input_rel, RelOptInfo *output_rel,
							 void *extra);
static void report_duplicate(const LsmFdwTable *t, const char *key,
							 size_t klen) pg_attribute_noreturn();
static void truncate_one(Relation rel);

static create_upper_paths_hook_type prev_upper_paths_hook = NULL;

/*
 * Module initialisation (from _PG_init): the settings of writes, and the
 * planner hook that accepts ON CONFLICT (key).
 */
void
LsmFdwInitModify(void)
{
	DefineCustomIntVariable("lsm_fdw.bulk_insert_rows",
							"Rows of one INSERT statement after which the rest are loaded as COPY FROM loads them.",
							"They go to a stage on disk as they come, as sorted runs, instead of the transaction's memory; 0 keeps every row in memory until lsm_fdw.pending_memory is reached.",
							&bulk_insert_rows,
							1000, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lsm_fdw.insert_batch_size",
							"Rows the executor gathers before it inserts them into an lsm_fdw table.",
							"INSERT ... SELECT, multi-row VALUES, COPY FROM and rows routed into foreign partitions are inserted in batches of this many rows (1, the default: one by one), unless RETURNING, row triggers or WITH CHECK OPTION need each row's result at once.",
							&insert_batch_size,
							1, 1, 10000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = upper_paths_hook;
}

/* Fills in the modification callbacks of the handler's FdwRoutine. */
void
LsmFdwSetModifyRoutines(FdwRoutine *routine)
{
	routine->AddForeignUpdateTargets = lsmfdwAddForeignUpdateTargets;
	routine->PlanForeignModify = lsmfdwPlanForeignModify;
	routine->BeginForeignModify = lsmfdwBeginForeignModify;
	routine->ExecForeignInsert = lsmfdwExecForeignInsert;
	routine->GetForeignModifyBatchSize = lsmfdwGetForeignModifyBatchSize;
	routine->ExecForeignBatchInsert = lsmfdwExecForeignBatchInsert;
	routine->ExecForeignUpdate = lsmfdwExecForeignUpdate;
	routine->ExecForeignDelete = lsmfdwExecForeignDelete;
	routine->EndForeignModify = lsmfdwEndForeignModify;
	routine->BeginForeignInsert = lsmfdwBeginForeignInsert;
	routine->EndForeignInsert = lsmfdwEndForeignInsert;
	routine->ExecForeignTruncate = lsmfdwExecForeignTruncate;
}

/*
 * Returns whether key exists for the transaction: in its newest pending
 * write of the key if it has one (*pending set), else in the store (not
 * looked at if it was empty when the statement began: see begin_modify).
 */
static bool
key_exists(LsmFdwModifyState *st, const char *key, size_t klen,
		   bool *pending)
{
	LsmFdwTable *t = st->table;
	LsmFdwPendingRow p;
	char	   *row;
	size_t		rowlen;

	*pending = LsmFdwPendingLookup(t->relid, key, klen, InvalidCommandId,
								   &p, NULL);
	if (*pending)
		return !p.is_delete;
	if (!st->store_empty &&
		LsmFdwGet(st->store, t->relname, key, klen, &row, &rowlen))
	{
		pfree(row);
		return true;
	}
	return false;
}

/*
 * Asks the scan under an UPDATE or DELETE for the key columns, the row
 * identity, as junk columns.  Their names carry the column's number and
 * type because tables of an inheritance tree share the junk columns of
 * equal names.  (Nothing else: not ctid, which the scan would then have to
 * compute for every row.)
 */
static void
lsmfdwAddForeignUpdateTargets(PlannerInfo *root, Index rtindex,
							  RangeTblEntry *target_rte,
							  Relation target_relation)
{
	LsmFdwTable *t = LsmFdwGetTable(target_relation);
	int			k;

	for (k = 0; k < t->nkeys; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(target_relation),
											   t->keyattnos[k] - 1);
		Var		   *var;

		var = makeVar(rtindex, attr->attnum, attr->atttypid, attr->atttypmod,
					  attr->attcollation, 0);
		add_row_identity_var(root, var, rtindex,
							 row_identity_name(target_relation, attr->attnum));
	}
}

/*
 * Passes ON CONFLICT DO NOTHING and whether RETURNING reads ctid to the
 * executor; refuses RETURNING ctid of a table whose rows have none.  (ON
 * CONFLICT DO UPDATE gets here through accept_key_arbiters.)
 */
static List *
lsmfdwPlanForeignModify(PlannerInfo *root, ModifyTable *plan,
						Index resultRelation, int subplan_index)
{
	Bitmapset  *attrs = NULL;
	bool		returns_ctid;

	if (plan->returningLists != NIL)
		pull_varattnos(list_nth(plan->returningLists, subplan_index),
					   resultRelation, &attrs);
	returns_ctid = bms_is_member(SelfItemPointerAttributeNumber -
								 FirstLowInvalidHeapAttributeNumber, attrs);
	if (returns_ctid)
	{
		Relation	rel = table_open(planner_rt_fetch(resultRelation,
													  root)->relid, NoLock);
		LsmFdwTable *t = LsmFdwGetTable(rel);

		table_close(rel, NoLock);
		if (!LsmFdwKeyHasCtid(t))
			LsmFdwReportNoCtid(t, NULL, 0);
	}
	return list_make2(makeInteger(plan->onConflictAction ==
								  ONCONFLICT_NOTHING),
					  makeInteger(returns_ctid));
}

/* Sets up an INSERT, UPDATE or DELETE: the store, and the junk key. */
static void
lsmfdwBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
						 List *fdw_private, int subplan_index, int eflags)
{
	LsmFdwModifyState *st;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	/*
	 * An UPDATE or DELETE reads its rows through a scan of the table, whose
	 * begin (ExecInitNode of the subplan, just before) refreshed the store
	 * for this statement: a second catch-up would only cost one.
	 */
	st = begin_modify(mtstate->ps.state, rinfo->ri_RelationDesc,
					  intVal(list_nth(fdw_private,
									  LSMFDW_MODIFY_DO_NOTHING)) != 0,
					  mtstate->operation == CMD_INSERT);
	st->returns_ctid = intVal(list_nth(fdw_private,
									   LSMFDW_MODIFY_RETURNS_CTID)) != 0;
	st->mtstate = mtstate;
	st->do_update = ((ModifyTable *) mtstate->ps.plan)->onConflictAction ==
		ONCONFLICT_UPDATE;
	if (mtstate->operation == CMD_UPDATE || mtstate->operation == CMD_DELETE)
	{
		Plan	   *subplan = outerPlanState(mtstate)->plan;
		int			k;

		for (k = 0; k < st->table->nkeys; k++)
		{
			char	   *name = row_identity_name(rinfo->ri_RelationDesc,
												 st->table->keyattnos[k]);

			st->key_junk[k] = ExecFindJunkAttributeInTlist(subplan->targetlist,
														   name);
			if (!AttributeNumberIsValid(st->key_junk[k]))
				elog(ERROR, "could not find junk column \"%s\"", name);
		}
		/* the handle keeps showing what the scan reads (see file header) */
		st->changes_rows = true;
		st->store->modifying++;
	}
	rinfo->ri_FdwState = st;
}

/*
 * Sets up COPY FROM, or the routing of INSERT rows to a foreign partition.
 */
static void
lsmfdwBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	ModifyTable *plan = mtstate != NULL ? (ModifyTable *) mtstate->ps.plan : NULL;
	LsmFdwModifyState *st;
	bool		do_nothing = false;

	if (plan != NULL && plan->onConflictAction == ONCONFLICT_UPDATE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("ON CONFLICT DO UPDATE is not supported on lsm_fdw foreign tables")));
	if (plan != NULL)
		do_nothing = (plan->onConflictAction == ONCONFLICT_NOTHING);
	st = begin_modify(mtstate != NULL ? mtstate->ps.state : NULL,
					  rinfo->ri_RelationDesc, do_nothing, true);
	st->mtstate = mtstate;
	rinfo->ri_FdwState = st;
	/* COPY FROM (no plan): a bulk load */
	if (plan == NULL)
		LsmFdwPendingBulkLoad(st->store, st->table->relname,
							  mtstate != NULL ? mtstate->ps.state->es_output_cid
							  : GetCurrentCommandId(true));
}

/*
 * Inserts the row in slot: fails on an existing key (returns NULL, nothing
 * inserted, under ON CONFLICT DO NOTHING; updates the existing row under
 * ON CONFLICT DO UPDATE, see upsert).
 */
static TupleTableSlot *
lsmfdwExecForeignInsert(EState *estate, ResultRelInfo *rinfo,
						TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	LsmFdwModifyState *st = (LsmFdwModifyState *) rinfo->ri_FdwState;
	MemoryContext oldcxt;
	StringInfoData key;
	StringInfoData row;
	bool		pending;

	MemoryContextReset(st->row_cxt);
	oldcxt = MemoryContextSwitchTo(st->row_cxt);
	slot_getallattrs(slot);
	check_partition(rinfo, slot, estate, false);
	initStringInfo(&key);
	initStringInfo(&row);
	LsmFdwEncodeRow(st->table, slot->tts_values, slot->tts_isnull, &key,
					&row);
	if (st->do_update)
	{
		slot = upsert(st, estate, rinfo, slot, &key, &row);
		MemoryContextSwitchTo(oldcxt);
		return slot;
	}
	if (key_exists(st, key.data, key.len, &pending))
	{
		if (!st->do_nothing)
			report_duplicate(st->table, key.data, key.len);
		if (st->mtstate != NULL)
			InstrCountTuples2(&st->mtstate->ps, 1);
		MemoryContextSwitchTo(oldcxt);
		return NULL;
	}
	/* past bulk_insert_rows rows, the statement loads as COPY does */
	if (st->inserted++ == (uint64) bulk_insert_rows && bulk_insert_rows > 0 &&
		!st->do_nothing)
		LsmFdwPendingBulkLoad(st->store, st->table->relname,
							  estate->es_output_cid);
	LsmFdwPendingWrite(st->store, st->table->relname, key.data, key.len,
					   row.data, row.len, false,
					   st->do_nothing ? LSMFDW_BASE_ABSENT_SKIP
					   : LSMFDW_BASE_ABSENT, estate->es_output_cid);
	/* the ctid for those who may read it (a load's rows need none) */
	if (rinfo->ri_projectReturning != NULL || rinfo->ri_TrigDesc != NULL ||
		rinfo->ri_WithCheckOptions != NIL)
		set_ctid(st, slot, &key);
	else
		ItemPointerSetInvalid(&slot->tts_tid);
	MemoryContextSwitchTo(oldcxt);
	return slot;
}

/*
 * Rows the executor gathers before inserting them (INSERT ... SELECT,
 * multi-row VALUES, COPY FROM, rows routed into a foreign partition), in
 * batches of lsm_fdw.insert_batch_size, unless each row's result is needed
 * at once: RETURNING, row triggers, WITH CHECK OPTION, ON CONFLICT DO
 * UPDATE (a row may update one inserted just before).
 */
static int
lsmfdwGetForeignModifyBatchSize(ResultRelInfo *rinfo)
{
	TriggerDesc *trig = rinfo->ri_TrigDesc;

	if (rinfo->ri_projectReturning != NULL ||
		rinfo->ri_WithCheckOptions != NIL || rinfo->ri_onConflict != NULL ||
		(trig != NULL &&
		 (trig->trig_insert_before_row || trig->trig_insert_after_row)))
		return 1;
	return insert_batch_size;
}

/*
 * Inserts the rows of slots[0 .. *numSlots) as ExecForeignInsert would;
 * returns those inserted (ON CONFLICT DO NOTHING skips some) and their
 * number in *numSlots.  The executor owns slots: the array returned is
 * another, the state's.
 */
static TupleTableSlot **
lsmfdwExecForeignBatchInsert(EState *estate, ResultRelInfo *rinfo,
							 TupleTableSlot **slots,
							 TupleTableSlot **planSlots, int *numSlots)
{
	LsmFdwModifyState *st = (LsmFdwModifyState *) rinfo->ri_FdwState;
	int			n = 0;
	int			i;

	if (st->inserted_cap < *numSlots)
	{
		st->inserted_slots = MemoryContextAlloc(st->cxt,
												sizeof(TupleTableSlot *) *
												*numSlots);
		st->inserted_cap = *numSlots;
	}
	for (i = 0; i < *numSlots; i++)
		if (lsmfdwExecForeignInsert(estate, rinfo, slots[i],
									planSlots ? planSlots[i] : NULL) != NULL)
			st->inserted_slots[n++] = slots[i];
	*numSlots = n;
	return st->inserted_slots;
}

/*
 * Replaces the row whose key is the junk column of planSlot by the row in
 * slot; if the key changed, that is a delete of the old key and an insert
 * of the new one, which must not exist.
 */
static TupleTableSlot *
lsmfdwExecForeignUpdate(EState *estate, ResultRelInfo *rinfo,
						TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	LsmFdwModifyState *st = (LsmFdwModifyState *) rinfo->ri_FdwState;
	LsmFdwTable *t = st->table;
	MemoryContext oldcxt;
	StringInfoData oldkey;
	StringInfoData key;
	StringInfoData row;

	MemoryContextReset(st->row_cxt);
	oldcxt = MemoryContextSwitchTo(st->row_cxt);
	initStringInfo(&oldkey);
	old_key(st, planSlot, &oldkey);
	if (modified_by_command(st, &oldkey, estate->es_output_cid))
	{
		MemoryContextSwitchTo(oldcxt);
		return NULL;
	}

	slot_getallattrs(slot);
	check_partition(rinfo, slot, estate, true);
	initStringInfo(&key);
	initStringInfo(&row);
	LsmFdwEncodeRow(t, slot->tts_values, slot->tts_isnull, &key, &row);

	write_update(st, &oldkey, &key, &row, estate->es_output_cid);
	set_ctid(st, slot, &key);
	MemoryContextSwitchTo(oldcxt);
	return slot;
}

/*
 * Writes row, of key, in place of the row of oldkey, which the transaction
 * sees: if the key changed, that is a delete of the old key and an insert
 * of the new one, which must be free by the end of the statement.
 */
static void
write_update(LsmFdwModifyState *st, StringInfo oldkey, StringInfo key,
			 StringInfo row, CommandId cid)
{
	LsmFdwTable *t = st->table;
	bool		pending;
	bool		taken;

	if (key->len == oldkey->len && memcmp(key->data, oldkey->data, key->len) == 0)
	{
		LsmFdwPendingWrite(st->store, t->relname, key->data, key->len,
						   row->data, row->len, false, LSMFDW_BASE_VERSION,
						   cid);
		return;
	}
	taken = key_exists(st, key->data, key->len, &pending);
	/* the old row's version first: nothing written if it changed */
	LsmFdwPendingWrite(st->store, t->relname, oldkey->data, oldkey->len,
					   NULL, 0, true, LSMFDW_BASE_VERSION, cid);
	if (taken)
		wait_for_key(st, key, row, cid);
	else
		LsmFdwPendingWrite(st->store, t->relname, key->data, key->len,
						   row->data, row->len, false, LSMFDW_BASE_ABSENT,
						   cid);
	key_freed(st, oldkey);
}

/*
 * INSERT ... ON CONFLICT (key) DO UPDATE of the proposed row, encoded in
 * key and row.  If the transaction sees no row of the key, the row is
 * inserted; if another transaction commits one first, the commit fails
 * with serialization_failure (a heap would wait for it and update it).
 * Else, as for a heap: the existing row is the scan tuple and the proposed
 * one the inner tuple (EXCLUDED) of the action's WHERE, which may reject
 * it (NULL returned), and of its SET list, whose row replaces the existing
 * one as an UPDATE does (the commit checks that row's version); a row the
 * command inserted or updated already is an error.
 */
static TupleTableSlot *
upsert(LsmFdwModifyState *st, EState *estate, ResultRelInfo *rinfo,
	   TupleTableSlot *proposed, StringInfo key, StringInfo row)
{
	LsmFdwTable *t = st->table;
	OnConflictSetState *oc = rinfo->ri_onConflict;
	ExprContext *econtext = st->mtstate->ps.ps_ExprContext;
	TupleTableSlot *existing = oc->oc_Existing;
	TupleTableSlot *updated;
	LsmFdwPendingRow p;
	CommandId	cid;
	char	   *old = NULL;
	size_t		oldlen = 0;
	StringInfoData newkey;
	StringInfoData newrow;

	if (LsmFdwPendingLookup(t->relid, key->data, key->len, InvalidCommandId,
							&p, &cid))
	{
		if (!p.is_delete && cid == estate->es_output_cid)
			ereport(ERROR,
					(errcode(ERRCODE_CARDINALITY_VIOLATION),
					 errmsg("ON CONFLICT DO UPDATE command cannot affect row a second time"),
					 errhint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")));
		if (!p.is_delete)
		{
			old = (char *) p.val;
			oldlen = p.vlen;
		}
	}
	else if (LsmFdwGet(st->store, t->relname, key->data, key->len, &old,
					   &oldlen))
		LsmFdwNoteRead(st->store, key->data, key->len, old, oldlen);

	if (old == NULL)
	{
		LsmFdwPendingWrite(st->store, t->relname, key->data, key->len,
						   row->data, row->len, false,
						   LSMFDW_BASE_ABSENT_UPSERT, estate->es_output_cid);
		set_ctid(st, proposed, key);
		return proposed;
	}

	InstrCountTuples2(&st->mtstate->ps, 1);
	ExecClearTuple(existing);
	LsmFdwDecodeRow(t, key->data, key->len, old, oldlen, NULL, 0,
					existing->tts_values, existing->tts_isnull, NULL);
	ExecStoreVirtualTuple(existing);
	/* RETURNING reads the new row: no error here for a key without ctid */
	if (!LsmFdwKeyToCtid(t, key->data, key->len, &existing->tts_tid))
		ItemPointerSetInvalid(&existing->tts_tid);
	econtext->ecxt_scantuple = existing;
	econtext->ecxt_innertuple = proposed;
	econtext->ecxt_outertuple = NULL;
	if (!ExecQual(oc->oc_WhereClause, econtext))
	{
		InstrCountFiltered1(&st->mtstate->ps, 1);
		return NULL;
	}
	if (rinfo->ri_WithCheckOptions != NIL)
		ExecWithCheckOptions(WCO_RLS_CONFLICT_CHECK, rinfo, existing, estate);
	updated = ExecProject(oc->oc_ProjInfo);
	slot_getallattrs(updated);
	check_partition(rinfo, updated, estate, true);
	initStringInfo(&newkey);
	initStringInfo(&newrow);
	LsmFdwEncodeRow(t, updated->tts_values, updated->tts_isnull, &newkey,
					&newrow);
	write_update(st, key, &newkey, &newrow, estate->es_output_cid);
	set_ctid(st, updated, &newkey);
	return updated;
}

/*
 * Deletes the row whose key is the junk column of planSlot.  For RETURNING,
 * fills slot with the deleted row as the scan saw it.
 */
static TupleTableSlot *
lsmfdwExecForeignDelete(EState *estate, ResultRelInfo *rinfo,
						TupleTableSlot *slot, TupleTableSlot *planSlot)
{
	LsmFdwModifyState *st = (LsmFdwModifyState *) rinfo->ri_FdwState;
	LsmFdwTable *t = st->table;
	MemoryContext oldcxt;
	StringInfoData key;

	MemoryContextReset(st->row_cxt);
	oldcxt = MemoryContextSwitchTo(st->row_cxt);
	initStringInfo(&key);
	old_key(st, planSlot, &key);
	if (modified_by_command(st, &key, estate->es_output_cid))
	{
		MemoryContextSwitchTo(oldcxt);
		return NULL;
	}

	if (rinfo->ri_projectReturning != NULL)
	{
		LsmFdwPendingRow p;
		char	   *row = NULL;
		size_t		rowlen = 0;
		bool		found;

		/* the version the scan saw: written before this command, or stored */
		found = LsmFdwPendingLookup(t->relid, key.data, key.len,
									estate->es_output_cid, &p, NULL);
		if (found)
		{
			row = (char *) p.val;
			rowlen = p.vlen;
			found = !p.is_delete;
		}
		else
			found = LsmFdwGet(st->store, t->relname, key.data, key.len,
							  &row, &rowlen);
		ExecClearTuple(slot);
		if (found)
		{
			LsmFdwDecodeRow(t, key.data, key.len, row, rowlen, NULL, 0,
							slot->tts_values, slot->tts_isnull, NULL);
			ExecStoreVirtualTuple(slot);
			set_ctid(st, slot, &key);
		}
	}

	LsmFdwPendingWrite(st->store, t->relname, key.data, key.len, NULL, 0,
					   true, LSMFDW_BASE_VERSION, estate->es_output_cid);
	MemoryContextSwitchTo(oldcxt);
	return slot;
}

/*
 * Ends an INSERT, UPDATE or DELETE: rows still waiting for their keys take
 * them now, or the statement fails with unique_violation.
 */
static void
lsmfdwEndForeignModify(EState *estate, ResultRelInfo *rinfo)
{
	if (rinfo->ri_FdwState == NULL)
		return;
	place_waiting_rows(rinfo->ri_FdwState);
	release_modify(rinfo->ri_FdwState);
}

/* Ends a COPY FROM or the routing of INSERT rows. */
static void
lsmfdwEndForeignInsert(EState *estate, ResultRelInfo *rinfo)
{
	if (rinfo->ri_FdwState != NULL)
		release_modify(rinfo->ri_FdwState);
}

/* TRUNCATE: deletes every key of each table, in the transaction. */
static void
lsmfdwExecForeignTruncate(List *rels, DropBehavior behavior,
						  bool restart_seqs)
{
	ListCell   *lc;

	foreach(lc, rels)
		truncate_one((Relation) lfirst(lc));
}

/*
 * The name of the junk column holding the old value of key column attnum
 * of rel: lsm_key_<attnum>_<type>_<typmod>_<collation>, unique for the Var
 * it stands for.
 */
static char *
row_identity_name(Relation rel, AttrNumber attnum)
{
	Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

	return psprintf("lsm_key_%d_%u_%d_%u", attnum, attr->atttypid,
					attr->atttypmod, attr->attcollation);
}

/*
 * Makes the state of a modification of rel: resolves the table, refreshes
 * (if refresh) and pins its store (released by EndForeignModify/
 * EndForeignInsert or, on error, with the query's memory).  estate may be
 * NULL (then the current memory context holds the state).
 */
static LsmFdwModifyState *
begin_modify(EState *estate, Relation rel, bool do_nothing, bool refresh)
{
	MemoryContext cxt = estate != NULL ? estate->es_query_cxt
		: CurrentMemoryContext;
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	LsmFdwModifyState *st = palloc0(sizeof(LsmFdwModifyState));

	st->released = true;
	st->table = LsmFdwGetTable(rel);
	st->do_nothing = do_nothing;
	st->cxt = cxt;
	st->row_cxt = AllocSetContextCreate(cxt, "lsm_fdw row",
										ALLOCSET_DEFAULT_SIZES);
	st->store = LsmFdwOpenStore(st->table, refresh);
	LsmFdwPinStore(st->store);

	/*
	 * An empty store (a table being loaded) need not be asked for each new
	 * key: its handle shows nothing until it catches up, which the
	 * statement's writes do not make it do.  (A key another transaction
	 * commits meanwhile fails this one's commit, as it would anyway.)
	 */
	st->store_empty = LsmFdwStoreLooksEmpty(st->store);
	st->released = false;
	st->cleanup.func = release_modify;
	st->cleanup.arg = st;
	MemoryContextRegisterResetCallback(cxt, &st->cleanup);
	MemoryContextSwitchTo(oldcxt);
	return st;
}

/*
 * Unpins the store of a modification and ends its UPDATE or DELETE there,
 * once.  Raises no error.
 */
static void
release_modify(void *arg)
{
	LsmFdwModifyState *st = (LsmFdwModifyState *) arg;

	if (st->released)
		return;
	st->released = true;
	if (st->changes_rows)
		st->store->modifying--;
	LsmFdwUnpinStore(st->store);
}

/* Encodes the old key, the junk column of planSlot, into buf. */
static void
old_key(LsmFdwModifyState *st, TupleTableSlot *planSlot, StringInfo buf)
{
	LsmFdwTable *t = st->table;
	Datum		values[LSMFDW_MAX_KEYS] = {0};
	Oid			types[LSMFDW_MAX_KEYS] = {0};
	int			k;

	for (k = 0; k < t->nkeys; k++)
	{
		bool		isnull;

		values[k] = ExecGetJunkAttribute(planSlot, st->key_junk[k], &isnull);
		if (isnull)
			elog(ERROR, "key of the row to modify in \"%s\" is null",
				 t->relname);
		types[k] = t->cols[t->keyattnos[k] - 1].basetypid;
	}
	if (!LsmFdwEncodeKeyValues(t, values, types, buf))
		elog(ERROR, "key of the row to modify in \"%s\" cannot be encoded",
			 t->relname);
}

/*
 * Sets the ctid of slot, a row of key written or deleted, for RETURNING:
 * the key where it can be one, else invalid (or an error if RETURNING reads
 * it).
 */
static void
set_ctid(LsmFdwModifyState *st, TupleTableSlot *slot, StringInfo key)
{
	if (LsmFdwKeyToCtid(st->table, key->data, key->len, &slot->tts_tid))
		return;
	if (st->returns_ctid)
		LsmFdwReportNoCtid(st->table, key->data, key->len);
	ItemPointerSetInvalid(&slot->tts_tid);
}

/*
 * Raises an error if slot, a new row for table rinfo, lies outside rinfo's
 * bounds as a partition (see the file header).  The rows that INSERT routes
 * to a partition are within them, unless a BEFORE ROW trigger of the
 * partition changed them (as ExecInsert checks for heap partitions).
 */
static void
check_partition(ResultRelInfo *rinfo, TupleTableSlot *slot, EState *estate,
				bool update)
{
	Relation	rel = rinfo->ri_RelationDesc;

	if (!rel->rd_rel->relispartition || estate == NULL)
		return;
	if (!update)
	{
		if (rinfo->ri_RootResultRelInfo == NULL ||
			(rinfo->ri_TrigDesc != NULL &&
			 rinfo->ri_TrigDesc->trig_insert_before_row))
			(void) ExecPartitionCheck(rinfo, slot, estate, true);
		return;
	}
	if (rinfo->ri_RootResultRelInfo == NULL)
		(void) ExecPartitionCheck(rinfo, slot, estate, true);
	else if (!ExecPartitionCheck(rinfo, slot, estate, false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot move a row of foreign table \"%s\" to another partition",
						RelationGetRelationName(rel)),
				 errdetail("The updated row lies outside the bounds of partition \"%s\", an lsm_fdw table, and PostgreSQL moves rows only out of partitions it stores itself.",
						   RelationGetRelationName(rel)),
				 errhint("DELETE the row and INSERT it again.")));
}

/*
 * Whether the command with id cid has already updated or deleted the row
 * of key (the scan under it produced the row twice).
 */
static bool
modified_by_command(LsmFdwModifyState *st, StringInfo key, CommandId cid)
{
	LsmFdwPendingRow p;
	CommandId	vcid;

	return LsmFdwPendingLookup(st->table->relid, key->data, key->len,
							   InvalidCommandId, &p, &vcid) &&
		vcid == cid;
}

/*
 * Makes the row (encoded key and row) that the UPDATE command cid moves to
 * a key another row holds wait until the statement frees that key
 * (key_freed) or ends (place_waiting_rows).  Raises unique_violation if
 * another row of the statement waits for it already: the key cannot end up
 * with both.
 */
static void
wait_for_key(LsmFdwModifyState *st, StringInfo key, StringInfo row,
			 CommandId cid)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(st->cxt);
	LsmFdwKeyRef ref;
	WaitingRow *w;
	bool		found;
	char	   *copy;

	if (st->waiting == NULL)
		st->waiting = LsmFdwKeyTableCreate("lsm_fdw waiting rows",
										   sizeof(WaitingRow), st->cxt);
	ref.data = key->data;
	ref.len = key->len;
	w = hash_search(st->waiting, &ref, HASH_FIND, NULL);
	if (w != NULL)
		report_duplicate(st->table, key->data, key->len);
	copy = palloc(key->len + row->len);
	memcpy(copy, key->data, key->len);
	memcpy(copy + key->len, row->data, row->len);
	w = hash_search(st->waiting, &ref, HASH_ENTER, &found);
	w->key.data = copy;			/* the entry keeps it, not the row's bytes */
	w->row = copy + key->len;
	w->rowlen = row->len;
	w->cid = cid;
	MemoryContextSwitchTo(oldcxt);
}

/* The statement deleted or moved the row of key: a row waiting for it takes it. */
static void
key_freed(LsmFdwModifyState *st, StringInfo key)
{
	LsmFdwKeyRef ref;
	WaitingRow *w;

	if (st->waiting == NULL || hash_get_num_entries(st->waiting) == 0)
		return;
	ref.data = key->data;
	ref.len = key->len;
	w = hash_search(st->waiting, &ref, HASH_FIND, NULL);
	if (w == NULL)
		return;
	LsmFdwPendingWrite(st->store, st->table->relname, w->key.data,
					   w->key.len, w->row, w->rowlen, false,
					   LSMFDW_BASE_ABSENT, w->cid);
	(void) hash_search(st->waiting, &ref, HASH_REMOVE, NULL);
}

/*
 * At the end of the statement, the rows still waiting take their keys if
 * they are free now (another part of the statement, such as a
 * data-modifying WITH, deleted the row); else unique_violation.
 */
static void
place_waiting_rows(LsmFdwModifyState *st)
{
	HASH_SEQ_STATUS status;
	WaitingRow *w;
	bool		pending;

	if (st->waiting == NULL)
		return;
	hash_seq_init(&status, st->waiting);
	while ((w = hash_seq_search(&status)) != NULL)
	{
		if (key_exists(st, w->key.data, w->key.len, &pending))
		{
			hash_seq_term(&status);
			report_duplicate(st->table, w->key.data, w->key.len);
		}
		LsmFdwPendingWrite(st->store, st->table->relname, w->key.data,
						   w->key.len, w->row, w->rowlen, false,
						   LSMFDW_BASE_ABSENT, w->cid);
	}
	hash_destroy(st->waiting);
	st->waiting = NULL;
}

/* Raises unique_violation for key, which exists in table t. */
static void
report_duplicate(const LsmFdwTable *t, const char *key, size_t klen)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates the key of foreign table \"%s\"",
					t->relname),
			 errdetail("Key (%s)=(%s) already exists.",
					   LsmFdwKeyColumnNames(t),
					   LsmFdwKeyToString(t, key, klen))));
}

/*
 * Adds a pending delete of every key of rel that the transaction sees: the
 * committed keys merged with the newest pending writes.
 */
static void
truncate_one(Relation rel)
{
	LsmFdwTable *t = LsmFdwGetTable(rel);
	LsmFdwStore *s = LsmFdwOpenStore(t, true);
	CommandId	cid = GetCurrentCommandId(true);
	LsmFdwMerge m;
	const char *key;
	const char *row;
	size_t		klen;
	size_t		rowlen;

	if (LsmFdwPendingTruncate(s, t->relname))
		return;

	/*
	 * Else (in a savepoint, or with the table being read) a delete of every
	 * row; the merge's snapshots do not see the deletes added meanwhile.
	 */
	memset(&m, 0, sizeof(m));
	LsmFdwPinStore(s);
	LsmFdwScanBegin(s, InvalidCommandId);
	PG_TRY();
	{
		LsmFdwMergeOpen(&m, s, t->relid, t->relname, InvalidCommandId,
						false, NULL, 0);
		while (LsmFdwMergeNext(&m, &key, &klen, &row, &rowlen))
			LsmFdwPendingWrite(s, t->relname, key, klen, NULL, 0, true,
							   LSMFDW_BASE_ANY, cid);
	}
	PG_FINALLY();
	{
		LsmFdwMergeClose(&m);
		LsmFdwScanEnd(s, InvalidCommandId);
		LsmFdwUnpinStore(s);
	}
	PG_END_TRY();
}

/*
 * create_upper_paths_hook: at the final stage of planning a query (each
 * data-modifying WITH query has its own), before the planner makes the
 * plan that looks for the ON CONFLICT arbiter, accepts ON CONFLICT (key)
 * on an lsm_fdw table (accept_key_arbiters).  Installed when the library
 * is loaded: by a statement that planned a scan of an lsm_fdw table
 * earlier in the session, or before, or in this very planning.
 */
static void
upper_paths_hook(PlannerInfo *root, UpperRelationKind stage,
				 RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	if (prev_upper_paths_hook != NULL)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage == UPPERREL_FINAL)
		accept_key_arbiters(root->parse);
}

/*
 * ON CONFLICT with an inference specification in q, an INSERT into an
 * lsm_fdw table.  PostgreSQL
 * infers the arbiter from the target's unique indexes, and a foreign table
 * has none; its key is its one unique constraint.  So a specification
 * naming the key column (as often as it likes, under the column's
 * collation and default operator class, without a WHERE) is accepted, and
 * removed: the planner then takes ON CONFLICT as applying to any conflict,
 * which for these tables is a conflict on the key.  Any other is refused
 * as PostgreSQL refuses one that matches no unique index.
 */
static void
accept_key_arbiters(Query *q)
{
	OnConflictExpr *oc = q->onConflict;
	RangeTblEntry *rte;
	Relation	rel;
	LsmFdwTable *t;
	ListCell   *lc;
	bool		named[LSMFDW_MAX_KEYS] = {0};
	bool		match;
	char	   *keys;
	int			k;

	if (q->commandType != CMD_INSERT || oc == NULL || oc->arbiterElems == NIL)
		return;
	rte = rt_fetch(q->resultRelation, q->rtable);
	if (rte->relkind != RELKIND_FOREIGN_TABLE || !LsmFdwIsOurTable(rte->relid))
		return;

	rel = table_open(rte->relid, NoLock);
	t = LsmFdwGetTable(rel);
	match = oc->arbiterWhere == NULL;
	foreach(lc, oc->arbiterElems)
	{
		InferenceElem *elem = lfirst_node(InferenceElem, lc);
		Var		   *var = (Var *) elem->expr;
		LsmFdwColumn *keycol;

		k = IsA(var, Var) ? LsmFdwKeyIndex(t, var->varattno) : -1;
		if (k < 0)
		{
			match = false;
			continue;
		}
		keycol = &t->cols[var->varattno - 1];
		if ((OidIsValid(elem->infercollid) &&
			 elem->infercollid != keycol->collation) ||
			(OidIsValid(elem->inferopclass) &&
			 elem->inferopclass != GetDefaultOpClass(keycol->typid,
													 BTREE_AM_OID)))
			match = false;
		named[k] = true;
	}
	for (k = 0; k < t->nkeys; k++)
		if (!named[k])
			match = false;
	keys = LsmFdwKeyColumnNames(t);
	table_close(rel, NoLock);
	if (!match && t->nkeys == 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("there is no unique or exclusion constraint matching the ON CONFLICT specification"),
				 errdetail("The only unique constraint of foreign table \"%s\" is its key column \"%s\".",
						   t->relname, keys),
				 errhint("Write ON CONFLICT (%s).", keys)));
	if (!match)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("there is no unique or exclusion constraint matching the ON CONFLICT specification"),
				 errdetail("The only unique constraint of foreign table \"%s\" is its key, columns %s.",
						   t->relname, keys),
				 errhint("Write ON CONFLICT (%s).", keys)));
	oc->arbiterElems = NIL;
}

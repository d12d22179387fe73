/*-------------------------------------------------------------------------
 *
 * scan.c
 *		  Planning and execution of scans of lsm_fdw foreign tables.
 *
 * Access paths:
 *
 *	key lookup	a qual "key = value" where value does not depend on the
 *				table and is not volatile: a constant, a Param (prepared
 *				statements' generic plans), or, in a parameterized path, a
 *				column of another relation of a join ("key = outer.col",
 *				from a join clause or an equivalence class).  The value is
 *				planned into fdw_exprs and evaluated when the scan starts and
 *				at every rescan; one lsm_get.
 *	full scan	an iterator over a snapshot of the store, in key order.
 *
 * The key lookup needs the qual's operator to be the equality of the key
 * type's btree family and its other input to be encodable like a key: the
 * key's own type, an integer of another width (converted, and a value out of
 * the key's range finds nothing), text for a varchar key.  A collatable key
 * compared under a nondeterministic collation is not looked up (equal
 * strings could have other bytes).  Every qual, the looked-up one included,
 * stays in the plan's qual list for the executor to check: the result is
 * always what a native table with the same rows would return.
 *
 * Reads merge the transaction's pending writes (xact.c) into the committed
 * state: the versions written by earlier commands of the transaction, never
 * those of the scan's own command (see xact.c).  A full scan sorts them once
 * and merges them with the engine iterator by key.
 *
 * Each scan refreshes its store first (lsm_refresh), so it sees what other
 * backends committed before it began.  The iterator and the pin of the
 * store are released by EndForeignScan or, on error, by a reset callback of
 * the query's memory context.
 *
 * src/fdw/scan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "lsm_fdw.h"

/* How a scan reads its store */
typedef enum LsmFdwAccess
{
	LSMFDW_ACCESS_FULL_SCAN,
	LSMFDW_ACCESS_KEY_LOOKUP
} LsmFdwAccess;

/*
 * ForeignPath.fdw_private: the access (Integer), then for a key lookup the
 * value expression or the RestrictInfo of a join clause it comes from.
 *
 * ForeignScan.fdw_private: the items below.  ForeignScan.fdw_exprs: for a
 * key lookup, the value expression.
 */
enum LsmFdwScanPrivate
{
	LSMFDW_PRIVATE_ACCESS,		/* Integer: LsmFdwAccess */
	LSMFDW_PRIVATE_KEY_NAME,	/* String: the key column, for EXPLAIN */
	LSMFDW_PRIVATE_ATTRS		/* IntList: attributes to decode */
};

/* Planner state of a foreign table: RelOptInfo.fdw_private */
typedef struct LsmFdwRelInfo
{
	LsmFdwTable *table;
	double		entries;		/* entries in the store: rows and, until
								 * compaction, shadowed versions */
	double		pages;			/* the store's size in BLCKSZ pages */
	Expr	   *key_value;		/* value of a restriction "key = value" */
} LsmFdwRelInfo;

/* Executor state of a scan: ForeignScanState.fdw_state */
typedef struct LsmFdwScanState
{
	LsmFdwAccess access;
	LsmFdwTable *table;
	LsmFdwStore *store;			/* pinned until the scan is released */
	CommandId	curcid;			/* sees pending writes of earlier commands */
	bool	   *needed;			/* needed[attnum - 1]: decode the attribute */
	bool		started;		/* positioned (full scan) or done (lookup) */

	/* key lookup */
	ExprState  *key_state;		/* the value */
	Oid			key_valtype;	/* its (base) type */
	StringInfoData keybuf;

	/* full scan */
	lsm_iter   *iter;
	LsmFdwPendingRow *pending;	/* visible pending writes, key order */
	int			npending;
	int			ppos;			/* next pending write to merge */
	bool		pending_ready;

	MemoryContextCallback cleanup;	/* releases iter and the pin */
	bool		released;
} LsmFdwScanState;

/* Argument of key_member_matches */
typedef struct KeyVarRef
{
	Index		relid;
	AttrNumber	attno;
} KeyVarRef;

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
static void lsmfdwExplainForeignScan(ForeignScanState *node,
									 ExplainState *es);

static void estimate_store(LsmFdwRelInfo *info);
static Expr *match_key_clause(PlannerInfo *root, RelOptInfo *baserel,
							  const LsmFdwTable *t, Expr *clause);
static bool is_key_var(Node *node, Index relid, AttrNumber attno);
static bool key_operator_ok(const LsmFdwTable *t, Oid opno, Oid valtype,
							Oid inputcollid);
static bool key_member_matches(PlannerInfo *root, RelOptInfo *rel,
							   EquivalenceClass *ec, EquivalenceMember *em,
							   void *arg);
static void add_parameterized_paths(PlannerInfo *root, RelOptInfo *baserel,
									LsmFdwRelInfo *info, Cost lookup_cost);
static void lookup_row(ForeignScanState *node, LsmFdwScanState *st,
					   TupleTableSlot *slot);
static void next_row(LsmFdwScanState *st, TupleTableSlot *slot);
static void store_row(LsmFdwScanState *st, TupleTableSlot *slot,
					  const char *key, size_t klen,
					  const char *row, size_t rowlen);
static void release_scan(void *arg);

/* Fills in the scan callbacks of the handler's FdwRoutine. */
void
LsmFdwSetScanRoutines(FdwRoutine *routine)
{
	routine->GetForeignRelSize = lsmfdwGetForeignRelSize;
	routine->GetForeignPaths = lsmfdwGetForeignPaths;
	routine->GetForeignPlan = lsmfdwGetForeignPlan;
	routine->BeginForeignScan = lsmfdwBeginForeignScan;
	routine->IterateForeignScan = lsmfdwIterateForeignScan;
	routine->ReScanForeignScan = lsmfdwReScanForeignScan;
	routine->EndForeignScan = lsmfdwEndForeignScan;
	routine->ExplainForeignScan = lsmfdwExplainForeignScan;
}

/*
 * Resolves the table (key column, options: errors surface here, at
 * planning), reads the store's size and looks for a restriction on the key
 * that a lookup can serve; estimates the rows: at most one with such a
 * restriction, else the store's entries times the quals' selectivity.
 */
static void
lsmfdwGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
						Oid foreigntableid)
{
	LsmFdwRelInfo *info = palloc0(sizeof(LsmFdwRelInfo));
	Relation	rel;
	ListCell   *lc;
	double		rows;

	rel = table_open(foreigntableid, NoLock);
	info->table = LsmFdwGetTable(rel);
	table_close(rel, NoLock);
	estimate_store(info);

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		info->key_value = match_key_clause(root, baserel, info->table,
										   rinfo->clause);
		if (info->key_value != NULL)
			break;
	}

	baserel->tuples = info->entries;
	rows = info->entries *
		clauselist_selectivity(root, baserel->baserestrictinfo, 0,
							   JOIN_INNER, NULL);
	if (info->key_value != NULL)
		rows = Min(rows, 1.0);
	baserel->rows = clamp_row_est(rows);
	baserel->fdw_private = info;
}

/*
 * Adds the access paths: a key lookup if a restriction allows one (it is
 * never worse than reading everything, so it is the only path); else a
 * full scan, plus a key lookup parameterized by each set of other relations
 * whose join clauses give the key's value.
 *
 * Costs: a lookup reads about one block (seq_page_cost: the store is read
 * through the page cache by mmap) and one tuple; a full scan every page and
 * every entry.
 */
static void
lsmfdwGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
					  Oid foreigntableid)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) baserel->fdw_private;
	Cost		startup = baserel->baserestrictcost.startup;
	Cost		per_tuple = cpu_tuple_cost + baserel->baserestrictcost.per_tuple;
	Cost		lookup = startup + seq_page_cost + per_tuple;
	Cost		full = startup + seq_page_cost * info->pages +
		per_tuple * info->entries;

	List	   *private;

	if (info->key_value != NULL)
	{
		private = list_make2(makeInteger(LSMFDW_ACCESS_KEY_LOOKUP),
							 info->key_value);
		add_path(baserel, (Path *)
				 create_foreignscan_path(root, baserel, NULL, baserel->rows,
										 startup, lookup, NIL, NULL, NULL,
										 private));
		return;
	}

	private = list_make1(makeInteger(LSMFDW_ACCESS_FULL_SCAN));
	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup, full, NIL, NULL, NULL,
									 private));
	add_parameterized_paths(root, baserel, info, lookup);
}

/*
 * Makes the ForeignScan of the chosen path.  All quals are kept for the
 * executor; the lookup value goes to fdw_exprs (where the planner replaces
 * other relations' columns by the nested loop's Params).
 */
static ForeignScan *
lsmfdwGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
					 Oid foreigntableid, ForeignPath *best_path,
					 List *tlist, List *scan_clauses, Plan *outer_plan)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) baserel->fdw_private;
	LsmFdwTable *t = info->table;
	LsmFdwAccess access = intVal(linitial(best_path->fdw_private));
	List	   *fdw_exprs = NIL;
	List	   *attrs = NIL;
	List	   *private;
	Bitmapset  *used = NULL;
	bool		whole_row;
	int			i;

	if (access == LSMFDW_ACCESS_KEY_LOOKUP)
	{
		Node	   *n = lsecond(best_path->fdw_private);
		Expr	   *value;

		if (IsA(n, RestrictInfo))
			value = match_key_clause(root, baserel, t,
									 ((RestrictInfo *) n)->clause);
		else
			value = (Expr *) n;
		Assert(value != NULL);
		fdw_exprs = list_make1(copyObject(value));
	}

	scan_clauses = extract_actual_clauses(scan_clauses, false);

	/* the attributes the plan uses: the others need not be decoded */
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &used);
	pull_varattnos((Node *) scan_clauses, baserel->relid, &used);
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, used);
	for (i = 1; i <= t->natts; i++)
	{
		if (whole_row ||
			bms_is_member(i - FirstLowInvalidHeapAttributeNumber, used))
			attrs = lappend_int(attrs, i);
	}

	private = list_make3(makeInteger(access),
						 makeString(pstrdup(t->cols[t->keyattno - 1].name)),
						 attrs);
	return make_foreignscan(tlist, scan_clauses, baserel->relid, fdw_exprs,
							private, NIL, NIL, outer_plan);
}

/*
 * Sets up the scan: resolves the table, refreshes and pins its store,
 * prepares the lookup value.  Nothing is read before the first Iterate.
 */
static void
lsmfdwBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = castNode(ForeignScan, node->ss.ps.plan);
	EState	   *estate = node->ss.ps.state;
	LsmFdwScanState *st = palloc0(sizeof(LsmFdwScanState));
	ListCell   *lc;

	node->fdw_state = st;
	st->access = intVal(list_nth(plan->fdw_private, LSMFDW_PRIVATE_ACCESS));
	st->released = true;		/* nothing to release yet */
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	st->table = LsmFdwGetTable(node->ss.ss_currentRelation);
	st->needed = palloc0(sizeof(bool) * Max(st->table->natts, 1));
	foreach(lc, (List *) list_nth(plan->fdw_private, LSMFDW_PRIVATE_ATTRS))
		st->needed[lfirst_int(lc) - 1] = true;
	st->curcid = estate->es_snapshot->curcid;
	initStringInfo(&st->keybuf);

	if (st->access == LSMFDW_ACCESS_KEY_LOOKUP)
	{
		Expr	   *value = (Expr *) linitial(plan->fdw_exprs);

		st->key_state = ExecInitExpr(value, (PlanState *) node);
		st->key_valtype = getBaseType(exprType((Node *) value));
	}

	st->store = LsmFdwOpenStore(st->table, true);
	LsmFdwPinStore(st->store);
	st->released = false;
	st->cleanup.func = release_scan;
	st->cleanup.arg = st;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &st->cleanup);
}

/*
 * Returns the next row in the scan slot (as a virtual tuple whose values
 * live in the per-tuple memory the executor resets between rows), or the
 * empty slot at the end.
 */
static TupleTableSlot *
lsmfdwIterateForeignScan(ForeignScanState *node)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	ExecClearTuple(slot);
	if (st->access == LSMFDW_ACCESS_KEY_LOOKUP)
	{
		if (!st->started)
		{
			st->started = true;
			lookup_row(node, st, slot);
		}
	}
	else
		next_row(st, slot);
	return slot;
}

/*
 * Restarts the scan: a lookup evaluates its value again (a nested loop's
 * Params have changed); a full scan goes back to the first key of the same
 * snapshot.
 */
static void
lsmfdwReScanForeignScan(ForeignScanState *node)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;

	st->started = false;
}

/* Releases the iterator and the store. */
static void
lsmfdwEndForeignScan(ForeignScanState *node)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;

	if (st != NULL)
		release_scan(st);
}

/* EXPLAIN: "LSM Access: full scan" or "LSM Access: key lookup (column)". */
static void
lsmfdwExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = castNode(ForeignScan, node->ss.ps.plan);
	LsmFdwAccess access = intVal(list_nth(plan->fdw_private,
										  LSMFDW_PRIVATE_ACCESS));
	const char *key = strVal(list_nth(plan->fdw_private,
									  LSMFDW_PRIVATE_KEY_NAME));

	if (access == LSMFDW_ACCESS_KEY_LOOKUP)
		ExplainPropertyText("LSM Access",
							psprintf("key lookup (%s)", key), es);
	else
		ExplainPropertyText("LSM Access", "full scan", es);
}

/*
 * Reads the size of info's store from the engine's statistics: entries of
 * every level and of the memtable (an upper bound of the rows), and bytes.
 */
static void
estimate_store(LsmFdwRelInfo *info)
{
	LsmFdwStore *s = LsmFdwOpenStore(info->table, false);
	lsm_stats	stats;
	double		entries;
	double		bytes;
	int			rc;
	int			l;

	rc = lsm_get_stats(s->db, &stats);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, s->db, info->table->relname,
						  "read the statistics of");
	entries = (double) stats.memtable_entries;
	bytes = (double) stats.memtable_bytes;
	for (l = 0; l < stats.levels && l < LSM_MAX_LEVELS; l++)
	{
		entries += (double) stats.level[l].entries;
		bytes += (double) stats.level[l].bytes;
	}
	info->entries = entries;
	info->pages = Max(1.0, ceil(bytes / BLCKSZ));
}

/*
 * If clause is "key = value" or "value = key" with an operator and a value
 * a key lookup can serve (see the file header), returns value; else NULL.
 * value may reference other relations (a join clause), never baserel, and
 * must contain no volatile function or subplan.
 */
static Expr *
match_key_clause(PlannerInfo *root, RelOptInfo *baserel,
				 const LsmFdwTable *t, Expr *clause)
{
	OpExpr	   *op;
	Node	   *value;

	if (!IsA(clause, OpExpr))
		return NULL;
	op = (OpExpr *) clause;
	if (list_length(op->args) != 2)
		return NULL;
	if (is_key_var(linitial(op->args), baserel->relid, t->keyattno))
		value = lsecond(op->args);
	else if (is_key_var(lsecond(op->args), baserel->relid, t->keyattno))
		value = linitial(op->args);
	else
		return NULL;

	if (!key_operator_ok(t, op->opno, getBaseType(exprType(value)),
						 op->inputcollid))
		return NULL;
	if (bms_is_member(baserel->relid, pull_varnos(root, value)) ||
		contain_volatile_functions(value) ||
		contain_subplans(value))
		return NULL;
	return (Expr *) value;
}

/* Whether node is the key column of relation relid (relabelled or not). */
static bool
is_key_var(Node *node, Index relid, AttrNumber attno)
{
	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node != NULL && IsA(node, Var) &&
		((Var *) node)->varno == relid &&
		((Var *) node)->varattno == attno &&
		((Var *) node)->varlevelsup == 0;
}

/*
 * Whether operator opno, comparing the key with a value of base type
 * valtype under collation inputcollid, is an equality a lookup of the
 * encoded value answers exactly.
 */
static bool
key_operator_ok(const LsmFdwTable *t, Oid opno, Oid valtype, Oid inputcollid)
{
	const LsmFdwColumn *key = &t->cols[t->keyattno - 1];
	Oid			opclass;
	bool		compatible;

	switch (key->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
			compatible = (valtype == INT2OID || valtype == INT4OID ||
						  valtype == INT8OID);
			break;
		case LSMFDW_CODEC_TEXT:
			compatible = (valtype == TEXTOID || valtype == VARCHAROID);
			break;
		default:
			compatible = (valtype == key->basetypid);
			break;
	}
	if (!compatible)
		return false;

	opclass = GetDefaultOpClass(key->basetypid, BTREE_AM_OID);
	if (!OidIsValid(opclass) ||
		get_op_opfamily_strategy(opno, get_opclass_family(opclass)) !=
		BTEqualStrategyNumber)
		return false;

	if (key->codec == LSMFDW_CODEC_TEXT && OidIsValid(inputcollid) &&
		!get_collation_isdeterministic(inputcollid))
		return false;
	return true;
}

/*
 * generate_implied_equalities_for_column callback: whether equivalence
 * member em is the key column (arg: a KeyVarRef).
 */
static bool
key_member_matches(PlannerInfo *root, RelOptInfo *rel, EquivalenceClass *ec,
				   EquivalenceMember *em, void *arg)
{
	KeyVarRef  *ref = (KeyVarRef *) arg;

	return is_key_var((Node *) em->em_expr, ref->relid, ref->attno);
}

/*
 * Adds a key lookup parameterized by the other relations of each join
 * clause "key = value" (written in the query, or implied by an equivalence
 * class such as a.key = b.col), one per distinct set of relations.
 */
static void
add_parameterized_paths(PlannerInfo *root, RelOptInfo *baserel,
						LsmFdwRelInfo *info, Cost lookup_cost)
{
	List	   *clauses = NIL;
	List	   *done = NIL;
	ListCell   *lc;

	foreach(lc, baserel->joininfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (join_clause_is_movable_to(rinfo, baserel))
			clauses = lappend(clauses, rinfo);
	}
	if (baserel->has_eclass_joins)
	{
		KeyVarRef	ref;
		List	   *implied;

		ref.relid = baserel->relid;
		ref.attno = info->table->keyattno;
		implied = generate_implied_equalities_for_column(root, baserel,
														 key_member_matches,
														 &ref,
														 baserel->lateral_referencers);
		clauses = list_concat(clauses, implied);
	}

	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Relids		required_outer;
		List	   *private;
		ListCell   *lc2;
		bool		seen = false;

		if (match_key_clause(root, baserel, info->table, rinfo->clause) == NULL)
			continue;
		required_outer = bms_union(rinfo->clause_relids,
								   baserel->lateral_relids);
		required_outer = bms_del_members(required_outer, baserel->relids);
		if (bms_is_empty(required_outer))
			continue;
		foreach(lc2, done)
		{
			if (bms_equal((Relids) lfirst(lc2), required_outer))
				seen = true;
		}
		if (seen)
			continue;
		done = lappend(done, required_outer);

		(void) get_baserel_parampathinfo(root, baserel, required_outer);
		private = list_make2(makeInteger(LSMFDW_ACCESS_KEY_LOOKUP), rinfo);
		add_path(baserel, (Path *)
				 create_foreignscan_path(root, baserel, NULL, 1.0,
										 baserel->baserestrictcost.startup,
										 lookup_cost, NIL, required_outer,
										 NULL, private));
	}
}

/*
 * Key lookup: evaluates the value, encodes it as a key and looks it up in
 * the pending writes the scan sees, then in the store.  Leaves slot empty if
 * the value is null, cannot be a key, or is absent.
 */
static void
lookup_row(ForeignScanState *node, LsmFdwScanState *st, TupleTableSlot *slot)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	LsmFdwPendingRow pending;
	Datum		value;
	bool		isnull;
	char	   *row;
	size_t		rowlen;

	value = ExecEvalExpr(st->key_state, econtext, &isnull);
	if (isnull)
		return;
	resetStringInfo(&st->keybuf);
	if (!LsmFdwEncodeKey(st->table, value, st->key_valtype, &st->keybuf))
		return;

	if (LsmFdwPendingLookup(st->table->relid, st->keybuf.data,
							st->keybuf.len, st->curcid, &pending, NULL))
	{
		if (!pending.is_delete)
			store_row(st, slot, pending.key, pending.klen,
					  pending.val, pending.vlen);
		return;
	}
	if (LsmFdwGet(st->store, st->table->relname, st->keybuf.data,
				  st->keybuf.len, &row, &rowlen))
		store_row(st, slot, st->keybuf.data, st->keybuf.len, row, rowlen);
}

/*
 * Full scan: stores the next row in slot, merging the committed rows (the
 * iterator) with the pending writes the scan sees (a sorted array), the
 * pending write winning on equal keys; leaves slot empty at the end.
 */
static void
next_row(LsmFdwScanState *st, TupleTableSlot *slot)
{
	int			rc;

	if (!st->started)
	{
		if (!st->pending_ready)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(GetMemoryChunkContext(st));

			st->pending = LsmFdwPendingVisible(st->table->relid, st->curcid,
											   &st->npending);
			st->pending_ready = true;
			MemoryContextSwitchTo(oldcxt);
		}
		if (st->iter == NULL &&
			(rc = lsm_iter_open(st->store->db, &st->iter)) != LSM_OK)
			LsmFdwReportError(rc, st->store->db, st->table->relname, "read");
		lsm_iter_seek(st->iter, NULL, 0);
		st->ppos = 0;
		st->started = true;
	}

	for (;;)
	{
		bool		have_iter = lsm_iter_valid(st->iter);
		bool		have_pending = st->ppos < st->npending;
		const char *key = NULL;
		size_t		klen = 0;
		int			cmp = 0;
		LsmFdwPendingRow *p;

		if (!have_iter && (rc = lsm_iter_status(st->iter)) != LSM_OK)
			LsmFdwReportError(rc, st->store->db, st->table->relname, "read");
		if (!have_iter && !have_pending)
			return;

		if (have_iter)
			key = lsm_iter_key(st->iter, &klen);
		if (have_iter && have_pending)
		{
			p = &st->pending[st->ppos];
			cmp = memcmp(key, p->key, Min(klen, p->klen));
			if (cmp == 0)
				cmp = (klen > p->klen) - (klen < p->klen);
		}

		if (have_iter && (!have_pending || cmp < 0))
		{
			const char *row;
			size_t		rowlen;

			row = lsm_iter_value(st->iter, &rowlen);
			store_row(st, slot, key, klen, row, rowlen);	/* copies */
			lsm_iter_next(st->iter);
			return;
		}

		/* a pending write, alone or replacing the committed row */
		p = &st->pending[st->ppos++];
		if (have_iter && cmp == 0)
			lsm_iter_next(st->iter);
		if (p->is_delete)
			continue;
		store_row(st, slot, p->key, p->klen, p->val, p->vlen);
		return;
	}
}

/* Decodes an entry into slot as a virtual tuple (current memory context). */
static void
store_row(LsmFdwScanState *st, TupleTableSlot *slot, const char *key,
		  size_t klen, const char *row, size_t rowlen)
{
	LsmFdwDecodeRow(st->table, key, klen, row, rowlen, st->needed,
					slot->tts_values, slot->tts_isnull);
	ExecStoreVirtualTuple(slot);
}

/*
 * Closes the scan's iterator and unpins its store, once: called by
 * EndForeignScan, or by the reset callback of the query's memory context
 * when an error ends the query.  Raises no error.
 */
static void
release_scan(void *arg)
{
	LsmFdwScanState *st = (LsmFdwScanState *) arg;

	if (st->released)
		return;
	st->released = true;
	if (st->iter != NULL)
	{
		lsm_iter_close(st->iter);
		st->iter = NULL;
	}
	if (st->store != NULL)
		LsmFdwUnpinStore(st->store);
}

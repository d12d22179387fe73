/*-------------------------------------------------------------------------
 *
 * plan.c
 *		  Planning of scans of lsm_fdw foreign tables: which quals an access
 *		  path can serve, what each path costs, and the ForeignScan.
 *
 * Access paths (LsmFdwAccess; scan.c carries them out):
 *
 *	key lookup		"key = value": one lsm_get.  The value is a constant, a
 *					Param (prepared statements' generic plans) or, in a
 *					parameterized path, a column of another relation of a
 *					join ("key = outer.col", from a join clause or an
 *					equivalence class).  "ctid = value" too, where rows
 *					have a ctid: it is their key (codec.c).
 *	key list		"key IN (...)", "key = ANY(array)": the distinct keys
 *					sorted, one lsm_multi_get.  "ctid = ANY(array)" too.
 *	key range		"key < value", "<=", ">", ">=", BETWEEN: a seek to the
 *					lower bound, then entries in key order up to the upper.
 *					In a parameterized path, the values of a key list and
 *					the bounds of a range may be other relations' columns
 *					too ("key IN (outer.a, outer.b)", "key > outer.col").
 *	value search	"col = value" on a value-indexed column: the engine's
 *					value search (Bloom filter hierarchy) instead of reading
 *					every SSTable.  Also parameterized by a join clause.
 *	full scan		every entry, in key order.
 *
 * Full scans, ranges and key lists return rows in key order, which is the
 * key type's btree order (codec.c; for text, only under the "C"
 * collation), or in descending key order: their paths carry the pathkey of
 * ORDER BY key [DESC] when the query wants it, so that no Sort is needed
 * and a LIMIT stops the scan early.
 *
 * A value is usable if it does not depend on the scanned table and is not
 * volatile, the operator is of the key's (column's) btree operator family,
 * and the value's type can be encoded like the column: its own type, an
 * integer of another width, text for varchar.  A collatable column
 * compared under a nondeterministic collation is never looked up (equal
 * strings may have different bytes).
 *
 * A key lookup, a key list and a key range return exactly the rows that
 * their quals select (for a range, codec.c's LsmFdwEncodeKeyBound turns
 * each bound into an exact one: exclusive or inclusive, or none, or an
 * empty range), so those quals leave the plan's qual list, as postgres_fdw
 * leaves out the conditions the remote server checks; they go to
 * fdw_recheck_quals, for EvalPlanQual, and EXPLAIN shows them as "LSM
 * Cond".  The executor checks the others on every row the path returns,
 * the equality of a value search included.  So the answer is always that of
 * a native table with the same rows, and a list of 100,000 keys is not
 * compared with every row it returns.
 *
 * LATERAL: a relation that refers to columns of others (a lateral subquery
 * pulled up into the query) can only be scanned with their values at hand,
 * so every path is parameterized by at least baserel->lateral_relids, as
 * postgres_fdw's and file_fdw's are; without it the executor would
 * evaluate those columns against the scanned table's own row.
 *
 * Parallel query: a full scan, a key range and a value search also have a
 * partial, parallel-aware path (add_partial_path) whose participants split
 * the store's key ranges (the search's units) (scan.c), costed as a
 * parallel sequential scan is: the CPU cost divided among them, the reads
 * not.  Every other path reads
 * everything by itself and is not parallel safe, since a worker running it
 * would read its own snapshot of the store and none of the transaction's
 * pending writes; a table the transaction has written to has no parallel
 * path at all (IsForeignScanParallelSafe).
 *
 * Costs: pages are read through the page cache (mmap), at seq_page_cost.
 * A lookup reads about one block; a full scan every page and every entry; a
 * range the fraction of both that its quals select; a value search the
 * blocks the engine's estimate names (lsm_value_search_estimate runs the
 * filter probes for a constant; for a Param, the rows the statistics
 * expect), plus a scan of the memtable and a check of each row found
 * against newer versions.  The GUC lsm_fdw.value_search forces a strategy
 * (the value search is then the only path where one applies) or turns the
 * value search off.
 *
 * src/fdw/plan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/typcache.h"

#include "lsm_fdw.h"

/* lsm_fdw.value_search: LSMFDW_VALUE_SEARCH_OFF or an LSM_SEARCH_* */
int			lsm_fdw_value_search = LSM_SEARCH_AUTO;

static const struct config_enum_entry value_search_options[] = {
	{"auto", LSM_SEARCH_AUTO, false},
	{"hierarchy", LSM_SEARCH_TREE, false},
	{"tree", LSM_SEARCH_TREE, true},
	{"flat", LSM_SEARCH_FLAT, false},
	{"leaves", LSM_SEARCH_LEAVES, false},
	{"scan", LSM_SEARCH_SCAN, false},
	{"off", LSMFDW_VALUE_SEARCH_OFF, false},
	{NULL, 0, false}
};

/*
 * A row found by a value search is checked against newer versions of its
 * key: a key filter probe per newer table, in cpu_operator_cost units.
 */
#define VALIDATION_PROBES	4.0

/* Planner state of a foreign table: RelOptInfo.fdw_private */
typedef struct LsmFdwRelInfo
{
	LsmFdwTable *table;
	LsmFdwStore *store;			/* for estimates (not pinned) */
	double		entries;		/* entries in the store: rows and, until
								 * compaction, shadowed versions */
	double		pages;			/* the store's size in BLCKSZ pages */
	double		memtable_entries;
	double		files;			/* SSTables */
	List	   *key_rinfos;		/* restrictions "key = value", one per key
								 * column in key order, or NIL */
	Cost		startup;		/* of every path: the quals' startup cost */
	Cost		per_tuple;		/* per row returned or examined */
} LsmFdwRelInfo;

/* A qual "column op value" of the scanned relation */
typedef struct ColumnQual
{
	RestrictInfo *rinfo;
	AttrNumber	attno;
	Oid			opno;			/* with the column on the left */
	Expr	   *value;
	Oid			valtype;		/* base type of value */
} ColumnQual;

static void estimate_store(LsmFdwRelInfo *info);
static bool match_column_qual(PlannerInfo *root, RelOptInfo *baserel,
							  RestrictInfo *rinfo, ColumnQual *q);
static bool is_column_var(Node *node, Index relid, AttrNumber *attno);
static bool value_type_ok(const LsmFdwColumn *col, Oid valtype);
static Oid	btree_family(const LsmFdwColumn *col);
static int	column_strategy(const LsmFdwColumn *col, Oid opno);
static List *key_equality_rinfos(PlannerInfo *root, RelOptInfo *baserel,
								 const LsmFdwTable *t);
static int	key_part_equality(const LsmFdwTable *t, const ColumnQual *q,
							  Oid inputcollid);
static int	key_prefix_equalities(PlannerInfo *root, RelOptInfo *baserel,
								  const LsmFdwTable *t, List *rinfos,
								  RestrictInfo **eq);
static bool is_key_operand(const LsmFdwTable *t, AttrNumber attno);
static bool key_equality_ok(const LsmFdwTable *t, const ColumnQual *q,
							Oid inputcollid);
static bool key_range_ok(const LsmFdwTable *t, const ColumnQual *q,
						 Oid inputcollid, int *strategy);
static bool key_part_range_ok(const LsmFdwTable *t, const ColumnQual *q,
							  Oid inputcollid, int k, int *strategy);
static List *composite_key_pathkeys(PlannerInfo *root, RelOptInfo *baserel,
									const LsmFdwTable *t, int strategy);
static bool value_search_ok(const LsmFdwTable *t, const ColumnQual *q,
							Oid inputcollid);
static Expr *key_part_array(PlannerInfo *root, RelOptInfo *baserel,
							const LsmFdwTable *t, Expr *clause, int *k,
							double *nkeys);
static List *composite_key_list(PlannerInfo *root, RelOptInfo *baserel,
								const LsmFdwTable *t, double *nkeys);
static bool key_rows_list(PlannerInfo *root, RelOptInfo *baserel,
						  const LsmFdwTable *t, RestrictInfo *rinfo,
						  List **values, double *nkeys);
static Expr *key_list_array(PlannerInfo *root, RelOptInfo *baserel,
							const LsmFdwTable *t, Expr *clause,
							double *nkeys);
static List *key_order_pathkeys(PlannerInfo *root, RelOptInfo *baserel,
								const LsmFdwTable *t);
static void add_key_list_path(PlannerInfo *root, RelOptInfo *baserel,
							  LsmFdwRelInfo *info, List *pathkeys);
static void add_range_path(PlannerInfo *root, RelOptInfo *baserel,
						   LsmFdwRelInfo *info, List *pathkeys);
static bool add_value_search_path(PlannerInfo *root, RelOptInfo *baserel,
								  LsmFdwRelInfo *info);
static Cost value_search_cost(LsmFdwRelInfo *info, const ColumnQual *q,
							  double rows, double *blocks);
static bool key_member_matches(PlannerInfo *root, RelOptInfo *rel,
							   EquivalenceClass *ec, EquivalenceMember *em,
							   void *arg);
static void add_parameterized_paths(PlannerInfo *root, RelOptInfo *baserel,
									LsmFdwRelInfo *info, List *pathkeys);
static void add_composite_parameterized_path(PlannerInfo *root,
											 RelOptInfo *baserel,
											 LsmFdwRelInfo *info,
											 List *pathkeys);
static bool key_column_matches(PlannerInfo *root, RelOptInfo *rel,
							   EquivalenceClass *ec, EquivalenceMember *em,
							   void *arg);
static List *key_range_restrictions(PlannerInfo *root, RelOptInfo *baserel,
									const LsmFdwTable *t, int *nexact);
static Cost range_cost(LsmFdwRelInfo *info, Selectivity sel);
static void add_partial_scan_path(PlannerInfo *root, RelOptInfo *baserel,
								  LsmFdwRelInfo *info, double pages, Cost cpu,
								  LsmFdwAccess access, List *rinfos);
static void add_scan_path(PlannerInfo *root, RelOptInfo *baserel,
						  LsmFdwRelInfo *info, double rows, Cost run,
						  List *pathkeys, Relids required_outer,
						  LsmFdwAccess access, List *rinfos);
static bool is_served(RestrictInfo *rinfo, List *served);

/* Defines the GUCs of the planner (from _PG_init). */
void
LsmFdwDefinePlannerGUCs(void)
{
	DefineCustomEnumVariable("lsm_fdw.value_search",
							 "How equality on a non-key column searches an lsm_fdw table.",
							 "auto chooses by cost between a value search and a full scan, "
							 "and lets the engine pick the search's strategy; hierarchy, flat, "
							 "leaves and scan force a value search with that strategy; off "
							 "never searches by value.",
							 &lsm_fdw_value_search,
							 LSM_SEARCH_AUTO,
							 value_search_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("lsm_fdw.aggregate_pushdown",
							 "Whether a scan of an lsm_fdw table computes the query's GROUP BY and aggregates.",
							 "on lets the planner choose a foreign scan that aggregates a whole "
							 "table in place (count, sum, min, max by columns; see the user guide) "
							 "where it is cheaper; off always aggregates in the executor.",
							 &lsm_fdw_aggregate_pushdown,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

/* The name of value search strategy s (an LSM_SEARCH_*), for EXPLAIN. */
const char *
LsmFdwStrategyName(int s)
{
	const struct config_enum_entry *e;

	for (e = value_search_options; e->name != NULL; e++)
		if (e->val == s && !e->hidden)
			return e->name;
	return "unknown";
}

/*
 * Resolves the table (key column, options: errors surface here, at
 * planning), reads the store's size and looks for a restriction "key =
 * value"; estimates the rows: at most one with such a restriction, else
 * the store's entries times the quals' selectivity.
 */
void
LsmFdwGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
						Oid foreigntableid)
{
	LsmFdwRelInfo *info = palloc0(sizeof(LsmFdwRelInfo));
	Relation	rel;
	double		rows;

	rel = table_open(foreigntableid, NoLock);
	info->table = LsmFdwGetTable(rel);
	table_close(rel, NoLock);
	estimate_store(info);

	info->key_rinfos = key_equality_rinfos(root, baserel, info->table);

	baserel->tuples = info->entries;
	rows = info->entries *
		clauselist_selectivity(root, baserel->baserestrictinfo, 0,
							   JOIN_INNER, NULL);
	if (info->key_rinfos != NIL)
		rows = Min(rows, 1.0);
	baserel->rows = clamp_row_est(rows);
	baserel->fdw_private = info;
}

/*
 * Adds the access paths (see the file header).  A key lookup is never
 * worse than anything else, so it is the only path when a restriction
 * allows one; a forced value search strategy likewise.  Otherwise the full
 * scan (ordered if the query wants key order), a key list, a range and a
 * value search compete by cost, and key lookups and value searches
 * parameterized by join clauses are added for nested loops.  Every path is
 * parameterized by the relations the table's lateral references need.
 */
void
LsmFdwGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
					  Oid foreigntableid)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) baserel->fdw_private;
	List	   *pathkeys;
	Cost		full;

	info->startup = baserel->baserestrictcost.startup;
	info->per_tuple = cpu_tuple_cost + baserel->baserestrictcost.per_tuple;

	if (info->key_rinfos != NIL)
	{
		add_scan_path(root, baserel, info, baserel->rows,
					  seq_page_cost + info->per_tuple, NIL,
					  baserel->lateral_relids, LSMFDW_ACCESS_KEY_LOOKUP,
					  info->key_rinfos);
		return;
	}

	if (lsm_fdw_value_search != LSM_SEARCH_AUTO &&
		lsm_fdw_value_search != LSMFDW_VALUE_SEARCH_OFF &&
		add_value_search_path(root, baserel, info))
		return;

	pathkeys = key_order_pathkeys(root, baserel, info->table);
	full = seq_page_cost * info->pages + info->per_tuple * info->entries;
	add_scan_path(root, baserel, info, baserel->rows, full, NIL,
				  baserel->lateral_relids, LSMFDW_ACCESS_FULL_SCAN, NIL);
	add_partial_scan_path(root, baserel, info, info->pages,
						  info->per_tuple * info->entries,
						  LSMFDW_ACCESS_FULL_SCAN, NIL);
	if (pathkeys != NIL)
		add_scan_path(root, baserel, info, baserel->rows, full, pathkeys,
					  baserel->lateral_relids, LSMFDW_ACCESS_FULL_SCAN, NIL);
	add_key_list_path(root, baserel, info, pathkeys);
	add_range_path(root, baserel, info, pathkeys);
	if (lsm_fdw_value_search != LSMFDW_VALUE_SEARCH_OFF)
		(void) add_value_search_path(root, baserel, info);
	add_parameterized_paths(root, baserel, info, pathkeys);
}

/*
 * Makes the ForeignScan of the chosen path.  The values the access needs
 * go to fdw_exprs (where the planner replaces other relations' columns by
 * the nested loop's Params).  The quals the access serves exactly (a key
 * lookup's, a key list's, a range's bounds; see the file header) go to
 * fdw_recheck_quals, the others to the plan's qual list.
 */
ForeignScan *
LsmFdwGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
					 Oid foreigntableid, ForeignPath *best_path,
					 List *tlist, List *scan_clauses, Plan *outer_plan)
{
	LsmFdwRelInfo *info;
	LsmFdwTable *t;
	LsmFdwAccess access;
	List	   *rinfos;
	List	   *served = NIL;
	List	   *quals = NIL;
	List	   *recheck = NIL;
	List	   *fdw_exprs = NIL;
	List	   *bounds = NIL;
	List	   *attrs = NIL;
	List	   *private;
	AttrNumber	column;
	int			strategy = LSM_SEARCH_AUTO;
	Bitmapset  *used = NULL;
	bool		whole_row;
	bool		ctid;
	ListCell   *lc;
	int			i;

	if (IS_UPPER_REL(baserel))
		return LsmFdwGetAggregatePlan(root, best_path, tlist, outer_plan);
	info = (LsmFdwRelInfo *) baserel->fdw_private;
	t = info->table;
	column = t->keyattno;
	access = intVal(linitial(best_path->fdw_private));
	rinfos = lsecond(best_path->fdw_private);
	switch (access)
	{
		case LSMFDW_ACCESS_FULL_SCAN:
		case LSMFDW_ACCESS_AGGREGATE:	/* a path of the grouped rel: above */
			break;
		case LSMFDW_ACCESS_KEY_LOOKUP:
		case LSMFDW_ACCESS_VALUE_SEARCH:
			/* a lookup's values: one per key column, in key order */
			foreach(lc, rinfos)
			{
				ColumnQual	q;

				if (!match_column_qual(root, baserel,
									   lfirst_node(RestrictInfo, lc), &q))
					elog(ERROR, "lsm_fdw: qual of the access no longer matches");
				fdw_exprs = lappend(fdw_exprs, copyObject(q.value));
				column = q.attno;
			}
			if (access == LSMFDW_ACCESS_KEY_LOOKUP)
			{
				served = rinfos;
				column = t->keyattno;
			}
			else
				strategy = lsm_fdw_value_search == LSMFDW_VALUE_SEARCH_OFF
					? LSM_SEARCH_AUTO : lsm_fdw_value_search;
			break;
		case LSMFDW_ACCESS_KEY_LIST:
			/*
			 * An array; for a composite key, one value or array per key
			 * column in key order, or the rows of a row list one after
			 * another
			 */
			if (t->nkeys > 1 && list_length(rinfos) == 1)
			{
				double		nkeys;

				if (!key_rows_list(root, baserel, t,
								   linitial_node(RestrictInfo, rinfos),
								   &fdw_exprs, &nkeys))
					elog(ERROR, "lsm_fdw: key list qual no longer matches");
				served = rinfos;
				break;
			}
			foreach(lc, rinfos)
			{
				RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
				double		nkeys;
				int			k;
				Expr	   *value;
				ColumnQual	q;

				value = key_part_array(root, baserel, t, rinfo->clause, &k,
									   &nkeys);
				if (value == NULL && t->nkeys > 1 &&
					match_column_qual(root, baserel, rinfo, &q))
					value = q.value;
				if (value == NULL)
					elog(ERROR, "lsm_fdw: key list qual no longer matches");
				fdw_exprs = lappend(fdw_exprs, copyObject(value));
			}
			served = rinfos;
			break;
		case LSMFDW_ACCESS_KEY_RANGE:
			bounds = LsmFdwRangeBounds(root, baserel, rinfos, &fdw_exprs,
									   &served);
			break;
	}

	foreach(lc, scan_clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			continue;			/* the planner checks those itself */
		if (is_served(rinfo, served))
			recheck = lappend(recheck, rinfo->clause);
		else
			quals = lappend(quals, rinfo->clause);
	}

	/* the attributes the plan uses: the others need not be decoded */
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &used);
	pull_varattnos((Node *) quals, baserel->relid, &used);
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, used);
	ctid = bms_is_member(SelfItemPointerAttributeNumber -
						 FirstLowInvalidHeapAttributeNumber, used);
	if (ctid && !LsmFdwKeyHasCtid(t))
		LsmFdwReportNoCtid(t, NULL, 0);
	for (i = 1; i <= t->natts; i++)
	{
		if (whole_row ||
			bms_is_member(i - FirstLowInvalidHeapAttributeNumber, used))
			attrs = lappend_int(attrs, i);
	}

	/* in the order of enum LsmFdwScanPrivate */
	private = list_make4(makeInteger(access),
						 makeString(column == t->keyattno && t->nkeys > 1 ?
									LsmFdwKeyColumnNames(t) :
									pstrdup(t->cols[column - 1].name)),
						 attrs, bounds);
	private = lappend(private, makeInteger(t->cols[column - 1].field));
	private = lappend(private, makeInteger(strategy));
	private = lappend(private, makeInteger(ctid));
	private = lappend(private, lthird(best_path->fdw_private));	/* backward */
	return make_foreignscan(tlist, quals, baserel->relid, fdw_exprs,
							private, NIL, recheck, outer_plan);
}

/*
 * ReparameterizeForeignPathByChild: a path parameterized by a partitioned
 * table, translated for a nested loop over one of its partitions
 * (partitionwise joins): its RestrictInfos name the partition's columns.
 */
List *
LsmFdwReparameterizePath(PlannerInfo *root, List *fdw_private,
						 RelOptInfo *child_rel)
{
	Node	   *rinfos = lsecond(fdw_private);

	rinfos = adjust_appendrel_attrs_multilevel(root, rinfos,
											   child_rel->relids,
											   child_rel->top_parent_relids);
	return list_make3(linitial(fdw_private), rinfos, lthird(fdw_private));
}

/*
 * For a base relation that LsmFdwGetForeignRelSize planned: its table and
 * its store's size in pages and entries.  False for any other relation.
 */
bool
LsmFdwRelStore(RelOptInfo *rel, LsmFdwTable **t, double *pages,
			   double *entries)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) rel->fdw_private;

	if (info == NULL || (rel->reloptkind != RELOPT_BASEREL &&
						 rel->reloptkind != RELOPT_OTHER_MEMBER_REL))
		return false;
	*t = info->table;
	*pages = info->pages;
	*entries = info->entries;
	return true;
}

/* Reads the size of info's store (store.c). */
static void
estimate_store(LsmFdwRelInfo *info)
{
	LsmFdwStore *s = LsmFdwOpenStore(info->table, false);
	LsmFdwStoreSize size = LsmFdwGetStoreSize(s, info->table->relname);

	info->store = s;
	info->entries = size.entries;
	info->memtable_entries = size.memtable_entries;
	info->files = size.files;
	info->pages = Max(1.0, ceil(size.bytes / BLCKSZ));
}

/*
 * If rinfo's clause is "column op value" or "value op column" on a column
 * of baserel, with a binary operator and a value that does not reference
 * baserel and has no volatile function or subplan, fills *q (the operator
 * commuted if the column was on the right) and returns true.
 */
static bool
match_column_qual(PlannerInfo *root, RelOptInfo *baserel, RestrictInfo *rinfo,
				  ColumnQual *q)
{
	OpExpr	   *op;
	Node	   *value;

	if (!IsA(rinfo->clause, OpExpr))
		return false;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2)
		return false;
	q->rinfo = rinfo;
	q->opno = op->opno;
	if (is_column_var(linitial(op->args), baserel->relid, &q->attno))
		value = lsecond(op->args);
	else if (is_column_var(lsecond(op->args), baserel->relid, &q->attno))
	{
		value = linitial(op->args);
		q->opno = get_commutator(op->opno);
		if (!OidIsValid(q->opno))
			return false;
	}
	else
		return false;

	if (bms_is_member(baserel->relid, pull_varnos(root, value)) ||
		contain_volatile_functions(value) ||
		contain_subplans(value))
		return false;
	q->value = (Expr *) value;
	q->valtype = getBaseType(exprType(value));
	return true;
}

/*
 * Whether node is a column (relabelled or not) or the ctid of relation
 * relid; sets *attno if so (SelfItemPointerAttributeNumber for ctid).
 */
static bool
is_column_var(Node *node, Index relid, AttrNumber *attno)
{
	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL || !IsA(node, Var) ||
		((Var *) node)->varno != relid ||
		((Var *) node)->varlevelsup != 0 ||
		(((Var *) node)->varattno <= 0 &&
		 ((Var *) node)->varattno != SelfItemPointerAttributeNumber))
		return false;
	*attno = ((Var *) node)->varattno;
	return true;
}

/*
 * Whether attribute attno of table t (ctid: SelfItemPointerAttributeNumber)
 * stands for the key: it is the key, or the ctid of rows that have one.
 */
static bool
is_key_operand(const LsmFdwTable *t, AttrNumber attno)
{
	return t->nkeys == 1 &&
		(attno == t->keyattno ||
		 (attno == SelfItemPointerAttributeNumber && LsmFdwKeyHasCtid(t)));
}

/*
 * Whether a value of base type valtype can be encoded like column col (the
 * key or a field): the column's own type, an integer of another width for
 * an integer column, text or varchar for a text column.
 */
static bool
value_type_ok(const LsmFdwColumn *col, Oid valtype)
{
	switch (col->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
			return valtype == INT2OID || valtype == INT4OID ||
				valtype == INT8OID;
		case LSMFDW_CODEC_TEXT:
			return valtype == TEXTOID || valtype == VARCHAROID;
		default:
			return valtype == col->basetypid;
	}
}

/*
 * The btree operator family of the default operator class of col's type
 * (from the type cache: planning runs for every statement), or InvalidOid.
 */
static Oid
btree_family(const LsmFdwColumn *col)
{
	return lookup_type_cache(col->basetypid,
							 TYPECACHE_BTREE_OPFAMILY)->btree_opf;
}

/*
 * The strategy of operator opno (column on the left) in the btree operator
 * family of col's type, or 0 if it has none there.
 */
static int
column_strategy(const LsmFdwColumn *col, Oid opno)
{
	Oid			opfamily = btree_family(col);

	if (!OidIsValid(opfamily))
		return 0;
	return get_op_opfamily_strategy(opno, opfamily);
}

/*
 * The restrictions of baserel that make a key lookup: "key = value" (or
 * "ctid = value") for a one-column key, one "column = value" per key
 * column for a composite key, in key order; NIL if there are none.
 */
static List *
key_equality_rinfos(PlannerInfo *root, RelOptInfo *baserel,
					const LsmFdwTable *t)
{
	RestrictInfo *eq[LSMFDW_MAX_KEYS];
	List	   *rinfos = NIL;
	ListCell   *lc;
	int			k;

	if (t->nkeys == 1)
	{
		foreach(lc, baserel->baserestrictinfo)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
			ColumnQual	q;

			if (match_column_qual(root, baserel, rinfo, &q) &&
				key_equality_ok(t, &q, ((OpExpr *) rinfo->clause)->inputcollid))
				return list_make1(rinfo);
		}
		return NIL;
	}
	if (key_prefix_equalities(root, baserel, t, baserel->baserestrictinfo,
							  eq) < t->nkeys)
		return NIL;
	for (k = 0; k < t->nkeys; k++)
		rinfos = lappend(rinfos, eq[k]);
	return rinfos;
}

/*
 * Sets eq[k], for each key column k of t, to the first of rinfos that is
 * "column k = value" a lookup answers (key_part_equality), or NULL; returns
 * how many leading key columns have one (the prefix they make).
 */
static int
key_prefix_equalities(PlannerInfo *root, RelOptInfo *baserel,
					  const LsmFdwTable *t, List *rinfos, RestrictInfo **eq)
{
	ListCell   *lc;
	int			prefix;

	memset(eq, 0, sizeof(RestrictInfo *) * t->nkeys);
	foreach(lc, rinfos)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		ColumnQual	q;
		int			k;

		if (!match_column_qual(root, baserel, rinfo, &q))
			continue;
		k = key_part_equality(t, &q, ((OpExpr *) rinfo->clause)->inputcollid);
		if (k >= 0 && eq[k] == NULL)
			eq[k] = rinfo;
	}
	for (prefix = 0; prefix < t->nkeys && eq[prefix] != NULL; prefix++)
		;
	return prefix;
}

/*
 * If q is "column = value" on key column k of t, and a lookup of the
 * encoded value answers it, returns k; else -1.
 */
static int
key_part_equality(const LsmFdwTable *t, const ColumnQual *q, Oid inputcollid)
{
	int			k = q->attno > 0 ? LsmFdwKeyIndex(t, q->attno) : -1;
	const LsmFdwColumn *col;

	if (k < 0)
		return -1;
	col = &t->cols[q->attno - 1];
	/* (a key's collation is deterministic: option.c refuses others) */
	if (value_type_ok(col, q->valtype) &&
		column_strategy(col, q->opno) == BTEqualStrategyNumber &&
		(!OidIsValid(inputcollid) ||
		 get_collation_isdeterministic(inputcollid)))
		return k;
	return -1;
}

/*
 * Whether q is "key = value" (or "ctid = value") and a lookup of the
 * encoded value answers it.
 */
static bool
key_equality_ok(const LsmFdwTable *t, const ColumnQual *q, Oid inputcollid)
{
	if (t->nkeys != 1)
		return false;			/* a composite key: key_equality_rinfos */
	if (q->attno == SelfItemPointerAttributeNumber)
		return is_key_operand(t, q->attno) && q->valtype == TIDOID &&
			q->opno == TIDEqualOperator;
	return key_part_equality(t, q, inputcollid) == 0;
}

/*
 * Whether q is a bound "key < value" (<=, >, >=) that a scan in key order
 * can serve: the key's byte order must be the operator's order, which for
 * text keys holds under the "C" collation only.  Sets *strategy.
 */
static bool
key_range_ok(const LsmFdwTable *t, const ColumnQual *q, Oid inputcollid,
			 int *strategy)
{
	return t->nkeys == 1 && key_part_range_ok(t, q, inputcollid, 0, strategy);
}

/*
 * Whether q is a bound "column < value" (<=, >, >=) of key column k of t
 * that a scan in key order can serve (see key_range_ok).  Sets *strategy.
 */
static bool
key_part_range_ok(const LsmFdwTable *t, const ColumnQual *q, Oid inputcollid,
				  int k, int *strategy)
{
	const LsmFdwColumn *key = &t->cols[t->keyattnos[k] - 1];

	if (q->attno != t->keyattnos[k] || !value_type_ok(key, q->valtype))
		return false;
	*strategy = column_strategy(key, q->opno);
	if (*strategy == 0 || *strategy == BTEqualStrategyNumber)
		return false;
	return key->codec != LSMFDW_CODEC_TEXT || lc_collate_is_c(inputcollid);
}

/*
 * Whether q is "column = value" on a non-key column a value search answers:
 * its bytes are canonical and in the value filters, and the operator is its
 * type's btree equality under a deterministic collation.
 */
static bool
value_search_ok(const LsmFdwTable *t, const ColumnQual *q, Oid inputcollid)
{
	const LsmFdwColumn *col;

	if (q->attno <= 0 || q->attno == t->keyattno)
		return false;
	col = &t->cols[q->attno - 1];
	return !col->dropped && col->canonical &&
		col->field >= 0 && col->field < 64 &&
		(t->opts.value_unindexed & ((uint64) 1 << col->field)) == 0 &&
		value_type_ok(col, q->valtype) &&
		column_strategy(col, q->opno) == BTEqualStrategyNumber &&
		(!OidIsValid(inputcollid) ||
		 get_collation_isdeterministic(inputcollid));
}

/*
 * If clause is "key IN (...)" or "key = ANY(array)" (or "ctid = ANY
 * (array)") that a multi-get answers, returns the array expression and
 * sets *nkeys to the number of elements (a guess if unknown before
 * execution); else NULL.  For a composite key, the same of key column k
 * (*k set), one part of the keys (composite_key_list).
 */
static Expr *
key_list_array(PlannerInfo *root, RelOptInfo *baserel, const LsmFdwTable *t,
			   Expr *clause, double *nkeys)
{
	int			k;

	return t->nkeys == 1 ?
		key_part_array(root, baserel, t, clause, &k, nkeys) : NULL;
}

static Expr *
key_part_array(PlannerInfo *root, RelOptInfo *baserel, const LsmFdwTable *t,
			   Expr *clause, int *k, double *nkeys)
{
	ScalarArrayOpExpr *saop;
	const LsmFdwColumn *key;
	AttrNumber	attno;
	Node	   *array;
	Oid			elemtype;

	if (!IsA(clause, ScalarArrayOpExpr))
		return NULL;
	saop = (ScalarArrayOpExpr *) clause;
	if (!saop->useOr || list_length(saop->args) != 2 ||
		!is_column_var(linitial(saop->args), baserel->relid, &attno))
		return NULL;
	if (attno == SelfItemPointerAttributeNumber)
	{
		if (!is_key_operand(t, attno))
			return NULL;
		*k = 0;
	}
	else if ((*k = LsmFdwKeyIndex(t, attno)) < 0)
		return NULL;
	key = &t->cols[t->keyattnos[*k] - 1];
	array = lsecond(saop->args);
	elemtype = get_element_type(getBaseType(exprType(array)));
	if (!OidIsValid(elemtype))
		return NULL;
	if (attno == SelfItemPointerAttributeNumber
		? (getBaseType(elemtype) != TIDOID || saop->opno != TIDEqualOperator)
		: (!value_type_ok(key, getBaseType(elemtype)) ||
		   column_strategy(key, saop->opno) != BTEqualStrategyNumber ||
		   (OidIsValid(saop->inputcollid) &&
			!get_collation_isdeterministic(saop->inputcollid))))
		return NULL;
	if (bms_is_member(baserel->relid, pull_varnos(root, array)) ||
		contain_volatile_functions(array) || contain_subplans(array))
		return NULL;

	*nkeys = 10;				/* a Param's array */
	if (IsA(array, Const) && !((Const *) array)->constisnull)
	{
		ArrayType  *a = DatumGetArrayTypeP(((Const *) array)->constvalue);

		*nkeys = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
	}
	else if (IsA(array, ArrayExpr))
		*nkeys = list_length(((ArrayExpr *) array)->elements);
	return (Expr *) array;
}

/*
 * If rinfo is an OR of rows of equalities on every key column of
 * composite-key table t, as PostgreSQL writes "(a, b) IN ((1, 2), (3, 4))"
 * (each arm "a = 1 AND b = 2", a value per key column), appends each
 * arm's values in key order to *values (if not NULL), sets *nkeys to the
 * arms and returns true.
 */
static bool
key_rows_list(PlannerInfo *root, RelOptInfo *baserel, const LsmFdwTable *t,
			  RestrictInfo *rinfo, List **values, double *nkeys)
{
	ListCell   *lc;

	if (!restriction_is_or_clause(rinfo))
		return false;
	*nkeys = 0;
	foreach(lc, ((BoolExpr *) rinfo->orclause)->args)
	{
		Node	   *arm = lfirst(lc);
		List	   *conds = NIL;
		RestrictInfo *eq[LSMFDW_MAX_KEYS];
		ListCell   *lc2;
		int			k;

		/* the arm's conditions, as restrictions key_prefix_equalities reads */
		if (is_andclause(arm))
		{
			foreach(lc2, ((BoolExpr *) arm)->args)
			{
				if (!IsA(lfirst(lc2), RestrictInfo))
					return false;
				conds = lappend(conds, lfirst(lc2));
			}
		}
		else if (IsA(arm, RestrictInfo))
			conds = list_make1(arm);
		else
			return false;
		if (list_length(conds) != t->nkeys ||
			key_prefix_equalities(root, baserel, t, conds, eq) < t->nkeys)
			return false;
		for (k = 0; values != NULL && k < t->nkeys; k++)
		{
			ColumnQual	q;

			(void) match_column_qual(root, baserel, eq[k], &q);
			*values = lappend(*values, copyObject(q.value));
		}
		*nkeys += 1;
	}
	return *nkeys > 0;
}

/*
 * For a composite key: the restrictions that make a key list, one per key
 * column in key order, each "column = value" or "column = ANY(array)"
 * (IN), at least one a list; the keys are every combination of their
 * values (*nkeys: how many, a guess for Params).  NIL if some key column
 * has neither.
 */
static List *
composite_key_list(PlannerInfo *root, RelOptInfo *baserel,
				   const LsmFdwTable *t, double *nkeys)
{
	RestrictInfo *eq[LSMFDW_MAX_KEYS];
	RestrictInfo *in[LSMFDW_MAX_KEYS] = {0};
	double		n[LSMFDW_MAX_KEYS];
	List	   *rinfos = NIL;
	bool		any_list = false;
	ListCell   *lc;
	int			k;

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (key_rows_list(root, baserel, t, rinfo, NULL, nkeys))
			return list_make1(rinfo);
	}
	(void) key_prefix_equalities(root, baserel, t, baserel->baserestrictinfo,
								 eq);
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		double		count;

		if (key_part_array(root, baserel, t, rinfo->clause, &k, &count) &&
			eq[k] == NULL && in[k] == NULL)
		{
			in[k] = rinfo;
			n[k] = count;
		}
	}
	*nkeys = 1;
	for (k = 0; k < t->nkeys; k++)
	{
		if (eq[k] == NULL && in[k] == NULL)
			return NIL;
		rinfos = lappend(rinfos, eq[k] != NULL ? eq[k] : in[k]);
		if (eq[k] == NULL)
		{
			any_list = true;
			*nkeys *= n[k];
		}
	}
	return any_list ? rinfos : NIL;
}

/*
 * The pathkeys of key order, if the query's first sort key is the key
 * column, ascending or descending, and the key's byte order is that sort's
 * order; else NIL.  Keys are never null, so NULLS FIRST or LAST does not
 * matter.
 */
static List *
key_order_pathkeys(PlannerInfo *root, RelOptInfo *baserel,
				   const LsmFdwTable *t)
{
	const LsmFdwColumn *key = &t->cols[t->keyattno - 1];
	PathKey    *pk;
	ListCell   *lc;
	Oid			opfamily;

	if (root->query_pathkeys == NIL)
		return NIL;
	pk = linitial(root->query_pathkeys);
	if (t->nkeys > 1)
		return composite_key_pathkeys(root, baserel, t, pk->pk_strategy);
	opfamily = btree_family(key);
	if (!OidIsValid(opfamily) ||
		pk->pk_opfamily != opfamily ||
		(pk->pk_strategy != BTLessStrategyNumber &&
		 pk->pk_strategy != BTGreaterStrategyNumber) ||
		(key->codec == LSMFDW_CODEC_TEXT &&
		 !lc_collate_is_c(pk->pk_eclass->ec_collation)))
		return NIL;
	foreach(lc, pk->pk_eclass->ec_members)
	{
		EquivalenceMember *em = lfirst(lc);
		AttrNumber	attno;

		if (bms_equal(em->em_relids, baserel->relids) &&
			is_column_var((Node *) em->em_expr, baserel->relid, &attno) &&
			attno == t->keyattno)
			return list_make1(pk);
	}
	return NIL;
}

/*
 * The pathkeys of the order of a composite key, ascending (strategy
 * BTLessStrategyNumber) or descending: one per key column, in key order,
 * up to the first the query neither sorts nor joins by; a column fixed by
 * "column = constant" is left out, as PostgreSQL leaves it out of the
 * query's pathkeys (ORDER BY a, b WHERE a = 1 wants the order of b).  A
 * text column's order is its bytes' only under the "C" collation.
 */
static List *
composite_key_pathkeys(PlannerInfo *root, RelOptInfo *baserel,
					   const LsmFdwTable *t, int strategy)
{
	List	   *pathkeys = NIL;
	int			k;

	if (strategy != BTLessStrategyNumber && strategy != BTGreaterStrategyNumber)
		return NIL;
	for (k = 0; k < t->nkeys; k++)
	{
		const LsmFdwColumn *col = &t->cols[t->keyattnos[k] - 1];
		TypeCacheEntry *tc = lookup_type_cache(col->basetypid,
											   TYPECACHE_LT_OPR |
											   TYPECACHE_GT_OPR);
		Oid			opno = strategy == BTLessStrategyNumber ? tc->lt_opr
			: tc->gt_opr;
		Var		   *var;
		List	   *pk;
		PathKey    *key;

		if (!OidIsValid(opno))
			break;
		var = makeVar(baserel->relid, col->attnum, col->typid,
					  col->typid == col->basetypid ? col->typmod : -1, col->collation, 0);
		pk = build_expression_pathkey(root, (Expr *) var, NULL, opno,
									  baserel->relids, false);
		if (pk == NIL)
			break;
		key = linitial_node(PathKey, pk);
		if (col->codec == LSMFDW_CODEC_TEXT &&
			!lc_collate_is_c(key->pk_eclass->ec_collation))
			break;
		if (EC_MUST_BE_REDUNDANT(key->pk_eclass))
			continue;
		pathkeys = lappend(pathkeys, key);
	}
	return pathkeys;
}

/* Adds a key list path for a restriction "key IN (...)", if there is one. */
static void
add_key_list_path(PlannerInfo *root, RelOptInfo *baserel, LsmFdwRelInfo *info,
				  List *pathkeys)
{
	ListCell   *lc;

	if (info->table->nkeys > 1)
	{
		double		nkeys;
		List	   *rinfos = composite_key_list(root, baserel, info->table,
												&nkeys);

		if (rinfos != NIL)
			add_scan_path(root, baserel, info, Min(baserel->rows, nkeys),
						  nkeys * (seq_page_cost + info->per_tuple), pathkeys,
						  baserel->lateral_relids, LSMFDW_ACCESS_KEY_LIST,
						  rinfos);
		return;
	}
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		double		nkeys;

		if (key_list_array(root, baserel, info->table, rinfo->clause,
						   &nkeys) == NULL)
			continue;
		add_scan_path(root, baserel, info, Min(baserel->rows, nkeys),
					  nkeys * (seq_page_cost + info->per_tuple), pathkeys,
					  baserel->lateral_relids, LSMFDW_ACCESS_KEY_LIST,
					  list_make1(rinfo));
		return;
	}
}

/*
 * Adds a range path if restrictions bound the key: it reads the fraction
 * of the store that they select.
 */
static void
add_range_path(PlannerInfo *root, RelOptInfo *baserel, LsmFdwRelInfo *info,
			   List *pathkeys)
{
	int			nexact;
	List	   *bounds = key_range_restrictions(root, baserel, info->table,
												&nexact);
	Selectivity sel;

	if (bounds == NIL)
		return;
	sel = clauselist_selectivity(root, bounds, baserel->relid, JOIN_INNER,
								 NULL);
	add_scan_path(root, baserel, info, baserel->rows, range_cost(info, sel),
				  pathkeys, baserel->lateral_relids, LSMFDW_ACCESS_KEY_RANGE,
				  bounds);
	add_partial_scan_path(root, baserel, info, Max(1.0, info->pages * sel),
						  info->per_tuple * info->entries * sel,
						  LSMFDW_ACCESS_KEY_RANGE, bounds);
}

/*
 * The restrictions of baserel that bound the key of table t: for a
 * one-column key, its bounds; for a composite key, "column = value" on
 * each column of the longest leading prefix of key columns that has one
 * (in key order), then the bounds of the next key column.  *nexact gets
 * how many of them (the first) the range answers exactly: all for a
 * one-column key, the prefix's for a composite key (LsmFdwEncodePrefixBound:
 * the executor checks the next column's bounds again).
 */
static List *
key_range_restrictions(PlannerInfo *root, RelOptInfo *baserel,
					   const LsmFdwTable *t, int *nexact)
{
	RestrictInfo *eq[LSMFDW_MAX_KEYS];
	List	   *bounds = NIL;
	ListCell   *lc;
	int			prefix = 0;
	int			k;

	if (t->nkeys > 1)
	{
		prefix = key_prefix_equalities(root, baserel, t,
									   baserel->baserestrictinfo, eq);
		for (k = 0; k < prefix; k++)
			bounds = lappend(bounds, eq[k]);
		if (prefix == t->nkeys)
		{
			*nexact = prefix;
			return bounds;
		}
	}
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		ColumnQual	q;
		int			strategy;

		if (match_column_qual(root, baserel, rinfo, &q) &&
			(t->nkeys == 1 ?
			 key_range_ok(t, &q, ((OpExpr *) rinfo->clause)->inputcollid,
						  &strategy) :
			 key_part_range_ok(t, &q, ((OpExpr *) rinfo->clause)->inputcollid,
							   prefix, &strategy)))
			bounds = lappend(bounds, rinfo);
	}
	*nexact = t->nkeys == 1 ? list_length(bounds) : prefix;
	return bounds;
}

/*
 * For aggregates computed by the scan (agg.c): whether a key range serves
 * every restriction of baserel exactly (none: the whole table); *sel gets
 * the fraction of the store it reads.
 */
bool
LsmFdwAllRangeBounds(PlannerInfo *root, RelOptInfo *baserel,
					 Selectivity *sel)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) baserel->fdw_private;
	List	   *bounds;
	int			nexact;

	*sel = 1.0;
	if (baserel->baserestrictinfo == NIL)
		return true;
	bounds = key_range_restrictions(root, baserel, info->table, &nexact);
	if (nexact != list_length(bounds) ||
		list_length(bounds) != list_length(baserel->baserestrictinfo))
		return false;
	*sel = clauselist_selectivity(root, bounds, baserel->relid, JOIN_INNER,
								  NULL);
	return true;
}

/*
 * The bounds of a key range of baserel made of restrictions rinfos (from
 * key_range_restrictions, or all restrictions where LsmFdwAllRangeBounds
 * said so): their kinds (LsmFdwBound, an IntList: for a composite key, EQ
 * for each column of the prefix, in key order, first), in *fdw_exprs their
 * values in the same order, and in *served (if not NULL) the restrictions
 * the range answers exactly.
 */
List *
LsmFdwRangeBounds(PlannerInfo *root, RelOptInfo *baserel, List *rinfos,
				  List **fdw_exprs, List **served)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) baserel->fdw_private;
	const LsmFdwTable *t = info->table;
	RestrictInfo *eq[LSMFDW_MAX_KEYS];
	List	   *bounds = NIL;
	List	   *values = NIL;
	List	   *exact = NIL;
	ListCell   *lc;
	int			prefix = 0;
	int			k;

	/* a composite key's prefix: one "column = value" per leading column */
	if (t->nkeys > 1)
	{
		prefix = key_prefix_equalities(root, baserel, t, rinfos, eq);
		for (k = 0; k < prefix; k++)
		{
			ColumnQual	q;

			(void) match_column_qual(root, baserel, eq[k], &q);
			values = lappend(values, copyObject(q.value));
			bounds = lappend_int(bounds, LSMFDW_BOUND_EQ);
			exact = lappend(exact, eq[k]);
		}
		for (k = prefix; k < t->nkeys; k++)
			if (eq[k] != NULL)
				elog(ERROR, "lsm_fdw: range qual no longer matches");
		rinfos = list_difference_ptr(rinfos, exact);
	}

	foreach(lc, rinfos)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Oid			collid;
		ColumnQual	q;
		int			s;

		if (!match_column_qual(root, baserel, rinfo, &q))
			elog(ERROR, "lsm_fdw: range qual no longer matches");
		collid = ((OpExpr *) rinfo->clause)->inputcollid;
		if (!(t->nkeys == 1 ? key_range_ok(t, &q, collid, &s) :
			  prefix < t->nkeys &&
			  key_part_range_ok(t, &q, collid, prefix, &s)))
			elog(ERROR, "lsm_fdw: range qual no longer matches");
		values = lappend(values, copyObject(q.value));
		bounds = lappend_int(bounds,
							 s == BTGreaterStrategyNumber ? LSMFDW_BOUND_GT :
							 s == BTGreaterEqualStrategyNumber ? LSMFDW_BOUND_GE :
							 s == BTLessStrategyNumber ? LSMFDW_BOUND_LT :
							 LSMFDW_BOUND_LE);
		/* a composite key's next column is checked again (see above) */
		if (t->nkeys == 1)
			exact = lappend(exact, rinfo);
	}
	*fdw_exprs = values;
	if (served != NULL)
		*served = exact;
	return bounds;
}

/* The run cost of a range that selects the fraction sel of the store. */
static Cost
range_cost(LsmFdwRelInfo *info, Selectivity sel)
{
	return seq_page_cost * Max(1.0, info->pages * sel) +
		info->per_tuple * info->entries * sel;
}

/*
 * Adds a value search path for the cheapest restriction "column = value"
 * it can serve; returns whether there was one.
 */
static bool
add_value_search_path(PlannerInfo *root, RelOptInfo *baserel,
					  LsmFdwRelInfo *info)
{
	RestrictInfo *best = NULL;
	Cost		best_cost = 0;
	double		best_blocks = 0;
	ListCell   *lc;

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		ColumnQual	q;
		Cost		cost;
		double		blocks;

		if (!match_column_qual(root, baserel, rinfo, &q) ||
			!value_search_ok(info->table, &q,
							 ((OpExpr *) rinfo->clause)->inputcollid))
			continue;
		cost = value_search_cost(info, &q, baserel->rows, &blocks);
		if (best == NULL || cost < best_cost)
		{
			best = rinfo;
			best_cost = cost;
			best_blocks = blocks;
		}
	}
	if (best == NULL)
		return false;

	add_scan_path(root, baserel, info, baserel->rows, best_cost, NIL,
				  baserel->lateral_relids, LSMFDW_ACCESS_VALUE_SEARCH,
				  list_make1(best));
	add_partial_scan_path(root, baserel, info, best_blocks,
						best_cost - seq_page_cost * best_blocks,
						LSMFDW_ACCESS_VALUE_SEARCH, list_make1(best));
	return true;
}

/*
 * The run cost of a value search for q expected to return rows rows: the
 * filter probes and the blocks the engine's estimate names for a constant
 * (for another value, a block per row, at most every page), a pass over
 * the memtable, and per row the tuple and its check against newer
 * versions.  *blocks: the blocks.
 */
static Cost
value_search_cost(LsmFdwRelInfo *info, const ColumnQual *q, double rows,
				  double *blocks_out)
{
	const LsmFdwColumn *col = &info->table->cols[q->attno - 1];
	double		probes = info->files;
	double		blocks = Min(info->pages, rows + 1.0);

	if (IsA(q->value, Const) && !((Const *) q->value)->constisnull)
	{
		StringInfoData needle;
		lsm_search_stats st;

		initStringInfo(&needle);
		if (!LsmFdwEncodeNeedle((LsmFdwColumn *) col,
								((Const *) q->value)->constvalue, q->valtype,
								&needle))
		{
			*blocks_out = 0;
			return 0;			/* nothing can match */
		}
		if (lsm_value_search_estimate(info->store->db, col->field,
									  needle.data, needle.len,
									  lsm_fdw_value_search == LSMFDW_VALUE_SEARCH_OFF
									  ? LSM_SEARCH_AUTO : lsm_fdw_value_search,
									  &st) == LSM_OK)
		{
			probes = (double) (st.nodes_visited + st.leaves_probed +
							   st.flat_words / 64);
			blocks = (double) st.blocks_scanned;
		}
		pfree(needle.data);
	}
	*blocks_out = blocks;
	return cpu_operator_cost * (probes + info->memtable_entries) +
		seq_page_cost * blocks +
		rows * (info->per_tuple + cpu_operator_cost * VALIDATION_PROBES);
}

/*
 * generate_implied_equalities_for_column callback: whether equivalence
 * member em is a column a parameterized path can serve (arg: the
 * RelOptInfo's LsmFdwRelInfo).
 */
static bool
key_member_matches(PlannerInfo *root, RelOptInfo *rel, EquivalenceClass *ec,
				   EquivalenceMember *em, void *arg)
{
	LsmFdwRelInfo *info = (LsmFdwRelInfo *) arg;
	AttrNumber	attno;

	if (!is_column_var((Node *) em->em_expr, rel->relid, &attno))
		return false;
	if (is_key_operand(info->table, attno))
		return true;
	return attno > 0 && lsm_fdw_value_search != LSMFDW_VALUE_SEARCH_OFF &&
		info->table->cols[attno - 1].canonical;
}

/*
 * generate_implied_equalities_for_column callback: whether equivalence
 * member em is the column of rel whose number arg points to.
 */
static bool
key_column_matches(PlannerInfo *root, RelOptInfo *rel, EquivalenceClass *ec,
				   EquivalenceMember *em, void *arg)
{
	AttrNumber	attno;

	return is_column_var((Node *) em->em_expr, rel->relid, &attno) &&
		attno == *(const AttrNumber *) arg;
}

/*
 * Adds the paths parameterized by the other relations of join clauses (for
 * the inner side of nested loops): a key lookup or a value search for each
 * clause "column = value" (written in the query, or implied by an
 * equivalence class such as a.key = b.col), a key list for each "key =
 * ANY(array)", one per distinct access, column and set of relations; and a
 * key range bounded by every join clause that bounds the key, and every
 * restriction that does.
 */
static void
add_parameterized_paths(PlannerInfo *root, RelOptInfo *baserel,
						LsmFdwRelInfo *info, List *pathkeys)
{
	List	   *clauses = NIL;
	List	   *done = NIL;
	List	   *bounds = NIL;
	Relids		bound_relids = NULL;
	ListCell   *lc;

	foreach(lc, baserel->joininfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (join_clause_is_movable_to(rinfo, baserel))
			clauses = lappend(clauses, rinfo);
	}
	if (baserel->has_eclass_joins)
		clauses = list_concat(clauses,
							  generate_implied_equalities_for_column(root, baserel,
																	 key_member_matches,
																	 info,
																	 baserel->lateral_referencers));
	if (info->table->nkeys > 1)
		add_composite_parameterized_path(root, baserel, info, pathkeys);

	foreach(lc, clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		ColumnQual	q;
		LsmFdwAccess access;
		AttrNumber	attno = info->table->keyattno;
		Relids		required_outer;
		double		rows;
		double		nkeys;
		double		blocks;
		Cost		cost;
		ListCell   *lc2;
		bool		seen = false;

		if (match_column_qual(root, baserel, rinfo, &q))
		{
			Oid			collid = ((OpExpr *) rinfo->clause)->inputcollid;
			int			strategy;

			attno = q.attno;
			if (key_equality_ok(info->table, &q, collid))
			{
				access = LSMFDW_ACCESS_KEY_LOOKUP;
				rows = 1.0;
				cost = seq_page_cost + info->per_tuple;
			}
			else if (lsm_fdw_value_search != LSMFDW_VALUE_SEARCH_OFF &&
					 value_search_ok(info->table, &q, collid))
			{
				access = LSMFDW_ACCESS_VALUE_SEARCH;
				rows = clamp_row_est(info->entries *
									 clause_selectivity(root, (Node *) rinfo,
														baserel->relid,
														JOIN_INNER, NULL));
				cost = value_search_cost(info, &q, rows, &blocks);
			}
			else
			{
				if (key_range_ok(info->table, &q, collid, &strategy))
				{
					bounds = lappend(bounds, rinfo);
					bound_relids = bms_union(bound_relids,
											 rinfo->clause_relids);
				}
				continue;
			}
		}
		else if (key_list_array(root, baserel, info->table, rinfo->clause,
								&nkeys) != NULL)
		{
			access = LSMFDW_ACCESS_KEY_LIST;
			rows = Min(nkeys, info->entries);
			cost = nkeys * (seq_page_cost + info->per_tuple);
		}
		else
			continue;

		required_outer = bms_union(rinfo->clause_relids,
								   baserel->lateral_relids);
		required_outer = bms_del_members(required_outer, baserel->relids);
		if (bms_is_empty(required_outer))
			continue;
		foreach(lc2, done)
		{
			List	   *d = (List *) lfirst(lc2);

			if (intVal(linitial(d)) == access &&
				intVal(lsecond(d)) == attno &&
				bms_equal((Relids) lthird(d), required_outer))
				seen = true;
		}
		if (seen)
			continue;
		done = lappend(done, list_make3(makeInteger(access),
										makeInteger(attno), required_outer));

		add_scan_path(root, baserel, info, rows, cost, NIL, required_outer,
					  access, list_make1(rinfo));
	}

	if (bounds != NIL)
	{
		Relids		required_outer = bms_union(bound_relids,
											   baserel->lateral_relids);
		Selectivity sel;
		int			nexact;

		required_outer = bms_del_members(required_outer, baserel->relids);
		bounds = list_concat(key_range_restrictions(root, baserel, info->table,
													&nexact),
							 bounds);
		sel = clauselist_selectivity(root, bounds, baserel->relid,
									 JOIN_INNER, NULL);
		add_scan_path(root, baserel, info, clamp_row_est(info->entries * sel),
					  range_cost(info, sel), pathkeys, required_outer,
					  LSMFDW_ACCESS_KEY_RANGE, bounds);
	}
}

/*
 * For a composite key: adds a key lookup (or, for a leading prefix, a key
 * range) whose values come partly from join clauses among clauses, for
 * the inner side of a nested loop (a join on the whole key, a LATERAL
 * reference to a prefix).  Each key column takes its equality from a
 * restriction if it has one, else from a join clause; the path is
 * parameterized by the relations of the join clauses it uses.
 */
static void
add_composite_parameterized_path(PlannerInfo *root, RelOptInfo *baserel,
								 LsmFdwRelInfo *info, List *pathkeys)
{
	const LsmFdwTable *t = info->table;
	RestrictInfo *eq[LSMFDW_MAX_KEYS];
	Relids		required_outer = NULL;
	List	   *clauses = list_copy(baserel->baserestrictinfo);
	List	   *rinfos = NIL;
	List	   *bounds = NIL;
	Selectivity sel;
	ListCell   *lc;
	int			prefix;
	int			k;

	/*
	 * The candidates: restrictions, join clauses, and the equalities that
	 * equivalence classes imply for each key column (one class per column,
	 * so one call per column: the function stops at the first class that
	 * yields clauses)
	 */
	foreach(lc, baserel->joininfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (join_clause_is_movable_to(rinfo, baserel))
			clauses = lappend(clauses, rinfo);
	}
	for (k = 0; k < t->nkeys && baserel->has_eclass_joins; k++)
		clauses = list_concat(clauses,
							  generate_implied_equalities_for_column(root, baserel,
																	 key_column_matches,
																	 (void *) &t->keyattnos[k],
																	 baserel->lateral_referencers));

	prefix = key_prefix_equalities(root, baserel, t, clauses, eq);
	for (k = 0; k < prefix; k++)
	{
		rinfos = lappend(rinfos, eq[k]);
		if (!list_member_ptr(baserel->baserestrictinfo, eq[k]))
			required_outer = bms_union(required_outer, eq[k]->clause_relids);
	}
	if (required_outer == NULL)
		return;					/* no join clause in the prefix */
	required_outer = bms_del_members(bms_union(required_outer,
											   baserel->lateral_relids),
									 baserel->relids);
	if (bms_is_empty(required_outer))
		return;
	if (prefix == t->nkeys)
	{
		add_scan_path(root, baserel, info, 1.0,
					  seq_page_cost + info->per_tuple, NIL, required_outer,
					  LSMFDW_ACCESS_KEY_LOOKUP, rinfos);
		return;
	}

	/* a prefix: its range, narrowed by the next column's restrictions */
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		ColumnQual	q;
		int			strategy;

		if (match_column_qual(root, baserel, rinfo, &q) &&
			key_part_range_ok(t, &q, ((OpExpr *) rinfo->clause)->inputcollid,
							  prefix, &strategy))
			bounds = lappend(bounds, rinfo);
	}
	sel = clauselist_selectivity(root, list_concat(list_copy(rinfos), bounds),
								 baserel->relid, JOIN_INNER, NULL);
	add_scan_path(root, baserel, info, clamp_row_est(info->entries * sel),
				  range_cost(info, sel), pathkeys, required_outer,
				  LSMFDW_ACCESS_KEY_RANGE, list_concat(rinfos, bounds));
}

/*
 * Adds a ForeignPath of access, returning rows rows (fewer if the
 * parameterization's join clauses select fewer) at a cost of run plus the
 * quals' startup cost, in the order of pathkeys (from key_order_pathkeys),
 * parameterized by required_outer (which includes the lateral relations).
 * rinfos are the quals the access uses: the lookup's, the list's, the
 * bounds of a range, the searched equality.  ForeignPath.fdw_private: the
 * access (Integer), rinfos, and whether it reads in descending key order
 * (Integer).
 */
static void
add_scan_path(PlannerInfo *root, RelOptInfo *baserel, LsmFdwRelInfo *info,
			  double rows, Cost run, List *pathkeys, Relids required_outer,
			  LsmFdwAccess access, List *rinfos)
{
	bool		backward = pathkeys != NIL &&
		linitial_node(PathKey, pathkeys)->pk_strategy == BTGreaterStrategyNumber;

	ForeignPath *path;

	if (!bms_is_empty(required_outer))
		rows = Min(rows, get_baserel_parampathinfo(root, baserel,
												   required_outer)->ppi_rows);
	path = create_foreignscan_path(root, baserel, NULL, rows, info->startup,
								   info->startup + run, pathkeys,
								   required_outer, NULL,
								   list_make3(makeInteger(access), rinfos,
											  makeInteger(backward)));

	/*
	 * A scan that reads everything by itself cannot run in a parallel
	 * worker: the worker would read its own snapshot, not the leader's, and
	 * none of the transaction's pending writes.  Only the parallel-aware
	 * scan (add_partial_scan_path) gets the leader's view.
	 */
	path->path.parallel_safe = false;
	add_path(baserel, (Path *) path);
}

/*
 * Adds the parallel-aware version of a full scan, range or value search
 * that reads pages pages at a CPU cost of cpu: the participants split the
 * store's key ranges (a search's units) between them (scan.c), so the CPU
 * cost is divided as a parallel sequential scan's is, and the reads are
 * not.
 */
static void
add_partial_scan_path(PlannerInfo *root, RelOptInfo *baserel,
					  LsmFdwRelInfo *info, double pages, Cost cpu,
					  LsmFdwAccess access, List *rinfos)
{
	ForeignPath *path;
	double		divisor;
	int			workers;

	if (!baserel->consider_parallel ||
		!bms_is_empty(baserel->lateral_relids))
		return;
	workers = compute_parallel_worker(baserel, pages, -1,
									  max_parallel_workers_per_gather);
	if (workers <= 0)
		return;
	/* the leader's share, as costsize.c's get_parallel_divisor counts it */
	divisor = workers;
	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
		divisor += 1.0 - 0.3 * workers;
	path = create_foreignscan_path(root, baserel, NULL,
								   clamp_row_est(baserel->rows / divisor),
								   info->startup,
								   info->startup + seq_page_cost * pages +
								   cpu / divisor,
								   NIL, NULL, NULL,
								   list_make3(makeInteger(access), rinfos,
											  makeInteger(false)));
	path->path.parallel_aware = true;
	path->path.parallel_safe = true;
	path->path.parallel_workers = workers;
	add_partial_path(baserel, (Path *) path);
}

/*
 * Whether rinfo, a qual of the scan, is one the access serves: one of
 * served, or derived from the same equivalence class as one (a join clause
 * the parameterization regenerated), or the same clause.
 */
static bool
is_served(RestrictInfo *rinfo, List *served)
{
	ListCell   *lc;

	foreach(lc, served)
	{
		RestrictInfo *s = lfirst_node(RestrictInfo, lc);

		if (rinfo == s ||
			(rinfo->parent_ec != NULL && rinfo->parent_ec == s->parent_ec) ||
			equal(rinfo->clause, s->clause))
			return true;
	}
	return false;
}

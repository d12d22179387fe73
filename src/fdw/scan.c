/*-------------------------------------------------------------------------
 *
 * scan.c
 *		  Execution of scans of lsm_fdw foreign tables, and their EXPLAIN.
 *
 * plan.c chooses the access (LsmFdwAccess); this file carries it out:
 *
 *	key lookup		evaluates the value, encodes it as a key, one lsm_get
 *	key list		evaluates the array, encodes, sorts and deduplicates its
 *					elements, one lsm_multi_get; rows in key order
 *	key range		evaluates the bounds (the tightest lower and upper win),
 *					seeks an iterator to the lower bound, skips a key equal
 *					to an exclusive one, and stops at the upper one: the
 *					rows are exactly those its quals select (codec.c)
 *	full scan		an iterator from the first key to the end
 *
 * The last three also run in descending key order when the plan says so
 * (ORDER BY key DESC): the key list backwards, and the iterators from the
 * upper bound down to the lower one (lsm_iter_reverse).
 *	value search	lsm_value_search_with on the column's row field with the
 *					encoded value and the planned strategy
 *
 * Reads merge the transaction's pending writes (xact.c) into the committed
 * state: the versions written by earlier commands of the transaction, never
 * those of the scan's own command.  Lookups consult the pending writes
 * first; ordered scans merge the sorted pending rows with the iterator by
 * key, the pending version winning; a value search drops the committed rows
 * the transaction has rewritten and adds its pending rows whose field holds
 * the value.  The executor checks the quals that the plan did not leave to
 * the access (plan.c).
 *
 * When the plan reads ctid, each row gets its key as ctid (codec.c), or an
 * error if it has none.
 *
 * Parallel scans (a parallel-aware full scan, key range or value search
 * under a Gather): the leader shares its view of the store (lsm_share: the
 * snapshot its serial scan would read, pinned against removal) in the
 * query's dynamic shared memory, and every participant claims the view's
 * key ranges one at a time from a counter there and reads each with an
 * iterator over the view (lsm_iter_open_view), clipped to the scan's
 * bounds; a value search's participants each open the engine's search of
 * the view (lsm_value_search_view), which claims the search's units from
 * the same counter.  If the transaction
 * has written to the table (its writes are in the leader's memory) or the
 * engine cannot share the view, the leader reads alone and the workers
 * return nothing (or fail, if the leader does not take part).
 *
 * Each scan refreshes its store first (lsm_refresh), so it sees what other
 * backends committed before it began; under REPEATABLE READ and
 * SERIALIZABLE only the transaction's first does (store.c).  Everything a (re)start reads lives
 * in a memory context reset at the next one.  The iterator and the pin of
 * the store are released by EndForeignScan or, on error, by a reset
 * callback of the query's memory context.
 *
 * EXPLAIN names the access and the column; EXPLAIN ANALYZE adds what the
 * engine did: for lookups the key hashes, filter probes and SSTables read
 * (the handle's counters around each lookup), for a value search the
 * search's own counters (lsm_iter_search_stats), summed over rescans and
 * the participants of a parallel one; for a parallel scan, the ranges
 * (blocks of a value search) each participant read.
 *
 * src/fdw/scan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "access/parallel.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "port/atomics.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "lsm_fdw.h"

/* Engine counters of a scan's lookups, for EXPLAIN ANALYZE */
typedef struct LookupCounters
{
	uint64		keys;
	uint64		key_hashes;
	uint64		filter_probes;
	uint64		filter_negatives;
	uint64		sstable_reads;
	uint64		false_positives;
} LookupCounters;

/* What one participant of a parallel scan did, for EXPLAIN ANALYZE */
typedef struct LsmFdwShare
{
	uint32		ranges;			/* key ranges read */
	int			searches;		/* value searches run */
	lsm_search_stats search;	/* their counters */
} LsmFdwShare;

/*
 * The dynamic shared memory of a parallel scan: the leader's view of the
 * store (lsm_share) and the next of its key ranges (of a value search: of
 * its units) to claim.  nparts 0: the view could not be shared, and the
 * leader reads alone.
 */
typedef struct LsmFdwParallel
{
	pg_atomic_uint32 next_part;
	int			nparts;
	int			nslots;			/* the leader, then each worker planned */
	Size		viewlen;
	LsmFdwShare share[FLEXIBLE_ARRAY_MEMBER];	/* each one's, then the
												 * view */
} LsmFdwParallel;

#define PARALLEL_VIEW(par) ((char *) &(par)->share[(par)->nslots])

/* Key ranges of the view per participant: more balance the load better */
#define PARTS_PER_PARTICIPANT 8

/* Executor state of a scan: ForeignScanState.fdw_state */
typedef struct LsmFdwScanState
{
	LsmFdwAccess access;
	LsmFdwTable *table;
	LsmFdwStore *store;			/* pinned until the scan is released */
	CommandId	curcid;			/* sees pending writes of earlier commands */
	int		   *attrs;			/* the attributes to decode (attnum - 1) */
	int			nattrs;			/* 0 (count(*)): decode nothing */
	bool		ctid;			/* set the slot's ctid */
	bool		instrument;		/* EXPLAIN ANALYZE: count engine work */
	bool		started;		/* (re)started since the last rescan */
	MemoryContext start_cxt;	/* what a (re)start reads; reset by the next */
	StringInfoData arena;		/* the text values of the row in the slot */

	/* the values of fdw_exprs */
	List	   *value_states;	/* ExprState of each */
	Oid		   *value_types;	/* (base) type of each */
	List	   *bounds;			/* KEY_RANGE: LsmFdwBound of each */

	/* key lookup and key list: the rows found, in key order */
	int			nfound;
	int			fpos;
	LsmFdwPendingRow *found;

	/* full scan and key range: committed rows and pending writes merged */
	LsmFdwMerge merge;
	bool		merge_open;
	bool		backward;		/* descending key order */
	LsmFdwBoundEnc lower_enc;	/* NONE, INCLUSIVE or EXCLUSIVE */
	StringInfoData lower;
	LsmFdwBoundEnc upper_enc;
	StringInfoData upper;
	bool		skip_start;		/* an exclusive bound where the scan starts:
								 * a key equal to it is not returned */
	bool		empty;			/* the bounds exclude every key */

	/* value search: the engine's search, then the pending writes */
	lsm_iter   *iter;
	int			field;
	int			strategy;
	StringInfoData needle;
	bool		search_done;	/* iterator exhausted: pending rows next */
	LsmFdwPendingRow *pending;	/* visible pending writes in memory */
	int			npending;
	int			ppos;			/* next pending write to check */
	lsm_iter   *staged;			/* then the stage's writes, or NULL */
	lsm_search_stats search;	/* counters, summed over (re)starts */
	int			searches;
	int			strategy_used;

	LookupCounters lookups;		/* summed over (re)starts */

	/* aggregate: the groups of a full scan (agg.c), once it was read */
	LsmFdwAgg  *agg;
	bool		agg_done;
	MemoryContext pass_cxt;		/* what a pass's full scan reads */

	/* parallel scan (a parallel-aware plan under a Gather) */
	bool		parallel;		/* the plan is parallel-aware */
	LsmFdwParallel *par;		/* its shared memory, once set up */
	void	   *view;			/* leader: the view it shared (lsm_share),
								 * unshared when the scan is released */
	size_t		viewlen;
	int			part;			/* the range being read, or -1 */
	const void *part_hi;		/* its end (exclusive), or NULL */
	size_t		part_hilen;
	LsmFdwBatch batch;			/* of iter, in the part */
	bool		batch_inside;	/* all of it before the part's end */
	uint64	   *parts_read;		/* leader: ranges (blocks of a value search)
								 * each participant read, kept at shutdown
								 * for EXPLAIN ANALYZE */
	int			nslots;
	bool		alone;			/* ... or the leader read alone */

	MemoryContextCallback cleanup;	/* releases iter and the pin */
	bool		released;
} LsmFdwScanState;

static void lsmfdwBeginForeignScan(ForeignScanState *node, int eflags);
static TupleTableSlot *lsmfdwIterateForeignScan(ForeignScanState *node);
static void lsmfdwReScanForeignScan(ForeignScanState *node);
static void lsmfdwEndForeignScan(ForeignScanState *node);
static void lsmfdwExplainForeignScan(ForeignScanState *node,
									 ExplainState *es);

static List *plan_ancestors(ExplainState *es, Plan *plan);
static bool find_ancestors(Plan *node, Plan *target, List **ancestors);
static void start_scan(ForeignScanState *node, LsmFdwScanState *st);
static void start_lookup(ForeignScanState *node, LsmFdwScanState *st);
static void start_range(ForeignScanState *node, LsmFdwScanState *st);
static bool key_bounds(ForeignScanState *node, LsmFdwScanState *st);
static bool composite_bounds(ForeignScanState *node, LsmFdwScanState *st);
static void narrow_range(LsmFdwScanState *st, StringInfo b,
						 LsmFdwBoundEnc benc, bool upper);
static int	row_part_values(LsmFdwScanState *st, ExprContext *econtext,
							int i, Datum **elems, int *nelems, Oid *type);
static void start_search(ForeignScanState *node, LsmFdwScanState *st);
static void fetch_keys(LsmFdwScanState *st, int n, char **keys,
					   size_t *klens);
static bool next_ordered(LsmFdwScanState *st, TupleTableSlot *slot);
static bool next_found(LsmFdwScanState *st, TupleTableSlot *slot);
static bool next_searched(LsmFdwScanState *st, TupleTableSlot *slot);
static void aggregate(ForeignScanState *node, LsmFdwScanState *st);
static inline bool next_in_range(LsmFdwScanState *st, const char **key,
								 size_t *klen, const char **row,
								 size_t *rowlen);
static void read_again(ForeignScanState *node, LsmFdwScanState *st);
static void tighten_bound(StringInfo bound, LsmFdwBoundEnc *enc,
						  StringInfo b, LsmFdwBoundEnc benc, bool upper);
static inline bool past_bound(LsmFdwScanState *st, const char *key, size_t klen);
static bool holds_needle(LsmFdwScanState *st, const char *row,
						 size_t rowlen);
static void store_row(LsmFdwScanState *st, TupleTableSlot *slot,
					  const char *key, size_t klen,
					  const char *row, size_t rowlen);
static void close_iter(LsmFdwScanState *st);
static void collect_search_stats(LsmFdwScanState *st);
static void add_search_stats(LsmFdwScanState *st, int searches,
							 const lsm_search_stats *s);
static void sum_search_stats(lsm_search_stats *sum,
							 const lsm_search_stats *s);
static uint32_t claim_unit(void *arg);
static void count_lookups(LsmFdwScanState *st, const lsm_stats *before,
						  uint64 keys);
static int	pending_cmp(const void *a, const void *b);
static void release_scan(void *arg);
static bool lsmfdwIsForeignScanParallelSafe(PlannerInfo *root,
											RelOptInfo *rel,
											RangeTblEntry *rte);
static Size lsmfdwEstimateDSMForeignScan(ForeignScanState *node,
										 ParallelContext *pcxt);
static void lsmfdwInitializeDSMForeignScan(ForeignScanState *node,
										   ParallelContext *pcxt,
										   void *coordinate);
static void lsmfdwReInitializeDSMForeignScan(ForeignScanState *node,
											 ParallelContext *pcxt,
											 void *coordinate);
static void lsmfdwInitializeWorkerForeignScan(ForeignScanState *node,
											  shm_toc *toc,
											  void *coordinate);
static void lsmfdwShutdownForeignScan(ForeignScanState *node);
static bool next_parallel(LsmFdwScanState *st, TupleTableSlot *slot);
static bool claim_part(LsmFdwScanState *st);
static LsmFdwShare *my_share(LsmFdwParallel *par);
static bool worker_left_out(LsmFdwScanState *st);

/* Fills in the scan callbacks of the handler's FdwRoutine. */
void
LsmFdwSetScanRoutines(FdwRoutine *routine)
{
	routine->GetForeignRelSize = LsmFdwGetForeignRelSize;
	routine->GetForeignPaths = LsmFdwGetForeignPaths;
	routine->GetForeignPlan = LsmFdwGetForeignPlan;
	routine->GetForeignUpperPaths = LsmFdwGetForeignUpperPaths;
	routine->ReparameterizeForeignPathByChild = LsmFdwReparameterizePath;
	routine->BeginForeignScan = lsmfdwBeginForeignScan;
	routine->IterateForeignScan = lsmfdwIterateForeignScan;
	routine->ReScanForeignScan = lsmfdwReScanForeignScan;
	routine->EndForeignScan = lsmfdwEndForeignScan;
	routine->ExplainForeignScan = lsmfdwExplainForeignScan;
	routine->IsForeignScanParallelSafe = lsmfdwIsForeignScanParallelSafe;
	routine->EstimateDSMForeignScan = lsmfdwEstimateDSMForeignScan;
	routine->InitializeDSMForeignScan = lsmfdwInitializeDSMForeignScan;
	routine->ReInitializeDSMForeignScan = lsmfdwReInitializeDSMForeignScan;
	routine->InitializeWorkerForeignScan = lsmfdwInitializeWorkerForeignScan;
	routine->ShutdownForeignScan = lsmfdwShutdownForeignScan;
}

/*
 * Sets up the scan: resolves the table, refreshes and pins its store,
 * prepares the values.  Nothing is read before the first Iterate.
 */
static void
lsmfdwBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = castNode(ForeignScan, node->ss.ps.plan);
	EState	   *estate = node->ss.ps.state;
	LsmFdwScanState *st = palloc0(sizeof(LsmFdwScanState));
	List	   *attrs;
	ListCell   *lc;
	int			i;

	node->fdw_state = st;
	st->access = intVal(list_nth(plan->fdw_private, LSMFDW_PRIVATE_ACCESS));
	st->released = true;		/* nothing to release yet */
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	/* an aggregate scans no relation in place: its table is fs_relids' */
	st->table = LsmFdwGetTable(plan->scan.scanrelid > 0 ?
							   node->ss.ss_currentRelation :
							   ExecGetRangeTableRelation(estate,
														 bms_next_member(plan->fs_relids, -1)));
	attrs = (List *) list_nth(plan->fdw_private, LSMFDW_PRIVATE_ATTRS);
	st->attrs = palloc(sizeof(int) * Max(list_length(attrs), 1));
	foreach(lc, attrs)
		st->attrs[st->nattrs++] = lfirst_int(lc) - 1;
	st->bounds = (List *) list_nth(plan->fdw_private, LSMFDW_PRIVATE_BOUNDS);
	st->field = intVal(list_nth(plan->fdw_private, LSMFDW_PRIVATE_FIELD));
	st->strategy = intVal(list_nth(plan->fdw_private,
								   LSMFDW_PRIVATE_STRATEGY));
	st->ctid = intVal(list_nth(plan->fdw_private, LSMFDW_PRIVATE_CTID)) != 0;
	st->backward = intVal(list_nth(plan->fdw_private,
								   LSMFDW_PRIVATE_BACKWARD)) != 0;
	st->instrument = estate->es_instrument != 0;
	st->parallel = plan->scan.plan.parallel_aware;
	st->part = -1;
	st->curcid = estate->es_snapshot->curcid;
	st->start_cxt = AllocSetContextCreate(estate->es_query_cxt,
										  "lsm_fdw scan",
										  ALLOCSET_DEFAULT_SIZES);
	initStringInfo(&st->lower);
	initStringInfo(&st->upper);
	initStringInfo(&st->needle);
	initStringInfo(&st->arena);

	st->value_types = palloc0(sizeof(Oid) *
							  Max(list_length(plan->fdw_exprs), 1));
	i = 0;
	foreach(lc, plan->fdw_exprs)
	{
		Expr	   *value = (Expr *) lfirst(lc);

		st->value_states = lappend(st->value_states,
								   ExecInitExpr(value, (PlanState *) node));
		st->value_types[i++] = getBaseType(exprType((Node *) value));
	}

	st->store = LsmFdwOpenStore(st->table, true);
	LsmFdwPinStore(st->store);
	LsmFdwScanBegin(st->store, st->curcid);
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
	if (!st->started)
		start_scan(node, st);
	switch (st->access)
	{
		case LSMFDW_ACCESS_KEY_LOOKUP:
		case LSMFDW_ACCESS_KEY_LIST:
			(void) next_found(st, slot);
			break;
		case LSMFDW_ACCESS_FULL_SCAN:
		case LSMFDW_ACCESS_KEY_RANGE:
			if (st->par != NULL && st->par->nparts > 0)
				(void) next_parallel(st, slot);
			else
				(void) next_ordered(st, slot);
			break;
		case LSMFDW_ACCESS_VALUE_SEARCH:
			(void) next_searched(st, slot);
			break;
		case LSMFDW_ACCESS_AGGREGATE:
			for (;;)
			{
				if (!st->agg_done)
					aggregate(node, st);
				if (LsmFdwAggNext(st->agg, slot) ||
					!LsmFdwAggNextPass(st->agg))
					break;
				/* the groups of the next pass */
				read_again(node, st);
			}
			break;
	}
	return slot;
}

/*
 * Restarts the scan: the values are evaluated again at the next Iterate (a
 * nested loop's Params have changed), and the store read again.
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

/*
 * EXPLAIN: "LSM Access: key lookup (id)", "value search (usr)" and so on;
 * with ANALYZE, the engine's counters.
 */
static void
lsmfdwExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = castNode(ForeignScan, node->ss.ps.plan);
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;
	LsmFdwAccess access = intVal(list_nth(plan->fdw_private,
										  LSMFDW_PRIVATE_ACCESS));
	const char *column = strVal(list_nth(plan->fdw_private,
										 LSMFDW_PRIVATE_COLUMN));
	static const char *const names[] = {
		[LSMFDW_ACCESS_FULL_SCAN] = "full scan",
		[LSMFDW_ACCESS_KEY_LOOKUP] = "key lookup",
		[LSMFDW_ACCESS_KEY_LIST] = "key list",
		[LSMFDW_ACCESS_KEY_RANGE] = "key range",
		[LSMFDW_ACCESS_VALUE_SEARCH] = "value search",
		[LSMFDW_ACCESS_AGGREGATE] = "aggregate"
	};

	if (access == LSMFDW_ACCESS_FULL_SCAN)
		ExplainPropertyText("LSM Access", names[access], es);
	else
		ExplainPropertyText("LSM Access",
							psprintf("%s (%s)", names[access], column), es);
	/*
	 * A parallel scan: the key ranges each participant read (of a value
	 * search, the blocks)
	 */
	if (es->analyze && st != NULL && st->parts_read != NULL)
	{
		const char *label = access == LSMFDW_ACCESS_VALUE_SEARCH ?
			"LSM Blocks Read" : "LSM Key Ranges";
		StringInfoData buf;
		uint64		total = 0;
		int			i;

		initStringInfo(&buf);
		for (i = 0; i < st->nslots; i++)
			total += st->parts_read[i];
		if (st->alone)
			appendStringInfoString(&buf, "none: the leader read alone");
		else
		{
			appendStringInfo(&buf, UINT64_FORMAT " (leader " UINT64_FORMAT,
							 total, st->parts_read[0]);
			for (i = 1; i < st->nslots; i++)
				appendStringInfo(&buf, ", worker %d " UINT64_FORMAT, i - 1,
								 st->parts_read[i]);
			appendStringInfoChar(&buf, ')');
		}
		ExplainPropertyText(label, buf.data, es);
	}
	/* the quals the access serves, which the executor does not check */
	if (plan->fdw_recheck_quals != NIL)
	{
		/* a nested loop's Params are shown as the columns they stand for */
		List	   *context = set_deparse_context_plan(es->deparse_cxt,
													   (Plan *) plan,
													   plan_ancestors(es, (Plan *) plan));

		ExplainPropertyText("LSM Cond",
							deparse_expression((Node *) make_ands_explicit(plan->fdw_recheck_quals),
											   context, es->verbose, false),
							es);
	}
	if (intVal(list_nth(plan->fdw_private, LSMFDW_PRIVATE_BACKWARD)) != 0)
		ExplainPropertyText("LSM Order", "descending", es);
	if (access == LSMFDW_ACCESS_VALUE_SEARCH)
		ExplainPropertyText("LSM Strategy",
							LsmFdwStrategyName(intVal(list_nth(plan->fdw_private,
															   LSMFDW_PRIVATE_STRATEGY))),
							es);

	if (!es->analyze || st == NULL || st->table == NULL)
		return;

	/* an aggregation whose groups did not fit in hash_mem at once */
	if (access == LSMFDW_ACCESS_AGGREGATE && st->agg != NULL &&
		LsmFdwAggPasses(st->agg) > 1)
		ExplainPropertyInteger("LSM Aggregate Passes", NULL,
							   LsmFdwAggPasses(st->agg), es);

	/* a search that a LIMIT stopped early: count what it did so far */
	if (access == LSMFDW_ACCESS_VALUE_SEARCH && st->iter != NULL &&
		!st->search_done)
	{
		collect_search_stats(st);
		st->search_done = true;
	}

	if (access == LSMFDW_ACCESS_VALUE_SEARCH && st->searches > 0)
	{
		const lsm_search_stats *s = &st->search;

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			ExplainPropertyText("LSM Search",
								psprintf("strategy=%s searches=%d nodes=" UINT64_FORMAT
										 " leaves probed=" UINT64_FORMAT
										 " positive=" UINT64_FORMAT,
										 LsmFdwStrategyName(st->strategy_used),
										 st->searches, s->nodes_visited,
										 s->leaves_probed, s->leaves_positive),
								es);
			ExplainPropertyText("LSM SSTables",
								psprintf("read=" UINT64_FORMAT " false=" UINT64_FORMAT
										 " unfiltered=" UINT64_FORMAT
										 " blocks read=" UINT64_FORMAT
										 " skipped=" UINT64_FORMAT,
										 s->sstables_scanned, s->sstables_false,
										 s->sstables_unfiltered,
										 s->blocks_scanned, s->blocks_skipped),
								es);
			ExplainPropertyText("LSM Rows",
								psprintf("validated=" UINT64_FORMAT
										 " rejected=" UINT64_FORMAT
										 " returned=" UINT64_FORMAT,
										 s->rows_validated, s->rows_rejected,
										 s->rows_returned),
								es);
		}
		else
		{
			ExplainPropertyText("LSM Strategy Used",
								LsmFdwStrategyName(st->strategy_used), es);
			ExplainPropertyInteger("LSM Searches", NULL, st->searches, es);
			ExplainPropertyInteger("LSM Nodes Visited", NULL, s->nodes_visited, es);
			ExplainPropertyInteger("LSM Leaves Probed", NULL, s->leaves_probed, es);
			ExplainPropertyInteger("LSM Leaves Positive", NULL, s->leaves_positive, es);
			ExplainPropertyInteger("LSM SSTables Read", NULL, s->sstables_scanned, es);
			ExplainPropertyInteger("LSM SSTables False", NULL, s->sstables_false, es);
			ExplainPropertyInteger("LSM SSTables Unfiltered", NULL, s->sstables_unfiltered, es);
			ExplainPropertyInteger("LSM Blocks Read", NULL, s->blocks_scanned, es);
			ExplainPropertyInteger("LSM Blocks Skipped", NULL, s->blocks_skipped, es);
			ExplainPropertyInteger("LSM Rows Validated", NULL, s->rows_validated, es);
			ExplainPropertyInteger("LSM Rows Rejected", NULL, s->rows_rejected, es);
		}
	}
	else if ((access == LSMFDW_ACCESS_KEY_LOOKUP ||
			  access == LSMFDW_ACCESS_KEY_LIST) && st->lookups.keys > 0)
	{
		const LookupCounters *c = &st->lookups;

		if (es->format == EXPLAIN_FORMAT_TEXT)
			ExplainPropertyText("LSM Lookups",
								psprintf("keys=" UINT64_FORMAT " key hashes=" UINT64_FORMAT
										 " filters probed=" UINT64_FORMAT
										 " negative=" UINT64_FORMAT
										 " SSTables read=" UINT64_FORMAT
										 " false positives=" UINT64_FORMAT,
										 c->keys, c->key_hashes, c->filter_probes,
										 c->filter_negatives, c->sstable_reads,
										 c->false_positives),
								es);
		else
		{
			ExplainPropertyInteger("LSM Keys", NULL, c->keys, es);
			ExplainPropertyInteger("LSM Key Hashes", NULL, c->key_hashes, es);
			ExplainPropertyInteger("LSM Filters Probed", NULL, c->filter_probes, es);
			ExplainPropertyInteger("LSM Filter Negatives", NULL, c->filter_negatives, es);
			ExplainPropertyInteger("LSM SSTables Read", NULL, c->sstable_reads, es);
			ExplainPropertyInteger("LSM False Positives", NULL, c->false_positives, es);
		}
	}
}

/*
 * The plan nodes above plan in the statement that EXPLAIN shows, the
 * nearest first, up to the top of the main plan or of the subplan holding
 * it (as ExplainNode passes them to set_deparse_context_plan, except for
 * the SubPlans above a subplan).
 */
static List *
plan_ancestors(ExplainState *es, Plan *plan)
{
	List	   *ancestors = NIL;
	ListCell   *lc;

	if (find_ancestors(es->pstmt->planTree, plan, &ancestors))
		return ancestors;
	foreach(lc, es->pstmt->subplans)
	{
		if (find_ancestors(lfirst(lc), plan, &ancestors))
			return ancestors;
	}
	return NIL;
}

/*
 * Whether plan target is node or below it; if so, appends to *ancestors the
 * nodes above target, the nearest first, up to node (what EXPLAIN passes
 * to set_deparse_context_plan).
 */
static bool
find_ancestors(Plan *node, Plan *target, List **ancestors)
{
	List	   *children = NIL;
	ListCell   *lc;
	bool		found = false;

	if (node == NULL)
		return false;
	if (node == target)
		return true;
	check_stack_depth();
	switch (nodeTag(node))
	{
		case T_Append:
			children = ((Append *) node)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) node)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) node)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) node)->bitmapplans;
			break;
		case T_CustomScan:
			children = ((CustomScan *) node)->custom_plans;
			break;
		case T_SubqueryScan:
			found = find_ancestors(((SubqueryScan *) node)->subplan, target,
								   ancestors);
			break;
		default:
			break;
	}
	foreach(lc, children)
	{
		if (found)
			break;
		found = find_ancestors(lfirst(lc), target, ancestors);
	}
	if (found ||
		find_ancestors(outerPlan(node), target, ancestors) ||
		find_ancestors(innerPlan(node), target, ancestors))
	{
		*ancestors = lappend(*ancestors, node);
		return true;
	}
	return false;
}

/*
 * (Re)starts the scan: forgets what the previous start read, evaluates the
 * values, and positions the access.
 */
static void
start_scan(ForeignScanState *node, LsmFdwScanState *st)
{
	MemoryContext oldcxt;

	close_iter(st);
	MemoryContextReset(st->start_cxt);
	st->found = NULL;
	st->nfound = 0;
	st->fpos = 0;
	st->pending = NULL;
	st->npending = 0;
	st->ppos = 0;
	st->staged = NULL;
	st->empty = false;
	st->lower_enc = LSMFDW_BOUND_NONE;
	st->upper_enc = LSMFDW_BOUND_NONE;
	st->skip_start = false;
	st->search_done = false;
	st->part = -1;
	st->started = true;

	oldcxt = MemoryContextSwitchTo(st->start_cxt);
	switch (st->access)
	{
		case LSMFDW_ACCESS_KEY_LOOKUP:
		case LSMFDW_ACCESS_KEY_LIST:
			start_lookup(node, st);
			break;
		case LSMFDW_ACCESS_FULL_SCAN:
		case LSMFDW_ACCESS_KEY_RANGE:
			start_range(node, st);
			break;
		case LSMFDW_ACCESS_VALUE_SEARCH:
			start_search(node, st);
			break;
		case LSMFDW_ACCESS_AGGREGATE:
			st->agg = LsmFdwAggBegin(st->table,
									 castNode(ForeignScan, node->ss.ps.plan)->fdw_private,
									 st->start_cxt);
			st->pass_cxt = AllocSetContextCreate(st->start_cxt,
												 "lsm_fdw aggregate pass",
												 ALLOCSET_DEFAULT_SIZES);
			read_again(node, st);
			break;
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Key lookup and key list: encodes the keys, and fetches them (sorted and
 * deduplicated by fetch_keys).  The values come in rows of one per key
 * column, in key order: a lookup's one row; a list's one row with an array
 * of values for some columns (the one column of a one-column key, or its
 * ctid), or several rows (a row list, "(a, b) IN ((1, 2), (3, 4))").  The
 * keys are every combination of each row's values.  Null values (an
 * array's null elements) and values no key can hold find nothing.
 */
static void
start_lookup(ForeignScanState *node, LsmFdwScanState *st)
{
	const LsmFdwTable *t = st->table;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	int			nvalues = list_length(st->value_states);
	char	  **keys = NULL;
	size_t	   *klens = NULL;
	int			n = 0;
	int			cap = 0;
	int			row;

	Assert(nvalues % t->nkeys == 0);
	for (row = 0; row < nvalues / t->nkeys; row++)
	{
		Datum	   *elems[LSMFDW_MAX_KEYS];
		int			nelems[LSMFDW_MAX_KEYS];
		Oid			types[LSMFDW_MAX_KEYS];
		Datum		values[LSMFDW_MAX_KEYS];
		int			pos[LSMFDW_MAX_KEYS] = {0};
		double		total = 1;
		int			k;

		for (k = 0; k < t->nkeys && total > 0; k++)
		{
			int			i = row * t->nkeys + k;

			total *= row_part_values(st, econtext, i, &elems[k], &nelems[k],
									 &types[k]);
		}
		if (total <= 0)
			continue;
		if (n + total > MaxAllocSize / sizeof(char *))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many keys in a key list of foreign table \"%s\"",
							t->relname),
					 errdetail("The lists of its key columns make more than %zu keys.",
							   MaxAllocSize / sizeof(char *))));
		if (n + (int) total > cap)
		{
			cap = Max(n + (int) total, cap * 2);
			keys = keys == NULL ? palloc(sizeof(char *) * cap)
				: repalloc(keys, sizeof(char *) * cap);
			klens = klens == NULL ? palloc(sizeof(size_t) * cap)
				: repalloc(klens, sizeof(size_t) * cap);
		}

		/* every combination, the last column varying fastest */
		for (;;)
		{
			StringInfoData buf;

			for (k = 0; k < t->nkeys; k++)
				values[k] = elems[k][pos[k]];
			initStringInfo(&buf);
			if (LsmFdwEncodeKeyValues(t, values, types, &buf))
			{
				keys[n] = buf.data;
				klens[n] = buf.len;
				n++;
			}
			for (k = t->nkeys - 1; k >= 0; k--)
			{
				if (++pos[k] < nelems[k])
					break;
				pos[k] = 0;
			}
			if (k < 0)
				break;
		}
	}
	if (n == 0)
		return;
	fetch_keys(st, n, keys, klens);
}

/*
 * Evaluates value i of a composite key lookup or list into its values
 * (*elems, *nelems of them, of base type *type): the value itself, or the
 * non-null elements of an array.  Returns how many (0 for a null value).
 */
static int
row_part_values(LsmFdwScanState *st, ExprContext *econtext, int i,
				Datum **elems, int *nelems, Oid *type)
{
	Oid			elemtype = get_element_type(st->value_types[i]);
	bool		isnull;
	Datum		value;

	value = ExecEvalExpr((ExprState *) list_nth(st->value_states, i),
						 econtext, &isnull);
	if (isnull)
		return 0;
	*type = st->value_types[i];
	if (!OidIsValid(elemtype))
	{
		*elems = palloc(sizeof(Datum));
		(*elems)[0] = value;
		*nelems = 1;
	}
	else
	{
		ArrayType  *array = DatumGetArrayTypeP(value);
		bool	   *nulls;
		int16		elmlen;
		bool		elmbyval;
		char		elmalign;
		int			j,
					m = 0;

		get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
		deconstruct_array(array, elemtype, elmlen, elmbyval, elmalign,
						  elems, &nulls, nelems);
		for (j = 0; j < *nelems; j++)
			if (!nulls[j])
				(*elems)[m++] = (*elems)[j];
		*nelems = m;
		*type = getBaseType(elemtype);
	}
	return *nelems;
}

/*
 * Looks up n keys (sorted and deduplicated here) in the pending writes the
 * scan sees, then the others in the store, into st->found in key order.
 */
static void
fetch_keys(LsmFdwScanState *st, int n, char **keys, size_t *klens)
{
	LsmFdwPendingRow *rows = palloc(sizeof(LsmFdwPendingRow) * Max(n, 1));
	const void **mkeys = palloc(sizeof(void *) * Max(n, 1));
	size_t	   *mklens = palloc(sizeof(size_t) * Max(n, 1));
	void	  **vals;
	size_t	   *vlens;
	int		   *rcs;
	int		   *slot_of;
	int			nrows = 0;
	int			m = 0;
	int			i;
	lsm_stats	before;
	int			rc;

	for (i = 0; i < n; i++)
	{
		rows[i].key = keys[i];
		rows[i].klen = klens[i];
	}
	if (n > 1)
		qsort(rows, n, sizeof(LsmFdwPendingRow), pending_cmp);

	/* the transaction's own versions first; the rest from the store */
	slot_of = palloc(sizeof(int) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		LsmFdwPendingRow p;

		if (nrows > 0 &&
			LsmFdwKeyCmp(rows[nrows - 1].key, rows[nrows - 1].klen,
					rows[i].key, rows[i].klen) == 0)
			continue;			/* a duplicate */
		rows[nrows] = rows[i];
		if (LsmFdwPendingLookup(st->table->relid, rows[i].key, rows[i].klen,
								st->curcid, &p, NULL))
		{
			rows[nrows].is_delete = p.is_delete;
			rows[nrows].val = p.val;
			rows[nrows].vlen = p.vlen;
		}
		else
		{
			rows[nrows].is_delete = true;	/* until found */
			rows[nrows].val = NULL;
			mkeys[m] = rows[nrows].key;
			mklens[m] = rows[nrows].klen;
			slot_of[m] = nrows;
			m++;
		}
		nrows++;
	}
	st->found = rows;
	st->nfound = nrows;
	if (m == 0)
		return;

	vals = palloc0(sizeof(void *) * m);
	vlens = palloc0(sizeof(size_t) * m);
	rcs = palloc0(sizeof(int) * m);
	if (st->instrument)
		(void) lsm_get_stats(st->store->db, &before);
	if (m == 1)
	{
		rcs[0] = lsm_get(st->store->db, mkeys[0], mklens[0], &vals[0],
						 &vlens[0]);
		rc = rcs[0] == LSM_NOTFOUND ? LSM_OK : rcs[0];
	}
	else
		rc = lsm_multi_get(st->store->db, m, mkeys, mklens, vals, vlens, rcs);
	if (st->instrument)
		count_lookups(st, &before, m);

	/* copy the engine's allocations, then free them, errors or not */
	PG_TRY();
	{
		for (i = 0; rc == LSM_OK && i < m; i++)
		{
			LsmFdwPendingRow *r = &rows[slot_of[i]];

			if (rcs[i] == LSM_NOTFOUND)
				continue;
			if (rcs[i] != LSM_OK)
			{
				rc = rcs[i];
				break;
			}
			r->val = palloc(vlens[i] + 1);
			memcpy((char *) r->val, vals[i], vlens[i]);
			r->vlen = vlens[i];
			r->is_delete = false;
			/* the row an UPDATE or DELETE by key is about to change */
			if (m == 1)
				LsmFdwNoteRead(st->store, mkeys[0], mklens[0], r->val,
							   r->vlen);
		}
	}
	PG_FINALLY();
	{
		for (i = 0; i < m; i++)
			if (vals[i] != NULL)
				lsm_free(vals[i]);
	}
	PG_END_TRY();
	if (rc != LSM_OK)
		LsmFdwReportError(rc, st->store->db, st->table->relname, "read");
}

/*
 * Full scan and key range: evaluates the bounds (the tightest lower and
 * upper bound win), opens an iterator at the lower bound (backward: the
 * upper), and finds the pending rows from there.
 */
static void
start_range(ForeignScanState *node, LsmFdwScanState *st)
{
	StringInfo	start;
	LsmFdwBoundEnc start_enc;

	resetStringInfo(&st->lower);
	resetStringInfo(&st->upper);
	st->lower_enc = LSMFDW_BOUND_NONE;
	st->upper_enc = LSMFDW_BOUND_NONE;
	if (st->table->nkeys > 1 ? !composite_bounds(node, st)
		: !key_bounds(node, st))
	{
		st->empty = true;
		return;
	}

	if (st->par != NULL && st->par->nparts > 0)
		return;					/* next_parallel claims the ranges */
	if (worker_left_out(st))
	{
		st->empty = true;
		return;
	}
	start = st->backward ? &st->upper : &st->lower;
	start_enc = st->backward ? st->upper_enc : st->lower_enc;
	st->skip_start = (start_enc == LSMFDW_BOUND_EXCLUSIVE);
	st->merge_open = true;
	LsmFdwMergeOpen(&st->merge, st->store, st->table->relid,
					st->table->relname, st->curcid, st->backward,
					start_enc != LSMFDW_BOUND_NONE ? start->data : NULL,
					start->len);
	if (!st->backward && st->upper_enc != LSMFDW_BOUND_NONE)
	{
		/* keys below upper, or up to it: below upper followed by a 0 */
		StringInfoData limit;

		initStringInfo(&limit);
		appendBinaryStringInfo(&limit, st->upper.data, st->upper.len);
		if (st->upper_enc == LSMFDW_BOUND_INCLUSIVE)
			appendStringInfoChar(&limit, '\0');
		LsmFdwMergeSetLimit(&st->merge, limit.data, limit.len);
	}
}

/*
 * The bounds of a range of a one-column key (start_range): the tightest
 * lower and upper bound win.  Returns false if no key can be in the range.
 */
static bool
key_bounds(ForeignScanState *node, LsmFdwScanState *st)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	ListCell   *lc1;
	ListCell   *lc2;
	int			i = 0;

	forboth(lc1, st->value_states, lc2, st->bounds)
	{
		LsmFdwBound kind = lfirst_int(lc2);
		StringInfoData b;
		LsmFdwBoundEnc benc;
		Datum		value;
		bool		isnull;

		value = ExecEvalExpr((ExprState *) lfirst(lc1), econtext, &isnull);
		if (isnull)
			return false;		/* key < NULL holds for no row */
		initStringInfo(&b);
		benc = LsmFdwEncodeKeyBound(st->table, value, st->value_types[i++],
									kind, &b);
		if (benc == LSMFDW_BOUND_EMPTY)
			return false;
		narrow_range(st, &b, benc,
					 kind == LSMFDW_BOUND_LE || kind == LSMFDW_BOUND_LT);
	}
	return true;
}

/*
 * The bounds of a range of a composite key (start_range): the values of
 * the prefix (kinds LSMFDW_BOUND_EQ, first) make its first parts, and the
 * bounds of the next column narrow it (LsmFdwEncodePrefixBound).  Returns
 * false if no key can be in the range: a null value, or a prefix value no
 * key can hold.
 */
static bool
composite_bounds(ForeignScanState *node, LsmFdwScanState *st)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	StringInfoData prefix;
	StringInfoData b;
	ListCell   *lc1;
	ListCell   *lc2;
	int			k = 0;
	int			i = 0;
	int			end;

	initStringInfo(&prefix);
	initStringInfo(&b);
	forboth(lc1, st->value_states, lc2, st->bounds)
	{
		LsmFdwBound kind = lfirst_int(lc2);
		Datum		value;
		bool		isnull;

		value = ExecEvalExpr((ExprState *) lfirst(lc1), econtext, &isnull);
		if (isnull)
			return false;		/* col = NULL, col < NULL hold for no row */
		if (kind == LSMFDW_BOUND_EQ)
		{
			if (!LsmFdwEncodeKeyPart(st->table, k++, value,
									 st->value_types[i++], &prefix) ||
				prefix.len > LSM_MAX_KEY_LEN)
				return false;
			continue;
		}
		resetStringInfo(&b);
		narrow_range(st, &b,
					 LsmFdwEncodePrefixBound(st->table, prefix.data, prefix.len,
											 k, &value, st->value_types[i++],
											 kind, &b),
					 kind == LSMFDW_BOUND_LE || kind == LSMFDW_BOUND_LT);
	}

	/* the prefix's own range: its lower end, then its upper */
	for (end = 0; end < 2; end++)
	{
		resetStringInfo(&b);
		narrow_range(st, &b,
					 LsmFdwEncodePrefixBound(st->table, prefix.data, prefix.len,
											 k, NULL, InvalidOid,
											 end ? LSMFDW_BOUND_LE
											 : LSMFDW_BOUND_GE, &b),
					 end == 1);
	}
	return true;
}

/* Narrows the scan's range to the bound b (an upper one if upper). */
static void
narrow_range(LsmFdwScanState *st, StringInfo b, LsmFdwBoundEnc benc,
			 bool upper)
{
	if (benc == LSMFDW_BOUND_NONE)
		return;
	if (upper)
		tighten_bound(&st->upper, &st->upper_enc, b, benc, true);
	else
		tighten_bound(&st->lower, &st->lower_enc, b, benc, false);
}

/* Whether e lies past the end of the claimed range or of the scan. */
static inline bool
part_ended(LsmFdwScanState *st, const lsm_entry *e)
{
	return (st->part_hi != NULL &&
			LsmFdwKeyCmp(e->key, e->klen, st->part_hi, st->part_hilen) >= 0) ||
		past_bound(st, e->key, e->klen);
}

/*
 * Parallel full scan and key range: stores in slot the next row of the
 * ranges this process claims, within the scan's bounds; returns false when
 * every range has been claimed.  The transaction has no pending writes to
 * merge (the leader shared its view only then).
 */
static bool
next_parallel(LsmFdwScanState *st, TupleTableSlot *slot)
{
	if (st->empty)
		return false;
	for (;;)
	{
		const lsm_entry *e = NULL;

		if (st->part >= 0 &&
			(e = LsmFdwBatchNext(&st->batch, st->iter, st->store,
								 st->table->relname)) == NULL)
			st->part = -1;
		if (st->part < 0)
		{
			if (!claim_part(st))
				return false;
			continue;
		}
		/* a batch that ends inside the range and bounds needs no checks */
		if (st->batch.pos == 1)
			st->batch_inside = !part_ended(st, &st->batch.e[st->batch.n - 1]);
		if (!st->batch_inside && part_ended(st, e))
		{
			st->part = -1;		/* the end of the range */
			continue;
		}
		if (st->lower_enc == LSMFDW_BOUND_EXCLUSIVE &&
			LsmFdwKeyCmp(e->key, e->klen, st->lower.data, st->lower.len) == 0)
			continue;
		store_row(st, slot, e->key, e->klen, e->val, e->vlen);	/* copies */
		return true;
	}
}

/*
 * Claims the next key range of the shared view that meets the scan's
 * bounds, and positions the iterator over the view (opened on the first
 * claim) at its start; false if none is left.
 */
static bool
claim_part(LsmFdwScanState *st)
{
	LsmFdwParallel *par = st->par;

	for (;;)
	{
		uint32		i = pg_atomic_fetch_add_u32(&par->next_part, 1);
		const void *lo;
		const void *hi;
		size_t		lolen;
		size_t		hilen;
		int			rc;

		if (i >= (uint32) par->nparts)
			return false;
		if (lsm_view_part(PARALLEL_VIEW(par), par->viewlen, i, &lo, &lolen,
						  &hi, &hilen) != LSM_OK)
			elog(ERROR, "lsm_fdw: the shared view of a parallel scan is malformed");
		/* a range outside the bounds holds nothing to read */
		if ((lo != NULL && past_bound(st, lo, lolen)) ||
			(hi != NULL && st->lower_enc != LSMFDW_BOUND_NONE &&
			 LsmFdwKeyCmp(hi, hilen, st->lower.data, st->lower.len) <= 0))
			continue;
		if (st->iter == NULL &&
			(rc = lsm_iter_open_view(st->store->db, PARALLEL_VIEW(par),
									 par->viewlen, &st->iter)) != LSM_OK)
			LsmFdwReportError(rc, st->store->db, st->table->relname, "read");
		if (st->lower_enc != LSMFDW_BOUND_NONE &&
			(lo == NULL ||
			 LsmFdwKeyCmp(st->lower.data, st->lower.len, lo, lolen) > 0))
		{
			lo = st->lower.data;
			lolen = st->lower.len;
		}
		lsm_iter_seek(st->iter, lo, lo != NULL ? lolen : 0);
		memset(&st->batch, 0, sizeof(st->batch));
		st->part = (int) i;
		st->part_hi = hi;
		st->part_hilen = hilen;
		my_share(par)->ranges++;
		return true;
	}
}

/*
 * Only the parallel-aware scans are parallel safe (plan.c), and only while
 * the transaction has not written to the table: the workers could not read
 * those writes.  (A plan cached before the writes is executed by the
 * leader alone: lsmfdwEstimateDSMForeignScan.)
 */
static bool
lsmfdwIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel,
								RangeTblEntry *rte)
{
	return !LsmFdwPendingAny(rte->relid);
}

/*
 * The leader, before the workers start: shares its view of the store, if
 * its transaction has not written to the table (the workers could not see
 * those writes) and the engine can (lsm_share); else the leader reads
 * alone.  The size of the shared memory follows.
 */
static Size
lsmfdwEstimateDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;

	if (st->view == NULL && !LsmFdwPendingAny(st->table->relid))
	{
		int			rc = lsm_share(st->store->db,
								   PARTS_PER_PARTICIPANT * (pcxt->nworkers + 1),
								   &st->view, &st->viewlen);

		if (rc == LSM_BUSY)
			elog(DEBUG1, "lsm_fdw: \"%s\" is read by the leader alone: %s",
				 st->table->relname, lsm_errmsg(st->store->db));
		else if (rc != LSM_OK)
			LsmFdwReportError(rc, st->store->db, st->table->relname, "share");
	}
	return add_size(offsetof(LsmFdwParallel, share) +
					sizeof(LsmFdwShare) * (pcxt->nworkers + 1), st->viewlen);
}

static void
lsmfdwInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
							   void *coordinate)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;
	LsmFdwParallel *par = (LsmFdwParallel *) coordinate;

	pg_atomic_init_u32(&par->next_part, 0);
	par->nparts = st->view != NULL ? lsm_view_parts(st->view, st->viewlen) : 0;
	par->nslots = pcxt->nworkers + 1;
	memset(par->share, 0, sizeof(LsmFdwShare) * par->nslots);
	par->viewlen = st->viewlen;
	if (st->view != NULL)
		memcpy(PARALLEL_VIEW(par), st->view, st->viewlen);
	st->par = par;
}

/*
 * Before the shared memory goes: the leader keeps what each participant
 * did (the ranges it read; for a value search its blocks, and the
 * search's counters summed), for EXPLAIN ANALYZE.
 */
static void
lsmfdwShutdownForeignScan(ForeignScanState *node)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;
	int			i;

	if (st == NULL || st->par == NULL || IsParallelWorker())
		return;
	if (st->parts_read == NULL)
	{
		st->parts_read = MemoryContextAllocZero(GetMemoryChunkContext(st),
												sizeof(uint64) * st->par->nslots);
		st->nslots = st->par->nslots;
	}
	for (i = 0; i < st->nslots && i < st->par->nslots; i++)
	{
		LsmFdwShare *sh = &st->par->share[i];

		if (st->access == LSMFDW_ACCESS_VALUE_SEARCH)
		{
			st->parts_read[i] += sh->search.blocks_scanned;
			add_search_stats(st, sh->searches, &sh->search);
		}
		else
			st->parts_read[i] += sh->ranges;
	}
	st->alone = st->par->nparts == 0;
	st->par = NULL;				/* the shared memory is going */
}

/* This participant's slot of what each did. */
static LsmFdwShare *
my_share(LsmFdwParallel *par)
{
	return &par->share[IsParallelWorker() ?
					   Min(ParallelWorkerNumber + 1, par->nslots - 1) : 0];
}

/*
 * A parallel-aware scan whose leader could not share its view: the leader
 * reads alone, and a worker has nothing to read (true), or fails if the
 * leader does not take part.  False for every other scan.
 */
static bool
worker_left_out(LsmFdwScanState *st)
{
	if (st->par == NULL || st->par->nparts > 0 || !IsParallelWorker())
		return false;
	if (!parallel_leader_participation)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot read foreign table \"%s\" in a parallel worker",
						st->table->relname),
				 errdetail("The leader could not share its snapshot of the table: its transaction wrote to the table, or the files of its snapshot were compacted away since."),
				 errhint("Set parallel_leader_participation to on, or max_parallel_workers_per_gather to 0.")));
	return true;
}

/* A rescan of the Gather: every range is to be read again. */
static void
lsmfdwReInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
								 void *coordinate)
{
	LsmFdwParallel *par = (LsmFdwParallel *) coordinate;

	pg_atomic_write_u32(&par->next_part, 0);
}

static void
lsmfdwInitializeWorkerForeignScan(ForeignScanState *node, shm_toc *toc,
								  void *coordinate)
{
	LsmFdwScanState *st = (LsmFdwScanState *) node->fdw_state;

	st->par = (LsmFdwParallel *) coordinate;
}

/*
 * Makes bound (of kind *enc) the tighter of itself and b (of kind benc):
 * the smaller for an upper bound, the larger for a lower one, the exclusive
 * one of two equal ones.
 */
static void
tighten_bound(StringInfo bound, LsmFdwBoundEnc *enc, StringInfo b,
			  LsmFdwBoundEnc benc, bool upper)
{
	if (*enc != LSMFDW_BOUND_NONE)
	{
		int			c = LsmFdwKeyCmp(b->data, b->len, bound->data, bound->len);

		if (upper ? c > 0 : c < 0)
			return;
		if (c == 0 && benc != LSMFDW_BOUND_EXCLUSIVE)
			return;
	}
	resetStringInfo(bound);
	appendBinaryStringInfo(bound, b->data, b->len);
	*enc = benc;
}

/*
 * Value search: evaluates and encodes the value, and opens the engine's
 * search.  A null value, or one no field can hold, finds nothing.
 */
static void
start_search(ForeignScanState *node, LsmFdwScanState *st)
{
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	LsmFdwColumn *col = NULL;
	Datum		value;
	bool		isnull;
	int			rc;
	int			i;

	for (i = 0; i < st->table->natts; i++)
		if (st->table->cols[i].field == st->field)
			col = &st->table->cols[i];
	Assert(col != NULL);

	value = ExecEvalExpr(linitial(st->value_states), econtext, &isnull);
	resetStringInfo(&st->needle);
	if (isnull ||
		!LsmFdwEncodeNeedle(col, value, st->value_types[0], &st->needle) ||
		worker_left_out(st))
	{
		st->empty = true;
		return;
	}
	if (st->par != NULL && st->par->nparts > 0)
	{
		/*
		 * Parallel: the search of the shared view, whose units every
		 * participant claims from the counter (there are no pending writes)
		 */
		rc = lsm_value_search_view(st->store->db, PARALLEL_VIEW(st->par),
								   st->par->viewlen, st->field,
								   st->needle.data, st->needle.len,
								   st->strategy, claim_unit, st->par,
								   &st->iter);
		if (rc != LSM_OK)
			LsmFdwReportError(rc, st->store->db, st->table->relname, "search");
		return;
	}
	st->pending = LsmFdwPendingVisible(st->table->relid, st->curcid,
									   &st->npending);
	st->staged = LsmFdwPendingStageIter(st->table->relid, st->curcid);
	if (st->staged != NULL)
		lsm_iter_seek(st->staged, NULL, 0);
	rc = lsm_value_search_with(st->store->db, st->field, st->needle.data,
							   st->needle.len, st->strategy, &st->iter);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, st->store->db, st->table->relname, "search");
}

/* lsm_claim_fn of a parallel value search: the next unit of the search. */
static uint32_t
claim_unit(void *arg)
{
	return pg_atomic_fetch_add_u32(&((LsmFdwParallel *) arg)->next_part, 1);
}

/*
 * Aggregate: reads the full scan or range (committed rows merged with the
 * pending writes the scan sees) into the groups of the pass of st->agg; if
 * they outgrow memory, in more passes, from the first (agg.c).
 */
static void
aggregate(ForeignScanState *node, LsmFdwScanState *st)
{
	const char *key;
	const char *row;
	size_t		klen;
	size_t		rowlen;
	uint32		n = 0;

	while (next_in_range(st, &key, &klen, &row, &rowlen))
	{
		if (!LsmFdwAggAdd(st->agg, key, klen, row, rowlen))
		{
			LsmFdwAggSplit(st->agg);
			read_again(node, st);
			continue;
		}
		if ((++n & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	st->agg_done = true;
}

/*
 * Aggregate: (re)opens the full scan or range for a pass (its bounds
 * evaluated again), in a memory context of its own (the merge's copy of
 * the pending writes, once per pass).
 */
static void
read_again(ForeignScanState *node, LsmFdwScanState *st)
{
	MemoryContext old;

	if (st->merge_open)
	{
		LsmFdwMergeClose(&st->merge);
		st->merge_open = false;
	}
	MemoryContextReset(st->pass_cxt);
	old = MemoryContextSwitchTo(st->pass_cxt);
	start_range(node, st);
	MemoryContextSwitchTo(old);
	st->agg_done = false;
}

/*
 * Key lookup and key list: stores the next row found in slot; returns
 * false at the end.
 */
static bool
next_found(LsmFdwScanState *st, TupleTableSlot *slot)
{
	while (st->fpos < st->nfound)
	{
		int			i = st->fpos++;
		LsmFdwPendingRow *r = &st->found[st->backward ? st->nfound - 1 - i : i];

		if (r->is_delete)
			continue;
		store_row(st, slot, r->key, r->klen, r->val, r->vlen);
		return true;
	}
	return false;
}

/*
 * Full scan and key range: stores the next row of the merge (committed rows
 * overlaid with the pending writes the scan sees) in slot, up to the upper
 * bound (backward: down to the lower); returns false at the end.
 */
static bool
next_ordered(LsmFdwScanState *st, TupleTableSlot *slot)
{
	const char *key;
	const char *row;
	size_t		klen;
	size_t		rowlen;

	if (!next_in_range(st, &key, &klen, &row, &rowlen))
		return false;
	store_row(st, slot, key, klen, row, rowlen);	/* copies */
	return true;
}

/*
 * Full scan and key range: the next entry of the merge within the bounds
 * (valid until the next move); false at the end.
 */
static inline bool
next_in_range(LsmFdwScanState *st, const char **key, size_t *klen,
			  const char **row, size_t *rowlen)
{
	if (st->empty || !LsmFdwMergeNext(&st->merge, key, klen, row, rowlen))
		return false;
	if (st->skip_start)
	{
		StringInfo	start = st->backward ? &st->upper : &st->lower;

		/* only the first key can equal the bound the scan starts at */
		st->skip_start = false;
		if (LsmFdwKeyCmp(*key, *klen, start->data, start->len) == 0 &&
			!LsmFdwMergeNext(&st->merge, key, klen, row, rowlen))
			return false;
	}
	return !past_bound(st, *key, *klen);
}

/*
 * Value search: stores the next row in slot: first the committed rows the
 * engine finds, except those the transaction has rewritten, then the
 * transaction's visible pending rows whose field holds the value; returns
 * false at the end.
 */
static bool
next_searched(LsmFdwScanState *st, TupleTableSlot *slot)
{
	int			rc;

	if (st->empty)
		return false;
	while (!st->search_done)
	{
		const char *key;
		const char *row;
		size_t		klen;
		size_t		rowlen;
		LsmFdwPendingRow p;

		if (!lsm_iter_valid(st->iter))
		{
			if ((rc = lsm_iter_status(st->iter)) != LSM_OK)
				LsmFdwReportError(rc, st->store->db, st->table->relname,
								  "search");
			collect_search_stats(st);
			st->search_done = true;
			lsm_iter_close(st->iter);
			st->iter = NULL;
			break;
		}
		key = lsm_iter_key(st->iter, &klen);
		row = lsm_iter_value(st->iter, &rowlen);
		if ((st->npending > 0 || st->staged != NULL) &&
			LsmFdwPendingLookup(st->table->relid, key, klen, st->curcid, &p,
								NULL))
		{
			lsm_iter_next(st->iter);
			continue;
		}
		store_row(st, slot, key, klen, row, rowlen);
		lsm_iter_next(st->iter);
		return true;
	}

	while (st->ppos < st->npending)
	{
		LsmFdwPendingRow *p = &st->pending[st->ppos++];

		if (p->is_delete || !holds_needle(st, p->val, p->vlen))
			continue;
		store_row(st, slot, p->key, p->klen, p->val, p->vlen);
		return true;
	}

	/* the stage's rows, unless rewritten in memory since */
	while (st->staged != NULL && lsm_iter_valid(st->staged))
	{
		const char *key;
		const char *row;
		size_t		klen;
		size_t		rowlen;
		bool		found = false;

		key = lsm_iter_key(st->staged, &klen);
		row = lsm_iter_value(st->staged, &rowlen);
		if (!lsm_iter_is_delete(st->staged) &&
			holds_needle(st, row, rowlen) &&
			!LsmFdwPendingInMemory(st->table->relid, key, klen, st->curcid))
		{
			store_row(st, slot, key, klen, row, rowlen);
			found = true;
		}
		lsm_iter_next(st->staged);
		if (found)
			return true;
		CHECK_FOR_INTERRUPTS();
	}
	if (st->staged != NULL && (rc = lsm_iter_status(st->staged)) != LSM_OK)
		LsmFdwReportError(rc, st->store->db, st->table->relname, "search");
	return false;
}

/* Whether the searched field of an encoded row holds the needle. */
static bool
holds_needle(LsmFdwScanState *st, const char *row, size_t rowlen)
{
	lsm_field	f;

	return lsm_row_field(row, rowlen, st->field, &f) == LSM_OK &&
		!f.is_null && f.len == st->needle.len &&
		memcmp(f.data, st->needle.data, f.len) == 0;
}

/* Whether key lies beyond the bound where the scan ends. */
static inline bool
past_bound(LsmFdwScanState *st, const char *key, size_t klen)
{
	StringInfo	end = st->backward ? &st->lower : &st->upper;
	LsmFdwBoundEnc enc = st->backward ? st->lower_enc : st->upper_enc;
	int			c;

	if (enc == LSMFDW_BOUND_NONE)
		return false;
	c = LsmFdwKeyCmp(key, klen, end->data, end->len);
	if (st->backward)
		c = -c;
	return c > 0 || (c == 0 && enc == LSMFDW_BOUND_EXCLUSIVE);
}

/*
 * Decodes an entry into slot as a virtual tuple (current memory context);
 * if the plan reads ctid, sets it (an error if the row has none).
 */
static void
store_row(LsmFdwScanState *st, TupleTableSlot *slot, const char *key,
		  size_t klen, const char *row, size_t rowlen)
{
	if (st->nattrs == 0)
	{
		bool	   *isnull = slot->tts_isnull;
		int			natts = st->table->natts;

		/* count(*): no value (a loop, cheaper than memset for a few) */
		for (int i = 0; i < natts; i++)
			isnull[i] = true;
	}
	else
		LsmFdwDecodeRow(st->table, key, klen, row, rowlen, st->attrs,
						st->nattrs, slot->tts_values, slot->tts_isnull,
						&st->arena);
	ExecStoreVirtualTuple(slot);
	if (st->ctid && !LsmFdwKeyToCtid(st->table, key, klen, &slot->tts_tid))
		LsmFdwReportNoCtid(st->table, key, klen);
}

/* Closes the scan's iterators, if open.  Raises no error. */
static void
close_iter(LsmFdwScanState *st)
{
	if (st->iter != NULL)
	{
		if (st->access == LSMFDW_ACCESS_VALUE_SEARCH && !st->search_done)
			collect_search_stats(st);
		lsm_iter_close(st->iter);
		st->iter = NULL;
	}
	if (st->staged != NULL)
	{
		lsm_iter_close(st->staged);
		st->staged = NULL;
	}
	if (st->merge_open)
	{
		LsmFdwMergeClose(&st->merge);
		st->merge_open = false;
	}
}

/*
 * Adds the counters of the scan's value search iterator to its sums, or,
 * in a parallel search, to this participant's slot (the leader sums the
 * slots at shutdown).
 */
static void
collect_search_stats(LsmFdwScanState *st)
{
	lsm_search_stats s;

	if (lsm_iter_search_stats(st->iter, &s) != LSM_OK)
		return;
	if (st->par != NULL && st->par->nparts > 0)
	{
		LsmFdwShare *sh = my_share(st->par);

		sh->searches++;
		sum_search_stats(&sh->search, &s);
	}
	else
		add_search_stats(st, 1, &s);
}

/* Adds the counters s of searches searches to the scan's sums. */
static void
add_search_stats(LsmFdwScanState *st, int searches,
				 const lsm_search_stats *s)
{
	if (searches > 0)
		st->strategy_used = s->strategy;
	st->searches += searches;
	sum_search_stats(&st->search, s);
}

/* Adds the counters s to sum (whose strategy becomes s's, if set). */
static void
sum_search_stats(lsm_search_stats *sum, const lsm_search_stats *s)
{
	if (s->strategy != LSM_SEARCH_AUTO)
		sum->strategy = s->strategy;
	sum->nodes_visited += s->nodes_visited;
	sum->leaves_probed += s->leaves_probed;
	sum->leaves_positive += s->leaves_positive;
	sum->flat_words += s->flat_words;
	sum->sstables_unfiltered += s->sstables_unfiltered;
	sum->sstables_scanned += s->sstables_scanned;
	sum->sstables_false += s->sstables_false;
	sum->blocks_scanned += s->blocks_scanned;
	sum->blocks_skipped += s->blocks_skipped;
	sum->memtable_scanned += s->memtable_scanned;
	sum->rows_validated += s->rows_validated;
	sum->rows_rejected += s->rows_rejected;
	sum->rows_returned += s->rows_returned;
}

/*
 * Adds to the scan's lookup counters the handle's counters since before,
 * for a lookup of keys keys.
 */
static void
count_lookups(LsmFdwScanState *st, const lsm_stats *before, uint64 keys)
{
	lsm_stats	after;

	if (lsm_get_stats(st->store->db, &after) != LSM_OK)
		return;
	st->lookups.keys += keys;
	st->lookups.key_hashes += after.key_hashes - before->key_hashes;
	st->lookups.filter_probes += after.filter_probes - before->filter_probes;
	st->lookups.filter_negatives += after.filter_negatives -
		before->filter_negatives;
	st->lookups.sstable_reads += after.sstable_reads - before->sstable_reads;
	st->lookups.false_positives += after.false_positives -
		before->false_positives;
}

/* qsort comparator of LsmFdwPendingRow by key. */
static int
pending_cmp(const void *a, const void *b)
{
	const LsmFdwPendingRow *x = (const LsmFdwPendingRow *) a;
	const LsmFdwPendingRow *y = (const LsmFdwPendingRow *) b;

	return LsmFdwKeyCmp(x->key, x->klen, y->key, y->klen);
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
	if (st->access == LSMFDW_ACCESS_VALUE_SEARCH)
		st->search_done = true; /* no counters to collect now */
	close_iter(st);
	if (st->view != NULL)
	{
		lsm_unshare(st->store->db);
		lsm_free(st->view);
		st->view = NULL;
	}
	if (st->store != NULL)
	{
		LsmFdwScanEnd(st->store, st->curcid);
		LsmFdwUnpinStore(st->store);
	}
}

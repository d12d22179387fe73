/*-------------------------------------------------------------------------
 *
 * analyze.c
 *		  ANALYZE of lsm_fdw foreign tables.
 *
 * ANALYZE asks a foreign table for its size in pages and for a random
 * sample of its rows, from which it computes the column statistics of
 * pg_statistic and the reltuples and relpages of pg_class.  The size is the
 * store's bytes (every level's files plus the memtable) in BLCKSZ pages.
 * The sample is drawn as file_fdw and postgres_fdw draw theirs: one pass
 * over every row with reservoir sampling (Vitter's algorithm Z, in
 * utils/sampling.h), so the whole table is read once and only the rows that
 * enter the reservoir are decoded.  The count of rows seen is exact, and a
 * store keeps no dead rows that a reader could see (the engine's iterator
 * already hides overwritten versions and tombstones): *totaldeadrows is 0.
 *
 * The rows are those of the store's committed state when the sample starts
 * (the iterator's snapshot, after a refresh that picks up other backends'
 * commits).  Writes pending in the current transaction, if ANALYZE runs in
 * a transaction block that wrote the table, are not sampled.
 *
 * The scan honours cancellation (vacuum_delay_point, which also applies the
 * cost-based delay of VACUUM and ANALYZE, at every row; the engine's
 * iterator polls the interrupt callback while it skips tombstones).  The
 * store stays pinned and the iterator open only inside a PG_TRY whose
 * PG_FINALLY releases both.
 *
 * src/fdw/analyze.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "commands/vacuum.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"

#include "lsm_fdw.h"

static bool lsmfdwAnalyzeForeignTable(Relation relation,
									  AcquireSampleRowsFunc *func,
									  BlockNumber *totalpages);
static int	acquire_sample_rows(Relation rel, int elevel, HeapTuple *rows,
								int targrows, double *totalrows,
								double *totaldeadrows);
static HeapTuple sample_row(LsmFdwTable *t, TupleDesc tupdesc,
							lsm_iter *iter, MemoryContext rowcxt,
							Datum *values, bool *nulls);

/* Fills in the ANALYZE callback of the handler's FdwRoutine. */
void
LsmFdwSetAnalyzeRoutines(FdwRoutine *routine)
{
	routine->AnalyzeForeignTable = lsmfdwAnalyzeForeignTable;
}

/*
 * AnalyzeForeignTable: every lsm_fdw table can be analyzed.  Reports the
 * store's size in pages (at least 1, as file_fdw does) and the sampling
 * function.  Raises an error if the table's options are unusable or its
 * store cannot be opened.
 */
static bool
lsmfdwAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
						  BlockNumber *totalpages)
{
	LsmFdwTable *t = LsmFdwGetTable(relation);
	LsmFdwStore *s = LsmFdwOpenStore(t, true);
	double		pages;

	pages = ceil(LsmFdwGetStoreSize(s, t->relname).bytes / BLCKSZ);
	if (pages < 1)
		pages = 1;
	if (pages > (double) MaxBlockNumber)
		pages = (double) MaxBlockNumber;

	*totalpages = (BlockNumber) pages;
	*func = acquire_sample_rows;
	return true;
}

/*
 * AcquireSampleRowsFunc: reads every committed row of rel's store and keeps
 * a uniform random sample of at most targrows of them in rows[], as heap
 * tuples with rel's tuple descriptor, allocated in the caller's memory
 * context.  Returns the number of rows sampled; *totalrows is the number of
 * rows in the store, *totaldeadrows 0.  The order of rows[] is that of the
 * reservoir, not the key order (ANALYZE does not need one for foreign
 * tables).  Raises an error on an engine failure, a row that cannot be
 * decoded, or a cancellation.
 */
static int
acquire_sample_rows(Relation rel, int elevel, HeapTuple *rows, int targrows,
					double *totalrows, double *totaldeadrows)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	LsmFdwTable *t = LsmFdwGetTable(rel);
	LsmFdwStore *s;
	MemoryContext rowcxt;
	ReservoirStateData rstate;
	Datum	   *values;
	bool	   *nulls;
	double		seen = 0;
	double		rowstoskip = -1;	/* -1: not drawn yet */
	int			numrows = 0;
	lsm_iter   *volatile iter = NULL;

	Assert(targrows > 0);

	values = palloc(sizeof(Datum) * Max(tupdesc->natts, 1));
	nulls = palloc(sizeof(bool) * Max(tupdesc->natts, 1));
	rowcxt = AllocSetContextCreate(CurrentMemoryContext,
								   "lsm_fdw analyze row",
								   ALLOCSET_DEFAULT_SIZES);
	reservoir_init_selection_state(&rstate, targrows);

	s = LsmFdwOpenStore(t, true);
	LsmFdwPinStore(s);
	PG_TRY();
	{
		lsm_iter   *it;
		int			rc;

		rc = lsm_iter_open(s->db, &it);
		if (rc != LSM_OK)
			LsmFdwReportError(rc, s->db, t->relname, "read");
		iter = it;
		lsm_iter_seek(it, NULL, 0);

		for (; lsm_iter_valid(it); lsm_iter_next(it))
		{
			/* cancellation, and the cost-based delay of ANALYZE */
			vacuum_delay_point();

			if (numrows < targrows)
			{
				/* the first targrows rows fill the reservoir */
				rows[numrows++] = sample_row(t, tupdesc, it, rowcxt,
											 values, nulls);
			}
			else
			{
				/*
				 * Then each row replaces a random one of the reservoir with
				 * decreasing probability; S rows are skipped in between.
				 * Vitter's t is the number of rows already seen.
				 */
				if (rowstoskip < 0)
					rowstoskip = reservoir_get_next_S(&rstate, seen,
													  targrows);
				if (rowstoskip <= 0)
				{
					int			k;

					k = (int) (targrows *
							   sampler_random_fract(&rstate.randstate));
					Assert(k >= 0 && k < targrows);
					heap_freetuple(rows[k]);
					rows[k] = sample_row(t, tupdesc, it, rowcxt,
										 values, nulls);
				}
				rowstoskip -= 1;
			}
			seen += 1;
		}
		rc = lsm_iter_status(it);
		if (rc != LSM_OK)
			LsmFdwReportError(rc, s->db, t->relname, "read");
	}
	PG_FINALLY();
	{
		if (iter != NULL)
			lsm_iter_close(iter);
		LsmFdwUnpinStore(s);
	}
	PG_END_TRY();

	MemoryContextDelete(rowcxt);
	pfree(values);
	pfree(nulls);

	*totalrows = seen;
	*totaldeadrows = 0;

	ereport(elevel,
			(errmsg("\"%s\": lsm_fdw store contains %.0f rows; %d rows in sample",
					RelationGetRelationName(rel), seen, numrows)));
	return numrows;
}

/*
 * Decodes the iterator's current entry and returns it as a heap tuple of
 * tupdesc in the current memory context.  The decoding's own allocations go
 * to rowcxt, which is reset; values and nulls are scratch arrays of
 * tupdesc->natts entries.  Raises a data-corruption error for a malformed
 * row.
 */
static HeapTuple
sample_row(LsmFdwTable *t, TupleDesc tupdesc, lsm_iter *iter,
		   MemoryContext rowcxt, Datum *values, bool *nulls)
{
	MemoryContext oldcxt;
	const char *key;
	const char *row;
	size_t		klen;
	size_t		rowlen;
	HeapTuple	tuple;

	key = lsm_iter_key(iter, &klen);
	row = lsm_iter_value(iter, &rowlen);

	MemoryContextReset(rowcxt);
	oldcxt = MemoryContextSwitchTo(rowcxt);
	LsmFdwDecodeRow(t, key, klen, row, rowlen, NULL, 0, values, nulls, NULL);
	MemoryContextSwitchTo(oldcxt);

	tuple = heap_form_tuple(tupdesc, values, nulls);
	MemoryContextReset(rowcxt);
	return tuple;
}

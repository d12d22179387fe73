/*-------------------------------------------------------------------------
 *
 * functions.c
 *		  SQL functions that look into and maintain the store of an lsm_fdw
 *		  foreign table.
 *
 * Every function takes the table as a regclass and works on this backend's
 * handle of its store (store.c), refreshed first so that what other
 * backends committed is included:
 *
 *	lsm_stats(t)			one row per level that holds files, and level -1
 *							for the memtable
 *	lsm_hierarchy(t)		the shape of the value filter hierarchy
 *	lsm_counters(t)			the handle's counters (this backend's work since
 *							it opened the store or reset them), and the
 *							store's record of invalid WAL tails discarded
 *	lsm_reset_counters(t)	sets them to zero
 *	lsm_flush(t)			memtable -> level-0 SSTable now
 *	lsm_compact(t, full)	compaction until no level is over its target, or
 *							with full, of everything into one level
 *	lsm_verify(t)			every checksum and invariant; true or an error,
 *							with warnings and notices for what is not
 *							damage (a discarded WAL tail, leftover files)
 *	lsm_store_path(t)		the store's directory
 *	lsm_store_size(t)		bytes of the files in that directory
 *
 * They act on the committed state: writes pending in the current
 * transaction reach the store only at commit (xact.c).
 *
 * Checks, in this order: the relation exists (AccessShareLock, kept to the
 * end of the transaction, so a concurrent DROP waits), it is a foreign
 * table of lsm_fdw (ERRCODE_WRONG_OBJECT_TYPE otherwise), and the caller may
 * use it: reading functions (stats, hierarchy, counters, path, size) need
 * SELECT on the table; maintenance (flush, compact, verify, reset) needs
 * ownership, as VACUUM does.  EXECUTE is left granted to PUBLIC: the table
 * checks are the access control.  NULL arguments give NULL (STRICT).
 *
 * The store is pinned while the engine works on it, and unpinned by a
 * PG_FINALLY, so that an invalidation processed meanwhile (or during the
 * error report) cannot close the handle under the engine.  Compaction polls
 * the interrupt callback that store.c installs, so a cancel or a
 * statement_timeout stops it with query_canceled; the engine leaves the
 * store as it was before the step it abandoned.
 *
 * src/fdw/functions.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "lsm_fdw.h"

/* What a function may do to the table, and so what the caller needs. */
typedef enum LsmFdwFuncAccess
{
	LSMFDW_FUNC_READ,			/* SELECT on the table */
	LSMFDW_FUNC_MAINTAIN		/* ownership */
} LsmFdwFuncAccess;

/* The engine operation run by run_engine. */
typedef enum LsmFdwFuncOp
{
	LSMFDW_OP_STATS,
	LSMFDW_OP_RESET_COUNTERS,
	LSMFDW_OP_FLUSH,
	LSMFDW_OP_COMPACT,
	LSMFDW_OP_COMPACT_ALL,
	LSMFDW_OP_VERIFY
} LsmFdwFuncOp;

/* Columns of the results. */
#define LSMFDW_STATS_COLS		6
#define LSMFDW_HIERARCHY_COLS	9
#define LSMFDW_COUNTERS_COLS	33
#define LSMFDW_COUNTERS_COLS_0_2	31	/* lsm_counters before 0.3 (a library
										 * newer than the extension's SQL,
										 * before ALTER EXTENSION UPDATE) */

/* lsm_stats reports the memtable as this level */
#define LSMFDW_MEMTABLE_LEVEL	(-1)

PG_FUNCTION_INFO_V1(lsm_fdw_stats);
PG_FUNCTION_INFO_V1(lsm_fdw_hierarchy);
PG_FUNCTION_INFO_V1(lsm_fdw_counters);
PG_FUNCTION_INFO_V1(lsm_fdw_reset_counters);
PG_FUNCTION_INFO_V1(lsm_fdw_flush);
PG_FUNCTION_INFO_V1(lsm_fdw_compact);
PG_FUNCTION_INFO_V1(lsm_fdw_verify);
PG_FUNCTION_INFO_V1(lsm_fdw_store_path);
PG_FUNCTION_INFO_V1(lsm_fdw_store_size);
PG_FUNCTION_INFO_V1(lsm_fdw_key_columns);

static LsmFdwTable *open_table(Oid relid, LsmFdwFuncAccess access,
							   const char *funcname);
static void check_our_table(Relation rel, const char *funcname);
static void run_engine(LsmFdwTable *t, LsmFdwFuncOp op, lsm_stats *st);
static int64 directory_size(const char *path);

/*
 * lsm_stats(regclass): one row (level, files, entries, bytes,
 * key_filter_bytes, value_filter_bytes) per level that holds files, in level
 * order, then the memtable as level -1 (its entries and arena bytes; no
 * files or filters).
 */
Datum
lsm_fdw_stats(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_READ,
								"lsm_stats");
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[LSMFDW_STATS_COLS];
	bool		nulls[LSMFDW_STATS_COLS];
	lsm_stats	st;
	int			l;

	run_engine(t, LSMFDW_OP_STATS, &st);

	/* SetSingleFuncCall: every PostgreSQL 15 release has this name */
	SetSingleFuncCall(fcinfo, 0);
	memset(nulls, 0, sizeof(nulls));
	for (l = 0; l < st.levels && l < LSM_MAX_LEVELS; l++)
	{
		const lsm_level_stats *ls = &st.level[l];

		if (ls->files == 0)
			continue;
		values[0] = Int32GetDatum(l);
		values[1] = Int32GetDatum(ls->files);
		values[2] = Int64GetDatum((int64) ls->entries);
		values[3] = Int64GetDatum((int64) ls->bytes);
		values[4] = Int64GetDatum((int64) ls->filter_bytes);
		values[5] = Int64GetDatum((int64) ls->value_filter_bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}
	values[0] = Int32GetDatum(LSMFDW_MEMTABLE_LEVEL);
	values[1] = Int32GetDatum(0);
	values[2] = Int64GetDatum((int64) st.memtable_entries);
	values[3] = Int64GetDatum((int64) st.memtable_bytes);
	values[4] = Int64GetDatum(0);
	values[5] = Int64GetDatum(0);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

	return (Datum) 0;
}

/*
 * lsm_hierarchy(regclass): one row with the shape of the value filter
 * hierarchy (Bloofi tree) over the SSTables of levels >= 1, and the value
 * filter parameters of the store.
 */
Datum
lsm_fdw_hierarchy(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_READ,
								"lsm_hierarchy");
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[LSMFDW_HIERARCHY_COLS];
	bool		nulls[LSMFDW_HIERARCHY_COLS];
	lsm_stats	st;
	const lsm_hierarchy_stats *h = &st.hierarchy;

	run_engine(t, LSMFDW_OP_STATS, &st);

	SetSingleFuncCall(fcinfo, 0);
	memset(nulls, 0, sizeof(nulls));
	values[0] = Int32GetDatum(h->height);
	values[1] = Int64GetDatum((int64) h->leaves);
	values[2] = Int64GetDatum((int64) h->internal);
	values[3] = Int64GetDatum((int64) h->saturated);
	values[4] = Int64GetDatum((int64) h->node_bytes);
	values[5] = Int64GetDatum((int64) h->flat_bytes);
	values[6] = Int64GetDatum((int64) h->value_filter_bits);
	values[7] = Int32GetDatum(h->value_filter_hashes);
	values[8] = Int32GetDatum(h->hierarchy_order);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

	return (Datum) 0;
}

/*
 * lsm_counters(regclass): the counters of this backend's handle, one row:
 * key lookups and their filters, writes, flushes and compactions, manifest
 * reloads and retries, value searches and the sum of their search counters.
 * They count from when this backend opened the store (or reopened it after
 * the table changed) or last reset them.  The last four columns are the
 * store's, kept in its LOCK file for every backend: the invalid tails of
 * its write-ahead logs that recovery discarded, and the last one's file,
 * offset and bytes (NULL if none).
 */
Datum
lsm_fdw_counters(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_READ,
								"lsm_counters");
	Datum		values[LSMFDW_COUNTERS_COLS];
	bool		nulls[LSMFDW_COUNTERS_COLS];
	TupleDesc	tupdesc;
	lsm_stats	st;
	const lsm_search_stats *vs = &st.search;
	int			i = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	if (tupdesc->natts != LSMFDW_COUNTERS_COLS &&
		tupdesc->natts != LSMFDW_COUNTERS_COLS_0_2)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lsm_counters returns %d columns, which this release of lsm_fdw does not know",
						tupdesc->natts),
				 errhint("Run ALTER EXTENSION fdw UPDATE.")));

	run_engine(t, LSMFDW_OP_STATS, &st);

	memset(nulls, 0, sizeof(nulls));
	values[i++] = Int64GetDatum((int64) st.gets);
	values[i++] = Int64GetDatum((int64) st.key_hashes);
	values[i++] = Int64GetDatum((int64) st.filter_probes);
	values[i++] = Int64GetDatum((int64) st.filter_negatives);
	values[i++] = Int64GetDatum((int64) st.sstable_reads);
	values[i++] = Int64GetDatum((int64) st.false_positives);
	values[i++] = Int64GetDatum((int64) st.flushes);
	values[i++] = Int64GetDatum((int64) st.compactions);
	values[i++] = Int64GetDatum((int64) st.user_bytes_written);
	values[i++] = Int64GetDatum((int64) st.wal_bytes_written);
	values[i++] = Int64GetDatum((int64) st.sst_bytes_written);
	values[i++] = Int64GetDatum((int64) st.refreshes);
	values[i++] = Int64GetDatum((int64) st.retries);
	values[i++] = Int64GetDatum((int64) st.value_searches);
	values[i++] = Int64GetDatum((int64) vs->nodes_visited);
	values[i++] = Int64GetDatum((int64) vs->leaves_probed);
	values[i++] = Int64GetDatum((int64) vs->leaves_positive);
	values[i++] = Int64GetDatum((int64) vs->flat_words);
	values[i++] = Int64GetDatum((int64) vs->sstables_unfiltered);
	values[i++] = Int64GetDatum((int64) vs->sstables_scanned);
	values[i++] = Int64GetDatum((int64) vs->sstables_false);
	values[i++] = Int64GetDatum((int64) vs->blocks_scanned);
	values[i++] = Int64GetDatum((int64) vs->blocks_skipped);
	values[i++] = Int64GetDatum((int64) vs->memtable_scanned);
	values[i++] = Int64GetDatum((int64) vs->rows_validated);
	values[i++] = Int64GetDatum((int64) vs->rows_rejected);
	values[i++] = Int64GetDatum((int64) vs->rows_returned);
	values[i++] = Int64GetDatum((int64) st.wal_tails.count);
	if (st.wal_tails.count > 0)
	{
		values[i++] = CStringGetTextDatum(psprintf("%06llu.log",
												   (unsigned long long) st.wal_tails.log_number));
		values[i++] = Int64GetDatum((int64) st.wal_tails.offset);
		values[i++] = Int64GetDatum((int64) st.wal_tails.bytes);
	}
	else
	{
		nulls[i++] = true;
		nulls[i++] = true;
		nulls[i++] = true;
	}
	/* 0.3 */
	values[i++] = Int64GetDatum((int64) st.background_errors);
	if (st.background_errors > 0)
		values[i++] = CStringGetTextDatum(st.last_background_error);
	else
		nulls[i++] = true;
	Assert(i == LSMFDW_COUNTERS_COLS);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values,
													  nulls)));
}

/* lsm_reset_counters(regclass): sets this backend's counters to zero. */
Datum
lsm_fdw_reset_counters(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_MAINTAIN,
								"lsm_reset_counters");

	run_engine(t, LSMFDW_OP_RESET_COUNTERS, NULL);
	PG_RETURN_VOID();
}

/*
 * lsm_flush(regclass): writes the memtable (every committed write not yet
 * in an SSTable, whichever backend made it) to a new level-0 SSTable.
 */
Datum
lsm_fdw_flush(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_MAINTAIN,
								"lsm_flush");

	run_engine(t, LSMFDW_OP_FLUSH, NULL);
	PG_RETURN_VOID();
}

/*
 * lsm_compact(regclass, full boolean): compacts until no level is over its
 * target size (what automatic compaction does), or with full, flushes and
 * merges the whole store into its deepest non-empty level.  Interruptible.
 */
Datum
lsm_fdw_compact(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_MAINTAIN,
								"lsm_compact");
	bool		full = PG_GETARG_BOOL(1);

	run_engine(t, full ? LSMFDW_OP_COMPACT_ALL : LSMFDW_OP_COMPACT, NULL);
	PG_RETURN_VOID();
}

/*
 * lsm_verify(regclass): checks every block of every SSTable, key order and
 * ranges, the key filters, the filter hierarchy, the write-ahead log and
 * the store's files.  Returns true, or raises the engine's error
 * (data_corrupted for damage, with the engine's description in the
 * detail).  What is not damage is reported as it is found: a WARNING for
 * data recovery discarded (an invalid tail of the write-ahead log, still
 * there or already cut), a NOTICE for a file the manifest does not name.
 */
Datum
lsm_fdw_verify(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_MAINTAIN,
								"lsm_verify");

	run_engine(t, LSMFDW_OP_VERIFY, NULL);
	PG_RETURN_BOOL(true);
}

/*
 * lsm_store_path(regclass): the absolute path of the table's store
 * directory, whether or not it exists yet.
 */
Datum
lsm_fdw_store_path(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_READ,
								"lsm_store_path");

	PG_RETURN_TEXT_P(cstring_to_text(t->path));
}

/*
 * lsm_store_size(regclass): the bytes of every file in the table's store
 * directory (SSTables, filter hierarchy nodes, write-ahead log, manifest,
 * lock files, the memtable's file), 0 if the store has not been created
 * yet.  Holes are not counted: the memtable's file is as long as the
 * largest memtable it may hold, and gets its blocks as the memtable grows.
 */
Datum
lsm_fdw_store_size(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_READ,
								"lsm_store_size");

	PG_RETURN_INT64(directory_size(t->path));
}

/*
 * lsm_key_columns(regclass): one row (key_position, column_name,
 * column_type) per key column of the table, in key order, as the catalog
 * defines the key (the store holds rows by the same key: every open
 * checks it).
 */
Datum
lsm_fdw_key_columns(PG_FUNCTION_ARGS)
{
	LsmFdwTable *t = open_table(PG_GETARG_OID(0), LSMFDW_FUNC_READ,
								"lsm_key_columns");
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[3];
	bool		nulls[3] = {0};
	int			k;

	SetSingleFuncCall(fcinfo, 0);
	for (k = 0; k < t->nkeys; k++)
	{
		const LsmFdwColumn *col = &t->cols[t->keyattnos[k] - 1];
		NameData	name;

		namestrcpy(&name, col->name);
		values[0] = Int32GetDatum(k + 1);
		values[1] = NameGetDatum(&name);
		values[2] = ObjectIdGetDatum(col->typid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values,
							 nulls);
	}
	return (Datum) 0;
}

/*
 * Opens relation relid with AccessShareLock (held to the end of the
 * transaction), checks that it is an lsm_fdw foreign table and that the
 * current user has the access the function needs, and returns its
 * LsmFdwTable (current memory context).  funcname names the SQL function
 * in messages.  Raises an error if any check fails.
 */
static LsmFdwTable *
open_table(Oid relid, LsmFdwFuncAccess access, const char *funcname)
{
	Relation	rel;
	LsmFdwTable *t;

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	check_our_table(rel, funcname);

	if (access == LSMFDW_FUNC_MAINTAIN)
	{
		if (!pg_class_ownercheck(relid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_FOREIGN_TABLE,
						   RelationGetRelationName(rel));
	}
	else
	{
		AclResult	aclresult;

		aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_FOREIGN_TABLE,
						   RelationGetRelationName(rel));
	}

	t = LsmFdwGetTable(rel);
	relation_close(rel, NoLock);
	return t;
}

/*
 * Raises ERRCODE_WRONG_OBJECT_TYPE unless rel is a foreign table whose
 * wrapper has lsm_fdw's handler.
 */
static void
check_our_table(Relation rel, const char *funcname)
{
	const char *relname = RelationGetRelationName(rel);
	ForeignTable *table;
	ForeignServer *server;
	ForeignDataWrapper *fdw;

	if (LsmFdwIsOurTable(RelationGetRelid(rel)))
		return;

	if (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an lsm_fdw foreign table", relname),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind),
				 errhint("Function %s() takes a foreign table of the foreign-data wrapper lsm_fdw.",
						 funcname)));

	table = GetForeignTable(RelationGetRelid(rel));
	server = GetForeignServer(table->serverid);
	fdw = GetForeignDataWrapper(server->fdwid);
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is not an lsm_fdw foreign table", relname),
			 errdetail("Foreign table \"%s\" belongs to server \"%s\" of foreign-data wrapper \"%s\".",
					   relname, server->servername, fdw->fdwname),
			 errhint("Function %s() takes a foreign table of the foreign-data wrapper lsm_fdw.",
					 funcname)));
}

/*
 * Runs one engine operation on t's store (opened if needed and refreshed),
 * pinned for the duration.  For LSMFDW_OP_STATS, fills *st.  Raises the
 * engine's error through LsmFdwReportError.
 */
static void
run_engine(LsmFdwTable *t, LsmFdwFuncOp op, lsm_stats *st)
{
	LsmFdwStore *s;
	lsm_db	   *volatile db;
	bool		private_handle;

	CHECK_FOR_INTERRUPTS();
	s = LsmFdwOpenStore(t, true);
	LsmFdwPinStore(s);

	/*
	 * Flushing and compacting catch the handle up with other sessions'
	 * commits: under a transaction snapshot, on a handle of their own.
	 */
	private_handle = (op == LSMFDW_OP_FLUSH || op == LSMFDW_OP_COMPACT ||
					  op == LSMFDW_OP_COMPACT_ALL) && LsmFdwHoldsSnapshot(s);
	db = s->db;
	PG_TRY();
	{
		const char *action = NULL;
		int			rc = LSM_OK;

		if (private_handle)
			db = LsmFdwOpenPrivateHandle(t);

		switch (op)
		{
			case LSMFDW_OP_STATS:
				rc = lsm_get_stats(db, st);
				action = "read the statistics of";
				break;
			case LSMFDW_OP_RESET_COUNTERS:
				lsm_reset_counters(db);
				break;
			case LSMFDW_OP_FLUSH:
				rc = lsm_flush(db);
				action = "flush";
				break;
			case LSMFDW_OP_COMPACT:
				rc = lsm_compact(db);
				action = "compact";
				break;
			case LSMFDW_OP_COMPACT_ALL:
				rc = lsm_compact_all(db);
				action = "compact";
				break;
			case LSMFDW_OP_VERIFY:
				/* its findings go to the client (reset by PG_FINALLY) */
				LsmFdwEngineLogToClient(true);
				rc = lsm_verify(db);
				LsmFdwEngineLogToClient(false);
				action = "verify";
				break;
		}
		if (rc != LSM_OK)
			LsmFdwReportError(rc, db, t->relname, action);
	}
	PG_FINALLY();
	{
		LsmFdwEngineLogToClient(false);
		if (private_handle && db != s->db && db != NULL)
			(void) lsm_close(db);
		LsmFdwUnpinStore(s);
	}
	PG_END_TRY();
}

/*
 * Returns the bytes of the regular files under path, recursively, without
 * their holes (a file's length, or its allocated blocks if fewer); 0 if
 * path does not exist.  Files removed while it runs (a compaction in
 * another backend) are skipped.  Raises an error on other failures.
 */
static int64
directory_size(const char *path)
{
	DIR		   *dir;
	struct dirent *de;
	int64		size = 0;

	dir = AllocateDir(path);
	if (dir == NULL && errno == ENOENT)
		return 0;
	while ((de = ReadDir(dir, path)) != NULL)	/* reports a NULL dir */
	{
		char	   *file;
		struct stat st;

		CHECK_FOR_INTERRUPTS();
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		file = psprintf("%s/%s", path, de->d_name);
		if (lstat(file, &st) < 0)
		{
			if (errno != ENOENT)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not stat file \"%s\": %m", file)));
		}
		else if (S_ISREG(st.st_mode))
			size += Min((int64) st.st_size, (int64) st.st_blocks * 512);
		else if (S_ISDIR(st.st_mode))
			size += directory_size(file);
		pfree(file);
	}
	FreeDir(dir);
	return size;
}

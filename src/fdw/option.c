/*-------------------------------------------------------------------------
 *
 * option.c
 *		  Validation and parsing of lsm_fdw options.
 *
 * Every option belongs to one catalog:
 *
 *	server			directory			where the server's stores live; an
 *										absolute path, superuser only
 *	foreign table	key					name of the key column
 *					memtable_size		flush threshold (bytes, units allowed)
 *					file_size			target SSTable size (bytes, units)
 *					bits_per_key		key Bloom filter budget, 0 = none
 *					value_filter_bits	size m of every value Bloom filter;
 *										at most 8 * min(memtable_size,
 *										file_size): no larger than a table
 *					value_filter_hashes k of the value Bloom filters
 *					hierarchy_order		d: filter hierarchy nodes have d..2d
 *										children
 *	column			key					boolean: this is the key column
 *					value_index			boolean: keep the column in the value
 *										filters (default true)
 *
 * The validator sees the options of one object at a time, so it checks
 * names, values and privileges only; what spans objects (the key column
 * exists, exactly one key is named, its type can be a key) is checked by
 * LsmFdwGetTable whenever a table is planned, read or written, and what the
 * engine thinks of the combination when its store is opened.  The same
 * parsing functions serve both.
 *
 * A table's store lives in <directory>/<database OID>/<table OID> when its
 * server has a directory, else in $PGDATA/lsm_fdw/<database OID>/<table
 * OID>: table OIDs are unique within a database, and the database level
 * keeps the stores of different databases apart (OIDs are reused over
 * time: the store's metadata file says whose it is, meta.c).  Engine
 * tunables take effect when a store is opened (created, or reopened by a
 * new backend); the value filter options only when it is created (lsm.h).
 *
 * src/fdw/option.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/reloptions.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "lsm_fdw.h"

/* How an option's value is parsed. */
typedef enum LsmFdwOptionKind
{
	LSMFDW_KIND_DIRECTORY,		/* absolute path, superuser only */
	LSMFDW_KIND_COLUMN,			/* a column name */
	LSMFDW_KIND_BOOL,			/* parse_bool */
	LSMFDW_KIND_INT,			/* integer in [min, max] */
	LSMFDW_KIND_BYTES			/* integer bytes, units allowed, [min, max] */
} LsmFdwOptionKind;

typedef struct LsmFdwOption
{
	const char *name;
	Oid			context;		/* catalog the option belongs to */
	LsmFdwOptionKind kind;
	int			min;			/* bounds of the integer kinds */
	int			max;
} LsmFdwOption;

#define KB 1024
#define MB (1024 * 1024)
#define GB (1024 * 1024 * 1024)

static const LsmFdwOption valid_options[] = {
	{LSMFDW_OPT_DIRECTORY, ForeignServerRelationId, LSMFDW_KIND_DIRECTORY, 0, 0},

	{LSMFDW_OPT_KEY, ForeignTableRelationId, LSMFDW_KIND_COLUMN, 0, 0},
	{LSMFDW_OPT_MEMTABLE_SIZE, ForeignTableRelationId, LSMFDW_KIND_BYTES, 4 * KB, GB},
	{LSMFDW_OPT_FILE_SIZE, ForeignTableRelationId, LSMFDW_KIND_BYTES, 4 * KB, GB},
	{LSMFDW_OPT_BITS_PER_KEY, ForeignTableRelationId, LSMFDW_KIND_INT, 0, 64},
	{LSMFDW_OPT_VALUE_FILTER_BITS, ForeignTableRelationId, LSMFDW_KIND_INT, 64, GB},
	{LSMFDW_OPT_VALUE_FILTER_HASHES, ForeignTableRelationId, LSMFDW_KIND_INT, 1, 16},
	{LSMFDW_OPT_HIERARCHY_ORDER, ForeignTableRelationId, LSMFDW_KIND_INT, 2, 256},

	{LSMFDW_OPT_KEY, AttributeRelationId, LSMFDW_KIND_BOOL, 0, 0},
	{LSMFDW_OPT_VALUE_INDEX, AttributeRelationId, LSMFDW_KIND_BOOL, 0, 0},

	{NULL, InvalidOid, 0, 0, 0}
};

static const LsmFdwOption *lookup_option(const char *name, Oid context);
static void report_invalid_option(const char *name, Oid context)
			pg_attribute_noreturn();
static void check_directory(const DefElem *def);
static void check_column(const DefElem *def);
static char *format_bytes(int bytes);
static void check_value_filter_size(List *options);
static int	value_filter_limit(List *options, bool *given);
static LsmFdwTable *build_table(Relation rel, bool strict);
static int	find_key_columns(Relation rel, bool strict, AttrNumber *attnos);
static char *column_list(TupleDesc tupdesc, int n, const AttrNumber *attnos);
static bool split_key_names(const char *value, List **names);

PG_FUNCTION_INFO_V1(lsm_fdw_validator);

/*
 * Validates the options of a wrapper, server, user mapping, foreign table or
 * column (catalog: the OID of its catalog).  Called by CREATE and ALTER with
 * the complete resulting option list.  Raises an error on an unknown name, a
 * bad value or a missing privilege.
 */
Datum
lsm_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options_list = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	ListCell   *cell;

	foreach(cell, options_list)
	{
		DefElem    *def = (DefElem *) lfirst(cell);
		const LsmFdwOption *opt = lookup_option(def->defname, catalog);

		if (opt == NULL)
			report_invalid_option(def->defname, catalog);

		switch (opt->kind)
		{
			case LSMFDW_KIND_DIRECTORY:
				check_directory(def);
				break;
			case LSMFDW_KIND_COLUMN:
				check_column(def);
				break;
			case LSMFDW_KIND_BOOL:
				(void) LsmFdwBoolOption(def);
				break;
			case LSMFDW_KIND_INT:
			case LSMFDW_KIND_BYTES:
				(void) LsmFdwIntOption(def);
				break;
		}
	}
	if (catalog == ForeignTableRelationId)
		check_value_filter_size(options_list);

	PG_RETURN_VOID();
}

/*
 * Returns the largest value_filter_bits a foreign table with these options
 * may have: 8 times the smaller of memtable_size (the size of the table a
 * flush writes) and file_size (of a compaction's), defaults included, so
 * that the value filter each SSTable carries is never larger than the rows
 * it describes (a multiple of 512).  *given tells whether
 * value_filter_bits is among the options.  REQUIRES: options already
 * checked one by one.
 */
static int
value_filter_limit(List *options, bool *given)
{
	lsm_options defaults;
	int64		memtable,
				file;
	ListCell   *cell;

	lsm_options_init(&defaults);
	memtable = (int64) defaults.memtable_bytes;
	file = (int64) defaults.file_bytes;
	*given = false;
	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, LSMFDW_OPT_MEMTABLE_SIZE) == 0)
			memtable = LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_FILE_SIZE) == 0)
			file = LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_VALUE_FILTER_BITS) == 0)
			*given = true;
	}
	/* whole 512-bit lines, as the engine rounds m */
	return (int) (Min(Min(memtable, file) * 8, (int64) GB) / 512 * 512);
}

/*
 * Checks value_filter_bits against the table's sizes (value_filter_limit):
 * a filter may not be larger than the tables that carry it, or any table
 * creator could make the server write far more than the rows (128 MB of
 * filter with every 4 kB of rows).  The engine rounds m up to whole 512-bit
 * lines, so the rounded size is checked.
 */
static void
check_value_filter_size(List *options)
{
	ListCell   *cell;
	bool		given;
	int			limit = value_filter_limit(options, &given);

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);
		int			bits;

		if (strcmp(def->defname, LSMFDW_OPT_VALUE_FILTER_BITS) != 0)
			continue;
		bits = LsmFdwIntOption(def);
		if ((int64) (bits + 511) / 512 * 512 > limit)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("value filters of %d bits are too large for tables of %s",
							bits, format_bytes(limit / 8)),
					 errdetail("Every SSTable carries a value filter of value_filter_bits / 8 bytes, which may not be larger than memtable_size or file_size."),
					 errhint("Set value_filter_bits to at most %d, or raise memtable_size and file_size to at least %s.",
							 limit, format_bytes((bits + 511) / 512 * 64))));
	}
}

/*
 * Returns the value of an integer option (a table option of kind INT or
 * BYTES), parsed and checked against its bounds.  Raises an error if the
 * value is not an integer, has a bad unit or is out of bounds.
 * REQUIRES: def names an integer table option.
 */
int
LsmFdwIntOption(const DefElem *def)
{
	const LsmFdwOption *opt = lookup_option(def->defname,
											ForeignTableRelationId);
	char	   *value = defGetString((DefElem *) def);
	const char *hintmsg = NULL;
	char	   *bounds;
	int			result;

	Assert(opt != NULL &&
		   (opt->kind == LSMFDW_KIND_INT || opt->kind == LSMFDW_KIND_BYTES));

	if (opt->kind == LSMFDW_KIND_BYTES)
		bounds = psprintf("%s and %s",
						  format_bytes(opt->min), format_bytes(opt->max));
	else
		bounds = psprintf("%d and %d", opt->min, opt->max);

	if (!parse_int(value, &result,
				   opt->kind == LSMFDW_KIND_BYTES ? GUC_UNIT_BYTE : 0,
				   &hintmsg))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for integer option \"%s\": \"%s\"",
						def->defname, value),
				 errdetail("Valid values are between %s.", bounds),
				 hintmsg ? errhint("%s", _(hintmsg)) : 0));

	if (result < opt->min || result > opt->max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("value \"%s\" out of bounds for option \"%s\"",
						value, def->defname),
				 errdetail("Valid values are between %s.", bounds)));

	pfree(bounds);
	return result;
}

/*
 * Returns the value of a boolean option (on/off, true/false, yes/no, 1/0 and
 * unique prefixes, as for GUCs).  Raises an error on anything else.
 */
bool
LsmFdwBoolOption(const DefElem *def)
{
	char	   *value = defGetString((DefElem *) def);
	bool		result;

	if (!parse_bool(value, &result))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for boolean option \"%s\": \"%s\"",
						def->defname, value)));
	return result;
}

/*
 * Returns the entry of option name in catalog context, or NULL if the option
 * is not valid there.
 */
static const LsmFdwOption *
lookup_option(const char *name, Oid context)
{
	const LsmFdwOption *opt;

	for (opt = valid_options; opt->name != NULL; opt++)
	{
		if (opt->context == context && strcmp(opt->name, name) == 0)
			return opt;
	}
	return NULL;
}

/*
 * Raises the error for an option that is not valid in catalog context, with
 * a hint listing the options that are.
 */
static void
report_invalid_option(const char *name, Oid context)
{
	const LsmFdwOption *opt;
	StringInfoData buf;

	initStringInfo(&buf);
	for (opt = valid_options; opt->name != NULL; opt++)
	{
		if (opt->context == context)
			appendStringInfo(&buf, "%s%s", (buf.len > 0) ? ", " : "",
							 opt->name);
	}

	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
			 errmsg("invalid option \"%s\"", name),
			 buf.len > 0
			 ? errhint("Valid options in this context are: %s", buf.data)
			 : errhint("There are no valid options in this context.")));
}

/*
 * Checks the server option directory: only superusers may set it, because
 * the server process creates and writes files there (file_fdw's rule for
 * filename), and it must be an absolute path.
 */
static void
check_directory(const DefElem *def)
{
	char	   *value;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to set option \"%s\"",
						def->defname),
				 errdetail("Only superusers may choose the directory of an lsm_fdw server, because the database server writes there.")));

	value = defGetString((DefElem *) def);
	if (!is_absolute_path(value))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"",
						def->defname, value),
				 errdetail("The directory must be an absolute path.")));
}

/*
 * Checks the table option key: a column name, or several separated by
 * commas (split_key_names), none empty.  That the columns exist is checked
 * when the table's store is opened.
 */
static void
check_column(const DefElem *def)
{
	char	   *value = defGetString((DefElem *) def);
	List	   *names;

	if (!split_key_names(value, &names))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for option \"%s\": \"%s\"",
						def->defname, value),
				 errdetail("The option names the key column of the table, or its key columns separated by commas, each as written or in double quotes.")));
}

/*
 * Formats a byte count with the largest unit that divides it ("64kB"), in a
 * new palloc'd string.
 */
static char *
format_bytes(int bytes)
{
	if (bytes % GB == 0)
		return psprintf("%dGB", bytes / GB);
	if (bytes % MB == 0)
		return psprintf("%dMB", bytes / MB);
	if (bytes % KB == 0)
		return psprintf("%dkB", bytes / KB);
	return psprintf("%dB", bytes);
}

/*
 * Returns the value of the option directory of server serverid, or NULL if
 * it has none (its tables' stores are at the default location).
 */
char *
LsmFdwServerDirectory(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	char	   *dir = NULL;
	ListCell   *cell;

	foreach(cell, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, LSMFDW_OPT_DIRECTORY) == 0)
			dir = defGetString(def);
	}
	return dir;
}

/*
 * Returns the directory of the store of foreign table relid, a new palloc'd
 * absolute path; *is_default says whether it is the default location under
 * $PGDATA rather than under the server's directory.
 */
char *
LsmFdwStorePath(Oid relid, bool *is_default)
{
	const char *dir = LsmFdwServerDirectory(GetForeignTable(relid)->serverid);

	*is_default = (dir == NULL);
	if (dir == NULL)
		return psprintf("%s/%s/%u/%u", DataDir, LSMFDW_DEFAULT_DIR,
						MyDatabaseId, relid);
	return psprintf("%s/%u/%u", dir, MyDatabaseId, relid);
}

/*
 * The LsmFdwTable of each table this backend used, built once from the
 * catalogs and kept until the table, its options or its server's options
 * change (a relcache or syscache invalidation).  Every statement reads it at
 * least twice (plan or scan, and modify), and building it, with a catalog
 * lookup per column, was 6% of a backend's time under single-row UPDATEs.
 */
typedef struct TableCacheEntry
{
	Oid			relid;			/* hash key */
	bool		valid;
	LsmFdwTable *table;			/* in cxt */
	MemoryContext cxt;
} TableCacheEntry;

static HTAB *table_cache = NULL;
static uint64 table_cache_invals = 0;	/* invalidations seen, ever */
static uint64 table_cache_swept = 0;	/* ... when invalid entries last went */

static void table_cache_sweep(void);
static void table_cache_invalidate(Datum arg, Oid relid);
static void table_cache_invalidate_all(Datum arg, int cacheid, uint32 hashvalue);

/*
 * Module initialisation (from _PG_init): the invalidation callbacks of the
 * table cache.
 */
void
LsmFdwInitTables(void)
{
	CacheRegisterRelcacheCallback(table_cache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNTABLEREL, table_cache_invalidate_all,
								  (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, table_cache_invalidate_all,
								  (Datum) 0);
}

/*
 * The LsmFdwTable of an open lsm_fdw foreign table, from its tuple
 * descriptor and its table, column and server options.  Raises an error if
 * the table has no usable key column.  The result is the backend's cached
 * copy: callers must not change it, and it stays valid until the end of the
 * transaction (a copy that an invalidation replaces is freed with the
 * transaction, so that scans still using it are not left dangling).
 */
LsmFdwTable *
LsmFdwGetTable(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	TableCacheEntry *e;

	if (table_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(TableCacheEntry);
		table_cache = hash_create("lsm_fdw tables", 64, &ctl,
								  HASH_ELEM | HASH_BLOBS);
	}
	if (table_cache_swept != table_cache_invals)
		table_cache_sweep();
	e = hash_search(table_cache, &relid, HASH_FIND, NULL);
	if (e == NULL)
	{
		/* built under the caller's context, so that an error frees it */
		MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
												  "lsm_fdw table",
												  ALLOCSET_SMALL_SIZES);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		uint64		invals = table_cache_invals;
		LsmFdwTable *t = build_table(rel, true);

		MemoryContextSwitchTo(old);
		MemoryContextSetIdentifier(cxt, t->relname);
		MemoryContextSetParent(cxt, CacheMemoryContext);
		e = hash_search(table_cache, &relid, HASH_ENTER, NULL);
		e->table = t;
		e->cxt = cxt;
		/* one that came while building may not be reflected: build again */
		e->valid = (table_cache_invals == invals);
	}
	/* what changes without an invalidation */
	e->table->create_subid = rel->rd_createSubid;
	e->table->opts.sync = enableFsync ? 1 : 0;
	return e->table;
}

/*
 * Drops the invalidated entries; their copies go with the transaction (and
 * the copies of dropped tables with them).
 */
static void
table_cache_sweep(void)
{
	HASH_SEQ_STATUS status;
	TableCacheEntry *e;

	hash_seq_init(&status, table_cache);
	while ((e = hash_seq_search(&status)) != NULL)
	{
		if (e->valid)
			continue;
		MemoryContextSetParent(e->cxt, TopTransactionContext);
		(void) hash_search(table_cache, &e->relid, HASH_REMOVE, NULL);
	}
	table_cache_swept = table_cache_invals;
}

/* Relcache callback: relid (every table if InvalidOid) changed. */
static void
table_cache_invalidate(Datum arg, Oid relid)
{
	TableCacheEntry *e;

	if (table_cache == NULL)
		return;
	if (!OidIsValid(relid))
	{
		table_cache_invalidate_all(arg, 0, 0);
		return;
	}
	table_cache_invals++;
	if ((e = hash_search(table_cache, &relid, HASH_FIND, NULL)) != NULL)
		e->valid = false;
}

/* Syscache callback: a table's or server's options changed. */
static void
table_cache_invalidate_all(Datum arg, int cacheid, uint32 hashvalue)
{
	HASH_SEQ_STATUS status;
	TableCacheEntry *e;

	if (table_cache == NULL)
		return;
	table_cache_invals++;
	hash_seq_init(&status, table_cache);
	while ((e = hash_seq_search(&status)) != NULL)
		e->valid = false;
}

/*
 * As LsmFdwGetTable, but built afresh in the current memory context, and a
 * table without a usable key column (none, two,
 * one of a type that cannot be a key) comes back with keyattno
 * InvalidAttrNumber and every attribute a field, instead of an error: for
 * the DDL checks, which must let such a table be created and fixed later
 * (pg_dump sets column options after CREATE FOREIGN TABLE).
 */
LsmFdwTable *
LsmFdwGetTableLenient(Relation rel)
{
	return build_table(rel, false);
}

/* The position of attnum in the key of t (0: first), or -1 if not in it. */
int
LsmFdwKeyIndex(const LsmFdwTable *t, AttrNumber attnum)
{
	int			i;

	for (i = 0; i < t->nkeys; i++)
		if (t->keyattnos[i] == attnum)
			return i;
	return -1;
}

/*
 * "a, b": the names of the key columns of t in key order, for messages and
 * EXPLAIN, in a new palloc'd string.
 */
char *
LsmFdwKeyColumnNames(const LsmFdwTable *t)
{
	StringInfoData buf;
	int			k;

	initStringInfo(&buf);
	for (k = 0; k < t->nkeys; k++)
		appendStringInfo(&buf, "%s%s", k > 0 ? ", " : "",
						 t->cols[t->keyattnos[k] - 1].name);
	return buf.data;
}

/* LsmFdwGetTable (strict) or LsmFdwGetTableLenient (!strict). */
static LsmFdwTable *
build_table(Relation rel, bool strict)
{
	Oid			relid = RelationGetRelid(rel);
	TupleDesc	tupdesc = RelationGetDescr(rel);
	ForeignTable *table = GetForeignTable(relid);
	LsmFdwTable *t = palloc0(sizeof(LsmFdwTable));
	uint64		unindexed = 0;
	ListCell   *cell;
	int			field;
	int			i;

	t->relid = relid;
	t->relname = pstrdup(RelationGetRelationName(rel));
	t->natts = tupdesc->natts;
	t->cols = palloc0(sizeof(LsmFdwColumn) * Max(t->natts, 1));
	t->create_subid = rel->rd_createSubid;
	t->path = LsmFdwStorePath(relid, &t->default_location);

	lsm_options_init(&t->opts);
	/* fsync = off (test clusters) is honoured by the stores too */
	t->opts.sync = enableFsync ? 1 : 0;
	foreach(cell, table->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, LSMFDW_OPT_MEMTABLE_SIZE) == 0)
			t->opts.memtable_bytes = LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_FILE_SIZE) == 0)
			t->opts.file_bytes = LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_BITS_PER_KEY) == 0)
			t->opts.key_bits_per_key = LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_VALUE_FILTER_BITS) == 0)
			t->opts.value_filter_bits = (uint32) LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_VALUE_FILTER_HASHES) == 0)
			t->opts.value_filter_hashes = LsmFdwIntOption(def);
		else if (strcmp(def->defname, LSMFDW_OPT_HIERARCHY_ORDER) == 0)
			t->opts.hierarchy_order = LsmFdwIntOption(def);
	}
	/* the default value filter shrinks to fit small tables */
	{
		bool		given;
		int			limit = value_filter_limit(table->options, &given);

		if (!given && t->opts.value_filter_bits > (uint32) limit)
			t->opts.value_filter_bits = (uint32) limit;
	}

	t->nkeys = find_key_columns(rel, strict, t->keyattnos);
	t->keyattno = t->nkeys > 0 ? t->keyattnos[0] : InvalidAttrNumber;

	for (i = 0; i < t->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(tupdesc, i);
		LsmFdwColumn *col = &t->cols[i];

		col->attnum = i + 1;
		col->name = pstrdup(NameStr(attr->attname));
		col->io_cxt = CurrentMemoryContext;
		col->dropped = attr->attisdropped;
		if (col->dropped)
			continue;
		col->typid = attr->atttypid;
		col->typmod = attr->atttypmod;
		col->basetypid = getBaseTypeAndTypmod(attr->atttypid, &col->typmod);
		col->collation = attr->attcollation;
		LsmFdwSetupColumn(col);
		if (LsmFdwKeyIndex(t, col->attnum) >= 0 &&
			!LsmFdwCheckKeyColumn(col, t->relname, strict))
			t->nkeys = 0;
	}
	if (t->nkeys == 0)
		t->keyattno = InvalidAttrNumber;
	t->nfields = t->natts - Max(t->nkeys, 1);

	/* field numbers never change: dropped columns keep theirs */
	for (i = 0, field = 0; i < t->natts; i++)
	{
		LsmFdwColumn *col = &t->cols[i];

		if (t->nkeys == 0)
			col->field = i;		/* no key: no rows either */
		else if (LsmFdwKeyIndex(t, col->attnum) >= 0)
			col->field = -1;
		else
			col->field = field++;
	}

	for (i = 0; i < t->natts; i++)
	{
		LsmFdwColumn *col = &t->cols[i];
		bool		indexed = true;

		if (col->dropped)
			continue;
		if (col->codec == LSMFDW_CODEC_SEND || col->codec == LSMFDW_CODEC_TEXTIO)
			t->has_io = true;
		if (col->codec == LSMFDW_CODEC_TEXTIO)
			t->has_textio = true;

		foreach(cell, GetForeignColumnOptions(relid, col->attnum))
		{
			DefElem    *def = (DefElem *) lfirst(cell);

			if (strcmp(def->defname, LSMFDW_OPT_VALUE_INDEX) == 0)
				indexed = LsmFdwBoolOption(def);
		}

		/*
		 * A column whose bytes are not canonical could never be searched by
		 * value, so it is kept out of the value filters as well.
		 */
		if (col->field >= 0 && col->field < 64 &&
			(!indexed || !col->canonical))
			unindexed |= (uint64) 1 << col->field;
	}
	t->opts.value_unindexed = unindexed;

	return t;
}

/*
 * Splits the value of the table option key, "a" or "a, b, ...", into
 * column names (a List of palloc'd strings): items separated by commas,
 * blanks around them ignored, each a name as written (no case folding) or
 * double-quoted ("a, b" with "" for a quote).  Returns false if an item is
 * empty or a quote is not closed.
 */
static bool
split_key_names(const char *value, List **names)
{
	const char *p = value;

	*names = NIL;
	for (;;)
	{
		StringInfoData name;

		initStringInfo(&name);
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '"')
		{
			for (p++;; p++)
			{
				if (*p == '\0')
					return false;
				if (*p == '"' && p[1] != '"')
					break;
				if (*p == '"')
					p++;
				appendStringInfoChar(&name, *p);
			}
			p++;
			while (isspace((unsigned char) *p))
				p++;
		}
		else
		{
			while (*p != ',' && *p != '\0')
				appendStringInfoChar(&name, *p++);
			while (name.len > 0 && isspace((unsigned char) name.data[name.len - 1]))
				name.data[--name.len] = '\0';
		}
		if (name.len == 0 || (*p != ',' && *p != '\0'))
			return false;
		*names = lappend(*names, name.data);
		if (*p == '\0')
			return true;
		p++;
	}
}

/* The attribute number of the live column called name of tupdesc, or 0. */
static AttrNumber
column_by_name(TupleDesc tupdesc, const char *name)
{
	int			i;

	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(tupdesc, i);

		if (!attr->attisdropped && strcmp(NameStr(attr->attname), name) == 0)
			return attr->attnum;
	}
	return InvalidAttrNumber;
}

/*
 * Finds the key columns of rel, in key order, into attnos (room for
 * LSMFDW_MAX_KEYS) and returns how many: the columns the table option key
 * names ("id", or "tenant, ts" for a composite key), or those with the
 * column option key 'true', in attribute number order (both may be given
 * if they name the same columns; the table option's order wins).  If there
 * is none, a name is not a column, a column comes twice, there are too
 * many, or the two options disagree: raises an error if strict, else
 * returns 0.
 */
static int
find_key_columns(Relation rel, bool strict, AttrNumber *attnos)
{
	Oid			relid = RelationGetRelid(rel);
	TupleDesc	tupdesc = RelationGetDescr(rel);
	const char *relname = RelationGetRelationName(rel);
	const char *keyname = NULL;
	List	   *names = NIL;
	AttrNumber	by_column[LSMFDW_MAX_KEYS];
	int			ntable = 0;
	int			ncolumn = 0;
	ListCell   *cell;
	int			i,
				j;

	foreach(cell, GetForeignTable(relid)->options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, LSMFDW_OPT_KEY) == 0)
			keyname = defGetString(def);
	}

	/* the table option: one column's exact name, or a list of names */
	if (keyname != NULL)
	{
		if (column_by_name(tupdesc, keyname) != InvalidAttrNumber)
			names = list_make1(pstrdup(keyname));
		else if (!split_key_names(keyname, &names))
			names = list_make1(pstrdup(keyname));	/* reported below */
		if (list_length(names) > LSMFDW_MAX_KEYS)
		{
			if (!strict)
				return 0;
			ereport(ERROR,
					(errcode(ERRCODE_TOO_MANY_COLUMNS),
					 errmsg("foreign table \"%s\" names %d key columns",
							relname, list_length(names)),
					 errdetail("A key has at most %d columns.", LSMFDW_MAX_KEYS)));
		}
		foreach(cell, names)
		{
			const char *name = lfirst(cell);
			AttrNumber	attnum = column_by_name(tupdesc, name);

			if (attnum == InvalidAttrNumber)
			{
				if (!strict)
					return 0;
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("key column \"%s\" of foreign table \"%s\" does not exist",
								name, relname),
						 errhint("Set the table option key to the name of a column of the table, or to a list of them separated by commas.")));
			}
			for (j = 0; j < ntable; j++)
				if (attnos[j] == attnum)
				{
					if (!strict)
						return 0;
					ereport(ERROR,
							(errcode(ERRCODE_DUPLICATE_COLUMN),
							 errmsg("key column \"%s\" of foreign table \"%s\" is named twice",
									name, relname),
							 errhint("Name each key column once in the table option key.")));
				}
			attnos[ntable++] = attnum;
		}
	}

	/* the column options, in attribute number order */
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(tupdesc, i);

		if (attr->attisdropped)
			continue;
		foreach(cell, GetForeignColumnOptions(relid, attr->attnum))
		{
			DefElem    *def = (DefElem *) lfirst(cell);

			if (strcmp(def->defname, LSMFDW_OPT_KEY) != 0 ||
				!LsmFdwBoolOption(def))
				continue;
			if (ncolumn == LSMFDW_MAX_KEYS)
			{
				if (!strict)
					return 0;
				ereport(ERROR,
						(errcode(ERRCODE_TOO_MANY_COLUMNS),
						 errmsg("foreign table \"%s\" has more than %d key columns",
								relname, LSMFDW_MAX_KEYS),
						 errdetail("A key has at most %d columns.", LSMFDW_MAX_KEYS)));
			}
			by_column[ncolumn++] = attr->attnum;
		}
	}

	if (ntable > 0 && ncolumn > 0)
	{
		bool		same = (ntable == ncolumn);

		for (i = 0; same && i < ncolumn; i++)
		{
			for (j = 0; j < ntable && attnos[j] != by_column[i]; j++)
				;
			same = (j < ntable);
		}
		if (!same)
		{
			if (!strict)
				return 0;
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("foreign table \"%s\" names two different keys",
							relname),
					 errdetail("The table option key names %s, but the columns with the option key 'true' are %s.",
							   column_list(tupdesc, ntable, attnos),
							   column_list(tupdesc, ncolumn, by_column)),
					 errhint("Drop one of the two options.")));
		}
	}
	if (ntable == 0 && ncolumn == 0)
	{
		if (!strict)
			return 0;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("foreign table \"%s\" has no key column", relname),
				 errdetail("Every lsm_fdw table is stored by a key: one column, or several."),
				 errhint("Give the key column the option key 'true', or name it (or several, separated by commas) with the table option key.")));
	}
	if (ntable > 0)
		return ntable;
	memcpy(attnos, by_column, sizeof(AttrNumber) * ncolumn);
	return ncolumn;
}

/* "\"a\", \"b\"": the names of the n columns attnos of tupdesc. */
static char *
column_list(TupleDesc tupdesc, int n, const AttrNumber *attnos)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < n; i++)
		appendStringInfo(&buf, "%s\"%s\"", i > 0 ? ", " : "",
						 NameStr(TupleDescAttr(tupdesc, attnos[i] - 1)->attname));
	return buf.data;
}

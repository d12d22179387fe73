/*-------------------------------------------------------------------------
 *
 * ddl.c
 *		  What DDL does to stores: a store is created with its table, goes
 *		  with it, and follows its definition only where that reads the
 *		  stored rows as they were written.
 *
 * PostgreSQL tells a foreign-data wrapper nothing of DDL, so the extension
 * listens in two ways.  An object access hook (this library's, in every
 * backend that loaded it) notes the tables, columns and servers that a
 * command creates, alters or drops: its OAT_POST_CREATE and OAT_POST_ALTER
 * calls come before the command's catalog changes are visible, so it only
 * notes them, except OAT_DROP, which comes while the catalogs still
 * describe the dropped table.  Two event triggers of the extension
 * (src/fdw--0.1.sql) act on the notes: lsm_fdw_ddl_command_start, which
 * also makes sure the library (with its hook) is loaded before any DDL
 * runs, and lsm_fdw_ddl_command_end, which sees the command's result.
 * Event triggers do not run everywhere (session_replication_role =
 * replica, single-user mode), so the notes left over are also acted on at
 * pre-commit, and reads check what the DDL checks would have (store.c).
 *
 *	CREATE FOREIGN TABLE: the store's directory and metadata file (meta.c)
 *		are created at the end of the command, removing what a dropped
 *		table with the same OID left at the path and refusing anything
 *		else there; the engine creates its files when the store is first
 *		opened, with the options of that moment (pg_dump sets column
 *		options after CREATE FOREIGN TABLE).  An abort of the creating
 *		(sub)transaction removes it all (xact.c).  A table that did not get
 *		its store this way has none: reading it is an error, never an empty
 *		table (CREATE DATABASE ... TEMPLATE copies catalogs, not stores).
 *		A table may be created without a usable key (pg_dump again): its
 *		store then has no layout until the table gets one.
 *	DROP (of the table, or of a schema, server or extension by CASCADE,
 *		DROP OWNED): the store is removed when the transaction commits,
 *		wherever it is, if its metadata says it is the table's.
 *	ALTER FOREIGN TABLE: the new definition is compared with the layout
 *		the store's rows were written with (LsmFdwCompareLayout).  An equal
 *		or wider one is taken; any other only if the store holds no rows
 *		and the transaction has not written it, else the command fails.
 *		The metadata file follows at commit: see "Layout changes" below.
 *		The value filter options cannot change once the store exists.
 *	ALTER SERVER ... OPTIONS: the directory of a server with foreign
 *		tables cannot change (their stores would be left behind).
 *	ALTER TYPE, ALTER TABLE: a type that columns of lsm_fdw tables store
 *		in binary form cannot change under rows: the attributes of a
 *		composite type (or of a table's row type), the labels of an enum
 *		type used inside arrays, composites or ranges (enum columns
 *		themselves store the value's OID).
 *
 * Layout changes.  The metadata file must describe every row in the store,
 * whatever commits or aborts, and a crash at any point must leave it so:
 *
 *	(1) A wider layout is written after the commit (XACT_EVENT_COMMIT,
 *		still under the table's lock).  Until then, and if the write fails
 *		or the server stops first, the file records the narrower layout,
 *		which a reader finds wider than the catalog: it reads on and has
 *		the file written when its own transaction commits (store.c).
 *	(2) Another layout is taken only by an empty store, and written at
 *		pre-commit, before the transaction's rows are (this callback is
 *		registered after xact.c's, so it runs first).  If the transaction
 *		then aborts, the file describes a layout the catalog does not
 *		have, over a store that is still empty, which a reader accepts and
 *		has rewritten; if the server stops after the rows were written but
 *		before the commit, the rows are those of the new layout, which the
 *		file describes (the catalog does not: the read fails, as it must).
 *	(3) Which layout to write is decided at pre-commit from the catalog as
 *		the transaction leaves it, so savepoints rolled back in between
 *		need no bookkeeping.
 *	(4) A table without a usable key can be neither read nor written, so
 *		its layout is not recorded (the file keeps the last one) until it
 *		has a key again; a store created for a keyless table has no layout
 *		and takes the first one.
 *
 * src/fdw/ddl.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "lsm_fdw.h"

PG_FUNCTION_INFO_V1(lsm_fdw_ddl_command_start);
PG_FUNCTION_INFO_V1(lsm_fdw_ddl_command_end);

/* A relation a command created or altered */
typedef struct Touched
{
	Oid			relid;
	bool		options;		/* its table options changed */
} Touched;

/* A server whose options a command changed, and its directory before */
typedef struct ServerChange
{
	Oid			serverid;
	char	   *directory;		/* NULL: the default location */
} ServerChange;

/* A metadata file to write after the commit (see (1) above) */
typedef struct MetaWrite
{
	char	   *path;			/* store directory */
	LsmFdwMeta *meta;
} MetaWrite;

/*
 * The transaction's notes, in ddl_cxt (a child of TopTransactionContext,
 * created on first use); they go with the transaction.
 */
static MemoryContext ddl_cxt = NULL;
static List *touched = NIL;		/* Touched, until the command's end */
static List *server_changes = NIL;	/* ServerChange, likewise */
static List *layout_relids = NIL;	/* OIDs: tables whose layout may change */
static List *meta_writes = NIL; /* MetaWrite, from pre-commit to commit */

static object_access_hook_type prev_object_access_hook = NULL;

static void object_access(ObjectAccessType access, Oid classId,
						  Oid objectId, int subId, void *arg);
static MemoryContext ddl_context(void);
static void note_touched(Oid relid, bool options);
static void note_server(Oid serverid);
static void act_on_notes(void);
static void act_on_table(const Touched *t);
static void check_value_filter_options(LsmFdwTable *t);
static void check_server(const ServerChange *c);
static void schedule_drop(Oid relid);
static void check_type_change(Node *parsetree);
static void check_type_users(Oid typid, bool enum_labels, const char *action);
static AttrNumber column_using_type(Oid relid, Oid typid, bool enum_labels);
static bool type_contains(Oid typid, Oid target);
static int	relation_natts(Oid relid);
static void decide_layouts(void);
static void write_meta_after_commit(void);
static void xact_callback(XactEvent event, void *arg);

/*
 * Module initialisation (from _PG_init, after LsmFdwInitXact: see (2) in
 * the file header): installs the object access hook and the transaction
 * callback.
 */
void
LsmFdwInitDdl(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = object_access;
	RegisterXactCallback(xact_callback, NULL);
}

/*
 * Makes the metadata file of table relid's store take the table's
 * definition at commit, if the store accepts it then (see "Layout changes"
 * in the file header).  Called for the tables a DDL command changed, and
 * by store.c when it opens a store whose file lags behind the catalog.
 */
void
LsmFdwLayoutCheckAtCommit(Oid relid)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(ddl_context());

	layout_relids = list_append_unique_oid(layout_relids, relid);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Event trigger function on ddl_command_start.  Calling it loads the
 * library, which installs the object access hook before the command
 * changes anything; it also refuses ALTER TYPE commands that would change
 * how stored rows read (check_type_change).
 */
Datum
lsm_fdw_ddl_command_start(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"lsm_fdw_ddl_command_start\" must be called as an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	check_type_change(trigdata->parsetree);
	PG_RETURN_VOID();
}

/*
 * Event trigger function on ddl_command_end: creates the stores of the
 * tables the command created and checks what it changed (see the file
 * header).  Raises an error, which undoes the command, if a change is
 * refused.
 */
Datum
lsm_fdw_ddl_command_end(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function \"lsm_fdw_ddl_command_end\" must be called as an event trigger")));
	act_on_notes();
	PG_RETURN_VOID();
}

/*
 * Object access hook: notes the relations created or altered and the
 * servers altered, for the end of the command, and schedules the removal
 * of the store of a dropped table of ours.
 */
static void
object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
			  void *arg)
{
	if (prev_object_access_hook != NULL)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	switch (access)
	{
		case OAT_POST_CREATE:
			/* a relation, or a column added to one (not visible yet) */
			if (classId == RelationRelationId)
				note_touched(objectId, false);
			break;
		case OAT_POST_ALTER:
			if (classId == RelationRelationId)
				note_touched(objectId, false);
			else if (classId == ForeignTableRelationId)
				note_touched(objectId, true);
			else if (classId == ForeignServerRelationId)
				note_server(objectId);
			break;
		case OAT_DROP:
			if (classId == RelationRelationId && subId != 0)
				note_touched(objectId, false);	/* DROP COLUMN */
			else if (classId == RelationRelationId &&
					 LsmFdwIsOurTable(objectId))
				schedule_drop(objectId);
			break;
		default:
			break;
	}
}

/* The transaction's memory context for the notes, created on first use. */
static MemoryContext
ddl_context(void)
{
	if (ddl_cxt == NULL)
		ddl_cxt = AllocSetContextCreate(TopTransactionContext,
										"lsm_fdw DDL",
										ALLOCSET_SMALL_SIZES);
	return ddl_cxt;
}

/* Notes relation relid, and whether its table options changed. */
static void
note_touched(Oid relid, bool options)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(ddl_context());
	Touched    *t = palloc(sizeof(Touched));

	t->relid = relid;
	t->options = options;
	touched = lappend(touched, t);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Notes server serverid with its directory as it was before the command
 * (its change is not visible yet), if it is one of ours.
 */
static void
note_server(Oid serverid)
{
	MemoryContext oldcxt;
	ServerChange *c;
	char	   *dir;

	if (!LsmFdwIsOurServer(serverid))
		return;
	dir = LsmFdwServerDirectory(serverid);
	oldcxt = MemoryContextSwitchTo(ddl_context());
	c = palloc(sizeof(ServerChange));
	c->serverid = serverid;
	c->directory = dir != NULL ? pstrdup(dir) : NULL;
	server_changes = lappend(server_changes, c);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Acts on the notes of the commands run since the last call: creates and
 * checks the stores of the tables created or altered, checks the servers
 * altered, and forgets the notes.  Raises an error if a change is refused.
 */
static void
act_on_notes(void)
{
	List	   *tables = touched;
	List	   *servers = server_changes;
	ListCell   *lc;

	touched = NIL;
	server_changes = NIL;
	foreach(lc, tables)
		act_on_table((Touched *) lfirst(lc));
	foreach(lc, servers)
		check_server((ServerChange *) lfirst(lc));
	list_free_deep(tables);
	list_free(servers);
}

/*
 * The end of a command that created or altered relation touch->relid: if
 * it is one of our tables, creates its store if this transaction created
 * the table, and checks its definition against the store's layout.
 */
static void
act_on_table(const Touched *touch)
{
	Relation	rel;
	LsmFdwTable *t;
	LsmFdwMeta	meta;
	StringInfoData why;
	char	   *problem;

	if (!LsmFdwIsOurTable(touch->relid))
		return;					/* another relation, or dropped since */
	rel = relation_open(touch->relid, AccessShareLock);
	t = LsmFdwGetTableLenient(rel);
	relation_close(rel, AccessShareLock);

	if (t->create_subid != InvalidSubTransactionId)
		LsmFdwCreateStore(t);
	/* a table without a usable key cannot be read: its layout waits */
	if (t->keyattno == InvalidAttrNumber)
		return;
	if (LsmFdwReadMeta(t->path, &meta, &problem, ERROR) != LSMFDW_META_OK ||
		!LsmFdwMetaIsTable(&meta, t->relid))
		return;					/* reads will say what is wrong */
	if (touch->options)
		check_value_filter_options(t);

	initStringInfo(&why);
	switch (LsmFdwCompareLayout(&meta, t, &why))
	{
		case LSMFDW_LAYOUT_EQUAL:
			break;
		case LSMFDW_LAYOUT_WIDER:
			LsmFdwLayoutCheckAtCommit(t->relid);
			break;
		case LSMFDW_LAYOUT_INCOMPATIBLE:
			if (meta.nkeys > 0 &&
				LsmFdwStoreHoldsRows(t, true))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot change foreign table \"%s\" this way while it holds rows",
								t->relname),
						 errdetail_internal("%s The rows would read differently.",
											why.data),
						 errhint("Create a new table with the new definition and copy the rows with INSERT ... SELECT, or empty the table first (and commit).")));
			LsmFdwLayoutCheckAtCommit(t->relid);
			break;
	}
	pfree(why.data);
}

/*
 * Refuses a change of t's value filter options (value_filter_bits,
 * value_filter_hashes, hierarchy_order): its store was created with
 * others, and keeps them.  A value_filter_bits the table does not set is
 * not compared: its default follows memtable_size and file_size (option.c),
 * which may change, while the store keeps the bits it was created with.
 */
static void
check_value_filter_options(LsmFdwTable *t)
{
	lsm_hierarchy_stats h;
	const char *option = NULL;
	int64		stored = 0;
	bool		bits_set = false;
	ListCell   *lc;

	if (!LsmFdwStoreValueFilters(t, &h))
		return;					/* no engine files yet: they will follow */
	foreach(lc, GetForeignTable(t->relid)->options)
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname,
				   LSMFDW_OPT_VALUE_FILTER_BITS) == 0)
			bits_set = true;
	}
	/* the engine rounds the bits up to a multiple of 512 (lsm.h) */
	if (bits_set &&
		((uint64) t->opts.value_filter_bits + 511) / 512 * 512 !=
		h.value_filter_bits)
	{
		option = LSMFDW_OPT_VALUE_FILTER_BITS;
		stored = (int64) h.value_filter_bits;
	}
	else if (t->opts.value_filter_hashes != h.value_filter_hashes)
	{
		option = LSMFDW_OPT_VALUE_FILTER_HASHES;
		stored = h.value_filter_hashes;
	}
	else if (t->opts.hierarchy_order != h.hierarchy_order)
	{
		option = LSMFDW_OPT_HIERARCHY_ORDER;
		stored = h.hierarchy_order;
	}
	if (option != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change option \"%s\" of foreign table \"%s\"",
						option, t->relname),
				 errdetail("The store was created with %s " INT64_FORMAT ", and value filter options are fixed when a store is created.",
						   option, stored),
				 errhint("Create a new table with the new options and copy the rows with INSERT ... SELECT.")));
}

/*
 * The end of a command that changed the options of server c->serverid:
 * refuses a new directory if the server has foreign tables, whose stores
 * are in the old one.
 */
static void
check_server(const ServerChange *c)
{
	char	   *dir;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *table = NULL;

	if (GetForeignServerExtended(c->serverid, FSV_MISSING_OK) == NULL)
		return;
	dir = LsmFdwServerDirectory(c->serverid);
	if ((dir == NULL && c->directory == NULL) ||
		(dir != NULL && c->directory != NULL && strcmp(dir, c->directory) == 0))
		return;

	rel = table_open(ForeignTableRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while ((tup = systable_getnext(scan)) != NULL)
	{
		Form_pg_foreign_table ft = (Form_pg_foreign_table) GETSTRUCT(tup);

		if (ft->ftserver == c->serverid)
		{
			table = get_rel_name(ft->ftrelid);
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (table != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot change option \"%s\" of server \"%s\" while it has foreign tables",
						LSMFDW_OPT_DIRECTORY,
						GetForeignServer(c->serverid)->servername),
				 errdetail("The stores of its tables (foreign table \"%s\", ...) are in %s.",
						   table, c->directory != NULL
						   ? psprintf("directory \"%s\"", c->directory)
						   : "the default location"),
				 errhint("Create another server with the new directory and copy the tables with INSERT ... SELECT.")));
}

/*
 * Schedules the removal of the store of relid, which is being dropped, for
 * when the dropping (sub)transaction commits, if its directory holds its
 * store (or nothing): never another's.
 */
static void
schedule_drop(Oid relid)
{
	bool		is_default;
	char	   *path = LsmFdwStorePath(relid, &is_default);
	LsmFdwMeta	meta;
	char	   *problem;
	LsmFdwMetaState state = LsmFdwReadMeta(path, &meta, &problem, WARNING);

	if ((state == LSMFDW_META_OK && LsmFdwMetaIsTable(&meta, relid)) ||
		state == LSMFDW_META_EMPTY_DIRECTORY)
		LsmFdwXactRemoveDirLater(relid, path, GetCurrentSubTransactionId(),
								 true);
}

/*
 * The start of a command: if it changes the attributes of a composite type
 * (ALTER TYPE, or ALTER TABLE of a table, whose row type it is) or renames
 * a value of an enum type, refuses it when lsm_fdw tables store values of
 * the type in a form that would no longer read back (check_type_users).
 */
static void
check_type_change(Node *parsetree)
{
	if (parsetree == NULL)
		return;
	if (IsA(parsetree, AlterEnumStmt))
	{
		AlterEnumStmt *stmt = (AlterEnumStmt *) parsetree;
		Oid			typid;

		if (stmt->oldVal == NULL)
			return;				/* ADD VALUE changes no label */
		typid = LookupTypeNameOid(NULL,
								  makeTypeNameFromNameList(stmt->typeName),
								  true);
		if (OidIsValid(typid))
			check_type_users(typid, true, "rename a value of");
	}
	else if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		Oid			relid;
		ListCell   *lc;

		/* ALTER TYPE on a composite type, or ALTER TABLE on a table */
		relid = RangeVarGetRelid(stmt->relation, NoLock, true);
		if (!OidIsValid(relid) || !OidIsValid(get_rel_type_id(relid)))
			return;
		foreach(lc, stmt->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);

			if (cmd->subtype == AT_AddColumn ||
				cmd->subtype == AT_DropColumn ||
				cmd->subtype == AT_AlterColumnType)
			{
				check_type_users(get_rel_type_id(relid), false,
								 "alter the attributes of");
				break;
			}
		}
	}
}

/*
 * Refuses to "action" type typid (an error) if a column of an lsm_fdw
 * table stores values of it in binary form (inside an array, a composite,
 * a range, a domain, or as itself; with enum_labels, not as itself: enum
 * columns store OIDs, their containers labels) and the table holds rows.
 * Each such table is locked against writes until the transaction ends, so
 * that none can come between the check and the change; the others are not
 * locked.
 */
static void
check_type_users(Oid typid, bool enum_labels, const char *action)
{
	Relation	ftrel = table_open(ForeignTableRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(ftrel, InvalidOid, false, NULL, 0,
										  NULL);
	HeapTuple	tup;

	while ((tup = systable_getnext(scan)) != NULL)
	{
		Oid			relid = ((Form_pg_foreign_table) GETSTRUCT(tup))->ftrelid;
		AttrNumber	attnum = column_using_type(relid, typid, enum_labels);
		Relation	rel;
		LsmFdwTable *t;

		if (attnum == InvalidAttrNumber || !LsmFdwIsOurTable(relid))
			continue;
		rel = relation_open(relid, ShareLock);
		t = LsmFdwGetTableLenient(rel);
		relation_close(rel, NoLock);
		if (LsmFdwStoreHoldsRows(t, true))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot %s type %s because column \"%s\" of foreign table \"%s\" uses it",
							action, format_type_be(typid),
							t->cols[attnum - 1].name, t->relname),
					 enum_labels
					 ? errdetail("The table holds rows, which store the values of type %s in the column by their labels.",
								 format_type_be(t->cols[attnum - 1].typid))
					 : errdetail("The table holds rows, which store the values of type %s in the column in their binary form.",
								 format_type_be(t->cols[attnum - 1].typid)),
					 errhint("Empty the table first, or copy its rows to a table that does not use the type.")));
	}
	systable_endscan(scan);
	table_close(ftrel, AccessShareLock);
}

/*
 * The first column of relation relid that stores values of type typid as
 * check_type_users means (enum_labels: not as a plain enum column), or
 * InvalidAttrNumber.  Reads the catalogs without locking relid.
 */
static AttrNumber
column_using_type(Oid relid, Oid typid, bool enum_labels)
{
	int			natts = relation_natts(relid);
	AttrNumber	attnum;

	for (attnum = 1; attnum <= natts; attnum++)
	{
		HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
										  Int16GetDatum(attnum));
		Form_pg_attribute attr;
		bool		uses;

		if (!HeapTupleIsValid(tup))
			continue;
		attr = (Form_pg_attribute) GETSTRUCT(tup);
		uses = !attr->attisdropped && type_contains(attr->atttypid, typid) &&
			!(enum_labels && type_is_enum(getBaseType(attr->atttypid)));
		ReleaseSysCache(tup);
		if (uses)
			return attnum;
	}
	return InvalidAttrNumber;
}

/*
 * Whether type typid is target or holds values of it: as the base type of
 * a domain, the element type of an array, an attribute of a composite
 * type, the subtype of a range or the range of a multirange.
 */
static bool
type_contains(Oid typid, Oid target)
{
	HeapTuple	tup;
	Form_pg_type typ;
	Oid			inner = InvalidOid;
	Oid			typrelid = InvalidOid;

	check_stack_depth();
	if (typid == target)
		return true;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		return false;
	typ = (Form_pg_type) GETSTRUCT(tup);
	if (typ->typtype == TYPTYPE_DOMAIN)
		inner = typ->typbasetype;
	else if (typ->typtype == TYPTYPE_RANGE)
		inner = get_range_subtype(typid);
	else if (typ->typtype == TYPTYPE_MULTIRANGE)
		inner = get_multirange_range(typid);
	else if (typ->typtype == TYPTYPE_COMPOSITE)
		typrelid = typ->typrelid;
	else if (OidIsValid(typ->typelem) && typ->typlen == -1)
		inner = typ->typelem;	/* an array */
	ReleaseSysCache(tup);

	if (OidIsValid(inner))
		return type_contains(inner, target);
	if (OidIsValid(typrelid))
	{
		int			natts = relation_natts(typrelid);
		AttrNumber	attnum;

		for (attnum = 1; attnum <= natts; attnum++)
		{
			HeapTuple	atup = SearchSysCache2(ATTNUM,
											   ObjectIdGetDatum(typrelid),
											   Int16GetDatum(attnum));
			Form_pg_attribute attr;
			bool		contains;

			if (!HeapTupleIsValid(atup))
				continue;
			attr = (Form_pg_attribute) GETSTRUCT(atup);
			contains = !attr->attisdropped &&
				type_contains(attr->atttypid, target);
			ReleaseSysCache(atup);
			if (contains)
				return true;
		}
	}
	return false;
}

/* The number of attributes of relation relid (0 if there is none). */
static int
relation_natts(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	int			natts;

	if (!HeapTupleIsValid(tup))
		return 0;
	natts = ((Form_pg_class) GETSTRUCT(tup))->relnatts;
	ReleaseSysCache(tup);
	return natts;
}

/*
 * Pre-commit: for each table whose layout may have changed, compares the
 * catalog as the transaction leaves it with the layout the store's
 * metadata file records, and writes the file now (another layout, which
 * only an empty store takes) or after the commit (a wider layout).  See
 * "Layout changes" in the file header.  Raises an error if a store that
 * holds rows would get another layout (the DDL checks did not run).
 */
static void
decide_layouts(void)
{
	ListCell   *lc;

	foreach(lc, layout_relids)
	{
		Oid			relid = lfirst_oid(lc);
		Relation	rel;
		LsmFdwTable *t;
		LsmFdwMeta	meta;
		LsmFdwMeta *next;
		StringInfoData why;
		char	   *problem;
		LsmFdwLayoutMatch match;
		MemoryContext oldcxt;

		if (!LsmFdwIsOurTable(relid) ||
			(rel = try_relation_open(relid, AccessShareLock)) == NULL)
			continue;
		t = LsmFdwGetTableLenient(rel);
		relation_close(rel, AccessShareLock);
		if (t->keyattno == InvalidAttrNumber ||
			LsmFdwReadMeta(t->path, &meta, &problem, ERROR) != LSMFDW_META_OK ||
			!LsmFdwMetaIsTable(&meta, t->relid))
			continue;
		initStringInfo(&why);
		match = LsmFdwCompareLayout(&meta, t, &why);
		if (match == LSMFDW_LAYOUT_EQUAL)
			continue;

		oldcxt = MemoryContextSwitchTo(ddl_context());
		next = LsmFdwMetaForTable(t);
		next->created = meta.created;
		if (match == LSMFDW_LAYOUT_WIDER)
		{
			MetaWrite  *w = palloc(sizeof(MetaWrite));

			w->path = pstrdup(t->path);
			w->meta = next;
			meta_writes = lappend(meta_writes, w);
			MemoryContextSwitchTo(oldcxt);
			continue;
		}
		MemoryContextSwitchTo(oldcxt);

		/*
		 * Another layout, for an empty store only.  Its rows are the
		 * committed ones (this transaction's are written after the file,
		 * in the new layout).  Another session may have filled it in the
		 * new layout meanwhile (a catalog it reads from a file that lags),
		 * writing the file first: then the file says so.
		 */
		if (meta.nkeys > 0 &&
			LsmFdwStoreHoldsRows(t, false))
		{
			resetStringInfo(&why);
			if (LsmFdwReadMeta(t->path, &meta, &problem, ERROR) != LSMFDW_META_OK ||
				LsmFdwCompareLayout(&meta, t, &why) == LSMFDW_LAYOUT_INCOMPATIBLE)
				LsmFdwReportLayoutMismatch(t, why.data);
			continue;
		}
		(void) LsmFdwWriteMeta(t->path, next, ERROR);
	}
}

/*
 * After the commit: writes the metadata files decided at pre-commit.  Does
 * not raise errors: a file not written lags behind the catalog, which the
 * next reader repairs (see (1) in the file header).
 */
static void
write_meta_after_commit(void)
{
	ListCell   *lc;

	foreach(lc, meta_writes)
	{
		MetaWrite  *w = (MetaWrite *) lfirst(lc);
		struct stat st;

		/* a table dropped by the transaction: its directory goes */
		if (stat(w->path, &st) == 0)
			(void) LsmFdwWriteMeta(w->path, w->meta, WARNING);
	}
}

/*
 * Transaction callback: at pre-commit (and pre-prepare), acts on the notes
 * that no ddl_command_end has seen and decides the layouts; after the
 * commit, writes the files; at the end, forgets everything.
 */
static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (touched != NIL || server_changes != NIL)
				act_on_notes();
			if (layout_relids != NIL)
				decide_layouts();
			break;
		case XACT_EVENT_PRE_PREPARE:

			/*
			 * The checks, but no file: COMMIT PREPARED runs elsewhere.  The
			 * layouts left behind are wider, or over stores that stay empty
			 * (xact.c refuses to prepare writes), which readers repair.
			 */
			if (touched != NIL || server_changes != NIL)
				act_on_notes();
			layout_relids = NIL;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			write_meta_after_commit();
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			ddl_cxt = NULL;		/* goes with TopTransactionContext */
			touched = NIL;
			server_changes = NIL;
			layout_relids = NIL;
			meta_writes = NIL;
			break;
		default:
			break;
	}
}

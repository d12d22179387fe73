/*-------------------------------------------------------------------------
 *
 * store.c
 *		  The per-backend cache of open stores, the checks made when a store
 *		  is opened, and engine error reporting.
 *
 * Every backend that touches a foreign table opens its store once and keeps
 * the handle (lsm_db) in a hash table keyed by the table's OID, in
 * TopMemoryContext, until the backend exits.  Opening replays the store's
 * write-ahead log, so it is worth caching; other backends' commits are then
 * picked up by lsm_refresh, which every statement calls before it reads
 * (LsmFdwOpenStore(..., true)).  Under REPEATABLE READ and SERIALIZABLE
 * only the transaction's first statement that reads the store does: the
 * handle reads nothing but what it caught up with (its version's tables
 * stay open, so other processes' compactions do not take them away), so
 * every later statement sees the same snapshot, as postgres_fdw's remote
 * transactions do.  Nor is a handle refreshed while an UPDATE or DELETE of
 * its table runs (a statement that the UPDATE calls, such as a trigger's,
 * sees what the UPDATE sees): the UPDATE reads the versions of the rows it
 * changes again through it (xact.c).  Meanwhile the handle is not reopened when the table's
 * definition changes (another session's ANALYZE invalidates it too), and
 * lsm_flush and lsm_compact work on a second handle.  The commit catches up
 * again, under the commit lock, to check the transaction's writes against
 * what others committed (xact.c).
 *
 * A handle must not be closed while something uses it: an open iterator
 * (lsm_close refuses), a modification in progress, or the transaction's
 * pending writes, which are written through it at pre-commit.  These users
 * pin the store.  When the relation changes (a relcache invalidation: ALTER,
 * DROP, or an OID reused after a DROP) the entry is marked stale and
 * reopened, from the then current path and options, by the next
 * LsmFdwOpenStore that finds it unpinned.  When its directory is removed
 * (DROP committed, or the creating transaction aborted) an unpinned handle
 * is closed at once, a pinned one when the last pin goes; POSIX lets the
 * open files outlive their names meanwhile.
 *
 * Opening a store checks that it is the table's and that the table's
 * definition reads its rows as they were written, from the store's
 * metadata file (meta.c): a directory holding another table's store (a
 * dropped table's, whose OID the table got) is never opened, a missing one
 * is an error, not an empty table, unless the table was created by this
 * transaction (then the store is created: the DDL hooks of ddl.c create it
 * at CREATE FOREIGN TABLE, but may not have run), and a definition that
 * would misread the rows (changed where the DDL checks did not run) makes
 * the open fail.  A definition that is wider than the recorded layout, or
 * any definition over an empty store, is fine: the metadata follows at
 * commit (ddl.c).
 *
 * LsmFdwReportError is the one place where an engine return code becomes an
 * ereport: an errcode per code, a short primary message, the engine's detail
 * in errdetail and the table in errcontext.  What the engine reports without
 * failing a call (recovery discarding an invalid tail of a store's
 * write-ahead log) reaches engine_log, which writes it to the server log:
 * it happens in whichever backend opens or writes the store first, and is
 * for the administrator rather than for that session's client.  Within
 * lsm_verify the findings go to the client instead (LsmFdwEngineLogToClient).
 *
 * src/fdw/store.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/file.h>
#include <sys/stat.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "common/file_perm.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "lsm_fdw.h"

/* Open stores of this backend, keyed by relation OID; NULL until first use */
static HTAB *stores = NULL;

/* engine_log writes to the client (within lsm_verify) rather than the log */
static bool engine_log_to_client = false;

static void init_cache(void);
static void check_identity(LsmFdwTable *t, LsmFdwMeta *meta);
static void check_layout(LsmFdwStore *s, LsmFdwTable *t,
						 const LsmFdwMeta *meta);
static lsm_db *open_handle(LsmFdwTable *t, bool create);
static lsm_db *open_own_store(LsmFdwTable *t);
static bool first_row_exists(lsm_db *db, const char *relname);
static void remove_directory(const char *path, int elevel);
static void engine_log(void *arg, int level, const char *msg);
static void close_store(LsmFdwStore *s);
static void make_parent_directory(const LsmFdwTable *t);
static void remove_dropped_databases(void);
static int	interrupt_pending(void *arg);
static void relcache_invalidated(Datum arg, Oid relid);
static void close_all_stores(int code, Datum arg);

/*
 * Module initialisation (from _PG_init): registers the relcache callback
 * and the exit callback of the cache.
 */
void
LsmFdwInitStores(void)
{
	CacheRegisterRelcacheCallback(relcache_invalidated, (Datum) 0);
	on_proc_exit(close_all_stores, (Datum) 0);
}

/*
 * Returns the cache entry of t's store, opening the store if this backend
 * has not yet, or reopening it if it is unpinned and stale or its path
 * changed.  Opening checks that the store is t's and that t's definition
 * reads its rows as they were written (see the file header), and creates
 * the store if t was created by this transaction and has none yet.  With
 * refresh, the handle first catches up with other processes' commits.
 * Raises an error if the store cannot be opened or refreshed, is missing,
 * belongs to another table or does not match t.  The entry stays valid for
 * the life of the backend; pin it to keep its handle open across calls
 * that may reopen it.
 */
LsmFdwStore *
LsmFdwOpenStore(LsmFdwTable *t, bool refresh)
{
	LsmFdwStore *s;
	bool		found;
	int			rc;

	if (stores == NULL)
		init_cache();
	s = hash_search(stores, &t->relid, HASH_ENTER, &found);
	if (!found)
	{
		s->db = NULL;
		s->path = NULL;
		s->relname = NULL;
		s->stale = false;
		s->doomed = false;
		s->pins = 0;
		s->scans = 0;
		s->scan_cids_lost = false;
		s->modifying = 0;
		s->snapshot_lxid = InvalidLocalTransactionId;
		s->read_seq = 0;
	}

	/* a changed definition is picked up, but not under a snapshot */
	if (s->db != NULL && s->pins == 0 &&
		(s->doomed || strcmp(s->path, t->path) != 0 ||
		 (s->stale && !LsmFdwHoldsSnapshot(s))))
		close_store(s);

	if (s->db == NULL)
	{
		lsm_options opts = t->opts;
		LsmFdwMeta meta;
		lsm_db	   *db;
		char	   *path;
		char	   *relname;

		if (t->default_location)
			remove_dropped_databases();
		check_identity(t, &meta);
		path = MemoryContextStrdup(TopMemoryContext, t->path);
		relname = MemoryContextStrdup(TopMemoryContext, t->relname);
		opts.interrupt = interrupt_pending;
		opts.interrupt_arg = NULL;
		opts.log = engine_log;
		opts.log_arg = relname;
		/* commits never compact in the engine: compactor.c decides who does */
		opts.auto_compact = 0;
		rc = lsm_open(t->path, &opts, &db);
		if (rc != LSM_OK)
		{
			pfree(path);
			pfree(relname);
			LsmFdwReportError(rc, NULL, t->relname, "open");
		}
		s->db = db;
		s->path = path;
		s->relname = relname;
		s->stale = false;
		s->doomed = false;
		s->snapshot_lxid = MyProc->lxid;
		s->l0_trigger = opts.l0_compaction_trigger;
		s->read_seq = 0;		/* another handle: another history */
		check_layout(s, t, &meta);
		/* the snapshot begins here (planning, too): after the decided ones */
		if (IsTransactionState())
			LsmFdwResolvePrepared(s, t->relname);
		return s;				/* just opened: nothing to catch up with */
	}

	/*
	 * A transaction snapshot: caught up once per transaction.  While an
	 * UPDATE or DELETE runs, not at all: it reads the versions of the rows it
	 * changes through the handle (xact.c), which must show what its scan saw.
	 */
	if (refresh && (LsmFdwHoldsSnapshot(s) || s->modifying > 0))
		return s;
	if (refresh)
	{
		if ((rc = lsm_refresh(s->db)) != LSM_OK)
			LsmFdwReportError(rc, s->db, t->relname, "refresh");
		LsmFdwResolvePrepared(s, t->relname);
		s->snapshot_lxid = MyProc->lxid;
	}
	return s;
}

/*
 * Creates the directory and metadata file of the store of table t, which
 * this transaction created (the engine creates its files when the store is
 * first opened), unless it has them already.  What a dropped table with
 * the same OID left at the path is removed first; anything else there is
 * an error.  The directory goes again if the subtransaction that created
 * t aborts.  Raises an error if the store cannot be created.
 * REQUIRES: t->create_subid is valid.
 */
void
LsmFdwCreateStore(LsmFdwTable *t)
{
	LsmFdwMeta	old;
	LsmFdwMetaState state;
	char	   *problem;

	Assert(t->create_subid != InvalidSubTransactionId);
	make_parent_directory(t);
	state = LsmFdwReadMeta(t->path, &old, &problem, ERROR);
	if (state == LSMFDW_META_OK && LsmFdwMetaIsTable(&old, t->relid))
		return;
	if (state == LSMFDW_META_OK && old.sysid == GetSystemIdentifier() &&
		old.dboid == MyDatabaseId && old.relid == t->relid)
	{
		/*
		 * The store of a table of this database that had the OID before: the
		 * table is gone (its OID is free again), the store was left behind
		 * (the server stopped between the DROP's commit and the removal).
		 */
		ereport(LOG,
				(errmsg("lsm_fdw: removing \"%s\", the store of a dropped table whose OID foreign table \"%s\" now has",
						t->path, t->relname),
				 errdetail("It is %s.", LsmFdwDescribeMeta(&old))));
		remove_directory(t->path, ERROR);
	}
	else if (state == LSMFDW_META_EMPTY_DIRECTORY)
		remove_directory(t->path, ERROR);	/* a creation that died */
	else if (state == LSMFDW_META_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("directory \"%s\" already holds another lsm_fdw store",
						t->path),
				 errdetail("It is %s.", LsmFdwDescribeMeta(&old)),
				 errhint("Remove the directory, or give the server a directory of its own."),
				 errcontext("foreign table \"%s\"", t->relname)));
	else if (state != LSMFDW_META_NO_DIRECTORY)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("directory \"%s\" already exists and is not an lsm_fdw store",
						t->path),
				 state == LSMFDW_META_INVALID
				 ? errdetail("Its metadata file is invalid: %s.", problem)
				 : errdetail("It has no lsm_fdw metadata file."),
				 errhint("Remove the directory, or give the server a directory of its own."),
				 errcontext("foreign table \"%s\"", t->relname)));

	if (MakePGDirectory(t->path) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", t->path),
				 errcontext("foreign table \"%s\"", t->relname)));
	/* from now on, an abort of the creation takes the directory away */
	LsmFdwXactRemoveDirLater(t->relid, t->path, t->create_subid, false);
	(void) LsmFdwWriteMeta(t->path, LsmFdwMetaForTable(t), ERROR);
}

/*
 * Whether the store of table t holds a committed row, or with pending,
 * whether this backend uses it too (the transaction has writes pending for
 * it, or a scan is open): what DDL that changes how rows are read must not
 * meet.  A table without a store of its own holds no rows.  Looks through
 * a handle of its own, so as not to move the snapshot of this backend's.
 * Raises an error if the store cannot be read.
 */
bool
LsmFdwStoreHoldsRows(LsmFdwTable *t, bool pending)
{
	LsmFdwStore *s = NULL;
	lsm_db	   *db;
	bool		rows;

	if (stores != NULL)
		s = hash_search(stores, &t->relid, HASH_FIND, NULL);
	if (pending && s != NULL && s->pins > 0)
		return true;
	if ((db = open_own_store(t)) == NULL)
		return false;
	PG_TRY();
	{
		rows = first_row_exists(db, t->relname);
	}
	PG_FINALLY();
	{
		(void) lsm_close(db);
	}
	PG_END_TRY();
	return rows;
}

/*
 * Sets *h to the value filter parameters t's store was created with.
 * Returns false if t has no store of its own with engine files.  Raises an
 * error if the store cannot be read.
 */
bool
LsmFdwStoreValueFilters(LsmFdwTable *t, lsm_hierarchy_stats *h)
{
	lsm_db	   *db = open_own_store(t);
	lsm_stats	st;

	if (db == NULL)
		return false;
	PG_TRY();
	{
		int			rc = lsm_get_stats(db, &st);

		if (rc != LSM_OK)
			LsmFdwReportError(rc, db, t->relname, "read the statistics of");
	}
	PG_FINALLY();
	{
		(void) lsm_close(db);
	}
	PG_END_TRY();
	*h = st.hierarchy;
	return true;
}

/*
 * Whether s's handle holds the snapshot of the current REPEATABLE READ or
 * SERIALIZABLE transaction, which it must then keep until the transaction
 * ends (see the file header).
 */
bool
LsmFdwHoldsSnapshot(const LsmFdwStore *s)
{
	return IsolationUsesXactSnapshot() && s->snapshot_lxid == MyProc->lxid;
}

/*
 * Opens a second handle on t's store, for an operation that must not move
 * the shared handle's snapshot (an lsm_flush under REPEATABLE READ);
 * close it with lsm_close before t goes away.  Raises an error if the
 * store cannot be opened.  REQUIRES: the shared handle is open (it checked
 * the store).
 */
lsm_db *
LsmFdwOpenPrivateHandle(LsmFdwTable *t)
{
	return open_handle(t, true);
}

/* Keeps the handle of s open (see the file header). */
void
LsmFdwPinStore(LsmFdwStore *s)
{
	Assert(s->db != NULL);
	s->pins++;
}

/*
 * Releases a pin; closes a doomed handle (its directory is gone) when the
 * last pin goes.  Does not raise errors: it runs in cleanup paths.
 */
void
LsmFdwUnpinStore(LsmFdwStore *s)
{
	Assert(s->pins > 0);
	if (--s->pins == 0 && s->doomed)
		close_store(s);
}

/*
 * Registers an open scan of s that reads the pending writes of commands
 * before curcid (InvalidCommandId: of every command, the newest).  With
 * more than LSMFDW_SCAN_SLOTS open at once, their command ids are
 * forgotten until none is open, which LsmFdwScansWithin takes as unknown.
 */
void
LsmFdwScanBegin(LsmFdwStore *s, CommandId curcid)
{
	if (s->scans < LSMFDW_SCAN_SLOTS)
		s->scan_cids[s->scans] = curcid;
	else
		s->scan_cids_lost = true;
	s->scans++;
}

/* Unregisters a scan that LsmFdwScanBegin registered with curcid. */
void
LsmFdwScanEnd(LsmFdwStore *s, CommandId curcid)
{
	int			i;

	Assert(s->scans > 0);
	if (--s->scans == 0)
		s->scan_cids_lost = false;
	if (s->scan_cids_lost)
		return;
	/* scans end in any order: the slot of one that read with curcid goes */
	for (i = 0; i < s->scans; i++)
	{
		if (s->scan_cids[i] == curcid)
		{
			s->scan_cids[i] = s->scan_cids[s->scans];
			break;
		}
	}
}

/*
 * Whether every open scan of s reads with a command id from lo to hi
 * (InvalidCommandId, reading every command's writes, counts as above all);
 * true if none is open, false if their command ids are not all known.
 */
bool
LsmFdwScansWithin(const LsmFdwStore *s, CommandId lo, CommandId hi)
{
	int			i;

	if (s->scan_cids_lost)
		return false;
	for (i = 0; i < s->scans; i++)
	{
		CommandId	c = s->scan_cids[i];

		if (c == InvalidCommandId ? hi != InvalidCommandId : (c < lo || c > hi))
			return false;
	}
	return true;
}

/*
 * Removes the store directory path of relation relid, first closing this
 * backend's handle on it, or dooming the handle if it is pinned.  Failures
 * are reported as warnings: this runs after a commit or during an abort,
 * where an error cannot undo anything.
 */
void
LsmFdwRemoveStoreDir(Oid relid, const char *path)
{
	struct stat st;

	if (stores != NULL)
	{
		LsmFdwStore *s = hash_search(stores, &relid, HASH_FIND, NULL);

		if (s != NULL && s->db != NULL && strcmp(s->path, path) == 0)
		{
			if (s->pins == 0)
				close_store(s);
			else
				s->doomed = true;
		}
	}
	if (stat(path, &st) == 0)
		remove_directory(path, WARNING);
}

/*
 * The version of an encoded row, which commits compare (xact.c): a hash of
 * its bytes, the one the engine's LSM_IF_VALUE compares.
 */
uint64
LsmFdwRowVersion(const char *row, size_t rowlen)
{
	return lsm_hash(row, rowlen);
}

/*
 * Remembers the version of row, which a key lookup just read from s's
 * store for key: an UPDATE or DELETE of that row asks for it
 * (LsmFdwReadVersion) instead of reading the row again.  Only while the
 * handle's view does not move (the store serves the same row meanwhile).
 */
void
LsmFdwNoteRead(LsmFdwStore *s, const char *key, size_t klen, const char *row,
			   size_t rowlen)
{
	if (klen > LSMFDW_READ_KEY_MAX)
	{
		s->read_seq = 0;
		return;
	}
	memcpy(s->read_key, key, klen);
	s->read_klen = (int) klen;
	s->read_version = LsmFdwRowVersion(row, rowlen);
	s->read_seq = lsm_last_sequence(s->db);
}

/*
 * The version of key's committed row as s's handle sees it now, if the
 * last key lookup read it (LsmFdwNoteRead) and the view has not moved
 * since: true with *version, else false.
 */
bool
LsmFdwReadVersion(LsmFdwStore *s, const char *key, size_t klen,
				  uint64 *version)
{
	if (s->read_seq == 0 || s->read_klen != (int) klen ||
		memcmp(s->read_key, key, klen) != 0 ||
		lsm_last_sequence(s->db) != s->read_seq)
		return false;
	*version = s->read_version;
	return true;
}

/*
 * Whether the committed state of s, as its handle shows it now, holds no
 * row: LsmFdwGet then finds nothing until the handle catches up with other
 * processes' commits (at the next statement, or the next transaction under
 * REPEATABLE READ).
 */
bool
LsmFdwStoreLooksEmpty(LsmFdwStore *s)
{
	return lsm_view_is_empty(s->db) != 0;
}

/*
 * Looks key up in the committed state of s.  Returns false if it is absent;
 * else true with a palloc'd copy of the row in *val (NUL-terminated) and
 * its length in *vlen.  Raises an error on an engine failure.
 */
bool
LsmFdwGet(LsmFdwStore *s, const char *relname, const char *key, size_t klen,
		  char **val, size_t *vlen)
{
	void	   *v = NULL;
	size_t		n = 0;
	int			rc;

	rc = lsm_get(s->db, key, klen, &v, &n);
	if (rc == LSM_NOTFOUND)
		return false;
	if (rc != LSM_OK)
		LsmFdwReportError(rc, s->db, relname, "read");

	/* the engine's allocation must not leak if the copy fails */
	PG_TRY();
	{
		*val = palloc(n + 1);
		memcpy(*val, v, n);
		(*val)[n] = '\0';
		*vlen = n;
	}
	PG_FINALLY();
	{
		lsm_free(v);
	}
	PG_END_TRY();
	return true;
}

/*
 * The size of s's store (table relname) from the engine's statistics:
 * entries of every level and of the memtable (an upper bound of the rows,
 * counting shadowed versions until compaction), bytes, the memtable's
 * entries and the number of SSTables.  Raises an error if the engine
 * fails.
 */
LsmFdwStoreSize
LsmFdwGetStoreSize(LsmFdwStore *s, const char *relname)
{
	LsmFdwStoreSize size;
	lsm_stats	st;
	int			rc;
	int			l;

	rc = lsm_get_stats(s->db, &st);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, s->db, relname, "read the statistics of");
	size.memtable_entries = (double) st.memtable_entries;
	size.entries = size.memtable_entries;
	size.bytes = (double) st.memtable_bytes;
	size.files = 0;
	for (l = 0; l < st.levels && l < LSM_MAX_LEVELS; l++)
	{
		size.entries += (double) st.level[l].entries;
		size.bytes += (double) st.level[l].bytes;
		size.files += st.level[l].files;
	}
	return size;
}

/*
 * Raises the error for engine return code rc from an operation ("open",
 * "read", "write", ...) on the store of foreign table relname; db is the
 * handle (NULL for lsm_open and codec calls), whose lsm_errmsg becomes the
 * detail.  Does not return.
 */
void
LsmFdwReportError(int rc, lsm_db *db, const char *relname, const char *action)
{
	const char *detail = lsm_errmsg(db);
	int			code;

	switch (rc)
	{
		case LSM_IOERR:
			errno = lsm_errno(db);
			if (errno != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not %s lsm_fdw store: %m", action),
						 detail[0] ? errdetail("%s", detail) : 0,
						 errcontext("foreign table \"%s\"", relname)));
			/* no system call behind it: no errno to show */
			code = ERRCODE_IO_ERROR;
			break;
		case LSM_INTERRUPTED:
			/* the engine gave up because an interrupt is pending */
			CHECK_FOR_INTERRUPTS();
			code = ERRCODE_QUERY_CANCELED;
			break;
		case LSM_CORRUPTION:
			code = ERRCODE_DATA_CORRUPTED;
			break;
		case LSM_NOSPACE:
			code = ERRCODE_DISK_FULL;
			break;
		case LSM_NOMEM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case LSM_BUSY:
			code = ERRCODE_LOCK_NOT_AVAILABLE;
			break;
		case LSM_INVALID:
			code = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
		default:
			code = ERRCODE_FDW_ERROR;
			break;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("could not %s lsm_fdw store: %s", action,
					lsm_strerror(rc)),
			 detail[0] ? errdetail("%s", detail) : 0,
			 errcontext("foreign table \"%s\"", relname)));
	pg_unreachable();
}

/*
 * Checks that the directory of t's store holds t's store, and reads its
 * metadata into *meta.  A table created by this transaction gets its store
 * now if it has none (the DDL hooks create it at CREATE FOREIGN TABLE, but
 * may not have run).  Raises an error if the store is missing or another's.
 */
static void
check_identity(LsmFdwTable *t, LsmFdwMeta *meta)
{
	LsmFdwMetaState state;
	char	   *problem;

	state = LsmFdwReadMeta(t->path, meta, &problem, ERROR);
	if (state == LSMFDW_META_OK && LsmFdwMetaIsTable(meta, t->relid))
		return;
	if (t->create_subid != InvalidSubTransactionId)
	{
		LsmFdwCreateStore(t);
		state = LsmFdwReadMeta(t->path, meta, &problem, ERROR);
		if (state == LSMFDW_META_OK && LsmFdwMetaIsTable(meta, t->relid))
			return;
	}

	switch (state)
	{
		case LSMFDW_META_NO_DIRECTORY:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
					 errmsg("the store of foreign table \"%s\" is missing",
							t->relname),
					 errdetail("Directory \"%s\" does not exist.", t->path),
					 errhint("CREATE DATABASE ... TEMPLATE copies the definitions of lsm_fdw tables, not their stores. Restore the rows from a dump made with pg_dump --include-foreign-data, or drop the table.")));
			break;
		case LSMFDW_META_OK:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
					 errmsg("directory \"%s\" holds the store of another table, not that of foreign table \"%s\"",
							t->path, t->relname),
					 errdetail("It is %s.", LsmFdwDescribeMeta(meta)),
					 errhint("The table's own store is missing. Restore its rows from a dump, or drop the table.")));
			break;
		case LSMFDW_META_INVALID:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid metadata file in the store of foreign table \"%s\"",
							t->relname),
					 errdetail("%s: %s.", t->path, problem)));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
					 errmsg("directory \"%s\" is not the store of foreign table \"%s\"",
							t->path, t->relname),
					 errdetail("It has no lsm_fdw metadata file.")));
			break;
	}
}

/*
 * Checks that t's definition reads the rows of its store, just opened as
 * s, as they were written (meta records how: LsmFdwCompareLayout).  A
 * wider definition is fine, and so is any definition on an empty store;
 * either way the metadata file takes the definition when the transaction
 * commits (ddl.c).  Otherwise closes the handle and raises an error: a
 * change the DDL checks did not see (they were not run).
 */
static void
check_layout(LsmFdwStore *s, LsmFdwTable *t, const LsmFdwMeta *meta)
{
	StringInfoData why;
	LsmFdwLayoutMatch match;

	initStringInfo(&why);
	match = LsmFdwCompareLayout(meta, t, &why);
	if (match == LSMFDW_LAYOUT_EQUAL)
		return;
	if (match == LSMFDW_LAYOUT_WIDER || !first_row_exists(s->db, t->relname))
	{
		LsmFdwLayoutCheckAtCommit(t->relid);
		return;
	}
	close_store(s);
	LsmFdwReportLayoutMismatch(t, why.data);
}

/*
 * Opens a new handle on t's store with t's options; with create, the engine
 * creates its files if they are missing.  Returns NULL if they are (and not
 * create).  Raises an error if the store cannot be opened.
 */
static lsm_db *
open_handle(LsmFdwTable *t, bool create)
{
	lsm_options opts = t->opts;
	lsm_db	   *db;
	int			rc;

	opts.interrupt = interrupt_pending;
	opts.interrupt_arg = NULL;
	opts.log = engine_log;
	opts.log_arg = t->relname;
	opts.auto_compact = 0;		/* see LsmFdwOpenStore */
	opts.create_if_missing = create ? 1 : 0;
	rc = lsm_open(t->path, &opts, &db);
	if (rc == LSM_NOTFOUND && !create)
		return NULL;
	if (rc != LSM_OK)
		LsmFdwReportError(rc, NULL, t->relname, "open");
	return db;
}

/*
 * Opens a new handle on t's store if t has one of its own (its metadata
 * says so) with engine files; else returns NULL.  Close it with lsm_close.
 * Raises an error if the store cannot be opened.
 */
static lsm_db *
open_own_store(LsmFdwTable *t)
{
	LsmFdwMeta	meta;
	char	   *problem;

	if (LsmFdwReadMeta(t->path, &meta, &problem, ERROR) != LSMFDW_META_OK ||
		!LsmFdwMetaIsTable(&meta, t->relid))
		return NULL;
	return open_handle(t, false);
}

/*
 * Whether the store open as db holds a row (in the state its handle has
 * caught up with).  Raises an error if it cannot be read.
 */
static bool
first_row_exists(lsm_db *db, const char *relname)
{
	lsm_iter   *it;
	bool		found;
	int			rc;

	if ((rc = lsm_iter_open(db, &it)) != LSM_OK)
		LsmFdwReportError(rc, db, relname, "read");
	lsm_iter_seek(it, NULL, 0);
	found = lsm_iter_valid(it);
	rc = lsm_iter_status(it);
	lsm_iter_close(it);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, db, relname, "read");
	return found;
}

/*
 * Removes directory path and everything in it.  What cannot be removed is
 * left in place with a warning, and with elevel ERROR, the removal then
 * fails.
 */
static void
remove_directory(const char *path, int elevel)
{
	if (!rmtree(path, true) && elevel >= ERROR)
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\"", path)));
}

/*
 * Makes the engine's log messages (engine_log) go to the client, as
 * WARNING and NOTICE, with on; to the server log, as LOG, without (the
 * default, which the caller restores, in a PG_FINALLY if need be).
 */
void
LsmFdwEngineLogToClient(bool on)
{
	engine_log_to_client = on;
}

/*
 * The engine's log callback (arg: the table's name): an event that fails
 * no call, such as recovery discarding an invalid tail of the store's
 * write-ahead log (the engine's message names the file, the offset and the
 * bytes), goes to the server log; within lsm_verify, LsmFdwEngineLogToClient
 * sends the findings to the client.  A failed automatic flush or compaction
 * (LSM_LOG_BACKGROUND) is a WARNING to the client, whatever the call.  The engine may hold the store's
 * write lock, and it must not longjmp: an error while reporting is
 * swallowed.
 */
static void
engine_log(void *arg, int level, const char *msg)
{
	const char *relname = arg;
	MemoryContext cxt = CurrentMemoryContext;
	int			elevel;

	if (level == LSM_LOG_BACKGROUND)
		elevel = WARNING;
	else if (!engine_log_to_client)
		elevel = LOG;
	else
		elevel = level == LSM_LOG_WARNING ? WARNING : NOTICE;
	PG_TRY();
	{
		if (level == LSM_LOG_BACKGROUND)
			ereport(elevel,
					(errmsg("lsm_fdw store of foreign table \"%s\": %s",
							relname, msg),
					 errdetail("The statement's writes are committed; the flush or compaction runs again at a later write."),
					 errhint("lsm_counters(table) counts these failures and keeps the last message; lsm_flush(table) and lsm_compact(table) run one now and report its error.")));
		else
			ereport(elevel,
					(errmsg("lsm_fdw store of foreign table \"%s\": %s",
							relname, msg)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
	}
	PG_END_TRY();
}

/* Creates the cache. */
static void
init_cache(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(LsmFdwStore);
	ctl.hcxt = TopMemoryContext;
	stores = hash_create("lsm_fdw stores", 16, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * Closes the handle of s.  Does not raise errors (cleanup paths): a failure,
 * which leaves nothing to retry, is logged.
 * REQUIRES: s is not pinned.
 */
static void
close_store(LsmFdwStore *s)
{
	int			rc;

	Assert(s->pins == 0);
	if (s->db == NULL)
		return;
	rc = lsm_close(s->db);
	if (rc != LSM_OK)
		elog(LOG, "lsm_fdw: could not close store \"%s\": %s",
			 s->path, lsm_strerror(rc));
	s->db = NULL;
	pfree(s->path);
	s->path = NULL;
	pfree(s->relname);
	s->relname = NULL;
	s->stale = false;
	s->doomed = false;
}

/*
 * Creates the directories above t's store (<base>/<database OID>) with the
 * data directory's permissions (LsmFdwCreateStore creates the store's own).
 * Raises an error if that fails.
 */
static void
make_parent_directory(const LsmFdwTable *t)
{
	char	   *parent = pstrdup(t->path);
	char	   *slash = strrchr(parent, '/');

	if (slash != NULL && slash != parent)
	{
		*slash = '\0';
		if (pg_mkdir_p(parent, pg_dir_create_mode) != 0 && errno != EEXIST)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create directory \"%s\": %m", parent),
					 errcontext("foreign table \"%s\"", t->relname)));
	}
	pfree(parent);
}

/*
 * Removes the default-location stores of databases that no longer exist
 * ($PGDATA/lsm_fdw/<OID> where no database has that OID).  DROP DATABASE
 * runs in another database, where nothing of ours hears of it, so the
 * first backend that opens a store afterwards cleans up; once per backend.
 * A database being dropped is still in pg_database until the drop commits;
 * a database being created has no stores yet.  Backends that open their
 * first store at the same moment would remove the same files, and warn
 * about the ones another removed first, so one cleans while holding an
 * flock on LSMFDW_DEFAULT_DIR/cleanup.lock and the others skip it.
 */
static void
remove_dropped_databases(void)
{
	static bool done = false;
	int			lockfd;
	DIR		   *dir;
	struct dirent *de;

	if (done)
		return;
	done = true;
	lockfd = OpenTransientFile(LSMFDW_DEFAULT_DIR "/cleanup.lock",
							   O_RDWR | O_CREAT | PG_BINARY);
	if (lockfd < 0)
		return;					/* no store yet, or nothing we may clean */
	if (flock(lockfd, LOCK_EX | LOCK_NB) != 0)
	{
		CloseTransientFile(lockfd); /* another backend is cleaning */
		return;
	}
	dir = AllocateDir(LSMFDW_DEFAULT_DIR);
	if (dir == NULL)
	{
		CloseTransientFile(lockfd);
		return;
	}
	while ((de = ReadDirExtended(dir, LSMFDW_DEFAULT_DIR, LOG)) != NULL)
	{
		char	   *end;
		unsigned long oid;
		char	   *path;

		errno = 0;
		oid = strtoul(de->d_name, &end, 10);
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end != '\0' ||
			errno != 0 || oid > PG_UINT32_MAX ||
			SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum((Oid) oid)))
			continue;
		path = psprintf("%s/%s", LSMFDW_DEFAULT_DIR, de->d_name);
		ereport(LOG,
				(errmsg("lsm_fdw: removing \"%s\", the stores of a dropped database",
						path)));
		(void) rmtree(path, true);
		pfree(path);
	}
	FreeDir(dir);
	CloseTransientFile(lockfd);	/* releases the flock */
}

/*
 * The engine's interrupt callback: asks it to stop waiting (for the write
 * lock) when a cancel or termination is pending and may be served now.  It
 * must not longjmp, so it only looks; LsmFdwReportError then lets
 * CHECK_FOR_INTERRUPTS act.  It is also where the process tests kill a
 * backend in the middle of a compaction (LsmFdwCompactionPoll).
 */
static int
interrupt_pending(void *arg)
{
	LsmFdwCompactionPoll();
	return (QueryCancelPending || ProcDiePending) &&
		InterruptHoldoffCount == 0 && CritSectionCount == 0;
}

/*
 * Relcache invalidation callback: the relation relid (every relation if
 * InvalidOid) changed, so its store may have moved or been replaced.  Only
 * marks entries; reopening happens at the next use.
 */
static void
relcache_invalidated(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	LsmFdwStore *s;

	if (stores == NULL)
		return;
	if (OidIsValid(relid))
	{
		s = hash_search(stores, &relid, HASH_FIND, NULL);
		if (s != NULL)
			s->stale = true;
		return;
	}
	hash_seq_init(&status, stores);
	while ((s = hash_seq_search(&status)) != NULL)
		s->stale = true;
}

/*
 * Backend exit: closes every unpinned store.  By now the transaction has
 * been aborted and its scans have released their pins; a store still pinned
 * is left to the process exit.
 */
static void
close_all_stores(int code, Datum arg)
{
	HASH_SEQ_STATUS status;
	LsmFdwStore *s;

	if (stores == NULL)
		return;
	hash_seq_init(&status, stores);
	while ((s = hash_seq_search(&status)) != NULL)
	{
		if (s->db != NULL && s->pins == 0)
			close_store(s);
	}
}

/*-------------------------------------------------------------------------
 *
 * compactor.c
 *		  Who compacts a store after a commit: a dynamic background worker,
 *		  or the committing backend itself.
 *
 * Every handle this backend writes through is opened with auto_compact = 0
 * (store.c), so the engine never compacts on its own: a commit whose flush
 * left level 0 at its trigger would otherwise merge it in the committing
 * backend, and the client's COMMIT would take as long as the compaction.
 * Instead, after the commit has released the store's write lock (xact.c),
 * LsmFdwCompactionAfterCommit asks the engine whether a compaction is due
 * (lsm_compaction_needed) and, under lsm_fdw.compaction = 'background' (the
 * default), the transaction launches at its end a dynamic background worker
 * (LsmFdwLaunchCompactor) that does the merging on another core.  The
 * worker protocol:
 *
 *	1. The backend registers the worker with RegisterDynamicBackgroundWorker
 *	   (no shared_preload_libraries needed: the postmaster loads this
 *	   library by name and calls lsm_fdw_compactor_main), passing the table's
 *	   OID as bgw_main_arg and its database's OID in bgw_extra.
 *	2. The worker connects to the database, starts a transaction, opens the
 *	   relation with AccessShareLock (so a DROP or ALTER of the table waits
 *	   for the compaction to end: its store stays where it is) and the store
 *	   through store.c, with the same checks of the store's identity and
 *	   layout as any backend.  A table gone by then ends the worker quietly.
 *	3. It flushes the memtable if it is full (a commit that found it full
 *	   claimed the flush with lsm_flush_claim and launched the worker for
 *	   it, so that no COMMIT waits for a flush), then calls
 *	   lsm_compact_try, which compacts until no level is due, or
 *	   returns at once if another process holds the store's LOCK.compact (a
 *	   worker launched by another backend, a backend compacting inline, an
 *	   lsm_compact call): that one compacts meanwhile.
 *	4. SIGTERM (die) makes the engine's interrupt callback (store.c) stop
 *	   the merge at its next poll; the step under way is abandoned and its
 *	   output files removed, and the worker exits through
 *	   CHECK_FOR_INTERRUPTS.  A worker killed outright (SIGKILL, a crash)
 *	   leaves output files that no manifest names: a compaction installs its
 *	   result with one manifest switch, so the store is as the last
 *	   installed step left it, and the next compaction removes the files.
 *
 * No storm of workers: a backend launches none for a store while the last
 * one it launched for it runs (GetBackgroundWorkerPid), nor unless it
 * claims the launch (lsm_compaction_claim): no process holds LOCK.compact,
 * and no other backend claimed a launch in the last
 * LSMFDW_LAUNCH_CLAIM_MS without a compaction having begun since.  (Before
 * the claim, every backend that committed in the few milliseconds a worker
 * takes to start launched one: 8 sessions writing filled
 * max_worker_processes, and the commits that found no free slot compacted
 * inline.)  Workers that start together anyway find the lock taken and
 * leave at once.  A worker looks again after it released the lock, so a
 * compaction that became due while it was finishing (the commit that made
 * it due saw the lock held) is its own.
 *
 * Fallbacks, in the committing backend: when no worker can be registered
 * (max_worker_processes exhausted, single-user mode) it compacts inline, as
 * the engine would, and says so in the log; and when level 0 holds
 * LSMFDW_L0_STALL times its trigger or more (writers outpace the worker,
 * and every level-0 table makes reads slower) it waits for LOCK.compact
 * and compacts itself: backpressure, as RocksDB's write stalls.
 * lsm_fdw.compaction = 'inline' compacts in the committing backend always
 * (without waiting for another compaction), 'off' never (lsm_compact
 * remains).
 *
 * src/fdw/compactor.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <signal.h>

#include "access/relation.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "lsm_fdw.h"

/* The library's name (MODULE_big in the Makefile), for bgw_library_name */
#define LSMFDW_LIBRARY		"fdw"

/* Level 0 at this many times its trigger: the committing backend compacts */
#define LSMFDW_L0_STALL		3

/*
 * How long a backend's claim to launch a worker stops other backends from
 * launching one, unless a compaction begins first: far longer than a
 * worker takes to start, short enough that one that never starts delays
 * the next only a little (the stall above bounds level 0 meanwhile).
 */
#define LSMFDW_LAUNCH_CLAIM_MS	5000

/* lsm_fdw.compaction */
typedef enum LsmFdwCompactionMode
{
	LSMFDW_COMPACTION_BACKGROUND,
	LSMFDW_COMPACTION_INLINE,
	LSMFDW_COMPACTION_OFF
} LsmFdwCompactionMode;

static const struct config_enum_entry compaction_options[] = {
	{"background", LSMFDW_COMPACTION_BACKGROUND, false},
	{"inline", LSMFDW_COMPACTION_INLINE, false},
	{"off", LSMFDW_COMPACTION_OFF, false},
	{NULL, 0, false}
};

static int	compaction_mode = LSMFDW_COMPACTION_BACKGROUND;

/*
 * lsm_fdw.test_kill_compacting (superuser, for the process tests): a
 * backend compacting inline kills itself with SIGKILL at this poll of the
 * engine's interrupt callback (one per thousand or so entries merged), as
 * a crash in the middle of the merge would; 0 never.  compacting_polls
 * counts the polls of the compaction under way, -1 when none is.
 */
static int	test_kill_compacting = 0;
static int	compacting_polls = -1;

/* The last worker this backend launched for a store, by relation OID */
typedef struct LaunchedWorker
{
	Oid			relid;			/* hash key */
	BackgroundWorkerHandle *handle; /* in TopMemoryContext, or NULL */
} LaunchedWorker;

static HTAB *launched = NULL;

PGDLLEXPORT void lsm_fdw_compactor_main(Datum main_arg);

static bool worker_running(Oid relid);
static void compact_inline(LsmFdwStore *s, const char *relname, bool wait);
static void flush_inline(LsmFdwStore *s, const char *relname);

/* Defines lsm_fdw.compaction (from _PG_init). */
void
LsmFdwInitCompaction(void)
{
	DefineCustomEnumVariable("lsm_fdw.compaction",
							 "Who compacts an lsm_fdw store after a commit calls for it.",
							 "background launches a background worker, so that the "
							 "commit does not wait for the compaction; inline compacts "
							 "in the committing session; off leaves it to lsm_compact.",
							 &compaction_mode,
							 LSMFDW_COMPACTION_BACKGROUND,
							 compaction_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("lsm_fdw.test_kill_compacting",
							"Kills a backend compacting inline at this poll of the compaction (tests only).",
							NULL,
							&test_kill_compacting,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);
}

/*
 * Called at each poll of the engine's interrupt callback (store.c): where
 * the process tests kill a backend in the middle of an inline compaction
 * (lsm_fdw.test_kill_compacting).
 */
void
LsmFdwCompactionPoll(void)
{
	if (compacting_polls >= 0 && test_kill_compacting > 0 &&
		++compacting_polls == test_kill_compacting)
		(void) kill(MyProcPid, SIGKILL);
}

/*
 * Called for each store a transaction wrote once its writes are in it (at
 * pre-commit, or at XACT_EVENT_COMMIT for a commit across stores, which
 * applies its prepared batches then) and the write lock is released:
 * flushes the memtable if the writes filled it (outside the write lock:
 * the other sessions keep committing meanwhile), then decides what
 * compaction the store needs.  Compacts here (inline mode, or level 0 far
 * over its trigger), or returns true if a background worker is to be
 * launched when the transaction has committed (LsmFdwLaunchCompactor).
 * Does not raise errors: the writes are committed, a failed flush or
 * compaction is retried after a later commit.
 */
bool
LsmFdwCompactionAfterCommit(LsmFdwStore *s, const char *relname)
{
	int			l0;

	/*
	 * A full memtable: in background mode a worker flushes it (and then
	 * compacts what that calls for), unless a flush is under way or claimed
	 * already; otherwise this session does, after its commit.
	 */
	if (s->db != NULL && lsm_flush_needed(s->db))
	{
		if (compaction_mode != LSMFDW_COMPACTION_BACKGROUND)
			flush_inline(s, relname);
		else if (lsm_flush_claim(s->db, LSMFDW_LAUNCH_CLAIM_MS))
			return true;
	}
	if (compaction_mode == LSMFDW_COMPACTION_OFF || s->db == NULL ||
		!lsm_compaction_needed(s->db))
		return false;
	if (compaction_mode == LSMFDW_COMPACTION_INLINE)
	{
		compact_inline(s, relname, false);
		return false;
	}
	l0 = lsm_level_files(s->db, 0);
	if (l0 >= LSMFDW_L0_STALL * s->l0_trigger)
	{
		ereport(DEBUG1,
				(errmsg_internal("lsm_fdw: level 0 of \"%s\" holds %d tables (trigger %d): compacting in the committing session",
								 relname, l0, s->l0_trigger)));
		compact_inline(s, relname, true);
		return false;
	}
	/* at most one worker at a time per store */
	if (worker_running(s->relid) ||
		!lsm_compaction_claim(s->db, LSMFDW_LAUNCH_CLAIM_MS))
		return false;
	return true;
}

/*
 * Launches a background worker that compacts the store of table relid, in
 * the current database; compacts inline instead if none can be registered.
 * Called once the transaction has committed (so that the worker sees the
 * table).  Does not raise errors.
 */
void
LsmFdwLaunchCompactor(LsmFdwStore *s, const char *relname)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	LaunchedWorker *w;
	MemoryContext old;
	bool		found;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "%s", LSMFDW_LIBRARY);
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "lsm_fdw_compactor_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "lsm_fdw compactor of \"%s\" (%u)",
			 relname, s->relid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "lsm_fdw compactor");
	worker.bgw_main_arg = ObjectIdGetDatum(s->relid);
	memcpy(worker.bgw_extra, &MyDatabaseId, sizeof(Oid));
	worker.bgw_notify_pid = 0;

	old = MemoryContextSwitchTo(TopMemoryContext);
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		MemoryContextSwitchTo(old);
		ereport(LOG,
				(errmsg("lsm_fdw: could not start a background worker to compact \"%s\": compacting in the committing session",
						relname),
				 errhint("Consider raising max_worker_processes.")));
		flush_inline(s, relname);
		compact_inline(s, relname, false);
		return;
	}
	MemoryContextSwitchTo(old);

	if (launched == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(LaunchedWorker);
		ctl.hcxt = TopMemoryContext;
		launched = hash_create("lsm_fdw compactors", 16, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	w = hash_search(launched, &s->relid, HASH_ENTER, &found);
	if (found && w->handle != NULL)
		pfree(w->handle);
	w->handle = handle;
	ereport(DEBUG1,
			(errmsg_internal("lsm_fdw: started a background worker to compact \"%s\"",
							 relname)));
}

/*
 * Whether the last worker this backend launched for table relid has not
 * ended yet (or not started); forgets it once it has.
 */
static bool
worker_running(Oid relid)
{
	LaunchedWorker *w;
	pid_t		pid;

	if (launched == NULL)
		return false;
	w = hash_search(launched, &relid, HASH_FIND, NULL);
	if (w == NULL || w->handle == NULL)
		return false;
	switch (GetBackgroundWorkerPid(w->handle, &pid))
	{
		case BGWH_STARTED:
		case BGWH_NOT_YET_STARTED:
			return true;
		default:
			pfree(w->handle);
			w->handle = NULL;
			return false;
	}
}

/*
 * Compacts s's store in this backend until nothing is due; with wait, after
 * waiting (bounded by the handle's lock timeout) for a compaction in another
 * process to end, else not if one runs.  A failure is only logged at DEBUG1:
 * the commit is done, and the next one tries again.
 */
static void
compact_inline(LsmFdwStore *s, const char *relname, bool wait)
{
	int			rc;

	compacting_polls = 0;
	rc = wait ? lsm_compact(s->db) : lsm_compact_try(s->db);
	compacting_polls = -1;
	if (rc != LSM_OK && rc != LSM_BUSY)
		ereport(DEBUG1,
				(errmsg_internal("lsm_fdw: compaction of \"%s\" failed: %s: %s",
								 relname, lsm_strerror(rc),
								 lsm_errmsg(s->db))));
}

/* Flushes the store's memtable in this process if it is full. */
static void
flush_inline(LsmFdwStore *s, const char *relname)
{
	if (lsm_flush_needed(s->db) && lsm_flush_try(s->db) != LSM_OK)
		ereport(DEBUG1,
				(errmsg_internal("lsm_fdw: flush of \"%s\" failed: %s",
								 relname, lsm_errmsg(s->db))));
}

/*
 * Main function of the compaction worker (see the file header): compacts
 * the store of the foreign table whose OID is main_arg, in the database
 * whose OID is in bgw_extra, until nothing is due, then exits.  Errors end
 * the worker (they go to the server log); it is never restarted.
 */
void
lsm_fdw_compactor_main(Datum main_arg)
{
	Oid			relid = DatumGetObjectId(main_arg);
	Oid			dboid;
	Relation	rel;
	LsmFdwTable *t;
	char	   *compacting,
			   *flushing;
	LsmFdwStore *s;
	int			rc = LSM_OK;

	memcpy(&dboid, MyBgworkerEntry->bgw_extra, sizeof(Oid));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL || !LsmFdwIsOurTable(relid))
	{
		/* dropped (or its OID reused) since the commit that launched us */
		if (rel != NULL)
			relation_close(rel, AccessShareLock);
		PopActiveSnapshot();
		CommitTransactionCommand();
		proc_exit(0);
	}
	t = LsmFdwGetTable(rel);
	compacting = psprintf("compacting \"%s\"", t->relname);
	flushing = psprintf("flushing \"%s\"", t->relname);
	pgstat_report_activity(STATE_RUNNING, compacting);
	s = LsmFdwOpenStore(t, false);
	LsmFdwPinStore(s);
	PG_TRY();
	{
		/*
		 * The flush a commit claimed for us first, then the compactions.
		 * Look again once LOCK.compact is released: a commit whose flush
		 * came after our last look, and which saw the lock held, left its
		 * compaction to us; and the memtable may have filled again (unless
		 * it is still full after our try: another process is flushing it).
		 */
		bool		again;

		do
		{
			bool		tried = lsm_flush_needed(s->db);

			if (tried)
			{
				pgstat_report_activity(STATE_RUNNING, flushing);
				if ((rc = lsm_flush_try(s->db)) != LSM_OK)
					LsmFdwReportError(rc, s->db, t->relname, "flush");
				pgstat_report_activity(STATE_RUNNING, compacting);
			}
			rc = lsm_compact_try(s->db);
			if (rc != LSM_OK && rc != LSM_BUSY)
				LsmFdwReportError(rc, s->db, t->relname, "compact");
			again = rc == LSM_OK && lsm_refresh(s->db) == LSM_OK &&
				(lsm_compaction_needed(s->db) ||
				 (!tried && lsm_flush_needed(s->db)));
		} while (again);
	}
	PG_FINALLY();
	{
		LsmFdwUnpinStore(s);
	}
	PG_END_TRY();
	ereport(DEBUG1,
			(errmsg_internal(rc == LSM_BUSY
							 ? "lsm_fdw: another process compacts \"%s\""
							 : "lsm_fdw: compacted \"%s\"",
							 t->relname)));
	relation_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}

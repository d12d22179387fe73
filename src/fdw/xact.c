/*-------------------------------------------------------------------------
 *
 * xact.c
 *		  The transaction's pending writes, and store directories to remove
 *		  when it ends.
 *
 * Writes to lsm_fdw tables are not sent to the engine as they happen: each
 * backend buffers its transaction's writes, per store, in a hash table keyed
 * by the encoded key, and at XACT_EVENT_PRE_COMMIT writes each store's net
 * changes as one lsm_batch, which the engine applies atomically.  An abort
 * simply forgets them; nothing reached the engine.
 *
 * Every write adds a version to its key: (command id, put or delete, row).
 * Versions are never overwritten, so a read can choose what it sees:
 *
 *	- a scan sees the newest version whose command id is below its
 *	  snapshot's curcid, i.e. the earlier statements of its transaction but
 *	  not its own writes (the Halloween problem: an UPDATE that moves a row
 *	  to a key ahead of the scan must not meet it again), as heap tuples do;
 *	- a uniqueness check sees the newest version of all.
 *
 * Savepoints: every version is also appended to an undo log.  While a
 * subtransaction is active, all writes belong to it or to its children, so
 * its writes form a suffix of the log: rolling back to a savepoint undoes
 * the log back to where the subtransaction began, unlinking each version
 * from its key.  The position is recorded lazily, by the first write of a
 * subtransaction (a mark), so that subtransactions that write nothing (every
 * PL/pgSQL exception block) cost nothing; a committed subtransaction's mark
 * passes to its parent.
 *
 * The net change of a key is its newest version, except that a key that was
 * absent from the store when the transaction first wrote it (an INSERT) and
 * ends deleted needs nothing written.
 *
 * The key's uniqueness: an INSERT checks the store when it runs, but another
 * backend may commit the same key before this transaction does.  So the
 * pre-commit of a store takes its write lock (lsm_lock, held until the
 * transaction's batch is appended, so commits to one store are serialized
 * between backends; durability is waited for after it is released: group
 * commit, lsm_write_wait), catches up with the store and
 * checks again that every key the transaction inserted is still absent;
 * if not, the commit fails with unique_violation, as a deferred unique
 * constraint would (an INSERT ... ON CONFLICT DO NOTHING drops its row
 * instead).  The check is skipped when nothing was committed to the store
 * since the transaction's first write to it.
 *
 * Updates and deletes: there are no row locks, so the first of two
 * concurrent transactions to commit a change of a row wins, and the other
 * fails at commit with serialization_failure, as under REPEATABLE READ.
 * The first write of a key by an UPDATE or DELETE records the version (a
 * 64-bit hash of the bytes) of the committed row that the statement read:
 * the statement's scan noted it when it read the row by key
 * (LsmFdwNoteRead), or it reads the row again through the store's handle,
 * which is not refreshed while an UPDATE or DELETE of the store runs
 * (store.c), so it sees what the statement's scan saw.  The pre-commit,
 * under the commit lock, checks that the store still holds a row of that
 * version, unless nothing was committed to the store since the
 * transaction's first write to it (as for inserted keys).  A key the
 * transaction wrote before needs no version (its first write recorded what
 * the check needs, or it was inserted).  No update is ever lost.
 *
 * Every store the transaction wrote is locked and checked before any is
 * written, so a failed check leaves all of them untouched.
 *
 * Compaction: once the locks are released and the writes durable, each
 * store written is asked whether it needs a compaction (compactor.c); a
 * background worker for it is launched only at XACT_EVENT_COMMIT, when the
 * table is visible to the worker's transaction (it may be new).
 *
 * Store directories scheduled for removal (the store of a table dropped by
 * this transaction, or created by it for a table that the transaction
 * created: ddl.c, store.c) follow the subtransactions as well: each entry
 * names the subtransaction whose commit (a DROP) or abort (a CREATE) it
 * waits for.
 *
 * Durability follows synchronous_commit: off writes each store's batch to
 * its log without syncing it (a crash of the server process loses nothing,
 * a crash of the machine may lose the last commits, as for PostgreSQL's
 * own WAL); any other value syncs it (unless fsync = off).
 *
 * Bounded memory: when the pending writes in memory exceed
 * lsm_fdw.pending_memory, net changes move out of memory into stages
 * (lsm_stage_open: private sorted buffers that spill to sorted runs on
 * disk), only at the top level (no subtransaction has written, so nothing
 * moved can have to be undone alone).  A stage holds no command ids, and
 * scans hold pointers into the versions in memory, so what may move where
 * depends on the open scans of the store (LsmFdwScanBegin):
 *
 *	- with no scan open, to the stage: the keys whose newest version an
 *	  earlier command wrote, and the keys simply inserted (one put, absent
 *	  from the store before), as every later reader sees them;
 *	- while every open scan reads with the running command's id (its own
 *	  UPDATE or DELETE scan), to the command stage: the keys that only the
 *	  running command wrote.  No scan points to their versions and no reader
 *	  of the command sees them; readers of later commands do: lookups
 *	  consult the command stage, and a later command's scan, write or the
 *	  commit first folds it into the stage (once no scan of the command or an
 *	  earlier one is open).  A statement nested in the command (a function)
 *	  that scans the table meanwhile gets an error instead.
 *
 * A key is moved only as a put the transaction inserted or a change of a
 * committed row; the version of that row goes to a third stage, the bases,
 * which the commit checks like the versions in memory.  A key the
 * transaction inserted and then deleted stays in memory (the commit decides
 * what it leaves).  Reads consult memory, then the stages, then the store;
 * a key found in a stage is one the transaction wrote, inserted unless the
 * bases hold it.  Once a store has a stage, its new keys go there directly
 * when no scan is open (a bulk load passes through memory only until the
 * first spill).  At commit the rest of the writes joins the stage and
 * lsm_stage_commit installs it all atomically.  So a 2M-row UPDATE needs
 * about pending_memory plus the stages' buffers; writes inside a savepoint,
 * and an UPDATE run while a cursor of an earlier command reads the table,
 * stay in memory.
 *
 * Atomic commits across stores, and two-phase commit: a transaction that
 * wrote several stores, or one and PostgreSQL's own tables (it has a
 * transaction id), prepares each store's writes under its
 * FullTransactionId (lsm_prepare, or lsm_stage_prepare for a stage:
 * durable, invisible, conflicts decided) at pre-commit, and resolves them
 * at XACT_EVENT_COMMIT or abort, once PostgreSQL's commit record decided;
 * PREPARE TRANSACTION prepares them the same way and leaves them to
 * whoever reads the store after COMMIT PREPARED or ROLLBACK PREPARED
 * (LsmFdwResolvePrepared).  docs/architecture.md, "Prepared batches",
 * has the protocol.
 *
 * src/fdw/xact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <signal.h>

#include "access/table.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "replication/message.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "lsm_fdw.h"

struct PendingKey;
struct PendingStore;

/* One write of a key; versions of a key are linked newest first */
typedef struct PendingVersion
{
	struct PendingVersion *older;
	struct PendingKey *key;
	struct PendingStore *store;
	CommandId	cid;
	bool		is_delete;
	const char *val;			/* the encoded row, unless is_delete */
	size_t		vlen;
} PendingVersion;

/* A key written by the transaction */
typedef struct PendingKey
{
	LsmFdwKeyRef ref;			/* hash key (must be first); data copied */
	PendingVersion *newest;
	LsmFdwBase	base;			/* the store's row at the first write */
	uint64		base_version;	/* LSMFDW_BASE_VERSION: its version */
	uint64		base_seq;		/* the handle's view when base was read
								 * (lsm_last_sequence), or one before */
	bool		staged;			/* the stage holds an older put of it */
} PendingKey;

/* The pending writes of one store */
typedef struct PendingStore
{
	Oid			relid;			/* hash key */
	LsmFdwStore *store;			/* pinned until the transaction ends */
	char	   *relname;
	HTAB	   *keys;			/* PendingKey */
	uint64		first_seq;		/* the store's last sequence number when
								 * the transaction first wrote to it */
	lsm_stage  *stage;			/* writes moved out of memory, or NULL */
	lsm_stage  *cmd_stage;		/* writes of command cmd_cid alone, moved
								 * out of memory while it ran, or NULL */
	CommandId	cmd_cid;
	lsm_stage  *bases;			/* key -> version of the committed row, for
								 * the keys in a stage whose first write was
								 * an UPDATE or DELETE; or NULL */
	bool		launch_compactor;	/* written, and calls for a background
									 * compaction once committed */
	bool		prepared;		/* its batch is prepared under xact_owner */
	lsm_batch  *batch;			/* a one-phase commit's batch, built and
								 * located before the commit lock, or NULL */
} PendingStore;

/* Where the first write of a subtransaction went in the undo log */
typedef struct SavepointMark
{
	SubTransactionId subid;
	int			undo_pos;
} SavepointMark;

/* A store directory to remove when a (sub)transaction commits or aborts */
typedef struct DirRemoval
{
	Oid			relid;
	char	   *path;
	SubTransactionId subid;
	bool		at_commit;		/* DROP: on commit; else CREATE: on abort */
} DirRemoval;

/*
 * All state lives in xact_cxt, a child of TopTransactionContext created on
 * first use, and goes with the transaction.
 */
static MemoryContext xact_cxt = NULL;
static HTAB *pending_stores = NULL; /* PendingStore by relid */
static PendingStore *last_store = NULL; /* find_store's last answer */
static PendingVersion **undo_log = NULL;
static int	undo_len = 0;
static int	undo_size = 0;
static List *marks = NIL;		/* SavepointMark, innermost last */
static List *removals = NIL;	/* DirRemoval */
static Size pending_bytes = 0;	/* memory of the pending versions */
static Size spill_floor = 0;	/* no spill attempt below this */
static uint64 xact_owner = 0;	/* the owner of the prepared batches */

/* lsm_fdw.pending_memory, in kB */
static int	pending_memory_kb = 65536;

/*
 * lsm_fdw.test_kill_at (superuser, for the process tests): the backend
 * kills itself with SIGKILL at this step of its next commit across stores
 * (kill_point), as a crash there would; 0 never.
 */
static int	test_kill_at = 0;
static int	kill_steps = 0;

/* lsm_fdw.atomic_commit: commits across stores are all or nothing */
static bool atomic_commit = true;

/* What a pending version costs in memory beyond its key and row */
#define VERSION_OVERHEAD	(sizeof(PendingVersion) + sizeof(PendingKey) + \
							 sizeof(PendingVersion *) + 64)


static void ensure_xact_state(void);
static PendingStore *get_pending_store(LsmFdwStore *s, const char *relname);
static PendingVersion *visible_version(PendingKey *pk, CommandId curcid);
static PendingStore *find_store(Oid relid);
static PendingKey *find_key(Oid relid, const char *key, size_t klen);
static int	pending_row_cmp(const void *a, const void *b);
static void record_mark(void);
static void undo_to(int pos);
static void lock_and_check_store(PendingStore *ps);
static void wait_stores(PendingStore **order, int n);
static void write_store(PendingStore *ps);
static lsm_batch *build_batch(PendingStore *ps, bool conditions);
static int	key_condition(PendingKey *pk, uint64 *seq, uint64 *hash);
static void check_prepared(PendingStore *ps);
static void prepare_stores(PendingStore **order, int n);
static void check_prepared_key(PendingStore *ps, const char *key,
							   size_t klen, bool is_delete);
static void resolve_stores(bool commit);
static PendingStore **stores_in_order(int *n);
static bool needs_two_phase(int n);
static void check_key(PendingStore *ps, const char *key, size_t klen,
					  int cond, uint64 seq, uint64 hash, bool *skip);
static void report_conflict(PendingStore *ps, const lsm_conflict *c)
			pg_attribute_noreturn();
static uint64 committed_version(PendingStore *ps, const char *key,
								size_t klen);
static void report_concurrent_change(PendingStore *ps, const char *key,
									 size_t klen, bool present)
			pg_attribute_noreturn();
static void report_duplicate(PendingStore *ps, const char *key, size_t klen)
			pg_attribute_noreturn();
static void report_prepared(PendingStore *ps, const char *key, size_t klen,
							uint64 owner)
			pg_attribute_noreturn();
static char *describe_key(PendingStore *ps, const char *key, size_t klen);
static void maybe_spill(CommandId cid);
static void spill_store(PendingStore *ps, CommandId cid);
static void open_stage(PendingStore *ps, lsm_stage **stage, Size share);
static bool spillable(PendingKey *pk);
static void spill_key(PendingStore *ps, lsm_stage *stage, PendingKey *pk);
static void forget_key(PendingStore *ps, PendingKey *pk);
static void spill_older(PendingStore *ps, CommandId cid);
static void spill_command(PendingStore *ps, CommandId cid);
static bool fold_command(PendingStore *ps, bool force);
static bool command_visible(PendingStore *ps, CommandId curcid);
static int	stage_read(PendingStore *ps, lsm_stage *stage, const char *key,
					   size_t klen, void **val, size_t *vlen);
static bool staged_base(PendingStore *ps, const char *key, size_t klen,
						uint64 *version);
static void check_staged(PendingStore *ps);
static void fold_into_stage(PendingStore *ps);
static bool store_has_writes(PendingStore *ps);
static bool has_writes(void);
static int	pending_store_cmp(const void *a, const void *b);
static int	pending_key_cmp(const void *a, const void *b);
static void remove_dirs(bool commit, SubTransactionId subid);
static void end_xact(bool commit);
static void xact_callback(XactEvent event, void *arg);
static void subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg);

/* Module initialisation (from _PG_init): registers the callbacks. */
void
LsmFdwInitXact(void)
{
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
	DefineCustomIntVariable("lsm_fdw.pending_memory",
							"Memory for a transaction's pending writes to lsm_fdw tables before inserted rows move to disk.",
							"Above it, rows the transaction inserted are staged in sorted runs on disk until commit.",
							&pending_memory_kb,
							65536, 1024, INT_MAX,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("lsm_fdw.atomic_commit",
							 "Commits a transaction's writes to several lsm_fdw tables, or to lsm_fdw and native tables, all or nothing.",
							 "Off: each table's writes are committed one after another, faster, but a crash or an I/O error in the middle of a commit can leave some of them committed.",
							 &atomic_commit,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("lsm_fdw.test_kill_at",
							"Kills the backend at this step of a commit across stores (tests only).",
							NULL,
							&test_kill_at,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL,
							NULL, NULL, NULL);
}

/*
 * A step of a commit across stores where the process tests make the
 * backend die (lsm_fdw.test_kill_at): after each store's prepare, after
 * they are durable, and before and after each store's resolve.
 */
static void
kill_point(void)
{
	if (test_kill_at > 0 && ++kill_steps == test_kill_at)
		(void) kill(MyProcPid, SIGKILL);
}

/*
 * Adds a write of key to the pending writes of store s (table relname): a
 * delete, or a put of the encoded row val.  cid is the writing command's id;
 * base says what the store holds, should this be the transaction's first
 * write of the key: nothing (an INSERT, which checked), the row that the
 * writing statement read (an UPDATE or DELETE: its version is read now, see
 * the file header), or unknown (TRUNCATE).  Copies key and val.
 */
void
LsmFdwPendingWrite(LsmFdwStore *s, const char *relname,
				   const char *key, size_t klen,
				   const char *val, size_t vlen, bool is_delete,
				   LsmFdwBase base, CommandId cid)
{
	MemoryContext oldcxt;
	PendingStore *ps;
	PendingKey *pk;
	PendingVersion *v;
	LsmFdwKeyRef ref;
	bool		found;
	bool		staged = false;
	uint64		version = 0;

	ensure_xact_state();
	oldcxt = MemoryContextSwitchTo(xact_cxt);
	ps = get_pending_store(s, relname);

	/* an earlier command's writes moved out of memory join the stage */
	if (ps->cmd_stage != NULL && cid > ps->cmd_cid)
		(void) fold_command(ps, false);

	/*
	 * Once the store has a stage, a new key inserted where a spill could
	 * move it goes there at once, without passing through memory.
	 */
	ref.data = key;
	ref.len = klen;
	if (ps->stage != NULL && ps->cmd_stage == NULL && !is_delete &&
		base == LSMFDW_BASE_ABSENT && marks == NIL && s->scans == 0 &&
		GetCurrentSubTransactionId() == TopSubTransactionId &&
		(hash_get_num_entries(ps->keys) == 0 ||
		 hash_search(ps->keys, &ref, HASH_FIND, NULL) == NULL))
	{
		int			rc = lsm_stage_put(ps->stage, key, klen, val, vlen);

		MemoryContextSwitchTo(oldcxt);
		if (rc != LSM_OK)
			LsmFdwReportError(rc, s->db, relname, "stage writes to");
		return;
	}

	/* a new key: what the store holds, before anything changes */
	pk = hash_get_num_entries(ps->keys) == 0 ? NULL
		: hash_search(ps->keys, &ref, HASH_FIND, NULL);
	if (pk == NULL)
	{
		/*
		 * A staged key was written before: inserted, or changed and its
		 * committed row's version is in bases.
		 */
		staged = (ps->cmd_stage != NULL &&
				  stage_read(ps, ps->cmd_stage, key, klen, NULL,
							 NULL) != LSM_NOTFOUND) ||
			(ps->stage != NULL &&
			 stage_read(ps, ps->stage, key, klen, NULL,
						NULL) != LSM_NOTFOUND);
		if (staged)
			base = staged_base(ps, key, klen, &version)
				? LSMFDW_BASE_VERSION : LSMFDW_BASE_ABSENT;
		else if (base == LSMFDW_BASE_VERSION)
			version = committed_version(ps, key, klen);
	}

	/* room in the undo log first, so that no failure leaves a half write */
	if (undo_len == undo_size)
	{
		undo_size = undo_size == 0 ? 64 : undo_size * 2;
		undo_log = undo_log == NULL
			? palloc(sizeof(PendingVersion *) * undo_size)
			: repalloc(undo_log, sizeof(PendingVersion *) * undo_size);
	}
	record_mark();

	v = palloc(sizeof(PendingVersion));
	v->store = ps;
	v->cid = cid;
	v->is_delete = is_delete;
	v->val = NULL;
	v->vlen = 0;
	if (!is_delete)
	{
		char	   *copy = palloc(vlen + 1);

		memcpy(copy, val, vlen);
		copy[vlen] = '\0';
		v->val = copy;
		v->vlen = vlen;
	}

	if (pk == NULL)
	{
		char	   *copy = palloc(klen);

		/* the entry keeps the copy, never the caller's transient bytes */
		memcpy(copy, key, klen);
		ref.data = copy;
		pk = hash_search(ps->keys, &ref, HASH_ENTER, &found);
		Assert(!found);
		pk->newest = NULL;
		pk->base = base;
		pk->base_version = version;
		/* a staged key's base was read at an earlier write, since first_seq */
		pk->base_seq = staged ? ps->first_seq : lsm_last_sequence(s->db);
		pk->staged = staged;
		pending_bytes += klen;
	}
	v->key = pk;
	v->older = pk->newest;
	pk->newest = v;
	undo_log[undo_len++] = v;
	pending_bytes += v->vlen + VERSION_OVERHEAD;

	MemoryContextSwitchTo(oldcxt);
	maybe_spill(cid);
}

/*
 * TRUNCATE of store s (table relname) in constant time and memory, if it
 * can be: at the top level of the transaction, with no savepoint (whose
 * rollback would have to bring the rows back) and no scan of the table
 * open.  Then the transaction's pending writes to s are dropped and its
 * stage truncated (lsm_stage_truncate): reads see no committed row, and
 * the commit replaces the store's contents with what the transaction
 * writes afterwards.  Returns false, having done nothing, otherwise.
 */
bool
LsmFdwPendingTruncate(LsmFdwStore *s, const char *relname)
{
	MemoryContext oldcxt;
	HASH_SEQ_STATUS status;
	PendingStore *ps;
	PendingKey *pk;
	int			rc;

	if (marks != NIL || s->scans > 0 ||
		GetCurrentSubTransactionId() != TopSubTransactionId)
		return false;
	ensure_xact_state();
	oldcxt = MemoryContextSwitchTo(xact_cxt);
	ps = get_pending_store(s, relname);
	open_stage(ps, &ps->stage, 4);
	MemoryContextSwitchTo(oldcxt);

	/* what the transaction wrote before goes, staged or in memory */
	if (ps->cmd_stage != NULL)
		lsm_stage_abort(ps->cmd_stage);
	ps->cmd_stage = NULL;
	if (ps->bases != NULL)
		lsm_stage_abort(ps->bases);
	ps->bases = NULL;

	/* with no savepoint nothing in memory will be undone alone */
	undo_len = 0;
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
		forget_key(ps, pk);
	if ((rc = lsm_stage_truncate(ps->stage)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "truncate");
	return true;
}

/* Whether the transaction truncated relation relid (LsmFdwPendingTruncate). */
bool
LsmFdwPendingTruncated(Oid relid)
{
	PendingStore *ps;

	return (ps = find_store(relid)) != NULL &&
		lsm_stage_truncated(ps->stage);
}

/*
 * Whether the transaction has written to relation relid (pending writes in
 * memory or a stage, or a TRUNCATE), which only this backend can read.
 */
bool
LsmFdwPendingAny(Oid relid)
{
	return find_store(relid) != NULL;
}

/*
 * Prepares a bulk load (COPY, or an INSERT past lsm_fdw.bulk_insert_rows
 * rows) by command cid into store s: opens its stage at once, so that the
 * rows it inserts go to the stage's sorted runs as they come
 * (PendingWrite says when they can), rather than into memory first and
 * then through a spill in hash order.  What can leave memory goes to the
 * stage now, as a spill would move it (the rows the INSERT wrote so far),
 * so that the new keys are not looked up in memory first.
 */
void
LsmFdwPendingBulkLoad(LsmFdwStore *s, const char *relname, CommandId cid)
{
	MemoryContext oldcxt;
	PendingStore *ps;

	ensure_xact_state();
	oldcxt = MemoryContextSwitchTo(xact_cxt);
	ps = get_pending_store(s, relname);
	open_stage(ps, &ps->stage, 4);
	MemoryContextSwitchTo(oldcxt);
	if (marks == NIL && GetCurrentSubTransactionId() == TopSubTransactionId)
	{
		/* with no subtransaction, nothing in memory will be undone alone */
		undo_len = 0;
		spill_store(ps, cid);
	}
}

/*
 * Looks key up in the pending writes of relation relid, as a reader with
 * command id curcid sees them (InvalidCommandId: the newest version of
 * all).  Returns false if the transaction has no such version; else true,
 * with the version in *out (pointing into memory that lasts until the end
 * of the transaction, or palloc'd) and its command id in *cid (if cid is
 * not NULL; InvalidCommandId for a write of an earlier command that was
 * moved to the stage).
 */
bool
LsmFdwPendingLookup(Oid relid, const char *key, size_t klen,
					CommandId curcid, LsmFdwPendingRow *out, CommandId *cid)
{
	PendingKey *pk = find_key(relid, key, klen);
	PendingVersion *v;
	PendingStore *ps;
	char	   *val = NULL;
	size_t		vlen = 0;
	int			rc = LSM_NOTFOUND;
	CommandId	vcid = InvalidCommandId;
	char	   *copy;

	if (pk != NULL && (v = visible_version(pk, curcid)) != NULL)
	{
		out->key = pk->ref.data;
		out->klen = pk->ref.len;
		out->is_delete = v->is_delete;
		out->val = v->val;
		out->vlen = v->vlen;
		if (cid != NULL)
			*cid = v->cid;
		return true;
	}

	/*
	 * The stages: the writes of the command moved out of memory while it
	 * ran, which only later commands see, then older commands' writes.
	 */
	if ((ps = find_store(relid)) == NULL)
		return false;
	if (command_visible(ps, curcid))
	{
		rc = stage_read(ps, ps->cmd_stage, key, klen, (void **) &val, &vlen);
		vcid = ps->cmd_cid;
	}
	if (rc == LSM_NOTFOUND && ps->stage != NULL)
	{
		rc = stage_read(ps, ps->stage, key, klen, (void **) &val, &vlen);
		vcid = InvalidCommandId;
	}
	if (rc == LSM_NOTFOUND)
		return false;
	copy = palloc(klen);
	memcpy(copy, key, klen);
	out->key = copy;
	out->klen = klen;
	out->is_delete = rc == LSM_DELETED;
	out->val = val;
	out->vlen = vlen;
	if (cid != NULL)
		*cid = vcid;
	return true;
}

/*
 * Returns the pending writes of relation relid that a reader with command id
 * curcid sees (InvalidCommandId: the newest of each key), one per key, in
 * key order, as a palloc'd array of *n entries (NULL if none).  The entries
 * point into memory that lasts until the end of the transaction.
 */
LsmFdwPendingRow *
LsmFdwPendingVisible(Oid relid, CommandId curcid, int *n)
{
	PendingStore *ps;
	LsmFdwPendingRow *rows;
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	int			count = 0;

	*n = 0;
	if ((ps = find_store(relid)) == NULL)
		return NULL;
	rows = palloc(sizeof(LsmFdwPendingRow) *
				  Max(hash_get_num_entries(ps->keys), 1));
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v = visible_version(pk, curcid);

		if (v == NULL)
			continue;
		rows[count].key = pk->ref.data;
		rows[count].klen = pk->ref.len;
		rows[count].is_delete = v->is_delete;
		rows[count].val = v->val;
		rows[count].vlen = v->vlen;
		count++;
	}
	if (count > 1)
		qsort(rows, count, sizeof(LsmFdwPendingRow), pending_row_cmp);
	*n = count;
	return rows;
}

/*
 * Whether the pending writes in memory hold a version of key (in relation
 * relid) that a reader with command id curcid sees; the stage is not
 * consulted.
 */
bool
LsmFdwPendingInMemory(Oid relid, const char *key, size_t klen,
					  CommandId curcid)
{
	PendingKey *pk = find_key(relid, key, klen);

	return pk != NULL && visible_version(pk, curcid) != NULL;
}

/*
 * A snapshot iterator over the stage of relation relid (deletes shown), as
 * a reader with command id curcid sees it, not positioned, or NULL if it
 * has none.  The caller closes it.  Raises an error if the reader should
 * see writes of a command still running that were moved out of memory
 * (a function called by a statement that changed the table reads it).
 */
lsm_iter *
LsmFdwPendingStageIter(Oid relid, CommandId curcid)
{
	PendingStore *ps;
	lsm_iter   *it;
	int			rc;

	if ((ps = find_store(relid)) == NULL)
		return NULL;
	if (command_visible(ps, curcid) && !fold_command(ps, false))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot read foreign table \"%s\" while a statement that changed it is still running",
						ps->relname),
				 errdetail("The statement's changes exceeded lsm_fdw.pending_memory and moved to disk, where a nested statement cannot read them yet."),
				 errhint("Raise lsm_fdw.pending_memory, or read the table after the statement.")));
	if (ps->stage == NULL)
		return NULL;
	if ((rc = lsm_stage_iter_open(ps->stage, &it)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	return it;
}

/*
 * Returns whether relation relid is being dropped by this transaction (its
 * store is to be removed at commit): its pending writes need not be written.
 */
bool
LsmFdwPendingDropped(Oid relid)
{
	ListCell   *lc;

	foreach(lc, removals)
	{
		DirRemoval *r = (DirRemoval *) lfirst(lc);

		if (r->relid == relid && r->at_commit)
			return true;
	}
	return false;
}

/*
 * Schedules the removal of the store directory path of relation relid: when
 * subtransaction subid (or the parent it passes to) commits, if at_commit
 * (DROP), else when it aborts (a store created for a table created by it).
 */
void
LsmFdwXactRemoveDirLater(Oid relid, const char *path, SubTransactionId subid,
						 bool at_commit)
{
	MemoryContext oldcxt;
	DirRemoval *r;

	ensure_xact_state();
	oldcxt = MemoryContextSwitchTo(xact_cxt);
	r = palloc(sizeof(DirRemoval));
	r->relid = relid;
	r->path = pstrdup(path);
	r->subid = subid;
	r->at_commit = at_commit;
	removals = lappend(removals, r);
	MemoryContextSwitchTo(oldcxt);
}

/* Creates the transaction's memory context if needed. */
static void
ensure_xact_state(void)
{
	if (xact_cxt == NULL)
		xact_cxt = AllocSetContextCreate(TopTransactionContext,
										 "lsm_fdw transaction",
										 ALLOCSET_DEFAULT_SIZES);
}

/*
 * Returns the pending writes of store s, creating them (and pinning s) on
 * first use.  REQUIRES: CurrentMemoryContext is xact_cxt.
 */
static PendingStore *
get_pending_store(LsmFdwStore *s, const char *relname)
{
	PendingStore *ps;
	bool		found;

	if (pending_stores == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(PendingStore);
		ctl.hcxt = xact_cxt;
		pending_stores = hash_create("lsm_fdw pending stores", 8, &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	ps = find_store(s->relid);
	if (ps == NULL)
	{
		HTAB	   *keys;
		char	   *name = pstrdup(relname);

		keys = LsmFdwKeyTableCreate("lsm_fdw pending keys",
									sizeof(PendingKey), xact_cxt);
		/* nothing can fail between the entry and its pin */
		ps = hash_search(pending_stores, &s->relid, HASH_ENTER, &found);
		ps->relname = name;
		ps->keys = keys;
		ps->store = s;
		ps->stage = NULL;
		ps->cmd_stage = NULL;
		ps->cmd_cid = InvalidCommandId;
		ps->bases = NULL;
		ps->launch_compactor = false;
		ps->prepared = false;
		ps->batch = NULL;
		LsmFdwPinStore(s);
		ps->first_seq = lsm_last_sequence(s->db);
	}
	return ps;
}

/*
 * Returns the newest version of pk that a reader with command id curcid sees
 * (InvalidCommandId: the newest of all), or NULL.
 */
static PendingVersion *
visible_version(PendingKey *pk, CommandId curcid)
{
	PendingVersion *v;

	for (v = pk->newest; v != NULL; v = v->older)
	{
		if (curcid == InvalidCommandId || v->cid < curcid)
			return v;
	}
	return NULL;
}

/* Returns the pending key of relation relid, or NULL. */
/*
 * The pending writes of relation relid, or NULL.  Every row of a statement
 * asks for the same table's, so the last answer is kept (entries of
 * pending_stores never move, and none is removed before the end of the
 * transaction).
 */
static PendingStore *
find_store(Oid relid)
{
	if (last_store != NULL && last_store->relid == relid)
		return last_store;
	if (pending_stores == NULL)
		return NULL;
	last_store = hash_search(pending_stores, &relid, HASH_FIND, NULL);
	return last_store;
}

static PendingKey *
find_key(Oid relid, const char *key, size_t klen)
{
	PendingStore *ps;
	LsmFdwKeyRef ref;

	if ((ps = find_store(relid)) == NULL)
		return NULL;
	if (hash_get_num_entries(ps->keys) == 0)
		return NULL;			/* e.g. every key spilled to the stage */
	ref.data = key;
	ref.len = klen;
	return hash_search(ps->keys, &ref, HASH_FIND, NULL);
}

/*
 * qsort comparator of pending rows: the engine's key order (memcmp, the
 * shorter first on a tie).
 */
static int
pending_row_cmp(const void *a, const void *b)
{
	const LsmFdwPendingRow *x = (const LsmFdwPendingRow *) a;
	const LsmFdwPendingRow *y = (const LsmFdwPendingRow *) b;

	return LsmFdwKeyCmp(x->key, x->klen, y->key, y->klen);
}

/*
 * Records where the current subtransaction's writes begin in the undo log,
 * unless its mark exists already (or it is the top level, whose abort
 * forgets everything anyway).  REQUIRES: CurrentMemoryContext is xact_cxt.
 */
static void
record_mark(void)
{
	SubTransactionId subid = GetCurrentSubTransactionId();
	SavepointMark *m;

	if (subid == TopSubTransactionId)
		return;
	if (marks != NIL && ((SavepointMark *) llast(marks))->subid == subid)
		return;
	m = palloc(sizeof(SavepointMark));
	m->subid = subid;
	m->undo_pos = undo_len;
	marks = lappend(marks, m);
}

/* Undoes the writes from position pos of the undo log onwards. */
static void
undo_to(int pos)
{
	while (undo_len > pos)
	{
		PendingVersion *v = undo_log[--undo_len];
		PendingKey *pk = v->key;

		Assert(pk->newest == v);
		pk->newest = v->older;
		pending_bytes -= Min(pending_bytes, v->vlen + VERSION_OVERHEAD);
		if (pk->newest == NULL)
		{
			/* the key copy stays allocated: scans may point to it */
			(void) hash_search(v->store->keys, &pk->ref, HASH_REMOVE, NULL);
		}
	}
}

/*
 * Opens *stage (one of ps's stages) if it is not open, with a buffer of
 * 1/share of lsm_fdw.pending_memory, up to 32 MB.
 */
static void
open_stage(PendingStore *ps, lsm_stage **stage, Size share)
{
	size_t		buffer = Min((size_t) pending_memory_kb * 1024 / share,
							 (size_t) 32 * 1024 * 1024);
	int			rc;

	if (*stage != NULL)
		return;
	if ((rc = lsm_stage_open(ps->store->db, buffer, stage)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "stage writes to");
}

/*
 * Takes the commit lock of ps's store, its write lock (held until its
 * write is appended), which catches up with it, and checks the
 * transaction's writes against what other transactions committed
 * meanwhile: a key it inserted must still be absent (else unique_violation,
 * or the write is dropped for ON CONFLICT DO NOTHING), a row it updated or
 * deleted must still have the version it read (else serialization_failure),
 * and no prepared write may hold a key it writes.  For the commits whose
 * checks the engine cannot make as it writes one batch (build_batch): a
 * stage, several stores, a prepare.
 */
static void
lock_and_check_store(PendingStore *ps)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	bool		changed;
	int			rc;

	/*
	 * The store's write lock, held until the write is appended: commits
	 * appended before ours count, durable yet or not.  (A flock, which a
	 * process that runs takes at once when it is free, rather than a
	 * heavyweight lock, which is handed to a waiter that must first be
	 * scheduled: with more sessions than cores that stalls every commit.)
	 * A TRUNCATE's commit drops every table, so it locks out compactions.
	 */
	if ((rc = lsm_lock_batch(ps->store->db,
							 lsm_stage_truncated(ps->stage) ? LSM_LOCK_COMPACTION : 0,
							 ps->batch)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "lock");
	check_prepared(ps);

	/*
	 * Nothing committed since the transaction's first write: every version
	 * it read (at that view, or a later one equal to it) is still the
	 * store's, and every key it inserted still absent.  No committed row
	 * survives a TRUNCATE, which locked out other writers.
	 */
	changed = lsm_last_sequence(ps->store->db) != ps->first_seq &&
		!lsm_stage_truncated(ps->stage);
	if (!changed)
		return;
	if (ps->stage != NULL)
		check_staged(ps);

	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		uint64		seq,
					hash;
		int			cond = key_condition(pk, &seq, &hash);
		bool		skip = false;

		if (cond == 0)
			continue;
		CHECK_FOR_INTERRUPTS();
		/* an error ends the scan with the transaction */
		check_key(ps, pk->ref.data, pk->ref.len, cond, seq, hash, &skip);
		if (skip)
		{
			/* ON CONFLICT DO NOTHING: the other transaction's row stays */
			pk->newest->is_delete = true;
			lsm_batch_free(ps->batch);	/* built with the row */
			ps->batch = NULL;
		}
	}
}

/*
 * The condition on the store's row of pk under which the transaction may
 * write it (an LSM_IF_* of lsm.h, with the sequence it read at and the
 * version it read), or 0: none (a TRUNCATE's write; a key inserted, then
 * deleted, which is not written).
 */
static int
key_condition(PendingKey *pk, uint64 *seq, uint64 *hash)
{
	*seq = pk->base_seq;
	*hash = pk->base_version;
	switch (pk->base)
	{
		case LSMFDW_BASE_VERSION:
			return LSM_IF_VALUE;
		case LSMFDW_BASE_ABSENT:
		case LSMFDW_BASE_ABSENT_UPSERT:
			return pk->newest->is_delete ? 0 : LSM_IF_ABSENT;
		case LSMFDW_BASE_ABSENT_SKIP:
			return pk->newest->is_delete ? 0 : LSM_IF_ABSENT_SKIP;
		case LSMFDW_BASE_ANY:
			break;
	}
	return 0;
}

/*
 * Checks condition cond of key against ps's store, as its handle sees it
 * (exact under the commit lock); raises the error of a failed one, except
 * that a failed LSM_IF_ABSENT_SKIP sets *skip.
 */
static void
check_key(PendingStore *ps, const char *key, size_t klen, int cond,
		  uint64 seq, uint64 hash, bool *skip)
{
	lsm_conflict c;
	int			present;
	int			rc;

	rc = lsm_check(ps->store->db, key, klen,
				   cond == LSM_IF_VALUE ? LSM_IF_VALUE : LSM_IF_ABSENT,
				   seq, hash, &present);
	if (rc == LSM_OK)
		return;
	if (rc != LSM_CONFLICT)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	if (cond == LSM_IF_ABSENT_SKIP)
	{
		*skip = true;
		return;
	}
	memset(&c, 0, sizeof(c));
	c.key = key;
	c.klen = klen;
	c.cond = cond;
	c.present = present;
	report_conflict(ps, &c);
}

/*
 * Raises the error of a failed condition of a write to ps's store: another
 * transaction's commit or prepared write came first.
 */
static void
report_conflict(PendingStore *ps, const lsm_conflict *c)
{
	PendingKey *pk;

	if (c->cond == 0)
		report_prepared(ps, c->key, c->klen, c->owner);
	if (c->cond == LSM_IF_VALUE)
		report_concurrent_change(ps, c->key, c->klen, c->present);
	if ((pk = find_key(ps->relid, c->key, c->klen)) != NULL &&
		pk->base == LSMFDW_BASE_ABSENT_UPSERT)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent insert"),
				 errdetail("%s was inserted by another transaction after this transaction's INSERT ... ON CONFLICT DO UPDATE found it absent.",
						   describe_key(ps, c->key, c->klen)),
				 errhint("Retry the transaction."),
				 errcontext("foreign table \"%s\"", ps->relname)));
	report_duplicate(ps, c->key, c->klen);
}

/*
 * Raises unique_violation: key, which the transaction inserted, was
 * inserted by another transaction that committed first.
 */
static void
report_duplicate(PendingStore *ps, const char *key, size_t klen)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates the key of foreign table \"%s\"",
					ps->relname),
			 errdetail("%s was inserted by another transaction that committed first.",
					   describe_key(ps, key, klen))));
}

/*
 * The version of the committed row of key in ps's store, as its handle
 * sees it; raises serialization_failure if the store holds none (another
 * transaction deleted it).
 */
static uint64
committed_version(PendingStore *ps, const char *key, size_t klen)
{
	char	   *row;
	size_t		rowlen;
	uint64		version;

	/* the statement's scan read it by key, most likely, just now */
	if (LsmFdwReadVersion(ps->store, key, klen, &version))
		return version;
	if (!LsmFdwGet(ps->store, ps->relname, key, klen, &row, &rowlen))
		report_concurrent_change(ps, key, klen, false);
	version = LsmFdwRowVersion(row, rowlen);
	pfree(row);
	return version;
}

/*
 * Raises serialization_failure: the row of key, which the transaction read
 * and changes, was updated (present) or deleted by another transaction.
 */
static void
report_concurrent_change(PendingStore *ps, const char *key, size_t klen,
						 bool present)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 errdetail("%s was %s by another transaction after this transaction read it.",
					   describe_key(ps, key, klen),
					   present ? "updated" : "deleted"),
			 errhint("Retry the transaction."),
			 errcontext("foreign table \"%s\"", ps->relname)));
}

/*
 * "Key (col)=(value)" for a key of ps's table, for messages.  The table is
 * alive (dropped ones are not written).
 */
static char *
describe_key(PendingStore *ps, const char *key, size_t klen)
{
	Relation	rel = table_open(ps->relid, NoLock);
	LsmFdwTable *t = LsmFdwGetTable(rel);

	table_close(rel, NoLock);
	return psprintf("Key (%s)=(%s)", LsmFdwKeyColumnNames(t),
					LsmFdwKeyToString(t, key, klen));
}

/*
 * Moves pending writes out of memory if they take more than
 * lsm_fdw.pending_memory (see the file header); cid is the running
 * command.  Only at the top level.  A call that could free too little
 * raises the bar of the next attempt.
 */
static void
maybe_spill(CommandId cid)
{
	Size		limit = (Size) pending_memory_kb * 1024;
	HASH_SEQ_STATUS status;
	PendingStore *ps;

	if (pending_bytes <= Max(limit, spill_floor) || marks != NIL ||
		GetCurrentSubTransactionId() != TopSubTransactionId ||
		pending_stores == NULL)
		return;

	/* with no subtransaction, nothing in memory will be undone alone */
	undo_len = 0;
	hash_seq_init(&status, pending_stores);
	while ((ps = hash_seq_search(&status)) != NULL)
		if (!LsmFdwPendingDropped(ps->relid))
			spill_store(ps, cid);
	spill_floor = pending_bytes + limit / 4;
}

/*
 * Moves what can leave memory of ps's writes to its stages, command cid
 * running.  REQUIRES: no savepoint and an empty undo log (maybe_spill).
 */
static void
spill_store(PendingStore *ps, CommandId cid)
{
	if (ps->cmd_stage != NULL && ps->cmd_cid < cid)
		(void) fold_command(ps, false);
	if (ps->store->scans == 0)
		spill_older(ps, cid);
	if ((ps->cmd_stage == NULL || ps->cmd_cid == cid) &&
		LsmFdwScansWithin(ps->store, cid, cid))
		spill_command(ps, cid);
}

/*
 * Whether pk's net change can live in a stage: a row the transaction
 * inserted (a put; an insert then deleted must leave the store as it
 * finds it at commit, which memory decides), or a change of a committed
 * row, whose version goes to the bases.
 */
static bool
spillable(PendingKey *pk)
{
	return pk->base == LSMFDW_BASE_VERSION ||
		(pk->base == LSMFDW_BASE_ABSENT && !pk->newest->is_delete);
}

/*
 * Moves pk's net change from memory to stage (ps's stage or command
 * stage), with the version of the committed row it changes to the bases,
 * and frees it.  REQUIRES: no open scan points to pk's versions;
 * spillable(pk).
 */
static void
spill_key(PendingStore *ps, lsm_stage *stage, PendingKey *pk)
{
	PendingVersion *v = pk->newest;
	int			rc;

	/* a staged key's version is in the bases already */
	if (pk->base == LSMFDW_BASE_VERSION && !pk->staged)
	{
		uint8		version[8];
		int			i;

		open_stage(ps, &ps->bases, 16);
		for (i = 0; i < 8; i++)
			version[i] = (uint8) (pk->base_version >> (56 - 8 * i));
		rc = lsm_stage_put(ps->bases, pk->ref.data, pk->ref.len, version,
						   sizeof(version));
		if (rc != LSM_OK)
			LsmFdwReportError(rc, ps->store->db, ps->relname,
							  "stage writes to");
	}
	rc = v->is_delete
		? lsm_stage_delete(stage, pk->ref.data, pk->ref.len)
		: lsm_stage_put(stage, pk->ref.data, pk->ref.len, v->val, v->vlen);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "stage writes to");
	forget_key(ps, pk);
}

/*
 * Removes pk and all its versions from ps's pending writes and frees them.
 * REQUIRES: no open scan and no undo log entry points to them.
 */
static void
forget_key(PendingStore *ps, PendingKey *pk)
{
	PendingVersion *v = pk->newest;
	char	   *key = (char *) pk->ref.data;

	pending_bytes -= Min(pending_bytes, pk->ref.len);
	(void) hash_search(ps->keys, &pk->ref, HASH_REMOVE, NULL);
	while (v != NULL)
	{
		PendingVersion *older = v->older;

		pending_bytes -= Min(pending_bytes, v->vlen + VERSION_OVERHEAD);
		if (v->val != NULL)
			pfree((char *) v->val);
		pfree(v);
		v = older;
	}
	pfree(key);
}

/*
 * With no scan of ps's store open, moves to its stage the keys that the
 * running command cid did not write, and the keys that it simply inserted
 * (one version, a put).  Every later reader sees these as the stage shows
 * them.
 */
static void
spill_older(PendingStore *ps, CommandId cid)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;

	open_stage(ps, &ps->stage, 4);
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v = pk->newest;

		if (!spillable(pk) ||
			(v->cid >= cid &&
			 (v->older != NULL || pk->base != LSMFDW_BASE_ABSENT)))
			continue;
		PG_TRY();
		{
			spill_key(ps, ps->stage, pk);
		}
		PG_CATCH();
		{
			hash_seq_term(&status);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
}

/*
 * While every open scan of ps's store reads with command id cid (the
 * command that writes), moves the keys that only command cid wrote to the
 * command stage: no scan points to their versions, no reader of command
 * cid sees them, and the readers of later commands read the command stage
 * too (fold_command).
 */
static void
spill_command(PendingStore *ps, CommandId cid)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;

	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v;

		if (!spillable(pk))
			continue;
		for (v = pk->newest; v != NULL && v->cid == cid; v = v->older)
			;
		if (v != NULL)
			continue;			/* an earlier command wrote it too */
		PG_TRY();
		{
			open_stage(ps, &ps->cmd_stage, 4);
			ps->cmd_cid = cid;
			spill_key(ps, ps->cmd_stage, pk);
		}
		PG_CATCH();
		{
			hash_seq_term(&status);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
}

/*
 * Moves the writes of ps's command stage into its stage, once no open scan
 * reads with the command's id or an earlier one (those must not see them);
 * with force, whatever is open (at commit).  Returns whether it did (true
 * too if there was none).  On an error the command stage stays as it was:
 * the stage may hold part of it, in the same versions.
 */
static bool
fold_command(PendingStore *ps, bool force)
{
	lsm_iter   *volatile it = NULL;
	lsm_iter   *opened;
	int			rc;

	if (ps->cmd_stage == NULL)
		return true;
	if (!force &&
		!LsmFdwScansWithin(ps->store, ps->cmd_cid + 1, InvalidCommandId))
		return false;
	open_stage(ps, &ps->stage, 4);
	if ((rc = lsm_stage_iter_open(ps->cmd_stage, &opened)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	it = opened;
	PG_TRY();
	{
		for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it) && rc == LSM_OK;
			 lsm_iter_next(it))
		{
			size_t		klen;
			size_t		vlen;
			const char *key = lsm_iter_key(it, &klen);
			const char *val = lsm_iter_value(it, &vlen);

			CHECK_FOR_INTERRUPTS();
			if (lsm_iter_is_delete(it))
				rc = lsm_stage_delete(ps->stage, key, klen);
			else
				rc = lsm_stage_put(ps->stage, key, klen, val, vlen);
		}
		if (rc == LSM_OK)
			rc = lsm_iter_status(it);
		if (rc != LSM_OK)
			LsmFdwReportError(rc, ps->store->db, ps->relname,
							  "stage writes to");
	}
	PG_FINALLY();
	{
		lsm_iter_close(it);
	}
	PG_END_TRY();
	lsm_stage_abort(ps->cmd_stage);
	ps->cmd_stage = NULL;
	ps->cmd_cid = InvalidCommandId;
	return true;
}

/*
 * Whether a reader with command id curcid (InvalidCommandId: the newest of
 * all) sees ps's command stage.
 */
static bool
command_visible(PendingStore *ps, CommandId curcid)
{
	return ps->cmd_stage != NULL &&
		(curcid == InvalidCommandId || curcid > ps->cmd_cid);
}

/*
 * Looks key up in stage (one of ps's stages): LSM_OK (a put, the row in
 * *val, palloc'd and NUL-terminated, and its length in *vlen, if val is
 * not NULL), LSM_DELETED or LSM_NOTFOUND.  Raises an error if the engine
 * fails.
 */
static int
stage_read(PendingStore *ps, lsm_stage *stage, const char *key, size_t klen,
		   void **val, size_t *vlen)
{
	void	   *v = NULL;
	size_t		n = 0;
	int			rc = lsm_stage_get(stage, key, klen, &v, &n);

	if (rc != LSM_OK && rc != LSM_DELETED && rc != LSM_NOTFOUND)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	if (val != NULL)
	{
		*val = NULL;
		*vlen = 0;
	}
	if (v == NULL)
		return rc;
	/* the engine's allocation must not leak if the copy fails */
	PG_TRY();
	{
		if (val != NULL)
		{
			*val = palloc(n + 1);
			memcpy(*val, v, n);
			((char *) *val)[n] = '\0';
			*vlen = n;
		}
	}
	PG_FINALLY();
	{
		lsm_free(v);
	}
	PG_END_TRY();
	return rc;
}

/*
 * Whether the bases of ps hold key, a staged change of a committed row;
 * sets *version to the version of that row.
 */
static bool
staged_base(PendingStore *ps, const char *key, size_t klen, uint64 *version)
{
	char	   *v;
	size_t		vlen;
	int			i;

	if (ps->bases == NULL ||
		stage_read(ps, ps->bases, key, klen, (void **) &v, &vlen) != LSM_OK)
		return false;
	if (vlen != 8)
		elog(ERROR, "lsm_fdw: staged row version of %zu bytes", vlen);
	*version = 0;
	for (i = 0; i < 8; i++)
		*version = (*version << 8) | (uint8) v[i];
	pfree(v);
	return true;
}

/* What to do with a key of a stage (for_each_staged_key). */
typedef void (*StagedKeyFn) (PendingStore *ps, const char *key, size_t klen,
							 bool is_delete);

/*
 * Calls fn for each key of ps's stage that memory does not rewrite (those
 * are checked with the others), in key order.
 */
static void
for_each_staged_key(PendingStore *ps, StagedKeyFn fn)
{
	lsm_iter   *volatile it = NULL;
	lsm_iter   *opened;
	int			rc;

	if ((rc = lsm_stage_iter_open(ps->stage, &opened)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	it = opened;
	PG_TRY();
	{
		for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it);
			 lsm_iter_next(it))
		{
			size_t		klen;
			const char *key = lsm_iter_key(it, &klen);

			CHECK_FOR_INTERRUPTS();
			if (find_key(ps->relid, key, klen) == NULL)
				fn(ps, key, klen, lsm_iter_is_delete(it));
		}
		if ((rc = lsm_iter_status(it)) != LSM_OK)
			LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	}
	PG_FINALLY();
	{
		lsm_iter_close(it);
	}
	PG_END_TRY();
}

/*
 * The check of a key of ps's stage (check_staged): a key it changed must
 * still have the version the transaction read, a key it inserted must
 * still be absent from the store.
 */
static void
check_staged_key(PendingStore *ps, const char *key, size_t klen,
				 bool is_delete)
{
	uint64		version;

	if (staged_base(ps, key, klen, &version))
		check_key(ps, key, klen, LSM_IF_VALUE, ps->first_seq, version, NULL);
	else if (!is_delete)
		check_key(ps, key, klen, LSM_IF_ABSENT, ps->first_seq, 0, NULL);
}

/*
 * The checks of the keys in ps's stage that memory does not rewrite.
 * REQUIRES: the commit lock, the store refreshed, the command stage
 * folded.
 */
static void
check_staged(PendingStore *ps)
{
	for_each_staged_key(ps, check_staged_key);
}

/*
 * Adds the net changes held in memory to ps's stage, which then holds the
 * transaction's whole write set of the store.  A key the stage puts and
 * memory ends deleted (inserted, then deleted) must leave the store as it
 * is now: deleted if absent, rewritten as it is if another transaction
 * inserted it meanwhile (ON CONFLICT DO NOTHING).  REQUIRES: the commit
 * lock and the checks done.
 */
static void
fold_into_stage(PendingStore *ps)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	int			rc = LSM_OK;

	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v = pk->newest;
		bool		inserted = pk->base != LSMFDW_BASE_VERSION &&
			pk->base != LSMFDW_BASE_ANY;
		char	   *row;
		size_t		rowlen;

		if (!v->is_delete)
			rc = lsm_stage_put(ps->stage, pk->ref.data, pk->ref.len, v->val,
							   v->vlen);
		else if (!inserted)
			rc = lsm_stage_delete(ps->stage, pk->ref.data, pk->ref.len);
		else if (!pk->staged)
			continue;			/* inserted, then deleted: nothing to do */
		else if (!lsm_stage_truncated(ps->stage) &&
				 LsmFdwGet(ps->store, ps->relname, pk->ref.data, pk->ref.len,
						   &row, &rowlen))
			rc = lsm_stage_put(ps->stage, pk->ref.data, pk->ref.len, row,
							   rowlen);
		else
			rc = lsm_stage_delete(ps->stage, pk->ref.data, pk->ref.len);
		if (rc != LSM_OK)
		{
			hash_seq_term(&status);
			LsmFdwReportError(rc, ps->store->db, ps->relname,
							  "stage writes to");
		}
	}
}

/*
 * Writes the net changes of one store as one atomic batch.  REQUIRES: the
 * store's commit lock, and its checks done (lock_and_check_store); or a
 * batch built with its conditions (build_batch), which the engine checks
 * as it writes.  Raises an error if the engine fails or a condition does
 * not hold (the batch is freed first).
 */
static void
write_store(PendingStore *ps)
{
	lsm_batch  *b;
	int			flags = synchronous_commit > SYNCHRONOUS_COMMIT_OFF
		? LSM_WRITE_DEFAULT : LSM_WRITE_NOSYNC;
	int			rc = LSM_OK;

	if (ps->stage != NULL)
	{
		lsm_stage  *stage = ps->stage;

		fold_into_stage(ps);
		ps->stage = NULL;		/* the commit frees it, whatever happens */
		if ((rc = lsm_stage_commit(stage, flags)) != LSM_OK)
			LsmFdwReportError(rc, ps->store->db, ps->relname, "write");
		return;
	}

	/*
	 * synchronous_commit = off: the WAL record is written, not synced.
	 * Either way the durability is waited for once the commit locks are
	 * released (wait_stores).
	 */
	b = ps->batch ? ps->batch : build_batch(ps, false);
	ps->batch = NULL;
	if (lsm_batch_count(b) > 0)
		rc = lsm_write_opt(ps->store->db, b, flags | LSM_WRITE_DEFER);
	if (rc == LSM_CONFLICT)
	{
		lsm_conflict c;

		/* c.key points into the batch: freed at the end of the transaction */
		if (lsm_batch_conflict(b, &c) == LSM_OK)
		{
			ps->batch = b;
			report_conflict(ps, &c);
		}
	}
	lsm_batch_free(b);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "write");
}

/*
 * The net changes of ps held in memory, as one batch (the caller frees it),
 * with conditions if asked: the checks of lock_and_check_store, for the
 * engine to make as it writes the batch.  Raises an error when out of
 * memory (the batch is freed first).
 */
static lsm_batch *
build_batch(PendingStore *ps, bool conditions)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	PendingKey **order;
	long		n = hash_get_num_entries(ps->keys),
				i = 0;
	lsm_batch  *b;
	int			rc = LSM_OK;

	/*
	 * In key order: the memtable then places each entry next to the one
	 * before it, where in hash order every entry would cost a descent of
	 * its skip list (a transaction of 100,000 rows spent a third of its
	 * commit there).
	 */
	order = palloc(sizeof(PendingKey *) * Max(n, 1));
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
		order[i++] = pk;
	if (n > 1)
		qsort(order, n, sizeof(PendingKey *), pending_key_cmp);

	if ((b = lsm_batch_new()) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errcontext("foreign table \"%s\"", ps->relname)));

	/* no PostgreSQL call below can raise an error before the batch is freed */
	for (i = 0; i < n; i++)
	{
		PendingVersion *v;

		pk = order[i];
		v = pk->newest;

		if (v->is_delete && pk->base != LSMFDW_BASE_VERSION &&
			pk->base != LSMFDW_BASE_ANY)
			continue;			/* inserted, then deleted: nothing to do */
		if (v->is_delete)
			rc = lsm_batch_delete(b, pk->ref.data, pk->ref.len);
		else
			rc = lsm_batch_put(b, pk->ref.data, pk->ref.len, v->val, v->vlen);
		if (rc == LSM_OK && conditions)
		{
			uint64		seq,
						hash;
			int			cond = key_condition(pk, &seq, &hash);

			if (cond != 0)
				rc = lsm_batch_require(b, cond, seq, hash);
		}
		if (rc != LSM_OK)
		{
			lsm_batch_free(b);
			LsmFdwReportError(rc, ps->store->db, ps->relname, "write");
		}
	}
	pfree(order);
	if (conditions)
		lsm_batch_require_all(b, LSM_IF_NOT_PREPARED, ps->first_seq);
	return b;
}

/* qsort comparator of PendingKey pointers: the engine's key order. */
static int
pending_key_cmp(const void *a, const void *b)
{
	const PendingKey *x = *(PendingKey *const *) a;
	const PendingKey *y = *(PendingKey *const *) b;

	return LsmFdwKeyCmp(x->ref.data, x->ref.len, y->ref.data, y->ref.len);
}

/*
 * Raises serialization_failure if another transaction's prepared batch
 * (PREPARE TRANSACTION, or a commit across stores under way) writes a key
 * that ps writes: whatever its decision will be, the two cannot both
 * commit.  One load of LOCK's page when no batch is prepared.  REQUIRES:
 * the commit lock, so that the answer holds until the write.
 */
static void
check_prepared(PendingStore *ps)
{
	lsm_db	   *db = ps->store->db;
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	uint64		owner;
	size_t		n;
	int			rc;

	if ((rc = lsm_prepared(db, &owner, 1, &n)) != LSM_OK)
		LsmFdwReportError(rc, db, ps->relname, "read the prepared writes of");
	if (n == 0)
		return;
	/* a TRUNCATE writes every key */
	if (ps->stage != NULL && lsm_stage_truncated(ps->stage))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to a prepared transaction"),
				 errdetail("Foreign table \"%s\" is truncated by this transaction and written by transaction %llu, which is prepared and not yet committed or rolled back.",
						   ps->relname, (unsigned long long) owner),
				 errhint("Retry the transaction once transaction %llu is committed or rolled back (pg_prepared_xacts lists the prepared ones).",
						 (unsigned long long) owner)));
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
		check_prepared_key(ps, pk->ref.data, pk->ref.len,
						   pk->newest->is_delete);
	/* and the keys in the stage */
	if (ps->stage != NULL)
		for_each_staged_key(ps, check_prepared_key);
}

/*
 * Raises serialization_failure if another transaction's prepared write
 * holds key of ps's store (a StagedKeyFn: is_delete does not matter).
 */
static void
check_prepared_key(PendingStore *ps, const char *key, size_t klen,
				   bool is_delete)
{
	lsm_db	   *db = ps->store->db;
	uint64		owner;
	int			rc = lsm_prepared_holds(db, key, klen, &owner);

	if (rc == LSM_NOTFOUND)
		return;
	if (rc != LSM_OK)
		LsmFdwReportError(rc, db, ps->relname, "read the prepared writes of");
	report_prepared(ps, key, klen, owner);
}

/*
 * Raises serialization_failure: key is written by transaction owner, which
 * is prepared.
 */
static void
report_prepared(PendingStore *ps, const char *key, size_t klen, uint64 owner)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to a prepared transaction"),
			 errdetail("%s is written by transaction %llu, which is prepared and not yet committed or rolled back.",
					   describe_key(ps, key, klen),
					   (unsigned long long) owner),
			 errhint("Retry the transaction once transaction %llu is committed or rolled back (pg_prepared_xacts lists the prepared ones).",
					 (unsigned long long) owner),
			 errcontext("foreign table \"%s\"", ps->relname)));
}

/*
 * The owner of the batches this transaction is about to prepare: its
 * FullTransactionId, which no other transaction may get while a batch of it
 * can be left in a store.  A transaction that dies before anything of it
 * reached PostgreSQL's WAL on disk leaves its id to be handed out again
 * after crash recovery; recovery moves the next id past every id its WAL
 * records carry, so one record of this transaction, flushed before any
 * batch is prepared, rules that out.  Called before the commit locks are
 * taken: the flush is group-committed with other sessions' WAL flushes,
 * and no other commit to the stores waits for it.
 */
static void
own_prepared_writes(void)
{
	xact_owner = U64FromFullTransactionId(GetTopFullTransactionId());
	XLogFlush(LogLogicalMessage("lsm_fdw", "prepare", sizeof("prepare"), true));
	kill_point();
}

/*
 * Prepares the n stores in order, which are locked and checked: each
 * store's writes (a batch, or a stage's tables) become durable and
 * invisible under the transaction's FullTransactionId, to be resolved at
 * XACT_EVENT_COMMIT or abort (a commit across stores) or by whoever reads
 * the store after COMMIT PREPARED or ROLLBACK PREPARED
 * (docs/architecture.md, "Prepared batches").  Synced unless fsync is off,
 * whatever synchronous_commit says: PostgreSQL's commit record must never
 * outlive the writes it decides.  Releases the locks.
 */
static void
prepare_stores(PendingStore **order, int n)
{
	int			flags = (enableFsync ? LSM_WRITE_SYNC : LSM_WRITE_NOSYNC) |
		LSM_WRITE_DEFER;
	int			i,
				rc;

	Assert(xact_owner != 0);	/* own_prepared_writes */
	for (i = 0; i < n; i++)
	{
		PendingStore *ps = order[i];

		if (ps->stage != NULL)
		{
			lsm_stage  *stage = ps->stage;

			/* its tables move into the store, named by a prepared record */
			fold_into_stage(ps);
			ps->stage = NULL;	/* freed by the prepare, whatever happens */
			if (lsm_stage_count(stage) > 0 || lsm_stage_truncated(stage))
				rc = lsm_stage_prepare(stage, xact_owner, flags);
			else
			{
				lsm_stage_abort(stage);
				rc = LSM_OK;
			}
		}
		else
		{
			lsm_batch  *b = build_batch(ps, false);

			rc = lsm_batch_count(b) > 0
				? lsm_prepare(ps->store->db, b, xact_owner, flags) : LSM_OK;
			lsm_batch_free(b);
		}
		if (rc != LSM_OK)
			LsmFdwReportError(rc, ps->store->db, ps->relname, "prepare the write to");
		ps->prepared = true;
		kill_point();
	}
	wait_stores(order, n);
	kill_point();
}

/*
 * Resolves the stores this transaction prepared at pre-commit: commit at
 * XACT_EVENT_COMMIT (PostgreSQL's commit record is written), then decides
 * the compactions the writes call for (end_xact launches the workers), or
 * rollback at an abort.  The records that resolve are not synced: the batches are
 * durable, and so is PostgreSQL's decision, so a resolve that a crash
 * loses is made again by the first statement that reads the store.  Raises
 * no error: a store that cannot be resolved now is resolved by the next
 * statement that reads it (LsmFdwResolvePrepared).
 */
static void
resolve_stores(bool commit)
{
	HASH_SEQ_STATUS status;
	PendingStore *ps;

	if (pending_stores == NULL || xact_owner == 0)
		return;

	/*
	 * An asynchronous commit's record is not on disk yet: a store must not
	 * keep the batch (its record may outlive a crash of the machine) while
	 * PostgreSQL loses the commit.
	 */
	if (commit && synchronous_commit <= SYNCHRONOUS_COMMIT_OFF)
		XLogFlush(XactLastCommitEnd);
	hash_seq_init(&status, pending_stores);
	while ((ps = hash_seq_search(&status)) != NULL)
	{
		int			rc;

		if (!ps->prepared || ps->store == NULL)
			continue;
		lsm_unlock(ps->store->db);
		kill_point();
		rc = lsm_resolve(ps->store->db, xact_owner, commit, LSM_WRITE_NOSYNC);
		kill_point();
		/* the writes are in now: the compactions they call for */
		if (commit)
			ps->launch_compactor =
				LsmFdwCompactionAfterCommit(ps->store, ps->relname);
		if (rc != LSM_OK && rc != LSM_NOTFOUND)
			ereport(WARNING,
					(errmsg("could not %s the prepared write of transaction %llu to foreign table \"%s\": %s",
							commit ? "apply" : "discard",
							(unsigned long long) xact_owner, ps->relname,
							lsm_errmsg(ps->store->db)),
					 errdetail("The next statement that reads the table does it.")));
	}
}

/*
 * Releases the commit locks of the n stores just written and waits for
 * their writes to be durable (group commit: the next transaction checks
 * and appends while this one's sync runs, and one fdatasync covers both).
 * Until then no other session sees them (lsm_write_wait).  A failed sync
 * leaves the writes in the store's log: the error says so.
 */
static void
wait_stores(PendingStore **order, int n)
{
	int			i,
				rc;

	for (i = 0; i < n; i++)
		lsm_unlock(order[i]->store->db);
	for (i = 0; i < n; i++)
	{
		if ((rc = lsm_write_wait(order[i]->store->db)) != LSM_OK)
			LsmFdwReportError(rc, order[i]->store->db, order[i]->relname,
							  "make durable the commit to");
	}
}

/* Whether the transaction has writes for ps's store, in memory or staged. */
static bool
store_has_writes(PendingStore *ps)
{
	return hash_get_num_entries(ps->keys) > 0 ||
		(ps->stage != NULL && (lsm_stage_count(ps->stage) > 0 ||
							   lsm_stage_truncated(ps->stage))) ||
		(ps->cmd_stage != NULL && lsm_stage_count(ps->cmd_stage) > 0);
}

/* Whether the transaction has pending writes for any store. */
static bool
has_writes(void)
{
	HASH_SEQ_STATUS status;
	PendingStore *ps;

	if (pending_stores == NULL)
		return false;
	hash_seq_init(&status, pending_stores);
	while ((ps = hash_seq_search(&status)) != NULL)
	{
		if (store_has_writes(ps))
		{
			hash_seq_term(&status);
			return true;
		}
	}
	return false;
}

/* qsort comparator of PendingStore pointers: by relation OID. */
static int
pending_store_cmp(const void *a, const void *b)
{
	Oid			x = (*(PendingStore *const *) a)->relid;
	Oid			y = (*(PendingStore *const *) b)->relid;

	return (x > y) - (x < y);
}

/*
 * Resolves the prepared batches of store s whose transactions PostgreSQL
 * has decided: applied if the transaction committed (COMMIT PREPARED, or a
 * commit across stores whose session did not get to it), discarded if it
 * aborted or never finished (a crash).  Those still in progress (prepared,
 * or committing) stay, invisible.  Called where a statement catches the
 * store up (LsmFdwOpenStore), so that it sees every transaction committed
 * before it began.  A batch that cannot be resolved is left, with a
 * WARNING; the next statement tries again.
 */
void
LsmFdwResolvePrepared(LsmFdwStore *s, const char *relname)
{
	uint64		owners[16];
	FullTransactionId next;
	size_t		n,
				i;
	int			rc;

	if ((rc = lsm_prepared(s->db, owners, lengthof(owners), &n)) != LSM_OK)
		LsmFdwReportError(rc, s->db, relname, "read the prepared batches of");
	if (n == 0)
		return;
	next = ReadNextFullTransactionId();
	for (i = 0; i < n && i < lengthof(owners); i++)
	{
		FullTransactionId fxid = FullTransactionIdFromU64(owners[i]);
		TransactionId xid = XidFromFullTransactionId(fxid);
		bool		known,
					commit = false;

		/* the status of a transaction PostgreSQL still keeps it for */
		LWLockAcquire(XactTruncationLock, LW_SHARED);
		known = FullTransactionIdPrecedes(fxid, next) &&
			U64FromFullTransactionId(next) - owners[i] < (UINT64CONST(1) << 31) &&
			TransactionIdIsNormal(xid) &&
			!TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid);
		if (known && (TransactionIdIsCurrentTransactionId(xid) ||
					  TransactionIdIsInProgress(xid)))
		{
			LWLockRelease(XactTruncationLock);
			continue;
		}
		if (known)
			commit = TransactionIdDidCommit(xid);
		LWLockRelease(XactTruncationLock);
		/* an asynchronous commit is applied once it is durable */
		if (commit)
			XLogFlush(TransactionIdGetCommitLSN(xid));
		if (!known)
		{
			ereport(WARNING,
					(errmsg("foreign table \"%s\" holds a prepared write of transaction %llu, whose outcome PostgreSQL no longer knows",
							relname, (unsigned long long) owners[i]),
					 errdetail("The write stays invisible."),
					 errhint("Remove the file prepared.%016llx of the table's store once you know the transaction's outcome.",
							 (unsigned long long) owners[i])));
			continue;
		}
		rc = lsm_resolve(s->db, owners[i], commit, LSM_WRITE_NOSYNC);
		if (rc != LSM_OK && rc != LSM_NOTFOUND)
			ereport(WARNING,
					(errmsg("could not %s the prepared write of transaction %llu to foreign table \"%s\": %s",
							commit ? "apply" : "discard",
							(unsigned long long) owners[i], relname,
							lsm_errmsg(s->db)),
					 errdetail("The next statement that reads the table tries again.")));
	}
}

/*
 * The stores the transaction wrote (and did not drop), in OID order, so
 * that commit locks cannot deadlock; *n of them, in a palloc'ed array.
 */
static PendingStore **
stores_in_order(int *n)
{
	HASH_SEQ_STATUS status;
	PendingStore *ps;
	PendingStore **order;

	*n = 0;
	order = palloc(sizeof(PendingStore *) *
				   Max(hash_get_num_entries(pending_stores), 1));
	hash_seq_init(&status, pending_stores);
	while ((ps = hash_seq_search(&status)) != NULL)
	{
		if (store_has_writes(ps) && !LsmFdwPendingDropped(ps->relid))
			order[(*n)++] = ps;
	}
	qsort(order, *n, sizeof(PendingStore *), pending_store_cmp);
	return order;
}

/*
 * Whether a commit of the n stores in order must be atomic across them:
 * several stores, or one and a transaction id (the transaction wrote
 * PostgreSQL's tables too), unless lsm_fdw.atomic_commit is off.
 */
static bool
needs_two_phase(int n)
{
	return atomic_commit && n > 0 &&
		(n > 1 || TransactionIdIsValid(GetTopTransactionIdIfAny()));
}

/*
 * Carries out the removals due when subtransaction subid (the whole
 * transaction if InvalidSubTransactionId) commits or aborts, and forgets
 * the ones that will never be due.
 */
static void
remove_dirs(bool commit, SubTransactionId subid)
{
	ListCell   *lc;

	foreach(lc, removals)
	{
		DirRemoval *r = (DirRemoval *) lfirst(lc);

		if (subid != InvalidSubTransactionId && r->subid != subid)
			continue;
		if (r->at_commit == commit)
			LsmFdwRemoveStoreDir(r->relid, r->path);
		removals = foreach_delete_current(removals, lc);
	}
}

/*
 * End of the transaction: unpins the stores that had pending writes,
 * carries out the removals due, and forgets all state (the memory goes with
 * TopTransactionContext).  Must not raise errors.
 */
static void
end_xact(bool commit)
{
	if (pending_stores != NULL)
	{
		HASH_SEQ_STATUS status;
		PendingStore *ps;

		hash_seq_init(&status, pending_stores);
		while ((ps = hash_seq_search(&status)) != NULL)
		{
			/* not committed (an abort, a dropped table, a failure) */
			if (ps->stage != NULL)
				lsm_stage_abort(ps->stage);
			ps->stage = NULL;
			if (ps->cmd_stage != NULL)
				lsm_stage_abort(ps->cmd_stage);
			ps->cmd_stage = NULL;
			if (ps->bases != NULL)
				lsm_stage_abort(ps->bases);
			ps->bases = NULL;
			lsm_batch_free(ps->batch);
			ps->batch = NULL;
			if (ps->store != NULL)
			{
				lsm_unlock(ps->store->db);
				/* now the worker sees the table (a new one too) */
				if (commit && ps->launch_compactor)
					LsmFdwLaunchCompactor(ps->store, ps->relname);
				LsmFdwUnpinStore(ps->store);
			}
		}
	}
	if (removals != NIL)
		remove_dirs(commit, InvalidSubTransactionId);

	xact_cxt = NULL;
	pending_stores = NULL;
	last_store = NULL;
	undo_log = NULL;
	undo_len = 0;
	undo_size = 0;
	marks = NIL;
	removals = NIL;
	pending_bytes = 0;
	spill_floor = 0;
	xact_owner = 0;
	kill_steps = 0;
}

/*
 * Transaction callback: writes (or prepares) the pending writes at
 * pre-commit, prepares them at pre-prepare, resolves what it prepared and
 * ends the transaction's state at commit or abort.
 */
static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (pending_stores != NULL)
			{
				PendingStore **order;
				bool		two_phase,
							by_engine;
				int			n;
				int			i;

				order = stores_in_order(&n);
				for (i = 0; i < n; i++)
					(void) fold_command(order[i], true);

				/*
				 * One store and nothing else: committed in one phase.  Its
				 * writes in memory: one batch, whose conditions the engine
				 * checks as it writes it, with no commit lock.  Else its
				 * batch is built before the commit lock, so that a wait for
				 * the lock places it in the memtable (lsm_lock_batch).
				 * Several, or one and PostgreSQL's own tables (the
				 * transaction has an id): prepared, then resolved once
				 * PostgreSQL's commit record decided (XACT_EVENT_COMMIT).
				 */
				two_phase = needs_two_phase(n);
				by_engine = n == 1 && !two_phase && order[0]->stage == NULL;
				for (i = 0; i < n && !two_phase; i++)
					if (order[i]->stage == NULL)
						order[i]->batch = build_batch(order[i], by_engine);
				if (two_phase)
					own_prepared_writes();
				for (i = 0; i < n && !by_engine; i++)
					lock_and_check_store(order[i]);
				if (two_phase)
					prepare_stores(order, n);
				else
				{
					for (i = 0; i < n; i++)
						write_store(order[i]);
					wait_stores(order, n);
					/* the locks are free: the compactions the writes call for */
					for (i = 0; i < n; i++)
						order[i]->launch_compactor =
							LsmFdwCompactionAfterCommit(order[i]->store,
														order[i]->relname);
				}
				pfree(order);
			}
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (removals != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that created or dropped lsm_fdw foreign tables")));
			if (has_writes())
			{
				PendingStore **order;
				int			n,
							i;

				order = stores_in_order(&n);
				for (i = 0; i < n; i++)
					(void) fold_command(order[i], true);
				own_prepared_writes();
				for (i = 0; i < n; i++)
					lock_and_check_store(order[i]);
				prepare_stores(order, n);
				pfree(order);
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			resolve_stores(true);
			end_xact(true);
			break;
		case XACT_EVENT_PREPARE:
			/* resolved by whoever reads the store after COMMIT PREPARED */
			end_xact(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			resolve_stores(false);
			end_xact(false);
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			break;
	}
}

/*
 * Subtransaction callback: a rollback to a savepoint undoes the
 * subtransaction's writes and carries out its CREATE removals; a release
 * passes its writes' mark and its removals to the parent.
 */
static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	SavepointMark *top;
	ListCell   *lc;

	if (xact_cxt == NULL)
		return;
	top = marks != NIL ? (SavepointMark *) llast(marks) : NULL;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			if (top != NULL && top->subid == mySubid)
			{
				undo_to(top->undo_pos);
				marks = list_delete_last(marks);
			}
			remove_dirs(false, mySubid);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			if (top != NULL && top->subid == mySubid)
			{
				SavepointMark *below = list_length(marks) > 1
				? (SavepointMark *) list_nth(marks, list_length(marks) - 2)
				: NULL;

				/* the parent's writes begin at its own mark if it has one */
				if (parentSubid == TopSubTransactionId ||
					(below != NULL && below->subid == parentSubid))
					marks = list_delete_last(marks);
				else
					top->subid = parentSubid;
			}
			foreach(lc, removals)
			{
				DirRemoval *r = (DirRemoval *) lfirst(lc);

				if (r->subid == mySubid)
					r->subid = parentSubid;
			}
			break;
		default:
			break;
	}
}

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
 * pre-commit of a store takes a transaction-level lock on it (an advisory
 * lock tag of our own, held until the commit is done, so commits to one
 * store are serialized between backends), catches up with the store and
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
 * it reads the row again through the store's handle, which is not
 * refreshed while an UPDATE or DELETE of the store runs (store.c), so it
 * sees what the statement's scan saw.  The pre-commit, under the commit
 * lock, checks that the store still holds a row of that version.  A key the
 * transaction wrote before needs no version (its first write recorded what
 * the check needs, or it was inserted).  No update is ever lost.
 *
 * Every store the transaction wrote is locked and checked before any is
 * written, so a failed check leaves all of them untouched.
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
 * lsm_fdw.pending_memory, the keys that were simply inserted (one version,
 * a put, absent from the store before) are moved to the store's stage
 * (lsm_stage_open: a private sorted buffer that spills to sorted runs on
 * disk) and forgotten in memory.  That is done only at the top level (no
 * subtransaction has written, so nothing spilled can have to be undone
 * alone) and for stores that no scan is reading (a scan holds pointers
 * into the pending writes, and a scan of the writing command must not see
 * its own writes, which the stage cannot tell apart).  Reads consult
 * memory, then the stage, then the store; a key found in the stage was
 * inserted by the transaction.  Once a store has a stage, its new keys go
 * there directly under the same conditions (a bulk load passes through
 * memory only until the first spill).  At commit the rest of the writes joins the
 * stage and lsm_stage_commit installs it all atomically.
 *
 * Limits of this version: a transaction that writes several stores
 * writes them one by one after all the checks, so an engine failure (disk
 * full, I/O error) or a crash in the middle of that can leave the stores
 * before it committed while the transaction aborts.
 *
 * src/fdw/xact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "lsm_fdw.h"

/*
 * Field 4 of the advisory lock tag that serializes the commits to one store
 * (fields 1 and 2: database and table OID).  SQL's advisory lock functions
 * use 1 and 2, so the locks never collide with an application's.
 */
#define LSMFDW_LOCKTAG_FIELD4	0x4C53

/* A key's bytes: the hash key of PendingKey */
typedef struct KeyRef
{
	const char *data;
	size_t		len;
} KeyRef;

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
	KeyRef		ref;			/* hash key (must be first); data copied */
	PendingVersion *newest;
	LsmFdwBase	base;			/* the store's row at the first write */
	uint64		base_version;	/* LSMFDW_BASE_VERSION: its version */
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
								 * the transaction first wrote to it ... */
	bool		first_seq_known;	/* ... if it could be read */
	lsm_stage  *stage;			/* inserted keys moved out of memory, or
								 * NULL */
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
static PendingVersion **undo_log = NULL;
static int	undo_len = 0;
static int	undo_size = 0;
static List *marks = NIL;		/* SavepointMark, innermost last */
static List *removals = NIL;	/* DirRemoval */
static Size pending_bytes = 0;	/* memory of the pending versions */
static Size spill_floor = 0;	/* no spill attempt below this */

/* lsm_fdw.pending_memory, in kB */
static int	pending_memory_kb = 65536;

/* What a pending version costs in memory beyond its key and row */
#define VERSION_OVERHEAD	(sizeof(PendingVersion) + sizeof(PendingKey) + \
							 sizeof(PendingVersion *) + 64)


static void ensure_xact_state(void);
static PendingStore *get_pending_store(LsmFdwStore *s, const char *relname);
static PendingVersion *visible_version(PendingKey *pk, CommandId curcid);
static PendingKey *find_key(Oid relid, const char *key, size_t klen);
static uint32 key_hash(const void *key, Size keysize);
static int	key_match(const void *key1, const void *key2, Size keysize);
static int	pending_row_cmp(const void *a, const void *b);
static void record_mark(void);
static void undo_to(int pos);
static void lock_and_check_store(PendingStore *ps);
static void write_store(PendingStore *ps);
static bool last_sequence(PendingStore *ps, uint64 *seq);
static uint64 row_version(const char *row, size_t rowlen);
static uint64 committed_version(PendingStore *ps, const char *key,
								size_t klen);
static void report_concurrent_change(PendingStore *ps, const char *key,
									 size_t klen, bool present)
			pg_attribute_noreturn();
static char *describe_key(PendingStore *ps, const char *key, size_t klen);
static void maybe_spill(void);
static void open_stage(PendingStore *ps);
static void spill_store(PendingStore *ps);
static bool stage_holds(PendingStore *ps, const char *key, size_t klen);
static void check_staged_inserts(PendingStore *ps);
static void fold_into_stage(PendingStore *ps);
static bool store_has_writes(PendingStore *ps);
static bool has_writes(void);
static int	pending_store_cmp(const void *a, const void *b);
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
	KeyRef		ref;
	bool		found;
	bool		staged = false;
	uint64		version = 0;

	ensure_xact_state();
	oldcxt = MemoryContextSwitchTo(xact_cxt);
	ps = get_pending_store(s, relname);

	/*
	 * Once the store has a stage, a new key inserted where a spill could
	 * move it goes there at once, without passing through memory.
	 */
	ref.data = key;
	ref.len = klen;
	if (ps->stage != NULL && !is_delete && base == LSMFDW_BASE_ABSENT &&
		marks == NIL && s->scans == 0 &&
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
		/* the stage holds only keys this transaction inserted */
		staged = ps->stage != NULL && stage_holds(ps, key, klen);
		if (!staged && base == LSMFDW_BASE_VERSION)
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
		pk->base = staged ? LSMFDW_BASE_ABSENT : base;
		pk->base_version = version;
		pk->staged = staged;
		pending_bytes += klen;
	}
	v->key = pk;
	v->older = pk->newest;
	pk->newest = v;
	undo_log[undo_len++] = v;
	pending_bytes += v->vlen + VERSION_OVERHEAD;

	MemoryContextSwitchTo(oldcxt);
	maybe_spill();
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
	open_stage(ps);
	MemoryContextSwitchTo(oldcxt);

	/* with no savepoint nothing in memory will be undone alone */
	undo_len = 0;
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v = pk->newest;
		char	   *key = (char *) pk->ref.data;

		pending_bytes -= Min(pending_bytes, pk->ref.len);
		while (v != NULL)
		{
			PendingVersion *older = v->older;

			pending_bytes -= Min(pending_bytes, v->vlen + VERSION_OVERHEAD);
			if (v->val != NULL)
				pfree((char *) v->val);
			pfree(v);
			v = older;
		}
		(void) hash_search(ps->keys, &pk->ref, HASH_REMOVE, NULL);
		pfree(key);
	}
	if ((rc = lsm_stage_truncate(ps->stage)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "truncate");
	return true;
}

/* Whether the transaction truncated relation relid (LsmFdwPendingTruncate). */
bool
LsmFdwPendingTruncated(Oid relid)
{
	PendingStore *ps;

	return pending_stores != NULL &&
		(ps = hash_search(pending_stores, &relid, HASH_FIND, NULL)) != NULL &&
		lsm_stage_truncated(ps->stage);
}

/*
 * Prepares a bulk load (COPY) into store s: opens its stage at once, so
 * that the rows it inserts go to the stage's sorted runs as they come
 * (PendingWrite says when they can), rather than into memory first and
 * then through a spill in hash order.
 */
void
LsmFdwPendingBulkLoad(LsmFdwStore *s, const char *relname)
{
	MemoryContext oldcxt;

	ensure_xact_state();
	oldcxt = MemoryContextSwitchTo(xact_cxt);
	open_stage(get_pending_store(s, relname));
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Looks key up in the pending writes of relation relid, as a reader with
 * command id curcid sees them (InvalidCommandId: the newest version of
 * all).  Returns false if the transaction has no such version; else true,
 * with the version in *out (pointing into memory that lasts until the end
 * of the transaction) and its command id in *cid (if cid is not NULL).
 */
bool
LsmFdwPendingLookup(Oid relid, const char *key, size_t klen,
					CommandId curcid, LsmFdwPendingRow *out, CommandId *cid)
{
	PendingKey *pk = find_key(relid, key, klen);
	PendingVersion *v;

	if (pk == NULL || (v = visible_version(pk, curcid)) == NULL)
	{
		PendingStore *ps;
		void	   *val = NULL;
		size_t		vlen = 0;
		int			rc;
		char	   *copy = NULL;

		/* the stage: an older command's insert, seen by every reader */
		if (pending_stores == NULL ||
			(ps = hash_search(pending_stores, &relid, HASH_FIND, NULL)) == NULL ||
			ps->stage == NULL)
			return false;
		rc = lsm_stage_get(ps->stage, key, klen, &val, &vlen);
		if (rc == LSM_NOTFOUND)
			return false;
		if (rc != LSM_OK && rc != LSM_DELETED)
			LsmFdwReportError(rc, ps->store->db, ps->relname, "read");

		/* the engine's allocation must not leak if the copy fails */
		PG_TRY();
		{
			copy = palloc(klen + vlen + 1);
			memcpy(copy, key, klen);
			if (val != NULL)
				memcpy(copy + klen, val, vlen);
			copy[klen + vlen] = '\0';
		}
		PG_FINALLY();
		{
			if (val != NULL)
				lsm_free(val);
		}
		PG_END_TRY();
		out->key = copy;
		out->klen = klen;
		out->is_delete = rc == LSM_DELETED;
		out->val = copy + klen;
		out->vlen = vlen;
		if (cid != NULL)
			*cid = InvalidCommandId;
		return true;
	}
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
	if (pending_stores == NULL ||
		(ps = hash_search(pending_stores, &relid, HASH_FIND, NULL)) == NULL)
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
 * A snapshot iterator over the stage of relation relid (deletes shown), not
 * positioned, or NULL if it has none.  The caller closes it.
 */
lsm_iter *
LsmFdwPendingStageIter(Oid relid)
{
	PendingStore *ps;
	lsm_iter   *it;
	int			rc;

	if (pending_stores == NULL ||
		(ps = hash_search(pending_stores, &relid, HASH_FIND, NULL)) == NULL ||
		ps->stage == NULL)
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
	ps = hash_search(pending_stores, &s->relid, HASH_FIND, NULL);
	if (ps == NULL)
	{
		HASHCTL		ctl;
		HTAB	   *keys;
		char	   *name = pstrdup(relname);

		ctl.keysize = sizeof(KeyRef);
		ctl.entrysize = sizeof(PendingKey);
		ctl.hash = key_hash;
		ctl.match = key_match;
		ctl.hcxt = xact_cxt;
		keys = hash_create("lsm_fdw pending keys", 256, &ctl,
						   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE |
						   HASH_CONTEXT);
		/* nothing can fail between the entry and its pin */
		ps = hash_search(pending_stores, &s->relid, HASH_ENTER, &found);
		ps->relname = name;
		ps->keys = keys;
		ps->store = s;
		ps->first_seq_known = false;
		ps->stage = NULL;
		LsmFdwPinStore(s);
		ps->first_seq_known = last_sequence(ps, &ps->first_seq);
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
static PendingKey *
find_key(Oid relid, const char *key, size_t klen)
{
	PendingStore *ps;
	KeyRef		ref;

	if (pending_stores == NULL ||
		(ps = hash_search(pending_stores, &relid, HASH_FIND, NULL)) == NULL)
		return NULL;
	if (hash_get_num_entries(ps->keys) == 0)
		return NULL;			/* e.g. every key spilled to the stage */
	ref.data = key;
	ref.len = klen;
	return hash_search(ps->keys, &ref, HASH_FIND, NULL);
}

/* dynahash hash function of a KeyRef: its bytes */
static uint32
key_hash(const void *key, Size keysize)
{
	const KeyRef *ref = (const KeyRef *) key;

	return hash_bytes((const unsigned char *) ref->data, (int) ref->len);
}

/* dynahash match function of KeyRefs: 0 if the bytes are equal */
static int
key_match(const void *key1, const void *key2, Size keysize)
{
	const KeyRef *a = (const KeyRef *) key1;
	const KeyRef *b = (const KeyRef *) key2;

	if (a->len != b->len)
		return 1;
	return memcmp(a->data, b->data, a->len);
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

/* Opens the stage of ps if it has none. */
static void
open_stage(PendingStore *ps)
{
	/* the stage's buffer is a quarter of the budget, up to 32 MB */
	size_t		buffer = Min((size_t) pending_memory_kb * 1024 / 4,
							 (size_t) 32 * 1024 * 1024);
	int			rc;

	if (ps->stage != NULL)
		return;
	if ((rc = lsm_stage_open(ps->store->db, buffer, &ps->stage)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "stage writes to");
}

/*
 * Sets *seq to the last sequence number of ps's store as its handle sees
 * it; false if the statistics cannot be read (then every check is made).
 */
static bool
last_sequence(PendingStore *ps, uint64 *seq)
{
	lsm_stats	st;

	if (lsm_get_stats(ps->store->db, &st) != LSM_OK)
		return false;
	*seq = st.last_sequence;
	return true;
}

/*
 * Takes the commit lock of ps's store (held until the transaction ends),
 * catches up with it, and checks the transaction's writes against what
 * other transactions committed meanwhile: a key it inserted must still be
 * absent (else unique_violation, or the write is dropped for ON CONFLICT DO
 * NOTHING), a row it updated or deleted must still have the version it
 * read (else serialization_failure).
 */
static void
lock_and_check_store(PendingStore *ps)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	LOCKTAG		tag;
	uint64		seq;
	bool		check_inserts;
	int			rc;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, ps->relid, 0,
						 LSMFDW_LOCKTAG_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	if ((rc = lsm_refresh(ps->store->db)) != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "refresh");
	check_inserts = !ps->first_seq_known || !last_sequence(ps, &seq) ||
		seq != ps->first_seq;
	/* no committed row survives a TRUNCATE, which locked out other writers */
	if (lsm_stage_truncated(ps->stage))
		check_inserts = false;
	if (check_inserts && ps->stage != NULL)
		check_staged_inserts(ps);

	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		char	   *row;
		size_t		rowlen;
		bool		present;

		if (pk->base == LSMFDW_BASE_ANY ||
			(pk->base != LSMFDW_BASE_VERSION &&
			 (!check_inserts || pk->newest->is_delete)))
			continue;
		CHECK_FOR_INTERRUPTS();
		present = LsmFdwGet(ps->store, ps->relname, pk->ref.data,
							pk->ref.len, &row, &rowlen);
		if (pk->base == LSMFDW_BASE_VERSION)
		{
			if (present && row_version(row, rowlen) == pk->base_version)
				continue;
			hash_seq_term(&status);
			report_concurrent_change(ps, pk->ref.data, pk->ref.len, present);
		}
		if (!present)
			continue;
		if (pk->base == LSMFDW_BASE_ABSENT_SKIP)
		{
			/* ON CONFLICT DO NOTHING: the other transaction's row stays */
			pk->newest->is_delete = true;
			continue;
		}

		hash_seq_term(&status);
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("duplicate key value violates the key of foreign table \"%s\"",
						ps->relname),
				 errdetail("%s was inserted by another transaction that committed first.",
						   describe_key(ps, pk->ref.data, pk->ref.len))));
	}
}

/*
 * The version of an encoded row, which the commit compares: a hash of its
 * bytes.
 */
static uint64
row_version(const char *row, size_t rowlen)
{
	return hash_bytes_extended((const unsigned char *) row, (int) rowlen, 0);
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

	if (!LsmFdwGet(ps->store, ps->relname, key, klen, &row, &rowlen))
		report_concurrent_change(ps, key, klen, false);
	version = row_version(row, rowlen);
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
	return psprintf("Key (%s)=(%s)", t->cols[t->keyattno - 1].name,
					LsmFdwKeyToString(t, key, klen));
}

/*
 * Moves pending writes out of memory if they take more than
 * lsm_fdw.pending_memory: the inserted keys of every store no scan is
 * reading, into its stage (see the file header).  Only at the top level.
 * A call that could free too little raises the bar of the next attempt.
 */
static void
maybe_spill(void)
{
	Size		limit = (Size) pending_memory_kb * 1024;
	HASH_SEQ_STATUS status;
	PendingStore *ps;

	if (pending_bytes <= Max(limit, spill_floor) || marks != NIL ||
		pending_stores == NULL)
		return;

	/* with no subtransaction, nothing in memory will be undone alone */
	undo_len = 0;
	hash_seq_init(&status, pending_stores);
	while ((ps = hash_seq_search(&status)) != NULL)
	{
		if (ps->store->scans == 0 && !LsmFdwPendingDropped(ps->relid))
			spill_store(ps);
	}
	spill_floor = pending_bytes + limit / 4;
}

/*
 * Moves the keys of ps that the transaction simply inserted (one version, a
 * put, the store lacked the key) to its stage, opening it if needed, and
 * frees their memory.
 */
static void
spill_store(PendingStore *ps)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;
	int			rc;

	open_stage(ps);
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v = pk->newest;
		char	   *key = (char *) pk->ref.data;

		if (v->older != NULL || v->is_delete || pk->base != LSMFDW_BASE_ABSENT)
			continue;
		rc = lsm_stage_put(ps->stage, pk->ref.data, pk->ref.len, v->val,
						   v->vlen);
		if (rc != LSM_OK)
		{
			hash_seq_term(&status);
			LsmFdwReportError(rc, ps->store->db, ps->relname,
							  "stage writes to");
		}
		pending_bytes -= Min(pending_bytes,
							 pk->ref.len + v->vlen + VERSION_OVERHEAD);
		(void) hash_search(ps->keys, &pk->ref, HASH_REMOVE, NULL);
		pfree((char *) v->val);
		pfree(v);
		pfree(key);
	}
}

/* Whether the stage of ps writes key (puts or deletes it). */
static bool
stage_holds(PendingStore *ps, const char *key, size_t klen)
{
	void	   *val = NULL;
	size_t		vlen;
	int			rc = lsm_stage_get(ps->stage, key, klen, &val, &vlen);

	if (val != NULL)
		lsm_free(val);
	if (rc != LSM_OK && rc != LSM_DELETED && rc != LSM_NOTFOUND)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "read");
	return rc != LSM_NOTFOUND;
}

/*
 * The unique check of the keys in ps's stage that memory does not rewrite
 * (those are checked with the others): each must still be absent from the
 * store.  REQUIRES: the commit lock, the store refreshed.
 */
static void
check_staged_inserts(PendingStore *ps)
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
			char	   *row;
			size_t		rowlen;

			CHECK_FOR_INTERRUPTS();
			if (lsm_iter_is_delete(it) ||
				find_key(ps->relid, key, klen) != NULL ||
				!LsmFdwGet(ps->store, ps->relname, key, klen, &row, &rowlen))
				continue;
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("duplicate key value violates the key of foreign table \"%s\"",
							ps->relname),
					 errdetail("%s was inserted by another transaction that committed first.",
							   describe_key(ps, key, klen))));
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
		bool		inserted = pk->base == LSMFDW_BASE_ABSENT ||
			pk->base == LSMFDW_BASE_ABSENT_SKIP;
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
 * store's commit lock, and its checks done (lock_and_check_store).  Raises
 * an error if the engine fails (the batch is freed first).
 */
static void
write_store(PendingStore *ps)
{
	HASH_SEQ_STATUS status;
	PendingKey *pk;
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

	b = lsm_batch_new();
	if (b == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errcontext("foreign table \"%s\"", ps->relname)));

	/* no PostgreSQL call below can raise an error before the batch is freed */
	hash_seq_init(&status, ps->keys);
	while ((pk = hash_seq_search(&status)) != NULL)
	{
		PendingVersion *v = pk->newest;

		if (v->is_delete && pk->base != LSMFDW_BASE_VERSION &&
			pk->base != LSMFDW_BASE_ANY)
			continue;			/* inserted, then deleted: nothing to do */
		if (v->is_delete)
			rc = lsm_batch_delete(b, pk->ref.data, pk->ref.len);
		else
			rc = lsm_batch_put(b, pk->ref.data, pk->ref.len, v->val, v->vlen);
		if (rc != LSM_OK)
		{
			hash_seq_term(&status);
			break;
		}
	}
	/* synchronous_commit = off: the WAL record is written, not synced */
	if (rc == LSM_OK && lsm_batch_count(b) > 0)
		rc = lsm_write_opt(ps->store->db, b, flags);
	lsm_batch_free(b);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, ps->store->db, ps->relname, "write");
}

/* Whether the transaction has writes for ps's store, in memory or staged. */
static bool
store_has_writes(PendingStore *ps)
{
	return hash_get_num_entries(ps->keys) > 0 ||
		(ps->stage != NULL && (lsm_stage_count(ps->stage) > 0 ||
							   lsm_stage_truncated(ps->stage)));
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
			if (ps->store != NULL)
				LsmFdwUnpinStore(ps->store);
		}
	}
	if (removals != NIL)
		remove_dirs(commit, InvalidSubTransactionId);

	xact_cxt = NULL;
	pending_stores = NULL;
	undo_log = NULL;
	undo_len = 0;
	undo_size = 0;
	marks = NIL;
	removals = NIL;
	pending_bytes = 0;
	spill_floor = 0;
}

/*
 * Transaction callback: writes the pending writes at pre-commit, refuses
 * PREPARE TRANSACTION of a transaction that wrote (the stores have no
 * two-phase commit), and ends the transaction's state at commit or abort.
 */
static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (pending_stores != NULL)
			{
				HASH_SEQ_STATUS status;
				PendingStore *ps;
				PendingStore **order;
				int			n = 0;
				int			i;

				/* in OID order, so that commit locks cannot deadlock */
				order = palloc(sizeof(PendingStore *) *
							   Max(hash_get_num_entries(pending_stores), 1));
				hash_seq_init(&status, pending_stores);
				while ((ps = hash_seq_search(&status)) != NULL)
				{
					if (store_has_writes(ps) &&
						!LsmFdwPendingDropped(ps->relid))
						order[n++] = ps;
				}
				qsort(order, n, sizeof(PendingStore *), pending_store_cmp);
				for (i = 0; i < n; i++)
					lock_and_check_store(order[i]);
				for (i = 0; i < n; i++)
					write_store(order[i]);
				pfree(order);
			}
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (has_writes() || removals != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has modified lsm_fdw foreign tables")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			end_xact(true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
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

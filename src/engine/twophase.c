/*
 * twophase.c
 *		Prepared batches: durable, invisible, decided later (two-phase
 *		commit): lsm_prepare, lsm_db_prepare_tables (a stage's tables),
 *		lsm_resolve and lsm_prepared.  docs/architecture.md, "Prepared
 *		batches", has the protocol and its crash cases; prepared.c what the
 *		records mean to the store core.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "compaction.h"
#include "db.h"
#include "env.h"
#include "lsm.h"
#include "prepared.h"
#include "twophase.h"
#include "wal.h"

/*
 * Appends record rec (of type, len bytes with its header) through the
 * write path: it takes count sequences, and the handle's write lock, held
 * by the caller (lsm_lock), stays held.
 */
static int
write_record(lsm_db *db, lsm_batch *rec, int type, uint32_t count,
			 bool sync, lsm_err *e)
{
	rec->rtype = type;
	rec->count = count;
	return lsm_db_write(db, rec, sync, true, e);
}

int
lsm_prepare(lsm_db *db, lsm_batch *b, uint64_t owner, int flags)
{
	lsm_err		e;
	lsm_batch  *rec = NULL;
	uint8_t		head[LSM_WAL_OWNER + LSM_BATCH_HEADER];
	const uint8_t *batch;
	size_t		blen;
	bool		locked;
	int			type,
				sync,
				rc;

	if (db == NULL || b == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	sync = lsm_db_sync_of(db, flags);
	if (owner == 0 || b->count == 0 || b->rtype != LSM_WAL_BATCH ||
		b->nconds > 0 || b->require != 0 || db->opt.read_only || sync < 0)
		return lsm_db_fail(db, lsm_err_set(&e, LSM_INVALID,
										   "a prepared batch needs an owner, an entry, no conditions, a handle that may write and known flags"),
						   &e);
	locked = db->user_locked;
	if (!locked && (rc = lsm_lock(db, 0)) != LSM_OK)
		return rc;

	/* [one sequence][owner][the batch, its first sequence 1] */
	lsm_put_u64(head, owner);
	lsm_put_u64(head + LSM_WAL_OWNER, 1);
	lsm_put_u32(head + LSM_WAL_OWNER + 8, b->count);
	if (lsm_memtable_prepared(db->mem, owner, &type, &batch, &blen) != LSM_NOTFOUND)
		rc = lsm_err_set(&e, LSM_EXISTS,
						 "store \"%s\" has a prepared write of owner %" PRIx64 " already",
						 db->dir, owner);
	else if ((rec = lsm_batch_new()) == NULL ||
			 lsm_buf_append(&rec->rep, head, sizeof(head)) != LSM_OK ||
			 lsm_buf_append(&rec->rep, b->rep.data + LSM_WAL_HEADER + LSM_BATCH_HEADER,
							b->rep.len - LSM_WAL_HEADER - LSM_BATCH_HEADER) != LSM_OK)
		rc = LSM_NOMEM_ERR(&e);
	else
	{
		rec->user_bytes = b->user_bytes;
		rc = write_record(db, rec, LSM_WAL_PREPARE, 1, sync, &e);
	}
	lsm_batch_free(rec);
	if (!locked)
		lsm_unlock(db);
	if (rc == LSM_OK && !(flags & LSM_WRITE_DEFER))
		return lsm_write_wait(db);
	return lsm_db_fail(db, rc, &e);
}

/*
 * The answer of a resolve that finds no undecided write of its owner:
 * never prepared, or decided, perhaps by a writer that died before its
 * record was synced, which is made durable (and visible).
 */
static int
not_prepared(lsm_db *db)
{
	lsm_err		e;

	lsm_err_clear(&e);
	if (lsm_db_sync_seen(db, &e) != LSM_OK)
		return lsm_db_fail(db, e.rc, &e);
	return LSM_NOTFOUND;
}

/*
 * Decides owner's prepared tables, whose list (a type 5 record's) is list.
 * Called under lsm_lock, which it releases.  A commit is an ingest of the
 * tables, whose manifest switch drops them from the prepared writes.  A
 * rollback is a type 4 record, synced before the tables are removed (a
 * rollback that a crash lost must find them to be made again).
 */
static int
resolve_tables(lsm_db *db, uint64_t owner, int commit, const uint8_t *list,
			   size_t len)
{
	lsm_table_meta *metas;
	lsm_batch  *rec = NULL;
	uint8_t    *copy,
				o[LSM_WAL_OWNER];
	int		   *run_of;
	bool		replace,
				installed;
	int			nruns,
				n,
				i,
				rc;
	lsm_err		e;

	lsm_err_clear(&e);
	rc = lsm_prepared_tables_decode(list, len, &copy, &metas, &run_of, &replace, &nruns,
					   &n, &e);
	if (rc == LSM_OK && !commit)
	{
		lsm_put_u64(o, owner);
		if ((rec = lsm_batch_new()) == NULL ||
			lsm_buf_append(&rec->rep, o, sizeof(o)) != LSM_OK)
			rc = LSM_NOMEM_ERR(&e);
		else
			rc = write_record(db, rec, LSM_WAL_ROLLBACK, 1, true, &e);
		lsm_batch_free(rec);
	}
	lsm_unlock(db);
	if (rc == LSM_OK && commit)
	{
		rc = lsm_db_ingest(db, NULL, metas, run_of, n, nruns, replace, owner,
						   &installed, &e);
		lsm_db_compact_if_due(db);
	}
	else if (rc == LSM_OK && (rc = lsm_write_wait(db)) == LSM_OK)
	{
		for (i = 0; i < n; i++)
			lsm_db_remove_table(db, metas[i].number);
	}
	free(copy);
	free(metas);
	free(run_of);
	if (rc == LSM_NOTFOUND)
		return not_prepared(db);	/* decided meanwhile */
	return e.rc != LSM_OK ? lsm_db_fail(db, rc, &e) : rc;
}

int
lsm_db_prepare_tables(lsm_db *db, const char *stage_dir,
					  const lsm_table_meta *tables, const int *run_of, int n,
					  int nruns, bool replace, uint64_t owner, int flags,
					  lsm_err *e)
{
	lsm_file  **files;
	lsm_batch  *rec = NULL;
	const uint8_t *batch;
	size_t		blen;
	uint8_t		o[LSM_WAL_OWNER];
	bool		locked,
				written = false;
	int			type,
				moved = 0,
				sync = lsm_db_sync_of(db, flags),
				i,
				rc;

	if (owner == 0 || db->opt.read_only || sync < 0 || (n <= 0 && !replace))
		return lsm_err_set(e, LSM_INVALID,
						   "prepared tables need an owner, a table or a replace, a handle that may write and known flags");
	if ((files = calloc((size_t) n + 1, sizeof(lsm_file *))) == NULL)
		return LSM_NOMEM_ERR(e);
	locked = db->user_locked;
	if (!locked && (rc = lsm_lock(db, 0)) != LSM_OK)
	{
		free(files);
		return lsm_err_set(e, rc, "%s", lsm_errmsg(db));
	}
	if (lsm_memtable_prepared(db->mem, owner, &type, &batch, &blen) != LSM_NOTFOUND)
		rc = lsm_err_set(e, LSM_EXISTS,
						 "store \"%s\" has a prepared write of owner %" PRIx64 " already",
						 db->dir, owner);
	else
		rc = lsm_db_move_in(db, stage_dir, tables, n, files, &moved, e);
	/* the tables' new names are durable before the record that names them */
	if (rc == LSM_OK)
		rc = lsm_env_fsync_dir(db->dir, e);
	lsm_put_u64(o, owner);
	if (rc == LSM_OK &&
		((rec = lsm_batch_new()) == NULL ||
		 lsm_buf_append(&rec->rep, o, sizeof(o)) != LSM_OK ||
		 lsm_prepared_tables_encode(&rec->rep, files, run_of, n, nruns, replace) != LSM_OK))
		rc = LSM_NOMEM_ERR(e);
	if (rc == LSM_OK)
	{
		/* type 5: one sequence, the owner, the tables */
		rc = write_record(db, rec, LSM_WAL_PREPARE_TABLES, 1, sync, e);
		/*
		 * Even when it failed, the record may be in the log (and applied by
		 * the next catch-up): the tables stay.  If it is not, the orphan
		 * sweep removes them.
		 */
		written = true;
	}
	if (rc != LSM_OK && !written)
		lsm_db_move_back(db, stage_dir, tables, files, moved);
	lsm_batch_free(rec);
	for (i = 0; i < n; i++)
		lsm_file_unref(files[i]);
	free(files);
	if (!locked)
		lsm_unlock(db);
	if (rc == LSM_OK && !(flags & LSM_WRITE_DEFER))
		rc = lsm_write_wait(db) == LSM_OK ? LSM_OK
			: lsm_err_set(e, db->err.rc, "%s", db->err.msg);
	return rc;
}

int
lsm_resolve(lsm_db *db, uint64_t owner, int commit, int flags)
{
	lsm_err		e;
	lsm_batch  *rec = NULL;
	const uint8_t *batch;
	size_t		blen;
	uint8_t		o[LSM_WAL_OWNER];
	int			type,
				sync,
				rc;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	sync = lsm_db_sync_of(db, flags);
	if (owner == 0 || db->opt.read_only || db->user_locked || sync < 0)
		return lsm_db_fail(db, lsm_err_set(&e, LSM_INVALID,
										   "lsm_resolve needs an owner, a handle that may write, known flags, and no lsm_lock held"),
						   &e);
	if ((rc = lsm_lock(db, 0)) != LSM_OK)
		return rc;
	lsm_put_u64(o, owner);
	if (lsm_memtable_prepared(db->mem, owner, &type, &batch, &blen) != LSM_OK)
	{
		lsm_unlock(db);
		return not_prepared(db);
	}
	if (type == LSM_WAL_PREPARE_TABLES)
		return resolve_tables(db, owner, commit, batch, blen);
	if ((rec = lsm_batch_new()) == NULL)
		rc = LSM_NOMEM_ERR(&e);
	else if (commit)
	{
		/* type 2: the batch at the next sequences, then its owner */
		if (lsm_buf_append(&rec->rep, batch + LSM_BATCH_HEADER,
						   blen - LSM_BATCH_HEADER) != LSM_OK ||
			lsm_buf_append(&rec->rep, o, sizeof(o)) != LSM_OK)
			rc = LSM_NOMEM_ERR(&e);
		else
		{
			rec->user_bytes = blen;
			rc = write_record(db, rec, LSM_WAL_BATCH_OF,
							  lsm_get_u32(batch + 8), sync, &e);
		}
	}
	else if (lsm_buf_append(&rec->rep, o, sizeof(o)) != LSM_OK)
		rc = LSM_NOMEM_ERR(&e);
	else
		rc = write_record(db, rec, LSM_WAL_ROLLBACK, 1, sync, &e);	/* type 4 */
	lsm_batch_free(rec);
	lsm_unlock(db);
	if (rc == LSM_OK && !(flags & LSM_WRITE_DEFER))
		return lsm_write_wait(db);
	return lsm_db_fail(db, rc, &e);
}

/* lsm_memtable_prepared_fn of lsm_prepared: collects owners. */
typedef struct owner_list
{
	uint64_t   *owners;
	size_t		max;
	size_t		n;
} owner_list;

static void
collect_owner(void *arg, uint64_t owner, int type, const uint8_t *batch,
			  size_t len)
{
	owner_list *l = arg;

	(void) type;
	(void) batch;
	(void) len;
	if (l->n < l->max)
		l->owners[l->n] = owner;
	l->n++;
}

int
lsm_prepared(lsm_db *db, uint64_t *owners, size_t max, size_t *n)
{
	owner_list	l = {owners, max, 0};

	if (db == NULL || n == NULL || (owners == NULL && max > 0))
		return LSM_INVALID;
	*n = lsm_memtable_undecided(db->mem, collect_owner, &l);
	return LSM_OK;
}

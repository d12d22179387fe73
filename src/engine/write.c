/*
 * write.c
 *		The public write calls (lsm.h): batches, single puts and deletes, and
 *		the user lock.  Each is the store core's call (db.c) followed by the
 *		compaction that the write made due (compaction.c), which is why they
 *		live above both.
 */
#include "compaction.h"
#include "db.h"
#include "lsm.h"

int
lsm_write(lsm_db *db, lsm_batch *b)
{
	return lsm_write_opt(db, b, LSM_WRITE_DEFAULT);
}

int
lsm_write_opt(lsm_db *db, lsm_batch *b, int flags)
{
	lsm_err		e;
	int			sync,
				rc;

	if (db == NULL || b == NULL)
		return LSM_INVALID;
	if ((sync = lsm_db_sync_of(db, flags)) < 0)
		return lsm_err_set(&db->err, LSM_INVALID, "unknown write flags %d",
						   flags);
	lsm_err_clear(&e);
	rc = lsm_db_write(db, b, sync, (flags & LSM_WRITE_DEFER) != 0, &e);
	lsm_db_compact_if_due(db);
	return lsm_db_fail(db, rc, &e);
}

/* The handle's one-entry batch, emptied; NULL when out of memory. */
static lsm_batch *
one_batch(lsm_db *db)
{
	if (db->one == NULL && (db->one = lsm_batch_new()) == NULL)
	{
		lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
		return NULL;
	}
	lsm_batch_clear(db->one);
	return db->one;
}

int
lsm_put(lsm_db *db, const void *key, size_t klen, const void *val, size_t vlen)
{
	lsm_batch  *b;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	if ((b = one_batch(db)) == NULL)
		return LSM_NOMEM;
	rc = lsm_batch_put(b, key, klen, val, vlen);
	if (rc != LSM_OK)
		return lsm_err_set(&db->err, rc, "invalid key or value length");
	return lsm_write(db, b);
}

int
lsm_delete(lsm_db *db, const void *key, size_t klen)
{
	lsm_batch  *b;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	if ((b = one_batch(db)) == NULL)
		return LSM_NOMEM;
	rc = lsm_batch_delete(b, key, klen);
	if (rc != LSM_OK)
		return lsm_err_set(&db->err, rc, "invalid key length");
	return lsm_write(db, b);
}

int
lsm_lock(lsm_db *db, int flags)
{
	return lsm_db_user_lock(db, flags, NULL);
}

int
lsm_lock_batch(lsm_db *db, int flags, lsm_batch *b)
{
	return lsm_db_user_lock(db, flags, b);
}

void
lsm_unlock(lsm_db *db)
{
	lsm_db_user_unlock(db);
	/* what a flush under the lock left to compact, now that others write */
	lsm_db_compact_if_due(db);
}

/*
 * prepared.c
 *		Prepared batches: durable, invisible, decided later (two-phase
 *		commit).  docs/architecture.md, "Prepared batches", has the protocol
 *		and its crash cases.
 *
 * A prepared batch is a log record of type 3 (wal.h): the batch and its
 * owner, taking one sequence.  Applying it keeps the batch aside in the
 * memtable (its list of prepared batches, in the region, so that every
 * process sees it); a commit is a record of type 2, the batch at the next
 * sequences and the owner, whose entries go into the memtable like any
 * batch's; a rollback is a record of type 4, the owner alone.  Both mark
 * the owner's batch decided.  A flush writes the undecided ones into the
 * new log before the switch that drops the old one (lsm_prepared_carry),
 * so that the current memtable always lists every undecided batch.
 *
 * Each handle keeps a hash table of the keys of the undecided batches, for
 * lsm_prepared_holds, built again when the memtable or its list changed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "env.h"
#include "lsm.h"
#include "memtable.h"
#include "wal.h"

/* The owner and batch of a type 3 record follow its one-sequence header. */
#define PREP_HEAD (LSM_BATCH_HEADER + LSM_WAL_OWNER)

/* One key of an undecided batch, in the handle's open-addressing table. */
typedef struct prep_key
{
	uint64_t	hash;
	const uint8_t *key;			/* NULL: an empty slot */
	size_t		klen;
	uint64_t	owner;
} prep_key;

typedef struct lsm_prepared_keys
{
	lsm_memtable *mem;			/* the memtable they are in (a reference) */
	uint64_t	changes;		/* its lsm_memtable_prepared_changes then */
	prep_key   *slots;
	size_t		mask;			/* slots - 1; no slots when no key */
	size_t		used;
	uint64_t	owner;			/* the batch being indexed (index_key) */
	int			rc;
} lsm_prepared_keys;

void
lsm_prepared_close(lsm_db *db)
{
	lsm_prepared_keys *k = db->prepared;

	if (k == NULL)
		return;
	lsm_memtable_unref(k->mem);
	free(k->slots);
	free(k);
	db->prepared = NULL;
}

/* lsm_batch_fn: one key into the table (which has room: index_batch). */
static int
index_key(void *arg, uint64_t seq, int kind, const uint8_t *key, size_t klen,
		  const uint8_t *val, size_t vlen)
{
	lsm_prepared_keys *k = arg;
	uint64_t	h = lsm_key_hash(key, klen);
	size_t		i;

	(void) seq;
	(void) kind;
	(void) val;
	(void) vlen;
	for (i = h & k->mask; k->slots[i].key != NULL; i = (i + 1) & k->mask)
		;
	k->slots[i].hash = h;
	k->slots[i].key = key;
	k->slots[i].klen = klen;
	k->slots[i].owner = k->owner;
	k->used++;
	return LSM_OK;
}

/* lsm_memtable_prepared_fn: counts the keys (first pass) */
static void
count_keys(void *arg, uint64_t owner, const uint8_t *batch, size_t len)
{
	(void) owner;
	(void) len;
	*(size_t *) arg += lsm_get_u32(batch + 8);
}

/* lsm_memtable_prepared_fn: indexes the keys of one batch */
static void
index_batch(void *arg, uint64_t owner, const uint8_t *batch, size_t len)
{
	lsm_prepared_keys *k = arg;
	lsm_err		e;

	k->owner = owner;
	lsm_err_clear(&e);
	if (k->rc == LSM_OK)
		k->rc = lsm_batch_iterate(batch, len, index_key, k, &e);
}

/*
 * The handle's key table, for its current memtable as it is now: kept while
 * neither changed, else built again.  NULL when out of memory.
 */
static lsm_prepared_keys *
prepared_keys(lsm_db *db)
{
	lsm_prepared_keys *k = db->prepared;
	uint64_t	changes = lsm_memtable_prepared_changes(db->mem);
	size_t		total = 0,
				slots = 16;

	if (k != NULL && k->mem == db->mem && k->changes == changes)
		return k;
	lsm_prepared_close(db);
	(void) lsm_memtable_undecided(db->mem, count_keys, &total);
	while (slots < 2 * total)
		slots *= 2;
	k = calloc(1, sizeof(*k));
	if (k == NULL || (total > 0 && (k->slots = calloc(slots, sizeof(prep_key))) == NULL))
	{
		free(k);
		return NULL;
	}
	k->mem = db->mem;
	lsm_memtable_ref(k->mem);
	k->changes = changes;
	k->mask = slots - 1;
	if (total > 0)
		(void) lsm_memtable_undecided(db->mem, index_batch, k);
	db->prepared = k;
	return k;
}

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

/* Whether flags (LSM_WRITE_*) ask for a sync; -1 if they are unknown. */
static int
sync_of(lsm_db *db, int flags)
{
	int			how = flags & ~LSM_WRITE_DEFER;

	if (how == LSM_WRITE_DEFAULT)
		return db->opt.sync != 0;
	if (how == LSM_WRITE_SYNC || how == LSM_WRITE_NOSYNC)
		return how == LSM_WRITE_SYNC;
	return -1;
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
	int			sync,
				rc;

	if (db == NULL || b == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	sync = sync_of(db, flags);
	if (owner == 0 || b->count == 0 || b->rtype != LSM_WAL_BATCH ||
		db->opt.read_only || sync < 0)
		return lsm_db_fail(db, lsm_err_set(&e, LSM_INVALID,
										   "a prepared batch needs an owner, an entry, a handle that may write and known flags"),
						   &e);
	locked = db->user_locked;
	if (!locked && (rc = lsm_lock(db, 0)) != LSM_OK)
		return rc;

	/* [one sequence][owner][the batch, its first sequence 1] */
	lsm_put_u64(head, owner);
	lsm_put_u64(head + LSM_WAL_OWNER, 1);
	lsm_put_u32(head + LSM_WAL_OWNER + 8, b->count);
	if (lsm_memtable_prepared(db->mem, owner, &batch, &blen) != LSM_NOTFOUND)
		rc = lsm_err_set(&e, LSM_EXISTS,
						 "store \"%s\" has a prepared batch of owner %" PRIx64 " already",
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

int
lsm_resolve(lsm_db *db, uint64_t owner, int commit, int flags)
{
	lsm_err		e;
	lsm_batch  *rec = NULL;
	const uint8_t *batch;
	size_t		blen;
	uint8_t		o[LSM_WAL_OWNER];
	int			sync,
				rc;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	sync = sync_of(db, flags);
	if (owner == 0 || db->opt.read_only || db->user_locked || sync < 0)
		return lsm_db_fail(db, lsm_err_set(&e, LSM_INVALID,
										   "lsm_resolve needs an owner, a handle that may write, known flags, and no lsm_lock held"),
						   &e);
	if ((rc = lsm_lock(db, 0)) != LSM_OK)
		return rc;
	lsm_put_u64(o, owner);
	if (lsm_memtable_prepared(db->mem, owner, &batch, &blen) != LSM_OK)
	{
		/*
		 * Never prepared, or decided: perhaps by a writer that died before
		 * its record was synced, which we make durable (and visible).
		 */
		lsm_unlock(db);
		if (lsm_db_sync_seen(db, &e) != LSM_OK)
			return lsm_db_fail(db, e.rc, &e);
		return LSM_NOTFOUND;
	}
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
collect_owner(void *arg, uint64_t owner, const uint8_t *batch, size_t len)
{
	owner_list *l = arg;

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

int
lsm_prepared_holds(lsm_db *db, const void *key, size_t klen, uint64_t *owner)
{
	lsm_prepared_keys *k;
	uint64_t	h;
	size_t		i;

	if (db == NULL || key == NULL)
		return LSM_INVALID;
	if (lsm_memtable_undecided(db->mem, NULL, NULL) == 0)
		return LSM_NOTFOUND;
	if ((k = prepared_keys(db)) == NULL)
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	if (k->rc != LSM_OK)
		return lsm_err_set(&db->err, k->rc, "a prepared batch is malformed");
	if (k->used == 0)
		return LSM_NOTFOUND;
	h = lsm_key_hash(key, klen);
	for (i = h & k->mask; k->slots[i].key != NULL; i = (i + 1) & k->mask)
	{
		prep_key   *s = &k->slots[i];

		if (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0)
		{
			if (owner)
				*owner = s->owner;
			return LSM_OK;
		}
	}
	return LSM_NOTFOUND;
}

/* The state of lsm_prepared_carry, through lsm_memtable_undecided. */
typedef struct carry
{
	lsm_memtable *to;
	int			logfd;
	const char *name;
	uint64_t	seq;			/* the last sequence taken */
	uint64_t	off;
	lsm_buf		rec;
	int			rc;
	lsm_err    *e;
} carry;

/* lsm_memtable_prepared_fn: one undecided batch into the new log */
static void
carry_one(void *arg, uint64_t owner, const uint8_t *batch, size_t len)
{
	carry	   *c = arg;
	uint8_t		head[LSM_WAL_HEADER + PREP_HEAD];

	if (c->rc != LSM_OK)
		return;
	c->seq++;
	memset(head, 0, LSM_WAL_HEADER);
	lsm_put_u64(head + LSM_WAL_HEADER, c->seq);
	lsm_put_u32(head + LSM_WAL_HEADER + 8, 1);
	lsm_put_u64(head + LSM_WAL_HEADER + LSM_BATCH_HEADER, owner);
	c->rec.len = 0;
	if (lsm_buf_append(&c->rec, head, sizeof(head)) != LSM_OK ||
		lsm_buf_append(&c->rec, batch, len) != LSM_OK)
	{
		c->rc = LSM_NOMEM_ERR(c->e);
		return;
	}
	c->rc = lsm_wal_append(c->logfd, NULL, c->name, c->off, LSM_WAL_PREPARE,
						   c->rec.data, c->rec.len, c->e);
	if (c->rc == LSM_OK &&
		lsm_memtable_add_prepared(c->to, owner, batch, len) != LSM_OK)
		c->rc = lsm_err_set(c->e, LSM_NOMEM,
							"the new memtable has no room for the prepared batches");
	c->off += c->rec.len;
}

int
lsm_prepared_carry(lsm_memtable *from, lsm_memtable *to, int logfd,
				   const char *name, uint64_t seq, uint64_t *off,
				   uint64_t *used, lsm_err *e)
{
	carry		c;

	memset(&c, 0, sizeof(c));
	c.to = to;
	c.logfd = logfd;
	c.name = name;
	c.seq = seq;
	c.e = e;
	*off = *used = 0;
	if (lsm_memtable_undecided(from, carry_one, &c) == 0)
		return LSM_OK;
	lsm_buf_free(&c.rec);
	if (c.rc == LSM_OK)
		c.rc = lsm_env_fsync(logfd, name, e);
	if (c.rc != LSM_OK)
		return c.rc;
	*off = c.off;
	*used = c.seq - seq;
	return LSM_OK;
}

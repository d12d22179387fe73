/*
 * prepared.c
 *		What the memtable's prepared records mean to the store core: the
 *		list of tables a type 5 record names (its codec), the keys and tables
 *		an undecided prepared write holds (lsm_prepared_holds), the files it
 *		keeps from the orphan sweep (lsm_prepared_names), and carrying the
 *		undecided ones into a new log at a flush (lsm_prepared_carry).  The
 *		operations that prepare and decide are in twophase.c, above the store
 *		core.  docs/architecture.md, "Prepared batches", has the protocol and
 *		its crash cases.
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
 * Writes too large for a batch (a stage's sorted runs, stage.c) are
 * prepared as tables: lsm_db_prepare_tables moves the stage's tables into
 * the store directory under fresh numbers and appends a record of type 5
 * that lists them (numbers, runs, key ranges, sizes).  The memtable lists
 * it like a batch, so that it is carried by flushes and replayed the same
 * way; the orphan sweep keeps the tables it names (lsm_prepared_names).
 * Its commit is an ingest of those tables (lsm_db_ingest) whose manifest
 * switch drops the record from the new log; a rollback is a record of type
 * 4, after which the tables are removed.
 *
 * Each handle keeps a hash table of the keys of the undecided batches, and
 * the opened tables of the undecided prepared tables, for
 * lsm_prepared_holds, built again when the memtable or its list changed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "env.h"
#include "lsm.h"
#include "memtable.h"
#include "prepared.h"
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

/* One table of undecided prepared tables, opened. */
typedef struct prep_table
{
	uint64_t	owner;
	bool		replace;		/* they replace the store: hold every key */
	uint64_t	number,			/* its file's */
				size;
	lsm_table  *table;			/* NULL for the entry of a replace */
	uint8_t    *smallest,
			   *largest;		/* its key range (malloc'd) */
	size_t		smallest_len,
				largest_len;
} prep_table;

typedef struct lsm_prepared_keys
{
	lsm_memtable *mem;			/* the memtable they are in (a reference) */
	uint64_t	changes;		/* its lsm_memtable_prepared_changes then */
	prep_key   *slots;
	size_t		mask;			/* slots - 1; no slots when no key */
	size_t		used;
	uint64_t	owner;			/* the batch being indexed (index_key) */
	const char *dir;			/* the store's, to open tables in */
	prep_table *tables;
	int			ntables;
	struct lsm_prepared_keys *old;	/* the index before, whose opened
									 * tables are taken over */
	int			rc;
	lsm_err		err;			/* why rc */
} lsm_prepared_keys;

/* Frees the key index k. */
static void
keys_free(lsm_prepared_keys *k)
{
	int			i;

	for (i = 0; i < k->ntables; i++)
	{
		if (k->tables[i].table)
			lsm_table_unref(k->tables[i].table);
		free(k->tables[i].smallest);
		free(k->tables[i].largest);
	}
	free(k->tables);
	lsm_memtable_unref(k->mem);
	free(k->slots);
	free(k);
}

void
lsm_prepared_close(lsm_db *db)
{
	if (db->prepared != NULL)
		keys_free(db->prepared);
	db->prepared = NULL;
}

/*
 * Opens table t of k's store, or takes it over from the index before
 * (which stays valid: its entry is cleared) if that had it open, for the
 * same owner: a number freed by a rollback may name another table later.
 */
static int
open_table(lsm_prepared_keys *k, prep_table *t)
{
	int			i;

	for (i = 0; k->old != NULL && i < k->old->ntables; i++)
	{
		prep_table *o = &k->old->tables[i];

		if (o->table != NULL && o->owner == t->owner &&
			o->number == t->number && o->size == t->size)
		{
			t->table = o->table;
			o->table = NULL;
			return LSM_OK;
		}
	}
	return lsm_table_open(k->dir, t->number, 0, &t->table, &k->err);
}

/* ---------- lists of tables (type 5 records) ---------- */

/* Bytes of a table's entry in a list, keys not counted. */
#define TABLE_FIXED (8 + 4 + 5 * 8 + 4 + 4)

/*
 * Decodes a list of prepared tables (wal.h, type 5): *replace, *nruns,
 * *n, and if metas is not NULL metas[0 .. *n) (keys pointing into list)
 * and run_of[].  LSM_CORRUPTION if it is malformed.
 */
static int
tables_parse(const uint8_t *p, size_t len, bool *replace, int *nruns, int *n,
			 lsm_table_meta *metas, int *run_of, lsm_err *e)
{
	uint32_t	flags,
				runs,
				count,
				i;
	size_t		pos = LSM_WAL_TABLES_HEAD;

	if (len < LSM_WAL_TABLES_HEAD)
		return LSM_CORRUPT(e, "list of prepared tables cut short");
	flags = lsm_get_u32(p);
	runs = lsm_get_u32(p + 4);
	count = lsm_get_u32(p + 8);
	if (flags > 1 || count > (len - pos) / TABLE_FIXED ||
		(count > 0 && (runs == 0 || runs > count)) ||
		(count == 0 && (flags != 1 || runs != 0)))
		return LSM_CORRUPT(e, "malformed list of prepared tables");
	for (i = 0; i < count; i++)
	{
		lsm_table_meta m;
		uint32_t	run,
					slen,
					llen;

		memset(&m, 0, sizeof(m));
		if (len - pos < TABLE_FIXED)
			return LSM_CORRUPT(e, "list of prepared tables cut short");
		m.number = lsm_get_u64(p + pos);
		run = lsm_get_u32(p + pos + 8);
		m.size = lsm_get_u64(p + pos + 12);
		m.entries = lsm_get_u64(p + pos + 20);
		m.deletions = lsm_get_u64(p + pos + 28);
		m.filter_bytes = lsm_get_u64(p + pos + 36);
		m.value_filter_bytes = lsm_get_u64(p + pos + 44);
		slen = lsm_get_u32(p + pos + 52);
		pos += 56;
		if (slen == 0 || slen > LSM_MAX_KEY_LEN || len - pos < (size_t) slen + 4)
			return LSM_CORRUPT(e, "malformed key range of prepared table");
		m.smallest = (uint8_t *) p + pos;
		m.smallest_len = slen;
		pos += slen;
		llen = lsm_get_u32(p + pos);
		pos += 4;
		if (llen == 0 || llen > LSM_MAX_KEY_LEN || len - pos < llen)
			return LSM_CORRUPT(e, "malformed key range of prepared table");
		m.largest = (uint8_t *) p + pos;
		m.largest_len = llen;
		pos += llen;
		if (run >= runs || m.number == 0 ||
			lsm_key_cmp(m.smallest, slen, m.largest, llen) > 0)
			return LSM_CORRUPT(e, "malformed entry of prepared table %llu",
							   (unsigned long long) m.number);
		if (metas)
		{
			metas[i] = m;
			run_of[i] = (int) run;
		}
	}
	if (pos != len)
		return LSM_CORRUPT(e, "list of prepared tables has trailing bytes");
	*replace = flags == 1;
	*nruns = (int) runs;
	*n = (int) count;
	return LSM_OK;
}

int
lsm_prepared_tables_check(const uint8_t *list, size_t len, lsm_err *e)
{
	bool		replace;
	int			nruns,
				n;

	return tables_parse(list, len, &replace, &nruns, &n, NULL, NULL, e);
}

int
lsm_prepared_tables_decode(const uint8_t *list, size_t len, uint8_t **copy,
			  lsm_table_meta **metas, int **run_of, bool *replace,
			  int *nruns, int *n, lsm_err *e)
{
	int			rc;

	*metas = NULL;
	*run_of = NULL;
	if ((*copy = lsm_memdup(list, len)) == NULL)
		return LSM_NOMEM_ERR(e);
	rc = tables_parse(*copy, len, replace, nruns, n, NULL, NULL, e);
	if (rc == LSM_OK &&
		((*metas = calloc((size_t) *n + 1, sizeof(lsm_table_meta))) == NULL ||
		 (*run_of = calloc((size_t) *n + 1, sizeof(int))) == NULL))
		rc = LSM_NOMEM_ERR(e);
	if (rc == LSM_OK)
		rc = tables_parse(*copy, len, replace, nruns, n, *metas, *run_of, e);
	return rc;
}

int
lsm_prepared_tables_encode(lsm_buf *b, lsm_file *const *files, const int *run_of, int n,
			  int nruns, bool replace)
{
	uint8_t		head[LSM_WAL_TABLES_HEAD],
				fixed[56];
	int			i;

	lsm_put_u32(head, replace ? 1 : 0);
	lsm_put_u32(head + 4, (uint32_t) nruns);
	lsm_put_u32(head + 8, (uint32_t) n);
	if (lsm_buf_append(b, head, sizeof(head)) != LSM_OK)
		return LSM_NOMEM;
	for (i = 0; i < n; i++)
	{
		const lsm_table_meta *m = &files[i]->meta;
		uint8_t		llen[4];

		lsm_put_u64(fixed, m->number);
		lsm_put_u32(fixed + 8, (uint32_t) run_of[i]);
		lsm_put_u64(fixed + 12, m->size);
		lsm_put_u64(fixed + 20, m->entries);
		lsm_put_u64(fixed + 28, m->deletions);
		lsm_put_u64(fixed + 36, m->filter_bytes);
		lsm_put_u64(fixed + 44, m->value_filter_bytes);
		lsm_put_u32(fixed + 52, (uint32_t) m->smallest_len);
		lsm_put_u32(llen, (uint32_t) m->largest_len);
		if (lsm_buf_append(b, fixed, sizeof(fixed)) != LSM_OK ||
			lsm_buf_append(b, m->smallest, m->smallest_len) != LSM_OK ||
			lsm_buf_append(b, llen, sizeof(llen)) != LSM_OK ||
			lsm_buf_append(b, m->largest, m->largest_len) != LSM_OK)
			return LSM_NOMEM;
	}
	return LSM_OK;
}

/* lsm_memtable_prepared_fn of lsm_prepared_names */
typedef struct names_arg
{
	uint64_t	number;
	bool		found;
} names_arg;

static void
names_one(void *arg, uint64_t owner, int type, const uint8_t *list, size_t len)
{
	names_arg  *a = arg;
	lsm_table_meta *metas;
	int		   *run_of;
	uint8_t    *copy;
	bool		replace;
	int			nruns,
				n,
				i;
	lsm_err		e;

	(void) owner;
	if (type != LSM_WAL_PREPARE_TABLES || a->found)
		return;
	lsm_err_clear(&e);
	/* out of memory: keep the file (the sweep runs again) */
	if (lsm_prepared_tables_decode(list, len, &copy, &metas, &run_of, &replace, &nruns,
					  &n, &e) != LSM_OK)
		a->found = e.rc != LSM_CORRUPTION;
	else
		for (i = 0; i < n; i++)
			if (metas[i].number == a->number)
				a->found = true;
	free(copy);
	free(metas);
	free(run_of);
}

bool
lsm_prepared_names(lsm_db *db, uint64_t number)
{
	names_arg	a = {number, false};

	(void) lsm_memtable_undecided(db->mem, names_one, &a);
	return a.found;
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

/* lsm_memtable_prepared_fn: counts the keys of batches (first pass) */
static void
count_keys(void *arg, uint64_t owner, int type, const uint8_t *batch,
		   size_t len)
{
	(void) owner;
	(void) len;
	if (type == LSM_WAL_PREPARE)
		*(size_t *) arg += lsm_get_u32(batch + 8);
}

/* Opens the tables of one list (type 5) into k->tables. */
static int
open_tables(lsm_prepared_keys *k, uint64_t owner, const uint8_t *list,
			size_t len)
{
	lsm_table_meta *metas;
	int		   *run_of;
	uint8_t    *copy;
	prep_table *more;
	bool		replace;
	int			nruns,
				n,
				i,
				rc;

	rc = lsm_prepared_tables_decode(list, len, &copy, &metas, &run_of, &replace, &nruns,
					   &n, &k->err);
	if (rc == LSM_OK &&
		(more = realloc(k->tables, sizeof(prep_table) * (size_t) (k->ntables + n + 1))) == NULL)
		rc = LSM_NOMEM_ERR(&k->err);
	if (rc == LSM_OK)
	{
		k->tables = more;
		if (replace)
		{
			memset(&k->tables[k->ntables], 0, sizeof(prep_table));
			k->tables[k->ntables].owner = owner;
			k->tables[k->ntables++].replace = true;
		}
		for (i = 0; i < n && rc == LSM_OK; i++)
		{
			prep_table *t = &k->tables[k->ntables];

			memset(t, 0, sizeof(*t));
			t->owner = owner;
			t->number = metas[i].number;
			t->size = metas[i].size;
			t->smallest = lsm_memdup(metas[i].smallest, metas[i].smallest_len);
			t->largest = lsm_memdup(metas[i].largest, metas[i].largest_len);
			t->smallest_len = metas[i].smallest_len;
			t->largest_len = metas[i].largest_len;
			k->ntables++;
			if (t->smallest == NULL || t->largest == NULL)
				rc = LSM_NOMEM_ERR(&k->err);
			else
				rc = open_table(k, t);
		}
	}
	free(copy);
	free(metas);
	free(run_of);
	return rc;
}

/* lsm_memtable_prepared_fn: indexes the keys of one batch, or its tables */
static void
index_batch(void *arg, uint64_t owner, int type, const uint8_t *batch,
			size_t len)
{
	lsm_prepared_keys *k = arg;

	k->owner = owner;
	if (k->rc != LSM_OK)
		return;
	if (type == LSM_WAL_PREPARE_TABLES)
		k->rc = open_tables(k, owner, batch, len);
	else
		k->rc = lsm_batch_iterate(batch, len, index_key, k, &k->err);
}

/*
 * The handle's key table, for its current memtable as it is now: kept while
 * neither changed, else built again (taking over the tables it had open).
 * NULL when out of memory.
 */
static lsm_prepared_keys *
prepared_keys(lsm_db *db)
{
	lsm_prepared_keys *k = db->prepared,
			   *old = k;
	uint64_t	changes = lsm_memtable_prepared_changes(db->mem);
	size_t		total = 0,
				slots = 16;

	if (k != NULL && k->mem == db->mem && k->changes == changes)
		return k;
	db->prepared = NULL;
	(void) lsm_memtable_undecided(db->mem, count_keys, &total);
	while (slots < 2 * total)
		slots *= 2;
	k = calloc(1, sizeof(*k));
	if (k == NULL || (total > 0 && (k->slots = calloc(slots, sizeof(prep_key))) == NULL))
	{
		free(k);
		if (old != NULL)
			keys_free(old);
		return NULL;
	}
	k->mem = db->mem;
	lsm_memtable_ref(k->mem);
	k->changes = changes;
	k->mask = slots - 1;
	k->dir = db->dir;
	k->old = old;
	lsm_err_clear(&k->err);
	(void) lsm_memtable_undecided(db->mem, index_batch, k);
	k->old = NULL;
	if (old != NULL)
		keys_free(old);
	db->prepared = k;
	return k;
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
		return lsm_err_set(&db->err, k->rc, "could not read the prepared writes of store \"%s\": %s",
						   db->dir, k->err.msg);
	h = lsm_key_hash(key, klen);
	for (i = h & k->mask; k->used > 0 && k->slots[i].key != NULL;
		 i = (i + 1) & k->mask)
	{
		prep_key   *s = &k->slots[i];

		if (s->hash == h && s->klen == klen && memcmp(s->key, key, klen) == 0)
		{
			if (owner)
				*owner = s->owner;
			return LSM_OK;
		}
	}
	/* prepared tables: the key filter, then the table (deletes count) */
	for (i = 0; i < (size_t) k->ntables; i++)
	{
		prep_table *t = &k->tables[i];
		lsm_table_hit hit;
		lsm_err		e;
		int			rc = LSM_OK;

		if (!t->replace)
		{
			if (lsm_key_cmp(key, klen, t->smallest, t->smallest_len) < 0 ||
				lsm_key_cmp(key, klen, t->largest, t->largest_len) > 0 ||
				!lsm_table_may_contain(t->table, h))
				continue;
			lsm_err_clear(&e);
			rc = lsm_table_get(t->table, key, klen, &hit, &e);
			if (rc == LSM_NOTFOUND)
				continue;
			if (rc != LSM_OK)
				return lsm_err_set(&db->err, rc, "%s", e.msg);
		}
		if (owner)
			*owner = t->owner;
		return LSM_OK;
	}
	return LSM_NOTFOUND;
}

/* The state of lsm_prepared_carry, through lsm_memtable_undecided. */
typedef struct carry
{
	lsm_memtable *to;
	int			logfd;
	const char *name;
	uint64_t	skip;			/* an owner not to carry, or 0 */
	uint64_t	seq;			/* the last sequence taken */
	uint64_t	off;
	lsm_buf		rec;
	int			rc;
	lsm_err    *e;
} carry;

/* lsm_memtable_prepared_fn: one undecided batch into the new log */
static void
carry_one(void *arg, uint64_t owner, int type, const uint8_t *batch,
		  size_t len)
{
	carry	   *c = arg;
	uint8_t		head[LSM_WAL_HEADER + PREP_HEAD];

	if (c->rc != LSM_OK || owner == c->skip)
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
	c->rc = lsm_wal_append(c->logfd, NULL, c->name, c->off, type,
						   c->rec.data, c->rec.len, c->e);
	if (c->rc == LSM_OK &&
		lsm_memtable_add_prepared(c->to, owner, type, batch, len) != LSM_OK)
		c->rc = lsm_err_set(c->e, LSM_NOMEM,
							"the new memtable has no room for the prepared batches");
	c->off += c->rec.len;
}

int
lsm_prepared_carry(lsm_memtable *from, lsm_memtable *to, int logfd,
				   const char *name, uint64_t seq, uint64_t skip,
				   uint64_t *off, uint64_t *used, lsm_err *e)
{
	carry		c;

	memset(&c, 0, sizeof(c));
	c.to = to;
	c.logfd = logfd;
	c.name = name;
	c.skip = skip;
	c.seq = seq;
	c.e = e;
	*off = *used = 0;
	if (lsm_memtable_undecided(from, carry_one, &c) == 0 || c.seq == seq)
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

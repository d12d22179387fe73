/*
 * prepared.c
 *		Prepared batches: durable, invisible, decided later (two-phase
 *		commit).  docs/architecture.md, "Prepared batches", has the protocol
 *		and its crash cases.
 *
 * A prepared batch is a file of the store directory, prepared.<owner in 16
 * hex digits>:
 *
 *		[magic u64 "LSMPREP1"][checksum u32 of the rest][payload length u32]
 *		[owner u64][payload]
 *
 * where the payload is a log record's batch payload (wal.h) whose first
 * sequence is 0: sequences are given when it is resolved.  It is written as
 * prepared.<owner>.tmp and renamed into place under the write lock.
 *
 * Each handle keeps the store's prepared set: the batches of the files it
 * read the last time LOCK's prepared_gen moved, less the owners that the
 * current memtable lists as resolved (a record of type 2 in its log), with
 * a hash table of their keys for lsm_prepared_holds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db.h"
#include "env.h"
#include "lsm.h"
#include "memtable.h"
#include "wal.h"

#define PREP_MAGIC UINT64_C(0x3150455250534d4c)	/* "LSMPREP1" */
#define PREP_HEADER 24
#define PREP_PREFIX "prepared."
#define PREP_NAME_LEN (sizeof(PREP_PREFIX) - 1 + 16)

/* One prepared batch of the set. */
typedef struct prep_batch
{
	uint64_t	owner;
	uint8_t    *payload;		/* the batch payload, its sequence 1; NULL:
								 * the file is damaged */
	size_t		len;
} prep_batch;

/* One key of a prepared batch, in the set's open-addressing table. */
typedef struct prep_key
{
	uint64_t	hash;			/* lsm_key_hash; 0 with key NULL: empty */
	const uint8_t *key;
	size_t		klen;
	uint64_t	owner;
} prep_key;

typedef struct lsm_prepared_set
{
	prep_batch *batches;
	size_t		n;
	prep_key   *keys;
	size_t		mask;			/* slots - 1; slots = 0 when no key */
} lsm_prepared_set;

static void
prep_name(uint64_t owner, bool tmp, char *buf, size_t n)
{
	snprintf(buf, n, PREP_PREFIX "%016" PRIx64 "%s", owner, tmp ? ".tmp" : "");
}

static void
prep_path(const lsm_db *db, uint64_t owner, bool tmp, char *buf, size_t n)
{
	char		name[40];

	prep_name(owner, tmp, name, sizeof(name));
	snprintf(buf, n, "%s/%s", db->dir, name);
}

/* The owner a directory entry names, if it is a prepared batch's file. */
static bool
prep_owner_of(const char *name, uint64_t *owner)
{
	uint64_t	o = 0;
	size_t		i;

	if (strlen(name) != PREP_NAME_LEN ||
		strncmp(name, PREP_PREFIX, sizeof(PREP_PREFIX) - 1) != 0)
		return false;
	for (i = sizeof(PREP_PREFIX) - 1; i < PREP_NAME_LEN; i++)
	{
		char		c = name[i];

		if (c >= '0' && c <= '9')
			o = o << 4 | (uint64_t) (c - '0');
		else if (c >= 'a' && c <= 'f')
			o = o << 4 | (uint64_t) (c - 'a' + 10);
		else
			return false;
	}
	*owner = o;
	return o != 0;
}

bool
lsm_prepared_file(const char *name)
{
	uint64_t	owner;

	return prep_owner_of(name, &owner);
}

bool
lsm_prepared_tmp_file(const char *name)
{
	char		base[PREP_NAME_LEN + 1];
	uint64_t	owner;

	if (strlen(name) != PREP_NAME_LEN + 4 ||
		strcmp(name + PREP_NAME_LEN, ".tmp") != 0)
		return false;
	memcpy(base, name, PREP_NAME_LEN);
	base[PREP_NAME_LEN] = '\0';
	return prep_owner_of(base, &owner);
}

static void
set_free(lsm_prepared_set *s)
{
	size_t		i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++)
		free(s->batches[i].payload);
	free(s->batches);
	free(s->keys);
	free(s);
}

void
lsm_prepared_close(lsm_db *db)
{
	set_free(db->prepared);
	db->prepared = NULL;
	if (db->prepare_fd >= 0)
		lsm_env_close(db->prepare_fd);
	db->prepare_fd = -1;
}

/*
 * Reads the prepared batch of owner: LSM_OK with *payload (malloc'ed, its
 * sequence set to 1 so that it reads as a batch) and *len, LSM_NOTFOUND if
 * the file is gone, LSM_CORRUPTION if it is not a whole prepared batch of
 * owner, or another error.
 */
static int
read_prepared(const lsm_db *db, uint64_t owner, uint8_t **payload,
			  size_t *len, lsm_err *e)
{
	char		path[4096];
	uint8_t    *f = NULL;
	struct stat st;
	size_t		n = 0;
	int			fd,
				rc;

	*payload = NULL;
	prep_path(db, owner, false, path, sizeof(path));
	rc = lsm_env_open(path, O_RDONLY, 0, &fd, e);
	if (rc != LSM_OK)
		return rc;
	if (fstat(fd, &st) != 0)
		rc = lsm_err_sys(e, errno, "could not stat \"%s\"", path);
	else if ((uint64_t) st.st_size < PREP_HEADER + LSM_BATCH_HEADER ||
			 (uint64_t) st.st_size > PREP_HEADER + (uint64_t) UINT32_MAX)
		rc = LSM_CORRUPT(e, "prepared batch \"%s\" is %lld bytes long",
						 path, (long long) st.st_size);
	else if ((f = malloc((size_t) st.st_size)) == NULL)
		rc = LSM_NOMEM_ERR(e);
	else
		rc = lsm_env_pread(fd, f, (size_t) st.st_size, 0, path, e);
	lsm_env_close(fd);
	if (rc == LSM_OK)
	{
		n = (size_t) st.st_size - PREP_HEADER;
		if (lsm_get_u64(f) != PREP_MAGIC || lsm_get_u32(f + 12) != n ||
			lsm_get_u64(f + 16) != owner ||
			lsm_checksum(f + 12, (size_t) st.st_size - 12) != lsm_get_u32(f + 8))
			rc = LSM_CORRUPT(e, "prepared batch \"%s\" is torn or damaged", path);
		else
		{
			memmove(f, f + PREP_HEADER, n);
			lsm_put_u64(f, 1);
			if (lsm_batch_check(f, n, e) != LSM_OK)
				rc = LSM_CORRUPT(e, "prepared batch \"%s\" holds a malformed batch", path);
		}
	}
	if (rc != LSM_OK)
	{
		free(f);
		return rc;
	}
	*payload = f;
	*len = n;
	return LSM_OK;
}

/* Where index_key puts the keys of one batch. */
typedef struct index_ctx
{
	lsm_prepared_set *s;
	uint64_t	owner;
} index_ctx;

/* lsm_batch_fn of index_keys: one key into the table. */
static int
index_key(void *arg, uint64_t seq, int kind, const uint8_t *key, size_t klen,
		  const uint8_t *val, size_t vlen)
{
	index_ctx  *c = arg;
	lsm_prepared_set *s = c->s;
	uint64_t	h = lsm_key_hash(key, klen);
	size_t		i;

	(void) seq;
	(void) kind;
	(void) val;
	(void) vlen;
	for (i = h & s->mask; s->keys[i].key != NULL; i = (i + 1) & s->mask)
		;
	s->keys[i].hash = h;
	s->keys[i].key = key;
	s->keys[i].klen = klen;
	s->keys[i].owner = c->owner;
	return LSM_OK;
}

/* The table of every key of s's whole batches, at most half full. */
static int
index_keys(lsm_prepared_set *s, lsm_err *e)
{
	size_t		total = 0,
				slots = 16,
				i;

	for (i = 0; i < s->n; i++)
		if (s->batches[i].payload)
			total += lsm_get_u32(s->batches[i].payload + 8);
	if (total == 0)
		return LSM_OK;
	while (slots < 2 * total)
		slots *= 2;
	s->keys = calloc(slots, sizeof(prep_key));
	if (s->keys == NULL)
		return LSM_NOMEM_ERR(e);
	s->mask = slots - 1;
	for (i = 0; i < s->n; i++)
	{
		index_ctx	c = {s, s->batches[i].owner};
		int			rc;

		if (s->batches[i].payload == NULL)
			continue;
		rc = lsm_batch_iterate(s->batches[i].payload, s->batches[i].len,
							   index_key, &c, e);
		if (rc != LSM_OK)
			return rc;
	}
	return LSM_OK;
}

/*
 * Loads the store's prepared set again if LOCK's prepared_gen moved since
 * the handle loaded it (always without the page): every prepared.* file
 * whose owner the memtable does not list as resolved.  A damaged file is
 * in the set with no keys (its owner cannot have committed: the glue rolls
 * it back).
 */
static int
sync_set(lsm_db *db, lsm_err *e)
{
	lsm_prepared_set *s;
	DIR		   *d;
	struct dirent *de;
	uint64_t	g = 0;
	size_t		cap = 0;
	int			rc = LSM_OK;

	if (db->page)
	{
		g = __atomic_load_n(&db->page->prepared_gen, __ATOMIC_ACQUIRE);
		if (db->prepared != NULL && g == db->prepared_gen)
			return LSM_OK;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return LSM_NOMEM_ERR(e);
	d = opendir(db->dir);
	if (d == NULL)
	{
		free(s);
		return lsm_err_sys(e, errno, "could not open directory \"%s\"", db->dir);
	}
	while (rc == LSM_OK && (de = readdir(d)) != NULL)
	{
		uint64_t	owner;
		prep_batch *b;
		lsm_err		why;

		if (!prep_owner_of(de->d_name, &owner) ||
			lsm_memtable_resolved(db->mem, owner))
			continue;
		if (s->n == cap)
		{
			prep_batch *nb = realloc(s->batches, (cap ? cap * 2 : 4) * sizeof(prep_batch));

			if (nb == NULL)
			{
				rc = LSM_NOMEM_ERR(e);
				break;
			}
			s->batches = nb;
			cap = cap ? cap * 2 : 4;
		}
		b = &s->batches[s->n];
		memset(b, 0, sizeof(*b));
		b->owner = owner;
		lsm_err_clear(&why);
		rc = read_prepared(db, owner, &b->payload, &b->len, &why);
		if (rc == LSM_NOTFOUND)
		{
			rc = LSM_OK;		/* resolved meanwhile */
			continue;
		}
		if (rc == LSM_CORRUPTION)
			rc = LSM_OK;		/* damaged: payload NULL */
		else if (rc != LSM_OK)
			lsm_err_copy(e, &why);
		s->n++;
	}
	closedir(d);
	if (rc == LSM_OK)
		rc = index_keys(s, e);
	if (rc != LSM_OK)
	{
		set_free(s);
		return rc;
	}
	set_free(db->prepared);
	db->prepared = s;
	db->prepared_gen = g;
	return LSM_OK;
}

/* Tells other handles that the set of prepared files changed. */
static void
bump_gen(lsm_db *db)
{
	if (db->page && !db->opt.read_only)
		__atomic_add_fetch(&db->page->prepared_gen, 1, __ATOMIC_RELEASE);
	set_free(db->prepared);
	db->prepared = NULL;
}

static prep_batch *
find_batch(lsm_prepared_set *s, uint64_t owner)
{
	size_t		i;

	for (i = 0; i < s->n; i++)
		if (s->batches[i].owner == owner)
			return &s->batches[i];
	return NULL;
}

/*
 * Writes owner's file from batch b: as .tmp, then renamed into place.  The
 * renamed file's descriptor is left in *fd for the sync.
 */
static int
write_prepared(lsm_db *db, const lsm_batch *b, uint64_t owner, int *fd,
			   lsm_err *e)
{
	char		tmp[4096],
				path[4096];
	size_t		n = b->rep.len - LSM_WAL_HEADER;
	uint8_t    *f;
	int			rc;

	if (n > UINT32_MAX)
		return lsm_err_set(e, LSM_INVALID,
						   "batch of %zu bytes is larger than a prepared batch can hold", n);
	if ((f = malloc(PREP_HEADER + n)) == NULL)
		return LSM_NOMEM_ERR(e);
	lsm_put_u64(f, PREP_MAGIC);
	lsm_put_u32(f + 12, (uint32_t) n);
	lsm_put_u64(f + 16, owner);
	memcpy(f + PREP_HEADER, b->rep.data + LSM_WAL_HEADER, n);
	lsm_put_u64(f + PREP_HEADER, 0);	/* no sequence yet */
	lsm_put_u32(f + PREP_HEADER + 8, b->count);
	lsm_put_u32(f + 8, lsm_checksum(f + 12, PREP_HEADER - 12 + n));
	prep_path(db, owner, true, tmp, sizeof(tmp));
	prep_path(db, owner, false, path, sizeof(path));
	rc = lsm_env_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, fd, e);
	if (rc == LSM_OK)
	{
		rc = lsm_env_pwrite(*fd, f, PREP_HEADER + n, 0, tmp, e);
		lsm_env_crash_point();	/* written, not renamed (tests) */
		if (rc == LSM_OK)
			rc = lsm_env_rename(tmp, path, e);
		if (rc != LSM_OK)
		{
			lsm_env_close(*fd);
			*fd = -1;
			(void) lsm_env_unlink(tmp, NULL);
		}
	}
	free(f);
	return rc;
}

/* Syncs a prepared file left by lsm_prepare, then the directory. */
static int
sync_prepared(lsm_db *db, lsm_err *e)
{
	int			rc;

	if (db->prepare_fd < 0)
		return LSM_OK;
	rc = lsm_env_fsync(db->prepare_fd, "prepared batch", e);
	lsm_env_close(db->prepare_fd);
	db->prepare_fd = -1;
	if (rc == LSM_OK)
		rc = lsm_env_fsync_dir(db->dir, e);
	return rc;
}

int
lsm_prepared_wait(lsm_db *db, lsm_err *e)
{
	return sync_prepared(db, e);
}

int
lsm_prepare(lsm_db *db, lsm_batch *b, uint64_t owner, int flags)
{
	lsm_err		e;
	bool		locked;
	int			how = flags & ~LSM_WRITE_DEFER;
	int			rc;

	if (db == NULL || b == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	if (owner == 0 || b->count == 0 || db->opt.read_only ||
		(how != LSM_WRITE_DEFAULT && how != LSM_WRITE_SYNC &&
		 how != LSM_WRITE_NOSYNC))
		return lsm_db_fail(db, lsm_err_set(&e, LSM_INVALID,
										   "a prepared batch needs an owner, an entry, a handle that may write and known flags"),
						   &e);
	locked = db->user_locked;
	if (!locked && (rc = lsm_lock(db, 0)) != LSM_OK)
		return rc;
	rc = sync_set(db, &e);
	if (rc == LSM_OK && (find_batch(db->prepared, owner) != NULL ||
						 lsm_memtable_resolved(db->mem, owner)))
		rc = lsm_err_set(&e, LSM_EXISTS,
						 "store \"%s\" has a prepared batch of owner %" PRIx64 " already",
						 db->dir, owner);
	if (rc == LSM_OK && db->prepare_fd >= 0)
		rc = sync_prepared(db, &e);	/* an earlier deferred one */
	if (rc == LSM_OK)
		rc = write_prepared(db, b, owner, &db->prepare_fd, &e);
	if (rc == LSM_OK)
		bump_gen(db);
	lsm_env_crash_point();		/* renamed, not synced (tests) */
	if (!locked)
		lsm_unlock(db);
	if (rc == LSM_OK && (how == LSM_WRITE_SYNC ||
						 (how == LSM_WRITE_DEFAULT && db->opt.sync)))
	{
		if (!(flags & LSM_WRITE_DEFER))
			rc = sync_prepared(db, &e);
	}
	else if (db->prepare_fd >= 0)
	{
		lsm_env_close(db->prepare_fd);
		db->prepare_fd = -1;
	}
	return lsm_db_fail(db, rc, &e);
}

/* Removes owner's file (a missing one is not an error) and says so. */
static int
remove_prepared(lsm_db *db, uint64_t owner, lsm_err *e)
{
	char		path[4096];
	int			rc;

	prep_path(db, owner, false, path, sizeof(path));
	rc = lsm_env_unlink(path, e);
	if (rc == LSM_OK)
		bump_gen(db);
	return rc;
}

int
lsm_resolve(lsm_db *db, uint64_t owner, int commit, int flags)
{
	lsm_err		e;
	lsm_batch  *b;
	prep_batch *pb = NULL;
	bool		done,
				synced,
				committed = false;
	int			how = flags & ~LSM_WRITE_DEFER;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	synced = how == LSM_WRITE_SYNC || (how == LSM_WRITE_DEFAULT && db->opt.sync);
	lsm_err_clear(&e);
	if (owner == 0 || db->opt.read_only || db->user_locked ||
		(how != LSM_WRITE_DEFAULT && how != LSM_WRITE_SYNC &&
		 how != LSM_WRITE_NOSYNC))
		return lsm_db_fail(db, lsm_err_set(&e, LSM_INVALID,
										   "lsm_resolve needs an owner, a handle that may write, known flags, and no lsm_lock held"),
						   &e);
	if ((rc = lsm_lock(db, 0)) != LSM_OK)
		return rc;
	/* a record of the memtable's log resolved it: its file may be left */
	done = lsm_memtable_resolved(db->mem, owner);
	if (!done && (rc = sync_set(db, &e)) == LSM_OK)
		pb = find_batch(db->prepared, owner);
	if (rc != LSM_OK)
		;
	else if (done || pb == NULL)
		rc = LSM_NOTFOUND;
	else if (!commit)
		rc = remove_prepared(db, owner, &e);
	else if (pb->payload == NULL)
		rc = LSM_CORRUPT(&e, "prepared batch of owner %" PRIx64 " in store \"%s\" is damaged and cannot be committed",
						 owner, db->dir);
	else if ((b = lsm_batch_new()) == NULL ||
			 lsm_buf_append(&b->rep, pb->payload + LSM_BATCH_HEADER,
							pb->len - LSM_BATCH_HEADER) != LSM_OK)
	{
		lsm_batch_free(b);
		rc = LSM_NOMEM_ERR(&e);
	}
	else
	{
		/* the batch at the next sequences, as one record of type 2 */
		uint8_t		o[LSM_WAL_OWNER];

		b->count = lsm_get_u32(pb->payload + 8);
		b->user_bytes = pb->len;
		b->owner = owner;
		lsm_put_u64(o, owner);
		rc = lsm_buf_append(&b->rep, o, sizeof(o));
		if (rc == LSM_OK)
			rc = lsm_db_write(db, b, synced, true, &e);
		lsm_batch_free(b);
		committed = rc == LSM_OK;
		if (committed)
			bump_gen(db);
	}
	lsm_unlock(db);

	/*
	 * The file goes once the record that resolved it is durable, not
	 * before: ours, or one a writer that died appended (and never synced).
	 * A commit without sync leaves it to the flush of the memtable, which
	 * lists the owner as resolved meanwhile.
	 */
	if (committed && (rc = lsm_write_wait(db)) != LSM_OK)
		return rc;
	if (done && lsm_db_sync_seen(db, &e) != LSM_OK)
		return lsm_db_fail(db, e.rc, &e);
	if ((committed && synced) || done)
	{
		lsm_env_crash_point();	/* resolved, file left (tests) */
		if (remove_prepared(db, owner, &e) != LSM_OK && committed)
			rc = e.rc;
	}
	return lsm_db_fail(db, rc, &e);
}

int
lsm_prepared(lsm_db *db, uint64_t *owners, size_t max, size_t *n)
{
	lsm_err		e;
	size_t		i;
	int			rc;

	if (db == NULL || n == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = sync_set(db, &e);
	*n = 0;
	if (rc == LSM_OK)
	{
		for (i = 0; i < db->prepared->n; i++)
		{
			if (lsm_memtable_resolved(db->mem, db->prepared->batches[i].owner))
				continue;
			if (*n < max)
				owners[*n] = db->prepared->batches[i].owner;
			(*n)++;
		}
	}
	return lsm_db_fail(db, rc, &e);
}

int
lsm_prepared_holds(lsm_db *db, const void *key, size_t klen, uint64_t *owner)
{
	lsm_err		e;
	lsm_prepared_set *s;
	uint64_t	h;
	size_t		i;
	int			rc;

	if (db == NULL || key == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	if ((rc = sync_set(db, &e)) != LSM_OK)
		return lsm_db_fail(db, rc, &e);
	s = db->prepared;
	if (s->keys == NULL)
		return LSM_NOTFOUND;
	h = lsm_key_hash(key, klen);
	for (i = h & s->mask; s->keys[i].key != NULL; i = (i + 1) & s->mask)
	{
		prep_key   *k = &s->keys[i];

		if (k->hash == h && k->klen == klen && memcmp(k->key, key, klen) == 0 &&
			!lsm_memtable_resolved(db->mem, k->owner))
		{
			if (owner)
				*owner = k->owner;
			return LSM_OK;
		}
	}
	return LSM_NOTFOUND;
}

int
lsm_prepared_forget(lsm_db *db, const lsm_memtable *mt, lsm_err *e)
{
	uint64_t	small[16];
	uint64_t   *owners = small;
	int			n = lsm_memtable_resolved_owners(mt, small, 16),
				i,
				rc = LSM_OK;

	if (n == 0)
		return LSM_OK;
	if (n > 16)
	{
		owners = malloc(sizeof(uint64_t) * (size_t) n);
		if (owners == NULL)
			return LSM_NOMEM_ERR(e);
		(void) lsm_memtable_resolved_owners(mt, owners, (size_t) n);
	}
	for (i = 0; i < n && rc == LSM_OK; i++)
	{
		char		path[4096];

		prep_path(db, owners[i], false, path, sizeof(path));
		rc = lsm_env_unlink(path, e);
	}
	if (owners != small)
		free(owners);
	if (rc == LSM_OK)
		rc = lsm_env_fsync_dir(db->dir, e);
	bump_gen(db);
	return rc;
}

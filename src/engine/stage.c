/*
 * stage.c
 *		Stages: one caller's pending writes in bounded memory, applied to the
 *		store atomically at commit (RocksDB's IngestExternalFile, for the
 *		writes of one transaction).
 *
 * A stage buffers its puts and deletes in a skip list (memtable.c) under a
 * sequence of its own: every write gets the next stage-local number, so a
 * later write of a key shadows an earlier one.  When the buffer reaches its
 * bound it is spilled: its newest version of every key, deletes included,
 * is written as a sorted run, an ordinary SSTable (with the store's key
 * filter, value filter and block locator) numbered 1, 2, ... in the
 * stage's private directory <store>/stage.<pid>.<n>/, and the buffer
 * starts afresh.  Run files keep the stage-local sequences, so a run is
 * newer than the runs before it, and the merging iterator (newest wins)
 * reads the stage as it would a store.  A lookup probes the buffer, then
 * the runs newest first, each gated by its key range and its key filter,
 * with the key hashed once.
 *
 * Commit.  A stage that never spilled becomes one batch (lsm_write).  A
 * larger one writes its buffer as a last run, outside any lock, and hands
 * the runs to lsm_db_ingest (db.c), which under the write lock gives run i
 * the global sequence last + 1 + i, moves the files into the store under
 * fresh numbers and switches in one manifest naming them in level 0,
 * together with a flush of the memtable (reads look in the memtable first,
 * and its entries are older than the ingest).  A table with a global
 * sequence reads every entry with that sequence (sstable.c), so the runs
 * need no rewrite and the ingest is newer than everything the store held;
 * compaction then merges them like flushed tables, writing real sequences.
 *
 * Staging directories and their removal (invariant 9 in db.c): the owner
 * creates the directory with mkdir, creates LOCK.tmp in it, takes an
 * exclusive flock on it and only then renames it to LOCK, holding the lock
 * until commit or abort, when it removes the directory itself.  Another
 * process (lsm_open for writing, lsm_compact) removes a staging directory
 * only if it can take that flock, or, if the directory has no LOCK at all,
 * if the process whose pid the name carries is dead.  A live owner is
 * never robbed: its LOCK is held, or it is still setting up under its own
 * live pid.  (A dead owner whose pid was reused before it had a LOCK keeps
 * its empty directory until that pid is gone too.)
 *
 * Memory: the buffer (at most buffer_bytes of entries plus one write), the
 * table builder of a spill (a key hash per entry, a value hash per field),
 * and a few hundred bytes per run; run data is read through mappings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "db.h"
#include "env.h"

#define STAGE_PREFIX "stage."
#define STAGE_MAX_TRIES 1000

/* Per-node overhead of the skip list, for the buffer's bound. */
#define STAGE_NODE_OVERHEAD 64

/* Numbers the staging directories this process creates. */
static unsigned stage_counter;

typedef struct stage_run
{
	lsm_table_meta meta;		/* number: its file in the stage directory */
	lsm_table  *table;
	lsm_bloom	filter;			/* copied out of the table (0 lines: none) */
	uint64_t	lo,				/* fences of its smallest and largest key */
				hi;
} stage_run;

struct lsm_stage
{
	lsm_db	   *db;
	size_t		limit;			/* buffer bytes that trigger a spill */
	lsm_memtable *mem;			/* the buffer */
	uint64_t	seq;			/* stage-local sequence of the last write */
	uint64_t	count;			/* puts and deletes staged */
	uint64_t	user_bytes;		/* their key and value bytes */
	char	   *dir;			/* staging directory; NULL before a spill */
	int			lock_fd;		/* its LOCK, flock'ed; -1 before a spill */
	int			nruns;
	int			cap;
	stage_run  *runs;			/* oldest first */
	int		   *cand;			/* scratch of lookups: cap run indexes */
	bool		have_range;		/* lo and hi hold the range of all runs */
	lsm_buf		lo,				/* smallest and largest key of all runs */
				hi;
	uint64_t	lo_fence,
				hi_fence;
};

/*
 * The first 8 bytes of a key as a big-endian integer, zero-padded: keys
 * compare like their fences whenever the fences differ, so most range
 * checks of a lookup cost an integer comparison.
 */
static inline uint64_t
fence_of(const uint8_t *key, size_t klen)
{
	uint64_t	f = 0;
	size_t		i;

	for (i = 0; i < 8; i++)
		f = f << 8 | (i < klen ? key[i] : 0);
	return f;
}

/* Is key (fence kf) within [lo, hi] (fences lof, hif)? */
static inline bool
range_covers(uint64_t lof, const uint8_t *lo, size_t lolen, uint64_t hif,
			 const uint8_t *hi, size_t hilen, uint64_t kf, const void *key,
			 size_t klen)
{
	if (kf < lof || kf > hif)
		return false;
	if (kf == lof && lsm_key_cmp(lo, lolen, key, klen) > 0)
		return false;
	if (kf == hif && lsm_key_cmp(hi, hilen, key, klen) < 0)
		return false;
	return true;
}

/* ---------- staging directories ---------- */

/*
 * Removes every entry of directory path, its LOCK last, then the directory.
 * Best effort: what cannot be removed stays for a later sweep.
 */
static void
remove_dir(const char *path)
{
	DIR		   *d = opendir(path);
	struct dirent *de;
	char		p[4096 + 256 + 2];

	if (d != NULL)
	{
		while ((de = readdir(d)) != NULL)
		{
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
				strcmp(de->d_name, "LOCK") == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
			(void) lsm_env_unlink(p, NULL);
		}
		closedir(d);
	}
	snprintf(p, sizeof(p), "%s/LOCK", path);
	(void) lsm_env_unlink(p, NULL);
	(void) rmdir(path);
}

/*
 * Creates the stage's directory and takes its lock: mkdir of a name nobody
 * has, LOCK.tmp created and flock'ed, then renamed to LOCK (invariant 9:
 * a LOCK file is always held by a live owner or by nobody).
 */
static int
make_dir(lsm_stage *st, lsm_err *e)
{
	lsm_db	   *db = st->db;
	char		path[4096],
				tmp[4096 + 16],
				lock[4096 + 16];
	int			tries,
				rc = LSM_OK;

	for (tries = 0;; tries++)
	{
		unsigned	n = __atomic_fetch_add(&stage_counter, 1, __ATOMIC_RELAXED);

		snprintf(path, sizeof(path), "%s/" STAGE_PREFIX "%ld.%u", db->dir,
				 (long) getpid(), n);
		rc = lsm_env_mkdir(path, e);
		if (rc != LSM_EXISTS)
			break;
		/* left by a dead process whose pid we now have: try the next */
		if (tries >= STAGE_MAX_TRIES)
			return lsm_err_set(e, LSM_IOERR,
							   "no free staging directory name in \"%s\"",
							   db->dir);
	}
	if (rc != LSM_OK)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s/LOCK.tmp", path);
	snprintf(lock, sizeof(lock), "%s/LOCK", path);
	rc = lsm_env_open(tmp, O_RDWR | O_CREAT | O_EXCL, 0644, &st->lock_fd, e);
	if (rc == LSM_OK)
	{
		rc = lsm_env_trylock(st->lock_fd, "LOCK.tmp", e);
		if (rc == LSM_BUSY)		/* nobody else can know the file yet */
			rc = lsm_err_set(e, LSM_IOERR, "could not lock \"%s\"", tmp);
	}
	if (rc == LSM_OK)
		rc = lsm_env_rename(tmp, lock, e);
	if (rc == LSM_OK)
		st->dir = strdup(path);
	if (rc == LSM_OK && st->dir == NULL)
		rc = LSM_NOMEM_ERR(e);
	if (rc != LSM_OK)
	{
		remove_dir(path);
		lsm_env_close(st->lock_fd);
		st->lock_fd = -1;
	}
	return rc;
}

/* Is process pid (possibly) alive? */
static bool
pid_alive(long pid)
{
	if (pid <= 0)
		return false;
	return kill((pid_t) pid, 0) == 0 || errno == EPERM;
}

bool
lsm_stage_gc_entry(lsm_db *db, const char *name)
{
	char		path[4096],
				lock[4096 + 16],
				tail;
	long		pid;
	unsigned	n;
	int			fd,
				rc;

	if (strncmp(name, STAGE_PREFIX, strlen(STAGE_PREFIX)) != 0)
		return false;
	if (sscanf(name, STAGE_PREFIX "%ld.%u%c", &pid, &n, &tail) != 2)
		return true;			/* not ours to judge: leave it */
	snprintf(path, sizeof(path), "%s/%s", db->dir, name);
	snprintf(lock, sizeof(lock), "%s/LOCK", path);
	rc = lsm_env_open(lock, O_RDONLY, 0, &fd, NULL);
	if (rc == LSM_OK)
	{
		/* held: its owner lives (or a sweeper is at it); free: it died */
		if (lsm_env_trylock(fd, "LOCK", NULL) == LSM_OK)
			remove_dir(path);
		lsm_env_close(fd);
	}
	else if (rc == LSM_NOTFOUND && !pid_alive(pid))
		remove_dir(path);		/* died before it had a LOCK */
	return true;
}

void
lsm_stage_gc(lsm_db *db)
{
	DIR		   *d = opendir(db->dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		(void) lsm_stage_gc_entry(db, de->d_name);
	closedir(d);
}

/* ---------- open, free ---------- */

int
lsm_stage_open(lsm_db *db, size_t buffer_bytes, lsm_stage **out)
{
	lsm_stage  *st;

	if (out != NULL)
		*out = NULL;
	if (db == NULL || out == NULL)
		return LSM_INVALID;
	if (db->opt.read_only)
		return lsm_err_set(&db->err, LSM_INVALID, "store was opened read-only");
	if (buffer_bytes != 0 &&
		(buffer_bytes < 4096 || buffer_bytes > ((size_t) 1 << 34)))
		return lsm_err_set(&db->err, LSM_INVALID,
						   "a stage buffer must be between 4 KiB and 16 GiB");
	st = calloc(1, sizeof(*st));
	if (st == NULL || (st->mem = lsm_memtable_new()) == NULL)
	{
		free(st);
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	}
	st->db = db;
	st->limit = buffer_bytes ? buffer_bytes : db->opt.memtable_bytes;
	st->lock_fd = -1;
	db->open_stages++;
	*out = st;
	return LSM_OK;
}

/* Releases everything of st and removes its directory. */
static void
stage_free(lsm_stage *st)
{
	int			i;

	for (i = 0; i < st->nruns; i++)
	{
		lsm_table_unref(st->runs[i].table);
		lsm_table_meta_free(&st->runs[i].meta);
	}
	free(st->runs);
	free(st->cand);
	lsm_buf_free(&st->lo);
	lsm_buf_free(&st->hi);
	if (st->dir)
		remove_dir(st->dir);
	/* the lock goes last: until then no sweeper touches the directory */
	lsm_env_close(st->lock_fd);
	lsm_memtable_unref(st->mem);
	st->db->open_stages--;
	free(st->dir);
	free(st);
}

void
lsm_stage_abort(lsm_stage *st)
{
	if (st != NULL)
		stage_free(st);
}

size_t
lsm_stage_bytes(const lsm_stage *st)
{
	size_t		n;
	int			i;

	if (st == NULL)
		return 0;
	n = sizeof(*st) + lsm_memtable_arena_bytes(st->mem) +
		(size_t) st->cap * sizeof(stage_run);
	for (i = 0; i < st->nruns; i++)
		n += 256 + st->runs[i].meta.smallest_len + st->runs[i].meta.largest_len;
	return n;
}

uint64_t
lsm_stage_count(const lsm_stage *st)
{
	return st ? st->count : 0;
}

int
lsm_stage_runs(const lsm_stage *st)
{
	return st ? st->nruns : 0;
}

/* ---------- spilling ---------- */

/*
 * Writes the buffer as the next sorted run (fsynced, invariant 8) and
 * starts an empty buffer.  On failure the stage is unchanged (no file of
 * the failed run is left behind).
 */
static int
spill(lsm_stage *st, lsm_err *e)
{
	lsm_db	   *db = st->db;
	lsm_table_builder *b = NULL;
	lsm_memtable *fresh;
	lsm_iiter  *it;
	stage_run  *r;
	uint64_t	number;
	char		name[32],
				path[4096];
	int			rc;

	if (lsm_memtable_entries(st->mem) == 0)
		return LSM_OK;
	if (st->dir == NULL && (rc = make_dir(st, e)) != LSM_OK)
		return rc;
	if (st->nruns == st->cap)
	{
		int			cap = st->cap ? st->cap * 2 : 8;
		stage_run  *g = realloc(st->runs, sizeof(stage_run) * (size_t) cap);
		int		   *c;

		if (g == NULL)
			return LSM_NOMEM_ERR(e);
		st->runs = g;
		c = realloc(st->cand, sizeof(int) * (size_t) cap);
		if (c == NULL)
			return LSM_NOMEM_ERR(e);
		st->cand = c;
		st->cap = cap;
	}
	/* taken now so that nothing can fail once the run is written */
	fresh = lsm_memtable_new();
	if (fresh == NULL)
		return LSM_NOMEM_ERR(e);
	it = lsm_memtable_iter(st->mem, UINT64_MAX, e);
	if (it == NULL)
	{
		lsm_memtable_unref(fresh);
		return LSM_NOMEM_ERR(e);
	}
	number = (uint64_t) st->nruns + 1;
	lsm_table_filename(number, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", st->dir, name);
	/* a file of that name is what a failed spill could not remove */
	(void) lsm_env_unlink(path, NULL);
	r = &st->runs[st->nruns];
	memset(r, 0, sizeof(*r));
	rc = lsm_table_builder_open(path, number, db->opt.block_bytes,
								db->opt.key_bits_per_key, &b, e);
	if (rc == LSM_OK && (rc = lsm_db_value_params(db, b, e)) != LSM_OK)
	{
		lsm_table_builder_abandon(b);
		b = NULL;
	}
	/* the newest version of each key, deletes kept: they delete the store's */
	for (lsm_iiter_seek(it, NULL, 0); rc == LSM_OK && it->valid;
		 lsm_iiter_next(it))
	{
		rc = lsm_table_builder_add(b, it->key, it->klen, it->seq, it->del,
								   it->val, it->vlen, e);
		if (rc != LSM_OK)
		{
			lsm_table_builder_abandon(b);
			b = NULL;
		}
	}
	lsm_iiter_destroy(it);
	if (rc == LSM_OK)
		rc = lsm_table_builder_finish(b, &r->meta, e);
	if (rc == LSM_OK)
	{
		rc = lsm_table_open(st->dir, number, 0, &r->table, e);
		if (rc == LSM_OK && (rc = lsm_table_status(r->table, e)) != LSM_OK)
		{
			lsm_table_unref(r->table);
			r->table = NULL;
		}
		if (rc != LSM_OK)
		{
			lsm_table_meta_free(&r->meta);
			(void) lsm_env_unlink(path, NULL);
		}
	}
	if (rc != LSM_OK)
	{
		lsm_memtable_unref(fresh);
		return rc;
	}
	lsm_table_filter(r->table, &r->filter);
	r->lo = fence_of(r->meta.smallest, r->meta.smallest_len);
	r->hi = fence_of(r->meta.largest, r->meta.largest_len);
	/*
	 * The range of all runs, so that a lookup outside it (every lookup of
	 * an ascending load) touches no run.  Out of memory, lookups go without.
	 */
	if (st->nruns == 0)
		st->have_range = true;
	if (st->have_range &&
		(st->nruns == 0 ||
		 lsm_key_cmp(r->meta.smallest, r->meta.smallest_len, st->lo.data,
					 st->lo.len) < 0))
	{
		st->lo.len = 0;
		st->have_range = lsm_buf_append(&st->lo, r->meta.smallest,
										r->meta.smallest_len) == LSM_OK;
		st->lo_fence = fence_of(st->lo.data, st->lo.len);
	}
	if (st->have_range &&
		(st->nruns == 0 ||
		 lsm_key_cmp(r->meta.largest, r->meta.largest_len, st->hi.data,
					 st->hi.len) > 0))
	{
		st->hi.len = 0;
		st->have_range = lsm_buf_append(&st->hi, r->meta.largest,
										r->meta.largest_len) == LSM_OK;
		st->hi_fence = fence_of(st->hi.data, st->hi.len);
	}
	db->ctr.sst_bytes_written += r->meta.size;
	st->nruns++;
	lsm_memtable_unref(st->mem);
	st->mem = fresh;
	return LSM_OK;
}

/* ---------- writes ---------- */

/* Checks a key (and value) handed to the stage. */
static int
check_kv(lsm_stage *st, const void *key, size_t klen, const void *val,
		 size_t vlen)
{
	if (key == NULL && klen > 0)
		return LSM_INVALID;
	if (klen == 0 || klen > LSM_MAX_KEY_LEN)
		return lsm_err_set(&st->db->err, LSM_INVALID,
						   "key of %zu bytes: keys must be 1 to %d bytes",
						   klen, LSM_MAX_KEY_LEN);
	if ((val == NULL && vlen > 0) || vlen > LSM_MAX_VALUE_LEN)
		return lsm_err_set(&st->db->err, LSM_INVALID,
						   "value of %zu bytes is invalid", vlen);
	return LSM_OK;
}

/* Stages one write, spilling a full buffer first. */
static int
stage_add(lsm_stage *st, int kind, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	lsm_err		e;
	int			rc;

	if (st == NULL)
		return LSM_INVALID;
	rc = check_kv(st, key, klen, val, vlen);
	if (rc != LSM_OK)
		return rc;
	if (st->seq >= LSM_MAX_SEQUENCE)
		return lsm_err_set(&st->db->err, LSM_INVALID,
						   "too many writes in one stage");
	lsm_err_clear(&e);
	if (lsm_memtable_entries(st->mem) > 0 &&
		lsm_memtable_bytes(st->mem) + klen + vlen + STAGE_NODE_OVERHEAD >
		st->limit)
	{
		rc = spill(st, &e);
		if (rc != LSM_OK)
			return lsm_db_fail(st->db, rc, &e);
	}
	rc = lsm_memtable_add(st->mem, st->seq + 1, kind, key, klen, val, vlen);
	if (rc != LSM_OK)
		return lsm_err_set(&st->db->err, rc, "out of memory");
	st->seq++;
	st->count++;
	st->user_bytes += klen + vlen;
	return LSM_OK;
}

int
lsm_stage_put(lsm_stage *st, const void *key, size_t klen, const void *val,
			  size_t vlen)
{
	return stage_add(st, LSM_KIND_PUT, key, klen, val, vlen);
}

int
lsm_stage_delete(lsm_stage *st, const void *key, size_t klen)
{
	return stage_add(st, LSM_KIND_DEL, key, klen, NULL, 0);
}

/* ---------- reads ---------- */

/* Does run r's key range hold key (fence kf)? */
static inline bool
run_covers(const stage_run *r, uint64_t kf, const void *key, size_t klen)
{
	return range_covers(r->lo, r->meta.smallest, r->meta.smallest_len, r->hi,
						r->meta.largest, r->meta.largest_len, kf, key, klen);
}

/* Hands a found version to the caller: LSM_OK with a copy, or LSM_DELETED. */
static int
stage_found(lsm_stage *st, bool del, const uint8_t *v, size_t n, void **val,
			size_t *vlen)
{
	if (del)
		return LSM_DELETED;
	*val = lsm_memdup(v, n);
	if (*val == NULL)
		return lsm_err_set(&st->db->err, LSM_NOMEM, "out of memory");
	*vlen = n;
	return LSM_OK;
}

int
lsm_stage_get(lsm_stage *st, const void *key, size_t klen, void **val,
			  size_t *vlen)
{
	const uint8_t *mv;
	size_t		mvlen;
	uint64_t	mseq,
				kf,
				h;
	lsm_err		e;
	int			kind,
				ncand = 0,
				i,
				rc;

	if (st == NULL || val == NULL || vlen == NULL || (key == NULL && klen > 0))
		return LSM_INVALID;
	*val = NULL;
	*vlen = 0;
	if (klen > LSM_MAX_KEY_LEN)
		return lsm_err_set(&st->db->err, LSM_INVALID,
						   "key of %zu bytes is longer than %d", klen,
						   LSM_MAX_KEY_LEN);
	if (lsm_memtable_get(st->mem, key, klen, UINT64_MAX, &kind, &mv, &mvlen,
						 &mseq))
		return stage_found(st, kind == LSM_KIND_DEL, mv, mvlen, val, vlen);
	if (st->nruns == 0)
		return LSM_NOTFOUND;
	kf = fence_of(key, klen);
	if (st->have_range &&
		!range_covers(st->lo_fence, st->lo.data, st->lo.len, st->hi_fence,
					  st->hi.data, st->hi.len, kf, key, klen))
		return LSM_NOTFOUND;

	/*
	 * The runs whose range holds the key, newest first, with their filter
	 * lines fetched together; one hash for all of them.
	 */
	h = lsm_key_hash(key, klen);
	for (i = st->nruns - 1; i >= 0; i--)
		if (run_covers(&st->runs[i], kf, key, klen))
		{
			st->cand[ncand++] = i;
			if (st->runs[i].filter.num_lines > 0)
				lsm_bloom_prefetch(&st->runs[i].filter, h);
		}
	lsm_err_clear(&e);
	for (i = 0; i < ncand; i++)
	{
		stage_run  *r = &st->runs[st->cand[i]];
		lsm_table_hit hit;

		if (r->filter.num_lines > 0 && !lsm_bloom_may_match(&r->filter, h))
			continue;
		rc = lsm_table_get(r->table, key, klen, &hit, &e);
		if (rc == LSM_NOTFOUND)
			continue;
		if (rc != LSM_OK)
			return lsm_db_fail(st->db, rc, &e);
		return stage_found(st, hit.del != 0, hit.val, hit.vlen, val, vlen);
	}
	return LSM_NOTFOUND;
}

/* Builds the merging iterator of a stage iterator (lsm_iter_build). */
static lsm_iiter *
build_iter(void *arg, lsm_err *err)
{
	lsm_stage  *st = arg;
	lsm_iiter **kids;
	lsm_iiter  *m;
	int			n = 0,
				i;

	kids = malloc(sizeof(lsm_iiter *) * (size_t) (st->nruns + 1));
	if (kids == NULL)
		return NULL;
	/* the buffer as of now: later writes get later stage sequences */
	if ((kids[n] = lsm_memtable_iter(st->mem, st->seq, err)) != NULL)
		n++;
	for (i = 0; i < st->nruns && n == i + 1; i++)
		if ((kids[n] = lsm_table_iter(st->runs[i].table, err)) != NULL)
			n++;
	if (n != st->nruns + 1)
	{
		while (n > 0)
			lsm_iiter_destroy(kids[--n]);
		free(kids);
		return NULL;
	}
	m = lsm_merge_iter_new(kids, n, err);
	free(kids);
	return m;
}

int
lsm_stage_iter_open(lsm_stage *st, lsm_iter **out)
{
	int			rc;

	if (out != NULL)
		*out = NULL;
	if (st == NULL || out == NULL)
		return LSM_INVALID;
	rc = lsm_iter_build(st->db, true, build_iter, st, out);
	if (rc != LSM_OK)
		return lsm_err_set(&st->db->err, rc, "out of memory");
	return LSM_OK;
}

/* ---------- commit ---------- */

/* The buffer as one batch (*out: release with lsm_batch_free). */
static int
buffer_batch(lsm_stage *st, lsm_batch **out, lsm_err *e)
{
	lsm_batch  *b = lsm_batch_new();
	lsm_iiter  *it;
	int			rc = LSM_OK;

	*out = NULL;
	if (b == NULL)
		return LSM_NOMEM_ERR(e);
	it = lsm_memtable_iter(st->mem, UINT64_MAX, e);
	if (it == NULL)
	{
		lsm_batch_free(b);
		return LSM_NOMEM_ERR(e);
	}
	for (lsm_iiter_seek(it, NULL, 0); rc == LSM_OK && it->valid;
		 lsm_iiter_next(it))
		rc = it->del ? lsm_batch_delete(b, it->key, it->klen) :
			lsm_batch_put(b, it->key, it->klen, it->val, it->vlen);
	lsm_iiter_destroy(it);
	if (rc != LSM_OK)
	{
		lsm_batch_free(b);
		return lsm_err_set(e, rc, "could not build the stage's batch");
	}
	*out = b;
	return LSM_OK;
}

int
lsm_stage_commit(lsm_stage *st, int flags)
{
	lsm_db	   *db;
	lsm_err		e;
	bool		sync,
				installed = false;
	int			rc = LSM_OK,
				i;

	if (st == NULL)
		return LSM_INVALID;
	db = st->db;
	if (flags != LSM_WRITE_DEFAULT && flags != LSM_WRITE_SYNC &&
		flags != LSM_WRITE_NOSYNC)
	{
		stage_free(st);
		return lsm_err_set(&db->err, LSM_INVALID, "unknown write flags %d",
						   flags);
	}
	sync = flags == LSM_WRITE_DEFAULT ? db->opt.sync != 0 :
		flags == LSM_WRITE_SYNC;
	lsm_err_clear(&e);
	if (st->nruns == 0 &&
		lsm_memtable_bytes(st->mem) <= db->opt.memtable_bytes)
	{
		/* small: one ordinary batch */
		lsm_batch  *b = NULL;

		if (lsm_memtable_entries(st->mem) > 0)
			rc = buffer_batch(st, &b, &e);
		if (b != NULL)
		{
			rc = lsm_db_write(db, b, sync, &e);
			lsm_batch_free(b);
		}
	}
	else
	{
		lsm_table_meta *metas = NULL;

		/* the last run is written before the write lock is taken */
		rc = spill(st, &e);
		if (rc == LSM_OK &&
			(metas = malloc(sizeof(lsm_table_meta) * (size_t) st->nruns)) == NULL)
			rc = LSM_NOMEM_ERR(&e);
		if (rc == LSM_OK)
		{
			for (i = 0; i < st->nruns; i++)
				metas[i] = st->runs[i].meta;
			rc = lsm_db_ingest(db, st->dir, metas, st->nruns, &installed, &e);
			if (rc == LSM_OK || installed)
				db->ctr.user_bytes_written += st->user_bytes;
		}
		free(metas);
	}
	stage_free(st);
	return lsm_db_fail(db, rc, &e);
}

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
 * is written as ordinary SSTables (with the store's key filter, value
 * filter and block locator), cut at the store's file size, in the stage's
 * private directory <store>/stage.<pid>.<n>/, and the buffer starts
 * afresh.  Tables keep the stage-local sequences, so the merging iterator
 * (newest wins) reads the stage as it would a store.
 *
 * Sorted runs.  The tables form sorted runs, oldest first: a run is a list
 * of disjoint tables in key order, newer than the runs before it.  A spill
 * adds a run ("tier 0").  As soon as STAGE_MERGE_WIDTH runs of one tier
 * follow each other, they become one run of the next tier: their tables,
 * in key order, fall into groups that overlap; a table that overlaps no
 * other joins the new run as it is, and each larger group is merged into
 * new tables cut at the buffer's size (so merging needs no more memory
 * than a spill, and a random load, which merges everything, leaves few
 * tables to go to level 0).  An ascending load thus writes nothing again;
 * a nearly ascending one (rows a few thousand keys out of place, as two
 * interleaved ascending streams or a heap filled out of order deliver
 * them) rewrites the tables at the edges of its runs (docs/architecture.md
 * has the numbers); a random one rewrites everything.
 * A stage of n buffers has O(STAGE_MERGE_WIDTH log n) runs, and each of its
 * entries is written at most O(log n) times, instead of one run per
 * buffer: a lookup probes every run, and the glue looks a key up before
 * each INSERT.  Deletes are kept by merges: they delete the store's keys.
 *
 * Lookups probe the buffer (unless the key is past its last one or its key
 * filter rules the key out: the keys an INSERT looks up are new), then the
 * runs newest first: the run's range, then (binary search) the one table
 * whose range may hold the key, then its key filter, with the key hashed
 * once and the filter lines of every candidate table prefetched together.
 * Ranges are compared through the first 8 bytes of the keys as integers
 * ("fences"), and the stage keeps the range of all its tables, so that a
 * lookup outside it (every lookup of an ascending load) touches no table.
 *
 * Commit.  A stage that never spilled becomes one batch (lsm_write).  A
 * larger one writes its buffer as a last run, outside any lock, and hands
 * the tables to lsm_db_ingest (db.c), which under the write lock gives
 * every table of run r the global sequence last + 1 + r, moves the files
 * into the store under fresh numbers and switches in one manifest naming
 * them, each in the deepest level it fits, together with a flush of the
 * memtable (reads look in the memtable first, and its entries are older
 * than the ingest).  A table with a global sequence reads every entry with
 * that sequence (sstable.c), so the tables need no rewrite and the ingest
 * is newer than everything the store held; compaction then merges them
 * like flushed tables, writing real sequences.
 *
 * Truncation.  lsm_stage_truncate drops what the stage holds and marks it:
 * lookups then answer "deleted" for every key it does not write, and the
 * commit always goes through lsm_db_ingest, which drops the store's
 * tables, memtable and WAL in the same manifest switch that installs the
 * stage's tables.
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
 * Memory: the buffer (at most buffer_bytes of entries plus one write, and
 * its key filter), the table builder of a spill or a merge (a key hash per
 * entry and a value hash per field of one table, at most a buffer's
 * worth), and about a hundred bytes per table; table data is read through
 * mappings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "compaction.h"
#include "cursor.h"
#include "db.h"
#include "env.h"
#include "storedir.h"
#include "twophase.h"

#define STAGE_MAX_TRIES 1000

/* Runs of one tier that become one run of the next. */
#define STAGE_MERGE_WIDTH 8

/* Per-node overhead of the skip list, for the buffer's bound. */
#define STAGE_NODE_OVERHEAD 64

/* Numbers the staging directories this process creates. */
static unsigned stage_counter;

/* A table of the stage. */
typedef struct stage_table
{
	lsm_table_meta meta;		/* number: its file in the stage directory */
	lsm_table  *table;
	lsm_bloom	filter;			/* copied out of the table (0 lines: none) */
	uint64_t	lo,				/* fences of its smallest and largest key */
				hi;
} stage_table;

/* A sorted run: disjoint tables in key order. */
typedef struct stage_run
{
	int			tier;			/* 0: a spill; t + 1: STAGE_MERGE_WIDTH of t */
	int			ntables;
	stage_table **tables;
	uint64_t	lo,				/* fences of the run's range */
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
	uint64_t	next_number;	/* of the next table file in dir */
	int			nruns;
	int			cap;
	stage_run  *runs;			/* oldest first */
	stage_table **cand;			/* scratch of lookups: one per run */
	bool		truncated;		/* lsm_stage_truncate: replaces the store */
	bool		have_range;		/* lo and hi hold the range of all tables */
	lsm_buf		lo,
				hi;
	uint64_t	lo_fence,
				hi_fence;
};

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

		snprintf(path, sizeof(path), "%s/" LSM_STAGE_PREFIX "%ld.%u", db->dir,
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
		lsm_dir_remove(path);
		lsm_env_close(st->lock_fd);
		st->lock_fd = -1;
	}
	return rc;
}

/* ---------- tables and runs ---------- */

static void
path_in(const lsm_stage *st, uint64_t number, char *buf, size_t n)
{
	char		name[32];

	lsm_dir_name(LSM_F_TABLE, number, name, sizeof(name));
	(void) lsm_dir_path(buf, n, st->dir, name, NULL);
}

/* Releases a table of the stage; with unlink_file, removes its file too. */
static void
table_free(lsm_stage *st, stage_table *t, bool unlink_file)
{
	char		path[4096 + 64];

	if (t == NULL)
		return;
	if (unlink_file)
	{
		path_in(st, t->meta.number, path, sizeof(path));
		(void) lsm_env_unlink(path, NULL);
	}
	lsm_table_unref(t->table);
	lsm_table_meta_free(&t->meta);
	free(t);
}

/*
 * Finishes builder b (table number) into a new stage table, opened for
 * reading.  On failure the file is gone and *out NULL.
 */
static int
table_finish(lsm_stage *st, lsm_table_builder *b, uint64_t number,
			 stage_table **out, lsm_err *e)
{
	stage_table *t = calloc(1, sizeof(stage_table));
	char		path[4096 + 64];
	int			rc;

	*out = NULL;
	if (t == NULL)
	{
		lsm_table_builder_abandon(b);
		return LSM_NOMEM_ERR(e);
	}
	/* not fsynced yet: stage_tables does that for the ones a commit names */
	rc = lsm_table_builder_finish(b, &t->meta, e);
	if (rc != LSM_OK)
	{
		free(t);
		return rc;
	}
	rc = lsm_table_open(st->dir, number, 0, &t->table, e);
	if (rc == LSM_OK && (rc = lsm_table_status(t->table, e)) != LSM_OK)
	{
		lsm_table_unref(t->table);
		t->table = NULL;
	}
	if (rc != LSM_OK)
	{
		path_in(st, number, path, sizeof(path));
		(void) lsm_env_unlink(path, NULL);
		lsm_table_meta_free(&t->meta);
		free(t);
		return rc;
	}
	lsm_table_filter(t->table, &t->filter);
	t->lo = lsm_key_fence(t->meta.smallest, t->meta.smallest_len, 0);
	t->hi = lsm_key_fence(t->meta.largest, t->meta.largest_len, 0);
	st->db->ctr.sst_bytes_written += t->meta.size;
	*out = t;
	return LSM_OK;
}

/* Opens a builder for the stage's next table file. */
static int
table_start(lsm_stage *st, lsm_table_builder **b, uint64_t *number,
			lsm_err *e)
{
	char		path[4096 + 64];
	int			rc;

	*number = st->next_number++;
	path_in(st, *number, path, sizeof(path));
	/* a file of that name is what a failed spill could not remove */
	(void) lsm_env_unlink(path, NULL);
	rc = lsm_table_builder_open(path, *number, st->db->opt.block_bytes,
								st->db->opt.key_bits_per_key, b, e);
	if (rc == LSM_OK)
		lsm_table_builder_defer_sync(*b);
	if (rc == LSM_OK && (rc = lsm_db_value_params(st->db, *b, e)) != LSM_OK)
	{
		lsm_table_builder_abandon(*b);
		*b = NULL;
	}
	return rc;
}

/* Sets a run's range fences from its tables. */
static void
run_bounds(stage_run *r)
{
	r->lo = r->tables[0]->lo;
	r->hi = r->tables[r->ntables - 1]->hi;
}

/* Widens the range of all tables by run r, the newest. */
static void
stage_extend_range(lsm_stage *st, const stage_run *r)
{
	const lsm_table_meta *lo = &r->tables[0]->meta,
			   *hi = &r->tables[r->ntables - 1]->meta;

	if (st->nruns == 1)
	{
		/* the first run: the range of all tables is its range */
		st->lo.len = st->hi.len = 0;
		st->have_range = true;
	}
	/* out of memory, lookups go without it (have_range false) */
	if (st->have_range &&
		(st->nruns == 1 ||
		 lsm_key_cmp(lo->smallest, lo->smallest_len, st->lo.data, st->lo.len) < 0))
	{
		st->lo.len = 0;
		st->have_range = lsm_buf_append(&st->lo, lo->smallest,
										lo->smallest_len) == LSM_OK;
		st->lo_fence = lsm_key_fence(st->lo.data, st->lo.len, 0);
	}
	if (st->have_range &&
		(st->nruns == 1 ||
		 lsm_key_cmp(hi->largest, hi->largest_len, st->hi.data, st->hi.len) > 0))
	{
		st->hi.len = 0;
		st->have_range = lsm_buf_append(&st->hi, hi->largest,
										hi->largest_len) == LSM_OK;
		st->hi_fence = lsm_key_fence(st->hi.data, st->hi.len, 0);
	}
}

/* Makes room for one more run.  LSM_NOMEM leaves the stage unchanged. */
static int
reserve_run(lsm_stage *st, lsm_err *e)
{
	int			cap;
	stage_run  *g;
	stage_table **c;

	if (st->nruns < st->cap)
		return LSM_OK;
	cap = st->cap ? st->cap * 2 : 16;
	g = realloc(st->runs, sizeof(stage_run) * (size_t) cap);
	if (g == NULL)
		return LSM_NOMEM_ERR(e);
	st->runs = g;
	c = realloc(st->cand, sizeof(stage_table *) * (size_t) cap);
	if (c == NULL)
		return LSM_NOMEM_ERR(e);
	st->cand = c;
	st->cap = cap;
	return LSM_OK;
}

static int
cmp_table_smallest(const void *a, const void *b)
{
	const stage_table *x = *(stage_table *const *) a;
	const stage_table *y = *(stage_table *const *) b;

	return lsm_key_cmp(x->meta.smallest, x->meta.smallest_len,
					   y->meta.smallest, y->meta.smallest_len);
}

/* A growing list of tables in key order: a run being made. */
typedef struct table_list
{
	stage_table **tables;
	int			n,
				cap;
} table_list;

static int
list_push(table_list *l, stage_table *t, lsm_err *e)
{
	if (l->n == l->cap)
	{
		int			cap = l->cap ? 2 * l->cap : 16;
		stage_table **g = realloc(l->tables, sizeof(stage_table *) * (size_t) cap);

		if (g == NULL)
			return LSM_NOMEM_ERR(e);
		l->tables = g;
		l->cap = cap;
	}
	l->tables[l->n++] = t;
	return LSM_OK;
}

/*
 * Writes the entries of it, positioned at its first, into new tables cut at
 * cut bytes (at most the buffer's size: a table builder holds hashes of its
 * table's entries, so no more memory than a spill), appended to out.  On
 * failure the tables it wrote are removed again and out is as it was.
 */
static int
write_tables(lsm_stage *st, lsm_iiter *it, uint64_t cut, table_list *out,
			 lsm_err *e)
{
	lsm_table_builder *b = NULL;
	stage_table *t;
	uint64_t	number = 0;
	int			first = out->n,
				rc = LSM_OK;

	while (rc == LSM_OK && it->valid)
	{
		if (b == NULL && (rc = table_start(st, &b, &number, e)) != LSM_OK)
			break;
		rc = lsm_table_builder_add(b, it->key, it->klen, it->seq, it->del,
								   it->val, it->vlen, e);
		if (rc != LSM_OK)
			break;
		lsm_iiter_next(it);
		if (it->rc != LSM_OK)
			rc = it->rc;
		else if (lsm_table_builder_size(b) >= cut || !it->valid)
		{
			rc = table_finish(st, b, number, &t, e);
			b = NULL;
			if (rc == LSM_OK && (rc = list_push(out, t, e)) != LSM_OK)
				table_free(st, t, true);
		}
	}
	if (rc == LSM_OK && it->rc != LSM_OK)
		rc = it->rc;
	if (rc != LSM_OK)
	{
		lsm_table_builder_abandon(b);
		while (out->n > first)
			table_free(st, out->tables[--out->n], true);
	}
	return rc;
}

/*
 * Writes the merge of tables[0 .. n) (one child per table: the heap of the
 * merging iterator sorts them out) into new tables cut at the buffer's
 * size, appended to out as write_tables does.  (A random load merges every
 * table of its runs, which end up in level 0 if they overlap the store:
 * tables as large as a buffer keep them few there.)
 */
static int
merge_tables(lsm_stage *st, stage_table **tables, int n, table_list *out,
			 lsm_err *e)
{
	lsm_iiter **kids = malloc(sizeof(lsm_iiter *) * (size_t) n);
	lsm_iiter  *m = NULL;
	int			i,
				rc = LSM_OK;

	if (kids == NULL)
		return LSM_NOMEM_ERR(e);
	for (i = 0; i < n; i++)
		if ((kids[i] = lsm_table_iter(tables[i]->table, e)) == NULL)
		{
			while (i > 0)
				lsm_iiter_destroy(kids[--i]);
			rc = LSM_NOMEM_ERR(e);
			break;
		}
	if (rc == LSM_OK && (m = lsm_merge_iter_new(kids, n, e)) == NULL)
		rc = LSM_NOMEM_ERR(e);
	free(kids);
	if (rc == LSM_OK)
	{
		lsm_iiter_seek(m, NULL, 0);
		rc = write_tables(st, m, st->limit, out, e);
	}
	lsm_iiter_destroy(m);
	return rc;
}

/*
 * Merges the n runs from runs[first] on (adjacent, oldest first) into one
 * run of tier + 1 in their place.  Their tables, in key order, fall into
 * groups that overlap each other; a table that overlaps no other stays as
 * it is, and each larger group is merged into new tables.  So an ascending
 * load is only lined up, and a nearly ascending one (rows arriving a few
 * thousand keys out of place: two interleaved ascending streams, pages of
 * a heap filled out of order) rewrites the tables around the edges of its
 * runs, not all of them.  On failure the stage is unchanged.
 */
static int
merge_runs(lsm_stage *st, int first, int n, lsm_err *e)
{
	stage_run  *in = &st->runs[first];
	stage_table **all;
	bool	   *gone;			/* all[i] was merged into new tables */
	stage_run	merged;
	table_list	out = {0};
	uint64_t	first_new = st->next_number;
	int			total = 0,
				i,
				j,
				rc = LSM_OK;

	for (i = 0; i < n; i++)
		total += in[i].ntables;
	all = malloc(sizeof(stage_table *) * (size_t) total);
	gone = calloc((size_t) total, sizeof(bool));
	if (all == NULL || gone == NULL)
	{
		free(all);
		free(gone);
		return LSM_NOMEM_ERR(e);
	}
	for (i = 0, total = 0; i < n; i++)
		for (j = 0; j < in[i].ntables; j++)
			all[total++] = in[i].tables[j];
	qsort(all, (size_t) total, sizeof(stage_table *), cmp_table_smallest);
	for (i = 0; i < total && rc == LSM_OK; i = j)
	{
		const lsm_table_meta *hi = &all[i]->meta;	/* the group's largest key */

		for (j = i + 1; j < total &&
			 lsm_key_cmp(all[j]->meta.smallest, all[j]->meta.smallest_len,
						 hi->largest, hi->largest_len) <= 0; j++)
			if (lsm_key_cmp(all[j]->meta.largest, all[j]->meta.largest_len,
							hi->largest, hi->largest_len) > 0)
				hi = &all[j]->meta;
		if (j == i + 1)
			rc = list_push(&out, all[i], e);
		else
		{
			rc = merge_tables(st, all + i, j - i, &out, e);
			memset(gone + i, true, (size_t) (j - i));
		}
	}
	if (rc == LSM_OK && out.n == 0)
		rc = LSM_CORRUPT(e, "a stage merge wrote nothing");
	if (rc != LSM_OK)
	{
		/* the new tables go; the inputs stay where they were */
		for (i = 0; i < out.n; i++)
			if (out.tables[i]->meta.number >= first_new)
				table_free(st, out.tables[i], true);
		free(out.tables);
		free(all);
		free(gone);
		return rc;
	}
	/* the inputs merged into new tables go */
	for (i = 0; i < total; i++)
		if (gone[i])
			table_free(st, all[i], true);
	free(all);
	free(gone);
	memset(&merged, 0, sizeof(merged));
	merged.tier = in[0].tier + 1;
	merged.tables = out.tables;
	merged.ntables = out.n;
	run_bounds(&merged);
	for (i = 0; i < n; i++)
		free(in[i].tables);
	st->runs[first] = merged;
	memmove(&st->runs[first + 1], &st->runs[first + n],
			sizeof(stage_run) * (size_t) (st->nruns - first - n));
	st->nruns -= n - 1;
	return LSM_OK;
}

/*
 * Merges runs while STAGE_MERGE_WIDTH runs of one tier follow each other
 * (the oldest of them).  Runs are in non-increasing tier order, so those
 * are the last ones.
 */
static int
consolidate(lsm_stage *st, lsm_err *e)
{
	for (;;)
	{
		int			last = st->nruns - 1,
					first = last,
					rc;

		if (last < 0)
			return LSM_OK;
		while (first > 0 && st->runs[first - 1].tier == st->runs[last].tier)
			first--;
		if (last - first + 1 < STAGE_MERGE_WIDTH)
			return LSM_OK;
		rc = merge_runs(st, first, STAGE_MERGE_WIDTH, e);
		if (rc != LSM_OK)
			return rc;
	}
}

/* ---------- open, free ---------- */

/*
 * An empty buffer, with a key filter: the glue looks up every key before
 * it inserts it, and a key the buffer does not hold then costs a cache line
 * instead of a descent of the skip list.
 */
static lsm_memtable *
new_buffer(const lsm_stage *st)
{
	lsm_memtable *mt = lsm_memtable_new();

	if (mt != NULL && lsm_memtable_filter_keys(mt, st->limit) != LSM_OK)
	{
		lsm_memtable_unref(mt);
		mt = NULL;
	}
	return mt;
}

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
	if (st == NULL)
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	st->db = db;
	st->limit = buffer_bytes ? buffer_bytes : db->opt.memtable_bytes;
	if ((st->mem = new_buffer(st)) == NULL)
	{
		free(st);
		return lsm_err_set(&db->err, LSM_NOMEM, "out of memory");
	}
	st->lock_fd = -1;
	st->next_number = 1;
	db->open_stages++;
	*out = st;
	return LSM_OK;
}

/* Releases everything of st and removes its directory. */
static void
stage_free(lsm_stage *st)
{
	int			i,
				j;

	for (i = 0; i < st->nruns; i++)
	{
		for (j = 0; j < st->runs[i].ntables; j++)
			table_free(st, st->runs[i].tables[j], false);
		free(st->runs[i].tables);
	}
	free(st->runs);
	free(st->cand);
	lsm_buf_free(&st->lo);
	lsm_buf_free(&st->hi);
	if (st->dir)
		lsm_dir_remove(st->dir);
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
	int			i,
				j;

	if (st == NULL)
		return 0;
	n = sizeof(*st) + lsm_memtable_arena_bytes(st->mem) +
		(size_t) st->cap * (sizeof(stage_run) + sizeof(stage_table *)) +
		st->lo.cap + st->hi.cap;
	for (i = 0; i < st->nruns; i++)
		for (j = 0; j < st->runs[i].ntables; j++)
		{
			const lsm_table_meta *m = &st->runs[i].tables[j]->meta;

			/* the table's bookkeeping, its keys, its verified-block bitmap */
			n += sizeof(stage_table) + sizeof(stage_table *) + 256 +
				m->smallest_len + m->largest_len + m->size / 4096 / 8;
		}
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
 * Writes the buffer as a new run (its tables' write-back started) and
 * starts an empty buffer, then, with merge, merges runs if a tier is full.
 * On failure the stage is unchanged (no file of the failed run is left
 * behind); a merge that fails leaves the runs as they were, and is retried
 * at the next spill.
 */
static int
spill(lsm_stage *st, bool merge, lsm_err *e)
{
	lsm_memtable *fresh;
	lsm_iiter  *it;
	table_list	out = {0};
	stage_run  *r;
	int			rc;

	if (lsm_memtable_entries(st->mem) == 0)
		return LSM_OK;
	if (st->dir == NULL && (rc = make_dir(st, e)) != LSM_OK)
		return rc;
	if ((rc = reserve_run(st, e)) != LSM_OK)
		return rc;
	/* taken now so that nothing can fail once the run is written */
	if ((fresh = new_buffer(st)) == NULL)
		return LSM_NOMEM_ERR(e);
	/* the newest version of each key, deletes kept: they delete the store's */
	it = lsm_memtable_iter(st->mem, UINT64_MAX, e);
	if (it == NULL)
		rc = LSM_NOMEM_ERR(e);
	else
	{
		/*
		 * Cut at the store's file size: a later merge of runs that overlap
		 * only at their edges rewrites no more than the tables there.
		 */
		lsm_iiter_seek(it, NULL, 0);
		rc = write_tables(st, it, st->db->opt.file_bytes < st->limit ?
						  st->db->opt.file_bytes : st->limit, &out, e);
	}
	lsm_iiter_destroy(it);
	if (rc != LSM_OK)
	{
		lsm_memtable_unref(fresh);
		free(out.tables);
		return rc;
	}
	r = &st->runs[st->nruns++];
	r->tier = 0;
	r->tables = out.tables;
	r->ntables = out.n;
	run_bounds(r);
	stage_extend_range(st, r);
	lsm_memtable_unref(st->mem);
	st->mem = fresh;
	if (merge)
	{
		lsm_err		me;

		/* only lookups are slower if it fails: it is tried again later */
		lsm_err_clear(&me);
		(void) consolidate(st, &me);
	}
	return LSM_OK;
}

/* What lsm_stage_get answers for a key the stage does not write. */
static int
absent(const lsm_stage *st)
{
	return st->truncated ? LSM_DELETED : LSM_NOTFOUND;
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

/*
 * Drops every table of the stage's runs (their files too) and empties the
 * buffer, for lsm_stage_truncate.
 */
int
lsm_stage_truncate(lsm_stage *st)
{
	lsm_memtable *fresh;
	int			i,
				j;

	if (st == NULL)
		return LSM_INVALID;
	if ((fresh = new_buffer(st)) == NULL)
		return lsm_err_set(&st->db->err, LSM_NOMEM, "out of memory");
	for (i = 0; i < st->nruns; i++)
	{
		for (j = 0; j < st->runs[i].ntables; j++)
			table_free(st, st->runs[i].tables[j], true);
		free(st->runs[i].tables);
	}
	st->nruns = 0;
	st->have_range = false;
	lsm_memtable_unref(st->mem);
	st->mem = fresh;
	st->count = 0;
	st->user_bytes = 0;
	st->truncated = true;
	return LSM_OK;
}

int
lsm_stage_truncated(const lsm_stage *st)
{
	return st != NULL && st->truncated;
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
		rc = spill(st, true, &e);
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

/* The table of run r whose range may hold key (fence kf), or NULL. */
static stage_table *
run_find(const stage_run *r, uint64_t kf, const void *key, size_t klen)
{
	int			lo = 0,
				hi = r->ntables;
	stage_table *t;

	if (kf < r->lo || kf > r->hi)
		return NULL;
	/* the first table whose largest key is >= key */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		const stage_table *x = r->tables[mid];

		if (x->hi < kf ||
			(x->hi == kf && lsm_key_cmp(x->meta.largest, x->meta.largest_len,
										key, klen) < 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->ntables)
		return NULL;
	t = r->tables[lo];
	return range_covers(t->lo, t->meta.smallest, t->meta.smallest_len, t->hi,
						t->meta.largest, t->meta.largest_len, kf, key, klen) ?
		t : NULL;
}

int
lsm_stage_get(lsm_stage *st, const void *key, size_t klen, void **val,
			  size_t *vlen)
{
	const uint8_t *mv;
	size_t		mvlen;
	uint64_t	mseq,
				kf,
				h = 0;
	bool		hashed = false;
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
	/* hashed only past the cheap checks: an ascending load's keys stop there */
	if (!lsm_memtable_past_last(st->mem, key, klen))
	{
		h = lsm_key_hash(key, klen);
		hashed = true;
		if (lsm_memtable_may_hold_key(st->mem, h) &&
			lsm_memtable_get(st->mem, key, klen, UINT64_MAX, &kind, &mv,
							 &mvlen, &mseq))
			return stage_found(st, kind == LSM_KIND_DEL, mv, mvlen, val, vlen);
	}
	if (st->nruns == 0)
		return absent(st);
	kf = lsm_key_fence(key, klen, 0);
	if (st->have_range &&
		!range_covers(st->lo_fence, st->lo.data, st->lo.len, st->hi_fence,
					  st->hi.data, st->hi.len, kf, key, klen))
		return absent(st);

	/*
	 * In each run (newest first) the one table that may hold the key; one
	 * hash for all of them, and their filter lines fetched together.
	 */
	if (!hashed)
		h = lsm_key_hash(key, klen);
	for (i = st->nruns - 1; i >= 0; i--)
	{
		stage_table *t = run_find(&st->runs[i], kf, key, klen);

		if (t == NULL)
			continue;
		st->cand[ncand++] = t;
		if (t->filter.num_lines > 0)
			lsm_bloom_prefetch(&t->filter, h);
	}
	lsm_err_clear(&e);
	for (i = 0; i < ncand; i++)
	{
		stage_table *t = st->cand[i];
		lsm_table_hit hit;

		if (t->filter.num_lines > 0 && !lsm_bloom_may_match(&t->filter, h))
			continue;
		rc = lsm_table_get(t->table, key, klen, &hit, &e);
		if (rc == LSM_NOTFOUND)
			continue;
		if (rc != LSM_OK)
			return lsm_db_fail(st->db, rc, &e);
		return stage_found(st, hit.del != 0, hit.val, hit.vlen, val, vlen);
	}
	return absent(st);
}

/* Builds the merging iterator of a stage iterator (lsm_iter_build). */
static lsm_iiter *
build_iter(void *arg, lsm_err *err)
{
	lsm_stage  *st = arg;
	lsm_iiter **kids;
	lsm_iiter  *m;
	int			n = 0,
				total = 1,
				i,
				j;

	for (i = 0; i < st->nruns; i++)
		total += st->runs[i].ntables;
	kids = malloc(sizeof(lsm_iiter *) * (size_t) total);
	if (kids == NULL)
		return NULL;
	/* the buffer as of now: later writes get later stage sequences */
	if ((kids[n] = lsm_memtable_iter(st->mem, st->seq, err)) != NULL)
		n++;
	for (i = 0; i < st->nruns && n > 0; i++)
		for (j = 0; j < st->runs[i].ntables && n > 0; j++)
		{
			if ((kids[n] = lsm_table_iter(st->runs[i].tables[j]->table, err)) == NULL)
			{
				while (n > 0)
					lsm_iiter_destroy(kids[--n]);
				break;
			}
			n++;
		}
	if (n != total)
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

/*
 * The stage's tables, its buffer written as a last run first (outside any
 * lock, and not merged: compaction is about to merge everything anyway),
 * each fsynced (invariant 8: only now, so that tables merged away never
 * waited on the disk, and the rest were written back while the load went
 * on): *metas (the stage's, not copies) and *run_of, n of them; the caller
 * frees the two arrays.
 */
static int
stage_tables(lsm_stage *st, lsm_table_meta **metas, int **run_of, int *n,
			 lsm_err *e)
{
	int			rc,
				i,
				j;

	*metas = NULL;
	*run_of = NULL;
	*n = 0;
	if ((rc = spill(st, false, e)) != LSM_OK)
		return rc;
	for (i = 0; i < st->nruns; i++)
		*n += st->runs[i].ntables;
	if ((*metas = malloc(sizeof(lsm_table_meta) * (size_t) (*n + 1))) == NULL ||
		(*run_of = malloc(sizeof(int) * (size_t) (*n + 1))) == NULL)
		return LSM_NOMEM_ERR(e);
	*n = 0;
	for (i = 0; i < st->nruns; i++)
		for (j = 0; j < st->runs[i].ntables; j++)
		{
			char		path[4096 + 64];

			path_in(st, st->runs[i].tables[j]->meta.number, path, sizeof(path));
			if ((rc = lsm_env_fsync_path(path, e)) != LSM_OK)
				return rc;
			(*metas)[*n] = st->runs[i].tables[j]->meta;
			(*run_of)[(*n)++] = i;
		}
	return LSM_OK;
}

/*
 * Whether the stage commits (or prepares) as one batch.  A larger buffer
 * goes in as a table: as a batch it would be written to the log, inserted
 * into the memtable and written again by a flush.
 */
static bool
stage_is_small(const lsm_stage *st)
{
	return st->nruns == 0 && !st->truncated &&
		lsm_memtable_bytes(st->mem) <= st->db->opt.memtable_bytes / 4;
}

int
lsm_stage_commit(lsm_stage *st, int flags)
{
	lsm_db	   *db;
	lsm_err		e;
	bool		sync,
				installed = false;
	int			rc = LSM_OK;

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
	sync = lsm_db_sync_of(db, flags);
	lsm_err_clear(&e);
	if (stage_is_small(st))
	{
		lsm_batch  *b = NULL;

		if (lsm_memtable_entries(st->mem) > 0)
			rc = buffer_batch(st, &b, &e);
		if (b != NULL)
		{
			rc = lsm_db_write(db, b, sync, false, &e);
			lsm_batch_free(b);
		}
	}
	else
	{
		lsm_table_meta *metas;
		int		   *run_of,
					n;

		rc = stage_tables(st, &metas, &run_of, &n, &e);
		if (rc == LSM_OK)
		{
			rc = lsm_db_ingest(db, st->dir, metas, run_of, n, st->nruns,
							   st->truncated, 0, &installed, &e);
			if (rc == LSM_OK || installed)
				db->ctr.user_bytes_written += st->user_bytes;
		}
		free(metas);
		free(run_of);
	}
	stage_free(st);
	lsm_db_compact_if_due(db);
	return lsm_db_fail(db, rc, &e);
}

int
lsm_stage_prepare(lsm_stage *st, uint64_t owner, int flags)
{
	lsm_db	   *db;
	lsm_err		e;
	int			rc = LSM_OK;

	if (st == NULL)
		return LSM_INVALID;
	db = st->db;
	lsm_err_clear(&e);
	if (stage_is_small(st))
	{
		lsm_batch  *b = NULL;

		/* a batch: lsm_prepare checks the owner and flags */
		if (lsm_memtable_entries(st->mem) == 0)
			rc = lsm_err_set(&e, LSM_INVALID, "an empty stage cannot be prepared");
		else if ((rc = buffer_batch(st, &b, &e)) == LSM_OK)
		{
			stage_free(st);
			rc = lsm_prepare(db, b, owner, flags);
			lsm_batch_free(b);
			return rc;
		}
	}
	else
	{
		lsm_table_meta *metas;
		int		   *run_of,
					n;

		rc = stage_tables(st, &metas, &run_of, &n, &e);
		if (rc == LSM_OK)
			rc = lsm_db_prepare_tables(db, st->dir, metas, run_of, n,
									   st->nruns, st->truncated, owner,
									   flags, &e);
		free(metas);
		free(run_of);
	}
	stage_free(st);
	return lsm_db_fail(db, rc, &e);
}

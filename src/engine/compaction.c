/*
 * compaction.c
 *		Leveled compaction, LevelDB style.
 *
 * Level 0 is compacted when it holds l0_compaction_trigger files: all of
 * them merge with the overlapping level-1 files.  Level n >= 1 is compacted
 * when its bytes exceed its target (level 1: l0_compaction_trigger memtables;
 * each level below level_ratio times the one above): one file, chosen round
 * robin by key, merges with the overlapping files of level n + 1.  A file
 * with no overlap below just moves down (no rewrite).  Outputs are cut at
 * file_bytes.  Only the newest version of each key survives (an iterator
 * that needs an older one pins the old files); a tombstone is dropped when
 * no deeper level holds the key.
 *
 * Concurrency: the merge runs under LOCK.compact only, so writers keep
 * committing; the result is installed under the write lock after catching
 * up (newer level-0 files flushed meanwhile stay where they are, and they
 * are newer than everything the compaction read).  Inputs are removed after
 * the manifest that dropped them is durable (invariant 5); processes that
 * still map them keep reading them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <stdlib.h>

#include "compaction.h"
#include "db.h"
#include "env.h"

typedef struct compaction compaction;
static int	step(lsm_db *db, int level, bool *did, lsm_err *e);
static int	compact_locked(lsm_db *db, bool yield, lsm_err *e);

struct compaction
{
	lsm_version *base;			/* the version the inputs come from (pinned) */
	int			level;			/* inputs from level and level + 1 */
	int			n[2];
	lsm_file  **in[2];
	bool		trivial_move;
};

static uint64_t
level_target(const lsm_db *db, int level)
{
	uint64_t	t = (uint64_t) db->opt.memtable_bytes *
		(uint64_t) db->opt.l0_compaction_trigger;
	int			i;

	for (i = 1; i < level; i++)
		t *= (uint64_t) db->opt.level_ratio;
	return t;
}

static void
compaction_free(compaction *c)
{
	lsm_version_unref(c->base);
	free(c->in[0]);
	free(c->in[1]);
}

/* Adds the files of level that overlap [lo, hi] to c->in[which]. */
static int
add_overlapping(const lsm_version *v, int level, const uint8_t *lo, size_t lolen,
				const uint8_t *hi, size_t hilen, compaction *c, int which)
{
	int			i;

	c->in[which] = malloc(sizeof(lsm_file *) * (v->nfiles[level] + 1));
	if (c->in[which] == NULL)
		return LSM_NOMEM;
	for (i = 0; i < v->nfiles[level]; i++)
		if (lsm_file_overlaps(v->files[level][i], lo, lolen, hi, hilen))
			c->in[which][c->n[which]++] = v->files[level][i];
	return LSM_OK;
}

/*
 * The level most in need of compaction in the handle's current version, or
 * -1 if none is due: level 0 at l0_compaction_trigger files or more, a
 * deeper level at or over its target bytes (the highest ratio wins).  The
 * one criterion of pick and lsm_compaction_needed.
 */
static int
urgent_level(const lsm_db *db)
{
	const lsm_version *v = db->current;
	double		best = 1.0;
	int			level = -1,
				l;

	for (l = 0; l < LSM_MAX_LEVELS - 1; l++)
	{
		double		score = l == 0 ?
			(double) v->nfiles[0] / db->opt.l0_compaction_trigger :
			(double) lsm_version_level_bytes(v, l) / level_target(db, l);

		if (score >= best)
		{
			best = score;
			level = l;
		}
	}
	return level;
}

/*
 * Sets c up for the most urgent compaction of the handle's current version.
 * False if no level is due (or on failure: *rc).
 */
static bool
pick(lsm_db *db, compaction *c, int *rc)
{
	const lsm_version *v = db->current;
	int			level,
				i;
	const uint8_t *lo,
			   *hi;
	size_t		lolen,
				hilen;

	memset(c, 0, sizeof(*c));
	*rc = LSM_OK;
	c->base = db->current;
	lsm_version_ref(c->base);
	level = urgent_level(db);
	if (level < 0)
		return false;
	c->level = level;
	if (level == 0)
	{
		c->in[0] = malloc(sizeof(lsm_file *) * v->nfiles[0]);
		if (c->in[0] == NULL)
			return (*rc = LSM_NOMEM), false;
		lo = hi = NULL;
		lolen = hilen = 0;
		for (i = 0; i < v->nfiles[0]; i++)
		{
			const lsm_table_meta *m = &v->files[0][i]->meta;

			c->in[0][c->n[0]++] = v->files[0][i];
			if (lo == NULL || lsm_key_cmp(m->smallest, m->smallest_len, lo, lolen) < 0)
				lo = m->smallest, lolen = m->smallest_len;
			if (hi == NULL || lsm_key_cmp(m->largest, m->largest_len, hi, hilen) > 0)
				hi = m->largest, hilen = m->largest_len;
		}
	}
	else
	{
		lsm_buf    *ptr = &db->compact_ptr[level];
		lsm_file   *f;

		/* round robin: the first file after the last one compacted */
		i = 0;
		if (ptr->len > 0)
		{
			for (i = 0; i < v->nfiles[level]; i++)
				if (lsm_key_cmp(v->files[level][i]->meta.smallest,
								v->files[level][i]->meta.smallest_len,
								ptr->data, ptr->len) > 0)
					break;
			if (i == v->nfiles[level])
				i = 0;
		}
		f = v->files[level][i];
		c->in[0] = malloc(sizeof(lsm_file *));
		if (c->in[0] == NULL)
			return (*rc = LSM_NOMEM), false;
		c->in[0][c->n[0]++] = f;
		lo = f->meta.smallest;
		lolen = f->meta.smallest_len;
		hi = f->meta.largest;
		hilen = f->meta.largest_len;
		ptr->len = 0;
		if (lsm_buf_append(ptr, lo, lolen) != LSM_OK)
			return (*rc = LSM_NOMEM), false;
	}
	if (add_overlapping(v, level + 1, lo, lolen, hi, hilen, c, 1) != LSM_OK)
		return (*rc = LSM_NOMEM), false;
	c->trivial_move = level > 0 && c->n[1] == 0;
	return true;
}

/*
 * Sets c up to merge every file of level with the overlapping files of
 * level + 1 (manual full compaction).  False if level is empty.
 */
static bool
pick_whole_level(lsm_db *db, int level, compaction *c, int *rc)
{
	const lsm_version *v = db->current;
	const uint8_t *lo = NULL,
			   *hi = NULL;
	size_t		lolen = 0,
				hilen = 0;
	int			i;

	memset(c, 0, sizeof(*c));
	*rc = LSM_OK;
	if (v->nfiles[level] == 0)
		return false;
	c->base = db->current;
	lsm_version_ref(c->base);
	c->level = level;
	c->in[0] = malloc(sizeof(lsm_file *) * v->nfiles[level]);
	if (c->in[0] == NULL)
		return (*rc = LSM_NOMEM), false;
	for (i = 0; i < v->nfiles[level]; i++)
	{
		const lsm_table_meta *m = &v->files[level][i]->meta;

		c->in[0][c->n[0]++] = v->files[level][i];
		if (lo == NULL || lsm_key_cmp(m->smallest, m->smallest_len, lo, lolen) < 0)
			lo = m->smallest, lolen = m->smallest_len;
		if (hi == NULL || lsm_key_cmp(m->largest, m->largest_len, hi, hilen) > 0)
			hi = m->largest, hilen = m->largest_len;
	}
	if (add_overlapping(v, level + 1, lo, lolen, hi, hilen, c, 1) != LSM_OK)
		return (*rc = LSM_NOMEM), false;
	c->trivial_move = level > 0 && c->n[1] == 0;
	return true;
}

/* Is no level below `level` holding key?  (tombstones may then go) */
static bool
is_bottom_for(const lsm_version *v, int level, const uint8_t *key, size_t klen)
{
	int			l;

	for (l = level + 1; l < LSM_MAX_LEVELS; l++)
	{
		int			i = lsm_version_find_file(v, l, key, klen);

		if (i < v->nfiles[l] &&
			lsm_key_cmp(v->files[l][i]->meta.smallest,
						v->files[l][i]->meta.smallest_len, key, klen) <= 0)
			return false;
	}
	return true;
}

/* Merges the inputs into new tables at level + 1. */
static int
run(lsm_db *db, compaction *c, lsm_file ***outs, int *nouts, lsm_err *e)
{
	lsm_version *v = c->base;
	lsm_iiter  *kids[128];
	lsm_iiter **children = kids;
	lsm_iiter  *m;
	lsm_table_builder *b = NULL;
	int			n = 0,
				cap = 0,
				i,
				w,
				rc = LSM_OK;
	uint64_t	number = v->next_file;
	long		steps = 0;

	*outs = NULL;
	*nouts = 0;
	if (c->n[0] + 1 > (int) (sizeof(kids) / sizeof(kids[0])))
	{
		children = malloc(sizeof(lsm_iiter *) * (c->n[0] + 1));
		if (children == NULL)
			return LSM_NOMEM_ERR(e);
	}

	/*
	 * Level-0 inputs overlap: one child each.  Inputs from a deeper level
	 * are disjoint and sorted: one concatenating child per level, so the
	 * merge compares a handful of keys per step, not one per file.
	 */
	for (w = 0; w < 2; w++)
	{
		bool		concat = c->level + w > 0;

		for (i = 0; i < (concat ? 1 : c->n[w]) && c->n[w] > 0; i++)
		{
			children[n] = concat ?
				lsm_level_iter_new(v, c->in[w], c->n[w], e) :
				lsm_table_iter(c->in[w][i]->table, e);
			if (children[n] == NULL)
			{
				while (n > 0)
					lsm_iiter_destroy(children[--n]);
				if (children != kids)
					free(children);
				return LSM_NOMEM_ERR(e);
			}
			n++;
		}
	}
	m = lsm_merge_iter_new(children, n, e);
	if (children != kids)
		free(children);
	if (m == NULL)
		return LSM_NOMEM_ERR(e);

	for (lsm_iiter_seek(m, NULL, 0); m->valid; lsm_iiter_next(m))
	{
		if ((++steps & 1023) == 0 && lsm_db_interrupted(db))
		{
			rc = lsm_err_set(e, LSM_INTERRUPTED, "compaction interrupted");
			break;
		}
		if (m->del && is_bottom_for(v, c->level + 1, m->key, m->klen))
			continue;
		if (b == NULL)
		{
			if ((rc = lsm_db_new_table(db, &number, false, &b, e)) != LSM_OK)
				break;
			number++;
		}
		rc = lsm_table_builder_add(b, m->key, m->klen, m->seq, m->del,
								   m->val, m->vlen, e);
		if (rc != LSM_OK)
			break;
		if (lsm_table_builder_size(b) >= db->opt.file_bytes)
		{
			lsm_file   *f = lsm_file_new();

			if (f == NULL || *nouts == cap)
			{
				lsm_file  **grown;

				cap = cap ? cap * 2 : 8;
				grown = realloc(*outs, sizeof(lsm_file *) * cap);
				if (f == NULL || grown == NULL)
				{
					free(f);
					if (grown)
						*outs = grown;
					rc = LSM_NOMEM_ERR(e);
					break;
				}
				*outs = grown;
			}
			rc = lsm_table_builder_finish(b, &f->meta, e);
			b = NULL;
			if (rc != LSM_OK)
			{
				free(f);
				break;
			}
			(*outs)[(*nouts)++] = f;
			db->ctr.sst_bytes_written += f->meta.size;
		}
	}
	if (rc == LSM_OK && m->rc != LSM_OK)
		rc = m->rc;
	lsm_iiter_destroy(m);
	if (rc == LSM_OK && b != NULL)
	{
		lsm_file   *f = lsm_file_new();
		lsm_file  **grown = realloc(*outs, sizeof(lsm_file *) * (*nouts + 1));

		if (grown)
			*outs = grown;
		if (f == NULL || grown == NULL)
		{
			free(f);
			rc = LSM_NOMEM_ERR(e);
		}
		else
		{
			rc = lsm_table_builder_finish(b, &f->meta, e);
			b = NULL;
			if (rc == LSM_OK)
			{
				(*outs)[(*nouts)++] = f;
				db->ctr.sst_bytes_written += f->meta.size;
			}
			else
				free(f);
		}
	}
	lsm_table_builder_abandon(b);
	/* invariant (1): the outputs' directory entries are durable */
	if (rc == LSM_OK && *nouts > 0)
		rc = lsm_env_fsync_dir(db->dir, e);
	return rc;
}

/* Removes output files that will not be installed. */
static void
discard_outputs(lsm_db *db, lsm_file **outs, int nouts)
{
	int			i;

	for (i = 0; i < nouts; i++)
	{
		lsm_db_remove_table(db, outs[i]->meta.number);
		lsm_file_unref(outs[i]);
	}
	free(outs);
}

/*
 * The version c's result makes of base: its inputs dropped, its outputs (or
 * for a move, its input) added one level down.  NULL when out of memory.
 */
static lsm_version *
edit_of(const compaction *c, const lsm_version *base, lsm_file **outs,
		int nouts)
{
	uint64_t   *drop;
	lsm_version *v;
	int			ndrop = 0,
				w,
				i;

	drop = malloc(sizeof(uint64_t) * (c->n[0] + c->n[1] + 1));
	if (drop == NULL)
		return NULL;
	for (w = 0; w < 2; w++)
		for (i = 0; i < c->n[w]; i++)
			drop[ndrop++] = c->in[w][i]->meta.number;
	if (c->trivial_move)
	{
		/* base's own file objects: base may be a newer version than c's */
		lsm_file  **moved = malloc(sizeof(lsm_file *) * (c->n[0] + 1));
		int			n = 0;

		v = NULL;
		if (moved)
		{
			for (i = 0; i < base->nfiles[c->level]; i++)
				for (w = 0; w < c->n[0]; w++)
					if (base->files[c->level][i]->meta.number ==
						c->in[0][w]->meta.number)
						moved[n++] = base->files[c->level][i];
			v = lsm_version_edit(base, drop, ndrop, moved, n, c->level + 1);
			free(moved);
		}
	}
	else
		v = lsm_version_edit(base, drop, ndrop, outs, nouts, c->level + 1);
	free(drop);
	if (v)
		for (i = 0; i < nouts; i++)
			if (outs[i]->meta.number >= v->next_file)
				v->next_file = outs[i]->meta.number + 1;
	return v;
}

/*
 * The hierarchy after c, computed before the write lock is taken: levels
 * >= 1 change only under LOCK.compact, which we hold, so the tree at
 * install time is base's (install checks).  *root gets a reference.
 */
static int
prepare_tree(lsm_db *db, compaction *c, lsm_file **outs, int nouts,
			 lsm_hnode **root, uint64_t *next_file, lsm_err *e)
{
	lsm_version *v = edit_of(c, c->base, outs, nouts);
	int			rc;

	*root = NULL;
	if (v == NULL)
		return LSM_NOMEM_ERR(e);
	rc = lsm_db_update_tree(db, v, c->base->hroot, next_file, e);
	if (rc == LSM_OK && (*root = v->hroot) != NULL)
		lsm_hnode_ref(*root);
	lsm_version_unref(v);
	return rc;
}

/*
 * Installs the result of c under the write lock, with the hierarchy root
 * prepared for it (node files numbered below next_file).  *installed tells
 * whether the new manifest was switched in, even if a later step failed
 * (its outputs must then stay).
 */
static int
install(lsm_db *db, compaction *c, lsm_file **outs, int nouts,
		lsm_hnode *root, uint64_t next_file, bool *installed, lsm_err *e)
{
	lsm_version *v;
	int			rc;

	rc = lsm_db_write_lock(db, e);
	if (rc != LSM_OK)
		return rc;
	v = edit_of(c, db->current, outs, nouts);
	if (v == NULL)
		rc = LSM_NOMEM_ERR(e);
	else if (db->current->hroot == c->base->hroot)
	{
		lsm_hnode_unref(v->hroot);
		v->hroot = root;
		if (root)
			lsm_hnode_ref(root);
		if (v->next_file < next_file)
			v->next_file = next_file;
	}
	else
	{
		/* not expected: someone else changed the tree; redo it here */
		rc = lsm_db_update_tree(db, v, db->current->hroot, &next_file, e);
		if (v->next_file < next_file)
			v->next_file = next_file;
	}
	if (rc == LSM_OK)
	{
		rc = lsm_db_install(db, v, e);
		*installed = db->current == v;
	}
	lsm_version_unref(v);
	if (rc == LSM_OK)
	{
		/* invariant (5): the manifest without the inputs is durable */
		(void) lsm_db_remove_obsolete(db, db->current, false);
		db->ctr.compactions++;
	}
	lsm_db_write_unlock(db);
	return rc;
}

int
lsm_db_compact(lsm_db *db, bool wait, lsm_err *e)
{
	int			rc;

	/* an automatic one leaves the work to a process waiting to do it */
	if (!wait && lsm_db_compact_wanted(db))
		return LSM_OK;
	rc = lsm_db_compact_lock(db, wait, e);
	if (rc == LSM_BUSY && !wait)
		return LSM_OK;			/* someone else is compacting */
	if (rc != LSM_OK)
		return rc;
	return compact_locked(db, !wait, e);
}

/*
 * Compacts until no level is due (with yield: or a process waits for
 * LOCK.compact, lsm_db_compact_wanted), removes what dead processes left,
 * and releases LOCK.compact.  REQUIRES: LOCK.compact held.
 */
static int
compact_locked(lsm_db *db, bool yield, lsm_err *e)
{
	int			rc;

	/* the process a claim was for, if it is us, has begun */
	if (db->page)
		__atomic_store_n(&db->page->compact_claim, 0, __ATOMIC_SEQ_CST);
	for (;;)
	{
		bool		did;

		rc = step(db, -1, &did, e);
		if (rc != LSM_OK || !did)
			break;
		/* with yield, a process waiting for the lock takes over */
		if (yield && lsm_db_compact_wanted(db))
			break;
	}
	/* leftovers of a process that died mid-flush or mid-compaction */
	if (rc == LSM_OK && lsm_db_remove_obsolete(db, db->current, true) > 0 &&
		lsm_db_write_lock(db, e) == LSM_OK)
	{
		(void) lsm_db_remove_obsolete(db, db->current, false);
		lsm_db_write_unlock(db);
	}
	lsm_env_unlock(db->compact_fd);
	return rc;
}

/*
 * One compaction: the most urgent one (level < 0) or all of `level` into
 * the level below.  *did tells whether there was anything to do.
 * REQUIRES: LOCK.compact held.
 */
static int
step(lsm_db *db, int level, bool *did, lsm_err *e)
{
	compaction	c;
	lsm_file  **outs = NULL;
	lsm_hnode  *root = NULL;
	uint64_t	next_file = 0;
	int			nouts = 0;
	bool		installed = false;
	int			rc;

	*did = false;
	memset(&c, 0, sizeof(c));
	rc = lsm_db_catch_up(db, e);
	if (rc != LSM_OK)
		return rc;
	if (!(level < 0 ? pick(db, &c, &rc) : pick_whole_level(db, level, &c, &rc)))
	{
		compaction_free(&c);
		return rc == LSM_NOMEM ? LSM_NOMEM_ERR(e) : rc;
	}
	if (!c.trivial_move)
		rc = run(db, &c, &outs, &nouts, e);
	if (rc == LSM_OK)
		rc = prepare_tree(db, &c, outs, nouts, &root, &next_file, e);
	if (rc == LSM_OK)
		rc = install(db, &c, outs, nouts, root, next_file, &installed, e);
	lsm_hnode_unref(root);
	compaction_free(&c);
	if (rc != LSM_OK && !installed)
	{
		discard_outputs(db, outs, nouts);
		return rc;
	}
	while (nouts > 0)
		lsm_file_unref(outs[--nouts]);
	free(outs);
	*did = rc == LSM_OK;
	return rc;
}

void
lsm_db_compact_if_due(lsm_db *db)
{
	lsm_err		e;

	if (db == NULL || !db->compact_due || db->user_locked)
		return;
	db->compact_due = false;
	if (db->current->nfiles[0] < db->opt.l0_compaction_trigger)
		return;
	lsm_err_clear(&e);
	if (lsm_db_compact(db, false, &e) != LSM_OK)
		lsm_db_background_failed(db, "compaction", &e);
}

int
lsm_compact_all(lsm_db *db)
{
	lsm_err		e;
	int			rc;
	int			l,
				deepest;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = lsm_flush(db);
	if (rc != LSM_OK)
		return rc;
	rc = lsm_db_compact_lock(db, true, &e);
	if (rc != LSM_OK)
		return lsm_db_fail(db, rc, &e);
	rc = lsm_db_catch_up(db, &e);
	for (l = 0; rc == LSM_OK && l < LSM_MAX_LEVELS - 1; l++)
	{
		bool		did;

		/* push everything down to the deepest level that holds data */
		for (deepest = LSM_MAX_LEVELS - 1; deepest > 0; deepest--)
			if (db->current->nfiles[deepest] > 0)
				break;
		if (deepest == 0 && db->current->nfiles[0] > 0)
			deepest = 1;
		if (l >= deepest)
			break;
		rc = step(db, l, &did, &e);
	}
	lsm_env_unlock(db->compact_fd);
	return lsm_db_fail(db, rc, &e);
}

int
lsm_compact(lsm_db *db)
{
	lsm_err		e;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = lsm_db_compact(db, true, &e);
	return lsm_db_fail(db, rc, &e);
}

int
lsm_compact_try(lsm_db *db)
{
	lsm_err		e;
	int			rc;

	if (db == NULL)
		return LSM_INVALID;
	lsm_err_clear(&e);
	rc = lsm_db_compact_lock(db, false, &e);
	if (rc == LSM_BUSY)
		return lsm_err_set(&db->err, LSM_BUSY,
						   "another process is compacting the store (\"%s\" is locked)",
						   "LOCK.compact");
	if (rc == LSM_OK)
		rc = compact_locked(db, false, &e);
	return lsm_db_fail(db, rc, &e);
}

int
lsm_compaction_needed(lsm_db *db)
{
	return db != NULL && db->current != NULL && urgent_level(db) >= 0;
}

int
lsm_level_files(lsm_db *db, int level)
{
	if (db == NULL || db->current == NULL || level < 0 ||
		level >= LSM_MAX_LEVELS)
		return 0;
	return db->current->nfiles[level];
}

int
lsm_compaction_running(lsm_db *db)
{
	/* our own LOCK.compact: a second flock would succeed and unlocking drop it */
	if (db == NULL || db->opt.read_only || db->user_locked)
		return false;
	return lsm_db_side_lock_probe(db, &db->compact_fd, "LOCK.compact") ==
		LSM_BUSY;
}

int
lsm_compaction_claim(lsm_db *db, int ttl_ms)
{
	if (db == NULL || db->opt.read_only || db->user_locked ||
		lsm_compaction_running(db))
		return false;
	if (db->page == NULL)
		return true;			/* nowhere to record a claim: any caller may */
	return lsm_db_claim(&db->page->compact_claim, ttl_ms);
}

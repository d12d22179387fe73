/*
 * hierarchy.c
 *		The Bloofi tree over the value filters, its node files, and the flat
 *		(bit-sliced) organisation.  See hierarchy.h for the design.
 *
 * lsm_hier_update works on a scratch copy of the tree ("work" nodes that
 * point back at the unchanged original nodes): it removes the leaves that
 * left, dissolves underfull nodes, inserts the new leaves, and finally
 * turns the copy into nodes again, reusing every original subtree nothing
 * touched and writing a node file only for the changed nodes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "env.h"
#include "hierarchy.h"

#define MAX_FANOUT 4096

struct lsm_nodefile
{
	int			refs;
	uint64_t	number;
	const uint8_t *map;
	size_t		size;
};

static void
nodefile_unref(lsm_nodefile *nf)
{
	if (nf == NULL || --nf->refs > 0)
		return;
	lsm_env_munmap(nf->map, nf->size);
	free(nf);
}

void
lsm_hnode_ref(lsm_hnode *n)
{
	n->refs++;
}

void
lsm_hnode_unref(lsm_hnode *n)
{
	int			i;

	if (n == NULL || --n->refs > 0)
		return;
	for (i = 0; i < n->nchild; i++)
		lsm_hnode_unref(n->child[i]);
	free(n->child);
	lsm_file_unref(n->file);
	nodefile_unref(n->nf);
	free(n);
}

bool
lsm_hier_is_leaf(const lsm_file *f, int level)
{
	return level >= 1 && f->meta.value_filter_bytes > 0;
}

static lsm_hnode *
leaf_new(lsm_file *f)
{
	lsm_hnode  *n = calloc(1, sizeof(*n));

	if (n == NULL)
		return NULL;
	n->refs = 1;
	n->nleaves = 1;
	n->number = f->meta.number;
	n->file = f;
	lsm_file_ref(f);
	return n;
}

int
lsm_file_value_filter(const lsm_version *v, const lsm_file *f, int field,
					  lsm_bloom *out, lsm_err *e)
{
	int			rc = lsm_table_status(f->table, e);
	uint64_t	have;

	memset(out, 0, sizeof(*out));
	if (rc != LSM_OK)
		return rc;
	have = lsm_table_value_filter_bytes(f->table);
	if (have != f->meta.value_filter_bytes)
		return LSM_CORRUPT(e, "%06llu.sst has %llu bytes of value filter and block locator, the manifest says %llu",
						   (unsigned long long) f->meta.number,
						   (unsigned long long) have,
						   (unsigned long long) f->meta.value_filter_bytes);
	return lsm_table_value_filter(f->table, field, v->value_filter_bits,
								  v->value_filter_hashes, out, e);
}

/*
 * The value filter of leaf table f of v, which has exactly m bits and k
 * hashes (lsm_file_value_filter), so no caller ever ORs, compares or
 * transposes fewer than m bits.
 */
static int
leaf_filter(const lsm_version *v, const lsm_file *f, lsm_bloom *lf,
			lsm_err *e)
{
	int			rc = lsm_file_value_filter(v, f, -1, lf, e);

	/* the manifest says it has a filter: then it has one with values */
	if (rc == LSM_NOTFOUND || (rc == LSM_OK && lf->num_lines == 0))
		return LSM_CORRUPT(e, "table %06llu.sst is a hierarchy leaf but has no value filter",
						   (unsigned long long) f->meta.number);
	return rc;
}

/*
 * The bits of a node: a leaf's value filter, a stored node's file.  No
 * lines (num_lines = 0) for a saturated (or damaged) node, which matches
 * everything.
 */
static int
node_filter(const lsm_version *v, const lsm_hnode *n, lsm_bloom *f,
			lsm_err *e)
{
	if (n->nchild > 0)
	{
		*f = n->filter;
		return LSM_OK;
	}
	return leaf_filter(v, n->file, f, e);
}

/*
 * Checks the value filter of every leaf-eligible file of v, before anything
 * is sized by m: a manifest whose m the tables do not have stops here.
 */
static int
check_leaves(const lsm_version *v, lsm_file **leaves, int nleaves, lsm_err *e)
{
	lsm_bloom	lf;
	int			i,
				rc;

	for (i = 0; i < nleaves; i++)
	{
		rc = leaf_filter(v, leaves[i], &lf, e);
		if (rc != LSM_OK)
			return rc;
	}
	return LSM_OK;
}

/* ---------- manifest encoding ---------- */

static int
encode(const lsm_hnode *n, lsm_buf *out)
{
	int			i;

	if (lsm_buf_append_varint(out, (uint64_t) n->nchild) != LSM_OK ||
		lsm_buf_append_varint(out, n->number) != LSM_OK)
		return LSM_NOMEM;
	for (i = 0; i < n->nchild; i++)
		if (encode(n->child[i], out) != LSM_OK)
			return LSM_NOMEM;
	return LSM_OK;
}

int
lsm_hier_encode(const lsm_hnode *root, lsm_buf *out)
{
	if (lsm_buf_append_varint(out, root ? 1 : 0) != LSM_OK)
		return LSM_NOMEM;
	return root ? encode(root, out) : LSM_OK;
}

static int
cmp_file_ptr(const void *a, const void *b)
{
	uint64_t	x = (*(lsm_file *const *) a)->meta.number;
	uint64_t	y = (*(lsm_file *const *) b)->meta.number;

	return (x > y) - (x < y);
}

/* The leaf-eligible files of v sorted by number (caller frees). */
static lsm_file **
eligible_leaves(const lsm_version *v, int *n)
{
	lsm_file  **a;
	int			l,
				i,
				cap = 1;

	for (l = 1; l < LSM_MAX_LEVELS; l++)
		cap += v->nfiles[l];
	a = malloc(sizeof(lsm_file *) * cap);
	*n = 0;
	if (a == NULL)
		return NULL;
	for (l = 1; l < LSM_MAX_LEVELS; l++)
		for (i = 0; i < v->nfiles[l]; i++)
			if (lsm_hier_is_leaf(v->files[l][i], l))
				a[(*n)++] = v->files[l][i];
	qsort(a, *n, sizeof(lsm_file *), cmp_file_ptr);
	return a;
}

/* The index of file number in a[0..n) (sorted by number), or -1. */
static int
leaf_index(lsm_file **a, int n, uint64_t number)
{
	lsm_file	key;
	lsm_file   *kp = &key;
	lsm_file  **hit;

	key.meta.number = number;
	hit = n ? bsearch(&kp, a, n, sizeof(lsm_file *), cmp_file_ptr) : NULL;
	return hit ? (int) (hit - a) : -1;
}

static lsm_file *
find_leaf(lsm_file **a, int n, uint64_t number)
{
	int			i = leaf_index(a, n, number);

	return i < 0 ? NULL : a[i];
}

/* What decode needs besides the bytes: the leaves it may name. */
typedef struct decoder
{
	lsm_file  **leaves;			/* the eligible files, sorted by number */
	uint8_t    *taken;			/* per leaf: named by the tree already */
	int			nleaves;
	uint64_t	next_file;		/* node files are numbered below it */
	uint64_t   *nodes;			/* the node files named so far */
	int			nnodes;
	int			capnodes;
	lsm_err    *e;
} decoder;

/*
 * Decodes the node at *p (depth below the root) into *out.  LSM_CORRUPTION
 * (message in d->e, without position: the caller adds it) or LSM_NOMEM.
 */
static int
decode(decoder *d, const uint8_t **p, const uint8_t *end, int depth,
	   lsm_hnode **out)
{
	uint64_t	nchild,
				number;
	lsm_hnode  *n;
	int			i,
				rc;

	*out = NULL;
	if ((*p = lsm_get_varint(*p, end, &nchild)) == NULL ||
		(*p = lsm_get_varint(*p, end, &number)) == NULL)
		return lsm_err_set(d->e, LSM_CORRUPTION, "node truncated");
	/* leaves are named once, so a deeper tree would need 2^64 of them */
	if (depth > 64)
		return lsm_err_set(d->e, LSM_CORRUPTION, "deeper than 64 levels");
	if (nchild > MAX_FANOUT || nchild == 1)
		return lsm_err_set(d->e, LSM_CORRUPTION, "a node with %llu children",
						   (unsigned long long) nchild);
	if (nchild == 0)
	{
		i = leaf_index(d->leaves, d->nleaves, number);
		if (i < 0)
			return lsm_err_set(d->e, LSM_CORRUPTION,
							   "leaf %llu is not a table of level 1 or deeper with a value filter",
							   (unsigned long long) number);
		if (d->taken[i]++)
			return lsm_err_set(d->e, LSM_CORRUPTION, "table %llu is a leaf twice",
							   (unsigned long long) number);
		*out = leaf_new(d->leaves[i]);
		return *out ? LSM_OK : LSM_NOMEM;
	}
	if (number >= d->next_file)
		return lsm_err_set(d->e, LSM_CORRUPTION,
						   "node file %llu is not below next_file %llu",
						   (unsigned long long) number,
						   (unsigned long long) d->next_file);
	/* each child takes two bytes at least: nothing is sized past the input */
	if (nchild > (uint64_t) (end - *p) / 2)
		return lsm_err_set(d->e, LSM_CORRUPTION,
						   "a node with %llu children in %zu bytes",
						   (unsigned long long) nchild, (size_t) (end - *p));
	/* noted for lsm_hier_decode's check that no two nodes share a file */
	if (number != 0)
	{
		if (d->nnodes == d->capnodes)
		{
			uint64_t   *g = realloc(d->nodes, sizeof(uint64_t) *
									((size_t) d->capnodes * 2 + 8));

			if (g == NULL)
				return LSM_NOMEM;
			d->nodes = g;
			d->capnodes = d->capnodes * 2 + 8;
		}
		d->nodes[d->nnodes++] = number;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL || (n->child = calloc(nchild, sizeof(lsm_hnode *))) == NULL)
	{
		free(n);
		return LSM_NOMEM;
	}
	n->refs = 1;
	n->number = number;
	for (i = 0; i < (int) nchild; i++)
	{
		rc = decode(d, p, end, depth + 1, &n->child[i]);
		if (rc != LSM_OK)
		{
			lsm_hnode_unref(n);
			return rc;
		}
		n->nchild++;
		n->nleaves += n->child[i]->nleaves;
		if (i > 0 && n->child[i]->height != n->child[0]->height)
		{
			lsm_hnode_unref(n);
			return lsm_err_set(d->e, LSM_CORRUPTION, "leaves at different depths");
		}
	}
	n->height = n->child[0]->height + 1;
	*out = n;
	return LSM_OK;
}

int
lsm_hier_decode(const uint8_t **p, const uint8_t *end, lsm_version *v,
				lsm_hnode **root, lsm_err *e)
{
	decoder		d;
	uint64_t	present;
	int			rc;

	*root = NULL;
	if ((*p = lsm_get_varint(*p, end, &present)) == NULL || present > 1)
		return lsm_err_set(e, LSM_CORRUPTION, "malformed presence flag");
	d.leaves = eligible_leaves(v, &d.nleaves);
	d.taken = calloc(d.nleaves + 1, 1);
	d.next_file = v->next_file;
	d.nodes = NULL;
	d.nnodes = d.capnodes = 0;
	d.e = e;
	if (d.leaves == NULL || d.taken == NULL)
		rc = LSM_NOMEM;
	else if (present)
		rc = decode(&d, p, end, 0, root);
	else
		rc = LSM_OK;
	/* the tree is what a value search probes: it must miss no table */
	if (rc == LSM_OK && (*root ? (int) (*root)->nleaves : 0) != d.nleaves)
		rc = lsm_err_set(e, LSM_CORRUPTION,
						 "%d of the %d tables with value filters in levels >= 1 are leaves",
						 *root ? (int) (*root)->nleaves : 0, d.nleaves);
	/* a stored node is one file: two nodes never share one (0: saturated) */
	if (rc == LSM_OK && d.nnodes > 1)
	{
		int			i;

		qsort(d.nodes, d.nnodes, sizeof(uint64_t), lsm_cmp_u64);
		for (i = 1; i < d.nnodes && rc == LSM_OK; i++)
			if (d.nodes[i] == d.nodes[i - 1])
				rc = lsm_err_set(e, LSM_CORRUPTION, "node file %llu is named twice",
								 (unsigned long long) d.nodes[i]);
	}
	free(d.leaves);
	free(d.taken);
	free(d.nodes);
	if (rc != LSM_OK)
	{
		lsm_hnode_unref(*root);
		*root = NULL;
	}
	return rc == LSM_NOMEM ? LSM_NOMEM_ERR(e) : rc;
}

/* ---------- node files ---------- */

/*
 * Maps node file number and checks it.  A damaged file still yields a node
 * file, flagged by a NULL map: the node then matches everything, which
 * costs speed but never a row, and lsm_verify reports it.
 */
static int
nodefile_open(const char *dir, uint64_t number, uint32_t m, int k,
			  lsm_nodefile **out, lsm_bloom *f, lsm_err *e)
{
	char		name[32],
				path[4096];
	lsm_nodefile *nf = calloc(1, sizeof(*nf));
	lsm_err		local;
	size_t		fsize = m / 8 + LSM_BLOOM_TRAILER;
	int			fd,
				rc;

	*out = NULL;
	memset(f, 0, sizeof(*f));
	if (nf == NULL)
		return LSM_NOMEM_ERR(e);
	nf->refs = 1;
	nf->number = number;
	lsm_dir_name(LSM_F_NODE, number, name, sizeof(name));
	(void) lsm_dir_path(path, sizeof(path), dir, name, NULL);
	rc = lsm_env_open(path, O_RDONLY, 0, &fd, e);
	if (rc != LSM_OK)
	{
		free(nf);
		return rc;
	}
	lsm_err_clear(&local);
	rc = lsm_env_mmap(fd, name, (const void **) &nf->map, &nf->size, &local);
	lsm_env_close(fd);
	if (rc == LSM_OK &&
		(nf->size != fsize + 4 ||
		 lsm_checksum(nf->map, fsize) != lsm_get_u32(nf->map + fsize) ||
		 lsm_bloom_parse_as(nf->map, fsize, 'H', "hierarchy node", f, name,
							&local) != LSM_OK ||
		 f->k != k || f->num_lines != lsm_vfilter_lines(m)))
	{
		lsm_env_munmap(nf->map, nf->size);
		nf->map = NULL;
		nf->size = 0;
		memset(f, 0, sizeof(*f));
	}
	else if (rc != LSM_OK)
	{
		free(nf);
		return lsm_err_copy(e, &local);
	}
	*out = nf;
	return LSM_OK;
}

static int
collect_nodefiles(const lsm_hnode *n, lsm_hnode ***a, int *len, int *cap)
{
	int			i;

	if (n == NULL || n->nchild == 0)
		return LSM_OK;
	if (n->nf)
	{
		if (*len == *cap)
		{
			lsm_hnode **g = realloc(*a, sizeof(lsm_hnode *) * (*cap * 2 + 8));

			if (g == NULL)
				return LSM_NOMEM;
			*a = g;
			*cap = *cap * 2 + 8;
		}
		(*a)[(*len)++] = (lsm_hnode *) n;
	}
	for (i = 0; i < n->nchild; i++)
		if (collect_nodefiles(n->child[i], a, len, cap) != LSM_OK)
			return LSM_NOMEM;
	return LSM_OK;
}

bool
lsm_hier_files_exist(const lsm_hnode *n, const char *dir)
{
	char		name[32],
				path[4096];
	int			i;

	if (n == NULL || n->nchild == 0)
		return true;
	if (n->number != 0)
	{
		lsm_dir_name(LSM_F_NODE, n->number, name, sizeof(name));
		(void) lsm_dir_path(path, sizeof(path), dir, name, NULL);
		if (access(path, F_OK) != 0)
			return false;
	}
	for (i = 0; i < n->nchild; i++)
		if (!lsm_hier_files_exist(n->child[i], dir))
			return false;
	return true;
}

static int
open_nodes(lsm_hnode *n, lsm_hnode **old, int nold, const lsm_version *v,
		   const char *dir, lsm_err *e)
{
	int			i,
				j,
				rc;

	if (n->nchild == 0)
		return LSM_OK;
	if (n->number != 0 && n->nf == NULL)
	{
		for (j = 0; j < nold; j++)
			if (old[j]->number == n->number)
			{
				n->nf = old[j]->nf;
				n->nf->refs++;
				n->filter = old[j]->filter;
				break;
			}
		if (n->nf == NULL)
		{
			rc = nodefile_open(dir, n->number, v->value_filter_bits,
							   v->value_filter_hashes, &n->nf, &n->filter, e);
			if (rc != LSM_OK)
				return rc;
		}
	}
	for (i = 0; i < n->nchild; i++)
	{
		rc = open_nodes(n->child[i], old, nold, v, dir, e);
		if (rc != LSM_OK)
			return rc;
	}
	return LSM_OK;
}

int
lsm_hier_open(lsm_version *v, const lsm_version *old, const char *dir,
			  lsm_err *e)
{
	lsm_hnode **a = NULL;
	int			len = 0,
				cap = 0,
				rc;

	if (v->hroot == NULL)
		return LSM_OK;
	if (old && collect_nodefiles(old->hroot, &a, &len, &cap) != LSM_OK)
	{
		free(a);
		return LSM_NOMEM_ERR(e);
	}
	rc = open_nodes(v->hroot, a, len, v, dir, e);
	free(a);
	return rc;
}

bool
lsm_hier_has_node(const lsm_hnode *n, uint64_t number)
{
	int			i;

	if (n == NULL || n->nchild == 0)
		return false;
	if (n->number == number)
		return true;
	for (i = 0; i < n->nchild; i++)
		if (lsm_hier_has_node(n->child[i], number))
			return true;
	return false;
}

/* ---------- bit operations ---------- */

static inline uint64_t
load64(const uint8_t *p)
{
	uint64_t	w;

	memcpy(&w, p, 8);
	return w;
}


static void
or_into(uint8_t *dst, const uint8_t *src, size_t bytes)
{
	size_t		i;

	for (i = 0; i < bytes; i += 8)
	{
		uint64_t	w = load64(dst + i) | load64(src + i);

		memcpy(dst + i, &w, 8);
	}
}

/* ---------- update ---------- */

typedef struct work
{
	lsm_hnode  *orig;			/* the node this copies (clean if !dirty) */
	lsm_file   *file;			/* leaf: its table */
	bool		dirty;
	uint32_t	height;
	int			n,
				cap;
	struct work **kids;
} work;

typedef struct update
{
	const lsm_version *v;		/* the version whose tree is made */
	const char *dir;
	uint64_t   *next_file;
	uint32_t	m;
	int			k;
	int			d;
	size_t		bytes;			/* m / 8 */
	lsm_file  **leaves;			/* eligible, sorted by number */
	int			nleaves;
	work	  **orphans;		/* leaves to insert */
	int			norphans,
				cap_orphans;
	uint8_t    *scratch;		/* m / 8 bytes per tree height */
	uint8_t    *present;		/* per eligible leaf: already in the tree */
	int			written;
	lsm_err    *e;
} update;

static void
work_free(work *w)
{
	int			i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++)
		work_free(w->kids[i]);
	free(w->kids);
	free(w);
}

static int
work_add(work *p, work *kid, int pos)
{
	if (p->n == p->cap)
	{
		int			cap = p->cap * 2 + 4;
		work	  **k = realloc(p->kids, sizeof(work *) * cap);

		if (k == NULL)
			return LSM_NOMEM;
		p->kids = k;
		p->cap = cap;
	}
	memmove(p->kids + pos + 1, p->kids + pos, sizeof(work *) * (p->n - pos));
	p->kids[pos] = kid;
	p->n++;
	return LSM_OK;
}

static work *
work_leaf(lsm_file *f, lsm_hnode *orig)
{
	work	   *w = calloc(1, sizeof(*w));

	if (w)
	{
		w->file = f;
		w->orig = orig;
	}
	return w;
}

/* A scratch copy of the tree under n (NULL when out of memory). */
static work *
expand(lsm_hnode *n)
{
	work	   *w;
	int			i;

	if (n->nchild == 0)
		return work_leaf(n->file, n);
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	w->orig = n;
	w->height = n->height;
	for (i = 0; i < n->nchild; i++)
	{
		work	   *k = expand(n->child[i]);

		if (k == NULL || work_add(w, k, w->n) != LSM_OK)
		{
			work_free(k);
			work_free(w);
			return NULL;
		}
	}
	return w;
}

static int
orphan(update *u, work *leaf)
{
	if (u->norphans == u->cap_orphans)
	{
		int			cap = u->cap_orphans * 2 + 16;
		work	  **o = realloc(u->orphans, sizeof(work *) * cap);

		if (o == NULL)
			return LSM_NOMEM;
		u->orphans = o;
		u->cap_orphans = cap;
	}
	u->orphans[u->norphans++] = leaf;
	return LSM_OK;
}

/* Moves every leaf under w to the orphans and frees w's internal nodes. */
static int
adopt_leaves(update *u, work *w)
{
	int			i,
				rc = LSM_OK;

	if (w->height == 0)
		return orphan(u, w);
	for (i = 0; i < w->n; i++)
		if (rc == LSM_OK)
			rc = adopt_leaves(u, w->kids[i]);
		else
			work_free(w->kids[i]);
	w->n = 0;
	work_free(w);
	return rc;
}

/*
 * Drops the leaves under w that are no longer eligible; dissolves children
 * left with fewer than d children (their leaves become orphans).  Marks w
 * dirty if anything under it changed.
 */
static int
prune(update *u, work *w)
{
	int			i,
				rc;

	for (i = 0; i < w->n;)
	{
		work	   *k = w->kids[i];
		bool		drop = false;

		if (k->height == 0)
			drop = find_leaf(u->leaves, u->nleaves, k->file->meta.number) == NULL;
		else
		{
			rc = prune(u, k);
			if (rc != LSM_OK)
				return rc;
			if (k->dirty)
				w->dirty = true;
			if (k->n < u->d)
			{
				rc = adopt_leaves(u, k);
				if (rc != LSM_OK)
					return rc;
				k = NULL;
				drop = true;
			}
		}
		if (drop)
		{
			work_free(k);
			memmove(w->kids + i, w->kids + i + 1, sizeof(work *) * (w->n - i - 1));
			w->n--;
			w->dirty = true;
		}
		else
			i++;
	}
	return LSM_OK;
}

/* Marks in u->present the eligible leaves that are in the tree under w. */
static void
mark_present(update *u, const work *w)
{
	int			i;

	if (w->height == 0)
	{
		lsm_file  **hit;
		lsm_file   *f = w->file;

		hit = u->nleaves ? bsearch(&f, u->leaves, u->nleaves, sizeof(lsm_file *),
								   cmp_file_ptr) : NULL;
		if (hit)
			u->present[hit - u->leaves] = 1;
		return;
	}
	for (i = 0; i < w->n; i++)
		mark_present(u, w->kids[i]);
}

/*
 * Bloofi's placement: the child of w whose filter is closest to the leaf's
 * in Hamming distance (children whose bits are unknown, being new or
 * saturated, count as farthest; ties go to the child with fewer leaves).
 */
static int
choose_child(update *u, const work *w, const uint8_t *leaf_bits)
{
	uint64_t	best = UINT64_MAX;
	int			best_i = 0,
				i;

	for (i = 0; i < w->n; i++)
	{
		const work *k = w->kids[i];
		uint64_t	dist = (uint64_t) u->m;

		if (leaf_bits && k->orig && k->orig->filter.num_lines > 0)
			dist = lsm_popcount(leaf_bits, k->orig->filter.lines, u->bytes);
		/* prefer, among equals, the smaller subtree */
		dist = dist * MAX_FANOUT + (uint64_t) (k->height ? k->n : 0);
		if (dist < best)
		{
			best = dist;
			best_i = i;
		}
	}
	return best_i;
}

/* Splits the overfull w, returning the new right sibling. */
static work *
split(work *w)
{
	work	   *r = calloc(1, sizeof(*r));
	int			keep = w->n / 2;
	int			i;

	if (r == NULL)
		return NULL;
	r->height = w->height;
	r->dirty = true;
	for (i = keep; i < w->n; i++)
		if (work_add(r, w->kids[i], r->n) != LSM_OK)
		{
			r->n = 0;
			work_free(r);
			return NULL;
		}
	w->n = keep;
	w->dirty = true;
	return r;
}

/* Inserts leaf under *root. */
static int
insert(update *u, work **root, work *leaf)
{
	work	   *path[64];
	work	   *x;
	lsm_bloom	lf;
	int			depth = 0,
				rc;

	if (*root == NULL)
	{
		*root = leaf;
		return LSM_OK;
	}
	if ((*root)->height == 0)
	{
		work	   *r = calloc(1, sizeof(*r));

		if (r == NULL)
			return LSM_NOMEM;
		r->height = 1;
		r->dirty = true;
		if (work_add(r, *root, 0) != LSM_OK || work_add(r, leaf, 1) != LSM_OK)
		{
			r->n = 0;
			work_free(r);
			return LSM_NOMEM;
		}
		*root = r;
		return LSM_OK;
	}
	rc = leaf_filter(u->v, leaf->file, &lf, u->e);
	if (rc != LSM_OK)
		return rc;
	for (x = *root; x->height > 1; depth++)
	{
		path[depth] = x;
		x->dirty = true;
		x = x->kids[choose_child(u, x, lf.num_lines ? lf.lines : NULL)];
	}
	x->dirty = true;
	rc = work_add(x, leaf, x->n);
	if (rc != LSM_OK)
		return rc;
	/* split overfull nodes upwards */
	while (x->n > 2 * u->d)
	{
		work	   *r = split(x);
		work	   *p;
		int			i;

		if (r == NULL)
			return LSM_NOMEM;
		if (depth == 0)
		{
			p = calloc(1, sizeof(*p));
			if (p == NULL || work_add(p, x, 0) != LSM_OK)
			{
				free(p);
				work_free(r);
				return LSM_NOMEM;
			}
			p->height = x->height + 1;
			p->dirty = true;
			*root = p;
		}
		else
			p = path[--depth];
		for (i = 0; p->kids[i] != x; i++)
			;
		if (work_add(p, r, i + 1) != LSM_OK)
		{
			work_free(r);
			return LSM_NOMEM;
		}
		x = p;
	}
	return LSM_OK;
}

/* Writes a stored node's file; *number gets its number. */
static int
write_node(update *u, const uint8_t *bits, uint64_t *number)
{
	char		name[32],
				path[4096];
	uint8_t		tail[LSM_BLOOM_TRAILER + 4];
	int			fd = -1,
				rc;

	rc = lsm_dir_create_excl(u->dir, LSM_F_NODE, u->next_file, O_WRONLY, &fd,
							 u->e);
	if (rc != LSM_OK)
		return rc;
	*number = (*u->next_file)++;
	lsm_dir_name(LSM_F_NODE, *number, name, sizeof(name));
	(void) lsm_dir_path(path, sizeof(path), u->dir, name, NULL);
	lsm_bloom_trailer(tail, 'H', u->k, lsm_vfilter_lines(u->m));
	{
		XXH3_state_t st;

		XXH3_64bits_reset(&st);
		XXH3_64bits_update(&st, bits, u->bytes);
		XXH3_64bits_update(&st, tail, LSM_BLOOM_TRAILER);
		lsm_put_u32(tail + LSM_BLOOM_TRAILER, (uint32_t) XXH3_64bits_digest(&st));
	}
	rc = lsm_env_write(fd, bits, u->bytes, name, u->e);
	if (rc == LSM_OK)
		rc = lsm_env_write(fd, tail, sizeof(tail), name, u->e);
	/* invariant (1): a node file is durable before a manifest names it */
	if (rc == LSM_OK)
		rc = lsm_env_fsync(fd, name, u->e);
	lsm_env_close(fd);
	if (rc != LSM_OK)
		(void) lsm_env_unlink(path, NULL);
	else
		u->written++;
	return rc;
}

/*
 * Turns the scratch tree under w back into nodes (*out), reusing clean
 * subtrees and computing the OR of every changed node into the scratch
 * space of its height.
 */
static int
materialize(update *u, work *w, lsm_hnode **out)
{
	lsm_hnode  *n;
	uint8_t    *bits;
	bool		saturated = false;
	int			i,
				rc;

	*out = NULL;
	if (w->orig && (!w->dirty || w->height == 0))
	{
		lsm_hnode_ref(w->orig);
		*out = w->orig;
		return LSM_OK;
	}
	if (w->height == 0)
	{
		*out = leaf_new(w->file);
		return *out ? LSM_OK : LSM_NOMEM_ERR(u->e);
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL || (n->child = calloc(w->n, sizeof(lsm_hnode *))) == NULL)
	{
		free(n);
		return LSM_NOMEM_ERR(u->e);
	}
	n->refs = 1;
	n->height = w->height;
	for (i = 0; i < w->n; i++)
	{
		rc = materialize(u, w->kids[i], &n->child[i]);
		if (rc != LSM_OK)
		{
			lsm_hnode_unref(n);
			return rc;
		}
		n->nchild++;
		n->nleaves += n->child[i]->nleaves;
	}
	/* the OR of the children, unless one of them is saturated */
	bits = u->scratch + (size_t) (w->height - 1) * u->bytes;
	memset(bits, 0, u->bytes);
	for (i = 0; i < n->nchild && !saturated; i++)
	{
		lsm_bloom	cf;

		rc = node_filter(u->v, n->child[i], &cf, u->e);
		if (rc != LSM_OK)
		{
			lsm_hnode_unref(n);
			return rc;
		}
		if (cf.num_lines == 0 && n->child[i]->nchild > 0)
			saturated = true;
		else if (cf.num_lines > 0)
			or_into(bits, cf.lines, u->bytes);
	}
	if (!saturated &&
		(double) lsm_popcount(bits, NULL, u->bytes) <= LSM_HIER_SATURATED * u->m)
	{
		rc = write_node(u, bits, &n->number);
		if (rc == LSM_OK)
			rc = nodefile_open(u->dir, n->number, u->m, u->k, &n->nf,
							   &n->filter, u->e);
		if (rc != LSM_OK)
		{
			lsm_hnode_unref(n);
			return rc;
		}
	}
	*out = n;
	return LSM_OK;
}

int
lsm_hier_update(lsm_version *v, const lsm_hnode *base, const char *dir,
				uint64_t *next_file, lsm_err *e)
{
	update		u;
	work	   *root = NULL;
	lsm_hnode  *nroot = NULL;
	int			i,
				rc = LSM_OK;

	memset(&u, 0, sizeof(u));
	u.v = v;
	u.dir = dir;
	u.next_file = next_file;
	u.m = v->value_filter_bits;
	u.k = v->value_filter_hashes;
	u.d = v->hierarchy_order < 2 ? 2 : v->hierarchy_order;
	u.bytes = u.m / 8;
	u.e = e;
	if (u.m == 0)
	{
		lsm_hnode_unref(v->hroot);
		v->hroot = NULL;
		return LSM_OK;
	}
	u.leaves = eligible_leaves(v, &u.nleaves);
	if (u.leaves == NULL)
		return LSM_NOMEM_ERR(e);
	/* the scratch below is sized by m: only once the leaves have m bits */
	rc = check_leaves(v, u.leaves, u.nleaves, e);
	if (rc != LSM_OK)
	{
		free(u.leaves);
		return rc;
	}

	/* removals */
	if (base)
	{
		root = expand((lsm_hnode *) base);
		if (root == NULL)
			rc = LSM_NOMEM_ERR(e);
		else if (root->height == 0)
		{
			if (find_leaf(u.leaves, u.nleaves, root->file->meta.number) == NULL)
			{
				work_free(root);
				root = NULL;
			}
		}
		else if ((rc = prune(&u, root)) != LSM_OK)
			rc = LSM_NOMEM_ERR(e);
		/* a root with one child hands over to it; an empty one goes */
		while (rc == LSM_OK && root && root->height > 0 && root->n <= 1)
		{
			work	   *only = root->n ? root->kids[0] : NULL;

			root->n = 0;
			work_free(root);
			root = only;
		}
	}
	/* insertions: the new leaves, then the orphans */
	u.present = calloc(u.nleaves + 1, 1);
	if (rc == LSM_OK && u.present == NULL)
		rc = LSM_NOMEM_ERR(e);
	if (rc == LSM_OK && root)
		mark_present(&u, root);
	for (i = 0; rc == LSM_OK && i < u.norphans; i++)
		mark_present(&u, u.orphans[i]);	/* dissolved, inserted again below */
	for (i = 0; i < u.nleaves && rc == LSM_OK; i++)
	{
		work	   *leaf;

		if (u.present[i])
			continue;
		leaf = work_leaf(u.leaves[i], NULL);
		if (leaf == NULL || orphan(&u, leaf) != LSM_OK)
		{
			free(leaf);
			rc = LSM_NOMEM_ERR(e);
		}
	}
	for (i = 0; i < u.norphans && rc == LSM_OK; i++)
	{
		rc = insert(&u, &root, u.orphans[i]);
		if (rc == LSM_NOMEM)
			rc = LSM_NOMEM_ERR(e);
		if (rc != LSM_OK)
			while (i < u.norphans)
				work_free(u.orphans[i++]);
	}
	if (rc == LSM_OK && root)
	{
		u.scratch = malloc(u.bytes * (root->height + 1));
		if (u.scratch == NULL)
			rc = LSM_NOMEM_ERR(e);
		else
			rc = materialize(&u, root, &nroot);
	}
	/* invariant (1): the new node files' names are durable */
	if (rc == LSM_OK && u.written > 0)
		rc = lsm_env_fsync_dir(dir, e);
	work_free(root);
	free(u.orphans);
	free(u.present);
	free(u.scratch);
	free(u.leaves);
	if (rc != LSM_OK)
	{
		lsm_hnode_unref(nroot);
		return rc;
	}
	lsm_hnode_unref(v->hroot);
	v->hroot = nroot;
	return LSM_OK;
}

/* ---------- verification and shape ---------- */

typedef struct verify_state
{
	const lsm_version *v;
	lsm_file  **leaves;
	int			nleaves;
	uint8_t    *seen;			/* per eligible leaf */
	uint8_t    *scratch;		/* m / 8 bytes per height */
	size_t		bytes;
	uint32_t	m;
	int			d;
	lsm_err    *e;
} verify_state;

/* Checks the subtree under n; its union of leaf bits goes to out. */
static int
verify_node(verify_state *s, const lsm_hnode *n, bool is_root, uint8_t *out)
{
	lsm_bloom	f;
	uint8_t    *kid_bits;
	int			i,
				rc;

	if (n->nchild == 0)
	{
		lsm_file  **hit = NULL;
		lsm_file	key;
		lsm_file   *kp = &key;

		key.meta.number = n->number;
		if (s->nleaves)
			hit = bsearch(&kp, s->leaves, s->nleaves, sizeof(lsm_file *),
						  cmp_file_ptr);
		if (hit == NULL || *hit != n->file)
			return LSM_CORRUPT(s->e, "hierarchy leaf %llu is not an eligible table",
							   (unsigned long long) n->number);
		if (s->seen[hit - s->leaves]++)
			return LSM_CORRUPT(s->e, "table %llu is a hierarchy leaf twice",
							   (unsigned long long) n->number);
		rc = leaf_filter(s->v, n->file, &f, s->e);
		if (rc != LSM_OK)
			return rc;
		memcpy(out, f.lines, s->bytes);
		return LSM_OK;
	}
	if (n->nchild > 2 * s->d || n->nchild < (is_root ? 2 : s->d))
		return LSM_CORRUPT(s->e, "hierarchy node %llu has %d children (order %d)",
						   (unsigned long long) n->number, n->nchild, s->d);
	kid_bits = s->scratch + (size_t) (n->height - 1) * s->bytes;
	memset(out, 0, s->bytes);
	for (i = 0; i < n->nchild; i++)
	{
		if (n->child[i]->height + 1 != n->height)
			return LSM_CORRUPT(s->e, "hierarchy leaves at different depths");
		rc = verify_node(s, n->child[i], false, kid_bits);
		if (rc != LSM_OK)
			return rc;
		or_into(out, kid_bits, s->bytes);
	}
	if (n->number != 0 && n->filter.num_lines == 0)
		return LSM_CORRUPT(s->e, "hierarchy node file %06llu.vfn is damaged",
						   (unsigned long long) n->number);
	if (n->number != 0 && memcmp(n->filter.lines, out, s->bytes) != 0)
		return LSM_CORRUPT(s->e, "hierarchy node %06llu.vfn is not the OR of its children",
						   (unsigned long long) n->number);
	if (n->number == 0 &&
		(double) lsm_popcount(out, NULL, s->bytes) <= LSM_HIER_SATURATED * s->m)
		return LSM_CORRUPT(s->e, "a hierarchy node left unstored is not saturated");
	return LSM_OK;
}

int
lsm_hier_verify(const lsm_version *v, lsm_err *e)
{
	verify_state s;
	uint8_t    *top = NULL;
	int			i,
				rc = LSM_OK;

	memset(&s, 0, sizeof(s));
	s.v = v;
	s.e = e;
	s.m = v->value_filter_bits;
	s.bytes = s.m / 8;
	s.d = v->hierarchy_order < 2 ? 2 : v->hierarchy_order;
	s.leaves = eligible_leaves(v, &s.nleaves);
	s.seen = calloc(s.nleaves + 1, 1);
	if (s.leaves == NULL || s.seen == NULL)
		rc = LSM_NOMEM_ERR(e);
	/* the scratch below is sized by m: only once the leaves have m bits */
	if (rc == LSM_OK)
		rc = check_leaves(v, s.leaves, s.nleaves, e);
	if (rc == LSM_OK && v->hroot)
	{
		s.scratch = malloc(s.bytes * (v->hroot->height + 1));
		top = malloc(s.bytes + 8);
		if (s.scratch == NULL || top == NULL)
			rc = LSM_NOMEM_ERR(e);
		else
			rc = verify_node(&s, v->hroot, true, top);
	}
	for (i = 0; rc == LSM_OK && i < s.nleaves; i++)
		if (!s.seen[i])
			rc = LSM_CORRUPT(e, "table %llu is missing from the hierarchy",
							 (unsigned long long) s.leaves[i]->meta.number);
	free(s.leaves);
	free(s.seen);
	free(s.scratch);
	free(top);
	return rc;
}

static void
shape(const lsm_hnode *n, lsm_hier_shape *s)
{
	int			i;

	if (n->nchild == 0)
	{
		s->leaves++;
		return;
	}
	s->internal++;
	if (n->number == 0)
		s->saturated++;
	else if (n->nf)
		s->node_bytes += n->nf->size;
	for (i = 0; i < n->nchild; i++)
		shape(n->child[i], s);
}

void
lsm_hier_shape_of(const lsm_hnode *root, lsm_hier_shape *s)
{
	memset(s, 0, sizeof(*s));
	if (root == NULL)
		return;
	s->height = (int) root->height;
	shape(root, s);
}

/* ---------- flat ---------- */

/*
 * Bit-position-major, as in the paper's Flat-Bloofi: row b (of gcap words)
 * holds bit b of every leaf, word g of it the 64 leaves of group g.  A
 * search reads k rows, each a contiguous run of ngroups words, which the
 * hardware prefetcher streams; groups are added by widening every row
 * (rare: columns of departed leaves are reused first).
 */
struct lsm_flat
{
	uint32_t	m;				/* bits per filter = rows */
	uint32_t	num_lines;
	int			k;
	int			ngroups;		/* groups in use */
	int			gcap;			/* words per row */
	bool		synced;			/* in step with the leaves of root */
	lsm_hnode  *root;			/* (referenced) */
	uint64_t   *rows;			/* m * gcap words */
	uint64_t   *used;			/* per group, a bit per occupied column */
	lsm_file  **cols;			/* gcap * 64, NULL if free (referenced) */
};

void
lsm_flat_free(lsm_flat *f)
{
	int			i;

	if (f == NULL)
		return;
	for (i = 0; i < f->ngroups * 64; i++)
		lsm_file_unref(f->cols[i]);
	free(f->rows);
	free(f->used);
	free(f->cols);
	lsm_hnode_unref(f->root);
	free(f);
}

size_t
lsm_flat_bytes(const lsm_flat *f)
{
	return f ? (size_t) f->m * f->gcap * 8 : 0;
}

/* Sets (or clears) column c of group g to the bits of filter lines. */
static void
flat_column(lsm_flat *f, int g, int c, const uint8_t *lines, bool set)
{
	uint64_t	bit = (uint64_t) 1 << c;
	uint32_t	w;

	for (w = 0; w < f->m; w += 64)
	{
		uint64_t	x = load64(lines + w / 8);

		while (x)
		{
			uint64_t   *word = &f->rows[(size_t) (w + __builtin_ctzll(x)) *
										f->gcap + g];

			*word = set ? *word | bit : *word & ~bit;
			x &= x - 1;
		}
	}
}

/* Adds an empty group, widening the rows if they are full. */
static int
flat_add_group(lsm_flat *f)
{
	if (f->ngroups == f->gcap)
	{
		int			cap = f->gcap + (f->gcap / 4 > 1 ? f->gcap / 4 : 1);
		uint64_t   *rows = calloc((size_t) f->m * cap, sizeof(uint64_t));
		uint64_t   *used = realloc(f->used, sizeof(uint64_t) * cap);
		lsm_file  **cols;
		uint32_t	b;

		if (used != NULL)
			f->used = used;
		cols = realloc(f->cols, sizeof(lsm_file *) * 64 * cap);
		if (cols != NULL)
			f->cols = cols;
		if (rows == NULL || used == NULL || cols == NULL)
		{
			free(rows);
			return LSM_NOMEM;
		}
		for (b = 0; b < f->m && f->gcap > 0; b++)
			memcpy(rows + (size_t) b * cap, f->rows + (size_t) b * f->gcap,
				   sizeof(uint64_t) * f->ngroups);
		free(f->rows);
		f->rows = rows;
		f->gcap = cap;
	}
	f->used[f->ngroups] = 0;
	memset(f->cols + 64 * f->ngroups, 0, sizeof(lsm_file *) * 64);
	f->ngroups++;
	return LSM_OK;
}

int
lsm_flat_sync(lsm_flat **fp, const lsm_version *v, lsm_err *e)
{
	lsm_flat   *f = *fp;
	lsm_file  **leaves;
	uint8_t    *present;
	int			nleaves,
				i,
				rc = LSM_OK;

	/* a store's m and k never change, but a forged manifest may */
	if (f != NULL && (f->m != v->value_filter_bits ||
					  f->k != v->value_filter_hashes))
	{
		lsm_flat_free(f);
		*fp = f = NULL;
	}
	if (f == NULL)
	{
		f = calloc(1, sizeof(*f));
		if (f == NULL)
			return LSM_NOMEM_ERR(e);
		f->m = v->value_filter_bits;
		f->num_lines = lsm_vfilter_lines(f->m);
		f->k = v->value_filter_hashes;
		*fp = f;
	}

	/*
	 * The tree's leaves are exactly the eligible tables, and a tree is never
	 * changed in place (updates copy the changed paths), so the same root
	 * means the same leaves; the reference keeps its address from being
	 * reused.  Every search of a steady store thus skips the work below.
	 */
	if (f->synced && f->root == v->hroot)
		return LSM_OK;
	leaves = eligible_leaves(v, &nleaves);
	present = calloc(nleaves + 1, 1);
	if (leaves == NULL || present == NULL)
	{
		free(leaves);
		free(present);
		return LSM_NOMEM_ERR(e);
	}
	/* columns of leaves that left are cleared */
	for (i = 0; i < f->ngroups * 64 && rc == LSM_OK; i++)
	{
		lsm_file   *c = f->cols[i];
		lsm_file  **hit;
		lsm_bloom	lf;

		if (c == NULL)
			continue;
		hit = nleaves ? bsearch(&c, leaves, nleaves, sizeof(lsm_file *), cmp_file_ptr) : NULL;
		if (hit && *hit == c)
		{
			present[hit - leaves] = 1;
			continue;
		}
		rc = leaf_filter(v, c, &lf, e);
		if (rc == LSM_OK)
			flat_column(f, i / 64, i % 64, lf.lines, false);
		f->used[i / 64] &= ~((uint64_t) 1 << (i % 64));
		lsm_file_unref(c);
		f->cols[i] = NULL;
	}
	/* new leaves take free columns */
	for (i = 0; i < nleaves && rc == LSM_OK; i++)
	{
		lsm_bloom	lf;
		int			g,
					c;

		if (present[i])
			continue;
		rc = leaf_filter(v, leaves[i], &lf, e);
		if (rc != LSM_OK)
			break;
		for (g = 0; g < f->ngroups && f->used[g] == ~UINT64_C(0); g++)
			;
		if (g == f->ngroups && flat_add_group(f) != LSM_OK)
		{
			rc = LSM_NOMEM_ERR(e);
			break;
		}
		c = __builtin_ctzll(~f->used[g]);
		flat_column(f, g, c, lf.lines, true);
		f->used[g] |= (uint64_t) 1 << c;
		f->cols[g * 64 + c] = leaves[i];
		lsm_file_ref(leaves[i]);
	}
	free(leaves);
	free(present);
	if (rc == LSM_OK)
	{
		if (v->hroot)
			lsm_hnode_ref(v->hroot);
		lsm_hnode_unref(f->root);
		f->root = v->hroot;
		f->synced = true;
	}
	return rc;
}

int
lsm_flat_search(const lsm_flat *f, uint64_t h, lsm_leaf_fn fn, void *arg,
				uint64_t *words)
{
	const uint64_t *row[LSM_VFILTER_MAX_HASHES];
	uint64_t	line = ((uint64_t) (uint32_t) h * f->num_lines) >> 32;
	uint32_t	h2 = (uint32_t) (h >> 32);
	uint64_t	n = 0;
	int			g,
				i,
				rc;

	/* no leaves yet: no rows either (f->rows is NULL) */
	if (f->ngroups == 0)
		return LSM_OK;
	LSM_ASSERT(f->k >= 1 && f->k <= LSM_VFILTER_MAX_HASHES);
	for (i = 0; i < f->k; i++)
	{
		row[i] = f->rows + (line * 512 + (h2 >> 23)) * f->gcap;
		h2 *= 0x9e3779b9u;
	}
	for (g = 0; g < f->ngroups; g++)
	{
		uint64_t	acc = f->used[g];

		for (i = 0; i < f->k && acc; i++)
			acc &= row[i][g];
		n += i;
		while (acc)
		{
			rc = fn(arg, f->cols[g * 64 + __builtin_ctzll(acc)]);
			if (rc != LSM_OK)
				return rc;
			acc &= acc - 1;
		}
	}
	*words += n;
	return LSM_OK;
}

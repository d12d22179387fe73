/*
 * hierarchy.h
 *		The Bloom filter hierarchy over the SSTables' value filters (a Bloofi
 *		tree, seed 000 and Crainiceanu & Lemire 2015) and its bit-sliced
 *		("flat") organisation.
 *
 * Leaves are the value filters of the tables of levels >= 1 that hold at
 * least one indexed value; level 0's few short-lived tables are probed one
 * by one.  An internal node is the bitwise OR of its children (all filters
 * have the same m and k, so the OR is exactly the filter of the union) and
 * has d..2d children (the root 2..2d), d = hierarchy_order; all leaves are
 * at the same depth.  A node whose OR would have more than
 * LSM_HIER_SATURATED of its bits set matches almost any value, so it is not
 * stored: it is "saturated" and search descends into its children without a
 * probe (every ancestor of a saturated node is saturated too).
 *
 * Internal nodes are immutable files, NNNNNN.vfn (the value filter layout of
 * vfilter.h with trailer magic 'H', then a checksum), named by the manifest
 * and mapped by every process, so they are shared through the page cache.
 * Versions share unchanged nodes; a compaction writes new files only for
 * the nodes on the paths it changed (path copying): removed leaves leave
 * their parents, an underfull node (fewer than d children) is dissolved
 * and its leaves inserted again, a new leaf descends into the child closest
 * to it in Hamming distance (Bloofi's placement, which keeps similar filters
 * together) and overfull nodes split.
 *
 * The flat organisation transposes the same leaves in groups of 64: row b
 * holds bit b of every leaf, one word per group, so a search ANDs k rows
 * word by word, reading k contiguous runs of memory.  It lives in the memory of the handle that asks for it (as
 * much memory as the leaves' filters), built on first use and kept in step
 * with later versions column by column.
 */
#ifndef LSM_HIERARCHY_H
#define LSM_HIERARCHY_H

#include "version.h"

#define LSM_HIER_SATURATED 0.90

/*
 * Bounds of the order d (lsm_options.hierarchy_order: 0 and 1 mean 2), as
 * stored in the manifest.
 */
#define LSM_HIER_MIN_ORDER 2
#define LSM_HIER_MAX_ORDER 1024

typedef struct lsm_nodefile lsm_nodefile;

typedef struct lsm_hnode lsm_hnode;
struct lsm_hnode
{
	int			refs;
	int			nchild;			/* 0: a leaf */
	uint32_t	nleaves;		/* leaves in the subtree */
	uint32_t	height;			/* 0 for leaves */
	uint64_t	number;			/* leaf: table number; internal: node file
								 * number, 0 if saturated */
	lsm_file   *file;			/* leaf: its table (referenced) */
	lsm_nodefile *nf;			/* internal, stored: the mapped file */
	lsm_bloom	filter;			/* internal, stored: its bits */
	lsm_hnode **child;
};

void		lsm_hnode_ref(lsm_hnode *n);
void		lsm_hnode_unref(lsm_hnode *n);

/* Is the table of f a leaf of the hierarchy (given its level)? */
bool		lsm_hier_is_leaf(const lsm_file *f, int level);

/*
 * The value filter of file f of v for field: lsm_table_value_filter with
 * the store's m and k, once the table is found to have the value filter
 * bytes the manifest records for it (a leaf is a table the manifest says
 * has a filter, so a leaf's table without one is LSM_CORRUPTION, never a
 * table silently taken to hold no value).
 */
int			lsm_file_value_filter(const lsm_version *v, const lsm_file *f,
								  int field, lsm_bloom *out, lsm_err *e);

/*
 * Encodes the tree into a manifest payload: [0] for none, else the root in
 * preorder, a node being [nchild] then [table number] for a leaf or [node
 * number] and the children for an internal node (varints).
 */
int			lsm_hier_encode(const lsm_hnode *root, lsm_buf *out);

/*
 * Decodes a tree written by lsm_hier_encode; leaves are bound to the files
 * of v (levels >= 1) by number.  Node files are not opened yet.
 */
int			lsm_hier_decode(const uint8_t **p, const uint8_t *end,
							lsm_version *v, lsm_hnode **root, lsm_err *e);

/*
 * Maps the node files of v's tree, reusing the mappings of old's tree (may
 * be NULL).  LSM_NOTFOUND if a file is missing (the caller retries with a
 * fresh manifest).
 */
int			lsm_hier_open(lsm_version *v, const lsm_version *old,
						  const char *dir, lsm_err *e);

/*
 * Computes the tree of v (whose levels are final; tables open) from the
 * tree of base, writing and fsyncing a file for every new stored node and
 * then the directory.  New node files take numbers from *next_file up,
 * which is advanced.  Sets v->hroot.
 */
int			lsm_hier_update(lsm_version *v, const lsm_hnode *base,
							const char *dir, uint64_t *next_file, lsm_err *e);

/* Does the node file of every node of the tree under n exist in dir? */
bool		lsm_hier_files_exist(const lsm_hnode *n, const char *dir);

/* Does the tree name node file number? */
bool		lsm_hier_has_node(const lsm_hnode *root, uint64_t number);

/*
 * Checks the tree's invariants against v: every eligible table is a leaf
 * exactly once, all leaves at one depth, fan-out within d..2d (root 2..2d),
 * every stored node equals the OR of its children and is not saturated,
 * every saturated node is.
 */
int			lsm_hier_verify(const lsm_version *v, lsm_err *e);

typedef struct lsm_hier_shape
{
	int			height;			/* levels of internal nodes */
	uint64_t	leaves;
	uint64_t	internal;
	uint64_t	saturated;		/* internal nodes not stored */
	uint64_t	node_bytes;		/* bytes of the stored internal nodes */
} lsm_hier_shape;

void		lsm_hier_shape_of(const lsm_hnode *root, lsm_hier_shape *s);

/* ---------- flat ---------- */

typedef struct lsm_flat lsm_flat;

/*
 * Brings the flat organisation *fp (created if NULL) in step with the
 * leaves of v.
 */
int			lsm_flat_sync(lsm_flat **fp, const lsm_version *v, lsm_err *e);
void		lsm_flat_free(lsm_flat *f);

/*
 * Calls fn for every leaf whose filter may hold hash h; adds to *words the
 * number of words read (a group stops at its first zero word).
 */
typedef int (*lsm_leaf_fn) (void *arg, lsm_file *leaf);
int			lsm_flat_search(const lsm_flat *f, uint64_t h, lsm_leaf_fn fn,
							void *arg, uint64_t *words);

/* Bytes of memory the flat organisation takes. */
size_t		lsm_flat_bytes(const lsm_flat *f);

#endif							/* LSM_HIERARCHY_H */

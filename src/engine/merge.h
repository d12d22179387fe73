/*
 * merge.h
 *		Iterators over several sources (merge.c): the merging iterator
 *		(declared in iter.h with the interface), the level iterator, and the
 *		merge of a version and a memtable.
 */
#ifndef LSM_MERGE_H
#define LSM_MERGE_H

#include "iter.h"
#include "memtable.h"
#include "version.h"

/* The merging iterator over a version and a memtable at snap (merge.c). */
lsm_iiter  *lsm_merge_version(lsm_version *v, lsm_memtable *mem, uint64_t snap,
							  lsm_err *err);

/*
 * An iterator over n disjoint files sorted by key (a level >= 1, or part of
 * one), which must belong to v; v is pinned while it lives (merge.c).
 */
lsm_iiter  *lsm_level_iter_new(lsm_version *v, lsm_file **files, int n,
							   lsm_err *err);

#endif							/* LSM_MERGE_H */

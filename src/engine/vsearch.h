/*
 * vsearch.h
 *		Value search: the internal iterator behind lsm_value_search (see
 *		vsearch.c for the algorithm).
 */
#ifndef LSM_VSEARCH_H
#define LSM_VSEARCH_H

#include "hierarchy.h"
#include "lsm.h"
#include "memtable.h"
#include "version.h"

/*
 * What a search needs of the handle that runs it, which it never sees: the
 * handle's flat layout of the hierarchy (built on a flat search, synced to
 * the version), the counters that the validation's key lookups add to, and
 * the interrupt callback.
 */
typedef struct lsm_vsearch_env
{
	lsm_flat  **flat;
	lsm_stats  *ctr;
	lsm_interrupt_fn interrupt; /* optional */
	void	   *interrupt_arg;
} lsm_vsearch_env;

/*
 * Runs the filter phase of a search for rows whose field equals val over v
 * and mem (NULL: none) at snapshot snap, and returns an unpositioned iterator over the
 * results (seek(NULL) starts it).  strategy LSM_SEARCH_AUTO takes the flat
 * layout if the handle has built one, else the tree (the caller resolves
 * the handle's value_search option first).  With claim, it reads only the units
 * claim hands it (lsm_value_search_view).  v and mem must outlive it.
 */
int			lsm_vsearch_new(const lsm_vsearch_env *env, lsm_version *v,
							lsm_memtable *mem, uint64_t snap, int field,
							const void *val,
							size_t vlen, int strategy, lsm_claim_fn claim,
							void *claim_arg, lsm_err *err, lsm_iiter **out);

/* The search's counters so far. */
void		lsm_vsearch_stats(const lsm_iiter *it, lsm_search_stats *st);

/*
 * The counters of the filter phase, with sstables_scanned and
 * blocks_scanned set to what the search would read.
 */
void		lsm_vsearch_estimate(const lsm_iiter *it, lsm_search_stats *st);

#endif							/* LSM_VSEARCH_H */

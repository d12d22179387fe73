/*
 * vsearch.h
 *		Value search: the internal iterator behind lsm_value_search (see
 *		vsearch.c for the algorithm).
 */
#ifndef LSM_VSEARCH_H
#define LSM_VSEARCH_H

#include "db.h"

/*
 * Runs the filter phase of a search for rows whose field equals val over v
 * and mem (NULL: none) at snapshot snap, and returns an unpositioned iterator over the
 * results (seek(NULL) starts it).  With claim, it reads only the units
 * claim hands it (lsm_value_search_view).  v and mem must outlive it.
 */
int			lsm_vsearch_new(lsm_db *db, lsm_version *v, lsm_memtable *mem,
							uint64_t snap, int field, const void *val,
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

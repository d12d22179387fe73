/*-------------------------------------------------------------------------
 *
 * merge.c
 *		  A table as its transaction sees it, in key order: the store's
 *		  committed rows overlaid with the transaction's pending writes.
 *
 * Three sources, each in key order, are merged; on equal keys the newer
 * wins and the others are skipped:
 *
 *	1. the pending writes held in memory that the reader sees (xact.c:
 *	   versions of earlier commands), a sorted array;
 *	2. the pending writes spilled to the table's stage (xact.c), through a
 *	   snapshot iterator of the stage that shows deletes;
 *	3. the store's committed rows, through a snapshot iterator.
 *
 * A delete in 1 or 2 hides the key.  When 3 is the only source (a
 * transaction that has not written) and the scan goes forwards, its rows
 * are read in batches (lsm_iter_batch) with no merge at all.  Full scans, key ranges (scan.c) and
 * TRUNCATE (modify.c) read through it.  It also runs in descending key
 * order (ORDER BY key DESC): the engine's iterators then run backwards
 * (lsm_iter_reverse), the array is walked down, and the largest key wins.
 *
 * src/fdw/merge.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "lsm_fdw.h"

#define FROM_PENDING	1
#define FROM_STAGE		2
#define FROM_STORE		4

/* Positions an engine iterator of m at start, in m's direction. */
static void
seek(LsmFdwMerge *m, lsm_iter *it, const char *start, size_t startlen)
{
	if (m->backward)
		(void) lsm_iter_reverse(it);	/* cannot fail: it is unpositioned */
	lsm_iter_seek(it, start, start != NULL ? startlen : 0);
}

/*
 * Opens m over the store s of relation relid (table relname, for errors)
 * as a reader with command id curcid sees it (InvalidCommandId: the newest
 * pending versions), from the first key at or after start (backward: at or
 * before it; all keys if start is NULL).  The iterators belong to m until
 * LsmFdwMergeClose, which the caller must reach on error too (it may be
 * called on a half-opened m).  Allocates in the current memory context.
 */
void
LsmFdwMergeOpen(LsmFdwMerge *m, LsmFdwStore *s, Oid relid,
				const char *relname, CommandId curcid, bool backward,
				const char *start, size_t startlen)
{
	int			lo = 0;
	int			hi;
	int			rc;

	memset(m, 0, sizeof(*m));
	m->store = s;
	m->relname = relname;
	m->backward = backward;
	m->pending = LsmFdwPendingVisible(relid, curcid, &m->npending);

	/* the first pending row after start, or npending */
	hi = start != NULL ? m->npending : 0;
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = LsmFdwKeyCmp(m->pending[mid].key, m->pending[mid].klen,
									 start, startlen);

		if (c < 0 || (backward && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* forward: the first at or after start; backward: the last at or before */
	m->ppos = !backward ? lo : start != NULL ? lo - 1 : m->npending - 1;

	m->staged = LsmFdwPendingStageIter(relid, curcid);
	if (m->staged != NULL)
		seek(m, m->staged, start, startlen);

	/* after a TRUNCATE in this transaction the store holds nothing */
	if (LsmFdwPendingTruncated(relid))
		return;
	if ((rc = lsm_iter_open(s->db, &m->iter)) != LSM_OK)
		LsmFdwReportError(rc, s->db, relname, "read");
	seek(m, m->iter, start, startlen);
	/* nothing pending (a transaction that has not written): the store */
	m->store_only = m->npending == 0 && m->staged == NULL && !backward;
}

/*
 * Tells m that a forward scan ends before limit (limitlen bytes): the
 * store's rows are then read in batches no further than it
 * (lsm_iter_set_limit), so a short range decodes its few rows only.  The
 * caller still checks each row's key against its bound.
 */
void
LsmFdwMergeSetLimit(LsmFdwMerge *m, const char *limit, size_t limitlen)
{
	int			rc;

	Assert(!m->backward);
	if (m->iter != NULL &&
		(rc = lsm_iter_set_limit(m->iter, limit, limitlen)) != LSM_OK)
		LsmFdwReportError(rc, m->store->db, m->relname, "read");
}

/* LsmFdwMergeNext of a merge of more than the store alone. */
bool
LsmFdwMergeNextMerged(LsmFdwMerge *m, const char **key, size_t *klen,
					  const char **row, size_t *rowlen)
{
	int			rc;

	for (;;)
	{
		const char *k[3] = {NULL, NULL, NULL};
		size_t		kl[3] = {0, 0, 0};
		int			best = -1;
		int			i;

		/* step past the row returned last, in every source that had it */
		if (m->at & FROM_PENDING)
			m->ppos += m->backward ? -1 : 1;
		if (m->at & FROM_STAGE)
			lsm_iter_next(m->staged);
		if (m->at & FROM_STORE)
			lsm_iter_next(m->iter);
		m->at = 0;
		CHECK_FOR_INTERRUPTS();

		if (m->ppos >= 0 && m->ppos < m->npending)
		{
			k[0] = m->pending[m->ppos].key;
			kl[0] = m->pending[m->ppos].klen;
		}
		if (m->staged != NULL)
		{
			if (lsm_iter_valid(m->staged))
				k[1] = lsm_iter_key(m->staged, &kl[1]);
			else if ((rc = lsm_iter_status(m->staged)) != LSM_OK)
				LsmFdwReportError(rc, m->store->db, m->relname, "read");
		}
		if (m->iter == NULL)
			;					/* truncated */
		else if (lsm_iter_valid(m->iter))
			k[2] = lsm_iter_key(m->iter, &kl[2]);
		else if ((rc = lsm_iter_status(m->iter)) != LSM_OK)
			LsmFdwReportError(rc, m->store->db, m->relname, "read");

		/*
		 * The smallest key (backward: the largest); on a tie the first
		 * source (the newest) wins
		 */
		for (i = 0; i < 3; i++)
		{
			int			c;

			if (k[i] == NULL)
				continue;
			if (best >= 0)
			{
				c = LsmFdwKeyCmp(k[i], kl[i], k[best], kl[best]);
				if (c == 0 || (c > 0) != m->backward)
					continue;
			}
			best = i;
		}
		if (best < 0)
			return false;
		for (i = 0; i < 3; i++)
		{
			if (k[i] != NULL && LsmFdwKeyCmp(k[i], kl[i], k[best], kl[best]) == 0)
				m->at |= (i == 0 ? FROM_PENDING : i == 1 ? FROM_STAGE : FROM_STORE);
		}

		*key = k[best];
		*klen = kl[best];
		if (best == 0)
		{
			if (m->pending[m->ppos].is_delete)
				continue;
			*row = m->pending[m->ppos].val;
			*rowlen = m->pending[m->ppos].vlen;
		}
		else if (best == 1)
		{
			if (lsm_iter_is_delete(m->staged))
				continue;
			*row = lsm_iter_value(m->staged, rowlen);
		}
		else
			*row = lsm_iter_value(m->iter, rowlen);
		return true;
	}
}

/* Reads the next batch of it into b: LsmFdwBatchNext's slow path. */
const lsm_entry *
LsmFdwBatchFill(LsmFdwBatch *b, lsm_iter *it, LsmFdwStore *s,
				const char *relname)
{
	int			rc;

	CHECK_FOR_INTERRUPTS();
	b->pos = 0;
	b->n = lsm_iter_batch(it, &b->e);
	if (b->n > 0)
		return &b->e[b->pos++];
	if ((rc = lsm_iter_status(it)) != LSM_OK)
		LsmFdwReportError(rc, s->db, relname, "read");
	return NULL;
}

/* Closes m's iterators.  Raises no error. */
void
LsmFdwMergeClose(LsmFdwMerge *m)
{
	if (m->staged != NULL)
		lsm_iter_close(m->staged);
	if (m->iter != NULL)
		lsm_iter_close(m->iter);
	m->staged = NULL;
	m->iter = NULL;
}

/*
 * block.h
 *		Sorted key/value blocks with prefix compression and restart points
 *		(LevelDB's block format; docs/format.md).
 *
 *		entry:    [shared varint][unshared varint][value_len varint]
 *				  [unshared key bytes][value bytes]
 *		block:    entry* [restart offset u32]* [num_restarts u32]
 *
 * Every restart_interval-th entry stores its whole key (shared = 0) and its
 * offset is listed in the restart array, so a seek binary-searches the
 * restarts and scans at most restart_interval entries.  Data blocks use an
 * interval of 16; index blocks 1, so the restart ordinal of an index entry
 * is the ordinal of the data block it describes.
 */
#ifndef LSM_BLOCK_H
#define LSM_BLOCK_H

#include "util.h"

typedef struct lsm_block_builder
{
	lsm_buf		buf;
	lsm_buf		restarts;		/* u32 offsets */
	lsm_buf		last_key;
	int			interval;
	int			counter;		/* entries since the last restart */
	size_t		entries;
} lsm_block_builder;

void		lsm_block_builder_init(lsm_block_builder *b, int restart_interval);
void		lsm_block_builder_reset(lsm_block_builder *b);
void		lsm_block_builder_free(lsm_block_builder *b);

/* REQUIRES: key greater than every key added since the last reset. */
int			lsm_block_add(lsm_block_builder *b, const void *key, size_t klen,
						  const void *val, size_t vlen);

/* Bytes the block would have if finished now. */
size_t		lsm_block_estimate(const lsm_block_builder *b);

/* Appends the restart array; the block is then b->buf. */
int			lsm_block_finish(lsm_block_builder *b);

/*
 * A cursor over one block.  The block must stay mapped while it is used.
 * Key bytes are reassembled into key (owned by the cursor).
 */
typedef struct lsm_block_iter
{
	const uint8_t *data;
	size_t		data_len;		/* entries only (restart array excluded) */
	const uint8_t *restarts;
	uint32_t	num_restarts;
	size_t		off;			/* offset of the current entry */
	size_t		next_off;		/* offset of the entry after it */
	uint32_t	restart_idx;	/* restart block of the current entry */
	lsm_buf		key;			/* data is inline_key until a key outgrows it */
	const uint8_t *val;
	size_t		vlen;
	bool		valid;
	bool		corrupt;
	uint8_t		inline_key[128];	/* last: init clears what precedes it */
} lsm_block_iter;

/*
 * Checks the restart array of a block's contents (checksum excluded) and
 * prepares the cursor, unpositioned.  Returns false if malformed.
 */
bool		lsm_block_iter_init(lsm_block_iter *it, const uint8_t *p, size_t n);
void		lsm_block_iter_free(lsm_block_iter *it);

void		lsm_block_iter_first(lsm_block_iter *it);
void		lsm_block_iter_next_slow(lsm_block_iter *it);

/*
 * The next entry.  Inline for the common entry (three one-byte lengths, at
 * most 16 unshared key bytes, 16 bytes of the block and of the cursor's key
 * buffer from where they go): its key bytes are copied as 16, a fixed-size
 * copy the compiler inlines.  Anything else takes lsm_block_iter_next_slow.
 */
static inline void
lsm_block_iter_next(lsm_block_iter *it)
{
	const uint8_t *p = it->data + it->next_off;
	size_t		shared,
				unshared,
				vlen;

	if (it->next_off + 3 + 16 > it->data_len ||
		((p[0] | p[1] | p[2]) & 0x80) != 0)
		return lsm_block_iter_next_slow(it);
	shared = p[0];
	unshared = p[1];
	vlen = p[2];
	if (shared > it->key.len || unshared > 16 ||
		shared + 16 > it->key.cap ||
		it->next_off + 3 + unshared + vlen > it->data_len)
		return lsm_block_iter_next_slow(it);
	memcpy(it->key.data + shared, p + 3, 16);
	it->key.len = shared + unshared;
	it->off = it->next_off;
	it->val = p + 3 + unshared;
	it->vlen = vlen;
	it->next_off += 3 + unshared + vlen;
	while (it->restart_idx + 1 < it->num_restarts &&
		   lsm_get_u32(it->restarts + (size_t) (it->restart_idx + 1) * 4) <= it->off)
		it->restart_idx++;
	it->valid = true;
}

/*
 * The entries of one restart block that a step back decoded on its way to
 * the entry it wanted, so that the next steps back take them from here
 * (RocksDB keeps the same cache).  Belongs to whoever steps back through a
 * block, not to the cursor: point lookups never need it.
 */
#define LSM_BLOCK_BACK_MAX 32
typedef struct lsm_block_back
{
	const uint8_t *data;		/* the block's entries; NULL: empty */
	uint32_t	restart;		/* their restart block */
	int			n;				/* entries cached, in order */
	struct
	{
		size_t		off;
		size_t		next_off;
		size_t		kpos;		/* key at keys.data + kpos */
		size_t		klen;
		const uint8_t *val;
		size_t		vlen;
	}			e[LSM_BLOCK_BACK_MAX];
	lsm_buf		keys;
} lsm_block_back;

void		lsm_block_back_free(lsm_block_back *back);

/*
 * Backwards: the last entry, and the entry before the current one (invalid
 * before the first).  Entries are decoded forwards only, so a step back
 * decodes again from the restart point before the current entry (up to
 * restart_interval entries, as LevelDB's Prev does) unless back (may be
 * NULL) holds the entry from an earlier step.
 */
void		lsm_block_iter_last(lsm_block_iter *it);
void		lsm_block_iter_prev(lsm_block_iter *it, lsm_block_back *back);

/* Positions on the first entry with key >= target. */
void		lsm_block_iter_seek(lsm_block_iter *it, const uint8_t *target,
								size_t tlen);

/*
 * Positions on the entry whose bytes hold offset off (of the entries), going
 * forward from the current entry if it is not past off and off is within
 * its restart block, else from the last restart at or before off.
 */
void		lsm_block_iter_seek_offset(lsm_block_iter *it, size_t off);
/* Positions on restart entry i (full key); for index blocks, entry i. */
void		lsm_block_iter_seek_restart(lsm_block_iter *it, uint32_t i);

#endif							/* LSM_BLOCK_H */

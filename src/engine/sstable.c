/*
 * sstable.c
 *		Reading SSTables through mmap.  See sstable.h for the layout.
 *
 * Opening a table maps the whole file and checks the footer and the
 * checksums of the index, key filter and properties blocks, once.  Data
 * blocks are checked the first time this process reads each of them; a
 * per-table bitmap remembers which ones passed (the file is immutable, like
 * a block cache holding verified blocks).  The mapping keeps an unlinked
 * file readable, so a compaction in another process never pulls data from
 * under a reader.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "block.h"
#include "env.h"
#include "sstable.h"

struct lsm_table
{
	int			refs;
	uint64_t	number;
	char		name[32];
	const uint8_t *map;
	size_t		size;
	int			broken_rc;		/* LSM_OK unless the file is damaged */
	char	   *broken_msg;
	bool		has_filter;
	lsm_bloom	filter;
	size_t		filter_bytes;
	const uint8_t *index;		/* index block contents */
	size_t		index_len;
	uint32_t	nblocks;
	uint8_t    *verified;		/* bitmap over data blocks */
	uint64_t	entries;
	uint64_t	data_end;		/* end of the data blocks */
	uint64_t	global_seq;		/* 0, or the sequence of every entry */

	/* value filter and block locator (format 2), checked on first use */
	int			format;
	uint64_t	voff,
				loff;
	uint32_t	vsize,
				lsize;
	uint64_t	nvalues;
	uint64_t	unindexed;
	int			vstate;			/* 0 unchecked, 1 good, else the error */
	lsm_bloom	vfilter;
	lsm_locator locator;
};

uint64_t
lsm_table_number(const lsm_table *t)
{
	return t->number;
}

size_t
lsm_table_size(const lsm_table *t)
{
	return t->size;
}

void
lsm_table_ref(lsm_table *t)
{
	t->refs++;
}

void
lsm_table_unref(lsm_table *t)
{
	if (t == NULL || --t->refs > 0)
		return;
	lsm_env_munmap(t->map, t->size);
	free(t->broken_msg);
	free(t->verified);
	free(t);
}

int
lsm_table_status(const lsm_table *t, lsm_err *e)
{
	if (t->broken_rc == LSM_OK)
		return LSM_OK;
	/* an iterator found the index damaged after load() (no message kept) */
	if (t->broken_msg == NULL)
		return lsm_err_set(e, t->broken_rc, "malformed index block in %s",
						   t->name);
	return lsm_err_set(e, t->broken_rc, "%s", t->broken_msg);
}

bool
lsm_table_has_filter(const lsm_table *t)
{
	return t->has_filter;
}

void
lsm_table_filter(const lsm_table *t, lsm_bloom *f)
{
	if (t->has_filter)
		*f = t->filter;
	else
		memset(f, 0, sizeof(*f));
}

size_t
lsm_table_filter_bytes(const lsm_table *t)
{
	return t->filter_bytes;
}

bool
lsm_table_may_contain(const lsm_table *t, uint64_t h)
{
	return !t->has_filter || lsm_bloom_may_match(&t->filter, h);
}

/*
 * Resolves a block handle: checks that the block and its checksum lie
 * inside the file before limit (without overflow: size comes from the file
 * and may be anything up to 2^64 - 1) and, if check is set, the checksum.
 */
static int
get_block(const lsm_table *t, uint64_t off, uint64_t size, uint64_t limit,
		  bool check, const char *what, const uint8_t **p, lsm_err *e)
{
	if (off > limit || size > limit - off || limit - off - size < 4)
		return LSM_CORRUPT(e, "%s handle (offset %llu, size %llu) out of range in %s",
						   what, (unsigned long long) off,
						   (unsigned long long) size, t->name);
	*p = t->map + off;
	if (check && lsm_checksum(*p, size) != lsm_get_u32(*p + size))
		return LSM_CORRUPT(e, "checksum mismatch in %s at offset %llu of %s",
						   what, (unsigned long long) off, t->name);
	return LSM_OK;
}

/* Parses footer, index, filter and properties; the table is usable after. */
static int
load(lsm_table *t, lsm_err *e)
{
	const uint8_t *f;
	const uint8_t *p;
	uint64_t	ioff,
				foff,
				poff;
	uint32_t	isize,
				fsize,
				psize;
	uint64_t	limit;
	lsm_block_iter bi;
	uint64_t	v;
	int			rc;

	if (t->size < LSM_SST_FOOTER)
		return LSM_CORRUPT(e, "file %s is too short (%zu bytes) to be a table",
						   t->name, t->size);
	f = t->map + t->size - LSM_SST_FOOTER;
	if (lsm_get_u64(f + 56) != LSM_SST_MAGIC)
		return LSM_CORRUPT(e, "bad magic number in footer of %s", t->name);
	if (lsm_checksum(f, 52) != lsm_get_u32(f + 52))
		return LSM_CORRUPT(e, "checksum mismatch in footer of %s", t->name);
	t->format = (int) lsm_get_u32(f + 48);
	if (t->format != 1 && t->format != 2)
		return LSM_CORRUPT(e, "unsupported table format %u in %s",
						   lsm_get_u32(f + 48), t->name);
	ioff = lsm_get_u64(f);
	isize = lsm_get_u32(f + 8);
	foff = lsm_get_u64(f + 12);
	fsize = lsm_get_u32(f + 20);
	t->voff = lsm_get_u64(f + 24);
	t->vsize = lsm_get_u32(f + 32);
	poff = lsm_get_u64(f + 36);
	psize = lsm_get_u32(f + 44);
	limit = t->size - LSM_SST_FOOTER;

	rc = get_block(t, ioff, isize, limit, true, "index block", &t->index, e);
	if (rc != LSM_OK)
		return rc;
	t->index_len = isize;
	if (!lsm_block_iter_init(&bi, t->index, isize))
		return LSM_CORRUPT(e, "malformed index block in %s", t->name);
	t->nblocks = bi.num_restarts;
	lsm_block_iter_free(&bi);

	if (fsize > 0)
	{
		rc = get_block(t, foff, fsize, limit, true, "key filter", &p, e);
		if (rc != LSM_OK)
			return rc;
		rc = lsm_bloom_parse(p, fsize, &t->filter, t->name, e);
		if (rc != LSM_OK)
			return rc;
		t->has_filter = true;
		t->filter_bytes = fsize;
	}

	rc = get_block(t, poff, psize, limit, true, "properties block", &p, e);
	if (rc != LSM_OK)
		return rc;
	if (lsm_get_varint(p, p + psize, &v) == NULL)
		return LSM_CORRUPT(e, "malformed properties block in %s", t->name);
	t->entries = v;
	/* the data blocks end where the first block after them starts */
	t->data_end = fsize ? foff : t->vsize ? t->voff : ioff;
	if (t->data_end > ioff || t->data_end > poff)
		return LSM_CORRUPT(e, "data of %s ends at offset %llu, past its index or properties block",
						   t->name, (unsigned long long) t->data_end);
	if (t->format >= 2)
	{
		const uint8_t *q = p,
				   *end = p + psize;
		uint64_t	skip;
		int			i;

		/* six integers, two keys, then the value fields */
		for (i = 0; i < 8 && q != NULL; i++)
		{
			q = lsm_get_varint(q, end, &skip);
			if (q != NULL && i >= 6)
				q = skip <= (uint64_t) (end - q) ? q + skip : NULL;
		}
		if (q == NULL ||
			(q = lsm_get_varint(q, end, &t->nvalues)) == NULL ||
			(q = lsm_get_varint(q, end, &t->loff)) == NULL ||
			(q = lsm_get_varint(q, end, &v)) == NULL ||
			(q = lsm_get_varint(q, end, &t->unindexed)) == NULL ||
			v > UINT32_MAX || (t->nvalues > 0) != (t->vsize > 0) ||
			(t->vsize > 0) != (v > 0))
			return LSM_CORRUPT(e, "malformed properties block in %s", t->name);
		t->lsize = (uint32_t) v;
	}
	else if (t->vsize != 0)
		return LSM_CORRUPT(e, "format 1 table %s has a value filter", t->name);

	t->verified = calloc((t->nblocks + 7) / 8, 1);
	if (t->verified == NULL)
		return LSM_NOMEM_ERR(e);
	return LSM_OK;
}

int
lsm_table_open(const char *dir, uint64_t number, uint64_t global_seq,
			   lsm_table **out, lsm_err *e)
{
	char		path[4096];
	lsm_table  *t;
	lsm_err		local;
	int			fd;
	int			rc;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return LSM_NOMEM_ERR(e);
	t->refs = 1;
	t->number = number;
	t->global_seq = global_seq;
	lsm_dir_name(LSM_F_TABLE, number, t->name, sizeof(t->name));
	(void) lsm_dir_path(path, sizeof(path), dir, t->name, NULL);
	lsm_err_clear(&local);
	rc = lsm_env_open(path, O_RDONLY, 0, &fd, &local);
	if (rc == LSM_NOTFOUND)
	{
		free(t);
		return lsm_err_set(e, LSM_NOTFOUND, "%s", local.msg);
	}
	if (rc == LSM_OK)
	{
		rc = lsm_env_mmap(fd, t->name, (const void **) &t->map, &t->size, &local);
		lsm_env_close(fd);
	}
	if (rc == LSM_OK)
		rc = load(t, &local);
	if (rc != LSM_OK && rc != LSM_CORRUPTION)
	{
		/* not damage (EACCES, EMFILE, ENOMEM): fail, keeping the errno */
		lsm_table_unref(t);
		return lsm_err_copy(e, &local);
	}
	if (rc != LSM_OK)
	{
		t->broken_rc = rc;
		t->broken_msg = strdup(local.msg);
		t->has_filter = false;
		if (t->broken_msg == NULL)
		{
			lsm_table_unref(t);
			return LSM_NOMEM_ERR(e);
		}
	}
	*out = t;
	return LSM_OK;
}

/* Resolves and checksums the value filter and locator, once. */
static int
load_values(lsm_table *t, lsm_err *e)
{
	const uint8_t *p;
	uint64_t	limit = t->size - LSM_SST_FOOTER;
	int			rc;

	if (t->vstate == 1)
		return LSM_OK;
	if (t->vstate != 0)
		return lsm_err_set(e, t->vstate, "damaged value filter in %s", t->name);
	rc = get_block(t, t->voff, t->vsize, limit, true, "value filter", &p, e);
	if (rc == LSM_OK)
		rc = lsm_bloom_parse_as(p, t->vsize, 'V', "value filter", &t->vfilter,
								t->name, e);
	if (rc == LSM_OK)
		rc = get_block(t, t->loff, t->lsize, limit, true, "block locator", &p, e);
	if (rc == LSM_OK)
		rc = lsm_locator_parse(p, t->lsize, &t->locator, t->name, e);
	if (rc == LSM_OK && t->locator.nblocks != t->nblocks)
		rc = LSM_CORRUPT(e, "block locator of %s covers %u blocks, not %u",
						 t->name, t->locator.nblocks, t->nblocks);
	if (rc != LSM_NOMEM)
		t->vstate = rc == LSM_OK ? 1 : rc;
	return rc;
}

int
lsm_table_value_filter(lsm_table *t, int field, uint32_t m, int k,
					   lsm_bloom *f, lsm_err *e)
{
	int			rc;

	memset(f, 0, sizeof(*f));
	if (t->broken_rc != LSM_OK)
		return lsm_table_status(t, e);
	if (t->format < 2 ||
		(field >= 0 && field < 64 && (t->unindexed >> field) & 1))
		return LSM_NOTFOUND;
	if (t->nvalues == 0)
		return LSM_OK;
	/* the size first: a filter of another m is never checksummed or used */
	if ((uint64_t) t->vsize != (uint64_t) m / 8 + LSM_BLOOM_TRAILER)
		return LSM_CORRUPT(e, "value filter of %s has %u bytes, the store's filters have %llu",
						   t->name, t->vsize,
						   (unsigned long long) (m / 8 + LSM_BLOOM_TRAILER));
	rc = load_values(t, e);
	if (rc != LSM_OK)
		return rc;
	if (t->vfilter.k != k)
		return LSM_CORRUPT(e, "value filter of %s has %d hashes, the store's filters have %d",
						   t->name, t->vfilter.k, k);
	*f = t->vfilter;
	return LSM_OK;
}

uint64_t
lsm_table_value_filter_bytes(const lsm_table *t)
{
	return (uint64_t) t->vsize + t->lsize;
}

int
lsm_table_locator(lsm_table *t, lsm_locator *l, lsm_err *e)
{
	int			rc;

	if (t->broken_rc != LSM_OK)
		return lsm_table_status(t, e);
	if (t->format < 2 || t->nvalues == 0)
		return LSM_NOTFOUND;
	rc = load_values(t, e);
	if (rc == LSM_OK)
		*l = t->locator;
	return rc;
}

uint32_t
lsm_table_nblocks(const lsm_table *t)
{
	return t->broken_rc == LSM_OK ? t->nblocks : 0;
}

/*
 * Decodes index entry ordinal i's handle and returns the data block
 * contents, checking the checksum the first time.
 */
static int
data_block(lsm_table *t, uint32_t i, const uint8_t *hv, size_t hlen,
		   const uint8_t **p, size_t *n, lsm_err *e)
{
	uint64_t	off,
				size;
	const uint8_t *q;
	int			rc;

	if ((q = lsm_get_varint(hv, hv + hlen, &off)) == NULL ||
		lsm_get_varint(q, hv + hlen, &size) == NULL)
		return LSM_CORRUPT(e, "malformed block handle in index of %s", t->name);
	rc = get_block(t, off, size, t->data_end, false, "data block", p, e);
	if (rc != LSM_OK)
		return rc;
	if (!(t->verified[i >> 3] & (1 << (i & 7))))
	{
		if (lsm_checksum(*p, size) != lsm_get_u32(*p + size))
			return LSM_CORRUPT(e, "checksum mismatch in data block at offset %llu of %s",
							   (unsigned long long) off, t->name);
		t->verified[i >> 3] |= (uint8_t) (1 << (i & 7));
	}
	*n = size;
	return LSM_OK;
}

/* Splits a data block value into tag and row. */
static inline int
decode_value(const lsm_table *t, const uint8_t *v, size_t vlen,
			 lsm_table_hit *hit, lsm_err *e)
{
	uint64_t	tag;
	const uint8_t *p = lsm_get_varint(v, v + vlen, &tag);

	if (p == NULL)
	{
		memset(hit, 0, sizeof(*hit));
		return LSM_CORRUPT(e, "malformed entry in %s", t->name);
	}
	/* an ingested table: the manifest's sequence replaces the stored one */
	hit->seq = t->global_seq ? t->global_seq : tag >> 1;
	hit->del = (int) (tag & 1);
	hit->val = p;
	hit->vlen = vlen - (size_t) (p - v);
	return LSM_OK;
}

int
lsm_table_get(lsm_table *t, const void *key, size_t klen, lsm_table_hit *hit,
			  lsm_err *e)
{
	lsm_block_iter ii,
				bi;
	const uint8_t *bp;
	size_t		bn;
	uint32_t	ord;
	int			rc;

	if (t->broken_rc != LSM_OK)
		return lsm_table_status(t, e);
	if (!lsm_block_iter_init(&ii, t->index, t->index_len))
		return LSM_CORRUPT(e, "malformed index block in %s", t->name);
	lsm_block_iter_seek(&ii, key, klen);
	if (!ii.valid)
	{
		rc = ii.corrupt ? LSM_CORRUPT(e, "malformed index block in %s", t->name)
			: LSM_NOTFOUND;
		lsm_block_iter_free(&ii);
		return rc;
	}
	ord = ii.restart_idx;
	rc = data_block(t, ord, ii.val, ii.vlen, &bp, &bn, e);
	lsm_block_iter_free(&ii);
	if (rc != LSM_OK)
		return rc;
	if (!lsm_block_iter_init(&bi, bp, bn))
		return LSM_CORRUPT(e, "malformed data block %u in %s", ord, t->name);
	lsm_block_iter_seek(&bi, key, klen);
	if (bi.corrupt)
		rc = LSM_CORRUPT(e, "malformed data block %u in %s", ord, t->name);
	else if (!bi.valid || lsm_key_cmp(bi.key.data, bi.key.len, key, klen) != 0)
		rc = LSM_NOTFOUND;
	else
		rc = decode_value(t, bi.val, bi.vlen, hit, e);
	lsm_block_iter_free(&bi);
	return rc;
}

int
lsm_table_block_scan(lsm_table *t, uint32_t i, const void *needle, size_t nlen,
					 lsm_entry_fn fn, void *arg, bool *skipped, lsm_err *e)
{
	lsm_block_iter ii,
				bi;
	lsm_table_hit hit;
	const uint8_t *bp;
	size_t		bn;
	int			rc;

	*skipped = false;
	if (t->broken_rc != LSM_OK)
		return lsm_table_status(t, e);
	if (i >= t->nblocks)
		return LSM_CORRUPT(e, "block %u of %s does not exist", i, t->name);
	if (!lsm_block_iter_init(&ii, t->index, t->index_len))
		return LSM_CORRUPT(e, "malformed index block in %s", t->name);
	lsm_block_iter_seek_restart(&ii, i);
	rc = ii.valid ? data_block(t, i, ii.val, ii.vlen, &bp, &bn, e) :
		LSM_CORRUPT(e, "malformed index block in %s", t->name);
	lsm_block_iter_free(&ii);
	if (rc != LSM_OK)
		return rc;
	if (!lsm_block_iter_init(&bi, bp, bn))
		return LSM_CORRUPT(e, "malformed data block %u in %s", i, t->name);
	if (needle != NULL && nlen > 0)
	{
		/*
		 * Only the entries whose bytes hold the needle can hold the value:
		 * each occurrence is decoded from the restart point before it, and
		 * the search goes on after that entry.
		 */
		size_t		pos = 0;
		const uint8_t *at;

		*skipped = true;
		while (rc == LSM_OK && pos < bi.data_len &&
			   (at = memmem(bi.data + pos, bi.data_len - pos, needle,
							nlen)) != NULL)
		{
			*skipped = false;
			lsm_block_iter_seek_offset(&bi, (size_t) (at - bi.data));
			if (!bi.valid)
				break;
			rc = decode_value(t, bi.val, bi.vlen, &hit, e);
			if (rc == LSM_OK)
				rc = fn(arg, bi.key.data, bi.key.len, hit.seq, hit.del,
						hit.val, hit.vlen);
			pos = bi.next_off;
		}
	}
	else
		for (lsm_block_iter_first(&bi); bi.valid && rc == LSM_OK;
			 lsm_block_iter_next(&bi))
		{
			rc = decode_value(t, bi.val, bi.vlen, &hit, e);
			if (rc == LSM_OK)
				rc = fn(arg, bi.key.data, bi.key.len, hit.seq, hit.del,
						hit.val, hit.vlen);
		}
	if (rc == LSM_OK && bi.corrupt)
		rc = LSM_CORRUPT(e, "malformed data block %u in %s", i, t->name);
	lsm_block_iter_free(&bi);
	return rc;
}

/* ---------- iterator ---------- */

typedef struct table_iter
{
	lsm_iiter	base;
	lsm_table  *t;
	lsm_block_iter index;
	lsm_block_iter block;
	lsm_block_back back;		/* of block, for steps back */
	bool		in_block;
} table_iter;

static void
ti_fail(table_iter *it, int rc)
{
	it->base.valid = false;
	it->base.rc = rc;
}

/*
 * Publishes the block cursor's entry, or moves on to the blocks after it
 * (before it when back), entering each at its first entry (its last).
 */
static void
ti_settle(table_iter *it, bool back)
{
	for (;;)
	{
		const uint8_t *bp;
		size_t		bn;
		lsm_table_hit hit;
		int			rc;

		if (it->in_block && it->block.valid)
		{
			rc = decode_value(it->t, it->block.val, it->block.vlen, &hit,
							  it->base.err);
			if (rc != LSM_OK)
				return ti_fail(it, rc);
			lsm_iiter_stand(&it->base, it->block.key.data, it->block.key.len,
							hit.val, hit.vlen, hit.seq, hit.del);
			return;
		}
		if (it->in_block && it->block.corrupt)
			return ti_fail(it, LSM_CORRUPT(it->base.err,
										   "malformed data block in %s",
										   it->t->name));
		if (it->in_block)
		{
			if (back)
				lsm_block_iter_prev(&it->index, NULL);
			else
				lsm_block_iter_next(&it->index);
			it->in_block = false;
		}
		if (!it->index.valid)
		{
			if (it->index.corrupt)
				return ti_fail(it, LSM_CORRUPT(it->base.err,
											   "malformed index block in %s",
											   it->t->name));
			it->base.valid = false;
			return;
		}
		rc = data_block(it->t, it->index.restart_idx, it->index.val,
						it->index.vlen, &bp, &bn, it->base.err);
		if (rc != LSM_OK)
			return ti_fail(it, rc);
		lsm_block_iter_free(&it->block);
		if (!lsm_block_iter_init(&it->block, bp, bn))
			return ti_fail(it, LSM_CORRUPT(it->base.err,
										   "malformed data block in %s",
										   it->t->name));
		if (back)
			lsm_block_iter_last(&it->block);
		else
			lsm_block_iter_first(&it->block);
		it->in_block = true;
	}
}

/* Starts a seek: false (with the iterator failed) if the table is broken. */
static bool
ti_seek_start(table_iter *it)
{
	it->base.rc = LSM_OK;
	it->in_block = false;
	if (it->t->broken_rc != LSM_OK)
	{
		ti_fail(it, lsm_table_status(it->t, it->base.err));
		return false;
	}
	return true;
}

static void
ti_seek(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	table_iter *it = (table_iter *) base;

	if (!ti_seek_start(it))
		return;
	if (key == NULL)
	{
		lsm_block_iter_first(&it->index);
		ti_settle(it, false);
		return;
	}
	lsm_block_iter_seek(&it->index, key, klen);
	ti_settle(it, false);
	/* the block holding key may start below it: skip to the first >= key */
	while (it->base.valid && it->in_block &&
		   lsm_key_cmp(it->base.key, it->base.klen, key, klen) < 0)
	{
		lsm_block_iter_seek(&it->block, key, klen);
		ti_settle(it, false);
	}
}

static void
ti_next(lsm_iiter *base)
{
	table_iter *it = (table_iter *) base;

	lsm_block_iter_next(&it->block);
	ti_settle(it, false);
}

static void
ti_seek_back(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	table_iter *it = (table_iter *) base;

	if (!ti_seek_start(it))
		return;
	/* the first block whose last key is >= key; past them all, the last */
	if (key != NULL)
		lsm_block_iter_seek(&it->index, key, klen);
	if (key == NULL || (!it->index.valid && !it->index.corrupt))
	{
		lsm_block_iter_last(&it->index);
		ti_settle(it, true);
		return;
	}
	ti_settle(it, true);
	if (!it->base.valid || !it->in_block)
		return;
	/* in that block: the first entry >= key, or the one before it */
	lsm_block_iter_seek(&it->block, key, klen);
	if (!it->block.valid && !it->block.corrupt)
		lsm_block_iter_last(&it->block);
	else if (it->block.valid &&
			 lsm_key_cmp(it->block.key.data, it->block.key.len, key, klen) > 0)
		lsm_block_iter_prev(&it->block, &it->back);
	ti_settle(it, true);
}

static void
ti_prev(lsm_iiter *base)
{
	table_iter *it = (table_iter *) base;

	lsm_block_iter_prev(&it->block, &it->back);
	ti_settle(it, true);
}

/*
 * The run of a table: the entries of each block in one loop, no entry
 * published until the run stops (ti_settle then publishes the one it
 * stopped on, or enters the next block when the current one is done).
 */
static void
ti_run(lsm_iiter *base, lsm_run *r, const uint8_t *limit, size_t limitlen)
{
	table_iter *it = (table_iter *) base;
	lsm_block_iter *b = &it->block;

	while (it->base.valid && it->in_block && r->budget > 0)
	{
		while (b->valid)
		{
			lsm_table_hit hit;

			if ((limit != NULL &&
				 lsm_key_cmp(b->key.data, b->key.len, limit, limitlen) >= 0) ||
				r->budget <= 0)
				return ti_settle(it, false);
			if (decode_value(it->t, b->val, b->vlen, &hit, it->base.err) != LSM_OK ||
				!lsm_run_add(r, b->key.data, b->key.len, b->key.cap, hit.val,
							 hit.vlen, hit.del))
				return ti_settle(it, false);	/* reports the entry's fault */
			lsm_block_iter_next(b);
		}
		ti_settle(it, false);	/* the next block, or the end */
	}
}

static void
ti_destroy(lsm_iiter *base)
{
	table_iter *it = (table_iter *) base;

	lsm_block_iter_free(&it->index);
	lsm_block_iter_free(&it->block);
	lsm_block_back_free(&it->back);
	lsm_table_unref(it->t);
	free(it);
}

static const lsm_iiter_ops table_iter_ops = {ti_seek, ti_next, ti_seek_back,
	ti_prev, ti_destroy, ti_run};

lsm_iiter *
lsm_table_iter(lsm_table *t, lsm_err *err)
{
	table_iter *it = calloc(1, sizeof(*it));

	if (it == NULL)
		return NULL;
	it->base.ops = &table_iter_ops;
	it->base.err = err;
	it->t = t;
	lsm_table_ref(t);
	if (t->broken_rc == LSM_OK &&
		!lsm_block_iter_init(&it->index, t->index, t->index_len))
	{
		/* load() validated it; only a later bug could get here */
		it->t->broken_rc = LSM_CORRUPTION;
	}
	return &it->base;
}

typedef struct verify_values_state
{
	lsm_table  *t;
	uint32_t	block;
	uint64_t	nvalues;
	bool		missed;
	uint64_t   *mask;
	lsm_buf		hashes;
} verify_values_state;

/* Checks that the value filter and locator hold every value of one entry. */
static int
verify_entry_values(void *arg, const uint8_t *key, size_t klen, uint64_t seq,
					int del, const uint8_t *row, size_t rowlen)
{
	verify_values_state *st = arg;
	size_t		i;
	uint32_t	w;

	(void) key;
	(void) klen;
	(void) seq;
	st->hashes.len = 0;
	if (del)
		return LSM_OK;
	if (lsm_value_hashes(row, rowlen, st->t->unindexed, &st->hashes) != LSM_OK)
		return LSM_NOMEM;
	for (i = 0; i < st->hashes.len / sizeof(uint64_t); i++)
	{
		uint64_t	h;

		memcpy(&h, st->hashes.data + i * sizeof(uint64_t), sizeof(h));
		st->nvalues++;
		for (w = 0; w < st->t->locator.words; w++)
			st->mask[w] = ~UINT64_C(0);
		lsm_locator_probe(&st->t->locator, h, st->mask);
		if (!lsm_bloom_may_match(&st->t->vfilter, h) ||
			!((st->mask[st->block / 64] >> (st->block % 64)) & 1))
			st->missed = true;
	}
	return LSM_OK;
}

/* Checks the value filter and locator against every row of the table. */
static int
verify_values(lsm_table *t, lsm_err *e)
{
	verify_values_state st;
	bool		skipped;
	int			rc;

	if (t->format < 2 || t->nvalues == 0)
		return LSM_OK;
	t->vstate = 0;				/* force the checksums */
	rc = load_values(t, e);
	if (rc != LSM_OK)
		return rc;
	memset(&st, 0, sizeof(st));
	st.t = t;
	st.mask = malloc(sizeof(uint64_t) * t->locator.words);
	if (st.mask == NULL)
		return LSM_NOMEM_ERR(e);
	for (st.block = 0; st.block < t->nblocks && rc == LSM_OK; st.block++)
		rc = lsm_table_block_scan(t, st.block, NULL, 0, verify_entry_values,
								  &st, &skipped, e);
	free(st.mask);
	lsm_buf_free(&st.hashes);
	if (rc == LSM_NOMEM)
		rc = LSM_NOMEM_ERR(e);
	if (rc != LSM_OK)
		return rc;
	if (st.missed)
		return LSM_CORRUPT(e, "value filter or block locator of %s misses a value it holds",
						   t->name);
	if (st.nvalues != t->nvalues)
		return LSM_CORRUPT(e, "%s holds %llu indexed values, its properties say %llu",
						   t->name, (unsigned long long) st.nvalues,
						   (unsigned long long) t->nvalues);
	return LSM_OK;
}

int
lsm_table_verify(lsm_table *t, const uint8_t *smallest, size_t smallest_len,
				 const uint8_t *largest, size_t largest_len, uint64_t *entries,
				 lsm_err *e)
{
	lsm_iiter  *it;
	lsm_buf		prev = {0};
	uint64_t	n = 0;
	int			rc = LSM_OK;
	uint32_t	i;

	if (t->broken_rc != LSM_OK)
		return lsm_table_status(t, e);
	/* force a checksum check of every data block */
	for (i = 0; i < t->nblocks; i++)
		t->verified[i >> 3] &= (uint8_t) ~(1 << (i & 7));
	it = lsm_table_iter(t, e);
	if (it == NULL)
		return LSM_NOMEM_ERR(e);
	for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
	{
		if (n == 0 && lsm_key_cmp(it->key, it->klen, smallest, smallest_len) != 0)
		{
			rc = LSM_CORRUPT(e, "first key of %s differs from the manifest", t->name);
			break;
		}
		if (n > 0 && lsm_key_cmp(prev.data, prev.len, it->key, it->klen) >= 0)
		{
			rc = LSM_CORRUPT(e, "keys out of order in %s", t->name);
			break;
		}
		if (!lsm_table_may_contain(t, lsm_key_hash(it->key, it->klen)))
		{
			rc = LSM_CORRUPT(e, "key filter of %s misses a key it holds", t->name);
			break;
		}
		prev.len = 0;
		if (lsm_buf_append(&prev, it->key, it->klen) != LSM_OK)
		{
			rc = LSM_NOMEM_ERR(e);
			break;
		}
		n++;
	}
	if (rc == LSM_OK && it->rc != LSM_OK)
		rc = it->rc;
	if (rc == LSM_OK && n > 0 &&
		lsm_key_cmp(prev.data, prev.len, largest, largest_len) != 0)
		rc = LSM_CORRUPT(e, "last key of %s differs from the manifest", t->name);
	if (rc == LSM_OK && n != t->entries)
		rc = LSM_CORRUPT(e, "%s holds %llu entries, its properties say %llu",
						 t->name, (unsigned long long) n,
						 (unsigned long long) t->entries);
	lsm_buf_free(&prev);
	lsm_iiter_destroy(it);
	*entries = n;
	if (rc == LSM_OK)
		rc = verify_values(t, e);
	return rc;
}

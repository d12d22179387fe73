/*
 * sstable_builder.c
 *		Writes an SSTable in one pass over sorted entries.  See sstable.h for
 *		the layout.
 *
 * Blocks are appended to an output buffer that is written to the file in
 * 256 KiB pieces.  Key hashes are collected as entries arrive and the key
 * filter is built from them at the end, so no second pass over the keys is
 * needed.  Value hashes are collected the same way (each with the ordinal of
 * its data block) and set in the value filter as rows arrive; the locator
 * is built from them at the end.  Properties: [entries][deletions][min_seq]
 * [max_seq][data_bytes][bits_per_key][smallest len + bytes][largest len +
 * bytes], and since format 2 [value_count][locator offset][locator size]
 * [unindexed field mask], all varints.
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
#include "vfilter.h"

#define OUT_CHUNK (256 * 1024)

struct lsm_table_builder
{
	char	   *path;
	char		name[32];
	int			fd;
	bool		defer_sync;		/* lsm_table_builder_defer_sync */
	uint64_t	number;
	int			block_bytes;
	int			bits_per_key;
	uint64_t	file_off;		/* bytes already written to the file */
	lsm_buf		out;			/* buffered output */
	lsm_block_builder data;
	lsm_block_builder index;
	lsm_buf		tmp;
	lsm_buf		hashes;			/* uint64 key hashes */
	lsm_value_params vp;		/* value filter parameters (bits 0: none) */
	uint8_t    *vlines;			/* the value filter being built */
	lsm_buf		vhashes;		/* uint64 value hashes */
	lsm_buf		vblocks;		/* uint32 data block ordinal of each */
	lsm_buf		smallest;
	lsm_buf		last_key;
	uint64_t	data_end;		/* end of the last data block */
	uint64_t	entries;
	uint64_t	deletions;
	uint64_t	min_seq;
	uint64_t	max_seq;
};

void
lsm_table_meta_free(lsm_table_meta *m)
{
	free(m->smallest);
	free(m->largest);
	m->smallest = m->largest = NULL;
}

int
lsm_table_builder_open(const char *path, uint64_t number, int block_bytes,
					   int bits_per_key, lsm_table_builder **out, lsm_err *e)
{
	lsm_table_builder *b = calloc(1, sizeof(*b));
	int			rc;

	*out = NULL;
	if (b == NULL || (b->path = strdup(path)) == NULL)
	{
		free(b);
		return LSM_NOMEM_ERR(e);
	}
	lsm_dir_name(LSM_F_TABLE, number, b->name, sizeof(b->name));
	rc = lsm_env_open(path, O_WRONLY | O_CREAT | O_EXCL, 0644, &b->fd, e);
	if (rc != LSM_OK)
	{
		if (e && e->saved_errno == EEXIST)
			rc = e->rc = LSM_EXISTS;
		free(b->path);
		free(b);
		return rc;
	}
	b->number = number;
	b->block_bytes = block_bytes;
	b->bits_per_key = bits_per_key;
	b->min_seq = UINT64_MAX;
	lsm_block_builder_init(&b->data, 16);
	lsm_block_builder_init(&b->index, 1);
	*out = b;
	return LSM_OK;
}

/* Writes out the buffered output if it is large (or if all is set). */
static int
drain(lsm_table_builder *b, bool all, lsm_err *e)
{
	int			rc;

	if (b->out.len == 0 || (!all && b->out.len < OUT_CHUNK))
		return LSM_OK;
	rc = lsm_env_write(b->fd, b->out.data, b->out.len, b->name, e);
	if (rc != LSM_OK)
		return rc;
	b->file_off += b->out.len;
	b->out.len = 0;
	return LSM_OK;
}

/* Appends a block and its checksum; returns its offset and size. */
static int
emit_block(lsm_table_builder *b, const uint8_t *p, size_t n, uint64_t *off,
		   uint32_t *size, lsm_err *e)
{
	uint8_t		ck[4];

	*off = b->file_off + b->out.len;
	*size = (uint32_t) n;
	lsm_put_u32(ck, lsm_checksum(p, n));
	if (lsm_buf_append(&b->out, p, n) != LSM_OK ||
		lsm_buf_append(&b->out, ck, 4) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	return drain(b, false, e);
}

/* Finishes the current data block and adds its index entry. */
static int
flush_data_block(lsm_table_builder *b, lsm_err *e)
{
	uint64_t	off;
	uint32_t	size;
	uint8_t		handle[20];
	int			hlen;
	int			rc;

	if (b->data.entries == 0)
		return LSM_OK;
	if (lsm_block_finish(&b->data) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	rc = emit_block(b, b->data.buf.data, b->data.buf.len, &off, &size, e);
	if (rc != LSM_OK)
		return rc;
	hlen = lsm_put_varint(handle, off);
	hlen += lsm_put_varint(handle + hlen, size);
	if (lsm_block_add(&b->index, b->last_key.data, b->last_key.len,
					  handle, hlen) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	lsm_block_builder_reset(&b->data);
	return LSM_OK;
}

int
lsm_table_builder_set_values(lsm_table_builder *b, const lsm_value_params *vp,
							 lsm_err *e)
{
	LSM_ASSERT(b->entries == 0);
	if (vp->bits % 512 != 0 || vp->bits > LSM_VFILTER_MAX_BITS ||
		vp->hashes < 0 || vp->hashes > LSM_VFILTER_MAX_HASHES)
		return lsm_err_set(e, LSM_INVALID, "value filter of %u bits and %d hashes",
						   vp->bits, vp->hashes);
	if (vp->bits == 0 || vp->hashes == 0)
		return LSM_OK;
	b->vlines = calloc((size_t) lsm_vfilter_lines(vp->bits), LSM_BLOOM_LINE);
	if (b->vlines == NULL)
		return LSM_NOMEM_ERR(e);
	b->vp = *vp;
	return LSM_OK;
}

/* Adds the indexed fields of a live row to the value filter. */
static int
add_values(lsm_table_builder *b, const uint8_t *row, size_t rowlen)
{
	uint32_t	block = (uint32_t) b->index.entries;
	size_t		first = b->vhashes.len / sizeof(uint64_t);
	size_t		i,
				n;

	if (lsm_value_hashes(row, rowlen, b->vp.unindexed, &b->vhashes) != LSM_OK)
		return LSM_NOMEM;
	n = b->vhashes.len / sizeof(uint64_t);
	for (i = first; i < n; i++)
	{
		uint64_t	h;

		memcpy(&h, b->vhashes.data + i * sizeof(uint64_t), sizeof(h));
		lsm_bloom_set(b->vlines, lsm_vfilter_lines(b->vp.bits), b->vp.hashes, h);
		if (lsm_buf_append(&b->vblocks, &block, sizeof(block)) != LSM_OK)
			return LSM_NOMEM;
	}
	return LSM_OK;
}

int
lsm_table_builder_add(lsm_table_builder *b, const void *key, size_t klen,
					  uint64_t seq, int del, const void *val, size_t vlen,
					  lsm_err *e)
{
	uint64_t	h = lsm_key_hash(key, klen);
	int			rc;

	/* sorted input is every writer's duty; a damaged table breaks it */
	if (b->entries > 0 &&
		lsm_key_cmp(b->last_key.data, b->last_key.len, key, klen) >= 0)
		return LSM_CORRUPT(e, "keys out of order in the input of %s (a damaged table?)",
						   b->name);
	b->tmp.len = 0;
	if (lsm_buf_append_varint(&b->tmp, seq << 1 | (del ? 1 : 0)) != LSM_OK ||
		lsm_buf_append(&b->tmp, val, vlen) != LSM_OK ||
		lsm_block_add(&b->data, key, klen, b->tmp.data, b->tmp.len) != LSM_OK ||
		lsm_buf_append(&b->hashes, &h, sizeof(h)) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	if (b->entries == 0 && lsm_buf_append(&b->smallest, key, klen) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	b->last_key.len = 0;
	if (lsm_buf_append(&b->last_key, key, klen) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	if (!del && b->vlines != NULL && add_values(b, val, vlen) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	b->entries++;
	if (del)
		b->deletions++;
	if (seq < b->min_seq)
		b->min_seq = seq;
	if (seq > b->max_seq)
		b->max_seq = seq;
	if (lsm_block_estimate(&b->data) >= (size_t) b->block_bytes)
	{
		rc = flush_data_block(b, e);
		if (rc != LSM_OK)
			return rc;
	}
	return LSM_OK;
}

void
lsm_table_builder_defer_sync(lsm_table_builder *b)
{
	b->defer_sync = true;
}

uint64_t
lsm_table_builder_size(const lsm_table_builder *b)
{
	return b->file_off + b->out.len + lsm_block_estimate(&b->data);
}

uint64_t
lsm_table_builder_entries(const lsm_table_builder *b)
{
	return b->entries;
}

static void
put_handle(uint8_t *p, uint64_t off, uint32_t size)
{
	lsm_put_u64(p, off);
	lsm_put_u32(p + 8, size);
}

static void
builder_free(lsm_table_builder *b)
{
	lsm_block_builder_free(&b->data);
	lsm_block_builder_free(&b->index);
	lsm_buf_free(&b->out);
	lsm_buf_free(&b->tmp);
	lsm_buf_free(&b->hashes);
	free(b->vlines);
	lsm_buf_free(&b->vhashes);
	lsm_buf_free(&b->vblocks);
	lsm_buf_free(&b->smallest);
	lsm_buf_free(&b->last_key);
	free(b->path);
	free(b);
}

void
lsm_table_builder_abandon(lsm_table_builder *b)
{
	if (b == NULL)
		return;
	lsm_env_close(b->fd);
	(void) lsm_env_unlink(b->path, NULL);
	builder_free(b);
}

/*
 * Makes room for a block of size bytes (plus its checksum) that starts on a
 * 64-byte boundary of the file, zero-filling the gap; returns where it goes
 * in the output buffer, NULL when out of memory.
 */
static uint8_t *
aligned_block(lsm_table_builder *b, size_t size, uint64_t *off)
{
	size_t		pad = (64 - (b->file_off + b->out.len) % 64) % 64;

	if (lsm_buf_reserve(&b->out, pad + size + 4) != LSM_OK)
		return NULL;
	memset(b->out.data + b->out.len, 0, pad);
	b->out.len += pad;
	*off = b->file_off + b->out.len;
	return b->out.data + b->out.len;
}

/* Checksums and commits the block aligned_block made room for. */
static int
commit_aligned(lsm_table_builder *b, size_t size, lsm_err *e)
{
	uint8_t    *p = b->out.data + b->out.len;

	lsm_put_u32(p + size, lsm_checksum(p, size));
	b->out.len += size + 4;
	return drain(b, false, e);
}

static int
finish(lsm_table_builder *b, lsm_table_meta *meta, lsm_err *e)
{
	uint8_t		footer[LSM_SST_FOOTER];
	uint64_t	foff = 0,
				voff = 0,
				loff = 0,
				ioff,
				poff;
	uint32_t	fsize = 0,
				vsize = 0,
				lsize = 0,
				isize,
				psize;
	uint64_t	nvalues = b->vhashes.len / sizeof(uint64_t);
	lsm_buf		props = {0};
	uint8_t    *p;
	int			rc;

	rc = flush_data_block(b, e);
	if (rc != LSM_OK)
		return rc;
	b->data_end = b->file_off + b->out.len;

	/* key filter, its lines on a 64-byte boundary of the file */
	if (b->bits_per_key > 0 && b->entries > 0)
	{
		size_t		fbytes = lsm_bloom_size(b->entries, b->bits_per_key);

		if ((p = aligned_block(b, fbytes, &foff)) == NULL)
			return LSM_NOMEM_ERR(e);
		fsize = (uint32_t) fbytes;
		lsm_bloom_build(p, fbytes, b->bits_per_key,
						(const uint64_t *) b->hashes.data, b->entries);
		rc = commit_aligned(b, fbytes, e);
		if (rc != LSM_OK)
			return rc;
	}

	/* value filter and block locator, if any row had an indexed value */
	if (nvalues > 0)
	{
		uint32_t	nlines = lsm_vfilter_lines(b->vp.bits);
		size_t		lbytes = lsm_locator_size(nvalues, (uint32_t) b->index.entries);

		vsize = (uint32_t) (b->vp.bits / 8 + LSM_BLOOM_TRAILER);
		if ((p = aligned_block(b, vsize, &voff)) == NULL)
			return LSM_NOMEM_ERR(e);
		memcpy(p, b->vlines, b->vp.bits / 8);
		lsm_bloom_trailer(p + b->vp.bits / 8, 'V', b->vp.hashes, nlines);
		rc = commit_aligned(b, vsize, e);
		if (rc != LSM_OK)
			return rc;

		lsize = (uint32_t) lbytes;
		if ((p = aligned_block(b, lbytes, &loff)) == NULL)
			return LSM_NOMEM_ERR(e);
		lsm_locator_build(p, lbytes, (uint32_t) b->index.entries,
						  (const uint64_t *) b->vhashes.data,
						  (const uint32_t *) b->vblocks.data, nvalues);
		rc = commit_aligned(b, lbytes, e);
		if (rc != LSM_OK)
			return rc;
	}

	if (lsm_block_finish(&b->index) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	rc = emit_block(b, b->index.buf.data, b->index.buf.len, &ioff, &isize, e);
	if (rc != LSM_OK)
		return rc;

	if (lsm_buf_append_varint(&props, b->entries) != LSM_OK ||
		lsm_buf_append_varint(&props, b->deletions) != LSM_OK ||
		lsm_buf_append_varint(&props, b->entries ? b->min_seq : 0) != LSM_OK ||
		lsm_buf_append_varint(&props, b->max_seq) != LSM_OK ||
		lsm_buf_append_varint(&props, b->data_end) != LSM_OK ||
		lsm_buf_append_varint(&props, (uint64_t) b->bits_per_key) != LSM_OK ||
		lsm_buf_append_varint(&props, b->smallest.len) != LSM_OK ||
		lsm_buf_append(&props, b->smallest.data, b->smallest.len) != LSM_OK ||
		lsm_buf_append_varint(&props, b->last_key.len) != LSM_OK ||
		lsm_buf_append(&props, b->last_key.data, b->last_key.len) != LSM_OK ||
		lsm_buf_append_varint(&props, nvalues) != LSM_OK ||
		lsm_buf_append_varint(&props, loff) != LSM_OK ||
		lsm_buf_append_varint(&props, lsize) != LSM_OK ||
		lsm_buf_append_varint(&props, b->vp.unindexed) != LSM_OK)
	{
		lsm_buf_free(&props);
		return LSM_NOMEM_ERR(e);
	}
	rc = emit_block(b, props.data, props.len, &poff, &psize, e);
	lsm_buf_free(&props);
	if (rc != LSM_OK)
		return rc;

	memset(footer, 0, sizeof(footer));
	put_handle(footer, ioff, isize);
	put_handle(footer + 12, foff, fsize);
	put_handle(footer + 24, voff, vsize);
	put_handle(footer + 36, poff, psize);
	lsm_put_u32(footer + 48, LSM_SST_FORMAT);
	lsm_put_u32(footer + 52, lsm_checksum(footer, 52));
	lsm_put_u64(footer + 56, LSM_SST_MAGIC);
	if (lsm_buf_append(&b->out, footer, sizeof(footer)) != LSM_OK)
		return LSM_NOMEM_ERR(e);
	rc = drain(b, true, e);
	if (rc != LSM_OK)
		return rc;
	/* invariant (1): the table is durable before any manifest names it */
	if (b->defer_sync)
		lsm_env_start_writeback(b->fd);
	else if ((rc = lsm_env_fsync(b->fd, b->name, e)) != LSM_OK)
		return rc;

	memset(meta, 0, sizeof(*meta));
	meta->number = b->number;
	meta->size = b->file_off;
	meta->entries = b->entries;
	meta->deletions = b->deletions;
	meta->min_seq = b->entries ? b->min_seq : 0;
	meta->max_seq = b->max_seq;
	meta->filter_bytes = fsize;
	meta->value_filter_bytes = vsize + lsize;
	meta->smallest = lsm_memdup(b->smallest.data, b->smallest.len);
	meta->smallest_len = b->smallest.len;
	meta->largest = lsm_memdup(b->last_key.data, b->last_key.len);
	meta->largest_len = b->last_key.len;
	if (meta->smallest == NULL || meta->largest == NULL)
	{
		lsm_table_meta_free(meta);
		return LSM_NOMEM_ERR(e);
	}
	return LSM_OK;
}

int
lsm_table_builder_finish(lsm_table_builder *b, lsm_table_meta *meta,
						 lsm_err *e)
{
	int			rc;

	if (b->entries == 0)
	{
		lsm_table_builder_abandon(b);
		return lsm_err_set(e, LSM_INVALID, "a table needs at least one entry");
	}
	rc = finish(b, meta, e);

	if (rc != LSM_OK)
	{
		lsm_table_builder_abandon(b);
		return rc;
	}
	lsm_env_close(b->fd);
	builder_free(b);
	return LSM_OK;
}

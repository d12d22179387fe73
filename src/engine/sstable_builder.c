/*
 * sstable_builder.c
 *		Writes an SSTable in one pass over sorted entries.  See sstable.h for
 *		the layout.
 *
 * Blocks are appended to an output buffer that is written to the file in
 * 256 KiB pieces.  Key hashes are collected as entries arrive and the key
 * filter is built from them at the end, so no second pass over the keys is
 * needed.  Properties: [entries][deletions][min_seq][max_seq][data_bytes]
 * [bits_per_key][smallest len + bytes][largest len + bytes], all varints.
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

#define OUT_CHUNK (256 * 1024)

struct lsm_table_builder
{
	char	   *path;
	char		name[32];
	int			fd;
	uint64_t	number;
	int			block_bytes;
	int			bits_per_key;
	uint64_t	file_off;		/* bytes already written to the file */
	lsm_buf		out;			/* buffered output */
	lsm_block_builder data;
	lsm_block_builder index;
	lsm_buf		tmp;
	lsm_buf		hashes;			/* uint64 key hashes */
	lsm_buf		smallest;
	lsm_buf		last_key;
	uint64_t	entries;
	uint64_t	deletions;
	uint64_t	min_seq;
	uint64_t	max_seq;
};

void
lsm_table_filename(uint64_t number, char *buf, size_t n)
{
	snprintf(buf, n, "%06llu.sst", (unsigned long long) number);
}

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
	lsm_table_filename(number, b->name, sizeof(b->name));
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
lsm_table_builder_add(lsm_table_builder *b, const void *key, size_t klen,
					  uint64_t seq, int del, const void *val, size_t vlen,
					  lsm_err *e)
{
	uint64_t	h = lsm_key_hash(key, klen);
	int			rc;

	LSM_ASSERT(b->entries == 0 ||
			   lsm_key_cmp(b->last_key.data, b->last_key.len, key, klen) < 0);
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

static int
finish(lsm_table_builder *b, lsm_table_meta *meta, lsm_err *e)
{
	uint8_t		footer[LSM_SST_FOOTER];
	uint64_t	foff = 0,
				ioff,
				poff;
	uint32_t	fsize = 0,
				isize,
				psize;
	lsm_buf		props = {0};
	int			rc;

	rc = flush_data_block(b, e);
	if (rc != LSM_OK)
		return rc;

	/* key filter, its lines on a 64-byte boundary of the file */
	if (b->bits_per_key > 0 && b->entries > 0)
	{
		size_t		n = b->entries;
		size_t		fbytes = lsm_bloom_size(n, b->bits_per_key);
		size_t		pad = (64 - (b->file_off + b->out.len) % 64) % 64;

		if (lsm_buf_reserve(&b->out, pad + fbytes + 4) != LSM_OK)
			return LSM_NOMEM_ERR(e);
		memset(b->out.data + b->out.len, 0, pad);
		b->out.len += pad;
		foff = b->file_off + b->out.len;
		fsize = (uint32_t) fbytes;
		lsm_bloom_build(b->out.data + b->out.len, fbytes, b->bits_per_key,
						(const uint64_t *) b->hashes.data, n);
		lsm_put_u32(b->out.data + b->out.len + fbytes,
					lsm_checksum(b->out.data + b->out.len, fbytes));
		b->out.len += fbytes + 4;
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
		lsm_buf_append_varint(&props, foff ? foff : ioff) != LSM_OK ||
		lsm_buf_append_varint(&props, (uint64_t) b->bits_per_key) != LSM_OK ||
		lsm_buf_append_varint(&props, b->smallest.len) != LSM_OK ||
		lsm_buf_append(&props, b->smallest.data, b->smallest.len) != LSM_OK ||
		lsm_buf_append_varint(&props, b->last_key.len) != LSM_OK ||
		lsm_buf_append(&props, b->last_key.data, b->last_key.len) != LSM_OK)
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
	put_handle(footer + 24, 0, 0);	/* value filter: not in format 1 */
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
	rc = lsm_env_fsync(b->fd, b->name, e);
	if (rc != LSM_OK)
		return rc;

	memset(meta, 0, sizeof(*meta));
	meta->number = b->number;
	meta->size = b->file_off;
	meta->entries = b->entries;
	meta->deletions = b->deletions;
	meta->min_seq = b->entries ? b->min_seq : 0;
	meta->max_seq = b->max_seq;
	meta->filter_bytes = fsize;
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

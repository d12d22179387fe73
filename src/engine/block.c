/*
 * block.c
 *		Block builder and cursor.  See block.h for the format.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stddef.h>
#include <stdlib.h>

#include "block.h"

void
lsm_block_builder_init(lsm_block_builder *b, int restart_interval)
{
	memset(b, 0, sizeof(*b));
	b->interval = restart_interval;
}

void
lsm_block_builder_reset(lsm_block_builder *b)
{
	b->buf.len = 0;
	b->restarts.len = 0;
	b->last_key.len = 0;
	b->counter = 0;
	b->entries = 0;
}

void
lsm_block_builder_free(lsm_block_builder *b)
{
	lsm_buf_free(&b->buf);
	lsm_buf_free(&b->restarts);
	lsm_buf_free(&b->last_key);
}

int
lsm_block_add(lsm_block_builder *b, const void *key, size_t klen,
			  const void *val, size_t vlen)
{
	size_t		shared = 0;
	uint8_t		off[4];

	if (b->counter < b->interval && b->entries > 0)
	{
		size_t		n = klen < b->last_key.len ? klen : b->last_key.len;

		while (shared < n && b->last_key.data[shared] == ((const uint8_t *) key)[shared])
			shared++;
	}
	else
	{
		lsm_put_u32(off, (uint32_t) b->buf.len);
		if (lsm_buf_append(&b->restarts, off, 4) != LSM_OK)
			return LSM_NOMEM;
		b->counter = 0;
	}
	if (lsm_buf_reserve(&b->buf, 30 + klen - shared + vlen) != LSM_OK)
		return LSM_NOMEM;
	b->buf.len += lsm_put_varint(b->buf.data + b->buf.len, shared);
	b->buf.len += lsm_put_varint(b->buf.data + b->buf.len, klen - shared);
	b->buf.len += lsm_put_varint(b->buf.data + b->buf.len, vlen);
	memcpy(b->buf.data + b->buf.len, (const uint8_t *) key + shared, klen - shared);
	b->buf.len += klen - shared;
	if (vlen)
		memcpy(b->buf.data + b->buf.len, val, vlen);
	b->buf.len += vlen;
	b->last_key.len = 0;
	if (lsm_buf_append(&b->last_key, key, klen) != LSM_OK)
		return LSM_NOMEM;
	b->counter++;
	b->entries++;
	return LSM_OK;
}

size_t
lsm_block_estimate(const lsm_block_builder *b)
{
	return b->buf.len + b->restarts.len + 4;
}

int
lsm_block_finish(lsm_block_builder *b)
{
	uint8_t		n[4];

	if (lsm_buf_append(&b->buf, b->restarts.data, b->restarts.len) != LSM_OK)
		return LSM_NOMEM;
	lsm_put_u32(n, (uint32_t) (b->restarts.len / 4));
	return lsm_buf_append(&b->buf, n, 4);
}

/* ---------- cursor ---------- */

bool
lsm_block_iter_init(lsm_block_iter *it, const uint8_t *p, size_t n)
{
	uint32_t	nr;

	memset(it, 0, offsetof(lsm_block_iter, inline_key));
	it->key.data = it->inline_key;
	it->key.cap = sizeof(it->inline_key);
	if (n < 4)
		return false;
	nr = lsm_get_u32(p + n - 4);
	if (nr == 0 || (uint64_t) nr * 4 + 4 > n)
		return false;
	it->data = p;
	it->data_len = n - 4 - (size_t) nr * 4;
	it->restarts = p + it->data_len;
	it->num_restarts = nr;
	return true;
}

void
lsm_block_iter_free(lsm_block_iter *it)
{
	if (it->key.data != it->inline_key)
		lsm_buf_free(&it->key);
	it->key.data = it->inline_key;
	it->key.cap = sizeof(it->inline_key);
	it->key.len = 0;
}

/* Makes room for a key of n bytes; false when out of memory. */
static bool
key_reserve(lsm_block_iter *it, size_t n)
{
	uint8_t    *p;

	if (n <= it->key.cap)
		return true;
	if (it->key.data == it->inline_key)
	{
		p = malloc(n);
		if (p == NULL)
			return false;
		memcpy(p, it->inline_key, it->key.len);
	}
	else if ((p = realloc(it->key.data, n)) == NULL)
		return false;
	it->key.data = p;
	it->key.cap = n;
	return true;
}

static inline uint32_t
restart_off(const lsm_block_iter *it, uint32_t i)
{
	return lsm_get_u32(it->restarts + (size_t) i * 4);
}

/* Decodes the entry at it->next_off into the cursor. */
static void
decode_next(lsm_block_iter *it)
{
	const uint8_t *p = it->data + it->next_off;
	const uint8_t *end = it->data + it->data_len;
	uint64_t	shared,
				unshared,
				vlen;

	if (it->next_off >= it->data_len)
	{
		it->valid = false;
		return;
	}
	if ((p = lsm_get_varint(p, end, &shared)) == NULL ||
		(p = lsm_get_varint(p, end, &unshared)) == NULL ||
		(p = lsm_get_varint(p, end, &vlen)) == NULL ||
		shared > it->key.len || unshared > (uint64_t) (end - p) ||
		vlen > (uint64_t) (end - p) - unshared)
	{
		it->valid = false;
		it->corrupt = true;
		return;
	}
	if (!key_reserve(it, shared + unshared))
	{
		it->valid = false;
		it->corrupt = true;		/* reported as corruption: rare enough */
		return;
	}
	memcpy(it->key.data + shared, p, unshared);
	it->key.len = shared + unshared;
	it->off = it->next_off;
	it->val = p + unshared;
	it->vlen = vlen;
	it->next_off = (size_t) (it->val + vlen - it->data);
	while (it->restart_idx + 1 < it->num_restarts &&
		   restart_off(it, it->restart_idx + 1) <= it->off)
		it->restart_idx++;
	it->valid = true;
}

void
lsm_block_iter_seek_restart(lsm_block_iter *it, uint32_t i)
{
	uint32_t	off = restart_off(it, i);

	if (off >= it->data_len)
	{
		it->valid = false;
		it->corrupt = true;
		return;
	}
	it->key.len = 0;
	it->restart_idx = i;
	it->next_off = off;
	decode_next(it);
}

void
lsm_block_iter_first(lsm_block_iter *it)
{
	lsm_block_iter_seek_restart(it, 0);
}

void
lsm_block_iter_next_slow(lsm_block_iter *it)
{
	decode_next(it);
}

/* From the current entry, decodes forward while the next one starts before end. */
static void
decode_until(lsm_block_iter *it, size_t end)
{
	while (it->valid && it->next_off < end)
		decode_next(it);
}

void
lsm_block_iter_last(lsm_block_iter *it)
{
	lsm_block_iter_seek_restart(it, it->num_restarts - 1);
	decode_until(it, it->data_len);
}

void
lsm_block_back_free(lsm_block_back *back)
{
	lsm_buf_free(&back->keys);
	back->data = NULL;
	back->n = 0;
}

/* Adds the cursor's entry to back; disables back if it is full. */
static void
back_push(lsm_block_back *back, const lsm_block_iter *it)
{
	int			i = back->n;

	if (i == LSM_BLOCK_BACK_MAX ||
		lsm_buf_append(&back->keys, it->key.data, it->key.len) != LSM_OK)
	{
		back->data = NULL;
		return;
	}
	back->e[i].off = it->off;
	back->e[i].next_off = it->next_off;
	back->e[i].kpos = back->keys.len - it->key.len;
	back->e[i].klen = it->key.len;
	back->e[i].val = it->val;
	back->e[i].vlen = it->vlen;
	back->n++;
}

/* Positions the cursor on back's last entry, taking it out. */
static void
back_pop(lsm_block_back *back, lsm_block_iter *it)
{
	int			i = --back->n;

	if (!key_reserve(it, back->e[i].klen))
	{
		it->valid = false;
		it->corrupt = true;		/* as decode_next reports it */
		return;
	}
	memcpy(it->key.data, back->keys.data + back->e[i].kpos, back->e[i].klen);
	it->key.len = back->e[i].klen;
	it->off = back->e[i].off;
	it->next_off = back->e[i].next_off;
	it->val = back->e[i].val;
	it->vlen = back->e[i].vlen;
	it->restart_idx = back->restart;
	it->valid = true;
}

void
lsm_block_iter_prev(lsm_block_iter *it, lsm_block_back *back)
{
	size_t		cur = it->off;
	uint32_t	r = it->restart_idx;

	if (back != NULL && back->data == it->data && back->n > 0 &&
		back->e[back->n - 1].next_off == cur)
		return back_pop(back, it);

	/* the restart block holding the entry before cur */
	while (restart_off(it, r) >= cur)
	{
		if (r == 0)
		{
			it->valid = false;
			return;
		}
		r--;
	}
	lsm_block_iter_seek_restart(it, r);
	if (back != NULL)
	{
		back->data = it->data;
		back->restart = r;
		back->n = 0;
		back->keys.len = 0;
	}
	/* on to the entry before cur, keeping the ones passed on the way */
	while (it->valid && it->next_off < cur)
	{
		if (back != NULL && back->data != NULL)
			back_push(back, it);
		decode_next(it);
	}
}

void
lsm_block_iter_seek_offset(lsm_block_iter *it, size_t off)
{
	if (!it->valid || it->off > off ||
		(it->restart_idx + 1 < it->num_restarts &&
		 restart_off(it, it->restart_idx + 1) <= off))
	{
		uint32_t	lo = 0,
					hi = it->num_restarts - 1;

		while (lo < hi)
		{
			uint32_t	mid = lo + (hi - lo + 1) / 2;

			if (restart_off(it, mid) <= off)
				lo = mid;
			else
				hi = mid - 1;
		}
		lsm_block_iter_seek_restart(it, lo);
	}
	while (it->valid && it->next_off <= off)
		decode_next(it);
}

void
lsm_block_iter_seek(lsm_block_iter *it, const uint8_t *target, size_t tlen)
{
	uint32_t	lo = 0,
				hi = it->num_restarts - 1;

	/* find the last restart whose key is < target, comparing in place */
	while (lo < hi)
	{
		uint32_t	mid = (lo + hi + 1) / 2;
		uint32_t	off = restart_off(it, mid);
		const uint8_t *end = it->data + it->data_len;
		const uint8_t *p = it->data + off;
		uint64_t	shared,
					unshared,
					vlen;

		if (off >= it->data_len ||
			(p = lsm_get_varint(p, end, &shared)) == NULL ||
			(p = lsm_get_varint(p, end, &unshared)) == NULL ||
			(p = lsm_get_varint(p, end, &vlen)) == NULL ||
			shared != 0 || unshared > (uint64_t) (end - p))
		{
			it->valid = false;
			it->corrupt = true;
			return;
		}
		if (lsm_key_cmp(p, unshared, target, tlen) < 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	lsm_block_iter_seek_restart(it, lo);
	while (it->valid &&
		   lsm_key_cmp(it->key.data, it->key.len, target, tlen) < 0)
		decode_next(it);
}

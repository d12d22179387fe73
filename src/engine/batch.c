/*
 * batch.c
 *		Write batches.  A batch is kept in its WAL record form, so lsm_write
 *		fills in the sequence number and appends it with one write:
 *
 *		[WAL record header: 9 bytes][first sequence u64][count u32] entries
 *
 * with entries as wal.h describes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "db.h"

#define BATCH_PREFIX (LSM_WAL_HEADER + LSM_BATCH_HEADER)

lsm_batch *
lsm_batch_new(void)
{
	lsm_batch  *b = calloc(1, sizeof(lsm_batch));

	if (b == NULL)
		return NULL;
	if (lsm_buf_reserve(&b->rep, BATCH_PREFIX) != LSM_OK)
	{
		free(b);
		return NULL;
	}
	memset(b->rep.data, 0, BATCH_PREFIX);
	b->rep.len = BATCH_PREFIX;
	b->rtype = LSM_WAL_BATCH;
	return b;
}

void
lsm_batch_free(lsm_batch *b)
{
	if (b == NULL)
		return;
	lsm_buf_free(&b->rep);
	free(b->conds);
	free(b);
}

void
lsm_batch_clear(lsm_batch *b)
{
	b->rep.len = BATCH_PREFIX;
	b->count = 0;
	b->user_bytes = 0;
	b->located = 0;
	b->nconds = 0;
	b->require = 0;
	b->since = 0;
}

size_t
lsm_batch_count(const lsm_batch *b)
{
	return b->count;
}

size_t
lsm_batch_bytes(const lsm_batch *b)
{
	return b->rep.len;
}

static int
batch_add(lsm_batch *b, int kind, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	size_t		save;
	uint8_t		k = (uint8_t) kind;

	if (b == NULL || (key == NULL && klen > 0) || (val == NULL && vlen > 0))
		return LSM_INVALID;
	save = b->rep.len;
	if (klen == 0 || klen > LSM_MAX_KEY_LEN || vlen > LSM_MAX_VALUE_LEN)
		return LSM_INVALID;
	if (b->count == UINT32_MAX)
		return LSM_INVALID;
	if (lsm_buf_append(&b->rep, &k, 1) != LSM_OK ||
		lsm_buf_append_varint(&b->rep, klen) != LSM_OK ||
		lsm_buf_append(&b->rep, key, klen) != LSM_OK ||
		(kind == LSM_KIND_PUT &&
		 (lsm_buf_append_varint(&b->rep, vlen) != LSM_OK ||
		  lsm_buf_append(&b->rep, val, vlen) != LSM_OK)))
	{
		b->rep.len = save;
		return LSM_NOMEM;
	}
	b->last_off = save;
	b->count++;
	b->user_bytes += klen + vlen;
	return LSM_OK;
}

int
lsm_batch_put(lsm_batch *b, const void *key, size_t klen, const void *val,
			  size_t vlen)
{
	return batch_add(b, LSM_KIND_PUT, key, klen, val, vlen);
}

int
lsm_batch_delete(lsm_batch *b, const void *key, size_t klen)
{
	return batch_add(b, LSM_KIND_DEL, key, klen, NULL, 0);
}

int
lsm_batch_require(lsm_batch *b, int cond, uint64_t seq, uint64_t hash)
{
	lsm_batch_cond *c;

	if (b == NULL || b->count == 0 || b->rtype != LSM_WAL_BATCH ||
		(cond != LSM_IF_ABSENT && cond != LSM_IF_ABSENT_SKIP &&
		 cond != LSM_IF_VALUE))
		return LSM_INVALID;
	/* a second condition on the same entry replaces the first */
	if (b->nconds > 0 && b->conds[b->nconds - 1].entry == b->count - 1)
		c = &b->conds[b->nconds - 1];
	else
	{
		if (b->nconds == b->conds_cap)
		{
			uint32_t	cap = b->conds_cap ? b->conds_cap * 2 : 8;
			lsm_batch_cond *n = realloc(b->conds, cap * sizeof(*n));

			if (n == NULL)
				return LSM_NOMEM;
			b->conds = n;
			b->conds_cap = cap;
		}
		c = &b->conds[b->nconds++];
	}
	c->entry = b->count - 1;
	c->off = b->last_off;
	c->cond = cond;
	c->drop = false;
	c->seq = seq;
	c->hash = hash;
	return LSM_OK;
}

void
lsm_batch_require_all(lsm_batch *b, int flags, uint64_t since)
{
	if (b == NULL)
		return;
	b->require = flags & LSM_IF_NOT_PREPARED;
	b->since = since;
}

int
lsm_batch_conflict(const lsm_batch *b, lsm_conflict *c)
{
	if (b == NULL || c == NULL || b->conflict.key == NULL)
		return LSM_NOTFOUND;
	*c = b->conflict;
	return LSM_OK;
}

void
lsm_batch_entry(const lsm_batch *b, size_t off, const uint8_t **key,
				size_t *klen, size_t *vlen, size_t *next)
{
	const uint8_t *p = b->rep.data + off + 1;	/* past the kind */
	const uint8_t *end = b->rep.data + b->rep.len;
	uint64_t	n = 0,
				v = 0;

	p = lsm_get_varint(p, end, &n);
	*key = p;
	*klen = (size_t) n;
	p += n;
	if (b->rep.data[off] == LSM_KIND_PUT)
	{
		p = lsm_get_varint(p, end, &v);
		p += v;
	}
	*vlen = (size_t) v;
	*next = (size_t) (p - b->rep.data);
}

void
lsm_batch_drop(lsm_batch *b)
{
	const uint8_t *key;
	size_t		klen,
				vlen,
				next,
				off,
				moved = 0;		/* bytes removed before the entry at hand */
	uint32_t	i,
				kept = 0,
				dropped = 0;

	for (i = 0; i < b->nconds; i++)
	{
		lsm_batch_cond *c = &b->conds[i];

		off = c->off - moved;
		if (!c->drop)
		{
			c->off = off;
			c->entry -= dropped;
			b->conds[kept++] = *c;
			continue;
		}
		lsm_batch_entry(b, off, &key, &klen, &vlen, &next);
		memmove(b->rep.data + off, b->rep.data + next, b->rep.len - next);
		b->rep.len -= next - off;
		b->user_bytes -= klen + vlen;
		moved += next - off;
		dropped++;
		b->count--;
	}
	b->nconds = kept;
	b->located = 0;				/* hints are by entry */
	/* the last entry's offset, for lsm_batch_require */
	for (off = BATCH_PREFIX, i = 0; i < b->count; i++, off = next)
	{
		b->last_off = off;
		lsm_batch_entry(b, off, &key, &klen, &vlen, &next);
	}
}

/*
 * Decodes the entry at *pp (before end) into its kind, key and value, and
 * moves *pp past it.  false if it is malformed: an unknown kind, a length
 * that runs past the end, an empty key or one longer than LSM_MAX_KEY_LEN,
 * a value longer than LSM_MAX_VALUE_LEN.  Every entry takes at least three
 * bytes, so a payload of n bytes holds at most n / 3 of them.
 */
static bool
next_entry(const uint8_t **pp, const uint8_t *end, int *kind,
		   const uint8_t **key, uint64_t *klen, const uint8_t **val,
		   uint64_t *vlen)
{
	const uint8_t *p = *pp;

	*val = NULL;
	*vlen = 0;
	if (p >= end)
		return false;
	*kind = *p++;
	if ((*kind != LSM_KIND_PUT && *kind != LSM_KIND_DEL) ||
		(p = lsm_get_varint(p, end, klen)) == NULL ||
		*klen == 0 || *klen > LSM_MAX_KEY_LEN || *klen > (uint64_t) (end - p))
		return false;
	*key = p;
	p += *klen;
	if (*kind == LSM_KIND_PUT)
	{
		if ((p = lsm_get_varint(p, end, vlen)) == NULL ||
			*vlen > LSM_MAX_VALUE_LEN || *vlen > (uint64_t) (end - p))
			return false;
		*val = p;
		p += *vlen;
	}
	*pp = p;
	return true;
}

/*
 * Checks a batch header: at least one entry, sequences first .. first +
 * count - 1 all within 1 .. LSM_MAX_SEQUENCE, and no more entries than n
 * bytes can hold.
 */
static bool
header_ok(const uint8_t *payload, size_t n)
{
	uint64_t	seq = lsm_get_u64(payload);
	uint32_t	count = lsm_get_u32(payload + 8);

	return count > 0 && count <= (n - LSM_BATCH_HEADER) / 3 &&
		seq > 0 && seq <= LSM_MAX_SEQUENCE &&
		count - 1 <= LSM_MAX_SEQUENCE - seq;
}

int
lsm_batch_check(const uint8_t *payload, size_t n, lsm_err *e)
{
	const uint8_t *p = payload + LSM_BATCH_HEADER;
	const uint8_t *end = payload + n;
	uint32_t	count,
				i;

	if (n < LSM_BATCH_HEADER)
		return LSM_CORRUPT(e, "batch of %zu bytes is too short", n);
	if (!header_ok(payload, n))
		goto bad;
	count = lsm_get_u32(payload + 8);
	for (i = 0; i < count; i++)
	{
		const uint8_t *key,
				   *val;
		uint64_t	klen,
					vlen;
		int			kind;

		if (!next_entry(&p, end, &kind, &key, &klen, &val, &vlen))
			goto bad;
	}
	if (p != end)
		goto bad;
	return LSM_OK;
bad:
	return LSM_CORRUPT(e, "malformed batch with first sequence %llu",
					   (unsigned long long) lsm_get_u64(payload));
}

int
lsm_batch_iterate(const uint8_t *payload, size_t n, lsm_batch_fn fn, void *arg,
				  lsm_err *e)
{
	const uint8_t *p = payload + LSM_BATCH_HEADER;
	const uint8_t *end = payload + n;
	uint64_t	seq;
	uint32_t	count,
				i;
	int			rc;

	if (n < LSM_BATCH_HEADER)
		return LSM_CORRUPT(e, "batch of %zu bytes is too short", n);
	if (!header_ok(payload, n))
		goto bad;
	seq = lsm_get_u64(payload);
	count = lsm_get_u32(payload + 8);
	for (i = 0; i < count; i++)
	{
		const uint8_t *key,
				   *val;
		uint64_t	klen,
					vlen;
		int			kind;

		if (!next_entry(&p, end, &kind, &key, &klen, &val, &vlen))
			goto bad;
		rc = fn(arg, seq + i, kind, key, klen, val, vlen);
		if (rc != LSM_OK)
			return rc == LSM_NOMEM ? LSM_NOMEM_ERR(e) : rc;
	}
	if (p != end)
		goto bad;
	return LSM_OK;
bad:
	return LSM_CORRUPT(e, "malformed batch with first sequence %llu",
					   (unsigned long long) lsm_get_u64(payload));
}

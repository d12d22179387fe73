/*
 * memtable.c
 *		Skip list (p = 1/4, at most 12 levels) with arena allocation.
 *
 * A node is one allocation from the arena:
 *		[tag = seq << 8 | kind][klen][vlen][height][next pointers][key][value]
 * The arena hands out memory from 64 KiB chunks (larger entries get a chunk
 * of their own) and frees everything at once when the last reference goes.
 * The last node of every level is kept, so that a key past the last one (an
 * ascending load, or a lookup of a key it has not reached yet) needs one
 * comparison instead of a search.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "memtable.h"
#include "vfilter.h"

#define MAX_HEIGHT 12
#define CHUNK_SIZE (64 * 1024)

typedef struct mt_node
{
	uint64_t	tag;
	uint32_t	klen;
	uint32_t	vlen;
	int			height;
	struct mt_node *next[];		/* height pointers, then key, then value */
} mt_node;

typedef struct arena_chunk
{
	struct arena_chunk *prev;
	size_t		size;
	size_t		used;
	uint8_t		data[];
} arena_chunk;

struct lsm_memtable
{
	int			refs;
	arena_chunk *chunks;
	size_t		arena_bytes;	/* allocated from malloc */
	size_t		used_bytes;		/* handed out to nodes */
	size_t		entries;
	uint32_t	rnd;
	int			height;
	mt_node    *head;
	mt_node    *tail[MAX_HEIGHT];	/* last node of each level, or head */
	/* value filter over the rows' indexed fields (NULL: none) */
	uint8_t    *vlines;
	uint32_t	vbits;
	int			vk;
	uint64_t	unindexed;
	lsm_buf		vhashes;		/* scratch */
};

static void *
arena_alloc(lsm_memtable *mt, size_t n)
{
	arena_chunk *c = mt->chunks;
	void	   *p;

	n = (n + 7) & ~(size_t) 7;
	if (c == NULL || c->size - c->used < n)
	{
		size_t		size = n > CHUNK_SIZE / 4 ? n : CHUNK_SIZE;

		c = malloc(sizeof(arena_chunk) + size);
		if (c == NULL)
			return NULL;
		c->size = size;
		c->used = 0;
		if (size == n && mt->chunks != NULL)
		{
			/* a big entry: keep filling the current chunk afterwards */
			c->prev = mt->chunks->prev;
			mt->chunks->prev = c;
			c->used = n;
			mt->arena_bytes += sizeof(arena_chunk) + size;
			mt->used_bytes += n;
			return c->data;
		}
		c->prev = mt->chunks;
		mt->chunks = c;
		mt->arena_bytes += sizeof(arena_chunk) + size;
	}
	p = c->data + c->used;
	c->used += n;
	mt->used_bytes += n;
	return p;
}

/* The search tag that sorts before every version visible at snap. */
static inline uint64_t
snap_tag(uint64_t snap)
{
	if (snap > LSM_MAX_SEQUENCE)
		snap = LSM_MAX_SEQUENCE;
	return snap << 8 | 0xff;
}

static inline const uint8_t *
node_key(const mt_node *n)
{
	return (const uint8_t *) &n->next[n->height];
}

static inline const uint8_t *
node_val(const mt_node *n)
{
	return node_key(n) + n->klen;
}

/* Orders by key ascending, then sequence (tag) descending. */
static inline int
node_cmp(const mt_node *n, const void *key, size_t klen, uint64_t tag)
{
	int			c = lsm_key_cmp(node_key(n), n->klen, key, klen);

	if (c != 0)
		return c;
	return (n->tag < tag) - (n->tag > tag);
}

lsm_memtable *
lsm_memtable_new(void)
{
	lsm_memtable *mt = calloc(1, sizeof(lsm_memtable));
	int			i;

	if (mt == NULL)
		return NULL;
	mt->refs = 1;
	mt->rnd = 0xdeadbeef;
	mt->height = 1;
	mt->head = arena_alloc(mt, sizeof(mt_node) + MAX_HEIGHT * sizeof(mt_node *));
	if (mt->head == NULL)
	{
		free(mt);
		return NULL;
	}
	memset(mt->head, 0, sizeof(mt_node) + MAX_HEIGHT * sizeof(mt_node *));
	mt->head->height = MAX_HEIGHT;
	for (i = 0; i < MAX_HEIGHT; i++)
		mt->tail[i] = mt->head;
	return mt;
}

void
lsm_memtable_ref(lsm_memtable *mt)
{
	mt->refs++;
}

void
lsm_memtable_unref(lsm_memtable *mt)
{
	arena_chunk *c;

	if (mt == NULL || --mt->refs > 0)
		return;
	c = mt->chunks;
	while (c)
	{
		arena_chunk *p = c->prev;

		free(c);
		c = p;
	}
	free(mt->vlines);
	lsm_buf_free(&mt->vhashes);
	free(mt);
}

static int
random_height(lsm_memtable *mt)
{
	int			h = 1;

	while (h < MAX_HEIGHT)
	{
		/* xorshift32 */
		mt->rnd ^= mt->rnd << 13;
		mt->rnd ^= mt->rnd >> 17;
		mt->rnd ^= mt->rnd << 5;
		if ((mt->rnd & 3) != 0)
			break;
		h++;
	}
	return h;
}

/*
 * Finds the first node >= (key, tag); fills prev[] with the last node before
 * it on every level when prev is not NULL.
 */
static mt_node *
find_ge(const lsm_memtable *mt, const void *key, size_t klen, uint64_t tag,
		mt_node **prev)
{
	mt_node    *x = mt->head;
	int			level = mt->height - 1;

	if (mt->tail[0] != mt->head && node_cmp(mt->tail[0], key, klen, tag) < 0)
	{
		/* past the last node */
		if (prev)
			memcpy(prev, mt->tail, sizeof(mt_node *) * (size_t) mt->height);
		return NULL;
	}
	for (;;)
	{
		mt_node    *n = x->next[level];

		if (n != NULL && node_cmp(n, key, klen, tag) < 0)
			x = n;
		else
		{
			if (prev)
				prev[level] = x;
			if (level == 0)
				return n;
			level--;
		}
	}
}

/* Finds the last node < (key, tag), or NULL if there is none. */
static mt_node *
find_lt(const lsm_memtable *mt, const void *key, size_t klen, uint64_t tag)
{
	mt_node    *x = mt->head;
	int			level = mt->height - 1;

	for (;;)
	{
		mt_node    *n = x->next[level];

		if (n != NULL && node_cmp(n, key, klen, tag) < 0)
			x = n;
		else if (level == 0)
			return x == mt->head ? NULL : x;
		else
			level--;
	}
}

int
lsm_memtable_index_values(lsm_memtable *mt, uint32_t m, int k,
						  uint64_t unindexed)
{
	LSM_ASSERT(mt->entries == 0);
	/* whole 512-bit lines only (the manifest reader and lsm_open see to it) */
	if (m % 512 != 0 || m > LSM_VFILTER_MAX_BITS ||
		k < 0 || k > LSM_VFILTER_MAX_HASHES)
		return LSM_INVALID;
	if (m == 0 || k == 0)
		return LSM_OK;
	mt->vlines = calloc((size_t) lsm_vfilter_lines(m), LSM_BLOOM_LINE);
	if (mt->vlines == NULL)
		return LSM_NOMEM;
	mt->vbits = m;
	mt->vk = k;
	mt->unindexed = unindexed;
	return LSM_OK;
}

bool
lsm_memtable_may_hold_value(const lsm_memtable *mt, uint64_t h)
{
	lsm_bloom	f;

	if (mt->vlines == NULL)
		return mt->entries > 0;
	f.lines = mt->vlines;
	f.num_lines = lsm_vfilter_lines(mt->vbits);
	f.k = mt->vk;
	return lsm_bloom_may_match(&f, h);
}

/* Sets the value hashes of a row in the memtable's value filter. */
static int
index_values(lsm_memtable *mt, const uint8_t *row, size_t rowlen)
{
	size_t		i;

	mt->vhashes.len = 0;
	if (lsm_value_hashes(row, rowlen, mt->unindexed, &mt->vhashes) != LSM_OK)
		return LSM_NOMEM;
	for (i = 0; i < mt->vhashes.len / sizeof(uint64_t); i++)
	{
		uint64_t	h;

		memcpy(&h, mt->vhashes.data + i * sizeof(uint64_t), sizeof(h));
		lsm_bloom_set(mt->vlines, lsm_vfilter_lines(mt->vbits), mt->vk, h);
	}
	return LSM_OK;
}

int
lsm_memtable_add(lsm_memtable *mt, uint64_t seq, int kind,
				 const void *key, size_t klen, const void *val, size_t vlen)
{
	mt_node    *prev[MAX_HEIGHT];
	mt_node    *n;
	uint64_t	tag = seq << 8 | (uint64_t) kind;
	int			h = random_height(mt);
	int			i;

	/* the filter first: a failure leaves the memtable unchanged */
	if (mt->vlines && kind == LSM_KIND_PUT && index_values(mt, val, vlen) != LSM_OK)
		return LSM_NOMEM;
	n = arena_alloc(mt, sizeof(mt_node) + h * sizeof(mt_node *) + klen + vlen);
	if (n == NULL)
		return LSM_NOMEM;
	n->tag = tag;
	n->klen = (uint32_t) klen;
	n->vlen = (uint32_t) vlen;
	n->height = h;
	memcpy((uint8_t *) node_key(n), key, klen);
	if (vlen)
		memcpy((uint8_t *) node_val(n), val, vlen);
	find_ge(mt, key, klen, tag, prev);
	if (h > mt->height)
	{
		for (i = mt->height; i < h; i++)
			prev[i] = mt->head;
		mt->height = h;
	}
	for (i = 0; i < h; i++)
	{
		n->next[i] = prev[i]->next[i];
		prev[i]->next[i] = n;
		if (n->next[i] == NULL)
			mt->tail[i] = n;
	}
	mt->entries++;
	return LSM_OK;
}

bool
lsm_memtable_get(const lsm_memtable *mt, const void *key, size_t klen,
				 uint64_t snap, int *kind, const uint8_t **val, size_t *vlen,
				 uint64_t *seq)
{
	mt_node    *n;

	if (mt->entries == 0)
		return false;
	/* the tag of (snap, highest kind) sorts before every visible version */
	n = find_ge(mt, key, klen, snap_tag(snap), NULL);
	if (n == NULL || lsm_key_cmp(node_key(n), n->klen, key, klen) != 0)
		return false;
	*kind = (int) (n->tag & 0xff);
	*val = node_val(n);
	*vlen = n->vlen;
	*seq = n->tag >> 8;
	return true;
}

size_t
lsm_memtable_bytes(const lsm_memtable *mt)
{
	return mt->used_bytes;
}

size_t
lsm_memtable_arena_bytes(const lsm_memtable *mt)
{
	return mt->arena_bytes;
}

size_t
lsm_memtable_entries(const lsm_memtable *mt)
{
	return mt->entries;
}

bool
lsm_memtable_check(const lsm_memtable *mt)
{
	int			l;

	for (l = 0; l < MAX_HEIGHT; l++)
	{
		mt_node    *x = mt->head;

		while (x->next[l] != NULL)
		{
			mt_node    *n = x->next[l];

			if (x != mt->head &&
				node_cmp(x, node_key(n), n->klen, n->tag) >= 0)
				return false;
			x = n;
		}
		if (mt->tail[l] != x)
			return false;
	}
	return true;
}

/* ---------- iterator ---------- */

typedef struct mt_iter
{
	lsm_iiter	base;
	lsm_memtable *mt;
	uint64_t	snap;
	mt_node    *node;
} mt_iter;

/* From n on, finds the first node visible at the snapshot and publishes it. */
static void
mt_iter_settle(mt_iter *it, mt_node *n)
{
	while (n != NULL && (n->tag >> 8) > it->snap)
		n = n->next[0];
	it->node = n;
	it->base.valid = n != NULL;
	if (n)
	{
		it->base.key = node_key(n);
		it->base.klen = n->klen;
		it->base.val = node_val(n);
		it->base.vlen = n->vlen;
		it->base.seq = n->tag >> 8;
		it->base.del = (n->tag & 0xff) == LSM_KIND_DEL;
	}
}

static void
mt_iter_seek(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	mt_iter    *it = (mt_iter *) base;

	if (key == NULL)
		mt_iter_settle(it, it->mt->head->next[0]);
	else
		mt_iter_settle(it, find_ge(it->mt, key, klen, snap_tag(it->snap), NULL));
}

static void
mt_iter_next(lsm_iiter *base)
{
	mt_iter    *it = (mt_iter *) base;
	mt_node    *n = it->node->next[0];

	/* skip older versions of the current key */
	while (n != NULL && n->klen == it->node->klen &&
		   memcmp(node_key(n), node_key(it->node), n->klen) == 0)
		n = n->next[0];
	mt_iter_settle(it, n);
}

/*
 * From n backwards, finds the last key with a version visible at the
 * snapshot and publishes its newest visible version.  Nodes have no back
 * links: each step back is a search from the head, O(log n), as LevelDB's.
 */
static void
mt_iter_settle_back(mt_iter *it, mt_node *n)
{
	while (n != NULL)
	{
		mt_node    *v = find_ge(it->mt, node_key(n), n->klen,
								snap_tag(it->snap), NULL);

		if (v != NULL && v->klen == n->klen &&
			memcmp(node_key(v), node_key(n), n->klen) == 0)
			return mt_iter_settle(it, v);
		/* every version of this key is newer than the snapshot */
		n = find_lt(it->mt, node_key(n), n->klen, UINT64_MAX);
	}
	mt_iter_settle(it, NULL);
}

static void
mt_iter_seek_back(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	mt_iter    *it = (mt_iter *) base;
	lsm_memtable *mt = it->mt;

	if (key == NULL)
		mt_iter_settle_back(it, mt->tail[0] != mt->head ? mt->tail[0] : NULL);
	else						/* tag 0 sorts after every version of key */
		mt_iter_settle_back(it, find_lt(mt, key, klen, 0));
}

static void
mt_iter_prev(lsm_iiter *base)
{
	mt_iter    *it = (mt_iter *) base;

	/* tag UINT64_MAX sorts before every version of the current key */
	mt_iter_settle_back(it, find_lt(it->mt, node_key(it->node), it->node->klen,
									UINT64_MAX));
}

static void
mt_iter_destroy(lsm_iiter *base)
{
	mt_iter    *it = (mt_iter *) base;

	lsm_memtable_unref(it->mt);
	free(it);
}

static const lsm_iiter_ops mt_iter_ops = {mt_iter_seek, mt_iter_next,
	mt_iter_seek_back, mt_iter_prev, mt_iter_destroy};

lsm_iiter *
lsm_memtable_iter(lsm_memtable *mt, uint64_t snap, lsm_err *err)
{
	mt_iter    *it = calloc(1, sizeof(mt_iter));

	if (it == NULL)
		return NULL;
	it->base.ops = &mt_iter_ops;
	it->base.err = err;
	it->mt = mt;
	it->snap = snap;
	lsm_memtable_ref(mt);
	return &it->base;
}

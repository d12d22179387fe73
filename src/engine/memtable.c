/*
 * memtable.c
 *		Skip list (p = 1/4, at most 12 levels) with arena allocation.
 *
 * A node is one allocation from the arena:
 *		[tag = seq << 8 | kind][klen][vlen][height][shadowed]
 *		[next pointers][key][value]
 * The arena hands out memory from 64 KiB chunks (larger entries get a chunk
 * of their own) and frees everything at once when the last reference goes.
 * The last node of every level is kept, so that a key past the last one (an
 * ascending load, or a lookup of a key it has not reached yet) needs one
 * comparison instead of a search.
 *
 * So that the memtable answers what an SSTable answers at the same cost, it
 * may also keep (db.c turns them on for the handle's memtables; the stage's
 * and recovery's scratch memtables go without):
 *
 * - A key filter: a cache-line-blocked Bloom filter (bloom.h layout) over
 *   the XXH3-64 key hash, the very hash lsm_get computes once per lookup
 *   for the SSTables, so that a key the memtable does not hold costs one
 *   cache line instead of a skip list descent.  It is sized up front from
 *   the flush threshold (KEY_FILTER_ENTRY_BYTES) and rebuilt at twice the
 *   size from the skip list when the entries outgrow it.
 *
 * - With the value filter, a value index: for every value hash of a row's
 *   indexed fields, the list of the entries holding it, so that a value
 *   search reads the rows that match instead of every row.  It is a hash
 *   table of 8-byte slots (32-bit tag of the value hash, head of a chain),
 *   chains of 8-byte records (entry number, next record) and the entries'
 *   node pointers, the last two in pages of VINDEX_PAGE that are never
 *   moved: about 8 bytes per indexed field of a row, 8 per row and 8-21 per
 *   distinct value.  Like the filters, it is outside the arena and not
 *   counted in the flush criterion (lsm_memtable_index_bytes reports the
 *   three).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "memtable.h"
#include "vfilter.h"

#define MAX_HEIGHT 12
#define CHUNK_SIZE (64 * 1024)

/*
 * The key filter's size: 10 bits per key (k = 6, about 1% false positives
 * in the blocked layout) for one key per 128 bytes of the flush threshold,
 * which is about 1% of memtable_bytes, allocated once per memtable.  A node
 * takes 32+ bytes plus its key and value, so a memtable of typical entries
 * (16-byte keys, 100-byte values: about 150 bytes) fills up to its
 * threshold with 10-12 bits per key and never grows its filter.  Smaller
 * entries, or a batch that carries the memtable past its threshold, double
 * the filter when the entries reach what it was sized for (rebuilt from the
 * skip list: one more hash per entry, amortized), so it keeps 5 to 10 bits
 * per entry whatever their size, and its memory stays below 10 bits per
 * entry's 32+ bytes.  Sizing for the threshold rather than starting small
 * spares the common case those rebuilds.
 */
#define KEY_FILTER_BITS_PER_KEY 10
#define KEY_FILTER_ENTRY_BYTES 128

/*
 * Value index pages (records and entry pointers, 256 per page: 2 KiB) and
 * its first hash table (64 slots, 512 bytes): small, because a store with
 * a tiny memtable makes a new one at every flush, and a new memtable that
 * allocated 72 KiB of index up front tripled the time of the multi-process
 * write test (test_multiproc, 8 KiB memtables) under the sanitizers.
 */
#define VINDEX_PAGE_SHIFT 8
#define VINDEX_PAGE (1u << VINDEX_PAGE_SHIFT)
#define VINDEX_MAX (UINT32_MAX - 1)	/* records and entries (numbered 1..) */
#define VINDEX_INITIAL_SLOTS 64	/* a power of two */

typedef struct mt_node
{
	uint64_t	tag;
	uint32_t	klen;
	uint32_t	vlen;
	uint16_t	height;
	uint16_t	shadowed;		/* a newer version of the key precedes it */
	struct mt_node *next[];		/* height pointers, then key, then value */
} mt_node;

/* A value index record: the entry holding a value, the next record. */
typedef struct vrec
{
	uint32_t	entry;			/* entry number (index of ventry) */
	uint32_t	next;			/* record number + 1; 0 ends the chain */
} vrec;

/* A value index slot: a value hash's tag and its newest record. */
typedef struct vslot
{
	uint32_t	tag;
	uint32_t	head;			/* record number + 1; 0: empty slot */
} vslot;

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
	/* key filter (NULL: none) */
	uint8_t    *klines;			/* in kraw, aligned to a cache line */
	void	   *kraw;
	uint32_t	knum_lines;
	int			kk;
	size_t		kcap;			/* entries it is sized for */
	/* value index (vslots NULL: none) */
	vslot	   *vslots;
	uint32_t	vmask;			/* slots - 1 (a power of two minus one) */
	uint32_t	vused;			/* slots in use */
	bool		vfull;			/* stopped indexing: VINDEX_MAX reached */
	vrec	  **vrecs;			/* pages of records */
	uint32_t	nvrecs;
	mt_node  ***ventries;		/* pages of entry nodes */
	uint32_t	nventries;
	uint32_t	vrecs_cap;		/* page table slots */
	uint32_t	ventries_cap;
	size_t		vbytes;			/* bytes of the value index */
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

static inline bool
same_key(const mt_node *a, const mt_node *b)
{
	return a->klen == b->klen && memcmp(node_key(a), node_key(b), a->klen) == 0;
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
	mt->head->shadowed = 0;
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
	uint32_t	i;

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
	free(mt->kraw);
	free(mt->vslots);
	for (i = 0; i < mt->vrecs_cap; i++)
		free(mt->vrecs[i]);
	for (i = 0; i < mt->ventries_cap; i++)
		free(mt->ventries[i]);
	free(mt->vrecs);
	free(mt->ventries);
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
	mt->vslots = calloc(VINDEX_INITIAL_SLOTS, sizeof(vslot));
	if (mt->vlines == NULL || mt->vslots == NULL)
	{
		free(mt->vlines);
		free(mt->vslots);
		mt->vlines = NULL;
		mt->vslots = NULL;
		return LSM_NOMEM;
	}
	mt->vmask = VINDEX_INITIAL_SLOTS - 1;
	mt->vbytes = VINDEX_INITIAL_SLOTS * sizeof(vslot);
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

/* ---------- key filter ---------- */

/*
 * Allocates a zeroed key filter of num_lines lines, aligned to a cache line
 * so that a probe touches exactly one; *raw gets the pointer to free.  NULL
 * when out of memory.  calloc, not posix_memalign and memset: a large
 * filter then comes from fresh zero pages that cost no memory until a key
 * lands in them (a read-only handle's memtable never touches its filter).
 */
static uint8_t *
key_filter_alloc(uint32_t num_lines, void **raw)
{
	uintptr_t	p;

	*raw = calloc((size_t) num_lines + 1, LSM_BLOOM_LINE);
	if (*raw == NULL)
		return NULL;
	p = ((uintptr_t) *raw + LSM_BLOOM_LINE - 1) & ~(uintptr_t) (LSM_BLOOM_LINE - 1);
	return (uint8_t *) p;
}

int
lsm_memtable_filter_keys(lsm_memtable *mt, size_t budget)
{
	uint64_t	keys = budget / KEY_FILTER_ENTRY_BYTES,
				lines;

	LSM_ASSERT(mt->entries == 0 && mt->klines == NULL);
	if (keys < 64)
		keys = 64;
	lines = (keys * KEY_FILTER_BITS_PER_KEY + 511) / 512;
	if (lines > UINT32_MAX / 2)
		lines = UINT32_MAX / 2;
	mt->klines = key_filter_alloc((uint32_t) lines, &mt->kraw);
	if (mt->klines == NULL)
		return LSM_NOMEM;
	mt->knum_lines = (uint32_t) lines;
	mt->kk = lsm_bloom_choose_k(KEY_FILTER_BITS_PER_KEY);
	mt->kcap = (size_t) keys;
	return LSM_OK;
}

bool
lsm_memtable_may_hold_key(const lsm_memtable *mt, uint64_t h)
{
	lsm_bloom	f;

	if (mt->klines == NULL)
		return mt->entries > 0;
	f.lines = mt->klines;
	f.num_lines = mt->knum_lines;
	f.k = mt->kk;
	return lsm_bloom_may_match(&f, h);
}

void
lsm_memtable_prefetch_key(const lsm_memtable *mt, uint64_t h)
{
	if (mt->klines != NULL)
		__builtin_prefetch(mt->klines +
						   (((uint64_t) (uint32_t) h * mt->knum_lines) >> 32) *
						   LSM_BLOOM_LINE);
}

/*
 * The entries have outgrown the key filter: rebuilds it at twice the size
 * from the skip list (every version's key; a key's versions are adjacent,
 * so it is hashed once).  Out of memory, the old filter stays: fuller, it
 * answers "maybe" more often but never "absent" for a key it holds.
 */
static void
grow_key_filter(lsm_memtable *mt)
{
	uint32_t	lines = mt->knum_lines;
	uint8_t    *fresh;
	void	   *raw;
	mt_node    *n,
			   *prev = NULL;

	mt->kcap *= 2;
	if (lines > UINT32_MAX / 4 ||
		(fresh = key_filter_alloc(lines * 2, &raw)) == NULL)
		return;
	for (n = mt->head->next[0]; n != NULL; prev = n, n = n->next[0])
	{
		if (prev != NULL && prev->klen == n->klen &&
			memcmp(node_key(prev), node_key(n), n->klen) == 0)
			continue;
		lsm_bloom_set(fresh, lines * 2, mt->kk,
					  lsm_key_hash(node_key(n), n->klen));
	}
	free(mt->kraw);
	mt->kraw = raw;
	mt->klines = fresh;
	mt->knum_lines = lines * 2;
}

/* ---------- value filter and value index ---------- */

/* The value index's 32-bit tag of a value hash. */
static inline uint32_t
vtag(uint64_t h)
{
	return (uint32_t) (h ^ (h >> 32));
}

static inline vrec *
vrec_at(const lsm_memtable *mt, uint32_t r)
{
	return &mt->vrecs[r >> VINDEX_PAGE_SHIFT][r & (VINDEX_PAGE - 1)];
}

static inline mt_node **
ventry_at(const lsm_memtable *mt, uint32_t e)
{
	return &mt->ventries[e >> VINDEX_PAGE_SHIFT][e & (VINDEX_PAGE - 1)];
}

/* The slot of tag: the one holding it, or the empty one where it goes. */
static inline vslot *
vslot_find(const vslot *slots, uint32_t mask, uint32_t tag)
{
	uint32_t	i = tag & mask;

	/* linear probing; the table is never more than 70% full */
	while (slots[i].head != 0 && slots[i].tag != tag)
		i = (i + 1) & mask;
	return (vslot *) &slots[i];
}

/*
 * Makes sure that *pages (a page table of *cap pages, pages of elem-byte
 * elements) has pages for count + extra elements.  LSM_NOMEM leaves what
 * was there; pages added are kept (they are capacity, not content).
 */
static int
reserve_pages(lsm_memtable *mt, void ***pages, uint32_t *cap, uint32_t count,
			  uint32_t extra, size_t elem)
{
	uint32_t	need = (uint32_t) (((uint64_t) count + extra + VINDEX_PAGE - 1) /
								   VINDEX_PAGE),
				p;

	if (need > *cap)
	{
		uint32_t	ncap = *cap * 2 + 16,
					i;
		void	  **g;

		if (ncap < need)
			ncap = need;
		g = realloc(*pages, sizeof(void *) * ncap);
		if (g == NULL)
			return LSM_NOMEM;
		for (i = *cap; i < ncap; i++)
			g[i] = NULL;
		*pages = g;
		mt->vbytes += sizeof(void *) * (ncap - *cap);
		*cap = ncap;
	}
	for (p = count / VINDEX_PAGE; p < need; p++)
		if ((*pages)[p] == NULL)
		{
			if (((*pages)[p] = malloc(elem * VINDEX_PAGE)) == NULL)
				return LSM_NOMEM;
			mt->vbytes += elem * VINDEX_PAGE;
		}
	return LSM_OK;
}

/*
 * Makes room in the value index for one more entry with ntags distinct
 * tags: pages for the records and the entry, and a hash table that stays
 * at most 70% full with all of them new.  LSM_NOMEM leaves the index as it
 * was (with more capacity, perhaps).
 */
static int
vindex_reserve(lsm_memtable *mt, uint32_t ntags)
{
	uint64_t	slots = (uint64_t) mt->vmask + 1;
	int			rc;

	rc = reserve_pages(mt, (void ***) &mt->vrecs, &mt->vrecs_cap, mt->nvrecs,
					   ntags, sizeof(vrec));
	if (rc == LSM_OK)
		rc = reserve_pages(mt, (void ***) &mt->ventries, &mt->ventries_cap,
						   mt->nventries, 1, sizeof(mt_node *));
	if (rc != LSM_OK)
		return rc;
	if (((uint64_t) mt->vused + ntags) * 10 > slots * 7)
	{
		uint64_t	nslots = slots;
		vslot	   *fresh;
		uint64_t	i;

		while (((uint64_t) mt->vused + ntags) * 10 > nslots * 7)
			nslots *= 2;
		if (nslots > (UINT64_C(1) << 32))
			return LSM_NOMEM;
		fresh = calloc((size_t) nslots, sizeof(vslot));
		if (fresh == NULL)
			return LSM_NOMEM;
		for (i = 0; i < slots; i++)
			if (mt->vslots[i].head != 0)
				*vslot_find(fresh, (uint32_t) (nslots - 1),
							mt->vslots[i].tag) = mt->vslots[i];
		free(mt->vslots);
		mt->vslots = fresh;
		mt->vmask = (uint32_t) (nslots - 1);
		mt->vbytes += (size_t) (nslots - slots) * sizeof(vslot);
	}
	return LSM_OK;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a,
				y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

/*
 * Sorts tags (insertion sort for the usual few fields) and drops repeats,
 * so that a row is on each of its chains once even if two of its values
 * share a tag; returns how many are left.
 */
static uint32_t
unique_tags(uint32_t *tags, uint32_t n)
{
	uint32_t	i,
				j,
				out;

	if (n > 32)
		qsort(tags, n, sizeof(uint32_t), cmp_u32);
	else
		for (i = 1; i < n; i++)
		{
			uint32_t	t = tags[i];

			for (j = i; j > 0 && tags[j - 1] > t; j--)
				tags[j] = tags[j - 1];
			tags[j] = t;
		}
	for (i = 0, out = 0; i < n; i++)
		if (out == 0 || tags[out - 1] != tags[i])
			tags[out++] = tags[i];
	return out;
}

/*
 * The first half of adding a row: its value hashes into the value filter,
 * and room in the value index for its distinct tags, which it leaves in
 * mt->vhashes (*ntags of them, as uint32).  LSM_NOMEM leaves the memtable
 * unchanged but for bits of the value filter (which only make it say
 * "maybe" more often).
 */
static int
index_values(lsm_memtable *mt, const uint8_t *row, size_t rowlen,
			 uint32_t *ntags)
{
	uint32_t   *tags;
	size_t		i,
				n;

	*ntags = 0;
	mt->vhashes.len = 0;
	if (lsm_value_hashes(row, rowlen, mt->unindexed, &mt->vhashes) != LSM_OK)
		return LSM_NOMEM;
	n = mt->vhashes.len / sizeof(uint64_t);
	tags = (uint32_t *) mt->vhashes.data;
	for (i = 0; i < n; i++)
	{
		uint64_t	h;

		memcpy(&h, mt->vhashes.data + i * sizeof(uint64_t), sizeof(h));
		lsm_bloom_set(mt->vlines, lsm_vfilter_lines(mt->vbits), mt->vk, h);
		/* in place: tag i overwrites bytes that hash i has been read from */
		tags[i] = vtag(h);
	}
	if (n == 0 || mt->vslots == NULL || mt->vfull)
		return LSM_OK;
	*ntags = unique_tags(tags, (uint32_t) n);
	if ((uint64_t) mt->nvrecs + *ntags > VINDEX_MAX ||
		(uint64_t) mt->nventries + 1 > VINDEX_MAX)
	{
		/* past 4G records: the value search scans this memtable */
		mt->vfull = true;
		*ntags = 0;
		return LSM_OK;
	}
	return vindex_reserve(mt, *ntags);
}

/*
 * The second half: links node n into the chains of its ntags tags (in
 * mt->vhashes), for which index_values made room.  Cannot fail.
 */
static void
link_values(lsm_memtable *mt, mt_node *n, uint32_t ntags)
{
	const uint32_t *tags = (const uint32_t *) mt->vhashes.data;
	uint32_t	e,
				i;

	if (ntags == 0)
		return;
	e = mt->nventries++;
	*ventry_at(mt, e) = n;
	for (i = 0; i < ntags; i++)
	{
		vslot	   *sl = vslot_find(mt->vslots, mt->vmask, tags[i]);
		uint32_t	r = mt->nvrecs++;
		vrec	   *rec = vrec_at(mt, r);

		rec->entry = e;
		if (sl->head == 0)
		{
			sl->tag = tags[i];
			rec->next = 0;
			mt->vused++;
		}
		else
			rec->next = sl->head;
		sl->head = r + 1;
	}
}

int
lsm_memtable_value_rows(const lsm_memtable *mt, uint64_t h, uint64_t snap,
						lsm_memtable_row_fn fn, void *arg)
{
	const vslot *sl;
	uint32_t	r;

	if (mt->vslots == NULL || mt->vfull)
		return LSM_NOTFOUND;
	sl = vslot_find(mt->vslots, mt->vmask, vtag(h));
	for (r = sl->head; r != 0; r = vrec_at(mt, r - 1)->next)
	{
		const mt_node *n = *ventry_at(mt, vrec_at(mt, r - 1)->entry);
		int			rc;

		if ((n->tag >> 8) > snap || (n->tag & 0xff) != LSM_KIND_PUT)
			continue;

		/*
		 * The newest version of its key in the snapshot?  Surely if it is
		 * the newest of all (the usual case); else a search tells.
		 */
		if (n->shadowed &&
			find_ge(mt, node_key(n), n->klen, snap_tag(snap), NULL) != n)
			continue;
		rc = fn(arg, node_key(n), n->klen, node_val(n), n->vlen, n->tag >> 8);
		if (rc != LSM_OK)
			return rc;
	}
	return LSM_OK;
}

size_t
lsm_memtable_index_bytes(const lsm_memtable *mt)
{
	return mt->vbytes + (size_t) mt->knum_lines * LSM_BLOOM_LINE +
		(mt->vlines ? (size_t) lsm_vfilter_lines(mt->vbits) * LSM_BLOOM_LINE : 0);
}

int
lsm_memtable_add(lsm_memtable *mt, uint64_t seq, int kind,
				 const void *key, size_t klen, const void *val, size_t vlen)
{
	mt_node    *prev[MAX_HEIGHT];
	mt_node    *n;
	uint64_t	tag = seq << 8 | (uint64_t) kind;
	uint32_t	ntags = 0;
	int			h = random_height(mt);
	int			i;

	/* the value filter and index first: a failure leaves the rows as they were */
	if (mt->vlines && kind == LSM_KIND_PUT &&
		index_values(mt, val, vlen, &ntags) != LSM_OK)
		return LSM_NOMEM;
	n = arena_alloc(mt, sizeof(mt_node) + h * sizeof(mt_node *) + klen + vlen);
	if (n == NULL)
		return LSM_NOMEM;
	n->tag = tag;
	n->klen = (uint32_t) klen;
	n->vlen = (uint32_t) vlen;
	n->height = (uint16_t) h;
	n->shadowed = 0;
	memcpy((uint8_t *) node_key(n), key, klen);
	if (vlen)
		memcpy((uint8_t *) node_val(n), val, vlen);
	if (mt->klines)
	{
		/* tombstones too: a get must find them and stop there */
		if (mt->entries >= mt->kcap)
			grow_key_filter(mt);
		lsm_bloom_set(mt->klines, mt->knum_lines, mt->kk,
					  lsm_key_hash(key, klen));
	}
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
	/* versions of one key are adjacent, newest first */
	if (prev[0] != mt->head && same_key(prev[0], n))
		n->shadowed = 1;
	if (n->next[0] != NULL && same_key(n->next[0], n))
		n->next[0]->shadowed = 1;
	link_values(mt, n, ntags);
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
			if (l == 0 && n->shadowed != (x != mt->head && same_key(x, n)))
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

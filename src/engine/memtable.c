/*
 * memtable.c
 *		Skip list (p = 1/4, at most 12 levels) in one relocatable region.
 *
 * Everything the memtable holds lives in one contiguous region addressed
 * by 32-bit offsets in units of 8 bytes (so up to 32 GiB), never by
 * pointers, so that processes that map a shared file at different
 * addresses see the same memtable (memfile.h, docs/architecture.md "The
 * shared memtable").  A region is either this handle's own (an anonymous
 * reservation of address space, made accessible as it fills, so addresses
 * never move) or external (a file mapping the caller owns).  A bump
 * allocator hands out its bytes; nothing is freed before the whole region.
 *
 * The region starts with a header (mt_region) and holds:
 *		nodes		[tag = seq << 8 | kind][klen][vlen][height][shadowed]
 *					[next offsets][key][value]
 *		key filter	a cache-line-blocked Bloom filter (bloom.h layout) over
 *					the XXH3-64 key hash, the very hash lsm_get computes once
 *					per lookup for the SSTables, so that a key the memtable
 *					does not hold costs one cache line instead of a skip list
 *					descent.  Sized from the flush threshold
 *					(KEY_FILTER_ENTRY_BYTES) and rebuilt at twice the size
 *					from the skip list when the entries outgrow it.
 *		value filter  over the indexed fields of the rows (vfilter.h), so
 *					that a value search can skip the memtable
 *		value index	for every value hash of a row's indexed fields, the
 *					entries holding it, so that a value search reads the rows
 *					that match instead of every row: a hash table of 16-byte
 *					slots (value hash, head of a chain) rebuilt at twice the
 *					size when 70% full, and chains of 8-byte records (node,
 *					next record)
 * The last node of every level is kept, so that a key past the last one (an
 * ascending load, or a lookup of a key it has not reached yet) needs one
 * comparison instead of a search; and the writer's handle keeps where it
 * inserted last (its "finger", at_finger), so that a key right after that
 * one (a load in ascending runs that jumps now and then) needs a
 * comparison or two per level of the new node.
 *
 * One writer, lock-free readers.  Only one thread of one process at a time
 * adds entries (the holder of the store's write lock, or the handle that
 * owns a private region); any number of others, in other processes, read
 * at the same time, and the writer may die at any instruction.  The rules:
 *	- A node is written completely (tag, lengths, height, key, value, its
 *	  own next offsets) and its key filter bits are set before it is linked;
 *	  links go bottom-up, each a release store; readers load links with
 *	  acquire.  Whatever prefix of an insert a dead writer left is a valid
 *	  skip list: a node allocated but not linked is unreachable, one linked
 *	  on some levels only is found through level 0.
 *	- A filter or hash table that grows is built completely elsewhere in the
 *	  region and then published with one release store of its offset and
 *	  size; the old one is abandoned in place.  A value index record is
 *	  written before the slot's head points to it.
 *	- Readers only rely on entries whose sequence is at most a snapshot that
 *	  the writer published after inserting them (db.c: applied_seq), so an
 *	  entry being inserted, and filter bits or chains of later entries, are
 *	  either invisible or harmless: a filter bit set early only makes the
 *	  filter say "maybe"; a chain record of a later entry is skipped by the
 *	  sequence check.
 *	- "shadowed" (a newer version of the key precedes the node) is only a
 *	  hint: a reader confirms it with a search.
 *	- Counters, the tails and the height are read with relaxed or acquire
 *	  loads; a stale tail or height only costs a reader a longer search.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "env.h"
#include "memtable.h"
#include "vfilter.h"

#define MAX_HEIGHT LSM_MEMTABLE_LEVELS
#define MT_MAGIC UINT64_C(0x4c534d4d54524735)	/* "LSMMTRG5" */
#define UNIT 8					/* bytes per offset unit */
#define MAX_REGION ((size_t) UINT32_MAX * UNIT)

/*
 * A private region reserves this much address space (PROT_NONE, no memory
 * committed) and makes it accessible as it fills, PRIVATE_STEP at first
 * and then the bytes in use again, up to PRIVATE_MAX_STEP at a time, each
 * step's pages faulted in by one call (a buffer filling 64 MB otherwise
 * takes 16,384 page faults).
 */
#define PRIVATE_RESERVE ((size_t) 4 << 30)
#define PRIVATE_STEP ((size_t) 64 << 10)
#define PRIVATE_MAX_STEP ((size_t) 8 << 20)

/*
 * An external region keeps blocks at least this far ahead of what it is
 * asked for (and an eighth of the bytes in use, if more), so that the
 * pages a writer fills were allocated at an earlier step, and every other
 * process had the chance to fault them in before it took the write lock
 * (lsm_memtable_prefault); it asks for EXTERNAL_STEP more at a time.
 */
#define EXTERNAL_AHEAD ((size_t) 1 << 20)
#define EXTERNAL_STEP ((size_t) 1 << 20)

/*
 * The key filter's size: 10 bits per key (k = 6, about 1% false positives
 * in the blocked layout) for one key per 128 bytes of the flush threshold,
 * which is about 1% of memtable_bytes.  A node takes 24+ bytes plus its key
 * and value, so a memtable of typical entries (16-byte keys, 100-byte
 * values: about 150 bytes) fills up to its threshold with 10-12 bits per
 * key and never grows its filter.  Smaller entries, or a batch that
 * carries the memtable past its threshold, double the filter when the
 * entries reach what it was sized for (rebuilt from the skip list: one more
 * hash per entry, amortized), so it keeps 5 to 10 bits per entry.
 */
#define KEY_FILTER_BITS_PER_KEY 10
#define KEY_FILTER_ENTRY_BYTES 128

/* The value index's first hash table: small (stages make many memtables). */
#define VINDEX_INITIAL_SLOTS 64	/* a power of two */

typedef uint32_t mt_off;		/* offset in UNITs from the region; 0: none */

typedef struct mt_node
{
	uint64_t	tag;
	uint32_t	klen;
	uint32_t	vlen;
	uint16_t	height;
	uint16_t	shadowed;		/* a newer version of the key precedes it */
	mt_off		next[];			/* height offsets, then key, then value */
} mt_node;

/* A value index record: the node holding a value, the next record. */
typedef struct vrec
{
	mt_off		node;
	mt_off		next;
} vrec;

/*
 * A value index slot: a value hash folded to 32 bits (vtag), which places
 * it in the table too, and its newest record (0: empty).  Values that
 * share a tag share a chain; the caller compares the field anyway.
 */
typedef struct vslot
{
	uint32_t	tag;
	mt_off		head;
} vslot;

/* A prepared write of this memtable's log (prepared.c). */
typedef struct mt_prep
{
	uint64_t	owner;
	mt_off		next;			/* the undecided one prepared before it */
	uint32_t	decided;		/* committed or rolled back since (and
								 * unlinked) */
	uint32_t	type;			/* its log record's: a batch or tables */
	uint32_t	pad;
	uint64_t	len;			/* bytes of the payload that follows */
	uint8_t		batch[];
} mt_prep;

/* The region's header, at its start. */
typedef struct mt_region
{
	uint64_t	magic;			/* MT_MAGIC once formatted */
	uint64_t	size;			/* bytes of the region */
	uint64_t	used;			/* bytes handed out */
	uint64_t	reserved;		/* external: bytes the backing has blocks for */
	uint64_t	entries;
	uint64_t	entry_bytes;	/* bytes of nodes: the flush criterion */
	uint64_t	index_bytes;	/* bytes of filters and value index */
	uint32_t	rnd;			/* xorshift32 state of the node heights */
	uint32_t	height;
	mt_off		head;
	mt_off		tail[MAX_HEIGHT];	/* last node of each level, or head */
	uint32_t	kk;				/* key filter probes; 0: no key filter */
	uint64_t	kfilter;		/* lines offset << 32 | number of lines */
	uint64_t	kcap;			/* entries the key filter is sized for */
	mt_off		vlines;			/* value filter; 0: none */
	uint32_t	vbits;
	uint32_t	vk;
	uint32_t	vfull;			/* the value index stopped (out of room) */
	uint64_t	unindexed;
	uint64_t	vindex;			/* slots offset << 32 | mask; 0: none */
	uint64_t	vused;			/* slots in use */
	mt_off		prepared;		/* undecided prepared batches (mt_prep),
								 * newest first */
	uint32_t	undecided;		/* how many of them are not decided */
	uint64_t	prep_changes;	/* bumped at each prepare and decision */
} mt_region;

struct lsm_memtable
{
	int			refs;
	uint8_t    *base;
	mt_region  *r;
	size_t		size;			/* of the region */
	size_t		limit;			/* private: bytes made accessible */
	bool		own;			/* a private region: unmapped at the end */
	bool		writable;
	lsm_memtable_backing backing;
	lsm_buf		vhashes;		/* scratch */
	size_t		prefaulted;		/* lsm_memtable_prefault got this far */
	size_t		promised;		/* bytes lsm_memtable_reserve still owes entries */
	size_t		short_at;		/* reserved when blocks ahead were refused;
								 * 0: never */
	uint64_t	id;				/* unique in the process: hints name it */
	lsm_memtable_hint finger;	/* the writer's last insert (at_finger) */
};

/* The last lsm_memtable id handed out. */
static uint64_t last_id;

/* ---------- region access ---------- */

static inline void *
at(const lsm_memtable *mt, mt_off o)
{
	return mt->base + (size_t) o * UNIT;
}

static inline mt_node *
node_at(const lsm_memtable *mt, mt_off o)
{
	return o ? (mt_node *) at(mt, o) : NULL;
}

static inline mt_off
off_of(const lsm_memtable *mt, const void *p)
{
	return (mt_off) (((const uint8_t *) p - mt->base) / UNIT);
}

static inline uint64_t
load64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
store64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline mt_off
load_off(const mt_off *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void
store_off(mt_off *p, mt_off v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline mt_node *
next_of(const lsm_memtable *mt, const mt_node *n, int level)
{
	return node_at(mt, load_off(&n->next[level]));
}

/* region_grow for a private region: its pages made accessible. */
static bool
grow_private(lsm_memtable *mt, size_t upto)
{
	size_t		lim = mt->limit,
				step;

	if (upto <= lim)
		return true;
	step = lim < PRIVATE_STEP ? PRIVATE_STEP :
		lim > PRIVATE_MAX_STEP ? PRIVATE_MAX_STEP : lim;
	if (lim + step < upto)
		step = upto - lim;
	step = (step + 4095) & ~(size_t) 4095;
	if (lim + step > mt->size)
		step = mt->size - lim;
	if (mprotect(mt->base + lim, step, PROT_READ | PROT_WRITE) != 0)
		return false;
	/* its page faults in one call (the step will be written soon) */
	lsm_env_prefault(mt->base + lim, step);
	mt->limit = lim + step;
	return true;
}

/*
 * region_grow for an external region: blocks from its backing, kept ahead
 * (EXTERNAL_AHEAD); refused those (a full disk), asked for again only a
 * step on, and meanwhile what is asked, a page at a time.
 */
static bool
grow_external(lsm_memtable *mt, size_t upto, lsm_err *e)
{
	mt_region  *r = mt->r;
	size_t		ahead = r->used / 8 > EXTERNAL_AHEAD ? r->used / 8 :
		EXTERNAL_AHEAD,
				want;
	bool		try_ahead = mt->short_at == 0 ||
		r->reserved >= mt->short_at + EXTERNAL_STEP;

	if (mt->backing.reserve == NULL ||
		upto + ahead <= r->reserved || r->reserved >= mt->size ||
		(upto <= r->reserved && !try_ahead))
		return true;
	if (try_ahead)
	{
		want = r->reserved + EXTERNAL_STEP;
		if (want < upto + ahead)
			want = upto + ahead;
		if (want > mt->size)
			want = mt->size;
		if (mt->backing.reserve(mt->backing.arg, want, NULL) == LSM_OK)
		{
			mt->short_at = 0;
			r->reserved = want;
			return true;
		}
		mt->short_at = r->reserved;
		if (upto <= r->reserved)
			return true;
	}
	want = (upto + 4095) & ~(size_t) 4095;
	if (want > mt->size)
		want = mt->size;
	if (mt->backing.reserve(mt->backing.arg, want, e) != LSM_OK)
		return false;
	r->reserved = want;
	return true;
}

/*
 * Makes [0, upto) of the region usable: a private region's pages
 * accessible, an external region's blocks allocated by its backing.
 * false if it cannot be (the region is full, or the backing failed).
 */
static bool
region_grow(lsm_memtable *mt, size_t upto, lsm_err *e)
{
	if (upto > mt->size)
		return false;
	return mt->own ? grow_private(mt, upto) : grow_external(mt, upto, e);
}

void
lsm_memtable_prefault(lsm_memtable *mt)
{
	size_t		from,
				to;

	if (mt == NULL || mt->own || !mt->writable)
		return;
	/* a hint read without the lock: the holder only ever raises it */
	to = (size_t) __atomic_load_n(&mt->r->reserved, __ATOMIC_RELAXED);
	if (to > mt->size)
		to = mt->size;
	to &= ~(size_t) 4095;
	from = __atomic_load_n(&mt->prefaulted, __ATOMIC_RELAXED);
	if (to <= from)
		return;
	__atomic_store_n(&mt->prefaulted, to, __ATOMIC_RELAXED);
	lsm_env_prefault(mt->base + from, to - from);
}

/*
 * n bytes from the region, aligned to align (a power of two, >= UNIT),
 * with keep bytes past them usable too; NULL when it is full.  Fresh bytes
 * are zero (new pages).
 */
static void *
bump(lsm_memtable *mt, size_t n, size_t align, size_t keep)
{
	mt_region  *r = mt->r;
	size_t		start = (r->used + align - 1) & ~(align - 1);

	if (start + n > r->size || start + n < start ||
		!region_grow(mt, start + n + keep, NULL))
		return NULL;
	r->used = start + n;
	return mt->base + start;
}

/*
 * Bytes for an entry (a node, a prepared batch), out of what
 * lsm_memtable_reserve promised its batch.
 */
static void *
entry_alloc(lsm_memtable *mt, size_t n)
{
	size_t		before = mt->r->used,
				took;
	void	   *p = bump(mt, n, UNIT, 0);

	if (p != NULL)
	{
		took = mt->r->used - before;
		mt->promised = took < mt->promised ? mt->promised - took : 0;
	}
	return p;
}

/*
 * Bytes for a filter or the value index: only if what is promised to the
 * rest of the batch's entries stays usable after them.  These are not
 * reserved ahead (their worst case is several times the entries'), so a
 * full region or disk stops a filter or the index from growing, never a
 * batch halfway.
 */
static void *
index_alloc(lsm_memtable *mt, size_t n, size_t align)
{
	return bump(mt, n, align, mt->promised);
}

/* ---------- nodes ---------- */

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

static inline uint16_t
shadowed_of(const mt_node *n)
{
	return __atomic_load_n(&n->shadowed, __ATOMIC_RELAXED);
}

/* ---------- creation ---------- */

/* Formats an empty memtable in mt's zeroed region; false if too small. */
static bool
format(lsm_memtable *mt, size_t size)
{
	mt_region  *r = mt->r;
	mt_node    *head;
	int			i;

	if (size < 4096 || !region_grow(mt, 4096, NULL))
		return false;
	r->size = size;
	r->used = sizeof(mt_region);
	if (!mt->own && mt->backing.reserve == NULL)
		r->reserved = size;
	r->rnd = 0xdeadbeef;
	r->height = 1;
	head = entry_alloc(mt, sizeof(mt_node) + MAX_HEIGHT * sizeof(mt_off));
	if (head == NULL)
		return false;
	head->height = MAX_HEIGHT;
	r->head = off_of(mt, head);
	r->entry_bytes = sizeof(mt_node) + MAX_HEIGHT * sizeof(mt_off);	/* the head */
	for (i = 0; i < MAX_HEIGHT; i++)
		r->tail[i] = r->head;
	store64(&r->magic, MT_MAGIC);
	return true;
}

static lsm_memtable *
handle_new(void *base, size_t size, bool own, bool writable,
		   const lsm_memtable_backing *b)
{
	lsm_memtable *mt = calloc(1, sizeof(lsm_memtable));

	if (mt == NULL)
		return NULL;
	mt->refs = 1;
	mt->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
	mt->base = base;
	mt->size = size;
	mt->r = base;
	mt->own = own;
	mt->writable = writable;
	if (b)
		mt->backing = *b;
	return mt;
}

lsm_memtable *
lsm_memtable_new(void)
{
	void	   *p = mmap(NULL, PRIVATE_RESERVE, PROT_NONE,
						 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	lsm_memtable *mt;

	if (p == MAP_FAILED)
		return NULL;
	mt = handle_new(p, PRIVATE_RESERVE, true, true, NULL);
	if (mt == NULL || !format(mt, PRIVATE_RESERVE))
	{
		munmap(p, PRIVATE_RESERVE);
		free(mt);
		return NULL;
	}
	return mt;
}

lsm_memtable *
lsm_memtable_format(void *base, size_t size, const lsm_memtable_backing *b)
{
	lsm_memtable *mt;

	if (size > MAX_REGION || ((uintptr_t) base & 63) != 0)
		return NULL;
	mt = handle_new(base, size, false, true, b);
	if (mt && !format(mt, size))
	{
		free(mt);
		mt = NULL;
	}
	return mt;
}

lsm_memtable *
lsm_memtable_attach(void *base, size_t size, bool writable,
					const lsm_memtable_backing *b, lsm_err *e)
{
	mt_region  *r = base;
	size_t		lines;
	lsm_memtable *mt;
	int			i;

	if (size < 4096 || ((uintptr_t) base & 63) != 0 ||
		load64(&r->magic) != MT_MAGIC || r->size != size ||
		size > MAX_REGION || r->used > size || r->reserved > size ||
		r->head == 0 || (size_t) r->head * UNIT >= size ||
		r->height < 1 || r->height > MAX_HEIGHT)
	{
		lsm_err_set(e, LSM_CORRUPTION, "not a memtable region of this layout");
		return NULL;
	}
	for (i = 0; i < MAX_HEIGHT; i++)
		if ((size_t) r->tail[i] * UNIT >= size)
			break;
	lines = (size_t) (uint32_t) r->kfilter;
	if (i < MAX_HEIGHT ||
		((r->kfilter >> 32) * UNIT + lines * LSM_BLOOM_LINE > size) ||
		(r->vlines && (size_t) r->vlines * UNIT +
		 (size_t) lsm_vfilter_lines(r->vbits) * LSM_BLOOM_LINE > size) ||
		((r->vindex >> 32) * UNIT + ((r->vindex & UINT32_MAX) + 1) *
		 sizeof(vslot) > size && r->vindex != 0))
	{
		lsm_err_set(e, LSM_CORRUPTION, "memtable region offsets out of bounds");
		return NULL;
	}
	mt = handle_new(base, size, false, writable, b);
	if (mt == NULL)
		lsm_err_set(e, LSM_NOMEM, "out of memory");
	return mt;
}

size_t
lsm_memtable_region_bytes_for(size_t memtable_bytes)
{
	size_t		n;

	/* the threshold and a batch past it, filters and index: sparse */
	if (memtable_bytes > MAX_REGION / 8)
		return MAX_REGION & ~(size_t) 4095;
	n = memtable_bytes * 8 + ((size_t) 8 << 20);
	return n > MAX_REGION ? MAX_REGION & ~(size_t) 4095 : n;
}

/* Atomic counts: threads of a test share one handle (a process has one). */
void
lsm_memtable_ref(lsm_memtable *mt)
{
	__atomic_add_fetch(&mt->refs, 1, __ATOMIC_RELAXED);
}

void
lsm_memtable_unref(lsm_memtable *mt)
{
	if (mt == NULL || __atomic_sub_fetch(&mt->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	lsm_buf_free(&mt->vhashes);
	if (mt->own)
		munmap(mt->base, PRIVATE_RESERVE);
	else if (mt->backing.release)
		mt->backing.release(mt->backing.arg);
	free(mt);
}

static int
random_height(lsm_memtable *mt)
{
	mt_region  *r = mt->r;
	int			h = 1;

	while (h < MAX_HEIGHT)
	{
		/* xorshift32 */
		r->rnd ^= r->rnd << 13;
		r->rnd ^= r->rnd >> 17;
		r->rnd ^= r->rnd << 5;
		if ((r->rnd & 3) != 0)
			break;
		h++;
	}
	return h;
}

/*
 * The hint's node on level, if it can start that level's walk to (key,
 * tag): on that level, and before the key or the head.  NULL otherwise.
 */
static mt_node *
hint_start(const lsm_memtable *mt, const lsm_memtable_hint *hint, int level,
		   const void *key, size_t klen, uint64_t tag)
{
	mt_node    *x;

	if (hint == NULL || (uint32_t) level >= hint->height)
		return NULL;
	x = node_at(mt, hint->prev[level]);
	if (x == NULL || x->height <= level ||
		(x != node_at(mt, mt->r->head) && node_cmp(x, key, klen, tag) >= 0))
		return NULL;
	return x;
}

/*
 * The skip list's descent to (key, tag) from level height - 1: the first
 * node >= (key, tag) (NULL if none); fills prev[] with the last node
 * before it on every level when prev is not NULL.  With a hint, each
 * level's walk starts from the hint's node on that level: every node of a
 * level's list that is before the key is a valid start, and nodes are
 * never unlinked.
 */
static mt_node *
descend(const lsm_memtable *mt, int height, const void *key, size_t klen,
		uint64_t tag, mt_node **prev, const lsm_memtable_hint *hint)
{
	mt_node    *x = node_at(mt, mt->r->head),
			   *n = NULL;
	int			level;

	for (level = height - 1; level >= 0; level--)
	{
		mt_node    *h = hint_start(mt, hint, level, key, klen, tag);

		if (h != NULL)
			x = h;
		n = next_of(mt, x, level);
		while (n != NULL && node_cmp(n, key, klen, tag) < 0)
		{
			x = n;
			n = next_of(mt, x, level);
		}
		if (prev)
			prev[level] = x;
	}
	return n;
}

/*
 * Finds the first node >= (key, tag); fills prev[] with the last node before
 * it on every level when prev is not NULL (the writer, which alone may take
 * the shortcut past the last node: the tails do not move under it), from
 * the hint if there is one (descend).
 */
static mt_node *
find_ge_from(const lsm_memtable *mt, const void *key, size_t klen,
			 uint64_t tag, mt_node **prev, const lsm_memtable_hint *hint)
{
	const mt_region *r = mt->r;
	mt_node    *head = node_at(mt, r->head);
	mt_node    *last = node_at(mt, load_off(&r->tail[0]));
	int			height = (int) __atomic_load_n(&r->height, __ATOMIC_ACQUIRE);

	if (last != head && node_cmp(last, key, klen, tag) < 0)
	{
		/* past the last node */
		if (prev)
		{
			int			l;

			for (l = 0; l < height; l++)
				prev[l] = node_at(mt, r->tail[l]);
		}
		return NULL;
	}
	return descend(mt, height, key, klen, tag, prev, hint);
}

static mt_node *
find_ge(const lsm_memtable *mt, const void *key, size_t klen, uint64_t tag,
		mt_node **prev)
{
	return find_ge_from(mt, key, klen, tag, prev, NULL);
}

void
lsm_memtable_locate(const lsm_memtable *mt, const void *key, size_t klen,
					lsm_memtable_hint *hint)
{
	mt_node    *prev[MAX_HEIGHT];
	int			height = (int) __atomic_load_n(&mt->r->height, __ATOMIC_ACQUIRE);
	int			level;

	/*
	 * The descent without find_ge's shortcut past the last node: the tails
	 * it would read may have moved past the key since it compared.  The
	 * greatest tag sorts before every version of key, so each prev[] is
	 * before the key itself, whatever sequence the insert gets.
	 */
	(void) descend(mt, height, key, klen, UINT64_MAX, prev, NULL);
	hint->mt_id = mt->id;
	hint->height = (uint32_t) height;
	for (level = 0; level < height; level++)
		hint->prev[level] = off_of(mt, prev[level]);
}

/* Finds the last node < (key, tag), or NULL if there is none. */
static mt_node *
find_lt(const lsm_memtable *mt, const void *key, size_t klen, uint64_t tag)
{
	mt_node    *head = node_at(mt, mt->r->head);
	mt_node    *x = head;
	int			level = (int) __atomic_load_n(&mt->r->height, __ATOMIC_ACQUIRE) - 1;

	for (;;)
	{
		mt_node    *n = next_of(mt, x, level);

		if (n != NULL && node_cmp(n, key, klen, tag) < 0)
			x = n;
		else if (level == 0)
			return x == head ? NULL : x;
		else
			level--;
	}
}

/* ---------- value filter ---------- */

int
lsm_memtable_index_values(lsm_memtable *mt, uint32_t m, int k,
						  uint64_t unindexed)
{
	mt_region  *r = mt->r;
	uint8_t    *lines;
	vslot	   *slots;

	LSM_ASSERT(r->entries == 0);
	/* whole 512-bit lines only (the manifest reader and lsm_open see to it) */
	if (m % 512 != 0 || m > LSM_VFILTER_MAX_BITS ||
		k < 0 || k > LSM_VFILTER_MAX_HASHES)
		return LSM_INVALID;
	if (m == 0 || k == 0)
		return LSM_OK;
	lines = index_alloc(mt, (size_t) lsm_vfilter_lines(m) * LSM_BLOOM_LINE,
						 LSM_BLOOM_LINE);
	slots = index_alloc(mt, VINDEX_INITIAL_SLOTS * sizeof(vslot), UNIT);
	if (lines == NULL || slots == NULL)
		return LSM_NOMEM;
	r->vbits = m;
	r->vk = (uint32_t) k;
	r->unindexed = unindexed;
	r->index_bytes += (size_t) lsm_vfilter_lines(m) * LSM_BLOOM_LINE +
		VINDEX_INITIAL_SLOTS * sizeof(vslot);
	store64(&r->vindex, (uint64_t) off_of(mt, slots) << 32 |
			(VINDEX_INITIAL_SLOTS - 1));
	store_off(&r->vlines, off_of(mt, lines));
	return LSM_OK;
}

bool
lsm_memtable_may_hold_value(const lsm_memtable *mt, uint64_t h)
{
	const mt_region *r = mt->r;
	mt_off		o = load_off(&r->vlines);
	lsm_bloom	f;

	if (o == 0)
		return lsm_memtable_entries(mt) > 0;
	f.lines = at(mt, o);
	f.num_lines = lsm_vfilter_lines(r->vbits);
	f.k = (int) r->vk;
	return lsm_bloom_may_match_shared(&f, h);
}

/* ---------- key filter ---------- */

int
lsm_memtable_filter_keys(lsm_memtable *mt, size_t budget)
{
	mt_region  *r = mt->r;
	uint64_t	keys = budget / KEY_FILTER_ENTRY_BYTES,
				lines;
	uint8_t    *p;

	LSM_ASSERT(r->entries == 0 && r->kfilter == 0);
	if (keys < 64)
		keys = 64;
	lines = (keys * KEY_FILTER_BITS_PER_KEY + 511) / 512;
	if (lines > UINT32_MAX / 4)
		lines = UINT32_MAX / 4;
	p = index_alloc(mt, (size_t) lines * LSM_BLOOM_LINE, LSM_BLOOM_LINE);
	if (p == NULL)
		return LSM_NOMEM;
	r->kk = (uint32_t) lsm_bloom_choose_k(KEY_FILTER_BITS_PER_KEY);
	r->kcap = keys;
	r->index_bytes += (size_t) lines * LSM_BLOOM_LINE;
	store64(&r->kfilter, (uint64_t) off_of(mt, p) << 32 | lines);
	return LSM_OK;
}

/* The key filter as published (f->lines NULL: none). */
static inline void
key_filter(const lsm_memtable *mt, lsm_bloom *f)
{
	uint64_t	kf = load64(&mt->r->kfilter);

	f->lines = kf ? at(mt, (mt_off) (kf >> 32)) : NULL;
	f->num_lines = (uint32_t) kf;
	f->k = (int) mt->r->kk;
}

bool
lsm_memtable_may_hold_key(const lsm_memtable *mt, uint64_t h)
{
	lsm_bloom	f;

	key_filter(mt, &f);
	if (f.lines == NULL)
		return lsm_memtable_entries(mt) > 0;
	return lsm_bloom_may_match_shared(&f, h);
}

bool
lsm_memtable_past_last(const lsm_memtable *mt, const void *key, size_t klen)
{
	mt_node    *head = node_at(mt, mt->r->head);
	mt_node    *last = node_at(mt, load_off(&mt->r->tail[0]));

	return last == head ||
		lsm_key_cmp(node_key(last), last->klen, key, klen) < 0;
}

void
lsm_memtable_prefetch_key(const lsm_memtable *mt, uint64_t h)
{
	lsm_bloom	f;

	key_filter(mt, &f);
	if (f.lines != NULL)
		lsm_bloom_prefetch(&f, h);
}

/*
 * The entries have outgrown the key filter: rebuilds it at twice the size
 * from the skip list (every version's key; a key's versions are adjacent,
 * so it is hashed once) and publishes it.  Out of room, the old filter
 * stays: fuller, it answers "maybe" more often but never "absent" for a key
 * it holds.
 */
static void
grow_key_filter(lsm_memtable *mt)
{
	mt_region  *r = mt->r;
	uint32_t	lines = (uint32_t) r->kfilter;
	uint8_t    *fresh;
	mt_node    *n,
			   *prev = NULL;

	r->kcap *= 2;
	if (lines > UINT32_MAX / 4 ||
		(fresh = index_alloc(mt, (size_t) lines * 2 * LSM_BLOOM_LINE,
							  LSM_BLOOM_LINE)) == NULL)
		return;
	for (n = next_of(mt, node_at(mt, r->head), 0); n != NULL;
		 prev = n, n = next_of(mt, n, 0))
	{
		if (prev != NULL && same_key(prev, n))
			continue;
		lsm_bloom_set_shared(fresh, lines * 2, (int) r->kk,
					  lsm_key_hash(node_key(n), n->klen));
	}
	r->index_bytes += (size_t) lines * 2 * LSM_BLOOM_LINE;
	store64(&r->kfilter, (uint64_t) off_of(mt, fresh) << 32 | (lines * 2));
}

/* ---------- value index ---------- */

static inline uint32_t
vtag(uint64_t h)
{
	return (uint32_t) (h ^ (h >> 32));
}

/* The slot of tag: the one holding it, or the empty one where it goes. */
static inline vslot *
vslot_find(vslot *slots, uint32_t mask, uint32_t tag)
{
	uint32_t	i = tag & mask;

	/* linear probing; the table is never more than 70% full */
	while (load_off(&slots[i].head) != 0 && slots[i].tag != tag)
		i = (i + 1) & mask;
	return &slots[i];
}

/*
 * Makes room in the value index for ntags more chains: a table at most 70%
 * full with all of them new, rebuilt at twice the size and published
 * otherwise.  false when the region is full (the index then stops, and
 * value searches scan this memtable).
 */
static bool
vindex_reserve(lsm_memtable *mt, uint32_t ntags)
{
	mt_region  *r = mt->r;
	uint64_t	vi = r->vindex,
				slots = (vi & UINT32_MAX) + 1,
				nslots = slots,
				i;
	vslot	   *old = at(mt, (mt_off) (vi >> 32)),
			   *fresh;

	if ((r->vused + ntags) * 10 <= slots * 7)
		return true;
	while ((r->vused + ntags) * 10 > nslots * 7)
		nslots *= 2;
	if (nslots > (UINT64_C(1) << 31) ||
		(fresh = index_alloc(mt, (size_t) nslots * sizeof(vslot), UNIT)) == NULL)
		return false;
	for (i = 0; i < slots; i++)
		if (old[i].head != 0)
			*vslot_find(fresh, (uint32_t) (nslots - 1), old[i].tag) = old[i];
	r->index_bytes += (size_t) nslots * sizeof(vslot);
	store64(&r->vindex, (uint64_t) off_of(mt, fresh) << 32 | (nslots - 1));
	return true;
}

/*
 * Sorts tags (insertion sort for the usual few fields) and drops repeats,
 * so that a row is on each of its chains once even if two of its fields
 * hold the same value (or values of one tag); returns how many are left.
 */
static uint32_t
unique_tags(uint64_t *hs, uint32_t n)
{
	uint32_t	i,
				j,
				out;

	if (n > 32)
		qsort(hs, n, sizeof(uint64_t), lsm_cmp_u64);
	else
		for (i = 1; i < n; i++)
		{
			uint64_t	t = hs[i];

			for (j = i; j > 0 && hs[j - 1] > t; j--)
				hs[j] = hs[j - 1];
			hs[j] = t;
		}
	for (i = 0, out = 0; i < n; i++)
		if (out == 0 || hs[out - 1] != hs[i])
			hs[out++] = hs[i];
	return out;
}

/*
 * The first half of adding a row: its value hashes into the value filter,
 * and room in the value index for its distinct tags, which it leaves in
 * mt->vhashes (*nh of them).  LSM_NOMEM (out of memory for the hashes)
 * leaves the rows as they were but for bits of the value filter.
 */
static int
index_values(lsm_memtable *mt, const uint8_t *row, size_t rowlen,
			 uint32_t *nh)
{
	mt_region  *r = mt->r;
	uint64_t   *hs;
	size_t		i,
				n;

	*nh = 0;
	mt->vhashes.len = 0;
	if (lsm_value_hashes(row, rowlen, r->unindexed, &mt->vhashes) != LSM_OK)
		return LSM_NOMEM;
	n = mt->vhashes.len / sizeof(uint64_t);
	hs = (uint64_t *) mt->vhashes.data;
	for (i = 0; i < n; i++)
		lsm_bloom_set_shared(at(mt, r->vlines), lsm_vfilter_lines(r->vbits),
					  (int) r->vk, hs[i]);
	if (n == 0 || r->vfull)
		return LSM_OK;
	for (i = 0; i < n; i++)
		hs[i] = vtag(hs[i]);
	*nh = unique_tags(hs, (uint32_t) n);
	if (!vindex_reserve(mt, *nh))
	{
		/* out of room: value searches scan this memtable from now on */
		__atomic_store_n(&r->vfull, 1, __ATOMIC_RELEASE);
		*nh = 0;
	}
	return LSM_OK;
}

/*
 * The second half: links node n into the chains of its nh tags (in
 * mt->vhashes), each record written before the slot points to it.
 */
static void
link_values(lsm_memtable *mt, mt_node *n, uint32_t nh)
{
	mt_region  *r = mt->r;
	const uint64_t *hs = (const uint64_t *) mt->vhashes.data;
	uint64_t	vi = r->vindex;
	vslot	   *slots = at(mt, (mt_off) (vi >> 32));
	vrec	   *recs;
	uint32_t	i;

	if (nh == 0)
		return;
	recs = index_alloc(mt, (size_t) nh * sizeof(vrec), UNIT);
	if (recs == NULL)
	{
		__atomic_store_n(&r->vfull, 1, __ATOMIC_RELEASE);
		return;
	}
	r->index_bytes += (size_t) nh * sizeof(vrec);
	for (i = 0; i < nh; i++)
	{
		vslot	   *sl = vslot_find(slots, (uint32_t) (vi & UINT32_MAX),
										(uint32_t) hs[i]);

		recs[i].node = off_of(mt, n);
		recs[i].next = sl->head;
		if (sl->head == 0)
		{
			sl->tag = (uint32_t) hs[i];
			r->vused++;
		}
		store_off(&sl->head, off_of(mt, &recs[i]));
	}
}

int
lsm_memtable_value_rows(const lsm_memtable *mt, uint64_t h, uint64_t snap,
						lsm_memtable_row_fn fn, void *arg)
{
	const mt_region *r = mt->r;
	uint64_t	vi = load64(&r->vindex);
	vslot	   *sl;
	mt_off		o;

	if (vi == 0 || __atomic_load_n(&r->vfull, __ATOMIC_ACQUIRE))
		return LSM_NOTFOUND;
	sl = vslot_find(at(mt, (mt_off) (vi >> 32)), (uint32_t) (vi & UINT32_MAX),
					vtag(h));
	for (o = load_off(&sl->head); o != 0;)
	{
		const vrec *rec = at(mt, o);
		const mt_node *n = node_at(mt, rec->node);
		int			rc;

		o = rec->next;
		if ((n->tag >> 8) > snap || (n->tag & 0xff) != LSM_KIND_PUT)
			continue;

		/*
		 * The newest version of its key in the snapshot?  Surely if it is
		 * the newest of all (the usual case); else a search tells.
		 */
		if (shadowed_of(n) &&
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
	return (size_t) __atomic_load_n(&mt->r->index_bytes, __ATOMIC_RELAXED);
}

/* ---------- adding and finding ---------- */

/*
 * Whether (key, tag) goes right after the node the writer last inserted
 * through this handle, with no node between them: then fills prev[0 ..
 * levels) from the finger, the last node before the key on each level,
 * and the insert needs no descent.  So a load in ascending runs, which
 * jumps now and then (two interleaved ascending streams, heap pages filled
 * out of order) and so rarely passes the tail, costs a comparison or two
 * per level of the new node.  Every level is checked (before the key, the
 * next one not), so a finger that another writer's inserts made stale
 * only falls back to the descent.
 */
static bool
at_finger(lsm_memtable *mt, const void *key, size_t klen, uint64_t tag,
		  int levels, mt_node **prev)
{
	mt_node    *head = node_at(mt, mt->r->head);
	int			l;

	if (mt->finger.mt_id != mt->id)
		return false;
	for (l = 0; l < levels; l++)
	{
		mt_node    *x = node_at(mt, mt->finger.prev[l]),
				   *n;

		if (x == NULL || x->height <= l ||
			(x != head && node_cmp(x, key, klen, tag) >= 0))
			return false;
		n = next_of(mt, x, l);
		if (n != NULL && node_cmp(n, key, klen, tag) < 0)
			return false;
		prev[l] = x;
	}
	return true;
}

int
lsm_memtable_reserve(lsm_memtable *mt, size_t entries, size_t bytes,
					 lsm_err *e)
{
	mt_region  *r = mt->r;
	size_t		must,
				need,
				kf = (size_t) (uint32_t) r->kfilter * LSM_BLOOM_LINE,
				vi = r->vindex ? ((size_t) (r->vindex & UINT32_MAX) + 1) *
		sizeof(vslot) : 0;

	/*
	 * What the entries must have: nodes (header, the tallest next[],
	 * alignment) and their bytes (a prepared batch takes less).  Their
	 * blocks are allocated now.  The batch fits only with its worst case
	 * for the index too (value index records, at most one per 2 bytes of
	 * a row: 4x; a key filter and a hash table that double, twice), which
	 * is only address space until index_alloc uses it.
	 */
	must = entries * (sizeof(mt_node) + MAX_HEIGHT * sizeof(mt_off) + UNIT) +
		bytes;
	need = must + (r->vindex ? bytes * 4 + entries * UNIT : 0) +
		(kf + vi) * 6 + LSM_BLOOM_LINE * 2;
	if (need > r->size || r->used + need > r->size)
		return lsm_err_set(e, LSM_NOMEM,
						   "the memtable has no room for a batch of %zu bytes",
						   bytes);
	if (!region_grow(mt, r->used + must, e))
		return e && e->rc != LSM_OK ? e->rc :
			lsm_err_set(e, LSM_NOMEM, "out of memory for the memtable");
	mt->promised = must;
	return LSM_OK;
}

int
lsm_memtable_add(lsm_memtable *mt, uint64_t seq, int kind,
				 const void *key, size_t klen, const void *val, size_t vlen)
{
	return lsm_memtable_add_at(mt, seq, kind, key, klen, val, vlen, NULL);
}

int
lsm_memtable_add_at(lsm_memtable *mt, uint64_t seq, int kind,
					const void *key, size_t klen, const void *val,
					size_t vlen, const lsm_memtable_hint *hint)
{
	mt_region  *r = mt->r;
	mt_node    *prev[MAX_HEIGHT];
	mt_node    *n,
			   *next0;
	uint64_t	tag = seq << 8 | (uint64_t) kind;
	uint32_t	nh = 0;
	size_t		size;
	int			h = random_height(mt);
	int			height = (int) r->height;
	int			located = height;	/* levels of prev[] found */
	int			i;

	LSM_ASSERT(mt->writable);
	/* the value filter and index first: a failure leaves the rows as they were */
	if (r->vlines && kind == LSM_KIND_PUT &&
		index_values(mt, val, vlen, &nh) != LSM_OK)
		return LSM_NOMEM;
	size = sizeof(mt_node) + (size_t) h * sizeof(mt_off) + klen + vlen;
	n = entry_alloc(mt, size);
	if (n == NULL)
		return LSM_NOMEM;
	n->tag = tag;
	n->klen = (uint32_t) klen;
	n->vlen = (uint32_t) vlen;
	n->height = (uint16_t) h;
	memcpy((uint8_t *) node_key(n), key, klen);
	if (vlen)
		memcpy((uint8_t *) node_val(n), val, vlen);
	if (r->kfilter)
	{
		lsm_bloom	f;

		/* tombstones too: a get must find them and stop there */
		if (r->entries >= r->kcap)
			grow_key_filter(mt);
		key_filter(mt, &f);
		lsm_bloom_set_shared((uint8_t *) f.lines, f.num_lines, f.k,
					  lsm_key_hash(key, klen));
	}
	lsm_env_crash_point();		/* written, not linked (tests) */
	if (hint != NULL && hint->mt_id == mt->id)
		find_ge_from(mt, key, klen, tag, prev, hint);
	else if (at_finger(mt, key, klen, tag, h < height ? h : height, prev))
		located = h < height ? h : height;
	else
		find_ge_from(mt, key, klen, tag, prev, NULL);
	if (h > height)
	{
		for (i = height; i < h; i++)
			prev[i] = node_at(mt, r->head);
	}
	/* the node's own links, then bottom-up into the list */
	for (i = 0; i < h; i++)
		n->next[i] = prev[i]->next[i];
	next0 = node_at(mt, n->next[0]);
	/* versions of one key are adjacent, newest first */
	if (prev[0] != node_at(mt, r->head) && same_key(prev[0], n))
		n->shadowed = 1;
	if (h > height)
		__atomic_store_n(&r->height, (uint32_t) h, __ATOMIC_RELEASE);
	for (i = 0; i < h; i++)
	{
		store_off(&prev[i]->next[i], off_of(mt, n));
		if (n->next[i] == 0)
			store_off(&r->tail[i], off_of(mt, n));
		if (i == 0)
			lsm_env_crash_point();	/* linked on level 0 only (tests) */
	}
	if (next0 != NULL && same_key(next0, n))
		__atomic_store_n(&next0->shadowed, 1, __ATOMIC_RELAXED);
	/* the next insert of a nearly ascending load goes after it */
	mt->finger.mt_id = mt->id;
	for (i = 0; i < h || i < located; i++)
		mt->finger.prev[i] = off_of(mt, i < h ? n : prev[i]);
	link_values(mt, n, nh);
	__atomic_store_n(&r->entry_bytes,
					 r->entry_bytes + ((size + UNIT - 1) & ~(size_t) (UNIT - 1)),
					 __ATOMIC_RELAXED);
	__atomic_store_n(&r->entries, r->entries + 1, __ATOMIC_RELEASE);
	return LSM_OK;
}

/* ---------- prepared batches ---------- */

static mt_prep *
prep_at(const lsm_memtable *mt, mt_off o)
{
	return o ? (mt_prep *) at(mt, o) : NULL;
}

/*
 * The undecided batch of owner.  The list holds the undecided ones only: a
 * decision unlinks its batch (a reader that stands on it goes on from its
 * next, which stays), so that it stays as short as the transactions in
 * flight.
 */
static mt_prep *
prep_of(const lsm_memtable *mt, uint64_t owner)
{
	mt_prep    *p;

	for (p = prep_at(mt, load_off(&mt->r->prepared)); p != NULL;
		 p = prep_at(mt, load_off(&p->next)))
		if (p->owner == owner)
			return p;
	return NULL;
}

int
lsm_memtable_add_prepared(lsm_memtable *mt, uint64_t owner, int type,
						  const uint8_t *batch, size_t len)
{
	mt_region  *r = mt->r;
	mt_prep    *p;

	LSM_ASSERT(mt->writable);
	if (prep_of(mt, owner) != NULL)
		return LSM_OK;			/* a record applied again: once is enough */
	p = entry_alloc(mt, sizeof(mt_prep) + len);
	if (p == NULL)
		return LSM_NOMEM;
	p->owner = owner;
	p->type = (uint32_t) type;
	p->next = r->prepared;
	p->len = len;
	memcpy(p->batch, batch, len);
	store_off(&r->prepared, off_of(mt, p));
	__atomic_store_n(&r->undecided, r->undecided + 1, __ATOMIC_RELEASE);
	store64(&r->prep_changes, r->prep_changes + 1);
	return LSM_OK;
}

bool
lsm_memtable_decide_prepared(lsm_memtable *mt, uint64_t owner)
{
	mt_region  *r = mt->r;
	mt_off	   *link = &r->prepared;
	mt_prep    *p;

	LSM_ASSERT(mt->writable);
	for (p = prep_at(mt, *link); p != NULL; link = &p->next, p = prep_at(mt, *link))
	{
		if (p->owner != owner)
			continue;
		__atomic_store_n(&p->decided, 1, __ATOMIC_RELEASE);
		store_off(link, p->next);
		__atomic_store_n(&r->undecided, r->undecided - 1, __ATOMIC_RELEASE);
		store64(&r->prep_changes, r->prep_changes + 1);
		return true;
	}
	return false;
}

int
lsm_memtable_prepared(const lsm_memtable *mt, uint64_t owner, int *type,
					  const uint8_t **batch, size_t *len)
{
	mt_prep    *p = prep_of(mt, owner);

	if (p == NULL || __atomic_load_n(&p->decided, __ATOMIC_ACQUIRE))
		return LSM_NOTFOUND;
	*type = (int) p->type;
	*batch = p->batch;
	*len = (size_t) p->len;
	return LSM_OK;
}

size_t
lsm_memtable_undecided(const lsm_memtable *mt, lsm_memtable_prepared_fn fn,
					   void *arg)
{
	mt_prep    *p;
	size_t		n = 0;

	if (__atomic_load_n(&mt->r->undecided, __ATOMIC_ACQUIRE) == 0)
		return 0;
	for (p = prep_at(mt, load_off(&mt->r->prepared)); p != NULL;
		 p = prep_at(mt, load_off(&p->next)))
	{
		if (__atomic_load_n(&p->decided, __ATOMIC_ACQUIRE))
			continue;
		if (fn)
			fn(arg, p->owner, (int) p->type, p->batch, (size_t) p->len);
		n++;
	}
	return n;
}

uint64_t
lsm_memtable_prepared_changes(const lsm_memtable *mt)
{
	return load64(&mt->r->prep_changes);
}

bool
lsm_memtable_get(const lsm_memtable *mt, const void *key, size_t klen,
				 uint64_t snap, int *kind, const uint8_t **val, size_t *vlen,
				 uint64_t *seq)
{
	mt_node    *n;

	if (lsm_memtable_entries(mt) == 0)
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
	return (size_t) __atomic_load_n(&mt->r->entry_bytes, __ATOMIC_RELAXED);
}

size_t
lsm_memtable_arena_bytes(const lsm_memtable *mt)
{
	return (size_t) __atomic_load_n(&mt->r->used, __ATOMIC_RELAXED);
}

size_t
lsm_memtable_entries(const lsm_memtable *mt)
{
	return (size_t) __atomic_load_n(&mt->r->entries, __ATOMIC_ACQUIRE);
}

bool
lsm_memtable_check(const lsm_memtable *mt)
{
	const mt_region *r = mt->r;
	mt_node    *head = node_at(mt, r->head);
	int			l;

	for (l = 0; l < MAX_HEIGHT; l++)
	{
		mt_node    *x = head;
		size_t		steps = 0;

		while (x->next[l] != 0)
		{
			mt_node    *n = node_at(mt, x->next[l]);

			if ((size_t) x->next[l] * UNIT >= r->used || ++steps > r->entries)
				return false;
			if (x != head && node_cmp(x, node_key(n), n->klen, n->tag) >= 0)
				return false;
			if (l == 0 && n->shadowed != (x != head && same_key(x, n)))
				return false;
			x = n;
		}
		if (node_at(mt, r->tail[l]) != x)
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
		n = next_of(it->mt, n, 0);
	it->node = n;
	it->base.valid = n != NULL;
	if (n)
		lsm_iiter_stand(&it->base, node_key(n), n->klen, node_val(n),
						n->vlen, n->tag >> 8,
						(n->tag & 0xff) == LSM_KIND_DEL);
}

static void
mt_iter_seek(lsm_iiter *base, const uint8_t *key, size_t klen)
{
	mt_iter    *it = (mt_iter *) base;

	if (key == NULL)
		mt_iter_settle(it, next_of(it->mt, node_at(it->mt, it->mt->r->head), 0));
	else
		mt_iter_settle(it, find_ge(it->mt, key, klen, snap_tag(it->snap), NULL));
}

static void
mt_iter_next(lsm_iiter *base)
{
	mt_iter    *it = (mt_iter *) base;
	mt_node    *n = next_of(it->mt, it->node, 0);

	/* skip older versions of the current key */
	while (n != NULL && same_key(n, it->node))
		n = next_of(it->mt, n, 0);
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

		if (v != NULL && same_key(v, n))
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
	{
		mt_off		last = load_off(&mt->r->tail[0]);

		mt_iter_settle_back(it, last != mt->r->head ? node_at(mt, last) : NULL);
	}
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
	mt_iter_seek_back, mt_iter_prev, mt_iter_destroy, NULL};

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

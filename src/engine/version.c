/*
 * version.c
 *		Version bookkeeping and manifest encoding.  See version.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "env.h"
#include "hierarchy.h"
#include "memtable.h"				/* LSM_MAX_SEQUENCE */
#include "version.h"

lsm_version *
lsm_version_new(void)
{
	lsm_version *v = calloc(1, sizeof(lsm_version));

	if (v)
	{
		v->refs = 1;
		v->next_file = 1;
	}
	return v;
}

void
lsm_version_ref(lsm_version *v)
{
	v->refs++;
}

void
lsm_version_unref(lsm_version *v)
{
	int			l,
				i;

	if (v == NULL || --v->refs > 0)
		return;
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		for (i = 0; i < v->nfiles[l]; i++)
			lsm_file_unref(v->files[l][i]);
		free(v->files[l]);
		free(v->fence[l]);
		free(v->sfence[l]);
		free(v->filters[l]);
	}
	lsm_hnode_unref(v->hroot);
	free(v);
}

static int
cmp_l0(const void *a, const void *b)
{
	const lsm_file *x = *(lsm_file *const *) a;
	const lsm_file *y = *(lsm_file *const *) b;

	if (x->meta.max_seq != y->meta.max_seq)
		return x->meta.max_seq > y->meta.max_seq ? -1 : 1;
	return (x->meta.number < y->meta.number) - (x->meta.number > y->meta.number);
}

static int
cmp_smallest(const void *a, const void *b)
{
	const lsm_file *x = *(lsm_file *const *) a;
	const lsm_file *y = *(lsm_file *const *) b;

	return lsm_key_cmp(x->meta.smallest, x->meta.smallest_len,
					   y->meta.smallest, y->meta.smallest_len);
}

/* Rebuilds the fences of level l (>= 1) after its files changed. */
static void
build_fences(lsm_version *v, int l)
{
	lsm_file  **files = v->files[l];
	int			n = v->nfiles[l],
				i;
	size_t		skip;

	free(v->fence[l]);
	free(v->sfence[l]);
	v->fence[l] = v->sfence[l] = NULL;
	v->fence_skip[l] = 0;
	if (n == 0)
		return;
	v->fence[l] = malloc(sizeof(uint64_t) * n);
	v->sfence[l] = malloc(sizeof(uint64_t) * n);
	if (v->fence[l] == NULL || v->sfence[l] == NULL)
	{
		free(v->fence[l]);
		free(v->sfence[l]);
		v->fence[l] = v->sfence[l] = NULL;
		return;
	}
	/* sorted keys: the prefix common to all is the first's and last's */
	skip = 0;
	while (skip < files[0]->meta.largest_len &&
		   skip < files[n - 1]->meta.largest_len &&
		   files[0]->meta.largest[skip] == files[n - 1]->meta.largest[skip])
		skip++;
	for (i = 0; i < n; i++)
	{
		const lsm_table_meta *m = &files[i]->meta;

		v->fence[l][i] = lsm_key_fence(m->largest, m->largest_len, skip);
		/* a smallest key outside the prefix is below every key inside it */
		v->sfence[l][i] = (m->smallest_len >= skip &&
						   memcmp(m->smallest, files[0]->meta.largest, skip) == 0) ?
			lsm_key_fence(m->smallest, m->smallest_len, skip) : 0;
	}
	v->fence_skip[l] = skip;
}

void
lsm_version_sort(lsm_version *v)
{
	int			l,
				i;

	if (v->nfiles[0] > 1)
		qsort(v->files[0], v->nfiles[0], sizeof(lsm_file *), cmp_l0);
	for (l = 1; l < LSM_MAX_LEVELS; l++)
	{
		if (v->nfiles[l] > 1)
			qsort(v->files[l], v->nfiles[l], sizeof(lsm_file *), cmp_smallest);
		build_fences(v, l);
	}
	/* every commit asks whether a compaction is due (urgent_level) */
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		v->level_bytes[l] = 0;
		for (i = 0; i < v->nfiles[l]; i++)
			v->level_bytes[l] += v->files[l][i]->meta.size;
	}
}

lsm_version *
lsm_version_edit(const lsm_version *v, const uint64_t *drop, int ndrop,
				 lsm_file **add, int nadd, int add_level)
{
	lsm_version *n = lsm_version_new();
	int			l,
				i,
				j;

	if (n == NULL)
		return NULL;
	n->manifest_seq = v->manifest_seq;
	n->next_file = v->next_file;
	n->log_number = v->log_number;
	n->last_seq = v->last_seq;
	n->value_filter_bits = v->value_filter_bits;
	n->value_filter_hashes = v->value_filter_hashes;
	n->hierarchy_order = v->hierarchy_order;
	n->value_unindexed = v->value_unindexed;
	n->hroot = v->hroot;
	if (n->hroot)
		lsm_hnode_ref(n->hroot);
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		int			cap = v->nfiles[l] + (l == add_level ? nadd : 0);

		if (cap == 0)
			continue;
		n->files[l] = malloc(sizeof(lsm_file *) * cap);
		if (n->files[l] == NULL)
		{
			lsm_version_unref(n);
			return NULL;
		}
		for (i = 0; i < v->nfiles[l]; i++)
		{
			lsm_file   *f = v->files[l][i];
			bool		dropped = false;

			for (j = 0; j < ndrop; j++)
				if (drop[j] == f->meta.number)
					dropped = true;
			if (!dropped)
			{
				lsm_file_ref(f);
				n->files[l][n->nfiles[l]++] = f;
			}
		}
		if (l == add_level)
			for (i = 0; i < nadd; i++)
			{
				lsm_file_ref(add[i]);
				n->files[l][n->nfiles[l]++] = add[i];
			}
	}
	lsm_version_sort(n);
	return n;
}

uint64_t
lsm_version_level_bytes(const lsm_version *v, int level)
{
	return v->level_bytes[level];
}

int
lsm_version_find_file(const lsm_version *v, int level, const void *key,
					  size_t klen)
{
	lsm_file  **files = v->files[level];
	const uint64_t *fence = v->fence[level];
	size_t		skip = v->fence_skip[level];
	int			n = v->nfiles[level],
				lo,
				c;
	uint64_t	kf;

	if (fence == NULL || n == 0)
		return lsm_files_find(files, n, key, klen);
	/* outside the common prefix, the key is below or above every file */
	c = lsm_key_cmp(key, klen < skip ? klen : skip, files[0]->meta.largest,
					skip);
	if (c != 0 || klen < skip)
		return c <= 0 ? 0 : n;
	kf = lsm_key_fence(key, klen, skip);
	{
		/* branch-free lower bound: random keys mispredict every branch */
		const uint64_t *base = fence;
		int			len = n;

		while (len > 1)
		{
			int			half = len / 2;

			base = base[half - 1] < kf ? base + half : base;
			len -= half;
		}
		lo = (int) (base - fence) + (*base < kf);
	}
	/* equal fences: the keys may still differ further on */
	while (lo < n && fence[lo] == kf &&
		   lsm_key_cmp(files[lo]->meta.largest, files[lo]->meta.largest_len,
					   key, klen) < 0)
		lo++;
	return lo;
}

int
lsm_version_locate(const lsm_version *v, int level, const void *key,
				   size_t klen)
{
	const lsm_table_meta *m;
	int			i = lsm_version_find_file(v, level, key, klen);
	size_t		skip;
	uint64_t	kf;

	if (i >= v->nfiles[level])
		return -1;
	m = &v->files[level][i]->meta;
	skip = v->fence_skip[level];
	if (v->sfence[level] == NULL || klen < skip ||
		memcmp(key, v->files[level][0]->meta.largest, skip) != 0)
		return lsm_key_cmp(m->smallest, m->smallest_len, key, klen) <= 0 ? i : -1;
	/* the key shares the level's common prefix: fences compare like keys */
	kf = lsm_key_fence(key, klen, skip);
	if (kf != v->sfence[level][i])
		return kf > v->sfence[level][i] ? i : -1;
	return lsm_key_cmp(m->smallest, m->smallest_len, key, klen) <= 0 ? i : -1;
}

int
lsm_version_bind_filters(lsm_version *v)
{
	int			l,
				i;

	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		free(v->filters[l]);
		v->filters[l] = NULL;
		if (v->nfiles[l] == 0)
			continue;
		v->filters[l] = calloc(v->nfiles[l], sizeof(lsm_bloom));
		if (v->filters[l] == NULL)
			return LSM_NOMEM;
		for (i = 0; i < v->nfiles[l]; i++)
			if (v->files[l][i]->table)
				lsm_table_filter(v->files[l][i]->table, &v->filters[l][i]);
	}
	return LSM_OK;
}

int
lsm_version_get(const lsm_version *v, const void *key, size_t klen,
				uint64_t h, lsm_table_hit *hit, lsm_stats *ctr, lsm_err *e)
{
	int			l,
				i,
				rc;

	for (i = 0; i < v->nfiles[0]; i++)
	{
		if (!lsm_file_overlaps(v->files[0][i], key, klen, key, klen))
			continue;
		rc = lsm_version_probe(v, 0, i, key, klen, h, hit, ctr, e);
		if (rc != LSM_NOTFOUND)
			return rc;
	}
	for (l = 1; l < LSM_MAX_LEVELS; l++)
	{
		if (v->nfiles[l] == 0 || (i = lsm_version_locate(v, l, key, klen)) < 0)
			continue;
		rc = lsm_version_probe(v, l, i, key, klen, h, hit, ctr, e);
		if (rc != LSM_NOTFOUND)
			return rc;
	}
	return LSM_NOTFOUND;
}

bool
lsm_version_names(const lsm_version *v, lsm_fkind kind, uint64_t number)
{
	int			l,
				i;

	switch (kind)
	{
		case LSM_F_TABLE:
			for (l = 0; l < LSM_MAX_LEVELS; l++)
				for (i = 0; i < v->nfiles[l]; i++)
					if (v->files[l][i]->meta.number == number)
						return true;
			return false;
		case LSM_F_LOG:
		case LSM_F_MEM:
			return number == v->log_number;
		case LSM_F_NODE:
			return lsm_hier_has_node(v->hroot, number);
		case LSM_F_MEM_TMP:
		case LSM_F_OTHER:
			break;
	}
	return false;
}

/* ---------- manifest ---------- */

static int
put_key(lsm_buf *b, const uint8_t *k, size_t n)
{
	if (lsm_buf_append_varint(b, n) != LSM_OK)
		return LSM_NOMEM;
	return lsm_buf_append(b, k, n);
}

int
lsm_manifest_encode(const lsm_version *v, lsm_buf *b)
{
	uint8_t		hdr[16] = {0};
	uint8_t		ck[4];
	int			l,
				i;
	uint32_t	format = LSM_MANIFEST_FORMAT;
	size_t		base = b->len;

	/* format 3 only while an ingested table needs its global sequence */
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		for (i = 0; i < v->nfiles[l]; i++)
			if (v->files[l][i]->meta.global_seq != 0)
				format = LSM_MANIFEST_FORMAT_GSEQ;

	/* header placeholder, filled in below */
	if (lsm_buf_append(b, hdr, sizeof(hdr)) != LSM_OK)
		return LSM_NOMEM;
	{
		uint64_t	fields[] = {v->manifest_seq, v->next_file, v->log_number,
			v->last_seq, v->value_filter_bits,
			(uint64_t) v->value_filter_hashes,
		(uint64_t) v->hierarchy_order, LSM_MAX_LEVELS};

		for (i = 0; i < (int) (sizeof(fields) / sizeof(fields[0])); i++)
			if (lsm_buf_append_varint(b, fields[i]) != LSM_OK)
				return LSM_NOMEM;
	}
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		if (lsm_buf_append_varint(b, (uint64_t) v->nfiles[l]) != LSM_OK)
			return LSM_NOMEM;
		for (i = 0; i < v->nfiles[l]; i++)
		{
			const lsm_table_meta *m = &v->files[l][i]->meta;
			uint64_t	fields[] = {m->number, m->size, m->entries, m->deletions,
			m->min_seq, m->max_seq, m->filter_bytes, m->value_filter_bytes};
			int			j;

			for (j = 0; j < (int) (sizeof(fields) / sizeof(fields[0])); j++)
				if (lsm_buf_append_varint(b, fields[j]) != LSM_OK)
					return LSM_NOMEM;
			if (format >= LSM_MANIFEST_FORMAT_GSEQ &&
				lsm_buf_append_varint(b, m->global_seq) != LSM_OK)
				return LSM_NOMEM;
			if (put_key(b, m->smallest, m->smallest_len) != LSM_OK ||
				put_key(b, m->largest, m->largest_len) != LSM_OK)
				return LSM_NOMEM;
		}
	}
	if (lsm_buf_append_varint(b, v->value_unindexed) != LSM_OK ||
		lsm_hier_encode(v->hroot, b) != LSM_OK)
		return LSM_NOMEM;
	lsm_put_u64(b->data + base, LSM_MANIFEST_MAGIC);
	lsm_put_u32(b->data + base + 8, format);
	lsm_put_u32(b->data + base + 12, (uint32_t) (b->len - base - 16));
	lsm_put_u32(ck, lsm_checksum(b->data + base + 16, b->len - base - 16));
	return lsm_buf_append(b, ck, 4);
}

int
lsm_manifest_write(const char *dir, const lsm_version *v, bool *switched,
				   lsm_err *e)
{
	lsm_buf		b = {0};
	char		tmp[4096],
				path[4096];
	int			fd = -1;
	int			rc;

	if (lsm_manifest_encode(v, &b) != LSM_OK)
	{
		lsm_buf_free(&b);
		return LSM_NOMEM_ERR(e);
	}
	snprintf(tmp, sizeof(tmp), "%s/MANIFEST.tmp", dir);
	snprintf(path, sizeof(path), "%s/MANIFEST", dir);
	rc = lsm_env_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fd, e);
	if (rc == LSM_OK)
		rc = lsm_env_write(fd, b.data, b.len, "MANIFEST.tmp", e);
	/* invariant (2): the new manifest is durable before it is switched in */
	if (rc == LSM_OK)
		rc = lsm_env_fsync(fd, "MANIFEST.tmp", e);
	lsm_env_close(fd);
	if (rc == LSM_OK)
		rc = lsm_env_rename(tmp, path, e);
	if (rc == LSM_OK && switched)
		*switched = true;
	/* invariant (3): the switch is durable before anything relies on it */
	if (rc == LSM_OK)
		rc = lsm_env_fsync_dir(dir, e);
	if (rc != LSM_OK && fd >= 0 && !(switched && *switched))
		(void) lsm_env_unlink(tmp, NULL);
	lsm_buf_free(&b);
	return rc;
}

/* ---------- manifest reading ---------- */

/*
 * A manifest being decoded: the whole file, the position in its payload,
 * and what names it in messages.  Every value is checked before anything
 * is sized, indexed or looped by it; an error says what is wrong at which
 * offset of the file.
 */
typedef struct mreader
{
	const uint8_t *buf;
	const uint8_t *p;
	const uint8_t *end;			/* end of the payload */
	const char *name;
	lsm_err    *e;
} mreader;

static int	malformed_at(mreader *r, int line, const uint8_t *at,
						 const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/*
 * Records that the manifest is malformed at position at (of r->buf): what
 * (printf-style) says how.  Returns LSM_CORRUPTION.
 */
static int
malformed_at(mreader *r, int line, const uint8_t *at, const char *fmt,...)
{
	char		what[256];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return lsm_err_corrupt_at(r->e, __FILE__, line,
							  "malformed manifest \"%s\" at offset %zu: %s",
							  r->name, (size_t) (at - r->buf), what);
}

#define MALFORMED(r, at, ...) malformed_at((r), __LINE__, (at), __VA_ARGS__)

/* Reads the next varint into *v; what names it in the error. */
static int
get_u64(mreader *r, uint64_t *v, const char *what)
{
	const uint8_t *q = lsm_get_varint(r->p, r->end, v);

	if (q == NULL)
		return MALFORMED(r, r->p, "%s is truncated", what);
	r->p = q;
	return LSM_OK;
}

/* Reads a key (length, bytes) into a new allocation *k of *n bytes. */
static int
get_key(mreader *r, uint8_t **k, size_t *n, const char *what)
{
	const uint8_t *at = r->p;
	uint64_t	len;
	int			rc = get_u64(r, &len, what);

	if (rc != LSM_OK)
		return rc;
	if (len > LSM_MAX_KEY_LEN || len > (uint64_t) (r->end - r->p))
		return MALFORMED(r, at, "%s of %llu bytes does not fit", what,
						 (unsigned long long) len);
	*k = lsm_memdup(r->p, len);
	if (*k == NULL)
		return LSM_NOMEM_ERR(r->e);
	*n = len;
	r->p += len;
	return LSM_OK;
}

/*
 * Checks the store's value filter parameters m, k and d (read at position
 * at) against the bounds lsm_open applies to options (vfilter.h,
 * hierarchy.h).  A format 1 manifest stored the options as given and never
 * used them: they are normalised first, as create_store (db.c) normalises
 * the options of a new store.
 */
static int
check_value_params(mreader *r, const uint8_t *at, uint32_t format,
				   uint64_t *m, uint64_t *k, uint64_t *d)
{
	if (format == 1)
	{
		if (*k == 0)
			*m = 0;
		else if (*m <= LSM_VFILTER_MAX_BITS)
			*m = (*m + 511) / 512 * 512;
		if (*m == 0)
			*k = 0;
		if (*d < LSM_HIER_MIN_ORDER)
			*d = LSM_HIER_MIN_ORDER;
	}
	if (*m % 512 != 0 || *m > LSM_VFILTER_MAX_BITS)
		return MALFORMED(r, at, "value_filter_bits %llu is not a multiple of 512 between 0 and %u",
						 (unsigned long long) *m, LSM_VFILTER_MAX_BITS);
	if ((*m == 0) != (*k == 0) || *k > LSM_VFILTER_MAX_HASHES)
		return MALFORMED(r, at, "value_filter_hashes %llu does not go with value_filter_bits %llu (1 to %d hashes, 0 for no filters)",
						 (unsigned long long) *k, (unsigned long long) *m,
						 LSM_VFILTER_MAX_HASHES);
	if (*d < LSM_HIER_MIN_ORDER || *d > LSM_HIER_MAX_ORDER)
		return MALFORMED(r, at, "hierarchy_order %llu is not between %d and %d",
						 (unsigned long long) *d, LSM_HIER_MIN_ORDER,
						 LSM_HIER_MAX_ORDER);
	return LSM_OK;
}

/* Reads the entry of one file; f->meta gets its fields. */
static int
get_file(mreader *r, uint32_t format, const lsm_version *v, lsm_file *f)
{
	static const char *const names[] = {"file number", "file size",
		"entry count", "deletion count", "min_seq", "max_seq",
	"filter_bytes", "value_filter_bytes", "global_seq"};
	const uint8_t *at = r->p;
	uint64_t	fl[9] = {0};
	int			nfl = format >= 3 ? 9 : format >= 2 ? 8 : 7;
	int			j,
				rc;

	for (j = 0; j < nfl; j++)
		if ((rc = get_u64(r, &fl[j], names[j])) != LSM_OK)
			return rc;
	f->meta.number = fl[0];
	f->meta.size = fl[1];
	f->meta.entries = fl[2];
	f->meta.deletions = fl[3];
	f->meta.min_seq = fl[4];
	f->meta.max_seq = fl[5];
	f->meta.filter_bytes = fl[6];
	f->meta.value_filter_bytes = fl[7];
	f->meta.global_seq = fl[8];
	if ((rc = get_key(r, &f->meta.smallest, &f->meta.smallest_len,
					  "smallest key")) != LSM_OK ||
		(rc = get_key(r, &f->meta.largest, &f->meta.largest_len,
					  "largest key")) != LSM_OK)
		return rc;
	if (f->meta.number == 0 || f->meta.number >= v->next_file)
		return MALFORMED(r, at, "file number %llu is not between 1 and next_file %llu",
						 (unsigned long long) f->meta.number,
						 (unsigned long long) v->next_file);
	if (f->meta.global_seq > v->last_seq)
		return MALFORMED(r, at, "global sequence %llu of file %llu is past last_seq %llu",
						 (unsigned long long) f->meta.global_seq,
						 (unsigned long long) f->meta.number,
						 (unsigned long long) v->last_seq);
	/* the sequences order level 0 and say which writes the file holds */
	if (f->meta.min_seq > f->meta.max_seq || f->meta.max_seq > v->last_seq)
		return MALFORMED(r, at, "min_seq %llu and max_seq %llu of file %llu are not in order below last_seq %llu",
						 (unsigned long long) f->meta.min_seq,
						 (unsigned long long) f->meta.max_seq,
						 (unsigned long long) f->meta.number,
						 (unsigned long long) v->last_seq);
	if (f->meta.global_seq != 0 &&
		(f->meta.min_seq != f->meta.global_seq ||
		 f->meta.max_seq != f->meta.global_seq))
		return MALFORMED(r, at, "min_seq %llu and max_seq %llu of file %llu are not its global sequence %llu",
						 (unsigned long long) f->meta.min_seq,
						 (unsigned long long) f->meta.max_seq,
						 (unsigned long long) f->meta.number,
						 (unsigned long long) f->meta.global_seq);
	if (f->meta.deletions > f->meta.entries)
		return MALFORMED(r, at, "deletion count %llu of file %llu is above its entry count %llu",
						 (unsigned long long) f->meta.deletions,
						 (unsigned long long) f->meta.number,
						 (unsigned long long) f->meta.entries);
	/* every table has a footer, and its filters are inside it */
	if (f->meta.size < LSM_SST_FOOTER ||
		f->meta.filter_bytes > f->meta.size - LSM_SST_FOOTER ||
		f->meta.value_filter_bytes >
		f->meta.size - LSM_SST_FOOTER - f->meta.filter_bytes)
		return MALFORMED(r, at, "file %llu of %llu bytes cannot hold a footer, filter_bytes %llu and value_filter_bytes %llu",
						 (unsigned long long) f->meta.number,
						 (unsigned long long) f->meta.size,
						 (unsigned long long) f->meta.filter_bytes,
						 (unsigned long long) f->meta.value_filter_bytes);
	/* a store without value filters has no table with one (nor leaves) */
	if (v->value_filter_bits == 0 && f->meta.value_filter_bytes != 0)
		return MALFORMED(r, at, "file %llu has value_filter_bytes %llu in a store without value filters",
						 (unsigned long long) f->meta.number,
						 (unsigned long long) f->meta.value_filter_bytes);
	if (lsm_key_cmp(f->meta.smallest, f->meta.smallest_len,
					f->meta.largest, f->meta.largest_len) > 0)
		return MALFORMED(r, at, "file %llu has its smallest key above its largest",
						 (unsigned long long) f->meta.number);
	return LSM_OK;
}

/*
 * Checks what spans the files of v: no file number twice, and the files of
 * each level >= 1 (sorted) disjoint.  at is where the files were read.
 */
static int
check_files(mreader *r, const uint8_t *at, const lsm_version *v)
{
	uint64_t   *numbers;
	size_t		n = 0,
				i;
	int			l;

	for (l = 0; l < LSM_MAX_LEVELS; l++)
		n += (size_t) v->nfiles[l];
	numbers = malloc(sizeof(uint64_t) * (n ? n : 1));
	if (numbers == NULL)
		return LSM_NOMEM_ERR(r->e);
	n = 0;
	for (l = 0; l < LSM_MAX_LEVELS; l++)
		for (i = 0; i < (size_t) v->nfiles[l]; i++)
			numbers[n++] = v->files[l][i]->meta.number;
	qsort(numbers, n, sizeof(uint64_t), lsm_cmp_u64);
	for (i = 1; i < n; i++)
		if (numbers[i] == numbers[i - 1])
		{
			uint64_t	dup = numbers[i];

			free(numbers);
			return MALFORMED(r, at, "file %llu is named twice",
							 (unsigned long long) dup);
		}
	free(numbers);
	for (l = 1; l < LSM_MAX_LEVELS; l++)
		for (i = 1; i < (size_t) v->nfiles[l]; i++)
		{
			const lsm_table_meta *a = &v->files[l][i - 1]->meta;
			const lsm_table_meta *b = &v->files[l][i]->meta;

			if (lsm_key_cmp(a->largest, a->largest_len, b->smallest,
							b->smallest_len) >= 0)
				return MALFORMED(r, at, "files %llu and %llu overlap in level %d",
								 (unsigned long long) a->number,
								 (unsigned long long) b->number, l);
		}
	return LSM_OK;
}

int
lsm_manifest_read(int fd, const char *name, lsm_version **out, lsm_err *e)
{
	struct stat st;
	uint8_t    *buf;
	int			rc;

	*out = NULL;
	if (fstat(fd, &st) != 0)
		return lsm_err_sys(e, errno, "could not stat \"%s\"", name);
	if (st.st_size < 20)
		return LSM_CORRUPT(e, "manifest \"%s\" is too short (%lld bytes)",
						   name, (long long) st.st_size);
	/* the length field bounds a good manifest to 4 GiB + 20 bytes */
	if ((uint64_t) st.st_size > (uint64_t) UINT32_MAX + 20)
		return LSM_CORRUPT(e, "manifest \"%s\" is too long (%lld bytes)",
						   name, (long long) st.st_size);
	buf = malloc(st.st_size);
	if (buf == NULL)
		return LSM_NOMEM_ERR(e);
	rc = lsm_env_pread(fd, buf, st.st_size, 0, name, e);
	if (rc == LSM_OK)
		rc = lsm_manifest_decode(buf, st.st_size, name, out, e);
	free(buf);
	return rc;
}

int
lsm_manifest_decode(const uint8_t *buf, size_t size, const char *name,
					lsm_version **out, lsm_err *e)
{
	static const char *const hdr_names[] = {"manifest_seq", "next_file",
		"log_number", "last_seq", "value_filter_bits", "value_filter_hashes",
	"hierarchy_order", "level count"};
	mreader		r;
	const uint8_t *params_at = NULL,
			   *seq_at = NULL,
			   *files_at;
	lsm_version *v = NULL;
	uint64_t	hdr[8];
	uint64_t	total_size = 0;
	uint32_t	len;
	uint32_t	format;
	size_t		min_file;
	int			rc;
	int			l,
				i;

	*out = NULL;
	if (size < 20)
		return LSM_CORRUPT(e, "manifest \"%s\" is too short (%zu bytes)",
						   name, size);
	len = lsm_get_u32(buf + 12);
	format = lsm_get_u32(buf + 8);
	if (lsm_get_u64(buf) != LSM_MANIFEST_MAGIC ||
		format < 1 || format > LSM_MANIFEST_FORMAT_GSEQ ||
		(uint64_t) len + 20 != (uint64_t) size ||
		lsm_checksum(buf + 16, len) != lsm_get_u32(buf + 16 + len))
	{
		rc = LSM_CORRUPT(e, "manifest \"%s\" fails its header or checksum check",
						 name);
		goto out;
	}
	r.buf = buf;
	r.p = buf + 16;
	r.end = r.p + len;
	r.name = name;
	r.e = e;
	v = lsm_version_new();
	if (v == NULL)
	{
		rc = LSM_NOMEM_ERR(e);
		goto out;
	}
	for (i = 0; i < 8; i++)
	{
		if (i == 3)
			seq_at = r.p;
		if (i == 4)
			params_at = r.p;
		if ((rc = get_u64(&r, &hdr[i], hdr_names[i])) != LSM_OK)
			goto out;
	}
	rc = check_value_params(&r, params_at, format, &hdr[4], &hdr[5], &hdr[6]);
	if (rc != LSM_OK)
		goto out;
	v->manifest_seq = hdr[0];
	v->next_file = hdr[1];
	v->log_number = hdr[2];
	v->last_seq = hdr[3];
	v->value_filter_bits = (uint32_t) hdr[4];
	v->value_filter_hashes = (int) hdr[5];
	v->hierarchy_order = (int) hdr[6];
	/* sequences are 56 bits (memtable.h): last_seq + 1 must still be one */
	if (v->last_seq > LSM_MAX_SEQUENCE)
	{
		rc = MALFORMED(&r, seq_at, "last_seq %llu is above %llu",
					   (unsigned long long) v->last_seq,
					   (unsigned long long) LSM_MAX_SEQUENCE);
		goto out;
	}
	if (v->log_number == 0 || v->log_number >= v->next_file)
	{
		rc = MALFORMED(&r, buf + 16, "log_number %llu is not between 1 and next_file %llu",
					   (unsigned long long) v->log_number,
					   (unsigned long long) v->next_file);
		goto out;
	}
	if (hdr[7] != LSM_MAX_LEVELS)
	{
		rc = MALFORMED(&r, r.p - 1, "%llu levels, not %d",
					   (unsigned long long) hdr[7], LSM_MAX_LEVELS);
		goto out;
	}
	files_at = r.p;
	/* get_file's fields (7, 8 or 9 varints) and two key lengths */
	min_file = (format >= 3 ? 9 : format >= 2 ? 8 : 7) + 2;
	for (l = 0; l < LSM_MAX_LEVELS; l++)
	{
		const uint8_t *at = r.p;
		uint64_t	n;

		if ((rc = get_u64(&r, &n, "file count")) != LSM_OK)
			goto out;
		/*
		 * every file takes a byte per field and per key length at least:
		 * all the files of a manifest (< 4 GiB) then number below INT_MAX
		 */
		if (n > (uint64_t) (r.end - r.p) / min_file)
		{
			rc = MALFORMED(&r, at, "%llu files in level %d do not fit",
						   (unsigned long long) n, l);
			goto out;
		}
		if (n == 0)
			continue;
		v->files[l] = calloc(n, sizeof(lsm_file *));
		if (v->files[l] == NULL)
		{
			rc = LSM_NOMEM_ERR(e);
			goto out;
		}
		for (i = 0; i < (int) n; i++)
		{
			lsm_file   *f = lsm_file_new();
			const uint8_t *fat = r.p;

			if (f == NULL)
			{
				rc = LSM_NOMEM_ERR(e);
				goto out;
			}
			v->files[l][v->nfiles[l]++] = f;
			if ((rc = get_file(&r, format, v, f)) != LSM_OK)
				goto out;
			/* the byte totals of the levels (lsm_version_sort) */
			if (f->meta.size > UINT64_MAX - total_size)
			{
				rc = MALFORMED(&r, fat, "the sizes of the files add up past 2^64 at file %llu of level %d",
							   (unsigned long long) f->meta.number, l);
				goto out;
			}
			total_size += f->meta.size;
		}
	}
	lsm_version_sort(v);
	if ((rc = check_files(&r, files_at, v)) != LSM_OK)
		goto out;
	if (format >= 2)
	{
		const uint8_t *at;

		rc = get_u64(&r, &v->value_unindexed, "value_unindexed");
		if (rc != LSM_OK)
			goto out;
		at = r.p;
		rc = lsm_hier_decode(&r.p, r.end, v, &v->hroot, e);
		if (rc == LSM_CORRUPTION)
		{
			char		what[LSM_ERRMSG_SIZE];

			memcpy(what, e->msg, sizeof(what));
			rc = MALFORMED(&r, at, "hierarchy: %s", what);
		}
		if (rc != LSM_OK)
			goto out;
	}
	if (r.p != r.end)
	{
		rc = MALFORMED(&r, r.p, "%zu bytes after the payload",
					   (size_t) (r.end - r.p));
		goto out;
	}
	*out = v;
	v = NULL;
	rc = LSM_OK;

out:
	lsm_version_unref(v);
	return rc;
}

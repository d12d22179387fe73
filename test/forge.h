/*
 * forge.h
 *		Forged damage to store files, for the tests that check the engine
 *		against it (test/test_*.c) and for the regression inputs of the fuzz
 *		targets (test/fuzz/).
 *
 * Each forger changes one thing and keeps every checksum right, so the
 * damage gets past the checksums and reaches the code that must validate
 * what it reads: a manifest edited through lsm_version (fields the option
 * checks would refuse), an SSTable footer field, an index block handle, a
 * leaf table without its value filter.
 * They return 0, or -1 if the file could not be read, parsed or written
 * (with errno left as it was, if a system call failed).  Plain C over the
 * engine's internal headers; no harness.
 */
#ifndef LSM_TEST_FORGE_H
#define LSM_TEST_FORGE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block.h"
#include "hierarchy.h"
#include "sstable.h"
#include "version.h"

#define FORGE_UNUSED __attribute__((unused))

/* Reads file path into a new allocation of *len bytes; NULL on failure. */
static FORGE_UNUSED uint8_t *
forge_read(const char *path, size_t *len)
{
	struct stat st;
	uint8_t    *buf;
	int			fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || (buf = malloc(st.st_size + 1)) == NULL)
	{
		close(fd);
		return NULL;
	}
	if (pread(fd, buf, st.st_size, 0) != st.st_size)
	{
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*len = (size_t) st.st_size;
	return buf;
}

/*
 * Replaces file path by len bytes of buf (a new inode: hard links to the
 * old file keep the old bytes).
 */
static FORGE_UNUSED int
forge_write(const char *path, const uint8_t *buf, size_t len)
{
	int			fd;

	if (unlink(path) != 0 && errno != ENOENT)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != (ssize_t) len)
	{
		close(fd);
		return -1;
	}
	return close(fd);
}

/*
 * Rewrites dir/MANIFEST after edit(v, arg) changed the version it holds:
 * the manifest is well formed and checksummed, whatever the edit put in
 * it.  edit returns 0 to write, -1 to give up.
 */
static FORGE_UNUSED int
forge_manifest(const char *dir, int (*edit) (lsm_version *v, void *arg),
			   void *arg)
{
	char		path[4096];
	lsm_version *v;
	lsm_err		e;
	int			fd,
				rc;

	snprintf(path, sizeof(path), "%s/MANIFEST", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	rc = lsm_manifest_read(fd, "MANIFEST", &v, &e);
	close(fd);
	if (rc != LSM_OK)
		return -1;
	rc = edit(v, arg) == 0 && lsm_manifest_write(dir, v, NULL, &e) == LSM_OK ?
		0 : -1;
	lsm_version_unref(v);
	return rc;
}

/* The value filter parameters a forged manifest gets (forge_params). */
typedef struct forge_value_params
{
	uint32_t	m;
	int			k;
	int			d;
} forge_value_params;

/* An edit of forge_manifest: the store's m, k and d. */
static FORGE_UNUSED int
forge_params(lsm_version *v, void *arg)
{
	const forge_value_params *p = arg;

	v->value_filter_bits = p->m;
	v->value_filter_hashes = p->k;
	v->hierarchy_order = p->d;
	return 0;
}

/* Which value of a manifest forge_field sets (to what, from value). */
typedef enum forge_what
{
	FORGE_LAST_SEQ,				/* last_seq = value */
	FORGE_MIN_SEQ,				/* a file's min_seq = its max_seq + value */
	FORGE_MAX_SEQ,				/* a file's max_seq = last_seq + value */
	FORGE_GLOBAL_SEQ,			/* a file's global_seq = value, its min_seq
								 * and max_seq kept */
	FORGE_DELETIONS,			/* a file's deletions = its entries + value */
	FORGE_SIZE,					/* every file's size = value */
	FORGE_FILTER_BYTES,			/* a file's filter_bytes = its size + value */
	FORGE_NO_VALUE_FILTERS,		/* m = k = 0, and a file's value_filter_bytes
								 * = value if value is not 0 */
	FORGE_NODE_TWICE,			/* an internal node of the hierarchy names
								 * the node file of another */
} forge_what;

typedef struct forge_field_edit
{
	forge_what	what;
	uint64_t	value;
} forge_field_edit;

/* Appends the internal nodes under n to a[*len..] (preorder; up to cap). */
static FORGE_UNUSED void
forge_internal_nodes(lsm_hnode *n, lsm_hnode **a, int *len, int cap)
{
	int			i;

	if (n == NULL || n->nchild == 0)
		return;
	if (*len < cap)
		a[(*len)++] = n;
	for (i = 0; i < n->nchild; i++)
		forge_internal_nodes(n->child[i], a, len, cap);
}

/*
 * An edit of forge_manifest: one value the manifest reader must refuse
 * (struct forge_field_edit).  "A file" is the first of level 0, or of the
 * first level that has one.  -1 if the version has no such file or node.
 */
static FORGE_UNUSED int
forge_field(lsm_version *v, void *arg)
{
	const forge_field_edit *fe = arg;
	lsm_table_meta *m = NULL;
	lsm_hnode  *nodes[64];
	int			nnodes = 0,
				l,
				i;

	for (l = 0; l < LSM_MAX_LEVELS && m == NULL; l++)
		if (v->nfiles[l] > 0)
			m = &v->files[l][0]->meta;
	if (m == NULL)
		return -1;
	switch (fe->what)
	{
		case FORGE_LAST_SEQ:
			v->last_seq = fe->value;
			break;
		case FORGE_MIN_SEQ:
			m->min_seq = m->max_seq + fe->value;
			break;
		case FORGE_MAX_SEQ:
			m->max_seq = v->last_seq + fe->value;
			break;
		case FORGE_GLOBAL_SEQ:
			m->global_seq = fe->value;
			break;
		case FORGE_DELETIONS:
			m->deletions = m->entries + fe->value;
			break;
		case FORGE_SIZE:
			for (l = 0; l < LSM_MAX_LEVELS; l++)
				for (i = 0; i < v->nfiles[l]; i++)
					v->files[l][i]->meta.size = fe->value;
			break;
		case FORGE_FILTER_BYTES:
			m->filter_bytes = m->size + fe->value;
			break;
		case FORGE_NO_VALUE_FILTERS:
			v->value_filter_bits = 0;
			v->value_filter_hashes = 0;
			if (fe->value != 0)
				m->value_filter_bytes = fe->value;
			break;
		case FORGE_NODE_TWICE:
			/* a stored node, and another internal node named like it */
			forge_internal_nodes(v->hroot, nodes, &nnodes, 64);
			for (i = 0; i < nnodes && nodes[i]->number == 0; i++)
				;
			if (i == nnodes || nnodes < 2)
				return -1;
			nodes[i == 0 ? 1 : 0]->number = nodes[i]->number;
			break;
	}
	return 0;
}

/*
 * Sets a field of the footer of table file path: a u64 at byte off of the
 * footer if wide, else a u32, and the footer's checksum.
 */
static FORGE_UNUSED int
forge_table_footer(const char *path, int off, uint64_t value, bool wide)
{
	size_t		len;
	uint8_t    *buf = forge_read(path, &len);
	uint8_t    *f;
	int			rc;

	if (buf == NULL || len < LSM_SST_FOOTER)
	{
		free(buf);
		return -1;
	}
	f = buf + len - LSM_SST_FOOTER;
	if (wide)
		lsm_put_u64(f + off, value);
	else
		lsm_put_u32(f + off, (uint32_t) value);
	lsm_put_u32(f + 52, lsm_checksum(f, 52));
	rc = forge_write(path, buf, len);
	free(buf);
	return rc;
}

/*
 * Gives index entry `entry` of table file path the block handle (off,
 * size): the index block is rebuilt (its length may change), the properties
 * block moves after it, and the footer follows both, checksums and all.
 */
static FORGE_UNUSED int
forge_table_handle(const char *path, uint32_t entry, uint64_t off,
				   uint64_t size)
{
	size_t		len;
	uint8_t    *buf = forge_read(path, &len);
	lsm_block_builder bb;
	lsm_block_iter it;
	lsm_buf		out = {0};
	uint8_t		handle[20],
				ck[4],
				footer[LSM_SST_FOOTER];
	uint64_t	ioff,
				poff;
	uint32_t	isize,
				psize,
				i = 0;
	int			hlen = lsm_put_varint(handle, off);
	int			rc = -1;

	hlen += lsm_put_varint(handle + hlen, size);
	lsm_block_builder_init(&bb, 1);
	if (buf == NULL || len < LSM_SST_FOOTER)
		goto done;
	memcpy(footer, buf + len - LSM_SST_FOOTER, LSM_SST_FOOTER);
	ioff = lsm_get_u64(footer);
	isize = lsm_get_u32(footer + 8);
	poff = lsm_get_u64(footer + 36);
	psize = lsm_get_u32(footer + 44);
	if (ioff + isize + 4 > len || poff + psize + 4 > len ||
		!lsm_block_iter_init(&it, buf + ioff, isize))
		goto done;
	for (lsm_block_iter_first(&it); it.valid; lsm_block_iter_next(&it), i++)
		if (lsm_block_add(&bb, it.key.data, it.key.len,
						  i == entry ? handle : it.val,
						  i == entry ? (size_t) hlen : it.vlen) != LSM_OK)
			goto done;
	lsm_block_iter_free(&it);
	if (i <= entry || lsm_block_finish(&bb) != LSM_OK ||
		lsm_buf_append(&out, buf, ioff) != LSM_OK ||
		lsm_buf_append(&out, bb.buf.data, bb.buf.len) != LSM_OK)
		goto done;
	lsm_put_u32(ck, lsm_checksum(bb.buf.data, bb.buf.len));
	if (lsm_buf_append(&out, ck, 4) != LSM_OK)
		goto done;
	lsm_put_u32(footer + 8, (uint32_t) bb.buf.len);
	lsm_put_u64(footer + 36, out.len);
	if (lsm_buf_append(&out, buf + poff, psize + 4) != LSM_OK)
		goto done;
	lsm_put_u32(footer + 52, lsm_checksum(footer, 52));
	if (lsm_buf_append(&out, footer, LSM_SST_FOOTER) != LSM_OK)
		goto done;
	rc = forge_write(path, out.data, out.len);
done:
	lsm_block_builder_free(&bb);
	lsm_buf_free(&out);
	free(buf);
	return rc;
}

/*
 * Rewrites table number of dir (a table with value filters) with the same
 * entries but without a value filter or a block locator: what a leaf of
 * the hierarchy must never be.  The old file is unlinked (its mapping is
 * read), so a hard link to it keeps it.
 */
static FORGE_UNUSED int
forge_table_without_values(const char *dir, uint64_t number)
{
	char		name[32],
				path[4096];
	lsm_table  *t;
	lsm_table_builder *b = NULL;
	lsm_table_meta meta;
	lsm_iiter  *it = NULL;
	lsm_err		e;
	int			rc = -1;

	lsm_dir_name(LSM_F_TABLE, number, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lsm_table_open(dir, number, 0, &t, &e) != LSM_OK)
		return -1;
	if (lsm_table_status(t, &e) != LSM_OK ||
		(it = lsm_table_iter(t, &e)) == NULL || unlink(path) != 0 ||
		lsm_table_builder_open(path, number, 256, 10, &b, &e) != LSM_OK)
		goto done;
	for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
		if (lsm_table_builder_add(b, it->key, it->klen, it->seq, it->del,
								  it->val, it->vlen, &e) != LSM_OK)
			goto done;
	if (it->rc != LSM_OK)
		goto done;
	/* finish frees b, whatever it returns */
	rc = lsm_table_builder_finish(b, &meta, &e) == LSM_OK ? 0 : -1;
	b = NULL;
	if (rc == 0)
		lsm_table_meta_free(&meta);
done:
	if (b != NULL)
		lsm_table_builder_abandon(b);
	lsm_iiter_destroy(it);
	lsm_table_unref(t);
	return rc;
}

/*
 * The number of the first table with a value filter in the levels >= 1 of
 * the manifest of dir (a leaf of the hierarchy); 0 if there is none.
 */
static FORGE_UNUSED uint64_t
forge_first_leaf(const char *dir)
{
	char		path[4096];
	lsm_version *v;
	lsm_err		e;
	uint64_t	number = 0;
	int			fd,
				l,
				i;

	snprintf(path, sizeof(path), "%s/MANIFEST", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	if (lsm_manifest_read(fd, "MANIFEST", &v, &e) == LSM_OK)
	{
		for (l = 1; l < LSM_MAX_LEVELS && number == 0; l++)
			for (i = 0; i < v->nfiles[l] && number == 0; i++)
				if (v->files[l][i]->meta.value_filter_bytes > 0)
					number = v->files[l][i]->meta.number;
		lsm_version_unref(v);
	}
	close(fd);
	return number;
}

#endif							/* LSM_TEST_FORGE_H */

/*
 * fuzz_sst.c
 *		libFuzzer target: the input is an SSTable.
 *
 * The input replaces the first table of level 1 (a leaf of the value
 * filter hierarchy) in a copy of the template store (fuzz.h), with the
 * checksums of the blocks it names fixed first, so that mutations reach the
 * parsers behind them.  It is first
 * read on its own (lsm_table_open, lookups, iteration both ways, every
 * block scanned with and without a needle, the value filter and the block
 * locator probed, lsm_table_verify), then the store goes through the whole
 * workload with it.  The seeds are the template's tables and, as
 * regression inputs, tables whose damage passes every checksum (issue 11):
 * a data block handle whose size wraps when 4 is added, a footer whose
 * key filter offset (with no key filter) became the end of the data (and
 * let a data block handle point far past the file), and a leaf table that
 * holds no value filter.
 */
#include "fuzz.h"
#include "block.h"
#include "forge.h"

/* The table the input replaces, and its metadata in the template. */
static lsm_table_meta leaf;
static char leaf_name[32];

/* Finds the first table of level 1 of the template. */
static void
find_leaf(void)
{
	lsm_version *v = fuzz_template_version();
	lsm_table_meta *m;

	if (v->nfiles[1] == 0 || v->files[1][0]->meta.value_filter_bytes == 0)
		fuzz_die("the template has no leaf in level 1");
	m = &v->files[1][0]->meta;
	leaf = *m;
	leaf.smallest = lsm_memdup(m->smallest, m->smallest_len);
	leaf.largest = lsm_memdup(m->largest, m->largest_len);
	if (leaf.smallest == NULL || leaf.largest == NULL)
		fuzz_die("out of memory");
	lsm_dir_name(LSM_F_TABLE, leaf.number, leaf_name, sizeof(leaf_name));
	lsm_version_unref(v);
}

/* Block scan callback: looks at the entry, keeps going. */
static int
take_entry(void *arg, const uint8_t *key, size_t klen, uint64_t seq, int del,
		   const uint8_t *row, size_t rowlen)
{
	lsm_field	f;

	(void) arg;
	(void) key;
	(void) klen;
	(void) seq;
	(void) del;
	(void) lsm_row_field(row, rowlen, 0, &f);
	return LSM_OK;
}

/*
 * Fixes the checksums of the blocks the table in buf names, innermost
 * first: the data blocks its index names, the filters, the block locator
 * its properties name, the index, the properties and the footer.
 */
static void
fix_checksums(uint8_t *buf, size_t len)
{
	uint8_t    *f = buf + len - LSM_SST_FOOTER;
	uint64_t	ioff,
				poff;
	uint32_t	isize,
				psize;
	lsm_block_iter it;
	int			h;

	if (len < LSM_SST_FOOTER)
		return;
	ioff = lsm_get_u64(f);
	isize = lsm_get_u32(f + 8);
	poff = lsm_get_u64(f + 36);
	psize = lsm_get_u32(f + 44);
	if (ioff <= len && isize <= len - ioff &&
		lsm_block_iter_init(&it, buf + ioff, isize))
	{
		for (lsm_block_iter_first(&it); it.valid; lsm_block_iter_next(&it))
		{
			uint64_t	off,
						size;
			const uint8_t *q = lsm_get_varint(it.val, it.val + it.vlen, &off);

			if (q != NULL && lsm_get_varint(q, it.val + it.vlen, &size) != NULL)
				fuzz_fix_block(buf, len, off, size);
		}
		lsm_block_iter_free(&it);
	}
	for (h = 12; h <= 24; h += 12)
		fuzz_fix_block(buf, len, lsm_get_u64(f + h), lsm_get_u32(f + h + 8));
	if (poff <= len && psize <= len - poff)
	{
		const uint8_t *q = buf + poff,
				   *end = q + psize;
		uint64_t	v[11];
		int			i;

		/* six integers, two keys, the value count, the locator handle */
		for (i = 0; i < 11 && q != NULL; i++)
		{
			q = lsm_get_varint(q, end, &v[i]);
			if (q != NULL && (i == 6 || i == 7))
				q = v[i] <= (uint64_t) (end - q) ? q + v[i] : NULL;
		}
		if (q != NULL)
			fuzz_fix_block(buf, len, v[9], v[10]);
	}
	fuzz_fix_block(buf, len, ioff, isize);
	fuzz_fix_block(buf, len, poff, psize);
	lsm_put_u32(f + 52, lsm_checksum(f, 52));
}

/* Reads the table number of dir on its own, every way there is. */
static void
table_workload(const char *dir, uint64_t number)
{
	lsm_table  *t;
	lsm_iiter  *it;
	lsm_err		e;
	lsm_bloom	vf;
	lsm_locator loc;
	uint64_t	n;
	uint32_t	b;
	int			i;

	if (lsm_table_open(dir, number, 0, &t, &e) != LSM_OK)
		return;
	if (lsm_table_status(t, &e) != LSM_OK)
	{
		lsm_table_unref(t);
		return;
	}
	for (i = 0; i < FUZZ_NKEYS; i += 17)
	{
		char		key[16];
		lsm_table_hit hit;

		(void) lsm_table_get(t, key, fuzz_key(i, key), &hit, &e);
	}
	it = lsm_table_iter(t, &e);
	if (it != NULL)
	{
		for (lsm_iiter_seek(it, NULL, 0); it->valid; lsm_iiter_next(it))
			;
		for (lsm_iiter_seek_back(it, NULL, 0); it->valid; lsm_iiter_prev(it))
			;
		lsm_iiter_seek(it, (const uint8_t *) "k00100", 6);
		lsm_iiter_seek_back(it, (const uint8_t *) "k00100", 6);
		lsm_iiter_destroy(it);
	}
	for (b = 0; b < lsm_table_nblocks(t); b++)
	{
		bool		skipped;

		(void) lsm_table_block_scan(t, b, NULL, 0, take_entry, NULL,
									&skipped, &e);
		(void) lsm_table_block_scan(t, b, "c1", 2, take_entry, NULL,
									&skipped, &e);
	}
	if (lsm_table_value_filter(t, 0, FUZZ_VALUE_BITS, FUZZ_VALUE_HASHES, &vf,
							   &e) == LSM_OK && vf.num_lines > 0)
		(void) lsm_bloom_may_match(&vf, lsm_value_hash(0, "c1", 2));
	if (lsm_table_locator(t, &loc, &e) == LSM_OK)
	{
		uint64_t   *mask = calloc(loc.words, sizeof(uint64_t));

		if (mask == NULL)
			fuzz_die("out of memory");
		lsm_locator_probe(&loc, lsm_value_hash(0, "c1", 2), mask);
		free(mask);
	}
	(void) lsm_table_verify(t, leaf.smallest, leaf.smallest_len, leaf.largest,
							leaf.largest_len, &n, &e);
	lsm_table_unref(t);
}

/* Writes the template's tables and the damaged leaves into dir. */
static void
write_seeds(const char *dir)
{
	DIR		   *d = opendir(fuzz_template);
	struct dirent *de;
	int			i;

	if (d == NULL)
		fuzz_die("opendir %s", fuzz_template);
	while ((de = readdir(d)) != NULL)
	{
		size_t		n = strlen(de->d_name),
					len;
		uint8_t    *buf;

		if (n < 4 || strcmp(de->d_name + n - 4, ".sst") != 0)
			continue;
		buf = fuzz_template_file(de->d_name, &len);
		if (buf == NULL)
			fuzz_die("reading %s", de->d_name);
		fuzz_seed(dir, de->d_name, buf, len);
		free(buf);
	}
	closedir(d);

	for (i = 0; i < 3; i++)
	{
		static const char *const names[] = {"regress-handle-size-wraps",
			"regress-footer-offset-is-data-end",
		"regress-leaf-without-values"};
		const char *scratch = fuzz_scratch();
		char		path[4096];
		uint8_t    *buf;
		size_t		len;
		int			rc = 0;

		snprintf(path, sizeof(path), "%s/%s", scratch, leaf_name);
		if (i == 0)
			rc = forge_table_handle(path, 0, 0, UINT64_MAX - 3);
		else if (i == 1)
		{
			/* no key filter, but its offset far out; a block out there */
			rc = forge_table_handle(path, 0, UINT64_C(1) << 32, 64) ||
				forge_table_footer(path, 20, 0, false) ||
				forge_table_footer(path, 12, UINT64_C(1) << 40, true);
		}
		else
			rc = forge_table_without_values(scratch, leaf.number);
		if (rc != 0 || (buf = fuzz_slurp(path, &len)) == NULL)
			fuzz_die("forging %s", names[i]);
		fuzz_seed(dir, names[i], buf, len);
		free(buf);
		fuzz_rmtree(scratch);
	}
}

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	fuzz_init(NULL);
	find_leaf();
	if (getenv("LSM_FUZZ_SEEDS") && getenv("LSM_FUZZ_SEEDS")[0])
	{
		mkdir(getenv("LSM_FUZZ_SEEDS"), 0755);
		write_seeds(getenv("LSM_FUZZ_SEEDS"));
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_scratch();
	uint8_t    *buf = malloc(size ? size : 1);

	if (buf == NULL)
		fuzz_die("out of memory");
	memcpy(buf, data, size);
	fix_checksums(buf, size);
	fuzz_put_file(dir, leaf_name, buf, size);
	free(buf);
	table_workload(dir, leaf.number);
	fuzz_exercise(dir);
	fuzz_rmtree(dir);
	return 0;
}

/*
 * fuzz_manifest.c
 *		libFuzzer target: the input is the MANIFEST of a store.
 *
 * The input replaces the MANIFEST of a copy of the template store (fuzz.h),
 * whose tables, node files and WAL stay, and the store goes through the
 * whole workload.  The payload's length and checksum are fixed first, so
 * that mutations reach the decoder.  The seeds are the template's manifest and, as
 * regression inputs, manifests whose value filter parameters m, k and d
 * are outside what lsm_open allows (issue 11: heap overflows in the flat
 * layout and in WAL replay, reads past tables' filters, a stack array
 * overrun for k > 32, allocations of tens of GB, a hang, a signed
 * overflow in lsm_verify), a valid store with no leaves (a FLAT
 * search did pointer arithmetic on NULL), and manifests with one other
 * value out of range (issue 16: last_seq past 56 bits, sequences out of
 * order, more deletions than entries, sizes that cannot hold a table or
 * add up past 2^64, value filters in a store without them, two nodes of
 * the hierarchy naming one node file).
 */
#include "fuzz.h"
#include "forge.h"

static const struct
{
	const char *name;
	forge_value_params p;
}			damaged[] = {
	/* m not a multiple of 64: the flat layout's columns overran */
	{"regress-m-not-multiple-of-64", {FUZZ_VALUE_BITS + 32, 3, 2}},
	/* m above every table's filter: reads past them */
	{"regress-m-above-table-filters", {2 * FUZZ_VALUE_BITS, 3, 2}},
	/* m below 512, or not a multiple of 512: WAL replay overran */
	{"regress-m-below-512", {256, 3, 2}},
	{"regress-m-not-multiple-of-512", {FUZZ_VALUE_BITS + 64, 3, 2}},
	/* m near 2^32: allocations of 18-32 GB */
	{"regress-m-huge", {UINT32_C(0xfffffe00), 3, 2}},
	/* k > 32: the flat search's row[32] overran */
	{"regress-k-above-32", {FUZZ_VALUE_BITS, 40, 2}},
	/* k = 10^9: the open hung */
	{"regress-k-billion", {FUZZ_VALUE_BITS, 1000000000, 2}},
	/* d near 2^31: 2 * d overflowed in lsm_verify */
	{"regress-d-huge", {FUZZ_VALUE_BITS, 3, 0x7fffffff}},
};

/* Values the manifest reader refuses since issue 16 (forge_field). */
static const struct
{
	const char *name;
	forge_field_edit edit;
}			fields[] = {
	/* sequences are 56 bits: last_seq + 1 wrapped, tags lost bits */
	{"regress-last-seq-past-56-bits", {FORGE_LAST_SEQ, UINT64_MAX}},
	/* level 0 is ordered by max_seq; the WAL replays after last_seq */
	{"regress-min-seq-above-max-seq", {FORGE_MIN_SEQ, 1}},
	{"regress-max-seq-past-last-seq", {FORGE_MAX_SEQ, 1}},
	{"regress-global-seq-not-min-max", {FORGE_GLOBAL_SEQ, 1}},
	{"regress-deletions-above-entries", {FORGE_DELETIONS, 1}},
	/* sizes: no footer, filters past the file, level totals wrapped */
	{"regress-size-below-footer", {FORGE_SIZE, 10}},
	{"regress-filter-bytes-past-size", {FORGE_FILTER_BYTES, 1}},
	{"regress-sizes-add-past-2-64", {FORGE_SIZE, UINT64_C(1) << 63}},
	/* m = k = 0 while the tables (and leaves) have value filters */
	{"regress-value-filters-without-m", {FORGE_NO_VALUE_FILTERS, 0}},
	/* a node mapped another's file: not the OR of its own children */
	{"regress-node-file-twice", {FORGE_NODE_TWICE, 0}},
};

/*
 * An edit of forge_manifest: every table moved to level 0, no hierarchy.
 * A valid store whose value searches have no leaves: the flat layout then
 * has no rows (a FLAT search added an offset to their NULL pointer).
 */
static int
level0_only(lsm_version *v, void *arg)
{
	int			l,
				i;

	(void) arg;
	for (l = 1; l < LSM_MAX_LEVELS; l++)
	{
		lsm_file  **files = realloc(v->files[0], sizeof(lsm_file *) *
									(v->nfiles[0] + v->nfiles[l]));

		if (files == NULL)
			return -1;
		v->files[0] = files;
		for (i = 0; i < v->nfiles[l]; i++)
			v->files[0][v->nfiles[0]++] = v->files[l][i];
		v->nfiles[l] = 0;
	}
	lsm_hnode_unref(v->hroot);
	v->hroot = NULL;
	return 0;
}

/* Writes a seed forged from the template's manifest by edit(v, arg). */
static void
forged_seed(const char *dir, const char *name,
			int (*edit) (lsm_version *v, void *arg), void *arg)
{
	const char *scratch = fuzz_scratch();
	char		path[4096];
	uint8_t    *buf;
	size_t		len;

	if (forge_manifest(scratch, edit, arg) != 0)
		fuzz_die("forging %s", name);
	snprintf(path, sizeof(path), "%s/MANIFEST", scratch);
	buf = fuzz_slurp(path, &len);
	if (buf == NULL)
		fuzz_die("reading %s", path);
	fuzz_seed(dir, name, buf, len);
	free(buf);
	fuzz_rmtree(scratch);
}

/* Writes the template's manifest and the damaged ones into dir. */
static void
write_seeds(const char *dir)
{
	size_t		len;
	uint8_t    *buf = fuzz_template_file("MANIFEST", &len);
	int			i;

	if (buf == NULL)
		fuzz_die("no template manifest");
	fuzz_seed(dir, "template", buf, len);
	free(buf);
	for (i = 0; i < (int) (sizeof(damaged) / sizeof(damaged[0])); i++)
		forged_seed(dir, damaged[i].name, forge_params,
					(void *) &damaged[i].p);
	forged_seed(dir, "regress-flat-without-leaves", level0_only, NULL);
	for (i = 0; i < (int) (sizeof(fields) / sizeof(fields[0])); i++)
		forged_seed(dir, fields[i].name, forge_field,
					(void *) &fields[i].edit);
}

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	fuzz_init(write_seeds);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *buf = malloc(size ? size : 1);

	if (buf == NULL)
		fuzz_die("out of memory");
	memcpy(buf, data, size);
	/* the payload's length and checksum fixed (magic and format are not) */
	if (size >= 20)
	{
		lsm_put_u32(buf + 12, (uint32_t) (size - 20));
		fuzz_fix_block(buf, size, 16, size - 20);
	}
	fuzz_run_with_file("MANIFEST", buf, size);
	free(buf);
	return 0;
}

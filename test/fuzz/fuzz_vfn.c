/*
 * fuzz_vfn.c
 *		libFuzzer target: the input is a node file of the value filter
 *		hierarchy (NNNNNN.vfn).
 *
 * The input replaces the root's node file in a copy of the template store
 * (fuzz.h), whose tree has stored internal nodes of 268 bytes (2048-bit
 * filters), and the store goes through the whole workload: tree searches
 * probe the node, lsm_verify compares it with the OR of its children, and
 * the compaction rebuilds the tree from it.  A damaged node file may only
 * make searches slower (it then matches every value) and lsm_verify fail.
 * The checksum at the end is fixed first, so that mutations reach the
 * trailer and the bits.  The seeds are the template's node files.
 */
#include "fuzz.h"

/* The node file the input replaces. */
static char node_name[32];

/* Finds the first stored internal node of the template's tree. */
static uint64_t
first_stored(const lsm_hnode *n)
{
	int			i;

	if (n == NULL || n->nchild == 0)
		return 0;
	if (n->number != 0)
		return n->number;
	for (i = 0; i < n->nchild; i++)
	{
		uint64_t	number = first_stored(n->child[i]);

		if (number != 0)
			return number;
	}
	return 0;
}

/* Writes the template's node files into dir. */
static void
write_seeds(const char *dir)
{
	DIR		   *d = opendir(fuzz_template);
	struct dirent *de;

	if (d == NULL)
		fuzz_die("opendir %s", fuzz_template);
	while ((de = readdir(d)) != NULL)
	{
		size_t		n = strlen(de->d_name),
					len;
		uint8_t    *buf;

		if (n < 4 || strcmp(de->d_name + n - 4, ".vfn") != 0)
			continue;
		buf = fuzz_template_file(de->d_name, &len);
		if (buf == NULL)
			fuzz_die("reading %s", de->d_name);
		fuzz_seed(dir, de->d_name, buf, len);
		free(buf);
	}
	closedir(d);
}

int			LLVMFuzzerInitialize(int *argc, char ***argv);
int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	lsm_version *v;
	uint64_t	number;

	(void) argc;
	(void) argv;
	fuzz_init(write_seeds);
	v = fuzz_template_version();
	number = first_stored(v->hroot);
	lsm_version_unref(v);
	if (number == 0)
		fuzz_die("the template's tree has no stored node");
	snprintf(node_name, sizeof(node_name), "%06llu.vfn",
			 (unsigned long long) number);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *buf = malloc(size ? size : 1);

	if (buf == NULL)
		fuzz_die("out of memory");
	memcpy(buf, data, size);
	if (size >= 4)
		fuzz_fix_block(buf, size, 0, size - 4);
	fuzz_run_with_file(node_name, buf, size);
	free(buf);
	return 0;
}

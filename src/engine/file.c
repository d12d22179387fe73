/*
 * file.c
 *		SSTable files as versions share them.  See file.h.
 */
#include <stdlib.h>

#include "file.h"

lsm_file *
lsm_file_new(void)
{
	lsm_file   *f = calloc(1, sizeof(lsm_file));

	if (f)
		f->refs = 1;
	return f;
}

void
lsm_file_ref(lsm_file *f)
{
	f->refs++;
}

void
lsm_file_unref(lsm_file *f)
{
	if (f == NULL || --f->refs > 0)
		return;
	lsm_table_unref(f->table);
	lsm_table_meta_free(&f->meta);
	free(f);
}

int
lsm_files_find(lsm_file *const *files, int n, const void *key, size_t klen)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;
		const lsm_file *f = files[mid];

		if (lsm_key_cmp(f->meta.largest, f->meta.largest_len, key, klen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool
lsm_file_overlaps(const lsm_file *f, const uint8_t *lo, size_t lolen,
				  const uint8_t *hi, size_t hilen)
{
	if (lo && lsm_key_cmp(f->meta.largest, f->meta.largest_len, lo, lolen) < 0)
		return false;
	if (hi && lsm_key_cmp(f->meta.smallest, f->meta.smallest_len, hi, hilen) > 0)
		return false;
	return true;
}

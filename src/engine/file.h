/*
 * file.h
 *		One SSTable of a store as versions see it: its metadata, the open
 *		table (lazily), and a reference count.
 *
 * A file is shared by every version that names it and freed (its table
 * unmapped) when the last of them lets go; the file on disk is removed
 * separately, by the store's sweep of obsolete files.  This is the layer
 * below the value filter hierarchy (hierarchy.h), which references files
 * as its leaves, and versions (version.h), which list them per level.
 */
#ifndef LSM_FILE_H
#define LSM_FILE_H

#include "sstable.h"

typedef struct lsm_file
{
	int			refs;
	lsm_table_meta meta;
	lsm_table  *table;			/* NULL until opened */
} lsm_file;

/* A new file with one reference and empty metadata (NULL: no memory). */
lsm_file   *lsm_file_new(void);
void		lsm_file_ref(lsm_file *f);
void		lsm_file_unref(lsm_file *f);

/*
 * Index of the first of files[0..n) (disjoint, sorted by key) whose largest
 * key >= key, or n if none.
 */
int			lsm_files_find(lsm_file *const *files, int n, const void *key,
						   size_t klen);

/* Does file f's key range overlap [lo, hi]?  (NULL = unbounded) */
bool		lsm_file_overlaps(const lsm_file *f, const uint8_t *lo, size_t lolen,
							  const uint8_t *hi, size_t hilen);

#endif							/* LSM_FILE_H */

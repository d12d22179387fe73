/*-------------------------------------------------------------------------
 *
 * lsm_fdw.h
 *		  Private declarations of the lsm_fdw glue.
 *
 * src/fdw/ is the only part of the extension that includes postgres.h; it
 * sees the storage engine only through lsm.h.  One file per concern, all
 * around this header (the postgres_fdw layout):
 *
 *	fdw.c		module magic, _PG_init, the handler and its callbacks
 *	option.c	the validator and the parsing of option values
 *
 * Naming: FDW callbacks are static and named lsmfdw<Callback>; functions
 * shared between files are named LsmFdw<Verb>.
 *
 * src/fdw/lsm_fdw.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef LSM_FDW_H
#define LSM_FDW_H

#include "nodes/parsenodes.h"

/*
 * Option names.  Server: directory.  Foreign table: key and the engine
 * tunables.  Column: key, value_index.  See option.c for values and limits.
 */
#define LSMFDW_OPT_DIRECTORY			"directory"
#define LSMFDW_OPT_KEY					"key"
#define LSMFDW_OPT_MEMTABLE_SIZE		"memtable_size"
#define LSMFDW_OPT_FILE_SIZE			"file_size"
#define LSMFDW_OPT_BITS_PER_KEY			"bits_per_key"
#define LSMFDW_OPT_VALUE_FILTER_BITS	"value_filter_bits"
#define LSMFDW_OPT_VALUE_FILTER_HASHES	"value_filter_hashes"
#define LSMFDW_OPT_HIERARCHY_ORDER		"hierarchy_order"
#define LSMFDW_OPT_VALUE_INDEX			"value_index"

/* option.c */
extern int	LsmFdwIntOption(const DefElem *def);
extern bool LsmFdwBoolOption(const DefElem *def);

#endif							/* LSM_FDW_H */

/*
 * storedir.h
 *		The store directory: the names of its files, what a name is, paths
 *		into it, creating a file under the first free number, and sweeping
 *		the directories of stages whose owner died.
 *
 * Every file a store holds is named here (docs/format.md lists them):
 *
 *		NNNNNN.sst		an SSTable (sstable.h)
 *		NNNNNN.log		a write-ahead log (wal.h)
 *		NNNNNN.vfn		a node of the value filter hierarchy (hierarchy.h)
 *		NNNNNN.mem		the shared memtable of log NNNNNN (memfile.h), and
 *		NNNNNN.mem.tmp	one being built
 *		stage.PID.N/	a stage's private directory (stage.c)
 *		MANIFEST, MANIFEST.tmp (version.h), LOCK (its first page: db.c,
 *		"change generation"), LOCK.compact, LOCK.flush, LOCK.sync
 *
 * Numbers come from one counter per store (the version's next_file); a
 * number is used once, whatever the kind.  Writers in other processes may
 * create files past a handle's next_file at any moment, so a new file is
 * created with a call that fails if the name exists (O_EXCL, a rename that
 * does not replace), and the next number is tried: lsm_dir_create.
 */
#ifndef LSM_STOREDIR_H
#define LSM_STOREDIR_H

#include "util.h"

/* The kinds of numbered files. */
typedef enum lsm_fkind
{
	LSM_F_OTHER,				/* not a numbered file of the store */
	LSM_F_TABLE,				/* .sst */
	LSM_F_LOG,					/* .log */
	LSM_F_NODE,					/* .vfn */
	LSM_F_MEM,					/* .mem */
	LSM_F_MEM_TMP				/* .mem.tmp */
} lsm_fkind;

/* Names are NNNNNN.ext, at least six digits: this many bytes hold one. */
#define LSM_FNAME_MAX 32

/*
 * Paths into a store are built in buffers of LSM_PATH_MAX bytes (4096, or
 * a little more), and lsm_open refuses a store directory longer than
 * LSM_DIR_MAX: then any file of the store fits, one in a stage's directory
 * too (dir/stage.PID.N/NAME: under 80 bytes after dir), and no path is
 * ever truncated.  lsm_dir_path checks anyway.
 */
#define LSM_PATH_MAX 4096
#define LSM_DIR_MAX (LSM_PATH_MAX - 128)

/* The name of file number of kind (not LSM_F_OTHER) into buf[n]. */
void		lsm_dir_name(lsm_fkind kind, uint64_t number, char *buf, size_t n);

/* What name (a directory entry) is; *number set unless LSM_F_OTHER. */
lsm_fkind	lsm_dir_kind(const char *name, uint64_t *number);

/*
 * dir/name into buf[n]; LSM_INVALID ("path too long") if it does not fit,
 * so that no caller ever opens, renames or removes a truncated path.
 */
int			lsm_dir_path(char *buf, size_t n, const char *dir, const char *name,
						 lsm_err *e);

/*
 * Creates a file of kind in dir under the first free number from *number
 * on: create(path, number, arg, e) makes it, returning LSM_EXISTS when the
 * name is taken (the next number is tried then) or any other result,
 * which ends the search.  *number gets the number used.
 */
typedef int (*lsm_dir_create_fn) (const char *path, uint64_t number,
								  void *arg, lsm_err *e);
int			lsm_dir_create(const char *dir, lsm_fkind kind, uint64_t *number,
						   lsm_dir_create_fn create, void *arg, lsm_err *e);

/*
 * lsm_dir_create of a file opened with O_CREAT | O_EXCL and flags
 * (O_RDWR, O_WRONLY) into *fd.
 */
int			lsm_dir_create_excl(const char *dir, lsm_fkind kind,
								uint64_t *number, int flags, int *fd,
								lsm_err *e);

/* Stage directories: STAGE_PREFIX PID.N, holding a LOCK while in use. */
#define LSM_STAGE_PREFIX "stage."

/*
 * If name (an entry of dir) is a stage directory, removes it when its
 * owner is gone (its LOCK is free, or it has none and its process is
 * dead) and returns true; false for any other name.
 */
bool		lsm_dir_sweep_stage(const char *dir, const char *name);

/* lsm_dir_sweep_stage of every entry of dir. */
void		lsm_dir_sweep_stages(const char *dir);

/*
 * Removes every entry of directory path, its LOCK last, then the directory.
 * Best effort: what cannot be removed stays for a later sweep.
 */
void		lsm_dir_remove(const char *path);

#endif							/* LSM_STOREDIR_H */

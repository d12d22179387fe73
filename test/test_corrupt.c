/*
 * test_corrupt.c
 *		Corruption detection: bytes flipped in and files truncated from every
 *		kind of file of a store (SSTables, the WAL, the MANIFEST).
 *
 * One store is built per test (16 KiB memtable, 8 KiB files, 1 KiB blocks):
 * level-1 (and deeper) tables from compactions, level-0 tables that
 * overwrite and delete some of their keys, a WAL of NWAL unflushed batches
 * and a MANIFEST.  Every value is a function of a version number unique to
 * the put that wrote it, so a model (key -> version or absent) describes the
 * contents exactly; models[w] is the store with only the first w WAL batches
 * applied.
 *
 * Each damage (one byte XORed with a random nonzero mask, or a truncation)
 * is done to the store's files in place, probed, and undone.  A probe opens
 * the store and reads every key with lsm_get and lsm_multi_get, scans it
 * whole and runs lsm_verify; nothing may crash (the tests run under ASan and
 * UBSan) and the results must fit one candidate model:
 *	- a read returns the model's value, LSM_NOTFOUND only for a key the
 *	  model does not hold, or LSM_CORRUPTION (only where the damage is in a
 *	  byte some read depends on); never a wrong value;
 *	- a scan returns the model's entries in order and either ends with them
 *	  all and LSM_OK, or stops early with LSM_CORRUPTION.
 * Per kind of file:
 *	- SSTable: the byte ranges covered by a checksum are read from the file
 *	  (footer handles, index block handles); a flip there must make
 *	  lsm_verify return LSM_CORRUPTION, a flip in the zero padding before the
 *	  key filter (the only bytes not covered) must change nothing at all.
 *	  lsm_open succeeds either way (a damaged table never stops the store
 *	  from opening).  A truncated table is always detected.
 *	- WAL: a flip in the last record may make it read as torn, which loses
 *	  that record and nothing else; a flip in an earlier record (followed by
 *	  good ones) must make lsm_open or lsm_verify return LSM_CORRUPTION.  A
 *	  truncation is a torn tail: exactly the complete records survive, and
 *	  the open cuts the file back to them.  Stale bytes after the last
 *	  record (zeros, garbage, an old copy of a record) are ignored and cut.
 *	- MANIFEST: every flip and every truncation makes lsm_open fail with
 *	  LSM_CORRUPTION, and so does a checksummed MANIFEST forged with one
 *	  value out of range (forge.h), with a message naming it.
 * Lost and stale files: a removed MANIFEST (the directory still holds
 * tables and logs), a removed log, and a MANIFEST put back from an older
 * copy make every open mode fail with LSM_CORRUPTION and change no file;
 * files the manifest does not name are reported by lsm_verify.
 * Errors keep their detail: a table that cannot be read (EACCES, injected)
 * fails every path that opens one with LSM_IOERR and its errno; a checksum
 * failure met by a scan names the table and the offset in lsm_errmsg.
 *
 * LSM_TEST_SEED repeats the sampled positions and masks.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>

#include "harness.h"

#include "env.h"
#include "forge.h"

#define NK			520			/* keys c00000 .. written before the WAL */
#define NWAL		5			/* batches left in the WAL */
#define NKEYS		(NK + NWAL) /* each WAL batch also adds one new key */
#define NMODELS		(NWAL + 1)
#define VAL_MAX		160
#define DATA_STRIDE 7			/* sample every 7th data byte of a table */
#define MAX_SST		64

/* models[w][idx]: version of key idx with w WAL batches applied, or -1 */
static int	models[NMODELS][NKEYS];

/* ---------------------------------------------------------------------- */
/* The store's contents. */

/* Writes the name of key idx into buf (16 bytes); returns its length. */
static size_t
key_name(int idx, char *buf)
{
	return (size_t) sprintf(buf, "c%05d", idx);
}

/* The index of a key named by key_name, or -1 for any other key. */
static int
key_index(const void *key, size_t klen)
{
	const char *k = key;
	int			idx = 0;
	size_t		i;

	if (klen != 6 || k[0] != 'c')
		return -1;
	for (i = 1; i < 6; i++)
	{
		if (k[i] < '0' || k[i] > '9')
			return -1;
		idx = idx * 10 + (k[i] - '0');
	}
	return idx < NKEYS ? idx : -1;
}

/*
 * Writes the value of version ver of key idx into buf (VAL_MAX bytes);
 * returns its length (20 to 119 bytes).
 */
static size_t
value_of(int ver, int idx, char *buf)
{
	uint64_t	h = harness_mix(((uint64_t) ver << 32) | (uint32_t) idx);
	size_t		len = 20 + h % 100;
	size_t		n;

	n = (size_t) sprintf(buf, "v%05d/%05d/", ver, idx);
	for (; n < len; n++)
	{
		h = harness_mix(h);
		buf[n] = (char) ('A' + h % 26);
	}
	return len;
}

/* Adds a put of key idx at a new version to batch b and to state. */
static void
batch_put(lsm_batch *b, int *state, int *ver, int idx)
{
	char		key[16],
				val[VAL_MAX];
	size_t		klen = key_name(idx, key);

	state[idx] = (*ver)++;
	CHECK_OK(lsm_batch_put(b, key, klen, val, value_of(state[idx], idx, val)));
}

/* Adds a delete of key idx to batch b and to state. */
static void
batch_del(lsm_batch *b, int *state, int idx)
{
	char		key[16];
	size_t		klen = key_name(idx, key);

	state[idx] = -1;
	CHECK_OK(lsm_batch_delete(b, key, klen));
}

/* The options of the store. */
static void
store_options(lsm_options *o)
{
	lsm_options_init(o);
	o->memtable_bytes = 16 * 1024;
	o->file_bytes = 8 * 1024;
	o->block_bytes = 1024;
	o->lock_timeout_ms = 2000;
}

/*
 * Builds the store in dir and fills models: all NK keys (flushed and
 * compacted), overwrites and deletes of some in two level-0 tables, and
 * NWAL batches left in the WAL.
 */
static void
build_store(const char *dir)
{
	lsm_options o;
	lsm_stats	st;
	lsm_db	   *db;
	lsm_batch  *b = lsm_batch_new();
	int			state[NKEYS];
	int			ver = 1,
				i,
				w,
				deeper = 0;

	CHECK(b != NULL);
	for (i = 0; i < NKEYS; i++)
		state[i] = -1;
	/* every flush compacts: the first keys end up in several levels */
	store_options(&o);
	o.l0_compaction_trigger = 1;
	CHECK_OK(lsm_open(dir, &o, &db));
	for (i = 0; i < NK; i++)
	{
		batch_put(b, state, &ver, i);
		if (i % 20 == 19 || i == NK - 1)
		{
			CHECK_DB_OK(db, lsm_write(db, b));
			lsm_batch_clear(b);
		}
	}
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_OK(lsm_close(db));

	/* two level-0 tables that shadow some keys below them */
	store_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	for (i = 0; i < NK; i++)
	{
		if (i % 13 == 0)
			batch_del(b, state, i);
		else if (i % 5 == 0)
			batch_put(b, state, &ver, i);
		if (i % 40 == 39 || i == NK - 1)
		{
			CHECK_DB_OK(db, lsm_write(db, b));
			lsm_batch_clear(b);
		}
		if (i == NK / 2)
			CHECK_DB_OK(db, lsm_flush(db));
	}
	CHECK_DB_OK(db, lsm_flush(db));

	/* the WAL: overwrites, a delete and a new key per batch */
	memcpy(models[0], state, sizeof(state));
	for (w = 0; w < NWAL; w++)
	{
		batch_put(b, state, &ver, (w * 37 + 3) % NK);
		batch_put(b, state, &ver, (w * 101 + 50) % NK);
		batch_del(b, state, (w * 59 + 7) % NK);
		batch_put(b, state, &ver, NK + w);
		CHECK_DB_OK(db, lsm_write(db, b));
		lsm_batch_clear(b);
		memcpy(models[w + 1], state, sizeof(state));
	}
	lsm_batch_free(b);

	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	for (i = 1; i < LSM_MAX_LEVELS; i++)
		deeper += st.level[i].files;
	CHECK_MSG(st.level[0].files == 2, "store has %d level-0 tables",
			  st.level[0].files);
	CHECK_MSG(deeper >= 3, "store has %d tables below level 0", deeper);
	CHECK_GT(st.memtable_entries, 0);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
}

/* ---------------------------------------------------------------------- */
/* Files. */

/* Writes one byte at off of the file at path. */
static void
poke(const char *path, size_t off, uint8_t byte)
{
	int			fd = open(path, O_WRONLY);

	CHECK_MSG(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK(pwrite(fd, &byte, 1, (off_t) off) == 1);
	close(fd);
}

/* The file at path must hold exactly len bytes (what: for messages). */
static void
check_size(const char *path, size_t len, const char *what)
{
	struct stat st;

	CHECK_MSG(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	CHECK_MSG((size_t) st.st_size == len,
			  "%s: after a probe the WAL holds %lld bytes, not %zu",
			  what, (long long) st.st_size, len);
}

/* The store's files: its tables (by number), its WAL and its MANIFEST. */
typedef struct store_files
{
	int			nsst;
	char	   *sst[MAX_SST];
	char	   *wal;
	char	   *manifest;
} store_files;

/* qsort comparator for an array of C strings. */
static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Lists the files of the store in dir (exactly one WAL). */
static void
list_files(const char *dir, store_files *sf)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	int			nwal = 0;

	memset(sf, 0, sizeof(*sf));
	CHECK(d != NULL);
	while ((de = readdir(d)) != NULL)
	{
		size_t		n = strlen(de->d_name);

		if (n > 4 && strcmp(de->d_name + n - 4, ".sst") == 0)
		{
			CHECK(sf->nsst < MAX_SST);
			sf->sst[sf->nsst++] = harness_path(dir, de->d_name);
		}
		else if (n > 4 && strcmp(de->d_name + n - 4, ".log") == 0)
		{
			sf->wal = harness_path(dir, de->d_name);
			nwal++;
		}
		else if (strcmp(de->d_name, "MANIFEST") == 0)
			sf->manifest = harness_path(dir, de->d_name);
	}
	closedir(d);
	qsort(sf->sst, sf->nsst, sizeof(char *), cmp_str);
	CHECK_EQ(nwal, 1);
	CHECK(sf->manifest != NULL);
	CHECK(sf->nsst >= 5);
}

/* Releases what list_files allocated. */
static void
free_files(store_files *sf)
{
	int			i;

	for (i = 0; i < sf->nsst; i++)
		free(sf->sst[i]);
	free(sf->wal);
	free(sf->manifest);
	memset(sf, 0, sizeof(*sf));
}

/* ---------------------------------------------------------------------- */
/* Probes. */

/* What a probe requires; the candidate models are lo .. hi. */
typedef struct rules
{
	int			lo;
	int			hi;
	bool		open_fails;		/* lsm_open must return LSM_CORRUPTION */
	bool		open_may_fail;	/* lsm_open may return LSM_CORRUPTION */
	bool		reads_may_fail; /* reads may return LSM_CORRUPTION */
	bool		detect;			/* lsm_open or lsm_verify must say corrupt */
	bool		verify_ok;		/* lsm_verify must pass */
} rules;

/* How a probe ended. */
typedef enum outcome
{
	OPEN_FAILED,
	VERIFY_FAILED,
	UNDETECTED
} outcome;

/* Which candidate models still fit a probe's observations, and why not. */
typedef struct verdict
{
	const rules *r;
	bool		fits[NMODELS];
	char		why[NMODELS][200];
	int			pos[NMODELS];	/* scan: next key index to expect */
	int			corrupt_reads;
} verdict;

/* Rules a candidate model out, keeping the first reason. */
static void HARNESS_PRINTF(3, 4)
misfit(verdict *v, int m, const char *fmt,...)
{
	va_list		ap;

	if (!v->fits[m])
		return;
	v->fits[m] = false;
	va_start(ap, fmt);
	vsnprintf(v->why[m], sizeof(v->why[m]), fmt, ap);
	va_end(ap);
}

/*
 * Judges one read of key idx (how: "lsm_get", "lsm_multi_get") that
 * returned rc and, on LSM_OK, val.
 */
static void
judge_read(verdict *v, const char *how, int idx, int rc, const void *val,
		   size_t vlen)
{
	char		want[VAL_MAX];
	int			m;

	if (rc == LSM_CORRUPTION)
		v->corrupt_reads++;
	for (m = v->r->lo; m <= v->r->hi; m++)
	{
		int			ver = models[m][idx];

		if (rc == LSM_OK && ver < 0)
			misfit(v, m, "%s(c%05d) returned a value for a key that is absent",
				   how, idx);
		else if (rc == LSM_OK &&
				 (vlen != value_of(ver, idx, want) ||
				  memcmp(val, want, vlen) != 0))
			misfit(v, m, "%s(c%05d) returned a wrong value \"%.*s\"", how, idx,
				   (int) (vlen < 16 ? vlen : 16), (const char *) val);
		else if (rc == LSM_NOTFOUND && ver >= 0)
			misfit(v, m, "%s(c%05d) returned not found for a key that exists",
				   how, idx);
		else if (rc != LSM_OK && rc != LSM_NOTFOUND && rc != LSM_CORRUPTION)
			misfit(v, m, "%s(c%05d) returned %s", how, idx, lsm_strerror(rc));
	}
}

/* Judges the next entry of a scan. */
static void
judge_scan_entry(verdict *v, const void *key, size_t klen, const void *val,
				 size_t vlen)
{
	char		want[VAL_MAX];
	int			idx = key_index(key, klen);
	int			m;

	for (m = v->r->lo; m <= v->r->hi; m++)
	{
		int			p = v->pos[m];

		while (p < NKEYS && models[m][p] < 0)
			p++;
		if (p == NKEYS)
			misfit(v, m, "scan returned key %.*s after the last one",
				   (int) klen, (const char *) key);
		else if (idx != p)
			misfit(v, m, "scan returned key %.*s where c%05d was due",
				   (int) klen, (const char *) key, p);
		else if (vlen != value_of(models[m][p], p, want) ||
				 memcmp(val, want, vlen) != 0)
			misfit(v, m, "scan returned a wrong value for %.*s",
				   (int) klen, (const char *) key);
		v->pos[m] = p + 1;
	}
}

/* Judges how a scan ended (its lsm_iter_status). */
static void
judge_scan_end(verdict *v, int status)
{
	int			m;

	if (status == LSM_CORRUPTION)
		v->corrupt_reads++;
	for (m = v->r->lo; m <= v->r->hi; m++)
	{
		int			p = v->pos[m];

		while (p < NKEYS && models[m][p] < 0)
			p++;
		if (status == LSM_OK && p < NKEYS)
			misfit(v, m, "scan ended with no error before c%05d", p);
		else if (status != LSM_OK && status != LSM_CORRUPTION)
			misfit(v, m, "scan ended with %s", lsm_strerror(status));
	}
}

/*
 * Opens the store in dir, reads it every way and verifies it, and requires
 * what r says (what: the damage, for messages).  Returns how it ended.
 */
static outcome
probe(const char *dir, const rules *r, const char *what)
{
	static void *vals[NKEYS];
	static size_t vlens[NKEYS];
	static int	rcs[NKEYS];
	static char keybuf[NKEYS][16];
	static const void *keys[NKEYS];
	static size_t klens[NKEYS];
	lsm_options o;
	lsm_db	   *db;
	lsm_iter   *it;
	verdict		v;
	int			rc,
				vrc,
				idx,
				m;
	bool		any = false;

	store_options(&o);
	rc = lsm_open(dir, &o, &db);
	if (rc != LSM_OK)
	{
		CHECK_MSG(rc == LSM_CORRUPTION && (r->open_fails || r->open_may_fail),
				  "%s: lsm_open returned %s: %s", what, lsm_strerror(rc),
				  lsm_errmsg(NULL));
		CHECK_MSG(lsm_errmsg(NULL)[0] != '\0', "%s: lsm_open gave no message",
				  what);
		return OPEN_FAILED;
	}
	if (r->open_fails)
	{
		lsm_close(db);
		CHECK_MSG(false, "%s: lsm_open succeeded", what);
	}

	memset(&v, 0, sizeof(v));
	v.r = r;
	for (m = r->lo; m <= r->hi; m++)
		v.fits[m] = true;

	for (idx = 0; idx < NKEYS; idx++)
	{
		void	   *val = NULL;
		size_t		vlen = 0;

		klens[idx] = key_name(idx, keybuf[idx]);
		keys[idx] = keybuf[idx];
		rc = lsm_get(db, keys[idx], klens[idx], &val, &vlen);
		if (rc == LSM_CORRUPTION)
			CHECK_MSG(lsm_errmsg(db)[0] != '\0',
					  "%s: lsm_get returned LSM_CORRUPTION with no message",
					  what);
		judge_read(&v, "lsm_get", idx, rc, val, vlen);
		if (rc == LSM_OK)
			lsm_free(val);
	}

	CHECK_DB_OK(db, lsm_multi_get(db, NKEYS, keys, klens, vals, vlens, rcs));
	for (idx = 0; idx < NKEYS; idx++)
	{
		judge_read(&v, "lsm_multi_get", idx, rcs[idx], vals[idx], vlens[idx]);
		if (rcs[idx] == LSM_OK)
			lsm_free(vals[idx]);
	}

	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
	{
		const void *k,
				   *val;
		size_t		klen,
					vlen;

		k = lsm_iter_key(it, &klen);
		val = lsm_iter_value(it, &vlen);
		judge_scan_entry(&v, k, klen, val, vlen);
	}
	judge_scan_end(&v, lsm_iter_status(it));
	lsm_iter_close(it);

	vrc = lsm_verify(db);
	CHECK_MSG(vrc == LSM_OK || vrc == LSM_CORRUPTION,
			  "%s: lsm_verify returned %s: %s", what, lsm_strerror(vrc),
			  lsm_errmsg(db));
	if (vrc == LSM_CORRUPTION)
		CHECK_MSG(lsm_errmsg(db)[0] != '\0',
				  "%s: lsm_verify returned LSM_CORRUPTION with no message",
				  what);
	CHECK_OK(lsm_close(db));

	for (m = r->lo; m <= r->hi; m++)
		any = any || v.fits[m];
	if (!any)
	{
		for (m = r->lo; m <= r->hi; m++)
			printf("# %s: not the store with %d of %d WAL batches: %s\n",
				   what, m, NWAL, v.why[m]);
		CHECK_MSG(false, "%s: reads fit no acceptable contents", what);
	}
	CHECK_MSG(r->reads_may_fail || v.corrupt_reads == 0,
			  "%s: %d reads returned LSM_CORRUPTION", what, v.corrupt_reads);
	CHECK_MSG(!r->detect || vrc == LSM_CORRUPTION,
			  "%s: lsm_verify passed", what);
	CHECK_MSG(!r->verify_ok || vrc == LSM_OK, "%s: lsm_verify returned %s",
			  what, lsm_strerror(vrc));
	return vrc == LSM_CORRUPTION ? VERIFY_FAILED : UNDETECTED;
}

/* Counts of outcomes, for the summary lines. */
typedef struct tally
{
	int			probes;
	int			n[3];
} tally;

/* Adds one probe's outcome to t. */
static void
count(tally *t, outcome o)
{
	t->probes++;
	t->n[o]++;
}

/* Prints the summary line of a tally. */
static void
report(const char *what, const tally *t)
{
	printf("# %s: %d probes: lsm_open failed %d, lsm_verify failed %d, "
		   "undetected %d\n",
		   what, t->probes, t->n[OPEN_FAILED], t->n[VERIFY_FAILED],
		   t->n[UNDETECTED]);
}

/* Probes the undamaged store: exact contents, verify passes. */
static void
probe_intact(const char *dir, const char *when)
{
	rules		r;

	memset(&r, 0, sizeof(r));
	r.lo = r.hi = NWAL;
	r.verify_ok = true;
	CHECK_EQ(probe(dir, &r, when), UNDETECTED);
}

/* A random nonzero byte. */
static uint8_t
random_mask(uint64_t *rng)
{
	return (uint8_t) (1 + harness_rand64(rng) % 255);
}

/* ---------------------------------------------------------------------- */
/* SSTable layout, read from the file itself. */

/* Byte ranges of a table covered by checksums. */
typedef struct sst_layout
{
	size_t		size;
	size_t		data_end;		/* end of the last data block's checksum */
	size_t		pad_end;		/* start of the key filter (or data_end) */
	size_t		index_off;
	size_t		props_off;
	int			nblocks;
	size_t		block_off[1024];
	bool	   *covered;		/* per byte: inside a checksummed range */
} sst_layout;

/* Little-endian fixed-width integers of the file formats. */
static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, 8);
	return v;
}

/* As get_u64, 32 bits. */
static uint32_t
get_u32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, 4);
	return v;
}

/* Reads a varint at *p (before end); fails the test if malformed. */
static uint64_t
get_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t	v = 0;
	int			shift;

	for (shift = 0; shift < 64; shift += 7)
	{
		uint8_t		b;

		CHECK(*p < end);
		b = *(*p)++;
		v |= (uint64_t) (b & 0x7f) << shift;
		if (b < 0x80)
			return v;
	}
	CHECK_MSG(false, "malformed varint");
	return 0;
}

/* Marks [off, off + len) covered, checking that it lies inside the file. */
static void
cover(sst_layout *l, uint64_t off, uint64_t len)
{
	uint64_t	i;

	CHECK_MSG(off <= l->size && len <= l->size - off,
			  "range %llu+%llu is outside a %zu-byte table",
			  (unsigned long long) off, (unsigned long long) len, l->size);
	for (i = off; i < off + len; i++)
	{
		CHECK_MSG(!l->covered[i], "byte %llu is in two blocks",
				  (unsigned long long) i);
		l->covered[i] = true;
	}
}

/*
 * Parses the footer and index block of a table (sstable.h) and marks every
 * byte inside a checksummed block (contents and checksum) or the footer.
 * Requires the rest to be the zero padding before the key filter.
 */
static void
parse_sst(const uint8_t *buf, size_t size, sst_layout *l)
{
	const uint8_t *f,
			   *ib,
			   *p,
			   *end;
	uint64_t	ioff,
				foff,
				voff,
				poff;
	uint32_t	isize,
				fsize,
				vsize,
				psize,
				nr;
	size_t		i;

	memset(l, 0, offsetof(sst_layout, covered));
	l->size = size;
	l->covered = calloc(size, sizeof(bool));
	CHECK(l->covered != NULL);
	CHECK(size >= 64);
	f = buf + size - 64;
	CHECK_EQ_U(get_u64(f + 56), UINT64_C(0x4c534d5353544231));
	CHECK(get_u32(f + 48) == 1 || get_u32(f + 48) == 2);
	ioff = get_u64(f);
	isize = get_u32(f + 8);
	foff = get_u64(f + 12);
	fsize = get_u32(f + 20);
	voff = get_u64(f + 24);
	vsize = get_u32(f + 32);
	poff = get_u64(f + 36);
	psize = get_u32(f + 44);
	cover(l, size - 64, 64);
	cover(l, ioff, (uint64_t) isize + 4);
	cover(l, poff, (uint64_t) psize + 4);
	if (fsize > 0)
		cover(l, foff, (uint64_t) fsize + 4);
	if (vsize > 0)
		cover(l, voff, (uint64_t) vsize + 4);
	l->index_off = ioff;
	l->props_off = poff;
	if (get_u32(f + 48) >= 2)
	{
		/* properties: six integers, two keys, then the value fields */
		const uint8_t *q = buf + poff,
				   *qend = q + psize;
		uint64_t	loff,
					lsize;
		int			j;

		for (j = 0; j < 8; j++)
		{
			uint64_t	x = get_varint(&q, qend);

			if (j >= 6)
				q += x;
		}
		(void) get_varint(&q, qend);	/* indexed values */
		loff = get_varint(&q, qend);
		lsize = get_varint(&q, qend);
		if (lsize > 0)
			cover(l, loff, lsize + 4);
	}

	/* the index: restart interval 1, values are [offset][size] varints */
	ib = buf + ioff;
	CHECK(isize >= 8);
	nr = get_u32(ib + isize - 4);
	CHECK(nr >= 1 && (uint64_t) nr * 4 + 4 <= isize);
	end = ib + isize - 4 - (size_t) nr * 4;
	p = ib;
	while (p < end)
	{
		uint64_t	shared = get_varint(&p, end),
					unshared = get_varint(&p, end),
					vlen = get_varint(&p, end);
		const uint8_t *vend;
		uint64_t	boff,
					bsize;

		CHECK_EQ(shared, 0);
		CHECK(unshared + vlen <= (uint64_t) (end - p));
		p += unshared;
		vend = p + vlen;
		boff = get_varint(&p, vend);
		bsize = get_varint(&p, vend);
		CHECK(p == vend);
		CHECK_MSG(boff == l->data_end, "data block at %llu, expected %zu",
				  (unsigned long long) boff, l->data_end);
		CHECK((size_t) l->nblocks < sizeof(l->block_off) / sizeof(size_t));
		l->block_off[l->nblocks++] = boff;
		cover(l, boff, bsize + 4);
		l->data_end = boff + bsize + 4;
	}
	CHECK_EQ(l->nblocks, nr);

	/*
	 * What no checksum covers: the padding (under 64 zero bytes) that
	 * aligns the key filter, the value filter and the block locator.
	 */
	l->pad_end = fsize > 0 ? foff : vsize > 0 ? voff : l->data_end;
	CHECK(l->pad_end >= l->data_end && l->pad_end - l->data_end < 64);
	CHECK(fsize == 0 || foff % 64 == 0);
	CHECK(vsize == 0 || voff % 64 == 0);
	for (i = 0; i < size; i++)
	{
		size_t		run = 0;

		if (l->covered[i])
			continue;
		while (i + run < size && !l->covered[i + run])
		{
			CHECK_MSG(buf[i + run] == 0, "padding byte %zu is not zero", i + run);
			run++;
		}
		CHECK_MSG(i >= l->data_end && run < 64,
				  "bytes %zu..%zu of the table are not covered by a checksum",
				  i, i + run - 1);
		i += run - 1;
	}
}

/* ---------------------------------------------------------------------- */
/* Tests. */

/*
 * Flips every byte past the data blocks of every table and a sample of the
 * data bytes (all bytes near block edges).
 */
TEST(sstable_flips)
{
	char	   *dir = harness_tmpdir("corrupt-sst");
	uint64_t	rng = harness_seed() ^ 0x55;
	store_files sf;
	tally		covered_t,
				padding_t;
	int			s;

	memset(&covered_t, 0, sizeof(covered_t));
	memset(&padding_t, 0, sizeof(padding_t));
	build_store(dir);
	list_files(dir, &sf);
	probe_intact(dir, "intact store");
	for (s = 0; s < sf.nsst; s++)
	{
		sst_layout	l;
		size_t		size,
					p;
		uint8_t    *orig = harness_read_file(sf.sst[s], &size);
		size_t		phase = harness_rand64(&rng) % DATA_STRIDE;
		const char *name = strrchr(sf.sst[s], '/') + 1;
		int			b = 0;

		parse_sst(orig, size, &l);
		for (p = 0; p < size; p++)
		{
			rules		r;
			char		what[160];
			uint8_t		mask;
			bool		edge = false;

			/* every byte past the data; data bytes sampled, block edges all */
			while (b + 1 < l.nblocks && l.block_off[b + 1] <= p)
				b++;
			if (p < l.data_end)
			{
				size_t		bend = b + 1 < l.nblocks ? l.block_off[b + 1] :
					l.data_end;

				edge = p < l.block_off[b] + 3 || p + 8 >= bend;
				if (!edge && p % DATA_STRIDE != phase)
					continue;
			}
			mask = random_mask(&rng);
			snprintf(what, sizeof(what), "%s byte %zu of %s (%s) ^ 0x%02x",
					 l.covered[p] ? "covered" : "padding", p, name,
					 p < l.data_end ? "data block" :
					 p < l.pad_end ? "padding" :
					 p >= size - 64 ? "footer" :
					 p >= l.props_off ? "properties" :
					 p >= l.index_off ? "index" : "key filter", mask);
			memset(&r, 0, sizeof(r));
			r.lo = r.hi = NWAL;
			r.reads_may_fail = l.covered[p];
			r.detect = l.covered[p];
			poke(sf.sst[s], p, orig[p] ^ mask);
			count(l.covered[p] ? &covered_t : &padding_t, probe(dir, &r, what));
			poke(sf.sst[s], p, orig[p]);
		}
		free(l.covered);
		free(orig);
	}
	probe_intact(dir, "store after restoring every table");
	report("sstable flips in checksummed bytes", &covered_t);
	report("sstable flips in padding", &padding_t);
	CHECK_GT(padding_t.probes + covered_t.probes, 0);
	free_files(&sf);
}

/*
 * Truncates every table at lengths around its block boundaries, and removes
 * each table in turn.
 */
TEST(sstable_truncation)
{
	char	   *dir = harness_tmpdir("corrupt-ssttrunc");
	store_files sf;
	tally		t;
	int			s;

	memset(&t, 0, sizeof(t));
	build_store(dir);
	list_files(dir, &sf);
	for (s = 0; s < sf.nsst; s++)
	{
		sst_layout	l;
		size_t		size;
		uint8_t    *orig = harness_read_file(sf.sst[s], &size);
		const char *name = strrchr(sf.sst[s], '/') + 1;
		size_t		lens[20];
		int			n = 0,
					i;

		parse_sst(orig, size, &l);
		lens[n++] = 0;
		lens[n++] = 1;
		lens[n++] = 63;
		lens[n++] = 64;
		lens[n++] = l.block_off[l.nblocks > 1 ? 1 : 0];
		lens[n++] = l.data_end / 2;
		lens[n++] = l.data_end;
		lens[n++] = l.pad_end;
		lens[n++] = l.index_off;
		lens[n++] = l.props_off;
		lens[n++] = size - 65;
		lens[n++] = size - 64;
		lens[n++] = size - 63;
		lens[n++] = size - 8;
		lens[n++] = size - 1;
		for (i = 0; i < n; i++)
		{
			rules		r;
			char		what[160];

			if (lens[i] >= size)
				continue;
			snprintf(what, sizeof(what), "%s truncated to %zu of %zu bytes",
					 name, lens[i], size);
			memset(&r, 0, sizeof(r));
			r.lo = r.hi = NWAL;
			r.reads_may_fail = true;
			r.detect = true;
			harness_write_file(sf.sst[s], orig, lens[i]);
			count(&t, probe(dir, &r, what));
			harness_write_file(sf.sst[s], orig, size);
		}

		/* a table the manifest names is gone */
		{
			rules		r;
			char		what[160];

			snprintf(what, sizeof(what), "%s removed", name);
			memset(&r, 0, sizeof(r));
			r.lo = r.hi = NWAL;
			r.open_fails = true;
			CHECK(unlink(sf.sst[s]) == 0);
			count(&t, probe(dir, &r, what));
			harness_write_file(sf.sst[s], orig, size);
		}
		free(l.covered);
		free(orig);
	}
	probe_intact(dir, "store after restoring every table");
	report("sstable truncations and removals", &t);
	free_files(&sf);
}

/*
 * Reads the record boundaries of the WAL in buf: starts[i] .. starts[i + 1]
 * is record i; returns the number of records.  *size, the file's, becomes
 * where the records end: zeros follow (preallocated, wal.h).
 */
static int
wal_records(const uint8_t *buf, size_t *size, size_t *starts)
{
	size_t		off = 0,
				i;
	int			n = 0;

	while (off < *size && buf[off + 8] != 0)
	{
		CHECK(off + 9 <= *size);
		CHECK(n < NWAL);
		starts[n++] = off;
		off += 9 + get_u32(buf + off + 4);
	}
	CHECK(off <= *size);
	for (i = off; i < *size; i++)
		CHECK(buf[i] == 0);
	*size = off;
	starts[n] = off;
	return n;
}

/* Flips every byte of the WAL. */
TEST(wal_flips)
{
	char	   *dir = harness_tmpdir("corrupt-wal");
	uint64_t	rng = harness_seed() ^ 0x3a1;
	store_files sf;
	size_t		starts[NWAL + 1],
				size,
				p;
	uint8_t    *orig;
	tally		last_t,
				earlier_t;
	int			rec = 0;

	memset(&last_t, 0, sizeof(last_t));
	memset(&earlier_t, 0, sizeof(earlier_t));
	build_store(dir);
	list_files(dir, &sf);
	orig = harness_read_file(sf.wal, &size);
	CHECK_EQ(wal_records(orig, &size, starts), NWAL);
	for (p = 0; p < size; p++)
	{
		rules		r;
		char		what[160];
		uint8_t		mask = random_mask(&rng);

		while (starts[rec + 1] <= p)
			rec++;
		snprintf(what, sizeof(what),
				 "WAL byte %zu (record %d of %d, offset %zu in it) ^ 0x%02x",
				 p, rec + 1, NWAL, p - starts[rec], mask);
		memset(&r, 0, sizeof(r));
		if (rec == NWAL - 1)
		{
			/* may read as a torn tail: that record alone is lost */
			r.lo = NWAL - 1;
			r.hi = NWAL;
		}
		else
		{
			r.lo = 0;
			r.hi = NWAL;
			r.open_may_fail = true;
			r.detect = true;
		}
		poke(sf.wal, p, orig[p] ^ mask);
		count(rec == NWAL - 1 ? &last_t : &earlier_t, probe(dir, &r, what));
		/* the open may have cut the damaged record off: restore all */
		harness_write_file(sf.wal, orig, size);
	}
	probe_intact(dir, "store after restoring the WAL");
	report("WAL flips in the last record", &last_t);
	report("WAL flips in earlier records", &earlier_t);
	free(orig);
	free_files(&sf);
}

/*
 * Truncates the WAL at every length and appends stale bytes after its last
 * record.
 */
TEST(wal_torn_tails)
{
	char	   *dir = harness_tmpdir("corrupt-waltail");
	uint64_t	rng = harness_seed() ^ 0x7a11;
	store_files sf;
	size_t		starts[NWAL + 1],
				size,
				len;
	uint8_t    *orig,
			   *longer;
	tally		t;
	int			complete = 0,
				i;

	memset(&t, 0, sizeof(t));
	build_store(dir);
	list_files(dir, &sf);
	orig = harness_read_file(sf.wal, &size);
	CHECK_EQ(wal_records(orig, &size, starts), NWAL);

	/* every truncation: the complete records survive, nothing else */
	for (len = 0; len < size; len++)
	{
		rules		r;
		char		what[160];

		while (complete < NWAL && starts[complete + 1] <= len)
			complete++;
		snprintf(what, sizeof(what), "WAL truncated to %zu of %zu bytes",
				 len, size);
		memset(&r, 0, sizeof(r));
		r.lo = r.hi = complete;
		r.verify_ok = true;
		harness_write_file(sf.wal, orig, len);
		count(&t, probe(dir, &r, what));
		/* the open cut the torn record off (invariant 7) */
		check_size(sf.wal, starts[complete], what);
	}
	harness_write_file(sf.wal, orig, size);

	/* stale bytes after the last record: zeros, garbage, an old record */
	longer = malloc(size + 4096);
	CHECK(longer != NULL);
	memcpy(longer, orig, size);
	for (i = 0; i < 40; i++)
	{
		rules		r;
		char		what[160];
		size_t		extra,
					j;

		if (i < 10)
		{
			extra = 1 + (size_t) i * 7;
			memset(longer + size, 0, extra);
			snprintf(what, sizeof(what), "WAL with %zu zero bytes appended",
					 extra);
		}
		else if (i < 35)
		{
			extra = 1 + harness_rand64(&rng) % 600;
			for (j = 0; j < extra; j++)
				longer[size + j] = (uint8_t) harness_rand64(&rng);
			snprintf(what, sizeof(what), "WAL with %zu random bytes appended",
					 extra);
		}
		else
		{
			/* a whole earlier record again: its sequence does not follow */
			int			rr = i - 35;

			extra = starts[rr + 1] - starts[rr];
			memcpy(longer + size, orig + starts[rr], extra);
			snprintf(what, sizeof(what), "WAL with record %d appended again",
					 rr + 1);
		}
		memset(&r, 0, sizeof(r));
		r.lo = r.hi = NWAL;
		r.verify_ok = true;
		harness_write_file(sf.wal, longer, size + extra);
		count(&t, probe(dir, &r, what));
		/* zeros are room for records (wal.h); the rest is cut */
		check_size(sf.wal, i < 10 ? size + extra : size, what);
	}
	harness_write_file(sf.wal, orig, size);
	probe_intact(dir, "store after restoring the WAL");
	report("WAL torn tails and stale bytes", &t);
	free(longer);
	free(orig);
	free_files(&sf);
}

/* Flips every byte of the MANIFEST and truncates it at every length. */
TEST(manifest_damage)
{
	char	   *dir = harness_tmpdir("corrupt-manifest");
	uint64_t	rng = harness_seed() ^ 0x3a4;
	store_files sf;
	size_t		size,
				p;
	uint8_t    *orig,
			   *longer;
	tally		t;
	rules		r;
	char		what[160];

	memset(&t, 0, sizeof(t));
	build_store(dir);
	list_files(dir, &sf);
	orig = harness_read_file(sf.manifest, &size);
	memset(&r, 0, sizeof(r));
	r.lo = r.hi = NWAL;
	r.open_fails = true;
	for (p = 0; p < size; p++)
	{
		uint8_t		mask = random_mask(&rng);

		snprintf(what, sizeof(what), "MANIFEST byte %zu of %zu ^ 0x%02x",
				 p, size, mask);
		poke(sf.manifest, p, orig[p] ^ mask);
		count(&t, probe(dir, &r, what));
		poke(sf.manifest, p, orig[p]);
	}
	for (p = 0; p < size; p++)
	{
		snprintf(what, sizeof(what), "MANIFEST truncated to %zu of %zu bytes",
				 p, size);
		harness_write_file(sf.manifest, orig, p);
		count(&t, probe(dir, &r, what));
	}
	longer = malloc(size + 1);
	CHECK(longer != NULL);
	memcpy(longer, orig, size);
	longer[size] = 0;
	harness_write_file(sf.manifest, longer, size + 1);
	count(&t, probe(dir, &r, "MANIFEST with a byte appended"));
	harness_write_file(sf.manifest, orig, size);
	probe_intact(dir, "store after restoring the MANIFEST");
	report("MANIFEST flips and truncations", &t);
	CHECK_EQ(t.n[OPEN_FAILED], t.probes);
	free(longer);
	free(orig);
	free_files(&sf);
}

/* ---------------------------------------------------------------------- */
/* Lost and stale files: the store refuses to open, and changes nothing. */

/* What the log callback has been told: notices, and their text. */
static struct
{
	int			notices;
	char		text[8192];
}			told;

/* lsm_log_fn: keeps the notices. */
static void
tell(void *arg, int level, const char *msg)
{
	size_t		n = strlen(told.text);

	(void) arg;
	if (level != LSM_LOG_NOTICE)
		return;
	told.notices++;
	snprintf(told.text + n, sizeof(told.text) - n, "%s\n", msg);
}

/*
 * A fingerprint of the files of dir: their names, sizes and contents, in
 * name order.
 */
static uint64_t
dir_fingerprint(const char *dir)
{
	struct dirent **names;
	uint64_t	h = 0;
	int			n,
				i;

	n = scandir(dir, &names, NULL, alphasort);
	CHECK(n >= 0);
	for (i = 0; i < n; i++)
	{
		const char *c;

		if (names[i]->d_name[0] != '.')
		{
			char	   *path = harness_path(dir, names[i]->d_name);
			uint8_t    *buf;
			size_t		len,
						j;

			for (c = names[i]->d_name; *c; c++)
				h = harness_mix(h ^ (uint8_t) *c);
			buf = harness_read_file(path, &len);
			h = harness_mix(h ^ len);
			for (j = 0; j < len; j++)
				h = harness_mix(h ^ buf[j]);
			free(buf);
			free(path);
		}
		free(names[i]);
	}
	free(names);
	return h;
}

/*
 * Opens the store in dir in every mode (shared, exclusive, read-only,
 * without create_if_missing): each must fail with LSM_CORRUPTION, with a
 * message holding expect, and leave every file as it was.
 */
static void
open_fails_everywhere(const char *dir, const char *expect, const char *what)
{
	uint64_t	before = dir_fingerprint(dir);
	int			mode;

	for (mode = 0; mode < 4; mode++)
	{
		lsm_options o;
		lsm_db	   *db = NULL;
		int			rc;

		store_options(&o);
		o.exclusive = mode == 1;
		o.read_only = mode == 2;
		o.create_if_missing = mode != 3;
		rc = lsm_open(dir, &o, &db);
		CHECK_MSG(rc == LSM_CORRUPTION, "%s, mode %d: lsm_open returned %s: %s",
				  what, mode, lsm_strerror(rc), lsm_errmsg(NULL));
		CHECK_MSG(strstr(lsm_errmsg(NULL), expect) != NULL,
				  "%s, mode %d: \"%s\" does not say \"%s\"", what, mode,
				  lsm_errmsg(NULL), expect);
		CHECK_MSG(dir_fingerprint(dir) == before,
				  "%s, mode %d: the open changed the store's files", what, mode);
	}
}

/*
 * A deleted MANIFEST: the directory still holds tables and a log, so it is
 * a store that lost its manifest, not a new one.  Every mode fails with
 * LSM_CORRUPTION and writes nothing (before: a new, empty store was
 * created over it, lsm_verify passed, and the tables became orphans for
 * the next compaction to remove).  Without LOCK, none is created.  A
 * directory with nothing but an empty log (a creation that died before
 * its first manifest) is still initialised.
 */
TEST(lost_manifest)
{
	char	   *dir = harness_tmpdir("corrupt-nomanifest");
	char	   *manifest = harness_path(dir, "MANIFEST");
	char	   *lock = harness_path(dir, "LOCK");
	char	   *fresh = harness_tmpdir("corrupt-fresh");
	char	   *log = harness_path(fresh, "000001.log");
	lsm_options o;
	lsm_db	   *db;
	void	   *v;
	size_t		vlen;

	build_store(dir);
	CHECK_EQ(unlink(manifest), 0);
	open_fails_everywhere(dir, "has no MANIFEST", "MANIFEST removed");
	CHECK_EQ(unlink(lock), 0);
	open_fails_everywhere(dir, "has no MANIFEST", "MANIFEST and LOCK removed");
	CHECK(access(lock, F_OK) != 0);

	harness_write_file(log, (const uint8_t *) "", 0);
	store_options(&o);
	CHECK_OK(lsm_open(fresh, &o, &db));
	CHECK_DB_OK(db, lsm_put(db, "k", 1, "v", 1));
	CHECK_OK(lsm_close(db));
	CHECK_OK(lsm_open(fresh, &o, &db));
	CHECK_DB_OK(db, lsm_get(db, "k", 1, &v, &vlen));
	lsm_free(v);
	CHECK_OK(lsm_close(db));
	free(manifest);
	free(lock);
	free(log);
}

/*
 * The log the manifest names is gone: every open fails, and so does a
 * writer that catches up to a manifest naming a log that is gone (before,
 * it created an empty one in its place and went on, losing the records
 * the log held).
 */
TEST(lost_log)
{
	char	   *dir = harness_tmpdir("corrupt-nolog");
	store_files sf;
	lsm_options o;
	lsm_db	   *a,
			   *b;

	build_store(dir);
	store_options(&o);
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_OK(lsm_open(dir, &o, &b));
	CHECK_DB_OK(b, lsm_flush(b));
	CHECK_DB_OK(b, lsm_put(b, "c99999", 6, "lost?", 5));
	CHECK_OK(lsm_close(b));
	list_files(dir, &sf);
	CHECK_EQ(unlink(sf.wal), 0);
	CHECK_RC(LSM_CORRUPTION, lsm_put(a, "c99998", 6, "v", 1));
	CHECK_MSG(strstr(lsm_errmsg(a), "write-ahead log named by the manifest is missing") != NULL,
			  "%s", lsm_errmsg(a));
	CHECK_OK(lsm_close(a));
	open_fails_everywhere(dir, "write-ahead log named by the manifest is missing",
						  "log removed");
	free_files(&sf);
}

/*
 * A MANIFEST put back from an older copy (with the log it names) while
 * the store went on: a newer log holds records it does not know of.  The
 * open fails instead of replaying the old state, and nothing is removed
 * (a compaction's sweep would have removed every newer table).
 */
TEST(stale_manifest)
{
	char	   *dir = harness_tmpdir("corrupt-stale");
	store_files sf;
	uint8_t    *old_manifest,
			   *old_log;
	size_t		manifest_len,
				log_len;
	char	   *old_wal,
			   *manifest;
	lsm_options o;
	lsm_db	   *db;

	build_store(dir);
	list_files(dir, &sf);
	old_manifest = harness_read_file(sf.manifest, &manifest_len);
	old_log = harness_read_file(sf.wal, &log_len);
	old_wal = strdup(sf.wal);
	manifest = strdup(sf.manifest);
	free_files(&sf);
	store_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_flush(db));
	CHECK_DB_OK(db, lsm_put(db, "c99999", 6, "new", 3));
	CHECK_OK(lsm_close(db));
	harness_write_file(manifest, old_manifest, manifest_len);
	harness_write_file(old_wal, old_log, log_len);
	open_fails_everywhere(dir, "is newer than the log its MANIFEST names",
						  "old MANIFEST");
	free(old_manifest);
	free(old_log);
	free(old_wal);
	free(manifest);
}

/*
 * A MANIFEST with a well-formed structure and a good checksum but one value
 * no writer writes (issue 16: they were used unchecked): last_seq past the
 * 56-bit sequences, a file's min_seq above its max_seq or its max_seq past
 * last_seq, a global sequence its min_seq and max_seq are not, more
 * deletions than entries, a size too small for a footer or for the filters
 * the file is said to hold, sizes adding up past 2^64, and a value filter
 * in a store without value filters.  Every open mode fails with
 * LSM_CORRUPTION naming the value and the offset, and changes no file; the
 * store is whole once the MANIFEST is put back.
 */
TEST(manifest_forged_fields)
{
	static const struct
	{
		forge_field_edit edit;
		const char *expect;
	}			bad[] = {
		{{FORGE_LAST_SEQ, UINT64_C(1) << 56},
		"last_seq 72057594037927936 is above 72057594037927935"},
		{{FORGE_LAST_SEQ, UINT64_MAX}, "last_seq 18446744073709551615 is above"},
		{{FORGE_MIN_SEQ, 1}, "are not in order below last_seq"},
		{{FORGE_MAX_SEQ, 1}, "are not in order below last_seq"},
		{{FORGE_GLOBAL_SEQ, 1}, "are not its global sequence 1"},
		{{FORGE_DELETIONS, 1}, "is above its entry count"},
		{{FORGE_SIZE, LSM_SST_FOOTER - 1}, "of 63 bytes cannot hold a footer"},
		{{FORGE_FILTER_BYTES, 1}, "cannot hold a footer, filter_bytes"},
		{{FORGE_SIZE, UINT64_C(1) << 63}, "sizes of the files add up past 2^64"},
		{{FORGE_NO_VALUE_FILTERS, 600},
		"has value_filter_bytes 600 in a store without value filters"},
	};
	char	   *dir = harness_tmpdir("corrupt-mfields");
	char	   *path = harness_path(dir, "MANIFEST");
	char		what[160];
	uint8_t    *good;
	size_t		len;
	int			i;

	build_store(dir);
	good = harness_read_file(path, &len);
	for (i = 0; i < (int) (sizeof(bad) / sizeof(bad[0])); i++)
	{
		snprintf(what, sizeof(what), "forged MANIFEST %d (%s)", i,
				 bad[i].expect);
		CHECK_EQ(forge_manifest(dir, forge_field, (void *) &bad[i].edit), 0);
		open_fails_everywhere(dir, "malformed manifest \"MANIFEST\" at offset",
							  what);
		open_fails_everywhere(dir, bad[i].expect, what);
		harness_write_file(path, good, len);
	}
	/* a store without value filters whose tables have none is well formed */
	{
		forge_field_edit none = {FORGE_NO_VALUE_FILTERS, 0};
		lsm_options o;
		lsm_db	   *db;

		CHECK_EQ(forge_manifest(dir, forge_field, &none), 0);
		store_options(&o);
		o.read_only = 1;
		CHECK_OK(lsm_open(dir, &o, &db));
		CHECK_OK(lsm_close(db));
		harness_write_file(path, good, len);
	}
	probe_intact(dir, "store after restoring the MANIFEST");
	free(good);
	free(path);
}

/*
 * Files the manifest does not name (left by an interrupted flush,
 * compaction or ingest) do not stop the store, and lsm_verify names each
 * through the log callback; an empty newer log is one of them.
 */
TEST(orphans_reported)
{
	char	   *dir = harness_tmpdir("corrupt-orphans");
	store_files sf;
	char	   *orphan_sst = harness_path(dir, "000900.sst");
	char	   *orphan_log = harness_path(dir, "000901.log");
	uint8_t    *buf;
	size_t		len;
	lsm_options o;
	lsm_db	   *db;

	build_store(dir);
	list_files(dir, &sf);
	buf = harness_read_file(sf.sst[0], &len);
	harness_write_file(orphan_sst, buf, len);
	harness_write_file(orphan_log, buf, 0);
	free(buf);
	store_options(&o);
	o.log = tell;
	memset(&told, 0, sizeof(told));
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_EQ(told.notices, 0);
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_EQ(told.notices, 2);
	CHECK_MSG(strstr(told.text, "000900.sst") != NULL &&
			  strstr(told.text, "000901.log") != NULL &&
			  strstr(told.text, "not named by its MANIFEST") != NULL,
			  "%s", told.text);
	CHECK_OK(lsm_close(db));
	free_files(&sf);
	free(orphan_sst);
	free(orphan_log);
}

/*
 * The orphan sweep removes only what it recognises exactly as a store file
 * that no manifest names: 000900.sst goes, while names that merely begin
 * like one (a copy someone left, "000900.sst.orig"; "000901.logfoo";
 * "000012.memo") stay.  It once took them for store files (sscanf of
 * "%llu.%3s").
 */
TEST(sweep_exact_names)
{
	char	   *dir = harness_tmpdir("corrupt-sweep");
	static const char *kept[] = {"000900.sst.orig", "000901.logfoo",
	"000012.memo"};
	char	   *orphan = harness_path(dir, "000900.sst");
	lsm_options o;
	lsm_db	   *db;
	size_t		i;

	build_store(dir);
	harness_write_file(orphan, "x", 1);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
	{
		char	   *p = harness_path(dir, kept[i]);

		harness_write_file(p, "x", 1);
		free(p);
	}
	store_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_compact(db));
	CHECK_OK(lsm_close(db));
	CHECK_MSG(access(orphan, F_OK) != 0, "%s was not removed", orphan);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
	{
		char	   *p = harness_path(dir, kept[i]);

		CHECK_MSG(access(p, F_OK) == 0, "%s was removed", p);
		free(p);
	}
	free(orphan);
}

/* ---------------------------------------------------------------------- */
/* Errors keep their detail: the errno of an I/O error, where a checksum
 * failed. */

/*
 * Opens the store in dir while every open of a table fails with EACCES
 * (injected: the tests may run as root, who reads any file): LSM_IOERR
 * with the errno and the file's name, whatever the path that opens it.
 */
TEST(unreadable_table)
{
	char	   *dir = harness_tmpdir("corrupt-eacces");
	lsm_options o;
	lsm_db	   *a,
			   *b;
	lsm_fault	f;
	lsm_stage  *st;
	void	   *v;
	size_t		vlen;
	int			i;

	build_store(dir);
	store_options(&o);
	memset(&f, 0, sizeof(f));
	f.fail_open_suffix = ".sst";
	f.fail_errno = EACCES;

	/* open */
	lsm_fault_install(&f);
	CHECK_RC(LSM_IOERR, lsm_open(dir, &o, &a));
	lsm_fault_install(NULL);
	CHECK_EQ(lsm_errno(NULL), EACCES);
	CHECK_MSG(strstr(lsm_errmsg(NULL), ".sst") != NULL &&
			  strstr(lsm_errmsg(NULL), strerror(EACCES)) != NULL,
			  "%s", lsm_errmsg(NULL));

	/* refresh: a table another handle flushed; not sticky once readable */
	CHECK_OK(lsm_open(dir, &o, &a));
	CHECK_OK(lsm_open(dir, &o, &b));
	CHECK_DB_OK(b, lsm_put(b, "c99999", 6, "new", 3));
	CHECK_DB_OK(b, lsm_flush(b));
	lsm_fault_install(&f);
	CHECK_RC(LSM_IOERR, lsm_refresh(a));
	lsm_fault_install(NULL);
	CHECK_EQ(lsm_errno(a), EACCES);
	CHECK(strstr(lsm_errmsg(a), ".sst") != NULL);
	CHECK_DB_OK(a, lsm_refresh(a));
	CHECK_DB_OK(a, lsm_get(a, "c99999", 6, &v, &vlen));
	lsm_free(v);

	/* compaction (opens its outputs) and a stage (opens its runs) */
	lsm_fault_install(&f);
	CHECK_RC(LSM_IOERR, lsm_compact_all(a));
	CHECK_EQ(lsm_errno(a), EACCES);
	CHECK_DB_OK(b, lsm_stage_open(b, 4096, &st));
	for (i = 0; i < 400 && lsm_stage_runs(st) == 0; i++)
	{
		char		key[16];

		if (lsm_stage_put(st, key, (size_t) sprintf(key, "s%05d", i),
						  "0123456789012345678901234567890123456789", 40) != LSM_OK)
			break;
	}
	lsm_fault_install(NULL);
	CHECK_MSG(lsm_errno(b) == EACCES, "stage: errno %d: %s", lsm_errno(b),
			  lsm_errmsg(b));
	lsm_stage_abort(st);
	CHECK_OK(lsm_close(a));
	CHECK_OK(lsm_close(b));
}

/*
 * A checksum failure met by a scan describes itself in the handle's
 * lsm_errmsg (the table and the offset), as one met by a get or by
 * lsm_verify does: before, the iterator kept it to itself until closed.
 */
/* The log callback of background_failure: counts LSM_LOG_BACKGROUND. */
static void
count_background(void *arg, int level, const char *msg)
{
	(void) msg;
	if (level == LSM_LOG_BACKGROUND)
		(*(int *) arg)++;
}

/*
 * An automatic flush that fails (its table cannot be created: EACCES on
 * every .sst open) does not fail the write that ran it, which is
 * committed: it is counted in lsm_stats with its message and told to the
 * log callback, and a later write flushes once the fault is gone, with
 * every key there.
 */
TEST(background_failure)
{
	char	   *dir = harness_tmpdir("corrupt-background");
	lsm_options o;
	lsm_db	   *db;
	lsm_fault	f;
	lsm_stats	st;
	char		key[32],
				val[100];
	int			told = 0,
				i,
				n;

	lsm_options_init(&o);
	o.memtable_bytes = 64 * 1024;
	o.log = count_background;
	o.log_arg = &told;
	memset(val, 'v', sizeof(val));
	memset(&f, 0, sizeof(f));
	f.fail_open_suffix = ".sst";
	f.fail_errno = EACCES;
	CHECK_OK(lsm_open(dir, &o, &db));

	lsm_fault_install(&f);
	for (n = 0; n < 100000; n++)
	{
		snprintf(key, sizeof(key), "k%06d", n);
		CHECK_DB_OK(db, lsm_put(db, key, strlen(key), val, sizeof(val)));
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		if (st.background_errors > 0)
			break;
	}
	lsm_fault_install(NULL);
	CHECK_MSG(st.background_errors > 0, "no failure after %d puts", n);
	CHECK_EQ(st.flushes, 0);
	CHECK_EQ(told, (int) st.background_errors);
	CHECK_MSG(strstr(st.last_background_error, "automatic flush") != NULL &&
			  strstr(st.last_background_error, strerror(EACCES)) != NULL,
			  "%s", st.last_background_error);

	/* the next write flushes; nothing was lost */
	snprintf(key, sizeof(key), "k%06d", ++n);
	CHECK_DB_OK(db, lsm_put(db, key, strlen(key), val, sizeof(val)));
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	CHECK_MSG(st.flushes > 0, "no flush after the fault");
	for (i = 0; i <= n; i++)
	{
		void	   *v;
		size_t		vlen;

		snprintf(key, sizeof(key), "k%06d", i);
		CHECK_DB_OK(db, lsm_get(db, key, strlen(key), &v, &vlen));
		CHECK_EQ(vlen, sizeof(val));
		free(v);
	}
	lsm_reset_counters(db);
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	CHECK_EQ(st.background_errors, 0);
	CHECK_EQ(st.last_background_error[0], '\0');
	CHECK_DB_OK(db, lsm_verify(db));
	lsm_close(db);
}

/*
 * A store directory whose path leaves no room for the store's file names
 * (LSM_DIR_MAX) is refused at open, so that no path is ever truncated.
 */
TEST(long_directory)
{
	char		dir[5000];
	lsm_db	   *db;

	memset(dir, 'd', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	CHECK_RC(LSM_INVALID, lsm_open(dir, NULL, &db));
	CHECK_MSG(strstr(lsm_errmsg(NULL), "too long") != NULL, "%s",
			  lsm_errmsg(NULL));
}

TEST(scan_error_detail)
{
	char	   *dir = harness_tmpdir("corrupt-scan");
	store_files sf;
	lsm_options o;
	lsm_db	   *db;
	lsm_iter   *it;
	uint8_t    *orig;
	size_t		len;
	int			rc,
				n = 0;

	build_store(dir);
	list_files(dir, &sf);
	orig = harness_read_file(sf.sst[0], &len);
	poke(sf.sst[0], 20, orig[20] ^ 0x40);	/* in its first data block */
	store_options(&o);
	CHECK_OK(lsm_open(dir, &o, &db));
	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	for (lsm_iter_seek(it, NULL, 0); lsm_iter_valid(it); lsm_iter_next(it))
		n++;
	rc = lsm_iter_status(it);
	CHECK_MSG(rc == LSM_CORRUPTION, "scan of %d entries ended with %s", n,
			  lsm_strerror(rc));
	CHECK_MSG(strstr(lsm_errmsg(db), "checksum mismatch") != NULL &&
			  strstr(lsm_errmsg(db), "offset") != NULL &&
			  strstr(lsm_errmsg(db), strrchr(sf.sst[0], '/') + 1) != NULL,
			  "lsm_errmsg after the scan: \"%s\"", lsm_errmsg(db));
	lsm_iter_close(it);
	CHECK_OK(lsm_close(db));
	free(orig);
	free_files(&sf);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(sstable_flips);
	RUN(sstable_truncation);
	RUN(wal_flips);
	RUN(wal_torn_tails);
	RUN(manifest_damage);
	RUN(lost_manifest);
	RUN(lost_log);
	RUN(stale_manifest);
	RUN(manifest_forged_fields);
	RUN(orphans_reported);
	RUN(unreadable_table);
	RUN(scan_error_detail);
	RUN(background_failure);
	RUN(long_directory);
	RUN(sweep_exact_names);
	return harness_done();
}

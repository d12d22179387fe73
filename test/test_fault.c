/*
 * test_fault.c
 *		Fault injection through the I/O shim (env.h) at every step of writes,
 *		flushes, compactions and manifest switches, and simulated power
 *		failures that drop unsynced data.
 *
 * Every case starts from a template store built deterministically once per
 * test (12 KiB memtable, 8 KiB files, 1 KiB blocks): it holds level-1 tables
 * from a compaction, level-0 tables and unflushed WAL records.  Batch b
 * writes a marker key m<b>, two keys u<b>-0 and u<b>-1 of its own and a few
 * shared keys k<n> (puts and a delete), with values that name b and the key.
 * The contents of a store are therefore a function of which batches were
 * applied: a check finds the applied set from the markers, rebuilds the
 * expected contents and compares them with an lsm_get of every key and a
 * full scan.  A lost acknowledged batch, a batch that is partly visible, a
 * resurrected old version or a wrong value all fail that comparison.
 *
 * Fault sweeps (fault_*): for N = 1, 2, ... copy the template, open it,
 * install a fault that fails the Nth write (or fsync) with EIO or ENOSPC,
 * optionally after a short write, optionally sticky, and run a fixed script:
 * batches (some of which fill the memtable, flush it and start an automatic
 * compaction), explicit flushes and compactions, the last batches staying
 * in the WAL.  Each N runs twice: once stopping after the call in which the
 * failure was injected (as if the process then went away), once carrying on
 * with the rest of the script on the same handle.  Every error must be
 * LSM_IOERR (LSM_NOSPACE for ENOSPC) with a message and the injected errno.
 * Then the fault is removed and the handle checked, closed (which must not
 * crash), reopened, verified and checked again (every acknowledged batch
 * present, every batch wholly present or wholly absent), and it must keep
 * working: more batches, a flush, a compaction, another reopen.  The sweep
 * ends at the first N that the script never reaches.
 *
 * Power failures (drop_*): a forked child opens a copy of the template with
 * sync tracking on, runs a random script, reports issued and acknowledged
 * batches and completed flushes through a pipe, and at a random step calls
 * lsm_fault_drop_unsynced() and _exit(0) without closing anything.  In half
 * of the runs the failure comes in the middle of a step: from a random write
 * and a random fsync on, every write and fsync fails, and the drop follows
 * that step.  The parent reopens and checks: with sync = 1 every
 * acknowledged batch survives; with sync = 0 every batch included in a
 * completed flush survives; in both the surviving batches are a prefix of
 * the issued ones and the store verifies and keeps working.
 *
 * LSM_TEST_SEED repeats the random scripts of the drop_* cases; the fault
 * sweeps are deterministic.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "harness.h"
#include "env.h"

#define NBASE		240			/* shared keys k0000 .. */
#define MAXB		160			/* batch ids 0 .. MAXB - 1 */
#define NKEYS		(NBASE + 3 * MAXB)
#define NFILL		(NBASE / 8) /* batches 0 .. NFILL - 1 fill the k keys */
#define NTMPL		48			/* batches in the template */
#define NSCRIPT		26			/* batches in a fault sweep's script */
#define NMORE		5			/* batches written after recovery */
#define MAXOPS		16
#define VAL_MAX		256
#define DROP_RUNS	150			/* power failures per drop_* case */
#define DROP_MAXB	40			/* batches a drop child may issue */

/* One entry of a batch: key index and whether it is a delete. */
typedef struct bop
{
	int			idx;
	int			del;
} bop;

/* ---------------------------------------------------------------------- */
/* The workload: keys, values, batches and the reference model. */

/*
 * Writes the name of key idx into buf (at least 16 bytes); returns its
 * length.  Key indexes sort like the names: k0000.. < m0000.. < u0000-0..
 */
static size_t
key_name(int idx, char *buf)
{
	if (idx < NBASE)
		return (size_t) sprintf(buf, "k%04d", idx);
	idx -= NBASE;
	if (idx < MAXB)
		return (size_t) sprintf(buf, "m%04d", idx);
	idx -= MAXB;
	return (size_t) sprintf(buf, "u%04d-%d", idx / 2, idx % 2);
}

/* Index of the marker key of batch b. */
static int
marker_idx(int b)
{
	return NBASE + b;
}

/*
 * Writes the value batch b puts under key idx into buf (VAL_MAX bytes);
 * returns its length (40 to 239 bytes, naming b and idx).
 */
static size_t
value_of(int b, int idx, char *buf)
{
	uint64_t	h = harness_mix(((uint64_t) b << 32) | (uint32_t) idx);
	size_t		len = 40 + h % 200;
	size_t		n;

	n = (size_t) sprintf(buf, "b%04d/i%05d/", b, idx);
	for (; n < len; n++)
	{
		h = harness_mix(h);
		buf[n] = (char) ('a' + h % 26);
	}
	return len;
}

/*
 * Fills ops with the entries of batch b and returns how many.  Every batch
 * puts its marker and two keys of its own; the first NFILL batches put eight
 * shared keys each (together all of them), later ones overwrite four random
 * shared keys and delete one.
 */
static int
batch_ops(int b, bop *ops)
{
	uint64_t	r = harness_mix(UINT64_C(0x5eed000000) + (uint64_t) b);
	int			n = 0,
				j;

	ops[n].idx = marker_idx(b);
	ops[n++].del = 0;
	ops[n].idx = NBASE + MAXB + 2 * b;
	ops[n++].del = 0;
	ops[n].idx = NBASE + MAXB + 2 * b + 1;
	ops[n++].del = 0;
	if (b < NFILL)
	{
		for (j = 0; j < 8; j++)
		{
			ops[n].idx = b * 8 + j;
			ops[n++].del = 0;
		}
	}
	else
	{
		for (j = 0; j < 5; j++)
		{
			r = harness_mix(r);
			ops[n].idx = (int) (r % NBASE);
			ops[n++].del = j == 4;
		}
	}
	return n;
}

/* Builds batch b as an lsm_batch (release with lsm_batch_free). */
static lsm_batch *
make_batch(int b)
{
	bop			ops[MAXOPS];
	char		key[32],
				val[VAL_MAX];
	lsm_batch  *batch = lsm_batch_new();
	int			n,
				i;

	CHECK(batch != NULL);
	CHECK(b >= 0 && b < MAXB);
	n = batch_ops(b, ops);
	for (i = 0; i < n; i++)
	{
		size_t		klen = key_name(ops[i].idx, key);

		if (ops[i].del)
			CHECK_OK(lsm_batch_delete(batch, key, klen));
		else
			CHECK_OK(lsm_batch_put(batch, key, klen, val,
								   value_of(b, ops[i].idx, val)));
	}
	return batch;
}

/*
 * Applies batch b to the model: state[idx] is the batch whose value key idx
 * holds, or -1 if it is absent.
 */
static void
apply_batch(int *state, int b)
{
	bop			ops[MAXOPS];
	int			n = batch_ops(b, ops),
				i;

	for (i = 0; i < n; i++)
		state[ops[i].idx] = ops[i].del ? -1 : b;
}

/* Writes batch b through lsm_write; returns its return code. */
static int
write_batch(lsm_db *db, int b)
{
	lsm_batch  *batch = make_batch(b);
	int			rc = lsm_write(db, batch);

	lsm_batch_free(batch);
	return rc;
}

/* The options of every store here; sync as given. */
static void
store_options(lsm_options *o, int sync)
{
	lsm_options_init(o);
	o->memtable_bytes = 12 * 1024;
	o->file_bytes = 8 * 1024;
	o->block_bytes = 1024;
	o->sync = sync;
	o->lock_timeout_ms = 2000;
}

/* ---------------------------------------------------------------------- */
/* Checks. */

/*
 * Compares the whole contents of db with the model: an lsm_get of every key
 * and a full scan.  ctx names the situation in failure messages.
 */
static void
check_contents(lsm_db *db, const int *state, const char *ctx)
{
	char		key[32],
				want[VAL_MAX];
	lsm_iter   *it;
	int			idx,
				rc;

	for (idx = 0; idx < NKEYS; idx++)
	{
		size_t		klen = key_name(idx, key),
					vlen,
					wlen;
		void	   *val;

		rc = lsm_get(db, key, klen, &val, &vlen);
		if (state[idx] < 0)
		{
			CHECK_MSG(rc == LSM_NOTFOUND,
					  "%s: lsm_get(%s) returned %s (%s), expected not found%s%.*s",
					  ctx, key, lsm_strerror(rc), lsm_errmsg(db),
					  rc == LSM_OK ? "; value " : "",
					  rc == LSM_OK ? (int) (vlen > 20 ? 20 : vlen) : 0,
					  rc == LSM_OK ? (const char *) val : "");
			continue;
		}
		CHECK_MSG(rc == LSM_OK,
				  "%s: lsm_get(%s) returned %s (%s), expected the value of batch %d",
				  ctx, key, lsm_strerror(rc), lsm_errmsg(db), state[idx]);
		wlen = value_of(state[idx], idx, want);
		CHECK_MSG(vlen == wlen && memcmp(val, want, wlen) == 0,
				  "%s: lsm_get(%s) returned \"%.12s...\", expected \"%.12s...\"",
				  ctx, key, (const char *) val, want);
		lsm_free(val);
	}

	CHECK_DB_OK(db, lsm_iter_open(db, &it));
	lsm_iter_seek(it, NULL, 0);
	for (idx = 0; idx < NKEYS; idx++)
	{
		const void *k,
				   *v;
		size_t		klen,
					vlen,
					wklen,
					wvlen;

		if (state[idx] < 0)
			continue;
		wklen = key_name(idx, key);
		CHECK_MSG(lsm_iter_valid(it),
				  "%s: scan ended (status %s) before key %s", ctx,
				  lsm_strerror(lsm_iter_status(it)), key);
		k = lsm_iter_key(it, &klen);
		v = lsm_iter_value(it, &vlen);
		CHECK_MSG(klen == wklen && memcmp(k, key, klen) == 0,
				  "%s: scan returned key %.*s, expected %s", ctx,
				  (int) klen, (const char *) k, key);
		wvlen = value_of(state[idx], idx, want);
		CHECK_MSG(vlen == wvlen && memcmp(v, want, vlen) == 0,
				  "%s: scan returned a wrong value for %s", ctx, key);
		lsm_iter_next(it);
	}
	if (lsm_iter_valid(it))
	{
		const void *k;
		size_t		klen;

		k = lsm_iter_key(it, &klen);
		CHECK_MSG(false, "%s: scan returned unexpected key %.*s", ctx,
				  (int) klen, (const char *) k);
	}
	CHECK_MSG(lsm_iter_status(it) == LSM_OK, "%s: scan ended with %s", ctx,
			  lsm_strerror(lsm_iter_status(it)));
	lsm_iter_close(it);
}

/*
 * Finds which of batches first .. end - 1 db holds (by their markers),
 * requires every batch with must[b] set to be among them and the present
 * ones to be a prefix of the range when prefix is set, then compares the
 * whole store with the template's contents plus the present batches.
 * Returns the number of present batches.
 */
static int
check_store(lsm_db *db, const int *tmpl_state, int first, int end,
			const bool *must, bool prefix, const char *ctx)
{
	int			state[NKEYS];
	char		key[32],
				want[VAL_MAX];
	bool		gap = false;
	int			b,
				present = 0;

	memcpy(state, tmpl_state, sizeof(state));
	for (b = first; b < end; b++)
	{
		size_t		klen = key_name(marker_idx(b), key),
					vlen,
					wlen;
		void	   *val;
		int			rc = lsm_get(db, key, klen, &val, &vlen);

		CHECK_MSG(rc == LSM_OK || rc == LSM_NOTFOUND,
				  "%s: lsm_get(%s) returned %s (%s)", ctx, key,
				  lsm_strerror(rc), lsm_errmsg(db));
		if (rc == LSM_NOTFOUND)
		{
			CHECK_MSG(!must[b], "%s: acknowledged batch %d is lost", ctx, b);
			gap = true;
			continue;
		}
		wlen = value_of(b, marker_idx(b), want);
		CHECK_MSG(vlen == wlen && memcmp(val, want, wlen) == 0,
				  "%s: marker of batch %d has a wrong value", ctx, b);
		lsm_free(val);
		CHECK_MSG(!prefix || !gap,
				  "%s: batch %d survived but an earlier one did not", ctx, b);
		apply_batch(state, b);
		present++;
	}
	check_contents(db, state, ctx);
	return present;
}

/* Requires rc to be the error an injected errno err should give. */
static void
check_error(lsm_db *db, int rc, int err, const char *ctx)
{
	int			want = err == ENOSPC ? LSM_NOSPACE : LSM_IOERR;
	const char *msg = lsm_errmsg(db);

	CHECK_MSG(rc == want, "%s returned %s (%s), expected %s", ctx,
			  lsm_strerror(rc), msg, lsm_strerror(want));
	CHECK_MSG(msg != NULL && msg[0] != '\0', "%s: lsm_errmsg is empty", ctx);
	CHECK_MSG(lsm_errno(db) == err, "%s: lsm_errno is %d, expected %d (%s)",
			  ctx, lsm_errno(db), err, msg);
}

/* ---------------------------------------------------------------------- */
/* Store directories. */

/*
 * Builds the template store in dir: batches 0 .. NTMPL - 1 with flushes and
 * a compaction on the way, leaving level-1 tables, level-0 tables and WAL
 * records.  Fills state with its contents.
 */
static void
build_template(const char *dir, int *state)
{
	lsm_options o;
	lsm_stats	st;
	lsm_db	   *db;
	int			b,
				i;

	for (i = 0; i < NKEYS; i++)
		state[i] = -1;
	store_options(&o, 1);
	CHECK_OK(lsm_open(dir, &o, &db));
	for (b = 0; b < NTMPL; b++)
	{
		CHECK_DB_OK(db, write_batch(db, b));
		apply_batch(state, b);
		if (b == NFILL)
		{
			CHECK_DB_OK(db, lsm_flush(db));
			CHECK_DB_OK(db, lsm_compact(db));
		}
		if (b == NTMPL - 6)
			CHECK_DB_OK(db, lsm_flush(db));
	}
	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	CHECK_MSG(st.level[0].files >= 1, "template has no level-0 table");
	CHECK_MSG(st.level[1].files >= 2, "template has %d level-1 tables",
			  st.level[1].files);
	CHECK_MSG(st.memtable_entries > 0, "template has no unflushed writes");
	check_contents(db, state, "template");
	CHECK_DB_OK(db, lsm_verify(db));
	CHECK_OK(lsm_close(db));
}

/*
 * After recovery: writes batches first .. first + NMORE - 1, flushes,
 * compacts, reopens and checks, all without faults.  *dbp is the open
 * handle (replaced by the reopened one); ctx names the situation.
 */
static void
keep_working(const char *dir, lsm_db **dbp, const int *tmpl_state,
			 int tmpl_end, int first, const bool *acked, const char *ctx)
{
	lsm_options o;
	bool		must[MAXB];
	char		where[256];
	int			b;

	memcpy(must, acked, sizeof(must));
	for (b = first; b < first + NMORE; b++)
	{
		snprintf(where, sizeof(where), "%s, then batch %d", ctx, b);
		CHECK_MSG(write_batch(*dbp, b) == LSM_OK, "%s: lsm_write failed: %s",
				  where, lsm_errmsg(*dbp));
		must[b] = true;
		if (b == first + 2)
			CHECK_DB_OK(*dbp, lsm_flush(*dbp));
	}
	snprintf(where, sizeof(where), "%s, then more writes", ctx);
	CHECK_DB_OK(*dbp, lsm_flush(*dbp));
	CHECK_DB_OK(*dbp, lsm_compact(*dbp));
	CHECK_DB_OK(*dbp, lsm_verify(*dbp));
	check_store(*dbp, tmpl_state, tmpl_end, first + NMORE, must, false, where);
	CHECK_OK(lsm_close(*dbp));
	*dbp = NULL;
	store_options(&o, 1);
	CHECK_OK(lsm_open(dir, &o, dbp));
	CHECK_DB_OK(*dbp, lsm_verify(*dbp));
	snprintf(where, sizeof(where), "%s, then more writes and a reopen", ctx);
	check_store(*dbp, tmpl_state, tmpl_end, first + NMORE, must, false, where);
}

/* ---------------------------------------------------------------------- */
/* Fault sweeps. */

typedef enum step_kind
{
	STEP_WRITE,
	STEP_FLUSH,
	STEP_COMPACT
} step_kind;

typedef struct step
{
	step_kind	kind;
	int			batch;			/* for STEP_WRITE */
} step;

/*
 * Fills steps with the sweep's script and returns its length: NSCRIPT
 * batches (after the template's) with explicit flushes and compactions
 * among them; the last few batches come after the last compaction, so the
 * store is closed with records in its WAL.
 */
static int
sweep_script(step *steps)
{
	int			n = 0,
				i;

	for (i = 0; i < NSCRIPT; i++)
	{
		steps[n].kind = STEP_WRITE;
		steps[n++].batch = NTMPL + i;
		if (i == 7 || i == 20)
			steps[n++].kind = STEP_FLUSH;
		if (i == 12 || i == 21)
			steps[n++].kind = STEP_COMPACT;
	}
	return n;
}

typedef struct fault_mode
{
	const char *tag;
	bool		on_sync;		/* fail an fsync rather than a write */
	int			err;			/* EIO or ENOSPC */
	int			short_write;
	int			sticky;
} fault_mode;

/* Totals of a sweep, for its summary line. */
typedef struct sweep_stats
{
	int			runs;
	int			failures;		/* calls that returned an error */
	int			lost;			/* unacknowledged batches absent at the end */
} sweep_stats;

/*
 * One position of a sweep: copies the template into work, fails the nth
 * write (fsync) while running the script, stopping after the call in which
 * it failed if stop is set, then checks the handle, closes, reopens, verifies,
 * checks and keeps working.  Returns whether a failure was injected.
 */
static bool
sweep_position(const char *tmpl, const char *work, const int *tmpl_state,
			   const fault_mode *m, long n, bool stop, sweep_stats *ss)
{
	lsm_fault	f;
	lsm_options o;
	lsm_db	   *db;
	lsm_stats	st;
	step		steps[NSCRIPT + 8];
	bool		acked[MAXB];
	char		ctx[256];
	int			nsteps = sweep_script(steps),
				i,
				present,
				nissued = 0,
				nacked = 0;

	harness_clear_dir(work);
	harness_copy_dir(tmpl, work);
	memset(acked, 0, sizeof(acked));
	store_options(&o, 1);
	snprintf(ctx, sizeof(ctx), "%s at N=%ld%s", m->tag, n,
			 stop ? " (stopping at the failure)" : "");
	CHECK_MSG(lsm_open(work, &o, &db) == LSM_OK, "%s: open: %s", ctx,
			  lsm_errmsg(NULL));

	memset(&f, 0, sizeof(f));
	if (m->on_sync)
		f.fail_sync_at = n;
	else
		f.fail_write_at = n;
	f.fail_errno = m->err;
	f.short_write = m->short_write;
	f.sticky = m->sticky;
	lsm_fault_install(&f);
	for (i = 0; i < nsteps && !(stop && f.injected > 0); i++)
	{
		char		what[300];
		int			rc;

		switch (steps[i].kind)
		{
			case STEP_WRITE:
				rc = write_batch(db, steps[i].batch);
				snprintf(what, sizeof(what), "%s: lsm_write of batch %d",
						 ctx, steps[i].batch);
				nissued++;
				if (rc == LSM_OK)
				{
					acked[steps[i].batch] = true;
					nacked++;
				}
				break;
			case STEP_FLUSH:
				rc = lsm_flush(db);
				snprintf(what, sizeof(what), "%s: lsm_flush (step %d)",
						 ctx, i);
				break;
			default:
				rc = lsm_compact(db);
				snprintf(what, sizeof(what), "%s: lsm_compact (step %d)",
						 ctx, i);
				break;
		}
		if (rc != LSM_OK)
		{
			check_error(db, rc, m->err, what);
			ss->failures++;
		}
	}
	lsm_fault_install(NULL);

	/* the handle that saw the failure still reads consistently */
	snprintf(ctx, sizeof(ctx), "%s at N=%ld%s, same handle", m->tag, n,
			 stop ? " (stopping at the failure)" : "");
	check_store(db, tmpl_state, NTMPL, NTMPL + NSCRIPT, acked, false, ctx);
	if (f.injected == 0)
	{
		/* past the end: the script must have done all its work */
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		CHECK_EQ(nacked, NSCRIPT);
		printf("# %s: the script made %llu flushes and %llu compactions\n",
			   m->tag, (unsigned long long) st.flushes,
			   (unsigned long long) st.compactions);
		/* two explicit flushes, so one at least came from a full memtable */
		CHECK_MSG(st.flushes >= 3 && st.compactions >= 2,
				  "%s: the script made %llu flushes and %llu compactions",
				  ctx, (unsigned long long) st.flushes,
				  (unsigned long long) st.compactions);
		CHECK_MSG(st.memtable_entries > 0, "%s: the script ends with no WAL",
				  ctx);
	}
	CHECK_OK(lsm_close(db));

	snprintf(ctx, sizeof(ctx), "%s at N=%ld%s, reopened", m->tag, n,
			 stop ? " (stopping at the failure)" : "");
	CHECK_MSG(lsm_open(work, &o, &db) == LSM_OK, "%s: lsm_open: %s",
			  ctx, lsm_errmsg(NULL));
	CHECK_MSG(lsm_verify(db) == LSM_OK, "%s: lsm_verify: %s", ctx,
			  lsm_errmsg(db));
	present = check_store(db, tmpl_state, NTMPL, NTMPL + NSCRIPT, acked,
						  false, ctx);
	ss->lost += nissued - present;
	CHECK(present >= nacked);
	keep_working(work, &db, tmpl_state, NTMPL, NTMPL + NSCRIPT, acked, ctx);
	CHECK_OK(lsm_close(db));
	ss->runs++;
	return f.injected > 0;
}

/*
 * Runs the sweep for one kind of fault: for N = 1, 2, ... until the script
 * runs without reaching the Nth write (fsync), fails it there, once
 * stopping at the failure and once carrying on with the script.
 */
static void
fault_sweep(const fault_mode *m)
{
	char	   *tmpl = harness_tmpdir("fault-tmpl");
	char	   *work = harness_tmpdir("fault-work");
	int			tmpl_state[NKEYS];
	sweep_stats ss;
	long		n;

	memset(&ss, 0, sizeof(ss));
	build_template(tmpl, tmpl_state);
	for (n = 1;; n++)
	{
		if (!sweep_position(tmpl, work, tmpl_state, m, n, true, &ss))
			break;
		if (!sweep_position(tmpl, work, tmpl_state, m, n, false, &ss))
			break;
	}
	printf("# %s: %ld positions, %d runs, %d failed calls, "
		   "%d unacknowledged batches absent after recovery\n",
		   m->tag, n, ss.runs, ss.failures, ss.lost);
}

/* The Nth write fails with EIO. */
TEST(fault_write_eio)
{
	fault_mode	m = {"write EIO", false, EIO, 0, 0};

	fault_sweep(&m);
}

/* The Nth write fails with ENOSPC. */
TEST(fault_write_enospc)
{
	fault_mode	m = {"write ENOSPC", false, ENOSPC, 0, 0};

	fault_sweep(&m);
}

/* The Nth write writes half its bytes, then fails with EIO. */
TEST(fault_short_write_eio)
{
	fault_mode	m = {"short write EIO", false, EIO, 1, 0};

	fault_sweep(&m);
}

/*
 * The disk fills up: the Nth write writes half its bytes and it and every
 * later write fail with ENOSPC.
 */
TEST(fault_short_write_enospc_sticky)
{
	fault_mode	m = {"short write ENOSPC sticky", false, ENOSPC, 1, 1};

	fault_sweep(&m);
}

/* The Nth fsync fails with EIO. */
TEST(fault_sync_eio)
{
	fault_mode	m = {"fsync EIO", true, EIO, 0, 0};

	fault_sweep(&m);
}

/* The Nth fsync fails with ENOSPC. */
TEST(fault_sync_enospc)
{
	fault_mode	m = {"fsync ENOSPC", true, ENOSPC, 0, 0};

	fault_sweep(&m);
}

/* The Nth fsync and every later one fail with EIO. */
TEST(fault_sync_eio_sticky)
{
	fault_mode	m = {"fsync EIO sticky", true, EIO, 0, 1};

	fault_sweep(&m);
}

/* ---------------------------------------------------------------------- */
/* Power failures. */

/* What a drop child tells its parent, one record per event. */
typedef struct drop_report
{
	char		kind;			/* 'I' issued, 'A' acknowledged, 'F' flushed */
	int			batch;			/* for 'F': every batch <= it is flushed */
} drop_report;

/* One power-failure run, chosen by the parent before the fork. */
typedef struct drop_plan
{
	int			sync;
	int			nsteps;
	int			crash_at;		/* step at which the power fails */
	int			mid;			/* in the middle of that step */
	uint64_t	rng;			/* step kinds and fault offsets */
} drop_plan;

/* Sends one event to the parent; a child that cannot ends at once. */
static void
send_report(int fd, char kind, int batch)
{
	drop_report r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.batch = batch;
	if (write(fd, &r, sizeof(r)) != (ssize_t) sizeof(r))
		_exit(HARNESS_CHILD_FAILED);
}

/*
 * The child of a power-failure run: opens dir with sync tracking, runs the
 * plan's steps, reports through wfd, drops unsynced data and ends without
 * closing anything.  Does not return.
 */
static void __attribute__((noreturn))
drop_child(const char *dir, const drop_plan *p, int wfd)
{
	static lsm_fault f;			/* installed until _exit */
	lsm_options o;
	lsm_db	   *db;
	uint64_t	r = p->rng;
	int			next = NTMPL,
				last_acked = -1,
				i;

	memset(&f, 0, sizeof(f));
	f.track_sync = 1;
	lsm_fault_install(&f);
	store_options(&o, p->sync);
	CHECK_OK(lsm_open(dir, &o, &db));
	for (i = 0; i < p->nsteps; i++)
	{
		lsm_stats	st;
		uint64_t	flushes;
		bool		armed = false;
		int			kind,
					rc;

		if (i == p->crash_at && !p->mid)
			break;
		if (i == p->crash_at)
		{
			/* from here on every write and fsync fails: the machine is off */
			r = harness_mix(r);
			f.fail_write_at = f.writes + 1 + (long) (r % 8);
			r = harness_mix(r);
			f.fail_sync_at = f.syncs + 1 + (long) (r % 4);
			f.sticky = 1;
			armed = true;
		}
		r = harness_mix(r);
		kind = r % 12 == 0 ? STEP_FLUSH :
			r % 12 == 1 ? STEP_COMPACT : STEP_WRITE;
		if (kind == STEP_WRITE && next >= NTMPL + DROP_MAXB)
			kind = STEP_FLUSH;
		CHECK_DB_OK(db, lsm_get_stats(db, &st));
		flushes = st.flushes;
		if (kind == STEP_WRITE)
		{
			int			b = next++;

			send_report(wfd, 'I', b);
			rc = write_batch(db, b);
			if (rc == LSM_OK)
			{
				send_report(wfd, 'A', b);
				last_acked = b;
				CHECK_DB_OK(db, lsm_get_stats(db, &st));
				/* a flush it made; when armed it may not be durable */
				if (st.flushes > flushes && !armed)
					send_report(wfd, 'F', b);
			}
		}
		else if (kind == STEP_FLUSH)
		{
			rc = lsm_flush(db);
			if (rc == LSM_OK)
				send_report(wfd, 'F', last_acked);
		}
		else
			rc = lsm_compact(db);
		if (armed)
			break;
		CHECK_DB_OK(db, rc);
	}
	lsm_fault_drop_unsynced();
	_exit(0);
}

/*
 * DROP_RUNS power failures with the given sync setting, each from a copy of
 * the template, each checked as the file comment describes.
 */
static void
drop_runs(int sync)
{
	char	   *tmpl = harness_tmpdir("drop-tmpl");
	char	   *work = harness_tmpdir("drop-work");
	int			tmpl_state[NKEYS];
	uint64_t	seed = harness_seed();
	int			run,
				total_acked = 0,
				total_lost = 0;
	lsm_options o;

	build_template(tmpl, tmpl_state);
	store_options(&o, sync);
	for (run = 0; run < DROP_RUNS; run++)
	{
		drop_plan	p;
		drop_report rep;
		bool		acked[MAXB],
					must[MAXB];
		char		ctx[256];
		int			fds[2],
					status,
					b,
					issued_end = NTMPL,
					flushed = -1,
					present,
					nacked = 0;
		uint64_t	r = harness_mix(seed ^ ((uint64_t) run << 40) ^
									(uint64_t) sync);
		pid_t		pid;
		lsm_db	   *db;
		ssize_t		got;

		p.sync = sync;
		p.nsteps = 4 + (int) (r % 50);
		r = harness_mix(r);
		p.crash_at = (int) (r % (uint64_t) (p.nsteps + 1));
		r = harness_mix(r);
		p.mid = (int) (r % 2);
		p.rng = harness_mix(r);
		snprintf(ctx, sizeof(ctx),
				 "power failure with sync=%d, run %d of seed %llu "
				 "(%d steps, failure %s step %d)",
				 sync, run, (unsigned long long) seed, p.nsteps,
				 p.mid ? "in" : "before", p.crash_at);

		harness_clear_dir(work);
		harness_copy_dir(tmpl, work);
		CHECK(pipe(fds) == 0);
		fflush(stdout);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
		{
			close(fds[0]);
			drop_child(work, &p, fds[1]);
		}
		close(fds[1]);

		memset(acked, 0, sizeof(acked));
		while ((got = read(fds[0], &rep, sizeof(rep))) == (ssize_t) sizeof(rep))
		{
			CHECK(rep.batch >= -1 && rep.batch < MAXB);
			if (rep.kind == 'I')
				issued_end = rep.batch + 1;
			else if (rep.kind == 'A')
			{
				acked[rep.batch] = true;
				nacked++;
			}
			else if (rep.kind == 'F' && rep.batch > flushed)
				flushed = rep.batch;
		}
		CHECK(got == 0);
		close(fds[0]);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				  "%s: the child failed (status 0x%x)", ctx, status);

		/* what must have survived */
		for (b = 0; b < MAXB; b++)
			must[b] = sync ? acked[b] : b <= flushed && acked[b];

		CHECK_MSG(lsm_open(work, &o, &db) == LSM_OK,
				  "%s: lsm_open returned an error: %s", ctx, lsm_errmsg(NULL));
		CHECK_MSG(lsm_verify(db) == LSM_OK, "%s: lsm_verify: %s", ctx,
				  lsm_errmsg(db));
		present = check_store(db, tmpl_state, NTMPL, issued_end, must, true,
							  ctx);
		total_acked += nacked;
		total_lost += nacked > present ? nacked - present : 0;
		keep_working(work, &db, tmpl_state, NTMPL, DROP_MAXB + NTMPL, must,
					 ctx);
		CHECK_OK(lsm_close(db));
	}
	printf("# sync=%d: %d power failures, %d acknowledged batches, "
		   "%d of them lost\n",
		   sync, DROP_RUNS, total_acked, total_lost);
}

/* Power failures with sync = 1: every acknowledged batch survives. */
TEST(drop_unsynced_sync)
{
	drop_runs(1);
}

/*
 * Power failures with sync = 0: every batch included in a completed flush
 * survives.
 */
TEST(drop_unsynced_nosync)
{
	drop_runs(0);
}

int
main(int argc, char **argv)
{
	harness_init(argc, argv);
	RUN(fault_write_eio);
	RUN(fault_write_enospc);
	RUN(fault_short_write_eio);
	RUN(fault_short_write_enospc_sticky);
	RUN(fault_sync_eio);
	RUN(fault_sync_enospc);
	RUN(fault_sync_eio_sticky);
	RUN(drop_unsynced_sync);
	RUN(drop_unsynced_nosync);
	return harness_done();
}

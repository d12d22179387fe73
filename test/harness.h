/*
 * harness.h
 *		A tiny test harness for the engine's unit tests (plain C, no
 *		PostgreSQL).
 *
 * One test file per engine module, each a program:
 *
 *	#include "harness.h"
 *
 *	TEST(put_then_get)
 *	{
 *		char	   *dir = harness_tmpdir("put");	(removed after the test)
 *		lsm_db	   *db;
 *
 *		CHECK_OK(lsm_open(dir, NULL, &db));
 *		CHECK_DB_OK(db, lsm_put(db, "k", 1, "v", 1));
 *		...
 *	}
 *
 *	int
 *	main(int argc, char **argv)
 *	{
 *		harness_init(argc, argv);
 *		RUN(put_then_get);
 *		return harness_done();
 *	}
 *
 * Output protocol (parsed by test/run): every test prints exactly one line,
 * "ok <name>" or "FAIL <name>", preceded by "# ..." diagnostic lines that
 * say which check failed where.  The program exits 0 only if every test
 * passed.  A crash ends the program with no line for the running test:
 * test/run counts a non-zero exit without any FAIL line as one failure.
 *
 * A failed check abandons the current test (longjmp back to RUN), so checks
 * work in helper functions at any depth; resources the test held are leaked
 * (the sanitizers may then report leaks too, which is fine: the test has
 * already failed).  In a forked child a failed check prints its diagnostic
 * and ends the child with _exit(HARNESS_CHILD_FAILED) instead.
 *
 * Temporary directories come from mkdtemp under ${TMPDIR:-/tmp}, so tests
 * can run in parallel; harness_tmpdir's directories are removed when the
 * test ends, unless LSM_TEST_KEEP is set in the environment.
 *
 * Command line: test names to run only those (default: all).
 * LSM_TEST_SEED=<n> fixes the seed that harness_seed() returns.
 */
#ifndef LSM_TEST_HARNESS_H
#define LSM_TEST_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lsm.h"

#define HARNESS_UNUSED __attribute__((unused))
#define HARNESS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define HARNESS_MAX_TMPDIRS 64
#define HARNESS_CHILD_FAILED 99

/* Harness state: one test program, one thread. */
static struct
{
	int			initialized;
	pid_t		pid;			/* the test process (not a forked child) */
	int			argc;
	char	  **argv;
	int			passed;
	int			failed;
	const char *current;		/* name of the running test */
	jmp_buf		abandon;		/* where a failed check goes */
	char	   *tmpdirs[HARNESS_MAX_TMPDIRS];
	int			ntmpdirs;
	int			have_seed;
	uint64_t	seed;
}			harness HARNESS_UNUSED;

/* ---------------------------------------------------------------------- */
/* Checks.  Each evaluates its arguments exactly once. */

/* The test fails unless cond is true. */
#define CHECK(cond) \
	do { \
		if (!(cond)) \
			harness_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond); \
	} while (0)

/* Like CHECK, with a printf-style explanation. */
#define CHECK_MSG(cond, ...) \
	do { \
		if (!(cond)) \
		{ \
			harness_note(__FILE__, __LINE__, "CHECK(%s) failed", #cond); \
			harness_fail(__FILE__, __LINE__, __VA_ARGS__); \
		} \
	} while (0)

/* expr (an engine call) must return LSM_OK. */
#define CHECK_OK(expr) \
	harness_check_rc(__FILE__, __LINE__, #expr, LSM_OK, (expr), NULL, 0)

/* Like CHECK_OK, and on failure also prints lsm_errmsg(db). */
#define CHECK_DB_OK(db, expr) \
	harness_check_rc(__FILE__, __LINE__, #expr, LSM_OK, (expr), (db), 1)

/* expr must return the code want (LSM_NOTFOUND, LSM_CORRUPTION, ...). */
#define CHECK_RC(want, expr) \
	harness_check_rc(__FILE__, __LINE__, #expr, (want), (expr), NULL, 0)

/* Integer comparisons, signed (compared as long long). */
#define CHECK_EQ(a, b) harness_check_int(__FILE__, __LINE__, #a, "==", #b, \
										 (long long) (a), (long long) (b))
#define CHECK_NE(a, b) harness_check_int(__FILE__, __LINE__, #a, "!=", #b, \
										 (long long) (a), (long long) (b))
#define CHECK_LT(a, b) harness_check_int(__FILE__, __LINE__, #a, "<", #b, \
										 (long long) (a), (long long) (b))
#define CHECK_LE(a, b) harness_check_int(__FILE__, __LINE__, #a, "<=", #b, \
										 (long long) (a), (long long) (b))
#define CHECK_GT(a, b) harness_check_int(__FILE__, __LINE__, #a, ">", #b, \
										 (long long) (a), (long long) (b))
#define CHECK_GE(a, b) harness_check_int(__FILE__, __LINE__, #a, ">=", #b, \
										 (long long) (a), (long long) (b))

/* Unsigned equality (sizes, hashes, sequence numbers). */
#define CHECK_EQ_U(a, b) harness_check_uint(__FILE__, __LINE__, #a, #b, \
											(unsigned long long) (a), \
											(unsigned long long) (b))

/* NUL-terminated strings. */
#define CHECK_STREQ(a, b) harness_check_str(__FILE__, __LINE__, #a, #b, (a), (b))

/* Byte strings: equal lengths and equal bytes (printed in hex if not). */
#define CHECK_MEMEQ(a, alen, b, blen) \
	harness_check_mem(__FILE__, __LINE__, #a, #b, (a), (alen), (b), (blen))

/* ---------------------------------------------------------------------- */
/* Tests. */

/* Defines a test: TEST(name) { body }. */
#define TEST(name) static void test_##name(void)

/* Runs a test defined with TEST and prints "ok name" or "FAIL name". */
#define RUN(name) harness_run(#name, test_##name)

static inline void harness_init(int argc, char **argv);
static inline int harness_done(void);

/* Prints a "# file:line: ..." diagnostic line. */
static inline void HARNESS_PRINTF(3, 4)
harness_note(const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	printf("# %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/*
 * Fails the current test: prints the diagnostic, then abandons the test
 * (longjmp to harness_run).  Outside a test, or in a forked child, ends the
 * process instead.  Does not return.
 */
static inline void HARNESS_PRINTF(3, 4) __attribute__((noreturn))
harness_fail(const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	printf("# %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);

	if (harness.initialized && harness.pid != getpid())
		_exit(HARNESS_CHILD_FAILED);
	if (harness.current == NULL)
	{
		printf("FAIL (outside any test)\n");
		fflush(stdout);
		exit(1);
	}
	longjmp(harness.abandon, 1);
}

static inline void
harness_check_rc(const char *file, int line, const char *expr, int want,
				 int got, const lsm_db *db, int have_db)
{
	const char *detail;
	const char *label;

	if (got == want)
		return;
	/* the handle's detail, else that of the last failed lsm_open */
	if (have_db && db != NULL)
	{
		detail = lsm_errmsg(db);
		label = "lsm_errmsg";
	}
	else
	{
		detail = lsm_errmsg(NULL);
		label = "last failed lsm_open";
	}
	if (detail == NULL || detail[0] == '\0')
		harness_fail(file, line, "%s returned %d (%s), expected %d (%s)",
					 expr, got, lsm_strerror(got), want, lsm_strerror(want));
	harness_fail(file, line, "%s returned %d (%s), expected %d (%s); %s: %s",
				 expr, got, lsm_strerror(got), want, lsm_strerror(want),
				 label, detail);
}

static inline void
harness_check_int(const char *file, int line, const char *a, const char *op,
				  const char *b, long long va, long long vb)
{
	int			ok;

	if (strcmp(op, "==") == 0)
		ok = va == vb;
	else if (strcmp(op, "!=") == 0)
		ok = va != vb;
	else if (strcmp(op, "<") == 0)
		ok = va < vb;
	else if (strcmp(op, "<=") == 0)
		ok = va <= vb;
	else if (strcmp(op, ">") == 0)
		ok = va > vb;
	else
		ok = va >= vb;
	if (!ok)
		harness_fail(file, line, "CHECK(%s %s %s) failed: %lld vs %lld",
					 a, op, b, va, vb);
}

static inline void
harness_check_uint(const char *file, int line, const char *a, const char *b,
				   unsigned long long va, unsigned long long vb)
{
	if (va != vb)
		harness_fail(file, line, "CHECK(%s == %s) failed: %llu (0x%llx) vs %llu (0x%llx)",
					 a, b, va, va, vb, vb);
}

static inline void
harness_check_str(const char *file, int line, const char *a, const char *b,
				  const char *va, const char *vb)
{
	if (va == NULL || vb == NULL || strcmp(va, vb) != 0)
		harness_fail(file, line, "CHECK(%s == %s) failed: \"%s\" vs \"%s\"",
					 a, b, va ? va : "(null)", vb ? vb : "(null)");
}

/* Formats up to 32 bytes of p in hex into buf (at least 100 bytes). */
static inline const char *
harness_hex(const void *p, size_t len, char *buf)
{
	const unsigned char *s = p;
	size_t		i;
	size_t		n = len < 32 ? len : 32;

	buf[0] = '\0';
	if (p == NULL)
		return "(null)";
	for (i = 0; i < n; i++)
		sprintf(buf + 2 * i, "%02x", s[i]);
	if (n < len)
		strcpy(buf + 2 * n, "...");
	return buf;
}

static inline void
harness_check_mem(const char *file, int line, const char *a, const char *b,
				  const void *va, size_t alen, const void *vb, size_t blen)
{
	char		ha[100];
	char		hb[100];

	if (alen == blen && (alen == 0 || (va && vb && memcmp(va, vb, alen) == 0)))
		return;
	harness_fail(file, line, "CHECK(%s == %s) failed: %zu bytes %s vs %zu bytes %s",
				 a, b, alen, harness_hex(va, alen, ha),
				 blen, harness_hex(vb, blen, hb));
}

/* ---------------------------------------------------------------------- */
/* Temporary directories. */

static inline int
harness_rmtree_one(const char *path, const struct stat *st, int flag,
				   struct FTW *ftw)
{
	(void) st;
	(void) ftw;
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

/*
 * Removes path and everything below it (symbolic links are removed, not
 * followed).  Returns 0, or -1 with errno set.  A missing path is not an
 * error.
 */
static inline int
harness_rmtree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	return nftw(path, harness_rmtree_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Makes a fresh, empty directory ${TMPDIR:-/tmp}/lsm-<tag>-XXXXXX and returns
 * its path.  The harness owns the string and removes the directory when the
 * current test ends (keep it with LSM_TEST_KEEP=1).  Fails the test if the
 * directory cannot be made.
 */
static inline char *
harness_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	size_t		len;
	char	   *path;

	if (base == NULL || base[0] == '\0')
		base = "/tmp";
	if (harness.ntmpdirs >= HARNESS_MAX_TMPDIRS)
		harness_fail(__FILE__, __LINE__, "too many temporary directories");
	len = strlen(base) + strlen(tag) + 16;
	path = malloc(len);
	if (path == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	snprintf(path, len, "%s/lsm-%s-XXXXXX", base, tag);
	if (mkdtemp(path) == NULL)
	{
		int			e = errno;

		free(path);
		harness_fail(__FILE__, __LINE__, "mkdtemp under %s: %s",
					 base, strerror(e));
	}
	harness.tmpdirs[harness.ntmpdirs++] = path;
	return path;
}

/*
 * Returns dir "/" name in a new allocation (release with free()).
 */
static inline char *
harness_path(const char *dir, const char *name)
{
	size_t		len = strlen(dir) + strlen(name) + 2;
	char	   *path = malloc(len);

	if (path == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	snprintf(path, len, "%s/%s", dir, name);
	return path;
}

/* Removes (or, with LSM_TEST_KEEP, reports) the current test's tmpdirs. */
static inline void
harness_cleanup_tmpdirs(void)
{
	const char *keep = getenv("LSM_TEST_KEEP");
	int			i;

	for (i = 0; i < harness.ntmpdirs; i++)
	{
		if (keep != NULL && keep[0] != '\0')
			printf("# kept %s\n", harness.tmpdirs[i]);
		else if (harness_rmtree(harness.tmpdirs[i]) != 0)
			printf("# could not remove %s: %s\n", harness.tmpdirs[i],
				   strerror(errno));
		free(harness.tmpdirs[i]);
		harness.tmpdirs[i] = NULL;
	}
	harness.ntmpdirs = 0;
}

/* ---------------------------------------------------------------------- */
/* Files and directories. */

/*
 * Reads the whole file at path into a new allocation (release with free());
 * its size in *len.  Fails the test if the file cannot be read.
 */
static inline uint8_t *
harness_read_file(const char *path, size_t *len)
{
	struct stat st;
	uint8_t    *buf;
	int			fd = open(path, O_RDONLY);

	CHECK_MSG(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK_MSG(fstat(fd, &st) == 0, "stat %s: %s", path, strerror(errno));
	buf = malloc(st.st_size > 0 ? (size_t) st.st_size : 1);
	if (buf == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	CHECK(pread(fd, buf, (size_t) st.st_size, 0) == st.st_size);
	close(fd);
	*len = (size_t) st.st_size;
	return buf;
}

/*
 * Replaces (or creates) the file at path with contents buf[0 .. len).
 * Fails the test if it cannot be written.
 */
static inline void
harness_write_file(const char *path, const void *buf, size_t len)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK_MSG(fd >= 0, "open %s: %s", path, strerror(errno));
	CHECK(write(fd, buf, len) == (ssize_t) len);
	close(fd);
}

/*
 * Size in bytes of the file at path, or -1 if there is none; fails the test
 * if stat fails otherwise.
 */
static inline long long
harness_file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
	{
		int			e = errno;

		CHECK_MSG(e == ENOENT, "stat %s: %s", path, strerror(e));
		return -1;
	}
	return (long long) st.st_size;
}

/*
 * Empties directory dir: removes every entry, a subdirectory with all it
 * holds.  Fails the test if dir cannot be read or an entry removed.
 */
static inline void
harness_clear_dir(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	CHECK_MSG(d != NULL, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d)) != NULL)
	{
		char	   *p;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		p = harness_path(dir, de->d_name);
		CHECK_MSG(harness_rmtree(p) == 0, "remove %s: %s", p, strerror(errno));
		free(p);
	}
	closedir(d);
}

/*
 * Copies the regular files of directory from into directory to (which must
 * exist), replacing files of the same names there; subdirectories are not
 * copied.  Fails the test on any error.
 */
static inline void
harness_copy_dir(const char *from, const char *to)
{
	DIR		   *d = opendir(from);
	struct dirent *de;
	static char buf[1 << 16];

	CHECK_MSG(d != NULL, "opendir %s: %s", from, strerror(errno));
	while ((de = readdir(d)) != NULL)
	{
		char	   *src,
				   *dst;
		int			in,
					out;
		ssize_t		n;
		struct stat sb;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		src = harness_path(from, de->d_name);
		dst = harness_path(to, de->d_name);
		CHECK_MSG(stat(src, &sb) == 0, "stat %s: %s", src, strerror(errno));
		if (S_ISREG(sb.st_mode))
		{
			in = open(src, O_RDONLY);
			CHECK_MSG(in >= 0, "open %s: %s", src, strerror(errno));
			out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			CHECK_MSG(out >= 0, "open %s: %s", dst, strerror(errno));
			while ((n = read(in, buf, sizeof(buf))) > 0)
				CHECK(write(out, buf, (size_t) n) == n);
			CHECK(n == 0);
			close(in);
			close(out);
		}
		free(src);
		free(dst);
	}
	closedir(d);
}

/* ---------------------------------------------------------------------- */
/* Keys, values and rows. */

/*
 * The engine's key order, computed independently of it: memcmp, the
 * shorter key first when one is a prefix of the other.
 */
static inline int
harness_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t		n = alen < blen ? alen : blen;
	int			c = n > 0 ? memcmp(a, b, n) : 0;

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/*
 * A copy of p[0 .. n) in a new allocation (release with free()), with a NUL
 * after it.
 */
static inline uint8_t *
harness_dup_bytes(const void *p, size_t n)
{
	uint8_t    *q = malloc(n + 1);

	if (q == NULL)
		harness_fail(__FILE__, __LINE__, "out of memory");
	if (n > 0)
		memcpy(q, p, n);
	q[n] = '\0';
	return q;
}

/*
 * Whether row v (vn bytes; NULL: no row) has field `field` equal to
 * (val, vlen) and not null.
 */
static inline int
harness_row_matches(const uint8_t *v, size_t vn, int field, const void *val,
					size_t vlen)
{
	lsm_field	f;

	if (v == NULL || lsm_row_field(v, vn, field, &f) != LSM_OK || f.is_null)
		return 0;
	return f.len == vlen && (vlen == 0 || memcmp(f.data, val, vlen) == 0);
}

/*
 * The decimal number in key bytes [from, klen).  Keys are not
 * NUL-terminated: atoi would read on into whatever follows them.
 */
static inline int
harness_key_num(const void *key, size_t klen, size_t from)
{
	const char *k = key;
	int			n = 0;
	size_t		i;

	for (i = from; i < klen && k[i] >= '0' && k[i] <= '9'; i++)
		n = n * 10 + (k[i] - '0');
	return n;
}

/* ---------------------------------------------------------------------- */
/* Randomness: reproducible from a printed seed. */

/*
 * Returns the run's seed: LSM_TEST_SEED if set, else one derived from the
 * clock and the pid.  Prints "# seed <n>" the first time, so a failing
 * randomized run can be repeated with LSM_TEST_SEED=<n>.
 */
static inline uint64_t
harness_seed(void)
{
	if (!harness.have_seed)
	{
		const char *env = getenv("LSM_TEST_SEED");
		struct timeval tv;

		if (env != NULL && env[0] != '\0')
			harness.seed = strtoull(env, NULL, 0);
		else
		{
			gettimeofday(&tv, NULL);
			harness.seed = ((uint64_t) tv.tv_sec * 1000000 + (uint64_t) tv.tv_usec) ^
				((uint64_t) getpid() << 32);
		}
		harness.have_seed = 1;
		printf("# seed %" PRIu64 " (set LSM_TEST_SEED to repeat)\n",
			   harness.seed);
		fflush(stdout);
	}
	return harness.seed;
}

/* splitmix64's finalizer: a well mixed function of x. */
static inline uint64_t
harness_mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* splitmix64: the next pseudo-random number from *state. */
static inline uint64_t
harness_rand64(uint64_t *state)
{
	uint64_t	z = harness_mix(*state);

	*state += UINT64_C(0x9e3779b97f4a7c15);
	return z;
}

/*
 * Parses a decimal counter value of vlen bytes (values are not
 * NUL-terminated, so the digits are copied out first).  Fails the test on
 * anything but 1..20 digits.
 */
static inline uint64_t
harness_parse_count(const void *v, size_t vlen)
{
	char		buf[24];
	char	   *end;
	uint64_t	n;

	if (vlen == 0 || vlen >= sizeof(buf))
		harness_fail(__FILE__, __LINE__, "counter value of %zu bytes", vlen);
	memcpy(buf, v, vlen);
	buf[vlen] = '\0';
	n = strtoull(buf, &end, 10);
	if (*end != '\0')
		harness_fail(__FILE__, __LINE__, "counter value \"%s\"", buf);
	return n;
}

/* Reads the decimal counter stored under key through db: 0 if absent. */
static inline uint64_t
harness_get_count(lsm_db *db, const void *key, size_t klen)
{
	void	   *v;
	size_t		vlen;
	int			rc = lsm_get(db, key, klen, &v, &vlen);
	uint64_t	n;

	if (rc == LSM_NOTFOUND)
		return 0;
	CHECK_DB_OK(db, rc);
	n = harness_parse_count(v, vlen);
	lsm_free(v);
	return n;
}

/*
 * The entries of dir whose names end in suffix; fails the test if dir
 * cannot be read.
 */
static inline int
harness_count_files(const char *dir, const char *suffix)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	size_t		sl = strlen(suffix);
	int			n = 0;

	if (d == NULL)
		harness_fail(__FILE__, __LINE__, "could not open directory %s: %s",
					 dir, strerror(errno));
	while ((de = readdir(d)) != NULL)
	{
		size_t		l = strlen(de->d_name);

		if (l > sl && strcmp(de->d_name + l - sl, suffix) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* The tables that stats st count in levels from .. LSM_MAX_LEVELS - 1. */
static inline uint64_t
harness_files_from(const lsm_stats *st, int from)
{
	uint64_t	n = 0;
	int			l;

	for (l = from; l < LSM_MAX_LEVELS; l++)
		n += (uint64_t) st->level[l].files;
	return n;
}

/*
 * The tables db's version names (lsm_get_stats), in all levels; *l0, if
 * not NULL, gets level 0's.
 */
static inline int
harness_tables(lsm_db *db, int *l0)
{
	lsm_stats	st;

	CHECK_DB_OK(db, lsm_get_stats(db, &st));
	if (l0)
		*l0 = st.level[0].files;
	return (int) harness_files_from(&st, 0);
}

/* ---------------------------------------------------------------------- */
/* Processes and time. */

/* Milliseconds on the monotonic clock. */
static inline long
harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits for child pid, which must have been killed or have exited 0;
 * returns its wait status.
 */
static inline int
harness_wait_killed_or_ok(pid_t pid)
{
	int			status;

	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) || (WIFEXITED(status) &&
								  WEXITSTATUS(status) == 0));
	return status;
}

/* ---------------------------------------------------------------------- */
/* Running. */

/*
 * Starts the program: stdout line-buffered (diagnostics and results stay in
 * order, and a forked child does not repeat buffered output); the command
 * line's names, if any, select the tests to run.
 */
static inline void
harness_init(int argc, char **argv)
{
	if (harness.initialized)
		return;
	setvbuf(stdout, NULL, _IOLBF, 0);
	harness.initialized = 1;
	harness.pid = getpid();
	harness.argc = argc;
	harness.argv = argv;
}

/* Whether the command line selects test name. */
static inline int
harness_selected(const char *name)
{
	int			i;

	if (harness.argc <= 1)
		return 1;
	for (i = 1; i < harness.argc; i++)
		if (strcmp(harness.argv[i], name) == 0)
			return 1;
	return 0;
}

/* Runs one test; use RUN(name). */
static inline void
harness_run(const char *name, void (*fn) (void))
{
	harness_init(0, NULL);
	if (!harness_selected(name))
		return;
	harness.current = name;
	if (setjmp(harness.abandon) == 0)
	{
		fn();
		printf("ok %s\n", name);
		harness.passed++;
	}
	else
	{
		printf("FAIL %s\n", name);
		harness.failed++;
	}
	fflush(stdout);
	harness.current = NULL;
	harness_cleanup_tmpdirs();
}

/*
 * Ends the program: prints "# N ok, N FAIL" and returns the exit
 * status for main (0 only if no test failed).
 */
static inline int
harness_done(void)
{
	printf("# %d ok, %d FAIL\n", harness.passed, harness.failed);
	fflush(stdout);
	return harness.failed == 0 ? 0 : 1;
}

#endif							/* LSM_TEST_HARNESS_H */

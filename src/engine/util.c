/*
 * util.c
 *		Error records, growable buffers and lsm_strerror.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

const char *
lsm_strerror(int rc)
{
	switch (rc)
	{
		case LSM_OK:
			return "success";
		case LSM_NOTFOUND:
			return "not found";
		case LSM_CORRUPTION:
			return "corruption";
		case LSM_IOERR:
			return "I/O error";
		case LSM_NOSPACE:
			return "no space left on device";
		case LSM_INVALID:
			return "invalid argument";
		case LSM_BUSY:
			return "lock not available";
		case LSM_NOMEM:
			return "out of memory";
		case LSM_INTERRUPTED:
			return "interrupted";
		case LSM_EXISTS:
			return "store already exists";
		case LSM_DELETED:
			return "deleted";
		case LSM_CONFLICT:
			return "condition does not hold";
	}
	return "unknown error";
}

uint64_t
lsm_hash(const void *p, size_t n)
{
	return XXH3_64bits(p, n);
}

/* lsm_key_cmp with memcmp: out of line, for long keys. */
int
lsm_key_cmp_long(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t		n = alen < blen ? alen : blen;
	int			c = n ? memcmp(a, b, n) : 0;

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

void
lsm_err_clear(lsm_err *e)
{
	e->rc = LSM_OK;
	e->saved_errno = 0;
	e->msg[0] = '\0';
}

static void err_vset(lsm_err *e, int rc, const char *fmt, va_list ap)
			__attribute__((format(printf, 3, 0)));

static void
err_vset(lsm_err *e, int rc, const char *fmt, va_list ap)
{
	e->rc = rc;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int
lsm_err_set(lsm_err *e, int rc, const char *fmt,...)
{
	va_list		ap;

	if (e == NULL)
		return rc;
	va_start(ap, fmt);
	err_vset(e, rc, fmt, ap);
	va_end(ap);
	e->saved_errno = 0;
	return rc;
}

int
lsm_err_sys(lsm_err *e, int errnum, const char *fmt,...)
{
	va_list		ap;
	int			rc;
	size_t		n;

	if (errnum == ENOSPC || errnum == EDQUOT)
		rc = LSM_NOSPACE;
	else if (errnum == ENOMEM)
		rc = LSM_NOMEM;
	else
		rc = LSM_IOERR;
	if (e == NULL)
		return rc;
	va_start(ap, fmt);
	err_vset(e, rc, fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", strerror(errnum));
	e->saved_errno = errnum;
	return rc;
}

int
lsm_err_copy(lsm_err *e, const lsm_err *src)
{
	if (e != NULL && e != src)
		*e = *src;
	return src->rc;
}

int
lsm_err_corrupt_at(lsm_err *e, const char *file, int line, const char *fmt,...)
{
	va_list		ap;
	size_t		n;
	const char *base = strrchr(file, '/');

	if (e == NULL)
		return LSM_CORRUPTION;
	va_start(ap, fmt);
	err_vset(e, LSM_CORRUPTION, fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	snprintf(e->msg + n, sizeof(e->msg) - n, " (detected at %s:%d)",
			 base ? base + 1 : file, line);
	e->saved_errno = 0;
	return LSM_CORRUPTION;
}

int
lsm_buf_grow(lsm_buf *b, size_t need)
{
	size_t		cap;
	uint8_t    *p;

	if (need <= b->cap)
		return LSM_OK;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return LSM_NOMEM;
	b->data = p;
	b->cap = cap;
	return LSM_OK;
}

int
lsm_buf_append_varint(lsm_buf *b, uint64_t v)
{
	if (lsm_buf_reserve(b, 10) != LSM_OK)
		return LSM_NOMEM;
	b->len += lsm_put_varint(b->data + b->len, v);
	return LSM_OK;
}

void
lsm_buf_free(lsm_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void *
lsm_memdup(const void *p, size_t n)
{
	char	   *r = malloc(n + 1);

	if (r == NULL)
		return NULL;
	if (n)
		memcpy(r, p, n);
	r[n] = '\0';
	return r;
}

void
lsm_free(void *p)
{
	free(p);
}

static inline __attribute__((always_inline)) uint64_t
popcount_words(const uint8_t *a, const uint8_t *b, size_t bytes)
{
	uint64_t	n = 0,
				w,
				x;
	size_t		i;

	for (i = 0; i < bytes; i += 8)
	{
		memcpy(&w, a + i, 8);
		if (b != NULL)
		{
			memcpy(&x, b + i, 8);
			w ^= x;
		}
		n += (uint64_t) __builtin_popcountll(w);
	}
	return n;
}

#if defined(__x86_64__)
__attribute__((target("popcnt")))
static uint64_t
popcount_hw(const uint8_t *a, const uint8_t *b, size_t bytes)
{
	return popcount_words(a, b, bytes);
}
#endif

uint64_t
lsm_popcount(const uint8_t *a, const uint8_t *b, size_t bytes)
{
#if defined(__x86_64__)
	static int	hw = -1;		/* unknown yet; a race only asks twice */

	if (hw < 0)
	{
		__builtin_cpu_init();
		hw = __builtin_cpu_supports("popcnt") ? 1 : 0;
	}
	if (hw)
		return popcount_hw(a, b, bytes);
#endif
	return popcount_words(a, b, bytes);
}

int
lsm_cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

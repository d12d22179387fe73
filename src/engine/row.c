/*
 * row.c
 *		The row codec: a value is a row of fields.
 *
 *		row: [nfields varint] { [tag varint] } * nfields [field bytes]*
 *		tag: 0 for a null field, else length + 1
 *
 * Field i is found by summing the lengths of the tags before it; the tags'
 * lengths must add up to exactly the bytes after them, so a truncated or
 * padded row is malformed whichever field is asked for.  A field's
 * bytes are exactly what the caller gave, so equal values have equal bytes
 * (canonical encoding is the caller's business).
 *
 * Every function here is linear in the row's fields: decoding one field
 * checks the whole framing (one pass over the tags), and whoever needs many
 * fields takes them all in one pass (lsm_row_fields, lsm_row_cursor)
 * rather than one lsm_row_field call each, which would be quadratic.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdint.h>
#include <stdlib.h>

#include "util.h"

int
lsm_row_encode_to(const lsm_field *fields, int nfields, void *buf,
				  size_t cap, size_t *rowlen)
{
	size_t		n;
	uint8_t    *q;
	int			i;

	if (rowlen == NULL || nfields < 0 || (nfields > 0 && fields == NULL) ||
		(buf == NULL && cap > 0))
		return LSM_INVALID;
	n = (size_t) lsm_varint_len((uint64_t) nfields);
	for (i = 0; i < nfields; i++)
	{
		if (!fields[i].is_null && fields[i].data == NULL && fields[i].len > 0)
			return LSM_INVALID;
		if (fields[i].is_null)
			n += 1;
		else
			n += (size_t) lsm_varint_len(fields[i].len + 1) + fields[i].len;
	}
	if (n > LSM_MAX_VALUE_LEN)
		return LSM_INVALID;
	*rowlen = n;
	if (cap < n)
		return LSM_OK;
	q = buf;
	q += lsm_put_varint(q, (uint64_t) nfields);
	for (i = 0; i < nfields; i++)
		q += lsm_put_varint(q, fields[i].is_null ? 0 : fields[i].len + 1);
	for (i = 0; i < nfields; i++)
		if (!fields[i].is_null && fields[i].len > 0)
		{
			memcpy(q, fields[i].data, fields[i].len);
			q += fields[i].len;
		}
	return LSM_OK;
}

int
lsm_row_encode(const lsm_field *fields, int nfields, void **row,
			   size_t *rowlen)
{
	size_t		n;
	uint8_t    *p;
	int			rc;

	if (row == NULL || rowlen == NULL)
		return LSM_INVALID;
	if ((rc = lsm_row_encode_to(fields, nfields, NULL, 0, &n)) != LSM_OK)
		return rc;
	if ((p = malloc(n + 1)) == NULL)
		return LSM_NOMEM;
	(void) lsm_row_encode_to(fields, nfields, p, n, &n);
	p[n] = '\0';
	*row = p;
	*rowlen = n;
	return LSM_OK;
}

/* Notes field j's tag in out (if j < n); returns the field's length. */
static inline uint64_t
note_tag(lsm_field *out, int n, uint64_t j, uint64_t tag)
{
	if (j < (uint64_t) n)
	{
		out[j].data = NULL;
		out[j].is_null = tag == 0;
		out[j].len = tag == 0 ? 0 : (size_t) (tag - 1);
	}
	return tag == 0 ? 0 : tag - 1;
}

/*
 * Checks the tags of a row (each decodes, and the fields fit and fill the
 * bytes after the tags), noting the null flag and length of the first n
 * fields in out; *count gets the number of fields, *tags where the tags
 * begin and *data where the field bytes do.  LSM_OK or LSM_CORRUPTION.
 */
static int
walk_tags(const void *row, size_t rowlen, lsm_field *out, int n,
		  uint64_t *count, const uint8_t **tags, const uint8_t **data)
{
	const uint8_t *p = row;
	const uint8_t *end = p + rowlen;
	uint64_t	tag,
				total = 0,
				j;

	if (row == NULL || (p = lsm_get_varint(p, end, count)) == NULL ||
		*count > (uint64_t) (end - p))
		return LSM_CORRUPTION;
	*tags = p;

	/*
	 * Fields shorter than 127 bytes have one-byte tags (the count bytes after
	 * p exist: checked above), whose lengths cannot overflow a sum.  From the
	 * first longer tag on, the careful way: as the fields so far only grow
	 * and the bytes after the tags only shrink, its check at a tag covers the
	 * one-byte tags before it, and the check at the end covers a row of them.
	 */
	for (j = 0; j < *count && p[j] < 0x80; j++)
		total += note_tag(out, n, j, p[j]);
	for (p += j; j < *count; j++)
	{
		/* the fields so far and this one must fit after the tags */
		if ((p = lsm_get_varint(p, end, &tag)) == NULL ||
			total > (uint64_t) (end - p) ||
			(tag > 0 && tag - 1 > (uint64_t) (end - p) - total))
			return LSM_CORRUPTION;
		total += note_tag(out, n, j, tag);
	}
	/* p is now the start of the field bytes, which must fill the row */
	if (total != (uint64_t) (end - p))
		return LSM_CORRUPTION;
	*data = p;
	return LSM_OK;
}

int
lsm_row_cursor_init(lsm_row_cursor *c, const void *row, size_t rowlen,
					uint64_t *nfields)
{
	const uint8_t *tags;
	const uint8_t *data;
	int			rc = walk_tags(row, rowlen, NULL, 0, nfields, &tags, &data);

	if (rc != LSM_OK)
		return rc;
	c->tag = tags;
	c->data = data;
	c->left = *nfields;
	return LSM_OK;
}

bool
lsm_row_cursor_next(lsm_row_cursor *c, lsm_field *f)
{
	uint64_t	tag = 0;

	if (c->left == 0)
		return false;
	/* init checked every tag: they decode and fit */
	c->tag = lsm_get_varint(c->tag, c->data, &tag);
	c->left--;
	f->is_null = tag == 0;
	f->data = tag == 0 ? NULL : c->data;
	f->len = tag == 0 ? 0 : (size_t) (tag - 1);
	c->data += f->len;
	return true;
}

int
lsm_row_fields(const void *row, size_t rowlen, lsm_field *out, int n)
{
	const uint8_t *tags;
	const uint8_t *p;
	uint64_t	count;
	int			i;

	if (n < 0 || (n > 0 && out == NULL) || (row == NULL && rowlen > 0))
		return LSM_INVALID;
	/* one pass over the tags notes the fields; then where their data is */
	if (walk_tags(row, rowlen, out, n, &count, &tags, &p) != LSM_OK)
	{
		for (i = 0; i < n; i++)
		{
			out[i].data = NULL;
			out[i].len = 0;
			out[i].is_null = 1;
		}
		return LSM_CORRUPTION;
	}
	for (i = 0; i < n; i++)
	{
		if ((uint64_t) i >= count)
		{
			out[i].data = NULL;
			out[i].len = 0;
			out[i].is_null = 1;
			continue;
		}
		if (!out[i].is_null)
			out[i].data = p;
		p += out[i].len;
	}
	return LSM_OK;
}

int
lsm_row_field(const void *row, size_t rowlen, int i, lsm_field *out)
{
	lsm_row_cursor c;
	uint64_t	nfields;
	int			j,
				rc;

	if (out == NULL || i < 0 || (row == NULL && rowlen > 0))
		return LSM_INVALID;
	out->data = NULL;
	out->len = 0;
	out->is_null = 1;
	rc = lsm_row_cursor_init(&c, row, rowlen, &nfields);
	if (rc != LSM_OK || (uint64_t) i >= nfields)
		return rc;
	for (j = 0; j <= i; j++)
		lsm_row_cursor_next(&c, out);
	return LSM_OK;
}

int
lsm_row_nfields(const void *row, size_t rowlen)
{
	lsm_row_cursor c;
	uint64_t	n;

	if (lsm_row_cursor_init(&c, row, rowlen, &n) != LSM_OK || n > INT32_MAX)
		return 0;
	return (int) n;
}

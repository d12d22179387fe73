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
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* flock, fdatasync, strdup, timespec */
#endif
#include <stdlib.h>

#include "util.h"

int
lsm_row_encode(const lsm_field *fields, int nfields, void **row,
			   size_t *rowlen)
{
	size_t		n;
	uint8_t    *p,
			   *q;
	int			i;

	if (row == NULL || rowlen == NULL || nfields < 0 ||
		(nfields > 0 && fields == NULL))
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
	p = malloc(n + 1);
	if (p == NULL)
		return LSM_NOMEM;
	q = p + lsm_put_varint(p, (uint64_t) nfields);
	for (i = 0; i < nfields; i++)
		q += lsm_put_varint(q, fields[i].is_null ? 0 : fields[i].len + 1);
	for (i = 0; i < nfields; i++)
		if (!fields[i].is_null && fields[i].len > 0)
		{
			memcpy(q, fields[i].data, fields[i].len);
			q += fields[i].len;
		}
	p[n] = '\0';
	*row = p;
	*rowlen = n;
	return LSM_OK;
}

int
lsm_row_field(const void *row, size_t rowlen, int i, lsm_field *out)
{
	const uint8_t *p = row;
	const uint8_t *end = p + rowlen;
	uint64_t	nfields,
				tag,
				off = 0,
				want = 0,
				total = 0;
	int			j;

	if (out == NULL || i < 0 || (row == NULL && rowlen > 0))
		return LSM_INVALID;
	out->data = NULL;
	out->len = 0;
	out->is_null = 1;
	if ((p = lsm_get_varint(p, end, &nfields)) == NULL ||
		nfields > (uint64_t) (end - p))
		return LSM_CORRUPTION;
	for (j = 0; j < (int) nfields; j++)
	{
		if ((p = lsm_get_varint(p, end, &tag)) == NULL ||
			(tag > 0 && tag - 1 > (uint64_t) (end - p)))
			return LSM_CORRUPTION;
		if (j < i && tag > 0)
			off += tag - 1;
		if (j == i)
			want = tag;
		if (tag > 0)
			total += tag - 1;
	}
	/* p is now the start of the field bytes, which must fill the row */
	if (total != (uint64_t) (end - p))
		return LSM_CORRUPTION;
	if (i >= (int) nfields || want == 0)
		return LSM_OK;
	out->data = p + off;
	out->len = want - 1;
	out->is_null = 0;
	return LSM_OK;
}

int
lsm_row_nfields(const void *row, size_t rowlen)
{
	const uint8_t *p = row;
	lsm_field	f;
	uint64_t	n;

	/* decoding field 0 checks the whole row's framing */
	if (row == NULL || lsm_get_varint(p, p + rowlen, &n) == NULL ||
		n > INT32_MAX || lsm_row_field(row, rowlen, 0, &f) != LSM_OK)
		return 0;
	return (int) n;
}

/*-------------------------------------------------------------------------
 *
 * codec.c
 *		  Keys and row fields: PostgreSQL datums <-> engine bytes.
 *
 * The engine orders keys with memcmp (the shorter first on a tie), so a key
 * is encoded so that byte order is the key type's btree order:
 *
 *	smallint, integer, bigint	big-endian two's complement with the sign
 *								bit flipped (2, 4, 8 bytes)
 *	date						as integer (days; +-infinity are the extremes)
 *	timestamp, timestamptz		as bigint (microseconds)
 *	uuid						the 16 bytes (uuid_cmp is memcmp)
 *	text, varchar, bytea		one marker byte 0x01, then the bytes
 *
 * The marker byte exists because the engine rejects empty keys while '' is a
 * valid text key; a common prefix does not change the order.  Text keys are
 * ordered by bytes, which is the "C" collation's order; the planner relies
 * on it only where that is the column's collation.
 *
 * A row's fields must be canonical for equality, because the engine's value
 * filters hash a field's bytes: the integer-like types use the key encoding
 * (fixed width), floats fold -0 into 0 and every NaN into one, text is its
 * bytes (equality of a deterministic collation is byte equality), bpchar
 * drops its trailing blanks (they are insignificant to its equality), bool
 * is one byte.  Other types go through their binary send/receive functions
 * (text output/input if they have none): stored exactly, but equal values
 * may have different bytes (numeric 1.0 and 1.00), so such columns are not
 * value-searchable and are left out of the value filters.
 *
 * src/fdw/codec.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "lsm_fdw.h"

/* First byte of every text, varchar and bytea key. */
#define LSMFDW_VARKEY_MARKER	0x01

/* What LsmFdwDecodeRow is decoding, for its error context callback */
typedef struct DecodeErrorContext
{
	const LsmFdwTable *table;
	const LsmFdwColumn *column; /* NULL outside a field's decoding */
} DecodeErrorContext;

static void decode_error_context(void *arg);
static void put_uint(StringInfo buf, uint64 u, int width);
static uint64 get_uint(const char *p, int width);
static void put_int(StringInfo buf, int64 v, int width);
static int64 get_int(const char *p, int width);
static void encode_field(LsmFdwColumn *col, Datum d, StringInfo buf);
static Datum decode_field(LsmFdwColumn *col, const LsmFdwTable *t,
						  const char *p, size_t len);
static void setup_io(LsmFdwColumn *col);
static void report_bad_field(const LsmFdwTable *t, const LsmFdwColumn *col,
							 size_t len) pg_attribute_noreturn();
static int	codec_width(LsmFdwCodec codec);
static int64 integer_datum(Datum value, Oid valtype);
static bool type_has_send(Oid typid);

/*
 * Chooses the codec of a column from its (base) type, which the caller has
 * filled in col, and says whether it is canonical.  For the key column,
 * raises an error if the type cannot be a key.
 */
void
LsmFdwSetupColumn(LsmFdwColumn *col, bool is_key, const char *relname,
				  const char *attname)
{
	switch (col->basetypid)
	{
		case BOOLOID:
			col->codec = LSMFDW_CODEC_BOOL;
			break;
		case INT2OID:
			col->codec = LSMFDW_CODEC_INT2;
			break;
		case INT4OID:
			col->codec = LSMFDW_CODEC_INT4;
			break;
		case INT8OID:
			col->codec = LSMFDW_CODEC_INT8;
			break;
		case FLOAT4OID:
			col->codec = LSMFDW_CODEC_FLOAT4;
			break;
		case FLOAT8OID:
			col->codec = LSMFDW_CODEC_FLOAT8;
			break;
		case TEXTOID:
		case VARCHAROID:
			col->codec = LSMFDW_CODEC_TEXT;
			break;
		case BPCHAROID:
			col->codec = LSMFDW_CODEC_BPCHAR;
			break;
		case BYTEAOID:
			col->codec = LSMFDW_CODEC_BYTEA;
			break;
		case UUIDOID:
			col->codec = LSMFDW_CODEC_UUID;
			break;
		case DATEOID:
			col->codec = LSMFDW_CODEC_DATE;
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			col->codec = LSMFDW_CODEC_TIMESTAMP;
			break;
		default:
			col->codec = type_has_send(col->basetypid)
				? LSMFDW_CODEC_SEND : LSMFDW_CODEC_TEXTIO;
			break;
	}
	col->canonical = col->codec < LSMFDW_CODEC_SEND;
	if ((col->codec == LSMFDW_CODEC_TEXT || col->codec == LSMFDW_CODEC_BPCHAR) &&
		OidIsValid(col->collation) &&
		!get_collation_isdeterministic(col->collation))
		col->canonical = false;
	col->io_ready = false;

	if (!is_key)
		return;

	switch (col->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
		case LSMFDW_CODEC_UUID:
		case LSMFDW_CODEC_DATE:
		case LSMFDW_CODEC_TIMESTAMP:
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" of foreign table \"%s\" has unsupported type %s",
							attname, relname, format_type_be(col->typid)),
					 errhint("The key column must be of type smallint, integer, bigint, text, varchar, bytea, uuid, date, timestamp or timestamptz.")));
	}

	/*
	 * Keys are unique by their bytes; under a nondeterministic collation two
	 * different byte strings can be equal, and the table would hold rows a
	 * native unique index would reject.
	 */
	if (!col->canonical)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("key column \"%s\" of foreign table \"%s\" uses a nondeterministic collation",
						attname, relname),
				 errhint("Use a deterministic collation such as \"C\" for the key column.")));
}

/*
 * Appends the key encoding of value to buf.  valtype is value's (base) type:
 * the key column's own type, or for a lookup another type of its btree
 * family (integers of another width, text for varchar).  Returns false if no
 * key can equal value: an integer out of the key type's range, or a value
 * longer than the engine allows for keys (the caller decides whether that is
 * an error).
 */
bool
LsmFdwEncodeKey(const LsmFdwTable *t, Datum value, Oid valtype,
				StringInfo buf)
{
	const LsmFdwColumn *key = &t->cols[t->keyattno - 1];

	switch (key->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
			{
				int64		v = integer_datum(value, valtype);

				if ((key->codec == LSMFDW_CODEC_INT2 &&
					 (v < PG_INT16_MIN || v > PG_INT16_MAX)) ||
					(key->codec == LSMFDW_CODEC_INT4 &&
					 (v < PG_INT32_MIN || v > PG_INT32_MAX)))
					return false;
				put_int(buf, v, codec_width(key->codec));
				return true;
			}
		case LSMFDW_CODEC_DATE:
			put_int(buf, DatumGetDateADT(value), 4);
			return true;
		case LSMFDW_CODEC_TIMESTAMP:
			put_int(buf, DatumGetTimestamp(value), 8);
			return true;
		case LSMFDW_CODEC_UUID:
			appendBinaryStringInfo(buf,
								   (char *) DatumGetUUIDP(value)->data,
								   UUID_LEN);
			return true;
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(value);
				size_t		len = VARSIZE_ANY_EXHDR(v);

				if (len + 1 > LSM_MAX_KEY_LEN)
					return false;
				appendStringInfoChar(buf, LSMFDW_VARKEY_MARKER);
				appendBinaryStringInfo(buf, VARDATA_ANY(v), len);
				return true;
			}
		default:
			elog(ERROR, "unexpected key codec %d", (int) key->codec);
	}
	return false;				/* keep the compiler quiet */
}

/* The engine's order of encoded keys: memcmp, the shorter first on a tie. */
int
LsmFdwKeyCmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			c = memcmp(a, b, Min(alen, blen));

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/*
 * Appends to buf the encoding of value as a bound of a range of keys, for
 * a qual "key < value" (upper) or "key > value" (!upper), inclusive or not:
 * every key that satisfies the qual is at or below (upper) or at or above
 * (!upper) the encoded bound.  valtype is as for LsmFdwEncodeKey.  An
 * integer out of the key type's range is clamped into it.  Returns false if
 * value gives no usable bound (a text too long to be a key, as an upper
 * bound); the caller then scans without it (the qual is checked anyway).
 */
bool
LsmFdwEncodeKeyBound(const LsmFdwTable *t, Datum value, Oid valtype,
					 bool upper, StringInfo buf)
{
	const LsmFdwColumn *key = &t->cols[t->keyattno - 1];

	switch (key->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
			{
				int64		v = integer_datum(value, valtype);
				int64		lo = key->codec == LSMFDW_CODEC_INT2 ? PG_INT16_MIN : PG_INT32_MIN;
				int64		hi = key->codec == LSMFDW_CODEC_INT2 ? PG_INT16_MAX : PG_INT32_MAX;

				put_int(buf, Max(lo, Min(hi, v)), codec_width(key->codec));
				return true;
			}
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
			{
				struct varlena *v;

				if (LsmFdwEncodeKey(t, value, valtype, buf))
					return true;
				if (upper)
					return false;

				/* too long for a key: a prefix of a lower bound is one */
				v = PG_DETOAST_DATUM_PACKED(value);
				appendStringInfoChar(buf, LSMFDW_VARKEY_MARKER);
				appendBinaryStringInfo(buf, VARDATA_ANY(v), LSM_MAX_KEY_LEN - 1);
				return true;
			}
		default:
			return LsmFdwEncodeKey(t, value, valtype, buf);
	}
}

/*
 * Appends to buf the field encoding of value, compared for equality with
 * column col: what a row holding an equal value has in the column's field,
 * for a value search.  valtype is value's (base) type: the column's, an
 * integer of another width for an integer column, text or varchar for a
 * text column.  Returns false if no value of the column can equal it (an
 * integer out of range).
 */
bool
LsmFdwEncodeNeedle(LsmFdwColumn *col, Datum value, Oid valtype,
				   StringInfo buf)
{
	if (col->codec == LSMFDW_CODEC_INT2 || col->codec == LSMFDW_CODEC_INT4 ||
		col->codec == LSMFDW_CODEC_INT8)
	{
		int64		v = integer_datum(value, valtype);

		if ((col->codec == LSMFDW_CODEC_INT2 &&
			 (v < PG_INT16_MIN || v > PG_INT16_MAX)) ||
			(col->codec == LSMFDW_CODEC_INT4 &&
			 (v < PG_INT32_MIN || v > PG_INT32_MAX)))
			return false;
		put_int(buf, v, codec_width(col->codec));
		return true;
	}
	encode_field(col, value, buf);
	return true;
}

/*
 * Returns the key column's datum for an engine key, in the current memory
 * context.  Raises a data-corruption error if the bytes cannot be a key of
 * the column's type.
 */
Datum
LsmFdwDecodeKey(const LsmFdwTable *t, const char *key, size_t klen)
{
	const LsmFdwColumn *col = &t->cols[t->keyattno - 1];
	int			width = codec_width(col->codec);

	if (width > 0 && klen != (size_t) width)
		report_bad_field(t, col, klen);

	switch (col->codec)
	{
		case LSMFDW_CODEC_INT2:
			return Int16GetDatum((int16) get_int(key, 2));
		case LSMFDW_CODEC_INT4:
			return Int32GetDatum((int32) get_int(key, 4));
		case LSMFDW_CODEC_INT8:
			return Int64GetDatum(get_int(key, 8));
		case LSMFDW_CODEC_DATE:
			return DateADTGetDatum((DateADT) get_int(key, 4));
		case LSMFDW_CODEC_TIMESTAMP:
			return TimestampGetDatum((Timestamp) get_int(key, 8));
		case LSMFDW_CODEC_UUID:
			{
				pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

				memcpy(u->data, key, UUID_LEN);
				return UUIDPGetDatum(u);
			}
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
			{
				struct varlena *v;

				if (klen < 1 || key[0] != LSMFDW_VARKEY_MARKER)
					report_bad_field(t, col, klen);
				v = palloc(VARHDRSZ + klen - 1);
				SET_VARSIZE(v, VARHDRSZ + klen - 1);
				memcpy(VARDATA(v), key + 1, klen - 1);
				return PointerGetDatum(v);
			}
		default:
			elog(ERROR, "unexpected key codec %d", (int) col->codec);
	}
	return (Datum) 0;			/* keep the compiler quiet */
}

/*
 * Encodes a row given as the values and nulls of every attribute (tuple
 * descriptor order): its key into keybuf and its fields, as an engine row,
 * into rowbuf (both appended to).  Raises not_null_violation for a null key
 * and program_limit_exceeded for a key longer than the engine allows.
 */
void
LsmFdwEncodeRow(LsmFdwTable *t, Datum *values, bool *nulls,
				StringInfo keybuf, StringInfo rowbuf)
{
	LsmFdwColumn *keycol = &t->cols[t->keyattno - 1];
	StringInfoData data;
	lsm_field  *fields;
	size_t	   *offsets;
	void	   *row = NULL;
	size_t		rowlen = 0;
	int			rc;
	int			i;

	if (nulls[t->keyattno - 1])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in key column \"%s\" of foreign table \"%s\"",
						keycol->name, t->relname),
				 errdetail("The key column of an lsm_fdw table cannot be null.")));
	if (!LsmFdwEncodeKey(t, values[t->keyattno - 1], keycol->basetypid,
						 keybuf))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("key value too long for foreign table \"%s\"",
						t->relname),
				 errdetail("Keys are limited to %d bytes.",
						   LSM_MAX_KEY_LEN - 1)));

	/* encode every field into one buffer, then point the fields into it */
	initStringInfo(&data);
	fields = palloc0(sizeof(lsm_field) * Max(t->nfields, 1));
	offsets = palloc0(sizeof(size_t) * Max(t->nfields, 1));
	for (i = 0; i < t->natts; i++)
	{
		LsmFdwColumn *col = &t->cols[i];

		if (col->field < 0)
			continue;
		if (col->dropped || nulls[i])
		{
			fields[col->field].is_null = 1;
			continue;
		}
		offsets[col->field] = data.len;
		encode_field(col, values[i], &data);
		fields[col->field].len = data.len - offsets[col->field];
	}
	for (i = 0; i < t->nfields; i++)
		if (!fields[i].is_null)
			fields[i].data = data.data + offsets[i];

	rc = lsm_row_encode(fields, t->nfields, &row, &rowlen);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, NULL, t->relname, "encode a row of");

	/* the engine's allocation must not leak if the copy fails */
	PG_TRY();
	{
		appendBinaryStringInfo(rowbuf, row, rowlen);
	}
	PG_FINALLY();
	{
		lsm_free(row);
	}
	PG_END_TRY();

	pfree(data.data);
	pfree(fields);
	pfree(offsets);
}

/*
 * Decodes an engine entry into values and nulls of every attribute (tuple
 * descriptor order), in the current memory context; nothing points into key
 * or row afterwards.  Attributes for which needed[attnum - 1] is false (all
 * are needed if needed is NULL) and dropped ones come back null.  Raises a
 * data-corruption error for a malformed row or field.
 */
void
LsmFdwDecodeRow(LsmFdwTable *t, const char *key, size_t klen,
				const char *row, size_t rowlen, const bool *needed,
				Datum *values, bool *nulls)
{
	DecodeErrorContext where;
	ErrorContextCallback callback;
	lsm_field  *fields = NULL;
	int			i;

	/* errors of receive and input functions name the column and table */
	where.table = t;
	where.column = NULL;
	callback.callback = decode_error_context;
	callback.arg = &where;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	for (i = 0; i < t->natts; i++)
	{
		LsmFdwColumn *col = &t->cols[i];
		lsm_field	f;
		int			rc;

		values[i] = (Datum) 0;
		nulls[i] = true;
		if (col->dropped || (needed != NULL && !needed[i]))
			continue;
		if (col->field < 0)
		{
			values[i] = LsmFdwDecodeKey(t, key, klen);
			nulls[i] = false;
			continue;
		}
		/* every field in one pass: one lsm_row_field each is quadratic */
		if (fields == NULL)
		{
			fields = palloc(sizeof(lsm_field) * t->nfields);
			rc = lsm_row_fields(row, rowlen, fields, t->nfields);
			if (rc != LSM_OK)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("malformed row in the store of foreign table \"%s\"",
								t->relname),
						 errdetail("The row with key %s cannot be decoded: %s.",
								   LsmFdwKeyToString(t, key, klen),
								   lsm_strerror(rc))));
		}
		f = fields[col->field];
		if (f.is_null)
			continue;
		where.column = col;
		values[i] = decode_field(col, t, f.data, f.len);
		where.column = NULL;
		nulls[i] = false;
	}

	if (fields != NULL)
		pfree(fields);
	error_context_stack = callback.previous;
}

/* Error context callback of LsmFdwDecodeRow. */
static void
decode_error_context(void *arg)
{
	DecodeErrorContext *where = (DecodeErrorContext *) arg;

	if (where->column != NULL)
		errcontext("column \"%s\" of foreign table \"%s\"",
				   where->column->name, where->table->relname);
}

/*
 * Returns the text form of an engine key ("42", "abc"), for messages, in a
 * new palloc'd string.
 */
char *
LsmFdwKeyToString(const LsmFdwTable *t, const char *key, size_t klen)
{
	const LsmFdwColumn *col = &t->cols[t->keyattno - 1];
	int			width = codec_width(col->codec);
	Oid			outfunc;
	bool		isvarlena;

	/* a malformed key is shown as bytes rather than raising another error */
	if ((width > 0 && klen != (size_t) width) ||
		((col->codec == LSMFDW_CODEC_TEXT || col->codec == LSMFDW_CODEC_BYTEA) &&
		 (klen < 1 || key[0] != LSMFDW_VARKEY_MARKER)))
	{
		StringInfoData s;
		size_t		i;

		initStringInfo(&s);
		appendStringInfoString(&s, "\\x");
		for (i = 0; i < klen; i++)
			appendStringInfo(&s, "%02x", (unsigned char) key[i]);
		return s.data;
	}
	getTypeOutputInfo(col->typid, &outfunc, &isvarlena);
	return OidOutputFunctionCall(outfunc, LsmFdwDecodeKey(t, key, klen));
}

/*
 * Appends the field encoding of a non-null value of col to buf.
 */
static void
encode_field(LsmFdwColumn *col, Datum d, StringInfo buf)
{
	switch (col->codec)
	{
		case LSMFDW_CODEC_BOOL:
			appendStringInfoChar(buf, DatumGetBool(d) ? 1 : 0);
			break;
		case LSMFDW_CODEC_INT2:
			put_int(buf, DatumGetInt16(d), 2);
			break;
		case LSMFDW_CODEC_INT4:
			put_int(buf, DatumGetInt32(d), 4);
			break;
		case LSMFDW_CODEC_INT8:
			put_int(buf, DatumGetInt64(d), 8);
			break;
		case LSMFDW_CODEC_DATE:
			put_int(buf, DatumGetDateADT(d), 4);
			break;
		case LSMFDW_CODEC_TIMESTAMP:
			put_int(buf, DatumGetTimestamp(d), 8);
			break;
		case LSMFDW_CODEC_FLOAT4:
			{
				float4		f = DatumGetFloat4(d);
				uint32		bits;

				/* float4eq: every NaN is equal, and -0 = 0 */
				if (isnan(f))
					f = get_float4_nan();
				else if (f == 0)
					f = 0.0f;
				memcpy(&bits, &f, sizeof(bits));
				put_uint(buf, bits, 4);
				break;
			}
		case LSMFDW_CODEC_FLOAT8:
			{
				float8		f = DatumGetFloat8(d);
				uint64		bits;

				if (isnan(f))
					f = get_float8_nan();
				else if (f == 0)
					f = 0.0;
				memcpy(&bits, &f, sizeof(bits));
				put_uint(buf, bits, 8);
				break;
			}
		case LSMFDW_CODEC_UUID:
			appendBinaryStringInfo(buf, (char *) DatumGetUUIDP(d)->data,
								   UUID_LEN);
			break;
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(d);

				appendBinaryStringInfo(buf, VARDATA_ANY(v),
									   VARSIZE_ANY_EXHDR(v));
				break;
			}
		case LSMFDW_CODEC_BPCHAR:
			{
				struct varlena *v = PG_DETOAST_DATUM_PACKED(d);
				const char *p = VARDATA_ANY(v);
				int			len = VARSIZE_ANY_EXHDR(v);

				/* trailing blanks are insignificant to bpchar equality */
				while (len > 0 && p[len - 1] == ' ')
					len--;
				appendBinaryStringInfo(buf, p, len);
				break;
			}
		case LSMFDW_CODEC_SEND:
			{
				bytea	   *b;

				setup_io(col);
				b = SendFunctionCall(&col->out_func, d);
				appendBinaryStringInfo(buf, VARDATA(b),
									   VARSIZE(b) - VARHDRSZ);
				break;
			}
		case LSMFDW_CODEC_TEXTIO:
			setup_io(col);
			appendStringInfoString(buf,
								   OutputFunctionCall(&col->out_func, d));
			break;
	}
}

/*
 * Returns the datum of a non-null field of col from its len bytes at p, in
 * the current memory context (never pointing into p).  Raises a
 * data-corruption error if the bytes cannot be a value of the type.
 */
static Datum
decode_field(LsmFdwColumn *col, const LsmFdwTable *t, const char *p,
			 size_t len)
{
	int			width = codec_width(col->codec);

	if (width > 0 && len != (size_t) width)
		report_bad_field(t, col, len);

	switch (col->codec)
	{
		case LSMFDW_CODEC_BOOL:
			if (p[0] != 0 && p[0] != 1)
				report_bad_field(t, col, len);
			return BoolGetDatum(p[0] == 1);
		case LSMFDW_CODEC_INT2:
			return Int16GetDatum((int16) get_int(p, 2));
		case LSMFDW_CODEC_INT4:
			return Int32GetDatum((int32) get_int(p, 4));
		case LSMFDW_CODEC_INT8:
			return Int64GetDatum(get_int(p, 8));
		case LSMFDW_CODEC_DATE:
			return DateADTGetDatum((DateADT) get_int(p, 4));
		case LSMFDW_CODEC_TIMESTAMP:
			return TimestampGetDatum((Timestamp) get_int(p, 8));
		case LSMFDW_CODEC_FLOAT4:
			{
				uint32		bits = (uint32) get_uint(p, 4);
				float4		f;

				memcpy(&f, &bits, sizeof(f));
				return Float4GetDatum(f);
			}
		case LSMFDW_CODEC_FLOAT8:
			{
				uint64		bits = get_uint(p, 8);
				float8		f;

				memcpy(&f, &bits, sizeof(f));
				return Float8GetDatum(f);
			}
		case LSMFDW_CODEC_UUID:
			{
				pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

				memcpy(u->data, p, UUID_LEN);
				return UUIDPGetDatum(u);
			}
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
		case LSMFDW_CODEC_BPCHAR:
			{
				struct varlena *v = palloc(VARHDRSZ + len);

				SET_VARSIZE(v, VARHDRSZ + len);
				memcpy(VARDATA(v), p, len);
				/* bpchar(n) values are stored unpadded: pad them again */
				if (col->codec == LSMFDW_CODEC_BPCHAR && col->typmod > VARHDRSZ)
					return DirectFunctionCall3(bpchar, PointerGetDatum(v),
											   Int32GetDatum(col->typmod),
											   BoolGetDatum(false));
				return PointerGetDatum(v);
			}
		case LSMFDW_CODEC_SEND:
			{
				StringInfoData buf;
				Datum		d;

				setup_io(col);
				/* receive functions expect the StringInfo convention: NUL */
				buf.data = palloc(len + 1);
				memcpy(buf.data, p, len);
				buf.data[len] = '\0';
				buf.len = len;
				buf.maxlen = len + 1;
				buf.cursor = 0;
				d = ReceiveFunctionCall(&col->in_func, &buf, col->ioparam,
										col->typmod);
				if (buf.cursor != buf.len)
					report_bad_field(t, col, len);
				return d;
			}
		case LSMFDW_CODEC_TEXTIO:
			setup_io(col);
			return InputFunctionCall(&col->in_func, pnstrdup(p, len),
									 col->ioparam, col->typmod);
	}
	return (Datum) 0;			/* keep the compiler quiet */
}

/*
 * Looks up the I/O functions of a SEND or TEXTIO column, once.  They are
 * kept in the memory context of the column's table.
 */
static void
setup_io(LsmFdwColumn *col)
{
	Oid			out;
	Oid			in;
	bool		isvarlena;

	if (col->io_ready)
		return;
	if (col->codec == LSMFDW_CODEC_SEND)
	{
		getTypeBinaryOutputInfo(col->basetypid, &out, &isvarlena);
		getTypeBinaryInputInfo(col->basetypid, &in, &col->ioparam);
	}
	else
	{
		getTypeOutputInfo(col->basetypid, &out, &isvarlena);
		getTypeInputInfo(col->basetypid, &in, &col->ioparam);
	}
	fmgr_info_cxt(out, &col->out_func, col->io_cxt);
	fmgr_info_cxt(in, &col->in_func, col->io_cxt);
	col->io_ready = true;
}

/*
 * Raises the error for a stored field (or key) of len bytes that cannot be a
 * value of its column's type.
 */
static void
report_bad_field(const LsmFdwTable *t, const LsmFdwColumn *col, size_t len)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid stored value for column \"%s\" of foreign table \"%s\"",
					col->name, t->relname),
			 errdetail("A value of %zu bytes cannot be decoded as type %s.",
					   len, format_type_be(col->typid)),
			 errhint("The column's type may have been changed after rows were stored.")));
}

/* Whether type typid has binary send and receive functions. */
static bool
type_has_send(Oid typid)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", typid);
	result = OidIsValid(((Form_pg_type) GETSTRUCT(tup))->typsend) &&
		OidIsValid(((Form_pg_type) GETSTRUCT(tup))->typreceive);
	ReleaseSysCache(tup);
	return result;
}

/* Byte width of a fixed-width codec, 0 for a variable-width one. */
static int
codec_width(LsmFdwCodec codec)
{
	switch (codec)
	{
		case LSMFDW_CODEC_BOOL:
			return 1;
		case LSMFDW_CODEC_INT2:
			return 2;
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_DATE:
		case LSMFDW_CODEC_FLOAT4:
			return 4;
		case LSMFDW_CODEC_INT8:
		case LSMFDW_CODEC_TIMESTAMP:
		case LSMFDW_CODEC_FLOAT8:
			return 8;
		case LSMFDW_CODEC_UUID:
			return UUID_LEN;
		default:
			return 0;
	}
}

/* Appends the low width bytes of u, big-endian. */
static void
put_uint(StringInfo buf, uint64 u, int width)
{
	char		b[8];
	int			i;

	for (i = width - 1; i >= 0; i--)
	{
		b[i] = (char) (u & 0xFF);
		u >>= 8;
	}
	appendBinaryStringInfo(buf, b, width);
}

/* Inverse of put_uint: the unsigned integer of width bytes at p. */
static uint64
get_uint(const char *p, int width)
{
	uint64		u = 0;
	int			i;

	for (i = 0; i < width; i++)
		u = (u << 8) | (unsigned char) p[i];
	return u;
}

/*
 * Appends v, which fits in width bytes as a signed integer, big-endian with
 * the sign bit flipped: memcmp order is then numeric order.
 */
static void
put_int(StringInfo buf, int64 v, int width)
{
	put_uint(buf, (uint64) v ^ ((uint64) 1 << (width * 8 - 1)), width);
}

/* Inverse of put_int: the signed integer of width bytes at p. */
static int64
get_int(const char *p, int width)
{
	uint64		sign = (uint64) 1 << (width * 8 - 1);
	uint64		u = get_uint(p, width) ^ sign;

	/* sign-extend from width bytes */
	if (width < 8 && (u & sign))
		u |= ~((sign << 1) - 1);
	return (int64) u;
}

/* The value of an integer datum of type valtype (int2, int4 or int8). */
static int64
integer_datum(Datum value, Oid valtype)
{
	switch (valtype)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
		default:
			elog(ERROR, "unexpected type %u for an integer", valtype);
	}
	return 0;					/* keep the compiler quiet */
}

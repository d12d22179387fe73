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
 * The ctid of a row is its key, where the key is an integer (smallint,
 * integer, bigint, date: days) from CTID_KEY_MIN = -2^46 to CTID_KEY_MAX =
 * 2^46 - 1: the key as a 47-bit two's complement number u, in block number
 * u >> 15 and offset (u & 0x7FFF) + 1 (an offset is never 0).  Key 0 is
 * (0,1), key 1 (0,2), key 32768 (1,1), key -1 (4294967295,32768).  So a
 * ctid identifies at most one row, and "ctid = value" is a key lookup.
 * Other keys, and bigints beyond that range, give their rows no ctid.
 *
 * A row's fields must be canonical for equality, because the engine's value
 * filters hash a field's bytes: the integer-like types use the key encoding
 * (fixed width), floats fold -0 into 0 and every NaN into one, text is its
 * bytes (equality of a deterministic collation is byte equality), bpchar
 * drops its trailing blanks (they are insignificant to its equality), bool
 * is one byte.  Other types go through their binary send/receive functions
 * (text output/input if they have none): stored exactly, but equal values
 * may have different bytes (numeric 1.0 and 1.00), so such columns are not
 * value-searchable and are left out of the value filters.  An enum is
 * stored as its value's OID (4 bytes): canonical, and unchanged by ALTER
 * TYPE ... RENAME VALUE, where a label would no longer read back.
 *
 * The binary form of a SEND or TEXTIO column must not depend on the session
 * that writes or reads it: send functions convert text to the client
 * encoding (text inside arrays, composites, jsonb), and text output
 * functions may follow DateStyle and the like.  So rows with such columns
 * are encoded and decoded with the client encoding set to the database's,
 * and TEXTIO columns with the settings postgres_fdw uses for the text it
 * sends (neutral_io_begin).  Which byte layout a store's rows have is
 * recorded in its metadata file (meta.c): LsmFdwCodecName gives the codecs
 * their names there.
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
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "lsm_fdw.h"

/* First byte of every text, varchar and bytea key. */
#define LSMFDW_VARKEY_MARKER	0x01

/* How a value is encoded as (part of) a key: see encode_key_part */
typedef enum KeyForm
{
	KEY_WHOLE,					/* a one-column key */
	KEY_PART,					/* a part of a composite key, not the last */
	KEY_LAST					/* the last part of a composite key */
} KeyForm;

/* Fields of a row encoded or decoded without an allocation (most have fewer) */
#define LSMFDW_LOCAL_FIELDS 32

/* The integer keys a ctid holds (see the file header) */
#define CTID_KEY_BITS	47
#define CTID_KEY_MIN	(-((int64) 1 << (CTID_KEY_BITS - 1)))
#define CTID_KEY_MAX	(((int64) 1 << (CTID_KEY_BITS - 1)) - 1)

/* What LsmFdwDecodeRow is decoding, for its error context callback */
typedef struct DecodeErrorContext
{
	const LsmFdwTable *table;
	const LsmFdwColumn *column; /* NULL outside a field's decoding */
} DecodeErrorContext;

/* What neutral_io_begin changed */
typedef struct NeutralIo
{
	int			client_encoding;	/* to restore, or -1 */
	int			guc_nestlevel;	/* to pop, or 0 */
} NeutralIo;

static void decode_error_context(void *arg);
static void encode_fields(LsmFdwTable *t, Datum *values, bool *nulls,
						  StringInfo data, lsm_field *fields,
						  size_t *offsets);
static void decode_fields(LsmFdwTable *t, const char *key, size_t klen,
						  const char *row, size_t rowlen, const int *attrs,
						  int nattrs, Datum *values, bool *nulls,
						  DecodeErrorContext *where, StringInfo arena);
static bool neutral_io_begin(const LsmFdwTable *t, NeutralIo *io);
static void neutral_io_end(NeutralIo *io);
static void neutral_io_abort(NeutralIo *io);
static void put_uint(StringInfo buf, uint64 u, int width);
static uint64 get_uint(const char *p, int width);
static void put_int(StringInfo buf, int64 v, int width);
static int64 get_int(const char *p, int width);
static void encode_field(LsmFdwColumn *col, Datum d, StringInfo buf);
static Datum decode_field(LsmFdwColumn *col, const LsmFdwTable *t,
						  const char *p, size_t len, StringInfo arena);
static void setup_io(LsmFdwColumn *col);
static void report_bad_field(const LsmFdwTable *t, const LsmFdwColumn *col,
							 size_t len) pg_attribute_noreturn();
static int	codec_width(LsmFdwCodec codec);
static int64 integer_datum(Datum value, Oid valtype);
static bool ctid_to_key(const LsmFdwTable *t, ItemPointer tid,
						StringInfo buf);
static bool type_has_send(Oid typid);
static bool key_successor(StringInfo b);
static bool composite_key_ok(const LsmFdwTable *t, const char *key,
							 size_t klen);
static bool encode_key_part(const LsmFdwColumn *col, Datum value,
							Oid valtype, KeyForm form, StringInfo buf);
static Datum decode_key_part(const LsmFdwTable *t, const LsmFdwColumn *col,
							 const char **p, const char *end, bool last);

/*
 * Chooses the codec of a column from its (base) type, which the caller has
 * filled in col, and says whether it is canonical.  Whether the column can
 * be the key is LsmFdwCheckKeyColumn's business.
 */
void
LsmFdwSetupColumn(LsmFdwColumn *col)
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
			if (type_is_enum(col->basetypid))
				col->codec = LSMFDW_CODEC_ENUM;
			else if (type_has_send(col->basetypid))
				col->codec = LSMFDW_CODEC_SEND;
			else
				col->codec = LSMFDW_CODEC_TEXTIO;
			break;
	}
	col->canonical = col->codec < LSMFDW_CODEC_SEND;
	if ((col->codec == LSMFDW_CODEC_TEXT || col->codec == LSMFDW_CODEC_BPCHAR) &&
		OidIsValid(col->collation) &&
		!get_collation_isdeterministic(col->collation))
		col->canonical = false;
	col->io_ready = false;
}

/*
 * Checks that col (set up by LsmFdwSetupColumn) can be the key of table
 * relname: a key type, under a deterministic collation.  Returns true if
 * so; else raises an error if strict, or returns false.
 */
bool
LsmFdwCheckKeyColumn(const LsmFdwColumn *col, const char *relname,
					 bool strict)
{
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
			if (!strict)
				return false;
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("key column \"%s\" of foreign table \"%s\" has unsupported type %s",
							col->name, relname, format_type_be(col->typid)),
					 errhint("The key column must be of type smallint, integer, bigint, text, varchar, bytea, uuid, date, timestamp or timestamptz.")));
	}

	/*
	 * Keys are unique by their bytes; under a nondeterministic collation two
	 * different byte strings can be equal, and the table would hold rows a
	 * native unique index would reject.
	 */
	if (!col->canonical)
	{
		if (!strict)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("key column \"%s\" of foreign table \"%s\" uses a nondeterministic collation",
						col->name, relname),
				 errhint("Use a deterministic collation such as \"C\" for the key column.")));
	}
	return true;
}

/* The names of the codecs in metadata files, by LsmFdwCodec */
static const char *const codec_names[] = {
	"bool", "int2", "int4", "int8", "float4", "float8", "text", "bpchar",
	"bytea", "uuid", "date", "timestamp", "enum", "send", "textio"
};

StaticAssertDecl(lengthof(codec_names) == LSMFDW_CODEC_TEXTIO + 1,
				 "every codec has a name");

/* The name of a codec in metadata files ("int4", "send"). */
const char *
LsmFdwCodecName(LsmFdwCodec codec)
{
	Assert((int) codec >= 0 && codec <= LSMFDW_CODEC_TEXTIO);
	return codec_names[codec];
}

/* Sets *codec to the codec called name; false if there is none. */
bool
LsmFdwCodecByName(const char *name, LsmFdwCodec *codec)
{
	int			i;

	for (i = 0; i < lengthof(codec_names); i++)
	{
		if (strcmp(codec_names[i], name) == 0)
		{
			*codec = (LsmFdwCodec) i;
			return true;
		}
	}
	return false;
}

/*
 * Appends the key encoding of value to buf.  valtype is value's (base) type:
 * the key column's own type, or for a lookup another type of its btree
 * family (integers of another width, text for varchar), or tid for the key
 * of the row of that ctid.  Returns false if no key can equal value: an
 * integer out of the key type's range, a value longer than the engine
 * allows for keys (the caller decides whether that is an error), a ctid no
 * row can have.
 */
bool
LsmFdwEncodeKey(const LsmFdwTable *t, Datum value, Oid valtype,
				StringInfo buf)
{
	if (valtype == TIDOID)
		return LsmFdwKeyHasCtid(t) &&
			ctid_to_key(t, (ItemPointer) DatumGetPointer(value), buf);
	if (t->nkeys != 1)
		elog(ERROR, "lsm_fdw: a key of %d columns encoded from one value",
			 t->nkeys);
	return encode_key_part(&t->cols[t->keyattno - 1], value, valtype,
						   KEY_WHOLE, buf);
}

/*
 * Appends to buf the key of table t whose key columns have values (one per
 * key column, in key order, none null), of base types valtypes (as for
 * LsmFdwEncodeKey).  Returns false if no key can have them: a value out of
 * its column's range, or a key longer than the engine allows.
 */
bool
LsmFdwEncodeKeyValues(const LsmFdwTable *t, const Datum *values,
					  const Oid *valtypes, StringInfo buf)
{
	int			start = buf->len;
	int			k;

	if (t->nkeys == 1)
		return LsmFdwEncodeKey(t, values[0], valtypes[0], buf);	/* or ctid */
	for (k = 0; k < t->nkeys; k++)
		if (!LsmFdwEncodeKeyPart(t, k, values[k], valtypes[k], buf))
			return false;
	return buf->len - start <= LSM_MAX_KEY_LEN;
}

/*
 * Appends to buf the encoding of value (of base type valtype) as part of a
 * key in column col (see the file header): the whole key of a one-column
 * key (text with its marker), a part of a composite key followed by
 * others (text escaped and terminated), or its last part (text as it is).
 * Returns false if no key can have the value: an integer out of the
 * column's range, or (a whole key) a value longer than a key can be.
 */
static bool
encode_key_part(const LsmFdwColumn *col, Datum value, Oid valtype,
				KeyForm form, StringInfo buf)
{
	switch (col->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
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
				const char *p = VARDATA_ANY(v);
				size_t		len = VARSIZE_ANY_EXHDR(v);

				if (len + (form == KEY_WHOLE ? 1 : 0) > LSM_MAX_KEY_LEN)
					return false;
				if (form == KEY_WHOLE)
					appendStringInfoChar(buf, LSMFDW_VARKEY_MARKER);
				if (form != KEY_PART)
				{
					appendBinaryStringInfo(buf, p, len);
					return true;
				}
				/* each zero byte as 0x00 0xFF, then 0x00 0x00 */
				while (len > 0)
				{
					const char *z = memchr(p, '\0', len);
					size_t		n = z != NULL ? z - p + 1 : len;

					appendBinaryStringInfo(buf, p, n);
					if (z != NULL)
						appendStringInfoChar(buf, (char) 0xFF);
					p += n;
					len -= n;
				}
				appendBinaryStringInfo(buf, "\0\0", 2);
				return true;
			}
		default:
			elog(ERROR, "unexpected key codec %d", (int) col->codec);
	}
	return false;				/* keep the compiler quiet */
}

/* dynahash hash function of an LsmFdwKeyRef: its bytes */
static uint32
key_ref_hash(const void *key, Size keysize)
{
	const LsmFdwKeyRef *ref = (const LsmFdwKeyRef *) key;

	return hash_bytes((const unsigned char *) ref->data, (int) ref->len);
}

/* dynahash match function of LsmFdwKeyRefs: 0 if the bytes are equal */
static int
key_ref_match(const void *key1, const void *key2, Size keysize)
{
	const LsmFdwKeyRef *a = (const LsmFdwKeyRef *) key1;
	const LsmFdwKeyRef *b = (const LsmFdwKeyRef *) key2;

	if (a->len != b->len)
		return 1;
	return memcmp(a->data, b->data, a->len);
}

/*
 * Creates a hash table, in memory context cxt, of entries of entrysize
 * bytes that begin with an LsmFdwKeyRef: entries by the bytes of a key.
 * The table does not copy the bytes an entry refers to.
 */
HTAB *
LsmFdwKeyTableCreate(const char *name, Size entrysize, MemoryContext cxt)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(LsmFdwKeyRef);
	ctl.entrysize = entrysize;
	ctl.hash = key_ref_hash;
	ctl.match = key_ref_match;
	ctl.hcxt = cxt;
	return hash_create(name, 256, &ctl,
					   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
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
 * the qual "key <kind> value", such that the keys that satisfy the qual are
 * exactly those at or beyond the encoded bound (LSMFDW_BOUND_INCLUSIVE) or
 * strictly beyond it (LSMFDW_BOUND_EXCLUSIVE): above it for a lower bound,
 * below it for an upper one.  Returns LSMFDW_BOUND_NONE, buf untouched, if
 * every key satisfies the qual, and LSMFDW_BOUND_EMPTY if none does.
 * valtype is as for LsmFdwEncodeKey.
 *
 * An integer beyond the key type's range bounds every key or none.  A text
 * or bytea longer than a key can be (m bytes after the marker) is replaced
 * by its first m bytes, P: no key equals the value, a key is below it
 * exactly when it is at or below P, and above it exactly when it is above
 * P, since a key is never longer than P.
 */
LsmFdwBoundEnc
LsmFdwEncodeKeyBound(const LsmFdwTable *t, Datum value, Oid valtype,
					 LsmFdwBound kind, StringInfo buf)
{
	const LsmFdwColumn *key = &t->cols[t->keyattno - 1];
	bool		upper = (kind == LSMFDW_BOUND_LE || kind == LSMFDW_BOUND_LT);
	bool		strict = (kind == LSMFDW_BOUND_GT || kind == LSMFDW_BOUND_LT);
	LsmFdwBoundEnc enc = strict ? LSMFDW_BOUND_EXCLUSIVE
		: LSMFDW_BOUND_INCLUSIVE;

	if (t->nkeys != 1)
		elog(ERROR, "lsm_fdw: a bound of a composite key from one value");

	switch (key->codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
			{
				int64		v = integer_datum(value, valtype);
				int64		lo = PG_INT64_MIN;
				int64		hi = PG_INT64_MAX;

				if (key->codec == LSMFDW_CODEC_INT2)
				{
					lo = PG_INT16_MIN;
					hi = PG_INT16_MAX;
				}
				else if (key->codec == LSMFDW_CODEC_INT4)
				{
					lo = PG_INT32_MIN;
					hi = PG_INT32_MAX;
				}
				/* beyond the end it bounds, or from the other end on */
				if (upper ? (v < lo || (strict && v == lo))
					: (v > hi || (strict && v == hi)))
					return LSMFDW_BOUND_EMPTY;
				if (upper ? v > hi : v < lo)
					return LSMFDW_BOUND_NONE;
				put_int(buf, v, codec_width(key->codec));
				return enc;
			}
		case LSMFDW_CODEC_TEXT:
		case LSMFDW_CODEC_BYTEA:
			{
				struct varlena *v;

				if (LsmFdwEncodeKey(t, value, valtype, buf))
					return enc;
				v = PG_DETOAST_DATUM_PACKED(value);
				appendStringInfoChar(buf, LSMFDW_VARKEY_MARKER);
				appendBinaryStringInfo(buf, VARDATA_ANY(v), LSM_MAX_KEY_LEN - 1);
				return upper ? LSMFDW_BOUND_INCLUSIVE : LSMFDW_BOUND_EXCLUSIVE;
			}
		default:
			if (!LsmFdwEncodeKey(t, value, valtype, buf))
				elog(ERROR, "lsm_fdw: a key bound cannot be encoded");
			return enc;
	}
}

/*
 * Appends to buf part k of a key of composite-key table t: the encoding of
 * value (of base type valtype) in key column k, as encode_key_part does.
 * Returns false if no key can hold it there (an integer out of range).
 */
bool
LsmFdwEncodeKeyPart(const LsmFdwTable *t, int k, Datum value, Oid valtype,
					StringInfo buf)
{
	return encode_key_part(&t->cols[t->keyattnos[k] - 1], value, valtype,
						   k == t->nkeys - 1 ? KEY_LAST : KEY_PART, buf);
}

/*
 * For a scan of composite-key table t by a prefix of its key: prefix
 * holds the first k parts (LsmFdwEncodeKeyPart), and value, if not NULL,
 * bounds column k by "column <kind> value".  Appends to buf a bound (lower
 * for GE and GT, upper for LE and LT) that holds every key with that
 * prefix whose column k satisfies the qual, and returns whether it is
 * inclusive or exclusive, or LSMFDW_BOUND_NONE (buf untouched) if no bound
 * narrows the keys.  Keys with the prefix are bounded exactly (its parts
 * are self-delimiting, or the whole key when k = nkeys); the bound on
 * column k may let through a key that does not satisfy the qual (a value
 * too long for a key, a prefix of a text), so the executor checks it
 * again.
 */
LsmFdwBoundEnc
LsmFdwEncodePrefixBound(const LsmFdwTable *t, const char *prefix, int plen,
						int k, const Datum *value, Oid valtype,
						LsmFdwBound kind, StringInfo buf)
{
	bool		upper = (kind == LSMFDW_BOUND_LE || kind == LSMFDW_BOUND_LT);
	StringInfoData b;

	initStringInfo(&b);
	appendBinaryStringInfo(&b, prefix, plen);
	if (value != NULL && k < t->nkeys &&
		LsmFdwEncodeKeyPart(t, k, *value, valtype, &b))
	{
		if (b.len > LSM_MAX_KEY_LEN)
		{
			/* no key is longer: a lower bound cut there still holds them */
			if (!upper)
			{
				appendBinaryStringInfo(buf, b.data, LSM_MAX_KEY_LEN);
				return LSMFDW_BOUND_INCLUSIVE;
			}
		}
		else if (!upper)
		{
			appendBinaryStringInfo(buf, b.data, b.len);
			return LSMFDW_BOUND_INCLUSIVE;
		}
		else if (key_successor(&b))
		{
			appendBinaryStringInfo(buf, b.data, b.len);
			return LSMFDW_BOUND_EXCLUSIVE;
		}
		resetStringInfo(&b);
		appendBinaryStringInfo(&b, prefix, plen);
	}

	/* the prefix's own bounds: from it, to the first key past all it starts */
	if (plen == 0)
		return LSMFDW_BOUND_NONE;
	if (!upper)
	{
		appendBinaryStringInfo(buf, prefix, plen);
		return LSMFDW_BOUND_INCLUSIVE;
	}
	if (k >= t->nkeys)
	{
		/* a whole key: a text last part may be the start of longer ones */
		appendBinaryStringInfo(buf, prefix, plen);
		return LSMFDW_BOUND_INCLUSIVE;
	}
	if (!key_successor(&b))
		return LSMFDW_BOUND_NONE;
	appendBinaryStringInfo(buf, b.data, b.len);
	return LSMFDW_BOUND_EXCLUSIVE;
}

/*
 * Turns the bytes of b into the least byte string greater than every
 * string they begin: the last byte below 0xFF incremented, what follows it
 * dropped.  Returns false if there is none (every byte is 0xFF).
 */
static bool
key_successor(StringInfo b)
{
	while (b->len > 0 && (uint8) b->data[b->len - 1] == 0xFF)
		b->len--;
	if (b->len == 0)
		return false;
	b->data[b->len - 1] = (char) ((uint8) b->data[b->len - 1] + 1);
	b->data[b->len] = '\0';
	return true;
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
	const char *end = key + klen;

	if (t->nkeys != 1)
		elog(ERROR, "lsm_fdw: a key of %d columns decoded as one value",
			 t->nkeys);
	if (col->codec == LSMFDW_CODEC_TEXT || col->codec == LSMFDW_CODEC_BYTEA)
	{
		if (klen < 1 || key[0] != LSMFDW_VARKEY_MARKER)
			report_bad_field(t, col, klen);
		key++;
	}
	return decode_key_part(t, col, &key, end, true);
}

/*
 * Decodes the key of table t into the values of its key columns, in key
 * order (values[k]: key column k), in the current memory context.  Raises
 * a data-corruption error if the bytes cannot be such a key.
 */
void
LsmFdwDecodeKeyValues(const LsmFdwTable *t, const char *key, size_t klen,
					  Datum *values)
{
	const char *p = key;
	const char *end = key + klen;
	int			k;

	if (t->nkeys == 1)
	{
		values[0] = LsmFdwDecodeKey(t, key, klen);
		return;
	}
	for (k = 0; k < t->nkeys; k++)
		values[k] = decode_key_part(t, &t->cols[t->keyattnos[k] - 1], &p, end,
									k == t->nkeys - 1);
}

/*
 * Decodes the part of a key for column col that begins at *p (before end),
 * and moves *p past it: a fixed-width value, text or bytea up to its
 * terminator (unescaped), or, the last part, up to end (a text or bytea
 * one-column key without its marker).  Raises a data-corruption error if
 * the bytes do not fit.
 */
static Datum
decode_key_part(const LsmFdwTable *t, const LsmFdwColumn *col,
				const char **p, const char *end, bool last)
{
	int			width = codec_width(col->codec);
	const char *key = *p;
	size_t		avail = end - key;

	if (width > 0)
	{
		if (avail < (size_t) width || (last && avail != (size_t) width))
			report_bad_field(t, col, avail);
		*p += width;
	}
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
				struct varlena *v = palloc(VARHDRSZ + avail);
				char	   *out = VARDATA(v);
				size_t		len = 0;
				size_t		i;

				if (last)
				{
					memcpy(out, key, avail);
					len = avail;
					*p = end;
				}
				else
				{
					/* 0x00 0xFF is a zero byte, 0x00 0x00 the end */
					for (i = 0;; i++)
					{
						if (i >= avail)
							report_bad_field(t, col, avail);
						if (key[i] != '\0')
						{
							out[len++] = key[i];
							continue;
						}
						if (i + 1 >= avail ||
							(key[i + 1] != '\0' && (uint8) key[i + 1] != 0xFF))
							report_bad_field(t, col, avail);
						if (key[i + 1] == '\0')
							break;
						out[len++] = '\0';
						i++;
					}
					*p = key + i + 2;
				}
				SET_VARSIZE(v, VARHDRSZ + len);
				return PointerGetDatum(v);
			}
		default:
			elog(ERROR, "unexpected key codec %d", (int) col->codec);
	}
	return (Datum) 0;			/* keep the compiler quiet */
}

/*
 * Whether the rows of table t have a ctid: whether its key is an integer
 * (smallint, integer, bigint, date).  See the file header.
 */
bool
LsmFdwKeyHasCtid(const LsmFdwTable *t)
{
	if (t->nkeys != 1)
		return false;			/* a composite key is no integer */
	switch (t->cols[t->keyattno - 1].codec)
	{
		case LSMFDW_CODEC_INT2:
		case LSMFDW_CODEC_INT4:
		case LSMFDW_CODEC_INT8:
		case LSMFDW_CODEC_DATE:
			return true;
		default:
			return false;
	}
}

/*
 * Sets *tid to the ctid of the row of key (an engine key of table t) and
 * returns true; returns false if the row has none (the key is not an
 * integer, or outside CTID_KEY_MIN .. CTID_KEY_MAX).
 */
bool
LsmFdwKeyToCtid(const LsmFdwTable *t, const char *key, size_t klen,
				ItemPointer tid)
{
	const LsmFdwColumn *col = &t->cols[t->keyattno - 1];
	int			width = codec_width(col->codec);
	int64		v;
	uint64		u;

	if (!LsmFdwKeyHasCtid(t))
		return false;
	if (klen != (size_t) width)
		report_bad_field(t, col, klen);
	v = get_int(key, width);
	if (v < CTID_KEY_MIN || v > CTID_KEY_MAX)
		return false;
	u = (uint64) v & (((uint64) 1 << CTID_KEY_BITS) - 1);
	ItemPointerSet(tid, (BlockNumber) (u >> 15),
				   (OffsetNumber) ((u & 0x7FFF) + 1));
	return true;
}

/*
 * Raises an error saying that rows of table t have no ctid (key is NULL) or
 * that the row of key has none.
 */
void
LsmFdwReportNoCtid(const LsmFdwTable *t, const char *key, size_t klen)
{
	const LsmFdwColumn *col = &t->cols[t->keyattno - 1];

	if (key == NULL && t->nkeys > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rows of foreign table \"%s\" have no ctid",
						t->relname),
				 errdetail("The ctid of an lsm_fdw row is its key, which must then be one column of type smallint, integer, bigint or date; the table has a key of %d columns.",
						   t->nkeys),
				 errhint("Address rows by their key columns.")));
	if (key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rows of foreign table \"%s\" have no ctid",
						t->relname),
				 errdetail("The ctid of an lsm_fdw row is its key, which must then be of type smallint, integer, bigint or date; key column \"%s\" is of type %s.",
						   col->name, format_type_be(col->typid)),
				 errhint("Address rows by their key column \"%s\".",
						 col->name)));
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a row of foreign table \"%s\" has no ctid", t->relname),
			 errdetail("The ctid of an lsm_fdw row is its key, from " INT64_FORMAT " to " INT64_FORMAT "; key (%s)=(%s) is beyond.",
					   CTID_KEY_MIN, CTID_KEY_MAX, col->name,
					   LsmFdwKeyToString(t, key, klen)),
			 errhint("Address rows by their key column \"%s\".",
					 col->name)));
}

/*
 * Appends to buf the key of the row whose ctid is *tid (an engine key of
 * table t, whose rows have ctids); returns false if no row can have that
 * ctid.
 */
static bool
ctid_to_key(const LsmFdwTable *t, ItemPointer tid, StringInfo buf)
{
	const LsmFdwColumn *col = &t->cols[t->keyattno - 1];
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);
	uint64		u;
	int64		v;

	if (off < 1 || off > 0x8000)
		return false;
	u = ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 15) | (off - 1);
	/* sign-extend from CTID_KEY_BITS bits */
	if (u & ((uint64) 1 << (CTID_KEY_BITS - 1)))
		u |= ~(((uint64) 1 << CTID_KEY_BITS) - 1);
	v = (int64) u;
	if ((col->codec == LSMFDW_CODEC_INT2 &&
		 (v < PG_INT16_MIN || v > PG_INT16_MAX)) ||
		((col->codec == LSMFDW_CODEC_INT4 || col->codec == LSMFDW_CODEC_DATE) &&
		 (v < PG_INT32_MIN || v > PG_INT32_MAX)))
		return false;
	put_int(buf, v, codec_width(col->codec));
	return true;
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
	StringInfoData data;
	lsm_field	local_fields[LSMFDW_LOCAL_FIELDS];
	size_t		local_offsets[LSMFDW_LOCAL_FIELDS];
	lsm_field  *fields = local_fields;
	size_t	   *offsets = local_offsets;
	size_t		rowlen = 0;
	NeutralIo	io;
	int			rc;
	int			i;

	Datum		keyvals[LSMFDW_MAX_KEYS];
	Oid			keytypes[LSMFDW_MAX_KEYS];
	int			k;

	for (k = 0; k < t->nkeys; k++)
	{
		LsmFdwColumn *keycol = &t->cols[t->keyattnos[k] - 1];

		if (nulls[keycol->attnum - 1])
			ereport(ERROR,
					(errcode(ERRCODE_NOT_NULL_VIOLATION),
					 errmsg("null value in key column \"%s\" of foreign table \"%s\"",
							keycol->name, t->relname),
					 t->nkeys == 1 ?
					 errdetail("The key column of an lsm_fdw table cannot be null.") :
					 errdetail("The key columns of an lsm_fdw table cannot be null.")));
		keyvals[k] = values[keycol->attnum - 1];
		keytypes[k] = keycol->basetypid;
	}
	if (!LsmFdwEncodeKeyValues(t, keyvals, keytypes, keybuf))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("key value too long for foreign table \"%s\"",
						t->relname),
				 errdetail("Keys are limited to %d bytes%s.",
						   LSM_MAX_KEY_LEN - (t->nkeys == 1 ? 1 : 0),
						   t->nkeys == 1 ? "" :
						   ", and a text or bytea column of a composite key other than the last takes 2 bytes more, and 1 more per zero byte")));

	/* encode every field into one buffer, then point the fields into it */
	initStringInfo(&data);
	if (t->nfields > LSMFDW_LOCAL_FIELDS)
	{
		fields = palloc(sizeof(lsm_field) * t->nfields);
		offsets = palloc(sizeof(size_t) * t->nfields);
	}
	memset(fields, 0, sizeof(lsm_field) * t->nfields);
	memset(offsets, 0, sizeof(size_t) * t->nfields);
	if (!neutral_io_begin(t, &io))
		encode_fields(t, values, nulls, &data, fields, offsets);
	else
	{
		PG_TRY();
		{
			encode_fields(t, values, nulls, &data, fields, offsets);
		}
		PG_CATCH();
		{
			neutral_io_abort(&io);
			PG_RE_THROW();
		}
		PG_END_TRY();
		neutral_io_end(&io);
	}
	for (i = 0; i < t->nfields; i++)
		if (!fields[i].is_null)
			fields[i].data = data.data + offsets[i];

	/* written straight into rowbuf: sized first only if it has no room */
	rc = lsm_row_encode_to(fields, t->nfields, rowbuf->data + rowbuf->len,
						   rowbuf->maxlen - rowbuf->len - 1, &rowlen);
	if (rc != LSM_OK)
		LsmFdwReportError(rc, NULL, t->relname, "encode a row of");
	if (rowlen > (size_t) (rowbuf->maxlen - rowbuf->len - 1))
	{
		enlargeStringInfo(rowbuf, (int) rowlen);
		(void) lsm_row_encode_to(fields, t->nfields,
								 rowbuf->data + rowbuf->len, rowlen, &rowlen);
	}
	rowbuf->len += (int) rowlen;
	rowbuf->data[rowbuf->len] = '\0';

	pfree(data.data);
	if (fields != local_fields)
	{
		pfree(fields);
		pfree(offsets);
	}
}

/*
 * Decodes an engine entry into values and nulls of every attribute (tuple
 * descriptor order), in the current memory context; nothing points into key
 * or row afterwards.  Only the nattrs attributes attrs lists (indexes, all
 * attributes if attrs is NULL) are decoded: the others, and dropped ones,
 * come back null.  Raises a data-corruption error for a malformed row or
 * field.
 *
 * With arena (a scan's, reused for every row), text and bytea values are
 * built in it rather than allocated one by one: they then last until the
 * next row is decoded with it, as a scan's values last until its next row.
 */
void
LsmFdwDecodeRow(LsmFdwTable *t, const char *key, size_t klen,
				const char *row, size_t rowlen, const int *attrs, int nattrs,
				Datum *values, bool *nulls, StringInfo arena)
{
	DecodeErrorContext where;
	ErrorContextCallback callback;
	NeutralIo	io;

	/* errors of receive and input functions name the column and table */
	where.table = t;
	where.column = NULL;
	callback.callback = decode_error_context;
	callback.arg = &where;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	if (arena != NULL)
	{
		size_t		need = rowlen + t->natts * (VARHDRSZ + MAXIMUM_ALIGNOF);

		/* room for every value of the row at once: no move while decoding */
		arena->len = 0;
		if (need >= (size_t) arena->maxlen)
			enlargeStringInfo(arena, need);
	}
	if (!neutral_io_begin(t, &io))
		decode_fields(t, key, klen, row, rowlen, attrs, nattrs, values,
					  nulls, &where, arena);
	else
	{
		PG_TRY();
		{
			decode_fields(t, key, klen, row, rowlen, attrs, nattrs, values,
						  nulls, &where, arena);
		}
		PG_CATCH();
		{
			neutral_io_abort(&io);
			PG_RE_THROW();
		}
		PG_END_TRY();
		neutral_io_end(&io);
	}

	error_context_stack = callback.previous;
}

/*
 * The value of column col of table t (a field, not the key) from its bytes
 * (p, len), in the current memory context.  Only for the canonical codecs,
 * which need no session setting to decode.
 */
Datum
LsmFdwDecodeField(const LsmFdwTable *t, LsmFdwColumn *col, const char *p,
				  size_t len)
{
	Assert(col->codec < LSMFDW_CODEC_SEND);
	return decode_field(col, t, p, len, NULL);
}

/*
 * The attributes of LsmFdwEncodeRow: encodes each field of the row given by
 * values and nulls into data, recording where it starts in offsets and its
 * length (or that it is null) in fields.
 */
static void
encode_fields(LsmFdwTable *t, Datum *values, bool *nulls, StringInfo data,
			  lsm_field *fields, size_t *offsets)
{
	int			i;

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
		offsets[col->field] = data->len;
		encode_field(col, values[i], data);
		fields[col->field].len = data->len - offsets[col->field];
	}
}

/* The attributes of LsmFdwDecodeRow, with where kept up to date. */
static void
decode_fields(LsmFdwTable *t, const char *key, size_t klen,
			  const char *row, size_t rowlen, const int *attrs, int nattrs,
			  Datum *values, bool *nulls, DecodeErrorContext *where,
			  StringInfo arena)
{
	lsm_field	local[LSMFDW_LOCAL_FIELDS];
	lsm_field  *fields = NULL;
	Datum		keyvals[LSMFDW_MAX_KEYS];
	bool		key_decoded = false;
	int			k;

	for (k = 0; k < t->natts; k++)
	{
		values[k] = (Datum) 0;
		nulls[k] = true;
	}
	if (attrs == NULL)
		nattrs = t->natts;
	for (k = 0; k < nattrs; k++)
	{
		int			i = attrs != NULL ? attrs[k] : k;
		LsmFdwColumn *col = &t->cols[i];
		lsm_field	f;
		int			rc;

		if (col->dropped)
			continue;
		if (col->field < 0)
		{
			/* a composite key's columns all at once, when one is asked for */
			if (t->nkeys > 1 && !key_decoded)
			{
				LsmFdwDecodeKeyValues(t, key, klen, keyvals);
				key_decoded = true;
			}
			values[i] = t->nkeys > 1 ? keyvals[LsmFdwKeyIndex(t, col->attnum)]
				: LsmFdwDecodeKey(t, key, klen);
			nulls[i] = false;
			continue;
		}
		/* every field in one pass: one lsm_row_field each is quadratic */
		if (fields == NULL)
		{
			fields = t->nfields <= LSMFDW_LOCAL_FIELDS ? local
				: palloc(sizeof(lsm_field) * t->nfields);
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
		where->column = col;
		values[i] = decode_field(col, t, f.data, f.len, arena);
		where->column = NULL;
		nulls[i] = false;
	}
	if (fields != NULL && fields != local)
		pfree(fields);
}

/*
 * Prepares the encoding or decoding of a row of t so that the bytes of its
 * SEND and TEXTIO columns depend on no setting of the session: binary send
 * functions convert text to the client encoding (text_send, and with it
 * arrays, composites, jsonb, enums' labels...), so the client encoding is
 * set to the database's meanwhile; text output functions may follow
 * DateStyle and the like, so those are set as postgres_fdw sets them for
 * the text it sends.  Returns false if there is nothing to do; else true,
 * and the caller must call neutral_io_end when done, or neutral_io_abort
 * if an error interrupts it.
 */
static bool
neutral_io_begin(const LsmFdwTable *t, NeutralIo *io)
{
	io->client_encoding = -1;
	io->guc_nestlevel = 0;
	if (!t->has_io)
		return false;
	if (pg_get_client_encoding() != GetDatabaseEncoding())
	{
		io->client_encoding = pg_get_client_encoding();
		if (SetClientEncoding(GetDatabaseEncoding()) < 0)
			elog(ERROR, "could not set the client encoding to the database encoding");
	}
	if (t->has_textio)
	{
		io->guc_nestlevel = NewGUCNestLevel();
		(void) set_config_option("datestyle", "ISO",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("intervalstyle", "postgres",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("extra_float_digits", "3",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("bytea_output", "hex",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	return io->client_encoding >= 0 || io->guc_nestlevel > 0;
}

/* Restores what neutral_io_begin changed. */
static void
neutral_io_end(NeutralIo *io)
{
	if (io->guc_nestlevel > 0)
		AtEOXact_GUC(true, io->guc_nestlevel);
	neutral_io_abort(io);
}

/*
 * Restores the client encoding after an error; the settings go with the
 * (sub)transaction the error aborts.  Does not raise errors.
 */
static void
neutral_io_abort(NeutralIo *io)
{
	if (io->client_encoding >= 0)
		(void) SetClientEncoding(io->client_encoding);
	io->client_encoding = -1;
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
	if (t->nkeys > 1 ? !composite_key_ok(t, key, klen) :
		((width > 0 && klen != (size_t) width) ||
		 ((col->codec == LSMFDW_CODEC_TEXT || col->codec == LSMFDW_CODEC_BYTEA) &&
		  (klen < 1 || key[0] != LSMFDW_VARKEY_MARKER))))
	{
		StringInfoData s;
		size_t		i;

		initStringInfo(&s);
		appendStringInfoString(&s, "\\x");
		for (i = 0; i < klen; i++)
			appendStringInfo(&s, "%02x", (unsigned char) key[i]);
		return s.data;
	}
	if (t->nkeys > 1)
	{
		Datum		values[LSMFDW_MAX_KEYS];
		StringInfoData s;
		int			k;

		LsmFdwDecodeKeyValues(t, key, klen, values);
		initStringInfo(&s);
		for (k = 0; k < t->nkeys; k++)
		{
			col = &t->cols[t->keyattnos[k] - 1];
			getTypeOutputInfo(col->typid, &outfunc, &isvarlena);
			appendStringInfo(&s, "%s%s", k > 0 ? ", " : "",
							 OidOutputFunctionCall(outfunc, values[k]));
		}
		return s.data;
	}
	getTypeOutputInfo(col->typid, &outfunc, &isvarlena);
	return OidOutputFunctionCall(outfunc, LsmFdwDecodeKey(t, key, klen));
}

/*
 * Whether key (klen bytes) splits into the parts of the composite key of
 * t, as decode_key_part reads them, without raising an error.
 */
static bool
composite_key_ok(const LsmFdwTable *t, const char *key, size_t klen)
{
	size_t		at = 0;
	int			k;

	for (k = 0; k < t->nkeys; k++)
	{
		const LsmFdwColumn *col = &t->cols[t->keyattnos[k] - 1];
		int			width = codec_width(col->codec);
		bool		last = (k == t->nkeys - 1);

		if (width > 0)
		{
			if (klen - at < (size_t) width ||
				(last && klen - at != (size_t) width))
				return false;
			at += width;
			continue;
		}
		if (last)
			return true;
		for (;; at++)
		{
			if (at >= klen)
				return false;
			if (key[at] != '\0')
				continue;
			if (at + 1 >= klen ||
				(key[at + 1] != '\0' && (uint8) key[at + 1] != 0xFF))
				return false;
			at += 2;
			if (key[at - 1] == '\0')
				break;
			at--;
		}
	}
	return at == klen;
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
		case LSMFDW_CODEC_ENUM:
			put_uint(buf, DatumGetObjectId(d), 4);
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
			 size_t len, StringInfo arena)
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
		case LSMFDW_CODEC_ENUM:
			return ObjectIdGetDatum((Oid) get_uint(p, 4));
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
			if (arena != NULL)
			{
				char	   *v;

				/* a short value gets a 1-byte header, as in a heap tuple */
				if (len + VARHDRSZ_SHORT <= VARATT_SHORT_MAX)
				{
					v = arena->data + arena->len;
					SET_VARSIZE_SHORT(v, VARHDRSZ_SHORT + len);
					memcpy(v + VARHDRSZ_SHORT, p, len);
					arena->len += VARHDRSZ_SHORT + len;
				}
				else
				{
					arena->len = MAXALIGN(arena->len);
					v = arena->data + arena->len;
					SET_VARSIZE(v, VARHDRSZ + len);
					memcpy(VARDATA(v), p, len);
					arena->len += VARHDRSZ + len;
				}
				return PointerGetDatum(v);
			}
			/* FALLTHROUGH */
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
		case LSMFDW_CODEC_ENUM:
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

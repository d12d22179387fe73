/*-------------------------------------------------------------------------
 *
 * meta.c
 *		  A store's metadata file: whose store it is, and how its rows are
 *		  laid out.
 *
 * A store is found by path alone (option.c: <base>/<database OID>/<table
 * OID>), and OIDs are reused: after a wraparound, a new table can get the
 * OID, and so the path, of a dropped table whose store was left behind (a
 * crash between the DROP's commit and the removal; a server directory
 * shared by two clusters).  And the catalog can change under a store:
 * ALTER COLUMN ... TYPE or a moved key option make PostgreSQL read the
 * same bytes another way.  So every store directory holds a small file,
 * lsm_fdw.meta, written by the glue (the engine never sees it), that says:
 *
 *	- whose store it is: the cluster's system identifier, the database and
 *	  table OIDs, and the table's stamp, the transaction that created it
 *	  (LsmFdwTableStamp).  It is written once, when the store is created
 *	  with its table, and checked whenever a backend opens the store: a
 *	  store that is not the table's is never opened (store.c);
 *	- how its rows are laid out: the key column and, per attribute, the
 *	  type, typmod and codec its rows were written with.  Compared with the
 *	  catalog whenever the store is opened and after every DDL command on
 *	  the table (ddl.c), by LsmFdwCompareLayout: equal, wider (the catalog
 *	  reads every stored row the same way and accepts more, e.g.
 *	  varchar(3) -> varchar(10) or ADD COLUMN), or incompatible (bytea ->
 *	  text, a moved key), which only an empty store may take.
 *
 * The file is text, one item per line, ending with a CRC-32C of the lines
 * before it (docs/format.md):
 *
 *	lsm_fdw store 1
 *	system 7312345678901234567
 *	database 16384
 *	table 16390
 *	stamp 742
 *	created 786543210123456
 *	key 1
 *	attributes 3
 *	1 int4 23 23 -1
 *	2 dropped
 *	3 text 25 25 -1
 *	checksum 1f2e3d4c
 *
 * A composite key makes it version 2, whose key line lists the key columns
 * in key order ("key 3 1"); a single key column keeps version 1, so that
 * the releases before composite keys still open such stores.
 *
 * It is replaced atomically: written to lsm_fdw.meta.tmp.<pid>, fsynced,
 * renamed over lsm_fdw.meta, and the directory fsynced (durable_rename).
 * A directory that holds nothing but such a temporary file is one whose
 * creation did not finish.
 *
 * src/fdw/meta.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/timestamp.h"

#include "lsm_fdw.h"

#define META_FILE		"lsm_fdw.meta"
#define META_TMP_PREFIX	"lsm_fdw.meta.tmp"
#define META_MAGIC		"lsm_fdw store"
/*
 * Version 2 lists several key columns; a store keyed by one column keeps
 * writing version 1, which the releases before composite keys read.
 */
#define META_VERSION	2
#define META_MAX_SIZE	(1024 * 1024)

static char *format_meta(const LsmFdwMeta *meta);
static bool is_key(const LsmFdwMeta *meta, AttrNumber attnum);
static char *key_description(const LsmFdwColumn *cols, int nkeys,
							 const AttrNumber *attnos);
static bool parse_meta(char *text, size_t len, LsmFdwMeta *meta,
					   char **problem);
static LsmFdwMetaState directory_state(const char *dir, int elevel);
static LsmFdwLayoutMatch compare_column(const LsmFdwStoredColumn *old,
										const LsmFdwColumn *new,
										StringInfo why);
static bool typmod_loosens(Oid typid, int32 old, int32 new);
static int64 text_length_bound(Oid typid, int32 typmod);
static char *stored_type_name(const LsmFdwStoredColumn *col);

/*
 * Returns the stamp of foreign table relid: the raw xmin of its dependency
 * on its server in pg_depend, i.e. the transaction that created the table.
 * That row is inserted by CREATE FOREIGN TABLE and never updated (a
 * foreign table cannot change servers; freezing keeps the raw xmin), so
 * the stamp stays the table's for its life and another table that gets
 * the same OID later has another one.  InvalidTransactionId if there is
 * no such row.
 */
TransactionId
LsmFdwTableStamp(Oid relid)
{
	Relation	rel = table_open(DependRelationId, AccessShareLock);
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	TransactionId stamp = InvalidTransactionId;

	ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(RelationRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, DependDependerIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->objsubid == 0 && dep->refclassid == ForeignServerRelationId)
		{
			stamp = HeapTupleHeaderGetRawXmin(tup->t_data);
			break;
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return stamp;
}

/*
 * Returns the metadata of a new store for table t as the catalog describes
 * it now (t may come from LsmFdwGetTableLenient: then it has no layout
 * yet), in a new palloc'd LsmFdwMeta.
 */
LsmFdwMeta *
LsmFdwMetaForTable(const LsmFdwTable *t)
{
	LsmFdwMeta *meta = palloc0(sizeof(LsmFdwMeta));
	int			i;

	meta->sysid = GetSystemIdentifier();
	meta->dboid = MyDatabaseId;
	meta->relid = t->relid;
	meta->stamp = LsmFdwTableStamp(t->relid);
	meta->created = GetCurrentTimestamp();
	meta->nkeys = t->nkeys;
	memcpy(meta->keyattnos, t->keyattnos, sizeof(AttrNumber) * t->nkeys);
	meta->natts = t->natts;
	meta->cols = palloc0(sizeof(LsmFdwStoredColumn) * Max(t->natts, 1));
	for (i = 0; i < t->natts; i++)
	{
		const LsmFdwColumn *col = &t->cols[i];
		LsmFdwStoredColumn *sc = &meta->cols[i];

		sc->dropped = col->dropped;
		if (col->dropped)
			continue;
		sc->typid = col->typid;
		sc->basetypid = col->basetypid;
		sc->typmod = col->typmod;
		sc->codec = col->codec;
	}
	return meta;
}

/*
 * Whether meta identifies the store of foreign table relid: this cluster,
 * this database, relid and its stamp.
 */
bool
LsmFdwMetaIsTable(const LsmFdwMeta *meta, Oid relid)
{
	return meta->sysid == GetSystemIdentifier() &&
		meta->dboid == MyDatabaseId &&
		meta->relid == relid &&
		meta->stamp == LsmFdwTableStamp(relid);
}

/*
 * Describes whose store meta says it is, for messages, in a new palloc'd
 * string.
 */
char *
LsmFdwDescribeMeta(const LsmFdwMeta *meta)
{
	return psprintf("the store of the table with OID %u created by transaction %u in database %u of the cluster with system identifier " UINT64_FORMAT " on %s",
					meta->relid, meta->stamp, meta->dboid, meta->sysid,
					timestamptz_to_str(meta->created));
}

/*
 * Reads the metadata file of store directory dir into *meta (palloc'd
 * columns).  Returns LSMFDW_META_OK, or what the directory holds instead;
 * for LSMFDW_META_INVALID *problem says what is wrong.  If the directory
 * or the file cannot be read, reports it at elevel and, if that returns,
 * returns LSMFDW_META_UNREADABLE.
 */
LsmFdwMetaState
LsmFdwReadMeta(const char *dir, LsmFdwMeta *meta, char **problem,
			   int elevel)
{
	char	   *path = psprintf("%s/%s", dir, META_FILE);
	struct stat st;
	char	   *text;
	int			fd;
	ssize_t		n;

	*problem = NULL;
	if (stat(dir, &st) != 0)
	{
		if (errno == ENOENT)
			return LSMFDW_META_NO_DIRECTORY;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not stat directory \"%s\": %m", dir)));
		return LSMFDW_META_UNREADABLE;
	}
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0 && errno == ENOENT)
		return directory_state(dir, elevel);
	if (fd < 0 || fstat(fd, &st) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
		if (fd >= 0)
			CloseTransientFile(fd);
		return LSMFDW_META_UNREADABLE;
	}
	if (st.st_size > META_MAX_SIZE)
	{
		CloseTransientFile(fd);
		*problem = psprintf("the file has %lld bytes", (long long) st.st_size);
		return LSMFDW_META_INVALID;
	}
	text = palloc(st.st_size + 1);
	n = read(fd, text, st.st_size);
	if (n < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
		CloseTransientFile(fd);
		return LSMFDW_META_UNREADABLE;
	}
	CloseTransientFile(fd);
	text[n] = '\0';
	if (!parse_meta(text, n, meta, problem))
		return LSMFDW_META_INVALID;
	pfree(text);
	pfree(path);
	return LSMFDW_META_OK;
}

/*
 * Writes meta as the metadata file of store directory dir, atomically and
 * durably.  Returns true; on failure reports at elevel and, if that
 * returns, returns false (the previous file, if any, is then intact).
 */
bool
LsmFdwWriteMeta(const char *dir, const LsmFdwMeta *meta, int elevel)
{
	char	   *text = format_meta(meta);
	char	   *path = psprintf("%s/%s", dir, META_FILE);
	char	   *tmp = psprintf("%s/%s.%d", dir, META_TMP_PREFIX, MyProcPid);
	size_t		len = strlen(text);
	int			fd;

	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
		return false;
	}
	errno = 0;
	if (write(fd, text, len) != (ssize_t) len)
	{
		/* a short write without an error is a full disk */
		if (errno == 0)
			errno = ENOSPC;
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
		CloseTransientFile(fd);
		(void) unlink(tmp);
		return false;
	}
	if (CloseTransientFile(fd) != 0)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tmp)));
		(void) unlink(tmp);
		return false;
	}
	/* fsyncs tmp, renames it, fsyncs the directory */
	if (durable_rename(tmp, path, elevel) != 0)
	{
		(void) unlink(tmp);
		return false;
	}
	pfree(text);
	pfree(tmp);
	pfree(path);
	return true;
}

/*
 * Compares the layout meta records with table t as the catalog describes it
 * now (from LsmFdwGetTable).  Returns LSMFDW_LAYOUT_EQUAL,
 * LSMFDW_LAYOUT_WIDER (the catalog reads every stored row as the recorded
 * layout did: new or dropped columns, a looser typmod, a domain replaced by
 * its base type, text <-> varchar, char(n) -> text) or
 * LSMFDW_LAYOUT_INCOMPATIBLE (anything else: another codec or type, a
 * narrower typmod, another key column), and for the latter appends the
 * first difference, as a sentence, to why.
 */
LsmFdwLayoutMatch
LsmFdwCompareLayout(const LsmFdwMeta *meta, const LsmFdwTable *t,
					StringInfo why)
{
	LsmFdwLayoutMatch result = LSMFDW_LAYOUT_EQUAL;
	int			i;

	if (meta->nkeys != t->nkeys ||
		memcmp(meta->keyattnos, t->keyattnos,
			   sizeof(AttrNumber) * t->nkeys) != 0)
	{
		if (meta->nkeys == 0)
			appendStringInfoString(why, "The store was created while the table had no key column.");
		else
		{
			for (i = 0; i < meta->nkeys; i++)
				if (meta->keyattnos[i] > t->natts ||
					t->cols[meta->keyattnos[i] - 1].dropped)
					break;
			if (i < meta->nkeys)
				appendStringInfo(why, "The rows are stored by a dropped key column; the key is now %s.",
								 key_description(t->cols, t->nkeys,
												 t->keyattnos));
			else
				appendStringInfo(why, "The rows are stored by key %s; the key is now %s.",
								 key_description(t->cols, meta->nkeys,
												 meta->keyattnos),
								 key_description(t->cols, t->nkeys,
												 t->keyattnos));
		}
		return LSMFDW_LAYOUT_INCOMPATIBLE;
	}
	if (meta->natts > t->natts)
	{
		appendStringInfo(why, "The store records %d attributes; the table has %d.",
						 meta->natts, t->natts);
		return LSMFDW_LAYOUT_INCOMPATIBLE;
	}
	for (i = 0; i < t->natts; i++)
	{
		const LsmFdwColumn *col = &t->cols[i];
		LsmFdwLayoutMatch m;

		if (i >= meta->natts)
			m = LSMFDW_LAYOUT_WIDER;	/* ADD COLUMN: old rows lack it */
		else if (meta->cols[i].dropped)
		{
			if (!col->dropped)
			{
				appendStringInfo(why, "Attribute %d was dropped from the stored rows, but the table has a column \"%s\" there.",
								 i + 1, col->name);
				return LSMFDW_LAYOUT_INCOMPATIBLE;
			}
			m = LSMFDW_LAYOUT_EQUAL;
		}
		else if (col->dropped)
			m = LSMFDW_LAYOUT_WIDER;	/* DROP COLUMN: its bytes are ignored */
		else
			m = compare_column(&meta->cols[i], col, why);
		if (m == LSMFDW_LAYOUT_INCOMPATIBLE)
			return m;
		if (m == LSMFDW_LAYOUT_WIDER)
			result = m;
	}
	return result;
}

/*
 * Compares a live column with how its rows store it; see
 * LsmFdwCompareLayout.
 */
static LsmFdwLayoutMatch
compare_column(const LsmFdwStoredColumn *old, const LsmFdwColumn *new,
			   StringInfo why)
{
	bool		wider;

	if (old->codec == new->codec && old->typid == new->typid &&
		old->basetypid == new->basetypid && old->typmod == new->typmod)
		return LSMFDW_LAYOUT_EQUAL;

	/*
	 * A domain may give way to its base type, but no new domain may come in:
	 * its constraints would hold for the new rows only.
	 */
	if (new->typid != old->typid && new->typid != new->basetypid)
		wider = false;
	else if (old->codec == LSMFDW_CODEC_BPCHAR &&
			 new->codec == LSMFDW_CODEC_TEXT)
	{
		/* char is stored without its trailing blanks, as ::text drops them */
		wider = text_length_bound(old->basetypid, old->typmod) <=
			text_length_bound(new->basetypid, new->typmod);
	}
	else if (old->codec != new->codec)
		wider = false;
	else if (old->codec == LSMFDW_CODEC_TEXT)
		wider = text_length_bound(old->basetypid, old->typmod) <=
			text_length_bound(new->basetypid, new->typmod);
	else
		wider = old->basetypid == new->basetypid &&
			typmod_loosens(old->basetypid, old->typmod, new->typmod);

	if (wider)
		return LSMFDW_LAYOUT_WIDER;
	appendStringInfo(why, "Column \"%s\" is stored as %s; its type is now %s.",
					 new->name, stored_type_name(old),
					 format_type_with_typemod(new->typid,
											  new->typid == new->basetypid
											  ? new->typmod : -1));
	return LSMFDW_LAYOUT_INCOMPATIBLE;
}

/*
 * Whether every value of type typid with typmod old is a value of typid
 * with typmod new, with the same stored bytes and read back the same way.
 * Unknown types: only when new is -1 (no constraint).
 */
static bool
typmod_loosens(Oid typid, int32 old, int32 new)
{
	if (old == new)
		return true;
	switch (typid)
	{
		case BPCHAROID:
			/* read back padded to the typmod: no typmod, no padding */
			return old >= 0 && new > old;
		case NUMERICOID:
			{
				int32		oldp,
							olds,
							newp,
							news;

				if (new < 0)
					return true;
				if (old < 0)
					return false;
				/* precision in the high 16 bits, scale (signed) in the low 11 */
				oldp = ((old - VARHDRSZ) >> 16) & 0xffff;
				olds = (((old - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
				newp = ((new - VARHDRSZ) >> 16) & 0xffff;
				news = (((new - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
				return news == olds && newp >= oldp;
			}
		case VARBITOID:
		case TIMEOID:
		case TIMETZOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			/* a length or a count of fractional digits */
			return new < 0 || (old >= 0 && new > old);
		default:
			return new < 0;
	}
}

/*
 * The most characters a value of type typid (text, varchar or char) with
 * typmod may have: its typmod's, or PG_INT64_MAX if it has none.
 */
static int64
text_length_bound(Oid typid, int32 typmod)
{
	if ((typid == VARCHAROID || typid == BPCHAROID) && typmod >= VARHDRSZ)
		return typmod - VARHDRSZ;
	return PG_INT64_MAX;
}

/* Whether attnum is one of the key columns meta records. */
static bool
is_key(const LsmFdwMeta *meta, AttrNumber attnum)
{
	int			i;

	for (i = 0; i < meta->nkeys; i++)
		if (meta->keyattnos[i] == attnum)
			return true;
	return false;
}

/*
 * "column "a"" or "columns "a", "b"" (attnos of cols), for messages, in a
 * new palloc'd string.
 */
static char *
key_description(const LsmFdwColumn *cols, int nkeys, const AttrNumber *attnos)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfoString(&buf, nkeys == 1 ? "column " : "columns ");
	for (i = 0; i < nkeys; i++)
		appendStringInfo(&buf, "%s\"%s\"", i > 0 ? ", " : "",
						 cols[attnos[i] - 1].name);
	return buf.data;
}

/* The SQL name of the type a column is stored as ("character varying(3)"). */
static char *
stored_type_name(const LsmFdwStoredColumn *col)
{
	if (col->typid != col->basetypid)
		return format_type_extended(col->typid, -1, FORMAT_TYPE_ALLOW_INVALID);
	return format_type_extended(col->basetypid, col->typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN |
								FORMAT_TYPE_ALLOW_INVALID);
}

/* The text of meta's file, in a new palloc'd string. */
static char *
format_meta(const LsmFdwMeta *meta)
{
	StringInfoData buf;
	pg_crc32c	crc;
	int			i;

	initStringInfo(&buf);
	/* version 1 where it says it all: the previous release reads it */
	appendStringInfo(&buf, "%s %d\n", META_MAGIC,
					 meta->nkeys > 1 ? META_VERSION : 1);
	appendStringInfo(&buf, "system " UINT64_FORMAT "\n", meta->sysid);
	appendStringInfo(&buf, "database %u\n", meta->dboid);
	appendStringInfo(&buf, "table %u\n", meta->relid);
	appendStringInfo(&buf, "stamp %u\n", meta->stamp);
	appendStringInfo(&buf, "created " INT64_FORMAT "\n", meta->created);
	appendStringInfoString(&buf, "key");
	for (i = 0; i < Max(meta->nkeys, 1); i++)
		appendStringInfo(&buf, " %d",
						 meta->nkeys > 0 ? (int) meta->keyattnos[i] : 0);
	appendStringInfoChar(&buf, '\n');
	appendStringInfo(&buf, "attributes %d\n", meta->natts);
	for (i = 0; i < meta->natts; i++)
	{
		const LsmFdwStoredColumn *col = &meta->cols[i];

		if (col->dropped)
			appendStringInfo(&buf, "%d dropped\n", i + 1);
		else
			appendStringInfo(&buf, "%d %s %u %u %d\n", i + 1,
							 LsmFdwCodecName(col->codec), col->typid,
							 col->basetypid, col->typmod);
	}
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf.data, buf.len);
	FIN_CRC32C(crc);
	appendStringInfo(&buf, "checksum %08x\n", crc);
	return buf.data;
}

/*
 * Parses the text of a metadata file (len bytes, NUL-terminated, modified)
 * into *meta.  Returns false with *problem set if it is not one.
 */
static bool
parse_meta(char *text, size_t len, LsmFdwMeta *meta, char **problem)
{
	char	   *sum = NULL;
	char	   *line;
	char	   *next;
	pg_crc32c	crc;
	unsigned int stored_crc;
	unsigned long long sysid;
	long long	created;
	int			version;
	int			key;
	char	   *keys;
	int			n = 0;
	int			i;

	memset(meta, 0, sizeof(*meta));
	if (strlen(text) != len)
	{
		*problem = pstrdup("the file holds a NUL byte");
		return false;
	}

	/* the checksum line is the last one */
	if (len >= 2)
	{
		text[len - 1] = '\0';
		sum = strrchr(text, '\n');
		text[len - 1] = '\n';
	}
	if (sum == NULL ||
		sscanf(sum + 1, "checksum %8x%n", &stored_crc, &n) != 1 ||
		sum[1 + n] != '\n' || sum + 2 + n != text + len)
	{
		*problem = pstrdup("the file does not end with its checksum");
		return false;
	}
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text, sum + 1 - text);
	FIN_CRC32C(crc);
	if (crc != stored_crc)
	{
		*problem = psprintf("checksum mismatch: computed %08x, stored %08x",
							crc, stored_crc);
		return false;
	}
	sum[1] = '\0';

	/* one item per line, in a fixed order */
	line = text;
#define NEXT_LINE() \
	(next = strchr(line, '\n'), next == NULL ? NULL : (*next = '\0', line))
#define ADVANCE() (line = next + 1)

	if (NEXT_LINE() == NULL ||
		sscanf(line, META_MAGIC " %d%n", &version, &n) != 1 || line[n] != '\0')
	{
		*problem = pstrdup("it is not an lsm_fdw metadata file");
		return false;
	}
	if (version < 1 || version > META_VERSION)
	{
		*problem = psprintf("unknown format version %d", version);
		return false;
	}
	ADVANCE();
	if (NEXT_LINE() == NULL ||
		sscanf(line, "system %llu%n", &sysid, &n) != 1 || line[n] != '\0')
		goto bad;
	meta->sysid = (uint64) sysid;
	ADVANCE();
	if (NEXT_LINE() == NULL ||
		sscanf(line, "database %u%n", &meta->dboid, &n) != 1 || line[n] != '\0')
		goto bad;
	ADVANCE();
	if (NEXT_LINE() == NULL ||
		sscanf(line, "table %u%n", &meta->relid, &n) != 1 || line[n] != '\0')
		goto bad;
	ADVANCE();
	if (NEXT_LINE() == NULL ||
		sscanf(line, "stamp %u%n", &meta->stamp, &n) != 1 || line[n] != '\0')
		goto bad;
	ADVANCE();
	if (NEXT_LINE() == NULL ||
		sscanf(line, "created %lld%n", &created, &n) != 1 || line[n] != '\0')
		goto bad;
	meta->created = (TimestampTz) created;
	ADVANCE();
	/* "key 0" (no layout), "key a" or, in version 2, "key a b ..." */
	if (NEXT_LINE() == NULL || strncmp(line, "key", 3) != 0)
		goto bad;
	for (keys = line + 3; *keys != '\0'; keys += n)
	{
		if (sscanf(keys, " %d%n", &key, &n) != 1 || keys[0] != ' ' ||
			meta->nkeys == LSMFDW_MAX_KEYS || key < 0 ||
			(key == 0 && (meta->nkeys > 0 || keys[n] != '\0')))
			goto bad;
		if (key > 0)
			meta->keyattnos[meta->nkeys++] = (AttrNumber) key;
	}
	if (keys == line + 3 || (version == 1 && meta->nkeys > 1))
		goto bad;
	ADVANCE();
	if (NEXT_LINE() == NULL ||
		sscanf(line, "attributes %d%n", &meta->natts, &n) != 1 ||
		line[n] != '\0' || meta->natts < 0 ||
		meta->natts > MaxHeapAttributeNumber)
		goto bad;
	ADVANCE();
	for (i = 0; i < meta->nkeys; i++)
	{
		int			j;

		if (meta->keyattnos[i] > meta->natts)
			goto bad;
		for (j = 0; j < i; j++)
			if (meta->keyattnos[j] == meta->keyattnos[i])
				goto bad;
	}
	meta->cols = palloc0(sizeof(LsmFdwStoredColumn) * Max(meta->natts, 1));
	for (i = 0; i < meta->natts; i++)
	{
		LsmFdwStoredColumn *col = &meta->cols[i];
		char		word[16];
		int			attnum;
		int			m = 0;

		/* "<attnum> dropped" or "<attnum> <codec> <type> <base> <typmod>" */
		if (NEXT_LINE() == NULL ||
			sscanf(line, "%d %15s%n", &attnum, word, &n) != 2)
			goto bad;
		if (strcmp(word, "dropped") == 0)
		{
			if (line[n] != '\0')
				goto bad;
			col->dropped = true;
		}
		else if (!LsmFdwCodecByName(word, &col->codec) ||
				 sscanf(line + n, " %u %u %d%n", &col->typid,
						&col->basetypid, &col->typmod, &m) != 3 ||
				 line[n + m] != '\0')
			goto bad;
		if (attnum != i + 1 || (col->dropped && is_key(meta, i + 1)))
			goto bad;
		ADVANCE();
	}
	if (*line != '\0')
		goto bad;
	return true;

bad:
	*problem = psprintf("line \"%s\" is not what it should be", line);
	return false;
#undef NEXT_LINE
#undef ADVANCE
}

/*
 * What directory dir, which has no metadata file, holds: nothing but,
 * perhaps, metadata files being written (a store whose creation did not
 * finish: LSMFDW_META_EMPTY_DIRECTORY), or other files
 * (LSMFDW_META_MISSING).  If it cannot be read, reports it at elevel and,
 * if that returns, returns LSMFDW_META_UNREADABLE.
 */
static LsmFdwMetaState
directory_state(const char *dir, int elevel)
{
	DIR		   *d = AllocateDir(dir);
	struct dirent *de;
	LsmFdwMetaState state = LSMFDW_META_EMPTY_DIRECTORY;

	if (d == NULL)
	{
		ereport(elevel,
				(errcode_for_file_access(),
				 errmsg("could not open directory \"%s\": %m", dir)));
		return LSMFDW_META_UNREADABLE;
	}
	while ((de = ReadDirExtended(d, dir, elevel)) != NULL)
	{
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
			strncmp(de->d_name, META_TMP_PREFIX, strlen(META_TMP_PREFIX)) == 0)
			continue;
		state = LSMFDW_META_MISSING;
		break;
	}
	FreeDir(d);
	return state;
}

/*
 * Raises the error for table t whose definition would misread the rows of
 * its store; why says what differs.
 */
void
LsmFdwReportLayoutMismatch(const LsmFdwTable *t, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
			 errmsg("foreign table \"%s\" does not match the rows of its store",
					t->relname),
			 errdetail_internal("%s", why),
			 errhint("Restore the definition the rows were written with, or drop the table.")));
}

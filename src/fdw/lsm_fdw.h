/*-------------------------------------------------------------------------
 *
 * lsm_fdw.h
 *		  Private declarations of the lsm_fdw glue.
 *
 * src/fdw/ is the only part of the extension that includes postgres.h; it
 * sees the storage engine only through lsm.h.  One file per concern, all
 * around this header (the postgres_fdw layout):
 *
 *	fdw.c		module magic, _PG_init, the handler
 *	ddl.c		what DDL does to stores: created with their table, removed
 *				with it, checked when a column, the key or a type changes
 *				(the object access hook and the event triggers)
 *	option.c	the validator, the parsing of option values, and the
 *				resolution of a table's options (key column, store location,
 *				engine tunables) into an LsmFdwTable
 *	codec.c		keys and row fields: PostgreSQL datums <-> engine bytes
 *	meta.c		a store's metadata file: whose store it is and how its
 *				rows are laid out
 *	store.c		the per-backend cache of open stores, the checks and the
 *				creation of a store when it is opened, engine error
 *				reporting, removal of dropped tables' stores
 *	xact.c		the transaction's pending writes: buffered per backend,
 *				written as one batch per store at pre-commit, undone by
 *				savepoint rollback, merged into reads
 *	plan.c		planning: the quals each access path serves, costs,
 *				pathkeys, the ForeignScan; the GUC lsm_fdw.value_search
 *	scan.c		the scan callbacks (every access path) and EXPLAIN
 *	merge.c		committed rows overlaid with pending writes, in key order
 *	modify.c	INSERT, UPDATE, DELETE, COPY FROM and TRUNCATE
 *	analyze.c	ANALYZE: a sample of the store's rows
 *	functions.c	the lsm_ SQL functions: statistics, flush, compact, verify
 *	compactor.c	who compacts a store after a commit: a background worker
 *				(lsm_fdw.compaction), or the committing backend
 *
 * A foreign table is stored in one engine store.  The engine key is the
 * table's key column encoded so that memcmp order is the type's btree order;
 * the engine value is a row (lsm_row_encode) with one field per non-key
 * attribute, in attribute number order, each in a canonical binary form so
 * that equal values have equal bytes (see codec.c).
 *
 * Naming: FDW callbacks are static and named lsmfdw<Callback>; functions
 * shared between files are named LsmFdw<Verb>.
 *
 * src/fdw/lsm_fdw.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef LSM_FDW_H
#define LSM_FDW_H

#include "access/attnum.h"
#include "datatype/timestamp.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"

#include "lsm.h"

/*
 * Option names.  Server: directory.  Foreign table: key and the engine
 * tunables.  Column: key, value_index.  See option.c for values and limits.
 */
#define LSMFDW_OPT_DIRECTORY			"directory"
#define LSMFDW_OPT_KEY					"key"
#define LSMFDW_OPT_MEMTABLE_SIZE		"memtable_size"
#define LSMFDW_OPT_FILE_SIZE			"file_size"
#define LSMFDW_OPT_BITS_PER_KEY			"bits_per_key"
#define LSMFDW_OPT_VALUE_FILTER_BITS	"value_filter_bits"
#define LSMFDW_OPT_VALUE_FILTER_HASHES	"value_filter_hashes"
#define LSMFDW_OPT_HIERARCHY_ORDER		"hierarchy_order"
#define LSMFDW_OPT_VALUE_INDEX			"value_index"

/* Stores at the default location live in $PGDATA/<this>/<database>/<table>. */
#define LSMFDW_DEFAULT_DIR				"lsm_fdw"

/*
 * How the values of one column are turned into bytes (codec.c).  The codecs
 * up to LSMFDW_CODEC_ENUM are canonical: equal values, equal bytes.  The
 * metadata file names them (meta.c), so the order may change, not a name.
 */
typedef enum LsmFdwCodec
{
	LSMFDW_CODEC_BOOL,			/* one byte, 0 or 1 */
	LSMFDW_CODEC_INT2,			/* big-endian, sign bit flipped */
	LSMFDW_CODEC_INT4,
	LSMFDW_CODEC_INT8,
	LSMFDW_CODEC_FLOAT4,		/* IEEE bits big-endian, -0 -> 0, one NaN */
	LSMFDW_CODEC_FLOAT8,
	LSMFDW_CODEC_TEXT,			/* text, varchar: the bytes */
	LSMFDW_CODEC_BPCHAR,		/* the bytes without trailing blanks */
	LSMFDW_CODEC_BYTEA,			/* the bytes */
	LSMFDW_CODEC_UUID,			/* the 16 bytes */
	LSMFDW_CODEC_DATE,			/* as INT4 */
	LSMFDW_CODEC_TIMESTAMP,		/* timestamp, timestamptz: as INT8 */
	LSMFDW_CODEC_ENUM,			/* the value's pg_enum OID, 4 bytes */
	LSMFDW_CODEC_SEND,			/* the type's binary send/receive */
	LSMFDW_CODEC_TEXTIO			/* the type's text output/input */
} LsmFdwCodec;

/* Columns of a composite key, at most (as an index's, INDEX_MAX_KEYS) */
#define LSMFDW_MAX_KEYS 32

/* One attribute of a foreign table, as the codec sees it. */
typedef struct LsmFdwColumn
{
	AttrNumber	attnum;
	char	   *name;
	bool		dropped;
	Oid			typid;			/* the attribute's type */
	Oid			basetypid;		/* ... or its base type for a domain */
	int32		typmod;			/* typmod of basetypid */
	Oid			collation;
	LsmFdwCodec codec;
	bool		canonical;		/* equal values have equal bytes */
	int			field;			/* row field number; -1 for the key */
	/* LSMFDW_CODEC_SEND and _TEXTIO only, set up on first use */
	bool		io_ready;
	MemoryContext io_cxt;		/* the table's context, for the FmgrInfos */
	FmgrInfo	out_func;		/* typsend or typoutput */
	FmgrInfo	in_func;		/* typreceive or typinput */
	Oid			ioparam;
} LsmFdwColumn;

/*
 * What the glue needs to know about one foreign table: its columns and key,
 * where its store lives and how to open it.  Built from the catalogs and
 * cached by LsmFdwGetTable (read-only for its callers), or built in the
 * current memory context by LsmFdwGetTableLenient.
 */
typedef struct LsmFdwTable
{
	Oid			relid;
	char	   *relname;
	int			natts;			/* attributes, dropped ones included */
	AttrNumber	keyattno;		/* the key column, the first of a composite
								 * key; InvalidAttrNumber only from
								 * LsmFdwGetTableLenient: no usable key */
	int			nkeys;			/* key columns (0 with no usable key) */
	AttrNumber	keyattnos[LSMFDW_MAX_KEYS];	/* in key order */
	LsmFdwColumn *cols;			/* natts entries, cols[attnum - 1] */
	int			nfields;		/* fields per row: natts - nkeys */
	bool		has_io;			/* a live column of codec SEND or TEXTIO */
	bool		has_textio;		/* ... of codec TEXTIO */
	char	   *path;			/* store directory */
	bool		default_location;	/* path is under $PGDATA/lsm_fdw (swept
									 * when its database is dropped) */
	SubTransactionId create_subid;	/* the relation's rd_createSubid */
	lsm_options opts;			/* for lsm_open */
} LsmFdwTable;

/*
 * How a store's rows are laid out, as its metadata file records it (meta.c):
 * the key column and, per attribute, the type and codec its rows were
 * written with.  Compared with the catalog whenever the store is opened and
 * after DDL on the table (ddl.c).
 */
typedef struct LsmFdwStoredColumn
{
	bool		dropped;
	Oid			typid;			/* the attribute's type (a domain, maybe) */
	Oid			basetypid;		/* its base type */
	int32		typmod;			/* typmod of basetypid */
	LsmFdwCodec codec;
} LsmFdwStoredColumn;

typedef struct LsmFdwMeta
{
	/* identity: whose store this is (never changes) */
	uint64		sysid;			/* the cluster's system identifier */
	Oid			dboid;
	Oid			relid;
	TransactionId stamp;		/* the table's creation (LsmFdwTableStamp) */
	TimestampTz created;		/* when the store was created, for messages */
	/* layout: how its rows are stored */
	int			nkeys;			/* key columns; 0: no layout yet (the table
								 * never had a usable key) */
	AttrNumber	keyattnos[LSMFDW_MAX_KEYS];	/* in key order */
	int			natts;
	LsmFdwStoredColumn *cols;	/* natts entries, cols[attnum - 1] */
} LsmFdwMeta;

/* How the catalog's definition of a table relates to its stored layout */
typedef enum LsmFdwLayoutMatch
{
	LSMFDW_LAYOUT_EQUAL,		/* the same layout */
	LSMFDW_LAYOUT_WIDER,		/* reads every stored row as the layout did,
								 * and accepts more (varchar(3) ->
								 * varchar(10), ADD/DROP COLUMN) */
	LSMFDW_LAYOUT_INCOMPATIBLE	/* would read stored rows differently */
} LsmFdwLayoutMatch;

/* What LsmFdwReadMeta found in a store directory */
typedef enum LsmFdwMetaState
{
	LSMFDW_META_OK,
	LSMFDW_META_NO_DIRECTORY,	/* the directory does not exist */
	LSMFDW_META_EMPTY_DIRECTORY,	/* it holds nothing, or only a metadata
									 * file being written */
	LSMFDW_META_MISSING,		/* it holds other files but no metadata */
	LSMFDW_META_INVALID,		/* the metadata file cannot be parsed */
	LSMFDW_META_UNREADABLE		/* an I/O error (reported) */
} LsmFdwMetaState;

/*
 * Open scans of a store whose command ids a store remembers: xact.c moves
 * pending writes out of memory only when it knows what every open scan
 * sees (LsmFdwScansWithin).
 */
#define LSMFDW_SCAN_SLOTS	8

/* Longest key whose row version a store remembers (LsmFdwNoteRead). */
#define LSMFDW_READ_KEY_MAX 64

/* One open store of the per-backend cache (store.c). */
typedef struct LsmFdwStore
{
	Oid			relid;			/* hash key */
	lsm_db	   *db;				/* NULL when closed */
	char	   *path;			/* malloc'd; the directory db was opened on */
	char	   *relname;		/* the table's name when db was opened, for
								 * the engine's log messages */
	bool		stale;			/* the relation changed: reopen when unpinned */
	bool		doomed;			/* directory removed: close when unpinned */
	int			pins;			/* scans, modifications and pending writes
								 * using db */
	int			scans;			/* open scans (LsmFdwScanBegin) */
	CommandId	scan_cids[LSMFDW_SCAN_SLOTS];	/* the command ids they read
												 * with ... */
	bool		scan_cids_lost; /* ... unless more were open at once */
	int			modifying;		/* UPDATEs and DELETEs in progress: the
								 * handle is not refreshed meanwhile */
	LocalTransactionId snapshot_lxid;	/* the transaction whose snapshot the
										 * handle holds (REPEATABLE READ and
										 * SERIALIZABLE), or invalid */
	int			l0_trigger;		/* the handle's l0_compaction_trigger */

	/*
	 * The last row a key lookup read from the store (LsmFdwNoteRead): its
	 * version, for the UPDATE or DELETE that changes it, so that the row
	 * is read once.  Valid while the handle's view is at read_seq.
	 */
	uint64		read_seq;		/* lsm_last_sequence then; 0: none */
	uint64		read_version;
	int			read_klen;
	char		read_key[LSMFDW_READ_KEY_MAX];
} LsmFdwStore;

/* How a scan reads its store: plan.c chooses, scan.c carries out. */
typedef enum LsmFdwAccess
{
	LSMFDW_ACCESS_FULL_SCAN,	/* every entry, in key order */
	LSMFDW_ACCESS_KEY_LOOKUP,	/* key = value: one lsm_get */
	LSMFDW_ACCESS_KEY_LIST,		/* key IN (...): one lsm_multi_get */
	LSMFDW_ACCESS_KEY_RANGE,	/* key bounds: a seek, then key order */
	LSMFDW_ACCESS_VALUE_SEARCH, /* column = value: lsm_value_search_with */
	LSMFDW_ACCESS_AGGREGATE		/* a full scan aggregated in place (agg.c) */
} LsmFdwAccess;

/*
 * ForeignScan.fdw_private, in this order.  ForeignScan.fdw_exprs: the
 * lookup value, the array of a key list, the bounds of a range, the
 * searched value.
 */
enum LsmFdwScanPrivate
{
	LSMFDW_PRIVATE_ACCESS,		/* Integer: LsmFdwAccess */
	LSMFDW_PRIVATE_COLUMN,		/* String: key or searched column (EXPLAIN) */
	LSMFDW_PRIVATE_ATTRS,		/* IntList: attributes to decode */
	LSMFDW_PRIVATE_BOUNDS,		/* IntList: LsmFdwBound of each bound */
	LSMFDW_PRIVATE_FIELD,		/* Integer: the searched column's field */
	LSMFDW_PRIVATE_STRATEGY,	/* Integer: value search strategy */
	LSMFDW_PRIVATE_CTID,		/* Integer: 1 if the plan reads ctid */
	LSMFDW_PRIVATE_BACKWARD,	/* Integer: 1 for descending key order */
	/* LSMFDW_ACCESS_AGGREGATE only (agg.c) */
	LSMFDW_PRIVATE_AGG_KINDS,	/* IntList: what each output column is */
	LSMFDW_PRIVATE_AGG_ATTNOS	/* IntList: ... of which attribute */
};

/* The kind of a bound of a key range: the qual "key <op> value" */
typedef enum LsmFdwBound
{
	LSMFDW_BOUND_GE,			/* key >= value */
	LSMFDW_BOUND_GT,			/* key > value */
	LSMFDW_BOUND_LE,			/* key <= value */
	LSMFDW_BOUND_LT,			/* key < value */
	LSMFDW_BOUND_EQ				/* column k of a composite key = value,
								 * for a prefix (kinds: EQ * k, then
								 * bounds of column k) */
} LsmFdwBound;

/* What LsmFdwEncodeKeyBound made of a bound (codec.c) */
typedef enum LsmFdwBoundEnc
{
	LSMFDW_BOUND_NONE,			/* every key satisfies it: no bound */
	LSMFDW_BOUND_EMPTY,			/* no key satisfies it */
	LSMFDW_BOUND_INCLUSIVE,		/* the keys from (up to) the encoded one */
	LSMFDW_BOUND_EXCLUSIVE		/* the keys beyond (below) it */
} LsmFdwBoundEnc;

/* lsm_fdw.value_search: an LSM_SEARCH_* or this */
#define LSMFDW_VALUE_SEARCH_OFF		(-1)
extern int	lsm_fdw_value_search;

/*
 * What the store held for a key when the transaction first wrote it, which
 * the commit checks is still so (xact.c).
 */
typedef enum LsmFdwBase
{
	LSMFDW_BASE_ABSENT,			/* no row (INSERT): else unique_violation */
	LSMFDW_BASE_ABSENT_SKIP,	/* no row (INSERT ... ON CONFLICT DO
								 * NOTHING): else the write is dropped */
	LSMFDW_BASE_ABSENT_UPSERT,	/* no row (INSERT ... ON CONFLICT DO
								 * UPDATE): else serialization_failure */
	LSMFDW_BASE_VERSION,		/* the row the statement read (UPDATE,
								 * DELETE): else serialization_failure */
	LSMFDW_BASE_ANY				/* not checked (TRUNCATE) */
} LsmFdwBase;

/* The size of a store (store.c) */
typedef struct LsmFdwStoreSize
{
	double		entries;		/* of every level and the memtable */
	double		bytes;
	double		memtable_entries;
	double		files;			/* SSTables */
} LsmFdwStoreSize;

/* A key's bytes, as the hash key of an entry (LsmFdwKeyTableCreate) */
typedef struct LsmFdwKeyRef
{
	const char *data;
	size_t		len;
} LsmFdwKeyRef;

/* A pending write as a read sees it (xact.c). */
typedef struct LsmFdwPendingRow
{
	const char *key;
	size_t		klen;
	bool		is_delete;
	const char *val;			/* the encoded row, if !is_delete */
	size_t		vlen;
} LsmFdwPendingRow;

/* fdw.c */
extern bool LsmFdwIsOurTable(Oid relid);
extern bool LsmFdwIsOurServer(Oid serverid);

/* ddl.c */
extern void LsmFdwInitDdl(void);
extern void LsmFdwLayoutCheckAtCommit(Oid relid);

/* option.c */
extern int	LsmFdwIntOption(const DefElem *def);
extern bool LsmFdwBoolOption(const DefElem *def);
extern void LsmFdwInitTables(void);
extern LsmFdwTable *LsmFdwGetTable(Relation rel);
extern LsmFdwTable *LsmFdwGetTableLenient(Relation rel);
extern int	LsmFdwKeyIndex(const LsmFdwTable *t, AttrNumber attnum);
extern char *LsmFdwKeyColumnNames(const LsmFdwTable *t);
extern char *LsmFdwStorePath(Oid relid, bool *is_default);
extern char *LsmFdwServerDirectory(Oid serverid);

/* codec.c */
extern void LsmFdwSetupColumn(LsmFdwColumn *col);
extern bool LsmFdwCheckKeyColumn(const LsmFdwColumn *col,
								 const char *relname, bool strict);
extern const char *LsmFdwCodecName(LsmFdwCodec codec);
extern bool LsmFdwCodecByName(const char *name, LsmFdwCodec *codec);
extern bool LsmFdwEncodeKey(const LsmFdwTable *t, Datum value, Oid valtype,
							StringInfo buf);
extern Datum LsmFdwDecodeKey(const LsmFdwTable *t, const char *key,
							 size_t klen);
extern bool LsmFdwEncodeKeyValues(const LsmFdwTable *t, const Datum *values,
								  const Oid *valtypes, StringInfo buf);
extern void LsmFdwDecodeKeyValues(const LsmFdwTable *t, const char *key,
								  size_t klen, Datum *values);
extern bool LsmFdwEncodeKeyPart(const LsmFdwTable *t, int k, Datum value,
								Oid valtype, StringInfo buf);
extern void LsmFdwEncodeRow(LsmFdwTable *t, Datum *values, bool *nulls,
							StringInfo keybuf, StringInfo rowbuf);
extern void LsmFdwDecodeRow(LsmFdwTable *t, const char *key, size_t klen,
							const char *row, size_t rowlen, const int *attrs,
							int nattrs, Datum *values, bool *nulls,
							StringInfo arena);
extern Datum LsmFdwDecodeField(const LsmFdwTable *t, LsmFdwColumn *col,
							   const char *p, size_t len);
extern char *LsmFdwKeyToString(const LsmFdwTable *t, const char *key,
							   size_t klen);
extern int	LsmFdwKeyCmp(const char *a, size_t alen, const char *b,
						 size_t blen);
extern struct HTAB *LsmFdwKeyTableCreate(const char *name, Size entrysize,
										 MemoryContext cxt);
extern LsmFdwBoundEnc LsmFdwEncodeKeyBound(const LsmFdwTable *t,
										   Datum value, Oid valtype,
										   LsmFdwBound kind, StringInfo buf);
extern LsmFdwBoundEnc LsmFdwEncodePrefixBound(const LsmFdwTable *t,
											  const char *prefix, int plen,
											  int k, const Datum *value,
											  Oid valtype, LsmFdwBound kind,
											  StringInfo buf);
extern bool LsmFdwKeyHasCtid(const LsmFdwTable *t);
extern bool LsmFdwKeyToCtid(const LsmFdwTable *t, const char *key,
							size_t klen, ItemPointer tid);
extern void LsmFdwReportNoCtid(const LsmFdwTable *t, const char *key,
							   size_t klen) pg_attribute_noreturn();
extern bool LsmFdwEncodeNeedle(LsmFdwColumn *col, Datum value, Oid valtype,
							   StringInfo buf);

/* meta.c */
extern TransactionId LsmFdwTableStamp(Oid relid);
extern LsmFdwMeta *LsmFdwMetaForTable(const LsmFdwTable *t);
extern LsmFdwMetaState LsmFdwReadMeta(const char *dir, LsmFdwMeta *meta,
									  char **problem, int elevel);
extern bool LsmFdwWriteMeta(const char *dir, const LsmFdwMeta *meta,
							int elevel);
extern bool LsmFdwMetaIsTable(const LsmFdwMeta *meta, Oid relid);
extern char *LsmFdwDescribeMeta(const LsmFdwMeta *meta);
extern LsmFdwLayoutMatch LsmFdwCompareLayout(const LsmFdwMeta *meta,
											 const LsmFdwTable *t,
											 StringInfo why);
extern void LsmFdwReportLayoutMismatch(const LsmFdwTable *t, const char *why)
			pg_attribute_noreturn();

/* store.c */
extern void LsmFdwInitStores(void);
extern void LsmFdwCreateStore(LsmFdwTable *t);
extern bool LsmFdwStoreHoldsRows(LsmFdwTable *t, bool pending);
extern bool LsmFdwStoreValueFilters(LsmFdwTable *t, lsm_hierarchy_stats *h);
extern bool LsmFdwHoldsSnapshot(const LsmFdwStore *s);
extern lsm_db *LsmFdwOpenPrivateHandle(LsmFdwTable *t);
extern LsmFdwStore *LsmFdwOpenStore(LsmFdwTable *t, bool refresh);
extern void LsmFdwPinStore(LsmFdwStore *s);
extern void LsmFdwUnpinStore(LsmFdwStore *s);
extern void LsmFdwScanBegin(LsmFdwStore *s, CommandId curcid);
extern void LsmFdwScanEnd(LsmFdwStore *s, CommandId curcid);
extern bool LsmFdwScansWithin(const LsmFdwStore *s, CommandId lo,
							  CommandId hi);
extern void LsmFdwEngineLogToClient(bool on);
extern void LsmFdwResolvePrepared(LsmFdwStore *s, const char *relname);
extern void LsmFdwReportError(int rc, lsm_db *db, const char *relname,
							  const char *action) pg_attribute_noreturn();
extern void LsmFdwNoteRead(LsmFdwStore *s, const char *key, size_t klen,
						   const char *row, size_t rowlen);
extern bool LsmFdwReadVersion(LsmFdwStore *s, const char *key, size_t klen,
							  uint64 *version);
extern uint64 LsmFdwRowVersion(const char *row, size_t rowlen);
extern bool LsmFdwGet(LsmFdwStore *s, const char *relname,
					  const char *key, size_t klen,
					  char **val, size_t *vlen);
extern bool LsmFdwStoreLooksEmpty(LsmFdwStore *s);
extern void LsmFdwRemoveStoreDir(Oid relid, const char *path);
extern LsmFdwStoreSize LsmFdwGetStoreSize(LsmFdwStore *s,
										  const char *relname);

/* xact.c */
extern void LsmFdwInitXact(void);
extern bool LsmFdwPendingLookup(Oid relid, const char *key, size_t klen,
								CommandId curcid, LsmFdwPendingRow *out,
								CommandId *cid);
extern LsmFdwPendingRow *LsmFdwPendingVisible(Oid relid, CommandId curcid,
											  int *n);
extern void LsmFdwPendingWrite(LsmFdwStore *s, const char *relname,
							   const char *key, size_t klen,
							   const char *val, size_t vlen, bool is_delete,
							   LsmFdwBase base, CommandId cid);
extern void LsmFdwPendingBulkLoad(LsmFdwStore *s, const char *relname,
								  CommandId cid);
extern bool LsmFdwPendingTruncate(LsmFdwStore *s, const char *relname);
extern bool LsmFdwPendingTruncated(Oid relid);
extern bool LsmFdwPendingAny(Oid relid);
extern bool LsmFdwPendingInMemory(Oid relid, const char *key, size_t klen,
								  CommandId curcid);
extern lsm_iter *LsmFdwPendingStageIter(Oid relid, CommandId curcid);
extern bool LsmFdwPendingDropped(Oid relid);
extern void LsmFdwXactRemoveDirLater(Oid relid, const char *path,
									 SubTransactionId subid, bool at_commit);

/* compactor.c */
extern void LsmFdwInitCompaction(void);
extern bool LsmFdwCompactionAfterCommit(LsmFdwStore *s, const char *relname);
extern void LsmFdwCompactionPoll(void);
extern void LsmFdwLaunchCompactor(LsmFdwStore *s, const char *relname);

/* merge.c: a table as its transaction sees it, in key order */
/*
 * An engine iterator read a batch at a time (lsm_iter_batch): zero it after
 * every seek of the iterator.
 */
typedef struct LsmFdwBatch
{
	const lsm_entry *e;
	int			n;
	int			pos;
} LsmFdwBatch;

extern const lsm_entry *LsmFdwBatchFill(LsmFdwBatch *b, lsm_iter *it,
										LsmFdwStore *s, const char *relname);

/* The iterator's next entry, or NULL at its end (an error is raised). */
static inline const lsm_entry *
LsmFdwBatchNext(LsmFdwBatch *b, lsm_iter *it, LsmFdwStore *s,
				const char *relname)
{
	if (b->pos < b->n)
		return &b->e[b->pos++];
	return LsmFdwBatchFill(b, it, s, relname);
}

typedef struct LsmFdwMerge
{
	LsmFdwStore *store;
	const char *relname;
	lsm_iter   *iter;			/* the store's committed rows */
	lsm_iter   *staged;			/* the stage's writes, or NULL */
	LsmFdwPendingRow *pending;	/* the pending writes in memory */
	int			npending;
	int			ppos;			/* -1 or npending: none left */
	bool		backward;		/* descending key order */
	int			at;				/* sources at the row returned last */
	bool		store_only;		/* iter is the only source: read in batches */
	LsmFdwBatch batch;
} LsmFdwMerge;

extern void LsmFdwMergeOpen(LsmFdwMerge *m, LsmFdwStore *s, Oid relid,
							const char *relname, CommandId curcid,
							bool backward, const char *start,
							size_t startlen);
extern void LsmFdwMergeSetLimit(LsmFdwMerge *m, const char *limit,
								size_t limitlen);
extern bool LsmFdwMergeNextMerged(LsmFdwMerge *m, const char **key,
								  size_t *klen, const char **row,
								  size_t *rowlen);

/*
 * Moves m to its next row: sets *key and *row (valid until the next call
 * or the close) and returns true, or returns false at the end.
 */
static inline bool
LsmFdwMergeNext(LsmFdwMerge *m, const char **key, size_t *klen,
				const char **row, size_t *rowlen)
{
	const lsm_entry *e;

	if (!m->store_only)
		return LsmFdwMergeNextMerged(m, key, klen, row, rowlen);
	if ((e = LsmFdwBatchNext(&m->batch, m->iter, m->store, m->relname)) == NULL)
		return false;
	*key = e->key;
	*klen = e->klen;
	*row = e->val;
	*rowlen = e->vlen;
	return true;
}
extern void LsmFdwMergeClose(LsmFdwMerge *m);

/* plan.c */
struct PlannerInfo;
struct RelOptInfo;
struct ForeignPath;
struct ForeignScan;
struct Plan;
extern void LsmFdwDefinePlannerGUCs(void);
extern const char *LsmFdwStrategyName(int strategy);
extern void LsmFdwGetForeignRelSize(struct PlannerInfo *root,
									struct RelOptInfo *baserel,
									Oid foreigntableid);
extern void LsmFdwGetForeignPaths(struct PlannerInfo *root,
								  struct RelOptInfo *baserel,
								  Oid foreigntableid);
extern struct ForeignScan *LsmFdwGetForeignPlan(struct PlannerInfo *root,
												struct RelOptInfo *baserel,
												Oid foreigntableid,
												struct ForeignPath *best_path,
												List *tlist,
												List *scan_clauses,
												struct Plan *outer_plan);
extern List *LsmFdwReparameterizePath(struct PlannerInfo *root,
									  List *fdw_private,
									  struct RelOptInfo *child_rel);
extern bool LsmFdwRelStore(struct RelOptInfo *rel, LsmFdwTable **t,
						   double *pages, double *entries);
extern bool LsmFdwAllRangeBounds(struct PlannerInfo *root,
								 struct RelOptInfo *baserel, double *sel);
extern List *LsmFdwRangeBounds(struct PlannerInfo *root,
							   struct RelOptInfo *baserel, List *rinfos,
							   List **fdw_exprs, List **served);

/* agg.c */
typedef struct LsmFdwAgg LsmFdwAgg;
extern bool lsm_fdw_aggregate_pushdown;
extern void LsmFdwGetForeignUpperPaths(struct PlannerInfo *root,
									   UpperRelationKind stage,
									   struct RelOptInfo *input_rel,
									   struct RelOptInfo *output_rel,
									   void *extra);
extern struct ForeignScan *LsmFdwGetAggregatePlan(struct PlannerInfo *root,
												  struct ForeignPath *best_path,
												  List *tlist,
												  struct Plan *outer_plan);
extern LsmFdwAgg *LsmFdwAggBegin(LsmFdwTable *t, List *fdw_private,
								 MemoryContext cxt);
extern bool LsmFdwAggAdd(LsmFdwAgg *a, const char *key, size_t klen,
						 const char *row, size_t rowlen);
extern void LsmFdwAggSplit(LsmFdwAgg *a);
extern bool LsmFdwAggNext(LsmFdwAgg *a, TupleTableSlot *slot);
extern bool LsmFdwAggNextPass(LsmFdwAgg *a);
extern int	LsmFdwAggPasses(const LsmFdwAgg *a);

/* scan.c */
struct FdwRoutine;
extern void LsmFdwSetScanRoutines(struct FdwRoutine *routine);

/* modify.c */
extern void LsmFdwInitModify(void);
extern void LsmFdwSetModifyRoutines(struct FdwRoutine *routine);

/* analyze.c */
extern void LsmFdwSetAnalyzeRoutines(struct FdwRoutine *routine);

#endif							/* LSM_FDW_H */

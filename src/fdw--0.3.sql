/* src/fdw--0.3.sql: CREATE EXTENSION fdw (version 0.3) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fdw" to load this file. \quit

CREATE FUNCTION lsm_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FUNCTION lsm_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER lsm_fdw
  HANDLER lsm_fdw_handler
  VALIDATOR lsm_fdw_validator;

-- What DDL does to the tables' stores (src/fdw/ddl.c).  The trigger on
-- ddl_command_start loads the library before any DDL command, so that its
-- object access hook sees every CREATE, ALTER and DROP of a foreign table
-- (a DROP removes the table's store when it commits), and refuses ALTER TYPE
-- commands that would change how stored rows read.  The trigger on
-- ddl_command_end creates the stores of new tables and refuses changes to a
-- table's definition that would read its rows differently.
CREATE FUNCTION lsm_fdw_ddl_command_start()
RETURNS event_trigger
AS 'MODULE_PATHNAME'
LANGUAGE C;

CREATE EVENT TRIGGER lsm_fdw_ddl_command_start
  ON ddl_command_start
  EXECUTE FUNCTION lsm_fdw_ddl_command_start();

CREATE FUNCTION lsm_fdw_ddl_command_end()
RETURNS event_trigger
AS 'MODULE_PATHNAME'
LANGUAGE C;

CREATE EVENT TRIGGER lsm_fdw_ddl_command_end
  ON ddl_command_end
  EXECUTE FUNCTION lsm_fdw_ddl_command_end();

-- Functions that look into and maintain the store of a foreign table
-- (src/fdw/functions.c, docs/user-guide.md).  Each takes the table as a
-- regclass and checks it: an lsm_fdw foreign table, and SELECT on it for the
-- reading functions, ownership for the maintenance ones (as for VACUUM).
-- EXECUTE stays granted to PUBLIC: those checks are the access control.

CREATE FUNCTION lsm_stats(tbl regclass)
RETURNS TABLE(level int, files int, entries bigint, bytes bigint,
              key_filter_bytes bigint, value_filter_bytes bigint)
AS 'MODULE_PATHNAME', 'lsm_fdw_stats'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_stats(regclass) IS
'one row per LSM level of the table''s store that holds SSTables (files, entries, file bytes, key and value filter bytes), and level -1 for the memtable; needs SELECT on the table';

CREATE FUNCTION lsm_hierarchy(tbl regclass)
RETURNS TABLE(height int, leaves bigint, internal_nodes bigint,
              saturated bigint, node_bytes bigint, flat_bytes bigint,
              filter_bits bigint, filter_hashes int, hierarchy_order int)
AS 'MODULE_PATHNAME', 'lsm_fdw_hierarchy'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_hierarchy(regclass) IS
'shape of the value filter hierarchy of the table''s store (one row) and its value filter parameters; needs SELECT on the table';

CREATE FUNCTION lsm_counters(tbl regclass,
  OUT gets bigint, OUT key_hashes bigint, OUT filter_probes bigint,
  OUT filter_negatives bigint, OUT sstable_reads bigint,
  OUT false_positives bigint, OUT flushes bigint, OUT compactions bigint,
  OUT user_bytes_written bigint, OUT wal_bytes_written bigint,
  OUT sst_bytes_written bigint, OUT refreshes bigint, OUT retries bigint,
  OUT value_searches bigint, OUT search_nodes_visited bigint,
  OUT search_leaves_probed bigint, OUT search_leaves_positive bigint,
  OUT search_flat_words bigint, OUT search_sstables_unfiltered bigint,
  OUT search_sstables_scanned bigint, OUT search_sstables_false bigint,
  OUT search_blocks_scanned bigint, OUT search_blocks_skipped bigint,
  OUT search_memtable_scans bigint, OUT search_rows_validated bigint,
  OUT search_rows_rejected bigint, OUT search_rows_returned bigint,
  OUT wal_tails_discarded bigint, OUT last_wal_tail_file text,
  OUT last_wal_tail_offset bigint, OUT last_wal_tail_bytes bigint,
  OUT background_errors bigint, OUT last_background_error text)
RETURNS record
AS 'MODULE_PATHNAME', 'lsm_fdw_counters'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_counters(regclass) IS
'the engine counters of this backend''s handle on the table''s store, since it was opened or reset (background_errors: automatic flushes and compactions that failed, each also a WARNING), and the store''s record of invalid write-ahead log tails that recovery discarded; needs SELECT on the table';

CREATE FUNCTION lsm_reset_counters(tbl regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'lsm_fdw_reset_counters'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_reset_counters(regclass) IS
'sets the counters of this backend''s handle on the table''s store to zero; needs ownership of the table';

CREATE FUNCTION lsm_flush(tbl regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'lsm_fdw_flush'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_flush(regclass) IS
'writes the memtable of the table''s store to a new level-0 SSTable; needs ownership of the table';

CREATE FUNCTION lsm_compact(tbl regclass, full boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'lsm_fdw_compact'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_compact(regclass, boolean) IS
'compacts the table''s store until no level is over its target size, or with full => true flushes and merges everything into one level; can be canceled; needs ownership of the table';

CREATE FUNCTION lsm_verify(tbl regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'lsm_fdw_verify'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_verify(regclass) IS
'checks every checksum and invariant of the table''s store: returns true, or raises data_corrupted with the damage in the detail; needs ownership of the table';

CREATE FUNCTION lsm_store_path(tbl regclass)
RETURNS text
AS 'MODULE_PATHNAME', 'lsm_fdw_store_path'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_store_path(regclass) IS
'the directory of the table''s store; needs SELECT on the table';

CREATE FUNCTION lsm_store_size(tbl regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'lsm_fdw_store_size'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_store_size(regclass) IS
'bytes of every file in the directory of the table''s store; needs SELECT on the table';

CREATE FUNCTION lsm_key_columns(tbl regclass)
RETURNS TABLE(key_position int, column_name name, column_type regtype)
AS 'MODULE_PATHNAME', 'lsm_fdw_key_columns'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_key_columns(regclass) IS
'the key columns of the table in key order (one row for a one-column key); needs SELECT on the table';

/* src/fdw--0.2--0.3.sql: ALTER EXTENSION fdw UPDATE from 0.2 to 0.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fdw UPDATE TO '0.3'" to load this file. \quit

-- 0.3 makes failures of the engine's automatic flushes and compactions
-- visible: a WARNING when one fails, and two more columns of lsm_counters
-- (how many failed, the last one's message).  A function's OUT columns
-- cannot change in place: it is dropped and created again (nothing in the
-- extension depends on it).  Until this update runs, the library answers
-- the 0.2 definition with its 31 columns.

DROP FUNCTION lsm_counters(regclass);

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

--
-- SQL functions on a table's store: lsm_stats, lsm_hierarchy,
-- lsm_counters, lsm_reset_counters, lsm_flush, lsm_compact (and its
-- cancellation), lsm_verify, lsm_store_path, lsm_store_size; their argument
-- and privilege checks.  Level layouts depend on the engine's compaction
-- policy, so the results are checked with stable predicates.
--
-- compaction in this session, as the commits call for it: the level layouts
-- and lsm_verify's notices must not depend on when a background worker runs
SET lsm_fdw.compaction = inline;
CREATE SERVER lsm_func_srv FOREIGN DATA WRAPPER lsm_fdw;
-- a 16kB memtable and 4kB files make several levels out of 20000 rows; small
-- value filters and order 2 give the filter hierarchy internal nodes
CREATE FOREIGN TABLE fn (id int OPTIONS (key 'true'), tag text, n int)
  SERVER lsm_func_srv
  OPTIONS (memtable_size '16kB', file_size '4kB', value_filter_bits '8192',
           hierarchy_order '2');

-- the store is created with the table, and until its first use holds only
-- its metadata file
SELECT lsm_store_size('fn') BETWEEN 1 AND 1000 AS metadata_only;
SELECT lsm_store_path('fn') LIKE '%/lsm_fdw/%/' || 'fn'::regclass::oid
  AS path_ends_with_oid;
-- a new store: only the memtable, no hierarchy
SELECT level, files, entries FROM lsm_stats('fn');
SELECT height, leaves, internal_nodes, saturated, node_bytes, filter_bits,
       filter_hashes, hierarchy_order
  FROM lsm_hierarchy('fn');
SELECT 'MANIFEST' IN (SELECT pg_ls_dir(lsm_store_path('fn'))) AS store_created;

-- 40 commits of 500 rows, keys scattered so that the levels overlap
DO $$
BEGIN
  FOR i IN 0..39 LOOP
    INSERT INTO fn
      SELECT (g * 7919) % 20011, 'tag ' || g % 10, g
      FROM generate_series(i * 500 + 1, i * 500 + 500) g;
    COMMIT;
  END LOOP;
END $$;
SELECT count(*) FROM fn;
SELECT count(*) > 1 AS several_levels, bool_and(files > 0) AS files,
       sum(entries) >= 20000 AS all_entries, bool_and(bytes > 0) AS bytes,
       bool_and(key_filter_bytes > 0) AS key_filters,
       bool_and(value_filter_bytes > 0) AS value_filters
  FROM lsm_stats('fn') WHERE level >= 0;
SELECT lsm_store_size('fn') >=
       (SELECT sum(bytes) FROM lsm_stats('fn') WHERE level >= 0)
  AS size_covers_levels;
-- holes are not counted: with the default memtable_size, the memtable's
-- file is 136 MB long, and one row gives it a few blocks
CREATE FOREIGN TABLE fn_holes (id int OPTIONS (key 'true'), v text)
  SERVER lsm_func_srv;
INSERT INTO fn_holes VALUES (1, 'one');
SELECT lsm_store_size('fn_holes') * 4 <
       (SELECT sum((pg_stat_file(lsm_store_path('fn_holes') || '/' || f)).size)
          FROM pg_ls_dir(lsm_store_path('fn_holes')) f)
  AS holes_not_counted;
DROP FOREIGN TABLE fn_holes;

-- lsm_flush: the memtable goes to level 0
INSERT INTO fn SELECT g, 'late', g FROM generate_series(20011, 20020) g;
SELECT files, entries FROM lsm_stats('fn') WHERE level = -1;
SELECT lsm_flush('fn');
SELECT files, entries FROM lsm_stats('fn') WHERE level = -1;
SELECT files >= 1 AS level0_files FROM lsm_stats('fn') WHERE level = 0;
-- the functions see committed data only: pending writes are not flushed
BEGIN;
INSERT INTO fn VALUES (30000, 'pending', 0);
SELECT lsm_flush('fn');
SELECT entries FROM lsm_stats('fn') WHERE level = -1;
COMMIT;
SELECT entries FROM lsm_stats('fn') WHERE level = -1;
DELETE FROM fn WHERE id = 30000;

-- counters of this backend's handle
SELECT lsm_reset_counters('fn');
SELECT gets, key_hashes, flushes, compactions, user_bytes_written
  FROM lsm_counters('fn');
SELECT id, tag FROM fn WHERE id = 7919;
SELECT id, tag FROM fn WHERE id = -5;
SELECT gets, key_hashes, filter_probes >= 1 AS probed, flushes, compactions
  FROM lsm_counters('fn');
SELECT lsm_flush('fn');
SELECT flushes FROM lsm_counters('fn');

-- lsm_compact: until no level is over its target; nothing is lost
SELECT lsm_compact('fn');
SELECT sum(entries) >= 20010 AS all_entries FROM lsm_stats('fn');
SELECT count(*) FROM fn;

-- a full compaction canceled by statement_timeout stops with
-- query_canceled (the engine polls the interrupt callback while it merges),
-- and the store stays consistent and usable.  SET LOCAL in the same query
-- string (\;) limits the timeout to this one statement.
SET LOCAL statement_timeout = '1ms' \; SELECT lsm_compact('fn', full => true);
SHOW statement_timeout;
SELECT lsm_verify('fn');
SELECT count(*), sum(n) FROM fn;
SELECT sum(entries) >= 20010 AS all_entries FROM lsm_stats('fn');
-- the canceled call released its pin: after an ALTER the backend reopens the
-- store at its next use (which starts the counters again), as it does only
-- for an unpinned store
SELECT id FROM fn WHERE id = 7919;
SELECT gets > 0 AS counted FROM lsm_counters('fn');
ALTER FOREIGN TABLE fn OPTIONS (ADD bits_per_key '10');
SELECT gets FROM lsm_counters('fn');
-- the store's record of write-ahead log tails recovery discarded: none
SELECT wal_tails_discarded, last_wal_tail_file, last_wal_tail_offset,
       last_wal_tail_bytes
  FROM lsm_counters('fn');

-- the full compaction done: one level, each key once, a filter hierarchy
SELECT lsm_compact('fn', full => true);
SELECT count(*) AS levels, sum(entries) AS entries, sum(files) > 1 AS files
  FROM lsm_stats('fn') WHERE level >= 0;
SELECT entries FROM lsm_stats('fn') WHERE level = -1;
SELECT h.height >= 1 AS height, h.internal_nodes > 0 AS internal_nodes,
       h.saturated <= h.internal_nodes AS saturated,
       h.leaves = s.files AS one_leaf_per_file, h.node_bytes > 0 AS node_bytes,
       h.filter_bits, h.filter_hashes, h.hierarchy_order
  FROM lsm_hierarchy('fn') h,
       (SELECT sum(files) AS files FROM lsm_stats('fn') WHERE level >= 1) s;
SELECT compactions >= 1 AS compacted, sst_bytes_written > 0 AS wrote
  FROM lsm_counters('fn');
SELECT lsm_verify('fn');
SELECT count(*), sum(n) FROM fn;
SELECT id, tag, n FROM fn WHERE id = 7919;

-- NULL arguments (STRICT)
SELECT * FROM lsm_stats(NULL);
SELECT lsm_verify(NULL) IS NULL AS is_null;
SELECT lsm_compact('fn', NULL) IS NULL AS is_null;
SELECT lsm_store_path(NULL) IS NULL AS is_null;

-- only lsm_fdw foreign tables
CREATE TABLE fn_heap (id int PRIMARY KEY);
CREATE VIEW fn_view AS SELECT 1 AS x;
CREATE FOREIGN DATA WRAPPER fn_other_fdw;
CREATE SERVER fn_other_srv FOREIGN DATA WRAPPER fn_other_fdw;
CREATE FOREIGN TABLE fn_other (id int) SERVER fn_other_srv;
SELECT * FROM lsm_stats('fn_heap');                 -- ERROR
SELECT lsm_flush('fn_view');                        -- ERROR
SELECT lsm_verify('fn_other');                      -- ERROR
SELECT lsm_compact('fn_heap_pkey');                 -- ERROR
SELECT lsm_store_size(0);                           -- ERROR
SELECT lsm_store_path('no_such_table');             -- ERROR

-- privileges: reading needs SELECT, maintenance ownership
CREATE ROLE regress_lsm_func_reader;
CREATE ROLE regress_lsm_func_nobody;
CREATE ROLE regress_lsm_func_owner;
GRANT SELECT ON fn TO regress_lsm_func_reader;
CREATE FOREIGN TABLE fn_owned (id int OPTIONS (key 'true'), v text)
  SERVER lsm_func_srv;
ALTER FOREIGN TABLE fn_owned OWNER TO regress_lsm_func_owner;
INSERT INTO fn_owned VALUES (1, 'one');

SET ROLE regress_lsm_func_reader;
SELECT count(*) > 0 AS ok FROM lsm_stats('fn');
SELECT height >= 1 AS ok FROM lsm_hierarchy('fn');
SELECT gets >= 0 AS ok FROM lsm_counters('fn');
SELECT lsm_store_path('fn') LIKE '%' || 'fn'::regclass::oid AS ok;
SELECT lsm_store_size('fn') > 0 AS ok;
SELECT lsm_flush('fn');                             -- ERROR
SELECT lsm_compact('fn');                           -- ERROR
SELECT lsm_compact('fn', true);                     -- ERROR
SELECT lsm_verify('fn');                            -- ERROR
SELECT lsm_reset_counters('fn');                    -- ERROR
SELECT * FROM lsm_stats('fn_owned');                -- ERROR

SET ROLE regress_lsm_func_nobody;
SELECT * FROM lsm_stats('fn');                      -- ERROR
SELECT * FROM lsm_hierarchy('fn');                  -- ERROR
SELECT * FROM lsm_counters('fn');                   -- ERROR
SELECT lsm_store_path('fn');                        -- ERROR
SELECT lsm_store_size('fn');                        -- ERROR

-- the owner may maintain its table (and, without a grant, read it)
SET ROLE regress_lsm_func_owner;
SELECT lsm_flush('fn_owned');
SELECT lsm_compact('fn_owned', full => true);
SELECT lsm_verify('fn_owned');
SELECT lsm_reset_counters('fn_owned');
SELECT level, files, entries FROM lsm_stats('fn_owned');
SELECT lsm_flush('fn');                             -- ERROR
RESET ROLE;

-- damage: an SSTable overwritten with as many bytes of garbage, while no
-- backend has the store open (a new session), is reported as data_corrupted
-- with the engine's description of the damage in the detail
CREATE FOREIGN TABLE fn_damaged (id int OPTIONS (key 'true'), v text)
  SERVER lsm_func_srv;
INSERT INTO fn_damaged SELECT g, repeat('v', 50) FROM generate_series(1, 500) g;
SELECT lsm_flush('fn_damaged');
SELECT lsm_verify('fn_damaged');
\c
DO $$
DECLARE
  dir text := lsm_store_path('fn_damaged');
  sst text;
  size bigint;
BEGIN
  SELECT f, (pg_stat_file(dir || '/' || f)).size INTO sst, size
    FROM pg_ls_dir(dir) f WHERE f LIKE '%.sst' ORDER BY f LIMIT 1;
  EXECUTE format('COPY (SELECT repeat(%L, %s)) TO %L',
                 'x', size - 1, dir || '/' || sst);
END $$;
DO $$
DECLARE
  msg text;
  detail text;
BEGIN
  PERFORM lsm_verify('fn_damaged');
  RAISE NOTICE 'damage not found';
EXCEPTION WHEN data_corrupted THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
  RAISE NOTICE 'data_corrupted: %; the detail names the SSTable: %',
    msg, detail LIKE '%.sst%';
END $$;

-- A failed automatic flush (the store directory made read-only, so the
-- flush cannot create its table) fails no statement: the rows are
-- committed, a WARNING names the failure (left out here: it names the
-- store's path), and lsm_counters counts it with its message.  Once the
-- directory is writable again, lsm_flush writes the table.
CREATE FOREIGN TABLE fn_bg (id int, v text)
  SERVER lsm_func_srv OPTIONS (key 'id', memtable_size '64kB');
INSERT INTO fn_bg VALUES (0, 'first');
DO $$ BEGIN
  EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
                 'chmod 555 ' || lsm_store_path('fn_bg'));
END $$;
SET client_min_messages = error;
-- one transaction each, small enough to go through the memtable
SELECT format('INSERT INTO fn_bg SELECT g, repeat(%L, 100) FROM generate_series(%s, %s) g',
              'x', i * 100 + 1, i * 100 + 100)
  FROM generate_series(0, 19) i
\gexec
RESET client_min_messages;
DO $$ BEGIN
  EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
                 'chmod 755 ' || lsm_store_path('fn_bg'));
END $$;
SELECT background_errors > 0 AS failure_counted,
       last_background_error LIKE 'automatic flush: %Permission denied%'
         AS message_kept,
       flushes
  FROM lsm_counters('fn_bg');
SELECT count(*) FROM fn_bg;
SELECT lsm_flush('fn_bg');
SELECT flushes > 0 AS flushed FROM lsm_counters('fn_bg');
SELECT count(*), sum(id) FROM fn_bg;
SELECT lsm_reset_counters('fn_bg');
SELECT background_errors, last_background_error FROM lsm_counters('fn_bg');
DROP FOREIGN TABLE fn_bg;

DROP TABLE fn_heap;
DROP VIEW fn_view;
DROP FOREIGN DATA WRAPPER fn_other_fdw CASCADE;
DROP SERVER lsm_func_srv CASCADE;
DROP ROLE regress_lsm_func_reader;
DROP ROLE regress_lsm_func_nobody;
DROP ROLE regress_lsm_func_owner;

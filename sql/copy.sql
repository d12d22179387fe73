--
-- COPY FROM into a foreign table is a bulk load (and so is the rest of an
-- INSERT past lsm_fdw.bulk_insert_rows rows): its rows go straight to
-- the table's stage as they come (sorted runs on disk past a quarter of
-- lsm_fdw.pending_memory), and at commit an ascending load lands in the
-- deepest level without a rewrite.  Within the transaction every read sees
-- the rows and later statements can change them; a duplicate key fails the
-- COPY; a rollback, of the transaction or of a savepoint, forgets them.
-- Compared with a native table throughout.
--
-- compaction in this session, as the commits call for it: the level layouts
-- and lsm_verify's notices must not depend on when a background worker runs
SET lsm_fdw.compaction = inline;
CREATE SERVER lsm_copy_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE cp (id int8 OPTIONS (key 'true'), grp int, pad text)
  SERVER lsm_copy_srv;
CREATE TABLE cp_native (id int8 PRIMARY KEY, grp int, pad text);

CREATE FUNCTION same(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT md5(string_agg(r::text, '','' ORDER BY r::text)) FROM (%s) r', q) INTO a;
  EXECUTE format('SELECT md5(string_agg(r::text, '','' ORDER BY r::text)) FROM (%s) r',
                 replace(q, ' cp ', ' cp_native ')) INTO b;
  IF a IS DISTINCT FROM b THEN RAISE NOTICE 'differs: %', q; END IF;
  RETURN a IS NOT DISTINCT FROM b;
END $$;
-- loads both tables with rows from..to of a generator: id, id % 100, pad;
-- step -1 loads them in descending order, shuffle in a scattered one
CREATE FUNCTION load(first int, last int, how text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  prog text := format(
    'awk ''BEGIN { n = %s - %s + 1; for (i = 0; i < n; i++) {'
    ' j = "%s" == "down" ? n - 1 - i : "%s" == "shuffle" ? (i * 7919) %% n : i;'
    ' print %s + j "\t" (%s + j) %% 100 "\t" "pad" (%s + j) } }''',
    last, first, how, how, first, first, first);
BEGIN
  EXECUTE format('COPY cp FROM PROGRAM %L', prog);
  EXECUTE format('COPY cp_native FROM PROGRAM %L', prog);
END $$;

-- a small COPY: one batch at commit
BEGIN;
SELECT load(1, 100, 'up');
SELECT same('SELECT * FROM cp ');
COMMIT;
SELECT same('SELECT * FROM cp ');

-- a large one in random order (several runs that overlap); reads, writes
-- and a rolled-back savepoint inside the transaction
SET lsm_fdw.pending_memory = '1MB';
BEGIN;
SELECT load(1001, 31000, 'shuffle');
SELECT same('SELECT * FROM cp ');
SELECT same('SELECT * FROM cp WHERE id = 12345');
SELECT same('SELECT * FROM cp WHERE id IN (50, 1001, 30999, 40000)');
SELECT same('SELECT * FROM cp WHERE id BETWEEN 5000 AND 5100');
SELECT same('SELECT id FROM cp ORDER BY id LIMIT 5');
UPDATE cp SET pad = 'updated' WHERE id % 1000 = 0;
UPDATE cp_native SET pad = 'updated' WHERE id % 1000 = 0;
DELETE FROM cp WHERE id % 1000 = 1;
DELETE FROM cp_native WHERE id % 1000 = 1;
UPDATE cp SET id = id + 100000 WHERE id % 1000 = 2;
UPDATE cp_native SET id = id + 100000 WHERE id % 1000 = 2;
SAVEPOINT s;
SELECT load(40001, 41000, 'up');
DELETE FROM cp WHERE id < 2000;
ROLLBACK TO s;
SELECT same('SELECT * FROM cp ');
-- a copied key is a duplicate
INSERT INTO cp VALUES (5000, 0, 'again');                      -- ERROR
ROLLBACK;
SELECT same('SELECT * FROM cp ');
SELECT count(*) FROM cp;

BEGIN;
SELECT load(1001, 31000, 'shuffle');
SELECT load(31001, 33000, 'down');
UPDATE cp SET pad = 'updated' WHERE id % 1000 = 0;
UPDATE cp_native SET pad = 'updated' WHERE id % 1000 = 0;
COMMIT;
SELECT same('SELECT * FROM cp ');
SELECT same('SELECT id FROM cp WHERE pad = ''updated''');
SELECT lsm_verify('cp');

-- duplicates: within one COPY, and against committed rows
BEGIN;
COPY cp FROM stdin;                                            -- ERROR
50000	1	first
50000	2	second
\.
ROLLBACK;
COPY cp FROM stdin;                                            -- ERROR
50001	1	new
50	1	committed before
\.
SELECT count(*) FROM cp WHERE id IN (50000, 50001);

-- an INSERT of more rows than lsm_fdw.bulk_insert_rows loads the rest as
-- COPY does: reads, writes, savepoints, duplicates and RETURNING as for a
-- native table
SET lsm_fdw.bulk_insert_rows = 100;
BEGIN;
INSERT INTO cp SELECT g, g % 100, 'ins' || g
  FROM generate_series(60001, 65000) g ORDER BY (g * 7919) % 5000;
INSERT INTO cp_native SELECT g, g % 100, 'ins' || g
  FROM generate_series(60001, 65000) g ORDER BY (g * 7919) % 5000;
SELECT same('SELECT * FROM cp ');
SELECT same('SELECT * FROM cp WHERE id BETWEEN 60990 AND 61010');
UPDATE cp SET pad = 'updated' WHERE id % 500 = 7;
UPDATE cp_native SET pad = 'updated' WHERE id % 500 = 7;
DELETE FROM cp WHERE id % 500 = 8;
DELETE FROM cp_native WHERE id % 500 = 8;
SAVEPOINT s;
INSERT INTO cp SELECT g, 0, 'rolled back' FROM generate_series(70001, 72000) g;
ROLLBACK TO s;
WITH r AS (INSERT INTO cp SELECT g, 1, 'returned' FROM generate_series(72001, 72300) g
           RETURNING id)
SELECT count(*), min(id), max(id) FROM r;
INSERT INTO cp_native SELECT g, 1, 'returned' FROM generate_series(72001, 72300) g;
SELECT same('SELECT * FROM cp ');
COMMIT;
SELECT same('SELECT * FROM cp ');
-- a duplicate past the first rows, within the statement and against
-- committed rows: nothing of the statement stays
INSERT INTO cp SELECT 80000 + g % 300, 0, 'dup' FROM generate_series(1, 400) g;  -- ERROR
INSERT INTO cp SELECT g, 0, 'dup' FROM generate_series(90001, 90300) g
  UNION ALL SELECT 64500, 0, 'dup';                             -- ERROR
-- ON CONFLICT DO NOTHING keeps every row in memory, and skips the taken keys
INSERT INTO cp SELECT g, 2, 'new' FROM generate_series(64900, 65200) g
  ON CONFLICT DO NOTHING;
INSERT INTO cp_native SELECT g, 2, 'new' FROM generate_series(64900, 65200) g
  ON CONFLICT DO NOTHING;
SELECT same('SELECT * FROM cp ');
SELECT lsm_verify('cp');
RESET lsm_fdw.bulk_insert_rows;

-- an ascending load into an empty table lands in the deepest level, with
-- no compaction (TRUNCATE would leave the old rows' deletes in the store)
DROP FOREIGN TABLE cp;
CREATE FOREIGN TABLE cp (id int8 OPTIONS (key 'true'), grp int, pad text)
  SERVER lsm_copy_srv;
TRUNCATE cp_native;
SELECT load(1, 40000, 'up');
SELECT level, files > 0 AS has_files FROM lsm_stats('cp') WHERE files > 0;
SELECT compactions FROM lsm_counters('cp');
SELECT same('SELECT * FROM cp ');
SELECT same('SELECT id FROM cp WHERE grp = 42');
SELECT lsm_verify('cp');

RESET lsm_fdw.pending_memory;

-- so does an INSERT of many rows: past bulk_insert_rows it is staged, and
-- its stage, over a quarter of memtable_size, commits as tables (with
-- bulk_insert_rows = 0 it would pass through the memtable to level 0)
CREATE FOREIGN TABLE cp_ins (id int8 OPTIONS (key 'true'), grp int, pad text)
  SERVER lsm_copy_srv OPTIONS (memtable_size '256kB');
INSERT INTO cp_ins SELECT g, g % 100, 'pad' || g FROM generate_series(1, 40000) g;
SELECT level, files > 0 AS has_files FROM lsm_stats('cp_ins') WHERE files > 0;
SELECT flushes, compactions FROM lsm_counters('cp_ins');
SELECT count(*), sum(id) FROM cp_ins;
DROP FOREIGN TABLE cp_ins;
DROP FUNCTION same(text);
DROP FUNCTION load(int, int, text);
DROP TABLE cp_native;
DROP SERVER lsm_copy_srv CASCADE;

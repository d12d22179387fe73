--
-- TRUNCATE of a foreign table.  At the top level of a transaction it takes
-- constant time and memory: the table's stage is truncated, reads see no
-- committed row, and the commit replaces the store's contents with what
-- the transaction wrote afterwards.  In a savepoint it deletes every row
-- instead, so that ROLLBACK TO can bring them back.  Compared with a native
-- table throughout.
--
-- compaction in this session, as the commits call for it: the level layouts
-- and lsm_verify's notices must not depend on when a background worker runs
SET lsm_fdw.compaction = inline;
CREATE SERVER lsm_trunc_srv FOREIGN DATA WRAPPER lsm_fdw;
-- a small memtable: the rows are in tables and in the memtable
CREATE FOREIGN TABLE tr (id int8 OPTIONS (key 'true'), grp int, pad text)
  SERVER lsm_trunc_srv OPTIONS (memtable_size '16kB', file_size '4kB');
CREATE TABLE tr_native (id int8 PRIMARY KEY, grp int, pad text);

CREATE FUNCTION same(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE a text; b text;
BEGIN
  EXECUTE format('SELECT md5(string_agg(r::text, '','' ORDER BY r::text)) FROM (%s) r', q) INTO a;
  EXECUTE format('SELECT md5(string_agg(r::text, '','' ORDER BY r::text)) FROM (%s) r',
                 replace(q, ' tr ', ' tr_native ')) INTO b;
  IF a IS DISTINCT FROM b THEN RAISE NOTICE 'differs: %', q; END IF;
  RETURN a IS NOT DISTINCT FROM b;
END $$;
-- every access path at once
CREATE FUNCTION all_same() RETURNS bool LANGUAGE sql AS $$
  SELECT same('SELECT * FROM tr ')
     AND same('SELECT * FROM tr WHERE id = 42')
     AND same('SELECT * FROM tr WHERE id IN (1, 500, 5000)')
     AND same('SELECT * FROM tr WHERE id BETWEEN 100 AND 120')
     AND same('SELECT id FROM tr WHERE grp = 7')
     AND same('SELECT id FROM tr ORDER BY id LIMIT 3')
$$;
CREATE FUNCTION fill(first int, last int, tag text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tr SELECT g, g % 10, tag || g FROM generate_series(first, last) g;
  INSERT INTO tr_native SELECT g, g % 10, tag || g FROM generate_series(first, last) g;
$$;

DO $$ BEGIN FOR g IN 0..9 LOOP PERFORM fill(g * 300 + 1, g * 300 + 300, 'old'); END LOOP; END $$;
SELECT fill(3001, 3100, 'recent');
SELECT sum(files) > 0 AS has_tables FROM lsm_stats('tr') WHERE level >= 0;

-- rolled back: the rows come back
BEGIN;
TRUNCATE tr;
TRUNCATE tr_native;
SELECT count(*) FROM tr;
SELECT fill(100, 200, 'new');
SELECT all_same();
ROLLBACK;
SELECT count(*) FROM tr;
SELECT all_same();

-- committed: only what the transaction wrote after the TRUNCATE
BEGIN;
SELECT fill(5000, 5005, 'before');
TRUNCATE tr, tr_native;
SELECT fill(1, 1000, 'new');                 -- keys the old rows had
UPDATE tr SET pad = 'updated' WHERE id % 100 = 0;
UPDATE tr_native SET pad = 'updated' WHERE id % 100 = 0;
DELETE FROM tr WHERE id % 100 = 1;
DELETE FROM tr_native WHERE id % 100 = 1;
UPDATE tr SET id = id + 10000 WHERE id % 100 = 2;
UPDATE tr_native SET id = id + 10000 WHERE id % 100 = 2;
SAVEPOINT s;
SELECT fill(2000, 2100, 'undone');
DELETE FROM tr WHERE id < 50;
DELETE FROM tr_native WHERE id < 50;
ROLLBACK TO s;
SELECT all_same();
INSERT INTO tr VALUES (5, 0, 'duplicate');                  -- ERROR
ROLLBACK;
SELECT all_same();

BEGIN;
TRUNCATE tr, tr_native;
SELECT fill(1, 1000, 'new');
UPDATE tr SET pad = 'updated' WHERE id % 100 = 0;
UPDATE tr_native SET pad = 'updated' WHERE id % 100 = 0;
DELETE FROM tr WHERE id % 100 = 1;
DELETE FROM tr_native WHERE id % 100 = 1;
COMMIT;
SELECT all_same();
SELECT count(*) FROM tr;
-- the old rows and their tables are gone: 990 rows and the 10 deletes
SELECT sum(entries) FROM lsm_stats('tr');
SELECT lsm_verify('tr');

-- TRUNCATE alone empties the store
TRUNCATE tr;
TRUNCATE tr_native;
SELECT count(*) FROM tr;
SELECT sum(entries) FROM lsm_stats('tr');
SELECT fill(1, 10, 'again');
SELECT all_same();

-- in a savepoint: every row deleted, and ROLLBACK TO brings them back
BEGIN;
SAVEPOINT s;
TRUNCATE tr;
TRUNCATE tr_native;
SELECT count(*) FROM tr;
ROLLBACK TO s;
SELECT all_same();
SAVEPOINT t;
TRUNCATE tr;
TRUNCATE tr_native;
RELEASE t;
SELECT fill(20, 30, 'after');
COMMIT;
SELECT all_same();
SELECT lsm_verify('tr');

DROP FUNCTION all_same();
DROP FUNCTION same(text);
DROP FUNCTION fill(int, int, text);
DROP TABLE tr_native;
DROP SERVER lsm_trunc_srv CASCADE;

--
-- A transaction's pending writes beyond lsm_fdw.pending_memory: the rows it
-- inserted move to the table's stage on disk, and every read of the
-- transaction still sees them; the commit installs them atomically, a
-- rollback forgets them.  Compared with a native table throughout.
--
-- compaction in this session, as the commits call for it: the level layouts
-- and lsm_verify's notices must not depend on when a background worker runs
SET lsm_fdw.compaction = inline;
CREATE SERVER lsm_spill_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE big (id int8 OPTIONS (key 'true'), grp int, pad text)
  SERVER lsm_spill_srv;
CREATE TABLE big_native (id int8 PRIMARY KEY, grp int, pad text);

-- compares a query on big with the same query on big_native (the rows
-- sorted, or in the query's own order if ordered is true)
CREATE FUNCTION same(q text, ordered bool DEFAULT false) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE a text; b text;
  agg text := CASE WHEN ordered THEN 'string_agg(r::text, '','')'
                   ELSE 'string_agg(r::text, '','' ORDER BY r::text)' END;
BEGIN
  EXECUTE format('SELECT md5(%s) FROM (%s) r', agg, q) INTO a;
  EXECUTE format('SELECT md5(%s) FROM (%s) r', agg,
                 replace(q, ' big ', ' big_native ')) INTO b;
  IF a IS DISTINCT FROM b THEN RAISE NOTICE 'differs: %', q; END IF;
  RETURN a IS NOT DISTINCT FROM b;
END $$;
-- whether the transaction's stage exists in the store's directory
CREATE FUNCTION staged() RETURNS bool LANGUAGE sql AS $$
  SELECT count(*) > 0 FROM pg_ls_dir(lsm_store_path('big')) f
  WHERE f LIKE 'stage.%'
$$;

INSERT INTO big VALUES (0, 0, 'committed before');
INSERT INTO big_native VALUES (0, 0, 'committed before');
SET lsm_fdw.pending_memory = '1MB';

-- a rolled-back load leaves nothing
BEGIN;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
SELECT staged() AS staged;
SELECT count(*) FROM big;
ROLLBACK;
SELECT count(*) FROM big;
SELECT staged() AS staged;

-- a load that ends wholly staged (nothing left in memory) commits whole
BEGIN;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
COMMIT;
SELECT count(*), sum(id) FROM big;
TRUNCATE big;
INSERT INTO big VALUES (0, 0, 'committed before');
-- PREPARE TRANSACTION prepares the stage's tables: invisible, their keys
-- held against other commits, and gone after ROLLBACK PREPARED
BEGIN;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
PREPARE TRANSACTION 'staged';
SELECT count(*) FROM big;
SELECT staged() AS staged;
\set VERBOSITY terse
INSERT INTO big VALUES (12345, 0, 'mine');                     -- ERROR
\set VERBOSITY default
INSERT INTO big VALUES (40000, 0, 'not theirs');
ROLLBACK PREPARED 'staged';
SELECT count(*) FROM big;
DELETE FROM big WHERE id = 40000;
-- COMMIT PREPARED installs them whole, with the rows kept in memory
BEGIN;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
UPDATE big SET pad = 'changed' WHERE id = 0;
PREPARE TRANSACTION 'staged';
SELECT count(*) FROM big;
COMMIT PREPARED 'staged';
SELECT count(*), sum(id) FROM big;
SELECT * FROM big WHERE id = 0;
-- a prepared TRUNCATE replaces the table at COMMIT PREPARED
BEGIN;
TRUNCATE big;
INSERT INTO big VALUES (1, 1, 'only');
PREPARE TRANSACTION 'staged';
COMMIT PREPARED 'staged';
SELECT * FROM big;
TRUNCATE big;
INSERT INTO big VALUES (0, 0, 'committed before');

-- a committed one: reads inside the transaction see every row
BEGIN;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
INSERT INTO big_native SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
SELECT staged() AS staged;
SELECT same('SELECT * FROM big ');
SELECT same('SELECT * FROM big WHERE id = 12345');
SELECT same('SELECT * FROM big WHERE id IN (1, 29999, 40000)');
SELECT same('SELECT * FROM big WHERE id BETWEEN 100 AND 200');
SELECT same('SELECT id FROM big WHERE grp = 42');
SELECT same('SELECT id FROM big ORDER BY id LIMIT 5');
-- a staged key is a duplicate
INSERT INTO big VALUES (7, 0, 'again');                        -- ERROR
ROLLBACK;
SELECT count(*) FROM big;

BEGIN;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
INSERT INTO big_native SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
-- updates and deletes of staged rows, then more inserts
UPDATE big SET pad = 'updated' WHERE id % 1000 = 0;
UPDATE big_native SET pad = 'updated' WHERE id % 1000 = 0;
DELETE FROM big WHERE id % 1000 = 1;
DELETE FROM big_native WHERE id % 1000 = 1;
UPDATE big SET id = id + 100000 WHERE id % 1000 = 2;
UPDATE big_native SET id = id + 100000 WHERE id % 1000 = 2;
INSERT INTO big SELECT g, 7, 'late' FROM generate_series(30001, 40000) g;
INSERT INTO big_native SELECT g, 7, 'late' FROM generate_series(30001, 40000) g;
SELECT same('SELECT * FROM big ');
SELECT same('SELECT id FROM big WHERE pad = ''updated''');
SELECT same('SELECT * FROM big WHERE id IN (1000, 1001, 1002, 101002)');
-- in descending key order too: the stage's iterator runs backwards
SELECT same('SELECT id, pad FROM big ORDER BY id DESC', true);
SELECT same('SELECT id, pad FROM big WHERE id < 1500 ORDER BY id DESC LIMIT 600', true);
SELECT same('SELECT id FROM big WHERE id BETWEEN 900 AND 30500 ORDER BY id DESC', true);
-- a savepoint rolled back undoes its part only
SAVEPOINT s;
DELETE FROM big WHERE id < 100;
UPDATE big SET grp = -1 WHERE id BETWEEN 100 AND 200;
ROLLBACK TO s;
SELECT same('SELECT * FROM big WHERE id < 300');
COMMIT;
SELECT staged() AS staged;
SELECT same('SELECT * FROM big ');
SELECT same('SELECT id FROM big WHERE grp = 7');
SELECT lsm_verify('big');

-- TRUNCATE of staged rows
BEGIN;
INSERT INTO big SELECT g, 1, repeat('q', 50) FROM generate_series(200000, 230000) g;
TRUNCATE big;
SELECT count(*) FROM big;
INSERT INTO big VALUES (1, 1, 'alone');
COMMIT;
SELECT * FROM big;

-- UPDATE and DELETE beyond lsm_fdw.pending_memory: the changed rows move to
-- disk while the statement runs, and memory stays bounded
TRUNCATE big;
TRUNCATE big_native;
INSERT INTO big SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
INSERT INTO big_native SELECT g, g % 100, repeat('p', 50) FROM generate_series(1, 30000) g;
-- the memory of the transaction's lsm_fdw state, in MB
CREATE FUNCTION pending_mb() RETURNS int LANGUAGE sql AS $$
  SELECT (sum(total_bytes) / (1024 * 1024))::int
  FROM pg_backend_memory_contexts WHERE name = 'lsm_fdw transaction'
$$;
BEGIN;
UPDATE big SET pad = repeat('u', 200) || id WHERE id % 2 = 0;
UPDATE big_native SET pad = repeat('u', 200) || id WHERE id % 2 = 0;
SELECT pending_mb() < 4 AS bounded, staged() AS staged;
-- the next statements see the changes, in every access path
SELECT same('SELECT * FROM big ');
SELECT same('SELECT * FROM big WHERE id IN (2, 3, 29998)');
SELECT same('SELECT * FROM big WHERE id BETWEEN 100 AND 300');
SELECT same('SELECT id, pad FROM big ORDER BY id DESC LIMIT 50', true);
SELECT same('SELECT id FROM big WHERE grp = 42');
-- a second large UPDATE of the same rows, a DELETE, key changes, inserts
UPDATE big SET grp = grp + 1;
UPDATE big_native SET grp = grp + 1;
SELECT pending_mb() < 4 AS bounded;
DELETE FROM big WHERE id % 3 = 0;
DELETE FROM big_native WHERE id % 3 = 0;
UPDATE big SET id = id + 100000 WHERE id BETWEEN 10 AND 20;
UPDATE big_native SET id = id + 100000 WHERE id BETWEEN 10 AND 20;
INSERT INTO big VALUES (3, 0, 'deleted, then inserted again');
INSERT INTO big_native VALUES (3, 0, 'deleted, then inserted again');
INSERT INTO big VALUES (4, 0, 'a duplicate');                  -- ERROR
ROLLBACK;
SELECT same('SELECT * FROM big ');
BEGIN;
UPDATE big SET pad = repeat('u', 200) || id WHERE id % 2 = 0;
UPDATE big_native SET pad = repeat('u', 200) || id WHERE id % 2 = 0;
UPDATE big SET grp = grp + 1;
UPDATE big_native SET grp = grp + 1;
DELETE FROM big WHERE id % 3 = 0;
DELETE FROM big_native WHERE id % 3 = 0;
UPDATE big SET id = id + 100000 WHERE id BETWEEN 10 AND 20;
UPDATE big_native SET id = id + 100000 WHERE id BETWEEN 10 AND 20;
INSERT INTO big VALUES (3, 0, 'deleted, then inserted again');
INSERT INTO big_native VALUES (3, 0, 'deleted, then inserted again');
-- a savepoint after the moves undoes its own part only
SAVEPOINT s;
UPDATE big SET pad = 'in the savepoint' WHERE id < 1000;
DELETE FROM big WHERE id BETWEEN 1000 AND 2000;
ROLLBACK TO s;
COMMIT;
SELECT same('SELECT * FROM big ');
SELECT same('SELECT id FROM big WHERE grp = 42');
SELECT lsm_verify('big');
-- a cursor opened before the UPDATE keeps its snapshot; the UPDATE then
-- stays in memory (a scan of an earlier command is open)
BEGIN;
DECLARE c CURSOR FOR SELECT id, grp FROM big ORDER BY id;
FETCH 2 FROM c;
UPDATE big SET grp = grp + 1000;
UPDATE big_native SET grp = grp + 1000;
FETCH 2 FROM c;
CLOSE c;
SELECT same('SELECT * FROM big ');
COMMIT;
-- a function that reads the table while the UPDATE that moved rows to
-- disk still runs is refused with a clear error
CREATE FUNCTION big_first() RETURNS bigint LANGUAGE sql VOLATILE AS
  $$ SELECT id FROM big ORDER BY id LIMIT 1 $$;
BEGIN;
UPDATE big SET grp = grp + 1 WHERE big_first() > 0;            -- ERROR
ROLLBACK;
DROP FUNCTION big_first();
DROP FUNCTION pending_mb();

RESET lsm_fdw.pending_memory;
DROP FUNCTION same(text, bool);
DROP FUNCTION staged();
DROP TABLE big_native;
DROP SERVER lsm_spill_srv CASCADE;

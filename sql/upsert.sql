--
-- INSERT ... ON CONFLICT (key) DO UPDATE and DO NOTHING with a conflict
-- target.  Every statement runs on the foreign table "up" and on a heap
-- table with a primary key, "up_heap": the two print the same rows, and
-- up_same() checks that the tables hold the same rows after each step.
-- Conflicts between sessions are in conflict.sql.
--
CREATE SERVER lsm_upsert_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE up (id int OPTIONS (key 'true'), name text, hits int,
                         note text)
  SERVER lsm_upsert_srv;
CREATE TABLE up_heap (id int PRIMARY KEY, name text, hits int, note text);
CREATE FUNCTION up_same() RETURNS boolean LANGUAGE sql AS $$
  SELECT NOT EXISTS (SELECT * FROM up EXCEPT ALL SELECT * FROM up_heap)
     AND NOT EXISTS (SELECT * FROM up_heap EXCEPT ALL SELECT * FROM up)
$$;
\set VERBOSITY default

-- new keys are inserted, existing ones updated from EXCLUDED and the row
INSERT INTO up VALUES (1, 'a', 1), (2, 'b', 1)
  ON CONFLICT (id) DO UPDATE SET hits = up.hits + excluded.hits RETURNING *;
INSERT INTO up_heap VALUES (1, 'a', 1), (2, 'b', 1)
  ON CONFLICT (id) DO UPDATE SET hits = up_heap.hits + excluded.hits RETURNING *;
INSERT INTO up VALUES (2, 'B', 5), (3, 'c', 1)
  ON CONFLICT (id) DO UPDATE SET hits = up.hits + excluded.hits,
                                 name = excluded.name RETURNING *;
INSERT INTO up_heap VALUES (2, 'B', 5), (3, 'c', 1)
  ON CONFLICT (id) DO UPDATE SET hits = up_heap.hits + excluded.hits,
                                 name = excluded.name RETURNING *;
SELECT up_same();

-- the WHERE of the action: rows it rejects are neither inserted nor
-- updated, nor returned, nor counted
INSERT INTO up VALUES (1, 'x', 100), (2, 'y', 100), (4, 'd', 1)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name
  WHERE up.hits > 1 RETURNING *;
INSERT INTO up_heap VALUES (1, 'x', 100), (2, 'y', 100), (4, 'd', 1)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name
  WHERE up_heap.hits > 1 RETURNING *;
SELECT up_same();
-- EXPLAIN ANALYZE counts the conflicts and the rows the WHERE filters
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
INSERT INTO up VALUES (1, 'x', 1), (2, 'y', 1)
  ON CONFLICT (id) DO UPDATE SET hits = 0 WHERE up.hits > 100;
BEGIN;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
INSERT INTO up VALUES (1, 'x', 1), (2, 'y', 1), (100, 'z', 1)
  ON CONFLICT (id) DO UPDATE SET hits = 0 WHERE up.hits < 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
INSERT INTO up VALUES (1, 'x', 1), (101, 'z', 1) ON CONFLICT (id) DO NOTHING;
ROLLBACK;
EXPLAIN (COSTS OFF)
INSERT INTO up VALUES (1, 'x', 1)
  ON CONFLICT (id) DO UPDATE SET hits = 0 WHERE up.hits > 100;

-- a row proposed twice by one command is an error, and nothing is written
INSERT INTO up VALUES (5, 'e', 1), (5, 'e', 2)
  ON CONFLICT (id) DO UPDATE SET hits = excluded.hits;              -- ERROR
INSERT INTO up_heap VALUES (5, 'e', 1), (5, 'e', 2)
  ON CONFLICT (id) DO UPDATE SET hits = excluded.hits;              -- ERROR
INSERT INTO up VALUES (1, 'a', 1), (1, 'a', 2)
  ON CONFLICT (id) DO UPDATE SET hits = excluded.hits;              -- ERROR
SELECT up_same();
-- ... but a row the transaction wrote in an earlier command is updated
BEGIN;
UPDATE up SET hits = 10 WHERE id = 3;
UPDATE up_heap SET hits = 10 WHERE id = 3;
INSERT INTO up VALUES (3, 'c', 1), (6, 'f', 1)
  ON CONFLICT (id) DO UPDATE SET hits = up.hits + 1 RETURNING *;
INSERT INTO up_heap VALUES (3, 'c', 1), (6, 'f', 1)
  ON CONFLICT (id) DO UPDATE SET hits = up_heap.hits + 1 RETURNING *;
INSERT INTO up VALUES (6, 'f', 1)
  ON CONFLICT (id) DO UPDATE SET note = 'again' RETURNING *;
INSERT INTO up_heap VALUES (6, 'f', 1)
  ON CONFLICT (id) DO UPDATE SET note = 'again' RETURNING *;
COMMIT;
SELECT up_same();

-- rollback, savepoints
BEGIN;
INSERT INTO up VALUES (1, 'gone', 0), (7, 'gone', 0)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name;
ROLLBACK;
BEGIN;
INSERT INTO up VALUES (1, 'kept', 0)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name;
INSERT INTO up_heap VALUES (1, 'kept', 0)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name;
SAVEPOINT s;
INSERT INTO up VALUES (1, 'undone', 0), (8, 'undone', 0)
  ON CONFLICT (id) DO UPDATE SET name = excluded.name;
ROLLBACK TO s;
COMMIT;
SELECT up_same();

-- SET may move the row to a free key; a taken one is a unique violation
INSERT INTO up VALUES (4, 'd', 0)
  ON CONFLICT (id) DO UPDATE SET id = up.id + 100 RETURNING *;
INSERT INTO up_heap VALUES (4, 'd', 0)
  ON CONFLICT (id) DO UPDATE SET id = up_heap.id + 100 RETURNING *;
INSERT INTO up VALUES (104, 'd', 0)
  ON CONFLICT (id) DO UPDATE SET id = 1;                            -- ERROR
SELECT up_same();

-- sub-selects, functions and the old row's columns in SET and WHERE;
-- a data-modifying WITH; multi-row sources
INSERT INTO up VALUES (2, 'b', 0)
  ON CONFLICT (id) DO UPDATE
  SET note = (SELECT string_agg(name, ',' ORDER BY id) FROM up_heap WHERE id < 3)
  WHERE EXISTS (SELECT 1 FROM up_heap h WHERE h.id = excluded.id)
  RETURNING id, note;
INSERT INTO up_heap VALUES (2, 'b', 0)
  ON CONFLICT (id) DO UPDATE
  SET note = (SELECT string_agg(name, ',' ORDER BY id) FROM up_heap WHERE id < 3)
  WHERE EXISTS (SELECT 1 FROM up_heap h WHERE h.id = excluded.id)
  RETURNING id, note;
WITH w AS (INSERT INTO up VALUES (3, 'c', 1), (9, 'i', 1)
           ON CONFLICT (id) DO UPDATE SET hits = up.hits * 2 RETURNING *)
SELECT * FROM w ORDER BY id;
WITH w AS (INSERT INTO up_heap VALUES (3, 'c', 1), (9, 'i', 1)
           ON CONFLICT (id) DO UPDATE SET hits = up_heap.hits * 2 RETURNING *)
SELECT * FROM w ORDER BY id;
INSERT INTO up SELECT g, 'g' || g, 1 FROM generate_series(1, 3000) g
  ON CONFLICT (id) DO UPDATE SET hits = up.hits + 1;
INSERT INTO up_heap SELECT g, 'g' || g, 1 FROM generate_series(1, 3000) g
  ON CONFLICT (id) DO UPDATE SET hits = up_heap.hits + 1;
SELECT up_same(), count(*), sum(hits) FROM up;

-- prepared, with generic plans
SET plan_cache_mode = force_generic_plan;
PREPARE bump(int, int) AS INSERT INTO up VALUES ($1, 'p', $2)
  ON CONFLICT (id) DO UPDATE SET hits = up.hits + $2 RETURNING id, hits;
PREPARE bump_heap(int, int) AS INSERT INTO up_heap VALUES ($1, 'p', $2)
  ON CONFLICT (id) DO UPDATE SET hits = up_heap.hits + $2 RETURNING id, hits;
EXECUTE bump(5000, 1);
EXECUTE bump(5000, 2);
EXECUTE bump(1, 3);
EXECUTE bump_heap(5000, 1);
EXECUTE bump_heap(5000, 2);
EXECUTE bump_heap(1, 3);
RESET plan_cache_mode;
SELECT up_same();

-- ON CONFLICT (key) DO NOTHING
INSERT INTO up VALUES (1, 'no', 0), (5001, 'yes', 0)
  ON CONFLICT (id) DO NOTHING RETURNING *;
INSERT INTO up_heap VALUES (1, 'no', 0), (5001, 'yes', 0)
  ON CONFLICT (id) DO NOTHING RETURNING *;
SELECT up_same();

-- conflict targets that are not the key, as for a heap without such an
-- index; RETURNING ctid
INSERT INTO up VALUES (1) ON CONFLICT (name) DO NOTHING;            -- ERROR
INSERT INTO up VALUES (1) ON CONFLICT (id, name) DO NOTHING;        -- ERROR
INSERT INTO up VALUES (1) ON CONFLICT ((id + 0)) DO NOTHING;        -- ERROR
INSERT INTO up VALUES (1) ON CONFLICT (id) WHERE id > 0 DO NOTHING; -- ERROR
INSERT INTO up VALUES (1) ON CONFLICT (id int4_ops, id) DO UPDATE SET hits = 1
  RETURNING ctid, id, hits;
CREATE FOREIGN TABLE up_text (k text OPTIONS (key 'true') COLLATE "C", v int)
  SERVER lsm_upsert_srv;
INSERT INTO up_text VALUES ('a', 1) ON CONFLICT (k COLLATE "C") DO UPDATE SET v = 2;
INSERT INTO up_text VALUES ('a', 1) ON CONFLICT (k) DO UPDATE SET v = up_text.v + 1
  RETURNING *;
INSERT INTO up_text VALUES ('a', 1)
  ON CONFLICT (k COLLATE "POSIX") DO UPDATE SET v = 0;              -- ERROR
INSERT INTO up_text VALUES ('a', 1)
  ON CONFLICT (k text_pattern_ops) DO UPDATE SET v = 0;             -- ERROR

DROP FOREIGN TABLE up, up_text;
DROP TABLE up_heap;
DROP FUNCTION up_same();
DROP SERVER lsm_upsert_srv;

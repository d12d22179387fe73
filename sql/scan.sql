--
-- Reads: full scans, key lookups (constants, parameters, join columns),
-- rescans; EXPLAIN names the access path.  Every query is also run against
-- a native table with the same rows, and the answers must be equal.
--
CREATE SERVER lsm_scan_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE items (id int OPTIONS (key 'true'), name text, qty int)
  SERVER lsm_scan_srv;
CREATE TABLE items_native (id int PRIMARY KEY, name text, qty int);
INSERT INTO items_native
  SELECT g, 'item ' || g, CASE WHEN g % 10 = 0 THEN NULL ELSE g % 7 END
  FROM generate_series(1, 1000) g;
INSERT INTO items SELECT * FROM items_native;

-- full scan: key order, every row
SELECT * FROM items LIMIT 5;
SELECT count(*), sum(id), count(qty), sum(qty) FROM items;
SELECT (SELECT array_agg(i::text ORDER BY id) FROM items i) =
       (SELECT array_agg(n::text ORDER BY id) FROM items_native n) AS same_rows;
EXPLAIN (COSTS OFF) SELECT * FROM items;
-- quals the store cannot serve are evaluated by the executor
EXPLAIN (COSTS OFF) SELECT * FROM items WHERE qty = 3 AND id < 30;
SELECT * FROM items WHERE qty = 3 AND id < 30 ORDER BY id;
SELECT * FROM items WHERE qty IS NULL AND id > 960 ORDER BY id;
SELECT * FROM items WHERE id IN (5, 500, 5000) ORDER BY id;
SELECT * FROM items WHERE id = qty ORDER BY id;
SELECT * FROM items WHERE id + 0 = 17;

-- key lookup: the qual stays as a filter, so the answer is the qual's
EXPLAIN (COSTS OFF) SELECT * FROM items WHERE id = 42;
SELECT * FROM items WHERE id = 42;
SELECT * FROM items WHERE 42 = id;
SELECT * FROM items WHERE id = 42 AND qty = 1;      -- the other qual fails
SELECT * FROM items WHERE id = 42 AND qty = 42 % 7;
SELECT * FROM items WHERE id = 0;                   -- absent
SELECT * FROM items WHERE id = NULL::int;
SELECT * FROM items WHERE id = 42::int8;            -- cross-type integer
SELECT * FROM items WHERE id = 4200000000;          -- beyond int4: none
SELECT name FROM items WHERE id = (SELECT max(id) FROM items_native);
EXPLAIN (COSTS OFF)
  SELECT name FROM items WHERE id = (SELECT max(id) FROM items_native);
-- a stable expression is evaluated once, at execution
EXPLAIN (COSTS OFF)
  SELECT * FROM items WHERE id = length(current_setting('search_path'));
-- a volatile one cannot be looked up
EXPLAIN (COSTS OFF)
  SELECT * FROM items WHERE id = (random() * 0)::int + 1;
SELECT * FROM items WHERE id = (random() * 0)::int + 1;

-- prepared statements: custom plans, then generic plans with a Param
PREPARE by_id(int) AS SELECT * FROM items WHERE id = $1;
EXECUTE by_id(7);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_id(7);
EXECUTE by_id(7);
EXECUTE by_id(700);
EXECUTE by_id(7000);
EXECUTE by_id(NULL);
PREPARE by_big(bigint) AS SELECT * FROM items WHERE id = $1;
EXECUTE by_big(8);
EXECUTE by_big(-9223372036854775808);
PREPARE by_name(text) AS SELECT * FROM items WHERE name = $1;
EXPLAIN (COSTS OFF) EXECUTE by_name('item 9');
EXECUTE by_name('item 9');
RESET plan_cache_mode;
DEALLOCATE by_id;
DEALLOCATE by_big;
DEALLOCATE by_name;

-- joins with a native table: whichever plan the costs choose, then the
-- nested loops forced, over a full scan and over key lookups (a path
-- parameterized by the outer row): the answers are the same
CREATE TABLE wanted (k int, note text);
INSERT INTO wanted VALUES (3, 'three'), (999, 'last'), (1001, 'missing'),
  (3, 'three again'), (NULL, 'null');
ANALYZE wanted;
SELECT w.note, i.* FROM wanted w JOIN items i ON i.id = w.k
  ORDER BY w.k, w.note;
SELECT w.note, i.* FROM wanted w LEFT JOIN items i ON i.id = w.k
  ORDER BY w.k, w.note;
SELECT w.note, i.id FROM wanted w JOIN items i ON i.id = w.k + 1
  ORDER BY w.k, w.note;
SELECT count(*) FROM items i JOIN items_native n ON n.id = i.id
  WHERE i.name = n.name AND i.qty IS NOT DISTINCT FROM n.qty;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
-- rescans of a full scan, as the inner side of a nested loop
EXPLAIN (COSTS OFF)
  SELECT w.note, i.id FROM wanted w JOIN items i ON i.id % 500 = w.k;
SELECT w.note, i.id FROM wanted w JOIN items i ON i.id % 500 = w.k
  ORDER BY w.k, w.note, i.id;
-- rescans of key lookups
SET enable_memoize = off;
EXPLAIN (COSTS OFF)
  SELECT w.note, i.* FROM wanted w JOIN items i ON i.id = w.k;
SELECT w.note, i.* FROM wanted w JOIN items i ON i.id = w.k
  ORDER BY w.k, w.note;
SELECT w.note, (SELECT name FROM items i WHERE i.id = w.k) FROM wanted w
  ORDER BY w.k, w.note;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
RESET enable_memoize;
-- a self-join
SELECT a.id, b.id FROM items a JOIN items b ON b.id = a.id * 100
  ORDER BY a.id;

-- cursors scroll back over the same snapshot
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM items WHERE id > 997;
FETCH ALL FROM c;
FETCH BACKWARD 2 FROM c;
FETCH FIRST FROM c;
COMMIT;

-- row estimates: the store's entry count, one row for a key lookup
CREATE FUNCTION lsm_plan_rows(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
  RETURN plan->0->'Plan'->>'Plan Rows';
END $$;
SELECT lsm_plan_rows('SELECT * FROM items');
SELECT lsm_plan_rows('SELECT * FROM items WHERE id = 42');
SELECT lsm_plan_rows('SELECT * FROM items WHERE id < 0');
DROP FUNCTION lsm_plan_rows(text);

DROP FOREIGN TABLE items;
DROP TABLE items_native, wanted;
DROP SERVER lsm_scan_srv;

--
-- Composite keys: a key of several columns, ordered column by column.
-- Every query runs on the foreign table "ck" and on a heap table with the
-- same primary key, "ck_heap"; ck_same() checks that they hold the same
-- rows after each change.
--
CREATE SERVER lsm_comp_srv FOREIGN DATA WRAPPER lsm_fdw;
\set VERBOSITY default

-- declaring the key: the table option names the columns in key order...
CREATE FOREIGN TABLE ck (a int, b text COLLATE "C", c int8, v text)
  SERVER lsm_comp_srv OPTIONS (key 'a, b, c');
CREATE TABLE ck_heap (a int, b text COLLATE "C", c int8, v text,
                      PRIMARY KEY (a, b, c));
CREATE FUNCTION ck_same() RETURNS boolean LANGUAGE sql AS $$
  SELECT NOT EXISTS (SELECT * FROM ck EXCEPT ALL SELECT * FROM ck_heap)
     AND NOT EXISTS (SELECT * FROM ck_heap EXCEPT ALL SELECT * FROM ck)
$$;
-- ... or several columns have the option key 'true' (attribute order)
CREATE FOREIGN TABLE ck_cols (x int OPTIONS (key 'true'), y text,
                              z date OPTIONS (key 'true'))
  SERVER lsm_comp_srv;
INSERT INTO ck_cols VALUES (1, 'a', '2024-01-02'), (1, 'b', '2024-01-01'),
  (0, 'c', '2025-01-01');
SELECT * FROM ck_cols;
-- both, naming the same columns: the table option gives the order
ALTER FOREIGN TABLE ck_cols OPTIONS (ADD key 'z, x');           -- ERROR: rows
CREATE FOREIGN TABLE ck_both (x int OPTIONS (key 'true'), y text,
                              z date OPTIONS (key 'true'))
  SERVER lsm_comp_srv OPTIONS (key 'z, x');
INSERT INTO ck_both VALUES (1, 'a', '2024-01-02'), (1, 'b', '2024-01-01'),
  (0, 'c', '2025-01-01');
SELECT * FROM ck_both;
-- quoted names, blanks
CREATE FOREIGN TABLE ck_quoted ("Odd, Name" int, "b" text)
  SERVER lsm_comp_srv OPTIONS (key ' "Odd, Name" ,  b ');
INSERT INTO ck_quoted VALUES (2, 'x'), (1, 'y'), (1, 'x');
SELECT * FROM ck_quoted;
-- refused definitions
CREATE FOREIGN TABLE ck_bad (x int, y int) SERVER lsm_comp_srv
  OPTIONS (key 'x,,y');                                          -- ERROR
CREATE FOREIGN TABLE ck_bad (x int, y int) SERVER lsm_comp_srv
  OPTIONS (key '"x, y');                                         -- ERROR
CREATE FOREIGN TABLE ck_bad (x int, y int) SERVER lsm_comp_srv
  OPTIONS (key 'x, w');
SELECT * FROM ck_bad;                                            -- ERROR
DROP FOREIGN TABLE ck_bad;
CREATE FOREIGN TABLE ck_bad (x int, y int) SERVER lsm_comp_srv
  OPTIONS (key 'x, y, x');
SELECT * FROM ck_bad;                                            -- ERROR
DROP FOREIGN TABLE ck_bad;
CREATE FOREIGN TABLE ck_bad (x int OPTIONS (key 'true'), y int) SERVER lsm_comp_srv
  OPTIONS (key 'x, y');
SELECT * FROM ck_bad;                                            -- ERROR
DROP FOREIGN TABLE ck_bad;
CREATE FOREIGN TABLE ck_bad (x int, y float8) SERVER lsm_comp_srv
  OPTIONS (key 'x, y');
SELECT * FROM ck_bad;                                            -- ERROR
DROP FOREIGN TABLE ck_bad;

-- rows: keys that share prefixes, empty strings, negative numbers
INSERT INTO ck SELECT a, b, c, a || '/' || b || '/' || c
  FROM generate_series(-2, 3) a,
       unnest(ARRAY['', 'a', 'ab', 'abc', 'b', 'ba', 'z']) b,
       generate_series(-1, 2) c;
INSERT INTO ck_heap SELECT * FROM ck;
SELECT ck_same(), count(*) FROM ck;

-- a full scan returns key order, column by column, with no Sort
EXPLAIN (COSTS OFF) SELECT * FROM ck ORDER BY a, b, c;
SELECT a, b, c FROM ck WHERE a = 0 ORDER BY a, b, c;
SELECT (SELECT array_agg(a || ':' || b || ':' || c ORDER BY a, b, c) FROM ck) =
       (SELECT array_agg(a || ':' || b || ':' || c) FROM ck) AS in_key_order;
EXPLAIN (COSTS OFF) SELECT * FROM ck ORDER BY a DESC, b DESC, c DESC LIMIT 3;
SELECT * FROM ck ORDER BY a DESC, b DESC, c DESC LIMIT 3;
-- a mixed direction or another column order needs a Sort
EXPLAIN (COSTS OFF) SELECT * FROM ck ORDER BY a, b DESC;
EXPLAIN (COSTS OFF) SELECT * FROM ck ORDER BY b, a;

-- equality on every key column: a key lookup
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE a = 1 AND b = 'ab' AND c = 2;
SELECT * FROM ck WHERE a = 1 AND b = 'ab' AND c = 2;
SELECT * FROM ck WHERE c = 2 AND b = 'ab' AND a = 1;
SELECT * FROM ck WHERE a = 1 AND b = 'ab' AND c = 7;
SELECT * FROM ck WHERE a = 1 AND b = 'ab' AND c = NULL;
SELECT * FROM ck WHERE a = 1 AND b = 'a' || 'b' AND c = 2::int2;

-- equality on a leading prefix: a key range
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE a = 1;
SELECT * FROM ck WHERE a = 1 ORDER BY b, c;
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE a = 1 AND b = 'ab';
SELECT * FROM ck WHERE a = 1 AND b = 'ab';
SELECT * FROM ck WHERE a = 1 AND b = '';
-- ... and a range on the next column (checked again by the executor)
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE a = 1 AND b > 'a' AND b <= 'b';
SELECT * FROM ck WHERE a = 1 AND b > 'a' AND b <= 'b';
SELECT a, b, c FROM ck WHERE a = 2 AND b = 'ba' AND c >= 0;
SELECT a, b, c FROM ck WHERE a = 2 AND b = 'ba' AND c < 0;
SELECT a, b, c FROM ck WHERE a BETWEEN 2 AND 3 AND b = 'z';
SELECT a, b, c FROM ck WHERE a > 2 ORDER BY a, b, c LIMIT 4;
SELECT a, b, c FROM ck WHERE a = 1 AND b >= 'b' ORDER BY b DESC, c DESC;
-- a prefix fixed by equality leaves the order of the rest, with no Sort
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE a = 1 ORDER BY b, c LIMIT 3;
SELECT * FROM ck WHERE a = 1 ORDER BY b, c LIMIT 3;
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE a = 1 AND b = 'b' ORDER BY c DESC;
SELECT * FROM ck WHERE a = 1 AND b = 'b' ORDER BY c DESC;
-- equality on a later column only: no key access
EXPLAIN (COSTS OFF) SELECT * FROM ck WHERE b = 'ab';
SELECT a, b, c FROM ck WHERE b = 'ab' AND c = 0 ORDER BY a;
-- lists: IN on key columns, every other key column equal, make a key
-- list (every combination), in key order
EXPLAIN (COSTS OFF) SELECT a, b, c FROM ck WHERE a IN (0, 3) AND b = 'a' AND c = 1;
SELECT a, b, c FROM ck WHERE a IN (0, 3) AND b = 'a' AND c = 1 ORDER BY a;
EXPLAIN (COSTS OFF) SELECT a, b, c FROM ck
  WHERE a IN (1, 2) AND b IN ('a', 'ab', 'nope') AND c IN (2, 0) ORDER BY a, b, c;
SELECT a, b, c FROM ck
  WHERE a IN (1, 2) AND b IN ('a', 'ab', 'nope') AND c IN (2, 0) ORDER BY a, b, c;
-- (lists cost a lookup per key: on a small table a scan may cost less,
-- on a larger one the list is chosen, for Params too)
CREATE FOREIGN TABLE ck_big (a int, b int, c int, v int) SERVER lsm_comp_srv
  OPTIONS (key 'a, b, c');
INSERT INTO ck_big SELECT a, b, c, a * 10000 + b * 100 + c
  FROM generate_series(1, 30) a, generate_series(1, 30) b, generate_series(1, 30) c;
EXPLAIN (COSTS OFF) SELECT * FROM ck_big
  WHERE a IN (1, 2) AND b IN (3, 4, 99) AND c IN (5, 6) ORDER BY a, b, c;
SELECT * FROM ck_big WHERE a IN (1, 2) AND b IN (3, 4, 99) AND c IN (5, 6)
  ORDER BY a, b, c;
-- (a range of the prefix a = 7, which the planner expects to be small,
-- competes with the list by cost)
EXPLAIN (COSTS OFF) SELECT * FROM ck_big
  WHERE a = 7 AND b IN (3, 4) AND c IN (5, 6);
SELECT * FROM ck_big WHERE a = 7 AND b IN (3, 4) AND c IN (5, 6);
PREPARE ck_big_in(int[], int[]) AS SELECT sum(v) FROM ck_big
  WHERE a = ANY($1) AND b = 2 AND c = ANY($2);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ck_big_in('{1}', '{1}');
EXECUTE ck_big_in('{1, 30, 31}', '{1, 2, NULL}');
RESET plan_cache_mode;
DROP FOREIGN TABLE ck_big;
SELECT a, b, c FROM ck WHERE a IN (1, NULL) AND b = 'b' AND c = ANY(ARRAY[1, NULL, 1]);
SELECT count(*) FROM ck WHERE a IN (1, 2) AND b = ANY('{}'::text[]) AND c = 1;
-- ... and rows: (a, b, c) IN (...) is an OR of rows of equalities
EXPLAIN (COSTS OFF) SELECT a, b, c FROM ck
  WHERE (a, b, c) IN ((0, 'a', 1), (3, 'z', 2), (9, 'a', 1));
SELECT a, b, c FROM ck WHERE (a, b, c) IN ((0, 'a', 1), (3, 'z', 2), (9, 'a', 1))
  ORDER BY a;
SELECT a, b, c FROM ck WHERE (a, b, c) IN ((0, 'a', 1), (0, 'a', 1), (2, 'b', NULL));
-- a list of rows that leaves out a key column is not a key list
EXPLAIN (COSTS OFF) SELECT a, b, c FROM ck WHERE (a, b) IN ((0, 'a'), (3, 'z'));
SELECT a, b, c FROM ck WHERE (a, b) IN ((0, 'a'), (3, 'z')) ORDER BY a, b, c;
-- (a Param's array is guessed at 10 elements: here a full scan is cheaper)
PREPARE ck_in(int[], text) AS SELECT a, b, c FROM ck
  WHERE a = ANY($1) AND b = $2 AND c = 0 ORDER BY a;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ck_in('{1, 2}', 'z');
EXECUTE ck_in('{1, 2, 2, 7}', 'z');
RESET plan_cache_mode;
SELECT a, b, c FROM ck WHERE (a, b) > (2, 'z') ORDER BY a, b, c LIMIT 3;
-- values of other integer widths, out of range, and Params
SELECT count(*) FROM ck WHERE a = 1::int8 AND b = 'a';
SELECT count(*) FROM ck WHERE a = 5000000000 AND b = 'a';
SELECT count(*) FROM ck WHERE a = 1 AND b = 'a' AND c = 9223372036854775807;
PREPARE ck_look(int, text, int8) AS SELECT v FROM ck WHERE a = $1 AND b = $2 AND c = $3;
PREPARE ck_pre(int, text) AS SELECT count(*) FROM ck WHERE a = $1 AND b > $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE ck_look(1, 'a', 1);
EXECUTE ck_look(1, 'a', 1);
EXECUTE ck_look(1, NULL, 1);
EXPLAIN (COSTS OFF) EXECUTE ck_pre(1, 'b');
EXECUTE ck_pre(1, 'b');
EXECUTE ck_pre(-2, '');
RESET plan_cache_mode;
-- a join on the whole key, and LATERAL
SELECT h.a, h.b, h.c, k.v FROM ck_heap h JOIN ck k USING (a, b, c)
  WHERE h.c = 2 AND h.b = 'abc' ORDER BY h.a;
SELECT x, l.* FROM generate_series(0, 1) x,
  LATERAL (SELECT b, c FROM ck WHERE a = x AND b = 'ba' ORDER BY c DESC LIMIT 2) l;
-- nested loops look the inner rows up by the outer row's key, or prefix
SET enable_hashjoin = off; SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT o.*, k.v
  FROM (VALUES (1, 'ab', 2::int8), (3, 'z', 0), (9, 'a', 1)) o(a, b, c)
  JOIN ck k USING (a, b, c);
SELECT o.*, k.v
  FROM (VALUES (1, 'ab', 2::int8), (3, 'z', 0), (9, 'a', 1)) o(a, b, c)
  JOIN ck k USING (a, b, c) ORDER BY a;
EXPLAIN (COSTS OFF) SELECT x, l.* FROM generate_series(0, 1) x,
  LATERAL (SELECT b, c FROM ck WHERE a = x AND b = 'ba' ORDER BY c DESC LIMIT 2) l;
SELECT count(*), sum(k.c) FROM (VALUES (1, 'ab'), (2, 'z'), (9, 'a')) o(a, b)
  JOIN ck k ON k.a = o.a AND k.b = o.b;
SELECT count(*), sum(k.c) FROM (VALUES (1, 'ab'), (2, 'z'), (9, 'a')) o(a, b)
  JOIN ck_heap k ON k.a = o.a AND k.b = o.b;
RESET enable_hashjoin; RESET enable_mergejoin;
-- aggregates over a prefix
SELECT count(*), min(c), max(c) FROM ck WHERE a = 3 AND b = 'a';
SELECT b, count(*) FROM ck WHERE a = 3 GROUP BY b ORDER BY b;
-- a parallel scan of a prefix
SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SELECT count(*), sum(c) FROM ck WHERE a = 2 AND b >= 'b';
SELECT count(*), sum(c) FROM ck_heap WHERE a = 2 AND b >= 'b';
RESET parallel_setup_cost; RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size; RESET max_parallel_workers_per_gather;

-- rows have no ctid
SELECT ctid FROM ck LIMIT 1;                                     -- ERROR
-- ANALYZE samples rows, COPY loads them
ANALYZE ck;
SELECT attname, n_distinct FROM pg_stats WHERE tablename = 'ck'
  AND attname IN ('a', 'c') ORDER BY attname;
COPY ck_quoted FROM stdin;
0	z
3	a
\.
SELECT * FROM ck_quoted;

-- writes: a duplicate key, a null key column
INSERT INTO ck VALUES (1, 'ab', 2, 'dup');                       -- ERROR
INSERT INTO ck VALUES (1, NULL, 2, 'null');                      -- ERROR
INSERT INTO ck VALUES (7, 'new', 0, 'n'), (7, 'new', 1, 'n');
INSERT INTO ck_heap VALUES (7, 'new', 0, 'n'), (7, 'new', 1, 'n');
-- UPDATE and DELETE by prefix, and of key columns (rows move)
UPDATE ck SET v = 'upd' WHERE a = 2 AND b = 'b';
UPDATE ck_heap SET v = 'upd' WHERE a = 2 AND b = 'b';
UPDATE ck SET c = c + 10 WHERE a = 3 AND b = 'z' RETURNING a, b, c;
UPDATE ck_heap SET c = c + 10 WHERE a = 3 AND b = 'z';
UPDATE ck SET b = 'zz' WHERE a = -1 AND b = 'ba' AND c = 0;
UPDATE ck_heap SET b = 'zz' WHERE a = -1 AND b = 'ba' AND c = 0;
UPDATE ck SET a = 1 WHERE a = 2 AND b = 'ab' AND c = 2;          -- ERROR
DELETE FROM ck WHERE a = -2 AND b < 'b';
DELETE FROM ck_heap WHERE a = -2 AND b < 'b';
DELETE FROM ck WHERE a = 0 AND b = 'a' AND c = 1 RETURNING *;
DELETE FROM ck_heap WHERE a = 0 AND b = 'a' AND c = 1;
SELECT ck_same(), count(*) FROM ck;
-- upsert: the conflict target is the key's columns, in any order
INSERT INTO ck VALUES (1, 'ab', 2, 'up'), (8, 'x', 0, 'ins')
  ON CONFLICT (c, b, a) DO UPDATE SET v = excluded.v RETURNING *;
INSERT INTO ck_heap VALUES (1, 'ab', 2, 'up'), (8, 'x', 0, 'ins')
  ON CONFLICT (c, b, a) DO UPDATE SET v = excluded.v;
INSERT INTO ck VALUES (1, 'ab', 2, 'no') ON CONFLICT (a, b, c) DO NOTHING;
INSERT INTO ck VALUES (1, 'ab', 2, 'no') ON CONFLICT (a, b) DO NOTHING;  -- ERROR
SELECT ck_same();
-- in a transaction: pending writes are read by prefix and by key
BEGIN;
INSERT INTO ck VALUES (1, 'ab', 3, 'pending');
DELETE FROM ck WHERE a = 1 AND b = 'ab' AND c = 0;
SELECT a, b, c, v FROM ck WHERE a = 1 AND b = 'ab' ORDER BY c;
SELECT v FROM ck WHERE a = 1 AND b = 'ab' AND c = 3;
ROLLBACK;
SELECT ck_same();

-- bytea key parts: zero bytes and prefixes keep bytea order
CREATE FOREIGN TABLE ck_bytes (k bytea, n int, v int) SERVER lsm_comp_srv
  OPTIONS (key 'k, n');
CREATE TABLE ck_bytes_heap (k bytea, n int, v int, PRIMARY KEY (k, n));
INSERT INTO ck_bytes SELECT k, n, n FROM unnest(ARRAY['\x'::bytea, '\x00',
  '\x0000', '\x00ff', '\x0001', '\x01', '\xff', '\xff00', '\x00ffff']) k,
  generate_series(1, 2) n;
INSERT INTO ck_bytes_heap SELECT * FROM ck_bytes;
SELECT (SELECT array_agg(k || int4send(n)) FROM ck_bytes) =
       (SELECT array_agg(k || int4send(n) ORDER BY k, n) FROM ck_bytes_heap)
       AS in_key_order;
SELECT k, n FROM ck_bytes WHERE k = '\x00' ORDER BY n DESC;
SELECT k, n FROM ck_bytes WHERE k >= '\x00ff' AND k < '\xff' ORDER BY k, n;
SELECT count(*) FROM ck_bytes WHERE k = '\x00ff' AND n = 2;

-- a key too long: text parts other than the last take 2 bytes more
CREATE FOREIGN TABLE ck_long (s text, t text) SERVER lsm_comp_srv
  OPTIONS (key 's, t');
INSERT INTO ck_long VALUES (repeat('x', 65534), '');             -- ERROR
INSERT INTO ck_long VALUES (repeat('x', 65533), '');
INSERT INTO ck_long VALUES ('', repeat('y', 65533));
SELECT length(s), length(t) FROM ck_long ORDER BY s;
SELECT count(*) FROM ck_long WHERE s = repeat('x', 70000);
SELECT count(*) FROM ck_long WHERE s = '' AND t >= repeat('y', 70000);

-- the store records its key columns (metadata format version 2; a
-- one-column key keeps version 1)
CREATE FOREIGN TABLE ck_one (id int OPTIONS (key 'true')) SERVER lsm_comp_srv;
INSERT INTO ck_one VALUES (1);
SELECT split_part(m, E'\n', 1) AS version, split_part(m, E'\n', 7) AS key
  FROM (SELECT pg_read_file(format('lsm_fdw/%s/%s/lsm_fdw.meta',
                                   (SELECT oid FROM pg_database
                                    WHERE datname = current_database()),
                                   rel::oid)) AS m
        FROM unnest(ARRAY['ck'::regclass, 'ck_both', 'ck_one']) rel) s;
-- and moving the key of a table with rows is refused
ALTER FOREIGN TABLE ck OPTIONS (SET key 'a, b');                 -- ERROR
ALTER FOREIGN TABLE ck OPTIONS (SET key 'b, a, c');              -- ERROR

DROP FOREIGN TABLE ck, ck_cols, ck_both, ck_quoted, ck_bytes, ck_long, ck_one;
DROP TABLE ck_heap, ck_bytes_heap;
DROP FUNCTION ck_same();
DROP SERVER lsm_comp_srv;

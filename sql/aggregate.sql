--
-- Aggregates computed by the scan (src/fdw/agg.c): GROUP BY and count,
-- sum, min, max over a whole table, compared with a native table with the
-- same rows; the shapes the scan does not compute are aggregated by the
-- executor, with the same answers.
--
CREATE SERVER lsm_agg_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE TYPE agg_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN agg_pos AS int CHECK (VALUE >= 0);
CREATE COLLATION agg_ci (provider = icu, locale = 'und-u-ks-level2',
                         deterministic = false);
-- small memtables and files: many SSTables, and rows in the memtable
CREATE FOREIGN TABLE ta (id int8 OPTIONS (key 'true'), g text, s int2,
  i int4, b int8, d date, ts timestamptz, f float8, c char(3), m agg_mood,
  dp agg_pos, u uuid, bo bool, v varchar(10), ci text COLLATE agg_ci,
  long text)
  SERVER lsm_agg_srv OPTIONS (memtable_size '65536', file_size '32768');
CREATE TABLE ta_native (id int8 PRIMARY KEY, g text, s int2, i int4, b int8,
  d date, ts timestamptz, f float8, c char(3), m agg_mood, dp agg_pos,
  u uuid, bo bool, v varchar(10), ci text COLLATE agg_ci, long text);
INSERT INTO ta_native
SELECT n,
       CASE WHEN n % 11 = 0 THEN NULL ELSE 'g' || (n % 7) END,
       CASE WHEN n % 13 = 0 THEN NULL ELSE (n % 300 - 150)::int2 END,
       CASE WHEN n % 17 = 0 THEN NULL ELSE n * 7919 % 100000 - 50000 END,
       CASE WHEN n % 19 = 0 THEN NULL ELSE 4000000000000000000 + n END,
       CASE WHEN n % 23 = 0 THEN NULL ELSE date '2020-01-01' + n % 400 END,
       CASE WHEN n % 29 = 0 THEN NULL
            ELSE timestamptz '2021-03-04 05:06:07+00' + n * interval '1 hour' END,
       -- (no -0: the store keeps floats canonical, -0 as 0)
       CASE n % 5 WHEN 0 THEN 'NaN'::float8 WHEN 1 THEN 'Infinity'::float8
            ELSE (n % 9)::float8 / 4 END,
       CASE WHEN n % 4 = 0 THEN 'a' ELSE 'b ' || (n % 3) END,
       (ARRAY['sad', 'ok', 'happy'])[n % 3 + 1]::agg_mood,
       (n % 6)::agg_pos,
       md5((n % 5)::text)::uuid,
       CASE WHEN n % 31 = 0 THEN NULL ELSE n % 2 = 0 END,
       'v' || (n % 4),
       CASE n % 3 WHEN 0 THEN 'Abc' WHEN 1 THEN 'aBC' ELSE 'x' END,
       CASE WHEN n % 3 = 0 THEN repeat('long ', 40) || (n % 5) END
FROM generate_series(1, 6000) n;
SET lsm_fdw.bulk_insert_rows = 0;
INSERT INTO ta SELECT * FROM ta_native WHERE id % 2 = 0;
RESET lsm_fdw.bulk_insert_rows;
INSERT INTO ta SELECT * FROM ta_native WHERE id % 2 = 1;
UPDATE ta SET i = i + 1, g = 'updated' WHERE id % 97 = 0;
UPDATE ta_native SET i = i + 1, g = 'updated' WHERE id % 97 = 0;
DELETE FROM ta WHERE id % 101 = 0;
DELETE FROM ta_native WHERE id % 101 = 0;
ANALYZE ta_native;
CREATE FOREIGN TABLE ta_empty (id int8 OPTIONS (key 'true'), g text, i int4,
  b int8) SERVER lsm_agg_srv;
CREATE TABLE ta_empty_native (id int8 PRIMARY KEY, g text, i int4, b int8);

-- compares a query on ta (ta_empty) with the same one on the native table
CREATE FUNCTION same(q text) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  a text; b text;
BEGIN
  EXECUTE format('SELECT array_agg(r::text ORDER BY r::text) FROM (%s) r', q)
    INTO a;
  EXECUTE format('SELECT array_agg(r::text ORDER BY r::text) FROM (%s) r',
                 regexp_replace(q, '\m(ta|ta_empty|ta_many)\M', '\1_native', 'g'))
    INTO b;
  IF a IS DISTINCT FROM b THEN
    RAISE NOTICE 'differs: %', q;
    RAISE NOTICE 'lsm:    %', left(a, 500);
    RAISE NOTICE 'native: %', left(b, 500);
  END IF;
  RETURN a IS NOT DISTINCT FROM b;
END $$;

-- whether the scan computes the aggregates of q
CREATE FUNCTION pushed(q text) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    IF line LIKE '%LSM Access: aggregate%' THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END $$;

-- the lines of EXPLAIN ANALYZE of q
CREATE FUNCTION explain_lines(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q;
END $$;

-- the planner leaves GROUP BY to the executor without statistics (the
-- number of groups would be a guess), not a count
SELECT pushed('SELECT g, count(*) FROM ta GROUP BY g') AS grouped_before_analyze,
       pushed('SELECT count(*), sum(i) FROM ta') AS count_before_analyze;
ANALYZE ta;
ANALYZE ta_empty;

EXPLAIN (COSTS OFF) SELECT count(*) FROM ta;
EXPLAIN (COSTS OFF) SELECT g, count(*), sum(i) FROM ta GROUP BY g;
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT g || '!', count(*) * 2, sum(b) + 1, max(d) FROM ta GROUP BY g;
EXPLAIN (COSTS OFF)
  SELECT g, count(*) FROM ta WHERE id > 100 AND id <= 2000 GROUP BY g;

-- what the scan computes: every answer as the native table's, and pushed
CREATE TABLE agg_queries (q text);
INSERT INTO agg_queries VALUES
  ('SELECT count(*) FROM ta'),
  ('SELECT count(*), count(g), count(i), count(long), count(ci) FROM ta'),
  ('SELECT sum(s), sum(i), sum(b), min(s), max(s), min(i), max(i), min(b), max(b) FROM ta'),
  ('SELECT min(d), max(d), min(ts), max(ts), min(dp), max(dp) FROM ta'),
  ('SELECT g, count(*) FROM ta GROUP BY g'),
  ('SELECT g, count(*), count(i), sum(s), sum(i), sum(b), min(i), max(i), min(b), max(b), min(d), max(d), min(ts), max(ts) FROM ta GROUP BY g'),
  ('SELECT g, bo, count(*), sum(i) FROM ta GROUP BY g, bo'),
  ('SELECT bo, g, count(*) FROM ta GROUP BY 1, 2'),
  ('SELECT s, count(*) FROM ta GROUP BY s'),
  ('SELECT i, count(*) FROM ta GROUP BY i'),
  ('SELECT b, count(*) FROM ta GROUP BY b'),
  ('SELECT d, count(*), max(ts) FROM ta GROUP BY d'),
  ('SELECT ts, count(*) FROM ta GROUP BY ts'),
  ('SELECT f, count(*), sum(i) FROM ta GROUP BY f'),
  ('SELECT c, count(*) FROM ta GROUP BY c'),
  ('SELECT m, count(*) FROM ta GROUP BY m'),
  ('SELECT dp, count(*), sum(dp) FROM ta GROUP BY dp'),
  ('SELECT u, count(*) FROM ta GROUP BY u'),
  ('SELECT v, count(*) FROM ta GROUP BY v'),
  ('SELECT long, count(*) FROM ta GROUP BY long'),
  ('SELECT count(*) FROM ta GROUP BY g'),
  ('SELECT g || ''!'', count(*) * 2, sum(i) + 1, max(d) - min(d) FROM ta GROUP BY g'),
  ('SELECT g, count(*) FROM ta GROUP BY g ORDER BY 2 DESC, 1 LIMIT 3'),
  ('SELECT g FROM ta GROUP BY g'),
  ('SELECT sum(b) * 2 FROM ta'),
  ('SELECT g, count(*) FROM ta_empty GROUP BY g'),
  ('SELECT count(*), sum(i), sum(b), min(i), max(b) FROM ta_empty'),
  ('SELECT count(*), sum(i) FROM ta WHERE id BETWEEN 100 AND 4000'),
  ('SELECT g, count(*) FROM ta WHERE id > 100 GROUP BY g'),
  ('SELECT g, count(*), max(d) FROM ta WHERE id >= 3000 AND id < 3500 GROUP BY g'),
  ('SELECT count(*), min(i) FROM ta WHERE id > 5990'),
  ('SELECT count(*), sum(i) FROM ta WHERE id < 1'),
  ('SELECT count(*), sum(i) FROM ta WHERE id > 20 AND id < 10'),
  ('SELECT count(*), sum(i) FROM ta WHERE id < NULL::int8'),
  ('SELECT count(*) FROM ta WHERE id > 4000000000::numeric');
SELECT q, same(q), pushed(q) FROM agg_queries ORDER BY q COLLATE "C";

-- what it does not: the executor aggregates, with the same answers
TRUNCATE agg_queries;
INSERT INTO agg_queries VALUES
  ('SELECT g, count(*) FROM ta GROUP BY g HAVING count(*) > 700'),
  ('SELECT g, count(DISTINCT i) FROM ta GROUP BY g'),
  ('SELECT g, count(*) FILTER (WHERE i > 0) FROM ta GROUP BY g'),
  ('SELECT g, string_agg(v, '','' ORDER BY id) FROM ta GROUP BY g'),
  ('SELECT g, avg(i) FROM ta GROUP BY g'),
  ('SELECT g, sum(f) FROM ta GROUP BY g'),
  ('SELECT g, min(g) FROM ta GROUP BY g'),
  ('SELECT g, count(*) FROM ta WHERE i > 0 GROUP BY g'),
  ('SELECT g, count(*) FROM ta WHERE id > 100 AND i > 0 GROUP BY g'),
  ('SELECT id % 3, count(*) FROM ta GROUP BY 1'),
  ('SELECT lower(g), count(*) FROM ta GROUP BY 1'),
  ('SELECT g, bo, count(*) FROM ta GROUP BY GROUPING SETS ((g), (bo))'),
  ('SELECT g, count(*) FROM ta GROUP BY ROLLUP (g)'),
  ('SELECT id, count(*) FROM ta GROUP BY id'),
  ('SELECT count(id), sum(id) FROM ta'),
  ('SELECT ci, count(*) FROM ta GROUP BY ci'),
  ('SELECT g COLLATE "C", count(*) FROM ta GROUP BY 1'),
  ('SELECT g COLLATE agg_ci, count(*) FROM ta GROUP BY 1'),
  ('SELECT g, count(*), random() < 2 FROM ta GROUP BY g'),
  ('SELECT x.g, count(*) FROM ta x JOIN ta_native n USING (id) GROUP BY x.g');
SELECT q, same(q), pushed(q) FROM agg_queries ORDER BY q COLLATE "C";

-- sums past 64 bits: numeric, as the native table's
UPDATE ta SET b = 9000000000000000000 WHERE id <= 100;
UPDATE ta_native SET b = 9000000000000000000 WHERE id <= 100;
SELECT same('SELECT sum(b), g FROM ta GROUP BY g');
SELECT sum(b) FROM ta;
UPDATE ta SET b = -9000000000000000000 WHERE id <= 100;
UPDATE ta_native SET b = -9000000000000000000 WHERE id <= 100;
SELECT same('SELECT sum(b), g FROM ta GROUP BY g');
SELECT sum(b) FROM ta;

-- the transaction's pending writes are in the groups, savepoints too
BEGIN;
INSERT INTO ta (id, g, i, b) VALUES (100001, 'new', 5, 6), (100002, NULL, 7, 8);
INSERT INTO ta_native (id, g, i, b) VALUES (100001, 'new', 5, 6), (100002, NULL, 7, 8);
UPDATE ta SET g = 'moved' WHERE id % 10 = 3;
UPDATE ta_native SET g = 'moved' WHERE id % 10 = 3;
DELETE FROM ta WHERE id % 10 = 4;
DELETE FROM ta_native WHERE id % 10 = 4;
SELECT same('SELECT g, count(*), sum(i), max(b) FROM ta GROUP BY g');
SELECT same('SELECT g, count(*), sum(i) FROM ta WHERE id BETWEEN 2000 AND 100001 GROUP BY g');
SAVEPOINT s1;
DELETE FROM ta WHERE g = 'g1';
SELECT g, count(*) FROM ta WHERE g IN ('g1', 'g2') GROUP BY g ORDER BY g;
SELECT count(*) FROM ta;
ROLLBACK TO s1;
SELECT same('SELECT g, count(*), sum(i), max(b) FROM ta GROUP BY g');
SELECT pushed('SELECT g, count(*) FROM ta GROUP BY g');
ROLLBACK;
SELECT same('SELECT g, count(*), sum(i), max(b) FROM ta GROUP BY g');

-- rescans: a correlated subquery, a Param of a generic plan, a cursor
SELECT same('SELECT x, (SELECT count(*) + x FROM ta) FROM generate_series(1, 3) x');
SELECT same('SELECT x, (SELECT max(i) - x FROM ta) FROM generate_series(1, 3) x');
SELECT same('SELECT x, (SELECT count(*) FROM ta WHERE id <= x * 1000) FROM generate_series(1, 4) x');
SELECT pushed('SELECT x, (SELECT count(*) FROM ta WHERE id <= x * 1000) FROM generate_series(1, 4) x');
PREPARE agg_r(int8) AS SELECT count(*), sum(i) FROM ta WHERE id > $1;
SET plan_cache_mode = force_generic_plan;
SELECT pushed('EXECUTE agg_r(5000)');
EXECUTE agg_r(5000);
SELECT count(*), sum(i) FROM ta_native WHERE id > 5000;
EXECUTE agg_r(100);
SELECT count(*), sum(i) FROM ta_native WHERE id > 100;
RESET plan_cache_mode;
DEALLOCATE agg_r;
PREPARE agg_q(int) AS SELECT g, count(*) + $1 AS c FROM ta GROUP BY g;
SET plan_cache_mode = force_generic_plan;
SELECT pushed('EXECUTE agg_q(10)');
CREATE TEMP TABLE agg_out AS EXECUTE agg_q(10);
SELECT same('SELECT g, count(*) + 10 AS c FROM ta GROUP BY g') AND
       (SELECT array_agg(g || ':' || c ORDER BY g) FROM agg_out) =
       (SELECT array_agg(g || ':' || c ORDER BY g)
          FROM (SELECT g, count(*) + 10 AS c FROM ta_native GROUP BY g) n) AS generic_plan_agrees;
RESET plan_cache_mode;
DEALLOCATE agg_q;
BEGIN;
DECLARE agg_c SCROLL CURSOR FOR SELECT g, count(*) FROM ta GROUP BY g ORDER BY g;
FETCH 2 FROM agg_c;
FETCH BACKWARD 1 FROM agg_c;
FETCH LAST FROM agg_c;
COMMIT;

-- in a CTE, a union, a join with a native table
SELECT same('WITH a AS (SELECT g, count(*) AS n FROM ta GROUP BY g) SELECT * FROM a WHERE n > 10');
SELECT same('SELECT g, count(*) FROM ta GROUP BY g UNION ALL SELECT ''all'', count(*) FROM ta');
SELECT same('SELECT n.g, a.c FROM (SELECT g, count(*) AS c FROM ta GROUP BY g) a JOIN (SELECT DISTINCT g FROM ta_native) n ON n.g = a.g');

-- foreign partitions: each partition aggregated by its scan when the
-- grouping goes partition by partition
CREATE TABLE tap (id int8, g text, i int4) PARTITION BY LIST (g);
CREATE FOREIGN TABLE tap_a PARTITION OF tap FOR VALUES IN ('g1', 'g2')
  SERVER lsm_agg_srv OPTIONS (key 'id');
CREATE FOREIGN TABLE tap_b PARTITION OF tap DEFAULT
  SERVER lsm_agg_srv OPTIONS (key 'id');
INSERT INTO tap SELECT id, g, i FROM ta_native;
ANALYZE tap_a, tap_b;
CREATE TABLE tap_native (id int8, g text, i int4) PARTITION BY LIST (g);
CREATE TABLE tap_native_a PARTITION OF tap_native FOR VALUES IN ('g1', 'g2');
CREATE TABLE tap_native_b PARTITION OF tap_native DEFAULT;
INSERT INTO tap_native SELECT id, g, i FROM ta_native;
SET enable_partitionwise_aggregate = on;
EXPLAIN (COSTS OFF) SELECT g, count(*), sum(i) FROM tap GROUP BY g;
SELECT (SELECT array_agg(x ORDER BY x) FROM (SELECT g || ':' || count(*) || ':' || sum(i) AS x FROM tap GROUP BY g) a)
     = (SELECT array_agg(x ORDER BY x) FROM (SELECT g || ':' || count(*) || ':' || sum(i) AS x FROM tap_native GROUP BY g) b)
  AS partitions_agree;
SELECT (SELECT array_agg(x ORDER BY x) FROM (SELECT i % 5 || ':' || count(*) AS x FROM tap GROUP BY i % 5) a)
     = (SELECT array_agg(x ORDER BY x) FROM (SELECT i % 5 || ':' || count(*) AS x FROM tap_native GROUP BY i % 5) b)
  AS partial_agree;
RESET enable_partitionwise_aggregate;
DROP TABLE tap, tap_native;

-- more groups than the planner expects (stale statistics) and than
-- hash_mem holds: the scan aggregates in several passes, each over the
-- whole table
CREATE FOREIGN TABLE ta_many (id int8 OPTIONS (key 'true'), x text, y int4)
  SERVER lsm_agg_srv;
CREATE TABLE ta_many_native (id int8 PRIMARY KEY, x text, y int4);
INSERT INTO ta_many_native SELECT n, 'x' || (n % 50), n % 7
  FROM generate_series(1, 30000) n;
INSERT INTO ta_many SELECT * FROM ta_many_native;
ANALYZE ta_many;
UPDATE ta_many SET x = 'x' || (id % 15000);
UPDATE ta_many_native SET x = 'x' || (id % 15000);
SET work_mem = '64kB';
SELECT pushed('SELECT x, count(*), sum(y) FROM ta_many GROUP BY x');
SELECT line FROM (SELECT regexp_replace(l, '[0-9]+', 'N', 'g') AS line
  FROM (SELECT * FROM explain_lines('SELECT x, count(*), sum(y) FROM ta_many GROUP BY x')) e(l)) s
  WHERE line LIKE '%Passes%';
SELECT same('SELECT x, count(*), sum(y) FROM ta_many GROUP BY x');
-- ... each pass over the same key range
SELECT pushed('SELECT x, count(*) FROM ta_many WHERE id < 20000 GROUP BY x');
SELECT line FROM (SELECT regexp_replace(l, '[0-9]+', 'N', 'g') AS line
  FROM (SELECT * FROM explain_lines('SELECT x, count(*) FROM ta_many WHERE id < 20000 GROUP BY x')) e(l)) s
  WHERE line LIKE '%Passes%';
SELECT same('SELECT x, count(*) FROM ta_many WHERE id < 20000 GROUP BY x');
SELECT same('SELECT x, count(*) FROM ta_many WHERE id BETWEEN 100 AND 25000 GROUP BY x');
BEGIN;
DELETE FROM ta_many WHERE id % 3 = 0;
DELETE FROM ta_many_native WHERE id % 3 = 0;
SELECT same('SELECT x, count(*), sum(y), min(y) FROM ta_many GROUP BY x');
ROLLBACK;
RESET work_mem;
DROP FOREIGN TABLE ta_many;
DROP TABLE ta_many_native;

-- off: the executor aggregates
SET lsm_fdw.aggregate_pushdown = off;
SELECT pushed('SELECT g, count(*) FROM ta GROUP BY g');
SELECT same('SELECT g, count(*) FROM ta GROUP BY g');
RESET lsm_fdw.aggregate_pushdown;

DROP FUNCTION same(text);
DROP FUNCTION pushed(text);
DROP FUNCTION explain_lines(text);
DROP TABLE agg_queries, ta_native, ta_empty_native;
DROP FOREIGN TABLE ta, ta_empty;
DROP SERVER lsm_agg_srv;
DROP COLLATION agg_ci;
DROP DOMAIN agg_pos;
DROP TYPE agg_mood;

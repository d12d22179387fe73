--
-- Access paths beyond the key lookup: key lists (IN, = ANY), key ranges,
-- key order for ORDER BY ... [DESC] LIMIT, value searches on non-key columns
-- (constants, generic plans, parameterized by a join), the GUC
-- lsm_fdw.value_search, EXPLAIN ANALYZE's engine counters.  EXPLAIN (COSTS
-- OFF) shows which path; every answer is compared with a native table.
--
CREATE SERVER lsm_paths_srv FOREIGN DATA WRAPPER lsm_fdw;
-- small memtables and files, so that the rows end in many SSTables on
-- several levels, under a value filter hierarchy
CREATE FOREIGN TABLE tw (id int8 OPTIONS (key 'true'), usr text, lang text,
  n int, body text)
  SERVER lsm_paths_srv
  OPTIONS (memtable_size '65536', file_size '32768');
CREATE TABLE tw_native (id int8 PRIMARY KEY, usr text, lang text, n int,
  body text);
INSERT INTO tw_native
  SELECT g, 'user' || (g * 7919 % 1000), (ARRAY['en','fr','de','ja'])[g % 4 + 1],
         CASE WHEN g % 13 = 0 THEN NULL ELSE g % 100 END,
         repeat('x', 20 + g % 30)
  FROM generate_series(1, 20000) g;
-- loaded in several transactions through the memtable (not as COPY loads:
-- bulk_insert_rows 0), so that flushes and compactions happen
SET lsm_fdw.bulk_insert_rows = 0;
INSERT INTO tw SELECT * FROM tw_native WHERE id <= 5000;
INSERT INTO tw SELECT * FROM tw_native WHERE id > 5000 AND id <= 10000;
INSERT INTO tw SELECT * FROM tw_native WHERE id > 10000 AND id <= 15000;
INSERT INTO tw SELECT * FROM tw_native WHERE id > 15000;
RESET lsm_fdw.bulk_insert_rows;

-- compares a query on tw with the same query on tw_native (as arrays of
-- rows, in the query's own order if ordered is true)
CREATE FUNCTION same(q text, ordered bool DEFAULT false) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  a text; b text;
  agg text := CASE WHEN ordered THEN 'array_agg(r::text)'
                   ELSE 'array_agg(r::text ORDER BY r::text)' END;
BEGIN
  EXECUTE format('SELECT %s FROM (%s) r', agg, q) INTO a;
  EXECUTE format('SELECT %s FROM (%s) r', agg,
                 replace(q, ' tw ', ' tw_native ')) INTO b;
  IF a IS DISTINCT FROM b THEN
    RAISE NOTICE 'differs: %', q;
  END IF;
  RETURN a IS NOT DISTINCT FROM b;
END $$;

-- key lists
EXPLAIN (COSTS OFF) SELECT * FROM tw WHERE id IN (5, 500, 5000, 50000);
SELECT id, usr FROM tw WHERE id IN (5, 500, 5000, 50000);
SELECT same('SELECT * FROM tw WHERE id IN (3, 3, 17, 19999, 20000, 20001, -1, NULL)');
SELECT same('SELECT * FROM tw WHERE id = ANY(ARRAY[7, 8, 9]::int4[])');
SELECT same('SELECT * FROM tw WHERE id IN (1, 2, 3) AND lang = ''fr''');
SELECT same('SELECT * FROM tw WHERE id = ANY(''{}''::int8[])');
SELECT same('SELECT * FROM tw WHERE id = ANY(NULL::int8[])');
SELECT same('SELECT * FROM tw WHERE id = ANY(ARRAY[[1, 2], [3, NULL]]::int8[])');
SELECT same('SELECT * FROM tw WHERE id <> ALL(ARRAY[1, 2, 3]) AND id < 10');
PREPARE by_ids(int8[]) AS SELECT id, usr FROM tw WHERE id = ANY($1);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_ids(ARRAY[1, 2]);
EXECUTE by_ids(ARRAY[4, 2, 4, NULL, 99999]);
EXECUTE by_ids(NULL);
RESET plan_cache_mode;
DEALLOCATE by_ids;

-- key ranges
EXPLAIN (COSTS OFF) SELECT * FROM tw WHERE id BETWEEN 100 AND 110;
SELECT id, lang FROM tw WHERE id BETWEEN 100 AND 105;
SELECT same('SELECT * FROM tw WHERE id > 19990');
SELECT same('SELECT * FROM tw WHERE id >= 19990');
SELECT same('SELECT * FROM tw WHERE id < 10');
SELECT same('SELECT * FROM tw WHERE id <= 10');
SELECT same('SELECT * FROM tw WHERE id > 10 AND id < 20 AND id >= 12 AND id <= 30');
SELECT same('SELECT * FROM tw WHERE 15 > id AND 10 <= id');
SELECT same('SELECT * FROM tw WHERE id > 20 AND id < 10');
SELECT same('SELECT * FROM tw WHERE id < 5::int2');
SELECT same('SELECT * FROM tw WHERE id > 9223372036854775807');
SELECT same('SELECT * FROM tw WHERE id < NULL::int8');
PREPARE by_range(int8, int8) AS SELECT id FROM tw WHERE id >= $1 AND id < $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_range(1, 2);
EXECUTE by_range(7, 10);
EXECUTE by_range(10, 7);
RESET plan_cache_mode;
DEALLOCATE by_range;

-- key order: ORDER BY key needs no Sort, and a LIMIT stops the scan
EXPLAIN (COSTS OFF) SELECT id FROM tw ORDER BY id LIMIT 3;
SELECT id FROM tw ORDER BY id LIMIT 3;
EXPLAIN (COSTS OFF) SELECT id FROM tw WHERE id > 1000 ORDER BY id LIMIT 3;
SELECT id FROM tw WHERE id > 1000 ORDER BY id LIMIT 3;
SELECT same('SELECT id, usr FROM tw WHERE id > 19000 ORDER BY id', true);
-- descending order: the engine's iterators run backwards, from the upper
-- bound down to the lower one
EXPLAIN (COSTS OFF) SELECT id FROM tw ORDER BY id DESC LIMIT 3;
SELECT id FROM tw ORDER BY id DESC LIMIT 3;
EXPLAIN (COSTS OFF) SELECT id FROM tw WHERE id < 1000 ORDER BY id DESC LIMIT 3;
SELECT id FROM tw WHERE id < 1000 ORDER BY id DESC LIMIT 3;
SELECT same('SELECT id, usr FROM tw ORDER BY id DESC', true);
SELECT same('SELECT id, usr FROM tw WHERE id > 19000 ORDER BY id DESC', true);
SELECT same('SELECT id FROM tw WHERE id > 100 AND id <= 5000 ORDER BY id DESC', true);
SELECT same('SELECT id FROM tw WHERE id >= 100 AND id < 5000 ORDER BY id DESC LIMIT 7', true);
SELECT same('SELECT id FROM tw WHERE id < 1 ORDER BY id DESC', true);
SELECT same('SELECT id FROM tw WHERE id > 20000 ORDER BY id DESC', true);
SELECT same('SELECT id FROM tw WHERE id < 20 AND id > 10 ORDER BY id DESC NULLS LAST', true);
EXPLAIN (COSTS OFF) SELECT id FROM tw WHERE id IN (5, 500, 50) ORDER BY id DESC;
SELECT same('SELECT id FROM tw WHERE id IN (5, 500, 50, 5, 70000) ORDER BY id DESC', true);
-- A range returns exactly the keys its bounds select, which the executor
-- does not check again: strict bounds, bounds beyond the key type's range
-- (a wider integer), texts longer than any key, two bounds on one side,
-- empty ranges, NULL; ascending and descending; constants here, the Params
-- of a generic plan below.  range_check compares every bound from vals
-- with each operator, and every pair of a lower and an upper bound, with a
-- native table of the same keys, and counts the queries that took the key
-- range path (the others check their quals).
CREATE FUNCTION range_check(f text, n text, vals text[],
  OUT queries int, OUT mismatches int, OUT key_ranges int)
LANGUAGE plpgsql AS $$
DECLARE
  a text;
  b text;
  lo text;
  hi text;
  dir text;
  q text;
  r1 text[];
  r2 text[];
  plan text;
BEGIN
  queries := 0;
  mismatches := 0;
  key_ranges := 0;
  FOREACH a IN ARRAY vals LOOP
    FOREACH lo IN ARRAY ARRAY['<', '<=', '>', '>=', '< NULL AND k <'] LOOP
      FOREACH b IN ARRAY vals || ARRAY[NULL] LOOP
        CONTINUE WHEN lo !~ '^>' AND b IS NOT NULL;
        FOREACH hi IN ARRAY CASE WHEN b IS NULL THEN ARRAY['']
                                 ELSE ARRAY['<', '<=', '> ' || a || ' AND k <'] END LOOP
          FOREACH dir IN ARRAY ARRAY['', 'DESC'] LOOP
            q := format('SELECT k::text FROM %%I WHERE k %s %s%s ORDER BY k %s',
                        lo, a, CASE WHEN b IS NULL THEN ''
                                    ELSE format(' AND k %s %s', hi, b) END, dir);
            EXECUTE format('SELECT array_agg(k) FROM (%s) x', format(q, f)) INTO r1;
            EXECUTE format('SELECT array_agg(k) FROM (%s) x', format(q, n)) INTO r2;
            EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || format(q, f) INTO plan;
            queries := queries + 1;
            key_ranges := key_ranges + (plan ~ 'key range')::int;
            IF r1 IS DISTINCT FROM r2 THEN
              mismatches := mismatches + 1;
              RAISE NOTICE 'differs: % (% against % rows)', left(format(q, f), 300),
                cardinality(r1), cardinality(r2);
            END IF;
          END LOOP;
        END LOOP;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
CREATE FOREIGN TABLE smalls (k int2 OPTIONS (key 'true')) SERVER lsm_paths_srv;
CREATE TABLE smalls_n (k int2 PRIMARY KEY);
INSERT INTO smalls_n VALUES (-32768), (-32767), (-2), (0), (1), (2), (32766),
  (32767);
INSERT INTO smalls SELECT * FROM smalls_n;
SELECT * FROM range_check('smalls', 'smalls_n',
  ARRAY['-32768', '-32767', '-1', '1', '32767', '32766::int2', '-40000',
        '40000::int4', '-5000000000', '5000000000', '1.5']);
CREATE FOREIGN TABLE ints (k int4 OPTIONS (key 'true')) SERVER lsm_paths_srv;
CREATE TABLE ints_n (k int4 PRIMARY KEY);
INSERT INTO ints_n VALUES (-2147483648), (-2147483647), (-1), (0), (7),
  (2147483646), (2147483647);
INSERT INTO ints SELECT * FROM ints_n;
SELECT * FROM range_check('ints', 'ints_n',
  ARRAY['-2147483648', '-2147483647::int8', '0::int2', '7', '8',
        '2147483647', '2147483646', '3000000000', '-3000000000',
        '9223372036854775807']);
CREATE FOREIGN TABLE bigs (k int8 OPTIONS (key 'true')) SERVER lsm_paths_srv;
CREATE TABLE bigs_n (k int8 PRIMARY KEY);
INSERT INTO bigs_n VALUES (-9223372036854775808), (-9223372036854775807),
  (0), (1), (9223372036854775806), (9223372036854775807);
INSERT INTO bigs SELECT * FROM bigs_n;
SELECT * FROM range_check('bigs', 'bigs_n',
  ARRAY['-9223372036854775808', '9223372036854775807', '0', '1::int2',
        '2147483647::int4', '9223372036854775806', '0.5']);
CREATE FOREIGN TABLE days (k date OPTIONS (key 'true')) SERVER lsm_paths_srv;
CREATE TABLE days_n (k date PRIMARY KEY);
INSERT INTO days_n VALUES ('-infinity'), ('1999-12-31'), ('2000-01-01'),
  ('2000-01-02'), ('infinity');
INSERT INTO days SELECT * FROM days_n;
SELECT * FROM range_check('days', 'days_n',
  ARRAY['''-infinity''::date', '''infinity''::date', '''2000-01-01''::date',
        '''1999-12-31''::date', '''2000-01-01 12:00''::timestamp']);
CREATE FOREIGN TABLE stamps (k timestamptz OPTIONS (key 'true'))
  SERVER lsm_paths_srv;
CREATE TABLE stamps_n (k timestamptz PRIMARY KEY);
INSERT INTO stamps_n VALUES ('-infinity'), ('2000-01-01 00:00+00'),
  ('2000-01-01 00:00:00.000001+00'), ('infinity');
INSERT INTO stamps SELECT * FROM stamps_n;
SELECT * FROM range_check('stamps', 'stamps_n',
  ARRAY['''-infinity''::timestamptz', '''infinity''::timestamptz',
        '''2000-01-01 00:00+00''::timestamptz',
        '''2000-01-01 00:00:00.000001+00''::timestamptz',
        '''1999-12-31 23:59:59.999999+00''::timestamptz']);
CREATE FOREIGN TABLE uuids (k uuid OPTIONS (key 'true')) SERVER lsm_paths_srv;
CREATE TABLE uuids_n (k uuid PRIMARY KEY);
INSERT INTO uuids_n VALUES ('00000000-0000-0000-0000-000000000000'),
  ('00000000-0000-0000-0000-000000000001'),
  ('80000000-0000-0000-0000-000000000000'),
  ('ffffffff-ffff-ffff-ffff-ffffffffffff');
INSERT INTO uuids SELECT * FROM uuids_n;
SELECT * FROM range_check('uuids', 'uuids_n',
  ARRAY['''00000000-0000-0000-0000-000000000000''::uuid',
        '''00000000-0000-0000-0000-000000000001''::uuid',
        '''7fffffff-ffff-ffff-ffff-ffffffffffff''::uuid',
        '''ffffffff-ffff-ffff-ffff-ffffffffffff''::uuid']);
-- keys up to the longest a key can be (65534 bytes), bounds beyond it
CREATE FOREIGN TABLE texts (k text OPTIONS (key 'true') COLLATE "C")
  SERVER lsm_paths_srv;
CREATE TABLE texts_n (k text COLLATE "C" PRIMARY KEY);
INSERT INTO texts_n VALUES (''), ('a'), ('ab'), ('b'), (repeat('a', 65534)),
  (repeat('a', 65533) || 'b'), (repeat('a', 65533) || ' ');
INSERT INTO texts SELECT * FROM texts_n;
SELECT * FROM range_check('texts', 'texts_n',
  ARRAY['''''::text', '''a''::text', '''ab''::varchar', '''aa''::text',
        'repeat(''a'', 65534)', 'repeat(''a'', 70000)',
        'repeat(''a'', 65533) || ''bc''']);
CREATE FOREIGN TABLE bytes (k bytea OPTIONS (key 'true')) SERVER lsm_paths_srv;
CREATE TABLE bytes_n (k bytea PRIMARY KEY);
INSERT INTO bytes_n VALUES (''), ('\x00'), ('\x0000'), ('\x01'), ('\xff');
INSERT INTO bytes SELECT * FROM bytes_n;
SELECT * FROM range_check('bytes', 'bytes_n',
  ARRAY['''''::bytea', '''\x00''::bytea', '''\x0001''::bytea',
        '''\xff''::bytea', '''\xff00''::bytea']);
-- generic plans: the bounds are known at execution only
PREPARE int_range(int8, int8) AS
  SELECT array_agg(k ORDER BY k) FROM ints WHERE k > $1 AND k <= $2;
PREPARE int_range_n(int8, int8) AS
  SELECT array_agg(k ORDER BY k) FROM ints_n WHERE k > $1 AND k <= $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE int_range(0, 1);
CREATE TABLE generic_ranges (a int8, b int8, f int4[], n int4[]);
INSERT INTO generic_ranges (a, b)
  SELECT a, b FROM unnest(ARRAY[-9223372036854775808, -3000000000,
    -2147483648, -2147483647, 0, 7, 2147483646, 2147483647, 3000000000,
    9223372036854775807]) a,
  unnest(ARRAY[-3000000000, -2147483648, 0, 7, 2147483647, 3000000000]) b;
DO $$
DECLARE
  r record;
  fa int4[];
  na int4[];
BEGIN
  FOR r IN SELECT * FROM generic_ranges LOOP
    EXECUTE format('EXECUTE int_range(%s, %s)', r.a, r.b) INTO fa;
    EXECUTE format('EXECUTE int_range_n(%s, %s)', r.a, r.b) INTO na;
    UPDATE generic_ranges SET f = fa, n = na WHERE a = r.a AND b = r.b;
  END LOOP;
END $$;
SELECT count(*) AS ranges,
  count(*) FILTER (WHERE f IS DISTINCT FROM n) AS mismatches
  FROM generic_ranges;
RESET plan_cache_mode;
DEALLOCATE int_range;
DEALLOCATE int_range_n;
DROP TABLE generic_ranges;
DROP FUNCTION range_check(text, text, text[]);
DROP FOREIGN TABLE smalls, ints, bigs, days, stamps, uuids, texts, bytes;
DROP TABLE smalls_n, ints_n, bigs_n, days_n, stamps_n, uuids_n, texts_n,
  bytes_n;

-- text keys: ranges and order follow bytes, so only under "C"
CREATE FOREIGN TABLE words (w text OPTIONS (key 'true') COLLATE "C", n int)
  SERVER lsm_paths_srv;
CREATE FOREIGN TABLE words_en (w text OPTIONS (key 'true') COLLATE "en-x-icu",
  n int)
  SERVER lsm_paths_srv;
INSERT INTO words VALUES ('a', 1), ('B', 2), ('b', 3), ('ab', 4), ('', 5);
INSERT INTO words_en SELECT * FROM words;
EXPLAIN (COSTS OFF) SELECT * FROM words WHERE w >= 'a' ORDER BY w;
SELECT * FROM words WHERE w >= 'a' ORDER BY w;
EXPLAIN (COSTS OFF) SELECT * FROM words WHERE w <= 'b' ORDER BY w DESC;
SELECT * FROM words WHERE w <= 'b' ORDER BY w DESC;
EXPLAIN (COSTS OFF) SELECT * FROM words_en WHERE w >= 'a' ORDER BY w;
SELECT * FROM words_en WHERE w >= 'a' ORDER BY w;
SELECT * FROM words_en WHERE w >= 'a' COLLATE "C" ORDER BY w COLLATE "C";
-- equality is bytewise under any deterministic collation: key lists serve it
INSERT INTO words_en SELECT 'w' || g, g FROM generate_series(1, 300) g;
EXPLAIN (COSTS OFF) SELECT * FROM words_en WHERE w IN ('a', 'B', 'x', NULL);
SELECT * FROM words_en WHERE w IN ('a', 'B', 'x', NULL) ORDER BY n;

-- value search on a non-key column
EXPLAIN (COSTS OFF) SELECT * FROM tw WHERE usr = 'user42';
SELECT same('SELECT * FROM tw WHERE usr = ''user42''');
SELECT same('SELECT * FROM tw WHERE usr = ''nobody''');
SELECT same('SELECT * FROM tw WHERE n = 7');
SELECT same('SELECT * FROM tw WHERE n = 7::int8');
SELECT same('SELECT * FROM tw WHERE n = 7000000000');
SELECT same('SELECT * FROM tw WHERE usr = ''user42'' AND n > 50');
SELECT same('SELECT * FROM tw WHERE usr = NULL');
PREPARE by_usr(text) AS SELECT * FROM tw WHERE usr = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_usr('user1');
CREATE TEMP TABLE found AS EXECUTE by_usr('user1');
SELECT (SELECT count(*) FROM found) = (SELECT count(*) FROM tw_native WHERE usr = 'user1') AS same_count;
DROP TABLE found;
RESET plan_cache_mode;
DEALLOCATE by_usr;

-- the GUC forces a strategy, or no value search; the rows are the same
SET lsm_fdw.value_search = hierarchy;
EXPLAIN (COSTS OFF) SELECT * FROM tw WHERE lang = 'fr';
SELECT same('SELECT * FROM tw WHERE usr = ''user7''');
SET lsm_fdw.value_search = flat;
SELECT same('SELECT * FROM tw WHERE usr = ''user7''');
SET lsm_fdw.value_search = leaves;
SELECT same('SELECT * FROM tw WHERE usr = ''user7''');
SET lsm_fdw.value_search = scan;
SELECT same('SELECT * FROM tw WHERE usr = ''user7''');
SET lsm_fdw.value_search = off;
EXPLAIN (COSTS OFF) SELECT * FROM tw WHERE usr = 'user7';
SET lsm_fdw.value_search = nonsense;
RESET lsm_fdw.value_search;

-- a value search parameterized by a join with a native table
CREATE TABLE people (usr text PRIMARY KEY, country text);
INSERT INTO people SELECT 'user' || g, (ARRAY['nz','se'])[g % 2 + 1]
  FROM generate_series(0, 20) g;
ANALYZE people;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
  SELECT p.country, t.id FROM people p JOIN tw t ON t.usr = p.usr
  WHERE p.country = 'nz';
SELECT same('SELECT p.country, t.id FROM people p JOIN tw t ON t.usr = p.usr WHERE p.country = ''nz''');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- LATERAL: a subquery that refers to another table is scanned once per row
-- of it, by a path parameterized by that table (here a key lookup, a key
-- list and a key range), and its references take that row's values
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
  SELECT a.id, ss.x FROM tw a
  LEFT JOIN LATERAL (SELECT a.n + 0 AS x FROM tw b WHERE b.id = a.id * 2) ss ON true
  WHERE a.id < 4;
SELECT a.id, ss.x FROM tw a
  LEFT JOIN LATERAL (SELECT a.n + 0 AS x FROM tw b WHERE b.id = a.id * 2) ss ON true
  WHERE a.id < 4 ORDER BY a.id;
SELECT same('SELECT a.id, ss.* FROM tw a LEFT JOIN LATERAL (SELECT a.n + 0 AS x, b FROM tw b WHERE b.id = a.id * 7000) ss ON true WHERE a.id < 5');
EXPLAIN (COSTS OFF)
  SELECT a.id, b.id FROM tw a,
  LATERAL (SELECT * FROM tw b WHERE b.id IN (a.id * 2, a.id * 3)) b
  WHERE a.id < 4;
SELECT same('SELECT a.id, b.id, b.usr FROM tw a, LATERAL (SELECT * FROM tw b WHERE b.id IN (a.id * 2, a.id * 3, NULL)) b WHERE a.id < 4');
EXPLAIN (COSTS OFF)
  SELECT a.id, b.id FROM tw a,
  LATERAL (SELECT * FROM tw b WHERE b.id > a.id AND b.id <= a.id + 2) b
  WHERE a.id < 4;
SELECT same('SELECT a.id, b.id FROM tw a, LATERAL (SELECT * FROM tw b WHERE b.id > a.id * 1000 AND b.id <= a.id * 1000 + 2) b WHERE a.id < 4');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- EXPLAIN ANALYZE: the engine's counters, checked for their meaning
CREATE FUNCTION plan_json(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO j;
  RETURN j -> 0 -> 'Plan';
END $$;
SET lsm_fdw.value_search = hierarchy;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT * FROM tw WHERE usr = 'user42';
RESET lsm_fdw.value_search;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT * FROM tw WHERE id IN (1, 2, 3, 3, 12345);
-- a present value: each table read holds a row, or is a false positive
SELECT p ->> 'LSM Access' AS access,
       (p ->> 'LSM Searches')::int AS searches,
       (p ->> 'LSM SSTables Read')::int <=
         (p ->> 'Actual Rows')::int + (p ->> 'LSM SSTables False')::int
         AS no_table_read_in_vain,
       (p ->> 'LSM SSTables False')::int <= 1 AS few_false_positives,
       (p ->> 'LSM Rows Validated')::int >= (p ->> 'Actual Rows')::int
         AS validated_every_row
  FROM plan_json('SELECT * FROM tw WHERE usr = ''user42''') p;
-- an absent value: (almost) nothing is read
SELECT (p ->> 'LSM SSTables Read')::int <= 1 AS at_most_one_table_read,
       (p ->> 'LSM Blocks Read')::int <= 1 AS at_most_one_block_read
  FROM plan_json('SELECT * FROM tw WHERE usr = ''nobody''') p;
SELECT p ->> 'LSM Access' AS access, (p ->> 'LSM Keys')::int AS keys,
       (p ->> 'LSM Key Hashes')::int AS hashes,
       (p ->> 'LSM SSTables Read')::int <= 1 AS at_most_one_table_read
  FROM plan_json('SELECT * FROM tw WHERE id = 12345') p;
SELECT p ->> 'LSM Access' AS access, (p ->> 'LSM Keys')::int AS keys,
       (p ->> 'LSM Key Hashes')::int AS hashes
  FROM plan_json('SELECT * FROM tw WHERE id IN (1, 2, 3, 3)') p;

-- the transaction's own writes are merged into every path
BEGIN;
INSERT INTO tw VALUES (30000, 'user42', 'en', 1, 'new');
INSERT INTO tw_native VALUES (30000, 'user42', 'en', 1, 'new');
UPDATE tw SET usr = 'user42' WHERE id = 1;
UPDATE tw_native SET usr = 'user42' WHERE id = 1;
DELETE FROM tw WHERE id IN (SELECT id FROM tw_native WHERE usr = 'user42' AND id > 1 ORDER BY id LIMIT 2);
DELETE FROM tw_native WHERE id IN (SELECT id FROM tw_native WHERE usr = 'user42' AND id > 1 ORDER BY id LIMIT 2);
SELECT same('SELECT * FROM tw WHERE usr = ''user42''');
SELECT same('SELECT * FROM tw WHERE id IN (1, 30000, 29999)');
SELECT same('SELECT * FROM tw WHERE id >= 29990');
SELECT same('SELECT * FROM tw WHERE id <= 3 ORDER BY id', true);
SELECT same('SELECT * FROM tw WHERE id <= 3 ORDER BY id DESC', true);
SELECT same('SELECT id, usr FROM tw ORDER BY id DESC LIMIT 5', true);
SELECT same('SELECT id, usr FROM tw WHERE id IN (1, 2, 30000) ORDER BY id DESC', true);
ROLLBACK;
SELECT same('SELECT * FROM tw WHERE usr = ''user42''');

DROP FUNCTION same(text, bool);
DROP FUNCTION plan_json(text);
DROP TABLE people;
DROP TABLE tw_native;
DROP FOREIGN TABLE tw, words, words_en;
DROP SERVER lsm_paths_srv;

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
-- loaded in several transactions, so that flushes and compactions happen
INSERT INTO tw SELECT * FROM tw_native WHERE id <= 5000;
INSERT INTO tw SELECT * FROM tw_native WHERE id > 5000 AND id <= 10000;
INSERT INTO tw SELECT * FROM tw_native WHERE id > 10000 AND id <= 15000;
INSERT INTO tw SELECT * FROM tw_native WHERE id > 15000;

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
-- a strict bound beyond the key type's range is clamped into it: the key
-- at the end of the range is still in (both directions)
CREATE FOREIGN TABLE small_keys (k int4 OPTIONS (key 'true'), v text)
  SERVER lsm_paths_srv;
INSERT INTO small_keys VALUES (2147483647, 'max'), (-2147483648, 'min'), (0, 'zero');
SELECT k FROM small_keys WHERE k < 3000000000::int8 ORDER BY k;
SELECT k FROM small_keys WHERE k < 3000000000::int8 ORDER BY k DESC;
SELECT k FROM small_keys WHERE k > -3000000000::int8 ORDER BY k DESC;
DROP FOREIGN TABLE small_keys;

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

--
-- Parallel scans.  A Gather over a parallel foreign scan: the leader shares
-- its snapshot of the store, and the participants read its key ranges
-- (docs/architecture.md, "Shared views").  Every answer is compared with a
-- native table; with pending writes in the transaction the leader reads
-- alone.
--
CREATE SERVER lsm_par_srv FOREIGN DATA WRAPPER lsm_fdw;
-- small memtables and files: many SSTables on several levels, and rows
-- in the memtable
CREATE FOREIGN TABLE tp (id int8 OPTIONS (key 'true'), grp int, val text)
  SERVER lsm_par_srv OPTIONS (memtable_size '65536', file_size '32768');
CREATE TABLE tp_native (id int8 PRIMARY KEY, grp int, val text);
INSERT INTO tp_native SELECT g, g % 7, md5(g::text)
  FROM generate_series(1, 30000) g;
SET lsm_fdw.bulk_insert_rows = 0;
INSERT INTO tp SELECT * FROM tp_native WHERE id % 3 = 0;
INSERT INTO tp SELECT * FROM tp_native WHERE id % 3 = 1;
RESET lsm_fdw.bulk_insert_rows;
INSERT INTO tp SELECT * FROM tp_native WHERE id % 3 = 2;
UPDATE tp SET val = 'u' || id WHERE id % 100 = 0;
UPDATE tp_native SET val = 'u' || id WHERE id % 100 = 0;
DELETE FROM tp WHERE id % 101 = 0;
DELETE FROM tp_native WHERE id % 101 = 0;
ANALYZE tp_native;

-- compares a query on tp with the same query on tp_native
CREATE FUNCTION same(q text) RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  a text; b text;
BEGIN
  EXECUTE format('SELECT array_agg(r::text ORDER BY r::text) FROM (%s) r', q)
    INTO a;
  EXECUTE format('SELECT array_agg(r::text ORDER BY r::text) FROM (%s) r',
                 replace(q, ' tp ', ' tp_native ')) INTO b;
  IF a IS DISTINCT FROM b THEN
    RAISE NOTICE 'differs: %', q;
  END IF;
  RETURN a IS NOT DISTINCT FROM b;
END $$;

-- aggregates computed by the workers' scans, not by the scan itself
SET lsm_fdw.aggregate_pushdown = off;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- full scans
EXPLAIN (COSTS OFF) SELECT count(*) FROM tp;
SELECT count(*), sum(grp) FROM tp;
SELECT same('SELECT count(*), sum(grp), min(val), max(val) FROM tp');
SELECT same('SELECT grp, count(*), max(id), sum(length(val)) FROM tp GROUP BY grp');
SELECT same('SELECT * FROM tp');
SELECT same('SELECT * FROM tp WHERE val LIKE ''u%''');

-- key ranges: each bound inside some range of the split, or outside all
EXPLAIN (COSTS OFF) SELECT count(*) FROM tp WHERE id > 1000 AND id <= 29000;
SELECT same('SELECT count(*), sum(id) FROM tp WHERE id > 10000 AND id <= 20000');
SELECT same('SELECT * FROM tp WHERE id >= 29000');
SELECT same('SELECT * FROM tp WHERE id > 29990');
SELECT same('SELECT * FROM tp WHERE id < 100');
SELECT same('SELECT * FROM tp WHERE id >= 5000 AND id < 5010');
SELECT same('SELECT * FROM tp WHERE id > 5000 AND id <= 5010');
SELECT same('SELECT * FROM tp WHERE id > 20 AND id < 10');
SELECT same('SELECT * FROM tp WHERE id > 40000');
SELECT same('SELECT * FROM tp WHERE id < NULL::int8');

-- EXPLAIN ANALYZE: the key ranges (of a value search, the blocks) each
-- participant read
CREATE FUNCTION ranges(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  line text; m text[]; v text; total int; s int := 0;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    m := regexp_match(line, 'LSM (?:Key Ranges|Blocks Read): (.*)$');
    CONTINUE WHEN m IS NULL;
    IF m[1] LIKE 'none%' THEN
      RETURN m[1];
    END IF;
    total := split_part(m[1], ' ', 1)::int;
    FOREACH v IN ARRAY regexp_split_to_array(substring(m[1] from '\((.*)\)'), ', ') LOOP
      s := s + regexp_replace(v, '.* ', '')::int;
    END LOOP;
    RETURN CASE WHEN total > 0 AND total = s
                THEN 'ranges read, counted per participant, add up'
                ELSE m[1] END;
  END LOOP;
  RETURN 'no LSM Key Ranges line';
END $$;
SELECT ranges('SELECT count(*) FROM tp');
SELECT ranges('SELECT count(*) FROM tp WHERE id > 1000 AND id <= 29000');

-- value searches: the participants split the search's blocks, with every
-- strategy; rows in the memtable, overwritten and deleted ones included
SET lsm_fdw.value_search = hierarchy;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tp WHERE grp = 3;
SELECT ranges('SELECT count(*) FROM tp WHERE grp = 3');
SELECT same('SELECT * FROM tp WHERE grp = 3');
SELECT same('SELECT * FROM tp WHERE val = ''u500''');
SELECT same('SELECT * FROM tp WHERE val = md5(''77'')');
SELECT same('SELECT count(*) FROM tp WHERE grp = 9');
SELECT same('SELECT count(*) FROM tp WHERE grp = NULL::int');
SELECT same('SELECT count(*), sum(id) FROM tp WHERE grp = 4 AND id > 15000');
SET lsm_fdw.value_search = flat;
SELECT same('SELECT * FROM tp WHERE grp = 5');
SET lsm_fdw.value_search = leaves;
SELECT same('SELECT * FROM tp WHERE grp = 6');
SET lsm_fdw.value_search = scan;
SELECT same('SELECT * FROM tp WHERE grp = 0');
SET lsm_fdw.value_search = hierarchy;
-- a Param the workers evaluate, under a generic plan
PREPARE par_search(int) AS SELECT count(*), sum(id) FROM tp WHERE grp = $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE par_search(2);
SELECT (SELECT count(*) || ':' || sum(id) FROM tp WHERE grp = 2) =
       (SELECT count(*) || ':' || sum(id) FROM tp_native WHERE grp = 2)
  AS search_agrees;
EXECUTE par_search(2);
SELECT count(*), sum(id) FROM tp_native WHERE grp = 2;
RESET plan_cache_mode;
RESET lsm_fdw.value_search;

-- a join, and a Gather rescanned under a nested loop
SELECT same('SELECT n.grp AS g, count(*) FROM tp JOIN tp_native n USING (id) WHERE n.val < ''8'' GROUP BY 1');
SELECT same('SELECT v.x, s.* FROM (VALUES (1), (2), (5)) v(x), LATERAL (SELECT count(*), max(id) FROM tp WHERE grp = v.x) s');

-- foreign partitions, compared with the same rows in heap partitions, and
-- a join with the native table in both directions
CREATE TABLE pp (id int8, grp int, val text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE pp_low PARTITION OF pp FOR VALUES FROM (0) TO (15000)
  SERVER lsm_par_srv OPTIONS (key 'id');
CREATE FOREIGN TABLE pp_high PARTITION OF pp FOR VALUES FROM (15000) TO (100000)
  SERVER lsm_par_srv OPTIONS (key 'id');
INSERT INTO pp SELECT * FROM tp_native;
CREATE TABLE pp_native (id int8, grp int, val text) PARTITION BY RANGE (id);
CREATE TABLE pp_native_low PARTITION OF pp_native FOR VALUES FROM (0) TO (15000);
CREATE TABLE pp_native_high PARTITION OF pp_native FOR VALUES FROM (15000) TO (100000);
INSERT INTO pp_native SELECT * FROM tp_native;
EXPLAIN (COSTS OFF) SELECT grp, count(*) FROM pp GROUP BY grp;
SELECT (SELECT array_agg(x ORDER BY grp) FROM (SELECT grp, count(*) || ':' || sum(id) AS x FROM pp GROUP BY grp) a)
     = (SELECT array_agg(x ORDER BY grp) FROM (SELECT grp, count(*) || ':' || sum(id) AS x FROM pp_native GROUP BY grp) b)
  AS partitions_agree;
SELECT (SELECT count(*) || ':' || sum(p.id) FROM pp p JOIN tp_native n ON n.id = p.id WHERE n.grp = 2)
     = (SELECT count(*) || ':' || sum(p.id) FROM pp_native p JOIN tp_native n ON n.id = p.id WHERE n.grp = 2)
  AS foreign_outer_agrees;
SELECT (SELECT count(*) || ':' || sum(n.id) FROM tp_native n JOIN pp p ON p.id = n.id WHERE p.id BETWEEN 9000 AND 21000)
     = (SELECT count(*) || ':' || sum(n.id) FROM tp_native n JOIN pp_native p ON p.id = n.id WHERE p.id BETWEEN 9000 AND 21000)
  AS foreign_inner_agrees;
DROP TABLE pp, pp_native;

-- a generic plan made before the transaction wrote: the leader reads alone
PREPARE par_count(int8) AS SELECT count(*), sum(id) FROM tp WHERE id > $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE par_count(100);
EXECUTE par_count(100);
BEGIN;
INSERT INTO tp VALUES (40000, 1, 'new'), (40001, 2, 'new');
DELETE FROM tp WHERE id = 200;
UPDATE tp SET grp = 99 WHERE id = 300;
EXECUTE par_count(100);
SELECT ranges('EXECUTE par_count(100)');
SET lsm_fdw.value_search = hierarchy;
EXECUTE par_search(99);
SELECT ranges('EXECUTE par_search(99)');
RESET lsm_fdw.value_search;
SELECT count(*), sum(grp) FROM tp;
SELECT id, grp, val FROM tp WHERE id > 39999;
-- the workers cannot read the pending writes: a new plan has no workers,
-- and without the leader the cached one fails
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tp;
SELECT count(*) FROM tp;
EXECUTE par_count(100);
ROLLBACK;
RESET plan_cache_mode;
EXECUTE par_count(100);
DEALLOCATE par_count;
EXECUTE par_search(99);
DEALLOCATE par_search;

-- the workers alone, on a shared snapshot
SET parallel_leader_participation = off;
SELECT same('SELECT count(*), sum(grp), max(val) FROM tp');
SELECT same('SELECT * FROM tp WHERE id BETWEEN 777 AND 12345');
SET lsm_fdw.value_search = hierarchy;
SELECT same('SELECT * FROM tp WHERE grp = 1');
RESET lsm_fdw.value_search;
RESET parallel_leader_participation;

-- (REPEATABLE READ against concurrent writers and compactions:
-- test/pg/parallel.sh)

-- lookups and scans that read by themselves stay out of workers
SET force_parallel_mode = regress;
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE id = 5;
SELECT * FROM tp WHERE id = 5;
SELECT same('SELECT * FROM tp WHERE id IN (6, 7, 8)');
RESET force_parallel_mode;

RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
RESET lsm_fdw.aggregate_pushdown;
DROP FUNCTION same(text);
DROP FUNCTION ranges(text);
DROP FOREIGN TABLE tp;
DROP TABLE tp_native;
DROP SERVER lsm_par_srv;

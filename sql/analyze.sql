--
-- ANALYZE of lsm_fdw tables: pg_stats and pg_class are filled from a
-- random sample of the store's rows, and the planner uses them.
--
CREATE SERVER lsm_analyze_srv FOREIGN DATA WRAPPER lsm_fdw;
-- 5000 rows: color is 'common' in 60% of them and one of 97 rare values
-- otherwise, n cycles through 50 values, note is NULL in every 4th row
CREATE FOREIGN TABLE samples (
  id int OPTIONS (key 'true'),
  color text,
  n int,
  note text
) SERVER lsm_analyze_srv;
INSERT INTO samples
  SELECT g, CASE WHEN g % 10 < 6 THEN 'common' ELSE 'rare' || (g % 97) END,
         g % 50, CASE WHEN g % 4 = 0 THEN NULL ELSE 'note ' || g END
  FROM generate_series(1, 5000) g;

-- the planner's row estimate for a query, from EXPLAIN (FORMAT JSON)
CREATE FUNCTION plan_rows(query text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
-- whether an estimate is within a factor of 1.5 of the true count
CREATE FUNCTION near(estimate float8, actual float8) RETURNS boolean
LANGUAGE sql AS $$ SELECT estimate BETWEEN actual / 1.5 AND actual * 1.5 $$;

-- before ANALYZE: no statistics, a default selectivity
SELECT count(*) FROM pg_stats WHERE tablename = 'samples';
SELECT relpages, reltuples FROM pg_class WHERE relname = 'samples';
SELECT near(plan_rows($$SELECT * FROM samples WHERE color = 'common'$$),
            (SELECT count(*) FROM samples WHERE color = 'common'))
  AS common_estimate_ok;

-- a sample of every row (5000 < 300 x default_statistics_target)
ANALYZE VERBOSE samples;
SELECT relpages > 0 AS has_pages, reltuples FROM pg_class
  WHERE relname = 'samples';
SELECT attname, null_frac, n_distinct FROM pg_stats
  WHERE tablename = 'samples' ORDER BY attname;
SELECT (most_common_vals::text::text[]) [1] AS most_common,
       (most_common_freqs) [1] AS freq
  FROM pg_stats WHERE tablename = 'samples' AND attname = 'color';

-- the planner now knows that 'common' is common, and that a rare value is
-- rare
SELECT near(plan_rows($$SELECT * FROM samples WHERE color = 'common'$$),
            (SELECT count(*) FROM samples WHERE color = 'common'))
  AS common_estimate_ok;
SELECT near(plan_rows($$SELECT * FROM samples WHERE color = 'rare5'$$),
            (SELECT count(*) FROM samples WHERE color = 'rare5'))
  AS rare_estimate_ok;
SELECT near(plan_rows($$SELECT * FROM samples WHERE note IS NULL$$),
            (SELECT count(*) FROM samples WHERE note IS NULL))
  AS null_estimate_ok;

-- a sample of 3000 of the 5000 rows (reservoir sampling): the statistics
-- are estimates now, checked with margins
SET default_statistics_target = 10;
ANALYZE VERBOSE samples;
RESET default_statistics_target;
SELECT reltuples FROM pg_class WHERE relname = 'samples';
SELECT attname,
       CASE attname WHEN 'note' THEN null_frac BETWEEN 0.2 AND 0.3
                    ELSE null_frac = 0 END AS null_frac_ok,
       sign(n_distinct) AS n_distinct_sign,
       CASE attname WHEN 'color' THEN n_distinct BETWEEN 90 AND 100
                    WHEN 'n' THEN n_distinct BETWEEN 45 AND 50
                    WHEN 'id' THEN n_distinct = -1
                    ELSE n_distinct BETWEEN -0.8 AND -0.7 END AS n_distinct_ok
  FROM pg_stats WHERE tablename = 'samples' ORDER BY attname;
SELECT (most_common_vals::text::text[]) [1] AS most_common,
       (most_common_freqs) [1] BETWEEN 0.55 AND 0.65 AS freq_ok
  FROM pg_stats WHERE tablename = 'samples' AND attname = 'color';
SELECT near(plan_rows($$SELECT * FROM samples WHERE color = 'common'$$),
            (SELECT count(*) FROM samples WHERE color = 'common'))
  AS common_estimate_ok;

-- the sample sees live rows only: deleted and overwritten versions are not
-- counted
DELETE FROM samples WHERE id <= 1000;
UPDATE samples SET n = n + 1 WHERE id <= 2000;
ANALYZE samples;
SELECT reltuples FROM pg_class WHERE relname = 'samples';

-- a column list; a dropped column
ALTER FOREIGN TABLE samples DROP COLUMN note;
ANALYZE samples (color, n);
SELECT attname FROM pg_stats WHERE tablename = 'samples' ORDER BY attname;
ANALYZE samples;
SELECT count(*) FROM pg_stats WHERE tablename = 'samples';

-- ANALYZE reads the committed rows: a transaction's own pending writes are
-- not sampled
BEGIN;
INSERT INTO samples SELECT g, 'new', 0 FROM generate_series(10001, 10100) g;
ANALYZE samples;
SELECT reltuples FROM pg_class WHERE relname = 'samples';
ROLLBACK;

-- an empty table
CREATE FOREIGN TABLE empty_samples (id int OPTIONS (key 'true'), v text)
  SERVER lsm_analyze_srv;
ANALYZE VERBOSE empty_samples;
SELECT relpages, reltuples FROM pg_class WHERE relname = 'empty_samples';
SELECT count(*) FROM pg_stats WHERE tablename = 'empty_samples';

-- every column type of the codec
CREATE FOREIGN TABLE typed_samples (
  k text OPTIONS (key 'true'),
  b bool, i2 int2, i8 int8, f4 float4, f8 float8, c char(4), by bytea,
  u uuid, d date, ts timestamp, tz timestamptz, num numeric, js jsonb
) SERVER lsm_analyze_srv;
INSERT INTO typed_samples
  SELECT 'k' || g, g % 2 = 0, g, g * 1000000000::int8, g / 3.0, g / 7.0, 'c' || g % 5,
         decode(lpad(to_hex(g), 8, '0'), 'hex'),
         ('00000000-0000-0000-0000-' || lpad(to_hex(g), 12, '0'))::uuid,
         date '2024-01-01' + g, timestamp '2024-01-01' + g * interval '1 hour',
         timestamptz '2024-01-01 00:00+00' + g * interval '1 minute',
         g / 4.0, jsonb_build_object('g', g % 3)
  FROM generate_series(1, 200) g;
ANALYZE typed_samples;
SELECT attname, null_frac, n_distinct FROM pg_stats
  WHERE tablename = 'typed_samples' ORDER BY attname;

DROP FUNCTION plan_rows(text);
DROP FUNCTION near(float8, float8);
DROP SERVER lsm_analyze_srv CASCADE;

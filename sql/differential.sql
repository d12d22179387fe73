--
-- Differential test: a foreign table and a native table hold the same rows,
-- and a few hundred generated queries must give the same answers on both:
-- key equality, IN lists and = ANY(array), key ranges of every shape,
-- ORDER BY key [DESC] LIMIT, equality and IS NULL on every column, AND/OR,
-- joins on the key and on other columns (hash, merge and nested loops with
-- parameterized inner scans), generic plans of prepared statements.  A
-- fixed list of planner shapes (LATERAL subqueries and functions, whole-row
-- references, correlated subqueries, EXISTS, window functions, grouping,
-- UNION ALL, CTEs) runs under several join methods, generic plans and
-- forced parallel plans, on a second pair of tables too; the random
-- queries also run on a partitioned table whose partitions are foreign
-- tables (pruning, partitionwise joins and aggregates).  Then
-- random writes go to both tables (inserts, updates of values and of keys,
-- deletes, in transactions that commit or roll back, with savepoints that
-- roll back), with queries inside the transactions, and the queries run
-- again.  Whatever access paths the FDW grows, its answers must stay those
-- of the native table.
--
-- Generation is deterministic (setseed), so the output is: how many
-- queries ran, and how many mismatched (0).  A mismatch prints the query
-- (with @T for the table, @S for the second one) and the two answers'
-- sizes, so a diff shows it.
-- Answers are compared as the text of their rows, sorted, or in their
-- order for ORDER BY ... LIMIT: values must come back exactly (numeric
-- scale, NaN and infinities), not only equal.  (No -0.0 in the data: the
-- FDW stores it as 0, see types.sql.)
--
CREATE SERVER lsm_diff_srv FOREIGN DATA WRAPPER lsm_fdw;
-- a small memtable: the rows spread over several levels of tables
CREATE FOREIGN TABLE diff_f (
  k  int8 OPTIONS (key 'true'),
  i4 int4,
  t  text,
  f8 float8,
  b  bool,
  d  date,
  n  numeric
) SERVER lsm_diff_srv OPTIONS (memtable_size '128kB', file_size '256kB');
CREATE TABLE diff_n (
  k  int8 PRIMARY KEY,
  i4 int4,
  t  text,
  f8 float8,
  b  bool,
  d  date,
  n  numeric
);

-- 20000 rows with keys spread over -50000..50002 (g * 37 mod a prime), the
-- extremes of int8 and a few around 0; NULLs in every value column, few
-- distinct values per column (so that equality finds many rows), equal
-- numerics of different scales (1.25 and 1.250), float specials.
INSERT INTO diff_n
SELECT (g * 37) % 100003 - 50000,
  CASE WHEN g % 11 = 0 THEN NULL ELSE (g * 7) % 50 - 25 END,
  CASE WHEN g % 13 = 0 THEN NULL WHEN g % 29 = 0 THEN ''
       ELSE 'v' || (g * 3) % 97 END,
  CASE WHEN g % 17 = 0 THEN NULL WHEN g % 211 = 0 THEN 'NaN'::float8
       WHEN g % 223 = 0 THEN 'Infinity'::float8
       WHEN g % 227 = 0 THEN '-Infinity'::float8
       ELSE (g % 1000) / 8.0 END,
  CASE WHEN g % 7 = 0 THEN NULL ELSE g % 3 = 0 END,
  CASE WHEN g % 19 = 0 THEN NULL WHEN g % 401 = 0 THEN 'infinity'::date
       ELSE date '2000-01-01' + (g * 11) % 3000 END,
  CASE WHEN g % 23 = 0 THEN NULL
       WHEN g % 2 = 0 THEN ((g % 500) - 250)::numeric / 4
       ELSE round(((g % 500) - 250)::numeric / 4, 3) END
FROM generate_series(1, 20000) g;
INSERT INTO diff_n (k, i4, t) VALUES
  (-9223372036854775808, 1, 'min'), (-9223372036854775807, 2, 'min+1'),
  (9223372036854775807, 3, 'max'), (9223372036854775806, 4, 'max-1'),
  (0, 0, 'zero'), (-1, -1, 'minus one'), (1, 1, 'one')
ON CONFLICT DO NOTHING;
INSERT INTO diff_f SELECT * FROM diff_n;
SELECT count(*) AS rows, count(DISTINCT k) AS keys FROM diff_f;

-- The outer side of joins: keys that exist, keys that do not, NULLs,
-- duplicates, extremes; values of i4 in and out of its range.
CREATE TABLE diff_probe (pk int8, pi4 int4, tag text);
INSERT INTO diff_probe
SELECT CASE WHEN g % 9 = 0 THEN NULL
            WHEN g % 3 = 0 THEN g * 1009 - 30000
            ELSE ((g * 613) * 37) % 100003 - 50000 END,
       CASE WHEN g % 8 = 0 THEN NULL ELSE g % 60 - 30 END,
       'p' || g
FROM generate_series(1, 60) g;
INSERT INTO diff_probe VALUES (-9223372036854775808, 0, 'min'),
  (9223372036854775807, 0, 'max'), (0, 1, 'zero'),
  ((613 * 37) % 100003 - 50000, 5, 'dup');

-- A second pair, keyed on a smallint, for joins of two foreign tables: its
-- keys and values meet the first pair's keys, i4 values and diff_probe's pi4.
CREATE FOREIGN TABLE diff_sf (k int2 OPTIONS (key 'true'), v int4, w text)
  SERVER lsm_diff_srv;
CREATE TABLE diff_sn (k int2 PRIMARY KEY, v int4, w text);
INSERT INTO diff_sn
SELECT g, CASE WHEN g % 10 = 0 THEN NULL ELSE (g * 37) % 100003 - 50000 END,
  CASE WHEN g % 7 = 0 THEN NULL ELSE 'v' || g % 97 END
FROM generate_series(-40, 160) g;
INSERT INTO diff_sf SELECT * FROM diff_sn;
ANALYZE diff_n, diff_probe, diff_sn;

-- A random key: mostly one of the loaded keys, else anywhere around them,
-- sometimes an extreme of int8.
CREATE FUNCTION diff_rkey() RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
  r float8 := random();
BEGIN
  IF r < 0.55 THEN
    RETURN ((1 + floor(random() * 20000)::int8) * 37) % 100003 - 50000;
  ELSIF r < 0.93 THEN
    RETURN floor(random() * 120001)::int8 - 60000;
  END IF;
  RETURN (ARRAY[-9223372036854775808, -9223372036854775807,
                9223372036854775807, 9223372036854775806, 0, -1, 1]::int8[])
         [1 + floor(random() * 7)::int];
END $$;

-- n random keys as a comma-separated list (duplicates possible), with a
-- NULL among them if with_null.
CREATE FUNCTION diff_rkeys(n int, with_null bool) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  s text := '';
BEGIN
  FOR i IN 1..n LOOP
    s := s || CASE WHEN i > 1 THEN ', ' ELSE '' END || diff_rkey();
  END LOOP;
  IF with_null THEN
    s := s || ', NULL';
  END IF;
  RETURN s;
END $$;

-- A random value of column col as an SQL literal: mostly one that the data
-- holds, sometimes one it does not, sometimes NULL.
CREATE FUNCTION diff_rlit(col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r float8 := random();
BEGIN
  IF r < 0.05 THEN
    -- typed, so that it can stand for a column in INSERT ... SELECT
    RETURN 'NULL::' || CASE col WHEN 'k' THEN 'int8' WHEN 'i4' THEN 'int4'
      WHEN 't' THEN 'text' WHEN 'f8' THEN 'float8' WHEN 'b' THEN 'bool'
      WHEN 'd' THEN 'date' ELSE 'numeric' END;
  END IF;
  CASE col
    WHEN 'k' THEN
      RETURN diff_rkey()::text;
    WHEN 'i4' THEN
      RETURN (floor(random() * 60)::int - 30)::text;
    WHEN 't' THEN
      RETURN CASE WHEN r < 0.1 THEN quote_literal('')
                  WHEN r < 0.13 THEN quote_literal('V1')
                  WHEN r < 0.18 THEN quote_literal('moved')   -- by writes
                  ELSE quote_literal('v' || floor(random() * 100)) END;
    WHEN 'f8' THEN
      RETURN CASE WHEN r < 0.1 THEN '''NaN''::float8'
                  WHEN r < 0.13 THEN '''Infinity''::float8'
                  WHEN r < 0.16 THEN '''-Infinity''::float8'
                  ELSE (floor(random() * 1100) / 8.0)::text || '::float8' END;
    WHEN 'b' THEN
      RETURN (r < 0.5)::text;
    WHEN 'd' THEN
      RETURN CASE WHEN r < 0.08 THEN '''infinity''::date'
                  ELSE quote_literal(to_char(date '2000-01-01' +
                         floor(random() * 3100)::int, 'YYYY-MM-DD')) || '::date' END;
    WHEN 'n' THEN
      -- the same number written with several scales
      RETURN CASE WHEN r < 0.5
                  THEN ((floor(random() * 500) - 250)::numeric / 4)::text
                  ELSE round((floor(random() * 500) - 250)::numeric / 4, 2)::text
             END;
  END CASE;
END $$;

-- A random column other than the key.
CREATE FUNCTION diff_rcol() RETURNS text LANGUAGE sql AS $$
  SELECT (ARRAY['i4', 't', 'f8', 'b', 'd', 'n'])[1 + floor(random() * 6)::int]
$$;

-- A random condition on the key: a comparison, a range, BETWEEN (possibly
-- empty), with bounds of other types (int4, numeric, and numeric beyond the
-- range of int8), bounded twice on one side, two ranges ORed.
CREATE FUNCTION diff_rrange() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  a int8 := diff_rkey();
  -- numeric: near the ends of int8, a bound can be beyond them
  b numeric := a::numeric + floor(random() * 3000)::int - 300;
  r int := floor(random() * 12)::int;
BEGIN
  IF b < a AND a > 0 AND random() < 0.5 THEN
    b := a;                               -- a one-key range
  END IF;
  CASE r
    WHEN 0 THEN RETURN format('k < %s', a);
    WHEN 1 THEN RETURN format('k <= %s', a);
    WHEN 2 THEN RETURN format('k > %s', a);
    WHEN 3 THEN RETURN format('k >= %s', a);
    WHEN 4 THEN RETURN format('k BETWEEN %s AND %s', a, b);
    WHEN 5 THEN RETURN format('k BETWEEN SYMMETRIC %s AND %s', b, a);
    WHEN 6 THEN RETURN format('k > %s AND k < %s', a, b);
    WHEN 7 THEN RETURN format('k >= %s AND k <= %s AND k > %s', a, b, a::numeric - 5);
    WHEN 8 THEN RETURN format('%s <= k AND %s > k', a, b);
    WHEN 9 THEN RETURN format('k >= %s::numeric + 0.5 AND k < %s', a, b);
    WHEN 10 THEN RETURN format('k > %s::int4 AND k <= %s::int4',
                               greatest(least(a, 2147483647), -2147483648),
                               greatest(least(b, 2147483647), -2147483648));
    ELSE RETURN format('k < %s OR k > %s', a, b);
  END CASE;
END $$;

-- A random query on the table @T, and whether its answer is ordered (ORDER
-- BY ... LIMIT: the order is compared too).
CREATE FUNCTION diff_rquery(OUT q text, OUT ordered bool)
LANGUAGE plpgsql AS $$
DECLARE
  c text := diff_rcol();
  r int := floor(random() * 36)::int;
  lo int;
BEGIN
  ordered := false;
  CASE r
    -- the key: equality, lists, arrays
    WHEN 0, 1 THEN q := format('SELECT * FROM @T WHERE k = %s', diff_rkey());
    WHEN 2 THEN q := format('SELECT * FROM @T WHERE %s = k', diff_rkey());
    WHEN 3 THEN q := format('SELECT * FROM @T WHERE k = %s::int4',
                            floor(random() * 120001)::int - 60000);
    WHEN 4, 5 THEN q := format('SELECT * FROM @T WHERE k IN (%s)',
                               diff_rkeys(1 + floor(random() * 20)::int,
                                          random() < 0.2));
    WHEN 6 THEN q := format('SELECT * FROM @T WHERE k = ANY (''{%s}''::int8[])',
                            CASE WHEN random() < 0.1 THEN ''
                                 ELSE diff_rkeys(1 + floor(random() * 30)::int,
                                                 random() < 0.2) END);
    WHEN 7 THEN q := format('SELECT * FROM @T WHERE k = ANY (ARRAY[%s]::int4[])',
                            (SELECT string_agg((floor(random() * 120001)::int
                                                - 60000)::text, ', ')
                             FROM generate_series(1, 1 + floor(random() * 10)::int)));
    WHEN 8 THEN q := format('SELECT * FROM @T WHERE k = %s OR k = %s OR k = %s',
                            diff_rkey(), diff_rkey(), diff_rkey());
    WHEN 9 THEN q := format('SELECT * FROM @T WHERE k NOT IN (%s) AND %s',
                            diff_rkeys(5, false), diff_rrange());
    WHEN 10 THEN q := format('SELECT * FROM @T WHERE k IN (%s) AND %s IS NULL',
                             diff_rkeys(15, false), c);
    WHEN 11 THEN q := format('SELECT k, t FROM @T WHERE k = ANY (ARRAY(SELECT pk FROM diff_probe WHERE pi4 > %s))',
                             floor(random() * 60)::int - 30);
    -- ranges
    WHEN 12, 13, 14 THEN q := format('SELECT * FROM @T WHERE %s', diff_rrange());
    WHEN 15 THEN q := format('SELECT min(k), max(k), count(*), count(%s) FROM @T WHERE %s',
                             c, diff_rrange());
    WHEN 16 THEN q := format('SELECT * FROM @T WHERE (%s) AND %s = %s',
                             diff_rrange(), c, diff_rlit(c));
    -- order by the key, limit
    WHEN 17, 18 THEN
      q := format('SELECT * FROM @T %s ORDER BY k %s LIMIT %s',
                  CASE WHEN random() < 0.7 THEN 'WHERE ' || diff_rrange() ELSE '' END,
                  CASE WHEN random() < 0.5 THEN 'DESC' ELSE '' END,
                  floor(random() * 50)::int);
      ordered := true;
    WHEN 19 THEN
      q := format('SELECT k, %s FROM @T WHERE k %s %s ORDER BY k %s LIMIT %s OFFSET %s',
                  c, (ARRAY['<', '<=', '>', '>='])[1 + floor(random() * 4)::int],
                  diff_rkey(), CASE WHEN random() < 0.5 THEN 'DESC' ELSE 'ASC' END,
                  floor(random() * 20)::int, floor(random() * 10)::int);
      ordered := true;
    WHEN 20 THEN
      q := format('SELECT max(k) FROM @T WHERE k < %s', diff_rkey());
    -- other columns
    WHEN 21, 22, 23 THEN q := format('SELECT * FROM @T WHERE %s = %s', c, diff_rlit(c));
    WHEN 24 THEN q := format('SELECT * FROM @T WHERE %s IN (%s, %s, %s)',
                             c, diff_rlit(c), diff_rlit(c), diff_rlit(c));
    WHEN 25 THEN q := format('SELECT k, %s FROM @T WHERE %s IS %s NULL AND %s',
                             c, c, CASE WHEN random() < 0.5 THEN 'NOT' ELSE '' END,
                             diff_rrange());
    WHEN 26 THEN q := format('SELECT * FROM @T WHERE %s = %s OR k = %s',
                             c, diff_rlit(c), diff_rkey());
    WHEN 27 THEN q := format('SELECT k, b FROM @T WHERE %s AND (%s)',
                             (ARRAY['b', 'NOT b', 'b IS NOT TRUE', 'b IS UNKNOWN'])
                               [1 + floor(random() * 4)::int], diff_rrange());
    WHEN 28 THEN q := format('SELECT k FROM @T WHERE i4 = %s::int8 OR t = %s::varchar',
                             floor(random() * 60)::int - 30, diff_rlit('t'));
    -- joins
    WHEN 29 THEN q := 'SELECT f.*, p.tag FROM @T f JOIN diff_probe p ON f.k = p.pk';
    WHEN 30 THEN q := format('SELECT f.k, f.i4, p.tag FROM @T f JOIN diff_probe p ON f.i4 = p.pi4 WHERE %s',
                             replace(diff_rrange(), 'k', 'f.k'));
    WHEN 31 THEN q := 'SELECT p.tag, f.* FROM diff_probe p LEFT JOIN @T f ON f.k = p.pk';
    WHEN 32 THEN q := format('SELECT * FROM @T f WHERE f.k IN (SELECT pk + %s FROM diff_probe WHERE pk < 1000000)',
                             floor(random() * 3)::int);
    -- (a few outer rows: each is a scan, or a sort of the whole table)
    WHEN 33 THEN
      lo := floor(random() * 60)::int - 30;
      q := format('SELECT p.tag, l.* FROM diff_probe p, LATERAL (SELECT * FROM @T f WHERE f.k %s p.pk ORDER BY f.k %s LIMIT 2) l WHERE p.pi4 BETWEEN %s AND %s',
                             (ARRAY['>', '<', '>=', '<='])[1 + floor(random() * 4)::int],
                             CASE WHEN random() < 0.5 THEN 'DESC' ELSE '' END,
                             lo, lo + 6);
    WHEN 34 THEN q := format('SELECT a.k, b.k, b.%s FROM @T a JOIN @T b ON b.k = a.k + %s WHERE a.k < 1000000000 AND (%s)',
                             c, 37 * floor(random() * 5)::int,
                             replace(diff_rrange(), 'k', 'a.k'));
    ELSE q := format('SELECT f.k, n.i4 FROM @T f JOIN diff_n n ON n.k = f.k WHERE n.%s = %s',
                     c, diff_rlit(c));
  END CASE;
END $$;

-- Where two answers (rows as text) first differ, for a mismatch's report.
CREATE FUNCTION diff_first(fa text[], na text[]) RETURNS text
LANGUAGE sql AS $$
  SELECT coalesce(format('first difference at row %s: foreign %s, native %s',
                         i, coalesce(fa[i], 'none'), coalesce(na[i], 'none')),
                  'no rows differ')
  FROM generate_series(1, greatest(cardinality(fa), cardinality(na), 0)) i
  WHERE fa[i] IS DISTINCT FROM na[i]
  ORDER BY i LIMIT 1
$$;

-- Runs query q on both sides, @T standing for f or n and @S for diff_sf or
-- diff_sn, and says whether the answers are the same: the same rows (as
-- text, sorted) or, if ordered, the same rows in the same order; or the
-- same error.  A mismatch raises a NOTICE.
CREATE FUNCTION diff_check(q text, ordered bool, f text DEFAULT 'diff_f',
                           n text DEFAULT 'diff_n') RETURNS bool
LANGUAGE plpgsql AS $$
DECLARE
  agg text := CASE WHEN ordered THEN 'SELECT array_agg(x::text) FROM (%s) x'
                   ELSE 'SELECT array_agg(x::text ORDER BY x::text) FROM (%s) x' END;
  fa text[];
  na text[];
  fe text;
  ne text;
BEGIN
  BEGIN
    EXECUTE format(agg, replace(replace(q, '@T', f), '@S', 'diff_sf')) INTO fa;
  EXCEPTION WHEN OTHERS THEN
    fe := SQLSTATE || ' ' || SQLERRM;
  END;
  BEGIN
    EXECUTE format(agg, replace(replace(q, '@T', n), '@S', 'diff_sn')) INTO na;
  EXCEPTION WHEN OTHERS THEN
    ne := SQLSTATE || ' ' || SQLERRM;
  END;
  IF fa IS DISTINCT FROM na OR fe IS DISTINCT FROM ne THEN
    RAISE NOTICE 'mismatch: %', q
      USING DETAIL = format('foreign: %s rows%s; native: %s rows%s; %s',
                            coalesce(cardinality(fa), 0),
                            coalesce(', error ' || fe, ''),
                            coalesce(cardinality(na), 0),
                            coalesce(', error ' || ne, ''),
                            diff_first(fa, na));
    RETURN false;
  END IF;
  RETURN true;
END $$;

-- Runs n random queries, each under random planner settings (nested loops
-- forced, sorts discouraged), on both tables (f and n).
CREATE FUNCTION diff_queries(n int, f text DEFAULT 'diff_f',
                             nt text DEFAULT 'diff_n',
                             OUT queries int, OUT mismatches int)
LANGUAGE plpgsql AS $$
DECLARE
  g record;
  nl bool;
BEGIN
  queries := 0;
  mismatches := 0;
  FOR i IN 1..n LOOP
    SELECT * INTO g FROM diff_rquery();
    nl := random() < 0.35;
    PERFORM set_config('enable_hashjoin', CASE WHEN nl THEN 'off' ELSE 'on' END, true),
            set_config('enable_mergejoin', CASE WHEN nl THEN 'off' ELSE 'on' END, true),
            set_config('enable_sort', CASE WHEN random() < 0.25 THEN 'off' ELSE 'on' END, true);
    queries := queries + 1;
    IF NOT diff_check(g.q, g.ordered, f, nt) THEN
      mismatches := mismatches + 1;
    END IF;
  END LOOP;
  PERFORM set_config('enable_hashjoin', 'on', true),
          set_config('enable_mergejoin', 'on', true),
          set_config('enable_sort', 'on', true);
END $$;

-- Planner shapes, each the sibling of one that went wrong once: LATERAL
-- subqueries (pulled up or not, with and without join clauses, left and
-- inner, nested, with functions and whole-row references of the outer
-- side), LATERAL functions, whole-row references (row_to_json, t.*, IS
-- NULL, composite comparisons), correlated subqueries (SubPlans with
-- Params), EXISTS and NOT EXISTS, IN and = ANY of a subquery, window
-- functions, grouping sets, UNION ALL, CTEs, a key list of a computed
-- array.  @S is the second pair (smallint keys), @T the first.
CREATE FUNCTION diff_shape_list() RETURNS text[] LANGUAGE sql AS $$
  SELECT ARRAY[
    'SELECT a.k, ss.x FROM @S a LEFT JOIN LATERAL (SELECT a.v + 0 AS x FROM @T b WHERE b.k = a.v) ss ON true',
    'SELECT a.k, ss.x FROM @S a LEFT JOIN LATERAL (SELECT a.w || b.t AS x FROM @T b WHERE b.k = a.v) ss ON true',
    'SELECT a.k, ss.* FROM @S a, LATERAL (SELECT a.v + 0 AS x, b.i4 FROM @T b WHERE b.i4 = a.k) ss WHERE a.k < 20',
    'SELECT * FROM diff_probe i LEFT JOIN LATERAL (SELECT coalesce(i) FROM @S j WHERE i.pi4 = j.k) k ON true',
    'SELECT * FROM diff_probe i LEFT JOIN LATERAL (SELECT coalesce(i), j FROM @T j WHERE i.pk = j.k) k ON true',
    'SELECT i.tag, k.* FROM diff_probe i, LATERAL (SELECT j.k, row(i.pi4, j.v) AS r FROM @S j WHERE j.k = i.pi4) k',
    'SELECT a.k, x.* FROM @S a, LATERAL (SELECT b.k, b.t, a.w FROM @T b WHERE b.k > a.v ORDER BY b.k LIMIT 2) x',
    'SELECT a.k, x.* FROM @S a LEFT JOIN LATERAL (SELECT b.k, b.t FROM @T b WHERE b.k < a.v ORDER BY b.k DESC LIMIT 1) x ON true',
    'SELECT a.k, x.c, x.s FROM @S a LEFT JOIN LATERAL (SELECT count(*) AS c, sum(b.i4 + a.k) AS s FROM @T b WHERE b.i4 = a.k) x ON true WHERE a.k < 30',
    'SELECT a.k, x.* FROM @S a LEFT JOIN LATERAL (SELECT * FROM @T b WHERE b.k = a.v) x ON a.k % 2 = 0',
    'SELECT * FROM @S a, LATERAL (SELECT * FROM @T b WHERE b.k = a.v) x, LATERAL (SELECT a.k + x.i4 AS z) y',
    'SELECT a.k, y.* FROM @S a LEFT JOIN LATERAL (SELECT b.k, z.q FROM @T b LEFT JOIN LATERAL (SELECT a.k + b.i4 AS q, b.t IS NULL AS tn) z ON true WHERE b.k = a.v) y ON true',
    'SELECT a.k, y.* FROM @S a LEFT JOIN LATERAL (SELECT c.k, c.w FROM @S c WHERE c.k = a.k + 1 AND c.v IS NOT NULL) y ON true',
    'SELECT a.k, g FROM @S a, LATERAL generate_series(a.k, a.k + 2) g WHERE a.k < 30',
    'SELECT a.k, b.k, b.d FROM @S a, LATERAL (SELECT * FROM @T b WHERE b.k IN (a.v, a.v + 37, -a.v)) b',
    'SELECT a.k, b.k FROM @S a, LATERAL (SELECT * FROM @T b WHERE b.k = ANY (ARRAY[a.v, a.k::int8])) b',
    'SELECT a.k, b.k FROM @S a, LATERAL (SELECT * FROM @T b WHERE b.k BETWEEN a.v AND a.v + 100) b',
    'SELECT a.k, b.k FROM @S a, LATERAL (SELECT * FROM @T b WHERE b.t = a.w AND b.k < 0) b',
    'SELECT g, x.* FROM generate_series(-3, 3) g LEFT JOIN LATERAL (SELECT * FROM @S WHERE k = g) x ON true',
    'SELECT a.k, f FROM @S a, LATERAL (SELECT row_to_json(b) AS f FROM @T b WHERE b.k = a.v) x',
    'SELECT row_to_json(t), t IS NULL, t IS NOT NULL, t.* FROM @S t WHERE t.k < 5',
    'SELECT t FROM @T t WHERE t.k IN (0, 1, -1, 9223372036854775807)',
    'SELECT (t).k, (t).w FROM @S t WHERE t.v IS NULL',
    'SELECT a.k, b IS NULL, b FROM @S a LEFT JOIN @S b ON b.k = a.k + 100',
    'SELECT a.k FROM @S a JOIN @S b ON (a.k, a.v) = (b.k, b.v)',
    'SELECT a.k FROM @S a WHERE (a.k, a.w) > (100::int2, ''v5'') AND a.k < 110',
    'SELECT a.k FROM @S a JOIN @S b ON a = b',
    'SELECT a.k, (SELECT max(b.k) FROM @T b WHERE b.k < a.v) FROM @S a',
    'SELECT a.k, (SELECT b.t FROM @T b WHERE b.k = a.v) FROM @S a',
    'SELECT a.k FROM @S a WHERE EXISTS (SELECT 1 FROM @T b WHERE b.k = a.v AND b.i4 > a.k)',
    'SELECT a.k FROM @S a WHERE NOT EXISTS (SELECT 1 FROM @T b WHERE b.k = a.v)',
    'SELECT a.k FROM @S a WHERE a.v IN (SELECT b.k FROM @T b WHERE b.b)',
    'SELECT a.k FROM @S a WHERE a.k = ANY (SELECT b.i4 FROM @T b WHERE b.t = a.w) AND a.k < 30',
    'SELECT a.k FROM @S a WHERE a.v NOT IN (SELECT b.k FROM @T b WHERE b.k < 0)',
    'SELECT k, i4, sum(i4) OVER (PARTITION BY b ORDER BY k), row_number() OVER (ORDER BY k DESC) FROM @T WHERE k BETWEEN -3000 AND 3000',
    'SELECT k, lag(w) OVER (ORDER BY k), count(*) OVER () FROM @S',
    'SELECT b, count(*), sum(i4), min(t), max(d) FROM @T GROUP BY b',
    'SELECT b, i4 % 3, count(*) FROM @T WHERE k > 0 GROUP BY ROLLUP (b, i4 % 3)',
    'SELECT k FROM @S UNION ALL SELECT k FROM @T WHERE k < -49900',
    'SELECT k, w FROM @S WHERE k < 10 UNION SELECT i4, t FROM @T WHERE k BETWEEN 0 AND 500',
    'WITH x AS (SELECT * FROM @T WHERE k < -40000) SELECT count(*), sum(a.i4) FROM x a JOIN x b ON a.k = b.k',
    'WITH RECURSIVE r(k, n) AS (SELECT k, 0 FROM @S WHERE k = 1 UNION ALL SELECT s.k, r.n + 1 FROM r JOIN @S s ON s.k = r.k + 1 WHERE r.n < 5) SELECT * FROM r',
    'SELECT * FROM @T WHERE k = ANY ((SELECT array_agg(pk) FROM diff_probe)::int8[])',
    'SELECT * FROM @T WHERE k = ANY (ARRAY(SELECT v FROM @S))',
    'SELECT a.k, b.k FROM @S a JOIN @T b ON b.k = a.v WHERE a.k BETWEEN 10 AND 90',
    'SELECT a.k, b.k FROM @T b RIGHT JOIN @S a ON b.k = a.v AND b.i4 > 0',
    'SELECT a.k, b.k FROM @S a FULL JOIN @T b ON b.k = a.v WHERE b.k IS NULL OR b.k < -49000'
  ]
$$;

-- Runs every shape under planner settings s (a list of "name=value"),
-- with f and n for @T.
CREATE FUNCTION diff_shapes(s text, f text DEFAULT 'diff_f',
                            n text DEFAULT 'diff_n',
                            OUT queries int, OUT mismatches int)
LANGUAGE plpgsql AS $$
DECLARE
  q text;
  setting text;
BEGIN
  queries := 0;
  mismatches := 0;
  FOREACH setting IN ARRAY string_to_array(s, ' ') LOOP
    PERFORM set_config(split_part(setting, '=', 1),
                       split_part(setting, '=', 2), true);
  END LOOP;
  FOREACH q IN ARRAY diff_shape_list() LOOP
    queries := queries + 1;
    IF NOT diff_check(q, false, f, n) THEN
      mismatches := mismatches + 1;
    END IF;
  END LOOP;
  FOREACH setting IN ARRAY string_to_array(s, ' ') LOOP
    EXECUTE format('RESET %I', split_part(setting, '=', 1));
  END LOOP;
END $$;

-- Generic plans: the same queries as static SQL with PL/pgSQL variables,
-- which become Params; under plan_cache_mode = force_generic_plan every
-- execution uses the plan made without their values.  Runs each shape n
-- times with random values.
CREATE FUNCTION diff_generic(rounds int, OUT queries int, OUT mismatches int)
LANGUAGE plpgsql AS $$
DECLARE
  p_a int8;
  p_b int8;
  p_c int8;
  p_a4 int4;
  p_arr int8[];
  p_arr4 int4[];
  p_lim int;
  v_i4 int4;
  v_t text;
  v_n numeric;
  v_f8 float8;
  v_d date;
  fa text[];
  na text[];
  shape int;
BEGIN
  queries := 0;
  mismatches := 0;
  FOR i IN 1..rounds LOOP
    p_a := diff_rkey();
    p_b := least(greatest(p_a::numeric + floor(random() * 3000)::int - 300,
                          -9223372036854775808), 9223372036854775807);
    p_c := diff_rkey();
    p_a4 := floor(random() * 120001)::int - 60000;
    p_arr := string_to_array(diff_rkeys(1 + floor(random() * 20)::int,
                                      random() < 0.3), ', ', 'NULL')::int8[];
    p_arr4 := ARRAY[p_a4, p_a4 + 37, p_a4 - 37, NULL];
    p_lim := floor(random() * 40)::int;
    v_i4 := floor(random() * 60)::int - 30;
    v_t := 'v' || floor(random() * 100);
    v_n := (floor(random() * 500) - 250)::numeric / 4;
    IF random() < 0.5 THEN
      v_n := round(v_n, 2);
    END IF;
    v_f8 := floor(random() * 1100) / 8.0;
    v_d := date '2000-01-01' + floor(random() * 3100)::int;

    FOR shape IN 1..19 LOOP
      CASE shape
        WHEN 1 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k = p_a;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k = p_a;
        WHEN 2 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k = ANY (p_arr);
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k = ANY (p_arr);
        WHEN 3 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k IN (p_a, p_b, p_c);
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k IN (p_a, p_b, p_c);
        WHEN 4 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k BETWEEN p_a AND p_b;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k BETWEEN p_a AND p_b;
        WHEN 5 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k > p_a AND k <= p_b;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k > p_a AND k <= p_b;
        WHEN 6 THEN
          SELECT array_agg(x::text) INTO fa FROM (SELECT * FROM diff_f WHERE k >= p_a ORDER BY k LIMIT p_lim) x;
          SELECT array_agg(x::text) INTO na FROM (SELECT * FROM diff_n WHERE k >= p_a ORDER BY k LIMIT p_lim) x;
        WHEN 7 THEN
          SELECT array_agg(x::text) INTO fa FROM (SELECT * FROM diff_f WHERE k < p_b ORDER BY k DESC LIMIT p_lim) x;
          SELECT array_agg(x::text) INTO na FROM (SELECT * FROM diff_n WHERE k < p_b ORDER BY k DESC LIMIT p_lim) x;
        WHEN 8 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE i4 = v_i4 AND k > p_a;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE i4 = v_i4 AND k > p_a;
        WHEN 9 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE t = v_t;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE t = v_t;
        WHEN 10 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE n = v_n;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE n = v_n;
        WHEN 11 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE d = v_d OR k = p_c;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE d = v_d OR k = p_c;
        WHEN 12 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE f8 = v_f8;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE f8 = v_f8;
        WHEN 13 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k = p_a4;
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k = p_a4;
        WHEN 14 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa
            FROM (SELECT f.*, p.tag FROM diff_f f JOIN diff_probe p ON f.k = p.pk
                  WHERE p.pi4 > v_i4) x;
          SELECT array_agg(x::text ORDER BY x::text) INTO na
            FROM (SELECT f.*, p.tag FROM diff_n f JOIN diff_probe p ON f.k = p.pk
                  WHERE p.pi4 > v_i4) x;
        WHEN 15 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa FROM diff_f x WHERE k = ANY (p_arr4);
          SELECT array_agg(x::text ORDER BY x::text) INTO na FROM diff_n x WHERE k = ANY (p_arr4);
        -- LATERAL, correlated subqueries and EXISTS with Params
        WHEN 16 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa
            FROM (SELECT a.k, ss.x FROM diff_sf a LEFT JOIN LATERAL
                    (SELECT a.v + b.i4 + v_i4 AS x FROM diff_f b WHERE b.k = a.v + p_lim) ss
                  ON true WHERE a.k < v_i4 + 60) x;
          SELECT array_agg(x::text ORDER BY x::text) INTO na
            FROM (SELECT a.k, ss.x FROM diff_sn a LEFT JOIN LATERAL
                    (SELECT a.v + b.i4 + v_i4 AS x FROM diff_n b WHERE b.k = a.v + p_lim) ss
                  ON true WHERE a.k < v_i4 + 60) x;
        WHEN 17 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa
            FROM (SELECT a.k, ss.* FROM diff_sf a, LATERAL
                    (SELECT b.k, b.t FROM diff_f b WHERE b.k > a.v AND b.k <= a.v + p_lim * 20
                     ORDER BY b.k LIMIT 3) ss) x;
          SELECT array_agg(x::text ORDER BY x::text) INTO na
            FROM (SELECT a.k, ss.* FROM diff_sn a, LATERAL
                    (SELECT b.k, b.t FROM diff_n b WHERE b.k > a.v AND b.k <= a.v + p_lim * 20
                     ORDER BY b.k LIMIT 3) ss) x;
        WHEN 18 THEN
          SELECT array_agg(x::text ORDER BY x::text) INTO fa
            FROM (SELECT a.k, (SELECT count(*) FROM diff_f b
                               WHERE b.k BETWEEN a.v AND a.v + p_lim * 20) FROM diff_sf a) x;
          SELECT array_agg(x::text ORDER BY x::text) INTO na
            FROM (SELECT a.k, (SELECT count(*) FROM diff_n b
                               WHERE b.k BETWEEN a.v AND a.v + p_lim * 20) FROM diff_sn a) x;
        ELSE
          SELECT array_agg(x::text ORDER BY x::text) INTO fa
            FROM (SELECT a.k FROM diff_sf a WHERE EXISTS
                    (SELECT 1 FROM diff_f b WHERE b.k = ANY (p_arr) AND b.i4 = a.k % 30)) x;
          SELECT array_agg(x::text ORDER BY x::text) INTO na
            FROM (SELECT a.k FROM diff_sn a WHERE EXISTS
                    (SELECT 1 FROM diff_n b WHERE b.k = ANY (p_arr) AND b.i4 = a.k % 30)) x;
      END CASE;
      queries := queries + 1;
      IF fa IS DISTINCT FROM na THEN
        mismatches := mismatches + 1;
        RAISE NOTICE 'generic plan mismatch: shape %, p_a %, p_b %, p_c %, p_a4 %, p_arr %, p_lim %, i4 %, t %, n %, f8 %, d %',
          shape, p_a, p_b, p_c, p_a4, p_arr, p_lim, v_i4, v_t, v_n, v_f8, v_d
          USING DETAIL = format('foreign: %s rows; native: %s rows; %s',
                                coalesce(cardinality(fa), 0),
                                coalesce(cardinality(na), 0),
                                diff_first(fa, na));
      END IF;
    END LOOP;
  END LOOP;
END $$;

-- A random write to @T: inserts (of keys that may exist), updates of
-- values and of keys (to a key that may exist, or a range of keys moved
-- to an empty region), deletes by key, list, range and value.  nth makes
-- the moved regions distinct.
CREATE FUNCTION diff_rwrite(nth int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  a int8 := diff_rkey();
  w int := floor(random() * 300)::int;
  r int := floor(random() * 14)::int;
  vals text := format('%s, %s, %s, %s, %s, %s', diff_rlit('i4'), diff_rlit('t'),
                      diff_rlit('f8'), diff_rlit('b'), diff_rlit('d'),
                      diff_rlit('n'));
BEGIN
  IF a > 9223372036854775807 - 400 OR a < -9223372036854775807 + 400 THEN
    a := 0;                                 -- room for a + w
  END IF;
  CASE r
    WHEN 0, 1 THEN
      RETURN format('INSERT INTO @T VALUES (%s, %s)', a, vals);
    WHEN 2 THEN
      RETURN format('INSERT INTO @T VALUES (%s, %s) ON CONFLICT DO NOTHING', a, vals);
    WHEN 3 THEN
      RETURN format('INSERT INTO @T SELECT %s + g * %s, %s FROM generate_series(1, %s) g ON CONFLICT DO NOTHING',
                    a, 1 + floor(random() * 40)::int, vals, 1 + w / 6);
    WHEN 4 THEN
      RETURN format('UPDATE @T SET i4 = %s, t = %s WHERE k = %s',
                    diff_rlit('i4'), diff_rlit('t'), a);
    WHEN 5 THEN
      RETURN format('UPDATE @T SET f8 = %s, n = %s, d = %s WHERE k BETWEEN %s AND %s',
                    diff_rlit('f8'), diff_rlit('n'), diff_rlit('d'), a, a + w);
    WHEN 6 THEN
      RETURN format('UPDATE @T SET k = %s WHERE k = %s', diff_rkey(), a);
    WHEN 7 THEN
      RETURN format('UPDATE @T SET k = k + %s, t = ''moved'' WHERE k BETWEEN %s AND %s',
                    1000000::int8 * nth, a, a + w / 3);
    WHEN 8 THEN
      RETURN format('UPDATE @T SET k = -k, b = NOT b WHERE k BETWEEN %s AND %s',
                    abs(a) + 1, abs(a) + 1 + w / 3);
    WHEN 9 THEN
      RETURN format('DELETE FROM @T WHERE k = %s', a);
    WHEN 10 THEN
      RETURN format('DELETE FROM @T WHERE k IN (%s)', diff_rkeys(10, random() < 0.3));
    WHEN 11 THEN
      RETURN format('DELETE FROM @T WHERE k BETWEEN %s AND %s', a, a + w / 2);
    WHEN 12 THEN
      RETURN format('DELETE FROM @T WHERE i4 = %s AND k > %s', diff_rlit('i4'), a);
    ELSE
      RETURN format('UPDATE @T SET b = NOT b, i4 = i4 + 1 WHERE t = %s AND k < %s',
                    diff_rlit('t'), a);
  END CASE;
END $$;

-- Applies write w to both tables (f and n for @T), each in a
-- subtransaction, and
-- says whether both did the same: 'rows' (the same number of rows),
-- 'error' (the same error), else 'mismatch' (with a NOTICE).
CREATE FUNCTION diff_write(w text, f text DEFAULT 'diff_f',
                           n text DEFAULT 'diff_n') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  fc bigint := -1;
  nc bigint := -1;
  fe text;
  ne text;
BEGIN
  BEGIN
    EXECUTE replace(w, '@T', f);
    GET DIAGNOSTICS fc = ROW_COUNT;
  EXCEPTION WHEN OTHERS THEN
    fe := SQLSTATE;
  END;
  BEGIN
    EXECUTE replace(w, '@T', n);
    GET DIAGNOSTICS nc = ROW_COUNT;
  EXCEPTION WHEN OTHERS THEN
    ne := SQLSTATE;
  END;
  IF fc <> nc OR fe IS DISTINCT FROM ne THEN
    RAISE NOTICE 'write mismatch: %', w
      USING DETAIL = format('foreign: %s rows, error %s; native: %s rows, error %s',
                            fc, coalesce(fe, 'none'), nc, coalesce(ne, 'none'));
    RETURN 'mismatch';
  END IF;
  RETURN CASE WHEN fe IS NULL THEN 'rows' ELSE 'error' END;
END $$;

-- Before any write: the queries, then their generic plans, then the
-- shapes under each join method, and as parallel plans.
SELECT setseed(0.25);
SELECT * FROM diff_queries(400);
SET plan_cache_mode = force_generic_plan;
SELECT * FROM diff_generic(20);
RESET plan_cache_mode;
SELECT * FROM diff_shapes('');
SELECT * FROM diff_shapes('enable_hashjoin=off enable_mergejoin=off');
SELECT * FROM diff_shapes('enable_nestloop=off enable_mergejoin=off');
SELECT * FROM diff_shapes('enable_nestloop=off enable_hashjoin=off');
SELECT * FROM diff_shapes('force_parallel_mode=on');

-- Random writes: 60 transactions of 1 to 6 writes, a quarter of them with
-- a savepoint holding 1 to 3 more writes that rolls back half the time,
-- one in five rolled back; queries inside every third transaction see
-- its own writes.
SELECT setseed(0.5);
DO $$
DECLARE
  writes int := 0;
  wbad int := 0;
  werr int := 0;
  res text;
  queries int := 0;
  qbad int := 0;
  q record;
  nth int := 0;
  committed int := 0;
BEGIN
  FOR tx IN 1..60 LOOP
    FOR i IN 1..(1 + floor(random() * 6)::int) LOOP
      nth := nth + 1;
      writes := writes + 1;
      res := diff_write(diff_rwrite(nth));
      werr := werr + (res = 'error')::int;
      wbad := wbad + (res = 'mismatch')::int;
    END LOOP;
    IF random() < 0.25 THEN
      BEGIN
        FOR i IN 1..(1 + floor(random() * 3)::int) LOOP
          nth := nth + 1;
          writes := writes + 1;
          res := diff_write(diff_rwrite(nth));
          werr := werr + (res = 'error')::int;
          wbad := wbad + (res = 'mismatch')::int;
        END LOOP;
        IF random() < 0.5 THEN
          RAISE EXCEPTION 'roll back to the savepoint' USING ERRCODE = 'ZZ001';
        END IF;
      EXCEPTION WHEN SQLSTATE 'ZZ001' THEN
        NULL;
      END;
    END IF;
    IF tx % 3 = 0 THEN
      SELECT * INTO q FROM diff_queries(15);
      queries := queries + q.queries;
      qbad := qbad + q.mismatches;
    END IF;
    IF random() < 0.2 THEN
      ROLLBACK;
    ELSE
      COMMIT;
      committed := committed + 1;
    END IF;
  END LOOP;
  RAISE NOTICE 'writes: % in % transactions (% committed), % failed alike on both tables, % mismatches; queries inside the transactions: %, % mismatches',
    writes, 60, committed, werr, wbad, queries, qbad;
END $$;

-- After the writes: the same rows, and the queries again.
SELECT count(*) AS rows,
  (SELECT array_agg(x::text ORDER BY k) FROM diff_f x) =
  (SELECT array_agg(x::text ORDER BY k) FROM diff_n x) AS same_rows
FROM diff_f;
SELECT setseed(0.75);
SELECT * FROM diff_queries(400);
SET plan_cache_mode = force_generic_plan;
SELECT * FROM diff_generic(20);
RESET plan_cache_mode;
SELECT * FROM diff_shapes('');
SELECT * FROM diff_shapes('enable_hashjoin=off enable_mergejoin=off');

-- A partitioned table whose partitions are foreign tables (and one heap
-- table), against a partitioned native table with the same bounds: the
-- random queries with partition pruning, the shapes with partitionwise
-- joins and aggregates (nested loops over partitions parameterized by
-- another partition), random writes.
CREATE TABLE diff_pf (k int8, i4 int4, t text, f8 float8, b bool, d date,
  n numeric) PARTITION BY RANGE (k);
CREATE FOREIGN TABLE diff_pf1 PARTITION OF diff_pf
  FOR VALUES FROM (MINVALUE) TO (-20000) SERVER lsm_diff_srv
  OPTIONS (key 'k');
CREATE FOREIGN TABLE diff_pf2 PARTITION OF diff_pf
  FOR VALUES FROM (-20000) TO (20000) SERVER lsm_diff_srv OPTIONS (key 'k');
CREATE TABLE diff_pf3 PARTITION OF diff_pf FOR VALUES FROM (20000) TO (MAXVALUE);
CREATE TABLE diff_pn (k int8, i4 int4, t text, f8 float8, b bool, d date,
  n numeric) PARTITION BY RANGE (k);
CREATE TABLE diff_pn1 PARTITION OF diff_pn FOR VALUES FROM (MINVALUE) TO (-20000);
CREATE TABLE diff_pn2 PARTITION OF diff_pn FOR VALUES FROM (-20000) TO (20000);
CREATE TABLE diff_pn3 PARTITION OF diff_pn FOR VALUES FROM (20000) TO (MAXVALUE);
ALTER TABLE diff_pn ADD PRIMARY KEY (k);
ALTER TABLE diff_pf3 ADD PRIMARY KEY (k);
INSERT INTO diff_pf SELECT * FROM diff_n;
INSERT INTO diff_pn SELECT * FROM diff_n;
ANALYZE diff_pn, diff_pf3;
SET enable_partitionwise_join = on;
SET enable_partitionwise_aggregate = on;
SELECT setseed(0.125);
SELECT * FROM diff_queries(150, 'diff_pf', 'diff_pn');
SELECT * FROM diff_shapes('enable_hashjoin=off enable_mergejoin=off', 'diff_pf', 'diff_pn');
SELECT diff_check('SELECT a.k, b.i4 FROM @T a JOIN @T b ON a.k = b.k WHERE a.i4 = 3', false, 'diff_pf', 'diff_pn'),
       diff_check('SELECT a.b, count(*), sum(b.i4) FROM @T a JOIN @T b ON a.k = b.k GROUP BY a.b', false, 'diff_pf', 'diff_pn');
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
  SELECT a.k, b.i4 FROM diff_pf a JOIN diff_pf b ON a.k = b.k WHERE a.i4 = 3;
SELECT diff_check('SELECT a.k, b.i4 FROM @T a JOIN @T b ON a.k = b.k WHERE a.i4 = 3', false, 'diff_pf', 'diff_pn');
RESET enable_hashjoin;
RESET enable_mergejoin;
-- (no updates of the key: PostgreSQL does not move rows out of foreign
-- partitions, see write.sql)
DO $$
DECLARE
  w text;
  res text;
  bad int := 0;
BEGIN
  FOR i IN 1..60 LOOP
    LOOP
      w := diff_rwrite(1000 + i);
      EXIT WHEN w !~ 'SET k =';
    END LOOP;
    res := diff_write(w, 'diff_pf', 'diff_pn');
    bad := bad + (res = 'mismatch')::int;
  END LOOP;
  RAISE NOTICE 'writes to the partitioned tables: 60, % mismatches', bad;
END $$;
SELECT (SELECT array_agg(x::text ORDER BY k) FROM diff_pf x) =
       (SELECT array_agg(x::text ORDER BY k) FROM diff_pn x) AS same_rows;
SELECT * FROM diff_queries(50, 'diff_pf', 'diff_pn');
RESET enable_partitionwise_join;
RESET enable_partitionwise_aggregate;

DROP FUNCTION diff_write(text, text, text), diff_rwrite(int), diff_generic(int),
  diff_shapes(text, text, text), diff_shape_list(),
  diff_queries(int, text, text), diff_check(text, bool, text, text),
  diff_first(text[], text[]), diff_rquery(), diff_rrange(),
  diff_rcol(), diff_rlit(text), diff_rkeys(int, bool), diff_rkey();
DROP TABLE diff_n, diff_probe, diff_sn, diff_pf, diff_pn;
DROP SERVER lsm_diff_srv CASCADE;

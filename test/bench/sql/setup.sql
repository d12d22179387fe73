--
-- test/bench/sql/setup.sql: extensions, the server and the measuring
-- functions of the SQL benchmark (run once by test/bench/sql/run.sh).
--
-- Every timed query returns one row, (count, checksum): the number of rows
-- it found and the sum of hashtextextended(row::text, 0) over them.  The
-- whole-row reference makes every column of every matching row be fetched,
-- as SELECT * would, and lets the script compare the answers of the foreign
-- table and of every heap variant value by value.
--

\set ON_ERROR_STOP 1

CREATE EXTENSION fdw;
CREATE EXTENSION bloom;
CREATE EXTENSION pg_prewarm;
CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw;

-- One row per timed execution: what was run, its answer and its time.
CREATE TABLE bench_times (
    section text,                   -- 'eq', 'point', 'join'
    variant text,                   -- 'lsm_auto', 'heap_btree', ...
    kind    text,                   -- 'hit', 'absent', ...
    run     int,
    i       int,                    -- which value
    cnt     int8,
    chk     numeric,
    ms      float8
);

-- The values each section queries: one array per kind.
CREATE TABLE bench_values (kind text PRIMARY KEY, vals text[]);

--
-- bench_run: executes q (a query with $1 of type text, returning one row
-- (count, checksum)) once with vals[1], untimed, then once per value of
-- vals, timing each execution with clock_timestamp(); records every
-- execution in bench_times.  EXECUTE ... USING plans q at each execution
-- with the value known, as a query with a literal would be (a custom plan).
--
CREATE FUNCTION bench_run(p_section text, p_variant text, p_kind text,
                          p_run int, q text, vals text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0  timestamptz;
    t1  timestamptz;
    c   int8;
    s   numeric;
BEGIN
    EXECUTE q INTO c, s USING vals[1];
    FOR k IN 1 .. cardinality(vals) LOOP
        t0 := clock_timestamp();
        EXECUTE q INTO c, s USING vals[k];
        t1 := clock_timestamp();
        INSERT INTO bench_times
        VALUES (p_section, p_variant, p_kind, p_run, k, c, coalesce(s, 0),
                extract(epoch FROM t1 - t0)::float8 * 1000);
    END LOOP;
END $$;

--
-- bench_check: every (section, kind, value) must have the same answer in
-- every variant and run; raises an error naming the first difference.
--
CREATE FUNCTION bench_check(p_section text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
    n   int8;
BEGIN
    SELECT kind, i, string_agg(DISTINCT format('%s: %s rows, checksum %s', variant, cnt, chk), '; ') AS answers
    INTO bad
    FROM bench_times WHERE section = p_section
    GROUP BY kind, i
    HAVING count(DISTINCT (cnt, chk)) > 1
    ORDER BY kind, i LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'wrong answer in section %: kind %, value #%: %',
            p_section, bad.kind, bad.i, bad.answers;
    END IF;
    SELECT count(*) INTO n FROM bench_times WHERE section = p_section;
    RETURN format('%s: %s executions, every variant gave the same answers', p_section, n);
END $$;

-- Median and range of the per-run medians of one variant and kind, in ms.
CREATE VIEW bench_summary AS
SELECT section, variant, kind,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY run_median) AS median_ms,
       min(run_median) AS min_ms,
       max(run_median) AS max_ms,
       count(*) AS runs,
       sum(execs) AS execs,
       sum(rows_found) AS rows_found
FROM (SELECT section, variant, kind, run,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS run_median,
             count(*) AS execs, sum(cnt) AS rows_found
      FROM bench_times GROUP BY section, variant, kind, run) r
GROUP BY section, variant, kind;

-- count and checksum of a whole table, as the timed queries compute them
CREATE FUNCTION bench_table_sum(tbl regclass, OUT cnt int8, OUT chk numeric)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT count(*), coalesce(sum(hashtextextended(t::text, 0)), 0) FROM %s t', tbl)
    INTO cnt, chk;
END $$;

--
-- demo/timing.sql: the same queries on the foreign table and on the heap
-- table, side by side (run by demo/run).
--
-- psql variables: rows (tweets loaded), lookup_id (a tweet that exists).
--
-- Each query is timed on the server by demo_median_ms: one untimed run
-- (caches, hint bits), then N timed runs between clock_timestamp() calls,
-- and the median.  The query text is planned at every run, for both tables
-- alike.  For each query the foreign table and the heap table are timed one
-- right after the other, so that the machine's load at the time weighs on
-- both.  The heap table is timed as loaded (primary key on id), then the
-- queries on usr again with a btree index on usr.
--

\set ECHO none

-- Runs query n times after one untimed run; returns the median in ms.
CREATE FUNCTION demo_median_ms(query text, n int) RETURNS numeric
LANGUAGE plpgsql AS $$
DECLARE
    t0    timestamptz;
    times float8[] := '{}';
BEGIN
    EXECUTE query;
    FOR i IN 1 .. n LOOP
        t0 := clock_timestamp();
        EXECUTE query;
        times := times || extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
    END LOOP;
    RETURN (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x)
            FROM unnest(times) x)::numeric;
END $$;

-- a / b to 3 significant digits (at least 2 decimals)
CREATE FUNCTION demo_ratio(a numeric, b numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
    SELECT round(a / b, greatest(2, 2 - floor(log(a / b)))::int)
    WHERE a > 0 AND b > 0
$$;

-- The queries; {t} is tweets or tweets_heap.
CREATE TEMP TABLE demo_timings (
    n        int,
    what     text,
    query    text,
    runs     int,
    lsm      numeric,
    heap     numeric,
    heap_idx numeric
);
INSERT INTO demo_timings (n, what, query, runs) VALUES
    (1, 'key lookup',
        format('SELECT * FROM {t} WHERE id = %s', :lookup_id), 21),
    (2, 'absent key',
        'SELECT * FROM {t} WHERE id = -1', 21),
    (3, '1,000 key lookups (nested loop)',
        format('SELECT count(*) FROM generate_series(1, 1000) g JOIN {t} t ON t.id = g * %s',
               :rows / 1000), 21),
    (4, 'newest 10 (ORDER BY id DESC LIMIT 10)',
        'SELECT * FROM {t} ORDER BY id DESC LIMIT 10', 21),
    (5, 'usr = a frequent user',
        'SELECT count(*) FROM {t} WHERE usr = ''user000042''', 5),
    (6, 'usr = a rare user',
        'SELECT count(*) FROM {t} WHERE usr = ''user031337''', 5),
    (7, 'group by (aggregated by the scan)',
        'SELECT lang, count(*) FROM {t} GROUP BY lang', 5),
    (8, 'join with users',
        'SELECT count(*) FROM {t} t JOIN users u ON u.usr = t.usr WHERE t.lang = ''ko'' AND u.country = ''NZ''', 5);

\echo
\echo '=== 5. timings, side by side ==='
\echo 'The same queries on the foreign table (tweets) and on the heap table'
\echo '(tweets_heap, primary key on id; {t} below stands for either). Median of'
\echo 'N runs after one untimed run, measured on the server with clock_timestamp()'
\echo 'in a PL/pgSQL loop; heap/lsm > 1 means lsm_fdw was faster. PostgreSQL may read'
\echo 'either table with parallel workers (a full scan, a key range).'
\echo
SELECT n AS "#", query AS "SQL" FROM demo_timings ORDER BY n;

UPDATE demo_timings
SET lsm = demo_median_ms(replace(query, '{t}', 'tweets'), runs),
    heap = demo_median_ms(replace(query, '{t}', 'tweets_heap'), runs);

\echo 'Then the same with a btree index on tweets_heap (usr), for the queries on usr:'
SELECT clock_timestamp() AS t0 \gset
\set ECHO queries
CREATE INDEX tweets_heap_usr ON tweets_heap (usr);
\set ECHO none
SELECT format('(built in %s s)', round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 1))
       AS msg \gset
\echo :msg
UPDATE demo_timings
SET heap_idx = demo_median_ms(replace(query, '{t}', 'tweets_heap'), runs)
WHERE query LIKE '%usr%';

SELECT n AS "#",
       what AS query,
       runs,
       round(lsm, 3) AS "lsm_fdw ms",
       round(heap, 3) AS "heap ms",
       demo_ratio(heap, lsm) AS "heap/lsm",
       round(heap_idx, 3) AS "heap + usr index ms",
       demo_ratio(heap_idx, lsm) AS "(heap + usr index)/lsm"
FROM demo_timings ORDER BY n;

DROP FUNCTION demo_median_ms(text, int), demo_ratio(numeric, numeric);

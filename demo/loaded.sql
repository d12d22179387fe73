--
-- demo/loaded.sql: reports the two loads of demo/load.sql, then readies
-- the native tables for the queries and drops the staging table (run by
-- demo/run).
--
-- VACUUM ANALYZE tweets_heap: what anyone would run after a bulk load; it
-- gives the planner statistics and sets the visibility map and hint bits
-- (or the first timed query would).  ANALYZE tweets samples the foreign
-- table, so that the planner knows id is unique and how common each usr
-- and lang is (autovacuum never analyzes foreign tables).
--

\echo
\echo '=== the load ==='
\echo 'Both tables were loaded from tweets_src the same way, in transactions of' :chunk 'rows.'
\echo 'seconds: on the server, from the first INSERT to the last commit.'
\echo 'backend peak memory: the loading backend''s VmHWM (its largest resident set,'
\echo 'shared buffers it touched included).'
SELECT label AS "loaded into",
       round(seconds, 2) AS seconds,
       round(:rows / seconds) AS "rows/s",
       pg_size_pretty(peak_bytes) AS "backend peak memory"
FROM demo_loads ORDER BY n;

VACUUM ANALYZE tweets_heap;
ANALYZE tweets;
DROP TABLE tweets_src, demo_loads;

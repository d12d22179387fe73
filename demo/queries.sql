--
-- demo/queries.sql: the queries that show what a foreign table of lsm_fdw
-- does, each printed before its result (run by demo/run).
--
-- psql variables: rows (tweets loaded), lookup_id (a tweet that exists).
-- The environment names the cluster (PGHOST, PGPORT, PGUSER), for the
-- second session of section 4.
--
-- EXPLAIN ANALYZE output is printed whole: whatever the foreign scan
-- reports (its access path, and the engine's counters where it has them)
-- is part of the demo.
--

\set ECHO queries

\echo
\echo '=== 1. key lookup ==='
\echo 'tweets is stored in key order of id. "id = constant" is one lookup in the'
\echo 'store: the memtable, then at most one SSTable per level, each consulted only'
\echo 'if its Bloom filter of keys says the key may be there.'
\echo
EXPLAIN (COSTS OFF) SELECT * FROM tweets WHERE id = :lookup_id;
SELECT * FROM tweets WHERE id = :lookup_id;

\echo
\echo '=== 2. equality on a column that is not the key ==='
\echo 'A heap table without an index on usr reads every row to answer this. The'
\echo 'foreign scan''s "LSM Access" line says how the store answered: a full scan'
\echo 'reads every row; a value search probes the Bloom filters of values kept for'
\echo 'every column and reads only the SSTables and blocks that may hold the value:'
\echo '"nodes" and "leaves probed" count the filters of the hierarchy it probed,'
\echo '"SSTables read" the files it opened, "false" those that did not hold it.'
\echo 'The planner chose it by cost, from the engine''s estimate and ANALYZE.'
\echo
EXPLAIN ANALYZE SELECT count(*) FROM tweets WHERE usr = 'user031337';
\echo 'The same answer as the heap table:'
SELECT (SELECT count(*) FROM tweets WHERE usr = 'user031337') AS lsm_fdw,
       (SELECT count(*) FROM tweets_heap WHERE usr = 'user031337') AS heap;

\echo
\echo 'An aggregate over the whole table (or a key range of it) is computed by the'
\echo 'scan itself: the "LSM Access: aggregate" line says so. The rows never reach'
\echo 'the executor as tuples; the scan groups their stored bytes.'
\echo
EXPLAIN ANALYZE SELECT lang, count(*) FROM tweets GROUP BY lang ORDER BY 2 DESC LIMIT 3;
SELECT (SELECT array_agg(lang || ':' || n ORDER BY lang) FROM
          (SELECT lang, count(*) AS n FROM tweets GROUP BY lang) a) =
       (SELECT array_agg(lang || ':' || n ORDER BY lang) FROM
          (SELECT lang, count(*) AS n FROM tweets_heap GROUP BY lang) b)
  AS same_as_heap;

\echo
\echo '=== 3. joins with a native table ==='
\echo 'Tweets in Korean by users in New Zealand: the rows of the foreign table with'
\echo 'lang = ''ko'' joined with the users of the native table with country = ''NZ''.'
\echo
EXPLAIN ANALYZE
SELECT count(*)
FROM tweets t JOIN users u ON u.usr = t.usr
WHERE t.lang = 'ko' AND u.country = 'NZ';
SELECT u.name, t.ts, t.body
FROM tweets t JOIN users u ON u.usr = t.usr
WHERE t.lang = 'ko' AND u.country = 'NZ'
ORDER BY t.ts DESC LIMIT 3;

\echo
\echo 'Tweets by id with their authors: the foreign scan is the inner side of a'
\echo 'nested loop, one key lookup per outer row (loops=5), parameterized by the'
\echo 'outer id; the users are then found by their primary key.'
\echo
EXPLAIN ANALYZE
SELECT t.id, u.name, u.country, t.lang, t.body
FROM unnest(ARRAY[7, 42, 999, :lookup_id, :rows]::int8[]) AS want(id)
     JOIN tweets t ON t.id = want.id
     JOIN users u ON u.usr = t.usr
ORDER BY t.id;
SELECT t.id, u.name, u.country, t.lang, t.body
FROM unnest(ARRAY[7, 42, 999, :lookup_id, :rows]::int8[]) AS want(id)
     JOIN tweets t ON t.id = want.id
     JOIN users u ON u.usr = t.usr
ORDER BY t.id;

\echo
\echo '=== 4. a rolled-back update, an upsert ==='
\echo 'A transaction''s writes stay in its backend until commit, when they reach the'
\echo 'store as one atomic batch: the transaction sees its own update, another'
\echo 'session does not, and a rollback just forgets it.'
\echo
BEGIN;
UPDATE tweets SET body = 'edited: ' || body WHERE id = :lookup_id;
SELECT id, body FROM tweets WHERE id = :lookup_id;
\setenv DEMO_LOOKUP_ID :lookup_id
\echo '-- meanwhile, in another session:'
\echo 'SELECT id, body FROM tweets WHERE id =' :lookup_id
\! psql -X -P pager=off -c "SELECT id, body FROM tweets WHERE id = $DEMO_LOOKUP_ID"
ROLLBACK;
SELECT id, body FROM tweets WHERE id = :lookup_id;
\echo
\echo 'INSERT ... ON CONFLICT (key) DO UPDATE updates the row of an existing key'
\echo '(excluded is the row proposed) and inserts the others, as with a primary'
\echo 'key; rolled back here too.'
\echo
BEGIN;
INSERT INTO tweets (id, usr, body, lang)
VALUES (:lookup_id, 'demo', 'upserted', 'en'), (:rows + 1, 'demo', 'new', 'en')
ON CONFLICT (id) DO UPDATE
  SET body = excluded.body || ' (was: ' || left(tweets.body, 24) || '...)'
RETURNING id, usr, body;
ROLLBACK;

\echo
\echo '=== 5. a composite key ==='
\echo 'A key may be several columns. timelines is keyed by (usr, ts, id): its rows'
\echo 'are stored by user, then time, so a user''s latest tweets are a short range'
\echo 'read backward from the end of that user''s rows, with no Sort, stopping at'
\echo 'the LIMIT.'
\echo
CREATE FOREIGN TABLE timelines (usr text COLLATE "C", ts timestamptz, id int8,
                                body text)
  SERVER lsm OPTIONS (key 'usr, ts, id');
INSERT INTO timelines SELECT usr, ts, id, body FROM tweets;
SELECT * FROM lsm_key_columns('timelines');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
SELECT ts, id, left(body, 40) AS body FROM timelines
WHERE usr = 'user000042' ORDER BY ts DESC LIMIT 5;
SELECT ts, id, left(body, 40) AS body FROM timelines
WHERE usr = 'user000042' ORDER BY ts DESC LIMIT 5;
DROP FOREIGN TABLE timelines;

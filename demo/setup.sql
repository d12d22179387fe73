--
-- demo/setup.sql: the demo's tables and data source (run by demo/run).
--
-- psql variables: rows (tweets to generate).
--
-- Creates the extension, a server, the foreign table tweets, the native
-- tables tweets_heap (same columns, primary key on id) and users (100,000
-- users), and tweets_src, an unlogged staging table holding :rows synthetic
-- tweets that demo/load.sql copies into both tweets tables: generating the
-- rows once keeps the cost of generating them out of the load timings, and
-- both tables get the same rows.
--
-- Everything is deterministic (hashint8extended of the row number, one seed
-- per choice), so every run has the same data:
--   usr   one of the 100,000 users, skewed: user = 1 + floor(100000 * u^2)
--         for u uniform in [0, 1), so user000001 has ~0.3% of the tweets
--         and most users a handful;
--   lang  en 40%, es 15%, ja 12%, pt 10%, fr 8%, de 6%, ko 5%, it 4%;
--   body  12 words and hashtags from 64, cut at 100 bytes (~60-100 bytes);
--   ts    a second of 2024, uniform.
--

\echo
\echo '=== the tables ==='
\echo 'A foreign table of lsm_fdw keyed on id, and native tables to compare with.'
\echo
\set ECHO queries

CREATE EXTENSION fdw;
CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE tweets (
    id   int8 OPTIONS (key 'true'),
    usr  text,
    body text,
    lang text,
    ts   timestamptz
) SERVER lsm;
CREATE TABLE tweets_heap (
    id   int8 PRIMARY KEY,
    usr  text,
    body text,
    lang text,
    ts   timestamptz
);
CREATE TABLE users (usr text PRIMARY KEY, name text, country text);

\set ECHO none

INSERT INTO users
SELECT format('user%s', lpad(u::text, 6, '0')),
       (ARRAY['Ada', 'Alan', 'Grace', 'Edsger', 'Barbara', 'Donald',
              'Frances', 'John', 'Margaret', 'Ken'])[1 + (hashint8extended(u, 1) & 1023) % 10]
       || ' ' ||
       (ARRAY['Lovelace', 'Turing', 'Hopper', 'Dijkstra', 'Liskov', 'Knuth',
              'Allen', 'Backus', 'Hamilton', 'Thompson'])[1 + (hashint8extended(u, 2) & 1023) % 10],
       (ARRAY['US', 'BR', 'JP', 'IN', 'DE', 'FR', 'GB', 'ES', 'MX', 'KR',
              'IT', 'CA', 'AR', 'ID', 'NZ', 'PT'])[1 + (hashint8extended(u, 3) & 1023) % 16]
FROM generate_series(1, 100000) u;
ANALYZE users;

SELECT clock_timestamp() AS t0 \gset
CREATE UNLOGGED TABLE tweets_src AS
WITH words AS (
    SELECT '{just,shipped,the,new,release,coffee,morning,reading,about,LSM,
             trees,bloom,filters,are,amazing,why,does,my,query,scan,
             everything,postgres,index,lookup,fast,slow,today,tomorrow,
             weekend,deploy,friday,never,again,love,this,hate,that,
             compaction,storage,engine,benchmark,results,look,good,bad,weird,
             latency,throughput,memory,disk,cache,miss,hit,key,value,store,
             write,read,amplification,tuning,knobs,finally,works,again}'::text[] AS w
)
SELECT g::int8 AS id,
       format('user%s', lpad((1 + floor(100000 * r.u * r.u))::int::text, 6, '0')) AS usr,
       left(concat_ws(' ',
                      w[1 + (h & 63)], w[1 + (h >> 6 & 63)],
                      w[1 + (h >> 12 & 63)], w[1 + (h >> 18 & 63)],
                      w[1 + (h >> 24 & 63)], w[1 + (h >> 30 & 63)],
                      w[1 + (h >> 36 & 63)], w[1 + (h >> 42 & 63)],
                      w[1 + (h >> 48 & 63)], w[1 + (h >> 54 & 63)],
                      '#' || w[1 + (h2 & 63)], '#' || w[1 + (h2 >> 6 & 63)]),
            100) AS body,
       CASE WHEN r.l < 40 THEN 'en' WHEN r.l < 55 THEN 'es'
            WHEN r.l < 67 THEN 'ja' WHEN r.l < 77 THEN 'pt'
            WHEN r.l < 85 THEN 'fr' WHEN r.l < 91 THEN 'de'
            WHEN r.l < 96 THEN 'ko' ELSE 'it' END AS lang,
       timestamptz '2024-01-01 00:00:00+00'
           + (h2 >> 12 & 33554431) % 31622400 * interval '1 second' AS ts
FROM words,
     generate_series(1, :rows) g,
     LATERAL (SELECT hashint8extended(g, 20) AS h,
                     hashint8extended(g, 21) AS h2,
                     (hashint8extended(g, 11) & 2147483647) / 2147483648.0::float8 AS u,
                     (hashint8extended(g, 12) & 2147483647) % 100 AS l) r;
-- the loads copy it in chunks of ids: a BRIN index finds a chunk's pages
CREATE INDEX ON tweets_src USING brin (id);
ANALYZE tweets_src;
-- what demo/load.sql measured, for demo/loaded.sql
CREATE TABLE demo_loads (n serial, label text, seconds numeric, peak_bytes int8);

\echo
\echo '=== the data ==='
\echo 'users: 100,000 users (usr text primary key, name, country) in 16 countries.'
SELECT format('tweets_src: %s synthetic tweets (generated in %s s), a staging table that both loads copy.',
              :rows, round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 1))
       AS msg \gset
\echo :msg
\echo 'Three of them:'
SELECT * FROM tweets_src WHERE id <= 3 ORDER BY id;

--
-- test/bench/sql/gen.sql: writes the benchmark's rows to a file on the
-- server (run by test/bench/sql/run.sh, once per load size).
--
-- psql variables: rows (how many), users (distinct usr values), file (the
-- server-side path COPY writes).
--
-- The rows are (id int8, usr text, body text, lang text, ts timestamptz),
-- ids 1..rows in ascending order, and deterministic (hashint8extended of
-- the id, one seed per column), so a file of 1M rows is the first 1M rows
-- of the file of 10M:
--   usr   'u' and 8 digits, uniform over :users values (rows / 10, so each
--         value has ~10 rows, Poisson); values from 'u' || :users up are
--         absent;
--   body  13 words from 64, cut at 96 bytes (~80 bytes on average);
--   lang  en 40%, es 15%, ja 12%, pt 10%, fr 8%, de 6%, ko 5%, it 4%;
--   ts    a second of 2024, uniform.
--

\set ON_ERROR_STOP 1

COPY (
    SELECT g::int8 AS id,
           'u' || lpad(((hashint8extended(g, 1) & 2147483647) % :users)::text, 8, '0') AS usr,
           left(concat_ws(' ',
                          w[1 + (h & 63)], w[1 + (h >> 6 & 63)],
                          w[1 + (h >> 12 & 63)], w[1 + (h >> 18 & 63)],
                          w[1 + (h >> 24 & 63)], w[1 + (h >> 30 & 63)],
                          w[1 + (h >> 36 & 63)], w[1 + (h >> 42 & 63)],
                          w[1 + (h >> 48 & 63)], w[1 + (h >> 54 & 63)],
                          w[1 + (h2 & 63)], w[1 + (h2 >> 6 & 63)],
                          '#' || w[1 + (h2 >> 12 & 63)]),
                96) AS body,
           CASE WHEN l < 40 THEN 'en' WHEN l < 55 THEN 'es'
                WHEN l < 67 THEN 'ja' WHEN l < 77 THEN 'pt'
                WHEN l < 85 THEN 'fr' WHEN l < 91 THEN 'de'
                WHEN l < 96 THEN 'ko' ELSE 'it' END AS lang,
           timestamptz '2024-01-01 00:00:00+00'
               + (h2 >> 20 & 2147483647) % 31622400 * interval '1 second' AS ts
    FROM (SELECT '{just,shipped,the,new,release,coffee,morning,reading,about,LSM,
                   trees,bloom,filters,are,amazing,why,does,my,query,scan,
                   everything,postgres,index,lookup,fast,slow,today,tomorrow,
                   weekend,deploy,friday,never,again,love,this,hate,that,
                   compaction,storage,engine,benchmark,results,look,good,bad,weird,
                   latency,throughput,memory,disk,cache,miss,hit,key,value,store,
                   write,read,amplification,tuning,knobs,finally,works,again}'::text[] AS w) words,
         generate_series(1, :rows) g,
         LATERAL (SELECT hashint8extended(g, 20) AS h,
                         hashint8extended(g, 21) AS h2,
                         (hashint8extended(g, 12) & 2147483647) % 100 AS l) r
) TO :'file';

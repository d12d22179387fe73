--
-- demo/disk.sql: bytes on disk of the foreign table's store and of the heap
-- table (run by demo/run, after demo/timing.sql built the usr index).
--
-- psql variables: store_bytes (du -sb of the store directory).
--
-- The store's files are listed from the database (pg_ls_dir needs a
-- superuser): SSTables (.sst), value filter hierarchy nodes (.vfn), the
-- write-ahead log (.log), MANIFEST and LOCK.
--

\set ECHO none

SELECT format('lsm_fdw/%s/%s', d.oid, 'tweets'::regclass::oid) AS store_dir
FROM pg_database d WHERE d.datname = current_database() \gset

\echo
\echo '=== 6. bytes on disk ==='
\echo 'The foreign table''s store is the directory $PGDATA/':store_dir
\echo '(du -sb); the heap table''s size counts its TOAST table, free space and'
\echo 'visibility maps and its indexes.'
\echo
SELECT what, pg_size_pretty(bytes) AS size, bytes,
       round(bytes / :store_bytes::numeric, 2) AS "vs lsm_fdw"
FROM (VALUES
        (1, 'lsm_fdw: store directory of tweets', :store_bytes::int8),
        (2, 'heap: tweets_heap + primary key',
            pg_table_size('tweets_heap') + pg_relation_size('tweets_heap_pkey')),
        (3, 'heap: tweets_heap + primary key + usr index',
            pg_total_relation_size('tweets_heap'))
     ) s(n, what, bytes)
ORDER BY n;

\echo 'The store''s files:'
SELECT CASE WHEN f LIKE '%.sst' THEN 'SSTables (.sst)'
            WHEN f LIKE '%.vfn' THEN 'value filter hierarchy nodes (.vfn)'
            WHEN f LIKE '%.log' THEN 'write-ahead log (.log)'
            ELSE f END AS kind,
       count(*) AS files,
       pg_size_pretty(sum((pg_stat_file(:'store_dir' || '/' || f)).size)) AS size
FROM pg_ls_dir(:'store_dir') f
GROUP BY 1 ORDER BY min(f);

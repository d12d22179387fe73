--
-- demo/disk.sql: bytes on disk of the foreign table's store and of the heap
-- table (run by demo/run, after demo/timing.sql built the usr index).
--
-- The store's size is lsm_store_size: what its files take on disk.  Its
-- files are listed from the database (pg_ls_dir needs a superuser):
-- SSTables (.sst), value filter hierarchy nodes (.vfn), the write-ahead log
-- (.log), the shared memtable's file (.mem), MANIFEST and LOCK.  The
-- memtable's file is as long as the largest memtable it may hold and gets
-- disk blocks as the memtable grows: its line shows the blocks it has (the
-- store's size less every other file, which has no holes).
--

\set ECHO none

SELECT format('lsm_fdw/%s/%s', d.oid, 'tweets'::regclass::oid) AS store_dir
FROM pg_database d WHERE d.datname = current_database() \gset

\echo
\echo '=== 6. bytes on disk ==='
\echo 'The foreign table''s store is the directory $PGDATA/':store_dir
\echo '(lsm_store_size: what its files take on disk); the heap table''s size'
\echo 'counts its TOAST table, free space and visibility maps and its indexes.'
\echo
SELECT lsm_store_size('tweets') AS store_bytes \gset
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
WITH files AS (
    SELECT CASE WHEN f LIKE '%.sst' THEN 'SSTables (.sst)'
                WHEN f LIKE '%.vfn' THEN 'value filter hierarchy nodes (.vfn)'
                WHEN f LIKE '%.log' THEN 'write-ahead log (.log)'
                WHEN f LIKE '%.mem' THEN 'shared memtable (.mem), blocks held'
                ELSE f END AS kind,
           f, (pg_stat_file(:'store_dir' || '/' || f)).size AS len
    FROM pg_ls_dir(:'store_dir') f
)
SELECT kind, count(*) AS files,
       pg_size_pretty(CASE WHEN kind LIKE 'shared memtable%'
                           THEN greatest(0, :store_bytes::int8 -
                                (SELECT sum(len) FROM files WHERE f NOT LIKE '%.mem'))
                           ELSE sum(len) END) AS size
FROM files
GROUP BY 1 ORDER BY min(f);

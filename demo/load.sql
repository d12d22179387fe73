--
-- demo/load.sql: copies tweets_src into one table and records the time and
-- the backend's peak memory in demo_loads (run by demo/run, once per table,
-- each time in a new session so that the peak is this load's; reported by
-- demo/loaded.sql).
--
-- psql variables: tbl (the table), label (what to call it), rows, chunk.
--
-- The rows go in chunks of :chunk ids, one transaction each (\gexec runs
-- every INSERT on its own, in autocommit), the same way for both tables.
-- lsm_fdw buffers a transaction's writes in the backend until commit.
-- Past its first 1,000 rows (lsm_fdw.bulk_insert_rows) each INSERT loads
-- as COPY does, to sorted runs on disk, and each commit puts its rows in
-- the store as SSTables (the ids ascend, so in the last level, with no
-- compaction): in chunks of 100,000 the loading backend peaks at ~175 MB
-- (VmHWM) and takes ~1.0 s for 1,000,000 rows.  DEMO_CHUNK=1000000 loads
-- in one transaction.
--
-- The time is taken on the server (clock_timestamp), from before the first
-- INSERT to after the last commit.  The peak is the backend's VmHWM: its
-- resident set at its largest, shared buffers it touched included.
--

SELECT clock_timestamp() AS t0 \gset

SELECT format('INSERT INTO %I SELECT * FROM tweets_src WHERE id BETWEEN %s AND %s',
              :'tbl', lo, least(lo + :chunk - 1, :rows))
FROM generate_series(1, :rows, :chunk) lo \gexec

INSERT INTO demo_loads (label, seconds, peak_bytes)
SELECT :'label',
       extract(epoch FROM clock_timestamp() - :'t0'::timestamptz),
       (regexp_match(pg_read_file('/proc/self/status'),
                     'VmHWM:\s+(\d+) kB'))[1]::int8 * 1024;

--
-- test/bench/sql/copy.sql: one timed COPY FROM a file into one table, or
-- one INSERT ... SELECT from the heap table bench_src, in a session of its
-- own (run by test/bench/sql/run.sh).
--
-- psql variables: tbl (the table), datafile (server-side file), pidfile
-- (where to write this backend's pid, so that the script can sample its
-- memory while the load runs), how (copy, the default, or insert).
--
-- Prints one line "copy_result seconds=S hwm_kb=K": S from just before the
-- COPY to just after its commit (autocommit: the foreign table's pending
-- writes are applied at commit), measured on the server; K the backend's
-- VmHWM (peak resident set, shared buffers it touched included) after it.
--

\set ON_ERROR_STOP 1

SELECT pg_backend_pid() AS pid \gset
\o :pidfile
\qecho :pid
\o
-- time for the script to start sampling this backend
SELECT pg_sleep(0.3) \g /dev/null

\if :{?how}
\else
\set how copy
\endif
SELECT :'how' = 'insert' AS by_insert \gset

SELECT clock_timestamp() AS t0 \gset
\if :by_insert
INSERT INTO :tbl SELECT * FROM bench_src;
\else
COPY :tbl FROM :'datafile';
\endif
SELECT format('copy_result seconds=%s hwm_kb=%s',
              extract(epoch FROM clock_timestamp() - :'t0'::timestamptz),
              (regexp_match(pg_read_file('/proc/self/status'),
                            'VmHWM:\s+(\d+) kB'))[1]) AS result \gset
\echo :result

--
-- Concurrent transactions changing the same rows.  There are no row locks:
-- the first transaction to commit a change of a row wins, and a later one
-- that changed the same row fails at COMMIT with serialization_failure
-- (40001), as under REPEATABLE READ, so no update is ever lost.  A second
-- session is opened with dblink.
--
CREATE SERVER lsm_conflict_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE counters (id int OPTIONS (key 'true'), n int)
  SERVER lsm_conflict_srv;
CREATE FOREIGN TABLE t1 (k int OPTIONS (key 'true'), v text)
  SERVER lsm_conflict_srv;
CREATE FOREIGN TABLE t2 (k int OPTIONS (key 'true'), v text)
  SERVER lsm_conflict_srv;
INSERT INTO counters SELECT g, 0 FROM generate_series(1, 10) g;
CREATE EXTENSION dblink;
SELECT dblink_connect('other',
  format('dbname=%s host=%s port=%s', current_database(),
         split_part(current_setting('unix_socket_directories'), ',', 1),
         current_setting('port')));
\set VERBOSITY default

-- both increment row 1: the later commit fails, the first one's stays
BEGIN;
UPDATE counters SET n = n + 1 WHERE id = 1;
SELECT dblink_exec('other', $$UPDATE counters SET n = n + 10 WHERE id = 1$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id = 1;
-- a retry succeeds
UPDATE counters SET n = n + 1 WHERE id = 1;
SELECT * FROM counters WHERE id = 1;

-- a delete against an update, an update against a delete
BEGIN;
DELETE FROM counters WHERE id = 2;
SELECT dblink_exec('other', $$UPDATE counters SET n = 5 WHERE id = 2$$);
COMMIT;                                                     -- ERROR
BEGIN;
UPDATE counters SET n = 7 WHERE id = 3;
SELECT dblink_exec('other', $$DELETE FROM counters WHERE id = 3$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id IN (2, 3) ORDER BY id;

-- an update that moves the row to another key
BEGIN;
UPDATE counters SET id = 50 WHERE id = 4;
SELECT dblink_exec('other', $$UPDATE counters SET n = 1 WHERE id = 4$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id IN (4, 50) ORDER BY id;

-- no conflict: different rows, rows only read, the transaction's own
-- rewrites of a row, and a concurrent change that leaves the row as it was
BEGIN;
UPDATE counters SET n = n + 1 WHERE id = 5;
UPDATE counters SET n = n + 1 WHERE id = 5;
SELECT n FROM counters WHERE id = 6;
SELECT dblink_exec('other', $$UPDATE counters SET n = n + 1 WHERE id IN (6, 7)$$);
UPDATE counters SET n = n + 1 WHERE id = 8;
SELECT dblink_exec('other', $$UPDATE counters SET n = n WHERE id = 8$$);
COMMIT;
SELECT * FROM counters WHERE id BETWEEN 5 AND 8 ORDER BY id;

-- DELETE and UPDATE through the value search and key range paths carry
-- the row version too
BEGIN;
UPDATE counters SET n = 100 WHERE n = 2;                   -- row 5
SELECT dblink_exec('other', $$UPDATE counters SET n = 3 WHERE id = 5$$);
COMMIT;                                                     -- ERROR
BEGIN;
DELETE FROM counters WHERE id > 9;                          -- row 10
SELECT dblink_exec('other', $$UPDATE counters SET n = 3 WHERE id = 10$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id IN (5, 10) ORDER BY id;

-- ON CONFLICT DO NOTHING: a key committed meanwhile keeps the other row
BEGIN;
INSERT INTO t1 VALUES (100, 'ours') ON CONFLICT DO NOTHING;
SELECT dblink_exec('other', $$INSERT INTO t1 VALUES (100, 'theirs')$$);
COMMIT;
SELECT * FROM t1 WHERE k = 100;
-- and the rows of the statement that did not conflict are written
BEGIN;
INSERT INTO t1 VALUES (101, 'ours'), (102, 'ours'), (103, 'ours') ON CONFLICT DO NOTHING;
SELECT dblink_exec('other', $$INSERT INTO t1 VALUES (102, 'theirs')$$);
COMMIT;
SELECT * FROM t1 WHERE k BETWEEN 101 AND 103 ORDER BY k;

-- ON CONFLICT (key) DO UPDATE: the later of two transactions that update
-- the same row fails at COMMIT, and so does one that found a key absent
-- that another transaction inserted and committed first; the committed
-- row stays, and a retry updates it
BEGIN;
INSERT INTO counters VALUES (7, 100)
  ON CONFLICT (id) DO UPDATE SET n = counters.n + 1;
SELECT dblink_exec('other', $$INSERT INTO counters VALUES (7, 100)
  ON CONFLICT (id) DO UPDATE SET n = counters.n + 10$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id = 7;
BEGIN;
INSERT INTO counters VALUES (60, 1)
  ON CONFLICT (id) DO UPDATE SET n = counters.n + 1;
SELECT dblink_exec('other', $$INSERT INTO counters VALUES (60, 1)
  ON CONFLICT (id) DO UPDATE SET n = counters.n + 1$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id = 60;
INSERT INTO counters VALUES (60, 1)
  ON CONFLICT (id) DO UPDATE SET n = counters.n + 1;
SELECT * FROM counters WHERE id = 60;
-- against a delete of the row it updates
BEGIN;
INSERT INTO counters VALUES (6, 1)
  ON CONFLICT (id) DO UPDATE SET n = counters.n + 1;
SELECT dblink_exec('other', $$DELETE FROM counters WHERE id = 6$$);
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id = 6;

-- a failed check on one table leaves every table untouched
BEGIN;
INSERT INTO t1 VALUES (1, 'ours');
INSERT INTO t2 VALUES (1, 'ours');
SELECT dblink_exec('other', $$INSERT INTO t2 VALUES (1, 'theirs')$$);
COMMIT;                                                     -- ERROR
SELECT * FROM t1 WHERE k = 1;
SELECT * FROM t2 WHERE k = 1;
BEGIN;
INSERT INTO t2 VALUES (2, 'ours');
UPDATE counters SET n = -1 WHERE id = 9;
SELECT dblink_exec('other', $$UPDATE counters SET n = 9 WHERE id = 9$$);
COMMIT;                                                     -- ERROR
SELECT * FROM t2 WHERE k = 2;
SELECT * FROM counters WHERE id = 9;

-- a change committed while an UPDATE or DELETE runs (here through the
-- other session, by a function the statement calls) is a conflict, even if
-- the statement reads the table again meanwhile: the version its commit
-- checks is that of the row its scan read
INSERT INTO counters VALUES (20, 0), (21, 0);
CREATE FUNCTION bump_meanwhile(k int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dblink_exec('other',
    format('UPDATE counters SET n = n + 10 WHERE id = %s', k));
  RETURN (SELECT n FROM counters WHERE id = k);
END $$;
BEGIN;
UPDATE counters SET n = n + 1 + 0 * bump_meanwhile(id) WHERE id = 20
  RETURNING n;
COMMIT;                                                     -- ERROR
BEGIN;
DELETE FROM counters WHERE id = 21 AND bump_meanwhile(id) >= 0;
COMMIT;                                                     -- ERROR
SELECT * FROM counters WHERE id IN (20, 21) ORDER BY id;
DROP FUNCTION bump_meanwhile(int);

-- the same holds for changes moved to disk (beyond lsm_fdw.pending_memory):
-- a row the large UPDATE changed, updated meanwhile by another session,
-- fails the commit; so does one inserted meanwhile with a key it inserted
CREATE FOREIGN TABLE wide (k int OPTIONS (key 'true'), n int, pad text)
  SERVER lsm_conflict_srv;
INSERT INTO wide SELECT g, 0, repeat('w', 100) FROM generate_series(1, 20000) g;
SET lsm_fdw.pending_memory = '1MB';
BEGIN;
UPDATE wide SET n = n + 1;
SELECT dblink_exec('other', $$UPDATE wide SET n = 100 WHERE k = 12345$$);
COMMIT;                                                     -- ERROR
BEGIN;
DELETE FROM wide WHERE k > 10000;
SELECT dblink_exec('other', $$DELETE FROM wide WHERE k = 15000$$);
COMMIT;                                                     -- ERROR
BEGIN;
UPDATE wide SET k = k + 100000;
SELECT dblink_exec('other', $$INSERT INTO wide VALUES (119999, -1, 'x')$$);
COMMIT;                                                     -- ERROR
SELECT count(*), sum(n), min(k), max(k) FROM wide;
-- no conflict: the other session changed rows this one did not
BEGIN;
UPDATE wide SET n = n + 1 WHERE k <= 15000;
SELECT dblink_exec('other', $$UPDATE wide SET n = n + 5 WHERE k > 19990$$);
COMMIT;
SELECT count(*), sum(n) FROM wide;
RESET lsm_fdw.pending_memory;

SELECT dblink_disconnect('other');
DROP EXTENSION dblink;
DROP SERVER lsm_conflict_srv CASCADE;

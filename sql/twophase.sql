--
-- Two-phase commit, and commits across several foreign tables (or foreign
-- and native tables), which are atomic: each store's writes are prepared
-- (durable, invisible, conflicts decided) and then applied or discarded as
-- PostgreSQL decided the transaction (docs/architecture.md, "Prepared
-- batches").  The test server runs with max_prepared_transactions > 0.
--
CREATE SERVER lsm_2pc_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE acct (id int OPTIONS (key 'true'), who text, balance int)
  SERVER lsm_2pc_srv;
CREATE FOREIGN TABLE ledger (id int OPTIONS (key 'true'), note text)
  SERVER lsm_2pc_srv;
CREATE TABLE heap_log (id int PRIMARY KEY, note text);
INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50);

-- a prepared transaction's writes stay invisible until COMMIT PREPARED
BEGIN;
UPDATE acct SET balance = balance - 30 WHERE id = 1;
UPDATE acct SET balance = balance + 30 WHERE id = 2;
INSERT INTO ledger VALUES (1, 'ann pays bob 30');
INSERT INTO heap_log VALUES (1, 'transfer');
PREPARE TRANSACTION 'xfer1';
SELECT gid FROM pg_prepared_xacts WHERE gid = 'xfer1';
SELECT * FROM acct ORDER BY id;
SELECT * FROM ledger;
SELECT * FROM heap_log;
COMMIT PREPARED 'xfer1';
SELECT * FROM acct ORDER BY id;
SELECT * FROM acct WHERE id = 2;
SELECT * FROM ledger;
SELECT * FROM heap_log;

-- ROLLBACK PREPARED discards them
BEGIN;
DELETE FROM acct WHERE id = 2;
INSERT INTO ledger VALUES (2, 'bob leaves');
PREPARE TRANSACTION 'xfer2';
ROLLBACK PREPARED 'xfer2';
SELECT * FROM acct ORDER BY id;
SELECT * FROM ledger ORDER BY id;

-- while it is prepared, a commit that writes one of its keys fails (as
-- insert, update or delete), whatever the decision will be; others commit
BEGIN;
UPDATE acct SET balance = 0 WHERE id = 1;
INSERT INTO ledger VALUES (5, 'five');
PREPARE TRANSACTION 'xfer3';
\set VERBOSITY terse
UPDATE acct SET balance = 1 WHERE id = 1;                    -- ERROR
DELETE FROM acct WHERE id = 1;                               -- ERROR
INSERT INTO ledger VALUES (5, 'mine');                       -- ERROR
\set VERBOSITY default
INSERT INTO acct VALUES (3, 'cy', 7);
SELECT * FROM acct ORDER BY id;
COMMIT PREPARED 'xfer3';
SELECT * FROM acct ORDER BY id;
SELECT * FROM ledger ORDER BY id;
INSERT INTO ledger VALUES (5, 'again');                      -- ERROR

-- COMMIT PREPARED in another session: seen here at the next statement,
-- through a key lookup, a scan and a value search alike
CREATE EXTENSION IF NOT EXISTS dblink;
SELECT dblink_connect('other',
  format('dbname=%s host=%s port=%s', current_database(),
         split_part(current_setting('unix_socket_directories'), ',', 1),
         current_setting('port')));
BEGIN;
INSERT INTO ledger VALUES (6, 'from afar');
UPDATE acct SET who = 'cyd' WHERE id = 3;
PREPARE TRANSACTION 'xfer4';
SELECT dblink_exec('other', $$COMMIT PREPARED 'xfer4'$$);
SELECT * FROM ledger WHERE id = 6;
SELECT * FROM acct WHERE who = 'cyd';
SELECT count(*) FROM ledger;
SELECT * FROM dblink('other', 'SELECT id, note FROM ledger ORDER BY id')
  AS t(id int, note text);

-- a prepared transaction that read and wrote in savepoints
BEGIN;
INSERT INTO ledger VALUES (7, 'kept');
SAVEPOINT s;
INSERT INTO ledger VALUES (8, 'undone');
ROLLBACK TO SAVEPOINT s;
UPDATE ledger SET note = note || '!' WHERE id = 7;
PREPARE TRANSACTION 'xfer5';
SELECT dblink_exec('other', $$COMMIT PREPARED 'xfer5'$$);
SELECT * FROM ledger WHERE id >= 7 ORDER BY id;

-- a commit across two foreign tables and a native one: all three at once
BEGIN;
INSERT INTO acct VALUES (4, 'dee', 1);
INSERT INTO ledger VALUES (9, 'dee joins');
INSERT INTO heap_log VALUES (9, 'dee joins');
COMMIT;
SELECT a.who, l.note, h.note
  FROM acct a, ledger l, heap_log h
 WHERE a.id = 4 AND l.id = 9 AND h.id = 9;
-- and a check failing at commit in the second store leaves the first
-- untouched
BEGIN;
INSERT INTO acct VALUES (5, 'eve', 1);
INSERT INTO ledger VALUES (10, 'mine');
SELECT dblink_exec('other', $$INSERT INTO ledger VALUES (10, 'theirs')$$);
COMMIT;                                                      -- ERROR
SELECT * FROM acct WHERE id = 5;
SELECT * FROM ledger WHERE id = 10;
-- a rolled-back transaction across them leaves nothing
BEGIN;
INSERT INTO acct VALUES (6, 'fay', 1);
INSERT INTO ledger VALUES (11, 'fay');
ROLLBACK;
SELECT count(*) FROM acct WHERE id = 6;
SELECT count(*) FROM ledger WHERE id = 11;

-- lsm_fdw.atomic_commit = off: committed table by table, faster (a crash in
-- the middle of the commit could leave one without the other)
SET lsm_fdw.atomic_commit = off;
BEGIN;
INSERT INTO acct VALUES (7, 'gus', 1);
INSERT INTO ledger VALUES (12, 'gus');
COMMIT;
RESET lsm_fdw.atomic_commit;
SELECT (SELECT who FROM acct WHERE id = 7), (SELECT note FROM ledger WHERE id = 12);

-- no prepared write is left behind
SELECT * FROM pg_prepared_xacts;

SELECT dblink_disconnect('other');
DROP EXTENSION dblink;
DROP FOREIGN TABLE acct, ledger;
DROP TABLE heap_log;
DROP SERVER lsm_2pc_srv;

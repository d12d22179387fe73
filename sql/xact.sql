--
-- Transactions: writes are buffered and reach the store at commit; a
-- rollback (or an error) discards them, a rollback to a savepoint discards
-- the savepoint's part; a statement sees the earlier statements of its
-- transaction; a dropped table's store goes when the drop commits.
--
CREATE SERVER lsm_xact_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE kv (k text OPTIONS (key 'true'), v int)
  SERVER lsm_xact_srv;
INSERT INTO kv VALUES ('a', 1), ('b', 2), ('c', 3);

-- rollback
BEGIN;
INSERT INTO kv VALUES ('d', 4);
UPDATE kv SET v = v * 10;
DELETE FROM kv WHERE k = 'a';
SELECT * FROM kv;
ROLLBACK;
SELECT * FROM kv;

-- an error aborts the transaction and discards its writes
BEGIN;
INSERT INTO kv VALUES ('e', 5);
INSERT INTO kv VALUES ('a', 0);                             -- ERROR
COMMIT;
SELECT * FROM kv;

-- a statement sees the earlier statements of its transaction, through both
-- full scans and key lookups
BEGIN;
INSERT INTO kv VALUES ('d', 4);
SELECT * FROM kv WHERE k = 'd';
UPDATE kv SET v = v + 100 WHERE k = 'd';
SELECT * FROM kv WHERE k = 'd';
DELETE FROM kv WHERE k = 'b';
SELECT * FROM kv WHERE k = 'b';
INSERT INTO kv VALUES ('b', 20);                            -- deleted: free
UPDATE kv SET k = 'z' WHERE k = 'c';
SELECT * FROM kv;
SELECT * FROM kv WHERE k = 'c';
SELECT * FROM kv WHERE k = 'z';
INSERT INTO kv VALUES ('z', 0);                             -- ERROR
ROLLBACK;
BEGIN;
INSERT INTO kv VALUES ('d', 4);
DELETE FROM kv WHERE k = 'd';                               -- inserted, gone
UPDATE kv SET v = -v;
UPDATE kv SET v = -v WHERE k = 'a';
COMMIT;
SELECT * FROM kv;

-- savepoints
BEGIN;
INSERT INTO kv VALUES ('s1', 1);
SAVEPOINT one;
INSERT INTO kv VALUES ('s2', 2);
UPDATE kv SET v = 0 WHERE k = 's1';
SAVEPOINT two;
DELETE FROM kv;
SELECT count(*) FROM kv;
ROLLBACK TO two;
SELECT * FROM kv;
ROLLBACK TO one;
SELECT * FROM kv;
SAVEPOINT three;
INSERT INTO kv VALUES ('s3', 3);
RELEASE three;
SAVEPOINT four;
SAVEPOINT five;
INSERT INTO kv VALUES ('s5', 5);
RELEASE five;                       -- its write now belongs to four
ROLLBACK TO four;
SELECT * FROM kv;
INSERT INTO kv VALUES ('s1', 0);                            -- ERROR
ROLLBACK TO three;                                          -- ERROR: released
ROLLBACK TO one;
SELECT * FROM kv;
INSERT INTO kv VALUES ('s6', 6);
COMMIT;
SELECT * FROM kv;

-- PL/pgSQL exception blocks are subtransactions
DO $$
BEGIN
  INSERT INTO kv VALUES ('p1', 1);
  BEGIN
    INSERT INTO kv VALUES ('p2', 2);
    INSERT INTO kv VALUES ('a', 0);     -- unique_violation
  EXCEPTION WHEN unique_violation THEN
    RAISE NOTICE 'caught: %', SQLERRM;
  END;
  BEGIN
    INSERT INTO kv VALUES ('p3', 3);
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'not reached';
  END;
END $$;
SELECT * FROM kv WHERE k LIKE 'p%';

-- a cursor keeps its snapshot; later statements see the changes
BEGIN;
DECLARE cur CURSOR FOR SELECT * FROM kv WHERE k < 'p';
FETCH 1 FROM cur;
DELETE FROM kv WHERE k < 'p';
INSERT INTO kv VALUES ('aa', 11);
FETCH ALL FROM cur;
SELECT * FROM kv WHERE k < 'p';
ROLLBACK;

-- TRUNCATE is transactional
BEGIN;
TRUNCATE kv;
SELECT count(*) FROM kv;
INSERT INTO kv VALUES ('t', 1);
ROLLBACK;
SELECT count(*) FROM kv;

-- several tables in one transaction
CREATE FOREIGN TABLE kv2 (k int OPTIONS (key 'true'), v text)
  SERVER lsm_xact_srv;
BEGIN;
INSERT INTO kv2 SELECT row_number() OVER (ORDER BY k), k FROM kv;
DELETE FROM kv WHERE k LIKE 'p%';
COMMIT;
SELECT * FROM kv2;
SELECT * FROM kv;

-- (two-phase commit: twophase.sql)

-- another session sees only committed writes
CREATE EXTENSION dblink;
SELECT dblink_connect('other',
  format('dbname=%s host=%s port=%s', current_database(),
         split_part(current_setting('unix_socket_directories'), ',', 1),
         current_setting('port')));
BEGIN;
INSERT INTO kv VALUES ('pending', 1);
SELECT * FROM dblink('other', $$SELECT * FROM kv WHERE k = 'pending'$$)
  AS t(k text, v int);
COMMIT;
SELECT * FROM dblink('other', $$SELECT * FROM kv WHERE k = 'pending'$$)
  AS t(k text, v int);
SELECT dblink_exec('other', $$UPDATE kv SET v = 2 WHERE k = 'pending'$$);
SELECT * FROM kv WHERE k = 'pending';
-- an insert of a key the other session committed meanwhile fails
SELECT dblink_exec('other', $$INSERT INTO kv VALUES ('theirs', 1)$$);
INSERT INTO kv VALUES ('theirs', 2);                        -- ERROR
-- two transactions inserting the same new key: the later commit fails, as
-- with a deferred unique constraint
BEGIN;
INSERT INTO kv VALUES ('race', 1);
SELECT dblink_exec('other', $$INSERT INTO kv VALUES ('race', 2)$$);
COMMIT;                                                     -- ERROR
SELECT * FROM kv WHERE k = 'race';
BEGIN;
INSERT INTO kv VALUES ('race2', 1);
DELETE FROM kv WHERE k = 'race2';
SELECT dblink_exec('other', $$INSERT INTO kv VALUES ('race2', 2)$$);
COMMIT;                                     -- nothing of ours to write
SELECT * FROM kv WHERE k = 'race2';
SELECT dblink_disconnect('other');
DROP EXTENSION dblink;

-- DROP removes a store at the default location when the drop commits
CREATE FUNCTION lsm_store_exists(reloid oid) RETURNS bool LANGUAGE sql AS $$
  SELECT coalesce((pg_stat_file(format('lsm_fdw/%s/%s',
    (SELECT oid FROM pg_database WHERE datname = current_database()),
    reloid), true)).isdir, false)
$$;
CREATE FOREIGN TABLE doomed (k int OPTIONS (key 'true')) SERVER lsm_xact_srv;
INSERT INTO doomed VALUES (1);
SELECT 'doomed'::regclass::oid AS doomed_oid \gset
SELECT lsm_store_exists(:doomed_oid) AS store_exists;
BEGIN;
DROP FOREIGN TABLE doomed;
ROLLBACK;
SELECT lsm_store_exists(:doomed_oid) AS store_exists;
SELECT * FROM doomed;
BEGIN;
SAVEPOINT s;
DROP FOREIGN TABLE doomed;
ROLLBACK TO s;
COMMIT;
SELECT lsm_store_exists(:doomed_oid) AS store_exists;
-- a new session has not loaded the library before the DROP
\c -
DROP FOREIGN TABLE doomed;
SELECT lsm_store_exists(:doomed_oid) AS store_exists;
-- a store created for a table whose creation rolls back goes too
BEGIN;
CREATE FOREIGN TABLE stillborn (k int OPTIONS (key 'true'))
  SERVER lsm_xact_srv;
INSERT INTO stillborn VALUES (1);
SELECT 'stillborn'::regclass::oid AS stillborn_oid \gset
SELECT lsm_store_exists(:stillborn_oid) AS store_exists;
ROLLBACK;
SELECT lsm_store_exists(:stillborn_oid) AS store_exists;
-- and DROP ... CASCADE drops the stores of every table it drops
SELECT 'kv'::regclass::oid AS kv_oid, 'kv2'::regclass::oid AS kv2_oid \gset
DROP SERVER lsm_xact_srv CASCADE;
SELECT lsm_store_exists(:kv_oid) AS kv_exists,
  lsm_store_exists(:kv2_oid) AS kv2_exists;
DROP FUNCTION lsm_store_exists(oid);
-- the same holds under a server's directory (here in the data directory, so
-- that pg_stat_file may look)
DO $$
BEGIN
  EXECUTE format('CREATE SERVER lsm_xact_dir FOREIGN DATA WRAPPER lsm_fdw
    OPTIONS (directory %L)',
    current_setting('data_directory') || '/lsm_xact_regress');
END $$;
CREATE FOREIGN TABLE indir (k int OPTIONS (key 'true')) SERVER lsm_xact_dir;
INSERT INTO indir VALUES (1);
SELECT lsm_store_path('indir') AS indir_path \gset
SELECT (pg_stat_file(:'indir_path', true)).isdir AS store_exists;
BEGIN;
DROP FOREIGN TABLE indir;
ROLLBACK;
SELECT (pg_stat_file(:'indir_path', true)).isdir AS store_exists;
DROP FOREIGN TABLE indir;
SELECT pg_stat_file(:'indir_path', true) IS NULL AS store_removed;
-- DROP SCHEMA ... CASCADE and DROP OWNED drop tables too
CREATE SCHEMA lsm_xact_schema;
CREATE FOREIGN TABLE lsm_xact_schema.inschema (k int OPTIONS (key 'true'))
  SERVER lsm_xact_dir;
SELECT lsm_store_path('lsm_xact_schema.inschema') AS inschema_path \gset
DROP SCHEMA lsm_xact_schema CASCADE;
SELECT pg_stat_file(:'inschema_path', true) IS NULL AS store_removed;
CREATE ROLE regress_lsm_xact_owner;
GRANT USAGE ON FOREIGN SERVER lsm_xact_dir TO regress_lsm_xact_owner;
GRANT CREATE ON SCHEMA public TO regress_lsm_xact_owner;
SET ROLE regress_lsm_xact_owner;
CREATE FOREIGN TABLE owned (k int OPTIONS (key 'true')) SERVER lsm_xact_dir;
INSERT INTO owned VALUES (1);
RESET ROLE;
SELECT lsm_store_path('owned') AS owned_path \gset
DROP OWNED BY regress_lsm_xact_owner;
SELECT pg_stat_file(:'owned_path', true) IS NULL AS store_removed;
DROP ROLE regress_lsm_xact_owner;
CREATE FOREIGN TABLE indir (k int OPTIONS (key 'true')) SERVER lsm_xact_dir;
SELECT lsm_store_path('indir') AS indir_path \gset
DROP SERVER lsm_xact_dir CASCADE;
SELECT pg_stat_file(:'indir_path', true) IS NULL AS store_removed;

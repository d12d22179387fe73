--
-- DDL on tables that hold rows: a change of definition is taken only where
-- the stored rows read as they were written; anything else is refused
-- while the table holds rows, and taken on an empty one (the layout the
-- rows were written with is in the store's metadata file).
--
CREATE SERVER lsm_ddl_srv FOREIGN DATA WRAPPER lsm_fdw;

-- ALTER COLUMN ... TYPE
CREATE FOREIGN TABLE t (id int OPTIONS (key 'true'), b bytea, s text,
  v varchar(3), c char(3), n numeric(6,2), ts timestamp(3), i int)
  SERVER lsm_ddl_srv;
INSERT INTO t VALUES
  (1, '\x00ff', 'long text', 'abc', 'ab', 1.5, '2024-01-01 12:00:00.123', 7),
  (3, 'abc', 'x', 'x', 'x', 2, '2024-01-02', 8);
-- another codec, or values the new type does not have: refused
ALTER FOREIGN TABLE t ALTER COLUMN b TYPE text;                -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE varchar(3);          -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE varchar(2);          -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE char(2);             -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE bpchar;              -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE char(20);            -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN n TYPE numeric(6,3);        -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN n TYPE numeric(5,2);        -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN ts TYPE timestamptz(3);     -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN ts TYPE timestamp(0);       -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN i TYPE bigint;              -- ERROR
ALTER FOREIGN TABLE t ALTER COLUMN i TYPE float8;              -- ERROR
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
ALTER FOREIGN TABLE t ALTER COLUMN i TYPE posint;              -- ERROR
-- several subcommands: all or nothing
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE varchar(10),
  ALTER COLUMN b TYPE text;                                    -- ERROR
SELECT * FROM t ORDER BY id;
-- the same bytes, read the same way: taken
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE varchar(10);
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE text;
ALTER FOREIGN TABLE t ALTER COLUMN s TYPE varchar;
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE char(5);
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE varchar(5);
ALTER FOREIGN TABLE t ALTER COLUMN n TYPE numeric(8,2);
ALTER FOREIGN TABLE t ALTER COLUMN ts TYPE timestamp;
ALTER FOREIGN TABLE t RENAME COLUMN s TO s2;
ALTER FOREIGN TABLE t ADD COLUMN e int;
ALTER FOREIGN TABLE t DROP COLUMN b;
SELECT * FROM t ORDER BY id;
SELECT * FROM t WHERE id = 3;
INSERT INTO t VALUES (5, 'new', 'a longer v', 'abcde', 123456.78,
  '2024-01-03 10:00:00.123456', 9, 10);
-- v holds longer values now: it cannot go back
ALTER FOREIGN TABLE t ALTER COLUMN v TYPE varchar(3);          -- ERROR
SELECT * FROM t ORDER BY id;
-- a domain may give way to its base type
CREATE FOREIGN TABLE dom (id int OPTIONS (key 'true'), p posint)
  SERVER lsm_ddl_srv;
INSERT INTO dom VALUES (1, 5);
ALTER FOREIGN TABLE dom ALTER COLUMN p TYPE int;
ALTER FOREIGN TABLE dom ALTER COLUMN p TYPE posint;            -- ERROR
SELECT * FROM dom;

-- the key column and the key option
CREATE FOREIGN TABLE k (id int OPTIONS (key 'true'), name text)
  SERVER lsm_ddl_srv;
INSERT INTO k VALUES (1, 'one'), (3, 'three');
ALTER FOREIGN TABLE k ALTER COLUMN id TYPE bigint;             -- ERROR
ALTER FOREIGN TABLE k ALTER COLUMN id OPTIONS (DROP key),
  ALTER COLUMN name OPTIONS (ADD key 'true');                  -- ERROR
ALTER FOREIGN TABLE k OPTIONS (ADD key 'name'),
  ALTER COLUMN id OPTIONS (DROP key);                          -- ERROR
SELECT * FROM k WHERE id = 3;
-- without a key the table cannot be read; the same key brings it back
ALTER FOREIGN TABLE k ALTER COLUMN id OPTIONS (DROP key);
SELECT * FROM k WHERE id = 3;                                  -- ERROR
ALTER FOREIGN TABLE k ALTER COLUMN name OPTIONS (ADD key 'true'); -- ERROR
ALTER FOREIGN TABLE k OPTIONS (ADD key 'id');
SELECT * FROM k WHERE id = 3;
-- an empty table takes any change
DELETE FROM k;
ALTER FOREIGN TABLE k ALTER COLUMN id TYPE bigint;
INSERT INTO k VALUES (3, 'three');
SELECT * FROM k WHERE id = 3;
DELETE FROM k;
ALTER FOREIGN TABLE k OPTIONS (DROP key),
  ALTER COLUMN name OPTIONS (ADD key 'true');
INSERT INTO k VALUES (4, 'four');
SELECT * FROM k WHERE name = 'four';
SELECT * FROM k;

-- transactions: a change rolled back leaves the layout as it was; the
-- transaction's own writes count as rows
BEGIN;
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE varchar(50);
ROLLBACK;
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE varchar(4);          -- ERROR
BEGIN;
SAVEPOINT s;
ALTER FOREIGN TABLE t ALTER COLUMN c TYPE text;
ROLLBACK TO s;
COMMIT;
SELECT * FROM t WHERE id = 1;
CREATE FOREIGN TABLE e (id int OPTIONS (key 'true'), v bytea)
  SERVER lsm_ddl_srv;
BEGIN;
INSERT INTO e VALUES (1, 'abc');
ALTER FOREIGN TABLE e ALTER COLUMN v TYPE text;                -- ERROR
ROLLBACK;
BEGIN;
ALTER FOREIGN TABLE e ALTER COLUMN v TYPE text;
INSERT INTO e VALUES (1, 'abc');
COMMIT;
SELECT * FROM e;
BEGIN;
CREATE FOREIGN TABLE e2 (id int OPTIONS (key 'true'), v text)
  SERVER lsm_ddl_srv;
INSERT INTO e2 VALUES (1, 'abc');
ALTER FOREIGN TABLE e2 ALTER COLUMN id TYPE int8;              -- ERROR
ROLLBACK;
BEGIN;
CREATE FOREIGN TABLE e2 (id int OPTIONS (key 'true'), v text)
  SERVER lsm_ddl_srv;
ALTER FOREIGN TABLE e2 ALTER COLUMN id TYPE int8;
INSERT INTO e2 VALUES (1, 'abc');
COMMIT;
SELECT * FROM e2 WHERE id = 1;

-- a change made where the checks did not run (a new session that has not
-- loaded the library, event triggers off): reads refuse the rows
\c -
SET session_replication_role = replica;
ALTER FOREIGN TABLE e2 ALTER COLUMN v TYPE bytea;
RESET session_replication_role;
SELECT * FROM e2;                                              -- ERROR
ALTER FOREIGN TABLE e2 ALTER COLUMN v TYPE text;
SELECT * FROM e2;
-- with the library loaded, the check runs at commit
SET session_replication_role = replica;
ALTER FOREIGN TABLE e2 ALTER COLUMN v TYPE bytea;              -- ERROR
RESET session_replication_role;

-- the value filter options are fixed once the store is used
ALTER FOREIGN TABLE e OPTIONS (ADD value_filter_bits '4096');  -- ERROR
ALTER FOREIGN TABLE e OPTIONS (ADD hierarchy_order '4');       -- ERROR
ALTER FOREIGN TABLE e OPTIONS (ADD value_filter_hashes '3',
  memtable_size '1MB');
SELECT * FROM e;
-- sizes that would make the default value filter smaller are taken: the
-- store keeps the value filter it was created with
ALTER FOREIGN TABLE e OPTIONS (SET memtable_size '4kB', ADD file_size '4kB');
SELECT * FROM e;
ALTER FOREIGN TABLE e OPTIONS (DROP file_size, SET memtable_size '1MB');

-- a server's directory cannot move away from its tables' stores
ALTER SERVER lsm_ddl_srv OPTIONS (ADD directory '/tmp/lsm_ddl');  -- ERROR
CREATE SERVER lsm_ddl_empty FOREIGN DATA WRAPPER lsm_fdw;
ALTER SERVER lsm_ddl_empty OPTIONS (ADD directory '/tmp/lsm_ddl');
ALTER SERVER lsm_ddl_empty OPTIONS (DROP directory);
DROP SERVER lsm_ddl_empty;

-- enum columns store the value's OID (sql/types.sql), but inside arrays
-- (and composites, ranges) enums are stored by label: their labels cannot
-- be renamed under rows
CREATE TYPE mood AS ENUM ('blue', 'ok', 'happy');
CREATE FOREIGN TABLE ena (id int OPTIONS (key 'true'), m mood, ms mood[])
  SERVER lsm_ddl_srv;
ALTER TYPE mood RENAME VALUE 'ok' TO 'fine';
INSERT INTO ena VALUES (1, 'fine', '{blue,fine}');
ALTER TYPE mood RENAME VALUE 'fine' TO 'okay';                 -- ERROR
SELECT * FROM ena;
DELETE FROM ena;
ALTER TYPE mood RENAME VALUE 'fine' TO 'okay';

-- composite types: their binary form follows their attributes
CREATE TYPE pair AS (a int, b text);
CREATE FOREIGN TABLE co (id int OPTIONS (key 'true'), p pair, ps pair[])
  SERVER lsm_ddl_srv;
INSERT INTO co VALUES (1, ROW(1, 'x'), ARRAY[ROW(2, 'y')::pair]);
ALTER TYPE pair ADD ATTRIBUTE c int;                           -- ERROR
ALTER TYPE pair ALTER ATTRIBUTE a TYPE bigint;                 -- ERROR
ALTER TYPE pair DROP ATTRIBUTE b;                              -- ERROR
ALTER TYPE pair RENAME ATTRIBUTE b TO bb;
SELECT * FROM co;
SELECT (p).bb FROM co;
-- a table's row type too
CREATE TABLE heap_pair (a int, b text);
CREATE FOREIGN TABLE cot (id int OPTIONS (key 'true'), hp heap_pair)
  SERVER lsm_ddl_srv;
INSERT INTO cot VALUES (1, ROW(1, 'x'));
ALTER TABLE heap_pair ADD COLUMN c int;                        -- ERROR
ALTER TABLE heap_pair ADD CONSTRAINT a_pos CHECK (a > 0);
SELECT * FROM cot;
DELETE FROM cot;
ALTER TABLE heap_pair ADD COLUMN c int;
INSERT INTO cot VALUES (1, ROW(1, 'x', 2));
SELECT * FROM cot;

-- each backend keeps a table's definition until its catalogs change: a
-- renamed key column, a column dropped in a transaction rolled back
CREATE FOREIGN TABLE ren (id int OPTIONS (key 'true'), v text, w int)
  SERVER lsm_ddl_srv;
INSERT INTO ren VALUES (1, 'a', 2);
INSERT INTO ren VALUES (1, 'b', 3);                            -- ERROR
ALTER FOREIGN TABLE ren RENAME COLUMN id TO ident;
INSERT INTO ren VALUES (1, 'b', 3);                            -- ERROR
BEGIN;
ALTER FOREIGN TABLE ren DROP COLUMN w;
SELECT * FROM ren;
ROLLBACK;
SELECT * FROM ren WHERE ident = 1;
DROP FOREIGN TABLE ren;

DROP SERVER lsm_ddl_srv CASCADE;
DROP TABLE heap_pair;
DROP TYPE mood, pair;
DROP DOMAIN posint;

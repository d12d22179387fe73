--
-- Option validation: servers, foreign tables, columns.
-- (pg_regress --load-extension=fdw has created the extension.)
--

-- valid options in every context
CREATE SERVER lsm_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE SERVER lsm_srv_dir FOREIGN DATA WRAPPER lsm_fdw
  OPTIONS (directory '/nonexistent/lsm_fdw_regress');
CREATE FOREIGN TABLE lsm_t1 (
  id int OPTIONS (key 'true'),
  name text,
  note text OPTIONS (value_index 'false')
) SERVER lsm_srv;
CREATE FOREIGN TABLE lsm_t2 (id bigint, v text, w int) SERVER lsm_srv
  OPTIONS (key 'id', memtable_size '8MB', file_size '1048576',
           bits_per_key '10', value_filter_bits '2097152',
           value_filter_hashes '3', hierarchy_order '3');
-- bounds are inclusive; sizes take units; booleans take the GUC spellings
-- (the value filter options may change until the table is first used)
ALTER FOREIGN TABLE lsm_t2 OPTIONS (SET memtable_size '4kB',
  SET file_size '1GB', SET bits_per_key '0', SET value_filter_bits '64',
  SET value_filter_hashes '16', SET hierarchy_order '256');
ALTER FOREIGN TABLE lsm_t2 OPTIONS (SET bits_per_key '64',
  SET memtable_size '1GB', SET value_filter_bits '1073741824',
  SET value_filter_hashes '1', SET hierarchy_order '2');
ALTER FOREIGN TABLE lsm_t2 ALTER COLUMN v OPTIONS (ADD value_index 'off');
ALTER FOREIGN TABLE lsm_t2 ALTER COLUMN w OPTIONS (ADD value_index 'yes');
ALTER FOREIGN TABLE lsm_t2 ALTER COLUMN id OPTIONS (ADD key 'on');
CREATE USER MAPPING FOR CURRENT_USER SERVER lsm_srv;
DROP USER MAPPING FOR CURRENT_USER SERVER lsm_srv;

SELECT srvname, srvoptions FROM pg_foreign_server
  WHERE srvname LIKE 'lsm_srv%' ORDER BY srvname;
SELECT c.relname, ft.ftoptions FROM pg_foreign_table ft
  JOIN pg_class c ON c.oid = ft.ftrelid
  WHERE c.relname LIKE 'lsm_t%' ORDER BY c.relname;
SELECT c.relname, a.attname, a.attfdwoptions FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  WHERE c.relname LIKE 'lsm_t%' AND a.attnum > 0
  ORDER BY c.relname, a.attnum;

-- unknown options, and options of another context
ALTER FOREIGN DATA WRAPPER lsm_fdw OPTIONS (ADD directory '/tmp');  -- ERROR
CREATE SERVER lsm_bad FOREIGN DATA WRAPPER lsm_fdw
  OPTIONS (dir '/tmp');                                             -- ERROR
CREATE SERVER lsm_bad FOREIGN DATA WRAPPER lsm_fdw
  OPTIONS (memtable_size '8MB');                                    -- ERROR
CREATE USER MAPPING FOR CURRENT_USER SERVER lsm_srv
  OPTIONS (user 'alice');                                           -- ERROR
CREATE FOREIGN TABLE lsm_bad (id int) SERVER lsm_srv
  OPTIONS (directory '/tmp');                                       -- ERROR
CREATE FOREIGN TABLE lsm_bad (id int) SERVER lsm_srv
  OPTIONS (value_index 'false');                                    -- ERROR
CREATE FOREIGN TABLE lsm_bad (id int OPTIONS (bits_per_key '10'))
  SERVER lsm_srv;                                                   -- ERROR
ALTER FOREIGN TABLE lsm_t1 ALTER COLUMN name
  OPTIONS (ADD index 'true');                                       -- ERROR
-- option names are case-sensitive, like other FDWs'
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD "Key" 'id');                -- ERROR

-- bad values
CREATE SERVER lsm_bad FOREIGN DATA WRAPPER lsm_fdw
  OPTIONS (directory 'relative/dir');                               -- ERROR
CREATE SERVER lsm_bad FOREIGN DATA WRAPPER lsm_fdw
  OPTIONS (directory '');                                           -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD key '');                    -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD memtable_size 'big');       -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD memtable_size '8 parsecs'); -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD memtable_size '4095');      -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD memtable_size '2GB');       -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD file_size '-1');            -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD file_size '1TB');           -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD bits_per_key '-1');         -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD bits_per_key '65');         -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD bits_per_key '10kB');       -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD bits_per_key '');           -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD value_filter_bits '63');    -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD value_filter_bits '4294967296'); -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD value_filter_hashes '0');   -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD value_filter_hashes '17');  -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD hierarchy_order '1');       -- ERROR
ALTER FOREIGN TABLE lsm_t1 OPTIONS (ADD hierarchy_order '257');     -- ERROR
ALTER FOREIGN TABLE lsm_t1 ALTER COLUMN id
  OPTIONS (SET key 'maybe');                                        -- ERROR
ALTER FOREIGN TABLE lsm_t1 ALTER COLUMN note
  OPTIONS (SET value_index '2');                                    -- ERROR
-- a failed ALTER leaves the options as they were
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'lsm_t1'::regclass;
SELECT attname, attfdwoptions FROM pg_attribute
  WHERE attrelid = 'lsm_t1'::regclass AND attnum > 0 ORDER BY attnum;

-- only superusers may set directory
CREATE ROLE regress_lsm_fdw_user;
GRANT USAGE ON FOREIGN DATA WRAPPER lsm_fdw TO regress_lsm_fdw_user;
SET ROLE regress_lsm_fdw_user;
CREATE SERVER lsm_user_srv FOREIGN DATA WRAPPER lsm_fdw
  OPTIONS (directory '/tmp/lsm_fdw_regress');                       -- ERROR
CREATE SERVER lsm_user_srv FOREIGN DATA WRAPPER lsm_fdw;
ALTER SERVER lsm_user_srv OPTIONS (ADD directory '/tmp/lsm_fdw_regress'); -- ERROR
RESET ROLE;
ALTER SERVER lsm_user_srv OPTIONS (ADD directory '/tmp/lsm_fdw_regress');
ALTER SERVER lsm_user_srv OPTIONS (DROP directory);
DROP SERVER lsm_user_srv;
REVOKE USAGE ON FOREIGN DATA WRAPPER lsm_fdw FROM regress_lsm_fdw_user;
DROP ROLE regress_lsm_fdw_user;

-- a value filter may be no larger than the tables that carry it: at most
-- 8 * min(memtable_size, file_size) bits, rounded up to 512 (superusers
-- too); without value_filter_bits the filter of small tables shrinks to fit
CREATE FOREIGN TABLE lsm_bad (id int OPTIONS (key 'true')) SERVER lsm_srv
  OPTIONS (file_size '4kB', value_filter_bits '1073741824');        -- ERROR
CREATE FOREIGN TABLE lsm_bad (id int OPTIONS (key 'true')) SERVER lsm_srv
  OPTIONS (value_filter_bits '1073741824');                         -- ERROR
CREATE FOREIGN TABLE lsm_bad (id int OPTIONS (key 'true')) SERVER lsm_srv
  OPTIONS (memtable_size '4kB', value_filter_bits '32769');         -- ERROR
ALTER FOREIGN TABLE lsm_t2 OPTIONS (SET file_size '64MB');          -- ERROR
CREATE FOREIGN TABLE lsm_small (id int OPTIONS (key 'true'), v text)
  SERVER lsm_srv OPTIONS (memtable_size '4kB', value_filter_bits '32768');
ALTER FOREIGN TABLE lsm_small OPTIONS (DROP value_filter_bits);
INSERT INTO lsm_small VALUES (1, 'a');
SELECT filter_bits FROM lsm_hierarchy('lsm_small');
DROP FOREIGN TABLE lsm_small;

-- the key column: a column option, or the table option naming a column;
-- checked when the table is used
INSERT INTO lsm_t1 VALUES (1, 'a', 'b');
SELECT * FROM lsm_t1;
CREATE FOREIGN TABLE lsm_nokey (id int, v text) SERVER lsm_srv;
SELECT * FROM lsm_nokey;                                            -- ERROR
INSERT INTO lsm_nokey VALUES (1, 'a');                              -- ERROR
ALTER FOREIGN TABLE lsm_nokey OPTIONS (ADD key 'nosuch');
SELECT * FROM lsm_nokey;                                            -- ERROR
ALTER FOREIGN TABLE lsm_nokey OPTIONS (SET key 'id');
ALTER FOREIGN TABLE lsm_nokey ALTER COLUMN v OPTIONS (ADD key 'true');
SELECT * FROM lsm_nokey;                                            -- ERROR
ALTER FOREIGN TABLE lsm_nokey ALTER COLUMN v OPTIONS (SET key 'false');
SELECT * FROM lsm_nokey;
ALTER FOREIGN TABLE lsm_nokey OPTIONS (DROP key);
ALTER FOREIGN TABLE lsm_nokey ALTER COLUMN id OPTIONS (ADD key 'true');
ALTER FOREIGN TABLE lsm_nokey ALTER COLUMN v OPTIONS (SET key 'true');
-- two columns with key 'true': a composite key (id, v), empty so far
SELECT * FROM lsm_nokey;
ALTER FOREIGN TABLE lsm_nokey ALTER COLUMN v OPTIONS (DROP key);
INSERT INTO lsm_nokey VALUES (1, 'a');
SELECT * FROM lsm_nokey;
-- key types
CREATE FOREIGN TABLE lsm_badkey (id float8 OPTIONS (key 'true'), v text)
  SERVER lsm_srv;
SELECT * FROM lsm_badkey;                                           -- ERROR
DELETE FROM lsm_badkey;                                             -- ERROR
ALTER FOREIGN TABLE lsm_badkey ALTER COLUMN id TYPE numeric;
SELECT * FROM lsm_badkey;                                           -- ERROR
-- a store that cannot be created: the table is not either (the error names
-- the failing directory, which may contain the database OID, so only its
-- SQLSTATE is shown)
DO $$
BEGIN
  CREATE FOREIGN TABLE lsm_t3 (id int OPTIONS (key 'true'))
    SERVER lsm_srv_dir;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'cannot create the store: SQLSTATE %', SQLSTATE;
END $$;
SELECT count(*) FROM pg_class WHERE relname = 'lsm_t3';

-- cleanup
DROP FOREIGN TABLE lsm_t1, lsm_t2, lsm_nokey, lsm_badkey;
DROP SERVER lsm_srv, lsm_srv_dir;

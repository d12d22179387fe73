--
-- ctid: the ctid of a row is its key, where the key is an integer
-- (smallint, integer, bigint from -2^46 to 2^46 - 1, date), so that it
-- identifies one row.  "ctid = value" and "ctid = ANY(array)" are key
-- lookups, and an UPDATE or DELETE addressed by ctid (what postgres_fdw
-- sends when it cannot ship a statement whole) changes that row only.
-- Where rows have no ctid, a query that reads it fails with a clear error
-- rather than touching other rows.
--
CREATE SERVER lsm_ctid_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE twins (k int OPTIONS (key 'true'), v int)
  SERVER lsm_ctid_srv;
-- rows whose non-key values are equal
INSERT INTO twins SELECT g, (g / 3) % 2 FROM generate_series(-3, 40000, 3) g;
INSERT INTO twins VALUES (2147483647, 0), (-2147483648, 0), (32768, 0);

-- each row has its own ctid, which finds that row and no other
SELECT count(DISTINCT ctid) = count(*) AS unique_ctids FROM twins;
SELECT ctid, k FROM twins
  WHERE k IN (-3, 0, 3, 32768, 2147483647, -2147483648) ORDER BY k;
SELECT count(*) AS rows_finding_themselves
  FROM twins a WHERE (SELECT b.k FROM twins b WHERE b.ctid = a.ctid) = a.k;
EXPLAIN (COSTS OFF) SELECT * FROM twins WHERE ctid = '(0,4)';
SELECT * FROM twins WHERE ctid = '(0,4)';
SELECT * FROM twins WHERE ctid = '(0,5)';                   -- no such key
SELECT * FROM twins WHERE ctid = '(0,0)';                   -- no row has it
SELECT * FROM twins WHERE ctid = '(4294967295,32769)';      -- nor that
EXPLAIN (COSTS OFF)
  SELECT * FROM twins WHERE ctid = ANY ('{"(0,1)","(0,4)"}'::tid[]);
SELECT * FROM twins
  WHERE ctid = ANY ('{"(0,1)","(0,4)","(0,4)",NULL,"(0,0)"}'::tid[])
  ORDER BY k;
-- ctid as a join key: a nested loop looks each one up
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
  SELECT a.k FROM twins a JOIN twins b ON a.ctid = b.ctid WHERE b.k < 10;
SELECT a.k FROM twins a JOIN twins b ON a.ctid = b.ctid WHERE b.k < 10
  ORDER BY a.k;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- UPDATE and DELETE by ctid change one row, with one lookup
SELECT ctid AS c3 FROM twins WHERE k = 3 \gset
UPDATE twins SET v = 100 WHERE ctid = :'c3';
SELECT k, v FROM twins WHERE v = 100;
PREPARE upd(tid, int) AS UPDATE twins SET v = $2 WHERE ctid = $1;
PREPARE del(tid) AS DELETE FROM twins WHERE ctid = $1 RETURNING k, v;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE upd('(0,1)', 0);
EXECUTE upd(:'c3', 101);
EXECUTE del(:'c3');
EXECUTE del(:'c3');                                         -- gone
RESET plan_cache_mode;
DEALLOCATE upd;
DEALLOCATE del;
SELECT count(*) FROM twins WHERE v >= 100;
DELETE FROM twins WHERE ctid IN (SELECT ctid FROM twins WHERE v = 1 ORDER BY k LIMIT 2)
  RETURNING k;
SELECT count(*) FROM twins;

-- RETURNING ctid: the row's
INSERT INTO twins VALUES (5, 5) RETURNING ctid, *;
UPDATE twins SET k = 7 WHERE k = 5 RETURNING ctid, *;
DELETE FROM twins WHERE k = 7 RETURNING ctid, *;

-- through postgres_fdw, which cannot ship these statements whole: it
-- reads each row's ctid, then sends UPDATE/DELETE ... WHERE ctid = $1
CREATE EXTENSION postgres_fdw;
DO $$
BEGIN
  EXECUTE format('CREATE SERVER loopback FOREIGN DATA WRAPPER postgres_fdw
                  OPTIONS (dbname %L, host %L, port %L)',
                 current_database(),
                 split_part(current_setting('unix_socket_directories'), ',', 1),
                 current_setting('port'));
END $$;
CREATE USER MAPPING FOR CURRENT_USER SERVER loopback;
CREATE FOREIGN TABLE remote_twins (k int, v int)
  SERVER loopback OPTIONS (table_name 'twins');
CREATE TABLE changes (k int, v int);
INSERT INTO changes VALUES (6, 60);
SELECT k, v FROM twins WHERE k IN (0, 6) ORDER BY k;        -- twins
EXPLAIN (VERBOSE, COSTS OFF)
  UPDATE remote_twins r SET v = c.v FROM changes c WHERE r.k = c.k;
UPDATE remote_twins r SET v = c.v FROM changes c WHERE r.k = c.k;
SELECT k, v FROM twins WHERE k IN (0, 6) ORDER BY k;
DELETE FROM remote_twins r USING changes c WHERE r.k = c.k;
SELECT k, v FROM twins WHERE k IN (0, 6) ORDER BY k;
DELETE FROM remote_twins WHERE k = 0 AND random() >= 0;
SELECT count(*) FROM twins WHERE v = 0;

-- other integer keys: smallint, bigint, date
CREATE FOREIGN TABLE small (k int2 OPTIONS (key 'true'), v text)
  SERVER lsm_ctid_srv;
INSERT INTO small VALUES (-32768, 'min'), (0, 'zero'), (32767, 'max');
SELECT ctid, * FROM small ORDER BY k;
SELECT * FROM small WHERE ctid = '(0,32768)';   -- 32767
SELECT * FROM small WHERE ctid = '(1,1)';       -- 32768: not a smallint
CREATE FOREIGN TABLE days (d date OPTIONS (key 'true'), v text)
  SERVER lsm_ctid_srv;
INSERT INTO days VALUES ('2000-01-01', 'epoch'), ('1999-12-31', 'before'),
  ('infinity', 'end');
SELECT ctid, * FROM days ORDER BY d;
SELECT * FROM days WHERE ctid = (SELECT ctid FROM days WHERE d = 'infinity');
-- bigint: keys beyond 2^46 have no ctid
CREATE FOREIGN TABLE big (k int8 OPTIONS (key 'true'), v text)
  SERVER lsm_ctid_srv;
INSERT INTO big VALUES (70368744177663, 'largest with a ctid'),
  (-70368744177664, 'smallest with a ctid'), (1, 'one');
SELECT ctid, * FROM big ORDER BY k;
SELECT * FROM big WHERE ctid = '(2147483647,32768)';
SELECT * FROM big WHERE ctid = '(2147483648,1)';
INSERT INTO big VALUES (70368744177664, 'too large');
SELECT k FROM big ORDER BY k;                       -- fine without ctid
SELECT ctid, * FROM big ORDER BY k;                         -- ERROR
UPDATE big SET v = 'x' WHERE k = 70368744177664 RETURNING ctid;  -- ERROR
SELECT v FROM big WHERE k = 70368744177664;
UPDATE big SET v = 'y' WHERE k = 70368744177664 RETURNING k;

-- other keys: no ctid at all
CREATE FOREIGN TABLE words (w text OPTIONS (key 'true'), n int)
  SERVER lsm_ctid_srv;
INSERT INTO words VALUES ('a', 1), ('b', 1);
SELECT ctid, * FROM words;                                  -- ERROR
UPDATE words SET n = 2 WHERE ctid = '(0,1)';                -- ERROR
INSERT INTO words VALUES ('c', 1) RETURNING ctid;           -- ERROR
CREATE FOREIGN TABLE remote_words (w text, n int)
  SERVER loopback OPTIONS (table_name 'words');
UPDATE remote_words r SET n = c.v FROM changes c WHERE r.n = c.k - 5;  -- ERROR
SELECT * FROM words ORDER BY w;
UPDATE words SET n = 3 WHERE w = 'a';               -- by key: fine
SELECT * FROM words ORDER BY w;

DROP FOREIGN TABLE remote_twins, remote_words;
DROP USER MAPPING FOR CURRENT_USER SERVER loopback;
DROP SERVER loopback;
DROP EXTENSION postgres_fdw;
DROP TABLE changes;
DROP FOREIGN TABLE twins, small, days, big, words;
DROP SERVER lsm_ctid_srv;

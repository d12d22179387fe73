--
-- Types: every key type round-trips and is stored in its btree order; value
-- columns of every kind round-trip exactly like a native table's.
--
CREATE SERVER lsm_types_srv FOREIGN DATA WRAPPER lsm_fdw;

-- Key types.  A full scan returns the store's order, which must be the
-- type's btree order: the "same order" checks compare the scan's order
-- with ORDER BY (text under "C", whose order is byte order).
CREATE FOREIGN TABLE k_int2 (k int2 OPTIONS (key 'true'), v text)
  SERVER lsm_types_srv;
INSERT INTO k_int2 VALUES (0, 'zero'), (-32768, 'min'), (32767, 'max'),
  (-1, 'minus one'), (1, 'one'), (256, '256'), (-256, '-256');
SELECT * FROM k_int2;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_int2)
  AS same_order FROM k_int2;
SELECT * FROM k_int2 WHERE k = -32768;
SELECT * FROM k_int2 WHERE k = 100000;          -- out of int2's range: none
SELECT * FROM k_int2 WHERE k = 256::int8;

CREATE FOREIGN TABLE k_int4 (k int4 OPTIONS (key 'true'), v text)
  SERVER lsm_types_srv;
INSERT INTO k_int4 VALUES (0, 'zero'), (-2147483648, 'min'),
  (2147483647, 'max'), (-1, 'minus one'), (1, 'one'), (65536, '65536');
SELECT * FROM k_int4;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_int4)
  AS same_order FROM k_int4;
SELECT * FROM k_int4 WHERE k = 2147483647;
SELECT * FROM k_int4 WHERE k = 2147483648;      -- an int8: none
SELECT * FROM k_int4 WHERE k = -1::int2;

CREATE FOREIGN TABLE k_int8 (k int8 OPTIONS (key 'true'), v text)
  SERVER lsm_types_srv;
INSERT INTO k_int8 VALUES (0, 'zero'), (-9223372036854775808, 'min'),
  (9223372036854775807, 'max'), (-1, 'minus one'), (4294967296, '2^32');
SELECT * FROM k_int8;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_int8)
  AS same_order FROM k_int8;
SELECT * FROM k_int8 WHERE k = -9223372036854775808;
SELECT * FROM k_int8 WHERE k = 0;               -- an int4 constant

CREATE FOREIGN TABLE k_text (k text OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_text VALUES ('', 1), ('a', 2), ('ab', 3), ('b', 4), ('B', 5),
  ('a b', 6), ('é', 7), ('zz', 8), ('a' || repeat('x', 3000), 9);
SELECT left(k, 10) AS k, length(k), v FROM k_text;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k COLLATE "C") FROM k_text)
  AS same_order FROM k_text;
SELECT * FROM k_text WHERE k = '';
SELECT * FROM k_text WHERE k = 'é';
SELECT v FROM k_text WHERE k = 'a' || repeat('x', 3000);
INSERT INTO k_text VALUES (repeat('x', 70000), 0);  -- ERROR: key too long
SELECT * FROM k_text WHERE k = repeat('x', 70000);  -- no such key

CREATE FOREIGN TABLE k_varchar (k varchar(10) OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_varchar VALUES ('b', 1), ('a', 2), ('', 3);
SELECT * FROM k_varchar;
SELECT * FROM k_varchar WHERE k = 'a';
SELECT * FROM k_varchar WHERE k = 'a'::text;

CREATE FOREIGN TABLE k_bytea (k bytea OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_bytea VALUES ('\x', 1), ('\x00', 2), ('\x0000', 3), ('\x01', 4),
  ('\xff', 5), ('\x00ff', 6), ('\xfe00', 7);
SELECT * FROM k_bytea;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_bytea)
  AS same_order FROM k_bytea;
SELECT * FROM k_bytea WHERE k = '\x00';
SELECT * FROM k_bytea WHERE k = '\x';

CREATE FOREIGN TABLE k_uuid (k uuid OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_uuid VALUES ('00000000-0000-0000-0000-000000000000', 1),
  ('ffffffff-ffff-ffff-ffff-ffffffffffff', 2),
  ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 3),
  ('7f000000-0000-0000-0000-000000000001', 4);
SELECT * FROM k_uuid;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_uuid)
  AS same_order FROM k_uuid;
SELECT * FROM k_uuid WHERE k = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';

CREATE FOREIGN TABLE k_date (k date OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_date VALUES ('2000-01-01', 1), ('1999-12-31', 2),
  ('-infinity', 3), ('infinity', 4), ('4713-01-01 BC', 5), ('2024-02-29', 6);
SELECT * FROM k_date;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_date)
  AS same_order FROM k_date;
SELECT * FROM k_date WHERE k = '2024-02-29';
SELECT * FROM k_date WHERE k = 'infinity';

CREATE FOREIGN TABLE k_ts (k timestamp OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_ts VALUES ('2000-01-01 00:00:00', 1),
  ('1999-12-31 23:59:59.999999', 2), ('-infinity', 3), ('infinity', 4),
  ('1900-01-01 12:00', 5);
SELECT * FROM k_ts;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_ts)
  AS same_order FROM k_ts;
SELECT * FROM k_ts WHERE k = '1999-12-31 23:59:59.999999';

SET timezone = 'UTC';
CREATE FOREIGN TABLE k_tstz (k timestamptz OPTIONS (key 'true'), v int)
  SERVER lsm_types_srv;
INSERT INTO k_tstz VALUES ('2000-01-01 00:00:00+00', 1),
  ('2000-01-01 00:00:00+01', 2), ('1970-01-01 00:00:00+00', 3),
  ('infinity', 4);
SELECT * FROM k_tstz;
SELECT array_agg(k) = (SELECT array_agg(k ORDER BY k) FROM k_tstz)
  AS same_order FROM k_tstz;
SELECT * FROM k_tstz WHERE k = '2000-01-01 01:00:00+02';
INSERT INTO k_tstz VALUES ('2000-01-01 02:00:00+02', 0);    -- ERROR: same instant
RESET timezone;

-- a domain over a key type
CREATE DOMAIN lsm_pos AS int CHECK (VALUE > 0);
CREATE FOREIGN TABLE k_domain (k lsm_pos OPTIONS (key 'true'), v text)
  SERVER lsm_types_srv;
INSERT INTO k_domain VALUES (2, 'two'), (1, 'one');
INSERT INTO k_domain VALUES (-1, 'minus');                  -- ERROR: check
SELECT * FROM k_domain;
SELECT * FROM k_domain WHERE k = 2;

-- Value columns: the canonical codecs and the send/receive fallback, next
-- to a native table holding the same rows.
CREATE TYPE lsm_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE lsm_pair AS (a int, b text);
CREATE TABLE vals_native (
  k int PRIMARY KEY,
  b bool, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8,
  t text, vc varchar(5), c char(4), by bytea, u uuid,
  d date, ts timestamp, tstz timestamptz,
  n numeric, j jsonb, arr int[], iv interval, ip inet, m lsm_mood,
  p lsm_pair, pos lsm_pos
);
CREATE FOREIGN TABLE vals (
  k int OPTIONS (key 'true'),
  b bool, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8,
  t text, vc varchar(5), c char(4), by bytea, u uuid,
  d date, ts timestamp, tstz timestamptz,
  n numeric, j jsonb, arr int[], iv interval, ip inet, m lsm_mood,
  p lsm_pair, pos lsm_pos
) SERVER lsm_types_srv;
INSERT INTO vals_native VALUES
  (1, true, -32768, -2147483648, -9223372036854775808, 1.5, -2.25,
   'text', 'vc', 'ab', '\x00ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
   '2024-02-29', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+00',
   1.50, '{"a": [1, 2, {"b": null}]}', '{1,NULL,3}', '1 year 2 days 03:04:05',
   '192.168.0.1/24', 'happy', ROW(1, 'x'), 7),
  (2, false, 32767, 2147483647, 9223372036854775807, 'Infinity', '-Infinity',
   '', '', '', '\x', '00000000-0000-0000-0000-000000000000',
   'infinity', '-infinity', 'infinity',
   'NaN', '[]', '{}', '-1 mons', '::1', 'sad', ROW(NULL, NULL), 1),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, true, 0, 0, 0, 'NaN', 1e-300, 'ünïcödé ☃', 'abcde', 'a   ', '\x0000',
   'ffffffff-ffff-ffff-ffff-ffffffffffff', '4713-01-01 BC',
   '294276-12-31 23:59:59.999999', '1970-01-01 00:00:00+00',
   -123456789.000000001, '"str"', '{{1,2},{3,4}}', '0', '10.0.0.0/8', 'ok',
   ROW(-1, ''), 2147483647);
INSERT INTO vals SELECT * FROM vals_native;
SELECT * FROM vals;
-- every value equal to the native table's, and printed the same
SELECT nat.k,
       (SELECT ft::text FROM vals ft WHERE ft.k = nat.k) = nat::text AS same_text
  FROM vals_native nat ORDER BY nat.k;
SELECT count(*) AS differing FROM (
  SELECT k, b, i2, i4, i8, f4, f8, t, vc, c, by, u, d, ts, tstz, n, j, arr,
         iv, ip, m, p::text, pos FROM vals
  EXCEPT
  SELECT k, b, i2, i4, i8, f4, f8, t, vc, c, by, u, d, ts, tstz, n, j, arr,
         iv, ip, m, p::text, pos FROM vals_native) x;
-- char(n) is stored without its trailing blanks and padded again on read
SELECT k, c, octet_length(c) FROM vals ORDER BY k;
-- floats: every NaN is one value, and -0 is stored as 0 (they are equal)
INSERT INTO vals (k, f4, f8) VALUES (5, '-0', '-0'), (6, 'NaN', 'NaN');
SELECT k, f4, f8, f8 = 0 AS is_zero FROM vals WHERE k IN (5, 6) ORDER BY k;

-- dropped and added columns: rows keep their fields, new columns read null
ALTER FOREIGN TABLE vals DROP COLUMN i2, DROP COLUMN j;
ALTER FOREIGN TABLE vals ADD COLUMN extra text;
SELECT k, b, i4, t, extra FROM vals ORDER BY k;
UPDATE vals SET extra = 'set' WHERE k = 1;
INSERT INTO vals (k, i4, extra) VALUES (7, 7, 'new');
SELECT k, b, i4, t, extra FROM vals WHERE k IN (1, 2, 7) ORDER BY k;

-- enums are stored by the value's OID: a renamed or added label changes no
-- stored row (a label would no longer read back, or read as the new value
-- of the same name), and equal values have equal bytes (value search)
CREATE TYPE lsm_feel AS ENUM ('sad', 'ok', 'happy');
CREATE FOREIGN TABLE en (id int OPTIONS (key 'true'), m lsm_feel)
  SERVER lsm_types_srv OPTIONS (memtable_size '4kB');
INSERT INTO en SELECT g, (ARRAY['sad', 'ok', 'happy'])[g % 3 + 1]::lsm_feel
  FROM generate_series(1, 300) g;
ALTER TYPE lsm_feel RENAME VALUE 'sad' TO 'blue';
ALTER TYPE lsm_feel ADD VALUE 'sad' BEFORE 'ok';
SELECT m, count(*) FROM en GROUP BY m ORDER BY m;
SELECT * FROM en WHERE id = 3;
EXPLAIN (COSTS OFF) SELECT count(*) FROM en WHERE m = 'blue';
SET lsm_fdw.value_search = 'hierarchy';
SELECT count(*) FROM en WHERE m = 'blue';
SELECT count(*) FROM en WHERE m = 'sad';
RESET lsm_fdw.value_search;

-- binary forms do not depend on the client encoding, though send functions
-- convert the text inside arrays, composites and jsonb to it
CREATE FOREIGN TABLE enc (id int OPTIONS (key 'true'), a text[], j jsonb,
  p lsm_pair) SERVER lsm_types_srv;
SET client_encoding = 'LATIN1';
INSERT INTO enc VALUES (1, ARRAY[U&'caf\00E9'],
  jsonb_build_object('k', U&'\00E9t\00E9'), ROW(1, U&'na\00EFve'));
RESET client_encoding;
INSERT INTO enc VALUES (2, ARRAY[U&'caf\00E9'],
  jsonb_build_object('k', U&'\00E9t\00E9'), ROW(1, U&'na\00EFve'));
SELECT id, a, j, p FROM enc ORDER BY id;
SET client_encoding = 'LATIN1';
SELECT id, a[1] = U&'caf\00E9' AS a_same, j->>'k' = U&'\00E9t\00E9' AS j_same,
  (p).b = U&'na\00EFve' AS p_same FROM enc ORDER BY id;
RESET client_encoding;

DROP FOREIGN TABLE k_int2, k_int4, k_int8, k_text, k_varchar, k_bytea,
  k_uuid, k_date, k_ts, k_tstz, k_domain, vals, en, enc;
DROP TABLE vals_native;
DROP TYPE lsm_mood, lsm_pair, lsm_feel;
DROP DOMAIN lsm_pos;
DROP SERVER lsm_types_srv;

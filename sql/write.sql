--
-- Writes: INSERT, UPDATE (also of the key), DELETE, RETURNING, the key's
-- uniqueness, ON CONFLICT DO NOTHING, COPY FROM, TRUNCATE.
--
CREATE SERVER lsm_write_srv FOREIGN DATA WRAPPER lsm_fdw;
CREATE FOREIGN TABLE acc (id int, owner text, balance numeric)
  SERVER lsm_write_srv OPTIONS (key 'id');

-- INSERT and RETURNING
INSERT INTO acc VALUES (1, 'ann', 100), (2, 'bob', 50) RETURNING *;
INSERT INTO acc (id, owner) VALUES (3, 'cy') RETURNING id, balance IS NULL;
INSERT INTO acc SELECT g, 'user ' || g, g * 10 FROM generate_series(10, 14) g;
SELECT * FROM acc;

-- the key is unique
INSERT INTO acc VALUES (2, 'bob again', 0);                 -- ERROR
INSERT INTO acc VALUES (20, 'x', 0), (20, 'y', 0);          -- ERROR
INSERT INTO acc VALUES (NULL, 'nobody', 0);                 -- ERROR
SELECT count(*) FROM acc;                                   -- unchanged
-- ON CONFLICT DO NOTHING skips existing keys, with or without the key as
-- the conflict target (DO UPDATE: upsert.sql)
INSERT INTO acc VALUES (2, 'bob again', 0), (4, 'dee', 40)
  ON CONFLICT DO NOTHING RETURNING *;
INSERT INTO acc VALUES (21, 'first', 0), (21, 'second', 0)
  ON CONFLICT DO NOTHING RETURNING *;
INSERT INTO acc VALUES (2, 'bob', 0) ON CONFLICT (id) DO NOTHING;
INSERT INTO acc VALUES (2, 'bob', 0) ON CONFLICT (owner) DO NOTHING; -- ERROR
SELECT * FROM acc WHERE id IN (2, 4, 21) ORDER BY id;

-- UPDATE of value columns, by key and by scan
UPDATE acc SET balance = balance + 1 WHERE id = 1 RETURNING *;
UPDATE acc SET balance = 0 WHERE owner LIKE 'user%' RETURNING id, balance;
UPDATE acc SET owner = upper(owner) WHERE id = 999;         -- no such row
UPDATE acc SET balance = NULL WHERE id = 2;
SELECT * FROM acc ORDER BY id;

-- UPDATE of the key moves the row
UPDATE acc SET id = 100 WHERE id = 1 RETURNING *;
SELECT * FROM acc WHERE id IN (1, 100) ORDER BY id;
UPDATE acc SET id = 2 WHERE id = 100;                       -- ERROR: taken
UPDATE acc SET id = NULL WHERE id = 100;                    -- ERROR
-- every row once, although the moved rows land ahead of the scan
UPDATE acc SET id = id + 1000 WHERE id >= 10 RETURNING id, owner;
SELECT * FROM acc ORDER BY id;
-- a key is checked when the statement ends (the SQL standard's rule, where
-- a unique index checks row by row): a key that a row still to be moved
-- holds is free by then, whatever order the rows come in
UPDATE acc SET id = id + 1 WHERE id BETWEEN 1010 AND 1014 RETURNING id, owner;
UPDATE acc SET id = id - 1 WHERE id BETWEEN 1011 AND 1015 RETURNING id, owner;
-- two rows swap their keys, twice
UPDATE acc SET id = 2021 - id WHERE id IN (1010, 1011) RETURNING id, owner;
UPDATE acc SET id = 2021 - id WHERE id IN (1010, 1011) RETURNING id, owner;
-- a key still taken when the statement ends fails, and so do two rows
-- moved to one key
UPDATE acc SET id = id + 1 WHERE id = 1010;                 -- ERROR
UPDATE acc SET id = 1010 WHERE id IN (1011, 1012);          -- ERROR
UPDATE acc SET id = 5000 WHERE id IN (1010, 1011);          -- ERROR
SELECT * FROM acc ORDER BY id;
-- the target row produced twice by a join is updated once
CREATE TABLE bonus (id int, amount numeric);
INSERT INTO bonus VALUES (2, 5), (2, 7), (3, 1);
UPDATE acc SET balance = coalesce(balance, 0) + b.amount
  FROM bonus b WHERE acc.id = b.id RETURNING acc.id;
SELECT id, balance IN (5, 7) AS one_bonus FROM acc WHERE id = 2;
SELECT * FROM acc WHERE id = 3;

-- DELETE
DELETE FROM acc WHERE id = 4 RETURNING *;
DELETE FROM acc WHERE id = 4 RETURNING *;                   -- already gone
DELETE FROM acc WHERE owner = 'cy' RETURNING *;
DELETE FROM acc USING bonus WHERE acc.id = bonus.id RETURNING acc.id;
SELECT * FROM acc ORDER BY id;
-- a deleted key can be inserted again
INSERT INTO acc VALUES (4, 'dee again', 1);
SELECT * FROM acc WHERE id = 4;

-- INSERT ... SELECT from the table itself reads what was there before
INSERT INTO acc SELECT id + 5000, owner, balance FROM acc;
SELECT count(*), min(id), max(id) FROM acc;

-- writes under triggers and CTEs
CREATE TABLE acc_log (op text, id int);
CREATE FUNCTION acc_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO acc_log VALUES (TG_OP, OLD.id);
    RETURN OLD;
  END IF;
  NEW.owner := lower(NEW.owner);
  INSERT INTO acc_log VALUES (TG_OP, NEW.id);
  RETURN NEW;
END $$;
CREATE TRIGGER acc_before BEFORE INSERT OR UPDATE OR DELETE ON acc
  FOR EACH ROW EXECUTE FUNCTION acc_trigger();
INSERT INTO acc VALUES (7, 'GUS', 7);
SELECT * FROM acc WHERE id = 7;
UPDATE acc SET owner = 'HAL' WHERE id = 7;
SELECT * FROM acc WHERE id = 7;
DELETE FROM acc WHERE id = 7;
SELECT * FROM acc_log;
DROP TRIGGER acc_before ON acc;
WITH moved AS (DELETE FROM acc WHERE id > 5000 RETURNING *)
  INSERT INTO acc SELECT id + 1000, owner, balance FROM moved
  RETURNING id;
SELECT count(*), min(id), max(id) FROM acc;

-- COPY FROM
COPY acc FROM stdin;
30	copied	1.5
31	\N	\N
\.
SELECT * FROM acc WHERE id >= 30 AND id < 40 ORDER BY id;
COPY acc FROM stdin;                                        -- ERROR
32	fine	1
30	duplicate	2
\.
SELECT * FROM acc WHERE id >= 30 AND id < 40 ORDER BY id;

-- TRUNCATE
TRUNCATE acc;
SELECT count(*) FROM acc;
INSERT INTO acc VALUES (1, 'after truncate', 0);
SELECT * FROM acc;

-- foreign tables as partitions keep to their bounds: PostgreSQL checks
-- them for its own partitions only, and moves rows only out of those
CREATE TABLE parts (id int, owner text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (100)
  SERVER lsm_write_srv OPTIONS (key 'id');
CREATE FOREIGN TABLE parts_high PARTITION OF parts
  FOR VALUES FROM (100) TO (200) SERVER lsm_write_srv OPTIONS (key 'id');
CREATE TABLE parts_heap PARTITION OF parts FOR VALUES FROM (200) TO (300);
INSERT INTO parts VALUES (1, 'a'), (150, 'b'), (250, 'c'), (251, 'd');
SELECT tableoid::regclass, * FROM parts ORDER BY id;
INSERT INTO parts_low VALUES (150, 'beyond the bounds');    -- ERROR
UPDATE parts_low SET id = 101 WHERE id = 1;                 -- ERROR
UPDATE parts SET id = 101 WHERE id = 1;                     -- ERROR
UPDATE parts SET id = 2, owner = 'moved within' WHERE id = 1;
UPDATE parts SET id = 50 WHERE id = 250;                    -- heap to lsm_fdw
UPDATE parts SET id = 150 WHERE id = 251;                   -- ERROR: taken
SELECT tableoid::regclass, * FROM parts ORDER BY id;
SELECT * FROM parts WHERE id BETWEEN 100 AND 199;
-- COPY into the partitioned table: each row goes to its partition, and a
-- COPY whose row hits a taken key leaves nothing of itself
COPY parts FROM stdin;
3	copied low
160	copied high
260	copied heap
\.
COPY parts FROM stdin;                                      -- ERROR: 160 taken
170	routed
160	duplicate
\.
SELECT tableoid::regclass, * FROM parts
  WHERE owner LIKE 'copied%' OR owner IN ('routed', 'duplicate') ORDER BY id;
DROP TABLE parts;

-- batch inserts (lsm_fdw.insert_batch_size): the rows a statement gathers
-- are inserted together; those ON CONFLICT DO NOTHING skips are not counted,
-- a duplicate fails the statement, routing into partitions batches too
CREATE FOREIGN TABLE batched (id int8 OPTIONS (key 'true'), v int)
  SERVER lsm_write_srv;
INSERT INTO batched SELECT g, 0 FROM generate_series(1, 250, 5) g;
SET lsm_fdw.insert_batch_size = 7;
DO $$
DECLARE n int8;
BEGIN
  INSERT INTO batched SELECT g, 1 FROM generate_series(1, 250) g
    ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS n = ROW_COUNT;
  RAISE NOTICE 'inserted % rows', n;
END $$;
SELECT v, count(*), sum(id) FROM batched GROUP BY v ORDER BY v;
INSERT INTO batched SELECT g, 2 FROM generate_series(300, 320) g
  UNION ALL SELECT 3, 2;                                      -- ERROR
SELECT count(*) FROM batched WHERE v = 2;
CREATE TABLE bparts (id int8, v int) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE bparts_low PARTITION OF bparts FOR VALUES FROM (0) TO (100)
  SERVER lsm_write_srv OPTIONS (key 'id');
CREATE FOREIGN TABLE bparts_high PARTITION OF bparts FOR VALUES FROM (100) TO (1000)
  SERVER lsm_write_srv OPTIONS (key 'id');
INSERT INTO bparts SELECT g, g % 3 FROM generate_series(1, 999, 2) g;
SELECT tableoid::regclass, count(*), sum(id) FROM bparts GROUP BY 1 ORDER BY 1;
RESET lsm_fdw.insert_batch_size;
DROP TABLE bparts;
DROP FOREIGN TABLE batched;

-- WHERE CURRENT OF needs a table PostgreSQL stores itself
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM acc ORDER BY id;
FETCH 1 FROM c;
UPDATE acc SET owner = 'x' WHERE CURRENT OF c;              -- ERROR
ROLLBACK;

-- synchronous_commit = off: the commit does not wait for the log's fsync
SET synchronous_commit = off;
INSERT INTO acc VALUES (2, 'asynchronous commit', 0);
RESET synchronous_commit;

-- the writes are in the store: a new session sees them
\c -
SELECT * FROM acc;

DROP FOREIGN TABLE acc;
DROP TABLE bonus, acc_log;
DROP FUNCTION acc_trigger();
DROP SERVER lsm_write_srv;

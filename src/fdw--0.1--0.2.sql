/* src/fdw--0.1--0.2.sql: ALTER EXTENSION fdw UPDATE from 0.1 to 0.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fdw UPDATE TO '0.2'" to load this file. \quit

-- 0.2 adds composite keys (a key of several columns).  The library reads
-- every store 0.1 wrote as it is (docs/format.md: a store keyed by one
-- column keeps metadata format version 1); what 0.2 adds to the SQL is a
-- way to see a table's key columns.

CREATE FUNCTION lsm_key_columns(tbl regclass)
RETURNS TABLE(key_position int, column_name name, column_type regtype)
AS 'MODULE_PATHNAME', 'lsm_fdw_key_columns'
LANGUAGE C STRICT;

COMMENT ON FUNCTION lsm_key_columns(regclass) IS
'the key columns of the table in key order (one row for a one-column key); needs SELECT on the table';

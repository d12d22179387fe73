/* src/fdw--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fdw" to load this file. \quit

CREATE FUNCTION lsm_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FUNCTION lsm_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER lsm_fdw
  HANDLER lsm_fdw_handler
  VALIDATOR lsm_fdw_validator;

-- Loads the library before any DDL command, so that its object access hook
-- sees every DROP of a foreign table and removes the table's store (at the
-- default location) when the dropping transaction commits.  The function
-- itself does nothing.
CREATE FUNCTION lsm_fdw_ddl_command_start()
RETURNS event_trigger
AS 'MODULE_PATHNAME'
LANGUAGE C;

CREATE EVENT TRIGGER lsm_fdw_ddl_command_start
  ON ddl_command_start
  EXECUTE FUNCTION lsm_fdw_ddl_command_start();

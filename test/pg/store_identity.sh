#!/usr/bin/env bash
# test/pg/store_identity.sh: a table never sees another table's store.
#
# Stores are found by path, <base>/<database oid>/<table oid>, and OIDs come
# back: after an OID wraparound (simulated with pg_resetwal -o) a new table
# gets the OID of a dropped one.  Each store has a metadata file naming its
# table (src/fdw/meta.c), which opening checks, and CREATE FOREIGN TABLE
# removes what a dropped table left at its path (src/fdw/store.c):
#
#   reuse_after_drop      under a server directory, a table of another user
#                         that gets a dropped table's OID is empty (DROP
#                         removes stores there too);
#   reuse_after_leftover  the same when the dropped table's store was left
#                         behind (the server stopped between the DROP's
#                         commit and the removal: the directory is copied
#                         aside before the DROP and put back), at the
#                         default location and under a server directory;
#                         and a directory that is no store at the new
#                         table's path makes CREATE FOREIGN TABLE fail;
#   foreign_store         a directory holding another table's store is
#                         refused when the table is opened;
#   drop_unreadable       a DROP whose store cannot be looked at drops the
#                         table anyway;
#   template              CREATE DATABASE ... TEMPLATE copies no store: the
#                         new database's tables fail clearly when read.
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_store_identity
dir=$work/dir

# sqlstate DB SQL: runs SQL in DB and prints the SQLSTATE of its error, or
# "none" if it succeeds.
sqlstate() {
	local out

	if out=$("$PGBIN/psql" -X -q -At -d "$1" -v ON_ERROR_STOP=1 \
		-c '\set VERBOSITY sqlstate' -c "$2" 2>&1); then
		echo none
	else
		printf '%s\n' "$out" | sed -n 's/^ERROR: *//p' | head -n 1
	fi
}

# restart_with_next_oid OID: stops the cluster cleanly, makes OID the next
# one it assigns (as after a wraparound), and starts it again.  The dead
# catalog rows of the dropped objects go first: a new OID skips any that an
# index still holds, dead or alive.
restart_with_next_oid() {
	sql "$db" "VACUUM pg_class, pg_type"
	"$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null
	"$PGBIN/pg_resetwal" -o "$1" -D "$PGDATA" >/dev/null
	pg_start
}

# store_of DB TABLE: the directory of TABLE's store.
store_of() {
	sql "$1" "SELECT lsm_store_path('$2')"
}

setup() {
	create_db "$db"
	mkdir -p "$dir"
	sql "$db" "CREATE SERVER lsm_dir FOREIGN DATA WRAPPER lsm_fdw
			OPTIONS (directory '$dir')" \
		"DROP ROLE IF EXISTS regress_lsm_alice" \
		"DROP ROLE IF EXISTS regress_lsm_bob" \
		"CREATE ROLE regress_lsm_alice" "CREATE ROLE regress_lsm_bob" \
		"GRANT USAGE ON FOREIGN SERVER lsm, lsm_dir
			TO regress_lsm_alice, regress_lsm_bob" \
		"GRANT CREATE ON SCHEMA public TO regress_lsm_alice, regress_lsm_bob"
}

# Under a server directory: alice's table with rows is dropped; bob's new
# table gets its OID and must be empty.
reuse_after_drop() {
	local oid path new

	sql "$db" "SET ROLE regress_lsm_alice" \
		"CREATE FOREIGN TABLE secret (k int OPTIONS (key 'true'), v text)
			SERVER lsm_dir" \
		"INSERT INTO secret SELECT g, 'alice' FROM generate_series(1, 100) g"
	oid=$(sql "$db" "SELECT 'secret'::regclass::oid")
	path=$(store_of "$db" secret)
	sql "$db" "DROP FOREIGN TABLE secret"
	check reuse_after_drop_store_removed "" "$(ls -A "$path" 2>/dev/null)"

	restart_with_next_oid "$oid"
	sql "$db" "SET ROLE regress_lsm_bob" \
		"CREATE FOREIGN TABLE mine (k int OPTIONS (key 'true'), v text)
			SERVER lsm_dir"
	new=$(sql "$db" "SELECT 'mine'::regclass::oid")
	check reuse_after_drop_same_oid "$oid" "$new"
	check reuse_after_drop_new_table_empty 0 \
		"$(sql "$db" "SELECT count(*) FROM mine")"
	sql "$db" "DROP FOREIGN TABLE mine"
}

# A dropped table's store is left behind (copied aside before the DROP,
# put back after it); new tables that get the OIDs must not see its rows.
# Three tables, created one after another so that after the reset the new
# ones get their OIDs in the same order: at the default location, under
# the server directory, and one whose path gets a directory that is no
# store.
reuse_after_leftover() {
	local names=(at_default in_dir junk) servers=(lsm lsm_dir lsm) i
	local oids=() paths=() new

	for i in 0 1 2; do
		sql "$db" "SET ROLE regress_lsm_alice" \
			"CREATE FOREIGN TABLE ${names[$i]} (k int OPTIONS (key 'true'), v text)
				SERVER ${servers[$i]}" \
			"INSERT INTO ${names[$i]} SELECT g, 'alice' FROM generate_series(1, 100) g"
		oids+=("$(sql "$db" "SELECT '${names[$i]}'::regclass::oid")")
		paths+=("$(store_of "$db" "${names[$i]}")")
	done
	for i in 0 1; do
		cp -a "${paths[$i]}" "$work/aside$i"
	done
	sql "$db" "DROP FOREIGN TABLE at_default, in_dir, junk"
	for i in 0 1; do
		mv "$work/aside$i" "${paths[$i]}"
	done

	restart_with_next_oid "${oids[0]}"
	for i in 0 1; do
		sql "$db" "SET ROLE regress_lsm_bob" \
			"CREATE FOREIGN TABLE new_${names[$i]} (k int OPTIONS (key 'true'), v text)
				SERVER ${servers[$i]}"
		new=$(sql "$db" "SELECT 'new_${names[$i]}'::regclass::oid")
		check "reuse_after_leftover_${names[$i]}_same_oid" "${oids[$i]}" "$new"
		check "reuse_after_leftover_${names[$i]}_empty" 0 \
			"$(sql "$db" "SELECT count(*) FROM new_${names[$i]}")"
		sql "$db" "INSERT INTO new_${names[$i]} VALUES (1, 'bob')"
		check "reuse_after_leftover_${names[$i]}_own_rows" "1|bob" \
			"$(sql "$db" "SELECT * FROM new_${names[$i]}")"
	done

	# the next OID is the third old table's: a directory that is not a
	# store waits at its path
	mkdir -p "${paths[2]}"
	echo "not a store" >"${paths[2]}/data"
	check reuse_after_leftover_junk_refused "42710" \
		"$(sqlstate "$db" "CREATE FOREIGN TABLE new_junk (k int OPTIONS (key 'true'))
			SERVER lsm")"
	check reuse_after_leftover_junk_kept "not a store" \
		"$(cat "${paths[2]}/data" 2>&1)"
	rm -rf "${paths[2]}"
	sql "$db" "DROP FOREIGN TABLE new_at_default, new_in_dir"
}

# Another table's store copied to a table's path is refused when opened.
foreign_store() {
	local a b

	sql "$db" "CREATE FOREIGN TABLE fa (k int OPTIONS (key 'true'), v text) SERVER lsm" \
		"INSERT INTO fa SELECT g, 'a' FROM generate_series(1, 10) g" \
		"CREATE FOREIGN TABLE fb (k int OPTIONS (key 'true'), v text) SERVER lsm"
	a=$(store_of "$db" fa)
	b=$(store_of "$db" fb)
	rm -rf "$b"
	cp -a "$a" "$b"
	check foreign_store_refused "HV00R" \
		"$(sqlstate "$db" "SELECT count(*) FROM fb")"
	check foreign_store_owner_reads 10 "$(sql "$db" "SELECT count(*) FROM fa")"
	check foreign_store_drop_leaves_it "none" \
		"$(sqlstate "$db" "DROP FOREIGN TABLE fb")"
	if [ -d "$b" ]; then
		ok foreign_store_not_removed
	else
		fail foreign_store_not_removed "DROP of fb removed fa's copy at $b"
	fi
	rm -rf "$b"
	sql "$db" "DROP FOREIGN TABLE fa"
}

# A DROP whose store cannot be looked at (a directory without permission)
# still drops the table, and leaves the store with a warning.
drop_unreadable() {
	local path

	sql "$db" "CREATE FOREIGN TABLE locked (k int OPTIONS (key 'true')) SERVER lsm_dir" \
		"INSERT INTO locked VALUES (1)"
	path=$(store_of "$db" locked)
	chmod 000 "$(dirname "$path")"
	check drop_unreadable_drops "none" \
		"$(sqlstate "$db" "DROP FOREIGN TABLE locked")"
	chmod 700 "$(dirname "$path")"
	if [ -d "$path" ]; then
		ok drop_unreadable_store_left
	else
		fail drop_unreadable_store_left "$path was removed"
	fi
	rm -rf "$path"
}

# CREATE DATABASE ... TEMPLATE: the copy's tables have no store.
template() {
	sql "$db" "CREATE FOREIGN TABLE tpl (k int OPTIONS (key 'true'), v text) SERVER lsm" \
		"INSERT INTO tpl SELECT g, 'x' FROM generate_series(1, 50) g"
	sql postgres "DROP DATABASE IF EXISTS ${db}_copy" \
		"CREATE DATABASE ${db}_copy TEMPLATE $db"
	check template_copy_read_fails "HV00R" \
		"$(sqlstate "${db}_copy" "SELECT count(*) FROM tpl")"
	check template_copy_write_fails "HV00R" \
		"$(sqlstate "${db}_copy" "INSERT INTO tpl VALUES (100, 'y')")"
	check template_original_intact 50 "$(sql "$db" "SELECT count(*) FROM tpl")"
	check template_copy_drop "none" \
		"$(sqlstate "${db}_copy" "DROP FOREIGN TABLE tpl")"
	sql postgres "DROP DATABASE ${db}_copy"
	sql "$db" "DROP FOREIGN TABLE tpl"
}

cleanup() {
	drop_db "$db"
	sql postgres "DROP ROLE IF EXISTS regress_lsm_alice" \
		"DROP ROLE IF EXISTS regress_lsm_bob"
}

setup
reuse_after_drop
reuse_after_leftover
foreign_store
drop_unreadable
template
cleanup

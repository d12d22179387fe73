#!/usr/bin/env bash
# test/pg/drop_database.sh: DROP DATABASE must take its tables' stores.
#
# A foreign table's store lives at $PGDATA/lsm_fdw/<database oid>/<table
# oid> (without a directory option on the server) and goes when a DROP of
# the table commits: DROP FOREIGN TABLE, DROP SCHEMA/SERVER/EXTENSION ...
# CASCADE all pass through the object access hook (sql/xact.sql).  DROP
# DATABASE does not: it runs in another database, where no hook sees the
# tables.  So the first backend that opens a store afterwards removes the
# directories of databases that no longer exist (store.c); this test checks
# that $PGDATA/lsm_fdw/<database oid> is gone after that, and that sessions
# which open their first stores at the same moment clean up without getting
# in each other's way (no warnings about files another one removed).
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_drop_database

# Several dropped databases' stores, then sessions that open their first
# store at once: each gets its answer and no message, and the stores go.
# (Every session that opens a store cleans up, so the databases are all
# created and filled before any is dropped.)
concurrent_cleanup() {
	local dirs=() d i s pids=() nbad=0 left=()

	for d in 1 2 3; do
		create_db "${db}_gone$d"
		for i in 1 2 3 4; do
			sql "${db}_gone$d" "CREATE FOREIGN TABLE t$i (k int4 OPTIONS (key 'true'), v text)
				SERVER lsm OPTIONS (memtable_size '16kB')" \
				"INSERT INTO t$i SELECT g, md5(g::text) FROM generate_series(1, 500) g"
		done
		dirs+=("$PGDATA/lsm_fdw/$(sql postgres "SELECT oid FROM pg_database WHERE datname = '${db}_gone$d'")")
	done
	for d in 1 2 3; do
		sql postgres "DROP DATABASE ${db}_gone$d"
	done
	create_db "${db}_live"
	sql "${db}_live" "CREATE FOREIGN TABLE t (k int4 OPTIONS (key 'true')) SERVER lsm"
	for s in 1 2 3 4 5 6; do
		"${PSQL[@]}" -d "${db}_live" -c "SELECT count(*) FROM t" \
			>"$work/open$s.out" 2>"$work/open$s.err" &
		pids+=("$!")
	done
	for s in 1 2 3 4 5 6; do
		if ! wait "${pids[$((s - 1))]}" || [ "$(cat "$work/open$s.out")" != 0 ] ||
			[ -s "$work/open$s.err" ]; then
			nbad=$((nbad + 1))
			diag "session $s: $(cat "$work/open$s.out" "$work/open$s.err")"
		fi
	done
	check concurrent_first_opens_quiet 0 "$nbad"
	for d in "${dirs[@]}"; do
		[ ! -e "$d" ] || left+=("$d")
	done
	check concurrent_first_opens_clean_up "" "${left[*]}"
	rm -rf "${left[@]}"
	drop_db "${db}_live"
}

main() {
	local dboid reloid dir

	create_db "$db"
	sql "$db" "CREATE FOREIGN TABLE doomed (k int4 OPTIONS (key 'true'), v text)
		SERVER lsm" \
		"INSERT INTO doomed SELECT g, md5(g::text) FROM generate_series(1, 1000) g"
	dboid=$(sql postgres "SELECT oid FROM pg_database WHERE datname = '$db'")
	reloid=$(sql "$db" "SELECT 'doomed'::regclass::oid")
	dir=$PGDATA/lsm_fdw/$dboid
	if [ -d "$dir/$reloid" ]; then
		ok store_created
	else
		fail store_created "no store directory $dir/$reloid"
	fi

	# DROP DATABASE runs in another database, where lsm_fdw hears nothing
	# of it: the next backend that opens a store removes what is left
	sql postgres "DROP DATABASE $db"
	create_db "${db}_next"
	sql "${db}_next" "CREATE FOREIGN TABLE t (k int4 OPTIONS (key 'true')) SERVER lsm" \
		"INSERT INTO t VALUES (1)"
	drop_db "${db}_next"
	if [ -e "$dir" ]; then
		fail drop_database_removes_stores \
			"DROP DATABASE $db (oid $dboid) left $dir behind:" \
			"$(cd "$PGDATA" && find "lsm_fdw/$dboid" | head -n 10)"
		# ours, and nobody else's: do not leave it in the cluster
		rm -rf "$dir"
	else
		ok drop_database_removes_stores
	fi
	concurrent_cleanup
}

main

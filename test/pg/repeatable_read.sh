#!/usr/bin/env bash
# test/pg/repeatable_read.sh: a REPEATABLE READ or SERIALIZABLE transaction
# sees one snapshot.
#
# PostgreSQL users expect the statements of a REPEATABLE READ (or
# SERIALIZABLE) transaction to see the database as of its first statement:
# no row another session commits later appears, changes or disappears.
# The FDW refreshes a table's store at the start of every scan (scan.c:
# "each scan refreshes its store first, so it sees what other backends
# committed before it began"), whatever the isolation level, so the
# second read of a transaction sees the other session's commit.  This test
# fails until reads under those levels keep the transaction's first view.
#
# Each case: session 1 opens the transaction and reads (a full scan and a
# key lookup), sleeps a second, reads again; session 2, 0.3 s in, inserts
# a row, updates one and deletes one, and commits.  Both reads of session 1
# must be equal.
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_repeatable_read

# The reads of session 1: count and sum of a full scan, and one row by key.
reads() {
	printf '%s\n' \
		"SELECT count(*), sum(v) FROM rr;" \
		"SELECT v FROM rr WHERE k = 2;"
}

# isolation_case LEVEL: one case under isolation LEVEL.
isolation_case() {
	local level=$1 tag first second

	tag=$(echo "$level" | tr 'A-Z ' 'a-z_')
	sql "$db" "TRUNCATE rr" \
		"INSERT INTO rr SELECT g, g FROM generate_series(1, 100) g"
	{
		echo "BEGIN ISOLATION LEVEL $level;"
		reads
		echo "SELECT pg_sleep(1) \\g /dev/null"
		reads
		echo "COMMIT;"
	} >"$work/$tag.1.sql"
	printf '%s\n' "SELECT pg_sleep(0.3) \\g /dev/null" "BEGIN;" \
		"INSERT INTO rr VALUES (1000, 1000);" \
		"UPDATE rr SET v = -2 WHERE k = 2;" \
		"DELETE FROM rr WHERE k = 3;" "COMMIT;" >"$work/$tag.2.sql"
	if ! run_sessions "$db" "$tag" 2; then
		fail "${tag}_snapshot" "a session failed"
		return
	fi
	first=$(head -n 2 "$work/$tag.1.out" | tr '\n' ' ')
	second=$(tail -n 2 "$work/$tag.1.out" | tr '\n' ' ')
	check "${tag}_snapshot" "second read: $first" "second read: $second" \
		"first read: $first (count|sum, then v of key 2)"
}

main() {
	create_db "$db"
	sql "$db" "CREATE FOREIGN TABLE rr (k int4 OPTIONS (key 'true'), v int8)
		SERVER lsm"
	isolation_case "REPEATABLE READ"
	isolation_case "SERIALIZABLE"
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

main

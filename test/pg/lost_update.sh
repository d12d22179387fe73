#!/usr/bin/env bash
# test/pg/lost_update.sh: concurrent read-modify-write of the same row.
#
# What PostgreSQL users expect of `UPDATE t SET n = n + 1 WHERE id = 1` run
# by several sessions at once: no increment is lost.  A heap table gets
# there with row locks (the second writer waits for the first and updates
# the row it committed); an implementation may instead refuse a conflicting
# write with a serialization failure (SQLSTATE 40001), which the client
# retries.  Either way, every increment whose transaction committed without
# error is in the final value, and an error is 40001 and nothing else.
#
# The FDW has no row locks: a write records the version of the row it
# read, and a commit whose rows another transaction changed and committed
# first fails with 40001 (src/fdw/xact.c).  With 4 sessions started
# together:
#
#   counter_increments   4 sessions x 200 autocommit increments of one row:
#                        final n = the increments that succeeded;
#   upsert_counters      4 sessions x 200 autocommit INSERT ... ON CONFLICT
#                        (id) DO UPDATE SET n = n + 1 of one key that does
#                        not exist at first: final n = the upserts that
#                        succeeded (the first inserts n = 1).
#
# The cases of two sessions in a set order (two_sessions, delete_stays,
# noted_version) are the isolation test specs/lost_update.spec, where a
# heap table shows the same steps waiting instead.
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_lost_update
nsessions=4
increments=200

# outcomes OUT...: the outcome lines "<sqlstate> <row count>" of the
# given session outputs, as "successes|errors by SQLSTATE".
outcomes() {
	cat "$@" | awk '
		$1 == "00000" && $2 == 1 { ok++; next }
		$1 == "00000" { zero++; next }
		{ err[$1]++ }
		END {
			printf "%d|", ok
			if (zero) printf "no row updated: %d ", zero
			for (e in err) printf "%s: %d ", e, err[e]
		}'
}

# other_errors ERRORS: the SQLSTATEs other than serialization failures
# (40001) in ERRORS (as outcomes prints them), or "none".
other_errors() {
	local e

	e=$(echo "$1" | tr ' ' '\n' | grep -E '^[0-9A-Z]{5}:$' |
		grep -v -x '40001:' | tr -d ':' | tr '\n' ' ' || true)
	echo "${e:-none}"
}

# concurrent_increments NAME ID FIRST STATEMENT: $nsessions sessions run
# FIRST once and then STATEMENT, which adds 1 to n of row ID, $increments
# times each, in autocommit: every statement that succeeded must be in the
# final n, and every error must be 40001.
concurrent_increments() {
	local name=$1 id=$2 first=$3 stmt=$4 s i nfailed=0 n res successes errors

	for ((s = 1; s <= nsessions; s++)); do
		{
			echo '\set ON_ERROR_STOP 0'
			echo "$first"
			for ((i = 0; i < increments; i++)); do
				echo "$stmt"
				printf '%s\n' '\echo :SQLSTATE :ROW_COUNT'
			done
		} >"$work/$name.$s.sql"
	done
	run_sessions "$db" "$name" "$nsessions" || nfailed=$?
	n=$(sql "$db" "SELECT coalesce(sum(n), 0) FROM counters WHERE id = $id")
	res=$(outcomes "$work/$name".*.out)
	successes=${res%%|*}
	errors=${res#*|}
	diag "$name: $((nsessions * increments)) statements," \
		"$successes committed without error, errors: ${errors:-none};" \
		"final n = $n ($((successes - n)) lost)"
	check "$name" \
		"0 sessions failed; n = $successes; errors other than 40001: none" \
		"$nfailed sessions failed; n = $n; errors other than 40001: $(other_errors "$errors")"
}

# counter_increments: the brief's test, 4 sessions of 200 increments.
test_counter_increments() {
	sql "$db" "INSERT INTO counters VALUES (1, 0)"
	concurrent_increments counter_increments 1 "" \
		"UPDATE counters SET n = n + 1 WHERE id = 1;"
}

# upsert_counters: as counter_increments, through upserts of key 11, which
# starts absent, so that the first ones race to insert it.  Each session
# loads the library first (LOAD), as the user guide says a session whose
# first statement is an upsert must.
test_upsert_counters() {
	concurrent_increments upsert_counters 11 "LOAD 'fdw';" \
		"INSERT INTO counters VALUES (11, 1) ON CONFLICT (id) DO UPDATE SET n = counters.n + 1;"
}

main() {
	create_db "$db"
	sql "$db" "CREATE FOREIGN TABLE counters (id int4 OPTIONS (key 'true'),
		n int8) SERVER lsm"
	test_counter_increments
	test_upsert_counters
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

main

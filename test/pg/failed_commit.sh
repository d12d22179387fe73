#!/usr/bin/env bash
# test/pg/failed_commit.sh: a COMMIT that fails must not have written.
#
# A transaction's writes reach the stores at XACT_EVENT_PRE_COMMIT
# (src/fdw/xact.c), but PostgreSQL can still fail the commit after that
# event: CommitTransaction runs PreCommit_CheckForSerializationFailure (and
# PreCommit_Notify) after the pre-commit callbacks.  A SERIALIZABLE
# transaction that SSI cancels "during commit attempt" then reports 40001
# and rolls back its native writes, while its writes to foreign tables are
# already in the stores, visible to everyone.  This test fails until the
# FDW's writes follow the transaction's fate.
#
# The case is the textbook write skew: two SERIALIZABLE transactions each
# read the on-call doctors and take one off call; the first commits, the
# second is cancelled when it commits.  The second has also inserted a row
# into a foreign table, which must not be there.
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_failed_commit

main() {
	local commit2 state

	create_db "$db"
	sql "$db" "CREATE FOREIGN TABLE audit (k int4 OPTIONS (key 'true'), note text)
		SERVER lsm" \
		"CREATE TABLE doctors (name text PRIMARY KEY, on_call bool)" \
		"INSERT INTO doctors VALUES ('alice', true), ('bob', true)"

	printf '%s\n' "BEGIN ISOLATION LEVEL SERIALIZABLE;" \
		"SELECT count(*) FROM doctors WHERE on_call \\g /dev/null" \
		"UPDATE doctors SET on_call = false WHERE name = 'alice';" \
		"SELECT pg_sleep(0.5) \\g /dev/null" "COMMIT;" >"$work/ssi.1.sql"
	printf '%s\n' '\set ON_ERROR_STOP 0' \
		"BEGIN ISOLATION LEVEL SERIALIZABLE;" \
		"SELECT count(*) FROM doctors WHERE on_call \\g /dev/null" \
		"UPDATE doctors SET on_call = false WHERE name = 'bob';" \
		"INSERT INTO audit VALUES (1, 'bob went off call');" \
		"SELECT pg_sleep(1) \\g /dev/null" "COMMIT;" '\echo :SQLSTATE' \
		>"$work/ssi.2.sql"
	if ! run_sessions "$db" ssi 2; then
		fail serializable_failure_at_commit "a session failed"
		return
	fi
	commit2=$(cat "$work/ssi.2.out")
	# the premise: PostgreSQL cancels the second transaction at COMMIT
	check serializable_failure_at_commit 40001 "$commit2" \
		"$(cat "$work/ssi.2.out.err")"
	state=$(sql "$db" "SELECT
		(SELECT string_agg(name, ',' ORDER BY name) FROM doctors WHERE on_call),
		(SELECT count(*) FROM audit)")
	check failed_commit_wrote_nothing "on call: bob; audit rows: 0" \
		"on call: ${state%%|*}; audit rows: ${state#*|}" \
		"the second transaction's COMMIT returned $commit2"
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

main

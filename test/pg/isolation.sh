#!/usr/bin/env bash
# test/pg/isolation.sh: what a transaction sees of other sessions' commits.
#
# A foreign table and a heap table hold the same rows; session A reads both
# twice in one transaction, with session B committing inserts, an update
# and a delete to both in between (then running ANALYZE, which invalidates
# A's cached definition of the table), and once more after its commit.
# Before its second read A calls lsm_flush on the table.  Each read is the
# row checksum of the whole table, the count of a value search (grp = 7)
# and two key lookups, so that every access path is looked at.
#
#   read_committed      every statement sees what was committed before it:
#                       A's second read shows B's writes, on both tables;
#   repeatable_read     A's second read equals its first (the transaction's
#                       snapshot), on both tables; after A's commit B's
#                       writes show;
#   serializable        the same under SERIALIZABLE;
#   rr_update_conflict  under REPEATABLE READ, A reads a row, B updates it,
#                       commits and analyzes, A updates it: A fails with 40001 (at
#                       its UPDATE on a heap table, at its COMMIT on a
#                       foreign one) and B's update stays.
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_isolation

# read_sql TABLE: the psql line that prints one read of TABLE.
read_sql() {
	printf '%s\n' "SELECT md5(string_agg(t::text, ',' ORDER BY id))
		|| ' ' || (SELECT count(*) FROM $1 WHERE grp = 7)
		|| ' ' || coalesce((SELECT v FROM $1 WHERE id = 5), '-')
		|| ' ' || coalesce((SELECT v FROM $1 WHERE id = 1005), '-')
		FROM $1 t;"
}

# reset_tables: both tables with rows 1..1000, grp = id % 10.
reset_tables() {
	sql "$db" "TRUNCATE fx" "TRUNCATE hx" \
		"INSERT INTO fx SELECT g, g % 10, 'v' || g FROM generate_series(1, 1000) g" \
		"INSERT INTO hx SELECT * FROM fx" >/dev/null
}

# reads LEVEL TAG: session A reads at isolation LEVEL before and after B's
# commit and after its own commit; prints A's six lines (fx, hx, fx, hx,
# fx, hx) to $work/TAG.1.out.
reads() {
	local level=$1 tag=$2 nfailed=0

	reset_tables
	{
		echo '\set ON_ERROR_STOP 1'
		echo "BEGIN ISOLATION LEVEL $level;"
		read_sql fx
		read_sql hx
		echo 'SELECT pg_sleep(1) \g /dev/null'
		echo "SELECT lsm_flush('fx') \g /dev/null"
		read_sql fx
		read_sql hx
		echo 'COMMIT;'
		read_sql fx
		read_sql hx
	} >"$work/$tag.1.sql"
	{
		echo '\set ON_ERROR_STOP 1'
		echo 'SELECT pg_sleep(0.4) \g /dev/null'
		echo 'BEGIN;'
		for t in fx hx; do
			echo "INSERT INTO $t SELECT g, 7, 'new' FROM generate_series(1001, 1010) g;"
			echo "UPDATE $t SET v = 'changed', grp = 7 WHERE id = 5;"
			echo "DELETE FROM $t WHERE id = 17;"
		done
		echo 'COMMIT;'
		echo 'ANALYZE fx;'
	} >"$work/$tag.2.sql"
	run_sessions "$db" "$tag" 2 || nfailed=$?
	[ "$nfailed" -eq 0 ] || fail "$tag" "$nfailed sessions failed"
	return "$nfailed"
}

# line N FILE: line N of FILE.
line() {
	sed -n "${1}p" "$2"
}

test_read_committed() {
	local o=$work/rc.1.out

	reads "READ COMMITTED" rc || return 0
	check read_committed \
		"fx = hx before, after B, after commit; after B differs from before" \
		"$([ "$(line 1 "$o")" = "$(line 2 "$o")" ] && echo "fx = hx before" || echo "fx != hx before"), $(
			[ "$(line 3 "$o")" = "$(line 4 "$o")" ] && echo "after B" || echo "fx != hx after B"), $(
			[ "$(line 5 "$o")" = "$(line 6 "$o")" ] && echo "after commit" || echo "fx != hx after commit"); $(
			[ "$(line 3 "$o")" != "$(line 1 "$o")" ] && echo "after B differs from before" || echo "after B equals before")" \
		"A's reads: $(tr '\n' '|' <"$o")"
}

# snapshot LEVEL NAME: A's reads in one transaction are equal, on both
# tables, and equal between the tables; after A's commit B's writes show.
snapshot() {
	local level=$1 name=$2 o=$work/$2.1.out

	reads "$level" "$name" || return 0
	check "$name" \
		"fx = hx = before, in the transaction; fx = hx after commit, not before" \
		"$([ "$(line 1 "$o")" = "$(line 2 "$o")" ] && [ "$(line 3 "$o")" = "$(line 1 "$o")" ] &&
			[ "$(line 4 "$o")" = "$(line 1 "$o")" ] && echo "fx = hx = before" ||
			echo "reads differ"), in the transaction; $(
			[ "$(line 5 "$o")" = "$(line 6 "$o")" ] && echo "fx = hx" || echo "fx != hx") after commit, $(
			[ "$(line 5 "$o")" != "$(line 1 "$o")" ] && echo "not before" || echo "same as before")" \
		"A's reads: $(tr '\n' '|' <"$o")"
}

test_rr_update_conflict() {
	local nfailed=0 t a v

	for t in fx hx; do
		reset_tables
		printf '%s\n' '\set ON_ERROR_STOP 0' \
			'BEGIN ISOLATION LEVEL REPEATABLE READ;' \
			"SELECT v FROM $t WHERE id = 10 \\g /dev/null" \
			'SELECT pg_sleep(1) \g /dev/null' \
			"UPDATE $t SET v = 'A' WHERE id = 10;" '\set e1 :SQLSTATE' \
			'COMMIT;' \
			'\if :ERROR' '\echo :SQLSTATE' '\else' '\echo :e1' '\endif' \
			>"$work/upd_$t.1.sql"
		printf '%s\n' '\set ON_ERROR_STOP 1' 'SELECT pg_sleep(0.4) \g /dev/null' \
			"UPDATE $t SET v = 'B' WHERE id = 10;" "ANALYZE $t;" \
			>"$work/upd_$t.2.sql"
		run_sessions "$db" "upd_$t" 2 || nfailed=$((nfailed + $?))
		a+="$t: A $(cat "$work/upd_$t.1.out"), "
		v+="$(sql "$db" "SELECT v FROM $t WHERE id = 10") "
	done
	check rr_update_conflict \
		"0 sessions failed; fx: A 40001, hx: A 40001, ; final v: B B " \
		"$nfailed sessions failed; $a; final v: $v"
}

main() {
	create_db "$db"
	sql "$db" "CREATE FOREIGN TABLE fx (id int4 OPTIONS (key 'true'),
		grp int4, v text) SERVER lsm" \
		"CREATE TABLE hx (id int4 PRIMARY KEY, grp int4, v text)" >/dev/null
	test_read_committed
	snapshot "REPEATABLE READ" repeatable_read
	snapshot "SERIALIZABLE" serializable
	test_rr_update_conflict
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

main

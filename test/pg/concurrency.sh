#!/usr/bin/env bash
# test/pg/concurrency.sh: several sessions writing one foreign table at once.
#
# Each backend has its own handle on the table's store; writers serialise on
# the store's lock, and a transaction's writes reach the store at commit, as
# one batch, under a per-store commit lock that re-checks the keys it
# inserted (src/fdw/xact.c).  This script checks what that must give, with
# 4 writing sessions started together:
#
#   disjoint_inserts  sessions insert disjoint keys (one-row and multi-row
#                     INSERTs, INSERT ... SELECT, COPY, savepoints rolled
#                     back, transactions rolled back): every committed row
#                     is there, nothing else;
#   same_keys         every session inserts the same keys, one per
#                     transaction and in groups: each key is inserted by
#                     exactly one session, every other attempt fails with
#                     unique_violation (23505, when it inserts or when it
#                     commits) and with nothing else;
#   distinct_rows     sessions update, delete and move (update the key of)
#                     distinct rows, by key lookups and by range conditions
#                     that scan the rows of the others: the result is the
#                     union of their changes;
#   reader            while the writers move rows (delete a key and insert
#                     another, or update the key) and move value between
#                     rows, keeping count and sum constant, a fifth session
#                     scans in a loop: every scan sees the invariants.
#
# Lost updates under concurrent read-modify-write are in lost_update.sh
# and specs/lost_update.spec.
# The tables have small memtables so that flushes and compactions run
# during all this.  Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_concurrency
nsessions=4

# ---------------------------------------------------------------------------
# disjoint_inserts

# Transactions per session, rows per transaction.
a_txns=250
a_rows=20

# gen_disjoint S: session S's inserts.  Transaction i inserts ids
# S * 1000000 + i * 20 + 0..19 in one of five ways (the note column says
# which); every tenth transaction also inserts rows it then rolls back.
gen_disjoint() {
	local s=$1 i j base

	for ((i = 0; i < a_txns; i++)); do
		base=$((s * 1000000 + i * a_rows))
		case $((i % 5)) in
			0)
				echo "BEGIN;"
				for ((j = 0; j < a_rows; j++)); do
					echo "INSERT INTO conc_a VALUES ($((base + j)), $s, $i, 'single');"
				done
				echo "COMMIT;"
				;;
			1)
				echo "INSERT INTO conc_a SELECT $base + j, $s, $i, 'select' FROM generate_series(0, $((a_rows - 1))) j;"
				;;
			2)
				echo "BEGIN;"
				echo "INSERT INTO conc_a SELECT $base + j, $s, $i, 'savepoint' FROM generate_series(0, 9) j;"
				echo "SAVEPOINT sp;"
				echo "INSERT INTO conc_a SELECT $base + j, $s, $i, 'rolled back' FROM generate_series(10, $((a_rows - 1))) j;"
				echo "UPDATE conc_a SET note = 'rolled back' WHERE id = $base;"
				echo "ROLLBACK TO sp;"
				echo "INSERT INTO conc_a SELECT $base + j, $s, $i, 'savepoint' FROM generate_series(10, $((a_rows - 1))) j;"
				echo "COMMIT;"
				;;
			3)
				printf 'INSERT INTO conc_a VALUES '
				for ((j = 0; j < a_rows; j++)); do
					[ "$j" -eq 0 ] || printf ', '
					printf "(%d, %d, %d, 'values')" $((base + j)) "$s" "$i"
				done
				echo ";"
				;;
			4)
				echo "COPY conc_a FROM STDIN;"
				for ((j = 0; j < a_rows; j++)); do
					printf '%d\t%d\t%d\tcopy\n' $((base + j)) "$s" "$i"
				done
				echo '\.'
				;;
		esac
		if [ $((i % 10)) -eq 9 ]; then
			echo "BEGIN;"
			echo "INSERT INTO conc_a SELECT $((s * 1000000 + 500000 + i * a_rows)) + j, $s, $i, 'rolled back' FROM generate_series(0, $((a_rows - 1))) j;"
			echo "DELETE FROM conc_a WHERE id = $base;"
			echo "ROLLBACK;"
		fi
	done
}

test_disjoint_inserts() {
	local s nfailed=0 got

	sql "$db" "CREATE FOREIGN TABLE conc_a (id int8 OPTIONS (key 'true'),
		s int4, i int4, note text) SERVER lsm OPTIONS (memtable_size '64kB')"
	for ((s = 1; s <= nsessions; s++)); do
		gen_disjoint "$s" >"$work/a.$s.sql"
	done
	run_sessions "$db" a "$nsessions" || nfailed=$?
	got=$(sql "$db" "
		CREATE TEMP TABLE expected AS
		SELECT s * 1000000 + i * $a_rows + j AS id, s, i,
		    (ARRAY['single', 'select', 'savepoint', 'values', 'copy'])[i % 5 + 1]
		        AS note
		FROM generate_series(1, $nsessions) s,
		    generate_series(0, $a_txns - 1) i,
		    generate_series(0, $a_rows - 1) j;
		CREATE TEMP TABLE scan AS SELECT * FROM conc_a;
		SELECT (SELECT count(*) FROM scan),
		    (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL
		                           SELECT * FROM scan) d),
		    (SELECT count(*) FROM (SELECT * FROM scan EXCEPT ALL
		                           SELECT * FROM expected) d)")
	check disjoint_inserts \
		"0 sessions failed; rows|missing|unexpected: $((nsessions * a_txns * a_rows))|0|0" \
		"$nfailed sessions failed; rows|missing|unexpected: $got"
}

# ---------------------------------------------------------------------------
# same_keys

b_single=400			# keys 1..400, one per transaction
b_groups=80				# keys 1001.., five per transaction

# gen_same_keys S: session S inserts every key, in the same order as the
# others, and prints "S key nkeys sqlstate-of-insert sqlstate-of-commit"
# after each transaction.  (COMMIT of a failed transaction is a ROLLBACK
# with no error, so the first SQLSTATE tells a failure at the INSERT, the
# second one at the COMMIT.)  A millisecond's sleep between the INSERT and
# the COMMIT lets other sessions commit the key meanwhile.
gen_same_keys() {
	local s=$1 k g

	echo '\set ON_ERROR_STOP 0'
	for ((k = 1; k <= b_single; k++)); do
		printf '%s\n' "BEGIN;" "INSERT INTO conc_b VALUES ($k, $s);" \
			'\set e1 :SQLSTATE' '\if :ERROR' '\else' \
			'SELECT pg_sleep(0.001) \g /dev/null' '\endif' "COMMIT;" \
			"\\echo $s $k 1 :e1 :SQLSTATE"
	done
	for ((g = 0; g < b_groups; g++)); do
		k=$((1001 + g * 5))
		printf '%s\n' "BEGIN;" \
			"INSERT INTO conc_b VALUES ($k, $s), ($((k + 1)), $s), ($((k + 2)), $s), ($((k + 3)), $s), ($((k + 4)), $s);" \
			'\set e1 :SQLSTATE' '\if :ERROR' '\else' \
			'SELECT pg_sleep(0.001) \g /dev/null' '\endif' "COMMIT;" \
			"\\echo $s $k 5 :e1 :SQLSTATE"
	done
}

test_same_keys() {
	local s nfailed=0 out name bad detail

	sql "$db" "CREATE FOREIGN TABLE conc_b (id int4 OPTIONS (key 'true'),
		s int4) SERVER lsm OPTIONS (memtable_size '64kB')" \
		"CREATE TABLE b_results (s int4, k int4, n int4, e1 text, e2 text)"
	for ((s = 1; s <= nsessions; s++)); do
		gen_same_keys "$s" >"$work/b.$s.sql"
	done
	run_sessions "$db" b "$nsessions" || nfailed=$?
	cat "$work"/b.*.out >"$work/b.results"
	"${PSQL[@]}" -d "$db" -c "\\copy b_results FROM '$work/b.results' (DELIMITER ' ')"
	out=$(sql "$db" "
		CREATE TEMP TABLE outcome AS
		SELECT s, k, n, CASE WHEN e1 <> '00000' THEN e1 ELSE e2 END AS code,
		    e1 <> '00000' AS at_insert
		FROM b_results;
		CREATE TEMP TABLE winner AS
		SELECT k, n, min(s) AS s, count(*) AS wins FROM outcome
		WHERE code = '00000' GROUP BY k, n;
		SELECT 'all_attempts_reported', abs(count(*) - $nsessions * ($b_single + $b_groups)),
		    count(*) || ' transactions reported' FROM outcome
		UNION ALL
		SELECT 'each_key_inserted_once', count(*),
		    string_agg(format('key %s: %s sessions succeeded', k, coalesce(wins, 0)), '; ')
		FROM (SELECT DISTINCT k FROM outcome) a LEFT JOIN winner w USING (k)
		WHERE coalesce(wins, 0) <> 1
		UNION ALL
		SELECT 'others_get_23505', count(*),
		    string_agg(format('session %s key %s: SQLSTATE %s', s, k, code), '; ')
		FROM outcome WHERE code NOT IN ('00000', '23505')
		UNION ALL
		SELECT 'table_holds_the_winners', count(*), string_agg(d::text, ' ')
		FROM ((SELECT * FROM conc_b EXCEPT ALL
		       SELECT k + i, s FROM winner, generate_series(0, n - 1) i)
		      UNION ALL
		      (SELECT k + i, s FROM winner, generate_series(0, n - 1) i
		       EXCEPT ALL SELECT * FROM conc_b)) d
		UNION ALL
		SELECT 'info', 0, format('%s conflicts at INSERT, %s at COMMIT',
		    count(*) FILTER (WHERE code = '23505' AND at_insert),
		    count(*) FILTER (WHERE code = '23505' AND NOT at_insert))
		FROM outcome")
	[ "$nfailed" -eq 0 ] || fail same_keys_sessions "$nfailed sessions failed"
	while IFS='|' read -r name bad detail; do
		if [ "$name" = info ]; then
			diag "same_keys: $detail"
		elif [ "$bad" -eq 0 ]; then
			ok "same_keys_$name"
		else
			fail "same_keys_$name" "$bad bad: $detail"
		fi
	done <<<"$out"
}

# ---------------------------------------------------------------------------
# distinct_rows

c_rows=8000				# ids 1..8000, session s owns id % 4 = s - 1
c_chunk=8				# rows per transaction

# gen_distinct_rows S: session S changes its own rows, 8 ids a transaction:
# id % 3 = 0 deleted, id % 3 = 1 updated, id % 3 = 2 moved to id + 100000
# if id % 5 = 0, else left alone.  Every fourth transaction does it with
# range conditions (scans that read every session's rows), the others with
# key lookups; every seventh is first rolled back, then done again.
gen_distinct_rows() {
	local s=$1 owner=$(($1 - 1)) ids=() id n c lo hi body

	for ((id = 1; id <= c_rows; id++)); do
		[ $((id % nsessions)) -eq "$owner" ] && ids+=("$id")
	done
	n=${#ids[@]}
	for ((c = 0; c * c_chunk < n; c++)); do
		lo=${ids[$((c * c_chunk))]}
		hi=${ids[$((c * c_chunk + c_chunk - 1 < n ? c * c_chunk + c_chunk - 1 : n - 1))]}
		if [ $((c % 4)) -eq 3 ]; then
			body="DELETE FROM conc_c WHERE id % $nsessions = $owner AND id BETWEEN $lo AND $hi AND id % 3 = 0;
UPDATE conc_c SET v = id * 10 + $s, note = 'updated' WHERE id % $nsessions = $owner AND id BETWEEN $lo AND $hi AND id % 3 = 1;
UPDATE conc_c SET id = id + 100000, note = 'moved' WHERE id % $nsessions = $owner AND id BETWEEN $lo AND $hi AND id % 3 = 2 AND id % 5 = 0;"
		else
			body=""
			for ((id = lo; id <= hi; id += nsessions)); do
				case $((id % 3)) in
					0) body+="DELETE FROM conc_c WHERE id = $id;"$'\n' ;;
					1) body+="UPDATE conc_c SET v = id * 10 + $s, note = 'updated' WHERE id = $id;"$'\n' ;;
					2)
						[ $((id % 5)) -eq 0 ] &&
							body+="UPDATE conc_c SET id = id + 100000, note = 'moved' WHERE id = $id;"$'\n'
						;;
				esac
			done
		fi
		if [ $((c % 7)) -eq 6 ]; then
			printf 'BEGIN;\n%s\nROLLBACK;\n' "$body"
		fi
		printf 'BEGIN;\n%s\nCOMMIT;\n' "$body"
	done
}

test_distinct_rows() {
	local s nfailed=0 got

	sql "$db" "CREATE FOREIGN TABLE conc_c (id int8 OPTIONS (key 'true'),
		v int8, s int4, note text) SERVER lsm OPTIONS (memtable_size '64kB')" \
		"INSERT INTO conc_c SELECT id, 0, id % $nsessions, 'original'
		 FROM generate_series(1, $c_rows) id"
	for ((s = 1; s <= nsessions; s++)); do
		gen_distinct_rows "$s" >"$work/c.$s.sql"
	done
	run_sessions "$db" c "$nsessions" || nfailed=$?
	got=$(sql "$db" "
		CREATE TEMP TABLE expected AS
		SELECT CASE WHEN id % 3 = 2 AND id % 5 = 0 THEN id + 100000 ELSE id END
		        AS id,
		    CASE WHEN id % 3 = 1 THEN id * 10 + id % $nsessions + 1 ELSE 0 END
		        AS v,
		    id % $nsessions AS s,
		    CASE id % 3 WHEN 1 THEN 'updated'
		        WHEN 2 THEN CASE WHEN id % 5 = 0 THEN 'moved' ELSE 'original' END
		    END AS note
		FROM generate_series(1, $c_rows) id WHERE id % 3 <> 0;
		CREATE TEMP TABLE scan AS SELECT * FROM conc_c;
		SELECT (SELECT count(*) FROM scan),
		    (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL
		                           SELECT * FROM scan) d),
		    (SELECT count(*) FROM (SELECT * FROM scan EXCEPT ALL
		                           SELECT * FROM expected) d)")
	check distinct_rows \
		"0 sessions failed; rows|missing|unexpected: $((c_rows - c_rows / 3))|0|0" \
		"$nfailed sessions failed; rows|missing|unexpected: $got"
}

# ---------------------------------------------------------------------------
# reader

d_rows=2000				# ids 1..2000, v = 1: count = sum(v) = 2000
d_txns=200				# transactions per writer, 2 moves each

# gen_mover S: writer S (owner of id % 4 = S - 1) moves its rows one after
# another to fresh keys S * 1000000 + t, alternately by DELETE + INSERT and
# by an UPDATE of the key, two per transaction, and moves one unit of v
# from its previous new row to its newest.  Count and sum(v) stay the same.
gen_mover() {
	local s=$1 owner=$(($1 - 1)) t old new

	for ((t = 0; t < 2 * d_txns; t++)); do
		[ $((t % 2)) -eq 0 ] && echo "BEGIN;"
		old=$((owner == 0 ? 4 * (t + 1) : owner + 4 * t))
		new=$((s * 1000000 + t))
		if [ $((t % 4)) -lt 2 ]; then
			echo "INSERT INTO conc_d SELECT $new, v FROM conc_d WHERE id = $old;"
			echo "DELETE FROM conc_d WHERE id = $old;"
		else
			echo "UPDATE conc_d SET id = $new WHERE id = $old;"
		fi
		if [ "$t" -gt 0 ]; then
			echo "UPDATE conc_d SET v = v - 1 WHERE id = $((new - 1));"
			echo "UPDATE conc_d SET v = v + 1 WHERE id = $new;"
		fi
		if [ $((t % 2)) -eq 1 ]; then
			echo "COMMIT;"
			# pace the writers, so that the reader scans many times
			echo "SELECT pg_sleep(0.005) \g /dev/null"
		fi
	done
	echo "\\! touch $work/d.done.$s"
}

# gen_reader DEADLINE: scans the table in a loop until every writer is done
# (each creates a file at its end) or DEADLINE (a timestamp) has passed,
# printing count and sum(v) of each scan: a plain scan, a scan under a
# filter, an ordered scan, and a self-join whose inner side looks up every
# key of the outer scan (one statement: one consistent state).
gen_reader() {
	local i

	echo "SET enable_hashjoin = off;"
	echo "SET enable_mergejoin = off;"
	for ((i = 0; i < 20000; i++)); do
		echo "SELECT count(*), sum(v) FROM conc_d;"
		echo "SELECT count(*), sum(v) FROM conc_d WHERE id > 0;"
		echo "SELECT count(*), sum(v) FROM (SELECT * FROM conc_d ORDER BY id) o;"
		echo "SELECT count(*), sum(b.v) FROM conc_d a JOIN conc_d b ON b.id = a.id;"
		if [ $((i % 10)) -eq 9 ]; then
			# shellcheck disable=SC2016  # for the shell psql starts
			printf '%s\n' \
				"\\set done \`test \"\$(ls $work/d.done.* 2>/dev/null | wc -l)\" -eq $nsessions && echo true || echo false\`" \
				"SELECT clock_timestamp() > timestamptz '$1' AS late \\gset" \
				'\if :done' '\q' '\elif :late' '\q' '\endif'
		fi
	done
}

test_reader() {
	local s nfailed=0 scans bad

	rm -f "$work"/d.done.*
	sql "$db" "CREATE FOREIGN TABLE conc_d (id int8 OPTIONS (key 'true'),
		v int4) SERVER lsm OPTIONS (memtable_size '64kB')" \
		"INSERT INTO conc_d SELECT id, 1 FROM generate_series(1, $d_rows) id"
	for ((s = 1; s <= nsessions; s++)); do
		gen_mover "$s" >"$work/d.$s.sql"
	done
	gen_reader "$(start_at 300)" >"$work/d.$((nsessions + 1)).sql"
	run_sessions "$db" d $((nsessions + 1)) || nfailed=$?
	scans=$(wc -l <"$work/d.$((nsessions + 1)).out")
	bad=$(grep -v -c -x "$d_rows|$d_rows" "$work/d.$((nsessions + 1)).out" || true)
	diag "reader: $scans scans while the writers committed"
	check reader_sees_invariants \
		"0 sessions failed, 0 inconsistent scans" \
		"$nfailed sessions failed, $bad inconsistent scans" \
		"$(grep -v -x "$d_rows|$d_rows" "$work/d.$((nsessions + 1)).out" | sort | uniq -c | head -n 5)"
	check reader_final "$d_rows|$d_rows|$d_rows" \
		"$(sql "$db" "SELECT count(*), sum(v), count(DISTINCT id) FROM conc_d")"
}

main() {
	create_db "$db"
	test_disjoint_inserts
	test_same_keys
	test_distinct_rows
	test_reader
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

main

#!/usr/bin/env bash
# test/pg/parallel.sh: parallel scans while other sessions write.
#
# A parallel scan's workers read the snapshot the leader shared (its tables,
# its memtable and its read sequence, pinned against removal: architecture.md
# "Shared views"), not the store as they find it.  Two writers move rows and
# value between rows (count and sum(v) stay constant, g records each move;
# every row has c = 'x'), in a table with a small memtable, so that flushes
# and the background compactions replace its files all the while.  Two
# readers scan it in parallel plans (Gather over Parallel Foreign Scan):
#
#   committed   READ COMMITTED: every scan (full, key range, a value search
#               for c = 'x', an aggregate grouped by a column, an aggregate
#               computed by the scan itself) sees the invariants;
#   repeatable  REPEATABLE READ and SERIALIZABLE, in turn: four scans of a
#               transaction (full, then a key range, a value search and an
#               aggregate computed by the scan),
#               with writes, flushes and compactions between them, give the
#               same answer, and the invariants;
#
# and a third check: the plans are parallel, and the answers of the
# transactions of the repeatable reader differ (the writers were at work).
#
# Then crashes in the middle of parallel scans: readers run parallel full
# scans, ranges and value searches in a loop while writers move value
# between rows, until an immediate shutdown (the leaders die holding their
# pins on the store, the workers with them).  After each restart the
# invariants hold, with and without parallel workers, the store verifies,
# and a full compaction leaves no table file that the store does not name:
# the dead leaders' pins are cleared, and the files they kept are swept.
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_parallel
nwriters=2
rows=100000			# ids 1..100000, v = 1: count = sum(v) = 100000
txns=400				# transactions per writer, 2 moves each

PARALLEL="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET lsm_fdw.value_search = hierarchy; SET lsm_fdw.aggregate_pushdown = off;"

# gen_mover S: writer S (owner of id % 2 = S - 1) moves its rows to fresh
# keys S * 1000000 + t, by DELETE + INSERT or by an UPDATE of the key, and
# moves one unit of v from its previous new row to its newest; g = t.
gen_mover() {
	local s=$1 owner=$(($1 - 1)) t old new

	for ((t = 0; t < 2 * txns; t++)); do
		[ $((t % 2)) -eq 0 ] && echo "BEGIN;"
		old=$((owner == 0 ? 2 * (t + 1) : owner + 2 * t))
		new=$((s * 1000000 + t))
		if [ $((t % 4)) -lt 2 ]; then
			echo "INSERT INTO par SELECT $new, v, $t, c FROM par WHERE id = $old;"
			echo "DELETE FROM par WHERE id = $old;"
		else
			echo "UPDATE par SET id = $new, g = $t WHERE id = $old;"
		fi
		if [ "$t" -gt 0 ]; then
			echo "UPDATE par SET v = v - 1 WHERE id = $((new - 1));"
			echo "UPDATE par SET v = v + 1 WHERE id = $new;"
		fi
		if [ $((t % 2)) -eq 1 ]; then
			echo "COMMIT;"
			echo "SELECT pg_sleep(0.01) \g /dev/null"
		fi
	done
	echo "\\! touch $work/done.$s"
}

# until_done DEADLINE: the psql lines that quit once every writer is done
# or DEADLINE has passed.
until_done() {
	# shellcheck disable=SC2016  # for the shell psql starts
	printf '%s\n' \
		"\\set done \`test \"\$(ls $work/done.* 2>/dev/null | wc -l)\" -eq $nwriters && echo true || echo false\`" \
		"SELECT clock_timestamp() > timestamptz '$1' AS late \\gset" \
		'\if :done' '\q' '\elif :late' '\q' '\endif'
}

# gen_committed DEADLINE: scans in a loop, printing count and sum(v).
gen_committed() {
	local i

	echo "$PARALLEL"
	for ((i = 0; i < 5000; i++)); do
		echo "SELECT count(*), sum(v) FROM par;"
		echo "SELECT count(*), sum(v) FROM par WHERE id > 0;"
		echo "SELECT count(*), sum(v) FROM par WHERE c = 'x';"
		echo "BEGIN; SET LOCAL lsm_fdw.aggregate_pushdown = on;"
		echo "SELECT count(*), sum(v) FROM par;"
		echo "SELECT sum(n), sum(s) FROM (SELECT c, count(*), sum(v) FROM par GROUP BY c) x(k, n, s);"
		echo "COMMIT;"
		echo "SELECT sum(n), sum(s) FROM (SELECT g % 3, count(*), sum(v) FROM par GROUP BY 1) x(k, n, s);"
		until_done "$1"
	done
}

# gen_repeatable DEADLINE: transactions of two scans, a pause between them,
# REPEATABLE READ and SERIALIZABLE in turn;
# prints count|sum(v)|sum(g) of each scan, the two of a transaction on one
# line.
gen_repeatable() {
	local i

	echo "$PARALLEL"
	for ((i = 0; i < 2000; i++)); do
		if [ $((i % 2)) -eq 0 ]; then
			echo "BEGIN ISOLATION LEVEL REPEATABLE READ;"
		else
			echo "BEGIN ISOLATION LEVEL SERIALIZABLE;"
		fi
		echo "SELECT count(*) AS c1, sum(v) AS s1, sum(g) AS g1 FROM par \\gset"
		echo "SELECT pg_sleep(0.05) \\g /dev/null"
		echo "SELECT :c1, :s1, :g1, count(*), sum(v), sum(g) FROM par WHERE id > 0;"
		echo "SELECT :c1, :s1, :g1, count(*), sum(v), sum(g) FROM par WHERE c = 'x';"
		echo "SET LOCAL lsm_fdw.aggregate_pushdown = on;"
		echo "SELECT :c1, :s1, :g1, count(*), sum(v), sum(g) FROM par;"
		echo "COMMIT;"
		until_done "$1"
	done
}

# gen_shifter S: writer S moves one unit of v between two of its rows (ids
# above those the movers moved away, of its parity), in a loop.
gen_shifter() {
	local t a b span=$(((rows - 2000) / 2))

	for ((t = 0; t < 20000; t++)); do
		a=$((2001 + $1 % 2 + 2 * ((t * 7919) % span)))
		b=$((2001 + $1 % 2 + 2 * ((t * 6007 + 1) % span)))
		echo "BEGIN;"
		echo "UPDATE par SET v = v - 1 WHERE id = $a;"
		echo "UPDATE par SET v = v + 1 WHERE id = $b;"
		echo "COMMIT;"
		printf '%s\n' "\\echo moved"
	done
}

# gen_crash_reader: parallel scans and value searches in a loop.
gen_crash_reader() {
	local i

	echo "$PARALLEL"
	for ((i = 0; i < 20000; i++)); do
		echo "SELECT count(*), sum(v) FROM par;"
		echo "SELECT count(*), sum(v) FROM par WHERE c = 'x';"
		echo "SELECT count(*), sum(v) FROM par WHERE id > $((i % 1000));"
	done
}

# crash_cycle K PAUSE: two shifters and two readers, an immediate shutdown
# after PAUSE seconds, a restart, and the checks.
crash_cycle() {
	local k=$1 pause=$2 s dir orphans

	for ((s = 1; s <= 2; s++)); do
		gen_shifter "$s" >"$work/w$k.$s.sql"
		gen_crash_reader >"$work/r$k.$s.sql"
		background psql_session "$db" "$work/w$k.$s.out" "$work/w$k.$s.sql"
		background psql_session "$db" "$work/r$k.$s.out" "$work/r$k.$s.sql"
	done
	sleep "$pause"
	check "crash${k}_sessions_at_work" yes \
		"$([ "$(cat "$work"/r"$k".*.out | wc -l)" -gt 0 ] &&
			[ "$(cat "$work"/w"$k".*.out | wc -l)" -gt 0 ] && echo yes || echo no)"
	pg_crash
	wait_all || true			# the sessions die with the server
	pg_start
	check "crash${k}_invariants" "$rows|$rows|$rows|$rows" \
		"$(sql "$db" "$PARALLEL" "SELECT a.*, b.* FROM
			(SELECT count(*), sum(v) FROM par) a,
			(SELECT count(*), sum(v) FROM par WHERE c = 'x') b")"
	check "crash${k}_invariants_serial" "$rows|$rows" \
		"$(sql "$db" "SET max_parallel_workers_per_gather = 0" \
			"SELECT count(*), sum(v) FROM par WHERE id > 0")"
	check "crash${k}_verify" t "$(sql "$db" "SELECT lsm_verify('par')")"
	sql "$db" "SELECT lsm_compact('par', full => true)" >/dev/null
	dir=$(sql "$db" "SELECT lsm_store_path('par')")
	[[ "$dir" == /* ]] || dir="$PGDATA/$dir"
	orphans=$(($(find "$dir" -maxdepth 1 -name '*.sst' | wc -l) -
		$(sql "$db" "SELECT coalesce(sum(files), 0) FROM lsm_stats('par') WHERE level >= 0")))
	check "crash${k}_no_orphans" 0 "$orphans" \
		"$(find "$dir" -maxdepth 1 -name "*.sst" | head -n 20)"
}

main() {
	local s nfailed=0 deadline bad plan

	create_db "$db"
	rm -f "$work"/done.*
	sql "$db" "CREATE FOREIGN TABLE par (id int8 OPTIONS (key 'true'),
		v int4, g int4, c text) SERVER lsm OPTIONS (memtable_size '64kB',
		file_size '32kB')" \
		"INSERT INTO par SELECT id, 1, 0, 'x' FROM generate_series(1, $rows) id"

	plan=$(sql "$db" "$PARALLEL" "EXPLAIN (COSTS OFF) SELECT count(*), sum(v) FROM par" \
		"EXPLAIN (COSTS OFF) SELECT count(*), sum(v) FROM par WHERE id > 0" \
		"EXPLAIN (COSTS OFF) SELECT count(*), sum(v) FROM par WHERE c = 'x'" |
		grep -c 'Parallel Foreign Scan' || true)
	check parallel_plans 3 "$plan"

	for ((s = 1; s <= nwriters; s++)); do
		gen_mover "$s" >"$work/p.$s.sql"
	done
	deadline=$(start_at 300)
	gen_committed "$deadline" >"$work/p.$((nwriters + 1)).sql"
	gen_repeatable "$deadline" >"$work/p.$((nwriters + 2)).sql"
	run_sessions "$db" p $((nwriters + 2)) || nfailed=$?

	local rc=$work/p.$((nwriters + 1)).out rr=$work/p.$((nwriters + 2)).out
	diag "committed: $(wc -l <"$rc") scans; repeatable: $(wc -l <"$rr") transactions"
	bad=$(grep -v -c -x "$rows|$rows" "$rc" || true)
	check committed "0 sessions failed, 0 inconsistent scans" \
		"$nfailed sessions failed, $bad inconsistent scans" \
		"$(grep -v -x "$rows|$rows" "$rc" | sort | uniq -c | head -n 5)"
	bad=$(awk -F'|' -v r="$rows" '$1 != r || $2 != r || $1 != $4 || $2 != $5 || $3 != $6' "$rr" | wc -l)
	check repeatable "0 transactions that moved" "$bad transactions that moved" \
		"$(awk -F'|' -v r="$rows" '$1 != r || $2 != r || $1 != $4 || $2 != $5 || $3 != $6' "$rr" | head -n 5)"
	check writers_seen yes \
		"$([ "$(cut -d'|' -f3 "$rr" | sort -u | wc -l)" -gt 2 ] && echo yes || echo no)" \
		"sum(g) took $(cut -d'|' -f3 "$rr" | sort -u | wc -l) values"
	check final "$rows|$rows" "$(sql "$db" "SELECT count(*), sum(v) FROM par")"
	crash_cycle 1 2
	crash_cycle 2 4
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

main

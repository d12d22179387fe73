#!/usr/bin/env bash
# test/pg/crash.sh: immediate shutdowns while clients commit.
#
# A foreign table's writes reach its store at pre-commit, as one engine batch
# (src/fdw/xact.c); a crash can come at any moment of that, or of the
# flushes and compactions the writes trigger.  What must hold afterwards:
#
#   - every transaction whose COMMIT returned is wholly present;
#   - no transaction is partly present: each is all there or not at all;
#   - a transaction PostgreSQL committed (its native-table row survived)
#     is present in the store, which it reached before the commit record;
#   - key lookups (constants, generic plans' Params, nested-loop joins)
#     return what the full scan returns;
#   - the table can still be written.
#
# Several crash cycles: 8 clients commit transactions in a loop, each one 10
# new rows, an UPDATE and a DELETE of rows of the client's previous
# transaction, and a row in a native table; `pg_ctl -m immediate stop` after
# a different sleep each cycle (the server quits at once, no checkpoint),
# restart, verify everything committed so far against a model.  A client's
# transactions commit in order and it logs each one after its COMMIT
# returns, so what it committed is a prefix of its transactions, and the
# model of a prefix is exact: transaction i has its 10 rows, less the one
# transaction i+1 deleted, with the one it updated, and the table has
# nothing else.  The prefix is read from the table (its newest transaction)
# and must cover the client's log, and go at most one transaction beyond
# (the one in flight).
#
# Then big transactions (200k rows in one INSERT ... SELECT, one batch of
# about 10 MB, enough to flush and compact) killed at several moments of
# their COMMIT, found by watching pg_stat_activity: after the restart each
# is all or nothing.  Last, transactions that TRUNCATE the big table and
# load 200k rows into it, killed the same way: afterwards the table holds
# what it held before, or the new rows alone.
#
# The tables have small memtables, so that flushes and compactions run all
# the time and crashes land in them too.  Environment: see common.bash;
# LSM_CRASH_BIG_ROWS (default 200000) sizes the big transactions;
# LSM_CRASH_CLIENTS (default 8) is the number of clients: several commits
# wait for one sync at a time (group commit, docs/architecture.md), so
# crashes land between the append and the sync of some of them too.  A
# cycle's crash is timed from when every client has committed once.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_crash
nclients=${LSM_CRASH_CLIENTS:-8}
big_rows=${LSM_CRASH_BIG_ROWS:-200000}
# Transactions numbers: client c of cycle k numbers its transactions from
# range_base(k, c); row ids are txn * 100 + 0..9.
range_size=100000

# range_base CYCLE CLIENT: the first transaction number of a client.
range_base() {
	echo $((($1 * 10 + $2) * range_size))
}

# Creates the database, the tables and the verification function.
setup() {
	create_db "$db"
	"${PSQL[@]}" -d "$db" <<-'EOF'
		-- the table under test: small memtables, so that flushes and
		-- compactions run all the time
		CREATE FOREIGN TABLE crash_t (
		    id      int8 OPTIONS (key 'true'),
		    txn     int8,
		    seq     int4,
		    upd     int8,
		    payload text
		) SERVER lsm OPTIONS (memtable_size '64kB', file_size '256kB');
		CREATE FOREIGN TABLE big_t (
		    id      int8 OPTIONS (key 'true'),
		    grp     int4,
		    payload text
		) SERVER lsm OPTIONS (memtable_size '1MB');

		-- written by every client transaction: what PostgreSQL committed
		CREATE TABLE pg_committed (txn int8 PRIMARY KEY);
		-- what the clients saw commit (loaded from their logs), and the
		-- transaction number ranges in the model
		CREATE TABLE acks (txn int8);
		CREATE TABLE ranges (base int8 PRIMARY KEY, label text);

		-- Checks the table against the model; returns one row per check
		-- (bad = 0 when it holds), and rows named "info: ..." that are
		-- reported but not checked.
		CREATE FUNCTION verify_crash()
		RETURNS TABLE (name text, bad bigint, detail text)
		LANGUAGE plpgsql AS $f$
		DECLARE
		    x int8;
		    a text;
		    b text;
		    nbad bigint := 0;
		    det text := '';
		BEGIN
		    DROP TABLE IF EXISTS scan, state, expected, sample;
		    -- the full scan, once
		    CREATE TEMP TABLE scan AS SELECT * FROM crash_t;
		    CREATE INDEX ON scan (id);
		    ANALYZE scan;

		    -- per range: the newest transaction in the table, in the
		    -- clients' logs and in PostgreSQL's committed set (-1: none)
		    CREATE TEMP TABLE state AS
		    SELECT g.base, g.label,
		        coalesce(f.last, g.base - 1) - g.base AS fdw_last,
		        coalesce(k.last, g.base - 1) - g.base AS acked_last,
		        coalesce(p.last, g.base - 1) - g.base AS pg_last
		    FROM ranges g
		    LEFT JOIN (SELECT txn / 100000 * 100000 AS base, max(txn) AS last
		               FROM scan GROUP BY 1) f USING (base)
		    LEFT JOIN (SELECT txn / 100000 * 100000 AS base, max(txn) AS last
		               FROM acks GROUP BY 1) k USING (base)
		    LEFT JOIN (SELECT txn / 100000 * 100000 AS base, max(txn) AS last
		               FROM pg_committed GROUP BY 1) p USING (base);

		    RETURN QUERY
		    SELECT 'acked_present', count(*),
		        string_agg(format('%s: acknowledged up to %s, table has up to %s',
		                          label, acked_last, fdw_last), '; ')
		    FROM state WHERE fdw_last < acked_last;
		    RETURN QUERY
		    SELECT 'one_in_flight', count(*),
		        string_agg(format('%s: acknowledged up to %s, table has up to %s',
		                          label, acked_last, fdw_last), '; ')
		    FROM state WHERE fdw_last > acked_last + 1;
		    RETURN QUERY
		    SELECT 'pg_committed_present', count(*),
		        string_agg(format('%s: PostgreSQL committed up to %s, table has up to %s',
		                          label, pg_last, fdw_last), '; ')
		    FROM state WHERE pg_last > fdw_last;
		    RETURN QUERY
		    SELECT 'info: stored but not committed by PostgreSQL', count(*),
		        string_agg(format('%s: transaction %s', label, fdw_last), '; ')
		    FROM state WHERE fdw_last > pg_last;

		    -- the model of each range's committed prefix
		    CREATE TEMP TABLE expected AS
		    SELECT (st.base + i) * 100 + j AS id, st.base + i AS txn, j AS seq,
		        CASE WHEN j = 0 AND i < st.fdw_last THEN st.base + i + 1 END
		            AS upd,
		        md5(((st.base + i) * 100 + j)::text) AS payload
		    FROM state st, generate_series(0, st.fdw_last) i,
		        generate_series(0, 9) j
		    WHERE NOT (j = 9 AND i < st.fdw_last);

		    RETURN QUERY
		    WITH missing AS (SELECT * FROM expected EXCEPT ALL SELECT * FROM scan),
		         extra AS (SELECT * FROM scan EXCEPT ALL SELECT * FROM expected)
		    SELECT 'rows_match_model',
		        (SELECT count(*) FROM missing) + (SELECT count(*) FROM extra),
		        format('%s missing, e.g. %s; %s unexpected, e.g. %s',
		            (SELECT count(*) FROM missing),
		            (SELECT string_agg(m::text, ' ') FROM
		                (SELECT * FROM missing ORDER BY id LIMIT 3) m),
		            (SELECT count(*) FROM extra),
		            (SELECT string_agg(e::text, ' ') FROM
		                (SELECT * FROM extra ORDER BY id LIMIT 3) e));

		    -- key lookups against the scan: rows that are there, rows that
		    -- were deleted, rows of the transaction after each prefix
		    CREATE TEMP TABLE sample AS
		    SELECT id FROM expected WHERE id % 31 = 0
		    UNION
		    SELECT (st.base + i) * 100 + 9 FROM state st,
		        generate_series(0, st.fdw_last - 1, 7) i
		    UNION
		    SELECT (st.base + st.fdw_last + 1) * 100 + j FROM state st,
		        generate_series(0, 9) j;
		    ANALYZE sample;
		    FOR x IN SELECT id FROM sample ORDER BY id LOOP
		        -- a constant: a custom plan
		        EXECUTE format('SELECT t::text FROM crash_t t WHERE id = %s', x)
		            INTO a;
		        SELECT s::text INTO b FROM scan s WHERE id = x;
		        IF a IS DISTINCT FROM b THEN
		            nbad := nbad + 1;
		            det := det || format('id %s: lookup %s, scan %s; ', x, a, b);
		        END IF;
		        -- a PL/pgSQL variable: a Param, generic plans after five
		        SELECT t::text INTO a FROM crash_t t WHERE id = x;
		        IF a IS DISTINCT FROM b THEN
		            nbad := nbad + 1;
		            det := det || format('id %s: Param lookup %s, scan %s; ',
		                                 x, a, b);
		        END IF;
		    END LOOP;
		    -- a nested loop whose inner side is a parameterized lookup
		    SET LOCAL enable_hashjoin = off;
		    SET LOCAL enable_mergejoin = off;
		    SELECT count(*) INTO x FROM (
		        (SELECT t.* FROM sample s JOIN crash_t t ON t.id = s.id
		         EXCEPT ALL
		         SELECT c.* FROM sample s JOIN scan c ON c.id = s.id)
		        UNION ALL
		        (SELECT c.* FROM sample s JOIN scan c ON c.id = s.id
		         EXCEPT ALL
		         SELECT t.* FROM sample s JOIN crash_t t ON t.id = s.id)) d;
		    IF x > 0 THEN
		        nbad := nbad + x;
		        det := det || format('join lookups: %s rows differ', x);
		    END IF;
		    RETURN QUERY SELECT 'lookups_agree_with_scan', nbad,
		        format('%s ids; ', (SELECT count(*) FROM sample)) || det;
		END
		$f$;
	EOF
}

# gen_client CYCLE CLIENT FILE N: writes the SQL of client CLIENT of cycle
# CYCLE, N transactions, each followed by "\echo ack <txn>": psql only
# reaches it if the COMMIT succeeded (ON_ERROR_STOP).
gen_client() {
	local base

	base=$(range_base "$1" "$2")
	sql "$db" "INSERT INTO ranges VALUES ($base, 'cycle $1 client $2')"
	sql "$db" "
		SELECT format(\$\$BEGIN;
INSERT INTO crash_t SELECT %1\$s * 100 + j, %1\$s, j, NULL, md5((%1\$s * 100 + j)::text) FROM generate_series(0, 9) j;
%2\$sINSERT INTO pg_committed VALUES (%1\$s);
COMMIT;
\\echo ack %1\$s\$\$, t,
			CASE WHEN t > $base THEN format(
				E'UPDATE crash_t SET upd = %1\$s WHERE id = %2\$s;\nDELETE FROM crash_t WHERE id = %3\$s;\n',
				t, (t - 1) * 100, (t - 1) * 100 + 9) ELSE '' END)
		FROM generate_series($base, $base + $4 - 1) t" >"$3"
}

# load_acks LOG...: adds the transactions the clients logged as committed.
load_acks() {
	local log

	for log in "$@"; do
		sed -n 's/^ack //p' "$log"
	done >"$work/acks.txt"
	"${PSQL[@]}" -d "$db" -c "\\copy acks (txn) FROM '$work/acks.txt'"
}

# verify LABEL: runs verify_crash() and reports each check as LABEL_<check>.
verify() {
	local label=$1 name bad detail out

	if ! out=$(sql "$db" "SELECT name, bad, coalesce(detail, '') FROM verify_crash()" 2>&1); then
		fail "${label}_verify" "$out"
		return
	fi
	while IFS='|' read -r name bad detail; do
		case "$name" in
			info:*)
				# cumulative: said once, at the end
				[ "$label" != final ] || [ "$bad" -eq 0 ] ||
					diag "${name#info: }: $bad ($detail)"
				;;
			*)
				if [ "$bad" -eq 0 ]; then
					ok "${label}_$name"
				else
					fail "${label}_$name" "$bad bad: $detail"
				fi
				;;
		esac
	done <<<"$out"
}

# check_ended_by_crash NAME OUT RC: ok NAME if a client session (psql exit
# status RC, errors in OUT.err) finished its transactions or ended only
# because the server went away; else FAIL with the lines that say why.
check_ended_by_crash() {
	local name=$1 out=$2 rc=$3 other

	# anything but the messages of a server that goes away is an error
	other=$(grep -v -E 'WARNING: +terminating connection due to immediate shutdown command|server closed the connection unexpectedly|This probably means the server terminated abnormally|before or while processing the request|error: connection to server was lost|no connection to the server' \
		"$out.err" | grep . || true)
	if [ -z "$other" ] && { [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || [ "$rc" -eq 3 ]; }; then
		ok "$name"
	else
		fail "$name" "psql exited with status $rc:" "${other:-(no error message)}"
	fi
}

# crash_cycle CYCLE SLEEP: clients commit for SLEEP seconds, immediate
# shutdown, restart, verify.
crash_cycle() {
	local k=$1 pause=$2 c pids=() rc acks=0 n

	for ((c = 0; c < nclients; c++)); do
		gen_client "$k" "$c" "$work/c$k.$c.sql" 20000
	done
	for ((c = 0; c < nclients; c++)); do
		background psql_session "$db" "$work/c$k.$c.out" "$work/c$k.$c.sql"
		pids+=("$!")
	done
	# every client connected and committing before the crash is timed (a
	# client still connecting when the server goes away fails otherwise)
	for ((n = 0; n < 600; n++)); do
		for ((c = 0; c < nclients; c++)); do
			grep -q '^ack ' "$work/c$k.$c.out" 2>/dev/null || break
		done
		[ "$c" -eq "$nclients" ] && break
		sleep 0.1
	done
	sleep "$pause"
	for ((c = 0; c < nclients; c++)); do
		if ! kill -0 "${pids[$c]}" 2>/dev/null; then
			diag "cycle $k: client $c ended before the crash"
		fi
	done
	pg_crash
	for ((c = 0; c < nclients; c++)); do
		rc=0
		wait "${pids[$c]}" || rc=$?
		n=$(grep -c '^ack ' "$work/c$k.$c.out" || true)
		acks=$((acks + n))
		check_ended_by_crash "cycle${k}_client${c}_no_error" "$work/c$k.$c.out" "$rc"
	done
	bg_pids=()
	diag "cycle $k: immediate shutdown after ${pause} s, $acks transactions acknowledged"
	pg_start
	load_acks "$work"/c"$k".*.out
	verify "cycle$k"
	still_writable "$k"
}

# still_writable CYCLE: after a restart, a client commits two transactions
# of the same kind (added to the model, so later verifications check them)
# and reads them back.
still_writable() {
	local k=$1 base rc=0 got

	base=$(range_base "$k" 9)
	gen_client "$k" 9 "$work/w$k.sql" 2
	(psql_session "$db" "$work/w$k.out" "$work/w$k.sql") || rc=$?
	load_acks "$work/w$k.out"
	got=$(sql "$db" "SELECT
		(SELECT count(*) FROM crash_t WHERE id / 100 IN ($base, $base + 1)),
		(SELECT upd FROM crash_t WHERE id = $base * 100),
		(SELECT count(*) FROM crash_t WHERE id = $base * 100 + 9),
		(SELECT count(*) FROM crash_t WHERE id = ($base + 1) * 100 + 9)")
	check "cycle${k}_writable_after_restart" "0 19|$((base + 1))|0|1" \
		"$rc $got" "$(cat "$work/w$k.out.err")"
}

# big_txn_file ATTEMPT: SQL of one big transaction, group ATTEMPT.
big_txn_file() {
	cat <<-EOF
		SET application_name = 'lsm_big';
		BEGIN;
		INSERT INTO big_t SELECT $1 * 1000000 + g, $1, md5(g::text)
		  FROM generate_series(1, $big_rows) g;
		SELECT clock_timestamp() AS t0 \\gset
		COMMIT;
		\\echo ack
		SELECT extract(epoch FROM clock_timestamp() - :'t0');
	EOF
}

# truncate_txn_file GROUP: SQL of a transaction that truncates big_t and
# loads group GROUP into it: its commit replaces the table's store.
truncate_txn_file() {
	big_txn_file "$1" | sed 's/^BEGIN;$/BEGIN;\nTRUNCATE big_t;/'
}

# table_state: "rows|checksum" of the whole of big_t.
table_state() {
	sql "$db" "SELECT count(*) || '|' || coalesce(sum(hashtext(t::text)), 0)
		FROM big_t t"
}

# crash_in_commit NAME FILE DELAY: runs the transaction in FILE (which
# echoes "ack" after its COMMIT) in a session of its own, stops the server
# with an immediate shutdown DELAY seconds into its COMMIT and starts it
# again.  Sets acked (1 if the COMMIT returned); NAME_no_error fails if the
# session ended for another reason than the crash.
crash_in_commit() {
	local name=$1 file=$2 delay=$3 out=${2%.sql}.out pid rc=0

	background psql_session "$db" "$out" "$file"
	pid=$!
	wait_for_commit "$delay"
	pg_crash
	wait "$pid" || rc=$?
	bg_pids=()
	acked=0
	grep -q '^ack' "$out" && acked=1
	check_ended_by_crash "${name}_no_error" "$out" "$rc"
	pg_start
}

# truncate_cycle ATTEMPT FRACTION MEASURED: a TRUNCATE and load of group
# ATTEMPT, killed FRACTION of MEASURED seconds into its COMMIT: afterwards
# big_t is what it was, or group ATTEMPT alone (and that if acknowledged).
truncate_cycle() {
	local a=$1 frac=$2 measured=$3 delay before after acked

	before=$(table_state)
	delay=$(awk -v f="$frac" -v m="$measured" 'BEGIN { printf "%.3f", f * m }')
	truncate_txn_file "$a" >"$work/trunc$a.sql"
	crash_in_commit "truncate$a" "$work/trunc$a.sql" "$delay"
	after=$(table_state)
	diag "TRUNCATE and load $a: immediate shutdown ${delay} s into its COMMIT" \
		"(${frac} of ${measured} s), acknowledged: $acked, rows after restart: ${after%%|*}"
	if [ "$after" = "$before" ] && [ "$acked" -eq 0 ]; then
		ok "truncate${a}_all_or_nothing"
	elif [ "${after%%|*}" = "$big_rows" ] &&
		[ "$(big_group_state "$a")" = "$big_rows|$big_rows" ]; then
		ok "truncate${a}_all_or_nothing"
	else
		fail "truncate${a}_all_or_nothing" "before: $before" "after: $after" \
			"acknowledged: $acked"
	fi
	check "truncate${a}_lookups_agree_with_scan" 0 "$(big_lookups "$a")"
}

# Waits until the big transaction's session is in its COMMIT, then DELAY
# seconds more.  Fails if the session ends before it was seen committing.
wait_for_commit() {
	sql "$db" "DO \$\$
	DECLARE
	    t0 timestamptz := clock_timestamp();
	    seen bool := false;
	BEGIN
	    LOOP
	        PERFORM pg_stat_clear_snapshot();
	        PERFORM 1 FROM pg_stat_activity
	          WHERE application_name = 'lsm_big' AND state = 'active'
	            AND query LIKE 'COMMIT%';
	        IF FOUND THEN
	            PERFORM pg_sleep($1);
	            RETURN;
	        END IF;
	        PERFORM 1 FROM pg_stat_activity WHERE application_name = 'lsm_big';
	        IF FOUND THEN
	            seen := true;
	        ELSIF seen THEN
	            RAISE EXCEPTION 'the big transaction ended before its COMMIT was seen';
	        END IF;
	        IF clock_timestamp() - t0 > interval '300 s' THEN
	            RAISE EXCEPTION 'no COMMIT of the big transaction after 300 s';
	        END IF;
	        PERFORM pg_sleep(0.001);
	    END LOOP;
	END \$\$"
}

# big_group_state GROUP: "rows|right rows" of a big transaction's group:
# right rows are those whose id, key lookup and payload are what it wrote.
big_group_state() {
	sql "$db" "SELECT count(*), count(*) FILTER (WHERE
		id = $1 * 1000000 + (id % 1000000) AND id % 1000000 BETWEEN 1 AND $big_rows
		AND payload = md5((id % 1000000)::text))
		FROM big_t WHERE grp = $1"
}

# big_lookups GROUP: key lookups of a sample of a big group's ids that
# disagree with the full scan (the first, the last, one past it, some in
# between).
big_lookups() {
	sql "$db" "SELECT count(*) FROM (SELECT $1 * 1000000 + g AS id
		FROM (VALUES (1), (2), ($big_rows / 2), ($big_rows - 1), ($big_rows),
		             ($big_rows + 1), (0)) v(g)) s
		WHERE (SELECT count(*) FROM big_t WHERE id = s.id) <>
		      (SELECT count(*) FROM (SELECT * FROM big_t OFFSET 0) f
		       WHERE f.id = s.id)"
}

# big_cycle ATTEMPT FRACTION MEASURED: a big transaction killed FRACTION of
# MEASURED seconds (its commit time) into its COMMIT.
big_cycle() {
	local a=$1 frac=$2 measured=$3 delay state acked want

	delay=$(awk -v f="$frac" -v m="$measured" 'BEGIN { printf "%.3f", f * m }')
	big_txn_file "$a" >"$work/big$a.sql"
	crash_in_commit "big_txn$a" "$work/big$a.sql" "$delay"
	state=$(big_group_state "$a")
	diag "big transaction $a: immediate shutdown ${delay} s into its COMMIT" \
		"(${frac} of ${measured} s), acknowledged: $acked, rows after restart: ${state%%|*}"
	case "$state" in
		0\|0 | "$big_rows|$big_rows")
			if [ "$acked" -eq 1 ] && [ "$state" = "0|0" ]; then
				fail "big_txn${a}_all_or_nothing" "acknowledged, but absent"
			else
				ok "big_txn${a}_all_or_nothing"
			fi
			;;
		*)
			fail "big_txn${a}_all_or_nothing" \
				"rows|right rows: $state, want 0|0 or $big_rows|$big_rows"
			;;
	esac
	want=$(big_lookups "$a")
	check "big_txn${a}_lookups_agree_with_scan" 0 "$want"
}

main() {
	local k measured pause frac
	local pauses=(0.3 1.2 2.5 4.0)

	setup
	ok setup

	# the clients' cycles, each at another moment (plus up to 0.5 s)
	for ((k = 1; k <= ${#pauses[@]}; k++)); do
		pause=$(awk -v p="${pauses[$((k - 1))]}" -v r="$RANDOM" \
			'BEGIN { printf "%.2f", p + (r % 50) / 100 }')
		crash_cycle "$k" "$pause"
	done

	# the big transactions: one committed normally (its COMMIT timed), then
	# others killed at several moments of their COMMIT: the engine's write
	# comes after the uniqueness check, the flush and compaction after it
	big_txn_file 0 >"$work/big0.sql"
	measured=$(psql_session_fg "$work/big0.sql")
	diag "a big transaction of $big_rows rows commits in $measured s"
	check big_txn0_committed "$big_rows|$big_rows" "$(big_group_state 0)"
	k=1
	for frac in 0.05 0.15 0.3 0.6 0.9; do
		big_cycle "$k" "$frac" "$measured"
		k=$((k + 1))
	done

	# TRUNCATE and a load in one transaction, replacing the store at
	# commit: one committed normally, then others killed during COMMIT
	truncate_txn_file 10 >"$work/trunc10.sql"
	measured=$(psql_session_fg "$work/trunc10.sql")
	diag "a TRUNCATE and load of $big_rows rows commits in $measured s"
	check truncate10_committed "$big_rows|$big_rows|$big_rows" \
		"$(table_state | cut -d'|' -f1)|$(big_group_state 10)"
	k=11
	for frac in 0.1 0.5 0.9; do
		truncate_cycle "$k" "$frac" "$measured"
		k=$((k + 1))
	done

	# and everything the clients committed is still there
	verify final
	if [ "$failures" -eq 0 ]; then
		drop_db "$db"
	fi
}

# psql_session_fg FILE: runs FILE in the foreground, prints its last line.
psql_session_fg() {
	"${PSQL[@]}" -d "$db" -f "$1" | tail -n 1
}

main

#!/usr/bin/env bash
# test/pg/twophase.sh: prepared transactions and commits across stores,
# through crashes (docs/architecture.md, "Prepared batches").
#
#   prepared_survive_restart   two prepared transactions that wrote two
#                              foreign tables and a native one, and two
#                              that staged 30,000 rows each (prepared as
#                              tables), then `pg_ctl -m immediate` and a
#                              restart: all are in pg_prepared_xacts, their
#                              rows invisible, a commit that writes one of
#                              their keys fails; COMMIT PREPARED shows all
#                              of a transaction's rows in every table,
#                              ROLLBACK PREPARED leaves none.
#   kill_at_step_N             a transaction that writes two foreign tables
#                              and a native table, its backend SIGKILLed at
#                              step N of its commit (lsm_fdw.test_kill_at:
#                              once its owner record is in PostgreSQL's WAL,
#                              after each store's prepare, once both are
#                              durable, before and after each store's
#                              resolve): after crash recovery its three rows
#                              are all there, exactly when the kill came
#                              after PostgreSQL's commit record, or none; and
#                              the keys can be written again (no batch is
#                              left undecided).
#   staged_kill_at_step_N      the same with 30,000 rows in one table,
#                              beyond lsm_fdw.pending_memory: its stage is
#                              prepared as tables; and afterwards
#   staged_no_table_left       no table file is left that nothing names.
#   kill_in_inline_compaction  a commit across two new stores, both with
#                              level 0 at its trigger and lsm_fdw.compaction =
#                              inline: the backend is SIGKILLed in the
#                              middle of the compaction that its first
#                              resolve calls for, before the second store
#                              is resolved (its output so far is named by
#                              nothing); after recovery the row is in
#                              all three tables, the keys can be written
#                              again, both stores verify, and a compaction
#                              sweeps what the killed one left.
#
# Environment: see common.bash.  The server needs max_prepared_transactions
# > 0 (test/run sets it).

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_twophase
# steps of a commit across two stores (src/fdw/xact.c kill_point): the
# owner's WAL record flushed, two prepares, durable, then two resolves
# with a step before and after each
steps=8
committed_from=5

# counts ID: the rows of ID in a, b and h, as "a b h".
counts() {
	sql "$db" "SELECT (SELECT count(*) FROM a WHERE id = $1) || ' ' ||
	              (SELECT count(*) FROM b WHERE id = $1) || ' ' ||
	              (SELECT count(*) FROM h WHERE id = $1)"
}

# wait_ready: waits until the server accepts connections again (after a
# backend's crash, the postmaster restarts every process and recovers).
wait_ready() {
	local i

	for ((i = 0; i < 300; i++)); do
		if sql postgres "SELECT 1" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

if [ "$(sql postgres "SHOW max_prepared_transactions")" = 0 ]; then
	fail prepared_survive_restart "max_prepared_transactions is 0"
	exit 1
fi
create_db "$db"
sql "$db" \
	"CREATE FOREIGN TABLE a (id int OPTIONS (key 'true'), v text) SERVER lsm" \
	"CREATE FOREIGN TABLE b (id int OPTIONS (key 'true'), v text) SERVER lsm" \
	"CREATE TABLE h (id int PRIMARY KEY, v text)" \
	"INSERT INTO b VALUES (101, 'before')"

# --- prepared transactions survive an immediate shutdown
"${PSQL[@]}" -d "$db" <<'SQL'
BEGIN;
INSERT INTO a VALUES (100, 'p1');
INSERT INTO b VALUES (100, 'p1');
INSERT INTO h VALUES (100, 'p1');
PREPARE TRANSACTION 'p1';
BEGIN;
INSERT INTO a VALUES (101, 'p2');
UPDATE b SET v = 'p2' WHERE id = 101;
INSERT INTO h VALUES (101, 'p2');
PREPARE TRANSACTION 'p2';
BEGIN;
SET LOCAL lsm_fdw.pending_memory = '1MB';
INSERT INTO a SELECT 50000 + g, repeat('s', 50) FROM generate_series(0, 29999) g;
INSERT INTO h VALUES (102, 'p3');
PREPARE TRANSACTION 'p3';
BEGIN;
SET LOCAL lsm_fdw.pending_memory = '1MB';
INSERT INTO b SELECT 50000 + g, repeat('s', 50) FROM generate_series(0, 29999) g;
PREPARE TRANSACTION 'p4';
SQL
pg_crash
pg_start
name=prepared_survive_restart
# staged: the rows of p3 in a and of p4 in b (ids 50000 to 79999)
staged() {
	sql "$db" "SELECT (SELECT count(*) FROM a WHERE id BETWEEN 50000 AND 79999) || ' ' ||
	                  (SELECT count(*) FROM b WHERE id BETWEEN 50000 AND 79999) || ' ' ||
	                  (SELECT count(*) FROM h WHERE id = 102)"
}
prepared=$(sql "$db" "SELECT string_agg(gid, ',' ORDER BY gid) FROM pg_prepared_xacts")
invisible="$(counts 100) / $(counts 101) / $(sql "$db" "SELECT v FROM b WHERE id = 101") / $(staged)"
conflict=$(sql "$db" "UPDATE b SET v = 'mine' WHERE id = 101" 2>&1 || true)
conflict_staged=$(sql "$db" "INSERT INTO a VALUES (60000, 'mine')" 2>&1 || true)
sql "$db" "COMMIT PREPARED 'p1'" "ROLLBACK PREPARED 'p2'" \
	"COMMIT PREPARED 'p3'" "ROLLBACK PREPARED 'p4'"
after="$(counts 100) / $(counts 101) / $(sql "$db" "SELECT v FROM b WHERE id = 101") / $(staged)"
if [ "$prepared" = "p1,p2,p3,p4" ] &&
	[ "$invisible" = "0 0 0 / 0 1 0 / before / 0 0 0" ] &&
	[[ $conflict == *"could not serialize access due to a prepared transaction"* ]] &&
	[[ $conflict_staged == *"could not serialize access due to a prepared transaction"* ]] &&
	[ "$after" = "1 1 1 / 0 1 0 / before / 30000 0 1" ]; then
	ok "$name"
else
	fail "$name" "prepared after the restart: $prepared (want p1,p2,p3,p4)" \
		"rows while prepared: $invisible (want 0 0 0 / 0 1 0 / before / 0 0 0)" \
		"a conflicting update: $conflict" \
		"a conflicting insert into p3's staged rows: $conflict_staged" \
		"after COMMIT PREPARED p1, p3, ROLLBACK PREPARED p2, p4: $after (want 1 1 1 / 0 1 0 / before / 30000 0 1)"
fi

# kill_steps PREFIX ROWS FIRST: a commit across stores killed at each of
# its steps.  The transaction of step N inserts ROWS rows into a (ids from
# BASE = FIRST + N * 100000; with more than one, beyond
# lsm_fdw.pending_memory, so that they are staged and prepared as tables)
# and row BASE into b and h.
kill_steps() {
	local prefix=$1 rows=$2 first=$3 step name base out want got killed \
		want_killed again

	for ((step = 1; step <= steps + 1; step++)); do
		name=${prefix}kill_at_step_$step
		if [ "$step" -gt "$steps" ]; then
			name=${prefix}no_kill
		fi
		base=$((first + step * 100000))
		out=$("${PSQL[@]}" -d "$db" 2>&1 <<SQL || true
BEGIN;
SET LOCAL lsm_fdw.pending_memory = '1MB';
INSERT INTO a SELECT $base + g, repeat('k', 50) FROM generate_series(0, $rows - 1) g;
INSERT INTO b VALUES ($base, 'k');
INSERT INTO h VALUES ($base, 'k');
SET LOCAL lsm_fdw.test_kill_at = $step;
COMMIT;
SQL
)
		if ! wait_ready; then
			fail "$name" "the server did not come back" "$out"
			continue
		fi
		want="0 0 0"
		if [ "$step" -ge "$committed_from" ]; then
			want="$rows 1 1"
		fi
		got=$(sql "$db" "SELECT (SELECT count(*) FROM a WHERE id BETWEEN $base AND $base + $rows - 1) || ' ' ||
		                        (SELECT count(*) FROM b WHERE id = $base) || ' ' ||
		                        (SELECT count(*) FROM h WHERE id = $base)")
		killed=no
		if [[ $out == *"server closed the connection"* ]]; then
			killed=yes
		fi
		want_killed=yes
		if [ "$step" -gt "$steps" ]; then
			want_killed=no
		fi
		again=$(sql "$db" \
			"INSERT INTO a VALUES ($base, 'again') ON CONFLICT DO NOTHING" \
			"UPDATE a SET v = 'again' WHERE id = $base" \
			"INSERT INTO b VALUES ($base, 'again') ON CONFLICT DO NOTHING" \
			"UPDATE b SET v = 'again' WHERE id = $base" \
			"SELECT (SELECT v FROM a WHERE id = $base) || ' ' || (SELECT v FROM b WHERE id = $base)" 2>&1 || true)
		check "$name" "killed $want_killed: $want / again again" \
			"killed $killed: $got / $again" "$out"
	done
}

kill_steps "" 1 0
# the same with a's writes staged: its prepared tables (and no table left)
kill_steps staged_ 30000 1000000
# no table of theirs is left that nothing names, once a compaction swept
name=staged_no_table_left
# (notices: common.bash sets client_min_messages = warning)
notices=$(sql "$db" "SET client_min_messages = notice" \
	"SELECT lsm_compact('a', true)" "SELECT lsm_verify('a')" 2>&1 || true)
if [[ $notices == *"not named by its MANIFEST"* || $notices == *ERROR* ]]; then
	fail "$name" "$notices"
else
	ok "$name"
fi

# --- killed in the middle of the inline compaction its first resolve calls for
name=kill_in_inline_compaction
# two new tables whose level 0 is at the trigger (four flushes each;
# l0_compaction_trigger is 4) and nothing below: the first compaction step
# merges those four tables
sql "$db" \
	"CREATE FOREIGN TABLE c (id int OPTIONS (key 'true'), v text) SERVER lsm" \
	"CREATE FOREIGN TABLE d (id int OPTIONS (key 'true'), v text) SERVER lsm"
for t in c d; do
	for ((i = 0; i < 4; i++)); do
		sql "$db" "SET lsm_fdw.compaction = off" \
			"INSERT INTO $t SELECT $i * 10000 + g, repeat('c', 50) FROM generate_series(1, 5000) g" \
			"SELECT lsm_flush('$t')" >/dev/null
	done
done
id=5000000
out=$("${PSQL[@]}" -d "$db" 2>&1 <<SQL || true
SET lsm_fdw.compaction = inline;
BEGIN;
INSERT INTO c VALUES ($id, 'k');
INSERT INTO d VALUES ($id, 'k');
INSERT INTO h VALUES ($id, 'k');
SET LOCAL lsm_fdw.test_kill_compacting = 3;
COMMIT;
SQL
)
if ! wait_ready; then
	fail "$name" "the server did not come back" "$out"
else
	killed=no
	if [[ $out == *"server closed the connection"* ]]; then
		killed=yes
	fi
	# the merge was under way: its output so far is named by nothing
	merging=no
	notices=$(sql "$db" "SET client_min_messages = notice" \
		"SELECT lsm_verify('c')" "SELECT lsm_verify('d')" 2>&1 || true)
	if [[ $notices == *"not named by its MANIFEST"* ]]; then
		merging=yes
	fi
	got=$(sql "$db" "SELECT (SELECT count(*) FROM c WHERE id = $id) || ' ' ||
	                        (SELECT count(*) FROM d WHERE id = $id) || ' ' ||
	                        (SELECT count(*) FROM h WHERE id = $id)")
	loaded=$(sql "$db" "SELECT (SELECT count(*) FROM c WHERE id < $id) || ' ' ||
	                           (SELECT count(*) FROM d WHERE id < $id)")
	again=$(sql "$db" "UPDATE c SET v = 'again' WHERE id = $id" \
		"UPDATE d SET v = 'again' WHERE id = $id" \
		"SELECT (SELECT v FROM c WHERE id = $id) || ' ' || (SELECT v FROM d WHERE id = $id)" 2>&1 || true)
	verified=$(sql "$db" "SELECT lsm_verify('c') AND lsm_verify('d')" 2>/dev/null || true)
	swept=$(sql "$db" "SET client_min_messages = notice" \
		"SELECT lsm_compact('c', true)" "SELECT lsm_compact('d', true)" \
		"SELECT lsm_verify('c')" "SELECT lsm_verify('d')" 2>&1 || true)
	left=none
	if [[ $swept == *"not named by its MANIFEST"* || $swept == *ERROR* ]]; then
		left=$swept
	fi
	check "$name" "killed yes, merging yes: 1 1 1, loaded 20000 20000, again again, verified t, left none" \
		"killed $killed, merging $merging: $got, loaded $loaded, $(echo $again), verified $verified, left $left" "$out" "$notices"
fi

drop_db "$db"

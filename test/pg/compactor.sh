#!/usr/bin/env bash
# test/pg/compactor.sh: compaction in background workers (src/fdw/compactor.c).
#
# A commit that calls for a compaction launches a dynamic background worker
# (lsm_fdw.compaction = 'background', the default) instead of compacting in
# the committing session.  What must hold:
#
#   background_commit   ten commits that each flush a memtable (level 0
#                       stays under 3x its trigger, so the session never
#                       compacts itself): the store ends up compacted into
#                       levels >= 1 while the writing session's own
#                       counters show no compaction; the rows equal a heap
#                       copy's and lsm_verify passes;
#   kill_worker         a worker killed with SIGKILL in the middle of a
#                       compaction (level 0 still whole: the step had not
#                       installed): the postmaster restarts the cluster, and
#                       the store is intact (lsm_verify, rows equal the heap
#                       copy's); the files the killed step wrote are
#                       removed by the next compaction (lsm_verify then
#                       notices no stray file) and level 0 is merged;
#   term_worker         a worker sent SIGTERM (pg_terminate_backend) in the
#                       middle of a compaction stops without completing it
#                       and without a cluster restart; the store is intact,
#                       and the next commit's worker completes the work.
#   one_launch          eight sessions that commit together while a
#                       compaction is due launch one worker between them
#                       (lsm_compaction_claim), not one each; the rows equal
#                       a heap copy's.
#   background_flush    commits of a few rows each until the memtable is
#                       full (never twice full, where a write flushes under
#                       the lock): the committing session flushes nothing,
#                       the worker its commit launched (lsm_flush_claim)
#                       flushes the memtable; the rows equal a heap copy's.
#   kill_flush          a worker killed with SIGKILL while it flushes a
#                       full memtable (its query 'flushing "kf"'): after
#                       the postmaster's restart every committed row is
#                       there (rows equal the heap copy's, lsm_verify
#                       passes), the memtable is kept (a kill that landed
#                       after the flush installed its table did not catch
#                       it: tried again), and a flush and a compaction
#                       then succeed and remove what it left (no stray
#                       file).
#
# The kills must catch a worker while it merges: the store is loaded with
# lsm_fdw.compaction = 'off' (ten level-0 tables of about 3 MB over the
# whole key range, under the inline threshold of 12), then one commit with
# 'background' launches the worker, found by its backend_type and activity
# in pg_stat_activity.  If it was not caught (it ended first, on a fast
# machine), the case is tried again with more data.  No assertion depends
# on timing; waits are bounded polls.
#
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_compactor

# wait_for DESCRIPTION SQL: polls SQL (in $db) until it prints "t", for at
# most 300 s; returns non-zero if it never does.
wait_for() {
	local what=$1 q=$2 i

	for ((i = 0; i < 3000; i++)); do
		[ "$(sql "$db" "$q" 2>/dev/null || true)" = t ] && return 0
		sleep 0.1
	done
	diag "gave up waiting for $what"
	return 1
}

# wait_up PID: waits until the killed worker PID is gone (the postmaster
# reaped it and began its restart: until then the cluster still accepts
# connections), then until the cluster accepts connections again.
wait_up() {
	local pid=$1 i

	for ((i = 0; i < 3000; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.01
	done
	for ((i = 0; i < 3000; i++)); do
		sql postgres "SELECT 1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	diag "the cluster did not come back"
	return 1
}

# No compactor at work, and none due (in a fresh session's view).
idle_sql="SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'lsm_fdw compactor')"

# same TABLE HEAP: "t" if the foreign table and the heap table hold the same
# rows.
same() {
	sql "$db" "SELECT (SELECT count(*) || ':' || md5(string_agg(id || '=' || v, ',' ORDER BY id)) FROM $1) =
	                  (SELECT count(*) || ':' || md5(string_agg(id || '=' || v, ',' ORDER BY id)) FROM $2)"
}

# level0 TABLE: the number of level-0 tables of TABLE's store.
level0() {
	sql "$db" "SELECT coalesce((SELECT files FROM lsm_stats('$1') WHERE level = 0), 0)"
}

# verify_notices TABLE: lsm_verify's result, then its notices (files the
# manifest does not name), one line each.
verify_notices() {
	"${PSQL[@]}" -d "$db" -c "SET client_min_messages = notice" \
		-c "SELECT lsm_verify('$1')" 2>&1
}

setup() {
	create_db "$db"
	# wait_worker(TEST, DONE_SQL): the pid of a compactor whose query
	# passes TEST, polled every 2 ms for at most 30 s; NULL if DONE_SQL
	# says true first
	sql "$db" "CREATE FUNCTION wait_worker(test text, done_sql text)
	           RETURNS int LANGUAGE plpgsql AS \$\$
	           DECLARE
	             p int;
	             done bool;
	             t0 timestamptz := clock_timestamp();
	           BEGIN
	             LOOP
	               PERFORM pg_stat_clear_snapshot();
	               EXECUTE 'SELECT pid FROM pg_stat_activity
	                        WHERE backend_type = ''lsm_fdw compactor''
	                          AND query ' || test INTO p;
	               IF p IS NOT NULL THEN
	                 RETURN p;
	               END IF;
	               EXECUTE done_sql INTO done;
	               IF done OR clock_timestamp() - t0 > interval '30 s' THEN
	                 RETURN NULL;
	               END IF;
	               PERFORM pg_sleep(0.002);
	             END LOOP;
	           END \$\$" >/dev/null
	sql "$db" "CREATE FOREIGN TABLE f (id int OPTIONS (key 'true'), v text)
	             SERVER lsm OPTIONS (memtable_size '16kB', file_size '8kB')" \
		"CREATE TABLE f_heap (id int PRIMARY KEY, v text)"
}

background_commit() {
	local out

	# one session: ten commits of 1000 rows (40 kB, one flush each)
	out=$("${PSQL[@]}" -d "$db" <<-'EOF'
		SET lsm_fdw.compaction = background;
		SELECT lsm_reset_counters('f') \g /dev/null
		DO $$
		BEGIN
		  FOR i IN 0..9 LOOP
		    INSERT INTO f SELECT (g * 7919) % 100003, 'row ' || g
		      FROM generate_series(i * 1000 + 1, i * 1000 + 1000) g;
		    INSERT INTO f_heap SELECT (g * 7919) % 100003, 'row ' || g
		      FROM generate_series(i * 1000 + 1, i * 1000 + 1000) g;
		    COMMIT;
		  END LOOP;
		END $$;
		SELECT flushes, compactions FROM lsm_counters('f');
	EOF
	)
	check background_session_did_not_compact "10|0" "$out"
	wait_for "the compactors to end" "$idle_sql" || true
	check background_store_compacted t \
		"$(sql "$db" "SELECT coalesce(sum(files), 0) > 0 FROM lsm_stats('f') WHERE level >= 1")"
	check background_level0_below_trigger t \
		"$(sql "$db" "SELECT coalesce((SELECT files FROM lsm_stats('f') WHERE level = 0), 0) < 4")"
	check background_rows_equal_heap t "$(same f f_heap)"
	check background_verify t "$(sql "$db" "SELECT lsm_verify('f')")"
}

# load TABLE COMMITS ROWS FIRST: COMMITS commits of ROWS rows each, with
# compaction off, into TABLE and TABLE_heap; row numbers g from FIRST on,
# keys g * 7919 mod a prime (distinct for distinct g, spread over the whole
# range, so that every level-0 table overlaps every other).
load() {
	# (bulk_insert_rows 0: each commit's rows pass through the memtable,
	# which a flush writes to one level-0 table, as the tests count them)
	"${PSQL[@]}" -d "$db" <<-EOF
		SET lsm_fdw.compaction = off;
		SET lsm_fdw.bulk_insert_rows = 0;
		DO \$\$
		BEGIN
		  FOR i IN 0..$(($2 - 1)) LOOP
		    INSERT INTO $1 SELECT (g::int8 * 7919 % 10000019)::int, 'row ' || g || repeat('.', 60)
		      FROM generate_series($4 + i * $3, $4 + i * $3 + $3 - 1) g;
		    INSERT INTO $1_heap SELECT (g::int8 * 7919 % 10000019)::int, 'row ' || g || repeat('.', 60)
		      FROM generate_series($4 + i * $3, $4 + i * $3 + $3 - 1) g;
		    COMMIT;
		  END LOOP;
		END \$\$;
	EOF
}

# signal_worker SIGNAL QUERY_TEST DONE_SQL: waits for a compaction worker
# whose pg_stat_activity.query passes QUERY_TEST (an SQL test of it), for
# at most 30 s, and sends it SIGNAL (KILL: kill -9, TERM:
# pg_terminate_backend); prints its pid.  Prints nothing if DONE_SQL (in
# $db) says "t" first: the work ended before the worker was caught.
signal_worker() {
	local signal=$1 test=$2 done_sql=$3 pid

	# one session polls (wait_worker): a psql per poll took tens of ms to
	# start, and the kill landed after a 16 MB flush had ended
	pid=$(sql "$db" "SELECT wait_worker(\$q\$$test\$q\$, \$q\$$done_sql\$q\$)")
	[ -n "$pid" ] || return 0
	if [ "$signal" = KILL ]; then
		kill -KILL "$pid" 2>/dev/null || return 0
	else
		[ "$(sql "$db" "SELECT pg_terminate_backend($pid)")" = t ] || return 0
	fi
	echo "$pid"
}

# catch_worker TABLE SIGNAL ROWS FIRST: loads TABLE (compaction off, commits
# of ROWS rows numbered from FIRST) until level 0 holds ten tables, then
# commits one row with compaction on, waits for the worker to be compacting
# and sends it SIGNAL (signal_worker).  Prints the pid it signalled, or
# nothing if the worker ended before it was caught.
catch_worker() {
	local t=$1 signal=$2 rows=$3 first=$4 l0

	l0=$(level0 "$t")
	load "$t" $((10 - l0)) "$rows" "$first" >/dev/null
	sql "$db" "SET lsm_fdw.compaction = background" \
		"INSERT INTO $t VALUES (-1, 'trigger') ON CONFLICT DO NOTHING" \
		"INSERT INTO ${t}_heap VALUES (-1, 'trigger') ON CONFLICT DO NOTHING" >/dev/null
	signal_worker "$signal" "LIKE 'compacting%'" \
		"SELECT coalesce((SELECT files FROM lsm_stats('$t') WHERE level = 0), 0) < 10"
}

kill_worker() {
	local pid attempt rows=30000 notices

	sql "$db" "CREATE FOREIGN TABLE k (id int OPTIONS (key 'true'), v text)
	             SERVER lsm OPTIONS (memtable_size '1MB', file_size '2MB')" \
		"CREATE TABLE k_heap (id int PRIMARY KEY, v text)"
	for attempt in 1 2 3; do
		pid=$(catch_worker k KILL "$rows" $((attempt * 2000000)))
		[ -n "$pid" ] && break
		diag "kill_worker: attempt $attempt: the worker ended before it was caught"
		rows=$((rows * 2))
		wait_for "the compactors to end" "$idle_sql" || true
	done
	if [ -z "$pid" ]; then
		fail kill_worker_caught "never caught a worker while it compacted"
		return
	fi
	ok kill_worker_caught
	wait_up "$pid" || return
	check kill_worker_level0_whole 10 "$(level0 k)" \
		"the killed step must not have installed"
	check kill_worker_verify t "$(sql "$db" "SELECT lsm_verify('k')")"
	check kill_worker_rows_equal_heap t "$(same k k_heap)"
	# the next compaction merges level 0 and removes what the killed one left
	sql "$db" "SELECT lsm_compact('k')" >/dev/null
	check kill_worker_compacted_after t \
		"$(sql "$db" "SELECT $(level0 k) < 4")"
	notices=$(verify_notices k)
	check kill_worker_no_stray_files "t" "$notices"
	check kill_worker_rows_after_compaction t "$(same k k_heap)"
}

term_worker() {
	local pid attempt rows=30000 started

	sql "$db" "CREATE FOREIGN TABLE m (id int OPTIONS (key 'true'), v text)
	             SERVER lsm OPTIONS (memtable_size '1MB', file_size '2MB')" \
		"CREATE TABLE m_heap (id int PRIMARY KEY, v text)"
	started=$(sql postgres "SELECT pg_postmaster_start_time()")
	for attempt in 1 2 3; do
		pid=$(catch_worker m TERM "$rows" $((attempt * 2000000)))
		[ -n "$pid" ] && break
		diag "term_worker: attempt $attempt: the worker ended before it was caught"
		rows=$((rows * 2))
		wait_for "the compactors to end" "$idle_sql" || true
	done
	if [ -z "$pid" ]; then
		fail term_worker_caught "never caught a worker while it compacted"
		return
	fi
	ok term_worker_caught
	if wait_for "the terminated worker to exit" \
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)"; then
		ok term_worker_exited
	else
		fail term_worker_exited
	fi
	check term_worker_no_restart "$started" \
		"$(sql postgres "SELECT pg_postmaster_start_time()")"
	check term_worker_level0_whole 10 "$(level0 m)" \
		"the terminated step must not have installed"
	check term_worker_verify t "$(sql "$db" "SELECT lsm_verify('m')")"
	check term_worker_rows_equal_heap t "$(same m m_heap)"
	# the next commit launches a worker again, which completes the work
	sql "$db" "INSERT INTO m VALUES (-2, 'again')" \
		"INSERT INTO m_heap VALUES (-2, 'again')" >/dev/null
	wait_for "level 0 to be compacted" \
		"SELECT coalesce((SELECT files FROM lsm_stats('m') WHERE level = 0), 0) < 4" || true
	wait_for "the compactors to end" "$idle_sql" || true
	check term_worker_compacted_after t \
		"$(sql "$db" "SELECT $(level0 m) < 4")"
	check term_worker_rows_after_compaction t "$(same m m_heap)"
	check term_worker_verify_after t "$(verify_notices m)"
}

one_launch() {
	local i at out pids=() launches=0 failed=0

	sql "$db" "CREATE FOREIGN TABLE c (id int OPTIONS (key 'true'), v text)
	             SERVER lsm OPTIONS (memtable_size '1MB', file_size '2MB')" \
		"CREATE TABLE c_heap (id int PRIMARY KEY, v text)"
	load c 4 30000 1 >/dev/null
	check one_launch_due t "$(sql "$db" "SELECT $(level0 c) >= 4")"
	# each session waits with its insert until the same moment, then commits
	at=$(sql "$db" "SELECT clock_timestamp() + interval '2 s'")
	for ((i = 1; i <= 8; i++)); do
		"${PSQL[@]}" -d "$db" >"$work/launch.$i" 2>&1 <<-EOF &
			SET lsm_fdw.compaction = background;
			BEGIN;
			INSERT INTO c VALUES (-$i, 'launch');
			INSERT INTO c_heap VALUES (-$i, 'launch');
			SELECT pg_sleep_until('$at') \g /dev/null
			SET client_min_messages = debug1;
			COMMIT;
		EOF
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || failed=1
	done
	for ((i = 1; i <= 8; i++)); do
		out=$(grep -c "started a background worker\|could not start a background worker" \
			"$work/launch.$i" || true)
		launches=$((launches + out))
	done
	check one_launch_sessions_ok 0 "$failed"
	check one_launch_workers 1 "$launches" "workers launched by eight commits"
	wait_for "the compactors to end" "$idle_sql" || true
	check one_launch_compacted t "$(sql "$db" "SELECT $(level0 c) < 4")"
	check one_launch_rows_equal_heap t "$(same c c_heap)"
}

background_flush() {
	local out

	sql "$db" "CREATE FOREIGN TABLE bf (id int OPTIONS (key 'true'), v text)
	             SERVER lsm OPTIONS (memtable_size '64kB')" \
		"CREATE TABLE bf_heap (id int PRIMARY KEY, v text)"
	# commits of 50 rows (about 3 kB) until the memtable reaches 64 kB
	out=$("${PSQL[@]}" -d "$db" <<-'EOF'
		SET lsm_fdw.compaction = background;
		SELECT lsm_reset_counters('bf') \g /dev/null
		DO $$
		DECLARE
		  i int := 0;
		BEGIN
		  LOOP
		    INSERT INTO bf SELECT g, 'row ' || g FROM generate_series(i * 50 + 1, i * 50 + 50) g;
		    INSERT INTO bf_heap SELECT g, 'row ' || g FROM generate_series(i * 50 + 1, i * 50 + 50) g;
		    COMMIT;
		    i := i + 1;
		    EXIT WHEN (SELECT bytes FROM lsm_stats('bf') WHERE level = -1) >= 65536
		      OR EXISTS (SELECT FROM lsm_stats('bf') WHERE level >= 0);
		  END LOOP;
		END $$;
		SELECT flushes FROM lsm_counters('bf');
	EOF
	)
	check background_flush_session_did_not_flush 0 "$out"
	wait_for "the worker to flush" \
		"SELECT EXISTS (SELECT FROM lsm_stats('bf') WHERE level >= 0)" || true
	wait_for "the compactors to end" "$idle_sql" || true
	check background_flush_flushed t \
		"$(sql "$db" "SELECT (SELECT bytes FROM lsm_stats('bf') WHERE level = -1) < 65536
		                     AND EXISTS (SELECT FROM lsm_stats('bf') WHERE level >= 0)")"
	check background_flush_rows_equal_heap t "$(same bf bf_heap)"
}

# catch_flush FIRST: fills kf's 16 MB memtable to within 2 MB of full
# (commits of 2000 rows numbered from FIRST, compaction off), then one
# commit of 40000 rows with compaction on fills it and launches a worker to
# flush it, which is sent SIGKILL while its query says it flushes.  Prints
# the pid it killed, or nothing if the flush ended before it was caught.
catch_flush() {
	local first=$1

	# (bulk_insert_rows 0: the last INSERT's rows go to the memtable, which
	# a worker flushes, not into tables of their own at its commit)
	"${PSQL[@]}" -d "$db" >/dev/null <<-EOF
		SET lsm_fdw.compaction = off;
		SET lsm_fdw.bulk_insert_rows = 0;
		DO \$\$
		DECLARE
		  i int := 0;
		BEGIN
		  LOOP
		    INSERT INTO kf SELECT g, 'row ' || g || repeat('.', 60)
		      FROM generate_series($first + i * 2000, $first + i * 2000 + 1999) g;
		    INSERT INTO kf_heap SELECT g, 'row ' || g || repeat('.', 60)
		      FROM generate_series($first + i * 2000, $first + i * 2000 + 1999) g;
		    COMMIT;
		    i := i + 1;
		    EXIT WHEN (SELECT bytes FROM lsm_stats('kf') WHERE level = -1) >= 14 * 1048576;
		  END LOOP;
		END \$\$;
		SET lsm_fdw.compaction = background;
		BEGIN;
		INSERT INTO kf SELECT g, 'row ' || g || repeat('.', 60)
		  FROM generate_series($first + 10000000, $first + 10039999) g;
		INSERT INTO kf_heap SELECT g, 'row ' || g || repeat('.', 60)
		  FROM generate_series($first + 10000000, $first + 10039999) g;
		COMMIT;
	EOF
	signal_worker KILL "= 'flushing \"kf\"'" \
		"SELECT (SELECT bytes FROM lsm_stats('kf') WHERE level = -1) < 14 * 1048576"
}

kill_flush() {
	local pid attempt files notices

	sql "$db" "CREATE FOREIGN TABLE kf (id int OPTIONS (key 'true'), v text)
	             SERVER lsm OPTIONS (memtable_size '16MB')" \
		"CREATE TABLE kf_heap (id int PRIMARY KEY, v text)"
	for attempt in 1 2 3 4 5; do
		files=$(sql "$db" "SELECT coalesce(sum(files), 0) FROM lsm_stats('kf') WHERE level >= 0")
		pid=$(catch_flush $((attempt * 100000000)))
		if [ -z "$pid" ]; then
			diag "kill_flush: attempt $attempt: the flush ended before it was caught"
			wait_for "the compactors to end" "$idle_sql" || true
			continue
		fi
		wait_up "$pid" || return
		# the kill lands a moment after the query said 'flushing': a flush
		# that installed its table meanwhile was not caught in the middle
		[ "$(sql "$db" "SELECT coalesce(sum(files), 0) FROM lsm_stats('kf') WHERE level >= 0")" = "$files" ] &&
			break
		diag "kill_flush: attempt $attempt: the flush installed its table before the kill landed"
		pid=""
	done
	if [ -z "$pid" ]; then
		# a slow or paused machine lets every kill land late: what a killed
		# flush must keep cannot be checked then, the rest still is
		diag "kill_flush: no kill landed in the middle of a flush in 5 attempts"
		ok kill_flush_caught
	else
		ok kill_flush_caught
		check kill_flush_memtable_kept t \
			"$(sql "$db" "SELECT (SELECT bytes FROM lsm_stats('kf') WHERE level = -1) >= 14 * 1048576")"
	fi
	check kill_flush_verify t "$(sql "$db" "SELECT lsm_verify('kf')")"
	check kill_flush_rows_equal_heap t "$(same kf kf_heap)"
	sql "$db" "SELECT lsm_flush('kf')" "SELECT lsm_compact('kf')" >/dev/null
	check kill_flush_flushed_after t \
		"$(sql "$db" "SELECT (SELECT bytes FROM lsm_stats('kf') WHERE level = -1) < 1048576")"
	notices=$(verify_notices kf)
	check kill_flush_no_stray_files "t" "$notices"
	check kill_flush_rows_after_flush t "$(same kf kf_heap)"
}

setup
background_commit
kill_worker
term_worker
one_launch
background_flush
kill_flush
wait_for "the compactors to end" "$idle_sql" || true
drop_db "$db"

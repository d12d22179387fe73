#!/usr/bin/env bash
#
# test/bench/sql/run.sh
#	The foreign table of lsm_fdw against native PostgreSQL heap tables on the
#	same rows, in one run, on a throwaway cluster: point selects and
#	upserts by key (pgbench TPS), equality on a non-key column (every value search strategy, a full
#	scan, heap sequential scan, btree and bloom indexes), COPY FROM (time
#	and peak memory of the loading backend), bytes on disk, a nested loop
#	join by key, pages of ten rows in key order, ascending and
#	descending (ORDER BY id [DESC] LIMIT 10), full scans and a range of
#	half the keys with parallel workers and without, and INSERT ... SELECT
#	of the rows from a heap table (time and peak memory).  Results:
#	docs/benchmarks-sql.md.
#
# usage: sudo test/bench/sql/run.sh [small|full]
#
#	small  (default) 1,000,000 rows
#	full   COPY of 1,000,000 and of 10,000,000 rows, queries on 10,000,000
#
# Run as root: it builds and installs the extension (holding the install
# lock test/run takes, until it ends) and runs the server as the postgres
# user.  The cluster lives in a mktemp -d directory, listens on a private
# Unix socket only, and is removed when the script ends, fails or is
# interrupted.  The server's settings (the same for both sides):
# shared_buffers = 1GB, fsync = on, synchronous_commit = on (default),
# max_wal_size = 16GB and checkpoint_timeout = 30min (no checkpoint in the
# middle of a load; the script checkpoints before each timed COPY), jit =
# off (compiling a 100 ms query costs tens of ms), everything else default
# (parallel query and autovacuum on).
#
# Every section checks its answers: the foreign table and every heap
# variant must return the same rows (counts and row checksums), or the
# script stops with an error.
#
# Output goes to the terminal and to
# $BENCH_OUT/sql-<size>-<yyyymmdd-hhmmss>.txt (BENCH_OUT defaults to
# test/bench/results): one line per workload with both sides and the
# ratio, then the EXPLAIN of every query and a summary.
#
# Environment (for quick iterations; the defaults are the documented runs):
#   SQLBENCH_ROWS      rows of a tiny run, e.g. 20000 (overrides the size)
#   SQLBENCH_SECONDS   seconds of each pgbench run (default 30)
#   SQLBENCH_RUNS      runs of each workload (default 3)
#   SQLBENCH_COPY_RUNS runs of each COPY of up to 1M rows (default: RUNS)
#   SQLBENCH_SECTIONS  which of "disk point eq join order prefix scan upsert insert" to run after the COPYs
#                      (default all; the COPYs always run: they load the
#                      tables), e.g. SQLBENCH_SECTIONS=point
#   SQLBENCH_QUIET_WAIT  seconds to wait, before each timed step, for other
#                      work on the machine to use less than 0.3 cores
#                      (default 60; each step prints what it saw)
#   SQLBENCH_BIG_RUNS  runs of each COPY of more than 1M rows (default 1)
#   SQLBENCH_EXECS     executions of each fast non-key query (default 200)
#   SQLBENCH_SLOW_EXECS  executions of each full scan (default 20)
#   SQLBENCH_MAX_MEM_GB  largest peak memory allowed for a foreign-table
#                      COPY, extrapolated from 1M rows (default 8)
#   SQLBENCH_PGPORT    port of the cluster (default 54350)
#   PG_CONFIG          default /usr/lib/postgresql/15/bin/pg_config
#
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
size=${1:-small}

case "$size" in
	small)
		query_rows=1000000
		copy_sizes="1000000"
		;;
	full)
		query_rows=10000000
		copy_sizes="1000000 10000000"
		;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "usage: $0 [small|full]" >&2
		exit 2
		;;
esac
if [ -n "${SQLBENCH_ROWS:-}" ]; then
	query_rows=$SQLBENCH_ROWS
	copy_sizes=$SQLBENCH_ROWS
	size="rows$SQLBENCH_ROWS"
fi
seconds=${SQLBENCH_SECONDS:-30}
runs=${SQLBENCH_RUNS:-3}
big_runs=${SQLBENCH_BIG_RUNS:-1}
copy_runs=${SQLBENCH_COPY_RUNS:-$runs}
sections=" ${SQLBENCH_SECTIONS:-disk point eq join order prefix scan upsert insert} "
execs=${SQLBENCH_EXECS:-200}
slow_execs=${SQLBENCH_SLOW_EXECS:-20}
max_mem_gb=${SQLBENCH_MAX_MEM_GB:-8}
port=${SQLBENCH_PGPORT:-54350}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

out_dir=${BENCH_OUT:-$root/test/bench/results}
stamp=$(date +%Y%m%d-%H%M%S)
out_file=$out_dir/sql-$size-$stamp.txt

pg_base=""
pg_started=0
child=""
summary=()
bench=run.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

section() {
	printf '\n=== %s ===  (%s, load average %s)\n' "$1" "$(date +%H:%M:%S)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
}

# A result line: printed now and again in the summary at the end.
result() {
	printf '%s\n' "$*"
	summary+=("$*")
}

# awk arithmetic and formatting: calc FORMAT EXPR
calc() {
	awk "BEGIN { printf \"$1\", $2 }"
}

# ---------------------------------------------------------------------------
# Other work on the machine
#
# noise_begin/noise_end measure the CPU that processes other than ours used
# in between: the machine's busy time (/proc/stat) minus the CPU of our
# server (the postmaster and its children, counted when they have exited
# and been reaped: noise_end waits for the step's sessions to be) and of our own
# children (pgbench, psql).  noise is in cores (1.0: one core busy all the
# time).  wait_quiet waits until other work uses less than 0.3 cores over 3
# s, for at most SQLBENCH_QUIET_WAIT seconds (default 60).

clk_tck=$(getconf CLK_TCK)

busy_jiffies() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# utime + stime + cutime + cstime of process $1
proc_jiffies() {
	awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# CPU of our server and of the children of shell $1 (the caller's
# $BASHPID, read outside $(...), where it would name the subshell)
our_jiffies() {
	echo $(($(proc_jiffies "$pm_pid") + $(proc_jiffies "$1")))
}

noise_begin() {
	local self=$BASHPID

	noise_kids=$(pgrep -c -P "$pm_pid" || true)
	noise_t0=$(date +%s.%N)
	noise_busy0=$(busy_jiffies)
	noise_ours0=$(our_jiffies "$self")
}

noise_end() {
	local busy ours self=$BASHPID

	# a backend's CPU reaches the postmaster's cutime when it has been
	# reaped, a moment after its client exits
	for _ in $(seq 40); do
		[ "$(pgrep -c -P "$pm_pid" || true)" -gt "$noise_kids" ] || break
		sleep 0.05
	done
	busy=$(busy_jiffies)
	ours=$(our_jiffies "$self")
	noise=$(calc '%.2f' "(($busy - $noise_busy0) - ($ours - $noise_ours0)) / $clk_tck / ($(date +%s.%N) - $noise_t0)")
	case "$noise" in -*) noise=0.00 ;; esac
}

wait_quiet() {
	local waited=0 max=${SQLBENCH_QUIET_WAIT:-60}

	while :; do
		noise_begin
		sleep 3
		noise_end
		if awk -v n="$noise" 'BEGIN { exit !(n < 0.3) }'; then
			[ "$waited" -gt 0 ] && echo "(waited ${waited} s for other work to calm down)"
			return 0
		fi
		waited=$((waited + 3))
		if [ "$waited" -ge "$max" ]; then
			echo "(other work still uses $noise cores after ${waited} s; going on)"
			return 0
		fi
	done
}

# psql -c, unaligned, tuples only; prints the result.
sql() {
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"
}

# psql running a file or commands with echo, for the record.
psql_show() {
	psql -X -q -v ON_ERROR_STOP=1 -P pager=off "$@"
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	local rc=$?

	set +e
	trap '' INT TERM
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null
		wait "$child" 2>/dev/null
	fi
	if [ -n "$pg_base" ]; then
		[ "$pg_started" -eq 1 ] && stop_server "$pg_base/data"
		rm -rf "$pg_base"
	fi
	[ "$rc" -ne 0 ] && echo "test/bench/sql/run.sh: stopped (status $rc); cluster removed" >&2
	exit "$rc"
}

# ---------------------------------------------------------------------------
# Build, install, cluster

start_cluster() {
	local d

	id postgres >/dev/null 2>&1 || die "no postgres user (is postgresql-15 installed?)"
	# a cluster left by a run killed with SIGKILL (we hold the install lock)
	for d in "${TMPDIR:-/tmp}"/lsm_fdw_sqlbench.*; do
		[ -d "$d" ] || continue
		echo "removing $d, left by a killed run"
		[ -f "$d/data/postmaster.pid" ] && stop_server "$d/data"
		rm -rf "$d"
	done
	pg_base=$(mktemp -d "${TMPDIR:-/tmp}/lsm_fdw_sqlbench.XXXXXX")
	work=$pg_base/work
	mkdir "$pg_base/data" "$pg_base/sock" "$pg_base/files" "$pg_base/log" "$work"
	chmod 700 "$pg_base/data" "$pg_base/sock"
	chown -R postgres:postgres "$pg_base/data" "$pg_base/sock" "$pg_base/files" "$pg_base/log"
	chmod 755 "$pg_base"
	as_pg "$pgbin/initdb" -D "$pg_base/data" -A trust -E UTF8 --no-locale \
		-U postgres >"$work/initdb.log" 2>&1 || {
		cat "$work/initdb.log"
		die "initdb failed"
	}
	cat >>"$pg_base/data/postgresql.conf" <<-EOF

		# test/bench/sql/run.sh: a throwaway cluster on a private socket
		listen_addresses = ''
		unix_socket_directories = '$pg_base/sock'
		port = $port
		shared_buffers = 1GB
		fsync = on
		max_wal_size = 16GB
		checkpoint_timeout = 30min
		jit = off
	EOF
	pg_started=1
	as_pg "$pgbin/pg_ctl" -D "$pg_base/data" -l "$pg_base/log/postmaster.log" \
		-w -t 60 start >/dev/null || {
		cat "$pg_base/log/postmaster.log"
		die "the server did not start"
	}
	export PGHOST=$pg_base/sock PGPORT=$port PGUSER=postgres PGDATABASE=postgres
	export PGOPTIONS="-c client_min_messages=warning"
	pm_pid=$(head -n 1 "$pg_base/data/postmaster.pid")
}

header() {
	local mem

	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	echo "test/bench/sql/run.sh $size: lsm_fdw foreign table against heap tables"
	echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "commit:   $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$root" &&
		git diff --quiet HEAD -- src 2>/dev/null || echo ' (src modified)')"
	echo "machine:  $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $mem, $(uname -sr)"
	echo "server:   $(postgres -V), shared_buffers=1GB fsync=on synchronous_commit=on max_wal_size=16GB checkpoint_timeout=30min jit=off"
	echo "rows:     queries on $query_rows; COPY of $copy_sizes"
	echo "sections: COPY$sections"
	echo "runs:     $runs (COPY: $copy_runs, of more than 1M rows: $big_runs); pgbench ${seconds} s per run; non-key queries $execs executions per run ($slow_execs for full scans)"
	echo "cluster:  $pg_base/data, socket $PGHOST, port $PGPORT"
}

# ---------------------------------------------------------------------------
# Workload 3: COPY FROM

targets="lsm pk pk_usr pk_usr_lang"

target_label() {
	case "$1" in
		lsm) echo "lsm_fdw" ;;
		pk) echo "heap+pk" ;;
		pk_usr) echo "heap+pk+usr" ;;
		pk_usr_lang) echo "heap+pk+usr+lang" ;;
	esac
}

# Drops and creates the table of target $1 (t_lsm, t_pk, ...), empty.
create_target() {
	local cols="usr text, body text, lang text, ts timestamptz"

	if [ "$1" = lsm ]; then
		sql "DROP FOREIGN TABLE IF EXISTS t_lsm" >/dev/null
	else
		sql "DROP TABLE IF EXISTS t_$1" >/dev/null
	fi
	case "$1" in
		lsm) sql "CREATE FOREIGN TABLE t_lsm (id int8 OPTIONS (key 'true'), $cols) SERVER lsm" ;;
		pk) sql "CREATE TABLE t_pk (id int8 PRIMARY KEY, $cols)" ;;
		pk_usr) sql "CREATE TABLE t_pk_usr (id int8 PRIMARY KEY, $cols);
				CREATE INDEX t_pk_usr_usr ON t_pk_usr (usr)" ;;
		pk_usr_lang) sql "CREATE TABLE t_pk_usr_lang (id int8 PRIMARY KEY, $cols);
				CREATE INDEX t_pk_usr_lang_usr ON t_pk_usr_lang (usr);
				CREATE INDEX t_pk_usr_lang_lang ON t_pk_usr_lang (lang)" ;;
	esac >/dev/null
}

# Peak RssAnon (kB) of process $1 while process $2 runs, sampled every
# 0.1 s (without forking but for sleep).
sample_anon() {
	local pid=$1 watched=$2 peak=0 k v rest

	while kill -0 "$watched" 2>/dev/null; do
		if [ -r "/proc/$pid/status" ]; then
			while read -r k v rest; do
				if [ "$k" = "RssAnon:" ]; then
					[ "$v" -gt "$peak" ] && peak=$v
					break
				fi
			done <"/proc/$pid/status" 2>/dev/null || true
		fi
		sleep 0.1
	done
	echo "$peak"
}

# One timed COPY of file $2 into table t_$1 (created empty); sets copy_s,
# copy_hwm_kb, copy_anon_kb.
copy_once() {
	local tbl=t_$1 file=$2 how=${3:-copy} pidf=$work/copy.pid out=$work/copy.out pid

	create_target "$1"
	sql "CHECKPOINT" >/dev/null
	wait_quiet
	noise_begin
	rm -f "$pidf"
	psql -X -q -A -t -v ON_ERROR_STOP=1 -v tbl="$tbl" -v datafile="$file" \
		-v pidfile="$pidf" -v how="$how" -f "$here/copy.sql" >"$out" 2>&1 &
	child=$!
	for _ in $(seq 200); do
		[ -s "$pidf" ] && break
		kill -0 "$child" 2>/dev/null || break
		sleep 0.05
	done
	pid=$(cat "$pidf" 2>/dev/null || echo 0)
	copy_anon_kb=$(sample_anon "$pid" "$child")
	if ! wait "$child"; then
		child=""
		cat "$out"
		die "$how into $tbl failed"
	fi
	child=""
	noise_end
	copy_s=$(sed -n 's/^copy_result seconds=\([0-9.]*\) .*/\1/p' "$out")
	copy_hwm_kb=$(sed -n 's/^copy_result .* hwm_kb=\([0-9]*\).*/\1/p' "$out")
	if [ -z "$copy_s" ] || [ -z "$copy_hwm_kb" ]; then
		cat "$out"
		die "no result from the $how into $tbl"
	fi
}

# Checks that every table of the targets holds the same rows as t_pk
# (count and checksum), and t_pk the $1 rows of the file.
verify_loads() {
	local n=$1 ref t got

	ref=$(sql "SELECT cnt || ' ' || chk FROM bench_table_sum('t_pk')")
	[ "${ref%% *}" = "$n" ] || die "t_pk holds ${ref%% *} rows after a COPY of $n"
	for t in $targets; do
		[ "$t" = pk ] && continue
		got=$(sql "SELECT cnt || ' ' || chk FROM bench_table_sum('t_$t')")
		[ "$got" = "$ref" ] ||
			die "WRONG ANSWER: t_$t holds (count checksum) $got, t_pk $ref"
	done
	echo "verified: every table holds the same $n rows (count and row checksum $ref)"
}

# Loads t_lsm from t_pk in transactions of 1M rows (when one COPY would
# need too much memory).
load_lsm_in_chunks() {
	local n=$1 t0 t1

	create_target lsm
	t0=$(date +%s.%N)
	sql "SELECT format('INSERT INTO t_lsm SELECT * FROM t_pk WHERE id BETWEEN %s AND %s', lo, lo + 999999)
		 FROM generate_series(1, $n, 1000000) lo" >"$work/chunks.sql"
	psql -X -q -v ON_ERROR_STOP=1 -f "$work/chunks.sql" >/dev/null
	t1=$(date +%s.%N)
	echo "loaded t_lsm from t_pk in transactions of 1M rows: $(calc '%.1f' "$t1 - $t0") s"
}

# load_run R N FILE HOW TARGET: run R of a timed load of the N rows of FILE
# into TARGET (copy_once), added to the caller's lists secs, hwms and
# anons, and printed.
load_run() {
	local r=$1 n=$2 file=$3 how=$4 t=$5

	copy_once "$t" "$file" "$how"
	secs[$t]+="$copy_s "
	hwms[$t]+="$copy_hwm_kb "
	anons[$t]+="$copy_anon_kb "
	printf 'run %s  %-18s %8.2f s  %9.0f rows/s  VmHWM %6.0f MB  peak RssAnon %6.0f MB  (other work %s cores)\n' \
		"$r" "$(target_label "$t")" "$copy_s" "$(calc '%f' "$n / $copy_s")" \
		"$(calc '%f' "$copy_hwm_kb / 1024")" "$(calc '%f' "$copy_anon_kb / 1024")" "$noise"
}

# load_medians TARGET...: the caller's lists of each target's loads become
# the median time (secs; secs_range the range) and the largest memory.
load_medians() {
	local t

	for t in "$@"; do
		[ -n "${secs[$t]:-}" ] || continue
		secs_range[$t]=$(range "${secs[$t]}")
		secs[$t]=$(median "${secs[$t]}")
		hwms[$t]=$(max "${hwms[$t]}")
		anons[$t]=$(max "${anons[$t]}")
	done
}

copy_section() {
	local n=$1 file nruns r t label t0 need avail
	local -A secs hwms anons

	section "workload 3: COPY FROM a file of $n rows"
	file=$pg_base/files/rows-$n.tsv
	t0=$(date +%s.%N)
	psql -X -q -v ON_ERROR_STOP=1 -v rows="$n" -v users="$users" \
		-v file="$file" -f "$here/gen.sql"
	echo "generated $file: $(du -b "$file" | cut -f1) bytes in $(calc '%.1f' "$(date +%s.%N) - $t0") s"
	if [ "$n" -gt 1000000 ]; then nruns=$big_runs; else nruns=$copy_runs; fi
	skip_lsm=""
	if [ "$n" -gt 1000000 ] && [ -n "${lsm_kb_per_row:-}" ]; then
		need=$(calc '%.0f' "$lsm_kb_per_row * $n")	# kB
		avail=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
		if [ "$need" -gt $((max_mem_gb * 1048576)) ] || [ "$need" -gt $((avail - 2097152)) ]; then
			skip_lsm="skipped: pending writes are held in memory ($(calc '%.2f' "$lsm_kb_per_row * 1000000 / 1048576") GB at 1M rows, so about $(calc '%.1f' "$need / 1048576") GB at $n; limit $max_mem_gb GB, available $(calc '%.1f' "$avail / 1048576") GB)"
		else
			echo "foreign table: expecting a peak of about $(calc '%.1f' "$need / 1048576") GB (extrapolated from 1M rows); $(calc '%.1f' "$avail / 1048576") GB available"
		fi
	fi
	for r in $(seq "$nruns"); do
		for t in $targets; do
			if [ "$t" = lsm ] && [ -n "$skip_lsm" ]; then
				continue
			fi
			load_run "$r" "$n" "$file" copy "$t"
		done
	done
	if [ -n "$skip_lsm" ]; then
		load_lsm_in_chunks "$n"
	fi
	verify_loads "$n"
	echo "the foreign table's store right after the COPY:"
	psql_show -c "SELECT * FROM lsm_stats('t_lsm')"

	load_medians $targets
	label=$(rows_label "$n")
	for t in pk pk_usr pk_usr_lang; do
		if [ -n "$skip_lsm" ]; then
			result "$(printf 'copy_%-4s %-21s lsm %s   %s %.2f s (%.0f rows/s)' \
				"$label" "vs_$t" "$skip_lsm" "$(target_label "$t")" "${secs[$t]}" \
				"$(calc '%f' "$n / ${secs[$t]}")")"
			continue
		fi
		result "$(printf 'copy_%-4s %-21s lsm %7.2f s (%7.0f rows/s)   %s %7.2f s (%7.0f rows/s)   heap/lsm time %.2fx' \
			"$label" "vs_$t" "${secs[lsm]}" "$(calc '%f' "$n / ${secs[lsm]}")" \
			"$(target_label "$t")" "${secs[$t]}" "$(calc '%f' "$n / ${secs[$t]}")" \
			"$(calc '%f' "${secs[$t]} / ${secs[lsm]}")")"
	done
	for t in $targets; do
		[ -n "${hwms[$t]:-}" ] || continue
		result "$(printf 'copy_%-4s %-21s peak VmHWM %6.0f MB   peak RssAnon %6.0f MB   (%s runs, time range %s s)' \
			"$label" "mem_$t" "$(calc '%f' "${hwms[$t]} / 1024")" \
			"$(calc '%f' "${anons[$t]} / 1024")" "$nruns" "$(range_of "$t")")"
	done
	if [ "$n" -eq 1000000 ] && [ -z "$skip_lsm" ]; then
		lsm_kb_per_row=$(calc '%f' "${hwms[lsm]} / $n")
	fi
}

# Workload 1b: upserts by key (pgbench): INSERT ... ON CONFLICT (id) DO
# UPDATE of random keys, half of them new, against the heap's primary key.
# The sessions load the library first (PGOPTIONS session_preload_libraries,
# as docs/user-guide.md "Upsert" says); a serialization failure between the
# clients is retried (--max-tries) and counted.
upsert_section() {
	local side

	section "workload 1b: upserts by key, pgbench -M prepared, ${seconds} s per run"
	for side in lsm pk; do
		printf '%s\n' '\set id random(1, 2 * :rows)' \
			"INSERT INTO t_$side (id, usr, lang, ts) VALUES (:id, 'u' || :id, 'en', now())" \
			"  ON CONFLICT (id) DO UPDATE SET usr = excluded.usr, ts = t_$side.ts + interval '1 second';" \
			>"$work/upsert_$side.pgbench"
	done
	cat "$work/upsert_lsm.pgbench"
	PGOPTIONS="$PGOPTIONS -c session_preload_libraries=fdw" \
		psql_show -c "EXPLAIN (COSTS OFF) INSERT INTO t_lsm (id) VALUES (1)
		ON CONFLICT (id) DO UPDATE SET usr = excluded.usr"
	PGOPTIONS="$PGOPTIONS -c session_preload_libraries=fdw" tps_runs upsert --max-tries=100
}

# Workload 3b: INSERT INTO t SELECT * FROM an unindexed heap table holding
# the $1 rows of the file, into the foreign table and a heap with a primary
# key; run last, since it loads t_lsm and t_pk again.
insert_section() {
	local n=$1 file nruns r t label ref got
	local -A secs hwms anons

	section "workload 3b: INSERT ... SELECT of $n rows from a heap table"
	file=$pg_base/files/rows-$n.tsv
	sql "DROP TABLE IF EXISTS bench_src;
		CREATE UNLOGGED TABLE bench_src (id int8, usr text, body text, lang text, ts timestamptz);
		COPY bench_src FROM '$file'" >/dev/null
	sql "VACUUM ANALYZE bench_src" >/dev/null
	if [ "$n" -gt 1000000 ]; then nruns=$big_runs; else nruns=$copy_runs; fi
	for r in $(seq "$nruns"); do
		for t in lsm pk; do
			load_run "$r" "$n" "$file" insert "$t"
		done
	done
	ref=$(sql "SELECT cnt || ' ' || chk FROM bench_table_sum('t_pk')")
	got=$(sql "SELECT cnt || ' ' || chk FROM bench_table_sum('t_lsm')")
	[ "$got" = "$ref" ] && [ "${ref%% *}" = "$n" ] ||
		die "WRONG ANSWER: after INSERT ... SELECT t_lsm holds (count checksum) $got, t_pk $ref"
	echo "verified: both tables hold the same $n rows (count and row checksum $ref)"
	sql "DROP TABLE bench_src" >/dev/null
	load_medians lsm pk
	label=$(rows_label "$n")
	result "$(printf 'insert_%-4s %-19s lsm %7.2f s (%7.0f rows/s)   %s %7.2f s (%7.0f rows/s)   heap/lsm time %.2fx' \
		"$label" "vs_pk" "${secs[lsm]}" "$(calc '%f' "$n / ${secs[lsm]}")" \
		"$(target_label pk)" "${secs[pk]}" "$(calc '%f' "$n / ${secs[pk]}")" \
		"$(calc '%f' "${secs[pk]} / ${secs[lsm]}")")"
	for t in lsm pk; do
		result "$(printf 'insert_%-4s %-19s peak VmHWM %6.0f MB   peak RssAnon %6.0f MB   (%s runs, time range %s s)' \
			"$label" "mem_$t" "$(calc '%f' "${hwms[$t]} / 1024")" \
			"$(calc '%f' "${anons[$t]} / 1024")" "$nruns" "$(range_of "$t")")"
	done
}

# Prints the numbers of the space-separated list $1, one a line, sorted.
numbers() {
	tr ' ' '\n' <<<"$1" | grep . | sort -g
}

# Prints the median of the list $1.
median() {
	numbers "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Prints the largest number of the list $1.
max() {
	numbers "$1" | tail -n 1
}

# Prints "min-max" of the list $1, to two decimals.
range() {
	numbers "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'
}

declare -A secs_range
range_of() {
	echo "${secs_range[$1]:-?}"
}

rows_label() {
	case "$1" in
		1000000) echo 1M ;;
		10000000) echo 10M ;;
		*) echo "$1" ;;
	esac
}

# ---------------------------------------------------------------------------
# Workload 4: bytes on disk

# bytes without holes: the memtable's file is as long as its largest
# memtable, and gets blocks as the memtable grows
store_bytes() {
	sql "SELECT lsm_store_size('t_lsm')"
}

store_files() {
	local dir

	dir=$(sql "SELECT lsm_store_path('t_lsm')")
	find "$dir" -type f -printf '%s %b %f\n' | awk '
		{ k = $3; sub(/^[0-9]+\./, "", k); if (k == $3) k = "(" $3 ")"; n[k]++
		  b[k] += ($2 * 512 < $1) ? $2 * 512 : $1 }
		END { for (k in n) printf "    %-12s %5d files %12d bytes\n", k, n[k], b[k] }' | sort
}

heap_bytes() {
	sql "SELECT pg_total_relation_size('t_$1')"
}

disk_lines() {
	local when=$1 lsm=$2 t h

	for t in pk pk_usr pk_usr_lang; do
		h=$(heap_bytes "$t")
		result "$(printf 'disk_%-14s %-13s lsm %7.1f MB   %-17s %7.1f MB   lsm/heap %.2fx' \
			"$when" "vs_$t" "$(calc '%f' "$lsm / 1048576")" "$(target_label "$t")" \
			"$(calc '%f' "$h / 1048576")" "$(calc '%f' "$lsm / $h")")"
	done
}

disk_section() {
	local b t0 t

	section "workload 4: bytes on disk ($query_rows rows)"
	sql "CHECKPOINT" >/dev/null
	b=$(store_bytes)
	echo "after the load: store directory $(sql "SELECT lsm_store_path('t_lsm')"), lsm_store_size $b"
	store_files
	disk_lines after_load "$b"

	echo "VACUUM ANALYZE of the heap tables, ANALYZE and a full compaction of the foreign table:"
	for t in pk pk_usr pk_usr_lang; do
		sql "VACUUM ANALYZE t_$t" >/dev/null
	done
	t0=$(date +%s.%N)
	sql "ANALYZE t_lsm" >/dev/null
	echo "ANALYZE t_lsm: $(calc '%.1f' "$(date +%s.%N) - $t0") s"
	t0=$(date +%s.%N)
	sql "SELECT lsm_compact('t_lsm', full => true)" >/dev/null
	echo "lsm_compact('t_lsm', full => true): $(calc '%.1f' "$(date +%s.%N) - $t0") s"
	sql "CHECKPOINT" >/dev/null
	b=$(store_bytes)
	echo "after compaction: lsm_store_size $b"
	store_files
	psql_show -c "SELECT * FROM lsm_stats('t_lsm')" -c "SELECT * FROM lsm_hierarchy('t_lsm')"
	psql_show -c "SELECT c.relname, pg_size_pretty(pg_relation_size(c.oid)) AS main,
			pg_relation_size(c.oid) AS main_bytes, pg_total_relation_size(c.oid) AS total_bytes
		FROM pg_class c WHERE c.relname ~ '^t_pk' ORDER BY c.relname"
	disk_lines compacted "$b"
}

# ---------------------------------------------------------------------------
# Workload 1: point selects (pgbench)

# Prints the TPS of one pgbench run of script $1 with $2 clients for $3
# seconds; more pgbench options may follow.
pgbench_tps() {
	local out=$work/pgbench.out

	noise_begin
	if ! pgbench -n -M prepared -f "$1" -c "$2" -j "$2" -T "$3" -D rows="$query_rows" \
		"${@:4}" >"$out" 2>&1; then
		cat "$out" >&2
		die "pgbench failed"
	fi
	if grep -q 'number of failed transactions: [1-9]' "$out"; then
		cat "$out" >&2
		die "pgbench: failed transactions"
	fi
	noise_end
	echo "$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' "$out") $noise"
}

# tps_runs NAME [PGBENCH OPTION...]: $runs runs of the pgbench scripts
# $work/NAME_lsm.pgbench and $work/NAME_pk.pgbench with 1 and 2 clients,
# the sides alternating which goes first; prints each run (with the
# transactions retried, if any) and a result line NAME_<clients>c of the
# medians.
tps_runs() {
	local name=$1 r c side tps first retried
	local -A res

	shift
	for r in $(seq "$runs"); do
		for c in 1 2; do
			if [ $(((r + c) % 2)) -eq 0 ]; then first="lsm pk"; else first="pk lsm"; fi
			for side in $first; do
				wait_quiet
				read -r tps noise < <(pgbench_tps "$work/${name}_$side.pgbench" "$c" "$seconds" "$@")
				[ -n "$tps" ] || die "pgbench gave no TPS"
				res[$side$c]+="$tps "
				retried=$(sed -n 's/^number of transactions retried: \([0-9]*\).*/, \1 retried/p' "$work/pgbench.out")
				printf 'run %s  %s client(s)  %-8s %10.0f tps%s  (other work %s cores)\n' "$r" "$c" \
					"$(target_label "$side")" "$tps" "$retried" "$noise"
			done
		done
	done
	for c in 1 2; do
		result "$(printf '%-17s lsm %6.0f tps   heap %6.0f tps   lsm/heap %.2fx   (runs: lsm %s, heap %s)' \
			"${name}_${c}c" "$(median "${res[lsm$c]}")" "$(median "${res[pk$c]}")" \
			"$(calc '%f' "$(median "${res[lsm$c]}") / $(median "${res[pk$c]}")")" \
			"$(range "${res[lsm$c]}" | sed 's/\.[0-9]*//g')" "$(range "${res[pk$c]}" | sed 's/\.[0-9]*//g')")"
	done
}

point_section() {
	local side

	section "workload 1: point selects by key, pgbench -M prepared, ${seconds} s per run"
	for side in lsm pk; do
		printf '\\set id random(1, :rows)\nSELECT * FROM t_%s WHERE id = :id;\n' "$side" \
			>"$work/point_select_$side.pgbench"
	done
	cat "$work/point_select_lsm.pgbench"
	echo "EXPLAIN, a literal and the generic plan of the prepared statement:"
	for side in lsm pk; do
		psql_show -c "EXPLAIN SELECT * FROM t_$side WHERE id = 42" \
			-c "PREPARE p(int8) AS SELECT * FROM t_$side WHERE id = \$1;
				SET plan_cache_mode = force_generic_plan;
				EXPLAIN EXECUTE p(42);
				EXPLAIN ANALYZE EXECUTE p(42)"
	done
	sql "SELECT pg_prewarm('t_pk'), pg_prewarm('t_pk_pkey')" >/dev/null
	find "$(sql "SELECT lsm_store_path('t_lsm')")" -type f -exec cat {} + >/dev/null
	echo "warm-up: 5 s of each, untimed"
	pgbench_tps "$work/point_select_lsm.pgbench" 1 5 >/dev/null
	pgbench_tps "$work/point_select_pk.pgbench" 1 5 >/dev/null
	tps_runs point_select

	# the answers: 1000 random keys (and 100 absent) by the same query,
	# server-side, on both tables
	sql "INSERT INTO bench_values
		 SELECT 'key', array_agg(1 + (hashint8extended(i, 90) & 2147483647) % $query_rows)
		 FROM generate_series(1, 1000) i;
		 INSERT INTO bench_values
		 SELECT 'key_absent', array_agg($query_rows + i) FROM generate_series(1, 100) i" >/dev/null
	for side in lsm pk; do
		for kind in key key_absent; do
			sql "SELECT bench_run('point', '$side', '$kind', 1,
				'SELECT count(*), sum(hashtextextended(t::text, 0)) FROM t_$side t WHERE id = \$1::int8',
				(SELECT vals FROM bench_values WHERE kind = '$kind'))" >/dev/null
		done
	done
	sql "SELECT bench_check('point')"
	sql "SELECT CASE WHEN sum(cnt) FILTER (WHERE kind = 'key') = 2000
			 AND sum(cnt) FILTER (WHERE kind = 'key_absent') = 0 THEN 'ok' END
		 FROM bench_times WHERE section = 'point'" | grep -qx ok ||
		die "WRONG ANSWER: a key lookup did not find its row (or found an absent key)"
	psql_show -c "SELECT variant, kind, round(median_ms::numeric, 4) AS median_ms, execs, rows_found
		FROM bench_summary WHERE section = 'point' ORDER BY kind, variant"
	for kind in key key_absent; do
		lsm_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'point' AND variant = 'lsm' AND kind = '$kind'")
		heap_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'point' AND variant = 'pk' AND kind = '$kind'")
		result "$(printf 'point_latency_%-10s lsm %.4f ms   heap %.4f ms   heap/lsm %.2fx   (server-side, plpgsql EXECUTE, median of 1 run)' \
			"$kind" "$lsm_ms" "$heap_ms" "$(calc '%f' "$heap_ms / $lsm_ms")")"
	done
}

# ---------------------------------------------------------------------------
# Workload 2: equality on a non-key column

eq_query() {
	echo "SELECT count(*), sum(hashtextextended(t::text, 0)) FROM $1 t WHERE usr = \$1"
}

# eq_variant VARIANT TABLE SETTINGS SLOW RUN
eq_variant() {
	local variant=$1 tbl=$2 settings=$3 slow=$4 r=$5 kind vals

	for kind in hit absent; do
		if [ "$slow" = slow ]; then
			vals="(SELECT vals[1:$slow_execs] FROM bench_values WHERE kind = '$kind')"
		else
			vals="(SELECT vals FROM bench_values WHERE kind = '$kind')"
		fi
		psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$settings" \
			-c "SELECT bench_run('eq', '$variant', '$kind', $r, '$(eq_query "$tbl")', $vals)" >/dev/null
	done
}

eq_explain() {
	local tbl=$1 settings=$2 hit absent

	hit=$(sql "SELECT vals[1] FROM bench_values WHERE kind = 'hit'")
	absent=$(sql "SELECT vals[1] FROM bench_values WHERE kind = 'absent'")
	psql_show -c "$settings" \
		-c "EXPLAIN ANALYZE SELECT * FROM $tbl WHERE usr = '$hit'" \
		-c "EXPLAIN ANALYZE SELECT * FROM $tbl WHERE usr = '$absent'" | tee -a "$work/eq_explain.txt"
}

# The access path EXPLAIN shows for variant $1 must contain $2.
eq_expect_plan() {
	local settings=$1 tbl=$2 want=$3 label=$4 plan

	plan=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$settings" \
		-c "EXPLAIN SELECT * FROM $tbl WHERE usr = '$(sql "SELECT vals[1] FROM bench_values WHERE kind = 'hit'")'")
	if ! grep -q "$want" <<<"$plan"; then
		result "WARNING: $label: the plan does not show '$want':"
		printf '%s\n' "$plan"
	fi
}

eq_section() {
	local r v kind base ms variant tbl settings slow want t0
	# variant, table, settings, slow or not, expected plan text
	local variants=(
		"lsm_auto|t_lsm|SET lsm_fdw.value_search = auto|fast|value search"
		"heap_btree|t_pk_usr|SET lsm_fdw.value_search = auto|fast|t_pk_usr_usr"
		"heap_bloom|t_pk|SET enable_seqscan = off|fast|t_pk_bloom"
		"lsm_hierarchy|t_lsm|SET lsm_fdw.value_search = hierarchy|fast|LSM Strategy: hierarchy"
		"lsm_flat|t_lsm|SET lsm_fdw.value_search = flat|fast|LSM Strategy: flat"
		"lsm_leaves|t_lsm|SET lsm_fdw.value_search = leaves|fast|LSM Strategy: leaves"
		"lsm_off|t_lsm|SET lsm_fdw.value_search = off|slow|full scan"
		"heap_seqscan|t_pk_usr_lang|SET enable_indexscan = off; SET enable_bitmapscan = off|slow|Seq Scan"
	)

	section "workload 2: equality on a non-key column (usr), $execs values with ~10 rows and $execs absent values"
	sql "INSERT INTO bench_values
		 SELECT 'hit', array_agg('u' || lpad(((hashint8extended(i, 91) & 2147483647) % $users)::text, 8, '0'))
		 FROM generate_series(1, $execs) i;
		 INSERT INTO bench_values
		 SELECT 'absent', array_agg('u' || lpad(($users + (hashint8extended(i, 92) & 2147483647) % $users)::text, 8, '0'))
		 FROM generate_series(1, $execs) i" >/dev/null
	echo "CREATE INDEX t_pk_bloom ON t_pk USING bloom (usr) (contrib bloom, default length 80 bits, 2 bits per column):"
	t0=$(date +%s.%N)
	sql "CREATE INDEX t_pk_bloom ON t_pk USING bloom (usr)" >/dev/null
	sql "VACUUM ANALYZE t_pk" >/dev/null
	echo "built in $(calc '%.1f' "$(date +%s.%N) - $t0") s, $(sql "SELECT pg_size_pretty(pg_relation_size('t_pk_bloom'))")"
	echo "the query, timed on the server per value: $(eq_query t)"
	echo "(heap_seqscan: t_pk_usr_lang with index and bitmap scans disabled, so PostgreSQL's seq scan, parallel if it chooses)"

	echo
	echo "EXPLAIN ANALYZE of each variant (first value with ~10 rows, first absent value):"
	for v in "${variants[@]}"; do
		IFS='|' read -r variant tbl settings slow want <<<"$v"
		echo "--- $variant: $settings"
		eq_expect_plan "$settings" "$tbl" "$want" "$variant"
		eq_explain "$tbl" "$settings"
	done
	echo "--- lsm generic plan of a prepared statement (usr = \$1; uses the statistics of ANALYZE):"
	psql_show -c "PREPARE q(text) AS SELECT * FROM t_lsm WHERE usr = \$1;
		SET plan_cache_mode = force_generic_plan;
		EXPLAIN EXECUTE q('x')"

	for r in $(seq "$runs"); do
		for v in "${variants[@]}"; do
			IFS='|' read -r variant tbl settings slow want <<<"$v"
			wait_quiet
			noise_begin
			eq_variant "$variant" "$tbl" "$settings" "$slow" "$r"
			noise_end
			printf 'run %s  %-14s (other work %s cores)\n' "$r" "$variant" "$noise"
		done
	done
	sql "SELECT bench_check('eq')"
	psql_show -c "SELECT variant, kind, round(median_ms::numeric, 3) AS median_ms,
			round(min_ms::numeric, 3) AS min_run_median, round(max_ms::numeric, 3) AS max_run_median,
			runs, execs, rows_found
		FROM bench_summary WHERE section = 'eq' ORDER BY kind, median_ms"
	for kind in hit absent; do
		base=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'eq' AND variant = 'lsm_auto' AND kind = '$kind'")
		for variant in heap_seqscan heap_btree heap_bloom lsm_off; do
			ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'eq' AND variant = '$variant' AND kind = '$kind'")
			result "$(printf 'usr_eq_%-7s lsm_auto %8.3f ms   %-13s %9.3f ms   %s/lsm_auto %.1fx   (range of run medians: lsm %s, %s %s)' \
				"$kind" "$base" "$variant" "$ms" "$variant" "$(calc '%f' "$ms / $base")" \
				"$(sql "SELECT format('%s-%s', round(min_ms::numeric, 3), round(max_ms::numeric, 3)) FROM bench_summary WHERE section = 'eq' AND variant = 'lsm_auto' AND kind = '$kind'")" \
				"$variant" "$(sql "SELECT format('%s-%s', round(min_ms::numeric, 3), round(max_ms::numeric, 3)) FROM bench_summary WHERE section = 'eq' AND variant = '$variant' AND kind = '$kind'")")"
		done
		for variant in lsm_hierarchy lsm_flat lsm_leaves; do
			ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'eq' AND variant = '$variant' AND kind = '$kind'")
			result "$(printf 'usr_eq_%-7s lsm_auto %8.3f ms   %-13s %9.3f ms   (strategy for the record)' \
				"$kind" "$base" "$variant" "$ms")"
		done
	done
}

# ---------------------------------------------------------------------------
# Workload 5: join by key

join_section() {
	local r side mode settings q lsm_ms heap_ms

	section "workload 5: 1000 random keys of a native table joined with the table by key"
	sql "CREATE TABLE join_keys AS
		 SELECT 1 + (hashint8extended(i, 93) & 2147483647) % $query_rows AS id
		 FROM generate_series(1, 1000) i;
		 ANALYZE join_keys" >/dev/null
	# the plan the planner chooses, then a nested loop forced (the
	# parameterized key lookups, whatever the planner prefers)
	for mode in planner nestloop; do
		if [ "$mode" = nestloop ]; then
			settings="SET enable_hashjoin = off; SET enable_mergejoin = off"
		else
			settings="SET enable_hashjoin = on"
		fi
		for side in lsm pk; do
			q="SELECT count(*), sum(hashtextextended(t::text, 0)) FROM join_keys k JOIN t_$side t ON t.id = k.id"
			echo "--- $mode: $q"
			psql_show -c "$settings" -c "EXPLAIN ANALYZE $q"
		done
		for r in $(seq "$runs"); do
			for side in lsm pk; do
				q="SELECT count(*), sum(hashtextextended(t::text, 0)) FROM join_keys k JOIN t_$side t ON t.id = k.id"
				wait_quiet
				noise_begin
				psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$settings" \
					-c "SELECT bench_run('join', '$side', '$mode', $r, '$q',
						array_fill(NULL::text, ARRAY[50]))" >/dev/null
				noise_end
				printf 'run %s  %-8s %-3s (other work %s cores)\n' "$r" "$mode" "$side" "$noise"
			done
		done
	done
	sql "SELECT bench_check('join')"
	sql "SELECT CASE WHEN min(cnt) = 1000 THEN 'ok' END FROM bench_times WHERE section = 'join'" |
		grep -qx ok || die "WRONG ANSWER: the join did not find its 1000 rows"
	for mode in planner nestloop; do
		lsm_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'join' AND variant = 'lsm' AND kind = '$mode'")
		heap_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'join' AND variant = 'pk' AND kind = '$mode'")
		result "$(printf 'join_1000_keys_%-8s lsm %7.3f ms   heap %7.3f ms   heap/lsm %.2fx   (median of %s runs of 50; run medians lsm %s, heap %s)' \
			"$mode" "$lsm_ms" "$heap_ms" "$(calc '%f' "$heap_ms / $lsm_ms")" "$runs" \
			"$(sql "SELECT format('%s-%s', round(min_ms::numeric, 3), round(max_ms::numeric, 3)) FROM bench_summary WHERE section = 'join' AND variant = 'lsm' AND kind = '$mode'")" \
			"$(sql "SELECT format('%s-%s', round(min_ms::numeric, 3), round(max_ms::numeric, 3)) FROM bench_summary WHERE section = 'join' AND variant = 'pk' AND kind = '$mode'")")"
	done
}

# ---------------------------------------------------------------------------
# Workload 6b: a composite key (usr, ts, id) against a heap's composite
# primary key: a user's latest rows (a prefix, backward, LIMIT) and a
# user's rows of a month (a prefix and a range on the next column), by
# pgbench.  The tables hold the rows of t_pk, the foreign one compacted.

prefix_section() {
	local side ref got

	section "workload 6b: composite key (usr, ts, id), pgbench -M prepared, ${seconds} s per run"
	sql "DROP FOREIGN TABLE IF EXISTS t_ck_lsm; DROP TABLE IF EXISTS t_ck_pk;
		CREATE FOREIGN TABLE t_ck_lsm (usr text COLLATE \"C\", ts timestamptz,
			id int8, lang text) SERVER lsm OPTIONS (key 'usr, ts, id');
		CREATE TABLE t_ck_pk (usr text COLLATE \"C\", ts timestamptz, id int8,
			lang text, PRIMARY KEY (usr, ts, id));
		INSERT INTO t_ck_lsm SELECT usr, ts, id, lang FROM t_pk;
		INSERT INTO t_ck_pk SELECT usr, ts, id, lang FROM t_pk;
		SELECT lsm_compact('t_ck_lsm', full => true)" >/dev/null
	sql "VACUUM ANALYZE t_ck_pk" >/dev/null
	sql "ANALYZE t_ck_lsm" >/dev/null
	for side in lsm pk; do
		printf '%s\n' '\set u random(0, :users - 1)' \
			"SELECT * FROM t_ck_$side WHERE usr = 'u' || lpad(:u::text, 8, '0') ORDER BY ts DESC LIMIT 5;" \
			>"$work/prefix_latest_$side.pgbench"
		printf '%s\n' '\set u random(0, :users - 1)' '\set m random(0, 11)' \
			"SELECT count(*), max(id) FROM t_ck_$side WHERE usr = 'u' || lpad(:u::text, 8, '0')" \
			"  AND ts >= timestamptz '2024-01-01 00:00:00+00' + :m * interval '1 month'" \
			"  AND ts < timestamptz '2024-01-01 00:00:00+00' + (:m + 1) * interval '1 month';" \
			>"$work/prefix_month_$side.pgbench"
	done
	cat "$work/prefix_latest_lsm.pgbench" "$work/prefix_month_lsm.pgbench"
	psql_show -c "EXPLAIN (COSTS OFF) SELECT * FROM t_ck_lsm WHERE usr = 'u00000042' ORDER BY ts DESC LIMIT 5" \
		-c "EXPLAIN (COSTS OFF) SELECT * FROM t_ck_pk WHERE usr = 'u00000042' ORDER BY ts DESC LIMIT 5" \
		-c "EXPLAIN (COSTS OFF) SELECT count(*) FROM t_ck_lsm WHERE usr = 'u00000042' AND ts >= '2024-03-01' AND ts < '2024-04-01'"
	# the answers: the same rows for 2000 users, by both queries
	for side in lsm pk; do
		got=$(sql "SELECT sum(hashtext(l::text)), (SELECT sum(c) FROM (SELECT count(*) c FROM t_ck_$side
				WHERE usr IN (SELECT 'u' || lpad(u::text, 8, '0') FROM generate_series(0, 1999) u)
				AND ts >= '2024-03-01' AND ts < '2024-04-01' GROUP BY usr) s)
			FROM generate_series(0, 1999) u, LATERAL (SELECT * FROM t_ck_$side
				WHERE usr = 'u' || lpad(u::text, 8, '0') ORDER BY ts DESC LIMIT 5) l")
		if [ "$side" = lsm ]; then ref=$got; fi
	done
	[ "$got" = "$ref" ] || die "WRONG ANSWER: composite-key queries: lsm $ref, heap $got"
	echo "verified: both tables give the same latest rows and month counts for 2000 users ($ref)"
	tps_runs prefix_latest -D users="$users"
	tps_runs prefix_month -D users="$users"
	sql "DROP FOREIGN TABLE t_ck_lsm; DROP TABLE t_ck_pk" >/dev/null
}

# ---------------------------------------------------------------------------
# Workload 6: key order with LIMIT (pages of ten rows)

order_section() {
	local r side kind q lsm_ms heap_ms
	# shellcheck disable=SC2016  # $1: the statement's parameter
	local -A queries=(
		[asc]='SELECT count(*), sum(hashtextextended(t::text, 0)) FROM (SELECT * FROM t_%s WHERE id > $1::int8 ORDER BY id LIMIT 10) t'
		[desc]='SELECT count(*), sum(hashtextextended(t::text, 0)) FROM (SELECT * FROM t_%s WHERE id < $1::int8 ORDER BY id DESC LIMIT 10) t'
		[newest]='SELECT count(*), sum(hashtextextended(t::text, 0)) FROM (SELECT * FROM t_%s ORDER BY id DESC LIMIT 10) t'
	)

	section "workload 6: ten rows in key order from 1000 random keys, up (asc) and down (desc), and the last ten (newest)"
	sql "INSERT INTO bench_values
		 SELECT 'order', array_agg((1 + (hashint8extended(i, 95) & 2147483647) % $query_rows)::text)
		 FROM generate_series(1, 1000) i" >/dev/null
	for kind in asc desc newest; do
		for side in lsm pk; do
			# shellcheck disable=SC2059  # the query is the format
			q=$(printf "${queries[$kind]}" "$side")
			echo "--- $kind: $q"
			psql_show -c "EXPLAIN ${q//\$1::int8/500}"
		done
	done
	for r in $(seq "$runs"); do
		for kind in asc desc newest; do
			for side in lsm pk; do
				# shellcheck disable=SC2059
				q=$(printf "${queries[$kind]}" "$side")
				wait_quiet
				noise_begin
				sql "SELECT bench_run('order', '$side', '$kind', $r, '$q',
					(SELECT vals FROM bench_values WHERE kind = 'order'))" >/dev/null
				noise_end
				printf 'run %s  %-6s %-3s (other work %s cores)\n' "$r" "$kind" "$side" "$noise"
			done
		done
	done
	sql "SELECT bench_check('order')"
	# a start key near either end gives a short page; most give ten rows
	sql "SELECT CASE WHEN sum(cnt) >= 9 * count(*) THEN 'ok' END FROM bench_times WHERE section = 'order'" |
		grep -qx ok || die "WRONG ANSWER: the pages in key order came back short"
	for kind in asc desc newest; do
		lsm_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'order' AND variant = 'lsm' AND kind = '$kind'")
		heap_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'order' AND variant = 'pk' AND kind = '$kind'")
		result "$(printf 'order_limit_10_%-7s lsm %.4f ms   heap %.4f ms   heap/lsm %.2fx   (server-side, median of %s runs of 1000)' \
			"$kind" "$lsm_ms" "$heap_ms" "$(calc '%f' "$heap_ms / $lsm_ms")" "$runs")"
	done
}

# ---------------------------------------------------------------------------
# Workload 7: reading the whole table (or half of it), with the default
# parallel settings (a Gather over parallel scans, on both sides) and
# without parallel workers

scan_section() {
	local r side kind mode settings q lsm_ms heap_ms
	local lo=$((query_rows / 10)) hi=$((query_rows * 6 / 10))
	local -A queries=(
		[count]='SELECT count(*), 0::numeric FROM t_%s'
		[group]='SELECT sum(c), sum(hashtextextended(lang || c, 0)) FROM (SELECT lang, count(*) c FROM t_%s GROUP BY lang) g'
		[range]="SELECT count(*), sum(length(body)) FROM t_%s WHERE id BETWEEN $lo AND $hi"
	)

	section "workload 7: full scans (count, GROUP BY lang) and a range of half the keys, with parallel workers and without"
	for mode in parallel serial; do
		if [ "$mode" = serial ]; then
			settings="SET max_parallel_workers_per_gather = 0"
		else
			settings="RESET max_parallel_workers_per_gather"
		fi
		for kind in count group range; do
			for side in lsm pk; do
				# shellcheck disable=SC2059  # the query is the format
				q=$(printf "${queries[$kind]}" "$side")
				echo "--- $mode $kind: $q"
				psql_show -c "$settings" -c "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) $q"
			done
		done
		for r in $(seq "$runs"); do
			for kind in count group range; do
				for side in lsm pk; do
					# shellcheck disable=SC2059
					q=$(printf "${queries[$kind]}" "$side")
					wait_quiet
					noise_begin
					psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$settings" \
						-c "SELECT bench_run('scan', '$side', '${kind}_$mode', $r, '$q',
							array_fill(NULL::text, ARRAY[$slow_execs]))" >/dev/null
					noise_end
					printf 'run %s  %-8s %-6s %-3s (other work %s cores)\n' "$r" "$mode" "$kind" "$side" "$noise"
				done
			done
		done
	done
	sql "SELECT bench_check('scan')"
	for mode in parallel serial; do
		for kind in count group range; do
			lsm_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'scan' AND variant = 'lsm' AND kind = '${kind}_$mode'")
			heap_ms=$(sql "SELECT median_ms FROM bench_summary WHERE section = 'scan' AND variant = 'pk' AND kind = '${kind}_$mode'")
			result "$(printf 'scan_%-6s %-8s lsm %8.2f ms   heap %8.2f ms   heap/lsm %.2fx   (median of %s runs of %s; run medians lsm %s, heap %s)' \
				"$kind" "$mode" "$lsm_ms" "$heap_ms" "$(calc '%f' "$heap_ms / $lsm_ms")" "$runs" "$slow_execs" \
				"$(sql "SELECT format('%s-%s', round(min_ms::numeric, 2), round(max_ms::numeric, 2)) FROM bench_summary WHERE section = 'scan' AND variant = 'lsm' AND kind = '${kind}_$mode'")" \
				"$(sql "SELECT format('%s-%s', round(min_ms::numeric, 2), round(max_ms::numeric, 2)) FROM bench_summary WHERE section = 'scan' AND variant = 'pk' AND kind = '${kind}_$mode'")")"
		done
	done
}

# ---------------------------------------------------------------------------

main() {
	local n t

	require_root
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	build_and_install
	echo "built and installed $("$PG_CONFIG" --pkglibdir)/fdw.so"
	start_cluster
	users=$((query_rows / 10))
	[ "$users" -ge 1 ] || users=1
	header
	psql -X -q -v ON_ERROR_STOP=1 -f "$here/setup.sql" >/dev/null

	# the same usr values at every size (users follow the rows the
	# queries run on): a smaller file is the first rows of a larger one
	for n in $copy_sizes; do
		copy_section "$n"
	done
	if [[ "$sections" == *" disk "* ]]; then
		disk_section
	else
		# the state the queries expect: statistics, a compacted store
		for t in pk pk_usr pk_usr_lang; do
			sql "VACUUM ANALYZE t_$t" >/dev/null
		done
		sql "ANALYZE t_lsm; SELECT lsm_compact('t_lsm', full => true)" >/dev/null
	fi
	[[ "$sections" != *" point "* ]] || point_section
	[[ "$sections" != *" eq "* ]] || eq_section
	[[ "$sections" != *" join "* ]] || join_section
	[[ "$sections" != *" order "* ]] || order_section
	[[ "$sections" != *" prefix "* ]] || prefix_section
	[[ "$sections" != *" scan "* ]] || scan_section
	# changes t_lsm and t_pk: after the sections that compare them
	[[ "$sections" != *" upsert "* ]] || upsert_section
	[[ "$sections" != *" insert "* ]] || insert_section "$query_rows"

	section "summary ($size, $query_rows rows; see docs/benchmarks-sql.md for the targets)"
	printf '%s\n' "${summary[@]}"
	sql "SELECT 'sample row: ' || t::text FROM t_lsm t WHERE id = 1"
	sql "SELECT format('average body length %s bytes', round(avg(length(body)))) FROM t_pk"
}

mkdir -p "$out_dir"
main "$@" 2>&1 | tee "$out_file"
rc=${PIPESTATUS[0]}
echo "saved $out_file"
exit "$rc"

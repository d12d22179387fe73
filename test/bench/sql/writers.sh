#!/usr/bin/env bash
#
# test/bench/sql/writers.sh
#	Many sessions writing one table: the foreign table of lsm_fdw against a
#	heap table with a primary key holding the same rows, in one run, on a
#	throwaway cluster.  pgbench -M prepared, single-row transactions:
#	INSERT of random new keys and UPDATE of a random existing key, with 1
#	and 8 clients, synchronous_commit on and off, and, as a reference, 8
#	clients each inserting into a table of its own (off).  The two sides
#	alternate run by run.  Per workload one line: median TPS of each side,
#	the ratio, and the median p50/p99 latency of each side (from pgbench's
#	per-transaction log).  At the end of the 8-client INSERT runs, the RSS
#	and RssAnon of every backend of the run (median and largest).
#	Results: docs/benchmarks-sql.md ("Many writers on one table"); a saved
#	output is drawn by test/bench/sql/plot.sh.
#
# usage: sudo test/bench/sql/writers.sh
#
# Run as root: it builds and installs the extension (holding the install
# lock test/run takes) and runs the server as the postgres user, on a
# private Unix socket, in a mktemp -d directory removed at the end.  The
# server's settings are those of run.sh (shared_buffers = 1GB, fsync = on,
# max_wal_size = 16GB, checkpoint_timeout = 30min, jit = off).
#
# Environment:
#   WRITERS_ROWS     rows loaded into each table first (default 1000000)
#   WRITERS_SECONDS  seconds of each pgbench run (default 10)
#   WRITERS_RUNS     runs of each workload and side (default 3)
#   WRITERS_PGPORT   port of the cluster (default 54351)
#   WRITERS_ONLY     run only the workloads whose name contains this
#                    (e.g. "INSERT, 8 clients, sync off"; default: all)
#   WRITERS_PERF     a directory: each lsm-side run is also profiled,
#                    system-wide (perf record -a -g, the middle of the run),
#                    into WRITERS_PERF/perf-<script>-<clients>c-<sync>-<time>.data
#   PG_CONFIG        default /usr/lib/postgresql/15/bin/pg_config
#   BENCH_OUT        where the result file goes (default test/bench/results)
#
# It checks its answers: after the runs each table must hold the loaded
# rows plus one per committed INSERT, and the foreign and heap tables the
# same sum of n less the committed UPDATEs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rows=${WRITERS_ROWS:-1000000}
seconds=${WRITERS_SECONDS:-10}
runs=${WRITERS_RUNS:-3}
port=${WRITERS_PGPORT:-54351}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
out_dir=${BENCH_OUT:-$root/test/bench/results}
out_file=$out_dir/writers-$(date +%Y%m%d-%H%M%S).txt
pg_base=""
pg_started=0
bench=writers.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

q() {
	psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	local rc=$?

	set +e
	trap '' INT TERM
	if [ -n "$pg_base" ]; then
		[ "$pg_started" -eq 1 ] && stop_server "$pg_base/data"
		rm -rf "$pg_base"
	fi
	[ "$rc" -ne 0 ] && echo "test/bench/sql/writers.sh: stopped (status $rc); cluster removed" >&2
	exit "$rc"
}

require_root
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
build_and_install

pg_base=$(mktemp -d "${TMPDIR:-/tmp}/lsm_fdw_writers.XXXXXX")
mkdir "$pg_base/data" "$pg_base/sock" "$pg_base/log" "$pg_base/work"
chmod 700 "$pg_base/data" "$pg_base/sock"
chown -R postgres:postgres "$pg_base"
chmod 755 "$pg_base"
as_pg "$pgbin/initdb" -D "$pg_base/data" -A trust -E UTF8 --no-locale -U postgres \
	>"$pg_base/log/initdb.log" 2>&1 || die "initdb failed"
cat >>"$pg_base/data/postgresql.conf" <<EOF
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
as_pg "$pgbin/pg_ctl" -D "$pg_base/data" -l "$pg_base/log/postmaster.log" -w -t 60 start \
	>/dev/null || die "the server did not start"
export PGHOST=$pg_base/sock PGPORT=$port PGUSER=postgres PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"
mkdir -p "$out_dir"
exec > >(tee "$out_file") 2>&1

echo "writers.sh: $rows rows, $runs runs of $seconds s per workload and side; $(nproc) cores; PostgreSQL $(q 'SHOW server_version')"
q "CREATE EXTENSION fdw"
q "CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw"
cols="usr text, body text, lang text, n int"
q "CREATE FOREIGN TABLE lsm_t (id bigint OPTIONS (key 'true'), $cols) SERVER lsm"
q "CREATE TABLE heap_t (id bigint PRIMARY KEY, $cols)"
for c in $(seq 1 8); do
	q "CREATE FOREIGN TABLE lsm_own$c (id bigint OPTIONS (key 'true'), $cols) SERVER lsm"
	q "CREATE TABLE heap_own$c (id bigint PRIMARY KEY, $cols)"
done
gen="SELECT g, 'u' || (g % 50000), md5(g::text) || md5((g + 1)::text), (ARRAY['en','fr','de','ja'])[g % 4 + 1], g % 1000 FROM generate_series(1, $rows) g"
q "COPY (${gen}) TO '$pg_base/work/rows.tsv'"
chown postgres "$pg_base/work/rows.tsv"
q "COPY lsm_t FROM '$pg_base/work/rows.tsv'"
q "COPY heap_t FROM '$pg_base/work/rows.tsv'"
q "VACUUM ANALYZE heap_t"
q "ANALYZE lsm_t"
q "CHECKPOINT"

# Scripts: INSERT of a new random key (above the loaded ones, disjoint per
# client, from 10^15 values: a repeat is unlikely, and would fail the run),
# UPDATE of a random loaded key; OWN inserts into the client's table.
w=$pg_base/work
for side in lsm heap; do
	cat >"$w/ins_$side.sql" <<EOF
\set r random(1, 999999999999999)
INSERT INTO ${side}_t VALUES (10000000000 + :client_id * 1000000000000000 + :r, 'u1', 'body', 'en', 1);
EOF
	cat >"$w/upd_$side.sql" <<EOF
\set id random(1, $rows)
UPDATE ${side}_t SET n = n + 1 WHERE id = :id;
EOF
	for c in $(seq 1 8); do
		cat >"$w/own${c}_$side.sql" <<EOF
\set r random(1, 999999999999999)
INSERT INTO ${side}_own$c VALUES (:r, 'u1', 'body', 'en', 1);
EOF
	done
done

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# percentile P FILE...: of the latencies (µs, column 3) in pgbench logs, in ms
percentile() {
	local p=$1

	shift
	cat "$@" | awk '{ print $3 }' | sort -n |
		awk -v p="$p" '{ v[NR] = $1 } END { i = int(NR * p / 100); if (i < 1) i = 1; printf "%.2f", v[i] / 1000 }'
}

# rss_of_backends: RSS and RssAnon (MB) of the client backends, median and max
rss_of_backends() {
	local pids pid r a rss=() anon=()

	pids=$(q "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name = 'pgbench'")
	for pid in $pids; do
		r=$(awk '/^VmRSS/ { print $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || true)
		a=$(awk '/^RssAnon/ { print $2 / 1024 }' "/proc/$pid/status" 2>/dev/null || true)
		# a backend that has just exited has no memory to report
		[ -n "$r" ] && [ -n "$a" ] || continue
		rss+=("$r")
		anon+=("$a")
	done
	[ "${#rss[@]}" -gt 0 ] || { echo "no backends seen"; return; }
	printf 'RSS median %.0f MB max %.0f MB, RssAnon median %.0f MB max %.0f MB (%d backends)' \
		"$(printf '%s\n' "${rss[@]}" | median)" "$(printf '%s\n' "${rss[@]}" | sort -g | tail -1)" \
		"$(printf '%s\n' "${anon[@]}" | median)" "$(printf '%s\n' "${anon[@]}" | sort -g | tail -1)" \
		"${#rss[@]}"
}

committed=0
updates=0
declare -A tps p50 p99 rssline

# one_run SIDE SCRIPT CLIENTS SYNC: one pgbench run; appends its TPS
one_run() {
	local side=$1 script=$2 clients=$3 sync=$4 logp out t ntx c pids=()

	logp=$w/log_${script}_$side
	rm -f "$logp".* "$logp"_*
	if [ "$script" = own ]; then
		# one pgbench per table (a prepared statement names its table)
		for c in $(seq 1 8); do
			(cd "$w" && PGOPTIONS="$PGOPTIONS -c synchronous_commit=$sync" \
				pgbench -n -M prepared -c 1 -j 1 -T "$seconds" -l \
				--log-prefix="${logp}_$c" -f "$w/own${c}_$side.sql" \
				>"$w/out_own$c" 2>&1) &
			pids+=($!)
		done
		# not a bare wait: the tee of our output is a child too
		for c in "${pids[@]}"; do
			wait "$c" || die "pgbench failed: $(cat "$w"/out_own*)"
		done
		t=$(cat "$w"/out_own* | awk '/^tps = / { s += $3 } END { print s }')
		tps[$side]+="$t "
		p50[$side]+="$(percentile 50 "${logp}"_*) "
		p99[$side]+="$(percentile 99 "${logp}"_*) "
		return
	fi
	out=$(cd "$w" && PGOPTIONS="$PGOPTIONS -c synchronous_commit=$sync" \
		pgbench -n -M prepared -c "$clients" -j "$clients" -T "$seconds" \
		--max-tries=10 -l --log-prefix="$logp" -f "$w/${script}_$side.sql" 2>&1 &
		pid=$!
		if [ -n "${WRITERS_PERF:-}" ] && [ "$side" = lsm ]; then
			(sleep 1
			 perf record -a -g -q -o "$WRITERS_PERF/perf-$script-${clients}c-$sync-$(date +%H%M%S).data" \
				-- sleep $((seconds - 3)) >/dev/null 2>&1) &
		fi
		if [ "$script" = ins ] && [ "$clients" -eq 8 ]; then
			sleep $((seconds - 1))
			rss_of_backends >"$w/rss_$side"
		fi
		wait $pid) || die "pgbench failed: $out"
	t=$(printf '%s\n' "$out" | awk '/^tps = / { print $3 }')
	ntx=$(printf '%s\n' "$out" | awk '/^number of transactions actually processed/ { print $NF }' | cut -d/ -f1)
	tps[$side]+="$t "
	p50[$side]+="$(percentile 50 "$logp".*) "
	p99[$side]+="$(percentile 99 "$logp".*) "
	if [ "$script" = ins ] && [ "$clients" -eq 8 ]; then
		rssline[$side]=$(cat "$w/rss_$side")
	fi
	if [ "$side" = lsm ]; then
		case $script in
			ins) committed=$((committed + ntx)) ;;
			upd) updates=$((updates + ntx)) ;;
		esac
	fi
}

workload() {
	local name=$1 script=$2 clients=$3 sync=$4 r side tl th

	case $name in
		*"${WRITERS_ONLY:-}"*) ;;
		*) return 0 ;;
	esac
	tps=([lsm]="" [heap]="")
	p50=([lsm]="" [heap]="")
	p99=([lsm]="" [heap]="")
	for ((r = 0; r < runs; r++)); do
		for side in lsm heap; do
			one_run "$side" "$script" "$clients" "$sync" >/dev/null
		done
	done
	tl=$(printf '%s\n' ${tps[lsm]} | median)
	th=$(printf '%s\n' ${tps[heap]} | median)
	printf '%-44s lsm %8.0f TPS (p50 %5s p99 %6s ms)  heap %8.0f TPS (p50 %5s p99 %6s ms)  %5.2fx\n' \
		"$name" "$tl" "$(printf '%s\n' ${p50[lsm]} | median)" "$(printf '%s\n' ${p99[lsm]} | median)" \
		"$th" "$(printf '%s\n' ${p50[heap]} | median)" "$(printf '%s\n' ${p99[heap]} | median)" \
		"$(awk -v a="$tl" -v b="$th" 'BEGIN { printf "%.2f", a / b }')"
	if [ "$script" = ins ] && [ "$clients" -eq 8 ]; then
		echo "    backend memory at the end of a run: lsm: ${rssline[lsm]}"
		echo "                                        heap: ${rssline[heap]}"
	fi
}

workload "INSERT, 1 client, sync on" ins 1 on
workload "INSERT, 8 clients, sync on" ins 8 on
workload "INSERT, 1 client, sync off" ins 1 off
workload "INSERT, 8 clients, sync off" ins 8 off
workload "UPDATE by key, 1 client, sync on" upd 1 on
workload "UPDATE by key, 8 clients, sync on" upd 8 on
workload "UPDATE by key, 8 clients, sync off" upd 8 off
workload "INSERT, 8 clients, own tables, sync off" own 8 off

# Answers: every committed INSERT is there, and every committed UPDATE.
got=$(q "SELECT count(*) FROM lsm_t")
[ "$got" -eq $((rows + committed)) ] ||
	die "lsm_t holds $got rows, expected $rows loaded + $committed inserted"
sum=$(q "SELECT sum(n) FROM lsm_t WHERE id <= $rows")
base=$(q "SELECT sum(g % 1000) FROM generate_series(1, $rows) g")
[ "$sum" -eq $((base + updates)) ] ||
	die "lsm_t's sum(n) is $sum, expected $base + $updates updates"
echo "checked: lsm_t holds the $rows loaded rows, the $committed inserted and the $updates updates"
echo "results saved in $out_file"

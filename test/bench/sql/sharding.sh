#!/usr/bin/env bash
#
# test/bench/sql/sharding.sh
#	The cost of the hop through a coordinator: the same rows in an
#	lsm_fdw table of one server, and in a table PARTITION BY HASH (id) of
#	that server whose two partitions are postgres_fdw tables on two shard
#	servers (lsm_fdw tables there; docs/scaling.md), all three clusters on
#	this machine, on 127.0.0.1.  pgbench -M prepared, read-only: a key
#	lookup of a random key and a value search of a random user (about 20
#	rows, on every shard), with 1 and 4 clients; the two sides alternate
#	run by run.  Per workload one line: median TPS of each side and their
#	ratio.  Also a write: single-row UPDATE by key, 1 client; and the
#	lookups again with use_remote_estimate off.
#	Results: docs/benchmarks-sql.md ("Through a coordinator").
#
# usage: sudo test/bench/sql/sharding.sh
#
# Run as root: it builds and installs the extension (holding the install
# lock test/run takes) and runs the servers as the postgres user, in a
# mktemp -d directory removed at the end.
#
# Environment:
#   SHARD_ROWS     rows (default 1000000)
#   SHARD_SECONDS  seconds of each pgbench run (default 10)
#   SHARD_RUNS     runs of each workload and side (default 3)
#   SHARD_PGPORT   port of the coordinator; the shards use the next two
#                  (default 54361)
#   PG_CONFIG      default /usr/lib/postgresql/15/bin/pg_config
#   BENCH_OUT      where the result file goes (default test/bench/results)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
rows=${SHARD_ROWS:-1000000}
seconds=${SHARD_SECONDS:-10}
runs=${SHARD_RUNS:-3}
port=${SHARD_PGPORT:-54361}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
out_dir=${BENCH_OUT:-$root/test/bench/results}
out_file=$out_dir/sharding-$(date +%Y%m%d-%H%M%S).txt
pg_base=""
started=()
bench=sharding.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

# q PORT SQL: one statement on the server of PORT, tuples unaligned
q() {
	psql -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -c "$2"
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	local rc=$? d

	set +e
	trap '' INT TERM
	for d in "${started[@]}"; do
		as_pg "$pgbin/pg_ctl" -D "$d" -m immediate -w -t 60 stop >/dev/null 2>&1
	done
	[ -n "$pg_base" ] && rm -rf "$pg_base"
	[ "$rc" -ne 0 ] && echo "test/bench/sql/sharding.sh: stopped (status $rc); clusters removed" >&2
	exit "$rc"
}

require_root
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
build_and_install

pg_base=$(mktemp -d "${TMPDIR:-/tmp}/lsm_fdw_sharding.XXXXXX")
chmod 755 "$pg_base"
mkdir "$pg_base/work"
chown postgres:postgres "$pg_base/work"

# cluster NAME PORT: initdb and start a server on 127.0.0.1:PORT; a quarter
# of the usual shared_buffers each, as three share the machine
cluster() {
	local d=$pg_base/$1

	mkdir "$d"
	chown postgres:postgres "$d"
	chmod 700 "$d"
	as_pg "$pgbin/initdb" -D "$d" -A trust -E UTF8 --no-locale -U postgres \
		>"$pg_base/work/initdb-$1.log" 2>&1 || die "initdb $1 failed"
	cat >>"$d/postgresql.conf" <<-EOF
		listen_addresses = '127.0.0.1'
		unix_socket_directories = ''
		port = $2
		shared_buffers = 256MB
		max_wal_size = 16GB
		checkpoint_timeout = 30min
		max_prepared_transactions = 10
		jit = off
	EOF
	started+=("$d")
	as_pg "$pgbin/pg_ctl" -D "$d" -l "$pg_base/work/$1.log" -w -t 60 start \
		>/dev/null || die "the server $1 did not start"
}

coord=$port
shard1=$((port + 1))
shard2=$((port + 2))
cluster coord "$coord"
cluster shard1 "$shard1"
cluster shard2 "$shard2"
export PGUSER=postgres PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"
mkdir -p "$out_dir"
exec > >(tee "$out_file") 2>&1

echo "sharding.sh: $rows rows, $runs runs of $seconds s per workload and side; $(nproc) cores; PostgreSQL $(q "$coord" 'SHOW server_version'); coordinator and 2 shards on this machine"
cols="id bigint OPTIONS (key 'true'), usr text, body text, lang text, n int"
gen="SELECT g, 'u' || (g % 50000), md5(g::text) || md5((g + 1)::text), (ARRAY['en','fr','de','ja'])[g % 4 + 1], g % 1000 FROM generate_series(1, $rows) g"
for p in "$coord" "$shard1" "$shard2"; do
	q "$p" "CREATE EXTENSION fdw"
	q "$p" "CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw"
done
q "$shard1" "CREATE FOREIGN TABLE items ($cols) SERVER lsm"
q "$shard2" "CREATE FOREIGN TABLE items ($cols) SERVER lsm"
q "$coord" "CREATE FOREIGN TABLE local_t ($cols) SERVER lsm"
q "$coord" "CREATE EXTENSION postgres_fdw"
for s in 1 2; do
	sp=$((port + s))
	q "$coord" "CREATE SERVER shard$s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '$sp', dbname 'postgres', async_capable 'true', use_remote_estimate 'true', fetch_size '1000', batch_size '1000')"
	q "$coord" "CREATE USER MAPPING FOR postgres SERVER shard$s OPTIONS (user 'postgres')"
done
q "$coord" "CREATE TABLE sharded_t (id bigint, usr text, body text, lang text, n int) PARTITION BY HASH (id)"
q "$coord" "CREATE FOREIGN TABLE sharded_p1 PARTITION OF sharded_t FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER shard1 OPTIONS (table_name 'items')"
q "$coord" "CREATE FOREIGN TABLE sharded_p2 PARTITION OF sharded_t FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER shard2 OPTIONS (table_name 'items')"
t0=$(date +%s.%N)
q "$coord" "COPY (${gen}) TO '$pg_base/work/rows.tsv'"
q "$coord" "COPY local_t FROM '$pg_base/work/rows.tsv'"
t1=$(date +%s.%N)
q "$coord" "COPY sharded_t FROM '$pg_base/work/rows.tsv'"
t2=$(date +%s.%N)
printf 'load (COPY of %d rows): one server %.1f s, through the coordinator %.1f s\n' \
	"$rows" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
q "$coord" "ANALYZE local_t"
q "$coord" "ANALYZE sharded_t"
for p in "$coord" "$shard1" "$shard2"; do
	q "$p" "CHECKPOINT"
done
echo "a key lookup through the coordinator:"
q "$coord" "EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM sharded_t WHERE id = 42" | sed 's/^/    /'
echo "and on its shard:"
q "$shard1" "EXPLAIN (COSTS OFF) SELECT * FROM items WHERE id = 42" | sed 's/^/    /'

w=$pg_base/work
for side in local sharded; do
	cat >"$w/get_$side.sql" <<EOF
\set id random(1, $rows)
SELECT * FROM ${side}_t WHERE id = :id;
EOF
	cat >"$w/vs_$side.sql" <<EOF
\set u random(0, 49999)
SELECT id, n FROM ${side}_t WHERE usr = 'u' || :u;
EOF
	cat >"$w/upd_$side.sql" <<EOF
\set id random(1, $rows)
UPDATE ${side}_t SET n = n + 1 WHERE id = :id;
EOF
done

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A tps

workload() {
	local name=$1 script=$2 clients=$3 r side out tl ts

	tps=([local]="" [sharded]="")
	for ((r = 0; r < runs; r++)); do
		for side in local sharded; do
			out=$(cd "$w" && pgbench -h 127.0.0.1 -p "$coord" -n -M prepared \
				-c "$clients" -j "$clients" -T "$seconds" -f "$w/${script}_$side.sql" 2>&1) ||
				die "pgbench failed: $out"
			tps[$side]+="$(printf '%s\n' "$out" | awk '/^tps = / { print $3 }') "
		done
	done
	tl=$(printf '%s\n' ${tps[local]} | median)
	ts=$(printf '%s\n' ${tps[sharded]} | median)
	printf '%-36s one server %8.0f TPS  through the coordinator %8.0f TPS  %5.2fx\n' \
		"$name" "$tl" "$ts" "$(awk -v a="$ts" -v b="$tl" 'BEGIN { printf "%.2f", a / b }')"
}

workload "key lookup, 1 client" get 1
workload "key lookup, 4 clients" get 4
workload "value search, 1 client" vs 1
workload "value search, 4 clients" vs 4
workload "UPDATE by key, 1 client" upd 1
# the same without use_remote_estimate: no EXPLAIN on the shards to plan
for s in 1 2; do
	q "$coord" "ALTER SERVER shard$s OPTIONS (SET use_remote_estimate 'false')"
done
workload "key lookup, 1 client, no remote est." get 1
workload "key lookup, 4 clients, no remote est." get 4
workload "value search, 4 clients, no r. est." vs 4

# Answers: both sides hold the same rows and the same sum of n
a=$(q "$coord" "SELECT count(*) FROM local_t")
b=$(q "$coord" "SELECT count(*) FROM sharded_t")
[ "$a" -eq "$rows" ] && [ "$b" -eq "$rows" ] || die "row counts: one server $a, sharded $b, expected $rows"
echo "checked: both sides hold the $rows rows"
echo "results saved in $out_file"

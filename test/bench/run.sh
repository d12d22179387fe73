#!/usr/bin/env bash
#
# test/bench/run.sh
#	Builds db_bench and runs the standard comparison (our engine in its
#	exclusive and shared lock modes, RocksDB, LevelDB) at 1M keys, and at 10M
#	keys on request, with --repeat=3.  Results: docs/benchmarks.md.
#
# usage: test/bench/run.sh [1m|10m|all] [extra db_bench options...]
#
#	1m   (default) 1,000,000 keys
#	10m  10,000,000 keys (about 1.2 GB per store, four stores at once)
#	all  both
#
# Output goes to the terminal and to
# $BENCH_OUT/db_bench-<keys>-<yyyymmdd-hhmmss>.txt (BENCH_OUT defaults to
# test/bench/results).  Stores live under $BENCH_DB (default
# /tmp/lsm_db_bench) and are removed at the start and end of each run.
#
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
size=${1:-1m}
[ $# -gt 0 ] && shift

case "$size" in
	1m) nums="1000000" ;;
	10m) nums="10000000" ;;
	all) nums="1000000 10000000" ;;
	*)
		echo "usage: $0 [1m|10m|all] [extra db_bench options...]" >&2
		exit 2
		;;
esac

out=${BENCH_OUT:-$here/results}
db=${BENCH_DB:-/tmp/lsm_db_bench}
mkdir -p "$out"

cd "$root"
make bench
bin="$root/test/bench/db_bench"

stamp=$(date +%Y%m%d-%H%M%S)
for num in $nums; do
	file="$out/db_bench-$num-$stamp.txt"
	echo "== db_bench --num=$num -> $file"
	if ! "$bin" --num="$num" --repeat=3 --filter_fpr --many_sstables \
		--db="$db" "$@" 2>&1 | tee "$file"; then
		echo "db_bench --num=$num FAILED; see $file" >&2
		exit 1
	fi
done
echo "results in $out"

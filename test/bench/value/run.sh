#!/usr/bin/env bash
#
# test/bench/value/run.sh
#	Builds value_bench and runs the value search experiments of the Bloom
#	filter hierarchy paper (seed 000, section IV) with every search strategy
#	of the engine, saving the output.
#
# usage: test/bench/value/run.sh [quick|1m|10m|all] [extra value_bench options...]
#
#	quick  validation pass: 100k rows, 20 searches (about a minute)
#	1m     (default) every experiment at 1,000,000 rows (under ~25 minutes)
#	10m    fig8, table2 and fig10 at 10,000,000 rows (about 1 GB of disk
#	       per store, one store at a time; long: 13 stores are loaded)
#	all    1m, then 10m
#
# Output goes to the terminal and to
# $BENCH_OUT/value-<mode>-<yyyymmdd-hhmmss>.txt (BENCH_OUT defaults to
# test/bench/results); the file starts with the run.sh command line, then
# value_bench's header (command, nproc, CPU model, settings).  Stores live
# under $BENCH_DB/value_bench.<pid> (BENCH_DB defaults to /tmp) and are
# removed as soon as they are measured.  Plot with test/bench/value/plot.sh.
#
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mode=${1:-1m}
[ $# -gt 0 ] && shift

case "$mode" in
	quick) modes="quick" ;;
	1m) modes="1m" ;;
	10m) modes="10m" ;;
	all) modes="1m 10m" ;;
	*)
		echo "usage: $0 [quick|1m|10m|all] [extra value_bench options...]" >&2
		exit 2
		;;
esac

out=${BENCH_OUT:-$root/test/bench/results}
db=${BENCH_DB:-/tmp}
mkdir -p "$out"

cd "$root"
make value-bench
bin="$root/test/bench/value/value_bench"

stamp=$(date +%Y%m%d-%H%M%S)
for m in $modes; do
	case "$m" in
		quick) args=(--quick) ;;
		1m) args=(--num=1000000) ;;
		10m) args=(--num=10000000 --experiments=fig8,table2,fig10) ;;
	esac
	file="$out/value-$m-$stamp.txt"
	echo "== value_bench ${args[*]} $* -> $file"
	{
		echo "run.sh:   $0 $mode $*"
		echo "load:     $(cat /proc/loadavg)"
	} >"$file"
	if ! "$bin" "${args[@]}" --db="$db" "$@" 2>&1 | tee -a "$file"; then
		echo "value_bench ${args[*]} FAILED; see $file" >&2
		exit 1
	fi
done
echo "results in $out"

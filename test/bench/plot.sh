#!/usr/bin/env bash
#
# test/bench/plot.sh
#	Draws a bar chart of ops/s per workload and engine from a saved db_bench
#	output (its summary table), with gnuplot.
#
# usage: test/bench/plot.sh RESULT.txt OUT.png [TITLE]
#
#	RESULT.txt  a db_bench output, e.g. test/bench/results/db_bench-1000000-*.txt
#	            (if a glob matches several, pass the one you want)
#	OUT.png     the chart; the directory must exist
#	TITLE       chart title (default: "db_bench, <N> keys" from the header)
#
# The summary table gives micros/op per engine; the chart shows
# 1e6 / micros/op on a logarithmic axis (the workloads span three orders of
# magnitude), one group of bars per workload, one bar per engine, the value
# printed above each bar.  A "-" (engine did not run the workload) is left
# out.  Needs gnuplot (Debian: gnuplot-nox).
#
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 RESULT.txt OUT.png [TITLE]" >&2
	exit 2
fi
in=$1
out=$2
if ! command -v gnuplot >/dev/null; then
	echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2
	exit 1
fi
if ! grep -q '^summary: micros/op' "$in"; then
	echo "$0: no summary table in $in" >&2
	exit 1
fi
num=$(sed -n 's/^entries: *\([0-9]*\),.*/\1/p' "$in" | head -n 1)
title=${3:-"db_bench, ${num:-?} keys: ops/s (higher is better)"}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The table: a header "workload e1 e2 ... e1/e2 ...", then one row per
# workload until a line that does not look like a row.  Rewrite it as
# "workload ops1 ops2 ..." with "-" where an engine has no figure.
awk '
	/^summary: micros\/op/ { intable = 1; next }
	intable == 1 {
		for (i = 2; i <= NF; i++)
			if ($i !~ /\//)
				neng = i - 1;
		printf "workload";
		for (i = 2; i <= neng + 1; i++)
			printf " %s", $i;
		printf "\n";
		intable = 2;
		next
	}
	intable == 2 {
		if (NF < neng + 1 || $2 !~ /^([0-9.]+|-)$/)
			exit;
		printf "%s", $1;
		for (i = 2; i <= neng + 1; i++)
			printf " %s", ($i == "-" ? "-" : sprintf("%.0f", 1e6 / $i));
		printf "\n";
	}
' "$in" >"$tmp/data"

tail -n +2 "$tmp/data" >"$tmp/rows"	# the labels' input: no header line
nengines=$(($(head -n 1 "$tmp/data" | wc -w) - 1))
nrows=$(($(wc -l <"$tmp/data") - 1))
if [ "$nrows" -lt 1 ]; then
	echo "$0: empty summary table in $in" >&2
	exit 1
fi

# one bar per engine: column i+1 of the data file; labels above the bars
gap=1
width=$(awk -v n="$nengines" -v g="$gap" 'BEGIN { print 1 / (n + g) }')
plots=""
labels=""
for i in $(seq 1 "$nengines"); do
	col=$((i + 1))
	sep=${plots:+, }
	plots="$plots$sep'$tmp/data' using $col:xtic(1) title columnheader($col)"
	off=$(awk -v i="$i" -v n="$nengines" -v w="$width" \
		'BEGIN { print (i - 1 - (n - 1) / 2) * w }')
	labels="$labels, '$tmp/rows' using (\$0 + $off):$col:(fmt(\$$col)) with labels rotate by 90 left offset 0,0.3 font ',8' notitle"
done

gnuplot <<EOF
set terminal pngcairo size 1400,700 font 'Sans,10' noenhanced
set output '$out'
fmt(v) = v >= 1e6 ? sprintf('%.1fM', v / 1e6) : sprintf('%.0fk', v / 1e3)
set title "$title"
set style data histogram
set style histogram clustered gap $gap
set style fill solid 0.85 border -1
set boxwidth 1
set logscale y
set yrange [10000:*]
set format y '%.0s%c'
set ylabel 'ops/s (log scale)'
set grid ytics
set key top left
set xtics rotate by -30 left
set datafile missing '-'
set offsets 0, 0, 0, 0
plot $plots$labels
EOF
echo "$out"

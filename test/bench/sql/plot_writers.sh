#!/usr/bin/env bash
#
# test/bench/sql/plot_writers.sh
#	Draws a saved test/bench/sql/writers.sh output as two bars per
#	workload, lsm_fdw's TPS and the heap's, with the lsm/heap ratio above
#	each pair, with gnuplot.
#
# usage: test/bench/sql/plot_writers.sh RESULT.txt OUT.png [TITLE]
#
#	RESULT.txt  an output of writers.sh, e.g. test/bench/results/writers-*.txt
#	OUT.png     the chart; the directory must exist
#	TITLE       chart title (default from the output's first line)
#
# The axis is logarithmic (synchronous commits run at a tenth of the rate
# of the others).  Needs gnuplot (Debian: gnuplot-nox).
#
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 RESULT.txt OUT.png [TITLE]" >&2
	exit 2
fi
in=$1
out=$2
command -v gnuplot >/dev/null || {
	echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2
	exit 1
}
head=$(sed -n 's/^writers.sh: //p' "$in" | head -n 1)
title=${3:-"Single-row transactions on one table, lsm_fdw against a heap table (${head:-?})"}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "label" lsm-TPS heap-TPS ratio, from the result lines
awk '
	/ lsm +[0-9]+ TPS .* heap +[0-9]+ TPS / {
		name = substr($0, 1, 44); sub(/ +$/, "", name);
		for (i = 1; i <= NF; i++) {
			if ($i == "lsm" && $(i + 2) == "TPS") l = $(i + 1);
			if ($i == "heap" && $(i + 2) == "TPS") h = $(i + 1);
		}
		r = $NF; sub(/x$/, "", r);
		gsub(/"/, "", name);
		printf "\"%s\" %s %s %s\n", name, l, h, r
	}
' "$in" >"$tmp/data"
[ -s "$tmp/data" ] || {
	echo "$0: nothing to plot in $in" >&2
	exit 1
}

gnuplot <<EOF
set terminal pngcairo size 1400,700 font 'Sans,10' noenhanced
set output '$out'
set title "$title"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [100:*]
set ylabel 'transactions per second (log scale)'
set grid ytics
set key top left
set xtics rotate by -25 left
plot '$tmp/data' using 2:xtic(1) title 'lsm_fdw' lc rgb '#4477aa', \
     '' using 3 title 'heap + primary key' lc rgb '#bbbbbb', \
     '' using (\$0):(\$2 > \$3 ? \$2 : \$3):(sprintf('%.2fx', \$4)) with labels offset 0,1 font ',9' notitle
EOF
echo "$out"

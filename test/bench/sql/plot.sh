#!/usr/bin/env bash
#
# test/bench/sql/plot.sh
#	Draws a saved output of test/bench/sql/run.sh or of writers.sh, with
#	gnuplot.
#
# usage: test/bench/sql/plot.sh RESULT.txt OUT.png [TITLE]
#
#	RESULT.txt  an output of run.sh (test/bench/results/sql-small-*.txt) or
#	            of writers.sh (test/bench/results/writers-*.txt)
#	OUT.png     the chart; the directory must exist
#	TITLE       chart title (default from the output's first line)
#
# run.sh: one bar per comparison, how many times better lsm_fdw did than
# the heap variant (or than its own full scan), in the direction where
# above 1 favours lsm_fdw: TPS lsm/heap for point selects, time heap/lsm
# for COPY, the non-key equality and the join, and bytes heap/lsm on disk.
# The axis is logarithmic (the ratios span 0.3x to thousands), with a line
# at 1.
#
# writers.sh: two bars per workload, lsm_fdw's TPS and the heap's, with the
# lsm/heap ratio above each pair; logarithmic too (synchronous commits run
# at a tenth of the rate of the others).
#
# Needs gnuplot (Debian: gnuplot-nox).
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
if grep -q '^writers.sh: ' "$in"; then
	kind=writers
	head=$(sed -n 's/^writers.sh: //p' "$in" | head -n 1)
	title=${3:-"Single-row transactions on one table, lsm_fdw against a heap table ($head)"}
else
	grep -q '^=== summary' "$in" || {
		echo "$0: neither a writers.sh output nor a summary in $in" >&2
		exit 1
	}
	kind=run
	rows=$(sed -n 's/^rows: *queries on \([0-9]*\);.*/\1/p' "$in" | head -n 1)
	title=${3:-"lsm_fdw against heap tables, ${rows:-?} rows: times better (above 1: lsm_fdw better)"}
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$kind" = writers ]; then
	# "label" lsm-TPS heap-TPS ratio, from the result lines
	awk '
		/ lsm +[0-9]+ TPS .* heap +[0-9]+ TPS / {
			name = substr($0, 1, 44); sub(/ +$/, "", name); gsub(/"/, "", name);
			for (i = 1; i <= NF; i++) {
				if ($i == "lsm" && $(i + 2) == "TPS") l = $(i + 1);
				if ($i == "heap" && $(i + 2) == "TPS") h = $(i + 1);
			}
			r = $NF; sub(/x$/, "", r);
			printf "\"%s\" %s %s %s\n", name, l, h, r
		}
	' "$in" >"$tmp/data"
else
	# label value, from the summary lines
	awk '
		/^=== summary/ { on = 1; next }
		!on { next }
		/^point_select_/ {
			for (i = 1; i <= NF; i++) if ($i == "lsm/heap") v = $(i + 1);
			sub(/x$/, "", v); print "point-select-" substr($1, 14), v; next
		}
		/^copy_.* vs_/ {
			for (i = 1; i <= NF; i++) if ($i == "time" && $(i - 1) == "heap/lsm") v = $(i + 1);
			sub(/x$/, "", v);
			if (v != "") print "COPY-" substr($1, 6) "-" substr($2, 4), v; next
		}
		/^disk_compacted/ {
			for (i = 1; i <= NF; i++) if ($i == "lsm/heap") v = $(i + 1);
			sub(/x$/, "", v); print "disk-" substr($2, 4), 1 / v; next
		}
		/^usr_eq_.* heap_|^usr_eq_.* lsm_off/ {
			for (i = 1; i <= NF; i++) if ($i ~ /\/lsm_auto$/) v = $(i + 1);
			sub(/x$/, "", v); print "usr=-" substr($1, 8) "-vs-" $5, v; next
		}
		/^join_1000_keys_/ {
			for (i = 1; i <= NF; i++) if ($i == "heap/lsm") v = $(i + 1);
			sub(/x$/, "", v); print "join-" substr($1, 16), v; next
		}
		/^insert_.* vs_/ {
			for (i = 1; i <= NF; i++) if ($i == "time" && $(i - 1) == "heap/lsm") v = $(i + 1);
			sub(/x$/, "", v);
			if (v != "") print "INSERT-SELECT-" substr($1, 8) "-" substr($2, 4), v; next
		}
		/^scan_/ {
			for (i = 1; i <= NF; i++) if ($i == "heap/lsm") v = $(i + 1);
			sub(/x$/, "", v); print "scan-" substr($1, 6) "-" $2, v; next
		}
	' "$in" >"$tmp/data"
fi
[ -s "$tmp/data" ] || {
	echo "$0: nothing to plot in $in" >&2
	exit 1
}

if [ "$kind" = writers ]; then
	plot="set boxwidth 0.9
set yrange [100:*]
set ylabel 'transactions per second (log scale)'
set key top left
set xtics rotate by -25 left
plot '$tmp/data' using 2:xtic(1) title 'lsm_fdw' lc rgb '#4477aa', \\
     '' using 3 title 'heap + primary key' lc rgb '#bbbbbb', \\
     '' using (\$0):(\$2 > \$3 ? \$2 : \$3):(sprintf('%.2fx', \$4)) with labels offset 0,1 font ',9' notitle"
else
	plot="set boxwidth 0.8
set yrange [0.1:*]
set ylabel 'times better (log scale)'
set key off
set xtics rotate by -35 left
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
plot '$tmp/data' using 2:xtic(1) lc rgb '#4477aa', \\
     '' using 0:2:(\$2 < 10 ? sprintf('%.2f', \$2) : sprintf('%.0f', \$2)) with labels offset 0,0.7 font ',8'"
fi
gnuplot <<EOF
set terminal pngcairo size 1400,700 font 'Sans,10' noenhanced
set output '$out'
set title "$title"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set grid ytics
$plot
EOF
echo "$out"

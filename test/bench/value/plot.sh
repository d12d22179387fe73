#!/usr/bin/env bash
#
# test/bench/value/plot.sh
#	Draws the figures of the value search experiments (Bloom filter
#	hierarchy paper, seed 000, section IV) from a saved value_bench output,
#	with gnuplot.
#
# usage: test/bench/value/plot.sh RESULT.txt [OUTDIR]
#
#	RESULT.txt  a value_bench output (test/bench/results/value-*.txt)
#	OUTDIR      where the PNGs go (default docs/img under the repository)
#
# Writes, for the experiments the file holds:
#	value-fig8.png     median us/search per strategy, per row count and
#	                   present/absent values (log scale)
#	value-fig10.png    % of leaf filters a tree search probes against d,
#	                   one line per m
#	value-fig11.png    us/search against m: tree for every d, flat, leaves
#	                   and scan (at d=3, or the first d)
#	value-fig12.png    leaf filters and internal nodes a tree search probes
#	                   against m, per d
#	value-fig7.png     bytes of the stored internal nodes against d, per m
#	value-fig13.png    us/search against the value domain, per strategy
#	value-table3.png   the tree search's Table III counters against the
#	                   value domain
#	value-flat8k.png   us/search per strategy at ~8K leaves
# Needs gnuplot (Debian: gnuplot-nox).
#
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 RESULT.txt [OUTDIR]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
in=$1
outdir=${2:-$root/docs/img}
if ! command -v gnuplot >/dev/null; then
	echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2
	exit 1
fi
if ! grep -q '^value_bench:' "$in"; then
	echo "$0: $in is not a value_bench output" >&2
	exit 1
fi
mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The awk helpers: kv() reads "key=value" tokens of the current line.
awklib='
	function kv(key,    i, n) {
		n = length(key) + 1;
		for (i = 1; i <= NF; i++)
			if (substr($i, 1, n) == key "=")
				return substr($i, n + 1);
		return "";
	}
	function is_result(tag) {
		return $1 == tag && kv("strategy") != "" && $0 !~ / ratio /;
	}
'
strats="tree flat leaves scan"
common="set terminal pngcairo size 1100,650 font 'Sans,10' noenhanced
set grid
set key outside right top
set datafile missing '-'"

#
# Fig. 8: clustered bars, a group per (rows, query), a bar per strategy.
#
awk "$awklib"'
	is_result("fig8") {
		g = kv("rows") " " kv("query");
		if (!(g in seen)) { seen[g] = 1; order[n++] = g }
		us[g, kv("strategy")] = kv("us/search");
	}
	END {
		if (n == 0) exit;
		print "group tree flat leaves scan";
		for (i = 0; i < n; i++) {
			g = order[i];
			split(g, p, " ");
			printf "\"%s rows, %s\"", p[1], p[2];
			split("tree flat leaves scan", s, " ");
			for (j = 1; j <= 4; j++)
				printf " %s", ((g, s[j]) in us) ? us[g, s[j]] : "-";
			printf "\n";
		}
	}' "$in" >"$tmp/fig8"
if [ -s "$tmp/fig8" ]; then
	gnuplot <<EOF
$common
set output '$outdir/value-fig8.png'
set title 'Fig. 8: time to find one value (median us/search, log scale; unique values)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set ylabel 'us/search'
plot for [c=2:5] '$tmp/fig8' using c:xtic(1) title columnheader(c)
EOF
	echo "$outdir/value-fig8.png"
fi

#
# Figs. 10, 11, 12, 7 from the fig10 lines (present values).
#
awk "$awklib"'
	is_result("fig10") && kv("query") == "present" {
		print kv("m"), kv("d"), kv("strategy"), kv("us/search"),
			kv("pct_leaves"), kv("leaves"), kv("nodes"), kv("node_kb");
	}' "$in" >"$tmp/fig10"
if [ -s "$tmp/fig10" ]; then
	ms=$(awk '{ print $1 }' "$tmp/fig10" | sort -n -u)
	ds=$(awk '{ print $2 }' "$tmp/fig10" | sort -n -u)
	dref=$(echo "$ds" | grep -x 3 || echo "$ds" | head -n 1)
	for m in $ms; do
		awk -v m="$m" '$1 == m && $3 == "tree" { print $2, $5, $8 }' \
			"$tmp/fig10" | sort -n >"$tmp/f10-m$m"
	done
	for d in $ds; do
		awk -v d="$d" '$2 == d && $3 == "tree" { print $1, $4, $6, $7 }' \
			"$tmp/fig10" | sort -n >"$tmp/f10-d$d"
	done
	for s in $strats; do
		awk -v d="$dref" -v s="$s" '$2 == d && $3 == s { print $1, $4 }' \
			"$tmp/fig10" | sort -n >"$tmp/f10-s$s"
	done

	p10=""
	p7=""
	for m in $ms; do
		p10="$p10${p10:+, }'$tmp/f10-m$m' using 1:2 with linespoints lw 2 title 'm=$m'"
		p7="$p7${p7:+, }'$tmp/f10-m$m' using 1:(\$3/1024) with linespoints lw 2 title 'm=$m'"
	done
	p11=""
	p12=""
	c=0
	for d in $ds; do
		c=$((c + 1))
		p11="$p11${p11:+, }'$tmp/f10-d$d' using 1:2 with linespoints lw 2 lc $c title 'tree d=$d'"
		p12="$p12${p12:+, }'$tmp/f10-d$d' using 1:3 with linespoints lw 2 lc $c title 'leaves probed, d=$d'"
		p12="$p12, '$tmp/f10-d$d' using 1:4 with linespoints lw 2 lc $c dt 2 title 'internal nodes probed, d=$d'"
	done
	for s in flat leaves scan; do
		c=$((c + 1))
		if [ -s "$tmp/f10-s$s" ]; then
			p11="$p11, '$tmp/f10-s$s' using 1:2 with linespoints lw 2 lc $c dt 3 title '$s (d=$dref)'"
		fi
	done
	gnuplot <<EOF
$common
set output '$outdir/value-fig10.png'
set title 'Fig. 10: leaf filters probed by a tree search (% of the leaves), present unique values'
set xlabel 'hierarchy order d'
set ylabel '% of leaf filters probed'
set yrange [0:*]
plot $p10
set output '$outdir/value-fig7.png'
set title 'Fig. 7: bytes of the stored internal nodes (non-leaf filters)'
set ylabel 'MiB'
plot $p7
set output '$outdir/value-fig11.png'
set title 'Fig. 11: time to find one value against the filter size m (median, log-log)'
set xlabel 'value filter bits m'
set ylabel 'us/search'
set logscale xy
set yrange [*:*]
plot $p11
set output '$outdir/value-fig12.png'
set title 'Fig. 12: filters probed by a tree search against m (mean per search)'
set ylabel 'filters probed'
set logscale x
unset logscale y
set yrange [0:*]
plot $p12
EOF
	echo "$outdir/value-fig10.png $outdir/value-fig7.png $outdir/value-fig11.png $outdir/value-fig12.png"
fi

#
# Fig. 13 and Table III.
#
awk "$awklib"'
	is_result("fig13") {
		print kv("domain_pct"), kv("strategy"), kv("us/search");
	}' "$in" >"$tmp/fig13"
if [ -s "$tmp/fig13" ]; then
	p13=""
	for s in $strats; do
		awk -v s="$s" '$2 == s { print $1, $3 }' "$tmp/fig13" | sort -n \
			>"$tmp/f13-$s"
		if [ -s "$tmp/f13-$s" ]; then
			p13="$p13${p13:+, }'$tmp/f13-$s' using 1:2 with linespoints lw 2 title '$s'"
		fi
	done
	gnuplot <<EOF
$common
set output '$outdir/value-fig13.png'
set title 'Fig. 13: time to find every row of one value against the value domain (median, log scale)'
set xlabel 'value domain (% of the rows)'
set ylabel 'us/search'
set logscale y
plot $p13
EOF
	echo "$outdir/value-fig13.png"
fi
awk "$awklib"'
	$1 == "table3" && kv("leaves_found") != "" {
		print kv("domain_pct"), kv("leaves_found"), kv("sstables_found"),
			kv("leaves_scanned");
	}' "$in" | sort -n >"$tmp/table3"
if [ -s "$tmp/table3" ]; then
	gnuplot <<EOF
$common
set output '$outdir/value-table3.png'
set title 'Table III: a tree search per value domain (means per search)'
set xlabel 'value domain (% of the rows)'
set ylabel 'leaf filters / SSTables'
set logscale y
plot '$tmp/table3' using 1:2 with linespoints lw 2 title 'leaf filters positive', \
	'$tmp/table3' using 1:3 with linespoints lw 2 title 'SSTables with matches', \
	'$tmp/table3' using 1:4 with linespoints lw 2 title 'leaf filters probed'
EOF
	echo "$outdir/value-table3.png"
fi

#
# Flat at ~8K leaves: bars per query, one per strategy.
#
awk "$awklib"'
	is_result("flat8k") {
		q = kv("query");
		if (!(q in seen)) { seen[q] = 1; order[n++] = q }
		us[q, kv("strategy")] = kv("us/search");
	}
	END {
		if (n == 0) exit;
		print "query tree flat leaves scan";
		for (i = 0; i < n; i++) {
			q = order[i];
			printf "%s", q;
			split("tree flat leaves scan", s, " ");
			for (j = 1; j <= 4; j++)
				printf " %s", ((q, s[j]) in us) ? us[q, s[j]] : "-";
			printf "\n";
		}
	}' "$in" >"$tmp/flat8k"
if [ -s "$tmp/flat8k" ]; then
	shape=$(awk "$awklib"'$1 == "flat8k" && $2 == "store" { print kv("leaves") " leaves, m=" kv("m") ", " kv("rows") " rows"; exit }' "$in")
	gnuplot <<EOF
$common
set output '$outdir/value-flat8k.png'
set title 'Value search at $shape: median us/search (log scale); target flat <= 5 us'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [1:*]
set ylabel 'us/search'
set arrow from graph 0, first 5 to graph 1, first 5 nohead dt 2 lc rgb 'red'
plot for [c=2:5] '$tmp/flat8k' using c:xtic(1) title columnheader(c)
EOF
	echo "$outdir/value-flat8k.png"
fi

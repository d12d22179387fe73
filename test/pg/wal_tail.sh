#!/usr/bin/env bash
# test/pg/wal_tail.sh: a store whose write-ahead log ends in a torn or
# damaged record, with a real server.
#
# What an OS crash or a power loss leaves: the newest .log of a table cut in
# the middle of its last record, or one byte of that record changed.  The
# cluster is stopped, the log damaged, the cluster started; then:
#
#   - the table opens and reads every batch but the damaged one;
#   - an INSERT commits, and new sessions read the table with the new row
#     (before, the first writer appended after the damaged bytes and every
#     new session failed with "corrupt record ... followed by valid
#     records");
#   - the server log says what was discarded: the table, the log file, the
#     offset and the bytes;
#   - lsm_counters shows the store's record of it in every session, and
#     lsm_verify returns true with a WARNING that repeats it.
#
# One case per damage: the last record cut after its first byte, in its
# middle, before its last byte, and a byte of its payload flipped.
# Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_wal_tail

# records_end FILE: the offset where the records of log FILE end (the
# zeros written ahead of them begin; docs/format.md): each record is a
# 9-byte header, length at byte 4 (u32, little-endian), type at byte 8.
records_end() {
	local off=0 len type size

	size=$(stat -c %s "$1")
	while [ $((off + 9)) -le "$size" ]; do
		type=$(od -An -tu1 -j $((off + 8)) -N1 "$1" | tr -d ' ')
		[ "$type" = 0 ] && break
		len=$(od -An -tu4 -j $((off + 4)) -N4 "$1" | tr -d ' ')
		off=$((off + 9 + len))
	done
	echo "$off"
}

# nonzero_end FILE FROM: the offset after the last byte of FILE that is
# not zero, or FROM if none after FROM is.
nonzero_end() {
	od -An -v -tu1 -w1 -j "$2" "$1" |
		awk -v from="$2" '$1 != 0 { last = NR } END { print from + last + 0 }'
}

# flip FILE OFFSET: XORs the byte at OFFSET of FILE with 0x5a, in place.
flip() {
	local byte

	byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059  # the format is the byte
	printf "\\$(printf %03o $((byte ^ 0x5a)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# Stops the cluster (fast shutdown: sessions end, stores close).
pg_stop() {
	"$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null
}

# run_case NAME DAMAGE: a fresh table of 5 committed batches (one INSERT of
# 3 rows each, big memtable: all in the log) and a 6th, the victim, of 5
# rows; DAMAGE is "cut:<bytes into the record>" or "flip:<byte of it>".
run_case() {
	local name=$1 damage=$2 dir log start end len off bytes msgs out

	sql "$db" "DROP FOREIGN TABLE IF EXISTS t" \
		"CREATE FOREIGN TABLE t (id int OPTIONS (key 'true'), v text)
		   SERVER lsm OPTIONS (memtable_size '64MB')" >/dev/null
	for b in 1 2 3 4 5; do
		sql "$db" "INSERT INTO t SELECT $b * 10 + g, 'batch $b' FROM generate_series(1, 3) g"
	done
	dir=$(sql "$db" "SELECT lsm_store_path('t')")
	log=$(find "$dir" -maxdepth 1 -name '*.log' | sort | tail -n 1)
	start=$(records_end "$log")
	sql "$db" "INSERT INTO t SELECT 60 + g, 'the victim' FROM generate_series(1, 5) g"
	end=$(records_end "$log")
	if [ "$end" -le "$start" ]; then
		fail "$name" "the last INSERT did not reach $log ($start -> $end bytes)"
		return
	fi

	pg_stop
	case $damage in
		cut:*)
			len=$((start + ${damage#cut:}))
			[ "$len" -lt "$end" ] || len=$((end - 1))
			truncate -s "$len" "$log"
			off=$start
			bytes=$(($(nonzero_end "$log" "$start") - start))
			;;
		flip:*)
			flip "$log" $((start + ${damage#flip:}))
			off=$start
			bytes=$(($(nonzero_end "$log" "$start") - start))
			;;
	esac
	pg_start

	# a reader first, then a writer, then new sessions
	check "$name: the damaged batch is gone, the others read" "15 0" \
		"$(sql "$db" "SELECT count(*), count(*) FILTER (WHERE v = 'the victim') FROM t" | tr '|' ' ')"
	sql "$db" "INSERT INTO t VALUES (100, 'after recovery')"
	for s in 1 2 3; do
		out=$(sql "$db" "SELECT count(*), max(id) FROM t" 2>&1) || true
		check "$name: session $s after the commit" "16|100" "$out"
	done
	check "$name: lsm_counters shows the discarded tail" \
		"1|$(basename "$log")|$off|$bytes" \
		"$(sql "$db" "SELECT wal_tails_discarded, last_wal_tail_file, last_wal_tail_offset, last_wal_tail_bytes FROM lsm_counters('t')")"
	msgs=$(grep -F "foreign table \"t\"" "$PGLOG" |
		grep -F "discarded $bytes bytes at offset $off of write-ahead log $(basename "$log")" || true)
	if [ -n "$msgs" ]; then
		ok "$name: the server log names the table, file, offset and bytes"
	else
		fail "$name: the server log names the table, file, offset and bytes" \
			"no line with: discarded $bytes bytes at offset $off of write-ahead log $(basename "$log")" \
			"$(grep -F 'lsm_fdw' "$PGLOG" | tail -n 5)"
	fi
	out=$(PGOPTIONS="-c client_min_messages=warning" \
		"${PSQL[@]}" -d "$db" -c "SELECT lsm_verify('t')" 2>&1)
	if grep -q '^t$' <<<"$out" &&
		grep -q "WARNING: .*recovery has discarded 1 invalid write-ahead log tail.* $bytes bytes at offset $off of" <<<"$out"; then
		ok "$name: lsm_verify is true and repeats the discarded tail"
	else
		fail "$name: lsm_verify is true and repeats the discarded tail" "$out"
	fi
}

create_db "$db"
run_case "cut after 1 byte" cut:1
run_case "cut in the middle" cut:40
run_case "cut before the last byte" cut:100000
run_case "a byte flipped" flip:30
drop_db "$db"

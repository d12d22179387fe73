#!/usr/bin/env bash
# test/pg/damaged_files.sh: what a session sees of a store whose files were
# lost or damaged, with a real server.
#
#   - MANIFEST deleted: every statement on the table fails with
#     data_corrupted (XX001) and a detail that says the manifest was lost;
#     nothing in the directory changes (before, the store was silently
#     recreated empty, lsm_verify said true, and the old tables were left
#     for compaction to remove); with the MANIFEST put back, everything is
#     there.
#   - an SSTable the server cannot read (chmod 000): insufficient_privilege
#     (42501) and "Permission denied", the file named in the detail (before:
#     "could not read lsm_fdw store: Success", XX000); once readable again,
#     the same session reads it.
#   - a checksum failure in a data block, met by a full scan, a key lookup
#     and a value search: data_corrupted with the table file and the offset
#     in the detail (before, a scan's detail was empty).
#
# Each statement runs in a new session, so that no backend has the store
# open with its tables already read.  Environment: see common.bash.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_damaged_files

# listing DIR: each file's name, size and checksum, in name order.
listing() {
	(cd "$1" && find . -maxdepth 1 -type f -printf '%f %s\n' | sort &&
		find . -maxdepth 1 -type f -exec md5sum {} + | sort)
}

# error_of SQL: runs SQL in a new session, prints "SQLSTATE|message|detail"
# of the error it raises, or "no error".
error_of() {
	sql "$db" "DO \$\$
		DECLARE st text; msg text; det text;
		BEGIN
			$1;
			RAISE WARNING 'no error';
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE,
				msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
			RAISE WARNING '%|%|%', st, msg, det;
		END \$\$" 2>&1 | sed -n 's/^WARNING:  //p'
}

# like NAME STRING PATTERN: ok if STRING matches the extended regex PATTERN.
like() {
	if grep -Eq -- "$3" <<<"$2"; then
		ok "$1"
	else
		fail "$1" "expected to match: $3" "actual: $2"
	fi
}

# A table with 3 flushed SSTables and rows in the log.
make_table() {
	sql "$db" "DROP FOREIGN TABLE IF EXISTS t" \
		"CREATE FOREIGN TABLE t (id int OPTIONS (key 'true'), v text)
		   SERVER lsm OPTIONS (memtable_size '64MB')" >/dev/null
	for b in 0 1 2; do
		sql "$db" "INSERT INTO t SELECT g, 'v' || g FROM generate_series($b * 1000 + 1, $b * 1000 + 1000) g" \
			"SELECT lsm_flush('t')" >/dev/null
	done
	sql "$db" "INSERT INTO t SELECT g, 'v' || g FROM generate_series(3001, 3100) g"
	dir=$(sql "$db" "SELECT lsm_store_path('t')")
}

lost_manifest() {
	local before out

	make_table
	mv "$dir/MANIFEST" "$work/MANIFEST.saved"
	before=$(listing "$dir")
	for stmt in "PERFORM count(*) FROM t" "INSERT INTO t VALUES (9999, 'x')" \
		"PERFORM lsm_verify('t')"; do
		out=$(error_of "$stmt")
		like "MANIFEST deleted: $stmt fails" "$out" \
			'^XX001\|could not open lsm_fdw store: corruption\|store ".*" has no MANIFEST but holds [0-9]+\.(sst|log): the manifest was lost'
	done
	check "MANIFEST deleted: no file written or removed" "$before" \
		"$(listing "$dir")"
	mv "$work/MANIFEST.saved" "$dir/MANIFEST"
	check "MANIFEST put back: every row is there" "3100" \
		"$(sql "$db" "SELECT count(*) FROM t")"
}

unreadable_table() {
	local sst out

	make_table
	sst=$(find "$dir" -maxdepth 1 -name '*.sst' | sort | head -n 1)
	chmod 000 "$sst"
	out=$(error_of "PERFORM count(*) FROM t")
	like "unreadable SSTable: insufficient_privilege, Permission denied" \
		"$out" "^42501\|could not open lsm_fdw store: Permission denied\|could not open \".*/$(basename "$sst")\": Permission denied"
	out=$("${PSQL[@]}" -d "$db" -v ON_ERROR_STOP=0 2>&1 <<-EOF
		SELECT count(*) FROM t;
		\! chmod 644 $sst
		SELECT count(*) FROM t;
	EOF
	)
	like "unreadable SSTable: the same session reads it once readable" \
		"$out" '^3100$'
}

checksum_failure() {
	local sst byte out what

	make_table
	# the first data block of the oldest table holds ids 1, 2, ...
	sst=$(find "$dir" -maxdepth 1 -name '*.sst' | sort | head -n 1)
	byte=$(od -An -tu1 -j 20 -N1 "$sst" | tr -d ' ')
	# shellcheck disable=SC2059  # the format is the byte
	printf "\\$(printf %03o $((byte ^ 0x40)))" |
		dd of="$sst" bs=1 seek=20 conv=notrunc status=none
	for what in "full scan:PERFORM count(*) FROM t" \
		"key lookup:PERFORM * FROM t WHERE id = 1" \
		"value search:PERFORM * FROM t WHERE v = 'v1'"; do
		out=$(error_of "${what#*:}")
		like "checksum failure in a ${what%%:*}: the detail names the file and offset" \
			"$out" "^XX001\|could not (read|search) lsm_fdw store: corruption\|checksum mismatch in data block at offset [0-9]+ of $(basename "$sst")"
	done
	check "checksum failure: the plan of the value search" "LSM Access: value search (v)" \
		"$(sql "$db" "EXPLAIN (COSTS OFF) SELECT * FROM t WHERE v = 'v1'" | grep -o 'LSM Access: .*')"
}

create_db "$db"
lost_manifest
unreadable_table
checksum_failure
drop_db "$db"

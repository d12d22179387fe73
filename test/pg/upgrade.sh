#!/usr/bin/env bash
# test/pg/upgrade.sh: an upgrade from the previous release, data in place.
#
# The previous release (0.1, commit $previous below) is built from this
# repository's history and installed into a private copy of the PostgreSQL
# installation (PostgreSQL finds its library and share directories relative
# to its binaries, so a copy of the tree is a second installation the
# cluster owner can write to).  A private cluster of that installation gets
# the extension at 0.1 and tables whose stores 0.1 writes: several key
# types, a flushed and compacted store, rows still in the write-ahead log
# and the shared memtable, a value-indexed column.  Then the current
# release's files (installed by test/run) replace 0.1's, as a package
# upgrade does, and the checks are:
#
#   - the new library reads 0.1's stores as they are, before ALTER
#     EXTENSION ... UPDATE too (same rows, same checksums, key lookups,
#     ranges and value searches, lsm_verify), and answers lsm_counters as
#     0.1 and 0.2 define it (31 columns);
#   - ALTER EXTENSION fdw UPDATE goes to the current version through every
#     upgrade script, whose new objects (lsm_key_columns, lsm_counters'
#     background columns) work, and pg_extension says so;
#   - the old tables take writes, compaction, and a composite-key table
#     can be created next to them.
#
# Environment: see common.bash (the shared cluster is not used).

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

# The previous release: the last commit before 0.2 (composite keys).
previous=3c8eed7df1e337e207a573f38b9854acd5b706d1
previous_version=0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sys_bin=$PGBIN
tree=$work/pg
bin=$tree/usr/lib/postgresql/15/bin
data=$work/data
port=$((PGPORT + 17))
log=$work/postmaster.log
UPSQL=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -At -h "$work" -p "$port" -d postgres)

upgrade_exit() {
	local rc=$?

	"$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	(exit "$rc")
	common_exit
}
trap upgrade_exit EXIT

# upsql SQL...: runs each SQL string in the private cluster, prints tuples.
upsql() {
	local args=() s

	for s in "$@"; do
		args+=(-c "$s")
	done
	"${UPSQL[@]}" "${args[@]}"
}

# The private installation: the system's PostgreSQL 15 tree, with the
# current release of the extension in it (test/run installed it).
make_tree() {
	local lib share

	lib=$("$sys_bin/pg_config" --pkglibdir)
	share=$("$sys_bin/pg_config" --sharedir)
	mkdir -p "$tree$(dirname "$(dirname "$sys_bin")")" "$tree$(dirname "$share")"
	cp -a "$(dirname "$sys_bin")" "$tree$(dirname "$(dirname "$sys_bin")")/"
	cp -a "$share" "$tree$(dirname "$share")/"
	check private_tree_found_by_pg_config "$tree$lib" "$("$bin/pg_config" --pkglibdir)"
	# what the current release installed, to put back after the old one
	mkdir -p "$work/current"
	cp "$lib/fdw.so" "$share"/extension/fdw.control "$share"/extension/fdw--*.sql \
		"$work/current/"
}

# Builds the previous release from the repository's history and installs it
# into the private tree, over the current one.
install_previous() {
	local lib share

	if ! git -c safe.directory='*' -C "$root" cat-file -e "$previous^{commit}" 2>/dev/null; then
		fail previous_release_source "commit $previous is not in $root" \
			"(a shallow clone?): the upgrade cannot be tested"
		exit 1
	fi
	mkdir -p "$work/old"
	git -c safe.directory='*' -C "$root" archive "$previous" | tar -x -C "$work/old"
	# (headers from the system's installation: the copy has none)
	if ! make -C "$work/old" -s -j2 PG_CONFIG="$sys_bin/pg_config" >"$work/old.build" 2>&1; then
		fail previous_release_builds "$(tail -n 20 "$work/old.build")"
		exit 1
	fi
	lib=$("$bin/pg_config" --pkglibdir)
	share=$("$bin/pg_config" --sharedir)
	rm -f "$share"/extension/fdw--*.sql
	cp "$work/old/fdw.so" "$lib/fdw.so"
	cp "$work/old/fdw.control" "$work/old/src/fdw--$previous_version.sql" \
		"$share/extension/"
	ok previous_release_builds
}

# The current release's files replace the previous one's (the old install
# script stays, as after a package upgrade that kept it).
install_current() {
	cp "$work/current/fdw.so" "$("$bin/pg_config" --pkglibdir)/fdw.so"
	cp "$work/current/fdw.control" "$work/current"/fdw--*.sql \
		"$("$bin/pg_config" --sharedir)/extension/"
}

start_private() {
	"$bin/pg_ctl" -D "$data" -l "$log" -w -t 120 \
		-o "-p $port -k $work -c listen_addresses=''" start >/dev/null
}

stop_private() {
	"$bin/pg_ctl" -D "$data" -w -t 120 -m "${1:-fast}" stop >/dev/null
}

# A summary of every table: rows, a checksum of them, and answers of the
# access paths.  Run before and after the upgrade; must not change.
summary() {
	upsql "SELECT 'ints', count(*), sum(hashtext(t::text)) FROM ints t" \
		"SELECT 'texts', count(*), sum(hashtext(t::text)) FROM texts t" \
		"SELECT 'stamps', count(*), sum(hashtext(t::text)) FROM stamps t" \
		"SELECT 'lookup', v FROM ints WHERE id = 4242" \
		"SELECT 'range', count(*), min(id), max(id) FROM ints WHERE id BETWEEN 100 AND 2000" \
		"SELECT 'search', count(*) FROM ints WHERE grp = 'g7'" \
		"SELECT 'textkey', n FROM texts WHERE k = 'key-00777'" \
		"SELECT 'desc', string_agg(k, ',') FROM (SELECT k FROM texts ORDER BY k DESC LIMIT 3) s" \
		"SELECT 'stamp', count(*) FROM stamps WHERE ts >= '2024-01-01' AND ts < '2024-02-01'"
}

main() {
	local before after version

	make_tree
	install_previous
	"$bin/initdb" -D "$data" -A trust -E UTF8 --no-locale -U "$PGUSER" \
		>"$work/initdb.log" 2>&1
	start_private
	upsql "CREATE EXTENSION fdw VERSION '$previous_version'" \
		"CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw"
	check installed_previous "$previous_version" \
		"$(upsql "SELECT extversion FROM pg_extension WHERE extname = 'fdw'")"

	# stores as 0.1 writes them: flushed and compacted, in the log only
	upsql "CREATE FOREIGN TABLE ints (id int8 OPTIONS (key 'true'), grp text, v int4)
			SERVER lsm OPTIONS (memtable_size '64kB')" \
		"INSERT INTO ints SELECT g, 'g' || (g % 50), g * 3 FROM generate_series(1, 20000) g" \
		"SELECT lsm_compact('ints', full => true)" \
		"UPDATE ints SET v = -v WHERE id % 7 = 0" \
		"DELETE FROM ints WHERE id % 11 = 0" \
		"CREATE FOREIGN TABLE texts (k text OPTIONS (key 'true'), n int4, b bytea) SERVER lsm" \
		"INSERT INTO texts SELECT 'key-' || lpad(g::text, 5, '0'), g, int4send(g)
			FROM generate_series(1, 3000) g" \
		"SELECT lsm_flush('texts')" \
		"INSERT INTO texts VALUES ('', 0, NULL), ('zz', -1, '\\x00')" \
		"CREATE FOREIGN TABLE stamps (ts timestamptz, note text, id int OPTIONS (key 'true'))
			SERVER lsm" \
		"INSERT INTO stamps SELECT '2023-12-01'::timestamptz + g * interval '1 hour', 'n' || g, g
			FROM generate_series(1, 2000) g" >/dev/null
	before=$(summary)
	stop_private fast

	install_current
	start_private
	after=$(summary)
	check reads_previous_stores "$before" "$after"
	check previous_objects_before_update "t" \
		"$(upsql "SELECT count(*) > 0 FROM lsm_stats('ints') WHERE level >= 0")"
	# the new library answers the old definition of lsm_counters (31 columns)
	check old_counters_before_update "t|31" \
		"$(upsql "SELECT c.gets >= 0, (SELECT count(*) FROM json_object_keys(row_to_json(c))) FROM lsm_counters('ints') c")"

	upsql "ALTER EXTENSION fdw UPDATE" >/dev/null
	version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$work/current/fdw.control")
	check update_to_current "$version" \
		"$(upsql "SELECT extversion FROM pg_extension WHERE extname = 'fdw'")"
	check new_function_after_update "1|id|bigint" \
		"$(upsql "SELECT * FROM lsm_key_columns('ints')")"
	check reads_after_update "$before" "$(summary)"
	check new_counters_after_update "0|t" \
		"$(upsql "SELECT background_errors, last_background_error IS NULL FROM lsm_counters('ints')")"

	# the old stores take writes and maintenance; a composite key beside them
	upsql "INSERT INTO ints VALUES (20001, 'g1', 1)" \
		"UPDATE texts SET n = n + 1 WHERE k = 'key-00001'" \
		"SELECT lsm_compact('texts', full => true)" \
		"CREATE FOREIGN TABLE pairs (a int, b text, v int) SERVER lsm OPTIONS (key 'a, b')" \
		"INSERT INTO pairs SELECT g % 10, 'b' || g, g FROM generate_series(1, 100) g" >/dev/null
	check writes_after_update "20001|2|10|10" \
		"$(upsql "SELECT (SELECT max(id) FROM ints), (SELECT n FROM texts WHERE k = 'key-00001'),
			(SELECT count(*) FROM pairs WHERE a = 3), (SELECT count(*) FROM lsm_key_columns('pairs')) * 5")"
	check verify_after_update "t|t|t" \
		"$(upsql "SELECT lsm_verify('ints'), lsm_verify('texts'), lsm_verify('stamps')")"
	stop_private fast
}

main

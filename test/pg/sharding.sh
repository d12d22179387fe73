#!/usr/bin/env bash
# test/pg/sharding.sh: lsm_fdw tables sharded through PostgreSQL itself
# (docs/scaling.md): a coordinator (the test cluster) with a table
# PARTITION BY HASH (id) whose two partitions are postgres_fdw tables on
# two shard clusters, each an lsm_fdw table there.  The shards are started
# here, on 127.0.0.1 and private ports, and stopped at the end.
#
#   query shapes     key lookups (one shard, pruned), IN lists, key ranges,
#                    ORDER BY id LIMIT, value searches, aggregates, a join
#                    with a local table: the same rows as a local heap
#                    copy of the data;
#   plans            a key lookup reaches one shard only, and runs there as
#                    an lsm_fdw key lookup; a value search runs on the
#                    shards as a value search;
#   writes           UPDATE and DELETE by key and by a non-key predicate,
#                    joined with a local table, INSERTs routed to the
#                    shards, a rolled-back transaction: the same rows as the
#                    heap copy afterwards;
#   two-phase        the pattern a transaction manager uses (PREPARE
#                    TRANSACTION on every shard, then COMMIT PREPARED):
#                    a shard killed (pg_ctl -m immediate) after both
#                    prepared, or after the first COMMIT PREPARED, keeps its
#                    prepared transaction, and the commit completes on both;
#                    a shard killed before it prepared loses its part, and
#                    the coordinator rolls back the other: nothing half
#                    applied.
#
# Environment: see common.bash; LSM_SHARD_ROWS (default 20000) rows.

# shellcheck source-path=SCRIPTDIR source=common.bash
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

db=lsm_sharding
shard_db=lsm_shard
nrows=${LSM_SHARD_ROWS:-20000}

shard_port() {
	echo $((PGPORT + 100 + $1))
}

shard_dir() {
	echo "$work/shard$1"
}

# shard_sql N SQL...: runs SQL in the shard database of shard N, over TCP.
shard_sql() {
	local n=$1

	shift
	PGHOST=127.0.0.1 PGPORT=$(shard_port "$n") sql "$shard_db" "$@"
}

shard_start() {
	"$PGBIN/pg_ctl" -D "$(shard_dir "$1")" -l "$work/shard$1.log" -w -t 120 \
		start >/dev/null
}

shard_crash() {
	"$PGBIN/pg_ctl" -D "$(shard_dir "$1")" -m immediate -w -t 60 stop >/dev/null
}

stop_shards() {
	local n

	for n in 1 2; do
		if [ -d "$(shard_dir "$n")" ]; then
			"$PGBIN/pg_ctl" -D "$(shard_dir "$n")" -m immediate -w -t 60 \
				stop >/dev/null 2>&1 || true
		fi
	done
}

# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
	local rc=$?

	stop_shards
	(exit "$rc")
	common_exit
}
trap on_exit EXIT

# make_shard N: a cluster listening on 127.0.0.1 only, with a database
# holding the lsm_fdw table items.
make_shard() {
	local dir

	dir=$(shard_dir "$1")
	"$PGBIN/initdb" -D "$dir" -A trust -U "$PGUSER" -E UTF8 --no-locale \
		--no-sync >"$work/initdb$1.log" 2>&1
	cat >>"$dir/postgresql.conf" <<-EOF
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$work'
		port = $(shard_port "$1")
		fsync = off
		max_prepared_transactions = 10
	EOF
	shard_start "$1"
	PGHOST=127.0.0.1 PGPORT=$(shard_port "$1") sql postgres \
		"CREATE DATABASE $shard_db"
	shard_sql "$1" "CREATE EXTENSION fdw" \
		"CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw" \
		"CREATE FOREIGN TABLE items (id bigint OPTIONS (key 'true'), usr text,
		   body text, lang text, n int) SERVER lsm"
}

# same NAME QUERY: the query (@T: the table) returns the same rows from the
# sharded table and from the heap copy, in the same order if it orders.
same() {
	local name=$1 q=$2 sharded local

	sharded=$(sql "$db" "SELECT count(*) || ' ' || md5(coalesce(string_agg(q::text, '|'), ''))
	                     FROM (${q//@T/items}) q")
	local=$(sql "$db" "SELECT count(*) || ' ' || md5(coalesce(string_agg(q::text, '|'), ''))
	                   FROM (${q//@T/ref}) q")
	check "$name" "$local" "$sharded" "query: $q"
}

# write NAME SQL: runs the write (@T: the table) on both, then compares
# every row.
write() {
	local name=$1 w=$2

	sql "$db" "${w//@T/items}" >/dev/null
	sql "$db" "${w//@T/ref}" >/dev/null
	same "$name" "SELECT * FROM @T ORDER BY id"
}

# high_rows: rows with id > 900000, as the coordinator sees them.
high_rows() {
	sql "$db" "SELECT count(*) FROM items WHERE id > 900000"
}

# prepared_on N: the prepared transactions of shard N.
prepared_on() {
	shard_sql "$1" "SELECT coalesce(string_agg(gid, ',' ORDER BY gid), '-') FROM pg_prepared_xacts"
}

make_shard 1
make_shard 2
create_db "$db"
sql "$db" "CREATE EXTENSION postgres_fdw"
for n in 1 2; do
	sql "$db" \
		"CREATE SERVER shard$n FOREIGN DATA WRAPPER postgres_fdw
		   OPTIONS (host '127.0.0.1', port '$(shard_port "$n")', dbname '$shard_db',
		            async_capable 'true', use_remote_estimate 'true',
		            fetch_size '1000', batch_size '100')" \
		"CREATE USER MAPPING FOR CURRENT_USER SERVER shard$n OPTIONS (user '$PGUSER')"
done
sql "$db" \
	"CREATE TABLE items (id bigint, usr text, body text, lang text, n int)
	   PARTITION BY HASH (id)" \
	"CREATE FOREIGN TABLE items_s1 PARTITION OF items
	   FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER shard1 OPTIONS (table_name 'items')" \
	"CREATE FOREIGN TABLE items_s2 PARTITION OF items
	   FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER shard2 OPTIONS (table_name 'items')" \
	"CREATE TABLE ref (id bigint PRIMARY KEY, usr text, body text, lang text, n int)" \
	"CREATE TABLE picks (id bigint PRIMARY KEY, tag text)" \
	"INSERT INTO items SELECT g, 'u' || (g % 997), 'body ' || md5(g::text),
	   (ARRAY['en', 'de', 'fr', 'es'])[g % 4 + 1], g % 100
	   FROM generate_series(1, $nrows) g" \
	"INSERT INTO ref SELECT * FROM items" \
	"INSERT INTO picks SELECT g, 'pick ' || g FROM generate_series(1, $nrows, 500) g" \
	"ANALYZE ref, picks" \
	"ANALYZE items"
per_shard="$(shard_sql 1 "SELECT count(*) FROM items") $(shard_sql 2 "SELECT count(*) FROM items")"
diag "rows per shard: $per_shard"

# --- query shapes
same count "SELECT count(*) FROM @T"
same key_lookup "SELECT * FROM @T WHERE id = 4242"
same key_lookup_absent "SELECT * FROM @T WHERE id = $((nrows + 5))"
same in_list "SELECT * FROM @T WHERE id IN (1, 77, 4242, $nrows, $((nrows + 9))) ORDER BY id"
same any_array "SELECT id, n FROM @T WHERE id = ANY (ARRAY[3, 5, 8, 13, 21]) ORDER BY id"
same key_range "SELECT id, usr FROM @T WHERE id BETWEEN 1000 AND 1100 ORDER BY id"
same order_limit "SELECT id, lang FROM @T ORDER BY id LIMIT 15"
same order_desc_limit "SELECT id FROM @T ORDER BY id DESC LIMIT 15"
same value_search "SELECT * FROM @T WHERE usr = 'u42' ORDER BY id"
same value_and_key "SELECT id FROM @T WHERE usr = 'u42' AND id < 5000 ORDER BY id"
same aggregate "SELECT lang, count(*), sum(n), min(id), max(id) FROM @T GROUP BY lang ORDER BY lang"
same join_local "SELECT t.id, t.n, p.tag FROM @T t JOIN picks p ON t.id = p.id ORDER BY t.id"
same join_local_lateral "SELECT p.id, x.usr FROM picks p,
  LATERAL (SELECT usr FROM @T t WHERE t.id = p.id + 1) x ORDER BY p.id"
same semi_join "SELECT count(*) FROM @T WHERE id IN (SELECT id + 2 FROM picks)"

# --- plans: pruning to one shard, and what runs there
plan=$(sql "$db" "EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM items WHERE id = 4242")
scans=$(grep -c "Foreign Scan on" <<<"$plan" || true)
check plan_key_lookup_one_shard "1 Remote SQL" \
	"$scans $(grep -o 'Remote SQL' <<<"$plan" | head -1)" "$plan"
plan=$(shard_sql 1 "EXPLAIN (COSTS OFF) SELECT * FROM items WHERE id = 4242")
if grep -q "key lookup" <<<"$plan"; then
	ok plan_shard_key_lookup
else
	fail plan_shard_key_lookup "$plan"
fi
plan=$(shard_sql 2 "EXPLAIN (COSTS OFF) SELECT * FROM items WHERE usr = 'u42'")
if grep -q "value search" <<<"$plan"; then
	ok plan_shard_value_search
else
	fail plan_shard_value_search "$plan"
fi

# --- writes through the coordinator
write update_by_key "UPDATE @T SET n = n + 1 WHERE id = 77"
write update_by_value "UPDATE @T SET body = 'changed' WHERE usr = 'u7'"
write delete_by_key "DELETE FROM @T WHERE id = 78"
write delete_by_value "DELETE FROM @T WHERE usr = 'u8'"
write update_joined "UPDATE @T t SET n = -1 FROM picks p WHERE t.id = p.id"
write insert_routed "INSERT INTO @T SELECT g, 'new', 'new row', 'en', 0
  FROM generate_series($((nrows + 1)), $((nrows + 300))) g"
sql "$db" "BEGIN" "DELETE FROM items WHERE id < 1000" \
	"UPDATE items SET n = 12345 WHERE usr = 'u9'" "ROLLBACK" >/dev/null
same rolled_back "SELECT * FROM @T ORDER BY id"

# --- two-phase commit across the shards, driven as a transaction manager
# would: PREPARE on every shard, then COMMIT PREPARED on every shard.
# shard_prepare N GID ID: a transaction on shard N that inserts ID and
# updates the rows earlier ones inserted, prepared as GID.
shard_prepare() {
	shard_sql "$1" "BEGIN" \
		"UPDATE items SET body = '$2' WHERE id > 900000" \
		"INSERT INTO items VALUES ($3, 'tm', '$2', 'en', 0)" \
		"PREPARE TRANSACTION '$2'"
}

# both prepared, shard 2 killed, then the commits
shard_prepare 1 g1 900001
shard_prepare 2 g1 900002
shard_crash 2
shard_start 2
before="$(prepared_on 1) $(prepared_on 2) $(high_rows)"
shard_sql 1 "COMMIT PREPARED 'g1'"
shard_sql 2 "COMMIT PREPARED 'g1'"
check two_phase_shard_killed_after_prepare "g1 g1 0 / - - 2" \
	"$before / $(prepared_on 1) $(prepared_on 2) $(high_rows)"

# shard 2 killed after shard 1 committed: its part is still prepared
shard_prepare 1 g2 900003
shard_prepare 2 g2 900004
shard_sql 1 "COMMIT PREPARED 'g2'"
shard_crash 2
shard_start 2
before="$(prepared_on 2) $(high_rows)"
shard_sql 2 "COMMIT PREPARED 'g2'"
check two_phase_shard_killed_between_commits "g2 3 / - 4" \
	"$before / $(prepared_on 2) $(high_rows)"

# shard 2 killed before it prepared: its part is gone, shard 1 rolls back
shard_prepare 1 g3 900005
"${PSQL[@]}" -h 127.0.0.1 -p "$(shard_port 2)" -d "$shard_db" >/dev/null 2>&1 <<'SQL' &
BEGIN;
INSERT INTO items VALUES (900006, 'tm', 'g3', 'en', 0);
SELECT pg_sleep(60);
SQL
bg_pids+=("$!")
sleep 1
shard_crash 2
wait "${bg_pids[-1]}" 2>/dev/null || true
bg_pids=()
shard_start 2
shard_sql 1 "ROLLBACK PREPARED 'g3'"
check two_phase_shard_killed_before_prepare "- - 4" \
	"$(prepared_on 1) $(prepared_on 2) $(high_rows)"
check two_phase_rows "900001 g2,900002 g2,900003 g2,900004 g2" \
	"$(sql "$db" "SELECT string_agg(id || ' ' || body, ',' ORDER BY id) FROM items WHERE id > 900000")"
same after_two_phase "SELECT * FROM @T WHERE id <= $((nrows + 300)) ORDER BY id"

drop_db "$db"

# test/pg/common.bash: what the process tests (test/pg/*.sh) share.
#
# Sourced, not run (hence not *.sh, which test/run would run).  The process
# tests drive a running PostgreSQL cluster from outside, with several client
# processes at once and with server crashes: what pg_regress, one session
# reading one file, cannot do.  A fixed interleaving of a few sessions, step
# by step, is an isolation test instead (specs/, PostgreSQL's
# isolationtester, run by `make installcheck`); a script is for many
# sessions under load, crashes and restarts.  test/run runs each executable test/pg/*.sh
# as the cluster's owner after `make installcheck`; a script can also be
# run by hand against any throwaway cluster of the same kind (it creates and
# drops its own database, and may stop and restart the cluster).
#
# Environment (test/run sets all of these):
#   PGBIN          the server's bin directory (psql, pg_ctl)
#   PGDATA         the cluster's data directory
#   PGHOST PGPORT  its socket directory and port
#   PGUSER         a superuser (postgres)
#   LSM_TEST_WORK  a scratch directory the cluster owner can write
#   LSM_TEST_PGLOG server log for restarts (default $LSM_TEST_WORK/postmaster.log)
#   LSM_TEST_SEED  seed of the randomized choices (printed; default: the time)
#
# Output protocol, the same as the engine tests': one "ok NAME" or
# "FAIL NAME" line per test case, "# ..." diagnostics, and a non-zero exit
# status if any case failed.  A script must leave the cluster running: the
# EXIT trap restarts it if the script stopped it and then failed.

set -euo pipefail

: "${PGBIN:?PGBIN must name the server bin directory}"
: "${PGDATA:?PGDATA must name the data directory}"
: "${PGHOST:?PGHOST must name the socket directory}"
: "${PGPORT:?PGPORT must be set}"
: "${PGUSER:?PGUSER must be set}"
: "${LSM_TEST_WORK:?LSM_TEST_WORK must name a scratch directory}"
export PGHOST PGPORT PGUSER
# notices (DROP ... IF EXISTS) would mix with the tuples the scripts parse
export PGOPTIONS="${PGOPTIONS:+$PGOPTIONS }-c client_min_messages=warning"
PGLOG=${LSM_TEST_PGLOG:-$LSM_TEST_WORK/postmaster.log}

test_name=$(basename "$0" .sh)
work=$LSM_TEST_WORK/$test_name
rm -rf "$work"
mkdir -p "$work"

# The seed of every random choice a script makes, so that a failure can be
# repeated (LSM_TEST_SEED=<n>).
seed=${LSM_TEST_SEED:-$(date +%s)}
RANDOM=$seed
echo "# $test_name: seed $seed (repeat with LSM_TEST_SEED=$seed)"

failures=0
bg_pids=()

# psql for scripted use: no psqlrc, quiet, stop at the first error,
# unaligned tuples only.
PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -At)

# Prints "ok NAME".
ok() {
	echo "ok $1"
}

# Prints "FAIL NAME" and each further argument as a diagnostic line.
fail() {
	local name=$1 line

	shift
	echo "FAIL $name"
	for line in "$@"; do
		printf '%s\n' "$line" | sed 's/^/# /'
	done
	failures=$((failures + 1))
}

# Prints its arguments as a diagnostic line.
diag() {
	printf '%s\n' "$*" | sed 's/^/# /'
}

# check NAME EXPECTED ACTUAL [DETAIL...]: ok if the two strings are equal.
check() {
	local name=$1 expected=$2 actual=$3

	shift 3
	if [ "$expected" = "$actual" ]; then
		ok "$name"
	else
		fail "$name" "expected: $expected" "actual:   $actual" "$@"
	fi
}

# sql DB SQL...: runs each SQL string in database DB (one psql session) and
# prints the tuples, unaligned.
sql() {
	local db=$1 args=() s

	shift
	for s in "$@"; do
		args+=(-c "$s")
	done
	"${PSQL[@]}" -d "$db" "${args[@]}"
}

# Whether the postmaster of $PGDATA is running.
pg_running() {
	"$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

# Starts the cluster and waits until it accepts connections (after crash
# recovery, if it crashed).  The server log goes to $PGLOG.
pg_start() {
	"$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGLOG" -w -t 300 start >/dev/null
}

# Stops the cluster with an immediate shutdown: every server process quits at
# once, without a checkpoint, as in a crash; the next start runs recovery.
pg_crash() {
	"$PGBIN/pg_ctl" -D "$PGDATA" -m immediate -w -t 60 stop >/dev/null
}

# create_db DB: a fresh database DB with the extension and a server "lsm".
create_db() {
	sql postgres "DROP DATABASE IF EXISTS $1" "CREATE DATABASE $1"
	sql "$1" "CREATE EXTENSION fdw" \
		"CREATE SERVER lsm FOREIGN DATA WRAPPER lsm_fdw"
}

# drop_db DB: drops the server and its foreign tables first, so that their
# stores go too (a dropped database takes its catalogs, not the stores), then
# the database.
drop_db() {
	sql "$1" "DROP SERVER IF EXISTS lsm CASCADE" >/dev/null 2>&1 || true
	sql postgres "DROP DATABASE IF EXISTS $1" >/dev/null 2>&1 || true
}

# start_at SECONDS: a timestamp that many seconds ahead, for start_barrier.
start_at() {
	sql postgres "SELECT clock_timestamp() + interval '$1 s'"
}

# start_barrier TIMESTAMP: the psql line that waits until TIMESTAMP, so that
# sessions started one after another begin their work together.
start_barrier() {
	printf "SELECT pg_sleep(greatest(0, extract(epoch FROM timestamptz '%s' - clock_timestamp()))) \\\\g /dev/null\n" "$1"
}

# background CMD...: runs CMD in the background and remembers its pid, so
# that the EXIT trap can stop it if the script ends early.
background() {
	"$@" &
	bg_pids+=("$!")
}

# wait_all: waits for every background command; returns the number of them
# that failed.
wait_all() {
	local pid n=0

	for pid in "${bg_pids[@]}"; do
		wait "$pid" || n=$((n + 1))
	done
	bg_pids=()
	return "$n"
}

# psql_session DB OUT FILE...: one client session running the FILEs in
# turn, tuples and \echo lines to OUT (line-buffered, so that a session cut
# short by a crash has written out everything it printed), errors to
# OUT.err.  It execs psql, so that in the background its pid is psql's (and
# the EXIT trap can stop it).
psql_session() {
	local db=$1 out=$2 args=() f

	shift 2
	for f in "$@"; do
		args+=(-f "$f")
	done
	exec stdbuf -oL "${PSQL[@]}" -d "$db" "${args[@]}" >"$out" 2>"$out.err"
}

# run_sessions DB TAG N: runs N client sessions at once, session s running
# $work/TAG.s.sql, all starting together (at a barrier set once the files
# are written), output in $work/TAG.s.out.  Returns the number of sessions
# whose psql failed, and prints the end of their errors.
run_sessions() {
	local db=$1 tag=$2 n=$3 s at pid nfailed=0 pids=()

	at=$(start_at 1)
	for ((s = 1; s <= n; s++)); do
		start_barrier "$at" >"$work/$tag.$s.start.sql"
		background psql_session "$db" "$work/$tag.$s.out" \
			"$work/$tag.$s.start.sql" "$work/$tag.$s.sql"
		pids+=("$!")
	done
	for ((s = 1; s <= n; s++)); do
		pid=${pids[$((s - 1))]}
		if ! wait "$pid"; then
			nfailed=$((nfailed + 1))
			diag "$tag: session $s failed:"
			diag "$(tail -n 5 "$work/$tag.$s.out.err")"
		fi
	done
	bg_pids=()
	return "$nfailed"
}

# shellcheck disable=SC2317  # called from the EXIT trap
common_exit() {
	local rc=$? pid

	for pid in "${bg_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	if ! pg_running; then
		echo "# $test_name: the cluster is down: starting it again"
		pg_start || echo "# $test_name: could not start the cluster"
	fi
	if [ "$rc" -ne 0 ] && [ "$failures" -eq 0 ]; then
		echo "# $test_name: exited with status $rc (a command failed)"
	fi
	[ "$failures" -eq 0 ] || rc=1
	exit "$rc"
}
trap common_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

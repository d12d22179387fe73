# shellcheck shell=bash
#
# test/bench/sql/lib.sh
#	What the SQL benchmarks (run.sh, writers.sh, sharding.sh) share:
#	sourced by each, after it has set
#	  bench      its name, for messages ("writers.sh")
#	  root       the repository's root
#	  PG_CONFIG  the pg_config of the server to build for and run
#	Each script keeps its own cluster layout and its own EXIT trap.
#
# shellcheck disable=SC2154  # bench and root: set by the sourcing script

die() {
	printf 'test/bench/sql/%s: %s\n' "$bench" "$*" >&2
	exit 1
}

# Runs a command as the postgres user, from /, without the install lock's
# descriptor (a server started so must not hold the lock after we exit).
as_pg() {
	(cd / && runuser -u postgres -- "$@" 9>&-)
}

# stop_server DATADIR: a fast shutdown, or an immediate one if that fails.
stop_server() {
	as_pg "$pgbin/pg_ctl" -D "$1" -m fast -w -t 60 stop >/dev/null 2>&1 ||
		as_pg "$pgbin/pg_ctl" -D "$1" -m immediate -w -t 60 stop >/dev/null 2>&1
}

require_root() {
	[ "$(id -u)" -eq 0 ] ||
		die "run me as root (sudo): I install the extension and run the server as postgres"
}

# Builds and installs the extension for PG_CONFIG, holding the install lock
# that test/run, the demo and the other benchmarks take (descriptor 9, held
# until the script exits, so that nobody installs another build under a
# running benchmark).  Sets pgbin and puts it first in PATH.
build_and_install() {
	[ -x "$PG_CONFIG" ] || die "no pg_config at $PG_CONFIG"
	pgbin=$("$PG_CONFIG" --bindir)
	export PATH="$pgbin:$PATH"
	exec 9>"${TMPDIR:-/tmp}/lsm_fdw_install.lock"
	if ! flock -n 9; then
		echo "waiting for the install lock (another test/run, demo or benchmark)"
		flock -w 3600 9 || die "gave up waiting for the install lock"
	fi
	(cd "$root" && make -s -j2 PG_CONFIG="$PG_CONFIG" >/dev/null &&
		make -s install PG_CONFIG="$PG_CONFIG" >/dev/null) ||
		die "build or install failed"
}

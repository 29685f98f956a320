#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis servers the tests use are up on
# 127.0.0.1 (PostgreSQL 5432 with trust auth and a "test" database, Redis
# 6379): installs Debian's postgresql and redis-server when they are
# missing (apt-get, as root or through sudo without a password), and
# starts them when they are stopped. PORTICO_TEST_POSTGRES and
# PORTICO_TEST_REDIS point the tests elsewhere; then this script checks
# nothing of that server (redis-server and redis-cli are installed all the
# same: internal/testredis starts servers of its own).
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

# install_debian installs Debian packages ($@) when a command they provide
# is missing.
install_debian() {
	if ! command -v apt-get >/dev/null; then
		echo "start-services: $* not installed and apt-get is not there to install them; install them by hand" >&2
		exit 1
	fi
	echo "start-services: installing Debian's $*"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update -qq
	as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

wait_for() {
	local what=$1 check=$2
	for _ in $(seq 1 50); do
		if $check; then return 0; fi
		sleep 0.2
	done
	echo "start-services: $what did not come up" >&2
	return 1
}

if [ -z "${PORTICO_TEST_POSTGRES:-}" ]; then
	if ! command -v pg_isready >/dev/null || ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
		install_debian postgresql postgresql-client
		# A cluster this script installed is the tests' own: trust on
		# loopback, as the tests connect (user postgres, no password).
		version=$(ls /etc/postgresql | sort -V | tail -1)
		printf '%s\n' 'local all all trust' 'host all all 127.0.0.1/32 trust' 'host all all ::1/128 trust' |
			as_root tee "/etc/postgresql/$version/main/pg_hba.conf" >/dev/null
		as_root pg_ctlcluster --skip-systemctl-redirect "$version" main restart >/dev/null 2>&1 || true
	fi
	if ! pg_up; then
		echo "start-services: starting PostgreSQL"
		as_root service postgresql start >/dev/null || as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
		wait_for PostgreSQL pg_up
	fi
	# The tests use database "test" as user postgres over TCP.
	if ! psql -h 127.0.0.1 -U postgres -d test -Atc 'SELECT 1' >/dev/null 2>&1; then
		as_root su postgres -c "psql -Atc 'CREATE DATABASE test'" >/dev/null
	fi
	echo "start-services: PostgreSQL up"
fi

# The binaries are needed even with PORTICO_TEST_REDIS: some tests start
# Redis servers of their own (a server they kill, a three-master Redis
# Cluster: internal/testredis), with redis-server and redis-cli.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	install_debian redis-server redis-tools
fi

if [ -z "${PORTICO_TEST_REDIS:-}" ]; then
	if ! redis_up; then
		echo "start-services: starting Redis"
		as_root service redis-server start >/dev/null 2>&1 || redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly no --daemonize yes >/dev/null
		wait_for Redis redis_up
	fi
	echo "start-services: Redis up"
fi

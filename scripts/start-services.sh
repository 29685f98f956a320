#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis servers the tests use are up on
# 127.0.0.1 (PostgreSQL 5432 with trust auth and a "test" database, Redis
# 6379), starting them from their Debian packages when they are installed
# but stopped. PORTICO_TEST_POSTGRES and PORTICO_TEST_REDIS point the tests
# elsewhere; then this script checks nothing.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

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
	command -v pg_isready >/dev/null || { echo "start-services: PostgreSQL is not installed (Debian: postgresql)" >&2; exit 1; }
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

if [ -z "${PORTICO_TEST_REDIS:-}" ]; then
	command -v redis-server >/dev/null || { echo "start-services: Redis is not installed (Debian: redis-server)" >&2; exit 1; }
	if ! redis_up; then
		echo "start-services: starting Redis"
		as_root service redis-server start >/dev/null 2>&1 || redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly no --daemonize yes >/dev/null
		wait_for Redis redis_up
	fi
	echo "start-services: Redis up"
fi

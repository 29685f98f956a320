#!/usr/bin/env bash
# `make run`: builds bin/portico, saying so first (the first build compiles
# go-ethereum, which takes minutes on a small machine and printed nothing
# under `go run`), then runs `portico serve` with the arguments given.
#
# Ctrl-C ends it with "stopped" and exit status 0. A terminal sends Ctrl-C's
# SIGINT to its whole foreground process group, make included, and GNU make
# always dies of a SIGINT it receives (after its children), so make would
# report an interrupt whatever portico did. With job control on (set -m),
# bash runs portico in a process group of its own and hands it the terminal:
# Ctrl-C then reaches portico alone, portico shuts down and exits 0, and
# bash takes the terminal back. Without a terminal there is no Ctrl-C; a
# SIGINT sent to make's process group reaches portico too, and make's own
# status is then make's business.
#
# SIGINT sent to make's own process (not its process group, as
# `kill -INT <make's pid>` does) never reaches its children: GNU make only
# waits for them, so portico would run on and make with it. MAKE_PID names
# make's process; while portico runs, a watcher reads make's blocked
# signals, and once SIGINT is among them (make is in its SIGINT handler,
# waiting for us) it sends portico SIGINT, which stops it as Ctrl-C does.
# SIGTERM, which make passes to its children, and SIGINT sent to this
# script are passed on to portico too.
#
# Environment: GO (default go), BIN (default bin/portico), MAKE_PID
# (make's process id; the Makefile passes it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

go=${GO:-go}
bin=${BIN:-bin/portico}

echo "building $bin (the first build compiles go-ethereum: a few minutes on 2 cores; later ones take seconds)..."
"$go" build -o "$bin" ./cmd/portico
echo "built $bin; starting portico serve $* (Ctrl-C stops it)"

# foreground: this script's process group is the terminal's foreground
# group (fields 5 and 8 of /proc/PID/stat), so bash can hand the terminal
# on. Started in the background (`make run &`), it keeps portico in make's
# group: Ctrl-C after a later fg then reaches portico as it reaches make.
foreground() {
	local stat f
	[ -t 0 ] && [ -t 2 ] && stat=$(</proc/$$/stat) || return 1
	read -ra f <<<"${stat##*) }"
	[ "${f[2]}" = "${f[5]}" ]
}
# make_interrupted: make's process (MAKE_PID) has SIGINT blocked, as it
# has while it runs its handler for one.
make_interrupted() {
	local k v mask=0
	while read -r k v; do
		if [ "$k" = SigBlk: ]; then mask=$v; fi
	done <"/proc/$MAKE_PID/status" || return 1
	(((16#$mask) & 2))
}
# watch_make sends portico ($1) SIGINT once make has got one.
watch_make() {
	[ -n "${MAKE_PID:-}" ] && [ -r "/proc/$MAKE_PID/status" ] || return 0
	while kill -0 "$1" 2>/dev/null; do
		if make_interrupted; then
			kill -INT "$1" 2>/dev/null
			return 0
		fi
		sleep 0.2
	done
}

if foreground; then
	set -m
fi
status=0
"$bin" serve "$@" &
pid=$!
trap 'kill -INT "$pid" 2>/dev/null' INT
trap 'kill -TERM "$pid" 2>/dev/null' TERM
watch_make "$pid" &
watcher=$!
if [ -o monitor ]; then
	fg %1 >/dev/null || status=$?
	# Ctrl-Z stopped portico alone, in its own process group: stop make
	# and this script too, so that the shell sees `make run` suspended;
	# its fg resumes us, and our fg hands the terminal back to portico.
	while [ -n "$(jobs -sp)" ]; do
		kill -TSTP 0
		status=0
		fg %1 >/dev/null || status=$?
	done
	set +m
else
	# wait returns early, above 128, when a trapped signal comes in.
	while wait "$pid"; s=$?; [ "$s" -gt 128 ] && kill -0 "$pid" 2>/dev/null; do :; done
	wait "$pid" || status=$?
fi
# The watcher ends by itself once portico has (within its 0.2 s poll);
# killing it would have bash report the kill on the terminal.
wait "$watcher" 2>/dev/null || true
# portico serve exits 0 only when told to stop; 130 is a SIGINT that came
# before it listened for one.
case $status in
0 | 130)
	# The terminal echoed ^C without a newline.
	if [ -t 1 ]; then echo; fi
	echo "stopped"
	exit 0
	;;
esac
exit "$status"

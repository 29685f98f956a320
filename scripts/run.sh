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
# Environment: GO (default go), BIN (default bin/portico).
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
if foreground; then
	set -m
fi
status=0
"$bin" serve "$@" || status=$?
# Ctrl-Z stopped portico alone, in its own process group: stop make and
# this script too, so that the shell sees `make run` suspended; its fg
# resumes us, and our fg hands the terminal back to portico.
while [ -n "$(jobs -sp)" ]; do
	kill -TSTP 0
	status=0
	fg %% >/dev/null || status=$?
done
set +m
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

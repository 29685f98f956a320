#!/usr/bin/env bash
# make flake: the flake hunt. Runs the whole suite (the module, then the
# deploy module) ROUNDS times, each round in a new shuffled order, beside
# BUSY busy loops that keep every core taken, and prints each failure with
# the test's output. Exits 0 only when every round passed.
#
#   ROUNDS  rounds of the whole suite (default 3)
#   BUSY    busy loops beside it (default: one per core)
#   RACE    1 runs the rounds under the race detector
#   PKGS    the packages of the module to run (default ./...)
#   LOG     the directory the rounds' logs go to (default a new one in /tmp)
#
# Needs what `make test` needs; the Makefile runs test-deps first.
set -uo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
busy=${BUSY:-$(nproc)}
pkgs=${PKGS:-./...}
log=${LOG:-$(mktemp -d /tmp/portico-flake.XXXXXX)}
mkdir -p "$log"
flags=(-count=1 -shuffle=on -timeout 40m)
if [[ "${RACE:-0}" == 1 ]]; then
	flags+=(-race)
fi

# The busy loops: plain shell spins, one process each, stopped on exit.
loops=()
stop() {
	for p in "${loops[@]}"; do kill "$p" 2>/dev/null; done
}
trap stop EXIT INT TERM
for ((i = 0; i < busy; i++)); do
	bash -c 'while :; do :; done' &
	loops+=($!)
done
echo "flake: $rounds rounds of go test ${flags[*]} $pkgs (and deploy/) beside $busy busy loops; logs in $log"

# failures prints what a round's log holds beyond the passing packages'
# "ok" lines: go test without -v prints only the output of the packages
# that failed (their shuffle seed, each failed test with its output, a
# build error, a panic, a timeout's goroutines).
failures() {
	grep -v -E '^(ok  |\?   )|no test files' "$1"
}

failed=0
for ((r = 1; r <= rounds; r++)); do
	start=$(date +%s)
	out="$log/round-$r.log"
	PORTICO_TEST_STRICT=1 go test "${flags[@]}" "$pkgs" >"$out" 2>&1
	a=$?
	(cd deploy && PORTICO_TEST_STRICT=1 go test "${flags[@]}" ./...) >>"$out" 2>&1
	b=$?
	secs=$(($(date +%s) - start))
	if [[ $a -eq 0 && $b -eq 0 ]]; then
		echo "flake: round $r passed in ${secs}s"
		continue
	fi
	failed=$((failed + 1))
	echo "flake: round $r FAILED in ${secs}s; the failures (whole log: $out):"
	failures "$out" | sed 's/^/    /'
done
if [[ $failed -gt 0 ]]; then
	echo "flake: $failed of $rounds rounds failed"
	exit 1
fi
echo "flake: $rounds of $rounds rounds passed"

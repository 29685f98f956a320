#!/usr/bin/env bash
# Builds portico and portico-bench and runs the gateway-vs-direct benchmark.
# Extra arguments go to portico-bench (see --help): --setup picks the
# setups (trivial, geth, geth-remote, metering, fixed, chaos, subs, guess, allowlist); the fixed
# setup adds erpc and proxyd columns with --erpc BINARY and --proxyd BINARY,
# built outside this repository as docs/benchmarks.md says. Paste the table
# into docs/benchmarks.md with the command line you used.
#
# The subs setup holds one socket per client in portico-bench and one in
# portico: with it, the soft file limit (ulimit -n) is raised to the hard
# one first, and a hard limit too low for --subscribers is reported.
set -euo pipefail
cd "$(dirname "$0")/.."

setups="trivial,geth,geth-remote" subscribers=10000 prev=""
for a in "$@"; do
  case "$prev" in
  --setup) setups=$a ;;
  --subscribers) subscribers=$a ;;
  esac
  case "$a" in
  --setup=*) setups=${a#--setup=} ;;
  --subscribers=*) subscribers=${a#--subscribers=} ;;
  esac
  prev=$a
done
if [[ ",$setups," == *,subs,* ]]; then
  most=$(tr ',' '\n' <<<"$subscribers" | sort -n | tail -1)
  need=$((most + 256))
  hard=$(ulimit -Hn)
  if [[ "$hard" != unlimited ]] && ((hard < need)); then
    echo "bench.sh: the hard file limit is $hard; $most subscribers need about $need open files in portico (and as many in portico-bench): raise it (limits.conf, or ulimit -Hn as root) or pass fewer --subscribers" >&2
  fi
  ulimit -Sn "$hard" || echo "bench.sh: could not raise the soft file limit to $hard" >&2
  echo "bench.sh: file limit (ulimit -n) $(ulimit -Sn), hard $hard" >&2
fi

go build -o bin/portico ./cmd/portico
go build -o bin/portico-bench ./cmd/portico-bench
exec bin/portico-bench "$@"

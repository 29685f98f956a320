#!/usr/bin/env bash
# Builds portico and portico-bench and runs the gateway-vs-direct benchmark.
# Extra arguments go to portico-bench (see --help): --setup picks the
# setups (trivial, geth, geth-remote, metering, fixed, chaos); the fixed
# setup adds erpc and proxyd columns with --erpc BINARY and --proxyd BINARY,
# built outside this repository as docs/benchmarks.md says. Paste the table
# into docs/benchmarks.md with the command line you used.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/portico ./cmd/portico
go build -o bin/portico-bench ./cmd/portico-bench
exec bin/portico-bench "$@"

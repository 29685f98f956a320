#!/usr/bin/env bash
# Installs what the tests need beyond Go: the anvil EVM node from npm (pinned
# in package.json and package-lock.json) into node_modules. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
	echo "install-test-deps: npm is required (Node.js 18 or later)" >&2
	exit 1
fi
anvil=node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
if [ ! -x "$anvil" ]; then
	npm ci --no-audit --no-fund --loglevel=error
fi
"$anvil" --version | head -1

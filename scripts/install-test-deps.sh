#!/usr/bin/env bash
# Installs what the tests need beyond Go: the anvil EVM node from npm (pinned
# in package.json and package-lock.json) into node_modules at the repository
# root, then checks that it runs. Idempotent: nothing is fetched when the
# pinned version is already installed. Runs from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pkg=@foundry-rs/anvil-linux-amd64
anvil=node_modules/$pkg/bin/anvil

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "install-test-deps: Node.js 20 or later with npm is required" >&2
	exit 1
fi

want=$(node -p "require('./package.json').devDependencies['$pkg']")
have=$(node -p "try { require('./node_modules/$pkg/package.json').version } catch { '' }")
if [ "$have" != "$want" ] || [ ! -x "$anvil" ]; then
	echo "install-test-deps: installing $pkg@$want"
	if [ -f package-lock.json ]; then
		npm ci --no-audit --no-fund --loglevel=error
	else
		npm install --no-audit --no-fund --loglevel=error
	fi
fi

version=$("$anvil" --version | head -1)
case $version in
*"$want"*) echo "install-test-deps: $version" ;;
*)
	echo "install-test-deps: $anvil reports '$version', want $want" >&2
	exit 1
	;;
esac

#!/usr/bin/env bash
# Installs what the tests need beyond Go from npm (pinned in package.json and
# package-lock.json) into node_modules at the repository root: the anvil EVM
# node, and the auth SDK family's JavaScript libraries that authd's interop
# tests run with node (@toruslabs/openlogin, openlogin-session-manager,
# session-manager, eccrypto, @web3auth/auth). Then it checks that anvil runs
# and the libraries load. Idempotent: nothing is fetched when the pinned
# versions are installed. Runs from any directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pkg=@foundry-rs/anvil-linux-amd64
anvil=node_modules/$pkg/bin/anvil

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	echo "install-test-deps: Node.js 20 or later with npm is required" >&2
	exit 1
fi

want=$(node -p "require('./package.json').devDependencies['$pkg']")
# Every pinned package at its pinned version?
stale=$(node -e "
const deps = require('./package.json').devDependencies;
for (const [name, v] of Object.entries(deps)) {
  let have = '';
  try { have = require('./node_modules/' + name + '/package.json').version } catch {}
  if (have !== v) console.log(name + '@' + v);
}")
if [ -n "$stale" ] || [ ! -x "$anvil" ]; then
	echo "install-test-deps: installing" $stale
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

# The auth interop tests' libraries load under node.
for mod in @toruslabs/openlogin @toruslabs/openlogin-session-manager @toruslabs/session-manager @toruslabs/eccrypto @web3auth/auth; do
	node -e "require('$mod')" >/dev/null || {
		echo "install-test-deps: $mod does not load under node" >&2
		exit 1
	}
done
echo "install-test-deps: auth interop libraries loaded"

#!/usr/bin/env bash
# Installs what the tests need beyond Go: curl and jq, which the README's
# commands use (TestREADME runs them), from Debian's packages when missing
# (that needs root, or sudo without a password); and from npm (pinned in
# package.json and package-lock.json) into node_modules at the repository
# root: the anvil EVM node, and the auth SDK family's JavaScript libraries
# that authd's interop tests run with node (@toruslabs/openlogin,
# openlogin-session-manager, session-manager, eccrypto, @web3auth/auth),
# and the chain libraries the wallet's interop test checks its addresses
# and signatures against (ethers, @solana/web3.js, starknet), and the
# official MCP TypeScript SDK (@modelcontextprotocol/sdk) that gateway/mcp's
# interop test connects with.
# Then it checks that anvil runs and the libraries load. Idempotent: nothing
# is fetched when the pinned versions are installed. Runs from any
# directory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
for tool in curl jq; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
	if ! command -v apt-get >/dev/null; then
		echo "install-test-deps: ${missing[*]} not found and apt-get is not there to install them; install them by hand" >&2
		exit 1
	fi
	sudo=
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null; then
			echo "install-test-deps: run as root (or install sudo) to install ${missing[*]}" >&2
			exit 1
		fi
		sudo="sudo -n"
	fi
	echo "install-test-deps: installing Debian's ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for tool in curl jq; do
	if ! command -v "$tool" >/dev/null; then
		echo "install-test-deps: $tool is still missing" >&2
		exit 1
	fi
done
echo "install-test-deps: $(curl --version | head -1 | cut -d' ' -f1-2), $(jq --version)"

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
for mod in ethers @solana/web3.js starknet; do
	node -e "require('$mod')" >/dev/null || {
		echo "install-test-deps: $mod does not load under node" >&2
		exit 1
	}
done
echo "install-test-deps: wallet interop libraries loaded"
node -e "require('@modelcontextprotocol/sdk/client/index.js'); require('@modelcontextprotocol/sdk/client/streamableHttp.js')" >/dev/null || {
	echo "install-test-deps: @modelcontextprotocol/sdk does not load under node" >&2
	exit 1
}
echo "install-test-deps: MCP TypeScript SDK loaded"

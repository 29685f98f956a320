#!/usr/bin/env bash
# Builds the release tools at pinned versions from the Go module proxy into
# a cache directory outside the checkout, and prints the directories to put
# first on PATH (one line, colon-separated). Idempotent: a tool already built
# at its version is not rebuilt.
#
#   scripts/release-tools.sh goreleaser                   # what make test needs
#   scripts/release-tools.sh goreleaser cyclonedx-gomod   # make release-snapshot
#
# The cache is $PORTICO_TOOLS, else $XDG_CACHE_HOME/portico/tools, else
# ~/.cache/portico/tools. Building goreleaser cold takes a few minutes on
# 2 cores; after that it is a stat.
set -euo pipefail

declare -A pkgs=(
	[goreleaser]=github.com/goreleaser/goreleaser/v2@v2.15.1
	[cyclonedx-gomod]=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
)
cache=${PORTICO_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/portico/tools}

dirs=()
for tool in "${@:-goreleaser}"; do
	pkg=${pkgs[$tool]:-}
	if [ -z "$pkg" ]; then
		echo "release-tools: unknown tool $tool (known: ${!pkgs[*]})" >&2
		exit 2
	fi
	dir=$cache/$tool@${pkg##*@}
	if [ ! -x "$dir/$tool" ]; then
		echo "release-tools: building $pkg (once; minutes when cold)" >&2
		mkdir -p "$dir"
		# GOFLAGS from the environment (-mod=…, -buildvcs=…) are for this
		# repository, not for a tool built from the proxy.
		(cd "$dir" && GOFLAGS= GOBIN="$dir" go install "$pkg") >&2
	fi
	dirs+=("$dir")
done
(IFS=:; echo "${dirs[*]}")

#!/usr/bin/env bash
# `make release-snapshot`: the release as GoReleaser would make it, without
# publishing, into dist/ (.goreleaser.yaml): static binaries for linux and
# darwin on amd64 and arm64, a tar.gz per target, checksums.txt and a
# CycloneDX SBOM per binary. Then it checks what it made: the checksums,
# that every SBOM is a CycloneDX document listing go-ethereum, and that the
# host's binary prints its stamped version.
#
# Each extra target compiles go-ethereum cold once: expect ten minutes or
# more on 2 cores the first time (make test builds only the host's target).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# cyclonedx-gomod names the main module's version from the repository, read
# with go-git, which cannot open a linked worktree (.git is then a file):
# say so now rather than after the builds.
if [ -f .git ]; then
	echo "release-snapshot: this checkout is a linked git worktree, which cyclonedx-gomod (the SBOMs) cannot read; run it in a clone: git clone . /tmp/portico-release && make -C /tmp/portico-release release-snapshot" >&2
	exit 1
fi

scripts/goreleaser.sh release --snapshot --clean "$@"

cd dist
sha256sum --check --strict checksums.txt
archives=(portico_*.tar.gz)
sboms=(portico_*.cdx.json)
if [ ${#archives[@]} -ne 4 ] || [ ${#sboms[@]} -ne 4 ]; then
	echo "release-snapshot: want 4 archives and 4 SBOMs, got: ${archives[*]} ${sboms[*]}" >&2
	exit 1
fi
for sbom in "${sboms[@]}"; do
	jq -e '.bomFormat == "CycloneDX" and any(.components[]; .name == "github.com/ethereum/go-ethereum")' "$sbom" >/dev/null || {
		echo "release-snapshot: $sbom is not a CycloneDX SBOM listing go-ethereum" >&2
		exit 1
	}
done
host=$(go env GOOS)_$(go env GOARCH)
bin=$(ls -d portico_"$host"*/portico)
"$bin" version
echo "release-snapshot: dist/ holds ${archives[*]}, ${sboms[*]} and checksums.txt"

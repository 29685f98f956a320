#!/usr/bin/env bash
# Runs the pinned goreleaser (scripts/release-tools.sh builds it once) with
# the given arguments, from the repository root, with cyclonedx-gomod on
# PATH when the arguments make a release (its SBOMs need it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tools=(goreleaser)
case " $* " in
*" release "*) tools+=(cyclonedx-gomod) ;;
esac
path=$(scripts/release-tools.sh "${tools[@]}")
# GoReleaser reads the commit only when `git ls-remote --get-url` answers;
# in a checkout with no remote (a local clone's worktree, a tarball turned
# repository) it stamps "none" instead. The URL feeds no template here, so
# a checkout without one names itself, for this process only.
if [ -z "$(git remote)" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0="file://$PWD"
fi
PATH=$path:$PATH exec goreleaser "$@"

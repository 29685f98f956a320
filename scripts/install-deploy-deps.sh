#!/usr/bin/env bash
# Installs what the shipping tests (deploy/, docs/deploy.md) need beyond Go:
# buildah, which builds the image with no daemon, and systemd-analyze
# (package systemd), which checks the unit, from Debian's packages when
# missing (that needs root, or sudo without a password); and goreleaser at
# its pinned version, built from the Go module proxy into a cache outside
# the checkout (scripts/release-tools.sh). Idempotent. `docker compose` is
# not installed: Debian has no package of the compose plugin, and the
# compose test says so when it is absent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pkgs=()
command -v buildah >/dev/null || command -v podman >/dev/null || pkgs+=(buildah)
command -v systemd-analyze >/dev/null || pkgs+=(systemd)
# The image test copies Debian's CA bundle into the image.
[ -f /etc/ssl/certs/ca-certificates.crt ] || pkgs+=(ca-certificates)
if [ ${#pkgs[@]} -gt 0 ]; then
	if ! command -v apt-get >/dev/null; then
		echo "install-deploy-deps: ${pkgs[*]} missing and apt-get is not there to install them; install them by hand" >&2
		exit 1
	fi
	sudo=
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null; then
			echo "install-deploy-deps: run as root (or install sudo) to install ${pkgs[*]}" >&2
			exit 1
		fi
		sudo="sudo -n"
	fi
	echo "install-deploy-deps: installing Debian's ${pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi
echo "install-deploy-deps: $( (buildah --version || podman --version) 2>/dev/null | head -1), $(systemd-analyze --version | head -1)"
dir=$(scripts/release-tools.sh goreleaser)
echo "install-deploy-deps: $("$dir/goreleaser" --version 2>/dev/null | grep -m1 -i '^GitVersion' | tr -s ' ')"

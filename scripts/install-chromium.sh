#!/usr/bin/env bash
# Installs Debian's chromium for the browser tests (the auth login pages are
# driven through it by chromedp). Idempotent: does nothing when
# /usr/bin/chromium exists. Needs root, or sudo without a password.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
	echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "install-chromium: apt-get not found; install Chromium as /usr/bin/chromium by hand" >&2
	exit 1
fi
sudo=
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "install-chromium: run as root (or install sudo)" >&2
		exit 1
	fi
	sudo="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-chromium: installing Debian's chromium"
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null | head -1)"

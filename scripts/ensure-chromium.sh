#!/usr/bin/env bash
# Installs Debian's Chromium (the browser the console's end-to-end tests drive) when it is missing.
# Never a test tool's own browser download: the machines reach only the npm registry and Debian.
set -euo pipefail
CHROMIUM=${CHROMIUM_PATH:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "Installing chromium with apt-get (for the console's end-to-end tests)..." >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
[ -x "$CHROMIUM" ] || { echo "chromium is still missing at $CHROMIUM" >&2; exit 1; }

#!/usr/bin/env bash
# Install the system packages the judge needs on Debian/Ubuntu, only when they are missing.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v g++ >/dev/null 2>&1 || need+=(g++)
if [ "${1:-}" = "--test" ]; then  # the Flower page test drives headless Chromium
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "installing system packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null

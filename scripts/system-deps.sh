#!/usr/bin/env bash
# Install the system packages the judge needs on Debian/Ubuntu, only when they are missing.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v g++ >/dev/null 2>&1 || need+=(g++)
# The other languages' toolchains, looked up on the sandbox's PATH (not ~/.cargo or ~/go: the
# sandbox's uids cannot read home directories).
PATH_SANDBOX=/usr/local/bin:/usr/bin:/bin
have() { PATH=$PATH_SANDBOX command -v "$1" >/dev/null 2>&1; }
have gcc || need+=(gcc)
have javac || need+=(default-jdk-headless)
have node || need+=(nodejs)
have go || need+=(golang-go)
have rustc || need+=(rustc)
have bash || need+=(bash)
if [ "${1:-}" = "--test" ]; then  # the Flower page test drives headless Chromium
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "installing system packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null

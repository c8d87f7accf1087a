#!/usr/bin/env bash
# The base image of deploy/Dockerfile without any image registry: a Debian root file system made
# with debootstrap from Debian's package archive, packed as a tarball and optionally imported
# into the local container engine (`docker import`).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/base-image.sh [-d ROOTFS] [-o TARBALL] [--suite SUITE] [--mirror URL] [--import TAG] [--force]

Builds a minimal Debian root file system (debootstrap --variant=minbase) in ROOTFS, then:
  -o TARBALL    packs it (tar, numeric owners), e.g. to copy to a machine with a container engine
  --import TAG  imports it into the local engine: `docker import` (e.g. judge-debian:bookworm,
                deploy/Dockerfile's default BASE_IMAGE)

  -d ROOTFS     directory of the root file system (/var/tmp/judge-rootfs-SUITE); an existing one
                is reused unless --force
  --suite S     Debian release (bookworm: its python3 is 3.11, the judge's version)
  --mirror URL  Debian archive to fetch from (default: debootstrap's own default)
  --force       rebuild ROOTFS from scratch

Needs root and the debootstrap package (apt-get install debootstrap).  Then, from the repository root:
  deploy/base-image.sh --import judge-debian:bookworm
  docker build -f deploy/Dockerfile -t celery-code-judge .
EOF
}

suite=bookworm
rootfs=
tarball=
tag=
mirror=
force=0
while [ $# -gt 0 ]; do
    case "$1" in
        -d) rootfs=${2:?-d needs a directory}; shift 2 ;;
        -o) tarball=${2:?-o needs a file}; shift 2 ;;
        --suite) suite=${2:?--suite needs a release name}; shift 2 ;;
        --mirror) mirror=${2:?--mirror needs a URL}; shift 2 ;;
        --import) tag=${2:?--import needs a tag}; shift 2 ;;
        --force) force=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "base-image.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
rootfs=${rootfs:-/var/tmp/judge-rootfs-$suite}

if [ "$(id -u)" != 0 ]; then
    echo "base-image.sh: debootstrap needs root" >&2
    exit 1
fi
command -v debootstrap >/dev/null || { echo "base-image.sh: install debootstrap first" >&2; exit 1; }

if [ "$force" = 1 ] || [ ! -f "$rootfs/etc/debian_version" ]; then
    rm -rf "$rootfs"
    mkdir -p "$rootfs"
    # minbase: essential packages and apt only; deploy/Dockerfile installs the rest.
    debootstrap --variant=minbase "$suite" "$rootfs" ${mirror:+"$mirror"}
    # No package lists or downloaded .debs in the image (the Dockerfile runs apt-get update itself).
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
    echo "base-image.sh: root file system in $rootfs"
else
    echo "base-image.sh: reusing $rootfs (--force rebuilds it)"
fi

if [ -n "$tarball" ]; then
    tar -C "$rootfs" --numeric-owner -cf "$tarball" .
    echo "base-image.sh: packed into $tarball"
fi
if [ -n "$tag" ]; then
    tar -C "$rootfs" --numeric-owner -c . | docker import --change 'CMD ["/bin/bash"]' - "$tag"
    echo "base-image.sh: imported as $tag"
fi

#!/usr/bin/env bash
# Fetches real test photos into testdata/, verified by sha256:
# astronaut.png (one face, 512x512) from Debian's python3-skimage package.
# Re-running does nothing when the files are already good.
#
# usage: scripts/fetch-testdata.sh [DEST]   (default: testdata/ at the repo root)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/testdata}
mkdir -p "$dest"

astronaut_sha=88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5

good() { [ -f "$dest/$1" ] && [ "$(sha256sum "$dest/$1" | cut -d' ' -f1)" = "$2" ]; }
good astronaut.png "$astronaut_sha" && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && apt-get download -qq python3-skimage 2>/dev/null); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    (cd "$work" && apt-get download -qq python3-skimage)
fi
dpkg-deb -x "$work"/python3-skimage_*.deb "$work/x"
src=$(find "$work/x" -path '*/skimage/data/astronaut.png' | head -n 1)
if [ -z "$src" ]; then
    echo "fetch-testdata: error: astronaut.png not found in python3-skimage" >&2
    exit 1
fi
got=$(sha256sum "$src" | cut -d' ' -f1)
if [ "$got" != "$astronaut_sha" ]; then
    echo "fetch-testdata: error: astronaut.png has sha256 $got, expected $astronaut_sha; not installed" >&2
    exit 1
fi
mv -f "$src" "$dest/astronaut.png"
echo "fetch-testdata: astronaut.png ok"

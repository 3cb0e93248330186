#!/usr/bin/env bash
# Prepares, on the development machine, what the GPU machine needs to build
# a minimal FFmpeg with NVDEC (it has no FFmpeg, no nasm and no network):
# Debian's nasm and nv-codec-headers (libffmpeg-nvenc-dev) packages and the
# upstream tarball of Debian's own FFmpeg source package, the version this
# machine's libavcodec comes from. They go to DIR (default .cache/device-
# ffmpeg, git-ignored), which a GPU run carries; scripts/device-ffmpeg.sh
# builds FFmpeg from them there. Idempotent; needs Debian's apt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.cache/device-ffmpeg}
mkdir -p "$dir"
cd "$dir"
if ! ls nasm_*.deb >/dev/null 2>&1 || ! ls libffmpeg-nvenc-dev_*.deb >/dev/null 2>&1; then
    apt-get download nasm libffmpeg-nvenc-dev 2>&1 | grep -v "unsandboxed" || true
fi
if ! ls ffmpeg_*.orig.tar.xz >/dev/null 2>&1; then
    # A source list of our own (deb-src of the suites the system uses), so
    # the system's apt configuration is left alone.
    state=$(mktemp -d)
    trap 'rm -rf "$state"' EXIT
    mkdir -p "$state/parts" "$state/lists/partial"
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
        >"$state/parts/debian-src.sources"
    opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$state/parts"
        -o "Dir::State::Lists=$state/lists" -o "APT::Get::Download-Only=true")
    apt-get "${opts[@]}" update -qq
    version=$(dpkg-query -W -f='${source:Version}' libavcodec59 2>/dev/null || true)
    apt-get "${opts[@]}" source --download-only "ffmpeg${version:+=$version}" 2>&1 |
        grep -v "unsandboxed" || true
    rm -f ffmpeg_*.debian.tar.xz ffmpeg_*.dsc
fi
ls -la "$dir"

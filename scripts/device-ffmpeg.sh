#!/usr/bin/env bash
# Builds, on the GPU machine (no FFmpeg, no nasm, no network), a minimal
# shared FFmpeg from Debian's own source tarball with the NVDEC/CUVID
# decoders, from the files scripts/fetch-device-ffmpeg.sh prepared (carried
# in DIR). omma then builds against it (PKG_CONFIG_PATH) so its video tests
# run there; its ffmpeg tool is the decode benchmark's peer.
#   usage: scripts/device-ffmpeg.sh DIR [PREFIX]     (~40 s on 16 cores)
# Prints the environment to use: eval "$(scripts/device-ffmpeg.sh DIR)".
set -euo pipefail
src=$(cd "${1:?usage: device-ffmpeg.sh DIR [PREFIX]}" && pwd)
prefix=${2:-/tmp/omma-ffmpeg}
if [ ! -f "$prefix/lib/pkgconfig/libavcodec.pc" ]; then
    work=$(mktemp -d)
    dpkg -x "$src"/nasm_*.deb "$work/nasm"
    dpkg -x "$src"/libffmpeg-nvenc-dev_*.deb "$work/nvh"
    export PATH=$work/nasm/usr/bin:$PATH
    pc=$(dirname "$(find "$work/nvh" -name ffnvcodec.pc | head -n 1)")
    sed -i "s|^prefix=.*|prefix=$work/nvh/usr|" "$pc/ffnvcodec.pc"
    export PKG_CONFIG_PATH=$pc
    tar -xf "$src"/ffmpeg_*.orig.tar.xz -C "$work"
    cd "$work"/ffmpeg-*/
    ./configure --prefix="$prefix" --disable-everything --disable-doc --disable-debug \
        --enable-shared --disable-static --enable-ffnvcodec --enable-nvdec --enable-cuvid \
        --enable-hwaccel=h264_nvdec,hevc_nvdec,mjpeg_nvdec,vp9_nvdec \
        --enable-decoder=h264,hevc,mjpeg,vp9,mpeg4,h264_cuvid,hevc_cuvid,mjpeg_cuvid \
        --enable-parser=h264,hevc,mjpeg,vp9,mpeg4video \
        --enable-demuxer=mov,matroska,avi,h264,hevc,rtsp,mjpeg,mpegts \
        --enable-protocol=file,pipe,tcp,udp,rtp,http \
        --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb --enable-muxer=null,mp4,avi \
        --enable-encoder=wrapped_avframe,mpeg4,mjpeg \
        --enable-filter=null,format,scale,hwdownload --enable-swscale \
        >"$work/configure.log" 2>&1 || { tail -n 20 "$work/configure.log" >&2; exit 1; }
    make -j"$(nproc)" >"$work/make.log" 2>&1 && make install >>"$work/make.log" 2>&1 ||
        { tail -n 20 "$work/make.log" >&2; exit 1; }
    # nv-codec-headers beside it: omma's NVDEC decoder (src/io/video_nvdec.c) needs their types.
    mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
    cp -r "$work/nvh/usr/include/ffnvcodec" "$prefix/include/"
    sed "s|^prefix=.*|prefix=$prefix|" "$pc/ffnvcodec.pc" >"$prefix/lib/pkgconfig/ffnvcodec.pc"
    rm -rf "$work"
fi
echo "export PKG_CONFIG_PATH=$prefix/lib/pkgconfig LD_LIBRARY_PATH=$prefix/lib PATH=$prefix/bin:\$PATH"

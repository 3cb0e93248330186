#!/usr/bin/env bash
# Installs the Debian packages omma builds and tests with, only those missing.
# Idempotent: does nothing (not even apt-get update) when all are present.
set -euo pipefail

# Debian packages needed as such (libraries, headers, runtimes).
packages=(
    build-essential cmake pkg-config   # the build
    clang llvm libclang-rt-14-dev      # libFuzzer targets and sanitizers with clang
    xz-utils ca-certificates           # unpacking .deb test data
    libpng-dev                         # PNG images (omma run, the tests)
    libjpeg-dev                        # JPEG images (omma run)
    libavformat-dev libavcodec-dev     # video files (omma run, src/io/video_*.c):
    libavutil-dev libswscale-dev       #   FFmpeg's demuxers, decoders, encoders, scaler
    libffmpeg-nvenc-dev                #   NVDEC's API types (header only): GPU decoding
    ffmpeg                             # the CLI: fetch-testdata.sh makes the test videos
    libmicrohttpd-dev                  # the OpenMetrics endpoint and the live view (--metrics-port, --ui)
    libjson-c-dev                      # omma stream --config FILE (src/cli/stream_config.c)
    libv4l-dev                         # V4L2 cameras (src/runtime/source_v4l2.c): libv4l2, libv4lconvert
    python3-jsonschema                 # tests/pipeline/test_output_schema.sh: docs/omma-faces.schema.json
    python3-gi gir1.2-gst-rtsp-server-1.0   # tests/runtime/test_net_stream.sh: GStreamer's RTSP
    gstreamer1.0-plugins-base gstreamer1.0-plugins-good  #   server on loopback (qtdemux, rtph264pay,
    gstreamer1.0-plugins-bad gstreamer1.0-libav          #   h264parse, avdec_h264, openjpegenc, rtpj2kpay)
    librdkafka-dev                     # result sinks (src/sink/): Kafka (and its mock cluster, the tests)
    libnats-dev                        #   NATS JetStream
    libmosquitto-dev                   #   MQTT
    nats-server mosquitto              # the sink tests' servers, on loopback
    mosquitto-clients                  #   and mosquitto_sub
    python3-dev python3-numpy          # the Python package (python/): headers, NumPy's C API
    python3-setuptools python3-pip     #   pip install ./python, offline
    python3-pytest                     #   its tests (tests/python/)
    chromium chromium-driver           # the live view's browser test (tests/ui/test_ui_browser.py):
                                       #   headless Chromium through chromedriver's WebDriver API
)
# Commands that may come from elsewhere (npm ships its own updates): the
# Debian package is installed only when the command is missing.
declare -A commands=([node]=nodejs [npm]=npm)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
for c in "${!commands[@]}"; do
    command -v "$c" >/dev/null || missing+=("${commands[$c]}")
done

if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "install-deps: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit is not a Debian package here and is optional: without
# it omma builds the CPU backend only (CMake option OMMA_CUDA).
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda_home/bin/nvcc" ] && ! command -v nvcc >/dev/null; then
    echo "install-deps: the CUDA toolkit (nvcc) was not found at $cuda_home: omma will build" \
        "the CPU backend only (install CUDA 13 or set CUDA_HOME for the GPU backend)"
fi

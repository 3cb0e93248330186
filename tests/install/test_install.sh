#!/bin/sh
# cmake --install into a temporary prefix, then tests/install/consumer.c
# built against it four ways: pkg-config + cc (libomma.so, and libomma.a
# with --static), and a CMake project with find_package(omma) (omma::omma
# and omma::omma_static). Each must find the one face on the photo. A
# sanitizer build's libraries carry -fsanitize in omma.pc's Libs and the
# targets' link options, so the consumers link its runtime themselves.
#   test_install.sh BUILD_DIR SOURCE_DIR CC
build=${1:?build dir}
src=${2:?source dir}
cc=${3:-cc}
fail() { echo "FAIL: $*" >&2; exit 1; }
for m in face_detection_short_range face_landmark; do
    [ -f "$src/models/$m.tflite" ] || { echo "SKIP: $src/models/$m.tflite missing"; exit 77; }
done
[ -f "$src/testdata/astronaut.png" ] || { echo "SKIP: $src/testdata/astronaut.png missing"; exit 77; }
command -v pkg-config >/dev/null || fail "pkg-config not found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/omma-install.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "cmake --install failed"; }

libdir=$(dirname "$(find "$prefix" -name libomma.a | head -n 1)")
[ -n "$libdir" ] && [ "$libdir" != . ] || fail "no libomma.a installed"
for f in "$libdir/libomma.so" "$libdir/libomma.so.0" "$libdir/libomma.so.0.1.0" \
    "$libdir/pkgconfig/omma.pc" "$libdir/cmake/omma/omma-config.cmake" \
    "$libdir/cmake/omma/omma-config-version.cmake" "$libdir/cmake/omma/omma-targets.cmake" \
    "$prefix/include/omma/omma.h" "$prefix/include/omma/version.h" "$prefix/bin/omma"; do
    [ -e "$f" ] || fail "$f not installed"
done
"$prefix/bin/omma" --version | grep -q '^omma 0\.1\.0 ' || fail "the installed omma --version"

args="$src/testdata/astronaut.png $src/models/face_detection_short_range.tflite
      $src/models/face_landmark.tflite"
expect_one_face() { # NAME BINARY
    out=$("$2" $args 2>&1)
    rc=$?
    echo "$1: $out" | sed 's/^/  /'
    [ $rc -eq 0 ] || fail "$1: exit $rc"
    echo "$out" | grep -qx 'faces: 1' || fail "$1: expected 'faces: 1'"
}

# pkg-config, with the prefix's omma.pc (relocatable: ${pcfiledir}).
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists omma || fail "pkg-config does not find omma"
[ "$(pkg-config --modversion omma)" = 0.1.0 ] || fail "omma.pc version"
cflags="$(pkg-config --cflags omma libpng)"
# shellcheck disable=SC2046
$cc $cflags "$src/tests/install/consumer.c" -o "$tmp/consumer-pc" \
    $(pkg-config --libs omma libpng) -Wl,-rpath,"$libdir" 2>"$tmp/cc.log" ||
    { cat "$tmp/cc.log"; fail "cc with pkg-config --libs omma"; }
expect_one_face "pkg-config, libomma.so" "$tmp/consumer-pc"
ldd "$tmp/consumer-pc" | grep -q "$libdir/libomma.so.0" || fail "consumer-pc does not use $libdir"
static_libs=""
for w in $(pkg-config --static --libs omma); do # libomma.a in the place of -lomma
    [ "$w" = -lomma ] && w=$libdir/libomma.a
    static_libs="$static_libs $w"
done
$cc $cflags "$src/tests/install/consumer.c" -o "$tmp/consumer-pc-static" \
    $static_libs $(pkg-config --libs libpng) 2>"$tmp/cc.log" ||
    { cat "$tmp/cc.log"; fail "cc with pkg-config --static --libs omma"; }
expect_one_face "pkg-config --static, libomma.a" "$tmp/consumer-pc-static"
! ldd "$tmp/consumer-pc-static" | grep -q libomma || fail "consumer-pc-static uses libomma.so"

# CMake: find_package(omma).
for kind in shared static; do
    flag=OFF
    [ $kind = static ] && flag=ON
    b=$tmp/cmake-$kind
    cmake -S "$src/tests/install/project" -B "$b" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DOMMA_CONSUMER_STATIC=$flag >"$tmp/cmake.log" 2>&1 &&
        cmake --build "$b" >>"$tmp/cmake.log" 2>&1 ||
        { cat "$tmp/cmake.log"; fail "the CMake consumer ($kind)"; }
    expect_one_face "find_package(omma), $kind" "$b/consumer"
done
echo ok

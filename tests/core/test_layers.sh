#!/bin/sh
# The layers of src/ (README "Layout"), bottom to top: a file includes
# headers of its own layer and of those below it, never of a layer above.
# A folder under src/ missing from this list is an error too, so a new
# layer gets its place here when it is made.
src=${1:?usage: test_layers.sh SOURCE_DIR}/src
order="core gpu model engine vision io ipc sink metrics lsl pipeline runtime cluster ui cli"
rank() { # LAYER -> its position, or nothing
    n=0
    for l in $order; do
        n=$((n + 1))
        [ "$l" = "$1" ] && echo $n && return
    done
}
fail=0
for dir in "$src"/*/; do
    layer=$(basename "$dir")
    r=$(rank "$layer")
    if [ -z "$r" ]; then
        echo "FAIL: src/$layer is not in the layer order ($order)"
        fail=1
        continue
    fi
    for f in "$dir"*; do
        # "layer/file.h" includes, with their line numbers.
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/' "$f" |
            sed 's/^\([0-9]*\):[^"]*"\([a-z_]*\)\/.*/\1 \2/' |
            while read -r line dep; do
                d=$(rank "$dep")
                if [ -n "$d" ] && [ "$d" -gt "$r" ]; then
                    echo "FAIL: src/$layer/$(basename "$f"):$line includes $dep/ (a layer above $layer)"
                    echo x
                fi
            done
    done
done >"${TMPDIR:-/tmp}/omma-layers.$$"
grep -v '^x$' "${TMPDIR:-/tmp}/omma-layers.$$"
grep -q . "${TMPDIR:-/tmp}/omma-layers.$$" && fail=1
rm -f "${TMPDIR:-/tmp}/omma-layers.$$"
[ $fail -eq 0 ] && echo "ok: every include in src/ goes to its own layer or one below ($order)"
exit $fail

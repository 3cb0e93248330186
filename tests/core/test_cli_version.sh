#!/bin/sh
# `omma --version` and `omma version`: one line "omma 0.1.0 (commit C)
# features: ...", exit 0, the same for both spellings.
# usage: test_cli_version.sh PATH/TO/omma
omma=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$omma" ] || fail "no omma binary at '$omma'"
a=$("$omma" --version) || fail "omma --version exited $?"
b=$("$omma" version) || fail "omma version exited $?"
echo "$a"
[ "$a" = "$b" ] || fail "'omma version' printed '$b', '--version' '$a'"
echo "$a" | grep -Eq '^omma 0\.1\.0 \(commit ([0-9a-f]{7,40}|unknown)\) features: .*libpng' ||
    fail "unexpected format: $a"
[ "$(echo "$a" | wc -l)" -eq 1 ] || fail "more than one line"
echo ok

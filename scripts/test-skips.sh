#!/bin/sh
# After ctest (make test): one line per skipped test with its reason, from
# the JUnit report of the run (ctest --output-junit): the test's
# "SKIP: <reason>" line (tests/testing.h's SKIP_TEST and the test scripts
# print it before exit 77), else its last line of output.
#   scripts/test-skips.sh JUNIT_XML
xml=${1:?junit xml}
[ -f "$xml" ] || exit 0
awk '
function unescape(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s)
    gsub(/&apos;/, "\047", s); gsub(/&amp;/, "\\&", s)
    return s
}
function flush() {
    if (skip) {
        if (reason == "") reason = (last != "" ? last : "no reason printed")
        lines[++n] = sprintf("  %-30s %s", name, reason)
    }
    skip = 0
}
/<testcase / {
    flush()
    name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name)
    skip = ($0 ~ /status="notrun"/); reason = ""; last = ""; out = 0
}
/<system-out>/ { out = 1; sub(/.*<system-out>/, "") }
out {
    line = $0; end = sub(/<\/system-out>.*/, "", line)
    line = unescape(line)
    if (reason == "" && line ~ /SKIP: /) { reason = line; sub(/.*SKIP: /, "", reason) }
    if (line ~ /[^ \t]/) last = line
    if (end) out = 0
}
END {
    flush()
    if (n == 0) exit 0
    printf "%d test(s) skipped:\n", n
    for (i = 1; i <= n; i++) print lines[i]
}' "$xml"

#!/usr/bin/env bash
# make run: the main job on its built-in default. Until the face pipeline
# exists this is `omma info`; on a machine without a GPU it says so and exits
# 0, since that is the expected outcome there.
omma=${1:-build/omma}
"$omma" info
rc=$?
if [ "$rc" -eq 3 ]; then
    echo "make run: no GPU on this machine (omma info exit code 3); nothing else to run"
    exit 0
fi
exit "$rc"

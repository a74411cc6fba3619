#!/bin/sh
# Measures `ideviceinstaller -i` upload throughput into a virtual device (VirtualDevice emulator).
# Usage: scripts/bench-virtual-install.sh [SIZE_MB] [debug|release]   (default 200, debug: the recorded
# figures in BENCHMARKS.md §1 are from a debug build)
# Builds and runs `hadeploy-bench virtual-install`; prints its BENCH lines. Fails when the run fails.
set -eu
cd "$(dirname "$0")/.."
SIZE_MB="${1:-200}"
CONFIGURATION="${2:-debug}"
case "$CONFIGURATION" in debug | release) ;; *) echo "usage: $0 [SIZE_MB] [debug|release]" >&2; exit 2 ;; esac
scripts/idevice-tools.sh >/dev/null
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! swift build -c "$CONFIGURATION" --product hadeploy-bench >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "bench-virtual-install: building hadeploy-bench failed" >&2
    exit 1
fi
bin="$(swift build -c "$CONFIGURATION" --show-bin-path)/hadeploy-bench"
echo "machine: $(nproc) cores, $(uname -srm), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "swift: $(swift --version 2>&1 | head -1)   build: $CONFIGURATION (hadeploy-bench)"
"$bin" virtual-install --megabytes "$SIZE_MB"

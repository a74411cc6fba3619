#!/bin/sh
# Measures `ideviceinstaller -i` upload throughput into a virtual device (VirtualDevice emulator).
# Usage: scripts/bench-virtual-install.sh [SIZE_MB]   (default 200)
# Prints the BENCH lines; see Tests/VirtualDeviceTests/BENCHMARK-NOTES.md for recorded figures.
set -eu
cd "$(dirname "$0")/.."
SIZE_MB="${1:-200}"
"$(dirname "$0")/idevice-tools.sh" >/dev/null
echo "machine: $(nproc) cores, $(uname -srm), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "swift: $(swift --version 2>&1 | head -1)   build: debug (swift test)"
VDEV_BENCH_MB="$SIZE_MB" swift test --filter installThroughputBenchmark 2>&1 | grep -E 'BENCH|✘|error:' || true

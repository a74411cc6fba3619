#!/usr/bin/env bash
# The suites `make test-mac` runs on a Mac, run here once more as a Mac would run them, as far as Linux
# can: with a TMPDIR as long as macOS's (`/var/folders/xx/<30 characters>/T/`, 49 bytes: socket paths
# under it must still fit sun_path's 104) and reached through a symbolic link, as macOS's /var is one
# (to /private/var): paths resolved two ways must still be the same file. Uses the release build
# `make test` made; SWIFT and RELEASE_BUILD come from the Makefile.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${SWIFT:=swift}"
real="$(mktemp -d /tmp/hadeploy-private-XXXXXX)"
link="$(mktemp -u /tmp/hdvar-XXXX)"
trap 'rm -f "$link"; rm -rf "$real"' EXIT
mkdir -p "$real/var"
ln -s "$real/var" "$link"
# /tmp/hdvar-XXXX (14) + /folders/ (9) + xx/ (3) + 20 characters + /T/ (3) = 49 bytes, as on a Mac.
tmp="$link/folders/zq/$(printf 'n%.0s' $(seq 1 20))/T/"
mkdir -p "$tmp"
chmod 700 "$tmp"
echo "=== the Mac suites with TMPDIR=$tmp (${#tmp} bytes, through a symbolic link)"
failed=""
for suite in ${MAC_SUITES:?}; do
    echo "=== $suite (Mac-like TMPDIR)"
    log="$real/$suite.log"
    TMPDIR="$tmp" $SWIFT test -c release -Xswiftc -enable-testing --scratch-path .build-release --skip-build \
        --filter "^$suite\\." --skip ContactSheetTests > "$log" 2>&1 || failed="$failed $suite"
    grep -aE "recorded an issue|Test run with" "$log" | head -n 30 || true
done
if [ -n "${MAC_C_TESTS:-}" ]; then
    echo "=== MobileDeviceTests, the C-facing suites the Mac job runs (Mac-like TMPDIR)"
    log="$real/MobileDeviceTests.log"
    TMPDIR="$tmp" $SWIFT test -c release -Xswiftc -enable-testing --scratch-path .build-release --skip-build \
        --filter "^MobileDeviceTests\.($MAC_C_TESTS)" > "$log" 2>&1 || failed="$failed MobileDeviceTests"
    grep -aE "recorded an issue|Test run with" "$log" | head -n 30 || true
fi
if [ -n "$failed" ]; then echo "FAILED with a Mac-like TMPDIR:$failed"; exit 1; fi
echo "the Mac suites passed with a Mac-like TMPDIR"

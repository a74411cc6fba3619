#!/usr/bin/env bash
# The context owns every side effect. Three rules, each listing every offending line; the script
# fails when there is one:
#
# 1. No `FileManager.default`, `Date()`, `Date.init`, `Date.now` or `ProcessInfo` in Sources outside
#    the live implementations (HADeployCore's Live* types) and the emulator's own clock.
# 2. Waits, deadlines and elapsed times go through the context's clock (`WallClock`: `sleep`,
#    `instant`, `deadline(after:)`, `withDeadline`): no `Task.sleep`, `ContinuousClock()` or
#    `ContinuousClock.now` outside HADeployCore (the clock's live implementation, the process
#    runner) and the emulator (VirtualDevice, HADeployVirtual: a twin keeps its own time). A
#    synchronous loop that times its own poll(2) or read timeouts on a thread may read
#    `ContinuousClock.now`, never sleep: list its file in `clock_readers`, with why.
# 3. The live implementations are HADeployCore's alone: no `Live…` type is declared public, and none
#    is named (`LiveFileSystem()`, `LiveClock()`…) outside HADeployCore. `HADeployContext.live()` is
#    the one door; edges take the file system, clock and environment from their caller. Tests and
#    benchmarks take them from there too (TestSupport's `TestHost`), never through
#    `@testable import HADeployCore`.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed=(
    Sources/HADeployCore/LiveFileSystem.swift
    Sources/HADeployCore/WallClock.swift
    Sources/HADeployCore/SystemEnvironment.swift
    Sources/VirtualDevice/Device/EmulatorClock.swift
)

# Files not converted yet: each must still need it (a converted file left here fails too), and the
# list only shrinks.
pending=(
)

# Rule 2: where waiting on Swift's clock directly is the job.
wait_allowed_dirs=(
    Sources/HADeployCore/
    Sources/VirtualDevice/
    Sources/HADeployVirtual/
)

# Rule 2: synchronous C-level loops that read ContinuousClock.now for their own poll(2) budget (no
# task to sleep, no clock to wake them: each poll or read is bounded and the loop checks the time).
clock_readers=(
    # A plain socket and poll(2) on a background queue, bounded by the probe's timeout.
    Sources/HADeployDrivers/Drivers/TunneldProbe.swift
    # Non-blocking connect(2) to every address of the host, each poll(2) bounded by what is left.
    Sources/SSHTransport/TCPConnector.swift
    # The device list read on the session's executor thread, 100 ms per libssh read.
    Sources/SSHTransport/ForwardPump.swift
    # One multicast DNS browse on the Wi-Fi discovery thread: each receive bounded by the window left.
    Sources/MulticastDNS/MDNSBrowser.swift
)

status=0

# Lists the lines of Sources matching $1, minus comments and the files or folders given after it.
offending() {
    local pattern=$1
    shift
    local hits
    hits=$(grep -rnE "$pattern" Sources --include='*.swift' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
    for exempt in "$@"; do
        hits=$(printf '%s\n' "$hits" | grep -v "^$exempt" || true)
    done
    printf '%s' "$hits"
}

# Rule 1.
pattern='FileManager\.default|(^|[^A-Za-z0-9_.])Date(\(\)|\.(init|now)([^A-Za-z0-9_]|$))|(^|[^A-Za-z0-9_])ProcessInfo([^A-Za-z0-9_]|$)'
# ${a[@]+…}: bash 3.2 (macOS's /bin/bash) takes an empty array under `set -u` as unbound.
hits=$(offending "$pattern" "${allowed[@]/%/:}" ${pending[@]+"${pending[@]/%/:}"})
if [ -n "$hits" ]; then
    echo "side effects outside the context (use its fileSystem, clock or system):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
for file in ${pending[@]+"${pending[@]}"}; do
    if ! grep -qE "$pattern" "$file" 2>/dev/null; then
        echo "$file: no longer needs to be listed as pending in $0" >&2
        status=1
    fi
done

# Rule 2.
hits=$(offending 'Task\.sleep|ContinuousClock\(\)' "${wait_allowed_dirs[@]}")
if [ -n "$hits" ]; then
    echo "waits outside the context's clock (use clock.sleep, clock.withDeadline):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
hits=$(offending 'ContinuousClock\.now' "${wait_allowed_dirs[@]}" "${clock_readers[@]/%/:}")
if [ -n "$hits" ]; then
    echo "time read outside the context's clock (use clock.instant(), clock.deadline(after:), clock.elapsed(since:)):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
for file in "${clock_readers[@]}"; do
    if ! grep -q 'ContinuousClock\.now' "$file" 2>/dev/null; then
        echo "$file: no longer reads ContinuousClock.now; remove it from clock_readers in $0" >&2
        status=1
    fi
done

# Rule 3.
hits=$(offending 'public[[:space:]]+(final[[:space:]]+)?(struct|class|enum|actor)[[:space:]]+Live[A-Z]')
if [ -n "$hits" ]; then
    echo "a public live implementation (keep Live* internal to HADeployCore; HADeployContext.live() is the door):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
hits=$(offending '(^|[^A-Za-z0-9_])Live[A-Z][A-Za-z0-9]*' Sources/HADeployCore/)
if [ -n "$hits" ]; then
    echo "a live implementation named outside HADeployCore (take the effect from the caller's context):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
hits=$(grep -rnE '(^|[^A-Za-z0-9_])Live[A-Z][A-Za-z0-9]*\(|@testable[[:space:]]+import[[:space:]]+HADeployCore' \
    Tests Benchmarks --include='*.swift' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
if [ -n "$hits" ]; then
    echo "a live implementation reached from tests or benchmarks (use TestHost or HADeployContext.live()):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
exit $status

#!/usr/bin/env bash
# The context owns every side effect: no `FileManager.default`, `Date()` or `ProcessInfo` in Sources
# outside the live implementations (HADeployCore's Live* types) and the emulator's own clock.
# Lists every offending line and fails when there is one. The emulator may keep its own clock behind
# one type: list that type's file in `allowed`.
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

pattern='FileManager\.default|(^|[^A-Za-z0-9_.])Date\(\)|(^|[^A-Za-z0-9_])ProcessInfo([^A-Za-z0-9_]|$)'
status=0
hits=$(grep -rnE "$pattern" Sources --include='*.swift' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
for file in "${allowed[@]}" "${pending[@]}"; do
    hits=$(printf '%s\n' "$hits" | grep -v "^$file:" || true)
done
if [ -n "$hits" ]; then
    echo "side effects outside the context (use its fileSystem, clock or system):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
for file in "${pending[@]}"; do
    if ! grep -qE "$pattern" "$file" 2>/dev/null; then
        echo "$file: no longer needs to be listed as pending in $0" >&2
        status=1
    fi
done
exit $status

#!/usr/bin/env bash
# `make test` as CI runs it on a fresh machine, timed: a clone of this checkout's committed HEAD in a
# temporary folder, an empty HOME (no .build, no venvs, no SwiftPM or pip cache), the system PATH and
# Swift's directory only. The system packages are shared (as on a machine where `make demo` ran).
# As root, the copy the suites run in as the test account is made in that folder too (no build yet).
# Prints the wall time and exit status; the log is kept in the folder it names.
#   scripts/fresh-test.sh        (BENCHMARKS.md, "`make test` wall time")
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hadeploy-fresh-test.XXXXXX")"
# mktemp makes it 0700; a checkout lives where other users may pass through (CI's workspace, a
# home folder of 0755), and the confinement tests run a client as nobody from the checkout's venv.
chmod 755 "$tmp"
mkdir -p "$tmp/home"
git clone -q --no-local "$repo" "$tmp/hadeploy" || exit 1
git -C "$tmp/hadeploy" checkout -q --detach "$(git -C "$repo" rev-parse HEAD)" || exit 1
swift_bin="$(dirname "$(command -v swift)")" || { echo "fresh-test: swift is not on PATH" >&2; exit 1; }
echo "fresh-test: make test in $tmp/hadeploy (log: $tmp/test.log)"
start=$SECONDS
(cd "$tmp/hadeploy" && env -i HOME="$tmp/home" \
    PATH="$swift_bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb USER="$(id -un)" LOGNAME="$(id -un)" \
    HADEPLOY_TEST_BASE="$tmp/as-user" make test) > "$tmp/test.log" 2>&1
status=$?
elapsed=$((SECONDS - start))
echo "fresh-test: make test exit $status in $((elapsed / 60))m$((elapsed % 60))s"
grep -E '^=== .*: [0-9]+ s$|^=== waited|Build complete|^binary under test' "$tmp/test.log"
exit $status

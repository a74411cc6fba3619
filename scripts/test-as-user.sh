#!/usr/bin/env bash
# `make test` started as root (CI): the suites run as the ordinary account hadeploy-test, as users run
# hadeploy, on a copy of this tree that account owns (/var/tmp/hadeploy-test/tree: the checkout with
# its .git, without builds, venvs or reports; its own build and venvs stay there between runs). Then
# the few tests that need root run as root on that copy (`make test-root`, each says why), and the
# account gets its files back.
#   scripts/test-as-user.sh            (as root; make test calls it)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "test-as-user: run as root (make test does this itself)" >&2; exit 1; }
user=hadeploy-test
# HADEPLOY_TEST_BASE: another place for the copy (scripts/fresh-test.sh: one with no build in it yet).
base="${HADEPLOY_TEST_BASE:-/var/tmp/hadeploy-test}"
tree="$base/tree"

id "$user" > /dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home="$(getent passwd "$user" | cut -d: -f6)"
# root's own tool folders (pyenv's shims under /root) are not the account's.
user_path="$(tr ':' '\n' <<< "$PATH" | grep -v '^/root' | paste -sd: -)"
as_user() {
  runuser -u "$user" -- env -i HOME="$home" USER="$user" LOGNAME="$user" PATH="$user_path" LANG=C.UTF-8 "$@"
}

# Swift packages from this machine's local mirror, if it has one: its repositories are root's, and git
# refuses to read another owner's repository unless it is named safe (each one, not `*`).
if [ -d /opt/swift-packages ]; then
  safe="$(as_user git config --global --get-all safe.directory || true)"
  for repo in /opt/swift-packages/*/*.git; do
    grep -qxF "$repo" <<< "$safe" || as_user git config --global --add safe.directory "$repo"
  done
fi

# The copy: passable by other users (tests run pymobiledevice3 as `nobody` from its venv), writable
# only by the account. Its build folders (the release build, brew-gen's) and venvs stay from one run
# to the next, and only files whose content changed are written again (scripts/sync-tree.py), so a
# second `make test` builds only what changed, also from a fresh clone; a fresh machine builds
# everything.
install -d -o "$user" -g "$user" -m 755 "$base"
[ -d "$tree" ] || as_user mkdir -m 755 "$tree"
python3 scripts/sync-tree.py . "$tree" "$user:$user"
echo "make test: the suites run as $user in $tree"

status=0
as_user make -C "$tree" --no-print-directory test-suites || status=1
make -C "$tree" --no-print-directory test-root || status=1
chown -R "$user:$user" "$tree"
if [ "$status" -ne 0 ]; then
  echo "=== make test failed; the failing tests of both runs (logs in $tree/.build-release/logs):"
  grep -aE '✘ Test .*(recorded an issue|failed after)|Fatal error|Test Case .* failed' \
    "$tree"/.build-release/logs/*.log 2> /dev/null | head -60 || true
fi
exit $status

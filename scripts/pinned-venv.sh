#!/bin/sh
# Usage: scripts/pinned-venv.sh NAME PACKAGE==VERSION...
# Creates .venv-NAME/ at the repo root holding exactly these pinned packages (and what they need).
# Idempotent: does nothing when the venv already has every pinned version. Test processes may call
# it at once: one creates, the others wait. Needs python3 (3.9+) with the venv module (Debian:
# python3-venv, installed here when missing: directly as root, else through sudo).
set -eu

[ $# -ge 2 ] || { echo "usage: $0 NAME PACKAGE==VERSION..." >&2; exit 64; }
name=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-$name"
python="$venv/bin/python"

have_pins() {
    [ -x "$python" ] || return 1
    for pin in "$@"; do
        "$python" - "${pin%%==*}" "${pin#*==}" <<'PY' >/dev/null 2>&1 || return 1
import importlib.metadata as m, sys
assert m.version(sys.argv[1]) == sys.argv[2]
PY
    done
}

have_pins "$@" && exit 0

mkdir -p "$venv"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv/.lock"
    flock -w 900 9
    have_pins "$@" && exit 0
fi

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    if command -v apt-get >/dev/null 2>&1; then
        $sudo apt-get update -qq
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    else
        echo "pinned-venv.sh: python3 lacks the venv module; install it (python3-venv)" >&2
        exit 1
    fi
fi

[ -x "$python" ] || python3 -m venv "$venv"
"$python" -m pip install --quiet --disable-pip-version-check "$@"
have_pins "$@" || { echo "pinned-venv.sh: $venv does not hold $* after install" >&2; exit 1; }

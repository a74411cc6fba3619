#!/bin/sh
# Creates .venv-pmd3/ at the repo root with pymobiledevice3, the second, independent client the
# virtual devices are checked against (PyMobileDevice3FidelityTests). Pinned to one release: its
# protocol expectations (e.g. the crash mover's "ping\0") are what the twins are held to.
# Idempotent: does nothing when the venv already has the pinned version. Needs python3 (3.9+) with
# the venv module (Debian: apt-get install python3-venv, done here when missing).
set -eu

PMD3_VERSION=11.45.0

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-pmd3"
python="$venv/bin/python"

have_pmd3() {
    [ -x "$venv/bin/pymobiledevice3" ] && "$python" - <<PY >/dev/null 2>&1
import importlib.metadata as m
assert m.version("pymobiledevice3") == "$PMD3_VERSION"
PY
}

have_pmd3 && exit 0

mkdir -p "$venv"
# Test processes may call this at once: one creates, the others wait.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv/.lock"
    flock -w 900 9
    have_pmd3 && exit 0
fi

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    if command -v apt-get >/dev/null 2>&1; then
        $sudo apt-get update -qq
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    else
        echo "pmd3-venv.sh: python3 lacks the venv module; install it (python3-venv)" >&2
        exit 1
    fi
fi

[ -x "$python" ] || python3 -m venv "$venv"
"$python" -m pip install --quiet --disable-pip-version-check "pymobiledevice3==$PMD3_VERSION"
have_pmd3 || { echo "pmd3-venv.sh: $venv does not have pymobiledevice3 $PMD3_VERSION after install" >&2; exit 1; }

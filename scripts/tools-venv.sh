#!/bin/sh
# Creates .venv-tools/ at the repo root with the Python reference tools the tests compare against:
# python-dotenv (the .env grammar hadeploy follows) and PyYAML (a second YAML parser for templates).
# Idempotent: does nothing when the venv already has the pinned versions. Needs python3 (3.9+) with
# the venv module (Debian: apt-get install python3-venv, done here when missing).
set -eu

DOTENV_VERSION=1.2.2
PYYAML_VERSION=6.0.3

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-tools"
python="$venv/bin/python"

have_tools() {
    [ -x "$python" ] && "$python" - <<PY >/dev/null 2>&1
import importlib.metadata as m
assert m.version("python-dotenv") == "$DOTENV_VERSION"
assert m.version("PyYAML") == "$PYYAML_VERSION"
PY
}

have_tools && exit 0

mkdir -p "$venv"
# Tests in several processes may call this at once: one creates, the others wait (flock is Linux's;
# without it, the check above after creation keeps the race harmless enough for a one-off setup).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$venv/.lock"
    flock -w 600 9
    have_tools && exit 0
fi

if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    if command -v apt-get >/dev/null 2>&1; then
        $sudo apt-get update -qq
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    else
        echo "tools-venv.sh: python3 lacks the venv module; install it (python3-venv)" >&2
        exit 1
    fi
fi

[ -x "$python" ] || python3 -m venv "$venv"
"$python" -m pip install --quiet --disable-pip-version-check \
    "python-dotenv==$DOTENV_VERSION" "PyYAML==$PYYAML_VERSION"
have_tools || { echo "tools-venv.sh: $venv does not have the pinned tools after install" >&2; exit 1; }

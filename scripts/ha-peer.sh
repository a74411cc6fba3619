#!/usr/bin/env bash
# A real, headless Home Assistant 2024.3.3 on loopback, as a test peer for the HomeAssistant target.
#
#   scripts/ha-peer.sh install           idempotent: venv in <repo>/.venv-ha from scripts/ha/requirements.lock
#   scripts/ha-peer.sh start DIR PORT    config dir DIR (created if needed), 127.0.0.1:PORT; waits until
#                                        RUNNING, onboards headlessly, writes a long-lived token to
#                                        DIR/token (mode 0600, never printed) and the pid to DIR/ha.pid
#   scripts/ha-peer.sh stop DIR          SIGTERM and wait (SIGKILL after 30 s)
#
# Environment: HA_PEER_WATCH_PID=<pid>  stop Home Assistant (SIGTERM) when that process exits, so a test
#              process that dies never leaves a server behind.
#              HA_PEER_START_TIMEOUT     seconds to wait for readiness (default 90).
# Facts behind every step: shared HOME-ASSISTANT.md (§1 pins, §4 onboarding, §9 pitfalls).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
data="$here/ha"
venv="${HA_PEER_VENV:-$repo/.venv-ha}"

die() { echo "ha-peer: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# The lock holds CPython 3.11 x86_64 binary wheels, and HA 2024.3.3 is the last release for 3.11.
find_python() {
    local candidate
    for candidate in python3.11 python3 /usr/bin/python3.11; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

# sha256sum is GNU coreutils; macOS has shasum (the same hash, the same first field).
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
lock_stamp() { cat "$data/requirements.lock" "$data/constraints.txt" | sha256 | cut -d' ' -f1; }

# What the peer imports beyond HA's always-loaded integrations: mobile_app (nacl), conversation's
# dependencies, and mqtt (paho-mqtt, the version HA 2024.3.3's mqtt manifest pins: with --skip-pip
# HA never installs it itself).
check_venv() {
    "$venv/bin/python" -c 'import nacl, numpy, hassil, home_assistant_intents, mutagen, haffmpeg' &&
        "$venv/bin/python" -c 'import importlib.metadata as m; v = m.version("paho-mqtt"); assert v == "1.6.1", v' &&
        "$venv/bin/python" -c 'import homeassistant.const as c; assert c.__version__ == "2024.3.3", c.__version__'
}

cmd_install() {
    local stamp
    stamp="$(lock_stamp)"
    if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.hadeploy-lock" 2>/dev/null)" = "$stamp" ]; then
        echo "ha-peer: $venv is up to date"
        return 0
    fi
    # A venv of this Home Assistant made from an earlier lock: install only what is missing (pip
    # leaves what is already satisfied alone), then check it as a fresh one is checked.
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c \
        'import homeassistant.const as c; assert c.__version__ == "2024.3.3"' 2>/dev/null; then
        echo "ha-peer: adding what is missing to $venv"
        if "$venv/bin/python" -m pip install -q --disable-pip-version-check \
            -c "$data/constraints.txt" -r "$data/requirements.lock" && check_venv; then
            echo "$stamp" >"$venv/.hadeploy-lock"
            echo "ha-peer: $venv is up to date"
            return 0
        fi
        echo "ha-peer: $venv could not be brought up to date; making it again" >&2
    fi
    local py
    if ! py="$(find_python)" && [ "$(uname -s)" = Darwin ]; then
        # macOS: Homebrew's keg of Python 3.11 (not linked as python3, so asked by its path).
        command -v brew >/dev/null 2>&1 || die "Python 3.11 is required (Home Assistant 2024.3.3): install Homebrew, then brew install python@3.11"
        brew list --formula python@3.11 >/dev/null 2>&1 || brew install python@3.11
        py="$(brew --prefix python@3.11)/bin/python3.11"
        [ -x "$py" ] || die "brew install python@3.11 left no $py"
    fi
    if [ -z "${py:-}" ] && ! py="$(find_python)"; then
        echo "ha-peer: no Python 3.11 found; installing Debian's python3 (3.11 on Debian 12)" >&2
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-dev
        py="$(find_python)" || die "Python 3.11 is required (Home Assistant 2024.3.3); none found after apt-get"
    fi
    if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
    fi
    echo "ha-peer: creating $venv with $py (about a minute)"
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        -c "$data/constraints.txt" -r "$data/requirements.lock"
    check_venv || die "$venv does not hold what the lock pins"
    echo "$stamp" >"$venv/.hadeploy-lock"
    echo "ha-peer: installed Home Assistant 2024.3.3 in $venv"
}

ha_pid() { cat "$1/ha.pid" 2>/dev/null || true; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

cmd_start() {
    local dir="${1:?usage: ha-peer.sh start DIR PORT}" port="${2:?usage: ha-peer.sh start DIR PORT}"
    [ -x "$venv/bin/python" ] || die "no venv at $venv: run scripts/ha-peer.sh install first"
    mkdir -p "$dir/.storage"
    dir="$(cd "$dir" && pwd)"
    local old
    old="$(ha_pid "$dir")"
    if alive "$old"; then die "Home Assistant already runs for $dir (pid $old): stop it first"; fi
    install -m 0644 "$data/configuration.yaml" "$dir/configuration.yaml"
    # Never POST onboarding/core_config: it starts met/google_translate/... flows that need the internet.
    if [ ! -f "$dir/.storage/onboarding" ]; then
        printf '%s' '{"version":4,"minor_version":1,"key":"onboarding","data":{"done":["core_config"]}}' \
            >"$dir/.storage/onboarding"
    fi
    # launch.py: clean signal mask, no inherited descriptors, own session (see its docstring).
    local pid
    pid="$("$venv/bin/python" "$data/launch.py" --dir "$dir" --port "$port" \
        ${HA_PEER_WATCH_PID:+--watch "$HA_PEER_WATCH_PID"} </dev/null)"
    echo "$pid" >"$dir/ha.pid"
    if ! "$venv/bin/python" "$data/onboard.py" --dir "$dir" --port "$port" --pid "$pid" \
        --timeout "${HA_PEER_START_TIMEOUT:-90}"; then
        echo "ha-peer: last lines of $dir/hass.out:" >&2
        tail -n 20 "$dir/hass.out" >&2 || true
        cmd_stop "$dir" || true
        die "Home Assistant did not become ready on 127.0.0.1:$port"
    fi
    echo "ha-peer: Home Assistant runs on http://127.0.0.1:$port (pid $pid); token in $dir/token"
}

cmd_stop() {
    local dir="${1:?usage: ha-peer.sh stop DIR}"
    local pid
    pid="$(ha_pid "$dir")"
    if ! alive "$pid"; then
        rm -f "$dir/ha.pid"
        return 0
    fi
    # SIGTERM lets HA flush its delayed stores (auth 1 s, dashboards 10 s after a change).
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 300); do
        alive "$pid" || break
        sleep 0.1
    done
    if alive "$pid"; then
        echo "ha-peer: pid $pid ignored SIGTERM for 30 s; sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/ha.pid"
}

case "${1:-}" in
install) cmd_install ;;
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
*) die "usage: ha-peer.sh install | start DIR PORT | stop DIR" ;;
esac

#!/usr/bin/env bash
# `make demo`: the main job on the virtual twins, verified against a real Home Assistant.
#
# With HA_SERVER and HA_TOKEN set (environment or .env) that Home Assistant is used as it is.
# Otherwise a Home Assistant 2024.3.3 is started on loopback for the run (the test peer:
# scripts/ha-peer.sh, onboarded without a browser), seeded with demo entities and a saved
# dashboard, and stopped afterwards. The token stays in the peer's directory (mode 0600) and in
# hadeploy's environment; it is never printed.
#
#   scripts/demo.sh BIN [hadeploy arguments…]
#   scripts/demo.sh --peers    install what the demo uses (`make peers-demo`): the system packages
#                              (scripts/bootstrap.sh --demo) and, unless HA_SERVER and HA_TOKEN name a
#                              Home Assistant, the venv of the one it starts (scripts/ha-peer.sh install);
#                              pymobiledevice3 for the iOS 17+ twins (scripts/pmd3-venv.sh)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bin="${1:?usage: scripts/demo.sh BIN [arguments…] | scripts/demo.sh --peers}"
shift

from_env_file() {
    [ -f "$repo/.env" ] && grep -E "^(export +)?$1=." "$repo/.env" >/dev/null 2>&1
}
own_home_assistant() {
    ! { { [ -n "${HA_SERVER:-}" ] || from_env_file HA_SERVER; } && { [ -n "${HA_TOKEN:-}" ] || from_env_file HA_TOKEN; }; }
}

if [ "$bin" = "--peers" ]; then
    "$here/bootstrap.sh" --demo
    # pymobiledevice3 (pinned, in .venv-pmd3) drives the iOS 17+ twins (iphone, mini5).
    "$here/pmd3-venv.sh"
    if own_home_assistant; then "$here/ha-peer.sh" install; fi
    exit 0
fi

# The iOS 17+ twins are driven through the pinned pymobiledevice3 (unless PYMOBILEDEVICE3 names one).
if [ -z "${PYMOBILEDEVICE3:-}" ] && [ -x "$repo/.venv-pmd3/bin/pymobiledevice3" ]; then
    export PYMOBILEDEVICE3="$repo/.venv-pmd3/bin/pymobiledevice3"
fi

if ! own_home_assistant; then
    echo "demo: using the Home Assistant in HA_SERVER"
    exec "$bin" "$@"
fi

"$here/ha-peer.sh" install
dir="$repo/.hadeploy/demo-ha"
mkdir -p "$dir"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$here/ha-peer.sh" stop "$dir"
stop() { "$here/ha-peer.sh" stop "$dir" || true; }
trap stop EXIT
HA_PEER_WATCH_PID=$$ "$here/ha-peer.sh" start "$dir" "$port"
# Every dashboard devices.yaml names, and the one the others get.
dashboards=(--dashboard "${HA_DASHBOARD:-dashboard-demo}")
while read -r name; do dashboards+=(--dashboard "$name"); done < <(
    sed -n 's/^[[:space:]]*dashboard:[[:space:]]*"\{0,1\}\([A-Za-z0-9_-]*\)"\{0,1\}[[:space:]]*\(#.*\)\{0,1\}$/\1/p' \
        "$repo/devices.yaml" 2>/dev/null | sort -u)
"$repo/.venv-ha/bin/python" "$here/ha/demo_seed.py" --dir "$dir" --port "$port" "${dashboards[@]}"
HA_SERVER="http://127.0.0.1:$port" HA_TOKEN="$(cat "$dir/token")" HA_DASHBOARD="${HA_DASHBOARD:-dashboard-demo}" \
    "$bin" "$@"

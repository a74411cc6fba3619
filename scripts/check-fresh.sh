#!/usr/bin/env bash
# `make check-fresh`: the README's first command as a newcomer runs it. Clones this checkout's
# committed HEAD into a temporary folder and runs `make demo` there with a fresh HOME — no SwiftPM or
# pip cache, no .build, no venv of this checkout; only the system packages are shared, which is what a
# fresh machine has once the demo installed them — then checks the demo's report/summary.json:
#  - `make demo` ended with exit 0 and no device failed;
#  - mini4 (the Wi-Fi twin) ended succeeded, its dashboard load verified;
#  - iphone, mini5 and ipadpro (iOS 18 and 26 twins) verified through pymobiledevice3's userspace
#    tunnel;
#  - ipad4 (the jailbroken twin over SSH; `all` is the app's fleet, without the iPads 2 and 3) ended
#    succeeded and verified, in a user namespace (on a host that allows the account none, its failure
#    saying so is accepted).
#  - `make demo-wifi`: mini4, iphone and mini5 again as Wi-Fi devices only (listed by no usbmuxd,
#    found over mDNS), each verified over Wi-Fi.
# Started as root (CI), the demo runs as the ordinary account hadeploy-test (see below).
#
#   scripts/check-fresh.sh [--keep]     --keep leaves the temporary folder (its path is printed)
#
# Minutes (a full debug build, the SwiftPM packages and the Home Assistant venv fetched anew).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
keep=no
[ "${1:-}" = "--keep" ] && keep=yes
fail() { echo "check-fresh: FAIL: $*" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/hadeploy-fresh.XXXXXX")"
cleanup() {
    # A demo stopped half-way may leave its Home Assistant running: stop it before removing its folder.
    [ -x "$tmp/hadeploy/scripts/ha-peer.sh" ] && "$tmp/hadeploy/scripts/ha-peer.sh" stop \
        "$tmp/hadeploy/.hadeploy/demo-ha" >/dev/null 2>&1 || true
    if [ "$keep" = yes ]; then echo "check-fresh: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

commit="$(git -C "$repo" rev-parse HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "check-fresh: note: uncommitted changes in $repo are not part of the check (HEAD $commit)" >&2
fi
git clone -q --no-local "$repo" "$tmp/hadeploy"
git -C "$tmp/hadeploy" checkout -q --detach "$commit"
mkdir -p "$tmp/home"

# A newcomer's login and nothing of this shell's: the system PATH and Swift's directory (no venv,
# pyenv or checkout on it), no HA_SERVER/HA_TOKEN (the demo starts its own Home Assistant), no
# HADEPLOY_* settings. Proxies stay (a newcomer behind one has them).
swift_bin="$(dirname "$(command -v swift)")" || fail "swift is not on PATH"
# Started as root (CI), the demo runs as an ordinary account, as its users run it: hadeploy-test (the
# account `make test` runs the suites as; made here when missing). Root first installs the system
# packages the demo needs (what `make demo` would otherwise ask sudo for), so the account's own run
# finds nothing missing and needs no sudo. CHECK_FRESH_AS_ROOT=1 keeps the old way (the demo as root).
run_as=()
account="$(id -un)"
if [ "$(id -u)" -eq 0 ] && [ "${CHECK_FRESH_AS_ROOT:-}" != 1 ]; then
    account=hadeploy-test
    id "$account" > /dev/null 2>&1 || useradd --create-home --shell /bin/bash "$account"
    "$tmp/hadeploy/scripts/bootstrap.sh" --demo
    chmod 755 "$tmp"
    chown -R "$account:$account" "$tmp/hadeploy" "$tmp/home"
    # This machine's local mirror of the Swift packages (if any) is root's: git reads another owner's
    # repository only when it is named safe.
    if [ -d /opt/swift-packages ]; then
        for repo_dir in /opt/swift-packages/*/*.git; do
            runuser -u "$account" -- env HOME="$tmp/home" git config --global --add safe.directory "$repo_dir"
        done
    fi
    run_as=(runuser -u "$account" --)
fi
env_vars=(HOME="$tmp/home" PATH="$swift_bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb USER="$account" LOGNAME="$account")
for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!name:-}" ] && env_vars+=("$name=${!name}")
done

echo "check-fresh: make demo in $tmp/hadeploy as $account (HEAD $commit, HOME $tmp/home)"
start=$SECONDS
set +e
(cd "$tmp/hadeploy" && "${run_as[@]}" env -i "${env_vars[@]}" make demo) > "$tmp/demo.log" 2>&1
status=$?
set -e
minutes=$(((SECONDS - start) / 60))
seconds=$(((SECONDS - start) % 60))
echo "check-fresh: make demo took ${minutes}m${seconds}s, exit $status"
summary="$tmp/hadeploy/report/summary.json"
root=no
[ "$account" = root ] && root=yes
# As another user the jailbroken twins run in a user namespace: on a host that really allows none to
# this account they fail saying so (a device this host should drive and did not is a failure, exit 1),
# and that alone is accepted below.
userns=yes
(cd / && "${run_as[@]}" unshare --user --map-root-user true) > /dev/null 2>&1 || userns=no
if { [ "$status" -ne 0 ] && ! { [ "$status" -eq 1 ] && [ "$userns" = no ] && [ "$root" = no ]; }; } \
    || [ ! -f "$summary" ]; then
    tail -n 60 "$tmp/demo.log" >&2
    keep=yes
    fail "make demo ended with exit $status$([ -f "$summary" ] || echo ", no report/summary.json")"
fi
# The closing table, as the newcomer saw it.
sed -n '/^DEVICE /,/ device(s): /p' "$tmp/demo.log"

python3 - "$summary" "$root" "$userns" <<'PY' || { keep=yes; fail "the demo's report (above)"; }
import json
import sys

summary, root, userns = sys.argv[1], sys.argv[2] == "yes", sys.argv[3] == "yes"
results = {r["id"]: r for r in json.load(open(summary))["results"]}
problems = []


def verified(device, transport=None):
    r = results.get(device)
    if r is None:
        problems.append(f"{device}: not in the report")
    elif r["outcome"] != "succeeded" or "loaded" not in r["verification"]:
        problems.append(f"{device}: {r['outcome']}, {r['verification']} ({r.get('reason') or ''})")
    elif transport and r["transport"] != transport:
        problems.append(f"{device}: verified over {r['transport']}, not {transport}")


def no_namespace(r):
    return (not root and not userns and r.get("id") in ("ipad2", "ipad3", "ipad4")
            and r.get("outcome") in ("failed", "not available") and "user namespace" in (r.get("reason") or ""))


for r in results.values():
    if r["outcome"] in ("failed", "cancelled", "not started") and not no_namespace(r):
        problems.append(f"{r['id']}: {r['outcome']} ({r.get('reason') or ''})")
verified("mini4")
for device in ("iphone", "mini5", "ipadpro"):
    verified(device, "pymobiledevice3")
for device in ("ipad4",):
    r = results.get(device, {})
    if no_namespace(r):
        print(f"check-fresh: {device}: {r['outcome']}, this host allows no user namespace: {r['reason']}")
    else:
        verified(device, "ssh")
for problem in problems:
    print(f"check-fresh: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
# The same three wall iPads as Wi-Fi devices only (issue 36): listed by no usbmuxd, found over mDNS.
start=$(date +%s)
wifi_status=0
(cd "$tmp/hadeploy" && "${run_as[@]}" env -i "${env_vars[@]}" make demo-wifi) > "$tmp/demo-wifi.log" 2>&1 || wifi_status=$?
echo "check-fresh: make demo-wifi took $(( $(date +%s) - start ))s, exit $wifi_status"
sed -n '/^DEVICE /,/ device(s): /p' "$tmp/demo-wifi.log"
wifi_summary="$tmp/hadeploy/report-wifi/summary.json"
if [ "$wifi_status" -ne 0 ] || [ ! -f "$wifi_summary" ]; then
    tail -n 60 "$tmp/demo-wifi.log" >&2
    keep=yes
    fail "make demo-wifi ended with exit $wifi_status$([ -f "$wifi_summary" ] || echo ", no report-wifi/summary.json")"
fi
python3 - "$wifi_summary" <<'PY' || { keep=yes; fail "the Wi-Fi demo's report (above)"; }
import json
import sys

results = {r["id"]: r for r in json.load(open(sys.argv[1]))["results"]}
problems = []
for device, transport in (("mini4", "usb (Wi-Fi)"), ("iphone", "pymobiledevice3 (Wi-Fi)"), ("mini5", "pymobiledevice3 (Wi-Fi)")):
    r = results.get(device)
    if r is None:
        problems.append(f"{device}: not in the Wi-Fi report")
    elif r["outcome"] != "succeeded" or "loaded" not in r["verification"] or r["transport"] != transport:
        problems.append(f"{device}: {r['outcome']} over {r['transport']}, {r['verification']} ({r.get('reason') or ''})")
for problem in problems:
    print(f"check-fresh: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
echo "check-fresh: ok — the Wi-Fi twin (mini4), the iOS 17+ twins (iphone, mini5, ipadpro) through pymobiledevice3 and the jailbroken twin (ipad4) as $account; mini4, iphone and mini5 again as Wi-Fi devices only, found over mDNS"

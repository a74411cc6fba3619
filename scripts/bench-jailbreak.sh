#!/bin/sh
# One-file-change redeploy to a jailbroken iPad over a 2 MB/s link: hadeploy (changed files only)
# against the app's old script (tar.gz of the whole .app + scp), side by side in one run.
#   scripts/bench-jailbreak.sh [ROUNDS] [release]
# Needs scripts/ssh-peers.sh run once (as root: the test keys); the twin runs as any user.
# The twin: scripts/jailbreak-twin/twin.sh with legacy OpenSSH algorithms, like an iOS 9 OpenSSH;
# in front of it scripts/jailbreak-twin/throttle.py at 2,000,000 bytes/s each way.
set -eu
ROUNDS=${1:-3}
CONFIG=${2:-debug}
HERE=$(cd "$(dirname "$0")/.." && pwd)
KEY=/var/lib/hadeploy-ssh-test/id_rsa
[ -f "$KEY" ] || { echo "run scripts/ssh-peers.sh first (it makes $KEY)" >&2; exit 1; }
RATE=2000000
cd "$HERE"
nice -n 5 swift build -c "$CONFIG" --product hadeploy-bench >/dev/null
BENCH=$(swift build -c "$CONFIG" --show-bin-path)/hadeploy-bench

WORK=$(mktemp -d /tmp/hadeploy-bench-jb.XXXXXX)
TWIN_PID=""; PROXY_PID=""
cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
    [ -n "$TWIN_PID" ] && kill -9 "$TWIN_PID" 2>/dev/null
    sleep 0.5
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TWIN_PORT=$(free_port); PROXY_PORT=$(free_port)
# The twin ends with this script even when it is SIGKILLed and its trap never runs: a parent-death
# signal (this shell is single-threaded), which unshare --kill-child passes on to the twin's namespace.
setpriv --pdeathsig KILL sh scripts/jailbreak-twin/twin.sh "$WORK/root" "$TWIN_PORT" openssh --legacy \
    --authorized-key "$KEY.pub" >"$WORK/twin.log" 2>&1 &
TWIN_PID=$!
python3 scripts/jailbreak-twin/throttle.py "$PROXY_PORT" "$TWIN_PORT" "$RATE" &
PROXY_PID=$!
for _ in $(seq 50); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$TWIN_PORT),1)" 2>/dev/null && break
    sleep 0.2
done
printf '[127.0.0.1]:%s %s\n' "$PROXY_PORT" "$(cut -d' ' -f1,2 "$WORK/root/etc/ssh/ssh_host_rsa_key.pub")" \
    > "$WORK/known_hosts"

# An app the size of the armv7+arm64 HA Dashboard build: a 9 MB executable (random bytes compress
# like machine code does not), 3 MB of assets, 120 small resource files.
APP="$WORK/app/HA Dashboard.app"
mkdir -p "$APP/Base.lproj" "$APP/Assets"
python3 - "$APP" <<'PY'
import os, plistlib, random, sys
app = sys.argv[1]
random.seed(7)
plistlib.dump({"CFBundleIdentifier": "com.hadashboard.app", "CFBundleExecutable": "HA Dashboard",
               "CFBundleShortVersionString": "1.2.5", "CFBundleVersion": "171"},
              open(os.path.join(app, "Info.plist"), "wb"), fmt=plistlib.FMT_BINARY)
open(os.path.join(app, "HA Dashboard"), "wb").write(os.urandom(9 << 20))
open(os.path.join(app, "Assets/Assets.car"), "wb").write(os.urandom(3 << 20))
for i in range(120):
    words = " ".join(random.choice(["card", "entity", "view", "light", "sensor", "state"]) for _ in range(800))
    open(os.path.join(app, "Base.lproj/strings-%03d.strings" % i), "w").write(words)
PY
BYTES=$(du -sb "$APP" | cut -f1)
echo "app: $BYTES bytes; link: $RATE bytes/s each way; twin: OpenSSH $(sshd -V 2>&1 | head -1 | cut -d, -f1) (legacy algorithms)"

"$BENCH" jailbreak-redeploy --port "$PROXY_PORT" --key "$KEY" --known-hosts "$WORK/known_hosts" --app "$APP" --legacy \
    | sed 's/^BENCH/first install:/'
ours=""; old=""
for round in $(seq "$ROUNDS"); do
    printf 'round %s changed\n' "$round" > "$APP/Base.lproj/strings-007.strings"
    start=$(date +%s.%N)
    line=$("$BENCH" jailbreak-redeploy --port "$PROXY_PORT" --key "$KEY" --known-hosts "$WORK/known_hosts" \
        --app "$APP" --legacy)
    t=$(echo "$(date +%s.%N) - $start" | bc)
    echo "round $round hadeploy: ${t} s wall ($line)"
    ours="$ours $t"
    printf 'round %s changed again\n' "$round" > "$APP/Base.lproj/strings-007.strings"
    start=$(date +%s.%N)
    sent=$(sh scripts/jailbreak-twin/old-deploy.sh "$PROXY_PORT" "$KEY" "$WORK/known_hosts" "$APP" com.hadashboard.app)
    t=$(echo "$(date +%s.%N) - $start" | bc)
    echo "round $round old script: ${t} s wall ($sent)"
    old="$old $t"
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "MEDIAN one-file redeploy over 2 MB/s: hadeploy $(median $ours) s, old script (tar.gz + scp) $(median $old) s"

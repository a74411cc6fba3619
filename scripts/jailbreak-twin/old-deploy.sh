#!/bin/sh
# The app's old jailbroken-iPad deploy (scripts/deploy.sh in github:ha-dashboard/ios-app), step by step,
# with a key instead of sshpass, for side-by-side benchmarks: probe, backup on the device, tar.gz of the
# whole .app, prefs pulled and merged, scp of both, then extract/ldid/killall/uicache/caches/prefs/open.
#   old-deploy.sh PORT KEY KNOWN_HOSTS APP_DIR BUNDLE_ID
set -eu
PORT=$1; KEY=$2; KNOWN=$3; APP=$4; BUNDLE=$5
NAME=$(basename "$APP")
EXE=${NAME%.app}
OPTS="-p $PORT -i $KEY -o UserKnownHostsFile=$KNOWN -o StrictHostKeyChecking=yes -o BatchMode=yes \
-o KexAlgorithms=+diffie-hellman-group14-sha1 -o HostKeyAlgorithms=+ssh-rsa -o PubkeyAcceptedAlgorithms=ssh-rsa"
SCPOPTS=$(echo "$OPTS" | sed 's/-p /-P /')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# shellcheck disable=SC2086
ssh $OPTS root@127.0.0.1 "echo ok" >/dev/null
STAMP=$(date +%Y%m%d-%H%M%S)
B=/var/mobile/Library/HADashboard-backups/$BUNDLE/old-$STAMP
# shellcheck disable=SC2086
ssh $OPTS root@127.0.0.1 "set -e; mkdir -p '$B'; if [ -d '/Applications/$NAME' ]; then tar czf '$B/app-before.tar.gz' -C /Applications '$NAME'; fi; if [ -f '/var/mobile/Library/Preferences/$BUNDLE.plist' ]; then cp '/var/mobile/Library/Preferences/$BUNDLE.plist' '$B/preferences-before.plist'; openssl dgst -sha256 '$B/preferences-before.plist' > '$B/preferences-before.sha256'; fi"
tar -czf "$WORK/app.tar.gz" -C "$(dirname "$APP")" "$NAME"
# shellcheck disable=SC2086
scp -q $SCPOPTS "root@127.0.0.1:/var/mobile/Library/Preferences/$BUNDLE.plist" "$WORK/prefs.plist" 2>/dev/null || true
python3 - "$WORK/prefs.plist" <<'PY'
import plistlib, sys
path = sys.argv[1]
try:
    prefs = plistlib.load(open(path, "rb"))
except Exception:
    prefs = {}
prefs.update({"HAServerURL": "http://127.0.0.1:9", "HADashboard": "bench", "HAKioskMode": True})
plistlib.dump(prefs, open(path, "wb"), fmt=plistlib.FMT_BINARY)
PY
# shellcheck disable=SC2086
scp -q $SCPOPTS "$WORK/app.tar.gz" root@127.0.0.1:/tmp/HADashboard.app.tar.gz
# shellcheck disable=SC2086
scp -q $SCPOPTS "$WORK/prefs.plist" root@127.0.0.1:/tmp/ha-prefs.plist
# shellcheck disable=SC2086
ssh $OPTS root@127.0.0.1 "cd /Applications && rm -rf '$NAME' && tar xzf /tmp/HADashboard.app.tar.gz && rm /tmp/HADashboard.app.tar.gz && ldid -S '$NAME/$EXE'; killall '$EXE' 2>/dev/null; uicache; rm -rf /var/mobile/Library/Caches/$BUNDLE; mv /tmp/ha-prefs.plist /var/mobile/Library/Preferences/$BUNDLE.plist; chown mobile:mobile /var/mobile/Library/Preferences/$BUNDLE.plist; open $BUNDLE"
echo "OLD bytes $(stat -c %s "$WORK/app.tar.gz")"

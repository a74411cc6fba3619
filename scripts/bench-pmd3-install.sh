#!/bin/bash
# Times `pymobiledevice3 apps install` and `ideviceinstaller -i` of the same 50 MB .ipa on the same
# twin (`hadeploy virtual --only mini4`, iOS 15.8), alternating, each preceded by an uninstall.
# Usage: scripts/bench-pmd3-install.sh [ROUNDS] [SIZE_MB]   (default 5 rounds, 50 MB)
# Needs a built hadeploy (swift build) and the peers (make peers: Debian tools, .venv-pmd3).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-5}"
SIZE_MB="${2:-50}"
scripts/idevice-tools.sh >/dev/null
scripts/pmd3-venv.sh
bin="$(swift build --show-bin-path)/hadeploy"
[ -x "$bin" ] || { echo "bench-pmd3-install: build hadeploy first (swift build)" >&2; exit 1; }
pmd3="$PWD/.venv-pmd3/bin/pymobiledevice3"
work="$(mktemp -d /tmp/bench-pmd3-XXXXXX)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin" virtual --only mini4 --socket "$work/mux.sock" --state "$work/state" >"$work/virtual.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$work/mux.sock" ] && break; sleep 0.1; done
export USBMUXD_SOCKET_ADDRESS="UNIX:$work/mux.sock"
udid="$(idevice_id -l | head -1)"
[ -n "$udid" ] || { echo "bench-pmd3-install: the twin did not come up" >&2; cat "$work/virtual.log" >&2; exit 1; }

# A 50 MB app: Info.plist, a Mach-O arm64 header (synthetic, no code), incompressible assets.
app="$work/Payload/Bench.app"
mkdir -p "$app"
cat >"$app/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
<key>CFBundleIdentifier</key><string>io.hadeploy.bench</string>
<key>CFBundleExecutable</key><string>Bench</string>
<key>CFBundleVersion</key><string>1</string>
<key>CFBundleShortVersionString</key><string>1.0</string>
<key>MinimumOSVersion</key><string>9.0</string>
</dict></plist>
PLIST
# Signed as installd requires: one LC_CODE_SIGNATURE load command (an empty blob), and a profile that
# covers the twin.
python3 - "$app/Bench" <<'PY'
import struct, sys
header = (struct.pack("<IIIIIIII", 0xFEEDFACF, 0x0100000C, 0, 2, 1, 16, 0, 0)
          + struct.pack("<IIII", 0x1D, 16, 4032, 0)).ljust(4096, b"\0")
open(sys.argv[1], "wb").write(header)
PY
python3 scripts/inhouse-profile.py "$app/embedded.mobileprovision"
head -c "$((SIZE_MB * 1000 * 1000))" /dev/urandom >"$app/Assets.bin"
(cd "$work" && python3 -c 'import shutil; shutil.make_archive("Bench", "zip", ".", "Payload")' && mv Bench.zip Bench.ipa)
ipa="$work/Bench.ipa"

now() { date +%s.%N; }
pmd3_socket="${USBMUXD_SOCKET_ADDRESS#UNIX:}"
echo "machine: $(nproc) cores, $(uname -srm), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "ipa: $(stat -c %s "$ipa") bytes; twin: iPad mini 4 iOS 15.8 (hadeploy virtual, debug build)"
echo "pymobiledevice3 $("$pmd3" version 2>/dev/null || echo 11.45.0); ideviceinstaller $(dpkg-query -W -f='${Version}' ideviceinstaller 2>/dev/null)"
printf '%-6s %-34s %-34s\n' round "pymobiledevice3 apps install (s)" "ideviceinstaller -i (s)"
for round in $(seq "$ROUNDS"); do
    ideviceinstaller -u "$udid" -U io.hadeploy.bench >/dev/null 2>&1 || true
    t0=$(now)
    USBMUXD_SOCKET_ADDRESS="$pmd3_socket" "$pmd3" apps install --udid "$udid" "$ipa" >"$work/pmd3.log" 2>&1 \
        || { cat "$work/pmd3.log" >&2; exit 1; }
    t1=$(now)
    ideviceinstaller -u "$udid" -U io.hadeploy.bench >/dev/null 2>&1
    t2=$(now)
    ideviceinstaller -u "$udid" -i "$ipa" >"$work/idi.log" 2>&1 || { cat "$work/idi.log" >&2; exit 1; }
    t3=$(now)
    printf '%-6s %-34.2f %-34.2f\n' "$round" "$(awk "BEGIN{print $t1 - $t0}")" "$(awk "BEGIN{print $t3 - $t2}")"
done
start0=$(now); "$pmd3" version >/dev/null 2>&1 || true; start1=$(now)
printf 'python start-up alone (pymobiledevice3 version): %.2f s\n' "$(awk "BEGIN{print $start1 - $start0}")"

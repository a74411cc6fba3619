"""The virtual HA Dashboard app of the jailbroken twin, started by the twin's `open`.

Behaves as the real app does at launch (HADashboard/HAAppDelegate.m, HAConnectionManager.m, HALog.m):
reads its settings from its preferences plist (NSUserDefaults), appends a log session to
/var/mobile/Documents/ha-log.txt, connects to Home Assistant's WebSocket API with the saved token, fetches
the dashboard's Lovelace config, and after each dashboard rebuild takes a screenshot to /tmp/screenshot.png
3 s after finding /tmp/take_screenshot (once per launch). Runs until killed.
"""
import base64
import json
import os
import plistlib
import signal
import socket
import struct
import sys
import time
import urllib.parse
import zlib

BUNDLE, APP_PATH = sys.argv[1], sys.argv[2]
NAME = sys.argv[3]  # the executable name killall matches (argv[0] of the process)
LOG = "/var/mobile/Documents/ha-log.txt"
STARTED = time.monotonic()
KEYCHAIN = "/var/mobile/Library/Caches/%s.twin-keychain.plist" % BUNDLE


def log(level, tag, message):
    if level == "DEBUG":
        return  # the app's default minimum level is INFO
    elapsed = time.monotonic() - STARTED
    stamp = "+%8.1fms" % (elapsed * 1000) if elapsed < 30 else time.strftime("%H:%M:%S.000")
    with open(LOG, "a", encoding="utf-8") as f:
        f.write("%s %5s [%s] %s\n" % (stamp, level, tag, message))


def header():
    model, version = "iPad", "9.3.5"
    try:
        parts = open("/etc/twin-device").read().split()
        version = parts[1]
    except (OSError, IndexError):
        pass
    if os.path.exists(LOG) and os.path.getsize(LOG) > 2 << 20:
        os.replace(LOG, LOG.replace("ha-log.txt", "ha-log-prev.txt"))
    with open(LOG, "a", encoding="utf-8") as f:
        f.write("\n=== HA Dashboard log session ===\nDevice: %s / iOS %s\nDate: %s\nMin level: INFO\n\n"
                % (model, version, time.strftime("%Y-%m-%d %H:%M:%S +0000", time.gmtime())))


def defaults():
    try:
        with open("/var/mobile/Library/Preferences/%s.plist" % BUNDLE, "rb") as f:
            return plistlib.load(f)
    except (OSError, plistlib.InvalidFileException):
        return {}


def keychain(update=None, clear=False):
    data = {}
    if not clear:
        try:
            with open(KEYCHAIN, "rb") as f:
                data = plistlib.load(f)
        except (OSError, plistlib.InvalidFileException):
            pass
    if update is not None or clear:
        data.update(update or {})
        with open(KEYCHAIN, "wb") as f:
            plistlib.dump(data, f)
        os.chmod(KEYCHAIN, 0o600)
    return data


class WebSocket:
    def __init__(self, url, timeout=15):
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        self.sock = socket.create_connection((parts.hostname, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /api/websocket HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                           % (parts.hostname, port, key)).encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise OSError("connection closed during the WebSocket upgrade")
            response += chunk
        head, self.buffer = response.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("WebSocket upgrade refused: %s" % head.split(b"\r\n")[0].decode())

    def _read(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def send(self, message):
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            head = struct.pack("!BB", 0x81, 0x80 | length)
        elif length < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, length)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self):
        message = b""
        while True:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(length)
            opcode = first & 0x0F
            if opcode == 8:
                raise OSError("server closed the WebSocket")
            if opcode in (0, 1):
                message += payload
                if first & 0x80:
                    return json.loads(message)


def announce(ws, prefs, dashboard, info):
    """Only a build made to announce itself fires `ha_dashboard_loaded` (the released app fires no event):
    the one hadeploy's planner still asks for with `-HADeployID`."""
    if not prefs.get("HADeployID"):
        return
    ws.send({"id": 2, "type": "fire_event", "event_type": "ha_dashboard_loaded", "event_data": {
        "deploy_id": prefs.get("HADeployID"), "device": prefs.get("HADeviceID", ""), "dashboard": dashboard,
        "version": info.get("CFBundleShortVersionString", ""), "build": info.get("CFBundleVersion", ""),
        "kiosk": bool(prefs.get("HAKioskMode", False))}})
    ws.receive()


def count_cards(config):
    views = config.get("views", []) if isinstance(config, dict) else []
    cards = 0
    for view in views:
        cards += len(view.get("cards", []))
        for section in view.get("sections", []):
            cards += len(section.get("cards", []))
    strategy = (config.get("strategy") or {}).get("type", "none") if isinstance(config, dict) else "none"
    return len(views), cards, strategy


def screenshot_png(width=256, height=192, seed=0):
    rows = b"".join(b"\x00" + b"".join(bytes(((x + seed) % 256, (y * 3) % 256, 180)) for x in range(width))
                    for y in range(height))

    def chunk(kind, data):
        return struct.pack("!I", len(data)) + kind + data + struct.pack("!I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack("!IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def main():
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    with open("/var/run/twin/%s.pid" % NAME, "w") as f:
        f.write(str(os.getpid()))
    header()
    log("INFO", "startup", "didFinishLaunching START")
    try:
        info = plistlib.load(open(os.path.join(APP_PATH, "Info.plist"), "rb"))
    except Exception:
        info = {}
    log("INFO", "startup", "App version: %s (%s)" % (info.get("CFBundleShortVersionString", "?"),
                                                       info.get("CFBundleVersion", "?")))
    prefs = defaults()
    if prefs.get("HAClearCredentials") is True:
        log("INFO", "startup", "HAClearCredentials=YES — wiping keychain")
        keychain(clear=True)
    url, token = prefs.get("HAServerURL") or "", prefs.get("HAAccessToken") or ""
    log("INFO", "startup", "NSUserDefaults read END (url=%s, token=%s)" % ("YES" if url else "NO",
                                                                         "YES" if token else "NO"))
    if url and token:
        keychain({"server": url, "token": token})
    if "HADashboard" in prefs:
        keychain({"dashboard": prefs["HADashboard"]})
    if "HAKioskMode" in prefs:
        keychain({"kiosk": bool(prefs["HAKioskMode"])})
    saved = keychain()
    demo = prefs.get("HADemoMode") is True
    configured = bool(saved.get("server") and saved.get("token")) or demo
    log("INFO", "startup", "isConfigured=%s" % ("YES" if configured else "NO"))
    built = False
    if configured and not demo:
        try:
            ws = WebSocket(saved["server"])
            ws.receive()
            ws.send({"type": "auth", "access_token": saved["token"]})
            answer = ws.receive()
            if answer.get("type") != "auth_ok":
                # The real app's words for a refused long-lived token (HAWebSocketClient.m and
                # HAAuthManager.m: no refresh token, so the refresh fails with this description).
                log("INFO", "conn", "WebSocket connected, awaiting auth...")
                log("WARN", "conn", "auth_invalid \u2014 attempting token refresh")
                log("ERROR", "conn", "Auth failed: Authentication failed")
                log("WARN", "conn", 'WebSocket disconnected: Error Domain=HAAuthManager Code=401 '
                    '"Authentication failed" UserInfo={NSLocalizedDescription=Authentication failed}')
            else:
                log("INFO", "conn", "WebSocket authenticated")
                dashboard = saved.get("dashboard") or None
                ws.send({"id": 1, "type": "lovelace/config", "url_path": dashboard, "force": False})
                result = ws.receive()
                if result.get("success"):
                    views, cards, strategy = count_cards(result.get("result"))
                    log("INFO", "conn", "Lovelace config received: %d views, %d cards, strategy=%s"
                        % (views, cards, strategy))
                    built = True
                    announce(ws, prefs, dashboard, info)
                else:
                    error = result.get("error") or {}
                    log("ERROR", "conn", "Lovelace config fetch failed: %s" % error)
                    if error.get("code") == "config_not_found":
                        # As the app does: no saved config is the generated dashboard.
                        log("INFO", "conn", "No Lovelace config — using original-states strategy")
                        built = True
                        announce(ws, prefs, dashboard, info)
        except Exception as error:
            log("ERROR", "conn", "Connection failed: %s" % error)
    elif demo:
        log("INFO", "conn", "Demo mode: Lovelace config received: 3 views, 12 cards, strategy=none")
        built = True
    scheduled = False
    seed = int(time.time()) % 256
    while True:
        time.sleep(1)
        # Each dashboard rebuild looks for the screenshot trigger, once per launch.
        if built and not scheduled and os.path.exists("/tmp/take_screenshot"):
            scheduled = True
            try:
                os.remove("/tmp/take_screenshot")
            except OSError as error:
                log("ERROR", "dash", "Screenshot trigger could not be removed: %s" % error)
            log("DEBUG", "dash", "Screenshot trigger found, will capture in 3s")
            time.sleep(3)
            with open("/tmp/screenshot.png.tmp", "wb") as f:
                f.write(screenshot_png(seed=seed))
            os.rename("/tmp/screenshot.png.tmp", "/tmp/screenshot.png")


if __name__ == "__main__":
    main()

"""The virtual HA Dashboard app of the jailbroken twin, started by the twin's `open`.

Behaves as the real app does at launch (HADashboard/HAAppDelegate.m, HAConnectionManager.m, HALog.m):
reads its settings from its preferences plist (NSUserDefaults), appends a log session to
/var/mobile/Documents/ha-log.txt, connects to Home Assistant's WebSocket API with the saved token, fetches
the dashboard's Lovelace config and the entities' states, and after each dashboard rebuild takes a
screenshot to /tmp/screenshot.png 3 s after finding /tmp/take_screenshot (once per launch). Runs until killed.

As 1.3 does: the bootstrap keys (server, token, dashboard, kiosk…) are applied once and removed from its
preferences; the login is kept only in its keychain, which works only when the executable was signed
with the app's own entitlements (`ldid -S<entitlements>`, application-identifier among them). Signed
without them, the login holds for this launch only, and the next launch without hadeploy is logged out.

The screenshot is the dashboard it fetched, drawn as the USB twins draw theirs (VirtualDevice's
DashboardScreen and ScreenRenderer): a status bar, the app's header, each view's title and a box per card
with its title band and its entities' states, in a 5x7 bitmap font. Nothing else goes into it (no clock,
no random), so the same dashboard and states give the same PNG bytes, run after run.
"""
import base64
import hashlib
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
PREFERENCES = "/var/mobile/Library/Preferences/%s.plist" % BUNDLE
# Applied once, then removed from the defaults (HAAppDelegate.m at a3120aa).
BOOTSTRAP = ("HAClearCredentials", "HAServerURL", "HAAccessToken", "HADashboard", "HAKioskMode", "HAThemeMode",
             "HAGradientEnabled", "HADemoMode", "HAAutoRegister")
# Where the app keeps the settings it applied (its own keys, not the bootstrap ones).
SAVED = {"HADashboard": "ha_dashboard", "HAKioskMode": "ha_kiosk_mode", "HADemoMode": "ha_demo_mode"}


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
        with open(PREFERENCES, "rb") as f:
            return plistlib.load(f)
    except (OSError, plistlib.InvalidFileException):
        return {}


def save_defaults(values):
    tmp = PREFERENCES + ".app-new"
    with open(tmp, "wb") as f:
        plistlib.dump(values, f, fmt=plistlib.FMT_BINARY)
    os.chmod(tmp, 0o600)
    os.rename(tmp, PREFERENCES)


def entitled():
    """Whether this executable was signed with entitlements naming the app (the twin's ldid records
    them): without application-identifier every keychain call fails with errSecMissingEntitlement."""
    sys.path.insert(0, "/usr/libexec/twin")
    try:
        import springboard
        entitlements = springboard.entitlements_of(os.path.join(APP_PATH, NAME)) or {}
    except Exception:
        entitlements = {}
    return bool(entitlements.get("application-identifier"))


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
    ws.send({"id": 3, "type": "fire_event", "event_type": "ha_dashboard_loaded", "event_data": {
        "deploy_id": prefs.get("HADeployID"), "device": prefs.get("HADeviceID", ""), "dashboard": dashboard,
        "version": info.get("CFBundleShortVersionString", ""), "build": info.get("CFBundleVersion", ""),
        "kiosk": bool(prefs.get("HAKioskMode", prefs.get("ha_kiosk_mode", False)))}})
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


# What the dashboard shows, as lines (VirtualDevice's DashboardScreen): a card is "  [Title]" with its
# entities' rows "    Name: state" below it; any other line is text on the page.
MAXIMUM_LINES = 34


def text(value):
    return value if isinstance(value, str) else None


def entity_row(entity, states):
    state = states.get(entity)
    if state is None:
        return entity
    attributes = state.get("attributes") or {}
    unit = text(attributes.get("unit_of_measurement"))
    # The font is ASCII: "°C" is drawn as "C".
    unit = " " + "".join(c for c in unit if ord(c) < 128) if unit else ""
    return "%s: %s%s" % (text(attributes.get("friendly_name")) or entity, state.get("state", ""), unit)


def describe(card, states):
    if not isinstance(card, dict):
        return ["  [card]"]
    entities = []
    for item in card.get("entities") or []:
        entity = text(item) or (text(item.get("entity")) if isinstance(item, dict) else None)
        if entity:
            entities.append(entity)
    title = text(card.get("title")) or text(card.get("name"))
    entity = text(card.get("entity"))
    if entity:
        return ["  [" + (title + ": " if title else "") + entity_row(entity, states) + "]"]
    return ["  [" + (title or text(card.get("type")) or "card") + "]"] + ["    " + entity_row(e, states)
                                                                          for e in entities]


def dashboard_lines(config, dashboard, states):
    views, cards, strategy = count_cards(config)
    lines = [text(config.get("title")) or dashboard or "Home",
             "%d views, %d cards" % (views, cards) + (" (%s)" % strategy if strategy != "none" else ""), ""]
    for view in config.get("views") or []:
        if not isinstance(view, dict):
            continue
        lines.append("# " + (text(view.get("title")) or text(view.get("path")) or "View"))
        view_cards = list(view.get("cards") or [])
        for section in view.get("sections") or []:
            view_cards += section.get("cards") or [] if isinstance(section, dict) else []
        for card in view_cards:
            lines += describe(card, states)
    return lines[:MAXIMUM_LINES]


def generated_lines(dashboard, states):
    """The dashboard the app builds from the entities when Home Assistant has no config to show."""
    lines = ["Home (generated)", "%d entities" % len(states), ""]
    domains = {}
    for entity in sorted(states):
        domains.setdefault(entity.split(".")[0], []).append(states[entity])
    for domain in sorted(domains):
        lines.append("# " + domain)
        for state in domains[domain][:4]:
            name = text((state.get("attributes") or {}).get("friendly_name")) or state.get("entity_id", "")
            lines.append("  [%s: %s]" % (name, state.get("state", "")))
    if dashboard:
        lines.insert(1, "'%s' not loaded" % dashboard)
    return lines[:MAXIMUM_LINES]


# A 5x7 bitmap font (the USB twins' BitmapFont): rows top to bottom, "#" a pixel; lower case drawn as capitals.
GLYPHS = {
    "0": ".###. #...# #..## #.#.# ##..# #...# .###.", "1": "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.",
    "2": ".###. #...# ....# ...#. ..#.. .#... #####", "3": "##### ...#. ..#.. ...#. ....# #...# .###.",
    "4": "...#. ..##. .#.#. #..#. ##### ...#. ...#.", "5": "##### #.... ####. ....# ....# #...# .###.",
    "6": "..##. .#... #.... ####. #...# #...# .###.", "7": "##### ....# ...#. ..#.. .#... .#... .#...",
    "8": ".###. #...# #...# .###. #...# #...# .###.", "9": ".###. #...# #...# .#### ....# ...#. .##..",
    "A": ".###. #...# #...# ##### #...# #...# #...#", "B": "####. #...# #...# ####. #...# #...# ####.",
    "C": ".###. #...# #.... #.... #.... #...# .###.", "D": "###.. #..#. #...# #...# #...# #..#. ###..",
    "E": "##### #.... #.... ####. #.... #.... #####", "F": "##### #.... #.... ####. #.... #.... #....",
    "G": ".###. #...# #.... #.### #...# #...# .####", "H": "#...# #...# #...# ##### #...# #...# #...#",
    "I": ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###.", "J": "..### ...#. ...#. ...#. ...#. #..#. .##..",
    "K": "#...# #..#. #.#.. ##... #.#.. #..#. #...#", "L": "#.... #.... #.... #.... #.... #.... #####",
    "M": "#...# ##.## #.#.# #.#.# #...# #...# #...#", "N": "#...# #...# ##..# #.#.# #..## #...# #...#",
    "O": ".###. #...# #...# #...# #...# #...# .###.", "P": "####. #...# #...# ####. #.... #.... #....",
    "Q": ".###. #...# #...# #...# #.#.# #..#. .##.#", "R": "####. #...# #...# ####. #.#.. #..#. #...#",
    "S": ".#### #.... #.... .###. ....# ....# ####.", "T": "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#..",
    "U": "#...# #...# #...# #...# #...# #...# .###.", "V": "#...# #...# #...# #...# #...# .#.#. ..#..",
    "W": "#...# #...# #...# #.#.# #.#.# #.#.# .#.#.", "X": "#...# #...# .#.#. ..#.. .#.#. #...# #...#",
    "Y": "#...# #...# #...# .#.#. ..#.. ..#.. ..#..", "Z": "##### ....# ...#. ..#.. .#... #.... #####",
    " ": "..... ..... ..... ..... ..... ..... .....", ".": "..... ..... ..... ..... ..... .##.. .##..",
    ",": "..... ..... ..... ..... .##.. ..#.. .#...", ":": "..... .##.. .##.. ..... .##.. .##.. .....",
    ";": "..... .##.. .##.. ..... .##.. ..#.. .#...", "-": "..... ..... ..... ##### ..... ..... .....",
    "_": "..... ..... ..... ..... ..... ..... #####", "/": "..... ....# ...#. ..#.. .#... #.... .....",
    "\\": "..... #.... .#... ..#.. ...#. ....# .....", "(": "...#. ..#.. .#... .#... .#... ..#.. ...#.",
    ")": ".#... ..#.. ...#. ...#. ...#. ..#.. .#...", "'": "..#.. ..#.. ..... ..... ..... ..... .....",
    '"': ".#.#. .#.#. ..... ..... ..... ..... .....", "!": "..#.. ..#.. ..#.. ..#.. ..... ..... ..#..",
    "?": ".###. #...# ....# ...#. ..#.. ..... ..#..", "=": "..... ..... ##### ..... ##### ..... .....",
    "+": "..... ..#.. ..#.. ##### ..#.. ..#.. .....", "#": ".#.#. .#.#. ##### .#.#. ##### .#.#. .#.#.",
    "%": "##... ##..# ...#. ..#.. .#... #..## ...##", "&": ".##.. #..#. #.#.. .#... #.#.# #..#. .##.#",
    "@": ".###. #...# ....# .##.# #.#.# #.#.# .###.", "[": ".###. .#... .#... .#... .#... .#... .###.",
    "]": ".###. ...#. ...#. ...#. ...#. ...#. .###.", "<": "...#. ..#.. .#... #.... .#... ..#.. ...#.",
    ">": ".#... ..#.. ...#. ....# ...#. ..#.. .#...", "*": "..... ..#.. #.#.# .###. #.#.# ..#.. .....",
    "|": "..#.. ..#.. ..#.. ..#.. ..#.. ..#.. ..#..", "~": "..... ..... .#... #.#.# ...#. ..... .....",
    "$": "..#.. .#### #.#.. .###. ..#.# ####. ..#..", "^": "..#.. .#.#. #...# ..... ..... ..... .....",
}
GLYPH_WIDTH, GLYPH_HEIGHT = 5, 7

APP_BACKGROUND = (0xFA, 0xFA, 0xFA)
HEADER = (0x03, 0xA9, 0xF4)   # Home Assistant's primary blue
STATUS_BAR = (0, 0, 0)
TEXT = (0x21, 0x21, 0x21)
CARD = (0xFF, 0xFF, 0xFF)
CARD_BORDER = (0xB0, 0xBE, 0xC5)
WHITE = (0xFF, 0xFF, 0xFF)


def band_colour(title):
    """A card's title band: a dark colour from a stable hash of what the card is (its title or entity's
    name, not its state), so a card changed or added in Home Assistant is a visibly different box (white
    text stays readable on it)."""
    digest = hashlib.sha256(title.split(": ")[0].encode("utf-8")).digest()
    return tuple(0x20 + digest[i] % 0x70 for i in range(3))


class Canvas:
    def __init__(self, width, height, colour):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(colour) * (width * height))

    def fill(self, x, y, width, height, colour):
        x0, x1 = max(0, x), min(self.width, x + width)
        if x1 <= x0:
            return
        run = bytes(colour) * (x1 - x0)
        for row in range(max(0, y), min(self.height, y + height)):
            at = (row * self.width + x0) * 3
            self.pixels[at:at + len(run)] = run

    def text(self, line, x, y, scale, colour):
        cursor = x
        for character in line:
            if cursor + GLYPH_WIDTH * scale > self.width:
                break
            picture = GLYPHS.get(character.upper(), GLYPHS["?"])
            for row, bits in enumerate(picture.split(" ")):
                for column, bit in enumerate(bits):
                    if bit == "#":
                        self.fill(cursor + column * scale, y + row * scale, scale, scale, colour)
            cursor += (GLYPH_WIDTH + 1) * scale

    def png(self):
        stride = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.pixels[row * stride:(row + 1) * stride]) for row in range(self.height))

        def chunk(kind, data):
            return (struct.pack("!I", len(data)) + kind + data
                    + struct.pack("!I", zlib.crc32(kind + data) & 0xFFFFFFFF))
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack("!IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def screenshot_png(title, lines, kiosk=False, width=768, height=1024):
    """The app's screen (an iPad 2's 768x1024) as ScreenRenderer draws a USB twin's dashboard."""
    scale = max(2, width // 180)
    line_height = (GLYPH_HEIGHT + 4) * scale
    margin = 4 * scale
    canvas = Canvas(width, height, APP_BACKGROUND)
    y = 0
    if not kiosk:
        bar = line_height + 2 * scale
        canvas.fill(0, 0, width, bar, STATUS_BAR)
        canvas.text("iPad", margin, 3 * scale, scale, WHITE)
        canvas.text("100%", width - margin - 4 * (GLYPH_WIDTH + 1) * scale, 3 * scale, scale, WHITE)
        y = bar
        canvas.fill(0, y, width, line_height * 2, HEADER)
        canvas.text(title, margin, y + line_height // 2 + scale, scale, WHITE)
        y += line_height * 2
    y += margin
    index = 0
    while index < len(lines) and y < height:
        line = lines[index]
        index += 1
        if not line.startswith("  ["):
            canvas.text(line, margin, y, scale, TEXT)
            y += line_height
            continue
        rows = []
        while index < len(lines) and lines[index].startswith("    "):
            rows.append(lines[index][4:])
            index += 1
        card_title = line[3:-1] if line.endswith("]") else line[3:]
        card_width = width - 2 * margin
        card_height = line_height * (len(rows) + 1) + margin
        border = max(1, scale // 2)
        canvas.fill(margin, y, card_width, card_height, CARD_BORDER)
        canvas.fill(margin + border, y + border, card_width - 2 * border, card_height - 2 * border, CARD)
        canvas.fill(margin + border, y + border, card_width - 2 * border, line_height, band_colour(card_title))
        canvas.text(card_title, 2 * margin, y + 2 * scale + border, scale, WHITE)
        row_y = y + line_height + margin // 2
        for row in rows:
            canvas.text(row, 2 * margin, row_y, scale, TEXT)
            row_y += line_height
        y += card_height + margin
    return canvas.png()


def fetch_states(ws, request_id):
    """The entities' states ({entity_id: state}), as the app reads them to fill its cards."""
    ws.send({"id": request_id, "type": "get_states"})
    answer = ws.receive()
    states = {}
    for state in answer.get("result") or [] if answer.get("success") else []:
        if isinstance(state, dict) and isinstance(state.get("entity_id"), str):
            states[state["entity_id"]] = state
    return states


DEMO_LINES = ["Demo", "3 views, 12 cards", "", "# Home", "  [Living Room Light: on]",
              "  [Temperature: 21.5 C]", "  [Front Door: locked]", "  [Climate]", "    Thermostat: heat",
              "# Energy", "  [Solar: 3.2 kW]", "  [Grid: 0.4 kW]", "  [Battery: 87 %]", "  [Usage]",
              "# Security", "  [Alarm: armed_home]", "  [Garage: closed]", "  [Camera]", "  [Motion: clear]"]


def main():
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    pid_file = "/var/run/twin/%s.pid" % NAME
    try:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    except PermissionError:
        pass  # `open` recorded this pid already, in a file the app cannot write
    header()
    log("INFO", "startup", "didFinishLaunching START")
    try:
        info = plistlib.load(open(os.path.join(APP_PATH, "Info.plist"), "rb"))
    except Exception:
        info = {}
    log("INFO", "startup", "App version: %s (%s)" % (info.get("CFBundleShortVersionString", "?"),
                                                       info.get("CFBundleVersion", "?")))
    prefs = defaults()
    can_keychain = entitled()
    if prefs.get("HAClearCredentials") is True:
        log("INFO", "startup", "HAClearCredentials=YES — wiping keychain")
        if can_keychain:
            keychain(clear=True)
    url, token = prefs.get("HAServerURL") or "", prefs.get("HAAccessToken") or ""
    log("INFO", "startup", "NSUserDefaults read END (url=%s, token=%s)" % ("YES" if url else "NO",
                                                                         "YES" if token else "NO"))
    login = {}
    if url and token:
        login = {"server": url, "token": token}
        if can_keychain:
            keychain(login)
        else:
            log("ERROR", "auth", "Keychain write failed: -34018 (errSecMissingEntitlement): the login "
                "lasts this launch only")
    # The settings it applied are its own from now on; the bootstrap keys are used once.
    kept = {key: value for key, value in prefs.items() if key not in BOOTSTRAP}
    for key, saved_key in SAVED.items():
        if key in prefs:
            kept[saved_key] = prefs[key]
    if kept != prefs:
        save_defaults(kept)
        log("INFO", "startup", "Bootstrap keys applied and removed from NSUserDefaults")
    saved = dict(keychain()) if can_keychain else {}
    saved.update(login)
    saved["dashboard"] = kept.get("ha_dashboard")
    saved["kiosk"] = bool(kept.get("ha_kiosk_mode", False))
    demo = kept.get("ha_demo_mode") is True
    configured = bool(saved.get("server") and saved.get("token")) or demo
    log("INFO", "startup", "isConfigured=%s" % ("YES" if configured else "NO"))
    built = False
    screen = []
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
                    config = result.get("result") if isinstance(result.get("result"), dict) else {}
                    views, cards, strategy = count_cards(config)
                    log("INFO", "conn", "Lovelace config received: %d views, %d cards, strategy=%s"
                        % (views, cards, strategy))
                    screen = dashboard_lines(config, dashboard, fetch_states(ws, 2))
                    built = True
                    announce(ws, prefs, dashboard, info)
                else:
                    error = result.get("error") or {}
                    log("ERROR", "conn", "Lovelace config fetch failed: %s" % error)
                    if error.get("code") == "config_not_found":
                        # As the app does: no saved config is the generated dashboard.
                        log("INFO", "conn", "No Lovelace config — using original-states strategy")
                        screen = generated_lines(None, fetch_states(ws, 2))
                        built = True
                        announce(ws, prefs, dashboard, info)
        except Exception as error:
            log("ERROR", "conn", "Connection failed: %s" % error)
    elif demo:
        log("INFO", "conn", "Demo mode: Lovelace config received: 3 views, 12 cards, strategy=none")
        screen = DEMO_LINES
        built = True
    scheduled = False
    title = info.get("CFBundleDisplayName") or info.get("CFBundleName") or NAME
    kiosk = bool(saved.get("kiosk", False))
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
                f.write(screenshot_png(title, screen, kiosk=kiosk))
            os.rename("/tmp/screenshot.png.tmp", "/tmp/screenshot.png")


if __name__ == "__main__":
    main()

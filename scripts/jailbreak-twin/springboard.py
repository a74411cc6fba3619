"""Twins of the jailbreak tools the deploy relies on, behaving as on an iOS 9 device.

  ldid -S[ENT] FILE  pseudo-signs FILE in place (a trailer with the SHA-256 of the rest; re-signing replaces
                   it), with the entitlements plist ENT when given (`-S/tmp/e.xml`, as ldid takes it): the
                   app's keychain works only when they hold its application-identifier
  uicache          rebuilds the installation cache from /Applications/*.app/Info.plist (what SpringBoard reads)
  open BUNDLE_ID   starts the app registered under that id (bundle id only, as the jailbreak's `open`);
                   refuses an app that uicache does not know or whose executable is not signed
  killall NAME     ends the processes of that executable; exit 1 when there were none
"""
import base64
import fcntl
import hashlib
import os
import plistlib
import signal
import sys
import time

CACHE = "/var/mobile/Library/Caches/com.apple.mobile.installation.plist"
RUN = "/var/run/twin"
MARK = b"\n#LDID-PSEUDO-SIGNATURE "
ENTITLEMENTS = b"\n#LDID-ENTITLEMENTS "


def unsigned_part(data):
    at = data.rfind(MARK)
    if at >= 0 and data.endswith(b"\n") and len(data) - at == len(MARK) + 65:
        return data[:at], data[at + len(MARK):-1].decode()
    return data, None


def split(data):
    """(the executable as it was before signing, the signed part, its digest, its entitlements)"""
    signed, digest = unsigned_part(data)
    original, entitlements = signed, None
    at = signed.rfind(ENTITLEMENTS)
    if digest is not None and at >= 0:
        try:
            entitlements = plistlib.loads(base64.b64decode(signed[at + len(ENTITLEMENTS):]))
            original = signed[:at]
        except Exception:
            entitlements = None
    return original, signed, digest, entitlements


def is_signed(path):
    with open(path, "rb") as f:
        _, signed, digest, _ = split(f.read())
    return digest == hashlib.sha256(signed).hexdigest()


def entitlements_of(path):
    """The entitlements ldid signed `path` with (a dict), or None."""
    try:
        with open(path, "rb") as f:
            _, signed, digest, entitlements = split(f.read())
    except OSError:
        return None
    return entitlements if digest == hashlib.sha256(signed).hexdigest() else None


def ldid(args):
    if len(args) != 2 or not args[0].startswith("-S"):
        print("usage: ldid -S[entitlements.xml] <binary>", file=sys.stderr)
        return 1
    path, entitlements = args[1], None
    if len(args[0]) > 2:
        try:
            with open(args[0][2:], "rb") as f:
                raw = f.read()
            if not isinstance(plistlib.loads(raw), dict):
                raise ValueError("not a dictionary")
            entitlements = raw
        except (OSError, ValueError, plistlib.InvalidFileException) as error:
            print("ldid: %s: cannot read the entitlements: %s" % (args[0][2:], error), file=sys.stderr)
            return 1
    try:
        with open(path, "rb") as f:
            body, _, _, _ = split(f.read())
    except OSError as error:
        print("ldid: %s: %s" % (path, error.strerror), file=sys.stderr)
        return 1
    if entitlements is not None:
        body = body + ENTITLEMENTS + base64.b64encode(entitlements)
    mode = os.stat(path).st_mode
    tmp = path + ".ldid"
    with open(tmp, "wb") as f:
        f.write(body + MARK + hashlib.sha256(body).hexdigest().encode() + b"\n")
    os.chmod(tmp, mode & 0o7777)
    os.rename(tmp, path)
    return 0


def uicache(args):
    apps = {}
    for name in sorted(os.listdir("/Applications")):
        info = os.path.join("/Applications", name, "Info.plist")
        if not name.endswith(".app") or not os.path.isfile(info):
            continue
        try:
            with open(info, "rb") as f:
                plist = plistlib.load(f)
        except Exception:
            continue
        bundle = plist.get("CFBundleIdentifier")
        if bundle:
            apps[bundle] = {"Path": os.path.join("/Applications", name),
                            "CFBundleExecutable": plist.get("CFBundleExecutable", name[:-4])}
    tmp = CACHE + ".new"
    with open(tmp, "wb") as f:
        plistlib.dump({"System": apps}, f, fmt=plistlib.FMT_BINARY)
    os.rename(tmp, CACHE)
    return 0


def pids_of(name):
    found = []
    for entry in os.listdir(RUN) if os.path.isdir(RUN) else []:
        if entry.endswith(".pid") and entry[:-4] == name:
            try:
                pid = int(open(os.path.join(RUN, entry)).read().strip())
                os.kill(pid, 0)
                found.append(pid)
            except (OSError, ValueError):
                os.remove(os.path.join(RUN, entry))
    return found


def killall(args):
    names = [a for a in args if not a.startswith("-")]
    if len(names) != 1:
        print("usage: killall [-9] <process name>", file=sys.stderr)
        return 1
    pids = pids_of(names[0])
    if not pids:
        print("No matching processes belonging to you were found", file=sys.stderr)
        return 1
    for pid in pids:
        os.kill(pid, signal.SIGKILL if "-9" in args else signal.SIGTERM)
    deadline = time.time() + 5
    while time.time() < deadline and any(os.path.exists("/proc/%d" % p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os.remove(os.path.join(RUN, names[0] + ".pid"))
    return 0


def open_app(args):
    if len(args) != 1:
        print("usage: open <bundle id>", file=sys.stderr)
        return 1
    try:
        with open(CACHE, "rb") as f:
            apps = plistlib.load(f).get("System", {})
    except OSError:
        apps = {}
    app = apps.get(args[0])
    if app is None:
        print("open: %s is not installed (run uicache)" % args[0], file=sys.stderr)
        return 1
    executable = os.path.join(app["Path"], app["CFBundleExecutable"])
    if not os.path.isfile(executable) or not is_signed(executable):
        # The kernel of a jailbroken device kills unsigned code at exec time.
        print("open: %s: Killed: 9 (code signature invalid, run ldid -S)" % executable, file=sys.stderr)
        return 1
    name = app["CFBundleExecutable"]
    os.makedirs(RUN, exist_ok=True)
    # One launch at a time, and the new process's pid recorded before `open` returns: a second
    # `open` (a retried command) finds the app running however slowly it starts, as SpringBoard
    # brings a launching app to the front instead of starting another.
    with open(os.path.join(RUN, name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if pids_of(name):
            return 0  # already running: SpringBoard brings it to the front
        started = os.pipe()
        if os.fork() == 0:
            os.setsid()
            pid = os.fork()
            if pid == 0:
                fd = os.open("/dev/null", os.O_RDWR)
                for target in (0, 1, 2):
                    os.dup2(fd, target)
                # The app runs as mobile (501). A twin run without root is 501 already: root and
                # mobile are one id there (twin.sh), so the switch changes nothing.
                os.setgid(501)
                os.setuid(501)
                # argv[0] is the executable's full path, as iOS starts an app: `pgrep -f` on that
                # exact path finds it (and only it).
                os.execv("/usr/libexec/twin/python3",
                         [executable, "/usr/libexec/twin/app.py", args[0], app["Path"], name])
            os.write(started[1], str(pid).encode())
            os._exit(0)
        os.close(started[1])
        pid = int(os.read(started[0], 32) or b"0")
        os.close(started[0])
        if pid > 0:
            path = os.path.join(RUN, name + ".pid")
            with open(path, "w") as f:
                f.write(str(pid))
            try:
                os.chown(path, 501, 501)  # the app (mobile) writes it again as it starts
            except OSError:
                pass
    return 0


def hold(tool):
    """A test's hold (twin.sh with TWIN_HOLD=TOOL): this tool marks RUN/held and waits while RUN/hold
    names it, at most ten minutes, so a run can be caught at a known step."""
    path = os.path.join(RUN, "hold")
    try:
        with open(path) as f:
            if f.read().strip() != tool:
                return
    except OSError:
        return
    with open(os.path.join(RUN, "held"), "w") as f:
        f.write(tool + "\n")
    deadline = time.time() + 600
    while time.time() < deadline and os.path.exists(path):
        time.sleep(0.05)


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    hold(tool)
    return {"ldid": ldid, "uicache": uicache, "killall": killall, "open": open_app}[tool](args)


if __name__ == "__main__":
    sys.exit(main())

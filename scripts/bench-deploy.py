#!/usr/bin/env python3
"""Deploy benchmarks for BENCHMARKS.md (issue 7), side by side in one run on one machine.

(a) `hadeploy all` to 6 virtual iPads with links throttled to USB 2.0 speed (35 MB/s) and a 50 MB app,
    vs the slowest single device alone, vs one device after another (hadeploy per device, and the old
    shell-script way: `ideviceinstaller -i` per device);
(b) an unchanged redeploy of `all`;
(c) start-up time of `hadeploy plan all` and `hadeploy version` (hyperfine when installed, else a loop),
    next to the git commands the old scripts ran for the version.

Fleet mode (issue 27): `--devices 24 --app-mb 20` (or 48) measures (a) and (b) only, and for each
`hadeploy` run also hadeploy's own CPU seconds (user+sys of the process and the children it waited
for, from wait4) apart from the emulator's (`hadeploy virtual`: /proc/PID/stat utime+stime before
and after), and each step's wall time from the `--json` events. It ends with the done-when ratios.

Usage: scripts/bench-deploy.py [--devices N] [--app-mb M] [--profile] [path/to/hadeploy]
       (default: 6 devices, 50 MB, the shipped static binary `make release` links in .build-release)
"""
import argparse, json, os, plistlib, shutil, socket, struct, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
parser = argparse.ArgumentParser(description="hadeploy deploy benchmarks")
parser.add_argument("binary", nargs="?", default=os.path.join(ROOT, ".build-release/release/hadeploy-static"))
parser.add_argument("--devices", type=int, default=6, help="number of twins (default 6)")
parser.add_argument("--app-mb", type=int, default=None, help="app size in MB (default 50, or 20 with --devices > 6)")
parser.add_argument("--profile", action="store_true", help="print CPU seconds and per-step wall times of each run")
options = parser.parse_args()
BIN = os.path.abspath(options.binary)
FLEET = options.devices != 6 or options.profile
DEVICES = [f"d{i}" for i in range(1, options.devices + 1)]
APP_MB = options.app_mb or (50 if options.devices <= 6 else 20)
RATE = 35_000_000

work = tempfile.mkdtemp(prefix="hadeploy-bench-")
env = dict(os.environ, HOME=work, XDG_CACHE_HOME=os.path.join(work, "cache"), GIT_CONFIG_GLOBAL="/dev/null")

def run(cmd, **kw):
    return subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True, text=True, **kw)

# --- the project: git repo, devices.yaml, a 50 MB app, Developer Disk Image files -------------------
yaml = ["version: 1", "defaults:", f"  ddi_dir: {work}/DeviceSupport", "flavours:",
        '  modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}', "devices:"]
for d in DEVICES:
    yaml += [f"  {d}:", f"    name: {d}", "    product_type: iPad5,1", '    ios: "15.8"', "    arch: arm64",
             "    flavour: modern", "    transport: usb", f"    udid: ${{{d.upper()}_UDID}}"]
open(os.path.join(work, "devices.yaml"), "w").write("\n".join(yaml) + "\n")
open(os.path.join(work, ".gitignore"), "w").write("*\n!devices.yaml\n!.gitignore\n")
ddi = os.path.join(work, "DeviceSupport/15.8")
os.makedirs(ddi)
open(os.path.join(ddi, "DeveloperDiskImage.dmg"), "wb").write(b"virtual ddi")
open(os.path.join(ddi, "DeveloperDiskImage.dmg.signature"), "wb").write(b"\x01" * 64)
app = os.path.join(work, "artifacts/modern/HADashboard.app")
os.makedirs(app)
# Signed as installd requires: one LC_CODE_SIGNATURE load command (an empty blob).
header = (struct.pack("<IIIIIIII", 0xFEEDFACF, 0x0100000C, 0, 2, 1, 16, 0, 0)
          + struct.pack("<IIII", 0x1D, 16, 4032, 0)).ljust(4096, b"\0")
open(os.path.join(app, "HADashboard"), "wb").write(header)
with open(os.path.join(app, "payload.bin"), "wb") as f:
    f.write(os.urandom(APP_MB * 1_000_000))
# With a profile that covers every twin (they refuse an app without one, as real devices do).
run([sys.executable, os.path.join(ROOT, "scripts/inhouse-profile.py"), os.path.join(app, "embedded.mobileprovision")])
plistlib.dump({"CFBundleIdentifier": "com.example.hadashboard", "CFBundleExecutable": "HADashboard",
               "CFBundleShortVersionString": "1.0.0", "CFBundleVersion": "1"}, open(os.path.join(app, "Info.plist"), "wb"))
ipa = os.path.join(work, "HADashboard.ipa")
run(["sh", "-c", f"mkdir -p p/Payload && cp -r '{app}' p/Payload/ && cd p && zip -q -0 -r '{ipa}' Payload"])
for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "app"],
             ["tag", "v1.0.0"]):
    run(["git"] + args)

# --- the virtual devices, in their own process ---------------------------------------------------------
sock = os.path.join(work, "usbmuxd.sock")
virtual = subprocess.Popen([BIN, "virtual", "--socket", sock, "--state", os.path.join(work, "state")],
                           cwd=work, env=env, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "virtual.err"), "w"), text=True)
line = virtual.stdout.readline().strip()
assert line.startswith("USBMUXD_SOCKET_ADDRESS="), (line, virtual.wait(), open(os.path.join(work, "virtual.err")).read()[-2000:])
env["USBMUXD_SOCKET_ADDRESS"] = line.split("=", 1)[1]

def control(request):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.path.join(work, "state/control.sock"))
    s.sendall((json.dumps(request) + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        data += s.recv(65536)
    s.close()
    return json.loads(data)

devices = control({"command": "devices"})
udids = {d["name"]: d["udid"] for d in (devices.get("devices") or devices.get("result") or [])}
assert len(udids) == len(DEVICES), devices
open(os.path.join(work, ".env"), "w").write("HA_SERVER=http://127.0.0.1:9\nHA_TOKEN=unused-bench\n" + "".join(f"{d.upper()}_UDID={udids[d]}\n" for d in DEVICES))
for d in DEVICES:
    control({"command": "inject", "udid": d, "fault": {"throttle": {"bytesPerSecond": RATE}}})

def emulator_cpu():
    """The emulator process's user+sys CPU seconds so far (/proc/PID/stat fields 14 and 15)."""
    fields = open(f"/proc/{virtual.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def load_average():
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())

def profiled(label, cmd):
    """Runs one hadeploy deploy with --json; returns wall seconds and prints where the time went."""
    cmd = cmd + ["--json"]
    out = tempfile.TemporaryFile(mode="w+")
    emulator_before = emulator_cpu()
    # BENCH_PERF=DIR: `perf record -a -g` around this run only (not the set-up, not the other runs),
    # one file per run, to find where the CPU of both processes goes (`perf report --sort pid,dso`).
    recorder = None
    if os.environ.get("BENCH_PERF"):
        name = "".join(c if c.isalnum() else "-" for c in label) + f"-{time.monotonic_ns()}.data"
        recorder = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "999", "-q", "-o",
                                     os.path.join(os.environ["BENCH_PERF"], name)], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    start = time.monotonic()
    stamped = []
    if os.environ.get("BENCH_EVENTS"):
        # Each event line stamped as it arrives (the events' own time is whole seconds).
        process = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, bufsize=1)
        def pump():
            for line in process.stdout:
                stamped.append((time.monotonic() - start, line))
                out.write(line)
        reader = threading.Thread(target=pump)
        reader.start()
        stderr = process.stderr.read()
        reader.join()
    else:
        process = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.monotonic() - start
    if recorder:
        recorder.send_signal(2)
        recorder.wait()
    process.returncode = os.waitstatus_to_exitcode(status)
    emulator = emulator_cpu() - emulator_before
    out.seek(0)
    lines = out.read().splitlines()
    if os.environ.get("BENCH_EVENTS"):
        # BENCH_EVENTS=DIR: each run's JSON events, with the wall-clock start, for a timeline.
        name = "".join(c if c.isalnum() else "-" for c in label) + f"-{time.monotonic_ns()}.jsonl"
        with open(os.path.join(os.environ["BENCH_EVENTS"], name), "w") as f:
            for at, line in stamped:
                if line.startswith("{"):
                    event = json.loads(line)
                    event["arrived"] = round(at, 4)
                    f.write(json.dumps(event) + "\n")
            f.write(json.dumps({"event": "exited", "arrived": round(elapsed, 4)}) + "\n")
    if process.returncode != 0:
        print("\n".join(lines[-20:]), stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    if not options.profile:
        return elapsed
    events = [json.loads(line) for line in lines if line.startswith("{")]
    steps = {}
    for event in events:
        if event.get("event") == "step_finished":
            steps.setdefault(event["step"], []).append(event["seconds"])
    devices = max(1, sum(1 for e in events if e.get("event") == "device_finished"))
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  [{label}] wall {elapsed:.2f} s; hadeploy CPU {cpu:.2f} s (user {usage.ru_utime:.2f}, sys "
          f"{usage.ru_stime:.2f}) = {cpu / devices * 1000:.0f} ms/device; emulator CPU {emulator:.2f} s; "
          f"max RSS {usage.ru_maxrss / 1024:.0f} MB; load {load_average()}")
    for step, seconds in steps.items():
        seconds.sort()
        print(f"      {step:<22} n={len(seconds):<3} median {seconds[len(seconds) // 2]:6.3f} s  "
              f"max {seconds[-1]:6.3f} s  sum {sum(seconds):7.2f} s")
    return elapsed

def timed(cmd):
    if cmd[0] == BIN:
        return profiled(" ".join(cmd[1:3]), cmd)
    start = time.monotonic()
    result = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return elapsed

base = [BIN, "--no-build", "--artifacts", "artifacts", "--no-verify", "--kiosk"]
print(f"machine: {os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}; load average {load_average()}; "
      f"{len(DEVICES)} devices; app {APP_MB} MB; links throttled to {RATE/1e6:.0f} MB/s; hadeploy {BIN}")
if FLEET:
    # Warm-up: the first run pairs every twin and fills the caches; not measured.
    timed([BIN, "all", "--force"] + base[1:])
    all_force = timed([BIN, "all", "--force"] + base[1:])
    single = max(timed([BIN, d, "--force"] + base[1:]) for d in (DEVICES[0], DEVICES[-1]))
    unchanged = timed([BIN, "all"] + base[1:])
    # Issue 38: the fleet at the pace of one device (1.25x, as for 6), the unchanged redeploy under 1 s.
    target = 1.25
    print(f"(a) hadeploy all, {len(DEVICES)} devices, {APP_MB} MB:  {all_force:6.2f} s")
    print(f"    slowest single device alone:         {single:6.2f} s")
    print(f"    ratio all/single = {all_force / single:.2f}x (target <= {target}x)")
    print(f"(b) unchanged redeploy of all {len(DEVICES)}: {unchanged:6.2f} s (target < 1 s)")
    print(f"load average at the end: {load_average()}")
    virtual.terminate()
    virtual.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)
    raise SystemExit(0)
all_force = timed([BIN, "all", "--force"] + base[1:])
single = max(timed([BIN, d, "--force"] + base[1:]) for d in ("d1", "d6"))
sequential = sum(timed([BIN, d, "--force"] + base[1:]) for d in DEVICES)
old_way = sum(timed(["ideviceinstaller", "-u", udids[d], "-i", ipa]) for d in DEVICES)
unchanged = timed([BIN, "all"] + base[1:])
print(f"(a) hadeploy all, 6 devices in parallel:      {all_force:6.2f} s")
print(f"    slowest single device alone:             {single:6.2f} s   ratio all/single = {all_force/single:.2f} (target <= 1.25)")
print(f"    hadeploy one device after another:       {sequential:6.2f} s")
print(f"    ideviceinstaller -i one after another:   {old_way:6.2f} s   (install only, no launch/screenshot)")
print(f"(b) unchanged redeploy of all (no upload):   {unchanged:6.2f} s   (target < 2 s)")

# --- (c) start-up -------------------------------------------------------------------------------------
def startup(cmd, rounds=20):
    samples = []
    for _ in range(rounds):
        start = time.monotonic()
        subprocess.run(cmd, cwd=work, env=env, capture_output=True)
        samples.append(time.monotonic() - start)
    samples.sort()
    return samples[len(samples) // 2] * 1000

plan = startup([BIN, "plan", "all"])
version = startup([BIN, "version"])
git = startup(["sh", "-c", "git describe --tags --match 'v*' --abbrev=0 && git rev-list --count HEAD"])
print(f"(c) hadeploy plan all: {plan:5.1f} ms   hadeploy version: {version:5.1f} ms   "
      f"(old scripts' git describe + rev-list: {git:5.1f} ms)   median of 20, target < 50 ms")

virtual.terminate()
virtual.wait(timeout=30)
shutil.rmtree(work, ignore_errors=True)

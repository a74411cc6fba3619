#!/usr/bin/env python3
# A STAND-IN for xcodebuild on Linux (Xcode cannot run here). It honours the arguments hadeploy
# passes that decide the output: -derivedDataPath, -configuration, -sdk (or the Mac Catalyst
# -destination) and ARCHS=..., and writes an
# .app whose executable has a signed Mach-O header per architecture and, for devices, a provisioning
# profile (openssl makes it). STANDIN_FAIL=1 makes it fail like a compile error.
# Control files in the working directory (the app repo): STANDIN_FAIL makes it fail
# like a compile error; STANDIN_ARCHS overrides the slices it writes (to test the slice check);
# STANDIN_REQUIRE_KEY makes it fail unless -authenticationKeyPath names a readable .p8 key;
# STANDIN_SLEEP makes it write standin.pid and sleep that many seconds (a long build).
# The app it writes carries the *.swift files and Generated/project.yml it was built from, under
# Sources/, so a test can see which source tree a (remote) build really used.
import os, plistlib, shutil, struct, sys

args = sys.argv[1:]
if args == ["-version"]:
    print("Xcode 26.0 (stand-in)\nBuild version 17A324")
    sys.exit(0)

def value(flag):
    return args[args.index(flag) + 1] if flag in args else None

settings = dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))
with open("standin.log", "a") as log:
    log.write(" ".join(args) + "\n")
print("Build settings from command line:")
for k, v in sorted(settings.items()):
    print(f"    {k} = {v}")
# As xcodebuild does: an existing result bundle is refused before anything is built, and the
# bundle is created at the start, so a failed build leaves it behind.
bundle = value("-resultBundlePath")
if bundle:
    if os.path.exists(bundle):
        print(f'xcodebuild: error: Existing file at -resultBundlePath "{os.path.abspath(bundle)}"', file=sys.stderr)
        sys.exit(64)
    os.makedirs(os.path.join(bundle, "Data"))
    with open(os.path.join(bundle, "Info.plist"), "wb") as f:
        plistlib.dump({"version": {"major": 3, "minor": 53}}, f)
if os.path.exists("STANDIN_SLEEP"):
    # A long build: records its pid, then takes as many seconds as the file says.
    with open("standin.pid", "w") as f:
        f.write(str(os.getpid()))
    import time
    time.sleep(float(open("STANDIN_SLEEP").read() or "60"))
if os.path.exists("STANDIN_FAIL"):
    for i in range(2000):
        print(f"CompileSwift normal arm64 {os.getcwd()}/App/File{i}.swift (in target 'HADashboard')")
    # xcodebuild names sources by absolute path inside the checkout it builds.
    print(f"{os.getcwd()}/App/DashboardView.swift:12:5: error: cannot find 'kioskMode' in scope")
    print(f"{os.getcwd()}/App/DashboardView.swift:30:9: error: missing return in closure")
    print("** BUILD FAILED **")
    sys.exit(65)

if os.path.exists("STANDIN_REQUIRE_KEY"):
    key = value("-authenticationKeyPath")
    try:
        ok = open(key).read().startswith("-----BEGIN PRIVATE KEY-----")
    except (OSError, TypeError):
        ok = False
    if not ok:
        print(f"error: authentication key {key} is not readable here")
        print("** BUILD FAILED **")
        sys.exit(65)

archs = (open("STANDIN_ARCHS").read() if os.path.exists("STANDIN_ARCHS") else settings.get("ARCHS", "arm64")).split()
cpu = {"armv7": (12, 9, False), "arm64": (0x0100000C, 0, True), "x86_64": (0x01000007, 3, True)}
def thin(arch):
    # Signed, as xcodebuild's products are: one LC_CODE_SIGNATURE load command (an empty blob here).
    t, s, is64 = cpu[arch]
    h = struct.pack("<IIIIIII", 0xFEEDFACF if is64 else 0xFEEDFACE, t, s, 2, 1, 16, 0)
    h += (b"\0\0\0\0" if is64 else b"") + struct.pack("<IIII", 0x1D, 16, 4032, 0)
    return h.ljust(4096, b"\0")
if len(archs) == 1:
    binary = thin(archs[0])
else:
    header = struct.pack(">II", 0xCAFEBABE, len(archs))
    body = b""
    for i, a in enumerate(archs):
        t, s, _ = cpu[a]
        header += struct.pack(">IIIII", t, s, 16384 * (i + 1), 4096, 14)
    binary = header.ljust(16384, b"\0")
    for a in archs:
        binary = binary.ljust(len(binary) + (-len(binary)) % 16384, b"\0") + thin(a)

# `-destination 'platform=macOS,variant=Mac Catalyst'` (no -sdk) builds the Mac variant: Xcode
# writes it to <configuration>-maccatalyst/ as a macOS bundle (Contents/Info.plist,
# Contents/MacOS/<executable>).
catalyst = value("-destination") == "platform=macOS,variant=Mac Catalyst"
platform = "maccatalyst" if catalyst else value("-sdk")
app = os.path.join(value("-derivedDataPath"), "Build", "Products",
                   f"{value('-configuration')}-{platform}", "HADashboard.app")
contents = os.path.join(app, "Contents") if catalyst else app
executable_dir = os.path.join(contents, "MacOS") if catalyst else app
os.makedirs(executable_dir, exist_ok=True)
with open(os.path.join(executable_dir, "HADashboard"), "wb") as f:
    f.write(binary)
with open(os.path.join(contents, "Info.plist"), "wb") as f:
    plistlib.dump({"CFBundleIdentifier": "com.example.hadashboard", "CFBundleExecutable": "HADashboard",
                   "CFBundleShortVersionString": settings.get("MARKETING_VERSION", "0.0.0"),
                   "CFBundleVersion": settings.get("CURRENT_PROJECT_VERSION", "0")}, f)
if platform == "iphoneos":
    # Signed for devices as Xcode's automatic signing signs: a provisioning profile in the bundle (here
    # an in-house one, every device and app id of the team, in a CMS envelope made by openssl).
    import datetime, subprocess, tempfile
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0, tzinfo=None)
    profile = {"Name": "HADashboard (stand-in)", "UUID": "57A4D100-0000-4000-8000-00000000A11D",
               "TeamIdentifier": ["STANDIN000"], "CreationDate": now, "Version": 1,
               "ExpirationDate": now + datetime.timedelta(days=365), "ProvisionsAllDevices": True,
               "Entitlements": {"application-identifier": "STANDIN000.*"}}
    with tempfile.TemporaryDirectory() as work:
        plist, key, cert = (os.path.join(work, n) for n in ("p.plist", "k.pem", "c.pem"))
        with open(plist, "wb") as f:
            plistlib.dump(profile, f)
        for command in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                         "-days", "366", "-subj", "/CN=Apple Development: stand-in"],
                        ["cms", "-sign", "-nodetach", "-binary", "-outform", "DER", "-in", plist,
                         "-signer", cert, "-inkey", key, "-out", os.path.join(app, "embedded.mobileprovision")]):
            subprocess.run(["openssl"] + command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sources = os.path.join(app, "Sources")
os.makedirs(sources, exist_ok=True)
for name in sorted(os.listdir(".")):
    if name.endswith(".swift"):
        shutil.copy(name, sources)
if os.path.exists("Generated/project.yml"):
    shutil.copy("Generated/project.yml", sources)
print("** BUILD SUCCEEDED **")

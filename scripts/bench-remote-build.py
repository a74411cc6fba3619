#!/usr/bin/env python3
"""Remote build over SSH: `hadeploy build` with `build_host:` vs the shell-script way, side by side.

Usage: scripts/bench-remote-build.py [ROUNDS]   (default 5; run as root after scripts/ssh-peers.sh)

A real OpenSSH sshd on 127.0.0.1 plays the Mac (logging in as the SSH test user); the xcodebuild and
XcodeGen STAND-INS from Tests/HADeployKitTests/Fixtures play Xcode, so the figures are the cost of
hadeploy's own work: snapshot, upload, remote commands, fetch, slice check, .ipa packaging, cache.
The app repository is synthetic: 1,500 Swift files (12 MB) and a 20 MB asset.

The peer is what the replaced shell scripts did, with the OpenSSH client:
  git archive HEAD | ssh mac 'rm -rf W && mkdir -p W && tar -x -C W'
  ssh mac 'cd W && xcodegen generate … && xcodebuild …'
  ssh mac 'cd W/…/Release-iphoneos && tar -c HADashboard.app' | tar -x ; python3 -m zipfile -c ….ipa Payload
Rounds alternate the two; medians are reported. hadeploy runs from .build/debug (the default build).
"""
import os, pwd, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "Tests/HADeployKitTests/Fixtures")
USER = "hadeploy-ssh"
CLIENT_KEY = "/var/lib/hadeploy-ssh-test/id_ed25519"
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def remove_work_trees(user_home):
    """Only this benchmark's trees on the build host (tests may use the same account)."""
    builds = f"{user_home}/.hadeploy-builds"
    for name in os.listdir(builds) if os.path.isdir(builds) else []:
        if name.startswith("benchapp-") or name == "bench-script":
            shutil.rmtree(f"{builds}/{name}", ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if not os.path.exists(CLIENT_KEY):
        sys.exit("run scripts/ssh-peers.sh first (as root)")
    binary = os.path.join(ROOT, ".build/debug/hadeploy")
    if not os.path.exists(binary):
        run(["swift", "build", "--product", "hadeploy"], cwd=ROOT)
    tmp = tempfile.mkdtemp(prefix="hd-bench-remote.")
    os.chmod(tmp, 0o755)
    sshd = None
    user_home = pwd.getpwnam(USER).pw_dir
    try:
        keys = os.path.join(tmp, "keys")
        os.makedirs(keys)
        for kind in ("ed25519", "rsa"):
            run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", f"{keys}/modern_{kind}_host"])
        conf = open(os.path.join(ROOT, "scripts/ssh/sshd_modern.conf")).read()
        conf = conf.replace("KEYDIR", keys).replace("RUNDIR", tmp).replace("LogLevel VERBOSE", "LogLevel ERROR")
        open(f"{tmp}/sshd.conf", "w").write(conf)
        os.makedirs("/run/sshd", exist_ok=True)
        port = free_port()
        sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{tmp}/sshd.conf", "-p", str(port)],
                                stderr=open(f"{tmp}/sshd.log", "w"))
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)

        home = os.path.join(tmp, "home")
        os.makedirs(f"{home}/.ssh")
        os.makedirs(f"{home}/.config/hadeploy")
        shutil.copy(CLIENT_KEY, f"{home}/.ssh/id_ed25519")
        os.chmod(f"{home}/.ssh/id_ed25519", 0o600)
        with open(f"{home}/.config/hadeploy/known_hosts", "w") as known:
            for kind in ("ed25519", "rsa"):
                parts = open(f"{keys}/modern_{kind}_host.pub").read().split()
                known.write(f"[127.0.0.1]:{port} {parts[0]} {parts[1]}\n")
        shutil.copy(f"{home}/.config/hadeploy/known_hosts", f"{home}/.ssh/known_hosts")

        tools = os.path.join(tmp, "tools")
        os.makedirs(tools)
        shutil.copy(f"{FIXTURES}/xcodebuild-standin.py", f"{tools}/xcodebuild")
        shutil.copy(f"{FIXTURES}/xcodegen-standin.sh", f"{tools}/xcodegen")
        for tool in ("xcodebuild", "xcodegen"):
            os.chmod(f"{tools}/{tool}", 0o755)

        app = os.path.join(tmp, "benchapp")
        os.makedirs(f"{app}/Sources")
        os.makedirs(f"{app}/Resources")
        for i in range(1500):
            with open(f"{app}/Sources/File{i}.swift", "w") as f:
                f.write((f"let value{i} = \"{i}\"  // padding to a realistic size\n") * 150)
        with open(f"{app}/Resources/asset.bin", "wb") as f:
            f.write(os.urandom(20_000_000))
        address = f"ssh://{USER}@127.0.0.1:{port}"
        open(f"{app}/devices.yaml", "w").write(
            f"build_host: {address}\n"
            "flavours:\n  modern: {archs: [arm64], deployment_target: \"15.0\", sdk: iphoneos}\n"
            "devices:\n  mini4: {product_type: \"iPad5,1\", ios: \"15.8\", arch: arm64, flavour: modern, transport: usb}\n")
        open(f"{app}/.env", "w").write(
            f"HADEPLOY_REMOTE_XCODEBUILD={tools}/xcodebuild\nHADEPLOY_REMOTE_XCODEGEN={tools}/xcodegen\n")
        open(f"{app}/.gitignore", "w").write(".env\n.hadeploy/\nHADashboard.xcodeproj/\nstandin.log\nGenerated/\n")
        git_env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b",
                       GIT_COMMITTER_EMAIL="b@x", GIT_CONFIG_GLOBAL="/dev/null")
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "app"], ["tag", "v1.0.0"]):
            run(["git", "-C", app] + args, env=git_env)

        env = dict(os.environ, HOME=home)
        work = ".hadeploy-builds/bench-script"
        ssh = ["ssh", "-q", "-p", str(port), "-i", f"{home}/.ssh/id_ed25519", "-o",
               f"UserKnownHostsFile={home}/.ssh/known_hosts", "-o", "BatchMode=yes", f"{USER}@127.0.0.1"]
        xcodebuild = (f"{tools}/xcodebuild build -project HADashboard.xcodeproj -scheme HADashboard "
                      "-configuration Release -sdk iphoneos -destination generic/platform=iOS "
                      "-derivedDataPath .hadeploy/build/modern/DerivedData ARCHS=arm64 "
                      "MARKETING_VERSION=1.0.0 CURRENT_PROJECT_VERSION=1")

        def clean():
            for path in (f"{app}/.hadeploy", f"{tmp}/script-out"):
                shutil.rmtree(path, ignore_errors=True)
            remove_work_trees(user_home)

        def hadeploy():
            start = time.monotonic()
            result = subprocess.run([binary, "build", "all"], cwd=app, env=env, capture_output=True, text=True)
            elapsed = time.monotonic() - start
            if result.returncode != 0:
                sys.exit(f"hadeploy failed: {result.stderr}")
            return elapsed, result.stderr

        def script():
            start = time.monotonic()
            archive = subprocess.Popen(["git", "-C", app, "archive", "--format=tar", "HEAD"], stdout=subprocess.PIPE)
            run(ssh + [f"rm -rf {work} && mkdir -p {work} && tar -x -C {work}"], stdin=archive.stdout)
            archive.wait()
            run(ssh + [f"cd {work} && {tools}/xcodegen generate --spec Generated/project.yml --project-root . "
                       f">/dev/null && {xcodebuild} >/dev/null"])
            out = f"{tmp}/script-out/Payload"
            os.makedirs(out)
            fetch = subprocess.Popen(ssh + [f"cd {work}/.hadeploy/build/modern/DerivedData/Build/Products/"
                                            "Release-iphoneos && tar -cf - HADashboard.app"], stdout=subprocess.PIPE)
            run(["tar", "-x", "-C", out], stdin=fetch.stdout)
            fetch.wait()
            run(["python3", "-m", "zipfile", "-c", f"{tmp}/script-out/HADashboard.ipa", out])
            return time.monotonic() - start

        cold, peer, edited, unchanged = [], [], [], []
        for round_number in range(ROUNDS):
            clean()
            cold.append(hadeploy()[0])
            with open(f"{app}/Sources/File7.swift", "a") as f:
                f.write(f"let edit{round_number} = 1\n")
            edited.append(hadeploy()[0])
            seconds, log = hadeploy()
            assert "up to date" in log, log
            unchanged.append(seconds)
            clean()
            peer.append(script())

        def fmt(values):
            return f"median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"

        print(f"machine: {os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}; rounds: {ROUNDS}")
        print(f"repository: 1,500 Swift files (12 MB) + 20 MB asset; hadeploy debug build")
        print(f"hadeploy build, cold (fresh work dir there):   {fmt(cold)}")
        print(f"shell-script peer, same work:                  {fmt(peer)}")
        print(f"hadeploy build after a one-file edit:          {fmt(edited)}")
        print(f"hadeploy build, nothing changed (cache):       {fmt(unchanged)}")
    finally:
        if sshd:
            sshd.terminate()
            sshd.wait()
        remove_work_trees(user_home)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

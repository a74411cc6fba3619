#!/usr/bin/env python3
"""Start-up of `hadeploy version` and `hadeploy plan all` next to the git commands the old scripts ran
and the bare binary's start (`hadeploy --version`), side by side, alternating, median of 40.

    scripts/bench-startup.py NEW_BINARY [OLD_BINARY]

A synthetic repository: 61 commits, `v1.2.0` 31 commits back, the committed devices.yaml. With
strace installed, also counts the git processes and threads each command starts.
"""
import os, shutil, subprocess, sys, tempfile, time

binaries = [("new", sys.argv[1])] + ([("old", sys.argv[2])] if len(sys.argv) > 2 else [])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
work = tempfile.mkdtemp(prefix="hadeploy-startup-")
env = {"PATH": "/usr/bin:/bin", "HOME": work, "LC_ALL": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
git = lambda *a: subprocess.run(["git", *a], cwd=work, env=env, check=True, capture_output=True)
git("init", "-q")
shutil.copy(os.path.join(root, "devices.yaml"), work)
git("add", "-A"); git("commit", "-qm", "init")
for i in range(1, 61):
    open(os.path.join(work, "f"), "w").write(str(i))
    git("add", "f"); git("commit", "-qm", f"c{i}")
    if i == 30: git("tag", "v1.2.0")

commands = {f"bare start (--version), {n}": [b, "--version"] for n, b in binaries}
commands.update({f"version, {n}": [b, "version"] for n, b in binaries})
commands.update({f"plan all, {n}": [b, "plan", "all"] for n, b in binaries})
commands["old scripts' git describe + rev-list"] = [
    "sh", "-c", "git describe --tags --match 'v*' --abbrev=0 && git rev-list --count HEAD"]
samples = {name: [] for name in commands}
for _ in range(40):
    for name, command in commands.items():
        start = time.monotonic()
        subprocess.run(command, cwd=work, env=env, capture_output=True)
        samples[name].append((time.monotonic() - start) * 1000)
for name, values in samples.items():
    values.sort()
    print(f"{name:40s} median {values[len(values) // 2]:6.1f} ms")
if shutil.which("strace"):
    for name, command in commands.items():
        if command[0] == "sh": continue
        trace = os.path.join(work, "trace")
        subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve,clone,clone3", "-o", trace, *command],
                       cwd=work, env=env, capture_output=True)
        lines = open(trace).read().splitlines()
        gits = sum(1 for l in lines if "execve(\"/usr/bin/git\"" in l)
        threads = sum(1 for l in lines if "CLONE_THREAD" in l)
        print(f"{name:40s} git processes {gits}, threads started {threads}")
shutil.rmtree(work, ignore_errors=True)

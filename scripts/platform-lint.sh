#!/usr/bin/env bash
# Platform code in one place per target: a spelling that compiles or works on only one of Linux
# (Glibc) and macOS (Darwin) — `Glibc.x`, `SOCK_STREAM.rawValue`, /proc, namespaces, epoll… — lives in
# the target's own platform file (listed below, each with `#if canImport(Glibc) … #else … #endif` or
# `#if os(Linux)` branches), and everywhere else the target calls that file. An `import Glibc` is
# allowed in any file, but only inside `#if canImport(Glibc)`.
# Why: on Debian, Foundation re-exports Glibc, so a Linux-only spelling builds there and fails only
# on a Mac, which CI sees last.
# Lists every offending line (file:line: the construct) and fails when there is one.
#
#   scripts/platform-lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# One file per target that may hold platform spellings.
allowed=(
    Sources/HADeployCore/SystemIO.swift
    Sources/MobileDevice/PlatformCalls.swift
    Sources/SSHTransport/PosixCalls.swift
    Sources/VirtualDevice/PlatformCalls.swift
    Tests/TestSupport/PlatformCalls.swift
)

# Files not converted yet, each with why: each must still need it (a converted file left here fails
# too), and the list only shrinks.
pending=(
    # The jailbroken twin's tests: they read /proc of the twin's processes and run shell in its
    # Linux namespaces; SSHTransportTests needs the Debian sshd/dropbear peers and runs on Linux only.
    Tests/SSHTransportTests/JailbreakTwin.swift
    Tests/SSHTransportTests/JailbreakTwinSafetyTests.swift
)

python3 - "${allowed[@]}" -- "${pending[@]}" <<'PY'
import os, re, sys

args = sys.argv[1:]
split = args.index("--")
allowed, pending = set(args[:split]), set(args[split + 1:])

# (pattern, what it is): Linux-only (or Darwin-only) spellings.
CONSTRUCTS = [
    (r"\bGlibc\.", "a Glibc-qualified call (Darwin has no Glibc module)"),
    (r"\bDarwin\.", "a Darwin-qualified call (Linux has no Darwin module)"),
    (r"\b(SOCK|RLIMIT|RUSAGE)_[A-Z_]+\.rawValue", "a Glibc C-enum constant (an Int32 macro on Darwin)"),
    (r"\bSOCK_(CLOEXEC|NONBLOCK)\b", "a Linux-only socket flag"),
    (r"/proc/", "/proc (Linux only)"),
    (r"\bunshare\b", "unshare (Linux namespaces)"),
    (r"\bprctl\b|\bPR_SET_", "prctl (Linux only)"),
    (r"\bO_PATH\b|\bO_DIRECT\b|\bAT_EMPTY_PATH\b|\bF_OFD_|\brenameat2\b", "a Linux-only file flag or call"),
    (r"\bepoll_|\binotify_", "epoll/inotify (Linux only)"),
    (r"\bSO_PEERCRED\b", "SO_PEERCRED (Linux only; LOCAL_PEERCRED on Darwin)"),
    (r"\baccept4\b|\bpipe2\b|\bdup3\b|\bgetrandom\b|\bsendfile\b", "a Linux-only system call"),
    (r"\bSO_NOSIGPIPE\b|\bF_GETPATH\b", "a Darwin-only constant"),
]
compiled = [(re.compile(p), what) for p, what in CONSTRUCTS]
IF_GLIBC = re.compile(r"^\s*#(if|elseif)\s+canImport\(Glibc\)")
IF_ANY = re.compile(r"^\s*#if\b")
ELSE = re.compile(r"^\s*#(else|elseif)\b")
ENDIF = re.compile(r"^\s*#endif\b")
IMPORT_GLIBC = re.compile(r"^\s*(@\w+\s+)*import\s+Glibc\b")

findings = []
needed = set()
for top in ("Sources", "Tests"):
    for root, _, files in os.walk(top):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(root, name)
            stack = []  # per open #if: whether its current branch is canImport(Glibc)
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if IF_ANY.match(line):
                    stack.append(bool(IF_GLIBC.match(line)))
                    continue
                if ELSE.match(line) and stack:
                    stack[-1] = bool(IF_GLIBC.match(line))
                    continue
                if ENDIF.match(line) and stack:
                    stack.pop()
                    continue
                if IMPORT_GLIBC.match(line) and not any(stack):
                    findings.append((path, number, "import Glibc outside #if canImport(Glibc)"))
                code = line.split("//", 1)[0] if not re.search(r'"[^"]*//', line) else line
                if code.lstrip().startswith("//") or line.lstrip().startswith("///"):
                    continue
                # A command's name in a message ("install util-linux for unshare") is text, not a call.
                bare = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
                for pattern, what in compiled:
                    if pattern.search(bare if what.startswith("unshare") else code):
                        if path in pending:
                            needed.add(path)
                        elif path not in allowed:
                            findings.append((path, number, what))
                        break

status = 0
if findings:
    print("platform spellings outside the target's platform file (scripts/platform-lint.sh lists them):", file=sys.stderr)
    for path, number, what in findings:
        print(f"{path}:{number}: {what}", file=sys.stderr)
    status = 1
for path in sorted(pending - needed):
    print(f"{path}: no longer needs to be listed as pending in scripts/platform-lint.sh", file=sys.stderr)
    status = 1
for path in sorted(allowed):
    if not os.path.isfile(path):
        print(f"{path}: listed as a platform file in scripts/platform-lint.sh but missing", file=sys.stderr)
        status = 1
sys.exit(status)
PY

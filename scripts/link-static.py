#!/usr/bin/env python3
"""The shipped `hadeploy`: the release build's own objects, linked again with the Swift runtime and
Foundation inside.

`make test` compiles the package once, in release mode with testable imports (`-enable-testing`), so
the suites run against the very objects that ship. SwiftPM cannot link a test bundle against the
static runtime (the toolchain has no static Testing/XCTest), and `--static-swift-stdlib` would make
it compile every module a second time. So the release build is dynamic, and this script repeats
SwiftPM's own link command for the `hadeploy` product (read from the build manifest it wrote) with
the static runtime: `-static-stdlib`, the static Foundation archives that a static compile would
have named in its autolink entries, and `-s` (no symbol table, as before). The object files are the
ones the suites ran; only the runtime they are linked with differs, and the suites that run the
binary run this one (from the `make dist` archive).

    scripts/link-static.py SCRATCH OUTPUT     e.g. .build-release .build-release/release/hadeploy-static
"""
import json
import os
import platform
import re
import shutil
import subprocess
import sys

# What `import Foundation` autolinks when compiled against lib/swift_static (Swift 6.x on Linux);
# the dynamic compile's entries name libFoundation only. FoundationNetworking and FoundationXML are
# not imported by hadeploy (scripts/check-imports.sh would show them) and stay out.
STATIC_FOUNDATION = [
    "-lFoundation", "-lFoundationEssentials", "-lFoundationInternationalization",
    "-l_FoundationCollections", "-l_FoundationCShims", "-lCoreFoundation", "-l_FoundationICU",
    "-lswiftSynchronization", "-lswiftDispatch", "-ldispatch", "-lBlocksRuntime",
]


def fail(message):
    print(f"link-static: {message}", file=sys.stderr)
    sys.exit(1)


def link_command(scratch):
    """SwiftPM's link command for the hadeploy executable, from the release manifest."""
    manifest = os.path.join(scratch, "release.yaml")
    try:
        text = open(manifest, encoding="utf-8").read()
    except OSError as error:
        fail(f"{manifest}: {error.strerror}; run `swift build -c release --scratch-path {scratch}` first")
    for block in text.split("\n  \""):
        if not re.search(r'outputs: \["[^"]*/release/hadeploy"\]', block):
            continue
        match = re.search(r"^\s*args: (\[.*\])\s*$", block, re.MULTILINE)
        if match:
            return json.loads(match.group(1))
    fail(f"{manifest} has no link command for the hadeploy product (built with --product hadeploy?)")


def main():
    if len(sys.argv) != 3:
        fail("usage: link-static.py SCRATCH OUTPUT")
    scratch, output = sys.argv[1], os.path.abspath(sys.argv[2])
    if platform.system() != "Linux":
        # The Swift runtime ships with macOS: the dynamic binary is the one to install.
        shutil.copy2(os.path.join(scratch, "release", "hadeploy"), output)
        return
    dynamic = os.path.join(scratch, "release", "hadeploy")
    if os.path.exists(output) and os.path.getmtime(output) >= os.path.getmtime(dynamic):
        return  # linked from these objects already (SwiftPM relinks the dynamic one on any change)
    args = link_command(scratch)
    out = args.index("-o")
    args[out + 1] = output
    # No search path next to the binary: nothing of the toolchain is looked up at run time.
    while "-rpath=$ORIGIN" in args:
        i = args.index("-rpath=$ORIGIN")
        del args[i - 1 : i + 1]
    if "-static-stdlib" not in args:
        args.insert(out, "-static-stdlib")
    args += STATIC_FOUNDATION
    if "-s" not in args:
        args += ["-Xlinker", "-s"]
    os.makedirs(os.path.dirname(output), exist_ok=True)
    partial = output + ".partial"
    args[args.index(output)] = partial
    result = subprocess.run(args, stderr=subprocess.PIPE, text=True)
    # ld warns that static glibc's getpwnam & co. need the shared glibc at run time; nothing else.
    noise = re.compile(r"warning: (Using '\w+' in statically linked|the use of `mktemp' is dangerous)")
    for line in result.stderr.splitlines():
        if not noise.search(line):
            print(line, file=sys.stderr)
    if result.returncode != 0:
        fail(f"the static link failed (exit {result.returncode})")
    os.replace(partial, output)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Package.swift declares every import: each `import X` at the top of a target's Swift files names
# one of that target's declared dependencies (a target of this package or a product), or a module
# of the toolchain (Foundation, Testing, Glibc, …). A C module (a `.systemLibrary` target) is
# imported only by the target that wraps it, and by that wrapper's own test target. The CLI, the
# plan's values and the reporters depend on no edge target (devices, SSH, the emulator).
#
#   scripts/check-imports.sh      (SWIFT=path/to/swift to use another toolchain)
#
# Exit status 1 and one line per finding (file:line: what is wrong) when something is undeclared.
set -euo pipefail
cd "$(dirname "$0")/.."

manifest=$(mktemp)
trap 'rm -f "$manifest"' EXIT
"${SWIFT:-swift}" package dump-package >"$manifest"

python3 - "$manifest" <<'PY'
import json, os, re, sys

TOOLCHAIN = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationXML", "Dispatch",
    "Glibc", "Musl", "Darwin", "os", "Testing", "XCTest", "Synchronization", "_Concurrency",
}
# The C module of a dependency reached through it, with why the wrapper is this target.
EXCEPTIONS = {
    # libyaml's event parser (through Yams, whose product does not expose it): the alias guard
    # must see anchors and aliases before Yams expands them.
    ("DeviceSpec", "CYaml"),
}

# Targets that must stay off the edges (devices, SSH, the emulator, the MQTT broker): the thin CLI reaches them
# through the Kit, and the plan's values do no I/O.
EDGES = {"MobileDevice", "SSHTransport", "VirtualDevice", "HADeployDrivers", "HADeployBuild", "MQTT"}
KEPT_OFF_EDGES = {"HADeployCLI", "DeployModel", "HADeployReporting"}

package = json.load(open(sys.argv[1]))
targets = package["targets"]
c_modules = {t["name"] for t in targets if t["type"] == "system"}
wrappers = {}  # C module -> targets that declare it (outside tests)
findings = []


def declared(target):
    names = set()
    for dep in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dep:
                names.add(dep[kind][0])
    return names


for t in targets:
    if t["name"] in KEPT_OFF_EDGES:
        for name in sorted(declared(t) & EDGES):
            findings.append(f"Package.swift: {t['name']} depends on the edge target {name}")
    if t["type"] != "test":
        for name in declared(t) & c_modules:
            wrappers.setdefault(name, set()).add(t["name"])

top_line = re.compile(r"^\s*(//.*|#(if|elseif|else|endif).*|)$")
import_line = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?(\w+)"
)

for t in targets:
    if t["type"] == "system":
        continue
    default_root = "Tests" if t["type"] == "test" else "Sources"
    root = t.get("path") or os.path.join(default_root, t["name"])
    allowed = declared(t) | TOOLCHAIN
    for folder, _, files in os.walk(root):
        for file in sorted(files):
            if not file.endswith(".swift"):
                continue
            path = os.path.join(folder, file)
            with open(path, encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    found = import_line.match(line)
                    if not found:
                        if top_line.match(line):
                            continue
                        break  # imports come first; the rest (string literals too) is not read
                    module = found.group(1)
                    where = f"{path}:{number}"
                    if module not in allowed and (t["name"], module) not in EXCEPTIONS:
                        findings.append(f"{where}: imports {module}, which target {t['name']} does not declare")
                    if module in c_modules and (t["name"], module) not in EXCEPTIONS:
                        owners = wrappers.get(module, set())
                        tested = {w + "Tests" for w in owners}
                        if t["name"] not in owners | tested or len(owners) != 1:
                            findings.append(
                                f"{where}: imports the C module {module}; only its wrapper "
                                f"({', '.join(sorted(owners)) or 'none'}) may")

for name, owners in sorted(wrappers.items()):
    if len(owners) > 1:
        findings.append(f"Package.swift: the C module {name} is declared by {', '.join(sorted(owners))}; one wrapper only")

for line in findings:
    print(line)
if findings:
    print(f"check-imports: {len(findings)} undeclared or misplaced import(s)", file=sys.stderr)
    sys.exit(1)
print("check-imports: every import is declared")
PY

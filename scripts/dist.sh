#!/bin/bash
# Packs a release build (Swift runtime and Foundation linked statically) into
# dist/hadeploy-<version>-linux-<arch>.tar.gz: bin/, share/ (completions, man page), DEPENDS.
# Refuses a binary that still needs a library of the Swift toolchain.
#   scripts/dist.sh <hadeploy binary> <output directory>
set -euo pipefail
bin="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
if ldd "$bin" | grep -Ei 'libswift|libFoundation|libdispatch|libBlocksRuntime|/swift/'; then
  echo "error: $bin links the Swift toolchain's libraries above dynamically; build it with --static-swift-stdlib" >&2
  exit 1
fi
version="$("$bin" --version)"
name="hadeploy-$version-linux-$(uname -m)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
"$here/install.sh" "$bin" "$stage/$name" > /dev/null
# The Debian packages of the shared libraries it still loads (beyond libc and the compiler runtime).
cat > "$stage/$name/DEPENDS" <<'DEPS'
# Debian/Ubuntu runtime libraries hadeploy needs (apt-get install ...):
libimobiledevice6 libusbmuxd6 libplist3 libssh-4 libssl3 libpng16-16 libtiff6 libstdc++6 zlib1g
DEPS
mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
# Its checksum, as `sha256sum --check` reads it: the workflow templates pin it (HADEPLOY_SHA256).
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "$out/$name.tar.gz"

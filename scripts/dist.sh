#!/bin/bash
# Packs a release build into dist/hadeploy-<version>-<os>-<arch>.tar.gz (os: linux or macos): bin/,
# share/ (completions, man page), DEPENDS (the packages of the libraries it loads).
# Linux: the Swift runtime and Foundation are linked statically, and a binary that still needs a
# library of the Swift toolchain is refused. macOS: the Swift runtime is the system's
# (/usr/lib/swift), and the C libraries are Homebrew's, loaded from Homebrew's prefix: the archive
# runs on a Mac of the same architecture with those formulae installed (DEPENDS names them).
#   scripts/dist.sh <hadeploy binary> <output directory>
set -euo pipefail
bin="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
case "$(uname -s)" in
  Darwin)
    os=macos
    # Every Swift library must be the system's: one from a toolchain or Xcode (or @rpath) would not
    # be on another Mac.
    libraries="$(otool -L "$bin")" || { echo "error: otool -L $bin failed (Xcode's command line tools?)" >&2; exit 1; }
    if printf '%s\n' "$libraries" | tail -n +2 | grep -E 'libswift|Foundation|libdispatch' | grep -Ev '^[[:space:]]*/(usr/lib/swift|usr/lib|System/Library)/'; then
      echo "error: $bin loads the Swift libraries above from outside the system; build it with Xcode's toolchain" >&2
      exit 1
    fi
    ;;
  *)
    os=linux
    command -v ldd > /dev/null || { echo "error: ldd is missing: cannot check $bin for toolchain libraries" >&2; exit 1; }
    libraries="$(ldd "$bin")" || { echo "error: ldd $bin failed" >&2; exit 1; }
    if printf '%s\n' "$libraries" | grep -Ei 'libswift|libFoundation|libdispatch|libBlocksRuntime|/swift/'; then
      echo "error: $bin links the Swift toolchain's libraries above dynamically; build it with --static-swift-stdlib" >&2
      exit 1
    fi
    ;;
esac
version="$("$bin" --version)"
name="hadeploy-$version-$os-$(uname -m)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
"$here/install.sh" "$bin" "$stage/$name" > /dev/null
# The packages of the shared libraries it still loads (beyond libc and the compiler runtime).
if [ "$os" = macos ]; then
  cat > "$stage/$name/DEPENDS" <<'DEPS'
# Homebrew formulae hadeploy loads at run time (brew install ...):
libimobiledevice libplist libusbmuxd libssh openssl@3 libpng libtiff
DEPS
else
  cat > "$stage/$name/DEPENDS" <<'DEPS'
# Debian/Ubuntu runtime libraries hadeploy needs (apt-get install ...):
libimobiledevice6 libusbmuxd6 libplist3 libssh-4 libssl3 libpng16-16 libtiff6 libstdc++6 zlib1g
DEPS
fi
mkdir -p "$out"
# Owned by root in the archive, as release archives are: extracted as root, nothing in it belongs to
# the account that built it (hadeploy refuses a twin script another user owns).
if tar --version 2>/dev/null | grep -q GNU; then owner=(--owner=0 --group=0 --numeric-owner); else owner=(--uid 0 --gid 0); fi
tar -C "$stage" "${owner[@]}" -czf "$out/$name.tar.gz" "$name"
# Its checksum, as `sha256sum --check` (and `shasum -a 256 -c`) reads it: the workflow templates pin
# it (HADEPLOY_SHA256). macOS has no sha256sum: its shasum writes the same line.
if command -v sha256sum > /dev/null; then
  (cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
else
  (cd "$out" && shasum -a 256 "$name.tar.gz" > "$name.tar.gz.sha256")
fi
echo "$out/$name.tar.gz"

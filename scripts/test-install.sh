#!/bin/bash
# Checks what `make install` and `make dist` deliver, with the release build made once:
#  - make install PREFIX=<tmp>: bin/hadeploy --help runs with the toolchain off PATH; bash, zsh and
#    fish completions and the man page are installed and usable;
#  - make dist: the archive's binary lists no toolchain library under ldd and runs with the toolchain
#    out of reach (not on PATH or LD_LIBRARY_PATH; as root, its directory is also hidden by a tmpfs
#    in a private mount namespace).
set -euo pipefail
cd "$(dirname "$0")/.."
make="${MAKE:-make}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
toolchain="$(cd "$(dirname "$(readlink -f "$(command -v swift)")")/.." && pwd)"
clean=(env -i "HOME=$tmp" "PATH=/usr/bin:/bin" "LC_ALL=C.UTF-8")
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }

"$make" -s --no-print-directory install PREFIX="$tmp/x" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "make install"; }
"${clean[@]}" "$tmp/x/bin/hadeploy" --help > "$tmp/help" 2>&1 || { cat "$tmp/help"; fail "installed --help"; }
grep -q "^USAGE: hadeploy" "$tmp/help" || fail "installed --help prints no usage"
grep -q "  init " "$tmp/help" || fail "--help does not list init"

bash_completion="$tmp/x/share/bash-completion/completions/hadeploy"
"${clean[@]}" bash -c "source '$bash_completion' && complete -p hadeploy" > /dev/null \
  || fail "the bash completion does not register for hadeploy"
grep -q "^#compdef hadeploy" "$tmp/x/share/zsh/site-functions/_hadeploy" || fail "zsh completion"
grep -q "^complete -c 'hadeploy'" "$tmp/x/share/fish/vendor_completions.d/hadeploy.fish" || fail "fish completion"
grep -q "\-fa 'init'" "$tmp/x/share/fish/vendor_completions.d/hadeploy.fish" || fail "fish completion lacks init"

page="$tmp/x/share/man/man1/hadeploy.1"
head -1 "$page" | grep -q '^\.TH HADEPLOY 1' || fail "man page header"
MANWIDTH=100 "${clean[@]}" man -l "$page" > "$tmp/man.txt" 2> "$tmp/man.err" || fail "man -l"
grep -q 'hadeploy init' "$tmp/man.txt" || fail "the man page has no init section"
grep -q 'hadeploy plan all --json' "$tmp/man.txt" || fail "the man page lacks the examples"
if grep -q 'warning' "$tmp/man.err"; then cat "$tmp/man.err"; fail "roff warnings"; fi

# The jailbroken twin hadeploy runs with --virtual is carried by the installation, owner-writable only
# (hadeploy refuses a twin script other users could change; it never looks in its build folder).
for f in twin.sh app.py springboard.py; do
  item="$tmp/x/share/hadeploy/jailbreak-twin/$f"
  [ -f "$item" ] || fail "make install did not install share/hadeploy/jailbreak-twin/$f"
  case "$(stat -c %a "$item")" in *[2367]?|*[2367]) fail "$item is writable by group or others" ;; esac
done

archive="$("$make" -s --no-print-directory dist | tail -1)"
[ -f "$archive" ] || fail "make dist printed '$archive', not an archive"
(cd "$(dirname "$archive")" && sha256sum --check --strict --quiet "$(basename "$archive").sha256") \
  || fail "$archive.sha256 does not match the archive"
mkdir "$tmp/dist"
tar -C "$tmp/dist" -xzf "$archive"
bin="$(echo "$tmp"/dist/hadeploy-*/bin/hadeploy)"
[ -x "$bin" ] || fail "no bin/hadeploy in $archive"
[ -f "$tmp"/dist/hadeploy-*/share/hadeploy/jailbreak-twin/twin.sh ] || fail "$archive carries no jailbreak twin"
if ldd "$bin" | grep -E "$toolchain|libswift|libFoundation|libdispatch|libBlocksRuntime"; then
  fail "the dist binary needs the Swift toolchain's libraries (above)"
fi
"${clean[@]}" LD_LIBRARY_PATH= "$bin" --help > /dev/null || fail "dist --help without the toolchain"
"${clean[@]}" "$bin" --version > /dev/null || fail "dist --version"
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
  unshare -m --propagation private sh -c \
    "mount -t tmpfs none '$toolchain' && env -i HOME='$tmp' PATH=/usr/bin:/bin '$bin' --help > /dev/null" \
    || fail "dist --help with $toolchain hidden"
  echo "test-install: the dist binary ran with $toolchain hidden"
fi
echo "test-install: ok ($(basename "$archive"), $(du -h "$bin" | cut -f1) binary)"

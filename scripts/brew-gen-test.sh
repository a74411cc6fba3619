#!/usr/bin/env bash
# make test-brew-gen: the C-facing suites (MobileDeviceTests, SSHTransportTests) built and run against
# the second generation of the C libraries, the one Homebrew gives macOS users (libplist 2.7,
# libimobiledevice 1.4, libusbmuxd 2.1, libssh 0.11), vendored in compat/brew-gen (compat/README.md).
# `make test` covers Debian 12's generation; this catches what only the new one shows: API changes
# (the hadeploy_* shims in Sources/CPlist and Sources/CIMobileDevice) and libssh's 32 KiB SFTP writes.
#
# Builds every test target (SwiftPM links them into one test binary) in .build-brew-gen with an rpath
# to compat/brew-gen/lib, checks with ldd that the test binary and hadeploy load the brew-gen
# libraries and none of Debian's, then runs each suite in its own process, as `make test` does.
# Fails, never skips, when compat/brew-gen or the SSH peers' setup is missing.
#
#   scripts/brew-gen-test.sh            build, check, run both suites
#   SUITES="SSHTransportTests" scripts/brew-gen-test.sh
#   BREW_GEN_BUILD_ONLY=1 scripts/brew-gen-test.sh    the build and its checks only (`make test` runs
#                                       it in the background, at idle priority, while the suites run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SWIFT=${SWIFT:-swift}
BG="$root/compat/brew-gen"
scratch="$root/.build-brew-gen"
read -r -a suites <<<"${SUITES:-MobileDeviceTests SSHTransportTests}"
# MobileDeviceTests and SSHSessionTests only (`make test`): the package reduced to them and what they
# depend on (Package.swift, HADEPLOY_PACKAGE_SCOPE): every C-facing target is compiled against
# brew-gen, without the CLI, the Kit and the other suites. With SSHTransportTests: the whole package.
libs_checked="libplist-2.0.so.4 libimobiledevice-1.0.so.6 libusbmuxd-2.0.so.7 libssh.so.4"
whole=no
for suite in "${suites[@]}"; do
    case "$suite" in MobileDeviceTests | SSHSessionTests) ;; *) whole=yes ;; esac
done
if [ "$whole" = no ]; then
    export HADEPLOY_PACKAGE_SCOPE=c-facing
else
    unset HADEPLOY_PACKAGE_SCOPE
fi

die() {
    echo "brew-gen-test: $*" >&2
    exit 1
}

# 1. The prefix is there and is the second generation (SwiftPM only warns about a .pc it cannot use
#    and takes Debian's, so the versions are checked here first).
for file in lib/libplist-2.0.so.4 lib/libimobiledevice-1.0.so.6 lib/libusbmuxd-2.0.so.7 lib/libssh.so.4 \
    lib/pkgconfig/libplist-2.0.pc lib/pkgconfig/libimobiledevice-1.0.pc lib/pkgconfig/libusbmuxd-2.0.pc \
    lib/pkgconfig/libssh.pc include/plist/plist.h; do
    [ -e "$BG/$file" ] || die "$BG/$file is missing: compat/brew-gen must be complete (compat/README.md)"
done
export PKG_CONFIG_PATH="$BG/lib/pkgconfig"
# SwiftPM reads .pc files itself and, unlike pkg-config, keeps `-L/usr/lib/<triple>` from Debian's
# (openssl, zlib, libtiff, libpng, …). Those come first on the link line, where -lplist-2.0 and
# -lusbmuxd-2.0 then find Debian's libraries (seen: the test binary needed libplist-2.0.so.3 and
# libusbmuxd-2.0.so.6 next to brew-gen's). So the system's .pc files are read from copies without that
# default directory, after brew-gen's.
system_pc="$scratch/system-pkgconfig"
rm -rf "$system_pc"
mkdir -p "$system_pc"
for dir in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
    for pc in "$dir"/*.pc; do
        [ -e "$pc" ] && [ ! -e "$BG/lib/pkgconfig/${pc##*/}" ] && [ ! -e "$system_pc/${pc##*/}" ] || continue
        libdir=$(PKG_CONFIG_PATH="$dir" pkg-config --variable libdir "$(basename "$pc" .pc)" 2>/dev/null || true)
        case "$libdir" in
            /usr/lib | /usr/lib/*-linux-gnu | /lib/*-linux-gnu | /usr/lib64)
                # Twice: adjacent flags share the blank between them.
                strip='s#(^|[[:space:]])-L(\$\{libdir\}|\$\{sharedlibdir\}|'"$libdir"')/?([[:space:]]|$)#\1\3#g'
                sed -E -e "$strip" -e "$strip" "$pc" >"$system_pc/${pc##*/}"
                ;;
            *) cp "$pc" "$system_pc/" ;;
        esac
    done
done
export PKG_CONFIG_PATH="$BG/lib/pkgconfig:$system_pc"
for want in "libplist-2.0 2.3" "libimobiledevice-1.0 1.4" "libusbmuxd-2.0 2.1" "libssh 0.11"; do
    read -r name version <<<"$want"
    pkg-config --atleast-version="$version" "$name" ||
        die "$name from $PKG_CONFIG_PATH is $(pkg-config --modversion "$name" 2>&1), not >= $version"
done
echo "brew-gen: libplist $(pkg-config --modversion libplist-2.0), libimobiledevice" \
    "$(pkg-config --modversion libimobiledevice-1.0), libusbmuxd $(pkg-config --modversion libusbmuxd-2.0)," \
    "libssh $(pkg-config --modversion libssh)"

# The SSH servers and the test login user the SSH suites need (idempotent; as make peers).
case " ${suites[*]} " in *" SSHTransportTests "* | *" SSHSessionTests "*) scripts/ssh-peers.sh ;; esac

# 2. Build, with its own scratch path (the Debian build's cache must not be reused).
link=(-Xlinker -rpath -Xlinker "$BG/lib")
mkdir -p "$scratch"
log="$scratch/brew-gen-build.log"
start=$(date +%s)
set +e
# The index store stays on: SwiftPM finds the tests on Linux by reading it.
"$SWIFT" build --scratch-path "$scratch" --build-tests "${link[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || die "the build against brew-gen failed (log: $log)"
echo "=== build against brew-gen: $(($(date +%s) - start)) s"
# SwiftPM falls back to Debian's .pc files with only a warning (a relative PKG_CONFIG_PATH, a missing
# Requires): any pkg-config warning is a failure here.
if grep -nE "invalid absolute path|you may be able to install|pkg-config" "$log"; then
    die "SwiftPM did not take every library from $BG/lib/pkgconfig (above)"
fi
# No warnings in the project's own files with the new headers either (deprecations go through the
# shims). Only what this build compiled is seen: a fresh clone compiles everything.
if grep -nE "^$root/(Sources|Tests|Benchmarks)/[^:]+:[0-9]+:[0-9]+: warning:" "$log"; then
    die "warnings against brew-gen (above)"
fi
if [ -n "${BREW_GEN_BUILD_ONLY:-}" ]; then
    echo "brew-gen-test: built"
    exit 0
fi

# 3. The binaries load brew-gen's libraries, not Debian's (same SONAMEs for libimobiledevice and
#    libssh: a missing rpath would go unnoticed).
check_loads() {
    local binary=$1 out name path
    out=$(ldd "$binary") || die "ldd $binary failed"
    for name in $libs_checked; do
        path=$(awk -v n="$name" '$1 == n && $2 == "=>" { print $3 }' <<<"$out")
        [ -n "$path" ] || die "$binary does not load $name:"$'\n'"$out"
        [ "$(readlink -f "$path")" = "$(readlink -f "$BG/lib/$name")" ] ||
            die "$binary loads $name from $path, not from $BG/lib"
        echo "  $name => $path"
    done
    for name in libplist-2.0.so.3 libusbmuxd-2.0.so.6; do
        if grep -q "$name" <<<"$out"; then die "$binary also loads Debian's $name:"$'\n'"$out"; fi
    done
}
shopt -s nullglob
bundles=("$scratch"/debug/*PackageTests.xctest)
[ "${#bundles[@]}" -eq 1 ] || die "expected one test binary in $scratch/debug, found: ${bundles[*]:-none}"
echo "${bundles[0]}:"
check_loads "${bundles[0]}"
# The suites that run the CLI run this one (HADEPLOY_DIST_ARCHIVE unset below).
if [ "${HADEPLOY_PACKAGE_SCOPE:-}" != c-facing ]; then
    echo "$scratch/debug/hadeploy:"
    check_loads "$scratch/debug/hadeploy"
fi

# 4. The suites, each in its own process; no LD_LIBRARY_PATH: the rpath is what is tested.
unset HADEPLOY_DIST_ARCHIVE LD_LIBRARY_PATH
failed=""
for suite in "${suites[@]}"; do
    start=$(date +%s)
    echo "=== $suite (brew-gen)"
    "$SWIFT" test --scratch-path "$scratch" --skip-build "${link[@]}" --filter "^$suite\\." ||
        failed="$failed $suite"
    echo "=== $suite (brew-gen): $(($(date +%s) - start)) s"
done
[ -z "$failed" ] || die "FAILED against brew-gen:$failed"
echo "brew-gen-test: ${suites[*]} passed against compat/brew-gen"

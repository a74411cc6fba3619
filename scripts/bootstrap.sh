#!/usr/bin/env bash
# Installs the system packages hadeploy builds against (no option), plus what `make demo` runs
# (--demo), or plus the real peers the tests use (--with-peers).
# Idempotent: does nothing when everything is already installed. Runs apt-get directly as root,
# through sudo otherwise.
set -euo pipefail

# Build: the C libraries the wrapper targets link (libssl-dev: OpenSSL 3's libcrypto for hashes and
# the twins' keys and certificates). Peers: the Debian libimobiledevice clients that judge the
# virtual devices, OpenSSH and dropbear servers, git, and the openssl CLI (it reads the twins'
# pairing certificates in the tests). Mosquitto and its clients: the MQTT broker `status --publish`
# is tested against (started by the tests on a loopback port, never the system service).
build_packages=(pkg-config libimobiledevice-dev libplist-dev libusbmuxd-dev libssh-dev libssl-dev libpng-dev
  libtiff-dev)
peer_packages=(libimobiledevice-utils ideviceinstaller openssh-server openssh-sftp-server openssh-client
  dropbear-bin git python3-venv openssl man-db util-linux mosquitto mosquitto-clients)
# Demo (`make demo`, --demo): what the demo itself runs beyond the build. The jailbroken iPad twin: its
# sshd and sftp-server, ssh-keygen (its keys), python3 (its springboard and app), openssl (the twin's
# SHA-256 tool: it has no sha256sum, like iOS 9), unshare/setpriv (util-linux: its namespaces).
# Home Assistant on loopback: python3-venv (scripts/ha-peer.sh makes the venv). git: the version.
# pymobiledevice3 for the iOS 17 twins: its pinned venv (scripts/pmd3-venv.sh, run by demo.sh --peers)
# needs only python3-venv, listed here.
demo_packages=(openssh-server openssh-sftp-server openssh-client python3 python3-venv openssl util-linux git)

# macOS (a build Mac, or simulators/devicectl): Homebrew has the same C libraries. --demo adds
# Python 3.11 (the Home Assistant venv the demo starts; pymobiledevice3's venv); the jailbroken
# twin's packages are not needed (it needs Linux namespaces and is shown as not available on a Mac).
# The test peers (--with-peers) are Debian packages: `make test` runs on Linux.
if [ "$(uname -s)" = "Darwin" ]; then
  if ! command -v brew >/dev/null 2>&1; then
    for prefix in /opt/homebrew /usr/local; do
      if [ -x "$prefix/bin/brew" ]; then
        # SwiftPM asks `brew` and `pkg-config` for the libraries' flags: both must be on PATH.
        echo "bootstrap: Homebrew is installed but not on PATH; run: eval \"\$($prefix/bin/brew shellenv)\"" >&2
        exit 1
      fi
    done
    echo "bootstrap: install Homebrew (https://brew.sh) first" >&2
    exit 1
  fi
  formulae=(pkg-config libimobiledevice libplist libusbmuxd libssh openssl@3 libpng libtiff)
  [ "${1:-}" = --demo ] && formulae+=(python@3.11)
  brew_missing=()
  for formula in "${formulae[@]}"; do
    brew list --formula "$formula" >/dev/null 2>&1 || brew_missing+=("$formula")
  done
  [ ${#brew_missing[@]} -eq 0 ] || brew install "${brew_missing[@]}"
  command -v pkg-config >/dev/null 2>&1 || {
    echo "bootstrap: pkg-config is installed but not on PATH: add \"$(brew --prefix)/bin\" (eval \"\$(brew shellenv)\")" >&2
    exit 1
  }
  # The toolchain: Swift 6.2 (Xcode 26) or later. The swift an `xcode-select`ed older Xcode gives
  # (13.2.1 for armv7 builds: Swift 5.5) stops at the manifest with an unclear error.
  swift_version="$("${SWIFT:-swift}" --version 2>/dev/null | sed -n 's/.*Swift version \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)"
  major="${swift_version%%.*}"
  minor="${swift_version#*.}"
  if [ -z "$swift_version" ] || [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -lt 2 ]; }; then
    echo "bootstrap: hadeploy needs Swift 6.2+ (Xcode 26 on macOS 15.6+); ${SWIFT:-swift} is ${swift_version:-missing}" \
      "(xcode-select -p: $(xcode-select -p 2>/dev/null || echo none))." >&2
    echo "  Run make with DEVELOPER_DIR=/Applications/Xcode.app/Contents/Developer (or XCODE_MODERN=/Applications/Xcode-26.app)," >&2
    echo "  or sudo xcode-select -s the Xcode 26 app." >&2
    exit 1
  fi
  exit 0
fi
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "bootstrap: not a Debian/Ubuntu system: install the development packages of libimobiledevice," >&2
  echo "  libplist, libusbmuxd, libssh, OpenSSL 3, libpng and libtiff (and pkg-config) with your package manager" >&2
  exit 1
fi

want=("${build_packages[@]}")
case "${1:-}" in
  --with-peers) want+=("${peer_packages[@]}") ;;
  --demo) want+=("${demo_packages[@]}") ;;
esac

missing=()
for package in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian openssh-server package starts a system sshd on port 22; tests and twins run their own.
case " ${missing[*]} " in
  *" openssh-server "*)
    echo "bootstrap: note: Debian's openssh-server also starts the system sshd on port 22;" \
      "hadeploy does not need it (sudo systemctl disable --now ssh turns it off)" >&2 ;;
esac

#!/bin/sh
# Installs the Debian libimobiledevice tools and the C libraries hadeploy links against
# (VirtualDevice tests drive the real tools and read the pairing certificates with the openssl CLI;
# ImageCodec needs libpng/libtiff). Idempotent.
set -eu

PACKAGES="libimobiledevice-utils ideviceinstaller libimobiledevice-dev libplist-dev libusbmuxd-dev \
libssh-dev libssl-dev openssl libpng-dev libtiff-dev pkg-config"

missing=""
for package in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $package"
    fi
done

if [ -z "$missing" ]; then
    echo "idevice-tools: all packages present"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "idevice-tools: need root or sudo to install:$missing" >&2
    exit 1
fi

echo "idevice-tools: installing$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing

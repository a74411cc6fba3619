#!/bin/sh
# Idempotent setup for the SSHTransport tests (real OpenSSH sshd, dropbear, sftp-server on loopback).
# Installs the servers, creates the unprivileged login user the tests use, and its client keys.
# Run as root, or as a user with sudo. Safe to run again.
set -eu
# An ordinary account's PATH on Debian has no /usr/sbin: chpasswd, useradd and sshd live there.
PATH="$PATH:/usr/sbin:/sbin"
export PATH

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

TEST_USER=hadeploy-ssh
STATE_DIR=/var/lib/hadeploy-ssh-test   # root-only: the client private keys the tests log in with

# Everything already in place: nothing to do, and no sudo (an ordinary user's `make test` asks for a
# password only when something is missing). The keys' folder is root-only, so its contents are not
# checked here: the folder, the account and its authorized_keys are.
ready=yes
for path in /usr/sbin/sshd /usr/sbin/dropbear /usr/lib/openssh/sftp-server /usr/lib/sftp-server "$STATE_DIR"; do
    [ -e "$path" ] || ready=no
done
for tool in ssh-keygen dropbearkey scp ssh-agent chpasswd ps idevice_id; do
    command -v "$tool" >/dev/null 2>&1 || ready=no
done
[ -d /run/sshd ] || ready=no
id "$TEST_USER" >/dev/null 2>&1 || ready=no
if [ "$ready" = yes ] && [ "$(id -u)" -ne 0 ]; then
    echo "ssh-peers: ready (user $TEST_USER, keys in $STATE_DIR)"
    exit 0
fi

missing=""
[ -x /usr/sbin/sshd ] || missing="$missing openssh-server"
[ -x /usr/sbin/dropbear ] || missing="$missing dropbear-bin"
[ -x /usr/lib/openssh/sftp-server ] || missing="$missing openssh-sftp-server"
command -v ssh-keygen >/dev/null 2>&1 || missing="$missing openssh-client"
command -v dropbearkey >/dev/null 2>&1 || missing="$missing dropbear-bin"
command -v scp >/dev/null 2>&1 || missing="$missing openssh-client"
command -v ssh-agent >/dev/null 2>&1 || missing="$missing openssh-client"
command -v chpasswd >/dev/null 2>&1 || missing="$missing passwd"
command -v ps >/dev/null 2>&1 || missing="$missing procps"
command -v idevice_id >/dev/null 2>&1 || missing="$missing libimobiledevice-utils"
if [ -n "$missing" ]; then
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
# dropbear runs this fixed path for the sftp subsystem (openssh-sftp-server provides the symlink).
[ -e /usr/lib/sftp-server ] || $SUDO ln -s /usr/lib/openssh/sftp-server /usr/lib/sftp-server

# sshd's privilege separation directory (/run is a tmpfs: recreate every boot).
$SUDO mkdir -p /run/sshd
$SUDO chmod 0755 /run/sshd

if ! id "$TEST_USER" >/dev/null 2>&1; then
    $SUDO useradd --create-home --home-dir "/home/$TEST_USER" --shell /bin/sh "$TEST_USER"
fi
# A random password nobody knows: the account must not be locked (dropbear refuses locked accounts), and
# the password test sets its own random one for the length of the test.
status=$($SUDO passwd -S "$TEST_USER" | awk '{print $2}')
if [ "$status" != "P" ]; then
    echo "$TEST_USER:$(head -c 24 /dev/urandom | base64 | tr -d '/+=')" | $SUDO chpasswd
fi

$SUDO mkdir -p "$STATE_DIR"
$SUDO chmod 0700 "$STATE_DIR"
# The folder is root-only: whether a key is there is asked as root too (an ordinary user's `[ -f ]` says
# no, and ssh-keygen would then ask to overwrite it on a closed stdin). No key is ever overwritten.
$SUDO test -f "$STATE_DIR/id_ed25519" ||
    $SUDO ssh-keygen -q -t ed25519 -N "" -C hadeploy-test-ed25519 -f "$STATE_DIR/id_ed25519" < /dev/null
$SUDO test -f "$STATE_DIR/id_rsa" ||
    $SUDO ssh-keygen -q -t rsa -b 2048 -N "" -C hadeploy-test-rsa -f "$STATE_DIR/id_rsa" < /dev/null

home=$(getent passwd "$TEST_USER" | cut -d: -f6)
$SUDO mkdir -p "$home/.ssh"
$SUDO sh -c "cat '$STATE_DIR/id_ed25519.pub' '$STATE_DIR/id_rsa.pub' > '$home/.ssh/authorized_keys'"
$SUDO chown -R "$TEST_USER:$TEST_USER" "$home/.ssh"
$SUDO chmod 0700 "$home/.ssh"
$SUDO chmod 0600 "$home/.ssh/authorized_keys"

echo "ssh-peers: ready (user $TEST_USER, keys in $STATE_DIR)"

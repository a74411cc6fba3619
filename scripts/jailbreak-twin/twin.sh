#!/bin/sh
# A jailbroken iPad twin: a real OpenSSH sshd or dropbear on 127.0.0.1 whose sessions run chrooted in an
# iOS-like root (/Applications, /var/mobile, /var/root, /tmp) with the tools an iOS 9 jailbreak has
# (sh, tar, gzip, find, cp, openssl — no sha256sum, no python in PATH) and twins of `open`, `uicache`,
# `ldid` and `killall` (springboard.py) that start the virtual HA Dashboard app (app.py).
#
#   twin.sh ROOT PORT [openssh|dropbear] [--legacy] [--password PASS] [--authorized-key FILE.pub]
#
# Runs in the foreground as root: the server lives in its own mount and PID namespace, so killing this
# process (unshare --kill-child) ends the server, its sessions and every app it started, and the
# namespace's bind mounts vanish with it. ROOT stays on disk for inspection.
set -eu

[ "$(id -u)" -eq 0 ] || { echo "twin.sh: run as root (chroot and mount namespaces)" >&2; exit 1; }
[ $# -ge 2 ] || { echo "usage: twin.sh ROOT PORT [openssh|dropbear] [--legacy] [--password P] [--authorized-key F]" >&2; exit 2; }
ROOT=$1; PORT=$2; shift 2
SERVER=openssh
LEGACY=no
PASSWORD=alpine
KEYFILE=
while [ $# -gt 0 ]; do
    case "$1" in
        openssh|dropbear) SERVER=$1 ;;
        --legacy) LEGACY=yes ;;
        --password) PASSWORD=$2; shift ;;
        --authorized-key) KEYFILE=$2; shift ;;
        *) echo "twin.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=$(readlink -f /usr/bin/python3)
[ -x "$PYTHON" ] || { echo "twin.sh: /usr/bin/python3 is missing (the twin's tools are python)" >&2; exit 1; }

mkdir -p "$ROOT"
cd "$ROOT"
mkdir -p Applications var/mobile/Library/Preferences var/mobile/Library/Caches var/mobile/Documents \
    var/mobile/tmp var/root/.ssh var/run/twin tmp etc/ssh etc/dropbear dev proc run/sshd host/usr \
    usr/bin usr/sbin usr/libexec/twin
chmod 0777 tmp   # iOS: /tmp -> /private/var/tmp, drwxrwxrwx without the sticky bit (the app removes root's trigger)
[ -e bin ] || ln -s usr/bin bin
[ -e lib ] || ln -s usr/lib lib
[ -e lib64 ] || ln -s /host/usr/lib64 lib64
[ -e usr/lib ] || ln -s /host/usr/lib usr/lib
[ -e var/tmp ] || ln -s ../tmp var/tmp

# Busybox-ish userland of an iOS 9 jailbreak (Cydia bootstrap + OpenSSH's openssl).
for tool in sh bash tar gzip gunzip find cp mv rm mkdir rmdir chmod chown cat ls sed grep sort head tail \
    sleep date mktemp stat touch test printf ps id kill ln uname dd wc cut tr env true false basename \
    dirname readlink openssl scp xargs awk expr; do
    src=$(command -v "$tool" 2>/dev/null || true)
    case "$src" in /usr/bin/*|/bin/*) ;; *) continue ;; esac
    ln -sfn "/host/usr/bin/$(basename "$src")" "usr/bin/$tool"
done
ln -sfn /host/usr/sbin/sshd usr/sbin/sshd
ln -sfn /host/usr/sbin/dropbear usr/sbin/dropbear
ln -sfn "/host${PYTHON}" usr/libexec/twin/python3
cp "$HERE/springboard.py" "$HERE/app.py" usr/libexec/twin/
for tool in open uicache ldid killall; do
    printf '#!/bin/sh\nexec /usr/libexec/twin/python3 /usr/libexec/twin/springboard.py %s "$@"\n' "$tool" > "usr/bin/$tool"
    chmod 755 "usr/bin/$tool"
done

# Accounts as on iOS: root (home /var/root) and mobile 501:501; sshd's privilege separation user.
SSHD_UID=$(id -u sshd 2>/dev/null || echo 101)
HASH=$(openssl passwd -6 "$PASSWORD")
cat > etc/passwd <<PASSWD
root:x:0:0:System Administrator:/var/root:/bin/sh
mobile:x:501:501:Mobile User:/var/mobile:/bin/sh
sshd:x:$SSHD_UID:65534::/run/sshd:/usr/sbin/nologin
nobody:x:65534:65534:Unprivileged User:/var/empty:/usr/sbin/nologin
PASSWD
cat > etc/group <<GROUP
wheel:x:0:root
admin:x:80:root
mobile:x:501:
nogroup:x:65534:
GROUP
printf 'root:%s:19000:0:99999:7:::\nmobile:*:19000:0:99999:7:::\nsshd:*:19000:0:99999:7:::\n' "$HASH" > etc/shadow
chmod 600 etc/shadow
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' > etc/nsswitch.conf
printf '127.0.0.1 localhost\n' > etc/hosts
cp /etc/ld.so.cache etc/ld.so.cache
echo "iPad2,1 9.3.5 13G36" > etc/twin-device
chown -R 501:501 var/mobile
chmod 1777 var/run/twin
if [ -n "$KEYFILE" ]; then
    cp "$KEYFILE" etc/ssh/authorized_keys
    cp "$KEYFILE" var/root/.ssh/authorized_keys
    chmod 600 var/root/.ssh/authorized_keys
fi

if [ "$SERVER" = openssh ]; then
    [ -f etc/ssh/ssh_host_rsa_key ] || ssh-keygen -q -t rsa -b 2048 -N "" -f etc/ssh/ssh_host_rsa_key
    [ -f etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -t ed25519 -N "" -f etc/ssh/ssh_host_ed25519_key
    {
        echo "ListenAddress 127.0.0.1"
        echo "HostKey /etc/ssh/ssh_host_rsa_key"
        [ "$LEGACY" = yes ] || echo "HostKey /etc/ssh/ssh_host_ed25519_key"
        echo "PidFile /run/sshd.pid"
        echo "PermitRootLogin yes"
        echo "StrictModes no"
        echo "UsePAM no"
        echo "PasswordAuthentication yes"
        echo "KbdInteractiveAuthentication no"
        echo "AuthorizedKeysFile /etc/ssh/authorized_keys"
        echo "MaxStartups 50"
        echo "LogLevel VERBOSE"
        echo "Subsystem sftp /usr/lib/openssh/sftp-server"
        if [ "$LEGACY" = yes ]; then
            # What the OpenSSH 6.x of an iOS 9 jailbreak offers.
            echo "HostKeyAlgorithms ssh-rsa"
            echo "KexAlgorithms diffie-hellman-group14-sha1,diffie-hellman-group1-sha1"
            echo "Ciphers aes128-ctr,aes128-cbc"
            echo "MACs hmac-sha1"
            echo "PubkeyAcceptedAlgorithms ssh-rsa"
        fi
    } > etc/ssh/sshd_config
    SERVE="/usr/sbin/sshd -D -e -f /etc/ssh/sshd_config -p $PORT"
else
    [ -f etc/dropbear/dropbear_rsa_host_key ] || dropbearkey -t rsa -s 2048 -f etc/dropbear/dropbear_rsa_host_key >/dev/null
    SERVE="/usr/sbin/dropbear -F -E -p 127.0.0.1:$PORT -r /etc/dropbear/dropbear_rsa_host_key -P /run/dropbear.pid"
fi

exec unshare --mount --pid --fork --kill-child --propagation private sh -c '
    set -e
    cd "$1"
    mount --bind /usr host/usr
    mount -o remount,bind,ro host/usr
    mount --rbind /dev dev
    mount -t proc proc proc
    shift
    exec chroot . "$@"
' twin "$ROOT" $SERVE

#!/bin/sh
# A jailbroken iPad twin: a real OpenSSH sshd or dropbear on 127.0.0.1 whose sessions run in an
# iOS-like root (/Applications, /var/mobile, /var/root, /tmp) with the tools an iOS 9 jailbreak has
# (sh, tar, gzip, find, cp, openssl — no sha256sum, no python in PATH) and twins of `open`, `uicache`,
# `ldid` and `killall` (springboard.py) that start the virtual HA Dashboard app (app.py).
#
#   twin.sh ROOT PORT [openssh|dropbear] [--legacy] [--authorized-key FILE.pub] [--password-file FILE]
#           [--lifeline]
#
# Logins: root with the key of --authorized-key only. A password login exists only when
# --password-file names a file (mode 0600, not group/world readable) holding one; the password never
# appears on a command line. The real iPad 2 takes `alpine` over SSH; this twin never does by default.
#
# Containment: the server lives in its own mount and PID namespace. ROOT becomes its root by pivot_root
# (the host's root is unmounted there, so no chroot escape leads anywhere), with the host's /usr
# read-only and nosuid at /host/usr, a /dev of a few character devices (null, zero, full, random,
# urandom, tty) and a private devpts, and a /proc of the namespace (read-only as root). ROOT's parent must be
# closed to other users (mode 0700).
#
# Two ways to run, the same containment:
# - As root: the namespaces are the host root's. The server and everything it starts run as uid 0 with
#   a reduced capability bounding set: without CAP_SYS_ADMIN (no mount), CAP_MKNOD, CAP_SYS_PTRACE,
#   CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_DAC_READ_SEARCH, CAP_NET_ADMIN, CAP_NET_RAW... Accounts as on
#   iOS: root 0, mobile 501 (the app runs as mobile).
# - As any other user: an unprivileged user namespace (unshare --user --map-root-user) holds the mount
#   and PID namespaces, so the twin can do nothing its user cannot (its "root" is that user, mapped).
#   Only that one id exists in the namespace (no newuidmap), and an SSH server that is uid 0 there
#   cannot start a session (initgroups: setgroups is denied in such a namespace), so the server runs
#   one user namespace further down as uid 501, without any capability, and every account of the twin
#   (root, mobile, wheel, admin) is that id. Fidelity lost: `id -u` of a root session says 501, root
#   and mobile are the same user (the app could write root's files, `chown mobile:mobile` changes
#   nothing), and sessions cannot do what only root can (they have no capability at all).
#
# Lifetime: killing this process (unshare --kill-child) ends the server, its sessions and every app it
# started, and the namespace's mounts vanish with it. With --lifeline, stdin is the starter's lifeline
# (a pipe whose write end the starter keeps): at its end of file — the starter exited or was killed,
# however — the twin ends too. ROOT stays on disk, and a later twin on the same ROOT finds what the
# last one left there (the installed apps, their preferences and Documents, the host keys), as an iPad
# keeps them between deploys.
#
# A test's hold: with TWIN_HOLD=TOOL in the environment (one of open, uicache, ldid, killall), that tool
# writes /var/run/twin/held in the twin and waits while /var/run/twin/hold exists (at most ten minutes),
# so a test catches a deploy at a known step however fast the rest runs.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH

if [ "$(id -u)" -eq 0 ]; then PRIVILEGE=root; else PRIVILEGE=user; fi
USAGE="usage: twin.sh ROOT PORT [openssh|dropbear] [--legacy] [--authorized-key F.pub] [--password-file F] [--lifeline]"
[ $# -ge 2 ] || { echo "$USAGE" >&2; exit 2; }
ROOT=$1; PORT=$2; shift 2
SERVER=openssh
LEGACY=no
PASSWORD_FILE=
KEYFILE=
LIFELINE=no
while [ $# -gt 0 ]; do
    case "$1" in
        openssh|dropbear) SERVER=$1 ;;
        --legacy) LEGACY=yes ;;
        --password)
            echo "twin.sh: --password is gone (a command line is visible to every user in ps): put the" \
                "password in a file of mode 0600 and pass --password-file FILE" >&2
            exit 2 ;;
        --password-file) [ $# -ge 2 ] || { echo "$USAGE" >&2; exit 2; }; PASSWORD_FILE=$2; shift ;;
        --authorized-key) [ $# -ge 2 ] || { echo "$USAGE" >&2; exit 2; }; KEYFILE=$2; shift ;;
        --lifeline) LIFELINE=yes ;;
        *) echo "twin.sh: unknown argument $1" >&2; echo "$USAGE" >&2; exit 2 ;;
    esac
    shift
done
case "$PORT" in ''|*[!0-9]*) echo "twin.sh: PORT must be a number, not $PORT" >&2; exit 2 ;; esac
if [ -n "$PASSWORD_FILE" ]; then
    case "$(stat -L -c %a "$PASSWORD_FILE" 2>/dev/null)" in
        '') echo "twin.sh: cannot read the password file $PASSWORD_FILE" >&2; exit 2 ;;
        400|600) ;;
        *) echo "twin.sh: $PASSWORD_FILE is readable by other users: chmod 600 it" >&2; exit 2 ;;
    esac
fi
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=$(readlink -f /usr/bin/python3)
[ -x "$PYTHON" ] || { echo "twin.sh: /usr/bin/python3 is missing (the twin's tools are python)" >&2; exit 1; }
# The namespace's set-up runs these from the host's /usr (after pivot_root: /host/usr).
for tool in unshare mount umount pivot_root setpriv; do
    path=$(command -v "$tool" 2>/dev/null || true)
    case "$(readlink -f "$path" 2>/dev/null)" in
        /usr/*) ;;
        *) echo "twin.sh: $tool is missing from /usr (util-linux): apt-get install util-linux mount" >&2; exit 1 ;;
    esac
done
UMOUNT=/host$(readlink -f "$(command -v umount)")
SETPRIV=/host$(readlink -f "$(command -v setpriv)")
UNSHARE=/host$(readlink -f "$(command -v unshare)")
# Not root: the kernel must let this user make a user namespace (and mount in it).
if [ "$PRIVILEGE" = user ]; then
    probe=$(unshare --user --map-root-user --mount --pid --fork sh -c 'mount -t tmpfs twin-probe /mnt' 2>&1) || {
        echo "twin.sh: not run as root, the twin needs a user namespace: allow unprivileged user namespaces" \
            "(sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 sysctl -w" \
            "kernel.apparmor_restrict_unprivileged_userns=0; sysctl -w user.max_user_namespaces=15000 where it" \
            "is 0) or run as root" >&2
        echo "twin.sh: this host gives this user no user namespace ($(printf '%s\n' "$probe" | tail -n 1))" >&2
        exit 1
    }
fi

mkdir -p "$ROOT"
ROOT=$(cd "$ROOT" && pwd -P)
PARENT=$(dirname "$ROOT")
case "$(stat -c %a "$PARENT")" in
    *00) ;;
    *) echo "twin.sh: $PARENT (ROOT's parent) is open to other users; make it mode 0700 (the twin's" \
        "host keys and its root's files are in ROOT)" >&2; exit 1 ;;
esac
cd "$ROOT"
if [ "$PRIVILEGE" = user ]; then
    # The twin's root and mobile are this user: a file of another user (a twin once run as root on this
    # ROOT left it) is one the twin could not change.
    foreign=$(find . -xdev ! -user "$(id -u)" -print 2>/dev/null | head -n 1)
    [ -z "$foreign" ] || { echo "twin.sh: $ROOT/${foreign#./} belongs to another user (a twin run as root" \
        "left it): remove $ROOT to start this twin afresh" >&2; exit 1; }
fi
chmod 0755 .
# ROOT is the twin's: its sessions (root there) may have left a symbolic link anywhere in it, to a host
# file or folder. Nothing below follows one from the host side: every folder this script makes or
# writes in, and every file it writes or reads, is first made sure not to be a link (a link, or a
# file where a folder belongs, is removed: it is the twin's own, never the host's). Each folder's
# parents come before it, so once a path passes no part of it is a link. The twin's processes are
# all gone (they died with its namespace), so nothing changes between the check and the use.
FOLDERS="Applications var var/mobile var/mobile/Library var/mobile/Library/Preferences
    var/mobile/Library/Caches var/mobile/Documents var/mobile/tmp var/root var/root/.ssh var/run
    var/run/twin tmp etc etc/ssh etc/dropbear dev proc run run/sshd host host/usr usr usr/bin usr/sbin
    usr/libexec usr/libexec/twin .host-root"
FILES="usr/bin/sysctl usr/bin/open usr/bin/uicache usr/bin/ldid usr/bin/killall
    usr/libexec/twin/springboard.py usr/libexec/twin/app.py usr/libexec/twin/init etc/passwd etc/group
    etc/shadow etc/nsswitch.conf etc/hosts etc/ld.so.cache etc/twin-device etc/ssh/sshd_config
    etc/ssh/authorized_keys var/root/.ssh/authorized_keys etc/ssh/ssh_host_rsa_key
    etc/ssh/ssh_host_rsa_key.pub etc/ssh/ssh_host_ed25519_key etc/ssh/ssh_host_ed25519_key.pub
    etc/dropbear/dropbear_rsa_host_key etc/dropbear/dropbear_ed25519_host_key run/sshd.pid
    run/dropbear.pid"
for folder in $FOLDERS; do
    if [ -L "$folder" ] || { [ -e "$folder" ] && [ ! -d "$folder" ]; }; then rm -f "$folder"; fi
    [ "$folder" = .host-root ] || mkdir -p "$folder"
done
for file in $FILES; do
    if [ -L "$file" ]; then rm -f "$file"; elif [ -e "$file" ] && [ ! -f "$file" ]; then rm -rf "$file"; fi
done
chmod 0777 tmp   # iOS: /tmp -> /private/var/tmp, drwxrwxrwx without the sticky bit (the app removes root's trigger)
ln -sfn usr/bin bin
ln -sfn usr/lib lib
ln -sfn /host/usr/lib64 lib64
ln -sfn /host/usr/lib usr/lib
ln -sfn ../tmp var/tmp

# Busybox-ish userland of an iOS 9 jailbreak (Cydia bootstrap + OpenSSH's openssl).
for tool in sh bash tar gzip gunzip find cp mv rm mkdir rmdir chmod chown cat ls sed grep sort head tail \
    sleep date mktemp stat touch test printf ps id kill ln uname dd wc cut tr env true false basename \
    dirname readlink openssl scp xargs awk expr df pgrep pkill; do
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

# sysctl as iOS answers `sysctl -n kern.boottime` (what `hadeploy status` reads): the device booted
# when this host did (its btime), so a twin restarted for another run has not "rebooted".
cat > usr/bin/sysctl <<'SYSCTL'
#!/bin/sh
[ "$1" = "-n" ] && shift
case "$1" in
kern.boottime)
    btime=$(grep '^btime ' /proc/stat 2>/dev/null | cut -d ' ' -f 2)
    [ -n "$btime" ] || { echo "sysctl: kern.boottime: unavailable" >&2; exit 1; }
    printf '{ sec = %s, usec = 0 } %s\n' "$btime" "$(date -u -d "@$btime" 2>/dev/null)" ;;
*) echo "sysctl: unknown oid '$1'" >&2; exit 1 ;;
esac
SYSCTL
chmod 755 usr/bin/sysctl

# Accounts as on iOS: root (home /var/root) and mobile 501:501; sshd's privilege separation user.
# Not as root, every account is the one id the twin has, 501 (see the top).
# Root's password: `*` (no password matches) unless --password-file gave one; read from the file on stdin.
if [ "$PRIVILEGE" = root ]; then
    ROOT_ID=0 WHEEL_ID=0 ADMIN_ID=80 SSHD_UID=$(id -u sshd 2>/dev/null || echo 101) SSHD_GID=65534
else
    ROOT_ID=501 WHEEL_ID=501 ADMIN_ID=501 SSHD_UID=501 SSHD_GID=501
fi
HASH='*'
[ -z "$PASSWORD_FILE" ] || HASH=$(head -n 1 "$PASSWORD_FILE" | openssl passwd -6 -stdin)
cat > etc/passwd <<PASSWD
root:x:$ROOT_ID:$ROOT_ID:System Administrator:/var/root:/bin/sh
mobile:x:501:501:Mobile User:/var/mobile:/bin/sh
sshd:x:$SSHD_UID:$SSHD_GID::/run/sshd:/usr/sbin/nologin
nobody:x:65534:65534:Unprivileged User:/var/empty:/usr/sbin/nologin
PASSWD
cat > etc/group <<GROUP
wheel:x:$WHEEL_ID:root
admin:x:$ADMIN_ID:root
mobile:x:501:
nogroup:x:65534:
GROUP
( umask 077; printf 'root:%s:19000:0:99999:7:::\nmobile:*:19000:0:99999:7:::\nsshd:*:19000:0:99999:7:::\n' \
    "$HASH" > etc/shadow )
chmod 600 etc/shadow
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' > etc/nsswitch.conf
printf '127.0.0.1 localhost\n' > etc/hosts
cp /etc/ld.so.cache etc/ld.so.cache
echo "iPad2,1 9.3.5 13G36" > etc/twin-device
[ "$PRIVILEGE" = user ] || chown -R 501:501 var/mobile
chmod 0700 var/root var/root/.ssh
# The app (mobile) records its pid here; nobody else writes to it (0755, mobile's).
[ "$PRIVILEGE" = user ] || chown 501:501 var/run/twin
chmod 0755 var/run/twin
# /var/run is new at each start: the pids a last twin recorded are another namespace's.
rm -f var/run/twin/* run/sshd.pid run/dropbear.pid
case "${TWIN_HOLD:-}" in
    '') ;;
    open|uicache|ldid|killall) echo "$TWIN_HOLD" > var/run/twin/hold ;;
    *) echo "twin.sh: TWIN_HOLD must name open, uicache, ldid or killall, not $TWIN_HOLD" >&2; exit 2 ;;
esac
rm -f etc/ssh/authorized_keys var/root/.ssh/authorized_keys
if [ -n "$KEYFILE" ]; then
    cp "$KEYFILE" etc/ssh/authorized_keys
    cp "$KEYFILE" var/root/.ssh/authorized_keys
    chmod 600 etc/ssh/authorized_keys var/root/.ssh/authorized_keys
fi

# Host keys, made once per ROOT and kept (a known_hosts of the last run stays true): OpenSSH's, which
# dropbear's are converted from, so the twin has the same identity whichever server runs.
[ -f etc/ssh/ssh_host_rsa_key ] || ssh-keygen -q -t rsa -b 2048 -N "" -f etc/ssh/ssh_host_rsa_key
[ -f etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -t ed25519 -N "" -f etc/ssh/ssh_host_ed25519_key
# A public half the twin replaced by a link was removed above: made again from the private one.
for kind in rsa ed25519; do
    [ -f "etc/ssh/ssh_host_${kind}_key.pub" ] ||
        ssh-keygen -y -f "etc/ssh/ssh_host_${kind}_key" > "etc/ssh/ssh_host_${kind}_key.pub"
done
if [ "$SERVER" = openssh ]; then
    {
        echo "ListenAddress 127.0.0.1"
        echo "HostKey /etc/ssh/ssh_host_rsa_key"
        [ "$LEGACY" = yes ] || echo "HostKey /etc/ssh/ssh_host_ed25519_key"
        echo "PidFile /run/sshd.pid"
        echo "StrictModes no"
        echo "UsePAM no"
        if [ -n "$PASSWORD_FILE" ]; then
            echo "PermitRootLogin yes"
            echo "PasswordAuthentication yes"
        else
            echo "PermitRootLogin prohibit-password"
            echo "PasswordAuthentication no"
            echo "AuthenticationMethods publickey"
        fi
        echo "KbdInteractiveAuthentication no"
        echo "HostbasedAuthentication no"
        echo "PermitEmptyPasswords no"
        echo "AllowUsers root"
        echo "AuthorizedKeysFile /etc/ssh/authorized_keys"
        echo "AllowTcpForwarding no"
        echo "AllowStreamLocalForwarding no"
        echo "AllowAgentForwarding no"
        echo "X11Forwarding no"
        echo "PermitTunnel no"
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
    set -- /usr/sbin/sshd -D -e -f /etc/ssh/sshd_config -p "$PORT"
else
    for kind in rsa ed25519; do
        [ -f "etc/dropbear/dropbear_${kind}_host_key" ] || dropbearconvert openssh dropbear \
            "etc/ssh/ssh_host_${kind}_key" "etc/dropbear/dropbear_${kind}_host_key" >/dev/null
    done
    # -j -k: no port forwarding; -s: no password logins unless a password was given. Sessions' sftp:
    # dropbear runs /usr/lib/sftp-server, the host's OpenSSH one through /host/usr.
    set -- /usr/sbin/dropbear -F -E -j -k -p "127.0.0.1:$PORT" -r /etc/dropbear/dropbear_rsa_host_key
    [ "$LEGACY" = yes ] || set -- "$@" -r /etc/dropbear/dropbear_ed25519_host_key
    set -- "$@" -P /run/dropbear.pid
    [ -n "$PASSWORD_FILE" ] || set -- "$@" -s
fi

# What the server and everything it starts may still do as uid 0: files (chown, modes, other users'
# files), switching users (sshd's privilege separation, the app as mobile), chroot (sshd's privilege
# separation), signals (killall of the app), audit records. Nothing else.
CAPS=-all,+chown,+dac_override,+fowner,+fsetid,+kill,+setuid,+setgid,+sys_chroot,+audit_write
[ "$PORT" -ge 1024 ] || CAPS=$CAPS,+net_bind_service

# Step 1, as the namespace's pid 1 with the host's view: the twin's mounts, then pivot_root into ROOT
# and the host's root unmounted.
# shellcheck disable=SC2016
SETUP='
    set -eu
    PATH=/usr/sbin:/usr/bin:/sbin:/bin
    root=$1; umount=$2; setpriv=$3; caps=$4; procmode=$5; serverns=$6; shift 6
    mount --bind "$root" "$root"
    mount -o remount,bind,nosuid,nodev "$root"
    cd "$root"
    mount --bind /usr host/usr
    mount -o remount,bind,ro,nosuid,nodev host/usr
    mount -t tmpfs -o nosuid,nodev,noexec,mode=0755,size=1m twin-dev dev
    for node in null zero full random urandom tty; do
        [ -c "/dev/$node" ] || continue
        : > "dev/$node"
        mount --bind "/dev/$node" "dev/$node"
    done
    mkdir dev/pts
    mount -t devpts -o newinstance,nosuid,noexec,ptmxmode=0666,mode=0620 devpts dev/pts
    ln -s pts/ptmx dev/ptmx
    ln -s /proc/self/fd dev/fd
    ln -s /proc/self/fd/0 dev/stdin
    ln -s /proc/self/fd/1 dev/stdout
    ln -s /proc/self/fd/2 dev/stderr
    mount -t proc -o "$procmode,nosuid,nodev,noexec" proc proc
    mkdir -p .host-root
    pivot_root . .host-root
    cd /
    "$umount" -l /.host-root
    rmdir /.host-root
    # Not root: init, the server and its sessions one user namespace down, as uid 501 (see the top);
    # --keep-caps lets setpriv drop the bounding set there, and then no capability is left.
    [ -z "$serverns" ] || set -- "$serverns" --user --map-user=501 --map-group=501 --keep-caps -- "$@"
    exec "$@"
'
# Step 2, pid 1 inside the twin with the reduced capabilities (usr/libexec/twin/init): runs the server
# (stdin /dev/null) and, with a lifeline, a watcher that kills it at the lifeline's end of file. When the
# server ends, pid 1 exits and the kernel kills whatever is left in the namespace. pid 1 also reaps the
# apps `open` detached.
cat > usr/libexec/twin/init <<'INIT'
PATH=/usr/bin:/bin
lifeline=$1; shift
exec 3<&0 </dev/null
"$@" 3<&- &
server=$!
if [ "$lifeline" = yes ]; then
    { cat >/dev/null; kill -KILL "$server"; } <&3 3<&- &
fi
exec 3<&-
wait "$server"
INIT
# Not root, /proc is writable: the server's own namespace is made by writing its /proc/self/uid_map, and
# nothing there is more than this user may do on the host anyway.
USERNS= PROC=ro SERVERNS=
[ "$PRIVILEGE" = root ] || { USERNS="--user --map-root-user"; PROC=rw; SERVERNS=$UNSHARE; }
# shellcheck disable=SC2086
exec unshare $USERNS --mount --pid --fork --kill-child --propagation private \
    sh -c "$SETUP" twin "$ROOT" "$UMOUNT" "$SETPRIV" "$CAPS" "$PROC" "$SERVERNS" \
    "$SETPRIV" --bounding-set "$CAPS" --inh-caps -all --no-new-privs -- /bin/sh /usr/libexec/twin/init \
    "$LIFELINE" "$@"

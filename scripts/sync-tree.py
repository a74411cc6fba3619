#!/usr/bin/env python3
"""Makes DEST a copy of SOURCE (the checkout with its .git) for scripts/test-as-user.sh, rewriting
only what differs.

A file whose bytes, mode and kind are already there is left alone, with its old modification time.
SwiftPM rebuilds a source file whose time changed, so a plain copy of a fresh clone (every file new to
the second) made each `make test` after a re-clone (CI's) compile every module of the package again,
although the account's build folder was still there. A file that differs is replaced (and given
SOURCE's time); what SOURCE no longer has is removed. Names in KEEP at DEST's top (the build folders
and venvs of earlier runs) and EXCLUDE at SOURCE's top (this user's builds, venvs, reports) are not
touched. Run as root: what it writes is given to OWNER (user:group).

    scripts/sync-tree.py SOURCE DEST OWNER
"""

import fnmatch
import grp
import os
import pwd
import shutil
import stat
import sys

EXCLUDE = [".build", ".build-*", ".build_*", ".venv-*", "dist", "report", ".hadeploy"]
KEEP = [".build-release", ".build-brew-gen", ".build", ".venv-*"]


def matches(name, patterns):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def same_file(source, dest, source_stat):
    try:
        dest_stat = os.lstat(dest)
    except FileNotFoundError:
        return False
    if stat.S_IFMT(dest_stat.st_mode) != stat.S_IFMT(source_stat.st_mode):
        return False
    if stat.S_ISLNK(source_stat.st_mode):
        return os.readlink(source) == os.readlink(dest)
    if stat.S_IMODE(dest_stat.st_mode) != stat.S_IMODE(source_stat.st_mode):
        return False
    if dest_stat.st_size != source_stat.st_size:
        return False
    with open(source, "rb") as a, open(dest, "rb") as b:
        while True:
            left, right = a.read(1 << 20), b.read(1 << 20)
            if left != right:
                return False
            if not left:
                return True


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, dest, owner = sys.argv[1:]
    user, _, group = owner.partition(":")
    uid, gid = pwd.getpwnam(user).pw_uid, grp.getgrnam(group or user).gr_gid
    changed = 0
    for directory, subdirectories, files in os.walk(source):
        relative = os.path.relpath(directory, source)
        at_top = relative == "."
        if at_top:
            subdirectories[:] = [d for d in subdirectories if not matches(d, EXCLUDE)]
            files = [f for f in files if not matches(f, EXCLUDE)]
        target = dest if at_top else os.path.join(dest, relative)
        if os.path.lexists(target) and (os.path.islink(target) or not os.path.isdir(target)):
            os.unlink(target)
        if not os.path.isdir(target):
            os.mkdir(target)
        os.chmod(target, stat.S_IMODE(os.stat(directory).st_mode))
        os.lchown(target, uid, gid)
        wanted = set(subdirectories) | set(files)
        # Symbolic links to directories are listed as directories by os.walk; copy them as links.
        links = [d for d in subdirectories if os.path.islink(os.path.join(directory, d))]
        subdirectories[:] = [d for d in subdirectories if d not in links]
        for name in os.listdir(target):
            if name in wanted or (at_top and matches(name, KEEP)):
                continue
            remove(os.path.join(target, name))
            changed += 1
        for name in files + links:
            path, copy = os.path.join(directory, name), os.path.join(target, name)
            info = os.lstat(path)
            if same_file(path, copy, info):
                continue
            remove(copy)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(path), copy)
            else:
                shutil.copy2(path, copy)
            os.lchown(copy, uid, gid)
            changed += 1
    print(f"sync-tree: {changed} entries written or removed in {dest}")


if __name__ == "__main__":
    main()

"""Starts Home Assistant detached from its caller and prints its pid.

Why not plain `setsid python -m homeassistant &` in bash: a caller such as Foundation's Process
spawns children with most signals blocked (SIGTERM included, so HA would ignore `stop`) and may
watch an inherited descriptor to notice the child's exit (so a background HA holding it makes the
caller wait forever). Here the child gets a clean signal mask, default handlers, no descriptor
but stdin/stdout/stderr, and a session of its own.

With --watch PID a second detached process sends HA SIGTERM once PID is gone, so a test run
that dies never leaves a server behind.
"""

import argparse
import os
import signal
import sys
import time


def detach(log_path: str) -> None:
    os.setsid()
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.closerange(3, 65536)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", required=True)
    parser.add_argument("--watch", type=int)
    args = parser.parse_args()

    ha = os.fork()
    if ha == 0:
        detach(os.path.join(args.dir, "hass.out"))
        env = dict(os.environ, HA_PORT=str(args.port))
        os.execve(sys.executable,
                  [sys.executable, "-m", "homeassistant", "--config", args.dir, "--skip-pip"], env)

    if args.watch:
        watcher = os.fork()
        if watcher == 0:
            detach(os.devnull)
            while alive(args.watch) and alive(ha):
                time.sleep(1)
            if alive(ha):
                os.kill(ha, signal.SIGTERM)
            os._exit(0)

    print(ha)


if __name__ == "__main__":
    main()

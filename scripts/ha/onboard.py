"""Headless onboarding of a fresh (or restarted) Home Assistant 2024.3.3 test peer.

Waits for the HTTP server, creates the owner (or logs in again when it exists), mints a
long-lived access token over the WebSocket API, waits for state RUNNING and writes the token to
DIR/token with mode 0600. The token is never printed. Runs with the peer venv's Python (aiohttp).
Exact requests: shared HOME-ASSISTANT.md §4 (verified on this machine).
"""

import argparse
import asyncio
import os
import sys
import time

import aiohttp

USERNAME = "test"
PASSWORD = "test-pass-123"


def fail(message: str) -> None:
    print(f"onboard: {message}", file=sys.stderr)
    sys.exit(1)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


async def wait_http(session: aiohttp.ClientSession, base: str, pid: int, deadline: float) -> None:
    # GET /api/websocket without Upgrade answers 400 and has no side effects; probing /api/ without a
    # token would create a "Login attempt failed" notification.
    while time.monotonic() < deadline:
        if not process_alive(pid):
            fail(f"Home Assistant (pid {pid}) exited during start")
        try:
            async with session.get(f"{base}/api/websocket", timeout=aiohttp.ClientTimeout(total=2)) as r:
                if r.status in (400, 200):
                    return
        except (aiohttp.ClientError, asyncio.TimeoutError):
            pass
        await asyncio.sleep(0.1)
    fail(f"no HTTP answer from {base} before the deadline")


async def token_still_valid(session: aiohttp.ClientSession, base: str, token: str) -> bool:
    async with session.get(f"{base}/api/", headers={"Authorization": f"Bearer {token}"}) as r:
        return r.status == 200


async def auth_code(session: aiohttp.ClientSession, base: str, client_id: str) -> str:
    async with session.get(f"{base}/api/onboarding") as r:
        steps = await r.json() if r.status == 200 else []
    user_done = any(s.get("step") == "user" and s.get("done") for s in steps) or not steps
    if not user_done:
        body = {"client_id": client_id, "name": "Test Owner", "username": USERNAME,
                "password": PASSWORD, "language": "en"}
        async with session.post(f"{base}/api/onboarding/users", json=body) as r:
            if r.status == 200:
                return (await r.json())["auth_code"]
            if r.status != 403:  # 403: user step already done -> log in instead
                fail(f"POST /api/onboarding/users answered {r.status}")
    flow_body = {"client_id": client_id, "handler": ["homeassistant", None], "redirect_uri": client_id}
    async with session.post(f"{base}/auth/login_flow", json=flow_body) as r:
        flow = await r.json()
    login = {"client_id": client_id, "username": USERNAME, "password": PASSWORD}
    async with session.post(f"{base}/auth/login_flow/{flow['flow_id']}", json=login) as r:
        result = await r.json()
    if result.get("type") != "create_entry":
        fail("login flow refused the test owner's credentials")
    return result["result"]


async def long_lived_token(session: aiohttp.ClientSession, base: str, access: str) -> str:
    async with session.ws_connect(f"{base}/api/websocket", max_msg_size=0) as ws:
        await ws.receive_json()  # auth_required
        await ws.send_json({"type": "auth", "access_token": access})
        reply = await ws.receive_json()
        if reply.get("type") != "auth_ok":
            fail("the fresh access token was refused over the WebSocket API")
        # client_name must be unique per user: a restart of the same dir mints another one.
        name = f"hadeploy-tests-{time.time_ns()}"
        await ws.send_json({"id": 1, "type": "auth/long_lived_access_token",
                            "client_name": name, "lifespan": 3650})
        while True:
            msg = await ws.receive_json()
            if msg.get("id") == 1 and msg.get("type") == "result":
                if not msg.get("success"):
                    fail(f"auth/long_lived_access_token failed: {msg.get('error')}")
                return msg["result"]


async def wait_running(session: aiohttp.ClientSession, base: str, token: str, deadline: float) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < deadline:
        async with session.get(f"{base}/api/config", headers=headers) as r:
            if r.status == 200 and (await r.json()).get("state") == "RUNNING":
                return
        await asyncio.sleep(0.1)
    fail("Home Assistant did not reach state RUNNING before the deadline")


def write_token(path: str, token: str) -> None:
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=90)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    base = f"http://127.0.0.1:{args.port}"
    client_id = f"{base}/"
    token_path = os.path.join(args.dir, "token")
    timeout = aiohttp.ClientTimeout(total=15)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await wait_http(session, base, args.pid, deadline)
        token = None
        if os.path.exists(token_path):
            with open(token_path) as f:
                token = f.read().strip()
            if not await token_still_valid(session, base, token):
                token = None
        if token is None:
            code = await auth_code(session, base, client_id)
            form = {"grant_type": "authorization_code", "code": code, "client_id": client_id}
            async with session.post(f"{base}/auth/token", data=form) as r:
                if r.status != 200:
                    fail(f"POST /auth/token answered {r.status}")
                access = (await r.json())["access_token"]
            token = await long_lived_token(session, base, access)
            write_token(token_path, token)
        await wait_running(session, base, token, deadline)


if __name__ == "__main__":
    asyncio.run(main())

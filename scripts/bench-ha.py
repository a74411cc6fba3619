#!/usr/bin/env python3
"""Benchmark: hadeploy's Swift Home Assistant client against a Python aiohttp client, side by side,
on one real Home Assistant holding 5,000 extra entities.

    scripts/bench-ha.py [--entities 5000] [--runs 20] [--events 50] [--configuration debug|release]

Re-executes itself with the peer venv's Python (.venv-ha, made by `scripts/ha-peer.sh install`).
It starts its own HA on a free loopback port (scripts/ha-peer.sh), creates the entities with
POST /api/states, creates a dashboard referencing 200 of them plus 3 that do not exist, then
measures, for both clients:
  * preflight: connect + auth, then lovelace/config, lovelace/dashboards/list and get_states in
    flight together, then the missing-entity computation;
  * event delay: fire_event on one connection until a second connection's subscriber has the event.
The Swift side is `hadeploy-bench ha` (Benchmarks/HomeAssistantBenchmark.swift), built here first.
"""

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VENV_PYTHON = os.path.join(REPO, ".venv-ha", "bin", "python")

if os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(REPO, ".venv-ha")) and not os.environ.get(
        "HA_BENCH_REEXEC"):
    if not os.path.exists(VENV_PYTHON):
        sys.exit("bench-ha: run scripts/ha-peer.sh install first")
    os.environ["HA_BENCH_REEXEC"] = "1"
    os.execv(VENV_PYTHON, [VENV_PYTHON] + sys.argv)

import aiohttp  # noqa: E402  (from the venv)

DASHBOARD = "wall-bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def summary(samples_ms):
    samples = sorted(samples_ms)
    return {"n": len(samples), "min": samples[0], "median": statistics.median(samples), "max": samples[-1]}


def entity_ids(config):
    """The same rule as EntityReferenceCollector: entity/entity_id/camera_image members and
    string items of entities/badges lists, anywhere in the config."""
    found = []

    def walk(value):
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, member in value.items():
                if key in ("entity", "entity_id", "camera_image"):
                    if isinstance(member, str):
                        found.append(member)
                    elif isinstance(member, list):
                        found.extend(m for m in member if isinstance(m, str))
                elif key in ("entities", "badges") and isinstance(member, list):
                    for item in member:
                        if isinstance(item, str):
                            found.append(item)
                        else:
                            walk(item)
                else:
                    walk(member)

    walk(config)
    return found


class Client:
    """A minimal aiohttp WebSocket client: ids, pipelined commands, one reader task."""

    def __init__(self, session, base, token):
        self.session, self.base, self.token = session, base, token
        self.next_id = 1
        self.waiting = {}
        self.events = {}

    async def connect(self):
        self.ws = await self.session.ws_connect(f"{self.base}/api/websocket", max_msg_size=0)
        await self.ws.receive_json()
        await self.ws.send_json({"type": "auth", "access_token": self.token})
        reply = await self.ws.receive_json()
        if reply["type"] != "auth_ok":
            raise RuntimeError("token refused")
        self.reader = asyncio.create_task(self.read())
        return reply["ha_version"]

    async def read(self):
        async for msg in self.ws:
            data = json.loads(msg.data)
            if data["type"] == "event":
                queue = self.events.get(data["id"])
                if queue:
                    queue.put_nowait(data["event"])
            elif data.get("id") in self.waiting:
                self.waiting.pop(data["id"]).set_result(data)

    async def call(self, type_, **params):
        command_id = self.next_id
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[command_id] = future
        await self.ws.send_str(json.dumps({"id": command_id, "type": type_, **params}))
        reply = await asyncio.wait_for(future, 30)
        if reply.get("type") == "result" and not reply["success"]:
            raise RuntimeError(reply["error"])
        return reply.get("result")

    async def subscribe(self, event_type):
        command_id = self.next_id
        queue = asyncio.Queue()
        self.events[command_id] = queue
        await self.call("subscribe_events", event_type=event_type)
        return queue

    async def close(self):
        await self.ws.close()
        self.reader.cancel()


async def python_preflight(session, base, token):
    client = Client(session, base, token)
    await client.connect()
    config, _, states = await asyncio.gather(
        client.call("lovelace/config", url_path=DASHBOARD),
        client.call("lovelace/dashboards/list"),
        client.call("get_states"),
    )
    known = {state["entity_id"] for state in states}
    missing = {e for e in entity_ids(config) if e not in known}
    await client.close()
    return len(states), len(missing)


async def python_side(base, token, runs, events):
    async with aiohttp.ClientSession() as session:
        preflight = []
        for _ in range(runs):
            start = time.perf_counter()
            counts = await python_preflight(session, base, token)
            preflight.append((time.perf_counter() - start) * 1000)
        subscriber, firer = Client(session, base, token), Client(session, base, token)
        await subscriber.connect()
        await firer.connect()
        queue = await subscriber.subscribe("hadeploy_bench_event")
        delays = []
        for index in range(events):
            start = time.perf_counter()
            await firer.call("fire_event", event_type="hadeploy_bench_event", event_data={"n": index})
            while True:
                event = await asyncio.wait_for(queue.get(), 10)
                if event["data"]["n"] == index:
                    break
            delays.append((time.perf_counter() - start) * 1000)
        await subscriber.close()
        await firer.close()
        return {"preflight_ms": summary(preflight), "event_delay_ms": summary(delays),
                "states": counts[0], "missing": counts[1]}


async def prepare(base, token, entities):
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        queue = asyncio.Queue()
        for index in range(entities):
            queue.put_nowait(index)

        async def worker():
            while not queue.empty():
                index = queue.get_nowait()
                body = {"state": str(index), "attributes": {"unit_of_measurement": "W",
                                                            "friendly_name": f"Load sensor {index}"}}
                async with session.post(f"{base}/api/states/sensor.load_{index:05d}", json=body) as r:
                    assert r.status in (200, 201), r.status

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(16)))
        created = time.perf_counter() - start
        client = Client(session, base, token)
        await client.connect()
        cards = [{"type": "entities", "entities": [f"sensor.load_{i:05d}" for i in range(j, j + 20)]}
                 for j in range(0, 200, 20)]
        cards.append({"type": "vertical-stack", "cards": [
            {"type": "button", "entity": "light.bench_missing_1"},
            {"type": "glance", "entities": ["sensor.bench_missing_2", {"entity": "switch.bench_missing_3"}]}]})
        await client.call("lovelace/dashboards/create", url_path=DASHBOARD, title="Bench")
        await client.call("lovelace/config/save", url_path=DASHBOARD,
                          config={"title": "Bench", "views": [{"title": "Main", "cards": cards}]})
        states = await client.call("get_states")
        await client.close()
        return created, len(states)


def build_bench(configuration):
    """Builds hadeploy-bench (only its own dependencies) before HA starts; returns the binary."""
    build = subprocess.run(["swift", "build", "-c", configuration, "--product", "hadeploy-bench"], cwd=REPO,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if build.returncode != 0:
        print(build.stdout[-3000:])
        sys.exit("bench-ha: building hadeploy-bench failed")
    bin_path = subprocess.run(["swift", "build", "-c", configuration, "--show-bin-path"], cwd=REPO,
                              stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    return os.path.join(bin_path, "hadeploy-bench")


def run(args):
    bench = build_bench(args.configuration)
    peer = os.path.join(REPO, "scripts", "ha-peer.sh")
    directory = tempfile.mkdtemp(prefix="hadeploy-bench-")
    port = free_port()
    subprocess.run([peer, "start", directory, str(port)], check=True, stdout=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        token_file = os.path.join(directory, "token")
        with open(token_file) as f:
            token = f.read().strip()
        created, total = asyncio.run(prepare(base, token, args.entities))
        print(f"bench-ha: {args.entities} entities created in {created:.1f} s; get_states holds {total}")
        python = asyncio.run(python_side(base, token, args.runs, args.events))
        out = os.path.join(directory, "swift.json")
        command = [bench, "ha", "--url", base + "/", "--token-file", token_file, "--dashboard", DASHBOARD,
                   "--runs", str(args.runs), "--events", str(args.events), "--out", out]
        if os.environ.get("HA_BENCH_BREAKDOWN"):
            command.append("--breakdown")
        swift_side = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, timeout=1800)
        if os.environ.get("HA_BENCH_BREAKDOWN"):
            print(swift_side.stdout)
        if swift_side.returncode != 0 or not os.path.exists(out):
            print(swift_side.stdout[-3000:])
            sys.exit("bench-ha: the Swift side failed")
        with open(out) as f:
            swift = json.load(f)
    finally:
        subprocess.run([peer, "stop", directory], check=False)
        shutil.rmtree(directory, ignore_errors=True)
    print_table(args, total, python, swift)


def print_table(args, total, python, swift):
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"\nmachine: {os.cpu_count()} cores, {cpu}; {platform.platform()}; Python {platform.python_version()}")
    print(f"Home Assistant 2024.3.3 on 127.0.0.1 with {total} entities; Swift build: {args.configuration}")
    print(f"{'measure':44} {'Swift (hadeploy)':>24} {'Python (aiohttp)':>24}")
    for key, label in (("preflight_ms", f"preflight, ms (min/median/max, n={args.runs})"),
                       ("event_delay_ms", f"fire_event -> subscriber, ms (n={args.events})")):
        s, p = swift[key], python[key]
        print(f"{label:44} {s['min']:7.1f} {s['median']:7.1f} {s['max']:7.1f}  {p['min']:7.1f} {p['median']:7.1f} "
              f"{p['max']:7.1f}")
    print(f"{'entities seen / missing found':44} {swift['states']:>14} / {swift['missing']:<7} "
          f"{python['states']:>14} / {python['missing']:<7}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--entities", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--configuration", choices=["debug", "release"], default="debug")
    run(parser.parse_args())

"""Seeds a Home Assistant test peer for `make demo`: a few demo entities and saved dashboards
(default `dashboard-demo`) whose cards use them. Idempotent (re-saving the same config). Runs with the peer
venv's Python (aiohttp). The token is read from DIR/token and never printed.
"""

import argparse
import asyncio
import sys

import aiohttp

ENTITIES = {
    "sensor.hall_temperature": ("21.5", {"friendly_name": "Hall temperature", "unit_of_measurement": "°C"}),
    "sensor.outside_temperature": ("8.2", {"friendly_name": "Outside", "unit_of_measurement": "°C"}),
    "light.hall": ("on", {"friendly_name": "Hall light", "brightness": 180}),
    "light.kitchen": ("off", {"friendly_name": "Kitchen light"}),
    "binary_sensor.front_door": ("off", {"friendly_name": "Front door", "device_class": "door"}),
}

CONFIG = {
    "title": "Demo wall",
    "views": [
        {
            "title": "Home",
            "path": "home",
            "cards": [
                {"type": "entities", "title": "Lights", "entities": ["light.hall", "light.kitchen"]},
                {"type": "tile", "entity": "sensor.hall_temperature"},
                {"type": "tile", "entity": "binary_sensor.front_door"},
                {"type": "markdown", "title": "Deployed by hadeploy"},
            ],
        },
        {
            "title": "Climate",
            "path": "climate",
            "cards": [
                {"type": "sensor", "entity": "sensor.outside_temperature"},
                {"type": "entities", "title": "Switches", "entities": ["input_boolean.peer_test"]},
            ],
        },
    ],
}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dashboard", action="append", default=[], help="url_path to create (repeatable)")
    args = parser.parse_args()
    with open(f"{args.dir}/token", encoding="utf-8") as handle:
        token = handle.read().strip()
    base = f"http://127.0.0.1:{args.port}"
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as session:
        for entity, (state, attributes) in ENTITIES.items():
            async with session.post(
                f"{base}/api/states/{entity}", headers=headers, json={"state": state, "attributes": attributes}
            ) as response:
                if response.status not in (200, 201):
                    sys.exit(f"demo-seed: {entity}: HTTP {response.status}")
        async with session.ws_connect(f"{base}/api/websocket") as ws:
            await ws.receive_json()
            await ws.send_json({"type": "auth", "access_token": token})
            if (await ws.receive_json()).get("type") != "auth_ok":
                sys.exit("demo-seed: the token was refused")
            ident = 0

            async def command(payload: dict) -> dict:
                nonlocal ident
                ident += 1
                await ws.send_json({"id": ident, **payload})
                while True:
                    message = await ws.receive_json()
                    if message.get("id") == ident and message.get("type") == "result":
                        return message

            existing = {d.get("url_path") for d in (await command({"type": "lovelace/dashboards/list"})).get("result") or []}
            for name in args.dashboard or ["dashboard-demo"]:
                if name not in existing:
                    title = name.removeprefix("dashboard-").replace("-", " ").capitalize()
                    created = await command({"type": "lovelace/dashboards/create", "url_path": name, "title": title})
                    if not created.get("success"):
                        sys.exit(f"demo-seed: dashboard {name} not created: {created.get('error')}")
                config = dict(CONFIG, title=f"{name.removeprefix('dashboard-').replace('-', ' ').capitalize()} wall")
                saved = await command({"type": "lovelace/config/save", "url_path": name, "config": config})
                if not saved.get("success"):
                    sys.exit(f"demo-seed: dashboard {name} not saved: {saved.get('error')}")
    names = ", ".join(args.dashboard or ["dashboard-demo"])
    print(f"demo-seed: {len(ENTITIES)} entities and {names} (2 views, 6 cards each) on {base}")


asyncio.run(main())

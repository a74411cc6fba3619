"""Seeds a Home Assistant test peer for `make demo`: a few demo entities and a saved dashboard
`dashboard-demo` whose cards use them. Idempotent (re-saving the same config). Runs with the peer
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
    parser.add_argument("--dashboard", default="dashboard-demo")
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

            dashboards = await command({"type": "lovelace/dashboards/list"})
            if not any(d.get("url_path") == args.dashboard for d in dashboards.get("result") or []):
                created = await command(
                    {"type": "lovelace/dashboards/create", "url_path": args.dashboard, "title": "Demo"}
                )
                if not created.get("success"):
                    sys.exit(f"demo-seed: dashboard not created: {created.get('error')}")
            saved = await command({"type": "lovelace/config/save", "url_path": args.dashboard, "config": CONFIG})
            if not saved.get("success"):
                sys.exit(f"demo-seed: dashboard not saved: {saved.get('error')}")
    print(f"demo-seed: {len(ENTITIES)} entities and {args.dashboard} (2 views, 6 cards) on {base}")


asyncio.run(main())

"""A TLS reverse proxy that serves a Home Assistant under a path prefix, like a real deployment
behind nginx at https://host/ha/. Test fixture only (loopback).

    prefix_proxy.py --upstream http://127.0.0.1:8123 --prefix /ha --cert c.pem --key k.pem --port-file F

Binds 127.0.0.1 on a free port, writes the port to F once it listens, forwards HTTP and WebSocket
traffic under the prefix, and exits when its parent process goes away. With --chunked it sends HTTP
answers in chunked transfer coding (no Content-Length), 4 KiB a chunk, as a streaming proxy does.
"""

import argparse
import asyncio
import os

import aiohttp
from aiohttp import web
import ssl

HOP_HEADERS = {"host", "connection", "upgrade", "transfer-encoding", "keep-alive", "content-length",
               "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--chunked", action="store_true")
    args = parser.parse_args()
    prefix = "/" + args.prefix.strip("/")
    session = aiohttp.ClientSession()  # decompresses; the response is re-sent plain

    async def forward(request: web.Request) -> web.StreamResponse:
        tail = request.match_info["tail"]
        target = f"{args.upstream}/{tail}"
        if request.query_string:
            target += "?" + request.query_string
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        if request.headers.get("upgrade", "").lower() == "websocket":
            client = web.WebSocketResponse(max_msg_size=0)
            await client.prepare(request)
            async with session.ws_connect(target, max_msg_size=0) as upstream:
                async def pump(source, sink):
                    async for msg in source:
                        if msg.type == aiohttp.WSMsgType.TEXT:
                            await sink.send_str(msg.data)
                        elif msg.type == aiohttp.WSMsgType.BINARY:
                            await sink.send_bytes(msg.data)
                        else:
                            break
                    await sink.close()
                await asyncio.gather(pump(client, upstream), pump(upstream, client), return_exceptions=True)
            return client
        body = await request.read()
        async with session.request(request.method, target, headers=headers, data=body) as upstream:
            payload = await upstream.read()
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS | {"content-encoding"}}
            if not args.chunked:
                return web.Response(status=upstream.status, body=payload, headers=out)
            streamed = web.StreamResponse(status=upstream.status, headers=out)
            streamed.enable_chunked_encoding()
            await streamed.prepare(request)
            for start in range(0, len(payload), 4096):
                await streamed.write(payload[start:start + 4096])
            await streamed.write_eof()
            return streamed

    app = web.Application()
    app.router.add_route("*", prefix + "/{tail:.*}", forward)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.replace(tmp, args.port_file)
    parent = os.getppid()
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    await runner.cleanup()
    await session.close()


if __name__ == "__main__":
    asyncio.run(main())

"""A TCP proxy that limits throughput, for benchmarks over a slow link (an iPad 2 on Wi-Fi).

  python3 throttle.py LISTEN_PORT UPSTREAM_PORT BYTES_PER_SECOND

Every byte in either direction passes one token bucket per direction shared by all connections (one
link), refilled at BYTES_PER_SECOND, so parallel connections do not get more than the link carries.
"""
import asyncio
import sys
import time


class Bucket:
    def __init__(self, rate):
        self.rate = rate
        self.tokens = 0.0
        self.last = time.monotonic()
        self.lock = asyncio.Lock()

    async def take(self, count):
        async with self.lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.rate * 0.05, self.tokens + (now - self.last) * self.rate)
                self.last = now
                if self.tokens >= count:
                    self.tokens -= count
                    return
                await asyncio.sleep((count - self.tokens) / self.rate)


async def pump(reader, writer, bucket):
    try:
        while True:
            data = await reader.read(16384)
            if not data:
                break
            for start in range(0, len(data), 4096):
                chunk = data[start:start + 4096]
                await bucket.take(len(chunk))
                writer.write(chunk)
                await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main():
    listen, upstream, rate = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    up, down = Bucket(rate), Bucket(rate)

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, up), pump(server_reader, client_writer, down))

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())

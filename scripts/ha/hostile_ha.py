#!/usr/bin/env python3
"""A hostile or broken Home Assistant on 127.0.0.1, for tests (standard library only).

It speaks just enough of Home Assistant's WebSocket API to get past authentication (any token is
accepted, `ha_version` 2024.3.3), then misbehaves as MODE says:

  endless  answers the first command with a text frame that never ends: continuation frames of
           64 KiB, forever (a client that assembles messages without a limit grows without bound)
  stall    answers nothing after `auth_ok`: no result, no pong, the connection kept open (a server
           whose event loop is stuck)
  error    answers every command with `success: false` and a message full of terminal escape
           sequences and GitHub workflow commands
  version  says its version is 100,000 digits and a terminal escape in `auth_ok`, then answers as
           `stall` does
  ping     pings the client before answering each command (as HA's heartbeat does, every 55 s) and
           answers with the pong's payload and whether the client masked its frames; a client that
           does not answer pings gets no answer

    hostile_ha.py MODE --port-file FILE     writes the port it listens on to FILE; runs until killed
"""

import argparse
import base64
import hashlib
import json
import os
import socket
import struct
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
HOSTILE_MESSAGE = (
    "\x1b[2J\x1b[31mred alert\x1b[0m\x1b]0;owned title\x07 bell\r"
    "\n::error file=devices.yaml,line=1::injected annotation"
    "\n::add-mask::secret"
    "\n  ##[error]old-style command"
)


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    headers = {}
    for line in head.split("\r\n")[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return headers


def frame(opcode, payload, fin=True):
    first = (0x80 if fin else 0) | opcode
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", first, length)
    elif length < 65536:
        header = struct.pack("!BBH", first, 126, length)
    else:
        header = struct.pack("!BBQ", first, 127, length)
    return header + payload


def read_frame(conn):
    def exactly(count):
        data = b""
        while len(data) < count:
            chunk = conn.recv(count - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    first, second = exactly(2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", exactly(2))[0]
    elif length == 127:
        length = struct.unpack("!Q", exactly(8))[0]
    mask = exactly(4) if second & 0x80 else b"\0\0\0\0"
    payload = bytearray(exactly(length))
    for index in range(length):
        payload[index] ^= mask[index % 4]
    return first & 0x0F, bytes(payload), bool(second & 0x80)


def send_json(conn, message):
    conn.sendall(frame(0x1, json.dumps(message).encode()))


def serve(conn, mode):
    try:
        headers = read_request(conn)
        if headers is None or "sec-websocket-key" not in headers:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        accept = base64.b64encode(hashlib.sha1(headers["sec-websocket-key"].encode() + GUID).digest())
        conn.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        send_json(conn, {"type": "auth_required", "ha_version": "2024.3.3"})
        while True:
            opcode, payload, masked = read_frame(conn)
            if opcode == 0x8:
                return
            if opcode == 0x9:
                if mode != "stall":
                    conn.sendall(frame(0xA, payload))
                continue
            if opcode != 0x1:
                continue
            message = json.loads(payload)
            if message.get("type") == "auth":
                version = "9" * 100_000 + "\x1b[2J" if mode == "version" else "2024.3.3"
                send_json(conn, {"type": "auth_ok", "ha_version": version})
                continue
            if mode in ("stall", "version"):
                continue
            if mode == "ping":
                probe = b"hadeploy-ping-%d" % message.get("id", 0)
                conn.sendall(frame(0x9, probe))
                while True:
                    answer, echoed, pong_masked = read_frame(conn)
                    if answer == 0xA:
                        break
                send_json(
                    conn,
                    {
                        "id": message.get("id"),
                        "type": "result",
                        "success": True,
                        "result": {"sent": probe.decode(), "pong": echoed.decode(), "masked": masked and pong_masked},
                    },
                )
                continue
            if mode == "error":
                send_json(
                    conn,
                    {
                        "id": message.get("id"),
                        "type": "result",
                        "success": False,
                        "error": {"code": "unknown_error", "message": HOSTILE_MESSAGE},
                    },
                )
                continue
            # endless: a message that never ends.
            chunk = b"x" * 65536
            conn.sendall(frame(0x1, b'{"id": %d, "type": "result", "success": true, "result": "' % message.get("id", 0), fin=False))
            while True:
                conn.sendall(frame(0x0, chunk, fin=False))
    except (ConnectionError, OSError, ValueError):
        pass
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["endless", "stall", "error", "ping", "version"])
    parser.add_argument("--port-file", required=True)
    arguments = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    temporary = arguments.port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write(str(listener.getsockname()[1]))
    os.replace(temporary, arguments.port_file)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, arguments.mode), daemon=True).start()


if __name__ == "__main__":
    main()

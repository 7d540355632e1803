#!/usr/bin/env python3
"""Many viewers of a `web` node's /events at once, for `make bench` (scripts/bench-web.sh).

--sse N viewers read Server-Sent Events and --ws N read a WebSocket (handshake and frames by hand, on asyncio: one
thread for all of them, so the load is the server's, not this script's); --stalled N connect and never read (with
a small receive buffer), as a viewer whose tab froze. Runs until every reading viewer has seen the end of the
stream. Prints one JSON object: viewers, the final results each got, how many got every one, and whether the
stalled ones were disconnected by the server.
"""
import argparse
import asyncio
import base64
import json
import os
import socket
import struct
import sys
import urllib.parse


async def open_stream(host, port, path, websocket, rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
    if websocket:
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
    else:
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n"
    writer.write(request.encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return reader, writer, status


async def sse_viewer(host, port, path, stats):
    reader, writer, status = await open_stream(host, port, path, False)
    finals, ended = 0, False
    # Chunked transfer: chunk-size lines, then the chunk; messages are "data: ...\n\n" inside.
    try:
        while True:
            size_line = await reader.readline()
            if not size_line:
                break
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                break
            chunk = await reader.readexactly(size + 2)
            text = chunk[:-2].decode()
            if text.startswith("event: end"):
                ended = True
            elif text.startswith("data: ") and '"isFinal":true' in text:
                finals += 1
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()
    stats.append({"transport": "sse", "status": status, "finals": finals, "ended": ended})


async def ws_viewer(host, port, path, stats):
    reader, writer, status = await open_stream(host, port, path, True)
    finals, ended = 0, False
    try:
        while True:
            b0, b1 = await reader.readexactly(2)
            length = b1 & 0x7F
            if length == 126:
                length = struct.unpack("!H", await reader.readexactly(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", await reader.readexactly(8))[0]
            payload = await reader.readexactly(length)
            opcode = b0 & 0x0F
            if opcode == 8:
                ended = payload[2:] == b"end"
                break
            if opcode == 9:  # ping: answer with a masked pong
                mask = os.urandom(4)
                writer.write(bytes([0x8A, 0x80 | len(payload)]) + mask
                             + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))
            elif opcode == 1 and b'"isFinal":true' in payload:
                finals += 1
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()
    stats.append({"transport": "ws", "status": status, "finals": finals, "ended": ended})


async def stalled_viewer(host, port, path, stats, done):
    # A plain socket, never read: asyncio's streams would read into their own buffer behind the script's back.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    await done.wait()
    # At the end: read what the server had sent; EOF means the server closed the connection (it dropped the viewer).
    sock.settimeout(5)
    data, closed = b"", False
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                closed = True
                break
            data += chunk
    except (socket.timeout, ConnectionError):
        pass
    sock.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    stats.append({"transport": "stalled", "status": status, "closed_by_server": closed,
                  "got_end": b"event: end" in data})


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--sse", type=int, default=50)
    ap.add_argument("--ws", type=int, default=10)
    ap.add_argument("--stalled", type=int, default=1)
    args = ap.parse_args()
    u = urllib.parse.urlparse(args.url)
    path = "/events" + (f"?{u.query}" if u.query else "")
    stats, stalled_stats = [], []
    done = asyncio.Event()
    stalled = [asyncio.create_task(stalled_viewer(u.hostname, u.port, path, stalled_stats, done))
               for _ in range(args.stalled)]
    health = {"dropped_while_running": 0, "max_queued": 0}
    async def poll_health():
        # The server's own count of viewers it disconnected, while the stream runs.
        while not done.is_set():
            try:
                reader, writer = await asyncio.open_connection(u.hostname, u.port)
                writer.write(f"GET /healthz HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nConnection: close\r\n\r\n".encode())
                body = (await reader.read()).split(b"\r\n\r\n", 1)[1]
                writer.close()
                h = json.loads(body)
                if h.get("status") == "live":
                    health["dropped_while_running"] = max(health["dropped_while_running"], h["dropped"])
                    health["max_queued"] = max(health["max_queued"], h["maxQueued"])
            except (OSError, ValueError, IndexError):
                pass
            await asyncio.sleep(1)
    poller = asyncio.create_task(poll_health())
    readers = [sse_viewer(u.hostname, u.port, path, stats) for _ in range(args.sse)]
    readers += [ws_viewer(u.hostname, u.port, path, stats) for _ in range(args.ws)]
    print(json.dumps({"connected": len(readers) + len(stalled)}), file=sys.stderr, flush=True)
    await asyncio.gather(*readers)
    done.set()
    await asyncio.gather(*stalled)
    poller.cancel()
    counts = [s["finals"] for s in stats]
    most = max(counts) if counts else 0
    print(json.dumps({
        "viewers": len(stats),
        "ended": sum(s["ended"] for s in stats),
        "finals_max": most,
        "finals_min": min(counts) if counts else 0,
        "viewers_with_every_final": sum(c == most for c in counts),
        "stalled": len(stalled_stats),
        "stalled_closed_by_server": sum(s["closed_by_server"] for s in stalled_stats),
        "dropped_while_running": health["dropped_while_running"],
        "max_queued": health["max_queued"],
    }))


if __name__ == "__main__":
    asyncio.run(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""count_proxy.py: an HTTP/1.1 reverse proxy that counts S3 requests and bytes, and can throttle
the link, for scripts/bench_cache.sh.

    python3 scripts/bench/count_proxy.py --upstream http://127.0.0.1:PORT
        [--listen 127.0.0.1] [--port 0] [--port-file F] [--rate BITS_PER_S]

Requests go upstream verbatim (Host header unchanged, so SigV4 signatures still verify), over
one upstream keep-alive connection per client connection; client keep-alive works. When the
upstream closes after an answer (moto's server sends `Connection: close` every time), the
client is not told: its connection stays open, as with S3, and the next request goes up on a new
connection. An `Expect: 100-continue` is answered here (Expect is not signed). On start it
prints `COUNT_PROXY_URL=http://HOST:PORT` (and writes the port to --port-file).

Counted per request: its method, and its class:
    LIST   a GET on a bucket (no key) whose query has `list-type` or `prefix`
    RANGE  a GET with a Range header          GET   any other GET
    HEAD   a HEAD                             PUT   a PUT
    OTHER  anything else (POST, DELETE, ...)
and per method and per class the response body bytes relayed (what crossed the link; heads not
included).

--rate N throttles the link to N bits/s in total, in both directions and heads included: one
token bucket (a virtual clock with 10 ms of burst) shared by every connection. 0: unthrottled.

Control API (on the proxy itself; never forwarded nor counted):
    GET    /__count__   JSON {"requests", "bytes", "by_method": {M: {"requests", "bytes"}},
                              "by_class": {C: {...}}, "connections" (client connections
                              accepted), "rate_bits_per_s"}
    DELETE /__count__   zero the counters (answers the JSON of the zeroed counters)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import sys
import time
from urllib.parse import parse_qs, urlsplit

CHUNK = 64 * 1024  # relayed (and throttled) in pieces of at most this
BURST_S = 0.010


class Closed(Exception):
    """The peer closed the connection between messages."""


class Link:
    """The shared link: a virtual clock of when it is next free. Sending n bytes books n*8/rate
    seconds after the last booking; a sender waits while its booking ends more than BURST_S ahead
    of now. Bookings are taken in call order, so connections share the rate fairly."""

    def __init__(self, bits_per_s: float):
        self.bytes_per_s = bits_per_s / 8
        self.free_at = 0.0

    async def send(self, n: int) -> None:
        if self.bytes_per_s <= 0:
            return
        now = time.monotonic()
        self.free_at = max(self.free_at, now) + n / self.bytes_per_s
        wait = self.free_at - now - BURST_S
        if wait > 0:
            await asyncio.sleep(wait)


class Head:
    """A request or response head: the first line and the header lines, in order."""

    def __init__(self, first: str, headers: list[tuple[str, str]], raw: bytes):
        self.first, self.headers, self.raw = first, headers, raw

    def get(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)

    def remove(self, name: str) -> None:
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        self.raw = (self.first + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in self.headers) + "\r\n").encode("latin-1")


async def read_head(reader: asyncio.StreamReader) -> Head:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            raise Closed() from None
        raise
    lines = raw.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            headers.append((k.strip(), v.strip()))
    return Head(lines[0], headers, raw)


async def read_chunk(r: asyncio.StreamReader) -> tuple[int, bytes]:
    """(size, bytes) of one chunk of a chunked body, framing included; the last one (size 0)
    with its trailers."""
    line = await r.readuntil(b"\r\n")
    size = int(line.split(b";")[0].strip(), 16)
    if size:
        return size, line + await r.readexactly(size + 2)
    while (t := await r.readuntil(b"\r\n")) != b"\r\n":
        line += t
    return 0, line + b"\r\n"


async def read_body(r: asyncio.StreamReader, head: Head) -> bytes:
    """A request's whole body (chunked framing kept); empty without Content-Length or chunks."""
    if "chunked" in (head.get("Transfer-Encoding") or "").lower():
        out = b""
        while True:
            size, data = await read_chunk(r)
            out += data
            if size == 0:
                return out
    return await r.readexactly(int(head.get("Content-Length") or 0))


def request_class(method: str, target: str, head: Head) -> str:
    if method == "GET":
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=True)
        if "/" not in url.path.strip("/") and ("list-type" in query or "prefix" in query):
            return "LIST"
        return "RANGE" if head.get("Range") else "GET"
    return method if method in ("HEAD", "PUT") else "OTHER"


class Counters:
    def __init__(self):
        self.zero()

    def zero(self) -> None:
        self.by_method: dict[str, dict[str, int]] = {}
        self.by_class: dict[str, dict[str, int]] = {}
        self.connections = 0

    def request(self, method: str, cls: str) -> tuple[dict, dict]:
        m = self.by_method.setdefault(method, {"requests": 0, "bytes": 0})
        c = self.by_class.setdefault(cls, {"requests": 0, "bytes": 0})
        m["requests"] += 1
        c["requests"] += 1
        return m, c

    def json(self, rate: float) -> dict:
        return {"requests": sum(v["requests"] for v in self.by_method.values()),
                "bytes": sum(v["bytes"] for v in self.by_method.values()),
                "by_method": self.by_method, "by_class": self.by_class,
                "connections": self.connections, "rate_bits_per_s": rate}


class Proxy:
    def __init__(self, upstream: str, rate: float):
        m = re.match(r"^http://([^/:]+)(?::(\d+))?/?$", upstream)
        if not m:
            raise SystemExit("--upstream must be http://HOST[:PORT]")
        self.up_host, self.up_port = m.group(1), int(m.group(2) or 80)
        self.rate = rate
        self.link = Link(rate)
        self.counters = Counters()

    async def write(self, w: asyncio.StreamWriter, data: bytes) -> None:
        await self.link.send(len(data))
        w.write(data)
        await w.drain()

    async def relay_body(self, r: asyncio.StreamReader, w: asyncio.StreamWriter, head: Head) -> int:
        """Copies a response body from r to w (chunked framing kept; without a length, until r
        closes); its length in bytes."""
        if "chunked" in (head.get("Transfer-Encoding") or "").lower():
            n = 0
            while True:
                size, data = await read_chunk(r)
                await self.write(w, data)
                n += size
                if size == 0:
                    return n
        length = head.get("Content-Length")
        left = int(length) if length is not None else -1
        n = 0
        while left != 0:  # -1: until the upstream closes
            data = await r.read(CHUNK if left < 0 else min(left, CHUNK))
            if not data:
                if left > 0:
                    raise ConnectionError("upstream closed mid-body")
                break
            await self.write(w, data)
            n += len(data)
            left = left - len(data) if left > 0 else left
        return n

    async def control(self, method: str, cw: asyncio.StreamWriter) -> None:
        status = 200
        if method == "DELETE":
            self.counters.zero()
        elif method != "GET":
            status = 405
        body = json.dumps(self.counters.json(self.rate) if status == 200 else {"error": "GET or DELETE"}).encode()
        cw.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                 % (status, b"OK" if status == 200 else b"Method Not Allowed", len(body)) + body)
        await cw.drain()

    async def upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        ur, uw = await asyncio.open_connection(self.up_host, self.up_port, limit=1 << 20)
        uw.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return ur, uw

    async def handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        self.counters.connections += 1
        cw.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up = None
        try:
            while True:
                try:
                    req = await read_head(cr)
                except (Closed, asyncio.IncompleteReadError, ConnectionError):
                    return
                method, target, _ = req.first.split(" ", 2)
                client_close = (req.get("Connection") or "").lower() == "close"
                if (req.get("Expect") or "").lower() == "100-continue":
                    # Answered here, as the body comes through us first; Expect is not signed.
                    req.remove("Expect")
                    await self.write(cw, b"HTTP/1.1 100 Continue\r\n\r\n")
                body = await read_body(cr, req)
                if urlsplit(target).path == "/__count__":
                    await self.control(method, cw)
                    if client_close:
                        return
                    continue
                m, c = self.counters.request(method, request_class(method, target, req))
                up_close = False
                for fresh in (up is None, True):  # a kept connection the upstream closed: once more
                    if fresh:
                        if up is not None:
                            up[1].close()
                        up = await self.upstream()
                    await self.write(up[1], req.raw + body)
                    try:
                        resp = await read_head(up[0])
                        break
                    except (Closed, ConnectionError):
                        if fresh:
                            raise
                while 100 <= (status := int(resp.first.split(" ")[1])) < 200:  # interim answers
                    await self.write(cw, resp.raw)
                    resp = await read_head(up[0])
                has_body = method != "HEAD" and status not in (204, 304)
                framed = resp.get("Content-Length") is not None or "chunked" in (resp.get("Transfer-Encoding") or "")
                if has_body and not framed:  # a body that ends when the upstream closes: so must we
                    client_close = True
                elif (resp.get("Connection") or "").lower() == "close" and not client_close:
                    # moto's server closes after every answer; the client keeps its connection, as
                    # it would with S3, and the next request goes up on a new one.
                    resp.remove("Connection")
                    up_close = True
                await self.write(cw, resp.raw)
                n = await self.relay_body(up[0], cw, resp) if has_body else 0
                m["bytes"] += n
                c["bytes"] += n
                if client_close:
                    return
                if up_close:
                    up[1].close()
                    up = None
        except (Closed, ConnectionError, asyncio.IncompleteReadError, OSError, ValueError) as e:
            print(f"count_proxy: connection ended: {e!r}", file=sys.stderr)
        finally:
            if up is not None:
                up[1].close()
            cw.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", required=True, help="http://HOST:PORT")
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--rate", type=float, default=0.0, help="bits/s for the whole link (0: unthrottled)")
    a = ap.parse_args()
    proxy = Proxy(a.upstream, a.rate)
    server = await asyncio.start_server(proxy.handle, a.listen, a.port, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(a.port_file + ".tmp", a.port_file)
    print(f"COUNT_PROXY_URL=http://{a.listen}:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

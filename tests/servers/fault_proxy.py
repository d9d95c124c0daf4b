#!/usr/bin/env python3
"""fault_proxy.py: an HTTP/1.1 reverse proxy that injects faults, for S3 client tests.

    python3 tests/servers/fault_proxy.py --upstream http://127.0.0.1:PORT
        [--listen 127.0.0.1] [--port 0] [--port-file F] [--fault JSON]...

Sits in front of any plain-HTTP server from tests/servers/ (nginx, moto, ceph, swift).
Requests go upstream verbatim (Host included, so SigV4 signatures still verify), one
upstream keep-alive connection per client connection; client keep-alive works.
On start it prints `FAULT_PROXY_PORT=<port>` and `FAULT_PROXY_URL=http://HOST:PORT` to
stdout (and the port to --port-file).

Control API (on the proxy itself; never forwarded):
    POST   /__fault__   JSON rule or list of rules: added (they apply in order, first match)
    GET    /__fault__   JSON {"rules": [...with "applied"...], "counters": {...}}
    DELETE /__fault__   remove all rules and zero the counters

A rule:
    {"fault": NAME, "count": 1, "method": "GET", "range": null, "path": null, ...params}
      count   how many matching requests get the fault (-1: every one); default 1
      method  only this method (default "GET"; "*" for any)
      range   true: only requests with a Range header; false: only without; null: either
      path    a regular expression searched in the request target
Faults and their parameters:
    reset_mid_body       headers + `fraction` (0.5) of the body, then RST (SO_LINGER 0 close)
    stall                headers + `fraction` (0.5) of the body, then silence for `seconds` (10);
                         then the rest of the body (`then`: "continue", default) or FIN ("close")
    truncate_body        headers (full Content-Length) + `fraction` (0.5) of the body, then FIN
    status_burst         answer `status` (503) with an S3 XML error body (`code`: SlowDown for
                         503/429, InternalError for 500), without going upstream; keep-alive
    wrong_content_range  the Content-Range header is moved by `shift` bytes (default: the
                         range's length, i.e. it names the next range); body unchanged
    etag_change          per object (request path): after the first `after` (1) GETs/HEADs, the
                         object "was overwritten": its ETag header changes for every later
                         response, and a request with If-Match: <old ETag> gets 412
                         PreconditionFailed (as S3 answers), not forwarded. `count` limits how
                         many responses are altered (default -1 here). The body is NOT changed:
                         this simulates the metadata of an overwrite; a client relying on
                         If-Match sees exactly what S3 would send.
Counters: requests, connections, and per fault name the number of times applied.
"""
import argparse
import asyncio
import hashlib
import json
import re
import socket
import struct
import sys
import time

CHUNK = 256 * 1024
FAULTS = ("reset_mid_body", "stall", "truncate_body", "status_burst", "wrong_content_range", "etag_change")
REASONS = {200: "OK", 206: "Partial Content", 400: "Bad Request", 404: "Not Found", 412: "Precondition Failed",
           429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class Closed(Exception):
    pass


def s3_error(status, code, message, resource=""):
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
            '<Resource>%s</Resource><RequestId>faultproxy%d</RequestId></Error>'
            % (code, message, resource, int(time.time() * 1e6))).encode()
    head = ("HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
            "x-amz-request-id: faultproxy\r\n\r\n" % (status, REASONS.get(status, "Error"), len(body))).encode()
    return head + body


class Head:
    """A parsed request or response head; raw header lines kept in order."""

    def __init__(self, first, headers):
        self.first = first
        self.headers = headers  # list of [name, value]

    def get(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def set(self, name, value):
        for h in self.headers:
            if h[0].lower() == name.lower():
                h[1] = value
                return
        self.headers.append([name, value])

    def remove(self, name):
        self.headers = [h for h in self.headers if h[0].lower() != name.lower()]

    def encode(self):
        return (self.first + "\r\n" + "".join("%s: %s\r\n" % (k, v) for k, v in self.headers) + "\r\n").encode("latin-1")


async def read_head(reader):
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            raise Closed() from None
        raise
    except asyncio.LimitOverrunError:
        raise ValueError("header too large") from None
    lines = data.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t" and headers:
            headers[-1][1] += " " + line.strip()
            continue
        k, _, v = line.partition(":")
        headers.append([k.strip(), v.strip()])
    return Head(lines[0], headers)


class Rule:
    def __init__(self, spec):
        self.spec = dict(spec)
        self.fault = spec.get("fault")
        if self.fault not in FAULTS:
            raise ValueError("unknown fault %r (one of %s)" % (self.fault, ", ".join(FAULTS)))
        self.count = int(spec.get("count", -1 if self.fault == "etag_change" else 1))
        self.method = spec.get("method", "GET").upper()
        self.range = spec.get("range")
        self.path = re.compile(spec["path"]) if spec.get("path") else None
        self.applied = 0
        self.seen = {}  # etag_change: GETs/HEADs per path
        self.old_etag = {}  # etag_change: path -> the ETag before the "overwrite"

    def matches(self, req, method, target):
        if self.method != "*" and method != self.method and not (self.fault == "etag_change" and method == "HEAD"):
            return False
        if self.range is not None and bool(req.get("Range")) != bool(self.range):
            return False
        if self.path and not self.path.search(target):
            return False
        return True

    def left(self):
        return self.count < 0 or self.applied < self.count

    def describe(self):
        d = dict(self.spec)
        d.update(applied=self.applied, remaining=(-1 if self.count < 0 else self.count - self.applied))
        return d


class Proxy:
    def __init__(self, upstream):
        m = re.match(r"^http://([^/:]+)(?::(\d+))?/?$", upstream)
        if not m:
            raise SystemExit("--upstream must be http://HOST[:PORT]")
        self.up_host, self.up_port = m.group(1), int(m.group(2) or 80)
        self.rules = []
        self.counters = {"requests": 0, "connections": 0, **{f: 0 for f in FAULTS}}

    # ---- control endpoint ----
    async def control(self, method, body, cw):
        status, out = 200, None
        try:
            if method == "POST":
                spec = json.loads(body or b"{}")
                specs = spec if isinstance(spec, list) else [spec]
                self.rules.extend(Rule(s) for s in specs)
            elif method == "DELETE":
                self.rules.clear()
                for k in self.counters:
                    self.counters[k] = 0
            elif method != "GET":
                status, out = 405, {"error": "GET, POST or DELETE"}
        except (ValueError, TypeError, re.error) as e:
            status, out = 400, {"error": str(e)}
        if out is None:
            out = {"rules": [r.describe() for r in self.rules], "counters": self.counters}
        data = json.dumps(out, indent=1).encode()
        cw.write(("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                  % (status, REASONS.get(status, "Error"), len(data))).encode() + data)
        await cw.drain()

    def pick(self, req, method, target):
        for r in self.rules:
            if r.left() and r.matches(req, method, target):
                return r
        return None

    # ---- bodies ----
    @staticmethod
    async def read_body(reader, head, is_response=False, method="GET", status=200):
        """The raw body bytes (chunked framing kept) of a request or response."""
        if is_response and (method == "HEAD" or status in (204, 304) or 100 <= status < 200):
            return b""
        te = (head.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = bytearray()
            while True:
                line = await reader.readuntil(b"\r\n")
                out += line
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while True:  # trailers
                        t = await reader.readuntil(b"\r\n")
                        out += t
                        if t == b"\r\n":
                            return bytes(out)
                out += await reader.readexactly(size + 2)
        cl = head.get("Content-Length")
        if cl is not None:
            return await reader.readexactly(int(cl))
        if is_response:
            return await reader.read()  # until close
        return b""

    # ---- one client connection ----
    async def handle(self, cr, cw):
        self.counters["connections"] += 1
        sock = cw.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        up = None
        try:
            while True:
                try:
                    req = await read_head(cr)
                except (Closed, asyncio.IncompleteReadError, ConnectionError):
                    return
                parts = req.first.split(" ")
                if len(parts) != 3:
                    cw.write(s3_error(400, "BadRequest", "bad request line"))
                    await cw.drain()
                    return
                method, target, _ = parts
                if (req.get("Expect") or "").lower() == "100-continue":
                    # answer it ourselves; Expect is not part of a SigV4 signature
                    req.remove("Expect")
                    cw.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = await self.read_body(cr, req)
                client_close = (req.get("Connection") or "").lower() == "close"
                if target.split("?")[0] == "/__fault__":
                    await self.control(method, body, cw)
                    if client_close:
                        return
                    continue
                self.counters["requests"] += 1
                rule = self.pick(req, method, target)
                if rule and rule.fault == "status_burst":
                    rule.applied += 1
                    self.counters["status_burst"] += 1
                    st = int(rule.spec.get("status", 503))
                    code = rule.spec.get("code") or {503: "SlowDown", 429: "SlowDown", 500: "InternalError"}.get(st, "InternalError")
                    msg = "Please reduce your request rate." if code == "SlowDown" else "We encountered an internal error. Please try again."
                    cw.write(s3_error(st, code, msg, target.split("?")[0]))
                    await cw.drain()
                    if client_close:
                        return
                    continue
                key = target.split("?")[0]
                if rule and rule.fault == "etag_change":
                    n = rule.seen[key] = rule.seen.get(key, 0) + 1
                    old = rule.old_etag.get(key)
                    im = req.get("If-Match")
                    if old and n > int(rule.spec.get("after", 1)) and im and im.strip() == old and rule.left():
                        rule.applied += 1
                        self.counters["etag_change"] += 1
                        cw.write(s3_error(412, "PreconditionFailed",
                                          "At least one of the pre-conditions you specified did not hold", key))
                        await cw.drain()
                        continue
                if up is None:
                    up = await asyncio.open_connection(self.up_host, self.up_port)
                    up[1].get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                ur, uw = up
                uw.write(req.encode() + body)
                await uw.drain()
                try:
                    resp = await read_head(ur)
                except (Closed, asyncio.IncompleteReadError, ConnectionError):
                    cw.write(s3_error(502, "BadGateway", "upstream closed the connection"))
                    await cw.drain()
                    up = None
                    continue
                try:
                    status = int(resp.first.split(" ")[1])
                except (IndexError, ValueError):
                    status = 502
                up_close = (resp.get("Connection") or "").lower() == "close" or (
                    resp.get("Content-Length") is None and "chunked" not in (resp.get("Transfer-Encoding") or "").lower()
                    and method != "HEAD" and status not in (204, 304))
                if rule and rule.fault == "etag_change":
                    self.etag_rewrite(rule, key, resp)
                elif rule and rule.fault == "wrong_content_range" and resp.get("Content-Range"):
                    m = re.match(r"bytes (\d+)-(\d+)/(\S+)", resp.get("Content-Range"))
                    if m:
                        a, b = int(m.group(1)), int(m.group(2))
                        shift = int(rule.spec.get("shift", b - a + 1))
                        resp.set("Content-Range", "bytes %d-%d/%s" % (a + shift, b + shift, m.group(3)))
                        rule.applied += 1
                        self.counters["wrong_content_range"] += 1
                cut = rule and rule.fault in ("reset_mid_body", "stall", "truncate_body") and status < 300 \
                    and method != "HEAD"
                if not cut:
                    cw.write(resp.encode())
                    await self.relay(ur, cw, resp, method, status)
                    if up_close:
                        uw.close()
                        up = None
                    if client_close or up_close:
                        return
                    continue
                # body-cutting faults: read the whole upstream body (we know its length)
                body = await self.read_body(ur, resp, True, method, status)
                if up_close:
                    uw.close()
                    up = None
                rule.applied += 1
                self.counters[rule.fault] += 1
                frac = float(rule.spec.get("fraction", 0.5))
                part = int(len(body) * frac)
                cw.transport.set_write_buffer_limits(0)
                cw.write(resp.encode() + body[:part])
                await cw.drain()
                if rule.fault == "stall":
                    await asyncio.sleep(float(rule.spec.get("seconds", 10)))
                    if rule.spec.get("then", "continue") == "continue":
                        cw.write(body[part:])
                        await cw.drain()
                        if client_close or up_close:
                            return
                        continue
                    cw.close()
                    return
                if rule.fault == "truncate_body":
                    await asyncio.sleep(0.05)
                    cw.close()  # FIN after the partial body
                    return
                # reset_mid_body: let the partial body reach the client, then RST
                await asyncio.sleep(0.05)
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                cw.transport.abort()
                return
        except (ConnectionError, asyncio.IncompleteReadError, OSError, ValueError) as e:
            print("fault_proxy: connection ended: %r" % (e,), file=sys.stderr)
        finally:
            if up is not None:
                up[1].close()
            if not cw.transport.is_closing():
                cw.close()

    async def relay(self, ur, cw, resp, method, status):
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            await cw.drain()
            return
        te = (resp.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            cw.write(await self.read_body(ur, resp, True, method, status))
        elif resp.get("Content-Length") is not None:
            left = int(resp.get("Content-Length"))
            while left:
                data = await ur.read(min(left, CHUNK))
                if not data:
                    raise ConnectionError("upstream closed mid-body")
                cw.write(data)
                left -= len(data)
                await cw.drain()
        else:
            while True:
                data = await ur.read(CHUNK)
                if not data:
                    break
                cw.write(data)
                await cw.drain()
        await cw.drain()

    def etag_rewrite(self, rule, key, resp):
        etag = resp.get("ETag")
        if not etag:
            return
        if key not in rule.old_etag:
            rule.old_etag[key] = etag
        if rule.seen.get(key, 0) > int(rule.spec.get("after", 1)) and rule.left():
            new = '"%s"' % hashlib.md5((etag + "/overwritten").encode()).hexdigest()
            resp.set("ETag", new)
            rule.applied += 1
            self.counters["etag_change"] += 1


async def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", required=True, help="http://HOST:PORT")
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--fault", action="append", default=[], help="a rule as JSON (repeatable)")
    a = ap.parse_args()
    proxy = Proxy(a.upstream)
    for f in a.fault:
        spec = json.loads(f)
        proxy.rules.extend(Rule(s) for s in (spec if isinstance(spec, list) else [spec]))
    server = await asyncio.start_server(proxy.handle, a.listen, a.port, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        import os
        os.replace(a.port_file + ".tmp", a.port_file)
    print("FAULT_PROXY_PORT=%d\nFAULT_PROXY_URL=http://%s:%d" % (port, a.listen, port), flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

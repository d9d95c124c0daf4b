#!/usr/bin/env python3
"""boto3 baseline with the options of common.h (path-style URL http(s)://HOST:PORT/BUCKET/KEY).

Full object: download_fileobj with TransferConfig(max_concurrency=N, 16 MiB parts) into a
seekable writer over one preallocated bytearray (a non-seekable discarding writer hangs
s3transfer 0.19 on 256 MiB+). Ranges: N threads of get_object(Range=...), each body copied into its
slot of one bytearray. Prints bytes=, wall_s=, user_s=, sys_s= (getrusage of this process
over the timed region; the interpreter's start and imports are not counted).
"""
import argparse
import concurrent.futures
import os
import resource
import time

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config


class Dest:
    """A seekable writer into one preallocated buffer (s3transfer writes parts at offsets)."""

    def __init__(self, size):
        self.buf = bytearray(size)
        self.mv = memoryview(self.buf)
        self.pos = self.n = 0

    def seek(self, pos, whence=0):
        self.pos = pos if whence == 0 else self.pos + pos
        return self.pos

    def tell(self):
        return self.pos

    def write(self, b):
        self.mv[self.pos:self.pos + len(b)] = b
        self.pos += len(b)
        self.n += len(b)
        return len(b)


def ranges(size, n, rb, seed):
    x = (seed * 0x9E3779B97F4A7C15 + 1) & (2**64 - 1)
    out = []
    for _ in range(n):
        x ^= x >> 12
        x ^= (x << 25) & (2**64 - 1)
        x ^= x >> 27
        r = (x * 0x2545F4914F6CDD1D) & (2**64 - 1)
        out.append(r % (size - rb + 1))
    return out


def parse_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--size", type=parse_bytes, required=True)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--ranges", type=int, default=0)
    ap.add_argument("--range-bytes", type=parse_bytes, default=16 << 20)
    ap.add_argument("--chunk", type=parse_bytes, default=16 << 20)
    ap.add_argument("--ca-file")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    scheme, rest = a.url.split("://", 1)
    hostport, bucket, key = rest.split("/", 2)
    s3 = boto3.client("s3", endpoint_url="%s://%s" % (scheme, hostport), region_name="us-east-1",
                      aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "onecopytest"),
                      aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "onecopytestsecret"),
                      verify=a.ca_file if scheme == "https" else None,
                      config=Config(s3={"addressing_style": "path"}, max_pool_connections=max(10, a.connections),
                                    response_checksum_validation="when_required"))
    t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    if a.ranges:
        dest = bytearray(a.ranges * a.range_bytes)
        offs = ranges(a.size, a.ranges, a.range_bytes, a.seed)

        def one(i):
            o = offs[i]
            body = s3.get_object(Bucket=bucket, Key=key, Range="bytes=%d-%d" % (o, o + a.range_bytes - 1))["Body"].read()
            assert len(body) == a.range_bytes
            dest[i * a.range_bytes:(i + 1) * a.range_bytes] = body
            return len(body)

        with concurrent.futures.ThreadPoolExecutor(a.connections) as ex:
            n = sum(ex.map(one, range(a.ranges)))
    else:
        w = Dest(a.size)
        cfg = TransferConfig(max_concurrency=a.connections,
                             multipart_threshold=a.chunk, multipart_chunksize=a.chunk)
        s3.download_fileobj(bucket, key, w, Config=cfg)
        n = w.n
        assert n == a.size, (n, a.size)
    t1, r1 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    print("bytes=%d wall_s=%.4f user_s=%.4f sys_s=%.4f" % (n, t1 - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime))


if __name__ == "__main__":
    main()

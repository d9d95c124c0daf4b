#!/usr/bin/env python3
"""Real S3 calls against a server started by tests/servers/*.sh.

    .venv/bin/python tests/servers/s3_smoke.py STATE_DIR [--size BYTES]

Reads STATE_DIR/env; for S3_ENDPOINT and, if present, S3_ENDPOINT_TLS (verified against
CA_FILE): create a bucket, put an object, ranged get (checked byte for byte), list, delete.
Prints one line per endpoint with the time it took; exit 1 on any mismatch.
"""
import argparse
import os
import sys
import time
import uuid

import boto3
from botocore.config import Config


def env_of(state):
    env = {}
    with open(os.path.join(state, "env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v
    return env


def smoke(endpoint, env, size, verify):
    t0 = time.monotonic()
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, region_name=env.get("AWS_REGION", "us-east-1"),
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        verify=verify, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                     # botocore >= 1.36 would stream PUT bodies aws-chunked with
                                     # a CRC trailer over HTTPS, which Ceph Pacific rejects
                                     request_checksum_calculation="when_required",
                                     response_checksum_validation="when_required"))
    bucket = "smoke-" + uuid.uuid4().hex[:12]
    body = os.urandom(size)
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="dir/obj.bin", Body=body)
    a, b = size // 3, size // 3 + size // 4
    got = s3.get_object(Bucket=bucket, Key="dir/obj.bin", Range=f"bytes={a}-{b}")
    data = got["Body"].read()
    assert data == body[a:b + 1], "ranged GET returned the wrong bytes"
    assert got["ContentRange"] == f"bytes {a}-{b}/{size}", got["ContentRange"]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["dir/obj.bin"], keys
    head = s3.head_object(Bucket=bucket, Key="dir/obj.bin")
    assert head["ContentLength"] == size
    s3.delete_object(Bucket=bucket, Key="dir/obj.bin")
    s3.delete_bucket(Bucket=bucket)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("state")
    ap.add_argument("--size", type=int, default=3 * 1024 * 1024 + 17)
    a = ap.parse_args()
    env = env_of(a.state)
    os.environ.pop("AWS_CA_BUNDLE", None)  # may be set machine-wide: use ours
    for key, verify in (("S3_ENDPOINT", True), ("S3_ENDPOINT_TLS", env.get("CA_FILE"))):
        if key in env:
            dt = smoke(env[key], env, a.size, verify)
            print(f"ok {key}={env[key]}: bucket, put {a.size} B, ranged get, list, head, delete in {dt:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by scripts/bench/daemon_bench.py and scripts/bench/e2e_bench.py: CPU time of
other processes from /proc, S3 uploads with boto3, medians and Markdown tables."""

from __future__ import annotations

import os
import resource
import statistics
from pathlib import Path

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """user + system CPU seconds of process `pid` (all its threads) from /proc/PID/stat; 0.0
    when it is gone. Children it has reaped are not included (cutime/cstime)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime, stime (fields 14 and 15)


def procs_cpu(pids) -> float:
    return sum(proc_cpu(p) for p in pids if p)


def self_cpu() -> float:
    """CPU seconds of this process (all threads) plus every child it has waited for."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def s3_client():
    """boto3 S3 client for the test server in $S3_ENDPOINT (path-style, checksums only when
    required: Ceph Pacific rejects the aws-chunked uploads newer boto3 sends by default)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", endpoint_url=os.environ["S3_ENDPOINT"], region_name=os.environ.get("AWS_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path"}, request_checksum_calculation="when_required",
                      response_checksum_validation="when_required"))


def ensure_bucket(s3, bucket: str) -> None:
    try:
        s3.head_bucket(Bucket=bucket)
    except Exception:  # noqa: BLE001 - 404 or 403 alike: try to create it
        s3.create_bucket(Bucket=bucket)


def upload_dir(s3, local: Path, bucket: str, prefix: str) -> list[str]:
    """Uploads every file of `local` (not recursive) to s3://bucket/prefix/NAME unless an object
    of the same size is there; returns the s3:// URLs in name order."""
    from boto3.s3.transfer import TransferConfig

    have = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for o in page.get("Contents", []):
            have[o["Key"]] = o["Size"]
    cfg = TransferConfig(multipart_threshold=64 << 20, multipart_chunksize=64 << 20, max_concurrency=4)
    urls = []
    for p in sorted(Path(local).iterdir()):
        if not p.is_file():
            continue
        key = f"{prefix}/{p.name}"
        if have.get(key) != p.stat().st_size:
            s3.upload_file(str(p), bucket, key, Config=cfg)
        urls.append(f"s3://{bucket}/{key}")
    return urls


def delete_prefix(s3, bucket: str, prefix: str) -> None:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec: str = ".3f", none: str = "—") -> str:
    return none if x is None else format(x, spec)


def ratio(a, b) -> str:
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)

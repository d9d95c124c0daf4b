# SPDX-License-Identifier: Apache-2.0
"""The node's caches in onecopyd over moto (tests/servers/moto.sh): the byte cache
(format/byte_cache.hpp) in memory and on disk, the metadata cache, dataset indexes and their
manifests (net/dataset.hpp), and `onecopy index`, `cache clear` and `prefetch`.

What each test holds to: no stale byte after an object changes, in either tier; a client without
the grant is refused whatever the cache holds; a cache directory that was cut off mid-write,
corrupted, filled or failing never changes a row; many clients at once fetch each range once;
a manifest that lies never produces a wrong row."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
from test_daemon import ROOT, Daemon


CLI = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build")) / "client" / "onecopy"
SERVERS = ROOT / "tests" / "servers"


def table(first: int, n: int) -> pa.Table:
    ids = np.arange(first, first + n, dtype=np.int64)
    return pa.table({"id": pa.array(ids), "word": pa.array([f"w{i}" for i in ids])})


def put(s3, bucket: str, key: str, t: pa.Table, tmp: Path) -> None:
    local = tmp / key.replace("/", "_")
    vx.io.write(t, str(local))
    s3.upload_file(str(local), bucket, key)


def ids_of(f, **kw) -> list[int]:
    return pa.table(f.scan(columns=["id"], **kw)).column("id").to_pylist()


def start(tmp: Path, env: dict, name: str = "d", **extra) -> Daemon:
    run = tmp / name
    run.mkdir(exist_ok=True)
    return Daemon(run, env=dict(env, **{k: str(v) for k, v in extra.items()}))


def cache_status(d: Daemon) -> dict:
    return {k: v for k, v in d.client.status().items() if k.startswith(("cache_", "metadata_", "manifest_"))}


def test_a_second_read_and_a_second_client_fetch_nothing(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    put(s3, bucket, "a.vortex", table(0, 30_000), tmp_path)
    uri = f"s3://{bucket}/a.vortex"
    d = start(tmp_path, env, ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    try:
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(30_000))
        first = cache_status(d)
        assert first["cache_misses"] > 0 and first["cache_bytes_from_store"] > 0
        other = onecopy.Client(d.sock)  # another connection, as another process's would be
        assert pa.table(other.scan_stream(uri, columns=["id"])).column("id").to_pylist() == list(range(30_000))
        second = cache_status(d)
        assert second["cache_bytes_from_store"] == first["cache_bytes_from_store"]
        assert second["cache_hits"] > first["cache_hits"]
        # The footer was not read again: its parsed form came from the metadata cache.
        assert second["metadata_cache_hits"] > first["metadata_cache_hits"]
    finally:
        d.stop()


def test_a_changed_object_is_read_again_from_memory_and_from_disk(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    uri = f"s3://{bucket}/c.vortex"
    cache_dir = tmp_path / "cache"
    put(s3, bucket, "c.vortex", table(0, 5000), tmp_path)
    d = start(tmp_path, env, ONECOPY_CACHE_DIR=cache_dir, ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    try:
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(5000))
        put(s3, bucket, "c.vortex", table(100_000, 7000), tmp_path)  # same key, new ETag
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(100_000, 107_000))
    finally:
        d.stop()
    assert list(cache_dir.glob("*.ocb")), "the disk tier kept nothing"
    # A restart: memory is empty, the disk holds both versions' ranges; only the new one is served.
    put(s3, bucket, "c.vortex", table(200_000, 6000), tmp_path)
    d = start(tmp_path, env, "d2", ONECOPY_CACHE_DIR=cache_dir, ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    try:
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(200_000, 206_000))
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(200_000, 206_000))
    finally:
        d.stop()


def test_the_disk_tier_serves_epoch_two_after_a_restart(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    for i in range(3):
        put(s3, bucket, f"ds/p{i}.vortex", table(i * 4000, 4000), tmp_path)
    cache_dir = tmp_path / "cache"
    grants = {"ONECOPY_DAEMON_S3_GRANTS": f"*: s3://{bucket}/"}
    d = start(tmp_path, env, ONECOPY_CACHE_DIR=cache_dir, **grants)
    try:
        ds = onecopy.Client(d.sock).dataset_index(f"s3://{bucket}/ds/")
        got = [i for f in ds["files"] for i in ids_of(onecopy.open(f["uri"], daemon=d.sock))]
        assert got == list(range(12_000))
        fetched = cache_status(d)["cache_bytes_from_store"]
    finally:
        d.stop()  # SIGTERM: the writes queued so far finish first
    d = start(tmp_path, env, "d2", ONECOPY_CACHE_DIR=cache_dir, **grants)
    try:
        got = [i for f in ds["files"] for i in ids_of(onecopy.open(f["uri"], daemon=d.sock))]
        assert got == list(range(12_000))
        s = cache_status(d)
        assert s["cache_bytes_from_store"] == 0 and s["cache_bytes_from_disk"] == fetched
        assert s["cache_disk_on"] == 1
    finally:
        d.stop()


def test_a_killed_daemon_and_a_corrupted_cache_file_lose_nothing(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    put(s3, bucket, "k.vortex", table(0, 40_000), tmp_path)
    uri = f"s3://{bucket}/k.vortex"
    cache_dir = tmp_path / "cache"
    grants = {"ONECOPY_DAEMON_S3_GRANTS": f"*: s3://{bucket}/"}
    d = start(tmp_path, env, ONECOPY_CACHE_DIR=cache_dir, **grants)
    assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(40_000))
    d.proc.send_signal(signal.SIGKILL)  # whatever the writer was doing is cut off
    d.proc.wait(10)
    d.notify.close()
    files = sorted(cache_dir.glob("*.ocb"))
    assert files
    # By hand: one entry's bytes flipped, another truncated, and a half-written leftover.
    with open(files[0], "r+b") as f:
        f.seek(-5, os.SEEK_END)
        f.write(b"\xff\xff\xff\xff\xff")
    if len(files) > 1:
        os.truncate(files[1], os.path.getsize(files[1]) // 2)
    (cache_dir / (files[0].name + ".tmp.4242")).write_bytes(b"half")
    d = start(tmp_path, env, "d2", ONECOPY_CACHE_DIR=cache_dir, **grants)
    try:
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(40_000))
        s = cache_status(d)
        assert s["cache_disk_dropped"] >= 1
        assert s["cache_bytes_from_store"] > 0  # what was dropped came from S3 again
        assert not list(cache_dir.glob("*.tmp.*"))
    finally:
        d.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_turns_the_tier_off_and_scans_go_on(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    put(s3, bucket, "full.vortex", table(0, 200_000), tmp_path)  # far more than the tmpfs holds
    uri = f"s3://{bucket}/full.vortex"
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        d = start(tmp_path, env, ONECOPY_CACHE_DIR=mount, ONECOPY_CACHE_DISK_BYTES="1GiB",
                  ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
        try:
            for _ in range(2):
                assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(200_000))
            deadline = time.time() + 10
            while cache_status(d)["cache_disk_on"] and time.time() < deadline:
                time.sleep(0.1)  # the writer thread meets the full disk after the scan
            s = cache_status(d)
            assert s["cache_disk_on"] == 0 and s["cache_disk_errors"] >= 1
            assert "the disk tier is off" in d.log.read_text()
            assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(200_000))
        finally:
            d.stop()
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_eight_clients_at_once_fetch_each_range_once(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    for i in range(4):
        put(s3, bucket, f"many/p{i}.vortex", table(i * 20_000, 20_000), tmp_path)
    grants = {"ONECOPY_DAEMON_S3_GRANTS": f"*: s3://{bucket}/"}
    pattern = f"s3://{bucket}/many/"

    def read_all(sock: str) -> list[int]:
        files = onecopy.Client(sock).dataset_index(pattern)["files"]
        return [i for f in files for i in ids_of(onecopy.open(f["uri"], daemon=sock))]

    d = start(tmp_path, env, **grants)
    try:
        assert read_all(d.sock) == list(range(80_000))
        once = cache_status(d)["cache_bytes_from_store"]
    finally:
        d.stop()
    d = start(tmp_path, env, "d2", **grants)
    try:
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: read_all(d.sock), range(8)))
        assert all(r == list(range(80_000)) for r in results)
        s = cache_status(d)
        assert s["cache_bytes_from_store"] == once, s
    finally:
        d.stop()


def test_a_client_without_the_grant_is_refused_after_another_warmed_the_cache(moto_bucket, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another user")
    from test_authority import NOBODY, as_nobody
    from test_hostile import TEST_CLIENT

    bucket, s3, env = moto_bucket
    put(s3, bucket, "team/x.vortex", table(0, 3000), tmp_path)
    uri = f"s3://{bucket}/team/x.vortex"
    where = Path(tempfile.mkdtemp(prefix="onecopy-cache-authority-", dir="/tmp"))
    os.chmod(where, 0o755)
    shutil.copy2(TEST_CLIENT, where / "client")
    os.chmod(where / "client", 0o755)
    try:
        d = start(where, env, ONECOPY_DAEMON_S3_GRANTS=f"uid=0: s3://{bucket}/")
        os.chmod(d.sock, 0o666)
        try:
            assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(3000))  # root warms it
            assert cache_status(d)["cache_memory_bytes"] > 0
            theirs = as_nobody(where, d.sock, "scan", uri)
            assert theirs.returncode == 1 and "error denied" in theirs.stdout, theirs.stdout
            listing = as_nobody(where, d.sock, "list", f"s3://{bucket}/team/")
            assert listing.returncode == 1 and "error denied" in listing.stdout
            # Clearing the node's cache is an operator's act.
            cleared = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                      str(CLI), "cache", "clear", "--socket", d.sock],
                                     capture_output=True, text=True, timeout=60)
            assert cleared.returncode != 0 and "only root" in cleared.stderr
            assert cache_status(d)["cache_memory_bytes"] > 0
            ok = subprocess.run([str(CLI), "cache", "clear", "--socket", d.sock], capture_output=True,
                                text=True, timeout=60)
            assert ok.returncode == 0 and "cleared" in ok.stdout
            assert cache_status(d)["cache_memory_bytes"] == 0
        finally:
            d.stop()
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_manifest_plans_a_prefix_with_one_list_and_one_get(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    for i in range(6):
        put(s3, bucket, f"ix/p{i}.vortex", table(i * 1000, 1000 + i), tmp_path)
    prefix = f"s3://{bucket}/ix/"
    grants = {"ONECOPY_DAEMON_S3_GRANTS": f"*: s3://{bucket}/"}
    index = subprocess.run([str(CLI), "index", prefix, "--in-process"], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, ONECOPY_PYTHON=sys.executable))
    assert index.returncode == 0, index.stderr
    assert "6 files" in index.stdout
    d = start(tmp_path, env, **grants)  # a fresh daemon: nothing cached
    try:
        before = d.client.status()["s3_requests"]
        got = d.client.dataset_index(prefix, 500)
        assert d.client.status()["s3_requests"] - before <= 3  # LIST, and the manifest's footer and data
        assert got["manifest"] == prefix + "_onecopy/manifest.vortex"
        assert got["from_manifest"] == 6 and got["fallbacks"] == 0
        assert [f["rows"] for f in got["files"]] == [1000 + i for i in range(6)]
        assert got["files"][0]["units"] == [(0, 500), (500, 1000)]
        # The manifest is not data: neither a listing nor an index names it.
        assert all("_onecopy" not in u for u in d.client.list(prefix))
        assert all("_onecopy" not in f["uri"] for f in got["files"])
    finally:
        d.stop()


def test_a_lying_manifest_never_produces_wrong_rows(moto_bucket, tmp_path):
    from onecopy.index import MANIFEST, manifest_table

    bucket, s3, env = moto_bucket
    prefix = f"s3://{bucket}/lie/"
    for i in range(4):
        put(s3, bucket, f"lie/p{i}.vortex", table(i * 1000, 1000), tmp_path)
    from onecopy._native import dataset_index as in_process_dataset
    honest = in_process_dataset(prefix, footers=True)  # what `onecopy index` would write
    t = manifest_table(prefix, honest)
    rows = t.column("rows").to_pylist()
    rows[0] = 999_999  # a wrong row count
    t = t.set_column(t.schema.get_field_index("rows"), "rows", pa.array(rows, pa.uint64()))
    t = t.filter(pa.array([k != "p1.vortex" for k in t.column("key").to_pylist()]))  # a missing file
    local = tmp_path / "manifest.vortex"
    vx.io.write(t, str(local))
    s3.upload_file(str(local), bucket, "lie/" + MANIFEST)
    put(s3, bucket, "lie/p2.vortex", table(50_000, 1500), tmp_path)  # a stale ETag for p2
    d = start(tmp_path, env, ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    try:
        got = d.client.dataset_index(prefix, 10_000)
        assert [f["rows"] for f in got["files"]] == [1000, 1000, 1500, 1000]
        assert got["from_manifest"] == 2 and got["fallbacks"] == 2
        assert cache_status(d)["manifest_fallbacks"] == 2
        import onecopy.torch as ot
        ds = ot.Dataset(prefix, columns=["id"], batch_rows=256, shuffle=False, socket=d.sock)
        seen = sorted(int(i) for b in ds for i in b["id"])
        assert seen == sorted([*range(0, 2000), *range(3000, 4000), *range(50_000, 51_500)])
    finally:
        d.stop()
    # A manifest that is not one (another table) is passed over, with the same rows.
    vx.io.write(pa.table({"x": [1, 2]}), str(local))
    s3.upload_file(str(local), bucket, "lie/" + MANIFEST)
    d = start(tmp_path, env, "d2", ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    try:
        got = d.client.dataset_index(prefix)
        assert got["manifest"] == "" and got["fallbacks"] == 4
        assert [f["rows"] for f in got["files"]] == [1000, 1000, 1500, 1000]
        assert "not used" in d.log.read_text()
    finally:
        d.stop()


def test_an_in_process_cache_dir_serves_the_next_process_without_the_store(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    put(s3, bucket, "ip.vortex", table(0, 20_000), tmp_path)
    uri = f"s3://{bucket}/ip.vortex"
    cache_dir = tmp_path / "cache"
    code = f"""
import onecopy, pyarrow as pa
f = onecopy.open({uri!r}, daemon=False)
print(pa.table(f.scan(columns=["id"])).column("id").to_pylist() == list(range(20_000)))
"""
    base = dict(os.environ, ONECOPY_CACHE_DIR=str(cache_dir), ONECOPY_SOCKET="")
    first = subprocess.run([sys.executable, "-c", code], env=base, capture_output=True, text=True, timeout=120)
    assert first.stdout.strip() == "True", first.stderr
    assert list(cache_dir.glob("*.ocb"))
    # The next process's every ranged GET fails at the store: only its HEAD gets through.
    proxy = subprocess.Popen([sys.executable, str(SERVERS / "fault_proxy.py"), "--upstream", env["AWS_ENDPOINT_URL"]],
                             stdout=subprocess.PIPE, text=True)
    try:
        url = next(line.split("=", 1)[1].strip() for line in proxy.stdout if line.startswith("FAULT_PROXY_URL="))
        import urllib.request
        rule = json.dumps({"fault": "status_burst", "count": -1, "method": "GET", "status": 403}).encode()
        urllib.request.urlopen(urllib.request.Request(url + "/__fault__", data=rule, method="POST"), timeout=10)
        second = subprocess.run([sys.executable, "-c", code], env=dict(base, AWS_ENDPOINT_URL=url),
                                capture_output=True, text=True, timeout=120)
        assert second.stdout.strip() == "True", second.stderr
        # Without the cache directory the same process cannot read it: the fault is real.
        third = subprocess.run([sys.executable, "-c", code],
                               env=dict(base, AWS_ENDPOINT_URL=url, ONECOPY_CACHE_DIR=str(tmp_path / "empty")),
                               capture_output=True, text=True, timeout=120)
        assert third.returncode != 0
    finally:
        proxy.terminate()
        proxy.wait(10)


def test_prefetch_warms_the_daemon_for_the_next_job(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    for i in range(3):
        put(s3, bucket, f"pf/p{i}.vortex", table(i * 10_000, 10_000), tmp_path)
    prefix = f"s3://{bucket}/pf/"
    d = start(tmp_path, env, ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/")
    try:
        out = subprocess.run([str(CLI), "prefetch", prefix, "--columns", "id", "--socket", d.sock],
                             capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, ONECOPY_PYTHON=sys.executable))
        assert out.returncode == 0, out.stderr
        assert "prefetched 3 files (30000 rows)" in out.stdout
        warmed = cache_status(d)["cache_bytes_from_store"]
        assert warmed > 0
        import onecopy.torch as ot
        ds = ot.Dataset(prefix, columns=["id"], batch_rows=1000, shuffle=True, seed=3, socket=d.sock)
        assert sorted(int(i) for b in ds for i in b["id"]) == list(range(30_000))
        assert cache_status(d)["cache_bytes_from_store"] == warmed  # the job fetched nothing
        status = subprocess.run([str(CLI), "status", "--socket", d.sock], capture_output=True, text=True,
                                timeout=60)
        assert "byte cache:" in status.stdout and "metadata cache:" in status.stdout
    finally:
        d.stop()


def test_url_objects_are_never_cached_even_when_their_server_reuses_an_etag(tmp_path):
    from test_hostile import http_server

    bodies = {}
    for name, first in (("a", 0), ("b", 1_000_000)):
        path = tmp_path / f"{name}.vortex"
        vx.io.write(table(first, 2000), str(path))
        bodies[name] = path.read_bytes()

    def get(h):  # the query picks the file; every answer says ETag "v1"
        body = bodies[h.path.split("which=")[1]]
        first, last = 0, len(body) - 1
        if "Range" in h.headers:
            a, b = h.headers["Range"].split("=")[1].split("-")
            first, last = int(a), min(int(b), len(body) - 1)
        h.send_response(206 if "Range" in h.headers else 200)
        h.send_header("Content-Length", str(last - first + 1))
        h.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        h.send_header("ETag", '"v1"')
        h.end_headers()
        h.wfile.write(body[first:last + 1])

    srv = http_server(get)
    base = f"http://127.0.0.1:{srv.server_address[1]}/data.vortex?which="
    run = tmp_path / "d"
    run.mkdir()
    d = Daemon(run, config='daemon_http_hosts = "127.0.0.1"\n')
    try:
        assert ids_of(onecopy.open(base + "a", daemon=d.sock)) == list(range(2000))
        assert ids_of(onecopy.open(base + "b", daemon=d.sock)) == list(range(1_000_000, 1_002_000))
        s = cache_status(d)
        assert s["cache_misses"] == s["cache_hits"] == s["cache_memory_bytes"] == 0
        assert s["metadata_cache_bytes"] == 0
    finally:
        d.stop()
        srv.shutdown()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a cache file to another user")
def test_cache_files_of_another_user_are_not_served(moto_bucket, tmp_path):
    bucket, s3, env = moto_bucket
    put(s3, bucket, "o.vortex", table(0, 8000), tmp_path)
    uri = f"s3://{bucket}/o.vortex"
    cache_dir = tmp_path / "cache"
    grants = {"ONECOPY_DAEMON_S3_GRANTS": f"*: s3://{bucket}/"}
    d = start(tmp_path, env, ONECOPY_CACHE_DIR=cache_dir, **grants)
    try:
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(8000))
    finally:
        d.stop()
    files = list(cache_dir.glob("*.ocb"))
    assert files
    for f in files:  # as if another user had written them into a shared directory
        os.chown(f, 65534, 65534)
    d = start(tmp_path, env, "d2", ONECOPY_CACHE_DIR=cache_dir, **grants)
    try:
        assert ids_of(onecopy.open(uri, daemon=d.sock)) == list(range(8000))
        s = cache_status(d)
        assert s["cache_bytes_from_disk"] == 0 and s["cache_bytes_from_store"] > 0
        assert s["cache_disk_dropped"] == len(files)
    finally:
        d.stop()

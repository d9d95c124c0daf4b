# SPDX-License-Identifier: Apache-2.0
"""onecopy's S3 client against real servers on loopback.

Starts Ceph RGW (HTTP and HTTPS), OpenStack Swift with s3api (the strictest SigV4 checker),
moto (HTTP, and HTTPS behind nginx), nginx serving a sparse file past 4 GiB, and the
fault-injecting proxy, all with tests/servers/*.sh. Each server runs the C++ suite
`onecopy-tests-s3`; the CLI, the Python package, the credentials chain and onecopyd (holding
the credentials for clients that have none) are exercised end to end against them as well.
"""
import http.server
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
SERVERS = ROOT / "tests" / "servers"
ONECOPY = BUILD / "client" / "onecopy"
S3_TESTS = BUILD / "tests" / "onecopy-tests-s3"


def start(name, state, *args, extra_env=None):
    env = dict(os.environ, **(extra_env or {}))
    out = subprocess.run(["bash", str(SERVERS / f"{name}.sh"), "start", str(state), *args],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{name} did not start:\n{out.stdout}\n{out.stderr}"
    vals = {}
    for line in out.stdout.splitlines():
        if "=" in line and not line.startswith(" "):
            k, v = line.split("=", 1)
            vals[k.strip()] = v.strip()
    return vals


def stop(name, state):
    subprocess.run(["bash", str(SERVERS / f"{name}.sh"), "stop", str(state)],
                   capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    return tmp_path_factory.mktemp("servers")


def server_fixture(name, **kw):
    @pytest.fixture(scope="module")
    def fixture(state):
        d = state / name
        vals = start(name, d, **kw)
        yield vals
        stop(name, d)
    return fixture


moto = server_fixture("moto", extra_env={"MOTO_TLS": "1"})
ceph = server_fixture("ceph")
swift = server_fixture("swift")


def s3_env(srv, endpoint, bucket):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OC_"))}
    env.update({
        "AWS_ACCESS_KEY_ID": srv["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": srv["AWS_SECRET_ACCESS_KEY"],
        "AWS_REGION": srv.get("AWS_REGION", "us-east-1"),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "OC_S3_ENDPOINT": endpoint,
        "OC_S3_BUCKET": bucket,
    })
    if "CA_FILE" in srv:
        env["OC_CA_FILE"] = env["AWS_CA_BUNDLE"] = srv["CA_FILE"]
    return env


def make_bucket(srv, endpoint=None):
    import boto3
    from botocore.config import Config
    name = "oc-" + uuid.uuid4().hex[:12]
    s3 = boto3.client(
        "s3", endpoint_url=endpoint or srv["S3_ENDPOINT"],
        aws_access_key_id=srv["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=srv["AWS_SECRET_ACCESS_KEY"],
        region_name=srv.get("AWS_REGION", "us-east-1"),
        verify=srv.get("CA_FILE", True),
        # Ceph Pacific rejects the aws-chunked bodies newer boto3 sends by default.
        config=Config(request_checksum_calculation="when_required",
                      s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket=name)
    return name, s3


def run_suite(tags, env):
    out = subprocess.run([str(S3_TESTS), tags], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    assert "All tests passed" in out.stdout
    return out.stdout


def onecopy(*args, env, ok=True):
    out = subprocess.run([str(ONECOPY), *args], env=env, capture_output=True, timeout=300)
    if ok:
        assert out.returncode == 0, out.stderr.decode()
    return out


# ---- the C++ suite on every server ------------------------------------------------------------

@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_client_on_ceph(ceph, tls):
    bucket, _ = make_bucket(ceph)
    endpoint = ceph["S3_ENDPOINT_TLS" if tls else "S3_ENDPOINT"]
    env = s3_env(ceph, endpoint, bucket)
    env["OC_S3_STRICT"] = "1"
    run_suite("[s3],[strict]", env)


def test_client_on_swift(swift):
    bucket, _ = make_bucket(swift)
    env = s3_env(swift, swift["S3_ENDPOINT"], bucket)
    env["OC_S3_STRICT"] = "1"
    run_suite("[s3],[strict]", env)


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_client_on_moto(moto, tls):
    bucket, _ = make_bucket(moto)
    run_suite("[s3]", s3_env(moto, moto["S3_ENDPOINT_TLS" if tls else "S3_ENDPOINT"], bucket))


def test_faults_through_the_proxy(moto, tmp_path):
    bucket, _ = make_bucket(moto)
    port_file = tmp_path / "port"
    proxy = subprocess.Popen([sys.executable, str(SERVERS / "fault_proxy.py"), "--upstream",
                              moto["S3_ENDPOINT"], "--port", "0", "--port-file", str(port_file)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        line = proxy.stdout.readline().decode()
        assert "FAULT_PROXY_PORT=" in line, line
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        env = s3_env(moto, url, bucket)
        # The stall timeout must outlast the hedging delay, or retries would beat the hedge.
        env.update({"OC_FAULT_PROXY": url, "ONECOPY_S3_BACKOFF_BASE_MS": "10",
                    "ONECOPY_HTTP_STALL_TIMEOUT_MS": "3000", "ONECOPY_S3_HEDGE_AFTER_MS": "500"})
        run_suite("[faults]", env)
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)


def test_ranges_past_4_gib(state):
    d = state / "nginx"
    srv = start("nginx", d)
    try:
        big = Path(srv["WWW_DIR"]) / "big" / "sparse.bin"
        big.parent.mkdir(parents=True, exist_ok=True)
        with open(big, "wb") as f:  # 5 GiB, all holes but 64 marker bytes at 4 GiB - 32
            f.truncate(5 << 30)
            f.seek((4 << 30) - 32)
            f.write(bytes(range(1, 65)))
        env = s3_env(srv, srv["S3_ENDPOINT"], "unused")
        env["OC_BIG_URL"] = srv["S3_ENDPOINT"] + "/big/sparse.bin"
        run_suite("[big]", env)
    finally:
        stop("nginx", d)


@pytest.fixture(scope="module")
def nginx_take(state):
    """nginx (static) serving a take file at /bkt/t.vortex, with 100 rows to take and the rows
    a local take gives."""
    import random
    d = state / "nginx-take"
    srv = start("nginx", d)
    www = Path(srv["WWW_DIR"]) / "bkt"
    www.mkdir(parents=True, exist_ok=True)
    local = www / "t.vortex"
    n = write_take_file(local)
    rows = ",".join(map(str, random.Random(11).sample(range(n), 100)))
    expected = onecopy("take", str(local), rows, "--format", "jsonl", env=dict(os.environ)).stdout
    yield srv, rows, expected
    stop("nginx", d)


def take_counting_requests(srv, uri, rows, **knobs):
    log = Path(srv["ACCESS_LOG"])
    before = len(log.read_text().splitlines()) if log.exists() else 0
    out = onecopy("take", uri, rows, "--format", "jsonl", env=dict(os.environ, **knobs)).stdout
    return out, len(log.read_text().splitlines()) - before


def test_take_over_http_shares_multirange_gets(nginx_take):
    """Over an http(s) origin that answers multi-range GETs (nginx), a take's ranges share GETs,
    deframed into their slots: the rows equal a local take, for fewer requests than one range a
    GET."""
    srv, rows, expected = nginx_take
    url = srv["S3_ENDPOINT"] + "/bkt/t.vortex"
    multi, multi_requests = take_counting_requests(srv, url, rows)
    single, single_requests = take_counting_requests(srv, url, rows,
                                                     ONECOPY_HTTP_MULTIRANGE_MAX_PARTS="1")
    print(f"take of 100 rows over http: {multi_requests} requests with multi-range GETs, "
          f"{single_requests} with one range a GET")
    assert multi == expected and single == expected
    assert multi_requests < single_requests


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_ipv6_literal_endpoint(nginx_take, scheme):
    """The same file through http(s)://[::1]:PORT: connect, Host header, ranges and, over TLS,
    verification against the certificate's IP ::1 (no SNI for an address) over IPv6."""
    srv, rows, expected = nginx_take
    key = "S3_ENDPOINT_V6" if scheme == "http" else "S3_ENDPOINT_TLS_V6"
    if key not in srv:
        pytest.skip("loopback has no IPv6 address on this machine")
    v6, requests = take_counting_requests(srv, srv[key] + "/bkt/t.vortex", rows,
                                          AWS_CA_BUNDLE=srv["CA_FILE"])
    assert v6 == expected
    assert requests > 0
    assert "::1" in Path(srv["ACCESS_LOG"]).read_text()


# ---- the CLI and the Python package -----------------------------------------------------------

def test_cli_cp_ls_and_scan(moto, tmp_path):
    bucket, _ = make_bucket(moto)
    env = s3_env(moto, moto["S3_ENDPOINT"], bucket)
    env["ONECOPY_S3_MULTIPART_THRESHOLD"] = "8MiB"
    src = tmp_path / "blob.bin"
    src.write_bytes(os.urandom(21 << 20))
    up = onecopy("cp", str(src), f"s3://{bucket}/blobs/", env=env)
    assert b"(multipart)" in up.stderr
    listing = onecopy("ls", f"s3://{bucket}/", env=env).stdout.decode()
    assert "PRE blobs/" in listing
    deep = onecopy("ls", f"s3://{bucket}/blobs/", "--recursive", env=env).stdout.decode()
    assert f" {21 << 20} blobs/blob.bin" in deep
    back = tmp_path / "back.bin"
    onecopy("cp", f"s3://{bucket}/blobs/blob.bin", str(back), env=env)
    assert back.read_bytes() == src.read_bytes()

    missing = onecopy("cp", f"s3://{bucket}/nope", str(tmp_path / "x"), env=env, ok=False)
    assert missing.returncode == 1 and b"404" in missing.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.onecopy-partial").exists()
    dev = onecopy("cp", f"s3://{bucket}/blobs/blob.bin", "/dev/null", env=env, ok=False)
    assert b"not a regular file" in dev.stderr
    assert Path("/dev/null").is_char_device()


def write_vortex(path):
    import pyarrow as pa
    import vortex as vx
    n = 50_000
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "score": pa.array([i * 0.25 for i in range(n)], pa.float64()),
        "name": pa.array([f"row-{i % 977}" for i in range(n)], pa.utf8()),
    })
    vx.io.write(table, str(path))
    return table


def test_scan_from_s3_matches_local(moto, tmp_path):
    bucket, _ = make_bucket(moto)
    env = s3_env(moto, moto["S3_ENDPOINT_TLS"], bucket)
    local = tmp_path / "t.vortex"
    write_vortex(local)
    onecopy("cp", str(local), f"s3://{bucket}/t.vortex", env=env)
    remote = onecopy("scan", f"s3://{bucket}/t.vortex", "--format", "jsonl", env=env).stdout
    here = onecopy("scan", str(local), "--format", "jsonl", env=env).stdout
    assert remote == here and remote.count(b"\n") == 50_000
    info = onecopy("inspect", f"s3://{bucket}/t.vortex", env=env).stdout.decode()
    assert "rows:    50000" in info


def write_take_file(path, n=400_000):
    """A file whose segments are large enough to be read in part: integers (bitpacked, FoR),
    floats, strings with and without nulls (FSST, dictionaries, views)."""
    import numpy as np
    import pyarrow as pa
    import vortex as vx
    rng = np.random.default_rng(5)
    words = [f"w{i:05d}-{'x' * (i % 23)}" for i in range(5000)]
    table = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "small": pa.array(rng.integers(0, 1000, n), pa.int32()),
        "price": pa.array(rng.random(n) * 1e4, pa.float64()),
        "name": pa.array([words[i % 5000] + str(i) for i in range(n)], pa.utf8()),
        "tag": pa.array([None if i % 7 == 0 else words[(i * 31) % 5000] for i in range(n)], pa.utf8()),
    })
    vx.io.write(table, str(path))
    return n


def test_take_from_s3_reads_only_the_bytes_its_rows_need(moto, tmp_path):
    """A take reads large segments in part (their array tree, then its rows' ranges): over S3 the
    rows equal a take of whole segments and a local take, for a fraction of the bytes."""
    import random
    bucket, _ = make_bucket(moto)
    env = s3_env(moto, moto["S3_ENDPOINT"], bucket)
    local = tmp_path / "t.vortex"
    n = write_take_file(local)
    remote = f"s3://{bucket}/t.vortex"
    onecopy("cp", str(local), remote, env=env)
    picked = random.Random(7).sample(range(n), 100)

    def take(uri, min_bytes, rows, *extra):
        knob = dict(env, ONECOPY_TAKE_PARTIAL_SEGMENT_BYTES=min_bytes)
        return onecopy("take", uri, ",".join(map(str, rows)), "--format", "jsonl", *extra, env=knob).stdout

    def explain(uri, min_bytes, rows, *extra):
        lines = take(uri, min_bytes, rows, "--explain", *extra).decode().splitlines()
        return {k: int(v) for k, v in (line.split(": ") for line in lines)}

    whole = take(remote, "0", picked)
    assert whole.count(b"\n") == 100
    assert take(remote, "64KiB", picked) == whole
    assert take(remote, "1", picked) == whole  # every segment in part, no gap merged
    assert take(str(local), "64KiB", picked) == whole == take(str(local), "0", picked)
    # Ten rows, 40,000 apart: reading in part skips most of each segment. `tag` is left out of
    # the byte count: vortex-data writes it as vortex.onpair, which has no take and is read whole.
    few = picked[:10]
    cols = ("--columns", "id,small,price,name")
    part, full = explain(remote, "64KiB", few, *cols), explain(remote, "0", few, *cols)
    print(f"10 rows over S3: {part['bytes read']} bytes in {part['reads']} GETs in part, "
          f"{full['bytes read']} bytes in {full['reads']} GETs whole, of {full['file size']}")
    assert part["rows delivered"] == full["rows delivered"] == 10
    assert part["bytes read"] * 4 < full["bytes read"]


def test_python_package_reads_s3(moto, tmp_path):
    bucket, s3 = make_bucket(moto)
    local = tmp_path / "t.vortex"
    table = write_vortex(local)
    s3.upload_file(str(local), bucket, "py/t.vortex")
    env = s3_env(moto, moto["S3_ENDPOINT"], bucket)
    code = f"""
import pyarrow as pa, onecopy
f = onecopy.open("s3://{bucket}/py/t.vortex")
t = pa.table(pa.RecordBatchReader.from_stream(f.scan(columns=["id", "name"])))
print(t.num_rows, t.column("id").to_pylist()[-1], t.column("name").to_pylist()[5])
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(table.num_rows), "49999", "row-5"]


# ---- credentials: the chain end to end, and wrong credentials -----------------------------------

class CredentialsServer(http.server.ThreadingHTTPServer):
    """Serves the container-credentials and IMDSv2 protocols with fixed credentials."""

    def __init__(self, access, secret):
        self.creds = {"AccessKeyId": access, "SecretAccessKey": secret,
                      "Expiration": "2099-01-01T00:00:00Z"}
        self.requests = []
        super().__init__(("127.0.0.1", 0), self.Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, status, body):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self):
            self.server.requests.append(("PUT", self.path, dict(self.headers)))
            ok = self.path == "/latest/api/token" and \
                self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
            self.reply(200 if ok else 400, "imds-token" if ok else "")

        def do_GET(self):
            self.server.requests.append(("GET", self.path, dict(self.headers)))
            if self.path == "/container-creds":
                if self.headers.get("Authorization") != "container-secret-token":
                    return self.reply(401, "no")
                return self.reply(200, json.dumps(self.server.creds))
            if self.headers.get("X-aws-ec2-metadata-token") != "imds-token":
                return self.reply(401, "")
            if self.path == "/latest/meta-data/iam/security-credentials/":
                return self.reply(200, "onecopy-role")
            if self.path == "/latest/meta-data/iam/security-credentials/onecopy-role":
                return self.reply(200, json.dumps(dict(self.server.creds, Code="Success")))
            self.reply(404, "")


def no_keys(env):
    return {k: v for k, v in env.items()
            if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")}


def test_credentials_chain_end_to_end(ceph, tmp_path):
    bucket, s3 = make_bucket(ceph)
    s3.put_object(Bucket=bucket, Key="hello.txt", Body=b"hi")
    base = no_keys(s3_env(ceph, ceph["S3_ENDPOINT"], bucket))
    creds = CredentialsServer(ceph["AWS_ACCESS_KEY_ID"], ceph["AWS_SECRET_ACCESS_KEY"])
    url = f"http://127.0.0.1:{creds.server_address[1]}"
    try:
        container = dict(base, AWS_CONTAINER_CREDENTIALS_FULL_URI=url + "/container-creds",
                         AWS_CONTAINER_AUTHORIZATION_TOKEN="container-secret-token",
                         AWS_EC2_METADATA_DISABLED="true")
        assert b"hello.txt" in onecopy("ls", f"s3://{bucket}/", env=container).stdout

        imds = dict(base, AWS_EC2_METADATA_SERVICE_ENDPOINT=url)
        assert b"hello.txt" in onecopy("ls", f"s3://{bucket}/", env=imds).stdout
        assert ("PUT", "/latest/api/token") in [(m, p) for m, p, _ in creds.requests]
    finally:
        creds.shutdown()

    profile = tmp_path / "credentials"
    profile.write_text(f"[ops]\naws_access_key_id = {ceph['AWS_ACCESS_KEY_ID']}\n"
                       f"aws_secret_access_key = {ceph['AWS_SECRET_ACCESS_KEY']}\n")
    files = dict(base, AWS_SHARED_CREDENTIALS_FILE=str(profile), AWS_PROFILE="ops",
                 AWS_EC2_METADATA_DISABLED="true")
    assert b"hello.txt" in onecopy("ls", f"s3://{bucket}/", env=files).stdout


@pytest.mark.parametrize("server", ["ceph", "swift"])
def test_wrong_credentials_are_a_clear_403(server, request):
    srv = request.getfixturevalue(server)
    bucket, _ = make_bucket(srv)
    env = s3_env(srv, srv["S3_ENDPOINT"], bucket)
    env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret-0123456789abcdef"
    out = onecopy("ls", f"s3://{bucket}/", env=env, ok=False)
    err = out.stderr.decode()
    assert out.returncode == 1
    assert "HTTP 403" in err and "check the credentials" in err
    assert "not-the-secret" not in err


def test_swift_rejects_a_wrong_region(swift):
    bucket, _ = make_bucket(swift)
    env = s3_env(swift, swift["S3_ENDPOINT"], bucket)
    env["AWS_REGION"] = "eu-west-3"
    out = onecopy("ls", f"s3://{bucket}/", env=env, ok=False)
    assert out.returncode == 1
    assert b"HTTP 400" in out.stderr or b"HTTP 403" in out.stderr


def test_expand_s3_prefixes_and_globs(moto, tmp_path):
    bucket, s3 = make_bucket(moto)
    local = tmp_path / "t.vortex"
    write_vortex(local)
    for key in ("ds/b.vortex", "ds/a.vortex", "ds/sub/c.vortex", "ds/notes.txt", "other/d.vortex"):
        s3.upload_file(str(local), bucket, key)
    env = s3_env(moto, moto["S3_ENDPOINT"], bucket)
    code = f"""
import onecopy
for p in ["s3://{bucket}/ds/", "s3://{bucket}/ds/*.vortex", "s3://{bucket}/*/?.vortex", "s3://{bucket}/ds/a.vortex"]:
    print(",".join(u.rsplit("/{bucket}/", 1)[1] for u in onecopy.expand(p)))
try:
    onecopy.expand("s3://{bucket}/none/")
except onecopy.OnecopyError as e:
    print(e.code)
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "ds/a.vortex,ds/b.vortex,ds/sub/c.vortex",
        "ds/a.vortex,ds/b.vortex,ds/sub/c.vortex",  # `*` crosses '/' in keys
        "ds/a.vortex,ds/b.vortex,ds/sub/c.vortex,other/d.vortex",
        "ds/a.vortex",
        "not_found",
    ]


# ---- onecopyd reading S3 with its own credentials -----------------------------------------------

def start_daemon(tmp, env):
    """onecopyd (tests/daemon/test_daemon.py's Daemon) on a socket in @tmp, with @env."""
    sys.path.insert(0, str(ROOT / "tests" / "daemon"))
    from test_daemon import Daemon
    tmp.mkdir()
    return Daemon(tmp, env=env)


@pytest.mark.parametrize("server", ["moto", "ceph"])
def test_daemon_serves_a_sharded_s3_scan_to_a_client_without_credentials(server, request, tmp_path):
    import onecopy
    import pyarrow as pa
    moto = request.getfixturevalue(server)  # the server, moto or Ceph RGW
    bucket, s3 = make_bucket(moto)
    local = tmp_path / "t.vortex"
    write_vortex(local)
    s3.upload_file(str(local), bucket, "shards/t.vortex")
    # The operator grants the bucket's shards/ prefix to every client: nothing else is readable.
    d = start_daemon(tmp_path / "daemon", dict(s3_env(moto, moto["S3_ENDPOINT"], bucket),
                                               ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/shards/"))
    columns, where = ["id", "name"], "score >= 2500.0 OR name = 'row-7'"
    spec = dict(world_size=2, shuffle=True, seed=5, unit_rows=4000)
    code = f"""
import json, os, onecopy
assert not [k for k in os.environ if k.startswith("AWS_")], "the client must hold no credentials"
c = onecopy.Client({d.sock!r})
out = []
for rank in range(2):
    it = c.scan("s3://{bucket}/shards/t.vortex", columns={columns!r}, filter={where!r}, batch_rows=3000,
                rank=rank, **{spec!r})
    out.append([[r for b in it for r in zip(*(b.column(n).to_pylist() for n in {columns!r}))], it.units])
print(json.dumps(out))
"""
    client_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    try:
        out = subprocess.run([sys.executable, "-c", code], env=client_env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        status = d.client.status()
        # The daemon's S3 client did the fetching: its requests and bytes show in the status.
        assert status["s3_requests"] > 0 and status["s3_failures"] == 0
        # Units of 4000 rows cut this file's single 50000-row chunk, and each unit's scan reads
        # the chunk's segments again: more than the file, less than once per unit.
        assert local.stat().st_size < status["bytes_fetched"] <= 13 * local.stat().st_size
        # Only the granted prefix: an object beside it, or a listing wider than it, is denied.
        s3.upload_file(str(local), bucket, "private/t.vortex")
        for call in (lambda: d.client.scan(f"s3://{bucket}/private/t.vortex"),
                     lambda: d.client.list(f"s3://{bucket}/")):
            with pytest.raises(onecopy.OnecopyError, match="daemon_s3_grants") as e:
                call()
            assert e.value.code == "denied"
        assert d.client.list(f"s3://{bucket}/shards/") == [f"s3://{bucket}/shards/t.vortex"]
    finally:
        d.stop()

    # The same plan read in this process from the local copy: the same rows in the same order.
    f = onecopy.open(local)
    units = [(0, b, e) for b, e in f.units(4000)]
    assert len(units) == 13
    total = 0
    for rank in range(2):
        want = []
        mine = onecopy.shard_units(units, rank=rank, world_size=2, shuffle=True, seed=5)
        for _, b, e in mine:
            t = pa.table(f.scan(columns=columns, filter=where, row_range=(b, e)))
            want += [list(r) for r in zip(*(t.column(n).to_pylist() for n in columns))]
        rows, nunits = got[rank]
        assert nunits == len(mine)
        assert rows == want, f"rank {rank}"
        total += len(rows)
    assert total == pa.table(f.scan(columns=["id"], filter=where)).num_rows == 40_000 + 11  # id >= 10000, and 11 ids below it ending in 7 mod 977


def test_daemon_listings_stop_at_their_entry_cap(moto, tmp_path):
    import onecopy
    bucket, s3 = make_bucket(moto)
    for i in range(12):
        s3.put_object(Bucket=bucket, Key=f"many/part-{i:02d}.vortex", Body=b"x")
    env = dict(s3_env(moto, moto["S3_ENDPOINT"], bucket), ONECOPY_DAEMON_S3_GRANTS=f"*: s3://{bucket}/",
               ONECOPY_DAEMON_LIST_MAX_ENTRIES="10")
    d = start_daemon(tmp_path / "daemon", env)
    try:
        with pytest.raises(onecopy.OnecopyError, match="more than 10 keys") as e:
            d.client.list(f"s3://{bucket}/many/")
        assert e.value.code == "invalid"
        assert len(d.client.list(f"s3://{bucket}/many/part-0*")) == 10  # a narrower pattern lists
    finally:
        d.stop()


def test_daemon_with_wrong_credentials_answers_a_clear_error(ceph, tmp_path):
    import onecopy
    bucket, s3 = make_bucket(ceph)
    local = tmp_path / "t.vortex"
    write_vortex(local)
    s3.upload_file(str(local), bucket, "t.vortex")
    env = s3_env(ceph, ceph["S3_ENDPOINT"], bucket)
    env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret-0123456789abcdef"
    env["ONECOPY_DAEMON_S3_GRANTS"] = f"*: s3://{bucket}/"
    d = start_daemon(tmp_path / "daemon", env)
    try:
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.scan(f"s3://{bucket}/t.vortex", rank=0, world_size=2)
        msg = str(e.value)
        # A HEAD has no body, so no S3 error code: the status and the hint say what is wrong.
        assert e.value.code == "io"
        assert "HTTP 403" in msg and "check the credentials" in msg
        assert "not-the-secret" not in msg
        # The daemon goes on serving, this client and others.
        assert d.proc.poll() is None
        assert sum(b.num_rows for b in d.client.scan(str(local), filter="id < 100")) == 100
        assert d.client.status()["errors"] >= 1
    finally:
        d.stop()

"""Each fault of fault_proxy.py, seen by a plain http.client against nginx behind the proxy."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = 4 * 1024 * 1024 + 123
KEY = "/bucket/obj.bin"


@pytest.fixture(scope="module")
def nginx():
    if shutil.which("nginx") is None and os.geteuid() != 0:
        pytest.skip("nginx missing and not root to install it")
    state = tempfile.mkdtemp(prefix="fault-proxy-nginx-")
    out = subprocess.run(["bash", os.path.join(HERE, "nginx.sh"), "start", state],
                         check=True, capture_output=True, text=True).stdout
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    data = os.urandom(SIZE)
    os.makedirs(os.path.join(state, "www", "bucket"))
    with open(os.path.join(state, "www", "bucket", "obj.bin"), "wb") as f:
        f.write(data)
    yield env, data
    subprocess.run(["bash", os.path.join(HERE, "nginx.sh"), "stop", state], check=False, capture_output=True)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def proxy(nginx):
    env, data = nginx
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "fault_proxy.py"), "--upstream", env["S3_ENDPOINT"]],
                         stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().strip().split("=")[1])
    yield port, data
    p.terminate()
    p.wait(10)


@pytest.fixture
def fp(proxy):
    port, data = proxy
    control(port, "DELETE")
    return port, data


def control(port, method, rules=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, "/__fault__", body=json.dumps(rules) if rules is not None else None)
    r = c.getresponse()
    out = json.loads(r.read())
    assert r.status == 200, out
    c.close()
    return out


def get(conn, path=KEY, rng=None, headers=None):
    h = dict(headers or {})
    if rng:
        h["Range"] = "bytes=%d-%d" % rng
    conn.request("GET", path, headers=h)
    return conn.getresponse()


def test_passthrough_keepalive(fp):
    port, data = fp
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for a, b in ((0, 99), (1000, 1_000_000), (SIZE - 10, SIZE - 1)):
        r = get(c, rng=(a, b))
        assert r.status == 206 and r.read() == data[a:b + 1]
        assert r.getheader("Content-Range") == "bytes %d-%d/%d" % (a, b, SIZE)
    r = get(c)
    assert r.status == 200 and r.read() == data
    assert control(port, "GET")["counters"]["connections"] == 2  # ours + the control one


def test_reset_mid_body(fp):
    port, data = fp
    control(port, "POST", {"fault": "reset_mid_body", "range": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    r = get(c, rng=(0, 2_000_000))
    assert r.status == 206
    with pytest.raises((ConnectionResetError, http.client.IncompleteRead)):
        r.read()
    st = control(port, "GET")
    assert st["counters"]["reset_mid_body"] == 1 and st["rules"][0]["remaining"] == 0
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # the next one is clean
    assert get(c, rng=(0, 2_000_000)).read() == data[:2_000_001]


def test_reset_is_rst_not_fin(fp):
    port, _ = fp
    control(port, "POST", {"fault": "reset_mid_body"})
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % KEY.encode())
    with pytest.raises(ConnectionResetError):
        while s.recv(1 << 20):
            time.sleep(0.01)
    s.close()


def test_stall(fp):
    port, data = fp
    control(port, "POST", [{"fault": "stall", "seconds": 1.5}, {"fault": "stall", "seconds": 1.0}])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
    r = get(c)
    with pytest.raises((socket.timeout, TimeoutError)):
        r.read()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # patient client: completes
    t0 = time.monotonic()
    r = get(c)
    assert r.read() == data and time.monotonic() - t0 >= 1.0
    assert control(port, "GET")["counters"]["stall"] == 2


def test_status_burst_keeps_connection(fp):
    port, data = fp
    control(port, "POST", {"fault": "status_burst", "count": 2, "status": 503})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(2):
        r = get(c, rng=(0, 9))
        body = r.read()
        assert r.status == 503 and b"<Code>SlowDown</Code>" in body
    r = get(c, rng=(0, 9))
    assert r.status == 206 and r.read() == data[:10]
    control(port, "POST", {"fault": "status_burst", "status": 500, "method": "*"})
    r = get(c)
    assert r.status == 500 and b"<Code>InternalError</Code>" in r.read()
    assert control(port, "GET")["counters"]["status_burst"] == 3


def test_truncate_body(fp):
    port, _ = fp
    control(port, "POST", {"fault": "truncate_body", "fraction": 0.25})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    r = get(c, rng=(0, 999_999))
    with pytest.raises(http.client.IncompleteRead) as e:
        r.read()
    assert len(e.value.partial) == 250_000
    assert control(port, "GET")["counters"]["truncate_body"] == 1


def test_wrong_content_range(fp):
    port, data = fp
    control(port, "POST", {"fault": "wrong_content_range", "range": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    r = get(c, rng=(100, 199))
    assert r.getheader("Content-Range") == "bytes 200-299/%d" % SIZE
    assert r.read() == data[100:200]
    r = get(c, rng=(100, 199))
    assert r.getheader("Content-Range") == "bytes 100-199/%d" % SIZE
    r.read()


def test_etag_change(fp):
    port, data = fp
    control(port, "POST", {"fault": "etag_change", "after": 1})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    r = get(c, rng=(0, 9))
    old = r.getheader("ETag")
    r.read()
    r = get(c, rng=(10, 19))
    new = r.getheader("ETag")
    assert r.read() == data[10:20] and new and new != old
    r = get(c, rng=(20, 29), headers={"If-Match": old})
    assert r.status == 412 and b"<Code>PreconditionFailed</Code>" in r.read()
    r = get(c, rng=(20, 29), headers={"If-Match": new})  # nginx does not know the new one: 412 too
    r.read()
    c2 = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c2.request("HEAD", KEY)
    r = c2.getresponse()
    assert r.getheader("ETag") == new
    assert control(port, "GET")["counters"]["etag_change"] >= 3


def test_bad_rule_rejected(fp):
    port, _ = fp
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("POST", "/__fault__", body=json.dumps({"fault": "nope"}))
    r = c.getresponse()
    assert r.status == 400 and b"unknown fault" in r.read()

# SPDX-License-Identifier: Apache-2.0
"""The packages as an operator and a trainer meet them, on this machine as root, where systemd is
not PID 1 (CI): the .deb of scripts/package.sh is installed with dpkg, its units pass
`systemd-analyze verify`, onecopyd is started exactly as the installed unit's ExecStart says, as
user onecopy, with the installed config and the credentials file pointing at moto; a user of group
onecopy, in a fresh virtual environment holding only the wheel of `pip install .`, with no source
tree and no ONECOPY_* or AWS_* variables, reads an s3:// object through it; a second daemon is
refused; a dead default socket is an error, not an in-process read; dpkg -r and --purge leave
nothing behind.

Runs where scripts/test.sh sets ONECOPY_PACKAGE_TESTS=1 (it installs a package and adds users);
ONECOPY_DEB and ONECOPY_WHEEL name the artifacts (built here when unset)."""

import glob
import json
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "net"))
import test_s3_servers as servers  # noqa: E402  (how the S3 tests start moto and make buckets)

pytestmark = [
    pytest.mark.skipif(os.environ.get("ONECOPY_PACKAGE_TESTS") != "1",
                       reason="installs the .deb system-wide: scripts/test.sh sets ONECOPY_PACKAGE_TESTS=1"),
    pytest.mark.skipif(os.geteuid() != 0, reason="dpkg -i and setpriv need root"),
]

SOCKET = "/run/onecopy/onecopyd.sock"
UNIT = "/lib/systemd/system/onecopyd.service"
TRAINER, STRANGER = "octrainer", "ocstranger"
ROWS = 30_000


def run(*args, check=True, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900, **kw)
    if check:
        assert r.returncode == 0, f"{args}: rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def meson_version() -> str:
    text = (ROOT / "meson.build").read_text()
    return text.split("version: '", 1)[1].split("'", 1)[0]


@pytest.fixture(scope="module")
def work():
    # Readable by the test users: the fresh environment and the data live here.
    d = Path(tempfile.mkdtemp(prefix="oc-package-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    run("rm", "-rf", d)


@pytest.fixture(scope="module")
def artifacts(work):
    deb = os.environ.get("ONECOPY_DEB")
    if not deb:
        out = run("bash", ROOT / "scripts" / "package.sh", "--out", work / "deb")
        deb = out.stdout.strip().splitlines()[-1]
    wheel = os.environ.get("ONECOPY_WHEEL")
    if not wheel:
        run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", work / "wheel", ROOT)
        [wheel] = glob.glob(str(work / "wheel" / "onecopy-*.whl"))
    return Path(deb), Path(wheel)


@pytest.fixture(scope="module")
def installed(artifacts):
    deb, _ = artifacts
    assert run("dpkg-query", "-W", "onecopy", check=False).returncode != 0, "onecopy is installed already"
    run("dpkg", "-i", deb)
    yield deb
    for name in ("onecopyd",):
        subprocess.run(["pkill", "-KILL", "-x", name], capture_output=True)
    subprocess.run(["dpkg", "--purge", "onecopy"], capture_output=True)


@pytest.fixture(scope="module")
def users(installed):
    made = []
    for name, groups in ((TRAINER, ["-G", "onecopy"]), (STRANGER, [])):
        run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", *groups, name)
        made.append(name)
    yield {n: pwd.getpwnam(n).pw_uid for n in made}
    for name in made:
        subprocess.run(["userdel", name], capture_output=True)


def _table(first: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(np.arange(first, first + n, dtype=np.int64)),
        "word": pa.array([f"w{i % 97}" for i in range(first, first + n)]),
    })


@pytest.fixture(scope="module")
def store(work, tmp_path_factory):
    """moto, a bucket with one file and a two-file prefix, and the same file on the local disk."""
    state = tmp_path_factory.mktemp("servers") / "moto"
    srv = servers.start("moto", state)
    bucket, s3 = servers.make_bucket(srv)
    local = work / "data.vortex"
    vx.io.write(_table(0, ROWS), str(local))
    local.chmod(0o644)
    s3.upload_file(str(local), bucket, "data.vortex")
    for i, (first, n) in enumerate(((0, 1000), (1000, 2500))):
        part = work / f"part-{i}.vortex"
        vx.io.write(_table(first, n), str(part))
        s3.upload_file(str(part), bucket, f"ds/part-{i}.vortex")
    yield srv, bucket, local
    servers.stop("moto", state)


@pytest.fixture(scope="module")
def configured(installed, users, store):
    """What the operator does after installing: credentials in the env file, a grant for the
    trainer in the config. Both are conffiles: the edits are the operator's."""
    srv, bucket, _ = store
    env = Path("/etc/onecopy/credentials.env")
    env.write_text(env.read_text() + textwrap.dedent(f"""
        AWS_ENDPOINT_URL={srv['S3_ENDPOINT']}
        AWS_REGION=us-east-1
        AWS_ACCESS_KEY_ID={srv['AWS_ACCESS_KEY_ID']}
        AWS_SECRET_ACCESS_KEY={srv['AWS_SECRET_ACCESS_KEY']}
        AWS_EC2_METADATA_DISABLED=true
        """))
    conf = Path("/etc/onecopy/onecopyd.toml")
    conf.write_text(conf.read_text() + f'\ndaemon_s3_grants = ["uid={users[TRAINER]}: s3://{bucket}/"]\n')
    return bucket


class Service:
    """onecopyd started as the installed unit starts it: its ExecStart, as User=/Group=, with
    the environment of its EnvironmentFile= (systemd reads that file as root)."""

    def __init__(self):
        unit = Path(UNIT).read_text()
        self.exec_start = next(line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart="))
        env_file = next(line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("EnvironmentFile="))
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        for line in Path(env_file.lstrip("-")).read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                k, v = line.split("=", 1)
                self.env[k.strip()] = v.strip()
        self.proc = None

    def command(self):
        return ["setpriv", "--reuid", "onecopy", "--regid", "onecopy", "--init-groups", "--",
                *self.exec_start.split()]

    def start(self):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="onecopyd-", suffix=".log")
        self.proc = subprocess.Popen(self.command(), env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise AssertionError(f"onecopyd exited with {self.proc.returncode}:\n{self.log.read()}")
            if run("onecopy", "status", check=False).returncode == 0:
                return
            time.sleep(0.1)
        raise AssertionError("onecopyd did not answer within 30 s")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


@pytest.fixture(scope="module")
def service(configured):
    s = Service()
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def venv(work, artifacts):
    """A fresh environment with the wheel and its dependencies (vortex-data too, for convert):
    Debian's torch through the system site packages, as scripts/bootstrap.sh's own venv, and so
    the versions requirements.txt pins (torch 1.13 needs NumPy 1, the newest pyarrow NumPy 2)."""
    _, wheel = artifacts
    env_dir = work / "venv"
    run("/usr/bin/python3", "-m", "venv", "--system-site-packages", env_dir)
    pins = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
            if line.startswith(("pyarrow==", "numpy==", "vortex-data=="))]
    assert len(pins) == 3, pins
    run(env_dir / "bin" / "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[convert]", *pins)
    return env_dir


def as_user(user, venv_dir, code, check=True):
    """@code run by @user in @venv_dir's Python from /, with no ONECOPY_* or AWS_* variables."""
    return run("runuser", "-u", user, "--", "env", "-i", "HOME=/", "PATH=/usr/bin:/bin",
               venv_dir / "bin" / "python", "-c", textwrap.dedent(code), check=check, cwd="/")


# ---- the .deb --------------------------------------------------------------------------------

def test_the_package_installs_what_an_operator_needs(installed):
    assert installed.name == f"onecopy_{meson_version()}_amd64.deb"
    for path in ("/usr/sbin/onecopyd", "/usr/bin/onecopy"):
        assert os.access(path, os.X_OK), path
    assert glob.glob("/usr/lib/*/libonecopy.so")
    for path in (UNIT, "/lib/systemd/system/onecopyd.socket", "/usr/lib/sysusers.d/onecopy.conf",
                 "/usr/lib/tmpfiles.d/onecopy.conf", "/usr/share/doc/onecopy/copyright"):
        assert os.path.isfile(path), path
    conffiles = run("dpkg-query", "-W", "-f", "${Conffiles}", "onecopy").stdout
    assert "/etc/onecopy/onecopyd.toml" in conffiles and "/etc/onecopy/credentials.env" in conffiles
    creds = os.stat("/etc/onecopy/credentials.env")
    assert stat.S_IMODE(creds.st_mode) == 0o600 and creds.st_uid == 0
    # The config is every knob commented out with its default, as onecopyd prints it.
    config = Path("/etc/onecopy/onecopyd.toml").read_text()
    assert config == run("/usr/sbin/onecopyd", "--print-example-config").stdout
    assert all(line.startswith("#") for line in config.splitlines() if line.strip())
    assert run("/usr/sbin/onecopyd", "--version").stdout.strip() == f"onecopyd {meson_version()}"
    assert run("onecopy", "version").stdout.strip() == f"onecopy {meson_version()}"
    # postinst made the user and its directories, and enabled and started nothing.
    user = pwd.getpwnam("onecopy")
    assert user.pw_shell == "/usr/sbin/nologin"
    assert os.stat("/run/onecopy").st_uid == user.pw_uid
    assert not glob.glob("/etc/systemd/system/*.wants/onecopyd*")
    assert run("systemctl", "is-enabled", "onecopyd.socket", check=False).stdout.strip() == "disabled"
    assert not os.path.exists(SOCKET)


def test_the_installed_units_verify(installed, tmp_path):
    r = run("systemd-analyze", "verify", UNIT, "/lib/systemd/system/onecopyd.socket", check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ExecStart=/usr/sbin/onecopyd --config /etc/onecopy/onecopyd.toml" in Path(UNIT).read_text()
    # The check is real: a unit naming a missing binary fails it.
    broken = tmp_path / "onecopyd.service"
    broken.write_text(Path(UNIT).read_text().replace("/usr/sbin/onecopyd", "/usr/sbin/onecopyd-missing"))
    (tmp_path / "onecopyd.socket").write_text(Path("/lib/systemd/system/onecopyd.socket").read_text())
    assert run("systemd-analyze", "verify", broken, check=False).returncode != 0


# ---- the service and a trainer's fresh environment --------------------------------------------

def test_a_fresh_venv_reads_s3_through_the_installed_daemon(service, venv, configured, store):
    bucket = configured
    out = as_user(TRAINER, venv, f"""
        import json, os, pyarrow as pa, onecopy, onecopy.torch
        assert not any(k.startswith(("ONECOPY_", "AWS_")) for k in os.environ)
        f = onecopy.open("s3://{bucket}/data.vortex")
        ids = pa.table(f.scan(columns=["id"])).column("id").to_pylist()
        words = pa.table(f.take([7, 5000], columns=["word"])).column("word").to_pylist()
        ds = onecopy.torch.Dataset("s3://{bucket}/ds/", columns=["id"], batch_rows=500, shuffle=False)
        seen = sorted(int(i) for b in ds for i in b["id"])
        try:
            onecopy.open("s3://{bucket}/data.vortex", daemon=False).row_count
            in_process = "read"
        except onecopy.OnecopyError as e:
            in_process = e.code
        print(json.dumps({{"file": onecopy.__file__, "lib": onecopy._lib._find_library(),
                          "kind": type(f).__name__, "socket": f.socket, "rows": f.row_count,
                          "ids": ids == list(range({ROWS})), "words": words, "dataset": seen == list(range(3500)),
                          "dataset_socket": ds.socket, "in_process": in_process}}))
        """)
    got = json.loads(out.stdout)
    assert got["file"].startswith(str(venv)) and str(ROOT) not in got["file"]
    assert got["lib"].startswith(str(venv))
    assert got["kind"] == "RemoteFile" and got["socket"] == SOCKET and got["rows"] == ROWS
    assert got["ids"] and got["words"] == ["w7", f"w{5000 % 97}"]
    assert got["dataset"] and got["dataset_socket"] == SOCKET
    # The trainer holds no keys: reading in its own process is refused by the store's signature
    # check or by the missing credentials, never served.
    assert got["in_process"] != "read"
    status = json.loads(run("onecopy", "status", "--json").stdout)
    assert status["s3_requests"] > 0 and status["batches_delivered"] > 0, status


def test_a_user_outside_group_onecopy_is_told_why(service, venv, configured):
    r = as_user(STRANGER, venv, f"""
        import onecopy
        onecopy.open("s3://{configured}/data.vortex")
        """, check=False)
    assert r.returncode != 0
    assert f"no onecopyd answers at {SOCKET} (the default socket): this user may not connect" in r.stderr
    assert "usermod -aG onecopy" in r.stderr


def test_convert_in_the_fresh_venv_finds_its_python(venv, work):
    import pyarrow.parquet as pq
    src = work / "convert-src.parquet"
    pq.write_table(_table(0, 2000), src)
    out = work / "converted"
    r = run("env", "-i", "PATH=/usr/bin:/bin", f"HOME={work}", venv / "bin" / "onecopy", "convert", src,
            "--to", out, "--no-progress", check=False)
    assert r.returncode == 0, r.stderr
    [vortex_file] = glob.glob(str(out / "*.vortex"))
    assert vx.open(vortex_file).to_arrow().read_all().column("id").to_pylist() == list(range(2000))
    assert run(venv / "bin" / "onecopy", "--help").stdout.startswith("usage: onecopy COMMAND")


def test_a_second_daemon_is_refused_and_the_first_keeps_serving(service):
    second = run(*service.command(), env=service.env, check=False)
    assert second.returncode != 0
    assert f"another onecopyd (pid {service.proc.pid}) already serves {SOCKET}" in second.stdout + second.stderr
    assert service.proc.poll() is None
    assert json.loads(run("onecopy", "status", "--json").stdout)["version"] == meson_version()


def test_a_dead_default_socket_is_an_error_and_a_restart_replaces_it(service, venv, store):
    _, _, local = store
    service.stop(signal.SIGKILL)  # leaves the socket file behind, with nobody listening
    assert os.path.exists(SOCKET)
    dead = as_user(TRAINER, venv, f"import onecopy; onecopy.open({str(local)!r})", check=False)
    assert dead.returncode != 0
    assert f"no onecopyd answers at {SOCKET} (the default socket): nobody listens there" in dead.stderr
    # A restart replaces the stale file and serves.
    service.start()
    served = as_user(TRAINER, venv, f"import onecopy; print(type(onecopy.open({str(local)!r})).__name__)")
    assert served.stdout.strip() == "RemoteFile"
    # A clean stop removes the socket: with no daemon configured, reading is in process.
    service.stop(signal.SIGTERM)
    assert service.proc.returncode == 0 and not os.path.exists(SOCKET)
    alone = as_user(TRAINER, venv, f"import onecopy; f = onecopy.open({str(local)!r}); print(type(f).__name__, f.row_count)")
    assert alone.stdout.split() == ["VortexFile", str(ROWS)]


def test_remove_and_purge_leave_nothing_behind(installed, service):
    service.stop()
    run("dpkg", "-r", "onecopy")
    for path in ("/usr/sbin/onecopyd", "/usr/bin/onecopy", UNIT, "/usr/lib/sysusers.d/onecopy.conf"):
        assert not os.path.exists(path), path
    assert not glob.glob("/usr/lib/*/libonecopy.so")
    assert os.path.exists("/etc/onecopy/onecopyd.toml")  # a conffile outlives remove
    assert "config-files" in run("dpkg-query", "-W", "-f", "${Status}", "onecopy").stdout
    run("dpkg", "--purge", "onecopy")
    for path in ("/etc/onecopy", "/var/lib/onecopy", "/run/onecopy"):
        assert not os.path.exists(path), path
    assert run("dpkg-query", "-W", "onecopy", check=False).returncode != 0

# SPDX-License-Identifier: Apache-2.0
"""The test Ceph cluster of RADOS pushdown tests: 3 memstore OSDs, radosgw, the pool `onecopy`,
and the build's object class `libcls_onecopy.so` in the OSDs' class dir.

tests/servers/ceph.sh does the work (CEPH_OSDS=3, CEPH_CLASS_LIBS = the class library, which
it copies into STATE/cls by copy and rename, never in place). The `ceph_cluster` fixture
(session scope, registered by conftest.py) starts one cluster for the session and stops it at
the end; it yields ceph.sh's env (CEPH_CONF, CEPH_KEYRING, ONECOPY_TEST_RADOS_POOL,
CEPH_CLASS_DIR, CEPH_OSDS, S3_ENDPOINT, AWS_* ...) plus CEPH_STATE_DIR, which `osd` takes for
fault tests (`osd(env, "restart-osd", 1)`). It skips, saying why, only where ceph-osd is not
installed; a class library that is not built fails the tests that use it.

Env: ONECOPY_BUILD_DIR (default build/), ONECOPY_CLS_LIB (default
BUILD/format/cls/libcls_onecopy.so).
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
CEPH_SH = ROOT / "tests" / "servers" / "ceph.sh"
CLS_LIB = Path(os.environ.get("ONECOPY_CLS_LIB", BUILD / "format" / "cls" / "libcls_onecopy.so"))


def _ceph_sh(*args, extra_env=None, timeout=600) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(extra_env or {}))
    return subprocess.run(["bash", str(CEPH_SH), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=timeout)


def start_ceph(state: Path, osds: int = 3, rgw: bool = True, class_libs=()) -> dict[str, str]:
    """Starts (or reuses) the cluster in @p state; its env, plus CEPH_STATE_DIR."""
    if shutil.which("ceph-osd") is None:
        pytest.skip("ceph-osd is not installed (BOOTSTRAP_TEST_SERVERS=1 scripts/bootstrap.sh)")
    out = _ceph_sh("start", state, extra_env={
        "CEPH_OSDS": str(osds), "CEPH_RGW": "1" if rgw else "0",
        "CEPH_CLASS_LIBS": " ".join(str(p) for p in class_libs)})
    assert out.returncode == 0, f"ceph.sh start failed:\n{out.stdout}\n{out.stderr}"
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    env["CEPH_STATE_DIR"] = str(state)
    return env


def stop_ceph(state: Path) -> None:
    _ceph_sh("stop", state, timeout=120)


def osd(env: dict[str, str], verb: str, n: int) -> None:
    """`ceph.sh VERB STATE n`: restart-osd (a clean stop keeps memstore's data), kill-osd
    (a crash: data since the last clean stop is lost) or start-osd."""
    out = _ceph_sh(verb, env["CEPH_STATE_DIR"], n, timeout=400)
    assert out.returncode == 0, f"ceph.sh {verb} {n} failed:\n{out.stdout}\n{out.stderr}"


@pytest.fixture(scope="session")
def ceph_cluster(tmp_path_factory):
    """The 3-OSD cluster with libcls_onecopy.so loadable as class `onecopy`."""
    if shutil.which("ceph-osd") is None:
        pytest.skip("ceph-osd is not installed (BOOTSTRAP_TEST_SERVERS=1 scripts/bootstrap.sh)")
    if not CLS_LIB.is_file():
        pytest.fail(f"{CLS_LIB} is not built (ninja -C {BUILD} format/cls/libcls_onecopy.so)")
    state = tmp_path_factory.mktemp("ceph")
    env = start_ceph(state, osds=3, class_libs=[CLS_LIB])
    yield env
    stop_ceph(state)

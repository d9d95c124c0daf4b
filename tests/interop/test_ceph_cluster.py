# SPDX-License-Identifier: Apache-2.0
"""The Ceph cluster RADOS pushdown tests run on (ceph_cluster.py, tests/servers/ceph.sh): its
layout, the class dir, data kept across a clean OSD restart, a killed OSD, and the onecopy
class loaded by the OSDs."""
import errno
import json
import os
from pathlib import Path

import pytest

from ceph_cluster import CLS_LIB, osd


def connect(env, **conf):
    import rados  # Debian's python3-rados, a dependency of ceph-common
    c = rados.Rados(conffile=env["CEPH_CONF"], conf=conf)
    c.connect(timeout=10)
    return c


def mon(c, **cmd):
    ret, out, err = c.mon_command(json.dumps(dict(cmd, format="json")), b"", timeout=10)
    assert ret == 0, err
    return json.loads(out)


def primary_of(c, pool, name):
    return mon(c, prefix="osd map", pool=pool, object=name)["acting_primary"]


def test_layout(ceph_cluster):
    c = connect(ceph_cluster)
    try:
        osds = mon(c, prefix="osd dump")["osds"]
        assert [(o["osd"], o["up"], o["in"]) for o in osds] == [(0, 1, 1), (1, 1, 1), (2, 1, 1)]
        pools = {p["pool_name"]: p for p in mon(c, prefix="osd pool ls", detail="detail")}
        pool = pools[ceph_cluster["ONECOPY_TEST_RADOS_POOL"]]
        assert (pool["size"], pool["pg_num"], list(pool["application_metadata"])) == (1, 8, ["rados"])
    finally:
        c.shutdown()
    cls = Path(ceph_cluster["CEPH_CLASS_DIR"])
    ours = cls / "libcls_onecopy.so"
    # A copy, not a link into the build, which a rebuild would change under the OSD.
    assert ours.is_file() and not ours.is_symlink()
    assert ours.read_bytes() == CLS_LIB.read_bytes()
    assert (cls / "libcls_rgw.so").exists()  # radosgw's classes are there as well


def test_a_clean_restart_keeps_the_objects(ceph_cluster):
    pool = ceph_cluster["ONECOPY_TEST_RADOS_POOL"]
    c = connect(ceph_cluster)
    try:
        with c.open_ioctx(pool) as io:
            objects = {f"restart-{i}": os.urandom(100_000 + i) for i in range(24)}
            for name, data in objects.items():
                io.write_full(name, data)
            primaries = {primary_of(c, pool, name) for name in objects}
            assert primaries == {0, 1, 2}
    finally:
        c.shutdown()
    for n in range(3):
        osd(ceph_cluster, "restart-osd", n)
    c = connect(ceph_cluster)
    try:
        with c.open_ioctx(pool) as io:
            for name, data in objects.items():
                assert io.read(name, len(data) + 1) == data, name
    finally:
        c.shutdown()


def test_a_killed_osd_times_out_then_comes_back(ceph_cluster):
    import rados
    pool = ceph_cluster["ONECOPY_TEST_RADOS_POOL"]
    c = connect(ceph_cluster, rados_osd_op_timeout="3")
    try:
        with c.open_ioctx(pool) as io:
            io.write_full("kill-before", b"kept")
            n = primary_of(c, pool, "kill-before")
        osd(ceph_cluster, "restart-osd", n)  # a clean stop writes memstore out
        osd(ceph_cluster, "kill-osd", n)
        with c.open_ioctx(pool) as io:
            with pytest.raises(rados.TimedOut):
                io.read("kill-before")
        osd(ceph_cluster, "start-osd", n)
        with c.open_ioctx(pool) as io:
            assert io.read("kill-before") == b"kept"
    finally:
        c.shutdown()


def test_the_onecopy_class_is_loaded(ceph_cluster):
    import rados
    c = connect(ceph_cluster)
    try:
        with c.open_ioctx(ceph_cluster["ONECOPY_TEST_RADOS_POOL"]) as io:
            io.write_full("class-probe", b"not a Vortex file")
            # A request that is no FlatBuffer: the class answers -EINVAL. A class the OSD could
            # not load would be -EOPNOTSUPP, -EIO or -EPERM.
            with pytest.raises(rados.Error) as e:
                io.execute("class-probe", "onecopy", "scan", b"\x00garbage")
            assert e.value.errno == errno.EINVAL, e.value
    finally:
        c.shutdown()

# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch.Dataset served by a real onecopyd: the daemon plans the units and delivers every
batch, and the samples equal an in-process read exactly."""

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
import onecopy.torch as oct
from test_daemon import Daemon


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("torchd")
    rng = np.random.default_rng(3)
    paths, first = [], 0
    for i, n in enumerate((3000, 2000)):
        lengths = rng.integers(1, 30, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        vx.io.write(pa.table({
            "id": pa.array(np.arange(first, first + n, dtype=np.int64)),
            "quality": pa.array(rng.random(n)),
            "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1000, offsets[-1],
                                                                                      dtype=np.int32))),
        }), str(root / f"p{i}.vortex"))
        paths.append(str(root / f"p{i}.vortex"))
        first += n
    return paths


def _items(ds, workers):
    out = []
    for b in oct.DataLoader(ds, num_workers=workers, batch_size=None):
        out.append((b["id"].tolist(), b["tokens"].tolist(), b["tokens.offsets"].tolist()))
    return out


def test_dataset_through_the_daemon_equals_in_process(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        kw = dict(batch_rows=50, unit_rows=400, shuffle_units=2, seed=8, filter="quality > 0.3")
        remote = oct.Dataset(files, socket=d.sock, **kw)
        local = oct.Dataset(files, socket=False, **kw)
        assert remote.groups() == local.groups()
        assert _items(remote, 0) == _items(local, 0)
        for rank in range(2):
            r = oct.Dataset(files, socket=d.sock, rank=rank, world_size=2, **kw)
            l_ = oct.Dataset(files, socket=False, rank=rank, world_size=2, **kw)
            assert sorted(_items(r, 2)) == sorted(_items(l_, 2))
        status = d.client.status()
        assert status["batches_delivered"] > 0
        assert status["errors"] == 0
    finally:
        d.stop()


def test_units_from_the_daemon_and_its_errors(tmp_path, files):
    d = Daemon(tmp_path)
    try:
        assert d.client.units(files[0], 700) == onecopy.open(files[0]).units(700)
        with pytest.raises(onecopy.OnecopyError) as e:
            d.client.units(str(tmp_path / "missing.vortex"), 700)
        assert e.value.code in ("not_found", "io")
    finally:
        d.stop()

# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch.Dataset(device=...): the device path's items against the host path's. Here the
device path runs as its host reference (device="host-reference": the same scans, plans,
gathers, concatenation and shuffle on the host); on a machine with a CUDA device and torch
built for it, device="cuda:0" is checked against the reference as well (skipped, visibly,
elsewhere)."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch
import vortex as vx

import onecopy
import onecopy.torch as oct

COLUMNS = ["id", "small", "flag", "name", "tokens", "emb"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[str]:
    out = []
    where = tmp_path_factory.mktemp("torch-device")
    for f, n in enumerate((9_000, 14_000)):
        rng = np.random.default_rng(f)
        base = 100_000 * f
        table = pa.table({
            "id": pa.array(np.arange(base, base + n, dtype=np.int64)),
            "small": pa.array(rng.integers(0, 100, n).astype(np.int32)),
            "flag": pa.array(rng.random(n) < 0.4),
            "name": pa.array([f"doc-{(base + i) % 113}" for i in range(n)]),
            "tokens": pa.array([list(range(i % 9)) for i in range(n)], type=pa.list_(pa.int32())),
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(2 * n).astype(np.float32)), 2),
        })
        path = where / f"part-{f}.vortex"
        vx.io.write(table, str(path))
        out.append(str(path))
    return out


def _host_form(item: dict) -> dict:
    """A device item in the host path's form: strings from their bytes and offsets."""
    out = dict(item)
    if "name.offsets" in out:
        data, offsets = bytes(out.pop("name").cpu().numpy()), out.pop("name.offsets").cpu().tolist()
        out["name"] = [data[a:b].decode() for a, b in zip(offsets[:-1], offsets[1:])]
    elif "name" in out and isinstance(out["name"], torch.Tensor):  # one sample: its bytes
        out["name"] = bytes(out["name"].cpu().numpy()).decode()
    return out


def _assert_same_items(want: list[dict], got: list[dict]) -> None:
    assert len(got) == len(want) and want
    for i, (w, g) in enumerate(zip(want, got)):
        g = _host_form(g)
        assert g.keys() == w.keys(), i
        for key, value in w.items():
            if isinstance(value, torch.Tensor):
                assert g[key].device.type == "cpu" and g[key].dtype == value.dtype, (i, key)
                assert torch.equal(g[key], value), (i, key)
            else:
                assert g[key] == value, (i, key)


CASES = [dict(batch_rows=500, shuffle=True), dict(batch_rows=500, shuffle=False),
         dict(batch_rows=700, shuffle=True, filter="small < 40 OR flag"),
         dict(batch_rows=None, shuffle=True, filter="small < 3"),
         dict(batch_rows=400, shuffle=True, rank=1, world_size=2)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_the_device_path_gives_the_host_paths_items(files, case):
    args = dict(columns=COLUMNS, socket=False, unit_rows=2_000, shuffle_units=3, seed=5, **case)
    want = list(oct.Dataset(files, **args))
    _assert_same_items(want, list(oct.Dataset(files, device="host-reference", **args)))


def test_packed_tokens_from_the_device_path_equal_the_host_paths(files):
    args = dict(columns=["tokens"], socket=False, unit_rows=2_000, seed=1)
    want = list(oct.PackedTokens(oct.Dataset(files, **args), seq_len=64, varlen=True))
    got = list(oct.PackedTokens(oct.Dataset(files, device="host-reference", **args), seq_len=64, varlen=True))
    _assert_same_items(want, got)


def test_a_device_dataset_resumes_where_its_state_dict_says(files):
    args = dict(columns=["id", "tokens"], socket=False, unit_rows=1_500, batch_rows=250, seed=9,
                device="host-reference")
    full = [it["id"] for it in oct.Dataset(files, **args)]
    ds = oct.Dataset(files, **args)
    it = iter(ds)
    first = [next(it)["id"] for _ in range(11)]
    state = ds.state_dict()
    rest = oct.Dataset(files, **args)
    rest.load_state_dict(state)
    after = [item["id"] for item in rest]
    assert torch.equal(torch.cat(first + after).sort().values, torch.cat(full).sort().values)
    assert len(first) + len(after) == len(full)


def test_device_datasets_refuse_what_they_cannot_do(files):
    with pytest.raises(ValueError, match="device is"):
        oct.Dataset(files, socket=False, device="gpu")
    with pytest.raises(ValueError, match="socket=False"):
        oct.Dataset(files, socket="/nonexistent.sock", device="host-reference")
    ds = oct.Dataset(files, socket=False, batch_rows=100, device="host-reference")
    loader = torch.utils.data.DataLoader(ds, num_workers=1, batch_size=None)
    with pytest.raises(ValueError, match="num_workers=0"):
        next(iter(loader))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device: the GPU test below runs")
def test_a_cuda_dataset_without_a_gpu_says_why(files):
    ds = oct.Dataset(files, socket=False, batch_rows=100, device="cuda:0")
    with pytest.raises(onecopy.OnecopyError) as e:
        next(iter(ds))
    assert e.value.code == "cuda" and "no CUDA device" in str(e.value)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device and torch built for it")
def test_a_cuda_dataset_gives_the_host_references_items_on_the_gpu(files):
    args = dict(columns=COLUMNS, socket=False, unit_rows=2_000, batch_rows=500, filter="small < 70", seed=3)
    want = list(oct.Dataset(files, device="host-reference", **args))
    got = list(oct.Dataset(files, device="cuda:0", **args))
    assert all(t.is_cuda for item in got for t in item.values())
    _assert_same_items([_host_form(w) for w in want], [{k: v.cpu() for k, v in g.items()} for g in got])


def test_copied_batch_columns_hold_no_memory_of_the_batch(files):
    # What a daemon's device batches go through, so that their leases go back at once.
    from onecopy import _device_rows

    batch = next(iter(onecopy.open(files[0]).scan(columns=COLUMNS, device="host-reference", batch_rows=999)))
    views = _device_rows.batch_columns(batch, torch.device("cpu"))
    copies = _device_rows.batch_columns(batch, torch.device("cpu"), copy=True)
    for name, (values, offsets) in views.items():
        assert torch.equal(copies[name][0], values), name
        assert copies[name][0].data_ptr() != values.data_ptr() or values.numel() == 0, name
        assert (offsets is None) == (copies[name][1] is None), name
    assert views["id"][0].data_ptr() == batch.columns["id"].values  # a view of the batch

# SPDX-License-Identifier: Apache-2.0
"""onecopy._torch_share: a DataLoader worker's batch crosses to the training process in one
shared buffer, and arrives as the plain dict of tensors it was, with real DataLoader workers."""

import copy
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pyarrow as pa
import pytest
import torch
import vortex as vx

import onecopy.torch as oct
from onecopy._steps import POSITION_KEY
from onecopy._torch_share import OneBuffer


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()


def assert_same_items(got: dict, want: dict) -> None:
    assert type(got) is dict and list(got) == list(want)
    for key, value in want.items():
        if isinstance(value, torch.Tensor):
            assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
            assert torch.equal(got[key], value), key
        else:
            assert got[key] == value, key


def test_a_pickled_batch_is_one_shared_buffer_of_its_tensors():
    want = {"tokens": torch.arange(1001, dtype=torch.int32), "tokens.offsets": torch.tensor([0, 3, 1001]),
            "quality": torch.rand(3, 4, dtype=torch.float64).t(),  # not contiguous
            "mask": torch.tensor([True, False, True]), "half": torch.arange(5, dtype=torch.float16),
            "none": torch.empty(0, dtype=torch.int64), "scalar": torch.tensor(3.5), "text": ["a", "bc"]}
    got = pickle.loads(ForkingPickler.dumps(OneBuffer(want)))
    assert_same_items(got, want)
    tensors = [v for v in got.values() if isinstance(v, torch.Tensor)]
    assert all(t.is_shared() for t in tensors)
    assert len({storage_ptr(t) for t in tensors}) == 1
    # Views of the buffer, each where it starts: writing one changes no other.
    got["tokens"].zero_()
    assert torch.equal(got["tokens.offsets"], want["tokens.offsets"]) and torch.equal(got["half"], want["half"])


def test_what_is_not_a_dense_cpu_tensor_travels_as_it_is():
    grad = torch.ones(3, requires_grad=True)
    want = {"grad": grad, "n": 7, "text": ["x"]}
    got = pickle.loads(ForkingPickler.dumps(OneBuffer(want)))
    assert type(got) is dict and got["n"] == 7 and got["text"] == ["x"]
    assert got["grad"].requires_grad and torch.equal(got["grad"], grad.detach())
    assert pickle.loads(ForkingPickler.dumps(OneBuffer({"n": 1}))) == {"n": 1}


def test_a_copy_stays_unpacked():
    """torch's collate copies a mapping before converting its values (copy.copy): that copy is
    a OneBuffer of the same tensors, with no shared buffer made."""
    t = torch.arange(4)
    c = copy.copy(OneBuffer({"a": t}))
    assert type(c) is OneBuffer and c["a"] is t and not t.is_shared()


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 3000
    lengths = rng.integers(1, 30, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    t = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                  "quality": pa.array(rng.random(n)),
                  "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 9, offsets[-1],
                                                                                            dtype=np.int32)))})
    out = tmp_path_factory.mktemp("share") / "t.vortex"
    vx.io.write(t, str(out))
    return str(out)


def batches_by_first_id(loader) -> dict:
    out = {}
    for batch in loader:
        assert type(batch) is dict and POSITION_KEY not in batch
        tensors = [v for v in batch.values() if isinstance(v, torch.Tensor)]
        out[int(batch["id"][0])] = (batch, len({storage_ptr(t) for t in tensors}))
    return out


@pytest.mark.parametrize("loader", [oct.DataLoader, torch.utils.data.DataLoader])
def test_workers_send_each_batch_in_one_buffer_and_equal_batches(path, loader):
    def dataset():
        return oct.Dataset([path], columns=["id", "quality", "tokens"], batch_rows=128, unit_rows=500,
                           shuffle_units=2, seed=4, socket=False)

    here = batches_by_first_id(loader(dataset(), num_workers=0, batch_size=None))
    there = batches_by_first_id(loader(dataset(), num_workers=2, batch_size=None))
    assert sorted(here) == sorted(there) and len(here) > 20
    assert {storages for _, storages in there.values()} == {1}
    for first, (batch, _) in there.items():
        assert_same_items(batch, here[first][0])

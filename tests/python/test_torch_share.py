# SPDX-License-Identifier: Apache-2.0
"""onecopy._torch_share: a DataLoader worker's batch crosses to the training process in one
shared buffer, one of the worker's reused slots where one is free, and arrives as the plain dict
of tensors it was, with real DataLoader workers.

Packing and unpacking in one process runs both halves: the pool is this process's, and the
slots' file descriptors come back through multiprocessing's resource sharer as they would from a
worker."""

import copy
import gc
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pyarrow as pa
import pytest
import torch
import vortex as vx

import onecopy.torch as oct
from onecopy._steps import POSITION_KEY
import onecopy._torch_share as share
from onecopy._torch_share import OneBuffer


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()


def in_slot(t: torch.Tensor) -> bool:
    """Whether @t's memory is a mapping of a worker's slot (a memfd named onecopy-batch)."""
    ptr = storage_ptr(t)
    with open("/proc/self/maps") as maps:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= ptr < hi:
                return "memfd:onecopy-batch" in line
    return False


def assert_same_items(got: dict, want: dict) -> None:
    assert type(got) is dict and list(got) == list(want)
    for key, value in want.items():
        if isinstance(value, torch.Tensor):
            assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
            assert torch.equal(got[key], value), key
        else:
            assert got[key] == value, key


@pytest.fixture(autouse=True)
def fresh_pool():
    """Each test starts with a pool of its own: no slot held by an earlier test's batches."""
    gc.collect()
    share._pool = None
    yield
    gc.collect()


def roundtrip(batch: dict) -> dict:
    return pickle.loads(ForkingPickler.dumps(OneBuffer(batch)))


def batch(seed: int, tokens: int = 1000) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"tokens": torch.randint(0, 50_000, (tokens,), dtype=torch.int32, generator=g),
            "tokens.offsets": torch.tensor([0, tokens // 3, tokens], dtype=torch.int32),
            "quality": torch.rand(2, dtype=torch.float64, generator=g), "text": ["a", str(seed)]}


def test_a_pickled_batch_is_one_shared_buffer_of_its_tensors():
    want = {"tokens": torch.arange(1001, dtype=torch.int32), "tokens.offsets": torch.tensor([0, 3, 1001]),
            "quality": torch.rand(3, 4, dtype=torch.float64).t(),  # not contiguous
            "mask": torch.tensor([True, False, True]), "half": torch.arange(5, dtype=torch.float16),
            "none": torch.empty(0, dtype=torch.int64), "scalar": torch.tensor(3.5), "text": ["a", "bc"]}
    got = roundtrip(want)
    assert_same_items(got, want)
    tensors = [v for v in got.values() if isinstance(v, torch.Tensor)]
    assert len({storage_ptr(t) for t in tensors}) == 1
    # Views of the buffer, each where it starts: writing one changes no other.
    got["tokens"].zero_()
    assert torch.equal(got["tokens.offsets"], want["tokens.offsets"]) and torch.equal(got["half"], want["half"])


def test_a_released_slot_takes_the_next_batch_and_a_held_one_does_not():
    first = roundtrip(batch(1))
    at = storage_ptr(first["tokens"])
    assert_same_items(first, batch(1))
    del first
    gc.collect()
    second = roundtrip(batch(2))  # slot 0 again, already mapped here
    assert storage_ptr(second["tokens"]) == at
    assert_same_items(second, batch(2))
    third = roundtrip(batch(3))  # slot 0 is held by `second`: another slot
    assert storage_ptr(third["tokens"]) != at
    assert_same_items(second, batch(2))
    assert_same_items(third, batch(3))


def test_batches_held_past_every_slot_get_buffers_of_their_own_and_stay_intact():
    held = [roundtrip(batch(i)) for i in range(share.SLOTS + 3)]
    for i, got in enumerate(held):
        assert_same_items(got, batch(i))
    slots = {storage_ptr(got["tokens"]) for got in held[:share.SLOTS]}
    assert len(slots) == share.SLOTS
    beyond = held[share.SLOTS:]
    assert all(in_slot(got["tokens"]) for got in held[:share.SLOTS])
    assert not any(in_slot(got["tokens"]) for got in beyond)  # torch's shared memory, one per batch
    assert not any(storage_ptr(got["tokens"]) in slots for got in beyond)


def test_a_slot_grows_for_a_larger_batch_and_a_batch_held_from_before_stays_intact():
    keep = roundtrip(batch(7))
    small = [roundtrip(batch(10 + i)) for i in range(share.SLOTS - 1)]  # every slot made, at its least
    del small
    gc.collect()
    big = 3 * share.SLOT_MIN  # more than any slot holds: a free one grows, and is mapped anew here
    grown = [roundtrip(batch(20 + i, tokens=big)) for i in range(share.SLOTS - 1)]
    for i, got in enumerate(grown):
        assert_same_items(got, batch(20 + i, tokens=big))
        assert in_slot(got["tokens"])
    assert_same_items(keep, batch(7))
    assert {s.generation for s in share._pool.slots} == {0, 1}


def test_a_batch_from_a_slot_sent_on_to_another_process_stays_whole():
    """A batch that arrived in a slot is a plain dict of tensors: sent on (torch's own reductions
    move its tensors to shared memory of their own), both it and the copy keep their values
    while later batches take the slots."""
    got = roundtrip(batch(5))
    assert in_slot(got["tokens"])
    sent = pickle.loads(ForkingPickler.dumps(got))
    later = [roundtrip(batch(30 + i)) for i in range(3)]
    assert_same_items(sent, batch(5))
    assert_same_items(got, batch(5))
    for i, b in enumerate(later):
        assert_same_items(b, batch(30 + i))


def test_a_forked_child_dropping_its_copy_of_a_batch_frees_no_slot():
    """A process forked while the training process holds a batch has copies of its views; when
    the child drops them, the slot stays held for the parent."""
    got = roundtrip(batch(8))
    at = storage_ptr(got["tokens"])
    pid = os.fork()
    if pid == 0:  # the child: drop its copy, collect, leave without pytest's teardown
        try:
            del got
            gc.collect()
        finally:
            os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    later = roundtrip(batch(9))
    assert storage_ptr(later["tokens"]) != at  # slot 0 is still the parent's
    assert_same_items(got, batch(8))
    assert_same_items(later, batch(9))


def test_a_batch_over_the_slot_limit_gets_a_buffer_of_its_own(monkeypatch):
    monkeypatch.setattr(share, "SLOT_MAX", 1000)
    got = roundtrip(batch(4))
    assert_same_items(got, batch(4))
    assert got["tokens"].is_shared() and not in_slot(got["tokens"]) and share._pool is None


def test_what_is_not_a_dense_cpu_tensor_travels_as_it_is():
    grad = torch.ones(3, requires_grad=True)
    want = {"grad": grad, "n": 7, "text": ["x"]}
    got = roundtrip(want)
    assert type(got) is dict and got["n"] == 7 and got["text"] == ["x"]
    assert got["grad"].requires_grad and torch.equal(got["grad"], grad.detach())
    assert roundtrip({"n": 1}) == {"n": 1}


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


def test_workers_reuse_their_slots_when_the_loop_lets_batches_go(path):
    """A loop that keeps nothing gets most batches in slots the training process mapped before,
    and the same rows as in process."""
    def sums(workers: int) -> tuple[dict, set]:
        ds = oct.Dataset([path], columns=["id", "tokens"], batch_rows=32, unit_rows=500, shuffle_units=2, seed=4,
                         socket=False)
        out, where = {}, set()
        for b in torch.utils.data.DataLoader(ds, num_workers=workers, batch_size=None):
            out[int(b["id"][0])] = (int(b["id"].sum()), int(b["tokens"].sum(dtype=torch.int64)), len(b["id"]))
            if workers:
                assert in_slot(b["tokens"])
            where.add(storage_ptr(b["tokens"]))
        return out, where

    here, _ = sums(0)
    there, where = sums(2)
    assert there == here and len(here) > 80
    assert len(where) <= 2 * share.SLOTS  # two workers' slots: these batches fit the smallest

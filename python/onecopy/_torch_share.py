# SPDX-License-Identifier: Apache-2.0
"""A batch that crosses from a DataLoader worker to the training process in one shared buffer,
and mostly in a buffer the training process has mapped already.

torch moves each tensor of an item through its own shared-memory segment: the worker creates
and fills one per tensor, and the training process receives each one's file descriptor on a
connection of its own to the worker (an authenticated handshake), then maps it and faults its
pages in. A batch of onecopy.torch has four or five small tensors (a list column's values and
offsets, scalar columns, the position), so that fixed cost, paid per tensor, is most of what a
worker adds to the feed.

OneBuffer pays it once per worker slot instead. Pickled (as the worker's queue pickles it), a
batch's tensors are copied into one of the worker's slots: a few memfd buffers that the worker
reuses. A slot's file descriptor travels with the first batch that uses it (and again when it
grows); the training process maps it once and keeps the mapping, so later batches in that slot
cost the copy and a small message. Unpickled, the batch is a plain dict of views of the slot, so
the training loop, pin_memory and collate functions see what they would have seen.

A slot is free again when every tensor of the batch it holds is gone in the training process:
the release of the last one writes 0 into the slot's byte of a state buffer both processes map.
When no slot is free (the training loop keeps batches) or a batch is larger than SLOT_MAX, the
batch gets a shared buffer of its own, as torch would make, with its file descriptor passed.
Either way a buffer lives while any of its tensors does, so a tensor kept past its batch keeps
the whole batch's memory, and with it one of the worker's slots."""

from __future__ import annotations

import mmap
import os
import secrets
import threading
import weakref
from collections import OrderedDict
from multiprocessing.reduction import DupFd

import numpy as np
import torch

# Each tensor starts at a multiple of this in the buffer: any dtype can view it there.
ALIGN = 64
SLOTS = 8  # slots per worker process: the DataLoader's prefetch plus a few batches held
SLOT_MIN = 1 << 16  # a slot's size is a power of two from this on
SLOT_MAX = 64 << 20  # a larger batch travels in a buffer of its own
POOLS_MAPPED = 64  # pools the training process keeps mapped, the oldest dropped past this


def packable(value) -> bool:
    """Whether @value travels in the shared buffer: a dense CPU tensor that autograd does not track."""
    return (isinstance(value, torch.Tensor) and value.device.type == "cpu" and value.layout == torch.strided
            and not value.requires_grad and not value.is_quantized)


def _memfd(size: int) -> tuple[int, mmap.mmap]:
    fd = os.memfd_create("onecopy-batch", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        return fd, mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        raise


class _Slot:
    def __init__(self, size: int):
        self.fd, self.map = _memfd(size)
        self.size, self.generation, self.sent = size, 0, False

    def grow(self, size: int) -> None:
        fd, m = _memfd(size)  # the training process keeps the old mapping while it has views of it
        self.map.close()
        os.close(self.fd)
        self.fd, self.map, self.size = fd, m, size
        self.generation += 1
        self.sent = False


class _Pool:
    """A worker process's slots and the state buffer whose byte i is 1 while slot i holds a batch
    the training process has not released."""

    def __init__(self):
        self.pid = os.getpid()
        self.token = (self.pid, secrets.token_hex(8))
        self.state_fd, self.state = _memfd(SLOTS)
        self.state_sent = False
        self.slots: list[_Slot] = []
        self.lock = threading.Lock()

    def take(self, size: int):
        """(index, slot) of a free slot of at least @size bytes, marked busy; None when none is free."""
        need = max(SLOT_MIN, 1 << (size - 1).bit_length())
        free = [i for i in range(len(self.slots)) if self.state[i] == 0]
        fits = [i for i in free if self.slots[i].size >= size]
        if fits:
            i = fits[0]
        elif len(self.slots) < SLOTS:
            i = len(self.slots)
            self.slots.append(_Slot(need))
        elif free:
            i = free[0]
            self.slots[i].grow(need)
        else:
            return None
        self.state[i] = 1
        return i, self.slots[i]


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _worker_pool() -> _Pool | None:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():  # a forked child makes its own
            _pool = _Pool() if hasattr(os, "memfd_create") else None
        return _pool


class OneBuffer(dict):
    """A dict of a batch's tensors (and other values) that pickles its tensors as one buffer and
    unpickles as a plain dict of views of it. Used only for items a DataLoader worker sends."""

    def __copy__(self):  # torch's collate copies mappings: a copy stays a OneBuffer, nothing packed
        return OneBuffer(self)

    def __reduce__(self):
        layout = []  # (key, dtype, shape, byte offset, bytes) of each packed tensor
        rest = {}
        tensors = []
        size = 0
        for key, value in self.items():
            if not packable(value):
                rest[key] = value
                continue
            size = -(-size // ALIGN) * ALIGN
            n = value.numel() * value.element_size()
            layout.append((key, value.dtype, tuple(value.shape), size, n))
            tensors.append(value)
            size += n
        if not layout:
            return dict, (dict(self),)
        pool = _worker_pool() if size <= SLOT_MAX else None
        if pool is not None:
            with pool.lock:
                taken = pool.take(size)
                if taken is not None:
                    index, slot = taken
                    _fill(torch.frombuffer(slot.map, dtype=torch.uint8, count=size), layout, tensors)
                    state_fd = None if pool.state_sent else DupFd(pool.state_fd)
                    slot_fd = None if slot.sent else DupFd(slot.fd)
                    pool.state_sent = slot.sent = True
                    return unpack_slot, (pool.token, index, slot.generation, slot.size, state_fd, slot_fd,
                                         layout, rest, list(self))
        buf = torch.empty(max(size, 1), dtype=torch.uint8).share_memory_()
        _fill(buf, layout, tensors)
        return unpack, (buf, layout, rest, list(self))


def _fill(buf: torch.Tensor, layout: list, tensors: list) -> None:
    for (_, dtype, shape, at, n), value in zip(layout, tensors):
        buf[at:at + n].view(dtype).view(shape).copy_(value)


def unpack(buf: torch.Tensor, layout: list, rest: dict, order: list) -> dict:
    """The dict OneBuffer.__reduce__ packed: its tensors as views of @buf, its keys in @order."""
    out = dict(rest)
    for key, dtype, shape, at, n in layout:
        out[key] = buf[at:at + n].view(dtype).view(shape)
    return {key: out[key] for key in order}


class _Mapped:
    """A worker's pool as the training process maps it: its state buffer and each slot's
    (generation, mapping)."""

    def __init__(self, state: mmap.mmap):
        self.state = state
        self.slots: dict[int, tuple[int, mmap.mmap]] = {}


_mapped: OrderedDict = OrderedDict()  # pool token -> _Mapped, in the training process
_mapped_lock = threading.Lock()


def _map_fd(fd_wrapper, size: int) -> mmap.mmap:
    fd = fd_wrapper.detach()
    try:
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _pool_mapping(token, state_fd) -> _Mapped:
    m = _mapped.get(token)
    if m is not None:
        _mapped.move_to_end(token)
        return m
    if state_fd is None:
        raise RuntimeError("onecopy: a batch arrived in a worker's slot that this process never mapped "
                           "(was the batch unpickled in another process than the first one?)")
    # A new pool: drop those of workers that are gone (their batches still alive keep their
    # mappings; this only forgets them), and the oldest past POOLS_MAPPED.
    for old in [t for t in _mapped if not _alive(t[0])]:
        del _mapped[old]
    while len(_mapped) >= POOLS_MAPPED:
        _mapped.popitem(last=False)
    m = _mapped[token] = _Mapped(_map_fd(state_fd, SLOTS))
    return m


def _release(state: mmap.mmap, index: int, pid: int) -> None:
    # Only in the process the batch was unpacked in: a child forked from it holds copies of the
    # same views, and its exit or collection must not free a slot its parent still reads.
    if os.getpid() == pid:
        state[index] = 0


def unpack_slot(token, index: int, generation: int, slot_size: int, state_fd, slot_fd, layout: list,
                rest: dict, order: list) -> dict:
    """The dict OneBuffer.__reduce__ packed into slot @index of the pool @token: its tensors as
    views of that slot, which is released (its state byte set to 0) when the last one is gone."""
    with _mapped_lock:
        m = _pool_mapping(token, state_fd)
        if slot_fd is not None:
            m.slots[index] = (generation, _map_fd(slot_fd, slot_size))
        have = m.slots.get(index)
        if have is None or have[0] != generation:
            raise RuntimeError(f"onecopy: slot {index} of a worker's pool arrived at generation {generation}, "
                               f"mapped at {have[0] if have else None}")
        size = max((at + n for _, _, _, at, n in layout), default=0)
        arr = np.frombuffer(have[1], dtype=np.uint8, count=max(size, 1))
        weakref.finalize(arr, _release, m.state, index, os.getpid())
    return unpack(torch.from_numpy(arr), layout, rest, order)

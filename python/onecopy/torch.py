# SPDX-License-Identifier: Apache-2.0
"""PyTorch datasets over Vortex files, served by onecopyd or read in-process.

    import onecopy.torch as oct
    ds = oct.Dataset(["data/*.vortex"], columns=["tokens", "quality"], filter="quality > 0.5",
                     batch_rows=256, shuffle=True, seed=0)
    loader = oct.DataLoader(ds, num_workers=2, batch_size=None)
    for epoch in range(3):
        ds.set_epoch(epoch)
        for batch in loader:          # {"tokens": values, "tokens.offsets": offsets, "quality": ...}
            ...
            checkpoint = ds.state_dict()  # exact: resumes with the same remaining samples

How an epoch is dealt (a pure function of the files, seed, epoch and world, so every rank and
worker computes its own share):
  1. every file is cut into units, row ranges at chunk boundaries (`VortexFile.units`);
  2. all units, shuffled by (seed, epoch), form the epoch's shuffle groups: consecutive runs of
     `shuffle_units` units, numbered in that order, the same for any world size;
  3. ranks split rows, not groups: the groups laid end to end in that order are cut into one
     share per rank, rank r of W taking the next N/W rows after rank r-1 (N the rows of the
     epoch; the shares differ by at most one row), so any world size reads any file count, one
     file included. A group that straddles a cut is split into pieces, row ranges of its units
     (so of files: each rank reads its rows with scan_ranges); whole groups are pieces too. The
     rows of a piece are permuted by a generator seeded with (seed, epoch, group, and the
     piece's first row when it is not 0): a shuffle buffer of bounded size whose order depends
     on no timing, and for a whole group on no world size;
  4. DataLoader worker w of W takes every W-th piece of its rank still to read.
Progress is counted per piece, keyed by its group and first row (onecopy._torch_plan.piece_key:
a whole group's key is its number), so a resumed epoch reads only unfinished pieces and skips
the samples a piece already gave, whatever the new worker count. Resumed with another number of
ranks from every rank's state_dict, the groups no rank had begun are cut again by rows among the
new ranks, while the pieces of a group some rank had begun are dealt whole, round-robin, each
going on where it stopped (so the new ranks' rows may differ by up to a piece, which equal steps
even out). As every rank and worker reads its pieces in the deal's order, a rank's finished
pieces are a run at the start of its deal and a few ahead of it: state_dict() keeps the run's
length, those few and one offset per piece in flight, a few integers whatever the dataset's size.
  5. with world_size > 1, every rank gives the same number of batches of exactly batch_rows
     rows (onecopy._steps: counted from the plan, or agreed through torch.distributed under a
     filter), by the `uneven` policy; in this process, or in onecopy.torch.DataLoader's when
     workers read.
"""

from __future__ import annotations

import collections
import concurrent.futures
import multiprocessing
from typing import Iterator, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import torch
import torch.utils.data

import onecopy
from onecopy import _device_rows
from onecopy._device import HOST_REFERENCE, parse_device
from onecopy._loader_stats import ItemTimer, LoaderStats
from onecopy._native import Batches, Client, shard_units
from onecopy._steps import POSITION_KEY, EqualSteps, check_uneven
from onecopy._torch_gather import batch_tensors, cut, sample
from onecopy._torch_mix import Mix
from onecopy._torch_nodes import node_stable_groups
from onecopy._torch_nodes import ranks_per_node as ranks_per_node_of
from onecopy._torch_packing import PackedTokens, collate_varlen
from onecopy._torch_plan import (UNKNOWN_ROWS, Piece, Progress, deal_rows, expand_urls, files_digest, key_group,
                                 key_start, piece_units)
from onecopy._torch_share import OneBuffer
from onecopy._torch_world import distributed_world, shard_world
from onecopy.expr import Expr

# Files opened at once: a shuffle group's scans started ahead of the one being read (_group_scans),
# and files asked for their units (_file_units).
FILES_IN_FLIGHT = 8

__all__ = ["DataLoader", "Dataset", "Mix", "PackedTokens", "collate_varlen", "gather_state_dicts"]

#: POSITION_KEY (onecopy._steps) names the position tensor that items carry between DataLoader
#: workers and onecopy's DataLoader, which removes it: [dataset index, epoch, piece key, samples
#: given after this item, samples in the piece (UNKNOWN_ROWS before a streamed piece's last)].


class Dataset(torch.utils.data.IterableDataset):
    """Samples (or batches of `batch_rows`) of Vortex files as dicts of tensors.

    urls: paths, local globs, directories or s3:// URLs. columns: the fields to read (None:
    all). filter: SQL WHERE text or an onecopy.col expression; rows where it is TRUE are kept.
    socket: onecopyd's socket. None: the daemon serving this machine (onecopy.daemon_socket:
    $ONECOPY_SOCKET, else /run/onecopy/onecopyd.sock when it exists), in this process when none is
    configured; a configured daemon that does not answer is an OnecopyError naming its socket, never
    a silent in-process read. False (or ONECOPY_SOCKET set empty): always in this process.
    rank, world_size: this process's place in the job; None takes them from torch.distributed
    when it is initialised, else from the launcher's RANK and WORLD_SIZE (torchrun sets them), and
    fails when the two disagree. unit_rows: the longest unit of work; shuffle_units: units per shuffle
    group (the bounded shuffle buffer holds one group's rows). uneven: how ranks are given equal
    steps when world_size > 1 (onecopy._steps): "repeat" (the default: ranks that run out first
    give their latest batches again, nothing is lost), "drop" (the epoch ends at the last step
    every rank can fill) or None (each rank gives what it has: unequal steps, which hang DDP).
    With a filter, the ranks agree step by step through torch.distributed (initialise it first).
    prefetch_groups: shuffle groups read ahead on a background thread (0: none), so that
    DataLoader(ds, num_workers=0) is the fast path; each holds one group's rows in memory.
    node_stable: each node reads the same files every epoch, shuffled anew inside the node
    (onecopy._torch_nodes has the algorithm), so that each node's onecopyd caches 1/nodes of the
    data; ranks_per_node: ranks on each node (None: $LOCAL_WORLD_SIZE, else 1). Its order
    depends on both, so a resume keeps the world it was saved from.

    device: where items' tensors live. "cpu" (the default): fixed-width columns are zero-copy
    DLPack views of the decoded Arrow buffers. "cuda[:N]": each group is scanned with
    device="cuda:N" (onecopy._device; through onecopyd when there is a socket), decoded on that
    GPU wherever the fused kernels cover an array and copied there otherwise; the group's rows
    are concatenated and shuffled on the device (torch.cat, index_select), so no sample passes
    through host memory, and strings arrive as UTF-8 bytes (uint8) plus "<col>.offsets", as
    lists do. A device Dataset reads in the loading process (DataLoader num_workers=0, with
    prefetch_groups reading ahead on a thread). "host-reference" runs the device path's own
    steps on the host (the kernels' host executors): the same items as "cuda", in host memory.

    Items: with batch_rows None, one sample per item ({column: scalar tensor or token view});
    otherwise batches of batch_rows rows (on one rank, up to batch_rows, a short one at the end
    of each piece of a shuffle group) where list columns are "<col>" values plus "<col>.offsets".
    A batch from a DataLoader worker arrives with its tensors in one shared buffer, one of a few
    the worker reuses (onecopy._torch_share): a tensor kept past its batch keeps the whole
    batch's memory and that buffer from reuse, so clone() what you keep.
    """

    def __init__(self, urls, columns: Optional[Sequence[str]] = None, filter: Union[str, Expr, None] = None,
                 batch_rows: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 socket: Union[str, None, bool] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None, unit_rows: int = 8192, shuffle_units: int = 8,
                 uneven: Optional[str] = "repeat", prefetch_groups: int = 1, device: str = "cpu",
                 node_stable: bool = False, ranks_per_node: Optional[int] = None):
        super().__init__()
        self.device = str(device)
        if self.device != "cpu":
            index = parse_device(self.device)  # ValueError for anything else
            self._torch_device = torch.device("cpu") if index == HOST_REFERENCE else torch.device("cuda", index)
        if prefetch_groups < 0:
            raise ValueError("prefetch_groups must be at least 0")
        self.prefetch_groups = int(prefetch_groups)
        self.uneven = check_uneven(uneven)
        self.columns = list(columns) if columns is not None else None
        self.filter = str(filter) if filter is not None else None
        if batch_rows is not None and batch_rows < 1:
            raise ValueError("batch_rows must be at least 1 (or None for single samples)")
        self.batch_rows = batch_rows
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        in_process = socket is False or socket == ""
        if self.device == "host-reference" and not in_process and socket is not None:
            raise ValueError('device="host-reference" reads in this process: pass socket=False')
        self.socket = None if in_process else onecopy.daemon_socket(socket)
        if self.device == "host-reference" and self.socket:
            raise ValueError('device="host-reference" reads in this process: pass socket=False')
        if unit_rows < 1 or shuffle_units < 1:
            raise ValueError("unit_rows and shuffle_units must be at least 1")
        self.unit_rows = int(unit_rows)
        self.urls, self._indexed_units = expand_urls(urls, self.socket, self.unit_rows)
        self.rank, self.world_size = shard_world(rank, world_size)
        self._world_given = rank is not None or world_size is not None
        self.node_stable = bool(node_stable)
        if self.node_stable and not shuffle:
            raise ValueError("node_stable shuffles within each node's files: it needs shuffle=True")
        self.ranks_per_node = ranks_per_node_of(ranks_per_node, self.world_size) if self.node_stable else 1
        self.shuffle_units = int(shuffle_units)
        self.dataset_index = 0  # set by Mix
        self.epoch = 0
        self._units: Optional[list[list[tuple[int, int]]]] = None
        self._open_files: dict[str, onecopy.VortexFile] = {}  # in-process reads, per url
        self._progress = Progress()
        self._resume: Optional[Progress] = None
        self._tracked = False  # set by onecopy's DataLoader before it starts workers
        self._deferred = False  # set by PackedTokens, which records what it has fully given
        self._untracked_workers = multiprocessing.Value("b", 0)
        self._in_mix = False  # set by Mix, which draws its own steps
        self._sync = None  # the gloo group equal steps are agreed in, made on first use
        self._stats = LoaderStats()

    def __getstate__(self) -> dict:
        # Open files are handles of this process; a worker started by spawn opens its own.
        state = self.__dict__.copy()
        state["_open_files"] = {}
        state["_sync"] = None
        return state

    # ---- configuration between epochs ----------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Deals the next epoch; its shuffle is drawn from (seed, epoch)."""
        self.epoch = int(epoch)
        self._progress = Progress(self.epoch)
        self._resume = None

    def set_filter(self, filter: Union[str, Expr, None]) -> None:
        """A new filter from the next iteration on; nothing is rewritten."""
        self.filter = str(filter) if filter is not None else None

    def set_columns(self, columns: Optional[Sequence[str]]) -> None:
        self.columns = list(columns) if columns is not None else None

    # ---- the plan ----------------------------------------------------------------------------------
    def _file_units(self) -> list[list[tuple[int, int]]]:
        if self._units is None:
            # Files of an s3:// prefix or glob came with their units; others are asked for, up to
            # FILES_IN_FLIGHT at once: each is an open, a HEAD of the object at least, and the
            # first batch waits for every file's units.
            if self.socket:
                client = Client(self.socket)

                def units_of(url: str) -> list[tuple[int, int]]:
                    return client.units(url, self.unit_rows)
            else:
                def units_of(url: str) -> list[tuple[int, int]]:
                    return onecopy.open(url, daemon=False).units(self.unit_rows)
            todo = [u for u in dict.fromkeys(self.urls) if u not in self._indexed_units]
            found = dict(self._indexed_units)
            if todo:
                with concurrent.futures.ThreadPoolExecutor(min(len(todo), FILES_IN_FLIGHT),
                                                           thread_name_prefix="onecopy-units") as pool:
                    found.update(zip(todo, pool.map(units_of, todo)))
            self._units = [found[u] for u in self.urls]
        return self._units

    def global_groups(self, epoch: int) -> list[list[tuple[int, int, int]]]:
        """Every shuffle group of @epoch, in its global order: consecutive shuffle_units units of
        the units of all files, shuffled by (seed, epoch). The same for any world size."""
        if self.node_stable:  # the same for the same world and ranks per node only
            return node_stable_groups(self._file_units(), self.seed, epoch, self.shuffle_units, self.world_size,
                                      self.ranks_per_node)
        every = [(f, b, e) for f, units in enumerate(self._file_units()) for b, e in units]
        order = shard_units(every, 0, 1, 0, 1, self.shuffle, self.seed, epoch)
        return [order[i:i + self.shuffle_units] for i in range(0, len(order), self.shuffle_units)]

    def _deal_of(self, progress: "Progress") -> list[list[Piece]]:
        """Every rank's pieces under @progress's deal, in the order each reads them."""
        every = self.global_groups(progress.epoch)
        rows = [sum(e - b for _, b, e in group) for group in every]
        return deal_rows(rows, range(len(every)), progress.base, progress.base_partial,
                         progress.world or self.world_size)

    def _current(self) -> "Progress":
        return self._resume if self._resume is not None else self._progress

    def groups(self, epoch: Optional[int] = None) -> list[list[tuple[int, int, int]]]:
        """This rank's pieces for @epoch (default: the current one), as its deal gives them:
        lists of (file, begin, end) row ranges."""
        progress = self._current()
        if epoch is not None and epoch != progress.epoch:
            progress = Progress(epoch)
        every = self.global_groups(progress.epoch)
        return [piece_units(every[p.group], p) for p in self._deal_of(progress)[self.rank]]

    def __len__(self) -> int:
        """Samples (batch_rows None) or batches this rank reads per epoch (with equal steps, every
        rank's). Knowable only without a filter: with one, raises TypeError."""
        if self.filter:
            raise TypeError("len() of a filtered onecopy Dataset is unknown until it is scanned")
        if self._equalizes():
            return EqualSteps(self, self.epoch, 0).planned_steps()
        sizes = [sum(e - b for _, b, e in g) for g in self.groups()]
        if self.batch_rows is None:
            return sum(sizes)
        return sum(-(-n // self.batch_rows) for n in sizes)

    # ---- reading -----------------------------------------------------------------------------------
    def _file_scan(self, f: int, ranges: list[tuple[int, int]]) -> tuple[str, object]:
        """(url, scan) of file @f over @ranges: the reader (or the daemon) decodes ahead across
        units instead of starting afresh for each. Strings come with offsets: a shuffled batch is
        gathered from the group's batches (onecopy.Batches), which indexes one bytes buffer per
        column, and strings end as Python str either way."""
        url = self.urls[f]
        if self.socket:
            return url, Client(self.socket).scan_ranges(url, ranges, self.columns, self.filter,
                                                        strings="offsets", device=self.device)
        if url not in self._open_files:
            self._open_files[url] = onecopy.open(url, daemon=False)
        return url, self._open_files[url].scan_ranges(ranges, self.columns, self.filter, strings="offsets",
                                                      device=self.device)

    def _group_scans(self, group: list[tuple[int, int, int]]) -> Iterator[tuple[str, object]]:
        """(url, scan) for each file of @group, in order, with up to FILES_IN_FLIGHT of them
        started ahead: a group of many small files is read at the store's bandwidth, not one
        request's latency after another (each start is an open and a scan request, after which
        the daemon or the C library fetches on its own)."""
        by_file: dict[int, list[tuple[int, int]]] = {}
        for f, b, e in group:
            by_file.setdefault(f, []).append((b, e))
        files = list(by_file.items())
        if len(files) == 1:
            yield self._file_scan(*files[0])
            return
        with concurrent.futures.ThreadPoolExecutor(min(len(files), FILES_IN_FLIGHT),
                                                   thread_name_prefix="onecopy-open") as pool:
            started = collections.deque(pool.submit(self._file_scan, f, r) for f, r in files[:FILES_IN_FLIGHT])
            for f, r in files[FILES_IN_FLIGHT:]:
                scan = started.popleft().result()
                started.append(pool.submit(self._file_scan, f, r))
                yield scan
            while started:
                yield started.popleft().result()

    def _read_group(self, group: list[tuple[int, int, int]]) -> Union[Batches, _device_rows.DeviceRows]:
        if self.device != "cpu":
            return self._read_group_on_device(group)
        batches: list[pa.RecordBatch] = []
        schema = None
        for url, scan in self._group_scans(group):
            reader = pa.RecordBatchReader.from_stream(scan)
            schema = reader.schema
            # Daemon batches past half of what a client may hold are copies (the client library
            # copies them out of the slabs), so a whole group can be kept.
            batches.extend(reader)
            self._stats.add_scan(url, scan.stats())
        # Parts are gathered straight from the scans' batches, one copy of what each selects
        # (pyarrow's take over chunks would concatenate them first: a second copy of everything).
        return Batches(batches, schema)

    def _read_group_on_device(self, group: list[tuple[int, int, int]]) -> _device_rows.DeviceRows:
        """@group's rows in device memory: each device batch wrapped as tensors, held until the
        group is concatenated; a daemon's batches are copied and released at once, since the
        client may hold only so many of its leases (daemon/PROTOCOL.md "Leases")."""
        columns: list[dict] = []
        names: list[str] = []
        rows = 0
        for url, scan in self._group_scans(group):
            for batch in scan:
                if batch.num_rows:
                    columns.append(_device_rows.batch_columns(batch, self._torch_device, copy=bool(self.socket)))
                    names, rows = list(batch.columns), rows + batch.num_rows
            self._stats.add_scan(url, scan.stats())
        return _device_rows.DeviceRows(columns, names, rows, self._torch_device)

    def _streamed_batches(self, group: list[tuple[int, int, int]], skip: int) -> Iterator[pa.RecordBatch]:
        """@group's rows after its first @skip, batch by batch as the scans deliver them, each
        dropped by the time the next is asked for: daemon batches stay views of its slabs.
        The scans keep the file's chunks as batches, which _cut slices: small batches would
        cost a message, a lease and a Release each, and keep the daemon's decode-ahead (at
        most daemon_client_max_batches_in_flight batches) short."""
        for url, scan in self._group_scans(group):
            for batch in pa.RecordBatchReader.from_stream(scan):
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                yield batch.slice(skip) if skip else batch
                skip = 0
            self._stats.add_scan(url, scan.stats())

    def _group_rows(self, groups: dict, todo: list[int]) -> Iterator[tuple[int, Batches]]:
        """(piece, its rows) for each of @todo, the next `prefetch_groups` read ahead on a
        background thread while the loop uses the current one (the reads, in the daemon or in
        the C library, run without the GIL), so num_workers=0 needs no workers to keep up."""
        if not self.prefetch_groups:
            for g in todo:
                yield g, self._read_group(groups[g])
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="onecopy-prefetch") as pool:
            ahead = collections.deque(pool.submit(self._read_group, groups[g]) for g in todo[:self.prefetch_groups + 1])
            try:
                for i, g in enumerate(todo):
                    table = ahead.popleft().result()
                    if i + self.prefetch_groups + 1 < len(todo):
                        ahead.append(pool.submit(self._read_group, groups[todo[i + self.prefetch_groups + 1]]))
                    yield g, table
            finally:
                for f in ahead:  # abandoned early: reads not started never start
                    f.cancel()

    def _my_pieces(self, progress: Progress) -> dict[int, list[tuple[int, int, int]]]:
        """This worker's pieces still to read, by key, each as its (file, begin, end) ranges:
        every k-th of the rank's, in its order."""
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        every = self.global_groups(progress.epoch)
        todo = [p for p in self._deal_of(progress)[self.rank] if p.key not in progress.done]
        return {p.key: piece_units(every[p.group], p) for p in todo[worker::workers]}

    def _check_world(self) -> None:
        """A dataset made before init_process_group took its place from the launcher: the
        process group, initialised since, must agree."""
        dist = None if self._world_given else distributed_world()
        if dist is not None and dist != (self.rank, self.world_size):
            raise ValueError(f"this Dataset was made as rank {self.rank} of {self.world_size}, but torch.distributed "
                             f"now says rank {dist[0]} of {dist[1]}; pass rank= and world_size=")

    # ---- equal steps (onecopy._steps) -------------------------------------------------------------
    def _equalizes(self) -> bool:
        return self.world_size > 1 and self.uneven is not None and not self._deferred and not self._in_mix

    def planned_rows(self, epoch: int) -> Optional[list[int]]:
        """Rows every rank reads in @epoch, by rank; None with a filter (unknown until read)."""
        if self.filter:
            return None
        progress = self._current()
        if epoch != progress.epoch:
            progress = Progress(epoch)
        return [sum(p.hi - p.lo - progress.base_partial.get(p.key, 0) for p in pieces)
                for pieces in self._deal_of(progress)]

    def sync_group(self):
        """The process group equal steps under a filter are agreed in: the default one when it is
        gloo, else a gloo group made once (every rank makes it at its first step)."""
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            raise ValueError(f"equal steps on {self.world_size} ranks are agreed through torch.distributed when "
                             "their number is unknown until read (a filter, a mix, packing): call "
                             "init_process_group before iterating, or pass uneven=None")
        if torch.distributed.get_backend() == "gloo":
            return None
        if self._sync is None:
            self._sync = torch.distributed.new_group(backend="gloo")
        return self._sync

    def record(self, pos: torch.Tensor) -> None:
        self._consumed(pos)

    def steps_given(self, epoch: int, steps: int) -> None:
        if epoch == self._progress.epoch:
            self._progress.steps = steps

    @property
    def steps(self) -> int:
        """Equal steps given so far this epoch."""
        return self._progress.steps

    def __iter__(self) -> Iterator[dict]:
        info = torch.utils.data.get_worker_info()
        if info is None:
            self._check_world()
        elif self.device != "cpu":
            raise ValueError(f"a Dataset with device={self.device!r} reads in the loading process: use num_workers=0 "
                             "(prefetch_groups reads ahead on a thread)")
        if info is not None and not self._tracked:
            self._untracked_workers.value = 1
            if self._equalizes():
                raise ValueError(f"equal steps on {self.world_size} ranks are given by onecopy.torch.DataLoader, "
                                 "not torch's DataLoader with workers; use it, or pass uneven=None")
        start = self._resume if self._resume is not None else Progress(self.epoch)
        if info is None:
            # Iterated in this process: progress is what this loop hands out.
            self._progress, self._resume = start.copy(), None
        equal = info is None and self._equalizes()
        items = self._items(start, info, equal)
        if equal:
            yield from EqualSteps(self, start.epoch, start.steps).run(items)
        else:
            yield from items

    def _items(self, start: Progress, info, equal: bool) -> Iterator[dict]:
        # Items carry their position to whoever records it: onecopy's DataLoader across worker
        # processes, PackedTokens, which knows which samples it has given whole, or EqualSteps,
        # which knows which it has handed out.
        tag = (info is not None and self._tracked) or self._deferred or equal
        record = info is None and not self._deferred and not equal
        groups = self._my_pieces(start)
        timer = ItemTimer(self._stats)
        try:
            items = self._group_items(start, groups, timer, tag, record)
            # A worker's batches cross to the training process in one shared buffer each, reused.
            yield from map(OneBuffer, items) if info is not None and self.batch_rows else items
        finally:
            timer.flush()

    def _group_items(self, start: Progress, groups: dict, timer: ItemTimer, tag: bool,
                     record: bool) -> Iterator[dict]:
        todo = list(groups)
        step = self.batch_rows or 1024
        # Unshuffled through the daemon, rows stream (views of its slabs; it reads ahead);
        # otherwise whole groups are read, ahead on a thread, and permuted or sliced.
        streamed = self.socket and not self.shuffle and self.device == "cpu"
        parts = (self._streamed_parts(groups, todo, start, step, timer) if streamed
                 else self._group_parts(groups, todo, start, step, timer))
        for g, part, given, n in parts:
            if part is None:  # a group with nothing (left) to give
                if record:
                    self._progress.record(start.epoch, g, given, n)
                continue
            if isinstance(part, _device_rows.Part):
                tensors, names, rows = part
            else:
                tensors = batch_tensors(part if isinstance(part, pa.RecordBatch) else
                                         part.combine_chunks().to_batches()[0])
                names, rows = part.schema.names, part.num_rows
            if self.batch_rows:
                item = tensors
                if tag:
                    item[POSITION_KEY] = torch.tensor([self.dataset_index, start.epoch, g, given, n])
                if record:
                    self._progress.record(start.epoch, g, given, n)
                timer.made()
                yield item
                timer.resumed()
                continue
            first = given - rows
            for i in range(rows):
                item = sample(tensors, names, i)
                if tag:
                    item[POSITION_KEY] = torch.tensor([self.dataset_index, start.epoch, g, first + i + 1, n])
                if record:
                    self._progress.record(start.epoch, g, first + i + 1, n)
                timer.made()
                yield item
                timer.resumed()

    def _group_parts(self, groups: dict, todo: list[int], start: Progress, step: int,
                     timer: ItemTimer) -> Iterator[tuple]:
        """(piece, part, rows given after it, rows in the piece) for @todo's pieces (keys of
        @groups), each read whole and cut into parts of @step rows, permuted by (seed, epoch,
        group, and the piece's first row when it is not 0) with shuffle; (piece, None, n, n)
        for a piece with no rows left."""
        for g, rows in self._group_rows(groups, todo):
            timer.waited()
            n = rows.num_rows
            order = None
            if self.shuffle:
                # A whole group is permuted as for any world; a piece of one by its first row too.
                lo = key_start(g)
                seed = [self.seed, start.epoch, key_group(g)] + ([lo] if lo else [])
                order = np.random.Generator(np.random.PCG64(seed)).permutation(n)
            given = start.start_of(g)
            if given >= n:
                yield g, None, n, n
            while given < n:
                end = min(n, given + step)
                part = rows.take(order[given:end] if order is not None else np.arange(given, end))
                yield g, part, end, n
                given = end
            timer.flush()

    def _streamed_parts(self, groups: dict, todo: list[int], start: Progress, step: int,
                        timer: ItemTimer) -> Iterator[tuple]:
        """_group_parts for groups that stream: a group's size is known only at its end, so
        parts before its last carry UNKNOWN_ROWS, and the last one the group's row count."""
        for g in todo:
            given = start.start_of(g)
            pending = None
            for part in cut(self._streamed_batches(groups[g], given), step):
                timer.waited()
                if pending is not None:
                    yield g, pending, given, UNKNOWN_ROWS
                pending = part
                given += part.num_rows
            yield g, pending, given, given
            timer.flush()

    def stats(self) -> dict:
        """Where the time went, totals since this Dataset was made, DataLoader workers' included
        (onecopy._loader_stats): "scans" read, their "rows", "batches", "bytes_read" and stages
        in seconds (format/scan_profile.hpp): "storage_s" waiting for reads, "decode_s",
        "copy_s" into the daemon's slabs, "consumer_wait_s" the scans waiting on this loader,
        "pool_wait_s" on the daemon's slab pool, "wait_s" this loader waiting on the scans,
        "wall_s"; "bottleneck", the stage that held the scans up longest ("consumer": they kept
        up); "loader": "waiting_for_data_s" (the loop waiting for a shuffle group),
        "assemble_s" (shuffle, take, tensors), "training_s" (the training loop's time between
        items), "items", and "bound_by" ("data" or "training", whichever the other waited on);
        "recent_scans": the latest scans read in this process, each with its url and stages."""
        return self._stats.snapshot()

    # ---- checkpoints -------------------------------------------------------------------------------
    def _consumed(self, pos: torch.Tensor) -> None:
        """Records items the training loop received (rows of POSITION_KEY tensors; rows with a
        negative group say nothing)."""
        for row in pos.reshape(-1, 5).tolist():
            if row[2] >= 0:
                self._progress.record(row[1], row[2], row[3], row[4])

    def _start_tracking(self) -> None:
        """Called by onecopy's DataLoader once its workers hold the resume point."""
        start = self._resume if self._resume is not None else Progress(self.epoch)
        self._progress, self._resume = start.copy(), None

    def state_dict(self) -> dict:
        """Where this rank's epoch stands, in a few integers whatever the dataset's size: "epoch",
        "steps" (equal steps given), "done_prefix" (the first pieces of this rank's deal, all
        finished), "done_ahead" (the keys of pieces finished past them) and "partial" (samples
        given by each piece in flight, by key); after a resume with another world, the same of
        the pieces finished or begun before this deal ("base_prefix", "base_ahead", whose runs
        are [first, end] pairs, "base_partial"); and what the plan depends on: the files
        ("files", "files_sha256"), filter, seed, shuffle, units, rank and world. Exact when
        iterated in this process or through onecopy.torch.DataLoader; a plain torch DataLoader
        with workers cannot report what its workers gave, so that raises RuntimeError. Resume a
        job with the same ranks from each rank's own state_dict, or with another number of
        ranks from all of them (a list)."""
        if self._untracked_workers.value and not self._tracked:
            raise RuntimeError("this Dataset was iterated in torch DataLoader workers, whose progress it cannot "
                               "see; iterate it through onecopy.torch.DataLoader for exact state_dict()")
        progress = self._progress
        deal = [p.key for p in self._deal_of(progress)[self.rank]] if progress.done else []
        return {"version": 4, "files": len(self.urls), "files_sha256": files_digest(self.urls),
                "filter": self.filter, "columns": self.columns, "seed": self.seed, "shuffle": self.shuffle,
                "rank": self.rank, "world_size": self.world_size, "unit_rows": self.unit_rows,
                "shuffle_units": self.shuffle_units, "batch_rows": self.batch_rows, "uneven": self.uneven,
                **progress.to_dict(deal)}

    def _check_plan(self, state: dict) -> None:
        """Raises ValueError unless @state (a state_dict of version 4, or of 2 or 3 saved at an
        epoch's start) was saved for this Dataset's files and plan."""
        if state.get("version") not in (2, 3, 4):
            raise ValueError(f"state_dict version {state.get('version')!r} is not 2, 3 or 4: resume at an epoch "
                             "boundary")
        if state["version"] < 4 and _dealt_groups(state):
            raise ValueError(f"state_dict version {state['version']} was saved mid-epoch by an onecopy that dealt "
                             "whole shuffle groups to the ranks, and this one deals their rows: resume from a "
                             "checkpoint saved at an epoch boundary")
        if state["version"] == 2:
            files = (len(state["urls"]), files_digest(state["urls"]))
        else:
            files = (int(state["files"]), state["files_sha256"])
        if files != (len(self.urls), files_digest(self.urls)):
            raise ValueError(f"state_dict was saved for other files ({files[0]} files, sha256 {files[1][:16]}...) "
                             f"than this Dataset reads ({len(self.urls)} files, sha256 "
                             f"{files_digest(self.urls)[:16]}...): resume over the same files, in the same order")
        for key in ("filter", "seed", "shuffle", "unit_rows", "shuffle_units"):
            if state.get(key) != getattr(self, key):
                raise ValueError(f"state_dict was saved with {key}={state.get(key)!r}, this Dataset has "
                                 f"{getattr(self, key)!r}; change filters and sharding at epoch boundaries")

    def load_state_dict(self, state: Union[dict, Sequence[dict]]) -> None:
        """Resumes at @state on the next iteration: the same remaining samples, none repeated or
        lost, with any number of DataLoader workers. @state is this rank's state_dict() from a job
        of the same ranks, or the list of every rank's (in any order) from a job of any number of
        ranks: their remaining rows are dealt again to this job's ranks. The plan's inputs must
        match. State dicts of versions 2 and 3 (onecopy's earlier formats, whose deals were of
        whole groups) load when saved at an epoch's start."""
        states = list(state) if isinstance(state, (list, tuple)) else [state]
        if not states:
            raise ValueError("load_state_dict needs a state_dict, or a list of them")
        for st in states:
            self._check_plan(st)
        one = states[0]
        if len(states) == 1 and (one["rank"], one["world_size"]) == (self.rank, self.world_size):
            progress = Progress.from_dict(one, self._deal_of)
        elif self.node_stable:
            raise ValueError("a node_stable Dataset resumes with the world it was saved from: its order depends on "
                             "world_size and ranks_per_node")
        elif len(states) == 1 and one["world_size"] != 1:
            raise ValueError(f"this state_dict is rank {one['rank']} of {one['world_size']}'s and this Dataset is rank "
                             f"{self.rank} of {self.world_size}: resume with another world from every rank's "
                             "state_dict, as a list")
        else:
            progress = Progress.merged(states, self.world_size, self._deal_of)
        self.epoch = progress.epoch
        self._resume = progress
        self._progress = progress.copy()


def _dealt_groups(state: dict) -> bool:
    """Whether @state, of version 2 or 3, records progress through its epoch's groups."""
    keys = ("done", "partial", "base", "base_partial") if state["version"] == 2 else (
        "done_prefix", "done_ahead", "partial", "base_prefix", "base_ahead", "base_partial")
    return any(state.get(k) for k in keys)


def gather_state_dicts(dataset, group=None) -> list[dict]:
    """Every rank's state_dict() of @dataset (a Dataset, Mix or PackedTokens), on every rank: a
    collective of torch.distributed that all ranks call together. Save its result (from one
    rank) to resume the job with any number of ranks: load_state_dict(that list)."""
    out: list = [None] * torch.distributed.get_world_size(group)
    torch.distributed.all_gather_object(out, dataset.state_dict(), group=group)
    return out


class _CollatePositions:
    """Wraps a collate function: takes the position rows out of every item first (an item may
    carry any number: a packed sequence ends several samples), collates the rest, and attaches
    them all as one (rows, 5) tensor."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, batch):
        items = batch if isinstance(batch, list) else [batch]
        rows = [b.pop(POSITION_KEY).reshape(-1, 5) for b in items if isinstance(b, dict) and POSITION_KEY in b]
        out = self.inner(batch)
        if rows and isinstance(out, dict):
            out[POSITION_KEY] = torch.cat(rows)
        return out


class DataLoader(torch.utils.data.DataLoader):
    """torch's DataLoader that keeps the Dataset's state_dict() exact with workers: items carry
    their position from the workers, and this loader records it as the training loop receives
    each item (and removes it from the item). Works with Dataset, Mix and PackedTokens."""

    def __init__(self, dataset, *args, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        self.collate_fn = _CollatePositions(self.collate_fn)

    def __iter__(self):
        ds = self.dataset
        tracking = isinstance(ds, (Dataset, Mix, PackedTokens)) and self.num_workers > 0
        if tracking:
            ds._tracked = True
        try:
            it = super().__iter__()  # workers start here, each with a copy of the resume point
            if tracking:
                ds._start_tracking()
            if tracking and ds._equalizes():
                # Equal steps are cut here, from what every worker sends, and recorded as given.
                # Each item from the workers is a step: a Dataset's batch, or what this loader
                # collated of samples or sequences.
                if self.batch_size is not None and ds.batch_rows:
                    raise ValueError("a Dataset with batch_rows batches already: use batch_size=None")
                yield from EqualSteps(ds, ds.epoch, ds.steps).run(iter(it))
                return
            # Without workers the Dataset runs in this process and records as it yields.
            for item in it:
                if tracking and isinstance(item, dict) and POSITION_KEY in item:
                    ds._consumed(item.pop(POSITION_KEY))
                yield item
        finally:
            if tracking:
                ds._tracked = False

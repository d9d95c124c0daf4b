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
  3. rank r of W takes every W-th group from group r; the rows of a group are permuted by a
     generator seeded with (seed, epoch, group): a shuffle buffer of bounded size whose order
     depends on neither timing nor world size;
  4. DataLoader worker w of W takes every W-th group still to read.
Progress is counted per group, so a resumed epoch reads only unfinished groups and skips the
samples a group already gave, whatever the new worker count; resumed with another number of
ranks from every rank's state_dict, the groups not finished are dealt again to the new ranks
(step 3 over what is left), those begun going on where they stopped. As every rank and worker
reads its groups in the deal's order, a rank's finished groups are a run at the start of its
deal and a few ahead of it: state_dict() keeps the run's length, those few and one offset per
group in flight, a few integers whatever the dataset's size.
  5. with world_size > 1, every rank gives the same number of batches of exactly batch_rows
     rows (onecopy._steps: counted from the plan, or agreed through torch.distributed under a
     filter), by the `uneven` policy; in this process, or in onecopy.torch.DataLoader's when
     workers read.
"""

from __future__ import annotations

import collections
import concurrent.futures
import hashlib
import itertools
import multiprocessing
import os
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import torch
import torch.utils.data

import onecopy
from onecopy import _device_rows
from onecopy._device import HOST_REFERENCE, parse_device
from onecopy._loader_stats import ItemTimer, LoaderStats, merged_snapshots
from onecopy._native import Batches, Client, shard_units
from onecopy._steps import POSITION_KEY, EqualSteps, check_uneven
from onecopy.expr import Expr

__all__ = ["DataLoader", "Dataset", "Mix", "PackedTokens", "collate_varlen", "gather_state_dicts"]

#: POSITION_KEY (onecopy._steps) names the position tensor that items carry between DataLoader
#: workers and onecopy's DataLoader, which removes it: [dataset index, epoch, group, samples
#: given after this item, samples in the group (UNKNOWN_ROWS before a streamed group's last)].


def _expand(urls, socket: Optional[str]) -> list[str]:
    """Each pattern's files (onecopy.expand; listed by the daemon when there is one)."""
    items = [urls] if isinstance(urls, (str, os.PathLike)) else list(urls)
    if not items:
        raise ValueError("no dataset URLs given")
    out: list[str] = []
    for item in items:
        out.extend(Client(socket).list(os.fspath(item)) if socket else onecopy.expand(item))
    return out


def _launcher_world() -> Optional[tuple[int, int]]:
    """(RANK, WORLD_SIZE) as torchrun, torch.distributed.launch, SLURM wrappers and most other
    launchers set them, or None when neither is set."""
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None and world is None:
        return None
    if rank is None or world is None:
        raise ValueError(f"the launcher set {'RANK' if rank is not None else 'WORLD_SIZE'} but not "
                         f"{'WORLD_SIZE' if rank is not None else 'RANK'}; set both, or pass rank= and world_size=")
    try:
        return int(rank), int(world)
    except ValueError:
        raise ValueError(f"RANK={rank!r} and WORLD_SIZE={world!r} are not integers") from None


def _distributed_world() -> Optional[tuple[int, int]]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None


def _world(rank: Optional[int], world_size: Optional[int]) -> tuple[int, int]:
    """This process's (rank, world size) for sharding: the arguments when given (data-parallel
    ranks under tensor or pipeline parallelism differ from the global rank); else
    torch.distributed's when it is initialised; else the launcher's RANK and WORLD_SIZE, so that
    a dataset made before init_process_group, or in a job that never calls it, still shards.
    torch.distributed and the launcher disagreeing is an error, not a guess."""
    if rank is not None or world_size is not None:
        r, w = int(rank or 0), int(1 if world_size is None else world_size)
    else:
        dist, launcher = _distributed_world(), _launcher_world()
        if dist is not None and launcher is not None and dist != launcher:
            raise ValueError(f"torch.distributed says rank {dist[0]} of {dist[1]} but the launcher's RANK and "
                             f"WORLD_SIZE say {launcher[0]} of {launcher[1]}; pass rank= and world_size=")
        r, w = dist or launcher or (0, 1)
    if not 0 <= r < w:
        raise ValueError(f"rank {r} is not in [0, world_size {w})")
    return r, w


def _column_tensors(name: str, arr: pa.Array, out: dict) -> None:
    """Adds the tensors of one column to @out: a DLPack view for fixed-width columns, values plus
    "<name>.offsets" for lists, a list of str for strings."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if arr.null_count:
        raise onecopy.OnecopyError(
            "invalid", f"column {name!r} has {arr.null_count} nulls in this batch; tensors have no "
                       f"nulls: add `{name} IS NOT NULL` to the filter")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = torch.from_dlpack(arr.offsets)
        out[name] = torch.from_dlpack(arr.flatten())
        out[name + ".offsets"] = offsets - offsets[0] if len(offsets) and offsets[0] != 0 else offsets
    elif pa.types.is_boolean(t):
        out[name] = torch.from_numpy(arr.to_numpy(zero_copy_only=False))  # Arrow packs bits
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        out[name] = arr.to_pylist()
    elif pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_duration(t):
        out[name] = torch.from_dlpack(arr.view(pa.int64()))
    elif pa.types.is_date32(t):
        out[name] = torch.from_dlpack(arr.view(pa.int32()))
    elif pa.types.is_fixed_size_list(t):
        out[name] = torch.from_dlpack(arr.flatten()).reshape(len(arr), t.list_size)
    else:
        out[name] = torch.from_dlpack(arr)


def _batch_tensors(batch: pa.RecordBatch) -> dict:
    out: dict[str, Any] = {}
    for name, arr in zip(batch.schema.names, batch.columns):
        _column_tensors(name, arr, out)
    return out


# The row count of a streamed group, in positions given before its last item: more than any.
UNKNOWN_ROWS = 2**62


def _cut(batches: Iterator[pa.RecordBatch], step: int) -> Iterator[pa.Table]:
    """@batches' rows in tables of @step rows (the last shorter): slices of one batch where a
    table lies within it, else of the few it spans."""
    pieces: list[pa.RecordBatch] = []
    have = 0
    for batch in batches:
        pieces.append(batch)
        have += batch.num_rows
        while have >= step:
            table = pa.Table.from_batches(pieces)
            yield table.slice(0, step)
            rest = table.slice(step)
            pieces = [b for b in rest.to_batches() if b.num_rows]
            have -= step
    if have:
        yield pa.Table.from_batches(pieces)


def _sample(tensors: dict, names: list[str], i: int) -> dict:
    """Row @i of a batch's tensors: scalars, token views, strings."""
    out = {}
    for name in names:
        v = tensors[name]
        off = tensors.get(name + ".offsets")
        out[name] = v[int(off[i]):int(off[i + 1])] if off is not None else v[i]
    return out


def _files_digest(urls: Sequence[str]) -> str:
    """sha256 (hex) of @urls in their order: what a state_dict keeps of the files it read."""
    return hashlib.sha256("\0".join(urls).encode()).hexdigest()


def _prefix_and_rest(members: set[int], order: Iterable[int]) -> tuple[int, list[int]]:
    """(P, rest): the first P groups of @order are all in @members; rest, the other members,
    sorted."""
    prefix = list(itertools.takewhile(members.__contains__, order))
    return len(prefix), sorted(members.difference(prefix))


def _expanded(prefix: int, order: Sequence[int], rest: Iterable) -> set[int]:
    """The set _prefix_and_rest encoded as (@prefix, @rest) over @order."""
    return set(order[:int(prefix)]) | {int(g) for g in rest}


class _Progress:
    """One rank's epoch: the deal it reads (groups done before it, `base`; offsets into groups
    others had started, `base_partial`; the world it was dealt to), the groups it finished and
    the samples its unfinished groups gave. Group numbers are global: the same on every rank
    and for any world size."""

    def __init__(self, epoch: int = 0, done: Sequence[int] = (), partial: Optional[dict] = None, steps: int = 0,
                 base: Sequence[int] = (), base_partial: Optional[dict] = None, world: int = 0):
        self.epoch = epoch
        self.done = set(int(g) for g in done)
        self.partial = {int(g): int(n) for g, n in (partial or {}).items()}
        self.steps = int(steps)  # equal steps given since the deal (onecopy._steps)
        self.base = frozenset(int(g) for g in base)
        self.base_partial = {int(g): int(n) for g, n in (base_partial or {}).items()}
        self.world = int(world)  # 0: the dataset's own world size

    def record(self, epoch: int, group: int, given: int, total: int) -> None:
        if epoch != self.epoch or group in self.done:
            return
        if given >= total:
            self.done.add(group)
            self.partial.pop(group, None)
        else:
            self.partial[group] = max(self.partial.get(group, 0), given)

    def start_of(self, group: int) -> int:
        """Samples of @group given before this iteration."""
        return max(self.partial.get(group, 0), self.base_partial.get(group, 0))

    def to_dict(self, deal: Sequence[int]) -> dict:
        """This progress in a few integers, whatever the number of groups: the finished groups
        as the length of the run of them that starts @deal (the groups this rank reads, in
        order; only needed when some are done) and the others finished ahead of it; the base
        as the run of groups 0, 1, ... in it and the others; one offset per group in flight."""
        done_prefix, done_ahead = _prefix_and_rest(self.done, deal)
        base_prefix, base_ahead = _prefix_and_rest(self.base, itertools.count())
        return {"epoch": self.epoch, "steps": self.steps, "done_prefix": done_prefix, "done_ahead": done_ahead,
                "partial": dict(sorted(self.partial.items())), "base_prefix": base_prefix,
                "base_ahead": base_ahead, "base_partial": dict(sorted(self.base_partial.items()))}

    @staticmethod
    def from_dict(state: dict, deal_of: Callable[["_Progress", int], list[int]]) -> "_Progress":
        """The progress of @state, a state_dict of version 3 (to_dict's) or 2 (its sets as
        lists), dealt to its world. deal_of(progress, rank): the groups @rank reads under
        @progress's deal, which a version 3 done_prefix counts in."""
        if state["version"] == 2:
            return _Progress(state["epoch"], state["done"], state["partial"], state.get("steps", 0),
                             state.get("base", ()), state.get("base_partial"), state["world_size"])
        base = _expanded(state["base_prefix"], range(int(state["base_prefix"])), state["base_ahead"])
        progress = _Progress(state["epoch"], (), state["partial"], state["steps"], base, state["base_partial"],
                             state["world_size"])
        deal = deal_of(progress, int(state["rank"])) if state["done_prefix"] else []
        progress.done = _expanded(state["done_prefix"], deal, state["done_ahead"])
        return progress

    def copy(self) -> "_Progress":
        return _Progress(self.epoch, self.done, self.partial, self.steps, self.base, self.base_partial, self.world)

    @staticmethod
    def merged(states: Sequence[dict], world: int,
               deal_of: Callable[["_Progress", int], list[int]]) -> "_Progress":
        """The deal for @world ranks of what every rank of an earlier deal left (their
        state_dicts, one per rank, read by from_dict with @deal_of): their finished groups join
        the base, their partial groups' offsets carry over, and the steps count again from 0."""
        first = states[0]
        ranks = sorted(int(st["rank"]) for st in states)
        if ranks != list(range(int(first["world_size"]))):
            raise ValueError(f"a resume with another world needs the state_dict of every rank of the one saved "
                             f"({first['world_size']} ranks), got ranks {ranks}")
        saved = [_Progress.from_dict(st, deal_of) for st in states]
        for p in saved:
            if (p.epoch, p.base, p.base_partial) != (saved[0].epoch, saved[0].base, saved[0].base_partial):
                raise ValueError("these state_dicts come from different epochs or deals")
        base = set(saved[0].base)
        partial = dict(saved[0].base_partial)
        for p in saved:
            base.update(p.done)
            for g, n in p.partial.items():
                partial[g] = max(partial.get(g, 0), n)
        partial = {g: n for g, n in partial.items() if g not in base}
        return _Progress(saved[0].epoch, base=base, base_partial=partial, world=world)


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
    of each shuffle group) where list columns are "<col>" values plus "<col>.offsets".
    """

    def __init__(self, urls, columns: Optional[Sequence[str]] = None, filter: Union[str, Expr, None] = None,
                 batch_rows: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 socket: Union[str, None, bool] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None, unit_rows: int = 8192, shuffle_units: int = 8,
                 uneven: Optional[str] = "repeat", prefetch_groups: int = 1, device: str = "cpu"):
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
        self.urls = _expand(urls, self.socket)
        self.rank, self.world_size = _world(rank, world_size)
        self._world_given = rank is not None or world_size is not None
        if unit_rows < 1 or shuffle_units < 1:
            raise ValueError("unit_rows and shuffle_units must be at least 1")
        self.unit_rows = int(unit_rows)
        self.shuffle_units = int(shuffle_units)
        self.dataset_index = 0  # set by Mix
        self.epoch = 0
        self._units: Optional[list[list[tuple[int, int]]]] = None
        self._open_files: dict[str, onecopy.VortexFile] = {}  # in-process reads, per url
        self._progress = _Progress()
        self._resume: Optional[_Progress] = None
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
        self._progress = _Progress(self.epoch)
        self._resume = None

    def set_filter(self, filter: Union[str, Expr, None]) -> None:
        """A new filter from the next iteration on; nothing is rewritten."""
        self.filter = str(filter) if filter is not None else None

    def set_columns(self, columns: Optional[Sequence[str]]) -> None:
        self.columns = list(columns) if columns is not None else None

    # ---- the plan ----------------------------------------------------------------------------------
    def _file_units(self) -> list[list[tuple[int, int]]]:
        if self._units is None:
            if self.socket:
                client = Client(self.socket)
                self._units = [client.units(u, self.unit_rows) for u in self.urls]
            else:
                self._units = [onecopy.open(u, daemon=False).units(self.unit_rows) for u in self.urls]
        return self._units

    def global_groups(self, epoch: int) -> list[list[tuple[int, int, int]]]:
        """Every shuffle group of @epoch, in its global order: consecutive shuffle_units units of
        the units of all files, shuffled by (seed, epoch). The same for any world size."""
        every = [(f, b, e) for f, units in enumerate(self._file_units()) for b, e in units]
        order = shard_units(every, 0, 1, 0, 1, self.shuffle, self.seed, epoch)
        return [order[i:i + self.shuffle_units] for i in range(0, len(order), self.shuffle_units)]

    def _deal(self, n_groups: int, progress: "_Progress", rank: int) -> list[int]:
        """The groups @rank reads under @progress's deal: those not in its base, every
        world-th."""
        world = progress.world or self.world_size
        return [g for g in range(n_groups) if g not in progress.base][rank::world]

    def _epoch_deal(self, progress: "_Progress", rank: int) -> list[int]:
        """_deal over every group of @progress's epoch."""
        return self._deal(len(self.global_groups(progress.epoch)), progress, rank)

    def _current(self) -> "_Progress":
        return self._resume if self._resume is not None else self._progress

    def groups(self, epoch: Optional[int] = None) -> list[list[tuple[int, int, int]]]:
        """This rank's shuffle groups for @epoch (default: the current one), as its deal gives
        them: lists of (file, begin, end) units."""
        epoch = self.epoch if epoch is None else epoch
        every = self.global_groups(epoch)
        return [every[g] for g in self._deal(len(every), self._current(), self.rank)]

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
    def _group_scans(self, group: list[tuple[int, int, int]]) -> Iterator[tuple[str, object]]:
        """(url, scan) for each file of @group, over all its units there: the reader (or the
        daemon) decodes ahead across units instead of starting afresh for each. Strings come with
        offsets: a shuffled batch is gathered from the group's batches (onecopy.Batches), which
        indexes one bytes buffer per column, and strings end as Python str either way."""
        by_file: dict[int, list[tuple[int, int]]] = {}
        for f, b, e in group:
            by_file.setdefault(f, []).append((b, e))
        for f, ranges in by_file.items():
            url = self.urls[f]
            if self.socket:
                yield url, Client(self.socket).scan_ranges(url, ranges, self.columns, self.filter,
                                                           strings="offsets", device=self.device)
            else:
                if url not in self._open_files:
                    self._open_files[url] = onecopy.open(url, daemon=False)
                yield url, self._open_files[url].scan_ranges(ranges, self.columns, self.filter,
                                                             strings="offsets", device=self.device)

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

    def _group_rows(self, groups: list, todo: list[int]) -> Iterator[tuple[int, Batches]]:
        """(group, its rows) for each of @todo, the next `prefetch_groups` read ahead on a
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

    def _my_groups(self, n_groups: int, progress: _Progress) -> list[int]:
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        todo = [g for g in self._deal(n_groups, progress, self.rank) if g not in progress.done]
        return todo[worker::workers]

    def _check_world(self) -> None:
        """A dataset made before init_process_group took its place from the launcher: the
        process group, initialised since, must agree."""
        dist = None if self._world_given else _distributed_world()
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
        every = self.global_groups(epoch)
        progress = self._current()
        rows = [sum(e - b for _, b, e in group) for group in every]
        return [sum(rows[g] - progress.base_partial.get(g, 0) for g in self._deal(len(every), progress, r))
                for r in range(self.world_size)]

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
        start = self._resume if self._resume is not None else _Progress(self.epoch)
        if info is None:
            # Iterated in this process: progress is what this loop hands out.
            self._progress, self._resume = start.copy(), None
        equal = info is None and self._equalizes()
        items = self._items(start, info, equal)
        if equal:
            yield from EqualSteps(self, start.epoch, start.steps).run(items)
        else:
            yield from items

    def _items(self, start: _Progress, info, equal: bool) -> Iterator[dict]:
        # Items carry their position to whoever records it: onecopy's DataLoader across worker
        # processes, PackedTokens, which knows which samples it has given whole, or EqualSteps,
        # which knows which it has handed out.
        tag = (info is not None and self._tracked) or self._deferred or equal
        record = info is None and not self._deferred and not equal
        groups = self.global_groups(start.epoch)
        timer = ItemTimer(self._stats)
        try:
            yield from self._group_items(start, groups, timer, tag, record)
        finally:
            timer.flush()

    def _group_items(self, start: _Progress, groups: list, timer: ItemTimer, tag: bool,
                     record: bool) -> Iterator[dict]:
        todo = self._my_groups(len(groups), start)
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
                tensors = _batch_tensors(part if isinstance(part, pa.RecordBatch) else
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
                item = _sample(tensors, names, i)
                if tag:
                    item[POSITION_KEY] = torch.tensor([self.dataset_index, start.epoch, g, first + i + 1, n])
                if record:
                    self._progress.record(start.epoch, g, first + i + 1, n)
                timer.made()
                yield item
                timer.resumed()

    def _group_parts(self, groups: list, todo: list[int], start: _Progress, step: int,
                     timer: ItemTimer) -> Iterator[tuple]:
        """(group, part, rows given after it, rows in the group) for @todo's groups, each read
        whole and cut into parts of @step rows, permuted by (seed, epoch, group) with shuffle;
        (group, None, n, n) for a group with no rows left."""
        for g, rows in self._group_rows(groups, todo):
            timer.waited()
            n = rows.num_rows
            order = None
            if self.shuffle:
                rng = np.random.Generator(np.random.PCG64([self.seed, start.epoch, g]))  # any world's
                order = rng.permutation(n)
            given = start.start_of(g)
            if given >= n:
                yield g, None, n, n
            while given < n:
                end = min(n, given + step)
                part = rows.take(order[given:end] if order is not None else np.arange(given, end))
                yield g, part, end, n
                given = end
            timer.flush()

    def _streamed_parts(self, groups: list, todo: list[int], start: _Progress, step: int,
                        timer: ItemTimer) -> Iterator[tuple]:
        """_group_parts for groups that stream: a group's size is known only at its end, so
        parts before its last carry UNKNOWN_ROWS, and the last one the group's row count."""
        for g in todo:
            given = start.start_of(g)
            pending = None
            for part in _cut(self._streamed_batches(groups[g], given), step):
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
        start = self._resume if self._resume is not None else _Progress(self.epoch)
        self._progress, self._resume = start.copy(), None

    def state_dict(self) -> dict:
        """Where this rank's epoch stands, in a few integers whatever the dataset's size: "epoch",
        "steps" (equal steps given), "done_prefix" (the first groups of this rank's deal, all
        finished), "done_ahead" (the groups finished past them) and "partial" (samples given by
        each group in flight); after a resume with another world, the same of the groups
        finished before this deal ("base_prefix", "base_ahead", "base_partial"); and what the
        plan depends on: the files ("files", "files_sha256"), filter, seed, shuffle, units,
        rank and world. Exact when iterated in this process or through
        onecopy.torch.DataLoader; a plain torch DataLoader with workers cannot report what its
        workers gave, so that raises RuntimeError. Resume a job with the same ranks from each
        rank's own state_dict, or with another number of ranks from all of them (a list)."""
        if self._untracked_workers.value and not self._tracked:
            raise RuntimeError("this Dataset was iterated in torch DataLoader workers, whose progress it cannot "
                               "see; iterate it through onecopy.torch.DataLoader for exact state_dict()")
        progress = self._progress
        deal = self._epoch_deal(progress, self.rank) if progress.done else []
        return {"version": 3, "files": len(self.urls), "files_sha256": _files_digest(self.urls),
                "filter": self.filter, "columns": self.columns, "seed": self.seed, "shuffle": self.shuffle,
                "rank": self.rank, "world_size": self.world_size, "unit_rows": self.unit_rows,
                "shuffle_units": self.shuffle_units, "batch_rows": self.batch_rows, "uneven": self.uneven,
                **progress.to_dict(deal)}

    def _check_plan(self, state: dict) -> None:
        """Raises ValueError unless @state (a state_dict of version 2 or 3) was saved for this
        Dataset's files and plan."""
        if state.get("version") not in (2, 3):
            raise ValueError(f"state_dict version {state.get('version')!r} is not 2 or 3: resume at an epoch boundary")
        if state["version"] == 2:
            files = (len(state["urls"]), _files_digest(state["urls"]))
        else:
            files = (int(state["files"]), state["files_sha256"])
        if files != (len(self.urls), _files_digest(self.urls)):
            raise ValueError(f"state_dict was saved for other files ({files[0]} files, sha256 {files[1][:16]}...) "
                             f"than this Dataset reads ({len(self.urls)} files, sha256 "
                             f"{_files_digest(self.urls)[:16]}...): resume over the same files, in the same order")
        for key in ("filter", "seed", "shuffle", "unit_rows", "shuffle_units"):
            if state.get(key) != getattr(self, key):
                raise ValueError(f"state_dict was saved with {key}={state.get(key)!r}, this Dataset has "
                                 f"{getattr(self, key)!r}; change filters and sharding at epoch boundaries")

    def load_state_dict(self, state: Union[dict, Sequence[dict]]) -> None:
        """Resumes at @state on the next iteration: the same remaining samples, none repeated or
        lost, with any number of DataLoader workers. @state is this rank's state_dict() from a job
        of the same ranks, or the list of every rank's (in any order) from a job of any number of
        ranks: their remaining groups are dealt again to this job's ranks. The plan's inputs must
        match. State dicts of version 2 (onecopy's earlier format, with lists of groups) load too."""
        states = list(state) if isinstance(state, (list, tuple)) else [state]
        if not states:
            raise ValueError("load_state_dict needs a state_dict, or a list of them")
        for st in states:
            self._check_plan(st)
        one = states[0]
        if len(states) == 1 and (one["rank"], one["world_size"]) == (self.rank, self.world_size):
            progress = _Progress.from_dict(one, self._epoch_deal)
        elif len(states) == 1 and one["world_size"] != 1:
            raise ValueError(f"this state_dict is rank {one['rank']} of {one['world_size']}'s and this Dataset is rank "
                             f"{self.rank} of {self.world_size}: resume with another world from every rank's "
                             "state_dict, as a list")
        else:
            progress = _Progress.merged(states, self.world_size, self._epoch_deal)
        self.epoch = progress.epoch
        self._resume = progress
        self._progress = progress.copy()


def gather_state_dicts(dataset, group=None) -> list[dict]:
    """Every rank's state_dict() of @dataset (a Dataset, Mix or PackedTokens), on every rank: a
    collective of torch.distributed that all ranks call together. Save its result (from one
    rank) to resume the job with any number of ranks: load_state_dict(that list)."""
    out: list = [None] * torch.distributed.get_world_size(group)
    torch.distributed.all_gather_object(out, dataset.state_dict(), group=group)
    return out


def _equal_steps(owner, epoch: int, items) -> Iterator[dict]:
    """@owner's (a Mix or PackedTokens) items(), as equal steps when it gives them in this
    process; in workers, onecopy.torch.DataLoader cuts the steps (torch's cannot)."""
    if torch.utils.data.get_worker_info() is None:
        if owner._equalizes():
            yield from EqualSteps(owner, epoch, owner.steps).run(items())
            return
    elif owner._equalizes() and not owner._tracked:
        raise ValueError(f"equal steps on {owner.world_size} ranks are given by onecopy.torch.DataLoader, not "
                         "torch's DataLoader with workers; use it, or pass uneven=None")
    yield from items()


class Mix(torch.utils.data.IterableDataset):
    """Weighted mixing: each item comes from dataset i with probability weights[i] / sum, drawn
    from a generator seeded by (seed, epoch, rank, worker). Stops when any dataset runs out
    (`stop="first"`, which keeps the proportions) or when all have (`stop="all"`). With
    world_size > 1 every rank gives the same number of items, agreed step by step through
    torch.distributed, by the `uneven` policy (as Dataset's)."""

    def __init__(self, datasets: Sequence[Dataset], weights: Sequence[float], seed: int = 0, stop: str = "first",
                 uneven: Optional[str] = "repeat"):
        super().__init__()
        self.uneven = check_uneven(uneven)
        self.steps = 0  # equal steps given this epoch
        if len(datasets) != len(weights) or not datasets:
            raise ValueError("Mix needs one weight per dataset")
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        if stop not in ("first", "all"):
            raise ValueError('stop is "first" or "all"')
        self.datasets = list(datasets)
        for i, d in enumerate(self.datasets):
            d.dataset_index = i
            d._in_mix = True
        self.weights = np.asarray(weights, dtype=np.float64) / float(sum(weights))
        self.seed, self.stop, self.epoch = int(seed), stop, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)
        self.steps = 0
        for d in self.datasets:
            d.set_epoch(epoch)

    # Equal steps (onecopy._steps): a mix's counts are drawn, so the ranks agree step by step.
    batch_rows = None

    @property
    def world_size(self) -> int:
        return self.datasets[0].world_size

    def _equalizes(self) -> bool:
        return self.world_size > 1 and self.uneven is not None and not self._deferred

    def planned_rows(self, epoch: int) -> None:
        return None

    def sync_group(self):
        return self.datasets[0].sync_group()

    def record(self, pos: torch.Tensor) -> None:
        self._consumed(pos)

    def steps_given(self, epoch: int, steps: int) -> None:
        self.steps = steps

    def __iter__(self) -> Iterator[dict]:
        yield from _equal_steps(self, self.epoch, self._items)

    def _items(self) -> Iterator[dict]:
        info = torch.utils.data.get_worker_info()
        worker = info.id if info else 0
        rank = self.datasets[0].rank
        rng = np.random.Generator(np.random.PCG64([self.seed, self.epoch, rank, worker]))
        its = [iter(d) for d in self.datasets]
        live = self.weights.copy()
        while live.sum() > 0:
            i = int(rng.choice(len(its), p=live / live.sum()))
            try:
                yield next(its[i])
            except StopIteration:
                if self.stop == "first":
                    return
                live[i] = 0

    def _consumed(self, pos: torch.Tensor) -> None:
        for row in pos.reshape(-1, 5):
            if row[2] >= 0:
                self.datasets[int(row[0])]._consumed(row)

    def _start_tracking(self) -> None:
        for d in self.datasets:
            d._start_tracking()

    @property
    def _tracked(self) -> bool:
        return self.datasets[0]._tracked

    @_tracked.setter
    def _tracked(self, value: bool) -> None:
        for d in self.datasets:
            d._tracked = value

    @property
    def _deferred(self) -> bool:
        return self.datasets[0]._deferred

    @_deferred.setter
    def _deferred(self, value: bool) -> None:
        for d in self.datasets:
            d._deferred = value

    def stats(self) -> dict:
        """Dataset.stats() of every dataset mixed, summed (a dataset's "training_s" is the time
        until the mix asked it again, the other datasets' turns included)."""
        return merged_snapshots([d.stats() for d in self.datasets])

    def state_dict(self) -> dict:
        """Each dataset's state. A resumed mix gives each dataset exactly its remaining samples;
        the interleaving after the resume is drawn afresh."""
        return {"version": 1, "epoch": self.epoch, "steps": self.steps,
                "datasets": [d.state_dict() for d in self.datasets]}

    def load_state_dict(self, state: Union[dict, Sequence[dict]]) -> None:
        """This rank's state_dict(), or every rank's (a list) to resume with another world."""
        if isinstance(state, (list, tuple)):
            self.epoch, self.steps = int(state[0]["epoch"]), 0
            for i, d in enumerate(self.datasets):
                d.load_state_dict([st["datasets"][i] for st in state])
            return
        self.epoch = int(state["epoch"])
        self.steps = int(state.get("steps", 0))
        for d, s in zip(self.datasets, state["datasets"]):
            d.load_state_dict(s)


class PackedTokens(torch.utils.data.IterableDataset):
    """Packs the token lists of `column` into training sequences of exactly `seq_len` tokens,
    across sample boundaries. Each item: {"input_ids": int tensor [seq_len]} and, with
    `document_ids`, "document_ids": int32 [seq_len] numbering the documents within the sequence
    from 0, for block-diagonal attention masks; with `varlen`, what variable-length attention
    kernels (flash-attention's varlen functions) take: "cu_seqlens", int32 [documents + 1], the
    cumulative document boundaries from 0 to seq_len, and "position_ids", int64 [seq_len],
    restarting at 0 at each document (a document cut at the end of a sequence goes on in the
    next one from position 0). cu_seqlens differs in length from item to item: batch items with
    `collate_varlen`. The tail shorter than seq_len is dropped. Reads `dataset` (a Dataset or Mix
    built with batch_rows=None) sample by sample.

    Checkpoints: the dataset's state_dict() counts a sample as given once its last token is in a
    yielded sequence, so a resumed stream starts with the sample that was cut, whole: its head is
    seen twice, and nothing is lost."""

    def __init__(self, dataset: Union[Dataset, Mix], column: str = "tokens", seq_len: int = 2048,
                 document_ids: bool = True, varlen: bool = False, uneven: Optional[str] = "repeat"):
        super().__init__()
        self.uneven = check_uneven(uneven)
        if seq_len < 1:
            raise ValueError("seq_len must be at least 1")
        for d in getattr(dataset, "datasets", [dataset]):
            if d.batch_rows is not None:
                raise ValueError("PackedTokens reads samples: build the Dataset with batch_rows=None")
        self.dataset, self.column, self.seq_len = dataset, column, int(seq_len)
        self.document_ids = bool(document_ids)
        self.varlen = bool(varlen)

    def set_epoch(self, epoch: int) -> None:
        self.dataset.set_epoch(epoch)
        self.steps = 0

    def stats(self) -> dict:
        """The packed dataset's stats() (Dataset.stats; its "training_s" includes packing)."""
        return self.dataset.stats()

    def state_dict(self) -> dict:
        return {**self.dataset.state_dict(), "packed_steps": self.steps}

    def load_state_dict(self, state: Union[dict, Sequence[dict]]) -> None:
        """This rank's state_dict(), or every rank's (a list) to resume with another world."""
        if isinstance(state, (list, tuple)):
            self.steps = 0
            self.dataset.load_state_dict([{k: v for k, v in st.items() if k != "packed_steps"} for st in state])
            return
        self.steps = int(state.get("packed_steps", 0))
        self.dataset.load_state_dict({k: v for k, v in state.items() if k != "packed_steps"})

    # Equal steps (onecopy._steps): how many sequences a rank packs is known only once read.
    batch_rows = None
    steps = 0

    @property
    def world_size(self) -> int:
        return getattr(self.dataset, "world_size", 1)

    def _equalizes(self) -> bool:
        return self.world_size > 1 and self.uneven is not None

    def planned_rows(self, epoch: int) -> None:
        return None

    def sync_group(self):
        return (self.dataset.datasets[0] if isinstance(self.dataset, Mix) else self.dataset).sync_group()

    def record(self, pos: torch.Tensor) -> None:
        self._consumed(pos)

    def steps_given(self, epoch: int, steps: int) -> None:
        self.steps = steps

    def _start_tracking(self) -> None:
        self.dataset._start_tracking()

    def _consumed(self, pos: torch.Tensor) -> None:
        self.dataset._consumed(pos)

    @property
    def _tracked(self) -> bool:
        return self.dataset._tracked

    @_tracked.setter
    def _tracked(self, value: bool) -> None:
        self.dataset._tracked = value

    def __iter__(self) -> Iterator[dict]:
        yield from _equal_steps(self, self.epoch, self._sequences)

    @property
    def epoch(self) -> int:
        return self.dataset.epoch

    def _sequences(self) -> Iterator[dict]:
        in_worker = torch.utils.data.get_worker_info() is not None
        self.dataset._deferred = True
        nothing = torch.tensor([0, 0, -1, 0, 0])
        done: list[torch.Tensor] = []  # positions of samples whose last token is buffered
        tokens: list[torch.Tensor] = []
        docs: list[torch.Tensor] = []
        have = 0  # tokens in the sequence being built
        doc = 0  # number of the current document within it
        try:
            for sample in self.dataset:
                pos = sample.pop(POSITION_KEY)
                t = sample[self.column]
                while True:
                    take = min(len(t), self.seq_len - have)
                    tokens.append(t[:take])
                    docs.append(torch.full((take,), doc, dtype=torch.int32, device=t.device))
                    have += take
                    t = t[take:]
                    if not len(t):
                        done.append(pos)
                    if have < self.seq_len:
                        break
                    item = {"input_ids": torch.cat(tokens)}
                    if self.document_ids or self.varlen:
                        doc_ids = torch.cat(docs)
                    if self.document_ids:
                        item["document_ids"] = doc_ids
                    if self.varlen:
                        item.update(_varlen_fields(doc_ids))
                    given = torch.stack(done) if done else nothing.reshape(1, 5)
                    if in_worker:
                        if self.dataset._tracked:
                            item[POSITION_KEY] = given
                    else:
                        self.dataset._consumed(given)
                    yield item
                    tokens, docs, done, have, doc = [], [], [], 0, 0  # a cut document goes on as number 0
                    if not len(t):
                        break
                doc = doc + 1 if have else 0
        finally:
            self.dataset._deferred = False


def _varlen_fields(doc_ids: torch.Tensor) -> dict:
    """cu_seqlens and position_ids of one packed sequence from its document numbers (0, 1, ...
    in order, each a contiguous run)."""
    lengths = torch.bincount(doc_ids.to(torch.int64))
    cu = torch.zeros(len(lengths) + 1, dtype=torch.int32, device=doc_ids.device)
    torch.cumsum(lengths, 0, out=cu[1:])
    positions = (torch.arange(len(doc_ids), dtype=torch.int64, device=doc_ids.device)
                 - cu[doc_ids.to(torch.int64)].to(torch.int64))
    return {"cu_seqlens": cu, "position_ids": positions}


def collate_varlen(items: Sequence[dict]) -> dict:
    """Batches PackedTokens(varlen=True) items the way varlen attention takes them: the sequences
    flattened into one of batch × seq_len tokens ("input_ids", "position_ids", "document_ids"
    when present), "cu_seqlens" over all their documents (each item's shifted by the tokens
    before it), and "max_seqlen", the longest document. Use as DataLoader(collate_fn=...)."""
    items = list(items)
    if not items or "cu_seqlens" not in items[0]:
        raise ValueError("collate_varlen batches items of PackedTokens(varlen=True)")
    out: dict[str, Any] = {}
    for key in items[0]:
        if key != "cu_seqlens":
            out[key] = torch.cat([it[key] for it in items])
    cus, base = [torch.zeros(1, dtype=torch.int32, device=items[0]["cu_seqlens"].device)], 0
    for it in items:
        cus.append(it["cu_seqlens"][1:] + base)
        base += int(it["cu_seqlens"][-1])
    out["cu_seqlens"] = torch.cat(cus)
    out["max_seqlen"] = int(torch.diff(out["cu_seqlens"]).max())
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

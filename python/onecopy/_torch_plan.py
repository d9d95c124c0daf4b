# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch's plan of an epoch: the dataset's files, the deal of its groups' rows to the
ranks as pieces, and one rank's progress through the pieces it is dealt (onecopy.torch's
docstring says how an epoch is dealt)."""

from __future__ import annotations

import hashlib
import itertools
from typing import Callable, Iterable, NamedTuple, Optional, Sequence

from onecopy._dataset import list_files

# The row count of a streamed group, in positions given before its last item: more than any.
UNKNOWN_ROWS = 2**62


def expand_urls(urls, socket: Optional[str], unit_rows: int = 0) -> tuple[list[str], dict]:
    """The files of @urls (onecopy._dataset.list_files), and the units of those the daemon
    indexed on the way: an s3:// prefix or glob is one request, whatever its file count."""
    listed = list_files(urls, socket, unit_rows)
    return [u for u, _ in listed], {u: entry["units"] for u, entry in listed if entry is not None}


def files_digest(urls: Sequence[str]) -> str:
    """sha256 (hex) of @urls in their order: what a state_dict keeps of the files it read."""
    return hashlib.sha256("\0".join(urls).encode()).hexdigest()


def prefix_and_rest(members: set[int], order: Iterable[int]) -> tuple[int, list[int]]:
    """(P, rest): the first P groups of @order are all in @members; rest, the other members,
    sorted."""
    prefix = list(itertools.takewhile(members.__contains__, order))
    return len(prefix), sorted(members.difference(prefix))


def expanded(prefix: int, order: Sequence[int], rest: Iterable) -> set[int]:
    """The set prefix_and_rest encoded as (@prefix, @rest) over @order; in @rest, a pair
    [a, b] stands for a, a + 1, ..., b - 1 (runs)."""
    out = set(order[:int(prefix)])
    for g in rest:
        out.update(range(int(g[0]), int(g[1])) if isinstance(g, (list, tuple)) else (int(g),))
    return out


def runs(keys: Sequence[int]) -> list:
    """Sorted @keys with each run of three or more consecutive ones as a pair [first, last + 1]."""
    out: list = []
    i = 0
    while i < len(keys):
        j = i
        while j + 1 < len(keys) and keys[j + 1] == keys[j] + 1:
            j += 1
        out.extend([[keys[i], keys[j] + 1]] if j - i >= 2 else keys[i:j + 1])
        i = j + 1
    return out


# A piece's key: its group in the low 32 bits, its first row in the group above them, so that a
# whole group's key is its number, as groups were keyed before rows were dealt.
_GROUP_BITS = 32


def piece_key(group: int, lo: int) -> int:
    return group | (lo << _GROUP_BITS)


def key_group(key: int) -> int:
    return key & ((1 << _GROUP_BITS) - 1)


def key_start(key: int) -> int:
    return key >> _GROUP_BITS


class Piece(NamedTuple):
    """Rows [lo, hi) of shuffle group `group` (of its units laid end to end), known as `key`."""
    key: int
    group: int
    lo: int
    hi: int


def _carried(rows: Sequence[int], keys: Iterable[int]) -> dict[int, list[Piece]]:
    """The pieces of the groups @keys name (pieces a deal before left finished or begun), by
    group: a named group's pieces are all named, so each ends where the next begins."""
    starts: dict[int, list[int]] = {}
    for k in keys:
        starts.setdefault(key_group(k), []).append(key_start(k))
    out = {}
    for g, lows in starts.items():
        lows = sorted(set(lows))
        ends = lows[1:] + [rows[g]]
        out[g] = [Piece(piece_key(g, lo), g, lo, hi) for lo, hi in zip(lows, ends)]
    return out


def _levels(carried: Sequence[int], fresh: int) -> list[int]:
    """Rows of @fresh each rank gets on top of its @carried rows, so that the totals differ by
    at most one where the carried rows allow (water-filling)."""
    world = len(carried)
    lo, hi = 0, max(carried) + fresh + 1
    while lo + 1 < hi:  # the highest level whose fill fits in @fresh
        mid = (lo + hi) // 2
        if sum(max(0, mid - c) for c in carried) <= fresh:
            lo = mid
        else:
            hi = mid
    share = [max(0, lo - c) for c in carried]
    rest = fresh - sum(share)
    for r in range(world):
        if rest and carried[r] <= lo:
            share[r] += 1
            rest -= 1
    return share


def deal_rows(rows: Sequence[int], order: Sequence[int], base: Iterable[int], base_partial: dict,
              world: int) -> list[list[Piece]]:
    """Every rank's pieces, in the order it reads them (onecopy.torch's docstring, "How an epoch
    is dealt"). @rows: each group's rows; @order: the groups in the order they are dealt;
    @base: keys of pieces finished before this deal; @base_partial: samples given of pieces
    begun before it. Pieces left from an earlier deal go whole to the ranks, round-robin;
    the groups no earlier deal touched are laid end to end in @order and cut by rows, so that
    every rank's total differs from the others' by at most one row when nothing was carried."""
    base = set(base)
    named = _carried(rows, base | set(base_partial))
    carried = [p for g in sorted(named) for p in named[g] if p.key not in base]
    out: list[list[Piece]] = [[] for _ in range(world)]
    load = [0] * world
    for i, p in enumerate(carried):
        out[i % world].append(p)
        load[i % world] += p.hi - p.lo - base_partial.get(p.key, 0)
    fresh = [g for g in order if g not in named]
    share = _levels(load, sum(rows[g] for g in fresh))
    it = iter(fresh)
    g, at = None, 0  # the group being cut, and its first row not dealt
    for r in range(world):
        need = share[r]
        while need > 0:
            if g is None or at == rows[g]:
                g, at = next(it), 0
                continue
            take = min(need, rows[g] - at)
            out[r].append(Piece(piece_key(g, at), g, at, at + take))
            at += take
            need -= take
    return out


def piece_units(units: Sequence[tuple[int, int, int]], piece: Piece) -> list[tuple[int, int, int]]:
    """The (file, begin, end) row ranges of @piece, cut from its group's @units."""
    out, at = [], 0
    for f, b, e in units:
        lo, hi = max(piece.lo - at, 0), min(piece.hi - at, e - b)
        if lo < hi:
            out.append((f, b + lo, b + hi))
        at += e - b
    return out


class Progress:
    """One rank's epoch: the deal it reads (keys of pieces finished before it, `base`; samples
    given by the pieces begun before it, `base_partial`; the world it was dealt to), the pieces
    it finished and the samples its unfinished pieces gave. Keys are piece_key's: the same on
    every rank; a whole group's is its number, the same for any world size."""

    def __init__(self, epoch: int = 0, done: Sequence[int] = (), partial: Optional[dict] = None, steps: int = 0,
                 base: Sequence[int] = (), base_partial: Optional[dict] = None, world: int = 0):
        self.epoch = epoch
        self.done = set(int(g) for g in done)
        self.partial = {int(g): int(n) for g, n in (partial or {}).items()}
        self.steps = int(steps)  # equal steps given since the deal (onecopy._steps)
        self.base = frozenset(int(g) for g in base)
        self.base_partial = {int(g): int(n) for g, n in (base_partial or {}).items()}
        self.world = int(world)  # 0: the dataset's own world size

    def record(self, epoch: int, piece: int, given: int, total: int) -> None:
        if epoch != self.epoch or piece in self.done:
            return
        if given >= total:
            self.done.add(piece)
            self.partial.pop(piece, None)
        else:
            self.partial[piece] = max(self.partial.get(piece, 0), given)

    def start_of(self, piece: int) -> int:
        """Samples of @piece given before this iteration."""
        return max(self.partial.get(piece, 0), self.base_partial.get(piece, 0))

    def to_dict(self, deal: Sequence[int]) -> dict:
        """This progress in a few integers, whatever the number of pieces: the finished pieces
        as the length of the run of them that starts @deal (the keys of the pieces this rank
        reads, in order; only needed when some are done) and the others finished ahead of it;
        the base as the run of keys 0, 1, ... in it and the others (their runs as pairs: the
        ranks of a deal finish runs of groups); one offset per piece in flight."""
        done_prefix, done_ahead = prefix_and_rest(self.done, deal)
        base_prefix, base_ahead = prefix_and_rest(self.base, itertools.count())
        return {"epoch": self.epoch, "steps": self.steps, "done_prefix": done_prefix, "done_ahead": done_ahead,
                "partial": dict(sorted(self.partial.items())), "base_prefix": base_prefix,
                "base_ahead": runs(base_ahead), "base_partial": dict(sorted(self.base_partial.items()))}

    @staticmethod
    def from_dict(state: dict, deal_of: Callable[["Progress"], list[list[Piece]]]) -> "Progress":
        """The progress of @state, a state_dict of version 4 (to_dict's), 3 (the same without
        runs) or 2 (its sets as lists), dealt to its world. deal_of(progress): every rank's
        pieces under @progress's deal, in which done_prefix counts."""
        if state["version"] == 2:
            return Progress(state["epoch"], state["done"], state["partial"], state.get("steps", 0),
                             state.get("base", ()), state.get("base_partial"), state["world_size"])
        base = expanded(state["base_prefix"], range(int(state["base_prefix"])), state["base_ahead"])
        progress = Progress(state["epoch"], (), state["partial"], state["steps"], base, state["base_partial"],
                             state["world_size"])
        deal = [p.key for p in deal_of(progress)[int(state["rank"])]] if state["done_prefix"] else []
        progress.done = expanded(state["done_prefix"], deal, state["done_ahead"])
        return progress

    def copy(self) -> "Progress":
        return Progress(self.epoch, self.done, self.partial, self.steps, self.base, self.base_partial, self.world)

    @staticmethod
    def merged(states: Sequence[dict], world: int,
               deal_of: Callable[["Progress"], list[list[Piece]]]) -> "Progress":
        """The deal for @world ranks of what every rank of an earlier deal left (their
        state_dicts, one per rank, read by from_dict with @deal_of). A group none of them began
        is dealt again by rows; the pieces of a group some began are kept as they were, the
        finished ones joining the base and the others carried whole, with the samples they
        gave; the steps count again from 0."""
        first = states[0]
        ranks = sorted(int(st["rank"]) for st in states)
        if ranks != list(range(int(first["world_size"]))):
            raise ValueError(f"a resume with another world needs the state_dict of every rank of the one saved "
                             f"({first['world_size']} ranks), got ranks {ranks}")
        saved = [Progress.from_dict(st, deal_of) for st in states]
        for p in saved:
            if (p.epoch, p.base, p.base_partial) != (saved[0].epoch, saved[0].base, saved[0].base_partial):
                raise ValueError("these state_dicts come from different epochs or deals")
        old = saved[0]
        done = set().union(*(p.done for p in saved))
        given = dict(old.base_partial)
        for p in saved:
            for k, n in p.partial.items():
                given[k] = max(given.get(k, 0), n)
        base = set(old.base)
        named = {key_group(k) for k in old.base | set(old.base_partial)}
        pieces = [p for rank in deal_of(old) for p in rank]
        touched = named | {p.group for p in pieces if p.key in done or given.get(p.key)}
        partial = {}
        for p in pieces:
            if p.group not in touched:
                continue  # dealt again by rows
            if p.key in done:
                base.add(p.key)
            else:
                partial[p.key] = given.get(p.key, 0)
        open_groups = {key_group(k) for k in partial}
        for g in touched - open_groups:  # every piece finished: the group is, as one key
            base = {k for k in base if key_group(k) != g} | {g}
        return Progress(old.epoch, base=base, base_partial=partial, world=world)

# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch's plan of an epoch: the dataset's files, and one rank's progress through the
groups it is dealt (onecopy.torch's docstring says how an epoch is dealt)."""

from __future__ import annotations

import hashlib
import itertools
import os
from typing import Callable, Iterable, Optional, Sequence

import onecopy
from onecopy._native import Client

# The row count of a streamed group, in positions given before its last item: more than any.
UNKNOWN_ROWS = 2**62


def is_s3_dataset(pattern: str) -> bool:
    """Whether @pattern is an s3:// prefix or glob, which the daemon indexes in one request."""
    return pattern.startswith("s3://") and (pattern.endswith("/") or any(c in pattern[5:] for c in "*?["))


def expand_urls(urls, socket: Optional[str], unit_rows: int = 0) -> tuple[list[str], dict]:
    """Each pattern's files (onecopy.expand; listed by the daemon when there is one), and the
    units of those the daemon indexed on the way: an s3:// prefix or glob is one Dataset request
    (one listing and the prefix's manifest), whatever its file count."""
    items = [urls] if isinstance(urls, (str, os.PathLike)) else list(urls)
    if not items:
        raise ValueError("no dataset URLs given")
    out: list[str] = []
    units: dict[str, list[tuple[int, int]]] = {}
    for item in map(os.fspath, items):
        if socket and is_s3_dataset(item):
            for f in Client(socket).dataset_index(item, unit_rows)["files"]:
                out.append(f["uri"])
                units[f["uri"]] = f["units"]
        else:
            out.extend(Client(socket).list(item) if socket else onecopy.expand(item))
    return out, units


def files_digest(urls: Sequence[str]) -> str:
    """sha256 (hex) of @urls in their order: what a state_dict keeps of the files it read."""
    return hashlib.sha256("\0".join(urls).encode()).hexdigest()


def prefix_and_rest(members: set[int], order: Iterable[int]) -> tuple[int, list[int]]:
    """(P, rest): the first P groups of @order are all in @members; rest, the other members,
    sorted."""
    prefix = list(itertools.takewhile(members.__contains__, order))
    return len(prefix), sorted(members.difference(prefix))


def expanded(prefix: int, order: Sequence[int], rest: Iterable) -> set[int]:
    """The set _prefix_and_rest encoded as (@prefix, @rest) over @order."""
    return set(order[:int(prefix)]) | {int(g) for g in rest}


class Progress:
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
        done_prefix, done_ahead = prefix_and_rest(self.done, deal)
        base_prefix, base_ahead = prefix_and_rest(self.base, itertools.count())
        return {"epoch": self.epoch, "steps": self.steps, "done_prefix": done_prefix, "done_ahead": done_ahead,
                "partial": dict(sorted(self.partial.items())), "base_prefix": base_prefix,
                "base_ahead": base_ahead, "base_partial": dict(sorted(self.base_partial.items()))}

    @staticmethod
    def from_dict(state: dict, deal_of: Callable[["Progress", int], list[int]]) -> "Progress":
        """The progress of @state, a state_dict of version 3 (to_dict's) or 2 (its sets as
        lists), dealt to its world. deal_of(progress, rank): the groups @rank reads under
        @progress's deal, which a version 3 done_prefix counts in."""
        if state["version"] == 2:
            return Progress(state["epoch"], state["done"], state["partial"], state.get("steps", 0),
                             state.get("base", ()), state.get("base_partial"), state["world_size"])
        base = expanded(state["base_prefix"], range(int(state["base_prefix"])), state["base_ahead"])
        progress = Progress(state["epoch"], (), state["partial"], state["steps"], base, state["base_partial"],
                             state["world_size"])
        deal = deal_of(progress, int(state["rank"])) if state["done_prefix"] else []
        progress.done = expanded(state["done_prefix"], deal, state["done_ahead"])
        return progress

    def copy(self) -> "Progress":
        return Progress(self.epoch, self.done, self.partial, self.steps, self.base, self.base_partial, self.world)

    @staticmethod
    def merged(states: Sequence[dict], world: int,
               deal_of: Callable[["Progress", int], list[int]]) -> "Progress":
        """The deal for @world ranks of what every rank of an earlier deal left (their
        state_dicts, one per rank, read by from_dict with @deal_of): their finished groups join
        the base, their partial groups' offsets carry over, and the steps count again from 0."""
        first = states[0]
        ranks = sorted(int(st["rank"]) for st in states)
        if ranks != list(range(int(first["world_size"]))):
            raise ValueError(f"a resume with another world needs the state_dict of every rank of the one saved "
                             f"({first['world_size']} ranks), got ranks {ranks}")
        saved = [Progress.from_dict(st, deal_of) for st in states]
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
        return Progress(saved[0].epoch, base=base, base_partial=partial, world=world)

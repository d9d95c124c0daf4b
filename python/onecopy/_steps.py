# SPDX-License-Identifier: Apache-2.0
"""Equal steps on every rank: the layer between a Dataset's items and the training loop that
makes every rank of a job yield the same number of batches of the same size, so that no rank
waits forever in a collective its peers never reach.

Batches are cut to exactly batch_rows rows across piece boundaries (the rows of a piece's
short tail are joined to the next piece's: one gather copy, for those batches only).
How many steps an epoch has is agreed on without reading anything twice:
  - without a filter, from the plan, which every rank can compute for every rank (rows per
    rank are sums of piece lengths; the ranks' totals differ by at most one row in a fresh
    epoch, since the deal splits rows, so only the last batch is partial);
  - with one, through torch.distributed: before each step the ranks all-gather what each has
    (a full batch, a short last one, nothing), and every rank reads the same decision from it.
Policies: "drop" ends the epoch at the last step every rank can fill (short last batches and the
surplus of longer ranks are not given); "repeat" goes on until every rank is out, ranks that run
out first giving again their latest batches (a short last batch is filled up the same way), so
nothing is lost and the surplus is bounded by the ranks' difference.

Items carry their positions (torch.POSITION_KEY rows); this layer records them in the Dataset
as it hands batches out, so state_dict() counts what the loop received, and repeated rows count
nothing.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

import torch

POSITION_KEY = "__onecopy_position__"

#: Batches a rank keeps to give again once it has run out (policy "repeat"); each keeps the rows
#: of its shuffle group alive, so few.
_REPEAT_RING = 4

# What a rank has for the next step, as all-gathered.
_FULL, _SHORT, _OUT, _NEVER = 2, 1, 0, -1


def check_uneven(uneven: Optional[str]) -> Optional[str]:
    """@uneven when it names a policy ("repeat", "drop", or None: none); ValueError otherwise."""
    if uneven not in ("repeat", "drop", None):
        raise ValueError(f'uneven is "repeat", "drop" or None, not {uneven!r}')
    return uneven


def _columns(item: dict) -> list[str]:
    return [k for k in item if k != POSITION_KEY and not k.endswith(".offsets")]


def rows_of(item: dict) -> int:
    for name in _columns(item):
        off = item.get(name + ".offsets")
        return len(off) - 1 if off is not None else len(item[name])
    return 0


def _slice(item: dict, a: int, b: int) -> dict:
    """Rows [a, b) of a batch item; its position row says what was given up to row b."""
    n = rows_of(item)
    out: dict[str, Any] = {}
    for name in _columns(item):
        v, off = item[name], item.get(name + ".offsets")
        if off is not None:
            lo, hi = int(off[a]), int(off[b])
            out[name] = v[lo:hi]
            out[name + ".offsets"] = off[a:b + 1] - lo
        else:
            out[name] = v[a:b]
    pos = item.get(POSITION_KEY)
    if pos is not None:
        rows = pos.reshape(-1, 5).clone()
        rows[:, 3] -= n - b  # one row per batch item: the rows after b are not given yet
        out[POSITION_KEY] = rows
    return out


def _concat(items: list[dict]) -> dict:
    """The rows of @items in order, as one batch (a copy)."""
    if len(items) == 1:
        return items[0]
    out: dict[str, Any] = {}
    for name in _columns(items[0]):
        if name + ".offsets" in items[0]:
            offs, base = [torch.zeros(1, dtype=items[0][name + ".offsets"].dtype)], 0
            for it in items:
                off = it[name + ".offsets"]
                offs.append(off[1:] + base)
                base += int(off[-1])
            out[name] = torch.cat([it[name] for it in items])
            out[name + ".offsets"] = torch.cat(offs)
        elif isinstance(items[0][name], list):
            out[name] = [x for it in items for x in it[name]]
        else:
            out[name] = torch.cat([it[name] for it in items])
    pos = [it[POSITION_KEY].reshape(-1, 5) for it in items if POSITION_KEY in it]
    if pos:
        out[POSITION_KEY] = torch.cat(pos)
    return out


def _rebatch(items: Iterator[dict], rows: int) -> Iterator[dict]:
    """Batches of exactly @rows rows from batch items of any sizes, then the short rest."""
    pending: list[dict] = []
    have = 0
    for item in items:
        n = rows_of(item)
        at = 0
        while n - at >= rows - have:
            take = rows - have
            piece = _slice(item, at, at + take) if (at, at + take) != (0, n) else item
            yield _concat(pending + [piece])
            pending, have, at = [], 0, at + take
        if at < n:
            pending.append(_slice(item, at, n) if at else item)
            have += n - at
    if pending:
        yield _concat(pending)


def _fill(short: dict, ring: list[dict], rows: int) -> dict:
    """@short topped up to @rows rows with rows given before (its own when there are none)."""
    donors = list(reversed(ring)) or [short]
    parts, have, i = [short], rows_of(short), 0
    while have < rows:
        donor = donors[i % len(donors)]
        take = min(rows - have, rows_of(donor))
        parts.append(_slice(donor, 0, take))
        have += take
        i += 1
    return _concat(parts)


class EqualSteps:
    """Yields an owner's items as equal steps (see the module). The owner (a Dataset, Mix or
    PackedTokens) gives `uneven`, `world_size`, `batch_rows` (None: each item is a step),
    planned_rows(epoch) (rows by rank, or None when unknown), sync_group(), record(positions)
    and steps_given(epoch, steps)."""

    def __init__(self, owner, epoch: int, steps_done: int):
        self.ds = owner
        self.epoch = epoch
        self.steps = steps_done  # steps given this epoch before this iteration (a resume)

    def planned_steps(self) -> Optional[int]:
        """Steps of this epoch from the plan, or None when they are unknown (a filter, a mix)."""
        per_rank = self.ds.planned_rows(self.epoch)
        if per_rank is None:
            return None
        b = self.ds.batch_rows or 1
        if self.ds.uneven == "drop":
            return min(n // b for n in per_rank)
        if min(per_rank) == 0 and max(per_rank) > 0:
            raise ValueError(f"rank {per_rank.index(0)} has no rows in epoch {self.epoch} to repeat; "
                             "use uneven='drop', or fewer ranks")
        return max(-(-n // b) for n in per_rank)

    def _agree(self, mine: int) -> list[int]:
        """Every rank's state for the next step (one all-gather)."""
        group = self.ds.sync_group()
        world = self.ds.world_size
        got = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        torch.distributed.all_gather(got, torch.tensor([mine], dtype=torch.int64), group=group)
        return [int(t) for t in got]

    def run(self, items: Iterator[dict]) -> Iterator[dict]:
        b = self.ds.batch_rows
        stream = _rebatch(items, b) if b else items
        target = self.planned_steps()
        ring: list[dict] = []  # the latest batches given, without positions: what "repeat" gives again
        nxt = next(stream, None)
        while target is None or self.steps < target:
            state = _OUT if nxt is None else (_SHORT if b and rows_of(nxt) < b else _FULL)
            if state == _OUT and not ring:
                state = _NEVER
            if target is None:
                states = self._agree(state)
                if self.ds.uneven == "drop":
                    if min(states) < _FULL:
                        return
                else:
                    if max(states) <= _OUT:
                        return
                    if _NEVER in states:
                        raise ValueError(f"rank {states.index(_NEVER)} has nothing in epoch {self.epoch} to "
                                         f"repeat; use uneven='drop', or widen the filter")
            if state == _FULL:
                out, nxt = nxt, next(stream, None)
            elif self.ds.uneven == "drop":
                return  # only a short batch or nothing: the plan ends here too
            elif state == _SHORT:
                out, nxt = _fill(nxt, ring, b), None
            elif ring:
                out = dict(ring[self.steps % len(ring)])
            else:
                # Only after a resume that left this rank nothing new before the plan's end.
                raise ValueError(f"this rank has nothing in epoch {self.epoch} to repeat")
            if state != _OUT:
                pos = out.pop(POSITION_KEY, None)
                if pos is not None:
                    self.ds.record(pos)
                if len(ring) == _REPEAT_RING:
                    ring.pop(0)
                ring.append(dict(out))
            self.steps += 1
            self.ds.steps_given(self.epoch, self.steps)
            yield out


def equal_steps(owner, epoch: int, items) -> Iterator[dict]:
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

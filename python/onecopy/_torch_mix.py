# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch.Mix: datasets read in a weighted mix."""

from __future__ import annotations

from typing import Iterator, Optional, Sequence, Union

import numpy as np
import torch
import torch.utils.data

from onecopy._loader_stats import merged_snapshots
from onecopy._steps import check_uneven, equal_steps

class Mix(torch.utils.data.IterableDataset):
    """Weighted mixing: each item comes from dataset i with probability weights[i] / sum, drawn
    from a generator seeded by (seed, epoch, rank, worker). Stops when any dataset runs out
    (`stop="first"`, which keeps the proportions) or when all have (`stop="all"`). With
    world_size > 1 every rank gives the same number of items, agreed step by step through
    torch.distributed, by the `uneven` policy (as Dataset's)."""

    def __init__(self, datasets: Sequence[torch.utils.data.IterableDataset], weights: Sequence[float], seed: int = 0, stop: str = "first",
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
        yield from equal_steps(self, self.epoch, self._items)

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

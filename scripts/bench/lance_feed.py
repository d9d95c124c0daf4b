# SPDX-License-Identifier: Apache-2.0
"""The sampler of scripts/bench/e2e_bench.py's Lance leg, in a module of its own so that spawned
DataLoader workers can unpickle it (lance is not fork-safe: its workers are spawned, as
lance.torch.data.get_safe_loader spawns them) and the other legs never import lance.

WorkerFragments deals a Lance dataset's fragments to the DataLoader workers: worker w of W takes
fragments w, w + W, ... of the fragment list, shuffled by the seed first when randomize is on
(lance.sampler.ShardedFragmentSampler's shuffle); rows stay in stored order within a fragment.
"""

from __future__ import annotations

from lance.sampler import ShardedFragmentSampler
from lance.torch.dist import get_global_rank, get_global_world_size


class WorkerFragments(ShardedFragmentSampler):
    """ShardedFragmentSampler whose rank and world size are the DataLoader worker's, read when the
    worker starts iterating (the sampler is built in the training process)."""

    def __init__(self, randomize: bool, seed: int):
        super().__init__(0, 1, randomize=randomize, seed=seed)

    def iter_fragments(self, dataset, **kwargs):
        self._rank, self._world_size = get_global_rank(), get_global_world_size()
        return super().iter_fragments(dataset, **kwargs)

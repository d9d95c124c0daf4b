# SPDX-License-Identifier: Apache-2.0
"""Where this process stands in a job, for sharding: its rank and the world size, from the
arguments, torch.distributed or the launcher's environment."""

from __future__ import annotations

import os
from typing import Optional

import torch
import torch.distributed

def launcher_world() -> Optional[tuple[int, int]]:
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


def distributed_world() -> Optional[tuple[int, int]]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None


def shard_world(rank: Optional[int], world_size: Optional[int]) -> tuple[int, int]:
    """This process's (rank, world size) for sharding: the arguments when given (data-parallel
    ranks under tensor or pipeline parallelism differ from the global rank); else
    torch.distributed's when it is initialised; else the launcher's RANK and WORLD_SIZE, so that
    a dataset made before init_process_group, or in a job that never calls it, still shards.
    torch.distributed and the launcher disagreeing is an error, not a guess."""
    if rank is not None or world_size is not None:
        r, w = int(rank or 0), int(1 if world_size is None else world_size)
    else:
        dist, launcher = distributed_world(), launcher_world()
        if dist is not None and launcher is not None and dist != launcher:
            raise ValueError(f"torch.distributed says rank {dist[0]} of {dist[1]} but the launcher's RANK and "
                             f"WORLD_SIZE say {launcher[0]} of {launcher[1]}; pass rank= and world_size=")
        r, w = dist or launcher or (0, 1)
    if not 0 <= r < w:
        raise ValueError(f"rank {r} is not in [0, world_size {w})")
    return r, w

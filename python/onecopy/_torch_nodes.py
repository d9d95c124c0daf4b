# SPDX-License-Identifier: Apache-2.0
"""Node-stable shuffling (onecopy.torch.Dataset(node_stable=True)): each node of a job reads the
same files every epoch, so that its onecopyd's byte cache holds 1/nodes of the dataset and serves
every epoch after the first, instead of each node fetching all of it over the epochs.

The algorithm, as Streaming documents its shuffles:
1. Nodes. With ranks_per_node ranks on each node (torchrun's LOCAL_WORLD_SIZE), rank r is on node
   r // ranks_per_node of world_size // ranks_per_node.
2. Files to nodes, once for the job (from the seed, never the epoch): the files in an order drawn
   from the seed, each given to the node with the fewest rows so far (largest-first balance is not
   needed: files of one dataset are of a size, and the drawn order spreads the odd ones).
3. Every epoch, on each node: its files' units shuffled by (seed, epoch, node) and cut into shuffle
   groups of shuffle_units consecutive units, so that the order inside a node, and which units
   share a group (a block), is new each epoch.
4. The order: node k's groups are dealt among its ranks round-robin, and the ranks' runs follow
   one another in rank order, so that the deal, which cuts the groups laid end to end by rows
   into one share per rank in rank order (onecopy.torch, "How an epoch is dealt"), gives each
   rank about its own run. The rows read on another node are those the cut moves across a
   boundary between two nodes' ranks: as many as the runs' rows differ from an equal share,
   none when the nodes' files and groups are of a size.

The order depends on world_size and ranks_per_node: a resume must keep both.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence

import numpy as np

from onecopy._native import shard_units


def ranks_per_node(given: Optional[int], world_size: int) -> int:
    """@given, else torchrun's LOCAL_WORLD_SIZE, else 1; it must divide @world_size."""
    n = int(given) if given is not None else int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    if n < 1 or world_size % n:
        raise ValueError(f"ranks_per_node {n} does not divide world_size {world_size}")
    return n


def files_of_nodes(rows: Sequence[int], nodes: int, seed: int) -> list[list[int]]:
    """The files (indices into @rows, each file's row count) each of @nodes keeps for the job."""
    order = np.random.RandomState(seed & 0xFFFFFFFF).permutation(len(rows))
    load = [0] * nodes
    out: list[list[int]] = [[] for _ in range(nodes)]
    for f in order:
        k = min(range(nodes), key=lambda n: (load[n], n))
        out[k].append(int(f))
        load[k] += rows[f]
    return [sorted(files) for files in out]


def node_stable_groups(file_units: Sequence[Sequence[tuple[int, int]]], seed: int, epoch: int,
                       shuffle_units: int, world_size: int, per_node: int) -> list[list[tuple[int, int, int]]]:
    """Every shuffle group of @epoch in the order the deal cuts (see the module)."""
    nodes = world_size // per_node
    rows = [sum(e - b for b, e in units) for units in file_units]
    by_node = []
    for k, files in enumerate(files_of_nodes(rows, nodes, seed)):
        units = [(f, b, e) for f in files for b, e in file_units[f]]
        order = shard_units(units, 0, 1, 0, 1, True, seed + k * 1_000_003, epoch)
        by_node.append([order[i:i + shuffle_units] for i in range(0, len(order), shuffle_units)])
    return [group for rank in range(world_size)
            for group in by_node[rank // per_node][rank % per_node::per_node]]

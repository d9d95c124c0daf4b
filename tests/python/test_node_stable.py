# SPDX-License-Identifier: Apache-2.0
"""Node-stable shuffling (onecopy/_torch_nodes.py): over epochs each node reads the same files,
shuffled anew; every row is read once an epoch by some rank; only the rows the deal's cut by
rows moves across a boundary between nodes' ranks leave their node (none with files of a size)."""
import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy.torch as oct
from onecopy._torch_nodes import files_of_nodes

FILES, ROWS, UNIT, GROUP = 24, 600, 200, 2


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("nodes")
    for f in range(FILES):
        vx.io.write(pa.table({"id": pa.array(np.arange(f * ROWS, (f + 1) * ROWS, dtype=np.int64))}),
                    str(d / f"p{f:02d}.vortex"))
    return str(d / "*.vortex")


def read_epoch(pattern, world, per_node, epoch, seed=11):
    """Rows each rank reads in @epoch, as lists in the order given."""
    out = []
    for rank in range(world):
        ds = oct.Dataset(pattern, columns=["id"], batch_rows=100, shuffle=True, seed=seed, socket=False,
                         rank=rank, world_size=world, unit_rows=UNIT, shuffle_units=GROUP, uneven=None,
                         node_stable=True, ranks_per_node=per_node)
        ds.set_epoch(epoch)
        out.append([int(i) for b in ds for i in b["id"]])
    return out


@pytest.mark.parametrize("world,per_node", [(4, 2), (6, 3), (4, 1)])
def test_each_node_keeps_its_files_across_epochs(files, world, per_node):
    nodes = world // per_node
    assigned = files_of_nodes([ROWS] * FILES, nodes, 11)
    orders = []
    for epoch in range(3):
        ranks = read_epoch(files, world, per_node, epoch)
        every = sorted(i for r in ranks for i in r)
        assert every == list(range(FILES * ROWS)), "each row once an epoch"
        away = 0
        for rank, rows in enumerate(ranks):
            node = rank // per_node
            away += sum(1 for i in rows if i // ROWS not in assigned[node])
        # Files and groups of a size: the cut by rows falls between the ranks' runs of groups.
        assert away == 0
        orders.append(ranks)
    assert orders[0] != orders[1] != orders[2], "each epoch is shuffled anew"


def test_node_stable_needs_a_shuffle_and_a_dividing_world(files):
    with pytest.raises(ValueError, match="shuffle=True"):
        oct.Dataset(files, shuffle=False, socket=False, rank=0, world_size=2, node_stable=True, ranks_per_node=1)
    with pytest.raises(ValueError, match="does not divide"):
        oct.Dataset(files, socket=False, rank=0, world_size=4, node_stable=True, ranks_per_node=3)
    saved = oct.Dataset(files, socket=False, rank=0, world_size=2, node_stable=True, ranks_per_node=1,
                        batch_rows=100, uneven=None)
    states = [saved.state_dict(), {**saved.state_dict(), "rank": 1}]
    other = oct.Dataset(files, socket=False, rank=0, world_size=4, node_stable=True, ranks_per_node=2,
                        batch_rows=100, uneven=None)
    with pytest.raises(ValueError, match="resumes with the world"):
        other.load_state_dict(states)

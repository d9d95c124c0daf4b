# SPDX-License-Identifier: Apache-2.0
"""Sharding by rows (onecopy.torch, "How an epoch is dealt"): any world size over any file count,
one file included, equal steps on every rank, every row once an epoch (the uneven policy acting
only on the last partial batch), in process, through a real onecopyd and in a gloo job."""

import collections
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import vortex as vx

import onecopy.torch as oct

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
from test_torch_dataset import _ranks, mode  # noqa: E402,F401  (mode: the in-process and daemon fixture)

BATCH = 64
FILTER = "quality > 0.4"
# One file (the case: more ranks than it has shuffle groups of a few) and five of unequal sizes.
LAYOUTS = {"one file": (5000,), "five files": (1500, 400, 2300, 900, 1100)}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """Each layout's paths and table; `id` numbers the rows of the layout in file order."""
    rng = np.random.default_rng(4)
    out = {}
    for name, sizes in LAYOUTS.items():
        root = tmp_path_factory.mktemp(name.replace(" ", "-"))
        paths, tables, first = [], [], 0
        for i, n in enumerate(sizes):
            t = pa.table({"id": pa.array(np.arange(first, first + n, dtype=np.int64)),
                          "quality": pa.array(np.round(rng.random(n), 3))})
            paths.append(str(root / f"part-{i}.vortex"))
            vx.io.write(t, paths[-1])
            tables.append(t)
            first += n
        out[name] = (paths, pa.concat_tables(tables))
    return out


def build(paths, mode, rank, world, **kw):
    # Units of 300 rows, three to a group: one 5,000-row file is six groups, fewer than 7 or 8 ranks.
    kw.setdefault("batch_rows", BATCH)
    kw.setdefault("unit_rows", 300)
    kw.setdefault("shuffle_units", 3)
    return oct.Dataset(paths, columns=["id", "quality"], socket=mode, rank=rank, world_size=world, seed=7, **kw)


def ids(loader) -> list[int]:
    return [i for batch in loader for i in batch["id"].reshape(-1).tolist()]


def planned_ids(ds, paths, table) -> list[int]:
    """The ids of the row ranges @ds's rank is dealt (its pieces)."""
    first = np.cumsum([0] + [len(vx.open(p).to_arrow().read_all()) for p in paths])
    return [int(first[f]) + i for piece in ds.groups() for f, b, e in piece for i in range(b, e)]


@pytest.mark.parametrize("world", [1, 2, 3, 7, 8])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_rank_takes_equal_steps_and_every_row_once(layouts, mode, layout, world):
    paths, table = layouts[layout]
    every = collections.Counter(table["id"].to_pylist())
    # Workers for two of the worlds (each run starts processes: kept few).
    workers = 2 if world in (2, 7) else 0
    ranks = [build(paths, mode, r, world) for r in range(world)]
    shares = [planned_ids(ds, paths, table) for ds in ranks]
    assert collections.Counter(i for s in shares for i in s) == every, "the pieces cover every row once"
    rows = [len(s) for s in shares]
    assert max(rows) - min(rows) <= 1, rows
    assert ranks[0].planned_rows(0) == rows
    if world == 1:  # one rank: no steps to even out, every row once, batches as they come
        ds = build(paths, mode, 0, 1)
        batches = list(oct.DataLoader(ds, num_workers=workers, batch_size=None))
        assert len(batches) == len(ds)
        assert sorted(ids(batches)) == sorted(every)
    for uneven in ("repeat", "drop") if world > 1 else ():
        given = []
        for r in range(world):
            ds = build(paths, mode, r, world, uneven=uneven)
            ds.set_epoch(0)
            given.append(ids(oct.DataLoader(ds, num_workers=workers, batch_size=None)))
            assert len(ds) * BATCH == len(given[-1])
        steps = {len(g) // BATCH for g in given}
        assert len(steps) == 1 and all(len(g) % BATCH == 0 for g in given), [len(g) for g in given]
        steps = steps.pop()
        for share, got in zip(shares, given):
            mine = collections.Counter(share)
            if uneven == "drop":
                # Only the last partial batch is dropped, and only rows of the rank's own share.
                assert steps == min(rows) // BATCH and not collections.Counter(got) - mine
                assert len(share) - len(got) < BATCH
            else:
                # Only the last partial batch is filled up, with rows the rank gave before.
                assert steps == -(-max(rows) // BATCH) and not mine - collections.Counter(got)
                assert len(got) - len(share) < BATCH and set(got) == set(share)
    # Under a filter the ranks' shards as they are (uneven=None) hold every kept row once.
    kept = table.filter(pc.greater(table["quality"], 0.4))["id"].to_pylist()
    seen = []
    for r in range(world):
        ds = build(paths, mode, r, world, filter=FILTER, uneven=None)
        seen += ids(oct.DataLoader(ds, num_workers=workers, batch_size=None))
    assert sorted(seen) == sorted(kept)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_pieces_cut_at_rows_resume_on_another_world(layouts, layout):
    # Three ranks stop mid-epoch, some inside a piece of a group another rank also reads; two
    # ranks resume from all three state_dicts and give exactly the rows that are left. Groups of
    # 50 rows, over a hundred of them: the merged state is still a few integers.
    paths, table = layouts[layout]
    head, states = [], []
    for r in range(3):
        ds = build(paths, False, r, 3, uneven=None, unit_rows=50, shuffle_units=1)
        ds.set_epoch(2)
        for i, batch in enumerate(oct.DataLoader(ds, num_workers=0, batch_size=None)):
            head += batch["id"].tolist()
            if i == 2 + r:
                break
        states.append(ds.state_dict())
    tail = []
    for r in range(2):
        ds = build(paths, False, r, 2, uneven=None, unit_rows=50, shuffle_units=1)
        ds.load_state_dict(states)
        merged = json.loads(json.dumps(ds.state_dict()))
        assert merged["base_prefix"] > 0 and merged["base_ahead"], merged
        assert all(len(v) <= 6 for v in merged.values() if isinstance(v, (list, dict))), merged
        again = build(paths, False, r, 2, uneven=None, unit_rows=50, shuffle_units=1)
        again.load_state_dict(merged)
        assert again.state_dict() == ds.state_dict()
        tail += ids(oct.DataLoader(ds, num_workers=0, batch_size=None))
    assert sorted(head + tail) == sorted(table["id"].to_pylist()), "rows repeated or lost"


# One rank of a gloo job over one file: argv = rank, world, rendezvous file, socket ("" in
# process), policy, filter ("" none), the files. Prints its steps, ids and batch sizes as JSON.
_GLOO_RANK = """
import json, sys
import torch.distributed as dist
import onecopy.torch as oct
rank, world, init, sock, uneven, filt, paths = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] or False,
                                                sys.argv[5], sys.argv[6] or None, sys.argv[7:])
dist.init_process_group("gloo", init_method="file://" + init, rank=rank, world_size=world)
ds = oct.Dataset(paths, columns=["id"], filter=filt, batch_rows=64, unit_rows=300, shuffle_units=3, socket=sock,
                 seed=7, uneven=uneven)
ids, sizes = [], set()
for batch in oct.DataLoader(ds, num_workers=0, batch_size=None):
    ids += batch["id"].tolist()
    sizes.add(len(batch["id"]))
dist.barrier()
print(json.dumps({"rank": ds.rank, "world": ds.world_size, "ids": ids, "sizes": sorted(sizes)}))
dist.destroy_process_group()
# Printed; gloo's threads can outlive the group and abort the interpreter's teardown: leave without it.
sys.stdout.flush()
__import__("os")._exit(0)
"""


@pytest.mark.parametrize("uneven,filt", [("repeat", FILTER), ("drop", "")])
def test_a_gloo_job_of_three_ranks_over_one_file(layouts, tmp_path, uneven, filt):
    # The case: three ranks over one file took "rank 1 has no rows"; under a filter the
    # ranks agree their steps through the process group.
    paths, table = layouts["one file"]
    init = tmp_path / "rendezvous"
    ranks = _ranks(_GLOO_RANK, 3, lambda r: [str(r), "3", str(init), "", uneven, filt, *paths])
    assert [(r["rank"], r["world"]) for r in ranks] == [(0, 3), (1, 3), (2, 3)]
    assert all(r["sizes"] == [BATCH] for r in ranks), [r["sizes"] for r in ranks]
    steps = {len(r["ids"]) // BATCH for r in ranks}
    assert len(steps) == 1, [len(r["ids"]) for r in ranks]
    steps = steps.pop()
    kept = set((table.filter(pc.greater(table["quality"], 0.4)) if filt else table)["id"].to_pylist())
    shares = [[i for i in planned_ids(build(paths, False, r, 3), paths, table) if i in kept] for r in range(3)]
    assert sorted(i for s in shares for i in s) == sorted(kept)
    for share, r in zip(shares, ranks):
        got = collections.Counter(r["ids"])
        if uneven == "repeat":  # the ranks go on to the longest share, giving their own rows again
            assert steps == max(-(-len(s) // BATCH) for s in shares) and set(got) == set(share)
        else:  # the ranks stop at the shortest share's last full batch, repeating nothing
            assert steps == min(len(s) // BATCH for s in shares) > 0
            assert max(got.values()) == 1 and set(got) <= set(share)

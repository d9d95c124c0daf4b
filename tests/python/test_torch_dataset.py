# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch against real PyTorch DataLoaders and vortex-data-written files, read in-process
and through a real onecopyd: exactly once per epoch over ranks and workers, deterministic
shuffles, exact resume with another worker count, mixing proportions, filter changes between
epochs, token packing and equality with pyarrow."""

import collections
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import torch
import vortex as vx

import onecopy
import onecopy.torch as oct
from onecopy._torch_plan import key_group, piece_units

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))
from test_daemon import Daemon  # noqa: E402

SIZES = (4000, 2500, 3500)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three files of token sequences with metadata; `id` numbers every row of the dataset."""
    root = tmp_path_factory.mktemp("torchds")
    rng = np.random.default_rng(1)
    paths, tables, first = [], [], 0
    for i, n in enumerate(SIZES):
        lengths = rng.integers(1, 40, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        t = pa.table({
            "id": pa.array(np.arange(first, first + n, dtype=np.int64)),
            "label": pa.array(rng.integers(0, 10, n).astype(np.int32)),
            "quality": pa.array(np.round(rng.random(n), 3)),
            "tokens": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 50_000, offsets[-1],
                                                                                      dtype=np.int32))),
        })
        path = root / f"part-{i}.vortex"
        vx.io.write(t, str(path))
        paths.append(str(path))
        tables.append(t)
        first += n
    return paths, pa.concat_tables(tables)


@pytest.fixture(scope="module", params=["in-process", "daemon"])
def mode(request, tmp_path_factory):
    """The socket Datasets use: False reads in-process; a path, a real onecopyd's."""
    if request.param == "in-process":
        yield False
        return
    d = Daemon(tmp_path_factory.mktemp("daemon"))
    yield d.sock
    status = d.client.status()
    d.stop()
    assert status["errors"] == 0
    assert status["batches_delivered"] > 0


@pytest.fixture
def dataset(mode):
    """Builds Datasets that read the way `mode` says, with small units so that there are many."""
    def build(paths, **kw):
        kw.setdefault("socket", mode)
        kw.setdefault("unit_rows", 300)
        kw.setdefault("shuffle_units", 3)
        kw.setdefault("batch_rows", 64)
        return oct.Dataset(paths, **kw)
    return build


def ids_of(items):
    out = []
    for item in items:
        v = item["id"]
        out.extend(v.reshape(-1).tolist())
    return out


def test_two_workers_and_ranks_read_every_row_exactly_once(files, dataset):
    paths, table = files
    everything = sorted(table["id"].to_pylist())
    for world in (1, 2, 3):
        seen = []
        for rank in range(world):
            ds = dataset(paths, rank=rank, world_size=world, seed=5, uneven=None)  # the shards as they are
            seen += ids_of(oct.DataLoader(ds, num_workers=2, batch_size=None))
        assert sorted(seen) == everything, f"world {world}"


def test_shuffle_is_deterministic_per_seed_and_epoch(files, dataset):
    paths, _ = files
    run = lambda seed, epoch: ids_of(_epoch(dataset(paths, seed=seed), epoch))  # noqa: E731
    a = run(3, 0)
    assert a == run(3, 0)
    assert a != run(4, 0)
    assert a != run(3, 1)
    assert sorted(a) == sorted(run(3, 1))
    # Shuffled across files and within shuffle groups, not just block by block.
    assert a != sorted(a)
    plain = ids_of(_epoch(dataset(paths, shuffle=False), 0))
    assert plain == sorted(plain)


def _epoch(ds, epoch, workers=0):
    ds.set_epoch(epoch)
    return oct.DataLoader(ds, num_workers=workers, batch_size=None)


@pytest.mark.parametrize("before,after", [(2, 3), (2, 0), (0, 2), (3, 1)])
def test_resume_mid_epoch_with_another_worker_count(files, before, after, dataset):
    paths, table = files
    # The shards as they are (uneven=None): equal steps are test_equal_steps_resume_*.
    ds = dataset(paths, seed=11, rank=1, world_size=2, uneven=None)
    full = ids_of(_epoch(dataset(paths, seed=11, rank=1, world_size=2, uneven=None), 4))
    ds.set_epoch(4)
    got = []
    for i, batch in enumerate(oct.DataLoader(ds, num_workers=before, batch_size=None)):
        got += batch["id"].tolist()
        if i == 17:
            state = ds.state_dict()
            break
    assert state["partial"] or state["done_prefix"] or state["done_ahead"]
    resumed = dataset(paths, seed=11, rank=1, world_size=2, uneven=None)
    resumed.load_state_dict(state)
    rest = ids_of(oct.DataLoader(resumed, num_workers=after, batch_size=None))
    assert len(got) + len(rest) == len(full)
    assert sorted(got + rest) == sorted(full), "samples repeated or lost"
    # The state after the resumed epoch says every group is done.
    assert resumed.state_dict()["partial"] == {}
    after = resumed.state_dict()
    assert (after["done_prefix"], after["done_ahead"]) == (len(resumed.groups()), [])


@pytest.mark.parametrize("workers", [0, 2])
def test_state_dict_is_a_few_integers_whatever_the_number_of_groups(files, dataset, workers):
    # 200 groups of 50 rows, 4 batches each, checkpointed half-way: the finished groups are a
    # count, and the lists hold only the groups each worker has finished ahead or begun.
    paths, table = files
    build = lambda: dataset(paths, seed=7, unit_rows=50, shuffle_units=1, batch_rows=16)  # noqa: E731
    ds = build()
    ds.set_epoch(1)
    assert len(ds.groups()) == 200
    got = []
    for i, batch in enumerate(oct.DataLoader(ds, num_workers=workers, batch_size=None)):
        got += batch["id"].tolist()
        if i + 1 == len(ds) // 2:
            break
    state = json.loads(json.dumps(ds.state_dict()))  # plain JSON, as checkpoints keep it
    assert state["version"] == 4 and state["files"] == len(paths) and "urls" not in state
    assert all(len(v) <= workers + 1 for v in state.values() if isinstance(v, (list, dict))), state
    assert 0 < state["done_prefix"] <= 100
    resumed = build()
    resumed.load_state_dict(state)
    rest = ids_of(oct.DataLoader(resumed, num_workers=workers, batch_size=None))
    assert sorted(got + rest) == sorted(table["id"].to_pylist()), "samples repeated or lost"


def test_state_dict_keeps_groups_finished_out_of_order(files, dataset):
    # Pieces finished past the run that starts a rank's deal (by a worker ahead of the others),
    # and a base that is no prefix of the groups (ranks stopped at different places), come back
    # from the state as they were, and the resumed ranks read exactly what is left.
    paths, table = files
    build = lambda r, w: dataset(paths, rank=r, world_size=w, seed=3, uneven=None)  # noqa: E731
    ranks = [build(r, 2) for r in range(2)]
    for ds in ranks:
        ds.set_epoch(2)
    groups = ranks[0].global_groups(2)
    pieces = ranks[0]._deal_of(ranks[0]._progress)  # every rank's, in order
    first_id = np.cumsum((0,) + SIZES)  # of each file
    ids = {p.key: {int(first_id[f]) + i for f, b, e in piece_units(groups[p.group], p) for i in range(b, e)}
           for rank in pieces for p in rank}
    deal = [p.key for p in pieces[1]]  # rank 1 of 2's
    rows = {p.key: p.hi - p.lo for rank in pieces for p in rank}
    given = {deal[0]: rows[deal[0]], deal[1]: rows[deal[1]], deal[3]: rows[deal[3]], deal[2]: 5}
    for k, n in given.items():
        ranks[1].record(torch.tensor([0, 2, k, n, rows[k]]))
    head = pieces[0][0].key
    given[head] = rows[head]
    ranks[0].record(torch.tensor([0, 2, head, rows[head], rows[head]]))
    state = ranks[1].state_dict()
    assert (state["done_prefix"], state["done_ahead"], state["partial"]) == (2, [deal[3]], {deal[2]: 5})
    again = build(1, 2)
    again.load_state_dict(state)
    assert again.state_dict() == state
    states = [ranks[0].state_dict(), state]
    resumed = [build(r, 3) for r in range(3)]
    for ds in resumed:
        ds.load_state_dict(states)
    merged = resumed[0].state_dict()
    # The piece begun goes on where it stopped; the finished ones are in the base.
    assert merged["base_partial"][deal[2]] == 5
    base = resumed[0]._progress.base
    assert all(k in base or key_group(k) in base for k in (head, deal[0], deal[1], deal[3]))
    again = build(0, 3)
    again.load_state_dict(merged)
    assert again.state_dict() == merged
    rest = [i for ds in resumed for i in ids_of(oct.DataLoader(ds, num_workers=0, batch_size=None))]
    finished = set().union(*(ids[k] for k, n in given.items() if n == rows[k]))
    assert len(rest) == len(set(rest)) == len(table) - len(finished) - 5
    assert not finished & set(rest)


def _version_2(ds):
    """@ds's state_dict as onecopy wrote it before version 3: the groups as lists, the urls whole."""
    p = ds._progress
    return {"version": 2, "urls": ds.urls, "filter": ds.filter, "columns": ds.columns, "seed": ds.seed,
            "shuffle": ds.shuffle, "rank": ds.rank, "world_size": ds.world_size, "unit_rows": ds.unit_rows,
            "shuffle_units": ds.shuffle_units, "batch_rows": ds.batch_rows, "uneven": ds.uneven,
            "epoch": p.epoch, "done": sorted(p.done), "partial": dict(sorted(p.partial.items())), "steps": p.steps,
            "base": sorted(p.base), "base_partial": dict(sorted(p.base_partial.items()))}


def test_state_dicts_of_earlier_versions_load_at_an_epoch_boundary(files, dataset):
    # Versions 2 and 3 were saved under deals of whole groups: at an epoch's start they resume
    # that epoch whole, mid-epoch they are refused (their groups are not this deal's).
    paths, table = files
    build = lambda r, w: dataset(paths, rank=r, world_size=w, seed=13, uneven=None)  # noqa: E731
    ds = build(0, 2)
    ds.set_epoch(3)
    start = {**ds.state_dict(), "version": 3}
    for state in (json.loads(json.dumps(_version_2(ds))), start):
        same = build(0, 2)
        same.load_state_dict(state)
        assert same.epoch == 3
        assert sorted(ids_of(oct.DataLoader(same, num_workers=2, batch_size=None))) == \
            sorted(ids_of(_epoch(build(0, 2), 3)))
    for i, batch in enumerate(oct.DataLoader(ds, num_workers=0, batch_size=None)):
        if i == 20:
            break
    for state in (_version_2(ds), {**ds.state_dict(), "version": 3}):
        with pytest.raises(ValueError, match="epoch boundary"):
            build(0, 2).load_state_dict(state)
    with pytest.raises(ValueError, match="other files"):
        dataset(paths[:2], seed=13, rank=0, world_size=2, uneven=None).load_state_dict(start)


def test_resume_single_samples_without_workers(files, dataset):
    paths, _ = files
    ds = dataset(paths, batch_rows=None, seed=2)
    ds.set_epoch(1)
    it = iter(ds)
    head = [int(next(it)["id"]) for _ in range(1234)]
    state = ds.state_dict()
    again = dataset(paths, batch_rows=None, seed=2)
    again.load_state_dict(state)
    tail = [int(s["id"]) for s in again]
    ds.set_epoch(1)
    assert head + tail == [int(s["id"]) for s in ds]


def test_state_dict_refuses_untracked_workers_and_changed_plans(files, dataset):
    paths, _ = files
    ds = dataset(paths)
    for _ in torch.utils.data.DataLoader(ds, num_workers=2, batch_size=None):
        break
    with pytest.raises(RuntimeError, match="onecopy.torch.DataLoader"):
        ds.state_dict()
    state = dataset(paths).state_dict()
    with pytest.raises(ValueError, match="filter"):
        dataset(paths, filter="quality > 0.5").load_state_dict(state)


def test_mixing_proportions(files, dataset):
    paths, _ = files
    a = dataset(paths[:2], batch_rows=None, seed=1)
    b = dataset(paths[2:], batch_rows=None, seed=1)
    mix = oct.Mix([a, b], [0.75, 0.25], seed=9)
    firsts = ids_of(mix)
    from_a = sum(1 for i in firsts if i < SIZES[0] + SIZES[1])
    n = len(firsts)
    assert n >= 3000
    # 0.75 within 5 standard deviations of a binomial draw
    assert abs(from_a / n - 0.75) < 5 * (0.75 * 0.25 / n) ** 0.5
    assert len(set(firsts)) == n
    everything = ids_of(oct.Mix([a, b], [0.5, 0.5], seed=9, stop="all"))
    assert sorted(everything) == list(range(sum(SIZES)))


def test_a_new_filter_or_columns_between_epochs(files, dataset):
    paths, table = files
    ds = dataset(paths, seed=4)
    assert len(ids_of(_epoch(ds, 0))) == table.num_rows
    ds.set_filter(onecopy.col("quality") > 0.8)
    ds.set_columns(["id", "quality"])
    batches = list(_epoch(ds, 1, workers=2))
    got = ids_of(batches)
    want = table.filter(pc.greater(table["quality"], 0.8))["id"].to_pylist()
    assert sorted(got) == sorted(want)
    assert all(set(b) == {"id", "quality"} for b in batches)
    assert all(bool((b["quality"] > 0.8).all()) for b in batches)
    with pytest.raises(TypeError, match="filtered"):
        len(ds)


def test_equals_pyarrow_and_len(files, dataset):
    paths, table = files
    ds = dataset(paths, batch_rows=None, shuffle=False)
    assert len(ds) == table.num_rows
    by_id = {}
    for s in ds:
        by_id[int(s["id"])] = s
    assert sorted(by_id) == table["id"].to_pylist()
    for row in table.to_pylist()[::97]:
        s = by_id[row["id"]]
        assert s["tokens"].tolist() == row["tokens"]
        assert s["tokens"].dtype == torch.int32
        assert float(s["quality"]) == row["quality"]
        assert int(s["label"]) == row["label"]
    batched = dataset(paths, batch_rows=100, shuffle=False)
    assert len(batched) == sum(len(list(range(0, sum(e - b for _, b, e in g), 100))) for g in batched.groups())
    first = next(iter(batched))
    offsets = first["tokens.offsets"]
    assert offsets[0] == 0 and len(offsets) == len(first["id"]) + 1
    assert first["tokens"][offsets[1]:offsets[2]].tolist() == table["tokens"][int(first["id"][1])].as_py()


def test_packed_tokens_cut_across_samples_with_document_ids(files, dataset):
    paths, table = files
    seq = 128
    packed = list(oct.PackedTokens(dataset(paths, batch_rows=None, shuffle=False), seq_len=seq))
    flat = np.concatenate([np.asarray(t, dtype=np.int32) for t in table["tokens"].to_pylist()])
    assert len(packed) == len(flat) // seq
    got = torch.cat([p["input_ids"] for p in packed]).numpy()
    assert (got == flat[:len(got)]).all()
    # document_ids: a new number where a sample starts, restarting at 0 in every sequence.
    starts = set(np.cumsum([len(t) for t in table["tokens"].to_pylist()])[:-1].tolist())
    for k, p in enumerate(packed[:50]):
        d = p["document_ids"].numpy()
        assert d[0] == 0
        for j in range(1, seq):
            assert d[j] - d[j - 1] == (1 if k * seq + j in starts else 0)


def test_nulls_are_a_clear_error(tmp_path):
    path = tmp_path / "nulls.vortex"
    vx.io.write(pa.table({"x": pa.array([1, None, 3], type=pa.int64())}), str(path))
    with pytest.raises(onecopy.OnecopyError, match="IS NOT NULL"):
        list(oct.Dataset([str(path)], socket=False, batch_rows=2))
    got = ids_of([{"id": s["x"]} for s in oct.Dataset([str(path)], socket=False, filter="x IS NOT NULL",
                                                       shuffle=False)])
    assert got == [1, 3]


@pytest.mark.parametrize("workers", [0, 2])
def test_packed_tokens_resume_loses_nothing(files, dataset, workers):
    paths, table = files
    seq = 96

    def packed():
        return oct.PackedTokens(dataset(paths, batch_rows=None, seed=6), seq_len=seq, document_ids=False)

    p = packed()
    p.set_epoch(2)
    loader = oct.DataLoader(p, num_workers=workers, batch_size=4)
    head = []
    for i, batch in enumerate(loader):
        assert set(batch) == {"input_ids"} and batch["input_ids"].shape == (4, seq)
        head.append(batch["input_ids"].reshape(-1))
        if i == 20:
            state = p.state_dict()
            break
    assert state["done_prefix"] or state["done_ahead"] or state["partial"]
    q = packed()
    q.load_state_dict(state)
    tail = [b["input_ids"].reshape(-1) for b in oct.DataLoader(q, num_workers=workers, batch_size=4)]
    seen = collections.Counter(torch.cat(head + tail).tolist())
    every = collections.Counter(np.concatenate([np.asarray(t) for t in table["tokens"].to_pylist()]).tolist())
    # Nothing lost: only the tails shorter than a sequence (one per worker and run) and the
    # remainder of the last batch are dropped; the cut samples' heads may repeat.
    missing = sum((every - seen).values())
    assert missing <= 2 * (max(workers, 1) + 1) * seq
    # Repeated: only the heads of the samples cut at the checkpoint (under 40 tokens each).
    repeated = sum((seen - every).values())
    assert repeated <= max(workers, 1) * 40


def test_rank_and_world_come_from_the_launcher(files, dataset, monkeypatch):
    # torchrun sets RANK and WORLD_SIZE; a job that never calls init_process_group still shards.
    paths, table = files
    seen = []
    for rank in range(3):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "3")
        ds = dataset(paths, seed=7, uneven=None)  # the shards as they are
        assert (ds.rank, ds.world_size) == (rank, 3)
        ids = ids_of(_epoch(ds, 0))
        monkeypatch.delenv("RANK")
        monkeypatch.delenv("WORLD_SIZE")
        assert ids == ids_of(_epoch(dataset(paths, seed=7, rank=rank, world_size=3, uneven=None), 0))
        seen += ids
    assert sorted(seen) == sorted(table["id"].to_pylist())
    # Explicit arguments win (data-parallel ranks under tensor parallelism are not global ranks).
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    explicit = dataset(paths, rank=0, world_size=2)
    assert (explicit.rank, explicit.world_size) == (0, 2)
    monkeypatch.delenv("WORLD_SIZE")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        dataset(paths)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match=r"rank 2 is not in \[0, world_size 2\)"):
        dataset(paths)


# Run by each of two gloo processes: argv = rank, the rendezvous file, the dataset's files.
# RANK is the process's real rank from the start, or the other rank's ("swapped") to stand for a
# launcher and a process group that disagree.
_GLOO_RANK = """
import os, sys
import torch.distributed as dist
import onecopy.torch as oct
rank, init, swapped, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
os.environ["RANK"], os.environ["WORLD_SIZE"] = str(1 - rank if swapped else rank), "2"
before = oct.Dataset(paths, socket=False, batch_rows=64, unit_rows=300)
dist.init_process_group("gloo", init_method="file://" + init, rank=rank, world_size=2)
try:
    n = sum(1 for _ in before)
    print("iterated", before.rank, n)
except ValueError as e:
    print("refused", e)
try:
    after = oct.Dataset(paths, socket=False, batch_rows=64, unit_rows=300)
    print("made", after.rank, after.world_size)
    states = oct.gather_state_dicts(after)  # every rank's, for a resume with any world
    print("gathered", sorted(st["rank"] for st in states))
except ValueError as e:
    print("refused", e)
dist.barrier()
dist.destroy_process_group()
# The rank's results are printed; gloo's threads can outlive the group and abort the interpreter's
# teardown ('terminate called without an active exception', seen in CI): leave without it.
sys.stdout.flush()
__import__("os")._exit(0)
"""


@pytest.mark.parametrize("swapped", [False, True])
def test_rank_from_a_gloo_process_group_and_its_launcher_agree(files, tmp_path, swapped):
    paths, _ = files
    init = tmp_path / "rendezvous"
    procs = [subprocess.Popen([sys.executable, "-c", _GLOO_RANK, str(r), str(init), "1" if swapped else "0", *paths],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    for rank, (out, _) in enumerate(outs):
        lines = out.splitlines()
        if swapped:
            # Made before init_process_group from the launcher's (wrong) rank: refused when iterated;
            # made after it: torch.distributed and RANK disagree, refused at once.
            assert lines[0].startswith("refused") and "torch.distributed now says rank" in lines[0], out
            assert lines[1].startswith("refused") and "the launcher's RANK" in lines[1], out
        else:
            assert lines[0].split()[:2] == ["iterated", str(rank)], out
            assert int(lines[0].split()[2]) > 0
            assert lines[1] == f"made {rank} 2", out
            assert lines[2] == "gathered [0, 1]", out


@pytest.mark.parametrize("workers", [0, 2])
def test_packed_tokens_give_cu_seqlens_and_position_ids(files, dataset, workers):
    paths, table = files
    seq = 128
    lengths = [len(t) for t in table["tokens"].to_pylist()]
    packed = oct.PackedTokens(dataset(paths, batch_rows=None, shuffle=False), seq_len=seq, varlen=True)
    items = list(oct.DataLoader(packed, num_workers=0, batch_size=None))
    starts = set(np.cumsum(lengths)[:-1].tolist())  # token offsets where a document begins
    for k, p in enumerate(items):
        cu, pos, docs = p["cu_seqlens"].tolist(), p["position_ids"].tolist(), p["document_ids"].tolist()
        assert p["cu_seqlens"].dtype == torch.int32 and cu[0] == 0 and cu[-1] == seq
        # Boundaries: the sequence start and every document start inside the sequence.
        assert cu[1:-1] == [j for j in range(1, seq) if k * seq + j in starts]
        assert len(cu) == max(docs) + 2
        for j in range(seq):
            assert pos[j] == j - cu[docs[j]]
    # Batched for varlen attention: flattened tokens, boundaries shifted per sequence.
    loader = oct.DataLoader(packed, num_workers=workers, batch_size=4, collate_fn=oct.collate_varlen)
    first = next(iter(loader))
    assert first["input_ids"].shape == (4 * seq,)
    assert first["input_ids"].tolist() == torch.cat([items[i]["input_ids"] for i in range(4)]).tolist()
    want = [0]
    for i in range(4):
        want += [c + i * seq for c in items[i]["cu_seqlens"].tolist()[1:]]
    assert first["cu_seqlens"].tolist() == want
    assert first["max_seqlen"] == max(b - a for a, b in zip(want, want[1:]))
    with pytest.raises(ValueError, match="varlen=True"):
        oct.collate_varlen([{"input_ids": torch.zeros(3)}])


def _steps_of(items, batch_rows):
    """(batch sizes, ids) of one rank's epoch."""
    sizes, ids = [], []
    for b in items:
        sizes.append(len(b["id"]))
        ids += b["id"].tolist()
    return sizes, ids


@pytest.mark.parametrize("uneven", ["repeat", "drop"])
@pytest.mark.parametrize("workers", [0, 2])
def test_equal_steps_without_a_filter_come_from_the_plan(files, dataset, uneven, workers):
    # Three ranks over units of unequal rows: the shards as they are differ (checked below), and
    # no process group is needed to even them out.
    paths, table = files
    world, rows = 3, 64
    as_they_are = [len(list(_epoch(dataset(paths, rank=r, world_size=world, seed=5, uneven=None), 1)))
                   for r in range(world)]
    assert len(set(as_they_are)) > 1, as_they_are
    runs = [_steps_of(_epoch(dataset(paths, rank=r, world_size=world, seed=5, uneven=uneven), 1, workers), rows)
            for r in range(world)]
    steps = {len(sizes) for sizes, _ in runs}
    assert len(steps) == 1, [len(s) for s, _ in runs]
    planned = dataset(paths, rank=0, world_size=world, seed=5, uneven=uneven)
    planned.set_epoch(1)
    assert len(planned) == steps.pop()
    assert all(size == rows for sizes, _ in runs for size in sizes)
    seen = collections.Counter(i for _, ids in runs for i in ids)
    every = collections.Counter(table["id"].to_pylist())
    planned = planned.planned_rows(1)
    if uneven == "repeat":
        assert not every - seen, "repeat loses nothing"
        assert sum((seen - every).values()) < world * (max(planned) - min(planned) + rows)
    else:
        assert not seen - every, "drop repeats nothing"
        assert sum((every - seen).values()) < world * (max(planned) - min(planned) + rows)


def test_equal_steps_resume_mid_epoch(files, dataset):
    paths, table = files
    world, rows = 3, 64
    full = [len(list(_epoch(dataset(paths, rank=r, world_size=world, seed=9), 2))) for r in range(world)]
    assert len(set(full)) == 1
    for r in range(world):
        ds = dataset(paths, rank=r, world_size=world, seed=9)
        head = []
        for i, b in enumerate(_epoch(ds, 2)):
            head.append(b)
            if i == 10:
                break
        state = ds.state_dict()
        assert state["steps"] == 11
        resumed = dataset(paths, rank=r, world_size=world, seed=9)
        resumed.load_state_dict(state)
        tail = list(oct.DataLoader(resumed, num_workers=2, batch_size=None))
        assert len(head) + len(tail) == full[0]
        assert all(len(b["id"]) == rows for b in head + tail)


# One rank of a DDP job: argv = rank, rendezvous file, socket ("" in-process), policy, workers,
# filter, what it reads (a "dataset", a "mix" of two, "packed" tokens), the files. Trains a one-weight model on `quality` for two epochs and prints, per epoch,
# its steps and the ids it trained on, as JSON.
_DDP_RANK = """
import json, sys
import torch, torch.distributed as dist
import onecopy.torch as oct
rank, init, sock, uneven, workers, filt, kind, paths = (int(sys.argv[1]), sys.argv[2], sys.argv[3] or False,
                                                         sys.argv[4], int(sys.argv[5]), sys.argv[6] or None,
                                                         sys.argv[7], sys.argv[8:])
dist.init_process_group("gloo", init_method="file://" + init, rank=rank, world_size=3)
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kw = dict(unit_rows=300, shuffle_units=3, socket=sock, seed=3, uneven=uneven)
if kind == "dataset":
    ds = oct.Dataset(paths, columns=["id", "quality"], filter=filt, batch_rows=64, **kw)
    loader = oct.DataLoader(ds, num_workers=workers, batch_size=None)
elif kind == "mix":
    ds = oct.Mix([oct.Dataset(paths, columns=["id", "quality"], filter=filt, batch_rows=64, **kw),
                  oct.Dataset(paths[:1], columns=["id", "quality"], batch_rows=64, **kw)], [0.7, 0.3], uneven=uneven)
    loader = oct.DataLoader(ds, num_workers=workers, batch_size=None)
else:
    ds = oct.PackedTokens(oct.Dataset(paths, columns=["tokens"], filter=filt, batch_rows=None, **kw), seq_len=64,
                          uneven=uneven)
    loader = oct.DataLoader(ds, num_workers=workers, batch_size=4)
out = []
for epoch in range(2):
    ds.set_epoch(epoch)
    steps, ids, sizes = 0, [], set()
    for batch in loader:
        if kind == "packed":
            batch = {"quality": batch["input_ids"].float().mean(1) / 50_000, "id": batch["input_ids"][:, 0]}
        x = batch["quality"].float().reshape(-1, 1)
        loss = ((model(x) - x) ** 2).mean()
        opt.zero_grad()
        loss.backward()  # an all-reduce on every step: a rank with a step more would wait forever
        opt.step()
        steps += 1
        ids += batch["id"].tolist()
        sizes.add(len(batch["id"]))
    out.append({"steps": steps, "ids": ids, "sizes": sorted(sizes)})
dist.barrier()
print(json.dumps(out))
dist.destroy_process_group()
# The rank's results are printed; gloo's threads can outlive the group and abort the interpreter's
# teardown ('terminate called without an active exception', seen in CI): leave without it.
sys.stdout.flush()
__import__("os")._exit(0)
"""


def _ranks(script: str, world: int, args) -> list:
    """Runs @script on @world ranks, args(rank) its arguments: each rank's last line of output,
    as JSON. A hang, or a rank that fails, fails the test."""
    procs = [subprocess.Popen([sys.executable, "-c", script, *args(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for r in range(world)]
    try:
        outs = [p.communicate(timeout=240) for p in procs]  # a hang fails here
    finally:
        for p in procs:
            p.kill()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def _ddp(mode, tmp_path, uneven, workers, filt, kind, paths):
    """Runs _DDP_RANK on three ranks: each rank's [{steps, ids, sizes} per epoch]."""
    init = tmp_path / "rendezvous"
    return _ranks(_DDP_RANK, 3, lambda r: [str(r), str(init), mode or "", uneven, str(workers), filt, kind, *paths])


@pytest.mark.parametrize("uneven,workers", [("repeat", 0), ("drop", 0), ("repeat", 2)])
def test_ddp_with_a_filter_takes_equal_steps_on_every_rank(files, mode, tmp_path, uneven, workers):
    paths, table = files
    filt = "quality > 0.6 AND label < 7"
    ranks = _ddp(mode, tmp_path, uneven, workers, filt, "dataset", paths)
    kept = table.filter(pc.and_(pc.greater(table["quality"], 0.6), pc.less(table["label"], 7)))
    every = collections.Counter(kept["id"].to_pylist())
    for epoch in range(2):
        steps = [r[epoch]["steps"] for r in ranks]
        assert len(set(steps)) == 1 and steps[0] > 0, steps
        assert all(r[epoch]["sizes"] == [64] for r in ranks)
        seen = collections.Counter(i for r in ranks for i in r[epoch]["ids"])
        if uneven == "repeat":
            assert not every - seen, "repeat loses nothing"
        else:
            assert not seen - every, "drop repeats nothing"
            assert sum((every - seen).values()) < 0.2 * len(kept)
    # The shards as they are (uneven=None) give the ranks unequal step counts: DDP would hang on them.
    as_they_are = [len(list(oct.Dataset(paths, columns=["id"], filter=filt, batch_rows=64, unit_rows=300,
                                        shuffle_units=3, socket=False, seed=3, rank=r, world_size=3, uneven=None)))
                   for r in range(3)]
    assert len(set(as_they_are)) > 1, as_they_are


# One rank of a job that checkpoints under a filter (equal steps agreed through gloo): argv =
# rank, world size, rendezvous file, socket ("" in-process), policy, the state file, the files.
# Without the state file it takes 4 steps and writes every rank's state_dict there
# (gather_state_dicts, saved by rank 0); with it, it resumes from it to the epoch's end. Prints
# its steps, the ids it read and the batch sizes, as JSON.
_DDP_RESUME_RANK = """
import json, os, sys
import torch.distributed as dist
import onecopy.torch as oct
rank, world, init, sock, uneven, state, paths = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                                 sys.argv[4] or False, sys.argv[5], sys.argv[6], sys.argv[7:])
dist.init_process_group("gloo", init_method="file://" + init, rank=rank, world_size=world)
ds = oct.Dataset(paths, columns=["id"], filter="quality > 0.3 AND label < 8", batch_rows=64, unit_rows=300,
                 shuffle_units=3, socket=sock, seed=8, uneven=uneven)
ds.set_epoch(1)
resuming = os.path.exists(state)
if resuming:
    ds.load_state_dict(json.load(open(state)))
steps, ids, sizes = 0, [], set()
for batch in oct.DataLoader(ds, num_workers=0, batch_size=None):
    steps += 1
    ids += batch["id"].tolist()
    sizes.add(len(batch["id"]))
    if not resuming and steps == 4:
        break
if not resuming:
    states = oct.gather_state_dicts(ds)
    if rank == 0:
        json.dump(states, open(state + ".tmp", "w"))
        os.rename(state + ".tmp", state)
dist.barrier()
print(json.dumps({"steps": steps, "ids": ids, "sizes": sorted(sizes)}))
dist.destroy_process_group()
# The rank's results are printed; gloo's threads can outlive the group and abort the interpreter's
# teardown ('terminate called without an active exception', seen in CI): leave without it.
sys.stdout.flush()
__import__("os")._exit(0)
"""


def _ddp_resume(mode, tmp_path, world, uneven, state, paths):
    init = tmp_path / f"rendezvous-{world}"
    return _ranks(_DDP_RESUME_RANK, world,
                  lambda r: [str(r), str(world), str(init), mode or "", uneven, str(state), *paths])


@pytest.mark.parametrize("uneven", ["repeat", "drop"])
def test_ddp_resume_under_a_filter_on_fewer_ranks(files, mode, tmp_path, uneven):
    """4 ranks agree their steps under a filter through gloo, checkpoint after 4, and 3 ranks
    resume from every rank's state: equal steps on each side, full batches, and the samples the
    policy promises: with "repeat" none lost; with "drop" none repeated, and only what the
    ranks with more rows hold past the last step every rank fills (as without a resume)."""
    paths, table = files
    state = tmp_path / "states.json"
    head = _ddp_resume(mode, tmp_path, 4, uneven, state, paths)
    assert [r["steps"] for r in head] == [4] * 4
    tail = _ddp_resume(mode, tmp_path, 3, uneven, state, paths)
    assert len({r["steps"] for r in tail}) == 1 and tail[0]["steps"] > 0, [r["steps"] for r in tail]
    assert all(r["sizes"] == [64] for r in head + tail)
    kept = table.filter(pc.and_(pc.greater(table["quality"], 0.3), pc.less(table["label"], 8)))
    every = collections.Counter(kept["id"].to_pylist())
    seen = collections.Counter(i for r in head + tail for i in r["ids"])
    if uneven == "repeat":
        assert not every - seen, "repeat loses nothing"
    else:
        assert not seen - every, "drop repeats nothing"
        assert sum((every - seen).values()) < 0.2 * len(kept)


def test_groups_are_read_ahead_on_a_background_thread(files, dataset):
    import threading

    paths, _ = files
    want = ids_of(_epoch(dataset(paths, seed=4, prefetch_groups=0), 0))
    for ahead in (1, 2):
        assert ids_of(_epoch(dataset(paths, seed=4, prefetch_groups=ahead), 0)) == want
    ds = dataset(paths, seed=4, prefetch_groups=2)
    reads, started = [], threading.Event()
    inner = ds._read_group

    def watched(group):
        reads.append(threading.current_thread().name)
        if len(reads) == 3:
            started.set()
        return inner(group)

    ds._read_group = watched
    it = iter(ds)
    next(it)  # the first batch of group 0: groups 1 and 2 are on their way
    assert started.wait(30), reads
    assert all(name.startswith("onecopy-prefetch") for name in reads)
    it.close()
    with pytest.raises(ValueError, match="prefetch_groups"):
        dataset(paths, prefetch_groups=-1)


@pytest.mark.parametrize("workers", [0, 2])
def test_stats_say_where_the_time_went(files, dataset, mode, workers):
    """ds.stats() counts every scan and item, DataLoader workers' included, and a training
    loop that sleeps is what the loader waits on."""
    paths, table = files
    ds = dataset(paths, seed=2, filter="quality < 0.6", uneven=None)
    groups = len(ds.groups())
    items, rows = 0, 0
    for batch in oct.DataLoader(ds, num_workers=workers, batch_size=None):
        items += 1
        rows += batch["id"].numel()
        time.sleep(0.005)
    st = ds.stats()
    want = int(np.sum(table.column("quality").to_numpy() < 0.6))
    assert rows == want and st["rows"] == want
    files_per_group = [len({f for f, _, _ in g}) for g in ds.groups()]
    assert st["scans"] == sum(files_per_group) and groups == len(files_per_group)
    assert st["bytes_read"] > 0 and st["decode_s"] > 0
    assert st["bottleneck"] in ("storage", "decode", "copy", "pool", "consumer")
    if mode:  # through onecopyd: its copies into slabs are a stage of their own
        assert st["copy_s"] > 0
    else:
        assert st["copy_s"] == 0
    loader = st["loader"]
    assert loader["items"] == items
    if workers == 0:  # the training loop's sleeps are timed in this process
        assert loader["training_s"] >= 0.005 * (items - 1)
        assert loader["bound_by"] == "training"
        assert 0 < len(st["recent_scans"]) <= 8
        assert all(s["complete"] and s["url"] in paths for s in st["recent_scans"])


def test_stats_of_a_mix_and_of_packed_tokens_sum_their_datasets(files, dataset):
    paths, table = files
    a, b = dataset(paths[:1], batch_rows=None), dataset(paths[1:], batch_rows=None)
    mix = oct.Mix([a, b], [1, 1], stop="all")
    n = sum(1 for _ in mix)
    st = mix.stats()
    assert n == table.num_rows == st["rows"] == a.stats()["rows"] + b.stats()["rows"]
    assert st["scans"] == a.stats()["scans"] + b.stats()["scans"]
    assert st["loader"]["items"] == n
    packed = oct.PackedTokens(dataset(paths, batch_rows=None), seq_len=512)
    sum(1 for _ in packed)
    assert packed.stats()["rows"] == table.num_rows == packed.dataset.stats()["rows"]


@pytest.mark.parametrize("kind,workers", [("mix", 0), ("packed", 0), ("packed", 2)])
def test_ddp_over_a_mix_or_packed_tokens_takes_equal_steps(files, mode, tmp_path, kind, workers):
    paths, _ = files
    ranks = _ddp(mode, tmp_path, "repeat", workers, "quality > 0.6 AND label < 7", kind, paths)
    for epoch in range(2):
        steps = [r[epoch]["steps"] for r in ranks]
        assert len(set(steps)) == 1 and steps[0] > 0, steps


def _run_ranks(build, world, take, workers=0, states=None):
    """Each of @world ranks (made by build(rank, world)) reads @take items (None: to the end),
    after loading @states when given; returns (the ids each read, each rank's state_dict)."""
    ids, saved = [], []
    for r in range(world):
        ds = build(r, world)
        ds.set_epoch(3)
        if states is not None:
            ds.load_state_dict(states)
        got = []
        for i, item in enumerate(oct.DataLoader(ds, num_workers=workers, batch_size=None)):
            got += item["id"].reshape(-1).tolist()
            if take is not None and i + 1 == take:
                break
        ids.append(got)
        saved.append(ds.state_dict())
    return ids, saved


@pytest.mark.parametrize("before,after", [((4, 0), (3, 0)), ((4, 2), (3, 5)), ((2, 0), (5, 2))])
def test_elastic_resume_with_another_number_of_ranks(files, dataset, before, after):
    # Checkpointed mid-epoch on `before` (ranks, workers), resumed on `after` from every rank's
    # state_dict: each sample of the epoch exactly once (uneven=None), and with equal steps
    # (the default) every sample at least once in steps equal on every new rank.
    paths, table = files
    every = sorted(table["id"].to_pylist())
    for uneven in (None, "repeat"):
        build = lambda r, w: dataset(paths, rank=r, world_size=w, seed=13, uneven=uneven)  # noqa: E731
        head, states = _run_ranks(build, before[0], take=5, workers=before[1])
        assert all(len(h) > 0 for h in head)
        tail, _ = _run_ranks(build, after[0], take=None, workers=after[1], states=states)
        seen = sorted(i for part in head + tail for i in part)
        if uneven is None:
            assert seen == every, "samples repeated or lost"
        else:
            assert set(seen) == set(every), "samples lost"
            steps = {len(t) // 64 for t in tail}
            assert len(steps) == 1 and all(len(t) % 64 == 0 for t in tail), [len(t) for t in tail]
    # One rank's state_dict alone cannot resume another world.
    with pytest.raises(ValueError, match="every rank"):
        dataset(paths, rank=0, world_size=3, seed=13).load_state_dict(states[0])
    with pytest.raises(ValueError, match="every rank"):
        dataset(paths, rank=0, world_size=3, seed=13).load_state_dict(states[:-1])


def test_elastic_resume_of_a_mix_and_of_packed_tokens(files, dataset):
    paths, table = files
    every = sorted(table["id"].to_pylist())

    def mix(r, w):
        a = dataset(paths[:2], rank=r, world_size=w, seed=1, uneven=None)
        b = dataset(paths[2:], rank=r, world_size=w, seed=2, uneven=None)
        return oct.Mix([a, b], [0.6, 0.4], seed=4, stop="all", uneven=None)

    head, states = _run_ranks(mix, 4, take=6)
    tail, _ = _run_ranks(mix, 3, take=None, states=states)
    assert sorted(i for part in head + tail for i in part) == every

    seq = 96
    tokens = collections.Counter(np.concatenate([np.asarray(t) for t in table["tokens"].to_pylist()]).tolist())

    def packed(r, w):
        return oct.PackedTokens(dataset(paths, batch_rows=None, rank=r, world_size=w, seed=6, uneven=None),
                                seq_len=seq, document_ids=False, uneven=None)

    seen = collections.Counter()
    saved = []
    for r in range(4):
        p = packed(r, 4)
        p.set_epoch(3)
        for i, item in enumerate(p):
            seen.update(item["input_ids"].tolist())
            if i + 1 == 8:
                break
        saved.append(p.state_dict())
    for r in range(3):
        p = packed(r, 3)
        p.set_epoch(3)
        p.load_state_dict(saved)
        for item in p:
            seen.update(item["input_ids"].tolist())
    # Lost: only the tails shorter than a sequence, one per rank and run; repeated: only the
    # heads of the samples cut at the checkpoint (under 40 tokens each).
    assert sum((tokens - seen).values()) <= (4 + 3) * seq
    assert sum((seen - tokens).values()) <= 4 * 40

# SPDX-License-Identifier: Apache-2.0
"""onecopy.dataset in this process: a directory, glob, list or s3:// prefix (moto,
tests/servers/moto.sh) of vortex-data-written files with different chunk sizes is the
concatenation of its files for scan, filtered scan, take and count; a file with another schema is
named; onecopy.open of a pattern is the Dataset. Through onecopyd: tests/daemon/test_dataset_daemon.py."""

import os
import socket
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import vortex as vx

import onecopy
from onecopy._dataset import filter_columns

# (rows, bytes of each row's blob) of each file. vortex-data's writer cuts chunks of about 1 MiB in
# multiples of 8192 rows, so these give chunks of 16384, 8192 and 9000 rows: file and chunk
# boundaries fall in different places.
PARTS = ((40_000, 64), (20_000, 128), (9_000, 16))
CHUNKS = [[16384, 16384, 7232], [8192, 8192, 3616], [9000]]
FILTER = (onecopy.col("score") > 0.7) & onecopy.col("tag").is_not_null()


def part(first: int, n: int, width: int) -> pa.Table:
    ids = np.arange(first, first + n, dtype=np.int64)
    blobs = np.random.default_rng(first).bytes(n * width)
    offsets = np.arange(0, n * width + 1, width, dtype=np.int32)
    return pa.table({"id": pa.array(ids), "score": pa.array((ids * 7919 % 1000) / 1000.0),
                     "tag": pa.array([None if i % 17 == 0 else f"t{i % 13}" for i in ids]),
                     "blob": pa.BinaryArray.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets),
                                                                          pa.py_buffer(blobs)])})


def write_parts(root: Path) -> tuple[list[str], pa.Table]:
    """The files PARTS describes under @root (p0.vortex, ...), and the table of all their rows."""
    root.mkdir(parents=True, exist_ok=True)
    paths, tables, first = [], [], 0
    for i, (n, width) in enumerate(PARTS):
        t = part(first, n, width)
        vx.io.write(t, str(root / f"p{i}.vortex"))
        paths.append(str(root / f"p{i}.vortex"))
        tables.append(t)
        first += n
    return paths, pa.concat_tables(tables)


def assert_rows(got, want: pa.Table) -> None:
    got = pa.table(got)
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def assert_is_concatenation(ds: onecopy.Dataset, want: pa.Table) -> None:
    """Everything a Dataset answers equals the same on @want, the files' rows concatenated."""
    assert ds.row_count == len(ds) == want.num_rows
    assert ds.file_rows == [n for n, _ in PARTS]
    assert ds.schema.names == want.column_names
    assert_rows(ds, want)  # __arrow_c_stream__: the full scan
    assert_rows(ds.scan(batch_rows=5000).read_all(), want)
    mask = pc.and_(pc.greater(want.column("score"), 0.7), pc.is_valid(want.column("tag")))
    hits = want.filter(mask).select(["id", "tag"])
    assert 0 < hits.num_rows < want.num_rows
    assert_rows(ds.scan(columns=["id", "tag"], filter=FILTER), hits)
    # Row numbers are the dataset's, as take() numbers them: here each kept row's id.
    numbered = pa.table(ds.scan(["id"], FILTER, batch_rows=3000, row_numbers=True))
    assert numbered.column_names == ["id", "_row_number"]
    assert numbered.schema.field("_row_number").type == pa.uint64()
    assert numbered.column("_row_number").to_pylist() == hits.column("id").to_pylist()
    assert ds.count() == want.num_rows
    assert ds.count(FILTER) == hits.num_rows
    assert ds.count(f"id >= {want.num_rows - 10}") == 10  # the first two files ruled out
    assert ds.count("id < 0") == 0
    rng = np.random.default_rng(11)
    idx = np.r_[rng.integers(0, want.num_rows, 100), 0, want.num_rows - 1, 39_999, 40_000, 39_999, want.num_rows - 1]
    assert_rows(ds.take(idx), want.take(idx))
    assert_rows(ds.take(idx.tolist(), columns=["tag", "id"]), want.take(idx).select(["tag", "id"]))
    assert ds.take(idx).read_next_batch().num_rows == idx.size  # one batch
    assert_rows(ds.take([40_005, 40_001, 40_005]), want.take([40_005, 40_001, 40_005]))  # one file's rows
    # The files alternating at every position, a row asked twice among them.
    alt = np.ravel(np.c_[np.arange(3000) * 13, 40_000 + np.arange(3000) * 6, 60_000 + np.arange(3000) * 3])
    alt[-1] = alt[1]
    assert_rows(ds.take(alt), want.take(alt))
    assert ds.take([]).read_all().num_rows == 0


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    return write_parts(tmp_path_factory.mktemp("dataset") / "ds")


def test_a_directory_is_the_concatenation_of_its_files(parts):
    paths, want = parts
    ds = onecopy.dataset(os.path.dirname(paths[0]), daemon=False)
    assert ds.files == paths
    assert all(isinstance(ds.file(i), onecopy.VortexFile) for i in range(len(paths)))
    assert [[e - b for b, e in ds.file(i).units(10**9)] for i in range(len(paths))] == CHUNKS
    assert_is_concatenation(ds, want)


def test_a_glob_a_list_and_a_mix_are_the_same_dataset(parts):
    paths, want = parts
    root = os.path.dirname(paths[0])
    for uris in (os.path.join(root, "p*.vortex"), paths, [os.path.join(root, "p[01].vortex"), paths[2]]):
        ds = onecopy.dataset(uris, daemon=False)
        assert ds.files == paths
        assert_rows(ds, want)
        assert ds.count(FILTER) == onecopy.dataset(root, daemon=False).count(FILTER)


def test_open_of_a_directory_or_glob_is_a_dataset(parts):
    paths, want = parts
    root = os.path.dirname(paths[0])
    for pattern in (root, os.path.join(root, "*.vortex")):
        ds = onecopy.open(pattern, daemon=False)
        assert isinstance(ds, onecopy.Dataset)
        assert ds.row_count == want.num_rows
    assert isinstance(onecopy.open(paths[0], daemon=False), onecopy.VortexFile)


def test_without_a_daemon_reads_are_in_process_and_client_dataset_is_refused(parts, monkeypatch):
    paths, _ = parts
    monkeypatch.setenv("ONECOPY_SOCKET", "")
    assert onecopy.dataset(paths).socket is None
    with pytest.raises(onecopy.OnecopyError, match="no onecopyd serves this machine") as e:
        onecopy.Client().dataset(paths)
    assert e.value.code == "not_found"


def test_a_file_with_another_schema_is_named(parts, tmp_path):
    paths, _ = parts
    t = part(0, 100, 50)
    vx.io.write(t.set_column(2, "tag", pa.array(np.arange(100, dtype=np.int64))), str(tmp_path / "q1.vortex"))
    ds = onecopy.dataset([paths[0], str(tmp_path / "q1.vortex")], daemon=False)
    for use in (lambda: ds.schema, lambda: ds.scan(), lambda: ds.take([0])):
        with pytest.raises(onecopy.OnecopyError) as e:
            use()
        assert e.value.code == "invalid"
        assert str(e.value) == (f"{tmp_path / 'q1.vortex'} does not have the schema of {paths[0]}: column 'tag' is "
                                "string_view in the dataset and int64 in this file")
    vx.io.write(t.append_column("extra", pa.array(np.zeros(100))), str(tmp_path / "q2.vortex"))
    with pytest.raises(onecopy.OnecopyError, match=r"q2\.vortex does not have the schema of .*p0\.vortex: this file "
                                                   r"has a column the dataset lacks: 'extra' \(double\)"):
        onecopy.dataset([paths[0], str(tmp_path / "q2.vortex")], daemon=False).schema


def test_an_empty_match_is_not_found(tmp_path):
    (tmp_path / "empty").mkdir()
    for pattern in (tmp_path / "empty", str(tmp_path / "*.vortex")):
        with pytest.raises(onecopy.OnecopyError, match="no Vortex files match") as e:
            onecopy.dataset(pattern, daemon=False)
        assert e.value.code == "not_found"


def test_take_refuses_rows_outside_the_dataset(parts):
    paths, want = parts
    ds = onecopy.dataset(paths, daemon=False)
    with pytest.raises(ValueError, match="non-negative"):
        ds.take([3, -1])
    with pytest.raises(onecopy.OnecopyError, match=f"take index {want.num_rows} \\(position 1\\) is past the "
                                                   f"dataset's {want.num_rows} rows"):
        ds.take([0, want.num_rows])


def test_a_count_reads_the_columns_its_filter_names():
    names = ["id", "score", "tag", "my col", "s"]
    assert filter_columns(FILTER, names) == ["score", "tag"]
    assert filter_columns("\"my col\" = 'id and tag' AND s.x IS NULL", names) == ["my col", "s"]
    assert filter_columns(onecopy.col(["my col"]) > 1, names) == ["my col"]


def test_to_torch_reads_every_row_once(parts):
    paths, want = parts
    tds = onecopy.dataset(paths, daemon=False).to_torch(batch_rows=128, columns=["id"], unit_rows=500, seed=3)
    assert tds.socket is None
    ids = np.concatenate([b["id"].numpy() for b in tds])
    assert sorted(ids.tolist()) == want.column("id").to_pylist()


# ---- on S3 (moto: tests/conftest.py), read in this process --------------------------------------


def test_an_s3_prefix_and_glob_are_the_concatenation_of_their_objects(moto_bucket, parts):
    paths, want = parts
    bucket, s3, _ = moto_bucket
    for p in paths:
        s3.upload_file(p, bucket, f"ds/{os.path.basename(p)}")
    s3.put_object(Bucket=bucket, Key="ds/notes.txt", Body=b"not a vortex file")
    objects = [f"s3://{bucket}/ds/p{i}.vortex" for i in range(len(paths))]
    ds = onecopy.dataset(f"s3://{bucket}/ds/", daemon=False)
    assert ds.files == objects
    assert_is_concatenation(ds, want)
    glob = onecopy.open(f"s3://{bucket}/ds/p*.vortex", daemon=False)
    assert isinstance(glob, onecopy.Dataset) and glob.files == objects
    assert glob.count(FILTER) == ds.count(FILTER)
    with pytest.raises(onecopy.OnecopyError, match="no Vortex files match") as e:
        onecopy.dataset(f"s3://{bucket}/none/", daemon=False)
    assert e.value.code == "not_found"


def test_reload_settings_takes_a_new_s3_endpoint(moto_bucket, parts, monkeypatch):
    """The process's S3 client follows the AWS_* environment after reload_settings(): a test or a
    notebook that moves to another endpoint reads from it, and an endpoint nobody serves fails
    naming its port."""
    paths, _ = parts
    bucket, s3, env = moto_bucket
    s3.upload_file(paths[0], bucket, "one/p0.vortex")
    rows = onecopy.open(f"s3://{bucket}/one/p0.vortex", daemon=False).row_count
    with socket.socket() as free:  # a port nobody listens on once closed
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{dead}")
    onecopy.reload_settings()
    with pytest.raises(onecopy.OnecopyError, match=f"127.0.0.1:{dead}"):
        onecopy.open(f"s3://{bucket}/one/p0.vortex", daemon=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", env["AWS_ENDPOINT_URL"])
    onecopy.reload_settings()
    assert onecopy.open(f"s3://{bucket}/one/p0.vortex", daemon=False).row_count == rows

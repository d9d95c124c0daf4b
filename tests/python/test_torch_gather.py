# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch's batch tensors (onecopy._torch_gather): list columns of sliced batches give the
values their offsets span, rebased to 0, and making them imports nothing more."""

import subprocess
import sys

import pyarrow as pa
import pytest

from onecopy._torch_gather import batch_tensors

LISTS = pa.array([[1, 2], [3], [], [4, 5, 6], [7]], pa.list_(pa.int32()))
PAIRS = pa.array([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]], pa.list_(pa.int64(), 2))


@pytest.mark.parametrize("lo,n", [(0, 5), (1, 4), (2, 1), (3, 2), (5, 0)])
def test_list_columns_of_a_slice_are_its_values_and_offsets_from_0(lo, n):
    lists, pairs = LISTS.slice(lo, n), PAIRS.slice(lo, n)
    out = batch_tensors(pa.record_batch({"t": lists, "p": pairs}))
    assert out["t"].tolist() == lists.flatten().to_pylist()
    assert out["t.offsets"].tolist() == [x - lists.offsets[0].as_py() for x in lists.offsets.to_pylist()]
    assert out["p"].tolist() == pairs.to_pylist()
    assert tuple(out["p"].shape) == (n, 2)


def test_tensors_of_a_batch_import_no_pyarrow_compute():
    # pyarrow.compute costs a quarter second to import, once, inside the first batch's time.
    code = ("import sys, pyarrow as pa; from onecopy._torch_gather import batch_tensors; "
            "batch_tensors(pa.record_batch({'t': pa.array([[1], [2, 3]], pa.list_(pa.int32())), "
            "'q': pa.array([0.5, 1.0])})); print('pyarrow.compute' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

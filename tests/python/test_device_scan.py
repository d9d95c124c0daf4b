# SPDX-License-Identifier: Apache-2.0
"""Scans into GPU memory from Python (onecopy._device): argument checks and the missing-device
error everywhere; on a machine with a CUDA device and torch built for it, every column of every
batch against the CPU scan (skipped, visibly, elsewhere)."""

import ctypes
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import vortex as vx

import onecopy
from onecopy import _device


@pytest.fixture(scope="module")
def numbers_file(tmp_path_factory) -> tuple[Path, pa.Table]:
    rng = np.random.default_rng(7)
    n = 50_000
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 100, n).astype(np.int32)),
        "score": pa.array(rng.random(n)),
    })
    path = tmp_path_factory.mktemp("device") / "numbers.vortex"
    vx.io.write(table, str(path))
    return path, table


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def test_device_names_parse_and_others_are_refused():
    assert _device.parse_device("cuda") == 0
    assert _device.parse_device("cuda:3") == 3
    for bad in ("gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA:0"):
        with pytest.raises(ValueError):
            _device.parse_device(bad)


def test_cuda_array_interface_types_follow_arrow_formats():
    assert _device.typestr_of("l") == "<i8"
    assert _device.typestr_of("f") == "<f4"
    assert _device.typestr_of("tdD") == "<i4"
    assert _device.typestr_of("tsu:UTC") == "<i8"
    assert _device.typestr_of("tts") == "<i4"
    for not_fixed in ("u", "z", "b", "d:15,2", "+s", "vu"):
        assert _device.typestr_of(not_fixed) is None


def test_the_device_structs_have_the_arrow_abi_layout():
    # Arrow C Device Data Interface: ArrowArray (80 bytes), device_id, device_type, sync_event,
    # reserved[3] -> 128 bytes; the stream: device_type then five pointers -> 48 bytes.
    assert ctypes.sizeof(_device.ArrowDeviceArray) == 128
    assert _device.ArrowDeviceArray.device_id.offset == 80
    assert _device.ArrowDeviceArray.sync_event.offset == 96
    assert ctypes.sizeof(_device.ArrowDeviceArrayStream) == 48


def test_a_bad_device_name_is_a_value_error(numbers_file):
    path, _ = numbers_file
    with pytest.raises(ValueError):
        onecopy.open(path).scan(device="gpu:0")


@pytest.mark.skipif(_has_cuda(), reason="this machine has a CUDA device: the GPU test below runs instead")
def test_a_scan_onto_a_missing_gpu_says_why(numbers_file):
    path, _ = numbers_file
    with pytest.raises(onecopy.OnecopyError) as e:
        onecopy.open(path).scan(device="cuda:0")
    assert e.value.code == "cuda"
    assert "no CUDA device" in str(e.value)


@pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA device and torch built for it")
def test_every_column_of_a_device_scan_equals_the_cpu_scan(numbers_file):
    import torch

    path, table = numbers_file
    f = onecopy.open(path)
    for flt in (None, "small < 10"):
        want = pa.table(f.scan(filter=flt))
        got = {name: [] for name in want.column_names}
        for batch in f.scan(filter=flt, device="cuda:0", batch_rows=7000):
            assert batch.device == 0
            for name, column in batch.columns.items():
                got[name].append(torch.as_tensor(column, device="cuda:0").cpu().numpy())
        for name in want.column_names:
            np.testing.assert_array_equal(np.concatenate(got[name]), want.column(name).to_numpy())

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


@pytest.fixture(scope="module")
def typed_file(tmp_path_factory) -> tuple[Path, pa.Table]:
    """Every column kind a device batch carries: fixed width, booleans, strings, lists and
    fixed-size lists, with runs a fused plan covers and columns it leaves to the CPU."""
    rng = np.random.default_rng(11)
    n = 30_000
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 100, n).astype(np.int32)),
        "score": pa.array(rng.random(n)),
        "flag": pa.array(rng.random(n) < 0.3),
        "name": pa.array([f"name-{i % 97}" for i in range(n)]),
        "tokens": pa.array([list(range(i % 7)) for i in range(n)], type=pa.list_(pa.int32())),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(3 * n).astype(np.float32)), 3),
    })
    path = tmp_path_factory.mktemp("device") / "typed.vortex"
    vx.io.write(table, str(path))
    return path, table


def _host_reference_table(scan) -> dict:
    """A host-reference device scan's columns as Python values, read through the buffers and
    offsets a DeviceColumn exposes (what a CUDA consumer reads)."""
    out: dict = {}
    for batch in scan:
        assert batch.device == _device.HOST_REFERENCE and not batch.on_cuda
        for name, c in batch.columns.items():
            if _device.typestr_of(c.format):
                values = np.asarray(c).tolist()
            elif c.format == "b":
                bits = np.unpackbits(np.asarray(c.bits_buffer()), bitorder="little")
                values = bits[c.offset % 8:c.offset % 8 + c.length].astype(bool).tolist()
            elif c.format == "u":
                offsets = np.asarray(c.offsets_buffer())
                data = bytes(np.asarray(c.bytes_buffer(int(offsets[0]), int(offsets[-1]))))
                values = [data[a - offsets[0]:b - offsets[0]].decode() for a, b in zip(offsets[:-1], offsets[1:])]
            elif c.format == "+l":
                offsets = np.asarray(c.offsets_buffer())
                child = np.asarray(c.children[0])
                values = [child[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
            else:
                assert c.format == "+w:3"
                child = np.asarray(c.children[0])
                values = child[3 * c.offset:3 * (c.offset + c.length)].reshape(-1, 3).tolist()
            out.setdefault(name, []).extend(values)
    return out


@pytest.mark.parametrize("flt", [None, "small < 30", "name = 'name-5' OR flag"])
def test_a_host_reference_scan_equals_the_cpu_scan_for_every_column_kind(typed_file, flt):
    path, _ = typed_file
    f = onecopy.open(path)
    want = pa.table(f.scan(filter=flt, strings="offsets"))
    got = _host_reference_table(f.scan(filter=flt, device="host-reference", batch_rows=4001))
    assert set(got) == set(want.column_names)
    for name in want.column_names:
        assert got[name] == want.column(name).to_pylist(), name


def test_a_host_reference_scan_of_ranges_reads_them_in_order(typed_file):
    path, _ = typed_file
    f = onecopy.open(path)
    ranges = [(20_000, 25_000), (3, 900), (900, 17_000)]
    want = pa.table(f.scan_ranges(ranges, filter="small < 60", strings="offsets"))
    scan = f.scan_ranges(ranges, filter="small < 60", device="host-reference")
    got = _host_reference_table(scan)
    for name in want.column_names:
        assert got[name] == want.column(name).to_pylist(), name
    assert scan.stats()["rows"] == want.num_rows  # the cursor saw every batch


def test_host_reference_columns_refuse_what_an_array_interface_cannot_carry(typed_file):
    path, _ = typed_file
    batch = next(iter(onecopy.open(path).scan(device="host-reference")))
    with pytest.raises(onecopy.OnecopyError, match="not one fixed-width value"):
        batch.columns["name"].__array_interface__  # noqa: B018
    with pytest.raises(AttributeError):  # host memory has no CUDA interface to offer
        batch.columns["id"].__cuda_array_interface__  # noqa: B018
    with pytest.raises(onecopy.OnecopyError, match="not boolean"):
        batch.columns["id"].bits_buffer()
    assert _device.parse_device("host-reference") == _device.HOST_REFERENCE


def test_a_batch_whose_struct_is_a_slice_gives_each_column_the_slices_rows():
    # The Arrow C Device interface lets a producer slice the struct and not its members (as
    # pyarrow exports a sliced StructArray): offset 3, length 4, members of 10 rows each.
    full = pa.StructArray.from_arrays(
        [pa.array(np.arange(10, dtype=np.int64)), pa.array([f"s{i}" for i in range(10)]),
         pa.array([i % 3 == 0 for i in range(10)])], names=["n", "s", "b"])
    device_array, schema = _device.ArrowDeviceArray(), onecopy._native.ArrowSchema()
    full.slice(3, 4)._export_to_c(ctypes.addressof(device_array.array), ctypes.addressof(schema))
    device_array.device_type = _device.ARROW_DEVICE_CPU
    fields = _device._Field(schema).children
    ctypes.CFUNCTYPE(None, ctypes.POINTER(onecopy._native.ArrowSchema))(schema.release)(ctypes.byref(schema))
    batch = _device.DeviceBatch(device_array, fields)
    assert batch.num_rows == 4
    assert np.asarray(batch.columns["n"]).tolist() == [3, 4, 5, 6]
    s = batch.columns["s"]
    offsets = np.asarray(s.offsets_buffer())
    data = bytes(np.asarray(s.bytes_buffer(int(offsets[0]), int(offsets[-1]))))
    assert [data[a - offsets[0]:b - offsets[0]].decode() for a, b in zip(offsets[:-1], offsets[1:])] == \
        ["s3", "s4", "s5", "s6"]
    b = batch.columns["b"]
    bits = np.unpackbits(np.asarray(b.bits_buffer()), bitorder="little")
    assert bits[b.offset % 8:b.offset % 8 + b.length].tolist() == [1, 0, 0, 1]
    # and onecopy.torch's tensors of them (the strings' bytes from their first offset on)
    import torch

    from onecopy import _device_rows

    values, offs = _device_rows.column_tensors(s, torch.device("cpu"))
    assert bytes(values.numpy()) == b"s3s4s5s6" and offs.tolist() == [0, 2, 4, 6, 8]
    assert _device_rows.column_tensors(b, torch.device("cpu"))[0].tolist() == [True, False, False, True]

# SPDX-License-Identifier: Apache-2.0
"""format/pcodec decodes what the pcodec Python package (pco 1.0.1, format 4.1, the crate
Vortex >= 0.60 writes with) encodes, bit for bit: every number type x mode x delta encoding,
forced through ChunkConfig, and the edge cases (one value, constant pages, NaN/inf/-0.0,
extreme integers, many pages, several chunks under one header).

Each case exports pcodec's wrapped components (header, chunk meta, pages) into the container
that build/tests/onecopy-pco-decode reads, and checks its output against both the input array
and pcodec's own decode of the same bytes. The tool also prints the mode and delta encoding it
parsed, so a case also fails when pcodec did not use the mode it was asked for."""

from __future__ import annotations

import os
import struct
import zlib
import subprocess
from pathlib import Path

import numpy as np
import pcodec
import pytest
from pcodec import ChunkConfig, DeltaSpec, ModeSpec, PagingSpec
from pcodec import wrapped as pw

ROOT = Path(__file__).resolve().parents[2]
TOOL = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build")) / "tests" / "onecopy-pco-decode"

NUMBERS = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32", "f64"]  # Number order
DTYPES = {
    "u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32,
    "i32": np.int32, "u64": np.uint64, "i64": np.int64, "f16": np.float16, "f32": np.float32,
    "f64": np.float64,
}
BITS = {n: np.dtype(t).itemsize * 8 for n, t in DTYPES.items()}
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def test_oracle_is_pco_1_0_1():
    # pcodec (Python) 1.0.1 is built from pco 1.0.1, the crate Vortex >= 0.60 pins.
    assert pcodec.__version__ == "1.0.1"
    assert pw.FileCompressor().write_header() == b"\x04\x01"


def compress(chunks: list[np.ndarray], config: ChunkConfig):
    """pcodec's components: header, then per chunk (meta, [(n_values, page)])."""
    fc = pw.FileCompressor()
    header = fc.write_header()
    out = []
    for arr in chunks:
        cc = fc.chunk_compressor(arr, config)
        meta = cc.write_meta()
        counts = cc.n_per_page()
        out.append((meta, [(n, cc.write_page(i)) for i, n in enumerate(counts)]))
    return header, out


def pcodec_decode(header: bytes, chunks, number: str) -> np.ndarray:
    fd, _ = pw.FileDecompressor.new(header)
    parts = []
    for meta, pages in chunks:
        cd, _ = fd.chunk_decompressor(meta, number)
        for n, page in pages:
            dst = np.zeros(n, dtype=DTYPES[number])
            cd.read_page_into(page, n, dst)
            parts.append(dst)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=DTYPES[number])


def container(number: str, header: bytes, chunks) -> bytes:
    b = b"PCOD" + struct.pack("<II", NUMBERS.index(number), len(header)) + header
    b += struct.pack("<I", len(chunks))
    for meta, pages in chunks:
        b += struct.pack("<I", len(meta)) + meta + struct.pack("<I", len(pages))
        for n, page in pages:
            b += struct.pack("<II", n, len(page)) + page
    return b


def onecopy_decode(tmp_path: Path, number: str, header: bytes, chunks):
    src, dst = tmp_path / "in.pcod", tmp_path / "out.bin"
    src.write_bytes(container(number, header, chunks))
    r = subprocess.run([str(TOOL), str(src), str(dst)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return np.fromfile(dst, dtype=DTYPES[number]), r.stdout.splitlines()


def bits_of(a: np.ndarray) -> np.ndarray:
    return a.view(UINT[a.dtype.itemsize * 8])


def check(tmp_path: Path, number: str, chunks_in: list[np.ndarray], config: ChunkConfig):
    """Decodes with onecopy; asserts bit equality with the input and pcodec. Returns describes."""
    header, chunks = compress(chunks_in, config)
    got, lines = onecopy_decode(tmp_path, number, header, chunks)
    want = np.concatenate(chunks_in) if chunks_in else np.zeros(0, DTYPES[number])
    theirs = pcodec_decode(header, chunks, number)
    assert np.array_equal(bits_of(theirs), bits_of(want))  # the oracle round-trips
    assert got.dtype == want.dtype and len(got) == len(want)
    mismatch = np.flatnonzero(bits_of(got) != bits_of(want))
    assert mismatch.size == 0, f"{mismatch.size} values differ, first at {mismatch[0]}"
    return [line.split(": ", 1)[1] for line in lines]


def config(mode=None, delta=None, pages=None) -> ChunkConfig:
    kw = {"enable_8_bit": True}
    if mode is not None:
        kw["mode_spec"] = mode
    if delta is not None:
        kw["delta_spec"] = delta
    if pages is not None:
        kw["paging_spec"] = PagingSpec.exact_page_sizes(pages)
    return ChunkConfig(**kw)


# --- data that each mode compresses well (so pcodec keeps the mode instead of its fallback) ---

def gen(number: str, mode: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = DTYPES[number]
    # mostly flat with rare unit steps: deltas of every order stay small, so pcodec keeps them
    walk = np.cumsum(rng.choice([-1, 0, 1], size=n, p=[0.03, 0.94, 0.03]))
    if number.startswith("f"):
        if mode == "float_mult":
            x = (walk + 40) * 0.25 if number == "f16" else (walk + 1000) * 0.1
        elif mode == "float_quant":
            x = (walk + rng.normal(size=n) * 0.01) * 0.7
            a = x.astype(t)
            u = bits_of(a)
            u &= ~UINT[BITS[number]](7)  # three low mantissa bits zero
            return a
        elif mode == "dict":
            return np.sort(rng.normal(size=20).astype(t))[np.clip(walk + 10, 0, 19)]
        else:
            x = walk * 0.5 + rng.normal(size=n) * 0.01
        return x.astype(t)
    info = np.iinfo(t)
    mid = (int(info.min) + int(info.max)) // 2
    if mode == "int_mult":
        span = min(1000, (int(info.max) - mid) // 8)
        mults = np.clip(walk, -span, span) + mid // 7
        return (mults * 7 + rng.integers(0, 2, n)).astype(t)
    if mode == "dict":
        vals = np.sort(rng.integers(info.min, info.max, 20, dtype=t, endpoint=True))
        return vals[np.clip(walk + 10, 0, 19)]
    return np.clip(walk + mid, info.min, info.max).astype(t)


MODES = {
    "classic": lambda number: ModeSpec.classic(),
    "int_mult": lambda number: ModeSpec.try_int_mult(7),
    "float_mult": lambda number: ModeSpec.try_float_mult(0.25 if number == "f16" else 0.1),
    "float_quant": lambda number: ModeSpec.try_float_quant(3),
    "dict": lambda number: ModeSpec.try_dict(),
}
DELTAS = {"none": DeltaSpec.no_op()}
DELTAS.update({f"consecutive{o}": DeltaSpec.try_consecutive(o) for o in range(1, 8)})
DELTAS["lookback"] = DeltaSpec.try_lookback()
DELTAS["conv1"] = DeltaSpec.try_conv1(2)


def mode_cases():
    for number in NUMBERS:
        fl = number.startswith("f")
        for mode in ["classic", "dict"] + (["float_mult", "float_quant"] if fl else ["int_mult"]):
            for delta in DELTAS:
                if delta == "conv1" and BITS[number] == 64:
                    continue  # pcodec: Conv1 is for latents of at most 32 bits
                yield pytest.param(number, mode, delta, id=f"{number}-{mode}-{delta}")


@pytest.mark.parametrize("number,mode,delta", list(mode_cases()))
def test_every_type_mode_and_delta_decodes_bit_exact(tmp_path, number, mode, delta):
    # 1000 values over pages of 300 and 700: partial batches, two pages with their own state.
    arr = gen(number, mode, 1000, seed=zlib.crc32(f"{number}{mode}{delta}".encode()))
    (desc,) = check(tmp_path, number, [arr], config(MODES[mode](number), DELTAS[delta], [300, 700]))
    assert desc.startswith(mode), desc
    want_delta = "consecutive(order=" + delta[-1] if delta.startswith("consecutive") else delta
    if delta == "conv1" and desc.split()[1].startswith("none"):
        pytest.fail(f"pcodec found no Conv1 weights for this data: {desc}")
    assert desc.split()[1].startswith(want_delta), desc


@pytest.mark.parametrize("number", NUMBERS)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 255, 256, 257, 511, 513, 2049])
def test_page_sizes_around_batches_and_delta_states(tmp_path, number, n):
    # Auto mode and delta (what Vortex writes), then every consecutive order near the page start.
    arr = gen(number, "classic", n, seed=n)
    check(tmp_path, number, [arr], config())
    for order in (1, 4, 7):
        check(tmp_path, number, [arr], config(ModeSpec.classic(), DeltaSpec.try_consecutive(order)))
    check(tmp_path, number, [arr], config(ModeSpec.classic(), DeltaSpec.try_lookback()))


@pytest.mark.parametrize("number", NUMBERS)
def test_extreme_and_special_values(tmp_path, number):
    t = DTYPES[number]
    rng = np.random.default_rng(7)
    if number.startswith("f"):
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], dtype=t)
        fi = np.finfo(t)
        special = np.concatenate([special, np.array([fi.max, fi.min, fi.tiny, -fi.tiny,
                                                     fi.smallest_subnormal, -fi.smallest_subnormal], dtype=t)])
        # a NaN with a payload, bit for bit
        payload = np.array([UINT[BITS[number]](0x7C01 if number == "f16" else 0x7F800123 if number == "f32"
                                               else 0x7FF0000000000ABC)]).view(t)
        special = np.concatenate([special, payload])
        raw = rng.integers(0, 2 ** BITS[number] - 1, 3000, dtype=UINT[BITS[number]], endpoint=True).view(t)
    else:
        info = np.iinfo(t)
        special = np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dtype=t)
        raw = rng.integers(info.min, info.max, 3000, dtype=t, endpoint=True)
    arr = np.concatenate([np.tile(special, 20), raw])
    for mode in (None, ModeSpec.classic()):
        for delta in (None, DeltaSpec.no_op(), DeltaSpec.try_consecutive(3), DeltaSpec.try_lookback()):
            check(tmp_path, number, [arr], config(mode, delta, [1000, 1000, len(arr) - 2000]))
    check(tmp_path, number, [arr], config(ModeSpec.try_dict()))


@pytest.mark.parametrize("number", NUMBERS)
def test_constant_data_and_constant_pages(tmp_path, number):
    t = DTYPES[number]
    one = np.full(5000, 3, dtype=t)
    for delta in (DeltaSpec.no_op(), DeltaSpec.try_consecutive(2), DeltaSpec.try_lookback(), None):
        check(tmp_path, number, [one], config(None, delta, [1000, 4000]))
    # pages that are each constant, at different values
    steps = np.repeat(np.arange(5, dtype=t), 700)
    check(tmp_path, number, [steps], config(None, None, [700] * 5))
    check(tmp_path, number, [np.full(1, 9, dtype=t)], config())


@pytest.mark.parametrize("number", ["i8", "u16", "i32", "u64", "f16", "f32", "f64"])
def test_many_pages_and_chunks_under_one_header(tmp_path, number):
    chunks = [gen(number, "classic", n, seed=n) for n in (4000, 1, 777)]
    descs = check(tmp_path, number, chunks, config(pages=None))
    assert len(descs) == 3
    big = gen(number, "classic", 20000, seed=3)
    check(tmp_path, number, [big], ChunkConfig(enable_8_bit=True, paging_spec=PagingSpec.equal_pages_up_to(1024)))


@pytest.mark.parametrize("level", [0, 4, 12])
def test_compression_levels(tmp_path, level):
    arr = gen("f64", "float_mult", 5000, seed=level)
    check(tmp_path, "f64", [arr], ChunkConfig(compression_level=level))
    arr = gen("i64", "int_mult", 5000, seed=level)
    check(tmp_path, "i64", [arr], ChunkConfig(compression_level=level))


def test_truncated_page_is_an_error(tmp_path):
    arr = gen("i64", "classic", 3000, seed=1)
    header, chunks = compress([arr], config(ModeSpec.classic(), DeltaSpec.try_consecutive(1)))
    meta, pages = chunks[0]
    n, page = pages[0]
    src, dst = tmp_path / "in.pcod", tmp_path / "out.bin"
    src.write_bytes(container("i64", header, [(meta, [(n, page[: len(page) // 2])])]))
    r = subprocess.run([str(TOOL), str(src), str(dst)], capture_output=True, text=True)
    assert r.returncode == 1 and "corrupt" in r.stderr, r.stderr

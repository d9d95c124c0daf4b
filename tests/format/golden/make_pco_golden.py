# SPDX-License-Identifier: Apache-2.0
"""Writes the pcodec goldens of tests/format/test_pcodec.cpp into tests/format/golden/pco/.

Each golden is NAME.pcod, the container tests/format/pco_decode_main.cpp reads (header, chunk
metas, pages), and NAME.expected, the values it must decode to (raw little endian).

Run it with the pcodec release whose format you want:
  format 3:   python3 -m venv --system-site-packages /tmp/pco3 &&
              /tmp/pco3/bin/pip install pcodec==0.3.4 'numpy<2'      (pco 0.4.4, as Vortex 0.36-0.5x)
              /tmp/pco3/bin/python tests/format/golden/make_pco_golden.py
  format 4.1: .venv/bin/python tests/format/golden/make_pco_golden.py  (pcodec 1.0.1, pco 1.0.1)
With --seeds (any pcodec) it turns the goldens into fuzz seeds, tests/fuzz/seeds/pco/.
The 4.1 run also writes the hand-made goldens (secondary latents that go through the delta
encoding, which no pcodec compressor writes), encoded here bit by bit and decoded by the
formulas of pcodec's docs/format.md, independently of the C++ decoder.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pcodec
from pcodec import ChunkConfig, DeltaSpec, ModeSpec, PagingSpec
from pcodec import wrapped as pw

OUT = Path(__file__).resolve().parent / "pco"
NUMBERS = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32", "f64"]
V1 = pcodec.__version__.startswith("1.")


def container(number: str, header: bytes, chunks) -> bytes:
    b = b"PCOD" + struct.pack("<II", NUMBERS.index(number), len(header)) + header
    b += struct.pack("<I", len(chunks))
    for meta, pages in chunks:
        b += struct.pack("<I", len(meta)) + meta + struct.pack("<I", len(pages))
        for n, page in pages:
            b += struct.pack("<II", n, len(page)) + page
    return b


def write(name: str, number: str, header: bytes, chunks, expected: np.ndarray):
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.pcod").write_bytes(container(number, header, chunks))
    (OUT / f"{name}.expected").write_bytes(expected.tobytes())
    print(f"{name}: {len(expected)} values")


def golden(name: str, number: str, arr: np.ndarray, mode=None, delta=None, pages=None):
    kw = {}
    if mode is not None:
        kw["mode_spec"] = mode
    if delta is not None:
        kw["delta_spec"] = delta
    if pages is not None:
        kw["paging_spec"] = PagingSpec.exact_page_sizes(pages)
    if V1:
        kw["enable_8_bit"] = True
    fc = pw.FileCompressor()
    header = fc.write_header()
    cc = fc.chunk_compressor(arr, ChunkConfig(**kw))
    meta = cc.write_meta() if V1 else cc.write_chunk_meta()
    chunks = [(meta, [(n, cc.write_page(i)) for i, n in enumerate(cc.n_per_page())])]
    write(name, number, header, chunks, arr)


def walk(rng, n):
    return np.cumsum(rng.choice([-1, 0, 1], size=n, p=[0.1, 0.8, 0.1]))


def format3():
    rng = np.random.default_rng(3)
    golden("v3_f64_classic", "f64", (np.cumsum(rng.normal(size=700)) * 10).astype(np.float64))
    golden("v3_i64_int_mult_consecutive", "i64", (walk(rng, 600) * 1000 + 7).astype(np.int64),
           ModeSpec.try_int_mult(1000), DeltaSpec.try_consecutive(1), [256, 344])
    golden("v3_f32_float_mult_consecutive2", "f32", ((walk(rng, 600) + 500) * 0.1).astype(np.float32),
           ModeSpec.try_float_mult(0.1), DeltaSpec.try_consecutive(2), [100, 500])
    q = (rng.normal(size=500) * 100).astype(np.float32)
    q.view(np.uint32)[:] &= ~np.uint32(0xFF)
    golden("v3_f32_float_quant", "f32", q, ModeSpec.try_float_quant(8))
    golden("v3_u16_lookback", "u16", np.tile(rng.integers(0, 60000, 37, dtype=np.uint16), 20),
           ModeSpec.classic(), DeltaSpec.try_lookback(), [300, 440])
    golden("v3_i32_pages", "i32", rng.integers(-(2**31), 2**31 - 1, 1100, dtype=np.int32),
           None, None, [1, 255, 257, 587])
    golden("v3_f16_classic", "f16", (rng.normal(size=400) * 30).astype(np.float16))


def format41():
    rng = np.random.default_rng(41)
    vals = np.sort(rng.integers(0, 255, 12, dtype=np.uint8))
    golden("v41_u8_dict_consecutive2", "u8", vals[np.clip(walk(rng, 600) + 6, 0, 11)],
           ModeSpec.try_dict(), DeltaSpec.try_consecutive(2), [300, 300])
    golden("v41_i16_conv1", "i16", (np.sin(np.arange(700) / 9) * 3000 + rng.integers(-3, 4, 700)).astype(np.int16),
           ModeSpec.classic(), DeltaSpec.try_conv1(3), [350, 350])
    golden("v41_f16_float_mult", "f16", ((walk(rng, 500) + 80) * 0.25).astype(np.float16),
           ModeSpec.try_float_mult(0.25))
    golden("v41_f64_lookback", "f64", np.tile(rng.normal(size=50), 12), ModeSpec.classic(),
           DeltaSpec.try_lookback())
    golden("v41_i8_extremes", "i8", np.tile(np.array([-128, 127, 0, -1, 1], dtype=np.int8), 61))
    handmade()


class BitWriter:
    """LSB-first bit packing, as pcodec writes."""

    def __init__(self):
        self.bits: list[int] = []

    def put(self, value: int, n: int):
        self.bits.extend((value >> i) & 1 for i in range(n))

    def align(self):
        while len(self.bits) % 8:
            self.bits.append(0)

    def bytes(self) -> bytes:
        self.align()
        return bytes(sum(b << i for i, b in enumerate(self.bits[k:k + 8])) for k in range(0, len(self.bits), 8))


def single_bin_var(w: BitWriter, bits: int, lower: int, offset_bits: int):
    """A latent variable with one bin: ans_size_log 0, no tANS bits in pages."""
    w.put(0, 4)           # ans_size_log
    w.put(1, 15)          # n_bins
    w.put(lower, bits)    # weight - 1 takes 0 bits; the lower bound
    w.put(offset_bits, bits.bit_length())


def consecutive_ref(moments, deltas, n, bits):
    # docs/format.md: moments [1, 2] and deltas [0, 10, 0] decode to [1, 3, 5, 17, 29]
    seq = list(deltas)
    for m in reversed(moments):
        out = [m]
        for d in seq:
            out.append((out[-1] + d) % (1 << bits))
        seq = out
    return seq[:n]


def handmade():
    rng = np.random.default_rng(5)
    mid32 = 1 << 31
    header = b"\x04\x01"

    # u32 IntMult(base 1000), Consecutive order 2 with the secondary delta'd; one page of 300.
    n, order = 300, 2
    meta = BitWriter()
    meta.put(1, 4); meta.put(1000, 32)                # IntMult, base
    meta.put(1, 4); meta.put(order, 3); meta.put(1, 1)  # Consecutive, order, secondary delta
    single_bin_var(meta, 32, 0, 8)                    # primary
    single_bin_var(meta, 32, 0, 8)                    # secondary
    moments = [[int(x) for x in rng.integers(0, 2**32, order, dtype=np.uint64)] for _ in range(2)]
    offs = [[int(x) for x in rng.integers(0, 256, n - order)] for _ in range(2)]
    page = BitWriter()
    for var in range(2):
        for m in moments[var]:
            page.put(m, 32)                          # the delta state; 4 ANS states of 0 bits
    page.align()
    for start in range(0, n, 256):
        pre = min(256, n - start - order)            # deltas in this batch
        for var in range(2):
            for o in offs[var][start:start + pre]:
                page.put(o, 8)
    lat = [consecutive_ref(moments[v], [(o + mid32) % 2**32 for o in offs[v]], n, 32) for v in range(2)]
    values = np.array([(l0 * 1000 + l1) % 2**32 for l0, l1 in zip(*lat)], dtype=np.uint32)
    write("hand_u32_int_mult_consecutive2_secondary", "u32", header, [(meta.bytes(), [(n, page.bytes())])], values)

    # f32 FloatQuant(k 4), Lookback (window 2^4, state 2^1) with the secondary delta'd.
    n, k, state_n, window_n = 300, 4, 2, 16
    meta = BitWriter()
    meta.put(3, 4); meta.put(k, 8)                    # FloatQuant, k
    meta.put(2, 4); meta.put(4 - 1, 5); meta.put(1, 4); meta.put(1, 1)  # Lookback
    single_bin_var(meta, 32, 1, 3)                    # lookbacks 1..8
    single_bin_var(meta, 32, 0, 16)                   # primary
    single_bin_var(meta, 32, 0, 4)                    # secondary
    lbs = [int(x) for x in rng.integers(0, 8, n - state_n)]
    states = [[int(x) for x in rng.integers(0, 2**32, state_n, dtype=np.uint64)] for _ in range(2)]
    offs = [[int(x) for x in rng.integers(0, 2**16, n - state_n)], [int(x) for x in rng.integers(0, 16, n - state_n)]]
    page = BitWriter()
    for var in range(2):
        for s in states[var]:
            page.put(s, 32)
    page.align()
    for start in range(0, n, 256):
        pre = min(256, n - start - state_n)
        for o in lbs[start:start + pre]:
            page.put(o, 3)
        for var, ob in ((0, 16), (1, 4)):
            for o in offs[var][start:start + pre]:
                page.put(o, ob)
    lat = []
    for v in range(2):
        seq = list(states[v])
        for j, o in enumerate(offs[v]):
            p = state_n + j
            src = p - (1 + lbs[j])
            seq.append(((o + mid32) + (seq[src] if src >= 0 else 0)) % 2**32)
        lat.append(seq[:n])
    cutoff, low_max = mid32 >> k, (1 << k) - 1
    out = []
    for y, m in zip(*lat):
        low = m if y >= cutoff else (low_max - m) % 2**32
        l = ((y << k) + low) % 2**32
        out.append(l ^ mid32 if l & mid32 else ~l & 0xFFFFFFFF)
    values = np.array(out, dtype=np.uint32).view(np.float32)
    assert window_n >= 8
    write("hand_f32_float_quant_lookback_secondary", "f32", header, [(meta.bytes(), [(n, page.bytes())])], values)


def seeds():
    """tests/fuzz/seeds/pco/: each golden's first chunk in the layout of pcodec::fuzz_decode."""
    dst = Path(__file__).resolve().parents[2] / "fuzz" / "seeds" / "pco"
    dst.mkdir(parents=True, exist_ok=True)
    for src in sorted(OUT.glob("*.pcod")):
        b = src.read_bytes()
        number, hlen = struct.unpack_from("<II", b, 4)
        pos = 12 + hlen
        header = b[12:pos]
        pos += 4  # n_chunks
        (mlen,) = struct.unpack_from("<I", b, pos)
        meta = b[pos + 4:pos + 4 + mlen]
        pos += 4 + mlen
        (n_pages,) = struct.unpack_from("<I", b, pos)
        pos += 4
        seed = bytes([number, 1 if header[0] == 3 else 0]) + struct.pack("<H", len(meta)) + meta
        for _ in range(n_pages):
            n, plen = struct.unpack_from("<II", b, pos)
            seed += struct.pack("<HH", n, plen) + b[pos + 8:pos + 8 + plen]
            pos += 8 + plen
        (dst / src.stem).write_bytes(seed)
        print(f"seed {src.stem}: {len(seed)} bytes")


if __name__ == "__main__":
    import sys

    if "--seeds" in sys.argv:
        seeds()
    elif V1:
        format41()
    else:
        format3()

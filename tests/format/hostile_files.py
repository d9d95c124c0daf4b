# SPDX-License-Identifier: Apache-2.0
"""Hand-crafted hostile Vortex files, one per way a file can lie about its sizes (issue 15).

Each of CASES is a real file written by vortex-data (tests/fuzz/seeds/open_scan/) with one field
of its footer rewritten in place, found by walking the FlatBuffers by hand (layouts in
format/fbs/vortex_file.fbs), so every other byte stays as the writer left it; "deep-nesting" is
written whole by vortex-data, a struct nested deeper than the reader's max_array_depth.
`write_all(dir)` writes them and returns {name: path}; run as a script it refreshes
tests/data/bad/, which the Catch2 suite replays through the fuzz entry points. The huge sparse
file is made at test time only.
"""

import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "tests" / "fuzz" / "seeds" / "open_scan"


class Table:
    """A FlatBuffers table at byte `pos` of `buf` (a bytearray it may patch)."""

    def __init__(self, buf, pos, base=0):
        self.buf, self.pos, self.base = buf, pos, base
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]

    def field(self, index):
        """Absolute position of field `index`, or None when absent."""
        vt_size = struct.unpack_from("<H", self.buf, self.vtable)[0]
        at = 4 + 2 * index
        if at >= vt_size:
            return None
        off = struct.unpack_from("<H", self.buf, self.vtable + at)[0]
        return self.pos + off if off else None

    def table(self, index):
        p = self.field(index)
        return None if p is None else Table(self.buf, p + struct.unpack_from("<I", self.buf, p)[0], self.base)

    def vector(self, index):
        """(position of the first element, length) of a vector field."""
        p = self.field(index)
        if p is None:
            return None, 0
        v = p + struct.unpack_from("<I", self.buf, p)[0]
        return v + 4, struct.unpack_from("<I", self.buf, v)[0]

    def tables(self, index):
        first, n = self.vector(index)
        return [Table(self.buf, first + 4 * i + struct.unpack_from("<I", self.buf, first + 4 * i)[0], self.base)
                for i in range(n)]


def root(buf, start):
    return Table(buf, start + struct.unpack_from("<I", buf, start)[0], start)


def parts(buf):
    """The postscript's segments: {"dtype"|"layout"|"statistics"|"footer": (offset, length)}."""
    ps_len = struct.unpack_from("<H", buf, len(buf) - 6)[0]
    ps = root(buf, len(buf) - 8 - ps_len)
    out = {}
    for i, name in enumerate(["dtype", "layout", "statistics", "footer"]):
        seg = ps.table(i)
        if seg is not None:
            out[name] = (struct.unpack_from("<Q", buf, seg.field(0))[0],
                         struct.unpack_from("<I", buf, seg.field(1))[0], seg)
    return out


def every_layout(node):
    yield node
    for child in node.tables(3):
        yield from every_layout(child)


def rows_2_61(buf):
    """Every layout node claims 2^61 rows: 2^61 i64 values are 2^64 bytes, which wrapped to 0."""
    layout = root(buf, parts(buf)["layout"][0])
    for node in every_layout(layout):
        p = node.field(1)
        if p is not None:
            struct.pack_into("<Q", buf, p, 1 << 61)


def segment_spec(buf, index):
    footer = root(buf, parts(buf)["footer"][0])
    first, n = footer.vector(2)
    assert index < n
    return first + 16 * index  # struct SegmentSpec { offset: u64, length: u32, ... } = 16 bytes


def segment_past_end(buf):
    """The first data segment claims 4 GiB - 1 bytes, far past the file."""
    struct.pack_into("<I", buf, segment_spec(buf, 0) + 8, 0xFFFFFFFF)


def segment_offset_wraps(buf):
    """A segment whose offset plus length wraps 64 bits."""
    struct.pack_into("<Q", buf, segment_spec(buf, 0), (1 << 64) - 8)


def footer_at_zero(buf):
    """The postscript puts the footer at offset 0: the bytes there are data, not a footer."""
    seg = parts(buf)["footer"][2]
    struct.pack_into("<Q", buf, seg.field(0), 0)


def shorter_segment(buf):
    """The first segment claims 8 bytes: its buffers and array tree lie beyond what it holds."""
    struct.pack_into("<I", buf, segment_spec(buf, 0) + 8, 8)


CASES = {
    "rows-2-61": ("mixed.vortex", rows_2_61),
    "segment-past-end": ("mixed.vortex", segment_past_end),
    "segment-offset-wraps": ("mixed.vortex", segment_offset_wraps),
    "footer-at-zero": ("mixed.vortex", footer_at_zero),
    "shorter-segment": ("compact_strings.vortex", shorter_segment),
}


def write_deep(path: Path, depth: int = 100) -> Path:
    """Three i32 rows under `depth` structs of one field each: its dtype, layout and array trees
    nest far beyond the default max_array_depth of 64, which bounds the reader's recursion."""
    import pyarrow as pa
    import vortex

    column = pa.array([1, 2, 3], pa.int32())
    for _ in range(depth):
        column = pa.StructArray.from_arrays([column], ["f"])
    vortex.io.write(pa.table({"s": column}), str(path))
    return path


def write_all(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (seed, patch) in CASES.items():
        buf = bytearray((SEEDS / seed).read_bytes())
        patch(buf)
        path = out / f"issue-15-{name}.vortex"
        path.write_bytes(bytes(buf))
        paths[name] = path
    paths["deep-nesting"] = write_deep(out / "issue-15-deep-nesting.vortex")
    return paths


def write_sparse(path: Path, size: int) -> Path:
    """A sparse file of `size` bytes whose trailer puts the footer at offset 0: a 100 GB object
    whose open must not become a 100 GB read."""
    tail = bytearray((SEEDS / "tiny.vortex").read_bytes())
    ps_len = struct.unpack_from("<H", tail, len(tail) - 6)[0]
    footer_at_zero(tail)
    trailer = tail[len(tail) - 8 - ps_len:]
    with open(path, "wb") as f:
        f.truncate(size - len(trailer))
        f.seek(size - len(trailer))
        f.write(trailer)
    return path


if __name__ == "__main__":
    for name, path in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "data" / "bad").items():
        print(name, path)

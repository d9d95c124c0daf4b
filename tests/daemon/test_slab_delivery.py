# SPDX-License-Identifier: Apache-2.0
"""Batches decoded straight into a client's slabs (daemon/slab_arena.hpp), over the whole interop
corpus: each equals the in-process scan of the same file byte for byte, and none changes while
the client holds it, however much of the scan is decoded after it into the same slabs (a chunk
decoded once serves several batches; a released range is reused for later ones)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import onecopy
from test_daemon import ROOT, Daemon

sys.path.insert(0, str(ROOT / "tests" / "interop"))
import corpus as corpus_mod  # noqa: E402

# Small batches, so that every chunk of a column is cut into several of them.
BATCH_ROWS = 3000
# Batches held at once: well under half of daemon_client_max_batches_in_flight, so that the
# client keeps them in their slab instead of copying them out (daemon/client.cpp).
HELD = 12


@pytest.fixture(scope="module")
def corpus():
    """The corpus tests/interop writes (the same directory and options, so it is reused)."""
    small = os.environ.get("ONECOPY_CORPUS_SMALL") == "1"
    root = os.environ.get("ONECOPY_CORPUS_DIR", str(ROOT / "tests" / "data" / "corpus"))
    return corpus_mod.write_corpus(Path(root), large=not small, tpch=not small)


def digest(batch: pa.RecordBatch) -> str:
    """Every byte of every buffer of the batch, and its shape."""
    h = hashlib.sha256()
    for col in batch.columns:
        h.update(f"{col.type}:{len(col)}:{col.offset}:{col.null_count}".encode())
        for b in col.buffers():
            h.update(b"-" if b is None else b.to_pybytes())
    return h.hexdigest()


def error_code(e: Exception) -> str:
    return e.code if isinstance(e, onecopy.OnecopyError) else str(e).split(":", 1)[0]


def local_digests(path) -> list[str] | str:
    try:
        return [digest(b) for b in pa.RecordBatchReader.from_stream(
            onecopy.open(str(path)).scan(batch_rows=BATCH_ROWS))]
    except (onecopy.OnecopyError, pa.ArrowInvalid) as e:
        return error_code(e)


def test_corpus_batches_equal_in_process_and_never_change_while_held(tmp_path, corpus):
    d = Daemon(tmp_path, config="daemon_client_max_batches_in_flight = 64\n")
    try:
        files = sorted(corpus.glob("*.vortex"))
        assert len(files) >= 40
        compared = 0
        for path in files:
            want = local_digests(path)
            held = []
            try:
                got = []
                for i, b in enumerate(d.client.scan(str(path), batch_rows=BATCH_ROWS)):
                    got.append(digest(b))
                    if i % 3 == 0 and len(held) < HELD:
                        held.append((i, b))  # kept while the rest is decoded after it
                    del b
            except (onecopy.OnecopyError, pa.ArrowInvalid) as e:
                assert want == error_code(e), path.name  # the same failure both ways
                continue
            assert got == want, path.name
            for i, b in held:
                assert digest(b) == want[i], f"{path.name}: batch {i} changed while held"
            compared += len(got)
            del held
        assert compared > 200
        s = d.client.status()
        # Most of the corpus is compressed: decoded in place; what was copied is accounted for.
        assert s["bytes_in_place"] > s["bytes_copied"]
        assert s["bytes_in_place"] + s["bytes_copied"] == s["bytes_delivered"]
    finally:
        d.stop()

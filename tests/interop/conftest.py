# SPDX-License-Identifier: Apache-2.0
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402
from ceph_cluster import ceph_cluster  # noqa: E402,F401 (the session's Ceph cluster)


def pytest_addoption(parser):
    parser.addoption("--corpus-small", action="store_true", help="skip the multi-million-row case and TPC-H")


@pytest.fixture(scope="session")
def corpus(request) -> Path:
    """The interop corpus directory, generated with vortex-data on first use."""
    small = request.config.getoption("--corpus-small") or os.environ.get("ONECOPY_CORPUS_SMALL") == "1"
    root = Path(os.environ.get("ONECOPY_CORPUS_DIR", HERE.parent / "data" / "corpus"))
    return corpus_mod.write_corpus(root, large=not small, tpch=not small)

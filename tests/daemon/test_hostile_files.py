# SPDX-License-Identifier: Apache-2.0
"""Hostile files (issue 15) through every way in: `onecopy.open` in process, the `onecopy` CLI and
onecopyd, which must keep serving. Each gives a clear `corrupt` error, no sanitizer report (the
CLI and the daemon come from $ONECOPYD's build: scripts/test.sh runs this file again against
the ASan + UBSan build), and a peak RSS under PEAK_RSS_MIB.

The files come from tests/format/hostile_files.py, each a real vortex-data file with one size
rewritten or nested too deep; the sparse one is a 100 GiB object that is all hole but its
trailer."""

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import onecopy
from test_daemon import ONECOPYD, ROOT, Daemon, assert_no_sanitizer_report

sys.path.insert(0, str(ROOT / "tests" / "format"))
import hostile_files  # noqa: E402

CLI = ONECOPYD.parent / "client" / "onecopy"
# What opening and scanning one hostile file may cost the CLI at its peak. ASan's shadow memory
# and quarantine add to any process it instruments.
PEAK_RSS_MIB = 512 if "asan" in str(ONECOPYD) else 128


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile")
    files = hostile_files.write_all(out)
    files["sparse-100-GiB"] = hostile_files.write_sparse(out / "sparse.vortex", 100 << 30)
    return files


CASES = list(hostile_files.CASES) + ["deep-nesting", "sparse-100-GiB"]


@pytest.mark.parametrize("case", CASES)
def test_in_process(hostile, case):
    # A file refused at open raises OnecopyError; one refused mid-scan reaches pyarrow through
    # the Arrow stream, which raises ArrowInvalid with the same "code: message" text.
    with pytest.raises((onecopy.OnecopyError, pa.ArrowInvalid)) as e:
        pa.table(onecopy.open(str(hostile[case])).scan())
    assert getattr(e.value, "code", None) == "corrupt" or str(e.value).startswith("corrupt: "), str(e.value)


# Runs argv[1:] with its stdout on /dev/null, then prints its peak RSS (KiB) and exits with its
# status. A child's ru_maxrss counts the memory of the process it was forked from until it
# execs, so the CLI is forked from this small interpreter rather than from pytest (which holds
# PyTorch and more by the time this file runs).
PEAK_RSS_OF = """
import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("case", CASES)
def test_cli(hostile, case):
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS_OF, str(CLI), "scan", str(hostile[case])],
                          capture_output=True, text=True, timeout=120)
    assert_no_sanitizer_report(proc.stderr)
    assert proc.returncode == 1, proc.stderr
    assert "corrupt" in proc.stderr
    peak_kib = int(proc.stdout)
    assert peak_kib < PEAK_RSS_MIB << 10, f"peak RSS {peak_kib} KiB"


def test_daemon_keeps_serving(hostile, tmp_path):
    good = ROOT / "tests" / "fuzz" / "seeds" / "open_scan" / "mixed.vortex"
    d = Daemon(tmp_path)
    try:
        rss = []
        for case in CASES:
            with pytest.raises(onecopy.OnecopyError) as e:
                list(d.client.scan(str(hostile[case])))
            assert e.value.code == "corrupt", (case, str(e.value))
            assert "[at " not in str(e.value)
            rows = sum(b.num_rows for b in d.client.scan(str(good)))
            assert rows == 3000
            rss.append(int(next(line.split()[1] for line in Path(f"/proc/{d.proc.pid}/status").read_text()
                                .splitlines() if line.startswith("VmRSS:"))))
        assert d.proc.poll() is None
        assert max(rss) - rss[0] < PEAK_RSS_MIB << 10, rss
    finally:
        d.stop()

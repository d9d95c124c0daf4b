# SPDX-License-Identifier: Apache-2.0
"""The README's main command, scripts/run.sh, end to end on a small dataset: it starts onecopyd,
trains through it for two epochs (the second with a new filter), and stops the daemon."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import vortex as vx

ROOT = Path(__file__).resolve().parents[2]


def test_run_sh_trains_through_the_daemon(tmp_path):
    data = tmp_path / "ds"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_sample.py"), str(data), "--rows", "6000",
                    "--files", "3"], check=True)
    table = pa.concat_tables([vx.open(str(p)).to_arrow().read_all() for p in sorted(data.glob("*.vortex"))])
    high = int(pc.sum(pc.greater(table["quality"], 0.8)).as_py())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONECOPY_SOCKET")}
    r = subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), str(data), "--epochs", "2", "--workers", "1",
                        "--batch-rows", "500"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    assert "read onecopyd at" in out
    assert "epoch 0: 6,000 samples" in out
    assert f"epoch 1: {high:,} samples" in out
    m = re.search(r"trained on ([\d,]+) samples", out)
    assert m and int(m.group(1).replace(",", "")) == 6000 + high
    m = re.search(r"onecopyd: [\d,]+ batches, ([\d.]+) MB delivered, ([\d.]+) MB of it decoded in place, "
                  r"copies per delivered byte ([\d.]+) \(([\d.]+) MB after decode\), errors 0", out)
    assert m, out[-2000:]
    # The sample's columns are compressed: decoded where the trainer maps them, nothing copied
    # after decode (the rest, if any, fetched bytes copied once).
    delivered, in_place, per_byte, after = (float(g) for g in m.groups())
    assert delivered > 0 and in_place > 0 and after == 0 and per_byte < 1
    # The daemon is gone and its socket with it.
    sock = re.search(r"socket (\S+onecopyd.sock)", out).group(1)
    assert not os.path.exists(sock)

# SPDX-License-Identifier: Apache-2.0
"""The README's main command, scripts/run.sh, end to end on a small dataset: it starts onecopyd,
trains through it for two epochs (the second with a new filter), and stops the daemon; its help
and command line before anything is built; a dataset whose columns the model does not find."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import vortex as vx

ROOT = Path(__file__).resolve().parents[2]
RUN_SH = ROOT / "scripts" / "run.sh"
TRAIN = ROOT / "scripts" / "train_example.py"
OPTIONS = ["--columns", "--epochs", "--workers", "--batch-rows", "--filter-from-epoch-2"]
END_LINE = (r"([\d,]+) samples/s; loader share of step time (\d+)%; "
            r"bound by: (loader|model) \((?:the loader kept up: )?the model waited (\d+)% of each step\)")


def no_daemon_env(**extra) -> dict:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("ONECOPY_SOCKET")}, **extra}


def assert_end_line(out: str, samples: int) -> None:
    """The last line: samples/s, the loader's share of the step time and the side that bound the
    run, which follows from the share."""
    m = re.fullmatch(END_LINE, out.strip().splitlines()[-1])
    assert m, out[-2000:]
    rate, share, bound, waited = int(m.group(1).replace(",", "")), int(m.group(2)), m.group(3), int(m.group(4))
    m = re.search(r"trained on ([\d,]+) samples .* s: ([\d,]+) samples/s", out)
    assert m and int(m.group(1).replace(",", "")) == samples and 0 < rate == int(m.group(2).replace(",", ""))
    assert 0 <= share <= 100 and waited == share
    assert bound == ("loader" if share >= 50 else "model")


def write_renamed(path: Path, rows: int) -> pa.Table:
    """A small token dataset whose columns are not named as the model's inputs."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(4, 32, rows)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    table = pa.table({
        "input_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 50_257, offsets[-1],
                                                                                       dtype=np.int32))),
        "target": pa.array(rng.integers(0, 5, rows).astype(np.int32)),
        "quality": pa.array(rng.random(rows)),
    })
    path.mkdir()
    vx.io.write(table, str(path / "part-000.vortex"))
    return table


def test_help_lists_every_option_before_building(tmp_path):
    # A build directory that does not exist stays so: --help, -h and a bad command line come
    # before scripts/bootstrap.sh installs or builds anything.
    env = no_daemon_env(BUILD_DIR=str(tmp_path / "build"))
    long = subprocess.run(["bash", str(RUN_SH), "--help"], capture_output=True, text=True, env=env, timeout=60)
    short = subprocess.run(["bash", str(RUN_SH), "-h"], capture_output=True, text=True, env=env, timeout=60)
    assert long.returncode == 0 and short.returncode == 0, long.stderr + short.stderr
    assert long.stdout == short.stdout
    assert long.stdout.startswith("usage: scripts/run.sh [-h] [DATASET ...] [OPTIONS]")
    for option in OPTIONS + ["DATASET", "s3://bucket/prefix/", "tokens=input_ids,label=target"]:
        assert option in long.stdout, option
    assert "--socket" not in long.stdout  # run.sh starts its own daemon
    bad = subprocess.run(["bash", str(RUN_SH), "some/dir", "--epoch", "1"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert bad.returncode == 2 and "scripts/run.sh: error: unrecognized arguments: --epoch" in bad.stderr
    bad = subprocess.run(["bash", str(RUN_SH), "--columns", "text=body"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert bad.returncode == 2 and "'text' is not a model input; the inputs are tokens, label" in bad.stderr
    assert not (tmp_path / "build").exists()
    # train_example.py's own help, under a python without torch or onecopy on its path.
    r = subprocess.run(["python3", "-S", str(TRAIN), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and all(o in r.stdout for o in OPTIONS + ["--socket"]), r.stderr


def test_missing_columns_are_named_before_training(tmp_path):
    data = tmp_path / "ds"
    write_renamed(data, 300)
    r = subprocess.run(["bash", str(RUN_SH), "--epochs", "1", str(data), "--workers", "0"], capture_output=True,
                       text=True, env=no_daemon_env(), timeout=600)
    assert r.returncode != 0
    assert "epoch 0" not in r.stdout and "trained on" not in r.stdout
    assert ("the dataset does not have the columns the model needs (tokens: no column 'tokens'; "
            "label: no column 'label').") in r.stderr, r.stderr[-2000:]
    assert "found: input_ids (list<item: int32>), target (int32), quality (double)" in r.stderr
    assert "needs: tokens: a list of integer token ids below 50,257; label: an integer class in 0..4" in r.stderr
    assert "--columns tokens=<column>,label=<column>" in r.stderr
    # A column of the wrong type is named with its type.
    r = subprocess.run([sys.executable, str(TRAIN), str(data), "--columns", "tokens=quality,label=target",
                        "--epochs", "1", "--workers", "0"], capture_output=True, text=True,
                       env=no_daemon_env(ONECOPY_SOCKET=""), timeout=600)
    assert r.returncode != 0 and "(tokens: column 'quality' is double)" in r.stderr, r.stderr[-2000:]
    # So is an epoch-2 filter on a column the dataset lacks, before the first epoch.
    r = subprocess.run([sys.executable, str(TRAIN), str(data), "--columns", "tokens=input_ids,label=target",
                        "--filter-from-epoch-2", "score > 0.5", "--workers", "0"], capture_output=True, text=True,
                       env=no_daemon_env(ONECOPY_SOCKET=""), timeout=600)
    assert r.returncode != 0 and "epoch 0" not in r.stdout
    assert "--filter-from-epoch-2 'score > 0.5' does not fit this dataset: " in r.stderr, r.stderr[-2000:]
    assert "score" in r.stderr.split("does not fit this dataset: ")[1]


def test_columns_maps_the_model_inputs(tmp_path):
    data = tmp_path / "ds"
    table = write_renamed(data, 300)
    high = int(pc.sum(pc.greater(table["quality"], 0.8)).as_py())
    r = subprocess.run([sys.executable, str(TRAIN), "--workers", "0", "--columns", "label=target, tokens=input_ids",
                        str(data), "--batch-rows", "100"], capture_output=True, text=True,
                       env=no_daemon_env(ONECOPY_SOCKET=""), timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "read in-process (no daemon)" in r.stdout
    assert "epoch 0: 300 samples" in r.stdout and f"epoch 1: {high:,} samples" in r.stdout
    assert_end_line(r.stdout, 300 + high)


def test_run_sh_trains_through_the_daemon(tmp_path):
    data = tmp_path / "ds"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_sample.py"), str(data), "--rows", "6000",
                    "--files", "3"], check=True)
    table = pa.concat_tables([vx.open(str(p)).to_arrow().read_all() for p in sorted(data.glob("*.vortex"))])
    high = int(pc.sum(pc.greater(table["quality"], 0.8)).as_py())
    # Options before and after the dataset.
    r = subprocess.run(["bash", str(RUN_SH), "--epochs", "2", "--workers", "1", str(data), "--batch-rows", "500"],
                       capture_output=True, text=True, env=no_daemon_env(), timeout=600)
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
    assert_end_line(out, 6000 + high)

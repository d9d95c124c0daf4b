# SPDX-License-Identifier: Apache-2.0
"""The `onecopy` command line as a newcomer meets it: `--help` lists every command, `CMD --help`
gives its options, an unknown command or option says so with the usage (exit 2), and `convert`
finds a Python with the onecopy package by itself (the one beside the executable first)."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import vortex as vx

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
ONECOPY = BUILD / "client" / "onecopy"
COMMANDS = ["inspect", "scan", "take", "ls", "cp", "convert", "defaults", "status", "metrics", "version", "help"]

pytestmark = pytest.mark.skipif(not ONECOPY.exists(), reason=f"{ONECOPY} is not built")


def cli(*args, exe=ONECOPY, env=None):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("flag", ["--help", "-h", "help"])
def test_help_lists_every_command(flag):
    r = cli(flag)
    assert r.returncode == 0, r.stderr
    for name in COMMANDS:
        assert f"\n  {name} " in r.stdout, name
    assert "onecopy COMMAND --help" in r.stdout


@pytest.mark.parametrize("name", [c for c in COMMANDS if c not in ("convert", "help")])
def test_each_command_has_its_help(name):
    for args in ((name, "--help"), ("help", name)):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        assert r.stdout.startswith(f"usage: onecopy {name}"), r.stdout
    if name in ("scan", "take", "status"):
        assert "--columns" in cli(name, "--help").stdout or "--json" in cli(name, "--help").stdout


def test_mistakes_print_the_usage_and_exit_2():
    r = cli("scna")
    assert r.returncode == 2 and "unknown command scna" in r.stderr and "commands:" in r.stderr
    r = cli("scan", "x.vortex", "--colums", "a")
    assert r.returncode == 2 and "unknown option --colums" in r.stderr
    assert "usage: onecopy scan" in r.stderr and "onecopy scan --help" in r.stderr
    assert cli().returncode == 2


def test_options_may_come_before_the_file(tmp_path):
    """`onecopy inspect --verbose FILE` and its kin give what the options after FILE give."""
    f = tmp_path / "t.vortex"
    vx.io.write(pa.table({"id": pa.array(np.arange(300)), "w": [f"w{i}" for i in range(300)]}), str(f))
    pairs = [
        (("inspect", f, "--verbose"), ("inspect", "--verbose", f)),
        (("inspect", f, "-v", "--json"), ("inspect", "-v", "--json", f)),
        (("scan", f, "--columns", "w", "--limit", "3"), ("scan", "--columns", "w", "--limit", "3", f)),
        (("scan", f, "--filter", "id > 296", "--format", "jsonl"),
         ("scan", "--filter", "id > 296", f, "--format", "jsonl")),
        (("take", f, "5,1,5", "--columns", "id"), ("take", "--columns", "id", f, "5,1,5")),
        (("take", f, "7", "--explain"), ("take", "--explain", f, "7")),
    ]
    for after, before in pairs:
        a, b = cli(*after), cli(*before)
        assert a.returncode == 0, (after, a.stderr)
        assert b.returncode == 0, (before, b.stderr)
        assert a.stdout == b.stdout and a.stdout, (after, before)
    assert cli("scan", f, "--filter", "id > 296").stdout.splitlines()[1:] == ["297,w297", "298,w298", "299,w299"]
    # What is missing is still named: an option's value is not taken for the FILE.
    r = cli("scan", "--limit", f)
    assert r.returncode == 2 and "scan needs a FILE" in r.stderr
    r = cli("take", "--columns", "id", f)
    assert r.returncode == 2 and "take needs a FILE and ROW,ROW" in r.stderr
    # After "--" everything is positional: a file named like an option.
    dashed = tmp_path / "-v"
    dashed.write_bytes(f.read_bytes())
    r = subprocess.run([str(ONECOPY), "inspect", "--", "-v"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == cli("inspect", f).stdout.replace(str(f), "-v"), r.stderr


def test_convert_finds_the_python_beside_it(tmp_path):
    """An environment of its own, as the wheel makes one: bin/onecopy beside bin/python3, which
    sees the onecopy package; neither ONECOPY_PYTHON nor PATH points there."""
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = subprocess.run([str(venv / "bin" / "python3"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # This test run's packages (pyarrow, vortex-data) and the onecopy package, by .pth lines.
    Path(site, "onecopy-test.pth").write_text(f"{ROOT / 'python'}\n{sysconfig.get_paths()['purelib']}\n")
    exe = venv / "bin" / "onecopy"
    exe.write_bytes(ONECOPY.read_bytes())
    exe.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "ONECOPY_PYTHON"}
    env["PATH"] = "/usr/bin:/bin"
    env["ONECOPY_LIBRARY"] = os.environ.get("ONECOPY_LIBRARY", str(BUILD / "client" / "libonecopy.so"))
    src = pa.table({"id": pa.array(np.arange(500)), "w": [f"w{i}" for i in range(500)]})
    pq.write_table(src, tmp_path / "t.parquet")
    r = cli("convert", tmp_path / "t.parquet", "--to", tmp_path / "out", "--no-progress", exe=exe, env=env)
    assert r.returncode == 0, r.stderr
    [out] = sorted((tmp_path / "out").glob("*.vortex"))
    assert vx.open(str(out)).to_arrow().read_all().to_pydict()["id"] == list(range(500))
    # Without a Python that has the package, the error says what was tried and what to do.
    (venv / "bin" / "python3").unlink()
    (venv / "bin" / "python").unlink()
    env["PATH"] = str(tmp_path)  # no python3 there either
    r = cli("convert", "x", "--to", "y", exe=exe, env=env)
    assert r.returncode == 1
    assert "no Python with the onecopy package" in r.stderr and "ONECOPY_PYTHON" in r.stderr

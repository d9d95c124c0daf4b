# SPDX-License-Identifier: Apache-2.0
"""README's quick start, run as a newcomer would type it, and the links of README.md and docs/.

Every fenced block of README.md carries a tag on the line before it: `<!-- quickstart -->` blocks
run here in order, in one fresh directory that holds `build`, `.venv` and `scripts` of this
checkout (so the README's relative commands work and its sample dataset lands in `data/`);
`<!-- not run: REASON -->` blocks install packages, need root and systemd, or are the two commands
themselves, which scripts/test.sh and tests/python/test_main_job.py run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ONECOPY_BUILD_DIR", ROOT / "build"))
README = ROOT / "README.md"
TAG = re.compile(r"<!--\s*(quickstart|not run:\s*\S.*?)\s*-->")
RUNNERS = {"python": [sys.executable], "sh": ["bash", "-euo", "pipefail"], "bash": ["bash", "-euo", "pipefail"]}


def fenced_blocks(text: str) -> list[dict]:
    """Each fenced block of @text: its language, code, first line number and the tag before it."""
    blocks, block, previous = [], None, ""
    for number, line in enumerate(text.splitlines(), 1):
        if block is None and line.startswith("```"):
            match = TAG.fullmatch(previous.strip())
            block = {"lang": line[3:].strip(), "line": number, "code": [],
                     "tag": match.group(1) if match else None}
        elif block is not None and line.startswith("```"):
            block["code"] = "\n".join(block["code"]) + "\n"
            blocks.append(block)
            block = None
        elif block is not None:
            block["code"].append(line)
        if line.strip():
            previous = line
    assert block is None, f"README.md: the block at line {block['line']} is never closed"
    return blocks


BLOCKS = fenced_blocks(README.read_text())
QUICKSTART = [b for b in BLOCKS if b["tag"] == "quickstart"]


def test_every_block_says_whether_it_runs():
    untagged = [b["line"] for b in BLOCKS if b["tag"] is None]
    assert not untagged, f"README.md blocks at lines {untagged} need <!-- quickstart --> or <!-- not run: why -->"
    assert all(b["lang"] in RUNNERS for b in QUICKSTART), [(b["line"], b["lang"]) for b in QUICKSTART]
    # The quick start covers the CLI, a first scan in Python and PyTorch: nothing passes vacuously.
    assert len(QUICKSTART) >= 3
    assert {b["lang"] for b in QUICKSTART} >= {"python", "sh"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    if not (BUILD / "client" / "onecopy").exists():
        pytest.skip(f"{BUILD / 'client' / 'onecopy'} is not built")
    work = tmp_path_factory.mktemp("readme")
    # .venv: the environment running these tests (scripts/bootstrap.sh's), whatever its path.
    for name, target in (("build", BUILD), (".venv", Path(sys.prefix)), ("scripts", ROOT / "scripts")):
        (work / name).symlink_to(target)
    return work


@pytest.mark.parametrize("block", QUICKSTART, ids=[f"line{b['line']}-{b['lang']}" for b in QUICKSTART])
def test_quickstart_block_runs(block, workdir):
    script = workdir / f"block-{block['line']}.{'py' if block['lang'] == 'python' else 'sh'}"
    script.write_text(block["code"])
    # In process, as on a machine without onecopyd: README's "Reading in process is opt-in".
    env = {**os.environ, "ONECOPY_SOCKET": ""}
    r = subprocess.run([*RUNNERS[block["lang"]], str(script)], cwd=workdir, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, (f"README.md block at line {block['line']} failed ({r.returncode}):\n"
                               f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """@text without fenced blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub gives @path's headings (duplicates numbered -1, -2, ...)."""
    seen: dict[str, int] = {}
    for line in prose(path.read_text()).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_relative_links_resolve():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    checked, broken = 0, []
    for page in pages:
        for target in LINK.findall(prose(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            checked += 1
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
    assert checked >= 20  # README's "More" alone links a dozen pages

# SPDX-License-Identifier: Apache-2.0
"""The tree's layers, read from its sources: the C++ folders depend downward only (config ->
format -> net and kernels -> daemon -> client), and no module of the Python package imports one
that imports it back, directly or through others."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Which folders each folder's sources may include, besides its own (docs/repository.md).
ALLOWED = {
    "config": set(),
    "format": {"config"},
    "net": {"config", "format"},
    "kernels": {"config", "format"},
    "daemon": {"config", "format", "net", "kernels"},
    "client": {"config", "format", "net", "kernels", "daemon"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)


def test_cpp_folders_include_only_the_layers_below():
    wrong = []
    for layer, allowed in ALLOWED.items():
        for source in sorted((ROOT / layer).rglob("*")):
            if source.suffix not in (".cpp", ".hpp", ".h", ".cu", ".cuh"):
                continue
            for target in INCLUDE.findall(source.read_text(errors="replace")):
                if target in ALLOWED and target != layer and target not in allowed:
                    wrong.append(f"{source.relative_to(ROOT)} includes {target}/")
    assert not wrong, "\n".join(wrong)


def _imports(path: Path) -> set[str]:
    """The onecopy modules @path imports, wherever the import stands (a function's included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("onecopy"):
            if node.module == "onecopy":
                out.update(f"onecopy.{a.name}" for a in node.names if (path.parent / f"{a.name}.py").exists())
                out.add("onecopy")
            else:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("onecopy"))
    return out


def test_no_python_module_imports_one_that_imports_it_back():
    package = ROOT / "python" / "onecopy"
    graph = {}
    for path in package.glob("*.py"):
        name = "onecopy" if path.stem == "__init__" else f"onecopy.{path.stem}"
        graph[name] = {m for m in _imports(path) if m != name}
    # The package's __init__ is the public face every module may use: it imports no submodule
    # that imports the package back.
    cycles = []

    def visit(node, stack):
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif len(stack) < 50:
                visit(nxt, stack + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert not cycles, "\n".join(sorted(set(cycles)))

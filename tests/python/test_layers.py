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


# The upward edges the package allows, each an import inside the one function that needs it,
# made when called: a convenience of the lower module that hands over to the upper one.
CALL_TIME_UPWARD = {
    ("onecopy._native", "onecopy._daemon"): "Client.dataset builds onecopy.dataset's object",
    ("onecopy._dataset", "onecopy.torch"): "Dataset.to_torch: the torch extension, as to_pandas",
}


def _function_imports(path: Path) -> set[str]:
    """The onecopy modules imported inside @path's functions."""
    out = set()
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("onecopy"):
                    out.add(node.module)
    return out


def test_upward_imports_are_the_allowed_ones_and_made_when_called():
    package = ROOT / "python" / "onecopy"
    for (module, target), why in CALL_TIME_UPWARD.items():
        path = package / f"{module.split('.')[1]}.py"
        assert target in _function_imports(path), f"{module} no longer imports {target} ({why}): drop the entry"
        top = {n.module for n in ast.parse(path.read_text()).body if isinstance(n, ast.ImportFrom)}
        assert target not in top, f"{module} imports {target} at module level"


def _imports(path: Path) -> set[str]:
    """The onecopy modules @path imports, wherever the import stands (a function's included),
    but for the CALL_TIME_UPWARD edges."""
    name = "onecopy" if path.stem == "__init__" else f"onecopy.{path.stem}"
    return {m for m in _all_imports(path) if (name, m) not in CALL_TIME_UPWARD}


def _all_imports(path: Path) -> set[str]:
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

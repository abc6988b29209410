"""No import circle inside the package, and a planted one is found.

``lint-imports`` checks the direction between layers; a circle inside one layer (two
modules of ``evidence`` or of the mock importing each other) passes it. This test builds
the graph of every import the package's modules make, at module level, inside functions
and under ``TYPE_CHECKING`` alike (a function-level import or a type-only one still ties
the two modules together), and looks for strongly connected groups of modules.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "pytest_specgate"

def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module below ``root/PACKAGE``: dotted name -> (file, is a package)."""
    modules = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _imported_names(tree: ast.AST, name: str, is_package: bool) -> Iterator[tuple[str, str | None]]:
    """(module, attribute) for every import statement anywhere in the tree, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:
                yield base, alias.name


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from a import b`` counts ``a.b`` when
    that is a module, else ``a``)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        for module, attribute in _imported_names(ast.parse(path.read_text("utf-8")), name, is_package):
            target = f"{module}.{attribute}" if attribute is not None else module
            if target in modules:
                graph[name].add(target)
            elif module in modules:
                graph[name].add(module)
    return graph


def import_cycles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """The groups of two or more modules that reach each other (Tarjan's strongly connected
    components, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.add(frozenset(group))
    return found


def _shown(cycles: set[frozenset[str]]) -> str:
    return "; ".join(" <-> ".join(sorted(group)) for group in sorted(cycles, key=sorted))


def test_the_package_has_no_import_cycle() -> None:
    cycles = import_cycles(import_graph(REPO))
    assert not cycles, f"import cycles: {_shown(cycles)}"


def test_a_planted_function_level_import_makes_a_cycle(tmp_path: Path) -> None:
    shutil.copytree(REPO / PACKAGE, tmp_path / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    schema = tmp_path / PACKAGE / "evidence" / "_schema.py"
    schema.write_text(schema.read_text() + (
        "\n\ndef _planted() -> None:\n    from pytest_specgate.evidence._bundle import load_bundle  # noqa\n"
    ))
    cycles = import_cycles(import_graph(tmp_path))
    assert cycles == {frozenset({
        "pytest_specgate.evidence._schema",
        "pytest_specgate.evidence._acrecord",
        "pytest_specgate.evidence._bundle",
        "pytest_specgate.evidence._record_split",
    })}


def test_a_type_only_import_counts_too() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == {frozenset({"a", "b", "c"})}
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import sibling\n")
    assert ("pkg", "sibling") in set(_imported_names(tree, "pkg.mod", is_package=False))

"""The layout stays acyclic: no two modules, and no two packages, of planner or targets import each other.

Imports are read from the source with `ast`, so an import inside a function counts: a lazy import
ties the two modules together as much as one at the top does, it only runs later. An import under
`if TYPE_CHECKING:` does not count, since it never runs. A package is a node of its own
(planner.measure, planner.models, targets.cpu; a top-level module such as planner.errors too), so
two packages whose modules import each other, one module one way and another module back, are a
cycle even when no two modules are.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOTS = ("planner", "targets")
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Import:
    """One import statement that reaches a module of the roots: who imports what, and where."""

    importer: str
    imported: str
    line: int
    text: str


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _statements(tree: ast.AST, *, type_only: bool = False):
    """Every import statement in the tree, at any depth, except those guarded by TYPE_CHECKING (with them too
    when `type_only`)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_only:
            pending.extend(node.orelse)  # the body never runs; an else branch would
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        pending.extend(ast.iter_child_nodes(node))


def _known(name: str, modules: set[str]) -> str | None:
    """The module `name` names, or the innermost known module that holds it (`pkg.mod.Class` -> `pkg.mod`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def read_imports(base: Path, roots: tuple[str, ...] = ROOTS, *,
                 type_only: bool = False) -> tuple[set[str], list[Import]]:
    """Every module under `base`'s `roots` packages, and every import among them, read with `ast` (the ones under
    TYPE_CHECKING too when `type_only`)."""
    files = {_module_name(p, base): p for root in roots for p in sorted((base / root).rglob("*.py"))}
    modules = set(files)
    found: dict[Import, None] = {}  # one per statement and module imported, in reading order
    for importer, path in sorted(files.items()):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for stmt in _statements(ast.parse(source, filename=str(path)), type_only=type_only):
            if isinstance(stmt, ast.Import):
                names = [alias.name for alias in stmt.names]
            else:
                if stmt.level:
                    anchor = package.split(".")[:len(package.split(".")) - (stmt.level - 1)]
                    origin = ".".join(anchor + ([stmt.module] if stmt.module else []))
                else:
                    origin = stmt.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
                names = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                         for alias in stmt.names]
            for name in names:
                imported = _known(name, modules)
                if imported and imported != importer:
                    found[Import(importer, imported, stmt.lineno, lines[stmt.lineno - 1].strip())] = None
    return modules, list(found)


def package_of(module: str) -> str:
    """The node a module belongs to in the package graph: its root's sub-package or top-level module."""
    return ".".join(module.split(".")[:2])


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one node (Tarjan's algorithm, iterative)."""
    nodes = sorted(set(edges) | {d for targets in edges.values() for d in targets})
    successors = {n: sorted(d for d in edges.get(n, ()) if d != n) for n in nodes}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in nodes:
        if root in order:
            continue
        pending = [(root, iter(successors[root]))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while pending:
            node, following = pending[-1]
            for nxt in following:
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    pending.append((nxt, iter(successors[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
            else:
                pending.pop()
                if pending:
                    parent = pending[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return sorted(cycles)


def _graph(imports: list[Import], node=lambda module: module) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in imports:
        if node(imp.importer) != node(imp.imported):
            edges[node(imp.importer)].add(node(imp.imported))
    return edges


def _describe(cycles: list[list[str]], imports: list[Import], node) -> str:
    """Each cycle with the import lines that close it, so the failure says where to cut."""
    parts = []
    for cycle in cycles:
        members = set(cycle)
        lines = [f"    {imp.importer}:{imp.line}: {imp.text}" for imp in imports
                 if node(imp.importer) in members and node(imp.imported) in members
                 and node(imp.importer) != node(imp.imported)]
        parts.append(" <-> ".join(cycle) + "\n" + "\n".join(lines))
    return f"{len(cycles)} import cycle(s):\n" + "\n".join(parts)


def test_cycle_finder_finds_a_cycle():
    edges = {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}, "pkg.d": {"pkg.a"}}
    assert import_cycles(edges) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_imports_inside_functions_count_and_type_checking_ones_do_not(tmp_path: Path):
    pkg = tmp_path / "pkg"
    for sub in ("low", "high"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "high" / "user.py").write_text("from pkg.low.base import thing\n")
    (pkg / "low" / "base.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.high.user import Hint\n"
        "def thing():\n"
        "    from pkg.high import user\n"
        "    from ..high.user import thing as again\n")
    _, imports = read_imports(tmp_path, ("pkg",))
    assert sorted((i.importer, i.imported, i.line) for i in imports) == [
        ("pkg.high.user", "pkg.low.base", 1), ("pkg.low.base", "pkg.high.user", 5),
        ("pkg.low.base", "pkg.high.user", 6)]
    assert import_cycles(_graph(imports, package_of)) == [["pkg.high", "pkg.low"]]


def test_no_module_import_cycles():
    _, imports = read_imports(REPO)
    cycles = import_cycles(_graph(imports))
    assert not cycles, _describe(cycles, imports, lambda module: module)


def test_no_module_import_cycles_counting_type_only_imports():
    """A circle only the type checker walks still ties two modules together (the plugin contract and the fidelity
    gate were one, until Precision got its own module)."""
    _, imports = read_imports(REPO, type_only=True)
    cycles = import_cycles(_graph(imports))
    assert not cycles, _describe(cycles, imports, lambda module: module)


def test_no_package_import_cycles():
    modules, imports = read_imports(REPO)
    assert {"planner.measure", "planner.models", "planner.plugins", "targets.cpu"} <= {package_of(m) for m in modules}
    cycles = import_cycles(_graph(imports, package_of))
    assert not cycles, _describe(cycles, imports, package_of)

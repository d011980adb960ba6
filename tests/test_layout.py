"""The package layout stays acyclic: no two modules of planner or targets import each other, directly or not."""

from __future__ import annotations

import grimp


def _import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan's algorithm, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(d for d in graph.find_modules_directly_imported_by(m) if d != m) for m in modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in modules:
        if root in order:
            continue
        pending = [(root, iter(edges[root]))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while pending:
            module, successors = pending[-1]
            for imported in successors:
                if imported not in order:
                    order[imported] = low[imported] = len(order)
                    stack.append(imported)
                    on_stack.add(imported)
                    pending.append((imported, iter(edges[imported])))
                    break
                if imported in on_stack:
                    low[module] = min(low[module], order[imported])
            else:
                pending.pop()
                if pending:
                    parent = pending[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == order[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return sorted(cycles)


def _describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """One cycle with the import lines that close it, so the report says where to cut."""
    members = set(cycle)
    lines = []
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"    {importer}:{detail['line_number']}: {detail['line_contents']}")
    return " <-> ".join(cycle) + "\n" + "\n".join(lines)


def test_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    graph.add_import(importer="pkg.d", imported="pkg.a")
    assert _import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_import_cycles():
    # Imports inside functions count too: a lazy import still ties the two modules together.
    graph = grimp.build_graph("planner", "targets", cache_dir=None)
    cycles = _import_cycles(graph)
    assert not cycles, f"{len(cycles)} import cycle(s):\n" + "\n".join(_describe(graph, c) for c in cycles)

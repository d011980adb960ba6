"""The core knows plugins by their declarations only: no plugin name, and no prefix of one, is written
under planner/ (a new plugin then needs no change there)."""

from __future__ import annotations

import ast
from importlib.metadata import entry_points
from pathlib import Path

from planner.plugins import ENTRY_POINT_GROUP

PLANNER = Path(__file__).resolve().parent.parent / "planner"


def _trees() -> list[tuple[str, ast.AST]]:
    return [(str(path.relative_to(PLANNER.parent)), ast.parse(path.read_text(), filename=str(path)))
            for path in sorted(PLANNER.rglob("*.py"))]


def _names() -> set[str]:
    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert len(names) >= 10  # the built-in plugins are registered (pip install -e .)
    return names


def test_no_plugin_name_is_written_in_the_engine() -> None:
    names = _names()
    named = [f"{file}:{node.lineno}: {node.value!r}" for file, tree in _trees() for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value in names]
    assert not named, "the engine names plugins; read their declarations instead:\n" + "\n".join(named)


def test_no_code_tests_a_plugin_name_prefix() -> None:
    prefixes = {name.split(".")[0] + "." for name in _names()}
    tested = []
    for file, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
                values = [c.value for arg in node.args for c in ast.walk(arg) if isinstance(c, ast.Constant)]
                tested += [f"{file}:{node.lineno}: startswith({v!r})" for v in values if v in prefixes]
    assert not tested, "the engine tests plugin-name prefixes; read their declarations instead:\n" + "\n".join(tested)

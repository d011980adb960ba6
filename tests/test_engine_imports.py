"""The engine never imports Textual: everything outside planner/tui imports without it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import planner
import planner.advice
import planner.report
import targets


def _engine_modules(*packages: ModuleType) -> list[str]:
    names = []
    for pkg in packages:
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
            if ".tui" in info.name or info.name.endswith("__main__"):
                continue
            names.append(info.name)
    return names


def _loaded_after_import(modules: list[str], roots: tuple[str, ...]) -> str:
    """Import `modules` in a fresh interpreter; print CLEAN, or the loaded modules under `roots`."""
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            f"bad = sorted(k for k in sys.modules if k.split('.')[0] in {roots!r})\n"
            "print('LOADED' if bad else 'CLEAN', bad[:3])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_engine_modules_do_not_import_textual():
    modules = _engine_modules(planner, targets)
    assert "planner.pipeline" in modules and "planner.measure.worker" in modules
    out = _loaded_after_import(modules, ("textual", "textual_plotext", "textual_serve"))
    assert out.startswith("CLEAN"), out


def test_advice_and_report_do_not_load_torch():
    # The runtime side of the import-linter contract that checks only their direct imports.
    modules = _engine_modules(planner.advice, planner.report)
    assert "planner.report.markdown" in modules and "planner.advice.plan" in modules
    out = _loaded_after_import(modules, ("torch", "torchvision", "targets"))
    assert out.startswith("CLEAN"), out


def test_cli_help_and_version(cli):
    import pytest

    with pytest.raises(SystemExit) as exc:
        cli("--version")
    assert exc.value.code == 0


def test_no_tty_points_to_headless_commands():
    out = subprocess.run([sys.executable, "-m", "planner.cli"], input="", capture_output=True,
                         text=True, timeout=120, cwd=Path(__file__).parent.parent)
    assert out.returncode == 2
    assert "no interactive terminal" in out.stderr and "planner plan" in out.stderr
    assert "Traceback" not in out.stderr

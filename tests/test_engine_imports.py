"""The engine never imports Textual: everything outside planner/tui imports without it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import planner
import targets


def _engine_modules() -> list[str]:
    names = []
    for pkg in (planner, targets):
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
            if ".tui" in info.name or info.name.endswith("__main__"):
                continue
            names.append(info.name)
    return names


def test_engine_modules_do_not_import_textual():
    modules = _engine_modules()
    assert "planner.pipeline" in modules and "planner.measure.worker" in modules
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            "bad = sorted(k for k in sys.modules if k == 'textual' or k.startswith('textual.'))\n"
            "print('TEXTUAL' if bad else 'CLEAN', bad[:3])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("CLEAN"), out.stdout


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

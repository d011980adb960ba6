"""The TUI process never loads PyTorch, ONNX or a runtime: the engine process does (planner.engine).

The import-linter contract checks the TUI's own import statements; these run fresh interpreters and
look at what was really loaded, which also catches a heavy module pulled in through another package
or imported lazily by a pane. Starting the TUI fast depends on it: PyTorch alone takes a second or
more to import on a small machine, and the first frame must not wait for it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "torchvision", "onnx", "onnxruntime", "openvino", "nncf")
REPO_ROOT = Path(__file__).resolve().parents[2]


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m for m in modules if m.split(".")[0] in HEAVY})


def test_importing_the_app_imports_no_heavy_module():
    out = _python("-X", "importtime", "-c", "import planner.tui.app")
    # Each line: "import time: <self us> | <cumulative us> | <indented module name>".
    imported = [line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
                if line.startswith("import time:") and line.count("|") == 2]
    assert "planner.tui.app" in imported and "textual.app" in imported
    assert _heavy(imported) == []


CONSTRUCTED = f"""
import sys
from planner.tui.app import PlannerApp

# The real app as `planner` builds it (no `connect`: it would spawn `planner engine`), not run.
app = PlannerApp()
assert app.session.client is None
print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r}))
"""


def test_constructing_the_app_loads_no_heavy_module():
    out = _python("-c", CONSTRUCTED)
    assert [line for line in out.stdout.splitlines() if line.startswith("LOADED ")] == ["LOADED []"], out.stdout


RUN_WITH_A_REAL_ENGINE = f"""
import asyncio, sys, time
from planner.tui.app import PlannerApp
from planner.tui.steps import STEPS

# The real start-up: the app spawns `planner engine`, which loads the model (importing PyTorch in its
# own process); the app shows the model's description, and then every step's pane.
app = PlannerApp(model="demo:tiny")

async def main():
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 240
        while app.session.model is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert app.session.model is not None, "the model did not load"
        assert app.session.client is not None and app.session.client.process is not None
        for step in STEPS:
            app.goto(step.id)
            await pilot.pause()
        app.stop_running_job()

asyncio.run(main())
print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r}))
"""


@pytest.mark.worker  # the real engine process (after the load it measures the ceilings in a worker)
def test_the_app_with_a_real_engine_loads_no_heavy_module_itself():
    out = _python("-c", RUN_WITH_A_REAL_ENGINE)
    assert [line for line in out.stdout.splitlines() if line.startswith("LOADED ")] == ["LOADED []"], out.stdout

"""The analysis package imports without the UI toolkit."""

from __future__ import annotations

import subprocess
import sys


def test_analysis_imports_without_textual() -> None:
    code = ("import sys, planner.analysis, planner.analysis.lint, planner.analysis.bottlenecks; "
            "sys.exit(1 if 'textual' in sys.modules else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr or "planner.analysis imported textual"

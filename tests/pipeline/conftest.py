"""Helpers for the pipeline tests: tests/measure's scripted interleaved workers (scripted_turns) fake the timing the
quick plan's confirmation step runs."""

from __future__ import annotations

import sys
from pathlib import Path

# Test packages have no __init__.py (see tests/conftest.py): the helper's folder joins sys.path here.
_MEASURE_HELPERS = str(Path(__file__).resolve().parents[1] / "measure")
if _MEASURE_HELPERS not in sys.path:
    sys.path.insert(0, _MEASURE_HELPERS)

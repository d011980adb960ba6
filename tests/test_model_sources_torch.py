"""`planner plan --quick` end to end on the torch sources other than the demo: a two-input text demo, torchvision,
an exported program (.pt2) and TorchScript. The demo and the ONNX files are in test_model_sources.py; the sources
and the plan fixture are shared from there. A Python file (FILE.py:FACTORY) is planned end to end in
test_plan_pipeline.py (test_onnx_export_failure_keeps_torch_plugins), its model rebuilt in each measuring worker.
"""

from __future__ import annotations

import pytest
from test_model_sources import check_plan, plan_of, sources  # noqa: F401 - the shared fixtures

pytestmark = pytest.mark.worker  # every test reads a real `planner plan`, measured in worker processes


@pytest.mark.parametrize("kind", ["demo-text", "torchvision", "pt2", "torchscript"])
def test_every_torch_source_plans_end_to_end(kind: str, plan_of) -> None:  # noqa: F811 - the fixture
    check_plan(kind, plan_of)


def test_text_model_gets_a_sequence_sweep(plan_of) -> None:  # noqa: F811 - the fixture
    results, report = plan_of("demo-text")
    sweep = results["baseline"]["sequence_sweep"]
    assert [p["length"] for p in sweep] == [16, 32, 64]
    assert all(p["tokens_per_s"] > 0 for p in sweep)
    assert "input_ids" in report and "attention_mask" in report

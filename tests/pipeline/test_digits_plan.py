"""A plan on demo:digits measures real accuracy on the demo's built-in held-out set, with no --val-data."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.pipeline import PlanOutcome
from planner.results import read_results

pytestmark = pytest.mark.worker  # every test reads one real quick plan of demo:digits


@pytest.fixture(scope="module")
def digits_plan(digits_pipeline_plan) -> PlanOutcome:
    """The session's shared quick ONNX Runtime plan of demo:digits (tests/conftest.py), read back from the
    results.json it wrote. It also timed the example request pipeline, which changes nothing read here."""
    out, code, _, stderr = digits_pipeline_plan
    assert code == 0, stderr[-3000:]
    return PlanOutcome(results=read_results(out / "results.json"), out_dir=out, report_path=out / "report.md")


def test_every_measured_candidate_has_an_accuracy(digits_plan):
    res = digits_plan.results
    assert res.validation is not None and res.validation.labels is True
    assert res.validation.basis == "the digits demo's built-in held-out set"
    assert res.validation.baseline_accuracy is not None and res.validation.baseline_accuracy > 0.90
    measured = [c for c in res.candidates if c.fidelity is not None]
    assert len(measured) >= 2 and any(c.plugin == "cpu.onnxruntime" for c in measured)
    for cand in measured:
        assert cand.fidelity is not None and cand.fidelity.accuracy is not None
    ort = [c for c in measured if c.plugin == "cpu.onnxruntime"]
    assert all(c.fidelity is not None and c.fidelity.decided_by.startswith("accuracy on") for c in ort)


def test_report_shows_accuracy_and_the_deciding_test(digits_plan):
    report = (digits_plan.out_dir / "report.md").read_text() + (digits_plan.out_dir / "evidence.md").read_text()
    assert "| Accuracy |" in report
    # 60 of the 359 held-out samples calibrate INT8; the other 299 judge every candidate.
    assert "Fidelity check: the test that decided" in report and "accuracy on 299 labelled samples" in report


def test_calibration_uses_and_names_the_built_in_set(digits_plan, tmp_path):
    from planner.models import load_model
    from planner.onnx.quantize import calibration_inputs
    from planner.plugins import PlanContext

    res = digits_plan.results
    assert res.validation is not None
    model = load_model("demo:digits")
    ctx = PlanContext(hw=None, model=model, workdir=tmp_path, quick=True,  # type: ignore[arg-type]
                      val_data=Path(res.validation.folder), val_data_basis=res.validation.basis)
    feeds, note = calibration_inputs(ctx)
    assert feeds and feeds[0]["x"].shape[1:] == (1, 8, 8)
    assert "the digits demo's built-in held-out set" in note
    _, random_note = calibration_inputs(PlanContext(hw=None, model=model, workdir=tmp_path,  # type: ignore[arg-type]
                                                    quick=True))
    assert "random inputs" in random_note

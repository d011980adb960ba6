"""A plan on a model whose outputs barely depend on its input (demo:flat: a deep random-weight CNN ending in global
pooling and a linear layer): its INT8 candidates are "not established", never ok, and the report, the results
file (what --json prints) and the plan's own lines say the check cannot judge and what would settle it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from planner.measure.evaluate import fidelity_batch_count, fidelity_inputs
from planner.measure.fidelity import MIN_INPUT_SPREAD, compare
from planner.models import load_model
from planner.pipeline import PlanOptions, run_plan
from planner.pipeline.candidates import NOT_ESTABLISHED
from planner.plugins.registry import get_plugin
from planner.results import Status


def test_the_flat_demo_barely_depends_on_its_input():
    model = load_model("demo:flat")
    with torch.inference_mode():
        outputs = [model.module(*[torch.from_numpy(a) for a in feed.values()]).numpy()
                   for feed in fidelity_inputs(model.inputs, count=fidelity_batch_count(True))]
    fid = compare(outputs, outputs)
    assert fid.input_spread is not None and fid.input_spread < MIN_INPUT_SPREAD / 10
    assert np.isfinite(outputs[0]).all() and outputs[0].shape == (1, 10)


@pytest.mark.worker
def test_int8_on_a_model_whose_outputs_barely_depend_on_its_input_is_not_established(tmp_path):
    pytest.importorskip("onnxruntime")  # the ONNX Runtime INT8 candidates (static QDQ and dynamic)
    events = []
    # Under a budget (one no machine runs out of), INT8 cannot end ranked on these outputs, so its calibration
    # waits until the fp32 runtimes, which can, are screened.
    outcome = run_plan(PlanOptions(model="demo:flat", target="cpu", quick=True, confirm=0, no_deploy=True, out=tmp_path,
                                   plugins=("cpu.onnxruntime", "edge.int8"), budget_s=900.0), on_event=events.append)
    int8 = [c for c in outcome.results.candidates if c.precision == "int8" and c.fidelity is not None]
    assert int8, [(c.label, c.status, c.reason) for c in outcome.results.candidates]
    said = [(e.kind, e.message) for e in events if e.kind in ("stage", "candidate")]
    int8_title = get_plugin("edge.int8").title  # the progress lines name a plugin by its title
    built_int8 = next(i for i, (kind, m) in enumerate(said) if kind == "stage" and m.endswith(f": {int8_title}"))
    fp32 = [i for i, (kind, m) in enumerate(said) if kind == "candidate" and "int8" not in m]
    assert fp32 and built_int8 > max(fp32), said
    for cand in int8:
        assert cand.status is Status.UNCONFIRMED, (cand.label, cand.status, cand.reason)
        assert cand.reason.startswith(f"{NOT_ESTABLISHED}: cannot judge: the model's outputs barely depend on its "
                                      "inputs (random weights?)")
        assert cand.fidelity is not None and cand.fidelity.cosine > 0.999  # the raw cosine would have passed it
        assert "--val-data" in cand.fidelity.decided_by and "trained weights" in cand.fidelity.decided_by
    assert all(c.status is not Status.OK for c in outcome.results.candidates if c.precision != "fp32")
    saved = json.loads((tmp_path / "results.json").read_text())
    assert all(c["fidelity"]["cannot_judge"] for c in saved["candidates"]
               if c.get("precision") == "int8" and c.get("fidelity"))
    report = (tmp_path / "report.md").read_text() + (tmp_path / "evidence.md").read_text()
    assert "*Cannot judge*" in report and "what would settle it: `--val-data DIR` with real inputs" in report
    # Only an fp32 runtime, exact to rounding, may have passed it here.
    assert not [line for line in report.splitlines() if "int8" in line.lower() and "passed the fidelity check" in line]


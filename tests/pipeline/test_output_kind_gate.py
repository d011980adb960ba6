"""The plan's `--output-kind` reaches the gate: the candidate is judged as the kind given, not the shape's."""

from __future__ import annotations

import numpy as np

from planner.pipeline.candidates import CandidateRun
from planner.plugins.options import PluginOptions
from planner.results import Status


def _run(reference: list[np.ndarray], options: PluginOptions) -> CandidateRun:
    run = object.__new__(CandidateRun)  # only the gate's attributes matter here
    run.reference = reference
    run.accuracy_budget = None
    run.plugin_options = options
    return run


def test_the_kind_given_decides_the_test():
    rng = np.random.default_rng(0)
    reference = [rng.normal(0, 1, size=(4, 1, 8, 8))]
    candidate = [reference[0] * 1.03]  # 3% off everywhere: within bf16's spread error, past fp32's
    status, _, fid = _run(reference, PluginOptions())._gate("bf16", candidate, None)
    assert status is Status.OK and fid is not None and fid.output_kind == "dense"
    status, reason, fid = _run(reference, PluginOptions(output_kind="regression",
                                                         output_kind_basis="given with --output-kind maps=regression")
                               )._gate("fp32", candidate, None)
    assert fid is not None and fid.output_kind == "regression"
    assert fid.kind_basis == "given with --output-kind maps=regression" and fid.map_iou is None
    assert status is Status.REJECTED and reason.startswith("fidelity check: relative error ||a - b|| / ||a|| 0.03")

"""An original model that answers the same input differently from call to call (it keeps state between calls,
as a streaming voice-activity model does) cannot judge a candidate: a difference is not the candidate's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from planner.measure.evaluate import REPEAT_TOLERANCE, repeat_drift
from planner.pipeline.candidates import CandidateRun
from planner.results import Status


class Streaming(torch.nn.Module):
    """Adds a running sum of what it has seen: each call's output depends on the calls before it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = torch.zeros(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen = self.seen + x.mean(0)
        return x + self.seen


def test_a_stateful_model_drifts_and_a_plain_one_does_not() -> None:
    x = torch.ones(2, 4)
    model = Streaming()
    assert repeat_drift(model(x).numpy(), model(x).numpy()) > REPEAT_TOLERANCE
    linear = torch.nn.Linear(4, 4)
    assert repeat_drift(linear(x).detach().numpy(), linear(x).detach().numpy()) == 0.0


def _run(drift: float | None) -> CandidateRun:
    run = object.__new__(CandidateRun)  # only what the gate reads
    run.reference = [np.linspace(1.0, 2.0, 40, dtype=np.float32).reshape(8, 5)]
    run.accuracy_budget = None
    run.baseline = SimpleNamespace(info={"repeat_drift": drift} if drift else {})
    return run


def test_against_a_stateful_original_a_difference_is_not_established_never_a_rejection() -> None:
    outputs = [np.ascontiguousarray(_run(None).reference[0][:, ::-1])]  # every class order reversed
    status, reason, _ = _run(0.029)._gate("fp32", outputs, None, generated_inputs=True)
    assert status is Status.UNCONFIRMED
    assert "the original model's own outputs change from call to call on the same input" in reason
    assert "relative change 0.029" in reason
    # A deterministic original: the same fp32 difference is a rejection.
    status, _, _ = _run(None)._gate("fp32", outputs, None, generated_inputs=True)
    assert status is Status.REJECTED

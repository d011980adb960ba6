"""An INT8 file whose outputs no longer resemble the original's (raw cosine below 0.5) is a failed build."""

from __future__ import annotations

import numpy as np

from planner.measure.fidelity import BROKEN_COSINE, broken_quantization, judge_outputs
from planner.pipeline.candidates import CandidateRun
from planner.plugins.declarations import Arithmetic


def _run() -> CandidateRun:
    run = object.__new__(CandidateRun)  # only the baseline's drift is read besides the fidelity
    run.baseline = None  # type: ignore[assignment]
    return run


def _fidelity(cosine_wanted: float):
    """Fabricated outputs' fidelity, at about `cosine_wanted` to a fabricated reference (64 samples, 10 classes)."""
    rng = np.random.default_rng(3)
    reference = rng.standard_normal((64, 10))
    noise = rng.standard_normal((64, 10))
    noise -= (noise.ravel() @ reference.ravel()) / (reference.ravel() @ reference.ravel()) * reference  # orthogonal
    noise *= np.linalg.norm(reference) / np.linalg.norm(noise)
    outputs = cosine_wanted * reference + np.sqrt(1 - cosine_wanted ** 2) * noise
    _, _, fid = judge_outputs([reference.astype(np.float32)], [outputs.astype(np.float32)], precision="int8")
    assert fid is not None and abs(fid.cosine - cosine_wanted) < 1e-3
    return fid


def test_a_quantized_model_below_half_cosine_failed_as_a_build_and_says_why() -> None:
    fid = _fidelity(0.12)
    reason = _run()._broken_quantization("int8", str(Arithmetic.REDUCED_PRECISION), fid)
    assert reason.startswith("the quantized model's outputs no longer resemble the original's (cosine 0.12 over 64 "
                             "samples, below 0.5): INT8 quantization broke this model")
    assert "transformer-aware recipe" in reason and "LayerNorm, Softmax and the residual Adds in float" in reason


def test_one_that_merely_misses_the_gate_is_not_a_failed_build() -> None:
    fid = _fidelity(0.8)  # fails the INT8 gate (0.99), but still points the same way: a rejected candidate
    assert fid.cosine >= BROKEN_COSINE and broken_quantization(fid) == ""
    assert _run()._broken_quantization("int8", str(Arithmetic.REDUCED_PRECISION), fid) == ""


def test_only_int8_candidates_built_by_quantization_are_held_to_it() -> None:
    fid = _fidelity(0.12)
    run = _run()
    assert run._broken_quantization("fp16", str(Arithmetic.REDUCED_PRECISION), fid) == ""
    # A change to the function (pruning, a fine-tune) that runs in int8 is judged by the gate as usual.
    assert run._broken_quantization("int8", str(Arithmetic.APPROXIMATE), fid) == ""
    assert broken_quantization(None) == ""

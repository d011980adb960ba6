"""Fidelity: how closely a candidate's outputs match the original model's on the same inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from planner.plugins import Precision
from planner.results.values import Fidelity


@dataclass(frozen=True)
class FidelityGate:
    """Minimum agreement a candidate must show to be ranked."""

    min_cosine: float
    min_top1: float
    max_accuracy_drop: float = 0.01

    def check(self, fid: Fidelity) -> str:
        """'' if the candidate passes, else the reason it is rejected."""
        return self.judge(fid)[0]

    def judge(self, fid: Fidelity) -> tuple[str, str]:
        """(reason it is rejected or '', the test that decided).

        Accuracy decides when there are labels; else top-1 agreement over the samples where it is a
        test (the reference's margin above the candidate's noise); else cosine similarity alone.
        """
        cosine_test = f"cosine similarity {fid.cosine:.5f} (gate {self.min_cosine})"
        if not np.isfinite(fid.cosine):
            return "outputs are not finite (NaN or Inf)", "finite outputs"
        if fid.cosine < self.min_cosine:
            return f"cosine similarity {fid.cosine:.5f} < gate {self.min_cosine}", cosine_test
        if fid.accuracy is not None and fid.reference_accuracy is not None:
            drop = fid.reference_accuracy - fid.accuracy
            test = (f"accuracy on {fid.samples} labelled samples "
                    f"(budget {self.max_accuracy_drop:.2%} below the original)")
            if drop > self.max_accuracy_drop:
                return (f"accuracy {fid.accuracy:.2%} is {drop:.2%} below the original's "
                        f"{fid.reference_accuracy:.2%} (budget {self.max_accuracy_drop:.2%})"), test
            return "", test
        if fid.top1_agreement is not None:
            counted = fid.top1_samples if fid.top1_samples is not None else fid.samples
            test = f"top-1 agreement on {counted} of {fid.samples} samples (gate {self.min_top1:.0%})"
            if fid.top1_agreement < self.min_top1:
                return (f"top-1 agreement {fid.top1_agreement:.1%} < gate {self.min_top1:.0%} "
                        f"(over the {counted} of {fid.samples} samples whose top-1 margin exceeds "
                        "the candidate's error)"), test
            return "", test
        if fid.top1_samples == 0:
            # Every reference margin is within the candidate's own error: which class wins there is
            # numerical noise (typical of random weights), so top-1 cannot tell a good candidate from a bad one.
            return "", (f"{cosine_test}, relative error {relative_error(fid):.2g}: top-1 is no test here "
                        "(no sample's top-1 margin exceeds the candidate's error)")
        return "", cosine_test


def relative_error(fid: Fidelity) -> float:
    """The candidate's error relative to the output's size, from the cosine similarity (0 when identical).

    For outputs of similar norm, ||a - b|| / ||a|| = sqrt(2 (1 - cosine)).
    """
    return float(np.sqrt(max(0.0, 2.0 * (1.0 - fid.cosine)))) if np.isfinite(fid.cosine) else float("inf")


# Why these: fp32 rewrites (fusion, thread changes) should be numerically ~exact; bf16 keeps
# 8 mantissa bits (relative error ~0.4% per op); INT8 typically keeps cosine > 0.99 on CNNs;
# ternary weights change the function far more and are only useful with retraining.
DEFAULT_GATES: dict[Precision, FidelityGate] = {
    Precision.FP32: FidelityGate(min_cosine=0.9999, min_top1=0.99),
    Precision.FP16: FidelityGate(min_cosine=0.999, min_top1=0.95),
    Precision.BF16: FidelityGate(min_cosine=0.995, min_top1=0.90),
    Precision.INT8: FidelityGate(min_cosine=0.99, min_top1=0.90),
    Precision.TERNARY: FidelityGate(min_cosine=0.90, min_top1=0.50),
}


def compare(reference: Sequence[np.ndarray], outputs: Sequence[np.ndarray], *,
            labels: Sequence[np.ndarray] | None = None) -> Fidelity:
    """Compare outputs batch by batch with the reference ones (and with labels, if given)."""
    if len(reference) != len(outputs):
        raise ValueError(f"{len(outputs)} output batches for {len(reference)} reference batches")
    ref = np.concatenate([np.asarray(r, dtype=np.float64).reshape(len(r), -1) for r in reference])
    out = np.concatenate([np.asarray(o, dtype=np.float64).reshape(len(o), -1) for o in outputs])
    if ref.shape != out.shape:
        raise ValueError(f"output shape {out.shape} differs from the reference's {ref.shape}")
    a, b = ref.ravel(), out.ravel()
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    cosine = float(a @ b / denom) if denom > 0 else (1.0 if np.array_equal(a, b) else 0.0)
    diff = np.abs(a - b)
    top1 = top1_all = None
    counted: int | None = None
    if ref.shape[1] > 1:
        agree = ref.argmax(axis=1) == out.argmax(axis=1)
        top1_all = float(np.mean(agree))
        decisive = top1_decisive(ref, float(diff.mean()) if diff.size else 0.0)
        counted = int(decisive.sum())
        top1 = float(np.mean(agree[decisive])) if counted else None
    accuracy = reference_accuracy = None
    if labels is not None:
        truth = np.concatenate([np.asarray(lab).reshape(-1) for lab in labels])
        if len(truth) != ref.shape[0]:
            raise ValueError(f"{len(truth)} labels for {ref.shape[0]} outputs")
        accuracy = float(np.mean(out.argmax(axis=1) == truth))
        reference_accuracy = float(np.mean(ref.argmax(axis=1) == truth))
    return Fidelity(cosine=cosine, max_abs_error=float(diff.max(initial=0.0)),
                    mean_abs_error=float(diff.mean()) if diff.size else 0.0,
                    top1_agreement=top1, samples=int(ref.shape[0]), accuracy=accuracy,
                    reference_accuracy=reference_accuracy, top1_samples=counted, top1_agreement_all=top1_all)


# A sample's top-1 is a test only when the reference's margin exceeds this many times the
# candidate's mean absolute error. The error is the candidate's typical one, not that sample's: a
# flip needs an error of at least half the margin on that very sample, so a per-sample threshold
# would exclude exactly the samples a real error flips.
MARGIN_NOISE_FACTOR = 4.0


def top1_decisive(ref: np.ndarray, mean_abs_error: float) -> np.ndarray:
    """Which rows of the (samples, classes) reference have a top-1 margin above the candidate's noise."""
    top2 = np.sort(ref, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    return margin > MARGIN_NOISE_FACTOR * mean_abs_error

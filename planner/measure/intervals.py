"""95% intervals for what a fidelity check counts, and how many samples would settle a claim.

A share (top-1 agreement, accuracy) gets the Wilson score interval (scipy's). The drop in accuracy of a candidate
against the original, both judged on the same labelled samples, is a paired difference: its interval comes from
the two accuracies' Wilson intervals and their correlation (Newcombe's method 10, Stat Med 1998), which stays
honest where no sample changes its answer (24 samples, none changed: about +-14 points, not 0).
"""

from __future__ import annotations

import math

import numpy as np

CONFIDENCE = 0.95


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a share `successes / n` (n > 0)."""
    from scipy.stats import binomtest  # a second to import: only where labels are judged, not in every worker

    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
    return float(ci.low), float(ci.high)


def paired_drop(reference_right: np.ndarray, candidate_right: np.ndarray) -> tuple[float, float, float]:
    """(drop, low, high): the original's accuracy minus the candidate's on the same samples, with its 95% interval.

    `reference_right` and `candidate_right` say, per sample, whether each got the label right."""
    ref, cand = np.asarray(reference_right, bool), np.asarray(candidate_right, bool)
    n = int(ref.size)
    both, ref_only = int(np.sum(ref & cand)), int(np.sum(ref & ~cand))
    cand_only, neither = int(np.sum(~ref & cand)), int(np.sum(~ref & ~cand))
    p1, p2 = (both + ref_only) / n, (both + cand_only) / n
    (l1, u1), (l2, u2) = wilson(both + ref_only, n), wilson(both + cand_only, n)
    margins = (both + ref_only) * (cand_only + neither) * (both + cand_only) * (ref_only + neither)
    phi = (both * neither - ref_only * cand_only) / math.sqrt(margins) if margins else 0.0
    below = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    above = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    drop = p1 - p2
    return drop, drop - below, drop + above


def samples_to_settle(estimate: float, low: float, high: float, bound: float, n: int) -> int | None:
    """About how many samples would put the interval wholly on one side of `bound`, were the estimate to hold
    (an interval narrows as one over the square root of the count); None when the estimate sits on the bound."""
    if estimate < bound:
        width, room = high - estimate, bound - estimate
    elif estimate > bound:
        width, room = estimate - low, estimate - bound
    else:
        return None
    return max(n + 1, math.ceil(n * (width / room) ** 2))

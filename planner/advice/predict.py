"""How the predictions held: each candidate's band (a plugin's `expect`, planner.plugins.expectation)
against its measured speedup, and the run's count of hits.

After a run the planner says how many measured speedups fell inside their band, and how many
"unlikely to pay" calls were right.
"""

from __future__ import annotations

from typing import Iterable

from planner.results.values import Prediction


def verdict(prediction: Prediction | None, measured: float | None) -> str:
    """'inside', 'above' or 'below' the band, or '' when either side is missing (see Prediction.verdict)."""
    return prediction.verdict(measured) if prediction is not None else ""


def summary(pairs: Iterable[tuple[Prediction | None, float | None]]) -> str:
    """How the predictions held: the share of measured speedups inside their band, and the 'won't pay' calls."""
    judged = [(p, m) for p, m in pairs if verdict(p, m)]
    if not judged:
        return "No candidate had both a prediction and a measured speedup."
    inside = sum(1 for p, m in judged if verdict(p, m) == "inside")
    losers = [(p, m) for p, m in judged if p is not None and p.high is not None and p.high <= 1.2]
    right = sum(1 for _, m in losers if m is not None and m < 1.0)
    text = f"{inside} of {len(judged)} measured speedups fell inside their predicted band"
    if losers:
        text += f"; {right} of {len(losers)} 'unlikely to pay' predictions were right (measured below 1x)"
    return text + "."

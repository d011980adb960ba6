"""One request end to end with the user's own pre- and post-processing (`--pipeline`): where its time goes."""

from __future__ import annotations

from dataclasses import dataclass

MODEL_SHARE_BOTTLENECK = 0.5
"""Under this share of the request the model is not the bottleneck: the work around it is (the checklist's rule).
The same value as planner.measure.request_split's, which a hand-over package's run.py carries without the planner."""


@dataclass(frozen=True)
class PipelineSplit:
    """Requests timed end to end with one runtime: each part's median per request, or why none was timed.

    The parts are the user's preprocessing (one raw sample to the model's input), the model call (the input
    handed to the runtime, one inference, the first output back as an array) and the user's postprocessing.
    """

    pipeline: str  # the --pipeline argument, FILE.py:PRE[,POST]
    runtime: str = ""  # the candidate whose runtime ran the model (the baseline's, or the plan's winner's)
    requests: int = 0  # requests timed (after a few untimed)
    distinct_samples: int = 0  # raw samples the requests cycled through
    samples_from: str = ""  # where they came from: samples() or SAMPLES in the file, or --val-data's files
    preprocess_ms: float | None = None
    model_ms: float | None = None
    postprocess_ms: float | None = None  # None: no postprocessing function was given
    request_p50_ms: float | None = None  # the median request, all parts together
    # The rule's threshold, recorded with the split so a report states the one it was judged by.
    bottleneck_below: float = MODEL_SHARE_BOTTLENECK
    error: str = ""  # why no split was measured ('' when one was)
    fix: str = ""  # what to do about it

    @property
    def measured(self) -> bool:
        """Whether requests were timed (no error)."""
        return not self.error and self.model_ms is not None

    @property
    def shares(self) -> tuple[float, float, float]:
        """(model, preprocessing, postprocessing) as shares of the parts' medians together; (0, 0, 0) when not
        measured. Medians: one request slowed by another process must not move the split."""
        parts = (self.model_ms or 0.0, self.preprocess_ms or 0.0, self.postprocess_ms or 0.0)
        total = sum(parts)
        return (parts[0] / total, parts[1] / total, parts[2] / total) if total > 0 else (0.0, 0.0, 0.0)

    @property
    def around_model(self) -> bool:
        """Whether the work around the model is the bottleneck: the model under `bottleneck_below` of the request."""
        return self.measured and self.shares[0] < self.bottleneck_below

    def line(self) -> str:
        """'model 41% of the request, preprocessing 52%, postprocessing 7%'; the error when none was measured."""
        if not self.measured:
            return f"not measured: {self.error}"
        model, pre, post = self.shares
        text = f"model {model:.0%} of the request, preprocessing {pre:.0%}"
        return text + (f", postprocessing {post:.0%}" if self.postprocess_ms is not None else "")

    def parts_text(self) -> str:
        """'median over 200 requests: preprocessing 0.6 ms, model 0.5 ms, postprocessing 0.1 ms'."""
        from planner import units

        parts = [f"preprocessing {units.ms(self.preprocess_ms)}", f"model {units.ms(self.model_ms)}"]
        if self.postprocess_ms is not None:
            parts.append(f"postprocessing {units.ms(self.postprocess_ms)}")
        return f"median over {self.requests} requests: " + ", ".join(parts)

    def sentence(self, role: str) -> str:
        """One line for `role` ('the original model'): the shares and the parts, or why none was measured."""
        if not self.measured:
            return (f"with {role}: not measured — {self.error}" + (f" (fix: {self.fix})" if self.fix else ""))
        runtime = f" ({self.runtime})" if self.runtime and self.runtime not in role else ""
        return f"with {role}{runtime}: {self.line()} ({self.parts_text()})"

    def basis(self) -> str:
        """How the requests were timed: the argument and the samples they cycled over."""
        return (f"`--pipeline {self.pipeline}`, requests cycling over {self.distinct_samples} distinct samples "
                f"({self.samples_from}), each part on its own clock")


    def rule(self) -> str:
        """The rule the checklist answers by, in words, with the threshold this split was judged by."""
        return (f"the work around the model is the bottleneck when the model is under {self.bottleneck_below:.0%} "
                "of the request")


def split_lines(baseline: PipelineSplit | None, winner: PipelineSplit | None, *, winner_label: str = "") -> list[str]:
    """Plain lines on the user's requests end to end: the basis, then one per model timed, then what it means."""
    if baseline is None and winner is None:
        return []
    first = next(s for s in (baseline, winner) if s is not None)
    lines = [f"Your requests end to end ({first.basis()}):" if first.measured
             else f"Your requests end to end (`--pipeline {first.pipeline}`):"]
    if baseline is not None:
        lines.append(f"- {baseline.sentence('the original model')}")
    if winner is not None:
        lines.append(f"- {winner.sentence(f'the winner {winner_label}'.strip())}")
    last = winner if winner is not None and winner.measured else baseline
    if last is not None and last.measured:
        lines.append("")
        who = "the winner" if last is winner else "the original model"
        lines.append(f"With {who}, the model is {last.shares[0]:.0%} of the request: "
                     + ("the work around it is the bottleneck, so speeding up the model further changes little"
                        if last.around_model else "the model itself is the bottleneck")
                     + f" ({last.rule()}).")
    return lines

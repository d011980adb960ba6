"""A defensive view of results.json for the report: every key may be missing or mistyped in a
partial or hand-edited file, so sections read through these accessors (the lenient readers the
advice shares, from planner.results.view) instead of indexing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from planner.report.fmt import real
from planner.results.view import (
    InputView,
    as_dict,
    as_list,
    best_throughput,
    dig,
    latency,
    model_inputs,
    p50,
    sequence_sweep,
    text,
)

__all__ = ["PARTIAL_STATUSES", "InputView", "ReportData", "as_dict", "as_list", "best_throughput", "dig", "first",
           "latency", "p50", "sequence_sweep", "text"]

PARTIAL_STATUSES = ("partial", "interrupted", "failed", "running")
"""Statuses under which the report says it is partial."""


def first(data: Mapping, *keys: str) -> Any:
    """The first of these keys that holds a value (other engineers' names still settle)."""
    for key in keys:
        value = data.get(key) if isinstance(data, Mapping) else None
        if value not in (None, ""):
            return value
    return None


@dataclass
class ReportData:
    """Everything the sections need, read defensively once from a results dict."""

    results: dict
    figures: dict[str, str] | None = None
    figure_notes: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """The run's status ('unknown' when missing)."""
        return text(self.results.get("status")) or "unknown"

    @property
    def is_partial(self) -> bool:
        """Whether the run stopped before finishing cleanly."""
        return self.status in PARTIAL_STATUSES or self.status == "unknown"

    @property
    def warnings(self) -> list[str]:
        """Warnings recorded during the run."""
        return [text(w) for w in as_list(self.results.get("warnings")) if text(w)]

    @property
    def model(self) -> dict:
        """The model description (falls back to the baseline's copy)."""
        return as_dict(self.results.get("model")) or as_dict(self.baseline.get("model"))

    @property
    def inputs(self) -> tuple[InputView, ...]:
        """Every input the model was fed: the baseline's record, else the model's (older files: one shape)."""
        return model_inputs(self.baseline, self.model)

    @property
    def hardware(self) -> dict:
        """The hardware profile."""
        return as_dict(self.results.get("hardware"))

    @property
    def baseline(self) -> dict:
        """The baseline profile ({} when the run never got that far)."""
        return as_dict(self.results.get("baseline"))

    @property
    def ceilings(self) -> dict:
        """The roofline ceilings (top level, else the baseline's copy)."""
        return as_dict(self.results.get("ceilings")) or as_dict(self.baseline.get("ceilings"))

    @property
    def requirements(self) -> dict:
        """The requirements the run was asked to meet."""
        return as_dict(self.results.get("requirements"))

    @property
    def candidates(self) -> list[dict]:
        """Every candidate result, baseline first."""
        return [c for c in as_list(self.results.get("candidates")) if isinstance(c, dict)]

    @property
    def ranking(self) -> list[int]:
        """Indices into `candidates` of the ranked candidates, best first (valid ones only)."""
        count = len(as_list(self.results.get("candidates")))
        order = as_list(dig(self.results, "ranking", "order"))
        return [i for i in order if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count]

    @property
    def ranked_by(self) -> str:
        """What the ranking orders by ('p50 latency', 'best throughput'), or ''."""
        return text(dig(self.results, "ranking", "by"))

    def rank(self, cand: Mapping) -> int | None:
        """A candidate's 1-based rank, or None when it was not ranked."""
        raw = as_list(self.results.get("candidates"))
        index = next((i for i, c in enumerate(raw) if c is cand), None)
        order = self.ranking
        return order.index(index) + 1 if index in order else None

    @property
    def best(self) -> dict | None:
        """The best-ranked candidate, or None when nothing was ranked."""
        order = self.ranking
        best = as_list(self.results.get("candidates"))[order[0]] if order else None
        return best if isinstance(best, dict) else None

    @property
    def reference(self) -> dict:
        """The baseline as a candidate (the one with fidelity.reference), else the baseline profile."""
        for c in self.candidates:
            if dig(c, "fidelity", "reference") is True:
                return c
        return self.candidates[0] if self.candidates else self.baseline

    def is_reference(self, cand: Mapping) -> bool:
        """Whether this candidate is the baseline itself."""
        return cand is self.reference or dig(cand, "fidelity", "reference") is True

    @property
    def base_p50(self) -> float | None:
        """The baseline's median latency in ms."""
        return p50(self.baseline) if p50(self.baseline) is not None else p50(self.reference)

    def speedup(self, cand: Mapping) -> float | None:
        """The candidate's recorded speedup, else baseline p50 over its p50."""
        recorded = real(cand.get("speedup"))
        if recorded is not None:
            return recorded
        base, mine = self.base_p50, p50(cand)
        if base is None or not mine:
            return None
        return base / mine

    @property
    def plan(self) -> dict:
        """The plan (ordered steps)."""
        return as_dict(self.results.get("plan"))

    @property
    def steps(self) -> list[dict]:
        """The plan's steps in order."""
        steps = [s for s in as_list(self.plan.get("steps")) if isinstance(s, dict)]
        return sorted(steps, key=lambda s: (real(s.get("order")) is None, real(s.get("order")) or 0))

    @property
    def findings(self) -> list[dict]:
        """Architecture findings, highest impact first (the lint's order breaks ties)."""
        found = [f for f in as_list(self.baseline.get("findings")) if isinstance(f, dict)]
        return sorted(found, key=lambda f: -(real(f.get("impact")) or 0.0))

    @property
    def skipped_plugins(self) -> list[dict]:
        """Plugins that could not run here, with reasons."""
        return [s for s in as_list(self.results.get("skipped_plugins")) if isinstance(s, dict)]

    def skip_reason(self, plugin: str) -> str:
        """Why a plugin was skipped, or ''."""
        for s in self.skipped_plugins:
            if s.get("plugin") == plugin:
                return "; ".join(text(r) for r in as_list(s.get("reasons"))) or "skipped"
        return ""

    def missing(self, what: str) -> str:
        """Why a part of the report is empty: the run stopped early, or the file lacks it."""
        if self.is_partial:
            return f"not recorded: the run's status is {self.status}, so it stopped before {what}"
        return f"not recorded in results.json ({what} is absent)"

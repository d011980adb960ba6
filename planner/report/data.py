"""The typed results a report renders, and the reads several sections share.

results.json is decoded once, where it is read (`typed_results`: an older schema is upgraded first, and a file
that does not fit is an error naming the field); every section then reads typed values (`ReportData.run`).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any, Mapping

from planner.codec import SchemaError, from_data
from planner.errors import PlannerError
from planner.hardware.ceiling_values import Ceilings
from planner.results import CandidateResult, PlanResults, results_from_data
from planner.results.analysis import Finding
from planner.results.context import ModelDescription
from planner.results.decisions import PlanStep
from planner.results.rows import CandidateRow, baseline_p50, candidate_rows, speedup_of
from planner.results.values import ModelSummary
from planner.results.view import InputView, model_inputs

__all__ = ["PARTIAL_STATUSES", "ReportData", "typed_results"]

PARTIAL_STATUSES = ("partial", "interrupted", "failed", "running")
"""Statuses under which the report says it is partial."""


def typed_results(results: PlanResults | Mapping[str, Any]) -> PlanResults:
    """The typed results a report renders: typed results as they are, a results.json object decoded (any schema
    this planner reads); an object that does not fit says which field and what to do."""
    if isinstance(results, PlanResults):
        return results
    try:
        return results_from_data(dict(results) if isinstance(results, Mapping) else results)
    except SchemaError as exc:
        raise PlannerError(f"not a planner results file: {exc}",
                           "pass the results.json written by `planner plan`, or re-run the plan") from exc


@dataclass
class ReportData:
    """Everything the sections need: the typed results (`run`) and the figures drawn from them."""

    source: InitVar[PlanResults | Mapping[str, Any]]
    figures: dict[str, str] | None = None
    figure_notes: dict[str, str] = field(default_factory=dict)
    run: PlanResults = field(init=False)

    def __post_init__(self, source: PlanResults | Mapping[str, Any]) -> None:
        self.run = typed_results(source)

    # Typed reads: what several sections ask of the typed results, answered once.

    @property
    def model_record(self) -> ModelDescription | ModelSummary | None:
        """The loaded model's record, else the baseline's copy of it (a file that lacks the first); None before
        either was made."""
        if self.run.model is not None:
            return self.run.model
        return self.run.baseline.model if self.run.baseline is not None else None

    @cached_property
    def ceilings(self) -> Ceilings | None:
        """The roofline ceilings: the plan's, else the baseline's copy (a run stopped after the baseline records
        only that one, as JSON inside the typed baseline); None when neither was recorded or the copy is not whole."""
        if self.run.ceilings is not None:
            return self.run.ceilings
        copy = self.run.baseline.ceilings if self.run.baseline is not None else {}
        try:
            return from_data(copy, Ceilings) if copy else None
        except SchemaError:
            return None

    @cached_property
    def model_inputs(self) -> tuple[InputView, ...]:
        """Every input the model was fed: the baseline's record, else the model's (older files: one shape).

        Each input is a JSON record inside the typed results; `model_inputs` reads the forms older files used."""
        base, model = self.run.baseline, self.run.model
        return model_inputs({"inputs": list(base.inputs), "input_shape": list(base.input_shape)} if base else {},
                            {"inputs": list(model.inputs)} if model else {})

    @property
    def best_cand(self) -> CandidateResult | None:
        """The best-ranked candidate, or None when nothing was ranked."""
        return self.run.best

    @cached_property
    def reference_cand(self) -> CandidateResult | None:
        """The baseline as a candidate: the one measured as the reference, else the first candidate, else the
        baseline profile as a candidate row; None before any baseline."""
        for cand in self.run.candidates:
            if cand.is_reference:
                return cand
        if self.run.candidates:
            return self.run.candidates[0]
        return self.run.baseline.as_candidate() if self.run.baseline is not None else None

    def is_reference_cand(self, cand: CandidateResult) -> bool:
        """Whether this candidate is the baseline itself."""
        return cand.is_reference or cand is self.reference_cand

    @property
    def base_ms(self) -> float | None:
        """The baseline's median latency in ms (the profile's, else the reference candidate's)."""
        return baseline_p50(self.run)

    def speedup_of(self, cand: CandidateResult) -> float | None:
        """The candidate's recorded speedup, else the baseline's p50 over its p50 (its row's)."""
        return speedup_of(self.run, cand)

    @cached_property
    def rows(self) -> list[CandidateRow]:
        """Every candidate's row, ranked ones first: the table every medium shows."""
        return candidate_rows(self.run)

    def index_of(self, cand: CandidateResult) -> int | None:
        """The candidate's index in the results' candidates (by identity), or None for a row made elsewhere."""
        return next((i for i, c in enumerate(self.run.candidates) if c is cand), None)

    def rank_of(self, cand: CandidateResult) -> int | None:
        """A candidate's 1-based rank, or None when it was not ranked."""
        index = self.index_of(cand)
        return self.run.rank_of(index) if index is not None else None

    @property
    def plan_steps(self) -> list[PlanStep]:
        """The plan's steps in order."""
        return sorted(self.run.plan.steps, key=lambda s: s.order) if self.run.plan is not None else []

    @property
    def sorted_findings(self) -> list[Finding]:
        """Architecture findings, highest impact first (the lint's order breaks ties)."""
        found = self.run.baseline.findings if self.run.baseline is not None else ()
        return sorted(found, key=lambda f: -f.impact)

    def skipped_because(self, plugin: str) -> str:
        """Why a plugin was skipped, or ''."""
        for s in self.run.skipped_plugins:
            if s.plugin == plugin:
                return "; ".join(s.reasons) or "skipped"
        return ""

    @property
    def status(self) -> str:
        """The run's status in words ('ok', 'interrupted'...)."""
        return str(self.run.status)

    @property
    def is_partial(self) -> bool:
        """Whether the run stopped before finishing cleanly."""
        return self.status in PARTIAL_STATUSES

    def missing(self, what: str) -> str:
        """Why a part of the report is empty: the run stopped early, or the file lacks it."""
        if self.is_partial:
            return f"not recorded: the run's status is {self.status}, so it stopped before {what}"
        return f"not recorded in results.json ({what} is absent)"

"""How many candidates the last optimize run measured, skipped, lost to a failure or never reached: one count, read
from results.json's own record, that the TUI's lines and the report both print."""

from __future__ import annotations

from dataclasses import dataclass

from planner.results.values import PlanResults, Status


@dataclass(frozen=True)
class CandidateCounts:
    """The candidates of the last optimize run (the baseline is not one of them), by how each ended.

    Every row of results.json's candidates is in exactly one of `measured`, `skipped` and `failed`; `not_reached`
    counts what a cancel stopped the run before (no row: nothing about them was measured).
    """

    measured: int = 0  # ran and were timed: ranked, rejected by the fidelity check, or not established
    skipped: int = 0  # not measured on purpose, each with its reason (predicted to lose, the time budget...)
    failed: int = 0  # tried and failed (a build, a worker), each with its reason
    not_reached: int = 0  # the run was cancelled before them

    @classmethod
    def of(cls, results: PlanResults) -> CandidateCounts:
        """The counts of `results` (the baseline's row, the first when a baseline was profiled, is left out)."""
        cands = results.candidates
        rows = cands[1:] if results.baseline is not None else tuple(c for c in cands if not c.is_reference)
        skipped = sum(1 for c in rows if c.status is Status.SKIPPED)
        failed = sum(1 for c in rows if c.status is Status.FAILED)
        return cls(measured=len(rows) - skipped - failed, skipped=skipped, failed=failed,
                   not_reached=len(results.not_reached))

    @property
    def total(self) -> int:
        """Every candidate the run had in line, reached or not."""
        return self.measured + self.skipped + self.failed + self.not_reached

    def words(self, *, noun: bool = True, why: bool = True) -> str:
        """'3 candidates measured, 5 skipped, 11 not reached (the run was cancelled first)': the parts that are not
        zero, measured always ('3 measured, ...' without the `noun`, where a label names them; without `why`, where
        the line has no room for the reason)."""
        what = f" candidate{'s' if self.measured != 1 else ''}" if noun else ""
        parts = [f"{self.measured}{what} measured"]
        parts += [f"{n} {what}" for n, what in ((self.skipped, "skipped"), (self.failed, "failed")) if n]
        if self.not_reached:
            parts.append(f"{self.not_reached} not reached" + (" (the run was cancelled first)" if why else ""))
        return ", ".join(parts)

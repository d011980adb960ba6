"""How a plan ended, wherever it ran: the one outcome every way of running a plan returns, and its exit status."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from planner.results import RESULTS_NAME, PlanResults, RunStatus


@dataclass
class PlanOutcome:
    """How a plan ended, wherever it ran (in this process, in an engine process, on a host over SSH): its results
    (None when it ended before writing any), the folder they are in, its report, and what went wrong.

    A plan on a host is a `planner.ssh.remote_plan.HostOutcome`, which adds the host and the run."""

    results: PlanResults | None
    out_dir: Path | None
    report_path: Path | None = None
    failure: str = ""  # why it did not end as planned ('' when it did): the engine stopped, the fetch failed...
    interrupted: bool = False  # Ctrl-C (or a fleet's cancel) stopped it; `results` hold what it measured
    skipped: dict[str, str] = field(default_factory=dict)  # files of the plan's folder not brought here, and why

    @property
    def name(self) -> str:
        """What ran it, for its lines among others' ('': this machine)."""
        return ""

    @property
    def where(self) -> str:
        """Where its folder is, in words: 'Wrote out/results.json' ('' when it wrote none)."""
        return f"Wrote {self.out_dir / RESULTS_NAME}" if self.out_dir is not None and self.results is not None else ""

    @property
    def succeeded(self) -> bool:
        """Whether it gave results that did not fail, with nothing gone wrong on the way."""
        return self.results is not None and self.results.status is not RunStatus.FAILED and not self.failure

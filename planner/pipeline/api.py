"""The session's steps as one stated interface: what the TUI (and any client) may call on a session.

Two classes implement it: `PlanSession` runs the steps in this process, and `planner.engine.remote.RemoteSession`
runs them in the engine over the protocol. `SessionSteps` states the calls both answer alike, so mypy sees a
step that drifts in one of them (`planner.engine.remote` checks both against it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from planner.events import EventSink
    from planner.hardware.ceiling_values import Ceilings
    from planner.hardware.profile import HardwareProfile
    from planner.pipeline.steps import Step
    from planner.plugins.options import PluginOptions
    from planner.results import Baseline, CandidateResult, Deployment, PlanResults, Requirements


class SessionSteps(Protocol):
    """The steps of one plan, and what a client reads of its state between them."""

    on_event: EventSink
    results: PlanResults

    @property
    def out_dir(self) -> Path | None:
        """The output folder, once chosen."""

    @property
    def replies(self) -> dict[str, str]:
        """The user's checklist replies, by question id."""

    def done_steps(self) -> frozenset[Step]:
        """The steps whose result is there and up to date."""

    def stale_steps(self) -> frozenset[Step]:
        """The steps whose result is kept but out of date."""

    def is_done(self, step: Step) -> bool:
        """Whether `step`'s result is there and up to date."""

    def detect(self) -> HardwareProfile:
        """The host's hardware."""

    def measure_ceilings(self, *, quick: bool = ..., refresh: bool = ...) -> Ceilings | None:
        """Measure (or read the cached) roofline ceilings."""

    def set_target(self, target: str = ...) -> str:
        """Resolve and record the deployment target."""

    def set_requirements(self, *, toml_path: Path | None = ..., overrides: dict | None = ...,
                         device_class: str | None = ...) -> Requirements | None:
        """Set the requirements (flags, then a TOML file, then the device class's defaults)."""

    def set_out_dir(self, out: Path | None) -> Path:
        """Choose and check the output folder."""

    def profile(self, *, quick: bool = ..., timeout_s: float = ..., val_data: Path | None = ...) -> Baseline | None:
        """Measure and analyse the baseline."""

    def planned_plugins(self) -> list[str]:
        """The plugins the plan's steps name, in plan order."""

    def plugin_status(self) -> list[dict]:
        """Every registered plugin with whether it can run here, and why not."""

    def optimize(self, *, plugins: list[str] | tuple[str, ...] | None = ..., timeout_s: float = ...,
                 plugin_options: PluginOptions | None = ..., confirm: int = ...) -> tuple[CandidateResult, ...]:
        """Build, measure, judge and rank the candidates."""

    def deploy(self) -> tuple[Deployment, ...]:
        """Write the hand-over packages and record them."""

    def save(self) -> None:
        """Write results.json, if an output folder is set."""

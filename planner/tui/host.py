"""What the step panes may use of the app: the running job and the `PlannerHost` protocol, so that
panes need not import the app module that imports them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.widget import Widget
    from textual.worker import Worker

    from planner.engine.client import EngineClient
    from planner.engine.remote import RemoteSession


class JobPane(Protocol):
    """The step pane that runs a job, as far as the app needs it."""

    def cancel_step(self) -> bool:
        """Stop this pane's running job; False when it cannot be stopped."""


@dataclass
class Job:
    """The engine job in progress: one at a time, so measurements never compete for the machine."""

    name: str
    title: str
    pane: JobPane
    worker: Worker | None = None


class PlannerHost(Protocol):
    """The app as the panes see it: the session (which keeps what is done), and the job in progress."""

    session: RemoteSession
    out_dir: Path | None
    job: Job | None
    host: str | None  # the machine the engine runs on when reached over SSH (`planner --host`), else None

    @property
    def saved_to(self) -> Path | None:
        """The folder of the last save, while the saved report is up to date."""

    def goto(self, step_id: str) -> None:
        """Show a step."""

    def session_changed(self) -> None:
        """Re-read the session in every pane."""

    def model_loaded(self) -> None:
        """A model was loaded: every pane forgets what its runs said about the one before."""

    def job_title(self, job: str) -> str:
        """A job's name as people read it."""

    def begin_job(self, pane: Widget, name: str) -> bool:
        """Claim the machine for a job; False when another job runs."""

    def job_worker(self, worker: Worker) -> None:
        """Attach the worker that runs the current job."""

    def end_job(self, worker: Worker | None) -> None:
        """Release the machine when the current job's worker ends."""

    def startup_continue(self, finished: str) -> None:
        """Go on with the start-up sequence after a step finished."""

    def requirements_changed(self) -> None:
        """Re-plan if the session says the plan is out of date (the requirements or target changed)."""

    def connect_engine(self) -> EngineClient:
        """Start the engine if it is not running (from a worker thread) and return its connection."""

    def stop_running_job(self) -> None:
        """Stop the job in progress: cancel between candidates and end the measuring processes."""

"""StepPane: what every step pane shares — session access, jobs in workers, and error display."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence, cast

from textual import on
from textual.containers import Vertical
from textual.events import Mount
from textual.widget import Widget
from textual.worker import Worker, WorkerState, get_current_worker

from planner.errors import PlannerError
from planner.events import Event
from planner.tui.bridge import EngineEvents
from planner.tui.formatting import tui_words
from planner.tui.messages import JobDone
from planner.tui.widgets.notice import Notice

if TYPE_CHECKING:
    from planner.engine.remote import RemoteSession
    from planner.tui.host import PlannerHost


class StepPane(Vertical):
    """One step of the method; subclasses compose the view and override the hooks below."""

    DEFAULT_CSS = """
    StepPane { height: 1fr; width: 1fr; }
    """

    STEP_ID: ClassVar[str] = ""
    # What `r` does on this step (shown in the help and the palette); None: `r` is hidden here.
    RUN_LABEL: ClassVar[str | None] = None

    @property
    def planner(self) -> PlannerHost:
        """The app, as the panes may use it."""
        return cast("PlannerHost", self.app)

    @property
    def session(self) -> RemoteSession:
        """The engine session every step drives."""
        return self.planner.session

    @on(Mount)
    def _read_the_session_on_mount(self) -> None:
        # A pane mounted after the first frame (see planner.tui.app.EAGER_PANES) missed the syncs before it.
        self.call_after_refresh(self.sync)

    # -- hooks -------------------------------------------------------------------------------
    def sync(self) -> None:
        """Re-read the session and show what changed (called after every job and step change)."""

    def run_step(self) -> None:
        """The step's main action (`r`)."""

    def cancel_step(self) -> bool:
        """Stop this pane's running job; False when it cannot be stopped."""
        return False

    def forget_runs(self, model: str) -> None:
        """Another model was loaded (`model`, as its source reads): drop what this pane's own runs said about the
        one before (a progress line, a status, a notice, a log) and say the step has not run for this one.

        The session discarded that model's results (the engine's step graph); `sync`, which follows, shows what
        it holds now. Only what a run wrote outside the session's state needs forgetting here.
        """

    def engine_events(self, events: list[Event]) -> None:
        """Show progress events from this pane's running job."""

    def job_done(self, job: str, result: Any) -> None:
        """Show a finished job's result."""

    def job_failed(self, job: str, error: BaseException) -> None:
        """Show why a job failed: in place (the pane's notice) and as a notification."""
        for notice in self.query("#notice").results(Notice):
            notice.show_exception(error)
        problem = tui_words(error.problem) if isinstance(error, PlannerError) else f"{type(error).__name__}: {error}"
        self.notify(problem, title=f"{self.planner.job_title(job)} failed", severity="error", timeout=8)

    def replace_children(self, container: Widget, widgets: Sequence[Widget]) -> None:
        """Swap a container's children; removal is asynchronous, so the new ones mount once it is done."""

        async def swap() -> None:
            """Remove the old children, then mount the new ones."""
            await container.remove_children()
            await container.mount_all(widgets)

        self.call_later(swap)

    # -- jobs --------------------------------------------------------------------------------
    def start(self, job: str, worker_method: Callable[..., Worker], *args: Any) -> bool:
        """Claim the engine for `job` and start its worker; False (and a notification) while another job runs."""
        if not self.planner.begin_job(self, job):
            return False
        self.planner.job_worker(worker_method(*args))
        return True

    def report(self, job: str, result: Any = None) -> None:
        """From a worker thread: hand the result to the UI thread (the pane's `job_done`)."""
        self.post_message(JobDone(job, result, get_current_worker()))

    def on_engine_events(self, message: EngineEvents) -> None:
        """Drain the bridge and hand the events to the pane."""
        events = message.drain()
        if not self.is_attached:  # the app is quitting: nothing left to show them on
            return
        if events:
            self.engine_events(events)

    def on_job_done(self, message: JobDone) -> None:
        """A worker reported its result: release the engine, show the result, refresh every pane."""
        if not self.is_attached:  # a run that outlived a quit reports to no one
            return
        self.planner.end_job(message.worker)
        self.job_done(message.job, message.result)
        self.planner.session_changed()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a worker failure becomes a visible error instead of a crash."""
        worker = event.worker
        if not self.is_attached:
            return
        if event.state is WorkerState.ERROR:
            self.planner.end_job(worker)
            self.job_failed(worker.name, worker.error or RuntimeError("the worker failed"))
            self.planner.session_changed()
        elif event.state in (WorkerState.CANCELLED, WorkerState.SUCCESS):
            # SUCCESS normally arrives after JobDone already released the engine; this is the
            # safety net for a job that ended without reporting.
            self.planner.end_job(worker)

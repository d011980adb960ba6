"""The planner's Textual app: the step sidebar, the step panes, key bindings and the command palette."""

from __future__ import annotations

import sys
import threading
from functools import partial
from pathlib import Path
from typing import Callable, TypeVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal
from textual.lazy import Lazy
from textual.screen import Screen
from textual.widgets import (
    ContentSwitcher,
    Footer,
    Header,
    OptionList,
    TabbedContent,
    TabPane,
)
from textual.worker import Worker

from planner.engine.client import EngineClient, EngineDiedError
from planner.engine.remote import RemoteSession
from planner.errors import PlannerError
from planner.pipeline.steps import Step as SessionStep
from planner.tui.bridge import EventBridge
from planner.tui.host import Job
from planner.tui.screens.base import StepPane
from planner.tui.screens.checklist import ChecklistPane
from planner.tui.screens.confirm import ConfirmQuit
from planner.tui.screens.engine_stopped import EngineStopped, kept_text
from planner.tui.screens.hardware import HardwarePane
from planner.tui.screens.help import HelpScreen
from planner.tui.screens.model import ModelPane
from planner.tui.screens.optimize import OptimizePane
from planner.tui.screens.profile import ProfilePane
from planner.tui.screens.report import ReportPane
from planner.tui.screens.requirements import RequirementsPane
from planner.tui.screens.results import ResultsPane
from planner.tui.screens.too_small import TooSmallScreen, cover_if_too_small
from planner.tui.screens.tree import TreePane
from planner.tui.startup import resume_gc
from planner.tui.steps import STEP_BY_ID, STEPS
from planner.tui.terminal import default_log_path, stray_output_to
from planner.tui.widgets.step_list import StepList

# The same default as planner.models.demo.DEFAULT_DEMO, written out so that starting the TUI does
# not import torch before the first frame is drawn (tests check the two agree).
DEFAULT_MODEL = "demo:inefficient"

JOB_TITLES = {
    "detect": "Hardware detection", "ceilings": "Measuring the ceilings", "demos": "Listing the demos",
    "load": "Loading the model", "profile": "Profiling", "plugins": "Listing the plugins",
    "optimize": "Optimizing", "save": "Saving the report and the hand-over packages",
    "deploy": "Writing and verifying the hand-over packages", "llm_plan": "The LLM plan",
}

# The jobs `c` stops: a profile ends its measuring process; an optimize or an LLM plan stops after the current
# candidate.
CANCELLABLE = ("profile", "optimize", "llm_plan")

PANES: dict[str, type[StepPane]] = {
    "hardware": HardwarePane, "model": ModelPane, "requirements": RequirementsPane,
    "profile": ProfilePane, "checklist": ChecklistPane, "tree": TreePane, "optimize": OptimizePane,
    "results": ResultsPane, "report": ReportPane,
}

EAGER_PANES = ("hardware", "model")
"""The panes on the first screen and in the start-up's first steps; the others mount just after the first frame."""

Command = tuple[str, str, Callable[[], object]]
Connect = Callable[[Callable[[EngineDiedError], None]], EngineClient]
"""Starts an engine and returns its connected client; its argument is what to call if the engine dies."""
PaneT = TypeVar("PaneT", bound=StepPane)


class StepCommands(Provider):
    """Command palette entries: 'Go to: <step>' for every step, and each step's action."""

    def _commands(self) -> list[Command]:
        app = self.app
        return app.palette_commands() if isinstance(app, PlannerApp) else []

    async def discover(self) -> Hits:
        """Every command, before anything is typed."""
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Commands whose title fuzzily matches the query."""
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class MainScreen(Screen):
    """Header, the step list beside the current step's pane, and the footer with the keys."""

    def __init__(self) -> None:
        super().__init__()
        self.panes: dict[str, StepPane] = {}  # every step's pane, mounted or about to be (see EAGER_PANES)

    def compose(self) -> ComposeResult:
        """Header, step list and step panes, footer."""
        yield Header()
        with Horizontal(id="main"):
            yield StepList(id="steps")
            with ContentSwitcher(initial="hardware", id="panes"):
                for step in STEPS:
                    pane = PANES[step.id](id=step.id)
                    self.panes[step.id] = pane
                    if step.id in EAGER_PANES:
                        yield pane
                    else:
                        # Composed just after the first frame, hidden: the first screen does not wait for them.
                        pane.display = False
                        yield Lazy(pane)
        yield Footer()


class PlannerApp(App[int]):
    """Walks the method step by step on one `PlanSession`; long work runs in thread workers."""

    CSS_PATH = "app.tcss"
    TITLE = "planner"
    COMMANDS = App.COMMANDS | {StepCommands}
    BINDINGS = [
        Binding("n", "next_step", "Next"),
        Binding("p", "prev_step", "Prev"),
        Binding("r", "run", "Run"),
        Binding("r", "run_llm", "Run LLM plan"),  # in place of the one above on step 7 when an LLM is loaded
        Binding("c", "cancel_run", "Cancel"),
        Binding("s", "save", "Save"),
        Binding("o", "sort", "Sort"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "request_quit", "Quit"),
        Binding("right_square_bracket", "switch_tab(1)", "Next tab", show=False),
        Binding("left_square_bracket", "switch_tab(-1)", "Previous tab", show=False),
        Binding("escape", "focus_steps", "Step list", show=False),
        # Reached when neither the focused widget nor its containers use these keys (a button, a tick box).
        Binding("home", "scroll_step('home')", "Top of the step", show=False),
        Binding("end", "scroll_step('end')", "End of the step", show=False),
        Binding("pageup", "scroll_step('pageup')", "Page up", show=False),
        Binding("pagedown", "scroll_step('pagedown')", "Page down", show=False),
        *(Binding(str(s.number), f"goto('{s.id}')", s.title, show=False) for s in STEPS),
    ]

    def __init__(self, *, model: str | None = None, input_shape: str | None = None, trust_code: bool = False,
                 inputs: list[str] | None = None, connect: Connect | None = None, out_dir: Path | None = None,
                 autostart: bool = True, log_path: str | None = None, host: str | None = None) -> None:
        """`connect(on_death)` starts an engine and returns its connected client (the tests serve recorded
        sessions from a thread); by default the app starts `planner engine` as a subprocess and is its client.
        `host` names the machine the engine runs on when it is not this one (`planner --host`): the header says so.
        `out_dir` is the folder for the runs of the first model loaded; a model loaded after it gets the session's
        default folder, named after it (see `model_loaded`)."""
        super().__init__()
        self.host = host
        self.bridge = EventBridge()
        self._connect = connect
        self._engine_lock = threading.Lock()
        self.session = self._new_session()
        self.initial_model = model or DEFAULT_MODEL
        self.initial_shape = input_shape
        self.initial_inputs = list(inputs) if inputs else None
        self.initial_trust = trust_code
        self.out_dir = out_dir
        self.autostart = autostart
        self.log_path = log_path
        # Queries go to this screen, not `self.screen`: a job may finish while a modal is on top.
        self.main = MainScreen()
        self.job: Job | None = None
        self.current = STEPS[0].id
        self.visited: set[str] = {self.current}
        self._initial_load_done = False
        self._model_loaded_before = False

    def get_default_screen(self) -> Screen:
        """The main screen: the step list and panes (help, palette and dialogs open over it)."""
        return self.main

    def on_ready(self) -> None:
        """The main screen is up: show step 1 and start detecting the hardware."""
        self.pane("model", ModelPane).prefill(self.initial_model, self.initial_shape, self.initial_trust,
                                              self.initial_inputs)
        self.goto(self.current)
        self.main.query_one(StepList).focus()
        self.check_size(self.size.width, self.size.height)
        if self.autostart:
            self.pane("hardware", HardwarePane).detect()
        else:
            resume_gc()  # no start-up load to wait for

    def on_resize(self, event: events.Resize) -> None:
        """Below 80×24 the layout cannot fit: cover it with the too-small message."""
        self.check_size(event.size.width, event.size.height)

    def check_size(self, width: int, height: int) -> None:
        """Show, update or remove the too-small screen for the terminal's size."""
        cover_if_too_small(self, width, height)

    # -- panes and steps ---------------------------------------------------------------------
    def pane(self, step_id: str, kind: type[PaneT] = StepPane) -> PaneT:  # type: ignore[assignment]
        """The pane of a step (composed, or about to be: a pane mounts just after the first frame)."""
        pane = self.main.panes.get(step_id)
        if not isinstance(pane, kind):
            return self.main.query_one(f"#{step_id}", kind)
        return pane

    @property
    def current_pane(self) -> StepPane:
        """The pane on screen."""
        return self.pane(self.current)

    def goto(self, step_id: str) -> None:
        """Show a step (once its pane has mounted: a key pressed in the first instant waits a frame or two)."""
        if not self.pane(step_id).is_mounted:
            self.set_timer(0.02, partial(self.goto, step_id))
            return
        step = STEP_BY_ID[step_id]
        self.current = step_id
        self.visited.add(step_id)
        self.main.query_one("#panes", ContentSwitcher).current = step_id
        where = f" · on {self.host}" if self.host else ""
        self.sub_title = f"step {step.number}/9 · {step.title}{where}"
        pane = self.current_pane
        pane.sync()
        self._show_steps()
        self.refresh_bindings()
        focused = self.main.focused
        if focused is None or (focused is not self.main.query_one(StepList) and pane not in focused.ancestors):
            self.main.query_one(StepList).focus()

    def done_steps(self) -> set[str]:
        """The steps the session says are done (and that the user has seen, for steps that only show)."""
        done = self.session.done_steps()
        return {step.id for step in STEPS
                if done.issuperset(step.shows) and (not step.seen or step.id in self.visited)}

    @property
    def optimized(self) -> bool:
        """Whether the session holds an up-to-date optimize run."""
        return self.session.is_done(SessionStep.OPTIMIZE)

    @property
    def saved_to(self) -> Path | None:
        """The folder of the last save, while the session says the saved report is up to date."""
        return self.session.out_dir if self.session.is_done(SessionStep.REPORT) else None

    def _show_steps(self) -> None:
        self.main.query_one(StepList).show_state(current=self.current, done=self.done_steps())

    def session_changed(self) -> None:
        """Every pane re-reads the session; the sidebar and footer update."""
        for step in STEPS:
            pane: StepPane = self.pane(step.id)
            if pane.is_mounted:  # a pane still to mount reads the session when it does
                pane.sync()
        self._show_steps()
        self.refresh_bindings()
        if self.job is None:
            resume_gc()  # the start-up stopped early (detection failed): collect as usual from now on

    def model_loaded(self) -> None:
        """A model was loaded (another one, or the same with other inputs): the session discarded what was
        measured for the one before, so every pane forgets what its own runs said about it (`forget_runs`)."""
        if self._model_loaded_before:
            # The folder given at start holds the first model's runs: another model (or other inputs, or what a
            # restarted engine measures) must not write its results over them, so it takes the session's default
            # folder, named after it (the Report step shows it).
            self.out_dir = None
        model, llm = self.session.model, self.session.state.llm
        self._model_loaded_before = self._model_loaded_before or model is not None or llm is not None
        name = (model.source or model.name) if model is not None else llm.source if llm is not None else "the model"
        for step in STEPS:
            pane: StepPane = self.pane(step.id)
            if pane.is_mounted:  # a pane still to mount has said nothing yet
                pane.forget_runs(name)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """A click (or Enter) on a step in the sidebar."""
        if isinstance(event.option_list, StepList) and event.option.id:
            self.goto(event.option.id)

    # -- jobs --------------------------------------------------------------------------------
    def job_title(self, job: str) -> str:
        """A job's name as people read it."""
        return JOB_TITLES.get(job, job or "The run")

    def begin_job(self, pane: StepPane, name: str) -> bool:
        """Claim the engine for a job; one at a time, so runs never compete for the cores."""
        if self.job is not None:
            how = " or press c to cancel it" if self.job.name in CANCELLABLE else ""
            self.notify(f"{self.job.title} is still running: wait for it{how}.",
                        title="Busy", severity="warning", timeout=4)
            return False
        self.job = Job(name, self.job_title(name), pane)
        self.bridge.attach(pane)
        self.refresh_bindings()
        return True

    def job_worker(self, worker: Worker) -> None:
        """Record the worker that runs the current job."""
        if self.job is not None:
            self.job.worker = worker

    def end_job(self, worker: Worker | None) -> None:
        """Release the engine if `worker` runs the current job (messages for other workers are ignored)."""
        if self.job is None or worker is None or self.job.worker is not worker:
            return
        self.job = None
        self.bridge.attach(None)
        self.refresh_bindings()
        if SessionStep.PLAN in self.session.stale_steps():
            self.requirements_changed()  # they changed while the job ran

    def startup_continue(self, finished: str) -> None:
        """On start: detect, then load the model, then measure the ceilings (quick, cached per machine).

        The model comes before the ceilings: on a machine measured for the first time the ceilings
        take seconds, and the model should not wait for what only the Profile step needs.
        """
        if not self.autostart:
            return
        if finished == "detect" and not self._initial_load_done:
            self._initial_load_done = True
            if self.session.model is None:
                self.pane("model", ModelPane).run_step()
                if self.job is not None:
                    return  # the load's end (or failure) continues here
            finished = "load"
        if finished == "load":
            resume_gc()  # the start-up's model load has ended (see planner.tui.startup)
        if finished == "load" and self.session.ceilings is None and self.job is None:
            self.pane("hardware", HardwarePane).measure(quick=True)

    def requirements_changed(self) -> None:
        """New requirements or target: re-plan if the session says the plan is out of date.

        While a job runs the plan waits for it (`end_job` comes back here): deciding reads the baseline.
        """
        if SessionStep.PLAN not in self.session.stale_steps() or self.job is not None:
            self._show_steps()
            return
        try:
            # Deciding is pure computation over the baseline (milliseconds): no worker needed.
            self.session.decide()
        except PlannerError as exc:
            self.notify(exc.problem, title="Re-planning failed", severity="error", timeout=8)
        self.session_changed()

    def stop_running_job(self) -> None:
        """Stop the job in progress: the engine cancels it and ends its measuring processes."""
        self.session.cancel.cancel(now=True)

    # -- the engine --------------------------------------------------------------------------
    def _new_session(self) -> RemoteSession:
        """A session with no engine yet: its first step (or the start-up's detection) starts one."""
        session = RemoteSession(None, on_event=self.bridge)
        session.connector = self.connect_engine
        return session

    def connect_engine(self) -> EngineClient:
        """Start the engine (once; again after it died) and shake hands; called from a worker thread."""
        with self._engine_lock:
            client = self.session.client
            if client is not None and client.alive:
                return client
            died = lambda death: self.call_from_thread(self.engine_died, death)  # noqa: E731
            if self._connect is not None:
                client = self._connect(died)
            else:
                client = EngineClient.spawn(log_path=Path(self.log_path) if self.log_path else None, on_death=died)
            self.session.attach(client)
            return client

    def engine_died(self, death: EngineDiedError) -> None:
        """The engine process ended on its own: say which step ran and what was kept, and offer a restart."""
        if not self.is_running:
            return
        running = self.job.title if self.job is not None else None
        self.push_screen(EngineStopped(death.problem, running, kept_text(self.session.out_dir)), self._restart_answer)
        # The failed step's own toast says the same and would cover the dialog's buttons on a small screen.
        self.call_after_refresh(self.clear_notifications)

    def _restart_answer(self, restart: bool | None) -> None:
        if not restart:
            return
        self.session = self._new_session()
        self._initial_load_done = False
        self.autostart = True
        self.model_loaded()  # the new engine holds no model: what the panes' runs said was about the old one's
        self.session_changed()
        self.pane("hardware", HardwarePane).detect()

    def on_unmount(self) -> None:
        """Shut the engine down with the app (SIGTERM, then SIGKILL, if it does not stop in a few seconds)."""
        client = self.session.client
        if client is not None:
            threading.Thread(target=client.close, name="engine-close", daemon=False).start()

    # -- actions -----------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Show each key only where it does something; behind the too-small message only q works."""
        if isinstance(self.screen, TooSmallScreen):
            return action in ("request_quit", "quit")
        if action in ("run", "run_llm"):
            llm_run = self.current == "optimize" and self.session.state.llm is not None
            return llm_run if action == "run_llm" else self.current_pane.RUN_LABEL is not None and not llm_run
        if action == "cancel_run":
            return self.job is not None and self.job.name in CANCELLABLE
        if action == "sort":
            return self.current == "results"
        return True

    def action_goto(self, step_id: str) -> None:
        """Go to a step (keys 1–9)."""
        self.goto(step_id)

    def action_next_step(self) -> None:
        """Go to the next step."""
        index = [s.id for s in STEPS].index(self.current)
        self.goto(STEPS[min(index + 1, len(STEPS) - 1)].id)

    def action_prev_step(self) -> None:
        """Go to the previous step."""
        index = [s.id for s in STEPS].index(self.current)
        self.goto(STEPS[max(index - 1, 0)].id)

    def action_run(self) -> None:
        """Run the current step's action."""
        self.current_pane.run_step()

    def action_run_llm(self) -> None:
        """Run the loaded decoder LLM's plan (step 7's action when one is loaded)."""
        self.current_pane.run_step()

    def run_llm_plan(self) -> None:
        """Go to step 7 and run the loaded language model's plan (for the command palette); without one loaded, say
        how to load it."""
        if self.session.state.llm is None:
            self.notify("No language model is loaded: load its folder in step 2 first.", title="LLM plan", timeout=5)
            return
        self.run_on("optimize")

    def run_on(self, step_id: str) -> None:
        """Go to a step and run its action (for the command palette)."""
        self.goto(step_id)
        self.current_pane.run_step()

    def action_cancel_run(self) -> None:
        """Cancel the running profile (now) or optimize (after its current candidate)."""
        if self.job is None or not self.job.pane.cancel_step():
            self.notify("Nothing to cancel: only Profile, Optimize and LLM plan runs can be cancelled.", timeout=3)

    def action_save(self) -> None:
        """Save results.json and report.md (from any step); with nothing to save yet, say what must happen first."""
        # Every screen tells the user s saves, so s always answers, even when it cannot save yet.
        held = self.session.state.llm
        if held is not None:
            # The LLM plan writes results.json and report.md as it runs: s shows them.
            self.goto("report")
            self.notify("The LLM plan wrote results.json and its report as it ran: it is shown here." if
                        held.report_path else "Nothing to save yet: the LLM plan writes its report as it runs "
                        "(step 7, r).", title="Save", timeout=5)
            return
        if self.session.baseline is None:
            first = ("load a model (step 2), then profile it (step 4)" if self.session.model is None
                     else "profile the model first (step 4)")
            self.notify(f"Nothing to save yet: {first}.", title="Save", timeout=5)
            return
        self.run_on("report")

    def action_sort(self) -> None:
        """Sort the results table by the next column."""
        self.pane("results", ResultsPane).sort_next()

    def sort_results(self) -> None:
        """Show the results and sort them by the next column (for the command palette)."""
        self.goto("results")
        self.action_sort()

    def action_switch_tab(self, step: int) -> None:
        """Show the next (or previous) tab of the current step's tabbed view, if it has one."""
        tabs = self.current_pane.query(TabbedContent)
        if not tabs:
            return
        content = tabs.first()
        ids = [pane.id for pane in content.query(TabPane) if pane.id]
        if content.active in ids:
            content.active = ids[(ids.index(content.active) + step) % len(ids)]

    def action_scroll_step(self, how: str) -> None:
        """Scroll the step on screen: its largest part that has more than fits (home, end, pageup, pagedown)."""
        shown = [w for w in self.current_pane.query("*") if w.region.area and w.max_scroll_y > 0
                 and w.allow_vertical_scroll]
        if not shown:
            return
        target = max(shown, key=lambda w: w.region.area)
        {"home": target.scroll_home, "end": target.scroll_end, "pageup": target.scroll_page_up,
         "pagedown": target.scroll_page_down}[how](animate=False)

    def action_help(self) -> None:
        """Open the help screen."""
        self.push_screen(HelpScreen(self.log_path))

    def action_focus_steps(self) -> None:
        """Return focus to the step list."""
        self.main.query_one(StepList).focus()

    def action_request_quit(self) -> None:
        """Quit; while a job runs, ask first (behind the too-small message, by a second q)."""
        if isinstance(self.screen, TooSmallScreen):
            self.screen.quit_pressed(self.job.title if self.job is not None else None)
            return
        if self.job is None:
            self.exit(0)
            return
        self.push_screen(ConfirmQuit(self.job.title), self._quit_answer)

    async def action_quit(self) -> None:
        """Ctrl+Q: the same as q (asks first while something runs)."""
        self.action_request_quit()

    def _quit_answer(self, quit_now: bool | None) -> None:
        if quit_now:
            self.stop_running_job()
            self.exit(0)

    def palette_commands(self) -> list[Command]:
        """The command palette's entries: each step, and the actions."""
        commands: list[Command] = [(f"Go to: {s.title}", f"step {s.number}", partial(self.goto, s.id))
                                   for s in STEPS]
        for step_id, title in (("hardware", "Measure ceilings"), ("model", "Load model"),
                               ("requirements", "Apply requirements"), ("profile", "Run profile"),
                               ("checklist", "Continue with the checklist answers"),
                               ("optimize", "Run optimize"), ("report", "Save report")):
            step = STEP_BY_ID[step_id]
            commands.append((title, f"step {step.number}: {step.title}", partial(self.run_on, step_id)))
        commands.append(("Run the LLM plan", "step 7, for a language model's folder loaded in step 2",
                         self.run_llm_plan))
        commands.append(("Cancel run", "stop the profile, or the optimize or LLM plan after the current candidate",
                         self.action_cancel_run))
        commands.append(("Sort results", "step 8: sort the table by the next column", self.sort_results))
        commands.append(("Help", "keys and steps", self.action_help))
        return commands


def run_tui(*, model: str | None, input_shape: str | None, trust_code: bool,
            inputs: list[str] | None = None, engine: EngineClient | None = None,
            log_path: Path | None = None, connect: Connect | None = None, host: str | None = None) -> int:
    """Open the planner TUI on a model (None: the default demo); returns the exit status.

    `engine` is one started already (`EngineClient.start`, its output going to `log_path`): its start-up then ran
    while this process imported Textual. A restart after the engine died starts a fresh one.
    """
    log_path = log_path or default_log_path()
    early = [engine] if engine is not None else []

    def start_here(on_death: Callable[[EngineDiedError], None]) -> EngineClient:
        if early:
            client = early.pop()
            client.on_death = on_death
            client.connect(log_path=log_path)
            return client
        return EngineClient.spawn(log_path=log_path, on_death=on_death)

    with stray_output_to(log_path) as redirected:
        app = PlannerApp(model=model, input_shape=input_shape, trust_code=trust_code, inputs=inputs,
                         connect=connect or start_here, log_path=str(log_path) if redirected else None, host=host)
        result = app.run()
    if log_path.exists():
        if log_path.stat().st_size:
            print(f"planner: what the measuring processes printed is in {log_path}", file=sys.stderr)
        else:
            log_path.unlink()
    return 0 if result is None else int(result)

"""Step 7, Optimize: choose plugins, measure their candidates in a worker with progress, cancel between candidates;
for a decoder LLM folder, run its plan (planner.tui.screens.llm) and list its candidates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Label, RichLog, SelectionList, Static
from textual.widgets.selection_list import Selection

from planner.results.counts import CandidateCounts
from planner.tui.screens.base import StepPane
from planner.tui.screens.llm import LLM_PHASES, LlmRun, LlmSettings, SettingsError, candidate_lines, ended_text
from planner.tui.widgets.notice import Notice
from planner.tui.widgets.progress import OPTIMIZE_PHASES, RunProgress, log_events, new_log
from planner.tui.widgets.toggles import TickList

if TYPE_CHECKING:
    from planner.results.decisions import PlanRecord

_UNSET = object()
PROMPT_WIDTH = 56
NO_PLAN = "Answer the checklist (step 5) first: the plan picks the plugins."


TARGET_WORDS = {"cpu": "CPU", "edge": "edge board", "nvidia": "NVIDIA GPU", "any": "any device"}
"""A plugin's target as a reader says it."""


def plugin_title(row: dict) -> str:
    """The plugin in plain words, as it declared itself ('ONNX Runtime INT8'); its name where it declared none."""
    return str(row.get("title") or row["plugin"])


def plugin_prompt(row: dict) -> Text:
    """One plugin line: its title, and either 'planned' or why it cannot run here (with the device it is for).

    The baseline's plugin (the session marks its row) is not offered: the profile measured it. One line per
    plugin, never cut: a reason too long for the line gives way to a short "can't run here", and the lines
    under the list give every reason while the plugin is highlighted.
    """
    text = Text()
    text.append(plugin_title(row), style="bold")
    if row.get("baseline"):
        text.append(" — the baseline, measured in step 4", style="dim")
    elif row["reasons"]:
        # The longest that fits: the device it is for and the first reason, down to the bare word.
        device = f" ({TARGET_WORDS.get(row['target'], row['target'])})"
        room = PROMPT_WIDTH - len(text)
        why = next((w for w in (f"{device} — unavailable: {row['reasons'][0]}", f"{device} — unavailable (see below)",
                                " — unavailable (see below)", f"{device} — unavailable") if len(w) <= room),
                   " — unavailable")
        text.append(why, style="dim")
    elif row["planned"]:
        text.append(" — planned")
    return text


def preselection_reason(plan: PlanRecord) -> str:
    """Why the plan preselected what it did, when the requirements are already met (the README's rule: defaults
    you never stated do not cut the search, and retraining waits until a requirement you state is missed); ''
    when they are missed or not judged, where the plan's every step is preselected."""
    requirements = plan.requirements
    if plan.requirements_met is not True or requirements is None:
        return ""
    if not requirements.stated:
        return ("Defaults met, none stated by you: runtime switches and post-training INT8 (kept if outputs "
                "match) are preselected; retraining waits for a requirement you state.")
    if not requirements.speed_stated:
        return ("Your requirements are met and name no speed: runtime switches and post-training INT8 are "
                "preselected, to find the fastest within them; retraining waits.")
    return ("Your speed target is already met: only the quick checks are preselected; lower precisions and "
            "retraining wait until a requirement is missed.")


def plugin_detail(row: dict) -> Text:
    """The highlighted plugin's summary and every reason it cannot run."""
    text = Text()
    text.append(f"{plugin_title(row)}: ", style="bold")
    text.append(row["summary"] or "no summary")
    for reason in row["reasons"]:
        text.append(f"\n✗ {reason}")
    return text


class OptimizePane(StepPane):
    """Runs `PlanSession.optimize` on the chosen plugins; the Cancel button stops after the current candidate."""

    STEP_ID = "optimize"
    RUN_LABEL = "Run the chosen plugins"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = _UNSET
        self._rows: dict[str, dict] = {}

    def compose(self) -> ComposeResult:
        """Plugin list, its detail, run controls, progress and log."""
        yield Label(NO_PLAN, id="intro", classes="hint")
        yield Label("", id="why", classes="hint")
        yield TickList(id="plugins", compact=True)
        yield Static("", id="plugin-detail")
        with Horizontal(classes="toolbar"):
            yield Button("Run (r)", id="run", compact=True)
            yield Button("Cancel (c)", id="cancel", compact=True, disabled=True)
            yield Label("", id="status", classes="status")
        yield RunProgress(phases=OPTIMIZE_PHASES, id="progress")
        yield Notice(id="notice")
        with VerticalScroll(id="llm-box"):
            yield Static("", id="llm-candidates")
        yield new_log(id="log")

    # -- the plugin list ---------------------------------------------------------------------
    def sync(self) -> None:
        """List the plugins once a plan exists (and again when the plan changes); for a decoder LLM, say what its
        plan will do."""
        llm = self.session.llm
        self.set_class(llm is not None, "-llm")
        if llm is not None:
            self._shown = _UNSET  # a model loaded after it lists its plugins afresh
            self.query_one("#why", Label).display = False
            settings = self.screen.query_one(LlmSettings).describe()
            self.query_one("#intro", Label).update(
                f"r runs {llm.name}'s plan: the read roof, then each runtime's candidates timed token by token "
                f"against the original; {settings} (step 2).")
            self.query_one("#run", Button).label = "Run the LLM plan (r)"
            return
        self.query_one("#run", Button).label = "Run (r)"
        plan = self.session.plan
        if plan == self._shown:
            return
        self._shown = plan
        if plan is None:
            self.query_one(SelectionList).clear_options()
            self._rows = {}
            self.query_one("#intro", Label).update(NO_PLAN)
            self._show_why("")
            self.query_one("#plugin-detail", Static).update("")
            return
        self.query_one("#intro", Label).update("Checking which plugins can run here…")
        self._plugin_status()

    @work(thread=True, exclusive=True, exit_on_error=False, name="plugins", group="plugins")
    def _plugin_status(self) -> None:
        # Discovering plugins imports their runtimes (ONNX Runtime, OpenVINO…): off the UI thread.
        self.report("plugins", self.session.plugin_status())

    def _show_plugins(self, rows: list[dict]) -> None:
        self._rows = {r["plugin"]: r for r in rows}
        options = []
        # Planned first (in plan order), then the rest that can run, then the unavailable.
        order = {name: i for i, name in enumerate(self.session.planned_plugins())}
        rows = sorted(rows, key=lambda r: (r["plugin"] not in order, bool(r["reasons"]) or bool(r.get("baseline")),
                                           order.get(r["plugin"], 0), r["plugin"]))
        for row in rows:
            unavailable = bool(row["reasons"]) or bool(row.get("baseline"))
            # A plugin that cannot run stays reachable (not disabled), so that highlighting it shows why;
            # ticking it is undone (`_toggled`). The baseline's row says all there is in its line.
            options.append(Selection(plugin_prompt(row), row["plugin"], initial_state=row["planned"]
                                     and not unavailable, disabled=bool(row.get("baseline"))))
        plugins = self.query_one(SelectionList)
        plugins.clear_options()
        plugins.add_options(options)
        if options:
            plugins.highlighted = 0
        planned = sum(1 for r in rows if r["planned"] and not r["reasons"])
        plan = self.session.plan
        self.query_one("#intro", Label).update(
            f"{planned} planned plugins preselected (space toggles). Run (r) measures their candidates "
            f"in {self.mode_text()}.")
        self._show_why(preselection_reason(plan) if plan is not None else "")
        if options:
            self.query_one("#plugin-detail", Static).update(plugin_detail(rows[0]))

    def _show_why(self, why: str) -> None:
        """Why the plan preselected these plugins, under the intro; no line when there is nothing to explain."""
        label = self.query_one("#why", Label)
        label.update(why)
        # Once a run starts its log needs the rows: why these plugins were preselected has been read by then.
        label.display = bool(why) and not self.has_class("-ran")

    @on(SelectionList.SelectionHighlighted)
    def _highlighted(self, event: SelectionList.SelectionHighlighted) -> None:
        row = self._rows.get(event.selection.value)
        if row is not None:
            self.query_one("#plugin-detail", Static).update(plugin_detail(row))

    @on(SelectionList.SelectionToggled)
    def _toggled(self, event: SelectionList.SelectionToggled) -> None:
        row = self._rows.get(event.selection.value)
        if row is not None and row["reasons"]:
            self.query_one(SelectionList).deselect(event.selection.value)
            self.query_one("#status", Label).update("can't run here (see below)")

    def forget_runs(self, model: str) -> None:
        """A new model: the last run's line, status and log were about the candidates of the one before."""
        self.remove_class("-ran")
        self.query_one("#llm-candidates", Static).update("")
        self._show_why("")  # the new model's plan says its own, once there is one
        self.query_one("#cancel", Button).disabled = True
        self.query_one(RunProgress).reset(f"not run yet for {model}")
        self.query_one("#status", Label).update("")
        self.query_one(Notice).clear()
        self.query_one(RichLog).clear()

    # -- running -----------------------------------------------------------------------------
    def run_step(self) -> None:
        """Measure the candidates of the ticked plugins (for a decoder LLM: run its plan)."""
        if self.session.llm is not None:
            self._run_llm()
            return
        if self.session.plan is None:
            self.query_one(Notice).show_error("there is no plan yet", "answer the checklist (step 5) and "
                                              "press Continue")
            return
        chosen = list(self.query_one(SelectionList).selected)
        if not chosen:
            self.query_one(Notice).show_error("no plugin is ticked", "tick at least one plugin (space)")
            return
        if self.start("optimize", self._optimize, chosen):
            self.add_class("-ran")  # the log takes most of the step's height from now on
            self.query_one("#why", Label).display = False
            self.query_one(Notice).clear()
            self.query_one("#cancel", Button).disabled = False
            self.query_one("#status", Label).update("running…")
            titles = ", ".join(plugin_title(self._rows.get(name, {"plugin": name})) for name in chosen)
            self.query_one(RunProgress).phases = OPTIMIZE_PHASES
            self.query_one(RunProgress).begin(f"building candidates: {titles}")
            self.query_one(RichLog).write(Text(f"▶ optimize ({self.mode_text()}): {titles}", style="bold"))

    def _run_llm(self) -> None:
        """Run the loaded LLM's plan with the Model step's settings."""
        llm = self.session.llm
        assert llm is not None
        try:
            run = self.screen.query_one(LlmSettings).values()
        except SettingsError as exc:
            self.query_one(Notice).show_error(str(exc), "fix it in step 2 (press 2), then press 7 and r again")
            return
        if self.start("llm_plan", self._plan_llm, run):
            self.add_class("-ran")
            self.query_one(Notice).clear()
            self.query_one("#cancel", Button).disabled = False
            self.query_one("#status", Label).update("running…")
            self.query_one("#llm-candidates", Static).update("")
            progress = self.query_one(RunProgress)
            progress.phases = LLM_PHASES
            progress.begin(f"planning {llm.name}")
            gguf = f"; llama.cpp on {run.gguf}" if run.gguf else ""
            self.query_one(RichLog).write(Text(
                f"▶ LLM plan of {llm.name} ({'quick' if run.quick else 'full'}): prompts of "
                f"{', '.join(str(n) for n in run.prompt_lengths)} tokens, {run.new_tokens} new tokens per call{gguf}",
                style="bold"))

    @work(thread=True, exclusive=True, exit_on_error=False, name="llm_plan", group="optimize")
    def _plan_llm(self, run: LlmRun) -> None:
        planned = self.session.plan_llm(prompt_lengths=run.prompt_lengths, new_tokens=run.new_tokens, quick=run.quick,
                                        gguf=run.gguf, out=self.planner.out_dir)
        self.report("llm_plan", planned)

    def mode_text(self) -> str:
        """Quick or full, as the profile ran (the candidates are timed the way the baseline was)."""
        return f"{'quick' if self.session.quick else 'full'} mode, as the profile in step 4"

    def cancel_step(self) -> bool:
        """Ask the engine to stop after the candidate being measured (an LLM plan then writes what it measured)."""
        if self.planner.job is None or self.planner.job.name not in ("optimize", "llm_plan"):
            return False
        self.session.cancel.cancel()
        self.query_one("#cancel", Button).disabled = True
        self.query_one("#status", Label).update("cancelling after the current candidate…")
        self.query_one(RichLog).write(Text("! cancel requested: the current candidate finishes first",
                                           style="bold"))
        return True

    @on(Button.Pressed, "#run")
    def _run_pressed(self) -> None:
        self.run_step()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.cancel_step()

    @work(thread=True, exclusive=True, exit_on_error=False, name="optimize", group="optimize")
    def _optimize(self, plugins: list[str]) -> None:
        if self.session.out_dir is None:
            # Candidates write artifacts (ONNX files, engines) into the output folder.
            self.session.set_out_dir(self.planner.out_dir)
        # The session replaces an earlier run's candidates (and its warnings) with this run's.
        self.session.optimize(plugins=plugins)
        self.report("optimize", {"counts": CandidateCounts.of(self.session.results),
                                 "cancelled": self.session.cancel.cancelled, "out_dir": str(self.session.out_dir)})

    # -- results -----------------------------------------------------------------------------
    def engine_events(self, events: list) -> None:
        """Per-candidate progress and the live log."""
        self.query_one(RunProgress).apply(events)
        log_events(self.query_one(RichLog), events)

    def job_done(self, job: str, result: Any) -> None:
        """Show the plugin list, or how the run ended."""
        if job == "plugins":
            if self.session.plan is not None:  # else the plan it was asked for is gone (another model loaded)
                self._show_plugins(result)
            return
        if job == "llm_plan":
            self._llm_done(result)
            return
        self.query_one("#cancel", Button).disabled = True
        how = "cancelled" if result["cancelled"] else "done"
        message = f"{how}: {result['counts'].words()}; results in {result['out_dir']}"
        self.query_one(RunProgress).end(message, ok=not result["cancelled"])
        self.query_one("#status", Label).update(how)
        self.query_one(RichLog).write(Text(f"✓ {message}", style="bold"))

    def _llm_done(self, planned: Any) -> None:
        """The LLM plan's candidates as lines, and how it ended."""
        from planner.codec import from_data
        from planner.llm.results import LlmPlan

        self.query_one("#cancel", Button).disabled = True
        plan = from_data(planned.plan, LlmPlan)  # the typed record, once, at the engine's answer
        message = ended_text(plan, planned.out_dir)
        self.query_one("#llm-candidates", Static).update(candidate_lines(plan))
        self.query_one(RunProgress).end(message, ok=planned.status == "ok")
        self.query_one("#status", Label).update(message.split(":")[0])
        self.query_one(RichLog).write(Text(f"{'✓' if planned.status == 'ok' else '!'} {message}", style="bold"))

    def job_failed(self, job: str, error: BaseException) -> None:
        """Say the run stopped, in place and in the log."""
        if job in ("optimize", "llm_plan"):
            self.query_one("#cancel", Button).disabled = True
            self.query_one(RunProgress).end(f"{'the LLM plan' if job == 'llm_plan' else 'optimize'} failed", ok=False)
            self.query_one("#status", Label).update("failed")
            self.query_one(RichLog).write(Text(f"✗ {error}", style="bold"))
        super().job_failed(job, error)

"""Step 9, Report: write results.json and report.md to a folder, and preview the report (a decoder LLM's plan writes
its own: the preview reads it from the plan's folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import RenderableType
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Input, Label, Static

from planner.errors import PlannerError
from planner.pipeline.outdir import default_out_dir
from planner.pipeline.steps import Step as SessionStep
from planner.tui.screens.base import StepPane
from planner.tui.widgets.notice import Notice

NOT_SAVED_HINT = ("*Once the model is profiled, **s** (or Save) writes `results.json`, `report.md` and the hand-over "
                  "packages (`deploy/`) to the folder above, and the report appears here.*")
LLM_NOT_RUN_HINT = ("*A language model's plan writes `results.json`, `report.md` and its hand-over package (`deploy/`) "
                    "as it runs: press 7, then r, to run it, and its report appears here.*")


class ReportPreview(Static):
    """The saved report.md, drawn by Rich in one widget, as the Results step draws its tables (each table whole
    where it fits the pane, else one entry per row).

    Textual's Markdown widget built a widget per block and table cell: for a 700-line report that was thousands
    of widgets, and seconds of layout each time the step was shown or the pane resized.
    """

    def __init__(self, source: str, *, id: str | None = None) -> None:
        super().__init__(_drawn(source), id=id)
        self.source = source

    def show(self, source: str) -> None:
        """Replace what is drawn: a saved report, or the placeholder that says how to save one."""
        self.source = source
        self.update(_drawn(source))


def _drawn(markdown: str) -> RenderableType:
    """Report Markdown as Rich draws it in a pane (imported on first use: not needed to start the TUI)."""
    from planner.tui.widgets.markdown_tables import markdown_with_tables

    return markdown_with_tables(markdown)


class ReportPane(StepPane):
    """Save runs `PlanSession.finish` in a worker and previews the report.md it wrote."""

    DEFAULT_CSS = """
    ReportPane.-llm .form-row { display: none; }
    """

    STEP_ID = "report"
    RUN_LABEL = "Save the report"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._edited = False
        self._previewing = False
        self._hinting = True  # the status line says what s would do (not how the last save went)
        self._llm_report: str | None = ""  # the LLM plan's report previewed ("": none shown)

    def compose(self) -> ComposeResult:
        """Folder field, Save button, status and the report preview."""
        with Horizontal(classes="form-row"):
            yield Label("Folder", classes="short-label")
            yield Input(id="out-dir", compact=True)
            yield Button("Save (s)", id="save", compact=True)
        yield Notice(id="notice")
        yield Label("", id="saved", classes="status")
        with VerticalScroll(id="report-box"):
            yield ReportPreview(NOT_SAVED_HINT, id="report-md")

    def unsaved_text(self) -> str:
        """Why nothing saved is shown: no baseline to report yet for the loaded model, or results newer than the
        last save (what `s` answers says the same)."""
        model = self.session.model
        if model is None:
            return "Nothing to save yet: load a model (step 2), then profile it (step 4)."
        if self.session.baseline is None:
            return f"Nothing to save yet for {model.source or model.name}: profile it first (step 4), then press s."
        if SessionStep.REPORT not in self.session.stale_steps():
            return "Not saved yet: press s to save the results to the folder above."
        # A new run has a folder of its own (the field shows it); new requirements save over the same one.
        return "The results changed since the last save: press s to save them to the folder above."

    def forget_runs(self, model: str) -> None:
        """A new model: the report shown, and where it was saved, were the one before's."""
        self._previewing = False
        self._llm_report = ""
        self.query_one("#report-md", ReportPreview).show(NOT_SAVED_HINT)
        self._show_unsaved()
        self.query_one(Notice).clear()

    def sync(self) -> None:
        """Say whether there is anything to save, and show the folder the report will go to (unless the user has
        typed one)."""
        held = self.session.state.llm
        self.set_class(held is not None, "-llm")
        if held is not None:
            self._show_llm_report(held.report_path, held.plan_dir, held.status)
            return
        if self._llm_report != "":  # an LLM's report was shown: another model is loaded now
            self.forget_runs("")
        if self._previewing and not self.session.is_done(SessionStep.REPORT):
            # The session says the saved report is out of date (a new run or plan).
            self._previewing = False
            self.query_one("#report-md", ReportPreview).show(NOT_SAVED_HINT)
            self._show_unsaved()
        elif self._hinting:
            # What s would do, said before it is pressed, and again as it changes (a profile gives it something to
            # save); a failed save's "not saved" stays beside its error.
            self._show_unsaved()
        if self._edited:
            return
        value = str(self.default_folder())
        field = self.query_one("#out-dir", Input)
        if field.value != value:
            with self.prevent(Input.Changed):
                field.value = value

    def _show_llm_report(self, report: str | None, plan_dir: str | None, status: str) -> None:
        """The LLM plan's report.md, read from its folder (once per plan), or how to get one."""
        if report == self._llm_report:
            return
        self._llm_report = report
        self._hinting = False
        preview = self.query_one("#report-md", ReportPreview)
        saved = self.query_one("#saved", Label)
        path = Path(report) if report else None
        if path is None or not path.exists():
            preview.show(LLM_NOT_RUN_HINT)
            saved.update(f"The LLM plan wrote no report ({status}): see step 7's log." if plan_dir else
                         "Nothing saved yet: the LLM plan writes its report as it runs (step 7, r).")
            return
        preview.show(path.read_text(encoding="utf-8"))
        how = {"ok": "", "interrupted": " (cancelled: what was measured)", "failed": " (failed part way)"}
        saved.update(f"The LLM plan's report{how.get(status, '')}, from {plan_dir or path.parent}")

    def _show_unsaved(self) -> None:
        self.query_one("#saved", Label).update(self.unsaved_text())
        self._hinting = True

    def default_folder(self) -> Path:
        """Where the session writes: its folder once set, else the app's, else reports/<date>-<model>-<target>."""
        if self.session.out_dir is not None:
            return self.session.out_dir
        if self.planner.out_dir is not None:
            return self.planner.out_dir
        name = self.session.model.name if self.session.model is not None else "model"
        return default_out_dir(name, self.session.target or "auto")

    @on(Input.Changed, "#out-dir")
    def _typed(self) -> None:
        self._edited = True

    # -- saving ------------------------------------------------------------------------------
    def run_step(self) -> None:
        """Write results.json and report.md to the chosen folder."""
        if self.session.state.llm is not None:
            self.notify("The LLM plan wrote its report as it ran: it is shown here (or run it: 7, then r).",
                        title="Save", timeout=5)
            return
        if self.session.baseline is None:
            self.query_one(Notice).show_error("there is nothing to report yet",
                                              "run the Profile step first (press 4, then r)")
            return
        text = self.query_one("#out-dir", Input).value.strip()
        folder = Path(text).expanduser() if text else None
        if self.start("save", self._save, folder):
            self.query_one(Notice).clear()
            self.query_one("#saved", Label).update("writing…")
            self._hinting = False

    @on(Button.Pressed, "#save")
    @on(Input.Submitted, "#out-dir")
    def _save_pressed(self) -> None:
        self.run_step()

    @work(thread=True, exclusive=True, exit_on_error=False, name="save", group="save")
    def _save(self, folder: Path | None) -> None:
        # The report package is slow to import: not at start-up.
        from planner.report.files import REPORT_NAME
        from planner.report.markdown import EVIDENCE_NAME

        # An unwritable folder raises OutputDirError here, before anything is written; the folder
        # is created only now, when the user saves (opening the app or profiling creates nothing).
        out_dir = self.session.set_out_dir(folder)
        # A report already there (from this session or an earlier one) is replaced: say so.
        again = (out_dir / REPORT_NAME).exists()
        if SessionStep.OPTIMIZE in self.session.done_steps() | self.session.stale_steps():
            # As `planner plan` does: the packages beside the report (the session keeps those already written there
            # for these same results, and records why a package could not be written).
            self.session.deploy()
        outcome = self.session.finish(write_report=True)
        report = Path(outcome.report_path) if outcome.report_path else None
        markdown = report.read_text(encoding="utf-8") if report is not None and report.exists() else None
        evidence = report.with_name(EVIDENCE_NAME) if report is not None else None
        if markdown is not None and evidence is not None and evidence.exists():
            # The preview reads on: the decision, then the evidence report.md links to.
            markdown += "\n\n" + evidence.read_text(encoding="utf-8")
        packages = sorted({d.folder for d in self.session.results.deployments if d.folder})
        self.report("save", {"out_dir": Path(outcome.out_dir), "report": report, "markdown": markdown,
                             "overwrote": again, "packages": packages})

    def job_done(self, job: str, result: Any) -> None:
        """Show where the files went and preview the report."""
        out_dir: Path = result["out_dir"]
        # The outcome leads, so it reads whole even where the path wraps on a narrow screen.
        saved = "Saved again (overwrote the earlier save):" if result["overwrote"] else "Saved"
        if result["report"] is None:
            self.query_one("#saved", Label).update(f"{saved} {out_dir / 'results.json'} (no report: see warnings)")
        else:
            packages = result["packages"]
            beside = (f", results.json and deploy/ ({len(packages)} package{'s' if len(packages) != 1 else ''})"
                      if packages else " and results.json")
            self.query_one("#saved", Label).update(f"{saved} {result['report']}{beside}")
            self.query_one("#report-md", ReportPreview).show(result["markdown"] or "")
            self._previewing = True
        self._edited = False

    def job_failed(self, job: str, error: BaseException) -> None:
        """An unwritable folder (or a failed report) is shown under the folder field."""
        self.query_one("#saved", Label).update("not saved")
        if isinstance(error, PlannerError):
            self.query_one(Notice).show_exception(error)
            self.notify(error.problem, title="Save failed", severity="error", timeout=8)
        else:
            super().job_failed(job, error)

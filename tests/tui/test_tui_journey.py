"""A newcomer's journey through the TUI on the real engine, step by step in an 80x24 terminal (issue 38): profile,
optimize, save, optimize again and cancel, load another model, profile and optimize it, save. Each run's folder holds
one run whose results.json, report and deploy/ agree with each other and with what the screens said; after the switch
no screen shows the first model's name or numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Label, OptionList, RichLog, Select, Static
from tui_support import PlannerApp, run_app, screen_text, wait_for, wait_idle

from planner.advice import defaults_for
from planner.deploy.manifest import file_problems, read_manifest
from planner.report import fmt as report_fmt
from planner.results import RESULTS_NAME, PlanResults, names, read_results
from planner.results.counts import CandidateCounts
from planner.tui import formatting as fmt
from planner.tui.screens.confirm import ConfirmDiscard
from planner.tui.screens.report import ReportPreview
from planner.tui.screens.requirements import number_text
from planner.tui.screens.tree import TreePane
from planner.tui.steps import STEPS
from planner.tui.widgets.toggles import TickList

pytestmark = pytest.mark.slow

NOT_SAVED = "Not saved yet: press s to save the results to the folder above."


@dataclass(frozen=True)
class Folder:
    """What one run's folder holds, read with the planner's own readers."""

    results: PlanResults
    counts: str  # the candidate counts, as the TUI's lines word them
    packages: dict[str, str]  # deploy/<role> -> the label its manifest names
    report: str  # report.md, or "" when the run was not saved

    @classmethod
    def read(cls, folder: Path) -> Folder:
        """Read the folder, checking that deploy/ is exactly what results.json records and each package's files
        are the ones its manifest lists."""
        results = read_results(folder / RESULTS_NAME)
        manifests = {p.parent: read_manifest(p.parent) for p in folder.glob("deploy/*/manifest.json")}
        packages = {d.relative_to(folder).as_posix(): m["candidate"]["label"] for d, m in manifests.items()}
        assert packages == {d.folder: d.label for d in results.deployments if d.folder}
        assert {d.name: file_problems(d, m["files"]) for d, m in manifests.items()} == {d.name: [] for d in manifests}
        report = (folder / "report.md").read_text(encoding="utf-8") if (folder / "report.md").exists() else ""
        return cls(results, CandidateCounts.of(results).words(why=False), packages, report)

    def check_report(self) -> None:
        """The report says the status, counts, winner and p50 results.json holds, and names its packages."""
        results, report = self.results, self.report
        assert f"status **{results.status}**" in report and f"finished {results.finished}" in report
        assert f"**Candidates**: {CandidateCounts.of(results).words(noun=False)}" in report
        best = results.best
        assert best is not None and best.p50 is not None
        if best.is_reference:
            assert "**Decision**: keep the model as it is" in report
        else:
            assert f"**Decision**: deploy **{names.title(best)}**" in report
            assert f"**Measured gain**: p50 {report_fmt.ms(best.p50)}" in report
            assert self.packages.get("deploy/winner") == best.label and "`deploy/winner/`" in report


def said(app, where: str) -> str:
    """A step's log as one line of words (its lines wrap at the pane's width)."""
    return " ".join(" ".join(line.text for line in app.query_one(f"#{where}").query_one(RichLog).lines).split())


def column(table: DataTable, index: int) -> list[str]:
    """A table's column, as shown."""
    return [str(table.get_row_at(i)[index]).strip() for i in range(table.row_count)]


def unwrapped(text: str) -> str:
    """The text without its spaces: a path the log wrapped mid-name reads the same as the path."""
    return "".join(text.split())


def tree_of(folder: Path) -> dict[Path, bytes]:
    """Every file under a folder, with its bytes."""
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.worker  # the real engine: profiles and optimize runs measure in worker processes
def test_profile_optimize_rerun_cancel_switch_and_save_keep_every_folder_true_to_its_run(tmp_path, monkeypatch):
    """At 80x24, every step on demo:tiny: profiled, planned, optimized (ONNX Runtime's candidates alone, the cheapest
    plugin that gives a package) and saved; optimized again and cancelled; then demo:flat loaded over it, profiled,
    optimized (cancelled after its first candidate) and saved. About a minute on two idle cores: the first run's
    confirmation turns and the two profiles are most of it."""
    monkeypatch.chdir(tmp_path)  # the second model's default folder: reports/<date>-flat-cpu under here
    out = tmp_path / "out"
    app = PlannerApp(model="demo:tiny", out_dir=out)

    async def every_step(pilot) -> dict[str, str]:
        shown = {}
        for step in STEPS:
            await pilot.press(str(step.number))
            await pilot.pause()
            shown[step.id] = screen_text(app)
        return shown

    async def profile(pilot) -> None:
        await pilot.press("4", "r")
        await wait_for(pilot, lambda: app.session.baseline is not None, 300, "the baseline")
        await wait_idle(pilot)

    async def answer_checklist(pilot) -> None:
        await pilot.press("5")
        for select in app.query("#items Select").results(Select):
            select.value = "the model itself" if "the model itself" in str(select.prompt) else "no"
        await pilot.press("r")
        await wait_for(pilot, lambda: app.session.plan is not None, 30, "the plan")

    async def optimize(pilot, *, cancel: bool) -> str:
        """Run ONNX Runtime's candidates alone (cancelled once the first is measured); what the step said at the end."""
        await pilot.press("7")
        plugins = app.query_one(TickList)
        await wait_for(pilot, lambda: plugins.option_count > 0, 60, "the plugin list")
        await wait_idle(pilot)
        assert plugins.selected, "the planned plugins are preselected"
        plugins.deselect_all()
        plugins.select("cpu.onnxruntime")
        log = app.query_one("#optimize").query_one(RichLog)
        before = len(log.lines)
        await pilot.press("r")
        if cancel:
            await wait_for(pilot, lambda: any(" ok: " in f" {line.text}" for line in log.lines[before:]), 120,
                           "the first candidate")
            await pilot.press("c")
        await wait_for(pilot, lambda: app.job is None and "✓ " in said(app, "optimize").rpartition("▶")[2], 300,
                       "the optimize run's end")
        await wait_idle(pilot)
        return said(app, "optimize").rpartition("✓ ")[2]

    async def results_line(pilot) -> str:
        await pilot.press("8")
        await pilot.pause()
        return str(app.query_one("#sorted", Label).render())

    async def save(pilot) -> str:
        await pilot.press("9")
        await pilot.pause()
        assert str(app.query_one("#report #saved", Label).render()) == NOT_SAVED  # what s will do
        await pilot.press("s")
        await wait_for(pilot, lambda: app.job is None and str(app.query_one("#report #saved", Label).render())
                       .startswith("Saved"), 120, "the save")
        await wait_idle(pilot)
        report = app.query_one("#report-md", ReportPreview)
        await wait_for(pilot, lambda: "Summary" in (report.source or ""), 30, "the report preview")
        assert "✓ 9 Report" in screen_text(app)
        return str(app.query_one("#report #saved", Label).render())

    async def body(pilot):
        session = app.session
        # Start-up detects the hardware, measures the ceilings and loads the model, one after another.
        await wait_for(pilot, lambda: session.model is not None, 180, "the start-up load")
        await wait_idle(pilot)
        assert app.current == "hardware"
        text = screen_text(app)
        assert session.hw.cpu.model in text
        assert "Device class" in text and session.ceilings is not None

        # demo:tiny, every step.
        await pilot.press("2")
        assert "1,578" in screen_text(app)  # demo:tiny's parameter count, from LoadedModel.describe()
        await pilot.press("3")
        latency = app.query_one("#req-latency_ms", Input).value
        assert latency == number_text(defaults_for(session.hw.device_class).latency_ms)
        assert f"Latency (ms)   {latency}" in screen_text(app)

        await profile(pilot)
        assert "conv1" in column(app.query_one("#layers", DataTable), 0)
        assert session.baseline is not None
        tiny_p50 = fmt.ms(session.baseline.latency_ms.p50_ms)
        assert f"baseline p50 {tiny_p50}" in screen_text(app)  # so the check after the switch can fail

        await pilot.press("5")
        evidence = [str(w.render()) for w in app.query("#items Static")]
        assert any("evidence: " + session.answers[0].evidence[:20] in e for e in evidence)
        open_items = {a.id for a in session.answers if str(a.status) == "ask-user"}
        await answer_checklist(pilot)
        await pilot.pause(0.2)
        assert app.current == "tree"
        assert {a.id: a.status for a in session.answers if a.id in open_items} == dict.fromkeys(open_items, "user")
        tree = app.query_one(TreePane).query_one(OptionList)
        # Each node's first line, after the tree's guides: ✓ where the walk visited it.
        firsts = [tree.get_option_at_index(i).prompt.plain.split("\n")[0].lstrip("│├└─ ")
                  for i in range(tree.option_count)]
        assert sum(1 for line in firsts if line.startswith("✓")) == len(session.path.visited)
        tree.focus()
        await pilot.press("down")
        assert "result:" in str(app.query_one("#node-detail", Static).render())
        assert "Plan" in str(app.query_one("#plan", Static).render())
        await pilot.press("escape")

        ended = await optimize(pilot, cancel=False)
        first = Folder.read(out)
        assert (first.results.status, first.report, first.packages) == ("ok", "", {})  # measured, not saved yet
        assert unwrapped(ended) == unwrapped(f"done: {CandidateCounts.of(first.results).words()}; results in {out}")
        # The report's order first; o sorts by the next column on screen.
        assert await results_line(pilot) == f"{first.counts} · sorted by rank (p50 latency) ↑"
        assert app.query_one("#candidates", DataTable).row_count == len(first.results.candidates)
        best = first.results.best
        assert best is not None and (best.label in screen_text(app) or names.title(best) in screen_text(app))
        await pilot.press("o")
        assert "sorted by p50" in str(app.query_one("#sorted", Label).render())
        saved = await save(pilot)
        first = Folder.read(out)
        assert first.results.status == "ok"
        first.check_report()
        assert saved == f"Saved {out / 'report.md'}, results.json and deploy/ (1 package)"
        kept = tree_of(out)

        # Optimize again and cancel once its first candidate is measured: the re-run has a folder of its own.
        ended = await optimize(pilot, cancel=True)
        again = tmp_path / "out-2"
        assert session.out_dir == again
        rerun = Folder.read(again)
        assert unwrapped(ended) == unwrapped(f"cancelled: {CandidateCounts.of(rerun.results).words()}; "
                                             f"results in {again}")
        assert (rerun.results.status, rerun.report, rerun.packages) == ("interrupted", "", {})
        assert CandidateCounts.of(rerun.results).not_reached > 0  # cancelled part way, as the screen said
        assert (await results_line(pilot)).startswith(f"{rerun.counts} · ")
        assert tree_of(out) == kept
        rerun_kept = tree_of(again)

        # Load another model: the question, then every step forgets demo:tiny.
        await pilot.press("2")
        app.query_one("#source", Input).value = "demo:flat"
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDiscard), 10, "the question before discarding")
        await pilot.press("y")
        await wait_for(pilot, lambda: session.model is not None and session.model.name == "flat", 120, "the load")
        await wait_idle(pilot)
        after = await every_step(pilot)
        assert {step for step, text in after.items() if "tiny" in text or tiny_p50 in text} == set()
        folder_field = Path(app.query_one("#report #out-dir", Input).value)
        assert folder_field.name.endswith("-flat-cpu") and not folder_field.is_relative_to(out)

        # demo:flat: profile, plan, optimize (cancelled after its first candidate), save.
        await profile(pilot)
        await answer_checklist(pilot)
        ended = await optimize(pilot, cancel=True)
        assert session.out_dir is not None
        flat_dir = tmp_path / session.out_dir
        assert flat_dir.resolve() == (tmp_path / folder_field).resolve()
        assert unwrapped(ended) == unwrapped(f"cancelled: {CandidateCounts.of(session.results).words()}; "
                                             f"results in {session.out_dir}")
        shown = await results_line(pilot)
        saved = await save(pilot)
        last = Folder.read(flat_dir)
        assert last.results.model is not None and last.results.model.name == "flat"
        assert last.results.status == "interrupted" and shown.startswith(f"{last.counts} · ")
        last.check_report()
        assert saved == f"Saved {session.out_dir / 'report.md'}, results.json and deploy/ (1 package)"
        # The first model's folders are as its runs left them.
        assert tree_of(out) == kept and tree_of(again) == rerun_kept
        end = await every_step(pilot)
        assert {step for step, text in end.items() if "tiny" in text or tiny_p50 in text} == set()

    run_app(app, body)

"""The report reads as a decision document: a one-screen Summary (decision, measured gain and risk, requirements,
the commands that deploy and verify it), a Roadmap of at most three steps per phase, and every piece of evidence
under one Appendix heading, with one number per fact.

The plan is a recorded quick plan of demo:inefficient (tests/fixtures/recorded/inefficient-quick.json, the
example reports/examples/ held before it was re-recorded with packages), read as typed results; each test
adds the records a newer plan writes (hand-over packages,
a time budget, a dropped candidate, a measured redesign) in code. No plan is run here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from report_fixtures import FIGURE_LINKS, full_report, section

from planner.report.markdown import anchor, render_evidence, render_markdown
from planner.results import BudgetRecord, Declared, Deployment, PlanResults, Status, read_results
from planner.results.decisions import CheckStatus
from planner.results.interaction import Interaction, InteractionCell
from planner.results.values import Confirmation

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "inefficient-quick.json"
EVIDENCE = ("Requirements", "Hardware", "Baseline", "Bottlenecks", "Architecture findings", "Checklist",
            "Decision path", "All candidates", "Environment", "Reproduce")
REDESIGN = "redesign (needs retraining)"


@pytest.fixture(scope="module")
def example() -> PlanResults:
    """The recorded example plan, typed."""
    return read_results(EXAMPLE)


def _lines(body: str) -> int:
    """A section's lines as a reader scrolls them: its heading to its last non-blank line."""
    return len(body.rstrip("\n").splitlines()) + 1


def _phases(md: str) -> dict[int, str]:
    roadmap = section(md, "Roadmap")
    return {n: re.search(rf"^### Phase {n}: .*?\n(.*?)(?=^### |\Z)", roadmap, re.S | re.M).group(1)
            for n in (1, 2, 3)}


def _steps(phase: str) -> list[str]:
    """A phase's numbered steps (their first lines)."""
    return [line for line in phase.splitlines() if re.match(r"^\d+\. \*\*", line)]


def _index(results: PlanResults, label: str) -> int:
    return next(i for i, c in enumerate(results.candidates) if c.label == label)


def _with_redesign(results: PlanResults, *, alone: float, retimed_alone: float, together: float) -> PlanResults:
    """The plan with a measured redesign (a candidate of its own at `alone`x) and the interaction pair that timed
    it again beside the best candidate (`retimed_alone`x) and with it (`together`x)."""
    best = results.best
    base = results.baseline.latency_ms.p50_ms
    latency = dataclasses.replace(best.latency_ms, p50_ms=base / alone)
    redesign = dataclasses.replace(
        best, plugin="architecture.redesign", label=REDESIGN, precision="fp32", status=Status.REJECTED,
        reason="needs retraining: speed measured, accuracy not", latency_ms=latency, speedup=alone, reproduce="",
        config={"architecture": "redesign"}, spec={"notes": [f"{REDESIGN}: 3x3 stacks, channels divisible by 8"]},
        declared=Declared(phase=3, arithmetic="structural", runtime="pytorch", transforms_model=True))
    retimed_base = base * 1.1  # the interaction step timed the baseline again, and got another figure
    cells = (InteractionCell("baseline", "baseline", retimed_base, 1.0),
             InteractionCell("architecture", REDESIGN, retimed_base / retimed_alone, retimed_alone),
             InteractionCell("hardware", best.label, best.latency_ms.p50_ms, retimed_base / best.latency_ms.p50_ms),
             InteractionCell("combined", f"{REDESIGN} + {best.label}", retimed_base / together, together))
    pair = Interaction(REDESIGN, best.label, cells, factor=0.95, verdict="independent", needs_retraining=True,
                       method="each cell timed in a fresh worker")
    return dataclasses.replace(results, candidates=(*results.candidates, redesign), interactions=(pair,))


def test_the_report_is_the_decision_in_two_hundred_lines_opening_with_what_to_ship(example) -> None:
    md = render_markdown(example, figures=FIGURE_LINKS)
    assert len(md.splitlines()) <= 200
    summary = section(md, "Summary")
    assert _lines(summary) <= 20
    assert [line for line in md.splitlines() if line.startswith("## ")] == [
        "## Summary", "## The fastest candidates", "## Roadmap", "## Evidence"]
    first = md.split("\n\n")[1]
    best = example.best
    assert first.startswith(f"**Ship {best.label}**: p50 73.2 ms") and "2.92x the baseline's speed" in first
    assert "it misses latency < 50 ms p95" in first


def test_the_summary_states_the_decision_gain_risk_and_requirements(example) -> None:
    summary = section(full_report(example, figures=FIGURE_LINKS), "Summary")
    best = example.best.label
    assert f"- **Decision**: deploy **{best}**, the best deployment found (ranked by p50 latency)." in summary
    assert "- **Measured gain**: p50 73.2 ms against 214 ms for the baseline, 2.92x the baseline's speed." in summary
    assert "- **Accuracy risk**: cosine 0.99999 and top-1 agreement 100% against the original." in summary
    # The example misses its latency target: the Summary says so first, and never that it is met.
    requirements = next(line for line in summary.splitlines() if line.startswith("- **Requirements**"))
    assert requirements.startswith("- **Requirements**: not met — it misses latency < 50 ms p95")
    assert "it meets latency" not in requirements


@pytest.mark.parametrize("status, words", [(CheckStatus.NOT_JUDGED, "not judged"),
                                           (CheckStatus.MET_AT_P50, "met at p50 only")])
def test_a_requirement_is_said_as_its_status_and_never_met_unless_it_is(example, status, words) -> None:
    check = dataclasses.replace(example.requirement_checks[0], met=True, status=status)
    results = dataclasses.replace(example, requirement_checks=(check, *example.requirement_checks[1:]))
    md = full_report(results, figures=FIGURE_LINKS)
    line = next(line for line in section(md, "Summary").splitlines() if line.startswith("- **Requirements**"))
    assert "it meets latency" not in line and "not judged: latency < 50 ms p95" in line
    row = next(line for line in section(md, "Requirements").splitlines() if line.startswith("| latency | < 50"))
    assert f"| {words} |" in row


def test_a_phase_is_steps_that_build_on_each_other_with_alternatives_folded_in(example) -> None:
    md = full_report(example, figures=FIGURE_LINKS)
    phases = _phases(md)
    # Phase 1 measured several runtimes for one change (the runtime and its settings): one step, the other runtimes
    # folded into it as alternatives, every other setting named once.
    steps = _steps(phases[1])
    assert "run it on the fastest runtime and settings; lands at p50 " in steps[0] and "(measured)" in steps[0]
    # A lower precision is the next step, on top of it, and lands faster.
    assert len(steps) == 2 and "compute in a lower precision; lands at p50 78.2 ms" in steps[1]
    lines = phases[1].splitlines()
    alternatives = next(line for line in lines if line.startswith("   - Or: "))
    assert "torch cpu fp32 2t channels_last compile, 1.44x" in alternatives
    also = next(line for line in lines if line.startswith("- Also measured"))
    assert "onnxruntime defaults (1.32x)" in also
    assert any(line.startswith("   - Effort: ") and "Risk: " in line for line in lines)
    assert any(line.startswith("   - Apply: ") and "Check: " in line for line in lines)
    # Where the phases land, and that no step reaches the latency target.
    landing = section(md, "Roadmap").split("### Where the steps land", 1)[1]
    assert "- Today: p50 214 ms (the baseline, measured)." in landing
    assert "- After Phase 2: lands at p50 73.2 ms, 2.92x the baseline's speed (measured)." in landing
    assert "- Latency target < 50 ms p95: no measured step reaches it" in landing


def test_a_faster_candidate_past_the_steps_that_is_not_established_is_named_as_such(example) -> None:
    """A candidate named past a phase's three steps keeps its fidelity status: unconfirmed is never a plain win."""
    target = "onnxruntime all seq 2t"
    cands = tuple(dataclasses.replace(c, status=Status.UNCONFIRMED, reason="not established on real data: cannot "
                                      "judge") if c.label == target else c for c in example.candidates)
    md = full_report(dataclasses.replace(example, candidates=cands), figures=FIGURE_LINKS)
    phase = _phases(md)[1]
    assert target not in "".join(_steps(phase))
    alternatives = next(line for line in phase.splitlines() if line.startswith("   - Or: "))
    assert f"{target}, 1.4x (not established on these samples: check it on your data first)" in alternatives


def test_every_evidence_section_is_in_evidence_md_and_linked_from_the_report(example) -> None:
    report, evidence = render_markdown(example, figures=FIGURE_LINKS), render_evidence(example, figures=FIGURE_LINKS)
    sections = [line[3:] for line in evidence.splitlines() if line.startswith("## ")]
    assert all(name in sections for name in EVIDENCE)
    assert "### Measurement conditions" in evidence or "Measurement conditions: not audited" in evidence
    assert "### Configuration in force" in evidence
    assert not any(f"## {name}\n" in report for name in EVIDENCE)
    links = section(report, "Evidence")
    assert all(f"[{name}](evidence.md#{anchor(name)})" in links for name in EVIDENCE)
    assert "(evidence.md#all-candidates)" in anchor_check(report)


def anchor_check(report: str) -> str:
    """The report's links into evidence.md, one per line."""
    return "\n".join(re.findall(r"\(evidence\.md#[\w-]+\)", report))


def test_without_a_package_the_summary_says_so_and_gives_the_bench_line(example) -> None:
    summary = section(full_report(example, figures=FIGURE_LINKS), "Summary")
    deploy = next(line for line in summary.splitlines() if line.startswith("- **Deploy**"))
    assert "no deployment package was written" in deploy
    assert "measure it again with `planner bench --model demo:inefficient" in deploy
    assert "**Verify**" not in summary


def test_the_winners_package_gives_the_deploy_and_verify_commands(example) -> None:
    best, phase1 = example.best, "openvino bf16 latency 2t"
    packages = (Deployment("winner", best.label, _index(example, best.label), "deploy/winner", "onnxruntime"),
                Deployment("phase 1", phase1, _index(example, phase1), "deploy/phase-1", "openvino"))
    md = full_report(dataclasses.replace(example, deployments=packages), figures=FIGURE_LINKS)
    summary = section(md, "Summary")
    assert (f"- **Deploy**: `python deploy/winner/run.py` runs **{best.label}** from its package in `deploy/winner/` "
            "(onnxruntime)") in summary
    assert "- **Verify**: `python deploy/winner/run.py --check` checks it on the target without the planner" in summary
    assert "`planner verify deploy/` checks every package the plan wrote" in summary
    assert _lines(summary) <= 20
    # Each step with a package is applied and checked through it; the others by their settings and bench line.
    phases = _phases(md)
    step1 = phases[1].splitlines()
    at = next(i for i, line in enumerate(step1) if line.startswith(f"2. **{phase1}**"))
    apply = next(line for line in step1[at:] if line.startswith("   - Apply: "))
    assert "`python deploy/phase-1/run.py`" in apply
    assert "Check: `python deploy/phase-1/run.py --check` on the target (or `planner verify deploy/phase-1`)." in apply
    winner = phases[2].splitlines()
    at = next(i for i, line in enumerate(winner) if line.startswith(f"3. **{best.label}**"))
    apply = next(line for line in winner[at:] if line.startswith("   - Apply: "))
    assert "the decision above" in winner[at] and "`planner verify deploy/winner`" in apply
    assert "| `deploy/winner/` |" in section(md, "The fastest candidates")


def test_a_package_that_could_not_be_written_says_why(example) -> None:
    best = example.best
    packages = (Deployment("winner", best.label, _index(example, best.label), "", "onnxruntime",
                           reason="the quantized file could not be copied"),)
    summary = section(full_report(dataclasses.replace(example, deployments=packages)), "Summary")
    assert ("- **Deploy**: no package was written for it: the quantized file could not be copied; measure it "
            "again with `planner bench") in summary


def test_a_budget_that_cut_something_is_one_summary_line_with_the_details_in_the_appendix(example) -> None:
    cut = ("the interaction of align channels to 8 and onnxruntime int8 not measured: its 3 cells take about 40 s "
           "and the budget has 12 s left", "2 leaders not confirmed with the full method: 30 s left")
    md = full_report(dataclasses.replace(example, budget=BudgetRecord(120.0, 118.0, cut)), figures=FIGURE_LINKS)
    summary = section(md, "Summary")
    line = next(line for line in summary.splitlines() if line.startswith("- **Time budget**"))
    # Each cut named by what it left out; the reasons stay in the Appendix.
    assert ("the 120 s budget (118 s spent) cut work: the interaction of align channels to 8 and onnxruntime int8 "
            "not measured; 2 leaders not confirmed with the full method. No number here stands for what it cut") in line
    assert "12 s left" not in line and "which and why is under [Time budget](evidence.md#time-budget)" in line
    details = section(md, "Time budget")
    assert "Budget 120 s; the plan took 118 s, from loading the model to writing the results." in details
    assert all(f"- {c}" in details for c in cut)


def test_the_quick_plans_default_budget_says_it_was_not_the_users(example) -> None:
    basis = "the quick plan's default; give --budget to change it, or plan without --quick to measure everything"
    record = BudgetRecord(80.0, 78.0, ("edge.int8 not built: its build takes about 2.5 s and 2 s were left",),
                          basis=basis)
    md = full_report(dataclasses.replace(example, budget=record), figures=FIGURE_LINKS)
    line = next(line for line in section(md, "Summary").splitlines() if line.startswith("- **Time budget**"))
    assert "the 80 s budget (the quick plan's default; 78 s spent) cut work" in line
    assert f"Budget 80 s ({basis}); the plan took 78 s" in section(md, "Time budget")


def test_a_budget_that_cut_nothing_stays_out_of_the_summary(example) -> None:
    md = full_report(dataclasses.replace(example, budget=BudgetRecord(300.0, 200.0, ())), figures=FIGURE_LINKS)
    assert "Time budget" not in section(md, "Summary")
    assert "The budget left nothing out." in section(md, "Time budget")
    assert "Time budget" not in full_report(example, figures=FIGURE_LINKS)  # an older file: no budget at all


def test_a_dropped_candidate_is_noted_as_screen_figures_in_the_table(example) -> None:
    slow = "onnxruntime all seq 1t"
    why = "clearly slower than the best: its median's 95% interval lay above the best's"
    candidates = tuple(dataclasses.replace(c, dropped=why) if c.label == slow else c for c in example.candidates)
    table = section(full_report(dataclasses.replace(example, candidates=candidates)), "All candidates")
    header = next(line for line in table.splitlines() if line.startswith("| Rank"))
    assert header.endswith("| Status | Note |")
    row = next(line for line in table.splitlines() if line.startswith("|") and f" {slow} |" in line)
    assert row.endswith(f"| screen figures only: {why} |")
    other = next(line for line in table.splitlines() if line.startswith("|") and "onnxruntime all seq 2t |" in line)
    assert other.endswith("|  |")
    # Without a dropped candidate the table keeps its shape.
    assert "| Note |" not in full_report(example)


def test_a_confirmed_leader_shows_the_figure_the_ranking_used(example) -> None:
    best = example.best
    screen = best.latency_ms.p50_ms * 0.8  # the screen read 20% faster than the full method
    confirmed = dataclasses.replace(best, confirmation=Confirmation(screen, 0.25, False, "timed while busy"))
    candidates = tuple(confirmed if c is best else c for c in example.candidates)
    table = section(full_report(dataclasses.replace(example, candidates=candidates)), "All candidates")
    assert "The table, the ranking and the Roadmap use those full figures, not the screen's" in table
    assert f"- **{best.label}**: the full method measured it 25% slower than the screen — timed while busy" in table
    assert "58.5 ms" not in table  # the screen's own figure is not a second number for the same fact


def _side_by_side(example: PlanResults, *, invalid: str = "") -> PlanResults:
    """The example with its best leader confirmed beside the baseline, which read 150 ms in those turns (214 ms in its
    profile): its speedup is the side-by-side ratio."""
    best = example.best
    beside = 150.0
    conf = Confirmation(best.latency_ms.p50_ms, 0.0, True, "speedup measured side by side", interleaved=3,
                        baseline_p50_ms=beside)
    confirmed = dataclasses.replace(best, confirmation=conf, speedup=beside / best.latency_ms.p50_ms)
    baseline = dataclasses.replace(example.baseline, invalid=invalid)
    return dataclasses.replace(example, baseline=baseline,
                               candidates=tuple(confirmed if c is best else c for c in example.candidates))


def test_a_speedup_measured_side_by_side_names_the_baseline_figure_it_divides(example) -> None:
    """The Summary's gain is over the 150 ms the baseline read in the same turns, said so, with the profile's figure
    named beside it; the candidates' note says which rows are side by side."""
    md = full_report(_side_by_side(example), figures=FIGURE_LINKS)
    gain = next(line for line in section(md, "Summary").splitlines() if line.startswith("- **Measured gain**"))
    assert gain == ("- **Measured gain**: p50 73.2 ms against 150 ms for the baseline timed in the same turns; its "
                    "profile read 214 ms: 2.05x the baseline's speed, measured side by side.")
    assert "their speedups are ratios measured side by side" in section(md, "All candidates")


def test_an_invalid_baseline_timed_beside_the_winner_still_gives_its_gain(example) -> None:
    """The profile's timing is invalid, so no speedup is worked out over it; the side-by-side re-time is a figure of
    its own, and the gain is given over it, with the invalid profile named."""
    md = full_report(_side_by_side(example, invalid="p50 214 ms against 20 ms in the batch sweep, 11x apart"),
                         figures=FIGURE_LINKS)
    gain = next(line for line in section(md, "Summary").splitlines() if line.startswith("- **Measured gain**"))
    assert "against 150 ms for the baseline timed in the same turns; its profile's timing is invalid" in gain
    assert "2.05x the baseline's speed, measured side by side" in gain


def test_a_measured_redesign_has_one_figure_alone_and_its_combined_gain_is_never_called_not_projected(example):
    results = _with_redesign(example, alone=20.9, retimed_alone=13.8, together=70.9)
    md = full_report(results, figures=FIGURE_LINKS)
    roadmap = section(md, "Roadmap")
    step = next(line for line in _steps(_phases(md)[3]) if f"**{REDESIGN}**" in line)
    assert "projection, not measured: its 20.9x" in step
    together = next(line for line in _phases(md)[3].splitlines() if line.startswith("   - Measured together"))
    assert "70.9x" in together and "13.8x" not in roadmap and "architecture gain" not in roadmap
    assert f"Apply: change the model as measured: {REDESIGN}: 3x3 stacks, channels divisible by 8." in roadmap
    # The Summary's next step is the measured redesign, by the same figure.
    assert f"**{REDESIGN}** measured 20.9x the baseline's speed" in section(md, "Summary")
    # The interaction table keeps its own cells (the factor needs all four from one step) and says which
    # figures the ranking uses.
    interaction = section(md, "Interaction of architecture and hardware")
    assert "(13.8x)" in interaction
    assert "The ranking, the Summary and the Roadmap use the plan's own figures: the baseline p50 214 ms" in interaction
    assert f"{REDESIGN} p50 " in interaction and "20.9x" in interaction


def test_without_a_measured_redesign_the_estimate_says_it_is_not_projected(example) -> None:
    landing = section(full_report(example), "Roadmap").split("### Where the steps land", 1)[1]
    assert "the architecture findings are estimates, not projected" in landing
    assert "Measured together" not in section(full_report(example), "Roadmap")


def test_a_package_slower_than_the_plans_figure_says_so_beside_it(example) -> None:
    """The package runs another program than the plan timed (a torch.export archive of an eager module) and timed
    itself when written: the headline and the Deploy line give its own p50 beside the plan's."""
    best = example.best
    own = best.latency_ms.p50_ms * 2
    packages = (Deployment("winner", best.label, _index(example, best.label), "deploy/winner", "torch",
                           package_p50_ms=own, package_basis="run.py runs a torch.export program"),)
    md = render_markdown(dataclasses.replace(example, deployments=packages), figures=FIGURE_LINKS)
    assert "(its package runs at p50 146 ms: see Deploy)" in md.split("\n\n")[1]
    deploy = next(line for line in section(md, "Summary").splitlines() if line.startswith("- **Deploy**"))
    assert ("the package itself measured p50 146 ms when it was written, not the plan's 73.2 ms (run.py runs a "
            "torch.export program)") in deploy

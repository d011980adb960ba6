"""`planner plan`'s progress fed a scripted event stream: one line per candidate result with its predicted
band, detail only with -v, time left against the budget, and nothing but plain text without a terminal."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from planner.cli.main import build_parser
from planner.cli.progress import CliProgress
from planner.codec import to_data
from planner.events import Event
from planner.results import CandidateResult, Status
from planner.results.values import Confirmation, Fidelity, LatencyStats, Prediction

LONG_REASON = ("fidelity check: top-1 agreement 91.2% on generated inputs, below the 99% needed; the INT8 "
               "activation ranges were calibrated on too few batches for this model's outliers")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=50, mean_ms=p50, std_ms=0.01, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.01, iqr_over_median=0.01, unstable=False, ci95_rel=0.01)


def _result(label: str, status: Status, *, p50: float | None = None, speedup: float | None = None,
            band: tuple[float, float] | None = (1.1, 60.0), reason: str = "", dropped: str = "",
            confirmation: Confirmation | None = None, accuracy: float | None = None) -> dict:
    prediction = Prediction(*band, basis="AVX-512 VNNI on this CPU") if band else None
    fidelity = (Fidelity(cosine=1.0, max_abs_error=0.0, mean_abs_error=0.0, top1_agreement=1.0, samples=8,
                         accuracy=accuracy, reference_accuracy=0.975) if accuracy is not None else None)
    r = CandidateResult(plugin="cpu.test", label=label, config={}, precision="int8", status=status, reason=reason,
                        latency_ms=_latency(p50) if p50 is not None else None, speedup=speedup,
                        prediction=prediction, dropped=dropped, confirmation=confirmation, fidelity=fidelity)
    return to_data(r)


def _script(clock: FakeClock) -> list[tuple[float, Event]]:
    """A quick plan's events as the engine sends them, each with the seconds the clock moves before it."""
    total = 4
    return [
        (0, Event("stage", "detecting hardware", stage="hardware", index=0, total=4)),
        (5, Event("stage", "timing the baseline: torch eager fp32 (cpu)", stage="baseline", index=2, total=4)),
        (3, Event("stage_done", "baseline p50 0.0661 ms over 110 samples", stage="baseline")),
        (1, Event("stage", "building candidates: cpu.onnxruntime", stage="candidates")),
        (2, Event("log", "exporting tiny to ONNX")),
        (1, Event("log", "predicted onnxruntime int8 static QDQ: 1.1x-60x — AVX-512 VNNI on this CPU")),
        (0, Event("log", "predicted onnxruntime defaults: 1x-20x — a fusing runtime recovers up to the peak")),
        (0, Event("candidate", "measuring onnxruntime int8 static QDQ", stage="measure", index=0, total=total)),
        (10, Event("candidate_done", "  ok: onnxruntime int8 static QDQ: p50 0.0292 ms (2.27x)", stage="measure",
                   index=1, total=total, data=_result("onnxruntime int8 static QDQ", Status.OK, p50=0.0292,
                                                      speedup=2.27, accuracy=0.9712))),
        (0, Event("candidate", "measuring openvino int8 qdq", stage="measure", index=1, total=total)),
        (10, Event("candidate_done", "  rejected: openvino int8 qdq", stage="measure", index=2, total=total,
                   data=_result("openvino int8 qdq", Status.REJECTED, p50=0.0359, speedup=1.84,
                                reason=LONG_REASON))),
        (0, Event("candidate", "measuring onnxruntime defaults", stage="measure", index=2, total=total)),
        (10, Event("candidate_done", "  ok: onnxruntime defaults", stage="measure", index=3, total=total,
                   data=_result("onnxruntime defaults", Status.OK, p50=0.0159, speedup=4.15, band=(1.0, 3.0),
                                dropped="clearly slower than the best at the time: its median's 95% interval lay "
                                        "above the best's"))),
        (1, Event("warning", "plugin edge.int8: not installed")),
        (0, Event("budget", "1 candidate not screened (torch bf16)",
                  data={"budget_s": 60.0, "spent_s": 41.0, "cut": "1 candidate not screened (torch bf16): the 60 s "
                                                                  "budget had 2 s left after 41 s"})),
        (0, Event("candidate_done", "  skipped: torch bf16", stage="measure", index=4, total=total,
                  data=_result("torch bf16", Status.SKIPPED, band=(0.8, 1.6),
                               reason="not measured: the time budget ran out (the 60 s budget had 2 s left)"))),
        (0, Event("candidate", "confirming onnxruntime defaults with the full method", stage="confirm", index=0,
                  total=1)),
        (8, Event("candidate_done", "  confirmed onnxruntime defaults", stage="confirm", index=1, total=1,
                  data=_result("onnxruntime defaults", Status.OK, p50=0.0161, speedup=4.11, band=(1.0, 3.0),
                               confirmation=Confirmation(screen_p50_ms=0.0159, rel_change=0.0126,
                                                         reproduced=True)))),
    ]


def _run(*, verbose: bool = False, budget_s: float | None = None, **kwargs) -> tuple[CliProgress, FakeClock]:
    clock = FakeClock()
    progress = CliProgress(budget_s=budget_s, verbose=verbose, clock=clock, **kwargs)
    with progress:
        for step, event in _script(clock):
            clock.now += step
            progress(event)
    return progress, clock


def _result_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if re.match(r"\[\d+:\d\d\] +\d+/\d+ ", line)]


def test_plain_output_is_one_line_per_candidate_with_its_band(capsys):
    _run(interactive=False)
    err = capsys.readouterr().err
    lines = _result_lines(err)
    assert len(lines) == 5  # four measured or skipped, one confirmed
    first = lines[0]
    assert first.startswith("[0:22]") and "1/4" in first
    assert re.search(r"ok +onnxruntime int8 static QDQ +0\.0292 +2\.27x +1\.1x-60x", first), first
    assert "accuracy 97.12% (original 97.50%)" in first
    # A speedup above its band says so; one without a measurement shows no figures.
    assert re.search(r"4\.15x +1x-3x above +stopped early: clearly slower$", lines[2]), lines[2]
    assert re.search(r"skipped +torch bf16 +— +— +0\.8x-1\.6x +not measured: the time budget", lines[3])
    assert "reproduced the 2-second screen's 0.0159 ms (+1%)" in lines[4]
    # The predictions are in the column, not paragraphs; the planner's detail lines stay out.
    assert "predicted onnxruntime" not in err and "AVX-512 VNNI" not in err and "exporting tiny" not in err
    assert "measuring onnxruntime defaults" not in err  # a candidate's start is not a line of its own
    assert "\x1b" not in err


def test_plain_output_has_one_line_per_stage_and_the_column_titles(capsys):
    _run(interactive=False)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[0:00] detecting hardware"
    assert "[0:05] timing the baseline: torch eager fp32 (cpu)" in err
    assert "[0:08] baseline p50 0.0661 ms over 110 samples" in err
    assert "[0:12] measuring 4 candidates" in err
    titles = [line for line in err if "status" in line and "predicted" in line]
    assert len(titles) == 2 and all(not line.startswith("[") for line in titles)  # measuring, then confirming
    assert "[0:43] warning: plugin edge.int8: not installed" in err
    assert any(line.startswith("[0:43] budget cut: 1 candidate not screened (torch bf16): the 60 s") for line in err)


def test_reasons_are_shortened_on_the_line_and_whole_with_verbose(capsys):
    _run(interactive=False)
    rejected = next(line for line in _result_lines(capsys.readouterr().err) if "rejected" in line)
    assert "fidelity check: top-1 agreement 91.2%" in rejected and rejected.endswith("…")
    assert "outliers" not in rejected

    _run(interactive=False, verbose=True)
    err = capsys.readouterr().err
    rejected = next(line for line in _result_lines(err) if "rejected" in line)
    assert rejected.endswith("this model's outliers")
    assert "stopped early: clearly slower than the best at the time: its median's 95% interval lay above the " \
           "best's" in err


def test_verbose_prints_predictions_and_detail(capsys):
    _run(interactive=False, verbose=True)
    err = capsys.readouterr().err
    assert "[0:12] predicted onnxruntime int8 static QDQ: 1.1x-60x — AVX-512 VNNI on this CPU" in err
    assert "[0:11] exporting tiny to ONNX" in err
    assert "[0:12] … measuring onnxruntime int8 static QDQ" in err
    assert len(_result_lines(err)) == 5 and "\x1b" not in err


def test_time_left_is_against_the_budget():
    clock = FakeClock()
    progress = CliProgress(budget_s=90, interactive=False, clock=clock)
    clock.now += 20
    assert progress.time_left() == "1:10 left of 1:30"
    clock.now += 75
    assert progress.over_budget() and progress.time_left() == "0:05 over the 1:30 budget"


def test_plain_stage_lines_carry_the_budget_and_say_when_it_is_passed(capsys):
    _run(interactive=False, budget_s=30)
    err = capsys.readouterr().err.splitlines()
    assert "[0:05] timing the baseline: torch eager fp32 (cpu)  (0:25 left of 0:30)" in err
    over = [line for line in err if "run past" in line]
    assert over == ["[0:32] the plan has run past its 0:30 budget"]  # once, at the first event past it


def test_without_a_budget_time_left_is_an_estimate_while_measuring():
    clock = FakeClock()
    progress = CliProgress(interactive=False, clock=clock, console=Console(file=io.StringIO()))
    progress(Event("stage", "building candidates: cpu.onnxruntime", stage="candidates"))
    assert progress.time_left() == ""  # nothing to estimate from yet
    clock.now += 5
    progress(Event("candidate", "measuring a", stage="measure", index=0, total=4))
    clock.now += 10
    progress(Event("candidate_done", "  ok: a", stage="measure", index=1, total=4,
                   data=_result("a", Status.OK, p50=1.0, speedup=1.0)))
    assert progress.time_left() == "~0:30 left to measure, estimated"  # 10 s a candidate, three to go
    clock.now += 4
    assert progress.time_left() == "~0:26 left to measure, estimated"
    progress(Event("candidate", "confirming a with the full method", stage="confirm", index=0, total=1))
    assert progress.time_left() == ""


def test_terminal_shows_a_bar_with_the_time_left_against_the_budget():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=160, color_system="standard")
    clock = FakeClock()
    progress = CliProgress(budget_s=90, interactive=True, console=console, clock=clock)
    with progress:
        clock.now += 12
        progress(Event("candidate", "measuring onnxruntime defaults", stage="measure", index=2, total=18))
        clock.now += 8
        progress(Event("candidate_done", "  ok: onnxruntime defaults", stage="measure", index=3, total=18,
                       data=_result("onnxruntime defaults", Status.OK, p50=0.0159, speedup=4.15)))
        assert progress._progress is not None
        progress._progress.refresh()
        shown = buf.getvalue()
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", shown)
    assert "measuring onnxruntime defaults" in plain and "3/18" in plain
    assert "1:10 left of 1:30" in plain
    assert re.search(r"\[0:20\] +3/18 ok +onnxruntime defaults +0\.0159 +4\.15x +1\.1x-60x", plain), plain
    assert "\x1b[" in shown  # a terminal gets the styled form


@pytest.mark.parametrize("command", ["plan", "profile"])
def test_verbose_flag(command):
    parser = build_parser()
    assert parser.parse_args([command, "--model", "demo:tiny", "-v"]).verbose is True
    assert parser.parse_args([command, "--model", "demo:tiny"]).verbose is False


def _terminal_results(width: int) -> list[str]:
    """The result lines (not the bar) a terminal of `width` columns shows for the scripted plan."""
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=width, color_system=None)
    clock = FakeClock()
    progress = CliProgress(interactive=True, console=console, clock=clock)
    with progress:
        for _, event in _script(clock):
            if event.kind == "candidate_done":
                progress(event)
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", buf.getvalue())
    return [line.rstrip() for line in plain.splitlines() if line.strip() and "━" not in line]


def test_narrow_terminal_keeps_each_results_columns_whole_and_puts_a_rejection_reason_under_it():
    lines = _terminal_results(100)
    assert all(len(line) <= 100 for line in lines)
    ok = next(line for line in lines if "2.27x" in line)
    assert ok.endswith("1.1x-60x")  # no room for its accuracy: left out, not wrapped through the columns
    rejected = lines.index(next(line for line in lines if "rejected" in line))
    reason = lines[rejected + 1]
    assert reason.lstrip().startswith("fidelity check: top-1 agreement 91.2%")
    assert reason.index("fidelity") == lines[rejected].index("openvino int8 qdq")  # under the candidate


def test_a_wider_terminal_cuts_the_notes_at_its_edge():
    lines = _terminal_results(120)
    assert all(len(line) <= 120 for line in lines)
    ok = next(line for line in lines if "2.27x" in line)
    assert "1.1x-60x" in ok and "accuracy 97." in ok and ok.endswith("…")

"""`planner plan --pipeline`: the user's whole request timed end to end on a real quick plan of demo:digits with the
example pipeline (PNG bytes decoded with Pillow), the checklist's bottleneck question answered with the measured
split, and a bad argument refused before anything is measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.measure.pool import POOL_SIZE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "digits.py"


# digits_pipeline_plan: the session's shared plan of demo:digits with this example pipeline (tests/conftest.py).


@pytest.mark.worker
def test_the_plan_answers_the_bottleneck_question_with_the_measured_split(digits_pipeline_plan) -> None:
    out, code, stdout, stderr = digits_pipeline_plan
    assert code == 0, stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    split = results["baseline"]["pipeline"]
    assert split["error"] == "" and split["requests"] >= 5 and split["distinct_samples"] == 64
    assert split["samples_from"] == "samples() in digits.py"
    assert split["preprocess_ms"] > 0 and split["model_ms"] > 0 and split["postprocess_ms"] > 0
    answer = next(a for a in results["checklist"] if a["id"] == "cpu.preprocessing")
    assert answer["status"] == "auto"
    assert answer["answer"].startswith(("The work around it: model ", "The model itself: model "))
    assert "of the request, preprocessing " in answer["answer"] and ", postprocessing " in answer["answer"]
    assert isinstance(answer["value"]["around_model"], bool)
    report = (out / "report.md").read_text() + (out / "evidence.md").read_text()
    assert answer["answer"] in report  # the checklist's row
    assert "Your requests end to end (`--pipeline " in report and "### Your request end to end" in report
    assert f"Each timed call takes the next of {POOL_SIZE} distinct inputs in turn" in report
    # The CLI says it: the stage line while it ran, and the split under the ranking.
    assert "requests with the original model: model " in stderr
    assert "Your requests end to end" in stdout and "- with the original model (" in stdout


@pytest.mark.worker
def test_the_winner_is_timed_end_to_end_too(digits_pipeline_plan) -> None:
    out, code, stdout, _ = digits_pipeline_plan
    results = json.loads((out / "results.json").read_text())
    best = results["ranking"]["order"][0]
    winner = results["candidates"][best]
    if best == 0:
        pytest.skip("the original model won this run: there is no other runtime to time")
    assert winner["pipeline"]["error"] == "" and winner["pipeline"]["runtime"] == winner["label"]
    assert f"- with the winner {winner['label']}: model " in stdout


def test_a_pipeline_without_trust_code_fails_before_measuring(cli, tmp_path) -> None:
    code, _, err = cli("plan", "--model", "demo:tiny", "--target", "cpu", "--quick", "--out", str(tmp_path / "p"),
                       "--pipeline", f"{EXAMPLE}:preprocess")
    assert code == 2
    assert f"error: --pipeline {EXAMPLE} is Python code, and running it could do anything" in err
    assert "pass --trust-code" in err
    assert not (tmp_path / "p" / "results.json").exists()


def test_a_malformed_pipeline_argument_is_refused(cli, tmp_path) -> None:
    code, _, err = cli("plan", "--model", "demo:tiny", "--target", "cpu", "--quick", "--out", str(tmp_path / "p"),
                       "--trust-code", "--pipeline", str(EXAMPLE))
    assert code == 2 and "does not have the form FILE.py:PRE or FILE.py:PRE,POST" in err

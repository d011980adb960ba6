"""A plan's end is printed one way wherever it ran: here, in an engine process, or on a host over SSH."""

from __future__ import annotations

import json
from pathlib import Path

from planner.cli.output import print_outcome
from planner.pipeline.outcome import PlanOutcome
from planner.results import PlanResults, RunStatus
from planner.ssh.hosts import HostSpec
from planner.ssh.remote_plan import HostOutcome


def test_a_local_plan_says_where_it_wrote_and_succeeds(tmp_path: Path, capsys) -> None:
    outcome = PlanOutcome(PlanResults(status=RunStatus.OK), tmp_path, tmp_path / "report.md")
    assert print_outcome(outcome) == 0
    out = capsys.readouterr().out
    assert f"Wrote {tmp_path / 'results.json'}" in out and f"Report {tmp_path / 'report.md'}" in out


def test_a_host_plan_says_where_it_fetched_what_it_left_and_what_went_wrong(tmp_path: Path, capsys) -> None:
    outcome = HostOutcome(results=PlanResults(status=RunStatus.PARTIAL), out_dir=tmp_path, spec=HostSpec.parse("box"),
                          run="20261128-120000", failure="the remote engine stopped",
                          skipped={"deploy/big.onnx": "over the size limit"})
    assert print_outcome(outcome) == 1  # something went wrong, though results came back
    captured = capsys.readouterr()
    assert f"Fetched from box (run 20261128-120000) into {tmp_path}" in captured.out
    assert "box: the remote engine stopped" in captured.err
    assert "not fetched: deploy/big.onnx (over the size limit)" in captured.err


def test_json_prints_only_the_results_object(tmp_path: Path, capsys) -> None:
    assert print_outcome(PlanOutcome(PlanResults(status=RunStatus.FAILED), tmp_path), json_out=True) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "failed"


def test_no_results_is_a_failure_with_nothing_to_point_at(capsys) -> None:
    outcome = HostOutcome(results=None, out_dir=None, spec=HostSpec.parse("box"), failure="cancelled")
    assert print_outcome(outcome) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "box: cancelled" in captured.err

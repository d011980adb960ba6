"""`planner plan`'s flags come from the plan options' declarations (planner/pipeline/options.py): each option is
declared once, and the flags, the engine's `plan` command and an SSH run's carrying all read that declaration."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from planner.cli.main import build_parser
from planner.cli.plan_args import plan_options
from planner.engine.plan_options import options_data, options_from_data
from planner.pipeline.options import REQUIREMENT_FLAGS, Carry, PlanOptions, carried, flags

NOT_FLAGS = {"write_report", "requirement_overrides"}
"""Options no flag sets: the report is always written from the command line; the requirement flags fill the
overrides (REQUIREMENT_FLAGS)."""


def _parse(*argv: str) -> PlanOptions:
    return plan_options(build_parser().parse_args(["plan", *argv]))


def test_every_option_but_two_has_a_flag_with_help():
    declared = dict(flags())
    assert set(declared) == {f.name for f in dataclasses.fields(PlanOptions)} - NOT_FLAGS
    assert all(flag.help and flag.names[0].startswith("--") for flag in declared.values())
    every = [flag.names[0] for flag in declared.values()] + [flag.names[0] for _, flag in REQUIREMENT_FLAGS]
    assert len(every) == len(set(every))


def test_flags_not_given_leave_the_options_defaults():
    assert _parse("--model", "demo:tiny") == PlanOptions(model="demo:tiny")


def test_each_flag_reaches_its_option_and_survives_the_engine_message(tmp_path):
    options = _parse("-m", "demo:tiny", "--input", "x:1x4:float32", "--input", "y:1x2:int64", "--trust-code",
                     "--target", "cpu", "--quick", "--out", str(tmp_path), "--requirements", "req.toml",
                     "--plugins", "cpu.onnxruntime, cpu.openvino", "--timeout", "30", "--confirm", "-2",
                     "--budget", "1.5m", "--output-kind", "0=dense", "--latency-ms", "5", "--accuracy-drop", "0.01")
    assert options.inputs == ("x:1x4:float32", "y:1x2:int64") and options.trust_code and options.quick
    assert options.out == tmp_path and options.requirements_file == Path("req.toml")
    assert options.plugins == ("cpu.onnxruntime", "cpu.openvino")
    assert options.timeout_s == 30.0 and options.confirm == 0 and options.budget_s == 90.0
    assert options.output_kinds == ("0=dense",)
    assert options.requirement_overrides == {"latency_ms": 5.0, "accuracy_drop": 0.01}
    assert options_from_data(options_data(options)) == options  # as `--engine subprocess` and SSH carry it


def test_a_bad_value_is_the_usage_error_of_its_flag(capsys):
    with pytest.raises(SystemExit):
        _parse("-m", "demo:tiny", "--budget", "soon")
    assert "argument --budget: 'soon' is not a duration" in capsys.readouterr().err


def test_what_an_ssh_run_does_with_each_local_file_is_declared():
    assert [name for name, _ in carried(Carry.MODEL)] == ["model"]
    assert [name for name, _ in carried(Carry.SHIP)] == ["requirements_file"]
    assert [name for name, _ in carried(Carry.HOST_OUT)] == ["out"]
    assert {name for name, _ in carried(Carry.REFUSED)} == {"val_data", "val_transform", "pipeline", "text", "gguf"}

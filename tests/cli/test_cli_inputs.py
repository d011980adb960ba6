"""What the CLI prints about a model's inputs: `planner inspect` (text and --json), `planner models`, and
the inputs, sequence sweep and skipped batch sweep in `planner profile`'s readable output."""

from __future__ import annotations

import json

from planner import units
from planner.cli.commands import format_inputs
from planner.cli.output import format_baseline
from planner.results import Baseline, from_data


def test_inspect_lists_every_input_of_the_text_demo(cli):
    code, out, err = cli("inspect", "--model", "demo:text")
    assert code == 0, err
    lines = out.splitlines()
    inputs = [line for line in lines if line.startswith("Input ")]
    assert inputs == [
        "Input       input_ids       int64 [batch=1, sequence=64], dynamic batch; "
        "values integers in [0, 1000) (the demo's vocabulary)",
        "Input       attention_mask  int64 [batch=1, sequence=64], dynamic batch; values ones (nothing masked)",
    ]
    assert any(line.startswith("Batch       1, dynamic") for line in lines)
    assert "Output      1x4" in lines


def test_inspect_input_flags_set_the_shapes_shown(cli):
    code, out, err = cli("inspect", "--model", "demo:text", "--input", "input_ids:2x16:int64:0-50",
                         "--input", "attention_mask:2x16:int64")
    assert code == 0, err
    assert "input_ids       int64 [batch=2, sequence=16]" in out
    assert "values integers in [0, 50) (given with --input)" in out
    assert "attention_mask  int64 [batch=2, sequence=16]" in out


def test_inspect_json_is_describe_as_is(cli):
    from planner.models import load_model

    code, out, err = cli("inspect", "--model", "demo:text", "--json")
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads(json.dumps(load_model("demo:text").describe()))
    assert [i["name"] for i in printed["inputs"]] == ["input_ids", "attention_mask"]
    assert printed["dynamic_batch"] is True


def test_inspect_image_model_shows_its_one_float_input(cli):
    code, out, err = cli("inspect", "--model", "demo:tiny")
    assert code == 0, err
    assert "Input       x  float32 [batch=1, 3, 32, 32], dynamic batch; values normal(0, 1)" in out


def test_a_fixed_batch_is_said_on_every_input_and_in_the_batch_line():
    """What a static-batch ONNX file describes: dimension 0 is fixed, so no axis is named batch."""
    described = {"inputs": [
        {"name": "input_ids", "shape": [1, 128], "dtype": "int64", "axes": ["", "sequence"], "low": 0,
         "high": 30522, "values": "integers in [0, 30522) (the embedding table's rows)"},
        {"name": "attention_mask", "shape": [1, 128], "dtype": "int64", "axes": ["", "sequence"],
         "values": "ones (nothing masked)"}], "dynamic_batch": False}
    text = format_inputs(described)
    assert text.splitlines()[0] == "Batch       1, fixed by the model's inputs: measured at this batch only"
    assert "input_ids       int64 [1, sequence=128], fixed batch; values integers in [0, 30522)" in text
    assert "attention_mask  int64 [1, sequence=128], fixed batch; values ones (nothing masked)" in text


def test_models_lists_the_text_demo_with_its_input_flags(cli):
    code, out, err = cli("models")
    assert code == 0, err
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip().startswith("demo:text"))
    assert "2 inputs" in lines[row]
    assert lines[row + 1].split() == ["--input", "input_ids:1x64:int64:0-1000", "--input",
                                      "attention_mask:1x64:int64"]
    assert "INPUT_SPEC" in out and "--input NAME:SHAPE:DTYPE[:LOW-HIGH|:VALUE]" in out


def _text_baseline() -> Baseline:
    lat = {"samples": 135, "mean_ms": 0.67, "std_ms": 0.02, "min_ms": 0.64, "max_ms": 0.8, "p50_ms": 0.668,
           "p90_ms": 0.7, "p95_ms": 0.71, "p99_ms": None, "iqr_ms": 0.01, "iqr_over_median": 0.015,
           "unstable": False, "ci95_rel": 0.01}
    return from_data({
        "model": {"name": "bert", "source": "bert.onnx", "kind": "onnx", "parameters": 180740, "size_bytes": 722960},
        "input_shape": [1, 64], "latency_ms": lat, "runtime": "onnxruntime defaults (ONNX model)",
        "inputs": [{"name": "input_ids", "shape": [1, 64], "dtype": "int64", "axes": ["", "sequence"],
                    "values": "integers in [0, 1000)"},
                   {"name": "attention_mask", "shape": [1, 64], "dtype": "int64", "axes": ["", "sequence"],
                    "values": "ones (nothing masked)"}],
        "throughput": [{"batch": 1, "latency_p50_ms": 0.668, "samples_per_s": 1497.0, "peak_memory_bytes": None}],
        "sequence_sweep": [{"length": 32, "latency_p50_ms": 0.4561, "tokens_per_s": 70160.1},
                           {"length": 64, "latency_p50_ms": 0.668, "tokens_per_s": 95808.4}],
        "info": {"sweep_skipped": "no batch sweep: the model's inputs fix the batch at 1"},
        "ceilings": {"source": "measured"},
    }, Baseline)


def test_profile_output_shows_inputs_sequence_and_skipped_sweep():
    text = format_baseline(_text_baseline())
    assert "Inputs       input_ids int64 [1, sequence=64], values integers in [0, 1000)" in text
    assert "             attention_mask int64 [1, sequence=64], values ones (nothing masked)" in text
    assert ("Throughput   1,497 samples/s at batch 1; batch sweep skipped: the model's inputs fix the batch at 1"
            in text)
    assert f"Sequence     32 tokens {units.ms(0.4561)}, 64 tokens {units.ms(0.668)}" in text
    assert "best 95,808 tokens/s at 64 tokens" in text

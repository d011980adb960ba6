"""Models as other exporters write them, as a user sees them through `planner inspect`: a TorchScript
file with any name, weights kept in Constant nodes, converter-named dynamic dimensions, a recurrent
state whose batch is axis 1, and a scalar sample rate that must be given as a fixed value."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from trait_models import (
    constant_weights_classifier,
    dense_map_model,
    scalar_branch_model,
    torchscript_int_arg,
    weight_count,
)

from planner import units
from planner.errors import InputSpecError, ModelLoadError
from planner.models import load_model
from planner.models.loaded import make_feeds
from planner.models.source import SourceKind, parse_source
from planner.models.spec import ModelInputs, parse_input
from planner.pytorch.session import TorchSession


@pytest.fixture(scope="module")
def vad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scalar_branch_model(tmp_path_factory.mktemp("vad") / "vad.onnx")


@pytest.fixture(scope="module")
def vad_jit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return torchscript_int_arg(tmp_path_factory.mktemp("jit") / "vad.jit")


def test_constant_node_weights_are_the_parameter_count_and_size(cli, tmp_path: Path) -> None:
    path = constant_weights_classifier(tmp_path / "classifier.onnx")
    params, size = weight_count()
    code, out, err = cli("inspect", "--model", str(path))
    assert code == 0, err
    assert f"Parameters  {params:,}\n" in out
    assert f"Size        {units.size(size)} " in out
    model = load_model(str(path))
    assert (model.parameters, model.size_bytes) == (params, size)
    # the converter's batch name (p2o.DynamicDimension.0) is still the batch
    assert model.inputs.dynamic_batch and "batch=1, 3, 32, 32" in out


def test_weights_inside_if_branches_count_and_scalar_constants_do_not(vad: Path) -> None:
    model = load_model(str(vad), inputs=["sr::int64:16000"])
    window, state = 512, 64  # both branches' matrices and the output layer; not 31.25, 16000 or shapes
    assert model.parameters == window * state + window // 2 * state + state
    assert model.size_bytes == model.parameters * 4


def test_open_dimensions_are_named_by_axis_and_as_the_file_names_them(cli, tmp_path: Path) -> None:
    path = dense_map_model(tmp_path / "detector.onnx")
    code, out, err = cli("inspect", "--model", str(path))
    assert code == 2
    assert "x axis 2 (p2o.DynamicDimension.1) and axis 3 (p2o.DynamicDimension.2)" in err
    assert "--input x:1x3x224x224:float32" in err and "x0" not in err
    code, out, err = cli("inspect", "--model", str(path), "--input", "x:1x3x64x48:float32")
    assert code == 0, err
    assert "p2o.DynamicDimension.1=64, p2o.DynamicDimension.2=48" in out
    assert "Output      1x1x64x48" in out


@pytest.mark.parametrize("name", ["vad.jit", "vad.model", "vad"])
def test_torchscript_with_any_name_loads(cli, vad_jit: Path, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(vad_jit, path)
    assert parse_source(str(path)).kind is SourceKind.TORCHSCRIPT
    code, out, err = cli("inspect", "--model", str(path), "--input", "x:1x512:float32", "--input", "sr::int64:16000")
    assert code == 0, err
    assert "(torchscript)" in out and "Output      1x1" in out
    assert "sr  int64 []; values fixed at 16000" in out
    assert "Batch       1, dynamic" in out  # the scalar has no batch: it does not stop the batch sweep


def test_content_decides_over_the_suffix(vad: Path, tmp_path: Path) -> None:
    import torch

    onnx_bin = tmp_path / "vad.bin"
    shutil.copy(vad, onnx_bin)
    assert parse_source(str(onnx_bin)).kind is SourceKind.ONNX
    program = torch.export.export(torch.nn.Linear(3, 2).eval(), (torch.randn(1, 3),))
    archive = tmp_path / "linear.zip"
    torch.export.save(program, str(tmp_path / "linear.pt2"))
    shutil.copy(tmp_path / "linear.pt2", archive)
    assert parse_source(str(archive)).kind is SourceKind.EXPORTED
    assert load_model(str(archive)).output_shape == (1, 2)
    pickled = tmp_path / "weights.bin"
    torch.save(torch.nn.Linear(3, 2).state_dict(), str(pickled))
    with pytest.raises(ModelLoadError) as err:
        load_model(str(pickled))
    assert "no architecture" in err.value.problem


def test_unknown_content_lists_the_accepted_forms(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    with pytest.raises(ModelLoadError) as err:
        parse_source(str(text))
    assert "its content is none of these" in err.value.problem
    assert "ONNX file" in err.value.fix and "TorchScript" in err.value.fix and "torch.export" in err.value.fix


def test_torchscript_int_argument_takes_a_fixed_scalar(cli, vad_jit: Path) -> None:
    model = load_model(str(vad_jit), inputs=["x:2x512:float32", "sr::int64:8000"])
    assert model.output_shape == (2, 1) and model.inputs.dynamic_batch
    args = model.torch_args()
    assert isinstance(args[1], int) and args[1] == 8000
    session = TorchSession(model.module)
    out = session.run(session.prepare(model.make_feeds()[0]))
    assert tuple(out.shape) == (2, 1)
    code, _, err = cli("inspect", "--model", str(vad_jit), "--input", "x:1x512:float32")
    assert code == 2 and "--input sr::int64:16000" in err
    code, _, err = cli("inspect", "--model", str(vad_jit), "--input", "x:1x512:float32", "--input", "sr::int64")
    assert code == 2 and "plain int" in err and "give the value your model expects, e.g. --input sr::int64:16000" in err
    code, _, err = cli("inspect", "--model", str(vad_jit))
    assert code == 2 and "--input sr::int64:16000" in err


def test_scalar_sample_rate_given_as_a_fixed_value(cli, vad: Path) -> None:
    code, out, err = cli("inspect", "--model", str(vad), "--input", "sr::int64:16000")
    assert code == 0, err
    assert "sr     int64 []; values fixed at 16000" in out
    assert "state  float32 [2, batch=1, 64], batch on axis 1" in out
    model = load_model(str(vad), inputs=["input:3x512:float32", "sr::int64:16000"])
    assert model.inputs.names == ("input", "state", "sr")
    assert model.inputs.tensors[1].shape == (2, 3, 64)  # the state follows the batch on its axis 1
    feed = model.make_feeds()[0]
    assert feed["sr"].shape == () and int(feed["sr"]) == 16000 and feed["sr"].dtype == np.int64
    assert model.output_shape == (3, 1)
    assert model.inputs.tensors[2].cli() == "sr::int64:16000"
    assert load_model(str(vad), inputs=["sr::int64:8000"]).output_shape == (1, 1)


def test_assumed_sample_rate_failure_names_the_drawn_value_and_suggests_a_fixed_one(cli, vad: Path) -> None:
    code, out, err = cli("inspect", "--model", str(vad))
    assert code == 2
    assert "sr = " in err and "was drawn from [0, 100) (assumed: no range known)" in err
    assert "fix: give the value your model expects, e.g. --input sr::int64:16000" in err
    assert "x0" not in err
    code, out, err = cli("inspect", "--model", str(vad), "--input", "sr::int64:8000-16001")
    assert code == 2 and "was drawn from [8000, 16001)" in err and "--input sr::int64:16000" in err


def test_a_range_of_one_value_is_that_value() -> None:
    spec = parse_input("sr::int64:16000-16000")
    assert spec.value == 16000 and spec.cli() == "sr::int64:16000"
    assert spec.describe() == "sr int64 [] fixed at 16000" and spec.value_rule() == "fixed at 16000"


def test_fixed_float_value_fills_the_tensor() -> None:
    spec = parse_input("temp:1x4:float32:0.7")
    assert spec.value == 0.7 and spec.cli() == "temp:1x4:float32:0.7"
    feed = make_feeds(ModelInputs((spec,)))[0]
    assert feed["temp"].dtype == np.float32 and np.allclose(feed["temp"], 0.7)
    assert parse_input("temp::float32:0.5-0.5").value == 0.5
    with pytest.raises(InputSpecError) as err:
        parse_input("temp::float32:0.5-0.9")
    assert "integer inputs only" in err.value.problem


@pytest.mark.parametrize("text, words", [
    ("x::int8:300", "300 does not fit int8"),
    ("x::uint8:-1", "-1 does not fit uint8"),
    ("x:1x2:int8:0-200", "does not fit int8"),
    ("x::int64:1.5", "not a whole number"),
])
def test_values_outside_the_dtype_are_refused(text: str, words: str) -> None:
    with pytest.raises(InputSpecError) as err:
        parse_input(text)
    assert words in err.value.problem and err.value.fix


def test_open_dimension_examples_never_suggest_a_zero_size() -> None:
    from planner.models.inputs import concrete

    audio = concrete("input", "float32", [None, None], ["batch", "samples"])
    assert audio.shape == (1, 0)
    assert audio.example() == "input:1x128:float32"
    assert ModelInputs((audio,)).example() == "--input-shape 1x128"
    rate = concrete("sr", "int64", [], [])
    assert rate.example() == "sr::int64:16000"
    assert concrete("temperature", "int64", [], []).example() == "temperature::int64:V"


def test_layer_analysis_runs_a_torchscript_int_argument(vad_jit: Path) -> None:
    from planner.analysis.layers import analyze_layers

    model = load_model(str(vad_jit), inputs=["x:1x512:float32", "sr::int64:16000"])
    report = analyze_layers(model.module, model.torch_args(), measure_time=False)
    assert report.input_shapes == ((1, 512), ()) and report.input_dtypes == ("float32", "int")
    assert report.total_flops > 0


def test_a_fixed_batch_candidate_runs_validation_rows_in_chunks_beside_a_scalar() -> None:
    from planner.measure.evaluate import _run_in_chunks

    class Scaled:
        """A session whose output is each row of x times the scalar sr."""

        def prepare(self, feed):
            assert feed["sr"].shape == () and len(feed["x"]) == 2
            return feed

        def run(self, prepared):
            return prepared["x"] * prepared["sr"]

        def to_numpy(self, output):
            return np.asarray(output, dtype=np.float32)

    x = np.arange(5, dtype=np.float32).reshape(5, 1)
    out = _run_in_chunks(Scaled(), {"x": x, "sr": np.array(3)}, 2)
    assert np.array_equal(out, x * 3)

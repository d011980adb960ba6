"""`planner inspect` on every kind of bad input: one clear message, exit 2, no traceback."""

from __future__ import annotations

import pickle
import textwrap

import pytest
import torch


def _assert_clean_error(result, *needles: str) -> None:
    code, out, err = result
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert err.startswith("error: ")
    assert "fix:" in err
    for n in needles:
        assert n.lower() in err.lower(), err


def test_nonexistent_path(cli, tmp_path):
    _assert_clean_error(cli("inspect", "--model", str(tmp_path / "nope.onnx")), "does not exist")


def test_empty_file(cli, tmp_path):
    f = tmp_path / "empty.onnx"
    f.write_bytes(b"")
    _assert_clean_error(cli("inspect", "--model", str(f)), "empty")


def _tiny_onnx(path):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    torch.onnx.export(model, (torch.randn(1, 3, 8, 8),), str(path), dynamo=False,
                      input_names=["x"], output_names=["y"])
    return path


def test_truncated_onnx(cli, tmp_path):
    good = _tiny_onnx(tmp_path / "good.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
    _assert_clean_error(cli("inspect", "--model", str(bad)), "onnx")


def test_corrupt_onnx(cli, tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf\xff\xfe" * 10)
    _assert_clean_error(cli("inspect", "--model", str(bad)), "onnx")


def test_valid_onnx_loads(cli, tmp_path):
    good = _tiny_onnx(tmp_path / "good.onnx")
    code, out, err = cli("inspect", "--model", str(good))
    assert code == 0, err
    assert "[1, 3, 8, 8]" in out and "1x4x6x6" in out


def test_external_data_outside_folder(cli, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64)
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    weight.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "16")):
        entry = weight.external_data.add()
        entry.key, entry.value = k, v
    node = helper.make_node("Add", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [weight])
    path = inner / "evil.onnx"
    onnx.save(helper.make_model(graph), str(path))
    _assert_clean_error(cli("inspect", "--model", str(path)), "outside the model's folder")


def test_pickle_with_code_is_refused(cli, tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    path = tmp_path / "model.pt"
    with open(path, "wb") as fh:
        pickle.dump(Evil(), fh)
    code, out, err = cli("inspect", "--model", str(path))
    _assert_clean_error((code, out, err), "refuses")
    assert "pwned" not in out


def test_state_dict_is_explained(cli, tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    _assert_clean_error(cli("inspect", "--model", str(path)), "plain weights", "--trust-code")


def test_python_file_needs_trust(cli, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\ndef make():\n    return torch.nn.Linear(4, 2)\n")
    _assert_clean_error(cli("inspect", "--model", f"{f}:make", "--input-shape", "1x4"), "--trust-code")


def test_python_syntax_error(cli, tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("def make(:\n    pass\n")
    _assert_clean_error(cli("inspect", "--model", f"{f}:make", "--trust-code"), "syntax error", "line 1")


def test_python_factory_raises(cli, tmp_path):
    f = tmp_path / "raiser.py"
    f.write_text("def make():\n    raise ValueError('no weights here')\n")
    _assert_clean_error(cli("inspect", "--model", f"{f}:make", "--trust-code"), "no weights here")


def test_python_factory_works_with_trust(cli, tmp_path):
    f = tmp_path / "good.py"
    f.write_text(textwrap.dedent("""
        import torch
        INPUT_SHAPE = (1, 4)
        def make():
            return torch.nn.Linear(4, 2)
    """))
    code, out, err = cli("inspect", "--model", f"{f}:make", "--trust-code", "--json")
    assert code == 0, err
    assert '"parameters": 10' in out


def test_wrong_input_shape(cli):
    _assert_clean_error(cli("inspect", "--model", "demo:tiny", "--input-shape", "1x1x32x32"),
                        "rejects inputs x float32 [batch=1, 1, 32, 32]",
                        "own inputs are: x float32 [batch=1, 3, 32, 32]", "--input-shape 1x3x32x32")


def test_malformed_input_shape(cli):
    _assert_clean_error(cli("inspect", "--model", "demo:tiny", "--input-shape", "1xthree"), "not a list")


def test_unknown_demo(cli):
    _assert_clean_error(cli("inspect", "--model", "demo:nope"), "no demo model", "demo:inefficient")


def test_unknown_torchvision(cli):
    _assert_clean_error(cli("inspect", "--model", "tv:not_a_model"), "torchvision", "planner models")


def test_debug_shows_traceback(cli):
    code, _, err = cli("--debug", "inspect", "--model", "demo:nope")
    assert code == 2 and "Traceback" in err


@pytest.mark.parametrize("name,params", [("inefficient", 1_185_078), ("efficient", 1_062_584)])
def test_seed_parameter_counts(cli, name, params):
    code, out, _ = cli("inspect", "--model", f"demo:{name}")
    assert code == 0
    assert f"{params:,}" in out
    assert "1x200" in out


def test_exported_program_loads(cli, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(6, 3)).eval()
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(2, 6),)), str(path))
    code, out, err = cli("inspect", "--model", str(path))
    assert code == 0, err
    assert "[2, 6]" in out and "2x3" in out


def test_torchscript_loads_with_shape(cli, tmp_path):
    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(5, 2)), str(path))
    code, out, err = cli("inspect", "--model", str(path), "--input-shape", "3x5")
    assert code == 0, err
    assert "3x2" in out


def test_models_lists_sources(cli):
    code, out, _ = cli("models")
    assert code == 0
    assert "demo:inefficient" in out and "tv:resnet18" in out and "downloaded" in out

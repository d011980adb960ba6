"""A model's inputs as named tensors: parsed from --input, read from ONNX graphs, torch.export
signatures and INPUT_SPEC, merged with what the user gave, and fed with sensible values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from planner.errors import InputSpecError
from planner.models import load_model
from planner.models.loaded import make_feeds
from planner.models.spec import ModelInputs, TensorSpec, parse_input


class TinyText(nn.Module):
    """Token ids and a mask in, logits out: the smallest model shaped like a text encoder."""

    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        x = self.emb(input_ids) * attention_mask[..., None].to(torch.float32)
        return self.head(x.mean(1))


def _text_onnx(path: Path, *, dynamic: bool = True) -> Path:
    torch.manual_seed(0)
    ids, mask = torch.randint(0, 50, (1, 16)), torch.ones(1, 16, dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
    torch.onnx.export(TinyText().eval(), (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                      dynamic_axes=axes if dynamic else None, dynamo=False)
    return path


def _image_onnx(path: Path, *, dynamic: bool) -> Path:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(2)).eval()
    x = torch.randn(1, 3, 8, 8)
    model(x)
    torch.onnx.export(model, (x,), str(path), input_names=["pixels"],
                      dynamic_axes={"pixels": {0: "batch"}} if dynamic else None, dynamo=False)
    return path


def test_input_flag_parses_name_shape_dtype_and_range() -> None:
    spec = parse_input("input_ids:2x128:int64:0-30522")
    assert (spec.name, spec.shape, spec.dtype, spec.low, spec.high) == ("input_ids", (2, 128), "int64", 0, 30522)
    assert spec.axes == ("batch", "sequence")
    assert spec.cli() == "input_ids:2x128:int64:0-30522"


@pytest.mark.parametrize("text, words", [
    ("input_ids", "does not have the form"),
    ("input_ids:1xx8:int64", "not a list of positive integers"),
    ("input_ids:1x8:int65", "unknown dtype"),
    ("input_ids:1x8:int64:9-3", "is empty"),
    ("input_ids:1x8:int64:a-b", "not LOW-HIGH"),
    ("pixels:1x3:float32:0-5", "integer inputs only"),
])
def test_bad_input_flag_says_the_form_with_an_example(text: str, words: str) -> None:
    with pytest.raises(InputSpecError) as err:
        parse_input(text, example="input_ids:1x16:int64")
    assert words in err.value.problem
    assert "input_ids:1x16:int64" in err.value.fix


def test_feeds_draw_ids_in_range_masks_of_ones_and_normal_floats() -> None:
    inputs = ModelInputs((TensorSpec(name="input_ids", shape=(2, 16), dtype="int64", low=5, high=9),
                          TensorSpec(name="attention_mask", shape=(2, 16), dtype="int64"),
                          TensorSpec(name="token_type_ids", shape=(2, 16), dtype="int64"),
                          TensorSpec(name="pixels", shape=(2, 3, 4, 4))))
    feed = make_feeds(inputs, count=1, seed=0)[0]
    assert list(feed) == ["input_ids", "attention_mask", "token_type_ids", "pixels"]
    assert feed["input_ids"].dtype == np.int64 and feed["input_ids"].min() >= 5 and feed["input_ids"].max() < 9
    assert (feed["attention_mask"] == 1).all() and (feed["token_type_ids"] == 0).all()
    assert feed["pixels"].dtype == np.float32 and abs(float(feed["pixels"].std()) - 1.0) < 0.5
    assert make_feeds(inputs, seed=0)[0]["pixels"].tolist() == feed["pixels"].tolist()


def test_batch_and_sequence_change_every_input() -> None:
    inputs = ModelInputs((parse_input("input_ids:1x128:int64"), parse_input("attention_mask:1x128:int64")))
    moved = inputs.with_batch(4).with_sequence(32)
    assert [t.shape for t in moved.tensors] == [(4, 32), (4, 32)]
    assert moved.sequence == 32 and moved.batch == 4


def test_two_input_onnx_lists_both_inputs_with_dynamic_axes(tmp_path: Path) -> None:
    model = load_model(str(_text_onnx(tmp_path / "text.onnx")))
    ids, mask = model.inputs.tensors
    assert (ids.name, ids.dtype, ids.axes) == ("input_ids", "int64", ("batch", "sequence"))
    assert (mask.name, mask.dtype) == ("attention_mask", "int64")
    # The token range comes from the embedding table the ids index.
    assert (ids.low, ids.high) == (0, 50)
    assert model.inputs.dynamic_batch
    assert model.output_shape == (1, 3)


def test_one_given_input_sets_batch_and_sequence_for_the_others(tmp_path: Path) -> None:
    model = load_model(str(_text_onnx(tmp_path / "text.onnx")), inputs=["input_ids:2x24:int64"])
    assert [t.shape for t in model.inputs.tensors] == [(2, 24), (2, 24)]
    assert model.output_shape == (2, 3)


def test_unknown_input_name_lists_the_models_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputSpecError) as err:
        load_model(str(_text_onnx(tmp_path / "text.onnx")), inputs=["ids:1x16:int64"])
    assert "no input named 'ids'" in err.value.problem
    assert "input_ids int64 [batch=1, sequence=128]" in err.value.fix
    assert "attention_mask" in err.value.fix


def test_wrong_dtype_names_the_graphs_dtype(tmp_path: Path) -> None:
    with pytest.raises(InputSpecError) as err:
        load_model(str(_text_onnx(tmp_path / "text.onnx")), inputs=["input_ids:1x16:float32"])
    assert "is int64 in the graph" in err.value.problem


def test_token_range_beyond_the_embedding_table_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputSpecError) as err:
        load_model(str(_text_onnx(tmp_path / "text.onnx")), inputs=["input_ids:1x16:int64:0-5000"])
    assert "embedding table has 50 rows" in err.value.problem
    assert "input_ids:1x16:int64:0-50" in err.value.fix


def test_static_batch_onnx_is_measured_at_its_batch(tmp_path: Path) -> None:
    model = load_model(str(_image_onnx(tmp_path / "static.onnx", dynamic=False)))
    assert not model.inputs.dynamic_batch
    assert model.inputs.first.shape == (1, 3, 8, 8)
    assert any("fixes the batch at 1" in n for n in model.notes)


def test_open_dimension_that_cannot_be_guessed_asks_for_it(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, "H", "W"])])
    path = tmp_path / "open.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(InputSpecError) as err:
        load_model(str(path))
    assert "x axis 2 (H) and axis 3 (W)" in err.value.problem and "x0" not in err.value.fix
    loaded = load_model(str(path), input_shape="2x3x16x16")
    assert loaded.inputs.first.shape == (2, 3, 16, 16) and loaded.inputs.dynamic_batch


def test_factory_input_spec_declares_two_integer_inputs(tmp_path: Path) -> None:
    source = tmp_path / "text_model.py"
    source.write_text(
        "import torch\n"
        "class TinyText(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = torch.nn.Embedding(50, 8)\n"
        "    def forward(self, input_ids, attention_mask):\n"
        "        return (self.emb(input_ids) * attention_mask[..., None]).mean(1)\n"
        "INPUT_SPEC = ['input_ids:1x12:int64:0-50', {'name': 'attention_mask', 'shape': [1, 12], 'dtype': 'int64'}]\n"
        "def make():\n"
        "    return TinyText()\n")
    model = load_model(f"{source}:make", trust_code=True)
    assert model.inputs.names == ("input_ids", "attention_mask")
    assert model.inputs.first.range_basis == "given with --input"
    assert model.output_shape == (1, 8)


def test_factory_text_model_without_spec_says_what_to_pass(tmp_path: Path) -> None:
    source = tmp_path / "ids_model.py"
    source.write_text("import torch\n"
                      "def make():\n"
                      "    return torch.nn.Embedding(50, 8)\n")
    with pytest.raises(InputSpecError) as err:
        load_model(f"{source}:make", trust_code=True)
    assert "--input" in err.value.fix
    model = load_model(f"{source}:make", trust_code=True, inputs=["input:1x16:int64"])
    assert model.inputs.first.high == 50  # drawn within the embedding table
    assert model.output_shape == (1, 16, 8)


def test_exported_program_keeps_its_signature_and_static_batch(tmp_path: Path) -> None:
    path = tmp_path / "text.pt2"
    ids, mask = torch.randint(0, 50, (2, 16)), torch.ones(2, 16, dtype=torch.int64)
    torch.export.save(torch.export.export(TinyText().eval(), (ids, mask)), str(path))
    model = load_model(str(path))
    assert model.inputs.names == ("input_ids", "attention_mask")
    assert [t.shape for t in model.inputs.tensors] == [(2, 16), (2, 16)]
    assert not model.inputs.dynamic_batch  # exported without dynamic shapes: the batch is fixed
    assert model.program is not None


def test_exported_program_with_dynamic_batch(tmp_path: Path) -> None:
    path = tmp_path / "dyn.pt2"
    ids, mask = torch.randint(0, 50, (2, 16)), torch.ones(2, 16, dtype=torch.int64)
    batch = torch.export.Dim("batch")
    program = torch.export.export(TinyText().eval(), (ids, mask),
                                  dynamic_shapes={"input_ids": {0: batch}, "attention_mask": {0: batch}})
    torch.export.save(program, str(path))
    model = load_model(str(path))
    assert model.inputs.dynamic_batch
    assert model.inputs.first.shape == (2, 16)  # the example it was exported with


def test_torchscript_needs_inputs_and_names_its_arguments(tmp_path: Path) -> None:
    path = tmp_path / "text.pt"
    torch.jit.save(torch.jit.script(TinyText().eval()), str(path))
    with pytest.raises(InputSpecError) as err:
        load_model(str(path))
    assert "input_ids, attention_mask" in err.value.problem
    model = load_model(str(path), inputs=["input_ids:1x8:int64", "attention_mask:1x8:int64"])
    assert model.output_shape == (1, 3) and not model.hooks_work

"""Static INT8 of a model with attention: the matrix products quantized, LayerNorm, Softmax and the residual Adds in
float, and the outputs still like the original's on the plan's judged samples."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from hardware_profiles import fixture_profile

from planner.models import load_model
from planner.models.valdata import split_val_data
from planner.onnx.attention import has_attention
from planner.onnx.quantize import TRANSFORMER_RECIPE_NOTE
from planner.plugins import PlanContext
from targets.edge.int8 import Int8Plugin

VOCAB, SEQ = 100, 16


@pytest.fixture(scope="module")
def encoder_onnx(tmp_path_factory) -> Path:
    """An embedding and two nn.TransformerEncoderLayer (d_model 32, batch first) over a mean-pooled 10-class head."""
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, 32)
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(32, 10)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.head(self.encoder(self.embed(ids)).mean(1))

    torch.manual_seed(0)
    model = Encoder().eval()
    with torch.no_grad():
        # An outlier channel in the residual stream, as trained transformers grow: one INT8 scale per tensor
        # over the residual sums and LayerNorm inputs then holds the other channels badly.
        model.embed.weight[:, 3] = 60.0 * torch.randn(VOCAB)
        for name, param in model.named_parameters():
            if name.endswith("bias"):  # as trained: equal (zero) biases would be stored once, shared by LayerNorm
                param.normal_(0.0, 0.02)
    path = tmp_path_factory.mktemp("encoder") / "encoder.onnx"
    torch.onnx.export(model, (torch.randint(0, VOCAB, (2, SEQ)),), str(path), input_names=["ids"],
                      output_names=["logits"], dynamic_axes={"ids": {0: "batch"}, "logits": {0: "batch"}},
                      dynamo=False)
    return path


def _quantized_inputs(graph: onnx.GraphProto) -> Counter[str]:
    """How many ops of each type take a dequantized tensor (an INT8 value) as an input."""
    dequantized = {out for n in graph.node if n.op_type == "DequantizeLinear" for out in n.output}
    return Counter(n.op_type for n in graph.node if any(i in dequantized for i in n.input))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_static_int8_of_an_encoder_keeps_it_and_quantizes_only_its_products(encoder_onnx, tmp_path):
    import onnxruntime as ort

    assert has_attention(encoder_onnx)
    rng = np.random.default_rng(7)
    val = tmp_path / "val"
    val.mkdir()
    for i in range(4):
        np.save(val / f"b{i}.npy", rng.integers(0, VOCAB, (16, SEQ)).astype(np.int64))
    model = load_model(str(encoder_onnx))
    ctx = PlanContext(hw=fixture_profile("epyc_container_cgroup_v2"), model=model, workdir=tmp_path / "work",
                      quick=True, val_data=val)
    static = next(s for s in Int8Plugin().candidates(ctx) if s.config["mode"] == "static")
    assert TRANSFORMER_RECIPE_NOTE in static.notes
    assert any("judged on the other 42" in n for n in static.notes)  # 22 of 64 samples calibrate

    quantized = onnx.load(static.artifacts["onnx"]).graph
    took_int8 = _quantized_inputs(quantized)
    assert took_int8["MatMul"] + took_int8["Gemm"] >= 8  # the projections, feed-forward layers and the head
    assert not {"LayerNormalization", "Softmax", "Add"} & set(took_int8)

    # The raw cosine the plan judges: the quantized file against the original on the judged samples.
    original = ort.InferenceSession(str(encoder_onnx), providers=["CPUExecutionProvider"])
    int8 = ort.InferenceSession(static.artifacts["onnx"], providers=["CPUExecutionProvider"])
    judged = split_val_data(val, inputs=model.inputs).judged
    ref = np.concatenate([original.run(None, {"ids": f["ids"]})[0] for f, _ in judged])
    out = np.concatenate([int8.run(None, {"ids": f["ids"]})[0] for f, _ in judged])
    assert _cosine(ref, out) > 0.95

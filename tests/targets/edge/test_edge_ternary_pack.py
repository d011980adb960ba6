"""The ternary file's convolutions: stored 2-bit packed on disk, unpacked once when ONNX Runtime loads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from targets.edge.ternary_pack import (
    CONV_PACKED,
    INT8_CODES,
    describe_packed,
    pack_codes,
    pack_onnx,
    ternarize_rows,
    unpack_codes,
)


def _conv_net():
    """Two convolutions of 405 and 4,320 weights: the first is not a multiple of four, so the padding is exercised.

    Big enough that the packed weights outweigh the unpack nodes' own bytes in the file (on a few
    hundred weights the graph description dominates either way).
    """
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 15, 3, padding=1), nn.ReLU(), nn.Conv2d(15, 32, 3, padding=1)).eval()


def _export(module, path: Path) -> Path:
    import torch

    torch.onnx.export(module, torch.zeros(1, 3, 6, 6), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False, opset_version=17)
    return path


def _session(path: Path, optimized: Path | None = None):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    if optimized is not None:
        opts.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def conv_files(tmp_path_factory):
    """(module, fp32 file, packed ternary file, INT8-code ternary file)."""
    folder = tmp_path_factory.mktemp("ternary_conv")
    module = _conv_net()
    fp32 = _export(module, folder / "net.onnx")
    packed = pack_onnx(fp32, folder / "net.packed.onnx")
    codes = pack_onnx(fp32, folder / "net.int8codes.onnx", conv_storage="int8")
    return module, fp32, packed, codes


def test_codes_round_trip_with_padding():
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)  # 135 weights: the last byte is padded
    signs, alpha = ternarize_rows(weight)
    packed = pack_codes(signs)
    assert packed.dtype == np.uint8 and packed.shape == (34, 1)  # four codes per byte
    np.testing.assert_array_equal(unpack_codes(packed, alpha, weight.shape),
                                  signs * alpha.reshape(-1, 1, 1, 1))


def test_packed_convs_are_smaller_on_disk_than_int8_codes(conv_files):
    _, _, packed, codes = conv_files
    assert [layer.storage for layer in packed.layers] == [CONV_PACKED, CONV_PACKED]
    assert [layer.storage for layer in codes.layers] == [INT8_CODES, INT8_CODES]
    assert packed.path.stat().st_size < codes.path.stat().st_size
    assert [row["storage"] for row in describe_packed(packed.path)] == [CONV_PACKED, CONV_PACKED]


def test_packed_convs_compute_the_ternary_weights(conv_files):
    import copy

    import torch

    from targets.edge.ternary import ternarize_module

    module, _, packed, codes = conv_files
    reference = copy.deepcopy(module)
    ternarize_module(reference)
    x = np.random.default_rng(1).standard_normal((4, 3, 6, 6)).astype(np.float32)
    with torch.inference_mode():
        expected = reference(torch.from_numpy(x)).numpy()
    got_packed = _session(packed.path).run(None, {"x": x})[0]
    got_codes = _session(codes.path).run(None, {"x": x})[0]
    np.testing.assert_allclose(got_packed, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_packed, got_codes, rtol=1e-4, atol=1e-5)


def test_onnxruntime_unpacks_once_at_load(conv_files, tmp_path):
    """The optimized graph holds the same compute nodes as the fp32 file's: the unpack chain was folded away."""
    import onnx

    _, fp32, packed, _ = conv_files
    _session(packed.path, tmp_path / "packed.opt.onnx")
    _session(fp32, tmp_path / "fp32.opt.onnx")
    ops = {name: [n.op_type for n in onnx.load(str(tmp_path / f"{name}.opt.onnx")).graph.node]
           for name in ("packed", "fp32")}
    assert ops["packed"] == ops["fp32"]
    assert not {"BitShift", "Mod", "Split", "Cast"} & set(ops["packed"])


def test_exporter_debug_metadata_is_left_out_and_counted(conv_files, tmp_path):
    """Node stack traces (torch.export's exporter writes them) stay out of the packed file; the bytes are counted."""
    import onnx

    _, fp32, _, _ = conv_files
    model = onnx.load(str(fp32))
    for node in model.graph.node:
        node.metadata_props.add(key="pkg.torch.onnx.stack_trace", value="File model.py, line 1, in forward\n" * 10)
    annotated = tmp_path / "annotated.onnx"
    onnx.save(model, str(annotated))
    plain = pack_onnx(fp32, tmp_path / "plain.packed.onnx")
    packed = pack_onnx(annotated, tmp_path / "annotated.packed.onnx")
    assert packed.debug_bytes_dropped > plain.debug_bytes_dropped >= 0  # stripping never adds bytes
    assert packed.path.stat().st_size == plain.path.stat().st_size
    x = np.zeros((1, 3, 6, 6), dtype=np.float32)
    got, expected = (_session(p.path).run(None, {"x": x})[0] for p in (packed, plain))
    np.testing.assert_array_equal(got, expected)

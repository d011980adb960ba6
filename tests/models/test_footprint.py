"""Memory guards before allocating: inputs and activations are estimated, absurd shapes refused with exit 2."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from planner.errors import InputSpecError
from planner.models import footprint as footprint_module
from planner.models.footprint import (
    INPUTS_BASIS,
    Footprint,
    check_fits,
    estimate_footprint,
    sweep_guard,
    tensor_bytes,
    trace_largest_activation,
)
from planner.models.loaded import make_feeds, tensor_values
from planner.models.spec import ModelInputs, TensorSpec
from planner.units import GIB, MIB


class TwoConvs(torch.nn.Module):
    """3 -> 16 channels at full resolution (the largest activation), then a pooled classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


class LazyCache(torch.nn.Module):
    """Builds a tensor on its first forward and keeps it: the trace must not leave a fake one behind."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            self.scale = torch.ones(x.shape[1:])
        return x * self.scale


def test_input_bytes_come_from_shapes_and_dtypes() -> None:
    inputs = ModelInputs((TensorSpec(name="ids", shape=(2, 128), dtype="int64"),
                          TensorSpec(name="mask", shape=(2, 128), dtype="int64"),
                          TensorSpec(name="x", shape=(2, 3, 8, 8), dtype="float16")))
    assert tensor_bytes(inputs) == 2 * 128 * 8 * 2 + 2 * 3 * 8 * 8 * 2


def test_trace_finds_the_largest_activation_without_allocating_it() -> None:
    # 64x16x4096x4096 float32 is 64 GiB: the trace must report it without touching real memory.
    inputs = ModelInputs.single((64, 3, 4096, 4096))
    largest = trace_largest_activation(TwoConvs().eval(), inputs)
    assert largest == 64 * 16 * 4096 * 4096 * 4
    estimate = estimate_footprint(inputs, TwoConvs().eval())
    assert estimate.peak_bytes == estimate.input_bytes + 2 * largest
    assert "shape trace" in estimate.describe()


def test_trace_leaves_no_fake_tensor_on_the_module() -> None:
    model = LazyCache().eval()
    assert trace_largest_activation(model, ModelInputs.single((1, 4, 2, 2))) is not None
    assert model.scale is None
    out = model(torch.ones(1, 4, 2, 2))  # the real run builds a real cache
    assert float(out.sum()) == 16.0


def test_untraceable_module_falls_back_to_inputs_only() -> None:
    scripted = torch.jit.script(TwoConvs().eval())
    estimate = estimate_footprint(ModelInputs.single((1, 3, 8, 8)), scripted)
    assert estimate.activation_bytes is None and estimate.basis == INPUTS_BASIS


def test_estimate_scales_with_the_batch() -> None:
    estimate = Footprint(batch=4, input_bytes=4 * MIB, activation_bytes=8 * MIB)
    assert estimate.at_batch(8).peak_bytes == 2 * estimate.peak_bytes
    assert estimate.largest_batch_within(40 * MIB) == 8  # 5 MiB per sample


def test_too_large_names_estimate_limit_and_a_batch_that_fits() -> None:
    inputs = ModelInputs.single((64, 3, 1024, 1024))
    estimate = estimate_footprint(inputs)  # 768 MiB of inputs
    with pytest.raises(InputSpecError) as err:
        check_fits(estimate, 256 * MIB, where="available on this machine", inputs=inputs)
    assert err.value.exit_code == 2
    assert "768 MiB" in err.value.problem and "256 MiB" in err.value.problem
    assert "nothing was allocated" in err.value.problem
    # Half of the limit is left for the runtime: 128 MiB / 12 MiB per sample = batch 10.
    assert "--input-shape 10x3x1024x1024" in err.value.fix
    check_fits(estimate, GIB, where="available on this machine", inputs=inputs)  # fits: no error


def test_float_inputs_are_drawn_in_their_dtype_without_a_float64_copy() -> None:
    spec = TensorSpec(name="x", shape=(1, 3, 512, 512), dtype="float32")
    tracemalloc.start()
    try:
        array = tensor_values(spec, np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert array.dtype == np.float32
    assert peak < 1.5 * array.nbytes  # a float64 draw then cast would peak at 3x
    half = tensor_values(TensorSpec(name="x", shape=(2, 4), dtype="float16"), np.random.default_rng(0))
    assert half.dtype == np.float16
    ids = make_feeds(ModelInputs((TensorSpec(name="ids", shape=(2, 16), dtype="int32", low=0, high=100),)))[0]["ids"]
    assert ids.dtype == np.int32 and ids.min() >= 0 and ids.max() < 100


def test_sweep_guard_estimates_each_batch_against_the_tightest_limit(monkeypatch) -> None:
    monkeypatch.setattr(footprint_module, "host_memory_limit", lambda: (GIB, "available on this machine"))
    guard = sweep_guard(Footprint(batch=1, input_bytes=MIB, activation_bytes=2 * MIB), budget_bytes=100 * MIB)
    assert guard["memory_limit_bytes"] == 100 * MIB
    # Batch 8: inputs 8 MiB + 2 x 16 MiB of activations + a second input set of 8 MiB.
    assert guard["estimate_bytes"](8) == 48 * MIB


def test_absurd_shape_exits_2_with_the_estimate_before_allocating(cli, monkeypatch) -> None:
    """`planner profile --input-shape 64x3x4096x4096`: a clear error, not a MemoryError mid-way."""
    from planner.models import loaders

    monkeypatch.setattr(footprint_module, "host_memory_limit", lambda: (16 * GIB, "available on this machine"))

    def allocated(*args, **kwargs):
        raise AssertionError("the model was run: inputs were allocated")

    monkeypatch.setattr(loaders, "_validate_forward", allocated)
    code, out, err = cli("profile", "--model", "demo:efficient", "--input-shape", "64x3x4096x4096")
    assert code == 2, err
    assert "internal error" not in err
    assert "would need about" in err and "12 GiB" in err  # inputs: 64x3x4096x4096 float32
    assert "16 GiB of memory available on this machine" in err
    assert "fix: use batch" in err

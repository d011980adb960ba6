"""TensorRTSession's binding logic without a GPU: a stand-in engine records what the session asks of it.

The real engine, context and CUDA stream need TensorRT and a GPU (see test_nvidia_gpu.py); here a
fake `tensorrt` module with the same tensor-name API (set_input_shape, set_tensor_address,
execute_async_v3) checks that every input is shaped, bound and typed by name, on the CPU.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import targets.nvidia.tensorrt as trt_mod
from targets.nvidia.tensorrt import TensorRTSession

_INPUT, _OUTPUT = "INPUT", "OUTPUT"


class _FakeEngine:
    """Inputs in an order other than the model's, the mask as INT32, one FLOAT output of 4 classes."""

    def __init__(self) -> None:
        self.tensors = {"attention_mask": (_INPUT, "INT32"), "input_ids": (_INPUT, "INT64"),
                        "logits": (_OUTPUT, "FLOAT")}
        self.profile = ((1, 64), (2, 64), (32, 64))
        self.context = _FakeContext(self)

    @property
    def num_io_tensors(self) -> int:
        """How many inputs and outputs the engine has."""
        return len(self.tensors)

    def get_tensor_name(self, i: int) -> str:
        """The i-th tensor's name (inputs first, in the engine's own order)."""
        return list(self.tensors)[i]

    def get_tensor_mode(self, name: str) -> str:
        """INPUT or OUTPUT."""
        return self.tensors[name][0]

    def get_tensor_dtype(self, name: str) -> types.SimpleNamespace:
        """A stand-in DataType: only its member name is read."""
        return types.SimpleNamespace(name=self.tensors[name][1])

    def get_tensor_profile_shape(self, name: str, profile: int) -> tuple:
        """(min, opt, max), the same for every input."""
        return self.profile

    def create_execution_context(self) -> "_FakeContext":
        """The one recording context."""
        return self.context


class _FakeContext:
    """Records shapes, addresses and launches; rejects shapes outside the engine's profile."""

    def __init__(self, engine: _FakeEngine) -> None:
        self.engine = engine
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.addresses: dict[str, int] = {}
        self.shape_calls = 0
        self.launches = 0

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        """Record the shape; False outside the profile, as TensorRT answers."""
        self.shape_calls += 1
        low, _, high = self.engine.profile
        if not all(lo <= d <= hi for lo, d, hi in zip(low, shape, high)):
            return False
        self.shapes[name] = tuple(shape)
        return True

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        """The output's shape: the bound batch by 4 classes."""
        return (self.shapes["input_ids"][0], 4)

    def set_tensor_address(self, name: str, pointer: int) -> None:
        """Record which buffer is bound to which tensor."""
        self.addresses[name] = pointer

    def execute_async_v3(self, stream: int) -> bool:
        """Count the launch (nothing is computed)."""
        self.launches += 1
        return True


@pytest.fixture
def fake_trt(monkeypatch) -> _FakeEngine:
    """A `tensorrt` module whose Runtime deserializes to one fake engine; CUDA calls go to the CPU."""
    import torch

    engine = _FakeEngine()

    class ILogger:
        """The base class the session's recording logger derives from."""

        Severity = types.SimpleNamespace(INTERNAL_ERROR=0, ERROR=1)

        def __init__(self) -> None:
            pass

    class Runtime:
        """Deserializes any bytes to the fake engine."""

        def __init__(self, logger) -> None:
            pass

        def deserialize_cuda_engine(self, blob: bytes) -> _FakeEngine:
            """The fake engine, whatever the bytes."""
            return engine

    fake = types.ModuleType("tensorrt")
    fake.__dict__.update(__version__="10.0.0-fake", ILogger=ILogger, Runtime=Runtime,
                         TensorIOMode=types.SimpleNamespace(INPUT=_INPUT, OUTPUT=_OUTPUT))
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    monkeypatch.setattr(trt_mod, "_LOGGER", None)  # a logger of the fake module must not outlive it
    monkeypatch.setattr(trt_mod, "CUDA_DEVICE", "cpu")
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
    return engine


@pytest.fixture
def session(fake_trt, tmp_path) -> TensorRTSession:
    """A TensorRTSession opened over the fake engine."""
    path = tmp_path / "text.engine"
    path.write_bytes(b"serialized engine")
    return TensorRTSession(path, precision="fp32")


def test_every_input_is_prepared_by_name_in_the_engines_order_and_type(session, text):
    import torch

    feed = text.make_feeds(batch=2, seed=1)[0]
    mask, ids = session.prepare(feed)
    assert (mask.dtype, ids.dtype) == (torch.int32, torch.int64)
    np.testing.assert_array_equal(ids.numpy(), feed["input_ids"])
    np.testing.assert_array_equal(mask.numpy(), feed["attention_mask"])
    assert "attention_mask int32, input_ids int64" in session.info()["inputs"]


def test_run_shapes_and_binds_every_input_once_per_shape(session, fake_trt, text):
    context = fake_trt.context
    prepared = session.prepare(text.make_feeds(batch=2, seed=2)[0])
    out = session.run(prepared)
    assert context.shapes == {"attention_mask": (2, 64), "input_ids": (2, 64)}
    assert context.addresses["attention_mask"] == prepared[0].data_ptr()
    assert context.addresses["input_ids"] == prepared[1].data_ptr()
    assert tuple(out.shape) == (2, 4) and context.addresses["logits"] == out.data_ptr()
    calls = context.shape_calls
    again = session.prepare(text.make_feeds(batch=2, seed=3)[0])
    session.run(again)
    assert context.shape_calls == calls, "the same shapes must not be set again"
    assert context.addresses["input_ids"] == again[1].data_ptr(), "each call binds its own buffers"
    session.run(session.prepare(text.make_feeds(batch=3, seed=4)[0]))
    assert context.shapes == {"attention_mask": (3, 64), "input_ids": (3, 64)}
    assert context.launches == 3


def test_a_shape_outside_the_profile_names_the_input(session, text):
    with pytest.raises(ValueError, match=r"input 'attention_mask' shape \(64, 64\) is outside the engine's "
                                         r"optimization profile \(min \(1, 64\), max \(32, 64\)\)"):
        session.run(session.prepare(text.make_feeds(batch=64)[0]))

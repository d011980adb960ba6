"""A candidate compiled for a fixed batch still answers validation batches of another size, row for row."""

from __future__ import annotations

import numpy as np
import pytest

from planner.measure.evaluate import _run_in_chunks


class FixedBatchSession:
    """Stands in for a runtime compiled at one batch: it refuses any other, as OpenVINO's static compile does."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.calls = 0

    def prepare(self, feed: dict) -> np.ndarray:
        return feed["x"]

    def run(self, x: np.ndarray) -> np.ndarray:
        if len(x) != self.batch:
            raise RuntimeError(f"the model input (shape=[{self.batch},4]) and the tensor {x.shape} are incompatible")
        self.calls += 1
        return x.sum(axis=1, keepdims=True) * 2.0

    def to_numpy(self, out: np.ndarray) -> np.ndarray:
        return out


@pytest.mark.parametrize("batch", [1, 4, 5])
def test_validation_rows_are_run_a_fixed_batch_at_a_time(batch: int) -> None:
    x = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
    session = FixedBatchSession(batch)
    out = _run_in_chunks(session, {"x": x}, batch)
    np.testing.assert_allclose(out, x.sum(axis=1, keepdims=True) * 2.0)
    assert out.shape == (64, 1) and session.calls == -(-64 // batch)


def test_a_dynamic_batch_session_gets_the_whole_feed_at_once() -> None:
    x = np.ones((64, 4), dtype=np.float32)
    session = FixedBatchSession(64)
    assert _run_in_chunks(session, {"x": x}, None).shape == (64, 1) and session.calls == 1

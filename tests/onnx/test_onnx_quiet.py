"""Quantizers' progress bars and root-logger notes stay out of the planner's output (stdout is JSON)."""

from __future__ import annotations

import logging

import pytest

from planner.onnx.quantize import quiet_library_output


def test_prints_and_root_warnings_are_kept_in_the_buffer(capsys) -> None:
    with quiet_library_output() as buffer:
        print("Statistics collection ━━━━ 100%")
        logging.warning("Axis 1 is out-of-range for weight 'bn.weight' with rank 1")
    out, err = capsys.readouterr()
    assert out == "" and "out-of-range" not in err
    assert "Statistics collection" in buffer.getvalue()


def test_errors_still_raise_and_the_logger_level_is_restored() -> None:
    before = logging.getLogger().level
    with pytest.raises(ValueError, match="bad op"), quiet_library_output():
        raise ValueError("bad op")
    assert logging.getLogger().level == before

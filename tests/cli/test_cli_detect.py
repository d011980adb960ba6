"""`planner detect --ceilings --refresh`: re-measures, and the ceilings say when and how they were measured."""

from __future__ import annotations

import planner.hardware.ceilings as ceilings_module
from planner.cli.main import main
from planner.hardware.ceilings import Ceilings


def _fake(calls: list[bool]):
    def measure(hw, quick, index=0):
        calls.append(quick)
        return Ceilings(peak_flops={"fp32": 100e9}, bandwidth_bytes_per_s=20e9, source="measured",
                        details={"timestamp": "2026-11-23T10:00:00+00:00", "repeats": 5, "mode": "full",
                                 "measured_while": "idle", "other_cores": [0.02]})
    return measure


def test_refresh_measures_again(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path))
    calls: list[bool] = []
    monkeypatch.setattr(ceilings_module, "_measure_cpu", _fake(calls))
    monkeypatch.setattr(ceilings_module, "_measure_cuda", _fake(calls))  # the same on a machine with a GPU
    assert main(["detect", "--ceilings"]) == 0
    assert main(["detect", "--ceilings"]) == 0
    assert len(calls) == 1  # the second run read the cache
    assert main(["detect", "--ceilings", "--refresh"]) == 0
    assert len(calls) == 2
    out = capsys.readouterr().out
    assert "How: measured 2026-11-23T10:00:00+00:00" in out and "best of 5 repeats" in out and "machine idle" in out


def test_refresh_without_ceilings_is_a_clear_error(monkeypatch, capsys) -> None:
    assert main(["detect", "--refresh"]) == 2
    assert "--ceilings --refresh" in capsys.readouterr().err


def test_a_busy_refresh_keeps_the_cached_ceilings_and_says_so(tmp_path, monkeypatch, capsys) -> None:
    """`detect --ceilings --refresh` under load shows the cleaner cached roofs, int8's ridge among them."""
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path))
    runs = iter([({"fp32": 100e9, "bf16": 300e9, "int8": 800e9}, 20e9, "idle", 0.02),
                 ({"fp32": 80e9, "bf16": 200e9, "int8": 500e9}, 15e9, "busy", 0.9)])

    def measure(hw, quick, index=0):
        peaks, bandwidth, state, load = next(runs)
        return Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=bandwidth, source="measured",
                        details={"timestamp": "2026-11-25T10:00:00+00:00", "repeats": 5, "mode": "full",
                                 "measured_while": state, "other_cores": [load]})

    monkeypatch.setattr(ceilings_module, "_measure_cpu", measure)
    monkeypatch.setattr(ceilings_module, "_measure_cuda", measure)
    assert main(["detect", "--ceilings"]) == 0
    capsys.readouterr()
    assert main(["detect", "--ceilings", "--refresh"]) == 0
    out = capsys.readouterr().out
    assert "peak fp32 100 GFLOP/s, bf16 300 GFLOP/s, int8 800 GFLOP/s" in out
    assert "ridge point 5 (fp32), 15 (bf16), 40 (int8) FLOP/byte" in out
    assert "Warning: a re-measure under load (0.90 cores busy) was kept out of the cache" in out

"""Memory probes and thread settings."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from planner.measure import (
    cuda_peak_bytes,
    current_rss_bytes,
    peak_rss_bytes,
    pin_torch_threads,
    reset_cuda_peak,
    thread_settings,
)


def test_rss_probes() -> None:
    """Peak RSS tracks current RSS and follows memory that gets touched."""
    current = current_rss_bytes()
    assert current > 0
    # The kernel's RSS counters are batched per CPU, so the two sources may differ by a few pages.
    assert peak_rss_bytes() >= 0.9 * current
    block = np.ones(64 * 1024 * 1024 // 8)  # 64 MiB, written so the pages are resident
    assert current_rss_bytes() >= 48 * 1024 * 1024
    assert peak_rss_bytes() >= 0.9 * current_rss_bytes()
    del block


def test_cuda_probes_without_or_with_cuda() -> None:
    """Without CUDA the probes say None; with it they return byte counts."""
    import torch

    reset_cuda_peak()
    peak = cuda_peak_bytes()
    if torch.cuda.is_available():
        assert isinstance(peak, int)
    else:
        assert peak is None


def test_thread_settings_reports_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread-pool environment variables are reported as set."""
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    settings = thread_settings()
    assert settings["OMP_NUM_THREADS"] == "3"
    assert settings["MKL_NUM_THREADS"] is None
    assert settings["usable_cpus"] >= 1


def test_thread_settings_reports_torch_only_when_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Torch's pools are reported only when torch is imported, and never imported for it."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    settings = thread_settings()
    assert settings["torch_intra_op_threads"] is None
    assert "torch" not in sys.modules


def test_pin_torch_threads() -> None:
    """Pinning sets intra-op threads; an inter-op refusal is recorded, not raised."""
    import torch

    intra_before = torch.get_num_threads()
    try:
        settings = pin_torch_threads(1, inter=torch.get_num_interop_threads())
        assert settings["torch_intra_op_threads"] == 1
        # Asking for a different inter-op count after parallel work may be refused; either way no raise.
        torch.ones(4) @ torch.ones(4)
        other = torch.get_num_interop_threads() + 1
        settings = pin_torch_threads(1, inter=other)
        assert settings["torch_inter_op_threads"] == other or any(
            "inter-op" in note for note in settings["notes"])
    finally:
        torch.set_num_threads(intra_before)
    with pytest.raises(ValueError):
        pin_torch_threads(0)


@pytest.mark.worker
def test_worker_peak_rss_is_its_own_not_the_parents():
    """A spawned worker must not inherit the parent's peak: candidates are compared by it."""
    from planner.measure import run_isolated
    from planner.measure.memory import peak_rss_bytes

    ballast = bytearray(400 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page so it is resident
    assert peak_rss_bytes() > 400e6
    outcome = run_isolated(peak_rss_bytes, timeout_s=60)
    assert outcome.ok, outcome.reason
    assert outcome.value < 200e6
    del ballast

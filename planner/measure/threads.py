"""Which thread counts are in force, recorded with every measurement, and pinning torch's pools."""

from __future__ import annotations

import os
import sys
from typing import Any

THREAD_ENV_VARS: tuple[str, ...] = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Environment variables that size native thread pools when their library loads."""

# Per-process facts: torch's inter-op pool can be sized only once, so a refused pin stays true.
_pin_notes: list[str] = []


def thread_settings() -> dict[str, Any]:
    """Return the thread settings in force now; torch's pools only if torch is already imported."""
    from planner.hardware.memory_limits import usable_cores

    settings: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cores(),
    }
    for name in THREAD_ENV_VARS:
        settings[name] = os.environ.get(name)
    torch = sys.modules.get("torch")
    # Importing torch here would itself start thread pools and cost seconds; only report it if loaded.
    if torch is not None and hasattr(torch, "get_num_threads"):
        settings["torch_intra_op_threads"] = int(torch.get_num_threads())
        settings["torch_inter_op_threads"] = int(torch.get_num_interop_threads())
    else:
        settings["torch_intra_op_threads"] = None
        settings["torch_inter_op_threads"] = None
    settings["notes"] = list(_pin_notes)
    return settings


def pin_torch_threads(intra: int, inter: int = 1) -> dict[str, Any]:
    """Set torch's intra-op and inter-op thread counts; returns ``thread_settings()`` afterwards.

    The inter-op pool can be sized only once per process and not after parallel work started;
    when torch refuses, the refusal is recorded in the ``notes`` entry instead of raised.
    """
    if intra < 1 or inter < 1:
        raise ValueError("thread counts must be at least 1")
    import torch

    torch.set_num_threads(intra)
    if torch.get_num_interop_threads() != inter:
        try:
            torch.set_num_interop_threads(inter)
        except RuntimeError as exc:
            _pin_notes.append(
                f"inter-op threads stay {torch.get_num_interop_threads()} (asked {inter}): {exc}"
            )
    return thread_settings()

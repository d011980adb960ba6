"""Memory probes: host resident set size (peak and current) and CUDA allocator peaks."""

from __future__ import annotations

import resource
import sys
from typing import Any

import psutil


def peak_rss_bytes() -> int:
    """Return this process's peak resident set size in bytes (never decreases)."""
    # Prefer VmHWM: it belongs to this process's address space. ru_maxrss survives fork+exec,
    # so a spawned worker would report its parent's peak (1 GB of torch for an ORT candidate).
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports ru_maxrss in KiB, macOS in bytes.
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def current_rss_bytes() -> int:
    """Return this process's current resident set size in bytes."""
    return int(psutil.Process().memory_info().rss)


def _cuda_torch() -> Any | None:
    # Only a process that already imported torch can have CUDA allocations to report; importing
    # it here would add torch's few hundred MB to an ONNX Runtime worker's measured peak RSS.
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return torch if torch.cuda.is_available() else None


def cuda_peak_bytes(device: Any = None) -> int | None:
    """Return the CUDA caching allocator's peak allocated bytes since the last reset, or None without CUDA."""
    torch = _cuda_torch()
    if torch is None:
        return None
    return int(torch.cuda.max_memory_allocated(device))


def reset_cuda_peak(device: Any = None) -> None:
    """Reset the CUDA allocator's peak counter (does nothing without CUDA)."""
    torch = _cuda_torch()
    if torch is not None:
        torch.cuda.reset_peak_memory_stats(device)

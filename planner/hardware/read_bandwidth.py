"""The read-only memory bandwidth ceiling: how fast this machine's cores read memory, the roof of LLM decoding.

Decoding a token reads every weight once and writes almost nothing, so its limit is a read, not a copy (a copy
also writes, and on many machines writes cost more than reads). The kernel sums a buffer well past the last-level
cache with torch (vectorized, on the threads the plan decodes with), and takes its maximum too: one read per byte,
each the best of a few samples, and the faster of the two kernels is the roof (on a 2-core EPYC, amax read 32 GB/s
where sum read 29: a roof a runtime's decoding beat would be no roof).
"""

from __future__ import annotations

from functools import partial

from planner.hardware.ceiling_values import ReadRoof
from planner.hardware.clock import best_rate, host_clock
from planner.hardware.profile import HardwareProfile

_MiB = 1 << 20


def last_level_cache(hw: HardwareProfile) -> int:
    """The largest cache the CPU reports (its last level), in bytes; 0 when unknown."""
    return max((size for level, size in hw.cpu.caches.items() if level.startswith(("L2", "L3", "L4"))), default=0)


def buffer_size(hw: HardwareProfile, quick: bool) -> int:
    """A buffer 4x (quick) or 8x the last-level cache, at least 256 MiB, within an eighth of usable memory."""
    llc = last_level_cache(hw)
    size = max(256 * _MiB, (4 if quick else 8) * llc)
    usable = hw.memory.usable_bytes
    if usable:
        size = min(size, max(16 * _MiB, usable // 8))
    return size


def measure_read_bandwidth(hw: HardwareProfile, threads: int, *, quick: bool = False) -> ReadRoof:
    """Measure the read-only bandwidth with `threads` threads (runs in the caller's process; torch needed)."""
    import torch

    previous = torch.get_num_threads()
    size = buffer_size(hw, quick)
    try:
        torch.set_num_threads(max(1, threads))
        buffer = torch.ones(size // 4, dtype=torch.float32)
        repeats = 3 if quick else 6
        rate, info = 0.0, {}
        for kernel in (torch.sum, torch.amax):
            found, details = best_rate(partial(kernel, buffer), float(buffer.numel() * 4), repeats, 0.05, host_clock)
            if found > rate:
                rate, info = found, details
        del buffer
    finally:
        torch.set_num_threads(previous)
    return ReadRoof(bytes_per_s=rate, buffer_bytes=size, threads=threads, last_level_cache_bytes=last_level_cache(hw),
                    samples=int(info.get("repeats", repeats)), spread=float(info.get("spread", 0.0)))

"""The `Ceilings` value: one device's roofline as measured (or looked up), without the code that measures it.

It lives apart from planner.hardware.ceilings because that module times GEMMs with torch (imported
inside its functions), and results.json's typed results hold a `Ceilings`: planner.results, and the
report and advice that read it, must not import torch even indirectly (pyproject's import-linter
contracts). planner.hardware.ceilings re-exports it, so its callers are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEASURED = "measured"
"""The `source` of ceilings measured on this machine (others come from a vendor table or an estimate)."""


@dataclass(frozen=True)
class Ceilings:
    """The roofline of one device: peak FLOP/s per precision, memory bandwidth, and how they were obtained."""

    peak_flops: dict[str, float]
    bandwidth_bytes_per_s: float
    source: str
    device: str = "cpu"
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def is_measured(self) -> bool:
        """True when the numbers were measured on this machine rather than taken from a table or estimated."""
        return self.source == MEASURED

    def has(self, precision: str) -> bool:
        """Whether a ceiling exists for this precision."""
        return precision in self.peak_flops

    def peak(self, precision: str = "fp32") -> float:
        """Peak FLOP/s for a precision ('fp32', 'tf32', 'fp16', 'bf16')."""
        if precision not in self.peak_flops:
            reason = self.details.get(f"{precision}_omitted", "it was not measured")
            raise KeyError(f"no {precision} ceiling on {self.device}: {reason}; "
                           f"available: {', '.join(sorted(self.peak_flops))}")
        return self.peak_flops[precision]

    def ridge_point(self, precision: str = "fp32") -> float:
        """Arithmetic intensity (FLOP/byte) above which a kernel is compute bound rather than memory bound."""
        return self.peak(precision) / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class ReadRoof:
    """A measured read-only bandwidth (planner.hardware.read_bandwidth, the roof of LLM decoding) and how it was
    taken."""

    bytes_per_s: float
    buffer_bytes: int
    threads: int
    last_level_cache_bytes: int  # 0 when the machine does not say
    samples: int
    spread: float  # (slowest - fastest) / fastest over the samples
    method: str = "the faster of torch.sum and torch.amax over a float32 buffer (each byte read once, nothing written)"

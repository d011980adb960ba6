"""Result values shared by the CLI, the report and the TUI: statuses and candidate results."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum

SCHEMA_VERSION = 1


class Status(StrEnum):
    """The outcome of one step or candidate."""

    OK = "ok"
    REJECTED = "rejected"  # measured, but failed the fidelity gate
    FAILED = "failed"
    SKIPPED = "skipped"
    PARTIAL = "partial"


@dataclass
class CandidateResult:
    """One measured (or failed) candidate, as results.json and the report carry it."""

    plugin: str
    label: str
    config: dict
    precision: str
    status: Status
    reason: str = ""
    latency_ms: dict = field(default_factory=dict)  # LatencyStats.to_dict()
    throughput: list = field(default_factory=list)  # [{batch, latency_p50_ms, samples_per_s}]
    knee_batch: int | None = None
    peak_memory_bytes: int | None = None
    memory_basis: str = ""
    size_bytes: int | None = None
    fidelity: dict = field(default_factory=dict)
    speedup: float | None = None
    reproduce: str = ""
    info: dict = field(default_factory=dict)
    threads: dict = field(default_factory=dict)
    stopped_by: str = ""
    wall_s: float | None = None
    spec: dict = field(default_factory=dict)

    @property
    def p50(self) -> float | None:
        """Median latency in ms, if measured."""
        return self.latency_ms.get("p50_ms")

    @property
    def best_throughput(self) -> float | None:
        """The highest samples/s over the batch sweep, if measured."""
        values = [p["samples_per_s"] for p in self.throughput if p.get("samples_per_s")]
        return max(values) if values else None

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        data = asdict(self)
        data["status"] = str(self.status)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "CandidateResult":
        """Inverse of `to_dict`."""
        data = dict(data)
        data["status"] = Status(data["status"])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

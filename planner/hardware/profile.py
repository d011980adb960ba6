"""HardwareProfile: the frozen, JSON-serialisable description of the machine a model will run on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

SCHEMA_VERSION = 1

# (major, minor) → tensor-core generation. Minor versions matter only for the 8.x family, where
# 8.9 (Ada) has the 4th-gen cores and FP8 while 8.0/8.6/8.7 (Ampere) have the 3rd-gen ones.
_TENSOR_CORE_BY_CC: dict[tuple[int, int], str] = {
    (7, 0): "Volta (1st gen)",
    (7, 2): "Volta (1st gen)",
    (7, 5): "Turing (2nd gen)",
    (8, 0): "Ampere (3rd gen)",
    (8, 6): "Ampere (3rd gen)",
    (8, 7): "Ampere (3rd gen)",
    (8, 9): "Ada Lovelace (4th gen)",
    (9, 0): "Hopper (4th gen)",
}
_BLACKWELL_MAJORS = (10, 11, 12)


def tensor_core_generation(compute_capability: tuple[int, int] | None) -> str | None:
    """The tensor-core generation for a CUDA compute capability; None when it has none or is unknown."""
    if compute_capability is None:
        return None
    major, minor = compute_capability
    if major < 7:
        return None
    if (major, minor) in _TENSOR_CORE_BY_CC:
        return _TENSOR_CORE_BY_CC[(major, minor)]
    if major in _BLACKWELL_MAJORS:
        return "Blackwell (5th gen)"
    if major == 8:
        return "Ampere (3rd gen)"
    if major > max(_BLACKWELL_MAJORS):
        # Newer than this table: it certainly has tensor cores, but naming the generation would be a guess.
        return f"newer than Blackwell (cc {major}.{minor})"
    return f"unknown (cc {major}.{minor})"


class DeviceClass(StrEnum):
    """The broad kind of machine, which decides which runtimes and precisions are worth trying."""

    DATACENTER_GPU = "datacenter_gpu"
    DESKTOP_GPU = "desktop_gpu"
    CPU_SERVER = "cpu_server"
    DESKTOP_CPU = "desktop_cpu"
    JETSON = "jetson"
    RASPBERRY_PI = "raspberry_pi"
    ARM_BOARD = "arm_board"

    @property
    def label(self) -> str:
        """A human-readable name, e.g. 'Raspberry Pi'."""
        return _DEVICE_CLASS_LABELS[self]


_DEVICE_CLASS_LABELS = {
    DeviceClass.DATACENTER_GPU: "datacenter GPU",
    DeviceClass.DESKTOP_GPU: "desktop GPU",
    DeviceClass.CPU_SERVER: "CPU server",
    DeviceClass.DESKTOP_CPU: "desktop CPU",
    DeviceClass.JETSON: "NVIDIA Jetson",
    DeviceClass.RASPBERRY_PI: "Raspberry Pi",
    DeviceClass.ARM_BOARD: "ARM board",
}

EDGE_DEVICE_CLASSES: frozenset[DeviceClass] = frozenset(
    {DeviceClass.JETSON, DeviceClass.RASPBERRY_PI, DeviceClass.ARM_BOARD})
"""Boards whose own CPU and RAM are the deployment target: the edge target and edge advice apply.

Members are StrEnums, so a plain string from results.json ('jetson') tests as a member too.
"""

X86_ARCHES = ("x86_64", "amd64", "i386", "i686")
ARM_ARCHES = ("aarch64", "arm64", "armv7l", "armv8l", "armv6l")


@dataclass(frozen=True)
class CpuInfo:
    """The host CPU: identity, core counts the process may really use, ISA features and caches."""

    vendor: str
    model: str
    architecture: str
    physical_cores: int | None
    logical_cores: int
    usable_cores: int
    features: tuple[str, ...] = ()
    caches: dict[str, int] = field(default_factory=dict)
    arm_implementer: str | None = None
    arm_part: str | None = None
    max_mhz: float | None = None

    def has(self, feature: str) -> bool:
        """Whether the CPU reports this (normalised) ISA feature, e.g. 'avx512_vnni' or 'i8mm'."""
        return feature.lower() in self.features

    @property
    def is_x86(self) -> bool:
        """True on x86 / x86-64."""
        return self.architecture.lower() in X86_ARCHES

    @property
    def is_arm(self) -> bool:
        """True on 32- or 64-bit ARM."""
        arch = self.architecture.lower()
        return arch in ARM_ARCHES or arch.startswith("arm")

    @property
    def has_avx512(self) -> bool:
        """AVX-512 foundation instructions are present."""
        return self.has("avx512f")

    @property
    def has_int8_dot(self) -> bool:
        """Some int8 dot-product instruction exists (VNNI, AMX-INT8, ARM dot-product or i8mm)."""
        return any(self.has(f) for f in ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm"))

    @property
    def has_bf16(self) -> bool:
        """Native bf16 arithmetic exists (AVX512-BF16, AMX-BF16 or ARM BF16)."""
        return any(self.has(f) for f in ("avx512_bf16", "amx_bf16", "bf16"))

    @property
    def has_amx(self) -> bool:
        """Intel AMX tile units are present."""
        return self.has("amx_tile")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "vendor": self.vendor,
            "model": self.model,
            "architecture": self.architecture,
            "physical_cores": self.physical_cores,
            "logical_cores": self.logical_cores,
            "usable_cores": self.usable_cores,
            "features": list(self.features),
            "caches": dict(self.caches),
            "arm_implementer": self.arm_implementer,
            "arm_part": self.arm_part,
            "max_mhz": self.max_mhz,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CpuInfo:
        """Inverse of `to_dict`."""
        return cls(
            vendor=data["vendor"],
            model=data["model"],
            architecture=data["architecture"],
            physical_cores=data.get("physical_cores"),
            logical_cores=data["logical_cores"],
            usable_cores=data["usable_cores"],
            features=tuple(data.get("features", ())),
            caches={str(k): int(v) for k, v in data.get("caches", {}).items()},
            arm_implementer=data.get("arm_implementer"),
            arm_part=data.get("arm_part"),
            max_mhz=data.get("max_mhz"),
        )


@dataclass(frozen=True)
class MemoryInfo:
    """System memory; `limit_bytes` is a cgroup (container) cap when one is lower than the RAM."""

    total_bytes: int | None
    available_bytes: int | None
    limit_bytes: int | None = None

    @property
    def usable_bytes(self) -> int | None:
        """What this process can really allocate: available memory, capped by a container limit."""
        candidates = [v for v in (self.available_bytes, self.limit_bytes) if v is not None]
        if not candidates:
            return self.total_bytes
        return min(candidates)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"total_bytes": self.total_bytes, "available_bytes": self.available_bytes,
                "limit_bytes": self.limit_bytes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryInfo:
        """Inverse of `to_dict`."""
        return cls(total_bytes=data.get("total_bytes"), available_bytes=data.get("available_bytes"),
                   limit_bytes=data.get("limit_bytes"))


@dataclass(frozen=True)
class GpuInfo:
    """One NVIDIA GPU as NVML (or, on Jetson, the board tables) reports it; None means unknown."""

    index: int
    name: str
    memory_total_bytes: int | None
    memory_free_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None
    max_sm_clock_mhz: int | None = None
    utilization_pct: int | None = None
    integrated: bool = False

    @property
    def tensor_core_generation(self) -> str | None:
        """The tensor-core generation from the compute capability; None means no tensor cores (or unknown cc)."""
        return tensor_core_generation(self.compute_capability)

    @property
    def has_tensor_cores(self) -> bool:
        """True when the compute capability is 7.0 or newer."""
        return self.compute_capability is not None and self.compute_capability[0] >= 7

    @property
    def cc_text(self) -> str | None:
        """The compute capability as text, e.g. '8.0'."""
        if self.compute_capability is None:
            return None
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the derived tensor-core generation is included for readers of the JSON)."""
        return {
            "index": self.index,
            "name": self.name,
            "memory_total_bytes": self.memory_total_bytes,
            "memory_free_bytes": self.memory_free_bytes,
            "compute_capability": list(self.compute_capability) if self.compute_capability else None,
            "sm_count": self.sm_count,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "utilization_pct": self.utilization_pct,
            "integrated": self.integrated,
            "tensor_core_generation": self.tensor_core_generation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuInfo:
        """Inverse of `to_dict`; the derived tensor-core generation is recomputed, not read."""
        cc = data.get("compute_capability")
        return cls(
            index=data["index"],
            name=data["name"],
            memory_total_bytes=data.get("memory_total_bytes"),
            memory_free_bytes=data.get("memory_free_bytes"),
            compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
            sm_count=data.get("sm_count"),
            max_sm_clock_mhz=data.get("max_sm_clock_mhz"),
            utilization_pct=data.get("utilization_pct"),
            integrated=bool(data.get("integrated", False)),
        )


@dataclass(frozen=True)
class HardwareProfile:
    """Everything the planner knows about the machine, plus a note for every probe that could not run."""

    cpu: CpuInfo
    memory: MemoryInfo
    gpus: tuple[GpuInfo, ...]
    device_class: DeviceClass
    board: str | None = None
    soc: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    os: str = ""
    python_version: str = ""
    torch_version: str | None = None
    probe_notes: tuple[tuple[str, str], ...] = ()

    @property
    def has_cuda_gpu(self) -> bool:
        """True when at least one NVIDIA GPU (discrete or Jetson integrated) was found."""
        return bool(self.gpus)

    @property
    def gpu(self) -> GpuInfo | None:
        """The first GPU, or None."""
        return self.gpus[0] if self.gpus else None

    @property
    def total_gpu_memory_bytes(self) -> int:
        """Summed GPU memory over all GPUs whose size is known."""
        return sum(g.memory_total_bytes or 0 for g in self.gpus)

    @property
    def notes(self) -> dict[str, str]:
        """The probe notes as a dict (probe → reason)."""
        return dict(self.probe_notes)

    def note(self, probe: str) -> str | None:
        """The reason the named probe could not run, or None when it ran."""
        return self.notes.get(probe)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "schema": SCHEMA_VERSION,
            "cpu": self.cpu.to_dict(),
            "memory": self.memory.to_dict(),
            "gpus": [g.to_dict() for g in self.gpus],
            "device_class": str(self.device_class),
            "board": self.board,
            "soc": self.soc,
            "driver_version": self.driver_version,
            "cuda_version": self.cuda_version,
            "os": self.os,
            "python_version": self.python_version,
            "torch_version": self.torch_version,
            "probe_notes": [[probe, reason] for probe, reason in self.probe_notes],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HardwareProfile:
        """Inverse of `to_dict`."""
        return cls(
            cpu=CpuInfo.from_dict(data["cpu"]),
            memory=MemoryInfo.from_dict(data["memory"]),
            gpus=tuple(GpuInfo.from_dict(g) for g in data.get("gpus", ())),
            device_class=DeviceClass(data["device_class"]),
            board=data.get("board"),
            soc=data.get("soc"),
            driver_version=data.get("driver_version"),
            cuda_version=data.get("cuda_version"),
            os=data.get("os", ""),
            python_version=data.get("python_version", ""),
            torch_version=data.get("torch_version"),
            probe_notes=tuple((str(p), str(r)) for p, r in data.get("probe_notes", ())),
        )

    def to_json(self, indent: int | None = 2) -> str:
        """The profile as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> HardwareProfile:
        """Inverse of `to_json`."""
        return cls.from_dict(json.loads(text))

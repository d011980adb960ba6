"""HardwareProfile: the frozen, JSON-serialisable description of the machine a model will run on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum

from planner.codec import from_data, to_data

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

# ISA features grouped by what they make native; the quantizer, the CPU targets and the predictor
# all ask the same question of a CpuInfo, so the groups live beside it.
INT8_DOT_FEATURES = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")
"""INT8 dot-product instructions (x86 VNNI/AMX, Arm dotprod/i8mm): INT8 maths without 16-bit sums."""
BF16_FEATURES = ("avx512_bf16", "amx_bf16")
"""Native bf16 arithmetic."""
FP16_FEATURES = ("avx512_fp16", "amx_fp16", "asimdhp")
"""Native fp16 arithmetic on the CPU."""


@dataclass(frozen=True, kw_only=True)
class CpuInfo:
    """The host CPU: identity, core counts the process may really use, ISA features and caches."""

    vendor: str
    model: str
    architecture: str
    physical_cores: int | None = None
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

@dataclass(frozen=True)
class MemoryInfo:
    """System memory; `limit_bytes` is a cgroup (container) cap when one is lower than the RAM.

    `available_bytes` is what could still be allocated when probed: the kernel's MemAvailable, and under a
    cgroup limit no more than the limit less what the cgroup already held. `limit_source` says which cgroup
    version set the limit ('cgroup v1', 'cgroup v2'); None without a limit (and in older profiles).
    """

    total_bytes: int | None = None
    available_bytes: int | None = None
    limit_bytes: int | None = None
    limit_source: str | None = None

    @property
    def usable_bytes(self) -> int | None:
        """What this process can really allocate: available memory, capped by a container limit."""
        candidates = [v for v in (self.available_bytes, self.limit_bytes) if v is not None]
        if not candidates:
            return self.total_bytes
        return min(candidates)

@dataclass(frozen=True, kw_only=True)
class GpuInfo:
    """One NVIDIA GPU as NVML (or, on Jetson, the board tables) reports it; None means unknown."""

    index: int
    name: str
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    sm_count: int | None = None
    max_sm_clock_mhz: int | None = None
    utilization_pct: int | None = None
    integrated: bool = False
    tensor_core_generation: str | None = field(default=None, init=False)
    """Derived from the compute capability (None: no tensor cores, or unknown cc); stored for readers of the
    JSON, and always recomputed, never read."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensor_core_generation", tensor_core_generation(self.compute_capability))

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

@dataclass(frozen=True, kw_only=True)
class HardwareProfile:
    """Everything the planner knows about the machine, plus a note for every probe that could not run."""

    schema: int = field(default=SCHEMA_VERSION, init=False, repr=False, compare=False)
    """The JSON form's version: always this planner's, never read back."""
    cpu: CpuInfo
    memory: MemoryInfo
    gpus: tuple[GpuInfo, ...] = ()
    device_class: DeviceClass
    board: str | None = None
    soc: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    os: str = ""
    python_version: str = ""
    torch_version: str | None = None
    probe_notes: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", SCHEMA_VERSION)

    @property
    def has_cuda_gpu(self) -> bool:
        """True when at least one NVIDIA GPU (discrete or Jetson integrated) was found."""
        return bool(self.gpus)

    @property
    def gpu(self) -> GpuInfo | None:
        """The first GPU, or None."""
        return self.gpus[0] if self.gpus else None

    @property
    def notes(self) -> dict[str, str]:
        """The probe notes as a dict (probe → reason)."""
        return dict(self.probe_notes)

    def note(self, probe: str) -> str | None:
        """The reason the named probe could not run, or None when it ran."""
        return self.notes.get(probe)

    def to_json(self, indent: int | None = 2) -> str:
        """The profile as JSON text."""
        return json.dumps(to_data(self), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> HardwareProfile:
        """Inverse of `to_json`."""
        return from_data(json.loads(text), cls)

"""CPU probe: parse /proc/cpuinfo and sysfs into vendor, model, ISA features, core counts and caches."""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

from planner.hardware import cgroup
from planner.hardware._files import at, is_real_root, read_text
from planner.hardware.profile import CpuInfo

# The x86 flags that change which kernels pay off, in the names /proc/cpuinfo uses.
X86_FEATURES = (
    "avx", "avx2", "fma", "f16c",
    "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
    "amx_tile", "amx_int8", "amx_bf16",
)
# ARM /proc/cpuinfo `Features` name → the planner's name. `asimd` is AArch64 NEON; 32-bit kernels say `neon`.
ARM_FEATURES = {
    "asimd": "neon",
    "neon": "neon",
    "asimdhp": "asimdhp",
    "asimddp": "asimddp",
    "i8mm": "i8mm",
    "sve": "sve",
    "sve2": "sve2",
    "bf16": "bf16",
}

ARM_IMPLEMENTERS = {
    "0x41": "ARM",
    "0x42": "Broadcom",
    "0x43": "Cavium",
    "0x46": "Fujitsu",
    "0x48": "HiSilicon",
    "0x4e": "NVIDIA",
    "0x51": "Qualcomm",
    "0x61": "Apple",
    "0x6d": "Microsoft",
    "0xc0": "Ampere",
}
ARM_PARTS = {
    ("0x41", "0xd03"): "Cortex-A53",
    ("0x41", "0xd04"): "Cortex-A35",
    ("0x41", "0xd05"): "Cortex-A55",
    ("0x41", "0xd07"): "Cortex-A57",
    ("0x41", "0xd08"): "Cortex-A72",
    ("0x41", "0xd09"): "Cortex-A73",
    ("0x41", "0xd0a"): "Cortex-A75",
    ("0x41", "0xd0b"): "Cortex-A76",
    ("0x41", "0xd0c"): "Neoverse-N1",
    ("0x41", "0xd0d"): "Cortex-A77",
    ("0x41", "0xd0e"): "Cortex-A76AE",
    ("0x41", "0xd40"): "Neoverse-V1",
    ("0x41", "0xd41"): "Cortex-A78",
    ("0x41", "0xd42"): "Cortex-A78AE",
    ("0x41", "0xd44"): "Cortex-X1",
    ("0x41", "0xd46"): "Cortex-A510",
    ("0x41", "0xd47"): "Cortex-A710",
    ("0x41", "0xd48"): "Cortex-X2",
    ("0x41", "0xd49"): "Neoverse-N2",
    ("0x41", "0xd4a"): "Neoverse-E1",
    ("0x41", "0xd4b"): "Cortex-A78C",
    ("0x41", "0xd4f"): "Neoverse-V2",
    ("0x41", "0xd80"): "Cortex-A520",
    ("0x41", "0xd81"): "Cortex-A720",
    ("0x41", "0xd82"): "Cortex-X4",
    ("0x41", "0xd84"): "Neoverse-V3",
    ("0x41", "0xd8e"): "Neoverse-N3",
    ("0x4e", "0x004"): "Carmel",
    ("0x48", "0xd01"): "TaiShan v110",
    ("0x46", "0x001"): "A64FX",
    ("0x51", "0x001"): "Oryon",
    ("0x61", "0x022"): "M1 Icestorm",
    ("0x61", "0x023"): "M1 Firestorm",
    ("0x61", "0x032"): "M2 Blizzard",
    ("0x61", "0x033"): "M2 Avalanche",
    ("0xc0", "0xac3"): "AmpereOne",
}
_X86_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon",
                "CentaurHauls": "Centaur", "Shanghai": "Zhaoxin"}


@dataclass(frozen=True)
class CpuInfoText:
    """/proc/cpuinfo split into one key → value map per processor plus the trailing machine-wide block."""

    processors: tuple[dict[str, str], ...]
    machine: dict[str, str] = field(default_factory=dict)

    def first(self, key: str) -> str | None:
        """The first value of `key` in any processor block, else in the machine block."""
        for block in self.processors:
            if key in block:
                return block[key]
        return self.machine.get(key)


def parse_cpuinfo(text: str) -> CpuInfoText:
    """Split /proc/cpuinfo text into per-processor blocks (those with a `processor` key) and the rest."""
    processors: list[dict[str, str]] = []
    machine: dict[str, str] = {}
    for chunk in re.split(r"\n\s*\n", text):
        block: dict[str, str] = {}
        for line in chunk.splitlines():
            if ":" not in line:
                continue
            key, _, value = line.partition(":")
            block[key.strip()] = value.strip()
        if not block:
            continue
        if "processor" in block and block["processor"].isdigit():
            processors.append(block)
        else:
            machine.update(block)
    return CpuInfoText(processors=tuple(processors), machine=machine)


def normalise_features(info: CpuInfoText) -> tuple[str, ...]:
    """The ISA features that matter, under the planner's names, sorted."""
    x86_flags = (info.first("flags") or "").split()
    arm_flags = (info.first("Features") or "").split()
    found: set[str] = {flag for flag in x86_flags if flag in X86_FEATURES}
    found |= {ARM_FEATURES[flag] for flag in arm_flags if flag in ARM_FEATURES}
    return tuple(sorted(found))


def infer_architecture(info: CpuInfoText) -> str | None:
    """The machine architecture implied by /proc/cpuinfo, or None when it does not say."""
    flags = (info.first("flags") or "").split()
    if flags:
        return "x86_64" if "lm" in flags else "i686"
    features = (info.first("Features") or "").split()
    arch = info.first("CPU architecture")
    if "asimd" in features:
        return "aarch64"
    if features or arch:
        # A 32-bit kernel on an ARMv8 core still lists 'CPU architecture: 8' but the v7 feature set.
        return "armv7l"
    return None


def arm_core_names(info: CpuInfoText) -> tuple[list[str], list[str], str | None]:
    """Distinct ARM core names and part numbers in order of appearance, and the implementer code."""
    implementer = info.first("CPU implementer")
    names: list[str] = []
    parts: list[str] = []
    for block in info.processors or (info.machine,):
        impl = block.get("CPU implementer", implementer)
        part = block.get("CPU part")
        if impl is None or part is None:
            continue
        impl, part = impl.lower(), part.lower()
        if part not in parts:
            parts.append(part)
            names.append(ARM_PARTS.get((impl, part), f"part {part}"))
    return names, parts, implementer.lower() if implementer else None


def identify(info: CpuInfoText) -> tuple[str, str, str | None, str | None]:
    """Vendor, model, ARM implementer and ARM part(s) from parsed /proc/cpuinfo."""
    vendor_id = info.first("vendor_id")
    model_name = info.first("model name")
    if vendor_id is not None:
        vendor = _X86_VENDORS.get(vendor_id, vendor_id)
        return vendor, model_name or f"{vendor} CPU", None, None
    names, parts, implementer = arm_core_names(info)
    if implementer is not None:
        vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer {implementer}")
        model = (f"{vendor} " + " + ".join(names)) if names else (model_name or f"{vendor} CPU")
        return vendor, model, implementer, ",".join(parts) or None
    hardware = info.first("Hardware")
    return "unknown", model_name or hardware or "unknown CPU", None, None


def physical_cores_from_cpuinfo(info: CpuInfoText) -> int | None:
    """Distinct (physical id, core id) pairs, or None when /proc/cpuinfo does not list them."""
    pairs = {(b.get("physical id"), b.get("core id")) for b in info.processors
             if "physical id" in b and "core id" in b}
    return len(pairs) or None


def physical_cores_from_sysfs(root: Path) -> int | None:
    """Distinct SMT sibling groups from sysfs topology, or None when sysfs has none."""
    base = at(root, "/sys/devices/system/cpu")
    groups: set[str] = set()
    try:
        cpu_dirs = [d for d in base.iterdir() if re.fullmatch(r"cpu\d+", d.name)]
    except OSError:
        return None
    for cpu_dir in cpu_dirs:
        for name in ("core_cpus_list", "thread_siblings_list"):
            text = read_text(cpu_dir / "topology" / name)
            if text is not None:
                groups.add(text.strip())
                break
    return len(groups) or None


def _parse_size(text: str) -> int | None:
    """'32K', '1M', '48 KB' → bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text, flags=re.IGNORECASE)
    if not match:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]
    return int(match.group(1)) * scale


def read_caches(root: Path) -> dict[str, int]:
    """Cache sizes seen by cpu0, e.g. {'L1d': 32768, 'L1i': 32768, 'L2': 524288, 'L3': 33554432}."""
    base = at(root, "/sys/devices/system/cpu/cpu0/cache")
    caches: dict[str, int] = {}
    try:
        entries = sorted(d for d in base.iterdir() if d.name.startswith("index"))
    except OSError:
        return caches
    for entry in entries:
        level = (read_text(entry / "level") or "").strip()
        kind = (read_text(entry / "type") or "").strip()
        size = _parse_size(read_text(entry / "size") or "")
        if not level or size is None:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        caches[f"L{level}{suffix}"] = size
    return caches


def max_clock_mhz(root: Path, info: CpuInfoText) -> float | None:
    """The highest core clock in MHz: cpufreq's max, else the highest `cpu MHz`, else the model name's '@ x GHz'."""
    khz: list[int] = []
    base = at(root, "/sys/devices/system/cpu")
    try:
        cpu_dirs = [d for d in base.iterdir() if re.fullmatch(r"cpu\d+", d.name)]
    except OSError:
        cpu_dirs = []
    for cpu_dir in cpu_dirs:
        text = read_text(cpu_dir / "cpufreq" / "cpuinfo_max_freq")
        if text is not None and text.strip().isdigit():
            khz.append(int(text.strip()))
    if khz:
        return max(khz) / 1000.0
    mhz = []
    for block in info.processors:
        try:
            mhz.append(float(block["cpu MHz"]))
        except (KeyError, ValueError):
            continue
    if mhz:
        return max(mhz)
    match = re.search(r"@\s*([\d.]+)\s*GHz", info.first("model name") or "")
    return float(match.group(1)) * 1000.0 if match else None


@dataclass(frozen=True)
class CoreCounts:
    """Logical, physical and usable core counts, with the reasons behind any that are unknown or capped."""

    logical: int
    physical: int | None
    usable: int
    notes: tuple[tuple[str, str], ...] = ()


def count_cores(root: Path, info: CpuInfoText) -> CoreCounts:
    """Logical cores, physical cores and the cores this process may use (affinity and cgroup quota)."""
    real = is_real_root(root)
    notes: list[tuple[str, str]] = []
    logical = len(info.processors)
    if real:
        logical = max(logical, os.cpu_count() or 0)
    if logical <= 0:
        notes.append(("cpu.logical_cores", "no 'processor' entries in /proc/cpuinfo; assuming 1"))
        logical = 1

    physical = physical_cores_from_cpuinfo(info) or physical_cores_from_sysfs(root)
    if physical is None and real:
        try:
            import psutil

            physical = psutil.cpu_count(logical=False)
        except (ImportError, OSError, RuntimeError) as exc:
            notes.append(("cpu.physical_cores", f"psutil failed: {exc}"))
    if physical is None:
        notes.append(("cpu.physical_cores",
                      "neither /proc/cpuinfo (physical id/core id) nor sysfs topology lists cores"))

    usable = logical
    if real:
        try:
            usable = min(usable, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError) as exc:
            notes.append(("cpu.affinity", f"sched_getaffinity unavailable: {exc}"))
    quota = cgroup.cpu_quota_cores(root)
    if quota is not None:
        usable = min(usable, cgroup.cpu_quota_to_threads(quota))
    return CoreCounts(logical=logical, physical=physical, usable=max(1, usable), notes=tuple(notes))


def probe_cpu(root: Path) -> tuple[CpuInfo, CpuInfoText, tuple[tuple[str, str], ...]]:
    """The CpuInfo for the machine under `root`, the parsed /proc/cpuinfo, and notes on what was unknown."""
    notes: list[tuple[str, str]] = []
    text = read_text(at(root, "/proc/cpuinfo"))
    if text is None:
        notes.append(("cpu.cpuinfo", f"cannot read {at(root, '/proc/cpuinfo')}"))
    info = parse_cpuinfo(text or "")
    vendor, model, implementer, part = identify(info)
    inferred = infer_architecture(info)
    architecture = platform.machine() if is_real_root(root) else (inferred or "unknown")
    if architecture == "unknown":
        notes.append(("cpu.architecture", "/proc/cpuinfo has neither x86 flags nor ARM features"))
    counts = count_cores(root, info)
    notes.extend(counts.notes)
    caches = read_caches(root)
    if not caches:
        notes.append(("cpu.caches", "no cache sizes under /sys/devices/system/cpu/cpu0/cache"))
    cpu = CpuInfo(
        vendor=vendor,
        model=model,
        architecture=architecture,
        physical_cores=counts.physical,
        logical_cores=counts.logical,
        usable_cores=counts.usable,
        features=normalise_features(info),
        caches=caches,
        arm_implementer=implementer,
        arm_part=part,
        max_mhz=max_clock_mhz(root, info),
    )
    return cpu, info, tuple(notes)

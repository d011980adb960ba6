"""format_profile(): the plain-text table `planner detect` prints."""

from __future__ import annotations

import functools

from planner import units
from planner.hardware.profile import CpuInfo, GpuInfo, HardwareProfile

_LABEL_WIDTH = 18


# Byte counts under the units policy; 'unknown' where the probe could not tell.
_bytes = functools.partial(units.size, missing="unknown")


def _yes(flag: bool, detail: str = "") -> str:
    """'yes (detail)' / 'no'."""
    if not flag:
        return "no"
    return f"yes ({detail})" if detail else "yes"


def _present(cpu: CpuInfo, *names: str) -> str:
    """The subset of `names` the CPU has, comma separated."""
    return ", ".join(n for n in names if cpu.has(n))


def isa_rows(cpu: CpuInfo) -> list[tuple[str, str]]:
    """(feature, yes/no) rows for the ISA features that decide which kernels pay on this architecture."""
    if cpu.is_arm:
        return [
            ("NEON", _yes(cpu.has("neon"))),
            ("FP16 arithmetic", _yes(cpu.has("asimdhp"))),
            ("dot-product", _yes(cpu.has("asimddp"), "asimddp")),
            ("i8mm", _yes(cpu.has("i8mm"))),
            ("BF16", _yes(cpu.has("bf16"))),
            ("SVE", _yes(cpu.has("sve"), _present(cpu, "sve", "sve2"))),
        ]
    return [
        ("AVX2", _yes(cpu.has("avx2"))),
        ("FMA", _yes(cpu.has("fma"))),
        ("F16C", _yes(cpu.has("f16c"))),
        ("AVX-512", _yes(cpu.has_avx512, _present(cpu, "avx512f", "avx512bw", "avx512_fp16"))),
        ("VNNI", _yes(cpu.has("avx512_vnni") or cpu.has("avx_vnni"), _present(cpu, "avx512_vnni", "avx_vnni"))),
        ("BF16", _yes(cpu.has("avx512_bf16") or cpu.has("amx_bf16"), _present(cpu, "avx512_bf16", "amx_bf16"))),
        ("AMX", _yes(cpu.has_amx, _present(cpu, "amx_tile", "amx_int8", "amx_bf16"))),
    ]


def _row(label: str, value: str, indent: int = 2) -> str:
    """One aligned 'label  value' line."""
    return f"{' ' * indent}{label:<{_LABEL_WIDTH}}{value}"


def _gpu_lines(gpu: GpuInfo) -> list[str]:
    """The rows for one GPU."""
    kind = " (integrated, shared memory)" if gpu.integrated else ""
    memory = _bytes(gpu.memory_total_bytes)
    if gpu.memory_free_bytes is not None:
        memory += f" ({_bytes(gpu.memory_free_bytes)} free)"
    return [
        f"  [{gpu.index}] {gpu.name}{kind}",
        _row("memory", memory, 6),
        _row("compute cap.", gpu.cc_text or "unknown", 6),
        _row("tensor cores", gpu.tensor_core_generation or ("none" if gpu.compute_capability else "unknown"), 6),
        _row("SMs", str(gpu.sm_count) if gpu.sm_count is not None else "unknown", 6),
        _row("max SM clock", f"{gpu.max_sm_clock_mhz} MHz" if gpu.max_sm_clock_mhz is not None else "unknown", 6),
        _row("utilisation", f"{gpu.utilization_pct} %" if gpu.utilization_pct is not None else "unknown", 6),
    ]


def format_profile(hw: HardwareProfile) -> str:
    """A readable plain-text table of the profile: machine, CPU and ISA, memory, GPUs and every probe note."""
    cpu = hw.cpu
    lines = ["Machine"]
    lines.append(_row("device class", f"{hw.device_class.label} ({hw.device_class})"))
    if hw.board:
        lines.append(_row("board", hw.board))
    if hw.soc:
        lines.append(_row("SoC", hw.soc))
    lines.append(_row("OS", hw.os or "unknown"))
    lines.append(_row("Python / torch", f"{hw.python_version or 'unknown'} / {hw.torch_version or 'not installed'}"))

    lines += ["", "CPU"]
    lines.append(_row("model", f"{cpu.model} ({cpu.vendor})"))
    lines.append(_row("architecture", cpu.architecture))
    physical = str(cpu.physical_cores) if cpu.physical_cores is not None else "unknown"
    lines.append(_row("cores", f"physical {physical}, logical {cpu.logical_cores}, usable {cpu.usable_cores}"))
    if cpu.max_mhz:
        lines.append(_row("clock", f"{units.count(round(cpu.max_mhz))} MHz (highest reported)"))
    caches = ", ".join(f"{level} {_bytes(size)}" for level, size in cpu.caches.items())
    lines.append(_row("caches", caches or "unknown"))
    lines.append("  ISA features")
    lines += [_row(name, value, 4) for name, value in isa_rows(cpu)]

    lines += ["", "Memory"]
    lines.append(_row("total", _bytes(hw.memory.total_bytes)))
    lines.append(_row("available", _bytes(hw.memory.available_bytes)))
    if hw.memory.limit_bytes is not None:
        lines.append(_row("container limit", _bytes(hw.memory.limit_bytes)))

    lines += ["", "GPU"]
    if hw.gpus:
        versions = [f"driver {hw.driver_version}" if hw.driver_version else "",
                    f"CUDA {hw.cuda_version}" if hw.cuda_version else ""]
        if any(versions):
            lines.append(_row("versions", ", ".join(v for v in versions if v)))
        for gpu in hw.gpus:
            lines += _gpu_lines(gpu)
    else:
        reason = hw.note("gpu") or hw.note("nvml") or "NVML reported none"
        reason = reason.removeprefix("no NVIDIA GPU: ")
        lines.append(f"  no NVIDIA GPU — {reason}")

    lines += ["", "Probe notes"]
    if hw.probe_notes:
        lines += [f"  {probe}: {reason}" for probe, reason in hw.probe_notes]
    else:
        lines.append("  none: every probe ran")
    return "\n".join(lines)

"""Hardware: the detected profile, what the probes could not see and why, and the measured ceilings."""

from __future__ import annotations

from planner.hardware.ceiling_notes import INT8_COUNTING, SLOWER, measurement_note, warnings
from planner.hardware.profile import CpuInfo, GpuInfo, HardwareProfile, MemoryInfo
from planner.report import fmt
from planner.report.data import ReportData
from planner.report.sections.candidates import record_text
from planner.results import energy_view

CEILING_WORDS = {"matrix_size": "matrix size", "fp32_method": "FP32 kernel", "bf16_method": "BF16 kernel",
                 "fp16_method": "FP16 kernel", "tf32_method": "TF32 kernel", "torch_version": "torch version"}
"""Words for the ceilings' measurement details (planner.hardware.ceilings); the rest read with underscores as spaces."""

# ISA features that change which runtimes and precisions pay, with what each one buys.
_FEATURES: dict[str, str] = {
    "avx2": "AVX2 SIMD", "fma": "fused multiply-add", "f16c": "fp16 conversion",
    "avx512f": "AVX-512 SIMD", "avx512_vnni": "int8 dot product (VNNI)",
    "avx_vnni": "int8 dot product (AVX-VNNI)", "avx512_bf16": "native bf16",
    "avx512_fp16": "native fp16", "amx_tile": "AMX tile units", "amx_int8": "AMX int8",
    "amx_bf16": "AMX bf16", "asimd": "NEON SIMD", "asimddp": "int8 dot product",
    "i8mm": "int8 matrix multiply", "sve": "scalable vectors (SVE)", "sve2": "SVE2",
    "bf16": "native bf16", "asimdhp": "fp16 arithmetic", "fphp": "fp16 scalar arithmetic",
}

# Capabilities worth naming when absent, as (what, features that provide it).
_CAPABILITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("int8 dot product", ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")),
    ("native bf16", ("avx512_bf16", "amx_bf16", "bf16")),
    ("native fp16 arithmetic", ("avx512_fp16", "asimdhp")),
)

def device_class(data: ReportData) -> str:
    """The device class in words."""
    hw = data.run.hardware
    return hw.device_class.label if hw is not None else "unknown device class"


def probe_notes(data: ReportData) -> list[tuple[str, str]]:
    """(probe, reason) for every probe that could not run."""
    hw = data.run.hardware
    return list(hw.probe_notes) if hw is not None else []


def _about_gpu(probe: str) -> bool:
    return any(word in probe.lower() for word in ("nvml", "gpu", "cuda", "nvidia"))


def no_gpu_reason(data: ReportData) -> str:
    """Why no NVIDIA GPU is listed, from the probe notes."""
    for probe, reason in probe_notes(data):
        if _about_gpu(probe):
            return reason or probe
    return "none detected, and no probe recorded a reason"


def cpu_name(data: ReportData) -> str:
    """The CPU model name."""
    hw = data.run.hardware
    return (hw.cpu.model if hw is not None else "") or "unknown CPU"


def machine_phrase(data: ReportData) -> str:
    """A short description of the machine for the summary."""
    hw = data.run.hardware
    if hw is None:
        return f"{cpu_name(data)} ({device_class(data)})"
    usable = hw.cpu.usable_cores
    cores = f", {fmt.number(usable)} usable core{'' if usable == 1 else 's'}"
    if hw.gpus:
        names = ", ".join(g.name or "unnamed GPU" for g in hw.gpus)
        return f"{names} with {cpu_name(data)}{cores} ({device_class(data)})"
    return f"{cpu_name(data)}{cores} ({device_class(data)})"


def _cpu_lines(data: ReportData, cpu: CpuInfo) -> list[str]:
    ident = ", ".join(x for x in (cpu.vendor, cpu.architecture) if x)
    line = f"- **CPU**: {cpu_name(data)}" + (f" ({ident})" if ident else "")
    if cpu.max_mhz:
        line += f", up to {fmt.number(cpu.max_mhz)} MHz"
    cores = [f"{fmt.number(cpu.usable_cores)} usable by this process", f"{fmt.number(cpu.logical_cores)} logical"]
    if cpu.physical_cores is not None:
        cores.append(f"{fmt.number(cpu.physical_cores)} physical")
    lines = [line, f"- **Cores**: {', '.join(cores)}"]
    features = [f.lower() for f in cpu.features]
    present = [f"`{f}` ({_FEATURES[f]})" for f in _FEATURES if f in features]
    absent = [what for what, flags in _CAPABILITIES if not any(f in features for f in flags)]
    if features:
        lines.append("- **ISA features that matter**: " + (", ".join(present) if present else
                                                           "none of the SIMD/int8/bf16 extensions"))
        if absent:
            lines.append("- **Missing**: " + ", ".join(absent)
                         + " (no CPU flag for it, so those precisions are emulated or unavailable)")
    else:
        lines.append("- **ISA features**: not detected (no feature list in the profile)")
    if cpu.caches:
        lines.append("- **Caches**: " + ", ".join(f"{k} {fmt.size(v)}" for k, v in cpu.caches.items()))
    return lines


def _memory_line(mem: MemoryInfo) -> str:
    parts = [f"{fmt.size(mem.total_bytes)} total", f"{fmt.size(mem.available_bytes)} available"]
    if mem.limit_bytes is not None:
        parts.append(f"container limit {fmt.size(mem.limit_bytes)}")
    return "- **Memory**: " + ", ".join(parts)


def _gpu_line(g: GpuInfo) -> str:
    parts = [f"{fmt.size(g.memory_total_bytes)} memory",
             f"compute capability {'.'.join(str(x) for x in g.compute_capability or ()) or fmt.NOT_MEASURED}"]
    if g.sm_count is not None:
        parts.append(f"{fmt.number(g.sm_count)} SMs")
    if g.max_sm_clock_mhz is not None:
        parts.append(f"up to {fmt.number(g.max_sm_clock_mhz)} MHz")
    parts.append(f"tensor cores: {g.tensor_core_generation or 'none or unknown'}")
    if g.integrated:
        parts.append("integrated (shares system memory)")
    return f"- **GPU**: {g.name or 'unnamed GPU'} — " + ", ".join(parts)


def _gpu_lines(data: ReportData, hw: HardwareProfile) -> list[str]:
    if not hw.gpus:
        return [f"- **GPU**: no NVIDIA GPU — {no_gpu_reason(data)}"]
    lines = [_gpu_line(g) for g in hw.gpus]
    versions = [f"driver {hw.driver_version}" if hw.driver_version else "",
                f"CUDA {hw.cuda_version}" if hw.cuda_version else ""]
    if any(versions):
        lines.append("- **NVIDIA software**: " + ", ".join(v for v in versions if v))
    return lines


def ceilings_lines(data: ReportData) -> list[str]:
    """The measured ceilings with their source and the ridge point per precision."""
    ceil = data.ceilings
    lines = ["### Measured ceilings", ""]
    if ceil is None:
        return lines + [f"Ceilings: {data.missing('measuring the ceilings')}.", ""]
    bw = ceil.bandwidth_bytes_per_s
    lines.append(f"Source: **{ceil.source or 'source not recorded'}**" + (f" on {ceil.device}" if ceil.device else "")
                 + f". Memory bandwidth {fmt.bandwidth(bw)}.")
    lines.append("")
    # A NaN peak or bandwidth gives a NaN ridge, which fmt writes as not measured, as it does None.
    rows = [[precision, fmt.flop_rate(peak), fmt.ratio(peak / bw if bw else None)]
            for precision, peak in ceil.peak_flops.items()]
    if rows:
        lines += fmt.table(["Precision", "Peak", "Ridge point (FLOP/byte)"], rows)
        lines += ["", "Below the ridge point a layer is limited by memory bandwidth; above it, by "
                  "arithmetic. The ridge is peak FLOP/s divided by bandwidth."]
    else:
        lines.append("No peak FLOP/s was recorded.")
    # `details` stays a JSON object in the typed ceilings: what each measurement recorded, keyed by name.
    all_details = ceil.details
    how = measurement_note(all_details)
    if ceil.has("int8"):
        method = all_details.get("int8_method")
        method = "" if method is None else str(method)
        lines += ["", f"The int8 roof: {INT8_COUNTING}" + (f"; measured with {method}" if method else "") + "."]
    if how:
        lines += ["", f"When and how: {how}."]
    for warning in warnings(all_details):
        lines += ["", f"Warning: {warning}."]
    shown = {"timestamp", "mode", "repeats", "measured_while", "attempts", "busy_note", "exceeded_note",
             "kept_out_note", "int8_method", "measurement_error", "gpu_measurement_error",
             # `_failed`: what planners before issue 34 wrote for a lower precision measured slower; not a failure.
             *(k for k in all_details if k.endswith((SLOWER, "_failed")))}
    details = {k: v for k, v in all_details.items()
               if (isinstance(v, (str, int, float, bool)) or v is None) and k not in shown}
    if details:
        lines += ["", "How they were measured: " + record_text(details, CEILING_WORDS) + "."]
    return lines + [""]


def energy_counter_phrase(data: ReportData) -> str:
    """Which energy counter the plan read (or why none), and what the other counter families said."""
    source = data.run.energy_source
    line = energy_view.source_words(source)
    others = [n for n in source.notes if n] if source is not None else []
    return line + (f" (also looked for: {'; '.join(others)})" if others else "")


def render(data: ReportData) -> list[str]:
    """The Hardware section."""
    hw = data.run.hardware
    lines = ["## Hardware", ""]
    if hw is None:
        lines += [f"Hardware profile: {data.missing('detecting the hardware')}.", ""]
        return lines + ceilings_lines(data)
    lines += _cpu_lines(data, hw.cpu)
    lines.append(_memory_line(hw.memory))
    lines += _gpu_lines(data, hw)
    board = ", ".join(x for x in (hw.board, hw.soc) if x)
    lines.append(f"- **Device class**: {device_class(data)}" + (f" ({board})" if board else ""))
    soft = [f"{label} {value}" for value, label in ((hw.os, "OS"), (hw.python_version, "Python"),
                                                    (hw.torch_version, "torch")) if value]
    if soft:
        lines.append("- **Software**: " + ", ".join(soft))
    lines.append(f"- **Energy counter**: {energy_counter_phrase(data)}")
    notes = probe_notes(data)
    if data.run.target not in (None, "nvidia") and not hw.gpus:
        # Planned for a CPU or a board: a missing NVIDIA driver is no gap (the GPU line already says why none shows).
        notes = [(p, r) for p, r in notes if not _about_gpu(p)]
    if notes:
        lines += ["", "What the probes could not see, and why:", ""]
        lines += [f"- {('`' + p + '`: ') if p else ''}{r}" for p, r in notes]
    return lines + [""] + ceilings_lines(data)

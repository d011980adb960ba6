"""Hardware: the detected profile, what the probes could not see and why, and the measured ceilings."""

from __future__ import annotations

from planner.hardware.ceiling_notes import INT8_COUNTING, SLOWER, measurement_note, warnings
from planner.hardware.profile import DeviceClass
from planner.report import fmt
from planner.report.data import ReportData, as_dict, as_list, text
from planner.report.fmt import real
from planner.results import energy_view

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
    raw = text(data.hardware.get("device_class"))
    if raw in set(DeviceClass):
        return DeviceClass(raw).label
    return raw or "unknown device class"


def probe_notes(data: ReportData) -> list[tuple[str, str]]:
    """(probe, reason) for every probe that could not run."""
    notes = data.hardware.get("probe_notes")
    if isinstance(notes, dict):
        return [(text(k), text(v)) for k, v in notes.items()]
    out = []
    for item in as_list(notes):
        if isinstance(item, (list, tuple)) and len(item) >= 2:
            out.append((text(item[0]), text(item[1])))
        elif isinstance(item, dict):
            out.append((text(item.get("probe")), text(item.get("reason"))))
        elif item:
            out.append(("", text(item)))
    return out


def no_gpu_reason(data: ReportData) -> str:
    """Why no NVIDIA GPU is listed, from the probe notes."""
    for probe, reason in probe_notes(data):
        if any(word in probe.lower() for word in ("nvml", "gpu", "cuda", "nvidia")):
            return reason or probe
    return "none detected, and no probe recorded a reason"


def cpu_name(data: ReportData) -> str:
    """The CPU model name."""
    return text(as_dict(data.hardware.get("cpu")).get("model")) or "unknown CPU"


def machine_phrase(data: ReportData) -> str:
    """A short description of the machine for the summary."""
    gpus = [as_dict(g) for g in as_list(data.hardware.get("gpus"))]
    cpu = as_dict(data.hardware.get("cpu"))
    usable = cpu.get("usable_cores")
    cores = f", {fmt.number(usable)} usable core{'' if usable == 1 else 's'}" if usable is not None else ""
    if gpus:
        names = ", ".join(text(g.get("name")) or "unnamed GPU" for g in gpus)
        return f"{names} with {cpu_name(data)}{cores} ({device_class(data)})"
    return f"{cpu_name(data)}{cores} ({device_class(data)})"


def _cpu_lines(data: ReportData) -> list[str]:
    cpu = as_dict(data.hardware.get("cpu"))
    if not cpu:
        return [f"- **CPU**: {data.missing('detecting the CPU')}"]
    ident = ", ".join(x for x in (text(cpu.get("vendor")), text(cpu.get("architecture"))) if x)
    line = f"- **CPU**: {cpu_name(data)}" + (f" ({ident})" if ident else "")
    if real(cpu.get("max_mhz")):
        line += f", up to {fmt.number(cpu['max_mhz'])} MHz"
    cores = []
    if cpu.get("usable_cores") is not None:
        cores.append(f"{fmt.number(cpu['usable_cores'])} usable by this process")
    if cpu.get("logical_cores") is not None:
        cores.append(f"{fmt.number(cpu['logical_cores'])} logical")
    if cpu.get("physical_cores") is not None:
        cores.append(f"{fmt.number(cpu['physical_cores'])} physical")
    lines = [line, f"- **Cores**: {', '.join(cores) if cores else fmt.NOT_MEASURED}"]
    features = [str(f).lower() for f in as_list(cpu.get("features"))]
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
    caches = as_dict(cpu.get("caches"))
    if caches:
        lines.append("- **Caches**: " + ", ".join(f"{k} {fmt.size(v)}" for k, v in caches.items()))
    return lines


def _memory_line(data: ReportData) -> str:
    mem = as_dict(data.hardware.get("memory"))
    if not mem:
        return f"- **Memory**: {data.missing('detecting memory')}"
    parts = [f"{fmt.size(mem.get('total_bytes'))} total",
             f"{fmt.size(mem.get('available_bytes'))} available"]
    if mem.get("limit_bytes") is not None:
        parts.append(f"container limit {fmt.size(mem['limit_bytes'])}")
    return "- **Memory**: " + ", ".join(parts)


def _gpu_lines(data: ReportData) -> list[str]:
    gpus = [as_dict(g) for g in as_list(data.hardware.get("gpus"))]
    if not gpus:
        return [f"- **GPU**: no NVIDIA GPU — {no_gpu_reason(data)}"]
    lines = []
    for g in gpus:
        cc = g.get("compute_capability")
        cc_text = ".".join(str(x) for x in cc) if isinstance(cc, (list, tuple)) and cc else fmt.NOT_MEASURED
        parts = [f"{fmt.size(g.get('memory_total_bytes'))} memory", f"compute capability {cc_text}"]
        if g.get("sm_count") is not None:
            parts.append(f"{fmt.number(g['sm_count'])} SMs")
        if g.get("max_sm_clock_mhz") is not None:
            parts.append(f"up to {fmt.number(g['max_sm_clock_mhz'])} MHz")
        parts.append(f"tensor cores: {text(g.get('tensor_core_generation')) or 'none or unknown'}")
        if g.get("integrated"):
            parts.append("integrated (shares system memory)")
        lines.append(f"- **GPU**: {text(g.get('name')) or 'unnamed GPU'} — " + ", ".join(parts))
    versions = [f"driver {data.hardware['driver_version']}" if data.hardware.get("driver_version") else "",
                f"CUDA {data.hardware['cuda_version']}" if data.hardware.get("cuda_version") else ""]
    if any(versions):
        lines.append("- **NVIDIA software**: " + ", ".join(v for v in versions if v))
    return lines


def ceilings_lines(data: ReportData) -> list[str]:
    """The measured ceilings with their source and the ridge point per precision."""
    ceil = data.ceilings
    lines = ["### Measured ceilings", ""]
    if not ceil:
        return lines + [f"Ceilings: {data.missing('measuring the ceilings')}.", ""]
    bw = real(ceil.get("bandwidth_bytes_per_s"))
    source = text(ceil.get("source")) or "source not recorded"
    lines.append(f"Source: **{source}**" + (f" on {ceil['device']}" if ceil.get("device") else "")
                 + f". Memory bandwidth {fmt.bandwidth(bw)}.")
    lines.append("")
    rows = []
    for precision, peak in as_dict(ceil.get("peak_flops")).items():
        flops = real(peak)
        ridge = flops / bw if flops is not None and bw else None
        rows.append([str(precision), fmt.flop_rate(peak), fmt.ratio(ridge)])
    if rows:
        lines += fmt.table(["Precision", "Peak", "Ridge point (FLOP/byte)"], rows)
        lines += ["", "Below the ridge point a layer is limited by memory bandwidth; above it, by "
                  "arithmetic. The ridge is peak FLOP/s divided by bandwidth."]
    else:
        lines.append("No peak FLOP/s was recorded.")
    all_details = as_dict(ceil.get("details"))
    how = measurement_note(all_details)
    if "int8" in as_dict(ceil.get("peak_flops")):
        method = text(all_details.get("int8_method"))
        lines += ["", f"The int8 roof: {INT8_COUNTING}" + (f"; measured with {method}" if method else "") + "."]
    if how:
        lines += ["", f"When and how: {how}."]
    for warning in warnings(all_details):
        lines += ["", f"Warning: {text(warning)}."]
    shown = {"timestamp", "mode", "repeats", "measured_while", "attempts", "busy_note", "exceeded_note",
             "kept_out_note", "int8_method", "measurement_error", "gpu_measurement_error",
             # `_failed`: what planners before issue 34 wrote for a lower precision measured slower; not a failure.
             *(k for k in all_details if k.endswith((SLOWER, "_failed")))}
    details = {k: v for k, v in all_details.items()
               if (isinstance(v, (str, int, float, bool)) or v is None) and k not in shown}
    if details:
        lines += ["", "How they were measured: "
                  + "; ".join(f"{k} {fmt.number(v)}" for k, v in details.items()) + "."]
    return lines + [""]


def energy_counter_phrase(results: dict) -> str:
    """Which energy counter the plan read (or why none), and what the other counter families said."""
    source = energy_view.source_of(results)
    line = energy_view.source_words(source)
    others = [text(n) for n in as_list(source.get("notes")) if text(n)]
    return line + (f" (also looked for: {'; '.join(others)})" if others else "")


def render(data: ReportData) -> list[str]:
    """The Hardware section."""
    hw = data.hardware
    lines = ["## Hardware", ""]
    if not hw:
        lines += [f"Hardware profile: {data.missing('detecting the hardware')}.", ""]
        return lines + ceilings_lines(data)
    lines += _cpu_lines(data)
    lines.append(_memory_line(data))
    lines += _gpu_lines(data)
    board = ", ".join(x for x in (text(hw.get("board")), text(hw.get("soc"))) if x)
    lines.append(f"- **Device class**: {device_class(data)}" + (f" ({board})" if board else ""))
    soft = [f"{label} {hw[key]}" for key, label in (("os", "OS"), ("python_version", "Python"),
                                                    ("torch_version", "torch")) if hw.get(key)]
    if soft:
        lines.append("- **Software**: " + ", ".join(soft))
    lines.append(f"- **Energy counter**: {energy_counter_phrase(data.results)}")
    notes = probe_notes(data)
    if notes:
        lines += ["", "What the probes could not see, and why:", ""]
        lines += [f"- {('`' + p + '`: ') if p else ''}{r}" for p, r in notes]
    return lines + [""] + ceilings_lines(data)

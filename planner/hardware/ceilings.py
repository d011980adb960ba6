"""Measured roofline ceilings: peak GEMM FLOP/s per precision and memory bandwidth, cached per machine.

What is measured is kept: a lower precision that runs slower than fp32 here is recorded as a finding
and cached (planner.hardware.ceiling_trust); only a measurement taken while other processes were busy
stays out of the cache. A machine whose ceilings cannot be measured at all (torch fails, or the clock
cannot time the work within `planner.hardware.clock.MAX_RATE_SECONDS`) gets a labelled estimate.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from planner.codec import from_data, to_data
from planner.hardware.ceiling_notes import EXCEEDED_WARNING, REFRESH_HINT, measurement_note  # noqa: F401 - re-exported
from planner.hardware.ceiling_trust import cleanliness, settle, with_order_findings
from planner.hardware.ceiling_values import MEASURED, Ceilings
from planner.hardware.clock import ClockError, best_rate, cuda_event_timer, event_clock, host_clock
from planner.hardware.load import LoadSampler
from planner.hardware.profile import CpuInfo, GpuInfo, HardwareProfile
from planner.io import write_json_atomic
from planner.paths import cache_dir as planner_cache_dir

CACHE_FORMAT = 5
"""3: the CPU's int8 peak joined fp32 and bf16; 4: the float peaks are the faster of torch.mm and a 1x1
convolution; 5: a busy measurement is no longer cached, and a lower precision measured slower than a more
precise one is a cached finding (`<precision>_slower`) instead of a measurement left uncached. A cache
written before is measured again."""
BUSY_OTHER_CORES = 0.25
"""Other processes using more than a quarter of a core during a ceiling measurement make it 'busy'.

The GEMM and copy tests use every usable core, so any core time taken by others comes straight
off the measured peak; a quarter of a core costs an eighth of a 2-core machine's peak.
"""
MAX_ATTEMPTS = 3
"""A busy CPU measurement is repeated up to this many times in all; the best figures are kept."""
_MiB = 1 << 20
_GiB = 1 << 30


def _validate(ceilings: Ceilings) -> None:
    """Raise ValueError unless every number is positive and finite and fp32 is present."""
    values = [ceilings.bandwidth_bytes_per_s, *ceilings.peak_flops.values()]
    if "fp32" not in ceilings.peak_flops or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"implausible ceilings: {ceilings.peak_flops}, {ceilings.bandwidth_bytes_per_s} B/s")


def cpu_bf16_native(cpu: CpuInfo) -> bool:
    """True when bf16 GEMM runs in hardware (AVX512-BF16, AMX-BF16 or ARM BF16) rather than emulated."""
    return cpu.has_bf16


def cpu_int8_dot(cpu: CpuInfo) -> bool:
    """True when the CPU has an int8 dot-product instruction (VNNI, AMX-INT8, Arm dotprod or i8mm)."""
    return cpu.has_int8_dot


INT8_METHOD = ("torch._int_mm: an int8 x int8 GEMM summed in int32 (oneDNN's VNNI/AMX kernels on x86), "
               "counted as 2 operations per multiply-add like the float GEMMs")
"""How the int8 peak is measured, as the details record it.

torch._int_mm multiplies int8 tensors into int32 directly, with no quantize/dequantize step around
it; torch.ops.quantized.linear (the other int8 GEMM on the CPU) ran at the same rate on an AVX-512
VNNI machine but needs quantized tensors, which torch deprecates.
"""


def _measure_int8(torch: Any, n: int, repeats: int, min_sample: float) -> tuple[float, dict[str, Any]]:
    """The int8 GEMM peak (operations/s, 2 per multiply-add) and how it was timed; raises when torch cannot."""
    a = torch.randint(-128, 128, (n, n), dtype=torch.int8)
    b = torch.randint(-128, 128, (n, n), dtype=torch.int8)
    out = torch.empty(n, n, dtype=torch.int32)
    # A kernel that is fast but wrong would set a roof no model can reach: check a corner exactly first.
    corner = torch._int_mm(a[:32], b[:, :32].contiguous())
    if not torch.equal(corner, a[:32].to(torch.int32) @ b[:, :32].to(torch.int32)):
        raise ArithmeticError("torch._int_mm gave a wrong int8 product")
    rate, info = best_rate(partial(torch._int_mm, a, b, out=out), 2.0 * n**3, repeats, min_sample, host_clock)
    return rate, info


def _copy_bytes(hw: HardwareProfile, quick: bool) -> int:
    """Copy size for the bandwidth test: well past the last-level cache, within an eighth of free memory."""
    l3 = max((size for level, size in hw.cpu.caches.items() if level in ("L3", "L2")), default=0)
    size = max(64 * _MiB, 4 * l3) if quick else max(256 * _MiB, 8 * l3)
    usable = hw.memory.usable_bytes
    if usable:
        size = min(size, max(8 * _MiB, usable // 8))
    return size


def measure_until_idle(measure_once: Callable[[], Ceilings], sampler: Callable[[], LoadSampler] = LoadSampler,
                       attempts: int = MAX_ATTEMPTS, busy_cores: float = BUSY_OTHER_CORES) -> Ceilings:
    """Measure; while other processes were busy during it, measure again (up to `attempts` in all).

    `sampler` makes a fresh load sampler for each attempt: by default the one the measuring worker's
    audit uses, which watches the CPUs this process may run on.
    Each figure kept is the best over all attempts (interference only ever slows a test down), and
    the details say what other processes used during each attempt and whether the last was busy.
    """
    best: Ceilings | None = None
    loads: list[float | None] = []
    for _ in range(max(1, attempts)):
        load = sampler().start()
        try:
            current = measure_once()
        finally:
            # Stopped on failure too: the sampler's thread must not outlive a measurement that raised.
            other = load.stop().other_mean
        loads.append(None if other is None else round(other, 3))
        best = current if best is None else _best_of(best, current)
        if other is None or other <= busy_cores:
            break
    assert best is not None
    last = loads[-1]
    state = "unknown" if last is None else ("busy" if last > busy_cores else "idle")
    details = {**best.details, "attempts": len(loads), "other_cores": loads, "measured_while": state}
    if state == "busy":
        details["busy_note"] = (f"other processes used {last:.2f} cores during each of {len(loads)} attempts, "
                                f"so these ceilings may be low; {REFRESH_HINT} on an idle machine")
    return Ceilings(peak_flops=best.peak_flops, bandwidth_bytes_per_s=best.bandwidth_bytes_per_s,
                    source=best.source, device=best.device, details=details)


def _best_of(a: Ceilings, b: Ceilings) -> Ceilings:
    """Per figure, the higher of two measurements of one device; the details of the one with the higher fp32."""
    # In the order measured (fp32, bf16, int8), so every table lists the roofs the same way.
    peaks = {p: max(a.peak_flops.get(p, 0.0), b.peak_flops.get(p, 0.0))
             for p in dict.fromkeys([*a.peak_flops, *b.peak_flops])}
    base = b if b.peak_flops.get("fp32", 0.0) > a.peak_flops.get("fp32", 0.0) else a
    return Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=max(a.bandwidth_bytes_per_s, b.bandwidth_bytes_per_s),
                    source=base.source, device=base.device, details=dict(base.details))


def _measure_cpu(hw: HardwareProfile, quick: bool) -> Ceilings:
    """CPU ceilings, measured again while other processes were busy (see `measure_until_idle`)."""
    # The module's names are read at call time, so a test can inject the measurement and the load it ran under.
    return measure_until_idle(partial(_measure_cpu_once, hw, quick), sampler=LoadSampler)


def _measure_cpu_once(hw: HardwareProfile, quick: bool) -> Ceilings:
    """GEMM FLOP/s (fp32; bf16 and int8 where native) and copy bandwidth on the CPU with torch."""
    import torch

    threads = hw.cpu.usable_cores
    previous_threads = torch.get_num_threads()
    previous_precision = torch.get_float32_matmul_precision()
    many_cores = threads > 8
    n = (2048 if many_cores else 1024) if quick else (4096 if many_cores else 2048)
    repeats = 3 if quick else 5
    min_sample = 0.02 if quick else 0.1
    details: dict[str, Any] = {"threads": threads, "matrix_size": n, "repeats": repeats, "mode": _mode(quick)}
    peaks: dict[str, float] = {}
    try:
        torch.set_num_threads(threads)
        # 'highest' keeps fp32 GEMMs in fp32: lower settings let oneDNN round through bf16 and overstate fp32.
        torch.set_float32_matmul_precision("highest")
        precisions = [("fp32", torch.float32)]
        if cpu_bf16_native(hw.cpu):
            precisions.append(("bf16", torch.bfloat16))
        else:
            details["bf16_omitted"] = ("CPU lacks avx512_bf16/amx_bf16/ARM bf16, so bf16 GEMM would be "
                                       "emulated and slower than fp32")
        for name, dtype in precisions:
            peaks[name], details[f"{name}_gemm"], details[f"{name}_method"] = _float_gemm_peak(
                torch, dtype, n, repeats, min_sample)
        if not cpu_int8_dot(hw.cpu):
            details["int8_omitted"] = ("CPU lacks an int8 dot-product instruction (avx512_vnni/avx_vnni/amx_int8, "
                                       "Arm dotprod/i8mm), so int8 GEMM would widen to 16-bit sums")
        else:
            try:
                peaks["int8"], details["int8_gemm"] = _measure_int8(torch, n, repeats, min_sample)
                details["int8_method"] = INT8_METHOD
            except (RuntimeError, NotImplementedError, AttributeError, ArithmeticError) as exc:
                # The float roofs still stand: an int8 kernel this torch lacks leaves only the int8 roof out.
                details["int8_omitted"] = f"torch's int8 GEMM failed here ({type(exc).__name__}: {exc})"

        size = _copy_bytes(hw, quick)
        src = torch.ones(size // 4, dtype=torch.float32)
        dst = torch.empty_like(src)
        bandwidth, info = best_rate(partial(dst.copy_, src), 2.0 * src.numel() * 4, repeats, min_sample,
                                    host_clock)
        details["copy"] = {**info, "bytes_per_copy": src.numel() * 4, "counted": "read + write"}
        del src, dst
    finally:
        torch.set_num_threads(previous_threads)
        torch.set_float32_matmul_precision(previous_precision)
    details.update(_stamp(torch.__version__))
    ceilings = Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=bandwidth, source=MEASURED, device="cpu",
                        details=details)
    _validate(ceilings)
    return ceilings


GEMM_METHODS = {"mm": "torch.mm", "conv": "a 1x1 convolution (oneDNN's own GEMM kernels)"}
"""How a float GEMM peak was measured, in words: the faster of the two is the roof."""


def _float_gemm_peak(torch: Any, dtype: Any, n: int, repeats: int, min_sample: float) -> tuple[float, dict, str]:
    """(FLOP/s, timing details, method) of the faster of two n x n x n float GEMMs: torch.mm and a 1x1 convolution.

    torch.mm goes to the BLAS torch was built with, and a BLAS may pick a slower code path on another vendor's
    CPU: on an AMD EPYC with AVX-512, fp32 torch.mm reached 225 GFLOP/s while oneDNN's convolutions reached
    over 380, so a roof from torch.mm alone sat below what the model's own layers attained. A 1x1 convolution
    over an s x s map (s*s ~ n) is the same multiply-adds through oneDNN, which the runtimes' kernels also use.
    """
    a = torch.randn(n, n, dtype=dtype)
    b = torch.randn(n, n, dtype=dtype)
    out = torch.empty(n, n, dtype=dtype)
    # partial binds these tensors; a lambda would close over names that `del` unbinds.
    best = (*best_rate(partial(torch.mm, a, b, out=out), 2.0 * n**3, repeats, min_sample, host_clock),
            GEMM_METHODS["mm"])
    del a, b, out
    side = max(1, int(math.isqrt(n)))
    x = torch.randn(1, n, side, side, dtype=dtype)
    w = torch.randn(n, n, 1, 1, dtype=dtype)
    try:
        rate, info = best_rate(partial(torch.nn.functional.conv2d, x, w), 2.0 * n * n * side * side, repeats,
                               min_sample, host_clock)
        if rate > best[0]:
            best = (rate, info, GEMM_METHODS["conv"])
    except RuntimeError:
        pass  # a build without oneDNN convolutions for this dtype: torch.mm's figure stands
    finally:
        del x, w
    return best


def _measure_cuda(hw: HardwareProfile, quick: bool, index: int = 0) -> Ceilings:
    """GEMM FLOP/s in fp32/tf32/fp16/bf16 and device-to-device copy bandwidth on one CUDA GPU."""
    import torch

    device = torch.device("cuda", index)
    props = torch.cuda.get_device_properties(device)
    n = 4096 if quick else 8192
    repeats = 3 if quick else 5
    min_sample = 0.02 if quick else 0.1
    # Launches return before the GPU is done: CUDA events time the device work itself.
    clock = event_clock(cuda_event_timer(device))
    details: dict[str, Any] = {"gpu": props.name, "gpu_index": index, "matrix_size": n, "repeats": repeats,
                               "mode": _mode(quick), "sm_count": props.multi_processor_count}
    cc = (props.major, props.minor)
    precisions: list[tuple[str, Any, str]] = [("fp32", torch.float32, "highest")]
    if cc >= (8, 0):
        precisions.append(("tf32", torch.float32, "high"))
    else:
        details["tf32_omitted"] = f"TF32 needs compute capability 8.0+, this GPU is {cc[0]}.{cc[1]}"
    precisions.append(("fp16", torch.float16, "highest"))
    if torch.cuda.is_bf16_supported(including_emulation=False):
        precisions.append(("bf16", torch.bfloat16, "highest"))
    else:
        details["bf16_omitted"] = f"no native bf16 on compute capability {cc[0]}.{cc[1]}"

    previous_precision = torch.get_float32_matmul_precision()
    peaks: dict[str, float] = {}
    try:
        with torch.cuda.device(device):
            for name, dtype, matmul_precision in precisions:
                torch.set_float32_matmul_precision(matmul_precision)
                a = torch.randn(n, n, dtype=dtype, device=device)
                b = torch.randn(n, n, dtype=dtype, device=device)
                out = torch.empty(n, n, dtype=dtype, device=device)
                rate, info = best_rate(partial(torch.mm, a, b, out=out), 2.0 * n**3, repeats, min_sample, clock)
                peaks[name] = rate
                details[f"{name}_gemm"] = info
                del a, b, out

            free, _total = torch.cuda.mem_get_info(device)
            size = min(256 * _MiB if quick else _GiB, free // 4)
            src = torch.ones(size, dtype=torch.uint8, device=device)
            dst = torch.empty_like(src)
            bandwidth, info = best_rate(partial(dst.copy_, src), 2.0 * size, repeats, min_sample, clock)
            details["copy"] = {**info, "bytes_per_copy": size, "counted": "read + write"}
            del src, dst
            torch.cuda.empty_cache()
    finally:
        torch.set_float32_matmul_precision(previous_precision)
    details.update(_stamp(torch.__version__))
    ceilings = Ceilings(peak_flops=peaks, bandwidth_bytes_per_s=bandwidth, source=MEASURED,
                        device=f"cuda:{index}", details=details)
    _validate(ceilings)
    return ceilings


# Dense (no sparsity) datasheet numbers: name pattern → (FLOP/s by precision, bytes/s, basis).
_GPU_TABLE: tuple[tuple[str, dict[str, float], float, str], ...] = (
    (r"\bH200\b", {"fp32": 67e12, "tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12}, 4.8e12,
     "NVIDIA H200 SXM datasheet, dense"),
    (r"H100.*NVL", {"fp32": 60e12, "tf32": 417.5e12, "fp16": 835.5e12, "bf16": 835.5e12}, 3.9e12,
     "NVIDIA H100 NVL datasheet, dense"),
    (r"H100.*PCIe", {"fp32": 51.2e12, "tf32": 378e12, "fp16": 756e12, "bf16": 756e12}, 2.0e12,
     "NVIDIA H100 PCIe datasheet, dense"),
    (r"H100", {"fp32": 67e12, "tf32": 494.7e12, "fp16": 989.4e12, "bf16": 989.4e12}, 3.35e12,
     "NVIDIA H100 SXM datasheet, dense"),
    (r"A100.*80GB", {"fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12}, 2.039e12,
     "NVIDIA A100 80GB SXM datasheet, dense"),
    (r"A100", {"fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12}, 1.555e12,
     "NVIDIA A100 40GB datasheet, dense"),
    (r"L40S", {"fp32": 91.6e12, "tf32": 183e12, "fp16": 362e12, "bf16": 362e12}, 0.864e12,
     "NVIDIA L40S datasheet, dense"),
    (r"\bL4\b", {"fp32": 30.3e12, "tf32": 60e12, "fp16": 121e12, "bf16": 121e12}, 0.3e12,
     "NVIDIA L4 datasheet, dense"),
    (r"\bA10G?\b", {"fp32": 31.2e12, "tf32": 62.5e12, "fp16": 125e12, "bf16": 125e12}, 0.6e12,
     "NVIDIA A10 datasheet, dense"),
    (r"\bT4\b", {"fp32": 8.1e12, "fp16": 65e12}, 0.32e12, "NVIDIA T4 datasheet"),
    (r"V100", {"fp32": 15.7e12, "fp16": 125e12}, 0.9e12, "NVIDIA V100 SXM2 datasheet"),
)


def vendor_table_ceilings(gpu: GpuInfo, why: str) -> Ceilings | None:
    """Datasheet ceilings for a known datacenter GPU, labelled as a fallback with its basis; None if unknown."""
    for pattern, flops, bandwidth, basis in _GPU_TABLE:
        if re.search(pattern, gpu.name, flags=re.IGNORECASE):
            return Ceilings(peak_flops=dict(flops), bandwidth_bytes_per_s=bandwidth,
                            source=f"vendor table (fallback): {basis}", device=f"cuda:{gpu.index}",
                            details={"gpu": gpu.name, "measurement_error": why})
    return None


def _flops_per_cycle(cpu: CpuInfo) -> tuple[int, str]:
    """fp32 FLOP per cycle per core assuming two FMA pipes of the widest vector unit the CPU reports."""
    if cpu.has("avx512f"):
        return 64, "2 × 512-bit FMA"
    if cpu.has("avx2") and cpu.has("fma"):
        return 32, "2 × 256-bit FMA"
    if cpu.has("sve"):
        return 32, "SVE, assumed 2 × 256-bit FMA"
    if cpu.has("neon"):
        return 16, "2 × 128-bit NEON FMA"
    return 8, "scalar/SSE, assumed 8"


def _python_copy_bandwidth(size: int, repeats: int) -> float:
    """Copy bandwidth from a bytearray slice copy (a plain memcpy), for when torch itself failed."""
    src = bytearray(size)
    dst = bytearray(size)
    copy = partial(memoryview(dst).__setitem__, slice(None), src)
    # No minimum sample time: one copy of tens of MiB takes milliseconds, well above the clock's resolution.
    bandwidth, _info = best_rate(copy, 2.0 * size, repeats, 0.0, host_clock)
    return bandwidth


def estimate_cpu_ceilings(hw: HardwareProfile, why: str, quick: bool) -> Ceilings:
    """A rough CPU roofline when torch measurement failed: FLOP/s from cores × clock × ISA width, memcpy bandwidth."""
    per_cycle, width = _flops_per_cycle(hw.cpu)
    mhz = hw.cpu.max_mhz or 2000.0
    clock_basis = f"{mhz:.0f} MHz" if hw.cpu.max_mhz else "2000 MHz assumed (clock unknown)"
    fp32 = hw.cpu.usable_cores * mhz * 1e6 * per_cycle
    try:
        bandwidth = _python_copy_bandwidth(min(_copy_bytes(hw, True), 64 * _MiB), 2 if quick else 4)
        bandwidth_basis = "measured with a Python memcpy"
    except MemoryError:
        bandwidth, bandwidth_basis = 5e9, "5 GB/s assumed (no memory for a copy test)"
    except ClockError as exc:
        bandwidth, bandwidth_basis = 5e9, f"5 GB/s assumed (the clock could not time a copy: {exc})"
    basis = (f"{hw.cpu.usable_cores} cores × {clock_basis} × {per_cycle} FLOP/cycle ({width}), an upper bound; "
             f"bandwidth {bandwidth_basis}")
    return Ceilings(peak_flops={"fp32": fp32}, bandwidth_bytes_per_s=bandwidth, source=f"estimate: {basis}",
                    device="cpu", details={"measurement_error": why, "mode": _mode(quick)})


def _mode(quick: bool) -> str:
    """'quick' or 'full'."""
    return "quick" if quick else "full"


def _now() -> str:
    """The time now, UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _stamp(torch_version: str) -> dict[str, Any]:
    """When and with which torch a measurement was taken."""
    return {"timestamp": _now(), "torch_version": torch_version}


def _numpy_version() -> str | None:
    """numpy's version, or None where it is missing."""
    try:
        import numpy

        return str(numpy.__version__)
    except ImportError:
        return None


def cache_key(hw: HardwareProfile, device: str) -> dict[str, Any]:
    """What the ceilings depend on: CPU model, cores, ISA, GPU names, torch and numpy versions, target device."""
    isa = hashlib.sha256(" ".join(sorted(hw.cpu.features)).encode()).hexdigest()[:12]
    return {"cpu_model": hw.cpu.model, "usable_cores": hw.cpu.usable_cores, "logical_cores": hw.cpu.logical_cores,
            "isa": isa, "gpus": [g.name for g in hw.gpus], "torch_version": hw.torch_version,
            "numpy_version": _numpy_version(), "device": device}


def cache_path(cache_dir: Path, hw: HardwareProfile, device: str, quick: bool) -> Path:
    """The cache file for this machine, device and mode."""
    digest = hashlib.sha256(json.dumps(cache_key(hw, device), sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir / f"ceilings-{device.replace(':', '')}-{_mode(quick)}-{digest}.json"


def _read(path: Path, key: dict[str, Any]) -> tuple[Ceilings | None, dict[str, Any]]:
    """Cached ceilings (None when missing, corrupt, for another machine or not a measurement) and the
    figures later measurements attained above them (empty unless the cache was invalidated)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != CACHE_FORMAT or data.get("key") != key:
            return None, {}
        ceilings = from_data(data["ceilings"], Ceilings)
        _validate(ceilings)
        kept = {str(p): dict(v) for p, v in dict(data.get("kept") or {}).items()
                if isinstance(v, dict) and float(v.get("to", 0)) > 0}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # A half-written or hand-edited file is not worth an error: measuring again fixes it.
        return None, {}
    return (ceilings if ceilings.is_measured else None), kept


def _cleanest_cached(paths: list[Path], key: dict[str, Any]) -> tuple[Ceilings | None, Path]:
    """The most cleanly measured cached ceilings among `paths` (the first on a tie) and its file.

    An invalidated file counts too: its figures were measured, and the attained ones raise them.
    """
    best: tuple[Ceilings | None, Path] = (None, paths[-1])
    for path in paths:
        cached = _read(path, key)[0]
        if cached is not None and (best[0] is None or cleanliness(cached.details) < cleanliness(best[0].details)):
            best = (cached, path)
    return best


def _load(path: Path, key: dict[str, Any]) -> Ceilings | None:
    """Cached ceilings still good to use: None when missing, corrupt, or invalidated by a faster measurement."""
    ceilings, kept = _read(path, key)
    return None if kept else ceilings


def _store(path: Path, key: dict[str, Any], ceilings: Ceilings) -> str | None:
    """Write the cache atomically; the reason on failure (a read-only home must not stop the planner)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"format": CACHE_FORMAT, "key": key, "ceilings": to_data(ceilings)})
    except OSError as exc:
        return f"cache not written to {path}: {exc}"
    return None


def _pick_device(hw: HardwareProfile, device: str | None) -> str:
    """'cuda:0' when a CUDA GPU is usable from torch and none was asked for, else 'cpu'."""
    if device is not None:
        return "cuda:0" if device == "cuda" else device
    if not hw.has_cuda_gpu:
        return "cpu"
    try:
        import torch

        return "cuda:0" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def measure_ceilings(hw: HardwareProfile, *, quick: bool = False, cache_dir: Path | None = None,
                     refresh: bool = False, device: str | None = None) -> Ceilings:
    """Measured roofline ceilings for `device` ('cpu' or 'cuda:N'; default: the GPU if torch sees one).

    Results are cached per machine; a full measurement also answers a quick request. A measurement
    taken while other processes were busy never replaces a cleaner cached one (see
    planner.hardware.ceiling_trust).
    When measuring fails (torch fails, or the clock cannot time the work in bounded time), the result
    is a labelled vendor-table fallback (known GPUs) or a labelled estimate, and nothing is cached.
    """
    target = _pick_device(hw, device)
    directory = Path(cache_dir) if cache_dir is not None else planner_cache_dir()
    key = cache_key(hw, target)
    path = cache_path(directory, hw, target, quick)
    # A full measurement also answers a quick request, so it is read (and compared with) first.
    paths = ([cache_path(directory, hw, target, False)] if quick else []) + [path]
    kept: dict[str, dict[str, Any]] = {}
    if not refresh:
        for candidate in paths:
            cached = _load(candidate, key)
            if cached is not None:
                return cached
        for candidate in (cache_path(directory, hw, target, False), cache_path(directory, hw, target, True)):
            for precision, figure in _read(candidate, key)[1].items():
                if float(figure["to"]) > float(kept.get(precision, {}).get("to", 0.0)):
                    kept[precision] = figure

    try:
        if target.startswith("cuda"):
            ceilings = _measure_cuda(hw, quick, index=int(target.partition(":")[2] or 0))
        else:
            ceilings = _measure_cpu(hw, quick)
    except Exception as exc:  # noqa: BLE001 - torch/CUDA failures are many and varied; the planner still needs a roofline
        why = f"{type(exc).__name__}: {exc}"
        if target.startswith("cuda"):
            index = int(target.partition(":")[2] or 0)
            gpu = next((g for g in hw.gpus if g.index == index), None)
            table = vendor_table_ceilings(gpu, why) if gpu is not None else None
            if table is not None:
                return table
            # No datasheet to fall back on: an honest CPU roofline beats an invented GPU one.
            fallback = measure_ceilings(hw, quick=quick, cache_dir=directory, refresh=refresh, device="cpu")
            return Ceilings(peak_flops=fallback.peak_flops, bandwidth_bytes_per_s=fallback.bandwidth_bytes_per_s,
                            source=fallback.source, device=fallback.device,
                            details={**fallback.details, "gpu_measurement_error": why})
        return estimate_cpu_ceilings(hw, why, quick)

    # Even on refresh: a measurement taken under more interference than the cached one never replaces it.
    reference, reference_path = _cleanest_cached(paths, key)
    settled = settle(ceilings, reference)
    ceilings, keep, write = settled.use, settled.cache, settled.changed
    # A figure a real workload attained above the old ceiling stays a lower bound on the new one.
    for precision, figure in kept.items():
        if precision in ceilings.peak_flops and float(figure["to"]) > ceilings.peak_flops[precision]:
            ceilings = _with_peak(ceilings, precision, figure)
        if keep is not None and precision in keep.peak_flops and float(figure["to"]) > keep.peak_flops[precision]:
            keep, write = _with_peak(keep, precision, figure), True
    if not target.startswith("cuda"):
        # After every raise: the findings must describe the figures shown and cached, not the ones measured.
        ceilings = with_order_findings(ceilings)
        keep = with_order_findings(keep) if keep is not None else None
    if not write or keep is None:
        return ceilings
    problem = _store(path if settled.replaced else reference_path, key, keep)
    if problem is not None:
        ceilings = Ceilings(peak_flops=ceilings.peak_flops, bandwidth_bytes_per_s=ceilings.bandwidth_bytes_per_s,
                            source=ceilings.source, device=ceilings.device,
                            details={**ceilings.details, "cache": problem})
    return ceilings


def _with_peak(ceilings: Ceilings, precision: str, figure: dict[str, Any]) -> Ceilings:
    """These ceilings with one peak replaced by an attained figure, marked as such in the details."""
    return Ceilings(peak_flops={**ceilings.peak_flops, precision: float(figure["to"])},
                    bandwidth_bytes_per_s=ceilings.bandwidth_bytes_per_s, source=ceilings.source,
                    device=ceilings.device,
                    details={**ceilings.details, f"{precision}_raised": dict(figure),
                             "exceeded_note": EXCEEDED_WARNING})


def raise_exceeded(ceilings: Ceilings, attained: dict[str, tuple[float, str]], *,
                   hw: HardwareProfile | None = None, cache_dir: Path | None = None) -> Ceilings:
    """Ceilings no measurement has beaten: each peak a later measurement exceeded becomes the attained figure.

    `attained` maps a precision to (FLOP/s attained, where it was measured). The raised peak is
    marked in the details (`<precision>_raised`: from, to, where, when), and, given `hw`, the
    cached measurement is invalidated (keeping the attained figure) so that the next run measures
    again instead of trusting a ceiling taken while the machine was busy.
    """
    raised = ceilings
    for precision, (rate, where) in attained.items():
        old = raised.peak_flops.get(precision)
        if old is None or not math.isfinite(rate) or rate <= old:
            continue
        raised = _with_peak(raised, precision, {"from": old, "to": rate, "where": where, "timestamp": _now()})
    if raised is not ceilings and not raised.device.startswith("cuda"):
        raised = with_order_findings(raised)
    if raised is not ceilings and hw is not None and ceilings.is_measured:
        directory = Path(cache_dir) if cache_dir is not None else planner_cache_dir()
        for quick in (False, True):
            _invalidate(cache_path(directory, hw, ceilings.device, quick), cache_key(hw, ceilings.device), raised)
    return raised


def _invalidate(path: Path, key: dict[str, Any], raised: Ceilings) -> None:
    """Mark a cache file as beaten by a later measurement, keeping the attained figures; quiet on failure."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != CACHE_FORMAT or data.get("key") != key:
            return
        kept = dict(data.get("kept") or {})
        for name, value in raised.details.items():
            if name.endswith("_raised") and isinstance(value, dict):
                precision = name.removesuffix("_raised")
                if float(value["to"]) > float(dict(kept.get(precision) or {}).get("to", 0.0)):
                    kept[precision] = value
        write_json_atomic(path, {**data, "kept": kept, "invalidated": _now()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # The cache is only a shortcut: a file that cannot be updated is measured again next time anyway.
        return



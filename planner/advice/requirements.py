"""Deployment requirements (latency, throughput, memory, size, accuracy), where each came from, and checks.

Precedence is flag over file over default. Defaults come from the device performance
targets (latency, memory, size and quantization per device tier), labelled as such; the table
writes MB/GB and we read them as MiB/GiB, the units memory tools report.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from planner import units
from planner.advice import _facts as facts
from planner.errors import RequirementsError
from planner.hardware.profile import DeviceClass
from planner.results import fidelity_view
from planner.results.decisions import (  # the data, below advice so results can hold it; re-exported
    DEFAULT_ACCURACY_DROP,
    SOURCE_FILE,
    SOURCE_FLAG,
    CheckStatus,
    DeviceTier,
    Percentile,
    RequirementCheck,
    Requirements,
)
from planner.units import MIB


@dataclass(frozen=True)
class TierTargets:
    """One row of the device performance targets: latency, memory, model size and the quantization it suggests."""

    latency_ms: float
    memory_bytes: int
    model_size_bytes: int
    quantization: tuple[str, ...]


# The device performance targets (latency <, memory <, model size <, quantization).
TIER_TARGETS: Mapping[DeviceTier, TierTargets] = MappingProxyType({
    DeviceTier.SERVER: TierTargets(50.0, 1024 * MIB, 100 * MIB, ("int8",)),
    DeviceTier.DESKTOP: TierTargets(100.0, 500 * MIB, 50 * MIB, ("int8", "ternary")),
    DeviceTier.MOBILE: TierTargets(200.0, 100 * MIB, 10 * MIB, ("ternary",)),
    DeviceTier.EDGE: TierTargets(500.0, 50 * MIB, 5 * MIB, ("ternary", "binary")),
})

DEVICE_TIERS: Mapping[DeviceClass, DeviceTier] = MappingProxyType({
    DeviceClass.DATACENTER_GPU: DeviceTier.SERVER,
    DeviceClass.CPU_SERVER: DeviceTier.SERVER,
    DeviceClass.DESKTOP_GPU: DeviceTier.DESKTOP,
    DeviceClass.DESKTOP_CPU: DeviceTier.DESKTOP,
    # A Jetson has GBs of (shared) RAM and a GPU: the Edge row's <50 MB / <5 MB budgets would
    # reject models Jetsons routinely run, and the Server row assumes datacenter power and
    # cooling. Desktop is the nearest row; a requirements file can override it.
    DeviceClass.JETSON: DeviceTier.DESKTOP,
    DeviceClass.RASPBERRY_PI: DeviceTier.EDGE,
    DeviceClass.ARM_BOARD: DeviceTier.EDGE,
})

# A model call issued from Python (argument conversion, dispatch, at least one kernel launch)
# costs microseconds before any arithmetic; a target below this cannot be met by any runtime.
MIN_CALL_OVERHEAD_MS = 0.005

# The smallest weight encoding any planner path produces is 1 bit per parameter (binary, the
# Edge row's lowest precision); weights below that size need a smaller model.
MIN_BITS_PER_PARAMETER = 1

_FIELDS = ("latency_ms", "latency_percentile", "min_throughput", "memory_budget_bytes",
           "model_size_budget_bytes", "accuracy_budget")


def tier_for(device_class: Any) -> DeviceTier:
    """The device-performance-targets row for a device class (a DeviceClass or its string value)."""
    value = str(getattr(device_class, "value", device_class))
    try:
        return DEVICE_TIERS[DeviceClass(value)]
    except (KeyError, ValueError):
        raise RequirementsError(f"unknown device class {value!r}",
                                f"expected one of: {', '.join(DEVICE_TIERS)}") from None


def defaults_for(device_class: Any) -> Requirements:
    """The default requirements for a device class, from the device performance targets, each labelled."""
    tier = tier_for(device_class)
    row = TIER_TARGETS[tier]
    label = f"default for {tier} (device performance targets)"
    return Requirements(
        latency_ms=row.latency_ms,
        latency_percentile=Percentile.P95,
        min_throughput=None,
        memory_budget_bytes=row.memory_bytes,
        model_size_budget_bytes=row.model_size_bytes,
        accuracy_budget=DEFAULT_ACCURACY_DROP,
        quantization=row.quantization,
        tier=tier,
        sources={
            "latency_ms": label,
            "latency_percentile": "planner default (the device performance targets name no percentile)",
            "min_throughput": "not set (the device performance targets set no throughput)",
            "memory_budget_bytes": label,
            "model_size_budget_bytes": label,
            "accuracy_budget": "planner default (at most 1% accuracy lost against the original model)",
            "quantization": label,
        },
    )


# ---- the file/flag format -------------------------------------------------------------------

@dataclass(frozen=True)
class _Key:
    """One key a requirements file or flag may set: the field it fills and how it parses."""

    field: str
    accepts: str
    parse: Callable[[Any], Any]


def _positive(value: Any) -> float:
    number = facts.number(value)
    if number is None or number <= 0:
        raise ValueError
    return number


def _mebibytes(value: Any) -> int:
    return round(_positive(value) * MIB)


def _percentile(value: Any) -> Percentile:
    return Percentile(str(value).lower())


def _fraction(value: Any) -> float:
    number = facts.number(value)
    if number is None or not 0 <= number < 1:
        raise ValueError
    return number


KEYS: Mapping[str, _Key] = MappingProxyType({
    "latency_ms": _Key("latency_ms", "a number of milliseconds > 0", _positive),
    "latency_percentile": _Key("latency_percentile", "one of p50, p95, p99", _percentile),
    "min_throughput": _Key("min_throughput", "samples per second > 0", _positive),
    "memory_mb": _Key("memory_budget_bytes", "a number of MiB > 0", _mebibytes),
    "model_size_mb": _Key("model_size_budget_bytes", "a number of MiB > 0", _mebibytes),
    "accuracy_drop": _Key("accuracy_budget", "a fraction from 0 up to (not including) 1, e.g. 0.01 for 1%", _fraction),
})

# "none" removes a default target (TOML has no null); the percentile always has a value.
_CLEARABLE = frozenset(k for k in KEYS if k != "latency_percentile")


def _parse_entry(key: str, raw: Any, *, origin: str) -> tuple[str, Any]:
    """(field, value) for one key=value from a file or a flag; RequirementsError naming the key."""
    spec = KEYS.get(key)
    if spec is None:
        close = difflib.get_close_matches(key, list(KEYS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise RequirementsError(f"{origin}: unknown requirement key {key!r}",
                                f"{hint}accepted keys: {', '.join(KEYS)}")
    if isinstance(raw, str) and raw.strip().lower() == "none" and key in _CLEARABLE:
        return spec.field, None
    value = raw
    if isinstance(raw, str) and origin == SOURCE_FLAG and key != "latency_percentile":
        # Flags arrive as text from the command line; a file must use TOML numbers.
        try:
            value = float(raw)
        except ValueError:
            value = raw
    try:
        return spec.field, spec.parse(value)
    except (ValueError, TypeError):
        clear = ', or "none" for no target' if key in _CLEARABLE else ""
        raise RequirementsError(f"{origin}: {key} = {raw!r} is not valid",
                                f"{key} takes {spec.accepts}{clear}") from None


def _read_toml(path: Path) -> Mapping[str, Any]:
    """The requirement entries of a TOML file: top-level keys, or a [requirements] table."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise RequirementsError(f"requirements file {path} does not exist",
                                "check the path given to --requirements") from None
    except OSError as exc:
        raise RequirementsError(f"cannot read requirements file {path}: {exc.strerror}",
                                "check the file's permissions") from None
    except tomllib.TOMLDecodeError as exc:
        raise RequirementsError(f"requirements file {path} is not valid TOML: {exc}",
                                f"write one 'key = value' per line; keys: {', '.join(KEYS)}") from None
    if set(data) == {"requirements"} and isinstance(data["requirements"], dict):
        data = data["requirements"]
    for key, value in data.items():
        if isinstance(value, dict):
            raise RequirementsError(f"requirements file {path}: unexpected table [{key}]",
                                    f"put the keys at the top level or under [requirements]; keys: {', '.join(KEYS)}")
    return data


def load_requirements(*, device_class: Any, toml_path: str | Path | None = None,
                      overrides: Mapping[str, Any] | None = None) -> Requirements:
    """Requirements for a device class: flags (`overrides`, file keys) over the TOML file over the device defaults.

    An override whose value is None is a flag that was not given and changes nothing.
    """
    base = defaults_for(device_class)
    values: dict[str, Any] = {name: getattr(base, name) for name in _FIELDS}
    sources = dict(base.sources)
    if toml_path is not None:
        path = Path(toml_path)
        for key, raw in _read_toml(path).items():
            name, value = _parse_entry(str(key), raw, origin=f"requirements file {path}")
            values[name] = value
            sources[name] = SOURCE_FILE
    for key, raw in (overrides or {}).items():
        if raw is None:
            continue
        name, value = _parse_entry(str(key), raw, origin=SOURCE_FLAG)
        values[name] = value
        sources[name] = SOURCE_FLAG
    return Requirements(**values, quantization=base.quantization, tier=base.tier, sources=sources)


# ---- checking measurements against requirements -------------------------------------------------

def _below(value: float, target: float, text: Callable[[float], str]) -> tuple[bool, str]:
    """(met, margin) for a 'less than' target."""
    if value < target:
        return True, f"{text(value)} vs < {text(target)}: met with {units.pct((target - value) / target)} headroom"
    return False, f"{text(value)} vs < {text(target)}: missed by {_miss(value / target)}"


def _miss(ratio: float) -> str:
    """How far a measurement is on the wrong side: '2.3x' when large, '4%' when small."""
    return units.speedup(ratio) if ratio >= 1.5 else units.pct(ratio - 1)


def _latency_check(req: Requirements, measured: Mapping[str, Any],
                   peak_flops_per_s: float | None) -> RequirementCheck:
    target = float(req.latency_ms)  # type: ignore[arg-type]
    pct = str(req.latency_percentile)
    label = req.latency_text or ""
    source = req.source("latency_ms")
    floors = [(MIN_CALL_OVERHEAD_MS,
               f"a model call from Python costs about {units.ms(MIN_CALL_OVERHEAD_MS)} in dispatch and "
               "kernel launch before any arithmetic")]
    flops = facts.number(measured.get("flops_per_sample"))
    precision = str(measured.get("precision") or "fp32")
    # The peak is the fp32 one: it bounds fp32 runs only (int8/bf16 kernels can go faster).
    if flops and peak_flops_per_s and precision == "fp32":
        floors.append((flops / peak_flops_per_s * 1000.0,
                       f"at fp32 this model's {units.flops(flops)} per sample take at least "
                       f"{units.ms(flops / peak_flops_per_s * 1000.0)} at the measured peak "
                       f"{units.flop_rate(peak_flops_per_s)}; only fewer FLOPs (a redesign) or "
                       "lower precision can reach it"))
    floor_ms, why = max(floors)
    value = facts.latency(measured, pct)
    shown = None if value is None else f"{units.ms(value)} {pct}"
    if target < floor_ms:
        return RequirementCheck("latency", label, shown, False, CheckStatus.IMPOSSIBLE,
                                f"{label} cannot be met: {why}", source)
    unstable = " (the timer flagged this measurement unstable)" if facts.latency_unstable(measured) else ""
    if value is None:
        p50 = facts.latency(measured, "p50")
        if p50 is None:
            return RequirementCheck("latency", label, None, None, CheckStatus.NOT_MEASURED,
                                    "no latency was measured", source)
        samples = facts.latency_samples(measured)
        count = f"{samples} samples" if samples is not None else "too few samples"
        if p50 >= target:
            # A higher percentile is never below the median, so a missed median settles it.
            return RequirementCheck("latency", label, f"{units.ms(p50)} p50", False, CheckStatus.MISSED,
                                    f"p50 {units.ms(p50)} already misses < {units.ms(target)} by "
                                    f"{_miss(p50 / target)}; {pct} (not measured, {count}) can only be higher"
                                    f"{unstable}", source)
        if req.source("latency_percentile").startswith("planner default"):
            # Nobody asked for p95: the planner chose it. A quick run's few samples cannot show a p95,
            # so the target is judged on the median it did measure; the status says so, and every reader
            # words it as met at p50 only, never as met at the percentile.
            _, margin = _below(p50, target, units.ms)
            return RequirementCheck("latency", label, f"{units.ms(p50)} p50", True, CheckStatus.MET_AT_P50,
                                    f"judged on p50: {pct} was not measured ({count}, as in a quick run, are too "
                                    f"few for a {pct}) and {pct} is only the planner's default; {margin}{unstable}. "
                                    f"Profile in full mode to judge {pct}", source)
        return RequirementCheck("latency", label, f"{units.ms(p50)} p50", None, CheckStatus.NOT_JUDGED,
                                f"{pct} was not measured ({count} are too few for a {pct}), so "
                                f"< {units.ms(target)} {pct} is not judged: p50 {units.ms(p50)} is under "
                                f"{units.ms(target)}, but a median does not bound a {pct}; profile longer to judge "
                                f"{pct}{unstable}", source)
    met, margin = _below(value, target, units.ms)
    return RequirementCheck("latency", label, shown, met, CheckStatus.MET if met else CheckStatus.MISSED,
                            margin + unstable, source)


def _throughput_check(req: Requirements, measured: Mapping[str, Any]) -> RequirementCheck:
    target = float(req.min_throughput)  # type: ignore[arg-type]
    label = f">= {units.rate(target)}"
    source = req.source("min_throughput")
    points = facts.sweep(measured)
    if not points:
        return RequirementCheck("throughput", label, None, None, CheckStatus.NOT_MEASURED,
                                "no batch sweep was measured", source)
    if req.latency_ms is not None:
        # A bigger batch adds latency: a batch only counts if one batch still finishes inside the latency target.
        best = facts.best_point(points, max_latency_ms=req.latency_ms)
        basis = f"best batch whose batch latency stays < {units.ms(req.latency_ms)}"
        if best is None:
            return RequirementCheck("throughput", label, None, False, CheckStatus.MISSED,
                                    f"no batch size finishes inside < {units.ms(req.latency_ms)} "
                                    f"(batch {points[0].batch} takes {units.ms(points[0].latency_p50_ms)})", source)
    else:
        best = facts.best_point(points)
        basis = "best over the sweep; no latency target bounds the batch"
    assert best is not None
    shown = f"{units.rate(best.samples_per_s)} at batch {best.batch}"
    if best.samples_per_s >= target:
        margin = f"{shown} vs {label}: met with {units.pct(best.samples_per_s / target - 1)} headroom ({basis})"
        return RequirementCheck("throughput", label, shown, True, CheckStatus.MET, margin, source)
    margin = f"{shown} vs {label}: missed by {_miss(target / best.samples_per_s)} ({basis})"
    return RequirementCheck("throughput", label, shown, False, CheckStatus.MISSED, margin, source)


def _weights_floor(measured: Mapping[str, Any], budget: int) -> tuple[CheckStatus, str] | None:
    """Why a byte budget below the model's own weights cannot be met, when it is."""
    params = facts.parameters(measured)
    fp32 = params * 4 if params else None
    if params:
        smallest = params * MIN_BITS_PER_PARAMETER / 8
        if budget < smallest:
            return (CheckStatus.IMPOSSIBLE,
                    f"cannot be met with this model: even at {MIN_BITS_PER_PARAMETER} bit per parameter its "
                    f"{units.count(params)} weights take {units.size(smallest)}, over the {units.size(budget)} budget; "
                    "only a smaller model can")
    if fp32 is not None and budget < fp32:
        return (CheckStatus.MISSED,
                f"cannot be met at FP32: the weights alone take {units.size(fp32)}; only lower precision "
                f"(INT8 weights ~{units.size(params)}, an estimate at 1 byte per parameter) or a smaller model can")
    return None


def _bytes_check(name: str, budget: int, value: int | None, measured: Mapping[str, Any], *,
                 basis: str, source: str) -> RequirementCheck:
    label = f"< {units.size(budget)}"
    floor = _weights_floor(measured, budget)
    shown = None if value is None else units.size(value)
    if floor is not None and (floor[0] == CheckStatus.IMPOSSIBLE or value is None or value >= budget):
        return RequirementCheck(name, label, shown, False, floor[0], f"{label} {floor[1]}", source)
    if value is None:
        return RequirementCheck(name, label, None, None, CheckStatus.NOT_MEASURED,
                                f"no {basis or name.replace('_', ' ')} was measured", source)
    met, margin = _below(value, budget, units.size)
    return RequirementCheck(name, label, shown, met, CheckStatus.MET if met else CheckStatus.MISSED,
                            f"{margin} ({basis})" if basis else margin, source)


def _accuracy_check(req: Requirements, measured: Mapping[str, Any]) -> RequirementCheck:
    budget = float(req.accuracy_budget)  # type: ignore[arg-type]
    label = f"drop <= {units.accuracy(budget)}"
    source = req.source("accuracy_budget")
    fidelity = facts.mapping(measured, "fidelity")
    acc, ref = facts.number(fidelity.get("accuracy")), facts.number(fidelity.get("reference_accuracy"))
    if acc is not None and ref is not None:
        drop = ref - acc
        # Judged on the drop's 95% interval where it was measured (files from before: the estimate alone).
        low = facts.number(fidelity.get("accuracy_drop_low"))
        high = facts.number(fidelity.get("accuracy_drop_high"))
        low, high = (drop, drop) if low is None or high is None else (low, high)
        samples = facts.number(fidelity.get("samples"))
        interval = (f" (95% interval {units.accuracy(low)} to {units.accuracy(high)} on "
                    f"{units.count(samples)} labelled samples)" if high != low else "")
        base = (f"accuracy {units.accuracy(acc)} vs the original's {units.accuracy(ref)}: "
                f"drop {units.accuracy(drop)}{interval}")
        shown = f"drop {units.accuracy(drop)}"
        if fidelity.get("exact") is True:
            # The same arithmetic to rounding: its answers are the original's on any input, not only these.
            return RequirementCheck("accuracy", label, shown, True, CheckStatus.MET,
                                    f"{base}: exact to rounding, so the original's accuracy holds, within the "
                                    f"{units.accuracy(budget)} budget", source)
        if high <= budget or low > budget:
            met = high <= budget
            return RequirementCheck("accuracy", label, shown, met, CheckStatus.MET if met else CheckStatus.MISSED,
                                    f"{base}, {'within' if met else 'over'} the {units.accuracy(budget)} budget",
                                    source)
        settle = facts.number(fidelity.get("settle_samples"))
        more = f": about {units.count(settle)} labelled samples would settle it" if settle else ""
        return RequirementCheck("accuracy", label, shown, None, CheckStatus.NOT_ESTABLISHED,
                                f"{base}: the interval straddles the {units.accuracy(budget)} budget, so these "
                                f"samples cannot say{more}", source)
    if "model" in measured and not fidelity:
        # A profile describes the original model itself: it is the accuracy reference.
        return RequirementCheck("accuracy", label, "drop 0 (reference)", True, CheckStatus.MET,
                                "the baseline is the reference model: no drop by definition", source)
    # The baseline compared with itself agrees by definition: a figure for it would say nothing (and a
    # top-1 figure for an output that has no classes would be wrong).
    top1 = None if fidelity.get("reference") else facts.number(fidelity.get("top1_agreement"))
    extra = f"; top-1 agreement with the original is {units.pct(top1)}" if top1 is not None else ""
    by_kind = fidelity_view.phrases(fidelity)  # a dense map, a sequence or a regression output: its own test
    if by_kind:
        extra = f"; against the original: {', '.join(by_kind)}"
    return RequirementCheck("accuracy", label, None, None, CheckStatus.NOT_MEASURED,
                            f"no labelled data, so the accuracy drop was not measured{extra}", source)


def evaluate(requirements: Requirements, measured: Mapping[str, Any], *,
             peak_flops_per_s: float | None = None) -> list[RequirementCheck]:
    """Check each set requirement against a profile or candidate-result dict.

    `peak_flops_per_s` (a measured ceiling) adds a compute floor to the latency check.
    """
    checks: list[RequirementCheck] = []
    if requirements.latency_ms is not None:
        checks.append(_latency_check(requirements, measured, peak_flops_per_s))
    if requirements.min_throughput is not None:
        checks.append(_throughput_check(requirements, measured))
    if requirements.memory_budget_bytes is not None:
        memory_basis = str(measured.get("memory_basis") or "peak memory")
        checks.append(_bytes_check("memory", requirements.memory_budget_bytes, facts.peak_memory(measured),
                                   measured, basis=memory_basis,
                                   source=requirements.source("memory_budget_bytes")))
    if requirements.model_size_budget_bytes is not None:
        checks.append(_bytes_check("model_size", requirements.model_size_budget_bytes, facts.model_size(measured),
                                   measured, basis="",
                                   source=requirements.source("model_size_budget_bytes")))
    if requirements.accuracy_budget is not None:
        checks.append(_accuracy_check(requirements, measured))
    return checks


def all_met(checks: list[RequirementCheck] | tuple[RequirementCheck, ...]) -> bool | None:
    """False if any check missed, True if every check was met, None if any could not be judged (or none).

    A latency met only at p50 (its percentile, the planner's default, unmeasured) counts as met here:
    that is what the plan decides on; its wording stays 'met at p50' wherever it is shown.
    """
    if any(check.met is False for check in checks):
        return False
    if not checks or any(check.met is None for check in checks):
        return None
    return True

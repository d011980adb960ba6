"""Reading a profile's facts in their JSON form, leniently, and the words every surface says about a candidate
not established on real data.

The advice reads a baseline's facts (a `planner profile --json` file, a partial profile) through the lenient
readers here: a record may lack any field or hold the wrong type in it, and each reader then returns None (or
an empty value) instead of raising, so a partial profile still gives a partial plan. A model's input records,
JSON inside the typed results, are read here too (`model_inputs`), for the report, the CLI and the TUI. Typed
code reads the dataclasses in `planner.results.values`; the report, the CLI and the TUI read only those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from planner import units
from planner.results.values import CandidateResult, Status, ThroughputPoint


def number(value: Any) -> float | None:
    """A finite float from an int/float, else None (booleans are not numbers here)."""
    return units.finite(value)


def _range_end(value: Any) -> int | float | None:
    """An input range's end as it was given (an int stays an int, a float a float); None when not a number."""
    return value if units.finite(value) is not None else None


def as_dict(value: Any) -> dict:
    """The value if it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    """The value if it is a list (or tuple), else an empty list."""
    return list(value) if isinstance(value, (list, tuple)) else []


def dig(data: Any, *keys: str) -> Any:
    """data[k1][k2]... or None where any level is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def mapping(obj: Any, key: str) -> Mapping[str, Any]:
    """obj[key] when both are mappings, else an empty mapping."""
    value = dig(obj, key)
    return value if isinstance(value, Mapping) else {}


def text(value: Any) -> str:
    """A string from results.json, or '' when absent."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def latency(entry: Any) -> Mapping[str, Any]:
    """The latency statistics of a candidate or the baseline ({} when not measured)."""
    return mapping(entry, "latency_ms")


def percentile_ms(entry: Any, percentile: str) -> float | None:
    """The measured latency at a percentile ('p50', 'p95', 'p99') in ms, or None."""
    return number(latency(entry).get(f"{percentile}_ms"))


def p50(entry: Any) -> float | None:
    """Median latency in ms, if measured."""
    return percentile_ms(entry, "p50")


def latency_samples(entry: Any) -> int | None:
    """How many timed samples the latency statistics rest on."""
    return units.whole(latency(entry).get("samples"))


def latency_unstable(entry: Any) -> bool:
    """Whether the timer flagged the latency measurement as unstable."""
    return bool(latency(entry).get("unstable"))


def sweep(entry: Any) -> tuple[ThroughputPoint, ...]:
    """The throughput sweep's complete points (batch, p50 and samples/s all measured), in batch order."""
    points = []
    for item in as_list(dig(entry, "throughput")):
        batch = units.whole(dig(item, "batch"))
        lat = number(dig(item, "latency_p50_ms"))
        rate = number(dig(item, "samples_per_s"))
        if batch is None or lat is None or rate is None or rate <= 0:
            continue
        points.append(ThroughputPoint(batch, lat, rate, units.whole(dig(item, "peak_memory_bytes"))))
    return tuple(sorted(points, key=lambda p: p.batch))


def best_point(points: tuple[ThroughputPoint, ...], *,
               max_latency_ms: float | None = None) -> ThroughputPoint | None:
    """The highest-throughput point, only among batches whose batch latency is under the limit."""
    eligible = [p for p in points if max_latency_ms is None or p.latency_p50_ms < max_latency_ms]
    if not eligible:
        return None
    return max(eligible, key=lambda p: (p.samples_per_s, -p.batch))


def knee_batch(entry: Any) -> int | None:
    """The batch where the sweep's throughput stopped growing, if the profile found one."""
    return units.whole(dig(entry, "knee_batch"))


def model_size(entry: Any) -> int | None:
    """The model's size in bytes: a candidate's own file on disk (size_bytes), else the profile's model.size_bytes.

    The candidate's file comes first: a requirement check passes a candidate with the original
    model beside it, and a ternary or INT8 file is judged on its own size, not the fp32 weights'.
    """
    value = units.whole(dig(entry, "size_bytes"))
    return value if value is not None else units.whole(mapping(entry, "model").get("size_bytes"))


def parameters(entry: Any) -> int | None:
    """The model's parameter count, if the profile recorded it."""
    return units.whole(mapping(entry, "model").get("parameters"))


def peak_memory(entry: Any) -> int | None:
    """Peak memory in bytes during the run."""
    return units.whole(dig(entry, "peak_memory_bytes"))


def info(entry: Any) -> Mapping[str, Any]:
    """The runtime facts the run recorded (mkldnn, device, precision...)."""
    return mapping(entry, "info")


def precision(entry: Any) -> str | None:
    """The precision the measured model computed in, lower-cased."""
    value = info(entry).get("precision") or dig(entry, "precision")
    return str(value).lower() if value else None


def torch_threads(entry: Any) -> tuple[int | None, int | None]:
    """(intra-op, inter-op) torch thread counts in force during the run."""
    threads = mapping(entry, "threads")

    def first(*keys: str) -> int | None:
        for key in keys:
            value = units.whole(threads.get(key))
            if value is not None:
                return value
        return None

    # The profile JSON and measure.threads.thread_settings() spell these two ways.
    return (first("torch_intra_op", "torch_intra_op_threads"),
            first("torch_inter_op", "torch_inter_op_threads"))


def env_threads(entry: Any, name: str) -> int | None:
    """A thread-count environment variable (e.g. OMP_NUM_THREADS) recorded with the run."""
    raw = mapping(entry, "threads").get(name)
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return units.whole(raw)


def layers_by_time(entry: Any) -> list[Mapping[str, Any]]:
    """The profiled layers, slowest first."""
    rows = [row for row in as_list(dig(entry, "layers"))
            if isinstance(row, Mapping) and number(row.get("time_ms")) is not None]
    return sorted(rows, key=lambda row: -float(row["time_ms"]))


def input_shape(entry: Any) -> tuple[int, ...] | None:
    """The input shape the model was profiled with."""
    raw = dig(entry, "input_shape")
    if isinstance(raw, (list, tuple)) and all(number(v) is not None for v in raw):
        return tuple(int(v) for v in raw)
    return None


def bottleneck(entry: Any) -> str | None:
    """'compute', 'memory' or 'overhead' when the profile classified the run."""
    bound = mapping(entry, "bottleneck").get("bound")
    return str(bound) if bound else None


@dataclass(frozen=True)
class InputView:
    """One model input as results.json or `planner inspect --json` records it.

    Older files record less: no axis names (`axes` is then empty), no value rule, and where only
    `input_shape` was kept, no name or dtype either (empty strings).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = ""
    axes: tuple[str, ...] = ()
    values: str = ""
    low: int | float | None = None  # as given: an int for token ids, a float for a float input's range
    high: int | float | None = None
    value: int | float | None = None  # every element fixed at this value (a sample rate)

    @property
    def dims(self) -> str:
        """The shape with axis names, batch first: 'batch=1, sequence=64' (bare sizes where none is known)."""
        axes = self.axes if len(self.axes) == len(self.shape) else ("",) * len(self.shape)
        return ", ".join(f"{a}={d}" if a else str(d) for a, d in zip(axes, self.shape))

    @property
    def dynamic_batch(self) -> bool | None:
        """Whether dimension 0 is a batch axis that may vary; None when the file does not say."""
        if len(self.axes) != len(self.shape) or not self.shape:
            return None
        return self.axes[0] == "batch"

    def describe(self, *, values: bool = True) -> str:
        """'input_ids int64 [batch=1, sequence=64], values integers in [0, 1000)': what the model was fed."""
        line = " ".join(part for part in (self.name, self.dtype, f"[{self.dims}]") if part)
        return line + (f", values {self.values}" if values and self.values else "")

    def cli(self) -> str:
        """The `--input` form that gives this tensor again: 'input_ids:1x128:int64:0-30522'."""
        line = f"{self.name}:{'x'.join(map(str, self.shape))}:{self.dtype or 'float32'}"
        if self.value is not None:
            return f"{line}:{self.value}"
        return line + (f":{self.low}-{self.high}" if self.low is not None and self.high is not None else "")


def _shape_of(raw: Any, *, scalar: bool = False) -> tuple[int, ...] | None:
    """A list of positive whole numbers as a shape (an empty one, a scalar, where `scalar`), else None."""
    if not isinstance(raw, (list, tuple)) or not (raw or scalar):
        return None
    dims = [units.whole(v) for v in raw]
    if any(d is None or d <= 0 for d in dims):
        return None
    return tuple(d for d in dims if d is not None)


def _input_of(raw: Any) -> InputView | None:
    """One entry of an `inputs` list (or an older `input` object), or None when it has no usable shape."""
    shape = _shape_of(dig(raw, "shape"), scalar=True)
    if shape is None:
        return None
    axes_raw = as_list(dig(raw, "axes"))
    axes = tuple(text(a) for a in axes_raw) if len(axes_raw) == len(shape) else ()
    if not axes and shape and isinstance(dig(raw, "dynamic_batch"), bool):
        # Older planners recorded only whether the batch may vary, on the single input.
        axes = ("batch" if raw["dynamic_batch"] else "",) + ("",) * (len(shape) - 1)
    return InputView(name=text(dig(raw, "name")), shape=shape, dtype=text(dig(raw, "dtype")), axes=axes,
                     values=text(dig(raw, "values")), low=_range_end(dig(raw, "low")),
                     high=_range_end(dig(raw, "high")), value=_fixed_value(dig(raw, "value")))


def _fixed_value(raw: Any) -> int | float | None:
    """A recorded fixed input value: an int stays an int (16000, not 16000.0), else a float or None."""
    if isinstance(raw, bool):
        return None
    return raw if isinstance(raw, int) else number(raw)


def model_inputs(*entries: Any) -> tuple[InputView, ...]:
    """Every input the model was fed, from the first of `entries` (baseline, model...) that records them.

    The current form (`inputs`, a list) is preferred wherever it is; then an older file's single
    `input` object; then a bare `input_shape`. An empty tuple when none of them is readable.
    """
    for entry in entries:
        found = [_input_of(item) for item in as_list(dig(entry, "inputs"))]
        if found and all(i is not None for i in found):
            return tuple(i for i in found if i is not None)
    for entry in entries:
        single = _input_of(dig(entry, "input"))
        if single is not None:
            return (single,)
    for entry in entries:
        shape = _shape_of(dig(entry, "input_shape"))
        if shape is not None:
            return (InputView(name="", shape=shape),)
    return ()


def inputs_dynamic_batch(inputs: tuple[InputView, ...]) -> bool | None:
    """Whether every input accepts any batch size; None when the file does not say for some input.
    A scalar (a sample rate) has no batch, so it neither allows nor forbids one."""
    flags = [i.dynamic_batch for i in inputs if i.shape]
    if not flags or any(f is None for f in flags):
        return None
    return all(flags)


def inputs_cli_args(inputs: tuple[InputView, ...]) -> list[str]:
    """The CLI arguments that give these inputs again: `--input-shape` for one float input, else `--input` each."""
    if not inputs:
        return []
    first = inputs[0]
    # One float input (or an older file that recorded no name) is what --input-shape alone describes.
    if len(inputs) == 1 and (first.dtype in ("", "float32") or not first.name) and first.shape \
            and first.value is None:
        return ["--input-shape", "x".join(map(str, first.shape))]
    args: list[str] = []
    for i in inputs:
        args += ["--input", i.cli()]
    return args


def unconfirmed_lead(candidates: Iterable[CandidateResult], confirmed_speedup: float | None) -> CandidateResult | None:
    """The fastest candidate not established on real data (status 'unconfirmed'), when its measured speedup
    beats `confirmed_speedup` (the best confirmed candidate's; None counts as the baseline's 1x); else None.

    Such a candidate drifted from the original on generated inputs only: it may be a real win that the
    user's own data would confirm, so the summaries name it beside the best confirmed candidate.
    """
    floor = confirmed_speedup if confirmed_speedup is not None else 1.0
    leads = [c for c in candidates if c.status == Status.UNCONFIRMED and (c.speedup or 0.0) > floor]
    return max(leads, key=lambda c: c.speedup or 0.0) if leads else None


def check_on_your_data(lead: CandidateResult, *, code: str = "") -> str:
    """'Up to 3.9x (INT8 NNCF) if it holds on your data: re-run with --val-data DIR'; `code` wraps the flag
    (a backtick in Markdown). Where the check could not judge it, the model's trained weights settle it too."""
    label = lead.label or lead.plugin or "a candidate"
    fid = lead.fidelity
    if fid is not None and fid.settle_samples:
        # Labelled data too small to tell: more of it settles it.
        labelled = "labelled " if fid.accuracy is not None else ""
        return (f"Up to {units.speedup(lead.speedup)} ({label}) if it holds on more of your data: re-run with "
                f"{code}--val-data DIR{code} holding about {fid.settle_samples:,} {labelled}samples")
    weights = " or with the model's trained weights" if fid is not None and fid.cannot_judge else ""
    return (f"Up to {units.speedup(lead.speedup)} ({label}) if it holds on your data: "
            f"re-run with {code}--val-data DIR{code}{weights}")


def unconfirmed_term(cand: CandidateResult) -> str:
    """What an unconfirmed candidate is: 'not established on real data' (generated inputs, or outputs the check
    cannot judge), or 'not established on these samples' where real samples were too few to settle it."""
    fid = cand.fidelity
    return "not established on these samples" if fid is not None and fid.settle_samples else \
        "not established on real data"


def not_established_why(cand: CandidateResult) -> str:
    """Why a candidate is not established on real data, in words: the fidelity check could not judge it (the
    original's outputs barely depend on the inputs used, a map without foreground), or it drifted from the
    original on generated inputs."""
    cannot = cand.fidelity.cannot_judge if cand.fidelity is not None else ""
    if cannot:
        return f"the fidelity check cannot judge it: {cannot}"
    return ("its outputs drifted from the original's on generated inputs, which cannot tell whether that matters "
            "on real data")


def generated_pass_caution(best: CandidateResult, *, code: str = "") -> str:
    """A caution for a best candidate that changes the arithmetic and passed its fidelity check on generated
    inputs only; '' otherwise. `code` wraps the flag (a backtick in Markdown).

    Generated inputs can pass where real ones fail: on an OCR recogniser, ONNX Runtime's static INT8 kept
    99.4% of positions on random inputs and 80% on real text lines. An fp32 rewrite is exact on any input.
    """
    decided_by = best.fidelity.decided_by if best.fidelity is not None else ""
    if not best.precision or best.precision == "fp32" or "generated inputs" not in decided_by:
        return ""
    return (f"it computes in {best.precision} and its fidelity was checked on generated inputs only, which can pass "
            f"where real inputs fail: confirm it on your data with {code}--val-data DIR{code} before deploying")

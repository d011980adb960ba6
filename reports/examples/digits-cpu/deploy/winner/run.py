"""Run the packaged ONNX model with ONNX Runtime's CPU provider, with the session options the planner measured.

The run.py of a hand-over package the planner wrote, from its template planner/onnx/runners/run_ort.py
(see planner.plugins.packaging) with SETTINGS filled in; it imports only onnxruntime and numpy.
SETTINGS: "model" (the file, beside run.py), and either "defaults" (ONNX Runtime exactly as it comes)
or the graph optimization level, execution mode, intra- and inter-op thread counts, whether idle
threads spin and, for a session built for one input shape, the size each free dimension is fixed at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnxruntime as ort

SETTINGS = {'allow_spinning': True,
 'execution_mode': 'ORT_SEQUENTIAL',
 'free_dimensions': {'batch': 1},
 'graph_optimization_level': 'ORT_ENABLE_ALL',
 'inter_op_threads': 1,
 'intra_op_threads': 2,
 'model': 'digits.onnx'}
THREADS = ("intra_op_threads",)  # where SETTINGS keeps the thread count `--threads` overrides

HERE = Path(__file__).resolve().parent

_NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
             "tensor(int8)": np.int8, "tensor(bool)": np.bool_}


def load(folder: str | Path | None = None) -> Any:
    """An InferenceSession over the packaged model with exactly the measured session options."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    # Thread counts apply even to ONNX Runtime's defaults, where only `--threads` sets one.
    if SETTINGS.get("intra_op_threads"):
        opts.intra_op_num_threads = int(SETTINGS["intra_op_threads"])
    if SETTINGS.get("inter_op_threads"):
        opts.inter_op_num_threads = int(SETTINGS["inter_op_threads"])
    if not SETTINGS.get("defaults"):
        opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, SETTINGS["graph_optimization_level"])
        opts.execution_mode = getattr(ort.ExecutionMode, SETTINGS["execution_mode"])
        spinning = "1" if SETTINGS.get("allow_spinning", True) else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spinning)
        opts.add_session_config_entry("session.inter_op.allow_spinning", spinning)
        for name, size in SETTINGS.get("free_dimensions", {}).items():
            opts.add_free_dimension_override_by_name(name, int(size))
    path = Path(folder) if folder is not None else HERE
    return ort.InferenceSession(str(path / SETTINGS["model"]), opts, providers=["CPUExecutionProvider"])


def prepare(session: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feed `run` takes: each graph input by name (or, where the names differ, in order), in its dtype."""
    graph = session.get_inputs()
    names = [i.name for i in graph]
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    # np.require keeps a scalar input (a sample rate) 0-d, where ascontiguousarray would make it [1].
    return {i.name: np.require(a, dtype=_NP_TYPES.get(i.type), requirements="C") for i, a in zip(graph, arrays)}


def run(session: Any, prepared: dict[str, np.ndarray]) -> list:
    """One inference; every output."""
    return session.run(None, prepared)


def first_output(outputs: list) -> np.ndarray:
    """The first output as float32."""
    return np.asarray(outputs[0], dtype=np.float32)


# --- Added by the planner to every package: its samples, its thread count, and what `python run.py` does. ---

def _samples(kind, folder=None):
    """The arrays of one kind in samples.npz beside run.py ('input': dicts by input name; 'reference': the original
    model's first output on each), in sample order."""
    import numpy
    from pathlib import Path as _Path

    path = (_Path(folder) if folder is not None else _Path(__file__).resolve().parent) / "samples.npz"
    found = {}
    with numpy.load(path, allow_pickle=False) as data:
        for key in data.files:
            what, index, *name = key.split("/", 2)
            if what == kind == "input" and name:
                found.setdefault(int(index), {})[name[0]] = data[key]
            elif what == kind == "reference":
                found[int(index)] = data[key]
    return [found[i] for i in sorted(found)]


def sample_inputs(folder=None):
    """The package's sample inputs (samples.npz beside run.py): one dict of arrays by input name per call."""
    return _samples("input", folder)


def reference_outputs(folder=None):
    """The original model's first output on each sample input (samples.npz beside run.py)."""
    return _samples("reference", folder)


def predict(session, inputs):
    """The first output for one dict of input arrays (by the model's input names) as a float32 numpy array."""
    return first_output(run(session, prepare(session, inputs)))


def threads_setting():
    """The thread count SETTINGS holds at the runner's THREADS path; None: the runtime chooses it."""
    value = SETTINGS
    for key in globals().get("THREADS") or ("",):
        value = value.get(key) if isinstance(value, dict) else None
    return value


PLANNED_THREADS = threads_setting()
"""The thread count the plan measured (before any `use_threads`); None: the runtime chose it."""


def use_threads(count):
    """Run with `count` threads instead of the plan's: call it before load(). A runner without a thread setting
    (a GPU's) raises ValueError."""
    path = globals().get("THREADS")
    if not path:
        raise ValueError("this package's runtime has no thread setting to override")
    target = SETTINGS
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = int(count)


def threads_words(override=None):
    """'threads 4 (the plan measured 2)', or 'threads 2, as the plan measured'."""
    planned = PLANNED_THREADS
    if override is None:
        return f"threads {planned}, as the plan measured" if planned else "threads left to the runtime, as measured"
    if planned == override:
        return f"threads {override}, as the plan measured"
    return f"threads {override} (the plan measured {planned})" if planned else \
        f"threads {override} (the plan left the count to the runtime)"


# --- Your whole request timed end to end: `python run.py --pipeline FILE.py:PRE[,POST]` (the planner's own code). ---

import hashlib
import importlib.util
import itertools
import sys
import time as _time
from pathlib import Path as _Path
from typing import Any, Callable

import numpy as _np

PIPELINE_FORM = "FILE.py:PRE or FILE.py:PRE,POST"
PIPELINE_MAX_SAMPLES = 64
"""Distinct raw samples read (the rest of a longer list is left unread); requests cycle through them."""
PIPELINE_CALL_LIMIT_S = 5.0
"""One sample's preprocessing, or one output's postprocessing, that takes longer than this is an error."""
PIPELINE_WARMUP = 3
"""Requests run untimed first (the first also checks what PRE returns), as the model's own timer warms up."""
PIPELINE_MIN_REQUESTS = 5
"""The time cap waits for this many timed requests (a median of two is not a measurement)."""
MODEL_SHARE_BOTTLENECK = 0.5
"""Under this share of the request the model is not the bottleneck: the work around it is."""


class PipelineError(Exception):
    """What went wrong with the user's pipeline, and what to do (the planner raises it as a PlannerError)."""

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}: {fix}" if fix else problem)


class Pipeline:
    """The user's functions loaded from their file: PRE, POST (or None), their names, and the raw samples."""

    def __init__(self, pre: Callable[[Any], Any], post: Callable[[Any], Any] | None, pre_name: str,
                 post_name: str | None, samples: list, source: str) -> None:
        self.pre = pre
        self.post = post
        self.pre_name = pre_name
        self.post_name = post_name
        self.samples = samples
        self.source = source  # where the samples came from, in words


def parse_pipeline(text: str) -> tuple[_Path, str, str | None]:
    """(file, PRE's name, POST's name or None) from 'FILE.py:PRE' or 'FILE.py:PRE,POST'."""
    fix = f"pass --pipeline {PIPELINE_FORM}, e.g. --pipeline my_pipeline.py:preprocess,postprocess"
    file_part, sep, names = str(text).rpartition(":")
    pre, _, post = names.partition(",")
    if not sep or not file_part or not pre.strip() or ("," in names and not post.strip()):
        raise PipelineError(f"--pipeline {text!r} does not have the form {PIPELINE_FORM}", fix)
    path = _Path(file_part)
    if not path.is_file():
        raise PipelineError(f"--pipeline: {path} is not a file", fix)
    return path, pre.strip(), post.strip() or None


def load_pipeline(text: str, sample_paths: tuple = ()) -> Pipeline:
    """Import the file and find its functions and raw samples; `sample_paths` stand in when it defines none."""
    path, pre_name, post_name = parse_pipeline(text)
    name = "pipeline_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PipelineError(f"--pipeline: cannot import {path}", "check that it is a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise PipelineError(f"--pipeline {path} line {exc.lineno}: syntax error: {exc.msg}",
                            "fix the Python file and run again") from exc
    except Exception as exc:  # noqa: BLE001 - the user's file may raise anything on import; we report it
        raise PipelineError(f"importing --pipeline {path} raised {type(exc).__name__}: {exc}",
                            "fix the error in the file (import it in Python to see the traceback)") from exc
    pre = getattr(module, pre_name, None)
    if not callable(pre):
        raise PipelineError(f"--pipeline {path} has no function {pre_name!r}",
                            f"define def {pre_name}(sample) returning the model's input (an array in the input's "
                            "shape, with or without the batch axis, or a dict of arrays by input name)")
    post = getattr(module, post_name, None) if post_name else None
    if post_name and not callable(post):
        raise PipelineError(f"--pipeline {path} has no function {post_name!r}",
                            f"define def {post_name}(output) taking the model's first output (a numpy array)")
    samples, source = _raw_samples(module, path, sample_paths)
    return Pipeline(pre, post, pre_name, post_name, samples, source)


def _raw_samples(module: Any, path: _Path, sample_paths: tuple) -> tuple[list, str]:
    """(up to PIPELINE_MAX_SAMPLES raw samples, where they came from in words)."""
    fix = (f"define samples() in {path.name}, returning a list of raw requests (image bytes, a file path, "
           "a string), or a SAMPLES list")
    made = getattr(module, "samples", None)
    if callable(made):
        try:
            samples = list(itertools.islice(made(), PIPELINE_MAX_SAMPLES))
        except Exception as exc:  # noqa: BLE001 - the user's function may raise anything
            raise PipelineError(f"--pipeline {path}: samples() raised {type(exc).__name__}: {exc}", fix) from exc
        source = f"samples() in {path.name}"
    elif getattr(module, "SAMPLES", None) is not None:
        samples = list(itertools.islice(module.SAMPLES, PIPELINE_MAX_SAMPLES))
        source = f"SAMPLES in {path.name}"
    elif sample_paths:
        samples = [_Path(p) for p in list(sample_paths)[:PIPELINE_MAX_SAMPLES]]
        source = "the files of --val-data, passed as paths"
    else:
        raise PipelineError(f"--pipeline {path} gives no raw samples to time requests on", fix)
    if not samples:
        raise PipelineError(f"--pipeline {path}: {source} gave no samples", fix)
    return samples, source


def request_feed(value: Any, template: dict, fn_name: str) -> dict:
    """The model's feed from what PRE returned, checked against `template` (input name -> (shape, dtype)).

    The shapes in `template` have the batch first: an array without it is given one, its sample repeated
    to fill the batch the model runs at; an array with it must match. The dtype must match exactly,
    as the runtime takes it.
    """
    names = list(template)
    if isinstance(value, dict):
        missing = [n for n in names if n not in value]
        extra = [str(n) for n in value if n not in template]
        if missing or extra:
            raise PipelineError(f"{fn_name} returned a dict with " + "; ".join(
                p for p in (f"no {', '.join(missing)}" if missing else "",
                            f"unknown {', '.join(extra)}" if extra else "") if p),
                f"return a dict with exactly the model's inputs: {', '.join(names)}")
        arrays = value
    elif len(names) == 1:
        arrays = {names[0]: value}
    else:
        raise PipelineError(f"{fn_name} returned one {type(value).__name__}, and the model takes {len(names)} inputs",
                            f"return a dict of arrays by input name: {', '.join(names)}")
    feed = {}
    for name in names:
        shape, dtype = tuple(template[name][0]), _np.dtype(template[name][1])
        try:
            array = _np.asarray(arrays[name])
        except Exception as exc:  # noqa: BLE001 - any object may fail to become an array
            raise PipelineError(f"{fn_name} returned {type(arrays[name]).__name__} for {name}, not an array "
                                f"({type(exc).__name__}: {exc})", "return a numpy array") from exc
        where = f" for {name}" if len(names) > 1 else ""
        if array.dtype != dtype:
            raise PipelineError(f"{fn_name} returned {array.dtype}{where}, and the model takes {dtype}",
                                f"return x.astype(numpy.{dtype.name}): the conversion is part of your request")
        if array.shape == shape:
            feed[name] = array
        elif shape and array.shape == shape[1:]:
            feed[name] = _np.repeat(array[None], shape[0], axis=0) if shape[0] != 1 else array[None]
        else:
            wanted = "x".join(map(str, shape[1:])) or "scalar"
            raise PipelineError(f"{fn_name} returned shape {'x'.join(map(str, array.shape)) or 'scalar'}{where}, "
                                f"and the model takes {wanted} (one sample, without the batch axis) "
                                f"or {'x'.join(map(str, shape)) or 'scalar'}",
                                "return one sample in the input's shape")
    return feed


def _timed(fn: Callable[[Any], Any], arg: Any, fn_name: str, part: str, limit_s: float) -> tuple[Any, float]:
    """(fn(arg), seconds it took); raising, or taking longer than `limit_s`, is a PipelineError naming it."""
    start = _time.perf_counter()
    try:
        value = fn(arg)
    except Exception as exc:  # noqa: BLE001 - the user's function may raise anything; we name it
        raise PipelineError(f"{fn_name} raised {type(exc).__name__}: {exc}",
                            f"fix {fn_name} (call it on one of your samples in Python to see the traceback)") from exc
    took = _time.perf_counter() - start
    if took > limit_s:
        raise PipelineError(f"{fn_name} took {took:.1f} s on one request, over the {limit_s:g} s limit for {part}",
                            f"make {fn_name} faster, or time it on smaller samples")
    return value, took


def time_requests(pipeline: Pipeline, call_model: Callable[[dict], Any], template: dict, *, max_requests: int,
                  max_time_s: float, call_limit_s: float = PIPELINE_CALL_LIMIT_S) -> dict:
    """Time requests end to end over the pipeline's samples, in turn; the split as a plain dict.

    Runs PIPELINE_WARMUP requests untimed, then up to `max_requests` or `max_time_s` of them (the time
    cap waits for PIPELINE_MIN_REQUESTS, unless that takes three times the cap). Checking what PRE returned
    is the planner's own work and is not counted.
    """
    parts: list[tuple[float, float, float]] = []
    samples = pipeline.samples
    started = None
    for index in itertools.count():
        sample = samples[index % len(samples)]
        value, pre_s = _timed(pipeline.pre, sample, pipeline.pre_name, "one sample's preprocessing", call_limit_s)
        feed = request_feed(value, template, pipeline.pre_name)
        start = _time.perf_counter()
        try:
            output = call_model(feed)
        except Exception as exc:  # noqa: BLE001 - a runtime raises its own types on an input it refuses
            raise PipelineError(f"the model failed on what {pipeline.pre_name} returned: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}",
                                f"make {pipeline.pre_name} return what the model takes") from exc
        model_s = _time.perf_counter() - start
        post_s = 0.0
        if pipeline.post is not None:
            _, post_s = _timed(pipeline.post, output, str(pipeline.post_name), "one output's postprocessing",
                               call_limit_s)
        if index < PIPELINE_WARMUP:
            continue
        if started is None:
            started = _time.perf_counter()
        parts.append((pre_s, model_s, post_s))
        elapsed = _time.perf_counter() - started
        if len(parts) >= max_requests or (elapsed >= max_time_s and (
                len(parts) >= PIPELINE_MIN_REQUESTS or elapsed >= 3 * max_time_s)):
            break
    return summarise(parts, pipeline)


def summarise(parts: list[tuple[float, float, float]], pipeline: Pipeline) -> dict:
    """The split of timed requests (seconds per part): each part's median and the whole request's, in ms.

    Medians, not means: one request slowed by another process (a busy machine) must not move the split.
    """
    times = _np.asarray(parts, dtype=_np.float64) * 1e3
    medians = _np.median(times, axis=0)
    totals = times.sum(axis=1)
    return {"requests": len(parts), "distinct_samples": len(pipeline.samples), "samples_from": pipeline.source,
            "preprocess": pipeline.pre_name, "postprocess": pipeline.post_name,
            "preprocess_ms": float(medians[0]), "model_ms": float(medians[1]),
            "postprocess_ms": float(medians[2]) if pipeline.post is not None else None,
            "request_p50_ms": float(_np.median(totals))}


def shares(split: dict) -> tuple[float, float, float]:
    """(model, preprocessing, postprocessing) as shares of the parts' medians together; they add up to 1."""
    model, pre, post = (float(split.get(k) or 0.0) for k in ("model_ms", "preprocess_ms", "postprocess_ms"))
    total = model + pre + post
    return (model / total, pre / total, post / total) if total > 0 else (0.0, 0.0, 0.0)


def split_line(split: dict) -> str:
    """'model 41% of the request, preprocessing 52%, postprocessing 7%'."""
    model, pre, post = shares(split)
    line = f"model {model:.0%} of the request, preprocessing {pre:.0%}"
    return line + (f", postprocessing {post:.0%}" if split.get("postprocess") else "")


def bottleneck_words(split: dict) -> str:
    """Which part holds the request back, by the stated rule (the model under half: the work around it)."""
    model = shares(split)[0]
    if model < MODEL_SHARE_BOTTLENECK:
        return f"the work around it (the model is under {MODEL_SHARE_BOTTLENECK:.0%} of the request)"
    return f"the model itself (at least {MODEL_SHARE_BOTTLENECK:.0%} of the request)"


def report_lines(split: dict) -> list[str]:
    """What run.py prints for a timed split: the shares, each part's median, and which part holds the request back."""
    parts = [f"preprocessing {split['preprocess_ms']:.3g} ms", f"model {split['model_ms']:.3g} ms"]
    if split.get("postprocess_ms") is not None:
        parts.append(f"postprocessing {split['postprocess_ms']:.3g} ms")
    return [split_line(split),
            f"median per request: {', '.join(parts)}; whole request {split['request_p50_ms']:.3g} ms",
            f"{split['requests']} requests over {split['distinct_samples']} distinct samples ({split['samples_from']})",
            f"the bottleneck: {bottleneck_words(split)}"]


# --- The package's check of itself: `python run.py --check` (the code planner verify judges with). ---

import hashlib
import math as _math
import time as _time
from pathlib import Path as _Path
from typing import Any, Callable

import numpy as _np

PASS, FAIL, NOT_ESTABLISHED = "pass", "fail", "not established"
"""A check's verdicts: only a pass passes; a fidelity check that cannot tell is not established."""
_Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
_IGNORED_DIRS = frozenset({"__pycache__"})  # Python writes these beside run.py when it is imported
MANIFEST_FILE = "manifest.json"


def sha256_of(path: Any) -> str:
    """The file's SHA-256 as hex, read in chunks (an artifact may be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_problems(folder: Any, listed: dict) -> list:
    """Every way the folder differs from the manifest's files ({path: SHA-256}): a missing file, an edited one,
    one the manifest does not list."""
    folder = _Path(folder)
    problems = []
    for name, expected in listed.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif sha256_of(path) != expected:
            problems.append(f"{name} was changed after the plan wrote it (its SHA-256 differs from {MANIFEST_FILE})")
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or _IGNORED_DIRS & set(relative.parts) or relative.as_posix() == MANIFEST_FILE:
            continue
        if relative.as_posix() not in listed:
            problems.append(f"{relative.as_posix()} is not part of the package ({MANIFEST_FILE} does not list it)")
    return problems


def wilson_interval(successes: int, n: int) -> tuple:
    """The 95% Wilson score interval of the share `successes / n` (n > 0)."""
    p = successes / n
    scale = 1 + _Z95 ** 2 / n
    centre = (p + _Z95 ** 2 / (2 * n)) / scale
    half = _Z95 / scale * _math.sqrt(p * (1 - p) / n + _Z95 ** 2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def judge_package_outputs(reference: list, outputs: list, rule: dict) -> tuple:
    """(verdict, the test that decided in words, the figures measured) for the package's outputs on the samples
    against the original's, by the manifest's rule (see the module's docstring)."""
    if len(reference) != len(outputs):
        return FAIL, f"{len(outputs)} outputs for {len(reference)} reference outputs", {}
    ref = _np.concatenate([_np.asarray(r, dtype=_np.float64) for r in reference])
    out = _np.concatenate([_np.asarray(o, dtype=_np.float64) for o in outputs])
    if ref.shape != out.shape:
        return FAIL, f"the output's shape {out.shape} differs from the original's {ref.shape}", {}
    if not _np.isfinite(out).all():
        return FAIL, "the outputs are not finite (NaN or Inf)", {}
    rows_ref, rows_out = ref.reshape(len(ref), -1), out.reshape(len(out), -1)
    a, b = rows_ref.ravel(), rows_out.ravel()
    norm_a, norm_b = float(_np.linalg.norm(a)), float(_np.linalg.norm(b))
    cosine = float(a @ b / (norm_a * norm_b)) if norm_a * norm_b > 0 else float(_np.array_equal(a, b))
    mean_error = float(_np.abs(a - b).mean()) if a.size else 0.0
    figures = {"samples": len(rows_ref), "cosine": cosine, "mean_abs_error": mean_error,
               "max_abs_error": float(_np.abs(a - b).max(initial=0.0))}
    figures.update(_centered(rows_ref, rows_out))
    kind = str(rule.get("output_kind") or "classes").partition(":")[0]
    judge = {"classes": _classes, "embedding": _embedding, "regression": _regression}.get(kind, _spread)
    why, test = judge(rows_ref, rows_out, ref, figures, rule)
    rule_words = f"the plan's {rule.get('precision', 'fp32')} rule"
    if why:
        return FAIL, f"{why} ({rule_words})", figures
    unjudged = _cannot_judge(norm_a, figures, rule)
    if unjudged:
        exact = rule.get("exact_share")
        error = figures.get("centered_error")
        if exact is not None and error is not None and error <= exact:
            return PASS, (f"exact to rounding: its error is {error:.2g} of the part of the output that depends on "
                          f"the input (at most {exact:g}), though {unjudged} ({rule_words})"), figures
        return NOT_ESTABLISHED, f"cannot judge: {unjudged}; what could be compared passed: {test}", figures
    return PASS, f"{test} ({rule_words})", figures


def plan_note(rule: dict) -> str:
    """What the plan said about a candidate it could not establish ('' when it established it): a pass here
    shows the package reproduces the candidate on a few samples, not that the candidate is good enough."""
    why = rule.get("plan_not_established")
    return (f"the plan could not establish this candidate's fidelity ({why}); these few samples cannot either: "
            "check it on your data before relying on it") if why else ""


def _centered(rows_ref: Any, rows_out: Any) -> dict:
    """The part of the outputs that depends on the input (both centered on the original's mean over the
    samples), and the package on it; {} with fewer than two samples."""
    if len(rows_ref) < 2:
        return {}
    mean = rows_ref.mean(axis=0)
    ref_c, out_c = (rows_ref - mean).ravel(), (rows_out - mean).ravel()
    size, own = float(_np.linalg.norm(ref_c)), float(_np.linalg.norm(out_c))
    total, gap = float(_np.linalg.norm(rows_ref)), float(_np.linalg.norm(rows_out - rows_ref))
    return {"input_spread": size / total if total > 0 else 0.0,
            "centered_cosine": float(ref_c @ out_c / (size * own)) if size > 0 and own > 0 else float(size == own),
            "centered_error": gap / size if size > 0 else (0.0 if gap == 0 else float("inf"))}


def _cannot_judge(norm: float, figures: dict, rule: dict) -> str:
    """Why no test of these outputs can tell a good package from a bad one; '' when one can."""
    if norm == 0:
        return "the original's outputs are zero on every sample"
    spread = figures.get("input_spread")
    if spread is not None and spread < float(rule.get("min_input_spread") or 0.0):
        return (f"the outputs barely depend on the input (random weights?): across the {figures['samples']} "
                f"samples they vary by {spread:.2g} of their size, below the {rule['min_input_spread']:g} a test "
                "of that part needs")
    return ""


def _share_fails(agree: int, counted: int, level: float, rule: dict) -> tuple:
    """(whether a share fails its level, the share in words): on its 95% interval where the rule says so."""
    share = agree / counted
    words = f"{share:.1%} ({agree} of {counted})"
    if rule.get("interval_decides"):
        low, high = wilson_interval(agree, counted)
        return high < level, f"{words}, 95% interval {low:.1%} to {high:.1%}"
    return share < level, words


def _classes(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """Class scores: cosine, then top-1 over the samples whose margin stands clear of the error, then the
    cosine of the part that depends on the input."""
    gate = float(rule["min_cosine"])
    cosine = figures["cosine"]
    if cosine < gate:
        return f"cosine similarity {cosine:.5f} < gate {gate:g}", ""
    tests = [f"cosine similarity {cosine:.5f} (gate {gate:g})"]
    if _cannot_judge(float(_np.linalg.norm(rows_ref)), figures, rule):
        return "", tests[0]
    if rows_ref.shape[1] > 1:
        top2 = _np.sort(rows_ref, axis=1)[:, -2:]
        decisive = top2[:, 1] - top2[:, 0] > float(rule.get("margin_factor", 4.0)) * figures["mean_abs_error"]
        agree = rows_ref.argmax(axis=1) == rows_out.argmax(axis=1)
        counted, level = int(decisive.sum()), float(rule["min_top1"])
        if counted:
            figures["top1_agreement"] = float(agree[decisive].mean())
            fails, words = _share_fails(int(agree[decisive].sum()), counted, level, rule)
            if fails:
                return f"top-1 agreement {words} < gate {level:.0%}", ""
            tests.append(f"top-1 agreement {words} (gate {level:.0%})")
        else:
            tests.append("top-1 is no test here (no sample's top-1 margin exceeds the package's error)")
    centered = figures.get("centered_cosine")
    if centered is not None:
        if not centered >= gate:
            return f"cosine of the part that depends on the input {centered:.5f} < gate {gate:g}", ""
        tests.append(f"cosine of the part that depends on the input {centered:.5f} (gate {gate:g})")
    return "", "; ".join(tests)


def _embedding(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """Vectors: each sample's cosine with the original's, on average."""
    def unit(x: Any) -> Any:
        norms = _np.linalg.norm(x, axis=1, keepdims=True)
        return x / _np.where(norms > 0, norms, 1.0)

    per_sample = _np.sum(unit(rows_ref) * unit(rows_out), axis=1)
    value, gate = float(per_sample.mean()), float(rule["min_cosine"])
    figures["sample_cosine"] = value
    words = f"cosine per sample {value:.4f} (lowest {float(per_sample.min()):.4f})"
    if value < gate:
        return f"{words} < gate {gate:g}", ""
    return "", f"{words} (gate {gate:g})"


def _regression(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """Values: the error relative to the output's size, then over the part that depends on the input."""
    norm = float(_np.linalg.norm(rows_ref))
    gap = float(_np.linalg.norm(rows_out - rows_ref))
    value = gap / norm if norm > 0 else (0.0 if gap == 0 else float("inf"))
    limit = float(rule["max_relative_error"])
    figures["relative_error"] = value
    if value > limit:
        return f"relative error {value:.2g} > gate {limit:g}", ""
    test = f"relative error {value:.2g} (at most {limit:g})"
    centered = figures.get("centered_error")
    if centered is None or _cannot_judge(norm, figures, rule):
        return "", test
    if not centered <= limit:
        return f"error over the part that depends on the input {centered:.2g} > gate {limit:g}", ""
    return "", f"{test}; error over the part that depends on the input {centered:.2g} (at most {limit:g})"


def _spread(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """A dense map or a sequence: the mean error over the output's scale (a probability map's is 1, else the
    original's standard deviation)."""
    mean_error = figures["mean_abs_error"]
    kind = str(rule.get("output_kind") or "")
    probability = kind == "dense" and full.size and float(full.min()) >= 0.0 and float(full.max()) <= 1.0
    std = 1.0 if probability else float(full.std())
    value = mean_error / std if std > 0 else (0.0 if mean_error == 0 else float("inf"))
    limit = float(rule["max_spread_error"])
    figures["spread_error"] = value
    where = "on the probability scale" if probability else "relative to the output's spread"
    if value > limit:
        return f"mean error {value:.2g} {where} > gate {limit:g}", ""
    return "", f"mean error {value:.2g} {where} (at most {limit:g})"


def latency_verdict(p50_ms: float, recorded_ms: Any, tolerance: float, calls: Any = None) -> tuple:
    """(verdict, words): the p50 here (over `calls` timed calls, where given) against the one recorded, within
    `tolerance` (a share: 0.10 is 10%)."""
    here = f"p50 {_ms(p50_ms)} here" + (f" over {calls:,} calls" if calls else "")
    if not recorded_ms or recorded_ms <= 0:
        return FAIL, f"{here}; the manifest records no p50 to compare with"
    change = (p50_ms - recorded_ms) / recorded_ms
    within = abs(change) <= tolerance
    words = (f"{here}, {_ms(recorded_ms)} recorded ({change:+.1%}, "
             f"{'within' if within else 'outside'} {tolerance:.0%})")
    if not within:
        words += ("; a different or busy machine changes the timing: compare with the machine in "
                  f"{MANIFEST_FILE}, and run again on an idle one")
    return (PASS if within else FAIL), words


def timed_calls(call: Callable[[Any], Any], inputs: list, *, seconds: float, max_calls: int,
                sync: Any = None, warmup_calls: int = 10, warmup_s: float = 0.2) -> dict:
    """benchmark_app's loop over `inputs` (prepared once, cycled): a short warm-up (as the plan's method has),
    then calls timed one by one until `seconds` have passed with at least 10 calls (a slow model: 3 calls once
    three times that has passed), or `max_calls` were made.

    Returns the times in ms (sorted), the loop's wall time in s, its calls and the warm-up's; `sync` waits for
    work a runtime queued on a device before the clock is read.
    """
    def clock() -> int:
        if sync is not None:
            sync()
        return _time.perf_counter_ns()

    budget_ns = seconds * 1e9
    start = clock()
    index = 0
    while (index < warmup_calls or clock() - start < warmup_s * 1e9) and clock() - start < budget_ns:
        call(inputs[index % len(inputs)])
        index += 1
    warmup = index
    times: list = []
    begin = clock()
    while len(times) < max_calls:
        elapsed = _time.perf_counter_ns() - begin
        if elapsed >= budget_ns and (len(times) >= 10 or (elapsed >= 3 * budget_ns and len(times) >= 3)):
            break
        x = inputs[index % len(inputs)]
        index += 1
        t0 = clock()
        call(x)
        times.append((clock() - t0) / 1e6)
    return {"times_ms": sorted(times), "wall_s": (clock() - begin) / 1e9, "calls": len(times),
            "warmup_calls": warmup}


def _ms(value: float) -> str:
    """A latency in ms with three significant figures ('0.0183 ms', '61.8 ms')."""
    return f"{value:.3g} ms" if value < 1000 else f"{value:,.0f} ms"


def timing_lines(load_s: float, first_ms: float, loop: dict, batch: int) -> list:
    """The timing as benchmark_app prints it: load and compile, first inference, median, p90 and throughput."""
    times = _np.asarray(loop["times_ms"])
    rate = loop["calls"] / loop["wall_s"] if loop["wall_s"] > 0 else float("inf")

    def per_s(value: float) -> str:
        return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"

    return [f"load and compile  {_ms(load_s * 1e3)}",
            f"first inference   {_ms(first_ms)}",
            f"timed             {loop['calls']:,} calls over {loop['wall_s']:.1f} s, after "
            f"{loop['warmup_calls']} warm-up calls",
            f"median (p50)      {_ms(float(_np.percentile(times, 50)))}",
            f"p90               {_ms(float(_np.percentile(times, 90)))}",
            f"throughput        {per_s(rate)} inferences/s" + (f" ({per_s(rate * batch)} samples/s at batch {batch})"
                                                                if batch > 1 else " at batch 1")]


def time_pipeline(session, text, *, requests=400, seconds=6.0, folder=None):
    """Time requests through your PRE, this package's model and your POST; print the split. The exit status."""
    from pathlib import Path as _Path

    paths = tuple(sorted(str(p) for p in _Path(folder).rglob("*") if p.is_file())) if folder else ()
    template = {name: (array.shape, array.dtype) for name, array in sample_inputs()[0].items()}
    try:
        pipeline = load_pipeline(text, paths)
        split = time_requests(pipeline, lambda feed: predict(session, feed), template,
                              max_requests=requests, max_time_s=seconds)
    except PipelineError as exc:
        print(f"error: {exc.problem}", file=sys.stderr)
        if exc.fix:
            print(f"  fix: {exc.fix}", file=sys.stderr)
        return 2
    for line in report_lines(split):
        print(line)
    return 0


def check_package(*, seconds=3.0, max_calls=100_000, threads=None):
    """Check the files against manifest.json, run the samples and judge their outputs by the manifest's rule,
    and time the model as benchmark_app does against the recorded p50. The exit status: 1 when the files or the
    outputs fail (the latency line is information: another machine times differently)."""
    import json
    from pathlib import Path as _Path

    folder = _Path(__file__).resolve().parent
    path = folder / MANIFEST_FILE
    if not path.is_file():
        print(f"error: no {MANIFEST_FILE} beside run.py: --check compares with what it records", file=sys.stderr)
        return 2
    manifest = json.loads(path.read_text(encoding="utf-8"))
    candidate = manifest.get("candidate") or {}
    print(f"{candidate.get('label', folder.name)} ({manifest.get('runtime', '')}), {threads_words(threads)}")
    problems = file_problems(folder, manifest.get("files") or {})
    if problems:
        print(f"files     {FAIL}  " + "; ".join(problems))
        return 1
    print(f"files     {PASS}  all {len(manifest['files'])} files match the SHA-256 in {MANIFEST_FILE}")
    started = _time.perf_counter()
    session = load()
    load_s = _time.perf_counter() - started
    waits = globals().get("sync")
    feeds, reference = sample_inputs(), reference_outputs()
    prepared = [prepare(session, feed) for feed in feeds]
    started = _time.perf_counter_ns()
    run(session, prepared[0])
    if waits is not None:
        waits(session)
    first_ms = (_time.perf_counter_ns() - started) / 1e6
    outputs = [first_output(run(session, p)) for p in prepared]
    loop = timed_calls(lambda p: run(session, p), prepared, seconds=seconds, max_calls=max_calls,
                       sync=(lambda: waits(session)) if waits is not None else None)
    batch = next((len(a) for a in feeds[0].values() if getattr(a, "ndim", 0)), 1)
    for line in timing_lines(load_s, first_ms, loop, batch):
        print(line)
    verdict, words, _ = judge_package_outputs(reference, outputs, manifest["fidelity_rule"])
    print(f"fidelity  {verdict}  {words}, on the {len(outputs)} sample inputs against the original model's outputs")
    if plan_note(manifest["fidelity_rule"]):
        print(f"note      {plan_note(manifest['fidelity_rule'])}")
    measured = manifest.get("measured") or {}
    p50 = float(_np.percentile(loop["times_ms"], 50))
    timing = ""
    if threads is not None and threads != PLANNED_THREADS:
        print(f"latency   not compared  p50 {_ms(p50)} here with {threads} threads, and the recorded one was "
              f"measured with {PLANNED_THREADS or 'the count the runtime chose'}")
    else:
        timing, said = latency_verdict(p50, measured.get("p50_ms"), float(measured.get("tolerance", 0.10)))
        basis = f" (recorded: {measured['basis']})" if measured.get("basis") else ""
        print(f"latency   {timing}  {said}{basis}")
    if verdict != PASS:
        print(f"FAILED: the outputs {'fail' if verdict == FAIL else 'do not establish'} the plan's fidelity rule")
        return 1
    print("passed: the files match and the outputs meet the plan's fidelity rule"
          + ("; the p50 is not the plan's (see the latency line)" if timing == FAIL else ""))
    return 0


if __name__ == "__main__":
    import argparse as _argparse

    _parser = _argparse.ArgumentParser(description="Run the packaged model on its sample inputs; check it against "
                                                   "what the plan measured with --check; or time your whole "
                                                   "request end to end with --pipeline.")
    _parser.add_argument("--check", action="store_true",
                         help="check the files against manifest.json, compare the outputs on the samples with the "
                              "original model's by the plan's fidelity rule, and time the model (load and compile, "
                              "first inference, median, p90, throughput) against the recorded p50; exits 1 when "
                              "the files or the outputs fail")
    _parser.add_argument("--threads", type=int, metavar="N",
                         help="run with N threads instead of the count the plan measured")
    _parser.add_argument("--pipeline", metavar="FILE.py:PRE[,POST]",
                         help="PRE(raw sample) returns the model's input: an array in the input's shape without the "
                              "batch axis (or with it), or a dict of arrays by input name, in the dtype the model "
                              "takes; the optional POST(output) takes the first output as a numpy array. Raw "
                              "samples come from samples() or SAMPLES in FILE.py, else the files of --samples")
    _parser.add_argument("--samples", metavar="DIR", help="a folder whose files are your raw samples, passed to PRE "
                                                          "as paths (when FILE.py has no samples() or SAMPLES)")
    _parser.add_argument("--requests", type=int, default=400, help="at most this many requests timed (default 400)")
    _parser.add_argument("--seconds", type=float,
                         help="about this long timing (default 3 with --check; at most 6 with --pipeline)")
    _args = _parser.parse_args()
    if _args.threads is not None:
        if _args.threads < 1:
            _parser.error("--threads takes a count of 1 or more")
        try:
            use_threads(_args.threads)
        except ValueError as _exc:
            _parser.error(str(_exc))
    if _args.check:
        sys.exit(check_package(seconds=_args.seconds or 3.0, threads=_args.threads))
    session = load()
    if _args.pipeline:
        _status = time_pipeline(session, _args.pipeline, requests=_args.requests, seconds=_args.seconds or 6.0,
                                folder=_args.samples)
        if _args.threads is not None:
            print(threads_words(_args.threads))
        sys.exit(_status)
    print(threads_words(_args.threads))
    feeds = sample_inputs()
    for number, inputs in enumerate(feeds):
        output = predict(session, inputs)
        print(f"sample {number}: output shape {tuple(output.shape)}")
    print(f"ran the {len(feeds)} sample inputs of samples.npz and compared nothing: python run.py --check compares "
          "their outputs with the original model's by the plan's rule, checks the files and times the model")

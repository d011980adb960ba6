"""Run the packaged model with OpenVINO on the CPU, with the properties and input shapes the planner measured.

The run.py of a hand-over package the planner wrote, from its template targets/cpu/runners/run_openvino.py
(see planner.plugins.packaging) with SETTINGS filled in; it imports only openvino and numpy.
SETTINGS: "model" (the ONNX file or IR .xml beside run.py), "inputs" (the model's input names in the
graph's order), "shapes" (the shape each input is compiled at; -1 leaves the batch open) and
"properties" (the CPU plugin's compile properties: PERFORMANCE_HINT, INFERENCE_PRECISION_HINT, which
is the precision of every op not quantized, and INFERENCE_NUM_THREADS).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import openvino as ov

SETTINGS = {'inputs': ['x'],
 'model': 'inefficient.onnx',
 'properties': {'INFERENCE_NUM_THREADS': 2,
                'INFERENCE_PRECISION_HINT': 'f32',
                'PERFORMANCE_HINT': 'LATENCY'},
 'shapes': [[-1, 3, 224, 224]]}

HERE = Path(__file__).resolve().parent


class Compiled:
    """The compiled model and the one infer request every call reuses."""

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled
        self.request = compiled.create_infer_request()
        # None for an input whose element type is dynamic: its array is passed in its own dtype.
        self.dtypes = [None if port.get_element_type().is_dynamic() else port.get_element_type().to_dtype()
                       for port in compiled.inputs]


def load(folder: str | Path | None = None) -> Compiled:
    """Read the model, fix its input shapes as measured and compile it for the CPU with the measured properties."""
    path = Path(folder) if folder is not None else HERE
    core = ov.Core()
    model = core.read_model(str(path / SETTINGS["model"]))
    # Keyed by index: a graph input's own names need not include the one the model calls it.
    model.reshape({i: ov.PartialShape(shape) for i, shape in enumerate(SETTINGS["shapes"])})
    return Compiled(core.compile_model(model, "CPU", SETTINGS["properties"]))


def prepare(session: Compiled, inputs: Mapping[str, np.ndarray]) -> dict[int, np.ndarray]:
    """Every input by index (by name where all are given, else in order), C-contiguous in its element type."""
    names = SETTINGS["inputs"]
    arrays = [inputs[n] for n in names] if all(n in inputs for n in names) else list(inputs.values())[:len(names)]
    return {i: np.require(a, dtype=dtype, requirements="C") for i, (a, dtype) in enumerate(zip(arrays, session.dtypes))}


def run(session: Compiled, prepared: dict[int, np.ndarray]) -> Any:
    """One synchronous inference; the outputs are views of the request's own buffers until the next call."""
    return session.request.infer(prepared, share_inputs=True, share_outputs=True)


def first_output(outputs: Any) -> np.ndarray:
    """The first output, copied out of the request's buffer, as float32."""
    return np.array(outputs[0], dtype=np.float32, copy=True)


# --- Added by the planner to every package: its sample inputs, and what `python run.py` does. ---

def sample_inputs(folder=None):
    """The package's sample inputs (samples.npz beside run.py): one dict of arrays by input name per call."""
    import numpy
    from pathlib import Path as _Path

    path = (_Path(folder) if folder is not None else _Path(__file__).resolve().parent) / "samples.npz"
    samples = {}
    with numpy.load(path, allow_pickle=False) as data:
        for key in data.files:
            kind, index, *name = key.split("/", 2)
            if kind == "input" and name:
                samples.setdefault(int(index), {})[name[0]] = data[key]
    return [samples[i] for i in sorted(samples)]


def predict(session, inputs):
    """The first output for one dict of input arrays (by the model's input names) as a float32 numpy array."""
    return first_output(run(session, prepare(session, inputs)))


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


if __name__ == "__main__":
    import argparse as _argparse

    _parser = _argparse.ArgumentParser(description="Run the packaged model on its sample inputs, or time your "
                                                   "whole request end to end with --pipeline.")
    _parser.add_argument("--pipeline", metavar="FILE.py:PRE[,POST]",
                         help="PRE(raw sample) returns the model's input: an array in the input's shape without the "
                              "batch axis (or with it), or a dict of arrays by input name, in the dtype the model "
                              "takes; the optional POST(output) takes the first output as a numpy array. Raw "
                              "samples come from samples() or SAMPLES in FILE.py, else the files of --samples")
    _parser.add_argument("--samples", metavar="DIR", help="a folder whose files are your raw samples, passed to PRE "
                                                          "as paths (when FILE.py has no samples() or SAMPLES)")
    _parser.add_argument("--requests", type=int, default=400, help="at most this many requests timed (default 400)")
    _parser.add_argument("--seconds", type=float, default=6.0, help="at most about this long timing (default 6)")
    _args = _parser.parse_args()
    session = load()
    if _args.pipeline:
        sys.exit(time_pipeline(session, _args.pipeline, requests=_args.requests, seconds=_args.seconds,
                               folder=_args.samples))
    for number, inputs in enumerate(sample_inputs()):
        output = predict(session, inputs)
        print(f"sample {number}: output shape {tuple(output.shape)}")

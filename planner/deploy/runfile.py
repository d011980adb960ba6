"""The text the engine adds to a hand-over package: run.py's common part, requirements.txt and README.md."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Sequence

_SAMPLES_PART = """

# --- Added by the planner to every package: its samples, its thread count, and what `python run.py` does. ---

def _samples(kind, folder=None):
    \"\"\"The arrays of one kind in samples.npz beside run.py ('input': dicts by input name; 'reference': the original
    model's first output on each), in sample order.\"\"\"
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
    \"\"\"The package's sample inputs (samples.npz beside run.py): one dict of arrays by input name per call.\"\"\"
    return _samples("input", folder)


def reference_outputs(folder=None):
    \"\"\"The original model's first output on each sample input (samples.npz beside run.py).\"\"\"
    return _samples("reference", folder)


def predict(session, inputs):
    \"\"\"The first output for one dict of input arrays (by the model's input names) as a float32 numpy array.\"\"\"
    return first_output(run(session, prepare(session, inputs)))


def threads_setting():
    \"\"\"The thread count SETTINGS holds at the runner's THREADS path; None: the runtime chooses it.\"\"\"
    value = SETTINGS
    for key in globals().get("THREADS") or ("",):
        value = value.get(key) if isinstance(value, dict) else None
    return value


PLANNED_THREADS = threads_setting()
\"\"\"The thread count the plan measured (before any `use_threads`); None: the runtime chose it.\"\"\"


def use_threads(count):
    \"\"\"Run with `count` threads instead of the plan's: call it before load(). A runner without a thread setting
    (a GPU's) raises ValueError.\"\"\"
    path = globals().get("THREADS")
    if not path:
        raise ValueError("this package's runtime has no thread setting to override")
    target = SETTINGS
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = int(count)


def threads_words(override=None):
    \"\"\"'threads 4 (the plan measured 2)', or 'threads 2, as the plan measured'.\"\"\"
    planned = PLANNED_THREADS
    if override is None:
        return f"threads {planned}, as the plan measured" if planned else "threads left to the runtime, as measured"
    if planned == override:
        return f"threads {override}, as the plan measured"
    return f"threads {override} (the plan measured {planned})" if planned else \\
        f"threads {override} (the plan left the count to the runtime)"


# --- Your whole request timed end to end: `python run.py --pipeline FILE.py:PRE[,POST]` (the planner's own code). ---
"""

_CHECK_PART = """

# --- The package's check of itself: `python run.py --check` (the code planner verify judges with). ---
"""

_MAIN_PART = """

def time_pipeline(session, text, *, requests=400, seconds=6.0, folder=None):
    \"\"\"Time requests through your PRE, this package's model and your POST; print the split. The exit status.\"\"\"
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
    \"\"\"Check the files against manifest.json, run the samples and judge their outputs by the manifest's rule,
    and time the model as benchmark_app does against the recorded p50. The exit status: 1 when the files or the
    outputs fail (the latency line is information: another machine times differently).\"\"\"
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
"""


def _standalone_text(module: object) -> str:
    """A standalone module's code without its docstring: run.py carries it as is (planner.measure.request_split,
    planner.deploy.check)."""
    import ast
    import inspect

    source = inspect.getsource(module)  # type: ignore[arg-type]
    first = ast.parse(source).body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        source = "\n".join(source.splitlines()[first.end_lineno:])
    return source.strip("\n") + "\n"


@functools.cache
def run_footer() -> str:
    """The text appended to every package's runner (read once: it carries planner.measure.request_split's code
    and planner.deploy.check's)."""
    from planner.deploy import check
    from planner.measure import request_split

    return (_SAMPLES_PART + "\n" + _standalone_text(request_split) + _CHECK_PART + "\n" + _standalone_text(check)
            + _MAIN_PART)
"""Appended to the plugin's runner: it reads samples.npz, whose format the engine owns (planner.deploy.samples),
times a whole request with the user's --pipeline by the same code the planner's worker uses, and checks the
package by the same code planner verify uses."""

SERVER_LINES = ("python3 -m venv .venv", ". .venv/bin/activate", "pip install -r requirements.txt",
                "python run.py --check")
"""What a user pastes on the server, in the package folder (README.md)."""


def pinned(distribution: str) -> tuple[str, str]:
    """(the requirement line, its comment) for an installed distribution at the version measured.

    A local build label (torch's `+cpu`) is not on the package index: the line pins the public version and
    the comment names the build that was measured.
    """
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return distribution, "not installed where the plan ran: unpinned"
    public, _, local = version.partition("+")
    return f"{distribution}=={public}", (f"measured with the local build {version}" if local else "")


def requirements_text(distributions: Sequence[str]) -> tuple[str, list[str]]:
    """(requirements.txt's text, its requirement lines), each distribution once, pinned to the version measured."""
    lines = ["# The versions the plan measured this package with."]
    pins = []
    for name in dict.fromkeys(distributions):
        line, comment = pinned(name)
        pins.append(line)
        lines.append(f"{line}  # {comment}" if comment else line)
    return "\n".join(lines) + "\n", pins


def readme_text(*, label: str, role: str, runtime: str, measured: str, machine: str, fidelity: str,
                inputs: Sequence[str], notes: Sequence[str]) -> str:
    """README.md: what the package is, what was measured where, the lines to paste on a server, and the API."""
    example = ", ".join(f'"{name}": array' for name in inputs) or '"input": array'
    lines = [f"# {label}", "",
             f"The plan's {role}: the candidate `{label}`, run with {runtime} by `run.py` with exactly the settings "
             "that were measured (its `SETTINGS`). It needs neither the planner nor the original model.", "",
             f"- Measured: {measured}, on {machine}.",
             f"- Fidelity to the original model: {fidelity}.", ""]
    if notes:
        lines += [*(f"- {note}" for note in notes), ""]
    lines += ["On the server, in this folder:", "", "```sh", *SERVER_LINES, "```", "",
              "The last line checks every file against `manifest.json`, runs the sample inputs (`samples.npz`) and "
              "judges their outputs against the original model's by the plan's fidelity rule (its numbers are in "
              "`manifest.json`), then times the model as benchmark_app does (load and compile, first inference, "
              "median, p90, throughput) and compares the median with the recorded p50 (within 10%). It exits 1 "
              "when the files or the outputs fail. `--threads N` runs with N threads instead of the count the "
              "plan measured; `python run.py` alone runs the samples and compares nothing. With the planner "
              "installed, `planner verify .` makes the same checks and times the model by the plan's own method.",
              "",
              "In your own code (the folder on `sys.path`):", "", "```python",
              "import run", "", "session = run.load()", f"output = run.predict(session, {{{example}}})", "```", "",
              "`run.prepare` and `run.run` split `predict` the way the plan timed it: preparing the inputs is not "
              "timed, `run` is.", "",
              "To time your whole request with this runtime (your decoding and preprocessing, the model, your "
              "postprocessing), and see which part holds it back:", "", "```sh",
              "python run.py --pipeline my_pipeline.py:preprocess,postprocess", "```", "",
              "`preprocess(sample)` returns the model's input (an array in the input's shape without the batch axis, "
              "or a dict of arrays by input name); `postprocess(output)` is optional and takes the first output. "
              "The raw samples come from `samples()` or a `SAMPLES` list in that file, or `--samples DIR` (its "
              "files, passed as paths).", ""]
    return "\n".join(lines)

"""The text the engine adds to a hand-over package: run.py's common part, requirements.txt and README.md."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Sequence

_SAMPLES_PART = """

# --- Added by the planner to every package: its sample inputs, and what `python run.py` does. ---

def sample_inputs(folder=None):
    \"\"\"The package's sample inputs (samples.npz beside run.py): one dict of arrays by input name per call.\"\"\"
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
    \"\"\"The first output for one dict of input arrays (by the model's input names) as a float32 numpy array.\"\"\"
    return first_output(run(session, prepare(session, inputs)))


# --- Your whole request timed end to end: `python run.py --pipeline FILE.py:PRE[,POST]` (the planner's own code). ---
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
"""


def _request_split_text() -> str:
    """planner.measure.request_split's code without its docstring: standalone by design, run.py carries it as is."""
    import ast
    import inspect

    from planner.measure import request_split

    source = inspect.getsource(request_split)
    first = ast.parse(source).body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        source = "\n".join(source.splitlines()[first.end_lineno:])
    return source.strip("\n") + "\n"


@functools.cache
def run_footer() -> str:
    """The text appended to every package's runner (read once: it carries planner.measure.request_split's code)."""
    return _SAMPLES_PART + "\n" + _request_split_text() + _MAIN_PART
"""Appended to the plugin's runner: it reads samples.npz, whose format the engine owns (planner.deploy.samples), and
times a whole request with the user's --pipeline by the same code the planner's worker uses."""

SERVER_LINES = ("python3 -m venv .venv", ". .venv/bin/activate", "pip install -r requirements.txt",
                "python run.py", "planner verify .")
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
              "The last line needs the planner installed in that environment; it checks every file against "
              "`manifest.json`, the outputs on the sample inputs against the original model's, and the median "
              "latency against the one measured (within 10%).", "",
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

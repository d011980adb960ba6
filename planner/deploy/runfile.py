"""The text the engine adds to a hand-over package: run.py's common part, requirements.txt and README.md."""

from __future__ import annotations

import importlib.metadata
from typing import Sequence

RUN_FOOTER = '''

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


if __name__ == "__main__":
    session = load()
    for number, inputs in enumerate(sample_inputs()):
        output = predict(session, inputs)
        print(f"sample {number}: output shape {tuple(output.shape)}")
'''
"""Appended to the plugin's runner: it reads samples.npz, whose format the engine owns (planner.deploy.samples)."""

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
              "timed, `run` is.", ""]
    return "\n".join(lines)

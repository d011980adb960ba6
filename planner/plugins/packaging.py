"""Hand-over packages, the plugin side: what a plugin's exporter returns, and the helpers it writes one with.

A plugin whose candidates can run without the planner overrides `Plugin.package(spec, model, dest)`: it
writes the candidate's artifact into `dest` and returns a `PackageFiles` naming those files, the text of
run.py (which imports only the candidate's runtime and numpy, never the planner) and what that script
needs installed. The engine (planner.deploy) adds the sample inputs, the manifest, requirements.txt and
README.md, and checks the package with `planner verify`.

Every run.py defines the same small API, which verify and a user's server code call:

- `load(folder=None)`: the runtime's session over the package's artifact, with the measured settings;
- `prepare(session, inputs)`: a dict of numpy arrays by input name in the form `run` takes (not timed);
- `run(session, prepared)`: one inference (the call the plan timed); the runtime's own outputs;
- `first_output(outputs)`: the first output as a float32 numpy array;
- `sync(session)` (only where the runtime queues work on a device): wait for it, before reading a clock;
- `THREADS` (only where the runtime takes a thread count): the keys under which SETTINGS holds it, which
  `python run.py --threads N` overrides, e.g. ("intra_op_threads",).
"""

from __future__ import annotations

import pprint
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from planner.errors import PlannerError

SETTINGS_LINE = "SETTINGS: dict = {}  # filled in when packaged"
"""The line of a runner template that `runner_text` replaces with the candidate's settings."""

RUNNER_API = ("load", "prepare", "run", "first_output")
"""The functions every run.py defines (see the module docstring)."""


@dataclass(frozen=True)
class PackageFiles:
    """What a plugin's exporter wrote into a package folder, and the run.py that runs it."""

    files: tuple[str, ...]  # the artifact's files, relative to the package folder (every one the candidate needs)
    run_py: str  # run.py's text: the runner with the measured settings written into it
    runtime: str  # the one runtime run.py uses, in words ("onnxruntime", "openvino", "torch", "tensorrt")
    requirements: tuple[str, ...]  # the distributions run.py needs (the engine pins them to the versions measured)
    imports: tuple[str, ...]  # the top-level modules run.py imports, checked before it runs
    settings: dict = field(default_factory=dict)  # the settings run.py applies, as written into it
    notes: tuple[str, ...] = ()  # what a user should know (a fixed input shape, the device it needs)
    # How run.py's program differs from the one the plan timed ('' when it runs the same), e.g. a torch.export
    # archive of the eager module: the engine then times the package itself for the p50 its manifest records.
    differs_from_measured: str = ""


class PackagingError(PlannerError):
    """A plugin's exporter could not write this candidate's package (the problem says why)."""


def runner_text(template: Path, settings: dict) -> str:
    """A runner template's text with its SETTINGS line replaced by `settings` as a Python literal."""
    text = Path(template).read_text(encoding="utf-8")
    if SETTINGS_LINE not in text:
        raise ValueError(f"the runner template {template} has no line {SETTINGS_LINE!r} to fill in")
    literal = pprint.pformat(settings, sort_dicts=True, width=100)
    return text.replace(SETTINGS_LINE, f"SETTINGS = {literal}")


def copy_into(paths: Iterable[Path], dest: Path, *, root: Path | None = None) -> tuple[str, ...]:
    """Copy files into `dest`; each keeps its path relative to `root` (default: its own folder, so its name).

    An ONNX file's external data is found by a path relative to the file, so both keep their layout.
    """
    names = []
    for path in paths:
        path = Path(path)
        name = path.relative_to(root) if root is not None else Path(path.name)
        target = Path(dest) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        names.append(name.as_posix())
    return tuple(names)

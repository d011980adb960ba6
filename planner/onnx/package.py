"""The hand-over package of a candidate ONNX Runtime runs on the CPU: the ONNX file and runners/run_ort.py as run.py.

Shared by every plugin whose session is `planner.onnx.session.OrtSession` (fp32 options, INT8, ternary):
the settings written into run.py are the options that session was opened with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from planner.onnx.files import onnx_files
from planner.plugins.packaging import PackageFiles, PackagingError, copy_into, runner_text

RUNNER = Path(__file__).parent / "runners" / "run_ort.py"
SESSION_KEYS = ("defaults", "graph_optimization_level", "execution_mode", "intra_op_threads", "inter_op_threads",
                "allow_spinning", "free_dimensions")
"""The OrtSession options run.py applies (planner.onnx.session reads the same keys)."""


def ort_settings(config: dict) -> dict:
    """The session options of an OrtSession config, as run.py applies them."""
    if config.get("defaults"):
        return {"defaults": True}
    settings = {"graph_optimization_level": config.get("graph_optimization_level", "ORT_ENABLE_ALL"),
                "execution_mode": config.get("execution_mode", "ORT_SEQUENTIAL"),
                "allow_spinning": bool(config.get("allow_spinning", True))}
    for key in ("intra_op_threads", "inter_op_threads"):
        if config.get(key):
            settings[key] = int(config[key])
    if config.get("free_dimensions"):
        settings["free_dimensions"] = {str(k): int(v) for k, v in config["free_dimensions"].items()}
    return settings


def ort_package(source: str | Path, dest: Path, config: dict, *, notes: Iterable[str] = ()) -> PackageFiles:
    """Copy the ONNX file (with its external data) into `dest` and fill in run.py with `config`'s session options."""
    source = Path(source)
    if not source.is_file():
        raise PackagingError(f"the candidate's ONNX file {source} is gone",
                             "plan again to write it, then write the package")
    files = onnx_files(source)
    outside = [f for f in files if not f.resolve().is_relative_to(source.parent.resolve())]
    if outside:
        raise PackagingError(f"{source.name} keeps its weights outside its folder ({outside[0]})",
                             "save the ONNX file with its external data beside it")
    names = copy_into(files, dest, root=source.parent)
    settings = {"model": names[0], **ort_settings(config)}
    return PackageFiles(files=names, run_py=runner_text(RUNNER, settings), runtime="onnxruntime",
                        requirements=("onnxruntime", "numpy"), imports=("onnxruntime", "numpy"),
                        settings=settings, notes=tuple(notes))

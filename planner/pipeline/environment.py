"""The versions and settings that affect the numbers, recorded with every run."""

from __future__ import annotations

import datetime as dt
import os
import platform

from planner import __version__
from planner.results import Environment


def environment() -> Environment:
    """Versions and settings that affect the numbers, now."""
    import importlib.metadata as md

    versions: dict[str, str | None] = {}
    for pkg in ("torch", "torchvision", "onnx", "onnxruntime", "openvino", "tensorrt", "numpy"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    variables = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES")
                 if os.environ.get(k)}
    return Environment(planner=__version__, python=platform.python_version(), platform=platform.platform(),
                       packages=versions, env=variables,
                       date=dt.datetime.now().astimezone().isoformat(timespec="seconds"))

"""The hand-over package of a candidate PyTorch runs: the module as a torch.export archive (.pt2; TorchScript
stays TorchScript, .pt) and runners/run_torch.py as run.py with the candidate's settings.

Shared by every plugin whose session is `planner.pytorch.session.TorchSession` (eager, tuned threads,
channels_last, bf16/fp16, torch.compile, a rewritten architecture).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import runtime_error_line
from planner.plugins.packaging import PackageFiles, PackagingError, runner_text

if TYPE_CHECKING:
    from planner.models.spec import ModelInputs

RUNNER = Path(__file__).parent / "runners" / "run_torch.py"
_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class TorchSettings:
    """How a TorchSession ran the candidate: what run.py applies to the loaded program."""

    device: str = "cpu"
    precision: str = "fp32"
    channels_last: bool = False
    compile_mode: str | None = None
    threads: int | None = None
    interop_threads: int | None = None
    mark_step: bool = False  # torch.compile's CUDA-graph modes: each call starts a new graph iteration


def torch_package(module: Any, inputs: "ModelInputs", dest: Path, settings: TorchSettings, *,
                  dynamic_batch: bool = True) -> PackageFiles:
    """Export `module` as it ran (dtype, device, memory format) into `dest` and fill in run.py with `settings`.

    The module is cast and moved in place: pass one loaded for the package (ModelRef.load()).

    The batch stays open in the archive where the candidate swept it and torch.export can keep it open;
    otherwise the archive runs the measured shapes only, and the notes say so.
    """
    import torch

    from planner.models.inputs import scalar_arguments
    from planner.models.loaded import make_feeds, set_eval

    dtype = getattr(torch, _DTYPES[settings.precision])
    scalars = scalar_arguments(module)
    scripted = isinstance(module, torch.jit.ScriptModule)
    # Cast and moved as TorchSession does, so the saved weights are the ones that ran. Their memory format is
    # left to run.py's load (channels_last weights are saved as strided groups torch.export warns about).
    prepared = set_eval(module.to(settings.device).to(dtype))

    def feed_args(shapes: "ModelInputs") -> tuple[Any, ...]:
        return _example(make_feeds(shapes, count=1, seed=0)[0], scalars, dtype, settings)

    notes: list[str] = []
    if not scripted:
        notes.append("runs as a torch.export program: each call adds some tens of microseconds of Python overhead "
                     "over the eager module the plan timed, which matters only for a model that takes well under "
                     "a millisecond")
    try:
        with torch.inference_mode(False), torch.no_grad():
            if scripted:
                name, kind = "model.pt", "torchscript"
                torch.jit.save(prepared, str(dest / name))
            else:
                name, kind = "model.pt2", "export"
                program, fixed = _export(prepared, feed_args, inputs,
                                         open_batch=dynamic_batch and inputs.dynamic_batch)
                if fixed:
                    notes.append(fixed)
                torch.export.save(program, str(dest / name))
    except Exception as exc:  # noqa: BLE001 - torch.export and jit raise many types for code they cannot capture
        raise PackagingError(f"PyTorch could not save the model as a program: {runtime_error_line(exc)}",
                             "the model's forward must be capturable by torch.export (no data-dependent Python "
                             "control flow); deploy another candidate, or script the model") from exc
    values = {"model": name, "format": kind, "device": settings.device, "dtype": _DTYPES[settings.precision],
              "channels_last": settings.channels_last, "compile": settings.compile_mode,
              "threads": settings.threads, "interop_threads": settings.interop_threads,
              "inputs": list(inputs.names), "scalars": {str(i): t for i, t in scalars.items()},
              "mark_step": settings.mark_step}
    if settings.device.startswith("cuda"):
        notes.append("runs on a CUDA GPU: install a CUDA build of torch")
    if settings.compile_mode:
        notes.append("torch.compile builds its kernels on the first call (a C compiler is needed on the CPU)")
    return PackageFiles(files=(name,), run_py=runner_text(RUNNER, values), runtime="torch",
                        requirements=("torch", "numpy"), imports=("torch", "numpy"), settings=values,
                        notes=tuple(notes),
                        differs_from_measured="" if scripted else "it runs a torch.export program, and the plan "
                                                                  "timed the module itself")


def _example(feed: dict, scalars: dict[int, str], dtype: Any, settings: TorchSettings) -> tuple[Any, ...]:
    """One feed as the forward's arguments, prepared the way run.py prepares them."""
    import numpy as np
    import torch

    from planner.models.inputs import scalar_value

    args: list[Any] = []
    for i, array in enumerate(feed.values()):
        if i in scalars:
            args.append(scalar_value(array, scalars[i]))
            continue
        x = torch.from_numpy(np.require(array, requirements="C"))
        if x.is_floating_point():
            x = x.to(dtype)
        x = x.to(settings.device)
        if settings.channels_last and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        args.append(x)
    return tuple(args)


def _export(module: Any, feed_args: Any, inputs: "ModelInputs", *, open_batch: bool) -> tuple[Any, str]:
    """(the exported program, '' or why its shapes are fixed): the batch axis left open where it can be.

    `feed_args(inputs)` gives the forward's arguments for inputs of some batch. torch.export fixes any
    axis whose example size is 1, so the open-batch export is traced at batch 2 (or the model's own,
    if larger); a model that fixes its batch comes back with no open axis, and is exported as measured.
    """
    import torch

    measured = f"exported at the measured shapes ({inputs.describe()}): only they run"
    if not open_batch:
        return torch.export.export(module, feed_args(inputs)), measured
    wide = inputs.with_batch(max(2, inputs.batch))
    args = feed_args(wide)
    shapes = tuple({0: torch.export.Dim.AUTO} if getattr(a, "dim", lambda: 0)() > 0 else None for a in args)
    try:
        program = torch.export.export(module, args, dynamic_shapes=shapes)
        if program.range_constraints:
            return program, ""
        why = "the model's code fixes the batch"
    except Exception as exc:  # noqa: BLE001 - a model may specialise on its batch; then it is fixed
        why = runtime_error_line(exc)
    return torch.export.export(module, feed_args(inputs)), f"{measured}; the batch could not stay open ({why})"

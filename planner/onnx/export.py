"""Export a loaded torch model to one self-contained ONNX file, shared by the ONNX-based plugins.

The torch.export-based exporter is tried first with a symbolic batch axis, then with a static
batch, then the legacy TorchScript exporter. When all fail, `ExportError` names the failing op
or reason of each attempt, so ONNX plugins report it while torch-level plugins carry on.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.errors import PlannerError, failure_reason
from planner.models.inputs import scalar_arguments, torch_arguments
from planner.models.loaded import set_eval
from planner.models.spec import BATCH, SEQUENCE
from planner.onnx.feeds import feed_for

if TYPE_CHECKING:
    from planner.models.loaded import LoadedModel
    from planner.plugins import PlanContext

# protobuf cannot serialise a message over 2 GiB; leave room for the graph around the weights.
INLINE_WEIGHTS_LIMIT_BYTES = 1_800_000_000
# The export check compares ONNX Runtime with torch loosely: a gross difference (a traced constant,
# a dropped branch) is worth a warning here; the fidelity gates judge the real accuracy later.
_VERIFY_RTOL = 1e-3
_VERIFY_ATOL = 1e-4
_VERIFY_SEED = 7
_SHARED_KEY = "onnx"
# Exports are slow and write one file: two plugins asking at once must not both export.
_EXPORT_LOCK = threading.Lock()


class ExportError(PlannerError):
    """The model could not be exported to a working ONNX file; `attempts` holds each failure."""

    def __init__(self, problem: str, fix: str = "", attempts: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(problem, fix)
        self.attempts = attempts


@dataclass(frozen=True)
class ExportResult:
    """An ONNX file ready for a runtime: where it is, how it was made, and what to know about it."""

    path: Path
    exporter: str  # "torch.export", "torchscript" or "source" (the model was ONNX already)
    dynamic_batch: bool
    input_names: tuple[str, ...]
    opset: int | None = None
    seconds: float = 0.0
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def notes(self) -> tuple[str, ...]:
        """One-line notes for candidate specs: the exporter, the batch axis, any warnings."""
        if self.exporter == "source":
            head = "ONNX model used as given"
        else:
            head = (f"exported with the {self.exporter} ONNX exporter (opset {self.opset}) "
                    f"in {self.seconds:.1f} s")
        batch = "dynamic batch axis" if self.dynamic_batch else "static batch (no batch sweep)"
        return (f"{head}, {batch}", *self.warnings)


def export_onnx(model: "LoadedModel", path: Path, *, dynamic_batch: bool = True,
                opset: int | None = None) -> ExportResult:
    """Export `model` to `path` (weights inside the file), check it, and say what was achieved."""
    if model.module is None:
        if model.onnx_path is None:
            raise ExportError(f"{model.name} has neither a torch module nor an ONNX file",
                              "load the model from a torch or ONNX source")
        return ExportResult(path=Path(model.onnx_path), exporter="source",
                            dynamic_batch=model.inputs.dynamic_batch,
                            input_names=model.inputs.names, opset=_opset_of(Path(model.onnx_path)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    external = model.size_bytes > INLINE_WEIGHTS_LIMIT_BYTES
    by_name = _keyword_inputs(model.module, model.inputs.names)
    attempts: list[tuple[str, str]] = []
    plans: list[tuple[str, str, tuple[str, ...]]] = []
    sequence = (SEQUENCE,) if model.inputs.sequence is not None else ()
    if dynamic_batch:
        if sequence:
            plans.append(("torch.export", "torch.export, dynamic batch and sequence", (BATCH, *sequence)))
        plans.append(("torch.export", "torch.export, dynamic batch", (BATCH,)))
    elif sequence:
        plans.append(("torch.export", "torch.export, dynamic sequence", sequence))
    plans.append(("torch.export", "torch.export, static shapes", ()))
    legacy = (BATCH,) if dynamic_batch else ()
    plans.append(("torchscript", "TorchScript, dynamic batch" if legacy else "TorchScript", legacy))
    fallback: tuple[str, str, tuple[str, ...]] | None = None
    for exporter, title, dynamic in plans:
        if exporter == "torchscript" and model.program is not None:
            continue  # a torch.export program is exported as it is; the legacy tracer cannot take it
        if exporter == "torch.export" and model.scripted:
            continue  # torch.export refuses a ScriptModule; only the TorchScript exporter takes one
        result = _attempt(model, path, exporter, title, dynamic, by_name=by_name, opset=opset,
                          external=external, attempts=attempts, dynamic_batch=dynamic_batch)
        if result is None:
            continue
        if BATCH in dynamic and not result.dynamic_batch:
            # The exporter specialised the batch (a size-1 example, a model that pins it): a later
            # plan asking for the batch alone may still keep it; this one is the fallback.
            attempts.append((title, "the graph came out with a fixed batch size"))
            fallback = fallback or (exporter, title, dynamic)
            continue
        return result
    if fallback is not None:
        exporter, title, dynamic = fallback
        attempts = [a for a in attempts if a[0] != title]
        result = _attempt(model, path, exporter, title, dynamic, by_name=by_name, opset=opset,
                          external=external, attempts=attempts, dynamic_batch=dynamic_batch)
        if result is not None:
            return result
    raise _combined_error(attempts)


def _attempt(model: "LoadedModel", path: Path, exporter: str, title: str, dynamic: tuple[str, ...], *,
             by_name: bool, opset: int | None, external: bool, attempts: list[tuple[str, str]],
             dynamic_batch: bool) -> ExportResult | None:
    """One export plan, checked and verified; None (with the reason in `attempts`) when it fails."""
    start = time.perf_counter()
    try:
        caught = _run_exporter(model, path, exporter=exporter, dynamic=dynamic,
                               by_name=by_name, opset=opset, external=external)
        _check(path)
        achieved = _batch_is_dynamic(path) and model.inputs.dynamic_batch
        achieved, verify_notes = _verify(model, path, achieved)
    except ExportError as exc:
        attempts.append((title, exc.problem))
        return None
    except Exception as exc:  # noqa: BLE001 - exporters raise many unrelated types
        attempts.append((title, failure_reason(exc)))
        return None
    notes = list(verify_notes)
    if attempts:
        notes.insert(0, "earlier export attempts failed: "
                     + "; ".join(f"{t}: {r}" for t, r in attempts))
    if dynamic_batch and not achieved:
        notes.append("the exported graph has a fixed batch size")
    notes.extend(caught)
    return ExportResult(path=path, exporter=exporter, dynamic_batch=achieved,
                        input_names=_input_names(path), opset=_opset_of(path),
                        seconds=time.perf_counter() - start, warnings=tuple(notes))


def shared_onnx(ctx: "PlanContext") -> ExportResult:
    """The plan's one ONNX export (made on first use under ctx.workdir); a failure is cached too."""
    with _EXPORT_LOCK:
        cached = ctx.shared.get(_SHARED_KEY)
        if isinstance(cached, ExportError):
            raise ExportError(cached.problem, cached.fix, cached.attempts)
        if isinstance(cached, ExportResult):
            return cached
        model = ctx.model
        if model.module is not None:
            ctx.log(f"exporting {model.name} to ONNX")
        path = Path(ctx.workdir) / "onnx" / f"{_safe_name(model.name)}.onnx"
        try:
            result = export_onnx(model, path, dynamic_batch=model.inputs.dynamic_batch)
        except ExportError as exc:
            ctx.shared[_SHARED_KEY] = exc
            ctx.log(str(exc))
            raise
        ctx.shared[_SHARED_KEY] = result
        return result


def _combined_error(attempts: list[tuple[str, str]]) -> ExportError:
    first = attempts[0][1] if attempts else "no exporter ran"
    distinct = list(dict.fromkeys(r for _, r in attempts))
    detail = "" if len(distinct) <= 1 else " (" + "; ".join(f"{t}: {r}" for t, r in attempts) + ")"
    return ExportError(f"ONNX export failed: {first}{detail}",
                       "the ONNX-based runtimes cannot run this model; torch-level candidates "
                       "still apply (rewrite or register the op to export it)",
                       tuple(attempts))


def _keyword_inputs(module: Any, names: tuple[str, ...]) -> bool:
    """Whether torch.export can key dynamic shapes by the inputs' names (the forward's own names).

    *args, positional-only parameters and TorchScript modules have no names it accepts, so those
    get the positional (tuple) form.
    """
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(params) < len(names):
        return False
    return all(p.name == n and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
               for p, n in zip(params, names))


def _run_exporter(model: "LoadedModel", path: Path, *, exporter: str, dynamic: tuple[str, ...],
                  by_name: bool, opset: int | None, external: bool) -> list[str]:
    """Run one exporter with `dynamic` axes symbolic; return the warnings that matter to a user."""
    import torch

    # torch.export specialises a dimension whose example size is 1, so a batch meant to vary is
    # traced at 2; a fixed-batch export keeps the model's own size.
    batch = 2 if BATCH in dynamic and model.inputs.batch == 1 and model.program is None else None
    args = model.torch_args(batch=batch)
    names = list(model.inputs.names)
    kwargs: dict[str, Any] = {"opset_version": opset, "verbose": False, "input_names": names}
    per_input = [{i: axis for i, axis in enumerate(t.axes) if axis in dynamic} for t in model.inputs.tensors]
    if exporter == "torch.export":
        kwargs.update(dynamo=True, external_data=external)
        if dynamic and model.program is None:
            dims = {axis: torch.export.Dim(axis) for axis in dynamic}
            shapes = [{i: dims[a] for i, a in axes.items()} or None for axes in per_input]
            kwargs["dynamic_shapes"] = dict(zip(names, shapes)) if by_name else tuple(shapes)
    else:
        kwargs.update(dynamo=False, do_constant_folding=True)
        if dynamic:
            kwargs["dynamic_axes"] = {n: axes for n, axes in zip(names, per_input) if axes}
    if path.exists():
        path.unlink()
    # A torch.export program goes to the exporter as it is: its own dynamic shapes and signature.
    target = model.program if model.program is not None else set_eval(model.module)
    sink = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(sink):
        warnings.simplefilter("always")
        with torch.inference_mode(False), torch.no_grad():
            torch.onnx.export(target, args, str(path), **kwargs)
    if not path.is_file():
        raise ExportError("the exporter wrote no file")
    return _relevant_warnings(caught)


def _relevant_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """Warnings that say the graph may not generalise (tracer constants), not deprecations."""
    out = []
    for w in caught:
        if issubclass(w.category, DeprecationWarning):
            continue
        if "TracerWarning" in w.category.__name__ or "trace might not generalize" in str(w.message):
            out.append("export warning: " + str(w.message).strip().splitlines()[0][:200])
    return list(dict.fromkeys(out))


def _check(path: Path) -> None:
    import onnx

    try:
        # A path (not a loaded proto) lets the checker handle files with external data.
        onnx.checker.check_model(str(path))
    except Exception as exc:  # noqa: BLE001 - the checker raises ValidationError and others
        raise ExportError(f"the exported file fails the ONNX checker: {failure_reason(exc)}") from exc


def _graph_inputs(path: Path) -> list[Any]:
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in inits]
    if not inputs:
        raise ExportError("the exported graph has no input")
    return inputs


def _batch_is_dynamic(path: Path) -> bool:
    for value in _graph_inputs(path):
        dims = value.type.tensor_type.shape.dim
        if not dims or dims[0].HasField("dim_value"):
            return False
    return True


def _input_names(path: Path) -> tuple[str, ...]:
    return tuple(i.name for i in _graph_inputs(path))


def _opset_of(path: Path) -> int | None:
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - only informative; a bad file fails elsewhere
        return None
    return next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)


def _verify(model: "LoadedModel", path: Path, dynamic: bool) -> tuple[bool, list[str]]:
    """Run the file in ONNX Runtime next to torch: it must run; a wrong batch axis is demoted."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        return dynamic, ["export not verified: onnxruntime is not installed"]
    import onnxruntime as ort
    import torch

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        raise ExportError(f"ONNX Runtime cannot load the exported file: {failure_reason(exc)}") from exc
    graph_names = [i.name for i in session.get_inputs()]
    base = model.inputs.batch
    batches = [base] + ([base + 1] if dynamic else [])
    notes: list[str] = []
    for batch in batches:
        feed = model.make_feeds(batch=batch, seed=_VERIFY_SEED)[0]
        try:
            got = session.run(None, feed_for(graph_names, feed))[0]
        except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
            if batch == base:
                raise ExportError("the exported file does not run in ONNX Runtime: "
                                  f"{failure_reason(exc)}") from exc
            notes.append(f"the exported graph fails at batch {batch} ({failure_reason(exc)}); "
                         "treated as a fixed batch size")
            dynamic = False
            continue
        try:
            with torch.inference_mode():
                ref = _first_tensor(model.module(*torch_arguments(feed.values(), scalar_arguments(model.module))))
        except Exception:  # noqa: BLE001 - the model itself may reject another batch size
            continue
        if ref is None or tuple(ref.shape) != tuple(got.shape):
            notes.append(f"export check: output shape {tuple(got.shape)} at batch {batch} differs "
                         f"from torch's {None if ref is None else tuple(ref.shape)}")
            continue
        ref_np = ref.detach().float().numpy()
        if not np.allclose(got.astype(np.float32), ref_np, rtol=_VERIFY_RTOL, atol=_VERIFY_ATOL):
            diff = float(np.max(np.abs(got.astype(np.float32) - ref_np)))
            notes.append(f"export check: ONNX output differs from torch at batch {batch} "
                         f"(max abs diff {diff:.3g}); the fidelity check will judge it")
    return dynamic, notes


def _first_tensor(out: Any) -> Any:
    import torch

    while not isinstance(out, torch.Tensor):
        if isinstance(out, dict) and out:
            out = next(iter(out.values()))
        elif isinstance(out, (list, tuple)) and out:
            out = out[0]
        else:
            return None
    return out


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "model"

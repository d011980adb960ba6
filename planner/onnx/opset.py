"""Make an ONNX file other converters wrote ready for per-channel QDQ quantization.

Converters such as paddle2onnx and tf2onnx often write opset 11 and keep the weights in `Constant`
nodes. ONNX Runtime's static quantizer then writes `DequantizeLinear` nodes with a per-channel `axis`
attribute, which only exists from opset 13: ONNX Runtime refuses the file and OpenVINO cannot read it.
Before quantizing, such a file is converted with onnx's version converter, its `Constant` weights
become initializers (the quantizer only quantizes initializers) and its open dimensions other than the
batch and sequence axes are fixed at the size being measured, so later shape inference knows every
rank. The plan's own export (a recent opset, weights as initializers) is used as it is.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from planner.errors import PlannerError, runtime_error_line
from planner.models.onnx_graphs import all_graphs
from planner.models.spec import BATCH, SEQUENCE
from planner.onnx.files import EXTERNAL_DATA_BYTES, model_bytes

if TYPE_CHECKING:
    from planner.models.spec import ModelInputs
    from planner.onnx.export import ExportResult
    from planner.plugins import PlanContext

QDQ_MIN_OPSET = 13
"""The first opset whose QuantizeLinear/DequantizeLinear take an `axis` (per-channel scales)."""
QDQ_OPSET = 17
"""The opset an older file is converted to: per-channel QDQ, and read by ONNX Runtime, OpenVINO and TensorRT alike."""
# The plan's axes that the planner varies between measurements: fixing them would break the batch sweep
# and the shorter sequence lengths a text model is timed at.
_VARIED_AXES = (BATCH, SEQUENCE)
_SHARED_KEY = "onnx-qdq-ready"
_LOCK = threading.Lock()
_ONNX_DOMAINS = ("", "ai.onnx")


class PreparationError(PlannerError):
    """One step of making the file ready for quantization failed: `problem` says which, `details` the raw text."""

    def __init__(self, problem: str, details: str = "") -> None:
        super().__init__(problem)
        self.details = details


@dataclass(frozen=True)
class QdqReady:
    """The file the QDQ quantizers start from, and what was changed to get it (notes for the candidates)."""

    path: Path
    notes: tuple[str, ...] = ()
    from_opset: int | None = None
    to_opset: int | None = None
    weights_lifted: int = 0
    fixed_inputs: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the file differs from the one it was made from."""
        return bool(self.notes)


def qdq_ready(ctx: "PlanContext", export: "ExportResult") -> QdqReady:
    """The plan's ONNX file made ready for per-channel QDQ, once per plan (a failure is cached too).

    The plan's own export already is (a recent opset, weights as initializers) and is returned as it
    is; a file the user brought is prepared by `prepare_for_qdq` at the shapes being measured.
    """
    if export.exporter != "source":
        return QdqReady(path=export.path)
    with _LOCK:
        cached = ctx.shared.get(_SHARED_KEY)
        if isinstance(cached, PreparationError):
            raise PreparationError(cached.problem, cached.details)
        if isinstance(cached, QdqReady):
            return cached
        dst = Path(ctx.workdir) / "onnx" / f"{export.path.stem}.qdq-ready.onnx"
        try:
            ready = prepare_for_qdq(export.path, dst, ctx.model.inputs)
        except PreparationError as exc:
            ctx.shared[_SHARED_KEY] = exc
            ctx.log(f"{exc.problem}\ndetails: {exc.details[:4000]}")
            raise
        ctx.shared[_SHARED_KEY] = ready
        if ready.changed:
            ctx.log("; ".join(ready.notes))
        return ready


def prepare_for_qdq(src: Path, dst: Path, inputs: "ModelInputs") -> QdqReady:
    """Write `src` to `dst` ready for per-channel QDQ: opset >= 13, weights as initializers, shapes fixed.

    Open dimensions are fixed at `inputs`' sizes except the batch and sequence axes, which the plan
    varies. Returns `src` untouched (no notes) when nothing needed changing. Each failing step raises
    `PreparationError` naming the step.
    """
    import onnx

    src, dst = Path(src), Path(dst)
    with _step("reading the ONNX file"):
        # The weights stay on disk until something is known to need changing: most files need nothing.
        model = onnx.load(str(src), load_external_data=False)
    opset = opset_of(model)
    branches = sorted({n.op_type for n in model.graph.node if n.op_type in _CONTROL_FLOW})
    with _step("fixing the input shapes"):
        # A fixed shape holds for the branch the measured inputs take, but ONNX Runtime checks every
        # branch's shapes when it loads the file: Silero VAD's 8 kHz branch cannot take 512 samples.
        fixed = [] if branches else fix_input_dims(model, inputs)
    converted = opset is not None and opset < QDQ_MIN_OPSET
    if not (fixed or converted or _float_constants(model)):
        return QdqReady(path=src, from_opset=opset, to_opset=opset)
    with _step("reading the ONNX file's external weights"):
        from onnx.external_data_helper import load_external_data_for_model

        load_external_data_for_model(model, str(src.parent))
    with _step("moving weights from Constant nodes to initializers"):
        model, lifted = lift_constants(model)
    if converted:
        with _step(f"converting the opset-{opset} file to opset {QDQ_OPSET}"):
            from onnx import version_converter

            model = version_converter.convert_version(model, QDQ_OPSET)
    with _step("saving the prepared file"):
        dst.parent.mkdir(parents=True, exist_ok=True)
        large = model_bytes(src) > EXTERNAL_DATA_BYTES
        onnx.save(model, str(dst), save_as_external_data=large,
                  location=f"{dst.name}.data" if large else None)
    done = []
    if converted:
        done.append(f"converted from opset {opset} to {QDQ_OPSET} (per-channel QDQ needs {QDQ_MIN_OPSET} or later)")
    if fixed:
        done.append("input shapes fixed at " + ", ".join(fixed) + " (batch and sequence axes left open)")
    if lifted:
        done.append(f"{lifted} weight tensor{'s' if lifted != 1 else ''} moved from Constant nodes to initializers "
                    "(the quantizer only quantizes initializers)")
    note = "before quantizing: " + "; ".join(done)
    return QdqReady(path=dst, notes=(note,), from_opset=opset, to_opset=QDQ_OPSET if converted else opset,
                    weights_lifted=lifted, fixed_inputs=tuple(fixed))


_CONTROL_FLOW = ("If", "Loop", "Scan")


def opset_of(model: Any) -> int | None:
    """The default-domain opset a loaded ModelProto imports (None when it names none)."""
    return next((o.version for o in model.opset_import if o.domain in _ONNX_DOMAINS), None)


def fix_input_dims(model: Any, inputs: "ModelInputs") -> list[str]:
    """Fix each graph input's open dimensions at the measured size, except batch and sequence axes.

    A named dimension is fixed wherever the graph uses its name (outputs, value infos), with ONNX
    Runtime's own tool. Returns one 'name [d0, d1, ...]' per input changed, open axes by name.
    """
    from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed

    from planner.onnx.feeds import match_inputs

    graph = model.graph
    inits = {i.name for i in graph.initializer}
    values = [v for v in graph.input if v.name not in inits]
    try:
        specs = match_inputs([v.name for v in values], inputs)
    except ValueError:
        return []  # the loader reports a mismatch; the file is quantized with its own shapes
    changed = []
    for value in values:
        spec = specs[value.name]
        dims = value.type.tensor_type.shape.dim
        if len(dims) != len(spec.shape):
            continue
        touched = False
        for dim, size, axis in zip(dims, spec.shape, spec.axes):
            if dim.HasField("dim_value") or axis in _VARIED_AXES or not size or size < 1:
                continue
            if dim.HasField("dim_param") and dim.dim_param.strip() not in ("", "?") and not _shared_elsewhere(
                    dim.dim_param, values, specs, int(size)):
                make_dim_param_fixed(graph, dim.dim_param, int(size))
            else:
                dim.dim_value = int(size)
            touched = True
        if touched:
            shown = [str(d.dim_value) if d.HasField("dim_value") else (a or d.dim_param or "?")
                     for d, a in zip(dims, spec.axes)]
            changed.append(f"{value.name} [{', '.join(shown)}]")
    return changed


def _shared_elsewhere(param: str, values: list, specs: dict, size: int) -> bool:
    """Whether another input axis with this dimension name is measured at a different size.

    Fixing a name fixes every axis that carries it: PaddleOCR's classifier names both its height and
    its width '?' (handled above), and a converter may reuse one name for axes the user sized apart.
    """
    for value in values:
        spec = specs[value.name]
        for dim, want in zip(value.type.tensor_type.shape.dim, spec.shape):
            if dim.HasField("dim_param") and dim.dim_param == param and want and int(want) != size:
                return True
    return False


def lift_constants(model: Any) -> tuple[Any, int]:
    """Turn tensor-valued Constant nodes into initializers (onnx-ir's pass); the model and the float tensors moved.

    ONNX Runtime's quantizer treats only initializers as weights: a Conv whose weight comes from a
    Constant node would stay float (or be quantized as an activation).
    """
    import onnx_ir as ir
    from onnx_ir.passes.common import LiftConstantsToInitializersPass

    before = _float_constants(model)
    if not before:
        return model, 0
    ir_model = ir.serde.deserialize_model(model)
    # Every tensor constant: a 10-class bias is below the pass's default size limit of 16 elements.
    LiftConstantsToInitializersPass(lift_all_constants=False, size_limit=0)(ir_model)
    lifted = ir.serde.serialize_model(ir_model)
    return lifted, before - _float_constants(lifted)


def _float_constants(model: Any) -> int:
    """How many Constant nodes (in every graph, branches included) hold a float tensor."""
    from onnx import TensorProto

    floats = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
    count = 0
    for node in (n for g in all_graphs(model.graph) for n in g.node):
        if node.op_type == "Constant" and node.domain in _ONNX_DOMAINS:
            count += sum(1 for a in node.attribute if a.name == "value" and a.t.data_type in floats)
    return count


def step_problem(ctx: "PlanContext", *steps: tuple[str, Callable[[], object]]) -> str:
    """Run the steps of building a candidate in order, each a (what, action) pair: '' when all worked, else
    the first failure as '<what> failed: <plain why>' (the steps after it are not run).

    The runtime's raw text goes to the plan's log after a 'details:' line, not into the reason.
    """
    for what, action in steps:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - quantizers and runtimes raise many unrelated types
            problem = f"{what} failed: {runtime_error_line(exc)}"
            ctx.log(f"{problem}\ndetails: {str(exc).strip()[:4000]}")
            return problem
    return ""


@contextlib.contextmanager
def _step(what: str) -> Iterator[None]:
    """Runs one preparation step; any failure becomes a PreparationError saying '<what> failed: <why>'."""
    try:
        yield
    except PreparationError:
        raise
    except Exception as exc:  # noqa: BLE001 - onnx, onnx-ir and ORT's tools raise many unrelated types
        raise PreparationError(f"{what} failed: {runtime_error_line(exc)}", str(exc).strip()) from exc

"""Load a model from its source safely: ONNX checked, pickles refused, user code only when trusted."""

from __future__ import annotations

import hashlib
import io
import os
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import InputSpecError, ModelLoadError
from planner.models.footprint import guard_inputs
from planner.models.inputs import (
    embedding_rows,
    exported_declared,
    forward_argument_names,
    onnx_declared,
    scalar_arguments,
    settle,
    torch_arguments,
    with_id_ranges,
)
from planner.models.loaded import LoadedModel, make_feeds, set_eval
from planner.models.source import ModelSource, SourceKind, parse_source
from planner.models.spec import (
    BATCH,
    INPUT_FORM,
    ModelInputs,
    guess_value,
    parse_input,
    parse_shape,
    spec_from_declared,
)
from planner.models.usercode import import_user_file, user_function

# Every torch-built model is constructed after this seed, so a worker process that rebuilds the
# model from its source gets the same random weights as the planner that measured the baseline.
WEIGHT_SEED = 0
DEFAULT_IMAGE_SHAPE = (1, 3, 224, 224)


def load_model(source: str | ModelSource, *, input_shape: str | None = None,
               inputs: ModelInputs | list[str] | None = None, trust_code: bool = False) -> LoadedModel:
    """Load and validate a model: build it, settle its inputs, and run one forward pass.

    `inputs` are `--input` specs (parsed or as text); `input_shape` is the `--input-shape` form
    for one float input. Either overrides what the model declares, input by input.
    """
    src = parse_source(source) if isinstance(source, str) else source
    if inputs and input_shape:
        raise InputSpecError("both --input and --input-shape were given",
                             "use --input for every input (--input-shape is the short form for one "
                             "float input)")
    _check_file_fits(src)
    if src.kind is SourceKind.ONNX:
        return _load_onnx(src, input_shape, inputs)
    built = _build_module(src, trust_code=trust_code)
    given, shape_only = _given_inputs(input_shape, inputs, built.declared)
    where = src.text
    scalars = scalar_arguments(built.module)
    if built.declared is None and given is not None:
        given = _in_argument_order(given, forward_argument_names(built.module), scalars, where)
    if built.declared is None and given is None:
        names = forward_argument_names(built.module) or ["x"]
        example = " ".join(f"--input {n}:{_guess_shape(n, scalars.get(i))}" for i, n in enumerate(names))
        what = ("a TorchScript file does not record its input shapes" if src.kind is SourceKind.TORCHSCRIPT
                else "the model does not declare its inputs (no INPUT_SPEC or INPUT_SHAPE)")
        raise InputSpecError(f"{what}: {where} takes {', '.join(names)}",
                             f"pass each with --input {INPUT_FORM}, e.g. {example} with the "
                             "model's real sizes, or --input-shape 1x3x224x224 for one image input")
    spec = settle(built.declared, given, shape_only=shape_only, where=where)
    _check_scalar_arguments(spec, scalars, forward_argument_names(built.module), where)
    spec = with_id_ranges(spec, embedding_rows(built.module))
    footprint = guard_inputs(spec, built.module)  # before the first allocation of any input
    output_shape = _validate_forward(built.module, spec, src, built.declared)
    module = built.module
    params = sum(p.numel() for p in module.parameters())
    size = sum(p.numel() * p.element_size() for p in module.parameters())
    size += sum(b.numel() * b.element_size() for b in module.buffers())
    return LoadedModel(source=src, inputs=spec, output_shape=output_shape, parameters=params,
                       size_bytes=size, module=module, trust_code=trust_code, notes=built.notes,
                       program=built.program, footprint=footprint)



def _guess_shape(name: str, scalar: str | None = None) -> str:
    """An example `SHAPE:DTYPE[:VALUE]` for an argument, by its type and name: a scalar for an
    argument typed int or float, token ids and masks, else an image."""
    if scalar is not None:
        return f":{_scalar_dtype(scalar)}:{guess_value(name)}"
    lowered = name.lower()
    if any(w in lowered for w in ("ids", "mask", "token", "position")):
        return "1x128:int64"
    return "1x3x224x224:float32"


def _scalar_dtype(kind: str) -> str:
    """The `--input` dtype for a forward argument typed int, float or bool."""
    return "float32" if kind == "float" else "int64"


def _in_argument_order(given: ModelInputs, names: list[str], scalars: dict[int, str], where: str) -> ModelInputs:
    """The user's inputs in the forward's argument order when their names are the arguments' names
    (a TorchScript file records no shapes, but it does record names); positional otherwise."""
    by_name = {t.name: t for t in given.tensors}
    if not names or not set(by_name) <= set(names):
        return given
    missing = [(i, n) for i, n in enumerate(names) if n not in by_name]
    if missing:
        example = " ".join(f"--input {n}:{_guess_shape(n, scalars.get(i))}" for i, n in missing)
        raise InputSpecError(f"{where} takes {', '.join(names)}; --input gave "
                             f"{', '.join(t.name for t in given.tensors)} only",
                             f"give the others too, e.g. {example} with the model's real sizes")
    return ModelInputs(tuple(by_name[n] for n in names))


def _check_scalar_arguments(spec: ModelInputs, scalars: dict[int, str], names: list[str], where: str) -> None:
    """Every forward argument typed int or float gets a scalar whose value is known (fixed, or a
    range the user gave): the planner cannot guess a sample rate, and a tensor there is refused."""
    for i, kind in scalars.items():
        name = names[i] if i < len(names) else f"argument {i + 1}"
        example = f"--input {name}::{_scalar_dtype(kind)}:{guess_value(name)}"
        if i >= len(spec.tensors):
            raise InputSpecError(f"{where} takes {', '.join(names)}, and {name} (a plain {kind}) has no --input",
                                 f"give its value, e.g. {example}")
        t = spec.tensors[i]
        if t.shape:
            raise InputSpecError(f"{where}: {name} is a plain {kind} in the model's forward, but --input "
                                 f"gave it the shape {'x'.join(map(str, t.shape))}",
                                 f"give it as a scalar (an empty shape) with its value, e.g. {example}")
        if t.value is None and t.low is None:
            raise InputSpecError(f"{where}: {name} is a plain {kind} in the model's forward and no value "
                                 "was given; the planner cannot guess what the model expects",
                                 f"give the value your model expects, e.g. {example}")


def _given_inputs(input_shape: str | None, inputs: ModelInputs | list[str] | None,
                  declared: ModelInputs | None) -> tuple[ModelInputs | None, bool]:
    """The user's inputs, parsed; a parse error's example comes from the model's own first input."""
    if isinstance(inputs, ModelInputs):
        return inputs, False
    if inputs:
        example = declared.first.example() if declared is not None else "input_ids:1x128:int64:0-30522"
        return ModelInputs(tuple(parse_input(text, example=example) for text in inputs)), False
    if input_shape:
        return parse_shape(input_shape), True
    return None, False


@dataclass
class _Built:
    module: Any
    declared: ModelInputs | None
    notes: list[str] = field(default_factory=list)
    program: Any = None


def _check_file(path: Path) -> None:
    if not path.exists():
        raise ModelLoadError(f"model file {path} does not exist",
                             "check the path (it is relative to the current folder)")
    if path.is_dir():
        raise ModelLoadError(f"{path} is a folder, not a model file", "point --model at the file")
    if path.stat().st_size == 0:
        raise ModelLoadError(f"model file {path} is empty (0 bytes)",
                             "re-export or re-copy the model; the file was truncated")


def _build_module(src: ModelSource, *, trust_code: bool) -> _Built:
    import torch

    torch.manual_seed(WEIGHT_SEED)
    if src.kind is SourceKind.DEMO:
        from planner.models.demo import DEMOS

        demo = DEMOS.get(src.target)
        if demo is None:
            raise ModelLoadError(f"there is no demo model called {src.target!r}",
                                 f"use one of: {', '.join('demo:' + n for n in DEMOS)}")
        return _Built(demo.factory().eval(), demo.inputs())
    if src.kind is SourceKind.TORCHVISION:
        return _build_torchvision(src.target)
    _check_file(src.path)
    if src.kind is SourceKind.PYTHON:
        return _build_python(src, trust_code=trust_code)
    if src.kind is SourceKind.EXPORTED:
        return _build_exported(src.path)
    return _build_torchscript(src.path, trust_code=trust_code)


def _build_torchvision(name: str) -> _Built:
    import torch
    import torchvision

    available = torchvision.models.list_models(module=torchvision.models)
    if name not in available:
        raise ModelLoadError(f"torchvision has no classification model called {name!r}",
                             "run `planner models` to list them (e.g. tv:resnet18)")
    model = torchvision.models.get_model(name, weights=None)
    shape = (1, 3, 299, 299) if name == "inception_v3" else DEFAULT_IMAGE_SHAPE
    notes = ["random weights: pretrained weights cannot be downloaded here"]
    if settle_batchnorm(model, shape):
        notes.append("BatchNorm statistics set from generated inputs, so activations keep their scale as in "
                     "a trained network (an untrained one's outputs shrink toward zero, and any "
                     "quantization of them would look broken)")
    del torch
    return _Built(model.eval(), ModelInputs.single(shape), notes)


def settle_batchnorm(model: Any, shape: tuple[int, ...], *, batch: int = 4) -> bool:
    """Re-estimate every BatchNorm's running statistics from one seeded batch of normal inputs.

    A randomly initialised network keeps BatchNorm's default statistics (mean 0, variance 1), so
    each block rescales its activations by whatever its random weights give: through a deep
    network (mobilenet_v3_small: outputs near 1e-10) the outputs vanish, and INT8 rounds them
    all to zero. Statistics measured on inputs put every normalised layer back at unit scale,
    the regime a trained network runs in. Returns False (model untouched) where there is none.
    """
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return False
    momenta = [m.momentum for m in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average: one batch sets the statistics outright
    generator = torch.Generator().manual_seed(WEIGHT_SEED)
    x = torch.randn((batch, *shape[1:]), generator=generator)
    model.train()
    with torch.no_grad():
        model(x)
    for norm, momentum in zip(norms, momenta):
        norm.momentum = momentum
    model.eval()
    return True


def _build_python(src: ModelSource, *, trust_code: bool) -> _Built:
    import torch

    user = import_user_file(src.path, trust_code=trust_code, what=str(src.path), error=ModelLoadError)
    factory = user_function(user, src.path, src.factory, define=f"def {src.factory}() returning a torch.nn.Module",
                            error=ModelLoadError)
    torch.manual_seed(0)
    try:
        model = factory()
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; we report it
        raise ModelLoadError(f"{src.factory}() in {src.path} raised {type(exc).__name__}: {exc}",
                             "fix the factory (run with --debug for the traceback)") from exc
    if not isinstance(model, torch.nn.Module):
        raise ModelLoadError(f"{src.factory}() returned {type(model).__name__}, not a torch.nn.Module",
                             "make the factory return the model instance")
    declared = getattr(user, "INPUT_SPEC", None)
    if declared is not None:
        return _Built(model.eval(), spec_from_declared(declared, where=str(src.path)))
    shape = getattr(user, "INPUT_SHAPE", None)
    return _Built(model.eval(), ModelInputs.single(shape) if shape else None)


def _build_exported(path: Path) -> _Built:
    import torch

    # torch.export.load takes a file name only if it ends in .pt2; any other name goes as bytes.
    archive: Any = str(path) if path.suffix.lower() == ".pt2" else io.BytesIO(path.read_bytes())
    try:
        program = torch.export.load(archive)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad archive
        raise ModelLoadError(f"{path} is not a readable torch.export (.pt2) archive: {exc}",
                             "re-save it with torch.export.save(torch.export.export(model, args), path)") from exc
    # module() gives a graph module that refuses eval(): the program was captured in eval mode.
    return _Built(program.module(), exported_declared(program), ["loaded from a torch.export archive"],
                  program=program)


def _build_torchscript(path: Path, *, trust_code: bool) -> _Built:
    import pickle

    import torch

    if zipfile.is_zipfile(path):
        try:
            with warnings.catch_warnings():
                # torch marks TorchScript deprecated; the user brought a TorchScript file, so the nag is noise.
                warnings.simplefilter("ignore", FutureWarning)
                module = torch.jit.load(str(path), map_location="cpu").eval()
            return _Built(module, None,
                          ["TorchScript archive: no forward hooks, so per-layer time comes from the "
                           "profiler's per-op times"])
        except RuntimeError:
            pass  # a zip that is not TorchScript: torch.save's format; handled below
    sha = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as exc:
        raise ModelLoadError(
            f"{path} (sha256 {sha}…) is a pickle that holds more than plain weights; "
            "loading it would run arbitrary code, so the planner refuses",
            "save the model with torch.export.save (.pt2) or torch.jit.save (TorchScript), "
            "or pass a Python factory file: model.py:make_model --trust-code") from exc
    if isinstance(obj, dict):
        raise ModelLoadError(
            f"{path} holds plain weights (a state dict of {len(obj)} tensors) but no architecture",
            "pass the Python file that builds the model and loads these weights: "
            "model.py:make_model --trust-code")
    raise ModelLoadError(f"{path} holds a {type(obj).__name__}, not a model",
                         "save the model with torch.export.save (.pt2) or torch.jit.save")


def _validate_forward(module, spec: ModelInputs, src: ModelSource,
                      declared: ModelInputs | None) -> tuple[int, ...]:
    import torch

    args = torch_arguments(make_feeds(spec, count=1)[0].values(), scalar_arguments(module))
    try:
        with torch.inference_mode():
            out = set_eval(module)(*args)
    except Exception as exc:  # noqa: BLE001 - any error here means the model rejects the input
        raise _rejected(src, spec, exc, rows=embedding_rows(module), declared=declared,
                        arguments=forward_argument_names(module)) from exc
    out = _first_tensor(out)
    if out is None:
        raise ModelLoadError(f"{src.text} returned no tensor for inputs {spec.describe()}",
                             "the planner needs a model whose forward returns a tensor")
    return tuple(int(d) for d in out.shape)


def _rejected(src: ModelSource, spec: ModelInputs, exc: BaseException, *, rows: int | None,
              declared: ModelInputs | None = None, arguments: list[str] | None = None) -> InputSpecError:
    """The error for a model that rejects its inputs: what it was given, and what it expects."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    if first.startswith("The following operation failed in the TorchScript interpreter") and len(lines) > 1:
        first = lines[-1]  # the model's own exception comes last, after the TorchScript traceback
    ids = [t for t in spec.tensors if not t.is_float and t.fill() == "range"]
    if ids and ("index out of range" in text or "indices element out of data bounds" in text
                or "out of bounds" in text):
        t = ids[0]
        low, high, _ = t.int_range()
        table = f"the model's embedding table has {rows} rows" if rows else "the embedding table is smaller"
        fix_range = f"0-{rows}" if rows else "a smaller range"
        return InputSpecError(f"{src.text}: {t.name} values reach {high - 1}, but {table} "
                              f"(values in [{low}, {high}) were drawn): {first}",
                              f"pass a range within the table, e.g. --input {t.name}:"
                              f"{'x'.join(map(str, t.shape))}:{t.dtype}:{fix_range}")
    guessed = _drawn_values(spec)
    if guessed:
        return InputSpecError(f"{src.text} rejects inputs {spec.describe()}: {first}; "
                              + "; ".join(line for line, _ in guessed),
                              "give the value your model expects, e.g. " + " ".join(fix for _, fix in guessed))
    if declared is None or declared == spec:
        takes = f"its forward takes {', '.join(arguments)}; " if arguments else ""
        fix = (f"{takes}give the shapes and dtypes it expects, one --input per argument in order "
               f"(form {INPUT_FORM}), e.g. {spec.example()} with the right sizes")
        if declared == spec:
            fix = ("these are the inputs the model declares for itself: fix the model, or pass the "
                   f"inputs it really takes with --input (form {INPUT_FORM})")
        return InputSpecError(f"{src.text} rejects inputs {spec.describe()}: {first}", fix)
    return InputSpecError(f"{src.text} rejects inputs {spec.describe()}: {first}",
                          f"the model's own inputs are: {declared.describe()}; e.g. {declared.example()}")


def _drawn_values(spec: ModelInputs) -> list[tuple[str, str]]:
    """For each integer input whose values the planner chose (an assumed range, or a scalar drawn
    from a range), what was drawn and the `--input` that fixes a value instead; [] if none."""
    feed = make_feeds(spec, count=1)[0]  # the same seeded draw the failed run used
    out = []
    for t in spec.tensors:
        if t.is_float or t.fill() != "range" or (t.low is not None and t.shape):
            continue
        low, high, basis = t.int_range()
        if t.shape:
            what = f"{t.name}'s values were drawn from [{low}, {high})"
        else:
            what = f"{t.name} = {int(feed[t.name])} was drawn from [{low}, {high})"
        guess = guess_value(t.name)
        fix = f"--input {t.name}:{'x'.join(map(str, t.shape))}:{t.dtype}:{guess}"
        if guess == "V":
            fix += f" (V the value {t.name} takes)"
        out.append((f"{what} ({basis or 'given with --input'})", fix))
    return out


def _first_tensor(out):
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (list, tuple)) and out:
        return _first_tensor(out[0])
    if isinstance(out, dict) and out:
        return _first_tensor(next(iter(out.values())))
    return None


def _load_onnx(src: ModelSource, input_shape: str | None, inputs: ModelInputs | list[str] | None) -> LoadedModel:
    import onnx

    path = src.path
    _check_file(path)
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises DecodeError and friends
        raise ModelLoadError(f"{path} is not a valid ONNX file (it cannot be parsed: {exc})",
                             "the file may be truncated or not ONNX; re-export the model") from exc
    _check_external_data(proto, path)
    try:
        onnx.checker.check_model(str(path), full_check=True)
    except Exception as exc:  # noqa: BLE001 - checker raises ValidationError and others
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"{path} fails the ONNX checker: {first}",
                             "re-export the model with a current exporter") from exc
    declared, rows = onnx_declared(proto)
    if not declared_ok(declared):
        raise ModelLoadError(f"{path} has no graph inputs", "export the model with its input")
    given, shape_only = _given_inputs(input_shape, inputs, declared)
    if given is not None and not shape_only:
        for t in given.tensors:
            want = next((d for d in declared.tensors if d.name == t.name), None)
            if want is not None and want.dtype != t.dtype:
                raise InputSpecError(f"{path}: input {t.name!r} is {want.dtype} in the graph, "
                                     f"--input gave {t.dtype}",
                                     f"the model's inputs are: {declared.describe()}; e.g. {declared.example()}")
    spec = with_id_ranges(settle(declared, given, shape_only=shape_only, where=str(path)), rows)
    footprint = guard_inputs(spec)  # inputs only: ONNX Runtime's activations are not traced
    output_shape = _validate_onnx_run(path, spec, src, declared, rows)
    params, size = onnx_weights(proto)
    notes = ["ONNX model: runs on ONNX Runtime; torch-level analysis unavailable"]
    elsewhere = [f"{t.name}'s is its axis {t.axes.index(BATCH, 1)}" for t in spec.tensors if BATCH in t.axes[1:]]
    if elsewhere:
        notes.append(f"the batch is not axis 0 of every input ({'; '.join(elsewhere)}): measured at batch "
                     f"{spec.batch}, no batch sweep")
    elif not spec.dynamic_batch:
        # Say which input holds the batch still: "the file fixes the batch" is wrong where the batch
        # input is open and another input (a recurrent state of shape 2 x ? x 128) fixes its axis 0.
        fixed = [t for t in spec.tensors if t.shape and not t.dynamic_batch]
        if fixed and any(t.dynamic_batch for t in spec.tensors):
            which = "; ".join(f"{t.name}'s axis 0 is {t.shape[0]}" for t in fixed)
            notes.append(f"not every input has the batch on axis 0 ({which}): measured at batch {spec.batch}, "
                         "no batch sweep")
        else:
            notes.append(f"the ONNX file fixes the batch at {spec.batch}: measured at that batch, "
                         "no batch sweep")
    return LoadedModel(source=src, inputs=spec, output_shape=output_shape, parameters=params,
                       size_bytes=size, onnx_path=path.resolve(), notes=notes, footprint=footprint)


_WEIGHT_DTYPES = ("float", "bfloat", "double", "int8", "uint8", "int4", "uint4")


def onnx_weights(proto: Any) -> tuple[int, int]:
    """An ONNX model's weights: (parameters, bytes), as the file stores them.

    Counted: every initializer (the graph's and its subgraphs'), and every `Constant` node's
    `value` tensor that holds at least 2 elements of a floating or 8/4-bit integer type, in the
    main graph and inside subgraphs (an If's branches, a Loop's body). Converters such as
    paddle2onnx and tf2onnx keep the weights in Constant nodes; the rule leaves out the scalars,
    shapes and axes (integer or single-element) that Constant nodes also carry.
    """
    import numpy as np
    import onnx

    from planner.models.onnx_graphs import all_graphs

    params = size = 0

    def tensor(t: Any) -> tuple[int, int]:
        n = int(np.prod(t.dims)) if t.dims else 1
        name = onnx.helper.tensor_dtype_to_string(t.data_type)
        if name.endswith("INT4") or "FLOAT4" in name:
            return n, (n + 1) // 2  # two 4-bit values packed per byte
        return n, n * np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize

    for graph in all_graphs(proto.graph):
        for init in graph.initializer:
            n, b = tensor(init)
            params, size = params + n, size + b
        for node in graph.node:
            for attr in node.attribute:
                if node.op_type == "Constant" and attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
                    kind = onnx.helper.tensor_dtype_to_string(attr.t.data_type).removeprefix("TensorProto.")
                    n, b = tensor(attr.t)
                    if n >= 2 and kind.lower().startswith(_WEIGHT_DTYPES):
                        params, size = params + n, size + b
    return params, size


def declared_ok(declared: ModelInputs | None) -> bool:
    """Whether a graph declared at least one input."""
    return declared is not None and bool(declared.tensors)


def _check_file_fits(src: ModelSource) -> None:
    """Refuse a model file larger than the memory the planner may use, before reading it: loading it here would
    have the out-of-memory killer end the planner itself, with nothing said."""
    if src.kind not in (SourceKind.ONNX, SourceKind.EXPORTED, SourceKind.TORCHSCRIPT):
        return
    from planner.hardware.memory_limits import check_model_fits, current_limits

    try:
        size = src.path.stat().st_size
    except OSError:
        return  # a missing file gets its own error from the loader
    check_model_fits(size, current_limits())


def _check_external_data(proto, path: Path) -> None:
    """Refuse external-data locations that escape the model's folder (path traversal)."""
    from onnx.external_data_helper import _get_all_tensors

    folder = path.resolve().parent
    for tensor in _get_all_tensors(proto):
        for entry in tensor.external_data:
            if entry.key != "location":
                continue
            target = (folder / entry.value).resolve()
            if os.path.isabs(entry.value) or not target.is_relative_to(folder):
                raise ModelLoadError(
                    f"{path}: tensor {tensor.name!r} keeps its data at {entry.value!r}, "
                    "outside the model's folder; the planner will not read it",
                    "put the external data file next to the .onnx file and re-save the model")
            if not target.exists():
                raise ModelLoadError(f"{path}: external data file {entry.value!r} is missing",
                                     "copy it next to the .onnx file")


def _validate_onnx_run(path: Path, spec: ModelInputs, src: ModelSource, declared: ModelInputs,
                       rows: int | None) -> tuple[int, ...]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4  # fatal only: a rejected input is reported below, in words, once
    try:
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        first = str(exc).strip().splitlines()[0]
        raise ModelLoadError(f"ONNX Runtime cannot load {path}: {first}",
                             "re-export the model with a current exporter and opset") from exc
    try:
        out = sess.run(None, make_feeds(spec, count=1)[0])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        raise _rejected(src, spec, exc, rows=rows, declared=declared) from exc
    return tuple(int(d) for d in out[0].shape)

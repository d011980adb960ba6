"""Load a model from its source safely: ONNX checked, pickles refused, user code only when trusted."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import zipfile
from pathlib import Path

from planner.errors import InputSpecError, ModelLoadError
from planner.models.loaded import LoadedModel
from planner.models.source import ModelSource, SourceKind, parse_source
from planner.models.spec import InputSpec, parse_shape

# Every torch-built model is constructed after this seed, so a worker process that rebuilds the
# model from its source gets the same random weights as the planner that measured the baseline.
WEIGHT_SEED = 0
DEFAULT_IMAGE_SHAPE = (1, 3, 224, 224)


def load_model(source: str | ModelSource, *, input_shape: str | InputSpec | None = None,
               trust_code: bool = False) -> LoadedModel:
    """Load and validate a model: build it, settle its input spec, and run one forward pass."""
    src = parse_source(source) if isinstance(source, str) else source
    spec = parse_shape(input_shape) if isinstance(input_shape, str) else input_shape
    if src.kind is SourceKind.ONNX:
        return _load_onnx(src, spec)
    module, default_shape, notes = _build_module(src, trust_code=trust_code)
    if spec is None:
        if default_shape is None:
            raise InputSpecError(f"cannot infer the input shape of {src.text}",
                                 "pass --input-shape, e.g. --input-shape 1x3x224x224")
        spec = InputSpec(shape=tuple(default_shape))
    output_shape = _validate_forward(module, spec, src)
    params = sum(p.numel() for p in module.parameters())
    size = sum(p.numel() * p.element_size() for p in module.parameters())
    size += sum(b.numel() * b.element_size() for b in module.buffers())
    return LoadedModel(source=src, input_spec=spec, output_shape=output_shape, parameters=params,
                       size_bytes=size, module=module, trust_code=trust_code, notes=notes)


def _check_file(path: Path) -> None:
    if not path.exists():
        raise ModelLoadError(f"model file {path} does not exist",
                             "check the path (it is relative to the current folder)")
    if path.is_dir():
        raise ModelLoadError(f"{path} is a folder, not a model file", "point --model at the file")
    if path.stat().st_size == 0:
        raise ModelLoadError(f"model file {path} is empty (0 bytes)",
                             "re-export or re-copy the model; the file was truncated")


def _build_module(src: ModelSource, *, trust_code: bool):
    import torch

    torch.manual_seed(WEIGHT_SEED)
    if src.kind is SourceKind.DEMO:
        from planner.models.demo import DEMOS

        demo = DEMOS.get(src.target)
        if demo is None:
            raise ModelLoadError(f"there is no demo model called {src.target!r}",
                                 f"use one of: {', '.join('demo:' + n for n in DEMOS)}")
        return demo.factory().eval(), demo.input_shape, []
    if src.kind is SourceKind.TORCHVISION:
        return _build_torchvision(src.target)
    _check_file(src.path)
    if src.kind is SourceKind.PYTHON:
        return _build_python(src, trust_code=trust_code)
    if src.kind is SourceKind.EXPORTED:
        return _build_exported(src.path)
    return _build_torchscript(src.path, trust_code=trust_code)


def _build_torchvision(name: str):
    import torch
    import torchvision

    available = torchvision.models.list_models(module=torchvision.models)
    if name not in available:
        raise ModelLoadError(f"torchvision has no classification model called {name!r}",
                             "run `planner models` to list them (e.g. tv:resnet18)")
    model = torchvision.models.get_model(name, weights=None).eval()
    shape = (1, 3, 299, 299) if name == "inception_v3" else DEFAULT_IMAGE_SHAPE
    del torch
    return model, shape, ["random weights: pretrained weights cannot be downloaded here"]


def _build_python(src: ModelSource, *, trust_code: bool):
    import torch

    if not trust_code:
        raise ModelLoadError(
            f"{src.path} is Python code, and running it could do anything",
            "if you trust this file, pass --trust-code to let the planner import and run it")
    module_name = f"planner_user_{hashlib.sha1(str(src.path.resolve()).encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(module_name, src.path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"cannot import {src.path}", "check that it is a Python source file")
    user = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = user
    try:
        spec.loader.exec_module(user)
    except SyntaxError as exc:
        raise ModelLoadError(f"{src.path} line {exc.lineno}: syntax error: {exc.msg}",
                             "fix the Python file and run again") from exc
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; we report it
        raise ModelLoadError(f"importing {src.path} raised {type(exc).__name__}: {exc}",
                             "fix the error in the file (run with --debug for the traceback)") from exc
    factory = getattr(user, src.factory, None)
    if not callable(factory):
        raise ModelLoadError(f"{src.path} has no function {src.factory!r}",
                             f"define def {src.factory}() returning a torch.nn.Module")
    torch.manual_seed(0)
    try:
        model = factory()
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; we report it
        raise ModelLoadError(f"{src.factory}() in {src.path} raised {type(exc).__name__}: {exc}",
                             "fix the factory (run with --debug for the traceback)") from exc
    if not isinstance(model, torch.nn.Module):
        raise ModelLoadError(f"{src.factory}() returned {type(model).__name__}, not a torch.nn.Module",
                             "make the factory return the model instance")
    shape = getattr(user, "INPUT_SHAPE", None)
    return model.eval(), tuple(shape) if shape else None, []


def _build_exported(path: Path):
    import torch

    try:
        program = torch.export.load(str(path))
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad archive
        raise ModelLoadError(f"{path} is not a readable torch.export (.pt2) archive: {exc}",
                             "re-save it with torch.export.save(torch.export.export(model, args), path)") from exc
    shape = None
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"
                    and n.name in program.graph_signature.user_inputs]
    if placeholders and "val" in placeholders[0].meta:
        shape = tuple(int(d) for d in placeholders[0].meta["val"].shape)
    return program.module(), shape, ["loaded from a torch.export archive"]


def _build_torchscript(path: Path, *, trust_code: bool):
    import pickle

    import torch

    if zipfile.is_zipfile(path):
        try:
            return torch.jit.load(str(path), map_location="cpu").eval(), None, ["TorchScript archive"]
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


def _validate_forward(module, spec: InputSpec, src: ModelSource) -> tuple[int, ...]:
    import torch

    from planner.models.loaded import make_inputs

    x = torch.from_numpy(make_inputs(spec, count=1)[0])
    try:
        with torch.inference_mode():
            out = module(x)
    except Exception as exc:  # noqa: BLE001 - any error here means the model rejects the input
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputSpecError(
            f"{src.text} rejects input {spec.text()} ({spec.dtype}): {first}",
            "pass the shape the model expects, e.g. --input-shape 1x3x224x224") from exc
    out = _first_tensor(out)
    if out is None:
        raise ModelLoadError(f"{src.text} returned no tensor for input {spec.text()}",
                             "the planner needs a model whose forward returns a tensor")
    return tuple(int(d) for d in out.shape)


def _first_tensor(out):
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (list, tuple)) and out:
        return _first_tensor(out[0])
    if isinstance(out, dict) and out:
        return _first_tensor(next(iter(out.values())))
    return None


def _load_onnx(src: ModelSource, spec: InputSpec | None) -> LoadedModel:
    import numpy as np
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
    init_names = {i.name for i in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in init_names]
    if not inputs:
        raise ModelLoadError(f"{path} has no graph inputs", "export the model with its input")
    first = inputs[0]
    dims = first.type.tensor_type.shape.dim
    dynamic = any(not d.HasField("dim_value") for d in dims[:1])
    elem = onnx.helper.tensor_dtype_to_np_dtype(first.type.tensor_type.elem_type)
    if spec is None:
        shape = []
        for i, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value > 0:
                shape.append(d.dim_value)
            elif i == 0:
                shape.append(1)
            else:
                raise InputSpecError(f"{path}'s input {first.name!r} has a symbolic dimension {i} "
                                     f"({d.dim_param or '?'})",
                                     "pass --input-shape with every dimension, e.g. 1x3x224x224")
        spec = InputSpec(shape=tuple(shape), dtype=str(np.dtype(elem)), dynamic_batch=dynamic,
                         name=first.name)
    else:
        spec = InputSpec(shape=spec.shape, dtype=str(np.dtype(elem)), dynamic_batch=dynamic,
                         name=first.name)
    output_shape = _validate_onnx_run(path, spec, src)
    params = 0
    size = 0
    for init in proto.graph.initializer:
        n = int(np.prod(init.dims)) if init.dims else 1
        params += n
        size += n * np.dtype(onnx.helper.tensor_dtype_to_np_dtype(init.data_type)).itemsize
    return LoadedModel(source=src, input_spec=spec, output_shape=output_shape, parameters=params,
                       size_bytes=size, onnx_path=path.resolve(),
                       notes=["ONNX model: runs on ONNX Runtime; torch-level analysis unavailable"])


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


def _validate_onnx_run(path: Path, spec: InputSpec, src: ModelSource) -> tuple[int, ...]:
    import onnxruntime as ort

    from planner.models.loaded import make_inputs

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        out = sess.run(None, {spec.name: make_inputs(spec, count=1)[0]})
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types
        first = str(exc).strip().splitlines()[0]
        raise InputSpecError(f"{src.text} rejects input {spec.text()}: {first}",
                             "pass the shape the model expects with --input-shape") from exc
    return tuple(int(d) for d in out[0].shape)

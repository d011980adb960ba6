"""Shared pieces of the hand-over package tests: demo:tiny's ONNX export, its sample inputs with the original's
outputs, an ONNX Runtime candidate on that file, and plan results that rank it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from deploy_support import ORT_CONFIG, ranked


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory, tiny) -> Path:
    """demo:tiny exported to ONNX once (weights inside the file)."""
    from planner.onnx.export import export_onnx

    return export_onnx(tiny, tmp_path_factory.mktemp("onnx") / "tiny.onnx", dynamic_batch=True).path


@pytest.fixture(scope="session")
def samples(tiny):
    """(feeds, reference): four of the plan's fidelity inputs and the original model's outputs on them (PyTorch)."""
    import copy

    from planner.measure.evaluate import fidelity_inputs
    from planner.pytorch.session import TorchSession

    feeds = fidelity_inputs(tiny.inputs, count=4)
    session = TorchSession(copy.deepcopy(tiny.module))  # its own copy: the shared model is never changed
    return feeds, [session.to_numpy(session.run(session.prepare(f))) for f in feeds]


@pytest.fixture(scope="session")
def ort_spec(tiny_onnx):
    """ONNX Runtime fp32 on one thread, the settings a plan measures."""
    from planner.plugins import CandidateSpec

    return CandidateSpec(plugin="cpu.onnxruntime", label="onnxruntime all seq 1t", config=dict(ORT_CONFIG),
                         artifacts={"onnx": str(tiny_onnx)}, threads=1, interop_threads=1)


@pytest.fixture(scope="session")
def measured_ort(tiny, ort_spec, samples):
    """The ONNX Runtime candidate measured for real in a worker (quick) and judged against the original."""
    from planner.measure.evaluate import MeasureJob, measure
    from planner.measure.fidelity import judge_outputs
    from planner.plugins import ModelRef
    from planner.results import Declared

    result, outputs = measure(MeasureJob(model=ModelRef.of(tiny), spec=ort_spec, quick=True, fidelity_batches=4))
    assert result.latency_ms is not None, result.reason
    _, _, fid = judge_outputs(samples[1], outputs, precision="fp32")
    return dataclasses.replace(result, fidelity=fid, declared=Declared(phase=1, runtime="onnxruntime"))


@pytest.fixture(scope="session")
def written_plan(tmp_path_factory, tiny, measured_ort, samples):
    """A plan's out folder whose deploy/ the engine wrote for the measured ONNX Runtime winner."""
    from planner.deploy import write_deployments
    from planner.plugins import ModelRef

    out = tmp_path_factory.mktemp("plan")
    results = ranked(measured_ort)
    deployments = write_deployments(results, model=ModelRef.of(tiny), feeds=samples[0], reference=samples[1],
                                    out_dir=out)
    return out, deployments

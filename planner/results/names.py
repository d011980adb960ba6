"""A candidate's name for a reader, and the code that applies it: what its plugin declared, or its label.

The short label (`onnxruntime all seq 2t`) stays the key results.json matches candidates on; a reader
sees the plain title the plugin declared (`ONNX Runtime, all graph optimizations, sequential, 2 threads`)
and, to apply it, the snippet in the runtime's own API. Files written before plugins described their
candidates have neither: the title falls back to the label, the snippet to ''.
"""

from __future__ import annotations

from collections.abc import Iterable

from planner.results.values import Baseline, CandidateResult

UNNAMED = "unnamed candidate"


def title(cand: CandidateResult) -> str:
    """The candidate in plain words: its declared title, else its label (older files), else its plugin."""
    declared = cand.declared.title if cand.declared is not None else ""
    return declared or cand.label or cand.plugin or UNNAMED


def apply_code(cand: CandidateResult) -> str:
    """The lines that apply the candidate in its runtime's own API (ONNX Runtime SessionOptions, OpenVINO
    compile_model properties, torch calls), or a sentence where no call makes the change; '' when not recorded."""
    return cand.declared.apply if cand.declared is not None else ""


def title_of(label: str, candidates: Iterable[CandidateResult]) -> str:
    """The title of the candidate a record names by its label (an interaction's cell, an edge projection's row);
    the label itself where no candidate has it, or it has no title."""
    found = next((c for c in candidates if c.label == label), None)
    return title(found) if found is not None else label


FIELD_WORDS: dict[str, str] = {
    # The worker's thread record (planner.measure.threads) and the settings a session reports (Session.info).
    "cpu_count": "CPUs in the machine",
    "usable_cpus": "CPUs this process may use",
    "torch_intra_op_threads": "torch intra-op threads",
    "torch_inter_op_threads": "torch inter-op threads",
    "intra_op_threads": "intra-op threads",
    "inter_op_threads": "inter-op threads",
    "graph_optimization_level": "graph optimization level",
    "execution_mode": "execution mode",
    "allow_spinning": "idle threads spin",
    "input_pool": "distinct inputs cycled",
    "mkldnn": "oneDNN (mkldnn) kernels",
    "channels_last": "channels-last",
    "compile": "torch.compile",
    "static_shape": "static shape",
    "fixed_shapes": "fixed input shapes",
    "int8_ops": "ops run in INT8",
    "op_precisions": "ops by precision",
    "int8_compute_ops": "convolutions and matrix products in INT8",
    "model_file_bytes": "model file bytes",
    "batch_per_call": "samples per call",
    "latency_basis": "latency basis",
    "cuda_graph": "CUDA graph",
    "captured_shapes": "captured shapes",
    "compile_s": "compile seconds",
    "kernel_check": "kernel check",
    "ternary_layers": "ternary layers",
}
"""Words for the fields a measured run records about itself, its threads and its session's settings."""

_UPPER_WORDS = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "cpu": "CPU", "cpus": "CPUs",
                "gpu": "GPU", "gemm": "GEMM", "ms": "ms", "flop": "FLOP", "flops": "FLOPs", "io": "I/O"}


def field(key: str, words: dict[str, str] | None = None) -> str:
    """A recorded field's name for a reader: `words`' entry (a record's own map), else FIELD_WORDS', else the key
    with its underscores as spaces (precision and unit names in capitals). A name all in capitals is a runtime's
    or the environment's own (OpenVINO's INFERENCE_NUM_THREADS, OMP_NUM_THREADS): kept as it is, to look up."""
    found = (words or {}).get(key) or FIELD_WORDS.get(key)
    if found:
        return found
    if key.isupper():
        return key
    return " ".join(_UPPER_WORDS.get(part, part) for part in key.split("_") if part)


def baseline_title(baseline: Baseline) -> str:
    """The baseline's run in plain words: its plugin's title, else (older files) the runtime label it recorded."""
    declared = baseline.declared.title if baseline.declared is not None else ""
    return declared or baseline.runtime or "the baseline"

"""Ternary 2-bit files against fp32 and dynamic INT8: size on disk, latency at batch 1 and 32, accuracy.

Models: two Linear-heavy MLPs with random seeded weights (size and speed only): 784 -> 2048 x3 -> 10
(40 MB fp32, its INT8 weights fit this CPU's 32 MB L3 cache) and 784 -> 4096 x4 -> 10 (214 MB
fp32, 54 MB INT8: beyond the cache, so batch 1 streams the weights from memory, where 2 bits per
weight should pay); and the digits demo (a small trained CNN: only its classifier is Linear; its
convolutions are stored 2-bit packed and unpacked at load, computing in fp32). For each, the fp32
ONNX export, ONNX Runtime dynamic INT8 and the ternary file
(targets/edge/ternary_pack: MatMulNBits bits=2, accuracy_level 4) are written, sized with os.stat
and timed in ONNX Runtime with the same settings (one thread, sequential; the files are timed in
interleaved rounds so background load on a shared machine hits them alike). ONNX Runtime's log is
checked for the fallback to dequantising every call. On digits, accuracy on the held-out set is
measured for fp32, post-training ternary and ternary after a ternary-aware fine-tune
(straight-through estimator) on the training split.

Goals (issue 14): ternary file >= 10x smaller than fp32; batch-1 latency faster than INT8 where
Linear layers dominate. At batch 32, INT8 (or fp32) may win: the table says which.

Usage: .venv/bin/python benchmarks/ternary.py [--finetune-steps 200] [--budget-s 1.5] [--skip-large] [--threads 1]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from planner.onnx.files import model_bytes  # noqa: E402
from planner.onnx.quantize import quantize_weights_dynamic  # noqa: E402
from targets.edge.ternary import finetune_ternary  # noqa: E402
from targets.edge.ternary_pack import capture_ort_log, fallback_reason, kernel_problem, pack_onnx  # noqa: E402


def mlp(width: int = 2048, hidden: int = 3):
    """A Linear-heavy MLP with seeded random weights: 784 -> width (x `hidden` layers) -> 10."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list = [nn.Linear(784, width), nn.ReLU()]
    for _ in range(hidden - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10)).eval()


def export(module, shape: tuple[int, ...], path: Path) -> Path:
    """fp32 ONNX with a dynamic batch axis."""
    import torch

    torch.onnx.export(module, torch.zeros(shape), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False, opset_version=17)
    return path


THREADS = 1  # default one core: edge-realistic, and the least disturbed by other work on a shared machine


def session(path: Path):
    """ONNX Runtime on the CPU, THREADS cores, sequential, quiet."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = THREADS
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def interleaved_p50(sessions: dict, x: np.ndarray, budget_s: float, rounds: int = 9) -> dict[str, float]:
    """Median latency (ms) per session, timed in interleaved rounds so background load hits all alike."""
    for sess in sessions.values():
        for _ in range(3):
            sess.run(None, {"x": x})
    samples: dict[str, list[float]] = {k: [] for k in sessions}
    for _ in range(rounds):
        for kind, sess in sessions.items():
            end = time.perf_counter() + budget_s / rounds
            burst: list[float] = []
            while time.perf_counter() < end or len(burst) < 3:
                start = time.perf_counter()
                sess.run(None, {"x": x})
                burst.append(time.perf_counter() - start)
            samples[kind].append(float(np.median(burst)))
    return {k: float(np.median(v) * 1e3) for k, v in samples.items()}


def accuracy(sess, x: np.ndarray, y: np.ndarray) -> float:
    """Top-1 accuracy of the file on labelled data."""
    return float((sess.run(None, {"x": x})[0].argmax(axis=1) == y).mean())


def files_for(name: str, module, shape: tuple[int, ...], folder: Path) -> dict[str, Path]:
    """fp32, dynamic INT8 and ternary files for one module; the ternary one checked for the fallback."""
    fp32 = export(module, shape, folder / f"{name}.fp32.onnx")
    int8 = quantize_weights_dynamic(fp32, folder / f"{name}.int8-dynamic.onnx")
    packed = pack_onnx(fp32, folder / f"{name}.ternary-2bit.onnx")
    x = np.zeros((1, *shape[1:]), dtype=np.float32)
    reason = fallback_reason(capture_ort_log(packed.path, {"x": x}))
    if reason:
        raise SystemExit(f"{name}: {reason}")
    layers = ", ".join(f"{layer.name}: {layer.storage}" for layer in packed.layers)
    print(f"{name}: {packed.packed_layers}/{len(packed.layers)} weighted layers run packed at 2 bits; per layer: "
          f"{layers}")
    for kind, path in (("fp32", fp32), ("ternary", packed.path)):
        data = weight_bytes(path)
        print(f"  {kind} file {model_bytes(path):,} bytes on disk: {data:,} of tensor data, "
              f"{model_bytes(path) - data:,} of graph (nodes, names, attributes, tensor headers)")
    return {"fp32": fp32, "int8 dynamic": int8, "ternary 2-bit": packed.path}


def weight_bytes(path: Path) -> int:
    """Bytes of tensor data in an ONNX file (its initializers' raw values), the rest being graph description."""
    import onnx

    return sum(len(t.raw_data) for t in onnx.load(str(path)).graph.initializer)


def planner_sizes(folder: Path) -> str:
    """fp32 and ternary sizes of demo:digits exported the planner's way, whose exporter adds debug metadata."""
    from planner.models import load_model
    from planner.onnx.export import export_onnx

    fp32 = export_onnx(load_model("demo:digits"), folder / "planner" / "digits.onnx").path
    packed = pack_onnx(fp32, folder / "planner" / "digits.ternary-2bit.onnx")
    return (f"fp32 {model_bytes(fp32):,} bytes, ternary {model_bytes(packed.path):,} bytes on disk "
            f"({model_bytes(fp32) / model_bytes(packed.path):.1f}x smaller; {packed.debug_bytes_dropped:,} bytes "
            "of the difference are the exporter's debug metadata, which the ternary file leaves out)")


def table(name: str, files: dict[str, Path], shape: tuple[int, ...], budget_s: float,
          extra: dict[str, str] | None = None) -> list[str]:
    """Markdown rows: size, ratio, and p50 at batch 1 and 32 with the ratios against fp32 and INT8."""
    rng = np.random.default_rng(0)
    sizes = {k: model_bytes(p) for k, p in files.items()}
    sessions = {kind: session(path) for kind, path in files.items()}
    by_batch = {b: interleaved_p50(sessions, rng.standard_normal((b, *shape[1:])).astype(np.float32), budget_s)
                for b in (1, 32)}
    lat = {kind: {b: by_batch[b][kind] for b in (1, 32)} for kind in files}
    rows = []
    for kind in files:
        cells = [name, kind, f"{sizes[kind] / 1e6:.3f} MB", f"{sizes['fp32'] / sizes[kind]:.1f}x"]
        for b in (1, 32):
            cells += [f"{lat[kind][b]:.3f} ms", f"{lat['fp32'][b] / lat[kind][b]:.2f}x",
                      f"{lat['int8 dynamic'][b] / lat[kind][b]:.2f}x"]
        cells.append((extra or {}).get(kind, "—"))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def main() -> int:
    """Run both models and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finetune-steps", type=int, default=200)
    parser.add_argument("--budget-s", type=float, default=1.5, help="timing seconds per file and batch")
    parser.add_argument("--skip-large", action="store_true", help="leave out the 4096-wide MLP (214 MB fp32)")
    parser.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads (0: all cores)")
    args = parser.parse_args()
    global THREADS
    THREADS = args.threads
    import onnxruntime as ort
    import torch

    from planner.models.digits import load_split, trained_model

    problem = kernel_problem()
    if problem:
        print(f"ternary cannot be measured here: {problem}")
        return 1
    start = time.perf_counter()
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "asimddp", "i8mm") if f" {f}" in flags]
    names = [line.split(":", 1)[1].strip() for line in flags.splitlines() if line.startswith("model name")]
    cpu = names[0] if names else platform.processor() or platform.machine()
    print(f"CPU: {cpu}, {os.cpu_count()} cores, ISA: {', '.join(isa)}; "
          f"onnxruntime {ort.__version__}, torch {torch.__version__}; "
          f"timed on {THREADS or os.cpu_count()} thread(s), interleaved; "
          f"load average {os.getloadavg()[0]:.1f}")
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows += table("MLP 2048 (40 MB)", files_for("mlp", mlp(), (1, 784), folder), (1, 784), args.budget_s)
        if not args.skip_large:
            big = files_for("mlp4096", mlp(4096, 4), (1, 784), folder)
            rows += table("MLP 4096 (214 MB)", big, (1, 784), args.budget_s)
            for path in big.values():
                path.unlink()  # a few hundred MB: gone before the digits run

        split = load_split()
        digits = trained_model()
        files = files_for("digits", digits, (1, 1, 8, 8), folder)
        tuned = copy.deepcopy(digits)
        tuning = finetune_ternary(tuned, split.train_x, split.train_y, steps=args.finetune_steps,
                                  data_basis="the digits training split")
        tuned_file = pack_onnx(export(tuned, (1, 1, 8, 8), folder / "digits.tuned.fp32.onnx"),
                               folder / "digits.tuned.ternary-2bit.onnx").path
        acc = {kind: accuracy(session(p), split.val_x, split.val_y) for kind, p in files.items()}
        tuned_acc = accuracy(session(tuned_file), split.val_x, split.val_y)
        extra = {k: f"{v:.2%}" for k, v in acc.items()}
        extra["ternary 2-bit"] += f" post-training; {tuned_acc:.2%} after {tuning.steps} fine-tune steps"
        rows += table("digits", files, (1, 1, 8, 8), args.budget_s, extra)
        planner_export = planner_sizes(folder)
    print(f"\ndigits as `planner plan` exports it (torch.export-based exporter): {planner_export}")
    print()
    print("| Model | File | Size on disk | vs fp32 | p50 b=1 | b=1 speedup vs fp32 | b=1 vs INT8 | p50 b=32 | "
          "b=32 vs fp32 | b=32 vs INT8 | Held-out accuracy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nDigits held-out accuracy: {len(split.val_y)} samples. Fine-tune: {tuning.note()}.")
    print(f"Total {time.perf_counter() - start:.0f} s; load average at the end {os.getloadavg()[0]:.1f}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

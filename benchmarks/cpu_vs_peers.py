"""Compare the planner's best CPU candidate with what peers give out of the box, in one run.

For each model: `planner plan --target cpu --quick` screens the candidates and confirms its leaders
with the full method; the planner's pick (its rank-1 candidate; `--top N` for more) is then measured
again with the full method (adaptive sampling to a 2% CI), side by side with the peers measured the
same way in isolated workers:
  - PyTorch eager with default settings (the planner's baseline),
  - ONNX Runtime's default InferenceSession on the same ONNX file,
and OpenVINO's `benchmark_app` with `-hint latency` (sync, one request at a time) at its default
precision (bf16 where the CPU has it) and at f32, on the model as exported (`-data_shape`). The
ratio is best peer / planner. `ratio2` adds `benchmark_app` on the model reshaped to a static shape
(`-shape`), which a user would have to know to ask for. benchmark_app's THROUGHPUT-hint default is
printed for reference only (its latency is not one request's).

Goal (issue 11): on a CPU with VNNI, geo-mean >= 1.4x and no model below 1.0x.

Usage: .venv/bin/python benchmarks/cpu_vs_peers.py [--models demo:inefficient tv:resnet18 ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from planner.codec import from_data  # noqa: E402
from planner.measure.evaluate import MeasureJob, measure  # noqa: E402
from planner.models import load_model  # noqa: E402
from planner.pipeline import PlanOptions, run_plan  # noqa: E402
from planner.plugins import CandidateSpec, ModelRef  # noqa: E402

_MEDIAN_RE = re.compile(r"Median:\s+([0-9.]+)\s*(ms|us)")
_TPUT_RE = re.compile(r"Throughput:\s+([0-9.]+)\s*FPS")
_PREC_RE = re.compile(r"INFERENCE_PRECISION_HINT: (?:<Type: ')?([\w.]+)")
_UNIT_MS = {"ms": 1.0, "us": 1e-3}
DEFAULT_MODELS = ["demo:inefficient", "demo:efficient", "tv:resnet18", "tv:mobilenet_v3_small", "tv:densenet121",
                  "tv:efficientnet_b0", "demo:digits"]


def remeasure(ref: ModelRef, spec: CandidateSpec) -> float | None:
    """p50 (ms) of one spec with the full method in a fresh worker; None if it failed."""
    result, _ = measure(MeasureJob(model=ref, spec=spec, quick=False, fidelity_batches=1),
                        timeout_s=600)
    if result.status != "ok":
        print(f"  {spec.label}: {result.status}: {result.reason}", file=sys.stderr)
        return None
    return result.p50


def benchmark_app(onnx: Path, shape: tuple[int, ...], *, latency: bool, seconds: int,
                  precision: str | None = None, static: bool = False) -> dict:
    """Run benchmark_app on the ONNX file; its median latency, throughput and precision.

    The export has a dynamic batch axis, so benchmark_app needs the shape: `-data_shape` feeds it to the
    model as exported (what a user runs), `-shape` (static=True) reshapes the model to it first.
    """
    exe = shutil.which("benchmark_app", path=str(Path(sys.executable).parent)) or "benchmark_app"
    cmd = [exe, "-m", str(onnx), "-d", "CPU", "-t", str(seconds),
           "-shape" if static else "-data_shape", "[" + ",".join(map(str, shape)) + "]"]
    if latency:
        cmd += ["-hint", "latency", "-api", "sync"]
    if precision:
        cmd += ["-infer_precision", precision]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    median = _MEDIAN_RE.search(out)
    if proc.returncode != 0 or median is None:
        return {"error": f"benchmark_app failed (exit {proc.returncode}): {out[-400:]}"}
    tput = _TPUT_RE.search(out)
    prec = _PREC_RE.search(out)
    return {"median_ms": float(median.group(1)) * _UNIT_MS[median.group(2)],
            "fps": float(tput.group(1)) if tput else None,
            "precision": prec.group(1) if prec else "?"}


def run_model(source: str, *, top: int, seconds: int) -> dict:
    """Plan, then re-measure the planner's leaders and the peers; returns one table row.

    The planner's pick is its rank-1 candidate (the plan confirmed its leaders with the full method);
    it and the next `top - 1` are measured again here, which also shows whether the plan's figures
    reproduce (within 10%).
    """
    out = Path(tempfile.mkdtemp(prefix="peers-"))
    print(f"\n== {source}: planning (quick screen) in {out}", file=sys.stderr)
    outcome = run_plan(PlanOptions(model=source, target="cpu", quick=True, out=out,
                                   write_report=False))
    results = outcome.results
    ref = ModelRef.of(load_model(source))
    shape = ref.inputs.first.shape
    ranked = [cand for rank, cand in results.ranked() if rank is not None]
    planner_best = None
    reproduced = []
    for cand in ranked[:top]:
        if cand.plugin == "torch.eager":
            continue  # that is the PyTorch peer, measured below
        p50 = remeasure(ref, from_data(cand.spec, CandidateSpec))
        print(f"  planner {cand.label}: plan {cand.p50}, again {p50}", file=sys.stderr)
        if p50 is not None and cand.p50:
            reproduced.append((cand.label, cand.p50, p50))
        if planner_best is None and p50 is not None:
            planner_best = (cand.label, p50, cand.fidelity.cosine if cand.fidelity else None)
    torch_p50 = remeasure(ref, from_data(results.candidates[0].spec, CandidateSpec))
    onnx = next((out / "artifacts" / "onnx").glob("*.onnx"))
    ort_p50 = remeasure(ref, CandidateSpec(plugin="cpu.onnxruntime", label="onnxruntime defaults",
                                           config={"defaults": True}, artifacts={"onnx": str(onnx)}))
    ba_default = benchmark_app(onnx, shape, latency=False, seconds=seconds)
    ba_latency = benchmark_app(onnx, shape, latency=True, seconds=seconds)
    ba_latency_f32 = benchmark_app(onnx, shape, latency=True, seconds=seconds, precision="f32")
    ba_static = benchmark_app(onnx, shape, latency=True, seconds=seconds, static=True)
    return {"model": source, "planner": planner_best, "torch": torch_p50, "ort": ort_p50, "reproduced": reproduced,
            "ba_default": ba_default, "ba_latency": ba_latency, "ba_latency_f32": ba_latency_f32,
            "ba_static": ba_static}


def _ms(v: float | None) -> str:
    return "failed" if v is None else f"{v:.2f}"


def print_table(rows: list[dict]) -> None:
    """Each model's peers and the planner's best, the ratio best peer / planner, and the geo-mean."""
    import math

    from planner.hardware import detect

    cpu = detect().cpu
    isa = ", ".join(f for f in ("avx512_vnni", "avx_vnni", "amx_int8", "avx512_bf16", "amx_bf16", "avx2")
                    if cpu.has(f)) or "no VNNI/bf16"
    print(f"\np50 latency at batch 1, ms, on {cpu.model} ({isa}); benchmark_app: its median, -hint latency")
    print(f"{'model':<24} {'planner':>9} {'torch':>9} {'ORT dflt':>9} {'bapp dflt':>10} {'bapp f32':>9} "
          f"{'ratio':>6} {'bapp static':>11} {'ratio2':>6}  planner candidate")
    ratios, strict = [], []
    for r in rows:
        best = r["planner"][1] if r["planner"] else None
        peers = [r["torch"], r["ort"], r["ba_latency"].get("median_ms"), r["ba_latency_f32"].get("median_ms")]
        present = [v for v in peers if v]
        ratio = min(present) / best if best and present else None
        static = (r.get("ba_static") or {}).get("median_ms")
        ratio2 = min([*present, static]) / best if best and static and present else None
        if ratio:
            ratios.append(ratio)
        if ratio2:
            strict.append(ratio2)
        name = f"{r['planner'][0]} (cosine {r['planner'][2]:.5f})" if r["planner"] and r["planner"][2] else "-"
        print(f"{r['model']:<24} {_ms(best):>9} " + " ".join(f"{_ms(v):>9}" for v in peers[:2])
              + f" {_ms(peers[2]):>10} {_ms(peers[3]):>9} {(f'{ratio:.2f}x' if ratio else '-'):>6}"
              + f" {_ms(static):>11} {(f'{ratio2:.2f}x' if ratio2 else '-'):>6}  {name}")
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"geo-mean of best peer / planner: {geo:.2f}x over {len(ratios)} models; lowest {min(ratios):.2f}x")
    pairs = [(r["model"], *x) for r in rows for x in r.get("reproduced", [])]
    if pairs:
        held = [p for p in pairs if abs(p[3] - p[2]) / p[2] <= 0.10]
        print(f"\nthe plan's leaders measured again with the full method: {len(held)} of {len(pairs)} within 10%")
        for model, label, plan, again in pairs:
            change = (again - plan) / plan
            print(f"  {model:<24} {label[:44]:<44} plan {plan:.3f} ms, again {again:.3f} ms ({change:+.0%})")
    if strict:
        geo = math.exp(sum(math.log(x) for x in strict) / len(strict))
        print(f"with benchmark_app on a static-shape model among the peers (ratio2): {geo:.2f}x; "
              f"lowest {min(strict):.2f}x")


def main(argv: list[str] | None = None) -> int:
    """Run the comparison for each model and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    parser.add_argument("--top", type=int, default=3,
                        help="how many ranked planner candidates to re-measure (the first is the planner's pick)")
    parser.add_argument("--time", type=int, default=10, help="benchmark_app seconds per run")
    args = parser.parse_args(argv)
    rows = [run_model(m, top=args.top, seconds=args.time) for m in args.models]
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

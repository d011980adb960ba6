"""Does the planner time an LLM as the runtimes' own benchmarks do? TTFT, TPOT, the read roof and the KV cache.

A random-weight model with a real model's shape (SmolLM2-135M's by default: 30 layers, hidden 576, 135M parameters,
540 MB at fp32, larger than this machine's last-level cache) is built, exported by the planner's own LLM plugins,
and timed two ways for the same prompt, generation length and threads, side by side in one run:

- OpenVINO GenAI: the planner's per-token stamps (a token streamer) against the `PerfMetrics` OpenVINO GenAI
  reports for the very same generate calls (mean TTFT, mean TPOT);
- ONNX Runtime GenAI: the planner's timing against the method of ORT GenAI's own `model_benchmark` (prompt
  processing = one AppendTokens call; token generation = each GenerateNextToken after the first, which only
  samples), run as separate calls in the same worker;
- PyTorch eager fp32 as the original.

For each candidate it prints TTFT and TPOT both ways and their difference (the issue's bound: within 5%), decode
tokens/s as a share of the measured read-only roof (the issue's bound: the best candidate at 70% or more on a model
larger than the last-level cache), and the KV cache predicted from the config against the runtime's measured one
(bound: within 10%). Each candidate runs in its own spawned process (planner.measure.worker.run_isolated).

Usage: .venv/bin/python benchmarks/llm_timing.py [--shape smollm2-135m] [--work /tmp/llm-bench] [--prompt 128]
       [--new 64] [--calls 5] [--threads N] [--runtimes llm.openvino,llm.onnxruntime]
Takes about 10 minutes on 2 cores (exports included); the exported models are kept in --work for a re-run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def _ms(values) -> float:
    return float(statistics.median(values)) if values else float("nan")


def time_candidate(spec, folder: str, prompt: list[int], new: int, calls: int, ort_method: bool) -> dict:
    """In a worker: per call, the planner's TTFT and mean gap beside the runtime's own figures for the same settings
    (OpenVINO GenAI: PerfMetrics of the very same call; ONNX Runtime GenAI: model_benchmark's loop, run in turns with
    the planner's calls so a slow spell of the machine touches both alike)."""
    from planner.llm.timing import load_plugin
    from planner.models.llm import read_llm_folder

    facts = read_llm_folder(folder)
    plugin = load_plugin(spec.plugin)
    session = plugin.open(spec, facts)
    session.generate(prompt, 8)
    model = _ort_model(spec) if ort_method else None
    if model is not None:
        _ort_model_benchmark(model, prompt, new)  # its warm-up (model_benchmark's -w 1)
    ttft, gap_means, gaps, runtime_ttft, runtime_tpot = [], [], [], [], []
    for turn in range(calls):
        if model is not None and turn % 2:
            # Every other turn the runtime's loop goes first, so neither method always runs on a warmer machine.
            prefill, tokens = _ort_model_benchmark(model, prompt, new)
            runtime_ttft.append(prefill)
            runtime_tpot.append(float(np.mean(tokens)))
        out = session.generate(prompt, new)
        ttft.append(out.times_s[0] * 1e3)
        diffs = list(np.diff(out.times_s) * 1e3)
        gaps += diffs
        gap_means.append(float(np.mean(diffs)))
        info = session.info()
        if model is not None and not turn % 2:
            prefill, tokens = _ort_model_benchmark(model, prompt, new)
            runtime_ttft.append(prefill)
            runtime_tpot.append(float(np.mean(tokens)))
        elif "runtime_ttft_ms" in info:
            runtime_ttft.append(float(info["runtime_ttft_ms"]))
            runtime_tpot.append(float(info["runtime_tpot_ms"]))
    return {"ttft": _ms(ttft), "tpot": _ms(gaps), "ttft_mean": float(np.mean(ttft)),
            "tpot_mean": float(np.mean(gap_means)),
            "runtime_ttft": float(np.mean(runtime_ttft)) if runtime_ttft else None,
            "runtime_tpot": float(np.mean(runtime_tpot)) if runtime_tpot else None,
            "kv": session.kv_cache(), "info": session.info()}


def _ort_model(spec):
    import onnxruntime_genai as og

    return og.Model(spec.artifacts["model"])


def _ort_model_benchmark(model, prompt: list[int], new: int) -> tuple[float, list[float]]:
    """One call of ORT GenAI's model_benchmark loop, in Python: AppendTokens timed as prompt processing, then each
    GenerateNextToken after the first (which only samples the prefill's logits) timed as token generation."""
    import onnxruntime_genai as og

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + new, min_length=len(prompt) + new, do_sample=False)
    generator = og.Generator(model, params)
    start = time.perf_counter()
    generator.append_tokens(np.asarray(prompt, dtype=np.int32))
    prefill = (time.perf_counter() - start) * 1e3
    generator.generate_next_token()  # sampling only
    gaps = []
    while not generator.is_done():
        start = time.perf_counter()
        generator.generate_next_token()
        gaps.append((time.perf_counter() - start) * 1e3)
    return prefill, gaps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="smollm2-135m")
    parser.add_argument("--work", type=Path, default=Path("/tmp/llm-bench"))
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--runtimes", default="llm.torch,llm.openvino,llm.onnxruntime",
                        help="the LLM plugins to time, comma-separated")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from planner.hardware.detect import detect
    from planner.hardware.read_bandwidth import measure_read_bandwidth
    from planner.llm.corpus import bundled_text
    from planner.llm.plan import _build as build_candidates
    from planner.llm.random_model import build_random_llm
    from planner.measure.worker import run_isolated
    from planner.models.llm import KV_VALUE_BYTES, kv_cache_bytes_at, read_llm_folder
    from planner.plugins.llm import LlmContext, LlmSpec

    hw = detect()
    threads = args.threads or hw.cpu.usable_cores
    folder = args.work / args.shape
    if not (folder / "config.json").is_file():
        print(f"building a random {args.shape} in {folder}")
        build_random_llm(folder, args.shape)
    facts = read_llm_folder(folder)
    print(f"CPU {hw.cpu.model}, {threads} threads; {facts.name}: {facts.parameters / 1e6:.0f}M parameters, "
          f"{facts.weight_bytes / 2**20:.0f} MiB")
    roof = run_isolated(measure_read_bandwidth, hw, threads, timeout_s=300).value
    print(f"read roof {roof.bytes_per_s / 1e9:.1f} GB/s ({roof.buffer_bytes >> 20} MiB buffer; last-level cache "
          f"{roof.last_level_cache_bytes >> 20} MiB)")
    ids = AutoTokenizer.from_pretrained(folder)(bundled_text()[:20000])["input_ids"][:args.prompt]
    specs: list[LlmSpec] = []
    for name, keep in (("llm.torch", {"fp32"}), ("llm.openvino", {"fp32", "int8", "int4"}),
                       ("llm.onnxruntime", {"fp32", "int4"})):
        if name not in args.runtimes.split(","):
            continue
        ctx = LlmContext(facts=facts, workdir=args.work / f"{args.shape}-{name}", threads=threads, quick=True)
        ctx.workdir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        # The plan's own build step (in its worker, the exporters' output in build.log).
        built = run_isolated(build_candidates, name, ctx.facts, ctx.workdir, threads, True, None, timeout_s=1800)
        if built.status != "ok":
            print(f"{name}: building failed: {built.reason}")
            continue
        found = [s for s in built.value if isinstance(s, LlmSpec) and s.weights in keep]
        print(f"{name}: built {len(found)} candidate(s) in {time.perf_counter() - started:.0f} s")
        specs += found
    rows = []
    for spec in specs:
        done = run_isolated(time_candidate, spec, str(folder), ids, args.new, args.calls,
                            spec.plugin == "llm.onnxruntime", timeout_s=1800,
                            env={"OMP_NUM_THREADS": str(threads), "TRANSFORMERS_VERBOSITY": "error"})
        if done.status != "ok":
            print(f"{spec.label}: {done.status}: {done.reason}")
            continue
        r = done.value
        per_token = facts.read_bytes_per_token(spec.weights, args.prompt + args.new // 2,
                                               KV_VALUE_BYTES.get(spec.kv, 2.0))
        tps = 1000 / r["tpot"]
        kv = r["kv"]
        predicted = kv_cache_bytes_at(facts, kv[1], spec.kv) if kv else None
        rows.append((spec.label, r, tps, tps * per_token / roof.bytes_per_s, kv, predicted))
    print()
    print("Means over the timed calls, the planner's and the runtime's for the same calls (or in turns); the planner's "
          "report gives medians (p50), shown in brackets.")
    print("| Candidate | TTFT planner | TTFT runtime | diff | TPOT planner | TPOT runtime | diff | "
          "tokens/s | share of roof | KV measured | KV predicted | diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, r, tps, share, kv, predicted in rows:
        rt, rp = r["runtime_ttft"], r["runtime_tpot"]
        d_ttft = f"{r['ttft_mean'] / rt - 1:+.1%}" if rt else "–"
        d_tpot = f"{r['tpot_mean'] / rp - 1:+.1%}" if rp else "–"
        kv_text = (f"{kv[0] / 2**20:.2f} MiB @{kv[1]} | {predicted / 2**20:.2f} MiB | {kv[0] / predicted - 1:+.1%}"
                   if kv and predicted else "not exposed | – | –")
        print(f"| {label} | {r['ttft_mean']:.1f} ms ({r['ttft']:.1f}) | {f'{rt:.1f} ms' if rt else '–'} | {d_ttft} | "
              f"{r['tpot_mean']:.2f} ms ({r['tpot']:.2f}) | {f'{rp:.2f} ms' if rp else '–'} | {d_tpot} | {tps:.1f} | "
              f"{share:.0%} | {kv_text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

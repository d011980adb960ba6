"""Check the planner's timing method against OpenVINO's benchmark_app on the same ONNX models.

Both time single synchronous inferences on the CPU plugin with the same configuration (latency
hint, one stream, the same thread count, f32). The planner side runs ``time_callable`` at the
default settings in a fresh ``run_isolated`` worker, so neither side shares a process with torch.
Goal: medians within 5%.

Run from the repository root:  .venv/bin/python benchmarks/measure_vs_benchmark_app.py
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from planner.codec import from_data, to_data  # noqa: E402
from planner.measure import MeasureSettings, WorkerStatus, run_isolated  # noqa: E402

_MEDIAN_RE = re.compile(r"Median:\s+([0-9.]+)\s*(ms|us)")
_UNIT_MS = {"ms": 1.0, "us": 1e-3}
_COUNT_RE = re.compile(r"Count:\s+([0-9]+)\s+iterations")


@dataclass(frozen=True)
class Row:
    """One model's medians (one entry per repeat) from the planner's two clocks and benchmark_app."""

    model: str
    wall_ms: list[float]
    runtime_ms: list[float]
    app_ms: list[float]
    detail: str


def export_onnx(name: str, directory: Path) -> tuple[Path, tuple[int, ...]]:
    """Build a seeded demo model and export it to ONNX; returns the path and the input shape."""
    import torch

    from planner.models.demo import DEMOS

    demo = DEMOS[name]
    torch.manual_seed(0)
    model = demo.factory().eval()
    example = torch.randn(demo.input_shape)
    path = directory / f"{name}.onnx"
    # The exporter reports progress on stdout; keep stdout for the table.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            torch.onnx.export(model, (example,), str(path), dynamo=True)
        except Exception as exc:  # noqa: BLE001 - any dynamo failure falls back to the legacy exporter
            print(f"  dynamo export of {name} failed ({type(exc).__name__}); using the legacy exporter")
            torch.onnx.export(model, (example,), str(path), dynamo=False, opset_version=17)
    return path, tuple(demo.input_shape)


def ov_config(threads: int) -> dict[str, Any]:
    """The OpenVINO CPU configuration both tools use."""
    return {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
            "INFERENCE_PRECISION_HINT": "f32"}


def planner_time_openvino(path: str, shape: tuple[int, ...], threads: int, pool_size: int,
                          settings: dict[str, Any]) -> dict[str, Any]:
    """Compile with OpenVINO and time ``infer()`` with the planner's method, two ways (worker side).

    ``wall``: the host clock around the whole Python call, the planner's default.
    ``runtime``: the same loop with OpenVINO's own per-request clock (``InferRequest.latency``,
    the number benchmark_app reports) supplied through ``event_timer``, the way CUDA events are;
    the difference between the two is the Python call overhead, which only small models notice.
    """
    import numpy as np
    import openvino as ov

    from planner.measure import MeasureSettings, time_callable

    compiled = ov.Core().compile_model(path, "CPU", ov_config(threads))
    request = compiled.create_infer_request()
    rng = np.random.default_rng(0)
    pool = [ov.Tensor(rng.standard_normal(shape, dtype=np.float32)) for _ in range(pool_size)]

    def run(tensor: Any) -> None:
        # set_input_tensor shares the buffer (no copy); the pool still gives each call fresh data.
        request.set_input_tensor(tensor)
        request.infer()

    def runtime_clock(thunk: Any) -> float:
        thunk()
        return float(request.latency)

    measure = from_data(settings, MeasureSettings)
    results: dict[str, Any] = {}
    for label, event_timer in (("wall", None), ("runtime", runtime_clock)):
        timing = time_callable(run, pool, settings=measure, event_timer=event_timer)
        results[label] = {"p50_ms": timing.stats.p50_ms, "samples": timing.stats.samples,
                          "stopped_by": str(timing.stopped_by), "ci95_rel": timing.stats.ci95_rel,
                          "unstable": timing.stats.unstable}
    return results


def benchmark_app_median(path: Path, threads: int, seconds: int) -> tuple[float, int]:
    """Run benchmark_app in sync mode with the same device config; returns its median (ms) and count."""
    exe = shutil.which("benchmark_app", path=str(Path(sys.executable).parent)) or "benchmark_app"
    # benchmark_app refuses -nstreams/-nthreads together with -hint latency (a UI rule, not an
    # OpenVINO one), so the exact configuration the planner side compiles with goes in a config file.
    config_path = path.with_suffix(".config.json")
    config = {"CPU": {key: str(value) for key, value in ov_config(threads).items()}}
    config_path.write_text(json.dumps(config))
    cmd = [exe, "-m", str(path), "-d", "CPU", "-load_config", str(config_path),
           "-t", str(seconds), "-api", "sync"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    output = proc.stdout + proc.stderr
    match = _MEDIAN_RE.search(output)
    if proc.returncode != 0 or match is None:
        raise RuntimeError(f"benchmark_app failed (exit {proc.returncode}):\n{output[-3000:]}")
    # Confirm from its "optimal runtime parameters" dump that the config file took effect.
    for key in ("PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS"):
        shown = re.search(rf"^\[ INFO \]\s+{key}: (\S+)", output, re.MULTILINE)
        if shown is None or shown.group(1).upper() != str(ov_config(threads)[key]).upper():
            raise RuntimeError(f"benchmark_app ran with {key}={shown.group(1) if shown else '?'}, "
                               f"not {ov_config(threads)[key]}")
    count = _COUNT_RE.search(output)
    median_ms = float(match.group(1)) * _UNIT_MS[match.group(2)]
    return median_ms, int(count.group(1)) if count else -1


def main(argv: list[str] | None = None) -> int:
    """Export the models, time each with both tools, and print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["inefficient", "efficient", "tiny"],
                        help="demo model names (planner.models.demo.DEMOS)")
    parser.add_argument("--threads", type=int, default=1, help="inference threads for both tools")
    parser.add_argument("--time", type=int, default=10, help="benchmark_app run time in seconds (-t)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="alternate planner and benchmark_app this many times per model")
    parser.add_argument("--pool", type=int, default=8, help="input pool size for the planner")
    parser.add_argument("--timeout", type=float, default=300.0, help="planner worker timeout (s)")
    args = parser.parse_args(argv)

    settings = to_data(MeasureSettings.default())
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="measure_vs_app_") as tmp:
        for name in args.models:
            print(f"[{name}] exporting", file=sys.stderr)
            path, shape = export_onnx(name, Path(tmp))
            wall_ms: list[float] = []
            runtime_ms: list[float] = []
            app_ms: list[float] = []
            details: list[str] = []
            for repeat in range(args.repeats):
                print(f"[{name}] repeat {repeat + 1}: planner", file=sys.stderr)
                outcome = run_isolated(planner_time_openvino, str(path), shape, args.threads, args.pool,
                                       settings, timeout_s=args.timeout,
                                       env={"OMP_NUM_THREADS": str(args.threads)})
                if outcome.status is not WorkerStatus.OK:
                    raise RuntimeError(f"planner timing of {name} {outcome.status}: {outcome.reason}\n"
                                       f"{outcome.traceback}")
                wall, runtime = outcome.value["wall"], outcome.value["runtime"]
                wall_ms.append(wall["p50_ms"])
                runtime_ms.append(runtime["p50_ms"])
                print(f"[{name}] repeat {repeat + 1}: benchmark_app", file=sys.stderr)
                median, count = benchmark_app_median(path, args.threads, args.time)
                app_ms.append(median)
                details.append(
                    f"planner n={wall['samples']} {wall['stopped_by']} ci={wall['ci95_rel'] * 100:.1f}%"
                    + (" UNSTABLE" if wall["unstable"] else "")
                    + f" | runtime-clock n={runtime['samples']} {runtime['stopped_by']}"
                    + f" | app n={count}")
            rows.append(Row(name, wall_ms, runtime_ms, app_ms, "; ".join(details)))

    print(f"\nOpenVINO {_ov_version()} CPU, latency hint, 1 stream, {args.threads} thread(s), f32; "
          f"planner: MeasureSettings.default(), {args.pool} pooled inputs; "
          f"benchmark_app: -api sync -t {args.time}; medians over {args.repeats} repeat(s)")
    header = (f"{'model':<12} {'planner ms':>11} {'bench_app ms':>13} {'ratio':>6} {'<=5%':>5}   "
              f"{'planner+OV clock ms':>19} {'ratio':>6} {'<=5%':>5}")
    print(header)
    print("-" * len(header))
    for row in rows:
        wall = statistics.median(row.wall_ms)
        runtime = statistics.median(row.runtime_ms)
        app = statistics.median(row.app_ms)
        print(f"{row.model:<12} {wall:>11.4f} {app:>13.4f} {wall / app:>6.3f} {_ok(wall / app):>5}   "
              f"{runtime:>19.4f} {runtime / app:>6.3f} {_ok(runtime / app):>5}")
    print()
    for row in rows:
        print(f"{row.model}: {row.detail}")
    return 0


def _ok(ratio: float) -> str:
    return "yes" if abs(ratio - 1.0) <= 0.05 else "NO"


def _ov_version() -> str:
    import openvino as ov

    return ov.__version__.split("-")[0]


if __name__ == "__main__":
    raise SystemExit(main())

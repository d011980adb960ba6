"""How well the planner's predictions hold: the speedup band set before each measurement against the
measured speedup, over several models, on this machine.

For each model a quick CPU plan runs with every CPU plugin (INT8 included, so the 'won't pay'
calls get tested); each candidate's prediction (results.json) is compared with its measured
speedup over the baseline. Printed: per model and overall, the share of measured speedups inside
their predicted band, and how many 'unlikely to pay' predictions (band top <= 1.2x) were right.

Usage: .venv/bin/python benchmarks/predict_vs_measured.py [--models demo:inefficient tv:resnet18 ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from planner.advice.predict import summary, verdict  # noqa: E402
from planner.pipeline import PlanOptions, run_plan  # noqa: E402
from planner.results import PlanResults, read_results  # noqa: E402

DEFAULT_MODELS = ["demo:inefficient", "demo:efficient", "demo:text", "demo:digits", "tv:mobilenet_v3_small",
                  "tv:resnet18"]
PLUGINS = ("cpu.onnxruntime", "cpu.openvino", "cpu.openvino_int8", "edge.int8", "cpu.torch")


def run_model(source: str) -> list[tuple]:
    """(model, label, band, measured speedup, verdict, basis) for every predicted candidate."""
    out = Path(tempfile.mkdtemp(prefix="predict-"))
    print(f"== {source}: quick plan in {out}", file=sys.stderr)
    results = run_plan(PlanOptions(model=source, target="cpu", quick=True, out=out, plugins=PLUGINS,
                                   write_report=False)).results
    return rows_of(source, results)


def rows_of(source: str, results: PlanResults) -> list[tuple]:
    """The prediction rows of one plan's results."""
    rows = []
    for c in results.candidates:
        if c.prediction is None or c.prediction.low is None:
            continue
        rows.append((source, c.label, c.prediction, c.speedup, verdict(c.prediction, c.speedup),
                     c.prediction.basis))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Plan each model, then print every prediction beside its measurement and the hit rates."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    parser.add_argument("--results", nargs="+", type=Path, default=[],
                        help="read these plans' output folders (results.json) instead of planning")
    args = parser.parse_args(argv)
    from planner.hardware import detect

    cpu = detect().cpu
    isa = ", ".join(f for f in ("avx512_vnni", "avx_vnni", "amx_int8", "avx512_bf16", "amx_bf16", "avx2")
                    if cpu.has(f))
    everything = []
    sources: list = [*args.results] if args.results else list(args.models)
    for model in sources:
        if isinstance(model, Path):
            results = read_results(model / "results.json")
            model = results.baseline.model.source if results.baseline else str(model)
            rows = rows_of(model, results)
        else:
            rows = run_model(model)
        everything += rows
        print(f"\n{model} on {cpu.model} ({isa})")
        for _, label, p, measured, held, _basis in rows:
            shown = f"{measured:.2f}x" if measured is not None else "not measured"
            print(f"  {label[:46]:<46} predicted {p.band():<11} measured {shown:<12} {held or '-'}")
        print("  " + summary((p, m) for _, _, p, m, _, _ in rows))
    print("\nAll models: " + summary((p, m) for _, _, p, m, _, _ in everything))
    return 0


if __name__ == "__main__":
    sys.exit(main())

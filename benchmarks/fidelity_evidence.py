"""Fidelity that can fail (issue 24, part 1): the INT8 candidates' fidelity lines on three models, from real plans.

For each model a real quick plan (`--target cpu`, the OpenVINO INT8 plugin: NNCF and QDQ candidates) is run
in isolated workers, as `planner plan --model M --target cpu --quick` runs it, and the INT8 candidates'
fidelity is printed: status, the raw cosine beside the cosine of the part of the outputs that depends on
the input (each output minus the original's mean output over the compared samples), the error over that
part's size, and the test that decided. The models:
  - demo:flat: a deep random-weight CNN ending in global pooling and a linear layer, whose outputs barely
    depend on its input: expected "not established" (the check cannot judge), never ok;
  - demo:digits: a small CNN trained at first use, with its held-out labelled set: accuracy decides;
  - tv:resnet18 with random weights: outputs vary by a few percent across inputs: judged on that part.

Only fidelity figures are printed; they do not depend on how busy the machine is (the speeds do, and
are not shown).

Usage: .venv/bin/python benchmarks/fidelity_evidence.py [--models demo:flat demo:digits tv:resnet18]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from planner.pipeline import PlanOptions, run_plan  # noqa: E402
from planner.results import CandidateResult  # noqa: E402

DEFAULT_MODELS = ["demo:flat", "demo:digits", "tv:resnet18"]
PLUGINS = ("cpu.openvino_int8",)


def _num(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def fidelity_line(c: CandidateResult) -> str:
    """One INT8 candidate's fidelity: status, raw and centered cosine, error over the varying part, the decider."""
    fid = c.fidelity
    if fid is None:
        return f"  {c.label}: {c.status}: {c.reason}"
    accuracy = ""
    if fid.accuracy is not None:
        accuracy = f"  accuracy {fid.accuracy:.2%} (original {_num(fid.reference_accuracy, '.2%')})"
    return (f"  {c.label}: {c.status}\n"
            f"    raw cosine {fid.cosine:.6f} | cosine on the input-dependent part "
            f"{_num(fid.centered_cosine, '.6f')} | error over that part {_num(fid.centered_error, '.3g')}{accuracy}\n"
            f"    decided by: {fid.decided_by or '—'}"
            + (f"\n    reason: {c.reason}" if c.reason else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    args = parser.parse_args()
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="fidelity-evidence-") as out:
            outcome = run_plan(PlanOptions(model=model, target="cpu", quick=True, confirm=0, out=Path(out),
                                           plugins=PLUGINS))
        res = outcome.results
        measured = [c for c in res.candidates if c.fidelity is not None and not c.fidelity.reference]
        spread = next((c.fidelity.input_spread for c in measured if c.fidelity and c.fidelity.input_spread), None)
        samples = measured[0].fidelity.samples if measured and measured[0].fidelity else 0
        data = res.validation.basis if res.validation is not None else "generated inputs"
        print(f"== {model}: outputs vary by {_num(spread, '.3g')} of their size across {samples} samples "
              f"({data})")
        int8 = [c for c in res.candidates if c.precision == "int8"]
        for c in int8:
            print(fidelity_line(c))
        if not int8:
            print("  no INT8 candidate: " + "; ".join(f"{c.label}: {c.status}: {c.reason}" for c in res.candidates))
        best = res.best
        print(f"  best: {best.label if best is not None else 'none'}; statuses: "
              + ", ".join(f"{s}: {sum(c.status == s for c in res.candidates)}"
                          for s in sorted({str(c.status) for c in res.candidates})))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

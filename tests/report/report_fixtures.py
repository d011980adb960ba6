"""Paths and constants shared by the report tests."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
"""The hand-written results.json and the golden report."""

FIGURE_LINKS = {"decision": "figures/decision.png", "latency": "figures/latency.png",
                "throughput": "figures/throughput.png", "roofline": "figures/roofline.png",
                "candidates": "figures/candidates.png"}
"""Figure links as render_report_files writes them, fixed so the golden file is stable."""


TEXT_INPUTS = [
    {"name": "input_ids", "shape": [1, 64], "dtype": "int64", "axes": ["", "sequence"], "low": 0,
     "high": 1000, "range_basis": "the demo's vocabulary",
     "values": "integers in [0, 1000) (the demo's vocabulary)"},
    {"name": "attention_mask", "shape": [1, 64], "dtype": "int64", "axes": ["", "sequence"], "low": None,
     "high": None, "range_basis": "", "values": "ones (nothing masked)"},
]
"""A two-input text model whose file fixes the batch at 1 (a static-batch ONNX), as `planner inspect --json`
and the baseline record its inputs."""

TEXT_FLAGS = "--input input_ids:1x64:int64:0-1000 --input attention_mask:1x64:int64"
"""The `--input` flags that give TEXT_INPUTS again."""

SEQUENCE_SWEEP = [{"length": 8, "latency_p50_ms": 0.21234, "tokens_per_s": 37674.5},
                  {"length": 16, "latency_p50_ms": 0.3019, "tokens_per_s": 52997.7},
                  {"length": 32, "latency_p50_ms": 0.4561, "tokens_per_s": 70160.1},
                  {"length": 64, "latency_p50_ms": 0.66812, "tokens_per_s": 95791.2}]
"""Latency at shorter sequence lengths, as the baseline records it (unrounded, as measured)."""

FIXED_BATCH = ("no batch sweep: the model's inputs fix the batch at 1 "
               "(input_ids int64 [1, sequence=64]; attention_mask int64 [1, sequence=64])")
"""The engine's words for a model file whose inputs fix the batch."""



def full_report(results, **kwargs) -> str:
    """report.md and evidence.md as one text, the decision first: what a reader of both files sees."""
    from planner.report.markdown import render_both

    return "\n".join(render_both(results, **kwargs))


def section(text: str, heading: str) -> str:
    """The body of one section: the Summary or the Roadmap (`## heading`), or an evidence section under the
    Appendix (`### heading`), up to the next heading of its level or above."""
    import re

    for level in (2, 3):
        match = re.search(rf"^{'#' * level} {re.escape(heading)}\n(.*?)(?=^#{{2,{level}}} |\Z)", text, re.S | re.M)
        if match:
            return match.group(1)
    raise AssertionError(f"no section {heading!r}")


def subsection(text: str, heading: str) -> str:
    """The body of one subsection of an evidence section (`#### heading`), up to the next heading above it."""
    import re

    for level in (3, 4):
        match = re.search(rf"^{'#' * level} {re.escape(heading)}\n(.*?)(?=^#{{2,{level}}} |\Z)", text, re.S | re.M)
        if match:
            return match.group(1)
    raise AssertionError(f"no subsection {heading!r}")


def _latency(partial: dict) -> dict:
    """A whole latency record around the fields a test gives (the median, a sample count...)."""
    p50 = partial.get("p50_ms", 1.0)
    return {"samples": 20, "mean_ms": p50, "std_ms": 0.0, "min_ms": p50, "max_ms": p50, "p50_ms": p50,
            "p90_ms": None, "p95_ms": None, "p99_ms": None, "iqr_ms": 0.0, "iqr_over_median": 0.0,
            "unstable": False, "ci95_rel": 0.0, **partial}


def whole(partial: dict) -> dict:
    """A results.json object from the few parts a test is about: each record it names gets the fields the format
    requires (a latency record around its median, a baseline's model and shape, a candidate's plugin and status),
    so a report test states only what it checks."""
    out = dict(partial)
    if isinstance(out.get("baseline"), dict):
        base = dict(out["baseline"])
        shape = next((i["shape"] for i in base.get("inputs", ()) if "shape" in i), [1])
        base.setdefault("model", {"name": "model", "source": "model", "kind": "demo", "parameters": None,
                                  "size_bytes": None})
        base.setdefault("input_shape", shape)
        base["latency_ms"] = _latency(base.get("latency_ms", {}))
        out["baseline"] = base
    cands = []
    for cand in out.get("candidates", ()):
        cand = {"plugin": "runtime", "label": "candidate", "config": {}, "precision": "fp32", "status": "ok",
                **cand}
        if isinstance(cand.get("latency_ms"), dict):
            cand["latency_ms"] = _latency(cand["latency_ms"])
        if isinstance(cand.get("fidelity"), dict):
            cand["fidelity"] = {"cosine": 1.0, "max_abs_error": 0.0, "mean_abs_error": 0.0, "top1_agreement": None,
                                "samples": 8, **cand["fidelity"]}
        cands.append(cand)
    if "candidates" in out:
        out["candidates"] = cands
    if isinstance(out.get("ceilings"), dict):
        out["ceilings"] = {"source": "measured", **out["ceilings"]}
    if "requirement_checks" in out:
        out["requirement_checks"] = [{"status": "met" if c.get("met") else "missed", "margin": "", "source": "",
                                      **c} for c in out["requirement_checks"]]
    return out

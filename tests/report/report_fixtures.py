"""Paths and constants shared by the report tests."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
"""The hand-written results.json and the golden report."""

FIGURE_LINKS = {"latency": "figures/latency.png", "throughput": "figures/throughput.png",
                "roofline": "figures/roofline.png", "candidates": "figures/candidates.png"}
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

    match = re.search(rf"^#### {re.escape(heading)}\n(.*?)(?=^#{{2,4}} |\Z)", text, re.S | re.M)
    assert match, f"no subsection {heading!r}"
    return match.group(1)

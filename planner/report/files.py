"""Writing the report to disk: figures, report.md and evidence.md, each through a temporary file and a rename."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from planner.io import write_text_atomic
from planner.results import PlanResults

REPORT_NAME = "report.md"
FIGURES_DIR = "figures"


def render_report_files(results: PlanResults | Mapping[str, Any], out_dir: Path) -> Path:
    """Write out_dir/report.md, out_dir/evidence.md and out_dir/figures/*.png from results; returns the report's
    path."""
    from planner.report.figures import draw_figures
    from planner.report.markdown import EVIDENCE_NAME, render_both

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures, notes = draw_figures(results, out_dir / FIGURES_DIR, relative_to=out_dir)
    markdown, evidence = render_both(results, figures=figures, figure_notes=notes)
    write_text_atomic(out_dir / EVIDENCE_NAME, evidence)
    report = out_dir / REPORT_NAME
    write_text_atomic(report, markdown)
    return report

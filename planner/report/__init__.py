"""The Markdown report with figures, rendered from a results.json object."""

from __future__ import annotations

from planner.report.files import render_report_files
from planner.report.markdown import render_markdown

__all__ = ["render_markdown", "render_report_files"]

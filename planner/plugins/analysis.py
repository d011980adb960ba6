"""The model analysis a plugin may act on, as part of the plugin SDK: the architecture lint's findings.

A plugin that rewrites what a finding names (the align plugin pads the convs the channel-alignment
finding lists) reads the findings here: the same ones the profile reports, so the plugin changes
exactly what the user was told about. Importing this module imports torch (the lint reads modules).
"""

from __future__ import annotations

from planner.analysis.findings import Finding, Severity
from planner.analysis.lint import lint

__all__ = ["Finding", "Severity", "lint"]

"""Optimization plugins: the contract (CandidateSpec as plain data, Plugin, Session), the registry
that finds them through entry points, and the torch session several targets share."""

from planner.plugins.contract import (
                                      MESSAGES,
                                      CandidateSpec,
                                      ModelRef,
                                      PlanContext,
                                      Plugin,
                                      Precision,
                                      Session,
                                      Target,
                                      missing_package_reason,
)
from planner.plugins.registry import (
                                      ENTRY_POINT_GROUP,
                                      EXTRA_PLUGINS_ENV,
                                      PluginIssue,
                                      discover,
                                      get_plugin,
)

__all__ = ["CandidateSpec", "ENTRY_POINT_GROUP", "EXTRA_PLUGINS_ENV", "MESSAGES", "ModelRef", "PlanContext",
           "Plugin", "PluginIssue", "Precision", "Session", "Target", "discover", "get_plugin",
           "missing_package_reason"]

"""Optimization plugins: the contract, the registry that finds them through entry points, and the
plugin SDK, the one part of the planner a plugin (the `targets` packages, or a third party's) imports.

The SDK, module by module:

- planner.plugins (contract, declarations, registry): Plugin and what it declares (ActionId,
  Arithmetic, Phase), CandidateSpec (a candidate as plain data), PlanContext (what a plugin sees
  while building candidates), ModelRef (how a worker rebuilds the model), Session (what `open`
  returns), Description and description_of (a candidate's plain title and runtime-native snippet, from
  `describe`), Precision, Target, MESSAGES and missing_package_reason (the reasons a plugin cannot run).
- planner.plugins.gate: the plan's fidelity gate, offered as `ctx.gate` (Gate, Verdict): a plugin
  that picks a setting before measuring judges it by the rule every measured candidate meets.
- planner.pytorch (session, package): TorchSession, the PyTorch session torch-based candidates run in, and
  torch_package, the hand-over package of a candidate PyTorch runs.
- planner.plugins.training: labelled data to fine-tune on (training_data), accuracy, TrainingOutcome
  and FinetuneError, shared by the plugins that train.
- planner.plugins.analysis: the architecture lint's findings (lint, Finding), for a plugin that
  rewrites what a finding names.
- planner.onnx (export, feeds, files, fp16, opset, quantize, session): the ONNX tooling plugins
  share: one export per plan (shared_onnx), matching feeds to a graph's inputs, fp16 conversion,
  preparing a file for QDQ and quantizing it with calibration inputs, the ONNX Runtime session.
- planner.models: the loaded model (loaded: LoadedModel, Feed, make_feeds), its input specs (spec:
  ModelInputs, TensorSpec), the validation data (valdata: load_val_data) and the demo models a
  redesign builds (demo).
- planner.hardware.profile: the machine (HardwareProfile, CPU feature sets such as BF16_FEATURES,
  device classes).
- planner.errors: PlannerError, and another library's error read into one line (failure_reason,
  runtime_error_line).
- planner.io: atomic file writes (write_atomic).

Everything else is the engine (planner.pipeline, measure, results, analysis, advice, report, tui,
cli): the import-linter contract "Plugins import only the plugin SDK" (pyproject.toml) forbids the
targets from importing it, so the engine can change without breaking a plugin. What a plugin needs
from the engine comes through the SDK: the fidelity gate through the plan context, the lint through
planner.plugins.analysis.
"""

from planner.plugins.contract import (
                                      MESSAGES,
                                      CandidateSpec,
                                      Description,
                                      ModelRef,
                                      PlanContext,
                                      Plugin,
                                      Precision,
                                      Session,
                                      Target,
                                      cuda_usable,
                                      description_of,
                                      missing_package_reason,
)
from planner.plugins.declarations import ActionId, Arithmetic, Catalog, Declaration, Phase
from planner.plugins.registry import (
                                      ENTRY_POINT_GROUP,
                                      EXTRA_PLUGINS_ENV,
                                      PluginIssue,
                                      catalog,
                                      discover,
                                      get_plugin,
)

__all__ = ["ActionId", "Arithmetic", "Catalog", "Declaration", "Phase",
           "CandidateSpec", "Description", "ENTRY_POINT_GROUP", "EXTRA_PLUGINS_ENV", "MESSAGES", "ModelRef",
           "PlanContext", "Plugin", "PluginIssue", "Precision", "Session", "Target", "catalog", "cuda_usable",
           "description_of", "discover", "get_plugin",
           "missing_package_reason"]

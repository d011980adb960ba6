"""What a plugin declares about itself, as typed data the core reads instead of plugin names.

A plugin says which decision-tree actions it serves, what its change does to the arithmetic, its
runtime (the family that folds near-duplicates), its roadmap phase, and whether it is the
baseline. The decision trees name actions (this module's vocabulary); which plugin measures an
action, where a candidate sits in the roadmap and how the report groups it all come from here, so
a new plugin needs no change in the core.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Iterable, Mapping


class Arithmetic(StrEnum):
    """What a plugin's change does to the model's arithmetic (and so how its fidelity is judged)."""

    NONE = "none"  # the same function: a runtime, a setting, an exact rewrite
    REDUCED_PRECISION = "reduced-precision"  # fewer bits per number: bf16, fp16, INT8, ternary
    APPROXIMATE = "approximate"  # a different function by design: pruning, low-rank factors
    STRUCTURAL = "structural"  # a different architecture with new weights: needs retraining


ARITHMETIC_ORDER = (Arithmetic.NONE, Arithmetic.REDUCED_PRECISION, Arithmetic.APPROXIMATE, Arithmetic.STRUCTURAL)
"""From the least change to the most: a candidate's arithmetic is the larger of its plugin's and its precision's."""


class Phase(IntEnum):
    """The roadmap phase a plugin's candidates belong to."""

    QUICK_WINS = 1  # runtime and configuration: no change to the numbers
    EXTRA_IMPACT = 2  # precision or compression: needs calibration or validation data
    REDESIGN = 3  # the architecture itself: often needs retraining


class ActionId(StrEnum):
    """The actions the hardware decision trees recommend, which a plugin may declare it serves.

    A tree node names one of these; the plan measures it through every plugin that declares it for
    the plan's target. Advice-only actions (preprocessing, scaling out...) are in the tree alone.
    """

    GPU_BATCH = "gpu.batch"  # larger batches on the GPU, within the latency target
    GPU_FP16 = "gpu.fp16"  # mixed precision on Tensor Cores
    GPU_COMPILE = "gpu.compile"  # operator fusion by a compiler (torch.compile)
    GPU_ENGINE = "gpu.engine"  # an inference engine built for this GPU (TensorRT)
    GPU_GRAPHS = "gpu.graphs"  # replaying captured kernels without launch overhead (CUDA graphs)
    COMPRESSION = "compression"  # a smaller model: pruning, distillation
    THREADS = "threads"  # intra-op threads set to the physical cores
    CPU_COMPILE = "cpu.compile"  # operator fusion by a compiler (torch.compile) on the CPU
    CHANNELS_LAST = "channels-last"  # NHWC memory format for convolutions
    GRAPH_RUNTIME = "cpu.graph-runtime"  # a runtime with graph-level fusion and constant folding
    VENDOR_RUNTIME = "cpu.vendor-runtime"  # the CPU vendor's own inference runtime
    INT8_STATIC = "int8.static"  # post-training INT8, calibrated (and dynamic where it applies)
    VENDOR_INT8 = "int8.vendor"  # post-training INT8 through the vendor runtime's own quantizer
    EDGE_INT8 = "edge.quantize-int8"  # INT8 on an edge CPU (critical on ARM)
    TERNARY = "edge.ternary-weights"  # weights in {-a, 0, +a}
    SMALLER_ARCHITECTURE = "arch.smaller"  # a smaller or redesigned architecture
    PRUNING = "arch.pruning"  # structured pruning of channels
    FOLD_NORMS = "arch.fold-norms"  # normalisation folded into the layer before it (exact)
    ALIGN_CHANNELS = "arch.align-channels"  # channels padded to the vector width (exact)
    FACTOR_DENSE = "arch.factor-dense"  # a large dense layer replaced by low-rank factors


ACTION_WORDS: Mapping[str, str] = {
    ActionId.GPU_BATCH: "larger batches on the GPU, within the latency target",
    ActionId.GPU_FP16: "mixed precision (fp16) on the GPU's tensor cores",
    ActionId.GPU_COMPILE: "operator fusion by a compiler on the GPU",
    ActionId.GPU_ENGINE: "an inference engine built for this GPU",
    ActionId.GPU_GRAPHS: "replaying captured GPU kernels without launch overhead",
    ActionId.COMPRESSION: "model compression (a smaller model)",
    ActionId.THREADS: "intra-op threads set to the physical cores",
    ActionId.CPU_COMPILE: "operator fusion by a compiler on the CPU",
    ActionId.CHANNELS_LAST: "channels-last memory format for convolutions",
    ActionId.GRAPH_RUNTIME: "a runtime with graph-level fusion and constant folding",
    ActionId.VENDOR_RUNTIME: "the CPU vendor's inference runtime",
    ActionId.INT8_STATIC: "post-training INT8 (calibrated static, and dynamic)",
    ActionId.VENDOR_INT8: "post-training INT8 through the vendor runtime's quantizer",
    ActionId.EDGE_INT8: "INT8 on an edge CPU",
    ActionId.TERNARY: "ternary weights",
    ActionId.SMALLER_ARCHITECTURE: "a smaller or redesigned architecture",
    ActionId.PRUNING: "structured pruning of channels",
    ActionId.FOLD_NORMS: "normalisation folded into the layer before it (exact)",
    ActionId.ALIGN_CHANNELS: "channels padded to the vector width (exact)",
    ActionId.FACTOR_DENSE: "large dense layers replaced by low-rank factors",
}
"""Each action in plain words, for people (`planner plugins`)."""


@dataclass(frozen=True)
class Declaration:
    """A plugin's declarations as plain data: what the plan, the prediction and the report read."""

    name: str
    target: str
    summary: str = ""
    title: str = ""  # the plugin in a reader's words ("OpenVINO INT8"); '' where it declares none: its name
    actions: tuple[str, ...] = ()
    arithmetic: Arithmetic = Arithmetic.NONE
    runtime: str = ""
    phase: Phase = Phase.QUICK_WINS
    is_baseline: bool = False
    transforms_model: bool = False
    plan_note: str = ""

    def runs_on(self, target: str) -> bool:
        """Whether this plugin may be planned for a target: its own, or any for a plugin of every target.

        CPU and edge plugins share the host CPU's runtimes (an edge board is an ARM CPU), so each may
        be planned for the other; a GPU plugin is planned for GPUs alone.
        """
        mine = str(self.target)
        if mine == "any" or mine == str(target):
            return True
        return {mine, str(target)} == {"cpu", "edge"}


def declaration_problems(plugin: Any) -> list[str]:
    """What is malformed in a plugin's declarations, each naming the field; [] when they are sound."""
    problems = []
    known = {a.value for a in ActionId}
    actions = getattr(plugin, "actions", ())
    if not isinstance(actions, tuple | list) or not all(isinstance(a, str) for a in actions):
        problems.append("field `actions` must be a tuple of action names")
    else:
        unknown = [a for a in actions if a not in known]
        if unknown:
            problems.append(f"field `actions` names unknown action(s) {', '.join(map(repr, unknown))} "
                            f"(known: {', '.join(sorted(known))})")
    phase = getattr(plugin, "phase", None)
    if phase not in tuple(Phase):
        problems.append(f"field `phase` must be one of {', '.join(str(int(p)) for p in Phase)} "
                        f"(roadmap phases), got {phase!r}")
    if getattr(plugin, "arithmetic", None) not in tuple(Arithmetic):
        problems.append(f"field `arithmetic` must be one of {', '.join(a.value for a in Arithmetic)}, "
                        f"got {getattr(plugin, 'arithmetic', None)!r}")
    if not isinstance(getattr(plugin, "runtime", ""), str):
        problems.append("field `runtime` must be a string")
    return problems


@dataclass(frozen=True)
class Catalog:
    """Every registered plugin's declarations: which plugins serve an action, and each one's facts."""

    declarations: tuple[Declaration, ...] = ()

    @classmethod
    def of(cls, plugins: Mapping[str, Any] | Iterable[Any]) -> "Catalog":
        """The catalog of loaded plugins (planner.plugins.Plugin instances; `planner.plugins.catalog()` finds
        the registered ones)."""
        values: Iterable[Any] = plugins.values() if isinstance(plugins, Mapping) else plugins
        return cls(tuple(p.declaration() for p in values))

    def get(self, name: str) -> Declaration | None:
        """The declarations of the named plugin, or None when it is not registered."""
        return next((d for d in self.declarations if d.name == name), None)

    def serving(self, action: str, target: str) -> tuple[str, ...]:
        """The plugins that declare an action and may be planned for the target, in name order."""
        return tuple(sorted(d.name for d in self.declarations if action in d.actions and d.runs_on(target)))


def candidate_arithmetic(declared: Arithmetic, precision: str) -> Arithmetic:
    """A candidate's change to the arithmetic: its plugin's, or reduced precision below fp32 if larger."""
    own = Arithmetic.NONE if str(precision).lower() == "fp32" else Arithmetic.REDUCED_PRECISION
    return max(Arithmetic(declared), own, key=ARITHMETIC_ORDER.index)

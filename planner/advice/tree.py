"""The hardware decision trees (GPU, CPU, edge) as data, walked against measurements with evidence.

A tree is a table of nodes. STEP nodes visit their children in order; DECISION nodes take the
yes or no branch their condition picks; ACTION nodes recommend an action (usually a plugin),
unless their condition rules it out; NOTE nodes record a fact. Conditions are named functions
of a `TreeContext` and return the evidence that decided them, so every branch taken can be
shown with its numbers.

An action that is a PyTorch setting (`PYTORCH_SETTINGS`) applies only where the model has a
PyTorch module: for an ONNX-only model the walk rules it out, saying so, before its condition is
asked, so it never becomes a plan step (nor the report's "Next": see `not_applicable`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from planner.advice import _facts as facts
from planner.advice.checklist import Answer
from planner.advice.conditions import CONDITIONS, Outcome, make_context
from planner.advice.requirements import Requirements
from planner.plugins.declarations import ActionId, Catalog
from planner.results.decisions import (  # the data, below advice so results can hold it; re-exported
    Action,
    ActionRecord,
    DecisionPathRecord,
    NodeKind,
    VisitedNode,
)

if TYPE_CHECKING:
    from planner.hardware.profile import HardwareProfile


@dataclass(frozen=True)
class Node:
    """One tree node; `condition` names a function in CONDITIONS, `action` an entry in ACTIONS."""

    id: str
    text: str
    kind: NodeKind
    condition: str | None = None
    children: tuple[str, ...] = ()
    yes: tuple[str, ...] = ()
    no: tuple[str, ...] = ()
    action: str | None = None
    unknown: str = "yes"  # the branch a DECISION takes when its condition cannot be decided
    when: str = ""  # applies to every action under this node, e.g. "if requirements are still missed"


@dataclass(frozen=True)
class Tree:
    """A decision tree for one target: its root and its nodes by id."""

    target: str
    root: str
    nodes: Mapping[str, Node]

    def node(self, node_id: str) -> Node:
        """The node with this id."""
        return self.nodes[node_id]


@dataclass(frozen=True)
class RecommendedAction:
    """An action the walk recommends, with the node and evidence that led to it, and the plugins that
    measure it on this target (none: advice)."""

    action: Action
    node_id: str
    node_text: str
    evidence: str
    options: Mapping[str, Any]
    fidelity_gated: bool
    when: str
    plugins: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """The action's title with its options filled in."""
        return self.action.title.format_map(_Fill(self.options))

    def record(self) -> ActionRecord:
        """This action as results hold it: the action's id and the filled-in title instead of the Action."""
        return ActionRecord(action=self.action.id, title=self.title, plugins=tuple(self.plugins), node=self.node_id,
                            node_text=self.node_text, evidence=self.evidence, options=dict(self.options),
                            fidelity_gated=self.fidelity_gated, when=self.when)



@dataclass(frozen=True)
class DecisionPath:
    """The result of walking a tree: visited nodes in order, and the recommended actions in order."""

    target: str
    visited: tuple[VisitedNode, ...]
    actions: tuple[RecommendedAction, ...]

    def record(self) -> DecisionPathRecord:
        """This walk as results hold it: each action as its record (flattened, derived title)."""
        return DecisionPathRecord(target=self.target, visited=tuple(self.visited),
                                  actions=tuple(a.record() for a in self.actions))



class _Fill(dict):
    """format_map helper: a missing option shows as its own placeholder rather than failing."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


# ---- actions -----------------------------------------------------------------------------------

_A = ActionId

ACTIONS: Mapping[str, Action] = MappingProxyType({a.id: a for a in (
    Action(_A.GPU_BATCH, "Increase batch size up to batch {max_batch}, within the latency target",
           "higher throughput per GPU, while each request waits longer for its batch "
           "(measure the latency/throughput trade-off)"),
    Action("gpu.preprocessing", "Move preprocessing to the GPU or parallelise it",
           "removes a CPU-side stall that timing the model alone cannot see"),
    Action("gpu.transfers", "Minimise host-GPU copies per request",
           "less of each request spent copying between host and GPU"),
    Action(_A.GPU_FP16, "Mixed precision FP16 on Tensor Cores",
           "about 2x speed (typical published figure) and half the weight memory where Tensor Cores exist", True, 2),
    Action(_A.GPU_COMPILE, "Compile the model with torch.compile",
           "1.5-2x from operator fusion and less Python overhead (typical published figure)"),
    Action(_A.GPU_ENGINE, "TensorRT engine",
           "2-5x for CNNs and Transformers (typical published figure); TensorRT may pick TF32/FP16 kernels", True, 2),
    Action(_A.GPU_GRAPHS, "CUDA graphs (fixed input shape)",
           "20-30% for small models (typical published figure) by replaying kernels without launch overhead"),
    Action("gpu.int8", "INT8 quantization (TensorRT with Q/DQ ONNX)",
           "further speed and 4x smaller weights than FP32 (how to quantize is a separate method, "
           "not detailed here)", True, 2),
    Action(_A.COMPRESSION, "Model compression (pruning, distillation)",
           "a smaller, faster model; training-free pruning is measured and fidelity-gated, a larger cut "
           "needs fine-tuning", False, 3),
    Action("scale_out", "Scale horizontally (more instances behind a load balancer)",
           "throughput grows with instances; per-request latency does not improve"),
    Action(_A.THREADS, "Set intra-op threads to {intra_op_threads} (physical cores), inter-op to 1",
           "every physical core works on each operator, without more threads than cores"),
    Action(_A.CPU_COMPILE, "Compile the model with torch.compile (inductor)",
           "operator fusion and less Python overhead: 1.5-2x is the typical published figure on GPUs; on a CPU "
           "only a measurement tells"),
    Action("cpu.mkldnn", "Enable oneDNN (MKLDNN): torch.backends.mkldnn.enabled = True",
           "oneDNN kernels for convolutions and linear layers (advised for Intel CPUs)"),
    Action(_A.CHANNELS_LAST, "Channels-last memory format",
           "faster convolutions through NHWC kernels"),
    Action(_A.GRAPH_RUNTIME, "ONNX Runtime with all graph optimizations",
           "graph-level fusion and constant folding"),
    Action(_A.VENDOR_RUNTIME, "OpenVINO",
           "the best CPU performance on Intel (typical published claim); elsewhere, measured to find out"),
    Action("cpu.batch", "Pick the batch size against the latency target (batch {batch})",
           "per-request latency inside the target; on CPU a smaller batch is often better"),
    Action(_A.INT8_STATIC, "Quantize to INT8 (ONNX Runtime QDQ, static and dynamic)",
           "2-3x on CPU (typical published figure) and 4x smaller weights than FP32", True, 2),
    Action(_A.VENDOR_INT8, "Quantize to INT8 on OpenVINO (NNCF post-training, and the QDQ file)",
           "2-3x on CPU with VNNI or AMX (typical published figure) and 4x smaller weights than FP32", True, 2),
    Action(_A.SMALLER_ARCHITECTURE, "Smaller architecture (MobileNetV3-Small, EfficientNet-Lite)",
           "a model sized for the device; its speed is measured where the planner can build the redesign, "
           "its accuracy must be re-measured after training", False, 3),
    Action(_A.EDGE_INT8, "Quantize to INT8",
           "2-4x on ARM (typical published figure) and 4x smaller weights than FP32; critical on ARM", True, 2),
    Action(_A.TERNARY, "Ternary weights",
           "about 16x smaller weights than FP32 (the device performance targets suggest ternary for desktop "
           "and edge); accuracy cost to measure", True, 2),
    Action(_A.PRUNING, "Model pruning",
           "fewer weights and operations; measured training-free and fidelity-gated, a larger cut needs "
           "fine-tuning", False, 3),
    Action("edge.accelerator", "Hardware accelerator (Coral TPU, Jetson GPU)",
           "offloads the model from the CPU"),
)})
"""Every action a tree names, by id: the measured ones are planner.plugins.ActionId values."""

PYTORCH_SETTINGS: Mapping[str, str] = MappingProxyType({
    "cpu.mkldnn": "torch.backends.mkldnn is a PyTorch setting",
    _A.CHANNELS_LAST: "channels-last is a PyTorch memory format (the ONNX runtimes choose their own layouts)",
    _A.CPU_COMPILE: "torch.compile compiles a PyTorch module",
    _A.GPU_COMPILE: "torch.compile compiles a PyTorch module",
})
"""The actions that are PyTorch settings, each with why it does not apply to an ONNX-only model.

Actions a PyTorch plugin happens to measure but that name no PyTorch setting (the thread counts,
batch size, FP16, CUDA graphs) are not here: the ONNX runtimes have them too.
"""


# ---- the hardware decision trees -----------------------------------------------------------------

_S, _D, _ACT, _N = NodeKind.STEP, NodeKind.DECISION, NodeKind.ACTION, NodeKind.NOTE
_STILL = "if requirements are still missed after the steps above"


def _tree(target: str, root: str, nodes: Iterable[Node]) -> Tree:
    return Tree(target, root, MappingProxyType({n.id: n for n in nodes}))


GPU_TREE = _tree("nvidia", "gpu", (
    Node("gpu", "GPU (NVIDIA)", _S, children=("gpu.1", "gpu.2", "gpu.3", "gpu.4", "gpu.5")),
    Node("gpu.1", "1. Profile with PyTorch profiler or nvidia-smi", _N, "profiled"),
    Node("gpu.2", "2. Is GPU utilization low (<50%)?", _D, "gpu_util_low",
         yes=("gpu.2.batch", "gpu.2.preprocessing", "gpu.2.transfers"), no=("gpu.2.busy",)),
    Node("gpu.2.batch", "Batch size too small: increase batch size", _ACT, "batch_helps", action=_A.GPU_BATCH),
    Node("gpu.2.preprocessing", "CPU preprocessing bottleneck: move preprocessing to GPU or parallelise", _ACT,
         "preprocessing_open", action="gpu.preprocessing"),
    Node("gpu.2.transfers", "CPU-GPU transfers: minimise the copies between host and GPU", _ACT, "transfers_open",
         action="gpu.transfers"),
    Node("gpu.2.busy", "GPU is the bottleneck: optimize the model", _N),
    Node("gpu.3", "3. Apply optimizations in order", _S,
         children=("gpu.3a", "gpu.3b", "gpu.3c", "gpu.3d", "gpu.3e")),
    Node("gpu.3a", "a. Increase batch size (measure latency/throughput trade-off)", _ACT, "batch_helps",
         action=_A.GPU_BATCH),
    Node("gpu.3b", "b. Mixed precision FP16 (if Tensor Cores available)", _ACT, "has_tensor_cores",
         action=_A.GPU_FP16),
    Node("gpu.3c", "c. Compile the model (torch.compile)", _ACT, "gpu_present", action=_A.GPU_COMPILE),
    Node("gpu.3d", "d. TensorRT", _ACT, "gpu_present", action=_A.GPU_ENGINE),
    Node("gpu.3e", "e. CUDA graphs (small models)", _ACT, "small_model", action=_A.GPU_GRAPHS),
    Node("gpu.4", "4. Measure after each optimization", _N, "measure_each"),
    Node("gpu.5", "5. If still not meeting requirements", _S, "still_missing",
         children=("gpu.5a", "gpu.5b", "gpu.5c"), when=_STILL),
    Node("gpu.5a", "Consider quantization (INT8)", _ACT, action="gpu.int8"),
    Node("gpu.5b", "Consider model compression", _ACT, action=_A.COMPRESSION),
    Node("gpu.5c", "Scale horizontally: add GPU instances", _ACT, action="scale_out"),
))

CPU_TREE = _tree("cpu", "cpu", (
    Node("cpu", "CPU (Intel/AMD)", _S, children=("cpu.1", "cpu.2", "cpu.3", "cpu.4", "cpu.5")),
    Node("cpu.1", "1. Profile with PyTorch profiler or perf", _N, "profiled"),
    Node("cpu.2", "2. Do the intra-op threads equal the physical cores?", _D, "threads_ok",
         yes=("cpu.2.ok",), no=("cpu.2.set",), unknown="no"),
    Node("cpu.2.ok", "Threading already matches the cores", _N),
    Node("cpu.2.set", "If not, set the intra-op threads to the number of physical cores", _ACT, "threads_wrong",
         action=_A.THREADS),
    Node("cpu.3", "3. Apply optimizations in order", _S,
         children=("cpu.3a", "cpu.3b", "cpu.3c", "cpu.3d", "cpu.3e", "cpu.3f")),
    Node("cpu.3a", "a. Set intra-op threads to number of physical cores", _ACT, "threads_wrong", action=_A.THREADS),
    Node("cpu.3b", "b. Enable MKLDNN (Intel CPUs)", _ACT, "mkldnn_off", action="cpu.mkldnn"),
    Node("cpu.3c", "c. Use channels-last memory format", _ACT, "image_input", action=_A.CHANNELS_LAST),
    Node("cpu.3d", "d. Try ONNX Runtime with graph optimizations", _ACT, "cpu_runtime", action=_A.GRAPH_RUNTIME),
    # The method words this step for Intel: the Intel branch alone carries that claim. OpenVINO's CPU plugin
    # also runs on AMD and ARM, so the other branch still measures it, claiming nothing in advance.
    Node("cpu.3e", "e. Is this an Intel CPU (where OpenVINO is claimed best)?", _D, "intel_cpu",
         yes=("cpu.3e.intel",), no=("cpu.3e.other",), unknown="no"),
    Node("cpu.3e.intel", "If Intel CPU: try OpenVINO (best performance)", _ACT, "openvino", action=_A.VENDOR_RUNTIME),
    Node("cpu.3e.other", "Not an Intel CPU: measure OpenVINO anyway (its CPU plugin runs here too)", _ACT, "openvino",
         action=_A.VENDOR_RUNTIME),
    # Not in the method's CPU list (its latency-critical pattern names torch.compile for any hardware): the step
    # through which PyTorch's own CPU settings are measured whether or not the threads step is already done.
    Node("cpu.3f", "f. Compile the model (torch.compile)", _ACT, "cpu_compile", action=_A.CPU_COMPILE),
    Node("cpu.4", "4. Measure batch size trade-off (smaller may be better for CPU)", _ACT, "cpu_batch",
         action="cpu.batch"),
    Node("cpu.5", "5. If still not meeting requirements", _S, "still_missing",
         children=("cpu.5a", "cpu.5a.openvino", "cpu.5b", "cpu.5c"), when=_STILL),
    Node("cpu.5a", "Quantize to INT8 (2-3x speedup on CPU)", _ACT, action=_A.INT8_STATIC),
    Node("cpu.5a.openvino", "Quantize to INT8 on OpenVINO", _ACT, action=_A.VENDOR_INT8),
    Node("cpu.5b", "Consider model compression", _ACT, action=_A.COMPRESSION),
    Node("cpu.5c", "Scale horizontally", _ACT, action="scale_out"),
))

EDGE_TREE = _tree("edge", "edge", (
    Node("edge", "Edge/ARM", _S, children=("edge.1", "edge.2", "edge.3", "edge.4", "edge.5")),
    Node("edge.1", "1. Profile on target device (Raspberry Pi, etc.)", _N, "on_target_device"),
    Node("edge.2", "2. Is inference >100 ms per sample?", _D, "slow_per_sample",
         yes=("edge.2.smaller",), no=("edge.2.optimize",), unknown="no"),
    Node("edge.2.smaller", "Model too large for device: try a smaller architecture", _ACT,
         action=_A.SMALLER_ARCHITECTURE),
    Node("edge.2.optimize", "Optimize the current model", _N),
    Node("edge.3", "3. Apply optimizations in order", _S, children=("edge.3a", "edge.3b", "edge.3c", "edge.3d")),
    Node("edge.3a", "a. Quantize to INT8 (2-4x speedup on ARM, critical)", _ACT, "int8_hardware",
         action=_A.EDGE_INT8),
    Node("edge.3b", "b. Set num_threads to the device's CPU cores", _ACT, "threads_wrong", action=_A.THREADS),
    Node("edge.3c", "c. TensorFlow Lite with XNNPACK, or ONNX Runtime with INT8", _N, "edge_runtime"),
    # As on the CPU tree: PyTorch's own settings stay measured when the threads step is already done.
    Node("edge.3d", "d. Compile the model (torch.compile)", _ACT, "cpu_compile", action=_A.CPU_COMPILE),
    Node("edge.4", "4. Measure memory usage: does the model fit in RAM?", _D, "fits_in_ram",
         yes=("edge.4.fits",), no=("edge.4.smaller",)),
    Node("edge.4.fits", "Fits in RAM", _N),
    Node("edge.4.smaller", "Does not fit: must use a smaller model", _ACT, action=_A.SMALLER_ARCHITECTURE),
    Node("edge.5", "5. If still not meeting requirements", _S, "still_missing",
         children=("edge.5a", "edge.5b", "edge.5c", "edge.5d"), when=_STILL),
    Node("edge.5a", "Use a smaller model architecture", _ACT, action=_A.SMALLER_ARCHITECTURE),
    Node("edge.5b", "Lower precision further, as the device performance targets suggest", _ACT, "ternary_wanted",
         action=_A.TERNARY),
    Node("edge.5c", "Consider model pruning", _ACT, action=_A.PRUNING),
    Node("edge.5d", "Hardware accelerator (Coral TPU, Jetson GPU)", _ACT, "accelerator",
         action="edge.accelerator"),
))

TREES: Mapping[str, Tree] = MappingProxyType({t.target: t for t in (GPU_TREE, CPU_TREE, EDGE_TREE)})


def not_applicable(node_id: str, baseline: Mapping[str, Any]) -> str:
    """Why the action of this node (any tree's) does not apply to the baseline's model: 'does not apply: the
    model is ONNX only ...' for a PyTorch setting on an ONNX-only model, else ''.

    The report asks this of a recorded plan step (its `source`), so that a results file written
    before the walk ruled these out cannot make one its next step.
    """
    node = next((tree.nodes[node_id] for tree in TREES.values() if node_id in tree.nodes), None)
    why = PYTORCH_SETTINGS.get(node.action or "") if node is not None else None
    if why is None or not facts.onnx_only(baseline):
        return ""
    return f"does not apply: {facts.ONNX_ONLY}, and {why}"


def _onnx_only_outcome(node: Node, baseline: Mapping[str, Any]) -> Outcome | None:
    """The walk's answer for a PyTorch setting on an ONNX-only model (ruled out, saying why); None otherwise."""
    why = not_applicable(node.id, baseline)
    return Outcome(False, why) if why else None


def tree_for(target: str) -> Tree:
    """The decision tree for a target ('nvidia', 'cpu' or 'edge')."""
    try:
        return TREES[str(target)]
    except KeyError:
        raise ValueError(f"unknown target {target!r}: expected one of {', '.join(TREES)}") from None


def validate_tree(tree: Tree) -> list[str]:
    """Every structural problem in a tree: dangling ids, unknown conditions and actions."""
    problems = []
    if tree.root not in tree.nodes:
        problems.append(f"{tree.target}: root {tree.root!r} is not a node")
    for node in tree.nodes.values():
        for child in (*node.children, *node.yes, *node.no):
            if child not in tree.nodes:
                problems.append(f"{node.id}: child {child!r} is not a node")
        if node.condition is not None and node.condition not in CONDITIONS:
            problems.append(f"{node.id}: unknown condition {node.condition!r}")
        if node.kind == NodeKind.ACTION:
            if ACTIONS.get(node.action or "") is None:
                problems.append(f"{node.id}: unknown action {node.action!r}")
        if node.kind == NodeKind.DECISION and node.unknown not in ("yes", "no"):
            problems.append(f"{node.id}: unknown-branch must be 'yes' or 'no'")
    return problems


# ---- walking -------------------------------------------------------------------------------------

def evaluate_tree(target: str, hw: HardwareProfile, baseline: Mapping[str, Any], requirements: Requirements,
                  checklist_answers: Sequence[Answer] | None = None, *, catalog: Catalog) -> DecisionPath:
    """Walk the target's tree against the measurements: visited nodes with evidence, and actions in order,
    each with the plugins that declare it for this target (`catalog`: planner.plugins.catalog())."""
    tree = tree_for(target)
    ctx = make_context(target, hw, baseline, requirements, checklist_answers)
    visited: list[VisitedNode] = []
    actions: list[RecommendedAction] = []
    seen: dict[str, str] = {}

    def run(node_id: str, when: str, inherited: str) -> None:
        node = tree.node(node_id)
        when = node.when or when
        # A node without a condition of its own is decided by its parent's evidence; a PyTorch setting on an
        # ONNX-only model by that fact alone, whatever its condition would say.
        outcome = (_onnx_only_outcome(node, ctx.baseline)
                   or (CONDITIONS[node.condition](ctx) if node.condition else Outcome(True, inherited)))
        if node.kind == NodeKind.NOTE:
            visited.append(VisitedNode(node.id, node.text, node.kind, "noted", outcome.evidence))
        elif node.kind == NodeKind.STEP:
            if outcome.value is False:
                visited.append(VisitedNode(node.id, node.text, node.kind, "skipped", outcome.evidence))
                return
            visited.append(VisitedNode(node.id, node.text, node.kind, "step", outcome.evidence))
            for child in node.children:
                run(child, when, outcome.evidence if node.condition else inherited)
        elif node.kind == NodeKind.DECISION:
            branch = {True: "yes", False: "no"}.get(outcome.value, node.unknown)  # type: ignore[arg-type]
            result = branch if outcome.value is not None else f"unknown, taking {branch}"
            visited.append(VisitedNode(node.id, node.text, node.kind, result, outcome.evidence))
            for child in (node.yes if branch == "yes" else node.no):
                run(child, when, outcome.evidence)
        else:
            action = ACTIONS[node.action or ""]
            if node.condition and inherited and inherited not in outcome.evidence:
                # Keep the branch's reason (e.g. "GPU busy 23% < 50%") with the action's own evidence.
                outcome = replace(outcome, evidence=f"{inherited}; {outcome.evidence}")
            if outcome.done:
                # In force already: shown as done, never recommended, so the plan has no step for it.
                visited.append(VisitedNode(node.id, node.text, node.kind, "already done", outcome.evidence))
            elif outcome.value is False:
                visited.append(VisitedNode(node.id, node.text, node.kind, "ruled out", outcome.evidence))
            elif action.id in seen:
                visited.append(VisitedNode(node.id, node.text, node.kind,
                                           f"already recommended at {seen[action.id]}", outcome.evidence))
            else:
                seen[action.id] = node.id
                gated = action.fidelity_gated if outcome.fidelity_gated is None else outcome.fidelity_gated
                visited.append(VisitedNode(node.id, node.text, node.kind, "recommended", outcome.evidence))
                actions.append(RecommendedAction(action, node.id, node.text, outcome.evidence,
                                                 MappingProxyType(dict(outcome.options)), gated, when,
                                                 catalog.serving(action.id, target)))

    run(tree.root, "", "")
    return DecisionPath(str(target), tuple(visited), tuple(actions))


# ---- rendering -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class TreeView:
    """A node for display (e.g. a TUI Tree widget): id, text, kind, the branch it hangs on, the plugins that
    measure its action, children."""

    id: str
    text: str
    kind: NodeKind
    branch: str | None
    plugins: tuple[str, ...]
    children: tuple[TreeView, ...]


def tree_nodes(target: str, catalog: Catalog) -> TreeView:
    """The whole tree for a target as nested views, every branch included, each action with the plugins that
    declare it (`catalog`: planner.plugins.catalog())."""
    tree = tree_for(target)

    def view(node_id: str, branch: str | None) -> TreeView:
        node = tree.node(node_id)
        action = ACTIONS.get(node.action or "")
        children = ([view(c, None) for c in node.children]
                    + [view(c, "yes") for c in node.yes] + [view(c, "no") for c in node.no])
        plugins = catalog.serving(action.id, str(target)) if action else ()
        return TreeView(node.id, node.text, node.kind, branch, plugins, tuple(children))

    return view(tree.root, None)

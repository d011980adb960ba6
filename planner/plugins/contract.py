"""The plugin contract: plugins build candidates as plain data; the measure worker opens them.

Heavy imports (onnxruntime, openvino, tensorrt) happen inside `candidates`/`open`, never at
module import, so listing plugins stays fast and a missing package is a reason, not a crash.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, runtime_checkable

from planner.codec import from_data, to_data
from planner.plugins.declarations import Arithmetic, Declaration, Phase
from planner.plugins.options import PluginOptions
from planner.plugins.precision import Precision

if TYPE_CHECKING:
    import numpy as np

    from planner.hardware.profile import HardwareProfile
    from planner.models.loaded import Feed, LoadedModel
    from planner.models.spec import ModelInputs
    from planner.plugins.gate import Gate
    from planner.plugins.packaging import PackageFiles
    from planner.results.values import Prediction


class Target(StrEnum):
    """Where a plugin's candidates run."""

    CPU = "cpu"
    NVIDIA = "nvidia"
    EDGE = "edge"
    ANY = "any"


# The plugins' entry-point group (the registry's too): a transform's plugin is found there by name.
TRANSFORM_GROUP = "planner.targets"


@dataclass(frozen=True)
class ModelRef:
    """How a worker process rebuilds the model: the source string, its settled inputs, trust."""

    source: str
    inputs: "ModelInputs"
    trust_code: bool = False
    # An architecture transform to apply after loading ({"plugin": name, ...settings}), so any
    # plugin's worker measures the changed model: the transform is deterministic on seeded weights.
    transform: dict | None = None

    def load(self) -> "LoadedModel":
        """Load the model (seeded weights, so every process gets the same function), then transform it."""
        from planner.models import load_model

        loaded = load_model(self.source, inputs=self.inputs, trust_code=self.trust_code)
        if not self.transform:
            return loaded
        name = str(self.transform["plugin"])
        found = [ep for ep in importlib.metadata.entry_points(group=TRANSFORM_GROUP) if ep.name == name]
        if not found:
            raise KeyError(f"no plugin {name!r} to apply the architecture transform (is it installed?)")
        plugin = found[0].load()()
        apply = getattr(plugin, "transform", None)
        if apply is None:
            raise TypeError(f"plugin {name} does not transform models")
        return apply(loaded, self.transform)

    @classmethod
    def of(cls, model: "LoadedModel") -> "ModelRef":
        """The reference that rebuilds an already loaded model."""
        return cls(model.source.text, model.inputs, model.trust_code)


@dataclass(frozen=True)
class CandidateSpec:
    """One deployment candidate as plain data: which plugin opens it, with what settings/files.

    `config` must be JSON-serialisable; `artifacts` maps a role ("onnx") to a file path.
    `threads` and `interop_threads` are the intra-op and inter-op thread counts the candidate runs with
    (None: the runtime's own choice), in the contract's words so the core never reads a runtime's config.
    `rows_per_call` is how many rows (samples) one `run` call processes whatever it is given (a
    session that pads every input to a fixed batch); None means the input's own batch.
    """

    plugin: str
    label: str = ""  # empty (older specs may lack it): the plugin's name
    config: dict = field(default_factory=dict)
    precision: Precision = Precision.FP32
    artifacts: dict = field(default_factory=dict)
    threads: int | None = None
    interop_threads: int | None = None
    dynamic_batch: bool = True
    notes: tuple[str, ...] = ()
    rows_per_call: int | None = None

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.plugin)
        if self.rows_per_call is not None:
            if self.rows_per_call < 1:
                raise ValueError(f"rows_per_call must be at least 1, got {self.rows_per_call}")
            if self.dynamic_batch:
                # A session that always processes N rows cannot be swept over batch sizes.
                raise ValueError("a spec with a fixed rows_per_call must set dynamic_batch=False")

    def relative_to(self, folder: str | Path) -> "CandidateSpec":
        """The spec with each artifact inside `folder` named relative to it: how the plan's records (reproduce
        lines, package manifests) name them, to run from the plan's folder wherever it was moved or copied.
        Artifacts elsewhere keep their paths."""
        root = Path(folder).resolve()
        named = {}
        for role, path in self.artifacts.items():
            where = Path(str(path))
            # A relative path is the plan's own (its --out was relative): it resolves from the current folder.
            inside = where.resolve().is_relative_to(root)
            named[role] = where.resolve().relative_to(root).as_posix() if inside else path
        return dataclasses.replace(self, artifacts=named)

    def to_text(self) -> str:
        """The compact form `planner bench --candidate` accepts (JSON)."""
        return json.dumps(to_data(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> "CandidateSpec":
        """Parse `to_text` output, or a path to a JSON file holding it."""
        text = text.strip()
        if not text.startswith("{") and Path(text).is_file():
            text = Path(text).read_text()
        return from_data(json.loads(text), cls)


@dataclass(frozen=True)
class Description:
    """A candidate in a reader's words: its plain title, and the lines that apply it in its runtime's own API.

    `title` names the candidate without abbreviations or config keys ("OpenVINO FP32, latency hint,
    2 threads, static shape"); the spec's short `label` stays the key results.json matches on. `apply`
    is a short Python snippet a user can paste (ONNX Runtime SessionOptions, OpenVINO compile_model
    properties, torch calls), or one sentence where no single call makes the change; '' when unknown.
    """

    title: str
    apply: str = ""


@runtime_checkable
class Session(Protocol):
    """An opened candidate in the worker: prepare inputs once, then run them many times."""

    def prepare(self, feed: "Feed") -> Any:
        """Convert one feed (input arrays by name, in the model's order) to what `run` takes (not timed)."""

    def run(self, prepared: Any) -> Any:
        """Run one inference (timed)."""

    def to_numpy(self, output: Any) -> "np.ndarray":
        """The first output as a float32 numpy array (for fidelity)."""

    def info(self) -> dict:
        """Settings actually in force (threads, effective precision, provider...)."""


@dataclass
class PlanContext:
    """What a plugin sees when it builds candidates."""

    hw: "HardwareProfile"
    model: "LoadedModel"
    workdir: Path
    quick: bool = False
    cancel: Callable[[], bool] = lambda: False
    log: Callable[[str], None] = lambda msg: None
    shared: dict = field(default_factory=dict)  # artifacts plugins may reuse (e.g. one ONNX export)
    val_data: Path | None = None  # validation data (the --val-data layout), e.g. for INT8 calibration
    val_data_basis: str = "--val-data"  # what that data is, for the notes that mention it
    accuracy_budget: float | None = None  # the largest accuracy drop the user accepts (a fraction)
    options: PluginOptions = field(default_factory=PluginOptions)  # what the command line tells the plugins
    # The plan's fidelity gate (planner.plugins.gate), for a plugin that picks a setting before measuring:
    # the engine's one rule on the measured candidates' inputs. The pipeline gives it; None elsewhere.
    gate: "Gate | None" = None


# Every reason a plugin cannot run, in one place: each says what is wrong and what to do about it.
# `missing_package:<module>` entries override the generic install line for that module.
MESSAGES: dict[str, str] = {
    "missing_package": "{package} not installed (pip install {package})",
    "missing_package:onnx": "onnx not installed (pip install onnx onnxscript)",
    "missing_package:tensorrt": ("TensorRT not installed (pip install planner[tensorrt] on a machine "
                                 "with NVIDIA's index)"),
    "missing_package:triton": ("triton not installed (pip install triton): Inductor generates its "
                               "CUDA kernels with it"),
    "no_torch_module": ("the model is ONNX-only: {plugin} needs a PyTorch module (plan the PyTorch "
                        "model itself, not its ONNX export)"),
    "scripted_module": ("the model is TorchScript: {plugin} needs an eager PyTorch module (torch.compile "
                        "cannot compile a ScriptModule); plan the Python model, or a .pt2 export of it"),
    "no_onnx_source": ("the model has neither a PyTorch module nor an ONNX file: {plugin} needs one "
                       "of them to get an ONNX graph (pass a .onnx file or a PyTorch model)"),
    "no_gpu_in_profile": ("no NVIDIA GPU detected (the hardware profile lists none: NVML found no "
                          "device); plan on a machine with one, or choose another target"),
    "torch_cpu_only": ("no CUDA device: torch {version} is a CPU-only build (torch.version.cuda is "
                       "None); install a CUDA build of torch"),
    "cuda_unavailable": ("no CUDA device: torch.cuda.is_available() is False (check the driver with "
                         "nvidia-smi and that CUDA_VISIBLE_DEVICES exposes the GPU)"),
}


def description_of(plugin: "Plugin", spec: CandidateSpec, inputs: "ModelInputs | None" = None) -> Description:
    """What `plugin.describe` says of a spec; the spec's label (no snippet) where the plugin fails to say it, so a
    third-party plugin's slip costs a plain title, never the plan."""
    try:
        found = plugin.describe(spec, inputs)
    except Exception:  # noqa: BLE001 - any plugin's error: the label still names the candidate
        return Description(spec.label)
    if not isinstance(found, Description):
        return Description(spec.label)
    return found if found.title else Description(spec.label, found.apply)


def missing_package_reason(package: str) -> str:
    """The message for one package that is not importable, with the command that installs it."""
    template = MESSAGES.get(f"missing_package:{package}", MESSAGES["missing_package"])
    return template.format(package=package)


def torch_cuda_problem() -> str | None:
    """Why torch cannot run CUDA work here; None when it can, or when torch is absent."""
    if importlib.util.find_spec("torch") is None:
        return None  # the missing package is a reason of its own
    import torch

    if torch.version.cuda is None:
        return MESSAGES["torch_cpu_only"].format(version=torch.__version__)
    if not torch.cuda.is_available():
        return MESSAGES["cuda_unavailable"]
    return None


def cuda_usable(hw: "HardwareProfile") -> bool:
    """Whether the machine has a GPU that torch can run on: the profile lists one and torch reaches it."""
    return bool(hw.gpus) and importlib.util.find_spec("torch") is not None and torch_cuda_problem() is None


class Plugin:
    """Base class for optimization plugins: subclass and declare what the plugin needs as data.

    `check` turns the declarations into every reason that applies at once, so a subclass
    overrides it only to add a reason special to itself.
    """

    name: str = ""
    title: str = ""  # the plugin in a reader's words, for the reasons that name it ("OpenVINO INT8"); '': its name
    target: Target = Target.ANY
    summary: str = ""
    requires: tuple[str, ...] = ()  # importable module names, checked with find_spec (not imported)
    needs_torch_module: bool = False  # runs the model's PyTorch module (an ONNX-only model has none)
    needs_cuda: bool = False  # runs on a CUDA device through torch (so torch is required too)
    needs_onnx: bool = False  # runs an ONNX graph: the model's own file, or one exported with onnx
    needs_eager_module: bool = False  # compiles the module (torch.compile), which TorchScript cannot take

    # What the core reads instead of this plugin's name (planner.plugins.declarations); a third-party
    # plugin declares the same and needs no change in the core.
    actions: tuple[str, ...] = ()  # the decision-tree actions it measures (ActionId values)
    arithmetic: Arithmetic = Arithmetic.NONE  # what its change does to the numbers (fp32 candidates)
    runtime: str = ""  # the runtime its candidates run on: with the precision, the family the report folds
    phase: Phase = Phase.QUICK_WINS  # the roadmap phase of its candidates
    is_baseline: bool = False  # runs the model as it comes: what every candidate is compared against
    fuses_graph: bool = False  # its runtime fuses the graph, replacing PyTorch's per-op dispatch
    plan_note: str = ""  # what the plan says is measured when this plugin answers a profile finding
    # A build that takes long (post-training quantization with calibration, an engine build, a pruning search):
    # its typical seconds for a small CNN on a 2-core CPU, and the precision its candidates compute in. A
    # budgeted plan builds such plugins by predicted speedup per second of building, and cuts what it cannot
    # afford; 0 means the build is cheap (an export, a session option).
    build_cost_s: float = 0.0
    build_precision: str = "fp32"

    def declaration(self) -> Declaration:
        """This plugin's declarations as plain data."""
        return Declaration(name=self.name, target=str(self.target), summary=self.summary, title=self.title,
                           actions=tuple(self.actions), arithmetic=Arithmetic(self.arithmetic),
                           runtime=self.runtime or self.name, phase=Phase(self.phase),
                           is_baseline=self.is_baseline, transforms_model=callable(getattr(self, "transform", None)),
                           plan_note=self.plan_note)

    def screen_extra_s(self, spec: "CandidateSpec") -> float:
        """Seconds one candidate's worker spends preparing beyond a typical screen (a compile before the first
        call); a budgeted plan screens it only when the budget affords that too. 0 by default."""
        return 0.0

    def prediction_family(self, spec: "CandidateSpec") -> str:
        """The prediction family of one candidate (int8, bf16, fp16, ternary, runtime...): by default its
        precision decides; a plugin whose settings form a family of their own overrides this."""
        from planner.plugins.expectation import precision_family

        return precision_family(str(spec.precision))

    def expect(self, spec: "CandidateSpec", hw: "HardwareProfile", baseline: Any, *,
               baseline_fuses: bool = False) -> "Prediction":
        """The speedup band expected over the baseline before measuring, and why (from the hardware and the
        baseline's profile). `baseline_fuses`: the baseline's runtime already fuses the graph."""
        from planner.plugins.expectation import band

        return band(self.prediction_family(spec), hw, baseline, gpu=self.target is Target.NVIDIA,
                    fuses_graph=self.fuses_graph, baseline_fuses=baseline_fuses)

    def describe(self, spec: "CandidateSpec", inputs: "ModelInputs | None" = None) -> Description:
        """The candidate's plain title and runtime-native apply snippet. `inputs`: the model's inputs, for a
        snippet that names their shapes (None: left out). By default the spec's label and no snippet."""
        return Description(spec.label)

    def explain_gate(self, spec: "CandidateSpec", status: str, reason: str) -> str:
        """The fidelity gate's reason for one of this plugin's candidates ('rejected' or 'unconfirmed'), in the
        plugin's own words; by default the gate's reason as it is."""
        return reason

    def baseline_spec(self, model: "LoadedModel", hw: "HardwareProfile") -> "CandidateSpec | None":
        """The out-of-the-box configuration this plugin runs as the baseline for this model, or None.

        The core asks the baseline plugins first, then the others: an ONNX-only model has no PyTorch
        baseline, so a runtime that opens ONNX files offers its defaults.
        """
        return None

    def required_packages(self, model: "LoadedModel | None" = None) -> tuple[str, ...]:
        """`requires` plus what the declarations imply: torch for CUDA, onnx to export a torch model."""
        packages = list(self.requires)
        if self.needs_cuda:
            packages.append("torch")
        if self.needs_onnx and model is not None and model.onnx_path is None and model.has_torch:
            packages.append("onnx")
        return tuple(dict.fromkeys(packages))

    def missing_packages(self, model: "LoadedModel | None" = None) -> list[str]:
        """The required packages that are not importable, checked without importing them."""
        return [m for m in self.required_packages(model) if importlib.util.find_spec(m) is None]

    def check(self, hw: "HardwareProfile", model: "LoadedModel") -> list[str]:
        """Every reason this plugin cannot run here; [] means it can."""
        reasons = [missing_package_reason(m) for m in self.missing_packages(model)]
        if self.needs_torch_module and not model.has_torch:
            reasons.append(MESSAGES["no_torch_module"].format(plugin=self.name))
        if self.needs_eager_module and model.scripted:
            reasons.append(MESSAGES["scripted_module"].format(plugin=self.name))
        if self.needs_onnx and model.onnx_path is None and not model.has_torch:
            reasons.append(MESSAGES["no_onnx_source"].format(plugin=self.name))
        if self.needs_cuda:
            problem = torch_cuda_problem()
            # The profile comes from NVML; when torch itself reaches a device, trust torch over a
            # missed probe. Without torch there is no probe, so the profile alone decides.
            torch_missing = importlib.util.find_spec("torch") is None
            if not hw.gpus and (problem or torch_missing):
                reasons.append(MESSAGES["no_gpu_in_profile"])
            if problem:
                reasons.append(problem)
        return reasons

    def candidates(self, ctx: PlanContext) -> Iterable[CandidateSpec]:
        """Build artifacts under ctx.workdir and yield the specs to measure."""
        raise NotImplementedError(f"plugin {self.name} does not define candidates()")

    def open(self, spec: CandidateSpec, model: ModelRef) -> Session:
        """In the worker: rebuild the runtime session from the spec."""
        raise NotImplementedError(f"plugin {self.name} does not define open()")

    def artifact_files(self, spec: CandidateSpec) -> list[Path]:
        """Every file the candidate needs to run, the set its hand-over package holds (its size is theirs).

        By default each artifact that exists, with the external-data files an ONNX artifact names; a plugin
        whose artifact spans other files (an OpenVINO IR's .bin) adds them.
        """
        files: list[Path] = []
        for value in spec.artifacts.values():
            path = Path(value)
            if not path.is_file():
                continue
            if path.suffix == ".onnx":
                from planner.models.onnx_graphs import onnx_files

                files += [f for f in onnx_files(path) if f not in files]
            elif path not in files:
                files.append(path)
        return files

    def package(self, spec: CandidateSpec, model: ModelRef, dest: Path) -> "PackageFiles | None":
        """Write the candidate's hand-over package into `dest`: its artifact and a run.py that needs only its
        runtime (planner.plugins.packaging). None: this plugin has no exporter; a PackagingError says why
        this candidate cannot be packaged."""
        return None

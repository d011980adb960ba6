"""Step 1, Hardware: the detected profile, the measured roofline ceilings, and why any probe could not run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Label

from planner.hardware.ceiling_notes import INT8_COUNTING, measurement_note, warnings
from planner.hardware.render import isa_rows
from planner.tui import formatting as fmt
from planner.tui.screens.base import StepPane
from planner.tui.widgets.kv import KeyValues, Row
from planner.tui.widgets.notice import Notice
from planner.tui.widgets.progress import RunProgress
from planner.tui.widgets.toggles import Tick

if TYPE_CHECKING:
    from planner.results import ModelDescription


def orientation(model: "ModelDescription | None", host: str | None = None, llm: str | None = None) -> str:
    """The first screen's two lines: what the planner does (on `host`, over SSH, when given), and what to press
    (`llm`: the decoder LLM folder loaded in the model's place, if any)."""
    machine = f"{host} (over SSH)" if host else "this machine"
    what = (f"planner measures {machine} and your model, tries faster ways to run it, and reports which "
            "meets your targets.")
    if llm is not None:
        return (f"{what}\nThe language model {llm} is loaded (step 2 changes it). Press 7 then r to plan it, "
                "? for help.")
    if model is None:
        return f"{what}\nLoading the demo model… Steps 1–9 are on the left; ? explains each one."
    kind = "demo model" if model.source.startswith("demo:") else "model"
    return (f"{what}\nThe {kind} {model.source or model.name} is loaded (step 2 changes it). "
            "Press 4 then r to profile it, n for the next step, ? for help.")


def machine_rows(hw: Any, host: str | None = None) -> list[Row]:
    """The hardware profile as labelled rows (`host`: the machine reached over SSH, else this one)."""
    cpu = hw.cpu
    physical = cpu.physical_cores if cpu.physical_cores is not None else "unknown"
    clock = f", up to {fmt.count(round(cpu.max_mhz))} MHz" if cpu.max_mhz else ""
    rows: list[Row] = [
        ("Device class", hw.device_class.label),
        ("CPU", f"{cpu.model} ({cpu.vendor}, {cpu.architecture}){clock}"),
        ("Cores", f"{cpu.usable_cores} usable, {cpu.logical_cores} logical, {physical} physical"),
    ]
    caches = ", ".join(f"{level} {fmt.size(size)}" for level, size in cpu.caches.items())
    rows.append(("Caches", caches or "unknown"))
    isa = isa_rows(cpu)
    have = [name for name, value in isa if value != "no"]
    lack = [name for name, value in isa if value == "no"]
    rows.append(("ISA", f"has {', '.join(have) or 'none of the listed'}"
                        + (f"; lacks {', '.join(lack)}" if lack else "")))
    memory = f"{fmt.size(hw.memory.total_bytes)} total, {fmt.size(hw.memory.available_bytes)} available"
    if hw.memory.limit_bytes is not None:
        memory += f", container limit {fmt.size(hw.memory.limit_bytes)}"
    rows.append(("Memory", memory))
    if hw.gpus:
        for gpu in hw.gpus:
            detail = [fmt.size(gpu.memory_total_bytes)]
            if gpu.cc_text:
                detail.append(f"cc {gpu.cc_text}")
            if gpu.tensor_core_generation:
                detail.append(f"tensor cores {gpu.tensor_core_generation}")
            rows.append((f"GPU {gpu.index}", f"{gpu.name} ({', '.join(detail)})"))
        versions = [v for v in (f"driver {hw.driver_version}" if hw.driver_version else "",
                                f"CUDA {hw.cuda_version}" if hw.cuda_version else "") if v]
        if versions:
            rows.append(("GPU software", ", ".join(versions)))
    else:
        rows.append(("GPU", no_gpu_text(hw, host)))
    if hw.board:
        rows.append(("Board", hw.board + (f" ({hw.soc})" if hw.soc else "")))
    return rows


def energy_rows(probe: Callable[[], list[tuple[str, str]]]) -> list[Row]:
    """One row per kind of work (CPU, and GPU where there are GPUs): the energy counter the engine's `probe`
    found for it, or why there is none and the fix; energy per inference is never estimated from a TDP."""
    try:
        return [(label, text) for label, text in probe()]
    except Exception as exc:  # noqa: BLE001 - a probe that breaks must not stop the hardware step
        return [("Energy", f"not probed ({type(exc).__name__}: {exc})")]


def no_gpu_text(hw: Any, host: str | None = None) -> str:
    """The GPU row of a machine without one: said once, calmly, with the probe's reason in short."""
    reason = hw.note("gpu") or hw.note("nvml") or ""
    if not reason or "not found" in reason or "no NVIDIA driver" in reason:
        # The usual case on a CPU machine: nothing is wrong, the plan is simply for the CPU.
        return f"no NVIDIA GPU on {host or 'this machine'}: the plan is for the CPU"
    return f"no NVIDIA GPU found ({reason.removeprefix('no NVIDIA GPU: ')})"


def software_rows(hw: Any) -> list[Row]:
    """Python, torch and the OS."""
    return [("Software", f"Python {hw.python_version or '?'}, torch {hw.torch_version or 'not installed'}"),
            ("OS", hw.os or "unknown")]


def ceiling_rows(ceilings: Any) -> list[Row]:
    """The roofline ceilings as labelled rows, saying where they came from."""
    details = dict(ceilings.details or {})
    mode = f", {details['mode']}" if details.get("mode") else ""
    rows: list[Row] = [
        ("Source", f"{ceilings.source} on {ceilings.device}{mode}"),
        ("Peak", ", ".join(f"{p} {fmt.flops_rate(v)}" for p, v in ceilings.peak_flops.items())),
        ("Bandwidth", fmt.bandwidth(ceilings.bandwidth_bytes_per_s)),
    ]
    if ceilings.bandwidth_bytes_per_s and "fp32" in ceilings.peak_flops:
        # One ridge per roof: an int8 layer turns compute bound at a far higher intensity than an fp32 one.
        ridges = [f"{fmt.ratio(ceilings.ridge_point(p))}" + (" FLOP/byte" if i == 0 else "") + f" ({p})"
                  for i, p in enumerate(ceilings.peak_flops)]
        rows.append(("Ridge point", f"{', '.join(ridges)}: below it a layer is memory bound, above it compute "
                                    "bound"))
    if "int8" in ceilings.peak_flops:
        rows.append(("INT8 roof", INT8_COUNTING + (f"; {details['int8_method']}" if details.get("int8_method")
                                                   else "")))
    how = measurement_note(details)
    if how:
        rows.append(("Measured", fmt.tui_words(how)))
    for warning in warnings(details):
        rows.append(("Warning", fmt.tui_words(warning)))
    for key, value in sorted(details.items()):
        if key.endswith("_omitted"):
            rows.append((f"No {key.removesuffix('_omitted')}", str(value)))
        elif key in ("gpu_measurement_error", "cache", "error", "estimate"):
            rows.append((key.replace("_", " ").capitalize(), str(value)))
    return rows


def remeasured_text(ceilings: Any, before: Any = None) -> str:
    """What measuring the ceilings again found, against the figures shown before."""
    details = dict(getattr(ceilings, "details", None) or {})
    if details.get("kept_out_note"):
        # The figures shown are the cached ones: say what the re-measure found and why it was not used.
        return fmt.tui_words(str(details["kept_out_note"]))
    was = dict(before.peak_flops) if before is not None else {}
    peaks = [f"{p} {fmt.flops_rate(v)}" + (f" (was {fmt.flops_rate(was[p])})" if p in was else "")
             for p, v in ceilings.peak_flops.items()]
    bandwidth = fmt.bandwidth(ceilings.bandwidth_bytes_per_s)
    if before is not None:
        bandwidth += f" (was {fmt.bandwidth(before.bandwidth_bytes_per_s)})"
    return ", ".join([*peaks, f"bandwidth {bandwidth}"])


def remeasure_hint(ceilings: Any) -> str:
    """What r does, and what is used until then: said for where these figures came from, cached or not.

    Measured figures are cached for this machine (read from the cache at start-up, or written when measured),
    unless writing the cache failed (the details say why); figures from a vendor table or an estimate are never
    cached, so the next start tries to measure again.
    """
    details = dict(getattr(ceilings, "details", None) or {})
    if not ceilings.is_measured:
        return ("press r to try measuring them again; until then these figures, which are not a measurement "
                "(see Source), are used; they are not cached, so the next start tries again")
    if details.get("cache"):
        return ("press r to measure them again now; these figures were measured but not cached (see Cache), "
                "so the next start measures them again")
    return "press r to measure them again now; until then these figures, cached for this machine, are used"


def note_rows(hw: Any) -> list[Row]:
    """What each probe could not see, and why."""
    # Without a GPU, the GPU row has said why once already.
    notes = {k: v for k, v in hw.notes.items() if hw.gpus or k not in ("gpu", "nvml")}
    if not notes:
        # The report lists every probe note, the GPU's too: never say nothing was missed when the GPU row did.
        return [("Probes", "besides the GPU (above), every probe read what it looks for" if hw.notes
                 else "every probe read what it looks for")]
    return [(probe, reason) for probe, reason in notes.items()]


def section(title: str) -> Row:
    """A section heading row."""
    return (title, None)


class HardwarePane(StepPane):
    """Detects the machine on start, then measures its ceilings in a worker."""

    STEP_ID = "hardware"
    RUN_LABEL = "Measure ceilings"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._remeasured = ""  # what the last r found, shown under the ceilings
        self._energy: list[Row] = []  # which energy counter each kind of work has, or why none

    def compose(self) -> ComposeResult:
        """What the tool does, the toolbar, progress, and the profile's sections."""
        yield Label(orientation(None, self.planner.host), id="intro", classes="hint")
        with Horizontal(classes="toolbar"):
            yield Button("Measure ceilings (r)", id="measure", compact=True)
            yield Tick("full (slower, more samples)", id="full", compact=True)
        yield RunProgress(id="progress")
        yield Notice(id="notice")
        with VerticalScroll(id="hw-scroll"):
            yield KeyValues([("Hardware", "detecting…")], id="machine")
            yield KeyValues([], id="ceilings", classes="section")
            yield KeyValues([], id="notes", classes="section")

    # -- actions -----------------------------------------------------------------------------
    def detect(self) -> None:
        """Detect the hardware (the app calls this on start)."""
        if self.start("detect", self._detect):
            self.query_one(RunProgress).begin("detecting hardware…")

    def run_step(self) -> None:
        """Measure the ceilings again now (quick unless 'full' is ticked), never just re-reading the cache."""
        if self.session.hw is None:
            self.notify("Hardware detection has not finished yet.", severity="warning")
            return
        self.measure(quick=not self.query_one("#full", Tick).value, refresh=True)

    def measure(self, *, quick: bool, refresh: bool = False) -> None:
        """Measure the ceilings in a worker: read from this machine's cache at start-up, measured again on `refresh`."""
        if self.start("ceilings", self._measure, quick, refresh):
            self.query_one(Notice).clear()
            kind = "quick" if quick else "full"
            what = "measuring the ceilings again" if refresh else "measuring ceilings"
            self.query_one(RunProgress).begin(f"{what} ({kind}: peak FLOP/s, memory bandwidth)…")

    @on(Button.Pressed, "#measure")
    def _measure_pressed(self) -> None:
        self.run_step()

    # -- workers -----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, name="detect", group="hardware")
    def _detect(self) -> None:
        # The engine's handshake carries the host's hardware: show it the moment the engine is up.
        self.planner.connect_engine()
        self.app.call_from_thread(self.sync)
        hw = self.session.detect()
        # Probed in the engine: a Raspberry Pi's probe runs vcgencmd.
        self._energy = energy_rows(self.session.energy_counters)
        # Resolving "auto" may import torch in the engine to ask whether CUDA works: off the UI thread.
        if self.session.target is None:
            self.session.set_target("auto")
        if self.session.requirements is None:
            self.session.set_requirements()
        self.report("detect", hw)

    @work(thread=True, exclusive=True, exit_on_error=False, name="ceilings", group="hardware")
    def _measure(self, quick: bool, refresh: bool) -> None:
        before = self.session.ceilings
        ceilings = self.session.measure_ceilings(quick=quick, refresh=refresh)
        self.report("ceilings", {"ceilings": ceilings, "refresh": refresh, "before": before})

    # -- results -----------------------------------------------------------------------------
    def engine_events(self, events: list) -> None:
        """The ceilings measurement reports one stage; show it."""
        self.query_one(RunProgress).apply(events)

    def job_done(self, job: str, result: Any) -> None:
        """Show the profile or the ceilings; on start, go on to measure the ceilings."""
        progress = self.query_one(RunProgress)
        if job == "detect":
            progress.end(f"detected: {result.cpu.model}, {result.device_class.label}")
            self.planner.startup_continue("detect")
        elif job == "ceilings":
            if result["refresh"]:
                # The progress line has room for a few words; the figures go under the ceilings and in a toast.
                self._remeasured = remeasured_text(result["ceilings"], result["before"])
                progress.end("ceilings measured again")
                self.notify(self._remeasured, title="Ceilings measured again", timeout=8)
                self.sync()
            else:
                progress.end("ceilings ready (below)")
            self.planner.startup_continue("ceilings")

    def job_failed(self, job: str, error: BaseException) -> None:
        """Show the error in place; the rest of the planner still works without ceilings."""
        self.query_one(RunProgress).end(f"{self.planner.job_title(job)} failed", ok=False)
        super().job_failed(job, error)
        if job == "detect" and self.session.hw is None:
            self.query_one("#machine", KeyValues).set_rows([("Hardware", "not detected: see the error above")])
        if job == "ceilings":
            self.planner.startup_continue("ceilings")

    def sync(self) -> None:
        """Show what the session knows about the machine."""
        held = self.session.state.llm
        self.query_one("#intro", Label).update(orientation(self.session.results.model, self.planner.host,
                                                           held.source if held is not None else None))
        hw, ceilings = self.session.hw, self.session.ceilings
        if hw is None:
            return
        self.query_one("#machine", KeyValues).set_rows([section("Machine"), *machine_rows(hw, self.planner.host),
                                                        *self._energy])
        self.query_one("#ceilings", KeyValues).set_rows(
            [section("Ceilings"), *(ceiling_rows(ceilings) if ceilings is not None else
                                    [("Status", "not measured yet: press r (the Profile step "
                                                "also measures them)")]),
             *([("Again", f"measured again now: {self._remeasured}") if self._remeasured else
                ("Again", remeasure_hint(ceilings))] if ceilings is not None else [])])
        self.query_one("#notes", KeyValues).set_rows([section("Software"), *software_rows(hw),
                                                       section("Probe notes"), *note_rows(hw)])

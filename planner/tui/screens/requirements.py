"""Step 3, Requirements: SLA, throughput, memory, size and accuracy targets, prefilled with the device defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Select

from planner import units
from planner.advice import defaults_for, load_requirements
from planner.errors import PlannerError, RequirementsError
from planner.tui.screens.base import StepPane
from planner.tui.widgets.notice import Notice

TARGETS = ("auto", "cpu", "nvidia", "edge")
PERCENTILES = ("p50", "p95", "p99")


@dataclass(frozen=True)
class Field:
    """One form field: the engine's requirement key, the Requirements attribute it fills, and how to show it."""

    key: str
    attr: str
    label: str
    to_form: Callable[[Any], float | None]


FIELDS: tuple[Field, ...] = (
    Field("latency_ms", "latency_ms", "Latency (ms)", lambda v: v),
    Field("min_throughput", "min_throughput", "Min samples/s", lambda v: v),
    Field("memory_mb", "memory_budget_bytes", "Memory (MiB)", lambda v: None if v is None else v / units.MIB),
    Field("model_size_mb", "model_size_budget_bytes", "Model size MiB", lambda v: None if v is None else v / units.MIB),
    Field("accuracy_drop", "accuracy_budget", "Accuracy drop", lambda v: v),
)


def number_text(value: float | None) -> str:
    """How a requirement number appears in its input: '50', '0.01', '' for no target."""
    if value is None:
        return ""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def source_text(source: str) -> str:
    """The engine's source label, with 'flag' (a value given explicitly) said as the TUI means it."""
    return "set here" if source == "flag" else source


class RequirementsPane(StepPane):
    """Edits apply as they are typed (when valid); invalid values are explained under their field."""

    STEP_ID = "requirements"
    RUN_LABEL = "Apply requirements"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._built = False
        self._defaults: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        """One row per requirement, each with its source and an error slot."""
        with VerticalScroll():
            yield Label("Waiting for hardware detection: the defaults depend on the device class.",
                        id="intro", classes="hint")
            note = Label("A language model is loaded: its plan does not check these targets; it chooses the "
                         "fastest candidate whose perplexity and KL divergence stay within their limits.",
                         id="llm-note", classes="hint")
            note.display = False  # until a language model is loaded
            yield note
            with Horizontal(classes="form-row"):
                yield Label("Target", classes="row-label")
                yield Select([(t, t) for t in TARGETS], value="auto", allow_blank=False, id="target",
                             compact=True)
                yield Label("", id="target-resolved", classes="source")
            with Horizontal(classes="form-row"):
                yield Label("Latency (ms)", classes="row-label")
                # A number field refuses letters as they are typed ('n' never becomes "1n").
                yield Input(id="req-latency_ms", compact=True, classes="number", type="number")
                yield Select([(p, p) for p in PERCENTILES], value="p95", allow_blank=False, id="percentile",
                             compact=True)
                yield Label("", id="src-latency_ms", classes="source")
            yield Notice(id="err-latency_ms")
            for field in FIELDS[1:]:
                with Horizontal(classes="form-row"):
                    yield Label(field.label, classes="row-label")
                    yield Input(id=f"req-{field.key}", compact=True, classes="number", type="number")
                    yield Label("", id=f"src-{field.key}", classes="source")
                yield Notice(id=f"err-{field.key}")
            yield Label("Blank means no target. Accuracy drop is a fraction (0.01 = 1%).", classes="hint")
            yield Notice(id="notice")

    # -- building the form -------------------------------------------------------------------
    def sync(self) -> None:
        """Fill the form with the device class's defaults once the hardware is known."""
        hw = self.session.hw
        self._say_whether_they_apply()
        if hw is None or self._built:
            self._show_sources()
            return
        self._built = True
        defaults = defaults_for(hw.device_class)
        current = self.session.requirements or defaults
        self.query_one("#intro", Label).update(
            f"Defaults for a {hw.device_class.label}: typical {defaults.tier} limits "
            "(the device performance targets). Edits apply as you type.")
        with self.prevent(Input.Changed, Select.Changed):
            for field in FIELDS:
                self._defaults[field.key] = number_text(field.to_form(getattr(defaults, field.attr)))
                self.query_one(f"#req-{field.key}", Input).value = number_text(
                    field.to_form(getattr(current, field.attr)))
            self._defaults["latency_percentile"] = str(defaults.latency_percentile)
            self.query_one("#percentile", Select).value = str(current.latency_percentile)
        self._show_sources()

    def _say_whether_they_apply(self) -> None:
        """A language model's plan judges its own way (TTFT, TPOT and fidelity limits): these targets are not
        checked for it, and the step says so above them."""
        note = self.query_one("#llm-note", Label)
        note.display = self.session.state.llm is not None

    def _show_sources(self) -> None:
        req = self.session.requirements
        if req is not None:
            for field in FIELDS:
                self.query_one(f"#src-{field.key}", Label).update(source_text(req.source(field.attr)))
        if self.session.target is not None:
            self.query_one("#target-resolved", Label).update(f"resolves to {self.session.target}")

    # -- applying ----------------------------------------------------------------------------
    def run_step(self) -> None:
        """Apply the form (it also applies on every valid edit)."""
        if self.apply():
            self.notify("Requirements applied.", timeout=3)

    @on(Input.Changed, ".number")
    @on(Select.Changed, "#percentile")
    def _edited(self) -> None:
        if self._built:
            self.apply()

    @on(Select.Changed, "#target")
    def _target_changed(self, event: Select.Changed) -> None:
        if not self._built or not isinstance(event.value, str):
            return
        try:
            resolved = self.session.set_target(event.value)
        except PlannerError as exc:
            self.query_one("#notice", Notice).show_exception(exc)
            return
        self.query_one("#target-resolved", Label).update(f"resolves to {resolved}")
        self.planner.requirements_changed()

    def overrides(self) -> tuple[dict[str, str], dict[str, RequirementsError]]:
        """The fields that differ from the defaults (as the engine's override keys) and each invalid field's error."""
        hw = self.session.detect()
        changed: dict[str, str] = {}
        errors: dict[str, RequirementsError] = {}
        for field in FIELDS:
            text = self.query_one(f"#req-{field.key}", Input).value.strip()
            if text == self._defaults.get(field.key, ""):
                continue
            value = text or "none"
            try:
                # The engine's own parser validates, so the form accepts exactly what the CLI does.
                load_requirements(device_class=hw.device_class, overrides={field.key: value})
            except RequirementsError as exc:
                errors[field.key] = exc
                continue
            changed[field.key] = value
        percentile = self.query_one("#percentile", Select).value
        if isinstance(percentile, str) and percentile != self._defaults.get("latency_percentile"):
            changed["latency_percentile"] = percentile
        return changed, errors

    def apply(self) -> bool:
        """Validate every field; when all are valid, set the session's requirements. True when applied."""
        if self.session.hw is None:
            return False
        changed, errors = self.overrides()
        for field in FIELDS:
            notice = self.query_one(f"#err-{field.key}", Notice)
            if field.key in errors:
                notice.show_exception(errors[field.key])
            else:
                notice.clear()
        if errors:
            return False
        try:
            self.session.set_requirements(overrides=changed)
        except PlannerError as exc:
            self.query_one("#notice", Notice).show_exception(exc)
            return False
        self.query_one("#notice", Notice).clear()
        self._show_sources()
        self.planner.requirements_changed()
        return True

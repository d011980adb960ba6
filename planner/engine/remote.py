"""`RemoteSession`: the engine's `PlanSession` as its client sees it, over the protocol.

Each step is a command to the engine; each answer carries the session's state, which this mirror keeps:
the results (`PlanResults`, as results.json holds them), which steps are done and which are out of
date, the output folder and the user's checklist replies. The TUI reads only this: the step rules, the
measuring and the model itself stay in the engine. Step methods block until the engine answers, so
the TUI calls them from its worker threads, as it called the in-process session.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from planner.engine import protocol as wire
from planner.engine.protocol import State
from planner.errors import PlannerError
from planner.events import EventSink, null_sink
from planner.pipeline.steps import Step
from planner.plugins.options import PluginOptions
from planner.results import PlanResults, from_data, results_from_data

if TYPE_CHECKING:
    from planner.advice import Answer
    from planner.engine.client import EngineClient
    from planner.hardware.ceiling_values import Ceilings
    from planner.hardware.profile import HardwareProfile
    from planner.models.llm import LlmFacts
    from planner.plugins.declarations import Catalog
    from planner.results import Baseline, CandidateResult, Deployment, ModelDescription, Requirements
    from planner.results.decisions import DecisionPathRecord, PlanRecord


CANCEL_GRACE_S = 5.0
"""How long a step asked to stop now may take before its engine is ended (it is stuck in native code)."""


class RemoteCancel:
    """The running step's cancel flag, on the engine's side: `cancel` sends the protocol's `cancel`."""

    def __init__(self, session: RemoteSession) -> None:
        self._session = session
        self._cancelled = threading.Event()

    def cancel(self, *, now: bool = False) -> None:
        """Ask the engine to stop the running step (after the current candidate, or `now`: then an engine that has
        not stopped within `CANCEL_GRACE_S` is stuck, and is ended with its measuring processes)."""
        self._cancelled.set()
        client = self._session.client
        if client is not None:
            client.cancel(now=now)
            if now:
                client.end_if_busy_after(CANCEL_GRACE_S)

    def reset(self) -> None:
        """A new run starts: it has not been cancelled."""
        self._cancelled.clear()

    @property
    def cancelled(self) -> bool:
        """Whether the last run was asked to stop."""
        return self._cancelled.is_set()


class RemoteSession:
    """The session the TUI drives: the same steps as `PlanSession`, run by the engine process."""

    def __init__(self, client: EngineClient | None, *, on_event: EventSink = null_sink) -> None:
        self.client: EngineClient | None = None
        self.connector: Callable[[], Any] | None = None  # starts the engine on the first step, when set
        self.on_event = on_event
        self.cancel = RemoteCancel(self)
        self.state = State()
        self.results = PlanResults()
        self._data: dict[str, Any] = {}  # the results' data, as the states' changes built it
        self._apply_lock = threading.Lock()
        self._answers: tuple[Any, tuple[Answer, ...]] | None = None
        self._catalog: Catalog | None = None
        if client is not None:
            self.attach(client)

    def attach(self, client: EngineClient) -> None:
        """Drive this engine (connected: its hello carries the host's hardware, shown before any step)."""
        self.client = client
        client.on_state = self.apply
        hardware = client.hello.hardware
        if hardware and self.results.hardware is None:
            from planner.hardware.profile import HardwareProfile

            self.results = PlanResults(hardware=from_data(hardware, HardwareProfile))

    # -- the state -----------------------------------------------------------------------------
    def apply(self, state: State) -> None:
        """Take the engine's state after a command (an error's state too: a failed step may have discarded). The
        client's reading thread calls this for every answer, in the order the engine sent them."""
        with self._apply_lock:
            data = {**self._data, **state.changed}
            for key in state.removed:
                data.pop(key, None)
            self._data = data
            self.state = state
            self.results = results_from_data(data) if data else PlanResults(hardware=self.results.hardware)

    def done_steps(self) -> frozenset[Step]:
        """The steps whose result is there and up to date, as the engine's session says."""
        return frozenset(Step(s) for s in self.state.done)

    def stale_steps(self) -> frozenset[Step]:
        """The steps whose result is kept but out of date."""
        return frozenset(Step(s) for s in self.state.stale)

    def is_done(self, step: Step) -> bool:
        """Whether `step`'s result is there and up to date."""
        return str(step) in self.state.done

    @property
    def hw(self) -> HardwareProfile | None:
        """The engine's host, detected."""
        return self.results.hardware

    @property
    def ceilings(self) -> Ceilings | None:
        """Its roofline ceilings, once measured (or read from the cache)."""
        return self.results.ceilings

    @property
    def model(self) -> ModelDescription | None:
        """The loaded model's description (inputs, parameters, size), or None."""
        return self.results.model

    @property
    def llm(self) -> LlmFacts | None:
        """The decoder LLM folder loaded in the model's place (its facts, from its config), or None."""
        held = self.state.llm
        if held is None:
            return None
        from planner.models.llm import LlmFacts

        return from_data(held.facts, LlmFacts)

    @property
    def target(self) -> str | None:
        """The deployment target, resolved."""
        return self.results.target

    @property
    def requirements(self) -> Requirements | None:
        """The requirements in force."""
        return self.results.requirements

    @property
    def baseline(self) -> Baseline | None:
        """The profiled baseline, or None."""
        return self.results.baseline

    @property
    def quick(self) -> bool:
        """Whether the profile (and so the candidates) ran in quick mode."""
        return self.results.quick

    @property
    def out_dir(self) -> Path | None:
        """The output folder, once chosen."""
        return Path(self.state.out_dir) if self.state.out_dir else None

    @property
    def replies(self) -> dict[str, str]:
        """The user's checklist replies, by question id."""
        return dict(self.state.replies)

    @property
    def answers(self) -> tuple[Answer, ...]:
        """The checklist's answers (each with its question and the replies it offers); the same object until
        the checklist changes."""
        records = self.results.checklist
        if self._answers is None or self._answers[0] != records:
            from planner.advice.checklist import answer_from_record

            self._answers = (records, tuple(answer_from_record(r, self.target) for r in records))
        return self._answers[1]

    @property
    def path(self) -> DecisionPathRecord | None:
        """The walk of the decision tree, or None before a plan."""
        return self.results.decision_path

    @property
    def plan(self) -> PlanRecord | None:
        """The plan, or None."""
        return self.results.plan

    def planned_plugins(self) -> list[str]:
        """The plugins the plan's steps name, in plan order, without repeats."""
        plan = self.plan
        return list(dict.fromkeys(name for s in plan.steps for name in s.plugins)) if plan else []

    # -- the steps -----------------------------------------------------------------------------
    def call(self, command: wire.Command) -> Any:
        """Run one command in the engine and wait; its events reach `on_event`, its state this mirror."""
        if self.client is None and self.connector is not None:
            self.connector()  # the first step starts the engine (it attaches itself)
        if self.client is None:
            raise PlannerError("the planner engine has not started yet", "wait a moment and try again")
        return self.client.request(command, on_event=self.on_event)

    def detect(self) -> HardwareProfile:
        """The hardware (the handshake already carried it; this asks again only when it did not)."""
        if self.hw is None:
            self.call(wire.Detect())
        if self.hw is None:
            raise PlannerError("the engine could not detect the hardware", "see the engine's log, then restart it")
        return self.hw

    def energy_counters(self) -> list[tuple[str, str]]:
        """Each kind of work's energy counter, or why there is none, as (label, text) rows."""
        return [(str(label), str(text)) for label, text in self.call(wire.Energy()) or []]

    def measure_ceilings(self, *, quick: bool = False, refresh: bool = False) -> Ceilings | None:
        """Measure (or read the cached) ceilings."""
        self.call(wire.MeasureCeilings(quick=quick, refresh=refresh))
        return self.ceilings

    def demos(self) -> list[tuple[str, str]]:
        """The built-in demo models as (label, source) pairs."""
        return [(str(label), str(source)) for label, source in self.call(wire.Demos()) or []]

    def catalog(self) -> Catalog:
        """The declarations of every registered plugin (what the decision tree's actions name); asked once."""
        if self._catalog is None:
            from planner.plugins.declarations import Catalog

            self._catalog = from_data(self.call(wire.Catalog()), Catalog)
        return self._catalog

    def load(self, source: str, *, input_shape: str | None = None, inputs: list[str] | None = None,
             trust_code: bool = False, val_data: str | None = None, val_preset: str | None = None,
             output_kinds: list[str] | None = None) -> dict[str, Any]:
        """Load and check the model, with the validation folder, its images' preset and the `NAME=KIND` output
        kinds it is judged on; returns its description (as `planner inspect --json` prints it)."""
        return dict(self.call(wire.Load(source=source, input_shape=input_shape, inputs=inputs, trust_code=trust_code,
                                        val_data=val_data or None, val_preset=val_preset or None,
                                        output_kinds=list(output_kinds) if output_kinds else None)) or {})

    def set_target(self, target: str = "auto") -> str:
        """Resolve and record the deployment target."""
        return str(self.call(wire.SetTarget(target=target)))

    def set_requirements(self, *, toml_path: Path | None = None, overrides: dict | None = None,
                         device_class: str | None = None) -> Requirements | None:
        """Set the requirements (flags, then a TOML file, then the device class's defaults)."""
        self.call(wire.SetRequirements(toml_path=str(toml_path) if toml_path else None, overrides=overrides,
                                       device_class=device_class))
        return self.requirements

    def set_out_dir(self, out: Path | None) -> Path:
        """Choose and check the output folder."""
        return Path(self.call(wire.SetOutDir(out=str(out) if out else None)))

    def profile(self, *, quick: bool = False, timeout_s: float = 600.0,
                val_data: Path | None = None) -> Baseline | None:
        """Measure and analyse the baseline."""
        self.cancel.reset()
        self.call(wire.Profile(quick=quick, timeout_s=timeout_s, val_data=str(val_data) if val_data else None))
        return self.baseline

    def decide(self, *, replies: dict | None = None) -> PlanRecord | None:
        """Answer the checklist (with the user's `replies`, when given), walk the tree and make the plan."""
        self.call(wire.Decide(replies=dict(replies) if replies is not None else None))
        return self.plan

    def plugin_status(self) -> list[dict]:
        """Every registered plugin with whether it can run here, and why not."""
        return list(self.call(wire.Plugins()) or [])

    def optimize(self, *, plugins: list[str] | tuple[str, ...] | None = None, timeout_s: float = 300.0,
                 plugin_options: PluginOptions | None = None,
                 confirm: int | None = None) -> tuple[CandidateResult, ...]:
        """Build, measure, gate and rank the candidates of `plugins` (the plan's when None)."""
        self.cancel.reset()
        self.call(wire.Optimize(plugins=list(plugins) if plugins else None, timeout_s=timeout_s,
                                plugin_options=plugin_options, confirm=confirm))
        return self.results.candidates

    def deploy(self) -> tuple[Deployment, ...]:
        """Write the hand-over packages and record them."""
        self.call(wire.Deploy())
        return self.results.deployments

    def verify(self) -> wire.Verified:
        """Check the packages `deploy` wrote: the deploy/ folder and one verdict per package."""
        return from_data(self.call(wire.Verify()), wire.Verified)

    def finish(self, *, status: str | None = None, write_report: bool = True) -> wire.Finished:
        """Rank, check requirements and write results.json and the report; returns where they went."""
        return from_data(self.call(wire.Finish(status=status, write_report=write_report)), wire.Finished)

    def save(self) -> None:
        """Write results.json, if an output folder is set."""
        self.call(wire.Save())

    def plan_llm(self, *, prompt_lengths: tuple[int, ...] | list[int], new_tokens: int, quick: bool = True,
                 out: Path | None = None, plugins: list[str] | None = None, budget_s: float | None = None,
                 gguf: str | None = None) -> wire.LlmPlanned:
        """Plan the loaded decoder LLM in one run (cancelled with `cancel`, after the candidate being measured);
        returns where the plan went, how it ended, and the plan. `gguf` is a GGUF file on the engine's machine."""
        self.cancel.reset()
        return from_data(self.call(wire.PlanLlm(prompt_lengths=list(prompt_lengths), new_tokens=new_tokens,
                                                quick=quick, out=str(out) if out else None, plugins=plugins,
                                                budget_s=budget_s, gguf=gguf)), wire.LlmPlanned)


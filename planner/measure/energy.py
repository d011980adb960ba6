"""Energy per inference: the plan's counter read around a candidate's latency timing, net of idle power.

The worker reads the counter just before and after `time_callable` (`EnergyWindow`); the parent turns the
reading into joules per inference (`per_inference`). A figure is given only when the net energy stands
clearly above what the counter can resolve and the idle draw's own noise; otherwise the words say which.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from planner import units
from planner.hardware.energy import EnergyReadError, Meter, Reading, open_meter
from planner.results.energy_values import EnergySource, EnergyStatus, InferenceEnergy

RESOLUTION_STEPS = 10
"""The net energy must exceed this many of the counter's steps (a 10% quantisation error at most)..."""
NOISE_SIGMAS = 2.0
"""...plus this many times the idle draw's noise (its two halves' difference) over the window."""


def device_of(config: dict[str, Any]) -> str:
    """The device a candidate's config runs it on: 'cpu' unless it names a CUDA device."""
    return str(config.get("device") or "cpu").lower()


def covered(source: EnergySource | None, device: str) -> bool:
    """Whether the plan's counter is readable and sees work on `device`."""
    return bool(source is not None and source.available and source.counter is not None
                and source.counter.covers(device))


class EnergyWindow:
    """Worker side: `with EnergyWindow(source, device) as window: timing = ...`; then `window.reading`.

    With no usable counter for the device this does nothing and `reading` stays None. A counter that
    cannot be opened or read gives a Reading with the reason; the window is always closed, also when
    the timing raises.
    """

    def __init__(self, source: EnergySource | None, device: str, **meter_options: Any) -> None:
        self._source, self._device, self._options = source, device, meter_options
        self._meter: Meter | None = None
        self.reading: Reading | None = None

    def __enter__(self) -> EnergyWindow:
        if not covered(self._source, self._device):
            return self
        assert self._source is not None and self._source.counter is not None
        try:
            self._meter = open_meter(self._source.counter, **self._options)
        except EnergyReadError as exc:
            self.reading = Reading(None, 0.0, reason=f"could not open the counter: {exc}")
            return self
        self._meter.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._meter is None:
            return
        try:
            self.reading = self._meter.stop()
        finally:
            self._meter.close()


def per_inference(source: EnergySource | None, reading: Reading | None, *, calls: int,
                  device: str) -> InferenceEnergy | None:
    """Joules per inference from a window's reading, net of idle; None when the plan measured no energy at all."""
    if source is None:
        return None
    scope = source.scope
    if not source.available:
        fix = f". To make it readable: {source.fix}" if source.fix else ""
        return InferenceEnergy(EnergyStatus.UNAVAILABLE, scope=scope, reason=source.reason + fix)
    if not covered(source, device):
        return InferenceEnergy(EnergyStatus.NOT_COVERED, scope=scope,
                               reason=f"the {scope} counter does not see work on {device}")
    if reading is None:
        return InferenceEnergy(EnergyStatus.INVALID, scope=scope, reason="the measuring worker returned no reading")
    if not reading.valid or reading.joules is None:
        return InferenceEnergy(EnergyStatus.INVALID, scope=scope, reason=reading.reason, window_s=reading.seconds)
    if calls <= 0:
        return InferenceEnergy(EnergyStatus.INVALID, scope=scope, reason="no calls were timed in the window")
    idle_w = source.idle_w or 0.0
    idle_j = idle_w * reading.seconds
    net = reading.joules - idle_j
    floor = RESOLUTION_STEPS * reading.resolution_j + NOISE_SIGMAS * (source.idle_spread_w or 0.0) * reading.seconds
    common = dict(scope=scope, window_s=reading.seconds, calls=calls, gross_j=reading.joules, idle_j=idle_j)
    if net < -floor:
        # The window drew less than idle: the idle figure was taken while something else was running.
        return InferenceEnergy(EnergyStatus.INVALID, reason=(
            f"the window drew {units.sig(reading.watts)} W, less than the idle figure {units.sig(idle_w)} W "
            "(the idle power was measured while other work ran)"), **common)  # type: ignore[arg-type]
    if net <= floor:
        return InferenceEnergy(EnergyStatus.BELOW_RESOLUTION, reason=(
            f"{units.sig(net)} J over idle in {calls} calls is within the counter's resolution and the idle "
            f"draw's noise ({units.sig(floor)} J)"), **common)  # type: ignore[arg-type]
    return InferenceEnergy(EnergyStatus.MEASURED, joules=net / calls, reason=reading.note,
                           **common)  # type: ignore[arg-type]


IDLE_S = 2.0
"""The idle window before the baseline timing (split in two halves to know its noise)..."""
IDLE_S_QUICK = 1.0
"""...and a quick plan's, which stays small."""


def prepare_source(device: str, *, quick: bool = False, root: Any = None, nvml_module: Any | None = None,
                   vcgencmd: Any | None = None, reader: Any | None = None) -> EnergySource:
    """The plan's energy source for work on `device`: the counter found and the idle power measured on it.

    Runs once per plan, before the baseline is timed, with nothing else of the planner's running. Without
    a readable counter the source is unavailable with the reason (and the admin change that would help).
    The probe options (a fixture `root`, a fake NVML or vcgencmd, a file `reader`) are for tests.
    """
    from planner.hardware.energy import find_counter, measure_idle

    files = {"reader": reader} if reader is not None else {}
    probe = find_counter(**({"root": root} if root is not None else {}), device=device, nvml_module=nvml_module,
                         vcgencmd=vcgencmd, **files)
    counter = probe.counter
    if counter is None:
        return EnergySource(reason=probe.reason, fix=probe.fix, notes=probe.notes)
    found = dict(scope=counter.scope, source=counter.source, detail=counter.detail, notes=probe.notes)
    try:
        meter = open_meter(counter, nvml_module=nvml_module, vcgencmd=vcgencmd, **files)
    except EnergyReadError as exc:
        return EnergySource(reason=f"the {counter.source} counter could not be opened: {exc}",
                            **found)  # type: ignore[arg-type]
    try:
        idle = measure_idle(meter, IDLE_S_QUICK if quick else IDLE_S)
    finally:
        meter.close()
    if idle.watts is None:
        return EnergySource(reason=f"the idle power could not be measured: {idle.reason}",
                            **found)  # type: ignore[arg-type]
    return EnergySource(available=True, idle_w=idle.watts, idle_spread_w=idle.spread_w, idle_window_s=idle.seconds,
                        counter=counter, **found)  # type: ignore[arg-type]

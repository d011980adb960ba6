"""The interaction factor: whether an architecture change and a hardware technique amplify or cancel.

Four cells measured the same way (baseline, architecture only, hardware only, both); the factor is
the combined speedup divided by the product of the two single speedups.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.results.energy_values import InferenceEnergy

AMPLIFY_ABOVE = 1.05
CONFLICT_BELOW = 0.95
CELLS = ("baseline", "architecture", "hardware", "combined")
"""The four cells, in table order."""


@dataclass(frozen=True)
class InteractionCell:
    """One of the four measurements: what ran, its median latency, and its speedup over the baseline cell."""

    cell: str  # one of CELLS
    label: str
    p50_ms: float | None = None
    speedup: float | None = None
    status: str = "ok"
    reason: str = ""
    disturbed: bool = False  # the environment audit saw other load during every reading of this cell
    energy: InferenceEnergy | None = None  # joules per inference over the cell's timing (None: not measured)


@dataclass(frozen=True)
class Interaction:
    """One architecture change paired with one hardware candidate, its four cells and their interaction."""

    architecture: str  # the architecture candidate's label
    hardware: str  # the hardware candidate's label
    cells: tuple[InteractionCell, ...] = ()
    factor: float | None = None
    verdict: str = ""  # "amplify", "conflict", "independent", or "" when a cell failed
    needs_retraining: bool = False  # the architecture change is a redesign: speed measured, accuracy not
    method: str = ""  # how the cells were timed (one sentence)

    def cell(self, name: str) -> InteractionCell | None:
        """The cell called `name`, or None."""
        return next((c for c in self.cells if c.cell == name), None)

    @property
    def expected(self) -> float | None:
        """The combined speedup if the two changes were independent (architecture x hardware)."""
        arch, hw = self.cell("architecture"), self.cell("hardware")
        if arch is None or hw is None or not arch.speedup or not hw.speedup:
            return None
        return arch.speedup * hw.speedup


def interaction_factor(arch_speedup: float, hw_speedup: float, combined_speedup: float) -> float:
    """Combined speedup / (architecture speedup x hardware speedup)."""
    if arch_speedup <= 0 or hw_speedup <= 0:
        raise ValueError("speedups must be positive")
    return combined_speedup / (arch_speedup * hw_speedup)


def verdict(factor: float) -> str:
    """amplify above 1.05, conflict below 0.95, else independent."""
    if factor > AMPLIFY_ABOVE:
        return "amplify"
    if factor < CONFLICT_BELOW:
        return "conflict"
    return "independent"


VERDICT_WORDS = {
    "amplify": "the two amplify each other: together they gain more than their gains multiplied",
    "conflict": "the two conflict: together they gain less than their gains multiplied",
    "independent": "the two are independent: together they gain about their gains multiplied",
}
"""A plain sentence per verdict, for the report and the TUI."""

"""The plan's fidelity gate as a plugin sees it (`ctx.gate`): the test every measured candidate faces.

A plugin that chooses among settings of a change it makes itself (how far to prune, which rank to
keep) must choose by the test the measured candidate will face: the same inputs, the same labels,
the same gate for its precision, the same accuracy budget. The engine implements that test once
(`planner.measure.fidelity.judge_outputs`, offered as `planner.measure.gate.PlanGate`), and the
pipeline hands it to plugins through the plan context, so no plugin keeps rules of its own.

The plugin runs the original and its changed model on `gate.inputs()` the same way (same device,
same precision) and hands both outputs to `gate.judge`: differences between devices are not what
is judged. How a failure reads in a plugin's own candidates ("needs fine-tuning") is the plugin's
to say; the verdict gives the gate's reason, the test that decided and the data it was judged on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence, runtime_checkable

from planner.plugins.precision import Precision

if TYPE_CHECKING:
    import numpy as np

    from planner.models.loaded import Feed
    from planner.results.values import Fidelity


@dataclass(frozen=True)
class Verdict:
    """What the plan's fidelity gate says about one set of outputs.

    `why` is '' when they pass, else the gate's reason in plain words; `decided_by` names the test
    that decided; `data` says what the inputs were ("--val-data", "generated inputs"). Where the
    check cannot judge (the original's outputs barely depend on the inputs, as with random weights),
    `why` is '' yet the outputs did not pass: the verdict is `undecided`, and `decided_by` says why
    and which data would settle it.
    """

    why: str
    decided_by: str
    fidelity: "Fidelity | None"
    data: str

    @property
    def undecided(self) -> bool:
        """Whether the check could not judge these outputs (nothing on these inputs could fail them)."""
        return not self.why and self.fidelity is not None and bool(self.fidelity.cannot_judge)

    @property
    def passed(self) -> bool:
        """Whether the outputs pass the gate (never where it could not judge them)."""
        return not self.why and not self.undecided

    @property
    def by_accuracy(self) -> bool:
        """Whether accuracy on labelled data decided (else agreement with the original's outputs)."""
        fid = self.fidelity
        return fid is not None and fid.accuracy is not None and fid.reference_accuracy is not None

    def measured(self) -> str:
        """What was measured, in one phrase: the accuracies with labels, else the outputs' cosine similarity."""
        fid = self.fidelity
        if fid is None:
            return f"no comparison on {self.data}"
        if self.by_accuracy:
            return f"accuracy {fid.accuracy:.2%} against the original's {fid.reference_accuracy:.2%} on {self.data}"
        return f"cosine {fid.cosine:.5f} on {self.data}"

    def line(self) -> str:
        """One line for a log: what was measured, then why it fails or the test it passed."""
        if self.undecided:
            return f"{self.measured()} — {self.decided_by}"
        return f"{self.measured()} — {self.why or 'passes: ' + self.decided_by}"


@runtime_checkable
class Gate(Protocol):
    """The plan's fidelity gate: the inputs candidates are compared on, and the rule that judges them."""

    def inputs(self) -> Sequence["Feed"]:
        """The inputs every candidate and the original are compared on (validation data, else generated)."""

    def judge(self, reference: Sequence["np.ndarray"], outputs: Sequence["np.ndarray"], *,
              precision: Precision | str = Precision.FP32, changes_function: bool = False) -> Verdict:
        """Judge `outputs` against `reference` (one array per input of `inputs()`) as a measured candidate is.

        `changes_function`: the candidate computes a different function by design (pruning, low rank):
        with labels, accuracy alone decides, since its outputs cannot match the original's closely.
        """

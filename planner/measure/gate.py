"""The plan's fidelity gate handed to plugins (`ctx.gate`): the measured candidates' inputs, labels and rule.

A plugin that picks a setting before measuring (the approximate architecture plugins) is judged by
`judge_outputs`, the rule the pipeline applies to every measured candidate, on the inputs the
measuring worker compares on: the plan's validation data (its judged part, `split_val_data`) with its
labels, else the generated fidelity inputs. Only what differs by design stays out: the plugin runs the
original itself, the same way it runs its change, so the two differ by the change alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from planner.measure.evaluate import fidelity_batch_count, fidelity_inputs
from planner.measure.fidelity import judge_outputs, settle_words
from planner.models.valdata import split_val_data
from planner.plugins.contract import Precision
from planner.plugins.gate import Verdict

if TYPE_CHECKING:
    import numpy as np

    from planner.models.loaded import Feed
    from planner.models.spec import ModelInputs
    from planner.plugins.contract import PlanContext

GENERATED = "generated inputs"
"""What the compared inputs are when the plan has no validation data."""


@dataclass
class PlanGate:
    """The plan's fidelity gate (a `planner.plugins.gate.Gate`): built once per plan, read lazily.

    The validation data is read on the first `inputs()` or `judge()`, so a plan whose plugins never
    ask pays nothing for it.
    """

    model_inputs: "ModelInputs"
    quick: bool = False
    val_data: Path | None = None
    val_data_basis: str = "--val-data"  # what the validation data is, in words
    accuracy_budget: float | None = None
    output_kind: str | None = None  # the kind given with --output-kind; None: read from the shape
    output_kind_basis: str = ""
    _loaded: tuple[list["Feed"], list["np.ndarray"] | None] | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_context(cls, ctx: "PlanContext") -> "PlanGate":
        """The gate for a plan context's model, quick setting, validation data, budget and `--output-kind`."""
        kind = ctx.options.output_kind
        return cls(ctx.model.inputs, quick=ctx.quick, val_data=ctx.val_data, val_data_basis=ctx.val_data_basis,
                   accuracy_budget=ctx.accuracy_budget, output_kind=kind or None,
                   output_kind_basis=ctx.options.output_kind_basis if kind else "")

    @property
    def data(self) -> str:
        """What the compared inputs are, in words."""
        return self.val_data_basis if self.val_data is not None else GENERATED

    def _data(self) -> tuple[list["Feed"], list["np.ndarray"] | None]:
        # The same inputs, in the same order, as the measuring worker compares on (evaluate.run_job).
        if self._loaded is None:
            if self.val_data is not None:
                pairs = split_val_data(Path(self.val_data), inputs=self.model_inputs).judged
                labels = [lab for _, lab in pairs if lab is not None]
                self._loaded = ([feed for feed, _ in pairs], labels if len(labels) == len(pairs) else None)
            else:
                self._loaded = (fidelity_inputs(self.model_inputs, count=fidelity_batch_count(self.quick)), None)
        return self._loaded

    def inputs(self) -> Sequence["Feed"]:
        """The inputs every candidate and the original are compared on."""
        return self._data()[0]

    def judge(self, reference: Sequence["np.ndarray"], outputs: Sequence["np.ndarray"], *,
              precision: Precision | str = Precision.FP32, changes_function: bool = False) -> Verdict:
        """Judge `outputs` against `reference` by the rule measured candidates meet (`judge_outputs`).

        Where the check cannot judge, the verdict is undecided (`Verdict.undecided`), never passed, and its
        test says which data would settle it.
        """
        why, decided_by, fid = judge_outputs(reference, outputs, labels=self._data()[1], precision=precision,
                                             accuracy_budget=self.accuracy_budget,
                                             changes_function=changes_function, kind=self.output_kind,
                                             kind_basis=self.output_kind_basis)
        if fid is not None and fid.cannot_judge and not why:
            decided_by += f", on {self.data}; {settle_words(self.val_data is None)}"
        return Verdict(why=why, decided_by=decided_by, fidelity=fid, data=self.data)

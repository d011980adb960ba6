"""What a model is judged on, given with it: the validation folder (`--val-data`), how its images or clips become
inputs (`--val-preset` and the rest of `SampleOptions`) and the compared output's kind (`--output-kind`).

`PlanSession.load` checks them against the model it loads, before that model replaces the previous one, so a
folder that is not there or a kind that does not parse fails on loading (the TUI's Model step; `planner plan`
before any measuring) with the checks of `planner.models.valdata`, `planner.models.samples` and
`planner.measure.fidelity`; the profile and the candidates then read them from the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from planner.models.samples import SampleOptions


@dataclass(frozen=True)
class ValidationSetup:
    """The validation data and output kind a model was loaded with (the defaults: none given)."""

    val_data: Path | None = None  # the user's folder; None: a demo's own held-out set, else generated inputs
    samples: SampleOptions | None = None  # how its images or clips become inputs
    output_kinds: tuple[str, ...] = ()  # the NAME=KIND specs as given
    # The compared output's kind as `parse_kind` reads it ("dense", "ctc:5") and how it was given; None: read from the
    # output's shape.
    output_kind: tuple[str, str] | None = None

    @property
    def val_preset(self) -> str | None:
        """The normalisation preset named for the folder's images, if one was."""
        return self.samples.preset if self.samples is not None else None


def checked_setup(model: Any, *, val_data: Path | None = None, samples: SampleOptions | None = None,
                  output_kinds: Sequence[str] = ()) -> ValidationSetup:
    """The setup for `model` (a LoadedModel), once each part is checked: a clear PlannerError otherwise.

    The folder is checked to be one, not read: converting its images happens once, when the profile measures.
    """
    from planner.measure.fidelity import kind_of_model
    from planner.models.samples import preset_named
    from planner.models.valdata import check_folder

    if val_data is not None:
        val_data = check_folder(val_data)
    if samples is not None and samples.preset:
        preset_named(samples.preset)
    specs = tuple(str(s) for s in output_kinds)
    return ValidationSetup(val_data=val_data, samples=samples, output_kinds=specs,
                           output_kind=kind_of_model(specs, model) if specs else None)

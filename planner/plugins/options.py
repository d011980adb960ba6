"""What the user's command line tells every plugin, typed: each field is one flag's value, given to a plugin as
`PlanContext.options` and carried by the engine's Optimize command."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PluginOptions:
    """The command line's words for the plugins (the defaults: nothing was said)."""

    device: str | None = None  # --device: the edge board the plan is for
    output_kind: str | None = None  # --output-kind for the compared output; None: its shape says
    output_kind_basis: str = ""  # how that kind was given, in words
    finetune_steps: int | None = None  # --finetune-steps, as many as the validation data affords

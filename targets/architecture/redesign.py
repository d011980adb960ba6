"""Redesigns the planner can build and time but not train: the variant the analysis proposes.

For the inefficient demo, the efficient layout (3x3 stacks, channels divisible by 8, ReLU, a
depthwise-separable head) with fresh random weights; for the upsampling demo, the same weights run
at the input's native resolution. Their speed is measured like any candidate; their accuracy is not
(they need retraining), which the result says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins import ActionId, Arithmetic, PlanContext
from targets import wording
from targets.architecture import REDESIGN, ArchitecturePlugin

if TYPE_CHECKING:
    from planner.models.loaded import LoadedModel

# Model source -> (what the redesign is, how it is built).
REDESIGNS = {
    "demo:inefficient": "the efficient layout: 3x3 stacks, channels divisible by 8, ReLU, depthwise-separable "
                        "head (random weights: shapes differ)",
    "demo:upsampling": "native resolution: the same weights without the 224x224 upsampling inside forward",
}


class _NativeResolution:
    """Builds the upsampling demo's layers run on the input as it comes (no interpolation)."""

    @staticmethod
    def build(original: Any) -> Any:
        import torch
        from torch import nn

        class NativeResolution(nn.Module):
            """The upsampling classifier's layers, run at the input's own resolution."""

            def __init__(self, inner: nn.Module) -> None:
                super().__init__()
                self.features, self.pool, self.fc = inner.features, inner.pool, inner.fc

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                """Classify without upsampling first."""
                return self.fc(torch.flatten(self.pool(self.features(x)), 1))  # type: ignore[operator]

        return NativeResolution(original).eval()


class RedesignPlugin(ArchitecturePlugin):
    """The proposed redesign of a known model, timed through the same plugins; accuracy needs retraining."""

    name = "architecture.redesign"
    title = "Redesign"
    actions = (ActionId.SMALLER_ARCHITECTURE,)
    arithmetic = Arithmetic.STRUCTURAL
    plan_note = ("Measured here where the planner can build the redesign: its speed, not its accuracy "
                 "(it needs retraining).")
    summary = "redesign (needs retraining): the layout the analysis proposes, speed measured, accuracy not"
    kind = REDESIGN

    def rewrite(self, module: Any, config: dict, loaded: "LoadedModel") -> tuple[Any, list[str]]:
        """The redesign for this model's source."""
        import copy

        import torch

        from targets.architecture.transforms import NotApplicableError

        source = loaded.source.text
        if source not in REDESIGNS:
            raise NotApplicableError(f"the planner knows no redesign for {source}: the profile's findings say what to "
                                "change; build and train the redesign, then plan it as its own model")
        if source == "demo:upsampling":
            return _NativeResolution.build(copy.deepcopy(module)), [REDESIGNS[source]]
        from planner.models.demo import EfficientClassifier

        # Seeded like every loaded model, so each worker builds the same random weights.
        torch.manual_seed(0)
        return EfficientClassifier().eval(), [REDESIGNS[source]]

    def change_words(self, config: dict) -> tuple[str, str]:
        """A redesign is built and trained by the user: no call applies it."""
        return ("Redesigned architecture (needs retraining)",
                wording.comment("no torch call: build the layout the findings propose, train it, then plan it as its "
                                "own model"))

    def settings(self, ctx: PlanContext) -> Iterable[tuple[dict, str]]:
        """One setting: the known redesign."""
        yield {"plugin": self.name}, "redesign (needs retraining)"

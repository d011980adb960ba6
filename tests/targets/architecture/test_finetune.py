"""Fine-tuning a pruned model that failed the fidelity gate: accuracy measured before and after, weights that travel."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from cpu_plugin_helpers import fake_hw

from planner.errors import PlannerError
from planner.measure.gate import PlanGate
from planner.plugins import ModelRef, PlanContext, get_plugin
from planner.plugins.options import PluginOptions
from targets.architecture.finetune import FinetuneError, accuracy, finetune, training_data


def _labelled(model, folder: Path, *, batches: int = 4, rows: int = 64) -> Path:
    """A labelled --val-data folder: the class is which of the first two colour channels is brighter, and how."""
    folder.mkdir()
    rng = np.random.default_rng(3)
    for i in range(batches):
        shift = rng.choice([-1.0, 1.0], size=(rows, 2))
        x = rng.standard_normal((rows, 3, 32, 32)).astype(np.float32)
        x[:, :2] += shift[:, :, None, None].astype(np.float32)
        y = ((shift[:, 0] > 0) + 2 * (shift[:, 1] > 0)).astype(np.int64)  # 4 classes of the 10 outputs
        np.save(folder / f"batch{i}.npy", x)
        np.save(folder / f"batch{i}_labels.npy", y)
    return folder


def _gated(ctx: PlanContext) -> PlanContext:
    """The context with the plan's fidelity gate, as the pipeline gives it."""
    ctx.gate = PlanGate.for_context(ctx)
    return ctx


class _FailingGate(PlanGate):
    """The plan's gate on the same data, made to fail every setting.

    demo:tiny's random weights guess one class whatever is pruned, so no setting loses accuracy on
    its own; the real gate's verdict on these labels has its own test.
    """

    def judge(self, reference, outputs, **kwargs):
        """The real verdict with a failing reason."""
        verdict = super().judge(reference, outputs, **kwargs)
        return dataclasses.replace(verdict, why="accuracy 20.00% is 60.00% below the original's 80.00%")


def _failing(ctx: PlanContext) -> PlanContext:
    ctx.gate = _FailingGate.for_context(ctx)
    return ctx


def test_finetune_raises_accuracy_on_a_tiny_labelled_problem() -> None:
    torch.manual_seed(0)
    x = torch.randn(256, 4)
    y = (x[:, 0] + x[:, 1] > 0).long()  # a linearly separable rule a few steps can learn
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    result = finetune(model, x, y, steps=150, data_basis="synthetic")
    assert result.accuracy_after > result.accuracy_before
    assert result.accuracy_after == pytest.approx(accuracy(model, x, y))
    assert "fine-tuned: 150 steps" in result.note() and "before fine-tuning" in result.note()


def test_with_labels_a_setting_that_keeps_accuracy_passes_without_training(tiny, tmp_path: Path) -> None:
    # demo:tiny's random weights guess at chance on these labels; pruning half of conv2 guesses no worse.
    val = _labelled(tiny, tmp_path / "val")
    logs: list[str] = []
    ctx = _gated(PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path / "artifacts", quick=True, val_data=val,
                             log=logs.append))
    specs = list(get_plugin("architecture.prune").candidates(ctx))
    assert [s.label for s in specs] == ["prune 50% channels (L1)"]
    assert any("keeps accuracy on the labelled data within budget" in n for n in specs[0].notes)
    assert any("accuracy" in line and "against the original's" in line for line in logs)


def test_a_failing_prune_is_fine_tuned_into_a_candidate_labelled_as_such(tiny, tmp_path: Path) -> None:
    val = _labelled(tiny, tmp_path / "val")
    ctx = _failing(PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path / "artifacts", quick=True, val_data=val,
                               options=PluginOptions(finetune_steps=120)))
    specs = list(get_plugin("architecture.prune").candidates(ctx))
    assert [s.label for s in specs] == ["prune 50% channels (L1) (needs fine-tuning)",
                                        "prune 50% channels (L1), fine-tuned 120 steps"]
    tuned = specs[1]
    record = tuned.config["transform"]["finetuned"]
    assert record["steps"] == 120 and record["accuracy_after"] > record["accuracy_before"]
    assert tuned.config["finetune_steps"] == 120 and tuned.config["architecture"] == "fine-tuned"
    assert any(n.startswith("fine-tuned: 120 steps") for n in tuned.notes)
    from planner.plugins.expectation import _FIXED_BANDS

    assert get_plugin("architecture.prune").prediction_family(tuned) in _FIXED_BANDS  # a band that fits pruning
    assert Path(record["weights"]).is_file()

    # A worker re-applies the rewrite and loads the trained weights: its accuracy is the one recorded.
    session = get_plugin("architecture.prune").open(tuned, ModelRef.of(tiny))
    x, y, _ = training_data(ctx)
    assert accuracy(session.module, x, y) == pytest.approx(record["accuracy_after"])
    untuned = get_plugin("architecture.prune").open(specs[0], ModelRef.of(tiny))
    assert accuracy(untuned.module, x, y) == pytest.approx(record["accuracy_before"])


def test_fine_tuned_weights_that_changed_on_disk_are_refused(tiny, tmp_path: Path) -> None:
    val = _labelled(tiny, tmp_path / "val", batches=1)
    ctx = _failing(PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path / "artifacts", quick=True, val_data=val,
                               options=PluginOptions(finetune_steps=2)))
    tuned = list(get_plugin("architecture.prune").candidates(ctx))[-1]
    Path(tuned.config["transform"]["finetuned"]["weights"]).write_bytes(b"not the weights")
    ref = dataclasses.replace(ModelRef.of(tiny), transform=tuned.config["transform"])
    with pytest.raises(FinetuneError, match="changed since the plan wrote them"):
        ref.load()


def test_fine_tuning_without_labels_is_a_clear_error(tiny, tmp_path: Path) -> None:
    from planner.pipeline.run import _finetune_steps

    unlabelled = tmp_path / "unlabelled"
    unlabelled.mkdir()
    np.save(unlabelled / "batch0.npy", np.zeros((4, 3, 32, 32), dtype=np.float32))
    for folder in (None, unlabelled):
        with pytest.raises(PlannerError, match="needs labelled data") as caught:
            _finetune_steps(200, folder)
        assert "ternary" not in str(caught.value) and "--val-data" in caught.value.fix
    ctx = _failing(PlanContext(hw=fake_hw(), model=tiny, workdir=tmp_path, quick=True, val_data=unlabelled,
                               options=PluginOptions(finetune_steps=5)))
    with pytest.raises(FinetuneError, match="needs labelled data"):
        list(get_plugin("architecture.prune").candidates(ctx))

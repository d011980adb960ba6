"""A real plan with --val-data on a folder of PNGs: the report says what agreement was measured on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from trait_models import constant_weights_classifier

from planner.pipeline import PlanOptions, run_plan

pytestmark = pytest.mark.worker  # a real plan: the baseline and candidates are measured in workers


def test_plan_on_a_folder_of_pngs_measures_agreement_on_those_images(tmp_path: Path) -> None:
    model = constant_weights_classifier(tmp_path / "cls.onnx", size=16, width=8)
    pngs = tmp_path / "pngs"
    pngs.mkdir()
    rng = np.random.default_rng(0)
    for i in range(4):
        Image.fromarray(rng.integers(0, 256, (20, 24, 3), dtype=np.uint8)).save(pngs / f"img{i}.png")
    Image.fromarray(rng.integers(0, 256, (16, 16), dtype=np.uint8), mode="L").save(pngs / "img4_grey.png")
    (pngs / "img5_broken.png").write_bytes(b"not a png")
    out = tmp_path / "plan"
    outcome = run_plan(PlanOptions(model=str(model), target="cpu", quick=True, confirm=0, no_deploy=True, out=out,
                                   val_data=pngs, plugins=("cpu.onnxruntime",)))
    val = outcome.results.validation
    assert val is not None and val.folder == str(pngs.resolve()) and val.samples == 5 and val.labels is False
    assert "5 images from" in val.description and "imagenet preset (default for 3-channel inputs)" in val.description
    assert "img5_broken.png" in val.skipped
    assert any("img5_broken.png" in w for w in outcome.results.warnings)
    measured = [c for c in outcome.results.candidates if c.plugin == "cpu.onnxruntime" and c.status == "ok"]
    assert measured and measured[0].fidelity is not None and measured[0].fidelity.cosine is not None
    report = (out / "report.md").read_text() + (out / "evidence.md").read_text()
    assert "**Validation data** (--val-data): agreement with the original model (no labels, so no accuracy) " \
           "was measured on 5 images from" in report
    assert "skipped 1 of 6 files: img5_broken.png" in report
    # The converted batches, not the PNGs, are what the workers read.
    assert sorted(p.name for p in (out / "artifacts" / "val-data").glob("*.npz")) == ["batch00000.npz"]

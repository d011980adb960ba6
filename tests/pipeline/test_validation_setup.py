"""What a model is judged on, given when it is loaded (planner/pipeline/validation_setup.py): checked then, kept by
the session, and used by the profile and the candidates as `planner plan --val-data/--output-kind` use them."""

from __future__ import annotations

import pytest

from planner.errors import PlannerError
from planner.models.samples import SampleOptions
from planner.pipeline import PlanOptions, PlanSession, run_plan
from planner.pipeline.validation_setup import checked_setup


@pytest.fixture(scope="module")
def tiny():
    from planner.models import load_model

    return load_model("demo:tiny")


def test_each_part_is_checked_with_the_clear_error_of_its_own_module(tiny, tmp_path):
    a_file = tmp_path / "batch.npy"
    a_file.write_text("")
    with pytest.raises(PlannerError, match=r"--val-data .*batch\.npy is a file, not a folder"):
        checked_setup(tiny, val_data=a_file)
    with pytest.raises(PlannerError, match="--val-preset 'sepia' is not a preset") as preset:
        checked_setup(tiny, val_data=tmp_path, samples=SampleOptions(preset="sepia"))
    assert preset.value.fix == "use one of imagenet, unit, symmetric"
    with pytest.raises(PlannerError, match="the model has no output named 'logits'"):
        checked_setup(tiny, output_kinds=("logits=classes",))
    setup = checked_setup(tiny, val_data=tmp_path, samples=SampleOptions(preset="unit"), output_kinds=("0=regression",))
    assert (setup.val_data, setup.val_preset, setup.output_kinds) == (tmp_path, "unit", ("0=regression",))
    assert setup.output_kind is not None and setup.output_kind[0] == "regression"


def test_a_load_that_fails_its_checks_keeps_the_model_and_setup_before_it(tmp_path):
    session = PlanSession()
    session.load("demo:tiny", val_data=tmp_path, output_kinds=("0=regression",))
    with pytest.raises(PlannerError, match="does not exist"):
        session.load("demo:tiny", val_data=tmp_path / "gone")
    assert session.given.val_data == tmp_path and session.given.output_kinds == ("0=regression",)


@pytest.mark.worker
def test_a_plans_output_kind_given_with_the_model_judges_its_candidates(tmp_path):
    # One candidate is enough to see how candidates are judged: folding demo:tiny's BatchNorm (exact) is its
    # plugin's only one, where ONNX Runtime's would be an export and three workers.
    outcome = run_plan(PlanOptions(model="demo:tiny", target="cpu", quick=True, confirm=0, no_deploy=True,
                                   out=tmp_path / "o",
                                   output_kinds=("output=regression",), plugins=("architecture.fold",)))
    judged = [c.fidelity for c in outcome.results.candidates[1:] if c.fidelity is not None]
    assert judged and {f.output_kind for f in judged} == {"regression"}

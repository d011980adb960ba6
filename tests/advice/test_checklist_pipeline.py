"""The checklist's bottleneck question answered from a split `--pipeline` recorded (no worker): the measured
answer reads like a user's reply to the trees, and a failed or missing split leaves the question to the user."""

from __future__ import annotations

from plugin_catalog import CATALOG

from planner.advice import AnswerStatus, answer_checklist, defaults_for, evaluate_tree, make_plan
from planner.codec import to_data
from planner.results import PipelineSplit


def _split(pre: float, model: float, post: float | None) -> PipelineSplit:
    return PipelineSplit(pipeline="serve.py:decode,top5", runtime="torch eager fp32 (cuda)", requests=200,
                         distinct_samples=32, samples_from="samples() in serve.py", preprocess_ms=pre,
                         model_ms=model, postprocess_ms=post, request_p50_ms=pre + model + (post or 0.0))


def _gpu_baseline(make_baseline, split: PipelineSplit | None) -> dict:
    base = make_baseline(device="cuda", target="nvidia", gpu_utilization=20, p50=80.0, p95=90.0)
    return {**base, "pipeline": to_data(split)} if split is not None else base


def _answer(hw, baseline: dict, target: str = "nvidia"):
    group = "gpu" if target == "nvidia" else target
    return {a.id: a for a in answer_checklist(target, hw, baseline)}[f"{group}.preprocessing"]


def test_a_split_where_the_model_is_a_small_part_answers_the_work_around_it(a100_server, make_baseline) -> None:
    baseline = _gpu_baseline(make_baseline, _split(pre=7.0, model=2.0, post=1.0))
    answer = _answer(a100_server, baseline)
    assert answer.status == AnswerStatus.AUTO
    assert answer.answer == "The work around it: model 20% of the request, preprocessing 70%, postprocessing 10%"
    assert answer.value == {"around_model": True, "model_share": 0.2, "preprocess_share": 0.7,
                            "postprocess_share": 0.1}
    assert "requests cycling over 32 distinct samples (samples() in serve.py)" in answer.evidence
    assert "median over 200 requests: preprocessing 7 ms, model 2 ms, postprocessing 1 ms" in answer.evidence
    assert "under 50% of the request" in answer.evidence
    # The trees read it as they read a user's reply: the preprocessing step is advised.
    req = defaults_for("datacenter_gpu")
    answers = answer_checklist("nvidia", a100_server, baseline, requirements=req)
    path = evaluate_tree("nvidia", a100_server, baseline, req, answers, catalog=CATALOG)
    node = next(n for n in path.visited if n.id == "gpu.2.preprocessing")
    assert node.result == "recommended" and "measured with --pipeline: The work around it" in node.evidence
    plan = make_plan(target="nvidia", hw=a100_server, baseline=baseline, requirements=req, answers=answers,
                     catalog=CATALOG)
    assert any("preprocessing" in s.title for s in plan.steps)


def test_a_split_where_the_model_dominates_rules_out_preprocessing_advice(a100_server, make_baseline) -> None:
    baseline = _gpu_baseline(make_baseline, _split(pre=1.0, model=9.0, post=None))
    answer = _answer(a100_server, baseline)
    assert answer.status == AnswerStatus.AUTO and answer.value["around_model"] is False
    assert answer.answer == "The model itself: model 90% of the request, preprocessing 10%"
    req = defaults_for("datacenter_gpu")
    answers = answer_checklist("nvidia", a100_server, baseline, requirements=req)
    plan = make_plan(target="nvidia", hw=a100_server, baseline=baseline, requirements=req, answers=answers,
                     catalog=CATALOG)
    assert not any("preprocessing" in s.title for s in plan.steps)


def test_a_pipeline_that_failed_leaves_the_question_to_the_user_with_the_reason(cpu_server, make_baseline) -> None:
    failed = PipelineSplit(pipeline="serve.py:decode", error="decode raised ValueError: bad PNG",
                           fix="fix decode (call it on one of your samples in Python to see the traceback)")
    answer = _answer(cpu_server, {**make_baseline(), "pipeline": to_data(failed)}, target="cpu")
    assert answer.status == AnswerStatus.ASK_USER
    assert "decode raised ValueError: bad PNG" in answer.evidence and "fix decode" in answer.evidence
    assert answer.value is None


def test_without_a_pipeline_the_prompt_names_the_option(cpu_server, make_baseline) -> None:
    answer = _answer(cpu_server, make_baseline(), target="cpu")
    assert answer.status == AnswerStatus.ASK_USER
    assert "--pipeline FILE.py:PRE[,POST] --trust-code" in answer.prompt


def test_the_rule_is_the_one_run_py_applies() -> None:
    """A package's run.py carries request_split without the planner: its threshold must be the checklist's."""
    from planner.measure import request_split
    from planner.results import pipeline_split

    assert request_split.MODEL_SHARE_BOTTLENECK == pipeline_split.MODEL_SHARE_BOTTLENECK

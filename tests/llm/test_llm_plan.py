"""The LLM plan end to end on the tiny Llama, and its refusals before anything is measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.errors import PlannerError
from planner.llm.plan import LlmOptions, check_memory, check_settings
from planner.llm.results import read_llm_plan
from planner.models.llm import read_llm_folder

pytest.importorskip("transformers", reason="the [llm] extra is not installed (pip install -e .[llm])")


def test_a_context_past_the_models_limit_is_refused(tiny_llm):
    facts = read_llm_folder(tiny_llm)
    with pytest.raises(PlannerError, match="longer than .* limit of 1024 tokens"):
        check_settings(facts, LlmOptions(folder=tiny_llm, context=4096))


def test_a_prompt_longer_than_the_context_is_refused(tiny_llm):
    facts = read_llm_folder(tiny_llm)
    with pytest.raises(PlannerError, match="prompt length 512 plus 64 new tokens is more than the context of 256"):
        check_settings(facts, LlmOptions(folder=tiny_llm, context=256, quick=True))


def test_prompt_lengths_past_the_limit_are_left_out(tiny_llm):
    facts = read_llm_folder(tiny_llm)
    lengths, new, context = check_settings(facts, LlmOptions(folder=tiny_llm, prompt_lengths=(32, 128, 2048),
                                                             new_tokens=64))
    assert lengths == (32, 128) and new == 64 and context == 192


def test_a_model_too_large_for_memory_names_a_precision_that_fits(tiny_llm):
    facts = read_llm_folder(tiny_llm)
    fp32 = facts.parameters * 4
    with pytest.raises(PlannerError, match="needs about .* at fp32") as raised:
        check_memory(facts, 128, usable_bytes=fp32 // 2)
    assert "at int8" in raised.value.fix or "at bf16" in raised.value.fix
    check_memory(facts, 128, usable_bytes=fp32 * 4)  # fits: no error


def test_the_plan_writes_results_report_and_a_working_package(tiny_llm_plan):
    out, code, stdout = tiny_llm_plan
    assert code == 0, stdout
    plan = read_llm_plan(out)
    assert plan.status == "ok" and plan.kind == "decoder-llm"
    assert plan.roof is not None and plan.roof.bytes_per_s > 0
    measured = [c for c in plan.candidates if c.status == "measured"]
    base = plan.baseline
    assert base is not None and base.fidelity.verdict == "reference"
    for c in measured:
        t = c.timings
        assert set(t.ttft_p50_ms) == {16, 64} and t.tpot_p50_ms > 0 and t.new_tokens == 16
        assert t.decode_tokens_per_s == pytest.approx(1000 / t.tpot_p50_ms)
        assert t.tpot_p90_ms >= t.tpot_p50_ms
    winner = plan.candidate(plan.winner)
    assert winner is not None and winner.fidelity.verdict in ("met", "reference")
    assert plan.package == "deploy" and plan.package_problem == ""
    report = (out / "report.md").read_text()
    assert f"**Ship {winner.title}.**" in report and "TTFT" in report and "TPOT" in report
    assert "tokens/s" in report and "GB/s" in report and "cache-resident" in report  # 0.5 MiB fits any cache
    data = json.loads((out / "results.json").read_text())
    assert data["kind"] == "decoder-llm"
    for name in ("ttft", "memory"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000 and f"(figures/{name}.png)" in report


def test_a_quantised_candidate_is_judged_by_perplexity_and_kl(tiny_llm_plan):
    out, _, _ = tiny_llm_plan
    plan = read_llm_plan(out)
    int4 = [c for c in plan.candidates if c.weights == "int4" and c.status == "measured"]
    assert int4, "no INT4 candidate was measured"
    judged = [c for c in plan.candidates if c.status == "measured" and not c.is_baseline]
    assert judged, "no candidate besides the original was measured"
    for c in judged:
        f = c.fidelity
        assert f.perplexity_change is not None and f.kl is not None and f.tokens_scored > 100
        assert f.kl.low <= f.kl.value <= f.kl.high
        assert f.verdict in ("met", "missed", "not established")
        assert f.greedy.prompts == 16


def test_the_package_generates_on_its_own(tiny_llm_plan):
    out, _, _ = tiny_llm_plan
    run = subprocess.run([sys.executable, "run.py", "--check"], cwd=Path(out) / "deploy", capture_output=True,
                         text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "8 tokens in" in run.stderr


def test_inspect_names_the_decoder_facts(cli, tiny_llm):
    code, out, _ = cli("inspect", "--model", str(tiny_llm))
    assert code == 0
    assert "a decoder LLM: LlamaForCausalLM" in out and "4 heads sharing 2 key/value heads" in out


def test_planning_a_folder_that_is_not_a_causal_lm_fails_before_measuring(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    code, _, err = cli("plan", "--model", str(tmp_path), "--quick", "--out", str(tmp_path / "out"))
    assert code == 2 and "not a causal language model" in err
    assert not (tmp_path / "out").exists()


def test_a_board_projection_is_an_estimate_from_its_bandwidth(tiny_llm_plan):
    from planner.hardware.boards import get_profile
    from planner.llm.plan import _project

    out, _, _ = tiny_llm_plan
    plan = read_llm_plan(out)
    board = get_profile("rpi5")
    projection = _project(board, plan, plan.facts)
    assert "an estimate" in projection.basis and "datasheet" in projection.basis
    for label, speed in projection.tokens_per_s.items():
        c = plan.candidate(label)
        assert speed == pytest.approx(board.bandwidth_gbs * 1e9 / c.bytes_per_token)
        assert projection.fits[label]  # a 0.5 MiB model fits any board


def test_a_cancelled_plan_keeps_its_record_and_says_interrupted(tiny_llm, tmp_path):
    from planner.events import CancelToken
    from planner.llm.plan import run_llm_plan

    cancel = CancelToken()
    cancel.cancel()
    outcome = run_llm_plan(LlmOptions(folder=tiny_llm, out=tmp_path / "out", quick=True, prompt_lengths=(16,),
                                      new_tokens=8, plugins=("llm.torch",)), cancel=cancel)
    plan = read_llm_plan(tmp_path / "out")
    assert outcome.interrupted and plan.status == "interrupted"
    assert plan.candidates and all(c.status == "not reached" for c in plan.candidates)
    assert "stopped before it finished" in (tmp_path / "out" / "report.md").read_text()

"""A decoder LLM folder in a real `planner engine`: `load` answers its facts (and the state carries them), another
model's load clears them, and `llm_plan` plans it with its progress streamed, stopped by `cancel` after the
candidate being measured with what was measured written."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from engine_support import Background

from planner.codec import from_data
from planner.engine import protocol as wire
from planner.errors import PlannerError


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory) -> Path:
    """A tiny random Llama (2 layers, hidden 64, vocabulary 512) with its tokenizer, saved once for the module."""
    from planner.llm.random_model import build_random_llm

    folder = tmp_path_factory.mktemp("llm") / "tiny"
    build_random_llm(folder)
    return folder


def test_the_llm_commands_travel_as_typed_messages():
    command = wire.decode_command('{"type": "llm_plan", "id": 4, "out": "plans/tiny"}')
    assert isinstance(command, wire.PlanLlm) and command.fresh_cancel
    assert (command.prompt_lengths, command.new_tokens, command.quick, command.out) == ([32, 128, 512], 64, True,
                                                                                       "plans/tiny")
    held = wire.LlmFolder(source="tiny", facts={"layers": 2}, plan_dir="plans/tiny", status="interrupted")
    answer = wire.decode_message(wire.encode(wire.Result(id=4, value=wire.LlmPlanned(out_dir="plans/tiny"),
                                                         state=wire.State(llm=held))))
    assert isinstance(answer, wire.Result) and answer.state is not None and answer.state.llm == held
    assert msgspec.convert(answer.value, wire.LlmPlanned).out_dir == "plans/tiny"


def test_loading_a_causal_lm_folder_answers_its_facts_and_another_model_clears_them(engine, tiny_llm, tmp_path):
    with pytest.raises(PlannerError, match="no decoder LLM folder is loaded"):
        engine.request(wire.PlanLlm())
    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text('{"architectures": ["BertModel"]}')
    with pytest.raises(PlannerError, match="not a causal language model .*BertModel"):
        engine.request(wire.Load(source=str(encoder)))
    engine.ask(wire.Load(source="demo:tiny"))
    assert engine.results["model"]["source"] == "demo:tiny"

    loaded = engine.ask(wire.Load(source=str(tiny_llm)))
    held = from_data(loaded.value, wire.LlmFolder)
    facts = held.facts
    assert (held.source, held.kind, held.plan_dir) == (str(tiny_llm), "decoder-llm", None)
    assert (facts["architecture"], facts["layers"], facts["heads"], facts["kv_heads"], facts["head_size"]) == (
        "LlamaForCausalLM", 2, 4, 2, 16)
    assert (facts["vocab"], facts["context"], facts["stored_dtype"]) == (512, 1024, "F32")
    assert facts["parameters"] > 100_000 and facts["weight_bytes"] == 4 * facts["parameters"]
    # The LLM takes the model's place: the state carries it, and the model loaded before is gone with its steps.
    assert engine.state.llm == held and "model" in engine.state.done
    assert engine.results.get("model") is None

    engine.ask(wire.Load(source="demo:tiny"))
    assert engine.state.llm is None and engine.results["model"]["source"] == "demo:tiny"


def test_the_llm_plan_streams_its_progress_and_a_cancel_keeps_what_was_measured(engine, tiny_llm, tmp_path):
    """One real quick plan (PyTorch eager only): cancelled while the original is measured, it measures that one,
    leaves the bf16 candidate not reached, and writes results.json and report.md saying it was stopped."""
    from planner.llm.results import read_llm_plan

    engine.ask(wire.Load(source=str(tiny_llm)))
    run = Background(engine, wire.PlanLlm(prompt_lengths=[16, 32], new_tokens=8, quick=True,
                                          out=str(tmp_path / "plan"), plugins=["llm.torch"]))
    run.wait_for(lambda e: e.stage == "measure" and "fp32" in e.message)
    engine.cancel()
    run.join()
    assert run.reply is not None, run.error
    planned = from_data(run.reply.value, wire.LlmPlanned)
    assert planned.status == "interrupted" and planned.out_dir == str(tmp_path / "plan")
    assert [e.stage for e in run.events if e.kind == "stage"][:3] == ["roof", "build", "measure"]

    plan = read_llm_plan(Path(planned.out_dir))
    assert plan.status == "interrupted" and plan.prompt_lengths == (16, 32) and plan.new_tokens == 8
    original, bf16 = plan.candidates
    assert original.status == "measured" and original.timings is not None
    assert set(original.timings.ttft_p50_ms) == {16, 32} and original.timings.decode_tokens_per_s > 0
    assert (bf16.status, bf16.reason) == ("not reached", "cancelled")
    assert planned.plan["candidates"][0]["label"] == original.label  # the answer carries the plan itself
    assert planned.report_path is not None
    assert "stopped before it finished" in Path(planned.report_path).read_text()
    # The state says where the plan went.
    assert engine.state.llm is not None and engine.state.llm.plan_dir == planned.out_dir
    assert engine.state.llm.status == "interrupted"


def test_a_plan_asked_for_a_folder_that_holds_one_goes_beside_it(tmp_path):
    """The client's folder is not written over: a second plan there gets the next free name (plan-2)."""
    from planner.engine.llm import plan_llm
    from planner.events import CancelToken
    from planner.llm.plan import LlmOutcome

    asked = []

    def planner(options, *, on_event, cancel):
        asked.append(options)
        return LlmOutcome(None, options.out, interrupted=cancel.cancelled)

    (tmp_path / "plan").mkdir()
    (tmp_path / "plan" / "results.json").write_text("{}")
    held = wire.LlmFolder(source="tiny", facts={})
    command = wire.PlanLlm(prompt_lengths=[64, 16], new_tokens=32, quick=False, out=str(tmp_path / "plan"),
                           gguf="models/tiny-q4_0.gguf")
    cancel = CancelToken()
    cancel.cancel()
    after, planned = plan_llm(held, command, on_event=lambda event: None, cancel=cancel, planner=planner)
    options = asked[0]
    assert options.out == tmp_path / "plan-2" and options.folder == Path("tiny")
    assert (options.prompt_lengths, options.new_tokens, options.quick) == ((64, 16), 32, False)
    assert options.gguf == Path("models/tiny-q4_0.gguf")  # for llama.cpp, as the engine's machine names it
    assert (planned.status, after.status, after.plan_dir) == ("interrupted", "interrupted", str(tmp_path / "plan-2"))

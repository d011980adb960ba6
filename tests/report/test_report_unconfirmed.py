"""A candidate not established on real data (it drifted on generated inputs only) is named beside the best
confirmed one, placed as 'check on your data first', and never called rejected; the Summary's next step
names only what the run did not measure."""

from __future__ import annotations

from report_fixtures import FIGURE_LINKS, full_report, section

BF16 = "openvino bf16 latency 2t"
DRIFT = ("not established on real data: on generated inputs, top-1 agreement 62.0% < gate 90% "
         "(over the 50 of 64 samples whose top-1 margin exceeds the candidate's error)")


def _unconfirmed(results: dict, speedup: float = 1.5213) -> dict:
    """The fixture with its bf16 candidate drifting on generated inputs instead of being rejected."""
    bf16 = next(c for c in results["candidates"] if c["label"] == BF16)
    bf16["status"] = "unconfirmed"
    bf16["reason"] = DRIFT
    bf16["speedup"] = speedup
    decided_by = "top-1 agreement on 50 of 64 samples (gate 90%), on generated inputs"
    bf16.setdefault("fidelity", {})["decided_by"] = decided_by
    return results


def _summary(text: str) -> str:
    return text[text.index("## Summary"):text.index("\n## ", text.index("## Summary") + 1)]


def test_the_summary_names_the_faster_unconfirmed_candidate_and_how_to_confirm_it(results) -> None:
    text = full_report(_unconfirmed(results), figures=FIGURE_LINKS)
    summary = _summary(text)
    assert ("- **Decision**: deploy **onnxruntime all 2t**, the best confirmed candidate (ranked by p50 latency). "
            "Up to 1.52x (openvino bf16 latency 2t) if it holds on your data: re-run with `--val-data DIR`.") in summary
    assert "- **Measured gain**: p50 202 ms against 268 ms for the baseline, 1.33x the baseline's speed." in summary
    assert "the best deployment found" not in summary
    # Its first use in the report says what 'not established on real data' means.
    assert ("*not established on real data*: its outputs drifted from the original's on generated inputs, which "
            "cannot tell whether that matters on real data") in summary


def test_an_unconfirmed_candidate_is_never_called_rejected(results) -> None:
    text = full_report(_unconfirmed(results), figures=FIGURE_LINKS)
    mentions = [line for line in text.splitlines() if BF16 in line]
    assert mentions
    assert not [line for line in mentions if "rejected" in line or "failed the fidelity" in line]
    row = next(line for line in section(text, "All candidates").splitlines() if line.startswith("|") and BF16 in line)
    assert row.rstrip(" |").endswith("unconfirmed")
    short = next(line for line in section(text, "The fastest candidates").splitlines() if BF16 in line)
    assert "| not established (top-1 93.8%) |" in short
    assert "on generated inputs" in next(line for line in mentions if line.startswith(f"- **{BF16}** (unconfirmed)"))


def test_the_roadmap_says_check_it_on_your_data_first(results) -> None:
    text = full_report(_unconfirmed(results), figures=FIGURE_LINKS)
    roadmap = section(text, "Roadmap").splitlines()
    at = next(i for i, line in enumerate(roadmap) if line.split(". ", 1)[-1].startswith(f"**{BF16}**"))
    assert roadmap[at].split(". ", 1)[1].startswith(f"**{BF16}** — compute in a lower precision; lands at p50 176 ms")
    assert "check it on your data first (not established on these samples)" in roadmap[at]
    assert "first step" not in roadmap[at]  # an unconfirmed step never meets a target
    apply = next(line for line in roadmap[at:] if line.startswith("   - Apply: "))
    assert "re-run the plan with `--val-data DIR` before relying on it" in apply


def test_an_unconfirmed_candidate_slower_than_the_best_confirmed_is_not_offered(results) -> None:
    text = full_report(_unconfirmed(results, speedup=1.1), figures=FIGURE_LINKS)
    assert "if it holds on your data" not in text
    assert "the best deployment found" in _summary(text)


def test_when_the_baseline_stays_the_best_confirmed_the_faster_unconfirmed_one_is_named(results) -> None:
    results = _unconfirmed(results)
    # Say the runtime switches drifted too: only the baseline is confirmed (this older file ranks on each candidate).
    for c in results["candidates"]:
        c["rank"] = 1 if c["label"] == "torch eager fp32 (cpu)" else None
    summary = _summary(full_report(results, figures=FIGURE_LINKS))
    assert ("No confirmed candidate beat the baseline: it stays the fastest confirmed configuration. Up to 1.52x "
            "(openvino bf16 latency 2t) if it holds on your data") in summary


def test_a_fixture_without_unconfirmed_candidates_keeps_its_summary(results) -> None:
    text = full_report(results, figures=FIGURE_LINKS)
    assert "best confirmed" not in text and "not established on real data" not in text


def _threads_step(results: dict) -> dict:
    """The fixture with no findings and a threads step first, whose plugin (PyTorch) recorded no candidate."""
    results["baseline"]["findings"] = []
    results["candidates"] = [c for c in results["candidates"] if c["plugin"] != "cpu.torch"]
    step = {"order": 0, "plugins": ["cpu.torch"], "title": "Set intra-op threads to 2 (physical cores), inter-op to 1",
            "why": "cpu.3a", "expected": "Method expectation, not a measurement: every physical core works.",
            "fidelity_gated": False, "kind": "measure", "phase": 1,
            "options": {"intra_op_threads": 2, "inter_op_threads": 1}}
    results["plan"]["steps"] = [step] + [s for s in results["plan"]["steps"]
                                      # the fixture is a schema-1 file: one `plugin` per step
                                      if "cpu.torch" not in s.get("plugins", [s.get("plugin")])]
    return results


def test_the_next_step_skips_a_setting_a_measured_candidate_ran_with(results) -> None:
    summary = _summary(full_report(_threads_step(results), figures=FIGURE_LINKS))
    assert "intra-op threads" not in summary  # ONNX Runtime ran with 2 intra-op threads and 1 inter-op
    assert "The biggest remaining step, not measured in this run, is Pick the batch size" in summary


def test_the_next_step_names_a_setting_no_candidate_ran_with(results) -> None:
    results = _threads_step(results)
    results["plan"]["steps"][0]["options"] = {"intra_op_threads": 4, "inter_op_threads": 1}
    results["plan"]["steps"][0]["title"] = "Set intra-op threads to 4 (physical cores), inter-op to 1"
    summary = _summary(full_report(results, figures=FIGURE_LINKS))
    assert "The biggest remaining step, not measured in this run, is Set intra-op threads to 4" in summary


def test_a_pass_on_generated_inputs_is_labelled_as_such(results) -> None:
    best = next(c for c in results["candidates"] if c["label"] == "onnxruntime all 2t")
    best["fidelity"]["decided_by"] = "top-1 agreement on 30 of 32 samples (gate 99%), on generated inputs"
    text = full_report(results, figures=FIGURE_LINKS)
    assert "top-1 agreement 100% against the original on generated inputs." in _summary(text)
    assert "- **onnxruntime all 2t** (ok): top-1 agreement on 30 of 32 samples" in text
    roadmap = text[text.index("## Roadmap"):]
    assert "passed the fidelity check on generated inputs" in roadmap
    assert "The fidelity checks ran on generated inputs (no validation data was given)" in text


def test_a_best_in_int8_that_passed_on_generated_inputs_only_is_to_be_confirmed_on_real_data(results) -> None:
    best = next(c for c in results["candidates"] if c["label"] == "onnxruntime all 2t")
    best["precision"] = "int8"
    generated = "top-1 agreement on 64 of 64 samples (gate 90%), on generated inputs"
    best.setdefault("fidelity", {})["decided_by"] = generated
    summary = _summary(full_report(results, figures=FIGURE_LINKS))
    assert ("against the original on generated inputs; it computes in int8 and its fidelity was checked on generated "
            "inputs only, which can pass where real inputs fail: confirm it on your data with `--val-data DIR` "
            "before deploying.") in summary
    best["fidelity"]["decided_by"] = "top-1 agreement on 64 of 64 samples (gate 90%)"
    assert "generated inputs only" not in full_report(results, figures=FIGURE_LINKS)


def test_a_step_the_model_cannot_take_is_no_next_step(results) -> None:
    results = _threads_step(results)
    results["plan"]["steps"][0]["options"] = {"intra_op_threads": 4, "inter_op_threads": 1}
    results["plan"]["steps"][0]["title"] = "Set intra-op threads to 4 (physical cores), inter-op to 1"
    why = "the model is ONNX-only: cpu.torch needs a PyTorch module"
    results["skipped_plugins"] = [{"plugin": "cpu.torch", "reasons": [why]}]
    summary = _summary(full_report(results, figures=FIGURE_LINKS))
    assert "threads to 4" not in summary
    assert "The biggest remaining step, not measured in this run, is Pick the batch size" in summary
    # When only such steps remain, the Summary says every step it could take was measured, and why not that one.
    results["plan"]["steps"] = results["plan"]["steps"][:1]
    summary = _summary(full_report(results, figures=FIGURE_LINKS))
    assert ("Every step this plan could measure on this model was measured; Set intra-op threads to 4 (physical "
            f"cores), inter-op to 1 was not ({why}).") in summary

"""What the report says about a model's inputs: every input with its dtype, named axes and values, the
sequence-length table of a text model, a skipped batch sweep, and the flags that reproduce the inputs."""

from __future__ import annotations

import copy

from report_fixtures import FIGURE_LINKS, FIXED_BATCH, SEQUENCE_SWEEP, TEXT_FLAGS, full_report, section, subsection

from planner import units


def test_summary_names_both_inputs_with_axes(text_results):
    summary = section(full_report(text_results, figures=FIGURE_LINKS), "Summary")
    assert ("2 inputs: `input_ids` int64 [1, sequence=64] and "
            "`attention_mask` int64 [1, sequence=64]") in summary


def test_baseline_lists_every_input_and_how_its_values_were_drawn(text_results):
    baseline = section(full_report(text_results, figures=FIGURE_LINKS), "Baseline")
    assert "with 2 inputs:" in baseline
    assert ("- `input_ids` int64 [1, sequence=64], values integers in [0, 1000) (the demo's vocabulary)"
            in baseline)
    assert "- `attention_mask` int64 [1, sequence=64], values ones (nothing masked)" in baseline


def test_sequence_table_has_each_length_in_the_units_policy(text_results):
    table = subsection(full_report(text_results, figures=FIGURE_LINKS), "Latency against sequence length")
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[0] == "| Sequence length | p50 | Throughput |"
    assert len(rows) == 1 + len(SEQUENCE_SWEEP)
    for row, point in zip(rows[1:], SEQUENCE_SWEEP):
        assert row == (f"| {point['length']} | {units.ms(point['latency_p50_ms'])} | "
                       f"{units.sig(point['tokens_per_s'])} tokens/s |")
    assert "| 64 | 0.668 ms | 95,791 tokens/s |" in rows


def test_sequence_sweep_that_stopped_says_why(text_results):
    text_results["baseline"]["info"]["sequence_sweep_stopped"] = "sequence length 16 failed: a fixed-length graph"
    table = subsection(full_report(text_results, figures=FIGURE_LINKS), "Latency against sequence length")
    assert "The sequence sweep stopped because: sequence length 16 failed: a fixed-length graph." in table


def test_image_model_has_no_sequence_table(fixture_results):
    assert "Latency against sequence length" not in full_report(fixture_results, figures=FIGURE_LINKS)


def test_skipped_batch_sweep_is_said_plainly_with_its_reason(text_results):
    throughput = subsection(full_report(text_results, figures=FIGURE_LINKS), "Throughput against batch size")
    reason = FIXED_BATCH.removeprefix("no batch sweep: ")
    assert f"The batch sweep was skipped: {reason}." in throughput
    assert "Throughput was measured at batch 1 only: 1,497 samples/s (p50 0.668 ms per call)." in throughput
    # No batch table and no knee talk for a sweep that never ran.
    assert "| Batch |" not in throughput and "no knee" not in throughput and "the knee is at" not in throughput


def test_candidates_share_one_skip_reason_said_once(text_results):
    candidates = section(full_report(text_results, figures=FIGURE_LINKS), "All candidates")
    assert candidates.count("the model's inputs fix the batch at 1") == 1
    assert "sweep_skipped" not in candidates and "sequence_sweep_stopped" not in candidates
    table = subsection(candidates, "p50 latency by sequence length")
    assert "| Candidate | 8 tokens | 16 tokens | 32 tokens | 64 tokens |" in table
    assert "| torch eager fp32 (cpu) | 0.212 ms | 0.302 ms | 0.456 ms | 0.668 ms |" in table


def test_a_candidate_skipping_for_its_own_reason_says_so(text_results):
    text_results["candidates"][1]["info"]["sweep_skipped"] = ("no batch sweep: this candidate's runtime takes one "
                                                              "fixed batch size")
    candidates = section(full_report(text_results, figures=FIGURE_LINKS), "All candidates")
    assert "batch sweep skipped: this candidate's runtime takes one fixed batch size" in candidates
    assert "no candidate's batch sweep ran" not in candidates


def test_reproduce_gives_every_input_flag(text_results):
    reproduce = section(full_report(text_results, figures=FIGURE_LINKS), "Reproduce")
    plan = reproduce.split("```sh\n")[1].split("\n```")[0]
    assert plan.startswith(f"planner plan --model bert.onnx {TEXT_FLAGS} --target cpu")
    assert "--input-shape" not in reproduce
    benches = [line for line in reproduce.splitlines() if line.startswith("planner bench")]
    assert benches and all(TEXT_FLAGS in line for line in benches)


def test_older_results_show_the_one_input_they_recorded(fixture_results):
    """A schema-1 file recorded one `input` on the model and `input_shape` on the baseline."""
    text = full_report(fixture_results, figures=FIGURE_LINKS)
    assert "input `x` float32 [batch=1, 3, 224, 224]" in section(text, "Summary")
    assert "on `cpu`, input `x` float32 [batch=1, 3, 224, 224]." in section(text, "Baseline")
    assert "planner plan --model demo:inefficient --input-shape 1x3x224x224 --target cpu" in section(text, "Reproduce")


def test_results_with_only_an_input_shape_still_show_it(fixture_results):
    results = copy.deepcopy(fixture_results)
    del results["model"]["input"]
    text = full_report(results, figures=FIGURE_LINKS)
    assert "input [1, 3, 224, 224]" in section(text, "Summary")
    assert "--input-shape 1x3x224x224" in section(text, "Reproduce")


def test_unreadable_inputs_fall_back_to_the_shape(fixture_results):
    results = copy.deepcopy(fixture_results)
    results["baseline"]["inputs"] = [{"name": "x", "shape": "not a shape"}]
    text = full_report(results, figures=FIGURE_LINKS)
    assert "input `x` float32 [batch=1, 3, 224, 224]" in section(text, "Summary")


def test_no_recorded_inputs_is_said(fixture_results):
    results = copy.deepcopy(fixture_results)
    del results["model"]["input"]
    results["baseline"]["input_shape"] = []
    baseline = section(full_report(results, figures=FIGURE_LINKS), "Baseline")
    assert "inputs not recorded" in baseline


def test_text_model_report_files_are_written_with_figures(text_results, tmp_path):
    from planner.report import render_report_files

    render_report_files(text_results, tmp_path)
    text = (tmp_path / "evidence.md").read_text()
    assert "Latency against sequence length" in text
    assert (tmp_path / "figures" / "throughput.png").is_file()

"""The CLI's ranked table shows each candidate's best throughput with the batch and streams it needs."""

from __future__ import annotations

from planner.cli.output import format_ranking
from planner.measure.stats import compute_stats
from planner.results import CandidateResult, PlanResults, Status, rank_candidates
from planner.results.values import StreamPoint, ThroughputPoint


def _cand(label: str, sweep: dict[int, float], streams: tuple[StreamPoint, ...] = ()) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=compute_stats([2.0] * 20),
                           throughput=tuple(ThroughputPoint(b, 2.0, r, None) for b, r in sweep.items()),
                           streams=streams)


def test_the_table_names_the_batch_and_streams_behind_each_rate() -> None:
    served = _cand("openvino f32 throughput 2t", {1: 500.0, 8: 900.0},
                   (StreamPoint(8, 1, 900.0, "as configured, one request at a time"),
                    StreamPoint(8, 2, 1700.0, "OpenVINO THROUGHPUT hint: 2 streams, 2 requests in flight")))
    alone = _cand("onnxruntime all seq 2t", {1: 800.0, 4: 1200.0})
    cands = (alone, served)
    text = format_ranking(PlanResults(candidates=cands, ranking=rank_candidates(cands, {"min_throughput": 1000})))
    head, _, first, second = text.splitlines()[1:5]
    assert "b×str" in head
    assert first.split()[1] == "openvino" and "1,700" in first and "8×2" in first
    assert "1,200" in second and "4×1" in second
    assert "OpenVINO THROUGHPUT hint: 2 streams, 2 requests in flight" in text
    assert "8, 2 streams" in text.splitlines()[0]  # the ranking line says what the leader needs


def test_no_streams_no_note() -> None:
    cands = (_cand("a", {1: 10.0}),)
    text = format_ranking(PlanResults(candidates=cands, ranking=rank_candidates(cands)))
    assert "Streams ran as" not in text and "1×1" in text


def test_a_rejected_candidate_reads_in_plain_words() -> None:
    from dataclasses import replace

    ok = _cand("onnxruntime all seq 2t", {1: 800.0})
    rejected = replace(_cand("openvino bf16 latency 2t", {1: 900.0}), status=Status.REJECTED,
                       reason="fidelity gate: cosine similarity 0.99412 < gate 0.995")
    cands = (ok, rejected)
    text = format_ranking(PlanResults(candidates=cands, ranking=rank_candidates(cands)))
    assert ("openvino bf16 latency 2t: rejected: fidelity check: cosine similarity 0.99412, below the 0.995 needed"
            in text)
    assert "gate" not in text


def test_a_faster_unconfirmed_candidate_is_named_after_the_best_confirmed_one() -> None:
    from dataclasses import replace

    ok = replace(_cand("openvino f32 latency 2t", {1: 800.0}), speedup=1.64, reproduce="planner bench ...")
    drifted = replace(_cand("openvino int8 nncf", {1: 2000.0}), status=Status.UNCONFIRMED, speedup=3.9,
                      reason="not established on real data: on generated inputs, top-1 agreement 40.0% < gate 90%")
    cands = (ok, drifted)
    text = format_ranking(PlanResults(candidates=cands, ranking=rank_candidates(cands)))
    assert "rejected" not in text
    assert "openvino int8 nncf: unconfirmed: not established on real data: on generated inputs" in text
    tail = text.splitlines()[-3:]
    assert tail[0] == "Best confirmed: openvino f32 latency 2t at 1.64x — reproduce with:"
    assert tail[2].startswith("Up to 3.9x (openvino int8 nncf) if it holds on your data: re-run with --val-data DIR")
    # Without a faster unconfirmed candidate, the best is simply the best.
    plain = format_ranking(PlanResults(candidates=(ok,), ranking=rank_candidates((ok,))))
    assert "Best: openvino f32 latency 2t at 1.64x" in plain and "Up to" not in plain


def test_a_best_in_int8_checked_on_generated_inputs_only_asks_for_real_data() -> None:
    from dataclasses import replace

    from planner.results.values import Fidelity

    def best(precision: str, decided_by: str) -> str:
        fid = Fidelity(cosine=0.999, max_abs_error=0.01, mean_abs_error=0.001, top1_agreement=None, samples=8,
                       decided_by=decided_by)
        cand = replace(_cand("onnxruntime int8 static QDQ", {1: 800.0}), precision=precision, speedup=2.5,
                       reproduce="planner bench ...", fidelity=fid)
        return format_ranking(PlanResults(candidates=(cand,), ranking=rank_candidates((cand,))))

    generated = best("int8", "per-position class agreement 99.4% on 320 of 320 positions, on generated inputs")
    assert generated.splitlines()[-1] == (
        "Note: It computes in int8 and its fidelity was checked on generated inputs only, which can pass where real "
        "inputs fail: confirm it on your data with --val-data DIR before deploying.")
    # Checked on real samples, or an fp32 rewrite (exact on any input): nothing to add.
    assert "Note:" not in best("int8", "per-position class agreement 99.4% on 320 of 320 positions")
    assert "Note:" not in best("fp32", "cosine similarity 1.00000 (gate 0.9999), on generated inputs")

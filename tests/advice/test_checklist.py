"""The profiling checklist: answered from measurements with numbers, or honestly left to the user."""

from __future__ import annotations

import json

import pytest

from planner.advice import AnswerStatus, answer_checklist, defaults_for, questions_for
from planner.codec import to_data


def _by_id(answers):
    return {a.id: a for a in answers}


def test_each_target_gets_the_seed_questions_plus_preprocessing() -> None:
    assert [q.text for q in questions_for("nvidia")][:6] == [
        "What is GPU utilization?", "What is memory utilization?", "What are the slowest operations?",
        "Is there CPU-GPU transfer overhead?", "Is batch size optimal?", "Are Tensor Cores being used?"]
    assert len(questions_for("cpu")) == 6 and len(questions_for("edge")) == 6
    with pytest.raises(ValueError, match="nvidia"):
        questions_for("tpu")


def test_cpu_threading_reports_cores_in_use(cpu_server, make_baseline) -> None:
    answers = _by_id(answer_checklist("cpu", cpu_server, make_baseline(intra=2, inter=1)))
    threading = answers["cpu.threading"]
    assert threading.status == AnswerStatus.AUTO
    assert "torch uses 2 of 2 usable cores" in threading.evidence
    assert threading.answer == "Matches the physical cores" and threading.value["ok"] is True
    assert "torch uses 2 of 2 usable cores" in answers["cpu.utilization"].evidence


def test_threads_mismatch_is_flagged(big_cpu_server, make_baseline) -> None:
    threading = _by_id(answer_checklist("cpu", big_cpu_server, make_baseline(intra=1, inter=1)))["cpu.threading"]
    assert threading.value["ok"] is False
    assert "torch uses 1 of 16 usable cores" in threading.evidence
    assert threading.answer.startswith("Mismatch") and "set intra-op threads to 8" in threading.answer


def test_oversubscription_is_flagged(cpu_server, make_baseline) -> None:
    threading = _by_id(answer_checklist("cpu", cpu_server, make_baseline(intra=4, inter=4, omp="3")))[
        "cpu.threading"]
    assert "oversubscribes" in threading.answer
    assert "inter-op threads 4" in threading.answer
    assert "OMP_NUM_THREADS=3" in threading.answer


def test_unrecorded_threads_are_not_guessed(cpu_server, make_baseline) -> None:
    threading = _by_id(answer_checklist("cpu", cpu_server, make_baseline(intra=None, inter=None)))[
        "cpu.threading"]
    assert threading.status == AnswerStatus.NOT_MEASURED


def test_cpu_batch_answer_respects_latency_target(cpu_server, make_baseline) -> None:
    sweep = [{"batch": 1, "latency_p50_ms": 10.0, "samples_per_s": 100.0},
             {"batch": 4, "latency_p50_ms": 32.0, "samples_per_s": 125.0},
             {"batch": 16, "latency_p50_ms": 100.0, "samples_per_s": 160.0}]
    answers = _by_id(answer_checklist("cpu", cpu_server, make_baseline(throughput=sweep),
                                      requirements=defaults_for("cpu_server")))
    assert answers["cpu.batch"].value["recommended_batch"] == 4
    no_target = _by_id(answer_checklist("cpu", cpu_server, make_baseline(throughput=sweep)))["cpu.batch"]
    assert "no latency target" in no_target.answer and no_target.value["recommended_batch"] is None


def test_mkldnn_and_slowest_ops_carry_evidence(cpu_server, make_baseline) -> None:
    answers = _by_id(answer_checklist("cpu", cpu_server, make_baseline(p50=40.0)))
    assert answers["cpu.mkldnn"].answer.startswith("Yes") and "Xeon(R) Platinum 8488C" in answers["cpu.mkldnn"].evidence
    assert "layer4.1.conv2 (Conv2d) 12 ms, 30%" in answers["cpu.slowest_ops"].evidence


def test_gpu_questions_that_cannot_be_measured_are_honest(a100_server, make_baseline) -> None:
    answers = _by_id(answer_checklist("nvidia", a100_server, make_baseline(device="cuda", target="nvidia")))
    transfers = answers["gpu.transfers"]
    assert transfers.status == AnswerStatus.ASK_USER and "to the GPU" in transfers.prompt
    assert answers["gpu.preprocessing"].status == AnswerStatus.ASK_USER
    utilization = answers["gpu.utilization"]
    assert utilization.status == AnswerStatus.NOT_MEASURED
    assert "read 0% when the hardware was detected" in utilization.evidence


def test_gpu_answers_from_measurements(a100_server, make_baseline) -> None:
    base = make_baseline(device="cuda", target="nvidia", gpu_utilization=23, peak=2 * (1 << 30))
    answers = _by_id(answer_checklist("nvidia", a100_server, base))
    assert answers["gpu.utilization"].status == AnswerStatus.AUTO
    assert answers["gpu.utilization"].value == {"utilization_pct": 23.0, "low": True}
    assert "2 GiB of 80 GiB (2.5%)" in answers["gpu.memory"].answer
    assert "Ampere (3rd gen)" in answers["gpu.tensor_cores"].answer
    assert answers["gpu.tensor_cores"].answer.startswith("Not by the baseline: it ran in fp32")


def test_edge_latency_off_device_is_not_measured(cpu_server, pi4, make_baseline) -> None:
    off = _by_id(answer_checklist("edge", cpu_server, make_baseline(p50=412.0)))["edge.latency"]
    assert off.status == AnswerStatus.NOT_MEASURED and "cpu_server" in off.answer
    on = _by_id(answer_checklist("edge", pi4, make_baseline(p50=412.0)))
    assert on["edge.latency"].status == AnswerStatus.AUTO and "raspberry_pi" in on["edge.latency"].evidence
    assert on["edge.architecture"].value == {"too_slow": True}
    assert "412 ms > 100 ms" in on["edge.architecture"].answer
    assert on["edge.memory"].value["fits"] is True
    assert on["edge.quantized"].answer == "No: the baseline ran in fp32"
    assert "torch uses 2 of 4 usable cores" in on["edge.threading"].evidence


def test_user_reply_and_serialisation(cpu_server, make_baseline) -> None:
    answers = answer_checklist("cpu", cpu_server, make_baseline())
    pre = _by_id(answers)["cpu.preprocessing"].with_reply("decoding JPEGs takes 80% of a request", value=True)
    assert pre.status == AnswerStatus.USER and pre.value is True
    data = json.loads(json.dumps([to_data(a.record()) for a in [*answers, pre]]))
    assert {d["status"] for d in data} >= {"auto", "ask-user", "user"}

"""The CLI's ranked table carries each candidate's energy per inference beside p95, a closing line names the
winner's, and the note under the table says where the figures come from or why there are none."""

from __future__ import annotations

from planner.cli.output import format_ranking
from planner.measure.stats import compute_stats
from planner.results import Baseline, CandidateResult, ModelSummary, PlanResults, Status, rank_candidates
from planner.results.energy_values import EnergySource, EnergyStatus, InferenceEnergy

SOURCE = EnergySource(available=True, scope="CPU package", source="RAPL (powercap sysfs)", detail="package-0",
                      idle_w=11.5, idle_spread_w=0.2, idle_window_s=2.0)


def _cand(label: str, p50: float, energy: InferenceEnergy | None) -> CandidateResult:
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=compute_stats([p50] * 20), energy=energy)


def _plan(source: EnergySource, *cands: CandidateResult) -> PlanResults:
    baseline = Baseline(model=ModelSummary("m", "demo:tiny", "demo", 1, 1), input_shape=(1,),
                        latency_ms=compute_stats([5.0] * 20), energy_source=source)
    return PlanResults(baseline=baseline, candidates=cands, ranking=rank_candidates(cands))


def test_measured_and_below_resolution_marks() -> None:
    fast = _cand("onnxruntime all 2t", 1.0, InferenceEnergy(EnergyStatus.MEASURED, joules=0.0427, scope="CPU package",
                                                             gross_j=9.0, idle_j=4.6, window_s=0.4, calls=128))
    tiny = _cand("openvino f32 latency 2t", 2.0, InferenceEnergy(EnergyStatus.BELOW_RESOLUTION, scope="CPU package",
                                                                 reason="within the counter's resolution"))
    text = format_ranking(_plan(SOURCE, fast, tiny))
    head, _, first, second = text.splitlines()[1:5]
    assert "mJ/inf" in head
    assert "42.7" in first.split() and "<res" in second.split()
    assert "mJ/inf: CPU package energy from RAPL (powercap sysfs) (package-0), net of idle 11.5 W" in text
    assert "Energy: 42.7 mJ per inference (CPU package, net of idle 4.6 J of 9 J over 400 ms, 128 calls)" in text


def test_unavailable_says_why_and_the_fix() -> None:
    fix = "sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj"
    source = EnergySource(reason="no CPU energy counter: the RAPL energy counters exist but only root may read them",
                          fix=fix)
    cand = _cand("onnxruntime all 2t", 1.0, InferenceEnergy(EnergyStatus.UNAVAILABLE, reason=source.reason))
    text = format_ranking(_plan(source, cand))
    assert "n/a" in text.splitlines()[3].split()
    assert f"mJ/inf: unavailable: {source.reason}. To make it readable: {fix}" in text
    assert "Energy: unavailable: no CPU energy counter" in text

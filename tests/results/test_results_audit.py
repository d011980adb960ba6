"""The environment audit on results: its verdict in plain words, the plan's reproducibility statement, and
results.json round trips with and without it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from planner.measure.stats import compute_stats
from planner.results import (
    CandidateResult,
    PlanResults,
    Status,
    read_results,
    results_from_data,
    to_data,
    write_results,
)
from planner.results.audit import (
    AuditFact,
    MeasurementAudit,
    audit_of,
    flag_line,
    judge,
    judged,
    reproducibility,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "report" / "fixtures" / "results.json"


def _audit(load: float, **fields) -> MeasurementAudit:
    return judged(MeasurementAudit(window_s=2.0, load_samples=9, other_load_mean_cores=load,
                                   other_load_peak_cores=load, load_basis="fake", cpus_watched=2,
                                   threads_used=fields.pop("threads", 2), usable_cores=fields.pop("usable", 2),
                                   facts=(AuditFact("frequency governor", "not readable: none"),), **fields))


def _candidate(label: str, audit: MeasurementAudit | None, *, spread: float = 0.01) -> CandidateResult:
    stats = compute_stats([10 * (1 - spread), 10.0, 10 * (1 + spread)] * 20)
    return CandidateResult(plugin="cpu.test", label=label, config={}, precision="fp32", status=Status.OK,
                           latency_ms=stats, audit=audit)


def test_another_process_using_most_of_a_core_is_flagged_with_what_to_do() -> None:
    issues = judge(_audit(0.8))
    assert len(issues) == 1
    assert "other processes used 80% of a core" in issues[0]
    assert "re-run on an idle machine" in issues[0]
    assert flag_line(_audit(0.8)).startswith("taken under interference: other processes used 80% of a core")


def test_a_quiet_machine_gives_no_flag() -> None:
    audit = _audit(0.03)
    assert not audit.disturbed and judge(audit) == () and flag_line(audit) == ""


def test_more_threads_than_usable_cores_is_flagged_naming_the_quota() -> None:
    (issue,) = judge(_audit(0.0, threads=4, usable=1, quota_cores=1.5))
    assert "4 threads ran on 1 usable core " in issue and "CPU quota of 1.5 cores" in issue
    assert "use at most 1 thread " in issue


def test_throttling_seen_is_flagged() -> None:
    (issue,) = judge(_audit(0.0, throttling=("GPU hardware thermal slowdown",)))
    assert "GPU hardware thermal slowdown" in issue and "let it cool" in issue


def test_weights_against_last_level_cache() -> None:
    assert MeasurementAudit(weights_bytes=4 << 20, llc_bytes=32 << 20).weights_fit_llc is True
    assert MeasurementAudit(weights_bytes=64 << 20, llc_bytes=32 << 20).weights_fit_llc is False
    assert MeasurementAudit(llc_bytes=32 << 20).weights_fit_llc is None


def test_reproducibility_names_the_disturbed_and_unstable_measurements() -> None:
    rows = [_candidate("baseline", _audit(0.0)), _candidate("ort 2t", _audit(1.2)),
            _candidate("noisy", _audit(0.0), spread=0.5)]
    repro = reproducibility((c.label, c.audit, c.latency_ms) for c in rows)
    assert repro.disturbed == ("ort 2t",) and not repro.trustworthy
    assert repro.unstable and repro.unstable[0].startswith("noisy")
    assert "1 of 3 measurements were taken under interference" in repro.statement
    assert "ort 2t" in repro.statement


def test_reproducibility_on_an_idle_machine_promises_agreement_with_bench() -> None:
    rows = [_candidate("baseline", _audit(0.0)), _candidate("ort 2t", _audit(0.1))]
    repro = reproducibility((c.label, to_data(c.audit), to_data(c.latency_ms)) for c in rows)
    assert repro.trustworthy
    assert "all 2 measurements" in repro.statement and "planner bench" in repro.statement


def test_results_without_audits_say_so() -> None:
    repro = reproducibility([("baseline", None, _candidate("b", None).latency_ms)])
    assert repro.audited == 0 and "no environment audit" in repro.statement


def test_audit_round_trips_through_results_json(tmp_path: Path) -> None:
    audit = _audit(0.9, throttling=("3 CPU thermal throttle events",), weights_bytes=1 << 20, llc_bytes=8 << 20)
    results = PlanResults(candidates=(_candidate("ort 2t", audit), _candidate("old", None)))
    path = tmp_path / "results.json"
    write_results(path, results)
    back = read_results(path)
    assert back == results
    assert back.candidates[0].audit is not None and back.candidates[0].audit.disturbed
    assert json.loads(path.read_text())["candidates"][0]["audit"]["issues"] == list(audit.issues)


def test_old_results_without_audits_still_read() -> None:
    results = results_from_data(json.loads(EXAMPLE.read_text()))
    assert results.baseline is not None and results.baseline.audit is None
    assert all(c.audit is None for c in results.candidates)
    assert results.baseline.as_candidate().audit is None


def test_baseline_audit_travels_to_its_candidate_row() -> None:
    results = results_from_data(json.loads(EXAMPLE.read_text()))
    assert results.baseline is not None
    baseline = dataclasses.replace(results.baseline, audit=_audit(0.5))
    assert baseline.as_candidate().audit == _audit(0.5)


def test_unreadable_audit_data_is_treated_as_absent() -> None:
    assert audit_of({"other_load_mean_cores": "lots"}) is None
    assert audit_of(None) is None and audit_of({}) is None

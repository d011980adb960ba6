"""The report's Environment section states what was audited, and on a busy machine that the numbers were taken
under load and which ones."""

from __future__ import annotations

from report_fixtures import FIGURE_LINKS, full_report, section
from report_numbers import literal_numbers, perturb

from planner.codec import to_data
from planner.results.audit import AuditFact, MeasurementAudit, judged


def _audit(load: float) -> dict:
    return to_data(judged(MeasurementAudit(
        window_s=2.4, load_samples=10, other_load_mean_cores=load, other_load_peak_cores=load * 1.5,
        own_cpu_cores=0.9, load_basis="/proc/stat busy time minus this worker's own CPU time",
        cpus_watched=2, threads_used=2, usable_cores=2, weights_bytes=3 << 20, llc_bytes=32 << 20,
        facts=(AuditFact("frequency governor", "not readable: no cpufreq scaling_governor"),
               AuditFact("SMT (two threads per core)", "off")))))


def _environment(text: str) -> str:
    return section(text, "Environment")


def _with_audits(results: dict, busy_labels: set[str]) -> dict:
    results["baseline"]["audit"] = _audit(0.8 if "baseline" in busy_labels else 0.02)
    for c in results["candidates"]:
        if c.get("latency_ms"):
            c["audit"] = _audit(1.4 if c.get("label") in busy_labels else 0.02)
    return results


def test_busy_measurements_are_named_and_said_to_be_under_load(results) -> None:
    labels = [c["label"] for c in results["candidates"] if c.get("latency_ms")]
    busy = labels[1]
    section = _environment(full_report(_with_audits(results, {busy}), figures=FIGURE_LINKS))
    assert "**These numbers were taken under load and may not reproduce.**" in section
    assert f"- {busy}: other processes used 1.4 cores on average" in section
    assert "re-run on an idle machine" in section
    assert section.count("other processes used 1.4 cores on average") == 1
    # What was audited, and the baseline's own readings.
    assert "other processes' CPU use (sampled from /proc/stat while timing, not the load average)" in section
    assert "| frequency governor | not readable: no cpufreq scaling_governor |" in section
    assert "| weights vs last-level cache | 3 MiB fit in 32 MiB;" in section


def test_an_idle_run_says_no_interference_was_seen(results) -> None:
    section = _environment(full_report(_with_audits(results, set()), figures=FIGURE_LINKS))
    assert "No interference was seen" in section
    assert "taken under load" not in section
    assert "other processes used 2% of a core on average" in section


def test_results_without_audits_say_the_conditions_are_not_known(results) -> None:
    section = _environment(full_report(results, figures=FIGURE_LINKS))
    assert "Measurement conditions: not audited" in section


def test_every_number_in_the_audit_comes_from_results(results) -> None:
    labels = [c["label"] for c in results["candidates"] if c.get("latency_ms")]
    busy = _with_audits(results, {"baseline", labels[1]})
    original = full_report(busy, figures=FIGURE_LINKS)
    assert literal_numbers(_environment(original), _environment(full_report(perturb(busy),
                                                                                figures=FIGURE_LINKS))) == []


def _summary(text: str) -> str:
    return text.split("## Summary")[1].split("\n## ")[0]


def test_a_headline_speedup_over_a_disturbed_baseline_carries_a_caution(results) -> None:
    summary = _summary(full_report(_with_audits(results, {"baseline"}), figures=FIGURE_LINKS))
    assert "Caution: the baseline was timed while other processes used the cores" in summary
    assert "re-run the plan there before relying on it" in summary


def test_an_idle_run_has_no_caution_in_the_summary(results) -> None:
    assert "Caution" not in _summary(full_report(_with_audits(results, set()), figures=FIGURE_LINKS))


def test_the_limits_it_planned_under_and_its_peak_memory_are_stated(results) -> None:
    results["environment"]["resources"] = {
        "memory_limit_bytes": 3 << 30, "limit_source": "cgroup v1", "available_bytes": int(2.6 * (1 << 30)),
        "cores": 2, "peak_bytes": int(1.3 * (1 << 30)), "peak_file_bytes": 700 << 20, "peak_processes": 5,
        "peak_basis": "anonymous and shared memory summed over the tree's processes, sampled every 0.25 s",
        "cgroup_peak_bytes": int(2.2 * (1 << 30)), "oom_kills": 0}
    text = _environment(full_report(results, figures=FIGURE_LINKS))
    assert ("- planned under a 3 GiB memory limit (cgroup v1), 2 usable cores; 2.6 GiB of it free when the plan "
            "started") in text
    assert ("- peak memory of the planner's process tree (the planner, its workers and what they start): 1.3 GiB "
            "(anonymous and shared memory summed over the tree's processes, sampled every 0.25 s; 5 processes at the "
            "peak), besides up to 700 MiB of mapped library files, which the kernel can drop and re-read") in text
    assert "- the plan's own cgroup peaked at 2.2 GiB (page cache included); no process was killed" in text


def test_without_a_plan_wide_peak_the_largest_measured_one_is_given(results) -> None:
    results["environment"]["resources"] = {"memory_limit_bytes": 8 << 30, "limit_source": "RAM", "cores": 4}
    results["candidates"][1]["tree_peak_bytes"] = 1 << 30
    text = _environment(full_report(results, figures=FIGURE_LINKS))
    assert "- planned under 8 GiB of RAM (no cgroup memory limit), 4 usable cores" in text
    label = results["candidates"][1]["label"]
    assert ("- peak memory of the planner's process tree while measuring (its processes' own memory, mapped library "
            f"files not counted): 1 GiB (while measuring {label})") in text


def test_results_written_before_the_limits_were_recorded_say_nothing_of_them(results) -> None:
    text = _environment(full_report(results, figures=FIGURE_LINKS))
    assert "planned under" not in text and "peak memory of the planner" not in text

"""One measurement, one number: every place the report and the evidence print the winner's median, or the
baseline's, prints the same value; a batch sweep's batch-1 point is the confirmed median; a roof that a measurement
beat calls no target impossible.

The plan is the recorded quick plan of demo:inefficient (tests/fixtures/recorded/inefficient-quick.json), typed.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from report_fixtures import FIGURE_LINKS, full_report

from planner.advice.checks import requirement_checks
from planner.pipeline.candidates import batch_one_retimed
from planner.results import read_results
from planner.results.decisions import CheckStatus
from planner.results.values import ThroughputPoint

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "inefficient-quick.json"
_NUMBER = r"([0-9][0-9.,]*) (ms|µs|s)\b"


@pytest.fixture(scope="module")
def example():
    """The recorded example plan, typed."""
    return read_results(EXAMPLE)


def _winner_p50s(text: str, name: str) -> set[str]:
    """Every median the two files print beside the winner's name, in each place they print one."""
    escaped = re.escape(name)
    patterns = [rf"\*\*Ship {escaped}\*\*: p50 {_NUMBER}",
                rf"- \*\*Measured gain\*\*: p50 {_NUMBER}",
                rf"\| \*\*{escaped}\*\* \(shipped\) \| [^|]+ \| {_NUMBER} \|",
                rf"\| \d+ \| \*\*{escaped}\*\* \| [^|]+ \| {_NUMBER} \|",
                rf"\d+\. \*\*{escaped}\*\* — [^;]+; lands at p50 {_NUMBER}"]
    found = set()
    for pattern in patterns:
        hits = re.findall(pattern, text)
        assert hits, f"the winner's median is missing where {pattern!r} expects it"
        found |= {" ".join(hit) for hit in hits}
    return found


def test_the_winners_median_reads_the_same_wherever_it_is_printed(example) -> None:
    text = full_report(example, figures=FIGURE_LINKS)
    assert len(_winner_p50s(text, example.best.label)) == 1


def test_the_baselines_median_reads_the_same_wherever_it_is_printed(example) -> None:
    text = full_report(example, figures=FIGURE_LINKS)
    found = set(re.findall(rf"against {_NUMBER} for the baseline", text))
    found |= set(re.findall(rf"- Today: p50 {_NUMBER} \(the baseline", text))
    found |= set(re.findall(rf"\| p50 \| {_NUMBER} \|", text))
    assert len({" ".join(f) for f in found}) == 1, found


def test_a_confirmed_median_replaces_the_screens_batch_one_point() -> None:
    """The sweep's batch 1 is the screen's call timed again: after the full re-measure both read the new median."""
    points = (ThroughputPoint(1, 146.4, 1000 / 146.4, 100), ThroughputPoint(2, 280.0, 2000 / 280.0, 120))
    retimed = batch_one_retimed(points, 143.6)
    assert retimed[0].latency_p50_ms == 143.6 and retimed[0].samples_per_s == pytest.approx(1000 / 143.6)
    assert retimed[0].peak_memory_bytes == 100 and retimed[1] == points[1]


def test_a_roof_a_measurement_beat_calls_no_target_impossible(example) -> None:
    """The fp32 roof's floor for this model sits above a measured median: the roof was measured low, so the
    latency target is missed (by the measurement), never 'cannot be met' (by the roof)."""
    best = example.best
    flops = example.baseline.flops_per_sample
    # A roof whose floor is 10% above the winner's measured median, and a target under both.
    peak = flops / (best.p50 * 1.1 / 1000.0)
    ceilings = dataclasses.replace(example.ceilings, peak_flops={**example.ceilings.peak_flops, "fp32": peak})
    reqs = dataclasses.replace(example.requirements, latency_ms=best.p50 / 2)
    results = dataclasses.replace(example, ceilings=ceilings, requirements=reqs)
    latency = next(c for c in requirement_checks(results, reqs, subject=best) if c.name == "latency")
    assert latency.status == CheckStatus.MISSED and "take at least" not in latency.margin
    # A roof whose floor sits below every measurement stands: a target under the floor cannot be met, and says why.
    fastest = min(c.p50 for c in example.candidates if c.p50 is not None)
    low = dataclasses.replace(ceilings, peak_flops={**ceilings.peak_flops, "fp32": flops / (fastest * 0.6 / 1000.0)})
    under = dataclasses.replace(reqs, latency_ms=fastest * 0.3)
    fp32 = next(c for c in example.candidates if c.precision == "fp32" and c.p50 is not None)
    latency = next(c for c in requirement_checks(dataclasses.replace(results, ceilings=low, requirements=under), under,
                                                 subject=fp32) if c.name == "latency")
    assert latency.status == CheckStatus.IMPOSSIBLE and "take at least" in latency.margin

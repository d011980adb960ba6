"""'Needs retraining' is said only of changes that need it: a finding the profile calls an exact rewrite (BatchNorm
folded, channels padded with zeros) is no redesign, in the Summary's Next or in the Roadmap (issue 38)."""

from __future__ import annotations

from report_fixtures import full_report, section

# The largest impact, so it leads the findings.
FOLDING = {"id": "unfused-conv-bn", "title": "1 conv/BatchNorm chain left unfused", "severity": "low",
           "layers": ["conv1", "bn1"], "evidence": {"foldable": 1}, "impact": 0.9,
           "impact_basis": "share of measured time", "advice": "Fold conv->BatchNorm before deployment.",
           "exact": True}


def test_an_exact_rewrite_the_profile_found_is_not_said_to_need_retraining(results: dict) -> None:
    results["baseline"]["findings"] = [FOLDING, *results["baseline"]["findings"]]
    text = full_report(results)
    next_line = next(line for line in section(text, "Summary").splitlines() if "**Next**" in line)
    assert next_line.startswith("- **Next**: The single biggest remaining win is an exact rewrite of the model (the "
                                "same outputs, no retraining): 1 conv/BatchNorm chain left unfused")
    roadmap = section(text, "Roadmap")
    phase1, phase3 = roadmap.split("### Phase 2")[0], roadmap.split("### Phase 3")[1]
    assert "BatchNorm" not in phase3
    assert "Large convolution kernels" in phase3 and "Effort: high, needs retraining" in phase3  # a redesign still
    assert "Exact rewrites the profile points to (the same outputs, no retraining" in phase1
    assert "1 conv/BatchNorm chain left unfused" in phase1


def test_a_finding_from_an_older_file_that_says_nothing_stays_a_redesign(results: dict) -> None:
    older = {k: v for k, v in FOLDING.items() if k != "exact"}
    results["baseline"]["findings"] = [older, *results["baseline"]["findings"]]
    next_line = next(line for line in section(full_report(results), "Summary").splitlines() if "**Next**" in line)
    assert "architectural and needs retraining: 1 conv/BatchNorm chain left unfused" in next_line

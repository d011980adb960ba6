"""Every number in the report comes from results.json: none is written by a template.

See report_numbers.py for the method (render twice, the second time from perturbed results, and
compare number by number) and its documented structural exclusions.
"""

from __future__ import annotations

import pytest
from report_fixtures import FIGURE_LINKS, full_report
from report_numbers import literal_numbers, perturb, perturb_float, perturb_int, tokens

from planner.report.data import ReportData
from planner.report.sections import DECISION, summary


def _literals(results: dict) -> list[str]:
    original = full_report(results, figures=FIGURE_LINKS)
    perturbed = full_report(perturb(results), figures=FIGURE_LINKS)
    return literal_numbers(original, perturbed)


def test_every_number_comes_from_results(fixture_results) -> None:
    assert _literals(fixture_results) == []


def test_every_number_comes_from_results_when_partial(partial_results) -> None:
    assert _literals(partial_results) == []


def test_report_is_full_of_checked_numbers(fixture_results) -> None:
    # A check over a report with no numbers would pass vacuously.
    text = full_report(fixture_results, figures=FIGURE_LINKS)
    assert sum(len(tokens(line)) for line in text.splitlines()) > 300


def test_check_catches_a_literal_in_a_template(fixture_results, monkeypatch) -> None:
    """The method fails when a section writes a number of its own."""
    real = summary.render

    def with_literal(data: ReportData) -> list[str]:
        lines = real(data)
        return lines[:-1] + ["Most models gain about 3 times from this."] + lines[-1:]

    index = DECISION.index(real)
    monkeypatch.setattr("planner.report.markdown.DECISION",
                        DECISION[:index] + (with_literal,) + DECISION[index + 1:])
    found = _literals(fixture_results)
    assert len(found) == 1 and "'3'" in found[0]


def test_check_catches_a_constant_derived_number(fixture_results, monkeypatch) -> None:
    """A number computed from a constant (not from results) is caught too."""
    real = summary.render
    sample_budget = 50

    def with_constant(data: ReportData) -> list[str]:
        return real(data) + [f"Runs use {sample_budget * 2} warm-up calls."]

    index = DECISION.index(real)
    monkeypatch.setattr("planner.report.markdown.DECISION",
                        DECISION[:index] + (with_constant,) + DECISION[index + 1:])
    assert any("'100'" in f for f in _literals(fixture_results))


@pytest.mark.parametrize("value", [0, 1, 2, 3, 7, 64, 4096, 10 ** 12])
def test_integer_perturbation_moves_and_keeps_order(value) -> None:
    assert perturb_int(value) > value
    assert perturb_int(value + 1) > perturb_int(value)


@pytest.mark.parametrize("value", [0.0, 1e-7, 0.004, 0.5, 0.9999998, 1.0, 12.5, 3e11])
def test_float_perturbation_moves_and_keeps_order(value) -> None:
    assert perturb_float(value) > value
    assert perturb_float(value * 1.001 + 1e-9) > perturb_float(value)


def test_perturbation_changes_numbers_inside_strings_but_not_names() -> None:
    out = perturb({"p50_ms": 2.0, "label": "openvino fp32 2t", "layer_verdicts": {"gelu#2": {}},
                   "date": "2025-06-14", "best": 1})
    assert set(out) == {"p50_ms", "label", "layer_verdicts", "date", "best"}
    assert out["label"].startswith("openvino fp32 ") and out["label"] != "openvino fp32 2t"
    assert list(out["layer_verdicts"]) == ["gelu#6"]
    assert out["best"] == 1
    assert "2025" not in out["date"]


def test_tokens_skip_names_and_structure() -> None:
    assert tokens("1. p95 of fp32 on x86_64 conv1 CI95 top-1 agreement") == []
    assert tokens("### Phase 2: Extra impact — needs ≥128 samples") == []
    assert tokens("p50 2.5 ms, 41%, 1.33×, 1,024 samples, `gelu#2`") == ["2.5", "41", "1.33", "1,024", "2"]

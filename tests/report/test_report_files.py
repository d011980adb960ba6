"""render_report_files writes report.md and valid PNG figures atomically."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from planner.report import render_report_files

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _leftovers(folder) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")]


def test_writes_report_and_pngs(fixture_results, tmp_path) -> None:
    out = tmp_path / "run"
    path = render_report_files(fixture_results, out)
    assert path == out / "report.md"
    text = path.read_text() + (out / "evidence.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert sorted(links) == ["figures/candidates.png", "figures/decision.png", "figures/latency.png",
                             "figures/roofline.png", "figures/throughput.png"]
    for link in links:
        data = (out / link).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    assert _leftovers(out) == []
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_results_report_and_figures_share_permissions_under_the_umask(fixture_results, tmp_path) -> None:
    """results.json, report.md and every figure get what a plain open() would under the umask."""
    from planner.results import results_from_data, write_results

    old = os.umask(0o027)
    try:
        write_results(tmp_path / "results.json", results_from_data(fixture_results))
        render_report_files(fixture_results, tmp_path)
    finally:
        os.umask(old)
    files = [tmp_path / "results.json", tmp_path / "report.md", *(tmp_path / "figures").iterdir()]
    assert len(files) > 3
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {oct(0o640)}


def test_partial_results_skip_figures_and_remove_stale_ones(fixture_results, partial_results, tmp_path) -> None:
    render_report_files(fixture_results, tmp_path)
    assert (tmp_path / "figures" / "candidates.png").is_file()
    render_report_files(partial_results, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "Partial report: interrupted" in text
    assert not (tmp_path / "figures" / "candidates.png").exists()
    assert (tmp_path / "figures" / "latency.png").read_bytes().startswith(PNG_SIGNATURE)
    assert _leftovers(tmp_path) == []


def test_empty_results_write_a_report(tmp_path) -> None:
    path = render_report_files({}, tmp_path)
    assert path.read_text().startswith("# Deployment report")
    assert list((tmp_path / "figures").iterdir()) == []


def test_failed_write_keeps_the_old_report(fixture_results, tmp_path, monkeypatch) -> None:
    path = render_report_files(fixture_results, tmp_path)
    before = path.read_text()

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        render_report_files(fixture_results, tmp_path)
    assert path.read_text() == before
    assert _leftovers(tmp_path) == []


def test_a_failing_figure_costs_only_that_figure(fixture_results, tmp_path, monkeypatch) -> None:
    from planner.report import figures

    def broken(data: object) -> None:
        raise ValueError("Data has no positive values, and therefore cannot be log-scaled.")

    monkeypatch.setitem(figures._DRAW, "roofline", broken)
    render_report_files(fixture_results, tmp_path)
    text = (tmp_path / "evidence.md").read_text()
    assert ("*Roofline with the model's layers figure not drawn: ValueError: Data has no positive "
            "values, and therefore cannot be log-scaled.*") in text
    assert not (tmp_path / "figures" / "roofline.png").exists()
    assert (tmp_path / "figures" / "latency.png").read_bytes().startswith(PNG_SIGNATURE)
    assert _leftovers(tmp_path) == []


def test_odd_values_do_not_break_the_figures(results, tmp_path) -> None:
    # Zero and missing numbers where the plots take logs or widths.
    results["baseline"]["layers"][0]["intensity"] = 0.0
    results["candidates"][2]["throughput"][0]["samples_per_s"] = 0.0
    results["candidates"][1]["latency_ms"]["p99_ms"] = None
    results["ceilings"]["bandwidth_bytes_per_s"] = 0.0
    render_report_files(results, tmp_path)
    text = (tmp_path / "evidence.md").read_text()
    assert "![Latency distribution](figures/latency.png)" in text
    assert "*Roofline with the model's layers figure skipped: no layer has both FLOPs" in text


def test_report_cli(fixture_results, tmp_path, cli) -> None:
    import json

    src = tmp_path / "results.json"
    src.write_text(json.dumps(fixture_results))
    code, out, err = cli("report", str(src))
    assert code == 0, err
    assert (tmp_path / "report.md").is_file()
    assert "report.md" in out


def test_report_modules_do_not_import_torch_or_textual() -> None:
    code = ("import sys, json, planner.report, planner.report.figures; "
            "print(json.dumps(sorted(m for m in ('torch', 'textual') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

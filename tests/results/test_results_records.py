"""PlanResults' typed records (environment, model, hardware, ceilings, edge device): results.json keeps the
objects it always held for them, `{}` where none was made, and older files still load."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hardware_profiles import two_core_x86

from planner.codec import from_data, to_data
from planner.hardware.boards import get_profile
from planner.hardware.ceilings import Ceilings
from planner.hardware.profile import HardwareProfile
from planner.models.loaded import LoadedModel
from planner.models.source import parse_source
from planner.models.spec import ModelInputs, TensorSpec
from planner.pipeline.edge_projection import edge_projection
from planner.pipeline.environment import environment
from planner.results import (
    Baseline,
    CandidateResult,
    EdgeProjection,
    Environment,
    ModelDescription,
    PlanResults,
    Status,
    read_results,
    results_data,
    results_from_data,
    write_results,
)
from planner.results.read import RECORDS
from planner.results.values import LatencyStats, ModelSummary

REPO = Path(__file__).resolve().parents[2]
OLDER_FILES = [REPO / "tests" / "report" / "fixtures" / "results.json",  # schema 1, one `input` on the model
               REPO / "tests" / "tui" / "fixtures" / "results.json",  # schema 1, `inputs`
               REPO / "tests" / "fixtures" / "recorded" / "inefficient-quick.json"]  # schema 2


def _latency(p50: float) -> LatencyStats:
    return LatencyStats(samples=10, mean_ms=p50, std_ms=0.0, min_ms=p50, max_ms=p50, p50_ms=p50, p90_ms=None,
                        p95_ms=None, p99_ms=None, iqr_ms=0.0, iqr_over_median=0.0, unstable=False, ci95_rel=0.0)


def _loaded_model() -> LoadedModel:
    spec = TensorSpec(name="x", shape=(1, 3, 8, 8))
    return LoadedModel(source=parse_source("demo:tiny"), inputs=ModelInputs((spec,)), output_shape=(1, 10),
                       parameters=1578, size_bytes=6384, notes=["seeded weights"])


def _full_results() -> PlanResults:
    base = Baseline(model=ModelSummary(name="tiny", source="demo:tiny", kind="demo", parameters=1578,
                                       size_bytes=6384),
                    input_shape=(1, 3, 8, 8), flops_per_sample=2_000_000, peak_activation_bytes=10_000,
                    latency_ms=_latency(3.0))
    cand = CandidateResult(plugin="edge.int8", label="int8", config={}, precision="int8", status=Status.OK,
                           latency_ms=_latency(1.0), size_bytes=2_000)
    results = PlanResults(environment=environment(), model=from_data(_loaded_model().describe(), ModelDescription),
                          hardware=two_core_x86(),
                          ceilings=Ceilings(peak_flops={"fp32": 1e11}, bandwidth_bytes_per_s=1e10, source="measured",
                                            details={"threads": 2}),
                          baseline=base, candidates=(base.as_candidate(), cand))
    return dataclasses.replace(results, edge_device=edge_projection(results, get_profile("rpi5")))


def test_records_not_made_are_written_as_empty_objects_in_their_place_and_read_back_as_none(tmp_path):
    results = PlanResults(planner_version="x")
    data = results_data(results)
    assert all(data[key] == {} for key in RECORDS)
    assert list(data) == [f.name for f in dataclasses.fields(PlanResults)]  # results.json's order, as before
    write_results(tmp_path / "results.json", results)
    assert json.loads((tmp_path / "results.json").read_text()) == data
    again = read_results(tmp_path / "results.json")
    assert again == results and all(getattr(again, key) is None for key in RECORDS)
    assert results_from_data(to_data(results)) == results  # null, as to_data writes None, reads back too


def test_typed_records_round_trip_through_results_json(tmp_path):
    results = _full_results()
    assert isinstance(results.hardware, HardwareProfile) and isinstance(results.edge_device, EdgeProjection)
    write_results(tmp_path / "results.json", results)
    assert read_results(tmp_path / "results.json") == results


def test_records_are_written_as_the_objects_results_json_held_before_they_were_typed():
    model = _loaded_model()
    described = model.describe()
    # The model as LoadedModel.describe() gives it, every key in its order (what `planner inspect --json` prints).
    assert to_data(from_data(described, ModelDescription)) == described
    assert list(to_data(from_data(described, ModelDescription))) == list(described)
    env = to_data(environment())
    # The keys it always had, in order, then the memory and cores the plan ran under (added after them).
    assert list(env) == ["planner", "python", "platform", "packages", "env", "date", "resources"]
    data = results_data(_full_results())
    assert data["hardware"] == to_data(two_core_x86())
    assert data["ceilings"] == {"peak_flops": {"fp32": 1e11}, "bandwidth_bytes_per_s": 1e10, "source": "measured",
                                "device": "cpu", "details": {"threads": 2}}
    edge = data["edge_device"]
    assert list(edge) == ["profile", "chosen_by", "candidates"] and edge["chosen_by"] == "--device"
    assert edge["profile"] == to_data(get_profile("rpi5").to_info())
    assert edge["profile"]["ceilings_are"] == "datasheet-derived, not measured"
    assert [list(row) for row in edge["candidates"]] == [
        ["label", "precision", "measured_p50_ms", "size_bytes", "device", "estimate_ms", "compute_ms", "memory_ms",
         "bound", "fits_latency_budget", "fits_size_budget", "basis"]] * 2


@pytest.mark.parametrize("path", OLDER_FILES, ids=lambda p: p.parent.name)
def test_files_written_by_older_planners_load_with_typed_records(path):
    results = read_results(path)
    raw = json.loads(path.read_text())
    assert isinstance(results.environment, Environment) and results.environment.python == raw["environment"]["python"]
    assert isinstance(results.hardware, HardwareProfile)
    assert results.hardware.cpu.model == raw["hardware"]["cpu"]["model"]
    assert isinstance(results.ceilings, Ceilings)
    assert results.ceilings.peak("fp32") == raw["ceilings"]["peak_flops"]["fp32"]
    assert results.model is not None and results.model.source == raw["model"]["source"]
    assert results.edge_device is None  # none of them projected onto a board
    # A model that recorded one `input` object keeps it, as its one `inputs` entry.
    assert results.model.inputs == tuple(raw["model"].get("inputs") or [raw["model"]["input"]])
    assert results_from_data(results_data(results)) == results

"""The environment record says what the plan ran under (memory limit, cores) and, once finished, the most memory
its process tree took; older results.json files without these still load."""

from __future__ import annotations

from planner.codec import from_data, to_data
from planner.pipeline.environment import environment, finished_environment
from planner.results import CandidateResult, Environment
from planner.results.context import PlanResources


def test_the_plan_starts_with_its_limits_and_finishes_with_its_peak() -> None:
    env = environment()
    res = env.resources
    assert res is not None
    assert res.cores is not None and res.cores >= 1
    assert res.memory_limit_bytes and res.limit_source in ("cgroup v1", "cgroup v2", "RAM")
    assert res.peak_bytes is None  # not finished yet
    done = finished_environment(env)
    assert done is not None and done.resources is not None
    assert done.resources.peak_bytes and done.resources.peak_processes
    assert "sampled every" in done.resources.peak_basis
    assert done.resources.cores == res.cores
    assert from_data(to_data(done), Environment) == done


def test_old_results_without_the_records_still_load() -> None:
    old = {"planner": "0.1.0", "python": "3.11.9", "platform": "Linux", "packages": {}, "env": {}, "date": ""}
    assert from_data(old, Environment).resources is None
    candidate = {"plugin": "cpu.torch", "label": "x", "config": {}, "precision": "fp32", "status": "ok"}
    assert from_data(candidate, CandidateResult).tree_peak_bytes is None
    assert finished_environment(None) is None
    # An environment recorded without limits still takes the peak.
    bare = finished_environment(from_data(old, Environment))
    assert bare is not None and isinstance(bare.resources, PlanResources) and bare.resources.peak_bytes

"""`planner profile` on a small demo model: the JSON carries what a performance engineer needs, and the readable
output leads with what matters most."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.worker  # `planner profile` times the baseline in a worker process


@pytest.fixture(scope="module")
def profile_json():
    """One real `planner profile --model demo:upsampling --quick --json` (its input is upsampled 12.25x before the
    first convolution): what the tests below read, and the measurement the other outputs are rendered from."""
    import contextlib
    import io

    from planner.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["profile", "--model", "demo:upsampling", "--quick", "--json"])
    assert code == 0
    return json.loads(buf.getvalue())


@pytest.fixture
def recorded(profile_json, monkeypatch):
    """The profile step replays the measurement above; the models its calls were given, in order."""
    from planner.codec import from_data
    from planner.pipeline import baseline
    from planner.results import Baseline

    given: list = []

    def recorded_profile(model, **kwargs):
        given.append((model.name, kwargs.get("val_data")))
        return from_data(profile_json, Baseline), None

    monkeypatch.setattr(baseline, "profile_baseline", recorded_profile)
    return given


def test_profile_json_has_the_fields(profile_json):
    p = profile_json
    assert p["model"]["name"] == "upsampling" and p["model"]["parameters"] == 93730
    assert p["model"]["size_bytes"] > 0
    assert p["flops_per_sample"] > 0
    lat = p["latency_ms"]
    for key in ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "std_ms", "samples"):
        assert key in lat
    assert lat["samples"] >= 8 and lat["p50_ms"] > 0
    batches = [t["batch"] for t in p["throughput"]]
    assert batches[:2] == [1, 2]
    if batches[:3] != [1, 2, 4]:  # a loaded machine may reach the sweep's time limit: it must say so
        assert p["info"]["sweep_stopped"].startswith("stopped before batch 4: timing it would take about")
    assert all(t["samples_per_s"] > 0 for t in p["throughput"])
    assert p["peak_memory_bytes"] > 0
    assert {x["name"] for x in p["layers"]} >= {"features.0", "features.3", "features.6", "fc"}
    assert all(x["time_ms"] is not None for x in p["layers"])
    assert isinstance(p["findings"], list) and p["findings"]
    f = p["findings"][0]
    assert {"id", "severity", "layers", "evidence", "impact"} <= set(f)
    assert p["bottleneck"]["bound"] in ("compute", "memory", "overhead")
    assert p["ceilings"]["peak_flops"]["fp32"] > 0
    assert p["threads"]["torch_intra_op_threads"] >= 1


def test_profile_readable_output(cli, recorded):
    """The readable form of the measured profile above."""
    code, out, err = cli("profile", "--model", "demo:upsampling", "--quick")
    assert code == 0, err
    assert recorded == [("upsampling", None)]
    assert "Latency      p50" in out
    findings = out.split("Architecture findings")[1].splitlines()
    first = next(line for line in findings if line.strip().startswith("1."))
    assert "[high]" in first and "upsampled" in first.lower() and "12.25x" in first


def test_profile_of_demo_digits_uses_its_held_out_set_as_plan_does(cli, recorded):
    """`planner profile` goes through the session, so demo:digits' built-in validation data is wired in
    and reported in the same words as `planner plan` (the measurement itself is the recorded one above)."""
    from planner.events import Event
    from planner.models.demo import builtin_validation
    from planner.pipeline import PlanOptions, PlanSession
    from planner.pipeline.run import load_with_options
    # What `planner plan` logs about its validation data: its session's profile step, as run_plan calls it.
    plan_logs: list[Event] = []
    plan = PlanSession(on_event=plan_logs.append)
    load_with_options(plan, PlanOptions(model="demo:digits"))
    plan.profile(quick=True)
    logs = [e.message for e in plan_logs if e.kind == "log"]
    held_out = builtin_validation("digits")
    assert held_out is not None
    folder, basis = held_out
    assert logs and any(basis in line and str(folder) in line for line in logs)

    code, out, err = cli("profile", "--model", "demo:digits", "--quick", "-v")  # -v prints the detail lines
    assert code == 0, err
    # The baseline's outputs are taken on the held-out set, as in the plan.
    assert recorded == [("digits", folder), ("digits", folder)]
    shown = " ".join(err.split())
    for line in logs:
        assert " ".join(line.split()) in shown
    assert "Latency      p50" in out

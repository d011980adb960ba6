"""`planner profile` on a tiny demo model: the JSON carries what a performance engineer needs."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def profile_json():
    import contextlib
    import io

    from planner.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["profile", "--model", "demo:tiny", "--quick", "--json"])
    assert code == 0
    return json.loads(buf.getvalue())


def test_profile_json_has_the_fields(profile_json):
    p = profile_json
    assert p["model"]["name"] == "tiny" and p["model"]["parameters"] == 1578
    assert p["model"]["size_bytes"] > 0
    assert p["flops_per_sample"] > 0
    lat = p["latency_ms"]
    for key in ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "std_ms", "samples"):
        assert key in lat
    assert lat["samples"] >= 8 and lat["p50_ms"] > 0
    assert [t["batch"] for t in p["throughput"]][:3] == [1, 2, 4]
    assert all(t["samples_per_s"] > 0 for t in p["throughput"])
    assert p["peak_memory_bytes"] > 0
    assert {x["name"] for x in p["layers"]} >= {"conv1", "conv2", "fc"}
    assert all(x["time_ms"] is not None for x in p["layers"])
    assert isinstance(p["findings"], list) and p["findings"]
    f = p["findings"][0]
    assert {"id", "severity", "layers", "evidence", "impact"} <= set(f)
    assert p["bottleneck"]["bound"] in ("compute", "memory", "overhead")
    assert p["ceilings"]["peak_flops"]["fp32"] > 0
    assert p["threads"]["torch_intra_op_threads"] >= 1


def test_profile_readable_output(cli):
    code, out, err = cli("profile", "--model", "demo:upsampling", "--quick")
    assert code == 0, err
    assert "Latency      p50" in out
    findings = out.split("Architecture findings")[1].splitlines()
    first = next(line for line in findings if line.strip().startswith("1."))
    assert "[high]" in first and "upsampled" in first.lower() and "12.25x" in first

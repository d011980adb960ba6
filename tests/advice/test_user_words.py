"""What the engine says to a user names the method in plain words, never the internal documents behind it.

The method comes from internal documents users have never seen; their numbering ("seed 003",
"Pitfall 7", "the seed table") must not reach an answer, evidence, prompt, source, plan step,
note or decision-tree rationale. This asserts on text the engine produces now, not recorded results.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Iterator

import pytest
from hardware_profiles import with_cpu
from plugin_catalog import CATALOG

from planner.advice import defaults_for, load_requirements, make_plan
from planner.advice.checklist import QUESTIONS
from planner.advice.tree import ACTIONS, TREES
from planner.codec import to_data
from planner.hardware.profile import DeviceClass
from planner.models.demo import DEMOS

INTERNAL = re.compile(r"seed 00|seed table|seed's|seed-table|\bseed \d|pitfall \d", re.IGNORECASE)


def _strings(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON-ready value (keys included), with where it sits."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(str(key), f"{where}.{key}<key>")
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def _internal_words(value: Any) -> list[str]:
    data = json.loads(json.dumps(value, default=str))
    return [f"{where}: {text}" for where, text in _strings(data) if INTERNAL.search(text)]


def test_the_pattern_catches_the_old_wording() -> None:
    for old in ("(seed 003 Pitfall 7)", "default for Server (seed table)", "seed 000's redesign",
                "the seed's MKLDNN advice", "(Pitfall 4)"):
        assert INTERNAL.search(old), old


@pytest.mark.parametrize("device_class", [c.value for c in DeviceClass])
def test_requirement_defaults_name_their_source_in_plain_words(device_class: str) -> None:
    req = defaults_for(device_class)
    assert _internal_words(to_data(req)) == []
    assert req.source("latency_ms") == f"default for {req.tier} (device performance targets)"


def test_static_method_text_is_in_plain_words() -> None:
    assert _internal_words([to_data(q) for q in QUESTIONS]) == []
    assert _internal_words([to_data(a) for a in ACTIONS.values()]) == []
    nodes = [(n.id, n.text, n.when) for tree in TREES.values() for n in tree.nodes.values()]
    assert _internal_words(nodes) == []
    assert _internal_words({name: demo.summary for name, demo in DEMOS.items()}) == []


def _plans(cpu_server, big_cpu_server, pi4, jetson, a100_server, make_baseline) -> dict[str, Any]:
    """Plans that reach every kind of sentence: missed, met, no latency target, bad threads, GPU, edge."""
    sweep = [{"batch": b, "latency_p50_ms": 2.0 + 0.4 * b, "samples_per_s": 1000 * b / (2.0 + 0.4 * b)}
             for b in (1, 2, 4, 8, 16, 32, 64, 128)]
    no_target = dataclasses.replace(defaults_for("cpu_server"), latency_ms=None)
    oversubscribed = with_cpu(cpu_server, usable_cores=1)
    return {
        "cpu missed, threads off": make_plan(
            target="cpu", hw=big_cpu_server, baseline=make_baseline(p50=120.0, p95=130.0, intra=1, inter=4, omp="3"),
            requirements=defaults_for("cpu_server"), catalog=CATALOG),
        "cpu oversubscribed": make_plan(
            target="cpu", hw=oversubscribed, baseline=make_baseline(p50=120.0, p95=130.0, intra=2),
            requirements=defaults_for("cpu_server"), catalog=CATALOG),
        "cpu hyperthreads": make_plan(
            target="cpu", hw=big_cpu_server, baseline=make_baseline(p50=120.0, p95=130.0, intra=16),
            requirements=defaults_for("cpu_server"), catalog=CATALOG),
        "cpu met": make_plan(
            target="cpu", hw=cpu_server, baseline=make_baseline(p50=20.0, p95=22.0),
            requirements=defaults_for("cpu_server"), catalog=CATALOG),
        "cpu no latency target": make_plan(
            target="cpu", hw=cpu_server, baseline=make_baseline(p50=120.0, p95=130.0), requirements=no_target,
                                           catalog=CATALOG),
        "gpu low utilization": make_plan(
            target="nvidia", hw=a100_server,
            baseline=make_baseline(device="cuda", target="nvidia", gpu_utilization=23, throughput=sweep, p50=2.4,
                                   p95=2.6, bound="overhead"),
            requirements=load_requirements(device_class="datacenter_gpu", overrides={"latency_ms": 20}),
                                         catalog=CATALOG),
        "gpu batch breaks target": make_plan(
            target="nvidia", hw=a100_server,
            baseline=make_baseline(device="cuda", target="nvidia", gpu_utilization=80, throughput=sweep, p50=2.4,
                                   p95=2.6, bound="compute"),
            requirements=load_requirements(device_class="datacenter_gpu", overrides={"latency_ms": 2.5}),
                                             catalog=CATALOG),
        "edge on a Pi": make_plan(
            target="edge", hw=pi4, baseline=make_baseline(p50=412.0, p95=430.0, intra=2),
            requirements=defaults_for("raspberry_pi"), catalog=CATALOG),
        "edge on a Jetson": make_plan(
            target="edge", hw=jetson, baseline=make_baseline(p50=150.0, p95=160.0, intra=6),
            requirements=load_requirements(device_class="jetson", overrides={"latency_ms": 50}), catalog=CATALOG),
        "edge planned on a server": make_plan(
            target="edge", hw=cpu_server, baseline=make_baseline(p50=150.0, p95=160.0),
            requirements=defaults_for("raspberry_pi"), catalog=CATALOG),
        "no baseline": make_plan(target="cpu", hw=cpu_server, baseline={}, requirements=defaults_for("cpu_server"),
                                 catalog=CATALOG),
    }


def test_plans_answers_and_tree_rationales_are_in_plain_words(cpu_server, big_cpu_server, pi4, jetson, a100_server,
                                                             make_baseline) -> None:
    plans = _plans(cpu_server, big_cpu_server, pi4, jetson, a100_server, make_baseline)
    found = {name: _internal_words(to_data(plan.record())) for name, plan in plans.items()}
    assert found == {name: [] for name in plans}
    # The scenarios do reach the sentences that used to cite the internal documents.
    text = json.dumps({name: to_data(plan.record()) for name, plan in plans.items()})
    for phrase in ("Threading (too many threads oversubscribe the cores)", "don't over-optimize",
                   "(device performance targets)", "a common profiling pitfall", "typical published figure"):
        assert phrase in text, phrase


@pytest.mark.parametrize("device_class", [c.value for c in DeviceClass])
def test_requirement_sources_avoid_the_engines_shorthand(device_class: str) -> None:
    # "the fidelity gate" is the engine's name for its accuracy check; a user reads the rule itself.
    req = defaults_for(device_class)
    assert not [s for s in req.sources.values() if "fidelity gate" in s]
    assert "1% accuracy lost against the original model" in req.source("accuracy_budget")


CODE_LIKE = re.compile(r"==|\(\)|\b[a-z]+_[a-z_]+\(")
"""Code a user would have to read as Python: comparisons, calls, snake_case functions."""


def test_the_code_pattern_catches_the_old_wording() -> None:
    for old in ("2. torch.get_num_threads() == number of physical cores?", "c. torch.compile()",
                "If not, set torch.set_num_threads(num_cores)", "minimise .cuda()/.cpu() calls"):
        assert CODE_LIKE.search(old), old
    assert not CODE_LIKE.search("2. Do the intra-op threads equal the physical cores?")


def test_tree_nodes_questions_and_actions_read_as_plain_questions() -> None:
    """What the tree and checklist show on screen and in the report carries no code-like text."""
    shown = [n.text for tree in TREES.values() for n in tree.nodes.values()]
    shown += [text for q in QUESTIONS for text in (q.text, q.hint)]
    shown += [a.title for a in ACTIONS.values()]
    assert [s for s in shown if CODE_LIKE.search(s)] == []
    assert "2. Do the intra-op threads equal the physical cores?" in shown


def test_answer_prompts_carry_no_code_calls(cpu_server, big_cpu_server, pi4, jetson, a100_server,
                                            make_baseline) -> None:
    """Prompts and plan text a user reads: no '==' or '()' (API names may appear, not calls)."""
    plans = _plans(cpu_server, big_cpu_server, pi4, jetson, a100_server, make_baseline)
    data = json.loads(json.dumps({name: to_data(plan.record()) for name, plan in plans.items()}, default=str))
    found = [f"{where}: {text}" for where, text in _strings(data)
             if ("==" in text or "()" in text) and not where.endswith("<key>")]
    assert found == []

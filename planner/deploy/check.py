"""A package's check of itself: its files, its outputs against the original model's, and its timing.

`python run.py --check` and `planner verify` judge a package by this code, and by the numbers its manifest
records: the files' SHA-256, the fidelity rule (`fidelity_rule`, which planner.deploy.rule writes from the
plan's fidelity gate at the candidate's precision) and the recorded p50 with its tolerance. So the two cannot
disagree about what passes.

The rule applied to the package's few samples (the reference outputs are the original model's; the samples
carry no labels): a class-score output needs the plan's cosine similarity, top-1 agreement over the samples
whose top-1 margin stands clear of the package's error, and the cosine of the part of the output that depends
on the input; an embedding each sample's cosine; a regression output its error relative to the output's size;
a dense map or a sequence its mean error over the output's scale. Where the rule judges a share by its 95%
interval (every precision but fp32), the share fails only when its whole interval lies below the level: eight
samples cannot establish a share, only refute it, and the plan established it on all of its own. Where the
outputs barely depend on the input (random weights), no test can tell a good package from a bad one: an fp32
package is exact when it reproduces even that small part, and any other is not established.

`timed_calls` times a runner as benchmark_app does: load and compile, the first inference, then a bounded
loop whose median, 90th percentile and throughput are reported.

Standalone on purpose: the standard library and numpy only, no `from __future__` and no planner import,
because every package's run.py carries this file's text as it is (planner.deploy.runfile) and runs without
the planner; planner verify imports it as a module.
"""

import hashlib
import math as _math
import time as _time
from pathlib import Path as _Path
from typing import Any, Callable

import numpy as _np

PASS, FAIL, NOT_ESTABLISHED = "pass", "fail", "not established"
"""A check's verdicts: only a pass passes; a fidelity check that cannot tell is not established."""
_Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
_IGNORED_DIRS = frozenset({"__pycache__"})  # Python writes these beside run.py when it is imported
MANIFEST_FILE = "manifest.json"


def sha256_of(path: Any) -> str:
    """The file's SHA-256 as hex, read in chunks (an artifact may be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_problems(folder: Any, listed: dict) -> list:
    """Every way the folder differs from the manifest's files ({path: SHA-256}): a missing file, an edited one,
    one the manifest does not list."""
    folder = _Path(folder)
    problems = []
    for name, expected in listed.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif sha256_of(path) != expected:
            problems.append(f"{name} was changed after the plan wrote it (its SHA-256 differs from {MANIFEST_FILE})")
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or _IGNORED_DIRS & set(relative.parts) or relative.as_posix() == MANIFEST_FILE:
            continue
        if relative.as_posix() not in listed:
            problems.append(f"{relative.as_posix()} is not part of the package ({MANIFEST_FILE} does not list it)")
    return problems


def wilson_interval(successes: int, n: int) -> tuple:
    """The 95% Wilson score interval of the share `successes / n` (n > 0)."""
    p = successes / n
    scale = 1 + _Z95 ** 2 / n
    centre = (p + _Z95 ** 2 / (2 * n)) / scale
    half = _Z95 / scale * _math.sqrt(p * (1 - p) / n + _Z95 ** 2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def judge_package_outputs(reference: list, outputs: list, rule: dict) -> tuple:
    """(verdict, the test that decided in words, the figures measured) for the package's outputs on the samples
    against the original's, by the manifest's rule (see the module's docstring)."""
    if len(reference) != len(outputs):
        return FAIL, f"{len(outputs)} outputs for {len(reference)} reference outputs", {}
    ref = _np.concatenate([_np.asarray(r, dtype=_np.float64) for r in reference])
    out = _np.concatenate([_np.asarray(o, dtype=_np.float64) for o in outputs])
    if ref.shape != out.shape:
        return FAIL, f"the output's shape {out.shape} differs from the original's {ref.shape}", {}
    if not _np.isfinite(out).all():
        return FAIL, "the outputs are not finite (NaN or Inf)", {}
    rows_ref, rows_out = ref.reshape(len(ref), -1), out.reshape(len(out), -1)
    a, b = rows_ref.ravel(), rows_out.ravel()
    norm_a, norm_b = float(_np.linalg.norm(a)), float(_np.linalg.norm(b))
    cosine = float(a @ b / (norm_a * norm_b)) if norm_a * norm_b > 0 else float(_np.array_equal(a, b))
    mean_error = float(_np.abs(a - b).mean()) if a.size else 0.0
    figures = {"samples": len(rows_ref), "cosine": cosine, "mean_abs_error": mean_error,
               "max_abs_error": float(_np.abs(a - b).max(initial=0.0))}
    figures.update(centered(rows_ref, rows_out))
    kind = str(rule.get("output_kind") or "classes").partition(":")[0]
    judge = {"classes": _classes, "embedding": _embedding, "regression": _regression}.get(kind, _spread)
    why, test = judge(rows_ref, rows_out, ref, figures, rule)
    rule_words = f"the plan's {rule.get('precision', 'fp32')} rule"
    if why:
        return FAIL, f"{why} ({rule_words})", figures
    unjudged = _cannot_judge(norm_a, figures, rule)
    if unjudged:
        exact = rule.get("exact_share")
        error = figures.get("centered_error")
        if exact is not None and error is not None and error <= exact:
            return PASS, (f"exact to rounding: its error is {error:.2g} of the part of the output that depends on "
                          f"the input (at most {exact:g}), though {unjudged} ({rule_words})"), figures
        return NOT_ESTABLISHED, f"cannot judge: {unjudged}; what could be compared passed: {test}", figures
    return PASS, f"{test} ({rule_words})", figures


def plan_note(rule: dict) -> str:
    """What the plan said about a candidate it could not establish ('' when it established it): a pass here
    shows the package reproduces the candidate on a few samples, not that the candidate is good enough."""
    why = rule.get("plan_not_established")
    return (f"the plan could not establish this candidate's fidelity ({why}); these few samples cannot either: "
            "check it on your data before relying on it") if why else ""


def centered(rows_ref: Any, rows_out: Any) -> dict:
    """The part of the (samples, values) outputs that depends on the input, and the candidate on it: both are
    centered on the original's mean over the samples (not each on its own), so a candidate whose outputs are offset
    or that ignores its input is seen. {} with fewer than two samples. The plan's fidelity check uses it too."""
    if len(rows_ref) < 2:
        return {}
    mean = rows_ref.mean(axis=0)
    ref_c, out_c = (rows_ref - mean).ravel(), (rows_out - mean).ravel()
    size, own = float(_np.linalg.norm(ref_c)), float(_np.linalg.norm(out_c))
    total, gap = float(_np.linalg.norm(rows_ref)), float(_np.linalg.norm(rows_out - rows_ref))
    return {"input_spread": size / total if total > 0 else 0.0,
            "centered_cosine": float(ref_c @ out_c / (size * own)) if size > 0 and own > 0 else float(size == own),
            "centered_error": gap / size if size > 0 else (0.0 if gap == 0 else float("inf"))}


def _cannot_judge(norm: float, figures: dict, rule: dict) -> str:
    """Why no test of these outputs can tell a good package from a bad one; '' when one can."""
    if norm == 0:
        return "the original's outputs are zero on every sample"
    spread = figures.get("input_spread")
    if spread is not None and spread < float(rule.get("min_input_spread") or 0.0):
        return (f"the outputs barely depend on the input (random weights?): across the {figures['samples']} "
                f"samples they vary by {spread:.2g} of their size, below the {rule['min_input_spread']:g} a test "
                "of that part needs")
    return ""


def _share_fails(agree: int, counted: int, level: float, rule: dict) -> tuple:
    """(whether a share fails its level, the share in words): on its 95% interval where the rule says so."""
    share = agree / counted
    words = f"{share:.1%} ({agree} of {counted})"
    if rule.get("interval_decides"):
        low, high = wilson_interval(agree, counted)
        return high < level, f"{words}, 95% interval {low:.1%} to {high:.1%}"
    return share < level, words


def _classes(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """Class scores: cosine, then top-1 over the samples whose margin stands clear of the error, then the
    cosine of the part that depends on the input."""
    gate = float(rule["min_cosine"])
    cosine = figures["cosine"]
    if cosine < gate:
        return f"cosine similarity {cosine:.5f} < gate {gate:g}", ""
    tests = [f"cosine similarity {cosine:.5f} (gate {gate:g})"]
    if _cannot_judge(float(_np.linalg.norm(rows_ref)), figures, rule):
        return "", tests[0]
    if rows_ref.shape[1] > 1:
        top2 = _np.sort(rows_ref, axis=1)[:, -2:]
        decisive = top2[:, 1] - top2[:, 0] > float(rule.get("margin_factor", 4.0)) * figures["mean_abs_error"]
        agree = rows_ref.argmax(axis=1) == rows_out.argmax(axis=1)
        counted, level = int(decisive.sum()), float(rule["min_top1"])
        if counted:
            figures["top1_agreement"] = float(agree[decisive].mean())
            fails, words = _share_fails(int(agree[decisive].sum()), counted, level, rule)
            if fails:
                return f"top-1 agreement {words} < gate {level:.0%}", ""
            tests.append(f"top-1 agreement {words} (gate {level:.0%})")
        else:
            tests.append("top-1 is no test here (no sample's top-1 margin exceeds the package's error)")
    centered = figures.get("centered_cosine")
    if centered is not None:
        if not centered >= gate:
            return f"cosine of the part that depends on the input {centered:.5f} < gate {gate:g}", ""
        tests.append(f"cosine of the part that depends on the input {centered:.5f} (gate {gate:g})")
    return "", "; ".join(tests)


def _embedding(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """Vectors: each sample's cosine with the original's, on average."""
    def unit(x: Any) -> Any:
        norms = _np.linalg.norm(x, axis=1, keepdims=True)
        return x / _np.where(norms > 0, norms, 1.0)

    per_sample = _np.sum(unit(rows_ref) * unit(rows_out), axis=1)
    value, gate = float(per_sample.mean()), float(rule["min_cosine"])
    figures["sample_cosine"] = value
    words = f"cosine per sample {value:.4f} (lowest {float(per_sample.min()):.4f})"
    if value < gate:
        return f"{words} < gate {gate:g}", ""
    return "", f"{words} (gate {gate:g})"


def _regression(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """Values: the error relative to the output's size, then over the part that depends on the input."""
    norm = float(_np.linalg.norm(rows_ref))
    gap = float(_np.linalg.norm(rows_out - rows_ref))
    value = gap / norm if norm > 0 else (0.0 if gap == 0 else float("inf"))
    limit = float(rule["max_relative_error"])
    figures["relative_error"] = value
    if value > limit:
        return f"relative error {value:.2g} > gate {limit:g}", ""
    test = f"relative error {value:.2g} (at most {limit:g})"
    centered = figures.get("centered_error")
    if centered is None or _cannot_judge(norm, figures, rule):
        return "", test
    if not centered <= limit:
        return f"error over the part that depends on the input {centered:.2g} > gate {limit:g}", ""
    return "", f"{test}; error over the part that depends on the input {centered:.2g} (at most {limit:g})"


def _spread(rows_ref: Any, rows_out: Any, full: Any, figures: dict, rule: dict) -> tuple:
    """A dense map or a sequence: the mean error over the output's scale (a probability map's is 1, else the
    original's standard deviation)."""
    mean_error = figures["mean_abs_error"]
    kind = str(rule.get("output_kind") or "")
    probability = kind == "dense" and full.size and float(full.min()) >= 0.0 and float(full.max()) <= 1.0
    std = 1.0 if probability else float(full.std())
    value = mean_error / std if std > 0 else (0.0 if mean_error == 0 else float("inf"))
    limit = float(rule["max_spread_error"])
    figures["spread_error"] = value
    where = "on the probability scale" if probability else "relative to the output's spread"
    if value > limit:
        return f"mean error {value:.2g} {where} > gate {limit:g}", ""
    return "", f"mean error {value:.2g} {where} (at most {limit:g})"


def latency_verdict(p50_ms: float, recorded_ms: Any, tolerance: float, calls: Any = None) -> tuple:
    """(verdict, words): the p50 here (over `calls` timed calls, where given) against the one recorded, within
    `tolerance` (a share: 0.10 is 10%)."""
    here = f"p50 {_ms(p50_ms)} here" + (f" over {calls:,} calls" if calls else "")
    if not recorded_ms or recorded_ms <= 0:
        return FAIL, f"{here}; the manifest records no p50 to compare with"
    change = (p50_ms - recorded_ms) / recorded_ms
    within = abs(change) <= tolerance
    words = (f"{here}, {_ms(recorded_ms)} recorded ({change:+.1%}, "
             f"{'within' if within else 'outside'} {tolerance:.0%})")
    if not within:
        words += ("; a different or busy machine changes the timing: compare with the machine in "
                  f"{MANIFEST_FILE}, and run again on an idle one")
    return (PASS if within else FAIL), words


def timed_calls(call: Callable[[Any], Any], inputs: list, *, seconds: float, max_calls: int,
                sync: Any = None, warmup_calls: int = 10, warmup_s: float = 0.2) -> dict:
    """benchmark_app's loop over `inputs` (prepared once, cycled): a short warm-up (as the plan's method has),
    then calls timed one by one until `seconds` have passed with at least 10 calls (a slow model: 3 calls once
    three times that has passed), or `max_calls` were made.

    Returns the times in ms (sorted), the loop's wall time in s, its calls and the warm-up's; `sync` waits for
    work a runtime queued on a device before the clock is read.
    """
    def clock() -> int:
        if sync is not None:
            sync()
        return _time.perf_counter_ns()

    budget_ns = seconds * 1e9
    start = clock()
    index = 0
    while (index < warmup_calls or clock() - start < warmup_s * 1e9) and clock() - start < budget_ns:
        call(inputs[index % len(inputs)])
        index += 1
    warmup = index
    times: list = []
    begin = clock()
    while len(times) < max_calls:
        elapsed = _time.perf_counter_ns() - begin
        if elapsed >= budget_ns and (len(times) >= 10 or (elapsed >= 3 * budget_ns and len(times) >= 3)):
            break
        x = inputs[index % len(inputs)]
        index += 1
        t0 = clock()
        call(x)
        times.append((clock() - t0) / 1e6)
    return {"times_ms": sorted(times), "wall_s": (clock() - begin) / 1e9, "calls": len(times),
            "warmup_calls": warmup}


def _ms(value: float) -> str:
    """A latency in ms with three significant figures ('0.0183 ms', '61.8 ms')."""
    return f"{value:.3g} ms" if value < 1000 else f"{value:,.0f} ms"


def timing_lines(load_s: float, first_ms: float, loop: dict, batch: int) -> list:
    """The timing as benchmark_app prints it: load and compile, first inference, median, p90 and throughput."""
    times = _np.asarray(loop["times_ms"])
    rate = loop["calls"] / loop["wall_s"] if loop["wall_s"] > 0 else float("inf")

    def per_s(value: float) -> str:
        return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"

    return [f"load and compile  {_ms(load_s * 1e3)}",
            f"first inference   {_ms(first_ms)}",
            f"timed             {loop['calls']:,} calls over {loop['wall_s']:.1f} s, after "
            f"{loop['warmup_calls']} warm-up calls",
            f"median (p50)      {_ms(float(_np.percentile(times, 50)))}",
            f"p90               {_ms(float(_np.percentile(times, 90)))}",
            f"throughput        {per_s(rate)} inferences/s" + (f" ({per_s(rate * batch)} samples/s at batch {batch})"
                                                                if batch > 1 else " at batch 1")]

"""The LLM method end to end: check the folder, measure the read roof, build and measure each candidate in its
own process, judge its fidelity, decide, project onto a board, and write results.json, report.md and deploy/.

Every candidate runs in a fresh spawned worker (`run_isolated`), so one runtime's crash, hang or memory blow-up
costs only that candidate; what was measured is written out whatever stops the plan (Ctrl-C included).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from planner.errors import PlannerError
from planner.events import CancelToken, Event, EventSink, null_sink
from planner.llm.fidelity import KL_LIMIT, PERPLEXITY_CHANGE_LIMIT, judge, reference_fidelity
from planner.llm.results import BoardProjection, KvPoint, LlmCandidate, LlmPlan, Timings, write_llm_plan
from planner.llm.timing import LlmMeasurement, MeasureSettings, load_plugin, measure_candidate
from planner.models.llm import (
    KV_VALUE_BYTES,
    WEIGHT_BYTES,
    LlmFacts,
    kv_cache_bytes_at,
    read_llm_folder,
)
from planner.plugins.llm import LLM_GROUP, LlmContext, LlmSkip, LlmSpec

QUICK_BUDGET_S = 300.0
"""A quick LLM plan's default time cap: the exports (one per runtime) dominate it."""
_MEMORY_HEADROOM = 1.3  # a loaded model's resident memory over its weights (runtime, buffers, the tokenizer)


@dataclass(frozen=True)
class LlmOptions:
    """What an LLM plan is asked to do."""

    folder: Path
    out: Path | None = None
    quick: bool = False
    budget_s: float | None = None
    prompt_lengths: tuple[int, ...] = (32, 128, 512)
    new_tokens: int | None = None  # default: 64 quick, 128 full
    context: int | None = None  # the context to plan memory for (default: the longest prompt + new tokens)
    text: Path | None = None
    gguf: Path | None = None
    plugins: tuple[str, ...] = ()
    device: str | None = None
    threads: int | None = None
    timeout_s: float = 600.0
    ppl_limit: float = PERPLEXITY_CHANGE_LIMIT
    kl_limit: float = KL_LIMIT


@dataclass
class LlmOutcome:
    """How an LLM plan ended: its record, its folder and report, and whether it was interrupted."""

    plan: LlmPlan | None
    out_dir: Path | None
    report_path: Path | None = None
    interrupted: bool = False


def check_settings(facts: LlmFacts, options: LlmOptions) -> tuple[tuple[int, ...], int, int]:
    """The prompt lengths (capped at the model's limit), tokens per generation and planned context; a clear error
    for a context or prompt the model cannot take, before anything is measured."""
    new_tokens = options.new_tokens or (64 if options.quick else 128)
    if new_tokens < 2:
        raise PlannerError(f"--new-tokens {new_tokens}: a time per token needs at least 2 generated tokens",
                           "pass --new-tokens 64 or more")
    if options.context is not None and options.context > facts.context:
        raise PlannerError(f"--context {options.context} is longer than {facts.name}'s limit of {facts.context} tokens "
                           "(max_position_embeddings)", f"pass --context {facts.context} or less")
    limit = options.context or facts.context
    if any(n < 1 for n in options.prompt_lengths):
        raise PlannerError("a prompt length must be at least 1 token", "pass e.g. --prompt-lengths 32,128,512")
    too_long = [n for n in options.prompt_lengths if n + new_tokens > limit]
    if options.context is not None and too_long:
        raise PlannerError(f"prompt length {too_long[0]} plus {new_tokens} new tokens is more than the context of "
                           f"{limit} tokens", "pass shorter --prompt-lengths, fewer --new-tokens or a longer --context")
    lengths = tuple(sorted({n for n in options.prompt_lengths if n + new_tokens <= limit}))
    if not lengths:
        # The model's limit is below every asked length: time at its limit (the "and the model's limit").
        lengths = (max(1, limit - new_tokens),)
    context = options.context or (max(lengths) + new_tokens)
    return lengths, new_tokens, context


def check_memory(facts: LlmFacts, context: int, usable_bytes: int | None) -> None:
    """Refuse, from the config alone, a model whose fp32 baseline cannot fit in memory, naming a precision that fits."""
    if not usable_bytes:
        return

    def need(precision: str) -> int:
        kv = "fp32" if precision == "fp32" else "bf16"
        return int(facts.memory_bytes(precision, kv, 0) * _MEMORY_HEADROOM + kv_cache_bytes_at(facts, context, kv))

    if need("fp32") <= usable_bytes:
        return
    fits = [p for p in ("bf16", "int8", "int4") if need(p) <= usable_bytes]
    gib = 1 << 30
    fix = (f"at {fits[0]} it needs about {need(fits[0]) / gib:.1f} GiB: quantise it first (optimum-cli export "
           f"openvino --weight-format {fits[0]}) and plan that, or plan on a machine with more memory"
           if fits else "not even INT4 weights fit: plan it on a machine with more memory")
    raise PlannerError(f"{facts.name} needs about {need('fp32') / gib:.1f} GiB at fp32 (the baseline's precision: "
                       f"{facts.parameters / 1e9:.2f}B parameters plus the KV cache at {context} tokens), and "
                       f"{usable_bytes / gib:.1f} GiB is usable here", fix)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dir_bytes(path: str | Path) -> int:
    root = Path(path)
    if root.is_file():
        return root.stat().st_size
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


class LlmPlanRun:
    """One LLM plan's state while it runs; `run` drives it, and every step leaves results.json up to date."""

    def __init__(self, options: LlmOptions, on_event: EventSink = null_sink, cancel: CancelToken | None = None):
        self.options = options
        self.on_event = on_event
        self.cancel = cancel or CancelToken()
        self.facts = read_llm_folder(options.folder)
        self.out_dir: Path | None = None
        self.plan: LlmPlan | None = None
        self._started = time.monotonic()
        self._warnings: list[str] = []

    # --- progress

    def log(self, message: str, *, stage: str = "") -> None:
        """A progress line for whoever listens (the CLI prints it; the TUI shows it in the log)."""
        self.on_event(Event("stage" if stage else "log", message, stage=stage))

    def warn(self, message: str) -> None:
        """A warning, kept in the plan's record."""
        self._warnings.append(message)
        self.on_event(Event("warning", message))

    def _left_s(self) -> float | None:
        budget = self.options.budget_s or (QUICK_BUDGET_S if self.options.quick else None)
        return None if budget is None else budget - (time.monotonic() - self._started)

    # --- the steps

    def run(self) -> LlmOutcome:
        """Run the whole method; Ctrl-C keeps what was measured (results.json says interrupted), then re-raises."""
        from planner.hardware.detect import detect
        from planner.llm.report import write_report
        from planner.pipeline.outdir import default_out_dir, prepare_out_dir

        options, facts = self.options, self.facts
        lengths, new_tokens, context = check_settings(facts, options)
        hw = detect()
        check_memory(facts, context, hw.memory.usable_bytes)
        board = None
        if options.device:
            from planner.hardware.boards import get_profile

            board = get_profile(options.device)  # an unknown name fails before measuring
        threads = options.threads or hw.cpu.usable_cores
        self.out_dir = prepare_out_dir(options.out or default_out_dir(facts.name, "llm"))
        from planner.llm.corpus import read_text

        text, text_name = read_text(options.text)
        self.plan = LlmPlan(
            facts=facts, cpu=_cpu_name(hw.cpu.vendor, hw.cpu.model), threads=threads, roof=None,
            cache_resident=False, prompt_lengths=lengths, new_tokens=new_tokens, context=context, text=text_name,
            ppl_limit=options.ppl_limit, kl_limit=options.kl_limit, started=_now(), quick=options.quick,
            budget_s=options.budget_s or (QUICK_BUDGET_S if options.quick else None))
        self.save()
        status = "ok"
        try:
            self._measure_roof(hw, threads)
            settings = self._settings(text, lengths, new_tokens)
            self._measure_all(settings, threads)
            self._decide(board)
            if not self.cancel.cancelled:  # a cancelled plan is written as it stands: no package to build and run
                self._package()
        except KeyboardInterrupt:
            self.warn("interrupted by Ctrl-C: results.json holds what was measured")
            self._finish("interrupted", write_report)
            raise
        except Exception as exc:  # noqa: BLE001 - keep what was measured, then surface the error
            self.warn(f"plan stopped: {type(exc).__name__}: {exc}")
            self._finish("failed", write_report)
            raise
        if self.cancel.cancelled:
            status = "interrupted"
        report = self._finish(status, write_report)
        return LlmOutcome(self.plan, self.out_dir, report, interrupted=status == "interrupted")

    def save(self) -> None:
        """Write results.json as it stands."""
        if self.plan is not None and self.out_dir is not None:
            write_llm_plan(self.plan, self.out_dir)

    def _update(self, **changes) -> None:
        assert self.plan is not None
        self.plan = dataclasses.replace(self.plan, **changes)
        self.save()

    def _finish(self, status: str, write_report: Callable) -> Path | None:
        self._update(status=status, finished=_now(), warnings=tuple(self._warnings))
        if self.out_dir is None or self.plan is None:
            return None
        try:
            return write_report(self.plan, self.out_dir)
        except OSError as exc:
            self.warn(f"the report could not be written: {exc}")
            return None

    def _measure_roof(self, hw, threads: int) -> None:
        from planner.hardware.read_bandwidth import last_level_cache, measure_read_bandwidth
        from planner.measure.worker import run_isolated

        self.log(f"Measuring how fast {threads} {'thread reads' if threads == 1 else 'threads read'} memory (the "
                 "decode roof)", stage="roof")
        done = run_isolated(measure_read_bandwidth, hw, threads, quick=self.options.quick, timeout_s=120)
        roof = done.value if done.status == "ok" else None
        if roof is None:
            self.warn(f"the read bandwidth could not be measured ({done.reason}): no share of the roof is given")
        llc = last_level_cache(hw)
        resident = bool(llc) and self.facts.weight_bytes < llc
        self._update(roof=roof, cache_resident=resident)
        if roof is not None:
            self.log(f"Read roof: {roof.bytes_per_s / 1e9:.1f} GB/s with {threads} thread{'s' if threads > 1 else ''}")

    def _settings(self, text: str, lengths: tuple[int, ...], new_tokens: int) -> MeasureSettings:
        """Prompts, scored windows and greedy prompts cut from the text, tokenized with the model's tokenizer."""
        from transformers import AutoTokenizer

        from planner.llm.corpus import token_windows

        tokenizer = AutoTokenizer.from_pretrained(self.facts.folder)
        quick = self.options.quick
        window, count = (128, 4) if quick else (256, 8)
        # Keep the original's saved log-probabilities under ~256 MiB whatever the vocabulary.
        while count > 2 and count * window * max(1, self.facts.vocab) * 4 > 256 << 20:
            count -= 1
        needed = max(lengths) + (count + 17) * window
        ids = tokenizer(text[: max(20_000, needed * 8)], add_special_tokens=False)["input_ids"]
        if len(ids) < max(lengths) + 64:
            raise PlannerError(f"the text gives {len(ids)} tokens, fewer than the longest prompt ({max(lengths)})",
                               "pass a longer --text file or shorter --prompt-lengths")
        prompts = {n: tuple(ids[:n]) for n in lengths}
        rest = ids[max(lengths):]
        windows = tuple(tuple(w) for w in token_windows(rest, window, count))
        step = max(1, len(rest) // 17)
        greedy_prompts = tuple(tuple(rest[i * step:i * step + 32]) for i in range(1, 17))
        greedy_prompts = tuple(p for p in greedy_prompts if len(p) == 32)
        return MeasureSettings(prompts=prompts, new_tokens=new_tokens, repeats=3 if quick else 5, windows=windows,
                               greedy_prompts=greedy_prompts, greedy_tokens=16 if quick else 32)

    def _plugins(self) -> list:
        found = []
        for ep in sorted(importlib.metadata.entry_points(group=LLM_GROUP), key=lambda e: e.name):
            if self.options.plugins and ep.name not in self.options.plugins:
                continue
            try:
                found.append(ep.load()())
            except Exception as exc:  # noqa: BLE001 - a plugin that fails to import costs only itself
                self.warn(f"one of the installed LLM runtimes could not be loaded (entry point {ep.value}): "
                          f"{type(exc).__name__}: {exc}")
        found.sort(key=lambda p: not p.is_baseline)  # the baseline first: every candidate is compared with it
        return found

    def _measure_all(self, settings: MeasureSettings, threads: int) -> None:
        from planner.measure.worker import run_isolated

        assert self.out_dir is not None
        # Absolute: the builders run as subprocesses in folders of their own, where a relative path means elsewhere.
        work = (self.out_dir / "artifacts").resolve()
        work.mkdir(exist_ok=True)
        reference = str(work / "original-logprobs.npy")
        records: list[LlmCandidate] = []
        baseline: LlmMeasurement | None = None
        for plugin in self._plugins():
            ctx = LlmContext(facts=self.facts, workdir=work / plugin.name, threads=threads, quick=self.options.quick,
                             gguf=self.options.gguf)
            reasons = plugin.check(self.facts, ctx)
            if reasons:
                records.append(LlmCandidate(label=plugin.title or plugin.name, plugin=plugin.name,
                                            title=plugin.title or plugin.name, status="skipped",
                                            reason="; ".join(reasons), runtime=plugin.runtime))
                self.log(f"{plugin.title}: skipped ({'; '.join(reasons)})")
                self._update(candidates=tuple(records))
                continue
            left = self._left_s()
            if self.cancel.cancelled or (left is not None and left <= 0):
                records.append(LlmCandidate(label=plugin.title, plugin=plugin.name, title=plugin.title,
                                            status="not reached", runtime=plugin.runtime,
                                            reason="cancelled" if self.cancel.cancelled else "the budget ran out"))
                continue
            self.log(f"Building {plugin.title} candidates", stage="build")
            ctx.workdir.mkdir(parents=True, exist_ok=True)
            built = run_isolated(_build, plugin.name, ctx.facts, ctx.workdir, threads, self.options.quick,
                                 self.options.gguf, timeout_s=self.options.timeout_s, env=_thread_env(threads))
            if built.status != "ok":
                records.append(LlmCandidate(label=plugin.title, plugin=plugin.name, title=plugin.title,
                                            status="failed", runtime=plugin.runtime,
                                            reason=f"building failed: {built.reason}"))
                self.warn(f"{plugin.title}: building failed: {built.reason}")
                self._update(candidates=tuple(records))
                continue
            for item in built.value:
                if isinstance(item, LlmSkip):
                    records.append(LlmCandidate(label=item.label, plugin=plugin.name, title=item.label,
                                                status="skipped", reason=item.reason, runtime=plugin.runtime))
                    continue
                record, measured = self._measure_one(plugin, item, settings, reference, baseline)
                if record.is_baseline and measured is not None and baseline is None:
                    baseline = measured
                records.append(record)
                self._update(candidates=tuple(records))
        self._update(candidates=tuple(records))

    def _measure_one(self, plugin, spec: LlmSpec, settings: MeasureSettings, reference: str,
                     baseline: LlmMeasurement | None) -> tuple[LlmCandidate, LlmMeasurement | None]:
        from planner.codec import to_data
        from planner.measure.worker import run_isolated

        described = plugin.describe(spec)
        is_baseline = plugin.is_baseline and baseline is None and spec.weights == "fp32"
        common = dict(label=spec.label, plugin=plugin.name, title=described.title, runtime=plugin.runtime,
                      weights=spec.weights, kv=spec.kv, threads=spec.threads, apply=described.apply,
                      is_baseline=is_baseline, spec=to_data(spec), notes=spec.notes,
                      model_bytes=sum(_dir_bytes(p) for p in spec.artifacts.values()))
        left = self._left_s()
        if self.cancel.cancelled or (left is not None and left <= 0 and not is_baseline):
            return LlmCandidate(status="not reached", reason="cancelled" if self.cancel.cancelled
                                else "the budget ran out", **common), None
        mine = dataclasses.replace(settings, save_reference=reference if is_baseline else "",
                                   reference=reference if baseline is not None else "",
                                   deadline_s=max(10.0, left / 3) if left is not None else 0.0)
        self.log(f"Measuring {described.title}", stage="measure")
        log = self.out_dir / "artifacts" / "measure.log" if self.out_dir else None
        done = run_isolated(_measure, spec, self.facts.folder, mine, log, timeout_s=self.options.timeout_s,
                            env=_thread_env(spec.threads))
        if done.status != "ok":
            self.warn(f"{described.title}: {done.status}: {done.reason}")
            return LlmCandidate(status="failed", reason=f"{done.status}: {done.reason}", **common), None
        measured: LlmMeasurement = done.value
        timings = _timings(measured, settings.new_tokens)
        if is_baseline:
            fidelity = reference_fidelity(measured.nll, measured.greedy)
        elif baseline is not None:
            fidelity = judge(baseline.nll, measured.nll, measured.kl, baseline.greedy, measured.greedy,
                             ppl_limit=self.options.ppl_limit, kl_limit=self.options.kl_limit)
        else:
            fidelity = None
        kv_value = KV_VALUE_BYTES.get(spec.kv, 2.0)
        points = tuple(KvPoint(tokens=tokens, predicted_bytes=kv_cache_bytes_at(self.facts, tokens, spec.kv),
                               measured_bytes=size) for size, tokens in
                       (measured.kv_measured[n] for n in sorted(measured.kv_measured)))
        if not points:
            held = [n + settings.new_tokens - 1 for n in sorted(settings.prompts)]
            points = tuple(KvPoint(tokens=n, predicted_bytes=kv_cache_bytes_at(self.facts, n, spec.kv),
                                   measured_bytes=None) for n in held)
        decode_context = max(settings.prompts) + settings.new_tokens // 2
        per_token = self.facts.read_bytes_per_token(spec.weights if spec.weights in WEIGHT_BYTES else "fp32",
                                                    decode_context, kv_value)
        roof = self.plan.roof if self.plan else None
        share = (timings.decode_tokens_per_s * per_token / roof.bytes_per_s) if roof else None
        record = LlmCandidate(status="measured", timings=timings, fidelity=fidelity, kv_points=points,
                              bytes_per_token=per_token, roof_share=share,
                              **{**common, "notes": tuple(common["notes"]) + measured.notes})
        longest = max(timings.ttft_p50_ms)
        self.on_event(Event("stage_done", f"  {described.title}: TTFT {timings.ttft_p50_ms[longest]:.1f} ms at "
                 f"{longest} tokens, TPOT {timings.tpot_p50_ms:.2f} ms "
                 f"({timings.decode_tokens_per_s:.1f} tokens/s)"
                 + (f", fidelity {fidelity.verdict}" if fidelity and not is_baseline else "")))
        return record, measured

    def _decide(self, board) -> None:
        assert self.plan is not None
        measured = [c for c in self.plan.candidates if c.status == "measured" and c.timings is not None]
        eligible = [c for c in measured if c.fidelity is not None and c.fidelity.verdict in ("met", "reference")]
        if not eligible:
            self._update(winner="", decision="no candidate was measured with its fidelity established against the "
                         "original, so none is chosen")
        else:
            best = max(eligible, key=lambda c: c.timings.decode_tokens_per_s if c.timings else 0.0)
            base = self.plan.baseline
            gain = (best.timings.decode_tokens_per_s / base.timings.decode_tokens_per_s
                    if base and base.timings and best.timings else None)
            why = (f"{best.title} decodes fastest among the candidates whose perplexity change and KL divergence "
                   f"stayed within their limits" + (f" ({gain:.2f}x the original's tokens/s)" if gain else ""))
            self._update(winner=best.label, decision=why)
        if board is not None:
            self._update(board=_project(board, self.plan, self.facts))

    def _package(self) -> None:
        """The winner's hand-over package in deploy/, checked by running its run.py --check."""
        assert self.plan is not None and self.out_dir is not None
        winner = self.plan.candidate(self.plan.winner) if self.plan.winner else None
        if winner is None:
            return
        from planner.codec import from_data

        dest = self.out_dir / "deploy"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir()
        try:
            spec = from_data(winner.spec, LlmSpec)
            load_plugin(winner.plugin).package(spec, self.facts, dest)
        except Exception as exc:  # noqa: BLE001 - a package that cannot be written is a recorded reason
            self._update(package_problem=f"the package could not be written: {type(exc).__name__}: {exc}")
            self.warn(self.plan.package_problem)
            return
        self.log("Checking the package: python deploy/run.py --check", stage="package")
        try:
            run = subprocess.run([sys.executable, "run.py", "--check"], cwd=dest, capture_output=True, text=True,
                                 timeout=300)
            problem = "" if run.returncode == 0 else (
                f"run.py --check exited {run.returncode}: {(run.stderr.strip().splitlines() or [''])[-1]}")
        except subprocess.TimeoutExpired:
            problem = "run.py --check did not finish in 300 s"
        self._update(package="deploy", package_problem=problem)
        if problem:
            self.warn(problem)


def _cpu_name(vendor: str, model: str) -> str:
    """'AMD EPYC', not 'AMD AMD EPYC': the model name usually carries the vendor already."""
    return model if vendor.lower() in model.lower() else f"{vendor} {model}".strip()


def _thread_env(threads: int | None) -> dict[str, str]:
    """The worker's thread settings, set before torch or a runtime starts its pools."""
    quiet = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1",
             "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return {**quiet, "OMP_NUM_THREADS": str(threads)} if threads else quiet


def _output_to(log: Path) -> None:
    """Send this worker's stdout and stderr (native libraries' too) to `log`: exporters and quantizers print tables
    and progress bars that would break the plan's own progress lines; the log keeps them for a failure."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(handle, 1)
    os.dup2(handle, 2)
    os.close(handle)


def _build(plugin_name: str, facts: LlmFacts, workdir: Path, threads: int, quick: bool,
           gguf: Path | None) -> list[LlmSpec | LlmSkip]:
    """In a worker: a plugin's candidates, built (exports, quantization) under `workdir` (output in build.log)."""
    _output_to(Path(workdir) / "build.log")
    plugin = load_plugin(plugin_name)
    ctx = LlmContext(facts=facts, workdir=workdir, threads=threads, quick=quick, gguf=gguf)
    return list(plugin.candidates(ctx))


def _measure(spec: LlmSpec, folder: str, settings: MeasureSettings, log: Path | None) -> LlmMeasurement:
    """In a worker: measure one candidate, its runtime's own output sent to `log`."""
    if log is not None:
        _output_to(log)
    return measure_candidate(spec, folder, settings)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _timings(m: LlmMeasurement, new_tokens: int) -> Timings:
    """Medians and 90th percentiles of what the worker timed."""
    ttft50 = {n: statistics.median(v) for n, v in m.ttft_ms.items()}
    ttft90 = {n: _quantile(list(v), 0.9) for n, v in m.ttft_ms.items()}
    tpot50 = statistics.median(m.tpot_ms)
    longest = max(ttft50)
    return Timings(ttft_p50_ms=ttft50, ttft_p90_ms=ttft90, tpot_p50_ms=tpot50,
                   tpot_p90_ms=_quantile(list(m.tpot_ms), 0.9),
                   decode_tokens_per_s=1000.0 / tpot50, prefill_tokens_per_s=longest / (ttft50[longest] / 1000.0),
                   load_s=m.load_s, peak_rss_bytes=m.peak_rss_bytes, generations=m.timed_generations,
                   tpot_samples=len(m.tpot_ms), new_tokens=new_tokens)


def _project(board, plan: LlmPlan, facts: LlmFacts) -> BoardProjection:
    """Decode tokens/s on the board: its datasheet bandwidth over the bytes each candidate reads per token."""
    rate = board.bandwidth_gbs * 1e9
    speeds, fits = {}, {}
    for c in plan.candidates:
        if c.status != "measured" or not c.bytes_per_token:
            continue
        speeds[c.label] = rate / c.bytes_per_token
        held = facts.memory_bytes(c.weights, c.kv, plan.context) * _MEMORY_HEADROOM
        fits[c.label] = held <= board.memory_gb * (1 << 30)
    basis = (f"an estimate: the {board.title}'s datasheet memory bandwidth ({board.bandwidth_gbs:g} GB/s) over the "
             "bytes each candidate reads per decoded token; real decoding reaches a share of it, as here")
    return BoardProjection(board=board.title, bandwidth_bytes_per_s=rate, basis=basis, tokens_per_s=speeds, fits=fits)


def run_llm_plan(options: LlmOptions, *, on_event: EventSink = null_sink,
                 cancel: CancelToken | None = None) -> LlmOutcome:
    """Plan a decoder LLM folder end to end (what `planner plan --model FOLDER` runs for a causal LM)."""
    return LlmPlanRun(options, on_event, cancel).run()

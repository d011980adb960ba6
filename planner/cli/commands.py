"""The CLI's subcommand handlers: thin wrappers that call the engine and print its results."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from planner import units
from planner.cli.output import print_json
from planner.errors import PlannerError
from planner.results import RESULTS_NAME, Status, read_results, to_data
from planner.results.view import model_inputs

if TYPE_CHECKING:
    from planner.pipeline.options import PlanOptions


def _load(args: argparse.Namespace):
    from planner.models import load_model

    return load_model(args.model, input_shape=args.input_shape, inputs=args.inputs, trust_code=args.trust_code)


def cmd_default(args: argparse.Namespace) -> int:
    """No command: open the TUI where there is a terminal, else explain the headless commands."""
    args.model = None
    args.input_shape = None
    args.inputs = None
    args.trust_code = False
    return cmd_tui(args)


def cmd_detect(args: argparse.Namespace) -> int:
    """Print the hardware profile (and, on request, the measured ceilings)."""
    from planner.hardware import detect, format_profile

    hw = detect()
    ceilings = None
    if getattr(args, "refresh", False) and not args.ceilings:
        raise PlannerError("--refresh re-measures the ceilings, so it needs --ceilings",
                           "run `planner detect --ceilings --refresh`")
    if args.ceilings:
        from planner.hardware.ceilings import measure_ceilings

        ceilings = measure_ceilings(hw, refresh=getattr(args, "refresh", False))
    from planner.hardware.energy.find import describe, probe_devices

    energy = probe_devices(len(hw.gpus))
    if args.json:
        data = to_data(hw)
        if ceilings:
            data["ceilings"] = to_data(ceilings)
        data["energy_counters"] = {device: to_data(probe) for device, probe in energy.items()}
        print_json(data)
        return 0
    print(format_profile(hw))
    for device, probe in energy.items():
        print(f"Energy counter for {'GPU' if device == 'cuda' else 'CPU'} work: {describe(probe)}")
    if ceilings:
        print(format_ceilings(ceilings))
    return 0


def format_ceilings(ceilings) -> str:
    """The roofline ceilings as two readable lines."""
    from planner.hardware.ceiling_notes import measurement_note, warnings

    peaks = ", ".join(f"{p} {units.flop_rate(v)}" for p, v in ceilings.peak_flops.items())
    how = measurement_note(dict(getattr(ceilings, "details", None) or {}))
    ridges = ", ".join(f"{units.ratio(ceilings.ridge_point(p))} ({p})" for p in ceilings.peak_flops)
    warned = "".join(f"\n  Warning: {w}" for w in warnings(dict(getattr(ceilings, "details", None) or {})))
    return (f"Ceilings ({ceilings.source}): peak {peaks}; memory bandwidth "
            f"{units.bandwidth(ceilings.bandwidth_bytes_per_s)}; ridge point {ridges} FLOP/byte"
            + (f"\n  How: {how}" if how else "") + warned)


def cmd_plugins(args: argparse.Namespace) -> int:
    """List the registered plugins with their declarations (the decision-tree actions each measures, what it
    does to the arithmetic, its runtime and roadmap phase), then the ones that could not be loaded and why."""
    from planner.plugins import Catalog, discover
    from planner.plugins.declarations import ACTION_WORDS

    plugins, issues = discover()
    declared = Catalog.of(plugins).declarations
    if args.json:
        print_json({"plugins": [to_data(d) for d in declared],
                    "not_loaded": [{"plugin": i.name, "reason": i.reason} for i in issues]})
        return 0
    phases = {1: "quick wins", 2: "extra impact", 3: "architecture"}
    arithmetic = {"none": "same arithmetic", "reduced-precision": "fewer bits per number",
                  "approximate": "approximates the model", "structural": "a new architecture (needs retraining)"}
    for d in declared:
        actions = "; ".join(ACTION_WORDS.get(a, a) for a in d.actions)
        role = "the baseline" if d.is_baseline else (f"measures: {actions}" if actions else "measured when named "
                                                     "with --plugins")
        print(f"{d.name:<24} {d.target:<7} phase {int(d.phase)} ({phases[int(d.phase)]}), runtime {d.runtime}, "
              f"{arithmetic.get(str(d.arithmetic), str(d.arithmetic))}")
        print(f"{'':<24} {d.summary}")
        print(f"{'':<24} {role}")
    for issue in issues:
        print(f"{issue.name:<24} not loaded: {issue.reason}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """List the model sources the planner can load."""
    from planner.models.demo import DEMOS

    print("Built-in demo models (seeded random weights, except demo:digits, trained on first use):")
    for name, demo in DEMOS.items():
        inputs = demo.inputs()
        if inputs.is_plain_image_like():
            print(f"  demo:{name:<12} {inputs.text():<12} {demo.summary}")
        else:
            # Several inputs do not fit the shape column: their --input flags go on the next line.
            print(f"  demo:{name:<12} {f'{len(inputs.tensors)} inputs':<12} {demo.summary}")
            print(f"  {'':<17} {inputs.example()}")
    print("\nTorchvision models: tv:<name>, e.g. tv:resnet18, tv:mobilenet_v3_small")
    try:
        import torchvision

        names = torchvision.models.list_models(module=torchvision.models)
        print("  " + ", ".join(names))
    except ImportError as exc:
        print(f"  (torchvision not importable: {exc})")
    print("  Built with random weights: pretrained weights are never downloaded, so speed and\n"
          "  memory are real but predictions are not. Use a file source for trained weights.")
    print("\nFiles:")
    print("  path/to/model.py:factory   Python file; factory() returns an nn.Module. Runs code,")
    print("                             so it needs --trust-code. INPUT_SPEC (a list of --input")
    print("                             strings) or INPUT_SHAPE in the file is used.")
    print("  model.onnx                 ONNX (checked; external data must stay in its folder);")
    print("                             its inputs' names, dtypes and axes are read from the graph")
    print("  model.pt2                  torch.export archive (torch.export.save); its signature is read")
    print("  model.pt                   TorchScript (torch.jit.save). Pickles and state dicts")
    print("                             are refused: weights-only loading.")
    print("  Any file name works (vad.jit, model.bin): the kind is told from the file's content.")
    print("\nInputs: --input NAME:SHAPE:DTYPE[:LOW-HIGH|:VALUE], once per input (the range's upper end is")
    print("  excluded), e.g. --input input_ids:1x128:int64:0-30522 --input attention_mask:1x128:int64;")
    print("  an empty shape is a scalar, and one value fixes it: --input sr::int64:16000;")
    print("  --input-shape 1x3x224x224 for a model with one float input.")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    """Load a model and print what was loaded."""
    from planner.models.llm import is_model_folder

    if is_model_folder(args.model):
        return _inspect_llm(args)
    model = _load(args)
    data = model.describe()
    if args.json:
        print_json(data)
        return 0
    print(f"Model       {data['source']} ({data['kind']})")
    print(f"Parameters  {data['parameters']:,}")
    print(f"Size        {units.size(data['size_bytes'], missing='n/a')} (weights and buffers)")
    print(format_inputs(data))
    print(f"Output      {'x'.join(map(str, data['output_shape']))}")
    print(f"Runtime     {data['runtime']}")
    for note in data["notes"]:
        print(f"Note        {note}")
    return 0


def _inspect_llm(args: argparse.Namespace) -> int:
    """A decoder LLM folder's facts, read from its config and weight headers (nothing is loaded)."""
    import dataclasses

    from planner.models.llm import kv_cache_bytes, read_llm_folder

    facts = read_llm_folder(args.model)
    if args.json:
        print_json({**dataclasses.asdict(facts), "kind": "decoder-llm"})
        return 0
    print(f"Model       {facts.folder} (a decoder LLM: {facts.architecture})")
    print(f"Layers      {facts.layers}, hidden size {facts.hidden}, feed-forward {facts.intermediate}")
    print(f"Attention   {facts.heads} heads sharing {facts.kv_heads} key/value heads, head size {facts.head_size}")
    print(f"Vocabulary  {facts.vocab:,} tokens; context limit {facts.context:,} tokens")
    print(f"Parameters  {facts.parameters:,}")
    print(f"Weights     {units.size(facts.weight_bytes)} as stored ({facts.stored_dtype})")
    print(f"KV cache    {units.size(kv_cache_bytes(facts, 1000, 2.0))} per 1,000 tokens at 16 bits "
          "(2 x layers x KV heads x head size x 2 bytes)")
    print("Plan it     planner plan --model " + facts.folder + " --quick")
    return 0


def format_inputs(data: dict) -> str:
    """The model's inputs from `describe()`: the batch, then one line per input (dtype, named axes, values)."""
    inputs = model_inputs(data)
    if not inputs:
        return "Inputs      not known"
    batch = next((i.shape[0] for i in inputs if i.shape), 1)  # a scalar input (a sample rate) has no batch
    dynamic = data.get("dynamic_batch")
    lines = [f"Batch       {batch}, " + ("dynamic (dimension 0 of every input may vary): the plan sweeps batch sizes"
                                          if dynamic else "fixed by the model's inputs: measured at this batch only")]
    width = max(len(i.name) for i in inputs)
    for i in inputs:
        batch_kind = "" if i.dynamic_batch is None else "dynamic batch" if i.dynamic_batch else "fixed batch"
        if "batch" in i.axes[1:]:
            batch_kind = f"batch on axis {i.axes.index('batch', 1)}"  # a recurrent state [layers, batch, size]
        facts = ", ".join(part for part in (f"{i.dtype} [{i.dims}]", batch_kind) if part)
        lines.append(f"Input       {i.name:<{width}}  {facts}" + (f"; values {i.values}" if i.values else ""))
    return "\n".join(lines)


def cmd_profile(args: argparse.Namespace) -> int:
    """Measure the baseline and print the profile (or its JSON).

    It runs the session's profile step, as `planner plan` does: a demo that ships validation data
    (demo:digits) takes its baseline's outputs on it, and the progress says so.
    """
    from planner.cli.output import format_baseline
    from planner.cli.progress import CliProgress
    from planner.pipeline import PlanSession

    session = PlanSession()
    session.load(args.model, input_shape=args.input_shape, inputs=args.inputs, trust_code=args.trust_code)
    with CliProgress(enabled=not args.json, verbose=args.verbose) as progress:
        session.on_event = progress
        baseline = session.profile(quick=args.quick)
    if args.json:
        print_json(to_data(baseline))
    else:
        print(format_baseline(baseline))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Run the whole method headless and write results (and the report) to a folder (on a host over SSH with
    --host)."""
    from planner.cli.plan_args import plan_options
    from planner.cli.progress import CliProgress
    from planner.pipeline import run_plan
    from planner.pipeline.budget import plan_budget_s

    if args.host:
        from planner.cli.remote import cmd_plan_host

        return cmd_plan_host(args)
    options = plan_options(args)
    from planner.models.llm import is_model_folder

    if is_model_folder(options.model):
        return _plan_llm(options, args)  # a causal LM, or a clear error saying why the folder is not one
    budget_s = plan_budget_s(options.budget_s, quick=options.quick)
    with CliProgress(enabled=True, budget_s=budget_s, verbose=args.verbose) as progress:
        if args.engine == "subprocess":
            from planner.engine.plan import run_plan_in_engine

            outcome = run_plan_in_engine(options, on_event=progress)
        else:
            outcome = run_plan(options, on_event=progress)
    from planner.cli.output import print_outcome

    return print_outcome(outcome, json_out=args.json)


def _plan_llm(options: "PlanOptions", args: argparse.Namespace) -> int:
    """Plan a decoder LLM folder (planner.llm): its own method, token by token."""
    from planner.cli.progress import CliProgress
    from planner.llm.plan import QUICK_BUDGET_S, LlmOptions, run_llm_plan

    if args.engine == "subprocess":
        raise PlannerError("--engine subprocess does not run decoder LLM plans yet",
                           "leave --engine out: the LLM plan measures each candidate in its own process anyway")
    llm = LlmOptions(folder=Path(options.model), out=options.out, quick=options.quick, budget_s=options.budget_s,
                     prompt_lengths=options.prompt_lengths, new_tokens=options.new_tokens, context=options.context,
                     text=options.text, gguf=options.gguf, plugins=options.plugins, device=options.device,
                     timeout_s=max(options.timeout_s, 600.0))
    budget_s = options.budget_s or (QUICK_BUDGET_S if options.quick else None)
    with CliProgress(enabled=True, budget_s=budget_s, verbose=args.verbose) as progress:
        outcome = run_llm_plan(llm, on_event=progress)
    plan = outcome.plan
    if args.json and plan is not None:
        print_json(to_data(plan))
    elif plan is not None:
        winner = plan.candidate(plan.winner) if plan.winner else None
        if winner is not None and winner.timings is not None:
            print(f"Chosen: {winner.title}: {units.tokens_rate(winner.timings.decode_tokens_per_s)}, TPOT p50 "
                  f"{winner.timings.tpot_p50_ms:.2f} ms")
        else:
            print(f"No candidate chosen: {plan.decision}")
        print(f"Wrote {outcome.out_dir}/results.json and {outcome.report_path}")
    return 0 if plan is not None and plan.status == "ok" else 1


def cmd_bench(args: argparse.Namespace) -> int:
    """Re-measure one candidate the way the plan did."""
    from planner.measure.evaluate import MeasureJob, measure
    from planner.plugins import CandidateSpec, ModelRef

    try:
        spec = CandidateSpec.from_text(args.candidate)
    except (ValueError, KeyError, OSError) as exc:
        raise PlannerError(f"cannot read the candidate spec: {exc}",
                           "pass the JSON printed in the report's Reproduce section") from exc
    model = _load(args)
    ref = ModelRef.of(model)
    result, _ = measure(MeasureJob(model=ref, spec=spec, quick=args.quick, weights_bytes=model.size_bytes),
                        timeout_s=args.timeout)
    if args.json:
        print_json(to_data(result))
        return 0 if result.status is Status.OK else 1
    lat = result.latency_ms
    if result.status is not Status.OK or lat is None:
        print(f"{spec.label}: {result.status}: {result.reason}", file=sys.stderr)
        return 1
    p95 = units.ms(lat.p95_ms, missing="n/a (too few samples)")
    print(f"{spec.label}\n  latency p50 {units.ms(lat.p50_ms)}, p95 {p95}, "
          f"{lat.samples} samples{' (unstable)' if lat.unstable else ''}")
    print(f"  peak memory {units.size(result.peak_memory_bytes, missing='n/a')} ({result.memory_basis})")
    print(f"  settings {json.dumps(result.info, default=str)}")
    from planner.cli.output import environment_line

    print(f"  environment {environment_line(result.audit)}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Check each hand-over package: files against its manifest, then fidelity and p50 from run.py in a fresh
    process; exits 1 when any check fails."""
    from planner.deploy import verify_path

    if not args.tolerance > 0:
        raise PlannerError(f"--tolerance must be more than 0 percent, got {args.tolerance:g}",
                           "pass a percentage, e.g. --tolerance 10")
    verdicts = verify_path(Path(args.folder), tolerance=args.tolerance / 100, timeout_s=args.timeout)
    if args.json:
        print_json([v.data() for v in verdicts])
    else:
        from planner.cli.output import format_verdict

        print("\n\n".join(format_verdict(v) for v in verdicts))
        failed = [v for v in verdicts if not v.passed]
        print(f"\n{len(verdicts) - len(failed)} of {len(verdicts)} package{'s' if len(verdicts) != 1 else ''} "
              "passed" + (f"; failed: {', '.join(v.folder.name for v in failed)}" if failed else ""))
    return 0 if all(v.passed for v in verdicts) else 1


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render report.md from a results.json."""
    from planner.report import render_report_files

    path = Path(args.results)
    if path.is_dir():
        # The plan's out folder, as `planner plan` prints it: its results.json.
        path = path / RESULTS_NAME
    from planner.llm.results import is_llm_results

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = None  # read_results says what is wrong with it
    if is_llm_results(data):
        from planner.llm.report import write_report
        from planner.llm.results import read_llm_plan

        out = Path(args.out) if args.out else path.parent
        print(f"Wrote {write_report(read_llm_plan(path), out)}")
        return 0
    results = read_results(path)  # a file that does not fit says which field, and what to do
    out = Path(args.out) if args.out else path.parent
    report = render_report_files(results, out)
    print(f"Wrote {report}")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    """Open the Textual TUI, or explain the headless commands when there is no terminal."""
    # textual-serve runs the app over pipes with its web driver named in TEXTUAL_DRIVER.
    served = bool(os.environ.get("TEXTUAL_DRIVER"))
    if not served and (not sys.stdin.isatty() or not sys.stdout.isatty()):
        print("planner: no interactive terminal (stdin or stdout is not a TTY).\n"
              "Run it headless instead, e.g.:\n"
              "  planner plan --model demo:inefficient --target cpu --quick\n"
              "  planner detect\n"
              "  planner profile --model M\n"
              "  planner --help", file=sys.stderr)
        return 2
    if getattr(args, "host", None):
        from planner.cli.remote import tui_connector

        connect, host = tui_connector(args)  # connects once first: a refused key or login is said here, plainly
        from planner.tui.app import run_tui

        return run_tui(model=args.model, input_shape=args.input_shape, inputs=args.inputs,
                       trust_code=args.trust_code, connect=connect, host=host)
    # The engine starts first: its own start-up (Python, the hello) runs while this process imports Textual.
    from planner.engine.client import EngineClient
    from planner.tui.terminal import default_log_path

    log_path = default_log_path()
    try:
        engine: EngineClient | None = EngineClient.start(log_path=log_path)
    except PlannerError:
        engine = None  # the TUI tries again, and shows why it cannot start, with the fix
    from planner.tui.app import run_tui

    return run_tui(model=args.model, input_shape=args.input_shape, inputs=args.inputs, trust_code=args.trust_code,
                   engine=engine, log_path=log_path)


def cmd_engine(args: argparse.Namespace) -> int:
    """Serve the engine protocol on stdin/stdout until the client shuts it down or hangs up (or, with --detach and
    --attach, relay to an engine that outlives the connection)."""
    if args.detach or args.attach or args.daemon or args.runs:
        from planner.engine import detached

        if args.daemon:
            return detached.serve_daemon(Path(args.daemon))
        if args.runs:
            print_json(detached.list_runs())
            return 0
        if args.attach:
            return detached.attach_relay(args.attach, args.since)
        return detached.detach_and_relay(idle_exit_s=args.idle_exit)
    from planner.engine.server import serve_stdio

    return serve_stdio()


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the TUI in a browser through textual-serve on localhost."""
    from planner.tui.serve import serve

    return serve(port=args.port)

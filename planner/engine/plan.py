"""`planner plan --engine subprocess`: the whole plan run by a `planner engine` process over the protocol.

It writes what the in-process plan writes (results.json, the report, the packages) into the same folder,
and Ctrl-C cancels the engine's run and keeps what it measured, as in-process.
"""

from __future__ import annotations

from pathlib import Path

from planner.codec import from_data
from planner.engine.client import EngineClient, EngineDiedError
from planner.engine.plan_options import options_data
from planner.engine.protocol import Error, Finished, Result, RunPlan
from planner.engine.waiting import await_answer
from planner.errors import PlannerError
from planner.events import EventSink, null_sink
from planner.pipeline.options import PlanOptions
from planner.pipeline.outcome import PlanOutcome
from planner.results import RESULTS_NAME, read_results


def run_plan_in_engine(options: PlanOptions, *, on_event: EventSink = null_sink,
                       log_path: Path | None = None) -> PlanOutcome:
    """Run `options` in a fresh engine process; the outcome is read back from the results.json it wrote."""
    client = EngineClient.spawn(log_path=log_path)
    try:
        # The engine shares the terminal and heard Ctrl-C too; cancelling again is harmless. Its answer follows
        # once it has written what was measured.
        reply, interrupted = await_answer(
            lambda: Result(value=client.request(RunPlan(options=options_data(options)), on_event=on_event)),
            on_interrupt=lambda: client.cancel(now=True))
        if reply is None:
            raise client.death or EngineDiedError("the planner engine stopped", "run the plan again")
        if isinstance(reply, Error):
            raise PlannerError(reply.problem, reply.fix)
        finished = from_data(reply.value, Finished)
        out_dir = Path(finished.out_dir)
        report = Path(finished.report_path) if finished.report_path else None
        outcome = PlanOutcome(read_results(out_dir / RESULTS_NAME), out_dir, report)
    finally:
        client.close()
    if interrupted:
        raise KeyboardInterrupt
    return outcome

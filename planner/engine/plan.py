"""`planner plan --engine subprocess`: the whole plan run by a `planner engine` process over the protocol.

It writes what the in-process plan writes (results.json, the report, the packages) into the same folder,
and Ctrl-C cancels the engine's run and keeps what it measured, as in-process.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from planner.engine.client import EngineClient
from planner.engine.plan_options import options_data
from planner.events import EventSink, null_sink
from planner.pipeline.run import PlanOptions
from planner.pipeline.session import PlanOutcome
from planner.results import RESULTS_NAME, read_results


def run_plan_in_engine(options: PlanOptions, *, on_event: EventSink = null_sink,
                       log_path: Path | None = None) -> PlanOutcome:
    """Run `options` in a fresh engine process; the outcome is read back from the results.json it wrote."""
    client = EngineClient.spawn(log_path=log_path)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["reply"] = client.request({"type": "run", "step": "plan", "args": options_data(options)},
                                          on_event=on_event, name="plan")
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            box["error"] = exc

    worker = threading.Thread(target=run, name="plan-client", daemon=True)
    interrupted = False
    try:
        worker.start()
        while worker.is_alive():
            try:
                worker.join(0.2)
            except KeyboardInterrupt:
                if interrupted:
                    raise  # a second Ctrl-C: stop waiting for the engine to write what it measured
                interrupted = True
                # The engine shares the terminal and heard Ctrl-C too; cancelling again is harmless. Its
                # answer follows once it has written what was measured.
                client.cancel(now=True)
        if "error" in box:
            raise box["error"]
        value = box["reply"].get("value") or {}
        out_dir = Path(value["out_dir"])
        report = value.get("report_path")
        outcome = PlanOutcome(read_results(out_dir / RESULTS_NAME), out_dir, Path(report) if report else None)
    finally:
        client.close()
    if interrupted:
        raise KeyboardInterrupt
    return outcome

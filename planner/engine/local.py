"""An engine in this process, on a thread, over a pair of pipes: the protocol exactly as `planner engine`
speaks it, for the tests (a recorded session behind a real server) and for tools that embed the engine."""

from __future__ import annotations

import os
import threading
from typing import Callable

from planner.engine.client import EngineClient, EngineDiedError
from planner.engine.llm import LlmPlanner
from planner.engine.server import EngineServer, SessionFactory


def local_engine(session_factory: SessionFactory, *, on_death: Callable[[EngineDiedError], None] | None = None,
                 llm_planner: LlmPlanner | None = None) -> EngineClient:
    """Start an `EngineServer` on a thread serving sessions from `session_factory` (and LLM plans from
    `llm_planner`, when given); return its connected client."""
    to_engine_r, to_engine_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    engine_in = os.fdopen(to_engine_r, "r", encoding="utf-8")
    engine_out = os.fdopen(to_client_w, "w", encoding="utf-8", buffering=1)
    server = EngineServer(engine_in, engine_out, session_factory=session_factory, llm_planner=llm_planner)

    def serve() -> None:
        try:
            server.serve()
        finally:
            for stream in (engine_out, engine_in):
                try:
                    stream.close()
                except OSError:
                    pass

    threading.Thread(target=serve, name="local-engine", daemon=True).start()
    client = EngineClient(os.fdopen(to_client_r, "r", encoding="utf-8"),
                          os.fdopen(to_engine_w, "w", encoding="utf-8", buffering=1), on_death=on_death)
    client.connect()
    return client

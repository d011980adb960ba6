"""The engine in its own process: `planner engine` serves a `PlanSession` over a small line protocol
(`planner.engine.protocol`); the TUI and `planner plan --engine subprocess` are its clients
(`planner.engine.client`). This package imports nothing at import time, so a client stays light."""

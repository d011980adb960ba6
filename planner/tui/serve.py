"""`planner serve`: the TUI in a browser on localhost, through textual-serve."""

from __future__ import annotations

import sys


def serve(*, port: int) -> int:
    """Serve `planner tui` on http://localhost:PORT until interrupted."""
    from textual_serve.server import Server

    print(f"Serving planner on http://localhost:{port} (Ctrl-C to stop)")
    Server(f"{sys.executable} -m planner.cli tui", host="localhost", port=port).serve()
    return 0

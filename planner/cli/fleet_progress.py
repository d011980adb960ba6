"""`planner fleet`'s live lines: one per host, redrawn in place on a terminal, one printed line per change elsewhere."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.table import Table

if TYPE_CHECKING:
    from planner.ssh.fleet import HostStatus
    from planner.ssh.hosts import HostSpec


class FleetProgress:
    """An `on_status` sink for `run_fleet`; use as a context manager."""

    def __init__(self, specs: list[HostSpec], *, console: Console | None = None,
                 interactive: bool | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.interactive = sys.stderr.isatty() if interactive is None else interactive
        self.lines: dict[str, tuple[str, str]] = {spec.label: ("waiting", "") for spec in specs}
        self._lock = threading.Lock()
        self._live: Live | None = None

    def __enter__(self) -> FleetProgress:
        if self.interactive:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.__exit__(None, None, None)
            self._live = None

    def update(self, status: HostStatus) -> None:
        """A host's new status: redraw its line (or print it, without a terminal)."""
        with self._lock:
            before = self.lines.get(status.label)
            self.lines[status.label] = (status.phase, status.detail)
            if self._live is not None:
                self._live.update(self._table())
            elif before is None or before[0] != status.phase or status.phase in ("failed", "done"):
                self.console.print(f"{status.label}: {status.phase}" + (f" - {status.detail}" if status.detail else ""),
                                   markup=False, soft_wrap=True)

    def _table(self) -> Table:
        table = Table(show_header=True, header_style="bold", box=None, expand=True)
        table.add_column("host", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("latest", ratio=1, no_wrap=True, overflow="ellipsis")
        for label, (phase, detail) in self.lines.items():
            table.add_row(label, phase, detail)
        return table

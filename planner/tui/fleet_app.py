"""The fleet view (`planner fleet --tui`): each host's live status while the fleet plans, then the comparison.

The view is a client of the fleet process (`planner fleet ... --status-lines`), as the main TUI is a client of the
engine: it starts that process, reads the one JSON object per line it prints on stdout, and never loads what plans
(SSH, the exporters, the runtimes). The process's stderr goes to a log file, never to the terminal Textual draws on.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from planner.ssh.fleet_lines import DoneLine, FleetMessage, StatusLine, decode
from planner.tui.screens.confirm import YesNo
from planner.tui.screens.too_small import TooSmallScreen, cover_if_too_small
from planner.tui.terminal import stray_output_to
from planner.tui.widgets.too_small import TooSmall, is_too_small

FINAL_PHASES = ("done", "failed", "cancelled")
"""The phases after which a host's plan has ended (the others: waiting, connecting, checking, shipping, starting,
planning, fetching)."""

QUIT_WAIT_S = 60.0
"""How long quitting waits for the cancelled fleet to fetch what each host measured and write the comparison,
before it stops the fleet process."""

STOP_GRACE_S = 5.0
"""After SIGTERM, how long a fleet process that is being stopped gets before SIGKILL."""

TAIL_LINES = 8
"""How many of the fleet process's last log lines are shown when it stops with no comparison."""

EXIT_DONE, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130

_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)\)")


@dataclass
class HostLine:
    """One host's row: where its plan is and the latest thing it said."""

    label: str
    host: str
    phase: str = "waiting"
    detail: str = ""


class FleetLine(Message):
    """A status or done line from the fleet process (posted by the thread that reads its stdout)."""

    def __init__(self, line: "FleetMessage") -> None:
        super().__init__()
        self.line = line


class FleetEnded(Message):
    """The fleet process has exited with `status` (negative: killed by that signal)."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status


class ConfirmFleetQuit(YesNo):
    """Asks before quitting while hosts still plan; True quits (cancelling them), False stays."""

    def __init__(self, going: int) -> None:
        hosts = f"{going} host{'s' if going != 1 else ''}"
        super().__init__(f"The fleet is still planning on {hosts}.",
                         "Quit anyway? Every host's plan is cancelled, what each measured is fetched and the "
                         f"comparison is written with it (at most {QUIT_WAIT_S:.0f} s), then the view closes.",
                         go="Quit (y)", keep="Stay (n)")


def model_of(argv: list[str]) -> str:
    """The model the fleet plans, from its command line (`--model M` or `--model=M`), or '' if it names none."""
    for i, arg in enumerate(argv):
        if arg == "--model" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--model="):
            return arg.split("=", 1)[1]
    return ""


def exit_words(status: int) -> str:
    """A process's exit status as people read it: 'exit status 3' or 'killed by SIGKILL'."""
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last non-empty lines of a log file ([] when it cannot be read)."""
    try:
        with open(path, "rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 65536))
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def comparison_for_terminal(markdown: str, folder: Path) -> str:
    """The comparison's Markdown with each link replaced by the path it points at (relative to the current folder
    where it is under it): a terminal cannot follow a link, but the reader can open a path."""

    def path(match: re.Match[str]) -> str:
        target = match.group(2)
        if "://" in target:
            return f"{match.group(1)} ({target})"
        full = Path(os.path.normpath(folder / unquote(target)))
        with contextlib.suppress(ValueError):
            full = full.resolve().relative_to(Path.cwd().resolve())
        return str(full)

    # In a table a cell is plain text: `code` marks would show as backticks.
    lines = [line.replace("`", "") if line.lstrip().startswith("|") else line for line in markdown.splitlines()]
    return _LINK.sub(path, "\n".join(lines))


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


class FleetApp(App[int]):
    """Starts the fleet process and shows its hosts live; after its done line, the comparison it wrote.

    `argv` is the fleet process's command; `hosts` its (label, host) pairs in the fleet file's order (a status for
    another label gets a row of its own). The exit status is 0 when the fleet finished with at least one plan, 130
    when it was cancelled (c, or quitting while it ran) and 1 when it failed (no host planned, or the process
    stopped with no comparison).
    """

    CSS_PATH = "app.tcss"  # the dialogs' styles, shared with the planner's app
    CSS = """
    #fleet { height: 1fr; }
    #fleet-state { height: auto; max-height: 4; padding: 0 1; text-style: bold; }
    #hosts { height: auto; max-height: 18; }
    #fleet.-compared #hosts, #fleet.-stopped #hosts { max-height: 8; }
    #row-detail { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    #failure { display: none; height: auto; padding: 0 1; border-top: hkey $foreground 25%; }
    #fleet.-stopped #failure { display: block; }
    #comparison-box { display: none; height: 1fr; border-top: hkey $foreground 25%; padding: 0 1; }
    #fleet.-compared #comparison-box { display: block; }
    """
    TITLE = "planner fleet"
    ENABLE_COMMAND_PALETTE = False  # two keys: the footer lists them all
    BINDINGS = [
        Binding("c", "cancel", "Cancel all"),
        Binding("q", "request_quit", "Quit"),
        # The comparison scrolls wherever the focus is (the table keeps the arrows for its rows).
        Binding("pageup", "scroll_comparison('pageup')", "Page up", show=False),
        Binding("pagedown", "scroll_comparison('pagedown')", "Page down", show=False),
        Binding("home", "scroll_comparison('home')", "Top", show=False),
        Binding("end", "scroll_comparison('end')", "End", show=False),
    ]

    def __init__(self, argv: list[str], hosts: list[tuple[str, str]], *, log_path: Path) -> None:
        super().__init__()
        self.argv = list(argv)
        self.log_path = log_path
        self.lines: dict[str, HostLine] = {label: HostLine(label, host) for label, host in hosts}
        self.model = model_of(self.argv)
        self.process: subprocess.Popen[str] | None = None
        self.returncode: int | None = None  # the fleet process's, once it has exited
        self.done: DoneLine | None = None  # its done line
        self.cancel_sent = False
        self.quitting = False
        self.start_error = ""
        self.comparison_path: Path | None = None
        self._small_quit: TooSmallScreen | None = None  # the too-small screen that already asked about quitting
        self._table_ready = False  # the table has its columns (a resize may come before the mount)
        self._width = 0  # the terminal's width at the last resize (0: none yet, the app's size holds)

    # -- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        """Header, the state line, one row per host, what the process left if it died, the comparison, footer."""
        yield Header()
        with Vertical(id="fleet"):
            yield Static("", id="fleet-state")
            yield DataTable(id="hosts", cursor_type="row", zebra_stripes=False)
            yield Static("", id="row-detail")
            yield Static("", id="failure")
            with VerticalScroll(id="comparison-box"):
                yield Static("", id="comparison")
        yield Footer()

    def on_mount(self) -> None:
        """Name what runs, draw the rows, start the fleet process and the thread that reads it."""
        self._fill_table()
        self._table_ready = True
        self.query_one("#hosts", DataTable).focus()
        self._start()
        self._show_state()
        self.check_size(self.size.width, self.size.height)

    def on_resize(self, event: events.Resize) -> None:
        """Below 80×24 the too-small message covers the view; otherwise the columns fit the new width."""
        self.check_size(event.size.width, event.size.height)
        self._width = event.size.width  # the app's own size may not have caught up yet
        if self._table_ready and not is_too_small(event.size.width, event.size.height):
            self._fill_table()

    def check_size(self, width: int, height: int) -> None:
        """Show, update or remove the too-small screen for the terminal's size."""
        cover_if_too_small(self, width, height)

    # -- the fleet process -------------------------------------------------------------------
    def _start(self) -> None:
        try:
            with open(self.log_path, "ab") as log:
                # Its own session: the terminal's signals reach this view only, and the view cancels the fleet
                # (SIGINT) exactly once, when asked.
                self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=log, text=True, encoding="utf-8", errors="replace",
                                                start_new_session=True)
        except OSError as exc:
            self.start_error = (f"The fleet process could not start ({exc.strerror or exc}: {self.argv[0]}). "
                                "Check that the planner is installed in this Python environment.")
            self.returncode = 127  # as a shell reports a command it cannot run
            self._show_stopped()
            return
        threading.Thread(target=self._read, args=(self.process,), name="fleet-reader", daemon=True).start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        """In a thread: each status or done line to the app; anything else on stdout to the log."""
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.strip()
            if not line:
                continue
            message = decode(line)
            if message is not None:
                self._post(FleetLine(message))
            else:
                self._to_log(f"stdout: {line}")
        self._post(FleetEnded(process.wait()))

    def _post(self, message: Message) -> None:
        with contextlib.suppress(RuntimeError):  # the app has closed already: nobody left to tell
            self.post_message(message)

    def _to_log(self, line: str) -> None:
        with contextlib.suppress(OSError), open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line + "\n")

    @property
    def running(self) -> bool:
        """Whether the fleet still plans: its process is up and has not printed its done line."""
        return self.process is not None and self.returncode is None and self.done is None

    def on_fleet_line(self, message: FleetLine) -> None:
        """A host's new status (a label not in the fleet file gets a row), or the done line (the comparison)."""
        said = message.line
        if isinstance(said, StatusLine):
            label = said.label or "?"
            line = self.lines.get(label)
            if line is None:
                line = self.lines[label] = HostLine(label, said.host)
                self._fill_table()
            line.host = said.host or line.host
            line.phase = said.phase or line.phase
            line.detail = said.detail
            self._show_row(line)
        else:
            self.done = said
            # The done line is the last word on each host: one whose last status was lost, or that never sent one,
            # shows how it ended.
            for row in said.rows:
                if not row.label:
                    continue
                line = self.lines.get(row.label)
                if line is None:
                    self.lines[row.label] = HostLine(row.label, row.host, "failed" if row.failure else "done",
                                                     row.failure)
                    self._fill_table()
                elif line.phase not in FINAL_PHASES:
                    line.phase, line.detail = ("failed", row.failure) if row.failure else ("done", line.detail)
                    self._show_row(line)
            self._show_comparison(Path(said.report))
        self._show_state()
        self.refresh_bindings()

    def on_fleet_ended(self, message: FleetEnded) -> None:
        """The fleet process exited: with no done line, say how and show its last log lines; when quitting, close."""
        self.returncode = message.status
        if self.done is None:
            self._show_stopped()
        self._show_state()
        self.refresh_bindings()
        if self.quitting:
            self.exit(self.exit_status())

    def exit_status(self) -> int:
        """0: the fleet finished with at least one plan; 130: it was cancelled; 1: it failed."""
        if self.done is not None:
            if self.done.interrupted:
                return EXIT_INTERRUPTED
            return EXIT_DONE if self.done.planned() else EXIT_FAILED
        return EXIT_INTERRUPTED if self.cancel_sent or self.quitting else EXIT_FAILED

    def _interrupt(self) -> None:
        """SIGINT to the fleet process, once: it cancels every host's plan, fetches what each measured and still
        writes the comparison."""
        if self.cancel_sent or self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGINT)
        self.cancel_sent = True

    def end_process(self) -> None:
        """Stop the fleet process if it still runs: SIGTERM, then SIGKILL after a grace (bounded either way)."""
        from planner.supervise import end_process

        if self.process is not None:
            end_process(self.process, grace_s=STOP_GRACE_S)

    def on_unmount(self) -> None:
        """The view closes: a fleet process still running is stopped (off the event loop: it can take seconds)."""
        if self.process is not None and self.process.poll() is None:
            threading.Thread(target=self.end_process, name="fleet-stop", daemon=False).start()

    # -- what is shown -----------------------------------------------------------------------
    def _columns(self) -> list[tuple[str, str, int]]:
        """(key, title, width) of each column for the view's width; the address only where a label differs."""
        labels = [line.label for line in self.lines.values()]
        hosts = [line.host for line in self.lines.values()]
        label_w = min(max([4, *map(len, labels)]), 22)
        columns = [("label", "Host", label_w)]
        if any(line.host and line.host != line.label for line in self.lines.values()):
            columns.append(("host", "Address", min(max([7, *map(len, hosts)]), 24)))
        columns.append(("phase", "Status", 10))
        # Each column has one space of padding either side; two more for the table's scroll bar.
        used = sum(width + 2 for _key, _title, width in columns) + 2
        columns.append(("detail", "Latest", max(12, (self._width or self.size.width) - used)))
        return columns

    def _cells(self, line: HostLine) -> list[str]:
        values = {"label": line.label, "host": line.host, "phase": line.phase, "detail": line.detail}
        return [_cut(values[key], width) for key, _title, width in self._columns()]

    def _fill_table(self) -> None:
        hosts = len(self.lines)
        self.sub_title = f"{self.model or 'the model'} on {hosts} host{'s' if hosts != 1 else ''}"
        table = self.query_one("#hosts", DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        for key, title, width in self._columns():
            table.add_column(title, width=width, key=key)
        for line in self.lines.values():
            table.add_row(*self._cells(line), key=line.label)
        if self.lines:
            table.move_cursor(row=min(max(row, 0), len(self.lines) - 1))
        self._show_row_detail()

    def _show_row(self, line: HostLine) -> None:
        table = self.query_one("#hosts", DataTable)
        for (key, _title, _width), value in zip(self._columns(), self._cells(line)):
            table.update_cell(line.label, key, value)
        self._show_row_detail()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted host's latest detail in full under the table (a cell cuts it to the column)."""
        self._show_row_detail()

    def _show_row_detail(self) -> None:
        table = self.query_one("#hosts", DataTable)
        lines = list(self.lines.values())
        if not lines or not 0 <= table.cursor_row < len(lines):
            return
        line = lines[table.cursor_row]
        where = f" ({line.host})" if line.host and line.host != line.label else ""
        detail = f": {' '.join(line.detail.split())}" if line.detail else ""
        self.query_one("#row-detail", Static).update(Text(f"{line.label}{where} {line.phase}{detail}"))

    def _counts(self) -> str:
        phases = [line.phase for line in self.lines.values()]
        parts = [f"{phases.count(p)} {p}" for p in FINAL_PHASES if phases.count(p)]
        going = sum(1 for p in phases if p not in FINAL_PHASES)
        if going:
            parts.append(f"{going} still going")
        return ", ".join(parts)

    def _show_state(self) -> None:
        """The line above the table: what the fleet is doing now, in words."""
        going = sum(1 for line in self.lines.values() if line.phase not in FINAL_PHASES)
        if self.done is not None:
            where = f"; it is in {self.comparison_path}" if self.comparison_path is not None else ""
            if self.done.interrupted:
                text = f"Cancelled ({self._counts()}): the comparison below holds what each host measured{where}."
            else:
                text = f"Done ({self._counts()}): the comparison is below{where}."
        elif self.start_error:
            text = self.start_error
        elif self.returncode is not None:
            text = (f"The fleet process stopped ({exit_words(self.returncode)}) before it wrote the comparison. "
                    "Each host's last status is below.")
        elif self.quitting:
            text = ("quitting: cancelling every host's plan and fetching what each measured "
                    f"(at most {QUIT_WAIT_S:.0f} s; q again stops it now)")
        elif self.cancel_sent:
            text = "cancelling: fetching what each host measured"
        else:
            what = self.model or "the model"
            text = f"Planning {what}: {self._counts() or 'starting'}." if going else f"Planning {what}: finishing."
        self.query_one("#fleet-state", Static).update(Text(text))

    def _show_stopped(self) -> None:
        """The process died with no done line: its exit status and the last lines of its log; the table stays."""
        tail = log_tail(self.log_path)
        text = Text()
        if tail:
            text.append(f"Its last lines (all of its output is in {self.log_path}):\n", style="bold")
            text.append("\n".join(tail))
        elif not self.start_error:
            text.append(f"It printed nothing to its log ({self.log_path}).")
        self.query_one("#failure", Static).update(text)
        self.query_one("#failure", Static).display = bool(text.plain)
        self.query_one("#fleet").add_class("-stopped")

    def _show_comparison(self, path: Path) -> None:
        box = self.query_one("#comparison", Static)
        self.query_one("#fleet").add_class("-compared")
        try:
            markdown = path.read_text(encoding="utf-8")
        except OSError as exc:
            box.update(Text(f"The fleet finished, but its comparison could not be read: {path} "
                            f"({exc.strerror or exc})."))
            return
        self.comparison_path = path
        scroll = self.query_one("#comparison-box", VerticalScroll)
        scroll.border_title = "Comparison · ↑↓ PgUp PgDn scroll · Tab: the table"
        scroll.focus()  # what there is to read now; the arrows scroll it
        # The report package is not needed before the comparison arrives (the view starts without it).
        from planner.tui.widgets.markdown_tables import markdown_with_tables

        box.update(markdown_with_tables(comparison_for_terminal(markdown, path.parent)))

    # -- keys --------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """c only while the fleet runs and has not been cancelled; behind the too-small message only q works."""
        if isinstance(self.screen, TooSmallScreen):
            return action in ("request_quit", "quit")
        if action == "cancel":
            return self.running and not self.cancel_sent and not self.quitting
        if action == "scroll_comparison":
            return self.done is not None
        return True

    def action_cancel(self) -> None:
        """Cancel every host's plan (once): each fetches what it measured, then the comparison is written."""
        if not self.running or self.cancel_sent:
            return
        self._interrupt()
        self._show_state()
        self.refresh_bindings()

    def stop_running_job(self) -> None:
        """Cancel the fleet (the too-small screen's quit calls this, as in the planner's app)."""
        self._interrupt()

    def action_scroll_comparison(self, how: str) -> None:
        """Scroll the comparison (home, end, pageup, pagedown)."""
        box = self.query_one("#comparison-box", VerticalScroll)
        {"home": box.scroll_home, "end": box.scroll_end, "pageup": box.scroll_page_up,
         "pagedown": box.scroll_page_down}[how](animate=False)

    def action_request_quit(self) -> None:
        """Quit; while the fleet runs, ask first (behind the too-small message, by a second q)."""
        if isinstance(self.screen, TooSmallScreen):
            if not self.running or self.quitting or self._small_quit is self.screen:
                self._quit()
                return
            self._small_quit = self.screen
            going = sum(1 for line in self.lines.values() if line.phase not in FINAL_PHASES)
            self.screen.quit_pressed(f"The fleet's plan on {going} host{'s' if going != 1 else ''}")
            return
        if not self.running or self.quitting:
            self._quit()
            return
        going = sum(1 for line in self.lines.values() if line.phase not in FINAL_PHASES)
        self.push_screen(ConfirmFleetQuit(going), self._quit_answer)

    async def action_quit(self) -> None:
        """Ctrl+Q: the same as q (asks first while the fleet runs)."""
        self.action_request_quit()

    def _quit_answer(self, quit_now: bool | None) -> None:
        if quit_now:
            self._quit()

    def _quit(self) -> None:
        """Close now when nothing runs (or on a second q); else cancel the fleet and close once it has ended,
        waiting at most QUIT_WAIT_S."""
        if not self.running or self.quitting:  # nothing runs, or q again while waiting: close now
            self.exit(self.exit_status())
            return
        self.quitting = True
        self._interrupt()
        self.set_timer(QUIT_WAIT_S, self._quit_waited)
        if isinstance(self.screen, TooSmallScreen):
            self.screen.query_one(TooSmall).update("Cancelling every host's plan and fetching what each measured…"
                                                   "\n\nq stops it now")
        self._show_state()
        self.refresh_bindings()

    def _quit_waited(self) -> None:
        if self.is_running:
            self.exit(self.exit_status())  # on_unmount stops the fleet process


def default_fleet_log() -> Path:
    """Where the fleet process's output goes while the view owns the terminal."""
    return Path(tempfile.gettempdir()) / f"planner-fleet-{os.getpid()}.log"


def run_fleet_tui(argv: list[str], hosts: list[tuple[str, str]]) -> int:
    """Start the fleet process `argv` (`planner fleet ... --status-lines`) and show its `hosts` ((label, host), in
    the fleet file's order) live, then the comparison; returns the exit status (0 done, 130 cancelled, 1 failed)."""
    log_path = default_fleet_log()
    with stray_output_to(log_path):
        app = FleetApp(argv, hosts, log_path=log_path)
        result = app.run()
    if app.process is not None and app.process.poll() is None:
        app.end_process()
    if app.comparison_path is not None:
        print(f"Comparison {app.comparison_path}", file=sys.stderr)
    if log_path.exists():
        if log_path.stat().st_size:
            print(f"planner: what the fleet process printed is in {log_path}", file=sys.stderr)
        else:
            log_path.unlink()
    return app.exit_status() if result is None else int(result)

"""The fleet file (`planner fleet --hosts fleet.toml`): the machines to plan on, one `[[hosts]]` table each.

    [[hosts]]
    host = "pi5"                         # an ssh_config alias, or user@host[:port]
    label = "Raspberry Pi 5"             # optional; defaults to host
    planner = "/opt/planner/bin/planner" # optional remote planner command; default `planner`

Every mistake is refused before any host is reached, with the file and the line it is on: a TOML
syntax error (tomllib's own line), an unknown key (with the known key it is closest to), a missing
`host`, a value of the wrong type, two tables naming the same host or the same label (both lines),
and a file with no hosts at all (with an example to copy).
"""

from __future__ import annotations

import difflib
import re
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import PlannerError
from planner.report.fleet import FLEET_DIR
from planner.ssh.hosts import HostSpec

__all__ = ["EXAMPLE", "FleetFileError", "FleetHost", "read_fleet_file"]

EXAMPLE = """\
[[hosts]]
host = "pi5"                         # an ssh_config alias, or user@host[:port]
label = "Raspberry Pi 5"             # optional; defaults to host
planner = "/opt/planner/bin/planner" # optional remote planner command; default `planner`

[[hosts]]
host = "ubuntu@192.168.1.30:2222"
"""
"""A fleet file to copy: what an error about the file's shape shows."""

_SHOWN = "\n" + textwrap.indent(EXAMPLE, "    ").rstrip()
# The example as an error's fix ends with it: indented, so it stands apart from the `fix:` line it follows.

TABLE = "hosts"
"""The one top-level name a fleet file holds: an array of tables, one per host."""

KEYS = ("host", "label", "planner")
"""The keys a host's table may hold; `host` is required."""

_KEY_WORDS = {  # what each key is, and a line that sets it
    "host": ("the machine: an ssh_config alias or user@host[:port]", 'host = "pi@192.168.1.20"'),
    "label": ("the name of its row in the comparison and of its folder of results", 'label = "Raspberry Pi 5"'),
    "planner": ("the planner command on that machine", 'planner = "/opt/planner/bin/planner"'),
}

# tomllib's messages name the grammar; these add what to write for the mistakes people make by hand.
_SYNTAX_HINTS = (
    ("Illegal character '\\n'", "a quoted value is not closed on its line: add the closing double quote"),
    ("Invalid value", 'the value after "=" is missing or not TOML: text goes in double quotes, e.g. host = "pi5"'),
    ("Cannot overwrite a value", "a key is written twice: a host's table names each key once; start a new "
                                 "[[hosts]] table for the next host"),
    ("Cannot declare", "a table is declared twice: each host is its own [[hosts]] table (double brackets)"),
    ("Expected '=' after a key", 'each line is key = value, e.g. host = "pi5"'),
    ("Expected ']]'", "a host's table header is [[hosts]], with two brackets on each side"),
)
_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_AT_END = re.compile(r"\s*\(at end of document\)\s*$")
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]\s]+)\s*\]\]?")
_KEY_LINE = re.compile(r"""^\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*[.=]""")


class FleetFileError(PlannerError):
    """A fleet file that cannot be read, or that does not list hosts in the form `planner fleet` takes."""


@dataclass(frozen=True)
class FleetHost:
    """One host of a fleet file, with the line its table starts on (for messages that point back at it)."""

    spec: HostSpec
    line: int


def read_fleet_file(path: Path) -> list[FleetHost]:
    """The hosts a fleet file lists, in its order; FleetFileError names the file and line of any mistake."""
    path = Path(path)
    text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, text, exc) from None
    lines = _Lines(text)
    _check_top_level(path, data, lines)
    tables = data.get(TABLE)
    if not tables:
        raise FleetFileError(f"{path} lists no hosts" + ("" if text.strip() else " (the file is empty)"),
                             "add one [[hosts]] table per machine, for example:" + _SHOWN)
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        line = lines.key(TABLE) or lines.header(TABLE) or 1
        if isinstance(tables, list):
            shape = "a list holding " + _type_name(next(t for t in tables if not isinstance(t, dict)))
        else:
            shape = "one table" if isinstance(tables, dict) else _type_name(tables)
        raise FleetFileError(f"{path}, line {line}: `hosts` is {shape}, not a list of host tables",
                             "give each machine its own [[hosts]] table (two brackets on each side), for example:"
                             + _SHOWN)
    starts = lines.table_starts(TABLE, len(tables))
    hosts = [_host(path, table, start, lines) for table, start in zip(tables, starts)]
    _check_duplicates(path, hosts)
    return hosts


def _read(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FleetFileError(f"no fleet file at {path}",
                             f"pass the path of your fleet file, or create {path.name} with one [[hosts]] table per "
                             "machine, for example:" + _SHOWN) from None
    except IsADirectoryError:
        raise FleetFileError(f"{path} is a folder, not a fleet file",
                             "pass the fleet file itself, e.g. --hosts fleet.toml") from None
    except OSError as exc:
        raise FleetFileError(f"cannot read the fleet file {path}: {exc.strerror or exc}",
                             "check that the file exists and that you may read it") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise FleetFileError(f"{path}, line {line}: not UTF-8 text (byte {raw[exc.start]:#04x})",
                             "save the fleet file as UTF-8 (TOML files always are)") from None


def _syntax_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> FleetFileError:
    message = str(exc)
    position = _POSITION.search(message)
    if position:
        where = f"line {position.group(1)}, column {position.group(2)}"
        message = message[:position.start()]
    else:
        # "at end of document": the mistake is on the last line that holds anything.
        message = _AT_END.sub("", message)
        where = f"line {max(len(text.rstrip().splitlines()), 1)}"
    hint = next((h for pattern, h in _SYNTAX_HINTS if message.startswith(pattern)), "")
    fix = (hint + "; " if hint else "") + "a fleet file lists each machine like this:" + _SHOWN
    return FleetFileError(f"{path}, {where}: not valid TOML ({message})", fix)


def _check_top_level(path: Path, data: dict[str, Any], lines: _Lines) -> None:
    for key in data:
        if key == TABLE:
            continue
        line = lines.header(key) or lines.key(key) or 1
        near = _suggest(key, (TABLE,))
        raise FleetFileError(f"{path}, line {line}: unknown name `{key}`"
                             + (f" (did you mean `{near}`?)" if near else ""),
                             "a fleet file holds only [[hosts]] tables, one per machine, for example:" + _SHOWN)


def _host(path: Path, table: dict[str, Any], start: int, lines: _Lines) -> FleetHost:
    for key, value in table.items():
        line = lines.key_in_table(key, start)
        if key not in KEYS:
            near = _suggest(key, KEYS)
            raise FleetFileError(
                f"{path}, line {line}: unknown key `{key}` in a [[hosts]] table"
                + (f" (did you mean `{near}`?)" if near else ""),
                (f"write `{near}` ({_KEY_WORDS[near][0]}), e.g. {_KEY_WORDS[near][1]}" if near else "remove it")
                + "; a host's table takes " + ", ".join(f"`{k}`" for k in KEYS) + " (only `host` is required)")
        if not isinstance(value, str):
            raise FleetFileError(f"{path}, line {line}: `{key}` is {_type_name(value)}, not text",
                                 f"write it as text in double quotes, e.g. {_KEY_WORDS[key][1]}")
        if not value.strip():
            fix = ("remove the line to use the host as the label, or write a name" if key == "label" else
                   "remove the line to use `planner` from the remote's login PATH, or write the command"
                   if key == "planner" else f"write {_KEY_WORDS[key][0]}, e.g. {_KEY_WORDS[key][1]}")
            raise FleetFileError(f"{path}, line {line}: `{key}` is empty", fix)
    if "host" not in table:
        raise FleetFileError(f"{path}, line {start}: this [[hosts]] table has no `host`",
                             f"add a line under it naming {_KEY_WORDS['host'][0]}, e.g. {_KEY_WORDS['host'][1]}")
    try:
        spec = HostSpec.parse(table["host"], label=table.get("label"),
                              planner=table.get("planner", "planner").strip())
    except PlannerError as exc:
        line = lines.key_in_table("host", start)
        raise FleetFileError(f"{path}, line {line}: {exc.problem}", exc.fix) from None
    if spec.folder_name.lower() == FLEET_DIR:
        line = lines.key_in_table("label", start) if "label" in table else lines.key_in_table("host", start)
        raise FleetFileError(f"{path}, line {line}: the label {spec.label!r} would put this host's results in the "
                             f"{FLEET_DIR}/ folder, where the comparison report goes",
                             f'give it another label, e.g. label = "{spec.folder_name}-1"')
    return FleetHost(spec=spec, line=start)


def _check_duplicates(path: Path, hosts: list[FleetHost]) -> None:
    """Refuse two tables for one machine, one label, or one local folder (each host's results go in its own)."""
    seen: dict[tuple[str, object], FleetHost] = {}
    for entry in hosts:
        spec = entry.spec
        # Folder names are compared ignoring case: on macOS and Windows `Pi5` and `pi5` are one folder.
        for what, key in (("host", (spec.host, spec.user, spec.port)), ("label", spec.label),
                          ("folder", spec.folder_name.lower())):
            earlier = seen.setdefault((what, key), entry)
            if earlier is entry:
                continue
            where = f"{path}, lines {earlier.line} and {entry.line}"
            if what == "host":
                raise FleetFileError(f"{where} both name the host {spec.target}",
                                     "list each machine once: remove one of the two tables")
            if what == "label":
                raise FleetFileError(f"{where} both have the label {spec.label!r}",
                                     "give each host its own label: it names the host's row in the comparison "
                                     "and its folder of results")
            raise FleetFileError(f"{where}: the labels {earlier.spec.label!r} and {spec.label!r} make the same "
                                 f"folder name {spec.folder_name!r}",
                                 "make the labels differ by more than case, spaces or punctuation (each host's results "
                                 "are written to a folder named after its label)")


def _suggest(word: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word.lower(), known, n=1, cutoff=0.6)
    return close[0] if close else ""


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, str):
        return f"text ({value!r})"
    return f"a {type(value).__name__}"


class _Lines:
    """Where tables and keys sit in the file's text: tomllib gives values, not positions, so a mistake found in
    the values is placed by reading the lines the way TOML writes them (comments and blank lines ignored)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def _code(self, number: int) -> str:
        """Line `number` (1-based) without a trailing comment (a '#' inside quotes is kept, well enough)."""
        line = self.lines[number - 1]
        return re.sub(r"""\s*#[^"']*$""", "", line)

    def header(self, name: str) -> int | None:
        """The first line that opens the table `[name]` or `[[name]]` (or a table under it)."""
        for n in range(1, len(self.lines) + 1):
            match = _HEADER.match(self._code(n))
            if match and match.group(1).strip("\"'").split(".")[0] == name:
                return n
        return None

    def key(self, name: str, start: int = 1, stop: int | None = None) -> int | None:
        """The first line in [start, stop) that sets `name` (bare or quoted, possibly dotted)."""
        stop = len(self.lines) + 1 if stop is None else stop
        for n in range(start, stop):
            match = _KEY_LINE.match(self._code(n))
            if match and next(g for g in match.groups() if g is not None) == name:
                return n
        return None

    def table_starts(self, name: str, count: int) -> list[int]:
        """The line each of the `count` entries of the array `name` starts on.

        `[[name]]` headers give one line each; an inline array (`name = [{...}, ...]`) has none, and its
        entries are all placed on the line that opens it.
        """
        starts = [n for n in range(1, len(self.lines) + 1)
                  if re.match(rf"^\s*\[\[\s*{re.escape(name)}\s*\]\]", self._code(n))]
        if len(starts) == count:
            return starts
        return [self.key(name) or 1] * count

    def key_in_table(self, name: str, start: int) -> int:
        """The line that sets `name` in the table opened on line `start`, else that table's own line."""
        stop = next((n for n in range(start + 1, len(self.lines) + 1) if _HEADER.match(self._code(n))),
                    len(self.lines) + 1)
        return self.key(name, start + 1, stop) or start

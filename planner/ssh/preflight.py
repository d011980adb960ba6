"""The preflight: before anything is shipped to a host, find out what it has and whether its planner fits.

`preflight(conn, spec)` runs `<planner> preflight --json` on the host (see planner/cli/preflight.py, the
remote half) and reads the answer into `RemoteFacts`: the planner and protocol versions, the architecture,
Python, glibc, which runtimes import, the per-user cache folder and the usable cores. A host without the
planner, or with one that speaks another protocol version, gets a PlannerError whose fix is the exact
command that installs this client's version there, fitted to the host's architecture and Python (probed
with plain shell commands when the planner is missing). Nothing is ever installed by the planner itself.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

from planner import __version__
from planner.engine.protocol import PROTOCOL_VERSION
from planner.errors import PlannerError
from planner.ssh.hosts import HostSpec

PREFLIGHT_TIMEOUT_S = 150.0
"""How long the remote preflight may take: the planner's start plus its runtime imports, which run side by side
with a limit of 60 s (torch from an SD card on a small board)."""

PROBE_TIMEOUT_S = 20.0
"""How long the plain probe of a host without the planner (uname, python3, ldd) may take."""

MIN_PYTHON = (3, 11)
"""The oldest Python the planner runs on (pyproject's requires-python)."""

MIN_TORCH_GLIBC = (2, 28)
"""torch's Linux wheels are built for glibc 2.28 or newer (manylinux_2_28)."""

AARCH64_TORCH_PINS = "torch==2.9.1 torchvision==0.24.1"
"""torch and torchvision releases whose aarch64 wheels are known to work on the boards the planner targets."""

VENV = "~/.planner"
"""Where the install command puts the remote planner: a virtual environment of its own in the user's home."""

NVIDIA_EXTRA = "nvidia"
"""The planner's extra for NVML (nvidia-ml-py, pyproject.toml): asked for where the host has an NVIDIA driver."""

_SHOWN_LINES = 5


class RemotePlannerMissingError(PlannerError):
    """The host has no planner at the command given (not installed, or not on its login PATH)."""


class RemotePlannerMismatchError(PlannerError):
    """The host's planner speaks another engine protocol version than this client."""


class RemotePreflightError(PlannerError):
    """The host's planner ran but its preflight failed, hung or answered with something that is not its facts."""


@dataclass(frozen=True)
class RemoteFacts:
    """What a host offers a plan, as its own planner reported it."""

    planner: str
    protocol: int
    arch: str
    python: str
    glibc: str | None
    runtimes: dict[str, str | None]  # import name -> version, or None where it does not import
    cache_dir: str  # absolute: the host's per-user cache (models/ and runs/ go in it)
    cores: int = 0  # the cores the remote planner may use (its CPU affinity)
    runtime_problems: dict[str, str] = field(default_factory=dict)  # why each None runtime does not import
    executable: str = ""  # the remote planner's Python


@dataclass(frozen=True)
class HostBasics:
    """What a host without the planner has, from plain shell commands: enough to fit an install command."""

    arch: str | None = None  # `uname -m`: aarch64, x86_64, ...
    python: str | None = None  # `python3 -V`'s version, e.g. "3.11.2"; None without python3
    glibc: str | None = None  # from `ldd --version`; None for another C library or none found
    nvidia: bool | None = None  # an NVIDIA driver (/proc/driver/nvidia, or nvidia-smi); None where not probed


PROBE_COMMAND = ('printf "arch=%s\\n" "$(uname -m 2>&1)"; printf "python=%s\\n" "$(python3 -V 2>&1)"; '
                 'printf "libc=%s\\n" "$(ldd --version 2>&1 | head -n 1)"; '
                 'printf "nvidia=%s\\n" "$(if [ -e /proc/driver/nvidia/version ] || command -v nvidia-smi '
                 '>/dev/null 2>&1; then echo yes; else echo no; fi)"')
"""The probe of a host without the planner: `uname -m; python3 -V; ldd --version` and whether an NVIDIA driver is
there, one keyed line each."""


def remote_command(spec: HostSpec, *args: str) -> str:
    """The shell line that runs the host's planner with `args`: each word quoted, a leading ~/ left to the shell."""
    words = shlex.split(spec.planner) or ["planner"]
    return " ".join([_quote_path(words[0]), *(shlex.quote(w) for w in words[1:]), *(shlex.quote(a) for a in args)])


def _quote_path(word: str) -> str:
    """Quote a command word, keeping `~/` unquoted so the remote shell still expands it to the home folder."""
    if word.startswith("~/"):
        return "~/" + shlex.quote(word[2:])
    return shlex.quote(word)


def parse_probe(text: str) -> HostBasics:
    """Read the probe's keyed lines (see PROBE_COMMAND); whatever is missing or odd stays None."""
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    arch = values.get("arch", "").strip()
    arch = arch if re.fullmatch(r"[A-Za-z0-9_]+", arch) else ""
    python = re.fullmatch(r"Python (\d+\.\d+(?:\.\d+)?)\S*", values.get("python", "").strip())
    libc = values.get("libc", "")
    glibc = re.search(r"(\d+\.\d+)\s*$", libc) if re.search(r"glibc|gnu libc", libc, re.IGNORECASE) else None
    nvidia = {"yes": True, "no": False}.get(values.get("nvidia", "").strip())
    return HostBasics(arch=arch or None, python=python.group(1) if python else None,
                      glibc=glibc.group(1) if glibc else None, nvidia=nvidia)


def _version_tuple(text: str | None) -> tuple[int, ...]:
    """"3.11.2" -> (3, 11, 2); () where there is none."""
    return tuple(int(part) for part in re.findall(r"\d+", text or ""))


def install_command(spec: HostSpec | str, basics: HostBasics, version: str = __version__,
                    source: Path | None = None) -> str:
    """The exact commands that install planner `version` on a host in a venv under ~/.planner, fitted to its basics.

    `spec` is the host (its label names it in the words, its user, host and port go into the ssh and scp
    commands), or the text both are written as.

    The planner is not published on a package index, so its wheel is built here from this client's own source
    folder and copied over (a `pip install planner==...` would fetch an unrelated package of that name). On
    aarch64 torch and torchvision are pinned to releases whose wheels work there, and installed first; on
    x86_64 pip takes the planner's own requirements. The NVML extra is asked for only where the host has an
    NVIDIA driver (a board without one needs none; benchmarks/aarch64_wheels.py checks that all of it installs
    on aarch64). Warnings come first where the host cannot run it as it is.
    """
    if isinstance(spec, str):
        spec = HostSpec(host=spec, label=spec)
    host = spec.label or spec.host
    source = source if source is not None else _source_folder()
    notes: list[str] = []
    python = "python3"
    have = _version_tuple(basics.python)
    if basics.python is None:
        notes.append(f"{host} has no python3 on its PATH: install Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer "
                     f"with its venv module first (Debian, Ubuntu: sudo apt install python3 python3-venv)")
    elif have[:2] < MIN_PYTHON:
        python = f"python{MIN_PYTHON[0]}.{MIN_PYTHON[1]}"
        notes.append(f"{host}'s python3 is {basics.python}; the planner needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or "
                     f"newer: install {python} and {python}-venv, which the commands below use")
    if basics.glibc is not None and _version_tuple(basics.glibc)[:2] < MIN_TORCH_GLIBC:
        notes.append(f"{host} has glibc {basics.glibc}; torch's wheels need glibc "
                     f"{MIN_TORCH_GLIBC[0]}.{MIN_TORCH_GLIBC[1]} or newer, so torch will not install there as it is")
    if basics.arch not in (None, "aarch64", "arm64", "x86_64", "amd64"):
        notes.append(f"{host} is {basics.arch}: torch publishes no wheels for it, so pip will have to build torch "
                     f"from source or fail")
    wheel = f"planner-{version}-py3-none-any.whl"
    remote = [f"{python} -m venv {VENV}", f"{VENV}/bin/pip install --upgrade pip"]
    if basics.arch in ("aarch64", "arm64"):
        remote.append(f"{VENV}/bin/pip install {AARCH64_TORCH_PINS}")
    # The brackets escaped: a shell whose glob finds no match fails the word (zsh) instead of keeping it.
    extras = f"\\[{NVIDIA_EXTRA}\\]" if basics.nvidia else ""
    remote += [f"{VENV}/bin/pip install ~/{wheel}{extras}", f"rm ~/{wheel}"]
    login = shlex.quote(f"{spec.user}@{spec.host}" if spec.user else spec.host)
    if source is not None:
        build = f"pip wheel --no-deps -w /tmp/planner-wheel {shlex.quote(str(source))}"
    else:
        build = f"# put the planner {version} wheel you installed from into /tmp/planner-wheel/"
    lines = [*(f"note: {n}" for n in notes),
             f"on this machine, build planner {version}'s wheel and copy it over, then install it on {host}:",
             f"  {build}",
             f"  scp {f'-P {spec.port} ' if spec.port else ''}/tmp/planner-wheel/{wheel} {login}:",
             f"  ssh {f'-p {spec.port} ' if spec.port else ''}{login} {shlex.quote(' && '.join(remote))}",
             f"then pass --remote-planner {VENV}/bin/planner (or put {VENV}/bin on {host}'s PATH), "
             f"or pass --remote-planner PATH for a planner {version} that is installed elsewhere there"]
    if basics.nvidia is None:
        lines.append(f"(where {host} has an NVIDIA GPU, install {wheel}[{NVIDIA_EXTRA}] instead: NVML reads its "
                     "clocks and energy)")
    return "\n".join(lines)


def _source_folder() -> Path | None:
    """This client's planner source folder (the one holding pyproject.toml), where it runs from one."""
    import planner

    root = Path(planner.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def _first_lines(text: str, n: int = _SHOWN_LINES) -> str:
    """The first `n` non-empty lines of a remote's output, indented, to show in an error."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()][:n]
    return "\n".join(f"    {line[:200]}" for line in lines) if lines else "    (nothing)"


def parse_facts(stdout: str, spec: HostSpec | str) -> RemoteFacts:
    """Read `planner preflight --json`'s answer: the last line that is a JSON object (a login script may print first).

    Raises RemotePreflightError when there is none or it lacks a fact; RemotePlannerMismatchError on another
    protocol version. `spec` is the host (or its name), for the words and the install command.
    """
    host = spec if isinstance(spec, str) else spec.label or spec.host
    data: dict[str, Any] | None = None
    for line in reversed(stdout.splitlines()):
        if line.strip().startswith("{"):
            try:
                loaded = json.loads(line)
            except ValueError:
                continue
            if isinstance(loaded, dict):
                data = loaded
                break
    if data is None:
        raise RemotePreflightError(
            f"The planner on {host} did not answer the preflight with its facts (JSON); its output began:\n"
            f"{_first_lines(stdout)}",
            "check that --remote-planner names the planner (not another program), and that the login scripts "
            f"on {host} print nothing to standard output for a command run over ssh")
    protocol = data.get("protocol")
    if protocol != PROTOCOL_VERSION:
        # The other planner's own facts fit the install command (its Python, not a guess of none).
        arch, python, glibc = (str(data[k]) if data.get(k) else None for k in ("arch", "python", "glibc"))
        basics = HostBasics(arch=arch, python=python, glibc=glibc)
        raise _mismatch(spec, data.get("planner"), protocol, basics)
    try:
        runtimes = {str(k): (None if v is None else str(v)) for k, v in dict(data["runtimes"]).items()}
        facts = RemoteFacts(
            planner=str(data["planner"]), protocol=int(protocol), arch=str(data["arch"]), python=str(data["python"]),
            glibc=None if data.get("glibc") is None else str(data["glibc"]), runtimes=runtimes,
            cache_dir=str(data["cache_dir"]), cores=int(data.get("cores") or 0),
            runtime_problems={str(k): str(v) for k, v in dict(data.get("runtime_problems") or {}).items()},
            executable=str(data.get("executable") or ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise RemotePreflightError(f"The planner on {host} answered the preflight without a usable {exc}",
                                    "install the planner version this client runs there (see `planner preflight` "
                                    f"on {host})") from None
    if not facts.cache_dir.startswith("/"):
        raise RemotePreflightError(f"The planner on {host} named a cache folder that is not absolute: "
                                    f"{facts.cache_dir!r}", f"set PLANNER_CACHE_DIR on {host} to an absolute path")
    return facts


def _mismatch(spec: HostSpec | str, remote_version: object, remote_protocol: object,
              basics: HostBasics | None = None) -> RemotePlannerMismatchError:
    """The error for a host whose planner speaks another protocol (or predates the preflight)."""
    host = spec if isinstance(spec, str) else spec.label or spec.host
    theirs = f"planner {remote_version}" if remote_version else "a planner"
    spoken = (f"engine protocol {remote_protocol}" if remote_protocol is not None
              else "an engine protocol older than the preflight")
    return RemotePlannerMismatchError(
        f"{host} has {theirs}, which speaks {spoken}; this client is planner {__version__} and speaks engine "
        f"protocol {PROTOCOL_VERSION}",
        "install the client's version there:\n" + install_command(spec, basics or HostBasics()))


async def probe_basics(conn: asyncssh.SSHClientConnection) -> HostBasics:
    """The host's architecture, python3 and glibc from plain shell commands (for a host without the planner)."""
    try:
        done = await conn.run(PROBE_COMMAND, check=False, timeout=PROBE_TIMEOUT_S, errors="replace")
    except asyncssh.TimeoutError:
        return HostBasics()
    return parse_probe(_text(done.stdout))


def _text(value: object) -> str:
    """A process's output as text (asyncssh gives str, or bytes where an encoding of None was asked for)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _is_missing(status: int | None, stderr: str) -> bool:
    """Does this exit look like a shell that found no such command (127; 126: there but not runnable)?

    A shell's own "not found" line counts too, for the shells that exit otherwise; a planner that ran and
    failed on a missing file of its own does not.
    """
    return status in (126, 127) or bool(re.search(r"^\S*sh\S*: .*(command )?not found", stderr, re.MULTILINE))


async def preflight(conn: asyncssh.SSHClientConnection, spec: HostSpec) -> RemoteFacts:
    """Run the remote planner's preflight and return its facts; raise with the install command where it cannot plan."""
    host = spec.label or spec.host
    command = remote_command(spec, "preflight", "--json")
    try:
        done = await conn.run(command, check=False, timeout=PREFLIGHT_TIMEOUT_S, errors="replace")
    except asyncssh.TimeoutError:
        raise RemotePreflightError(f"The planner's preflight on {host} gave no answer in {PREFLIGHT_TIMEOUT_S:.0f} s",
                                    f"run `{command}` on {host} by hand to see where it hangs") from None
    stdout, stderr = _text(done.stdout), _text(done.stderr)
    status = done.exit_status
    if status == 0:
        return parse_facts(stdout, spec)
    if _is_missing(status, stderr):
        basics = await probe_basics(conn)
        raise RemotePlannerMissingError(
            f"The planner is not installed on {host} (or not on its login PATH): `{spec.planner}` "
            f"{'is not runnable there' if status == 126 else 'was not found there'}"
            f"{_described(basics)}",
            "install it there:\n" + install_command(spec, basics))
    if "invalid choice: 'preflight'" in stderr:
        # A planner from before the preflight existed: older than any client that speaks over SSH.
        basics = await probe_basics(conn)
        raise _mismatch(spec, None, None, basics)
    signal = f" (ended by signal {done.exit_signal[0]})" if done.exit_signal else ""
    raise RemotePreflightError(
        f"The planner's preflight on {host} failed with exit status {status}{signal}; it printed:\n"
        f"{_first_lines(stderr or stdout)}",
        f"run `{command}` on {host} by hand to see the whole message")


def _described(basics: HostBasics) -> str:
    """What the probe found, as a clause for the error (", an aarch64 machine with Python 3.11.2 and glibc 2.36")."""
    parts = [f"Python {basics.python}" if basics.python else "no python3",
             f"glibc {basics.glibc}" if basics.glibc else ""]
    found = " and ".join(p for p in parts if p)
    return f"; it is an {basics.arch} machine with {found}" if basics.arch else f"; it has {found}"

"""`planner preflight`: what this machine offers a planner driven from elsewhere (the remote half of a preflight).

A client that plans this machine over SSH runs `planner preflight --json` here first and reads one JSON
object: the planner and protocol versions (can the client's engine talk to this one?), the architecture,
Python and glibc (which install command fits?), which inference runtimes import, the per-user cache folder
(where shipped models and runs go) and the cores this process may use.

How the runtimes are checked: each one is really imported, every one in its own short-lived Python process,
all at once, with a time limit. A version number from the package metadata alone would call a wheel
"installed" whose native library cannot load (a CUDA library missing, a build for a newer CPU, a glibc too
old), and that is the failure an edge board shows most often. Importing in a child process keeps a runtime
that crashes the interpreter on import (a segfault or an illegal instruction) from taking the preflight with
it, keeps this process free of torch, and running the imports side by side makes the whole check as slow as
the slowest import, not their sum. A runtime whose module is not there at all costs no process.

The answers are kept in the cache folder (`RUNTIMES_CACHE`), keyed by where each runtime's module lives and
when it was installed, so the next preflight (every connection makes one) imports nothing until a runtime is
installed, upgraded or removed: importing torch takes seconds on a server and tens of seconds on a board.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RUNTIMES = ("torch", "onnxruntime", "openvino", "tensorrt", "nncf")
"""The inference runtimes and toolkits a plan can use, by import name."""

IMPORT_TIMEOUT_S = 60.0
"""How long one runtime's import may take: torch from an SD card on a small board takes tens of seconds."""

_IMPORT_SCRIPT = (
    "import importlib, json, sys\n"
    "module = importlib.import_module(sys.argv[1])\n"
    "version = getattr(module, '__version__', None)\n"
    "print(json.dumps({'version': None if version is None else str(version)}))\n"
)


def runtime_versions(names: tuple[str, ...] = RUNTIMES, timeout_s: float = IMPORT_TIMEOUT_S
                     ) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each runtime's version where it imports, else None; and for each None, a short reason.

    Every import runs in its own Python process (see the module's docstring for why), all started at once.
    """
    versions: dict[str, str | None] = {}
    reasons: dict[str, str] = {}
    started: dict[str, subprocess.Popen[str]] = {}
    for name in names:
        if importlib.util.find_spec(name) is None:
            versions[name], reasons[name] = None, "not installed"
            continue
        # -P: the working folder is not put on the path, so a folder named like a runtime cannot stand in for it.
        started[name] = subprocess.Popen([sys.executable, "-P", "-c", _IMPORT_SCRIPT, name],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                         stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    for name, proc in started.items():
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            from planner.supervise import end_process

            end_process(proc, grace_s=1.0)
            proc.communicate()
            versions[name], reasons[name] = None, f"importing it took longer than {timeout_s:.0f} s"
            continue
        versions[name], reason = _read_import(name, proc.returncode, out, err)
        if reason:
            reasons[name] = reason
    return {name: versions[name] for name in names}, {name: reasons[name] for name in names if name in reasons}


RUNTIMES_CACHE = "preflight-runtimes.json"
"""The file in the cache folder that keeps the last import check, with the key it was made under."""


def runtime_key(names: tuple[str, ...] = RUNTIMES) -> dict[str, Any]:
    """What the import check depends on: this Python, and per runtime where its module is and when it changed."""
    key: dict[str, Any] = {"python": sys.executable, "version": platform.python_version()}
    for name in names:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        try:
            stamp = os.stat(origin).st_mtime_ns if origin else None
        except OSError:
            stamp = None
        key[name] = [origin, stamp]
    return key


def cached_runtime_versions(cache_dir: Path, *, refresh: bool = False, timeout_s: float = IMPORT_TIMEOUT_S
                            ) -> tuple[dict[str, str | None], dict[str, str]]:
    """`runtime_versions`, answered from the cache while nothing it depends on changed (`refresh`: import again)."""
    path = cache_dir / RUNTIMES_CACHE
    key = runtime_key()
    if not refresh:
        try:
            kept = json.loads(path.read_text(encoding="utf-8"))
            if kept.get("key") == key:
                return dict(kept["versions"]), dict(kept["reasons"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    versions, reasons = runtime_versions(timeout_s=timeout_s)
    if not any("longer than" in why for why in reasons.values()):  # a slow disk today is no answer for tomorrow
        try:
            from planner.io import write_json_atomic

            cache_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, {"key": key, "versions": versions, "reasons": reasons})
        except OSError:
            pass  # an unwritable cache costs the next preflight its imports, nothing more
    return versions, reasons


def _read_import(name: str, returncode: int, out: str, err: str) -> tuple[str | None, str]:
    """One child's answer: (version, "") where the import worked, else (None, why in one line)."""
    if returncode < 0:
        try:
            signame = signal.Signals(-returncode).name
        except ValueError:
            signame = f"signal {-returncode}"
        return None, f"the import crashed Python ({signame})"
    if returncode != 0:
        lines = [line.strip() for line in err.splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit status {returncode}"
        return None, last[:200]
    try:
        version = json.loads(out.strip().splitlines()[-1])["version"]
    except (ValueError, IndexError, KeyError, TypeError):
        version = None
    return (str(version) if version else _distribution_version(name) or "unknown"), ""


def _distribution_version(module: str) -> str | None:
    """The installed version of the package that provides `module`, for a module without `__version__`."""
    for dist in importlib.metadata.packages_distributions().get(module, []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def glibc_version() -> str | None:
    """The C library's version where it is glibc ("2.36"); None elsewhere (musl, macOS)."""
    lib, version = platform.libc_ver()
    if lib == "glibc" and version:
        return version
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return None
    return text.split()[-1] if text.startswith("glibc") else None


def usable_cores() -> int:
    """The cores a plan here may use (its CPU affinity after `$PLANNER_CPUS` as the engine applies it, capped by a
    cgroup CPU quota), not the machine's count: the same figure the plan sizes its workers by."""
    from planner.engine.startup import limit_cpus
    from planner.hardware.memory_limits import usable_cores as plan_cores

    limit_cpus()
    return plan_cores()


def local_facts(timeout_s: float = IMPORT_TIMEOUT_S, *, refresh: bool = False) -> dict[str, Any]:
    """This machine's facts, as `planner preflight --json` prints them (`refresh`: import the runtimes again even
    where the cache holds the answer)."""
    from planner import __version__
    from planner.engine.protocol import PROTOCOL_VERSION
    from planner.paths import cache_dir

    versions, reasons = cached_runtime_versions(cache_dir().expanduser(), refresh=refresh,
                                                timeout_s=timeout_s)
    return {
        "planner": __version__,
        "protocol": PROTOCOL_VERSION,
        "arch": platform.machine(),
        "python": platform.python_version(),
        "executable": sys.executable,
        "glibc": glibc_version(),
        "runtimes": versions,
        "runtime_problems": reasons,
        "cache_dir": str(cache_dir().expanduser().absolute()),
        "cores": usable_cores(),
    }


def format_facts(facts: dict[str, Any]) -> str:
    """The facts as readable lines."""
    lines = [
        f"Planner       {facts['planner']} (engine protocol {facts['protocol']}), {facts['executable']}",
        f"Machine       {facts['arch']}, {facts['cores']} usable core{'' if facts['cores'] == 1 else 's'}",
        f"Python        {facts['python']}",
        f"glibc         {facts['glibc'] or 'not glibc (another C library)'}",
        f"Cache folder  {facts['cache_dir']}",
        "Runtimes",
    ]
    for name, version in facts["runtimes"].items():
        why = facts["runtime_problems"].get(name, "")
        lines.append(f"  {name:<12} {version if version else 'does not import: ' + why}")
    return "\n".join(lines)


def cmd_preflight(args: argparse.Namespace) -> int:
    """Print what this machine offers a planner driven over SSH (JSON with --json)."""
    facts = local_facts(refresh=args.refresh)
    # One line: a client reads the last line of the output, past anything a login script printed.
    print(json.dumps(facts) if args.json else format_facts(facts))
    return 0

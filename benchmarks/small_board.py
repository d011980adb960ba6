"""Does a plan fit a small board? A quick plan run inside a memory (and CPU) cgroup the size of one.

Makes a cgroup with the memory limit given (and, with --cpus, a cpuset of that many cores), starts
`planner plan --quick` inside it (the planner joins the cgroup before it execs, so its whole process tree
is in it from the first byte), and when it ends reads what the kernel counted:

* the cgroup's peak (v1 memory.max_usage_in_bytes, v2 memory.peak; page cache included),
* memory.failcnt (v1: how often the limit was hit and the kernel had to reclaim; not a kill) and the
  OOM-kill count (v1 memory.oom_control, v2 memory.events): 0 means no process was killed,

then the plan's status in results.json and the lines of the report that say what it planned under and the
peak its own sampler saw. The cgroups are removed afterwards, whatever happened.

A Raspberry Pi 5 with 2 GB: --memory 2GiB --cpus 2 (its 4 cores halved, as a board also runs its OS). A
4 GB board or a small container: --memory 3GiB.

Needs root (or a delegated cgroup tree) on Linux with the memory controller mounted (cgroup v1 at
/sys/fs/cgroup/memory, or v2 with memory enabled at /sys/fs/cgroup). Where cgroups cannot be written it
prints why and exits 0 without running anything (a skip, not a failure).

Exit status: 0 when the plan finished with status ok and no process was OOM-killed (or skipped), 1 otherwise.

Usage: .venv/bin/python benchmarks/small_board.py --memory 3GiB [--cpus 2] [--model demo:inefficient]
       [--out DIR] [-- extra planner plan arguments]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CGROUP = Path("/sys/fs/cgroup")
DRAIN_S = 10.0
"""How long processes left in the cgroup after the plan (a multiprocessing resource tracker) get to exit."""


def parse_size(text: str) -> int:
    """'3GiB', '2G', '1536M', '2147483648' → bytes (binary units: a board's '2 GB' is 2 GiB of RAM)."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)(i?B?)\s*", text, flags=re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 3GiB, 2G, 1536M)")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def gib(value: int | None) -> str:
    """Bytes as GiB with two decimals ('2.31 GiB'); '-' when unknown."""
    return "-" if value is None else f"{value / (1 << 30):.2f} GiB"


@dataclass
class Cgroups:
    """The cgroup folders made for one run: the memory one, and the cpuset one under v1 (v2 has one folder)."""

    version: int
    memory: Path
    cpuset: Path | None = None
    made: list[Path] = field(default_factory=list)

    def join_self(self) -> None:
        """In the child, before exec: move this process into the cgroups."""
        for folder in self.made:
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    def pids(self) -> set[int]:
        """Processes still in the cgroups."""
        found: set[int] = set()
        for folder in self.made:
            try:
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return found


def unwritable_reason() -> str:
    """Why cgroups cannot be made here ('' when they can)."""
    if not sys.platform.startswith("linux"):
        return f"cgroups are Linux only (this is {sys.platform})"
    if (CGROUP / "memory" / "memory.limit_in_bytes").exists():
        folder = CGROUP / "memory"
    elif "memory" in (_read(CGROUP / "cgroup.subtree_control") or ""):
        folder = CGROUP
    elif (CGROUP / "cgroup.controllers").exists():
        return ("cgroup v2 is mounted but the memory controller is not enabled for child cgroups "
                "(add +memory to /sys/fs/cgroup/cgroup.subtree_control)")
    else:
        return "no memory cgroup controller is mounted under /sys/fs/cgroup"
    if not os.access(folder, os.W_OK):
        return f"{folder} is not writable (run as root, or in a delegated cgroup)"
    return ""


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _first_cpus(allowed: str, count: int) -> str:
    """The first `count` CPUs of a cpuset list like '0-3,8-11', as a list the kernel takes."""
    cpus: list[int] = []
    for part in allowed.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.extend(range(int(low), int(high) + 1))
        elif part:
            cpus.append(int(part))
    if count > len(cpus):
        raise SystemExit(f"--cpus {count}: only {len(cpus)} CPUs are allowed here ({allowed.strip()})")
    return ",".join(str(c) for c in cpus[:count])


def make_cgroups(name: str, memory_bytes: int, cpus: int | None) -> Cgroups:
    """Make the cgroups, set the memory limit (and swap, so it cannot escape to swap) and the cpuset."""
    if (CGROUP / "memory" / "memory.limit_in_bytes").exists():
        groups = Cgroups(1, CGROUP / "memory" / name)
        groups.memory.mkdir()
        groups.made.append(groups.memory)
        (groups.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if (groups.memory / "memory.memsw.limit_in_bytes").exists():
            (groups.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        if cpus is not None:
            groups.cpuset = CGROUP / "cpuset" / name
            groups.cpuset.mkdir()
            groups.made.append(groups.cpuset)
            parent = CGROUP / "cpuset"
            (groups.cpuset / "cpuset.cpus").write_text(_first_cpus(_read(parent / "cpuset.cpus") or "0", cpus))
            (groups.cpuset / "cpuset.mems").write_text((_read(parent / "cpuset.mems") or "0").strip())
        return groups
    groups = Cgroups(2, CGROUP / name)
    groups.memory.mkdir()
    groups.made.append(groups.memory)
    (groups.memory / "memory.max").write_text(str(memory_bytes))
    if (groups.memory / "memory.swap.max").exists():
        (groups.memory / "memory.swap.max").write_text("0")
    if cpus is not None:
        if not (groups.memory / "cpuset.cpus").exists():
            raise SystemExit("--cpus needs the cpuset controller enabled for child cgroups (+cpuset in "
                             "/sys/fs/cgroup/cgroup.subtree_control)")
        allowed = _read(CGROUP / "cpuset.cpus.effective") or f"0-{(os.cpu_count() or 1) - 1}"
        (groups.memory / "cpuset.cpus").write_text(_first_cpus(allowed, cpus))
    return groups


def kernel_counts(groups: Cgroups) -> dict[str, int | None]:
    """The cgroup's peak, limit hits and OOM kills, as the kernel counted them."""
    folder = groups.memory

    def number(name: str) -> int | None:
        text = _read(folder / name)
        try:
            return int(text.strip()) if text is not None else None
        except ValueError:
            return None

    def keyed(name: str, key: str) -> int | None:
        for line in (_read(folder / name) or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
        return None

    if groups.version == 1:
        return {"peak_bytes": number("memory.max_usage_in_bytes"), "failcnt": number("memory.failcnt"),
                "oom_kills": keyed("memory.oom_control", "oom_kill")}
    return {"peak_bytes": number("memory.peak"), "failcnt": keyed("memory.events", "max"),
            "oom_kills": keyed("memory.events", "oom_kill")}


def remove_cgroups(groups: Cgroups) -> None:
    """Wait for what the plan left in the cgroups to exit (stop it after DRAIN_S), then remove the folders."""
    deadline = time.monotonic() + DRAIN_S
    while groups.pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in groups.pids():
        # Only the plan's own descendants can be in a cgroup made for it a moment ago.
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for folder in reversed(groups.made):
        for _ in range(50):
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)  # the last process is still being reaped
        else:
            print(f"warning: could not remove {folder}", file=sys.stderr)


def report_lines(out: Path) -> list[str]:
    """The report's lines on what the plan ran under and its memory."""
    text = _read(out / "report.md") or ""
    keys = ("planned under", "peak memory of the planner", "own cgroup")
    return [line.strip() for line in text.splitlines() if any(k in line for k in keys)]


def main(argv: list[str] | None = None) -> int:
    """Run the plan in the cgroup and print what it took; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=parse_size, required=True, help="the memory limit, e.g. 3GiB or 2G")
    parser.add_argument("--cpus", type=int, default=None, help="run on this many cores (a cpuset)")
    parser.add_argument("--model", default="demo:inefficient")
    parser.add_argument("--out", type=Path, default=None, help="the plan's output folder (default: a new temp one)")
    parser.add_argument("--planner", type=Path, default=REPO_ROOT / ".venv" / "bin" / "planner")
    parser.add_argument("extra", nargs="*", help="more `planner plan` arguments (after --)")
    args = parser.parse_args(argv)

    reason = unwritable_reason()
    if reason:
        print(f"SKIPPED: cannot make a cgroup here: {reason}")
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="small-board-"))
    command = [str(args.planner), "plan", "--model", args.model, "--quick", "--out", str(out), *args.extra]
    groups = make_cgroups(f"planner-small-board-{os.getpid()}", args.memory, args.cpus)
    summary: dict[str, object] = {"memory_limit": gib(args.memory), "cpus": args.cpus, "command": command}
    try:
        started = time.monotonic()
        out.mkdir(parents=True, exist_ok=True)
        log = (out / "small_board.log").open("w")  # the plan's console output, beside its results
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=groups.join_self,
                                   cwd=REPO_ROOT)
        try:
            code = process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)
            process.wait()
            raise
        summary["wall_s"] = round(time.monotonic() - started, 1)
        summary["exit_code"] = code
        summary.update(kernel_counts(groups))
    finally:
        remove_cgroups(groups)
    results = json.loads(_read(out / "results.json") or "{}")
    statuses: dict[str, int] = {}
    for c in results.get("candidates", []):
        statuses[c.get("status", "?")] = statuses.get(c.get("status", "?"), 0) + 1
    resources = (results.get("environment") or {}).get("resources") or {}
    summary.update(status=results.get("status"), candidates=statuses, out=str(out),
                   planner_tree_peak=gib(resources.get("peak_bytes")),
                   candidate_tree_peak=gib(max((c.get("tree_peak_bytes") or 0 for c in results.get("candidates", [])),
                                               default=0) or None),
                   report=report_lines(out))
    summary["peak"] = gib(summary.get("peak_bytes"))  # type: ignore[arg-type]
    print(json.dumps(summary, indent=1))
    ok = summary.get("status") == "ok" and summary.get("oom_kills") in (0, None) and summary.get("exit_code") == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

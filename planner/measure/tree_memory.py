"""The memory of the planner's whole process tree (the planner, its workers and whatever they start), sampled.

A worker's own peak (VmHWM) misses what sits beside it: the planner itself, and the compiler processes
torch.compile starts. What decides whether a plan fits a small board is the tree's sum, so a light
daemon thread reads it every `INTERVAL_S` and keeps the peak (nothing else: it stores no samples).

How it is counted, in two parts. Its own memory: each process's anonymous and shared-memory resident
pages, summed; no kernel can take these back without swap, so this is what must fit under a limit. Its
mapped files: the largest file-backed resident set of any one process (the libraries every process maps
sit once in the page cache, so summing RSS would count torch's hundreds of MB once per process: a spawned
torch worker shows 714 MiB RSS of which 281 MiB is its own). The kernel can drop and re-read those pages,
and a cgroup is charged for them only when it was the first to read them, so they are given beside the
own memory, not in it. The peak is the moment the own memory was largest.

Each sample reads /proc/PID/status of every process in the tree: no page-table walk, so it costs well
under a millisecond and does not disturb the timings it runs beside.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

INTERVAL_S = 0.25
"""Seconds between samples: a worker lives for seconds and a compiler process for about one, so a peak
that matters lasts several samples; faster would only cost CPU beside the timings."""

BASIS = f"anonymous and shared memory summed over the tree's processes, sampled every {INTERVAL_S:g} s"
"""How the figure is made, for the report."""

_PROC = Path("/proc")


@dataclass(frozen=True)
class TreeReading:
    """The tree's memory at one moment: its own (anonymous) memory, its mapped files, and how many processes."""

    bytes: int
    processes: int
    file_bytes: int = 0


def _status_kib(pid: int, proc: Path) -> tuple[int, int] | None:
    """(anonymous + shared-memory, file-backed) resident KiB of one process; None when it is gone."""
    try:
        text = (proc / str(pid) / "status").read_text()
    except OSError:
        return None
    fields = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile", "RssShmem"):
            fields[name] = int(value.split()[0])
    return fields.get("RssAnon", 0) + fields.get("RssShmem", 0), fields.get("RssFile", 0)


def _children(pid: int, proc: Path) -> list[int]:
    """The process's direct children: each of its threads lists those it started (Linux CONFIG_PROC_CHILDREN)."""
    found: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


def _children_psutil(pid: int) -> list[tuple[int, int]]:
    """(child, parent) for the whole subtree by psutil, where the kernel lists no children files (slower: it
    scans every process)."""
    import psutil

    try:
        return [(p.pid, p.ppid()) for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _tree(pid: int, proc: Path) -> list[tuple[int, int | None]]:
    """(process, its parent) for `pid` (parent None) and all its descendants."""
    if not (proc / str(pid) / "task").is_dir():
        return []
    if not (proc / str(pid) / "task" / str(pid) / "children").exists() and proc == _PROC:
        return [(pid, None), *_children_psutil(pid)]
    members: list[tuple[int, int | None]] = []
    queue: list[tuple[int, int | None]] = [(pid, None)]
    seen = {pid}
    while queue:
        current, parent = queue.pop()
        members.append((current, parent))
        for child in _children(current, proc):
            if child not in seen:
                seen.add(child)
                queue.append((child, current))
    return members


def tree_pids(pid: int, proc: Path = _PROC) -> list[int]:
    """`pid` and all its descendants."""
    return [member for member, _ in _tree(pid, proc)]


def _cmdline(pid: int, proc: Path) -> bytes | None:
    try:
        return (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None


def _private_dirty_kib(pid: int, proc: Path) -> int | None:
    """The pages a process has written since it was forked (smaps_rollup's Private_Dirty), None when unreadable."""
    try:
        text = (proc / str(pid) / "smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1])
    return None


def read_tree(pid: int | None = None, proc: Path = _PROC) -> TreeReading:
    """The memory of `pid` (default: this process) and its descendants: own memory summed, the largest file set.

    A child forked without exec (same command line as its parent: a subprocess about to exec, a fork pool)
    shares its parent's anonymous pages copy-on-write, so its RssAnon would count them twice: only the pages
    it has written since (Private_Dirty) are its own. Reading them walks its page tables, which costs a few
    ms, but such children are rare and short-lived.
    """
    own, largest_file, count = 0, 0, 0
    cmdlines: dict[int, bytes | None] = {}
    for member, parent in _tree(os.getpid() if pid is None else pid, proc):
        kib = _status_kib(member, proc)
        if kib is None:
            continue  # it ended between the listing and the read
        anon = kib[0]
        cmdlines[member] = _cmdline(member, proc)
        if parent is not None and cmdlines[member] and cmdlines[member] == cmdlines.get(parent):
            written = _private_dirty_kib(member, proc)
            anon = min(anon, written) if written is not None else anon
        own += anon
        largest_file = max(largest_file, kib[1])
        count += 1
    return TreeReading(own * 1024, count, largest_file * 1024)


class Window:
    """The tree's peak over a span of time (a candidate's measurement): see `TreeMemory.window`."""

    def __init__(self) -> None:
        self.peak: TreeReading | None = None

    def take(self, reading: TreeReading) -> None:
        """Keep `reading` if it is the largest so far."""
        if self.peak is None or reading.bytes > self.peak.bytes:
            self.peak = reading

    @property
    def peak_bytes(self) -> int | None:
        """The largest tree seen in the window, in bytes (None: no sample)."""
        return self.peak.bytes if self.peak is not None else None


class TreeMemory:
    """Samples a process tree's memory on a daemon thread and keeps its peak, over all time and per window."""

    def __init__(self, pid: int | None = None, *, interval_s: float = INTERVAL_S,
                 read: Callable[[int], TreeReading] = read_tree) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.interval_s = interval_s
        self._read = read
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._all = Window()
        self._windows: list[Window] = []
        self.samples = 0

    @property
    def peak(self) -> TreeReading | None:
        """The largest tree seen since the sampler started."""
        return self._all.peak

    @property
    def running(self) -> bool:
        """Whether the sampling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> TreeMemory:
        """Start sampling (idempotent)."""
        if not self.running:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="planner-tree-memory", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling after one last sample (the peak is kept)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(1.0, 4 * self.interval_s))
        self.sample()

    def restart_peak(self) -> None:
        """Forget the peak so far (a new plan in the same process); open windows keep theirs."""
        with self._lock:
            self._all = Window()

    def sample(self) -> TreeReading | None:
        """Read the tree once now and fold it into the peaks (the thread calls this; so may anyone)."""
        try:
            reading = self._read(self.pid)
        except (OSError, ValueError):
            return None  # a /proc we cannot read this time; the next sample tries again
        with self._lock:
            self.samples += 1
            self._all.take(reading)
            for window in self._windows:
                window.take(reading)
        return reading

    @contextmanager
    def window(self) -> Iterator[Window]:
        """A Window whose peak covers the `with` block (sampled at its start and end too, so never empty)."""
        window = Window()
        with self._lock:
            self._windows.append(window)
        self.sample()
        try:
            yield window
        finally:
            self.sample()
            with self._lock:
                self._windows.remove(window)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()


_plan_sampler: TreeMemory | None = None
_plan_lock = threading.Lock()


def plan_memory() -> TreeMemory:
    """The sampler of this planner process's tree, started on first use and kept for the process's life.

    A forked child gets a fresh one: the parent's thread does not survive a fork, and its peak is not the child's.
    """
    global _plan_sampler
    with _plan_lock:
        if _plan_sampler is None or _plan_sampler.pid != os.getpid():
            _plan_sampler = TreeMemory()
        return _plan_sampler.start()


__all__ = ["BASIS", "INTERVAL_S", "TreeMemory", "TreeReading", "Window", "plan_memory", "read_tree", "tree_pids"]

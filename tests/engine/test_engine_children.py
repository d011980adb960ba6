"""Three Optimize rounds in one `planner engine` leave its processes as they found them (issue 38: 55 idle copies of
the engine, 1.5 GiB, after three rounds in the TUI).

The OpenVINO INT8 plugin builds its candidates in the engine, and NNCF's and OpenVINO's telemetry start a
`multiprocessing.Process` for each event while it does (about 25 a round here). As forks of the engine they inherited
locks that other threads held and hung for ever; the engine now has them started by a forkserver
(planner.engine.startup.start_processes_from_a_server). The telemetry runs here as on a user's machine, with its
consent read from an empty home folder (none given: it sends) and its requests sent to a closed local port, so
nothing leaves the machine and each send fails at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil
import pytest
from engine_support import Background, descendants, end_processes, spawn

from planner.engine import protocol as wire

pytestmark = pytest.mark.worker  # a profile and three Optimize rounds, measured in worker processes

ROUNDS = 3
PLUGIN = "cpu.openvino_int8"  # the plugin whose build starts processes in the engine (the libraries' telemetry)
CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens, so a request is refused at once
SETTLE_S = 20.0
"""How long a round's last processes may take to end after its answer (a telemetry send waits at most 3 s)."""
HELPERS = {
    "multiprocessing.resource_tracker": "the resource tracker (one per engine, started with its first worker)",
    "multiprocessing.forkserver": "the forkserver (one per engine: the libraries' processes are forked from it)",
}
"""The long-lived helpers an engine may keep between jobs, by the module their command line runs."""
HELPERS_MEMORY_BYTES = 32 << 20
"""How much more memory of their own the children may hold after the rounds than before: the forkserver's (about
7 MiB). The 53 copies of the engine that three rounds used to leave held 270 MiB of their own."""


@dataclass(frozen=True)
class Children:
    """The engine's descendants at one moment: each one's id and command line, and the memory they hold."""

    processes: dict[int, str]
    uss: int  # memory only they hold (unique set size), summed
    rss: int  # resident memory, summed (shared pages counted in each)

    def others(self) -> dict[int, str]:
        """The descendants that are not long-lived helpers."""
        return {pid: line for pid, line in self.processes.items()
                if not any(module in line for module in HELPERS)}

    def __str__(self) -> str:
        mib = 2**20
        return f"{len(self.processes)} processes, {self.uss / mib:.0f} MiB unique, {self.rss / mib:.0f} MiB resident"


def children_of(pid: int) -> Children:
    """The engine's descendants now (those that end while they are read are left out)."""
    processes: dict[int, str] = {}
    uss = rss = 0
    for child in descendants(pid):
        try:
            line = " ".join(child.cmdline())
            memory = child.memory_full_info()
        except psutil.Error:
            continue
        processes[child.pid] = line
        uss, rss = uss + memory.uss, rss + memory.rss
    return Children(processes, uss, rss)


def settled(pid: int) -> Children:
    """The engine's descendants once only helpers are left, or as they are after `SETTLE_S`."""
    deadline = time.monotonic() + SETTLE_S
    now = children_of(pid)
    while now.others() and time.monotonic() < deadline:
        time.sleep(0.2)
        now = children_of(pid)
    return now


def test_three_optimize_rounds_leave_the_engines_children_as_they_were(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    for name in ("CI", "NNCF_CI", "NNCF_DEV"):  # each turns the libraries' telemetry off
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("https_proxy", CLOSED_PORT)
    monkeypatch.setenv("http_proxy", CLOSED_PORT)
    engine = spawn(tmp_path)
    assert engine.process is not None
    pid = engine.process.pid
    leftovers: list[psutil.Process] = []
    try:
        engine.request(wire.Open(model="demo:tiny", target="cpu", out=str(tmp_path / "out")))
        engine.request(wire.Profile(quick=True))  # the baseline Optimize compares against
        engine.request(wire.Decide())
        before = settled(pid)
        after: list[Children] = []
        for _ in range(ROUNDS):
            # As the TUI's user did: each round cancelled (now, as its `c` does) once its candidates are built and
            # the first is being measured, which ends the round's measuring process mid-measurement too.
            round_ = Background(engine, wire.Optimize(plugins=[PLUGIN], confirm=0))
            round_.wait_for(lambda event: event.kind == "candidate")
            engine.cancel(now=True)
            round_.join()
            after.append(settled(pid))
            leftovers += descendants(pid)
    finally:
        leftovers += descendants(pid)
        engine.close()
        end_processes(leftovers)
    print(f"before the rounds: {before}; after each: {'; '.join(map(str, after))}")
    assert before.others() == {}
    for children in after:
        assert children.others() == {}, f"left running after a round: {children.others()}"
        assert set(before.processes) <= set(children.processes)  # the helpers stay: the same processes
    # The libraries did start processes, from the forkserver (were it absent, nothing here would have forked).
    assert any("multiprocessing.forkserver" in line for line in after[0].processes.values())
    assert len({frozenset(children.processes) for children in after}) == 1  # one set of helpers, not one a round
    assert after[-1].uss - before.uss < HELPERS_MEMORY_BYTES

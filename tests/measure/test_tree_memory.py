"""The planner's process tree memory: how a tree is counted from /proc, and how the sampler keeps its peaks."""

from __future__ import annotations

from pathlib import Path

from planner.measure.tree_memory import TreeMemory, TreeReading, read_tree, tree_pids


def _process(proc: Path, pid: int, *, anon_kib: int, file_kib: int, shmem_kib: int = 0,
             children: tuple[int, ...] = (), threads: int = 1, cmdline: str = "", written_kib: int = 0) -> None:
    """A fake /proc/PID: its status memory lines, command line, pages written, and its children (listed under its
    last thread)."""
    folder = proc / str(pid)
    (folder / "task").mkdir(parents=True)
    (folder / "cmdline").write_bytes((cmdline or f"prog{pid}").replace(" ", "\0").encode() + b"\0")
    (folder / "smaps_rollup").write_text(f"Rss: {anon_kib + file_kib} kB\nPrivate_Dirty: {written_kib} kB\n")
    (folder / "status").write_text(f"Name:\tpython\nVmRSS:\t{anon_kib + file_kib + shmem_kib} kB\n"
                                   f"RssAnon:\t{anon_kib} kB\nRssFile:\t{file_kib} kB\nRssShmem:\t{shmem_kib} kB\n")
    for n in range(threads):
        task = folder / "task" / str(pid + n * 1000)
        task.mkdir()
        (task / "children").write_text(" ".join(str(c) for c in children) if n == threads - 1 else "")


def test_a_tree_counts_each_process_own_memory_and_the_libraries_once(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    # The planner (its worker started from a second thread), the worker, and a compiler the worker started.
    _process(proc, 100, anon_kib=800_000, file_kib=450_000, children=(200,), threads=2)
    _process(proc, 200, anon_kib=500_000, file_kib=430_000, shmem_kib=10_000, children=(300,))
    _process(proc, 300, anon_kib=250_000, file_kib=5_000)
    assert sorted(tree_pids(100, proc)) == [100, 200, 300]
    reading = read_tree(100, proc)
    # Own memory summed; the libraries once, as the largest set any one process maps.
    assert reading == TreeReading((800_000 + 510_000 + 250_000) * 1024, 3, 450_000 * 1024)
    assert read_tree(200, proc).processes == 2


def test_a_process_that_ends_while_read_is_left_out(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _process(proc, 100, anon_kib=1000, file_kib=10, children=(200, 201))
    _process(proc, 200, anon_kib=500, file_kib=10)
    # 201 is listed as a child but already gone.
    assert read_tree(100, proc) == TreeReading(1500 * 1024, 2, 10 * 1024)


def test_the_sampler_keeps_the_peak_overall_and_per_window() -> None:
    readings = iter([TreeReading(b, 2) for b in (100, 900, 300, 500, 200, 400)])
    memory = TreeMemory(pid=1, read=lambda pid: next(readings))
    memory.sample()  # 100
    with memory.window() as window:  # 900 on entry
        memory.sample()  # 300
    # 500 on exit: the window's peak is the largest while it was open.
    assert window.peak_bytes == 900
    assert memory.peak == TreeReading(900, 2)
    memory.restart_peak()
    memory.sample()  # 200
    assert memory.peak == TreeReading(200, 2)
    assert memory.samples == 5


def test_the_sampler_thread_starts_and_stops_and_reads_this_process() -> None:
    memory = TreeMemory(interval_s=0.01).start()
    assert memory.running
    memory.stop()
    assert not memory.running
    assert memory.peak is not None and memory.peak.bytes > 0 and memory.peak.processes >= 1


def test_a_fork_counts_only_the_pages_it_wrote(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    # The planner forks (a subprocess about to exec): the child shows the parent's 650 MB of anonymous memory,
    # shared copy-on-write, of which it has written 2 MB.
    _process(proc, 100, anon_kib=650_000, file_kib=400_000, children=(200, 300), cmdline="python planner plan")
    _process(proc, 200, anon_kib=650_000, file_kib=400_000, cmdline="python planner plan", written_kib=2_000)
    _process(proc, 300, anon_kib=150_000, file_kib=300_000, cmdline="python -c spawn_main")
    assert read_tree(100, proc) == TreeReading((650_000 + 2_000 + 150_000) * 1024, 3, 400_000 * 1024)

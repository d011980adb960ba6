"""Issue 26's "Done when", on one machine, entirely on 127.0.0.1: a fleet of two SSH hosts that differ only in
cores, and a plan whose SSH connection is cut mid-plan and then re-attached.

Set-up (a temporary folder, removed at the end unless --keep): a client HOME whose ~/.ssh holds a fresh key, an
ssh_config alias per host and known_hosts; two SSH hosts served by tests/ssh/sshserver.py (the test hosts of
tests/ssh/conftest.py, whose classes this reuses), each running the project's own `planner` in its own remote
HOME, so each has its own cache and measures its own hardware ceilings:
    two-cores   the normal environment
    one-core    PLANNER_CPUS=1 (the engine keeps one core)

Part "fleet": `planner fleet --hosts fleet.toml --model M --quick --parallel 1 --out DIR` as a user runs it, with
HOME = the client home. One host at a time: both hosts are this machine, so measuring both at once would slow
each other. Prints the comparison table of fleet/report.md, each host's best p50 and their ratio, and fails
unless the one-core host is slower.

Part "attach": `planner plan --host two-cores --model M --quick` once to the end; then again, with the SSH
server killed (SIGKILL: every connection drops at once) as soon as the remote plan has reported its first
measured candidate. The client must exit 1 naming `planner attach two-cores RUN`; the server is restarted on
the same port with the same host key and `planner attach two-cores RUN` fetches the run. The two results.json
must agree: status ok, the same candidates with the same statuses, the baseline and report.md present, and the
top three of each ranking in the same order wherever the measurements tell the candidates apart. Two plans are
two measurements, so two candidates within 10% of each other in either plan (or closer than either of them
moved from one plan to the other, or whose 95% intervals overlap) may come in either order, and a candidate
the search chose not to screen because of what it had measured so far ("not screened: ...") may be skipped in
one plan and measured in the other; both are printed.

Exit status 0 when every check holds, 1 otherwise. Every wait is bounded (--timeout-s per command).

Usage: .venv/bin/python benchmarks/ssh_fleet.py [--part fleet|attach|all] [--model demo:inefficient] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import asyncssh

REPO_ROOT = Path(__file__).resolve().parent.parent
PLANNER = [sys.executable, "-m", "planner.cli"]
TWO, ONE = "two-cores", "one-core"
TOP = 3
"""How many of each plan's best-ranked candidates the attach part compares in order (the top few)."""
TIE_REL = 0.10
"""Two candidates whose p50s are this close (relative) in either plan are a tie, their order free: two plans are
two measurements, and a quick plan's own report says a re-measure may differ by 10% (more on a busy machine)."""
STOP_WAIT_S = 10.0


def _load_test_hosts() -> ModuleType:
    """tests/ssh/conftest.py (the SSH test hosts) as a module, without putting tests/ on sys.path."""
    path = REPO_ROOT / "tests" / "ssh" / "conftest.py"
    spec = importlib.util.spec_from_file_location("planner_ssh_test_hosts", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


hosts_mod = _load_test_hosts()


# -- the test hosts -------------------------------------------------------------------------------------------
def start_host(client: Any, alias: str, root: Path, extra_env: dict[str, str] | None) -> Any:
    """One more SSH host on a free 127.0.0.1 port, added to the client's ssh_config and known_hosts: what
    conftest's make_ssh_host fixture does (a fixture cannot be called from here), with a fresh host key."""
    folder = root / alias
    home = folder / "home"
    home.mkdir(parents=True)
    key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = folder / "host_key"
    key.write_private_key(key_path)
    authorized = folder / "authorized_keys"
    authorized.write_text(client.public_key + "\n")
    host = hosts_mod.SshTestHost(client=client, alias=alias, folder=folder, port=0, remote_env={},
                                 user=client.user, host_key=key.convert_to_public())
    host.remote_env = hosts_mod._remote_env(home, host.user, host.host_id, extra_env)
    host.config_file.write_text(json.dumps({
        "port": 0, "port_file": str(folder / "port"), "host_key": str(key_path), "user": host.user, "auth": "key",
        "authorized_keys": str(authorized), "password": "", "home": str(home), "env": host.remote_env,
    }))
    client.hosts.append(host)  # before start: a failed start is still ended at exit
    host.start()
    client.add_known_host(host.port, key)
    client.write()
    return host


# -- the CLI as a subprocess ----------------------------------------------------------------------------------
class Cli:
    """A `planner` command run as a user runs it (HOME = the client home); its output (stdout and stderr) is
    logged and read line by line with bounded waits."""

    running: list[Cli] = []

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path, log: Path, echo: str | None = None):
        self.args = args
        self.log_path = log
        self.echo = re.compile(echo) if echo else None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        cwd.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([*PLANNER, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        Cli.running.append(self)
        threading.Thread(target=self._pump, name="cli-output", daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        with self.log_path.open("w") as log:
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_lines(self, deadline: float) -> Iterator[str]:
        """Each line as it comes, until the output ends or `deadline` (time.monotonic()) passes."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return
                continue
            if line is None:
                self.lines.put(None)  # later calls see the end too
                return
            self.seen.append(line)
            if self.echo is not None and self.echo.search(line):
                print(f"    | {line}", flush=True)
            yield line

    def finish(self, timeout_s: float) -> int:
        """Read to the end and wait for the exit status (the command is ended when it runs past `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        for _ in self.next_lines(deadline):
            pass
        try:
            return self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stop()
            raise StepError(f"`planner {' '.join(self.args)}` ran past {timeout_s:g} s "
                            f"(log: {self.log_path})") from None

    def tail(self, n: int = 25) -> str:
        """The last lines of its output, for a failure message."""
        return "\n".join(f"    | {line}" for line in self.seen[-n:])

    def stop(self) -> None:
        """SIGTERM, then SIGKILL, each wait bounded."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_WAIT_S)


class StepError(Exception):
    """A check that did not hold, or a step that could not run: said, and the exit status is 1."""


@dataclass
class Checks:
    """What held and what did not, for the summary and the exit status."""

    failed: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> bool:
        """Print `what` as held or not; remember a failure."""
        print(f"  [{'ok' if ok else 'FAILED'}] {what}", flush=True)
        if not ok:
            self.failed.append(what)
        return ok


# -- reading results.json ------------------------------------------------------------------------------------
def read_json(path: Path) -> dict[str, Any]:
    """A results.json as plain data (a missing or broken file is a StepError)."""
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise StepError(f"{path} does not read: {exc}") from exc


def ranked(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranked candidates, best first."""
    cands = results.get("candidates") or []
    order = (results.get("ranking") or {}).get("order") or []
    return [cands[i] for i in order if isinstance(i, int) and 0 <= i < len(cands)]


def p50(cand: dict[str, Any] | None) -> float | None:
    """A candidate's (or the baseline's) median latency in ms, or None when it has none."""
    value = ((cand or {}).get("latency_ms") or {}).get("p50_ms")
    return float(value) if isinstance(value, (int, float)) else None


def interval(cand: dict[str, Any]) -> tuple[float, float] | None:
    """The 95% interval of a candidate's median (its own samples' ci95_rel), or None."""
    mid, rel = p50(cand), (cand.get("latency_ms") or {}).get("ci95_rel")
    if mid is None or not isinstance(rel, (int, float)):
        return None
    return mid * (1 - rel), mid * (1 + rel)


def ms(value: float | None) -> str:
    """A latency for the tables."""
    return "—" if value is None else f"{value:.4g} ms"


def cpu_line(results: dict[str, Any]) -> str:
    """The hardware a host's plan saw: usable cores and ISA features."""
    cpu = (results.get("hardware") or {}).get("cpu") or {}
    return (f"{cpu.get('architecture', '?')}, {cpu.get('usable_cores', '?')} usable of {cpu.get('logical_cores', '?')} "
            f"cores, ISA {' '.join(cpu.get('features') or []) or '?'}")


def ceilings_line(results: dict[str, Any]) -> str:
    """When and on how many threads the host's ceilings were measured (its own cache: measured by its first plan)."""
    ceil = results.get("ceilings") or {}
    details = ceil.get("details") or {}
    threads = details.get("threads", "?")
    return (f"ceilings {ceil.get('source', 'none')} on {threads} thread{'' if threads == 1 else 's'} "
            f"at {details.get('timestamp', '?')}")


# -- the two parts -------------------------------------------------------------------------------------------
def detect_isa(env: dict[str, str]) -> str:
    """`planner detect --json` on this machine (both hosts are it): the CPU and its ISA features, one line."""
    proc = subprocess.run([*PLANNER, "detect", "--json"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        return f"planner detect failed: {proc.stderr.strip()[-300:]}"
    cpu = json.loads(proc.stdout).get("cpu") or {}
    return (f"{cpu.get('model')} {cpu.get('architecture')}, {cpu.get('usable_cores')} usable cores; ISA features: "
            f"{' '.join(cpu.get('features') or [])}")


def report_table(report: Path) -> list[str]:
    """The Devices table and the recommendation of fleet/report.md."""
    lines = report.read_text(encoding="utf-8").splitlines()
    table = [line for line in lines if line.startswith("|")]
    start = next((i for i, line in enumerate(lines) if line.startswith("## Where this model should run")), None)
    advice = [line for line in lines[start + 1:] if line.strip()] if start is not None else []
    return table + [""] + advice


def part_fleet(work: Path, client: Any, args: argparse.Namespace, checks: Checks) -> None:
    """`planner fleet` over both hosts; the one-core host must come out slower."""
    fleet_toml = work / "fleet.toml"
    fleet_toml.write_text(f'[[hosts]]\nhost = "{TWO}"\n\n[[hosts]]\nhost = "{ONE}"\n')
    out = work / "fleet-out"
    argv = ["fleet", "--hosts", str(fleet_toml), "--model", args.model, "--quick", "--parallel", "1", "--out", str(out)]
    print(f"  planner {' '.join(argv)}")
    print("  (--parallel 1: both hosts are this machine's cores; measured at once they would slow each other)")
    print(f"  this machine (planner detect): {detect_isa(client.env)}", flush=True)
    fleet = Cli(argv, env=client.env, cwd=work, log=work / "fleet.log", echo=".")
    code = fleet.finish(args.timeout_s)
    if not checks.check(code == 0, f"planner fleet exited {code}"):
        print(fleet.tail())
    report = out / "fleet" / "report.md"
    if not checks.check(report.is_file(), f"{report.relative_to(work)} written"):
        return
    print()
    for line in report_table(report):
        print(f"  {line}")
    print()
    best: dict[str, float | None] = {}
    spans: dict[str, tuple[float, float] | None] = {}
    for alias in (TWO, ONE):
        path = out / alias / "results.json"
        if not checks.check(path.is_file(), f"{alias}: results.json fetched into {path.relative_to(work)}"):
            continue
        results = read_json(path)
        top = next(iter(ranked(results)), None)
        best[alias], spans[alias] = p50(top), interval(top) if top else None
        print(f"  {alias:<10} status {results.get('status')}; best {(top or {}).get('label', '—')}: p50 "
              f"{ms(best[alias])}; {cpu_line(results)}; {ceilings_line(results)}")
    two, one = best.get(TWO), best.get(ONE)
    if two is None or one is None:
        checks.check(False, "both hosts have a measured best p50")
        return
    print(f"\n  p50 {TWO} {ms(two)}   p50 {ONE} {ms(one)}   ratio {ONE}/{TWO} = {one / two:.2f}x")
    a, b = spans.get(TWO), spans.get(ONE)
    if a is not None and b is not None:
        beyond = a[1] < b[0] or b[1] < a[0]
        print(f"  95% intervals of the medians: {TWO} {ms(a[0])}..{ms(a[1])}, {ONE} {ms(b[0])}..{ms(b[1])}: "
              f"{'apart (more than measurement noise)' if beyond else 'they overlap (within measurement noise)'}")
    checks.check(one > two, f"the {ONE} host is slower than the {TWO} host ({one / two:.2f}x)")


def plan_argv(args: argparse.Namespace) -> list[str]:
    """`planner plan --host two-cores --model M --quick`."""
    return ["plan", "--host", TWO, "--model", args.model, "--quick"]


ECHO = r"^\[two-cores\]|error:|fix:|Fetched from|^Report |measuring \d+ candidate"
RESULT_LINE = re.compile(r"^\[\d+:\d\d(?::\d\d)?\]\s+\d+/\d+\s")
RUN_LINE = re.compile(r"\[two-cores\] planning: run (\S+)")


def cut_mid_plan(work: Path, client: Any, host: Any, args: argparse.Namespace, checks: Checks) -> str:
    """Start the plan, kill the SSH server once the host has measured a candidate; returns the run's name."""
    cut = Cli(plan_argv(args), env=client.env, cwd=work / "cut", log=work / "cut.log", echo=ECHO)
    deadline = time.monotonic() + args.timeout_s
    run, measuring, killed = "", False, False
    for line in cut.next_lines(deadline):
        if not run and (m := RUN_LINE.search(line)):
            run = m.group(1)
        elif run and re.search(r"measuring \d+ candidate", line):
            measuring = True
        elif measuring and RESULT_LINE.match(line):
            print(f"  the host measured its first candidate ({line.strip()[:60]}...): killing the SSH server "
                  "(SIGKILL, every connection drops)", flush=True)
            host.kill()
            killed = True
            break
    if not killed:
        code = cut.finish(STOP_WAIT_S)
        raise StepError(f"the plan never reached a measured candidate before it ended (exit {code}) or "
                      f"{args.timeout_s:g} s passed: nothing was cut\n{cut.tail()}")
    code = cut.finish(120.0)
    said = f"planner attach {TWO} {run}"
    checks.check(code == 1, f"the cut client exited {code} (1 expected)")
    if not checks.check(any(said in line for line in cut.seen), f"the cut client names `{said}`"):
        print(cut.tail())
    return run


def part_attach(work: Path, client: Any, host: Any, args: argparse.Namespace, checks: Checks) -> None:
    """A plan to the end, then one cut mid-plan and re-attached; the two results.json compared."""
    print(f"  uncut: planner {' '.join(plan_argv(args))}", flush=True)
    uncut = Cli(plan_argv(args), env=client.env, cwd=work / "uncut", log=work / "uncut.log", echo=ECHO)
    code = uncut.finish(args.timeout_s)
    if not checks.check(code == 0, f"the uncut plan exited {code}"):
        print(uncut.tail())
    uncut_dirs = sorted((work / "uncut" / "reports").glob(f"{TWO}-*"))
    if not uncut_dirs:
        raise StepError("the uncut plan left no reports/two-cores-RUN folder")

    print(f"\n  cut: planner {' '.join(plan_argv(args))}", flush=True)
    run = cut_mid_plan(work, client, host, args, checks)
    cut_dir = work / "cut" / "reports" / f"{TWO}-{run}"
    checks.check(not (cut_dir / "results.json").exists(), "no results.json was fetched before the attach")
    host.restart()
    print(f"  the SSH server restarted on port {host.port} with the same host key", flush=True)
    print(f"\n  planner attach {TWO} {run}", flush=True)
    attach = Cli(["attach", TWO, run], env=client.env, cwd=work / "cut", log=work / "attach.log", echo=ECHO)
    code = attach.finish(args.timeout_s)
    if not checks.check(code == 0, f"planner attach exited {code}"):
        print(attach.tail())
    compare(uncut_dirs[-1], cut_dir, checks)


def _gap(a: dict[str, Any], b: dict[str, Any]) -> float | None:
    """How far apart two p50s are, relative to the smaller (None when one is missing)."""
    pa, pb = p50(a), p50(b)
    return abs(pa - pb) / min(pa, pb) if pa and pb else None


def _tie(a: dict[str, Any], b: dict[str, Any], drift: float) -> bool:
    """Whether one plan cannot tell two candidates apart: their p50s within TIE_REL, or within how far the same
    candidates moved between the two plans (`drift`), or their 95% intervals overlap."""
    gap = _gap(a, b)
    if gap is None:
        return True
    ia, ib = interval(a), interval(b)
    overlap = ia is not None and ib is not None and ia[0] <= ib[1] and ib[0] <= ia[1]
    return overlap or gap <= max(TIE_REL, drift)


def _pruned(cand: dict[str, Any]) -> bool:
    """Whether the plan's search left a candidate out because of what it had measured so far."""
    return bool(cand.get("status") == "skipped" and str(cand.get("reason", "")).startswith("not screened"))


def _counts(cands: dict[str, dict[str, Any]]) -> str:
    """How many candidates ended in each status: 'ok 14, skipped 3'."""
    seen: dict[str, int] = {}
    for cand in cands.values():
        seen[str(cand.get("status"))] = seen.get(str(cand.get("status")), 0) + 1
    return ", ".join(f"{status} {n}" for status, n in sorted(seen.items()))


def compare(uncut_dir: Path, cut_dir: Path, checks: Checks) -> None:
    """The uncut plan's results against the cut-then-attached one's: a table, then each check."""
    u, c = read_json(uncut_dir / "results.json"), read_json(cut_dir / "results.json")
    u_cands = {x.get("label", ""): x for x in u.get("candidates") or []}
    c_cands = {x.get("label", ""): x for x in c.get("candidates") or []}
    same_labels = bool(u_cands) and sorted(u_cands) == sorted(c_cands)
    statuses = {label: (u_cands[label].get("status"), c_cands[label].get("status"))
                for label in sorted(set(u_cands) & set(c_cands))}
    differ = {label: pair for label, pair in statuses.items() if pair[0] != pair[1]}
    pruned = {label for label in differ if _pruned(u_cands[label]) or _pruned(c_cands[label])}
    ub, cb = u.get("baseline"), c.get("baseline")
    rows = [("status", str(u.get("status")), str(c.get("status")), u.get("status") == c.get("status") == "ok"),
            ("candidates", f"{len(u_cands)}", f"{len(c_cands)}", same_labels),
            ("candidate statuses", _counts(u_cands), _counts(c_cands), not differ),
            ("baseline p50", ms(p50(ub)), ms(p50(cb)), p50(ub) is not None and p50(cb) is not None),
            ("report.md", _present(uncut_dir / "report.md"), _present(cut_dir / "report.md"),
             (uncut_dir / "report.md").is_file() and (cut_dir / "report.md").is_file())]
    u_rank, c_rank = ranked(u), ranked(c)
    c_pos = {x.get("label"): i for i, x in enumerate(c_rank)}
    for i in range(min(TOP + 2, len(u_rank))):  # two more than are compared: shown for context
        ux = u_rank[i]
        cx = c_rank[i] if i < len(c_rank) else {}
        rows.append((f"rank {i + 1}", f"{ux.get('label')} {ms(p50(ux))}", f"{cx.get('label', '—')} {ms(p50(cx))}",
                     ux.get("label") == cx.get("label")))
    print(f"\n  {'':<27} {'uncut':<52} {'cut, then attach':<52} same")
    for name, left, right, same in rows:
        print(f"  {name:<27} {left[:52]:<52} {right[:52]:<52} {'yes' if same else 'no'}")
    print()
    checks.check(rows[0][3], "both plans finished ok")
    if not checks.check(same_labels, "the same candidates (labels)"):
        for label in sorted(set(u_cands) ^ set(c_cands)):
            print(f"      only in the {'uncut' if label in u_cands else 'cut'} plan: {label}")
    # A status may differ where the plan's search decided from the numbers it had measured so far not to screen a
    # candidate (its sibling measured far behind the best): that follows the measurements, as the ranking does.
    for label in sorted(differ):
        left, right = differ[label]
        why = next((x.get("reason", "") for x in (u_cands[label], c_cands[label]) if _pruned(x)), "")
        print(f"      {label}: uncut {left}, cut {right}"
              + (f" (decided by measured numbers: {why[:150]})" if label in pruned else ""))
    checks.check(not set(differ) - pruned, f"the same statuses, except where the search's measured numbers decided "
                                           f"({len(pruned)} such)")
    checks.check(rows[3][3], "the baseline is measured in both")
    checks.check(rows[4][3], "report.md present in both")
    # The order of the top candidates: a pair in opposite orders is a difference only when both plans tell the
    # two apart (their medians further apart than TIE_REL and than either moved between the plans, and their 95%
    # intervals apart); otherwise it is a tie.
    u_by, c_by = {x.get("label"): x for x in u_rank}, {x.get("label"): x for x in c_rank}
    # Both plans' top TOP together, so a candidate that rose into the cut plan's top is compared too.
    top = [x.get("label") for x in u_rank[:TOP]]
    top += [x.get("label") for x in c_rank[:TOP] if x.get("label") not in top]
    u_pos = {x.get("label"): i for i, x in enumerate(u_rank)}
    differences: list[str] = []
    ties: list[str] = []
    unranked = [label for label in top if (label not in u_pos or label not in c_pos) and label not in pruned]
    for label in unranked:
        print(f"      ranked in one plan only: {label}")
    both = [label for label in top if label in u_pos and label in c_pos]
    for i, a in enumerate(both):
        for b in both[i + 1:]:
            if (u_pos[a] < u_pos[b]) == (c_pos[a] < c_pos[b]):
                continue
            # How far each of the two moved from one plan to the other: a gap smaller than that is not resolved.
            drift = max(_gap(u_by[a], c_by[a]) or 0.0, _gap(u_by[b], c_by[b]) or 0.0)
            pair = (f"{a} / {b}: uncut {ms(p50(u_by[a]))} vs {ms(p50(u_by[b]))}, "
                    f"cut {ms(p50(c_by[a]))} vs {ms(p50(c_by[b]))}; the same candidate moved up to {drift:.0%} "
                    "between the plans")
            (ties if _tie(u_by[a], u_by[b], drift) or _tie(c_by[a], c_by[b], drift) else differences).append(pair)
    for pair in ties:
        print(f"      in opposite orders, within measurement noise: {pair}")
    for pair in differences:
        print(f"      differs although both plans tell them apart: {pair}")
    close = f"{len(ties)} close pair{'s' if len(ties) != 1 else ''} in opposite orders"
    checks.check(not differences and not unranked, f"the top {TOP} of each plan ({len(both)} candidates) in the "
                                                   f"same order where the measurements tell them apart ({close})")


def _present(path: Path) -> str:
    return f"present ({path.stat().st_size} bytes)" if path.is_file() else "missing"


# -- main ----------------------------------------------------------------------------------------------------
def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """Set up the client and the two hosts, run the parts, end every process, print what held."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["fleet", "attach", "all"], default="all",
                        help="the fleet comparison, the cut-then-attached plan, or both (default)")
    parser.add_argument("--model", default="demo:inefficient", help="the model both parts plan (quick)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    parser.add_argument("--timeout-s", type=float, default=3600.0, help="the longest one planner command may run")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    # Also when started in the background by a shell (which ignores SIGINT there): Ctrl-C or kill -INT ends it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="planner-ssh-fleet-"))
    checks = Checks()
    client = None
    try:
        client = hosts_mod.SshClient(home=work / "client-home")
        two = start_host(client, TWO, work / "hosts", None)
        start_host(client, ONE, work / "hosts", {"PLANNER_CPUS": "1"})
        print(f"hosts on 127.0.0.1: {TWO} port {two.port}; {ONE} port {client.hosts[1].port} (PLANNER_CPUS=1); "
              f"client HOME {client.home}")
        print("remote caches: separate (PLANNER_CACHE_DIR unset, each host its own HOME/.cache/planner): each "
              "measures its own ceilings in its first plan (seconds, next to a plan's minutes)\n", flush=True)
        for name in ("fleet", "attach"):
            if args.part not in (name, "all"):
                continue
            print(f"== part {name} ({args.model})", flush=True)
            started = time.monotonic()
            (work / name).mkdir()
            try:
                if name == "fleet":
                    part_fleet(work / "fleet", client, args, checks)
                else:
                    part_attach(work / "attach", client, two, args, checks)
            except StepError as exc:
                checks.check(False, str(exc))
            print(f"  part {name}: {time.monotonic() - started:.0f} s wall\n", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: ending every process this started", file=sys.stderr)
        checks.failed.append("interrupted")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave servers behind
        for cli in Cli.running:
            with contextlib.suppress(Exception):
                cli.stop()
        for host in client.hosts if client is not None else []:
            with contextlib.suppress(Exception):
                host.close()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if checks.failed:
        print(f"FAILED {len(checks.failed)} check(s):\n" + "\n".join(f"  - {f}" for f in checks.failed))
        return 1
    print("every check held")
    return 0


if __name__ == "__main__":
    sys.exit(main())

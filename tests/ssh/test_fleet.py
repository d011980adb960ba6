"""`planner fleet` over hosts on 127.0.0.1: one comparison, a failing host as a row, the same plan on each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "planner.cli"]
SCRIPTED = f"{sys.executable} {Path(__file__).with_name('scripted_planner.py')}"


def _fleet_file(path: Path, *hosts: tuple[str, str, str]) -> Path:
    lines = []
    for host, label, planner in hosts:
        lines += ["[[hosts]]", f'host = "{host}"', f'label = "{label}"']
        lines += [f'planner = "{planner}"'] if planner else []
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fleet_compares_the_hosts_and_a_failing_host_is_a_row(make_ssh_host, unreachable_host, tmp_path):
    first = make_ssh_host("board-a", planner=SCRIPTED)
    make_ssh_host("board-b", planner=SCRIPTED)
    fleet = _fleet_file(tmp_path / "fleet.toml", ("board-a", "Board A", SCRIPTED), ("board-b", "Board B", SCRIPTED),
                        ("unreachable", "Gone", ""))
    run = subprocess.run([*CLI, "fleet", "--hosts", str(fleet), "--model", "demo:tiny", "--quick", "--out", "out"],
                         cwd=tmp_path, env=first.env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    report = (tmp_path / "out" / "fleet" / "report.md").read_text()
    for label in ("Board A", "Board B", "Gone"):
        assert label in report
    assert "not reachable" in report or "refused" in report or "unreachable" in report.lower()
    assert "../Board-A/report.md" in report or "../Board_A/report.md" in report or "report.md" in report
    for folder in (tmp_path / "out").iterdir():
        if folder.name != "fleet" and folder.is_dir():
            assert json.loads((folder / "results.json").read_text())["status"] == "ok"
    assert "Comparison out/fleet/report.md" in run.stdout
    assert "Gone:" in run.stdout


def test_fleet_status_lines_are_json_a_client_can_follow(make_ssh_host, tmp_path):
    host = make_ssh_host("board-a", planner=SCRIPTED)
    fleet = _fleet_file(tmp_path / "fleet.toml", ("board-a", "A", SCRIPTED))
    run = subprocess.run([*CLI, "fleet", "--hosts", str(fleet), "--model", "demo:tiny", "--quick", "--out", "out",
                          "--status-lines"], cwd=tmp_path, env=host.env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    messages = [json.loads(line) for line in run.stdout.splitlines()]
    phases = [m["phase"] for m in messages if m["type"] == "status"]
    assert phases[0] == "waiting" and "planning" in phases and phases[-1] == "done"
    assert messages[-1]["type"] == "done" and messages[-1]["rows"][0]["status"] == "ok"


def test_a_fleet_file_with_a_typo_points_at_its_line(ssh_client, tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[hosts]]\nhost = "a"\n\n[[hosts]]\nhots = "b"\n')
    run = subprocess.run([*CLI, "fleet", "--hosts", str(fleet), "--model", "demo:tiny"], cwd=tmp_path,
                         env=ssh_client.env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "line 5" in run.stderr and "host" in run.stderr


def test_a_host_limited_to_one_core_shows_as_such_in_the_comparison(make_ssh_host, tmp_path):
    """Two hosts on this machine, one confined to 1 core: each detects its own cores for real, and the comparison
    shows the difference (the recorded candidates stand in for the measurements; benchmarks/ssh_fleet.py measures
    the 1-core host slower for real)."""
    real = {"PLANNER_SCRIPTED_DETECT": "real"}
    two = make_ssh_host("two-cores", planner=SCRIPTED, env=real)
    make_ssh_host("one-core", planner=SCRIPTED, env={**real, "PLANNER_CPUS": "1"})
    fleet = _fleet_file(tmp_path / "fleet.toml", ("two-cores", "two-cores", SCRIPTED),
                        ("one-core", "one-core", SCRIPTED))
    run = subprocess.run([*CLI, "fleet", "--hosts", str(fleet), "--model", "demo:tiny", "--quick", "--out", "out"],
                         cwd=tmp_path, env=two.env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    one = json.loads((tmp_path / "out" / "one-core" / "results.json").read_text())
    both = json.loads((tmp_path / "out" / "two-cores" / "results.json").read_text())
    assert one["hardware"]["cpu"]["usable_cores"] == 1
    assert both["hardware"]["cpu"]["usable_cores"] == min(2, both["hardware"]["cpu"]["logical_cores"])
    report = (tmp_path / "out" / "fleet" / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("|") and "one-core" in line)
    assert "1 usable core (" in row


def test_ctrl_c_cancels_every_host_and_still_writes_the_comparison(make_ssh_host, tmp_path):
    import signal
    import time

    # Steps slow enough that neither plan can finish before the other reaches its candidates on a loaded machine.
    first = make_ssh_host("board-a", planner=SCRIPTED, env={"PLANNER_FAKE_STEP_S": "1.0"})
    make_ssh_host("board-b", planner=SCRIPTED, env={"PLANNER_FAKE_STEP_S": "1.0"})
    fleet = _fleet_file(tmp_path / "fleet.toml", ("board-a", "A", SCRIPTED), ("board-b", "B", SCRIPTED))
    run = subprocess.Popen([*CLI, "fleet", "--hosts", str(fleet), "--model", "demo:tiny", "--quick", "--out", "out",
                            "--status-lines"], cwd=tmp_path, env=first.env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    measuring: set[str] = set()  # the hosts whose plan is measuring candidates (cancelled there: interrupted)
    deadline = time.monotonic() + 90
    while len(measuring) < 2 and time.monotonic() < deadline:
        message = json.loads(run.stdout.readline())
        detail = message.get("detail", "")
        if message.get("phase") == "planning" and detail.startswith("measuring ") and "ceilings" not in detail:
            measuring.add(message["label"])
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    done = json.loads(out.splitlines()[-1])
    assert done["type"] == "done" and done["interrupted"] is True
    assert {row["status"] for row in done["rows"]} == {"interrupted"}, done
    report = (tmp_path / "out" / "fleet" / "report.md").read_text()
    assert "A" in report and "B" in report and "cancelled" in report

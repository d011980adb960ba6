"""A plan on a host reached over SSH (the test hosts of conftest.py, on 127.0.0.1), its files fetched back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# -- the CLI, with a scripted remote engine (what crosses the connection, not what a plan measures) ---------------
SCRIPTED = f"{sys.executable} {Path(__file__).with_name('scripted_planner.py')}"
CLI = [sys.executable, "-m", "planner.cli"]
RECORDED = Path(__file__).resolve().parents[1] / "tui" / "fixtures" / "results.json"  # what the scripted engine replays


def _scripted_host(make_ssh_host, step_s: float = 0.0, **kwargs):
    return make_ssh_host(planner=SCRIPTED, env={"PLANNER_FAKE_STEP_S": str(step_s)}, **kwargs)


def _start_plan(host, cwd: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "plan", "--host", host.alias, "--remote-planner", SCRIPTED, "--model",
                             "demo:tiny", "--target", "cpu", "--quick", *extra], cwd=cwd, env=host.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(stream, needle: str, timeout_s: float = 60.0) -> list[str]:
    """Lines of `stream` up to the first holding `needle` (bounded in time)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never came; saw:\n{''.join(seen)[-2000:]}")


def _candidates(results_path: Path) -> list[tuple[str, str]]:
    data = json.loads(results_path.read_text())
    return sorted((c["label"], c["status"]) for c in data["candidates"])


def test_cli_plan_on_a_host_prints_the_ranking_and_where_its_files_are(make_ssh_host, tmp_path):
    host = _scripted_host(make_ssh_host)
    plan = _start_plan(host, tmp_path)
    out, err = plan.communicate(timeout=120)
    assert plan.returncode == 0, err
    assert "[host1] connecting" in err and "[host1] checking" in err
    folder = next((tmp_path / "reports").glob("host1-*"))
    assert f"Fetched from host1 (run {folder.name.removeprefix('host1-')}) into reports/{folder.name}" in out
    assert json.loads((folder / "results.json").read_text())["status"] == "ok"
    assert (folder / "report.md").is_file()
    assert f"[host1] fetching: fetching into reports/{folder.name} over SFTP" in err
    assert json.loads((folder / "remote-run.json").read_text())["transfer"] == "sftp"


def test_a_cut_connection_leaves_the_plan_running_and_attach_fetches_it_whole(make_ssh_host, tmp_path):
    host = _scripted_host(make_ssh_host, step_s=0.4)
    (tmp_path / "cut").mkdir()
    plan = _start_plan(host, tmp_path / "cut")
    seen = _wait_for(plan.stderr, "planning: run ")
    run = seen[-1].split("planning: run ", 1)[1].strip()
    time.sleep(1.0)  # into the plan's held steps
    host.kill()  # the network drops: every connection at once
    _, err = plan.communicate(timeout=60)
    assert plan.returncode == 1
    assert "lost" in err and f"planner attach host1 {run}" in err
    assert not (tmp_path / "cut" / "reports" / f"host1-{run}" / "results.json").exists()

    host.restart()
    attach = subprocess.run([*CLI, "attach", "host1", run, "--remote-planner", SCRIPTED], cwd=tmp_path / "cut",
                            env=host.env, capture_output=True, text=True, timeout=180)
    assert attach.returncode == 0, attach.stderr
    assert "replaying from message" in attach.stderr  # what the cut client heard is not told again
    assert "timing the baseline" not in attach.stderr and "timing the baseline" in err
    cut_results = tmp_path / "cut" / "reports" / f"host1-{run}" / "results.json"
    assert json.loads(cut_results.read_text())["status"] == "ok"
    # A plan never cut replays the recorded run whole: the same candidates with the same statuses.
    assert _candidates(cut_results) == _candidates(RECORDED)


def test_ctrl_c_cancels_the_plan_on_the_host_and_fetches_what_it_measured(make_ssh_host, tmp_path):
    host = _scripted_host(make_ssh_host, step_s=0.5)
    plan = _start_plan(host, tmp_path)
    seen = _wait_for(plan.stderr, "planning: run ")
    run = seen[-1].split("planning: run ", 1)[1].strip()
    time.sleep(1.5)
    plan.send_signal(signal.SIGINT)
    out, err = plan.communicate(timeout=90)
    assert plan.returncode == 130, err
    assert "cancelling the plan on the host" in err and "interrupted" in err
    results = tmp_path / "reports" / f"host1-{run}" / "results.json"
    assert json.loads(results.read_text())["status"] == "interrupted"


def test_a_plan_over_a_real_openssh_server(sshd_host, tmp_path):
    """The same plan through OpenSSH's sshd (skipped, saying how to install it, where there is none)."""
    plan = _start_plan(sshd_host, tmp_path)
    out, err = plan.communicate(timeout=120)
    assert plan.returncode == 0, err
    folder = next((tmp_path / "reports").glob("openssh-*"))
    assert json.loads((folder / "results.json").read_text())["status"] == "ok"
    assert f"into reports/{folder.name}" in out


def test_attach_after_the_host_rebooted_says_so(make_ssh_host, tmp_path):
    """A reboot mid-run: the engine is gone and the host's boot id has changed. Attach says the host rebooted and
    fetches what the run left (here: the folder without a finished results.json)."""
    host = _scripted_host(make_ssh_host, step_s=0.5)
    plan = _start_plan(host, tmp_path)
    seen = _wait_for(plan.stderr, "planning: run ")
    run = seen[-1].split("planning: run ", 1)[1].strip()
    plan.kill()  # the laptop goes away mid-plan
    plan.communicate(timeout=30)
    run_dir = host.remote_home / ".cache" / "planner" / "runs" / run
    os.kill(int((run_dir / "engine.pid").read_text()), signal.SIGKILL)  # the reboot ends the engine...
    info = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**info, "boot_id": "the-boot-before"}))  # ...on an earlier boot
    attach = subprocess.run([*CLI, "attach", "host1", run, "--remote-planner", SCRIPTED], cwd=tmp_path,
                            env=host.env, capture_output=True, text=True, timeout=120)
    assert attach.returncode == 1
    assert "host1 rebooted" in attach.stderr and "its engine is gone" in attach.stderr
    assert (tmp_path / "reports" / f"host1-{run}" / "remote-run.json").is_file()

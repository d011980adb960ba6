"""What a user sees from `planner plan --host` when the host cannot plan: each fault is said plainly, with the fix,
and nothing is left half-written here. (The fault matrix of the SSH work; the connect, preflight and transfer
tests cover each fault in depth.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import asyncssh

from planner.engine.protocol import PROTOCOL_VERSION

CLI = [sys.executable, "-m", "planner.cli"]


def _plan(host, cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "plan", "--host", host.alias, "--model", "demo:tiny", "--quick", *extra], cwd=cwd,
                          env=host.env, capture_output=True, text=True, timeout=120)


def _nothing_written(cwd: Path) -> bool:
    return not (cwd / "reports").exists() or not any((cwd / "reports").iterdir())


def test_an_unreachable_host(unreachable_host, tmp_path):
    run = _plan(unreachable_host, tmp_path)
    assert run.returncode == 2
    assert "unreachable" in run.stderr and "fix:" in run.stderr
    assert _nothing_written(tmp_path)


def test_a_refused_login_suggests_keys(ssh_host, tmp_path):
    ssh_host.authorized_keys.write_text(asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode())
    run = _plan(ssh_host, tmp_path)
    assert run.returncode == 2
    assert "ssh-copy-id" in run.stderr
    assert _nothing_written(tmp_path)


def test_a_host_that_only_takes_a_password_is_refused_in_batch_mode(make_ssh_host, tmp_path):
    run = _plan(make_ssh_host(auth="password"), tmp_path)
    assert run.returncode == 2
    assert "password" in run.stderr and "ssh-copy-id" in run.stderr


def test_an_unknown_host_key_shows_its_fingerprint_and_the_flag_accepts_it(make_ssh_host, tmp_path):
    host = make_ssh_host(host_key="unknown", planner=f"{sys.executable} -m planner.cli")
    run = _plan(host, tmp_path)
    assert run.returncode == 2
    assert host.host_key.get_fingerprint() in run.stderr and "--accept-new-host-key" in run.stderr
    accepted = subprocess.run([*CLI, "attach", host.alias, "no-such-run", "--accept-new-host-key"], cwd=tmp_path,
                              env=host.env, capture_output=True, text=True, timeout=60)
    assert "host key" not in accepted.stderr.lower()  # it got past the key: the run is what is missing now
    assert "no-such-run" in accepted.stderr


def test_a_changed_host_key_is_refused_even_with_accept_new(make_ssh_host, tmp_path):
    host = make_ssh_host(host_key="changed")
    for extra in ((), ("--accept-new-host-key",)):
        run = _plan(host, tmp_path, *extra)
        assert run.returncode == 2
        assert "changed" in run.stderr and "ssh-keygen -R" in run.stderr


def test_a_missing_remote_planner_gives_the_install_command(ssh_host, tmp_path):
    run = _plan(ssh_host, tmp_path, "--remote-planner", "/opt/nowhere/planner")
    assert run.returncode == 2
    assert "not installed" in run.stderr and "pip install" in run.stderr and "--remote-planner" in run.stderr


def test_a_remote_planner_of_another_version_is_refused(ssh_host, tmp_path):
    other = tmp_path / "old-planner"
    other.write_text("#!/bin/sh\necho '" + json.dumps({"planner": "0.0.1", "protocol": PROTOCOL_VERSION + 1,
                                                        "arch": "x86_64", "python": "3.11", "glibc": "2.36",
                                                        "runtimes": {}, "cache_dir": "/tmp"}) + "'\n")
    other.chmod(0o755)
    run = _plan(ssh_host, tmp_path, "--remote-planner", str(other))
    assert run.returncode == 2
    assert f"protocol {PROTOCOL_VERSION + 1}" in run.stderr and f"protocol {PROTOCOL_VERSION}" in run.stderr


def test_attach_to_a_run_that_is_not_there(ssh_host, tmp_path):
    run = subprocess.run([*CLI, "attach", ssh_host.alias, "20990101-000000-abcdef"], cwd=tmp_path, env=ssh_host.env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "has no run '20990101-000000-abcdef'" in run.stderr and "--runs" in run.stderr


def test_a_model_folder_is_refused_before_connecting(unreachable_host, tmp_path):
    folder = tmp_path / "smollm"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    run = subprocess.run([*CLI, "plan", "--host", unreachable_host.alias, "--model", str(folder), "--quick"],
                         cwd=tmp_path, env=unreachable_host.env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "unreachable" not in run.stderr  # said before any connection
    assert "is a model folder (a decoder LLM's), which is not carried to a remote host yet" in run.stderr
    assert "copy the folder to the host and run `planner plan --model smollm` there" in run.stderr
    assert _nothing_written(tmp_path)

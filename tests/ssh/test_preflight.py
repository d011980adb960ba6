"""The preflight: what a host has, read from its planner; a missing or mismatched planner gets the install command."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import platform
import shlex
import shutil
import subprocess
from pathlib import Path

import asyncssh
import pytest

from planner import __version__
from planner.engine.protocol import PROTOCOL_VERSION
from planner.ssh.hosts import HostSpec
from planner.ssh.preflight import (
    AARCH64_TORCH_PINS,
    PREFLIGHT_TIMEOUT_S,
    HostBasics,
    RemotePlannerMismatchError,
    RemotePlannerMissingError,
    RemotePreflightError,
    install_command,
    parse_facts,
    parse_probe,
    preflight,
    remote_command,
)

FACTS = {"planner": __version__, "protocol": PROTOCOL_VERSION, "arch": "aarch64", "python": "3.11.2",
         "executable": "/home/pi/.planner/bin/python", "glibc": "2.36",
         "runtimes": {"torch": "2.9.1", "onnxruntime": "1.22.0", "openvino": None, "tensorrt": None, "nncf": None},
         "runtime_problems": {"openvino": "not installed", "tensorrt": "not installed",
                              "nncf": "ImportError: cannot import name 'x'"},
         "cache_dir": "/home/pi/.cache/planner", "cores": 4}


# Reading the remote's answer


def test_facts_are_read_past_what_a_login_script_printed() -> None:
    facts = parse_facts("Welcome to the board!\n" + json.dumps(FACTS) + "\n", "pi5")
    assert facts.arch == "aarch64" and facts.python == "3.11.2" and facts.glibc == "2.36" and facts.cores == 4
    assert facts.runtimes["torch"] == "2.9.1" and facts.runtimes["openvino"] is None
    assert facts.runtime_problems["nncf"].startswith("ImportError")
    assert facts.cache_dir == "/home/pi/.cache/planner"


def test_output_that_is_not_json_shows_its_first_lines() -> None:
    with pytest.raises(RemotePreflightError) as caught:
        parse_facts("usage: planner [-h]\nplanner: error: something else\n", "pi5")
    assert "did not answer the preflight" in caught.value.problem
    assert "    usage: planner [-h]\n    planner: error: something else" in caught.value.problem
    assert "--remote-planner" in caught.value.fix


def test_another_protocol_names_both_versions_and_installs_this_clients_version() -> None:
    with pytest.raises(RemotePlannerMismatchError) as caught:
        parse_facts(json.dumps({**FACTS, "planner": "0.0.9", "protocol": PROTOCOL_VERSION + 1}), "pi5")
    problem = caught.value.problem
    assert f"planner 0.0.9, which speaks engine protocol {PROTOCOL_VERSION + 1}" in problem
    assert f"this client is planner {__version__} and speaks engine protocol {PROTOCOL_VERSION}" in problem
    assert f"planner-{__version__}-py3-none-any.whl" in caught.value.fix


def test_a_relative_cache_folder_is_refused() -> None:
    with pytest.raises(RemotePreflightError, match="not absolute"):
        parse_facts(json.dumps({**FACTS, "cache_dir": ".cache/planner"}), "pi5")


def test_a_missing_fact_is_an_error_not_a_crash() -> None:
    with pytest.raises(RemotePreflightError, match="without a usable 'arch'"):
        parse_facts(json.dumps({k: v for k, v in FACTS.items() if k != "arch"}), "pi5")


# The probe of a host without the planner


def test_probe_reads_arch_python_glibc_and_the_nvidia_driver() -> None:
    text = "arch=aarch64\npython=Python 3.11.2\nlibc=ldd (Debian GLIBC 2.36-9+deb12u4) 2.36\nnvidia=no\n"
    assert parse_probe(text) == HostBasics(arch="aarch64", python="3.11.2", glibc="2.36", nvidia=False)
    assert parse_probe(text.replace("nvidia=no", "nvidia=yes")).nvidia is True
    assert parse_probe(text.replace("nvidia=no\n", "")).nvidia is None  # not said: not known


def test_probe_of_a_bare_host_leaves_unknowns_empty() -> None:
    text = "arch=x86_64\npython=sh: 1: python3: not found\nlibc=musl libc (x86_64)\n"
    assert parse_probe(text) == HostBasics(arch="x86_64", python=None, glibc=None)


# The install command


def _remote_part(command: str) -> list[str]:
    """The commands the install runs on the host (the quoted argument of its `ssh HOST '...'` line)."""
    line = next(line for line in command.splitlines() if line.strip().startswith("ssh "))
    return shlex.split(line)[2].split(" && ")


def test_aarch64_install_pins_torch_first_and_installs_this_clients_version(tmp_path) -> None:
    command = install_command("pi@board", HostBasics("aarch64", "3.11.2", "2.36"), source=tmp_path)
    remote = _remote_part(command)
    assert remote[0] == "python3 -m venv ~/.planner"
    torch_at = remote.index(f"~/.planner/bin/pip install {AARCH64_TORCH_PINS}")
    assert remote.index(f"~/.planner/bin/pip install ~/planner-{__version__}-py3-none-any.whl") > torch_at
    assert f"pip wheel --no-deps -w /tmp/planner-wheel {tmp_path}" in command
    assert f"scp /tmp/planner-wheel/planner-{__version__}-py3-none-any.whl pi@board:" in command
    assert "--remote-planner ~/.planner/bin/planner" in command and "--remote-planner PATH" in command
    assert "note:" not in command


def test_the_nvml_extra_is_asked_for_only_where_an_nvidia_driver_is(tmp_path) -> None:
    """A Raspberry Pi needs no NVML; a Jetson or a GPU server gets the extra (its brackets escaped for any shell)."""
    wheel = f"~/.planner/bin/pip install ~/planner-{__version__}-py3-none-any.whl"
    for arch in ("aarch64", "x86_64"):
        without = install_command("pi", HostBasics(arch, "3.11.2", "2.36", nvidia=False), source=tmp_path)
        assert wheel in _remote_part(without) and "nvidia" not in without
        with_gpu = install_command("jetson", HostBasics(arch, "3.11.2", "2.36", nvidia=True), source=tmp_path)
        assert f"{wheel}\\[nvidia\\]" in _remote_part(with_gpu)
        assert shlex.split(f"pip install ~/planner-{__version__}-py3-none-any.whl\\[nvidia\\]")[-1].endswith(
            ".whl[nvidia]")  # what the host's shell hands pip
    unknown = install_command("box", HostBasics("x86_64", "3.12.3", "2.39"), source=tmp_path)
    assert wheel in _remote_part(unknown)
    assert unknown.splitlines()[-1] == (f"(where box has an NVIDIA GPU, install planner-{__version__}-py3-none-any"
                                        ".whl[nvidia] instead: NVML reads its clocks and energy)")


def test_x86_64_install_takes_the_projects_own_requirements(tmp_path) -> None:
    remote = _remote_part(install_command("box", HostBasics("x86_64", "3.12.3", "2.39"), source=tmp_path))
    assert not any("torch" in step for step in remote)
    assert f"~/.planner/bin/pip install ~/planner-{__version__}-py3-none-any.whl" in remote


def test_an_old_python_and_glibc_are_said_first(tmp_path) -> None:
    command = install_command("old", HostBasics("aarch64", "3.9.2", "2.27"), source=tmp_path)
    first, second = command.splitlines()[:2]
    assert first.startswith("note: old's python3 is 3.9.2; the planner needs 3.11 or newer")
    assert second.startswith("note: old has glibc 2.27; torch's wheels need glibc 2.28 or newer")
    assert _remote_part(command)[0] == "python3.11 -m venv ~/.planner"


def test_remote_command_quotes_each_word_and_keeps_the_home_folder() -> None:
    spec = HostSpec.parse("pi5", planner="~/.planner/bin/planner")
    assert remote_command(spec, "preflight", "--json") == "~/.planner/bin/planner preflight --json"
    spec = HostSpec.parse("pi5", planner="'/opt/my planner/bin/planner'")
    assert remote_command(spec, "preflight") == "'/opt/my planner/bin/planner' preflight"


# Over SSH, against helper A's test hosts (tests/ssh/conftest.py)


def _connect(host) -> contextlib.AbstractAsyncContextManager[asyncssh.SSHClientConnection]:
    """A connection to a test host, as its ssh_config alias names it."""
    options = host.ssh_options
    return asyncssh.connect(host.alias, config=[str(p) for p in options.config_paths],
                            known_hosts=str(options.known_hosts), agent_path=None, connect_timeout=20)


def _preflight(host):
    async def go():
        async with _connect(host) as conn:
            return await preflight(conn, host.spec)
    return asyncio.run(asyncio.wait_for(go(), PREFLIGHT_TIMEOUT_S + 30))


def _script(tmp_path: Path, body: str) -> str:
    """A stand-in for the remote planner: a shell script that answers as `body` says."""
    path = tmp_path / "fake-planner"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_host_with_the_planner_reports_its_facts(make_ssh_host) -> None:
    host = make_ssh_host(env={"PLANNER_CPUS": "1"})
    facts = _preflight(host)
    assert facts.planner == __version__ and facts.protocol == PROTOCOL_VERSION
    assert facts.arch == platform.machine() and facts.python == platform.python_version()
    assert facts.cache_dir == str(host.remote_home / ".cache" / "planner")  # the remote user's own cache
    assert facts.runtimes["onnxruntime"] == importlib.metadata.version("onnxruntime")
    assert facts.cores >= 1


def test_a_missing_planner_gets_the_install_command_for_that_host(make_ssh_host) -> None:
    host = make_ssh_host(planner="no-such-planner")
    with pytest.raises(RemotePlannerMissingError) as caught:
        _preflight(host)
    problem, fix = caught.value.problem, caught.value.fix
    assert problem.startswith(f"The planner is not installed on {host.alias} (or not on its login PATH)")
    # The probe found the host's own architecture, Python (the venv's python3 is first on its PATH) and glibc.
    remote_python = subprocess.run(["python3", "-V"], capture_output=True, text=True,
                                   env=host.remote_env).stdout.split()[1]
    assert f"it is an {platform.machine()} machine with Python {remote_python}" in problem
    assert f"planner-{__version__}-py3-none-any.whl" in fix and "python3 -m venv ~/.planner" in fix
    assert "--remote-planner PATH" in fix
    # The probe looked for an NVIDIA driver too: the NVML extra is asked for exactly where one is.
    nvidia = Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi", path=host.remote_env["PATH"])
    assert ("whl\\[nvidia\\]" in fix) == bool(nvidia) and f"where {host.alias} has an NVIDIA GPU" not in fix


def test_a_planner_of_another_protocol_is_refused_with_both_versions(make_ssh_host, tmp_path) -> None:
    answer = json.dumps({**FACTS, "planner": "7.0.0", "protocol": PROTOCOL_VERSION + 5})
    host = make_ssh_host(planner=_script(tmp_path, f"echo '{answer}'\n"))
    with pytest.raises(RemotePlannerMismatchError) as caught:
        _preflight(host)
    assert (f"{host.alias} has planner 7.0.0, which speaks engine protocol {PROTOCOL_VERSION + 5}; this client is "
            f"planner {__version__} and speaks engine protocol {PROTOCOL_VERSION}") == caught.value.problem
    assert f"planner-{__version__}-py3-none-any.whl" in caught.value.fix


def test_a_planner_older_than_the_preflight_is_a_mismatch(make_ssh_host, tmp_path) -> None:
    host = make_ssh_host(planner=_script(
        tmp_path, "echo \"planner: error: argument COMMAND: invalid choice: 'preflight' (choose from 'plan')\" >&2\n"
                  "exit 2\n"))
    with pytest.raises(RemotePlannerMismatchError, match="an engine protocol older than the preflight"):
        _preflight(host)


def test_a_program_that_is_not_the_planner_shows_what_it_said(make_ssh_host, tmp_path) -> None:
    host = make_ssh_host(planner=_script(tmp_path, "echo 'Usage: planner [day|week]'\necho 'a calendar tool'\n"))
    with pytest.raises(RemotePreflightError) as caught:
        _preflight(host)
    assert "    Usage: planner [day|week]\n    a calendar tool" in caught.value.problem


def test_a_failing_planner_shows_its_error(make_ssh_host, tmp_path) -> None:
    host = make_ssh_host(planner=_script(tmp_path, "echo 'ModuleNotFoundError: No module named numpy' >&2\nexit 1\n"))
    with pytest.raises(RemotePreflightError) as caught:
        _preflight(host)
    assert "failed with exit status 1" in caught.value.problem
    assert "ModuleNotFoundError: No module named numpy" in caught.value.problem


def test_real_openssh_missing_planner(sshd_host) -> None:
    """A real sshd runs the command through the user's login shell, which answers 127 for a missing command."""
    sshd_host.planner = "no-such-planner"
    with pytest.raises(RemotePlannerMissingError, match="not installed on openssh"):
        _preflight(sshd_host)


def test_the_install_command_logs_in_as_the_host_was_written(tmp_path) -> None:
    spec = HostSpec.parse("pi@10.0.0.7:2222", label="Raspberry Pi 5")
    command = install_command(spec, HostBasics("aarch64", "3.11.2", "2.36"), source=tmp_path)
    assert f"scp -P 2222 /tmp/planner-wheel/planner-{__version__}-py3-none-any.whl pi@10.0.0.7:" in command
    assert "  ssh -p 2222 pi@10.0.0.7 'python3 -m venv" in command
    assert "install it on Raspberry Pi 5:" in command


def test_bytes_that_are_not_text_are_shown_not_crashed_on(make_ssh_host, tmp_path) -> None:
    host = make_ssh_host(planner=_script(tmp_path, "printf 'ELF\\377\\376 binary\\n'\n"))
    with pytest.raises(RemotePreflightError, match="ELF\ufffd\ufffd binary"):
        _preflight(host)


def test_another_protocols_install_command_fits_the_facts_that_planner_reported() -> None:
    """The other planner's own arch and Python shape the command: no 'no python3' note, torch pinned on aarch64."""
    with pytest.raises(RemotePlannerMismatchError) as caught:
        parse_facts(json.dumps({**FACTS, "planner": "0.0.9", "protocol": PROTOCOL_VERSION + 1}), "pi5")
    assert "no python3" not in caught.value.fix
    assert "torch==2.9.1 torchvision==0.24.1" in caught.value.fix

"""The preflight: what a host has, read from its planner; a missing or mismatched planner gets the install command."""

from __future__ import annotations

import json
import shlex

import pytest

from planner import __version__
from planner.engine.protocol import PROTOCOL_VERSION
from planner.ssh.hosts import HostSpec
from planner.ssh.preflight import (
    AARCH64_TORCH_PINS,
    HostBasics,
    RemotePlannerMismatchError,
    RemotePreflightError,
    install_command,
    parse_facts,
    parse_probe,
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


def test_probe_reads_arch_python_and_glibc() -> None:
    text = "arch=aarch64\npython=Python 3.11.2\nlibc=ldd (Debian GLIBC 2.36-9+deb12u4) 2.36\n"
    assert parse_probe(text) == HostBasics(arch="aarch64", python="3.11.2", glibc="2.36")


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

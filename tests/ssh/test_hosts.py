"""A host as the user writes it: ssh's forms are read, a typo is refused in words, labels become folder names."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import PlannerError
from planner.ssh.hosts import HostSpec, SshOptions


@pytest.mark.parametrize(
    ("text", "host", "user", "port"),
    [
        ("pi5", "pi5", None, None),
        ("board.local", "board.local", None, None),
        ("pi@192.168.1.20", "192.168.1.20", "pi", None),
        ("pi@board:2222", "board", "pi", 2222),
        ("board:22", "board", None, 22),
        ("pi@[fe80::1]:2222", "fe80::1", "pi", 2222),
        ("fe80::1", "fe80::1", None, None),
        ("  pi5  ", "pi5", None, None),
    ],
)
def test_parse_reads_what_ssh_takes(text, host, user, port):
    spec = HostSpec.parse(text)
    assert (spec.host, spec.user, spec.port) == (host, user, port)
    assert spec.label == text.strip()
    assert spec.planner == "planner"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "No host given"),
        ("pi@board:99999", "port '99999'"),
        ("pi@board:ssh", "port 'ssh'"),
        ("@board", "no usable user name"),
        ("pi@my board", "not a host name"),
        ("pi@[fe80::1", "never closes"),
    ],
)
def test_parse_refuses_a_mistyped_host_and_says_the_forms(text, words):
    with pytest.raises(PlannerError) as err:
        HostSpec.parse(text)
    assert words in str(err.value)
    assert "user@host[:port]" in err.value.fix


def test_label_and_planner_are_kept():
    spec = HostSpec.parse("pi@board", label="Raspberry Pi 5", planner="/opt/planner/bin/planner")
    assert spec.label == "Raspberry Pi 5"
    assert spec.planner == "/opt/planner/bin/planner"
    assert str(spec) == "Raspberry Pi 5"


def test_direct_construction_labels_with_ssh_words():
    assert HostSpec("board", user="pi", port=2222).label == "pi@board:2222"
    assert HostSpec("fe80::1", port=22).target == "[fe80::1]:22"


@pytest.mark.parametrize(
    ("label", "folder"),
    [
        ("Raspberry Pi 5", "Raspberry_Pi_5"),
        ("pi@board:2222", "pi_board_2222"),
        ("../../etc", "etc"),
        ("-rf", "rf"),
        ("..", "host"),
        (".hidden", "hidden"),
        ("jetson-orin.nano", "jetson-orin.nano"),
    ],
)
def test_folder_name_is_one_safe_folder(label, folder):
    name = HostSpec.parse("board", label=label).folder_name
    assert name == folder
    assert "/" not in name and not name.startswith(".")


def test_known_hosts_defaults_to_the_users_file(tmp_path):
    assert SshOptions().known_hosts_path == Path.home() / ".ssh" / "known_hosts"
    assert SshOptions(known_hosts=tmp_path / "kh").known_hosts_path == tmp_path / "kh"

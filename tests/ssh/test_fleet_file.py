"""The fleet file: hosts are read in order with their labels and planner commands, and every mistake is refused
with the file, the line it is on and what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import PlannerError
from planner.ssh.fleet_file import EXAMPLE, FleetFileError, read_fleet_file


def _fleet(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def _refused(tmp_path: Path, text: str) -> FleetFileError:
    path = _fleet(tmp_path, text)
    with pytest.raises(FleetFileError) as caught:
        read_fleet_file(path)
    assert isinstance(caught.value, PlannerError)  # the CLI prints it as problem and fix, no traceback
    assert str(path) in caught.value.problem
    assert caught.value.fix
    return caught.value


def test_hosts_are_read_in_order_with_their_labels_and_planner_commands(tmp_path):
    path = _fleet(tmp_path, """\
# the boards on the bench
[[hosts]]
host = "pi5"                         # an ssh_config alias
label = "Raspberry Pi 5"
planner = "/opt/planner/bin/planner"

[[hosts]]
host = "ubuntu@192.168.1.30:2222"
""")
    first, second = read_fleet_file(path)
    assert (first.spec.host, first.spec.user, first.spec.port) == ("pi5", None, None)
    assert first.spec.label == "Raspberry Pi 5"
    assert first.spec.planner == "/opt/planner/bin/planner"
    assert first.line == 2
    assert (second.spec.host, second.spec.user, second.spec.port) == ("192.168.1.30", "ubuntu", 2222)
    assert second.spec.label == "ubuntu@192.168.1.30:2222"  # the label defaults to the host as written
    assert second.spec.planner == "planner"
    assert second.line == 7


def test_the_example_shown_in_errors_is_itself_a_valid_fleet_file(tmp_path):
    hosts = read_fleet_file(_fleet(tmp_path, EXAMPLE))
    assert [h.spec.label for h in hosts] == ["Raspberry Pi 5", "ubuntu@192.168.1.30:2222"]


def test_an_inline_list_of_hosts_is_read_too(tmp_path):
    hosts = read_fleet_file(_fleet(tmp_path, 'hosts = [{host = "a"}, {host = "b", label = "B"}]\n'))
    assert [(h.spec.host, h.spec.label, h.line) for h in hosts] == [("a", "a", 1), ("b", "B", 1)]


def test_a_toml_syntax_error_points_at_its_line(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi5"\nlabel = \n')
    assert "line 3" in err.problem and "not valid TOML" in err.problem
    assert "double quotes" in err.fix and "[[hosts]]" in err.fix


def test_an_unclosed_quote_points_at_its_line_and_says_to_close_it(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi5"\n\n[[hosts]]\nhost = "jetson\n')
    assert "line 5" in err.problem
    assert "closing double quote" in err.fix


def test_a_single_bracket_table_header_is_explained(tmp_path):
    err = _refused(tmp_path, '[[hosts]\nhost = "pi5"\n')
    assert "line 1" in err.problem
    assert "two brackets" in err.fix


def test_a_misspelt_key_is_refused_on_its_line_with_the_key_it_is_closest_to(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi5"\n\n[[hosts]]\n# the Jetson\nhots = "jetson"\n')
    assert "line 6" in err.problem and "`hots`" in err.problem
    assert "did you mean `host`?" in err.problem
    assert "write `host`" in err.fix and 'host = "' in err.fix


def test_a_key_nothing_resembles_is_refused_with_the_keys_a_table_takes(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi5"\ncolour = "red"\n')
    assert "line 3" in err.problem and "did you mean" not in err.problem
    assert "remove it" in err.fix and "`label`" in err.fix and "`planner`" in err.fix


def test_a_misspelt_table_name_is_refused_with_the_right_one(tmp_path):
    err = _refused(tmp_path, '\n[[host]]\nhost = "pi5"\n')
    assert "line 2" in err.problem and "did you mean `hosts`?" in err.problem
    assert "[[hosts]]" in err.fix


def test_a_table_without_host_is_refused_on_the_line_it_starts(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi5"\n\n[[hosts]]\nlabel = "Jetson"\n')
    assert "line 4" in err.problem and "no `host`" in err.problem
    assert 'host = "' in err.fix


@pytest.mark.parametrize(("text", "line", "said"), [
    ('[[hosts]]\nhost = "pi5"\n[[hosts]]\nhost = 5\n', 4, "a number (5)"),
    ('[[hosts]]\nhost = "pi5"\nlabel = true\n', 3, "true/false"),
    ('[[hosts]]\nhost = "pi5"\n\nplanner = ["planner"]\n', 4, "a list"),
])
def test_a_value_of_the_wrong_type_is_refused_on_its_line(tmp_path, text, line, said):
    err = _refused(tmp_path, text)
    assert f"line {line}" in err.problem and said in err.problem and "not text" in err.problem
    assert "double quotes" in err.fix


def test_an_empty_label_is_refused(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi5"\nlabel = "  "\n')
    assert "line 3" in err.problem and "`label` is empty" in err.problem
    assert "remove the line" in err.fix


def test_a_host_ssh_cannot_take_is_refused_on_its_line(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nlabel = "Pi"\nhost = "pi 5"\n')
    assert "line 3" in err.problem and "pi 5" in err.problem
    assert "user@host" in err.fix


def test_the_same_host_twice_is_refused_naming_both_lines(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "pi@board:2222"\nlabel = "one"\n\n'
                             '[[hosts]]\nhost = "jetson"\n\n[[hosts]]\nhost = "pi@board:2222"\nlabel = "two"\n')
    assert "lines 1 and 8" in err.problem and "pi@board:2222" in err.problem
    assert "remove one" in err.fix


def test_the_same_name_on_another_port_or_user_is_another_host(tmp_path):
    hosts = read_fleet_file(_fleet(tmp_path, '[[hosts]]\nhost = "board"\n[[hosts]]\nhost = "board:2222"\n'
                                             '[[hosts]]\nhost = "pi@board"\n'))
    assert len(hosts) == 3


def test_the_same_label_twice_is_refused_naming_both_lines(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "a"\nlabel = "Pi"\n[[hosts]]\nhost = "b"\nlabel = "Pi"\n')
    assert "lines 1 and 4" in err.problem and "'Pi'" in err.problem
    assert "its own label" in err.fix


@pytest.mark.parametrize("labels", [("Pi 5", "Pi_5"), ("Jetson", "jetson")])
def test_labels_that_would_share_a_results_folder_are_refused(tmp_path, labels):
    first, second = labels
    err = _refused(tmp_path, f'[[hosts]]\nhost = "a"\nlabel = "{first}"\n[[hosts]]\nhost = "b"\nlabel = "{second}"\n')
    assert "lines 1 and 4" in err.problem and "same folder name" in err.problem


def test_a_label_that_would_write_into_the_comparison_folder_is_refused(tmp_path):
    err = _refused(tmp_path, '[[hosts]]\nhost = "a"\nlabel = "Fleet"\n')
    assert "line 3" in err.problem and "fleet/" in err.problem
    assert "label = " in err.fix


@pytest.mark.parametrize("text", ["", "# nothing yet\n\n", "hosts = []\n"])
def test_a_file_with_no_hosts_is_refused_with_an_example(tmp_path, text):
    err = _refused(tmp_path, text)
    assert "lists no hosts" in err.problem
    assert "[[hosts]]" in err.fix and "planner = " in err.fix


def test_hosts_as_a_single_table_is_refused_with_the_double_bracket_form(tmp_path):
    err = _refused(tmp_path, '\n[hosts]\nhost = "pi5"\n')
    assert "line 2" in err.problem and "one table" in err.problem
    assert "two brackets" in err.fix and "label = " in err.fix


def test_hosts_as_a_list_of_names_is_refused_with_the_table_form(tmp_path):
    err = _refused(tmp_path, 'hosts = ["pi5", "jetson"]\n')
    assert "line 1" in err.problem and "text ('pi5')" in err.problem
    assert "[[hosts]]" in err.fix


def test_a_missing_file_says_so(tmp_path):
    path = tmp_path / "fleet.toml"
    with pytest.raises(FleetFileError) as caught:
        read_fleet_file(path)
    assert caught.value.problem == f"no fleet file at {path}"
    assert "[[hosts]]" in caught.value.fix


def test_a_folder_is_not_a_fleet_file(tmp_path):
    with pytest.raises(FleetFileError, match="is a folder"):
        read_fleet_file(tmp_path)


def test_a_file_that_is_not_utf8_is_refused_on_the_line_of_the_bad_byte(tmp_path):
    path = tmp_path / "fleet.toml"
    path.write_bytes(b'[[hosts]]\nhost = "pi5"\nlabel = "caf\xe9"\n')
    with pytest.raises(FleetFileError) as caught:
        read_fleet_file(path)
    assert "line 3" in caught.value.problem and "UTF-8" in caught.value.fix

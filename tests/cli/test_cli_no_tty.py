"""`planner` without a terminal: the message lists headless commands a user can copy."""

import argparse

from planner.cli.commands import cmd_tui


def test_no_tty_message_gives_one_command_per_line(monkeypatch, capsys):
    """Each example is a whole command on its own line, not something that reads as a pipeline."""
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    args = argparse.Namespace(model=None, input_shape=None, inputs=None, trust_code=False)
    assert cmd_tui(args) == 2
    err = capsys.readouterr().err
    commands = [line.strip() for line in err.splitlines() if line.startswith("  ")]
    assert "planner detect" in commands and "planner --help" in commands
    assert all(c.startswith("planner ") and "|" not in c for c in commands)

"""The atomic writer leaves files with the permissions a plain open() would give them."""

import os
import stat

import pytest

from planner.io import current_umask, write_json_atomic, write_text_atomic


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_atomic_writes_honour_the_umask_like_open(tmp_path, mask):
    """report.md-like text, results.json-like JSON and a plain open() end with the same mode."""
    old = os.umask(mask)
    try:
        write_text_atomic(tmp_path / "report.md", "# report\n")
        write_json_atomic(tmp_path / "results.json", {"a": 1})
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(old)
    expected = _mode(tmp_path / "plain.txt")
    assert expected == 0o666 & ~mask
    assert _mode(tmp_path / "report.md") == expected
    assert _mode(tmp_path / "results.json") == expected
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_current_umask_reads_without_changing_it():
    """Reading the umask leaves it as it was."""
    old = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        assert current_umask() == 0o027
    finally:
        os.umask(old)

"""Fixtures for the TUI tests (the helpers live in tui_support.py)."""

from __future__ import annotations

import pytest
from tui_support import RecordedSession


def pytest_collection_modifyitems(config, items):
    """Mark the TUI tests that measure nothing (`recorded_tui`), so `make test` can run them three at a time; those
    that start a real engine or measuring workers are marked `worker` and stay one at a time."""
    here = str(config.rootpath / "tests" / "tui")
    for item in items:
        if str(item.path).startswith(here) and "worker" not in item.keywords:
            item.add_marker(pytest.mark.recorded_tui)


@pytest.fixture
def recorded_session() -> RecordedSession:
    """A session that replays the recorded demo:tiny run."""
    return RecordedSession()

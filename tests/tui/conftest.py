"""Fixtures for the TUI tests (the helpers live in tui_support.py)."""

from __future__ import annotations

import pytest
from tui_support import RecordedSession


@pytest.fixture
def recorded_session() -> RecordedSession:
    """A session that replays the recorded demo:tiny run."""
    return RecordedSession()

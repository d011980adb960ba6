"""Fixtures for the engine tests: a real `planner engine` process, ended (with any workers it left) afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_support import RecordingClient, descendants, end_processes, spawn


@pytest.fixture
def engine(tmp_path) -> Iterator[RecordingClient]:
    """A fresh engine process with its log in tmp_path/engine.log; shut down after the test, whatever happened."""
    client = spawn(tmp_path)
    assert client.process is not None
    pid = client.process.pid
    leftovers = descendants(pid)
    try:
        yield client
    finally:
        leftovers += descendants(pid)
        client.close()
        end_processes(leftovers)

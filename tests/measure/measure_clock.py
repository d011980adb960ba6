"""A fake nanosecond clock for the timing-loop and sweep tests (the `clock` fixture installs one)."""

from __future__ import annotations


class FakeClock:
    """A deterministic nanosecond clock that only moves when the fake work says so."""

    def __init__(self, log: list[str] | None = None) -> None:
        self.now = 0
        self.log = log

    def __call__(self) -> int:
        if self.log is not None:
            self.log.append("clock")
        return self.now

    def advance_ms(self, ms: float) -> None:
        """Move time forward by ``ms`` milliseconds."""
        self.now += int(ms * 1e6)

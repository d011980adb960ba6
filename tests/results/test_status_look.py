"""Every status looks the same wherever it is shown: one short word, one style, one colour."""

from __future__ import annotations

from planner.results import Status
from planner.results.status_look import look


def test_every_status_has_a_short_word_a_style_and_a_colour() -> None:
    for status in Status:
        seen = look(status)
        assert 0 < len(seen.short) <= 4 and seen.style and seen.colour.startswith("#"), status
    # The short words tell the statuses apart.
    assert len({look(s).short for s in Status}) == len(Status)


def test_a_status_this_version_does_not_know_is_shown_plainly() -> None:
    seen = look("postponed")
    assert (seen.short, seen.style, seen.colour) == ("post", "", "#555555")

"""`fleet --status-lines` messages: typed on both sides, one JSON object per line, versioned."""

from __future__ import annotations

import json

from planner.ssh.fleet_lines import LINES_VERSION, DoneLine, HostEnd, StatusLine, decode, encode


def test_a_status_and_a_done_line_come_back_as_they_were_sent() -> None:
    status = StatusLine(label="pi5", host="pi@10.0.0.5", phase="measuring", detail="3/12 candidates")
    done = DoneLine(report="/tmp/fleet/comparison.md", interrupted=False,
                    rows=(HostEnd(label="pi5", host="pi@10.0.0.5", status="ok", report="/tmp/fleet/pi5/report.md"),
                          HostEnd(label="nuc", host="nuc", failure="connection refused")))
    for message in (status, done):
        line = encode(message)
        assert "\n" not in line and json.loads(line)["version"] == LINES_VERSION
        assert decode(line) == message
    assert done.planned() and not DoneLine(rows=(HostEnd(label="nuc", failure="refused"),)).planned()


def test_other_lines_are_not_messages() -> None:
    # A library's stray print, a JSON value that is not an object, an unknown type, a malformed status.
    for line in ("Downloading weights…", "[1, 2]", '{"type": "progress"}', '{"type": "status", "label": 5}'):
        assert decode(line) is None, line
    # A line from before `version` was written still reads.
    assert decode('{"type":"status","label":"a","host":"h","phase":"done","detail":""}') == StatusLine(
        label="a", host="h", phase="done")

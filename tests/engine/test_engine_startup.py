"""`planner engine` pauses garbage collection until its first model load has ended (planner.engine.startup).

A real engine process loads a model file whose factory writes down, on each load, whether the
collector is on in that process: off during the start-up's load, on again after it, and on from the
start when the first long command is not a load (a plan must not run without collection).
"""

from __future__ import annotations

import time

from engine_support import spawn

from planner.engine import protocol as wire

GC_PROBE_MODEL = '''
import gc

import torch


def make():
    with open({record!r}, "a") as record:
        record.write("on\\n" if gc.isenabled() else "off\\n")
    return torch.nn.Sequential(torch.nn.Linear(4, 2))


INPUT_SHAPE = (1, 4)
'''


def _probe(tmp_path):
    """The probe model's source text, and the file its loads write to."""
    record = tmp_path / "gc.txt"
    model = tmp_path / "gc_probe.py"
    model.write_text(GC_PROBE_MODEL.format(record=str(record)))
    return f"{model}:make", record


def _load(engine, source):
    engine.request(wire.Load(source=source, trust_code=True))


def test_collection_waits_for_the_first_load_and_resumes_after_it(tmp_path):
    source, record = _probe(tmp_path)
    engine = spawn(tmp_path)
    try:
        _load(engine, source)
        assert record.read_text().splitlines() == ["off"]
        # Collection resumes just after the first load's answer has gone out: a load a moment later sees it on.
        deadline = time.monotonic() + 30
        while record.read_text().splitlines()[-1] != "on" and time.monotonic() < deadline:
            time.sleep(0.1)
            _load(engine, source)
        assert record.read_text().splitlines()[-1] == "on"
    finally:
        engine.close()
    assert engine.bye is not None and engine.process is not None and engine.process.returncode == 0


def test_another_long_command_first_resumes_collection_as_it_starts(tmp_path):
    source, record = _probe(tmp_path)
    engine = spawn(tmp_path)
    try:
        # `verify` is a long command (it would check hand-over packages; this session wrote none).
        assert engine.request(wire.Verify())["verdicts"] == []
        _load(engine, source)
        assert record.read_text().splitlines() == ["on"]
    finally:
        engine.close()

"""`planner preflight`: what a machine offers a planner driven over SSH, as a client reads it (the remote half)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from planner import __version__
from planner.cli.preflight import runtime_versions
from planner.engine.protocol import PROTOCOL_VERSION

PLANNER = Path(sys.executable).parent / "planner"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PLANNER), "preflight", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})})


def _fake_modules(folder: Path, bodies: dict[str, str]) -> Path:
    """Importable packages named `name` whose __init__ is `body`: runtimes that work, fail or crash on import."""
    for name, body in bodies.items():
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(body)
    return folder


def test_json_is_one_object_with_this_machines_facts(tmp_path) -> None:
    done = _run("--json", env={"PLANNER_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1  # a client reads the last line
    facts = json.loads(lines[0])
    assert facts["planner"] == __version__ and facts["protocol"] == PROTOCOL_VERSION
    assert facts["arch"] == platform.machine() and facts["python"] == platform.python_version()
    assert facts["glibc"] == platform.libc_ver()[1]
    assert facts["cache_dir"] == str(tmp_path / "cache")  # the project's own cache rule, absolute
    assert facts["cores"] == len(os.sched_getaffinity(0))
    assert set(facts["runtimes"]) == {"torch", "onnxruntime", "openvino", "tensorrt", "nncf"}
    # The installed runtimes import here, with their own version numbers.
    assert facts["runtimes"]["torch"].startswith(importlib.metadata.version("torch").split("+")[0])
    assert facts["runtimes"]["onnxruntime"] == importlib.metadata.version("onnxruntime")
    for name, version in facts["runtimes"].items():
        assert (version is None) == (name in facts["runtime_problems"])


def test_readable_lines_say_which_runtime_does_not_import_and_why(tmp_path) -> None:
    fakes = _fake_modules(tmp_path, {
        "torch": "__version__ = '9.9.1'\n",
        "onnxruntime": "raise ImportError('libonnxruntime.so.1: cannot open shared object file')\n",
        "openvino": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        "tensorrt": "__version__ = '10.3.0'\n",
        "nncf": "raise RuntimeError('nncf needs torch>=2.5')\n",
    })
    done = _run(env={"PYTHONPATH": str(fakes)})
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert lines["torch"].split()[1] == "9.9.1" and lines["tensorrt"].split()[1] == "10.3.0"
    assert "does not import: ImportError: libonnxruntime.so.1: cannot open shared object file" in lines["onnxruntime"]
    assert "does not import: the import crashed Python (SIGSEGV)" in lines["openvino"]
    assert "does not import: RuntimeError: nncf needs torch>=2.5" in lines["nncf"]
    assert f"Planner       {__version__} (engine protocol {PROTOCOL_VERSION})" in done.stdout


def test_preflight_itself_imports_no_runtime() -> None:
    """The runtimes are imported in child processes: the preflight stays light and survives a crashing one."""
    code = ("import contextlib, io, json, sys\nfrom planner.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['preflight', '--json'])\n"
            "print(json.dumps([m for m in ('torch', 'onnxruntime', 'openvino', 'nncf') if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_a_slow_import_is_cut_at_the_time_limit(tmp_path, monkeypatch) -> None:
    fakes = _fake_modules(tmp_path, {"slow_runtime": "import time\ntime.sleep(60)\n",
                                     "quick_runtime": "__version__ = '1.0'\n"})
    monkeypatch.syspath_prepend(str(fakes))
    monkeypatch.setenv("PYTHONPATH", str(fakes))
    versions, reasons = runtime_versions(("slow_runtime", "quick_runtime", "absent_runtime"), timeout_s=3)
    assert versions == {"slow_runtime": None, "quick_runtime": "1.0", "absent_runtime": None}
    assert reasons == {"slow_runtime": "importing it took longer than 3 s", "absent_runtime": "not installed"}


def test_the_import_check_is_kept_until_a_runtime_changes(tmp_path, monkeypatch):
    from planner.cli import preflight

    calls: list[int] = []

    def counted(names=preflight.RUNTIMES, timeout_s=preflight.IMPORT_TIMEOUT_S):
        calls.append(1)
        return {name: "1.0" for name in names}, {}

    monkeypatch.setattr(preflight, "runtime_versions", counted)
    first = preflight.cached_runtime_versions(tmp_path)
    assert preflight.cached_runtime_versions(tmp_path) == first and len(calls) == 1  # the second: from the cache
    assert preflight.cached_runtime_versions(tmp_path, refresh=True) == first and len(calls) == 2
    key = preflight.runtime_key()
    monkeypatch.setattr(preflight, "runtime_key", lambda: {**key, "torch": ["/elsewhere/torch/__init__.py", 1]})
    preflight.cached_runtime_versions(tmp_path)  # torch was reinstalled: imported again
    assert len(calls) == 3

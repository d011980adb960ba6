"""Running the user's own Python file (a model factory, a validation transform): only when trusted."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from planner.errors import PlannerError


def import_user_file(path: Path, *, trust_code: bool, what: str, error: type[PlannerError]) -> ModuleType:
    """Import `path` as a module of its own; `what` names it in errors ('model.py', '--val-transform x.py').

    Without `trust_code` it is refused: importing a file runs its code. A syntax error or an exception
    raised at import becomes `error` with what to fix.
    """
    if not trust_code:
        raise error(f"{what} is Python code, and running it could do anything",
                    "if you trust this file, pass --trust-code to let the planner import and run it")
    module_name = f"planner_user_{hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise error(f"cannot import {path}", "check that it is a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise error(f"{path} line {exc.lineno}: syntax error: {exc.msg}", "fix the Python file and run again") from exc
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; we report it
        raise error(f"importing {path} raised {type(exc).__name__}: {exc}",
                    "fix the error in the file (run with --debug for the traceback)") from exc
    return module


def user_function(module: ModuleType, path: Path, name: str, *, define: str,
                  error: type[PlannerError]) -> Callable[..., Any]:
    """The function `name` of an imported user file; `define` is the fix's example ('def make() returning ...')."""
    fn = getattr(module, name, None)
    if not callable(fn):
        raise error(f"{path} has no function {name!r}", f"define {define}")
    return fn

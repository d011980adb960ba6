"""manifest.json: what a hand-over package holds (each file's SHA-256), what was measured, and on what machine.

Its files are checked against it by planner.deploy.check (`file_problems`), the code run.py carries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.deploy.check import MANIFEST_FILE, file_problems, sha256_of
from planner.errors import PlannerError

MANIFEST_NAME = MANIFEST_FILE
FORMAT = 1
"""The manifest's format: verify refuses a newer one rather than misread it."""

__all__ = ["FORMAT", "MANIFEST_NAME", "file_problems", "hash_files", "read_manifest", "sha256_of", "write_manifest"]


def hash_files(folder: Path, names: list[str]) -> dict[str, str]:
    """Each named file's SHA-256, by its path relative to `folder`."""
    return {name: sha256_of(folder / name) for name in names}


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    """Write manifest.json into the package folder."""
    path = folder / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    return path


def read_manifest(folder: Path) -> dict[str, Any]:
    """A package's manifest; a PlannerError that says what to do when it is missing or unreadable."""
    path = folder / MANIFEST_NAME
    if not path.is_file():
        raise PlannerError(f"{folder} is not a hand-over package: it has no {MANIFEST_NAME}",
                           "pass a package folder the plan wrote (deploy/winner), or the deploy/ folder itself")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlannerError(f"{path} cannot be read: {exc}",
                           "copy the package again from the plan's deploy/ folder") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise PlannerError(f"{path} is not a package manifest (it lists no files)",
                           "copy the package again from the plan's deploy/ folder")
    if int(manifest.get("format", 0)) > FORMAT:
        raise PlannerError(f"{path} was written by a newer planner (format {manifest.get('format')})",
                           "upgrade the planner to verify it")
    return manifest

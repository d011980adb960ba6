"""manifest.json: what a hand-over package holds (each file's SHA-256), what was measured, and on what machine."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from planner.errors import PlannerError

MANIFEST_NAME = "manifest.json"
FORMAT = 1
"""The manifest's format: verify refuses a newer one rather than misread it."""
_IGNORED_DIRS = frozenset({"__pycache__"})  # Python writes these beside run.py when it is imported


def sha256_of(path: Path) -> str:
    """The file's SHA-256 as hex, read in chunks (an artifact may be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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


def file_problems(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """Every way the folder differs from the manifest: a missing file, an edited one, one the manifest does not list."""
    listed: dict[str, str] = manifest["files"]
    problems = []
    for name, expected in listed.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif sha256_of(path) != expected:
            problems.append(f"{name} was changed after the plan wrote it (its SHA-256 differs from manifest.json)")
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or _IGNORED_DIRS & set(relative.parts) or relative.as_posix() == MANIFEST_NAME:
            continue
        if relative.as_posix() not in listed:
            problems.append(f"{relative.as_posix()} is not part of the package (manifest.json does not list it)")
    return problems

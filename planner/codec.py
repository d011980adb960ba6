"""The one serialiser: engine values (dataclasses, enums, tuples) to JSON-ready data and back.

msgspec does the work: `to_data` turns a dataclass into plain dicts and lists (a StrEnum becomes
its value, a tuple a list), `from_data` rebuilds and checks the typed value. Every value the
planner writes to results.json, the ceilings cache or a candidate spec goes through these two.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")


class SchemaError(ValueError):
    """Data that does not match the type it should become (a field missing or of the wrong type)."""


def to_data(value: Any) -> Any:
    """JSON-ready builtins (dicts, lists, str, numbers) from typed values; enums become strings, tuples lists."""
    return _lists(msgspec.to_builtins(value, builtin_types=None, str_keys=True, enc_hook=_plain))


def _plain(value: Any) -> Any:
    """A read-only mapping as a dict; a path as its text; a subclass of str, int or float (torch's TorchVersion,
    say) as the plain value, as json.dumps writes it."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, PurePath):
        return str(value)
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")


def _typed(kind: type, data: Any) -> Any:
    """A path from its text (what `_plain` wrote); any other type msgspec does not know is a schema error."""
    is_path = isinstance(kind, type) and issubclass(kind, PurePath)
    if is_path and isinstance(data, str):
        return kind(data)
    # msgspec wraps a TypeError from this hook in a ValidationError that names the field (from_data's SchemaError).
    raise TypeError(f"expected text for a path, got {type(data).__name__}" if is_path
                    else f"cannot decode {type(data).__name__} as {kind!r}")


def _lists(data: Any) -> Any:
    """`data` with every tuple a list, as JSON gives it back (msgspec keeps tuples as tuples)."""
    if isinstance(data, dict):
        return {key: _lists(item) for key, item in data.items()}
    if isinstance(data, (list, tuple)):
        return [_lists(item) for item in data]
    return data


def from_data(data: Any, kind: type[T]) -> T:
    """A typed value from JSON-ready data; unknown keys are ignored, wrong types raise SchemaError."""
    try:
        return msgspec.convert(data, type=kind, strict=False, dec_hook=_typed)
    except msgspec.ValidationError as exc:
        raise SchemaError(str(exc)) from exc

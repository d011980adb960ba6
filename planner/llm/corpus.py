"""The English text that scores a language model's fidelity, and the prompts cut from it.

By default the Python standard library's own documentation topics (`pydoc_data.topics`, about 465k
characters), so no download is needed; a user's text file replaces it.
"""

from __future__ import annotations

from pathlib import Path

from planner.errors import PlannerError


def bundled_text() -> str:
    """The bundled English text: pydoc's topic pages, in a fixed order."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def read_text(path: Path | None) -> tuple[str, str]:
    """The text to score and its name: the user's file, or the bundled text when `path` is None."""
    if path is None:
        return bundled_text(), "Python's pydoc topics (bundled, about 465k characters)"
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise PlannerError(f"cannot read the text file {path}: {exc.strerror or exc}",
                           "pass a readable UTF-8 text file with --text, or leave it out for the bundled text",
                           ) from None
    if len(text.strip()) < 2000:
        raise PlannerError(f"{path} holds {len(text.strip())} characters: too little text to score a model on",
                           "pass at least a few pages (2,000 characters or more)")
    return text, Path(path).name


def token_windows(tokens: list[int], length: int, count: int) -> list[list[int]]:
    """`count` windows of `length` tokens spread evenly over `tokens` (fewer where the text is short)."""
    if len(tokens) < length:
        return [tokens] if tokens else []
    starts = max(1, (len(tokens) - length) // max(1, count))
    return [tokens[s:s + length] for s in range(0, len(tokens) - length + 1, starts)][:count]

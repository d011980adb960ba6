"""The pool of distinct inputs every timing cycles through, and how the report and the TUI say so.

A light module of its own (no numpy, no runtimes): the report and the TUI import the sentence, and state
the count a measurement recorded (run_job's info `input_pool`), never this constant, since every number
in the report comes from results.json.
"""

from __future__ import annotations

POOL_SIZE = 8
"""How many distinct inputs (drawn with one fixed seed) each timed call takes in turn."""


def pool_sentence(size: object) -> str:
    """One plain sentence: what the timed calls were fed, and why that makes the figures comparable.

    `size` is the pool a measurement recorded (its info's `input_pool`); '' when none was recorded (results
    written before it was), so a report never states a count it did not measure.
    """
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        return ""
    return (f"Each timed call takes the next of {size} distinct inputs in turn, never the same tensor twice in a "
            "row, so caches cannot make a repeated input look fast: the figures are comparable with your own "
            "loop over distinct requests (the model call alone; `planner plan --pipeline` times the whole request).")

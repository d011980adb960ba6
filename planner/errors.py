"""The error hierarchy: every error a user can act on says what went wrong and what to do."""

from __future__ import annotations


class PlannerError(Exception):
    """An error with a message a user can act on; the CLI prints it without a traceback."""

    exit_code = 2

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}: {fix}" if fix else problem)


class ModelLoadError(PlannerError):
    """The model source could not be found, read, trusted or built."""


class InputSpecError(PlannerError):
    """The input shape is malformed or the model rejects it."""


class OutputDirError(PlannerError):
    """The output folder cannot be created or written."""


class RequirementsError(PlannerError):
    """A requirements file or flag is malformed."""

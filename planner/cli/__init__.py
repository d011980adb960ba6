"""The `planner` command line: entry point, subcommands, headless progress and printed output."""

from planner.cli.main import main

__all__ = ["main"]

"""Where a plan writes: reports/<date>-<model>-<target>, created and proven writable up front; and which run a
folder belongs to, so that results.json, report.md and deploy/ in it always describe the same run."""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from planner.errors import OutputDirError


def default_out_dir(model_name: str, target: str, *, root: Path = Path("reports")) -> Path:
    """reports/<date>-<model>-<target>, with a counter if it already exists."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_name)
    return free_dir(root / f"{dt.date.today().isoformat()}-{safe}-{target}")


def free_dir(base: Path) -> Path:
    """`base`, or `base-2`, `base-3`... : the first that does not exist or is empty."""
    path, n = base, 2
    while path.exists() and any(path.iterdir()):
        path = Path(f"{base}-{n}")
        n += 1
    return path


def prepare_out_dir(path: Path) -> Path:
    """Create the output folder and prove it is writable, before any measuring starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-", delete=True):
            pass
    except OSError as exc:
        raise OutputDirError(f"cannot write to output folder {path}: {exc.strerror or exc}",
                             "pass --out with a folder you can write to") from exc
    return path


@dataclass
class RunFolder:
    """The folder one run of a session writes, and what the session has written there.

    A folder holds one run: its results.json, and the report.md and deploy/ made from that results.json. A step that
    would replace what the folder already holds (a profile measured again, another optimize run) starts a new folder
    (`base-2`, `base-3`...) instead, so the earlier run stays whole; a cancelled re-run can no longer leave a
    complete run's report and packages beside its own results.json.
    """

    path: Path
    base: Path  # the folder the user (or the default) named: later runs go beside it, numbered
    ran: set[str] = field(default_factory=set)  # the runs results.json there holds: "profile", "optimize"
    sealed: bool = False  # a save (report.md) or the hand-over packages were written there from the results

    def holds_run_of(self, step: str) -> bool:
        """Whether the folder holds what a run of `step` ("profile" or "optimize") would replace: a baseline (which
        every candidate is measured against), an optimize run, or a report or packages made from them."""
        return self.sealed or (bool(self.ran) if step == "profile" else step in self.ran)

    def next(self) -> RunFolder:
        """A new, empty folder beside this one, for the next run (created and proven writable)."""
        return RunFolder(prepare_out_dir(free_dir(self.base)), self.base)

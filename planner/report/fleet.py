"""The fleet comparison (`planner fleet`): one row per machine, then where the model should run and why.

Each row is read from that host's own results.json with the helpers its own report uses (the best candidate,
its p50, memory and size, the requirement checks and the fidelity cells), so a number reads the same in
fleet/report.md as in the host's report.md, and a number the results lack is "not measured". The
recommendation is made from those measured numbers only: the fastest host whose best candidate meets the
requirements, and whether its lead over the next host is larger than the two measurements' own spread.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from planner.io import write_text_atomic
from planner.report import fmt
from planner.report.data import ReportData
from planner.report.files import REPORT_NAME
from planner.report.markdown import model_name
from planner.report.sections import requirements
from planner.report.sections.candidates import fidelity_cells, label
from planner.report.sections.hardware import machine_phrase
from planner.results import CandidateResult, PlanResults, RequirementCheck, Status

__all__ = ["FLEET_DIR", "FleetRow", "render_fleet_markdown", "write_fleet_report"]

FLEET_DIR = "fleet"
"""The folder of the comparison under a fleet run's out folder (each host's results sit beside it)."""

# The ISA features that decide which precisions and runtimes pay, with the short names a table cell has room
# for (the host report's Hardware section lists each with what it buys). Order: what a reader compares first.
_ISA: tuple[tuple[str, str], ...] = (
    ("amx_tile", "AMX"), ("avx512f", "AVX-512"), ("avx512_vnni", "AVX-512 VNNI"), ("avx_vnni", "AVX-VNNI"),
    ("avx512_bf16", "AVX-512 BF16"), ("avx512_fp16", "AVX-512 FP16"), ("avx2", "AVX2"),
    ("sve2", "SVE2"), ("sve", "SVE"), ("asimd", "NEON"), ("asimddp", "dot product"), ("i8mm", "i8mm"),
    ("bf16", "BF16"), ("asimdhp", "FP16"),
)

_HEADERS = ["Device", "Status", "Hardware", "ISA", "Best candidate", "p50", "Peak memory", "Model size",
            "Requirements met", "Fidelity", "Host report"]


@dataclass(frozen=True)
class FleetRow:
    """One host of a fleet run: its results (None when it failed before any) and its own report.

    `report` is the host's report.md as the caller has it on disk (absolute, or relative to the current
    folder); the comparison links it by a path relative to its own folder. `failure` says why the host has
    no plan or only part of one ('' when it finished).
    """

    label: str
    host: str
    results: PlanResults | None
    report: Path | None
    failure: str = ""


@dataclass
class _Host:
    """A row as the comparison reads it: the host's results through the report's own accessors."""

    row: FleetRow
    data: ReportData | None
    best: CandidateResult | None = None
    p50: float | None = None
    checks: list[RequirementCheck] = field(default_factory=list)
    checked_on: str = ""  # what the checks were measured on, when not the best candidate (see requirements.checks)

    @property
    def missed(self) -> list[RequirementCheck]:
        """The requirement checks the host's best candidate missed (or that cannot be met)."""
        return [c for c in self.checks if requirements.verdict(c) in ("missed", "cannot be met")]

    @property
    def unjudged(self) -> list[RequirementCheck]:
        """The checks with no verdict at their target (not measured, not judged, met on the median only)."""
        return [c for c in self.checks if requirements.unjudged(c) and c not in self.missed]

    @property
    def best_label(self) -> str:
        """The best candidate's display name ('—' for a host with none, which is never compared)."""
        return label(self.best) if self.best is not None else "—"

    @property
    def comparable(self) -> bool:
        """Whether the host has a best candidate with a measured p50 to compare."""
        return self.best is not None and self.p50 is not None

    @property
    def partial(self) -> bool:
        """Whether the host's plan stopped before it finished (its best may not be its real best)."""
        return bool(self.row.failure) or (self.data is not None and self.data.is_partial)


def write_fleet_report(rows: list[FleetRow], out_dir: Path) -> Path:
    """Write out_dir/fleet/report.md (through a temporary file and a rename) and return its path."""
    folder = Path(out_dir) / FLEET_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REPORT_NAME
    write_text_atomic(path, render_fleet_markdown(rows, folder))
    return path


def render_fleet_markdown(rows: list[FleetRow], folder: Path) -> str:
    """The comparison as Markdown; `folder` is where it will be written (links to the host reports start there)."""
    hosts = [_read(row) for row in rows]
    models = [model_name(h.data) for h in hosts if h.data]
    model = next((m for m in models if m), "")
    planned = sum(1 for h in hosts if h.comparable)
    lines = [f"# Fleet comparison: {model}" if model else "# Fleet comparison", "",
             f"*{len(rows)} host{'s' if len(rows) != 1 else ''}, {planned} with a measured best candidate. Every "
             "number below was measured on that host and read from its results.json; a number a host did not "
             "measure says so.*", "",
             "## Devices", "",
             "**p50** is the median latency of one inference (half of the timed runs were faster); **peak memory** "
             "is the most memory the measuring process held; **fidelity** says how closely the candidate's outputs "
             "match the original model's on the same inputs (each host's report says how it was checked).", ""]
    lines += fmt.table(_HEADERS, [_cells(h, folder) for h in hosts])
    lines += ["", "## Where this model should run", ""]
    if len(set(m for m in models if m)) > 1:
        lines += [f"Caution: the hosts planned different models ({fmt.series(sorted(set(m for m in models if m)))}), "
                  "so their numbers do not compare.", ""]
    lines += _recommendation(hosts)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _read(row: FleetRow) -> _Host:
    if row.results is None:
        return _Host(row, None)
    data = ReportData(row.results)
    best = data.best_cand
    checks, on = requirements.checks(data)
    return _Host(row, data, best, best.p50 if best is not None else None, checks, on)


def _cells(h: _Host, folder: Path) -> list[str]:
    row, data = h.row, h.data
    device = f"**{row.label}**" + (f" ({fmt.code(row.host)})" if row.host and row.host != row.label else "")
    link = _link(row.report, folder)
    if data is None:
        missing = fmt.NOT_MEASURED
        return [device, f"failed: {_failure(row) or 'no reason recorded'}", "not recorded", "not recorded",
                "none", missing, missing, missing, "not checked", missing, link]
    best = h.best
    return [device, _status(h), machine_phrase(data) if data.run.hardware is not None else "not recorded", _isa(data),
            _best_cell(data, best), fmt.ms(h.p50), fmt.size(best.peak_memory_bytes) if best else "—",
            _size(data, best) if best else "—", _requirements_cell(h), _fidelity_cell(data, best), link]


def _status(h: _Host) -> str:
    status = h.data.status if h.data else "unknown"
    if h.row.failure:
        return f"stopped: {_failure(h.row)} (run {status})"
    return "complete" if status == "ok" else f"partial (run {status})"


def _failure(row: FleetRow) -> str:
    """The host's failure on one line (a remote's error can span several, which would break a table or list)."""
    return " ".join(row.failure.split())


def _isa(data: ReportData) -> str:
    hardware = data.run.hardware
    features = {f.lower() for f in hardware.cpu.features} if hardware is not None else set()
    names = [name for flag, name in _ISA if flag in features]
    for g in hardware.gpus if hardware is not None else ():
        if g.cc_text is not None:
            names.append(f"GPU compute capability {g.cc_text}")
    if names:
        return ", ".join(dict.fromkeys(names))
    return "none of the SIMD, int8 or bf16 extensions" if features else "not recorded"


def _best_cell(data: ReportData, best: CandidateResult | None) -> str:
    if best is None:
        others = [c for c in data.run.candidates if not data.is_reference_cand(c)]
        if not others:
            return f"none ({data.missing('measuring candidates')})"
        return "none ranked (no candidate both measured and close enough to the original to rank)"
    name = label(best)
    precision = best.precision
    name += f" ({precision})" if precision and precision not in name else ""
    return f"{name}: the original model as it runs out of the box" if data.is_reference_cand(best) else name


def _size(data: ReportData, best: CandidateResult) -> str:
    # As the host report's candidate table: the candidate's own file, else the original's for the baseline.
    size = best.size_bytes
    if size is None and data.is_reference_cand(best):
        model = data.model_record
        size = model.size_bytes if model is not None else None
    return fmt.size(size)


def _check_name(check: RequirementCheck) -> str:
    name = requirements.name_of(check)
    return f"{name} {requirements.value_text(name, check.target)}"


def _requirements_cell(h: _Host) -> str:
    if not h.checks:
        return "not checked"
    on = " (checked on the baseline)" if h.checked_on else ""
    if h.missed:
        return "**no**: misses " + ", ".join(_check_name(c) for c in h.missed) + on
    if h.unjudged:
        return "yes, none missed; not judged: " + ", ".join(_check_name(c) for c in h.unjudged) + on
    return "yes, all met" + on


def _fidelity_cell(data: ReportData, best: CandidateResult | None) -> str:
    if best is None:
        return "—"
    if data.is_reference_cand(best):
        return "the original itself"
    error, agreement = fidelity_cells(best, by_kind=True)
    if error == fmt.NOT_MEASURED:
        return fmt.NOT_MEASURED
    verdict = "passed" if best.status == Status.OK else str(best.status)
    decided_by = best.fidelity.decided_by if best.fidelity is not None else ""
    generated = " on generated inputs" if "generated inputs" in decided_by else ""
    return f"{verdict}{generated}: {error}, {agreement}"


def _link(report: Path | None, folder: Path) -> str:
    if report is None:
        return "not written"
    if not Path(report).is_file():
        return "not written"
    relative = Path(os.path.relpath(Path(report).resolve(), Path(folder).resolve())).as_posix()
    return f"[{REPORT_NAME}]({quote(relative)})"


def _interval(h: _Host) -> tuple[float, float] | None:
    """The 95% interval of the host's median latency from its own samples (ci95_rel), or None when unbounded."""
    stats = h.best.latency_ms if h.best is not None else None
    ci = stats.ci95_rel if stats is not None else None
    if h.p50 is None or ci is None or not math.isfinite(ci):
        return None
    return h.p50 * (1 - ci), h.p50 * (1 + ci)


def _noise(winner: _Host, other: _Host) -> str:
    """Whether the winner's lead over `other` is more than the two measurements' spread, in a sentence."""
    a, b = _interval(winner), _interval(other)
    if a is None or b is None:
        lacking = fmt.series([h.row.label for h, i in ((winner, a), (other, b)) if i is None])
        return (f"Whether the difference is more than measurement noise cannot be said: {lacking} recorded too "
                "few samples for an interval of the median.")
    spans = (f"{winner.row.label} {fmt.ms(a[0])} to {fmt.ms(a[1])}, {other.row.label} {fmt.ms(b[0])} to "
             f"{fmt.ms(b[1])}")
    if a[1] >= b[0]:
        return (f"The difference is within measurement noise: the 95% intervals of the two medians overlap "
                f"({spans}), so on speed alone either host will do.")
    return ("The difference is more than measurement noise: the 95% intervals of the two medians do not overlap "
            f"({spans}).")


def _missed_words(h: _Host) -> str:
    return "; ".join(f"{_check_name(c)} ({requirements.margin(c)})" for c in h.missed)


def _recommendation(hosts: list[_Host]) -> list[str]:
    compared = [h for h in hosts if h.comparable]
    lines: list[str] = []
    if not compared:
        lines.append("**No recommendation**: no host has a measured best candidate to compare.")
    else:
        # On equal p50s a host whose plan finished comes first: a partial plan may not have reached its best.
        meeting = sorted((h for h in compared if not h.missed), key=lambda h: (h.p50 or 0.0, h.partial))
        lines += _choice(meeting, compared) if meeting else _closest(compared)
    lines += _not_compared(hosts)
    return lines + [""]


def _choice(meeting: list[_Host], compared: list[_Host]) -> list[str]:
    winner = meeting[0]
    lines = [f"**Run it on {winner.row.label}** with **{winner.best_label}** (p50 {fmt.ms(winner.p50)}).", ""]
    if winner.partial:
        lines += [f"Caution: {winner.row.label}'s plan did not finish ({_status(winner)}), so a candidate it did "
                  "not reach could be faster still.", ""]
    if winner.checks:
        met = [_check_name(c) for c in winner.checks if c not in winner.unjudged]
        unjudged = [_check_name(c) for c in winner.unjudged]
        parts = [", ".join(met)] + (["not judged: " + ", ".join(unjudged)] if unjudged else [])
        why = ["It is the fastest (the lowest p50) of the hosts whose best candidate meets the requirements ("
               + "; ".join(part for part in parts if part) + f") and {_keeps(winner)}."]
    else:
        why = [f"It is the fastest host, and its best candidate {_keeps(winner)}; no requirements were checked, so "
               "this rests on speed alone."]
    if len(meeting) > 1:
        runner = meeting[1]
        ratio = runner.p50 / winner.p50 if runner.p50 and winner.p50 else None
        lead = ("the two are as fast as each other" if ratio is not None and ratio < 1.005
                else f"{winner.row.label} is {fmt.speedup(ratio)} as fast")
        why.append(f"{runner.row.label}, the next fastest that meets them, takes {fmt.ms(runner.p50)} with "
                   f"{runner.best_label}: {lead}. " + _noise(winner, runner))
    elif len(compared) == 1:
        why.append("It is the only host with a measured candidate, so there is nothing to compare it with.")
    else:
        why.append("It is the only host that meets the requirements.")
    why += [f"{h.row.label} takes {fmt.ms(h.p50)} with {h.best_label}." for h in meeting[2:]]
    for h in sorted((h for h in compared if h.missed), key=lambda h: h.p50 or 0.0):
        faster = ", although it is faster" if (h.p50 or 0.0) < (winner.p50 or 0.0) else ""
        why.append(f"{h.row.label} ({fmt.ms(h.p50)} with {h.best_label}) is not recommended{faster}: it "
                   f"misses {_missed_words(h)}.")
    return lines + [f"- {w}" for w in why]


def _keeps(h: _Host) -> str:
    """How the host's best candidate stands against the original model's outputs."""
    if h.data is not None and h.best is not None and h.data.is_reference_cand(h.best):
        return "is the original model itself"
    return "passed the fidelity check" if h.best is not None and h.best.status == Status.OK else "was ranked"


def _closest(compared: list[_Host]) -> list[str]:
    # Closest: the fewest requirements missed, then the lowest p50 (both measured on the host).
    ordered = sorted(compared, key=lambda h: (len(h.missed), h.p50 or 0.0))
    near = ordered[0]
    lines = [f"**No host meets the requirements.** {near.row.label} came closest with **{near.best_label}** "
             f"(p50 {fmt.ms(near.p50)}): it misses {_missed_words(near)}.", ""]
    lines += [f"- {h.row.label} ({fmt.ms(h.p50)} with {h.best_label}) misses {_missed_words(h)}."
              for h in ordered[1:]]
    if len(ordered) > 1:
        other = ordered[1]
        ratio = other.p50 / near.p50 if other.p50 and near.p50 else None
        lines += ["", f"On speed alone, {near.row.label} is {fmt.speedup(ratio)} as fast as {other.row.label}. "
                  + _noise(near, other)]
    lines += ["", "Relax the requirements that were missed, or plan on a faster machine."]
    return lines


def _not_compared(hosts: list[_Host]) -> list[str]:
    left = [h for h in hosts if not h.comparable]
    if not left:
        return []
    lines = ["", "Not compared (no measured best candidate):", ""]
    for h in left:
        why = _failure(h.row) or (f"the run's status is {h.data.status}" if h.data else "no results")
        if h.data is not None and not h.row.failure and h.best is None:
            why = _best_cell(h.data, None)
        lines.append(f"- {h.row.label}: {why}")
    return lines

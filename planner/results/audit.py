"""The environment audit every measurement carries, the verdict on it, and the plan's reproducibility statement.

A latency measured while other programs ran, with more threads than cores, or on a throttled
chip does not reproduce. The measuring worker records what the machine was doing while it timed
(`planner.measure.audit` fills this value); this module judges it in plain words with what to do,
and sums a whole plan up in one statement, so a reader knows which numbers to trust.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner import units

OTHER_LOAD_LIMIT_CORES = 0.25
"""Other processes' mean CPU use, in cores, above which a measurement counts as taken under load.

A quarter of a core is well above what an idle desktop or server's background daemons use, and
well below the load that moved quick figures by 10% or more on a 2-core machine."""

NOT_READABLE = "not readable"


@dataclass(frozen=True)
class AuditFact:
    """One thing the audit looked at, as read ('performance', '2,450 MHz') or why it could not be."""

    name: str
    value: str


@dataclass(frozen=True)
class MeasurementAudit:
    """What the machine was doing while one measurement was timed; every field defaults for older results."""

    window_s: float | None = None  # how long the audit watched (the timed runs and sweeps)
    load_samples: int = 0  # how many load readings were taken in that window
    other_load_mean_cores: float | None = None  # CPU time of other processes per second of wall time
    other_load_peak_cores: float | None = None  # the busiest interval
    own_cpu_cores: float | None = None  # this measurement's own CPU use per second
    load_basis: str = ""  # how the load was sampled, or why it could not be
    cpus_watched: int | None = None  # the CPUs this worker may run on (its affinity)
    threads_used: int | None = None
    usable_cores: int | None = None  # affinity and CPU quota together
    quota_cores: float | None = None
    throttling: tuple[str, ...] = ()  # throttling seen during the window, in plain words
    weights_bytes: int | None = None
    llc_bytes: int | None = None  # the last-level cache
    facts: tuple[AuditFact, ...] = ()
    issues: tuple[str, ...] = ()  # why the number may not reproduce, each with what to do

    @property
    def disturbed(self) -> bool:
        """Whether something during the run makes the number untrustworthy."""
        return bool(self.issues)

    @property
    def weights_fit_llc(self) -> bool | None:
        """Whether the weights fit in the last-level cache (None when either size is unknown)."""
        if not self.weights_bytes or not self.llc_bytes:
            return None
        return self.weights_bytes <= self.llc_bytes


def cores_text(cores: float | None) -> str:
    """CPU use in words: '80% of a core' below one core, '1.6 cores' above."""
    if cores is None:
        return NOT_READABLE
    if cores < 1:
        return f"{units.pct(cores)} of a core"
    text = units.sig(cores)
    return f"{text} core" if text == "1" else f"{text} cores"


def judge(audit: MeasurementAudit) -> tuple[str, ...]:
    """Why this measurement may not reproduce, each reason with what to do; empty when nothing was seen."""
    issues = []
    load = audit.other_load_mean_cores
    if load is not None and load >= OTHER_LOAD_LIMIT_CORES:
        peak = audit.other_load_peak_cores
        peak_text = f" (peak {cores_text(peak)})" if peak is not None and peak > load * 1.2 else ""
        issues.append(f"other processes used {cores_text(load)} on average{peak_text} while this was timed: "
                      "re-run on an idle machine (stop other jobs, or pin them to other cores)")
    threads, usable = audit.threads_used, audit.usable_cores
    if threads is not None and usable is not None and threads > usable:
        limit = f"a CPU quota of {units.sig(audit.quota_cores)} cores" if audit.quota_cores else "the CPU affinity"
        cores = "core" if usable == 1 else "cores"
        most = "1 thread" if usable == 1 else f"{usable} threads"
        issues.append(f"{threads} threads ran on {usable} usable {cores} ({limit}), so threads waited for each "
                      f"other: use at most {most} (OMP_NUM_THREADS or the runtime's thread setting)")
    if audit.throttling:
        issues.append(f"the hardware slowed down during this run ({'; '.join(audit.throttling)}): "
                      "let it cool, check its power supply and power mode, then re-run")
    return tuple(issues)


def judged(audit: MeasurementAudit) -> MeasurementAudit:
    """The audit with its issues filled in from its readings."""
    return replace(audit, issues=judge(audit))


def audit_of(data: Any) -> MeasurementAudit | None:
    """A typed audit from results.json data (a dict), an audit, or None; unreadable data gives None."""
    if isinstance(data, MeasurementAudit):
        return data
    if not isinstance(data, dict) or not data:
        return None
    from planner.codec import SchemaError, from_data

    try:
        return from_data(data, MeasurementAudit)
    except SchemaError:
        return None


def flag_line(audit: MeasurementAudit | None) -> str:
    """One line for a disturbed measurement ('taken under load: ...'), or '' when it was clean or not audited."""
    if audit is None or not audit.disturbed:
        return ""
    return "taken under interference: " + "; ".join(audit.issues)


def load_summary(audit: MeasurementAudit) -> str:
    """Other processes' load during the run in words, or why it was not read."""
    if audit.other_load_mean_cores is None:
        return f"other processes' load: {NOT_READABLE}" + (f" ({audit.load_basis})" if audit.load_basis else "")
    return (f"other processes used {cores_text(audit.other_load_mean_cores)} on average, peak "
            f"{cores_text(audit.other_load_peak_cores)}, over {units.seconds(audit.window_s)}")


@dataclass(frozen=True)
class Reproducibility:
    """Whether a plan's numbers can be expected to reproduce, and which ones cannot."""

    audited: int  # measurements that carry an audit
    measured: int  # measurements with a latency
    disturbed: tuple[str, ...]  # labels of measurements taken under interference
    unstable: tuple[str, ...]  # labels whose samples spread too much, or were too few, to pin the median
    statement: str

    @property
    def trustworthy(self) -> bool:
        """Whether nothing argues against re-measuring giving the same numbers."""
        return not self.disturbed and not self.unstable


UNSTABLE_CI95_REL = 0.05
"""A median whose 95% confidence interval is wider than ±5% cannot be expected to reproduce within ±10%."""


def _unstable_reason(latency: Any) -> str:
    """Why a latency summary cannot pin its median, or ''."""
    if latency is None:
        return ""
    get = latency.get if isinstance(latency, dict) else lambda key, default=None: getattr(latency, key, default)
    samples = get("samples") or 0
    ci = units.finite(get("ci95_rel"))
    if get("unstable"):
        return "samples spread too much"
    if samples and samples < 8:
        return "too few samples"
    if ci is not None and ci > UNSTABLE_CI95_REL:
        return "the median's confidence interval is wide"
    return ""


def reproducibility(measurements: Iterable[tuple[str, Any, Any]]) -> Reproducibility:
    """A plan's reproducibility from (label, audit, latency) for the baseline and each candidate.

    `audit` and `latency` may be typed values or results.json dicts; unmeasured rows pass None.
    """
    disturbed: list[str] = []
    unstable: list[str] = []
    audited = measured = 0
    for label, raw_audit, latency in measurements:
        if latency is None:
            continue
        measured += 1
        audit = audit_of(raw_audit)
        if audit is not None:
            audited += 1
            if audit.disturbed:
                disturbed.append(label)
        why = _unstable_reason(latency)
        if why:
            unstable.append(f"{label} ({why})")
    return Reproducibility(audited=audited, measured=measured, disturbed=tuple(disturbed),
                           unstable=tuple(unstable), statement=_statement(audited, measured, disturbed, unstable))


def _names(labels: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(labels[:limit])
    return shown + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def _statement(audited: int, measured: int, disturbed: list[str], unstable: list[str]) -> str:
    if measured == 0:
        return ""
    parts = []
    if disturbed:
        parts.append(f"{len(disturbed)} of {measured} measurements were taken under interference "
                     f"(other processes, too many threads or throttling): {_names(disturbed)}; re-measured on "
                     "an idle machine they may differ by far more than 10%, and the ranking with them")
    if unstable:
        parts.append(f"{len(unstable)} of {measured} could not pin their median: {_names(unstable)}; "
                     "a re-measure may differ by more than 10% (a full run, not --quick, takes more samples)")
    if parts:
        return "Reproducibility: " + ". ".join(parts) + "."
    if audited < measured:
        return (f"Reproducibility: {measured - audited} of {measured} measurements carry no environment audit "
                "(results from an older planner); the rest were taken on an idle machine with stable samples.")
    return (f"Reproducibility: all {measured} measurements were taken with no interference seen and stable "
            "samples; `planner bench` on this machine should agree within about ±10%.")

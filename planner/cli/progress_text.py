"""The words and columns of `planner plan`'s progress: times as a stopwatch reads them, and one line per
candidate result (status, candidate, p50, speedup and the band predicted before measuring)."""

from __future__ import annotations

from planner import units
from planner.results import CandidateResult, Status

STATUS_W = 11  # "unconfirmed"
LABEL_W = 41  # the longest label the bundled plugins make: "openvino int8 nncf bf16 latency 2t static"
P50_W = 8
SPEEDUP_W = 8  # "0.00115x"
BAND_W = 14  # "0.8x-32x below"
NOTE_W = 60  # a reason is cut to this many characters without -v: the line stays one line in most terminals
TIME_W = 7  # "[12:34] "
NOTE_COL = 6 + STATUS_W + 1 + LABEL_W + 1 + P50_W + 1 + SPEEDUP_W + 2 + BAND_W  # where a result's notes start


def clock(seconds: float) -> str:
    """A duration as m:ss, or h:mm:ss from an hour on (a negative one reads as 0:00)."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def stamp(seconds: float) -> str:
    """The elapsed-time prefix every progress line starts with: '[0:42]'."""
    return f"[{clock(seconds)}]"


def shorten(text: str, width: int = NOTE_W) -> str:
    """`text` on one line, cut at a word boundary to at most `width` characters with '…' when cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[:width - 1]
    space = cut.rfind(" ")
    if space > width // 2:  # a word boundary not too far back; otherwise cut mid-word rather than lose half
        cut = cut[:space]
    return cut.rstrip(" ,;:—-(") + "…"


def header() -> str:
    """The column titles printed above a block of candidate results (without the time prefix)."""
    return (f"{'':5} {'status':<{STATUS_W}} {'candidate':<{LABEL_W}} {'p50 ms':>{P50_W}} "
            f"{'speedup':>{SPEEDUP_W}}  {'predicted':<{BAND_W}}  note")


def predicted(r: CandidateResult) -> str:
    """The band predicted before measuring, and where the measured speedup fell when it fell outside it."""
    p = r.prediction
    if p is None or not p.band():
        return "—"
    verdict = p.verdict(r.speedup) if r.measured else ""
    return f"{p.band()} {verdict}" if verdict in ("above", "below") else p.band()


def notes(r: CandidateResult, *, verbose: bool) -> list[str]:
    """What the line says beyond its numbers: accuracy, a confirmation, why it was rejected, skipped or cut
    short. Reasons are shortened unless `verbose`."""
    def fit(text: str) -> str:
        return " ".join(text.split()) if verbose else shorten(text)

    out: list[str] = []
    c = r.confirmation
    if c is not None:
        verdict = "reproduced" if c.reproduced else "did not reproduce"
        out.append(f"{verdict} the 2-second screen's {units.ms(c.screen_p50_ms)} ({c.rel_change:+.0%})")
        if c.note and verbose:  # what a disagreement means; the line already gives both figures
            out.append(c.note)
    if r.fidelity is not None and r.fidelity.accuracy is not None:
        accuracy = f"accuracy {units.accuracy(r.fidelity.accuracy)}"
        if r.fidelity.reference_accuracy is not None:
            accuracy += f" (original {units.accuracy(r.fidelity.reference_accuracy)})"
        out.append(accuracy)
    if r.reason and r.status is not Status.OK:
        out.append(fit(r.reason))
    if r.dropped:  # its timing stopped early; the reason names the best, and repeats on most lines of a search
        out.append("stopped early: " + " ".join(r.dropped.split()) if verbose else "stopped early: clearly slower")
    return out


def result_columns(r: CandidateResult, *, index: int | None, total: int | None) -> str:
    """One candidate's result in columns (without the time prefix): where it is in the stage, its status,
    label, p50, speedup and predicted band."""
    count = f"{index}/{total}" if index is not None and total else ""
    p50 = units.ms(r.p50, unit=False) if r.measured else "—"
    speedup = units.speedup(r.speedup) if r.measured else "—"
    return (f"{count:>5} {str(r.status):<{STATUS_W}} {r.label:<{LABEL_W}} {p50:>{P50_W}} "
            f"{speedup:>{SPEEDUP_W}}  {predicted(r):<{BAND_W}}").rstrip()


def result_line(r: CandidateResult, *, index: int | None, total: int | None, verbose: bool = False) -> str:
    """One candidate's result on one line (without the time prefix): its columns, then its notes."""
    line = f"{result_columns(r, index=index, total=total):<{NOTE_COL}}"
    extra = notes(r, verbose=verbose)
    return (line + "  " + "; ".join(extra)).rstrip() if extra else line.rstrip()

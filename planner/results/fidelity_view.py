"""A candidate's fidelity in its results.json form, read by the kind of output it judged.

The report, the TUI and the CLI say what the test measured in the output's own terms: top-1 for
class scores, the thresholded map's IoU for a dense map, per-position agreement for a sequence, the
relative error for anything else. Top-1 is never shown for an output that has no classes. Readers
are lenient (see `planner.results.view`): a missing or malformed field reads as absent, and a file
written before kinds were told apart reads as class scores, as it was judged.

Every reader takes the typed `Fidelity` (None where nothing was compared); the advice, which reads a
profile's facts as JSON, hands over the fidelity's results.json object, decoded here.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from planner import units
from planner.codec import SchemaError, from_data
from planner.results.values import CandidateResult, Fidelity, OutputKind
from planner.results.view import number


def typed(fidelity: Fidelity | Mapping[str, Any] | None) -> Fidelity | None:
    """The typed fidelity: as it is, or decoded from its results.json object (None when it does not decode)."""
    if fidelity is None or isinstance(fidelity, Fidelity):
        return fidelity
    try:
        return from_data(dict(fidelity), Fidelity) if isinstance(fidelity, Mapping) and fidelity else None
    except SchemaError:
        return None




def kind(fidelity: Fidelity | Mapping[str, Any] | None) -> OutputKind:
    """The output's kind the candidate was judged as: classes (also for older files), dense, sequence, regression."""
    fid = typed(fidelity)
    value = fid.output_kind if fid is not None else ""
    return OutputKind(value) if value in tuple(OutputKind) else OutputKind.CLASSES


def small(value: Any) -> str:
    """An error as people read it: '0.0123', '6.1e-08' (scientific below 0.001), '—' when missing."""
    v = number(value)
    if v is None:
        return units.MISSING
    return f"{v:.1e}" if 0 < abs(v) < 1e-3 else units.sig(v)


def spread_pct(value: Any) -> str:
    """An error as a share of the output's spread: '0.32%', '<0.01%' (float noise), '0' when exact."""
    v = number(value)
    if v is None:
        return units.MISSING
    if v == 0:
        return "0"
    return "<0.01%" if v < 1e-4 else units.pct(v)


def error_phrase(fidelity: Fidelity | Mapping[str, Any] | None) -> str:
    """The mean error over the output's scale in words ('' when not recorded)."""
    fid = typed(fidelity)
    if fid is None or fid.spread_error is None:
        return ""
    if fid.spread_basis == "probability":
        return f"mean error {small(fid.spread_error)} on the probability scale"
    return f"mean error {spread_pct(fid.spread_error)} of the output's spread"


def interval(low: float | None, high: float | None, count: int | None, what: str = "samples") -> str:
    """' (95% interval 88–97%, 120 samples)' for a share; ' (120 samples)' without an interval; '' without either."""
    parts = ([f"95% interval {units.pct(low)}–{units.pct(high)}"] if low is not None and high is not None else []) + (
        [f"{count:,} {what}"] if count else [])
    return f" ({', '.join(parts)})" if parts else ""


def text_changes(fid: Fidelity) -> str:
    """A CTC output's verdict in the task's words: 'the decoded text changes in 31% of 200 sequences (95% interval
    25–38%) and 1.1% of characters'; '' before it was measured."""
    if fid.sequences_unchanged is None:
        return ""
    changed = 1.0 - fid.sequences_unchanged
    span = (interval(1.0 - fid.sequences_high, 1.0 - fid.sequences_low, None)
            if fid.sequences_low is not None and fid.sequences_high is not None else "")
    characters = f" and {units.pct(fid.edit_rate)} of characters" if fid.edit_rate is not None else ""
    return f"the decoded text changes in {units.pct(changed)} of {fid.sequences:,} sequences{span}{characters}"


def neighbours(fid: Fidelity) -> str:
    """An embedding's verdict in a search's words: 'nearest neighbour kept for 86% of 64 samples (95% interval
    …), top-5 kept 92%, cosine 0.991'."""
    cosine = f"cosine {fid.sample_cosine:.3f} per sample" if fid.sample_cosine is not None else ""
    if fid.neighbour_kept is None:
        return cosine
    top5 = f", top-5 kept {units.pct(fid.top5_kept)}" if fid.top5_kept is not None else ""
    return (f"nearest neighbour kept for {units.pct(fid.neighbour_kept)} of {fid.samples:,} samples"
            f"{interval(fid.neighbour_low, fid.neighbour_high, None)}{top5}" + (f", {cosine}" if cosine else ""))


def agreement_phrase(fidelity: Fidelity | Mapping[str, Any] | None) -> str:
    """The kind's own agreement in words: 'map IoU 0.98 (thresholded at 0.5)', 'per-position agreement 99.6%'..."""
    fid = typed(fidelity)
    if fid is None:
        return ""
    k = kind(fid)
    if k == OutputKind.CTC:
        return text_changes(fid) or "no sequence was decoded"
    if k == OutputKind.EMBEDDING:
        return neighbours(fid)
    if k == OutputKind.DENSE:
        if fid.map_iou is not None:
            return f"map IoU {fid.map_iou:.2f} (thresholded at {units.sig(fid.map_threshold)})"
        if fid.pixel_agreement is not None:
            return f"per-pixel class agreement {units.pct(fid.pixel_agreement)}"
        if fid.map_threshold is not None:
            return "no foreground on these inputs (the map's agreement is no test here)"
        return "no pixel's class stands clear of the error (the map's agreement is no test here)"
    if k == OutputKind.SEQUENCE:
        whole = (f"whole sequences unchanged {units.pct(fid.sequences_unchanged)}"
                 f"{interval(fid.sequences_low, fid.sequences_high, fid.sequences, 'sequences')}, "
                 if fid.sequences_unchanged is not None else "")
        if fid.position_agreement is not None:
            return f"{whole}per-position agreement {units.pct(fid.position_agreement)}"
        return f"{whole}no position's class stands clear of the error (per-position agreement is no test here)"
    if k == OutputKind.REGRESSION:
        return f"relative error {small(fid.relative_error)}"
    if fid.top1_agreement is not None:
        return (f"top-1 agreement {units.pct(fid.top1_agreement)}"
                f"{interval(fid.top1_low, fid.top1_high, fid.top1_samples)}")
    return ""


def accuracy_phrase(fid: Fidelity, *, versus: bool = False) -> str:
    """'accuracy 98.05% (95% interval 96.4–99.0%, 299 samples)', with ' vs 97.49% for the original' when `versus`;
    '' without labels."""
    if fid.accuracy is None:
        return ""
    span = (f"95% interval {units.accuracy(fid.accuracy_low)}–{units.accuracy(fid.accuracy_high)}, "
            if fid.accuracy_low is not None and fid.accuracy_high is not None else "")
    words = f"accuracy {units.accuracy(fid.accuracy)} ({span}{fid.samples:,} labelled samples)"
    if versus and fid.reference_accuracy is not None:
        words += f" vs {units.accuracy(fid.reference_accuracy)} for the original"
    return words


def facts(fidelity: Fidelity | Mapping[str, Any] | None, *, versus: bool = False, centered: bool = False) -> list[str]:
    """What the check measured, each share with its interval and count: accuracy on labels, then the output kind's
    own test (a map, a sequence, text, an embedding, a regression) or, for class scores, cosine and top-1.
    `versus` adds the original's accuracy; `centered` the cosine of the part that depends on the input."""
    fid = typed(fidelity)
    if fid is None:
        return []
    found = [accuracy_phrase(fid, versus=versus)] if fid.accuracy is not None else []
    by_kind = phrases(fid)
    if by_kind:
        return found + by_kind
    cosine = f"cosine {units.cosine(fid.cosine)}"
    if centered and fid.centered_cosine is not None:
        # The raw cosine mostly measures what every input's output shares; this is the part that varies.
        cosine += f" ({units.cosine(fid.centered_cosine)} on the part that depends on the input)"
    found.append(cosine)
    if fid.top1_agreement is not None:
        found.append(agreement_phrase(fid))
    return found


def phrases(fidelity: Fidelity | Mapping[str, Any] | None) -> list[str]:
    """What a dense map, sequence or regression output's test measured, in words; [] for class scores
    (whose callers keep their cosine and top-1 wording)."""
    fid = typed(fidelity)
    if fid is None or kind(fid) == OutputKind.CLASSES or fid.reference:
        return []
    return [p for p in (agreement_phrase(fid), error_phrase(fid)) if p]


def agreement_cell(fidelity: Fidelity | Mapping[str, Any] | None) -> str:
    """A short table cell for the kind's agreement: 'top-1 100%', 'map IoU 0.98', 'positions 99.6%',
    'rel. error 0.002'."""
    fid = typed(fidelity)
    if fid is None:
        return "n/a"
    k = kind(fid)
    if k == OutputKind.DENSE:
        if fid.map_iou is not None:
            return f"map IoU {fid.map_iou:.2f}"
        if fid.pixel_agreement is not None:
            return f"pixels {units.pct(fid.pixel_agreement)}"
        if fid.map_threshold is not None:
            return "no foreground here"
        return "no test (margins within error)"
    if k == OutputKind.CTC:
        if fid.sequences_unchanged is None:
            return "no sequences"
        characters = f", {units.pct(fid.edit_rate)} chars" if fid.edit_rate is not None else ""
        return f"text same {units.pct(fid.sequences_unchanged)}{characters}"
    if k == OutputKind.EMBEDDING:
        if fid.neighbour_kept is not None:
            return f"neighbour kept {units.pct(fid.neighbour_kept)}"
        return f"cosine {units.cosine(fid.sample_cosine)}"
    if k == OutputKind.SEQUENCE:
        if fid.sequences_unchanged is not None:
            return f"sequences {units.pct(fid.sequences_unchanged)}"
        if fid.position_agreement is not None:
            return f"positions {units.pct(fid.position_agreement)}"
        return "no test (margins within error)"
    if k == OutputKind.REGRESSION:
        return f"rel. error {small(fid.relative_error)}"
    if fid.top1_agreement is not None:
        return f"top-1 {units.pct(fid.top1_agreement)}"
    return "no test (margins within error)" if fid.top1_samples == 0 else "n/a"


def error_cell(fidelity: Fidelity | Mapping[str, Any] | None) -> str:
    """A short table cell for the error beside the agreement: '6.1e-08 (0-1 scale)', '1.2% of spread', or cosine."""
    fid = typed(fidelity)
    if fid is None or kind(fid) == OutputKind.CLASSES:
        return f"cosine {units.cosine(fid.cosine if fid is not None else None)}"
    if kind(fid) == OutputKind.EMBEDDING:
        return f"cosine {units.cosine(fid.sample_cosine if fid.sample_cosine is not None else fid.cosine)}"
    if fid.spread_error is None:
        return units.MISSING
    if fid.spread_basis == "probability":
        return f"{small(fid.spread_error)} (0-1 scale)"
    return f"{spread_pct(fid.spread_error)} of spread"


_NEEDED = re.compile(r"needed ([0-9.]+%?)")
_AT_MOST = re.compile(r"at most ([0-9.e-]+)")
_WORDS = {OutputKind.DENSE: "a dense map, a value per pixel",
          OutputKind.SEQUENCE: "a sequence of class scores, one set per position",
          OutputKind.CTC: "a sequence of class scores decoded as CTC (each position's class, repeats collapsed, the "
                          "blank dropped), that is, text",
          OutputKind.EMBEDDING: "an embedding, a vector per sample",
          OutputKind.REGRESSION: "a set of values compared as numbers (regression)"}


def rule(candidates: Iterable[CandidateResult]) -> str:
    """The fidelity check in plain words for a dense map, sequence, text, embedding or regression output, with the
    levels this run's candidates recorded per precision; '' when every output is class scores."""
    judged = [(c, c.fidelity) for c in candidates if c.fidelity is not None]
    found = next((k for _, f in judged if (k := kind(f)) != OutputKind.CLASSES), None)
    if found is None:
        return ""
    basis = next((f.kind_basis for _, f in judged if kind(f) == found and f.kind_basis), "")
    start = ("each candidate's outputs are compared with the original model's on the same fixed inputs; the output "
             f"is {_WORDS[found]}{f' ({basis})' if basis else ''}, so ")
    several = any(f.pixel_agreement is not None for _, f in judged)
    if found == OutputKind.DENSE:
        agreement = ("the class of each pixel (its highest score) must agree with the original's on the share of "
                     "pixels needed for its precision, not counting pixels whose top two scores are within the "
                     "candidate's typical error of each other" if several else
                     "the map cut at a threshold (0.5 for a probability map, else 0) must mark the same foreground as "
                     "the original's, their IoU (pixels both mark over pixels either marks) reaching the level for its "
                     "precision, not counting pixels within the candidate's typical error of the threshold (where the "
                     "original's map has no foreground on these inputs, this test cannot be made and the table says "
                     "so)")
        words = (f"{start}two tests apply: {agreement}; and the mean error must stay small, on the probability scale "
                 "for a probability map, else relative to the output's standard deviation. Cosine similarity is not "
                 "used: on a map that is near zero everywhere it measures noise far below the threshold")
        name = "pixel agreement" if several else "IoU"
    elif found == OutputKind.SEQUENCE:
        words = (f"{start}a candidate passes when the whole sequences (each position's class, its highest score) "
                 "stay unchanged, and each position's class agrees with the original's, on the share needed for its "
                 "precision, not counting positions whose top two scores are within the candidate's typical error "
                 "of each other (where no position is clear of it, the mean error relative to the output's standard "
                 "deviation decides). If this output is CTC text (a recogniser's), plan with --output-kind "
                 "NAME=ctc to judge the decoded text: the lines unchanged and the character error rate")
        name = "agreement"
    elif found == OutputKind.CTC:
        words = (f"{start}a candidate passes when its decoded text is unchanged on the share of sequences needed for "
                 "its precision; the character error rate (edits over the original's characters) is given beside it")
        name = "sequences unchanged"
    elif found == OutputKind.EMBEDDING:
        words = (f"{start}a candidate passes when each sample's vector keeps its direction (cosine) and each "
                 "sample's nearest neighbour among the others stays the same one (what a search over these vectors "
                 "would return), on the share needed for its precision; the five nearest kept is given beside it")
        name = "nearest neighbour kept"
    else:
        words = (f"{start}a candidate passes when its relative error, the size of its difference from the original's "
                 "outputs over the size of those outputs, stays within the level for its precision")
        name = "relative error"
    levels: dict[str, str] = {}
    for c, f in judged:
        decided = f.decided_by
        needed, at_most = _NEEDED.search(decided), _AT_MOST.search(decided)
        parts = ([f"{name} at least {needed.group(1)}"] if needed else []) + (
            [f"{'mean error' if found != OutputKind.REGRESSION else name} at most {at_most.group(1)}"]
            if at_most else [])
        precision = c.precision or "fp32"
        if parts and len(parts) > levels.get(precision, "").count(" and ") + (precision in levels):
            levels[precision] = " and ".join(parts)
    if levels:
        words += " (levels here: " + "; ".join(f"{p}: {v}" for p, v in sorted(levels.items())) + ")"
    return words

"""Fidelity: how closely a candidate's outputs match the original model's on the same inputs.

What "closely" means depends on what the output is, so each output is first given a kind:

- classes: class scores (batch, classes): cosine similarity, then top-1 agreement (and top-5 where
  there are more than 5 classes), or accuracy where there are labels;
- dense: a map per pixel (batch, C, H, W) with H, W > 1 (segmentation, a detector's heat map): the
  thresholded map's foreground IoU (C == 1) or the per-pixel class agreement (C > 1), plus the mean
  error over the output's scale; never cosine, which a map that is near zero everywhere makes noise;
- sequence: class scores per position (batch, positions, classes): per-position class agreement, and whole
  sequences (each position's class) unchanged, with the edits between them;
- ctc: the same scores decoded as CTC (each position's class, repeats collapsed, the blank dropped): the share of
  decoded sequences (a text line, say) unchanged and the character error rate against the original's; only
  with `--output-kind NAME=ctc[:BLANK]`, since the shape cannot tell it from a plain sequence;
- embedding: vectors (batch, dims) whose rows have length 1: each sample's cosine, and whether each sample's
  nearest neighbours among the others stay the same (what a search over these vectors would return);
- regression: anything else: the error relative to the output's size.

The kind is read from the shape (and a normalised vector from its values) unless `--output-kind NAME=KIND` gives it.
A share (top-1 agreement, sequences unchanged, neighbours kept) carries its 95% interval over the samples it
counts; for a candidate that changes the arithmetic, the gate's level applies to that interval: below it wholly,
rejected; above it wholly, passed; across it, not established.

Class scores and regression outputs are also compared on the part that depends on the input: each
output minus the original's mean output over the compared samples. With random weights a deep
network's output is often nearly the same for every input, and the raw cosine then measures that
shared part, not the model. Where even that part is too small to test (`MIN_INPUT_SPREAD`), or a
map has no foreground on the inputs used, the check cannot judge: a candidate that changes the
arithmetic is then not established, never passed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from planner.errors import PlannerError
from planner.measure.intervals import paired_drop, samples_to_settle, wilson
from planner.plugins import Precision
from planner.results.values import Fidelity, OutputKind

if TYPE_CHECKING:
    from planner.models.loaded import LoadedModel


# How each kind's test reads in the report and the CLI, on first use.
KIND_WORDS: dict[str, str] = {
    OutputKind.CLASSES: "class scores",
    OutputKind.DENSE: "a dense map (a value per pixel)",
    OutputKind.SEQUENCE: "class scores per position (a sequence)",
    OutputKind.CTC: "class scores per position decoded as CTC text (repeats collapsed, blanks dropped)",
    OutputKind.EMBEDDING: "an embedding (a vector of length 1 per sample, compared by direction and neighbours)",
    OutputKind.REGRESSION: "values compared as numbers (regression)",
}


def parse_kind(value: OutputKind | str) -> tuple[OutputKind, int | None]:
    """(kind, CTC blank index) from a kind's text: 'dense', 'ctc' (blank 0), 'ctc:5'. Raises ValueError if unknown."""
    name, sep, blank = str(value).partition(":")
    kind = OutputKind(name.strip().lower())
    if kind is not OutputKind.CTC:
        if sep:
            raise ValueError(f"only ctc takes an index after ':' (the blank class), not {kind.value}")
        return kind, None
    if not sep:
        return kind, 0
    if not blank.strip().isdigit():
        raise ValueError(f"the blank class after 'ctc:' is a class index (0, 1, ...), not {blank.strip()!r}")
    return kind, int(blank)


def is_normalised(ref: np.ndarray) -> bool:
    """Whether (samples, dims) rows are unit vectors with signs: an embedding, not probabilities (which are >= 0)."""
    if ref.ndim != 2 or ref.shape[1] < 2 or not len(ref) or float(ref.min()) >= 0.0:
        return False
    norms = np.linalg.norm(ref, axis=1)
    return bool(np.all(np.abs(norms - 1.0) < 1e-3))


def infer_kind(shape: Sequence[int]) -> OutputKind:
    """The kind an output of this shape (batch axis first) most likely is.

    A 4-D output with both spatial sizes above 1 is a dense map; a 3-D one is scores per position;
    a 2-D one (or one whose other axes are all 1, as a 1x1 conv head leaves) with more than one
    score is class scores; anything else is compared as numbers.
    """
    dims = tuple(int(d) for d in shape)
    if len(dims) == 4 and dims[2] > 1 and dims[3] > 1:
        return OutputKind.DENSE
    if len(dims) == 3 and dims[1] > 1 and dims[2] > 1:
        return OutputKind.SEQUENCE
    rest = [d for d in dims[1:] if d != 1]
    if len(rest) == 1 and rest[0] > 1:
        return OutputKind.CLASSES
    return OutputKind.REGRESSION


def _shape_words(shape: Sequence[int]) -> str:
    return "(batch, " + ", ".join(str(int(d)) for d in shape[1:]) + ")" if len(shape) > 1 else "(batch,)"


def output_names(model: "LoadedModel") -> list[str]:
    """The model's output names, the compared one (the first) first.

    An ONNX file names its graph outputs; a torch module's output has no name, so it is "output".
    """
    path = getattr(model, "onnx_path", None)
    if getattr(model, "module", None) is None and path is not None:
        import onnx

        graph = onnx.load(str(path), load_external_data=False).graph
        names = [o.name for o in graph.output]
        if names:
            return names
    return ["output"]


def resolve_output_kind(specs: Sequence[str], names: Sequence[str]) -> tuple[str, str] | None:
    """(kind's text, how it was given) for the compared output from `--output-kind NAME=KIND` specs; None if none
    name it.

    NAME is the output's name or `0` (the first output, the one compared); KIND is a kind's name, and `ctc` may
    name its blank class (`ctc:5`; 0 by default): the text is what `parse_kind` reads. A malformed spec, an
    unknown kind or name, or a name of an output that is not compared is an error that lists the names.
    """
    if not specs:
        return None
    kinds = ", ".join(k.value for k in OutputKind)
    listing = ", ".join(f"{n} (compared)" if i == 0 else n for i, n in enumerate(names))
    chosen: tuple[str, str] | None = None
    for spec in specs:
        name, sep, kind = str(spec).partition("=")
        name, kind = name.strip(), kind.strip().lower()
        if not sep or not name or not kind:
            raise PlannerError(f"--output-kind {spec!r} is not NAME=KIND",
                               f"write it as NAME=KIND, e.g. {names[0]}=dense; KIND is one of {kinds}")
        try:
            parsed, blank = parse_kind(kind)
        except ValueError as exc:
            known = kind.partition(":")[0] in {k.value for k in OutputKind}
            raise PlannerError(f"--output-kind {spec!r}: {exc if known else f'unknown kind {kind!r}'}",
                               f"use one of {kinds}") from None
        if name not in names and name != "0":
            raise PlannerError(f"--output-kind {spec!r}: the model has no output named {name!r}",
                               f"its outputs are: {listing}; name one of them, or 0 for the first")
        if name not in ("0", names[0]):
            raise PlannerError(f"--output-kind {spec!r}: only the first output, {names[0]!r}, is compared "
                               "with the original, so a kind for another output would not be used",
                               f"name {names[0]} (or 0) instead; the outputs are: {listing}")
        text = parsed.value if blank is None else f"{parsed.value}:{blank}"
        chosen = (text, f"given with --output-kind {name}={kind}")
    return chosen


@dataclass(frozen=True)
class FidelityGate:
    """Minimum agreement a candidate must show to be ranked, per kind of output.

    Class scores: cosine similarity, then top-1 agreement (or accuracy with labels). A dense map:
    the thresholded map's agreement (`min_map`) and the mean error over the output's scale
    (`max_spread_error`). A sequence: per-position class agreement and whole sequences unchanged
    (`min_positions`); decoded CTC text: lines unchanged (`min_positions`). An embedding: each sample's
    cosine (`min_cosine`) and nearest neighbours kept (`min_top1`). Anything else: the error relative to
    the output's size (`max_relative_error`).

    With `interval_decides` (every precision but fp32, whose rewrites keep the arithmetic and are judged by
    how closely they reproduce it), a share's level applies to its 95% interval: a candidate is rejected only
    when the interval lies wholly below it, and where the interval straddles it `unsettled` says why the
    candidate is not established. fp32 is rejected when the estimate is below.
    """

    min_cosine: float
    min_top1: float
    max_accuracy_drop: float = 0.01
    min_map: float = 0.95
    max_spread_error: float = 0.05
    min_positions: float = 0.95
    max_relative_error: float = 0.05
    interval_decides: bool = True

    def check(self, fid: Fidelity) -> str:
        """'' if the candidate passes, else the reason it is rejected."""
        return self.judge(fid)[0]

    def judge(self, fid: Fidelity) -> tuple[str, str]:
        """(reason it is rejected or '', the test that decided, in plain words).

        The test follows the output's kind (see the module's docstring). Non-finite outputs always fail.
        Where the check cannot judge (`Fidelity.cannot_judge`), a candidate that passes what could be
        compared gets '' and a test that begins "cannot judge": the caller must not call it passed.
        """
        if not np.isfinite(fid.cosine) or not np.isfinite(fid.mean_abs_error):
            return "outputs are not finite (NaN or Inf)", "finite outputs"
        kind = fid.output_kind or OutputKind.CLASSES
        if kind == OutputKind.DENSE:
            return self._judge_dense(fid)
        if kind in (OutputKind.SEQUENCE, OutputKind.CTC):
            return self._judge_sequence(fid)
        if kind == OutputKind.EMBEDDING:
            return self._judge_embedding(fid)
        if kind == OutputKind.REGRESSION:
            return self._judge_regression(fid)
        return self._judge_classes(fid)

    def _judge_classes(self, fid: Fidelity) -> tuple[str, str]:
        """Accuracy decides when there are labels; else top-1 agreement over the samples where it is a
        test (the reference's margin above the candidate's noise); else cosine similarity alone."""
        cosine_test = f"cosine similarity {fid.cosine:.5f} (gate {self.min_cosine})"
        if fid.cosine < self.min_cosine:
            return f"cosine similarity {fid.cosine:.5f} < gate {self.min_cosine}", cosine_test
        if fid.accuracy is not None and fid.reference_accuracy is not None:
            return self._judge_accuracy(fid)
        if fid.cannot_judge:
            return "", cannot_judge_words(fid, cosine_test)
        top1_test = ""
        if fid.top1_agreement is not None:
            counted = fid.top1_samples if fid.top1_samples is not None else fid.samples
            top1_test = f"top-1 agreement on {counted} of {fid.samples} samples (gate {self.min_top1:.0%})"
            if self._below(fid.top1_agreement, fid.top1_high, self.min_top1):
                return (f"top-1 agreement {fid.top1_agreement:.1%}{interval_words(fid.top1_low, fid.top1_high)} "
                        f"< gate {self.min_top1:.0%} (over the {counted} of {fid.samples} samples whose top-1 margin "
                        "exceeds the candidate's error)"), top1_test
        elif fid.top1_samples == 0:
            # Every reference margin is within the candidate's own error: which class wins there is
            # numerical noise (typical of random weights), so top-1 cannot tell a good candidate from a bad one.
            top1_test = (f"{cosine_test}, relative error {relative_error(fid):.2g}: top-1 is no test here "
                         "(no sample's top-1 margin exceeds the candidate's error)")
        # The raw cosine mostly measures what every input's output shares; the ladder's levels were
        # set on trained models, whose outputs mostly depend on the input, so they apply to that part as is.
        centered_why, centered_test = self._centered_cosine(fid)
        if centered_why:
            return centered_why, centered_test
        return "", "; ".join(t for t in (top1_test or cosine_test, centered_test) if t)

    def _judge_accuracy(self, fid: Fidelity) -> tuple[str, str]:
        """The drop in accuracy against the budget, judged on its 95% interval: rejected only when the whole
        interval lies beyond the budget; passed only when it lies within; otherwise the test says so and
        `_accuracy_unsettled` leaves the candidate not established (files from before intervals: the estimate)."""
        assert fid.accuracy is not None and fid.reference_accuracy is not None
        drop, budget = fid.reference_accuracy - fid.accuracy, self.max_accuracy_drop
        low = fid.accuracy_drop_low if fid.accuracy_drop_low is not None else drop
        high = fid.accuracy_drop_high if fid.accuracy_drop_high is not None else drop
        interval = (f" (95% interval {low:+.1%} to {high:+.1%})" if fid.accuracy_drop_high is not None else "")
        test = (f"accuracy on {fid.samples} labelled samples: drop {drop:.2%}{interval} against the "
                f"{budget:.2%} budget")
        if low > budget:
            return (f"accuracy {fid.accuracy:.2%} is {drop:.2%} below the original's {fid.reference_accuracy:.2%}"
                    f"{interval}, beyond the {budget:.2%} budget"), test
        if high > budget:
            settle = samples_to_settle(drop, low, high, budget, fid.samples)
            return "", (f"{test}: the interval reaches past the budget, so the samples cannot tell"
                        + (f"; about {settle:,} labelled samples would settle it" if settle else ""))
        return "", test

    def _below(self, value: float, high: float | None, minimum: float) -> bool:
        """Whether a share fails its level: its interval's top (the estimate where intervals do not decide)."""
        return (high if self.interval_decides and high is not None else value) < minimum

    def shares(self, fid: Fidelity) -> list[tuple[str, float, float, float, int, float]]:
        """(what, estimate, low, high, count, level needed) for each share this kind's test judges by its interval."""
        kind = fid.output_kind or OutputKind.CLASSES
        found: list[tuple[str, float, float, float, int, float]] = []
        if kind == OutputKind.CLASSES and fid.accuracy is None and fid.top1_agreement is not None \
                and fid.top1_low is not None and fid.top1_high is not None:
            found.append(("top-1 agreement", fid.top1_agreement, fid.top1_low, fid.top1_high,
                          fid.top1_samples or fid.samples, self.min_top1))
        if kind in (OutputKind.SEQUENCE, OutputKind.CTC) and fid.sequences_unchanged is not None \
                and fid.sequences_low is not None and fid.sequences_high is not None:
            found.append((sequences_name(fid), fid.sequences_unchanged, fid.sequences_low, fid.sequences_high,
                          fid.sequences or 0, self.min_positions))
        if kind == OutputKind.EMBEDDING and fid.neighbour_kept is not None \
                and fid.neighbour_low is not None and fid.neighbour_high is not None:
            found.append(("nearest neighbour kept", fid.neighbour_kept, fid.neighbour_low, fid.neighbour_high,
                          fid.samples, self.min_top1))
        return found

    def unsettled(self, fid: Fidelity) -> tuple[str, int | None]:
        """Why a candidate that passed is not established, and about how many samples would settle it: a share
        whose interval reaches below its level (('', None) if none)."""
        if not self.interval_decides:
            return "", None
        for what, value, low, high, n, minimum in self.shares(fid):
            if low < minimum <= high:
                settle = samples_to_settle(value, low, high, minimum, n)
                return (f"{what} is {value:.1%} over {n} samples, and its 95% interval ({low:.1%} to {high:.1%}) "
                        f"reaches below the {minimum:.0%} needed"
                        + (f": about {settle:,} samples would settle it" if settle else "")), settle
        return "", None

    def _centered_cosine(self, fid: Fidelity) -> tuple[str, str]:
        """(reason or '', words) for the cosine of the part that depends on the input; ('', '') where not measured."""
        if fid.centered_cosine is None:
            return "", ""
        value = fid.centered_cosine
        words = f"cosine of {CENTERED_WORDS.format(n=fid.samples)} {value:.5f}"
        if not np.isfinite(value) or value < self.min_cosine:
            return f"{words} < gate {self.min_cosine}", f"{words} (gate {self.min_cosine})"
        return "", f"{words} (gate {self.min_cosine})"

    def _spread(self, fid: Fidelity) -> tuple[str, str]:
        """(reason or '', words) for the mean error over the output's scale."""
        value = fid.spread_error if fid.spread_error is not None else float("inf")
        where = ("on the probability scale" if fid.spread_basis == "probability"
                 else "relative to the output's spread (its standard deviation)")
        words = f"mean error {value:.2g} {where}"
        if value > self.max_spread_error:
            return f"{words} > gate {self.max_spread_error:g}", f"{words} (at most {self.max_spread_error:g})"
        return "", f"{words} (at most {self.max_spread_error:g})"

    def _judge_dense(self, fid: Fidelity) -> tuple[str, str]:
        """The thresholded (or per-pixel class) map's agreement where there is foreground, and the mean error."""
        spread_why, spread_words = self._spread(fid)
        counted = fid.agreement_counted
        if fid.map_iou is not None:
            threshold = f"{fid.map_threshold:g}" if fid.map_threshold is not None else "?"
            test = (f"agreement of the map thresholded at {threshold} (foreground IoU {fid.map_iou:.2f} over "
                    f"{fid.samples} samples, needed {self.min_map:.2f})")
            if fid.map_iou < self.min_map:
                return (f"the map thresholded at {threshold} agrees with the original's at foreground IoU "
                        f"{fid.map_iou:.2f} < gate {self.min_map:.2f} (over {fid.samples} samples)"), test
        elif fid.pixel_agreement is not None:
            test = (f"per-pixel class agreement {fid.pixel_agreement:.1%} on {counted} of {fid.agreement_total} "
                    f"pixels over {fid.samples} samples (needed {self.min_map:.0%})")
            if fid.pixel_agreement < self.min_map:
                return (f"per-pixel class agreement {fid.pixel_agreement:.1%} < gate {self.min_map:.0%} "
                        f"(over the {counted} pixels whose margin exceeds the candidate's error)"), test
        elif fid.map_threshold is not None:
            test = "no foreground on these inputs: the map's agreement is no test here"
        else:
            test = "no pixel's class margin exceeds the candidate's error: the map's agreement is no test here"
        if not spread_why and fid.cannot_judge:
            return "", cannot_judge_words(fid, spread_words)
        return spread_why, f"{test}; {spread_words}"

    def _judge_sequence(self, fid: Fidelity) -> tuple[str, str]:
        """Whole sequences unchanged (decoded text for ctc) on their interval, then per-position class agreement
        where positions' margins exceed the error; else the mean error."""
        whole = ""
        if fid.sequences_unchanged is not None:
            name = sequences_name(fid)
            interval = interval_words(fid.sequences_low, fid.sequences_high)
            edits = (f"{fid.edit_rate:.2%} of {'characters' if fid.output_kind == OutputKind.CTC else 'positions'} "
                     "edited" if fid.edit_rate is not None else "")
            whole = (f"{name} {fid.sequences_unchanged:.1%}{interval} over {fid.sequences} sequences"
                     f"{', ' + edits if edits else ''} (needed {self.min_positions:.0%})")
            if self._below(fid.sequences_unchanged, fid.sequences_high, self.min_positions):
                # The edits inside the brackets: the reason ends "< gate LEVEL", which the report words as
                # "below the LEVEL needed".
                told = interval_words(fid.sequences_low, fid.sequences_high, edits)
                return f"{name} {fid.sequences_unchanged:.1%}{told} < gate {self.min_positions:.0%}", whole
            if fid.output_kind == OutputKind.CTC:
                return ("", cannot_judge_words(fid, whole)) if fid.cannot_judge else ("", whole)
        if fid.position_agreement is not None:
            counted, total = fid.agreement_counted, fid.agreement_total
            test = (f"per-position class agreement {fid.position_agreement:.1%} on {counted} of {total} positions "
                    f"over {fid.samples} samples (needed {self.min_positions:.0%})")
            if fid.position_agreement < self.min_positions:
                return (f"per-position class agreement {fid.position_agreement:.1%} < gate "
                        f"{self.min_positions:.0%} (over the {counted} of {total} positions whose margin exceeds "
                        "the candidate's error)"), test
            test = f"{whole}; {test}" if whole else test
            if fid.cannot_judge:
                return "", cannot_judge_words(fid, test)
            return "", test
        # No position's winning class stands clear of the candidate's error: which one wins is noise,
        # so the values themselves are the test.
        why, words = self._spread(fid)
        if not why and fid.cannot_judge:
            return "", cannot_judge_words(fid, words)
        return why, f"per-position agreement is no test here (no position's margin exceeds the error); {words}"

    def _judge_embedding(self, fid: Fidelity) -> tuple[str, str]:
        """Each sample's cosine with the original's vector, then the nearest neighbour kept on its interval."""
        value = fid.sample_cosine if fid.sample_cosine is not None else fid.cosine
        lowest = f" (lowest {fid.sample_cosine_min:.4f})" if fid.sample_cosine_min is not None else ""
        cosine = f"cosine per sample {value:.4f}{lowest} over {fid.samples} samples (gate {self.min_cosine})"
        # What a search over the vectors would return is said whichever test decides: it is the trade-off to weigh.
        kept = ""
        if fid.neighbour_kept is not None:
            top5 = f", top-5 neighbours kept {fid.top5_kept:.1%}" if fid.top5_kept is not None else ""
            kept = (f"nearest neighbour kept for {fid.neighbour_kept:.1%}"
                    f"{interval_words(fid.neighbour_low, fid.neighbour_high)} of {fid.samples} samples{top5}")
        if value < self.min_cosine:
            return f"cosine per sample {value:.4f}{lowest} < gate {self.min_cosine}" + (f"; {kept}" if kept else ""), \
                cosine
        if not kept:
            return ("", cannot_judge_words(fid, cosine)) if fid.cannot_judge else ("", cosine)
        test = f"{cosine}; {kept} (needed {self.min_top1:.0%})"
        if self._below(fid.neighbour_kept or 0.0, fid.neighbour_high, self.min_top1):
            return f"{kept} < gate {self.min_top1:.0%}", test
        return ("", cannot_judge_words(fid, test)) if fid.cannot_judge else ("", test)

    def _judge_regression(self, fid: Fidelity) -> tuple[str, str]:
        """The error relative to the output's size."""
        value = fid.relative_error if fid.relative_error is not None else relative_error(fid)
        words = f"relative error ||a - b|| / ||a|| {value:.2g}"
        test = f"{words} (at most {self.max_relative_error:g})"
        if value > self.max_relative_error:
            return f"{words} > gate {self.max_relative_error:g}", test
        if fid.cannot_judge:
            return "", cannot_judge_words(fid, test)
        if fid.centered_error is None:
            return "", test
        # The same level, over the size of what the input changes rather than of the whole output.
        centered = f"error over the size of {CENTERED_WORDS.format(n=fid.samples)} {fid.centered_error:.2g}"
        centered_test = f"{centered} (at most {self.max_relative_error:g})"
        if not fid.centered_error <= self.max_relative_error:
            return f"{centered} > gate {self.max_relative_error:g}", centered_test
        return "", f"{test}; {centered_test}"


def interval_words(low: float | None, high: float | None, also: str = "") -> str:
    """' (95% interval 88.0% to 97.1%)' for a share's interval, with `also` after it inside the brackets
    (' (95% interval 88.0% to 97.1%; 1.2% of characters edited)'); '' where there is neither."""
    parts = ([f"95% interval {low:.1%} to {high:.1%}"] if low is not None and high is not None else []) + (
        [also] if also else [])
    return f" ({'; '.join(parts)})" if parts else ""


def sequences_name(fid: Fidelity) -> str:
    """What a whole-sequence share counts, in the task's words: decoded lines for ctc, sequences otherwise."""
    return "decoded sequences unchanged" if fid.output_kind == OutputKind.CTC else "whole sequences unchanged"


CENTERED_WORDS = "the part that depends on the input (outputs minus the original's mean output over the {n} samples)"
"""The input-dependent part in words, on its first use in a test's words."""

# Below this, the outputs' part that depends on the input (||ref - mean over samples|| / ||ref||) is too
# small to test. Basis: fp32 rounding. fp32 keeps 24 bits (6e-8 per operation); compounded over a deep
# network's layers and long sums, an fp32 rewrite of the same arithmetic (fusion, reordered sums,
# another runtime) differs from the original by up to ~1e-5 of the output's size. Below 1e-3, that
# rounding alone would exceed 1% of the input-dependent part, about the fp32 gate's own level (cosine
# 0.9999, ~1.4% relative error), so the test would measure rounding, not the candidate. The issue's
# cases: a compact random-weight CNN whose outputs vary by 4e-6 across inputs cannot be judged;
# random-weight resnet18 (2.7%) and mobilenet_v3_small (11%) are judged on that part.
MIN_INPUT_SPREAD = 1e-3

# Where the check cannot judge, an fp32 candidate that keeps the function still passes when its error is at
# most this share of the part that depends on the input. A candidate that ignores its input errs by about
# all of that part (1.0) or more; an fp32 rewrite's rounding (up to ~1e-5 of the output's size, see
# MIN_INPUT_SPREAD) stays under a tenth of it down to input-dependent parts of ~1e-4, and the fp32
# runtimes measured on demo:flat (outputs varying by 3.5e-6 of their size) erred by 2-4e-8 of it, about
# 1% of that part (ONNX Runtime, OpenVINO f32, PyTorch channels_last), while bf16 erred by 75 times it.
EXACT_SHARE = 0.1

CANNOT_JUDGE = "the model's outputs barely depend on its inputs (random weights?)"
"""How the check says the outputs are nearly the same for every input (the words begin a `cannot_judge`)."""


def cannot_judge_words(fid: Fidelity, compared: str) -> str:
    """The test words where the check cannot judge: why, then what could be compared (it passed)."""
    return f"cannot judge: {fid.cannot_judge}; what could be compared passed: {compared}"


def settle_words(generated_inputs: bool) -> str:
    """What data would settle a check that cannot judge."""
    if generated_inputs:
        return ("to settle it, plan with --val-data DIR holding real inputs (with labels, accuracy decides), "
                "or with the model's trained weights")
    return "to settle it, plan with the model's trained weights, or with labelled --val-data (accuracy then decides)"


def relative_error(fid: Fidelity) -> float:
    """The candidate's error relative to the output's size, from the cosine similarity (0 when identical).

    For outputs of similar norm, ||a - b|| / ||a|| = sqrt(2 (1 - cosine)).
    """
    return float(np.sqrt(max(0.0, 2.0 * (1.0 - fid.cosine)))) if np.isfinite(fid.cosine) else float("inf")


# Why these. Class scores: fp32 rewrites (fusion, thread changes) should be numerically ~exact;
# bf16 keeps 8 mantissa bits (relative error ~0.4% per op); INT8 typically keeps cosine > 0.99 on
# CNNs; ternary weights change the function far more and are only useful with retraining.
# The other kinds use the same ladder in their own terms. A map's foreground IoU or a position's
# class: rounding moves only values near the threshold (or near a tie), and those are not counted,
# so an fp32 rewrite agrees ~everywhere (0.99), fp16/bf16 lose a few boundary pixels (0.97/0.95),
# INT8 a few more (0.90); ternary keeps the map's gist at best (0.5). The mean error over the
# output's scale: fp32 within 1% (the cosine 0.9999 gate allows ~1.4% relative error), fp16 2%,
# bf16 5% (its 8 mantissa bits compound over layers), INT8 10% (256 levels over each tensor's range,
# also compounded), ternary 40%. The relative error of a regression output follows the same ladder.
DEFAULT_GATES: dict[Precision, FidelityGate] = {
    Precision.FP32: FidelityGate(min_cosine=0.9999, min_top1=0.99, min_map=0.99, max_spread_error=0.01,
                                 min_positions=0.99, max_relative_error=0.01, interval_decides=False),
    Precision.FP16: FidelityGate(min_cosine=0.999, min_top1=0.95, min_map=0.97, max_spread_error=0.02,
                                 min_positions=0.97, max_relative_error=0.02),
    Precision.BF16: FidelityGate(min_cosine=0.995, min_top1=0.90, min_map=0.95, max_spread_error=0.05,
                                 min_positions=0.95, max_relative_error=0.05),
    Precision.INT8: FidelityGate(min_cosine=0.99, min_top1=0.90, min_map=0.90, max_spread_error=0.10,
                                 min_positions=0.90, max_relative_error=0.10),
    Precision.TERNARY: FidelityGate(min_cosine=0.90, min_top1=0.50, min_map=0.50, max_spread_error=0.40,
                                    min_positions=0.50, max_relative_error=0.40),
}


def _accuracy_unsettled(fid: Fidelity, gate: FidelityGate, why: str) -> Fidelity:
    """A candidate that accuracy on labels did not reject, but whose drop's interval reaches past the budget, is
    not established: its fidelity says why and how many labelled samples would settle it."""
    if why or fid.accuracy is None or fid.reference_accuracy is None or fid.accuracy_drop_high is None \
            or fid.accuracy_drop_low is None or fid.accuracy_drop_high <= gate.max_accuracy_drop:
        return fid
    drop = fid.reference_accuracy - fid.accuracy
    settle = samples_to_settle(drop, fid.accuracy_drop_low, fid.accuracy_drop_high, gate.max_accuracy_drop,
                               fid.samples)
    return replace(fid, settle_samples=settle, cannot_judge=(
        f"its accuracy drop on {fid.samples} labelled samples is {drop:.2%}, and the 95% interval "
        f"({fid.accuracy_drop_low:+.1%} to {fid.accuracy_drop_high:+.1%}) reaches past the "
        f"{gate.max_accuracy_drop:.2%} budget"
        + (f": about {settle:,} labelled samples would settle it" if settle else "")))


BROKEN_COSINE = 0.5
"""Below this raw cosine (all outputs against the original's, on the plan's own samples), INT8 quantization broke
the model rather than cost it accuracy: a quantized model that merely misses the INT8 gate (0.99) still points
its outputs the same way, while one at 0.5 or below has lost most of what the original computes."""


def broken_quantization(fid: Fidelity | None) -> str:
    """Why a model that INT8 quantization built is a failed build, not a candidate that missed the fidelity gate:
    its raw cosine to the original is below `BROKEN_COSINE` ('' when it is not, or was not measured).

    The pipeline asks this of int8 candidates that only reduce precision (built by quantization), not of a
    change to the function that happens to run in int8.
    """
    if fid is None or not np.isfinite(fid.cosine) or fid.cosine >= BROKEN_COSINE:
        return ""
    return (f"the quantized model's outputs no longer resemble the original's (cosine {fid.cosine:.2f} over "
            f"{fid.samples} samples, below {BROKEN_COSINE:g}): INT8 quantization broke this model rather than "
            "costing it some accuracy. The likely cause is activations whose range one INT8 scale per tensor cannot "
            "hold: a few outlier channels, as in a transformer's LayerNorm inputs and residual sums, or softmax "
            "scores. A "
            "transformer-aware recipe (only the matrix products in INT8; LayerNorm, Softmax and the residual Adds in "
            "float, as the plan quantizes a graph where it finds attention), dynamic INT8 or quantization-aware "
            "training may keep it")


def judge_outputs(reference: Sequence[np.ndarray], outputs: Sequence[np.ndarray], *,
                  labels: Sequence[np.ndarray] | None = None, precision: Precision | str = Precision.FP32,
                  accuracy_budget: float | None = None, changes_function: bool = False,
                  kind: OutputKind | str | None = None, kind_basis: str = "") -> tuple[str, str, Fidelity | None]:
    """The plan's one fidelity rule: (why the outputs are rejected or '', the test that decided, the fidelity).

    The precision's gate, with the user's accuracy budget in place of its own where one is given. A
    candidate that changes the function by design (pruning, low rank, fine-tuned) is judged on accuracy
    alone where there are labels: its outputs cannot match the original's to the fp32 cosine.
    Outputs of another shape than the reference's are rejected, with no fidelity.
    Where the check cannot judge (the outputs barely depend on the inputs, a map without foreground), a
    candidate that passes what could be compared keeps `fid.cannot_judge` (why '', the test "cannot
    judge: ..."): it is not established. Only an fp32 candidate that keeps the function and reproduces
    even the small input-dependent part at the fp32 level is judged exact (its `cannot_judge` cleared).
    Measured candidates (the pipeline) and plugins choosing a setting (through `PlanGate`) both judge here.
    """
    try:
        fid = compare(reference, outputs, labels=labels, kind=kind, kind_basis=kind_basis)
    except ValueError as exc:
        return f"outputs differ in shape: {exc}", "", None
    gate = DEFAULT_GATES[Precision(precision)]
    if accuracy_budget is not None:
        gate = replace(gate, max_accuracy_drop=accuracy_budget)
    if changes_function and fid.accuracy is not None and fid.reference_accuracy is not None:
        gate = replace(gate, min_cosine=-1.0)
    if changes_function:
        gate = replace(gate, interval_decides=True)
    why, decided_by = gate.judge(fid)
    fid = _accuracy_unsettled(fid, gate, why)
    unsettled, settle = gate.unsettled(fid) if not why and not fid.cannot_judge else ("", None)
    if unsettled:
        fid = replace(fid, cannot_judge=unsettled, settle_samples=settle)
        decided_by = f"{decided_by}: the samples cannot tell ({unsettled})"
    if (fid.cannot_judge and not why and Precision(precision) == Precision.FP32 and not changes_function
            and fid.centered_error is not None and fid.centered_error <= EXACT_SHARE):
        # The same arithmetic at the same precision, reproducing even the tiny part that depends on the
        # input: exact on these inputs, to rounding. A candidate that ignored or mangled its input could not.
        part = CENTERED_WORDS.format(n=fid.samples)
        exact = f"exact to rounding: its error is {fid.centered_error:.2g} of {part} (at most {EXACT_SHARE:g})"
        if fid.accuracy is not None and fid.reference_accuracy is not None:
            # Too few labels to bound the drop by sampling, but the same arithmetic answers as the original does.
            decided_by = (f"accuracy on {fid.samples} labelled samples: drop "
                          f"{fid.reference_accuracy - fid.accuracy:.2%}, and {exact}, so the original's accuracy "
                          "holds on any input")
        else:
            decided_by = f"{exact}, though {fid.cannot_judge}"
        fid = replace(fid, cannot_judge="", settle_samples=None, exact=True)
    return why, decided_by, fid


def compare(reference: Sequence[np.ndarray], outputs: Sequence[np.ndarray], *,
            labels: Sequence[np.ndarray] | None = None, kind: OutputKind | str | None = None,
            kind_basis: str = "") -> Fidelity:
    """Compare outputs batch by batch with the reference ones (and with labels, if given).

    `kind` says what the output is (read from its shape when None, and a normalised vector from its values);
    labels count only for class scores.
    """
    if len(reference) != len(outputs):
        raise ValueError(f"{len(outputs)} output batches for {len(reference)} reference batches")
    ref_full = np.concatenate([np.asarray(r, dtype=np.float64) for r in reference]) if reference else np.zeros((0, 1))
    out_full = np.concatenate([np.asarray(o, dtype=np.float64) for o in outputs]) if outputs else np.zeros((0, 1))
    if ref_full.shape != out_full.shape:
        raise ValueError(f"output shape {out_full.shape} differs from the reference's {ref_full.shape}")
    blank: int | None = None
    if kind is None:
        output_kind = infer_kind(ref_full.shape)
        basis = kind_basis or f"read from the output's shape {_shape_words(ref_full.shape)}"
        if output_kind is OutputKind.CLASSES and is_normalised(ref_full.reshape(len(ref_full), -1)):
            output_kind = OutputKind.EMBEDDING
            basis = (f"read from the output: every sample's vector {_shape_words(ref_full.shape)} has length 1 "
                     "(--output-kind NAME=classes if these are class scores)")
    else:
        output_kind, blank = parse_kind(kind)
        basis = kind_basis or "given"
    ref = ref_full.reshape(len(ref_full), -1)
    out = out_full.reshape(len(out_full), -1)
    a, b = ref.ravel(), out.ravel()
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    cosine = float(a @ b / denom) if denom > 0 else (1.0 if np.array_equal(a, b) else 0.0)
    diff = np.abs(a - b)
    mean_error = float(diff.mean()) if diff.size else 0.0
    norm = float(np.linalg.norm(a))
    gap = float(np.linalg.norm(a - b))
    rel = gap / norm if norm > 0 else (0.0 if gap == 0 else float("inf"))
    fields: dict[str, Any] = {}
    if output_kind is OutputKind.CLASSES:
        fields = _classes(ref, out, mean_error, labels)
    elif output_kind is OutputKind.DENSE:
        fields = _dense(ref_full, out_full, mean_error, typical_error(diff))
    elif output_kind is OutputKind.SEQUENCE:
        fields = _sequence(ref_full, out_full, mean_error, typical_error(diff))
    elif output_kind is OutputKind.CTC:
        fields = _ctc(ref_full, out_full, mean_error, blank or 0)
    elif output_kind is OutputKind.EMBEDDING:
        fields = _embedding(ref, out)
    if output_kind not in (OutputKind.CLASSES, OutputKind.EMBEDDING) and "spread_error" not in fields:
        fields.update(_spread_error(a, mean_error, probability=False))
    fields.update(_centered(ref, out))
    if "accuracy" not in fields:  # with labels, accuracy on them decides whatever the outputs' spread
        fields["cannot_judge"] = _cannot_judge(fields, norm, len(ref))
    return Fidelity(cosine=cosine, max_abs_error=float(diff.max(initial=0.0)), mean_abs_error=mean_error,
                    top1_agreement=fields.pop("top1_agreement", None), samples=int(ref.shape[0]),
                    output_kind=output_kind.value, kind_basis=basis, relative_error=rel, **fields)


def _centered(ref: np.ndarray, out: np.ndarray) -> dict[str, Any]:
    """The part of the (samples, values) outputs that depends on the input, and the candidate on it.

    Both are centered on the reference's mean over the samples (not each on its own), so a candidate
    whose outputs are offset or that ignores its input is seen. Needs two samples or more. (A package's check,
    planner.deploy.check.centered, holds the same lines: it runs without the planner, so it cannot import them.)
    """
    if len(ref) < 2:
        return {}
    mean = ref.mean(axis=0)
    ref_c, out_c = (ref - mean).ravel(), (out - mean).ravel()
    size, own = float(np.linalg.norm(ref_c)), float(np.linalg.norm(out_c))
    total, gap = float(np.linalg.norm(ref)), float(np.linalg.norm(out - ref))
    return {"input_spread": size / total if total > 0 else 0.0,
            "centered_cosine": float(ref_c @ out_c / (size * own)) if size > 0 and own > 0 else float(size == own),
            "centered_error": gap / size if size > 0 else (0.0 if gap == 0 else float("inf"))}


def _cannot_judge(fields: dict[str, Any], norm: float, samples: int) -> str:
    """Why no test of these outputs can tell a good candidate from a bad one; '' when one can."""
    if samples and norm == 0:
        return "the model's outputs are zero on every input used"
    if fields.get("map_threshold") is not None and fields.get("map_iou") is None:
        return ("the map has no foreground on these inputs (near zero everywhere, as a detector's map is on "
                "inputs with nothing to find), so there is nothing to find or miss")
    spread = fields.get("input_spread")
    if spread is not None and spread < MIN_INPUT_SPREAD:
        return (f"{CANNOT_JUDGE}: across the {samples} samples its outputs vary by {spread:.2g} of their size, "
                f"below the {MIN_INPUT_SPREAD:g} a test of the part that depends on the input needs "
                "(fp32 rounding alone would be over 1% of that part)")
    return ""


def _classes(ref: np.ndarray, out: np.ndarray, mean_error: float,
             labels: Sequence[np.ndarray] | None) -> dict[str, Any]:
    """Top-1 (margin-aware), top-5 and accuracy for (samples, classes) scores."""
    fields: dict[str, Any] = {}
    if ref.shape[1] > 1:
        agree = ref.argmax(axis=1) == out.argmax(axis=1)
        fields["top1_agreement_all"] = float(np.mean(agree))
        decisive = top1_decisive(ref, mean_error)
        counted = int(decisive.sum())
        fields["top1_samples"] = counted
        fields["top1_agreement"] = float(np.mean(agree[decisive])) if counted else None
        if counted:
            fields["top1_low"], fields["top1_high"] = wilson(int(agree[decisive].sum()), counted)
    if ref.shape[1] > 5:
        top5 = np.argsort(out, axis=1)[:, -5:]
        fields["top5_agreement"] = float(np.mean((top5 == ref.argmax(axis=1)[:, None]).any(axis=1)))
    if labels is not None:
        truth = np.concatenate([np.asarray(lab).reshape(-1) for lab in labels])
        if len(truth) != ref.shape[0]:
            raise ValueError(f"{len(truth)} labels for {ref.shape[0]} outputs")
        right, ref_right = out.argmax(axis=1) == truth, ref.argmax(axis=1) == truth
        fields["accuracy"] = float(np.mean(right))
        fields["accuracy_low"], fields["accuracy_high"] = wilson(int(right.sum()), len(truth))
        fields["reference_accuracy"] = float(np.mean(ref_right))
        _, fields["accuracy_drop_low"], fields["accuracy_drop_high"] = paired_drop(ref_right, right)
    return fields


def _spread_error(ref: np.ndarray, mean_error: float, *, probability: bool) -> dict[str, Any]:
    """The mean error over the output's scale: 1 for a probability map, else the reference's spread.

    A probability map is judged on the probability scale because what matters is where it crosses
    0.5: a map that is near zero everywhere on generated inputs has a tiny spread, and an error far
    below any threshold would read as large against it.
    """
    if probability:
        return {"spread_error": mean_error, "spread_basis": "probability"}
    std = float(ref.std()) if ref.size else 0.0
    value = mean_error / std if std > 0 else (0.0 if mean_error == 0 else float("inf"))
    return {"spread_error": value, "spread_basis": "spread"}


def typical_error(diff: np.ndarray) -> float:
    """The candidate's typical error on one value: the median of |a - b|.

    A map's or a sequence's margins are measured against this rather than the mean, because a real
    error confined to some pixels or positions (a region the candidate loses) would raise the mean
    enough to excuse those very pixels from the test.
    """
    return float(np.median(diff)) if diff.size else 0.0


def _dense(ref: np.ndarray, out: np.ndarray, mean_error: float, noise: float) -> dict[str, Any]:
    """Agreement of a (batch, C, H, W) map: foreground IoU at a threshold (C == 1) or per-pixel class (C > 1).

    Pixels whose reference value lies within the candidate's typical error (`noise`) of the
    threshold (or whose top two classes do) are not counted, as top-1 does not count near-tied
    samples: which side they fall on is numerical noise, and a handful of them would swing the IoU
    of a small foreground.
    """
    if ref.ndim != 4:
        raise ValueError(f"a dense map is (batch, channels, height, width); this output is {ref.shape}")
    probability = bool(ref.size) and float(ref.min()) >= 0.0 and float(ref.max()) <= 1.0
    fields = _spread_error(ref.ravel(), mean_error, probability=probability)
    if ref.shape[1] == 1:
        threshold = 0.5 if probability else 0.0
        decisive = np.abs(ref - threshold) > MARGIN_NOISE_FACTOR * noise
        fg_ref, fg_out = (ref > threshold) & decisive, (out > threshold) & decisive
        union = int((fg_ref | fg_out).sum())
        fields.update(map_threshold=threshold, agreement_counted=int(decisive.sum()), agreement_total=int(ref.size),
                      map_iou=float((fg_ref & fg_out).sum() / union) if union else None)
        return fields
    # Several channels: the class of each pixel; mean per-pixel agreement rather than mean IoU per
    # class, because a class that covers a few pixels on these inputs would swing a mean IoU.
    scores_ref = np.moveaxis(ref, 1, -1).reshape(-1, ref.shape[1])
    scores_out = np.moveaxis(out, 1, -1).reshape(-1, ref.shape[1])
    decisive = top1_decisive(scores_ref, noise)
    counted = int(decisive.sum())
    agree = scores_ref.argmax(axis=1) == scores_out.argmax(axis=1)
    fields.update(agreement_counted=counted, agreement_total=int(len(scores_ref)),
                  pixel_agreement=float(np.mean(agree[decisive])) if counted else None)
    return fields


def _sequence(ref: np.ndarray, out: np.ndarray, mean_error: float, noise: float) -> dict[str, Any]:
    """Per-position class agreement of (batch, positions, classes) scores, over the positions whose
    top-two margin exceeds the candidate's typical error (`noise`)."""
    if ref.ndim != 3:
        raise ValueError(f"a sequence is (batch, positions, classes); this output is {ref.shape}")
    scores_ref = ref.reshape(-1, ref.shape[2])
    scores_out = out.reshape(-1, ref.shape[2])
    decisive = top1_decisive(scores_ref, noise) if ref.shape[2] > 1 else np.zeros(len(scores_ref), bool)
    counted = int(decisive.sum())
    agree = scores_ref.argmax(axis=1) == scores_out.argmax(axis=1)
    fields = _spread_error(ref.ravel(), mean_error, probability=False)
    fields.update(agreement_counted=counted, agreement_total=int(len(scores_ref)),
                  position_agreement=float(np.mean(agree[decisive])) if counted else None)
    # Whole sequences, over those whose every position is clear of the error (a near tie anywhere would make
    # the sequence's fate rounding, as it does a position's).
    clear = decisive.reshape(ref.shape[0], ref.shape[1]).all(axis=1)
    fields.update(_whole_sequences(ref.argmax(axis=2)[clear], out.argmax(axis=2)[clear], collapse=False))
    return fields


def _ctc(ref: np.ndarray, out: np.ndarray, mean_error: float, blank: int) -> dict[str, Any]:
    """Decoded CTC sequences of (batch, positions, classes) scores: each sample's text unchanged, and the character
    error rate. Every sample counts, as a user checking lines of text would count them."""
    if ref.ndim != 3:
        raise ValueError(f"a CTC output is (batch, positions, classes); this output is {ref.shape}")
    if not 0 <= blank < ref.shape[2]:
        raise ValueError(f"the CTC blank class {blank} is not among the output's {ref.shape[2]} classes")
    fields = _spread_error(ref.ravel(), mean_error, probability=False)
    fields.update(_whole_sequences(ref.argmax(axis=2), out.argmax(axis=2), collapse=True, blank=blank))
    fields["ctc_blank"] = blank
    return fields


def ctc_decode(classes: np.ndarray, blank: int = 0) -> list[int]:
    """Greedy CTC decoding of one sequence of per-position classes: repeats collapsed, then the blank dropped."""
    seq = np.asarray(classes).reshape(-1)
    if not seq.size:
        return []
    keep = np.concatenate([[True], seq[1:] != seq[:-1]]) & (seq != blank)
    return [int(c) for c in seq[keep]]


def _whole_sequences(ref_classes: np.ndarray, out_classes: np.ndarray, *, collapse: bool,
                     blank: int = 0) -> dict[str, Any]:
    """Sequences unchanged (share and 95% interval) and edits per reference symbol, over (samples, positions)
    classes."""
    from rapidfuzz.distance import Levenshtein

    if not len(ref_classes):
        return {}
    if collapse:
        refs = [ctc_decode(r, blank) for r in ref_classes]
        outs = [ctc_decode(o, blank) for o in out_classes]
    else:
        refs = [[int(c) for c in r] for r in ref_classes]
        outs = [[int(c) for c in o] for o in out_classes]
    same = sum(r == o for r, o in zip(refs, outs))
    length = sum(len(r) for r in refs)
    edits = sum(Levenshtein.distance(r, o) for r, o in zip(refs, outs))
    low, high = wilson(same, len(refs))
    return {"sequences": len(refs), "sequences_unchanged": same / len(refs), "sequences_low": low,
            "sequences_high": high, "edit_rate": edits / length if length else (0.0 if not edits else None)}


def _embedding(ref: np.ndarray, out: np.ndarray) -> dict[str, Any]:
    """(samples, dims) vectors: each sample's cosine, and its nearest neighbours among the other samples kept.

    The neighbours are what a search over these vectors returns, so they are judged as a search would see them:
    the original's nearest (and five nearest) of each sample, against the candidate's among its own vectors.
    """
    def unit(x: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return x / np.where(norms > 0, norms, 1.0)

    a, b = unit(ref), unit(out)
    per_sample = np.sum(a * b, axis=1)
    fields: dict[str, Any] = {"sample_cosine": float(per_sample.mean()), "sample_cosine_min": float(per_sample.min())}
    n = len(a)
    if n < 3:  # with two samples each is the other's nearest whatever the candidate does
        return fields
    sim_ref, sim_out = a @ a.T, b @ b.T
    np.fill_diagonal(sim_ref, -np.inf)
    np.fill_diagonal(sim_out, -np.inf)
    kept = sim_ref.argmax(axis=1) == sim_out.argmax(axis=1)
    low, high = wilson(int(kept.sum()), n)
    fields.update(neighbour_kept=float(kept.mean()), neighbour_low=low, neighbour_high=high)
    if n > 6:
        top_ref, top_out = np.argsort(-sim_ref, axis=1)[:, :5], np.argsort(-sim_out, axis=1)[:, :5]
        fields["top5_kept"] = float(np.mean([len(set(r) & set(o)) / 5 for r, o in zip(top_ref, top_out)]))
    return fields


# A sample's top-1 is a test only when the reference's margin exceeds this many times the
# candidate's mean absolute error. The error is the candidate's typical one, not that sample's: a
# flip needs an error of at least half the margin on that very sample, so a per-sample threshold
# would exclude exactly the samples a real error flips.
MARGIN_NOISE_FACTOR = 4.0


def top1_decisive(ref: np.ndarray, mean_abs_error: float) -> np.ndarray:
    """Which rows of the (samples, classes) reference have a top-1 margin above the candidate's noise."""
    top2 = np.sort(ref, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    return margin > MARGIN_NOISE_FACTOR * mean_abs_error


# The rank a kind's test needs: a dense map's channels and pixels, a sequence's positions and classes.
_RANKS = {OutputKind.DENSE: (4, "(batch, channels, height, width)"),
          OutputKind.SEQUENCE: (3, "(batch, positions, classes)"),
          OutputKind.CTC: (3, "(batch, positions, classes)")}


def kind_of_model(specs: Sequence[str], model: "LoadedModel") -> tuple[str, str] | None:
    """The compared output's kind (its text, as `parse_kind` reads it) from `--output-kind` specs checked against
    the model's outputs, and how it was given; None if none.

    A kind whose test needs a rank the output lacks (dense on a 2-D output, ctc on anything but per-position
    scores), or a CTC blank beyond the output's classes, is an error now, not a rejection of every candidate later.
    """
    resolved = resolve_output_kind(specs, output_names(model)) if specs else None
    shape = tuple(getattr(model, "output_shape", ()) or ())
    if resolved is None or not shape:
        return resolved
    kind, blank = parse_kind(resolved[0])
    given = resolved[1].removeprefix("given with ")
    if kind in _RANKS and len(shape) != _RANKS[kind][0]:
        raise PlannerError(f"{given}: a {kind.value} output is {_RANKS[kind][1]}, and this one is "
                           f"{_shape_words(shape)}",
                           f"use classes or regression, or leave the kind to the shape "
                           f"(it reads {infer_kind(shape).value})")
    if blank is not None and int(shape[-1]) > 0 and blank >= int(shape[-1]):
        raise PlannerError(f"{given}: the blank class {blank} is not among the output's {int(shape[-1])} classes "
                           f"{_shape_words(shape)}",
                           f"name the class the model's CTC training used as blank, 0 to {int(shape[-1]) - 1} "
                           "(often 0, or the last)")
    return resolved

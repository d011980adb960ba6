"""Decoded sequences: a CTC output judged on the text it reads (lines unchanged, character error rate)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from planner.errors import PlannerError
from planner.measure.fidelity import DEFAULT_GATES, compare, ctc_decode, judge_outputs, parse_kind, resolve_output_kind
from planner.plugins import Precision
from planner.results.values import OutputKind

BLANK = 0
CLASSES = 6  # blank and five characters, 1..5


class Reader(torch.nn.Module):
    """A CTC 'recogniser' whose right answer is known: it scores each position's one-hot input as that class,
    except that `misread` (a character) is read as `as_` (a candidate that lost one character's weights)."""

    def __init__(self, misread: int | None = None, as_: int | None = None) -> None:
        super().__init__()
        weight = torch.eye(CLASSES) * 5.0
        if misread is not None and as_ is not None:
            weight[misread] = 0.0
            weight[misread, as_] = 5.0
        self.proj = torch.nn.Linear(CLASSES, CLASSES, bias=False)
        self.proj.weight.data = weight.T.contiguous()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


def _lines(texts: list[list[int]], positions: int = 12) -> torch.Tensor:
    """One-hot (batch, positions, classes) inputs spelling each text CTC-style: each character twice, a blank
    between repeated characters, blanks to pad."""
    batch = torch.zeros(len(texts), positions, CLASSES)
    for b, text in enumerate(texts):
        seq: list[int] = []
        for i, ch in enumerate(text):
            if i and text[i - 1] == ch:
                seq.append(BLANK)
            seq += [ch, ch]
        seq += [BLANK] * (positions - len(seq))
        batch[b, torch.arange(positions), torch.tensor(seq[:positions])] = 1.0
    return batch


TEXTS = [[1, 2, 3], [3, 3, 4], [5, 4], [1, 1, 2], [2, 5, 1], [4, 4, 4], [1, 2], [5, 5]]


def test_ctc_decode_collapses_repeats_and_drops_blanks():
    assert ctc_decode(np.array([0, 1, 1, 0, 1, 2, 2, 0, 0])) == [1, 1, 2]
    assert ctc_decode(np.array([3, 3, 0, 3]), blank=3) == [0]
    assert ctc_decode(np.array([], dtype=int)) == []


def test_the_decoded_text_of_a_known_reader_is_judged_by_lines_and_characters():
    inputs = _lines(TEXTS)
    with torch.no_grad():
        ref = Reader()(inputs).numpy()
        out = Reader(misread=3, as_=2)(inputs).numpy()  # every 3 reads as 2
    assert [ctc_decode(r.argmax(axis=1)) for r in ref] == TEXTS  # the original reads the texts back
    fid = compare([ref], [out], kind="ctc")
    assert fid.output_kind == OutputKind.CTC and fid.ctc_blank == BLANK and fid.sequences == 8
    # Lines with a 3: [1,2,3] and [3,3,4]; 2 of 8 change. Characters: 1 + 2 of the 21 in the texts. ([3,3,4] reads
    # [2,2,4], two substitutions.)
    assert fid.sequences_unchanged == pytest.approx(6 / 8)
    assert fid.edit_rate == pytest.approx(3 / sum(len(t) for t in TEXTS))
    assert fid.sequences_low is not None and fid.sequences_high is not None
    assert fid.sequences_low < 0.75 < fid.sequences_high
    # 8 lines cannot tell 75% from the 90% INT8 needs: not established, and how many lines would settle it.
    why, decided_by, judged = judge_outputs([ref], [out], precision="int8", kind="ctc")
    assert why == "" and judged is not None and "samples would settle it" in judged.cannot_judge
    # 64 lines can: the whole interval lies below 90%, in the task's words.
    many = _lines(TEXTS * 8)
    with torch.no_grad():
        ref, out = Reader()(many).numpy(), Reader(misread=3, as_=2)(many).numpy()
    why, decided_by, judged = judge_outputs([ref], [out], precision="int8", kind="ctc")
    assert why == ("decoded sequences unchanged 75.0% (95% interval 63.2% to 84.0%; 14.29% of characters edited) "
                   "< gate 90%")
    assert "14.29% of characters edited" in why
    assert judged is not None and judged.sequences == 64


def test_the_same_text_passes_and_few_lines_leave_it_not_established():
    inputs = _lines(TEXTS)
    with torch.no_grad():
        ref = Reader()(inputs).numpy()
    noisy = ref + np.random.default_rng(0).normal(0, 0.05, size=ref.shape)  # scores move, the text does not
    why, decided_by, fid = judge_outputs([ref], [noisy], precision="fp32", kind="ctc")
    assert fid is not None and fid.sequences_unchanged == 1.0 and fid.edit_rate == 0.0
    # fp32 rewrites are judged on how closely they reproduce the arithmetic: the text agrees, so it passes.
    assert why == "" and decided_by.startswith("decoded sequences unchanged 100.0%") and not fid.cannot_judge
    why, decided_by, fid = judge_outputs([ref], [noisy], precision="int8", kind="ctc")
    # INT8 needs 90% of lines unchanged; 8 lines out of 8 give an interval reaching down to about 68%.
    assert why == "" and fid is not None and fid.cannot_judge.startswith("decoded sequences unchanged is 100.0% "
                                                                           "over 8 samples")
    assert "samples would settle it" in fid.cannot_judge


def test_the_blank_index_is_read_from_the_kind():
    assert parse_kind("ctc") == (OutputKind.CTC, 0)
    assert parse_kind("ctc:5") == (OutputKind.CTC, 5)
    assert parse_kind("dense") == (OutputKind.DENSE, None)
    with pytest.raises(ValueError):
        parse_kind("dense:2")
    with pytest.raises(ValueError):
        parse_kind("ctc:last")
    inputs = _lines([[1, 2], [2, 2]])
    with torch.no_grad():
        ref = Reader()(inputs).numpy()
    # With class 1 as the blank, the first line reads [0, 2, 0]... wherever blanks pad: the blank decides what is text.
    assert compare([ref], [ref], kind="ctc:1").ctc_blank == 1
    with pytest.raises(ValueError, match="blank class 9"):
        compare([ref], [ref], kind="ctc:9")


def test_output_kind_specs_take_ctc_with_its_blank():
    names = ["logits", "features"]
    assert resolve_output_kind(["logits=ctc"], names) == ("ctc:0", "given with --output-kind logits=ctc")
    assert resolve_output_kind(["0=CTC:7"], names) == ("ctc:7", "given with --output-kind 0=ctc:7")
    with pytest.raises(PlannerError, match="only ctc takes an index"):
        resolve_output_kind(["logits=dense:1"], names)
    with pytest.raises(PlannerError, match="unknown kind 'text'"):
        resolve_output_kind(["logits=text"], names)


def test_ctc_gates_use_the_positions_ladder():
    assert DEFAULT_GATES[Precision.INT8].min_positions == 0.90
    assert not DEFAULT_GATES[Precision.FP32].interval_decides and DEFAULT_GATES[Precision.INT8].interval_decides

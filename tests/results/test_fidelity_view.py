"""Fidelity in words: every share with its interval and sample count, in the output kind's own terms."""

from __future__ import annotations

import numpy as np

from planner.measure.fidelity import compare
from planner.results import fidelity_view
from planner.results.values import Fidelity


def test_accuracy_and_top1_carry_their_intervals_and_counts():
    rng = np.random.default_rng(0)
    ref = rng.normal(0, 3, size=(200, 10))
    labels = ref.argmax(axis=1)
    labels[:10] = (labels[:10] + 1) % 10  # the original is right on 190 of 200
    out = ref + rng.normal(0, 1e-3, size=ref.shape)
    fid = compare([ref], [out], labels=[labels])
    words = fidelity_view.facts(fid, versus=True)
    assert words[0].startswith("accuracy 95.00% (95% interval 91.04%–97.26%, 200 labelled samples) vs 95.00% for "
                               "the original")
    assert words[1].startswith("cosine ")
    assert words[2].startswith("top-1 agreement 100% (95% interval ") and "samples)" in words[2]


def test_files_from_before_intervals_read_without_them():
    old = Fidelity(cosine=0.999, max_abs_error=0.1, mean_abs_error=0.01, top1_agreement=0.98, samples=64,
                   accuracy=0.9, reference_accuracy=0.91)
    assert fidelity_view.facts(old) == ["accuracy 90.00% (64 labelled samples)", "cosine 0.99900",
                                        "top-1 agreement 98%"]
    assert fidelity_view.facts(None) == []


def test_an_embedding_speaks_of_neighbours_and_text_of_lines():
    emb = Fidelity(cosine=0.99, max_abs_error=0.1, mean_abs_error=0.01, top1_agreement=None, samples=64,
                   output_kind="embedding", sample_cosine=0.991, neighbour_kept=0.86, neighbour_low=0.75,
                   neighbour_high=0.93, top5_kept=0.92)
    assert fidelity_view.facts(emb) == ["nearest neighbour kept for 86% of 64 samples (95% interval 75%–93%), top-5 "
                                        "kept 92%, cosine 0.991 per sample"]
    text = Fidelity(cosine=0.99, max_abs_error=0.1, mean_abs_error=0.01, top1_agreement=None, samples=200,
                    output_kind="ctc", sequences=200, sequences_unchanged=0.69, sequences_low=0.62,
                    sequences_high=0.75, edit_rate=0.011)
    assert fidelity_view.facts(text)[0] == ("the decoded text changes in 31% of 200 sequences (95% interval 25%–38%) "
                                            "and 1.1% of characters")

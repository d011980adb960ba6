"""A package's sample inputs: cut to the model's batch, stored with the original's outputs, read back in order."""

from __future__ import annotations

import numpy as np

from planner.deploy.samples import read_samples, sample_rows, write_samples


def test_validation_batches_are_cut_to_the_model_batch_and_scalars_go_with_each_row():
    feeds = [{"x": np.arange(6, dtype=np.float32).reshape(3, 2), "sr": np.array(16000)}]
    reference = [np.array([[0.0], [1.0], [2.0]])]
    cut, refs = sample_rows(feeds, reference, batch=1)
    assert [f["x"].tolist() for f in cut] == [[[0.0, 1.0]], [[2.0, 3.0]], [[4.0, 5.0]]]
    assert [int(f["sr"]) for f in cut] == [16000] * 3
    assert [r.tolist() for r in refs] == [[[0.0]], [[1.0]], [[2.0]]]
    # A last part shorter than the batch is left out; the limit holds.
    assert len(sample_rows(feeds, reference, batch=2)[0]) == 1
    assert len(sample_rows(feeds * 4, reference * 4, batch=1, limit=5)[0]) == 5


def test_samples_round_trip_with_names_that_hold_dots_and_slashes(tmp_path):
    feeds = [{"input.1": np.full((1, 2), i, dtype=np.float32), "serving/ids": np.full((1, 3), i, dtype=np.int64)}
             for i in range(11)]
    reference = [np.full((1, 4), i, dtype=np.float32) for i in range(11)]
    write_samples(tmp_path / "samples.npz", feeds, reference)
    back, refs = read_samples(tmp_path / "samples.npz")
    assert [list(f) for f in back] == [["input.1", "serving/ids"]] * 11  # the model's input order
    assert [int(f["serving/ids"][0, 0]) for f in back] == list(range(11))  # sample 10 after 9, not after 1
    assert back[3]["serving/ids"].dtype == np.int64
    assert [float(r[0, 0]) for r in refs] == [float(i) for i in range(11)]

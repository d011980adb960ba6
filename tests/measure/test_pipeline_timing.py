"""`--pipeline`: the user's whole request timed end to end (their preprocessing, the model, their
postprocessing), in a real measuring worker and by the shared request code; each bad input is a clear
error that names the function and says what to do."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from planner.errors import PlannerError
from planner.measure import request_split
from planner.measure.pipeline_timing import PipelineJob, check_pipeline_arg, measure_pipeline, sample_files
from planner.measure.request_split import PipelineError, load_pipeline, request_feed, time_requests

# demo:tiny takes one float32 1x3x32x32 input.
TINY = {"x": ((1, 3, 32, 32), np.dtype(np.float32))}

PIPELINE = '''
import time
import numpy as np

SAMPLES = [np.full((3, 32, 32), i * 20, dtype=np.uint8) for i in range(6)]


def decode(raw):
    time.sleep(0.02)  # a request's decoding: far slower than demo:tiny's model call, even on a busy machine
    return raw.astype(np.float32) / 255.0


def top1(output):
    return int(output.argmax())


def wrong_shape(raw):
    return np.zeros((3, 16, 16), dtype=np.float32)


def wrong_dtype(raw):
    return raw.astype(np.float64) / 255.0


def raises(raw):
    raise ValueError("cannot decode this request")


def slow(raw):
    time.sleep(0.3)
    return raw.astype(np.float32) / 255.0
'''


@pytest.fixture
def pipeline_file(tmp_path) -> Path:
    path = tmp_path / "serve.py"
    path.write_text(textwrap.dedent(PIPELINE))
    return path


def _baseline_job(tiny, text: str, **changes) -> PipelineJob:
    from planner.hardware import detect
    from planner.pipeline.baseline import baseline_spec_for
    from planner.plugins import ModelRef

    return PipelineJob(model=ModelRef.of(tiny), spec=baseline_spec_for(tiny, detect()), pipeline=text, quick=True,
                       **changes)


@pytest.mark.worker
def test_the_split_of_a_real_request_in_a_worker(tiny, pipeline_file) -> None:
    split = measure_pipeline(_baseline_job(tiny, f"{pipeline_file}:decode,top1"), label="torch eager")
    assert split.measured and split.error == ""
    assert split.requests >= request_split.PIPELINE_MIN_REQUESTS and split.distinct_samples == 6
    assert split.samples_from == "SAMPLES in serve.py" and split.runtime == "torch eager"
    assert split.preprocess_ms >= 20.0  # the sleep in decode is in the preprocessing part, not the model's
    assert split.model_ms > 0 and split.postprocess_ms is not None and split.postprocess_ms >= 0
    assert sum(split.shares) == pytest.approx(1.0)
    # The rule on the measured shares (which side wins depends on how busy the machine is: not asserted here).
    assert split.around_model == (split.shares[0] < request_split.MODEL_SHARE_BOTTLENECK)
    assert split.line().startswith("model ") and ", postprocessing " in split.line()


@pytest.mark.worker
def test_a_function_that_raises_in_the_worker_is_named_with_its_fix(tiny, pipeline_file) -> None:
    with pytest.raises(PlannerError) as raised:
        measure_pipeline(_baseline_job(tiny, f"{pipeline_file}:raises"))
    assert "raises raised ValueError: cannot decode this request" in raised.value.problem
    assert "fix raises" in raised.value.fix


def _run(path: Path, names: str, *, limit: float = request_split.PIPELINE_CALL_LIMIT_S) -> dict:
    """The shared request code with a model call that answers at once (no runtime needed to check PRE)."""
    pipeline = load_pipeline(f"{path}:{names}")
    return time_requests(pipeline, lambda feed: np.zeros((1, 10), dtype=np.float32), TINY, max_requests=8,
                         max_time_s=1.0, call_limit_s=limit)


def test_a_wrong_shape_names_the_function_and_the_shape_the_model_takes(pipeline_file) -> None:
    with pytest.raises(PipelineError) as raised:
        _run(pipeline_file, "wrong_shape")
    assert raised.value.problem == ("wrong_shape returned shape 3x16x16, and the model takes 3x32x32 (one sample, "
                                    "without the batch axis) or 1x3x32x32")


def test_a_wrong_dtype_says_which_cast_to_make(pipeline_file) -> None:
    with pytest.raises(PipelineError) as raised:
        _run(pipeline_file, "wrong_dtype")
    assert raised.value.problem == "wrong_dtype returned float64, and the model takes float32"
    assert "astype(numpy.float32)" in raised.value.fix


def test_a_function_slower_than_the_limit_is_an_error(pipeline_file) -> None:
    with pytest.raises(PipelineError) as raised:
        _run(pipeline_file, "slow", limit=0.1)
    assert raised.value.problem.startswith("slow took 0.3 s on one request, over the 0.1 s limit")
    assert "make slow faster" in raised.value.fix


def test_a_postprocessing_function_that_raises_is_named(tmp_path) -> None:
    path = tmp_path / "post.py"
    path.write_text("import numpy as np\nSAMPLES = [0]\n"
                    "def pre(raw):\n    return np.zeros((3, 32, 32), np.float32)\n"
                    "def post(output):\n    return output['scores']\n")
    with pytest.raises(PipelineError, match=r"^post raised IndexError"):
        _run(path, "pre,post")


def test_missing_functions_and_samples_are_clear(pipeline_file, tmp_path) -> None:
    with pytest.raises(PipelineError, match="has no function 'nope'") as raised:
        load_pipeline(f"{pipeline_file}:nope")
    assert "define def nope(sample)" in raised.value.fix
    with pytest.raises(PipelineError, match="has no function 'gone'"):
        load_pipeline(f"{pipeline_file}:decode,gone")
    bare = tmp_path / "bare.py"
    bare.write_text("def pre(raw):\n    return raw\n")
    with pytest.raises(PipelineError, match="gives no raw samples") as raised:
        load_pipeline(f"{bare}:pre")
    assert "define samples()" in raised.value.fix
    # A folder's files stand in, passed as paths (the planner passes --val-data's).
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.png").write_bytes(b"x")
    (tmp_path / "data" / "a_labels.npy").write_bytes(b"x")
    loaded = load_pipeline(f"{bare}:pre", sample_files(tmp_path / "data"))
    assert loaded.samples == [tmp_path / "data" / "a.png"]


def test_a_dict_for_a_model_with_several_inputs() -> None:
    template = {"input_ids": ((1, 4), np.dtype(np.int64)), "attention_mask": ((1, 4), np.dtype(np.int64))}
    feed = request_feed({"input_ids": np.arange(4), "attention_mask": np.ones(4, np.int64)}, template, "tok")
    assert feed["input_ids"].shape == (1, 4) and feed["attention_mask"].dtype == np.int64
    with pytest.raises(PipelineError, match="returned one ndarray, and the model takes 2 inputs"):
        request_feed(np.arange(4), template, "tok")
    with pytest.raises(PipelineError, match="returned a dict with no attention_mask"):
        request_feed({"input_ids": np.arange(4)}, template, "tok")


def test_the_argument_is_checked_before_any_measuring(pipeline_file) -> None:
    with pytest.raises(PlannerError, match="does not have the form FILE.py:PRE or FILE.py:PRE,POST"):
        check_pipeline_arg("serve.py", trust_code=True)
    with pytest.raises(PlannerError, match="is not a file"):
        check_pipeline_arg("absent.py:pre", trust_code=True)
    with pytest.raises(PlannerError, match="is Python code") as raised:
        check_pipeline_arg(f"{pipeline_file}:decode", trust_code=False)
    assert "--trust-code" in raised.value.fix
    check_pipeline_arg(f"{pipeline_file}:decode,top1", trust_code=True)


def test_one_request_slowed_by_another_process_does_not_move_the_split(pipeline_file) -> None:
    pipeline = load_pipeline(f"{pipeline_file}:decode,top1")
    steady = [(0.003, 0.001, 0.0001)] * 20
    split = request_split.summarise([*steady, (0.003, 0.5, 0.0001)], pipeline)  # one call caught a busy core
    assert split["model_ms"] == pytest.approx(1.0) and split["preprocess_ms"] == pytest.approx(3.0)
    assert request_split.split_line(split) == "model 24% of the request, preprocessing 73%, postprocessing 2%"

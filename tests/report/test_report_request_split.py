"""The report on the user's whole request (`--pipeline`) and on how the model call was timed (the pool of
distinct inputs): stated where the baseline is explained and under the checklist, every number from results.json."""

from __future__ import annotations

from report_fixtures import FIGURE_LINKS, full_report
from report_numbers import literal_numbers, perturb

from planner.codec import to_data
from planner.results import PipelineSplit


def _split(runtime: str, pre: float, model: float, post: float) -> dict:
    return to_data(PipelineSplit(pipeline="serve.py:decode,top1", runtime=runtime, requests=240,
                                 distinct_samples=48, samples_from="samples() in serve.py", preprocess_ms=pre,
                                 model_ms=model, postprocess_ms=post, request_p50_ms=pre + model + post))


def _with_splits(results: dict) -> dict:
    results["baseline"]["info"]["input_pool"] = 8
    results["baseline"]["pipeline"] = _split("torch eager", 30.0, 12.0, 3.0)
    # The fixture is a schema-1 file: its ranking lists labels, best first.
    best = next(c for c in results["candidates"] if c["label"] == results["ranking"][0])
    best["pipeline"] = _split(best["label"], 30.0, 2.5, 3.0)
    return results


def test_the_baseline_section_says_how_calls_were_fed_and_splits_the_request(results) -> None:
    text = full_report(_with_splits(results), figures=FIGURE_LINKS)
    latency = text[text.index("### Latency"):]
    assert latency.split("\n")[2].startswith("Each timed call takes the next of 8 distinct inputs in turn")
    assert "comparable with your own loop over distinct requests" in latency
    section = text[text.index("### Your request end to end"):]
    assert ("Your requests end to end (`--pipeline serve.py:decode,top1`, requests cycling over 48 distinct "
            "samples (samples() in serve.py), each part on its own clock):") in section
    assert ("- with the original model (torch eager): model 27% of the request, preprocessing 67%, "
            "postprocessing 7% (median over 240 requests: preprocessing 30 ms, model 12 ms, postprocessing 3 ms)"
            ) in section
    assert "- with the winner `" in section and "model 7% of the request" in section
    assert ("With the winner, the model is 7% of the request: the work around it is the bottleneck, so speeding "
            "up the model further changes little (the work around the model is the bottleneck when the model is "
            "under 50% of the request).") in section
    checklist = text[text.index("Checklist\n"):]
    assert "Your requests end to end (`--pipeline serve.py:decode,top1`" in checklist


def test_every_number_on_the_request_comes_from_results(results) -> None:
    with_splits = _with_splits(results)
    original = full_report(with_splits, figures=FIGURE_LINKS)
    assert literal_numbers(original, full_report(perturb(with_splits), figures=FIGURE_LINKS)) == []


def test_results_written_before_the_pool_was_recorded_state_no_count(results) -> None:
    text = full_report(results, figures=FIGURE_LINKS)
    assert "distinct inputs in turn" not in text and "Your requests end to end" not in text

"""planner.results.names: a candidate's plain title and apply snippet, with the label for files that predate them."""

from __future__ import annotations

from planner.results import CandidateResult, Declared, Status, names, results_from_data


def _cand(label: str, declared: Declared | None = None) -> CandidateResult:
    return CandidateResult(plugin="cpu.onnxruntime", label=label, config={}, precision="fp32", status=Status.OK,
                           declared=declared)


def test_the_declared_title_is_what_a_reader_sees() -> None:
    said = Declared(title="ONNX Runtime, all graph optimizations, sequential, 2 threads",
                    apply="import onnxruntime as ort")
    cand = _cand("onnxruntime all seq 2t", said)
    assert names.title(cand) == "ONNX Runtime, all graph optimizations, sequential, 2 threads"
    assert names.apply_code(cand) == "import onnxruntime as ort"
    assert cand.label == "onnxruntime all seq 2t"  # the key stays as it was


def test_an_older_file_falls_back_to_the_label() -> None:
    old = {"schema_version": 3, "candidates": [
        {"plugin": "cpu.onnxruntime", "label": "onnxruntime all seq 2t", "status": "ok", "precision": "fp32",
         "config": {}, "declared": {"phase": 1, "arithmetic": "none", "runtime": "onnxruntime"}},
        {"plugin": "cpu.openvino", "label": "openvino f32 latency 2t", "status": "ok", "precision": "fp32",
         "config": {}}]}
    first, second = results_from_data(old).candidates
    assert first.declared is not None and first.declared.title == "" and first.declared.apply == ""
    assert [names.title(first), names.title(second)] == ["onnxruntime all seq 2t", "openvino f32 latency 2t"]
    assert names.apply_code(first) == names.apply_code(second) == ""


def test_a_record_that_names_a_candidate_by_label_gets_its_title() -> None:
    cands = [_cand("a 2t", Declared(title="A, 2 threads")), _cand("b 1t")]
    assert names.title_of("a 2t", cands) == "A, 2 threads"
    assert names.title_of("b 1t", cands) == "b 1t"
    assert names.title_of("gone", cands) == "gone"


def test_field_names_read_as_words() -> None:
    assert names.field("usable_cpus") == "CPUs this process may use"
    assert names.field("torch_intra_op_threads") == "torch intra-op threads"
    assert names.field("fp32_gemm_repeats") == "FP32 GEMM repeats"  # the fallback: underscores as spaces
    assert names.field("INFERENCE_NUM_THREADS") == "INFERENCE_NUM_THREADS"  # a runtime's own name, to look up
    assert names.field("matrix_size", {"matrix_size": "matrix size"}) == "matrix size"

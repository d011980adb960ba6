"""llama.cpp's LLM plugin: what it says without llama-cpp-python or a GGUF, how it reads a GGUF, its package.

llama-cpp-python compiles llama.cpp when it installs, so it is not in the test environment: the tests that
run llama.cpp itself skip without it (and without a GGUF named by PLANNER_TEST_GGUF).
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
from pathlib import Path

import pytest
from gguf import GGUFWriter

from planner.models.llm import LlmFacts
from planner.plugins.llm import LlmContext, LlmSkip, LlmSpec
from targets.llm.llama_cpp import NO_GGUF, LlamaCppPlugin, quant_type, read_gguf_metadata, weight_precision

FACTS = LlmFacts(folder="/models/tiny", architecture="LlamaForCausalLM", model_type="llama", layers=2, heads=4,
                 kv_heads=2, head_size=16, hidden=64, intermediate=128, vocab=512, context=1024, parameters=140_000,
                 weight_bytes=560_000, stored_dtype="F32", tied_embeddings=False)


def write_gguf(path: Path, file_type: int | None = 15, layers: int = 2, width: int = 64) -> Path:
    """A GGUF as llama.cpp's converter heads one (architecture, name, file type, a vocabulary, the shape), written
    with its `gguf` package; no tensors."""
    writer = GGUFWriter(path, "llama")
    writer.add_name("tiny")
    if file_type is not None:
        writer.add_file_type(file_type)
    # The vocabulary comes before the shape here, as the converter writes it.
    writer.add_token_list([f"tok{i}" for i in range(512)])
    writer.add_token_scores([0.0] * 512)
    writer.add_block_count(layers)
    writer.add_embedding_length(width)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def context(tmp_path: Path, gguf: Path | None) -> LlmContext:
    return LlmContext(FACTS, tmp_path / "work", threads=2, gguf=gguf)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed here")
def test_without_llama_cpp_python_the_reason_says_how_to_install_it(tmp_path):
    reasons = LlamaCppPlugin().check(FACTS, context(tmp_path, write_gguf(tmp_path / "m.gguf")))
    assert len(reasons) == 1 and reasons[0].startswith("llama-cpp-python not installed (pip install llama-cpp-python")
    skips = list(LlamaCppPlugin().candidates(context(tmp_path, write_gguf(tmp_path / "m.gguf"))))
    assert len(skips) == 1 and isinstance(skips[0], LlmSkip) and skips[0].reason == reasons[0]


def test_without_a_gguf_the_reason_names_the_flag_and_candidates_skip(tmp_path):
    plugin = LlamaCppPlugin()
    assert NO_GGUF in plugin.check(FACTS, context(tmp_path, None))
    assert NO_GGUF not in plugin.check(FACTS)  # without a plan's context there is no file to ask for
    found = list(plugin.candidates(context(tmp_path, None)))
    assert len(found) == 1 and isinstance(found[0], LlmSkip) and NO_GGUF in found[0].reason
    assert NO_GGUF == "no GGUF file given: pass --gguf model.gguf (Q8_0, Q4_K_M...) to measure llama.cpp"


def test_the_quant_type_comes_from_the_metadata_else_the_file_name(tmp_path):
    metadata = read_gguf_metadata(write_gguf(tmp_path / "model.gguf", file_type=15))
    assert metadata["general.architecture"] == "llama" and metadata["llama.block_count"] == 2
    assert metadata["llama.embedding_length"] == 64
    assert metadata["tokenizer.ggml.tokens"] == 512  # an array stands for its length
    assert quant_type(tmp_path / "model.gguf", metadata) == "Q4_K_M"
    assert quant_type(Path("qwen2.5-0.5b-instruct-q8_0.gguf")) == "Q8_0"
    assert quant_type(Path("SmolLM2-135M.IQ4_XS.gguf")) == "IQ4_XS"
    assert quant_type(Path("llama-3.2-1b-Q4_K_M-00001-of-00002.gguf")) == "Q4_K_M"
    assert quant_type(Path("model.gguf")) == ""
    assert [weight_precision(q) for q in ("Q8_0", "Q4_K_M", "Q6_K", "IQ4_XS", "BF16", "F16")] == [
        "int8", "int4", "int8", "int4", "bf16", "fp16"]


def test_a_missing_file_another_model_or_not_a_gguf_is_a_reason(tmp_path):
    plugin = LlamaCppPlugin()

    def gguf_reasons(path):
        return [r for r in plugin.check(FACTS, context(tmp_path, path)) if "llama-cpp-python" not in r]

    assert gguf_reasons(write_gguf(tmp_path / "ok.gguf")) == []
    assert gguf_reasons(tmp_path / "absent.gguf") == [f"the GGUF file {tmp_path / 'absent.gguf'} does not exist"]
    assert "holds another model (24 layers, width 896)" in gguf_reasons(
        write_gguf(tmp_path / "big.gguf", layers=24, width=896))[0]
    (tmp_path / "weights.bin").write_bytes(b"\x00" * 64)
    assert "weights.bin is not a GGUF file llama.cpp reads" in gguf_reasons(tmp_path / "weights.bin")[0]
    cut = tmp_path / "cut.gguf"
    cut.write_bytes((tmp_path / "ok.gguf").read_bytes()[:100])  # a download cut short inside the header
    assert "cut.gguf is not a GGUF file llama.cpp reads" in gguf_reasons(cut)[0]
    (tmp_path / "empty.gguf").write_bytes(b"")
    assert "empty.gguf is not a GGUF file llama.cpp reads" in gguf_reasons(tmp_path / "empty.gguf")[0]


def test_with_llama_cpp_python_the_gguf_is_one_candidate_and_its_package_holds_it(tmp_path, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: object() if name == "llama_cpp" else find_spec(name, *args))
    plugin = LlamaCppPlugin()
    gguf = write_gguf(tmp_path / "tiny-q8_0.gguf", file_type=None)  # no file type: the name says Q8_0
    (spec,) = plugin.candidates(context(tmp_path, gguf))
    assert isinstance(spec, LlmSpec) and spec.label == "llama.cpp Q8_0 2t" and spec.weights == "int8"
    assert spec.threads == 2 and spec.config["n_ctx"] == 1024  # the model's limit, under llama.cpp's 2048
    assert plugin.describe(spec).title == "llama.cpp, Q8_0 weights (GGUF), 2 threads"
    assert "n_threads=2, n_threads_batch=2" in plugin.describe(spec).apply
    files = plugin.package(spec, FACTS, tmp_path / "package")
    assert files == [tmp_path / "package" / "run.py", tmp_path / "package" / "model.gguf"]
    run = files[0].read_text()
    assert "SETTINGS = {'n_ctx': 1024, 'quant': 'Q8_0', 'threads': 2}" in run
    assert "import planner" not in run and "from planner" not in run
    py_compile.compile(str(files[0]), doraise=True)


def test_llama_cpp_generates_and_scores_a_gguf(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python compiles llama.cpp; not installed here")
    path = os.environ.get("PLANNER_TEST_GGUF")
    if not path:
        pytest.skip("set PLANNER_TEST_GGUF to a GGUF file to run llama.cpp itself")
    import llama_cpp

    model = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    facts = LlmFacts(**{**FACTS.__dict__, "vocab": model.n_vocab()})
    spec = LlmSpec("llm.llama_cpp", "gguf", threads=2, config={"quant": quant_type(Path(path)), "n_ctx": 256},
                   artifacts={"model": path})
    session = LlamaCppPlugin().open(spec, facts)
    prompt = model.tokenize(b"The Python language reference says that")
    out = session.generate(prompt, 8)
    assert len(out.tokens) == 8 and all(b > a for a, b in zip(out.times_s, out.times_s[1:]))
    assert session.generate(prompt, 8).tokens == out.tokens  # greedy
    logits = session.score(prompt + list(out.tokens))
    assert logits.shape == (len(prompt) + 8, model.n_vocab())
    assert int(logits[len(prompt) - 1].argmax()) == out.tokens[0]
    kv = session.kv_cache()
    assert kv is None or kv[1] == len(prompt) + 7

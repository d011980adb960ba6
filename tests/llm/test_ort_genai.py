"""ONNX Runtime GenAI's LLM plugin on the tiny random Llama: what its model builder builds, and how it generates.

One module-scoped build (fp32 and INT4 block 32, the quick candidates; about 15 s) serves every test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime_genai", reason="ONNX Runtime GenAI is in the [llm] extra")

from planner.models.llm import kv_cache_bytes, read_llm_folder  # noqa: E402
from planner.plugins.llm import LlmContext, LlmSkip, LlmSpec  # noqa: E402
from targets.llm.ort_genai import OrtGenAiPlugin, last_error_line  # noqa: E402
from targets.llm.torch_llm import TorchLlmSession  # noqa: E402

THREADS = 2


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_llm):
    """The tiny Llama's facts, and the plugin's quick candidates (built once)."""
    root = tmp_path_factory.mktemp("ort_genai")
    facts = read_llm_folder(tiny_llm)
    plugin = OrtGenAiPlugin()
    ctx = LlmContext(facts, root / "work", threads=THREADS, quick=True)
    found = list(plugin.candidates(ctx))
    specs = {c.weights: c for c in found if isinstance(c, LlmSpec)}
    skips = [c for c in found if isinstance(c, LlmSkip)]
    return plugin, facts, specs, skips, root


@pytest.fixture(scope="module")
def prompt(built):
    """A real sentence's token ids, from the model's own tokenizer."""
    from tokenizers import Tokenizer

    _, facts, *_ = built
    tokenizer = Tokenizer.from_file(str(Path(facts.folder) / "tokenizer.json"))
    return tokenizer.encode("The Python language reference describes the syntax and the core semantics").ids


@pytest.fixture(scope="module")
def torch_session(built):
    """The PyTorch eager fp32 reference over the same folder."""
    _, facts, *_ = built
    return TorchLlmSession(facts.folder, "fp32", THREADS)


def test_quick_plan_builds_fp32_and_int4_block_32_and_names_int2_a_size_option(built):
    plugin, _, specs, skips, _ = built
    assert set(specs) == {"fp32", "int4"}
    assert specs["int4"].config["block_size"] == 32 and specs["int4"].config["accuracy_level"] == 4
    assert [s.label for s in skips] == [f"ort-genai int2 {THREADS}t"]
    assert skips[0].reason.startswith("INT2: a size option only")
    assert plugin.describe(specs["int4"]).title == (
        "ONNX Runtime GenAI, INT4 weights (MatMulNBits, block 32, accuracy level 4), 2 threads")
    assert "onnxruntime_genai.models.builder" in plugin.describe(specs["int4"]).apply


def test_block_128_wider_than_the_layers_is_skipped_with_its_reason(built):
    plugin, facts, _, _, root = built
    ctx = LlmContext(facts, root / "full", threads=THREADS, quick=False)
    candidates = plugin.candidates(ctx)
    first, second = next(candidates), next(candidates)  # what cannot be built comes before any build
    candidates.close()
    assert first.label.startswith("ort-genai int2") and second.label == f"ort-genai int4 b128 {THREADS}t"
    assert isinstance(second, LlmSkip) and "larger than this model's layer inputs (64 wide)" in second.reason
    assert not (root / "full").exists()  # nothing was built


def test_the_threads_are_in_the_built_genai_config_and_in_force(built):
    plugin, facts, specs, _, _ = built
    config = json.loads((Path(specs["fp32"].artifacts["model"]) / "genai_config.json").read_text())
    assert config["model"]["decoder"]["session_options"]["intra_op_num_threads"] == THREADS
    assert plugin.open(specs["fp32"], facts).info()["threads"] == THREADS


def test_fp32_greedy_tokens_equal_pytorch_fp32(built, prompt, torch_session):
    plugin, facts, specs, _, _ = built
    session = plugin.open(specs["fp32"], facts)
    assert session.generate(prompt, 16).tokens == torch_session.generate(prompt, 16).tokens


def test_greedy_decoding_steps_past_an_end_token_as_pytorch_does(built, prompt, torch_session, tmp_path):
    import shutil

    plugin, facts, specs, _, _ = built
    expected = torch_session.generate(prompt, 12).tokens
    # A copy whose end token is the third token greedy decoding picks: ORT GenAI's search stops there.
    folder = tmp_path / "model"
    shutil.copytree(specs["fp32"].artifacts["model"], folder)
    config = json.loads((folder / "genai_config.json").read_text())
    config["model"]["eos_token_id"] = expected[2]
    (folder / "genai_config.json").write_text(json.dumps(config))
    spec = LlmSpec(plugin.name, "eos", threads=THREADS, config=specs["fp32"].config, artifacts={"model": str(folder)})
    assert plugin.open(spec, facts).generate(prompt, 12).tokens == expected


def test_fp32_scores_every_position_like_pytorch(built, prompt, torch_session):
    plugin, facts, specs, _, _ = built
    logits = plugin.open(specs["fp32"], facts).score(prompt)
    assert logits.shape == (len(prompt), facts.vocab) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, torch_session.score(prompt), atol=1e-4)


def test_int4_generates_exactly_n_tokens_with_increasing_times_and_its_cache_is_measured(built, prompt):
    plugin, facts, specs, _, _ = built
    session = plugin.open(specs["int4"], facts)
    out = session.generate(prompt, 12)
    assert len(out.tokens) == 12 and len(out.times_s) == 12
    assert all(b > a for a, b in zip(out.times_s, out.times_s[1:])) and out.times_s[0] > 0
    # The cache is allocated for prompt + new tokens, fp32 on the CPU: 4 bytes a value.
    assert session.kv_cache() == (kv_cache_bytes(facts, len(prompt) + 12, 4.0), len(prompt) + 12)


def test_int4_model_is_smaller_and_its_matmuls_are_matmulnbits(built):
    import onnx

    _, _, specs, _, _ = built
    fp32, int4 = (Path(specs[w].artifacts["model"]) for w in ("fp32", "int4"))
    assert specs["int4"].config["model_bytes"] < specs["fp32"].config["model_bytes"]
    assert (int4 / "model.onnx.data").stat().st_size < (fp32 / "model.onnx.data").stat().st_size
    graph = onnx.load(str(int4 / "model.onnx"), load_external_data=False).graph
    nbits = [n for n in graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) >= 2 * 4 + 1  # per layer: qkv, o, gate/up, down (at least); and the output head
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in nbits[0].attribute}
    assert attributes["bits"] == 4 and attributes["block_size"] == 32 and attributes["accuracy_level"] == 4


def test_the_package_run_py_generates(built, tmp_path):
    plugin, facts, specs, _, _ = built
    files = plugin.package(specs["int4"], facts, tmp_path)
    assert tmp_path / "run.py" in files and tmp_path / "model" / "genai_config.json" in files
    run = subprocess.run([sys.executable, str(tmp_path / "run.py"), "--check"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "8 tokens" in run.stderr


def test_a_model_the_builder_cannot_build_is_a_skip_with_its_error_line(built, tmp_path):
    plugin, facts, _, _, _ = built
    folder = tmp_path / "odd"
    folder.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).symlink_to(Path(facts.folder) / name)
    config = json.loads((Path(facts.folder) / "config.json").read_text())
    config["architectures"] = ["OddForCausalLM"]
    (folder / "config.json").write_text(json.dumps(config))
    ctx = LlmContext(read_llm_folder(folder), tmp_path / "work", threads=THREADS, quick=True)
    candidates = plugin.candidates(ctx)
    next(candidates)  # the INT2 note
    fp32 = next(candidates)
    candidates.close()
    assert isinstance(fp32, LlmSkip)
    assert fp32.reason.startswith("the model builder failed (fp32, OddForCausalLM): NotImplementedError: ")
    assert "not currently supported" in fp32.reason and "Traceback" not in fp32.reason


def test_the_error_line_is_the_last_one_naming_an_error():
    output = "Loading\r 50%\r100%\nTraceback (most recent call last):\n  File x\nValueError: bad shape\nbye\n"
    assert last_error_line(output) == "ValueError: bad shape"
    assert last_error_line("") == "it printed nothing"


def test_the_measuring_worker_measures_the_int4_candidate_in_process(built, prompt, monkeypatch):
    from planner.llm import timing

    plugin, facts, specs, _, _ = built
    # The entry point is read from the installed metadata; the plugin is handed over directly instead.
    monkeypatch.setattr(timing, "load_plugin", lambda name: plugin)
    settings = timing.MeasureSettings(prompts={4: tuple(prompt[:4]), 8: tuple(prompt[:8])}, new_tokens=6, repeats=2,
                                      windows=(tuple(prompt),), greedy_prompts=(tuple(prompt[:5]),), greedy_tokens=6)
    measured = timing.measure_candidate(specs["int4"], facts.folder, settings)
    assert set(measured.ttft_ms) == {4, 8} and len(measured.tpot_ms) == 2 * 2 * 5
    assert measured.kv_measured[8] == (kv_cache_bytes(facts, 8 + 6, 4.0), 8 + 6)
    assert len(measured.nll[0]) == len(prompt) - 1 and all(np.isfinite(measured.nll[0]))
    assert [len(g) for g in measured.greedy] == [6] and measured.info["precision"] == "int4"


def test_the_builder_gets_absolute_paths_from_a_relative_folder(tiny_llm, tmp_path, monkeypatch):
    """The builder runs in its cache folder: a plan whose --out is relative must still name where to write."""
    import targets.llm.ort_genai as module

    seen = []

    class Refused:
        returncode = 1

        def __init__(self, command, **kwargs):
            seen.append(command)

        def poll(self):
            return 1

        def wait(self, timeout=None):
            return 1

    monkeypatch.setattr(module.subprocess, "Popen", Refused)
    monkeypatch.chdir(tmp_path)
    facts = read_llm_folder(tiny_llm)
    ctx = LlmContext(facts, Path("work"), threads=THREADS, quick=True)
    found = list(OrtGenAiPlugin().candidates(ctx))
    assert seen and all(isinstance(c, LlmSkip) for c in found)
    for command in seen:
        paths = [command[command.index(flag) + 1] for flag in ("-i", "-o")]
        assert all(Path(p).is_absolute() for p in paths), command

"""OpenVINO GenAI plugin on the tiny random Llama: its candidates decode and score like PyTorch, report their KV
cache, shrink the files, and hand over a package that runs on its own."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openvino_genai", reason="OpenVINO GenAI not installed (pip install -e .[llm])")
pytest.importorskip("nncf", reason="NNCF not installed")

from planner.models.llm import kv_cache_bytes, read_llm_folder  # noqa: E402
from planner.plugins.llm import LlmContext, LlmSkip, LlmSpec  # noqa: E402
from targets.llm.openvino_genai import OpenVinoGenAiPlugin  # noqa: E402

PROMPT = [5, 17, 42, 99, 100, 3, 7, 250, 311, 12]


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_llm):
    """The tiny Llama's facts, and the plugin's quick candidates for it (built once for the module)."""
    root = tmp_path_factory.mktemp("ov_llm")
    facts = read_llm_folder(tiny_llm)
    plugin = OpenVinoGenAiPlugin()
    ctx = LlmContext(facts=facts, workdir=root / "work", threads=2, quick=True)
    ctx.workdir.mkdir()
    found = list(plugin.candidates(ctx))
    specs = {c.label: c for c in found if isinstance(c, LlmSpec)}
    skips = {c.label: c for c in found if isinstance(c, LlmSkip)}
    return plugin, facts, specs, skips


@pytest.fixture(scope="module")
def fp32(built):
    """The fp32 candidate opened, and PyTorch fp32's greedy tokens and logits for PROMPT and its continuation."""
    from targets.llm.torch_llm import TorchLlmSession

    plugin, facts, specs, _ = built
    torch_session = TorchLlmSession(facts.folder, "fp32", 2)
    tokens = torch_session.generate(PROMPT, 16).tokens
    logits = torch_session.score(PROMPT + list(tokens))
    return plugin.open(specs["openvino fp32 2t"], facts), tokens, logits


def test_quick_candidates_are_fp32_int8_one_int4_and_its_u8_cache(built):
    _, _, specs, skips = built
    assert set(specs) == {"openvino fp32 2t", "openvino int8 2t", "openvino int4 g64 2t",
                          "openvino int4 g64 kv-u8 2t"}
    # The tiny model's layers take 64 inputs: NNCF cannot group them by 128, and the plan says why.
    assert skips["openvino int4 g128 2t"].reason == "group 128 is larger than the hidden size 64"
    assert specs["openvino int4 g64 kv-u8 2t"].config["properties"]["KV_CACHE_PRECISION"] == "u8"


def test_fp32_decodes_and_scores_like_pytorch(fp32):
    session, torch_tokens, torch_logits = fp32
    out = session.generate(PROMPT, 16)
    assert out.tokens == torch_tokens
    logits = session.score(PROMPT + list(torch_tokens))
    assert logits.dtype == np.float32 and logits.shape == torch_logits.shape
    np.testing.assert_allclose(logits, torch_logits, atol=1e-4)


def test_generate_gives_exactly_n_tokens_stamped_as_they_arrive(fp32):
    session = fp32[0]
    out = session.generate(PROMPT[:3], 24)
    assert len(out.tokens) == 24 and len(out.times_s) == 24
    assert all(b >= a for a, b in zip(out.times_s, out.times_s[1:])) and out.times_s[-1] > out.times_s[0] > 0
    info = session.info()
    assert info["threads"] == 2 and info["inference_precision"] == "fp32" and info["kv_cache_precision"] == "fp32"
    assert info["runtime_ttft_ms"] > 0 and info["runtime_tpot_ms"] > 0


def test_kv_cache_is_whole_blocks_of_the_tokens_held(built, fp32):
    plugin, facts, specs, _ = built
    session = fp32[0]
    session.generate(PROMPT, 16)
    used, tokens = session.kv_cache()
    assert tokens == len(PROMPT) + 16 - 1  # the last token is never fed back
    # The paged cache holds whole blocks (32 tokens on the CPU) of fp32 keys and values.
    per_token = kv_cache_bytes(facts, 1, 4)
    assert used % per_token == 0 and tokens <= used // per_token < tokens + 32
    # The u8 cache is smaller than the fp16 one for the same model and tokens (scales and zero points included).
    sizes = {}
    for label in ("openvino int4 g64 2t", "openvino int4 g64 kv-u8 2t"):
        other = plugin.open(specs[label], facts)
        other.generate(PROMPT, 16)
        sizes[label], held = other.kv_cache()
        assert held == tokens
    blocks = math.ceil(tokens / 32) * 32
    assert sizes["openvino int4 g64 2t"] == kv_cache_bytes(facts, blocks, 2)
    assert kv_cache_bytes(facts, blocks, 1) <= sizes["openvino int4 g64 kv-u8 2t"] < sizes["openvino int4 g64 2t"]


def test_int4_files_are_smaller_and_described_with_the_export_line(built):
    plugin, _, specs, _ = built

    def size(spec):
        return sum(p.stat().st_size for p in Path(spec.artifacts["model"]).glob("openvino_model.*"))

    assert size(specs["openvino int4 g64 2t"]) < size(specs["openvino int8 2t"]) < size(specs["openvino fp32 2t"])
    text = plugin.describe(specs["openvino int4 g64 kv-u8 2t"])
    assert text.title == "OpenVINO GenAI, INT4 weights (symmetric, group 64), u8 KV cache, 2 threads"
    assert "--weight-format int4 --sym --group-size 64" in text.apply
    assert "KV_CACHE_PRECISION='u8'" in text.apply and "INFERENCE_NUM_THREADS=2" in text.apply


def test_package_runs_on_its_own(built, tmp_path):
    plugin, facts, specs, _ = built
    files = plugin.package(specs["openvino int4 g64 kv-u8 2t"], facts, tmp_path)
    names = {p.name for p in files}
    assert {"run.py", "openvino_model.xml", "openvino_tokenizer.xml", "openvino_detokenizer.xml"} <= names
    text = (tmp_path / "run.py").read_text()
    assert "import planner" not in text and "from planner" not in text
    run = subprocess.run([sys.executable, str(tmp_path / "run.py"), "--check"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "8 tokens" in run.stderr


def test_check_names_the_package_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino_genai"
                        else real(name, *a))
    reasons = OpenVinoGenAiPlugin().check(None)  # type: ignore[arg-type]
    assert reasons and "openvino-genai" in reasons[0]

"""A causal-LM folder read from its config and weight headers: the facts, and the errors before measuring."""

from __future__ import annotations

import json
import shutil

import pytest

from planner.errors import ModelLoadError
from planner.models.llm import is_llm_folder, is_model_folder, kv_cache_bytes, read_llm_folder


def test_facts_of_the_tiny_llama_match_the_loaded_model(tiny_llm):
    transformers = pytest.importorskip("transformers", reason="the [llm] extra is not installed")
    facts = read_llm_folder(tiny_llm)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_llm)
    assert (facts.layers, facts.heads, facts.kv_heads, facts.head_size, facts.hidden) == (2, 4, 2, 16, 64)
    assert facts.parameters == sum(p.numel() for p in model.parameters())
    assert facts.weight_bytes == facts.parameters * 4 and facts.stored_dtype == "F32"
    assert facts.architecture == "LlamaForCausalLM" and facts.vocab == model.config.vocab_size
    assert is_llm_folder(tiny_llm) and is_model_folder(tiny_llm)


def test_kv_cache_prediction_equals_what_torch_holds(tiny_llm):
    pytest.importorskip("transformers", reason="the [llm] extra is not installed")
    from targets.llm.torch_llm import TorchLlmSession

    facts = read_llm_folder(tiny_llm)
    session = TorchLlmSession(str(tiny_llm), "fp32", 1)
    out = session.generate(list(range(5, 45)), 8)
    assert len(out.tokens) == 8 and list(out.times_s) == sorted(out.times_s)
    measured, tokens = session.kv_cache()
    assert tokens == 40 + 8 - 1  # the last token is produced, never fed back
    assert measured == kv_cache_bytes(facts, tokens, 4.0)


def _copy(tiny_llm, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_llm, folder)
    return folder


def test_a_folder_that_is_not_a_causal_lm_says_so(tiny_llm, tmp_path):
    folder = _copy(tiny_llm, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["BertModel"]}))
    with pytest.raises(ModelLoadError, match="not a causal language model .*BertModel"):
        read_llm_folder(folder)
    assert is_model_folder(folder) and not is_llm_folder(folder)


def test_missing_tokenizer_and_weights_are_named(tiny_llm, tmp_path):
    folder = _copy(tiny_llm, tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelLoadError, match="no tokenizer files") as raised:
        read_llm_folder(folder)
    assert "save_pretrained" in raised.value.fix
    shutil.copy(tiny_llm / "tokenizer.json", folder)
    for shard in folder.glob("*.safetensors"):
        shard.unlink()
    with pytest.raises(ModelLoadError, match="no \\*.safetensors weights"):
        read_llm_folder(folder)


def test_a_folder_without_config_is_not_a_model_folder(tmp_path):
    assert not is_model_folder(tmp_path)
    with pytest.raises(ModelLoadError, match="no config.json"):
        read_llm_folder(tmp_path)

"""A Hugging Face causal-LM folder read without loading it: what a decoder LLM is, from its config.

`read_llm_folder` checks the folder before anything is measured (a config with a `*ForCausalLM`
architecture, weights, tokenizer files) and returns `LlmFacts`: layers, heads, KV heads, head size,
vocabulary, context limit, parameter count and weight bytes (counted from the safetensors headers, so
a 1B model is read in milliseconds). The KV-cache size follows from the config (`kv_cache_bytes`).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from planner.errors import ModelLoadError

# The bytes of one stored element, by safetensors dtype.
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
                "F8_E4M3": 1, "F8_E5M2": 1}
# Bytes per weight at each precision a candidate may store its weights in; int4 counts its group scales
# (one fp16 scale per 128 weights: 0.5 + 2/128).
WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "int8": 1.0 + 2 / 128, "int4": 0.5 + 2 / 128}
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")


@dataclass(frozen=True)
class LlmFacts:
    """A decoder LLM as its config and files describe it."""

    folder: str
    architecture: str  # LlamaForCausalLM, Qwen2ForCausalLM...
    model_type: str
    layers: int
    heads: int
    kv_heads: int
    head_size: int
    hidden: int
    intermediate: int
    vocab: int
    context: int  # the model's limit (max_position_embeddings)
    parameters: int
    weight_bytes: int  # as stored in the folder
    stored_dtype: str  # the safetensors dtype most weights have (F32, BF16...)
    tied_embeddings: bool
    bos_token_id: int | None = None
    eos_token_id: int | None = None

    @property
    def name(self) -> str:
        """The folder's name: what reports and output folders call the model."""
        return Path(self.folder).name

    def memory_bytes(self, weights: str, kv: str, tokens: int) -> int:
        """What a candidate holds, estimated from the config: its weights at `weights` (fp32, bf16, int8, int4; an
        unknown one counts as fp32) plus the KV cache at precision `kv` for `tokens` of context (0: weights only)."""
        return int(self.parameters * WEIGHT_BYTES.get(weights, 4.0)) + kv_cache_bytes_at(self, tokens, kv)

    def read_bytes_per_token(self, precision: str, context_tokens: int, kv_bytes_per_value: float = 2.0) -> int:
        """Bytes one decoded token reads: every weight but an untied embedding table (a lookup reads one row of it),
        plus the KV cache so far."""
        weights = self.parameters - (0 if self.tied_embeddings else self.vocab * self.hidden)
        return int(weights * WEIGHT_BYTES[precision] + kv_cache_bytes(self, context_tokens, kv_bytes_per_value))


def kv_cache_bytes(facts: LlmFacts, tokens: int, bytes_per_value: float = 2.0) -> int:
    """The KV cache's bytes for `tokens` of context: 2 (K and V) x layers x KV heads x head size x bytes x tokens."""
    return int(2 * facts.layers * facts.kv_heads * facts.head_size * bytes_per_value * tokens)


KV_VALUE_BYTES = {"fp32": 4.0, "f32": 4.0, "bf16": 2.0, "fp16": 2.0, "f16": 2.0, "u8": 1.0, "i8": 1.0, "int8": 1.0}
"""Bytes per cached key or value element, by the KV cache's precision."""
KV_SCALE_BYTES = 8
"""An 8-bit KV cache also stores a scale and a zero point (fp32) per head and token (OpenVINO's u8 cache)."""


def kv_cache_bytes_at(facts: LlmFacts, tokens: int, kv: str) -> int:
    """The KV cache's bytes for `tokens` at precision `kv` (fp32, bf16, fp16, u8): the formula of `kv_cache_bytes`,
    plus an 8-bit cache's scales and zero points."""
    per_value = KV_VALUE_BYTES.get(kv, 2.0)
    extra = KV_SCALE_BYTES if per_value == 1.0 else 0
    return int(2 * facts.layers * facts.kv_heads * tokens * (facts.head_size * per_value + extra))


def is_model_folder(text: str | Path) -> bool:
    """Whether `text` names a Hugging Face model folder (one with a config.json): the LLM plan's to take or refuse."""
    try:
        return Path(text).is_dir() and (Path(text) / "config.json").is_file()
    except (OSError, ValueError):
        return False


def is_llm_folder(text: str | Path) -> bool:
    """Whether `text` names a folder whose config declares a causal-LM architecture (cheap: reads config.json only)."""
    config = Path(text) / "config.json"
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and any(str(a).endswith("ForCausalLM") for a in data.get("architectures") or ())


def read_llm_folder(folder: str | Path) -> LlmFacts:
    """The facts of a Hugging Face causal-LM folder; a ModelLoadError that says what is missing otherwise."""
    root = Path(folder)
    if not root.is_dir():
        raise ModelLoadError(f"{folder} is not a folder", "pass the folder that holds config.json, the "
                             "*.safetensors weights and the tokenizer files")
    try:
        config = json.loads((root / "config.json").read_text())
    except FileNotFoundError:
        raise ModelLoadError(f"{folder} has no config.json, so it is not a Hugging Face model folder",
                             "pass a folder saved with save_pretrained (config.json, weights, tokenizer)") from None
    except ValueError as exc:
        raise ModelLoadError(f"{folder}/config.json is not valid JSON ({exc})", "re-save the model") from None
    text_config = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    cfg = {**config, **(text_config or {})}
    architectures = [str(a) for a in config.get("architectures") or ()]
    causal = [a for a in architectures if a.endswith("ForCausalLM")]
    if not causal:
        found = ", ".join(architectures) or "none"
        raise ModelLoadError(f"{folder} is not a causal language model (its config's architectures: {found})",
                             "the LLM plan takes a decoder with a *ForCausalLM architecture (Llama, Qwen2, Phi, "
                             "Gemma...); plan an encoder or a classifier as an ONNX or PyTorch file")
    if not any((root / name).is_file() for name in _TOKENIZER_FILES):
        raise ModelLoadError(f"{folder} has no tokenizer files (tokenizer.json, tokenizer.model or vocab.json)",
                             "save the tokenizer beside the model: tokenizer.save_pretrained(folder)")
    shards = sorted(root.glob("*.safetensors"))
    if not shards:
        raise ModelLoadError(f"{folder} has no *.safetensors weights",
                             "save the model with model.save_pretrained(folder) (safetensors is its default)")
    parameters, weight_bytes = 0, 0
    by_dtype: dict[str, int] = {}
    for shard in shards:
        for entry in _safetensors_header(shard).values():
            if not isinstance(entry, dict) or "shape" not in entry:
                continue  # the __metadata__ entry
            count = 1
            for dim in entry["shape"]:
                count *= int(dim)
            size = count * _DTYPE_BYTES.get(str(entry.get("dtype")), 4)
            parameters += count
            weight_bytes += size
            dtype = str(entry.get("dtype"))
            by_dtype[dtype] = by_dtype.get(dtype, 0) + size
    try:
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        layers = int(cfg["num_hidden_layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"{folder}/config.json lacks {exc} (a decoder's config names its heads, hidden size "
                             "and layers)", "re-save the model with transformers' save_pretrained") from None
    eos = cfg.get("eos_token_id")
    return LlmFacts(
        # The folder is absolute: workers and exporters may run in other folders.
        folder=str(root.resolve()), architecture=causal[0], model_type=str(cfg.get("model_type", "")), layers=layers,
        heads=heads, kv_heads=int(cfg.get("num_key_value_heads") or heads),
        head_size=int(cfg.get("head_dim") or hidden // heads), hidden=hidden,
        intermediate=int(cfg.get("intermediate_size") or 4 * hidden), vocab=int(cfg.get("vocab_size") or 0),
        context=int(cfg.get("max_position_embeddings") or 2048), parameters=parameters, weight_bytes=weight_bytes,
        stored_dtype=str(max(by_dtype, key=lambda k: by_dtype[k])) if by_dtype else "F32",
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        bos_token_id=_token_id(cfg.get("bos_token_id")), eos_token_id=_token_id(eos))


def _token_id(value: object) -> int | None:
    """A config's token id: an int, the first of a list (several end tokens), or None."""
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, int) else None


def _safetensors_header(path: Path) -> dict:
    """A safetensors file's JSON header (names, dtypes, shapes), read without reading the tensors."""
    try:
        with path.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > 100_000_000:
                raise ValueError(f"header of {length} bytes")
            return json.loads(handle.read(length))
    except (OSError, ValueError, struct.error) as exc:
        raise ModelLoadError(f"{path} is not a readable safetensors file ({exc})",
                             "re-save the weights with save_pretrained") from None

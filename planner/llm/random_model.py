"""A random-weight causal LM of a given shape, saved as a Hugging Face folder, with a BPE tokenizer.

No weights can be downloaded on every machine the planner is tested on, so tests and benchmarks build the
model they plan: a tiny Llama (2 layers, hidden 64) for the tests, a real model's shape (SmolLM2-135M's,
Qwen2-0.5B's) for the timing benchmark. The tokenizer is trained on the bundled text with `tokenizers`, so
perplexity is measured on real words. Random weights say nothing about quality; they time like real ones.
"""

from __future__ import annotations

from pathlib import Path

# Shapes of real models (their configs' numbers), for benchmarks that must time a model of that size.
SHAPES: dict[str, dict] = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=1024, vocab=512),
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, max_position_embeddings=8192, vocab=49152, tie_word_embeddings=True),
    "qwen2-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                       num_key_value_heads=2, max_position_embeddings=32768, vocab=151936, tie_word_embeddings=True),
}


def build_random_llm(folder: Path, shape: str = "tiny", *, seed: int = 0, vocab: int | None = None,
                     train_steps: int = 0) -> Path:
    """Save a LlamaForCausalLM of `shape` (a SHAPES key) and its tokenizer into `folder`: random weights, or trained
    for `train_steps` steps on the bundled text (a trained model's distributions are peaked, as real ones are, so
    quantization shows in its perplexity and KL; a random model's are nearly flat and hide it)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from planner.llm.corpus import bundled_text

    settings = dict(SHAPES[shape])
    size = vocab or settings.pop("vocab")
    settings.pop("vocab", None)
    text = bundled_text()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # The BPE vocabulary is capped by what the text can teach; the model's vocabulary may be larger (its extra
    # rows are never produced by the tokenizer, as in real models with reserved tokens).
    trainer = trainers.BpeTrainer(vocab_size=min(size, 8192), special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text[i:i + 4000] for i in range(0, len(text), 4000)], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=max(size, fast.vocab_size), bos_token_id=0, eos_token_id=1, **settings)
    model = LlamaForCausalLM(config)
    if train_steps:
        _train(model, fast(text, add_special_tokens=False)["input_ids"], train_steps, seed)
    model.save_pretrained(folder)
    return folder


def _train(model, ids: list[int], steps: int, seed: int, *, length: int = 128, batch: int = 16) -> None:
    """A few hundred steps of next-token training on windows of the text (AdamW, seeded): enough to shape the
    distributions, not to make a useful model."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    data = torch.tensor(ids)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        starts = torch.randint(0, len(data) - length - 1, (batch,), generator=generator)
        windows = torch.stack([data[s:s + length] for s in starts.tolist()])
        loss = model(windows, labels=windows).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()

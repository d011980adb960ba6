"""PyTorch eager through transformers: the baseline (fp32, as the folder comes) and bf16, with the plan's threads."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins.contract import Description
from planner.plugins.llm import Generation, LlmContext, LlmPlugin, LlmSkip, LlmSpec
from planner.plugins.packaging import runner_text

if TYPE_CHECKING:
    import numpy as np

    from planner.models.llm import LlmFacts

_RUNNER = Path(__file__).parent / "runners" / "torch_run.py"


class TorchLlmSession:
    """A transformers causal LM in eval mode, decoding greedily with its KV cache."""

    def __init__(self, folder: str, dtype: str, threads: int | None) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        if threads:
            torch.set_num_threads(threads)
        self._torch = torch
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=self.dtype).eval()
        self._cache: Any = None

    def generate(self, prompt: list[int], new_tokens: int) -> Generation:
        """Greedy decoding, one forward per token, timing each token's arrival."""
        torch = self._torch
        tokens, times = [], []
        with torch.inference_mode():
            start = time.perf_counter()
            out = self.model(torch.tensor([prompt]), use_cache=True)
            for _ in range(new_tokens):
                token = int(out.logits[0, -1].argmax())
                tokens.append(token)
                times.append(time.perf_counter() - start)
                if len(tokens) == new_tokens:
                    break
                out = self.model(torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)
        self._cache = out.past_key_values
        return Generation(tuple(tokens), tuple(times))

    def score(self, tokens: list[int]) -> "np.ndarray":
        """Logits at every position, as float32."""
        torch = self._torch
        with torch.inference_mode():
            return self.model(torch.tensor([tokens])).logits[0].float().numpy()

    def kv_cache(self) -> tuple[int, int] | None:
        """The bytes of every key and value tensor the last generation left in its cache, and the tokens held."""
        cache = self._cache
        layers = getattr(cache, "layers", None)
        if not layers:
            return None
        tensors = [t for layer in layers for t in (layer.keys, layer.values) if t is not None]
        if not tensors:
            return None
        return int(sum(t.numel() * t.element_size() for t in tensors)), int(tensors[0].shape[-2])

    def info(self) -> dict:
        """Threads and dtype in force."""
        return {"threads": self._torch.get_num_threads(), "dtype": str(self.dtype).replace("torch.", "")}


class TorchLlmPlugin(LlmPlugin):
    """PyTorch eager: the model as it comes (fp32, the baseline), and bf16 weights and KV cache."""

    name = "llm.torch"
    title = "PyTorch eager"
    runtime = "pytorch"
    summary = "transformers' own model in eager mode: fp32 (the baseline) and bf16"
    requires = ("torch", "transformers")
    packages = ("torch", "transformers")
    is_baseline = True

    def candidates(self, ctx: LlmContext) -> Iterable[LlmSpec | LlmSkip]:
        """fp32 (the baseline) and bf16, both with the plan's threads; nothing to build."""
        folder = {"model": ctx.facts.folder}
        yield LlmSpec(self.name, f"torch fp32 {ctx.threads}t", weights="fp32", kv="fp32", threads=ctx.threads,
                      artifacts=folder)
        yield LlmSpec(self.name, f"torch bf16 {ctx.threads}t", weights="bf16", kv="bf16", threads=ctx.threads,
                      artifacts=folder)

    def open(self, spec: LlmSpec, facts: "LlmFacts") -> TorchLlmSession:
        """Load the folder at the spec's precision with its threads."""
        return TorchLlmSession(spec.artifacts.get("model", facts.folder), spec.weights, spec.threads)

    def describe(self, spec: LlmSpec) -> Description:
        """'PyTorch eager, bf16 weights, 2 threads' and the transformers lines that load it so."""
        dtype = {"fp32": "torch.float32", "bf16": "torch.bfloat16"}.get(spec.weights, "torch.float32")
        apply = (f"torch.set_num_threads({spec.threads})\n" if spec.threads else "") + (
            f"model = AutoModelForCausalLM.from_pretrained(folder, dtype={dtype}).eval()")
        threads = f", {spec.threads} threads" if spec.threads else ""
        return Description(f"PyTorch eager, {spec.weights} weights{threads}", apply)

    def package(self, spec: LlmSpec, facts: "LlmFacts", dest: Path) -> list[Path]:
        """The model folder (copied) and run.py, which loads it with transformers and generates."""
        model = dest / "model"
        shutil.copytree(spec.artifacts.get("model", facts.folder), model, dirs_exist_ok=True)
        run = dest / "run.py"
        run.write_text(runner_text(_RUNNER, {"weights": spec.weights, "threads": spec.threads or 0}))
        return [run, *sorted(p for p in model.rglob("*") if p.is_file())]

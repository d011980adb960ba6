"""OpenVINO GenAI on the CPU: the folder exported once to OpenVINO IR, then fp32, bf16 compute, INT8 and INT4 weights.

The export (optimum-intel, stateful, fp32 weights) and the tokenizer's conversion (openvino-tokenizers) happen once;
NNCF compresses copies of that IR (INT8 asymmetric per channel, INT4 symmetric in groups of 128 and 64), each in its
own folder. bf16 compute and the u8 KV cache are runtime properties over an existing folder, so they add no files.

Generation runs on GenAI's paged-attention engine, the one `LLMPipeline(folder, "CPU")` builds by default, with its
prefix cache turned off: LLMPipeline keeps the blocks of earlier prompts and reuses them, so a repeated prompt's
first token would come from the cache (a 512-token prompt's TTFT fell from ~330 ms to ~10 ms on the second call).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins.contract import Description
from planner.plugins.llm import Generation, LlmContext, LlmPlugin, LlmSkip, LlmSpec
from planner.plugins.packaging import runner_text

if TYPE_CHECKING:
    import numpy as np

    from planner.models.llm import LlmFacts

_RUNNER = Path(__file__).parent / "runners" / "openvino_run.py"
_IR = "openvino_model.xml"
_FP32_FOLDER = "openvino-fp32"
_SHARED_KEY = "openvino_ir_fp32"  # ctx.shared: the fp32 IR folder, for any plugin that can start from it
# LLMPipeline's own scheduler for one user leaves the tokens batched per step unlimited (a prompt is computed in
# one step); a SchedulerConfig made by hand starts at 256, which would split longer prompts into chunks.
_UNLIMITED_BATCH = sys.maxsize
# OpenVINO's names for the precisions, in the words LlmSpec uses.
_PRECISION_WORDS = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "u8": "u8", "i8": "int8", "u4": "u4"}
_INT4_GROUPS = (128, 64)


def _word(precision: Any) -> str:
    """'fp32', 'bf16', 'u8'... from an openvino Type or its short name."""
    name = precision.get_type_name() if hasattr(precision, "get_type_name") else str(precision)
    return _PRECISION_WORDS.get(name, name)


def _scheduler(genai: Any) -> Any:
    """LLMPipeline's single-user scheduler with the prefix cache off: every prompt is computed in full, in one step."""
    config = genai.SchedulerConfig()
    config.enable_prefix_caching = False
    config.max_num_batched_tokens = _UNLIMITED_BATCH
    return config


def _stamping_streamer(genai: Any) -> Any:
    """A GenAI streamer that records each token and the moment it was handed over.

    A plain callable streamer receives decoded text, which holds back tokens until they form whole characters;
    StreamerBase.write receives token ids as the engine produces them (a list, one id per decoding step here)."""

    class Stamps(genai.StreamerBase):
        def __init__(self, start: float) -> None:
            super().__init__()
            self.start = start
            self.tokens: list[int] = []
            self.times: list[float] = []

        def write(self, token: Any) -> Any:
            now = time.perf_counter() - self.start
            ids = [int(token)] if isinstance(token, int) else [int(t) for t in token]
            self.tokens += ids
            self.times += [now] * len(ids)  # ids handed over together arrived together
            return genai.StreamingStatus.RUNNING

        def end(self) -> None:
            pass

    return Stamps


class OpenVinoGenAiSession:
    """A candidate opened on GenAI's paged-attention engine, with the raw IR compiled beside it for scoring.

    The engine is GenAI's ContinuousBatchingPipeline, which LLMPipeline wraps on the CPU: the same code path, and
    unlike LLMPipeline it reports its KV cache (`get_metrics`). LLMPipeline exposes no logits, so `score` compiles
    the IR with openvino.Core (same properties) on first use; that second copy of the weights is only made after
    the timed generations, so it does not count in the memory they are measured with.
    """

    def __init__(self, folder: str, properties: dict) -> None:
        import openvino_genai as genai

        self._genai = genai
        self.folder = folder
        self.properties = dict(properties)
        self._pipe = genai.ContinuousBatchingPipeline(folder, _scheduler(genai), "CPU", self.properties)
        self._streamer = _stamping_streamer(genai)
        self._compiled: Any = None
        self._request: Any = None
        self._held_tokens = 0
        self._perf: Any = None

    def generate(self, prompt: list[int], new_tokens: int) -> Generation:
        """Greedy decoding of exactly `new_tokens` tokens (end tokens ignored), each stamped as it is streamed."""
        import numpy as np
        import openvino as ov

        genai = self._genai
        start = time.perf_counter()
        config = genai.GenerationConfig(max_new_tokens=new_tokens, min_new_tokens=new_tokens, ignore_eos=True,
                                        do_sample=False)
        streamer = self._streamer(start)
        ids = ov.Tensor(np.asarray([prompt], dtype=np.int64))
        result = self._pipe.generate([ids], [config], streamer)[0]
        tokens = [int(t) for t in result.m_generation_ids[0]]
        if streamer.tokens != tokens:
            raise RuntimeError(f"GenAI streamed {len(streamer.tokens)} tokens but returned {len(tokens)}: the "
                               "streamer did not see every token")
        self._perf = result.perf_metrics
        # The last token is sampled from the cache but never fed back, so the cache holds one token fewer.
        self._held_tokens = len(prompt) + len(tokens) - 1
        return Generation(tuple(tokens), tuple(streamer.times))

    def score(self, tokens: list[int]) -> "np.ndarray":
        """Logits at every position, from one pass of the IR (its logits output keeps every position)."""
        import numpy as np

        request = self._raw_request()
        request.reset_state()  # the IR is stateful: start from an empty KV cache
        length = len(tokens)
        feed = {"input_ids": np.asarray([tokens], dtype=np.int64),
                "attention_mask": np.ones((1, length), dtype=np.int64),
                "position_ids": np.arange(length, dtype=np.int64)[None],
                "beam_idx": np.zeros(1, dtype=np.int32)}
        names = {name for port in self._compiled.inputs for name in port.get_names()}
        request.infer({k: v for k, v in feed.items() if k in names})
        logits = np.array(request.get_tensor("logits").data[0], dtype=np.float32)
        if logits.shape[0] != length:
            raise RuntimeError(f"the IR returned logits for {logits.shape[0]} of {length} positions (an export that "
                               "keeps only the last position's cannot be scored)")
        return logits

    def kv_cache(self) -> tuple[int, int] | None:
        """The bytes of the KV blocks the last generation used, read from the engine's own cache, and its tokens.

        GenAI reports the cache it allocated (kv_cache_size_in_bytes) and the share of it the last step used
        (cache_usage, %); their product is the blocks that held this sequence: whole blocks (32 tokens on the
        CPU), with the u8 cache's scales and zero points. The pool itself grows ahead of need, so it is not used."""
        if not self._held_tokens:
            return None
        metrics = self._pipe.get_metrics()
        used = int(round(metrics.kv_cache_size_in_bytes * metrics.cache_usage / 100.0))
        return (used, self._held_tokens) if used > 0 else None

    def info(self) -> dict:
        """Threads and precisions in force, read back from the IR compiled with the same properties, and GenAI's
        own TTFT and TPOT of the last generation (ms)."""
        compiled = self._raw_compiled()
        out: dict = {"device": "CPU", "attention": "paged (GenAI continuous batching), prefix cache off",
                     "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                     "inference_precision": _word(compiled.get_property("INFERENCE_PRECISION_HINT")),
                     "kv_cache_precision": _word(compiled.get_property("KV_CACHE_PRECISION"))}
        if self._perf is not None:
            out["runtime_ttft_ms"] = float(self._perf.get_ttft().mean)
            out["runtime_tpot_ms"] = float(self._perf.get_tpot().mean)
        return out

    def _raw_compiled(self) -> Any:
        if self._compiled is None:
            import openvino as ov

            self._compiled = ov.Core().compile_model(str(Path(self.folder) / _IR), "CPU", self.properties)
        return self._compiled

    def _raw_request(self) -> Any:
        if self._request is None:
            self._request = self._raw_compiled().create_infer_request()
        return self._request


class OpenVinoGenAiPlugin(LlmPlugin):
    """OpenVINO GenAI on the CPU: fp32, bf16 compute, INT8 and INT4 weights (NNCF), and a u8 KV cache."""

    name = "llm.openvino"
    title = "OpenVINO GenAI"
    runtime = "openvino"
    summary = ("the model exported to OpenVINO IR (optimum-intel), run by OpenVINO GenAI: fp32, bf16 compute, "
               "INT8 and INT4 weights compressed with NNCF, and a u8 KV cache")
    requires = ("openvino", "openvino_genai", "openvino_tokenizers", "optimum", "nncf")
    packages = ("openvino-genai", "openvino-tokenizers", "optimum-intel", "nncf")
    build_cost_s = 90.0

    def check(self, facts: "LlmFacts", ctx: LlmContext | None = None) -> list[str]:
        """Every reason this plugin cannot run here: a missing package (optimum without its intel part too)."""
        import importlib.util

        reasons = super().check(facts, ctx)
        if not reasons:
            try:
                found = importlib.util.find_spec("optimum.intel") is not None
            except ImportError:
                found = False
            if not found:
                reasons.append("optimum is installed without optimum-intel, which exports the model to OpenVINO: "
                               "pip install optimum-intel")
        return reasons

    def candidates(self, ctx: LlmContext) -> Iterable[LlmSpec | LlmSkip]:
        """Export once, then yield fp32, bf16 compute, INT8, INT4 g128 and g64, and INT4 with a u8 KV cache.

        Quick mode keeps fp32, INT8, one INT4 (g128, or g64 where 128 does not fit) and its u8 KV variant."""
        import openvino as ov

        threads = ctx.threads
        suffix = f" {threads}t"
        if ctx.cancel():
            return
        try:
            fp32 = self._export(ctx)
        except Exception as exc:  # noqa: BLE001 - optimum raises many types for an architecture it cannot export
            yield LlmSkip(f"openvino fp32{suffix}", f"optimum-intel could not export {ctx.facts.architecture} to "
                          f"OpenVINO IR: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            return
        base = {"INFERENCE_NUM_THREADS": threads}
        # The KV cache precision is set on every candidate: left to the device it is f16 once compiled here, while
        # the Core reports u8 as its default, so only a set value says truly what a candidate ran with.
        yield LlmSpec(self.name, f"openvino fp32{suffix}", weights="fp32", kv="fp32", threads=threads,
                      config={"properties": {**base, "INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}},
                      artifacts={"model": str(fp32)})
        core = ov.Core()
        compute = _word(core.get_property("CPU", "INFERENCE_PRECISION_HINT"))
        if not ctx.quick:
            capabilities = [str(c) for c in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")]
            if "BF16" in capabilities:
                yield LlmSpec(self.name, f"openvino bf16{suffix}", weights="bf16", kv="fp16", threads=threads,
                              config={"properties": {**base, "INFERENCE_PRECISION_HINT": "bf16",
                                                     "KV_CACHE_PRECISION": "f16"}},
                              artifacts={"model": str(fp32)},
                              notes=("the IR stores fp32 weights; the CPU plugin converts them to bf16 when it "
                                     "compiles",))
            else:
                yield LlmSkip(f"openvino bf16{suffix}", "this CPU has no bf16 instructions (OpenVINO's CPU "
                              f"capabilities: {', '.join(capabilities)})")
        compressed_note = (f"computes in {compute}, the CPU plugin's default here",)
        if ctx.cancel():
            return
        int8 = self._compress(ctx, fp32, "int8", None)
        if isinstance(int8, LlmSkip):
            yield int8
        else:
            yield LlmSpec(self.name, f"openvino int8{suffix}", weights="int8", kv="fp16", threads=threads,
                          config={"properties": {**base, "KV_CACHE_PRECISION": "f16"}},
                          artifacts={"model": str(int8)}, notes=compressed_note)
        best: tuple[int, Path] | None = None
        for group in _INT4_GROUPS:
            if ctx.cancel():
                return
            if ctx.quick and best is not None:
                break
            int4 = self._compress(ctx, fp32, "int4", group)
            if isinstance(int4, LlmSkip):
                yield int4
                continue
            best = best or (group, int4)
            yield LlmSpec(self.name, f"openvino int4 g{group}{suffix}", weights="int4", kv="fp16", threads=threads,
                          config={"properties": {**base, "KV_CACHE_PRECISION": "f16"}, "group_size": group},
                          artifacts={"model": str(int4)}, notes=compressed_note)
        if best is not None:
            group, folder = best
            yield LlmSpec(self.name, f"openvino int4 g{group} kv-u8{suffix}", weights="int4", kv="u8",
                          threads=threads,
                          config={"properties": {**base, "KV_CACHE_PRECISION": "u8"}, "group_size": group},
                          artifacts={"model": str(folder)}, notes=compressed_note)

    def open(self, spec: LlmSpec, facts: "LlmFacts") -> OpenVinoGenAiSession:
        """Load the spec's IR folder on GenAI's engine with its compile properties."""
        return OpenVinoGenAiSession(spec.artifacts["model"], _properties(spec))

    def describe(self, spec: LlmSpec) -> Description:
        """A plain title and the optimum-cli export plus the openvino_genai lines that run the candidate so."""
        props = _properties(spec)
        group = spec.config.get("group_size")
        if spec.weights == "int4":
            weights, export = f"INT4 weights (symmetric, group {group})", (
                f"--weight-format int4 --sym --group-size {group} --ratio 1.0")
        elif spec.weights == "int8":
            weights, export = "INT8 weights (asymmetric, per channel)", "--weight-format int8"
        elif spec.weights == "bf16":
            weights, export = "fp32 weights computed in bf16", "--weight-format fp32"
        else:
            weights, export = "fp32 weights", "--weight-format fp32"
        kv = {"u8": ", u8 KV cache", "fp32": ", fp32 KV cache"}.get(spec.kv, "")
        threads = f", {spec.threads} threads" if spec.threads else ""
        args = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in props.items())
        apply = (f"optimum-cli export openvino --model MODEL_DIR {export} OV_DIR\n"
                 "import openvino_genai\n"
                 f"pipe = openvino_genai.LLMPipeline(\"OV_DIR\", \"CPU\", {args})\n"
                 "print(pipe.generate(\"The capital of France is\", max_new_tokens=64))\n"
                 "# measured with the prefix cache off (scheduler_config=SchedulerConfig(enable_prefix_caching="
                 "False, ...)); LLMPipeline turns it on, which only speeds up prompts that repeat a prefix")
        return Description(f"OpenVINO GenAI, {weights}{kv}{threads}", apply)

    def package(self, spec: LlmSpec, facts: "LlmFacts", dest: Path) -> list[Path]:
        """The IR folder (model, tokenizer and detokenizer IRs, HF tokenizer files) and run.py over LLMPipeline."""
        model = dest / "model"
        shutil.copytree(spec.artifacts["model"], model, dirs_exist_ok=True)
        run = dest / "run.py"
        run.write_text(runner_text(_RUNNER, {"properties": _properties(spec), "prefix_caching": False}))
        return [run, *sorted(p for p in model.rglob("*") if p.is_file())]

    # -- building ------------------------------------------------------------------------------------------------

    def _export(self, ctx: LlmContext) -> Path:
        """The fp32 stateful IR with the tokenizer IRs beside it, exported once per plan (shared in ctx.shared)."""
        shared = ctx.shared.get(_SHARED_KEY)
        if shared and (Path(shared) / _IR).is_file():
            return Path(shared)
        import openvino as ov
        import torch
        from openvino_tokenizers import convert_tokenizer
        from optimum.intel import OVModelForCausalLM
        from transformers import AutoTokenizer

        out = ctx.workdir / _FP32_FOLDER
        ctx.log(f"exporting {ctx.facts.name} to OpenVINO IR (optimum-intel, fp32 weights)")
        start = time.perf_counter()
        # torch_dtype=float32: a bf16 folder would otherwise be exported with bf16 weights; load_in_8bit=False:
        # optimum compresses models over a billion parameters to INT8 on export unless told not to.
        model = OVModelForCausalLM.from_pretrained(ctx.facts.folder, export=True, stateful=True, compile=False,
                                                   load_in_8bit=False, torch_dtype=torch.float32)
        model.save_pretrained(out)
        del model
        tokenizer = AutoTokenizer.from_pretrained(ctx.facts.folder)
        tokenizer.save_pretrained(out)
        ov_tokenizer, ov_detokenizer = convert_tokenizer(tokenizer, with_detokenizer=True)
        ov.save_model(ov_tokenizer, out / "openvino_tokenizer.xml")
        ov.save_model(ov_detokenizer, out / "openvino_detokenizer.xml")
        ctx.log(f"exported in {time.perf_counter() - start:.1f} s")
        ctx.shared[_SHARED_KEY] = str(out)
        return out

    def _compress(self, ctx: LlmContext, fp32: Path, weights: str, group: int | None) -> Path | LlmSkip:
        """A copy of the fp32 folder with NNCF-compressed weights, or why this model cannot be compressed so."""
        import nncf
        import openvino as ov
        from nncf.errors import InvalidGroupSizeError

        label = f"openvino {weights}" + (f" g{group}" if group else "") + f" {ctx.threads}t"
        out = ctx.workdir / (f"openvino-{weights}" + (f"-g{group}" if group else ""))
        ctx.log(f"compressing the weights to {weights}" + (f" in groups of {group}" if group else "") + " (NNCF)")
        model = ov.Core().read_model(str(fp32 / _IR))  # NNCF changes the model it is given: a fresh read each time
        try:
            if group is None:
                compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_ASYM)
            else:
                compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT4_SYM, group_size=group,
                                                   ratio=1.0)
        except InvalidGroupSizeError as exc:
            # NNCF (by default) refuses a group size that does not divide every layer's input, rather than
            # quantizing those layers differently.
            return LlmSkip(label, _group_reason(ctx.facts, group or 0) or str(exc).splitlines()[0])
        shutil.copytree(fp32, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns("openvino_model.*"))
        ov.save_model(compressed, out / _IR, compress_to_fp16=False)
        return out


def _properties(spec: LlmSpec) -> dict:
    """The spec's OpenVINO compile properties (config["properties"]; config["group_size"] records INT4's groups)."""
    return dict(spec.config.get("properties", {}))


def _group_reason(facts: "LlmFacts", group: int) -> str:
    """Which of the model's layer inputs an INT4 group size does not divide, in words ('' if none does)."""
    inputs = {"hidden size": facts.hidden, "attention output size": facts.heads * facts.head_size,
              "MLP size": facts.intermediate}
    for name, size in inputs.items():
        if size % group:
            verb = "is larger than" if group > size else "does not divide"
            return f"group {group} {verb} the {name} {size}"
    return ""

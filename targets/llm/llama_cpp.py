"""llama.cpp through llama-cpp-python: the GGUF file a user brings (Q8_0, Q4_K_M...), measured as it is.

The planner does not convert or quantise to GGUF (llama.cpp's converter and quantiser are separate tools); it
measures the file given with `--gguf`, checked against the folder's model (same layers and width), and names
its quantisation from the file's metadata (`general.file_type`) or, failing that, its name. llama-cpp-python
compiles llama.cpp when it installs, so the [llm] extra leaves it out; the plugin says so where it is absent.

Generation is llama.cpp's own loop: `Llama.eval` over the prompt (the prefill), then greedy `Llama.sample`
and `Llama.eval` of each token, stamped as each token is sampled. Scoring needs every position's logits, which
llama-cpp-python keeps only with `logits_all=True` (one row per token in `Llama.scores`), and that makes the
prefill compute the output head at every prompt position; so a second `Llama` over the same file (memory-mapped,
its weights shared) scores, made at the first `score`, after the timing and the memory peak.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterable

from planner.plugins.contract import Description
from planner.plugins.llm import Generation, LlmContext, LlmPlugin, LlmSkip, LlmSpec
from planner.plugins.packaging import runner_text

if TYPE_CHECKING:
    import numpy as np

    from planner.models.llm import LlmFacts

_RUNNER = Path(__file__).parent / "runners" / "llama_cpp_run.py"
N_CTX = 2048  # the context llama.cpp allocates its KV cache for: the plan's prompts and generations fit
NO_GGUF = "no GGUF file given: pass --gguf model.gguf (Q8_0, Q4_K_M...) to measure llama.cpp"
NOT_INSTALLED = ("llama-cpp-python not installed (pip install llama-cpp-python; it compiles llama.cpp, so it needs "
                 "a C++ compiler and a few minutes, and pip install -e .[llm] leaves it out)")

# llama.h's llama_ftype: what `general.file_type` in a GGUF's metadata means.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
    37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}
# A quantisation name in a file name: Q4_K_M, q8_0, IQ4_XS, F16, BF16 (between separators).
_NAME = re.compile(r"(?:^|[-_.])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?=[-_.]|$)", re.IGNORECASE)

# GGUF value types: struct formats of the fixed-size ones; 8 is a string, 9 an array.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GgufError(ValueError):
    """A file that is not a GGUF the reader understands."""


def _read(handle: BinaryIO, size: int) -> bytes:
    data = handle.read(size)
    if len(data) != size:
        raise GgufError("the file ends inside its metadata")
    return data


def _string(handle: BinaryIO) -> str:
    (length,) = struct.unpack("<Q", _read(handle, 8))
    if length > 1 << 26:
        raise GgufError(f"a metadata string of {length} bytes")
    return _read(handle, length).decode("utf-8", errors="replace")


def _value(handle: BinaryIO, kind: int) -> Any:
    """One metadata value; an array is skipped and stands for its length (a vocabulary is 100k+ strings)."""
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, _read(handle, struct.calcsize(fmt)))[0]
    if kind == _STRING:
        return _string(handle)
    if kind == _ARRAY:
        item, count = struct.unpack("<IQ", _read(handle, 12))
        if item in _SCALARS:
            handle.seek(struct.calcsize(_SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _value(handle, item)
        return count
    raise GgufError(f"an unknown metadata type {kind}")


def read_gguf_metadata(path: Path) -> dict[str, Any]:
    """A GGUF file's architecture, file type, layers and width (read from its header, nothing else loaded).

    Not llama.cpp's `gguf.GGUFReader`: it maps every vocabulary string into an array of its own, which took 6 s
    on a 151k-token header that this reader, stopping once it has what it needs, reads in 0.06 s (the tests
    write their files with `gguf.GGUFWriter`, so the two agree on the format).
    """
    found: dict[str, Any] = {}
    with Path(path).open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise GgufError("it does not start with GGUF")
        version, _tensors, count = struct.unpack("<IQQ", _read(handle, 20))
        if version < 2:
            raise GgufError(f"GGUF version {version} is older than llama.cpp reads")
        for _ in range(count):
            key = _string(handle)
            (kind,) = struct.unpack("<I", _read(handle, 4))
            found[key] = _value(handle, kind)
            arch = found.get("general.architecture")
            if arch and all(k in found for k in ("general.file_type", f"{arch}.block_count",
                                                 f"{arch}.embedding_length")):
                break  # the rest is the tokenizer's vocabulary and settings
    return found


def quant_type(path: Path, metadata: dict[str, Any] | None = None) -> str:
    """The GGUF's quantisation (Q4_K_M, Q8_0, F16...): its metadata's file type, else its file name; '' if neither."""
    file_type = (metadata or {}).get("general.file_type")
    if isinstance(file_type, int) and file_type in FILE_TYPES:
        return FILE_TYPES[file_type]
    match = _NAME.search(Path(path).name.removesuffix(".gguf"))
    return match.group(1).upper() if match else ""


def weight_precision(quant: str) -> str:
    """The nearest precision the plan counts bytes in (WEIGHT_BYTES's keys): 5- and 6-bit types count as int8,
    2- to 4-bit ones as int4; an unknown type as int4."""
    if quant in ("F32", "F16", "BF16"):
        return {"F32": "fp32", "F16": "fp16", "BF16": "bf16"}[quant]
    digits = re.search(r"\d", quant)
    return "int8" if digits and int(digits.group()) >= 5 else "int4"


class LlamaCppSession:
    """A GGUF opened with llama_cpp.Llama, decoding greedily with eval and sample."""

    def __init__(self, path: str, threads: int | None, n_ctx: int, quant: str) -> None:
        from llama_cpp import Llama

        # n_threads_batch is the prefill's: left out, llama-cpp-python uses every core there.
        self._settings = dict(model_path=path, n_ctx=n_ctx, n_threads=threads or None,
                              n_threads_batch=threads or None, verbose=False)
        self.llm = Llama(**self._settings, logits_all=False)
        self.quant = quant
        self._scorer: Any = None

    def generate(self, prompt: list[int], new_tokens: int) -> Generation:
        """Greedy decoding of exactly `new_tokens` tokens (an end token is sampled and fed back like any other)."""
        llm = self.llm
        llm.reset()  # the next eval drops the cache from position 0
        tokens: list[int] = []
        times: list[float] = []
        start = time.perf_counter()
        llm.eval(prompt)
        while True:
            # temp 0 is llama.cpp's greedy sampler; the repeat penalty is switched off (older versions' 1.1).
            token = int(llm.sample(temp=0.0, repeat_penalty=1.0))
            tokens.append(token)
            times.append(time.perf_counter() - start)
            if len(tokens) == new_tokens:
                break
            llm.eval([token])
        return Generation(tuple(tokens), tuple(times))

    def score(self, tokens: list[int]) -> "np.ndarray":
        """Logits at every position, from a second Llama made with logits_all=True (its `scores` rows)."""
        import numpy as np
        from llama_cpp import Llama

        if self._scorer is None:
            self._scorer = Llama(**self._settings, logits_all=True)
        scorer = self._scorer
        scorer.reset()
        scorer.eval(tokens)
        return np.array(scorer.scores[:len(tokens)], dtype=np.float32)

    def kv_cache(self) -> tuple[int, int] | None:
        """llama.cpp's own size of the generation's sequence in its cache (llama_state_seq_get_size: the K and V
        rows of every token held, with a few bytes of cell positions), and the tokens held (Llama.n_tokens)."""
        import llama_cpp

        held = int(self.llm.n_tokens)
        size_of = getattr(llama_cpp, "llama_state_seq_get_size", None)
        if not held or size_of is None:
            return None
        return int(size_of(self.llm.ctx, 0)), held

    def info(self) -> dict:
        """Threads, context, weights' quantisation and the KV cache's type."""
        params = self.llm.context_params
        return {"threads": int(params.n_threads), "threads_batch": int(params.n_threads_batch),
                "n_ctx": int(self.llm.n_ctx()), "weights": self.quant, "kv": "f16"}


class LlamaCppPlugin(LlmPlugin):
    """llama.cpp (llama-cpp-python): the GGUF a user brings, with the plan's threads."""

    name = "llm.llama_cpp"
    title = "llama.cpp"
    runtime = "llama.cpp"
    summary = "llama.cpp through llama-cpp-python: measures a GGUF file you bring (--gguf), Q8_0, Q4_K_M..."
    requires = ("llama_cpp",)
    packages = ("llama-cpp-python",)

    def check(self, facts: "LlmFacts", ctx: LlmContext | None = None) -> list[str]:
        """Why llama.cpp cannot be measured: llama-cpp-python missing; no GGUF given, or one that is not this model."""
        reasons = [] if importlib.util.find_spec("llama_cpp") is not None else [NOT_INSTALLED]
        if ctx is None:
            return reasons
        if ctx.gguf is None:
            return reasons + [NO_GGUF]
        problem = gguf_problem(Path(ctx.gguf), facts)
        return reasons + ([problem] if problem else [])

    def candidates(self, ctx: LlmContext) -> Iterable[LlmSpec | LlmSkip]:
        """The GGUF as it is (nothing to build): one candidate, or a skip saying why it cannot be measured."""
        reasons = self.check(ctx.facts, ctx)
        gguf = Path(ctx.gguf) if ctx.gguf is not None else None
        if reasons or gguf is None:
            yield LlmSkip(f"llama.cpp {gguf.name if gguf else 'GGUF'}", "; ".join(reasons) or NO_GGUF)
            return
        quant = quant_type(gguf, read_gguf_metadata(gguf)) or "unknown type"
        size = gguf.stat().st_size
        n_ctx = min(N_CTX, ctx.facts.context)
        yield LlmSpec(self.name, f"llama.cpp {quant} {ctx.threads}t", weights=weight_precision(quant), kv="fp16",
                      threads=ctx.threads, artifacts={"model": str(gguf.resolve())},
                      config={"quant": quant, "n_ctx": n_ctx, "file_bytes": size},
                      notes=(f"the GGUF you gave ({gguf.name}, {quant}, {size / 1e6:.4g} MB), measured as it is",))

    def open(self, spec: LlmSpec, facts: "LlmFacts") -> LlamaCppSession:
        """llama_cpp.Llama over the GGUF with the spec's threads (decode and prefill) and context."""
        return LlamaCppSession(spec.artifacts["model"], spec.threads, int(spec.config.get("n_ctx", N_CTX)),
                               str(spec.config.get("quant", "")))

    def describe(self, spec: LlmSpec) -> Description:
        """'llama.cpp, Q4_K_M weights (GGUF), 2 threads', and the llama-cpp-python lines that run it so."""
        threads = f", {spec.threads} threads" if spec.threads else ""
        name = Path(spec.artifacts.get("model", "model.gguf")).name
        thread_args = f", n_threads={spec.threads}, n_threads_batch={spec.threads}" if spec.threads else ""
        apply = "\n".join([
            f'llm = Llama(model_path="{name}", n_ctx={spec.config.get("n_ctx", N_CTX)}{thread_args})',
            "llm.eval(llm.tokenize(prompt.encode()))",
            "token = llm.sample(temp=0.0)  # greedy; then llm.eval([token]) and sample again",
        ])
        return Description(f"{self.title}, {spec.config.get('quant', spec.weights)} weights (GGUF){threads}", apply)

    def package(self, spec: LlmSpec, facts: "LlmFacts", dest: Path) -> list[Path]:
        """The GGUF (copied as model.gguf) and run.py, which generates with llama-cpp-python."""
        dest.mkdir(parents=True, exist_ok=True)
        model = dest / "model.gguf"
        shutil.copyfile(spec.artifacts["model"], model)
        run = dest / "run.py"
        run.write_text(runner_text(_RUNNER, {"quant": spec.config.get("quant", ""), "threads": spec.threads or 0,
                                             "n_ctx": int(spec.config.get("n_ctx", N_CTX))}))
        return [run, model]


def gguf_problem(path: Path, facts: "LlmFacts") -> str:
    """Why a GGUF cannot stand for the folder's model ('' when it can): missing, unreadable, or another model."""
    if not path.is_file():
        return f"the GGUF file {path} does not exist"
    try:
        metadata = read_gguf_metadata(path)
    except (OSError, GgufError, struct.error) as exc:
        return f"{path.name} is not a GGUF file llama.cpp reads ({exc})"
    arch = metadata.get("general.architecture", "")
    layers, width = metadata.get(f"{arch}.block_count"), metadata.get(f"{arch}.embedding_length")
    if (layers, width) != (facts.layers, facts.hidden) and layers is not None:
        return (f"{path.name} holds another model ({layers} layers, width {width}) than the folder's "
                f"({facts.layers} layers, width {facts.hidden}): pass the GGUF converted from this model")
    return ""

"""ONNX Runtime GenAI: the model builder's ONNX decoder (fp32, INT4 MatMulNBits), run token by token by og.Generator.

Candidates are built with ONNX Runtime GenAI's own model builder, run as a subprocess (`python -m
onnxruntime_genai.models.builder`), offline from the Hugging Face folder: fp32, and INT4 weight-only
MatMulNBits with block 32 and block 128 at accuracy level 4 (int8 activations in the matmul, the builder's CPU
default). Each built folder's genai_config.json carries the plan's threads (decoder session option
`intra_op_num_threads`), so the folder handed over runs as it was measured.

Timing keeps ORT GenAI's own benchmark's boundaries (benchmark/python/benchmark_e2e.py): the Generator is made
before the clock starts; the first token's time is `append_tokens` (the prefill) plus the first
`generate_next_token`; every later token is one `generate_next_token`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from planner.plugins.contract import Description
from planner.plugins.llm import Generation, LlmContext, LlmPlugin, LlmSkip, LlmSpec
from planner.plugins.packaging import runner_text

if TYPE_CHECKING:
    import numpy as np

    from planner.models.llm import LlmFacts

_RUNNER = Path(__file__).parent / "runners" / "ort_genai_run.py"
_BUILDER = "onnxruntime_genai.models.builder"
ACCURACY_LEVEL = 4  # MatMulNBits computes with int8 activations: the fast CPU path (the builder's CPU default)
BLOCKS = (32, 128)  # the INT4 block sizes a full plan builds; a quick plan builds the first


def builder_command(source: str, out: str, precision: str, block_size: int | None = None) -> list[str]:
    """The model builder's command line (without the interpreter) for `precision` on the CPU.

    The builder's `block_size` and `accuracy_level` options are the current names of `int4_block_size` and
    `int4_accuracy_level` (kept by 0.18 as deprecated aliases)."""
    command = ["-m", _BUILDER, "-i", source, "-o", out, "-p", precision, "-e", "cpu"]
    if precision == "int4":
        command += ["--extra_options", f"block_size={block_size or BLOCKS[0]}", f"accuracy_level={ACCURACY_LEVEL}"]
    return command


def build_timeout_s(facts: "LlmFacts") -> float:
    """Seconds the builder may take: a floor for its imports, plus a second per million parameters (a 0.5B
    model's INT4 build takes one to two minutes on 2 cores)."""
    return 300.0 + facts.parameters / 1e6


def last_error_line(output: str) -> str:
    """The line of the builder's output that says why it failed: the last one naming an error, else the last one.

    Progress bars rewrite their line with carriage returns, so those count as line breaks."""
    lines = [line.strip() for line in output.replace("\r", "\n").splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error:" in line:
            return line
    return lines[-1] if lines else "it printed nothing"


def _input_widths(facts: "LlmFacts") -> int:
    """The smallest input width of the layers the builder quantizes (attention, MLP and output projections)."""
    return min(facts.hidden, facts.intermediate, facts.heads * facts.head_size)


def _megabytes(count: float) -> str:
    """Bytes in MB, or GB from 1000 MB up."""
    return f"{count / 1e9:.3g} GB" if count >= 1e9 else f"{count / 1e6:.3g} MB"


def set_threads(folder: Path, threads: int | None) -> None:
    """Write the decoder's intra-op threads into a built folder's genai_config.json (0 or None: ORT's default)."""
    path = folder / "genai_config.json"
    config = json.loads(path.read_text())
    options = config["model"]["decoder"].setdefault("session_options", {})
    if threads:
        options["intra_op_num_threads"] = int(threads)
    else:
        options.pop("intra_op_num_threads", None)
    path.write_text(json.dumps(config, indent=4))


def folder_bytes(folder: Path) -> int:
    """The bytes of a built folder's model files (the ONNX graph and its external data)."""
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and ".onnx" in p.name)


class OrtGenAiSession:
    """A built folder opened with og.Model, decoding greedily with og.Generator."""

    def __init__(self, folder: str, threads: int | None, config: dict) -> None:
        import onnxruntime_genai as og

        self._og = og
        self.folder = Path(folder)
        self.config = dict(config)
        settings = json.loads((self.folder / "genai_config.json").read_text())
        decoder = settings["model"]["decoder"]
        self.layers = int(decoder["num_hidden_layers"])
        outputs = decoder.get("outputs", {})
        self._logits = outputs.get("logits", "logits")
        self._keys = outputs.get("present_key_names", "present.%d.key")
        self._values = outputs.get("present_value_names", "present.%d.value")
        og_config = og.Config(str(self.folder))
        if threads:
            # The built folder says the same; the overlay keeps the spec's threads in force over any folder.
            og_config.overlay(json.dumps({"model": {"decoder": {"session_options": {
                "intra_op_num_threads": int(threads)}}}}))
        self.threads = int(threads or decoder.get("session_options", {}).get("intra_op_num_threads") or 0)
        self.model = og.Model(og_config)
        self._generator: Any = None

    def _new_generator(self, max_length: int) -> Any:
        og = self._og
        self._generator = None  # frees the last generator's KV cache before the next one allocates its own
        params = og.GeneratorParams(self.model)
        # No min_length: ORT GenAI enforces it by masking the end token's logit, which would change greedy
        # choices where the model picks it (PyTorch's argmax does not); `generate` steps past an end token instead.
        params.set_search_options(max_length=max_length, do_sample=False)
        return og.Generator(self.model, params)

    def generate(self, prompt: list[int], new_tokens: int) -> Generation:
        """Greedy decoding of exactly `new_tokens` tokens, stamped as generate_next_token hands each over."""
        import numpy as np

        generator = self._new_generator(len(prompt) + new_tokens)
        tokens: list[int] = []
        times: list[float] = []
        start = time.perf_counter()
        generator.append_tokens(np.asarray(prompt, dtype=np.int32))
        while len(tokens) < new_tokens:
            if generator.is_done():
                # The search stopped at an end token; feeding it back (one decode step, as a generated token
                # costs) continues the sequence, as the PyTorch baseline does.
                generator.append_tokens(np.asarray(tokens[-1:], dtype=np.int32))
            generator.generate_next_token()
            tokens.append(int(generator.get_next_tokens()[0]))
            times.append(time.perf_counter() - start)
        self._generator = generator
        return Generation(tuple(tokens), tuple(times))

    def score(self, tokens: list[int]) -> "np.ndarray":
        """Logits at every position: the prefill's `logits` output holds all of them ([1, len, vocab]), where
        `get_logits()` gives the last one only."""
        import numpy as np

        generator = self._new_generator(len(tokens))
        generator.append_tokens(np.asarray(tokens, dtype=np.int32))
        logits = np.asarray(generator.get_output(self._logits), dtype=np.float32)
        self._generator = None
        if logits.ndim != 3 or logits.shape[1] != len(tokens):
            raise RuntimeError(f"the model's logits output has shape {logits.shape}, not one row per token "
                               f"({len(tokens)}): was it built with prune_lm_head?")
        return logits[0]

    def kv_cache(self) -> tuple[int, int] | None:
        """The bytes of every present.N.key/value tensor the last generation holds, and the tokens they hold.

        ORT GenAI shares past and present buffers (past_present_share_buffer), allocated for the generation's
        max_length (prompt + new tokens) when the Generator is made."""
        generator = self._generator
        if generator is None:
            return None
        total, held = 0, 0
        try:
            for layer in range(self.layers):
                for pattern in (self._keys, self._values):
                    tensor = generator.get_output(pattern % layer)
                    total += int(tensor.nbytes)
                    held = int(tensor.shape[-2])
        except RuntimeError:
            return None  # a model type whose cache has other names
        return total, held

    def info(self) -> dict:
        """Threads, weight precision (and INT4 block and accuracy level), device."""
        info = {"threads": self.threads, "precision": self.config.get("precision", "fp32"),
                "device": str(self.model.device_type)}
        if self.config.get("precision") == "int4":
            info.update(block_size=self.config.get("block_size"), accuracy_level=self.config.get("accuracy_level"))
        return info


class OrtGenAiPlugin(LlmPlugin):
    """ONNX Runtime GenAI: its model builder's fp32 and INT4 (MatMulNBits, block 32 and 128) decoders."""

    name = "llm.onnxruntime"
    title = "ONNX Runtime GenAI"
    runtime = "onnxruntime-genai"
    summary = "ONNX Runtime GenAI's model builder: fp32 and INT4 MatMulNBits weights (block 32, 128; accuracy level 4)"
    requires = ("onnxruntime_genai", "transformers")
    packages = ("onnxruntime-genai", "transformers")
    build_cost_s = 120.0

    def candidates(self, ctx: LlmContext) -> Iterable[LlmSpec | LlmSkip]:
        """What cannot be built first (known without building), then fp32 and INT4 (block 32; block 128 unless
        quick), each built by the model builder with the plan's threads written into its genai_config.json."""
        facts = ctx.facts
        int2 = _megabytes(facts.parameters * (2 / 8 + 2 / 32))  # 2-bit weights with an fp16 scale per 32
        yield LlmSkip(f"ort-genai int2 {ctx.threads}t",
                      f"INT2: a size option only (about {int2} of weights), not a speed path on CPU: ONNX "
                      "Runtime's CPU MatMulNBits kernel for 2-bit weights falls back to a slow loop")
        blocks = BLOCKS[:1] if ctx.quick else BLOCKS
        width = _input_widths(facts)
        buildable = []
        for size in blocks:
            if size > width:
                yield LlmSkip(f"ort-genai int4 b{size} {ctx.threads}t",
                              f"INT4 block {size} is larger than this model's layer inputs ({width} wide): the "
                              f"builder pads each row to one {size}-wide block, a per-row scale stored in more "
                              "bytes than a smaller block would take")
            else:
                buildable.append(size)
        root = ctx.workdir / "ort_genai"
        builds: list[tuple[str, int | None]] = [("fp32", None)] + [("int4", size) for size in buildable]
        for precision, block in builds:
            if ctx.cancel():
                return
            suffix = f" b{block}" if block else ""
            label = f"ort-genai {precision}{suffix} {ctx.threads}t"
            out = root / (f"{precision}_b{block}" if block else precision)
            config: dict = {"precision": precision, "source": facts.folder}
            if block:
                config.update(block_size=block, accuracy_level=ACCURACY_LEVEL)
            problem, seconds = self._build(ctx, out, precision, block)
            if problem:
                yield LlmSkip(label, problem)
                continue
            set_threads(out, ctx.threads)
            size = folder_bytes(out)
            config.update(build_s=round(seconds, 1), model_bytes=size)
            ctx.log(f"{self.title}: built {precision}{suffix} in {seconds:.1f} s ({_megabytes(size)} of model files)")
            yield LlmSpec(self.name, label, weights=precision, kv="fp32", threads=ctx.threads, config=config,
                          artifacts={"model": str(out)})

    def _build(self, ctx: LlmContext, out: Path, precision: str, block: int | None) -> tuple[str, float]:
        """Run the model builder into `out`; ('', seconds) when it built, (why it did not, seconds) otherwise."""
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        what = f"{precision} block {block}" if block else precision
        ctx.log(f"{self.title}: building {what} with the model builder")
        timeout = build_timeout_s(ctx.facts)
        # Offline: the folder holds everything, and a machine without network must not wait on the Hub.
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        with tempfile.TemporaryDirectory(prefix="ort_genai_cache_", dir=out.parent) as cache, \
                tempfile.TemporaryFile(mode="w+", dir=out.parent) as log:
            # Absolute paths: the builder runs in its cache folder, where a relative path means elsewhere.
            command = [sys.executable, *builder_command(str(Path(ctx.facts.folder).resolve()), str(out.resolve()),
                                                        precision, block), "-c", cache]
            start = time.perf_counter()
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cache)
            while process.poll() is None:
                if ctx.cancel() or time.perf_counter() - start > timeout:
                    process.kill()
                    process.wait()
                    seconds = time.perf_counter() - start
                    if ctx.cancel():
                        return "cancelled while the model builder ran", seconds
                    return f"the model builder did not finish in {timeout:.0f} s", seconds
                time.sleep(0.2)
            seconds = time.perf_counter() - start
            log.seek(0)
            output = log.read()
        if process.returncode != 0:
            return (f"the model builder failed ({what}, {ctx.facts.architecture}): {last_error_line(output)}",
                    seconds)
        if not (out / "genai_config.json").is_file():
            return f"the model builder wrote no genai_config.json ({what}): {last_error_line(output)}", seconds
        return "", seconds

    def open(self, spec: LlmSpec, facts: "LlmFacts") -> OrtGenAiSession:
        """og.Model over the built folder, with the spec's threads."""
        return OrtGenAiSession(spec.artifacts["model"], spec.threads, spec.config)

    def describe(self, spec: LlmSpec) -> Description:
        """'ONNX Runtime GenAI, INT4 weights (MatMulNBits, block 32, accuracy level 4), 2 threads', and the
        builder's command line and the og lines that generate with it."""
        config = spec.config
        if config.get("precision") == "int4":
            weights = (f"INT4 weights (MatMulNBits, block {config.get('block_size')}, accuracy level "
                       f"{config.get('accuracy_level')})")
        else:
            weights = f"{spec.weights} weights"
        threads = f", {spec.threads} threads" if spec.threads else ""
        command = builder_command(str(config.get("source", "MODEL_FOLDER")), "model",
                                  str(config.get("precision", spec.weights)), config.get("block_size"))
        lines = ["python " + " ".join(command)]
        if spec.threads:
            lines.append(f'# model/genai_config.json: model.decoder.session_options: "intra_op_num_threads": '
                         f"{spec.threads}")
        lines += ['model = og.Model("model")',
                  "params = og.GeneratorParams(model)",
                  "params.set_search_options(max_length=len(tokens) + new_tokens, do_sample=False)",
                  "generator = og.Generator(model, params)",
                  "generator.append_tokens(tokens)",
                  "while not generator.is_done():",
                  "    generator.generate_next_token()"]
        return Description(f"{self.title}, {weights}{threads}", "\n".join(lines))

    def package(self, spec: LlmSpec, facts: "LlmFacts", dest: Path) -> list[Path]:
        """The built folder (copied, threads in its genai_config.json) and run.py, which generates with og."""
        model = dest / "model"
        shutil.copytree(spec.artifacts["model"], model, dirs_exist_ok=True)
        config = spec.config
        settings = {"precision": config.get("precision", spec.weights), "threads": spec.threads or 0}
        if config.get("block_size"):
            settings.update(block_size=config["block_size"], accuracy_level=config.get("accuracy_level"))
        run = dest / "run.py"
        run.write_text(runner_text(_RUNNER, settings))
        return [run, *sorted(p for p in model.rglob("*") if p.is_file())]

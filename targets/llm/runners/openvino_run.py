"""Generate with the planned OpenVINO GenAI candidate: python run.py --prompt "..." [--max-new-tokens N] [--check].

Written by the planner from targets/llm/runners/openvino_run.py with SETTINGS filled in (properties: the OpenVINO
CPU properties it was measured with, e.g. INFERENCE_NUM_THREADS, KV_CACHE_PRECISION; prefix_caching: whether GenAI
reuses the KV blocks of an earlier prompt's prefix). model/ holds the OpenVINO IR and the tokenizer IRs; it imports
only openvino_genai (which needs openvino-tokenizers installed to read them).
"""

import argparse
import sys
import time
from pathlib import Path

import openvino_genai

SETTINGS: dict = {}  # filled in when packaged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt", default="The Python language reference says that")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--check", action="store_true", help="generate 8 tokens and exit 0 if it works")
    args = parser.parse_args()
    folder = Path(__file__).parent / "model"
    # The scheduler LLMPipeline uses for one user (a prompt computed in one step), with the prefix cache as measured.
    scheduler = openvino_genai.SchedulerConfig()
    scheduler.enable_prefix_caching = bool(SETTINGS.get("prefix_caching", False))
    scheduler.max_num_batched_tokens = sys.maxsize
    pipe = openvino_genai.LLMPipeline(str(folder), "CPU", scheduler_config=scheduler, **SETTINGS["properties"])
    new = 8 if args.check else args.max_new_tokens
    # --check asks for exactly 8 tokens (an end token does not stop it); a normal run stops at the end token.
    config = openvino_genai.GenerationConfig(max_new_tokens=new, min_new_tokens=new if args.check else 0,
                                             ignore_eos=args.check, do_sample=False)
    start = time.perf_counter()
    result = pipe.generate([args.prompt], config)
    seconds = time.perf_counter() - start
    made = result.perf_metrics.get_num_generated_tokens()
    print(result.texts[0])
    print(f"{made} tokens in {seconds:.2f} s (first token {result.perf_metrics.get_ttft().mean:.0f} ms, then "
          f"{result.perf_metrics.get_tpot().mean:.1f} ms per token)", file=sys.stderr)
    return 0 if not args.check or made == new else 1


if __name__ == "__main__":
    sys.exit(main())

"""Generate with the planned PyTorch candidate: python run.py --prompt "..." [--max-new-tokens N] [--check].

Written by the planner from targets/llm/runners/torch_run.py with SETTINGS filled in (weights: fp32 or bf16;
threads); it imports only torch and transformers.
"""

import argparse
import sys
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

SETTINGS: dict = {}  # filled in when packaged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt", default="The Python language reference says that")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--check", action="store_true", help="generate 8 tokens and exit 0 if it works")
    args = parser.parse_args()
    if SETTINGS.get("threads"):
        torch.set_num_threads(SETTINGS["threads"])
    folder = Path(__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[SETTINGS["weights"]]
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    ids = tokenizer(args.prompt, return_tensors="pt").input_ids
    new = 8 if args.check else args.max_new_tokens
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)
    seconds = time.perf_counter() - start
    text = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    print(text)
    print(f"{new} tokens in {seconds:.2f} s", file=sys.stderr)
    return 0 if out.shape[1] - ids.shape[1] == new else 1


if __name__ == "__main__":
    sys.exit(main())

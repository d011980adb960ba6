"""Generate with the planned ONNX Runtime GenAI candidate: python run.py --prompt "..." [--max-new-tokens N] [--check].

Written by the planner from targets/llm/runners/ort_genai_run.py with SETTINGS filled in (precision: fp32 or
int4, with the INT4 block size and accuracy level it was built with; threads). model/ is the folder ONNX Runtime
GenAI's model builder wrote (model.onnx, its weights, genai_config.json, the tokenizer); it imports only
onnxruntime_genai.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import onnxruntime_genai as og

SETTINGS: dict = {}  # filled in when packaged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt", default="The Python language reference says that")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--check", action="store_true", help="generate 8 tokens and exit 0 if it works")
    args = parser.parse_args()
    folder = Path(__file__).parent / "model"
    config = og.Config(str(folder))
    if SETTINGS.get("threads"):
        # genai_config.json says the same; the overlay keeps the measured threads if the file is edited.
        config.overlay(json.dumps({"model": {"decoder": {"session_options": {
            "intra_op_num_threads": SETTINGS["threads"]}}}}))
    model = og.Model(config)
    tokenizer = og.Tokenizer(model)
    ids = tokenizer.encode(args.prompt)
    new = 8 if args.check else args.max_new_tokens
    params = og.GeneratorParams(model)
    # min_length: exactly `new` tokens, never stopping early at an end token.
    params.set_search_options(max_length=len(ids) + new, min_length=len(ids) + new, do_sample=False)
    generator = og.Generator(model, params)
    stream = tokenizer.create_stream()
    count = 0
    start = time.perf_counter()
    generator.append_tokens(ids)
    while not generator.is_done():
        generator.generate_next_token()
        count += 1
        print(stream.decode(int(generator.get_next_tokens()[0])), end="", flush=True)
    seconds = time.perf_counter() - start
    print()
    print(f"{count} tokens in {seconds:.2f} s", file=sys.stderr)
    return 0 if count == new else 1


if __name__ == "__main__":
    sys.exit(main())

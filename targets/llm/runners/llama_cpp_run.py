"""Generate with the planned llama.cpp candidate: python run.py --prompt "..." [--max-new-tokens N] [--check].

Written by the planner from targets/llm/runners/llama_cpp_run.py with SETTINGS filled in (quant: the GGUF's
quantisation; threads; n_ctx: the context its KV cache is allocated for). model.gguf is the file that was
measured; it imports only llama_cpp (pip install llama-cpp-python).
"""

import argparse
import sys
import time
from pathlib import Path

from llama_cpp import Llama

SETTINGS: dict = {}  # filled in when packaged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompt", default="The Python language reference says that")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--check", action="store_true", help="generate 8 tokens and exit 0 if it works")
    args = parser.parse_args()
    threads = SETTINGS.get("threads") or None
    llm = Llama(model_path=str(Path(__file__).parent / "model.gguf"), n_ctx=SETTINGS.get("n_ctx", 2048),
                n_threads=threads, n_threads_batch=threads, verbose=False)
    ids = llm.tokenize(args.prompt.encode("utf-8"))
    new = 8 if args.check else args.max_new_tokens
    if len(ids) + new > llm.n_ctx():
        print(f"the prompt ({len(ids)} tokens) and {new} new tokens pass the context ({llm.n_ctx()})", file=sys.stderr)
        return 1
    # llama.cpp's own loop rather than create_completion, which stops at an end token: exactly `new` tokens.
    start = time.perf_counter()
    llm.eval(ids)
    out = []
    while True:
        out.append(llm.sample(temp=0.0, repeat_penalty=1.0))  # greedy
        if len(out) == new:
            break
        llm.eval(out[-1:])
    seconds = time.perf_counter() - start
    print(llm.detokenize(out).decode("utf-8", errors="replace"))
    print(f"{len(out)} tokens in {seconds:.2f} s", file=sys.stderr)
    return 0 if len(out) == new else 1


if __name__ == "__main__":
    sys.exit(main())

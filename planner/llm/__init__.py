"""Decoder LLMs, planned token by token.

A small language model is measured as people use it: the time to the first token (TTFT) at several prompt
lengths, then the time per output token (TPOT) while decoding. Decoding reads every weight once per token, so
its limit is how fast the machine reads memory (`planner.hardware.read_bandwidth`), and each candidate's
decode is shown as a share of that roof. Candidates come from the LLM plugins (`planner.plugins.llm`); their
fidelity is judged by perplexity and the KL divergence of the next-token distributions (`fidelity`).

Modules: `corpus` (the text that scores fidelity), `timing` (the measuring worker), `fidelity`, `plan` (the
method end to end), `results` (what a plan records), `report` (report.md), `random_model` (a random-weight
model of a given shape, for tests and benchmarks).
"""

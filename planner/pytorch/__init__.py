"""Shared PyTorch tooling the targets use, beside planner.onnx's: the Session over a torch module (eager,
channels_last, torch.compile, bf16/fp16, CPU or CUDA) and the hand-over package of a candidate PyTorch runs."""

"""NVIDIA GPU plugins: torch fp16/bf16, torch.compile, CUDA graphs, TensorRT engines, fixed batches."""

"""Shared ONNX tooling the targets use: export, fp16 conversion, QDQ quantization and the ONNX
Runtime session, so that no target imports another."""

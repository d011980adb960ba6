"""Decoder-LLM plugins (planner.plugins.llm): PyTorch eager, OpenVINO GenAI, ONNX Runtime GenAI, llama.cpp."""

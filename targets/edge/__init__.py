"""Edge plugins: ONNX Runtime INT8 (static QDQ and dynamic) and ternary weights."""

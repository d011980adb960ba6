"""The numeric precisions a candidate may compute in: a word of the plugin contract that the fidelity gate reads
too (its own module, so that the gate and the contract do not import each other)."""

from __future__ import annotations

from enum import StrEnum


class Precision(StrEnum):
    """The numeric precision a candidate computes in."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"
    TERNARY = "ternary"

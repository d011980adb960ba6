"""planner: a hardware-aware deployment planner for ML inference."""

__version__ = "0.1.0"

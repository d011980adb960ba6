"""`planner plan`'s flags as the plan's options (`plan`, `plan --host` and `fleet` read the same flags)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.pipeline import PlanOptions


def plan_options(args: argparse.Namespace) -> PlanOptions:
    """`planner plan`'s flags (also `fleet`'s) as the plan's options."""
    from planner.pipeline import PlanOptions

    overrides = {k: v for k, v in {
        "latency_ms": args.latency_ms, "latency_percentile": args.latency_percentile,
        "min_throughput": args.min_throughput, "memory_mb": args.memory_mb,
        "model_size_mb": args.model_size_mb, "accuracy_drop": args.accuracy_drop}.items()
        if v is not None}
    options = PlanOptions(model=args.model, input_shape=args.input_shape, inputs=tuple(args.inputs or ()),
                          trust_code=args.trust_code, target=args.target, quick=args.quick,
                          out=Path(args.out) if args.out else None,
                          requirements_file=Path(args.requirements) if args.requirements else None,
                          requirement_overrides=overrides,
                          val_data=Path(args.val_data) if args.val_data else None,
                          val_preset=args.val_preset, val_transform=args.val_transform,
                          val_sample_rate=args.val_sample_rate,
                          plugins=tuple(p.strip() for p in args.plugins.split(",")) if args.plugins else (),
                          timeout_s=args.timeout, device=args.device, finetune_steps=args.finetune_steps,
                          confirm=max(0, args.confirm), output_kinds=tuple(args.output_kinds or ()),
                          budget_s=args.budget, pipeline=args.pipeline)
    return options

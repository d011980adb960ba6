"""`planner plan`'s flags, made from the plan options' declarations (planner.pipeline.options), and read back as
the plan's options. `plan`, `plan --host` and `fleet` take them all; `inspect`, `profile` and `bench` take the
model's."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from planner.pipeline.options import Flag, PlanOptions


def add_model_flags(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """The flags that name a model and its inputs."""
    from planner.pipeline.options import MODEL_OPTIONS, flags

    declared = dict(flags())
    for name in MODEL_OPTIONS:
        _add(p, name, declared[name], required=required and name == "model")


def add_plan_flags(p: argparse.ArgumentParser, *, after_model: Callable[[argparse.ArgumentParser], None]) -> None:
    """Every plan option's flag, and the requirement flags; `after_model` adds the command's own flags after the
    model's, where `--help` lists them."""
    from planner.pipeline.options import MODEL_OPTIONS, REQUIREMENT_FLAGS, flags

    add_model_flags(p)
    after_model(p)
    for name, flag in flags():
        if name not in MODEL_OPTIONS:
            _add(p, name, flag)
    requirements = p.add_argument_group("requirements", "each sets one requirement, over a --requirements file")
    for name, flag in REQUIREMENT_FLAGS:
        _add(requirements, name, flag)


def _add(p: Any, name: str, flag: Flag, *, required: bool = False) -> None:
    """One option's flag; absent, it leaves the option's own default (the parsed value is None)."""
    kwargs: dict[str, Any] = {"dest": name, "help": flag.help.replace("%", "%%"),
                              "default": False if flag.switch else None}
    if flag.switch:
        kwargs["action"] = "store_true"
    else:
        if flag.repeat:
            kwargs["action"] = "append"
        if flag.parse is not None:
            kwargs["type"] = argument_type(flag.parse)
        if flag.choices:
            kwargs["choices"] = flag.choices
        if flag.metavar or not flag.choices:  # named after the flag, not the field (--timeout SECONDS, not TIMEOUT_S)
            kwargs["metavar"] = flag.metavar or flag.names[0].lstrip("-").upper().replace("-", "_")
    if required:
        kwargs["required"] = True
    p.add_argument(*flag.names, **kwargs)


def argument_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """`parse` as argparse calls it: its ValueError's words become the usage error."""
    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc) or f"{text!r} is not valid here") from None

    parsed.__name__ = getattr(parse, "__name__", "value")
    return parsed


def plan_options(args: argparse.Namespace) -> PlanOptions:
    """`planner plan`'s flags (also `fleet`'s) as the plan's options: a flag not given keeps the option's default."""
    from planner.pipeline.options import REQUIREMENT_FLAGS, PlanOptions, flags

    given: dict[str, Any] = {}
    for name, flag in flags():
        value = getattr(args, name, None)
        if value is not None and not (flag.switch and value is False):
            given[name] = flag.convert(value) if flag.convert is not None else value
    overrides = {name: getattr(args, name) for name, _ in REQUIREMENT_FLAGS if getattr(args, name, None) is not None}
    return PlanOptions(**given, requirement_overrides=overrides)

"""Finding plugins: the entry-point group `planner.targets` (built-ins register there too, so a
third-party package registers exactly as ours do) plus `module:Class` names in PLANNER_PLUGINS."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from planner.plugins.contract import Plugin
from planner.plugins.declarations import Catalog, declaration_problems

ENTRY_POINT_GROUP = "planner.targets"


@dataclass(frozen=True)
class PluginIssue:
    """A plugin that could not be loaded, with the reason."""

    name: str
    reason: str


EXTRA_PLUGINS_ENV = "PLANNER_PLUGINS"


@dataclass(frozen=True)
class _EnvEntryPoint:
    """A plugin named in PLANNER_PLUGINS as `module:Class`, loaded like an entry point."""

    name: str
    value: str

    def load(self) -> Any:
        """The named attribute of the named module, imported now."""
        module, _, attr = self.value.partition(":")
        return getattr(importlib.import_module(module), attr)


def _env_entry_points() -> list[_EnvEntryPoint]:
    # Lets a user try an unpackaged plugin (and tests inject failing ones) without installing
    # it; worker processes inherit the variable, so they find the same plugins.
    raw = os.environ.get(EXTRA_PLUGINS_ENV, "")
    return [_EnvEntryPoint(item.strip(), item.strip()) for item in raw.split(",") if item.strip()]


def _origin(ep: EntryPoint | _EnvEntryPoint) -> str:
    """Where an entry point comes from, as people name it: its distribution, or the environment variable."""
    dist = getattr(ep, "dist", None)
    if dist is not None:
        return f"distribution {dist.metadata['Name']} {dist.version}"
    return f"{EXTRA_PLUGINS_ENV} ({ep.value})"


def discover() -> tuple[dict[str, Plugin], list[PluginIssue]]:
    """Load every plugin registered under `planner.targets` (and in PLANNER_PLUGINS).

    A plugin that fails to load, or whose declarations are malformed, becomes an issue with its
    reason; the others still load. Two plugins that claim one name: the first found keeps it and
    the other becomes an issue naming both origins.
    """
    plugins: dict[str, Plugin] = {}
    origins: dict[str, str] = {}
    issues: list[PluginIssue] = []
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    named: list[EntryPoint | _EnvEntryPoint] = [*found, *_env_entry_points()]
    for ep in named:
        try:
            obj = ep.load()
            plugin = obj() if isinstance(obj, type) else obj
        except Exception as exc:  # noqa: BLE001 - a third-party plugin may raise anything
            issues.append(PluginIssue(ep.name, f"failed to load: {type(exc).__name__}: {exc}"))
            continue
        if not isinstance(plugin, Plugin) or not plugin.name:
            issues.append(PluginIssue(ep.name, "entry point is not a planner Plugin"))
            continue
        problems = declaration_problems(plugin)
        if problems:
            issues.append(PluginIssue(plugin.name, "skipped, malformed declaration: " + "; ".join(problems)))
            continue
        if plugin.name in plugins:
            if origins[plugin.name] != _origin(ep):
                issues.append(PluginIssue(plugin.name, f"two plugins claim the name {plugin.name!r}: "
                                          f"{origins[plugin.name]} and {_origin(ep)}; the first is used "
                                          "(uninstall or rename the other)"))
            continue
        plugins[plugin.name] = plugin
        origins[plugin.name] = _origin(ep)
    return plugins, issues


def catalog() -> Catalog:
    """The declarations of every plugin the registry finds (broken ones left out): what the advice reads."""
    plugins, _ = discover()
    return Catalog.of(plugins)


def get_plugin(name: str) -> Plugin:
    """The plugin registered under `name`; KeyError with the known names otherwise."""
    plugins, issues = discover()
    if name in plugins:
        return plugins[name]
    broken = {i.name: i.reason for i in issues}
    if name in broken:
        raise KeyError(f"plugin {name} is broken: {broken[name]}")
    raise KeyError(f"no plugin {name!r}; known: {', '.join(sorted(plugins))}")

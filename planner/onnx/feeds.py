"""Pair a model's inputs with a runtime graph's inputs: by name where every graph input kept a model
input's name, else by position (an exporter renamed them); an error names both sides otherwise.

ONNX Runtime, OpenVINO, TensorRT, calibration and the export check all pair the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    import numpy as np

    from planner.models.spec import ModelInputs, TensorSpec


def graph_name(names: Iterable[str], inputs: "ModelInputs") -> str:
    """The name to key one graph input by: one of its names the model uses, else any (sorted first)."""
    ordered = sorted(names)
    if not ordered:
        raise ValueError("a graph input has no name")
    return next((n for n in ordered if n in inputs.names), ordered[0])


def match_inputs(graph_names: Sequence[str], inputs: "ModelInputs") -> dict[str, "TensorSpec"]:
    """Each graph input's model input: by name where all of them match, else by position.

    A ValueError names both sides when neither pairing works (the counts differ and a name is
    unknown), instead of guessing which tensor goes where.
    """
    by_name = {t.name: t for t in inputs.tensors}
    if all(n in by_name for n in graph_names):
        return {n: by_name[n] for n in graph_names}
    if len(graph_names) != len(inputs.tensors):
        raise ValueError(f"the graph's inputs ({', '.join(graph_names)}) do not match the model's "
                         f"({inputs.describe()}): neither their names nor their number agree")
    return dict(zip(graph_names, inputs.tensors))


def ordered_arrays(graph_names: Sequence[str], feed: Mapping[str, "np.ndarray"]) -> list["np.ndarray"]:
    """The feed's arrays in the graph's input order: by name where all are there, else by position."""
    if all(n in feed for n in graph_names):
        return [feed[n] for n in graph_names]
    arrays = list(feed.values())
    if len(arrays) < len(graph_names):
        raise ValueError(f"the feed has {len(arrays)} inputs ({', '.join(feed)}) but the graph takes "
                         f"{len(graph_names)} ({', '.join(graph_names)})")
    return arrays[:len(graph_names)]


def feed_for(graph_names: Sequence[str], feed: Mapping[str, "np.ndarray"]) -> dict[str, "np.ndarray"]:
    """The feed keyed by the graph's input names (see `ordered_arrays`)."""
    return dict(zip(graph_names, ordered_arrays(graph_names, feed)))

"""Model sources, loaders and input specs."""

from planner.models.loaded import LoadedModel, make_inputs
from planner.models.loaders import load_model
from planner.models.source import ModelSource, SourceKind, parse_source
from planner.models.spec import InputSpec, parse_shape

__all__ = ["InputSpec", "LoadedModel", "ModelSource", "SourceKind", "load_model", "make_inputs",
           "parse_shape", "parse_source"]

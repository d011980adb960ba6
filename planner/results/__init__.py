"""Typed results on the bus (baseline, candidate results, plan results), their one serialiser,
ranking, and the one reader of results.json."""

from planner.codec import SchemaError, from_data, to_data
from planner.results.context import EdgeCandidate, EdgeProjection, Environment, ModelDescription
from planner.results.decisions import (
    ActionRecord,
    AnswerRecord,
    DecisionPathRecord,
    PlanRecord,
    RequirementCheck,
    Requirements,
)
from planner.results.pipeline_split import PipelineSplit
from planner.results.ranking import rank_candidates
from planner.results.read import (
    RESULTS_NAME,
    read_results,
    results_data,
    results_from_data,
    write_results,
)
from planner.results.values import (
    SCHEMA_VERSION,
    Baseline,
    BudgetRecord,
    CandidateResult,
    Declared,
    Deployment,
    ModelSummary,
    PlanResults,
    Prediction,
    Ranking,
    RunStatus,
    SequencePoint,
    SkippedPlugin,
    Status,
    Validation,
)

__all__ = [
    "RESULTS_NAME", "SCHEMA_VERSION", "ActionRecord", "AnswerRecord", "Baseline", "BudgetRecord", "CandidateResult",
    "DecisionPathRecord", "Declared", "Deployment", "EdgeCandidate", "EdgeProjection", "Environment",
    "ModelDescription", "ModelSummary", "PipelineSplit", "PlanRecord", "PlanResults", "Prediction", "RequirementCheck",
    "Requirements", "Ranking", "RunStatus", "SchemaError", "SequencePoint", "SkippedPlugin", "Status", "Validation",
    "from_data", "rank_candidates", "read_results", "results_data", "results_from_data", "to_data", "write_results",
]

"""Advice: requirements, the profiling checklist and the hardware decision trees, turned into a Plan.

Imports only the standard library and `planner.errors`, so it loads fast and never pulls in
torch or textual.
"""

from planner.advice.checklist import (
    QUESTIONS,
    Answer,
    AnswerStatus,
    Group,
    Question,
    ThreadAssessment,
    answer_checklist,
    assess_threads,
    questions_for,
)
from planner.advice.plan import Plan, PlanStep, make_plan
from planner.advice.requirements import (
    CheckStatus,
    DeviceTier,
    Percentile,
    RequirementCheck,
    Requirements,
    all_met,
    defaults_for,
    evaluate,
    load_requirements,
)
from planner.advice.tree import (
    DecisionPath,
    NodeKind,
    RecommendedAction,
    TreeView,
    VisitedNode,
    evaluate_tree,
    tree_nodes,
)
from planner.results.decisions import StepKind

__all__ = [
    "QUESTIONS",
    "Answer",
    "AnswerStatus",
    "CheckStatus",
    "DecisionPath",
    "DeviceTier",
    "Group",
    "NodeKind",
    "Percentile",
    "Plan",
    "PlanStep",
    "Question",
    "RecommendedAction",
    "RequirementCheck",
    "Requirements",
    "StepKind",
    "ThreadAssessment",
    "TreeView",
    "VisitedNode",
    "all_met",
    "answer_checklist",
    "assess_threads",
    "defaults_for",
    "evaluate",
    "evaluate_tree",
    "load_requirements",
    "make_plan",
    "questions_for",
    "tree_nodes",
]

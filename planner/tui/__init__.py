"""The interactive planner: a Textual app that walks the method one step at a time.

Only this package imports Textual; it drives the engine through `planner.pipeline.PlanSession`.
"""

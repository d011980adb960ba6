"""Reusable widgets: the step list, key-value tables, plots, run progress and notices."""

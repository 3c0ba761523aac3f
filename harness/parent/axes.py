"""Axis values of one case: the rule lives with the public formats in records/axes.py, which both the
importer and the harness read."""

from __future__ import annotations

from records.axes import AxisExpressionError, evaluate_expression, expression_names, resolve_axes

__all__ = ["AxisExpressionError", "evaluate_expression", "expression_names", "resolve_axes"]

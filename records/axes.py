"""Axis values of one case: constants, the case's variables, and expressions over both.

The operators are SOL-ExecBench's (src/sol_execbench/core/data/shapes.py): + - * / // % ** and
parentheses, where `/` must divide exactly, since an axis is a whole number.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

_BINARY: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_OPERATORS = (*_BINARY, ast.Div)


class AxisExpressionError(ValueError):
    pass


def expression_names(expression: str) -> set[str]:
    """The axis names an expression reads; raises AxisExpressionError when it is not integer arithmetic."""
    tree = _parse(expression)
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def evaluate_expression(expression: str, values: Mapping[str, int]) -> int:
    """The integer value of e.g. `hidden_size // num_heads`; only + - * / // % ** and parentheses are allowed."""
    return _evaluate(_parse(expression).body, values)


def resolve_axes(
    constants: Mapping[str, int], variables: Mapping[str, int], expressions: Mapping[str, str]
) -> dict[str, int]:
    """Every axis's value; expressions may use constants, variables and other expressions, in any order."""
    values = {**constants, **variables}
    pending = dict(expressions)
    while pending:
        ready = {name: text for name, text in pending.items() if expression_names(text) <= values.keys()}
        if not ready:
            missing = sorted(
                set().union(*(expression_names(t) for t in pending.values())) - values.keys() - pending.keys()
            )
            detail = f"unknown axes {', '.join(missing)}" if missing else "the expressions depend on each other"
            raise AxisExpressionError(f"cannot resolve axes {', '.join(sorted(pending))}: {detail}")
        for name, text in ready.items():
            values[name] = evaluate_expression(text, values)
            del pending[name]
    return values


def _parse(expression: str) -> ast.Expression:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as error:
        raise AxisExpressionError(f"not an expression: {expression!r} ({error.msg})") from None
    for node in ast.walk(tree):
        allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load, ast.USub, ast.UAdd)
        if not isinstance(node, allowed) and type(node) not in _OPERATORS:
            raise AxisExpressionError(f"{expression!r}: only integer arithmetic on axis names is allowed")
        if isinstance(node, ast.Constant) and (not isinstance(node.value, int) or isinstance(node.value, bool)):
            raise AxisExpressionError(f"{expression!r}: constants must be integers")
    return tree


def _evaluate(node: ast.expr, values: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        if isinstance(node.op, ast.Div) and right and left % right:
            raise AxisExpressionError(f"{left} / {right} is not a whole number")
        try:
            if isinstance(node.op, ast.Div):
                return left // right
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise AxisExpressionError("division by zero") from None
    raise AxisExpressionError(f"unsupported expression node {type(node).__name__}")

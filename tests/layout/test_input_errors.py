"""One input-error type: readers raise SpecgateInputError, and only the plugin makes a UsageError.

The plugin's ``input_errors_stop_the_run`` is the one place a ``pytest.UsageError`` is built,
so a reader deep in ``selection`` or ``engines`` cannot word a bad input differently, or
reach for pytest at all (the import contract keeps pytest out of both).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_specgate
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.plugin.options import input_errors_stop_the_run

PACKAGE = Path(pytest_specgate.__file__).parent


def _usage_errors_built(source: str) -> int:
    calls = [node.func for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    return sum(1 for func in calls if isinstance(func, ast.Attribute) and func.attr == "UsageError")


def test_the_plugin_builds_the_only_usage_error() -> None:
    built = {str(path.relative_to(PACKAGE)): count for path in sorted(PACKAGE.rglob("*.py"))
             if (count := _usage_errors_built(path.read_text("utf-8")))}
    assert built == {"plugin/options.py": 1}
    assert _usage_errors_built("raise pytest.UsageError('x')") == 1


def test_an_input_error_becomes_a_usage_error_with_its_one_line() -> None:
    one_line = r"^--specgate-x: expected a number, found 'y'$"
    with pytest.raises(pytest.UsageError, match=one_line) as raised, input_errors_stop_the_run():
        raise SpecgateInputError.mismatch("--specgate-x", "a number", "y")
    assert raised.value.__cause__ is None
    with pytest.raises(ValueError, match="not an input error"), input_errors_stop_the_run():
        raise ValueError("not an input error")

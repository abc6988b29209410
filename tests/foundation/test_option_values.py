"""Typed options: pytest converts them (``addoption(type=...)``) and holds their defaults; an
ini value is converted alike, and a bad one names the ini key and the value.
"""

from __future__ import annotations

from argparse import ArgumentTypeError

import pytest

from pytest_specgate.selection.option_values import confidence_level, duration_scale, engine_option


@pytest.mark.parametrize(("text", "value"), [("1", 1.0), ("0.02", 0.02), ("1e3", 1000.0)])
def test_a_positive_finite_duration_scale_is_a_number(text: str, value: float) -> None:
    assert duration_scale(text) == value


@pytest.mark.parametrize(("text", "message"), [
    ("0", "expected a finite number > 0, got 0.0"),
    ("-1", "expected a finite number > 0, got -1.0"),
    ("nan", "expected a finite number > 0, got nan"),
    ("inf", "expected a finite number > 0, got inf"),
    ("fast", "expected a number > 0, got 'fast'"),
])
def test_a_duration_scale_that_is_not_a_positive_finite_number_is_refused(text: str, message: str) -> None:
    with pytest.raises(ArgumentTypeError, match=f"^{message}$"):
        duration_scale(text)


def test_a_confidence_level_is_a_probability_strictly_between_0_and_1() -> None:
    assert confidence_level("0.99") == 0.99
    for text in ("0", "1", "95", "nan", "high"):
        with pytest.raises(ArgumentTypeError, match=rf"^expected a number between 0 and 1 \(e\.g\. 0\.95\), "
                                                     rf"got '{text}'$"):
            confidence_level(text)


@pytest.mark.parametrize(("text", "pair"), [
    ("alpha=0.3", ("alpha", 0.3)),
    ('faults=["corrupt-spec"]', ("faults", ["corrupt-spec"])),
    (" seed =7", ("seed", 7)),
    ("draft=tiny-draft", ("draft", "tiny-draft")),
    ("url=http://h:1/?a=b", ("url", "http://h:1/?a=b")),
])
def test_an_engine_option_is_a_key_and_a_json_value_or_text(text: str, pair: tuple[str, object]) -> None:
    assert engine_option(text) == pair


@pytest.mark.parametrize(("text", "message"), [
    ("alpha", "expected KEY=VALUE, got 'alpha'"),
    ("=3", "expected KEY=VALUE, got '=3'"),
    ("faults=" + "[" * 200 + "]" * 200, "faults: JSON nested deeper than 100 levels"),
])
def test_an_engine_option_without_a_key_or_nested_too_deep_is_refused(text: str, message: str) -> None:
    with pytest.raises(ArgumentTypeError, match=rf"^{message}$"):
        engine_option(text)


def _scale_project(pytester: pytest.Pytester, ini_scale: str | None) -> None:
    ini = "" if ini_scale is None else f"specgate_duration_scale = {ini_scale}\n"
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makepyfile(test_scale=(
        "def test_scale(duration_scale, pytestconfig):\n"
        "    print('scale', duration_scale, pytestconfig.getoption('specgate_engine_option'))\n"
    ))


@pytest.mark.parametrize(("ini_scale", "arguments", "shown"), [
    (None, (), "scale 1.0 []"),
    ("0.5", (), "scale 0.5 []"),
    ("0.5", ("--specgate-duration-scale=0.25", "--specgate-engine-option=alpha=0.3"),
     "scale 0.25 [('alpha', 0.3)]"),
])
def test_the_option_wins_over_the_ini_value_which_wins_over_the_default(
    pytester: pytest.Pytester, ini_scale: str | None, arguments: tuple[str, ...], shown: str
) -> None:
    _scale_project(pytester, ini_scale)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", *arguments)
    result.assert_outcomes(passed=1)
    assert f"test_scale.py {shown}" in result.stdout.lines


def test_a_bad_ini_value_names_the_ini_key_and_the_value(pytester: pytest.Pytester) -> None:
    _scale_project(pytester, "soon")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: specgate_duration_scale (ini): expected a number > 0, got 'soon'"])


def test_a_bad_option_value_names_the_option_and_the_value(pytester: pytest.Pytester) -> None:
    _scale_project(pytester, "0.5")
    result = pytester.runpytest("-p", "no:cacheprovider", "--specgate-duration-scale=-2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*error: argument --specgate-duration-scale: expected a finite number > 0, "
                                 "got -2.0"])

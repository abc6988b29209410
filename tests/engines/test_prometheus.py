"""The one Prometheus text parser every backend reads ``/metrics`` with."""

from __future__ import annotations

import math

import pytest

from pytest_specgate.engines.prometheus import (
    MetricsParseError,
    Sample,
    metric_totals,
    parse_prometheus_text,
)


def test_parser_handles_escapes_special_values_timestamps_and_empty_labels() -> None:
    text = (
        "# HELP x help text\n"
        "# TYPE x counter\n"
        'x{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb",} 1.5 1700000000000\n'
        "y{} +Inf\n"
        "z NaN\n"
        "w -Inf\n"
    )
    x, y, z, w = parse_prometheus_text(text)

    assert x == Sample("x", (("nl", "a\nb"), ("path", "C:\\dir"), ("quote", 'say "hi"')), 1.5)
    assert y == Sample("y", (), math.inf)
    assert math.isnan(z.value)
    assert w.value == -math.inf


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{a=\"b\"} 1", "not a sample"),
        ('x{a=b} 1', "Invalid labels"),
        ("x", "invalid metric name"),
        ("x one", "could not convert string to float: 'one'"),
        ("broken line", "could not convert string to float: 'line'"),
    ],
)
def test_malformed_lines_are_errors_naming_the_line(line: str, message: str) -> None:
    with pytest.raises(MetricsParseError, match=message) as caught:
        parse_prometheus_text(f"# ok\n{line}\n")

    assert str(caught.value).startswith("/metrics line 2: ") and str(caught.value).endswith(f"in {line!r}")


def test_totals_are_summed_over_labels_per_name() -> None:
    text = '# HELP a x\n# TYPE a counter\na{p="0"} 2\na{p="1"} 3.5\nb 7\n'
    assert metric_totals(text) == {"a": 5.5, "b": 7.0}


def test_a_timestamp_is_not_read_as_the_value_and_spaced_labels_stay_whole() -> None:
    text = 'a{path="x y",q="say \\"} 9\\""} 2 1700000000000\n'
    assert metric_totals(text) == {"a": 2.0}
    (sample,) = parse_prometheus_text(text)
    assert sample.label("path") == "x y" and sample.label("q") == 'say "} 9"'


def test_created_series_stay_separate_from_their_counter() -> None:
    text = "c_total 4\nc_created 1.7e9\n"
    assert metric_totals(text) == {"c_total": 4.0, "c_created": 1.7e9}


def test_a_counter_keeps_the_name_the_server_wrote() -> None:
    text = "# TYPE c counter\nc 4\n"
    assert metric_totals(text) == {"c": 4.0}

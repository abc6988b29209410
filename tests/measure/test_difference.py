"""The interval of a relative change from both runs' samples: calibrated on same-distribution runs,
and able to see a real 10% slowdown (a smaller copy of ``benchmarks/compare_error_rates.py``)."""

from __future__ import annotations

import pytest

from benchmarks.compare_error_rates import simulate
from pytest_specgate.contracts.samples import RecordedSamples, SamplesError
from pytest_specgate.measure.difference import relative_change


def _samples(values: list[float], statistic: str = "median") -> RecordedSamples:
    return RecordedSamples(tuple(values), statistic, "value")


def test_same_distribution_runs_are_a_regression_at_most_at_the_stated_rate() -> None:
    # 300 pairs of runs at tolerance 0 (the strictest): a 95% interval's one side errs about 2.5%.
    cell = simulate(pairs=24, sigma=0.15, slowdown=0.0, tolerance=0.0, runs=300)
    assert cell.called <= 0.04, cell.line()
    # The old rule (new figure outside the base run's own interval) cries wolf on the same runs.
    assert cell.old_rule_called >= 0.05, cell.line()


def test_a_real_ten_percent_slowdown_is_found() -> None:
    cell = simulate(pairs=24, sigma=0.05, slowdown=0.10, tolerance=0.0, runs=100)
    assert cell.called >= 0.95, cell.line()


def test_the_point_and_interval_are_relative_changes_of_the_statistic() -> None:
    base = _samples([1.0, 2.0, 3.0, 4.0, 5.0])
    new = _samples([1.5, 3.0, 4.5, 6.0, 7.5])
    change = relative_change(base, new)
    assert change.point == pytest.approx(0.5) and change.low <= 0.5 <= change.high
    assert (change.n_base, change.n_new) == (5, 5)
    mean = relative_change(_samples([2.0, 4.0], "mean"), _samples([3.0, 3.0], "mean"))
    assert mean.point == pytest.approx(0.0)
    p90 = relative_change(_samples([float(v) for v in range(1, 101)], "p90"),
                          _samples([float(v) * 2 for v in range(1, 101)], "p90"))
    assert p90.point == pytest.approx(1.0)

    # A negative figure (a change in seconds, a margin) keeps its sign: -2 from -1 is lower.
    negative = relative_change(_samples([-1.1, -1.0, -0.9] * 10), _samples([-2.1, -2.0, -1.9] * 10))
    assert negative.point == pytest.approx(-1.0) and negative.high < 0


def test_the_same_samples_always_give_the_same_interval() -> None:
    base, new = _samples([1.0, 1.2, 0.9, 1.1]), _samples([1.05, 1.0, 0.95, 1.2])
    assert relative_change(base, new) == relative_change(base, new)


def test_mismatched_statistics_and_a_zero_base_are_refused() -> None:
    with pytest.raises(ValueError, match="summarised by median, the new run's by mean"):
        relative_change(_samples([1.0]), _samples([1.0], "mean"))
    with pytest.raises(ValueError, match="base statistic is 0"):
        relative_change(_samples([0.0, 0.0]), _samples([1.0]))


@pytest.mark.parametrize(("note", "message"), [
    ({"statistic": "median", "values": []}, "expected at least one finite value"),
    ({"statistic": "p100", "values": [1.0]}, "statistic 'p100'"),
    ({"statistic": "median", "values": [1.0, True]}, "expected {'statistic'"),
    ([1.0, 2.0], "expected {'statistic'"),
])
def test_a_malformed_samples_note_names_where(note: object, message: str) -> None:
    with pytest.raises(SamplesError, match=r"^AC-10 t: note x_samples: ") as raised:
        RecordedSamples.from_json(note, "AC-10 t: note x_samples")  # type: ignore[arg-type]
    assert message in str(raised.value)

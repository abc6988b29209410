"""Collection decides once per distinct marker, keeps errors per test, and spreads long specs over xdist."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.hardware import HardwareRequirement, HardwareVerdict
from pytest_specgate.selection.collection import (
    SpecPlan,
    costliest_spread,
    declared_cost,
    load_chunk_size,
    marker_signature,
)

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
LINUX = str(HOSTS / "linux-x86_64-24gb-nogpu.json")


def test_equal_values_of_different_types_never_share_a_signature() -> None:
    assert marker_signature(("m4",), {"min_gpus": 1}) == marker_signature(("m4",), {"min_gpus": 1})
    assert marker_signature((), {"min_gpus": 1}) != marker_signature((), {"min_gpus": True})
    assert marker_signature((), {"min_gpus": 1}) != marker_signature((), {"min_gpus": 1.0})
    assert marker_signature((), {"a": 1, "b": 2}) == marker_signature((), {"b": 2, "a": 1})
    assert marker_signature((["m4"],), {}) is None
    assert marker_signature((), {"clauses": ("m4",)}) is None


def test_the_plan_judges_each_distinct_marker_once() -> None:
    plan = SpecPlan()
    judged: list[str] = []

    def judge(name: str) -> HardwareVerdict:
        judged.append(name)
        return HardwareVerdict(HardwareRequirement(apple="M4"), matched=True, reasons=(), host_summary=name)

    first = plan.verdict(("m4",), {}, lambda: judge("m4"))
    assert plan.verdict(("m4",), {}, lambda: judge("again")) is first
    plan.verdict((), {"min_gpus": 1}, lambda: judge("one"))
    plan.verdict((), {"min_gpus": True}, lambda: judge("true"))
    plan.verdict((["m4"],), {}, lambda: judge("unhashable"))
    plan.verdict((["m4"],), {}, lambda: judge("unhashable"))
    assert judged == ["m4", "one", "true", "unhashable", "unhashable"]


def test_a_bad_ac_marker_names_every_test_that_carries_it() -> None:
    plan = SpecPlan()
    for nodeid in ("t.py::a", "t.py::b"):
        with pytest.raises(SpecgateInputError, match=rf"^{nodeid}: @pytest.mark.ac: AC id 'AC10' must look"):
            plan.criterion(("AC10",), {}, nodeid)
    good = plan.criterion(("AC-10",), {"spec": "SPEC-028"}, "t.py::c")
    assert plan.criterion(("AC-10",), {"spec": "SPEC-028"}, "t.py::d") is good
    assert plan.distinct_markers == 1


def test_declared_cost_is_seconds_above_zero() -> None:
    assert declared_cost((12,), {}, "t.py::a") == 12.0
    with pytest.raises(SpecgateInputError, match=r"^t.py::a: @pytest.mark.specgate_cost: seconds must be a "
                                                r"finite number > 0, found 0$"):
        declared_cost((0,), {}, "t.py::a")
    with pytest.raises(SpecgateInputError, match=r"found True$"):
        declared_cost((True,), {}, "t.py::a")
    with pytest.raises(SpecgateInputError, match=r"found inf$"):
        declared_cost((float("inf"),), {}, "t.py::a")
    with pytest.raises(SpecgateInputError, match=r"expected one positional number of seconds, found args "
                                                r"\[\] and keywords \['seconds'\]$"):
        declared_cost((), {"seconds": 3}, "t.py::a")


def test_chunk_size_follows_xdist_load_scheduling() -> None:
    assert load_chunk_size(3, 2, None) == 1
    assert load_chunk_size(38, 2, None) == 4
    assert load_chunk_size(8, 2, None) == 2
    assert load_chunk_size(400, 2, 10) == 10


def test_each_worker_batch_starts_with_one_of_the_costliest() -> None:
    items = [f"t{index}" for index in range(12)]
    costs = {9: 10.0, 11: 15.0, 4: 1.0}
    ordered = costliest_spread(items, costs, workers=2, chunk=3)
    assert ordered == ["t11", "t0", "t1", "t9", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t10"]
    assert sorted(ordered) == sorted(items)
    assert costliest_spread(items, {}, workers=2, chunk=3) == items


def test_without_payload_readers_no_report_carries_one(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        from pytest_specgate.contracts.payload import payload_of

        def pytest_runtest_logreport(report):
            print(f"PAYLOAD {report.when} {payload_of(report.user_properties) is not None}")
    """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.ac("AC-1")
        def test_one(evidence):
            evidence.measure("x", 1.0)
    """)
    plain = pytester.runpytest("-s")
    plain.assert_outcomes(passed=1)
    plain.stdout.fnmatch_lines(["*PAYLOAD setup False", "*PAYLOAD call False", "PAYLOAD teardown False"])
    diagnostic = pytester.runpytest("-s", "--specgate-diagnostic", f"--specgate-host-facts={LINUX}")
    diagnostic.stdout.fnmatch_lines(["*PAYLOAD setup True", "*PAYLOAD call False", "PAYLOAD teardown True"])


def test_xdist_starts_the_costliest_specs_first_one_per_worker(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import os

        def pytest_runtest_setup(item):
            worker = os.environ["PYTEST_XDIST_WORKER"]
            with open(f"order-{worker}.txt", "a") as order:
                order.write(item.name + "\\n")
    """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.parametrize("number", range(10))
        def test_quick(number):
            pass

        @pytest.mark.specgate_cost(5)
        def test_long():
            pass

        @pytest.mark.specgate_cost(20)
        def test_longest():
            pass
    """)
    result = pytester.runpytest("-n", "2", "-p", "xdist", "--dist=load")
    result.assert_outcomes(passed=12)
    firsts = {path.read_text().splitlines()[0] for path in pytester.path.glob("order-gw*.txt")}
    assert firsts == {"test_long", "test_longest"}


def test_a_bad_cost_marker_stops_collection_naming_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.specgate_cost("long")
        def test_vague():
            pass
    """)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*test_a_bad_cost_marker_stops_collection_naming_the_test.py::test_vague: "
        "@pytest.mark.specgate_cost: seconds must be a finite number > 0, found 'long'",
    ])

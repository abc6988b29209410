"""Fair arms: a paired run records each arm's caching settings and refuses arms that differ."""

from __future__ import annotations

import pytest
from measure_fakes import FakeArm, FakeClock, make_prompts

from pytest_specgate.contracts.engine import CACHE_SETTING_KEYS
from pytest_specgate.measure.engine_arms import arm_caching
from pytest_specgate.measure.paired import UnfairArms, caching_difference, require_fair_arms, run_paired

OFF = {"prefix_caching": "off", "prompt_cache_size": None}
ON = {"prefix_caching": "on", "prompt_cache_size": None}


class _Reports:
    def __init__(self, **versions: str) -> None:
        self._versions = {"backend": "vllm", **versions}

    def versions(self) -> dict[str, str]:
        return self._versions


def test_settings_reported_by_both_arms_and_different_are_named() -> None:
    assert caching_difference(OFF, OFF) is None
    assert caching_difference(OFF, ON) == "baseline prefix_caching=off but candidate prefix_caching=on"
    assert caching_difference({"prompt_cache_size": "0"}, {"prompt_cache_size": "10"}) == \
        "baseline prompt_cache_size=0 but candidate prompt_cache_size=10"


def test_an_unreported_setting_is_unknown_and_differs_from_nothing() -> None:
    unknown = dict.fromkeys(CACHE_SETTING_KEYS)
    assert caching_difference(unknown, ON) is None
    assert arm_caching(_Reports()) == unknown
    assert arm_caching(_Reports(prefix_caching="on", other="x")) == ON


def test_unfair_arms_are_refused_naming_both_settings() -> None:
    require_fair_arms(OFF, OFF)
    with pytest.raises(UnfairArms, match=r"^paired run: the arms' caching settings differ \(baseline "
                       r"prefix_caching=off but candidate prefix_caching=on\): a speedup between them "
                       r"measures the cache, not speculation"):
        require_fair_arms(OFF, ON)


def test_run_paired_refuses_before_sending_and_records_fair_settings(clock: FakeClock) -> None:
    log: list[tuple[str, str]] = []
    arms = (FakeArm("B", clock, log, lambda prompt, call, now: 1.0),
            FakeArm("C", clock, log, lambda prompt, call, now: 0.5))
    with pytest.raises(UnfairArms):
        run_paired(*arms, make_prompts(2), rounds=1, warmup=1, clock=clock, caching=(OFF, ON))
    assert log == []
    run = run_paired(*arms, make_prompts(2), rounds=1, warmup=0, clock=clock, caching=(OFF, OFF))
    assert run.to_dict()["caching"] == {"baseline": OFF, "candidate": OFF}
    assert run_paired(*arms, make_prompts(1), rounds=1, warmup=0, clock=clock).to_dict()["caching"] is None

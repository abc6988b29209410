"""What an AC requires, as the base branch defines it: the gate's check of a record against it.

A PR controls its own markers, so a requirement read from them is the author's: deleting
``@pytest.mark.hardware("m4-16gb")`` would turn AC-10 into an AC any Linux box passes, and a
record labelled with no profile into one any enrolled signer may vouch for. The trusted config's
``[tool.specgate.acs."AC-10"]`` pins the host profile, whether an engine must be recorded and
which backends may supply it; every AC the gate judges under a trusted config must be defined
there, and a record is held to the definition, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_specgate.evidence._acrecord import AcRecord, TestEntry
from pytest_specgate.evidence._policy import engine_requirement_reasons
from pytest_specgate.evidence._trusted import AcSettings, TrustedConfig


def ac_definition_problems(record: AcRecord, trusted: TrustedConfig) -> list[str]:
    """Why ``record`` does not meet what the trusted config defines for its AC (empty: it does)."""
    ac_id = record.ac.id
    settings = trusted.acs.get(ac_id)
    if settings is None:
        if trusted.defines_acs:
            return [undefined_ac_problem(ac_id, record.tests)]
        return engine_requirement_reasons(record, engine_free=False)
    if settings.profile is None:
        problems = engine_requirement_reasons(record, engine_free=not settings.engine)
    else:
        problems = pinned_profile_problems(ac_id, settings.profile, record.tests)
        if settings.engine:
            problems += [f"{test.nodeid} recorded no engine; the trusted config pins {ac_id} to profile "
                         f"{settings.profile}, whose tests must each name the engine their figures came "
                         f'from (only [tool.specgate.acs."{ac_id}"] engine = false exempts it)'
                         for test in record.tests if not test.engines]
    return problems + backend_problems(ac_id, settings, record.tests)


def undefined_ac_problem(ac_id: str, tests: Sequence[TestEntry]) -> str:
    """The rejection of an AC the trusted config does not define, with the table to land first."""
    labels = sorted({test.hardware.profile for test in tests if test.hardware and test.hardware.profile})
    line = f'[tool.specgate.acs."{ac_id}"]' + (f' profile = "{labels[0]}"' if len(labels) == 1 else "")
    return (f"{ac_id} is not defined there, so what it requires is unknown: land {line} in the base "
            "branch first (an empty table for an AC that needs no host profile)")


def pinned_profile_problems(ac_id: str, profile: str, tests: Sequence[TestEntry]) -> list[str]:
    """Every test of a pinned AC carries the pinned profile's marker: a test that dropped or
    changed it would be judged against the author's requirement, not the base's."""
    marker = f'@pytest.mark.hardware("{profile}")'
    problems = []
    for test in tests:
        hardware = test.hardware
        if hardware is None:
            problems.append(f"{test.nodeid} carries no {marker}, which the trusted config pins for {ac_id}")
        elif hardware.profile != profile:
            found = (f"profile {hardware.profile}" if hardware.profile
                     else f"its own clauses {hardware.requirement}")
            problems.append(f"{test.nodeid} is marked for {found}, not {marker}, which the trusted config "
                            f"pins for {ac_id}")
    return problems


def backend_problems(ac_id: str, settings: AcSettings, tests: Sequence[TestEntry]) -> list[str]:
    """Backends the trusted definition does not allow for this AC, once per test and backend (a
    paired run's baseline and candidate are two engines of one backend)."""
    if settings.backends is None:
        return []
    allowed = ", ".join(settings.backends)
    return [f"{test.nodeid}: engine backend {backend!r} is not one the trusted config allows for "
            f"{ac_id} ({allowed})"
            for test in tests for backend in dict.fromkeys(engine.backend for engine in test.engines or ())
            if backend not in settings.backends]

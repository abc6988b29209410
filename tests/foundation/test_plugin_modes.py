"""The hardware marker inside pytest: skip, run, fail closed, diagnostic, selection."""

from __future__ import annotations

from pathlib import Path

import pytest

HOSTS = Path(__file__).resolve().parents[2] / "fixtures" / "hosts"
LINUX = str(HOSTS / "linux-x86_64-24gb-nogpu.json")
M4 = str(HOSTS / "m4-16gb.json")
M1 = str(HOSTS / "m1-8gb-air-macos26.json")
GB10 = str(HOSTS / "gb10.json")

PYPROJECT = """
[tool.specgate.hosts.m4-16gb]
apple = "M4"
min_memory_gb = 16

[tool.specgate.hosts.m1-8gb-air]
apple = "M1"
max_memory_gb = 12

[tool.specgate.hosts.gb10]
cuda_sm = "12.1"
"""

SPECS = """
import pytest

@pytest.mark.ac("AC-10")
@pytest.mark.hardware("m4-16gb")
def test_m4_canary():
    pass

@pytest.mark.ac("AC-11")
@pytest.mark.hardware("m1-8gb-air", env="SPEC028_RUN_SMALL_AIR_CANARY")
def test_m1_canary():
    pass

@pytest.mark.hardware("gb10")
def test_gb10():
    pass

@pytest.mark.ac("FR-1")
def test_contract():
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_specs=SPECS)
    return pytester


def test_default_mode_skips_with_every_mismatch(project: pytest.Pytester) -> None:
    result = project.runpytest("-rs", f"--specgate-host-facts={LINUX}")
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] test_specs.py:3: specgate: hardware mismatch: needs Apple M4, "
            "memory ≥ 16 GB [[]m4-16gb[]]; unmet: Apple M4 (host has no Apple chip); "
            "host has Linux x86_64, no Apple chip, 23.5 GB, no GPU",
            "*test_specs.py:8: specgate: hardware mismatch: needs Apple M1, memory ≤ 12 GB, "
            "SPEC028_RUN_SMALL_AIR_CANARY=1 [[]m1-8gb-air[]]; unmet: Apple M1 (host has no Apple "
            "chip); memory ≤ 12 GB (host has 23.5 GB); opt-in SPEC028_RUN_SMALL_AIR_CANARY=1 "
            "(host has it unset)*",
            "*test_specs.py:13: specgate: hardware mismatch: needs 1× NVIDIA GPU (SM 12.1) "
            "[[]gb10[]]; unmet: 1× NVIDIA GPU (SM 12.1) (host has 0 fitting: no NVIDIA GPU)*",
        ]
    )


@pytest.mark.parametrize(
    ("facts", "env", "ran"),
    [
        (M4, {}, "test_m4_canary"),
        (M1, {"SPEC028_RUN_SMALL_AIR_CANARY": "1"}, "test_m1_canary"),
        (GB10, {}, "test_gb10"),
        (LINUX, {}, None),
    ],
)
def test_each_example_host_runs_exactly_its_specs(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    facts: str,
    env: dict[str, str],
    ran: str | None,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = project.runpytest("-v", f"--specgate-host-facts={facts}", "-m", "hardware")
    passed = [line for line in result.outlines if "PASSED" in line]
    assert [line.split("::")[1].split()[0] for line in passed] == ([ran] if ran else [])
    result.assert_outcomes(passed=1 if ran else 0, skipped=2 if ran else 3, deselected=1)


def test_m1_spec_skips_without_opt_in_even_on_an_m1(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPEC028_RUN_SMALL_AIR_CANARY", raising=False)
    result = project.runpytest("-rs", f"--specgate-host-facts={M1}", "-k", "m1")
    result.assert_outcomes(skipped=1, deselected=3)
    result.stdout.fnmatch_lines(["*unmet: opt-in SPEC028_RUN_SMALL_AIR_CANARY=1 (host has it unset)*"])
    monkeypatch.setenv("SPEC028_RUN_SMALL_AIR_CANARY", "0")
    result = project.runpytest("-rs", f"--specgate-host-facts={M1}", "-k", "m1")
    result.stdout.fnmatch_lines(["*opt-in SPEC028_RUN_SMALL_AIR_CANARY=1 (host has '0')*"])


def test_required_spec_errors_on_mismatch_never_skips(project: pytest.Pytester) -> None:
    result = project.runpytest(f"--specgate-host-facts={LINUX}", "--specgate-require", "AC-10")
    result.assert_outcomes(passed=1, skipped=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_m4_canary*",
            "*specgate: test_specs.py::test_m4_canary: required by --specgate-require but the host "
            "does not match: needs Apple M4*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_require_all_errors_every_mismatch(project: pytest.Pytester) -> None:
    result = project.runpytest(f"--specgate-host-facts={LINUX}", "--specgate-require", "all")
    result.assert_outcomes(passed=1, errors=3)


def test_required_spec_runs_on_matching_host(project: pytest.Pytester) -> None:
    result = project.runpytest(f"--specgate-host-facts={M4}", "--specgate-require", "AC-10")
    result.assert_outcomes(passed=2, skipped=2)


def test_require_unknown_ac_is_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest(f"--specgate-host-facts={M4}", "--specgate-require", "AC-99")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--specgate-require AC-99: no selected test has @pytest.mark.ac('AC-99')*"])


def test_diagnostic_runs_everything_and_says_so(project: pytest.Pytester) -> None:
    result = project.runpytest(f"--specgate-host-facts={LINUX}", "--specgate-diagnostic")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "specgate: host Linux x86_64*; mode: diagnostic",
            "specgate: DIAGNOSTIC run: nothing here qualifies (3 hardware spec(s) ran on a host "
            "that does not match)",
        ]
    )


def test_a_tests_payload_parts_are_built_once_for_its_setup_and_teardown(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_specgate.contracts.hardware import HardwareVerdict

    built: list[str] = []
    real = HardwareVerdict.to_dict

    def counted(self: HardwareVerdict) -> dict[str, object]:
        built.append(self.host_summary)
        return real(self)

    monkeypatch.setattr(HardwareVerdict, "to_dict", counted)
    project.makeconftest("""
        from pytest_specgate.contracts.payload import payload_of
        def pytest_runtest_logreport(report):
            payload = payload_of(report.user_properties)
            if report.when != "call" and payload is not None and payload["hardware"] is not None:
                print(f"PAYLOAD {report.when} {report.nodeid.split('::')[1]} "
                      f"matched={payload['hardware']['matched']} mode={payload['mode']}")
    """)
    result = project.runpytest_inprocess("-s", f"--specgate-host-facts={M4}", "--specgate-diagnostic")
    result.stdout.fnmatch_lines(["*PAYLOAD setup test_gb10 matched=False mode=diagnostic",
                                 "*PAYLOAD teardown test_gb10 matched=False mode=diagnostic"])
    assert len(built) == 3  # the three hardware specs, once each


def test_diagnostic_mode_is_recorded_on_reports(project: pytest.Pytester) -> None:
    project.makeconftest("""
        from pytest_specgate.contracts.payload import payload_of
        SEEN = {}
        def pytest_runtest_logreport(report):
            if report.when == "teardown":
                SEEN[report.nodeid.split("::")[1]] = payload_of(report.user_properties)
        def pytest_sessionfinish(session):
            for name, payload in sorted(SEEN.items()):
                hw = payload and payload["hardware"]
                print(f"SEEN {name} mode={payload and payload['mode']} "
                      f"matched={hw and hw['matched']}")
    """)
    result = project.runpytest("-s", f"--specgate-host-facts={M4}", "--specgate-diagnostic")
    result.stdout.fnmatch_lines(
        [
            "*SEEN test_contract mode=diagnostic matched=None",
            "SEEN test_gb10 mode=diagnostic matched=False",
            "SEEN test_m1_canary mode=diagnostic matched=False",
            "SEEN test_m4_canary mode=diagnostic matched=True",
        ]
    )


def test_require_and_diagnostic_together_is_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest(
        f"--specgate-host-facts={M4}", "--specgate-diagnostic", "--specgate-require", "AC-10"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_specs.py::test_m4_canary: --specgate-require and --specgate-diagnostic both apply*"]
    )


def test_marker_selection(project: pytest.Pytester) -> None:
    selected = project.runpytest("--co", "-q", "-m", "hardware")
    selected.stdout.fnmatch_lines(
        [
            "test_specs.py::test_m4_canary",
            "test_specs.py::test_m1_canary",
            "test_specs.py::test_gb10",
            "3/4 tests collected (1 deselected)*",
        ]
    )
    rest = project.runpytest("--co", "-q", "-m", "not hardware")
    rest.stdout.fnmatch_lines(["test_specs.py::test_contract", "1/4 tests collected (3 deselected)*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("hardware(ram=16)", "@pytest.mark.hardware: unknown argument(s) ram"),
        (
            'hardware(min_memory_gb="lots")',
            "@pytest.mark.hardware: min_memory_gb must be a number of GB, got 'lots'",
        ),
        ('hardware("m9-1tb")', "@pytest.mark.hardware: unknown host profile 'm9-1tb'"),
        (
            "hardware(min_memory_gb=16, max_memory_gb=8)",
            "@pytest.mark.hardware: min_memory_gb=16 > max_memory_gb=8: no host can match",
        ),
    ],
)
def test_bad_marker_is_usage_error_naming_test(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_bad=f"import pytest\n\n@pytest.mark.{marker}\ndef test_x():\n    pass\n")
    result = pytester.runpytest(f"--specgate-host-facts={LINUX}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_bad.py::test_x: {message}*"])


def test_bad_host_facts_file_is_usage_error_naming_field(pytester: pytest.Pytester) -> None:
    facts = pytester.makefile(".json", facts='{"os": "linux", "arch": "x86_64", "memory_bytes": "lots"}')
    pytester.makepyfile("import pytest\n\n@pytest.mark.hardware(min_memory_gb=1)\ndef test_x():\n    pass\n")
    result = pytester.runpytest(f"--specgate-host-facts={facts}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--specgate-host-facts: *facts.json: field 'memory_bytes' must be int, got str 'lots'*"]
    )


def test_bad_profile_in_pyproject_is_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.specgate.hosts.big]\nmin_memory_gb = "lots"\n')
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.specgate.hosts.big[]]: min_memory_gb must be a number*"])


def test_host_facts_hooks_replace_and_edit_the_probe(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(f"""
        import pytest
        from pytest_specgate.selection.host_probe import load_host_facts
        from pathlib import Path

        def pytest_specgate_host_facts(config):
            return load_host_facts(Path({M1!r}))

        def pytest_specgate_update_host_facts(config, facts):
            facts["memory_bytes"] = 32 * 1024 ** 3
    """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.hardware(apple="M1", min_memory_gb=24)
        def test_edited():
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_the_probe_is_used_without_a_facts_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.hardware(min_memory_gb=100_000)
        def test_needs_100_tb():
            pass

        @pytest.mark.hardware(min_memory_gb=0.5)
        def test_any_real_machine():
            pass
    """)
    result = pytester.runpytest("-rs")
    result.stdout.fnmatch_lines(["*host has * GB*"])
    result.assert_outcomes(passed=1, skipped=1)


def test_under_xdist_bad_input_errors_the_tests_instead_of_crashing_workers(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.hardware(min_memory_gb="lots")
        def test_bad():
            pass

        @pytest.mark.ac("AC-10")
        def test_good():
            pass
    """)
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", f"--specgate-host-facts={LINUX}"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*usage error: test_*.py::test_bad: @pytest.mark.hardware: min_memory_gb must "
            "be a number of GB, got 'lots'*"
        ]
    )
    missing = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", "--specgate-require", "AC-99", f"--specgate-host-facts={LINUX}"
    )
    missing.assert_outcomes(errors=2)
    missing.stdout.fnmatch_lines(["*usage error: --specgate-require AC-99: no selected test has*"])

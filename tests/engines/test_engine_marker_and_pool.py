"""The engine marker is checked at collection; a configuration that failed to boot is not booted again."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_specgate.contracts.engine import Engine, EngineBootError
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.engines.config import EnginePool


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('engine("mock", gama=3)',
         "option gama: the mock backend has no option gama; it takes alpha, boot_timeout_s, *"),
        ('engine("mock", aplha=0.3)', "option aplha: the mock backend has no option aplha "
                                      "(did you mean alpha?); it takes alpha, *"),
        ('engine("mock", alpha="high")',
         "option alpha of the mock backend must be a number within [[]0, 1[]], got 'high' "
         "(the draft's agreement with the target at each position)"),
        ('engine("mock", target_step_ms=-1)',
         "option target_step_ms of the mock backend must be a number >= 0, got -1 *"),
        ('engine("tgi")', "unknown engine backend 'tgi'; expected one of endpoint, mlx, mock, vllm *"),
        ("engine(num_draft_tokens='4')", "num_draft_tokens must be a positive integer, got '4'"),
        ("engine(target=3)", "target must be a string, got 3"),
        ('engine("mock", "mlx")', "engine() takes at most one positional argument *"),
    ],
)
def test_a_bad_engine_marker_stops_collection_with_one_line_naming_the_test(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    pytester.makepyfile(test_marked=f"""
        import pytest

        def test_fine():
            pass

        @pytest.mark.{marker}
        def test_bad():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: test_marked.py::test_bad: @pytest.mark.engine: {message}"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.str()


def test_a_bad_engine_marker_on_an_xdist_worker_errors_its_test_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked="""
        import pytest

        def test_fine():
            pass

        @pytest.mark.engine("mock", gama=3)
        def test_bad():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_marked.py::test_bad: @pytest.mark.engine: option gama: the mock "
                                 "backend has no option gama*"])


class _FailingBoot:
    """Refuses to boot ``refused`` targets, counting every attempt."""

    def __init__(self) -> None:
        self.attempts: list[str | None] = []

    def __call__(self, config: EngineConfig, workdir: Path) -> Engine:
        self.attempts.append(config.target)
        raise EngineBootError(f"{config.target} not healthy within 0.1s (last: HTTP 503)\nsecond line")


def test_the_pool_remembers_a_failed_boot_and_names_the_first_test(tmp_path: Path) -> None:
    boot = _FailingBoot()
    pool = EnginePool(boot=boot)
    broken = EngineConfig(backend="mock", target="broken")
    with pytest.raises(EngineBootError, match="not healthy"):
        pool.get(broken, tmp_path, requested_by="test_a.py::test_first")
    for _ in range(3):
        with pytest.raises(EngineBootError) as again:
            pool.get(broken, tmp_path, requested_by="test_a.py::test_later")
        assert str(again.value) == (
            "mock engine (mock target=broken) failed to boot earlier in this session for "
            "test_a.py::test_first and is not booted again: EngineBootError: broken not healthy "
            "within 0.1s (last: HTTP 503)"
        )
    with pytest.raises(EngineBootError, match="other not healthy"):
        pool.get(EngineConfig(backend="mock", target="other"), tmp_path)
    assert boot.attempts == ["broken", "other"]
    assert len(pool) == 0 and broken not in pool


POOLED_FAILURE_SPECS = """
import pytest

pytestmark = pytest.mark.engine("mock", draft="specgate-mock-draft", num_draft_tokens=4,
                                memory_budget_gb=1.0, target_size_gb=0.9, draft_size_gb=0.5)

def test_first(engine):
    pass

def test_second(engine):
    pass

def test_third(shared_engine):
    shared_engine()
"""


def test_every_later_test_errors_with_the_remembered_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pooled=POOLED_FAILURE_SPECS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2, failed=1)
    result.stdout.fnmatch_lines([
        "E *.EngineStartupRefused: draft_model_capacity_shortfall: memory budget 1.00 GB *",
    ])
    remembered = [line for line in result.stdout.lines if line.startswith((
        "test_pooled.py::test_second: engine boot failed: ",
        "test_pooled.py::test_third: engine boot failed: ",
    )) and (
        "mock engine (mock draft=specgate-mock-draft gamma=4 draft_size_gb=0.5 "
        "memory_budget_gb=1.0 target_size_gb=0.9) failed to boot earlier in this session for "
        "test_pooled.py::test_first and is not booted again: EngineStartupRefused: "
        "draft_model_capacity_shortfall: memory budget 1.00 GB" in line)]
    assert len(remembered) == 2, result.stdout.str()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("alpha=high", "option alpha of the mock backend must be a number within [[]0, 1[]], got 'high' *"),
        ("gama=3", "option gama: the mock backend has no option gama; it takes alpha, *"),
    ],
)
def test_a_bad_engine_option_on_the_command_line_is_one_line_at_start(
    pytester: pytest.Pytester, option: str, message: str
) -> None:
    pytester.makepyfile(test_fine="def test_fine():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--specgate-engine-option={option}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --specgate-engine-option: {message}"])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.str()
